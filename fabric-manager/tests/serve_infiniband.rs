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
use serde_json::{Value, json};

/// How often the daemons here sample and check: drift only when asked (each check reads
/// every switch's table with `ibroute`), and requests that may wait for an OpenSM sweep.
const TIMING: [&str; 6] = [
    "--interval",
    "500ms",
    "--drift-interval",
    "60s",
    "--request-timeout",
    "60s",
];

/// Drift entries: (entries fabric's tables and the switches disagree on, LIDs a switch
/// reaches that neither holds).
fn drift(d: &Daemon) -> (Vec<Value>, Vec<Value>) {
    let v = d.json("/api/v1/drift");
    let e = v["entries"].as_array().unwrap_or_else(|| panic!("{v}"));
    e.iter()
        .cloned()
        .partition(|x| !x["prefix"].as_str().unwrap().contains("reachable"))
}

/// `ibnetdiscover` finds the design, port for port (failed cables left out).
fn assert_cabling_matches(d: &Daemon) {
    let t = d.json("/api/v1/topology/check");
    assert_eq!(t["mismatches"], json!([]), "{t}");
}

/// The subnet as started: every cable heard (16 host and 32 switch cables, each from both
/// ends), every switch holding fabric's table for all 36 LIDs.
fn assert_subnet_matches_design(d: &Daemon) {
    let t = d.json("/api/v1/topology/check");
    assert_eq!((&t["ports"], &t["heard"]), (&96.into(), &96.into()), "{t}");
    assert_cabling_matches(d);
    let v = d.json("/api/v1/drift");
    assert_eq!(v["checked"], 20 * 36, "{v}");
    assert_eq!(v["entries"], json!([]), "{v}");
}

/// Cuts or restores a cable (`act`) and waits for the daemon's answer: the `kind` event
/// (`link-down`, `link-up`) of `link`, a reroute, and then every switch holding fabric's
/// new table and every LID it reaches (core0-0 too, which after a cut reaches pod 0's
/// hosts, the SM's among them, only down and up through another pod).
fn assert_answered(d: &Daemon, link: u64, kind: &str, act: impl FnOnce()) {
    let n = d.events_after(0).len();
    act();
    let ev = d.wait_reroute(n, link, Duration::from_secs(60));
    assert!(
        ev.iter()
            .any(|e| e["what"]["kind"] == kind && e["what"]["link"] == link),
        "no {kind} of link {link}: {ev:?}"
    );
    let (differ, unreached) = drift(d);
    assert!(
        differ.is_empty(),
        "switches disagree with fabric: {differ:?}"
    );
    assert!(
        unreached.is_empty(),
        "LIDs reached, not held: {unreached:?}"
    );
}

/// The processes of the subnet that process `pid` started (their command lines name its
/// directory, `fabric-ib-<pid>-…`).
fn subnet_processes(pid: u32) -> Vec<u32> {
    let needle = format!("fabric-ib-{pid}-");
    std::fs::read_dir("/proc")
        .unwrap()
        .filter_map(|e| e.ok()?.file_name().to_str()?.parse::<u32>().ok())
        .filter(|p| {
            std::fs::read(format!("/proc/{p}/cmdline"))
                .is_ok_and(|c| String::from_utf8_lossy(&c).contains(&needle))
        })
        .collect()
}

#[test]
fn the_daemon_is_opensms_brain_and_eyes_on_ibsim() {
    if !testkit::tools::require(&ib_testbed::TOOLS, &[ib_testbed::UMAD2SIM]) {
        return;
    }
    let args = ["--infiniband", "--fabric", "fat-tree-k4"];
    let args: Vec<&str> = args.into_iter().chain(TIMING).collect();
    let mut d = Daemon::start_with_token("infiniband", &args);
    let pid = d.child.id();
    assert_eq!(subnet_processes(pid).len(), 2, "ibsim and opensm");
    let snap = d.json("/api/v1/telemetry");
    assert_eq!(snap["source"]["kind"], "infiniband", "{}", snap["source"]);
    assert_subnet_matches_design(&d);
    // PerfMgt counters move (ibsim counts the management datagrams it carries).
    d.wait_for(
        |d| {
            let s = d.json("/api/v1/telemetry");
            s["counters"]["tx_bytes"]
                .as_array()
                .is_some_and(|c| c.iter().any(|x| x.as_u64() > Some(0)))
        },
        common::WAIT,
    );

    // A cable cut on ibsim's console (through the API): detected, answered, loaded.
    let link = d.link_at("pod0-agg0", 2);
    assert_answered(&d, link, "link-down", || {
        let r = d.post("/api/v1/links/pod0-agg0:2/fail");
        assert_eq!(r.status, 200, "{}", r.text());
    });
    d.wait_for(
        |d| d.health()["links_down"].as_array().unwrap().len() == 1,
        common::WAIT,
    );
    // The cabling check leaves the failed cable out.
    assert_cabling_matches(&d);

    // Restored: detected, answered, loaded; nothing left.
    assert_answered(&d, link, "link-up", || {
        let r = d.post("/api/v1/links/pod0-agg0:2/restore");
        assert_eq!(r.status, 200, "{}", r.text());
    });
    let m = d.get("/metrics").text();
    assert_eq!(
        metric(&m, "fabric_reroute_duration_seconds_count"),
        Some(2.0)
    );

    // SIGTERM: OpenSM and ibsim stop, their directory goes.
    assert!(d.terminate().success());
    assert_eq!(subnet_processes(pid), Vec::<u32>::new());
    let leftovers: Vec<_> = std::fs::read_dir(std::env::temp_dir())
        .unwrap()
        .filter_map(|e| e.ok())
        .filter(|e| {
            e.file_name()
                .to_string_lossy()
                .starts_with(&format!("fabric-ib-{pid}-"))
        })
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
    if !testkit::tools::require(&ib_testbed::TOOLS, &[ib_testbed::UMAD2SIM]) {
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

    let args = attach("fat-tree-k4");
    let args: Vec<&str> = args.iter().map(String::as_str).chain(TIMING).collect();
    let mut d = Daemon::start_with_token("infiniband-attach", &args);
    // It started nothing of its own.
    assert_eq!(subnet_processes(d.child.id()), Vec::<u32>::new());
    assert_subnet_matches_design(&d);

    // fabric never cuts a cable of a subnet it did not start.
    let r = d.post("/api/v1/links/pod0-agg0:2/fail");
    assert_ne!(r.status, 200, "{}", r.text());
    assert!(r.text().contains("never cuts"), "{}", r.text());

    // A cable cut on the test's own ibsim console: heard, answered, loaded.
    let link = d.link_at("pod0-agg0", 2);
    assert_answered(&d, link, "link-down", || {
        net.unlink(topo::LinkId(link as u32)).unwrap()
    });
    assert_cabling_matches(&d);
    // And back.
    assert_answered(&d, link, "link-up", || {
        net.relink(topo::LinkId(link as u32)).unwrap()
    });

    // SIGTERM: the daemon goes; OpenSM, ibsim and the LFT file stay.
    assert!(d.terminate().success());
    assert!(net.sm().unwrap().gone().is_none(), "OpenSM was stopped");
    assert!(net.sim().running(), "ibsim was stopped");
    assert!(lfts.exists());
    assert_eq!(net.discover().unwrap().len(), 96);
    // The test stops them (dropping the subnet).
    drop(net);
    assert_eq!(subnet_processes(std::process::id()), Vec::<u32>::new());
}
