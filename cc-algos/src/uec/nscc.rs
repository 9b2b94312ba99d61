//! UEC NSCC — Network-Signal-based Congestion Control, the Ultra Ethernet 1.0 sender
//! window algorithm (UEC Specification 1.0, congestion management: NSCC), using ECN and
//! queueing delay together.
//!
//! Parameters scale from a reference network of 100 Gb/s, 12 µs base RTT and
//! 150,000 B BDP (the spec's reference; `initNsccParams` in the UEC reference simulator
//! htsim, `uec.cpp`):
//!
//! - `a = BDP / 150,000 B`, `b = target_qdelay / 12 µs`
//! - `target_qdelay = 0.75·RTT` with trimming, `1.0·RTT` without
//! - `α = 4·MSS·a·b / target_qdelay` (bytes per ps), `fair increase = 5·MSS·a`,
//!   `η = 0.15·MSS·a`, `γ = 0.8`, fast-increase scale `0.25·a`, delay EWMA gain 0.0125
//! - max window 1.5·BDP (but never under one MTU, so a path whose BDP is smaller than one
//!   packet — 1 Gb/s × 8 µs — still sends: a project rule, the spec does not cover it),
//!   initial window = max window, min window 1 MTU
//!
//! Each ACK falls in one of four quadrants (ECN-echo × delay vs. target):
//!
//! | | delay < target | delay ≥ target |
//! |---|---|---|
//! | no ECN | proportional increase `α·acked·(target − delay)` (fast increase if delay < 1 µs for a whole window) | fair increase `5·MSS·a·acked` |
//! | ECN | hold the window (the path is congested, not us: switch path) | multiplicative decrease `cwnd·max(1 − γ(avg − target)/avg, 0.5)`, at most once per base RTT |
//!
//! Increases accumulate (in bytes²) and are applied every 8 MTU acknowledged or every
//! base RTT, as `cwnd += inc/cwnd`, plus `η` once per base RTT. A NACK (trim or loss)
//! removes the NACKed bytes from the window and pushes the delay average up; *quick
//! adapt* collapses the window to what was actually delivered in the last
//! `RTT + target` when that is under `max window / 8` and there was loss or a delay
//! above `4·target`.
//!
//! **BDP and base RTT.** The BDP is `line rate × base RTT`, where the base RTT is the
//! *unloaded* round trip including store-and-forward serialisation: htsim computes it as
//! `2 × Σ link latency + hops × (MTU + ACK) serialisation` (`calculate_rtt` in
//! `main_uec.cpp`), see [`unloaded_rtt`]. For a 3-tier fat tree (6 hops each way, 1 µs
//! per link) at 100 Gb/s with 4,150 B MTU and 64 B ACKs that is 12 µs + 6·332 ns +
//! 6·5.12 ns = 14.02272 µs (printed "14.02 µs"), hence BDP = 175,284 B — not the
//! 175,250 B of exactly 14.02 µs. MSS = MTU − 64 B of headers = 4,086 B.

use crate::error::{Result, invalid};
use crate::traits::{Ack, CcMetrics, SenderCc};
use crate::units::{Bytes, Duration, Instant, Rate};
use serde::{Deserialize, Serialize};

/// NSCC's reference network: 100 Gb/s, 12 µs, hence 150,000 B.
pub const REFERENCE_RTT: Duration = Duration::micros(12);
/// `100 Gb/s × 12 µs`.
pub const REFERENCE_BDP: Bytes = Bytes(150_000);

/// Unloaded round-trip time over `hops` store-and-forward hops each way, each link with
/// `link_latency` propagation, at `rate`, for an `mtu`-byte data packet out and an
/// `ack`-byte ACK back (htsim `calculate_rtt`: `2·diameter_latency +
/// diameter·(data + ack serialisation)`).
pub fn unloaded_rtt(
    hops: u64,
    link_latency: Duration,
    rate: Rate,
    mtu: Bytes,
    ack: Bytes,
) -> Duration {
    link_latency * (2 * hops) + rate.tx_time(mtu) * hops + rate.tx_time(ack) * hops
}

