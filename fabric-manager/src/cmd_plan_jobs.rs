//! `fabric plan resilience --job NAME:GPUS[:COLLECTIVE] … [--tenants FILE]`: several
//! jobs (or tenants) at once on each design (`flow_model::multijob`), a table per design
//! with a column per job and one for all jobs, mergeable JSON and per-job plots.

use std::path::Path;

use anyhow::Context;
use flow_model::multijob::{self, JobSpec, JobsDesign, JobsDesignResult, JobsRunResult};
use flow_model::planner::{self, Collective, PlanConfig, Summary};
use flow_model::stats::Estimate;
use topo::Fabric;

use crate::cmd_plan::{
    ResilienceArgs, RoundDesign, aligned, est, parse_shards, pct, run_rounds, warn_missing_shards,
    write_plots,
};
use crate::{plan_plots, tenant_args};

/// Parses `NAME:GPUS[:COLLECTIVE]`.
pub fn parse_job(s: &str) -> anyhow::Result<JobSpec> {
    let bad = |why: &str| {
        anyhow::anyhow!(
            "--job {s}: {why}; expected NAME:GPUS[:COLLECTIVE] with COLLECTIVE hierarchical (default), ring or tree, e.g. train:4096 or moe:1024:ring"
        )
    };
    let mut parts = s.split(':');
    let name = parts.next().unwrap_or("").trim();
    if name.is_empty() {
        return Err(bad("no name"));
    }
    let gpus = parts
        .next()
        .ok_or_else(|| bad("no GPU count"))?
        .trim()
        .parse::<u64>()
        .map_err(|_| bad("the GPU count is not a whole number"))?;
    let collective = match parts.next() {
        None => Collective::Hierarchical,
        Some(c) => Collective::parse(c.trim()).ok_or_else(|| bad("unknown collective"))?,
    };
    if parts.next().is_some() {
        return Err(bad("too many fields"));
    }
    Ok(JobSpec {
        name: name.into(),
        gpus,
        collective,
        servers: None,
    })
}

/// The jobs on one design, and the servers of tenant-file entries that run no job
/// (services, tenants without a `--job`): with a tenant file, each job is a tenant on
/// its servers; without `--job`, every tenant runs one job on all its servers.
fn jobs_on(
    f: &Fabric,
    given: &[JobSpec],
    tenants: Option<&Path>,
) -> anyhow::Result<(Vec<JobSpec>, Vec<u32>)> {
    let Some(path) = tenants else {
        return Ok((given.to_vec(), Vec::new()));
    };
    let t = tenant_args::load(path, f)?;
    let lay = f.host_layout();
    let nics = lay.nics_per_server.max(1) as usize;
    // every entry's whole servers
    let mut servers: Vec<Vec<u32>> = Vec::new();
    for e in t.entries() {
        let mut s: Vec<u32> = e.hosts.iter().map(|&h| f.server_of(h)).collect();
        s.dedup();
        for &srv in &s {
            let owned = e.hosts.iter().filter(|&&h| f.server_of(h) == srv).count();
            anyhow::ensure!(
                owned == nics,
                "{}: {} owns {owned} of server {srv}'s {nics} NICs: the planner runs jobs on whole servers",
                path.display(),
                e.name
            );
        }
        servers.push(s);
    }
    let tenant_names: Vec<&str> = t
        .entries()
        .iter()
        .filter(|e| e.kind == topo::tenants::Kind::Tenant)
        .map(|e| e.name.as_str())
        .collect();
    let jobs: Vec<JobSpec> = if given.is_empty() {
        t.entries()
            .iter()
            .zip(&servers)
            .filter(|(e, _)| e.kind == topo::tenants::Kind::Tenant)
            .map(|(e, s)| JobSpec {
                name: e.name.clone(),
                gpus: s.len() as u64 * lay.gpus_per_server as u64,
                collective: Collective::Hierarchical,
                servers: Some(s.clone()),
            })
            .collect()
    } else {
        given
            .iter()
            .map(|j| {
                let k = t
                    .by_name(&j.name)
                    .filter(|&k| t.entries()[k].kind == topo::tenants::Kind::Tenant)
                    .with_context(|| {
                        format!(
                            "--job {}: {} has no tenant {} (tenants: {})",
                            j.name,
                            path.display(),
                            j.name,
                            tenant_names.join(", ")
                        )
                    })?;
                Ok(JobSpec {
                    servers: Some(servers[k].clone()),
                    ..j.clone()
                })
            })
            .collect::<anyhow::Result<_>>()?
    };
    anyhow::ensure!(!jobs.is_empty(), "{}: no tenants to run", path.display());
    let owned: Vec<u32> = t
        .entries()
        .iter()
        .zip(&servers)
        .filter(|(e, _)| !jobs.iter().any(|j| j.name == e.name))
        .flat_map(|(_, s)| s.iter().copied())
        .collect();
    Ok((jobs, owned))
}

