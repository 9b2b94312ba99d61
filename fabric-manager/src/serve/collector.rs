//! The collector: one thread that owns the [`Source`], samples it every interval on the
//! wall clock, keeps the daemon's tables in step with the link events, writes a recording
//! when asked, and publishes through the [`Hub`] — which never waits for a reader.
//!
//! Commands (fail/restore a link, re-route, start/stop a recording) arrive on a channel
//! and are answered in between two samples.

use std::fs::File;
use std::io::BufWriter;
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::mpsc::{self, RecvTimeoutError};
use std::time::{Duration, Instant};

use fabric_api::{Event, EventKind, Frame, recording};
use tokio::sync::oneshot;
use topo::LinkId;

use super::health::{DaemonHealth, RouteDrift, TopologyCheck};
use super::hub::Hub;
use super::log;
use super::routes::{RouteView, Update};
use super::source::{Actuator, OBSERVE_ONLY, Sample, Source};

/// A command to the collector.
#[derive(Debug)]
pub enum Control {
    /// Fail a link.
    FailLink(LinkId),
    /// Restore a link.
    RestoreLink(LinkId),
    /// Recompute every table.
    Reroute,
    /// Compare the data plane's routes with the tables now (answer: the report as JSON).
    Drift,
    /// Reprogram the routes that drifted, then compare again (answer: both as JSON).
    RepairDrift,
    /// Check the cabling with LLDP now (answer: the report as JSON).
    CheckTopology,
    /// Start recording into `file` (just created at `path`), stopping at `max_bytes`.
    RecordStart {
        /// Where the file is (for messages).
        path: PathBuf,
        /// The new, empty file.
        file: File,
        /// Size cap, bytes.
        max_bytes: u64,
    },
    /// Stop recording.
    RecordStop,
    /// Stop the collector.
    Stop,
}

type Reply = oneshot::Sender<Result<String, String>>;

/// The sending side of the command channel.
#[derive(Debug, Clone)]
pub struct ControlTx(mpsc::Sender<(Control, Reply)>);

impl ControlTx {
    /// Sends a command and waits for its outcome.
    pub async fn send(&self, c: Control) -> Result<String, String> {
        let (tx, rx) = oneshot::channel();
        self.0
            .send((c, tx))
            .map_err(|_| "the collector has stopped".to_string())?;
        rx.await
            .map_err(|_| "the collector has stopped".to_string())?
    }
}

/// When the collector compares the data plane's routes with the tables.
#[derive(Debug, Clone, Copy)]
pub struct DriftPolicy {
    /// Time between two periodic checks.
    pub every: Duration,
    /// Reprogram what a periodic check finds (`--repair-drift`).
    pub repair: bool,
}

/// A running collector.
#[derive(Debug)]
pub struct Collector {
    thread: std::thread::JoinHandle<()>,
    control: ControlTx,
}

struct Recorder {
    path: PathBuf,
    writer: recording::Writer<BufWriter<File>>,
    max_bytes: u64,
}

struct Worker {
    source: Box<dyn Source>,
    hub: Arc<Hub>,
    routes: Option<Arc<RouteView>>,
    health: Arc<DaemonHealth>,
    interval: Duration,
    flow_events: bool,
    /// Time between two periodic route-drift checks, and the last one.
    drift_every: Duration,
    last_drift: Instant,
    /// Repair drift found by the periodic check (`--repair-drift`).
    repair_drift: bool,
    recorder: Option<Recorder>,
    seq: u64,
    /// Events produced by commands, published with the next snapshot.
    pending: Vec<Event>,
    /// Failures that repeat every sample or check are logged once (all are counted).
    repeated: log::Repeated,
}

