//! The FRR testbed on a k=4 fat-tree (root, and Debian's frr, lldpd,
//! prometheus-node-exporter and prometheus): BGP converges to the tables topo computes
//! on every switch (both families, from BGP alone), lldpd hears every fabric port's
//! neighbour, Prometheus scrapes every node_exporter over the management network, a
//! link set down by the test is routed around by BGP to the tables of the live
//! topology — and every daemon, directory, bridge and namespace is gone afterwards.

use std::io::{Read, Write};
use std::time::Duration;

use topo::{NodeId, Rate, Routes, generators};
use veth::frr::{FrrOptions, FrrTestbed};
use veth::routed::ifname;

/// Root and the FRR testbed's tools, or skipped as the README says (the shared check).
fn enabled() -> bool {
    veth::frr::tests_enabled().unwrap_or_else(|why| panic!("{why}"))
}

/// `GET path` on `addr`, the body.
fn http_get(addr: std::net::SocketAddr, path: &str) -> String {
    let mut s = std::net::TcpStream::connect_timeout(&addr, Duration::from_secs(5)).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    write!(s, "GET {path} HTTP/1.0\r\nHost: {addr}\r\n\r\n").unwrap();
    let mut r = String::new();
    s.read_to_string(&mut r).unwrap();
    r.split_once("\r\n\r\n")
        .map(|(_, b)| b.to_string())
        .unwrap_or(r)
}

fn alive(pid: u32) -> bool {
    // SAFETY: signal 0 only checks that the process exists.
    unsafe { libc::kill(pid as libc::pid_t, 0) == 0 }
}

#[test]
fn frr_fabric_converges_is_watched_and_routes_around_a_failed_link() {
    if !enabled() {
        return;
    }
    let f = generators::fat_tree(4, Rate::gbps(100)).unwrap();
    let tb =
        FrrTestbed::converged(f.clone(), &FrrOptions::default(), Duration::from_secs(90)).unwrap();
    let healthy = Routes::compute(&f);
    let d = tb.fib_check(&healthy).unwrap();
    // 20 switches × 8 leaves × 2 families.
    assert_eq!(d.checked, 320);
    // FRR's own view of its FIB (vtysh JSON) gives the same verdict as netlink.
    let v = tb.fib_check_vtysh(&healthy).unwrap();
    assert_eq!(v.checked, 320);
    assert!(v.entries.is_empty(), "vtysh: {:?}", v.entries);
    let bgp = tb.vtysh(0, "show bgp summary").unwrap();
    assert!(bgp.contains("Total number of neighbors"), "{bgp}");
    let bfd = tb.vtysh(0, "show bfd peers brief").unwrap();
    assert!(bfd.contains("up"), "{bfd}");

    // lldpd: every fabric port of a leaf hears its neighbour, port ids are ifnames.
    let leaf = &tb.agents()[0];
    let sock = leaf.lldp_socket.clone().unwrap();
    let ok = veth::frr::wait_for(Duration::from_secs(60), || {
        veth::frr::procs::run(
            None,
            "lldpcli",
            &[
                "-u",
                &sock.to_string_lossy(),
                "-f",
                "json",
                "show",
                "neighbors",
            ],
        )
        .map(|j| j.matches("\"ifname\"").count() >= 2)
        .unwrap_or(false)
    });
    assert!(ok, "lldpd on {} heard no neighbours", leaf.name);

    // Prometheus scrapes every node_exporter through the management network.
    let prom = tb.prometheus().unwrap();
    let ok = veth::frr::wait_for(Duration::from_secs(60), || {
        let b = http_get(prom, "/api/v1/query?query=count(up%3D%3D1)");
        b.contains("\"value\":[") && b.contains("\"20\"")
    });
    assert!(ok, "Prometheus does not see 20 exporters up");
    let b = http_get(
        prom,
        "/api/v1/query?query=count(node_network_transmit_bytes_total%7Bdevice%3D~%22p.*%22%7D)",
    );
    // 16 leaf ports... every fabric port: 4 per switch.
    assert!(b.contains("\"80\""), "{b}");

    // A link set down by the test: BGP (with BFD) converges to the live topology's tables.
    let link = f
        .links()
        .iter()
        .position(|l| !f.is_host(l.a) && !f.is_host(l.b))
        .unwrap();
    let l = *f.link(topo::LinkId(link as u32));
    tb.routed().nl(l.a).set_down(&ifname(l.a_port)).unwrap();
    let mut failed = healthy.clone();
    failed.fail_links(&f, &[topo::LinkId(link as u32)]);
    let d = tb.wait_converged(&failed, Duration::from_secs(60)).unwrap();
    assert!(d.entries.is_empty(), "not re-converged: {:?}", d.entries);
    // vtysh agrees (zebra marks a route installed once the kernel acknowledged it).
    let ok = veth::frr::wait_for(Duration::from_secs(60), || {
        tb.fib_check_vtysh(&failed)
            .is_ok_and(|v| v.entries.is_empty())
    });
    assert!(
        ok,
        "vtysh: {:?}",
        tb.fib_check_vtysh(&failed).map(|v| v.entries)
    );
    // …and sees the healthy tables as drift now: the failed link's routes differ.
    let v = tb.fib_check_vtysh(&healthy).unwrap();
    assert!(!v.entries.is_empty());

    // Teardown removes every daemon, directory, the bridge and the namespaces.
    let pids = tb.daemon_pids();
    assert_eq!(pids.len(), 20 * 6 + 1);
    let dirs = tb.frr_dirs().to_vec();
    let dir = tb.dir().to_path_buf();
    let bridge = tb.mgmt().bridge().to_string();
    let ns: Vec<String> = f
        .switches()
        .map(|s: NodeId| tb.routed().netns(s).name().to_string())
        .collect();
    tb.teardown().unwrap();
    for p in pids {
        assert!(!alive(p), "daemon {p} still running");
    }
    for d in dirs.iter().chain([&dir]) {
        assert!(!d.exists(), "{} left", d.display());
    }
    assert!(
        !std::path::Path::new("/sys/class/net")
            .join(&bridge)
            .exists()
    );
    for n in ns {
        assert!(
            !std::path::Path::new("/run/netns").join(&n).exists(),
            "{n} left"
        );
    }
}

/// One failure and return under each repairer on a k=4 fat-tree (what `fabric testbed
/// frr --converge N` measures): every one repaired in time. Times are printed, not
/// asserted against each other (the machine may be loaded).
#[test]
fn a_failure_is_repaired_by_bgp_with_bfd_and_by_central_repair() {
    use veth::frr::converge::{FailureKind, run_central, run_frr};
    if !enabled() {
        return;
    }
    let f = generators::fat_tree(4, Rate::gbps(100)).unwrap();
    let limit = Duration::from_secs(60);
    for runs in [
        run_frr(&f, true, FailureKind::Carrier, 1, limit, |_| {}).unwrap(),
        run_central(&f, FailureKind::Carrier, 1, limit, |_| {}).unwrap(),
    ] {
        eprintln!("{:?}", runs);
        assert_eq!(runs.timings.len(), 1);
        assert!(runs.timings[0].down_s.is_some(), "{runs:?}");
        assert!(runs.timings[0].up_s.is_some(), "{runs:?}");
        // The loss probe is sound: nothing lost on the healthy fabric.
        assert_eq!(runs.idle_lost, 0, "{runs:?}");
    }
}