/// `fabric plan resilience` with `--job` or `--tenants`.
pub fn resilience(
    a: &ResilienceArgs,
    mut cfg: PlanConfig,
    fabrics: &[Fabric],
    prices: &topo::analysis::PriceList,
    shard: (u32, u32),
    json: &mut crate::common::JsonOut,
) -> anyhow::Result<()> {
    anyhow::ensure!(
        a.job_gpus.len() == 1,
        "--job-gpus with several sizes sweeps one job: give the jobs' sizes with --job NAME:GPUS instead"
    );
    let given: Vec<JobSpec> = a
        .job
        .iter()
        .map(|s| parse_job(s))
        .collect::<anyhow::Result<_>>()?;
    let mut designs = Vec::new();
    for (name, f) in a.designs.iter().zip(fabrics) {
        let (jobs, owned) =
            jobs_on(f, &given, a.tenants.as_deref()).with_context(|| format!("design {name}"))?;
        let d =
            JobsDesign::new(f, &cfg, &jobs, &owned).with_context(|| format!("design {name}"))?;
        designs.push(d);
    }
    let rounds: Vec<RoundDesign> = a
        .designs
        .iter()
        .zip(&designs)
        .map(|(name, d)| RoundDesign {
            label: format!("{name}, {} jobs", d.jobs.len()),
            jobs: (0..d.jobs.len()).map(|k| d.job_config(k)).collect(),
        })
        .collect();
    let r = run_rounds(a, shard, &rounds, |k, cache, t, aggs| {
        multijob::run_trial(&designs[k], t, cache, aggs, t == 0)
    });
    cfg.trials = r.trials;
    cfg.job_gpus = designs
        .first()
        .map_or(0, |d| d.jobs.iter().map(|j| j.spec.gpus).sum());
    let mut out = Vec::new();
    for (((name, f), d), (agg, timeline)) in a
        .designs
        .iter()
        .zip(fabrics)
        .zip(&designs)
        .zip(r.aggs.into_iter().zip(r.lines))
    {
        let cost = topo::analysis::summarize(f, &d.base.healthy, prices).cost_per_gpu_usd;
        let (jobs, cluster) = multijob::outcome(d, &cfg, name, agg);
        out.push(JobsDesignResult {
            design: name.clone(),
            fingerprint: planner::fingerprint(f),
            gpus: f.num_gpus(),
            cost_per_gpu_usd: cost,
            shared_spares: d.pool.len() as u32,
            jobs,
            cluster,
            timeline,
        });
    }
    let r = JobsRunResult {
        config: cfg,
        jobs: designs
            .first()
            .map(|d| d.jobs.iter().map(|j| j.spec.clone()).collect())
            .unwrap_or_default(),
        shards: vec![shard.0],
        shard_count: shard.1,
        designs: out,
    };
    report(&r, json, a.plot.as_deref())
}

/// Prints the tables, writes the JSON and the plots.
pub fn report(
    r: &JobsRunResult,
    json: &mut crate::common::JsonOut,
    plot: Option<&Path>,
) -> anyhow::Result<()> {
    print!("{}", render(r));
    json.write(r)?;
    write_plots(plot, |dir| plan_plots::jobs(r, dir))
}

type Cell = fn(&multijob::JobOutcome) -> String;

fn cause(s: &Summary, c: usize) -> String {
    est(&s.interruptions_by_cause[planner::CAUSES[c]], 3)
}

