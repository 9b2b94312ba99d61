//! Root-only: a `topo` fabric realised as namespaces with kernel ECMP routes programmed
//! through rtnetlink. All pairs reach each other over real UDP before and after a leaf
//! uplink fails, ECMP spreads flows over the leaf's uplinks, nothing leaks.

use testbeds::veth::routed::{VerifyOptions, verify};
use testbeds::veth::{netns, root_tests_enabled};
use topo::{Rate, generators};

fn enabled() -> bool {
    match root_tests_enabled() {
        Ok(b) => b,
        Err(why) => panic!("{why}"),
    }
}

#[test]
fn leaf_spine_all_pairs_before_and_after_an_uplink_failure() {
    if !enabled() {
        return;
    }
    // 4 leaves × 3 spines, 2 hosts per leaf: 8 hosts, 7 switches, 20 veths.
    let f = generators::leaf_spine(4, 3, 2, Rate::gbps(100)).unwrap();
    let r = verify(f, &VerifyOptions::default()).unwrap();
    assert_eq!((r.hosts, r.switches), (8, 7));
    assert_eq!(r.before.pairs, 56);
    assert!(
        r.before.ok(),
        "before the failure: missing {:?}",
        r.before.missing
    );
    assert_eq!(r.spread.delivered, r.spread.flows);
    assert_eq!(r.spread.uplinks.len(), 3);
    assert!(
        r.spread.used() >= 2,
        "ECMP used {} uplinks: {:?}",
        r.spread.used(),
        r.spread.uplinks
    );
    // Every flow left through some uplink (plus at most a few ARP frames).
    let tx: u64 = r.spread.uplinks.iter().map(|u| u.2).sum();
    assert!(tx >= r.spread.flows as u64, "{:?}", r.spread.uplinks);
    // A leaf uplink failure leaves every pair reachable (two spines remain).
    assert!(r.unreachable.is_empty(), "{:?}", r.unreachable);
    assert!(r.failure.entries_changed > 0);
    assert!(
        r.after.ok(),
        "after the failure: missing {:?}",
        r.after.missing
    );
    assert_eq!(r.after.pairs, 56);
    assert!(r.recovery_s.is_some());
    // After the failure the dead uplink carries nothing; the two others carry the flows.
    let dead: Vec<_> = r.spread_after.uplinks.iter().filter(|u| !u.3).collect();
    assert_eq!(dead.len(), 1, "{:?}", r.spread_after.uplinks);
    assert_eq!(dead[0].2, 0, "{:?}", r.spread_after.uplinks);
    assert_eq!(r.spread_after.delivered, r.spread_after.flows);
    assert_eq!(r.spread_after.used(), 2, "{:?}", r.spread_after.uplinks);
    assert!(r.leaked.is_empty(), "{:?}", r.leaked);
    assert!(r.ok());
}

#[test]
fn host_link_failure_is_listed_as_unreachable_and_the_rest_still_reach() {
    if !enabled() {
        return;
    }
    let f = generators::leaf_spine(2, 2, 2, Rate::gbps(100)).unwrap();
    // Link 0 is a host link in the generators (hosts come first).
    let host_link = (0..f.num_links() as u32)
        .map(topo::LinkId)
        .find(|&l| f.is_host(f.link(l).a) || f.is_host(f.link(l).b))
        .unwrap();
    let opts = VerifyOptions {
        fail: Some(host_link),
        ..VerifyOptions::default()
    };
    let r = verify(f, &opts).unwrap();
    assert!(r.before.ok(), "{:?}", r.before.missing);
    // One host cut off: 3 other hosts × 2 directions.
    assert_eq!(r.unreachable.len(), 6, "{:?}", r.unreachable);
    assert_eq!(r.after.pairs, 12 - 6);
    assert!(r.after.ok(), "{:?}", r.after.missing);
    assert!(r.leaked.is_empty());
    let ours = netns::list_ours();
    assert!(
        !ours.iter().any(|n| r.leaked.contains(n)),
        "namespaces left: {ours:?}"
    );
}

#[test]
fn fat_tree_kernel_alone_blackholes_the_failed_leaf_until_reprogrammed() {
    if !enabled() {
        return;
    }
    // k = 4: 16 hosts, 20 switches. The busiest uplink of pod0-leaf0 fails; without a
    // routing update the aggregation switch above it can no longer reach that leaf, yet
    // the other leaves keep hashing flows toward it (28 flows toward the 2 hosts under
    // the leaf, each with ~1/2 chance: all surviving has probability ~2^-28).
    let f = generators::fat_tree(4, Rate::gbps(100)).unwrap();
    let opts = VerifyOptions {
        kernel_first: true,
        ..VerifyOptions::default()
    };
    let r = verify(f, &opts).unwrap();
    assert!(r.before.ok(), "{:?}", r.before.missing);
    assert_eq!(r.before.pairs, 240);
    assert_eq!(r.spread.used(), 2, "{:?}", r.spread.uplinks);
    let k = r.kernel_only.as_ref().expect("kernel-only round");
    assert!(!k.missing.is_empty(), "kernel alone lost nothing?");
    // Only flows toward the hosts under the failed leaf are lost: flows leaving it take
    // its live uplink at once (the local next hop is dead on admin-down).
    for (_, dst) in &k.missing {
        assert!(
            dst == "host0-nic0" || dst == "host1-nic0",
            "{:?}",
            k.missing
        );
    }
    assert_eq!(r.failure.entries_changed, 20);
    assert!(r.after.ok(), "after re-programming: {:?}", r.after.missing);
    assert!(r.leaked.is_empty(), "{:?}", r.leaked);
    assert!(r.ok());
}
