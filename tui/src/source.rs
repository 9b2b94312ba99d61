//! Data sources, each on its own thread, sending [`Msg`]s to the UI: a recording played
//! back ([`Replay`]), the daemon's stream ([`connect`]); any live source can also write
//! what it receives to a recording ([`Recorder`]).

use crate::app::{Msg, Request, SourceStatus};
use crate::error::{Error, Result};
use crate::fabric::FabricView;
use crate::ingest::Aggregator;
use fabric_api::recording::{Reader, Writer};
use fabric_api::{FabricInfo, Frame};
use std::fs::File;
use std::io::BufWriter;
use std::path::{Path, PathBuf};
use std::sync::mpsc::{Receiver, RecvTimeoutError, Sender};
use std::time::{Duration, Instant, SystemTime};

/// Slowest replay speed.
pub const MIN_SPEED: f64 = 1e-6;
/// Fastest replay speed.
pub const MAX_SPEED: f64 = 1024.0;

/// A request to a source thread.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Control {
    /// From the UI (seek, speed).
    Ui(Request),
    /// Stop and return.
    Stop,
}

/// Writes every frame a live source receives into a recording.
#[derive(Debug)]
pub struct Recorder {
    path: PathBuf,
    /// The file, created at once (so a path that cannot be written is an error before
    /// the screen opens), until the fabric map arrives and the writer takes it.
    file: Option<File>,
    w: Option<Writer<BufWriter<File>>>,
}

impl Recorder {
    /// A recorder writing to `path`, created now (an error names the path); the
    /// recording starts when the fabric map arrives.
    pub fn create(path: &Path) -> Result<Recorder> {
        let file = File::create(path).map_err(|error| Error::Io {
            path: format!("--record {}", path.display()),
            error,
        })?;
        Ok(Recorder {
            path: path.to_path_buf(),
            file: Some(file),
            w: None,
        })
    }

    /// Record one frame (the first fabric map opens the file).
    pub fn frame(&mut self, f: &Frame) -> Result<()> {
        let path = self.path.display().to_string();
        let rec = |error| Error::Recording {
            path: path.clone(),
            error,
        };
        match (f, &mut self.w) {
            (Frame::Fabric(info), None) => {
                let Some(file) = self.file.take() else {
                    return Ok(());
                };
                self.w = Some(Writer::new(BufWriter::new(file), info).map_err(rec)?);
            }
            (Frame::Fabric(_), Some(_)) => {}
            (f, Some(w)) => w.write(f).map_err(rec)?,
            (_, None) => {}
        }
        Ok(())
    }

    /// The recording's file name (for the REC indicator).
    pub fn name(&self) -> String {
        self.path.file_name().map_or_else(
            || self.path.display().to_string(),
            |n| n.to_string_lossy().into_owned(),
        )
    }

    /// Record `f`; on an error tell the UI (an event, the REC indicator off) and stop
    /// recording.
    pub fn record_or_stop(rec: &mut Option<Recorder>, f: &Frame, tx: &Sender<Msg>) {
        if let Some(r) = rec
            && let Err(e) = r.frame(f)
        {
            let _ = tx.send(Msg::Event(crate::metrics::EventRow {
                at_ns: 0,
                severity: crate::metrics::Severity::Bad,
                text: format!("recording stopped: {e}"),
                link: None,
            }));
            let _ = tx.send(Msg::Recording(None));
            *rec = None;
        }
    }

    /// Write the index and close the file.
    pub fn finish(self) -> Result<()> {
        if let Some(w) = self.w {
            w.finish().map_err(|error| Error::Recording {
                path: self.path.display().to_string(),
                error,
            })?;
        }
        Ok(())
    }
}

