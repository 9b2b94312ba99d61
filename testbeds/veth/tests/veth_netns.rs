//! Root-only: namespaces and veths are created through rtnetlink and never leak —
//! not on drop, not on panic, and `clean` removes leftovers of dead runs (only ours).

use veth::{Testbed, netlink::Nl, netns, root_tests_enabled};

fn enabled() -> bool {
    match root_tests_enabled() {
        Ok(b) => b,
        Err(why) => panic!("{why}"),
    }
}

#[test]
fn veth_pair_between_namespaces_is_up_and_removed_on_drop() {
    if !enabled() {
        return;
    }
    let names;
    {
        let mut tb = Testbed::new().unwrap();
        let a = tb.add_netns("a").unwrap();
        let b = tb.add_netns("b").unwrap();
        tb.connect(&a, "p0", &b, "p7").unwrap();
        names = vec![a.name().to_string(), b.name().to_string()];
        let nla = Nl::open(&a).unwrap();
        let nlb = Nl::open(&b).unwrap();
        let la = nla.link_names().unwrap();
        let lb = nlb.link_names().unwrap();
        assert!(la.contains(&"p0".to_string()), "{la:?}");
        assert!(lb.contains(&"p7".to_string()), "{lb:?}");
        assert!(!la.contains(&"p7".to_string()));
        for n in &names {
            assert!(netns::list_ours().contains(n));
        }
    }
    let left = netns::list_ours();
    for n in &names {
        assert!(!left.contains(n), "{n} leaked: {left:?}");
    }
}

#[test]
fn namespaces_are_removed_when_the_owner_panics() {
    if !enabled() {
        return;
    }
    let (tx, rx) = std::sync::mpsc::channel();
    let r = std::thread::spawn(move || {
        let mut tb = Testbed::new().unwrap();
        let a = tb.add_netns("pa").unwrap();
        let b = tb.add_netns("pb").unwrap();
        tb.connect(&a, "x", &b, "y").unwrap();
        tx.send(vec![a.name().to_string(), b.name().to_string()])
            .unwrap();
        panic!("deliberate panic with a live testbed");
    })
    .join();
    assert!(r.is_err());
    let names = rx.recv().unwrap();
    let left = netns::list_ours();
    for n in &names {
        assert!(!left.contains(n), "{n} leaked after panic: {left:?}");
    }
}

#[test]
fn clean_removes_dead_runs_but_not_live_ones() {
    if !enabled() {
        return;
    }
    // A namespace named as if created by a process that no longer exists
    // (pid above the kernel's maximum), and one of a live run.
    let dead = format!("{}{}_0-s0", netns::PREFIX, "2kmu0"); // "2kmu0" = 4_321_944 > pid_max
    assert_eq!(netns::owner_pid(&dead), Some(4_321_944));
    let ns = netns::Netns::create(&dead).unwrap();
    let mut live = Testbed::new().unwrap();
    let l = live.add_netns("live").unwrap();
    let removed = netns::clean(false).unwrap();
    assert!(removed.contains(&dead), "{removed:?}");
    assert!(!removed.contains(&l.name().to_string()));
    assert!(!netns::list_ours().contains(&dead));
    assert!(netns::list_ours().contains(&l.name().to_string()));
    drop(ns);
    drop(live);
    assert!(!netns::list_ours().contains(&l.name().to_string()));
}