impl Collector {
    /// Starts the collector thread.
    pub fn start(
        source: Box<dyn Source>,
        hub: Arc<Hub>,
        routes: Option<Arc<RouteView>>,
        health: Arc<DaemonHealth>,
        interval: Duration,
        flow_events: bool,
        drift: DriftPolicy,
    ) -> Collector {
        let (tx, rx) = mpsc::channel();
        let mut w = Worker {
            source,
            hub,
            routes,
            health,
            interval,
            flow_events,
            drift_every: drift.every,
            last_drift: Instant::now(),
            repair_drift: drift.repair,
            recorder: None,
            seq: 0,
            pending: Vec::new(),
            repeated: log::Repeated::default(),
        };
        let thread = std::thread::Builder::new()
            .name("collector".into())
            .spawn(move || w.run(rx))
            .expect("spawning the collector thread");
        Collector {
            thread,
            control: ControlTx(tx),
        }
    }

    /// The command channel.
    pub fn control(&self) -> ControlTx {
        self.control.clone()
    }

    /// Stops the collector (closing a recording) and waits for it.
    pub async fn stop(self) {
        let _ = self.control.send(Control::Stop).await;
        let _ = tokio::task::spawn_blocking(move || self.thread.join()).await;
    }
}

impl Worker {
    fn run(&mut self, rx: mpsc::Receiver<(Control, Reply)>) {
        let start = Instant::now();
        let mut next = start;
        loop {
            let wait = next.saturating_duration_since(Instant::now());
            match rx.recv_timeout(wait) {
                Ok((Control::Stop, reply)) => {
                    let r = self.stop_recording();
                    let _ = reply.send(r);
                    return;
                }
                Ok((c, reply)) => {
                    let r = self.command(c);
                    let _ = reply.send(r);
                }
                Err(RecvTimeoutError::Timeout) => {
                    self.tick(start.elapsed());
                    if self.last_drift.elapsed() >= self.drift_every {
                        // The reports stay in the health summary; errors are counted.
                        if let Ok(d) = self.check_drift()
                            && self.repair_drift
                            && !d.entries.is_empty()
                        {
                            let _ = self.repair_drift();
                        }
                        let _ = self.check_topology();
                    }
                    next += self.interval;
                    let now = Instant::now();
                    if next < now {
                        // Sampling took longer than the interval: skip, never pile up.
                        let behind = (now - next).as_nanos() / self.interval.as_nanos().max(1);
                        next += self.interval * (behind as u32 + 1);
                    }
                }
                Err(RecvTimeoutError::Disconnected) => return,
            }
        }
    }

    fn tick(&mut self, elapsed: Duration) {
        let t0 = Instant::now();
        let sampled = self.source.sample(elapsed, self.seq);
        let sample_ns = t0.elapsed().as_nanos() as u64;
        let survived = self.source.take_errors();
        if survived > 0 {
            self.hub.counters.source_errors.inc_by(survived);
        }
        let t = Instant::now();
        let Sample {
            snapshot,
            mut events,
            read_ns,
        } = match sampled {
            Ok(x) => {
                self.repeated.info_ok("source");
                x
            }
            Err(e) => {
                self.hub.counters.source_errors.inc();
                self.repeated.warn("source", &e);
                return;
            }
        };
        let Some(snapshot) = snapshot else {
            // Nothing new was read: no snapshot (readers keep the last one and its rates,
            // never a zero rate over a zero interval); the events go with the next one.
            self.pending.extend(events);
            return;
        };
        if !self.flow_events {
            // One per finished flow: thousands a second on a busy fabric; the totals
            // count them (flows_finished) without flooding the stream's history.
            events.retain(|e| !matches!(e.what, EventKind::FlowFinished { .. }));
        }
        // Events from commands (a manual recompute, a drift repair) happened between two
        // samples: they come after the source's own, with the snapshot's sequence number
        // and clock, so a stream (and a recording) keeps one clock in time order —
        // simulated time for the simulator.
        let mut all = events;
        for mut e in std::mem::take(&mut self.pending) {
            e.seq = self.seq;
            e.time = snapshot.time;
            all.push(e);
        }
        let observed = self.health.observe(&snapshot, &all);
        all.extend(observed.events);
        let derived = self.follow_links(&observed.links, &snapshot);
        self.health.record(snapshot.seq, snapshot.time.ns, &derived);
        all.extend(derived);
        let frame = Frame::Snapshot(snapshot);
        self.record(&all, &frame);
        self.hub.publish(frame, all, (sample_ns, read_ns), t);
        self.seq += 1;
    }

