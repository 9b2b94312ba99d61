//! Planner behaviour: a ToR failure cuts off single-homed hosts but not dual-ToR ones;
//! a seed gives the same result every time; shards merge into the whole run.

use flow_model::LoadBalance;
use flow_model::eval::Evaluator;
use flow_model::placement;
use flow_model::planner::{self, Aggregate, Cache, Design, FailureScope, PlanConfig, RunResult};
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
        channels: 2,
        rates,
        scope: FailureScope::All,
        reroute_interrupt: 0.0,
        recovery: Default::default(),
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
        gpu: zero(),
        host: zero(),
        software: zero(),
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
                    .all(|h| !e.health().unreachable[h.idx()])
            );
        }
        // with spraying, a healthy dual-ToR NIC uses both ports; with one ToR down, the
        // job's NICs under it have half their bandwidth: the ring runs at half speed.
        // A single-homed job moves to healthy servers and keeps its bandwidth.
        let mut c = cfg(leaf_only(), 1, 1);
        c.lb = LoadBalance::Spray;
        let d = Design::new(&f, &c).unwrap();
        let e = d.evaluate_state(&mut Evaluator::default(), &failed);
        let want = if dual { 0.5 } else { 1.0 };
        assert!(
            (e.rel_busbw - want).abs() < 1e-9,
            "dual = {dual}: {}",
            e.rel_busbw
        );
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
            fingerprint: planner::fingerprint(f),
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
        s.interruptions_per_day.value > 0.0 && s.unreachable_share.value > 0.0,
        "{s:?}"
    );
    assert!(s.effective_training.value < 1.0);
    // dual-ToR: only two ToRs of the same NIC down at once cut a host off
    assert!(
        d.unreachable_share.value < s.unreachable_share.value / 5.0,
        "{d:?} vs {s:?}"
    );
    assert!(
        d.interruptions_per_day.value < s.interruptions_per_day.value / 5.0,
        "{d:?} vs {s:?}"
    );
    assert!(d.ecmp_width_lost_mean.value > 0.0);
    // leaves fail, nothing else
    assert!(s.failures_per_day["leaf"].value > 0.0 && s.failures_per_day["spine"].value == 0.0);
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
    assert!((x.summary.rel_mean.value - y.summary.rel_mean.value).abs() < 1e-9);
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

fn only(class: &str, afr: f64, mttr: f64) -> Rates {
    let mut r = leaf_only();
    r.leaf = zero();
    let c = ClassRate {
        afr_percent: afr,
        mttr_hours: mttr,
    };
    match class {
        "gpu" => r.gpu = c,
        "host" => r.host = c,
        "software" => r.software = c,
        "fabric_link" => r.fabric_link = c,
        "spine" => r.spine = c,
        "leaf" => r.leaf = c,
        "nic" => r.nic = c,
        other => panic!("{other}"),
    }
    r
}

#[test]
fn time_the_job_cannot_run_is_lost_and_shown_on_its_own() {
    // the job takes all 16 servers: any GPU failure leaves it waiting for the repair
    let f = spec(false);
    let mut c = cfg(only("gpu", 5000.0, 24.0), 20, 5);
    c.job_gpus = 16;
    let s = &run(&f, &c, (0, 1)).designs[0].summary;
    assert!(s.lost_waiting.value > 0.05, "{s:?}");
    assert!(s.rel_p50.value < 1.0 || s.rel_p99.value == 0.0, "{s:?}");
    let want = 1.0
        - s.lost_waiting.value
        - s.lost_to_interruptions.value
        - s.lost_to_node_swaps.value
        - s.lost_to_checkpoint_writes.value;
    assert!((s.effective_training.value - want).abs() < 1e-9, "{s:?}");
    // with spare servers (a job of 8 on 16) it rarely waits
    c.job_gpus = 8;
    let spare = &run(&f, &c, (0, 1)).designs[0].summary;
    assert!(
        spare.lost_waiting.value < s.lost_waiting.value / 4.0,
        "{spare:?}"
    );
}

