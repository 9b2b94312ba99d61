//! Link-flap damping in the manner of SONiC's link event damping (itself Cisco's IP
//! event dampening): every down event adds a penalty that decays exponentially with a
//! half-life; when the penalty exceeds the suppress threshold the link is **damped** —
//! it is held down, its further changes are not passed on — until the penalty decays
//! below the reuse threshold, when its actual state is passed on. The penalty is capped
//! so that no link stays damped longer than the maximum suppress time after its last
//! flap. Counters are kept before and after damping.
//!
//! Pure: the caller passes the time (ns on any monotonic clock) with every call.

use std::time::Duration;

/// Damping settings.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct DampingConfig {
    /// Penalty added by each down event.
    pub flap_penalty: f64,
    /// Damp when the penalty exceeds this.
    pub suppress_threshold: f64,
    /// Undamp when the penalty decays below this.
    pub reuse_threshold: f64,
    /// Penalty half-life.
    pub half_life: Duration,
    /// Longest a link stays damped after its last flap.
    pub max_suppress: Duration,
}

impl Default for DampingConfig {
    /// Cisco IP event dampening's defaults, which SONiC's link event damping follows:
    /// penalty 1000, suppress 2000, reuse 1000, half-life 5 s, max suppress 20 s.
    fn default() -> Self {
        DampingConfig {
            flap_penalty: 1000.0,
            suppress_threshold: 2000.0,
            reuse_threshold: 1000.0,
            half_life: Duration::from_secs(5),
            max_suppress: Duration::from_secs(20),
        }
    }
}

impl DampingConfig {
    /// Checks the thresholds' order and the times.
    pub fn validate(&self) -> Result<(), String> {
        let ok = |x: f64| x.is_finite() && x > 0.0;
        if !(ok(self.flap_penalty) && ok(self.suppress_threshold) && ok(self.reuse_threshold)) {
            return Err("damping: penalty and thresholds must be positive numbers".into());
        }
        if self.reuse_threshold >= self.suppress_threshold {
            return Err(format!(
                "damping: reuse threshold {} must be below the suppress threshold {}",
                self.reuse_threshold, self.suppress_threshold
            ));
        }
        if self.half_life.is_zero() || self.max_suppress < self.half_life {
            return Err("damping: half-life must be > 0 and max suppress >= half-life".into());
        }
        Ok(())
    }

    /// The penalty cap: what decays to the reuse threshold in `max_suppress`.
    pub fn ceiling(&self) -> f64 {
        let halvings = self.max_suppress.as_secs_f64() / self.half_life.as_secs_f64();
        self.reuse_threshold * 2f64.powf(halvings.min(60.0))
    }
}

/// One link's damping state.
#[derive(Debug, Clone, Default)]
pub struct LinkDamper {
    penalty: f64,
    at_ns: u64,
    damped: bool,
    /// The link's real state (true = up).
    actual_down: bool,
    /// State changes seen (before damping).
    pub events_before: u64,
    /// State changes passed on (after damping).
    pub events_after: u64,
}

impl LinkDamper {
    fn decay(&mut self, cfg: &DampingConfig, now_ns: u64) {
        let dt = now_ns.saturating_sub(self.at_ns) as f64 * 1e-9;
        self.penalty *= 0.5f64.powf(dt / cfg.half_life.as_secs_f64());
        self.at_ns = self.at_ns.max(now_ns);
    }

    /// The link changed state; returns the state to pass on (`Some(up)`), or `None`
    /// when damping holds it.
    pub fn on_change(&mut self, cfg: &DampingConfig, now_ns: u64, up: bool) -> Option<bool> {
        self.decay(cfg, now_ns);
        self.events_before += 1;
        self.actual_down = !up;
        if !up {
            self.penalty = (self.penalty + cfg.flap_penalty).min(cfg.ceiling());
        }
        if self.damped {
            return None;
        }
        if !up && self.penalty > cfg.suppress_threshold {
            // Damped from now on; the down itself is passed on (the link is down).
            self.damped = true;
        }
        self.events_after += 1;
        Some(up)
    }

    /// Time passes; returns `Some(up)` when the link leaves damping and its actual
    /// state must be passed on.
    pub fn on_tick(&mut self, cfg: &DampingConfig, now_ns: u64) -> Option<bool> {
        self.decay(cfg, now_ns);
        if self.damped && self.penalty < cfg.reuse_threshold {
            self.damped = false;
            if !self.actual_down {
                self.events_after += 1;
                return Some(true);
            }
        }
        None
    }

    /// True while damped (held down).
    pub fn damped(&self) -> bool {
        self.damped
    }

    /// The current penalty (as of the last call).
    pub fn penalty(&self) -> f64 {
        self.penalty
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const S: u64 = 1_000_000_000;

    #[test]
    fn a_flapping_link_is_damped_then_reused() {
        let c = DampingConfig::default();
        c.validate().unwrap();
        let mut d = LinkDamper::default();
        // Flap every second: down, up.
        assert_eq!(d.on_change(&c, 0, false), Some(false));
        assert_eq!(d.on_change(&c, S / 2, true), Some(true));
        assert_eq!(d.on_change(&c, S, false), Some(false));
        assert_eq!(d.on_change(&c, 3 * S / 2, true), Some(true));
        // Third down: 1000·2^-0.4 + 1000·2^-0.2 + 1000 ≈ 2628 > 2000: damped.
        assert_eq!(d.on_change(&c, 2 * S, false), Some(false));
        assert!(d.damped());
        // Up and down again while damped: held down, not passed on.
        assert_eq!(d.on_change(&c, 5 * S / 2, true), None);
        assert_eq!(d.on_change(&c, 3 * S, false), None);
        assert_eq!(d.on_change(&c, 7 * S / 2, true), None);
        assert!(d.on_tick(&c, 4 * S).is_none());
        // Penalty ≈ 3000+ decays below 1000 after more than one half-life... find when.
        let mut t = 4 * S;
        let reused = loop {
            t += S / 10;
            if let Some(up) = d.on_tick(&c, t) {
                break (t, up);
            }
            assert!(t < 30 * S, "never reused");
        };
        assert!(reused.1, "the link is up, so its reuse passes on `up`");
        assert!(reused.0 > 10 * S && reused.0 < 3 * S + c.max_suppress.as_nanos() as u64);
        assert_eq!((d.events_before, d.events_after), (8, 6));
    }

    #[test]
    fn the_penalty_is_capped_by_max_suppress() {
        let c = DampingConfig::default();
        let mut d = LinkDamper::default();
        for k in 0..100 {
            d.on_change(&c, k * S / 100, false);
            d.on_change(&c, k * S / 100 + 1, true);
        }
        assert!(d.penalty() <= c.ceiling() + 1e-6);
        // Reused no later than max suppress after the last flap.
        let last = 99 * S / 100;
        let max = last + c.max_suppress.as_nanos() as u64 + S / 10;
        let mut t = last;
        while d.damped() {
            t += S / 10;
            d.on_tick(&c, t);
            assert!(t <= max, "damped longer than max suppress");
        }
    }

    #[test]
    fn bad_settings_are_refused() {
        let c = DampingConfig {
            reuse_threshold: 3000.0,
            ..DampingConfig::default()
        };
        assert!(c.validate().unwrap_err().contains("below the suppress"));
    }
}