/// NSCC parameters. [`NsccConfig::new`] derives all of them from the path.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct NsccConfig {
    /// NIC line rate (also the pacing rate reported).
    pub line_rate: Rate,
    /// Unloaded base RTT of the path (see [`unloaded_rtt`]).
    pub base_rtt: Duration,
    /// Largest packet on the wire.
    pub mtu: Bytes,
    /// Payload per full packet: MTU − 64 B of UEC headers (htsim `_hdr_size = 64`).
    pub mss: Bytes,
    /// Whether switches trim (sets target = 0.75·RTT instead of 1.0·RTT).
    pub trimming: bool,
    /// Target queueing delay.
    pub target_qdelay: Duration,
    /// `line_rate × base_rtt`.
    pub bdp: Bytes,
    /// 1.5·BDP, at least one MTU.
    pub max_window: Bytes,
    /// 1 MTU.
    pub min_window: Bytes,
    /// Initial window (= max window).
    pub initial_window: Bytes,
    /// Proportional-increase gain α = 4·MSS·a·b/target, in bytes per picosecond.
    pub alpha: f64,
    /// Fair increase 5·MSS·a (bytes; applied as bytes² / cwnd).
    pub fair_increase: f64,
    /// η = 0.15·MSS·a, added once per base RTT.
    pub eta: f64,
    /// Multiplicative-decrease gain γ = 0.8.
    pub gamma: f64,
    /// Fast-increase scale 0.25·a (window += acked × this).
    pub fast_increase_scale: f64,
    /// Delay below which fast increase may start: 1 µs.
    pub fast_increase_delay: Duration,
    /// EWMA gain of the delay average: 0.0125.
    pub delay_gain: f64,
    /// Apply accumulated increases after this many bytes acknowledged: 8 MTU.
    pub adjust_bytes: Bytes,
    /// ... or after this long: one base RTT (also the η period).
    pub adjust_period: Duration,
    /// Quick adapt fires only when achieved bytes < max_window >> qa_gate (qa_gate = 3: /8).
    pub qa_gate: u32,
    /// Quick adapt also fires on a delay above this: 4·target.
    pub qa_delay: Duration,
}

impl NsccConfig {
    /// Derive every parameter for a path (UEC 1.0 NSCC defaults, scaled as described in
    /// the module docs). `mtu` includes 64 B of headers.
    pub fn new(line_rate: Rate, base_rtt: Duration, mtu: Bytes, trimming: bool) -> Self {
        let bdp = line_rate.bdp(base_rtt);
        let target = if trimming {
            base_rtt.mul_f64(0.75)
        } else {
            base_rtt
        };
        let mss = mtu.saturating_sub(Bytes(64)).max(Bytes(1));
        let a = bdp.0 as f64 / REFERENCE_BDP.0 as f64;
        let b = target.as_picos() as f64 / REFERENCE_RTT.as_picos() as f64;
        let m = mss.0 as f64;
        // 1.5·BDP, and at least the min window (one MTU): below that nothing could be sent.
        let max_window = bdp.mul_f64(1.5).max(mtu);
        NsccConfig {
            line_rate,
            base_rtt,
            mtu,
            mss,
            trimming,
            target_qdelay: target,
            bdp,
            max_window,
            min_window: mtu,
            initial_window: max_window,
            alpha: 4.0 * m * a * b / (target.as_picos().max(1) as f64),
            fair_increase: 5.0 * m * a,
            eta: 0.15 * m * a,
            gamma: 0.8,
            fast_increase_scale: 0.25 * a,
            fast_increase_delay: Duration::micros(1),
            delay_gain: 0.0125,
            adjust_bytes: mtu * 8,
            adjust_period: base_rtt,
            qa_gate: 3,
            qa_delay: target * 4,
        }
    }

