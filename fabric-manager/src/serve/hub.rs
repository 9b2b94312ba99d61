//! [`Hub`]: what the collector publishes and the HTTP handlers read.
//!
//! - the latest snapshot (a `watch`, so a reader only ever sees the newest);
//! - every frame as one NDJSON line, broadcast to the stream clients through a bounded
//!   `broadcast` ring (a client that falls behind by more than `stream_lag` frames is
//!   dropped: nothing is ever buffered per client) and kept in a bounded history that
//!   `?from=SEQ` resumes from;
//! - the recent events, the daemon's own counters, the shutdown flag.
//!
//! Publishing and subscribing both hold the history lock, so a new client's backlog and
//! its live frames meet without a gap or a duplicate.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use axum::body::Bytes;
use fabric_api::{Event, FabricInfo, Frame, NamedEvent, Snapshot};
use tokio::sync::{broadcast, watch};

use super::server::ConnKill;

/// A monotonically increasing counter of the daemon itself.
#[derive(Debug, Default)]
pub struct Counter(AtomicU64);

impl Counter {
    /// Adds one.
    pub fn inc(&self) {
        self.inc_by(1);
    }
    /// Adds `n`.
    pub fn inc_by(&self, n: u64) {
        self.0.fetch_add(n, Ordering::Relaxed);
    }
    /// Current value.
    pub fn get(&self) -> u64 {
        self.0.load(Ordering::Relaxed)
    }
}

/// The daemon's own counters (exported as `fabric_daemon_*` in `/metrics`).
#[derive(Debug, Default)]
pub struct Counters {
    /// TCP connections accepted.
    pub connections: Counter,
    /// Connections that ended in a protocol error (malformed request, header timeout,
    /// oversized head).
    pub bad_connections: Counter,
    /// Requests answered 4xx for a malformed or oversized body or query.
    pub bad_requests: Counter,
    /// Requests refused for a missing or wrong token.
    pub auth_failures: Counter,
    /// Requests that hit the request timeout.
    pub timeouts: Counter,
    /// Stream clients served.
    pub stream_clients: Counter,
    /// Stream clients dropped for falling behind.
    pub stream_dropped: Counter,
    /// Stream requests refused because `--max-streams` clients were connected.
    pub stream_refused: Counter,
    /// Snapshots published.
    pub snapshots: Counter,
    /// Errors the source reported (and the collector survived).
    pub source_errors: Counter,
}

/// One NDJSON line and the snapshot sequence number it belongs to.
#[derive(Clone, Debug)]
pub struct Line {
    /// Snapshot sequence number (a snapshot's own, an event's `seq`).
    pub seq: u64,
    /// Index of the frame in the stream (0, 1, 2, … over the daemon's life).
    pub index: u64,
    /// The JSON line with its `\n`.
    pub bytes: Bytes,
}

/// The newest snapshot, parsed and as JSON.
#[derive(Debug)]
pub struct Latest {
    /// The snapshot.
    pub snapshot: Snapshot,
    /// It as JSON (the `/api/v1/telemetry` body).
    pub json: Bytes,
    /// Time the source took to produce it (for the simulator: stepping and reading it), ns.
    pub sample_ns: u64,
    /// Within `sample_ns`, the time spent reading the state into the snapshot, ns.
    pub read_ns: Option<u64>,
    /// Time the collector took from there to publishing it (health checks, recording,
    /// JSON encoding, history), ns.
    pub publish_ns: u64,
}

/// A live stream client the collector watches for lag.
#[derive(Debug)]
struct Client {
    delivered: Arc<AtomicU64>,
    kill: ConnKill,
}

/// Why a resume request cannot be served.
#[derive(Debug, PartialEq, Eq)]
pub enum ResumeError {
    /// The sequence number is older than the history kept.
    Gone {
        /// Oldest snapshot sequence number still kept.
        oldest: u64,
    },
    /// The sequence number has not been reached yet.
    Future {
        /// Next snapshot sequence number to be published.
        next: u64,
    },
}

/// A subscription: the frames to send first, then the live receiver.
#[derive(Debug)]
pub struct Subscription {
    /// The fabric frame followed by the kept frames from the requested sequence number,
    /// each with its snapshot sequence number (none for the fabric frame).
    pub backlog: Vec<(Option<u64>, Bytes)>,
    /// Live frames after the backlog.
    pub live: broadcast::Receiver<Line>,
    /// Live frames handed to the client so far, as the index one past the last one
    /// (the stream updates it; `u64::MAX` once the stream ended).
    pub delivered: Arc<AtomicU64>,
}

