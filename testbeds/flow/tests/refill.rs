//! The incremental re-fill ([`flow_model::refill`]) gives the same max-min rates as a full
//! progressive filling of the flows still running, departure after departure: on random
//! flow sets (weighted multi-link paths, links down, shared bottlenecks) and on a real
//! fabric's all-to-all with ECMP and entropy spraying.

use flow_model::LoadBalance;
use flow_model::eval::capacities;
use flow_model::fill::Filler;
use flow_model::paths::{self, Flow, PathSet};
use flow_model::refill::Refill;
use proptest::prelude::*;
use topo::{NodeId, Rate, Routes, generators};

/// The flows `keep` of `ps` as a path set of their own.
fn subset(ps: &PathSet, keep: &[u32]) -> PathSet {
    PathSet::from_paths(keep.iter().map(|&i| {
        let (l, w) = ps.entries(i as usize);
        l.iter().copied().zip(w.iter().copied())
    }))
}

/// Runs `batches` departures (each a list of positions into the running flows, taken
/// modulo their number) incrementally and checks every step against a full re-fill.
fn check_departures(ps: &PathSet, cap: &[f64], batches: &[Vec<usize>]) -> Result<(), String> {
    let mut filler = Filler::default();
    let mut rate = filler.max_min(ps, cap);
    let mut running: Vec<u32> = (0..ps.len() as u32).collect();
    let mut refill = Refill::new(ps, &rate, &running, cap);
    let top = cap.iter().copied().fold(0.0, f64::max);
    for batch in batches {
        if running.is_empty() {
            break;
        }
        let mut gone: Vec<u32> = batch.iter().map(|&k| running[k % running.len()]).collect();
        gone.sort_unstable();
        gone.dedup();
        running.retain(|f| gone.binary_search(f).is_err());
        refill.after_departures(&mut filler, ps, cap, &mut rate, &running, &gone);
        let full = Filler::default().max_min(&subset(ps, &running), cap);
        for (k, &fi) in running.iter().enumerate() {
            let (a, b) = (rate[fi as usize], full[k]);
            if (a - b).abs() > 1e-9 * a.abs().max(b.abs()) + 1e-12 * top {
                return Err(format!(
                    "flow {fi}: incremental {a} vs full {b} after {gone:?} left"
                ));
            }
        }
    }
    Ok(())
}

/// A random path: 1–4 distinct links, each with a weight (a sprayed flow's share) or 1.
fn path(links: u32) -> impl Strategy<Value = Vec<(u32, f64)>> {
    (
        prop::collection::btree_set(0..links, 1..=4),
        prop::bool::ANY,
        prop::collection::vec(0.05f64..1.0, 4),
    )
        .prop_map(|(set, weighted, ws)| {
            set.into_iter()
                .zip(ws)
                .map(|(d, w)| (d, if weighted { w } else { 1.0 }))
                .collect()
        })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(300))]

    #[test]
    fn incremental_refill_equals_a_full_refill(
        paths in prop::collection::vec(path(12), 1..60),
        caps in prop::collection::vec(prop_oneof![1 => Just(0.0), 6 => 1.0f64..400.0], 12),
        batches in prop::collection::vec(prop::collection::vec(0usize..1000, 1..5), 1..30),
    ) {
        let ps = PathSet::from_paths(&paths);
        check_departures(&ps, &caps, &batches).map_err(TestCaseError::fail)?;
    }
}

/// Equal capacities and equal paths make many exact ties: flows frozen together, departed
/// flows at the same level as kept ones.
#[test]
fn ties_between_departed_and_kept_flows() {
    let ps = PathSet::from_paths((0..24u32).map(|i| [(i % 4, 1.0), (4 + i % 3, 1.0)]));
    let batches: Vec<Vec<usize>> = (0..20).map(|k| vec![k * 7, k * 3 + 1]).collect();
    check_departures(&ps, &[100.0; 7], &batches).unwrap();
}

/// A 2:1 leaf–spine all-to-all (64 hosts, 4032 flows) with ECMP and with 128 entropy
/// values, two links down, flows leaving in batches of growing size.
#[test]
fn all_to_all_on_a_fabric_matches_a_full_refill() {
    let f = generators::leaf_spine_spec(8, 4, 8, 1, Rate::gbps(100))
        .build("leaf-spine-2to1")
        .unwrap();
    let mut routes = Routes::compute(&f);
    let failed = topo::failures::random_links(&f, 2, 3);
    routes.fail_links(&f, &failed);
    let cap = capacities(&f, &routes);
    let hosts: Vec<NodeId> = f.hosts().collect();
    let mut flows = Vec::new();
    for &a in &hosts {
        for &b in &hosts {
            if a != b {
                flows.push(Flow {
                    src: a,
                    dst: b,
                    id: 0,
                });
            }
        }
    }
    let batches: Vec<Vec<usize>> = (0..40)
        .map(|k| (0..1 + k * 3).map(|j| j * 997 + k * 131).collect())
        .collect();
    for lb in [
        LoadBalance::Ecmp { seed: 1 },
        LoadBalance::Entropy { evs: 128, seed: 7 },
    ] {
        let ps = paths::build(&f, &routes, &flows, lb);
        check_departures(&ps, &cap, &batches).unwrap_or_else(|e| panic!("{lb:?}: {e}"));
    }
}
