//! Flow-model and planner timings (one core for the model; the planner here runs its
//! trials on one thread too). `cargo bench -p flow-model --bench flow`.
//!
//! Prints one line per case: what, wall time (best of a few runs), and sizes.

use std::hint::black_box;
use std::time::Instant;

use flow_model::LoadBalance;
use flow_model::eval::{Evaluator, Job};
use flow_model::planner::{self, Aggregate, Cache, Design, PlanConfig};
use flow_model::rates::Rates;
use flow_model::traffic::Pattern;
use topo::{Fabric, NodeId, Rate, Routes};

fn best<T>(n: usize, mut f: impl FnMut() -> T) -> (T, f64) {
    let mut out = None;
    let mut b = f64::INFINITY;
    for _ in 0..n {
        let t = Instant::now();
        let v = f();
        b = b.min(t.elapsed().as_secs_f64());
        out = Some(v);
    }
    (out.expect("n ≥ 1"), b)
}

fn mp8_k40() -> Fabric {
    let text = include_str!("../../../docs/planner/mp8-k40.toml");
    topo::Spec::parse(text, topo::Format::Toml, "mp8-k40.toml")
        .and_then(|s| s.build("mp8-k40.toml"))
        .expect("the shipped spec builds")
}

/// NICs in plane 0 (a flat collective must stay inside one plane of a multi-plane fabric).
fn plane0(f: &Fabric) -> Vec<NodeId> {
    f.hosts()
        .filter(|&h| f.attachment(h, 0).is_some())
        .collect()
}

fn allreduce_case(name: &str, f: &Fabric, lb: LoadBalance) {
    let (routes, tr) = best(1, || Routes::compute(f));
    let ranks: Vec<NodeId> = f.hosts().collect();
    let mut ev = Evaluator::default();
    for (label, pattern) in [
        (
            "hierarchical all-reduce (rail rings)",
            Pattern::Hierarchical {
                ranks: ranks.clone(),
                scale_up_bps: 3.6e12,
                channels: 4,
            },
        ),
        (
            "double-binary-tree all-reduce, plane 0",
            Pattern::TreeAllReduce { ranks: plane0(f) },
        ),
    ] {
        let job = Job {
            name: label.into(),
            pattern,
            bytes: 1e9,
        };
        let (r, t) = best(3, || {
            ev.evaluate(f, &routes, std::slice::from_ref(&job), lb, 10)
        });
        println!(
            "{name:14} {label:38} {lb:?}: {:8.1} ms  ({} GPUs, {} flows, busbw {:.1} GB/s; routes {:.0} ms)",
            t * 1e3,
            f.num_gpus(),
            r.jobs[0].flows,
            r.jobs[0].busbw_bytes_per_s / 1e9,
            tr * 1e3
        );
        black_box(r);
    }
}

fn k16_permutation() {
    // the packet simulator's anchor workload: k=16 fat-tree, 1024 hosts, permutation,
    // 2 MB per flow at 100 Gb/s (README: sim-bench --k 16)
    let f = topo::generators::fat_tree(16, Rate::gbps(100)).unwrap();
    let routes = Routes::compute(&f);
    let hosts: Vec<NodeId> = f.hosts().collect();
    let mut ev = Evaluator::default();
    for lb in [LoadBalance::Ecmp { seed: 1 }, LoadBalance::Spray] {
        let job = Job {
            name: "perm".into(),
            pattern: Pattern::Permutation {
                hosts: hosts.clone(),
                seed: 1,
            },
            bytes: 2e6,
        };
        let (r, t) = best(3, || {
            ev.evaluate(&f, &routes, std::slice::from_ref(&job), lb, 0)
        });
        println!(
            "fat-tree-k16   permutation 1024 × 2 MB (fluid, re-filled)   {lb:?}: {:8.1} ms  (completion {:.1} us)",
            t * 1e3,
            r.jobs[0].time_s * 1e6
        );
    }
}

fn k8_all_to_all() {
    // issue 22's slow case: k=8 fat-tree, all-to-all over 64 hosts, 1 MB per rank
    // (4,032 flows finishing at staggered times: one re-fill per batch of completions)
    let f = topo::generators::fat_tree(8, Rate::gbps(100)).unwrap();
    let routes = Routes::compute(&f);
    let hosts: Vec<NodeId> = f.hosts().take(64).collect();
    let mut ev = Evaluator::default();
    for lb in [LoadBalance::Ecmp { seed: 1 }, LoadBalance::Spray] {
        let job = Job {
            name: "a2a".into(),
            pattern: Pattern::AllToAll {
                hosts: hosts.clone(),
            },
            bytes: 1e6,
        };
        let (r, t) = best(3, || {
            ev.evaluate(&f, &routes, std::slice::from_ref(&job), lb, 0)
        });
        println!(
            "fat-tree-k8    all-to-all 64 hosts × 1 MB (fluid, re-filled)  {lb:?}: {:8.1} ms  (busbw {:.2} GB/s)",
            t * 1e3,
            r.jobs[0].busbw_bytes_per_s / 1e9
        );
    }
}

