//! The real binary in tmux: start it, send keys, read the screen with capture-pane.
//! Needs `tmux` (scripts/install-deps.sh) unless FABRIC_SKIP_TOOLS=1.

mod common;

use std::process::Command;
use std::time::{Duration, Instant};

struct Session(String);

impl Session {
    fn start(cmd: &str, w: u16, h: u16) -> Option<Session> {
        if Command::new("tmux").arg("-V").output().is_err() {
            if std::env::var("FABRIC_SKIP_TOOLS").is_ok_and(|v| v == "1") {
                eprintln!("skipped: tmux not installed and FABRIC_SKIP_TOOLS=1");
                return None;
            }
            panic!("tmux is not installed: run scripts/install-deps.sh (or FABRIC_SKIP_TOOLS=1)");
        }
        let name = format!("fabric-tui-e2e-{}-{w}", std::process::id());
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
            .contains("--speed 0: expected a number above 0 and at most 1024")
    );
}
