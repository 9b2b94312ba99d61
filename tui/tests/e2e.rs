//! The real binary in tmux: start it, send keys, read the screen with capture-pane.
//! Needs `tmux` (scripts/install-deps.sh) unless FABRIC_SKIP_TOOLS=1.

mod common;

use std::process::Command;
use std::time::{Duration, Instant};

struct Session(String);

impl Session {
    fn start(tag: &str, cmd: &str, w: u16, h: u16) -> Option<Session> {
        if Command::new("tmux").arg("-V").output().is_err() {
            if std::env::var("FABRIC_SKIP_TOOLS").is_ok_and(|v| v == "1") {
                eprintln!("skipped: tmux not installed and FABRIC_SKIP_TOOLS=1");
                return None;
            }
            panic!("tmux is not installed: run scripts/install-deps.sh (or FABRIC_SKIP_TOOLS=1)");
        }
        let name = format!("fabric-tui-e2e-{}-{tag}", std::process::id());
        let ok = Command::new("tmux")
            .args([
                "new-session",
                "-d",
                "-s",
                &name,
                "-x",
                &w.to_string(),
                "-y",
                &h.to_string(),
            ])
            .arg(format!("{cmd}; sleep 30"))
            .status()
            .unwrap()
            .success();
        assert!(ok, "tmux new-session failed");
        Some(Session(name))
    }

    fn screen(&self) -> String {
        let o = Command::new("tmux")
            .args(["capture-pane", "-p", "-t", &self.0])
            .output()
            .unwrap();
        String::from_utf8_lossy(&o.stdout).into_owned()
    }

    fn keys(&self, k: &[&str]) {
        Command::new("tmux")
            .args(["send-keys", "-t", &self.0])
            .args(k)
            .status()
            .unwrap();
    }

    fn wait_for(&self, what: &str) -> String {
        let t = Instant::now();
        loop {
            let s = self.screen();
            if s.contains(what) {
                return s;
            }
            assert!(
                t.elapsed() < Duration::from_secs(20),
                "`{what}` never appeared; screen:\n{s}"
            );
            std::thread::sleep(Duration::from_millis(100));
        }
    }
}

impl Drop for Session {
    fn drop(&mut self) {
        let _ = Command::new("tmux")
            .args(["kill-session", "-t", &self.0])
            .status();
    }
}