    /// Applies the link states damping passed on to the daemon's tables; a reroute
    /// event for each when the source does not report its own.
    fn follow_links(&mut self, links: &[(LinkId, bool)], s: &fabric_api::Snapshot) -> Vec<Event> {
        let Some(view) = &self.routes else {
            return Vec::new();
        };
        let source_rerouted = self.source.reports_reroutes();
        let mut out = Vec::new();
        for &(link, up) in links {
            let u: Update = if up {
                view.restore(&[link])
            } else {
                view.fail(&[link])
            };
            if !source_rerouted {
                out.push(Event {
                    seq: s.seq,
                    time: s.time,
                    what: EventKind::Reroute {
                        links: vec![link],
                        switches_changed: Some(u.switches_changed),
                        unreachable_pairs: Some(u.unreachable_pairs),
                        repaired_ns: u.took_ns,
                    },
                });
            }
        }
        out
    }

    fn record(&mut self, events: &[Event], frame: &Frame) {
        let Some(rec) = &mut self.recorder else {
            return;
        };
        let r = events
            .iter()
            .try_for_each(|e| rec.writer.write(&Frame::Event(e.clone())))
            .and_then(|()| rec.writer.write(frame));
        if let Err(e) = r {
            self.hub.counters.source_errors.inc();
            log::warn(&format!(
                "recording {}: {e}; recording stopped",
                rec.path.display()
            ));
            self.recorder = None;
        } else if rec.writer.bytes_written() >= rec.max_bytes {
            let cap = rec.max_bytes;
            match self.stop_recording() {
                Ok(m) => log::warn(&format!("{m}: reached --record-max-bytes {cap}")),
                Err(e) => log::warn(&format!("recording stopped at its size cap: {e}")),
            }
        }
    }

    fn command(&mut self, c: Control) -> Result<String, String> {
        match c {
            Control::FailLink(l) => self.act()?.fail_link(l),
            Control::RestoreLink(l) => self.act()?.restore_link(l),
            Control::Reroute => {
                let view = self
                    .routes
                    .as_ref()
                    .ok_or("this source has no routing tables")?;
                let u = view.recompute();
                self.pending.push(Event {
                    seq: self.seq,
                    time: fabric_api::Timestamp::wall_ns(now_ns()),
                    what: EventKind::Reroute {
                        links: Vec::new(),
                        switches_changed: Some(u.switches_changed.clone()),
                        unreachable_pairs: Some(u.unreachable_pairs),
                        repaired_ns: u.took_ns,
                    },
                });
                Ok(format!(
                    "tables recomputed in {:.3} ms, {} switches changed",
                    u.took_ns as f64 * 1e-6,
                    u.switches_changed.len()
                ))
            }
            Control::Drift => {
                let d = self.check_drift()?;
                serde_json::to_string(&d).map_err(|e| e.to_string())
            }
            Control::RepairDrift => {
                let (r, after) = self.repair_drift()?;
                serde_json::to_string(&serde_json::json!({ "repair": r, "after": after }))
                    .map_err(|e| e.to_string())
            }
            Control::CheckTopology => {
                let r = self.check_topology()?;
                serde_json::to_string(&r).map_err(|e| e.to_string())
            }
            Control::RecordStart {
                path,
                file,
                max_bytes,
            } => self.start_recording(path, file, max_bytes),
            Control::RecordStop => self.stop_recording(),
            Control::Stop => unreachable!("handled by run"),
        }
    }

    /// The source's write capability, or the refusal an observe-only source gives.
    fn act(&mut self) -> Result<&mut dyn Actuator, String> {
        self.source
            .actuator()
            .ok_or_else(|| OBSERVE_ONLY.to_string())
    }

