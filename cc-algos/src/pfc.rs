//! Priority flow control (IEEE 802.1Qbb) as two small state machines.
//!
//! - [`PfcIngress`]: one per switch ingress port. It counts the bytes each priority
//!   holds in the buffer on behalf of that port and tells the driver when to send a
//!   PAUSE (XOFF: occupancy reached `xoff`) or a resume (XON: occupancy fell to `xon`,
//!   sent as a PAUSE with zero quanta, as 802.1Qbb §36.1.3.2 allows). While a priority
//!   stays paused the pause is *refreshed* at half its duration, so the peer never
//!   resumes on timer expiry while the buffer is still above XON.
//! - [`PfcEgress`]: one per transmitter (NIC or switch egress port). It applies received
//!   PAUSE frames: priority `p` may not start a frame until `quanta × 512` bit times
//!   (802.1Qbb §36.1.3.2, "pause_quanta") after the frame arrived, or until a zero-quanta
//!   frame resumes it.
//!
//! Both are pure: no clock, the driver passes `now` and gets frames to send back.

use crate::error::{Result, invalid};
use crate::units::{Bytes, Duration, Instant, Rate};
use serde::{Deserialize, Serialize};

/// Number of 802.1p priorities / PFC classes.
pub const PRIORITIES: usize = 8;

/// One PFC decision: pause `priority` for `quanta` × 512 bit times (0 = resume).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct PfcFrame {
    /// The priority (0..=7) this frame applies to.
    pub priority: u8,
    /// Pause time in quanta of 512 bit times at the link rate; 0 means resume (XON).
    pub quanta: u16,
}

impl PfcFrame {
    /// A zero-quanta frame: resume transmission.
    pub fn is_resume(&self) -> bool {
        self.quanta == 0
    }
}

/// Duration of `quanta` pause quanta (512 bit times each) at `rate`.
pub fn quanta_duration(quanta: u16, rate: Rate) -> Duration {
    rate.tx_time(Bytes(64 * quanta as u64)) // 512 bits = 64 bytes
}

/// XOFF/XON thresholds for one ingress port (the same for every priority).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct PfcConfig {
    /// Send PAUSE when a priority's ingress occupancy reaches this many bytes.
    pub xoff: Bytes,
    /// Send resume when a paused priority's occupancy falls to this many bytes.
    pub xon: Bytes,
    /// Quanta carried in each PAUSE: 0xFFFF, the maximum, is the common switch
    /// default (the pause is then held by refreshes and ended by an explicit XON).
    pub pause_quanta: u16,
    /// Rate of the link the PAUSE travels on (sets the duration of a quantum).
    pub link_rate: Rate,
}

impl PfcConfig {
    /// Checked constructor: `xon <= xoff`, `xoff > 0`, `pause_quanta > 0`, `link_rate > 0`.
    pub fn new(xoff: Bytes, xon: Bytes, pause_quanta: u16, link_rate: Rate) -> Result<Self> {
        if xoff == Bytes::ZERO {
            return Err(invalid("pfc", "xoff", "must be positive"));
        }
        if xon > xoff {
            return Err(invalid(
                "pfc",
                "xon",
                format!("xon ({xon}) must not exceed xoff ({xoff})"),
            ));
        }
        if pause_quanta == 0 {
            return Err(invalid(
                "pfc",
                "pause_quanta",
                "must be positive (0 is the resume value)",
            ));
        }
        if link_rate == Rate::ZERO {
            return Err(invalid("pfc", "link_rate", "must be positive"));
        }
        Ok(PfcConfig {
            xoff,
            xon,
            pause_quanta,
            link_rate,
        })
    }

