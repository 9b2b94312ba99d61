//! Enhanced Transmission Selection (IEEE 802.1Q-2018 §8.6.8.3 and §37, from
//! 802.1Qaz): how an egress port chooses between its eight priorities.
//!
//! Each priority uses one transmission selection algorithm ([`Tsa`]): *strict
//! priority*, served before anything else (highest priority first; the control class
//! that carries CNPs and ACKs), or *ETS* with a bandwidth weight. The ETS priorities
//! share what the strict ones leave, in proportion to their weights, through deficit
//! weighted round robin (Shreedhar and Varghese, "Efficient fair queueing using deficit
//! round robin", SIGCOMM 1995): in every round each backlogged ETS priority receives
//! `weight × quantum` bytes of credit and sends head frames while its credit covers
//! them; a priority that has nothing to send (empty, or paused by PFC) loses its
//! credit, so it cannot save up a burst. The scheduler is work conserving: whenever
//! some priority may send, [`Ets::select`] names one.
//!
//! The simulator and the veth userspace switch call the same [`Ets`] at dequeue; the
//! weights come from the tenant file's shares.
//!
//! ```
//! use cc_algos::ets::{Ets, EtsConfig};
//! // Priorities 1 and 2 share 70:30, the rest (6 = control) strict.
//! let cfg = EtsConfig::from_weights([0, 70, 30, 0, 0, 0, 0, 0]).unwrap();
//! let mut ets = Ets::new(&cfg);
//! let mut sent = [0u64; 8];
//! for _ in 0..10_000 {
//!     let p = ets.select(0b110, |_| 4160).unwrap();
//!     sent[p] += 4160;
//! }
//! let share = sent[1] as f64 / (sent[1] + sent[2]) as f64;
//! assert!((share - 0.7).abs() < 0.01);
//! // A strict priority with a frame goes first.
//! assert_eq!(ets.select(0b0100_0110, |_| 4160), Some(6));
//! ```

use crate::error::{Result, invalid};
use serde::{Deserialize, Serialize};

/// Priorities of a port (802.1p).
pub const PRIORITIES: usize = 8;

/// Transmission selection algorithm of one priority.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum Tsa {
    /// Strict priority: served before every ETS priority, higher first.
    Strict,
    /// ETS with this bandwidth weight (1-100; weights are relative, usually summing
    /// to 100 as percentages).
    Ets(u8),
}

/// The selection algorithm of each priority and the round's credit per weight unit.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct EtsConfig {
    /// Per priority 0-7.
    pub tsa: [Tsa; PRIORITIES],
    /// Credit per weight unit and round, bytes (default 128: a 50 % priority gets
    /// 6.4 KB a round, one or two 4 KB frames, so a round stays a few frames long).
    pub quantum: u32,
}

impl EtsConfig {
    /// Default credit per weight unit and round.
    pub const QUANTUM: u32 = 128;

    /// From a weight per priority, 0 meaning strict priority.
    pub fn from_weights(weights: [u8; PRIORITIES]) -> Result<EtsConfig> {
        let mut tsa = [Tsa::Strict; PRIORITIES];
        for (p, &w) in weights.iter().enumerate() {
            if w > 100 {
                return Err(invalid(
                    "ets",
                    "weights",
                    format!("priority {p}: weight {w}: expected 0 (strict) or 1-100"),
                ));
            }
            if w > 0 {
                tsa[p] = Tsa::Ets(w);
            }
        }
        Ok(EtsConfig {
            tsa,
            quantum: Self::QUANTUM,
        })
    }

    /// The weight of each priority, 0 for strict ones.
    pub fn weights(&self) -> [u8; PRIORITIES] {
        self.tsa.map(|t| match t {
            Tsa::Strict => 0,
            Tsa::Ets(w) => w,
        })
    }
}

