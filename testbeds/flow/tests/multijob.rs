//! Several jobs at once: one job alone equals the single-job planner; a failure of a part
//! only job A uses never interrupts B; spares are shared by priority; contention on
//! shared links lowers each job's bandwidth; jobs that do not fit get clear errors.

use flow_model::LoadBalance;
use flow_model::multijob::{self, JobSpec, JobsDesign};
use flow_model::planner::{
    self, Aggregate, Cache, Cause, Collective, Design, FailureScope, PlanConfig,
};
use flow_model::rates::{ClassRate, Rates};
use topo::Fabric;

fn build(text: &str) -> Fabric {
    topo::Spec::parse(text, topo::Format::Toml, "t")
        .unwrap()
        .build("t")
        .unwrap()
}

/// 16 one-GPU servers on 4 leaves × 4 ports, 2 spines (full bisection).
fn leaf_spine() -> Fabric {
    build(
        "name = \"ls\"\n[hosts]\nservers = 16\nrate = \"100G\"\n\
         [[planes]]\nleaves_per_pod = 4\nleaf = { radix = 6, down = 4, up = 2 }\nspine = { radix = 4 }\n",
    )
}

/// 8 servers of 2 GPUs and 2 NICs, one per plane (a 2-plane design).
fn two_plane() -> Fabric {
    build(
        "name = \"two-plane\"\n[hosts]\nservers = 8\ngpus_per_server = 2\nnics_per_server = 2\nrate = \"100G\"\n\
         [[planes]]\ncopies = 2\nleaves_per_pod = 2\nleaf = { radix = 8, down = 4, up = 4 }\nspine = { radix = 2 }\n",
    )
}

fn rate(afr: f64, mttr: f64) -> ClassRate {
    ClassRate {
        afr_percent: afr,
        mttr_hours: mttr,
    }
}

/// Every class fails often, so a short run sees every kind of event.
fn busy() -> Rates {
    Rates {
        host_link: rate(800.0, 6.0),
        fabric_link: rate(800.0, 6.0),
        leaf: rate(400.0, 4.0),
        spine: rate(400.0, 4.0),
        core: rate(400.0, 4.0),
        nic: rate(400.0, 24.0),
        gpu: rate(300.0, 24.0),
        host: rate(300.0, 24.0),
        software: rate(500.0, 1.0),
    }
}

fn zero() -> Rates {
    let z = rate(0.0, 1.0);
    Rates {
        host_link: z,
        fabric_link: z,
        leaf: z,
        spine: z,
        core: z,
        nic: z,
        gpu: z,
        host: z,
        software: z,
    }
}

fn cfg(rates: Rates, job_gpus: u64, trials: u32) -> PlanConfig {
    PlanConfig {
        job_gpus,
        days: 20.0,
        trials,
        seed: 7,
        lb: LoadBalance::Ecmp { seed: 3 },
        checkpoint_hours: 2.0,
        restart_minutes: 15.0,
        scale_up_gbps: 3600.0,
        channels: 2,
        rates,
        scope: FailureScope::All,
        reroute_interrupt: 0.5,
        recovery: Default::default(),
    }
}

fn job(name: &str, gpus: u64) -> JobSpec {
    JobSpec {
        name: name.into(),
        gpus,
        collective: Collective::Hierarchical,
        servers: None,
    }
}

fn single(f: &Fabric, c: &PlanConfig) -> (Aggregate, planner::Summary) {
    let d = Design::new(f, c).unwrap();
    let mut cache = Cache::default();
    let mut agg = Aggregate::default();
    for t in 0..c.trials {
        planner::run_trial(&d, t, &mut cache, &mut agg, false);
    }
    let s = planner::summarize("x", f.num_gpus(), d.healthy_busbw, 0.0, c, &agg);
    (agg, s)
}

fn multi(f: &Fabric, c: &PlanConfig, jobs: &[JobSpec]) -> Vec<multijob::JobOutcome> {
    let d = JobsDesign::new(f, c, jobs, &[]).unwrap();
    let mut cache = Cache::default();
    let mut aggs = vec![Aggregate::default(); jobs.len()];
    for t in 0..c.trials {
        multijob::run_trial(&d, t, &mut cache, &mut aggs, false);
    }
    multijob::outcome(&d, c, "x", aggs).0
}

#[test]
fn one_job_alone_gives_the_single_job_planners_figures() {
    let cases: [(Fabric, u64, Option<u32>, bool); 4] = [
        (leaf_spine(), 6, None, false),
        (leaf_spine(), 6, Some(2), false),
        (two_plane(), 6, Some(1), true),
        (two_plane(), 8, None, false),
    ];
    for (f, gpus, spares, pxn) in cases {
        let mut c = cfg(busy(), gpus, 6);
        c.recovery.spare_servers = spares;
        c.recovery.pxn = pxn;
        c.recovery.spare_switches = Some(1);
        let (agg, s) = single(&f, &c);
        let m = multi(&f, &c, &[job("a", gpus)]);
        let what = format!("{} GPUs, spares {spares:?}, pxn {pxn}", gpus);
        assert!(agg.interruptions > 0, "{what}: {agg:?}");
        assert_eq!(m[0].aggregate, agg, "{what}");
        let mut ms = m[0].summary.clone();
        ms.design = s.design.clone();
        assert_eq!(ms, s, "{what}");
    }
}

