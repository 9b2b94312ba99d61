//! Issue 15's scenario: a k=16 fat-tree with 600 failed switch–switch links (seed 2, the
//! draw of `fabric routes verify fat-tree-k16 --fail-links 600 --seed 2`; the default seed 1 strands 2,048) leaves 6,144 host pairs
//! with a live path but no up*/down* path. Routed around on further lanes, every one of
//! them is reachable, loop-free, and every lane's channel dependency graph is acyclic.

use topo::lanes::{MAX_LANES, route_around};
use topo::verify::{verify, verify_lanes};

#[test]
fn k16_with_600_failed_links_routes_the_6144_stranded_pairs_deadlock_free() {
    let f = topo::presets::build("fat-tree-k16").unwrap();
    let mut r = topo::Routes::compute(&f);
    let links = topo::failures::random_links_checked(&f, 600, 2).unwrap();
    r.fail_links(&f, &links);
    let before = verify(&f, &r);
    assert_eq!(before.unreachable_no_updown, 6144, "the issue's figure");
    let disconnected = before.unreachable_disconnected;

    let lanes = route_around(&f, &mut r, MAX_LANES).unwrap();
    let after = verify_lanes(&f, &r, &lanes);
    assert_eq!(after.pairs_on_extra_lanes, 6144);
    assert_eq!(after.unreachable_no_updown, 0);
    assert_eq!(after.unreachable_disconnected, disconnected);
    assert_eq!(after.unreachable_pairs, disconnected);
    assert_eq!(
        (after.loops, after.black_holes, after.updown_violations),
        (0, 0, 0)
    );
    assert!(after.cdg_acyclic, "{:?}", after.lanes);
    assert!(lanes.used >= 2 && after.lanes.iter().all(|l| l.acyclic));
    assert_eq!(after.lanes.len(), lanes.used as usize);
    println!(
        "k=16, 600 failed links: {} leaf pairs on further lanes ({:?} per lane), {} lanes, {} detour entries, {} disconnected host pairs",
        lanes.pairs().len(),
        lanes.per_lane,
        lanes.used,
        lanes.entries_added,
        disconnected
    );
    // Two lanes allowed but more needed: a clear error, and the tables stay up*/down*.
    if lanes.used > 2 {
        let e = route_around(&f, &mut r, 2).unwrap_err().to_string();
        assert!(e.contains("needs more than 2 lanes"), "{e}");
        assert!(r.detours().is_empty());
    }
}
