//! The real binary in tmux: start it, send keys, read the screen with capture-pane.
//! Needs `tmux` (scripts/install-deps.sh) unless FABRIC_SKIP_TOOLS=1.

mod common;

use std::io::{BufRead, BufReader};
use std::process::{ChildStdout, Command, Stdio};
use std::time::{Duration, Instant};

use testkit::process::KillOnDrop;
use testkit::tmux::{self, Tmux};

/// `fabric-tui ARGS` (or any command) in a 120×36 tmux session; None (skipped) when tmux
/// is missing and FABRIC_SKIP_TOOLS=1.
fn session(tag: &str, cmd: &str) -> Option<Tmux> {
    tmux::available().then(|| Tmux::start(&format!("tui-{tag}"), cmd, (120, 36)))
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
    let Some(s) = session(
        "replay",
        &format!("{bin} --replay {} --speed 8", rec.display()),
    ) else {
        return;
    };
    let screen = s.wait_for_text("LOSS DETECTED");
    assert!(screen.contains("REPLAY fixture.rec"), "{screen}");
    assert!(screen.contains("plane 0 — pod × core"), "{screen}");
    s.wait_for_text("(end)");
    s.keys(&["Tab"]);
    let screen = s.wait_for_text("links 1–");
    assert!(screen.contains("util▼"), "{screen}");
    s.keys(&["/"]);
    for c in "drops>0".chars() {
        s.keys(&[&c.to_string()]);
    }
    s.keys(&["Enter"]);
    let screen = s.wait_for_text("links 1–1 of 1 (of 384)");
    assert!(screen.contains("filter drops>0"), "{screen}");
    s.keys(&["?"]);
    s.wait_for_text("? or Esc to close");
    s.keys(&["Escape"]);
    // a key right after ESC would read as Alt+key: wait until the help is gone
    s.wait_gone("? or Esc to close");
    s.keys(&["Space"]);
    s.wait_for_text("PAUSED");
    s.keys(&["q"]);
    // the process is gone and the terminal restored: the shell's `sleep` runs, no TUI left
    s.wait_gone("fabric-tui");
    std::fs::remove_dir_all(rec.parent().unwrap()).ok();
}

/// A 20 s recording at 100 ms simulated steps (a k=4 fat-tree, every port at 10 %).
fn long_recording(dir: &std::path::Path) -> std::path::PathBuf {
    use fabric_api::{Column, FabricInfo, Frame, Snapshot, Source, SourceKind, Timestamp};
    let f = topo::generators::fat_tree(4, topo::Rate::gbps(400)).unwrap();
    let info = FabricInfo::from_topo(&f, 8);
    let n = info.ports.len();
    std::fs::create_dir_all(dir).unwrap();
    let path = dir.join("long.rec");
    let mut w =
        fabric_api::recording::Writer::new(std::fs::File::create(&path).unwrap(), &info).unwrap();
    let src = Source {
        kind: SourceKind::Sim,
        name: "long".into(),
    };
    for k in 0..=200u64 {
        let t = k * 100_000_000;
        let mut s = Snapshot::new(k, Timestamp::virtual_ns(t), src.clone());
        s.counters.tx_bytes = Some(Column::from(vec![t * 5; n]));
        w.write(&Frame::Snapshot(s)).unwrap();
    }
    w.finish().unwrap();
    path
}

/// The replay position in the header (`REPLAY long.rec 1× 3.40s / 20.00s`).
fn position(screen: &str) -> String {
    let line = screen.lines().find(|l| l.contains("REPLAY")).unwrap_or("");
    let after = line.split("× ").nth(1).unwrap_or("");
    after.split(" / ").next().unwrap_or("").trim().to_string()
}

