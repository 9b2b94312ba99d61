//! The DCQCN reaction point: the sender's rate controller (Zhu et al. 2015, §3.1,
//! Algorithm "RP"; increase stages from QCN, IEEE 802.1Qau).

use super::{AlphaUpdate, DcqcnConfig, HyperIncrease};
use crate::traits::{Ack, CcMetrics, SenderCc};
use crate::units::{Bytes, Instant, Rate};

/// Which counter expired.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum IncreaseEvent {
    Timer,
    Bytes,
}

/// DCQCN sender. Rates are kept in `f64` bit/s internally (so halvings are exact) and
/// reported rounded to whole bit/s.
///
/// Timers: the rate-increase timer and a deferred rate cut (when
/// `rate_decrease_period` is set) are deadlines reported by [`SenderCc::next_timeout`].
/// α's periodic decay needs no timer: it is brought up to date lazily (exactly, as a
/// power of `1 − g`) whenever an event arrives, so idle flows cost nothing.
#[derive(Clone, Debug)]
pub struct DcqcnRp {
    cfg: DcqcnConfig,
    /// Current rate RC, bit/s.
    rc: f64,
    /// Target rate RT, bit/s.
    rt: f64,
    alpha: f64,
    /// Start of the α period grid (paper: last CNP; periodic: first CNP).
    alpha_epoch: Option<Instant>,
    /// α is up to date for all period boundaries `<= alpha_synced`.
    alpha_synced: Instant,
    /// Periodic mode: a CNP arrived in the current α period.
    alpha_cnp_flag: bool,
    t_stage: u32,
    bc_stage: u32,
    bytes_since: u64,
    rate_timer: Option<Instant>,
    last_cut: Option<Instant>,
    pending_cut: Option<Instant>,
    cnps: u64,
    cuts: u64,
}

impl DcqcnRp {
    /// Build from a validated config (use [`DcqcnConfig::build`]).
    pub(super) fn new_unchecked(cfg: DcqcnConfig) -> Self {
        let line = cfg.line_rate.as_bps_f64();
        DcqcnRp {
            cfg,
            rc: line,
            rt: line,
            alpha: cfg.initial_alpha,
            alpha_epoch: None,
            alpha_synced: Instant::ZERO,
            alpha_cnp_flag: false,
            t_stage: 0,
            bc_stage: 0,
            bytes_since: 0,
            rate_timer: None,
            last_cut: None,
            pending_cut: None,
            cnps: 0,
            cuts: 0,
        }
    }

    pub fn config(&self) -> &DcqcnConfig {
        &self.cfg
    }
    /// α as of the last event handled.
    pub fn alpha(&self) -> f64 {
        self.alpha
    }
    /// α at `now` (decay applied up to `now`), without changing state.
    pub fn alpha_at(&self, now: Instant) -> f64 {
        let mut c = self.clone();
        c.sync_alpha(now);
        c.alpha
    }
    /// Target rate RT.
    pub fn target_rate(&self) -> Rate {
        Rate::from_bps_f64(self.rt)
    }
    /// Current rate RC as exact `f64` bit/s.
    pub fn rate_bps(&self) -> f64 {
        self.rc
    }
    /// (timer stage T, byte-counter stage BC) since the last cut.
    pub fn stages(&self) -> (u32, u32) {
        (self.t_stage, self.bc_stage)
    }
    /// CNPs received and rate cuts made.
    pub fn counters(&self) -> (u64, u64) {
        (self.cnps, self.cuts)
    }

    /// Bring α up to date for every α-period boundary in `(alpha_synced, now]`.
    fn sync_alpha(&mut self, now: Instant) {
        let Some(epoch) = self.alpha_epoch else {
            return;
        };
        if now <= self.alpha_synced {
            return;
        }
        let k = self.cfg.alpha_period.as_picos();
        let before = self.alpha_synced.saturating_since(epoch).as_picos() / k;
        let after = now.saturating_since(epoch).as_picos() / k;
        // Boundaries are epoch + k·period for k >= 1.
        let mut n = after - before;
        let g = self.cfg.g;
        if n > 0 && self.cfg.alpha_update == AlphaUpdate::Periodic && self.alpha_cnp_flag {
            self.alpha = (1.0 - g) * self.alpha + g;
            self.alpha_cnp_flag = false;
            n -= 1;
        }
        if n > 0 {
            self.alpha *= (1.0 - g).powi(n.min(i32::MAX as u64) as i32);
        }
        self.alpha_synced = now;
    }

    fn line(&self) -> f64 {
        self.cfg.line_rate.as_bps_f64()
    }

    /// The rate cut of §3.1: RT = RC; RC = max(min, RC(1 − α/2)); reset the stages.
    fn cut(&mut self, now: Instant) {
        if self.cfg.clamp_target_rate || self.t_stage != 0 {
            self.rt = self.rc;
        }
        let min = self.cfg.min_rate.as_bps_f64();
        self.rc = (self.rc * (1.0 - self.alpha / 2.0))
            .max(min)
            .min(self.line());
        self.t_stage = 0;
        self.bc_stage = 0;
        self.bytes_since = 0;
        self.rate_timer = Some(now + self.cfg.rate_timer);
        self.last_cut = Some(now);
        self.pending_cut = None;
        self.cuts += 1;
    }

