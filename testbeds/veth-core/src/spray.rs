//! Packet spraying for the endpoints, sans-IO: a sender that changes its entropy value
//! (EV) per packet by a `cc-algos` EV policy (oblivious, bitmap, REPS, mixed — the same
//! objects the simulator runs), and a receiver that accepts packets out of order.
//!
//! - **Sender** ([`Sprayer`]): each data packet's RoCEv2 UDP source port carries an EV
//!   from the policy (`0xc000 | (ev ^ salt)`, the salt a per-flow mix so that two flows
//!   between the same hosts do not share every path); the switches hash it into their
//!   ECMP choice. Per-EV feedback comes back in the ACKs ([`Echo`]): an unmarked
//!   packet's EV is `Good` (REPS recycles it), a CE-marked one is `Ecn` (the bitmap
//!   penalises it, REPS does not reuse it), a trimmed one `Nack`.
//! - **Receiver** ([`ReorderWindow`]): a bitmap of the packets received beyond the next
//!   expected PSN, as UEC's receiver keeps (a go-back-N receiver would NAK every
//!   reordering a spray causes). The cumulative point advances over every packet held;
//!   ACKs stay cumulative; a packet more than [`ReorderWindow::SPAN`] PSNs ahead is
//!   dropped (bounded memory) and recovered by the sender's timeout.
//! - **Echo**: an ACK's payload after its 12 bytes (timestamp, CE count) lists the
//!   entropy of every packet received since the previous ACK, 2 bytes each, the top bit
//!   set when that packet was CE-marked; at most [`MAX_ECHO`] (the oldest are dropped:
//!   feedback, not delivery).
//!
//! ```
//! use veth_core::spray::{ReorderWindow, Arrival};
//! let mut w = ReorderWindow::default();
//! assert_eq!(w.accept(1), Arrival::New { advanced: 0 });
//! assert_eq!(w.accept(0), Arrival::New { advanced: 2 });
//! assert_eq!(w.accept(1), Arrival::Duplicate);
//! assert_eq!(w.expected(), 2);
//! ```

use std::collections::VecDeque;

use cc_algos::uec::ev::{EvConfig, EvPolicy, EvPolicyKind, PathSignal};

/// Largest EV count the UDP source port can carry (14 bits under the `0xc000` prefix).
pub const MAX_EVS: u16 = 1 << 14;
/// Most EVs one ACK echoes.
pub const MAX_ECHO: usize = 32;
/// Bit of an echoed entropy saying the packet was CE-marked.
const ECHO_CE: u16 = 0x8000;

/// How a host's flows spray.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SprayConfig {
    /// The EV policy.
    pub kind: EvPolicyKind,
    /// EVs per flow (a power of two, at most [`MAX_EVS`]).
    pub evs: u16,
    /// Seed; each flow's policy mixes in its id.
    pub seed: u64,
}

impl SprayConfig {
    /// Check the EV count (a power of two the UDP source port can carry).
    pub fn validate(&self) -> Result<(), String> {
        if self.evs > MAX_EVS {
            return Err(format!(
                "evs: {} entropy values do not fit the RoCEv2 UDP source port of the veth endpoints (at most {MAX_EVS})",
                self.evs
            ));
        }
        EvConfig::new(self.evs, self.seed)
            .validate()
            .map_err(|e| e.to_string())
    }

    /// The sprayer of flow `flow`.
    pub fn sprayer(&self, flow: u32) -> Result<Sprayer, String> {
        self.validate()?;
        let mix = splitmix(self.seed ^ u64::from(flow).wrapping_mul(0x9E37_79B9_7F4A_7C15));
        let policy = EvConfig::new(self.evs, mix)
            .build(self.kind)
            .map_err(|e| e.to_string())?;
        Ok(Sprayer {
            policy,
            salt: (mix >> 32) as u16 & (MAX_EVS - 1),
            mask: self.evs - 1,
            sent_by_ev: vec![0; self.evs as usize],
        })
    }
}

