//! `fabric serve --testbed` against real namespaces (root): the daemon builds a routed
//! veth testbed (fat-tree k=4, next-hop objects), sees links go down and up — set by
//! another netlink client or through its API — in its multicast link subscription,
//! repairs and restores the kernel's routes, records the reroute times, lists
//! unreachable pairs, and deletes every namespace on SIGTERM.

mod common;

use std::time::Duration;

use common::{Daemon, WAIT, ip, metric, token_file};
use serde_json::Value;

fn enabled() -> bool {
    match veth::root_tests_enabled() {
        Ok(on) => on,
        Err(why) => panic!("{why}"),
    }
}

/// `fabric serve SOURCE… --fabric fat-tree-k4` with a 100 ms interval, drift checks
/// every 300 ms and a token.
fn start(name: &str, source: &[&str]) -> Daemon {
    start_in(name, None, source)
}

/// [`start`], inside namespace `netns` when given (`ip netns exec`).
fn start_in(name: &str, netns: Option<&str>, source: &[&str]) -> Daemon {
    let file = token_file(name);
    let mut args = source.to_vec();
    args.extend_from_slice(&[
        "--fabric",
        "fat-tree-k4",
        "--interval",
        "100ms",
        "--drift-interval",
        "300ms",
        "--token-file",
        file.to_str().unwrap(),
    ]);
    match netns {
        Some(ns) => Daemon::start_in(name, ns, &args),
        None => Daemon::start(name, &args),
    }
}

/// The daemon's namespaces (their names carry its pid).
fn namespaces_of(d: &Daemon) -> Vec<String> {
    veth::netns::list_ours()
        .into_iter()
        .filter(|n| veth::netns::owner_pid(n) == Some(d.child.id()))
        .collect()
}

/// Waits up to [`WAIT`] for a `reroute` event of `link` after event index `since`; its
/// repaired time (ns) and the events seen (including it).
fn wait_reroute(d: &Daemon, since: usize, link: u64) -> (u64, Vec<Value>) {
    let ev = d.wait_reroute(since, link, WAIT);
    let last = ev.last().unwrap();
    (last["what"]["repaired_ns"].as_u64().unwrap(), ev)
}

fn event_count(d: &Daemon) -> usize {
    d.events_after(0).len()
}

fn percentile(v: &mut [f64], q: f64) -> f64 {
    v.sort_by(f64::total_cmp);
    let rank = ((q * v.len() as f64).ceil() as usize).clamp(1, v.len());
    v[rank - 1]
}

