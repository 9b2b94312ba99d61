//! Confidence intervals for the planner's figures.
//!
//! * A figure that is a mean over trials (every trial has the same horizon, so a pooled
//!   share of time is the mean of the trials' shares) gets Student's t interval:
//!   `mean ± t(0.975, n − 1) · s / √n`.
//! * A quantile of the pooled time distribution (p50, p99) gets a percentile bootstrap
//!   over trials: trials resampled with replacement, a seeded generator, [`RESAMPLES`]
//!   resamples, the 2.5th and 97.5th percentiles of the resampled quantile.
//!
//! With one trial no interval exists: `lo` and `hi` are NaN and the table prints `±?`.

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use serde::{Deserialize, Serialize};

/// Bootstrap resamples.
pub const RESAMPLES: usize = 400;

/// A figure and its 95 % confidence interval.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Estimate {
    /// The figure.
    pub value: f64,
    /// Lower end of the 95 % interval (NaN when it cannot be given; `null` in JSON).
    #[serde(with = "non_finite_as_null")]
    pub lo: f64,
    /// Upper end of the 95 % interval.
    #[serde(with = "non_finite_as_null")]
    pub hi: f64,
}

/// No figure: 0 without an interval (a field missing from an older result file).
impl Default for Estimate {
    fn default() -> Self {
        Estimate {
            value: 0.0,
            lo: f64::NAN,
            hi: f64::NAN,
        }
    }
}

/// JSON has no NaN or infinity: they are written as `null` and read back as NaN.
pub mod non_finite_as_null {
    use serde::{Deserialize, Deserializer, Serializer};

    /// Writes `null` for NaN and infinities.
    pub fn serialize<S: Serializer>(x: &f64, s: S) -> Result<S::Ok, S::Error> {
        if x.is_finite() {
            s.serialize_f64(*x)
        } else {
            s.serialize_none()
        }
    }

    /// Reads `null` as NaN.
    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<f64, D::Error> {
        Ok(Option::<f64>::deserialize(d)?.unwrap_or(f64::NAN))
    }
}

impl Estimate {
    /// A figure with no interval.
    pub fn bare(value: f64) -> Estimate {
        Estimate {
            value,
            lo: f64::NAN,
            hi: f64::NAN,
        }
    }
    /// Half the interval's width relative to the value (infinite when unknown or the value
    /// is 0 with a non-zero width).
    pub fn relative_half_width(&self) -> f64 {
        let hw = (self.hi - self.lo).abs() / 2.0;
        if !hw.is_finite() {
            f64::INFINITY
        } else if hw == 0.0 {
            0.0
        } else {
            hw / self.value.abs()
        }
    }
    /// `f(x)` of the figure and both ends (for an increasing `f`).
    pub fn map(self, f: impl Fn(f64) -> f64) -> Estimate {
        Estimate {
            value: f(self.value),
            lo: f(self.lo),
            hi: f(self.hi),
        }
    }
}

/// Two-sided 95 % Student t quantiles for 1–30 degrees of freedom (any statistics table).
const T975: [f64; 30] = [
    12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228, 2.201, 2.179, 2.160,
    2.145, 2.131, 2.120, 2.110, 2.101, 2.093, 2.086, 2.080, 2.074, 2.069, 2.064, 2.060, 2.056,
    2.052, 2.048, 2.045, 2.042,
];

/// t(0.975, df); the normal 1.96 beyond 30 degrees of freedom rounds up to 2.0 until 60.
fn t975(df: usize) -> f64 {
    match df {
        0 => f64::NAN,
        1..=30 => T975[df - 1],
        31..=60 => 2.0,
        _ => 1.96,
    }
}

/// Mean of the samples with its t interval.
pub fn mean_interval(x: &[f64]) -> Estimate {
    let n = x.len();
    if n == 0 {
        return Estimate::bare(0.0);
    }
    let mean = x.iter().sum::<f64>() / n as f64;
    if n == 1 {
        return Estimate::bare(mean);
    }
    let var = x.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / (n - 1) as f64;
    let hw = t975(n - 1) * (var / n as f64).sqrt();
    Estimate {
        value: mean,
        lo: mean - hw,
        hi: mean + hw,
    }
}

/// `stat` of all items, with a percentile bootstrap interval over the items (resampled
/// with replacement, seed fixed so the interval is reproducible).
pub fn bootstrap<T>(items: &[T], stat: impl Fn(&[&T]) -> f64) -> Estimate {
    let all: Vec<&T> = items.iter().collect();
    let value = stat(&all);
    if items.len() < 2 {
        return Estimate::bare(value);
    }
    let mut rng = ChaCha8Rng::seed_from_u64(0x5eed);
    let mut draws: Vec<f64> = (0..RESAMPLES)
        .map(|_| {
            let pick: Vec<&T> = (0..items.len())
                .map(|_| &items[rng.random_range(0..items.len())])
                .collect();
            stat(&pick)
        })
        .collect();
    draws.sort_by(f64::total_cmp);
    let at = |q: f64| draws[((q * (RESAMPLES - 1) as f64).round() as usize).min(RESAMPLES - 1)];
    Estimate {
        value,
        lo: at(0.025).min(value),
        hi: at(0.975).max(value),
    }
}

/// Trials needed for a relative half-width `target`, from a pilot interval of `n` trials
/// (the half-width shrinks as 1/√n).
pub fn trials_for(pilot: &Estimate, n: u32, target: f64) -> u32 {
    let r = pilot.relative_half_width();
    if r <= target {
        return n;
    }
    if !r.is_finite() {
        return n.saturating_mul(4);
    }
    let need = (n as f64 * (r / target).powi(2)).ceil();
    need.min(u32::MAX as f64) as u32
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn t_interval_of_known_samples() {
        // mean 2, s = 1, n = 4: half-width 3.182 / 2
        let e = mean_interval(&[1.0, 2.0, 3.0, 2.0]);
        let s = (2.0f64 / 3.0).sqrt();
        assert!((e.value - 2.0).abs() < 1e-12);
        assert!((e.hi - e.value - 3.182 * s / 2.0).abs() < 1e-9);
        assert!(mean_interval(&[5.0]).lo.is_nan());
        assert_eq!(mean_interval(&[]).value, 0.0);
    }

    #[test]
    fn bootstrap_brackets_the_value_and_is_reproducible() {
        let x: Vec<f64> = (0..50).map(|i| i as f64).collect();
        let mean = |v: &[&f64]| v.iter().copied().sum::<f64>() / v.len() as f64;
        let a = bootstrap(&x, mean);
        let b = bootstrap(&x, mean);
        assert_eq!(a, b);
        assert!(a.lo < 24.5 && 24.5 < a.hi, "{a:?}");
        // about ±1.96 · 14.6 / √50 = ±4
        assert!(a.hi - a.lo > 5.0 && a.hi - a.lo < 12.0, "{a:?}");
    }

    #[test]
    fn trials_for_a_target() {
        let pilot = Estimate {
            value: 1.0,
            lo: 0.8,
            hi: 1.2,
        };
        // ±20 % with 10 trials → ±5 % needs 16× as many
        assert_eq!(trials_for(&pilot, 10, 0.05), 160);
        assert_eq!(trials_for(&pilot, 10, 0.3), 10);
    }
}