    /// The headroom a port needs above XOFF so that nothing is dropped: what is still
    /// in flight when the PAUSE takes effect. Bytes arriving during one round trip of
    /// the cable (`2 × propagation × rate`), plus one maximum frame the peer may have
    /// started, plus one maximum frame the switch may be sending when XOFF triggers.
    /// (Standard PFC headroom reasoning, e.g. Cisco/Mellanox buffer sizing guides;
    /// conservative, ignores the peer's reaction time in quanta.)
    pub fn headroom(link_rate: Rate, propagation: Duration, mtu: Bytes) -> Bytes {
        link_rate.bytes_in(propagation * 2) + mtu * 2
    }

    /// How long one PAUSE of this config lasts.
    pub fn pause_duration(&self) -> Duration {
        quanta_duration(self.pause_quanta, self.link_rate)
    }
}

/// Ingress accounting and XOFF/XON decisions for one switch port.
#[derive(Clone, Debug)]
pub struct PfcIngress {
    cfg: PfcConfig,
    occupancy: [Bytes; PRIORITIES],
    paused: [bool; PRIORITIES],
    refresh_at: [Option<Instant>; PRIORITIES],
    /// PAUSE frames requested (including refreshes).
    pub pauses_sent: u64,
    /// Resume (zero-quanta) frames requested.
    pub resumes_sent: u64,
    /// Calls with a priority outside 0..=7 (ignored).
    pub bad_priority: u64,
}

impl PfcIngress {
    pub fn new(cfg: PfcConfig) -> Self {
        PfcIngress {
            cfg,
            occupancy: [Bytes::ZERO; PRIORITIES],
            paused: [false; PRIORITIES],
            refresh_at: [None; PRIORITIES],
            pauses_sent: 0,
            resumes_sent: 0,
            bad_priority: 0,
        }
    }

    pub fn config(&self) -> &PfcConfig {
        &self.cfg
    }

    /// Bytes currently held for `priority` (zero for an invalid priority).
    pub fn occupancy(&self, priority: u8) -> Bytes {
        self.occupancy
            .get(priority as usize)
            .copied()
            .unwrap_or_default()
    }

    /// Whether this port currently holds its peer paused on `priority`.
    pub fn is_pausing(&self, priority: u8) -> bool {
        self.paused.get(priority as usize).copied().unwrap_or(false)
    }

    fn refresh_interval(&self) -> Duration {
        // Refresh at half the pause time, at least 1 ps so time always advances.
        (self.cfg.pause_duration() / 2).max(Duration::picos(1))
    }

    /// A packet of `bytes` from this port was admitted to the buffer on `priority`.
    /// Returns a PAUSE to send upstream if XOFF was just crossed.
    pub fn on_enqueue(&mut self, now: Instant, priority: u8, bytes: Bytes) -> Option<PfcFrame> {
        let p = priority as usize;
        if p >= PRIORITIES {
            self.bad_priority += 1;
            return None;
        }
        self.occupancy[p] += bytes;
        if !self.paused[p] && self.occupancy[p] >= self.cfg.xoff {
            self.paused[p] = true;
            self.refresh_at[p] = Some(now + self.refresh_interval());
            self.pauses_sent += 1;
            return Some(PfcFrame {
                priority,
                quanta: self.cfg.pause_quanta,
            });
        }
        None
    }

    /// A packet of `bytes` that entered through this port left the buffer.
    /// Returns a resume to send upstream if XON was just reached.
    pub fn on_dequeue(&mut self, _now: Instant, priority: u8, bytes: Bytes) -> Option<PfcFrame> {
        let p = priority as usize;
        if p >= PRIORITIES {
            self.bad_priority += 1;
            return None;
        }
        self.occupancy[p] -= bytes; // saturating
        if self.paused[p] && self.occupancy[p] <= self.cfg.xon {
            self.paused[p] = false;
            self.refresh_at[p] = None;
            self.resumes_sent += 1;
            return Some(PfcFrame {
                priority,
                quanta: 0,
            });
        }
        None
    }

    /// The next instant at which a PAUSE must be refreshed.
    pub fn next_timeout(&self) -> Option<Instant> {
        self.refresh_at.iter().flatten().min().copied()
    }

