//! How long routing around up*/down* dead ends on further lanes takes
//! (`topo::lanes::route_around`), against the routing and the verification of the same
//! failed fabric (seeded random switch–switch link failures):
//!
//! ```sh
//! cargo run --release -p topo --example lanes_scale [K[:AMOUNT[:SEED]] ...]   # default: 16:600l 48:1
//! ```
//! AMOUNT is a percentage of the switch–switch links, or a count with `l` (`16:600l`: issue
//! 15's 600 failed links of a k=16 fat-tree); SEED defaults to 1.

use std::time::Instant;

use topo::{Rate, Routes, failures, generators, lanes, verify};

fn main() {
    let cases: Vec<String> = std::env::args().skip(1).collect();
    let cases = if cases.is_empty() {
        vec!["16:600l".to_string(), "48:1".to_string()]
    } else {
        cases
    };
    println!(
        "k   failed  routing+fail  route_around  verify   stranded leaf pairs  host pairs on lanes ≥1  lanes  detour entries"
    );
    for c in cases {
        let mut it = c.split(':');
        let k: u32 = it.next().and_then(|s| s.parse().ok()).expect("K");
        let amount = it.next().unwrap_or("1");
        let seed: u64 = it.next().and_then(|s| s.parse().ok()).unwrap_or(1);
        let f = generators::fat_tree(k, Rate::gbps(400)).expect("fat-tree");
        let sw_links = f.links().iter().filter(|l| !f.is_host(l.a)).count();
        let n = match amount.strip_suffix('l') {
            Some(count) => count.parse().expect("count"),
            None => sw_links * amount.parse::<usize>().expect("percent") / 100,
        };
        let t = Instant::now();
        let mut r = Routes::compute(&f);
        r.fail_links(&f, &failures::random_links(&f, n, seed));
        let routing = t.elapsed();
        let t = Instant::now();
        let l = lanes::route_around(&f, &mut r, lanes::MAX_LANES).expect("lanes");
        let around = t.elapsed();
        let t = Instant::now();
        let v = verify::verify_lanes(&f, &r, &l);
        let verified = t.elapsed();
        assert!(v.cdg_acyclic && v.unreachable_no_updown == 0);
        println!(
            "{k:<3} {n:>6}  {:>9.1} ms  {:>9.1} ms  {:>6.0} ms  {:>19}  {:>22}  {:>5}  {:>14}",
            routing.as_secs_f64() * 1e3,
            around.as_secs_f64() * 1e3,
            verified.as_secs_f64() * 1e3,
            l.pairs().len(),
            v.pairs_on_extra_lanes,
            l.used,
            l.entries_added
        );
    }
}
