//! Unit tests of the routed testbed's pure parts (no namespaces).

use super::*;
use topo::{Rate, generators};

#[test]
fn leaf_spine_entries_become_equal_weight_multipath_routes() {
    let f = generators::leaf_spine(3, 2, 2, Rate::gbps(100)).unwrap();
    let plan = AddressPlan::new(&f).unwrap();
    let routes = Routes::compute(&f);
    let leaves: Vec<NodeId> = f.plane_info(0).leaves().map(NodeId).collect();
    let (l0, l1) = (leaves[0], leaves[1]);
    let hops = entry_hops(&f, &plan, &routes, l0, l1).expect("a route");
    assert_eq!(hops.len(), 2, "{hops:?}");
    assert!(hops.iter().all(|&(_, w)| w == 1));
    // Gateways are the spines' ends of the leaf's /31s, all distinct.
    assert_ne!(hops[0].0, hops[1].0);
    assert!(
        entry_hops(&f, &plan, &routes, l0, l0).is_none(),
        "own prefix is local"
    );
}

#[test]
fn ipv6_entries_use_the_peers_slash127_ends_with_the_same_weights() {
    let f = generators::leaf_spine(3, 2, 2, Rate::gbps(100)).unwrap();
    let plan = AddressPlan::new(&f).unwrap();
    let routes = Routes::compute(&f);
    let leaves: Vec<NodeId> = f.plane_info(0).leaves().map(NodeId).collect();
    for s in f.switches() {
        for &l in &leaves {
            let v4 = entry_hops(&f, &plan, &routes, s, l);
            let v6 = entry_hops6(&f, &plan, &routes, s, l);
            assert_eq!(v4.is_some(), v6.is_some());
            let (Some(v4), Some(v6)) = (v4, v6) else {
                continue;
            };
            assert_eq!(
                v4.iter().map(|h| h.1).collect::<Vec<_>>(),
                v6.iter().map(|h| h.1).collect::<Vec<_>>()
            );
            for (_, gw) in v6.iter().map(|h| (h.1, h.0)) {
                assert_eq!(gw.segments()[..2], [0xfd00, 0xfffe], "{gw}");
            }
        }
    }
    // The gateway is ::1 of the leaf's /64.
    let gw = gateway_v6(&plan, leaves[1]).unwrap();
    assert_eq!(gw.segments(), [0xfd00, 0, 0, 1, 0, 0, 0, 1]);
}

#[test]
fn failed_uplink_leaves_one_next_hop() {
    let f = generators::leaf_spine(3, 2, 2, Rate::gbps(100)).unwrap();
    let plan = AddressPlan::new(&f).unwrap();
    let mut routes = Routes::compute(&f);
    let leaves: Vec<NodeId> = f.plane_info(0).leaves().map(NodeId).collect();
    let up = (0..f.degree(leaves[0]) as topo::Port)
        .find(|&p| !f.is_host(f.peer(leaves[0], p)))
        .unwrap();
    let rep = routes.fail_links(&f, &[f.port_link(leaves[0], up)]);
    assert!(!rep.changed.is_empty());
    let hops = entry_hops(&f, &plan, &routes, leaves[0], leaves[1]).unwrap();
    assert_eq!(hops.len(), 1);
    assert_ne!(Some(hops[0].0), peer_addr(&f, &plan, leaves[0], up));
}

#[test]
fn link_ends_get_the_two_addresses_of_their_slash31() {
    let f = generators::fat_tree(4, Rate::gbps(100)).unwrap();
    let plan = AddressPlan::new(&f).unwrap();
    for s in f.switches() {
        for p in 0..f.degree(s) as topo::Port {
            if let Some((mine, len)) = own_addr(&f, &plan, s, p) {
                assert_eq!(len, 31);
                let peer = f.peer(s, p);
                let back = (0..f.degree(peer) as topo::Port)
                    .find(|&q| f.port_link(peer, q) == f.port_link(s, p))
                    .unwrap();
                assert_eq!(peer_addr(&f, &plan, peer, back), Some(mine));
                assert_eq!(
                    u32::from(mine) >> 1,
                    u32::from(peer_addr(&f, &plan, s, p).unwrap()) >> 1
                );
            }
        }
    }
}

#[test]
fn spread_imbalance_is_max_over_mean_of_live_uplinks() {
    let s = Spread {
        family: Family::V4,
        reachable: true,
        src: "h0".into(),
        dst: "h9".into(),
        leaf: "l0".into(),
        flows: 4,
        delivered: 4,
        uplinks: vec![
            ("p2".into(), "s0".into(), 3, true),
            ("p3".into(), "s1".into(), 1, true),
            ("p4".into(), "s2".into(), 0, false),
        ],
    };
    assert_eq!(s.used(), 2);
    assert!((s.imbalance() - 1.5).abs() < 1e-12);
}