#[test]
fn cluster_failures_interrupt_only_the_job_they_hit_and_scope_isolates_the_network() {
    let f = spec(false);
    let c = cfg(only("host", 2000.0, 1.0), 30, 3);
    let s = &run(&f, &c, (0, 1)).designs[0].summary;
    let hosts = s.failures_per_day["host"].value;
    let hit = s.interruptions_by_cause["server"].value;
    // half the servers run the job: about half the server failures interrupt it
    assert!(
        hosts > 0.0 && hit > 0.2 * hosts && hit < 0.8 * hosts,
        "{s:?}"
    );
    assert_eq!(s.network_interruptions_per_day.value, 0.0);
    // software failures always interrupt a running job
    let s = &run(&f, &cfg(only("software", 2000.0, 1.0), 10, 3), (0, 1)).designs[0].summary;
    assert!(s.interruptions_by_cause["software"].value > 0.0);
    assert_eq!(s.lost_waiting.value, 0.0);
    // the network scope draws no GPU, server or software failures
    let mut c = cfg(only("gpu", 2000.0, 1.0), 10, 3);
    c.scope = FailureScope::Network;
    let s = &run(&f, &c, (0, 1)).designs[0].summary;
    assert_eq!(s.failures_per_day["gpu"].value, 0.0);
    assert_eq!(s.interruptions_per_day.value, 0.0);
    assert!(s.covers.starts_with("network only"));
}

#[test]
fn a_gpu_failure_takes_its_scale_up_domain_down() {
    // 8 servers of 4 GPUs, NVLink domains of 8 GPUs (2 servers)
    let text = "name = \"nvl\"\n[hosts]\nservers = 8\ngpus_per_server = 4\nscale_up_domain = 8\nrate = \"100G\"\n\
                [[planes]]\nleaves_per_pod = 2\nleaf = { radix = 8, down = 4, up = 4 }\nspine = { radix = 2 }\n";
    let f = topo::Spec::parse(text, topo::Format::Toml, "t")
        .unwrap()
        .build("t")
        .unwrap();
    let mut c = cfg(only("gpu", 1.0, 1.0), 1, 1);
    c.job_gpus = 16;
    let d = Design::new(&f, &c).unwrap();
    // GPU 5 is on server 1, whose domain is servers 0 and 1
    let gpu5 = d.comps.class_start[planner::FIRST_CLUSTER_CLASS] + 5;
    assert_eq!(d.servers_down(gpu5), 0..2);
    let e = d.evaluate_state(&mut Evaluator::default(), &[gpu5]);
    let p = e.placement.unwrap();
    assert!(p.iter().all(|h| f.server_of(*h) >= 2), "{p:?}");
}

#[test]
fn reroutes_on_the_jobs_paths_interrupt_with_the_assumed_probability() {
    let f = spec(false);
    let mut c = cfg(only("fabric_link", 3000.0, 2.0), 20, 11);
    c.job_gpus = 16;
    let none = &run(&f, &c, (0, 1)).designs[0].summary;
    let reroute =
        |s: &planner::Summary| s.interruptions_by_cause["network: re-route timeout"].value;
    // (a leaf whose uplinks all failed cuts its NICs off: that is the other cause)
    assert_eq!(reroute(none), 0.0, "{none:?}");
    c.reroute_interrupt = 1.0;
    let all = &run(&f, &c, (0, 1)).designs[0].summary;
    let r = reroute(all);
    assert!(r > 0.0, "{all:?}");
    // a 16-rank ring uses most but not necessarily all fabric links
    assert!(r <= all.failures_per_day["fabric_link"].value + 1e-9);
}

#[test]
fn every_figure_has_an_interval_that_narrows_with_trials() {
    let f = spec(false);
    let few = &run(&f, &cfg(only("host", 2000.0, 4.0), 4, 8), (0, 1)).designs[0].summary;
    let many = &run(&f, &cfg(only("host", 2000.0, 4.0), 64, 8), (0, 1)).designs[0].summary;
    for (a, b) in [
        (few.interruptions_per_day, many.interruptions_per_day),
        (few.effective_training, many.effective_training),
    ] {
        assert!(a.lo <= a.value && a.value <= a.hi, "{a:?}");
        assert!(b.hi - b.lo < (a.hi - a.lo) / 2.0, "{a:?} vs {b:?}");
    }
    assert!(many.rel_mean.lo <= many.rel_mean.value && many.rel_mean.value <= many.rel_mean.hi);
    assert!(many.rel_p99.lo <= many.rel_p99.value && many.rel_p99.value <= many.rel_p99.hi);
}

