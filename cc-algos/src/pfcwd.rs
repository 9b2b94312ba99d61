//! PFC watchdog as SONiC defines it (`pfcwd`, SONiC PFC Watchdog design; Arista and
//! Mellanox implement the same rule): a queue is in a **PFC storm** when it stays paused
//! by its peer, with packets queued, and transmits nothing for the whole detection time.
//! The watchdog then applies an action to that queue — `drop` (discard its packets and
//! the peer's PAUSE frames), `forward` (ignore the peer's PAUSE frames and send), or
//! `alert` (only report) — and restores the queue once no PAUSE frame has arrived for the
//! restoration time.
//!
//! One [`QueueWatch`] per (port, priority), fed a [`QueueSample`] at every poll. It is
//! pure: the caller passes `now` and the counters it read.
//!
//! Rules, from SONiC's detection script and configuration limits:
//! - detection time 100 ms – 5 s, restoration time 100 ms – 60 s ([`WatchdogConfig::new`]);
//! - *stuck* at a poll = paused (PAUSE frames arrived since the previous poll, or the
//!   queue reports itself paused) **and** packets queued **and** the transmit counter did
//!   not move since the previous poll;
//! - a storm needs at least two agreeing polls (two consecutive stuck polls) spanning
//!   the detection time, so one slow poll never raises an alarm, and a draining burst —
//!   paused at times but still transmitting — never looks stuck;
//! - restoration: no PAUSE frame received for the restoration time.
//!
//! ```
//! use cc_algos::pfcwd::{Action, QueueSample, QueueWatch, Verdict, WatchdogConfig};
//! use cc_algos::{Duration, Instant};
//! let cfg = WatchdogConfig::new(Duration::millis(200), Duration::millis(400), Action::Drop).unwrap();
//! let mut q = QueueWatch::default();
//! let t = |ms| Instant::ZERO + Duration::millis(ms);
//! // A peer that keeps pausing a queue that holds packets and sends nothing.
//! let stuck = |pfc_rx| QueueSample { paused: true, queued_packets: 40, tx_packets: 1000, pfc_rx };
//! assert_eq!(q.on_sample(&cfg, t(0), stuck(10)), Verdict::None);
//! assert_eq!(q.on_sample(&cfg, t(100), stuck(20)), Verdict::None);
//! assert_eq!(q.on_sample(&cfg, t(200), stuck(30)), Verdict::StormDetected);
//! assert!(q.drop_packets(&cfg) && q.ignore_pause(&cfg));
//! // The peer goes quiet: restored after 400 ms without PAUSE frames.
//! let quiet = QueueSample { paused: false, queued_packets: 0, tx_packets: 1040, pfc_rx: 30 };
//! assert_eq!(q.on_sample(&cfg, t(300), quiet), Verdict::None);
//! assert_eq!(q.on_sample(&cfg, t(700), quiet), Verdict::StormRestored { lasted: Duration::millis(500) });
//! ```

use crate::error::{Result, invalid};
use crate::units::{Duration, Instant};
use serde::{Deserialize, Serialize};

/// Shortest detection time SONiC accepts.
pub const MIN_DETECTION: Duration = Duration::millis(100);
/// Longest detection time SONiC accepts.
pub const MAX_DETECTION: Duration = Duration::millis(5000);
/// Shortest restoration time SONiC accepts.
pub const MIN_RESTORATION: Duration = Duration::millis(100);
/// Longest restoration time SONiC accepts.
pub const MAX_RESTORATION: Duration = Duration::millis(60_000);

/// What to do with a stormed queue.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Action {
    /// Discard the queue's packets and ignore PAUSE frames (SONiC's default).
    Drop,
    /// Ignore PAUSE frames and keep transmitting.
    Forward,
    /// Report only.
    Alert,
}

impl std::str::FromStr for Action {
    type Err = String;
    fn from_str(s: &str) -> std::result::Result<Self, String> {
        match s {
            "drop" => Ok(Action::Drop),
            "forward" => Ok(Action::Forward),
            "alert" => Ok(Action::Alert),
            _ => Err(format!(
                "PFC watchdog action {s:?}: expected drop, forward or alert"
            )),
        }
    }
}

/// Watchdog settings for a set of queues.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct WatchdogConfig {
    /// How long a queue must stay stuck before a storm is declared.
    pub detection: Duration,
    /// How long without PAUSE frames before a stormed queue is restored.
    pub restoration: Duration,
    /// What to do with a stormed queue.
    pub action: Action,
}

impl Default for WatchdogConfig {
    /// SONiC's defaults: detection 200 ms, restoration 200 ms, action drop.
    fn default() -> Self {
        WatchdogConfig {
            detection: Duration::millis(200),
            restoration: Duration::millis(200),
            action: Action::Drop,
        }
    }
}

