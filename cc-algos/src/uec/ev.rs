//! Entropy-value (EV) path selection for packet spraying, as pure policies.
//!
//! A UEC sender stamps each packet with an entropy value; switches hash it into their
//! ECMP choice, so different EVs take different paths (UEC Specification 1.0, packet
//! spraying / multipath). Which EV to use next is a policy of the sender, fed by
//! per-EV feedback ([`PathSignal`]) from ACKs, NACKs and timeouts:
//!
//! - **oblivious**: visit every EV once per round, in an order permuted by a fresh
//!   random XOR mask each round (needs a power-of-two EV count).
//! - **bitmap**: oblivious order, but an EV carrying a penalty is skipped (and its
//!   penalty decremented). Penalties: ECN 1, NACK (trim) 4, timeout 15; additive, capped
//!   at 15.
//! - **REPS** (Bonato et al., "REPS: Recycled Entropy Packet Spraying", 2024): EVs
//!   whose ACK came back unmarked are queued for reuse; a packet takes the oldest
//!   recycled EV, or explores a random one when none is left.
//! - **mixed** (this crate's default, defined here): REPS whose exploration draws from
//!   the bitmap policy, so it explores away from recently penalised EVs.
//!
//! Randomness is owned by the policy: a ChaCha8 RNG seeded from the config, so a run is
//! reproducible from its seed.

use crate::error::{Error, Result, invalid};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use serde::{Deserialize, Serialize};
use std::collections::VecDeque;

/// Per-EV feedback.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum PathSignal {
    /// ACK without ECN.
    Good,
    /// ACK with ECN-echo.
    Ecn,
    /// NACK (trimmed or lost packet).
    Nack,
    /// Retransmission timeout.
    Timeout,
}

/// Which policy.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize, Default)]
#[serde(rename_all = "kebab-case")]
pub enum EvPolicyKind {
    Oblivious,
    Bitmap,
    Reps,
    #[default]
    Mixed,
}

impl EvPolicyKind {
    pub const NAMES: &'static str = "oblivious, bitmap, reps, mixed";
}

impl core::str::FromStr for EvPolicyKind {
    type Err = Error;
    fn from_str(s: &str) -> Result<Self> {
        match s.trim().to_ascii_lowercase().as_str() {
            "oblivious" => Ok(EvPolicyKind::Oblivious),
            "bitmap" => Ok(EvPolicyKind::Bitmap),
            "reps" => Ok(EvPolicyKind::Reps),
            "mixed" => Ok(EvPolicyKind::Mixed),
            _ => Err(Error::UnknownName {
                what: "EV policy",
                name: s.to_string(),
                expected: Self::NAMES,
            }),
        }
    }
}

/// EV policy parameters.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct EvConfig {
    /// Number of EVs sprayed over, a power of two (htsim `_path_entropy_size` = 256).
    pub evs: u16,
    /// RNG seed.
    pub seed: u64,
    /// Penalty for an ECN-marked ACK.
    pub penalty_ecn: u8,
    /// Penalty for a NACK.
    pub penalty_nack: u8,
    /// Penalty for a timeout (also the cap).
    pub penalty_timeout: u8,
    /// REPS: how many recycled EVs are kept.
    pub reps_buffer: usize,
}

impl EvConfig {
    pub fn new(evs: u16, seed: u64) -> Self {
        EvConfig {
            evs,
            seed,
            penalty_ecn: 1,
            penalty_nack: 4,
            penalty_timeout: 15,
            reps_buffer: 8,
        }
    }

    pub fn validate(&self) -> Result<()> {
        if self.evs == 0 || !self.evs.is_power_of_two() {
            return Err(invalid(
                "ev",
                "evs",
                format!(
                    "must be a power of two (1, 2, 4, … 32768), got {}",
                    self.evs
                ),
            ));
        }
        if self.reps_buffer == 0 {
            return Err(invalid("ev", "reps_buffer", "must be positive"));
        }
        Ok(())
    }

    pub fn build(&self, kind: EvPolicyKind) -> Result<EvPolicy> {
        self.validate()?;
        let mut rng = ChaCha8Rng::seed_from_u64(self.seed);
        let obl = Oblivious::new(self.evs, &mut rng);
        let inner = match kind {
            EvPolicyKind::Oblivious => Inner::Oblivious(obl),
            EvPolicyKind::Bitmap => Inner::Bitmap(Bitmap::new(obl, *self)),
            EvPolicyKind::Reps => Inner::Reps(Reps::new(self.reps_buffer), None),
            EvPolicyKind::Mixed => {
                Inner::Reps(Reps::new(self.reps_buffer), Some(Bitmap::new(obl, *self)))
            }
        };
        Ok(EvPolicy {
            kind,
            cfg: *self,
            rng,
            inner,
            bad_ev: 0,
        })
    }
}