    fn increase(&mut self, ev: IncreaseEvent) {
        let f = self.cfg.fast_recovery_steps;
        let (lo, hi) = if self.cfg.byte_counter.is_some() {
            (
                self.t_stage.min(self.bc_stage),
                self.t_stage.max(self.bc_stage),
            )
        } else {
            (self.t_stage, self.t_stage)
        };
        if hi < f {
            // Fast recovery: RT unchanged.
        } else if lo > f {
            let steps = match self.cfg.hyper {
                HyperIncrease::Scaled => (lo - f) as f64,
                HyperIncrease::Flat => 1.0,
            };
            self.rt += steps * self.cfg.rate_hai.as_bps_f64();
        } else {
            self.rt += self.cfg.rate_ai.as_bps_f64();
        }
        self.rt = self.rt.min(self.line());
        self.rc = ((self.rt + self.rc) / 2.0).min(self.line());
        match ev {
            IncreaseEvent::Timer => self.t_stage = self.t_stage.saturating_add(1),
            IncreaseEvent::Bytes => self.bc_stage = self.bc_stage.saturating_add(1),
        }
    }

    /// Fully recovered: further increases cannot change anything until the next cut.
    fn at_line_rate(&self) -> bool {
        self.rc >= self.line() && self.rt >= self.line()
    }
}

impl SenderCc for DcqcnRp {
    fn on_send(&mut self, _now: Instant, bytes: Bytes) {
        let Some(b) = self.cfg.byte_counter else {
            return;
        };
        if self.last_cut.is_none() {
            return; // never cut: nothing to recover
        }
        self.bytes_since += bytes.0;
        while self.bytes_since >= b.0 {
            self.bytes_since -= b.0;
            if self.at_line_rate() {
                self.bytes_since = 0;
                break;
            }
            self.increase(IncreaseEvent::Bytes);
        }
    }

    /// DCQCN ignores ACKs (it reacts only to CNPs).
    fn on_ack(&mut self, _now: Instant, _ack: Ack) {}

    fn on_cnp(&mut self, now: Instant) {
        self.cnps += 1;
        let first = self.alpha_epoch.is_none();
        if first {
            self.alpha = self.cfg.initial_alpha;
            self.alpha_epoch = Some(now);
            self.alpha_synced = now;
        } else {
            self.sync_alpha(now);
        }
        let due = match self.last_cut {
            None => true,
            Some(t) => now >= t + self.cfg.rate_decrease_period,
        };
        if due {
            self.cut(now);
        } else if self.pending_cut.is_none() {
            self.pending_cut = self.last_cut.map(|t| t + self.cfg.rate_decrease_period);
        }
        match self.cfg.alpha_update {
            AlphaUpdate::OnCnp => {
                // The cut above used α before this CNP's update (paper order).
                let g = self.cfg.g;
                self.alpha = (1.0 - g) * self.alpha + g;
                // The α period restarts at each CNP.
                self.alpha_epoch = Some(now);
                self.alpha_synced = now;
            }
            AlphaUpdate::Periodic => {
                // The first CNP only initialises α (HPCC ns-3 `cnp_received_mlx`).
                if !first {
                    self.alpha_cnp_flag = true;
                }
            }
        }
    }

    /// DCQCN runs on lossless fabrics; a NACK carries no extra signal for it.
    fn on_nack(&mut self, _now: Instant, _bytes: Bytes) {}

    fn on_timeout(&mut self, now: Instant) {
        // Handle every deadline <= now in time order.
        loop {
            let next = match (self.pending_cut, self.rate_timer) {
                (Some(c), Some(r)) => Some(c.min(r)),
                (c, r) => c.or(r),
            };
            let Some(t) = next.filter(|&t| t <= now) else {
                break;
            };
            self.sync_alpha(t);
            if self.pending_cut == Some(t) {
                self.cut(t);
                continue;
            }
            // Rate-increase timer expiry.
            self.increase(IncreaseEvent::Timer);
            self.rate_timer = if self.at_line_rate() {
                None
            } else {
                Some(t + self.cfg.rate_timer)
            };
        }
        self.sync_alpha(now);
    }

    fn next_timeout(&self) -> Option<Instant> {
        match (self.pending_cut, self.rate_timer) {
            (Some(c), Some(r)) => Some(c.min(r)),
            (c, r) => c.or(r),
        }
    }

    fn rate(&self) -> Rate {
        Rate::from_bps_f64(self.rc)
    }

    fn window(&self) -> Option<Bytes> {
        None
    }

    fn metrics(&self) -> CcMetrics {
        CcMetrics {
            rate: self.rate(),
            window: None,
            extra: vec![
                ("alpha", self.alpha),
                ("target_rate_bps", self.rt),
                ("t_stage", self.t_stage as f64),
                ("bc_stage", self.bc_stage as f64),
                ("cnps", self.cnps as f64),
                ("cuts", self.cuts as f64),
            ],
        }
    }
}

/// Time for which α stays above half its value with no CNP: ⌈ln 2 / −ln(1−g)⌉ periods.
pub fn alpha_half_life_periods(g: f64) -> f64 {
    core::f64::consts::LN_2 / -(1.0 - g).ln()
}
