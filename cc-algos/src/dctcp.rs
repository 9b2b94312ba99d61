//! DCTCP (Alizadeh et al., "Data Center TCP", SIGCOMM 2010; RFC 8257) as a byte-counted
//! window controller: the sender keeps α, an EWMA (gain g = 1/16) of the fraction of
//! bytes acknowledged with ECN-echo over each window of data, and on ECN-echo cuts
//! `cwnd ← cwnd·(1 − α/2)` at most once per window (RFC 8257 §3.3–3.4). Without marks
//! it grows like Reno: slow start below `ssthresh`, then one MSS per window.

use crate::error::{Result, invalid};
use crate::traits::{Ack, CcMetrics, SenderCc};
use crate::units::{Bytes, Duration, Instant, Rate};
use serde::{Deserialize, Serialize};

/// DCTCP parameters.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct DctcpConfig {
    /// Pacing rate reported by [`SenderCc::rate`] (DCTCP itself does not pace).
    pub line_rate: Rate,
    /// Maximum segment (payload) size: the additive-increase step per window.
    pub mss: Bytes,
    /// EWMA gain g; 1/16 (Alizadeh et al. 2010 §3.4; RFC 8257 §4.2).
    pub g: f64,
    /// α before any feedback; 1 (RFC 8257 §3.3 recommends starting conservatively at 1).
    pub initial_alpha: f64,
    /// Initial window; one BDP of the unloaded path (fabric practice: HPCC ns-3 starts
    /// window-based senders at the maximum BDP), but never below `min_window` (on slow
    /// or short paths, e.g. 1 Gb/s veth links, the BDP is smaller than two segments).
    pub initial_window: Bytes,
    /// The window never falls below this; 2·MSS (RFC 5681 §3.1 loss window floor).
    pub min_window: Bytes,
    /// Optional cap on the window (a receive window); `None` = unbounded.
    pub max_window: Option<Bytes>,
}

impl DctcpConfig {
    /// Defaults for a path of `line_rate`, `base_rtt` and payload size `mss`.
    pub fn new(line_rate: Rate, base_rtt: Duration, mss: Bytes) -> Self {
        DctcpConfig {
            line_rate,
            mss,
            g: 1.0 / 16.0,
            initial_alpha: 1.0,
            initial_window: line_rate.bdp(base_rtt).max(mss * 2),
            min_window: mss * 2,
            max_window: None,
        }
    }

    pub fn validate(&self) -> Result<()> {
        const A: &str = "dctcp";
        if self.mss == Bytes::ZERO {
            return Err(invalid(A, "mss", "must be positive"));
        }
        if !(self.g > 0.0 && self.g <= 1.0) {
            return Err(invalid(
                A,
                "g",
                format!("must be in (0, 1], got {}", self.g),
            ));
        }
        if !(0.0..=1.0).contains(&self.initial_alpha) {
            return Err(invalid(A, "initial_alpha", "must be in [0, 1]"));
        }
        if self.min_window == Bytes::ZERO || self.initial_window < self.min_window {
            return Err(invalid(
                A,
                "initial_window",
                format!(
                    "must be at least min_window ({}) > 0, got {}",
                    self.min_window, self.initial_window
                ),
            ));
        }
        if let Some(m) = self.max_window
            && m < self.initial_window
        {
            return Err(invalid(A, "max_window", "must be at least initial_window"));
        }
        Ok(())
    }

    pub fn build(&self) -> Result<Dctcp> {
        self.validate()?;
        Ok(Dctcp {
            cfg: *self,
            cwnd: self.initial_window.0 as f64,
            ssthresh: f64::INFINITY,
            alpha: self.initial_alpha,
            sent: 0,
            acked: 0,
            window_end: 0,
            win_acked: 0,
            win_marked: 0,
            cwr_end: None,
            cuts: 0,
        })
    }
}

/// DCTCP sender state.
#[derive(Clone, Debug)]
pub struct Dctcp {
    cfg: DctcpConfig,
    cwnd: f64,
    ssthresh: f64,
    alpha: f64,
    sent: u64,
    acked: u64,
    /// The α observation window ends when `acked` reaches this (RFC 8257 `Window_End`).
    window_end: u64,
    win_acked: u64,
    win_marked: u64,
    /// In CWR until `acked` passes this (one reduction per window).
    cwr_end: Option<u64>,
    cuts: u64,
}

impl Dctcp {
    pub fn alpha(&self) -> f64 {
        self.alpha
    }
    pub fn cwnd(&self) -> Bytes {
        Bytes(self.cwnd.round() as u64)
    }
    fn clamp(&mut self) {
        let min = self.cfg.min_window.0 as f64;
        let max = self.cfg.max_window.map_or(f64::INFINITY, |m| m.0 as f64);
        self.cwnd = self.cwnd.clamp(min, max);
    }
    fn in_cwr(&self) -> bool {
        self.cwr_end.is_some_and(|e| self.acked <= e)
    }
    fn reduce(&mut self, factor: f64) {
        self.cwnd *= factor;
        self.clamp();
        self.ssthresh = self.cwnd;
        self.cwr_end = Some(self.sent);
        self.cuts += 1;
    }
}

