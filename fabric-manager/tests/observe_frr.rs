//! `fabric serve --observe` on a fabric it did not build (root, and Debian's frr,
//! lldpd, prometheus-node-exporter and prometheus): the FRR testbed (fat-tree k=4, eBGP
//! with BFD, lldpd and node_exporter per switch on a management network, a real
//! Prometheus). The daemon reports the cabling correct and every FIB matching the
//! design, refuses to fail a link (and nothing changes), sees a link that another
//! program sets down (from node_exporter's carrier through Prometheus) and BGP's repair
//! (every FIB matching the tables of the live topology), and flags a route injected by
//! hand.

mod common;

use std::process::Command;
use std::time::Duration;

use common::Daemon;
use serde_json::Value;
use topo::{NodeId, Rate, Routes, generators};
use veth::frr::{FrrOptions, FrrTestbed};
use veth::routed::ifname;

const TOKEN: &str = "test-token-0123456789abcdef";

fn enabled() -> bool {
    match veth::root_tests_enabled() {
        Ok(false) => return false,
        Ok(true) => {}
        Err(why) => panic!("{why}"),
    }
    let missing: Vec<&str> = [
        "/usr/lib/frr/bgpd",
        "/usr/lib/frr/bfdd",
        "/usr/sbin/lldpd",
        "/usr/bin/prometheus-node-exporter",
        "/usr/bin/prometheus",
    ]
    .into_iter()
    .filter(|p| !std::path::Path::new(p).exists())
    .collect();
    if missing.is_empty() {
        return true;
    }
    if std::env::var("FABRIC_SKIP_TOOLS").as_deref() == Ok("1") {
        return false;
    }
    panic!(
        "missing {missing:?}: run scripts/install-deps.sh as root, or set FABRIC_SKIP_TOOLS=1 to skip"
    );
}

fn ip(args: &[&str]) {
    let out = Command::new("ip").args(args).output().unwrap();
    assert!(
        out.status.success(),
        "ip {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn observe_mode_checks_cabling_and_fibs_sees_bgp_repair_and_a_hand_made_route() {
    if !enabled() {
        return;
    }
    let f = generators::fat_tree(4, Rate::gbps(100)).unwrap();
    let tb = FrrTestbed::build(f.clone(), &FrrOptions::default()).unwrap();
    let d = tb
        .wait_converged(&Routes::compute(&f), Duration::from_secs(90))
        .unwrap();
    assert!(
        d.entries.is_empty(),
        "BGP did not converge: {:?}",
        d.entries
    );

    let dir = common::temp_dir("observe-frr-token");
    let token = dir.join("token");
    std::fs::write(&token, TOKEN).unwrap();
    let prom = format!("http://{}", tb.prometheus().unwrap());
    let prefix = tb.routed().testbed().ns_name("");
    let lldp = tb.dir().to_str().unwrap().to_string();
    let mut daemon = Daemon::start(
        "observe-frr",
        &[
            "--observe",
            "--fabric",
            "fat-tree-k4",
            "--prometheus",
            &prom,
            "--lldp-dir",
            &lldp,
            "--fib-netns",
            &prefix,
            "--interval",
            "500ms",
            "--drift-interval",
            "1s",
            "--token-file",
            token.to_str().unwrap(),
        ],
    );

    // Cabling: every switch–switch port (32 links, 64 ports) hears the design's peer.
    daemon.wait_for(
        |d| {
            let r = d.json("/api/v1/topology/check");
            r["ports"] == 64 && r["heard"] == 64 && r["mismatches"] == Value::Array(vec![])
        },
        Duration::from_secs(60),
    );
    let r = daemon.json("/api/v1/topology/check");
    assert_eq!(r["mismatches"], Value::Array(vec![]), "{r}");

    // Every FIB matches the design (20 switches × 8 leaves × 2 families).
    let drift = daemon.json("/api/v1/drift");
    assert_eq!(drift["checked"], 320, "{drift}");
    assert_eq!(drift["entries"], Value::Array(vec![]), "{drift}");

    // Counters flow from node_exporter through Prometheus.
    daemon.wait_for(
        |d| {
            let t = d.json("/api/v1/telemetry");
            t["totals"]["tx_bytes"].as_u64().unwrap_or(0) > 0
        },
        Duration::from_secs(30),
    );

    // Observe-only: a request to fail a link is refused and nothing changes.
    let auth = format!("Bearer {TOKEN}");
    let r = daemon.request(
        "POST",
        "/api/v1/links/20/fail",
        &[("Authorization", &auth)],
        b"",
    );
    assert_ne!(r.status, 200, "{}", r.text());
    assert!(r.text().contains("only observes"), "{}", r.text());
    let r = daemon.request(
        "POST",
        "/api/v1/drift/repair",
        &[("Authorization", &auth)],
        b"",
    );
    assert_ne!(r.status, 200, "{}", r.text());
    let l = *f.link(topo::LinkId(20));
    assert!(tb.routed().nl(l.a).oper_up(&ifname(l.a_port)).unwrap());
    let drift = daemon.json("/api/v1/drift");
    assert_eq!(drift["entries"], Value::Array(vec![]), "{drift}");

    // A switch–switch link set down by another program (`ip`): detected, and BGP's
    // repair seen as every FIB matching the live topology's tables.
    let (link, l) = f
        .links()
        .iter()
        .enumerate()
        .find(|(_, l)| !f.is_host(l.a) && !f.is_host(l.b))
        .unwrap();
    let ns = tb.routed().netns(l.a).name().to_string();
    ip(&["-n", &ns, "link", "set", &ifname(l.a_port), "down"]);
    daemon.wait_for(
        |d| {
            let ev = d.get("/api/v1/events").text();
            ev.contains("link-down") && ev.contains(&format!("\"link\":{link}"))
        },
        Duration::from_secs(30),
    );
    daemon.wait_for(
        |d| {
            let dr = d.json("/api/v1/drift");
            dr["entries"] == Value::Array(vec![])
        },
        Duration::from_secs(60),
    );
    ip(&["-n", &ns, "link", "set", &ifname(l.a_port), "up"]);

    // A route injected by hand (more specific than a remote ToR prefix) is flagged.
    let plan = topo::addressing::AddressPlan::new(&f).unwrap();
    let leaves: Vec<NodeId> = f
        .switches()
        .filter(|&s| f.tier(s) == topo::model::TIER_LEAF)
        .collect();
    let (here, there) = (leaves[0], leaves[leaves.len() - 1]);
    let p = plan.tor_prefix_v4(there).unwrap();
    let host = std::net::Ipv4Addr::from(u32::from(p.addr) + 1);
    let uplink = (0..f.degree(here) as topo::Port)
        .find(|&q| !f.is_host(f.peer(here, q)))
        .unwrap();
    let ns = tb.routed().netns(here).name().to_string();
    ip(&[
        "-n",
        &ns,
        "route",
        "add",
        &format!("{host}/32"),
        "dev",
        &ifname(uplink),
    ]);
    daemon.wait_for(
        |d| {
            let dr = d.json("/api/v1/drift");
            dr["entries"].as_array().is_some_and(|e| {
                e.iter().any(|x| {
                    x["kind"] == "extra"
                        && x["prefix"] == format!("{host}/32")
                        && x["switch"] == f.node_name(here)
                })
            })
        },
        Duration::from_secs(30),
    );

    assert!(daemon.terminate().success());
    tb.teardown().unwrap();
}
