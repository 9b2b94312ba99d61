//! Routing benchmarks (a bench binary, not timed tests): `cargo bench -p topo --bench routing`.
//!
//! Each case runs in its own child process so its peak memory (VmHWM from
//! /proc/self/status) is its own. Figures are wall-clock on one thread. The baseline for
//! writing the k=64 tables is a fill of an array of the same size in the same run
//! (the memory-bandwidth floor).

use std::hint::black_box;
use std::time::Instant;

use topo::lft::Lft;
use topo::routing::Routes;
use topo::{Fabric, NodeId, Rate, generators};

fn vm_hwm_mib() -> f64 {
    let s = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    s.lines()
        .find(|l| l.starts_with("VmHWM:"))
        .and_then(|l| l.split_whitespace().nth(1))
        .and_then(|v| v.parse::<f64>().ok())
        .map_or(f64::NAN, |kb| kb / 1024.0)
}

fn time<T>(f: impl FnOnce() -> T) -> (T, f64) {
    let t = Instant::now();
    let v = f();
    (v, t.elapsed().as_secs_f64())
}

/// Best time of `n` runs; earlier results are dropped before the next run so the peak
/// memory is that of one result.
fn best<T>(n: usize, mut f: impl FnMut() -> T) -> (T, f64) {
    let mut t = f64::INFINITY;
    for _ in 1..n {
        let (v, t2) = time(&mut f);
        drop(v);
        t = t.min(t2);
    }
    let (v, t2) = time(&mut f);
    (v, t.min(t2))
}

fn row(case: &str, what: &str, secs: f64, extra: &str) {
    println!(
        "| {case} | {what} | {:.1} ms | {extra} | {:.0} MiB |",
        secs * 1e3,
        vm_hwm_mib()
    );
}

fn lft_case(k: u32, reps: usize) {
    let case = format!("fat-tree k={k}");
    let (f, tg) = time(|| generators::fat_tree(k, Rate::gbps(400)).unwrap());
    row(
        &case,
        "generate",
        tg,
        &format!(
            "{} hosts, {} switches, {} links",
            f.num_hosts(),
            f.num_switches(),
            f.num_links()
        ),
    );
    let (r, te) = best(reps, || Routes::compute(&f));
    row(
        &case,
        "ECMP tables (per ToR)",
        te,
        &format!("{} entries, {} groups", r.num_entries(), r.groups().len()),
    );
    let (lft, tl) = best(reps, || Lft::compute(&f, &r));
    row(
        &case,
        "single-path LFT from ECMP",
        tl,
        &format!("{} entries, {} bytes", lft.num_entries(), lft.bytes()),
    );
    row(
        &case,
        "ECMP + LFT (total)",
        te + tl,
        "≤ 0.2 s (k=48) / ≤ 1 s (k=64) targets",
    );
    // Memory-bandwidth floor: fill an equal-size array, fresh (page faults included, like
    // a new table) and already mapped (pure write bandwidth).
    let n = lft.bytes();
    let ((), tf) = best(reps, || {
        let mut v = vec![0u8; n];
        v.fill(7);
        black_box(&v);
    });
    row(
        &case,
        "baseline: fill a fresh equal-size array",
        tf,
        &format!("new LFT / fresh fill = {:.2}×", tl / tf),
    );
    let mut lft_re = lft.clone();
    let ((), tr) = best(reps, || lft_re.recompute(&f, &r));
    let mut buf = vec![0u8; n];
    buf.fill(1);
    let mut x = 2u8;
    let ((), tm) = best(reps, || {
        buf.fill(x);
        x = x.wrapping_add(1);
        black_box(&buf);
    });
    row(
        &case,
        "single-path LFT recomputed into existing arrays",
        tr,
        &format!("{:.2}× the mapped fill", tr / tm),
    );
    row(
        &case,
        "baseline: fill a mapped equal-size array (memory-bandwidth floor)",
        tm,
        &format!("{:.2} GB/s", n as f64 / tm / 1e9),
    );
    drop(buf);
    drop(lft_re);
    if k >= 32 {
        // One link failure: a leaf uplink in pod 0, then an agg-core link.
        let leaf = f.switches_in_tier(1).next().unwrap();
        let up = f.port_link(leaf, (k / 2) as u16);
        let agg = f.switches_in_tier(2).next().unwrap();
        let agg_up = f.port_link(agg, (k / 2) as u16);
        for (name, l) in [("leaf-agg", up), ("agg-core", agg_up)] {
            let mut r2 = r.clone();
            let mut lft2 = lft.clone();
            let (rep, te) = time(|| r2.fail_links(&f, &[l]));
            let ((), tl) = time(|| lft2.update(&f, &r2, &rep.changed));
            row(
                &case,
                &format!(
                    "re-route one {name} link failure: ECMP {:.1} ms + LFT {:.1} ms",
                    te * 1e3,
                    tl * 1e3
                ),
                te + tl,
                &format!(
                    "{} dests recomputed, {} entries patched, {} changed",
                    rep.dests_recomputed,
                    rep.entries_patched,
                    rep.changed.len()
                ),
            );
            black_box(&lft2);
        }
    }
}