    /// A source's answer to a check: its error counted and logged as `what`; `None`
    /// (the source has no `lacks`) an error too.
    fn answer<T>(
        &mut self,
        r: Option<Result<T, String>>,
        what: &str,
        lacks: &str,
    ) -> Result<T, String> {
        match r {
            None => Err(format!("this source has no {lacks}")),
            Some(Err(e)) => {
                self.hub.counters.source_errors.inc();
                self.repeated.warn(what, &e);
                Err(e)
            }
            Some(Ok(x)) => {
                self.repeated.info_ok(what);
                Ok(x)
            }
        }
    }

    /// Reprograms what drifted and compares again; counts the repair, publishes a
    /// `routes-repaired` event with the next snapshot and records the drift left.
    fn repair_drift(&mut self) -> Result<(veth::routed::DriftRepair, veth::routed::Drift), String> {
        self.last_drift = Instant::now();
        let r = self.act()?.repair_drift();
        let (r, after) = self.answer(r, "route drift repair", "kernel routes to repair")?;
        log::info(&format!(
            "route drift repaired: {} missing re-added, {} extra removed, {} different re-programmed ({} routes in {:.2} ms); {} extra routes of other protocols left; {} entries still differ",
            r.missing,
            r.extra,
            r.different,
            r.routes,
            r.took_s * 1e3,
            r.skipped.len(),
            after.entries.len()
        ));
        if !r.failed.is_empty() {
            self.hub
                .counters
                .source_errors
                .inc_by(r.failed.len() as u64);
            let (e, why) = &r.failed[0];
            log::warn(&format!(
                "route drift repair: {} entries refused; first: {} {} {}: {why}",
                r.failed.len(),
                e.switch,
                e.prefix,
                e.kind.as_str()
            ));
        }
        self.health.record_drift_repair(&r);
        self.pending.push(Event {
            seq: self.seq,
            time: fabric_api::Timestamp::wall_ns(now_ns()),
            what: EventKind::RoutesRepaired {
                missing: r.missing as u64,
                extra: r.extra as u64,
                different: r.different as u64,
                skipped: r.skipped.len() as u64,
            },
        });
        self.record_drift(&after);
        Ok((r, after))
    }

    /// Compares the data plane's routes with the tables; records the counts in the
    /// health summary (and its alarm), logs drift.
    fn check_drift(&mut self) -> Result<veth::routed::Drift, String> {
        self.last_drift = Instant::now();
        let d = self.source.drift();
        let d = self.answer(d, "route drift check", "kernel routes to compare")?;
        self.record_drift(&d);
        Ok(d)
    }

    /// Puts a drift report's counts in the health summary (and its alarm); logs drift.
    fn record_drift(&mut self, d: &veth::routed::Drift) {
        use veth::routed::DriftKind;
        let summary = RouteDrift {
            checked: d.checked as u64,
            missing: d.count(DriftKind::Missing) as u64,
            extra: d.count(DriftKind::Extra) as u64,
            different: d.count(DriftKind::Different) as u64,
            at_seq: self.seq,
            took_s: d.took_s,
        };
        // Said when it appears or changes, and when it is gone, not at every check.
        if summary.total() == 0 {
            self.repeated.info_ok("route drift");
        } else {
            self.repeated.warn(
                "route drift",
                &format!(
                    "{} of {} routes differ ({} missing, {} extra, {} different); first: {} {} {}",
                    summary.total(),
                    summary.checked,
                    summary.missing,
                    summary.extra,
                    summary.different,
                    d.entries[0].switch,
                    d.entries[0].prefix,
                    d.entries[0].kind.as_str()
                ),
            );
        }
        self.health.set_drift(summary);
    }

