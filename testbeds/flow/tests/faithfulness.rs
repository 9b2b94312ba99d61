//! The flow model against the packet simulator (`sim`) on the same fabric, workload,
//! load balancing and failures: bus bandwidth within 10 % where the simulator's flows are
//! bandwidth-bound. Run optimised: `cargo test -p flow-model --profile ci --test faithfulness`.
//!
//! * The workload is compiled once by `scenario`; the model takes the simulator's flows
//!   (same endpoints, sizes and dependencies). Dependent flows (the steps of a ring
//!   all-reduce) are evaluated level by level: each level's flows finish (fluid
//!   re-filling) before the next starts.
//! * **ECMP**: the model follows the simulator's own hash choices (its per-flow hash and
//!   per-switch salt, reproduced here from `scenario::rng::mix64`), so both see the same
//!   collisions; the model's own seeded hash would give different, equally random ones.
//! * **Spray**: the simulator sprays packets over 128 entropy values, each hashed to a
//!   path; the model follows those hashes (asserted within 10 %), and its own
//!   `LoadBalance::Entropy` (its own hash, 128 values) is asserted within 10 % too. Its
//!   exactly even `LoadBalance::Spray` is printed beside them: the limit of ideal spraying.
//! * Failures are applied before traffic starts (routing has converged): the question
//!   is the bandwidth of the degraded fabric, not the transient.

use cc_algos::{Duration as CcDuration, Rate as CcRate};
use flow_model::LoadBalance;
use flow_model::eval::{Evaluator, capacities};
use flow_model::paths::{self, Flow, PathSet, dlink};
use scenario::rng::mix64;
use scenario::{CompileCtx, Scenario, Workplan};
use sim::{LbScheme, Sim, SimConfig};
use topo::{Fabric, NodeId, Rate, Routes, generators};

const ECMP_SEED: u64 = 0x5EED; // SimConfig::default().ecmp_seed

/// The simulator's ECMP path of a flow (engine.rs: flow hash, host port pin, per-switch salt).
fn sim_ecmp_path(f: &Fabric, routes: &Routes, src: u32, dst: u32, ordinal: u32, ps: &mut PathSet) {
    let hash =
        mix64((src as u64) << 32 ^ dst as u64 ^ mix64(ordinal as u64 ^ ECMP_SEED.rotate_left(17)));
    let (s, d) = (NodeId(src), NodeId(dst));
    let port = (hash % f.degree(s) as u64) as u16;
    let mut link = f.port_link(s, port);
    ps.link.push(dlink(f, link, s));
    ps.weight.push(1.0);
    let mut at = f.peer(s, port);
    while at != d {
        let hops = routes.next_hops(at, d);
        assert!(!hops.is_empty(), "no route at {at} toward {d}");
        let salt = mix64((at.0 as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15) ^ ECMP_SEED);
        let h = mix64(hash ^ salt);
        let p = if hops.len() == 1 {
            hops[0]
        } else {
            hops[((h as u128 * hops.len() as u128) >> 64) as usize]
        };
        link = f.port_link(at, p);
        ps.link.push(dlink(f, link, at));
        ps.weight.push(1.0);
        at = f.peer(at, p);
    }
    ps.off.push(ps.link.len() as u32);
}

/// Entropy values a sprayed flow cycles through (SimConfig::default().evs).
const EVS: u64 = 128;