#[derive(Clone, Debug)]
struct Oblivious {
    n: u16,
    i: u16,
    mask: u16,
}

impl Oblivious {
    fn new(n: u16, rng: &mut ChaCha8Rng) -> Self {
        Oblivious {
            n,
            i: 0,
            mask: rng.random_range(0..n),
        }
    }
    fn next(&mut self, rng: &mut ChaCha8Rng) -> u16 {
        let ev = self.i ^ self.mask;
        self.i += 1;
        if self.i == self.n {
            self.i = 0;
            self.mask = rng.random_range(0..self.n);
        }
        ev
    }
}

#[derive(Clone, Debug)]
struct Bitmap {
    obl: Oblivious,
    penalty: Vec<u8>,
    cfg: EvConfig,
}

impl Bitmap {
    fn new(obl: Oblivious, cfg: EvConfig) -> Self {
        Bitmap {
            obl,
            penalty: vec![0; cfg.evs as usize],
            cfg,
        }
    }
    fn next(&mut self, rng: &mut ChaCha8Rng) -> u16 {
        let mut ev = 0;
        // Any 2n consecutive candidates contain a whole round (the mask changes between
        // rounds), so every EV is considered; if all are penalised, take the last.
        for _ in 0..2 * self.obl.n as u32 {
            ev = self.obl.next(rng);
            let p = &mut self.penalty[ev as usize];
            if *p == 0 {
                return ev;
            }
            *p -= 1;
        }
        ev
    }
    fn feedback(&mut self, ev: u16, s: PathSignal) {
        let add = match s {
            PathSignal::Good => return,
            PathSignal::Ecn => self.cfg.penalty_ecn,
            PathSignal::Nack => self.cfg.penalty_nack,
            PathSignal::Timeout => self.cfg.penalty_timeout,
        };
        let p = &mut self.penalty[ev as usize];
        *p = p.saturating_add(add).min(self.cfg.penalty_timeout);
    }
}

#[derive(Clone, Debug)]
struct Reps {
    buf: VecDeque<u16>,
    cap: usize,
}

impl Reps {
    fn new(cap: usize) -> Self {
        Reps {
            buf: VecDeque::with_capacity(cap),
            cap,
        }
    }
}

#[derive(Clone, Debug)]
enum Inner {
    Oblivious(Oblivious),
    Bitmap(Bitmap),
    /// REPS, exploring at random (`None`) or via a bitmap policy (mixed).
    Reps(Reps, Option<Bitmap>),
}

/// An EV policy with its own seeded RNG.
#[derive(Clone, Debug)]
pub struct EvPolicy {
    kind: EvPolicyKind,
    cfg: EvConfig,
    rng: ChaCha8Rng,
    inner: Inner,
    /// Feedback for EVs outside `0..evs` (ignored).
    pub bad_ev: u64,
}

impl EvPolicy {
    pub fn kind(&self) -> EvPolicyKind {
        self.kind
    }

    /// The EV for the next packet.
    pub fn next_ev(&mut self) -> u16 {
        match &mut self.inner {
            Inner::Oblivious(o) => o.next(&mut self.rng),
            Inner::Bitmap(b) => b.next(&mut self.rng),
            Inner::Reps(r, explore) => {
                if let Some(ev) = r.buf.pop_front() {
                    return ev;
                }
                match explore {
                    Some(b) => b.next(&mut self.rng),
                    None => self.rng.random_range(0..self.cfg.evs),
                }
            }
        }
    }

    /// Feedback about a packet that carried `ev`.
    pub fn on_feedback(&mut self, ev: u16, signal: PathSignal) {
        if ev >= self.cfg.evs {
            self.bad_ev += 1;
            return;
        }
        match &mut self.inner {
            Inner::Oblivious(_) => {}
            Inner::Bitmap(b) => b.feedback(ev, signal),
            Inner::Reps(r, explore) => {
                if signal == PathSignal::Good && r.buf.len() < r.cap {
                    r.buf.push_back(ev);
                }
                if let Some(b) = explore {
                    b.feedback(ev, signal);
                }
            }
        }
    }

