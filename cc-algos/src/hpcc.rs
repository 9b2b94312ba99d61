//! HPCC (Li et al., "HPCC: High Precision Congestion Control", SIGCOMM 2019) — an
//! INT-driven window controller, implemented as the paper's Algorithm 1.
//!
//! Per ACK, each hop's normalised in-flight bytes are estimated from the echoed INT:
//! `u_j = min(qlen_j, qlen_j') / (B_j·T) + txRate_j / B_j` (txRate from the tx-byte
//! counter difference since the previous ACK); the largest `u_j` is folded into `U` with
//! an EWMA weighted by the elapsed time `τ ≤ T`: `U = (1 − τ/T)·U + (τ/T)·u`. Then
//! `W = W_c / (U/η) + W_AI` when `U ≥ η` or after `max_stage` additive steps, else
//! `W = W_c + W_AI`. The reference window `W_c` is updated once per RTT (when the ACK
//! covers data sent after the last update), other ACKs react from `W_c` without moving it.
//! The pacing rate is `W/T`.
//!
//! Defaults: η = 0.95 and max_stage = 5 (paper §3.3/§5); T = base RTT; W_init = line
//! rate × T; W_AI = 10 Mb/s per 25 Gb/s of line rate × T (the HPCC ns-3 simulator's
//! `RATE_AI` for `--cc hp`, run.py; the paper suggests W_init·(1−η)/N for N flows).
//! (HPCC ns-3's run.py defaults `--mi` to 0, i.e. max_stage 0; we keep the paper's 5.)

use crate::error::{Result, invalid};
use crate::traits::{Ack, CcMetrics, IntHop, SenderCc};
use crate::units::{Bytes, Duration, Instant, Rate};
use serde::{Deserialize, Serialize};

/// HPCC parameters.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct HpccConfig {
    pub line_rate: Rate,
    /// T: the base RTT.
    pub base_rtt: Duration,
    /// Target utilisation η.
    pub eta: f64,
    /// Additive steps before a forced multiplicative update.
    pub max_stage: u32,
    /// Additive increase W_AI.
    pub w_ai: Bytes,
    /// Initial (and maximum) window: line rate × T.
    pub w_init: Bytes,
    /// Smallest window: one MTU.
    pub min_window: Bytes,
}

impl HpccConfig {
    pub fn new(line_rate: Rate, base_rtt: Duration, mtu: Bytes) -> Self {
        let rai = Rate::from_bps_f64(10e6 * line_rate.as_bps_f64() / 25e9);
        let w_init = line_rate.bdp(base_rtt).max(mtu);
        HpccConfig {
            line_rate,
            base_rtt,
            eta: 0.95,
            max_stage: 5,
            w_ai: rai.bdp(base_rtt).max(Bytes(1)),
            w_init,
            min_window: mtu,
        }
    }

    pub fn validate(&self) -> Result<()> {
        const A: &str = "hpcc";
        if self.line_rate == Rate::ZERO {
            return Err(invalid(A, "line_rate", "must be positive"));
        }
        if self.base_rtt == Duration::ZERO {
            return Err(invalid(A, "base_rtt", "must be positive"));
        }
        if !(self.eta > 0.0 && self.eta <= 1.0) {
            return Err(invalid(
                A,
                "eta",
                format!("must be in (0, 1], got {}", self.eta),
            ));
        }
        if self.min_window == Bytes::ZERO || self.min_window > self.w_init {
            return Err(invalid(A, "min_window", "must be in (0, w_init]"));
        }
        Ok(())
    }

    pub fn build(&self) -> Result<Hpcc> {
        self.validate()?;
        Ok(Hpcc {
            cfg: *self,
            w: self.w_init.0 as f64,
            wc: self.w_init.0 as f64,
            u: 0.0,
            inc_stage: 0,
            last: Vec::new(),
            sent: 0,
            acked: 0,
            last_update: None,
        })
    }
}

/// HPCC sender state.
#[derive(Clone, Debug)]
pub struct Hpcc {
    cfg: HpccConfig,
    w: f64,
    wc: f64,
    u: f64,
    inc_stage: u32,
    last: Vec<IntHop>,
    sent: u64,
    acked: u64,
    /// `acked` must pass this for the next reference-window update (`lastUpdateSeq`).
    last_update: Option<u64>,
}

impl Hpcc {
    /// The utilisation estimate U.
    pub fn utilisation(&self) -> f64 {
        self.u
    }
    /// The reference window W_c.
    pub fn reference_window(&self) -> f64 {
        self.wc
    }
    pub fn window_f64(&self) -> f64 {
        self.w
    }