#[test]
fn the_daemon_owns_a_routed_testbed_repairs_failures_and_deletes_it_on_sigterm() {
    if !enabled() {
        return;
    }
    let mut d = start("testbed", &["--testbed"]);
    let ns = namespaces_of(&d);
    assert_eq!(ns.len(), 36, "16 hosts + 20 switches: {ns:?}");
    let topo = d.json("/api/v1/topology");
    assert_eq!(topo["name"], "fat-tree-k4", "{topo}");
    // Telemetry from the kernel: every port up, the source says what it is.
    let snap = d.json("/api/v1/telemetry");
    assert_eq!(
        snap["source"]["kind"], "routed-testbed",
        "{}",
        snap["source"]
    );
    let m = d.get("/metrics").text();
    let up: Vec<&str> = m
        .lines()
        .filter(|l| l.starts_with("fabric_port_up{"))
        .collect();
    assert_eq!(up.len(), 96, "every port");
    assert!(up.iter().all(|l| l.ends_with(" 1")), "a port down at start");

    // Cabling as the spec says: every port hears its neighbour over LLDP.
    let t = d.json("/api/v1/topology/check");
    assert_eq!((&t["ports"], &t["heard"]), (&96.into(), &96.into()), "{t}");
    assert_eq!(t["mismatches"], serde_json::json!([]), "{t}");
    d.wait_for(|d| d.health()["topology"]["heard"] == 96, WAIT);
    assert!(
        d.get("/metrics")
            .text()
            .contains("fabric_topology_mismatches{kind=\"miswired\"} 0")
    );

    // 1. An outside failure: another netlink client sets core1-1's port 0 down.
    let core = topo_node(&topo, "core1-1");
    let ns_core = ns
        .iter()
        .find(|n| n.ends_with(&format!("-s{}", core - 16)))
        .unwrap();
    let outside = veth::netlink::Nl::open(&veth::netns::Netns::from_name(ns_core)).unwrap();
    let n0 = event_count(&d);
    outside.set_down("p0").unwrap();
    let link = d.link_at("core1-1", 0);
    let (repaired_ns, ev) = wait_reroute(&d, n0, link);
    assert!(
        ev.iter().any(|e| e["what"]["kind"] == "link-down"),
        "{ev:?}"
    );
    assert!(
        repaired_ns > 0 && repaired_ns < 1_000_000_000,
        "{repaired_ns}"
    );
    d.wait_for(
        |d| d.health()["links_down"].as_array().unwrap().len() == 1,
        WAIT,
    );
    let m = d.get("/metrics").text();
    assert!(
        m.contains("fabric_port_up{switch=\"core1-1\",port=\"0\"} 0"),
        "{m}"
    );
    assert_eq!(
        metric(&m, "fabric_reroute_duration_seconds_count"),
        Some(1.0)
    );
    // The kernel's tables follow: the aggregation switch no longer names the link.
    let health = d.health();
    assert_eq!(health["unreachable_pairs"], 0, "{health}");
    let n1 = event_count(&d);
    outside.set_up("p0").unwrap();
    let (_, ev) = wait_reroute(&d, n1, link);
    assert!(ev.iter().any(|e| e["what"]["kind"] == "link-up"), "{ev:?}");
    d.wait_for(
        |d| d.health()["links_down"].as_array().unwrap().is_empty(),
        WAIT,
    );

    // 2. A host link failed through the API: its host is cut off, the pairs are counted.
    let n2 = event_count(&d);
    let r = d.post("/api/v1/links/pod0-leaf0:0/fail");
    assert_eq!(r.status, 200, "{}", r.text());
    let host_link = d.link_at("pod0-leaf0", 0);
    wait_reroute(&d, n2, host_link);
    d.wait_for(
        |d| d.health()["unreachable_pairs"].as_u64() == Some(30),
        WAIT,
    );
    let r = d.post("/api/v1/links/pod0-leaf0:0/fail");
    assert_eq!(r.status, 409, "{}", r.text());
    let n3 = event_count(&d);
    let r = d.post("/api/v1/links/pod0-leaf0:0/restore");
    assert_eq!(r.status, 200, "{}", r.text());
    wait_reroute(&d, n3, host_link);
    d.wait_for(
        |d| d.health()["unreachable_pairs"].as_u64() == Some(0),
        WAIT,
    );

    // 3. Twenty aggregation→core failures through the API, each restored before the
    //    next: the daemon's event-to-repaired time per failure.
    let mut down_ms = Vec::new();
    let uplinks: Vec<(String, u16)> = (0..4)
        .flat_map(|p| (0..2).map(move |a| format!("pod{p}-agg{a}")))
        .flat_map(|s| [(s.clone(), 2), (s, 3)])
        .collect();
    for i in 0..20 {
        let (sw, port) = &uplinks[i % uplinks.len()];
        let l = d.link_at(sw, *port);
        let n = event_count(&d);
        let r = d.post(&format!("/api/v1/links/{sw}:{port}/fail"));
        assert_eq!(r.status, 200, "{}", r.text());
        let (ns, _) = wait_reroute(&d, n, l);
        down_ms.push(ns as f64 * 1e-6);
        let n = event_count(&d);
        let r = d.post(&format!("/api/v1/links/{sw}:{port}/restore"));
        assert_eq!(r.status, 200, "{}", r.text());
        wait_reroute(&d, n, l);
    }
    let (p50, p99) = (
        percentile(&mut down_ms, 0.5),
        percentile(&mut down_ms, 0.99),
    );
    eprintln!(
        "fat-tree-k4 testbed through the daemon, 20 aggregation→core failures: link down → routes repaired p50 {p50:.2} ms, p99 {p99:.2} ms"
    );
    assert!(p99 < 500.0, "p99 {p99} ms: {down_ms:?}");
    let m = d.get("/metrics").text();
    // Every reroute is in the histogram and in the event log: at least 1 + 1 + 1 + 1
    // (outside down/up, host link fail/restore) + 40. Under load the kernel can report one
    // change twice (carrier, then operstate), which reroutes again: both counts move.
    let reroutes = d
        .json("/api/v1/events?limit=1000")
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["what"]["kind"] == "reroute")
        .count();
    assert!(reroutes >= 44, "{reroutes} reroute events");
    assert_eq!(
        metric(&m, "fabric_reroute_duration_seconds_count"),
        Some(reroutes as f64)
    );
    assert_eq!(metric(&m, "fabric_daemon_source_errors_total"), Some(0.0));

    // 4. Drift: none after all that; then routes changed behind the daemon's back.
    let drift = d.json("/api/v1/drift");
    // 20 switches × 8 destination leaves × 2 families.
    assert_eq!(drift["checked"], 20 * 8 * 2, "{drift}");
    assert_eq!(drift["entries"], serde_json::json!([]), "{drift}");
    let routes = d.json("/api/v1/routes/pod0-agg0");
    let to_pod1 = routes["routes"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["dst"] == "pod1-leaf0")
        .unwrap_or_else(|| panic!("{routes}"));
    let prefix = to_pod1["prefix"].as_str().unwrap().to_string();
    let agg = topo_node(&topo, "pod0-agg0");
    let ns_agg = ns
        .iter()
        .find(|n| n.ends_with(&format!("-s{}", agg - 16)))
        .unwrap();
    ip(&["-n", ns_agg, "route", "del", &prefix]);
    // The periodic check (every 300 ms) sees it: health, alarm, metric.
    d.wait_for(|d| d.health()["route_drift"]["missing"] == 1, WAIT);
    let h = d.health();
    assert!(has_alarm(&h, "route-drift", "minor"), "{h}");
    assert_eq!(h["status"], "degraded");
    let m = d.get("/metrics").text();
    assert!(
        m.contains("fabric_route_drift_entries{kind=\"missing\"} 1"),
        "{m}"
    );
    // A route replaced by a legacy one through a single gateway: different.
    let core = topo_node(&topo, "core0-0");
    let ns_core = ns
        .iter()
        .find(|n| n.ends_with(&format!("-s{}", core - 16)))
        .unwrap();
    let r = d.json("/api/v1/routes/core0-0");
    let e = &r["routes"][0];
    let via = e["next_hops"][0]["via"].as_str().unwrap();
    let dst = e["prefix"].as_str().unwrap();
    ip(&["-n", ns_core, "route", "replace", dst, "via", via]);
    let drift = d.json("/api/v1/drift");
    let entries = drift["entries"].as_array().unwrap();
    assert_eq!(entries.len(), 2, "{drift}");
    let missing = entries.iter().find(|e| e["kind"] == "missing").unwrap();
    assert_eq!(
        (&missing["switch"], &missing["prefix"], &missing["family"]),
        (
            &serde_json::json!("pod0-agg0"),
            &serde_json::json!(prefix),
            &serde_json::json!("V4")
        ),
        "{drift}"
    );
    let different = entries.iter().find(|e| e["kind"] == "different").unwrap();
    assert_eq!(different["switch"], "core0-0", "{drift}");
    assert_eq!(different["kernel_nhid"], Value::Null, "{drift}");

    // 5. SIGTERM: exit 0, every namespace deleted.
    let status = d.terminate();
    assert!(status.success(), "{status:?}: {}", d.stderr());
    assert!(d.stderr().contains("namespaces deleted"), "{}", d.stderr());
    assert!(namespaces_of(&d).is_empty(), "{:?}", namespaces_of(&d));
}

/// Whether the health report `h` has an active alarm `kind` of `severity`.
fn has_alarm(h: &Value, kind: &str, severity: &str) -> bool {
    h["alarms"]
        .as_array()
        .unwrap()
        .iter()
        .any(|a| a["kind"] == kind && a["severity"] == severity)
}

/// `ip ARGS` (iproute2), as another program on the host would.
/// A routed fat-tree k=4 testbed built by the test (legacy multipath routes): routers
/// that exist before the daemon.
fn existing_k4() -> veth::routed::RoutedTestbed {
    let f = topo::presets::build("fat-tree-k4").unwrap();
    veth::routed::RoutedTestbed::build_with(f, &Default::default()).unwrap()
}

/// Node id of `name` in the topology JSON.
fn topo_node(topo: &Value, name: &str) -> u32 {
    topo["nodes"]["name"]
        .as_array()
        .unwrap()
        .iter()
        .position(|n| n == name)
        .unwrap_or_else(|| panic!("no node {name}")) as u32
}