/// One port's scheduler state.
#[derive(Clone, Debug)]
pub struct Ets {
    /// Bit p: priority p is strict.
    strict: u8,
    /// Bit p: priority p is ETS.
    ets: u8,
    /// Credit per round, bytes.
    quantum: [u64; PRIORITIES],
    /// Credit left, bytes.
    deficit: [u64; PRIORITIES],
    /// The ETS priority served last (the round goes on from it).
    next: usize,
}

impl Ets {
    /// A port's scheduler, every credit zero.
    pub fn new(cfg: &EtsConfig) -> Ets {
        let (mut strict, mut ets, mut quantum) = (0u8, 0u8, [0u64; PRIORITIES]);
        for (p, t) in cfg.tsa.iter().enumerate() {
            match *t {
                Tsa::Strict => strict |= 1 << p,
                Tsa::Ets(w) => {
                    ets |= 1 << p;
                    quantum[p] = u64::from(w.max(1)) * u64::from(cfg.quantum.max(1));
                }
            }
        }
        Ets {
            strict,
            ets,
            quantum,
            deficit: [0; PRIORITIES],
            next: 0,
        }
    }

    /// The priority to send from, among `ready` (bit p: priority p has a frame it may
    /// send now), with `head(p)` the size of priority p's head frame in bytes. Takes
    /// the frame's size from the priority's credit. `None` only when `ready` is empty.
    pub fn select(&mut self, ready: u8, mut head: impl FnMut(usize) -> u64) -> Option<usize> {
        let strict = ready & self.strict;
        if strict != 0 {
            return Some(7 - strict.leading_zeros() as usize);
        }
        let ets = ready & self.ets;
        for p in 0..PRIORITIES {
            if ets & (1 << p) == 0 {
                self.deficit[p] = 0;
            }
        }
        if ets == 0 {
            return None;
        }
        // At most two scans: one with the credit left, one after the rounds that let
        // the first priority send.
        loop {
            for i in 0..PRIORITIES {
                let p = (self.next + i) % PRIORITIES;
                if ets & (1 << p) != 0 {
                    let h = head(p);
                    if self.deficit[p] >= h {
                        self.deficit[p] -= h;
                        self.next = p;
                        return Some(p);
                    }
                }
            }
            // No credit covers a head frame: the next round starts after the priority
            // served last; give every ready priority as many rounds of credit as the
            // first one to be able to send needs (the same as running them one by one).
            self.next = (self.next + 1) % PRIORITIES;
            let rounds = (0..PRIORITIES)
                .filter(|&p| ets & (1 << p) != 0)
                .map(|p| (head(p) - self.deficit[p]).div_ceil(self.quantum[p]))
                .min()
                .unwrap_or(1)
                .max(1);
            for p in 0..PRIORITIES {
                if ets & (1 << p) != 0 {
                    self.deficit[p] += rounds * self.quantum[p];
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// Bytes each priority sends in `n` selections with `ready` always set.
    fn run(cfg: &EtsConfig, ready: u8, size: impl Fn(usize) -> u64, n: usize) -> [u64; 8] {
        let mut e = Ets::new(cfg);
        let mut sent = [0u64; 8];
        for _ in 0..n {
            let p = e.select(ready, &size).expect("ready");
            sent[p] += size(p);
        }
        sent
    }

    fn share(sent: &[u64; 8], p: usize) -> f64 {
        sent[p] as f64 / sent.iter().sum::<u64>() as f64
    }

    #[test]
    fn shares_are_honoured_over_time() {
        let cfg = EtsConfig::from_weights([10, 60, 30, 0, 0, 0, 0, 0]).unwrap();
        // Equal frames, then very different frames per priority: bytes follow weights.
        for size in [(|_| 4160) as fn(usize) -> u64, |p| {
            [64, 9000, 1500, 0, 0, 0, 0, 0][p]
        }] {
            let sent = run(&cfg, 0b111, size, 20_000);
            for (p, w) in [(0, 0.1), (1, 0.6), (2, 0.3)] {
                assert!((share(&sent, p) - w).abs() < 0.01, "{p}: {sent:?}");
            }
        }
        // Weights are relative: 1:3 among two.
        let cfg = EtsConfig::from_weights([0, 0, 0, 1, 3, 0, 0, 0]).unwrap();
        let sent = run(&cfg, 0b1_1000, |_| 4160, 4_000);
        assert!((share(&sent, 4) - 0.75).abs() < 0.01, "{sent:?}");
    }

    #[test]
    fn work_conserving_when_others_are_idle() {
        let cfg = EtsConfig::from_weights([0, 90, 10, 0, 0, 0, 0, 0]).unwrap();
        // Only the 10 % priority has frames: it gets everything.
        let sent = run(&cfg, 0b100, |_| 4160, 1_000);
        assert_eq!(sent[2], 1_000 * 4160);
    }

    #[test]
    fn strict_priority_goes_first() {
        let cfg = EtsConfig::from_weights([0, 50, 50, 0, 0, 0, 0, 0]).unwrap();
        let mut e = Ets::new(&cfg);
        for _ in 0..100 {
            assert_eq!(e.select(0b0100_0110, |_| 64), Some(6));
        }
        // 7 above 6, both above ETS.
        assert_eq!(e.select(0b1100_0110, |_| 64), Some(7));
        assert_eq!(e.select(0, |_| 64), None);
    }

    #[test]
    fn an_idle_priority_saves_no_credit() {
        let cfg = EtsConfig::from_weights([0, 50, 50, 0, 0, 0, 0, 0]).unwrap();
        let mut e = Ets::new(&cfg);
        // Priority 1 alone for a long time, then both: 2 must not get a long burst
        // out of credit it gathered while 1 was alone, nor 1 out of its own.
        for _ in 0..1_000 {
            e.select(0b010, |_| 4160);
        }
        let mut run_len = (0usize, 0usize, 0usize);
        for _ in 0..1_000 {
            let p = e.select(0b110, |_| 4160).unwrap();
            if p == run_len.0 {
                run_len.1 += 1;
            } else {
                run_len = (p, 1, run_len.2);
            }
            run_len.2 = run_len.2.max(run_len.1);
        }
        // 50 × 128 B = 6.4 KB a round: at most two 4 KB frames in a row (one round's
        // leftover plus the next round's start).
        assert!(run_len.2 <= 3, "longest run {}", run_len.2);
    }

    #[test]
    fn weights_over_100_are_rejected() {
        let e = EtsConfig::from_weights([0, 101, 0, 0, 0, 0, 0, 0]).unwrap_err();
        assert!(e.to_string().contains("priority 1: weight 101"), "{e}");
        let cfg = EtsConfig::from_weights([0, 40, 60, 0, 0, 0, 0, 0]).unwrap();
        assert_eq!(cfg.weights(), [0, 40, 60, 0, 0, 0, 0, 0]);
    }

    proptest! {
        /// Any weights, any ready sets, any frame sizes: the choice is a ready priority,
        /// the highest strict one if any is ready, and there is one whenever any is ready.
        #[test]
        fn selects_a_ready_priority(
            weights in proptest::array::uniform8(0u8..=100),
            steps in proptest::collection::vec((any::<u8>(), 1u64..20_000), 1..200),
        ) {
            let cfg = EtsConfig::from_weights(weights).unwrap();
            let mut e = Ets::new(&cfg);
            for (ready, size) in steps {
                let got = e.select(ready, |p| size + p as u64);
                match got {
                    None => prop_assert_eq!(ready, 0),
                    Some(p) => {
                        prop_assert!(ready & (1 << p) != 0);
                        let strict = ready & !e.ets;
                        if strict != 0 {
                            prop_assert_eq!(p, 7 - strict.leading_zeros() as usize);
                        }
                    }
                }
            }
        }
    }
}