    fn measure(&mut self, int: &[IntHop]) -> Option<f64> {
        if self.last.len() != int.len() {
            return None;
        }
        let t = self.cfg.base_rtt.as_secs_f64();
        let mut best: Option<(f64, f64)> = None;
        for (now, prev) in int.iter().zip(&self.last) {
            if now.port != prev.port {
                // Another link at this hop (a sprayed packet): no rate between them.
                continue;
            }
            let dt = now.ts.saturating_since(prev.ts).as_secs_f64();
            let b = now.link_rate.as_bps_f64();
            if dt <= 0.0 || b <= 0.0 {
                continue;
            }
            let tx_rate = now.tx_bytes.wrapping_sub(prev.tx_bytes) as f64 * 8.0 / dt;
            let q = now.qlen.min(prev.qlen).0 as f64 * 8.0;
            let u = q / (b * t) + tx_rate / b;
            if best.is_none_or(|(bu, _)| u > bu) {
                best = Some((u, dt));
            }
        }
        let (u, tau) = best?;
        let tau = tau.min(t);
        self.u = (1.0 - tau / t) * self.u + (tau / t) * u;
        Some(self.u)
    }

    fn compute_window(&mut self, update_wc: bool) {
        let u = self.u;
        let ai = self.cfg.w_ai.0 as f64;
        let w = if u >= self.cfg.eta || self.inc_stage >= self.cfg.max_stage {
            let w = self.wc / (u / self.cfg.eta).max(f64::MIN_POSITIVE) + ai;
            if update_wc {
                self.inc_stage = 0;
            }
            w
        } else {
            let w = self.wc + ai;
            if update_wc {
                self.inc_stage += 1;
            }
            w
        };
        let w = w.clamp(self.cfg.min_window.0 as f64, self.cfg.w_init.0 as f64);
        if update_wc {
            self.wc = w;
        }
        self.w = w;
    }
}