fn leaf_spine_all_to_all() {
    // the extended faithfulness table's slowest rows (docs/planner.md): 2:1 leaf–spine,
    // 128 hosts, all-to-all 32 KB per pair (16,256 flows); path building and the fluid
    // completion times (re-filled after each batch of completions) timed apart
    let f = topo::generators::leaf_spine_spec(16, 4, 8, 1, Rate::gbps(100))
        .build("leaf-spine-2to1")
        .unwrap();
    let routes = Routes::compute(&f);
    let hosts: Vec<NodeId> = f.hosts().collect();
    let mut flows = Vec::new();
    for &a in &hosts {
        for &b in &hosts {
            if a != b {
                flows.push(flow_model::paths::Flow {
                    src: a,
                    dst: b,
                    id: 0,
                });
            }
        }
    }
    let cap = flow_model::eval::capacities(&f, &routes);
    let bits = vec![32e3 * 8.0; flows.len()];
    let mut ev = Evaluator::default();
    for lb in [
        LoadBalance::Ecmp { seed: 1 },
        LoadBalance::Entropy { evs: 128, seed: 7 },
        LoadBalance::Spray,
    ] {
        let (ps, tp) = best(7, || flow_model::paths::build(&f, &routes, &flows, lb));
        let (fin, tf) = best(7, || {
            (ev.refills, ev.refilled_flows) = (0, 0);
            ev.finish_times(&ps, &cap, &bits, None)
        });
        println!(
            "leaf-spine-2:1 all-to-all 128 hosts × 32 KB per pair {lb:?}: paths {:7.1} ms, completion times {:7.1} ms  ({} flows, {} path entries, {} re-fills of {:.0} flows on average, last {:.1} us)",
            tp * 1e3,
            tf * 1e3,
            flows.len(),
            ps.link.len(),
            ev.refills,
            ev.refilled_flows as f64 / ev.refills.max(1) as f64,
            fin.iter().copied().fold(0.0, f64::max) * 1e6
        );
    }
}

fn planner_case(name: &str, f: &Fabric, gpus: u64, trials: u32) {
    let cfg = PlanConfig {
        job_gpus: gpus,
        days: 30.0,
        trials,
        seed: 1,
        lb: LoadBalance::Ecmp { seed: 1 },
        checkpoint_hours: 1.0,
        restart_minutes: 10.0,
        scale_up_gbps: 3600.0,
        channels: 4,
        rates: Rates::default(),
        scope: planner::FailureScope::All,
        reroute_interrupt: 0.5,
        recovery: Default::default(),
    };
    let (d, tp) = best(1, || Design::new(f, &cfg).unwrap());
    let t0 = Instant::now();
    let mut cache = Cache::default();
    let mut agg = Aggregate::default();
    for t in 0..trials {
        planner::run_trial(&d, t, &mut cache, &mut agg, false);
    }
    let dt = t0.elapsed().as_secs_f64();
    println!(
        "{name:14} planner, {gpus}-GPU job, 30 days: {:6.2} trials/s on one thread ({trials} trials in {dt:.2} s, {} states evaluated, {} reused, {:.1} failures/trial; set-up {:.0} ms)",
        trials as f64 / dt,
        agg.evaluations,
        agg.cache_hits,
        agg.failures.iter().sum::<u64>() as f64 / trials as f64,
        tp * 1e3
    );
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let only = |s: &str| {
        args.iter()
            .skip(1)
            .filter(|a| !a.starts_with('-'))
            .all(|a| s.contains(a.as_str()))
    };
    if only("model-a2a") {
        leaf_spine_all_to_all();
    }
    if only("model") {
        k8_all_to_all();
        k16_permutation();
        let ds = topo::presets::build("deepseek-mpft").unwrap();
        allreduce_case("deepseek-mpft", &ds, LoadBalance::Ecmp { seed: 1 });
        allreduce_case("deepseek-mpft", &ds, LoadBalance::Spray);
        let big = mp8_k40();
        allreduce_case("mp8-k40", &big, LoadBalance::Ecmp { seed: 1 });
        allreduce_case("mp8-k40", &big, LoadBalance::Spray);
    }
    if only("planner") {
        planner_case(
            "deepseek-mpft",
            &topo::presets::build("deepseek-mpft").unwrap(),
            4096,
            20,
        );
        planner_case(
            "alibaba-hpn",
            &topo::presets::build("alibaba-hpn").unwrap(),
            4096,
            20,
        );
    }
}