    /// Checks the cabling with LLDP; records the counts in the health summary (and its
    /// alarm), logs findings.
    fn check_topology(&mut self) -> Result<veth::routed::NeighbourReport, String> {
        let r = self.source.check_topology();
        let r = self.answer(r, "LLDP check", "cables to check")?;
        use veth::routed::MismatchKind;
        let mismatches = MismatchKind::ALL
            .iter()
            .map(|&k| (k.as_str().to_string(), r.count(k) as u64))
            .collect();
        match r.mismatches.first() {
            None => self.repeated.info_ok("LLDP"),
            Some(m) => self.repeated.warn(
                "LLDP",
                &format!(
                    "{} findings on {} ports; first: {} at {} (expected {}, heard {})",
                    r.mismatches.len(),
                    r.ports,
                    m.kind.as_str(),
                    m.at,
                    m.expected.as_deref().unwrap_or("-"),
                    m.seen.as_deref().unwrap_or("nothing")
                ),
            ),
        }
        self.health.set_topology(TopologyCheck {
            ports: r.ports as u64,
            heard: r.heard as u64,
            mismatches,
            at_seq: self.seq,
            stale: false,
        });
        Ok(r)
    }

    fn start_recording(
        &mut self,
        path: PathBuf,
        file: File,
        max_bytes: u64,
    ) -> Result<String, String> {
        if let Some(r) = &self.recorder {
            return Err(format!("already recording to {}", r.path.display()));
        }
        let writer = recording::Writer::new(BufWriter::new(file), self.hub.info())
            .map_err(|e| format!("{}: {e}", path.display()))?;
        let msg = format!(
            "recording to {} (at most {max_bytes} bytes)",
            path.display()
        );
        self.recorder = Some(Recorder {
            path,
            writer,
            max_bytes,
        });
        Ok(msg)
    }

    fn stop_recording(&mut self) -> Result<String, String> {
        let Some(r) = self.recorder.take() else {
            return Err("not recording".into());
        };
        close(r)
    }
}

/// Writes a recording's index and trailer and says its final size: the file's length
/// once the index is in (the writer's count before it left the index out).
fn close(r: Recorder) -> Result<String, String> {
    let what = |e: &dyn std::fmt::Display| format!("{}: {e}", r.path.display());
    let file = r.writer.finish().map_err(|e| what(&e))?;
    let bytes = file.get_ref().metadata().map_err(|e| what(&e))?.len();
    Ok(format!(
        "recording {} closed ({bytes} bytes)",
        r.path.display()
    ))
}

/// Wall-clock time since the Unix epoch, ns.
pub fn now_ns() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos() as u64)
}

#[cfg(test)]
mod tests {
    use super::*;
    use fabric_api::{FabricInfo, Snapshot, Timestamp};

    /// The stop message gave the size before the index and trailer were written: 1 KB
    /// short of the file on disk for a few snapshots. It now gives the file's length.
    #[test]
    fn the_stop_message_gives_the_recordings_final_size() {
        let f = topo::generators::fat_tree(4, topo::Rate::gbps(100)).unwrap();
        let info = FabricInfo::from_topo(&f, 8);
        let path =
            std::env::temp_dir().join(format!("fabric-collector-{}.rec", std::process::id()));
        let file = File::create(&path).unwrap();
        let mut writer = recording::Writer::new(BufWriter::new(file), &info).unwrap();
        let src = fabric_api::Source {
            kind: fabric_api::SourceKind::LinuxHost,
            name: "t".into(),
        };
        for seq in 0..5 {
            let s = Snapshot::new(seq, Timestamp::wall_ns(1_000 + seq), src.clone());
            writer.write(&Frame::Snapshot(s)).unwrap();
        }
        let before_index = writer.bytes_written();
        let msg = close(Recorder {
            path: path.clone(),
            writer,
            max_bytes: u64::MAX,
        })
        .unwrap();
        let on_disk = std::fs::metadata(&path).unwrap().len();
        std::fs::remove_file(&path).unwrap();
        assert!(on_disk > before_index, "the index adds to the file");
        assert!(msg.ends_with(&format!("({on_disk} bytes)")), "{msg}");
    }
}