#[test]
fn the_daemon_adopts_existing_namespaces_survives_a_deleted_veth_and_leaves_them() {
    if !enabled() {
        return;
    }
    // Namespaces that exist before the daemon (as `fabric testbed up` leaves them).
    let rt = existing_k4();
    let prefix = format!("{}{}-", veth::netns::PREFIX, rt.testbed().run_id());
    let mut d = start("adopt", &["--netns-prefix", &prefix]);
    assert!(namespaces_of(&d).is_empty(), "the daemon made none");
    // It re-programmed every switch with next-hop groups: no drift.
    let drift = d.json("/api/v1/drift");
    assert_eq!(drift["entries"], serde_json::json!([]), "{drift}");
    let agg = rt.fabric().name_index()["pod1-agg1"];
    let nh = std::process::Command::new("ip")
        .args(["-n", rt.netns(agg).name(), "route"])
        .output()
        .unwrap();
    assert!(String::from_utf8_lossy(&nh.stdout).contains("nhid"));

    // A veth deleted behind its back: both ends vanish; the link is routed around and
    // its ports reported down; restoring it fails with a clear error, and it survives.
    let l = rt.fabric().port_link(agg, 2);
    let n = event_count(&d);
    ip(&["-n", rt.netns(agg).name(), "link", "del", "p2"]);
    wait_reroute(&d, n, l.0 as u64);
    d.wait_for(
        |d| {
            d.get("/metrics")
                .text()
                .contains("fabric_port_up{switch=\"pod1-agg1\",port=\"2\"} 0")
        },
        WAIT,
    );
    let r = d.post("/api/v1/links/pod1-agg1:2/restore");
    assert_eq!(r.status, 409, "{}", r.text());
    assert!(r.text().contains("p2"), "{}", r.text());
    let drift = d.json("/api/v1/drift");
    assert_eq!(drift["entries"], serde_json::json!([]), "{drift}");
    assert_eq!(d.health()["unreachable_pairs"], 0);
    // LLDP: the cable's two ports hear nothing; the periodic check raises the alarm.
    let t = d.json("/api/v1/topology/check");
    let missing: Vec<&Value> = t["mismatches"].as_array().unwrap().iter().collect();
    assert_eq!(missing.len(), 2, "{t}");
    assert!(missing.iter().all(|m| m["kind"] == "missing"), "{t}");
    assert!(missing.iter().any(|m| m["at"] == "pod1-agg1:p2"), "{t}");
    d.wait_for(
        |d| d.health()["topology"]["mismatches"]["missing"] == 2,
        WAIT,
    );
    let h = d.health();
    assert!(has_alarm(&h, "miswiring", "critical"), "{h}");
    assert_eq!(
        d.json("/api/v1/telemetry")["source"]["kind"],
        "routed-testbed"
    );

    // SIGTERM: exit 0, the adopted namespaces stay.
    let status = d.terminate();
    assert!(status.success(), "{status:?}: {}", d.stderr());
    assert!(d.stderr().contains("left in place"), "{}", d.stderr());
    assert!(rt.netns(agg).path().exists());
    rt.teardown().unwrap();
}

#[test]
fn a_missing_namespace_prefix_is_refused_with_the_name_it_looked_for() {
    if !enabled() {
        return;
    }
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_fabric"))
        .args([
            "serve",
            "--listen",
            "127.0.0.1:0",
            "--netns-prefix",
            "nothing-here-",
        ])
        .output()
        .unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("no namespace nothing-here-h0 for node host0-nic0"),
        "{err}"
    );
}

/// The namespace (of `ns`, the daemon's) of switch `name`: `…-s<i>` for the `i`-th switch.
fn switch_ns<'a>(ns: &'a [String], topo: &Value, name: &str) -> &'a str {
    let id = topo_node(topo, name) - 16;
    ns.iter()
        .find(|n| n.ends_with(&format!("-s{id}")))
        .unwrap_or_else(|| panic!("no namespace of {name} in {ns:?}"))
}

/// Whether interface `ifname` exists in namespace `ns` (`ip -n NS link show IF`).
fn has_link(ns: &str, ifname: &str) -> bool {
    std::process::Command::new("ip")
        .args(["-n", ns, "link", "show", ifname])
        .output()
        .unwrap()
        .status
        .success()
}

/// The API names a port `NODE:PORT`, the exports `swp<PORT+1>`, the testbed's kernel
/// `p<PORT>` in a namespace named after the daemon's run: nothing said which namespace
/// held which node. `GET /api/v1/namespaces` does, and `fabric status` names the
/// namespace of each end of a link that is down.
#[test]
fn the_daemon_says_which_namespace_holds_each_node_and_port() {
    if !enabled() {
        return;
    }
    let d = start("namespaces", &["--testbed"]);
    let ns = namespaces_of(&d);
    let topo = d.json("/api/v1/topology");
    let v = d.json("/api/v1/namespaces");
    let nodes = v["nodes"].as_array().unwrap();
    assert_eq!(nodes.len(), 36, "{v}");
    for n in nodes {
        let netns = n["netns"].as_str().unwrap();
        assert!(ns.iter().any(|x| x == netns), "{n} not in {ns:?}");
        for p in n["ports"].as_array().unwrap() {
            let ifname = p["ifname"].as_str().unwrap();
            assert!(has_link(netns, ifname), "{p}: no {ifname} in {netns}");
            assert_eq!(
                p["api"],
                format!("{}:{}", n["node"].as_str().unwrap(), p["port"]),
                "{p}"
            );
        }
    }
    let agg = nodes.iter().find(|n| n["node"] == "pod0-agg0").unwrap();
    assert_eq!(agg["netns"], switch_ns(&ns, &topo, "pod0-agg0"), "{agg}");
    // The name the API takes for a port is the one to fail it by.
    let api = agg["ports"][0]["api"].as_str().unwrap();
    let r = d.post(&format!("/api/v1/links/{api}/fail"));
    assert_eq!(r.status, 200, "{}", r.text());
    // Wait for the failed link itself: a daemon a moment old can already be degraded
    // for another reason (its first snapshots), before the failure is applied.
    d.wait_for(
        |d| {
            let h = d.health();
            h["status"] == "degraded" && h["links_down"].as_array().is_some_and(|l| !l.is_empty())
        },
        WAIT,
    );
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_fabric"))
        .args(["status", "--daemon", &d.addr])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(1), "{text}");
    assert!(text.contains("namespaces  36"), "{text}");
    let netns = agg["netns"].as_str().unwrap();
    assert!(
        text.contains(&format!("pod0-agg0:p0 (netns {netns})")),
        "{text}"
    );
}

/// The peer `(switch, port)` of `switch:port`, from the `fabric_link_info` series.
fn peer_of(d: &Daemon, switch: &str, port: u16) -> (String, u16) {
    let m = d.get("/metrics").text();
    let prefix = format!("fabric_link_info{{switch=\"{switch}\",port=\"{port}\",");
    let line = m.lines().find(|l| l.starts_with(&prefix)).unwrap();
    let label = |k: &str| {
        let at = line.find(&format!("{k}=\"")).unwrap() + k.len() + 2;
        line[at..].split('"').next().unwrap().to_string()
    };
    (label("peer_switch"), label("peer_port").parse().unwrap())
}

