//! Planner behaviour: a ToR failure cuts off single-homed hosts but not dual-ToR ones;
//! a seed gives the same result every time; shards merge into the whole run.

use flow_model::LoadBalance;
use flow_model::eval::Evaluator;
use flow_model::placement;
use flow_model::planner::{self, Aggregate, Cache, Design, PlanConfig, RunResult};
use flow_model::rates::{ClassRate, Rates};
use topo::{Fabric, Routes, TIER_LEAF};

/// 16 one-GPU servers on 4 leaves × 4 ports, 2 spines; `dual`: every NIC has two ports on
/// two ToRs, one per plane (Alibaba HPN's dual-ToR), else one.
fn spec(dual: bool) -> Fabric {
    let text = format!(
        "name = \"{}\"\n[hosts]\nservers = 16\nports_per_nic = {}\nrate = \"100G\"\n\
         [[planes]]\ncopies = {}\nleaves_per_pod = 4\nleaf = {{ radix = 6, down = 4, up = 2 }}\nspine = {{ radix = 4 }}\n",
        if dual { "dual-tor" } else { "single-homed" },
        if dual { 2 } else { 1 },
        if dual { 2 } else { 1 },
    );
    topo::Spec::parse(&text, topo::Format::Toml, "test")
        .unwrap()
        .build("test")
        .unwrap()
}

fn zero() -> ClassRate {
    ClassRate {
        afr_percent: 0.0,
        mttr_hours: 1.0,
    }
}

fn cfg(rates: Rates, trials: u32, seed: u64) -> PlanConfig {
    PlanConfig {
        job_gpus: 8,
        days: 30.0,
        trials,
        seed,
        lb: LoadBalance::Ecmp { seed: 3 },
        checkpoint_hours: 2.0,
        restart_minutes: 15.0,
        scale_up_gbps: 3600.0,
        rates,
    }
}

fn leaf_only() -> Rates {
    Rates {
        host_link: zero(),
        fabric_link: zero(),
        leaf: ClassRate {
            afr_percent: 1000.0,
            mttr_hours: 4.0,
        },
        spine: zero(),
        core: zero(),
        nic: zero(),
    }
}

#[test]
fn tor_failure_single_homed_loses_hosts_dual_tor_keeps_them() {
    for (dual, lost) in [(false, 4), (true, 0)] {
        let f = spec(dual);
        let mut r = Routes::compute(&f);
        let leaf = f.switches_in_tier(TIER_LEAF).next().unwrap();
        r.fail_nodes(&f, &[leaf]);
        let h = placement::health(&f, &r, &placement::attached_masks(&f));
        assert_eq!(h.num_unreachable, lost, "dual = {dual}");
        // the job (8 of 16 servers) still gets a placement with full bandwidth
        let d = Design::new(&f, &cfg(leaf_only(), 1, 1)).unwrap();
        let failed: Vec<u32> = vec![d.comps.class_start[2]];
        let e = d.evaluate_state(&mut Evaluator::default(), &failed);
        assert_eq!(e.unreachable, lost);
        assert!(e.placement.is_some());
        if dual {
            // the job stays where it was: none of its NICs is cut off
            assert!(
                e.placement
                    .as_ref()
                    .unwrap()
                    .iter()
                    .all(|h| !e.health.unreachable[h.idx()])
            );
        }
    }
}

fn run(f: &Fabric, c: &PlanConfig, shard: (u32, u32)) -> RunResult {
    let d = Design::new(f, c).unwrap();
    let mut cache = Cache::default();
    let mut agg = Aggregate::default();
    let mut timeline = None;
    for t in planner::shard_trials(c.trials, shard.0, shard.1) {
        let l = planner::run_trial(&d, t, &mut cache, &mut agg, t == 0);
        if t == 0 {
            timeline = l;
        }
    }
    let summary = planner::summarize(f.name(), f.num_gpus(), d.healthy_busbw, 0.0, c, &agg);
    RunResult {
        config: c.clone(),
        shards: vec![shard.0],
        shard_count: shard.1,
        designs: vec![planner::DesignResult {
            design: f.name().into(),
            gpus: f.num_gpus(),
            healthy_busbw: d.healthy_busbw,
            cost_per_gpu_usd: 0.0,
            aggregate: agg,
            timeline,
            summary,
        }],
    }
}

#[test]
fn planner_dual_tor_survives_what_single_homed_does_not() {
    let c = cfg(leaf_only(), 40, 7);
    let single = run(&spec(false), &c, (0, 1));
    let dual = run(&spec(true), &c, (0, 1));
    let (s, d) = (&single.designs[0].summary, &dual.designs[0].summary);
    assert!(
        s.interruptions_per_day > 0.0 && s.unreachable_share > 0.0,
        "{s:?}"
    );
    assert!(s.effective_training < 1.0);
    // dual-ToR: only two ToRs of the same NIC down at once cut a host off
    assert!(
        d.unreachable_share < s.unreachable_share / 5.0,
        "{d:?} vs {s:?}"
    );
    assert!(
        d.interruptions_per_day < s.interruptions_per_day / 5.0,
        "{d:?} vs {s:?}"
    );
    assert!(d.ecmp_width_lost_mean > 0.0);
    // leaves fail, nothing else
    assert!(s.failures_per_day["leaf"] > 0.0 && s.failures_per_day["spine"] == 0.0);
}

#[test]
fn seeded_runs_are_deterministic_and_shards_merge_into_the_whole() {
    let f = spec(false);
    let mut rates = Rates::default();
    for c in [
        &mut rates.host_link,
        &mut rates.fabric_link,
        &mut rates.leaf,
        &mut rates.spine,
    ] {
        c.afr_percent *= 2000.0;
    }
    let c = cfg(rates, 12, 42);
    let a = run(&f, &c, (0, 1));
    let b = run(&f, &c, (0, 1));
    assert_eq!(a, b);
    assert!(a.designs[0].aggregate.failures.iter().sum::<u64>() > 10);
    let other = run(&f, &cfg(rates, 12, 43), (0, 1));
    assert_ne!(a.designs[0].aggregate, other.designs[0].aggregate);
    let parts: Vec<RunResult> = (0..3).map(|i| run(&f, &c, (i, 3))).collect();
    let m = planner::merge(&parts).unwrap();
    assert!(planner::missing_shards(&m).is_empty());
    let (x, y) = (&m.designs[0], &a.designs[0]);
    assert_eq!(x.aggregate.trials, y.aggregate.trials);
    assert_eq!(x.aggregate.interruptions, y.aggregate.interruptions);
    assert_eq!(x.aggregate.failures, y.aggregate.failures);
    assert_eq!(x.aggregate.hist_hours.len(), y.aggregate.hist_hours.len());
    assert!((x.summary.rel_mean - y.summary.rel_mean).abs() < 1e-9);
    assert_eq!(x.summary.rel_p99, y.summary.rel_p99);
    assert_eq!(x.timeline, y.timeline);
    let e = planner::merge(&[parts[0].clone(), parts[0].clone()])
        .unwrap_err()
        .to_string();
    assert_eq!(e, "cannot merge: shard 0 given twice");
    let e = planner::merge(&[parts[0].clone(), other])
        .unwrap_err()
        .to_string();
    assert!(e.contains("different parameters"), "{e}");
}
