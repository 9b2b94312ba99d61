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

/// `fabric serve --infiniband --ib-attach` on a subnet the test runs: ibsim on a k=4
/// fat-tree and OpenSM (`-s 1 -R file -U lfts.dump`) started here, the daemon given their
/// socket, pid, log and LFT file. It checks the subnet against the design (a wrong design
/// is refused naming what differs), loads fabric's tables, answers a cable cut on the
/// test's own ibsim console, refuses to cut cables itself, and on SIGTERM leaves OpenSM
/// and ibsim running.
#[test]
fn attached_to_a_running_opensm_it_routes_and_leaves_it_running() {
    use ib_testbed::opensm::{Engine, SmOptions};
    use ib_testbed::subnet::Subnet;
    use ib_testbed::tools::UmadPort;
    if !ib_testbed::require_tools() {
        return;
    }
    let f = topo::presets::build("fat-tree-k4").unwrap();
    let mut net = Subnet::start(std::sync::Arc::new(f), "attach").unwrap();
    let fab = net.design().fabric.clone();
    // OpenSM's file engine starts on tables of its own (min-hop from the export), which
    // fabric replaces when it attaches.
    let routes = topo::Routes::compute(&fab);
    let lft = topo::lft::Lft::compute(&fab, &routes);
    net.write_tables(&routes, &lft).unwrap();
    let lfts = net.lfts_path();
    let sm = net
        .start_sm(Engine::File(lfts.clone()), &SmOptions::default())
        .unwrap();
    let (pid, log) = (sm.pid().to_string(), sm.log().to_path_buf());
    let UmadPort::Sim { sock } = net.sim().tools().port().clone() else {
        unreachable!("a started subnet is simulated")
    };
    let attach = |fabric: &'static str| -> Vec<String> {
        [
            "--infiniband",
            "--ib-attach",
            "--fabric",
            fabric,
            "--ib-sim-socket",
            &sock,
            "--ib-sm-pid",
            &pid,
            "--ib-sm-log",
            log.to_str().unwrap(),
            "--ib-lfts",
            lfts.to_str().unwrap(),
        ]
        .map(String::from)
        .to_vec()
    };

    // A design the subnet is not: refused at start, naming what differs; OpenSM untouched.
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_fabric"))
        .arg("serve")
        .args(attach("leaf-spine-4x2"))
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "{err}");
    assert!(err.contains("the running subnet is not"), "{err}");
    assert!(net.sm().unwrap().gone().is_none());

    let mut args = attach("fat-tree-k4");
    args.extend(
        [
            "--interval",
            "500ms",
            "--drift-interval",
            "60s",
            "--request-timeout",
            "60s",
        ]
        .map(String::from),
    );
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let mut d = Daemon::start_with_token("infiniband-attach", &args);
    // It started nothing of its own.
    assert_eq!(
        processes_naming(&format!("fabric-ib-{}-", d.child.id())),
        Vec::<u32>::new()
    );
    let t = d.json("/api/v1/topology/check");
    assert_eq!((&t["ports"], &t["heard"]), (&96.into(), &96.into()), "{t}");
    assert_eq!(t["mismatches"], serde_json::json!([]), "{t}");
    let v = d.json("/api/v1/drift");
    assert_eq!(v["checked"], 20 * 36, "{v}");
    assert_eq!(v["entries"], serde_json::json!([]), "{v}");

    // fabric never cuts a cable of a subnet it did not start.
    let r = d.post("/api/v1/links/pod0-agg0:2/fail");
    assert_ne!(r.status, 200, "{}", r.text());
    assert!(r.text().contains("never cuts"), "{}", r.text());

    // A cable cut on the test's own ibsim console: heard, answered, loaded.
    let link = d.link_at("pod0-agg0", 2);
    let n = d.events_after(0).len();
    net.unlink(topo::LinkId(link as u32)).unwrap();
    let ev = d.wait_reroute(n, link, Duration::from_secs(60));
    assert!(
        ev.iter()
            .any(|e| e["what"]["kind"] == "link-down" && e["what"]["link"] == link),
        "{ev:?}"
    );
    let (differ, unreached) = drift(&d);
    assert!(
        differ.is_empty() && unreached.is_empty(),
        "{differ:?} {unreached:?}"
    );
    let t = d.json("/api/v1/topology/check");
    assert_eq!(t["mismatches"], serde_json::json!([]), "{t}");
    // And back.
    let n = d.events_after(0).len();
    net.relink(topo::LinkId(link as u32)).unwrap();
    let ev = d.wait_reroute(n, link, Duration::from_secs(60));
    assert!(ev.iter().any(|e| e["what"]["kind"] == "link-up"), "{ev:?}");
    let (differ, unreached) = drift(&d);
    assert!(
        differ.is_empty() && unreached.is_empty(),
        "{differ:?} {unreached:?}"
    );

    // SIGTERM: the daemon goes; OpenSM, ibsim and the LFT file stay.
    assert!(d.terminate().success());
    assert!(net.sm().unwrap().gone().is_none(), "OpenSM was stopped");
    assert!(net.sim().running(), "ibsim was stopped");
    assert!(lfts.exists());
    assert_eq!(net.discover().unwrap().len(), 96);
    // The test stops them (dropping the subnet).
    drop(net);
    assert_eq!(
        processes_naming(&format!("fabric-ib-{}-", std::process::id())),
        Vec::<u32>::new()
    );
}