#[test]
fn a_failure_of_a_part_only_job_a_uses_never_interrupts_b() {
    // A on servers 0-5 (leaves 0 and 1), B on 6-11 (leaves 1 and 2): leaf 1 is shared
    let f = leaf_spine();
    let mut c = cfg(busy(), 12, 1);
    c.reroute_interrupt = 1.0;
    c.recovery.spare_servers = Some(0);
    let jobs = [job("a", 6), job("b", 6)];
    let d = JobsDesign::new(&f, &c, &jobs, &[]).unwrap();
    let mut cache = Cache::default();
    let healthy = d.evaluate_state(&mut cache, &[]);
    let servers_of = |k: usize| -> Vec<u32> {
        healthy[k]
            .placement
            .as_ref()
            .unwrap()
            .iter()
            .map(|h| f.server_of(*h))
            .collect()
    };
    assert_eq!(servers_of(0), (0..6).collect::<Vec<_>>());
    assert_eq!(servers_of(1), (6..12).collect::<Vec<_>>());
    let comps = &d.base.comps;
    let mut both = 0;
    let mut only_a = 0;
    for comp in 0..comps.len() as u32 {
        let class = comps.class_of(comp);
        if class
            == planner::CLASSES
                .iter()
                .position(|c| *c == "software")
                .unwrap()
        {
            continue;
        }
        // what a job uses, from the fabric and its flows: its servers (and their GPU
        // domains), its NICs' links, the links its flows load
        let uses = |k: usize| {
            let job = healthy[k].job.as_ref().unwrap();
            let servers = servers_of(k);
            d.base.servers_down(comp).any(|s| servers.contains(&s))
                || comps.links(comp).iter().any(|&l| {
                    job.links
                        .get(l.idx() / 64)
                        .is_some_and(|w| w >> (l.idx() % 64) & 1 == 1)
                })
                || (class == 5 && servers.contains(&(comp - comps.class_start[5])))
        };
        let hit = d.interrupted_by(&mut cache, comp, u64::from(comp));
        // a part a job does not use never interrupts it; with p = 1 one it uses always does
        for (k, h) in hit.iter().enumerate() {
            assert_eq!(
                h.is_some(),
                uses(k),
                "component {comp} (class {class}), job {k}: {h:?}"
            );
        }
        match (uses(0), uses(1)) {
            (true, true) => both += 1,
            (true, false) => only_a += 1,
            _ => {}
        }
    }
    // the shared leaf (and the spines both jobs' rings cross) hit both; A's own leaf only A
    assert!(both > 0 && only_a > 0, "both {both}, only A {only_a}");
    // a trial: B's interruptions by a NIC cut off are only failures under B's servers
    let leaf0 = comps.class_start[2];
    let hit = d.interrupted_by(&mut cache, leaf0, 1);
    assert_eq!(hit, vec![Some(Cause::NicCutOff), None]);
    let leaf1 = comps.class_start[2] + 1;
    let hit = d.interrupted_by(&mut cache, leaf1, 1);
    assert_eq!(hit, vec![Some(Cause::NicCutOff), Some(Cause::NicCutOff)]);
}

#[test]
fn spares_are_shared_by_priority_and_the_first_job_is_never_preempted() {
    let f = leaf_spine();
    let mut c = cfg(busy(), 8, 1);
    c.recovery.spare_servers = Some(1);
    let jobs = [job("a", 4), job("b", 4)];
    let d = JobsDesign::new(&f, &c, &jobs, &[]).unwrap();
    assert_eq!(d.pool, vec![8]);
    let host = |s: u32| d.base.comps.class_start[7] + s;
    let mut cache = Cache::default();
    let servers = |e: &planner::StateEval| -> Option<Vec<u32>> {
        e.placement
            .as_ref()
            .map(|p| p.iter().map(|h| f.server_of(*h)).collect())
    };
    // B loses server 5: it takes the spare
    let s = d.evaluate_state(&mut cache, &[host(5)]);
    assert_eq!(servers(&s[1]), Some(vec![4, 6, 7, 8]));
    assert_eq!(servers(&s[0]), Some(vec![0, 1, 2, 3]));
    // then A loses server 1: A has priority, takes the spare, B stops
    let s = d.evaluate_state(&mut cache, &[host(1), host(5)]);
    assert_eq!(servers(&s[0]), Some(vec![0, 2, 3, 8]));
    assert_eq!(servers(&s[1]), None);
    assert_eq!(s[1].rel_busbw, 0.0);
    // over trials: B is preempted, A never
    let mut c = cfg(
        Rates {
            // servers of 1 GPU count 1/8 of an 8-GPU server's rate: ~4 failures a day
            host: rate(80_000.0, 12.0),
            ..zero()
        },
        8,
        8,
    );
    c.recovery.spare_servers = Some(1);
    let out = multi(&f, &c, &jobs);
    let pre = |k: usize| {
        out[k]
            .aggregate
            .per_trial
            .iter()
            .map(|r| r.preempted)
            .sum::<u32>()
    };
    assert_eq!(pre(0), 0);
    assert!(pre(1) > 0, "{:?}", out[1].summary);
    assert!(out[1].summary.preempted_per_day.value > 0.0);
    // B waits more than A: it loses its spare to A
    assert!(out[1].summary.lost_waiting.value > out[0].summary.lost_waiting.value);
}