/// Rows of a job's column; the all-jobs column fills the rows it has.
const ROWS: &[(&str, Cell)] = &[
    ("GPUs (servers + own spares)", |j| {
        format!(
            "{} ({} + {})",
            j.spec.gpus, j.home_servers, j.private_spares
        )
    }),
    ("collective", |j| j.spec.collective.name().into()),
    ("healthy busbw alone (GB/s)", |j| {
        format!("{:.1}", j.healthy_busbw_alone / 1e9)
    }),
    ("healthy busbw, all jobs running (GB/s)", |j| {
        format!("{:.1}", j.healthy_busbw / 1e9)
    }),
    ("busbw / healthy p50", |j| est(&j.summary.rel_p50, 3)),
    ("busbw / healthy p99", |j| est(&j.summary.rel_p99, 3)),
    ("busbw / healthy mean", |j| est(&j.summary.rel_mean, 4)),
    ("interruptions / day", |j| {
        est(&j.summary.interruptions_per_day, 3)
    }),
    ("  network: NIC cut off", |j| cause(&j.summary, 0)),
    ("  network: re-route timeout", |j| cause(&j.summary, 1)),
    ("  GPU", |j| cause(&j.summary, 2)),
    ("  server", |j| cause(&j.summary, 3)),
    ("  software", |j| cause(&j.summary, 4)),
    ("  preempted (spare taken by priority)", |j| {
        est(&j.summary.preempted_per_day, 3)
    }),
    ("lost to interruptions", |j| {
        pct(&j.summary.lost_to_interruptions)
    }),
    ("lost to node swaps", |j| pct(&j.summary.lost_to_node_swaps)),
    ("lost to checkpoint writes", |j| {
        pct(&j.summary.lost_to_checkpoint_writes)
    }),
    ("lost waiting (job cannot run)", |j| {
        pct(&j.summary.lost_waiting)
    }),
    ("effective training time", |j| {
        pct(&j.summary.effective_training)
    }),
    ("GPU-hours lost / day", |j| {
        est(&lost_per_day(&j.summary.effective_training, j.spec.gpus), 1)
    }),
];

/// GPU-hours a job of `gpus` GPUs loses per day, from its share left for training (the
/// interval's ends swap under 1 − x).
fn lost_per_day(effective: &Estimate, gpus: u64) -> Estimate {
    let h = gpus as f64 * 24.0;
    Estimate {
        value: (1.0 - effective.value) * h,
        lo: (1.0 - effective.hi) * h,
        hi: (1.0 - effective.lo) * h,
    }
}

/// The all-jobs column: row label → cell.
fn cluster_cell(label: &str, d: &JobsDesignResult) -> String {
    let c = &d.cluster;
    match label {
        "GPUs (servers + own spares)" => format!("{} (pool {})", c.job_gpus, d.shared_spares),
        "interruptions / day" => est(&c.interruptions_per_day, 3),
        "effective training time" => pct(&c.effective_training),
        "GPU-hours lost / day" => est(&c.gpu_hours_lost_per_day, 1),
        _ => String::new(),
    }
}

/// A row per job and one for all jobs: the figures to compare jobs by.
fn summary_rows(d: &JobsDesignResult) -> String {
    let f2 = |e: &Estimate| format!("{:.2}", 100.0 * e.value);
    let mut rows = vec![vec![
        "job".to_string(),
        "GPUs".into(),
        "busbw p50, p99".into(),
        "interruptions / day".into(),
        "lost %: interruptions / swaps / ckpt / waiting".into(),
        "effective training time".into(),
        "GPU-hours lost / day".into(),
    ]];
    for j in &d.jobs {
        let s = &j.summary;
        rows.push(vec![
            j.spec.name.clone(),
            j.spec.gpus.to_string(),
            format!("{:.3}, {:.3}", s.rel_p50.value, s.rel_p99.value),
            est(&s.interruptions_per_day, 3),
            format!(
                "{} / {} / {} / {}",
                f2(&s.lost_to_interruptions),
                f2(&s.lost_to_node_swaps),
                f2(&s.lost_to_checkpoint_writes),
                f2(&s.lost_waiting)
            ),
            pct(&s.effective_training),
            est(&lost_per_day(&s.effective_training, j.spec.gpus), 1),
        ]);
    }
    let c = &d.cluster;
    rows.push(vec![
        "all jobs".into(),
        c.job_gpus.to_string(),
        String::new(),
        est(&c.interruptions_per_day, 3),
        String::new(),
        pct(&c.effective_training),
        est(&c.gpu_hours_lost_per_day, 1),
    ]);
    aligned(&rows)
}