/// An id for this run of the daemon: its process id and start time (Unix ns, hex), so
/// two runs, even on the same port and one right after the other, never share one.
pub fn instance_id() -> String {
    let ns = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos() as u64);
    format!("{}-{ns:x}", std::process::id())
}

/// Shared state between the collector and the HTTP side.
#[derive(Debug)]
pub struct Hub {
    info: FabricInfo,
    info_line: Bytes,
    history: Mutex<History>,
    frames: broadcast::Sender<Line>,
    latest: watch::Sender<Option<Arc<Latest>>>,
    events: Mutex<VecDeque<Event>>,
    events_kept: usize,
    clients: Mutex<Vec<Client>>,
    stream_lag: u64,
    shutdown: watch::Sender<bool>,
    /// The daemon's own counters.
    pub counters: Counters,
    /// Per-tenant sums (`--tenants`), fed at every publish; events name their tenants.
    tenants: Option<Arc<super::tenants::TenantLive>>,
}

#[derive(Debug)]
struct History {
    lines: VecDeque<Line>,
    cap: usize,
    next_index: u64,
    next_seq: u64,
    /// Snapshot sequence number of the newest evicted frame.
    evicted_seq: Option<u64>,
}

impl Hub {
    /// A hub for `info`, keeping `history` frames and `events_kept` events, dropping
    /// stream clients more than `stream_lag` frames behind.
    /// The map is stamped with this run's instance id ([`instance_id`]), so a stream's
    /// first frame tells a reader which run of the daemon it is talking to.
    pub fn new(info: FabricInfo, history: usize, events_kept: usize, stream_lag: usize) -> Self {
        let info = info.with_instance(Some(instance_id()));
        let info_line = Bytes::from(Frame::Fabric(info.clone()).to_json_line());
        Hub {
            info,
            info_line,
            history: Mutex::new(History {
                lines: VecDeque::with_capacity(history.min(4096)),
                cap: history,
                next_index: 0,
                next_seq: 0,
                evicted_seq: None,
            }),
            // Twice the lag: the collector drops a client before the ring overwrites it.
            frames: broadcast::channel(2 * stream_lag + 2).0,
            latest: watch::channel(None).0,
            events: Mutex::new(VecDeque::new()),
            events_kept,
            clients: Mutex::new(Vec::new()),
            stream_lag: stream_lag as u64,
            shutdown: watch::channel(false).0,
            counters: Counters::default(),
            tenants: None,
        }
    }

    /// The same hub with a per-tenant view.
    pub fn with_tenants(mut self, tenants: Option<Arc<super::tenants::TenantLive>>) -> Self {
        self.tenants = tenants;
        self
    }

    /// The per-tenant view, if the daemon has a tenant file.
    pub fn tenants(&self) -> Option<&Arc<super::tenants::TenantLive>> {
        self.tenants.as_ref()
    }

    /// `e` with its places and tenants named.
    fn named(&self, e: Event) -> NamedEvent {
        let tenants = self
            .tenants
            .as_ref()
            .map(|t| t.map.of_event(&e))
            .unwrap_or_default();
        NamedEvent::new(e, &self.info).with_tenants(tenants)
    }

    /// The fabric map.
    pub fn info(&self) -> &FabricInfo {
        &self.info
    }

