//! [`Pacer`]: ties the simulator's virtual time to wall-clock time at a chosen ratio, for
//! live demos. Sans-IO: the caller passes the wall-clock instant (ns from any fixed
//! origin) and does the sleeping.
//!
//! ```
//! use sim::pacing::Pacer;
//! use cc_algos::Instant;
//! // 1 µs of virtual time per 10 ms of wall time (ratio 1e-4).
//! let mut p = Pacer::new(1e-4).unwrap();
//! assert_eq!(p.target(5_000_000_000), Instant::ZERO); // the first call starts the clock
//! assert_eq!(p.target(5_010_000_000), Instant::from_picos(1_000_000));
//! // Virtual 3 µs is due 20 ms after that.
//! assert_eq!(p.wall_until(Instant::from_picos(3_000_000), 5_010_000_000), 20_000_000);
//! ```

use crate::SimError;
use cc_algos::Instant;

/// Virtual time per wall-clock time.
#[derive(Clone, Debug)]
pub struct Pacer {
    ratio: f64,
    /// Wall-clock instant (ns) that corresponds to `origin`.
    wall_origin: Option<u64>,
    origin: Instant,
}

impl Pacer {
    /// `ratio` virtual seconds per wall second (1e-4: 100 µs of fabric time per second);
    /// finite and > 0.
    pub fn new(ratio: f64) -> Result<Self, SimError> {
        if !(ratio.is_finite() && ratio > 0.0) {
            return Err(SimError::Config(format!(
                "pacing ratio must be a finite number > 0, got {ratio}"
            )));
        }
        Ok(Pacer {
            ratio,
            wall_origin: None,
            origin: Instant::ZERO,
        })
    }

    /// The ratio.
    pub fn ratio(&self) -> f64 {
        self.ratio
    }

    /// The virtual time the run should have reached at wall instant `wall_ns` (the first
    /// call fixes the origin: virtual `origin` at that instant). Pass the result to
    /// `Sim::run_until`.
    pub fn target(&mut self, wall_ns: u64) -> Instant {
        let w0 = *self.wall_origin.get_or_insert(wall_ns);
        let dv_ps = (wall_ns.saturating_sub(w0) as f64 * self.ratio * 1e3).round() as u64;
        Instant::from_picos(self.origin.picos().saturating_add(dv_ps))
    }

    /// Wall ns from `wall_ns` until virtual time `t` is due (0 if it is already late).
    pub fn wall_until(&self, t: Instant, wall_ns: u64) -> u64 {
        let Some(w0) = self.wall_origin else {
            return 0;
        };
        let dv_ps = t.picos().saturating_sub(self.origin.picos());
        let due = w0.saturating_add((dv_ps as f64 / 1e3 / self.ratio).round() as u64);
        due.saturating_sub(wall_ns)
    }

    /// Restarts the clock: virtual `at` corresponds to the next [`Self::target`] call
    /// (after a pause, or when the simulation fell behind and should not catch up).
    pub fn rebase(&mut self, at: Instant) {
        self.origin = at;
        self.wall_origin = None;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keeps_the_ratio_and_rebases() {
        assert!(Pacer::new(0.0).is_err());
        assert!(Pacer::new(f64::NAN).is_err());
        let mut p = Pacer::new(1.0).unwrap();
        assert_eq!(p.wall_until(Instant::from_picos(5), 0), 0, "no origin yet");
        assert_eq!(p.target(100), Instant::ZERO);
        assert_eq!(p.target(1_100), Instant::from_picos(1_000_000));
        assert_eq!(
            p.target(50),
            Instant::ZERO,
            "a clock going back never rewinds the run"
        );
        assert_eq!(p.wall_until(Instant::from_picos(2_000_000), 1_100), 1_000);
        assert_eq!(p.wall_until(Instant::from_picos(0), 1_100), 0);
        p.rebase(Instant::from_picos(7_000_000));
        assert_eq!(p.target(9_999), Instant::from_picos(7_000_000));
        assert_eq!(p.target(10_999), Instant::from_picos(8_000_000));
    }
}