/// One table per design: a row per job and one for all jobs, then every figure with a
/// column per job.
pub fn render(r: &JobsRunResult) -> String {
    let c = &r.config;
    let mut out = crate::cmd_plan::run_header(
        &format!("{} jobs at once", r.jobs.len()),
        c,
        "spare servers shared by priority (jobs in the order given; a job whose server fails takes a pool server even from a job after it); ",
        &r.shards,
        r.shard_count,
    );
    if r.designs
        .iter()
        .all(|d| d.jobs.iter().all(|j| j.aggregate.trials == 0))
    {
        out.push_str(&format!(
            "no trials: this result holds none of the {} trials (shards {:?} of {}); there are no figures to show\n",
            c.trials, r.shards, r.shard_count
        ));
        return out;
    }
    for d in &r.designs {
        out.push_str(&format!(
            "\n{} ({} GPUs, ${:.0} per GPU)\n",
            d.design, d.gpus, d.cost_per_gpu_usd
        ));
        let mut head = vec![String::new()];
        head.extend(d.jobs.iter().map(|j| j.spec.name.clone()));
        head.push("all jobs".into());
        out.push_str(&summary_rows(d));
        out.push('\n');
        let mut rows = vec![head];
        rows.extend(ROWS.iter().map(|(label, f)| {
            let mut row = vec![label.to_string()];
            row.extend(d.jobs.iter().map(f));
            row.push(cluster_cell(label, d));
            row
        }));
        out.push_str(&aligned(&rows));
    }
    out
}

