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

    /// How far one seek step moves: a twentieth of the recording (at least 1 ns), so
    /// twenty steps cross any recording, an hour's or a simulated millisecond's.
    pub fn step_ns(&self) -> u64 {
        ((self.end_ns - self.start_ns) / SEEK_STEPS).max(1)
    }

    fn status(&self, p: &Playback) -> Msg {
        Msg::Status(SourceStatus::Replay {
            name: self.name.clone(),
            speed: p.rel,
            paused: p.paused,
            step_ns: self.step_ns(),
            at_ns: p.cur.saturating_sub(self.start_ns),
            len_ns: self.end_ns - self.start_ns,
            ended: p.ended,
        })
    }

    /// Play on this thread until stopped, at `speed` × the recording's cadence
    /// ([`Replay::default_speed`]: real time for a wall-clock recording, one snapshot
    /// per 100 ms frame for a simulated one), so `--speed 4` plays any recording four
    /// times faster than its default. Pause, seeks and speed changes arrive on `ctl`.
    pub fn run(mut self, speed: f64, tx: Sender<Msg>, ctl: Receiver<Control>) {
        let base = self.default_speed();
        let mut p = Playback {
            base,
            rel: clamp_rel(speed, base),
            paused: false,
            ended: false,
            show_one: false,
            cur: self.start_ns,
            base_wall: Instant::now(),
            base_t: self.start_ns,
            skip_until: 0,
        };
        loop {
            // paused with nothing to show: only controls move the position
            while p.paused && !p.show_one {
                match ctl.recv() {
                    Ok(Control::Ui(r)) => {
                        self.control(&mut p, r, &tx);
                    }
                    _ => return,
                }
            }
            let frame = match self.reader.next_frame() {
                Ok(Some(f)) => f,
                Ok(None) => {
                    (p.show_one, p.ended) = (false, true);
                    let _ = tx.send(self.status(&p));
                    match ctl.recv() {
                        Ok(Control::Ui(r)) => {
                            self.control(&mut p, r, &tx);
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
            if let Some(t) = frame.time_ns().filter(|&t| t >= p.skip_until) {
                // Pace: wait until this frame's time (for ever while paused), answering
                // controls meanwhile; a seek while paused shows one sample unpaced.
                while !p.show_one {
                    let wait = if p.paused {
                        ctl.recv().map_err(|_| RecvTimeoutError::Disconnected)
                    } else {
                        let due = p.due(t);
                        let now = Instant::now();
                        if now >= due {
                            break;
                        }
                        ctl.recv_timeout(due - now)
                    };
                    match wait {
                        Err(RecvTimeoutError::Timeout) => break,
                        Err(RecvTimeoutError::Disconnected) | Ok(Control::Stop) => return,
                        Ok(Control::Ui(r)) => {
                            if self.control(&mut p, r, &tx) {
                                break;
                            }
                        }
                    }
                }
                if t < p.skip_until {
                    continue; // a seek happened while waiting: this frame is stale
                }
                p.cur = t;
            }
            let is_snap = matches!(frame, Frame::Snapshot(_));
            let reached = frame.time_ns().is_none_or(|t| t >= p.skip_until);
            for m in self.agg.frame(frame, &self.view) {
                if reached && matches!(m, Msg::Sample(_)) {
                    p.show_one = false;
                }
                if tx.send(m).is_err() {
                    return;
                }
            }
            if is_snap && tx.send(self.status(&p)).is_err() {
                return;
            }
        }
    }

    /// Apply a control; true when it moved the position (a seek).
    fn control(&mut self, p: &mut Playback, r: Request, tx: &Sender<Msg>) -> bool {
        let moved = match r {
            Request::Speed(f) => {
                p.rel = clamp_rel(p.rel * f, p.base);
                false
            }
            Request::TogglePause => {
                p.paused = !p.paused;
                false
            }
            Request::Seek(steps) => {
                let delta = i64::from(steps).saturating_mul(self.step_ns() as i64);
                p.skip_until = self.seek(p.cur, delta);
                p.cur = p.skip_until;
                p.show_one = p.paused; // a paused video shows the frame it moved to
                p.ended = false;
                true
            }
        };
        (p.base_wall, p.base_t) = (Instant::now(), p.cur);
        let _ = tx.send(self.status(p));
        moved
    }

    fn seek(&mut self, cur: u64, delta: i64) -> u64 {
        let t = (cur as i64)
            .saturating_add(delta)
            .clamp(self.start_ns as i64, self.end_ns as i64) as u64;
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

/// Seek steps across a whole recording.
pub const SEEK_STEPS: u64 = 20;

/// Where a replay is and how it plays.
#[derive(Debug)]
struct Playback {
    /// The recording's cadence in real time ([`Replay::default_speed`]).
    base: f64,
    /// Speed relative to `base`.
    rel: f64,
    paused: bool,
    /// Played to the end.
    ended: bool,
    /// Deliver frames unpaced until the next sample (a seek while paused).
    show_one: bool,
    /// Position on the recording's clock, ns.
    cur: u64,
    /// Pacing reference: `base_t` was due at `base_wall`.
    base_wall: Instant,
    base_t: u64,
    /// Frames before this time are fed without pacing (after a seek).
    skip_until: u64,
}

impl Playback {
    /// When the frame at `t` is due.
    fn due(&self, t: u64) -> Instant {
        let speed = self.rel * self.base;
        self.base_wall + Duration::from_secs_f64(t.saturating_sub(self.base_t) as f64 / 1e9 / speed)
    }
}

/// A relative speed whose absolute speed (× `base`) stays within
/// [`MIN_SPEED`]…[`MAX_SPEED`].
fn clamp_rel(rel: f64, base: f64) -> f64 {
    if rel * base > MAX_SPEED {
        MAX_SPEED / base
    } else if rel * base < MIN_SPEED {
        MIN_SPEED / base
    } else {
        rel
    }
}

/// Follow the daemon's telemetry stream at `addr` (`HOST:PORT`), reconnecting with
/// back-off (0.25 s doubling to 8 s) and resuming from the last sequence number seen.
///
/// A daemon that restarted is a new instance (the map's `instance`): the view starts
/// afresh (the map re-read, history cleared) and a recording in progress is finished,
/// since the new run's clock and sequence numbers start again. A daemon that cannot
/// resume from our sequence number (400: not reached yet, as after a restart; 410: no
/// longer kept) is asked for its live stream instead, at once.
pub fn connect(addr: String, tx: Sender<Msg>, ctl: Receiver<Control>, mut rec: Option<Recorder>) {
    let mut from = Some(0u64);
    let mut instance: Option<String> = None;
    let mut backoff = Duration::from_millis(250);
    let mut state: Option<(Aggregator, FabricView)> = None;
    let name = format!("fabric serve {addr}");
    loop {
        let path = match from {
            Some(n) => format!("/api/v1/telemetry/stream?from={n}"),
            None => "/api/v1/telemetry/stream".to_string(),
        };
        let mut again_now = false;
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
                            match &f {
                                Frame::Snapshot(s) => from = Some(s.seq + 1),
                                Frame::Fabric(info) => {
                                    if restarted(&instance, info) {
                                        new_instance(info, &mut rec, &tx);
                                    }
                                    instance.clone_from(&info.instance);
                                }
                                Frame::Event(_) => {}
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
            Err(e) => {
                if let Some(h) = crate::http::HttpError::of(&e)
                    && matches!(h.status, 400 | 410)
                    && from.is_some()
                {
                    from = None;
                    again_now = true;
                }
                e.to_string()
            }
        };
        let _ = tx.send(Msg::Status(SourceStatus::Disconnected {
            name: name.clone(),
            since: time_of_day(),
            reason,
        }));
        if again_now {
            continue;
        }
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

/// Check a `--connect` address before the screen opens and return it as `HOST:PORT`:
/// `HOST:PORT` or `http://HOST:PORT[/]` (the URL the daemon prints; an IPv6 address in
/// brackets) whose host resolves. A daemon that is not running yet is not an error (the
/// stream reconnects); another scheme, a path, a missing port or a name that resolves to
/// nothing is.
pub fn check_address(given: &str) -> std::result::Result<String, String> {
    use std::net::ToSocketAddrs;
    let bad = |why: &str| format!("--connect {given}: {why}");
    // The daemon prints its address as a URL (`http://127.0.0.1:9100/`): take that too.
    let addr = given.strip_prefix("http://").unwrap_or(given);
    let addr = addr.strip_suffix('/').unwrap_or(addr);
    if addr.contains("://") || addr.contains('/') {
        return Err(bad(
            "expected HOST:PORT or http://HOST:PORT (e.g. 127.0.0.1:9100): the daemon serves plain HTTP at its root, no path",
        ));
    }
    let Some((host, port)) = addr.rsplit_once(':') else {
        return Err(bad("no port: expected HOST:PORT (e.g. 127.0.0.1:9100)"));
    };
    if host.is_empty() || host == "[]" {
        return Err(bad("no host: expected HOST:PORT (e.g. 127.0.0.1:9100)"));
    }
    if host.contains(':') && !host.starts_with('[') {
        return Err(bad("an IPv6 address goes in brackets: [::1]:9100"));
    }
    match port.parse::<u16>() {
        Ok(p) if p > 0 => {}
        _ => {
            return Err(bad(&format!(
                "port `{port}` is not a number from 1 to 65535"
            )));
        }
    }
    match addr.to_socket_addrs().map(|mut a| a.next()) {
        Ok(Some(_)) => Ok(addr.to_string()),
        Ok(None) => Err(bad(&format!("`{host}` resolves to no address"))),
        Err(e) => Err(bad(&format!("`{host}` does not resolve: {e}"))),
    }
}

/// Is `info` from another run of the daemon than the one seen before?
fn restarted(seen: &Option<String>, info: &FabricInfo) -> bool {
    matches!((seen, &info.instance), (Some(a), Some(b)) if a != b)
}

/// A restarted daemon: say so, and finish the recording (the new run's clock and
/// sequence numbers start again, so they do not continue the old one's).
fn new_instance(info: &FabricInfo, rec: &mut Option<Recorder>, tx: &Sender<Msg>) {
    let id = info.instance.as_deref().unwrap_or("?");
    let _ = tx.send(Msg::Event(crate::metrics::EventRow {
        at_ns: 0,
        severity: crate::metrics::Severity::Warn,
        text: format!("the daemon restarted (instance {id}): fabric map re-read, values afresh"),
        link: None,
    }));
    if let Some(r) = rec.take() {
        let name = r.name();
        let text = match r.finish() {
            Ok(()) => format!("recording {name} finished: the daemon restarted"),
            Err(e) => format!("recording stopped: {e}"),
        };
        let _ = tx.send(Msg::Event(crate::metrics::EventRow {
            at_ns: 0,
            severity: crate::metrics::Severity::Warn,
            text,
            link: None,
        }));
        let _ = tx.send(Msg::Recording(None));
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

#[cfg(test)]
mod tests {
    use super::check_address;

    /// The daemon prints `http://127.0.0.1:9100/`; pasting it used to be refused as
    /// "not a URL".
    #[test]
    fn the_daemons_url_is_taken_as_its_address() {
        for given in [
            "127.0.0.1:9100",
            "http://127.0.0.1:9100",
            "http://127.0.0.1:9100/",
        ] {
            assert_eq!(
                check_address(given).as_deref(),
                Ok("127.0.0.1:9100"),
                "{given}"
            );
        }
        assert_eq!(
            check_address("http://[::1]:9100/").as_deref(),
            Ok("[::1]:9100")
        );
        for bad in [
            "https://127.0.0.1:9100",
            "http://127.0.0.1:9100/api",
            "ftp://h:1",
        ] {
            let e = check_address(bad).unwrap_err();
            assert!(e.contains("plain HTTP at its root"), "{bad}: {e}");
        }
    }
}