impl SenderCc for Dctcp {
    fn on_send(&mut self, _now: Instant, bytes: Bytes) {
        self.sent += bytes.0;
        if self.window_end == 0 {
            // The first observation window covers the first flight.
            self.window_end = self.sent;
        }
    }

    fn on_ack(&mut self, _now: Instant, ack: Ack) {
        let a = ack.acked.0;
        self.acked += a;
        self.win_acked += a;
        if ack.ecn_echo {
            self.win_marked += a;
        }
        // RFC 8257 §3.3: at the end of each observation window update α.
        if self.acked >= self.window_end && self.win_acked > 0 {
            let f = self.win_marked as f64 / self.win_acked as f64;
            self.alpha = (1.0 - self.cfg.g) * self.alpha + self.cfg.g * f;
            self.win_acked = 0;
            self.win_marked = 0;
            self.window_end = self.sent.max(self.acked + 1);
        }
        if ack.ecn_echo {
            if !self.in_cwr() {
                self.reduce(1.0 - self.alpha / 2.0);
            }
        } else if !self.in_cwr() {
            if self.cwnd < self.ssthresh {
                self.cwnd += a as f64; // slow start
            } else {
                self.cwnd += self.cfg.mss.0 as f64 * a as f64 / self.cwnd;
            }
            self.clamp();
        }
    }

    /// DCTCP does not use CNPs.
    fn on_cnp(&mut self, _now: Instant) {}

    /// Loss: halve, at most once per window (RFC 5681 §3.2 with RFC 8257 §3.5).
    fn on_nack(&mut self, _now: Instant, _bytes: Bytes) {
        if !self.in_cwr() {
            self.reduce(0.5);
        }
    }

    fn on_timeout(&mut self, _now: Instant) {}

    fn next_timeout(&self) -> Option<Instant> {
        None
    }

    fn rate(&self) -> Rate {
        self.cfg.line_rate
    }

    fn window(&self) -> Option<Bytes> {
        Some(self.cwnd())
    }

    fn metrics(&self) -> CcMetrics {
        CcMetrics {
            rate: self.rate(),
            window: self.window(),
            extra: vec![
                ("alpha", self.alpha),
                ("ssthresh", self.ssthresh.min(u64::MAX as f64)),
                ("cuts", self.cuts as f64),
            ],
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slow_short_paths_start_at_the_min_window() {
        // 1 Gb/s × 8 µs = 1000 B, less than two 4150 B segments.
        let cfg = DctcpConfig::new(Rate::gbps(1), Duration::micros(8), Bytes(4150));
        assert_eq!(cfg.initial_window, Bytes(8300));
        assert_eq!(cfg.build().unwrap().cwnd(), Bytes(8300));
    }

    fn dctcp() -> Dctcp {
        DctcpConfig::new(Rate::gbps(100), Duration::micros(10), Bytes(1000))
            .build()
            .unwrap()
    }

    /// An ack-clocked flow: one initial flight of the initial window, then every
    /// 1000 B ACK releases 1000 B more, so one observation window = one round.
    /// Packet number `c` is marked iff `c % every == 0` (`every == 0`: never).
    /// Returns α after each round.
    fn rounds(d: &mut Dctcp, n: usize, every: u64) -> Vec<f64> {
        let t = Instant::ZERO;
        let flight = d.cwnd().0;
        d.on_send(t, Bytes(flight));
        let mut c = 0u64;
        let mut out = Vec::new();
        for _ in 0..n {
            for _ in 0..flight / 1000 {
                let ecn = every != 0 && c.is_multiple_of(every);
                c += 1;
                d.on_ack(
                    t,
                    Ack {
                        acked: Bytes(1000),
                        ecn_echo: ecn,
                        rtt: None,
                    },
                );
                d.on_send(t, Bytes(1000));
            }
            out.push(d.alpha());
        }
        out
    }

    #[test]
    fn alpha_decays_by_one_minus_g_per_unmarked_window() {
        let mut d = dctcp();
        for (i, a) in rounds(&mut d, 20, 0).into_iter().enumerate() {
            let want = (15.0f64 / 16.0).powi(i as i32 + 1);
            assert!((a - want).abs() < 1e-12, "window {}: {a} vs {want}", i + 1);
        }
    }

    #[test]
    fn alpha_tracks_marked_fraction() {
        let mut d = dctcp();
        let a = *rounds(&mut d, 200, 4).last().unwrap(); // 25 % of bytes marked
        assert!((a - 0.25).abs() < 1e-3, "alpha {a}");
        assert!(d.cwnd() >= Bytes(2000));
    }

    #[test]
    fn loss_halves_once_per_window() {
        let mut d = dctcp();
        d.on_send(Instant::ZERO, Bytes(125_000));
        d.on_nack(Instant::ZERO, Bytes(1000));
        d.on_nack(Instant::ZERO, Bytes(1000));
        assert_eq!(d.cwnd(), Bytes(62_500));
    }
}