/// Reads and merges multi-job shard files (already parsed as JSON values).
pub fn merge(
    files: &[(std::path::PathBuf, serde_json::Value)],
    json: &mut crate::common::JsonOut,
    plot: Option<&Path>,
) -> anyhow::Result<()> {
    let merged = multijob::merge(&parse_shards(files)?)?;
    let first_job = merged.designs.first().and_then(|d| d.jobs.first());
    let trials = first_job.map_or(0, |j| j.aggregate.trials);
    warn_missing_shards(merged.shard_count, &merged.shards, trials);
    report(&merged, json, plot)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cmd_plan::{MergeArgs, ResilienceArgs};
    use std::path::PathBuf;

    fn args(dir: &Path, jobs: &[&str], shard: Option<&str>, out: &str) -> ResilienceArgs {
        ResilienceArgs {
            designs: vec!["fat-tree-k4".into(), "fat-tree-k6".into()],
            job_gpus: vec![4096],
            days: 10.0,
            trials: 6,
            precision: None,
            failures: "all".into(),
            reroute_interrupt: 0.5,
            seed: 9,
            rates: Some(dir.join("rates.toml")),
            lb: "ecmp".into(),
            checkpoint_hours: 1.0,
            restart_minutes: 10.0,
            scale_up_gbps: 3600.0,
            channels: 2,
            spare_servers: Some(2),
            node_swap_minutes: 5.0,
            spare_switches: None,
            switch_swap_hours: 1.0,
            checkpoint_gb_per_gpu: 0.346,
            storage_gbytes_per_s: 2000.0,
            pxn: false,
            scale_up_domain: None,
            prices: None,
            job: jobs.iter().map(|s| s.to_string()).collect(),
            tenants: None,
            json: Some(dir.join(out)),
            plot: None,
            shard: shard.map(String::from),
            quiet: true,
        }
    }

    fn read(p: &Path) -> JobsRunResult {
        serde_json::from_str(&std::fs::read_to_string(p).unwrap()).unwrap()
    }

    fn merge_files(
        files: Vec<PathBuf>,
        json: Option<PathBuf>,
        plot: Option<PathBuf>,
    ) -> Result<(), String> {
        crate::cmd_plan::merge(MergeArgs { files, json, plot }).map_err(|e| format!("{e:#}"))
    }

    fn scratch(tag: &str) -> PathBuf {
        let dir =
            std::env::temp_dir().join(format!("fabric-plan-jobs-{tag}-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(
            dir.join("rates.toml"),
            "[host]\nafr_percent = 40000\n[leaf]\nafr_percent = 3000\n[host_link]\nafr_percent = 3000\n",
        )
        .unwrap();
        dir
    }

    #[test]
    fn multi_job_shards_merge_into_the_whole_run_with_tables_and_plots() {
        let dir = scratch("m");
        let jobs = ["a:4", "b:4:ring"];
        crate::cmd_plan::resilience(args(&dir, &jobs, None, "all.json")).unwrap();
        crate::cmd_plan::resilience(args(&dir, &jobs, Some("0/2"), "s0.json")).unwrap();
        crate::cmd_plan::resilience(args(&dir, &jobs, Some("1/2"), "s1.json")).unwrap();
        let whole = read(&dir.join("all.json"));
        merge_files(
            vec![dir.join("s1.json"), dir.join("s0.json")],
            Some(dir.join("merged.json")),
            Some(dir.join("plots")),
        )
        .unwrap();
        let merged = read(&dir.join("merged.json"));
        assert_eq!(merged.shards, vec![0, 1]);
        assert_eq!(merged.jobs.len(), 2);
        for (a, b) in whole.designs.iter().zip(&merged.designs) {
            for (x, y) in a.jobs.iter().zip(&b.jobs) {
                assert_eq!(x.aggregate.per_trial, y.aggregate.per_trial);
                assert_eq!(x.summary.effective_training, y.summary.effective_training);
            }
            // equal up to the last digit (JSON round trips of the per-trial figures)
            let close = |x: &Estimate, y: &Estimate| {
                [(x.value, y.value), (x.lo, y.lo), (x.hi, y.hi)]
                    .iter()
                    .all(|(p, q)| (p - q).abs() <= 1e-9 * p.abs().max(1.0))
            };
            assert!(close(&a.cluster.gpu_hours_lost, &b.cluster.gpu_hours_lost));
            assert!(close(
                &a.cluster.effective_training,
                &b.cluster.effective_training
            ));
            assert_eq!(a.cluster.job_gpus, b.cluster.job_gpus);
            assert_eq!(a.timeline, b.timeline);
            assert!(
                a.jobs
                    .iter()
                    .map(|j| j.aggregate.interruptions)
                    .sum::<u64>()
                    > 0
            );
        }
        let t = render(&merged);
        for want in [
            "lost %: interruptions / swaps / ckpt / waiting",
            "fat-tree-k6 (54 GPUs",
            "all jobs",
            "GPU-hours lost / day",
            "preempted",
            "spare servers shared by priority",
            "ring",
        ] {
            assert!(t.contains(want), "{want}: {t}");
        }
        for f in [
            "jobs-busbw-tail-fat-tree-k4.svg",
            "jobs-timeline-busbw-fat-tree-k6.svg",
            "jobs-effective-training.svg",
        ] {
            let svg = std::fs::read_to_string(dir.join("plots").join(f)).unwrap();
            assert!(
                svg.starts_with("<svg") && svg.contains("b (4 GPUs")
                    || f != "jobs-busbw-tail-fat-tree-k4.svg",
                "{f}"
            );
            assert!(svg.starts_with("<svg") && !svg.contains("Ecmp {"), "{f}");
        }
        // a hand-edited count of one job is refused
        let mut r = read(&dir.join("s1.json"));
        r.designs[0].jobs[1].aggregate.interruptions += 1;
        std::fs::write(dir.join("bad.json"), serde_json::to_string(&r).unwrap()).unwrap();
        let e =
            merge_files(vec![dir.join("s0.json"), dir.join("bad.json")], None, None).unwrap_err();
        assert!(
            e.contains("job b of shards [1]") && e.contains("not the sums"),
            "{e}"
        );
        // shards of different jobs, and a single-job shard among multi-job ones
        crate::cmd_plan::resilience(args(&dir, &["a:4", "b:2"], Some("1/2"), "o1.json")).unwrap();
        let e =
            merge_files(vec![dir.join("s0.json"), dir.join("o1.json")], None, None).unwrap_err();
        assert!(e.contains("different parameters or jobs"), "{e}");
        let mut single = args(&dir, &[], Some("1/2"), "single.json");
        single.job_gpus = vec![4];
        crate::cmd_plan::resilience(single).unwrap();
        let e = merge_files(
            vec![dir.join("s0.json"), dir.join("single.json")],
            None,
            None,
        )
        .unwrap_err();
        assert!(
            e.contains("single.json: a single-job result among multi-job ones"),
            "{e}"
        );
        std::fs::remove_dir_all(&dir).ok();
    }

    #[test]
    fn precision_runs_trials_until_every_job_is_precise_enough() {
        let dir = scratch("p");
        let mut a = args(&dir, &["a:4", "b:4"], None, "p.json");
        a.designs = vec!["fat-tree-k4".into()];
        a.trials = 400;
        a.precision = Some(20.0);
        crate::cmd_plan::resilience(a).unwrap();
        let r = read(&dir.join("p.json"));
        assert!(
            r.config.trials > 16 && r.config.trials < 400,
            "{}",
            r.config.trials
        );
        for j in &r.designs[0].jobs {
            let lost = j.summary.effective_training.map(|x| 1.0 - x);
            assert!(
                lost.relative_half_width() <= 0.2,
                "{}: {lost:?}",
                j.spec.name
            );
            assert_eq!(j.summary.trials, r.config.trials as u64);
        }
        std::fs::remove_dir_all(&dir).ok();
    }

    #[test]
    fn tenants_run_on_their_own_servers_and_bad_jobs_get_clear_errors() {
        let dir = scratch("t");
        let tenants = dir.join("tenants.toml");
        std::fs::write(
            &tenants,
            "[[services]]\nname = \"storage\"\nservers = [\"14-15\"]\n\
             [[tenants]]\nname = \"a\"\nservers = [\"8-13\"]\n\
             [[tenants]]\nname = \"b\"\nservers = [\"0-3\"]\n",
        )
        .unwrap();
        let mut a = args(&dir, &[], None, "t.json");
        a.designs = vec!["fat-tree-k4".into()];
        a.tenants = Some(tenants.clone());
        a.spare_servers = None;
        crate::cmd_plan::resilience(a).unwrap();
        let r = read(&dir.join("t.json"));
        let d = &r.designs[0];
        // every tenant a job on all its servers; the pool is what no entry owns (4-7)
        let names: Vec<(&str, u64)> = d
            .jobs
            .iter()
            .map(|j| (j.spec.name.as_str(), j.spec.gpus))
            .collect();
        assert_eq!(names, vec![("a", 6), ("b", 4)]);
        assert_eq!(
            d.jobs[0].spec.servers.as_deref(),
            Some(&[8, 9, 10, 11, 12, 13][..])
        );
        assert_eq!(d.shared_spares, 4);
        // a job smaller than its tenant keeps the rest as its own spares
        let mut a = args(&dir, &["b:2"], None, "t2.json");
        a.designs = vec!["fat-tree-k4".into()];
        a.tenants = Some(tenants.clone());
        a.spare_servers = None;
        crate::cmd_plan::resilience(a).unwrap();
        let d = &read(&dir.join("t2.json")).designs[0];
        assert_eq!((d.jobs[0].home_servers, d.jobs[0].private_spares), (2, 2));
        // tenant a runs nothing here: its servers are not spares
        assert_eq!(d.shared_spares, 4);
        let check = |jobs: &[&str], want: &str| {
            let mut a = args(&dir, jobs, None, "unused.json");
            a.designs = vec!["fat-tree-k4".into()];
            a.tenants = Some(tenants.clone());
            let e = format!("{:#}", crate::cmd_plan::resilience(a).unwrap_err());
            assert!(e.contains(want), "{want}: {e}");
        };
        check(&["c:2"], "--job c: ");
        check(&["c:2"], "has no tenant c (tenants: a, b)");
        check(&["storage:2"], "has no tenant storage");
        check(
            &["b:8"],
            "job b: 8 GPUs need 8 servers of 1 GPUs; it owns 4 (4 GPUs)",
        );
        check(&["b:x"], "--job b:x: the GPU count is not a whole number");
        // without a tenant file: jobs that do not fit together
        let mut a = args(&dir, &["a:10", "b:10"], None, "unused.json");
        a.designs = vec!["fat-tree-k4".into()];
        a.spare_servers = None;
        let e = format!("{:#}", crate::cmd_plan::resilience(a).unwrap_err());
        assert!(
            e.contains("a (10 servers), b (10 servers) do not fit together in fat-tree-k4"),
            "{e}"
        );
        std::fs::remove_dir_all(&dir).ok();
    }

    #[test]
    fn job_syntax() {
        let j = parse_job("train:4096").unwrap();
        assert_eq!(
            (j.name.as_str(), j.gpus, j.collective),
            ("train", 4096, Collective::Hierarchical)
        );
        let j = parse_job("moe:64:ring").unwrap();
        assert_eq!(j.collective, Collective::Ring);
        for (bad, why) in [
            (":8", "no name"),
            ("a", "no GPU count"),
            ("a:x", "not a whole number"),
            ("a:8:bcast", "unknown collective"),
            ("a:8:ring:1", "too many fields"),
        ] {
            let e = parse_job(bad).unwrap_err().to_string();
            assert!(
                e.contains(why) && e.contains("expected NAME:GPUS[:COLLECTIVE]"),
                "{bad}: {e}"
            );
        }
        // a share left for training becomes GPU-hours lost, its interval flipped
        let e = lost_per_day(
            &Estimate {
                value: 0.9,
                lo: 0.8,
                hi: 0.95,
            },
            10,
        );
        assert!(
            (e.value - 24.0).abs() < 1e-9
                && (e.lo - 12.0).abs() < 1e-9
                && (e.hi - 48.0).abs() < 1e-9,
            "{e:?}"
        );
    }
}
