//! Switch-side ECN marking (the DCQCN *congestion point*, CP).
//!
//! RED-style marking on the egress queue length, as specified for DCQCN
//! (Zhu et al., "Congestion Control for Large-Scale RDMA Deployments", SIGCOMM 2015,
//! §3.1 and Fig. 5): no mark at or below `kmin`, a probability rising linearly from 0
//! to `pmax` between `kmin` and `kmax`, and always above `kmax`. With `kmin == kmax`
//! and `pmax = 1` it is the DCTCP step marker (mark iff queue > K; Alizadeh et al.,
//! SIGCOMM 2010, §3.1).
//!
//! **Where to decide.** Commodity switches decide at *dequeue* (the queue length the
//! departing packet sees), which delivers congestion information one queueing delay
//! sooner than marking at enqueue; DCQCN's paper notes the same. The decision function
//! does not care: the driver passes whichever queue length it models.
//!
//! **Randomness.** [`RedEcn::should_mark`] takes a uniform `u ∈ [0, 1)` from the
//! caller, so determinism stays with the driver's seeded RNG.

use crate::error::{Result, invalid};
use crate::traits::EcnMarker;
use crate::units::{Bytes, Rate};
use serde::{Deserialize, Serialize};

/// RED-style ECN marking thresholds for one egress queue.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct RedEcn {
    /// At or below this queue length nothing is marked.
    pub kmin: Bytes,
    /// Above this queue length every packet is marked.
    pub kmax: Bytes,
    /// Marking probability reached at `kmax` (in `[0, 1]`).
    pub pmax: f64,
}

impl RedEcn {
    /// Checked constructor: `kmin <= kmax`, `0 <= pmax <= 1`.
    pub fn new(kmin: Bytes, kmax: Bytes, pmax: f64) -> Result<Self> {
        if kmin > kmax {
            return Err(invalid(
                "red",
                "kmin",
                format!("kmin ({kmin}) must not exceed kmax ({kmax})"),
            ));
        }
        if !(0.0..=1.0).contains(&pmax) {
            return Err(invalid(
                "red",
                "pmax",
                format!("pmax must be a probability in [0, 1], got {pmax}"),
            ));
        }
        Ok(RedEcn { kmin, kmax, pmax })
    }

    /// The DCQCN paper's switch setting: Kmin = 5 KB, Kmax = 200 KB, Pmax = 1 %
    /// (Zhu et al., SIGCOMM 2015, §5 "ECN marking parameters", 40 Gb/s links).
    pub fn dcqcn_paper() -> Self {
        RedEcn {
            kmin: Bytes::kb(5),
            kmax: Bytes::kb(200),
            pmax: 0.01,
        }
    }

    /// The HPCC ns-3 simulator's DCQCN setting (simulation/run.py, `kmin_map`,
    /// `kmax_map`, `pmax_map`): Kmin = 100 KB and Kmax = 400 KB per 25 Gb/s of link
    /// rate, Pmax = 0.2. (So 400 KB / 1600 KB at 100 Gb/s.)
    pub fn hpcc_ns3(link: Rate) -> Self {
        let per25 = |kb: u64| {
            let b = kb as u128 * 1000 * link.as_bps() as u128 / 25_000_000_000;
            Bytes(b.min(u64::MAX as u128) as u64)
        };
        RedEcn {
            kmin: per25(100),
            kmax: per25(400),
            pmax: 0.2,
        }
    }

    /// DCTCP's step marking: mark every packet when the queue exceeds `k`
    /// (Alizadeh et al., SIGCOMM 2010, §3.1; K = 65 packets at 10 Gb/s in §4).
    pub fn step(k: Bytes) -> Self {
        RedEcn {
            kmin: k,
            kmax: k,
            pmax: 1.0,
        }
    }

    /// The marking probability for a packet seeing `qlen` bytes queued.
    pub fn probability(&self, qlen: Bytes) -> f64 {
        if qlen <= self.kmin {
            0.0
        } else if qlen > self.kmax {
            1.0
        } else {
            // kmin < qlen <= kmax, so kmax > kmin here.
            let span = (self.kmax.0 - self.kmin.0) as f64;
            self.pmax * (qlen.0 - self.kmin.0) as f64 / span
        }
    }

    /// Mark iff `u < probability(qlen)`, with `u` uniform in `[0, 1)` from the caller.
    pub fn should_mark(&self, qlen: Bytes, u: f64) -> bool {
        u < self.probability(qlen)
    }
}

impl EcnMarker for RedEcn {
    fn should_mark(&self, qlen: Bytes, u: f64) -> bool {
        RedEcn::should_mark(self, qlen, u)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn red_profile() {
        let m = RedEcn::new(Bytes::kb(5), Bytes::kb(200), 0.01).unwrap();
        assert_eq!(m.probability(Bytes(0)), 0.0);
        assert_eq!(m.probability(Bytes::kb(5)), 0.0);
        assert!((m.probability(Bytes(102_500)) - 0.005).abs() < 1e-12);
        assert!((m.probability(Bytes::kb(200)) - 0.01).abs() < 1e-12);
        assert_eq!(m.probability(Bytes::kb(200) + Bytes(1)), 1.0);
        // Above kmax even u close to 1 marks; below kmin even u = 0 does not.
        assert!(m.should_mark(Bytes::kb(201), 0.999_999));
        assert!(!m.should_mark(Bytes::kb(4), 0.0));
    }

    #[test]
    fn step_marker_is_dctcp() {
        let m = RedEcn::step(Bytes::kb(100));
        assert!(!m.should_mark(Bytes::kb(100), 0.0));
        assert!(m.should_mark(Bytes::kb(100) + Bytes(1), 0.999));
    }

    #[test]
    fn hpcc_preset_scales_with_rate() {
        let m = RedEcn::hpcc_ns3(Rate::gbps(100));
        assert_eq!(m.kmin, Bytes::kb(400));
        assert_eq!(m.kmax, Bytes::kb(1600));
        assert_eq!(m.pmax, 0.2);
    }

    #[test]
    fn bad_configs_are_refused_with_the_field() {
        let e = RedEcn::new(Bytes(10), Bytes(5), 0.1).unwrap_err();
        assert!(e.to_string().contains("kmin"), "{e}");
        let e = RedEcn::new(Bytes(1), Bytes(5), 1.5).unwrap_err();
        assert!(e.to_string().contains("pmax"), "{e}");
    }

    proptest! {
        #[test]
        fn probability_is_monotone_and_bounded(kmin in 0u64..1_000_000, span in 0u64..1_000_000,
                                               pmax in 0.0f64..=1.0, q1 in 0u64..3_000_000, q2 in 0u64..3_000_000) {
            let m = RedEcn::new(Bytes(kmin), Bytes(kmin + span), pmax).unwrap();
            let (lo, hi) = (q1.min(q2), q1.max(q2));
            let (p1, p2) = (m.probability(Bytes(lo)), m.probability(Bytes(hi)));
            prop_assert!((0.0..=1.0).contains(&p1) && (0.0..=1.0).contains(&p2));
            prop_assert!(p1 <= p2);
        }

        #[test]
        fn empirical_mark_rate_matches_probability(q in 5_001u64..200_000) {
            // Deterministic uniform grid of u: the fraction marked equals p to 1/n.
            let m = RedEcn::dcqcn_paper();
            let n = 10_000;
            let marked = (0..n).filter(|i| m.should_mark(Bytes(q), *i as f64 / n as f64)).count();
            let p = m.probability(Bytes(q));
            prop_assert!((marked as f64 / n as f64 - p).abs() <= 1.0 / n as f64 + 1e-12);
        }
    }
}