    pub fn validate(&self) -> Result<()> {
        const A: &str = "nscc";
        if self.line_rate == Rate::ZERO {
            return Err(invalid(A, "line_rate", "must be positive"));
        }
        if self.base_rtt == Duration::ZERO {
            return Err(invalid(A, "base_rtt", "must be positive"));
        }
        if self.mtu <= Bytes(64) {
            return Err(invalid(
                A,
                "mtu",
                format!("must exceed the 64 B header, got {}", self.mtu),
            ));
        }
        if self.min_window == Bytes::ZERO || self.min_window > self.max_window {
            return Err(invalid(
                A,
                "min_window",
                format!(
                    "must be in (0, max_window = {}], got {} (is the BDP smaller than one MTU?)",
                    self.max_window, self.min_window
                ),
            ));
        }
        if self.initial_window < self.min_window || self.initial_window > self.max_window {
            return Err(invalid(
                A,
                "initial_window",
                "must lie in [min_window, max_window]",
            ));
        }
        for (field, v) in [
            ("alpha", self.alpha),
            ("fair_increase", self.fair_increase),
            ("eta", self.eta),
            ("fast_increase_scale", self.fast_increase_scale),
        ] {
            if !(v.is_finite() && v >= 0.0) {
                return Err(invalid(
                    A,
                    field,
                    format!("must be finite and >= 0, got {v}"),
                ));
            }
        }
        if !(self.gamma > 0.0 && self.gamma <= 1.0) {
            return Err(invalid(A, "gamma", "must be in (0, 1]"));
        }
        if !(self.delay_gain > 0.0 && self.delay_gain <= 1.0) {
            return Err(invalid(A, "delay_gain", "must be in (0, 1]"));
        }
        if self.target_qdelay == Duration::ZERO {
            return Err(invalid(A, "target_qdelay", "must be positive"));
        }
        Ok(())
    }

    pub fn build(&self) -> Result<Nscc> {
        self.validate()?;
        Ok(Nscc::new_unchecked(*self))
    }
}

/// Which NSCC quadrant the last ACK fell in (for telemetry and path selection).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub enum Quadrant {
    /// No ECN, delay below target: proportional (or fast) increase.
    ProportionalIncrease,
    /// No ECN, delay at/above target: fair increase.
    FairIncrease,
    /// ECN, delay at/above target: multiplicative decrease.
    MultiplicativeDecrease,
    /// ECN, delay below target: hold the window and switch path.
    SwitchPath,
}

/// NSCC sender state. The window is kept in `f64` bytes.
#[derive(Clone, Debug)]
pub struct Nscc {
    cfg: NsccConfig,
    cwnd: f64,
    /// Smallest RTT seen (starts at the configured base RTT).
    base_rtt: Duration,
    /// EWMA of queueing delay, ps.
    avg_delay: f64,
    /// Accumulated increase, bytes².
    inc_bytes: f64,
    /// Bytes acknowledged since the last adjustment.
    received: u64,
    last_adjust: Instant,
    last_decrease: Option<Instant>,
    fi_count: u64,
    fast_increasing: bool,
    // quick adapt
    achieved: u64,
    qa_end: Option<Instant>,
    trigger_qa: bool,
    bytes_to_ignore: u64,
    bytes_ignored: u64,
    // flight accounting
    sent: u64,
    acked: u64,
    nacked: u64,
    last_quadrant: Option<Quadrant>,
    // counters
    decreases: u64,
    quick_adapts: u64,
}

impl Nscc {
    fn new_unchecked(cfg: NsccConfig) -> Self {
        Nscc {
            cfg,
            cwnd: cfg.initial_window.0 as f64,
            base_rtt: cfg.base_rtt,
            avg_delay: 0.0,
            inc_bytes: 0.0,
            received: 0,
            last_adjust: Instant::ZERO,
            last_decrease: None,
            fi_count: 0,
            fast_increasing: false,
            achieved: 0,
            qa_end: None,
            trigger_qa: false,
            bytes_to_ignore: 0,
            bytes_ignored: 0,
            sent: 0,
            acked: 0,
            nacked: 0,
            last_quadrant: None,
            decreases: 0,
            quick_adapts: 0,
        }
    }