#[test]
fn jobs_sharing_an_uplink_split_it_and_each_keeps_its_own_figures() {
    // 4:1 leaf–spine: one 100G uplink per leaf. A = servers 0,1,4,5 and B = 2,3,6,7: both
    // rings cross from leaf 0 to leaf 1 and share its uplink
    let f = build(
        "name = \"thin\"\n[hosts]\nservers = 16\nrate = \"100G\"\n\
         [[planes]]\nleaves_per_pod = 4\nleaf = { radix = 5, down = 4, up = 1 }\nspine = { radix = 4 }\n",
    );
    let c = cfg(busy(), 8, 4);
    let tenant = |name: &str, servers: Vec<u32>| JobSpec {
        name: name.into(),
        gpus: 4,
        collective: Collective::Ring,
        servers: Some(servers),
    };
    let jobs = [tenant("a", vec![0, 1, 4, 5]), tenant("b", vec![2, 3, 6, 7])];
    let d = JobsDesign::new(&f, &c, &jobs, &[]).unwrap();
    for k in 0..2 {
        let ratio = d.healthy_busbw[k] / d.alone_busbw[k];
        assert!((ratio - 0.5).abs() < 1e-6, "job {k}: {ratio}");
    }
    // the pool is every server no tenant owns
    assert_eq!(d.pool, (8..16).collect::<Vec<_>>());
    // each job's own checkpoint cost and figures; the cluster total adds them up
    let out = multi(&f, &c, &jobs);
    let d = JobsDesign::new(&f, &c, &jobs, &[]).unwrap();
    let (jobs_out, cluster) = {
        let mut cache = Cache::default();
        let mut aggs = vec![Aggregate::default(); 2];
        for t in 0..c.trials {
            multijob::run_trial(&d, t, &mut cache, &mut aggs, t == 0);
        }
        multijob::outcome(&d, &c, "thin", aggs)
    };
    assert_eq!(
        jobs_out,
        out.iter()
            .map(|j| {
                let mut j = j.clone();
                j.summary.design = format!("thin: {}", j.spec.name);
                j
            })
            .collect::<Vec<_>>()
    );
    let lost: f64 = out
        .iter()
        .map(|j| j.spec.gpus as f64 * 20.0 * 24.0 * (1.0 - j.summary.effective_training.value))
        .sum();
    assert!(
        (cluster.gpu_hours_lost.value - lost).abs() < 1e-6 * lost.max(1.0),
        "{cluster:?}"
    );
    assert!(cluster.gpu_hours_lost.lo <= cluster.gpu_hours_lost.value);
    assert!(cluster.effective_training.lo <= cluster.effective_training.value);
    assert!(cluster.effective_training.value <= cluster.effective_training.hi);
}

#[test]
fn jobs_that_do_not_fit_get_clear_errors() {
    let f = leaf_spine();
    let c = cfg(busy(), 8, 1);
    let err = |jobs: &[JobSpec], owned: &[u32]| {
        JobsDesign::new(&f, &c, jobs, owned)
            .unwrap_err()
            .to_string()
    };
    let e = err(&[job("a", 10), job("b", 8)], &[]);
    assert!(
        e.contains("a (10 servers), b (8 servers) do not fit together in ls (16 servers of 1 GPUs): job b finds 6 free servers for the 8 it needs"),
        "{e}"
    );
    let e = err(&[job("a", 4), job("a", 4)], &[]);
    assert!(e.contains("`a` is given twice"), "{e}");
    let e = err(&[job("a", 0)], &[]);
    assert!(e.contains("job a: 0 GPUs"), "{e}");
    let owns = |name: &str, gpus: u64, servers: Vec<u32>| JobSpec {
        servers: Some(servers),
        ..job(name, gpus)
    };
    let e = err(&[owns("t", 4, vec![0, 1])], &[]);
    assert!(
        e.contains("job t: 4 GPUs need 4 servers of 1 GPUs; it owns 2 (2 GPUs)"),
        "{e}"
    );
    let e = err(&[owns("t", 2, vec![0, 1]), owns("u", 2, vec![1, 2])], &[]);
    assert!(e.contains("job u: server 1 also belongs to job t"), "{e}");
    let e = err(&[owns("t", 2, vec![0, 1]), job("v", 14)], &[0]);
    assert!(e.contains("tenant or service not run"), "{e}");
    let mut c = c.clone();
    c.recovery.spare_servers = Some(9);
    let e = JobsDesign::new(&f, &c, &[job("a", 8)], &[])
        .unwrap_err()
        .to_string();
    assert!(e.contains("9 spares asked; ls has 8 servers left"), "{e}");
}
