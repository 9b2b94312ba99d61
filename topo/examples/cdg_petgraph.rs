//! The channel-dependency (deadlock) check as `verify` runs it — Kahn's algorithm over a
//! graph kept implicit (per-switch bitsets of in-port → out-port dependencies, edges
//! enumerated on the fly) — against the same check with the graph materialised in petgraph
//! and `toposort`, on healthy fat-trees. Same answers asserted; medians of alternating runs.
//!
//! `cargo run --release -p topo --example cdg_petgraph -- [K...]` (default 16 32)

use std::time::Instant;

use topo::{Rate, Routes, generators};

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

fn main() {
    let ks: Vec<u32> = std::env::args()
        .skip(1)
        .filter_map(|a| a.parse().ok())
        .collect();
    let ks = if ks.is_empty() { vec![16, 32] } else { ks };
    for k in ks {
        let f = generators::fat_tree(k, Rate::gbps(400)).expect("valid k");
        let r = Routes::compute(&f);
        let (mut own, mut pg) = (Vec::new(), Vec::new());
        for _ in 0..5 {
            let t = Instant::now();
            let a = topo::verify::cdg_check(&f, &r);
            own.push(t.elapsed().as_secs_f64() * 1e3);
            let t = Instant::now();
            let b = topo::verify::cdg_check_petgraph(&f, &r);
            pg.push(t.elapsed().as_secs_f64() * 1e3);
            assert_eq!(a, b, "the two checks disagree");
        }
        let (c, e, ok) = topo::verify::cdg_check(&f, &r);
        let (a, b) = (median(own), median(pg));
        println!(
            "fat-tree k={k}: {c} channels, {e} dependencies, acyclic {ok}: implicit Kahn {a:.1} ms, petgraph {b:.1} ms ({:.1}× slower)",
            b / a
        );
    }
}