    pub fn config(&self) -> &NsccConfig {
        &self.cfg
    }
    /// The window in exact `f64` bytes.
    pub fn cwnd_f64(&self) -> f64 {
        self.cwnd
    }
    /// Average queueing delay estimate.
    pub fn avg_delay(&self) -> Duration {
        Duration::picos(self.avg_delay.round() as u64)
    }
    /// The quadrant of the last ACK. `SwitchPath` tells the driver's EV policy to move.
    pub fn last_quadrant(&self) -> Option<Quadrant> {
        self.last_quadrant
    }
    /// Bytes sent and neither acknowledged nor NACKed.
    pub fn in_flight(&self) -> Bytes {
        Bytes(self.sent.saturating_sub(self.acked + self.nacked))
    }

    fn target_ps(&self) -> f64 {
        self.cfg.target_qdelay.as_picos() as f64
    }

    fn bound(&mut self) {
        let (lo, hi) = (self.cfg.min_window.0 as f64, self.cfg.max_window.0 as f64);
        self.cwnd = self.cwnd.clamp(lo, hi);
    }

    /// Delay EWMA (htsim `update_delay`): an unmarked sample above target is taken
    /// as `base_rtt/4` (delay without ECN is not queueing at a marking switch).
    fn update_avg_delay(&mut self, delay_ps: f64, ecn: bool) {
        let g = self.cfg.delay_gain;
        let sample = if !ecn && delay_ps > self.target_ps() {
            self.base_rtt.as_picos() as f64 * 0.25
        } else {
            delay_ps
        };
        self.avg_delay = g * sample + (1.0 - g) * self.avg_delay;
    }

    /// Returns true when quick adapt ran (or its aftermath is being ignored), in which
    /// case this ACK's other adjustments are skipped.
    fn quick_adapt(&mut self, now: Instant, is_loss: bool, ecn: bool, delay_ps: f64) -> bool {
        let mut done = false;
        if self.bytes_ignored < self.bytes_to_ignore && ecn {
            done = true;
        } else if self.qa_end.is_none_or(|t| now > t) {
            let gate = self.cfg.max_window.0 >> self.cfg.qa_gate;
            if self.qa_end.is_some()
                && (self.trigger_qa || is_loss || delay_ps > self.cfg.qa_delay.as_picos() as f64)
                && self.achieved < gate
            {
                self.cwnd = (self.achieved as f64).max(self.cfg.min_window.0 as f64);
                self.bytes_to_ignore = self.in_flight().0;
                self.bytes_ignored = 0;
                self.trigger_qa = false;
                self.quick_adapts += 1;
                done = true;
            }
            self.achieved = 0;
            self.qa_end = Some(now + self.base_rtt + self.cfg.target_qdelay);
        }
        if done {
            self.inc_bytes = 0.0;
            self.received = 0;
        }
        done
    }

    fn fast_increase(&mut self, acked: u64, delay_ps: f64) -> bool {
        if delay_ps < self.cfg.fast_increase_delay.as_picos() as f64 {
            self.fi_count += acked;
            if self.fi_count as f64 > self.cwnd || self.fast_increasing {
                self.cwnd += acked as f64 * self.cfg.fast_increase_scale;
                self.fast_increasing = true;
                return true;
            }
        } else {
            self.fi_count = 0;
        }
        self.fast_increasing = false;
        false
    }

    fn multiplicative_decrease(&mut self, now: Instant) {
        self.fast_increasing = false;
        self.fi_count = 0;
        let avg = self.avg_delay;
        let target = self.target_ps();
        if avg > target
            && self
                .last_decrease
                .is_none_or(|t| now.saturating_since(t) > self.base_rtt)
        {
            let f = (1.0 - self.cfg.gamma * (avg - target) / avg).max(0.5);
            self.cwnd = (self.cwnd * f).max(self.cfg.min_window.0 as f64);
            self.last_decrease = Some(now);
            self.decreases += 1;
        }
    }

