//! Invariants of max-min fair rates, on random path sets and on real fabrics with random
//! failures: no link over capacity, every routed flow has a bottleneck (a saturated link
//! where no flow gets more), and the rates equal a brute-force water-filling solver.

#![allow(clippy::needless_range_loop)] // index loops mirror the math of the brute-force solver

use flow_model::LoadBalance;
use flow_model::fill::{Filler, link_loads};
use flow_model::paths::{self, Flow, PathSet};
use proptest::prelude::*;
use topo::{NodeId, Rate, Routes, generators};

const TOL: f64 = 1e-6;

/// Brute force: raise every unfrozen flow together, one smallest step at a time, scanning
/// all links every round (O(rounds × links × flows)).
fn brute(ps: &PathSet, cap: &[f64]) -> Vec<f64> {
    let n = ps.len();
    let mut rate = vec![0.0; n];
    let mut frozen: Vec<bool> = (0..n).map(|i| ps.unroutable(i)).collect();
    while frozen.iter().any(|f| !f) {
        let mut best = f64::INFINITY;
        for (d, &c) in cap.iter().enumerate() {
            let (mut used, mut w) = (0.0, 0.0);
            for i in 0..n {
                let (l, ws) = ps.entries(i);
                for (&x, &y) in l.iter().zip(ws) {
                    if x as usize == d {
                        used += y * rate[i];
                        if !frozen[i] {
                            w += y;
                        }
                    }
                }
            }
            if w > 0.0 {
                best = best.min((c - used) / w);
            }
        }
        for i in 0..n {
            if !frozen[i] {
                rate[i] += best;
            }
        }
        let load = link_loads(ps, &rate, cap.len());
        for i in 0..n {
            if frozen[i] {
                continue;
            }
            let (l, _) = ps.entries(i);
            if l.iter()
                .any(|&d| load[d as usize] >= cap[d as usize] * (1.0 - 1e-9))
            {
                frozen[i] = true;
            }
        }
    }
    rate
}

fn check_invariants(ps: &PathSet, cap: &[f64], rate: &[f64]) -> Result<(), TestCaseError> {
    let load = link_loads(ps, rate, cap.len());
    for (d, (&l, &c)) in load.iter().zip(cap).enumerate() {
        prop_assert!(l <= c * (1.0 + TOL) + TOL, "link {d} load {l} > cap {c}");
    }
    for i in 0..ps.len() {
        if ps.unroutable(i) {
            prop_assert_eq!(rate[i], 0.0);
            continue;
        }
        let (links, _) = ps.entries(i);
        let bottleneck = links.iter().any(|&d| {
            let d = d as usize;
            let saturated = load[d] >= cap[d] * (1.0 - TOL) - TOL;
            let max_here = (0..ps.len())
                .filter(|&j| ps.entries(j).0.contains(&(d as u32)))
                .all(|j| rate[j] <= rate[i] * (1.0 + TOL) + TOL);
            saturated && max_here
        });
        prop_assert!(
            bottleneck,
            "flow {i} (rate {}) has no bottleneck link",
            rate[i]
        );
    }
    Ok(())
}

fn arb_case() -> impl Strategy<Value = (PathSet, Vec<f64>)> {
    (1usize..8, 1usize..12).prop_flat_map(|(nl, nf)| {
        let caps = prop::collection::vec(1.0f64..100.0, nl);
        let paths = prop::collection::vec(
            prop::collection::btree_map(0..nl as u32, prop_oneof![Just(1.0f64), 0.1f64..1.0], 0..4),
            nf,
        );
        (paths, caps).prop_map(|(paths, caps)| {
            let ps = PathSet::from_paths(paths.into_iter().map(|p| p.into_iter()));
            (ps, caps)
        })
    })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(400))]

    #[test]
    fn random_cases_match_brute_force((ps, cap) in arb_case()) {
        let r = Filler::default().max_min(&ps, &cap);
        check_invariants(&ps, &cap, &r)?;
        let b = brute(&ps, &cap);
        for (i, (x, y)) in r.iter().zip(&b).enumerate() {
            prop_assert!((x - y).abs() <= 1e-6 * (1.0 + y.abs()), "flow {i}: {x} vs brute force {y}");
        }
    }

    #[test]
    fn fat_tree_with_failures(
        fails in prop::collection::vec(0usize..10_000, 0..6),
        pairs in prop::collection::vec((0u32..16, 0u32..16), 1..24),
        lb in 0u8..4,
        seed in any::<u64>(),
    ) {
        let f = generators::fat_tree(4, Rate::gbps(100)).unwrap();
        let mut routes = Routes::compute(&f);
        let links: Vec<topo::LinkId> = fails.iter().map(|&i| topo::LinkId((i % f.num_links()) as u32)).collect();
        routes.fail_links(&f, &links);
        let flows: Vec<Flow> = pairs.iter().enumerate()
            .map(|(i, &(a, b))| Flow { src: NodeId(a), dst: NodeId(b), id: i as u64 })
            .collect();
        let lb = match lb {
            0 => LoadBalance::Ecmp { seed },
            1 => LoadBalance::Spray,
            2 => LoadBalance::Entropy { evs: 16, seed },
            _ => LoadBalance::Adaptive { seed },
        };
        let ps = paths::build(&f, &routes, &flows, lb);
        let cap = flow_model::eval::capacities(&f, &routes);
        // no path over a down link; every routed flow leaves its source and reaches its destination
        for i in 0..ps.len() {
            let (l, _) = ps.entries(i);
            prop_assert!(l.iter().all(|&d| cap[d as usize] > 0.0));
            if flows[i].src != flows[i].dst && routes.host_ports(flows[i].src, flows[i].dst).next().is_some() {
                prop_assert!(!ps.unroutable(i), "flow {i} reachable but unrouted");
            }
        }
        let r = Filler::default().max_min(&ps, &cap);
        check_invariants(&ps, &cap, &r)?;
        let b = brute(&ps, &cap);
        for (x, y) in r.iter().zip(&b) {
            prop_assert!((x - y).abs() <= 1e-6 * (1.0 + y.abs()));
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(300))]

    /// Rates files with any numbers (unbounded, NaN, infinite) and any class names: never
    /// a panic; accepted values are in range; errors name the file and a field.
    #[test]
    fn rates_parser_takes_any_input(
        class in prop_oneof![
            Just("leaf".to_string()), Just("spine".to_string()), Just("nic".to_string()),
            Just("host_link".to_string()), "[a-z_]{1,12}",
        ],
        field in prop_oneof![Just("afr_percent".to_string()), Just("mttr_hours".to_string()), "[a-z_]{1,12}"],
        value in prop_oneof![
            any::<f64>().prop_map(|v| format!("{v:?}")),
            any::<i64>().prop_map(|v| v.to_string()),
            Just("nan".to_string()), Just("inf".to_string()), Just("-inf".to_string()),
            "\"[a-z]{0,5}\"",
        ],
        junk in "[ -~]{0,20}",
    ) {
        let text = format!("[{class}]\n{field} = {value}\n");
        match flow_model::rates::Rates::parse_toml(&text, "r.toml") {
            Ok(r) => {
                for (_, c) in r.classes() {
                    prop_assert!(c.afr_percent.is_finite() && c.afr_percent >= 0.0);
                    prop_assert!(c.mttr_hours.is_finite() && c.mttr_hours > 0.0);
                }
            }
            Err(e) => prop_assert!(e.to_string().starts_with("r.toml: "), "{e}"),
        }
        // arbitrary text: an error or defaults, never a panic
        let _ = flow_model::rates::Rates::parse_toml(&junk, "j.toml");
    }
}