/// The simulator's oblivious spraying as a weighted split: a host shares a flow evenly
/// over its ports (every port pulls from every active flow); inside the fabric a packet
/// with entropy value `ev` takes the next hop hashed from (flow, switch salt, ev), and the
/// flow cycles through `EVS` values, so each path carries the share of values that hash
/// onto it — not an exactly even split.
fn sim_spray_path(f: &Fabric, routes: &Routes, src: u32, dst: u32, ordinal: u32, ps: &mut PathSet) {
    let hash =
        mix64((src as u64) << 32 ^ dst as u64 ^ mix64(ordinal as u64 ^ ECMP_SEED.rotate_left(17)));
    let (s, d) = (NodeId(src), NodeId(dst));
    let planes: Vec<u16> = routes.host_ports(s, d).map(|(p, _)| p).collect();
    let share = 1.0 / planes.len() as f64;
    let mut out: Vec<(u32, f64)> = Vec::new();
    for p in planes {
        let att = f.attachment(s, p).unwrap();
        out.push((dlink(f, att.link, s), share));
        for ev in 0..EVS {
            let mut at = att.leaf;
            while at != d {
                let hops = routes.next_hops(at, d);
                let salt = mix64((at.0 as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15) ^ ECMP_SEED);
                let h = mix64(hash ^ salt ^ (ev + 1).wrapping_mul(0xA24B_AED4_963E_E407));
                let port = if hops.len() == 1 {
                    hops[0]
                } else {
                    hops[((h as u128 * hops.len() as u128) >> 64) as usize]
                };
                out.push((dlink(f, f.port_link(at, port), at), share / EVS as f64));
                at = f.peer(at, port);
            }
        }
    }
    out.sort_by_key(|e| e.0);
    for (l, w) in out {
        if ps.link.len() > *ps.off.last().unwrap() as usize && *ps.link.last().unwrap() == l {
            *ps.weight.last_mut().unwrap() += w;
        } else {
            ps.link.push(l);
            ps.weight.push(w);
        }
    }
    ps.off.push(ps.link.len() as u32);
}

/// How the model splits a sprayed flow.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Split {
    /// The simulator's own hash choices (ECMP path; spraying's per-entropy-value paths).
    SimHash,
    /// The model's `LoadBalance::Spray`: exactly even over live next hops.
    Even,
    /// The model's `LoadBalance::Entropy` (128 values, its own hash).
    Entropy,
    /// The model's own policy (its ECMP hash, its adaptive routing), one path per
    /// connection.
    Own(LoadBalance),
}

/// A flow of a dependency level as far as its finish time goes: source, destination,
/// connection, bits.
type LevelKey = (u32, u32, u32, f64);

