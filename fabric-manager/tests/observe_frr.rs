//! `fabric serve --observe` on a fabric it did not build (root, and Debian's frr,
//! lldpd, prometheus-node-exporter and prometheus): the FRR testbed (fat-tree k=4, eBGP
//! with BFD, lldpd and node_exporter per switch on a management network, a real
//! Prometheus). The daemon reports the cabling correct and every FIB matching the
//! design, refuses to fail a link (and nothing changes), sees a link that another
//! program sets down (from node_exporter's carrier through Prometheus) and BGP's repair
//! (every FIB matching the tables of the live topology), and flags a route injected by
//! hand. The real `fabric-tui --connect` runs in tmux beside it, under UDP traffic
//! between two pods: the links table shows the traffic's rate on the top link (idle
//! before), and the header shows the downed link.

mod common;

use std::net::{SocketAddr, UdpSocket};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use common::{Daemon, ip};
use serde_json::Value;
use testkit::tmux::{self, Tmux};
use topo::{NodeId, Rate, generators};
use veth::frr::{FrrOptions, FrrTestbed};
use veth::routed::{Family, ifname};

/// Root and the FRR testbed's tools, or skipped as the README says (the shared check).
fn enabled() -> bool {
    veth::frr::tests_enabled().unwrap_or_else(|why| panic!("{why}"))
}

/// `fabric-tui`, built beside `fabric` (`cargo test --workspace` builds both).
fn tui_bin() -> std::path::PathBuf {
    let bin = std::path::Path::new(env!("CARGO_BIN_EXE_fabric")).with_file_name("fabric-tui");
    assert!(
        bin.exists(),
        "{} is missing: `cargo test --workspace` builds it, or run `cargo build -p tui --profile PROFILE` first",
        bin.display()
    );
    bin
}

/// `cmd` in a 160×40 tmux session.
fn tmux(tag: &str, cmd: &str) -> Tmux {
    Tmux::start(&format!("observe-{tag}"), cmd, (160, 40))
}

/// The rate column of the links table's first row (sorted by utilisation), in b/s.
fn top_link_rate(screen: &str) -> Option<f64> {
    let mut rows = screen.lines().skip_while(|l| !l.contains("util▼"));
    rows.next()?;
    let row = rows.next()?;
    let cell = row.split_whitespace().find(|w| w.ends_with("b/s"))?;
    let num = cell.trim_end_matches("b/s");
    let (digits, scale) = match num.chars().last()? {
        'k' => (&num[..num.len() - 1], 1e3),
        'M' => (&num[..num.len() - 1], 1e6),
        'G' => (&num[..num.len() - 1], 1e9),
        'T' => (&num[..num.len() - 1], 1e12),
        _ => (num, 1.0),
    };
    digits.parse::<f64>().ok().map(|v| v * scale)
}

/// The leaf host `h` hangs off.
fn hosts_leaf(f: &topo::Fabric, h: NodeId) -> NodeId {
    f.peer(h, 0)
}

/// UDP datagrams from host `src` to host `dst` (about 200 Mb/s, paced) until `stop`.
fn traffic(
    tb: &FrrTestbed,
    src: NodeId,
    dst: NodeId,
    stop: Arc<AtomicBool>,
) -> std::thread::JoinHandle<u64> {
    let rt = tb.routed();
    let from = rt.host_addr(src, Family::V4).unwrap();
    let to = SocketAddr::new(rt.host_addr(dst, Family::V4).unwrap(), 9);
    let sock = veth::netns::in_netns(rt.netns(src), || UdpSocket::bind(SocketAddr::new(from, 0)))
        .unwrap()
        .unwrap();
    std::thread::spawn(move || {
        let msg = [0x5au8; 1400];
        let mut sent = 0;
        while !stop.load(Ordering::Relaxed) {
            for _ in 0..20 {
                sent += sock.send_to(&msg, to).is_ok() as u64;
            }
            std::thread::sleep(Duration::from_millis(1));
        }
        sent
    })
}