/// A veth deleted and made again under the same name was never tracked again (the
/// watcher knew ports by the index seen at start): the link stayed down, with its alarm,
/// for good. Ports are tracked by name now: the new veth's carrier brings the link back,
/// the addresses the testbed gave its ends are added again, its next-hop objects written
/// with the new interface (no drift), and the alarm clears.
#[test]
fn a_veth_made_again_under_the_same_name_is_tracked_again_and_its_alarm_clears() {
    if !enabled() {
        return;
    }
    let d = start("veth-again", &["--testbed"]);
    let places = d.json("/api/v1/namespaces");
    let netns = |node: &str| {
        places["nodes"]
            .as_array()
            .unwrap()
            .iter()
            .find(|n| n["node"] == node)
            .unwrap_or_else(|| panic!("{node}: {places}"))["netns"]
            .as_str()
            .unwrap()
            .to_string()
    };
    let link = d.link_at("pod0-agg0", 2);
    let (core, core_port) = peer_of(&d, "pod0-agg0", 2);
    let (agg_ns, core_ns) = (netns("pod0-agg0"), netns(&core));
    let core_if = format!("p{core_port}");
    let n = event_count(&d);
    ip(&["-n", &agg_ns, "link", "del", "p2"]);
    wait_reroute(&d, n, link);
    d.wait_for(|d| has_alarm(&d.health(), "link-down", "minor"), WAIT);
    let n = event_count(&d);
    ip(&[
        "-n", &agg_ns, "link", "add", "p2", "type", "veth", "peer", "name", &core_if, "netns",
        &core_ns,
    ]);
    ip(&["-n", &agg_ns, "link", "set", "p2", "up"]);
    ip(&["-n", &core_ns, "link", "set", &core_if, "up"]);
    let (_, ev) = wait_reroute(&d, n, link);
    assert!(
        ev.iter()
            .any(|e| e["what"]["kind"] == "link-up" && e["what"]["link"] == link),
        "{ev:?}"
    );
    d.wait_for(
        |d| {
            let h = d.health();
            h["status"] == "ok" && h["links_down"] == serde_json::json!([])
        },
        WAIT,
    );
    assert!(
        !has_alarm(&d.health(), "link-down", "minor"),
        "{}",
        d.health()
    );
    let addrs = ip_out(&["-n", &agg_ns, "addr", "show", "p2"]);
    assert!(
        addrs.contains("inet ") && addrs.contains("inet6 fd00"),
        "{addrs}"
    );
    let drift = d.json("/api/v1/drift");
    assert_eq!(drift["entries"], serde_json::json!([]), "{drift}");
}

#[test]
fn a_deleted_switch_namespace_is_released_routed_around_and_alarmed() {
    if !enabled() {
        return;
    }
    let mut d = start("vanish", &["--testbed"]);
    let ns = namespaces_of(&d);
    let topo = d.json("/api/v1/topology");
    let f = topo::presets::build("fat-tree-k4").unwrap();
    let leaf = f.name_index()["pod0-leaf0"];
    // The leaf's peers: two hosts and two aggregation switches, with their port.
    let peers: Vec<(String, String)> = (0..f.degree(leaf) as u16)
        .map(|p| {
            let l = f.link(f.port_link(leaf, p));
            let (n, q) = if l.a == leaf {
                (l.b, l.b_port)
            } else {
                (l.a, l.a_port)
            };
            (f.node_name(n).to_string(), format!("p{q}"))
        })
        .collect();
    let agg = peers
        .iter()
        .find(|(n, _)| n.starts_with("pod0-agg"))
        .unwrap()
        .clone();
    let ns_agg = switch_ns(&ns, &topo, &agg.0).to_string();
    assert!(has_link(&ns_agg, &agg.1), "{agg:?} before");

    // `ip netns del` of the leaf's namespace while the daemon runs.
    let n0 = event_count(&d);
    ip(&["netns", "del", switch_ns(&ns, &topo, "pod0-leaf0")]);
    let t = std::time::Instant::now();
    let ev = loop {
        let ev = d.events_after(n0);
        if ev.iter().any(|e| e["what"]["kind"] == "reroute") {
            break ev;
        }
        assert!(
            t.elapsed() < WAIT,
            "no reroute within 5 s; events {ev:?}; stderr:\n{}",
            d.stderr()
        );
        std::thread::sleep(Duration::from_millis(20));
    };
    let down = ev.iter().find(|e| e["what"]["kind"] == "switch-down");
    assert_eq!(
        down.map(|e| &e["what"]["node"]),
        Some(&Value::from(leaf.0)),
        "{ev:?}"
    );
    let links_down = ev
        .iter()
        .filter(|e| e["what"]["kind"] == "link-down")
        .count();
    assert_eq!(links_down, 4, "every link of the leaf: {ev:?}");
    let reroute = ev.iter().find(|e| e["what"]["kind"] == "reroute").unwrap();
    assert_eq!(
        reroute["what"]["links"].as_array().unwrap().len(),
        4,
        "{reroute}"
    );
    // Its two hosts are cut off from the 14 others and from each other (ordered pairs).
    assert_eq!(
        reroute["what"]["unreachable_pairs"],
        2 * 14 * 2 + 2,
        "{reroute}"
    );

    // The daemon let go: the kernel destroyed the namespace, so its veths and their
    // peers are gone (the aggregation switch's port and the hosts' NICs).
    d.wait_for(|_| !has_link(&ns_agg, &agg.1), WAIT);
    let host = peers.iter().find(|(n, _)| n.starts_with("host")).unwrap();
    let host_id = f.name_index()[host.0.as_str()];
    let ns_host = ns
        .iter()
        .find(|n| n.ends_with(&format!("-h{}", host_id.0)))
        .unwrap();
    assert!(!has_link(ns_host, &host.1), "{host:?} still has its NIC");

    // Health: the switch down, a critical alarm, the unreachable pairs; counted.
    d.wait_for(
        |d| d.health()["switches_down"] == serde_json::json!(["pod0-leaf0"]),
        WAIT,
    );
    let h = d.health();
    assert!(has_alarm(&h, "switch-down", "critical"), "{h}");
    // One grouped alarm: the switch's four links are part of it, not four more alarms.
    assert!(
        !h["alarms"]
            .as_array()
            .unwrap()
            .iter()
            .any(|a| a["kind"] == "link-down"
                && a["object"].as_str().unwrap().contains("pod0-leaf0:")),
        "{h}"
    );
    assert_eq!(h["unreachable_pairs"], 58, "{h}");
    assert_eq!(h["status"], "degraded", "{h}");
    let m = d.get("/metrics").text();
    assert_eq!(metric(&m, "fabric_switches_down"), Some(1.0), "{m}");
    assert_eq!(metric(&m, "fabric_switch_failures_total"), Some(1.0));
    assert!(m.contains("fabric_port_up{switch=\"pod0-leaf0\",port=\"2\"} 0"));
    // The peer's end: gone with the namespace (the kernel destroys it after the daemon
    // let go, so it may take a sample or two).
    let peer_up = format!(
        "fabric_port_up{{switch=\"{}\",port=\"{}\"}} 0",
        agg.0,
        &agg.1[1..]
    );
    d.wait_for(|d| d.get("/metrics").text().contains(&peer_up), WAIT);
    assert_eq!(metric(&m, "fabric_daemon_source_errors_total"), Some(0.0));

    // The routes of the 19 others follow the tables (no drift), and LLDP sees a switch
    // down, not a cabling fault.
    let drift = d.json("/api/v1/drift");
    assert_eq!(drift["checked"], 19 * 8 * 2, "{drift}");
    assert_eq!(drift["entries"], serde_json::json!([]), "{drift}");
    let t = d.json("/api/v1/topology/check");
    assert_eq!(t["mismatches"], serde_json::json!([]), "{t}");
    // A command on one of its links is refused with the reason; the daemon goes on.
    let r = d.post("/api/v1/links/pod0-leaf0:2/restore");
    assert_eq!(r.status, 409, "{}", r.text());
    assert!(r.text().contains("gone"), "{}", r.text());
    let seq = d.json("/api/v1/telemetry")["seq"].as_u64().unwrap();
    d.wait_for(
        |d| d.json("/api/v1/telemetry")["seq"].as_u64().unwrap() > seq + 2,
        WAIT,
    );

    // A host's namespace deleted too (host12-nic0, under pod3-leaf0): released (its
    // leaf's port vanishes), its link down, 13 more hosts cut off from it; no switch down.
    let h12 = f.name_index()["host12-nic0"];
    let l12 = f.link(f.port_link(h12, 0));
    let leaf12 = f.node_name(l12.b).to_string();
    let ns_leaf12 = switch_ns(&ns, &topo, &leaf12).to_string();
    let port12 = format!("p{}", l12.b_port);
    assert!(has_link(&ns_leaf12, &port12));
    let n1 = event_count(&d);
    let ns_h12 = ns.iter().find(|n| n.ends_with("-h12")).unwrap();
    ip(&["netns", "del", ns_h12]);
    let (_, ev) = wait_reroute(&d, n1, f.port_link(h12, 0).0 as u64);
    assert!(
        ev.iter().all(|e| e["what"]["kind"] != "switch-down"),
        "{ev:?}"
    );
    d.wait_for(|_| !has_link(&ns_leaf12, &port12), WAIT);
    d.wait_for(|d| d.health()["unreachable_pairs"] == 58 + 2 * 13, WAIT);
    assert_eq!(
        d.health()["switches_down"],
        serde_json::json!(["pod0-leaf0"])
    );

    // SIGTERM: exit 0, the 35 others deleted.
    let status = d.terminate();
    assert!(status.success(), "{status:?}: {}", d.stderr());
    assert!(namespaces_of(&d).is_empty(), "{:?}", namespaces_of(&d));
}