    /// Call at (or after) [`PfcIngress::next_timeout`]; returns one refresh PAUSE per
    /// call. Call until it returns `None`.
    pub fn on_timeout(&mut self, now: Instant) -> Option<PfcFrame> {
        let interval = self.refresh_interval();
        for p in 0..PRIORITIES {
            if let Some(t) = self.refresh_at[p]
                && t <= now
            {
                self.refresh_at[p] = Some(now + interval);
                self.pauses_sent += 1;
                return Some(PfcFrame {
                    priority: p as u8,
                    quanta: self.cfg.pause_quanta,
                });
            }
        }
        None
    }
}

/// Applies received PFC frames to one transmitter.
#[derive(Clone, Debug)]
pub struct PfcEgress {
    link_rate: Rate,
    paused_until: [Instant; PRIORITIES],
    /// Frames received with a priority outside 0..=7 (ignored).
    pub bad_priority: u64,
}

impl PfcEgress {
    /// `link_rate` is the rate of the link the PAUSE frames arrive on.
    pub fn new(link_rate: Rate) -> Self {
        PfcEgress {
            link_rate,
            paused_until: [Instant::ZERO; PRIORITIES],
            bad_priority: 0,
        }
    }

    /// A PFC frame arrived at `now`.
    pub fn on_frame(&mut self, now: Instant, frame: PfcFrame) {
        let p = frame.priority as usize;
        if p >= PRIORITIES {
            self.bad_priority += 1;
            return;
        }
        self.paused_until[p] = now
            .checked_add(quanta_duration(frame.quanta, self.link_rate))
            .unwrap_or(Instant::MAX);
    }

    /// Whether `priority` may not start a frame at `now`.
    pub fn is_paused(&self, now: Instant, priority: u8) -> bool {
        self.paused_until
            .get(priority as usize)
            .is_some_and(|&t| now < t)
    }