    /// Publishes a snapshot and the events that belong to it (events first: an event
    /// carries the sequence number of the snapshot that includes its effects).
    /// `frame` must be a [`Frame::Snapshot`] (anything else is ignored).
    /// `cost`: the source's time to produce the snapshot and, within it, to read it.
    pub fn publish(
        &self,
        frame: Frame,
        events: Vec<Event>,
        cost: (u64, Option<u64>),
        started: std::time::Instant,
    ) {
        let Frame::Snapshot(snapshot) = &frame else {
            return;
        };
        let seq = snapshot.seq;
        let line = Bytes::from(frame.to_json_line());
        let Frame::Snapshot(snapshot) = frame else {
            return;
        };
        if let Some(t) = &self.tenants {
            t.observe(&snapshot);
        }
        let json = Bytes::from(serde_json::to_vec(&snapshot).expect("snapshots serialize"));
        let event_lines: Vec<Bytes> = events
            .iter()
            // named `switch:port` for readers without the map (`"at"`)
            .map(|e| Bytes::from(self.named(e.clone()).to_json_line()))
            .collect();
        {
            let mut h = self.history.lock().expect("history lock");
            for bytes in event_lines.into_iter().chain([line]) {
                let l = Line {
                    seq,
                    index: h.next_index,
                    bytes,
                };
                h.next_index += 1;
                if h.lines.len() == h.cap
                    && let Some(old) = h.lines.pop_front()
                {
                    h.evicted_seq = Some(old.seq);
                }
                h.lines.push_back(l.clone());
                // No receiver is not an error: nobody is streaming.
                let _ = self.frames.send(l);
            }
            h.next_seq = seq + 1;
        }
        {
            let mut ev = self.events.lock().expect("events lock");
            for e in events {
                if ev.len() == self.events_kept {
                    ev.pop_front();
                }
                ev.push_back(e);
            }
        }
        self.latest.send_replace(Some(Arc::new(Latest {
            snapshot,
            json,
            sample_ns: cost.0,
            read_ns: cost.1,
            publish_ns: started.elapsed().as_nanos() as u64,
        })));
        self.counters.snapshots.inc();
        self.drop_laggards();
    }

    /// Drops every stream client more than `stream_lag` frames behind (O(clients) atomic
    /// loads; the collector never waits for a client).
    fn drop_laggards(&self) {
        let newest = self.history.lock().expect("history lock").next_index;
        let mut clients = self.clients.lock().expect("clients lock");
        clients.retain(|c| {
            let d = c.delivered.load(Ordering::Relaxed);
            if d == u64::MAX {
                return false; // the stream ended by itself
            }
            let behind = newest.saturating_sub(d);
            if behind > self.stream_lag {
                self.counters.stream_dropped.inc();
                super::log::warn(&format!(
                    "stream client dropped: {behind} frames behind (limit {})",
                    self.stream_lag
                ));
                c.kill.kill();
                return false;
            }
            true
        });
    }

    /// Subscribes from snapshot `from` (`None`: live only, starting with the next frame).
    pub fn subscribe(
        &self,
        from: Option<u64>,
        kill: ConnKill,
    ) -> Result<Subscription, ResumeError> {
        let h = self.history.lock().expect("history lock");
        let mut backlog = vec![(None, self.info_line.clone())];
        if let Some(from) = from {
            if from > h.next_seq {
                return Err(ResumeError::Future { next: h.next_seq });
            }
            // A snapshot is resumable only if none of its frames were evicted.
            if let Some(ev) = h.evicted_seq
                && from <= ev
            {
                return Err(ResumeError::Gone { oldest: ev + 1 });
            }
            backlog.extend(
                h.lines
                    .iter()
                    .filter(|l| l.seq >= from)
                    .map(|l| (Some(l.seq), l.bytes.clone())),
            );
        }
        let live = self.frames.subscribe();
        let delivered = Arc::new(AtomicU64::new(h.next_index));
        drop(h);
        self.clients.lock().expect("clients lock").push(Client {
            delivered: delivered.clone(),
            kill,
        });
        self.counters.stream_clients.inc();
        Ok(Subscription {
            backlog,
            live,
            delivered,
        })
    }

    /// Stream clients connected now.
    pub fn stream_clients(&self) -> usize {
        self.clients.lock().expect("clients lock").len()
    }

    /// The newest snapshot, if one was published.
    pub fn latest(&self) -> Option<Arc<Latest>> {
        self.latest.borrow().clone()
    }

    /// The kept events with `seq >= since`, oldest first, at most `limit`, each with
    /// its places named (`"at": ["leaf0:3", …]`).
    pub fn events(&self, since: u64, limit: usize) -> Vec<NamedEvent> {
        let ev = self.events.lock().expect("events lock");
        ev.iter()
            .filter(|e| e.seq >= since)
            .take(limit)
            .map(|e| self.named(e.clone()))
            .collect()
    }

    /// Tells streams to end (the server is shutting down).
    pub fn begin_shutdown(&self) {
        self.shutdown.send_replace(true);
    }

    /// Resolves once shutdown began.
    pub fn shutdown_signal(&self) -> watch::Receiver<bool> {
        self.shutdown.subscribe()
    }
}