/// The IPv4 prefix of leaf `leaf` as switch `via` routes to it.
fn leaf_prefix(d: &Daemon, via: &str, leaf: &str) -> String {
    let r = d.json(&format!("/api/v1/routes/{via}"));
    r["routes"]
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["dst"] == leaf)
        .unwrap_or_else(|| panic!("{r}"))["prefix"]
        .as_str()
        .unwrap()
        .to_string()
}

/// `ip ARGS`' standard output.
fn ip_out(args: &[&str]) -> String {
    let out = std::process::Command::new("ip")
        .args(args)
        .output()
        .unwrap();
    String::from_utf8_lossy(&out.stdout).to_string()
}

#[test]
fn drifted_routes_are_repaired_over_the_api_and_only_the_daemons_extra_routes_go() {
    if !enabled() {
        return;
    }
    let d = start("repair", &["--testbed"]);
    let ns = namespaces_of(&d);
    let topo = d.json("/api/v1/topology");
    let drift = d.json("/api/v1/drift");
    assert_eq!(drift["entries"], serde_json::json!([]), "{drift}");
    // Every ToR-prefix route carries the daemon's protocol number.
    let agg = switch_ns(&ns, &topo, "pod0-agg0").to_string();
    let to_pod1 = leaf_prefix(&d, "pod0-agg0", "pod1-leaf0");
    let shown = ip_out(&["-n", &agg, "route", "show", &to_pod1]);
    assert!(
        shown.contains("proto 251") && shown.contains("nhid"),
        "{shown}"
    );

    // Missing: deleted. Different: replaced by a legacy route (proto boot). Extra: the
    // leaf's own prefix routed by someone — with the daemon's protocol on pod0-leaf0
    // (a stale route of its own), with iproute2's default on pod0-leaf1 (not its own).
    ip(&["-n", &agg, "route", "del", &to_pod1]);
    let core = switch_ns(&ns, &topo, "core0-0").to_string();
    let r = d.json("/api/v1/routes/core0-0");
    let via = r["routes"][0]["next_hops"][0]["via"].as_str().unwrap();
    let core_dst = r["routes"][0]["prefix"].as_str().unwrap().to_string();
    ip(&["-n", &core, "route", "replace", &core_dst, "via", via]);
    let own0 = leaf_prefix(&d, "pod0-agg0", "pod0-leaf0");
    let own1 = leaf_prefix(&d, "pod0-agg0", "pod0-leaf1");
    let leaf0 = switch_ns(&ns, &topo, "pod0-leaf0").to_string();
    let leaf1 = switch_ns(&ns, &topo, "pod0-leaf1").to_string();
    ip(&[
        "-n", &leaf0, "route", "add", &own0, "dev", "p2", "proto", "251",
    ]);
    ip(&["-n", &leaf1, "route", "add", &own1, "dev", "p2"]);
    let drift = d.json("/api/v1/drift");
    let kinds = |v: &Value| -> Vec<(String, String)> {
        let mut k: Vec<(String, String)> = v
            .as_array()
            .unwrap()
            .iter()
            .map(|e| {
                (
                    e["switch"].as_str().unwrap().to_string(),
                    e["kind"].as_str().unwrap().to_string(),
                )
            })
            .collect();
        k.sort();
        k
    };
    let want = |v: &[(&str, &str)]| -> Vec<(String, String)> {
        v.iter()
            .map(|(a, b)| (a.to_string(), b.to_string()))
            .collect()
    };
    assert_eq!(
        kinds(&drift["entries"]),
        want(&[
            ("core0-0", "different"),
            ("pod0-agg0", "missing"),
            ("pod0-leaf0", "extra"),
            ("pod0-leaf1", "extra"),
        ]),
        "{drift}"
    );

    // Repair needs the token; with it, three are repaired and the foreign route stays.
    let r = d.request("POST", "/api/v1/drift/repair", &[], b"");
    assert_eq!(r.status, 401, "{}", r.text());
    let r = d.post("/api/v1/drift/repair");
    assert_eq!(r.status, 200, "{}", r.text());
    let v: Value = serde_json::from_slice(&r.body).unwrap();
    let rep = &v["repair"];
    assert_eq!(
        (&rep["missing"], &rep["extra"], &rep["different"]),
        (&1.into(), &1.into(), &1.into()),
        "{v}"
    );
    assert_eq!(
        kinds(&rep["skipped"]),
        want(&[("pod0-leaf1", "extra")]),
        "{v}"
    );
    assert_eq!(rep["skipped"][0]["kernel_protocol"], 3, "boot: {v}");
    assert_eq!(
        kinds(&v["after"]["entries"]),
        want(&[("pod0-leaf1", "extra")]),
        "{v}"
    );
    let shown = ip_out(&["-n", &agg, "route", "show", &to_pod1]);
    assert!(
        shown.contains("proto 251") && shown.contains("nhid"),
        "{shown}"
    );
    assert!(ip_out(&["-n", &leaf0, "route", "show", &own0]).is_empty());
    let m = d.get("/metrics").text();
    for kind in ["missing", "extra", "different"] {
        let name = format!("fabric_route_drift_repaired_total{{kind=\"{kind}\"}}");
        assert_eq!(metric(&m, &name), Some(1.0), "{kind}: {m}");
    }
    d.wait_for(
        |d| {
            d.events_after(0)
                .iter()
                .any(|e| e["what"]["kind"] == "routes-repaired" && e["what"]["skipped"] == 1)
        },
        WAIT,
    );
    // The foreign route removed by its owner: no drift at all.
    ip(&["-n", &leaf1, "route", "del", &own1]);
    let drift = d.json("/api/v1/drift");
    assert_eq!(drift["entries"], serde_json::json!([]), "{drift}");
    d.wait_for(
        |d| d.health()["route_drift"]["missing"] == 0 && d.health()["status"] == "ok",
        WAIT,
    );
}

