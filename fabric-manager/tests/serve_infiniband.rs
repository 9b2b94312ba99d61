//! `fabric serve --infiniband` on a real OpenSM (issue 20): the daemon starts ibsim on a
//! k=4 fat-tree from the `.net` export and OpenSM (`-s 1 -R file`) on fabric's tables;
//! it reports the cabling correct (`ibnetdiscover` against the design) and every switch's
//! table equal to fabric's (`ibroute`); a cable cut on ibsim's console is heard (trap 128),
//! answered with new tables OpenSM loads, and read back; the cable restored, the same;
//! SIGTERM stops OpenSM and ibsim and removes their files. Needs Debian's opensm,
//! ibsim-utils, libumad2sim0, infiniband-diags (`scripts/install-deps.sh`); no root.

mod common;

use std::time::Duration;

use common::{Daemon, metric};
use serde_json::Value;

/// Drift entries: (entries fabric's tables and the switches disagree on, LIDs a switch
/// reaches that neither holds).
fn drift(d: &Daemon) -> (Vec<Value>, Vec<Value>) {
    let v = d.json("/api/v1/drift");
    let e = v["entries"].as_array().unwrap_or_else(|| panic!("{v}"));
    e.iter()
        .cloned()
        .partition(|x| !x["prefix"].as_str().unwrap().contains("reachable"))
}

/// The processes whose command line names `needle`.
fn processes_naming(needle: &str) -> Vec<u32> {
    std::fs::read_dir("/proc")
        .unwrap()
        .filter_map(|e| e.ok()?.file_name().to_str()?.parse::<u32>().ok())
        .filter(|pid| {
            std::fs::read(format!("/proc/{pid}/cmdline"))
                .is_ok_and(|c| String::from_utf8_lossy(&c).contains(needle))
        })
        .collect()
}

#[test]
fn the_daemon_is_opensms_brain_and_eyes_on_ibsim() {
    if !ib_testbed::require_tools() {
        return;
    }
    let mut d = Daemon::start_with_token(
        "infiniband",
        &[
            "--infiniband",
            "--fabric",
            "fat-tree-k4",
            "--interval",
            "500ms",
            "--drift-interval",
            "60s",
            "--request-timeout",
            "60s",
        ],
    );
    let subnet = format!("fabric-ib-{}-", d.child.id());
    assert_eq!(processes_naming(&subnet).len(), 2, "ibsim and opensm");
    let snap = d.json("/api/v1/telemetry");
    assert_eq!(snap["source"]["kind"], "infiniband", "{}", snap["source"]);

    // Cabling: ibnetdiscover finds the design, port for port.
    let t = d.json("/api/v1/topology/check");
    assert_eq!((&t["ports"], &t["heard"]), (&96.into(), &96.into()), "{t}");
    assert_eq!(t["mismatches"], serde_json::json!([]), "{t}");
    // Every switch holds fabric's table, and every LID it reaches.
    let v = d.json("/api/v1/drift");
    assert_eq!(v["checked"], 20 * 36, "{v}");
    assert_eq!(v["entries"], serde_json::json!([]), "{v}");
    // PerfMgt counters move (ibsim counts the management datagrams it carries).
    d.wait_for(
        |d| {
            let s = d.json("/api/v1/telemetry");
            s["counters"]["tx_bytes"]
                .as_array()
                .is_some_and(|c| c.iter().any(|x| x.as_u64() > Some(0)))
        },
        Duration::from_secs(20),
    );

    // A cable cut on ibsim's console (through the API): detected, answered, loaded.
    let link = d.link_at("pod0-agg0", 2);
    let n = d.events_after(0).len();
    let r = d.post("/api/v1/links/pod0-agg0:2/fail");
    assert_eq!(r.status, 200, "{}", r.text());
    let ev = d.wait_reroute(n, link, Duration::from_secs(60));
    assert!(
        ev.iter()
            .any(|e| e["what"]["kind"] == "link-down" && e["what"]["link"] == link),
        "{ev:?}"
    );
    let (differ, unreached) = drift(&d);
    assert!(
        differ.is_empty(),
        "switches disagree with fabric: {differ:?}"
    );
    // Every switch holds every LID it reaches (core0-0 too, which reaches pod 0's hosts,
    // the SM's among them, only down and up through another pod).
    assert!(unreached.is_empty(), "{unreached:?}");
    d.wait_for(
        |d| d.health()["links_down"].as_array().unwrap().len() == 1,
        Duration::from_secs(10),
    );
    // The cabling check leaves the failed cable out.
    let t = d.json("/api/v1/topology/check");
    assert_eq!(t["mismatches"], serde_json::json!([]), "{t}");

    // Restored: detected, answered, loaded; nothing left.
    let n = d.events_after(0).len();
    let r = d.post("/api/v1/links/pod0-agg0:2/restore");
    assert_eq!(r.status, 200, "{}", r.text());
    let ev = d.wait_reroute(n, link, Duration::from_secs(60));
    assert!(ev.iter().any(|e| e["what"]["kind"] == "link-up"), "{ev:?}");
    let (differ, unreached) = drift(&d);
    assert!(
        differ.is_empty() && unreached.is_empty(),
        "{differ:?} {unreached:?}"
    );
    let m = d.get("/metrics").text();
    assert_eq!(
        metric(&m, "fabric_reroute_duration_seconds_count"),
        Some(2.0)
    );

    // SIGTERM: OpenSM and ibsim stop, their directory goes.
    assert!(d.terminate().success());
    assert_eq!(processes_naming(&subnet), Vec::<u32>::new());
    let leftovers: Vec<_> = std::fs::read_dir(std::env::temp_dir())
        .unwrap()
        .filter_map(|e| e.ok())
        .filter(|e| e.file_name().to_string_lossy().starts_with(&subnet))
        .collect();
    assert!(leftovers.is_empty(), "{leftovers:?}");
}