    /// Current penalty of `ev` (bitmap and mixed; 0 otherwise).
    pub fn penalty(&self, ev: u16) -> u8 {
        match &self.inner {
            Inner::Bitmap(b) | Inner::Reps(_, Some(b)) => {
                b.penalty.get(ev as usize).copied().unwrap_or(0)
            }
            _ => 0,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashSet;

    fn policy(kind: EvPolicyKind, evs: u16, seed: u64) -> EvPolicy {
        EvConfig::new(evs, seed).build(kind).unwrap()
    }

    #[test]
    fn oblivious_visits_every_ev_once_per_round_in_a_new_order() {
        let mut p = policy(EvPolicyKind::Oblivious, 64, 7);
        let r1: Vec<u16> = (0..64).map(|_| p.next_ev()).collect();
        let r2: Vec<u16> = (0..64).map(|_| p.next_ev()).collect();
        assert_eq!(r1.iter().copied().collect::<HashSet<_>>().len(), 64);
        assert_eq!(r2.iter().copied().collect::<HashSet<_>>().len(), 64);
        // Each round is the identity XOR a mask.
        let m1 = r1[0];
        assert!(r1.iter().enumerate().all(|(i, &e)| e == i as u16 ^ m1));
        // Same seed, same sequence; another seed, another one.
        let mut q = policy(EvPolicyKind::Oblivious, 64, 7);
        assert_eq!((0..64).map(|_| q.next_ev()).collect::<Vec<_>>(), r1);
        let mut o = policy(EvPolicyKind::Oblivious, 64, 8);
        let other: Vec<u16> = (0..128).map(|_| o.next_ev()).collect();
        assert_ne!(other, [r1, r2].concat());
    }

    #[test]
    fn bitmap_skips_penalised_evs_for_as_many_rounds_as_their_penalty() {
        let mut p = policy(EvPolicyKind::Bitmap, 16, 1);
        p.on_feedback(3, PathSignal::Nack); // 4
        p.on_feedback(5, PathSignal::Ecn); // 1
        p.on_feedback(9, PathSignal::Timeout); // 15
        p.on_feedback(9, PathSignal::Timeout); // capped at 15
        assert_eq!((p.penalty(3), p.penalty(5), p.penalty(9)), (4, 1, 15));
        let mut seen = vec![0u32; 16];
        // 20 rounds of 13-16 picks: 3 reappears after 4 skipped rounds, 9 after 15.
        for _ in 0..16 * 20 {
            seen[p.next_ev() as usize] += 1;
        }
        assert!(
            seen[9] < seen[3] && seen[3] < seen[5] && seen[5] <= seen[0],
            "{seen:?}"
        );
        assert_eq!(p.penalty(9), 0);
        // Good feedback adds nothing.
        p.on_feedback(4, PathSignal::Good);
        assert_eq!(p.penalty(4), 0);
    }

    #[test]
    fn reps_recycles_unmarked_evs_and_explores_otherwise() {
        let mut p = policy(EvPolicyKind::Reps, 256, 3);
        let a = p.next_ev();
        let b = p.next_ev();
        p.on_feedback(a, PathSignal::Good);
        p.on_feedback(b, PathSignal::Ecn);
        assert_eq!(p.next_ev(), a, "recycled");
        // b was marked: not recycled. With an empty buffer, EVs are random.
        let explored: HashSet<u16> = (0..50).map(|_| p.next_ev()).collect();
        assert!(explored.len() > 30);
        // The buffer keeps at most 8.
        for e in 0..20 {
            p.on_feedback(e, PathSignal::Good);
        }
        let reused: Vec<u16> = (0..8).map(|_| p.next_ev()).collect();
        assert_eq!(reused, (0..8).collect::<Vec<_>>());
    }

    #[test]
    fn mixed_explores_away_from_penalised_evs() {
        let mut p = policy(EvPolicyKind::Mixed, 8, 11);
        for e in 0..7 {
            p.on_feedback(e, PathSignal::Timeout);
        }
        // Only EV 7 is clean: exploration picks it for the next rounds.
        for _ in 0..5 {
            assert_eq!(p.next_ev(), 7);
        }
    }

    #[test]
    fn errors_and_bad_feedback() {
        let e = EvConfig::new(100, 0)
            .build(EvPolicyKind::Oblivious)
            .unwrap_err();
        assert!(e.to_string().contains("power of two"), "{e}");
        assert!("ecmp".parse::<EvPolicyKind>().is_err());
        assert_eq!("REPS".parse::<EvPolicyKind>().unwrap(), EvPolicyKind::Reps);
        let mut p = policy(EvPolicyKind::Bitmap, 8, 0);
        p.on_feedback(8, PathSignal::Nack);
        assert_eq!(p.bad_ev, 1);
    }
}