    fn fulfill(&mut self, now: Instant) {
        self.cwnd += self.inc_bytes / self.cwnd;
        if now.saturating_since(self.last_adjust) >= self.cfg.adjust_period {
            self.cwnd += self.cfg.eta;
            self.last_adjust = now;
        }
        self.inc_bytes = 0.0;
        self.received = 0;
    }
}

impl SenderCc for Nscc {
    fn on_send(&mut self, _now: Instant, bytes: Bytes) {
        self.sent += bytes.0;
    }

    fn on_ack(&mut self, now: Instant, ack: Ack) {
        let acked = ack.acked.0;
        self.acked += acked;
        self.achieved += acked;
        self.received += acked;
        self.bytes_ignored += acked;
        let ecn = ack.ecn_echo;
        let delay_ps = match ack.rtt {
            Some(rtt) => {
                if rtt < self.base_rtt {
                    self.base_rtt = rtt;
                }
                let d = rtt.saturating_sub(self.base_rtt).as_picos() as f64;
                self.update_avg_delay(d, ecn);
                d
            }
            None => self.avg_delay,
        };
        if self.quick_adapt(now, false, ecn, delay_ps) {
            self.bound();
            return;
        }
        let target = self.target_ps();
        let q = match (ecn, delay_ps >= target) {
            (false, true) => {
                self.inc_bytes += self.cfg.fair_increase * acked as f64;
                Quadrant::FairIncrease
            }
            (false, false) => {
                if !self.fast_increase(acked, delay_ps) {
                    self.inc_bytes += self.cfg.alpha * acked as f64 * (target - delay_ps);
                }
                Quadrant::ProportionalIncrease
            }
            (true, true) => {
                self.multiplicative_decrease(now);
                Quadrant::MultiplicativeDecrease
            }
            (true, false) => Quadrant::SwitchPath,
        };
        self.last_quadrant = Some(q);
        self.bound();
        if self.received > self.cfg.adjust_bytes.0
            || now.saturating_since(self.last_adjust) > self.cfg.adjust_period
        {
            self.fulfill(now);
        }
        self.bound();
    }

    /// NSCC does not use CNPs.
    fn on_cnp(&mut self, _now: Instant) {}

    fn on_nack(&mut self, now: Instant, bytes: Bytes) {
        self.nacked += bytes.0;
        self.bytes_ignored += bytes.0;
        // A trim means a queue reached the trimming threshold (≈ one network RTT of
        // queueing): feed that as a marked delay sample (htsim updateCwndOnNack_NSCC).
        self.update_avg_delay(self.cfg.base_rtt.as_picos() as f64, true);
        self.trigger_qa = true;
        if !self.quick_adapt(now, true, true, 0.0) {
            self.cwnd -= bytes.0 as f64;
        }
        self.bound();
    }

    fn on_timeout(&mut self, _now: Instant) {}

    fn next_timeout(&self) -> Option<Instant> {
        None
    }

    fn rate(&self) -> Rate {
        self.cfg.line_rate
    }

    fn window(&self) -> Option<Bytes> {
        Some(Bytes(self.cwnd.round() as u64))
    }