/// Model completion time (s) of a plan's flows, dependency level by level, and the
/// finish time of every flow of the first level.
fn model_time(
    f: &Fabric,
    routes: &Routes,
    plan: &Workplan,
    lb: LbScheme,
    split: Split,
) -> (f64, Vec<f64>) {
    let n = plan.flows.len();
    let mut depth = vec![0usize; n];
    for fl in &plan.flows {
        depth[fl.id as usize] = fl
            .after
            .iter()
            .map(|&a| depth[a as usize] + 1)
            .max()
            .unwrap_or(0);
    }
    let levels = depth.iter().max().map_or(0, |d| d + 1);
    let cap = capacities(f, routes);
    let mut ev = Evaluator::default();
    let mut total = 0.0;
    let mut first = Vec::new();
    let mut last: Option<(Vec<LevelKey>, f64)> = None;
    for lv in 0..levels {
        let flows: Vec<_> = plan
            .flows
            .iter()
            .filter(|fl| depth[fl.id as usize] == lv)
            .collect();
        let bits: Vec<f64> = flows
            .iter()
            .map(|fl| fl.size.expect("sized flows").0 as f64 * 8.0)
            .collect();
        // a ring's steps repeat the same flows on the same connections: same paths,
        // same finish times
        let key: Vec<LevelKey> = flows
            .iter()
            .zip(&bits)
            .map(|(fl, &b)| (fl.src, fl.dst, fl.ordinal, b))
            .collect();
        if let Some((k, t)) = &last
            && *k == key
        {
            total += t;
            continue;
        }
        let ps = match (split, lb) {
            (Split::Own(own), _) => {
                let fs: Vec<Flow> = flows
                    .iter()
                    .map(|fl| Flow {
                        src: NodeId(fl.src),
                        dst: NodeId(fl.dst),
                        id: fl.ordinal as u64,
                    })
                    .collect();
                paths::build(f, routes, &fs, own)
            }
            (Split::Even | Split::Entropy, LbScheme::Spray) => {
                let fs: Vec<Flow> = flows
                    .iter()
                    .map(|fl| Flow {
                        src: NodeId(fl.src),
                        dst: NodeId(fl.dst),
                        id: fl.ordinal as u64,
                    })
                    .collect();
                let lb = if split == Split::Even {
                    LoadBalance::Spray
                } else {
                    LoadBalance::Entropy { evs: 128, seed: 7 }
                };
                paths::build(f, routes, &fs, lb)
            }
            _ => {
                let mut ps = PathSet::new();
                for fl in &flows {
                    if lb == LbScheme::Ecmp {
                        sim_ecmp_path(f, routes, fl.src, fl.dst, fl.ordinal, &mut ps);
                    } else {
                        sim_spray_path(f, routes, fl.src, fl.dst, fl.ordinal, &mut ps);
                    }
                }
                ps
            }
        };
        let fin = ev.finish_times(&ps, &cap, &bits, None);
        let t = fin.iter().copied().fold(0.0, f64::max);
        total += t;
        last = Some((key, t));
        if lv == 0 {
            first = fin;
        }
    }
    (total, first)
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

struct Case {
    name: &'static str,
    fabric: Fabric,
    workload: String,
    failures: usize,
    /// The simulator's retransmission timeout (`None`: its default, ~65 µs). Without
    /// congestion control a contended link queues more than that, and spurious timeouts
    /// then resend whole windows (a storm of buffer drops): every case here sets 10 ms.
    rto: Option<CcDuration>,
}

/// One comparison: bus bandwidth (Gb/s) and the median flow's throughput (Gb/s, first
/// dependency level) in the simulator and in the model.
#[derive(Debug)]
struct Outcome {
    sim: f64,
    /// With the simulator's hash choices.
    model: f64,
    /// With `LoadBalance::Spray` (exactly even split; for ECMP, the same as `model`).
    model_even: f64,
    /// With `LoadBalance::Entropy` (the model's own hash; for ECMP, the same as `model`).
    model_entropy: f64,
    sim_median_flow: f64,
    model_median_flow: f64,
}

/// Runs one case under one scheme.
fn compare(c: &Case, lb: LbScheme) -> Outcome {
    let f = &c.fabric;
    let mut routes = Routes::compute(f);
    let failed = topo::failures::random_links(f, c.failures, 11);
    let mut text = c.workload.clone();
    for &l in &failed {
        let link = f.link(l);
        text.push_str(&format!(
            "\n[[failure]]\nat = \"0us\"\nlink = [{}, {}]\ndetect = \"1us\"\n",
            link.a.0, link.b.0
        ));
    }
    routes.fail_links(f, &failed);
    let plan = Scenario::from_toml_str(&text, c.name)
        .unwrap()
        .compile(&CompileCtx::new(f.num_hosts() as u32, CcRate::gbps(100), 1))
        .unwrap();
    let cfg = SimConfig {
        lb,
        rto: c.rto,
        ..SimConfig::default()
    };
    let r = Sim::from_fabric(f, cfg, &plan).unwrap().run();
    let g = &r.groups[0];
    assert_eq!(g.unfinished, 0, "{}: unfinished flows", c.name);
    let t_sim = (g.end_us.unwrap() - g.start_us) * 1e-6;
    let busbw_sim = g.busbw_gbps.unwrap();
    let (t_model, fin) = model_time(f, &routes, &plan, lb, Split::SimHash);
    let (t_even, _) = model_time(f, &routes, &plan, lb, Split::Even);
    let (t_entropy, _) = model_time(f, &routes, &plan, lb, Split::Entropy);
    let level0: Vec<&sim::results::FlowResult> = r
        .flows
        .iter()
        .filter(|fl| plan.flows[fl.id as usize].after.is_empty())
        .collect();
    let sim_median_flow = median(
        level0
            .iter()
            .map(|fl| fl.size.unwrap() as f64 * 8.0 / fl.fct_us.unwrap() / 1e3)
            .collect(),
    );
    let model_median_flow = median(
        level0
            .iter()
            .zip(&fin)
            .map(|(fl, &t)| fl.size.unwrap() as f64 * 8.0 / t / 1e9)
            .collect(),
    );
    Outcome {
        sim: busbw_sim,
        model: busbw_sim * t_sim / t_model,
        model_even: busbw_sim * t_sim / t_even,
        model_entropy: busbw_sim * t_sim / t_entropy,
        sim_median_flow,
        model_median_flow,
    }
}

fn cases() -> Vec<Case> {
    let k8 = || generators::fat_tree(8, Rate::gbps(100)).unwrap();
    let two_plane = || {
        generators::multi_plane_spec(generators::leaf_spine_spec(8, 4, 8, 1, Rate::gbps(100)), 2)
            .build("two-plane")
            .unwrap()
    };
    // 16 ranks spread over the fabric (every `step`-th host), so ring hops cross leaves
    let ring = |step: usize| {
        let spread: Vec<String> = (0..16).map(|i| (i * step).to_string()).collect();
        format!(
            "[[workload]]\nkind = \"ring_allreduce\"\nhosts = [{}]\nsize = \"32MB\"\nstart = \"10us\"\n",
            spread.join(", ")
        )
    };
    let perm = |size: &str| {
        format!("[[workload]]\nkind = \"permutation\"\nsize = \"{size}\"\nstart = \"10us\"\n")
    };
    let a2a = "[[workload]]\nkind = \"all_to_all\"\nhosts = \"0..32\"\nsize = \"128KB\"\nstart = \"10us\"\n".to_string();
    vec![
        Case {
            name: "k8 permutation",
            fabric: k8(),
            workload: perm("2MB"),
            failures: 0,
            rto: Some(CcDuration::millis(10)),
        },
        Case {
            name: "k8 permutation, 8 links down",
            fabric: k8(),
            workload: perm("2MB"),
            failures: 8,
            rto: Some(CcDuration::millis(10)),
        },
        Case {
            name: "k8 all-to-all 32 hosts",
            fabric: k8(),
            workload: a2a.clone(),
            failures: 0,
            rto: Some(CcDuration::millis(10)),
        },
        Case {
            name: "k8 all-to-all, 8 links down",
            fabric: k8(),
            workload: a2a,
            failures: 8,
            rto: Some(CcDuration::millis(10)),
        },
        Case {
            name: "k8 ring all-reduce 16 ranks",
            fabric: k8(),
            workload: ring(8),
            failures: 0,
            rto: Some(CcDuration::millis(10)),
        },
        Case {
            name: "k8 ring all-reduce, 8 links down",
            fabric: k8(),
            workload: ring(8),
            failures: 8,
            rto: Some(CcDuration::millis(10)),
        },
        Case {
            name: "k16 permutation",
            fabric: generators::fat_tree(16, Rate::gbps(100)).unwrap(),
            workload: perm("2MB"),
            failures: 0,
            rto: Some(CcDuration::millis(10)),
        },
        Case {
            name: "2-plane leaf-spine permutation",
            fabric: two_plane(),
            workload: perm("2MB"),
            failures: 0,
            rto: Some(CcDuration::millis(10)),
        },
        Case {
            name: "2-plane leaf-spine ring",
            fabric: two_plane(),
            workload: ring(4),
            failures: 4,
            rto: Some(CcDuration::millis(10)),
        },
    ]
}

#[test]
fn bus_bandwidth_within_10_percent_of_the_packet_simulator() {
    let mut bad = Vec::new();
    for c in cases() {
        for lb in [LbScheme::Ecmp, LbScheme::Spray] {
            let o = compare(&c, lb);
            let err = o.model / o.sim - 1.0;
            let med = o.model_median_flow / o.sim_median_flow - 1.0;
            eprintln!(
                "{:34} {:5} busbw sim {:7.2} model {:7.2} Gb/s {:+6.1} % (even split {:7.2}, own entropy hash {:7.2}) | median flow sim {:6.2} model {:6.2} Gb/s {:+6.1} %",
                c.name,
                lb.to_string(),
                o.sim,
                o.model,
                100.0 * err,
                o.model_even,
                o.model_entropy,
                o.sim_median_flow,
                o.model_median_flow,
                100.0 * med
            );
            // the simulator's hashes, and the model's own entropy-value spraying
            let ok = err.abs() <= 0.10 && (o.model_entropy / o.sim - 1.0).abs() <= 0.10;
            if !ok {
                bad.push(format!("{} / {lb}: {o:?}", c.name));
            }
        }
    }
    assert!(bad.is_empty(), "outside the bounds: {bad:#?}");
}

/// The contended ring of issue 22: a 2:1 leaf–spine (16 leaves × 8 hosts, 4 spines), 128
/// ranks placed so that every ring edge crosses the spines (rank j on leaf j mod 16), so 8
/// edges leave every leaf over 4 uplinks. With ECMP the ring runs at the rate of its most
/// collided uplink. The simulator keeps each ring edge on one connection (one ECMP hash for
/// all its 254 steps, as NCCL keeps its queue pairs); before that it hashed every step
/// anew and ran 45 % faster than the model, which keeps one path per edge.
fn contended_ring() -> Case {
    let ranks: Vec<String> = (0..128u32)
        .map(|j| ((j % 16) * 8 + j / 16).to_string())
        .collect();
    Case {
        name: "2:1 leaf-spine ring 128 ranks",
        fabric: generators::leaf_spine_spec(16, 4, 8, 1, Rate::gbps(100))
            .build("leaf-spine-2to1")
            .unwrap(),
        workload: format!(
            "[[workload]]\nkind = \"ring_allreduce\"\nhosts = [{}]\nsize = \"16MB\"\nstart = \"10us\"\n",
            ranks.join(", ")
        ),
        failures: 0,
        rto: Some(CcDuration::millis(10)),
    }
}

#[test]
fn contended_ecmp_ring_within_10_percent_of_the_packet_simulator() {
    let c = contended_ring();
    let o = compare(&c, LbScheme::Ecmp);
    let err = o.model / o.sim - 1.0;
    eprintln!(
        "{}: busbw sim {:.2} model {:.2} Gb/s {:+.1} %",
        c.name,
        o.sim,
        o.model,
        100.0 * err
    );
    // contended: well below the 50 Gb/s an even split of the uplinks would give
    assert!(o.sim < 45.0, "{o:?}");
    assert!(err.abs() <= 0.10, "{o:?}");
}

/// Tree all-reduce: the model and the scenario compiler (hence the simulator) build NCCL's
/// double binary tree from one function (`scenario::double_binary_tree`), and the simulator's chunk-pipelined trees run within
/// 10 % of the model's bandwidth. 16 ranks spread over a k=8 fat-tree (full bisection, so
/// the NICs bound the trees: an inner rank of one tree sends to its two children and its
/// parent there and to its parent in the other tree).
#[test]
fn tree_allreduce_within_10_percent_of_the_packet_simulator() {
    let f = generators::fat_tree(8, Rate::gbps(100)).unwrap();
    let routes = Routes::compute(&f);
    let ranks: Vec<u32> = (0..16).map(|i| i * 8).collect();
    let list: Vec<String> = ranks.iter().map(|r| r.to_string()).collect();
    let text = format!(
        "[[workload]]\nkind = \"tree_allreduce\"\nhosts = [{}]\nsize = \"64MB\"\nstart = \"10us\"\n",
        list.join(", ")
    );
    let plan = Scenario::from_toml_str(&text, "tree")
        .unwrap()
        .compile(&CompileCtx::new(f.num_hosts() as u32, CcRate::gbps(100), 1))
        .unwrap();
    let job = flow_model::eval::Job {
        name: "tree".into(),
        pattern: flow_model::traffic::Pattern::TreeAllReduce {
            ranks: ranks.iter().map(|&r| NodeId(r)).collect(),
        },
        bytes: 64e6,
    };
    let mut bad = Vec::new();
    for (lb, model_lb) in [
        (LbScheme::Ecmp, LoadBalance::Ecmp { seed: 1 }),
        (LbScheme::Spray, LoadBalance::Entropy { evs: 128, seed: 7 }),
    ] {
        let cfg = SimConfig {
            lb,
            rto: Some(CcDuration::millis(10)),
            ..SimConfig::default()
        };
        let r = Sim::from_fabric(&f, cfg, &plan).unwrap().run();
        let g = &r.groups[0];
        assert_eq!(g.unfinished, 0);
        let sim = g.busbw_gbps.unwrap();
        let e = Evaluator::default().evaluate(&f, &routes, std::slice::from_ref(&job), model_lb, 0);
        let model = e.jobs[0].busbw_bytes_per_s * 8.0 / 1e9;
        let err = model / sim - 1.0;
        eprintln!(
            "k8 tree all-reduce 16 ranks 64 MB {lb:5}: busbw sim {sim:.2} model {model:.2} Gb/s {:+.1} % (retransmits {})",
            100.0 * err,
            r.totals.retransmits
        );
        if err.abs() > 0.10 {
            bad.push(format!("{lb}: sim {sim:.2} model {model:.2}"));
        }
    }
    assert!(bad.is_empty(), "{bad:?}");
}

/// A 2:1 leaf–spine (4 spines, 8 hosts per leaf): network-limited whenever traffic leaves
/// the leaves.
fn two_to_one(leaves: u32) -> Fabric {
    generators::leaf_spine_spec(leaves, 4, 8, 1, Rate::gbps(100))
        .build("leaf-spine-2to1")
        .unwrap()
}

/// The table's workloads on a 2:1 leaf–spine with `leaves` leaves: a ring whose every edge
/// crosses the spines, an all-to-all (MoE dispatch), a 16:1 incast from other leaves, a
/// permutation.
fn table_cases(leaves: u32) -> Vec<Case> {
    let n = leaves * 8;
    let ring: Vec<String> = (0..n)
        .map(|j| ((j % leaves) * 8 + j / leaves).to_string())
        .collect();
    let senders: Vec<String> = (0..16)
        .map(|i| (8 + i * (n - 8) / 16).to_string())
        .collect();
    let w = |body: String| format!("[[workload]]\n{body}start = \"10us\"\n");
    let case = |name: &'static str, workload: String| Case {
        name,
        fabric: two_to_one(leaves),
        workload,
        failures: 0,
        rto: Some(CcDuration::millis(10)),
    };
    vec![
        case(
            "ring all-reduce 16 MB",
            w(format!(
                "kind = \"ring_allreduce\"\nhosts = [{}]\nsize = \"16MB\"\n",
                ring.join(", ")
            )),
        ),
        // MoE dispatch: 8 MB (64 hosts) and 4 MB (128 hosts) per rank. Without congestion
        // control a larger 128-host all-to-all overflows the simulator's 32 MB switch
        // buffers (drops, 10 ms timeouts: 9.7 Gb/s at 128 KB per pair).
        case(
            if leaves == 8 {
                "all-to-all 128 KB per pair"
            } else {
                "all-to-all 32 KB per pair"
            },
            w(format!(
                "kind = \"all_to_all\"\nsize = \"{}KB\"\n",
                if leaves == 8 { 128 } else { 32 }
            )),
        ),
        case(
            "incast 16:1 1 MB",
            w(format!(
                "kind = \"incast\"\nsenders = [{}]\nreceiver = 0\nsize = \"1MB\"\n",
                senders.join(", ")
            )),
        ),
        case(
            "permutation 2 MB",
            w("kind = \"permutation\"\nsize = \"2MB\"\n".into()),
        ),
    ]
}