#[test]
fn server_failures_scale_with_the_gpus_a_server_holds() {
    // the same 16 GPUs as 16 one-GPU servers or as 2 eight-GPU servers: the same host
    // failure rate per GPU
    let eight = "name = \"s8\"\n[hosts]\nservers = 2\ngpus_per_server = 8\nrate = \"100G\"\n\
                 [[planes]]\nleaves_per_pod = 2\nleaf = { radix = 2, down = 1, up = 1 }\nspine = { radix = 2 }\n";
    let f8 = topo::Spec::parse(eight, topo::Format::Toml, "t")
        .unwrap()
        .build("t")
        .unwrap();
    let c = cfg(only("host", 20_000.0, 1.0), 40, 2);
    let one = run(&spec(false), &c, (0, 1)).designs[0]
        .summary
        .failures_per_day["host"];
    let per8 = run(&f8, &c, (0, 1)).designs[0].summary.failures_per_day["host"];
    assert!(
        (one.value - per8.value).abs() < 0.25 * one.value,
        "{one:?} vs {per8:?}"
    );
}

#[test]
fn a_spare_pool_bounds_the_servers_the_job_can_take_and_swaps_cost_time() {
    // a job of 8 servers of 16; GPU failures (24 h repairs)
    let f = spec(false);
    let mut c = cfg(only("gpu", 3000.0, 24.0), 16, 4);
    c.recovery.node_swap_minutes = 30.0;
    let all = run(&f, &c, (0, 1)).designs[0].summary.clone();
    c.recovery.spare_servers = Some(1);
    let one = run(&f, &c, (0, 1)).designs[0].summary.clone();
    c.recovery.spare_servers = Some(0);
    let none = run(&f, &c, (0, 1)).designs[0].summary.clone();
    // fewer spares: more time waiting for repairs
    assert!(
        all.lost_waiting.value < one.lost_waiting.value,
        "{all:?}\n{one:?}"
    );
    assert!(
        one.lost_waiting.value < none.lost_waiting.value,
        "{one:?}\n{none:?}"
    );
    // with no spare every failed server stops the job until its repair
    assert!(none.lost_waiting.value > 0.2, "{none:?}");
    // shares of time keep their intervals within [0, 1]
    c.job_gpus = 16;
    let all_busy = run(&f, &c, (0, 1)).designs[0].summary.clone();
    assert!(all_busy.lost_waiting.value > 0.5, "{all_busy:?}");
    for e in [
        all_busy.lost_waiting,
        all_busy.effective_training,
        all_busy.unreachable_share,
        all_busy.lost_to_interruptions,
    ] {
        assert!(
            0.0 <= e.lo && e.lo <= e.value && e.value <= e.hi && e.hi <= 1.0,
            "{e:?}"
        );
    }
    c.job_gpus = 8;
    // each hardware interruption pays the swap: 30 min
    let gpu = all.interruptions_by_cause["GPU"].value;
    let want = gpu * 0.5 / 24.0;
    assert!(
        gpu > 0.0 && (all.lost_to_node_swaps.value - want).abs() < 1e-9,
        "{all:?}"
    );
    // more spares than the fabric holds: a clear error
    c.recovery.spare_servers = Some(9);
    let e = Design::new(&f, &c).unwrap_err().to_string();
    assert!(e.contains("9 spares") && e.contains("16 servers"), "{e}");
}

#[test]
fn spare_switches_shorten_switch_outages_until_the_pool_runs_dry() {
    // ToR failures with a 200 h repair (RMA); a spare goes in within 1 h
    let f = spec(false);
    let mut c = cfg(only("leaf", 20_000.0, 200.0), 8, 6);
    let no_pool = run(&f, &c, (0, 1)).designs[0].summary.clone();
    c.recovery.spare_switches = Some(0);
    let empty = run(&f, &c, (0, 1)).designs[0].summary.clone();
    c.recovery.spare_switches = Some(100);
    let deep = run(&f, &c, (0, 1)).designs[0].summary.clone();
    // an empty pool is the same timeline as no pool, every failure counted as waiting
    assert_eq!(empty.unreachable_share, no_pool.unreachable_share);
    assert!(empty.switch_without_spare_per_day.value > 0.0);
    assert_eq!(
        empty.switch_without_spare_per_day.value,
        empty.failures_per_day["leaf"].value
    );
    // a deep pool: outages of 1 h instead of 200 h
    assert_eq!(deep.switch_without_spare_per_day.value, 0.0);
    assert!(
        deep.unreachable_share.value < no_pool.unreachable_share.value / 5.0,
        "{deep:?}\n{no_pool:?}"
    );
}