impl SenderCc for Hpcc {
    fn on_send(&mut self, _now: Instant, bytes: Bytes) {
        self.sent += bytes.0;
    }
    /// Without INT HPCC has no signal: plain ACKs only count bytes.
    fn on_ack(&mut self, _now: Instant, ack: Ack) {
        self.acked += ack.acked.0;
    }
    fn on_ack_int(&mut self, _now: Instant, ack: Ack, int: &[IntHop]) {
        self.acked += ack.acked.0;
        if self.last.is_empty() || self.last_update.is_none() {
            // First feedback: remember the INT, start the first RTT.
            self.last = int.to_vec();
            self.last_update = Some(self.sent);
            return;
        }
        if self.measure(int).is_some() {
            let update = self.last_update.is_some_and(|s| self.acked > s);
            self.compute_window(update);
            if update {
                self.last_update = Some(self.sent);
            }
        }
        self.last.clear();
        self.last.extend_from_slice(int);
    }
    fn on_cnp(&mut self, _now: Instant) {}
    fn on_nack(&mut self, _now: Instant, _bytes: Bytes) {}
    fn on_timeout(&mut self, _now: Instant) {}
    fn next_timeout(&self) -> Option<Instant> {
        None
    }
    /// `W / T`, capped at line rate.
    fn rate(&self) -> Rate {
        let r = self.w * 8.0 / self.cfg.base_rtt.as_secs_f64();
        Rate::from_bps_f64(r).min(self.cfg.line_rate)
    }
    fn window(&self) -> Option<Bytes> {
        Some(Bytes(self.w.round() as u64))
    }
    fn metrics(&self) -> CcMetrics {
        CcMetrics {
            rate: self.rate(),
            window: self.window(),
            extra: vec![
                ("utilisation", self.u),
                ("reference_window", self.wc),
                ("inc_stage", self.inc_stage as f64),
            ],
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    const B: Rate = Rate::gbps(100);

    fn hpcc() -> Hpcc {
        HpccConfig::new(B, Duration::micros(10), Bytes(1000))
            .build()
            .unwrap()
    }

    fn hop(ts_ns: u64, tx: u64, q: u64) -> IntHop {
        IntHop {
            qlen: Bytes(q),
            tx_bytes: tx,
            ts: Instant::ZERO + Duration::nanos(ts_ns),
            link_rate: B,
            port: None,
        }
    }

    fn ack() -> Ack {
        Ack {
            acked: Bytes(1000),
            ecn_echo: false,
            rtt: None,
        }
    }

    /// With packet spraying the records at one hop come from different links: their
    /// byte counters cannot be compared, and comparing them made HPCC see a huge
    /// utilisation (a `wrapping_sub` of unrelated counters) and close its window. Hops
    /// whose port changed are skipped; the hop that stays the same (the receiver's last
    /// link) still drives the window.
    #[test]
    fn records_of_another_port_are_not_compared() {
        let on = |port: u32, ts: u64, tx: u64| IntHop {
            port: Some(port),
            ..hop(ts, tx, 0)
        };
        let mut h = hpcc();
        h.on_send(Instant::ZERO, Bytes(1_000_000));
        // Hop 0 alternates between two uplinks with unrelated counters; hop 1 (the
        // receiver's link) runs at 50 % of line rate, an idle queue.
        h.on_ack_int(Instant::ZERO, ack(), &[on(1, 0, 9_000_000), on(7, 0, 0)]);
        let mut tx = 0;
        for k in 1..=50u64 {
            tx += 6_250; // 50 % of 100 Gb/s over 1 µs
            let (up, count) = if k % 2 == 0 {
                (1, 9_000_000 + k)
            } else {
                (2, k)
            };
            h.on_ack_int(
                Instant::ZERO,
                ack(),
                &[on(up, k * 1000, count), on(7, k * 1000, tx)],
            );
        }
        let u = h.metrics().extra[0].1;
        assert!(
            (0.3..0.7).contains(&u),
            "utilisation {u}, not the receiver link's ~0.5"
        );
        assert!(
            h.window_f64() >= 100_000.0,
            "window {} closed",
            h.window_f64()
        );
    }

    #[test]
    fn defaults() {
        let c = HpccConfig::new(B, Duration::micros(10), Bytes(1000));
        assert_eq!(c.w_init, Bytes(125_000));
        assert_eq!(c.w_ai, Bytes(50)); // 40 Mb/s × 10 µs
        assert_eq!(c.eta, 0.95);
    }

    #[test]
    fn full_link_with_queue_cuts_to_eta_over_u() {
        let mut h = hpcc();
        h.on_send(Instant::ZERO, Bytes(1_000_000));
        let t = Instant::ZERO;
        // Link busy at exactly line rate for a whole T (10 µs = 125,000 B) with a
        // standing queue of 62,500 B (0.5·B·T): u = 1.5, τ = T so U = u.
        h.on_ack_int(t, ack(), &[hop(0, 0, 62_500)]);
        h.on_ack_int(
            t,
            Ack {
                acked: Bytes(1_000_000),
                ..ack()
            },
            &[hop(10_000, 125_000, 62_500)],
        );
        assert!((h.utilisation() - 1.5).abs() < 1e-9);
        let want = 125_000.0 / (1.5 / 0.95) + 50.0;
        assert!((h.window_f64() - want).abs() < 1e-6, "{}", h.window_f64());
        assert_eq!(h.reference_window(), h.window_f64());
        // Rate = W/T.
        let r = h.rate().as_bps_f64();
        assert!((r - want * 8.0 / 10e-6).abs() < 1.0);
    }

    #[test]
    fn underused_link_adds_w_ai_for_max_stage_rtts_then_multiplies() {
        let mut h = hpcc();
        // Start from a small reference window so growth is visible.
        h.wc = 10_000.0;
        h.w = 10_000.0;
        let mut sent = 0u64;
        let mut tx = 0u64;
        h.on_send(Instant::ZERO, Bytes(1000));
        sent += 1000;
        h.on_ack_int(Instant::ZERO, ack(), &[hop(0, 0, 0)]);
        let mut acked = 1000u64;
        for k in 1..=7u64 {
            // One RTT per step: the link ran at half rate, no queue → U = 0.5.
            h.on_send(Instant::ZERO, Bytes(1000));
            sent += 1000;
            tx += 62_500;
            acked += 1000;
            let _ = (sent, acked);
            let before = h.reference_window();
            h.on_ack_int(Instant::ZERO, ack(), &[hop(10_000 * k, tx, 0)]);
            assert!((h.utilisation() - 0.5).abs() < 1e-9);
            if k <= 5 {
                assert!(
                    (h.reference_window() - (before + 50.0)).abs() < 1e-9,
                    "step {k}"
                );
            } else if k == 6 {
                // max_stage reached: W = Wc/(U/η) + W_AI, a multiplicative increase.
                let want = before / (0.5 / 0.95) + 50.0;
                assert!((h.reference_window() - want).abs() < 1e-6, "step {k}");
            }
        }
    }

    #[test]
    fn acks_within_an_rtt_react_without_moving_the_reference() {
        let mut h = hpcc();
        h.on_send(Instant::ZERO, Bytes(100_000));
        h.on_ack_int(Instant::ZERO, ack(), &[hop(0, 0, 0)]);
        // Not yet past the bytes sent at the first feedback: fast reaction only.
        h.on_ack_int(Instant::ZERO, ack(), &[hop(10_000, 125_000, 125_000)]);
        assert!(h.window_f64() < 125_000.0);
        assert_eq!(h.reference_window(), 125_000.0);
    }

    proptest! {
        #[test]
        fn window_and_rate_stay_in_bounds(steps in proptest::collection::vec((1u64..20_000, 0u64..300_000, 0u64..500_000), 1..100)) {
            let mut h = hpcc();
            let (mut ts, mut tx) = (0u64, 0u64);
            h.on_ack_int(Instant::ZERO, ack(), &[hop(0, 0, 0)]);
            for (dt, dtx, q) in steps {
                ts += dt; tx += dtx;
                h.on_send(Instant::ZERO, Bytes(1000));
                h.on_ack_int(Instant::ZERO, ack(), &[hop(ts, tx, q), hop(ts, tx / 2, 0)]);
                prop_assert!(h.window_f64().is_finite() && h.utilisation().is_finite());
                let w = h.window().unwrap();
                prop_assert!(w >= Bytes(1000) && w <= Bytes(125_000));
                prop_assert!(h.rate() <= B);
            }
        }
    }
}