fn verify_case(k: u32) {
    let case = format!("fat-tree k={k}");
    let f = generators::fat_tree(k, Rate::gbps(400)).unwrap();
    let r = Routes::compute(&f);
    let (v, t) = time(|| topo::verify::verify(&f, &r));
    assert!(v.ok());
    row(
        &case,
        "verify all pairs",
        t,
        &format!(
            "{} host pairs, {} leaf pairs, CDG {} channels / {} edges",
            v.reachable_pairs, v.leaf_pairs, v.cdg_channels, v.cdg_edges
        ),
    );
}

fn multiplane_spec() -> topo::Spec {
    // 8 planes of a k=40 fat-tree, 12,800 servers × 8 GPUs × 8 single-port NICs (one per plane).
    let mut s = generators::fat_tree_spec(40, Rate::gbps(400));
    s.name = "mp8-k40".into();
    s.planes[0].copies = 8;
    s.hosts.nics_per_server = 8;
    s.hosts.gpus_per_server = 8;
    s.hosts.servers = Some(12_800);
    s
}

fn multiplane_case() {
    let (f, tg) = time(|| multiplane_spec().build("bench").unwrap());
    let case = "8-plane k=40 Clos";
    row(
        case,
        "generate",
        tg,
        &format!(
            "{} GPUs, {} NICs, {} switches, {} links",
            f.num_gpus(),
            f.num_hosts(),
            f.num_switches(),
            f.num_links()
        ),
    );
    let (r, te) = best(3, || Routes::compute(&f));
    row(
        case,
        "ECMP tables (per ToR)",
        te,
        &format!(
            "{} entries, {} groups; ≤ 1 s target",
            r.num_entries(),
            r.groups().len()
        ),
    );
    black_box(NodeId(0));
    black_box::<&Fabric>(&f);
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    if let Ok(case) = std::env::var("TOPO_BENCH_CASE") {
        match case.as_str() {
            "k16" => lft_case(16, 3),
            "k32" => lft_case(32, 3),
            "k48" => lft_case(48, 3),
            "k64" => lft_case(64, 2),
            "verify32" => verify_case(32),
            "mp" => multiplane_case(),
            _ => panic!("unknown case {case}"),
        }
        return;
    }
    let only: Option<&String> = args.iter().skip(1).find(|a| !a.starts_with('-'));
    println!("| fabric | step | time | detail | peak RSS (VmHWM) |");
    println!("|---|---|---|---|---|");
    for case in ["k16", "k32", "k48", "k64", "verify32", "mp"] {
        if only.is_some_and(|o| o != case) {
            continue;
        }
        let st = std::process::Command::new(std::env::current_exe().unwrap())
            .env("TOPO_BENCH_CASE", case)
            .status()
            .expect("spawn bench case");
        assert!(st.success(), "case {case} failed");
    }
}