/// Space pauses the replay itself (the position holds, and plays on from there), a
/// seek moves by a twentieth of the recording, and the speed reads as a factor of the
/// recording's cadence (it read `0.0002×` for a simulated recording).
#[test]
fn replay_pauses_and_seeks_like_a_video() {
    let dir = std::env::temp_dir().join(format!("fabric-tui-e2e-video-{}", std::process::id()));
    let rec = long_recording(&dir);
    let bin = env!("CARGO_BIN_EXE_fabric-tui");
    let Some(s) = session("video", &format!("{bin} --replay {}", rec.display())) else {
        return;
    };
    let screen = s.wait_for_text("REPLAY long.rec 1× ");
    assert!(screen.contains("/ 20.00s"), "{screen}");
    s.keys(&["Space"]);
    let screen = s.wait_for_text("PAUSED");
    assert!(screen.contains("❚❚ REPLAY"), "{screen}");
    std::thread::sleep(Duration::from_millis(300));
    let held = position(&s.screen());
    std::thread::sleep(Duration::from_millis(1500));
    assert_eq!(
        position(&s.screen()),
        held,
        "the position moved while paused"
    );
    // a step forward while paused: 1 s (1/20 of 20 s), still paused
    s.keys(&["."]);
    let screen = s.wait_for("the position after the seek", |sc| position(sc) != held);
    assert!(screen.contains("PAUSED"), "{screen}");
    let secs = |p: &str| {
        let (num, scale) = [("ms", 1e-3), ("µs", 1e-6), ("ns", 1e-9), ("s", 1.0)]
            .iter()
            .find_map(|(u, k)| p.strip_suffix(u).map(|n| (n, *k)))
            .unwrap_or_else(|| panic!("position `{p}`"));
        num.parse::<f64>().unwrap() * scale
    };
    let jump = secs(&position(&screen)) - secs(&held);
    assert!(
        (0.9..=1.15).contains(&jump),
        "{held} → {}",
        position(&screen)
    );
    // play again, and faster: 2× of the cadence
    s.keys(&["Space"]);
    s.keys(&["+"]);
    let screen = s.wait_for_text("REPLAY long.rec 2× ");
    assert!(!screen.contains("PAUSED"), "{screen}");
    s.keys(&["q"]);
    std::fs::remove_dir_all(&dir).ok();
}

/// `--record` to a path that cannot be written fails before the screen opens, naming
/// the path (it used to record nothing and exit 0).
#[test]
fn unwritable_record_path_is_an_error_before_the_screen_opens() {
    let out = Command::new(env!("CARGO_BIN_EXE_fabric-tui"))
        .args([
            "--preset",
            "fat-tree-k4",
            "--record",
            "/nonexistent/dir/x.rec",
        ])
        .output()
        .unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("--record /nonexistent/dir/x.rec: No such file or directory"),
        "{err}"
    );
    assert!(!err.contains("terminal"), "{err}");
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

/// A `fabric serve --sim` (this workspace's daemon), killed when dropped.
struct Serve {
    _child: KillOnDrop,
    /// Its stdout after the readiness line, kept open while it runs.
    _out: BufReader<ChildStdout>,
    /// The address it listens on (`127.0.0.1:PORT`).
    addr: String,
}

/// Starts `fabric serve --sim` on `listen` (`127.0.0.1:0` for a port the kernel picks, so
/// no other test can take it first) and waits for its readiness line; its stderr goes to
/// `log`, shown if it does not start.
fn start_daemon(listen: &str, log: &std::path::Path) -> Serve {
    let dir = std::path::Path::new(env!("CARGO_BIN_EXE_fabric-tui"))
        .parent()
        .unwrap();
    let bin = dir.join("fabric");
    assert!(
        bin.exists(),
        "{} is missing: `cargo test --workspace` builds it, or run `cargo build -p fabric-manager` first",
        bin.display()
    );
    let mut child = Command::new(bin)
        .args(["serve", "--sim", "--ratio", "0.0002", "--interval", "250ms"])
        .arg(format!("--listen={listen}"))
        .stdout(Stdio::piped())
        .stderr(std::fs::File::create(log).unwrap())
        .spawn()
        .unwrap();
    let mut out = BufReader::new(child.stdout.take().unwrap());
    let child = KillOnDrop(child);
    let mut line = String::new();
    let _ = out.read_line(&mut line);
    let Some(addr) = line.trim().strip_prefix("listening on http://") else {
        panic!(
            "fabric serve --listen={listen}: first line {line:?}; stderr:\n{}",
            std::fs::read_to_string(log).unwrap_or_default()
        )
    };
    Serve {
        addr: addr.to_string(),
        _child: child,
        _out: out,
    }
}