/// The ports a snapshot reports down, once they equal `want` or after 60 s: the kernel's
/// link watcher sets the operational state a moment after the link changes (seconds
/// after, on a loaded machine).
fn settled_down(h: &veth::host::HostTelemetry, want: &[u32]) -> Vec<u32> {
    let t = std::time::Instant::now();
    loop {
        let s = h.snapshot(0).unwrap();
        s.validate(h.fabric_info()).unwrap();
        if s.gauges.oper_down == want || t.elapsed() > std::time::Duration::from_secs(60) {
            return s.gauges.oper_down;
        }
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
}

#[test]
fn namespaces_we_did_not_make_are_watched_read_only_by_prefix() {
    if !enabled() {
        return;
    }
    let mut tb = Testbed::new().unwrap();
    let a = tb.add_netns("a").unwrap();
    let b = tb.add_netns("b").unwrap();
    tb.connect(&a, "x0", &b, "y0").unwrap();
    let prefix = tb.ns_name("");
    let h = veth::host::HostTelemetry::open(Some(&prefix)).unwrap();
    let info = h.fabric_info();
    assert_eq!(info.nodes.len(), 2);
    assert_eq!(info.ports.len(), 2, "{:?}", info.ports);
    assert_eq!(settled_down(&h, &[]), Vec::<u32>::new());
    Nl::open(&a).unwrap().set_down("x0").unwrap();
    // The admin-down end and the end that lost its carrier.
    assert_eq!(settled_down(&h, &[0, 1]), vec![0, 1]);
    let e = veth::host::HostTelemetry::open(Some("no-such-prefix-"))
        .unwrap_err()
        .to_string();
    assert!(e.contains("no network namespace"), "{e}");
    // This host's own namespace too (read-only: whatever interfaces it has).
    let here = veth::host::HostTelemetry::open(None).unwrap();
    here.snapshot(0)
        .unwrap()
        .validate(here.fabric_info())
        .unwrap();
}

#[test]
fn the_netlink_client_works_from_inside_a_tokio_runtime() {
    if !enabled() {
        return;
    }
    // A daemon's shape: a multi-threaded runtime whose tasks use the (blocking) netlink
    // client through spawn_blocking — opened there or moved there — with no runtime
    // built per call and no block_on on a runtime thread.
    let mut tb = Testbed::new().unwrap();
    let a = tb.add_netns("a").unwrap();
    let b = tb.add_netns("b").unwrap();
    tb.connect(&a, "x0", &b, "y0").unwrap();
    let moved = Nl::open(&b).unwrap();
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let (names_a, names_b) = rt.block_on(async move {
        let a2 = a.clone();
        let opened = tokio::task::spawn_blocking(move || Nl::open(&a2).unwrap().link_names());
        let moved = tokio::task::spawn_blocking(move || {
            (0..100).try_for_each(|_| moved.stats().map(|_| ()))?;
            moved.link_names()
        });
        (
            opened.await.unwrap().unwrap(),
            moved.await.unwrap().unwrap(),
        )
    });
    assert!(names_a.contains(&"x0".to_string()), "{names_a:?}");
    assert!(names_b.contains(&"y0".to_string()), "{names_b:?}");
}

#[test]
fn foreign_namespaces_named_after_a_fabric_map_onto_its_ports() {
    if !enabled() {
        return;
    }
    // Someone else's fabric: one namespace per node named PREFIX + node name, interfaces pN.
    let f = topo::generators::leaf_spine(2, 1, 1, topo::Rate::gbps(100)).unwrap();
    let mut tb = Testbed::new().unwrap();
    let ns: Vec<_> = (0..f.num_nodes() as u32)
        .map(|n| tb.add_netns(f.node_name(topo::NodeId(n))).unwrap())
        .collect();
    for l in f.links() {
        tb.connect(
            &ns[l.a.idx()],
            &format!("p{}", l.a_port),
            &ns[l.b.idx()],
            &format!("p{}", l.b_port),
        )
        .unwrap();
    }
    let prefix = tb.ns_name("");
    let h = veth::host::HostTelemetry::open_mapped(&prefix, &f).unwrap();
    assert_eq!(h.fabric_info(), &fabric_api::FabricInfo::from_topo(&f, 8));
    assert_eq!(settled_down(&h, &[]), Vec::<u32>::new());
    // Link 0 set down at its a end: both of its ports (0 and 1) read down.
    let l = f.link(topo::LinkId(0));
    Nl::open(&ns[l.a.idx()])
        .unwrap()
        .set_down(&format!("p{}", l.a_port))
        .unwrap();
    assert_eq!(settled_down(&h, &[0, 1]), vec![0, 1]);
    let e = veth::host::HostTelemetry::open_mapped("nobody-", &f)
        .unwrap_err()
        .to_string();
    assert!(e.contains("has no namespace nobody-"), "{e}");
}