/// Wall-clock time of day, UTC, `HH:MM:SS` (for "disconnected since …").
pub fn time_of_day() -> String {
    let s = SystemTime::now()
        .duration_since(SystemTime::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    format!("{:02}:{:02}:{:02} UTC", s / 3600 % 24, s / 60 % 60, s % 60)
}

/// An opened recording, ready to play.
#[derive(Debug)]
pub struct Replay {
    reader: Reader<File>,
    name: String,
    agg: Aggregator,
    view: FabricView,
    start_ns: u64,
    end_ns: u64,
    simulated: bool,
}

/// The clock of the first snapshot.
fn first_clock(r: &mut Reader<File>) -> Option<fabric_api::Clock> {
    while let Ok(Some(f)) = r.next_frame() {
        if let Frame::Snapshot(s) = f {
            return Some(s.time.clock);
        }
    }
    None
}

impl Replay {
    /// Open `path` (a clear error for a missing, foreign, truncated or corrupt file).
    pub fn open(path: &Path) -> Result<Replay> {
        let p = path.display().to_string();
        let file = File::open(path).map_err(|error| Error::Io {
            path: p.clone(),
            error,
        })?;
        let mut reader = Reader::open(file).map_err(|error| Error::Recording {
            path: p.clone(),
            error,
        })?;
        let simulated = first_clock(&mut reader) == Some(fabric_api::Clock::Virtual);
        reader
            .rewind()
            .map_err(|error| Error::Recording { path: p, error })?;
        let (agg, view) = Aggregator::new(reader.fabric().clone());
        let start_ns = reader.index().first().map_or(0, |e| e.t_ns);
        let end_ns = reader.index().last().map_or(0, |e| e.t_ns);
        let name = path
            .file_name()
            .map_or("recording".into(), |n| n.to_string_lossy().into_owned());
        Ok(Replay {
            reader,
            name,
            agg,
            view,
            start_ns,
            end_ns,
            simulated,
        })
    }

    /// Does the recording run on a simulator's virtual clock?
    pub fn simulated(&self) -> bool {
        self.simulated
    }

    /// The speed a replay starts at without `--speed`: real time for a wall-clock
    /// recording; for a simulated one, the snapshot cadence in real time — one snapshot
    /// per frame ([`crate::driver::MIN_FRAME`], 100 ms), whatever the simulated step
    /// (the demo's 20 µs steps give 0.0002×, a recording at 100 ms steps 1×). The step
    /// is the median gap between snapshots, so a pause or a burst does not skew it.
    pub fn default_speed(&self) -> f64 {
        if !self.simulated {
            return 1.0;
        }
        let mut gaps: Vec<u64> = self
            .reader
            .index()
            .windows(2)
            .take(10_000)
            .map(|w| w[1].t_ns.saturating_sub(w[0].t_ns))
            .filter(|&g| g > 0)
            .collect();
        if gaps.is_empty() {
            return 1.0;
        }
        let mid = gaps.len() / 2;
        let step = *gaps.select_nth_unstable(mid).1;
        let frame = crate::driver::MIN_FRAME.as_nanos() as f64;
        (step as f64 / frame).clamp(MIN_SPEED, MAX_SPEED)
    }

    /// The fabric it shows.
    pub fn view(&self) -> &FabricView {
        &self.view
    }

    /// Every message the recording produces, in order, unpaced (tests and benchmarks).
    pub fn all_messages(&mut self) -> Result<Vec<Msg>> {
        let rec = |error| Error::Recording {
            path: self.name.clone(),
            error,
        };
        self.reader.rewind().map_err(rec)?;
        self.agg.reset();
        let mut out = Vec::new();
        while let Some(f) = self.reader.next_frame().map_err(rec)? {
            out.extend(self.agg.frame(f, &self.view));
        }
        Ok(out)
    }

    fn status(&self, at_ns: u64, speed: f64, ended: bool) -> Msg {
        Msg::Status(SourceStatus::Replay {
            name: self.name.clone(),
            speed,
            at_ns: at_ns.saturating_sub(self.start_ns),
            len_ns: self.end_ns - self.start_ns,
            ended,
        })
    }

    /// Play at `speed` × real time on this thread until stopped; seeks and speed changes
    /// arrive on `ctl`.
    pub fn run(mut self, mut speed: f64, tx: Sender<Msg>, ctl: Receiver<Control>) {
        let mut cur = self.start_ns;
        let (mut base_wall, mut base_t) = (Instant::now(), self.start_ns);
        let mut skip_until = 0u64;
        loop {
            let frame = match self.reader.next_frame() {
                Ok(Some(f)) => f,
                Ok(None) => {
                    let _ = tx.send(self.status(cur, speed, true));
                    match ctl.recv() {
                        Ok(Control::Ui(Request::Seek(d))) => {
                            skip_until = self.seek(cur, d);
                            (base_wall, base_t, cur) = (Instant::now(), skip_until, skip_until);
                            continue;
                        }
                        Ok(Control::Ui(Request::Speed(f))) => {
                            speed = (speed * f).clamp(MIN_SPEED, MAX_SPEED);
                            continue;
                        }
                        _ => return,
                    }
                }
                Err(e) => {
                    let reason = format!("{}: {e}", self.name);
                    let _ = tx.send(Msg::Status(SourceStatus::Disconnected {
                        name: self.name.clone(),
                        since: time_of_day(),
                        reason,
                    }));
                    let _ = ctl.recv();
                    return;
                }
            };
            if let Some(t) = frame.time_ns().filter(|&t| t >= skip_until) {
                // Pace: wait until this frame's time, answering controls meanwhile.
                loop {
                    let due = base_wall
                        + Duration::from_secs_f64((t.saturating_sub(base_t)) as f64 / 1e9 / speed);
                    let now = Instant::now();
                    if now >= due {
                        break;
                    }
                    match ctl.recv_timeout(due - now) {
                        Err(RecvTimeoutError::Timeout) => break,
                        Err(RecvTimeoutError::Disconnected) | Ok(Control::Stop) => return,
                        Ok(Control::Ui(Request::Speed(f))) => {
                            speed = (speed * f).clamp(MIN_SPEED, MAX_SPEED);
                            (base_wall, base_t) = (Instant::now(), cur);
                            let _ = tx.send(self.status(cur, speed, false));
                        }
                        Ok(Control::Ui(Request::Seek(d))) => {
                            skip_until = self.seek(cur, d);
                            (base_wall, base_t, cur) = (Instant::now(), skip_until, skip_until);
                            break;
                        }
                    }
                }
                if t < skip_until {
                    continue; // a seek happened while waiting: this frame is stale
                }
                cur = t;
            }
            let is_snap = matches!(frame, Frame::Snapshot(_));
            for m in self.agg.frame(frame, &self.view) {
                if tx.send(m).is_err() {
                    return;
                }
            }
            if is_snap && tx.send(self.status(cur, speed, false)).is_err() {
                return;
            }
        }
    }

    fn seek(&mut self, cur: u64, delta: i64) -> u64 {
        let t = (cur as i64 + delta).clamp(self.start_ns as i64, self.end_ns as i64) as u64;
        // seek to the snapshot before so the first sample after `t` has a previous one
        let before = self
            .reader
            .index()
            .iter()
            .rev()
            .find(|e| e.t_ns < t)
            .map_or(self.start_ns, |e| e.t_ns);
        let _ = self.reader.seek_time(before);
        self.agg.reset();
        t
    }
}

/// Follow the daemon's telemetry stream at `addr` (`HOST:PORT`), reconnecting with
/// back-off (0.25 s doubling to 8 s) and resuming from the last sequence number seen.
pub fn connect(addr: String, tx: Sender<Msg>, ctl: Receiver<Control>, mut rec: Option<Recorder>) {
    let mut from = 0u64;
    let mut backoff = Duration::from_millis(250);
    let mut state: Option<(Aggregator, FabricView)> = None;
    let name = format!("fabric serve {addr}");
    loop {
        let path = format!("/api/v1/telemetry/stream?from={from}");
        let reason = match crate::http::get(&addr, &path, Duration::from_secs(10)) {
            Ok(mut body) => {
                backoff = Duration::from_millis(250);
                let _ = tx.send(Msg::Status(SourceStatus::Live(name.clone())));
                loop {
                    if matches!(ctl.try_recv(), Ok(Control::Stop)) {
                        finish(rec);
                        return;
                    }
                    match fabric_api::read_frame(&mut body, fabric_api::DEFAULT_MAX_LINE) {
                        Ok(Some(f)) => {
                            if let Frame::Snapshot(s) = &f {
                                from = s.seq + 1;
                            }
                            Recorder::record_or_stop(&mut rec, &f, &tx);
                            if !deliver(&mut state, f, &tx) {
                                finish(rec);
                                return;
                            }
                        }
                        Ok(None) => break "the daemon closed the stream".to_string(),
                        Err(fabric_api::Error::Io(e))
                            if e.kind() == std::io::ErrorKind::UnexpectedEof =>
                        {
                            break "the daemon closed the stream".to_string();
                        }
                        Err(fabric_api::Error::UnknownFrame(_)) => continue,
                        Err(e) => break e.to_string(),
                    }
                }
            }
            Err(e) => e.to_string(),
        };
        let _ = tx.send(Msg::Status(SourceStatus::Disconnected {
            name: name.clone(),
            since: time_of_day(),
            reason,
        }));
        match ctl.recv_timeout(backoff) {
            Ok(Control::Stop) | Err(RecvTimeoutError::Disconnected) => {
                finish(rec);
                return;
            }
            _ => {}
        }
        backoff = (backoff * 2).min(Duration::from_secs(8));
    }
}

fn finish(rec: Option<Recorder>) {
    if let Some(r) = rec {
        let _ = r.finish();
    }
}

/// Feed one frame through the aggregator (a new or changed fabric map replaces it).
/// Returns false when the UI has gone.
pub fn deliver(state: &mut Option<(Aggregator, FabricView)>, f: Frame, tx: &Sender<Msg>) -> bool {
    if let Frame::Fabric(info) = &f {
        if state.as_ref().is_some_and(|(a, _)| a.info() == info) {
            return true; // the same map again after a reconnect
        }
        let (agg, view) = Aggregator::new(info.clone());
        let ok = tx.send(Msg::Fabric(Box::new(view.clone()))).is_ok();
        *state = Some((agg, view));
        return ok;
    }
    let Some((agg, view)) = state else {
        return true;
    };
    agg.frame(f, view).into_iter().all(|m| tx.send(m).is_ok())
}

/// The fabric map a `FabricInfo` describes (for callers that start the UI first).
pub fn view_of(info: &FabricInfo) -> FabricView {
    FabricView::from_info(info).0
}