impl WatchdogConfig {
    /// Checked constructor (SONiC's ranges, see the module docs).
    pub fn new(detection: Duration, restoration: Duration, action: Action) -> Result<Self> {
        if !(MIN_DETECTION..=MAX_DETECTION).contains(&detection) {
            return Err(invalid(
                "pfcwd",
                "detection",
                format!(
                    "{} ms: expected 100 to 5000 ms",
                    detection.as_picos() / 1_000_000_000
                ),
            ));
        }
        if !(MIN_RESTORATION..=MAX_RESTORATION).contains(&restoration) {
            return Err(invalid(
                "pfcwd",
                "restoration",
                format!(
                    "{} ms: expected 100 to 60000 ms",
                    restoration.as_picos() / 1_000_000_000
                ),
            ));
        }
        Ok(WatchdogConfig {
            detection,
            restoration,
            action,
        })
    }
}

/// What the caller read for one queue at one poll. Counters are cumulative.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct QueueSample {
    /// The queue is paused by its peer (PAUSE frames arrived since the last poll, or the
    /// hardware reports the priority paused).
    pub paused: bool,
    /// Packets waiting in the queue now.
    pub queued_packets: u64,
    /// Packets the queue (or its port, when per-queue counters are not available) has
    /// transmitted so far.
    pub tx_packets: u64,
    /// PAUSE frames received for this priority so far.
    pub pfc_rx: u64,
}

/// The outcome of one poll.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Verdict {
    /// Nothing changed.
    None,
    /// The queue is now stormed: apply the action.
    StormDetected,
    /// The storm ended: stop applying the action.
    StormRestored {
        /// From detection to restoration.
        lasted: Duration,
    },
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
enum State {
    /// Not stormed; `stuck_since` is the poll at which the current stuck run began.
    #[default]
    Operational,
    Suspect {
        stuck_since: Instant,
        agreeing: u32,
    },
    Stormed {
        since: Instant,
        quiet_since: Option<Instant>,
    },
}

/// Counters SONiC keeps per queue.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct WatchCounters {
    /// Storms detected.
    pub storms_detected: u64,
    /// Storms restored.
    pub storms_restored: u64,
}

/// The watchdog of one queue.
#[derive(Clone, Debug, Default)]
pub struct QueueWatch {
    state: State,
    last: Option<(Instant, QueueSample)>,
    counters: WatchCounters,
}

impl QueueWatch {
    /// Takes one poll into account.
    pub fn on_sample(&mut self, cfg: &WatchdogConfig, now: Instant, s: QueueSample) -> Verdict {
        let prev = self.last.replace((now, s));
        let Some((then, p)) = prev else {
            return Verdict::None;
        };
        let paused = s.paused || s.pfc_rx > p.pfc_rx;
        let pause_arrived = s.pfc_rx > p.pfc_rx;
        match self.state {
            State::Stormed { since, quiet_since } => {
                if pause_arrived || s.paused {
                    self.state = State::Stormed {
                        since,
                        quiet_since: None,
                    };
                    return Verdict::None;
                }
                let quiet = quiet_since.unwrap_or(then);
                if now.saturating_since(quiet) >= cfg.restoration {
                    self.state = State::Operational;
                    self.counters.storms_restored += 1;
                    return Verdict::StormRestored {
                        lasted: now.saturating_since(since),
                    };
                }
                self.state = State::Stormed {
                    since,
                    quiet_since: Some(quiet),
                };
                Verdict::None
            }
            _ => {
                // A counter that went backwards is a reset, never a stuck queue.
                let stuck = paused && s.queued_packets > 0 && s.tx_packets == p.tx_packets;
                if !stuck {
                    self.state = State::Operational;
                    return Verdict::None;
                }
                let (stuck_since, agreeing) = match self.state {
                    State::Suspect {
                        stuck_since,
                        agreeing,
                    } => (stuck_since, agreeing + 1),
                    _ => (then, 1),
                };
                if agreeing >= 2 && now.saturating_since(stuck_since) >= cfg.detection {
                    self.state = State::Stormed {
                        since: now,
                        quiet_since: None,
                    };
                    self.counters.storms_detected += 1;
                    return Verdict::StormDetected;
                }
                self.state = State::Suspect {
                    stuck_since,
                    agreeing,
                };
                Verdict::None
            }
        }
    }

    /// True while the queue is stormed.
    pub fn stormed(&self) -> bool {
        matches!(self.state, State::Stormed { .. })
    }

    /// While stormed under `drop`: discard the queue's packets.
    pub fn drop_packets(&self, cfg: &WatchdogConfig) -> bool {
        self.stormed() && cfg.action == Action::Drop
    }

    /// While stormed under `drop` or `forward`: ignore the peer's PAUSE frames.
    pub fn ignore_pause(&self, cfg: &WatchdogConfig) -> bool {
        self.stormed() && cfg.action != Action::Alert
    }