/// One row of the extended table: the simulator under `lb` against the model with the
/// simulator's hashes and with its own policy; wall times of both.
struct Row {
    sim: f64,
    sim_s: f64,
    /// Model with the simulator's hash choices (ECMP, spray); NaN for adaptive.
    model_sim_hash: f64,
    /// Model with its own policy: ECMP (its hash), entropy (for spray), adaptive.
    model_own: f64,
    model_own_s: f64,
    /// Model's even split (`LoadBalance::Spray`; spray and adaptive rows).
    model_even: f64,
}

/// Runs per timed figure of the extended table (the best one counts, for the simulator and
/// the model alike: on a shared machine the best run is the least disturbed one).
const TIMED_RUNS: usize = 3;

/// `run()`'s result and its shortest wall time over `n` runs (s).
fn best_of<T>(n: usize, mut run: impl FnMut() -> T) -> (T, f64) {
    let mut out = None;
    let mut best = f64::INFINITY;
    for _ in 0..n.max(1) {
        let t = std::time::Instant::now();
        let v = run();
        best = best.min(t.elapsed().as_secs_f64());
        out = Some(v);
    }
    (out.expect("at least one run"), best)
}

fn table_row(c: &Case, lb: LbScheme, runs: usize) -> Row {
    let f = &c.fabric;
    let routes = Routes::compute(f);
    let plan = Scenario::from_toml_str(&c.workload, c.name)
        .unwrap()
        .compile(&CompileCtx::new(f.num_hosts() as u32, CcRate::gbps(100), 1))
        .unwrap();
    let cfg = SimConfig {
        lb,
        rto: c.rto,
        ..SimConfig::default()
    };
    let (r, sim_s) = best_of(runs, || {
        Sim::from_fabric(f, cfg.clone(), &plan).unwrap().run()
    });
    let g = &r.groups[0];
    assert_eq!(g.unfinished, 0, "{}: unfinished flows", c.name);
    let t_sim = (g.end_us.unwrap() - g.start_us) * 1e-6;
    // bus bandwidth for collectives, delivered bits over the completion time otherwise
    let bits: f64 = plan
        .flows
        .iter()
        .map(|fl| fl.size.unwrap().0 as f64 * 8.0)
        .sum();
    let sim = g.busbw_gbps.unwrap_or(bits / t_sim / 1e9);
    let bw = |t_model: f64| sim * t_sim / t_model;
    let own = match lb {
        LbScheme::Ecmp => LoadBalance::Ecmp { seed: 1 },
        LbScheme::Spray => LoadBalance::Entropy { evs: 128, seed: 7 },
        _ => LoadBalance::Adaptive { seed: 1 },
    };
    let ((t_own, _), model_own_s) =
        best_of(runs, || model_time(f, &routes, &plan, lb, Split::Own(own)));
    let (model_sim_hash, model_even) = match lb {
        LbScheme::Ecmp => (
            bw(model_time(f, &routes, &plan, lb, Split::SimHash).0),
            f64::NAN,
        ),
        LbScheme::Spray => (
            bw(model_time(f, &routes, &plan, lb, Split::SimHash).0),
            bw(model_time(f, &routes, &plan, lb, Split::Even).0),
        ),
        // the simulator's per-packet adaptive routing against the even split
        _ => (
            f64::NAN,
            bw(model_time(f, &routes, &plan, LbScheme::Spray, Split::Even).0),
        ),
    };
    Row {
        sim,
        sim_s,
        model_sim_hash,
        model_own: bw(t_own),
        model_own_s,
        model_even,
    }
}