#[test]
fn checkpoint_writes_and_restores_grow_with_the_job() {
    // no failures: the only loss is writing checkpoints
    let f = spec(false);
    let mut c = cfg(only("gpu", 0.0, 1.0), 2, 1);
    c.recovery.checkpoint_gb_per_gpu = 100.0;
    c.recovery.storage_gbytes_per_s = 1.0;
    c.checkpoint_hours = 2.0;
    let small = run(&f, &c, (0, 1)).designs[0].summary.clone();
    c.job_gpus = 16;
    let big = run(&f, &c, (0, 1)).designs[0].summary.clone();
    // 8 GPUs × 100 GB at 1 GB/s = 800 s of every 2 h; 16 GPUs: twice that
    let w = |s: &planner::Summary| s.lost_to_checkpoint_writes.value;
    assert!((w(&small) - 800.0 / 7200.0).abs() < 1e-9, "{small:?}");
    assert!((w(&big) - 2.0 * w(&small)).abs() < 1e-9, "{big:?}");
    assert_eq!(c.recovery.checkpoint_seconds(16), 1600.0);
    // a restore (the same read) is part of every interruption's cost
    let mut s = cfg(only("software", 20_000.0, 1.0), 4, 2);
    let plain = run(&f, &s, (0, 1)).designs[0].summary.clone();
    s.recovery.checkpoint_gb_per_gpu = 45.0;
    s.recovery.storage_gbytes_per_s = 1.0; // 8 × 45 s = 6 min per restore
    let slow = run(&f, &s, (0, 1)).designs[0].summary.clone();
    let n = plain.interruptions_per_day.value;
    assert_eq!(n, slow.interruptions_per_day.value);
    let extra = slow.lost_to_interruptions.value - plain.lost_to_interruptions.value;
    // 360 s more per interruption (the default restore took 8 × 0.35 GB / 2 TB/s ≈ 1 ms)
    let want = n * 360.0 / 86_400.0;
    assert!(
        (extra - want).abs() < 1e-3 * want.max(1e-9) + 1e-4,
        "{extra} vs {want}"
    );
    // a checkpoint that takes longer than its interval is refused
    c.checkpoint_hours = 0.1;
    let e = c.validate().unwrap_err().to_string();
    assert!(e.contains("shorter than writing one checkpoint"), "{e}");
}

/// 8 servers of 2 GPUs and 2 NICs, one per plane (a 2-plane design).
fn two_plane() -> Fabric {
    let text = "name = \"two-plane\"\n[hosts]\nservers = 8\ngpus_per_server = 2\nnics_per_server = 2\nrate = \"100G\"\n\
                [[planes]]\ncopies = 2\nleaves_per_pod = 2\nleaf = { radix = 8, down = 4, up = 4 }\nspine = { radix = 2 }\n";
    topo::Spec::parse(text, topo::Format::Toml, "t")
        .unwrap()
        .build("t")
        .unwrap()
}

#[test]
fn pxn_rides_through_a_cut_off_nic_at_a_bandwidth_cost() {
    let f = two_plane();
    let mut c = cfg(only("nic", 2000.0, 24.0), 12, 9);
    let plain = run(&f, &c, (0, 1)).designs[0].summary.clone();
    c.recovery.pxn = true;
    let pxn = run(&f, &c, (0, 1)).designs[0].summary.clone();
    let cut = |s: &planner::Summary| s.interruptions_by_cause["network: NIC cut off"].value;
    // without PXN every NIC failure under the job interrupts it; with it only those that
    // leave the job no common rail (both NICs of a server, or NIC 0 of one server and
    // NIC 1 of another: the conservative job-wide rail drop), and the job runs on one
    // rail meanwhile
    assert!(
        cut(&plain) > 0.0 && plain.pxn_absorbed_per_day.value == 0.0,
        "{plain:?}"
    );
    assert!(cut(&pxn) < cut(&plain) / 3.0, "{pxn:?}\n{plain:?}");
    assert!(
        (pxn.pxn_absorbed_per_day.value - cut(&plain)).abs() < 0.5 * cut(&plain),
        "{pxn:?}\n{plain:?}"
    );
    assert!(
        pxn.rel_mean.value < plain.rel_mean.value,
        "{pxn:?}\n{plain:?}"
    );
    assert!(pxn.lost_to_interruptions.value < plain.lost_to_interruptions.value);
    // one state directly: NIC 1 of server 0 cut off halves the job's bandwidth
    let d = Design::new(&f, &c).unwrap();
    let nic1 = d.comps.class_start[5] + 1;
    let e = d.evaluate_state(&mut Evaluator::default(), &[nic1]);
    assert!((e.rel_busbw - 0.5).abs() < 0.01, "{}", e.rel_busbw);
    assert_eq!(f.server_of(e.placement.unwrap()[0]), 0);
}
