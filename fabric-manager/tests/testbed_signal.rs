//! Root-only: `fabric testbed run` stopped by SIGTERM (or SIGHUP: its terminal closed)
//! ends its live run at once, tears down through its guard (no namespace left), prints
//! its report and leaves a readable recording — the graceful path, not `_exit` from a
//! signal thread.

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

#[test]
fn sigterm_stops_a_live_testbed_run_and_it_cleans_up_and_reports() {
    stop_a_live_run_with(libc::SIGTERM, 143);
}

/// A closed terminal sends SIGHUP: before it was handled, the process died at once and
/// left its namespaces (and, for `testbed frr`, every FRR daemon) behind.
#[test]
fn sighup_stops_a_live_testbed_run_and_it_cleans_up_and_reports() {
    stop_a_live_run_with(libc::SIGHUP, 129);
}

/// Starts a run that cannot finish, sends `signal` once it records, and checks the exit
/// status (128 + the signal), the report, the recording and that no namespace is left.
fn stop_a_live_run_with(signal: libc::c_int, status_code: i32) {
    match veth::root_tests_enabled() {
        Ok(true) => {}
        Ok(false) => return,
        Err(why) => panic!("{why}"),
    }
    let dir = std::env::temp_dir().join(format!("fabric-signal{signal}-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let scenario = dir.join("long.toml");
    // One flow far too long to finish: only the signal ends the run.
    std::fs::write(
        &scenario,
        "[[workload]]\nkind = \"flows\"\n[[workload.flow]]\nsrc = 1\ndst = 0\nsize = \"1TB\"\n",
    )
    .unwrap();
    let rec = dir.join("run.rec");
    let mut child = Command::new(env!("CARGO_BIN_EXE_fabric"))
        .args(["testbed", "run", scenario.to_str().unwrap(), "--record"])
        .arg(&rec)
        .args(["--wall-limit", "120"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let pid = child.id();
    // Wait until the run is recording.
    let t = Instant::now();
    while std::fs::metadata(&rec).map_or(0, |m| m.len()) < 4096 {
        assert!(
            t.elapsed() < Duration::from_secs(60),
            "the run never started"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    // SAFETY: sending a signal to our own child.
    assert_eq!(unsafe { libc::kill(child.id() as i32, signal) }, 0);
    let t = Instant::now();
    let status = loop {
        if let Some(s) = child.try_wait().unwrap() {
            break s;
        }
        // ended by the signal: well before its 120 s wall limit (a loaded machine may
        // take seconds to tear its namespaces down)
        assert!(
            t.elapsed() < Duration::from_secs(60),
            "still running after signal {signal}"
        );
        std::thread::sleep(Duration::from_millis(20));
    };
    let out = child.wait_with_output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    // An interrupted run says so in its exit status: 128 + the signal (docs/veth.md).
    assert_eq!(
        status.code(),
        Some(status_code),
        "{status}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(stdout.contains("recorded "), "{stdout}");
    assert!(stdout.contains("| 0 | 1→0 |"), "{stdout}");
    let mut r = fabric_api::recording::Reader::open(std::fs::File::open(&rec).unwrap()).unwrap();
    assert!(!r.read_all().unwrap().is_empty());
    // Only this child's: the other test's child runs in parallel.
    let left: Vec<String> = veth::netns::list_ours()
        .into_iter()
        .filter(|n| veth::netns::owner_pid(n) == Some(pid))
        .collect();
    assert!(left.is_empty(), "left behind: {left:?}");
    std::fs::remove_dir_all(&dir).unwrap();
}