/// The extended faithfulness table of docs/planner.md (markdown on stderr): every
/// pattern with every load balancing at two fabric sizes, with the wall time of the
/// simulator and of the model (one core each, best of [`TIMED_RUNS`]). Not a test of
/// speed: run it once, with
/// `cargo test -p flow-model --profile ci --test faithfulness -- --ignored --nocapture`.
#[test]
#[ignore = "the full table: a few minutes of simulation"]
fn faithfulness_table() {
    eprintln!(
        "| fabric | workload | LB | sim, Gb/s | model, sim's hashes | Δ | model's own LB | Δ | even spray | sim time | model time | speed-up |"
    );
    eprintln!("|---|---|---|---|---|---|---|---|---|---|---|---|");
    let pct = |a: f64, b: f64| {
        if a.is_nan() {
            String::new()
        } else {
            format!("{:+.1} %", 100.0 * (a / b - 1.0))
        }
    };
    let num = |a: f64| {
        if a.is_nan() {
            String::new()
        } else {
            format!("{a:.2}")
        }
    };
    for leaves in [8, 16] {
        for c in table_cases(leaves) {
            for lb in [LbScheme::Ecmp, LbScheme::Spray, LbScheme::Adaptive] {
                let r = table_row(&c, lb, TIMED_RUNS);
                let own = match lb {
                    LbScheme::Ecmp => "ecmp",
                    LbScheme::Spray => "entropy",
                    _ => "adaptive",
                };
                eprintln!(
                    "| 2:1 leaf–spine, {} hosts | {} | {lb} | {:.2} | {} | {} | {} ({own}) | {} | {} | {:.2} s | {:.1} ms | {:.0}× |",
                    leaves * 8,
                    c.name,
                    r.sim,
                    num(r.model_sim_hash),
                    pct(r.model_sim_hash, r.sim),
                    num(r.model_own),
                    pct(r.model_own, r.sim),
                    num(r.model_even),
                    r.sim_s,
                    r.model_own_s * 1e3,
                    r.sim_s / r.model_own_s
                );
            }
        }
    }
}