#[test]
fn with_repair_drift_the_periodic_check_reprograms_a_deleted_route() {
    if !enabled() {
        return;
    }
    let d = start("repair-periodic", &["--testbed", "--repair-drift"]);
    let ns = namespaces_of(&d);
    let topo = d.json("/api/v1/topology");
    let agg = switch_ns(&ns, &topo, "pod1-agg1").to_string();
    let prefix = leaf_prefix(&d, "pod1-agg1", "pod2-leaf1");
    ip(&["-n", &agg, "route", "del", &prefix]);
    // The next check (every 300 ms) finds it and puts it back.
    d.wait_for(
        |d| {
            metric(
                &d.get("/metrics").text(),
                "fabric_route_drift_repaired_total{kind=\"missing\"}",
            ) == Some(1.0)
        },
        WAIT,
    );
    let shown = ip_out(&["-n", &agg, "route", "show", &prefix]);
    assert!(shown.contains("proto 251"), "{shown}");
    d.wait_for(|d| d.health()["route_drift"]["missing"] == 0, WAIT);
}

#[test]
fn host_netns_the_daemon_programs_and_watches_the_namespace_it_runs_in() {
    if !enabled() {
        return;
    }
    // The daemon runs inside one of them, pod1-agg0, as on a Linux router.
    let rt = existing_k4();
    let names = rt.fabric().name_index();
    let (me, other) = (names["pod1-agg0"], names["pod1-agg1"]);
    let ns = rt.netns(me).clone();
    let args = ["--host-netns", "--switch", "pod1-agg0"];
    // The daemon listens on the namespace's loopback: talk to it from inside.
    veth::netns::in_netns(&ns, || {
        let mut d = start_in("host-netns", Some(ns.name()), &args);
        // Its own routes re-programmed as next-hop groups with its protocol; the
        // other routers untouched.
        let shown = ip_out(&["-n", ns.name(), "route"]);
        assert!(
            shown.contains("nhid") && shown.contains("proto 251"),
            "{shown}"
        );
        let theirs = ip_out(&["-n", rt.netns(other).name(), "route"]);
        assert!(!theirs.contains("nhid"), "{theirs}");
        let drift = d.json("/api/v1/drift");
        assert_eq!(
            drift["checked"],
            8 * 2,
            "one switch, 8 leaves, 2 families: {drift}"
        );
        assert_eq!(drift["entries"], serde_json::json!([]), "{drift}");
        // Its four ports are read from the kernel, and up.
        let m = d.get("/metrics").text();
        for p in 0..4 {
            let s = format!("fabric_port_up{{switch=\"pod1-agg0\",port=\"{p}\"}} 1");
            assert!(m.contains(&s), "{s}: {m}");
        }
        assert_eq!(d.get("/api/v1/topology/check").status, 404);

        // Its uplink p2 set down by another program: routed around, reported.
        let l = rt.fabric().port_link(me, 2).0 as u64;
        let n = event_count(&d);
        ip(&["-n", ns.name(), "link", "set", "p2", "down"]);
        let (_, ev) = wait_reroute(&d, n, l);
        assert!(
            ev.iter().any(|e| e["what"]["kind"] == "link-down"),
            "{ev:?}"
        );
        let routes = ip_out(&["-n", ns.name(), "route"]);
        d.wait_for(
            |d| {
                d.get("/metrics")
                    .text()
                    .contains("fabric_port_up{switch=\"pod1-agg0\",port=\"2\"} 0")
            },
            WAIT,
        );
        let drift = d.json("/api/v1/drift");
        assert_eq!(drift["entries"], serde_json::json!([]), "{drift}; {routes}");
        // Restored through the API (the end that is here): back in the tables.
        let n = event_count(&d);
        let r = d.post("/api/v1/links/pod1-agg0:2/restore");
        assert_eq!(r.status, 200, "{}", r.text());
        let (_, ev) = wait_reroute(&d, n, l);
        assert!(ev.iter().any(|e| e["what"]["kind"] == "link-up"), "{ev:?}");
        d.wait_for(
            |d| d.health()["links_down"].as_array().unwrap().is_empty(),
            WAIT,
        );
        let status = d.terminate();
        assert!(status.success(), "{status:?}: {}", d.stderr());
        assert!(d.stderr().contains("left in place"), "{}", d.stderr());
    })
    .unwrap();
    assert!(rt.netns(me).path().exists());
    rt.teardown().unwrap();
}

