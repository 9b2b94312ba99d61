//! Replay speed: without `--speed`, a recording plays its snapshot cadence in real time
//! (one snapshot per 100 ms frame for simulated clocks, 1× for wall-clock ones), so a
//! recording at 100 ms virtual steps shows data at once instead of "no data yet".

use fabric_api::recording::Writer;
use fabric_api::{Column, FabricInfo, Frame, Snapshot, Source, SourceKind, Timestamp};
use fabric_tui::app::{Msg, Request, SourceStatus};
use fabric_tui::source::{Control, Replay};
use std::path::PathBuf;
use std::sync::mpsc;
use std::time::{Duration, Instant};

/// A recording of k=4 fat-tree snapshots at the given times, every port busy.
fn recording(name: &str, times: &[u64], wall: bool) -> PathBuf {
    let f = topo::generators::fat_tree(4, topo::Rate::gbps(400)).unwrap();
    let info = FabricInfo::from_topo(&f, 8);
    let n = info.ports.len();
    let dir = std::env::temp_dir().join(format!("fabric-tui-speed-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join(format!("{name}.rec"));
    let mut w = Writer::new(std::fs::File::create(&path).unwrap(), &info).unwrap();
    let src = Source {
        kind: SourceKind::Sim,
        name: name.into(),
    };
    for (k, &t) in times.iter().enumerate() {
        let time = if wall {
            Timestamp::wall_ns(t)
        } else {
            Timestamp::virtual_ns(t)
        };
        let mut s = Snapshot::new(k as u64, time, src.clone());
        // 10 % of 400 Gb/s since t = 0
        s.counters.tx_bytes = Some(Column::from(vec![t * 5; n]));
        w.write(&Frame::Snapshot(s)).unwrap();
    }
    w.finish().unwrap();
    path
}

fn steps(step: u64, n: u64) -> Vec<u64> {
    (1..=n).map(|k| k * step).collect()
}

#[test]
fn default_speed_plays_the_snapshot_cadence_in_real_time() {
    let speed = |name, times: &[u64], wall| {
        let p = recording(name, times, wall);
        let s = Replay::open(&p).unwrap().default_speed();
        std::fs::remove_file(&p).unwrap();
        s
    };
    // a simulated recording at 100 ms steps: real time (it used to be 0.0002×)
    assert_eq!(speed("virtual-100ms", &steps(100_000_000, 20), false), 1.0);
    // the demo's cadence: 20 µs simulated per 100 ms frame
    let demo = speed("virtual-20us", &steps(20_000, 50), false);
    assert!((demo - 2e-4).abs() < 1e-12, "{demo}");
    // 1 s steps: 10×, so a snapshot still arrives every 100 ms
    assert_eq!(speed("virtual-1s", &steps(1_000_000_000, 5), false), 10.0);
    // the median step: one long pause does not slow the whole replay down
    let mut t = steps(1_000_000, 9);
    t.push(60_000_000_000);
    assert_eq!(speed("virtual-pause", &t, false), 0.01);
    // wall-clock recordings play in real time whatever their cadence
    assert_eq!(speed("wall-1s", &steps(1_000_000_000, 5), true), 1.0);
    // nothing to measure a cadence on: real time
    assert_eq!(speed("virtual-one", &[5_000], false), 1.0);
    // steps of an hour would need 36,000×: capped at the fastest speed
    let hour = speed("virtual-hour", &steps(3_600_000_000_000, 3), false);
    assert_eq!(hour, fabric_tui::source::MAX_SPEED);
}

/// A recording at 100 ms virtual steps plays one snapshot per 100 ms of real time: the
/// first sample comes with the second snapshot, 100 ms in (at the old 0.0002× it took
/// 500 s), and the next ones are paced (an unpaced replay sends all 49 at once).
/// Arrival is waited for, never counted in a fixed window: on a loaded machine the player
/// thread may not run for a second, which only makes samples late, never early.
#[test]
fn a_recording_at_100ms_virtual_steps_shows_data_paced_in_real_time() {
    let p = recording("virtual-100ms-play", &steps(100_000_000, 50), false);
    let t0 = Instant::now();
    let mut pl = Player::start(&p, 1.0);
    for _ in 0..5 {
        pl.until("a sample", is_sample);
        let util = pl.last.as_ref().unwrap().links[0].util;
        assert!((util - 0.1).abs() < 1e-3, "{util}");
    }
    // the fifth sample comes with the sixth snapshot, 500 ms of playing in
    let took = t0.elapsed();
    assert!(
        took >= Duration::from_millis(400),
        "5 samples within {took:?}: not paced"
    );
    drop(pl);
    std::fs::remove_file(&p).unwrap();
}

/// How long a wait for the player lasts before the test fails: generous, since tests
/// run beside others on a loaded machine, and only a failing test waits this long.
const WAIT: Duration = Duration::from_secs(60);

/// A player on its own thread, and what it sends.
struct Player {
    rx: mpsc::Receiver<Msg>,
    ctl: mpsc::Sender<Control>,
    thread: Option<std::thread::JoinHandle<()>>,
    /// The latest replay status seen.
    status: Option<SourceStatus>,
    /// The latest sample seen.
    last: Option<fabric_tui::metrics::Sample>,
}

fn is_sample(m: &Msg) -> bool {
    matches!(m, Msg::Sample(_))
}

fn is_status(m: &Msg) -> bool {
    matches!(m, Msg::Status(SourceStatus::Replay { .. }))
}

impl Player {
    fn start(path: &std::path::Path, speed: f64) -> Player {
        let r = Replay::open(path).unwrap();
        let (tx, rx) = mpsc::channel();
        let (ctl, ctl_rx) = mpsc::channel();
        let thread = Some(std::thread::spawn(move || r.run(speed, tx, ctl_rx)));
        Player {
            rx,
            ctl,
            thread,
            status: None,
            last: None,
        }
    }

    /// Takes one message, keeping the latest status and sample; its sample time if it
    /// is a sample.
    fn take(&mut self, m: Msg) -> Option<u64> {
        match m {
            Msg::Sample(s) => {
                let t = s.at_ns;
                self.last = Some(s);
                Some(t)
            }
            Msg::Status(s) => {
                self.status = Some(s);
                None
            }
            _ => None,
        }
    }

    /// Receives until a message for which `done` holds (that one included), for up to
    /// [`WAIT`]; the sample times received.
    fn until(&mut self, what: &str, done: impl Fn(&Msg) -> bool) -> Vec<u64> {
        let t0 = Instant::now();
        let mut out = Vec::new();
        loop {
            let left = WAIT.saturating_sub(t0.elapsed());
            let m = match self.rx.recv_timeout(left) {
                Ok(m) => m,
                Err(e) => panic!("{what}: {e} after {WAIT:?}; status {:?}", self.status),
            };
            let stop = done(&m);
            out.extend(self.take(m));
            if stop {
                return out;
            }
        }
    }

    /// Sample times received within `d` (for what must *not* arrive: a loaded machine
    /// can only make it arrive later).
    fn samples_for(&mut self, d: Duration) -> Vec<u64> {
        let t0 = Instant::now();
        let mut out = Vec::new();
        while let Some(left) = d.checked_sub(t0.elapsed()) {
            match self.rx.recv_timeout(left) {
                Ok(m) => out.extend(self.take(m)),
                Err(mpsc::RecvTimeoutError::Timeout) => {}
                Err(e) => panic!("{e}"),
            }
        }
        out
    }

    fn send(&self, r: Request) {
        self.ctl.send(Control::Ui(r)).unwrap();
    }
}

impl Drop for Player {
    fn drop(&mut self) {
        let _ = self.ctl.send(Control::Stop);
        if let Some(t) = self.thread.take() {
            t.join().unwrap();
        }
    }
}

#[test]
fn space_pauses_playback_and_a_seek_while_paused_shows_one_sample() {
    // 10 s at 100 ms steps; a seek step is 1/20 of it
    let p = recording("pause", &steps(100_000_000, 100), false);
    let mut pl = Player::start(&p, 1.0);
    pl.until("a first sample", is_sample);
    pl.send(Request::TogglePause);
    // the player answers a control with its status; what it sent before may come first
    pl.until("the paused status", |m| {
        matches!(m, Msg::Status(SourceStatus::Replay { paused: true, .. }))
    });
    let Some(SourceStatus::Replay {
        at_ns: held,
        step_ns,
        ..
    }) = pl.status.clone()
    else {
        unreachable!()
    };
    assert_eq!(step_ns, (9_900_000_000u64) / 20);
    // paused: the position holds, nothing arrives (it used to play on behind the screen)
    assert_eq!(
        pl.samples_for(Duration::from_millis(800)),
        Vec::<u64>::new()
    );
    // a seek while paused shows the sample it lands on, and only that one
    pl.send(Request::Seek(1));
    let mut moved = pl.until("the sample the seek lands on", is_sample);
    pl.until("the status after that sample", is_status);
    moved.extend(pl.samples_for(Duration::from_millis(800)));
    assert_eq!(moved.len(), 1, "{moved:?}");
    let Some(SourceStatus::Replay {
        paused: true,
        at_ns,
        ..
    }) = pl.status.clone()
    else {
        panic!("not paused after the seek: {:?}", pl.status)
    };
    assert!(
        at_ns >= held + step_ns - 100_000_000,
        "{at_ns} after {held}"
    );
    // play again: it goes on from there
    pl.send(Request::TogglePause);
    let after = pl.until("a sample after resuming", is_sample);
    assert!(after[0] >= moved[0], "{after:?} after {moved:?}");
    drop(pl);
    std::fs::remove_file(&p).unwrap();
}

#[test]
fn speed_4_on_a_simulated_recording_is_four_times_its_cadence() {
    // 40 snapshots 20 µs apart (the demo's cadence): 4 s at the default speed, 1 s at 4×
    // (39 steps of 25 ms); `--speed 4` used to mean 4× the simulated clock and ended at
    // once. Only a lower bound on the time: load can slow a replay, never speed it up.
    let p = recording("speed4", &steps(20_000, 40), false);
    let t0 = Instant::now();
    let mut pl = Player::start(&p, 4.0);
    let got = pl.until("the end of the replay", |m| {
        matches!(m, Msg::Status(SourceStatus::Replay { ended: true, .. }))
    });
    let took = t0.elapsed();
    assert!(
        took >= Duration::from_millis(800),
        "a 1 s replay ended after {took:?}"
    );
    assert_eq!(got.len(), 39, "{got:?}");
    match &pl.status {
        Some(SourceStatus::Replay { speed, .. }) => assert_eq!(*speed, 4.0),
        s => panic!("{s:?}"),
    }
    // twice as fast: the speed shown is 8 (of the cadence), not 0.0016
    pl.send(Request::Speed(2.0));
    pl.until("the status after the speed change", is_status);
    match &pl.status {
        Some(SourceStatus::Replay { speed, .. }) => assert_eq!(*speed, 8.0),
        s => panic!("{s:?}"),
    }
    drop(pl);
    std::fs::remove_file(&p).unwrap();
}

#[test]
fn seek_steps_are_a_twentieth_of_the_recording() {
    let step = |name, times: &[u64]| {
        let p = recording(name, times, false);
        let s = Replay::open(&p).unwrap().step_ns();
        std::fs::remove_file(&p).unwrap();
        s
    };
    // an hour at 1 s: 3 minutes a step (it was 10 s whatever the length)
    assert_eq!(
        step("step-hour", &steps(1_000_000_000, 3601)),
        180_000_000_000
    );
    // a simulated millisecond at 20 µs steps: 50 µs a step (10 s skipped it all)
    assert_eq!(step("step-ms", &steps(20_000, 51)), 50_000);
}