    /// When `priority` resumes by timer, if it is paused at `now`.
    pub fn resume_at(&self, now: Instant, priority: u8) -> Option<Instant> {
        self.paused_until
            .get(priority as usize)
            .copied()
            .filter(|&t| now < t)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn cfg() -> PfcConfig {
        PfcConfig::new(Bytes::kb(100), Bytes::kb(80), 0xFFFF, Rate::gbps(100)).unwrap()
    }

    #[test]
    fn quanta_is_512_bit_times() {
        // 512 bits at 100 Gb/s = 5.12 ns; 0xFFFF quanta = 335.5392 µs.
        assert_eq!(quanta_duration(1, Rate::gbps(100)), Duration::picos(5_120));
        assert_eq!(
            quanta_duration(0xFFFF, Rate::gbps(100)),
            Duration::picos(335_539_200)
        );
    }

    #[test]
    fn xoff_then_xon_with_hysteresis() {
        let mut ing = PfcIngress::new(cfg());
        let t = Instant::ZERO;
        for _ in 0..99 {
            assert_eq!(ing.on_enqueue(t, 3, Bytes(1000)), None);
        }
        let f = ing.on_enqueue(t, 3, Bytes(1000)).unwrap();
        assert_eq!(
            f,
            PfcFrame {
                priority: 3,
                quanta: 0xFFFF
            }
        );
        assert!(ing.is_pausing(3) && !ing.is_pausing(2));
        // Above xoff: no second pause until refresh time.
        assert_eq!(ing.on_enqueue(t, 3, Bytes(1000)), None);
        // Draining to 81 KB: still paused; at 80 KB: resume.
        for _ in 0..20 {
            assert_eq!(ing.on_dequeue(t, 3, Bytes(1000)), None);
        }
        let r = ing.on_dequeue(t, 3, Bytes(1000)).unwrap();
        assert!(r.is_resume());
        assert_eq!(ing.occupancy(3), Bytes::kb(80));
        assert_eq!((ing.pauses_sent, ing.resumes_sent), (1, 1));
        assert_eq!(ing.next_timeout(), None);
    }

    #[test]
    fn long_pause_is_refreshed_at_half_time() {
        let mut ing = PfcIngress::new(cfg());
        let t0 = Instant::ZERO;
        ing.on_enqueue(t0, 0, Bytes::kb(150)).unwrap();
        let half = cfg().pause_duration() / 2;
        assert_eq!(ing.next_timeout(), Some(t0 + half));
        assert_eq!(ing.on_timeout(t0 + half - Duration::picos(1)), None);
        let f = ing.on_timeout(t0 + half).unwrap();
        assert_eq!(f.quanta, 0xFFFF);
        assert_eq!(ing.on_timeout(t0 + half), None);
        assert_eq!(ing.next_timeout(), Some(t0 + half * 2));
    }

    #[test]
    fn egress_honours_quanta_and_resume() {
        let mut eg = PfcEgress::new(Rate::gbps(100));
        let t = Instant::ZERO + Duration::micros(1);
        eg.on_frame(
            t,
            PfcFrame {
                priority: 3,
                quanta: 1000,
            },
        ); // 5.12 µs
        assert!(eg.is_paused(t, 3));
        assert!(!eg.is_paused(t, 4));
        assert!(eg.is_paused(t + Duration::nanos(5_119), 3));
        assert!(!eg.is_paused(t + Duration::nanos(5_120), 3));
        eg.on_frame(
            t,
            PfcFrame {
                priority: 3,
                quanta: 1000,
            },
        );
        eg.on_frame(
            t + Duration::nanos(10),
            PfcFrame {
                priority: 3,
                quanta: 0,
            },
        );
        assert!(!eg.is_paused(t + Duration::nanos(10), 3));
    }

    #[test]
    fn bad_priority_is_counted_not_a_panic() {
        let mut ing = PfcIngress::new(cfg());
        assert_eq!(ing.on_enqueue(Instant::ZERO, 8, Bytes::mb(1)), None);
        assert_eq!(ing.bad_priority, 1);
        let mut eg = PfcEgress::new(Rate::gbps(1));
        eg.on_frame(
            Instant::ZERO,
            PfcFrame {
                priority: 200,
                quanta: 5,
            },
        );
        assert_eq!(eg.bad_priority, 1);
        assert!(!eg.is_paused(Instant::ZERO, 200));
    }

    #[test]
    fn config_errors_name_the_field() {
        let e = PfcConfig::new(Bytes(10), Bytes(20), 1, Rate::gbps(1)).unwrap_err();
        assert!(e.to_string().contains("`xon`"), "{e}");
        let e = PfcConfig::new(Bytes(10), Bytes(2), 0, Rate::gbps(1)).unwrap_err();
        assert!(e.to_string().contains("pause_quanta"), "{e}");
    }

    #[test]
    fn headroom_formula() {
        // 100 Gb/s, 1 µs cable: 2 × 12,500 B + 2 × 4,096 B.
        assert_eq!(
            PfcConfig::headroom(Rate::gbps(100), Duration::micros(1), Bytes(4096)),
            Bytes(25_000 + 8_192)
        );
    }

    proptest! {
        /// Pauses and resumes alternate per priority, and "pausing" always equals
        /// "a pause was sent more recently than a resume".
        #[test]
        fn pause_resume_alternate(ops in proptest::collection::vec((any::<bool>(), 0u8..8, 1u64..30_000), 1..400)) {
            let mut ing = PfcIngress::new(cfg());
            let mut last: [Option<bool>; 8] = [None; 8];
            for (enq, p, b) in ops {
                let f = if enq { ing.on_enqueue(Instant::ZERO, p, Bytes(b)) }
                        else { ing.on_dequeue(Instant::ZERO, p, Bytes(b)) };
                if let Some(f) = f {
                    let pause = !f.is_resume();
                    prop_assert_ne!(last[p as usize], Some(pause));
                    last[p as usize] = Some(pause);
                }
                prop_assert_eq!(ing.is_pausing(p), last[p as usize] == Some(true));
            }
        }
    }
}