    /// Storms detected and restored so far.
    pub fn counters(&self) -> WatchCounters {
        self.counters
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn t(ms: u64) -> Instant {
        Instant::ZERO + Duration::millis(ms)
    }

    fn cfg(detect_ms: u64) -> WatchdogConfig {
        WatchdogConfig::new(
            Duration::millis(detect_ms),
            Duration::millis(200),
            Action::Alert,
        )
        .unwrap()
    }

    fn sample(paused: bool, queued: u64, tx: u64, pfc_rx: u64) -> QueueSample {
        QueueSample {
            paused,
            queued_packets: queued,
            tx_packets: tx,
            pfc_rx,
        }
    }

    #[test]
    fn limits_are_sonics() {
        let e = WatchdogConfig::new(Duration::millis(50), Duration::millis(200), Action::Drop);
        assert!(e.unwrap_err().to_string().contains("100 to 5000 ms"));
        let e = WatchdogConfig::new(Duration::millis(200), Duration::secs(61), Action::Drop);
        assert!(e.unwrap_err().to_string().contains("100 to 60000 ms"));
        assert_eq!("forward".parse::<Action>(), Ok(Action::Forward));
        assert!("shrug".parse::<Action>().is_err());
    }

    /// A host that keeps pausing its leaf: detected after the detection time, restored
    /// once it stops; the counters follow.
    #[test]
    fn simulated_storm_is_detected_and_restored() {
        let c = cfg(300);
        let mut q = QueueWatch::default();
        let mut pfc = 0;
        let mut verdicts = Vec::new();
        for k in 0..=10u64 {
            pfc += 50; // the storming host refreshes its PAUSE
            verdicts.push(q.on_sample(&c, t(100 * k), sample(false, 64, 5000, pfc)));
        }
        let first = verdicts
            .iter()
            .position(|v| *v == Verdict::StormDetected)
            .unwrap();
        // Stuck from the first poll (t = 0) on: 300 ms later, at the fourth poll.
        assert_eq!(first, 3);
        assert_eq!(
            verdicts
                .iter()
                .filter(|v| **v == Verdict::StormDetected)
                .count(),
            1
        );
        assert!(q.stormed());
        // The host stops pausing; the queue drains.
        let mut restored = None;
        for k in 11..=20u64 {
            if let Verdict::StormRestored { lasted } =
                q.on_sample(&c, t(100 * k), sample(false, 0, 5000 + k, pfc))
            {
                restored = Some((k, lasted));
                break;
            }
        }
        // Quiet since the poll at 1000 ms: restored at 1200 ms, 900 ms after detection.
        assert_eq!(restored, Some((12, Duration::millis(900))));
        assert_eq!(
            q.counters(),
            WatchCounters {
                storms_detected: 1,
                storms_restored: 1
            }
        );
    }

    #[test]
    fn a_draining_burst_is_not_a_storm() {
        let c = cfg(100);
        let mut q = QueueWatch::default();
        // Paused often, queue deep, but packets leave at every poll.
        for k in 0..50u64 {
            let v = q.on_sample(&c, t(50 * k), sample(true, 500 - k, 1000 + 10 * k, 3 * k));
            assert_eq!(v, Verdict::None, "poll {k}");
        }
        // Paused with nothing queued is not a storm either.
        for k in 50..60u64 {
            assert_eq!(
                q.on_sample(&c, t(50 * k), sample(true, 0, 1490, 3 * k)),
                Verdict::None
            );
        }
    }

    #[test]
    fn one_stuck_poll_is_not_enough() {
        let c = cfg(100);
        let mut q = QueueWatch::default();
        assert_eq!(q.on_sample(&c, t(0), sample(true, 10, 7, 1)), Verdict::None);
        // A single slow poll 500 ms later that looks stuck: one sample, no alarm.
        assert_eq!(
            q.on_sample(&c, t(500), sample(true, 10, 7, 2)),
            Verdict::None
        );
        // It moves again: the suspicion is dropped.
        assert_eq!(
            q.on_sample(&c, t(600), sample(true, 10, 8, 3)),
            Verdict::None
        );
        assert_eq!(
            q.on_sample(&c, t(700), sample(true, 10, 8, 4)),
            Verdict::None
        );
        // Two agreeing polls spanning the detection time: storm.
        assert_eq!(
            q.on_sample(&c, t(800), sample(true, 10, 8, 5)),
            Verdict::StormDetected
        );
    }

    #[test]
    fn actions_decide_what_the_data_plane_does() {
        let mut q = QueueWatch::default();
        let mut c = cfg(100);
        for k in 0..4u64 {
            q.on_sample(&c, t(100 * k), sample(true, 10, 7, k));
        }
        assert!(q.stormed());
        assert!(
            !q.drop_packets(&c) && !q.ignore_pause(&c),
            "alert only reports"
        );
        c.action = Action::Forward;
        assert!(!q.drop_packets(&c) && q.ignore_pause(&c));
        c.action = Action::Drop;
        assert!(q.drop_packets(&c) && q.ignore_pause(&c));
        // PAUSE frames still arriving keep it stormed however long.
        for k in 4..100u64 {
            assert_eq!(
                q.on_sample(&c, t(100 * k), sample(false, 0, 7, k)),
                Verdict::None
            );
        }
        assert!(q.stormed());
    }
}