/// `--connect` to a real `fabric serve --sim`, which is then stopped and started again on
/// the same port: stale values while it is gone, then the new run (a new instance id in
/// the stream's first frame) is shown afresh at once — it used to be refused (`from=` in
/// the new run's future) until the new daemon's sequence number passed the old one, and
/// then two runs' streams were spliced. The recording of the first run is finished.
#[test]
fn connect_to_fabric_serve_in_tmux() {
    if !tmux::available() {
        return;
    }
    let bin = env!("CARGO_BIN_EXE_fabric-tui");
    let dir = std::env::temp_dir().join(format!("fabric-tui-connect-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let daemon = start_daemon("127.0.0.1:0", &dir.join("serve-1.log"));
    let addr = daemon.addr.clone();
    let rec = dir.join("live.rec");
    let Some(s) = session(
        "connect",
        &format!("{bin} --connect {addr} --record {}", rec.display()),
    ) else {
        return;
    };
    let screen = s.wait_for_text("host–leaf p99");
    assert!(
        screen.contains(&format!("● LIVE fabric serve {addr}")),
        "{screen}"
    );
    assert!(screen.contains("● REC live.rec"), "{screen}");
    assert!(screen.contains("fat-tree-k4"), "{screen}");
    // let the first run get well ahead of where the second will be when it is reached
    std::thread::sleep(Duration::from_secs(4));
    s.keys(&["Tab"]);
    s.wait_for_text("links 1–");
    // the daemon goes away: stale values, then it comes back and the stream resumes
    drop(daemon);
    let screen = s.wait_for_text("DISCONNECTED");
    assert!(
        screen.contains("DISCONNECTED (values stale) from fabric serve"),
        "{screen}"
    );
    // the same port again (a `:0` bind elsewhere could take it meanwhile, one chance in
    // the ~28,000 ephemeral ports; then this fails naming the daemon's error, never hangs)
    let _daemon = start_daemon(&addr, &dir.join("serve-2.log"));
    s.wait_for_text("● LIVE fabric serve");
    s.keys(&["Tab", "Tab"]);
    // the source says "restarted", then finishes the recording, then says so, then the
    // header drops its REC: three messages the screen may be drawn between
    let screen = s.wait_for("the finished recording, its REC gone", |sc| {
        sc.contains("recording live.rec finished: the daemon restarted") && !sc.contains("● REC")
    });
    assert!(
        screen.contains("the daemon restarted (instance"),
        "{screen}"
    );
    assert_finished_recording(&rec);
    s.keys(&["q"]);
    std::fs::remove_dir_all(&dir).ok();
}

/// A `--connect` address that cannot work is refused before the screen opens.
#[test]
fn bad_connect_addresses_are_refused_before_the_screen_opens() {
    for (addr, want) in [
        ("https://127.0.0.1:9100", "plain HTTP"),
        ("http://127.0.0.1:9100/api/v1", "no path"),
        ("127.0.0.1", "no port"),
        ("127.0.0.1:http", "is not a number from 1 to 65535"),
        ("::1:9100", "in brackets"),
    ] {
        let out = Command::new(env!("CARGO_BIN_EXE_fabric-tui"))
            .args(["--connect", addr])
            .output()
            .unwrap();
        assert!(!out.status.success(), "{addr}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(
            err.contains(&format!("--connect {addr}: ")) && err.contains(want),
            "{addr}: {err}"
        );
    }
}

#[test]
fn demo_in_tmux() {
    let bin = env!("CARGO_BIN_EXE_fabric-tui");
    let Some(s) = session("demo", &format!("{bin} --preset fat-tree-k4")) else {
        return;
    };
    let screen = s.wait_for_text("host–leaf p99");
    assert!(
        screen.contains("● LIVE demo fat-tree-k4 (simulated, 1 s = 200.0µs)"),
        "{screen}"
    );
    assert!(screen.contains("plane 0 — pod × core"), "{screen}");
    assert!(screen.contains("✔ LOSSLESS"), "{screen}");
    s.keys(&["Tab", "Tab"]);
    let screen = s.wait_for_text("flows:");
    assert!(screen.contains("host0-nic0 → host1-nic0"), "{screen}");
    s.keys(&["q"]);
    s.wait_gone("fabric-tui");
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
    let Some(s) = session("forever", bin) else {
        return;
    };
    s.wait_for_text("● LIVE demo fat-tree-k8");
    std::thread::sleep(Duration::from_secs(62));
    let before = s.screen();
    let t0 = header_time_ns(&before);
    assert!(t0.is_some(), "no simulated time in the header:\n{before}");
    // simulated time goes on (waited for: a loaded machine may not draw for seconds)
    let after = s.wait_for("the simulated time going on", |sc| {
        header_time_ns(sc) > t0 || sc.contains("DISCONNECTED")
    });
    assert!(after.contains("● LIVE demo fat-tree-k8"), "{after}");
    assert!(!after.contains("DISCONNECTED"), "{after}");
    s.keys(&["q"]);
    s.wait_gone("fabric-tui");
}

fn wait_file(path: &std::path::Path, what: &str) -> String {
    let t = Instant::now();
    loop {
        if let Ok(s) = std::fs::read_to_string(path)
            && !s.is_empty()
        {
            return s;
        }
        assert!(t.elapsed() < tmux::WAIT, "{what} never came");
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// The recording ends with its index (a recording the writer finished).
fn assert_finished_recording(path: &std::path::Path) {
    let text = std::fs::read_to_string(path).unwrap();
    let last = text.lines().last().unwrap_or("");
    assert!(
        last.starts_with("{\"index_at\":"),
        "{} has no index: last line {last:?}",
        path.display()
    );
    let r = fabric_tui::source::Replay::open(path).unwrap();
    assert!(r.simulated());
}

/// SIGTERM and SIGHUP end the TUI as `q` does: the shell gets its terminal back (cooked
/// mode, main screen, cursor shown) and the recording has its index. They used to leave
/// raw mode, the alternate screen and a recording without index behind.
#[test]
fn sigterm_and_sighup_restore_the_terminal_and_finish_the_recording() {
    let bin = env!("CARGO_BIN_EXE_fabric-tui");
    let dir = std::env::temp_dir().join(format!("fabric-tui-sig-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    for sig in ["TERM", "HUP"] {
        let (pid, stty, rec) = (
            dir.join(format!("{sig}.pid")),
            dir.join(format!("{sig}.stty")),
            dir.join(format!("{sig}.rec")),
        );
        let cmd = format!(
            "sh -c 'echo $$ > {}; exec {bin} --preset fat-tree-k4 --record {}'; stty -a > {}",
            pid.display(),
            rec.display(),
            stty.display()
        );
        let Some(s) = session(&format!("sig{sig}"), &cmd) else {
            return;
        };
        let screen = s.wait_for_text("host–leaf p99");
        assert!(screen.contains(&format!("● REC {sig}.rec")), "{screen}");
        std::thread::sleep(Duration::from_secs(1)); // a few snapshots recorded
        let pid = wait_file(&pid, "the pid file");
        let ok = Command::new("kill")
            .args([&format!("-{sig}"), pid.trim()])
            .status()
            .unwrap()
            .success();
        assert!(ok, "kill -{sig} {pid}");
        let modes = wait_file(&stty, "stty after exit");
        assert!(
            modes.contains(" icanon") && modes.contains(" echo "),
            "SIG{sig}: the terminal is left in raw mode: {modes}"
        );
        // tmux reads the pane's output when it gets to it: once the line the session
        // prints after the command is on screen, it has read all the TUI wrote before
        s.wait_for_text("[exited ");
        assert_eq!(
            s.format("#{alternate_on} #{cursor_flag}"),
            "0 1",
            "SIG{sig}: main screen, cursor shown"
        );
        assert_finished_recording(&rec);
    }
    std::fs::remove_dir_all(&dir).ok();
}

/// Ctrl-Z suspends to the shell with the terminal restored; `fg` redraws the TUI.
#[test]
fn ctrl_z_suspends_and_fg_resumes() {
    let bin = env!("CARGO_BIN_EXE_fabric-tui");
    let Some(s) = session("suspend", "bash --norc --noprofile -i") else {
        return;
    };
    s.keys(&[&format!("{bin} --preset fat-tree-k4"), "Enter"]);
    s.wait_for_text("host–leaf p99");
    s.keys(&["C-z"]);
    let screen = s.wait_for_text("Stopped");
    assert!(!screen.contains("host–leaf p99"), "{screen}");
    assert_eq!(s.format("#{alternate_on} #{cursor_flag}"), "0 1");
    s.keys(&["fg", "Enter"]);
    s.wait_for_text("host–leaf p99");
    assert_eq!(s.format("#{alternate_on}"), "1");
    s.keys(&["q"]);
    // typed before the TUI has exited, the line would be read (and eaten) by it
    s.wait_for_format("#{pane_current_command}", "bash");
    s.keys(&["echo MODE=$(stty -a | grep -o -- '-\\?icanon')", "Enter"]);
    let screen = s.wait_for_text("\nMODE=");
    assert!(screen.contains("MODE=icanon"), "{screen}");
}

/// Mouse in the real terminal: tmux passes SGR mouse reports to the program as a
/// terminal would; a click on the Links tab opens it, a click on a header sorts by it.
#[test]
fn mouse_clicks_a_tab_and_a_column_header() {
    let bin = env!("CARGO_BIN_EXE_fabric-tui");
    let Some(s) = session("mouse", &format!("{bin} --preset fat-tree-k4")) else {
        return;
    };
    let screen = s.wait_for_text("LIVE");
    let find = |screen: &str, needle: &str| -> (usize, usize) {
        screen
            .lines()
            .enumerate()
            .find_map(|(y, l)| l.find(needle).map(|i| (l[..i].chars().count(), y)))
            .unwrap_or_else(|| panic!("`{needle}` not on screen:\n{screen}"))
    };
    // SGR reports count from 1
    let click = |x: usize, y: usize| s.keys(&["-l", &format!("\x1b[<0;{};{}M", x + 2, y + 1)]);
    let (x, y) = find(&screen, "Links");
    click(x, y);
    let screen = s.wait_for_text("links 1–");
    let (x, y) = find(&screen, "PFC/s");
    click(x, y);
    s.wait_for_text("sort PFC/s ▼");
    s.keys(&["q"]);
}

/// A config that binds one key to two actions is refused before the screen opens,
/// naming the key and both actions (the key used to move to the second one silently).
#[test]
fn a_key_bound_twice_is_an_error_at_start_up() {
    let dir = std::env::temp_dir().join(format!("fabric-tui-e2e-keys-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let cfg = dir.join("tui.toml");
    std::fs::write(&cfg, "[keys]\nfreeze = [\"q\"]\n").unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_fabric-tui"))
        .args(["--preset", "fat-tree-k4", "--config"])
        .arg(&cfg)
        .output()
        .unwrap();
    std::fs::remove_dir_all(&dir).ok();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("[keys]: key `q` is bound to both `quit` and `freeze`"),
        "{err}"
    );
    assert!(!err.contains("terminal"), "{err}");
}
