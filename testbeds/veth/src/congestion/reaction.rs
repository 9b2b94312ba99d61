//! What a flow's congestion controller did during a run: its state sampled over time
//! ([`CcSample`]) and whether it reacted to congestion ([`Reaction`]: cut, then
//! recovered), so that a run whose controller never moved (HPCC without INT, before the
//! engine stamped it) says so instead of reporting agreement with the simulator.
//!
//! Each algorithm is judged on the quantity it controls: the window of window-based
//! controllers (DCTCP, NSCC, HPCC), the credit granted per sample of credit-based ones
//! (RCCC, whose sender rate is always line rate), the pacing rate of the others (DCQCN).

use cc_algos::{AnyCc, SenderCc};

/// A sender controller's state at one sampling point.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct CcSample {
    /// Pacing rate, Gb/s (virtual).
    pub rate_gbps: f64,
    /// Congestion window, bytes (window-based controllers).
    pub window_bytes: Option<u64>,
    /// Credit received so far, bytes (credit-based controllers).
    pub credit_received: Option<u64>,
    /// CNPs the flow's sender had received so far.
    pub cnps: u64,
}

impl CcSample {
    /// The state of `cc` now, after `cnps` CNPs.
    pub fn of(cc: &AnyCc, cnps: u64) -> CcSample {
        let credit_received = match cc {
            AnyCc::Rccc(s) => Some(s.received().0),
            _ => None,
        };
        CcSample {
            rate_gbps: cc.rate().as_gbps_f64(),
            window_bytes: cc.window().map(|w| w.0),
            credit_received,
            cnps,
        }
    }
}

/// How a flow's controller reacted, judged on the samples while the flow was active.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct Reaction {
    /// What was judged: `window_bytes`, `credit_gbps` or `rate_gbps`.
    pub signal: &'static str,
    /// The reference: the first sample (window, rate) or the line rate (credit).
    pub reference: f64,
    /// The smallest value while the flow was active.
    pub min: f64,
    /// The largest value after that minimum.
    pub max_after_min: f64,
    /// The value ever moved (by more than 1 % of the reference).
    pub changed: bool,
    /// It fell below half the reference.
    pub cut: bool,
    /// After a cut it rose again: some value below half the reference was followed by
    /// one at least 1.5× as high and higher by at least 1 % of the reference (on an 8:1
    /// incast DCQCN cuts to ~1 % of line rate and climbs back to a few % before its
    /// 1 MB is sent). Judged over every cut, not only the deepest: a controller in a
    /// sawtooth (50 → 75 → 37 → 56 → … Gb/s) recovers after each cut even when the
    /// flow ends on its lowest tooth.
    pub recovered: bool,
}

impl Reaction {
    /// Judge `series` (one value per sample; samples `active` are the flow's life).
    /// `None` when the flow was active for fewer than two samples.
    pub fn judge(
        signal: &'static str,
        series: &[f64],
        active: std::ops::Range<usize>,
        reference: Option<f64>,
    ) -> Option<Reaction> {
        let end = active.end.min(series.len());
        let s = series.get(active.start..end)?;
        if s.len() < 2 {
            return None;
        }
        let reference = reference.unwrap_or(s[0]);
        let (imin, &min) = s
            .iter()
            .enumerate()
            .min_by(|a, b| a.1.total_cmp(b.1))
            .expect("two samples");
        let max_after_min = s[imin..].iter().copied().fold(min, f64::max);
        let tol = 0.01 * reference.abs();
        Some(Reaction {
            signal,
            reference,
            min,
            max_after_min,
            changed: s.iter().any(|&x| (x - s[0]).abs() > tol),
            cut: min < 0.5 * reference,
            recovered: rose_after_a_cut(s, reference),
        })
    }
}

/// Whether some value of `s` below half of `reference` is followed by one at least 1.5×
/// as high and higher by at least 1 % of `reference`.
fn rose_after_a_cut(s: &[f64], reference: f64) -> bool {
    let mut highest_after = f64::NEG_INFINITY;
    s.iter().rev().any(|&x| {
        let rose = x < 0.5 * reference
            && highest_after >= 1.5 * x
            && highest_after - x >= 0.01 * reference;
        highest_after = highest_after.max(x);
        rose
    })
}

/// Credit granted per sample, Gb/s (virtual), from cumulative credit bytes.
pub fn credit_gbps(received: &[u64], sample_us: f64) -> Vec<f64> {
    let mut prev = 0;
    received
        .iter()
        .map(|&b| {
            let g = b.saturating_sub(prev) as f64 * 8.0 / (sample_us * 1e3);
            prev = b;
            g
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_flat_controller_neither_changed_nor_cut() {
        let r = Reaction::judge("rate_gbps", &[100.0; 10], 0..10, None).unwrap();
        assert!(!r.changed && !r.cut && !r.recovered, "{r:?}");
    }

    #[test]
    fn a_cut_then_a_climb_is_a_reaction() {
        let s = [100.0, 80.0, 20.0, 10.0, 12.0, 30.0, 45.0];
        let r = Reaction::judge("rate_gbps", &s, 0..7, None).unwrap();
        assert!(r.changed && r.cut && r.recovered, "{r:?}");
        assert_eq!((r.min, r.max_after_min), (10.0, 45.0));
        // A cut that never climbs back did not recover.
        let r = Reaction::judge("rate_gbps", &s[..4], 0..4, None).unwrap();
        assert!(r.cut && !r.recovered, "{r:?}");
    }

    /// DCQCN on the 8:1 incast, measured on veth: halved by each CNP and climbing back
    /// in between; the flow ended on its lowest tooth. Before, only the rise after the
    /// global minimum counted and this was judged "not recovered".
    #[test]
    fn a_sawtooth_that_ends_on_its_lowest_tooth_recovered() {
        let s = [
            100.0, 100.0, 50.0, 50.0, 75.0, 37.6, 56.3, 65.7, 33.2, 49.4, 29.3, 14.9, 22.1, 11.3,
        ];
        let r = Reaction::judge("rate_gbps", &s, 0..s.len(), None).unwrap();
        assert!(r.cut && r.recovered, "{r:?}");
        assert_eq!(r.min, 11.3);
        // A rise that happens only above half the reference is not a recovery from a cut.
        let s = [100.0, 60.0, 90.0, 40.0];
        let r = Reaction::judge("rate_gbps", &s, 0..4, None).unwrap();
        assert!(r.cut && !r.recovered, "{r:?}");
    }

    #[test]
    fn only_the_active_samples_count_and_short_lives_are_not_judged() {
        // The window stays small after the flow ended: not a cut it lived through.
        let s = [100.0, 100.0, 100.0, 5.0, 5.0];
        let r = Reaction::judge("window_bytes", &s, 0..3, None).unwrap();
        assert!(!r.changed && !r.cut);
        assert!(Reaction::judge("window_bytes", &s, 2..3, None).is_none());
        assert!(Reaction::judge("window_bytes", &s, 7..9, None).is_none());
    }

    #[test]
    fn credit_rate_from_cumulative_bytes() {
        assert_eq!(
            credit_gbps(&[0, 250, 250, 500], 20.0),
            vec![0.0, 0.1, 0.0, 0.1]
        );
    }
}
