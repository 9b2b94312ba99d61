//! Probe loss during convergence: a steady UDP stream between every ordered pair of
//! hosts on different leaves (plane 0, IPv4), one datagram per pair every
//! [`LossProbe::interval`], sent and received by a thread of its own while links fail
//! and come back. Each datagram carries its pair and round, so what was lost in a time
//! window — between a failure and the last FIB repaired — is counted afterwards:
//! [`LossProbe::loss`]. A send that fails (no route) counts as lost.

use std::net::{IpAddr, SocketAddr, UdpSocket};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use topo::NodeId;

use crate::netns::in_netns;
use crate::routed::{Family, RoutedTestbed};
use crate::{Error, Result};

/// The probes' UDP port on every host.
pub const LOSS_PORT: u16 = 7_002;
const MAGIC: u32 = 0xfab0_0105;
/// A datagram is `MAGIC`, pair index, round (big endian).
const LEN: usize = 12;

/// What a window lost.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct Loss {
    /// Probes sent in the window that never arrived.
    pub lost: u64,
    /// Pairs that lost at least one.
    pub pairs_hit: usize,
    /// The longest run of consecutive lost rounds of one pair, from the first one's send
    /// time to the last one's plus one interval, s.
    pub worst_outage_s: f64,
}

/// What the thread records: each round's send time, and per round and pair whether it
/// arrived.
#[derive(Debug, Default)]
struct Log {
    sent_at: Vec<Instant>,
    /// `arrived[round * pairs + pair]`.
    arrived: Vec<bool>,
}

/// One sending host: its socket and the pairs it sends on (index, destination).
struct Sender {
    tx: UdpSocket,
    to: Vec<(u32, SocketAddr)>,
}

/// The running probe stream; stopped (and its thread joined) by [`LossProbe::stop`] or on
/// drop.
pub struct LossProbe {
    log: Arc<Mutex<Log>>,
    pairs: usize,
    interval: Duration,
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
}

impl std::fmt::Debug for LossProbe {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LossProbe")
            .field("pairs", &self.pairs)
            .field("interval", &self.interval)
            .finish()
    }
}

/// Ordered host pairs on different plane-0 leaves.
pub fn pairs(f: &topo::Fabric) -> Vec<(NodeId, NodeId)> {
    let leaf = |h: NodeId| f.attachment(h, 0).map(|a| a.leaf);
    let mut v = Vec::new();
    for s in f.hosts() {
        for d in f.hosts() {
            if s != d && leaf(s).is_some() && leaf(d).is_some() && leaf(s) != leaf(d) {
                v.push((s, d));
            }
        }
    }
    v
}

impl LossProbe {
    /// Opens a socket pair per host in its namespace and starts sending every `interval`.
    pub fn start(rt: &RoutedTestbed, interval: Duration) -> Result<LossProbe> {
        let f = rt.fabric();
        let pairs = pairs(f);
        let addr = |h: NodeId| -> Result<IpAddr> {
            rt.host_addr_in(h, Family::V4, 0).ok_or_else(|| {
                Error::Invalid(format!("host {} has no IPv4 address", f.node_name(h)))
            })
        };
        let bind = |h: NodeId, port: u16| -> Result<UdpSocket> {
            let a = SocketAddr::new(addr(h)?, port);
            let s = in_netns(rt.netns(h), || UdpSocket::bind(a))?
                .map_err(|e| Error::Invalid(format!("bind {a} for the loss probe: {e}")))?;
            s.set_nonblocking(true)
                .map_err(|e| Error::Invalid(format!("non-blocking {a}: {e}")))?;
            Ok(s)
        };
        let mut senders: Vec<Sender> = Vec::new();
        let mut receivers = Vec::new();
        for h in f.hosts().filter(|&h| f.attachment(h, 0).is_some()) {
            receivers.push(bind(h, LOSS_PORT)?);
            let mut to = Vec::new();
            for (i, &(s, d)) in pairs.iter().enumerate() {
                if s == h {
                    to.push((i as u32, SocketAddr::new(addr(d)?, LOSS_PORT)));
                }
            }
            senders.push(Sender {
                tx: bind(h, 0)?,
                to,
            });
        }
        let log = Arc::new(Mutex::new(Log::default()));
        let stop = Arc::new(AtomicBool::new(false));
        let n = pairs.len();
        let thread = {
            let (log, stop) = (log.clone(), stop.clone());
            std::thread::Builder::new()
                .name("loss-probe".into())
                .spawn(move || stream(&senders, &receivers, n, interval, &log, &stop))
                .map_err(|e| Error::Invalid(format!("starting the loss probe thread: {e}")))?
        };
        Ok(LossProbe {
            log,
            pairs: n,
            interval,
            stop,
            thread: Some(thread),
        })
    }

    /// The pairs probed.
    pub fn pairs(&self) -> usize {
        self.pairs
    }

    /// The time between two rounds.
    pub fn interval(&self) -> Duration {
        self.interval
    }

    /// What the rounds sent in `[from, to]` lost. Ask once their datagrams had time to
    /// arrive (a few hundred ms after `to`).
    pub fn loss(&self, from: Instant, to: Instant) -> Loss {
        let log = self.log.lock().unwrap_or_else(|e| e.into_inner());
        window_loss(&log, self.pairs, self.interval, from, to)
    }

    /// Stops the stream.
    pub fn stop(mut self) {
        self.halt();
    }