fn recording() -> std::path::PathBuf {
    let frames = common::frames(true);
    let dir = std::env::temp_dir().join(format!("fabric-tui-e2e-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("fixture.rec");
    let fabric_api::Frame::Fabric(info) = &frames[0] else {
        unreachable!()
    };
    let mut w =
        fabric_api::recording::Writer::new(std::fs::File::create(&path).unwrap(), info).unwrap();
    for f in &frames[1..] {
        w.write(f).unwrap();
    }
    w.finish().unwrap();
    path
}

#[test]
fn replay_in_tmux() {
    let rec = recording();
    let bin = env!("CARGO_BIN_EXE_fabric-tui");
    let Some(s) = Session::start(
        "replay",
        &format!("{bin} --replay {} --speed 8", rec.display()),
        120,
        36,
    ) else {
        return;
    };
    let screen = s.wait_for("LOSS DETECTED");
    assert!(screen.contains("REPLAY fixture.rec"), "{screen}");
    assert!(screen.contains("plane 0 — pod × core"), "{screen}");
    s.wait_for("(end)");
    s.keys(&["Tab"]);
    let screen = s.wait_for("links 1–");
    assert!(screen.contains("util▼"), "{screen}");
    s.keys(&["/"]);
    for c in "drops>0".chars() {
        s.keys(&[&c.to_string()]);
    }
    s.keys(&["Enter"]);
    let screen = s.wait_for("links 1–1 of 1 (of 384)");
    assert!(screen.contains("filter drops>0"), "{screen}");
    s.keys(&["?"]);
    s.wait_for("help — ? or Esc to close");
    s.keys(&["Escape"]);
    // a key right after ESC would read as Alt+key: wait until the help is gone
    let t = Instant::now();
    while s.screen().contains("help — ? or Esc to close") {
        assert!(
            t.elapsed() < Duration::from_secs(30),
            "Esc did not close the help"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    s.keys(&["Space"]);
    s.wait_for("FROZEN");
    s.keys(&["q"]);
    // the process is gone and the terminal restored: the shell's `sleep` runs, no TUI left
    let t = Instant::now();
    while s.screen().contains("fabric-tui") {
        assert!(
            t.elapsed() < Duration::from_secs(10),
            "still running after q:\n{}",
            s.screen()
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    std::fs::remove_dir_all(rec.parent().unwrap()).ok();
}

#[test]
fn bad_recording_is_a_clear_error_not_a_panic() {
    let out = Command::new(env!("CARGO_BIN_EXE_fabric-tui"))
        .args(["--replay", "/nonexistent.rec"])
        .output()
        .unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("/nonexistent.rec: No such file or directory"),
        "{err}"
    );
    let out = Command::new(env!("CARGO_BIN_EXE_fabric-tui"))
        .args(["--replay", "x", "--speed", "0"])
        .output()
        .unwrap();
    assert!(
        String::from_utf8_lossy(&out.stderr)
            .contains("--speed 0: expected a number from 0.000001 to 1024")
    );
}

/// `fabric serve --sim` (this workspace's daemon), started and stopped by the test.
struct Daemon(std::process::Child);

impl Daemon {
    fn start(port: u16) -> Daemon {
        let dir = std::path::Path::new(env!("CARGO_BIN_EXE_fabric-tui"))
            .parent()
            .unwrap();
        let bin = dir.join("fabric");
        assert!(
            bin.exists(),
            "{} is missing: `cargo test --workspace` builds it, or run `cargo build -p fabric-manager` first",
            bin.display()
        );
        let child = Command::new(bin)
            .args(["serve", "--sim", "--ratio", "0.0002", "--interval", "250ms"])
            .arg(format!("--listen=127.0.0.1:{port}"))
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .unwrap();
        Daemon(child)
    }
}

impl Drop for Daemon {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

#[test]
fn connect_to_fabric_serve_in_tmux() {
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let daemon = Daemon::start(port);
    let bin = env!("CARGO_BIN_EXE_fabric-tui");
    let Some(s) = Session::start(
        "connect",
        &format!("{bin} --connect 127.0.0.1:{port}"),
        120,
        36,
    ) else {
        return;
    };
    let screen = s.wait_for("host–leaf p99");
    assert!(
        screen.contains(&format!("● LIVE fabric serve 127.0.0.1:{port}")),
        "{screen}"
    );
    assert!(screen.contains("fat-tree-k4"), "{screen}");
    s.keys(&["Tab"]);
    s.wait_for("links 1–");
    // the daemon goes away: stale values, then it comes back and the stream resumes
    drop(daemon);
    let screen = s.wait_for("DISCONNECTED");
    assert!(
        screen.contains("DISCONNECTED (values stale) from fabric serve"),
        "{screen}"
    );
    let _daemon = Daemon::start(port);
    s.wait_for("● LIVE fabric serve");
    s.keys(&["q"]);
}

#[test]
fn demo_in_tmux() {
    let bin = env!("CARGO_BIN_EXE_fabric-tui");
    let Some(s) = Session::start("demo", &format!("{bin} --preset fat-tree-k4"), 120, 36) else {
        return;
    };
    let screen = s.wait_for("host–leaf p99");
    assert!(
        screen.contains("● LIVE demo fat-tree-k4 (simulated, 1 s = 200.0µs)"),
        "{screen}"
    );
    assert!(screen.contains("plane 0 — pod × core"), "{screen}");
    assert!(screen.contains("✔ LOSSLESS"), "{screen}");
    s.keys(&["Tab", "Tab"]);
    let screen = s.wait_for("flows:");
    assert!(screen.contains("host0-nic0 → host1-nic0"), "{screen}");
    s.keys(&["q"]);
    let t = Instant::now();
    while s.screen().contains("fabric-tui") {
        assert!(
            t.elapsed() < Duration::from_secs(10),
            "still running after q:\n{}",
            s.screen()
        );
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// The simulated time in the header (`t=4.38ms`), in ns.
fn header_time_ns(screen: &str) -> Option<u64> {
    let first = screen.lines().next()?;
    let t = first.rsplit("t=").next()?.trim();
    let (num, unit) = t.split_at(t.find(|c: char| c.is_alphabetic())?);
    let scale = match unit {
        "ns" => 1.0,
        "µs" => 1e3,
        "ms" => 1e6,
        "s" => 1e9,
        _ => return None,
    };
    Some((num.parse::<f64>().ok()? * scale) as u64)
}

/// `fabric-tui` with no arguments runs until it is quit: its workload repeats and its
/// failure/repair cycle goes on (it used to stop after about 52 s, "the simulation ended").
#[test]
fn demo_runs_until_quit_in_tmux() {
    let bin = env!("CARGO_BIN_EXE_fabric-tui");
    let Some(s) = Session::start("forever", bin, 120, 36) else {
        return;
    };
    s.wait_for("● LIVE demo fat-tree-k8");
    std::thread::sleep(Duration::from_secs(62));
    let before = s.screen();
    std::thread::sleep(Duration::from_secs(4));
    let after = s.screen();
    assert!(after.contains("● LIVE demo fat-tree-k8"), "{after}");
    assert!(!after.contains("DISCONNECTED"), "{after}");
    let (t0, t1) = (header_time_ns(&before), header_time_ns(&after));
    assert!(
        t0.is_some() && t1 > t0,
        "simulated time goes on: {t0:?} then {t1:?}\n{after}"
    );
    s.keys(&["q"]);
    let t = Instant::now();
    while s.screen().contains("fabric-tui") {
        assert!(
            t.elapsed() < Duration::from_secs(10),
            "still running after q"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
}