#[test]
fn observe_mode_checks_cabling_and_fibs_sees_bgp_repair_and_a_hand_made_route() {
    if !enabled() || !tmux::available() {
        return;
    }
    let f = generators::fat_tree(4, Rate::gbps(100)).unwrap();
    let tb =
        FrrTestbed::converged(f.clone(), &FrrOptions::default(), Duration::from_secs(90)).unwrap();

    let token = common::token_file("observe-frr");
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
            // A drift check reads 20 switches' FIBs; on a loaded machine (load 12 in one
            // run) that took longer than the default 10 s, and /api/v1/drift answered 503.
            "--request-timeout",
            "60s",
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

    // The same FIBs read through FRR (`--fib-from vtysh`) by a second observer.
    let mut vty = Daemon::start(
        "observe-frr-vtysh",
        &[
            "--observe",
            "--fabric",
            "fat-tree-k4",
            "--prometheus",
            &prom,
            "--fib-netns",
            &prefix,
            "--fib-from",
            "vtysh",
            "--drift-interval",
            "1s",
            "--request-timeout",
            "60s",
        ],
    );
    vty.wait_for(
        |d| d.json("/api/v1/drift")["checked"] == 320,
        Duration::from_secs(60),
    );
    let drift = vty.json("/api/v1/drift");
    assert_eq!(drift["entries"], Value::Array(vec![]), "{drift}");
    assert!(vty.terminate().success());

    // Counters flow from node_exporter through Prometheus.
    daemon.wait_for(
        |d| {
            let t = d.json("/api/v1/telemetry");
            t["totals"]["tx_bytes"].as_u64().unwrap_or(0) > 0
        },
        common::WAIT,
    );

    // The real TUI on the daemon's stream: idle links first, then the traffic's rate on
    // the busiest link.
    let tui = tmux(
        "connect",
        &format!("{} --connect {}", tui_bin().display(), daemon.addr),
    );
    tui.wait_for("the live header", |s| s.contains("● LIVE fabric serve"));
    tui.keys(&["Tab"]);
    let idle = tui.wait_for("the links table", |s| top_link_rate(s).is_some());
    let idle = top_link_rate(&idle).unwrap();
    let hosts: Vec<NodeId> = f.hosts().collect();
    let stop = Arc::new(AtomicBool::new(false));
    let sender = traffic(&tb, hosts[0], hosts[hosts.len() - 1], stop.clone());
    let busy = tui.wait_for("the traffic's rate on the top link", |s| {
        top_link_rate(s).is_some_and(|r| r > 20e6 && r > 10.0 * idle)
    });
    assert!(busy.contains("fat-tree-k4"), "{busy}");

    // `fabric-tui --prometheus --fabric`: the switches' node_exporter series straight from
    // Prometheus, given the design; a leaf whose exporter goes silent greys its host links.
    let nodes = tmux(
        "nodes",
        &format!(
            "{} --prometheus {prom} --fabric fat-tree-k4 --interval 1",
            tui_bin().display()
        ),
    );
    nodes.wait_for("the node_exporter source", |s| {
        s.contains("● LIVE prometheus") && s.contains("(node_exporter)")
    });
    nodes.keys(&["Tab"]);
    nodes.wait_for("the traffic's rate from node_exporter", |s| {
        top_link_rate(s).is_some_and(|r| r > 20e6)
    });
    let leaf_ns = tb
        .routed()
        .netns(hosts_leaf(&f, hosts[0]))
        .name()
        .to_string();
    ip(&["-n", &leaf_ns, "link", "set", "mgmt0", "down"]);
    nodes.wait_for("the silent leaf's host links greyed", |s| {
        s.contains("2 links stale")
    });
    ip(&["-n", &leaf_ns, "link", "set", "mgmt0", "up"]);
    nodes.wait_for("the leaf back", |s| {
        s.contains("(node_exporter)") && !s.contains("stale")
    });
    nodes.keys(&["q"]);
    drop(nodes);

    // Observe-only: a request to fail a link is refused and nothing changes.
    let r = daemon.post("/api/v1/links/20/fail");
    assert_ne!(r.status, 200, "{}", r.text());
    assert!(r.text().contains("only observes"), "{}", r.text());
    let r = daemon.post("/api/v1/drift/repair");
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
        common::WAIT,
    );
    daemon.wait_for(
        |d| {
            let dr = d.json("/api/v1/drift");
            dr["entries"] == Value::Array(vec![])
        },
        Duration::from_secs(60),
    );
    // The TUI shows the downed link, with the traffic still flowing around it.
    // Waited for, not read from the first screen that shows the link down: rates come
    // from counters Prometheus scrapes every second, read by the daemon every 500 ms, so
    // an interval in which no switch on the traffic's path was scraped again shows the
    // path idle (one run read 22.5 kb/s there), as does the moment BGP moves the flow.
    tui.wait_for("the downed link with the traffic around it", |s| {
        s.contains("✖ 1 link down") && top_link_rate(s).is_some_and(|r| r > 20e6)
    });
    stop.store(true, Ordering::Relaxed);
    assert!(sender.join().unwrap() > 0);
    tui.keys(&["q"]);
    drop(tui);
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
        common::WAIT,
    );

    assert!(daemon.terminate().success());
    tb.teardown().unwrap();
}