fn splitmix(mut z: u64) -> u64 {
    z = z.wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// One flow's EV choice and its feedback.
#[derive(Debug, Clone)]
pub struct Sprayer {
    policy: EvPolicy,
    salt: u16,
    mask: u16,
    /// Packets sent per EV.
    pub sent_by_ev: Vec<u64>,
}

impl Sprayer {
    /// The UDP source port of the next data packet.
    pub fn next_port(&mut self) -> u16 {
        let ev = self.policy.next_ev();
        self.sent_by_ev[ev as usize] += 1;
        0xc000 | (ev ^ self.salt)
    }

    /// The EV a UDP source port (or an echoed entropy) carried, if it is one of ours.
    fn ev_of(&self, port: u16) -> Option<u16> {
        let ev = (port & (MAX_EVS - 1)) ^ self.salt;
        (ev <= self.mask).then_some(ev)
    }

    /// Feedback about the packet that carried `port`.
    pub fn on_feedback(&mut self, port: u16, signal: PathSignal) {
        match self.ev_of(port) {
            Some(ev) => self.policy.on_feedback(ev, signal),
            None => self.policy.bad_ev += 1,
        }
    }

    /// Feed every entropy an ACK echoed.
    pub fn on_echo(&mut self, echo: &[u8]) {
        for (port, ce) in Echo::decode(echo) {
            let s = if ce {
                PathSignal::Ecn
            } else {
                PathSignal::Good
            };
            self.on_feedback(port, s);
        }
    }

    /// The policy (penalties, its kind).
    pub fn policy(&self) -> &EvPolicy {
        &self.policy
    }
}

/// The entropies of packets received since the last ACK (receiver side).
#[derive(Debug, Clone, Default)]
pub struct Echo {
    pending: VecDeque<u16>,
}

impl Echo {
    /// A data packet with UDP source port `port` arrived (`ce`: it was marked).
    pub fn push(&mut self, port: u16, ce: bool) {
        if self.pending.len() == MAX_ECHO {
            self.pending.pop_front();
        }
        self.pending
            .push_back((port & (MAX_EVS - 1)) | if ce { ECHO_CE } else { 0 });
    }

    /// Write what is pending into `out` (2 bytes each; [`MAX_ECHO`] of them fill
    /// `2 * MAX_ECHO` bytes, what does not fit is dropped), forget it, and return the bytes
    /// written.
    pub fn drain_into(&mut self, out: &mut [u8]) -> usize {
        let mut n = 0;
        for (e, slot) in self.pending.drain(..).zip(out.chunks_exact_mut(2)) {
            slot.copy_from_slice(&e.to_be_bytes());
            n += 2;
        }
        n
    }

    /// The (entropy, CE) pairs of an echo (a trailing odd byte is ignored).
    pub fn decode(b: &[u8]) -> impl Iterator<Item = (u16, bool)> + '_ {
        b.chunks_exact(2).map(|c| {
            let v = u16::from_be_bytes([c[0], c[1]]);
            (v & !ECHO_CE, v & ECHO_CE != 0)
        })
    }
}

/// What a data packet's PSN is to a [`ReorderWindow`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Arrival {
    /// Not seen before; the cumulative point advanced by `advanced` packets (0 when it
    /// arrived ahead of a gap).
    New { advanced: u32 },
    /// Already received.
    Duplicate,
    /// Too far ahead of the cumulative point to be held; dropped.
    BeyondWindow,
}

/// Received PSNs at and beyond the next expected one, as a bitmap.
#[derive(Debug, Clone, Default)]
pub struct ReorderWindow {
    expected: u32,
    /// Bit `i` of word `w`: PSN `expected + 64 w + i` received (bit 0 of word 0, the
    /// expected PSN itself, is never set: it advances the window).
    bits: VecDeque<u64>,
}

impl ReorderWindow {
    /// How far ahead of the cumulative point a packet may arrive (PSNs): 64K packets,
    /// 8 KB of bitmap per flow at most.
    pub const SPAN: u32 = 1 << 16;

    /// The next expected PSN (everything below it was received).
    pub fn expected(&self) -> u32 {
        self.expected
    }

    /// Packets received beyond the cumulative point.
    pub fn held(&self) -> u32 {
        self.bits.iter().map(|w| w.count_ones()).sum()
    }

    /// Record `psn`.
    pub fn accept(&mut self, psn: u32) -> Arrival {
        if psn < self.expected {
            return Arrival::Duplicate;
        }
        let off = psn - self.expected;
        if off >= Self::SPAN {
            return Arrival::BeyondWindow;
        }
        let (w, b) = ((off / 64) as usize, off % 64);
        if self.bits.len() <= w {
            self.bits.resize(w + 1, 0);
        }
        if self.bits[w] & (1 << b) != 0 {
            return Arrival::Duplicate;
        }
        self.bits[w] |= 1 << b;
        Arrival::New {
            advanced: self.advance(),
        }
    }

    /// Move the cumulative point over the packets held at its front.
    fn advance(&mut self) -> u32 {
        let mut n = 0;
        while let Some(&w) = self.bits.front() {
            let run = w.trailing_ones();
            if run == 64 {
                self.bits.pop_front();
                n += 64;
                self.expected += 64;
                continue;
            }
            if run > 0 {
                self.shift(run);
                n += run;
                self.expected += run;
            }
            break;
        }
        n
    }