#[test]
fn host_netns_refuses_an_unknown_switch_or_missing_interfaces_by_name() {
    if !enabled() {
        return;
    }
    let run = |args: &[&str]| {
        let out = std::process::Command::new(env!("CARGO_BIN_EXE_fabric"))
            .args(["serve", "--listen", "127.0.0.1:0", "--host-netns"])
            .args(args)
            .output()
            .unwrap();
        assert!(!out.status.success());
        String::from_utf8_lossy(&out.stderr).to_string()
    };
    let err = run(&["--switch", "no-such-switch"]);
    assert!(
        err.contains("--switch no-such-switch: no such node"),
        "{err}"
    );
    // In a fresh namespace there is no p0: refused, naming the interface.
    let mut tb = veth::Testbed::new().unwrap();
    let ns = tb.add_netns("hostns").unwrap();
    let out = std::process::Command::new("ip")
        .args(["netns", "exec", ns.name(), env!("CARGO_BIN_EXE_fabric")])
        .args(["serve", "--listen", "127.0.0.1:0", "--host-netns"])
        .args(["--switch", "pod0-leaf0"])
        .output()
        .unwrap();
    drop(tb);
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("interface p0"), "{err}");
}

#[test]
fn netlink_errors_while_repairing_are_logged_counted_and_survived() {
    if !enabled() {
        return;
    }
    let d = start("nl-errors", &["--testbed"]);
    let ns = namespaces_of(&d);
    let topo = d.json("/api/v1/topology");
    let agg = switch_ns(&ns, &topo, "pod0-agg0").to_string();
    // IPv6 switched off inside pod0-agg0 behind the daemon's back: its IPv6 routes and
    // addresses go, and the kernel refuses IPv6 next hops there from now on.
    let out = std::process::Command::new("ip")
        .args(["netns", "exec", &agg, "sh", "-c"])
        .arg("echo 1 > /proc/sys/net/ipv6/conf/all/disable_ipv6")
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    // A link of pod0-agg0 goes down: the repair's IPv6 writes there fail.
    let l = d.link_at("pod0-agg0", 2);
    ip(&["-n", &agg, "link", "set", "p2", "down"]);
    d.wait_for(
        |d| {
            metric(
                &d.get("/metrics").text(),
                "fabric_daemon_source_errors_total",
            )
            .is_some_and(|v| v >= 1.0)
        },
        WAIT,
    );
    assert!(
        d.stderr().contains(&format!("repairing link {l}:")),
        "{}",
        d.stderr()
    );
    // The link is still known to be down (health follows the carrier).
    d.wait_for(|d| d.health()["links_down"] == serde_json::json!([l]), WAIT);
    // The daemon goes on: a failure elsewhere is repaired as usual.
    let n = event_count(&d);
    let r = d.post("/api/v1/links/core1-1:0/fail");
    assert_eq!(r.status, 200, "{}", r.text());
    wait_reroute(&d, n, d.link_at("core1-1", 0));
    // The repair went on past the refusing switch: no switch drifted.
    let drift = d.json("/api/v1/drift");
    assert_eq!(drift["entries"], serde_json::json!([]), "{drift}");
    // One of pod0-agg0's IPv6 routes deleted: its repair is refused (no IPv6 there any
    // more), listed with the kernel's error and the namespace, counted; the rest goes on.
    let v6 = ip_out(&["-n", &agg, "-6", "route", "show", "proto", "251"]);
    let prefix = v6
        .split_whitespace()
        .next()
        .unwrap_or_else(|| panic!("{v6}"));
    ip(&["-n", &agg, "-6", "route", "del", prefix]);
    let before = metric(
        &d.get("/metrics").text(),
        "fabric_daemon_source_errors_total",
    )
    .unwrap();
    let r = d.post("/api/v1/drift/repair");
    assert_eq!(r.status, 200, "{}", r.text());
    let v: Value = serde_json::from_slice(&r.body).unwrap();
    let failed = v["repair"]["failed"].as_array().unwrap();
    assert_eq!(failed.len(), 1, "{v}");
    assert_eq!(failed[0][0]["switch"], "pod0-agg0", "{v}");
    assert!(failed[0][1].as_str().unwrap().contains(&agg), "{v}");
    let after = metric(
        &d.get("/metrics").text(),
        "fabric_daemon_source_errors_total",
    )
    .unwrap();
    assert_eq!(after, before + 1.0);
    assert!(d.stderr().contains("route drift repair: 1 entries refused"));
    assert_eq!(
        d.json("/api/v1/telemetry")["source"]["kind"],
        "routed-testbed"
    );
}

/// Runs in a mount namespace of its own, with a fresh tmpfs on `/run` (so `/run/netns`
/// starts as a plain directory, as on a freshly booted machine) and the namespace check
/// after the daemon's exit; everything mounted there dies with that mount namespace.
const FRESH_RUN: &str = r#"
mount -t tmpfs fabric-test /run || exit 97
mkdir /run/netns
before=" $(awk '$5 ~ "^/run/netns/" {print $1}' /proc/self/mountinfo | tr '\n' ' ') "
"$0" "$@" &
wait $!
echo "daemon exit $?"
ip netns del "$OUTSIDE"
echo "left: $(ls -A /run/netns | tr '\n' ' ')"
echo "mounts: $(awk -v b="$before" '$5 ~ "^/run/netns/" && !index(b, " " $1 " ")' /proc/self/mountinfo | wc -l)"
"#;

/// `ip netns add` after the daemon built its testbed bind-mounts `/run/netns` onto itself
/// (it was not a mount point) and copies the daemon's namespace mounts; a daemon that
/// unmounted once left every namespace behind on SIGTERM, and said nothing. Only mounts
/// made after the daemon started count: the private mount namespace inherits, hidden
/// under its fresh `/run`, the namespaces other tests and testbeds on the machine had
/// mounted when it was made, and those come and go.
#[test]
fn sigterm_deletes_every_namespace_even_after_an_outside_ip_netns_add() {
    if !enabled() {
        return;
    }
    let outside = format!(
        "{}{}-outside",
        veth::netns::PREFIX,
        veth::netns::new_run_id()
    );
    let mut cmd = std::process::Command::new("unshare");
    cmd.args(["--mount", "--propagation", "private", "sh", "-c", FRESH_RUN])
        .arg(env!("CARGO_BIN_EXE_fabric"))
        .env("OUTSIDE", &outside);
    let file = token_file("fresh-run");
    let mut d = Daemon::start_cmd(
        "fresh-run",
        cmd,
        &[
            "--testbed",
            "--fabric",
            "fat-tree-k4",
            "--interval",
            "100ms",
            "--token-file",
            file.to_str().unwrap(),
        ],
    );
    let sh = d.child.id();
    let children = std::fs::read_to_string(format!("/proc/{sh}/task/{sh}/children")).unwrap();
    let daemon: i32 = children.split_whitespace().next().unwrap().parse().unwrap();
    let ip = std::process::Command::new("nsenter")
        .arg(format!("--mount=/proc/{daemon}/ns/mnt"))
        .args(["ip", "netns", "add", &outside])
        .output()
        .unwrap();
    assert!(ip.status.success(), "{ip:?}");
    // SAFETY: a signal to the daemon this test started.
    assert_eq!(unsafe { libc::kill(daemon, libc::SIGTERM) }, 0);
    let mut report = String::new();
    std::io::Read::read_to_string(&mut d.stdout, &mut report).unwrap();
    let status = d.child.wait().unwrap();
    assert!(status.success(), "{status}: {report}\n{}", d.stderr());
    assert!(
        report.contains("daemon exit 0\n"),
        "{report}\n{}",
        d.stderr()
    );
    assert!(report.contains("left: \n"), "{report}\n{}", d.stderr());
    assert!(report.contains("mounts: 0\n"), "{report}\n{}", d.stderr());
}

