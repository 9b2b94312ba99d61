//! LLDP intent check on a real routed testbed (root): every port hears its neighbour
//! through pnet datalink channels; two veth ends swapped between leaves are seen as
//! miswired, and the leaves as no longer reaching one of their spines.

use topo::{NodeId, Rate, generators};
use veth::root_tests_enabled;
use veth::routed::{MismatchKind, RoutedOptions, RoutedTestbed};

fn enabled() -> bool {
    match root_tests_enabled() {
        Ok(b) => b,
        Err(why) => panic!("{why}"),
    }
}

#[test]
fn lldp_sees_every_neighbour_then_a_swapped_pair_of_veths() {
    if !enabled() {
        return;
    }
    let f = generators::leaf_spine(2, 2, 2, Rate::gbps(100)).unwrap();
    let opts = RoutedOptions {
        ipv6: false,
        ..RoutedOptions::default()
    };
    let rt = RoutedTestbed::build_with(f, &opts).unwrap();
    // How long a port listens for its neighbour's frame: only a silent port waits it out,
    // and none is silent here, so it is generous (a loaded machine delays delivery).
    let wait = std::time::Duration::from_secs(5);
    let r = rt.check_neighbours(wait).unwrap();
    // 4 hosts × 1 + 2 leaves × 4 + 2 spines × 2 ports.
    assert_eq!((r.ports, r.heard), (16, 16), "{r:?}");
    assert!(r.mismatches.is_empty(), "{:?}", r.mismatches);

    // Swap leaf0's uplink to spine0 with leaf1's uplink to spine1: move each veth end
    // into the other leaf's namespace under the other's name (netlink, as re-cabling).
    let fab = rt.fabric();
    let leaves: Vec<NodeId> = fab.switches().filter(|&s| fab.tier(s) == 1).collect();
    let up = |l: NodeId, k: usize| {
        (0..fab.degree(l) as u16)
            .filter(|&p| fab.tier(fab.peer(l, p)) == 2)
            .nth(k)
            .unwrap()
    };
    let (a, b) = (rt.netns(leaves[0]), rt.netns(leaves[1]));
    let (na, nb) = (rt.nl(leaves[0]), rt.nl(leaves[1]));
    let (pa, pb) = (
        format!("p{}", up(leaves[0], 0)),
        format!("p{}", up(leaves[1], 1)),
    );
    na.move_link(&pa, b, "swapa").unwrap();
    nb.move_link(&pb, a, &pa).unwrap();
    nb.rename_link("swapa", &pb).unwrap();
    na.set_up(&pa).unwrap();
    nb.set_up(&pb).unwrap();
    // Operstate lags carrier, at the spines' ends too: a frame sent before its port is
    // operationally up again is dropped. Wait until every switch port is.
    let t = std::time::Instant::now();
    let all_up = || {
        fab.switches()
            .all(|s| (0..fab.degree(s) as u16).all(|p| rt.nl(s).oper_up(&format!("p{p}")).unwrap()))
    };
    while !all_up() {
        assert!(t.elapsed() < std::time::Duration::from_secs(60), "never up");
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
    let r = rt.check_neighbours(wait).unwrap();
    assert_eq!(r.heard, 16, "{r:?}");
    assert_eq!(r.count(MismatchKind::Miswired), 4, "{:?}", r.mismatches);
    assert_eq!(
        r.count(MismatchKind::LeafMissesSpine),
        2,
        "{:?}",
        r.mismatches
    );
    assert_eq!(r.count(MismatchKind::Missing), 0, "{:?}", r.mismatches);
    let at_a = format!("{}:{pa}", fab.node_name(leaves[0]));
    assert!(
        r.mismatches
            .iter()
            .any(|m| m.kind == MismatchKind::Miswired && m.at == at_a),
        "{:?}",
        r.mismatches
    );
    eprintln!("LLDP check of {} ports: {:.1} ms", r.ports, r.took_s * 1e3);
    rt.teardown().unwrap();
}
