//! `fabric serve --sim … --storm-host`: the daemon's PFC watchdog against a storm the
//! simulator plays — a host whose NIC keeps pausing its leaf port — on a 1 Gb/s
//! leaf-spine (2 leaves × 4 hosts, 2 spines). Detected from the telemetry alone (PAUSE
//! frames received, bytes queued, nothing sent for the detection time), restored once
//! the storm ends, and never raised by the draining incast before it and after it.

mod common;

use std::time::Duration;

use common::{Daemon, metric};
use serde_json::Value;

/// 8 hosts (0–3 on leaf0, 4–7 on leaf1), 2 spines, every link 1 Gb/s: cheap to simulate
/// at one simulated second per second.
const FABRIC: &str = include_str!("../../docs/daemon/leaf-spine-1g.toml");

/// A draining burst (hosts 1 and 2 into host 0: 640 ms of PAUSE from leaf0 to their
/// NICs, the queues draining all along), then flows from leaf1's hosts into host 0 while
/// it storms (from 800 ms to 2.3 s, set on the command line).
const SCENARIO: &str = include_str!("../../docs/daemon/storm.toml");

/// Virtual time of an event, ns.
fn at(e: &Value) -> u64 {
    e["time"]["ns"].as_u64().unwrap()
}

#[test]
fn the_watchdog_detects_a_simulated_storm_restores_after_it_and_ignores_a_draining_burst() {
    let dir = common::temp_dir("pfcwd-files");
    let (fabric, scenario) = (dir.join("fabric.toml"), dir.join("storm.toml"));
    std::fs::write(&fabric, FABRIC).unwrap();
    std::fs::write(&scenario, SCENARIO).unwrap();
    let d = Daemon::start(
        "pfcwd",
        &[
            "--sim",
            scenario.to_str().unwrap(),
            "--fabric",
            fabric.to_str().unwrap(),
            "--ratio",
            "1",
            "--interval",
            "100ms",
            "--pfcwd-detection",
            "200ms",
            "--pfcwd-restoration",
            "200ms",
            "--pfcwd-action",
            "alert",
            "--storm-host",
            "0",
            "--storm-at",
            "800ms",
            "--storm-for",
            "1500ms",
        ],
    );
    // A storm is a critical alarm, and a critical alarm makes the health degraded (it
    // said "ok" all through the storm).
    d.wait_for(
        |d| {
            let h = d.health();
            h["pfc_storms"].as_array().is_some_and(|s| !s.is_empty()) && h["status"] == "degraded"
        },
        Duration::from_secs(60),
    );
    let stormed = "{switch=\"leaf0\",port=\"0\",priority=\"0\"}";
    let restored = format!("fabric_pfcwd_storms_restored_total{stormed}");
    // The second iteration's draining burst (from 2.3 s on) runs too before we look.
    d.wait_for(
        |d| {
            metric(&d.get("/metrics").text(), &restored) == Some(1.0)
                && d.json("/api/v1/telemetry")["time"]["ns"].as_u64() > Some(3_000_000_000)
        },
        Duration::from_secs(90),
    );
    let m = d.get("/metrics").text();
    // The storming host's leaf port: detected once, restored once.
    let detected = format!("fabric_pfcwd_storms_detected_total{stormed}");
    assert_eq!(metric(&m, &detected), Some(1.0), "{m}");
    let pauses = "fabric_pfc_pause_frames_total{switch=\"leaf0\",port=\"0\",direction=\"rx\",priority=\"0\"}";
    assert!(metric(&m, pauses).unwrap() >= 10_000.0, "{m}");
    // The incast's senders were paused (watched) and drained: never a storm.
    for host in ["host1-nic0", "host2-nic0"] {
        let rx = format!(
            "fabric_pfc_pause_frames_total{{switch=\"{host}\",port=\"0\",direction=\"rx\",priority=\"0\"}}"
        );
        assert!(metric(&m, &rx).unwrap() > 100.0, "{host} paused: {m}");
        let det = format!(
            "fabric_pfcwd_storms_detected_total{{switch=\"{host}\",port=\"0\",priority=\"0\"}}"
        );
        assert_eq!(metric(&m, &det), Some(0.0), "{host}: {m}");
    }
    // Storms (the stormed port and the queues its pause spread to) only while the host
    // storms, after the detection time; each restored after the storm ended.
    let ev = d.json("/api/v1/events?limit=10000");
    let ev = ev.as_array().unwrap();
    let storms: Vec<&Value> = ev
        .iter()
        .filter(|e| e["what"]["kind"] == "pfc-storm")
        .collect();
    let ends: Vec<&Value> = ev
        .iter()
        .filter(|e| e["what"]["kind"] == "pfc-storm-restored")
        .collect();
    assert!(!storms.is_empty(), "{ev:?}");
    assert_eq!(storms.len(), ends.len(), "{ev:?}");
    for s in &storms {
        assert!(
            (900_000_000..2_300_000_000).contains(&at(s)),
            "a storm outside [storm start + detection − a poll, storm end): {s}"
        );
    }
    for e in &ends {
        assert!(
            at(e) >= 2_300_000_000,
            "restored before the storm ended: {e}"
        );
    }
    let h = d.health();
    assert_eq!(h["pfc_storms"], serde_json::json!([]), "{h}");
    assert!(
        !h["alarms"]
            .as_array()
            .unwrap()
            .iter()
            .any(|a| a["kind"] == "pfc-storm"),
        "{h}"
    );
}