/// The table's subset in CI: all-to-all, incast and permutation on the 64-host 2:1
/// leaf–spine. ECMP and spraying: the model with the simulator's hashes and (spraying) its
/// own entropy-value model within 10 % of the simulator. Adaptive: the model's even split
/// (`spray`) bounds the simulator's per-packet adaptive routing from above, by at most
/// 20 % (+14.5 % on the permutation, within 6 % elsewhere; the simulator breaks ties
/// between equally queued next hops from the flow's hash, so the figure moves with the
/// hash key: +8.9 % when it was keyed by flow id); the model's per-flow `adaptive` is up
/// to 27 % below it on a permutation.
#[test]
fn network_limited_patterns_within_10_percent_of_the_packet_simulator() {
    let mut bad = Vec::new();
    for c in table_cases(8).into_iter().skip(1) {
        for lb in [LbScheme::Ecmp, LbScheme::Spray, LbScheme::Adaptive] {
            let r = table_row(&c, lb, 1);
            let checks = match lb {
                LbScheme::Ecmp => vec![r.model_sim_hash],
                LbScheme::Spray => vec![r.model_sim_hash, r.model_own],
                _ => vec![r.model_even],
            };
            // (lowest, highest) allowed model / sim − 1
            let (lo, hi) = match lb {
                LbScheme::Adaptive => (-0.02, 0.20),
                _ => (-0.10, 0.10),
            };
            for m in checks {
                let err = m / r.sim - 1.0;
                eprintln!(
                    "{} {lb}: sim {:.2} model {m:.2} Gb/s {:+.1} %",
                    c.name,
                    r.sim,
                    100.0 * err
                );
                if !(lo..=hi).contains(&err) {
                    bad.push(format!("{} / {lb}: sim {:.2} model {m:.2}", c.name, r.sim));
                }
            }
        }
    }
    assert!(bad.is_empty(), "outside the bounds: {bad:#?}");
}