    /// Shift the bitmap down by `k < 64` bits.
    fn shift(&mut self, k: u32) {
        let len = self.bits.len();
        for i in 0..len {
            let hi = if i + 1 < len { self.bits[i + 1] } else { 0 };
            self.bits[i] = (self.bits[i] >> k) | (hi << (64 - k));
        }
        while self.bits.back() == Some(&0) {
            self.bits.pop_back();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_window_takes_any_order_and_advances_over_what_it_holds() {
        let mut w = ReorderWindow::default();
        // 200 packets in a scrambled order: every one is new once, the point ends at 200.
        let order: Vec<u32> = (0..200u32).map(|i| (i * 37) % 200).collect();
        let mut advanced = 0;
        for &p in &order {
            match w.accept(p) {
                Arrival::New { advanced: a } => advanced += a,
                other => panic!("psn {p}: {other:?}"),
            }
        }
        assert_eq!((advanced, w.expected(), w.held()), (200, 200, 0));
        assert!(order.iter().all(|&p| w.accept(p) == Arrival::Duplicate));
        // A gap holds the point; filling it releases everything behind it.
        assert_eq!(w.accept(201), Arrival::New { advanced: 0 });
        assert_eq!(w.accept(265), Arrival::New { advanced: 0 });
        assert_eq!(w.held(), 2);
        assert_eq!(w.accept(200), Arrival::New { advanced: 2 });
        assert_eq!(w.expected(), 202);
        assert_eq!(w.accept(202 + ReorderWindow::SPAN), Arrival::BeyondWindow);
        for p in 202..265 {
            w.accept(p);
        }
        assert_eq!((w.expected(), w.held()), (266, 0));
    }

    #[test]
    fn a_sprayer_uses_every_ev_and_decodes_its_own_echo() {
        let cfg = SprayConfig {
            kind: EvPolicyKind::Oblivious,
            evs: 16,
            seed: 3,
        };
        let mut s = cfg.sprayer(7).unwrap();
        let ports: Vec<u16> = (0..16).map(|_| s.next_port()).collect();
        assert!(s.sent_by_ev.iter().all(|&n| n == 1), "{:?}", s.sent_by_ev);
        assert!(ports.iter().all(|p| p & 0xc000 == 0xc000));
        // Another flow, other ports for the same EVs.
        let mut o = cfg.sprayer(8).unwrap();
        let other: Vec<u16> = (0..16).map(|_| o.next_port()).collect();
        assert_ne!(ports, other);
        // The receiver echoes; the sender maps each back to its EV.
        let mut e = Echo::default();
        e.push(ports[0], true);
        e.push(ports[1], false);
        let mut b = [0u8; 2 * MAX_ECHO];
        assert_eq!(e.drain_into(&mut b), 4);
        let bitmap = SprayConfig {
            kind: EvPolicyKind::Bitmap,
            ..cfg
        };
        let mut s = bitmap.sprayer(7).unwrap();
        let ports: Vec<u16> = (0..16).map(|_| s.next_port()).collect();
        let mut e = Echo::default();
        e.push(ports[0], true);
        let mut b = [0u8; 2 * MAX_ECHO];
        let n = e.drain_into(&mut b);
        s.on_echo(&b[..n]);
        let ev = (ports[0] & (MAX_EVS - 1)) ^ s.salt;
        assert_eq!(s.policy().penalty(ev), 1, "an ECN echo penalises its EV");
        assert_eq!(s.policy().bad_ev, 0);
    }

    #[test]
    fn reps_stays_on_evs_that_come_back_unmarked() {
        let cfg = SprayConfig {
            kind: EvPolicyKind::Reps,
            evs: 256,
            seed: 1,
        };
        let mut s = cfg.sprayer(0).unwrap();
        // EVs whose (port) is even are "good paths": their echoes come back unmarked,
        // the others marked. After a while nearly every packet takes a good path.
        let mut good = 0;
        for i in 0..4000 {
            let p = s.next_port();
            let ok = p.is_multiple_of(2);
            if i >= 2000 {
                good += ok as u32;
            }
            s.on_feedback(
                p,
                if ok {
                    PathSignal::Good
                } else {
                    PathSignal::Ecn
                },
            );
        }
        assert!(good > 1800, "{good} of 2000 on good paths");
    }

    #[test]
    fn too_many_evs_or_not_a_power_of_two_is_refused() {
        let mut c = SprayConfig {
            kind: EvPolicyKind::Mixed,
            evs: 1 << 15,
            seed: 0,
        };
        assert!(c.validate().unwrap_err().contains("at most 16384"));
        c.evs = 12;
        assert!(c.validate().unwrap_err().contains("power of two"));
        c.evs = 0;
        assert!(c.sprayer(0).is_err());
    }

    #[test]
    fn the_echo_keeps_the_newest_when_full() {
        let mut e = Echo::default();
        for p in 0..(MAX_ECHO as u16 + 5) {
            e.push(0xc000 | p, false);
        }
        let mut b = [0u8; 2 * MAX_ECHO];
        let n = e.drain_into(&mut b);
        let got: Vec<u16> = Echo::decode(&b[..n]).map(|(p, _)| p).collect();
        assert_eq!(got.len(), MAX_ECHO);
        assert_eq!(got[0], 5);
    }
}
