//! How long the weighted-ECMP weights take on large fat-trees, healthy and with 1 % of
//! the switch–switch links failed, against the routing itself on the same fabric:
//!
//! ```sh
//! cargo run --release -p topo --example wcmp_scale [K ...]   # default: 16 32 48
//! ```

use std::time::Instant;

use topo::wcmp::Weights;
use topo::{Rate, Routes, failures, generators};

fn main() {
    let ks: Vec<u32> = std::env::args()
        .skip(1)
        .map(|a| a.parse().expect("K: an even number"))
        .collect();
    let ks = if ks.is_empty() { vec![16, 32, 48] } else { ks };
    println!("k    state      routing     weights  weighted entries / all");
    for k in ks {
        let f = generators::fat_tree(k, Rate::gbps(400)).expect("fat-tree");
        let sw_links = f.links().iter().filter(|l| !f.is_host(l.a)).count();
        for pct in [0usize, 1] {
            let t = Instant::now();
            let mut r = Routes::compute(&f);
            if pct > 0 {
                r.fail_links(&f, &failures::random_links(&f, sw_links * pct / 100, 1));
            }
            let routing = t.elapsed();
            let t = Instant::now();
            let w = Weights::compute(&f, &r);
            let weights = t.elapsed();
            println!(
                "{k:<4} {:<9} {:>8.1} ms {:>8.1} ms  {} / {}",
                if pct == 0 { "healthy" } else { "1% links" },
                routing.as_secs_f64() * 1e3,
                weights.as_secs_f64() * 1e3,
                w.len(),
                r.num_entries()
            );
        }
    }
}