/// `a.b.c.d/len` → `a.b.c.(d+k)/to`: a more specific prefix inside an IPv4 prefix.
fn inside(prefix: &str, k: u8, to: u8) -> String {
    let (addr, _) = prefix.split_once('/').unwrap();
    let mut a: std::net::Ipv4Addr = addr.parse().unwrap();
    let o = a.octets();
    a = std::net::Ipv4Addr::new(o[0], o[1], o[2], o[3] + k);
    format!("{a}/{to}")
}

/// A `/32` or `/29` added by hand inside the plan (inside one ToR prefix, or spanning
/// several) changes forwarding and went unreported: every route inside the plan the
/// tables do not hold is `extra`, while the leaves' own link routes to their hosts are
/// not.
#[test]
fn more_specific_routes_inside_the_plan_are_extra_drift() {
    if !enabled() {
        return;
    }
    let d = start("more-specific", &["--testbed"]);
    let ns = namespaces_of(&d);
    let topo = d.json("/api/v1/topology");
    let drift = d.json("/api/v1/drift");
    assert_eq!(drift["entries"], serde_json::json!([]), "{drift}");
    let agg = switch_ns(&ns, &topo, "pod0-agg0").to_string();
    // The API names interfaces as the testbed does (it said swp1 for p0).
    let r = d.json("/api/v1/routes/pod0-agg0");
    let ifname = r["routes"][0]["next_hops"][0]["ifname"].as_str().unwrap();
    assert!(has_link(&agg, ifname), "{ifname} is not in {agg}: {r}");
    let host32 = inside(&leaf_prefix(&d, "pod0-agg0", "pod1-leaf0"), 5, 32);
    ip(&["-n", &agg, "route", "add", &host32, "dev", "p0"]);
    let drift = d.json("/api/v1/drift");
    let got: Vec<(String, String, String)> = drift["entries"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| {
            let s = |k: &str| e[k].as_str().unwrap().to_string();
            (s("switch"), s("prefix"), s("kind"))
        })
        .collect();
    assert_eq!(
        got,
        vec![("pod0-agg0".into(), host32.clone(), "extra".into())],
        "{drift}"
    );
    ip(&["-n", &agg, "route", "del", &host32]);
    let drift = d.json("/api/v1/drift");
    assert_eq!(drift["entries"], serde_json::json!([]), "{drift}");

    // A /29 over two leaves' /30s, with the daemon's own protocol (a stale route of its
    // own): extra too (only routes inside one leaf's prefix were caught), and the
    // repair deletes that route, not the leaves' /30s.
    let p0 = leaf_prefix(&d, "pod0-agg0", "pod1-leaf0");
    let p1 = leaf_prefix(&d, "pod0-agg0", "pod1-leaf1");
    let span = masked(&p0, 29);
    assert_eq!(span, masked(&p1, 29), "{p0} and {p1} are not in one /29");
    assert_ne!(p0, p1);
    ip(&[
        "-n", &agg, "route", "add", &span, "dev", "p0", "proto", "251",
    ]);
    let drift = d.json("/api/v1/drift");
    assert_eq!(drift["entries"].as_array().unwrap().len(), 1, "{drift}");
    let e = &drift["entries"][0];
    assert_eq!(
        (
            &e["switch"],
            &e["prefix"],
            &e["kind"],
            &e["kernel_protocol"]
        ),
        (
            &"pod0-agg0".into(),
            &span.clone().into(),
            &"extra".into(),
            &251.into()
        ),
        "{drift}"
    );
    let r = d.post("/api/v1/drift/repair");
    assert_eq!(r.status, 200, "{}", r.text());
    let v: Value = serde_json::from_slice(&r.body).unwrap();
    assert_eq!(v["repair"]["extra"], 1, "{v}");
    assert_eq!(v["after"]["entries"], serde_json::json!([]), "{v}");
    assert!(ip_out(&["-n", &agg, "route", "show", &span]).is_empty());
    for p in [&p0, &p1] {
        let shown = ip_out(&["-n", &agg, "route", "show", p]);
        assert!(shown.contains("proto 251"), "{p}: {shown}");
    }
}

/// `a.b.c.d/len` → the `/to` holding it.
fn masked(prefix: &str, to: u8) -> String {
    let (addr, _) = prefix.split_once('/').unwrap();
    let a: std::net::Ipv4Addr = addr.parse().unwrap();
    let m = u32::MAX << (32 - u32::from(to));
    format!("{}/{to}", std::net::Ipv4Addr::from(u32::from(a) & m))
}

/// The LLDP result in the health report says when a link changed after it was taken
/// (its findings may no longer hold), and a fresh check makes it current again.
#[test]
fn the_health_says_when_the_lldp_result_is_stale() {
    if !enabled() {
        return;
    }
    // Periodic checks far apart, so that only the test's own checks refresh the result.
    let file = token_file("lldp-stale");
    let d = Daemon::start(
        "lldp-stale",
        &[
            "--testbed",
            "--fabric",
            "fat-tree-k4",
            "--interval",
            "100ms",
            "--drift-interval",
            "10m",
            "--token-file",
            file.to_str().unwrap(),
        ],
    );
    let r = d.get("/api/v1/topology/check");
    assert_eq!(r.status, 200, "{}", r.text());
    assert_eq!(d.health()["topology"]["stale"], false, "{}", d.health());
    let r = d.post("/api/v1/links/pod0-leaf0:2/fail");
    assert_eq!(r.status, 200, "{}", r.text());
    d.wait_for(|d| d.health()["topology"]["stale"] == true, WAIT);
    assert_eq!(d.get("/api/v1/topology/check").status, 200);
    assert_eq!(d.health()["topology"]["stale"], false, "{}", d.health());
}