    fn halt(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

impl Drop for LossProbe {
    fn drop(&mut self) {
        self.halt();
    }
}

/// The loss of the rounds sent in `[from, to]`. An outage is timed by the rounds' send
/// times (from a pair's first lost round to its last, plus one interval), not counted in
/// rounds: a thread that was late sends the rounds it owes back to back.
fn window_loss(log: &Log, pairs: usize, interval: Duration, from: Instant, to: Instant) -> Loss {
    let rounds: Vec<usize> = (0..log.sent_at.len())
        .filter(|&r| log.sent_at[r] >= from && log.sent_at[r] <= to)
        .collect();
    let mut out = Loss::default();
    let mut worst = Duration::ZERO;
    for p in 0..pairs {
        let (mut first_lost, mut hit) = (None::<Instant>, false);
        for &r in &rounds {
            if log.arrived[r * pairs + p] {
                first_lost = None;
            } else {
                out.lost += 1;
                hit = true;
                let first = *first_lost.get_or_insert(log.sent_at[r]);
                worst = worst.max(log.sent_at[r] - first + interval);
            }
        }
        out.pairs_hit += usize::from(hit);
    }
    out.worst_outage_s = worst.as_secs_f64();
    out
}

/// The thread: a round to every pair each `interval`, draining the receivers between.
fn stream(
    senders: &[Sender],
    receivers: &[UdpSocket],
    pairs: usize,
    interval: Duration,
    log: &Mutex<Log>,
    stop: &AtomicBool,
) {
    let mut next = Instant::now();
    let mut buf = [0u8; 64];
    while !stop.load(Ordering::Relaxed) {
        if Instant::now() >= next {
            let round = {
                let mut l = log.lock().unwrap_or_else(|e| e.into_inner());
                l.sent_at.push(Instant::now());
                let len = l.arrived.len();
                l.arrived.resize(len + pairs, false);
                (l.sent_at.len() - 1) as u32
            };
            for s in senders {
                for &(i, to) in &s.to {
                    let mut b = [0u8; LEN];
                    b[0..4].copy_from_slice(&MAGIC.to_be_bytes());
                    b[4..8].copy_from_slice(&i.to_be_bytes());
                    b[8..12].copy_from_slice(&round.to_be_bytes());
                    let _ = s.tx.send_to(&b, to);
                }
            }
            next += interval;
        }
        let mut l = log.lock().unwrap_or_else(|e| e.into_inner());
        for r in receivers {
            while let Ok(n) = r.recv(&mut buf) {
                let w = |k: usize| u32::from_be_bytes(buf[k..k + 4].try_into().expect("4 bytes"));
                if n != LEN || w(0) != MAGIC {
                    continue;
                }
                let (pair, round) = (w(4) as usize, w(8) as usize);
                if pair < pairs && round < l.sent_at.len() {
                    l.arrived[round * pairs + pair] = true;
                }
            }
        }
        drop(l);
        std::thread::sleep(Duration::from_millis(1));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_window_counts_its_rounds_losses_and_the_longest_outage() {
        let t0 = Instant::now();
        let ms = |k: u64| t0 + Duration::from_millis(k);
        // 2 pairs, 6 rounds 10 ms apart; pair 0 loses rounds 1–3, pair 1 round 4.
        let mut log = Log::default();
        for r in 0..6u64 {
            log.sent_at.push(ms(10 * r));
            log.arrived.push(!(1..=3).contains(&r));
            log.arrived.push(r != 4);
        }
        let iv = Duration::from_millis(10);
        let all = window_loss(&log, 2, iv, ms(0), ms(50));
        assert_eq!(all.lost, 4);
        assert_eq!(all.pairs_hit, 2);
        assert!((all.worst_outage_s - 0.030).abs() < 1e-9);
        // Rounds 2–3 only: pair 0 loses 2, pair 1 nothing.
        let part = window_loss(&log, 2, iv, ms(20), ms(30));
        assert_eq!((part.lost, part.pairs_hit), (2, 1));
        assert_eq!(window_loss(&log, 2, iv, ms(60), ms(90)), Loss::default());
    }

    #[test]
    fn an_outage_is_timed_by_send_times_not_counted_in_rounds() {
        // A late thread sent rounds 1–4 within 3 ms; one pair lost them all.
        let t0 = Instant::now();
        let mut log = Log::default();
        for (r, at) in [0u64, 20, 21, 22, 23, 40].into_iter().enumerate() {
            log.sent_at.push(t0 + Duration::from_millis(at));
            log.arrived.push(!(1..=4).contains(&r));
        }
        let l = window_loss(
            &log,
            1,
            Duration::from_millis(20),
            t0,
            t0 + Duration::from_millis(40),
        );
        assert_eq!(l.lost, 4);
        // 20 → 23 ms, plus one interval: 23 ms, not 4 × 20.
        assert!((l.worst_outage_s - 0.023).abs() < 1e-9, "{l:?}");
    }

    #[test]
    fn pairs_span_different_leaves_only() {
        let f = topo::generators::fat_tree(4, topo::Rate::gbps(100)).unwrap();
        let p = pairs(&f);
        // 16 hosts, 2 per leaf: each reaches the 14 hosts of the other leaves.
        assert_eq!(p.len(), 16 * 14);
        assert!(p.iter().all(|&(s, d)| {
            f.attachment(s, 0).unwrap().leaf != f.attachment(d, 0).unwrap().leaf
        }));
    }
}