    fn metrics(&self) -> CcMetrics {
        CcMetrics {
            rate: self.rate(),
            window: self.window(),
            extra: vec![
                ("avg_delay_us", self.avg_delay / 1e6),
                ("base_rtt_us", self.base_rtt.as_micros_f64()),
                ("decreases", self.decreases as f64),
                ("quick_adapts", self.quick_adapts as f64),
                ("in_flight", self.in_flight().0 as f64),
            ],
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    const MTU: Bytes = Bytes(4150);

    /// The 3-tier fat-tree path of the checkpoint: 6 hops each way, 1 µs per link.
    fn checkpoint_rtt() -> Duration {
        unloaded_rtt(6, Duration::micros(1), Rate::gbps(100), MTU, Bytes(64))
    }

    fn cfg() -> NsccConfig {
        NsccConfig::new(Rate::gbps(100), checkpoint_rtt(), MTU, true)
    }

    /// A controller starting at `w` bytes, with its quick-adapt epoch opened at t=0.
    fn nscc_at(w: u64) -> Nscc {
        let mut c = cfg();
        c.initial_window = Bytes(w);
        let mut n = c.build().unwrap();
        n.on_send(Instant::ZERO, Bytes(10_000_000));
        n
    }

    fn ack(bytes: u64, ecn: bool, delay: Duration) -> Ack {
        Ack {
            acked: Bytes(bytes),
            ecn_echo: ecn,
            rtt: Some(checkpoint_rtt() + delay),
        }
    }

    #[test]
    fn checkpoint_numbers() {
        let rtt = checkpoint_rtt();
        assert_eq!(rtt, Duration::picos(14_022_720)); // 12 µs + 6·332 ns + 6·5.12 ns
        let c = cfg();
        assert_eq!(c.mss, Bytes(4086));
        assert_eq!(c.target_qdelay, Duration::picos(10_517_040)); // 10.52 µs
        assert_eq!(
            (c.target_qdelay.as_picos() as f64 / 1e4).round() / 100.0,
            10.52
        );
        assert_eq!(c.bdp, Bytes(175_284));
        assert_eq!(c.max_window, Bytes(262_926));
        assert_eq!(c.initial_window, c.max_window);
        assert_eq!(c.min_window, MTU);
        assert_eq!(c.fair_increase.round(), 23_874.0);
        assert_eq!(c.eta.round(), 716.0);
        // Exactly 14.02 µs would give 175,250 B: the checkpoint's BDP counts the
        // serialisation delays of the unloaded RTT.
        assert_eq!(Rate::gbps(100).bdp(Duration::nanos(14_020)), Bytes(175_250));
        // Without trimming the target is the whole RTT.
        let nt = NsccConfig::new(Rate::gbps(100), rtt, MTU, false);
        assert_eq!(nt.target_qdelay, rtt);
    }

    #[test]
    fn ecn_below_target_holds_the_window_and_asks_to_switch_path() {
        let mut n = nscc_at(100_000);
        for i in 0..20 {
            n.on_ack(
                Instant::ZERO + Duration::nanos(i),
                ack(4086, true, Duration::micros(2)),
            );
            assert_eq!(n.cwnd_f64(), 100_000.0);
            assert_eq!(n.last_quadrant(), Some(Quadrant::SwitchPath));
        }
    }

    #[test]
    fn fair_increase_applies_every_8_mtu() {
        let mut n = nscc_at(100_000);
        let fi = n.config().fair_increase;
        let d = Duration::micros(11); // ≥ target, no ECN
        for _ in 0..8 {
            n.on_ack(Instant::ZERO, ack(4086, false, d));
            assert_eq!(n.cwnd_f64(), 100_000.0, "accumulating");
        }
        // 9 × 4086 = 36,774 > 8 MTU = 33,200: apply inc/cwnd (no η: period not elapsed).
        n.on_ack(Instant::ZERO, ack(4086, false, d));
        assert_eq!(n.last_quadrant(), Some(Quadrant::FairIncrease));
        let want = 100_000.0 + fi * 36_774.0 / 100_000.0;
        assert!(
            (n.cwnd_f64() - want).abs() < 1e-6,
            "{} vs {want}",
            n.cwnd_f64()
        );
    }

    #[test]
    fn proportional_increase_and_eta_once_per_rtt() {
        let mut n = nscc_at(100_000);
        let c = *n.config();
        let d = Duration::micros(5);
        let t = Instant::ZERO + c.base_rtt + Duration::nanos(1); // period elapsed: η too
        n.on_ack(t, ack(4086, false, d));
        assert_eq!(n.last_quadrant(), Some(Quadrant::ProportionalIncrease));
        let target = c.target_qdelay.as_picos() as f64;
        let inc = c.alpha * 4086.0 * (target - d.as_picos() as f64);
        let want = 100_000.0 + inc / 100_000.0 + c.eta;
        assert!(
            (n.cwnd_f64() - want).abs() < 1e-6,
            "{} vs {want}",
            n.cwnd_f64()
        );
        // At zero delay one window of ACKs adds 4·MSS·a·b (the α definition).
        let a = c.bdp.0 as f64 / 150_000.0;
        let b = target / 12e6;
        assert!((c.alpha * target - 4.0 * 4086.0 * a * b).abs() < 1e-6);
    }

    #[test]
    fn fast_increase_after_a_full_window_under_1us() {
        // Isolate fast increase: never apply the accumulated proportional increase.
        let mut c = cfg();
        c.initial_window = Bytes(40_000);
        c.adjust_bytes = Bytes(u64::MAX / 2);
        c.adjust_period = Duration::secs(1000);
        let mut n = c.build().unwrap();
        let s = c.fast_increase_scale;
        let d = Duration::nanos(500);
        // Count ACKs until the fast-increase path is taken: after > cwnd bytes.
        let mut acked = 0u64;
        loop {
            let before = n.cwnd_f64();
            n.on_ack(Instant::ZERO, ack(4086, false, d));
            acked += 4086;
            if acked > 40_000 {
                // This ACK crossed one window: cwnd grew by acked·0.25a immediately.
                assert!((n.cwnd_f64() - (before + 4086.0 * s)).abs() < 1e-6);
                break;
            }
            assert!(acked < 45_000);
        }
        // A delay sample above 1 µs ends fast increase.
        n.on_ack(Instant::ZERO, ack(4086, false, Duration::micros(2)));
        let before = n.cwnd_f64();
        n.on_ack(Instant::ZERO, ack(4086, false, d));
        assert!(n.cwnd_f64() - before < 4086.0 * s - 1.0);
    }

    #[test]
    fn multiplicative_decrease_follows_the_formula_once_per_rtt() {
        let mut n = nscc_at(200_000);
        let c = *n.config();
        let d = Duration::micros(40);
        let target = c.target_qdelay.as_picos() as f64;
        let mut t = Instant::ZERO;
        let mut first = None;
        for _ in 0..2000 {
            t += Duration::nanos(1);
            let before = n.cwnd_f64();
            n.on_ack(t, ack(100, true, d));
            if n.cwnd_f64() < before {
                let avg = n.avg_delay.max(1.0);
                let f = (1.0 - c.gamma * (avg - target) / avg).max(0.5);
                assert!((n.cwnd_f64() - before * f).abs() < 1e-6);
                assert!(avg > target);
                first = Some(t);
                break;
            }
        }
        let first = first.expect("a decrease");
        // No second decrease within one base RTT.
        let w = n.cwnd_f64();
        let mut t2 = first;
        while t2.saturating_since(first) <= c.base_rtt {
            n.on_ack(t2, ack(100, true, d));
            assert!(n.cwnd_f64() >= w, "decreased again within one base RTT");
            t2 += Duration::nanos(500);
        }
        let w2 = n.cwnd_f64();
        n.on_ack(t2, ack(100, true, d));
        assert!(n.cwnd_f64() < w2);
        assert_eq!(n.last_quadrant(), Some(Quadrant::MultiplicativeDecrease));
    }

    #[test]
    fn nack_removes_the_nacked_bytes() {
        let mut n = nscc_at(100_000);
        n.on_nack(Instant::ZERO, Bytes(4150));
        assert_eq!(n.cwnd_f64(), 100_000.0 - 4150.0);
        // Never below one MTU.
        for _ in 0..100 {
            n.on_nack(Instant::ZERO, Bytes(4150));
        }
        assert_eq!(n.window(), Some(MTU));
    }

    #[test]
    fn quick_adapt_collapses_to_achieved_bytes_after_loss() {
        let mut n = nscc_at(262_926);
        let c = *n.config();
        // Open the quick-adapt epoch.
        n.on_ack(Instant::ZERO, ack(4086, false, Duration::micros(2)));
        // During the epoch only 3 packets get through, then a trim NACK after it ends.
        for _ in 0..3 {
            n.on_ack(
                Instant::ZERO + Duration::micros(1),
                ack(4086, false, Duration::micros(2)),
            );
        }
        let end = Instant::ZERO + c.base_rtt + c.target_qdelay + Duration::nanos(1);
        n.on_nack(end, Bytes(4150));
        // achieved = 3 × 4086 = 12,258 < max/8 = 32,865: cwnd = achieved.
        assert_eq!(n.window(), Some(Bytes(12_258)));
        // The same situation without loss and with low delay does not adapt.
        let mut m = nscc_at(262_926);
        m.on_ack(Instant::ZERO, ack(4086, false, Duration::micros(2)));
        m.on_ack(end, ack(4086, false, Duration::micros(2)));
        assert!(m.window().unwrap() > Bytes(200_000));
    }

    #[test]
    fn bad_config_names_the_field() {
        let mut c = NsccConfig::new(Rate::gbps(100), Duration::micros(8), MTU, true);
        c.min_window = Bytes(c.max_window.0 + 1);
        let e = c.build().unwrap_err().to_string();
        assert!(e.contains("min_window"), "{e}");
    }

    #[test]
    fn a_path_smaller_than_one_packet_still_gets_a_one_packet_window() {
        // 1 Gb/s × 100 ns: a BDP of 12.5 B, far below one MTU.
        let c = NsccConfig::new(Rate::gbps(1), Duration::nanos(100), MTU, true);
        assert_eq!((c.max_window, c.min_window), (MTU, MTU));
        let n = c.build().unwrap();
        assert_eq!(n.window(), Some(MTU));
    }

    #[derive(Clone, Debug)]
    enum Ev {
        Ack {
            bytes: u64,
            ecn: bool,
            delay_ns: Option<u64>,
        },
        Nack(u64),
        Advance(u64),
    }

    fn ev() -> impl Strategy<Value = Ev> {
        prop_oneof![
            (
                1u64..20_000,
                any::<bool>(),
                proptest::option::of(0u64..200_000)
            )
                .prop_map(|(bytes, ecn, delay_ns)| Ev::Ack {
                    bytes,
                    ecn,
                    delay_ns
                }),
            (1u64..20_000).prop_map(Ev::Nack),
            (1u64..50_000).prop_map(Ev::Advance),
        ]
    }

    proptest! {
        /// The window stays within [1 MTU, 1.5 BDP] and finite on any input.
        #[test]
        fn window_stays_in_bounds(trim in any::<bool>(), evs in proptest::collection::vec(ev(), 1..300)) {
            let c = NsccConfig::new(Rate::gbps(100), checkpoint_rtt(), MTU, trim);
            let mut n = c.build().unwrap();
            let mut now = Instant::ZERO;
            for e in evs {
                match e {
                    Ev::Ack { bytes, ecn, delay_ns } => {
                        n.on_send(now, Bytes(bytes));
                        let rtt = delay_ns.map(|d| c.base_rtt + Duration::nanos(d) - Duration::nanos(100));
                        n.on_ack(now, Ack { acked: Bytes(bytes), ecn_echo: ecn, rtt });
                    }
                    Ev::Nack(b) => n.on_nack(now, Bytes(b)),
                    Ev::Advance(ns) => now += Duration::nanos(ns),
                }
                prop_assert!(n.cwnd_f64().is_finite());
                let w = n.window().unwrap();
                prop_assert!(w >= c.min_window && w <= c.max_window, "{w}");
                prop_assert!(n.avg_delay.is_finite() && n.avg_delay >= 0.0);
            }
        }
    }
}
