//! `fabric plan resilience` and `fabric plan merge`: the Monte-Carlo resilience planner
//! (crate `flow-model`) on designs named like other commands (a spec file or a preset).
//!
//! Trials run in parallel on all cores (rayon); a shard (`--shard i/N`) runs trials
//! `t mod N = i`, and `fabric plan merge` adds shard results up into the whole run.

use std::path::{Path, PathBuf};

use anyhow::Context;
use flow_model::LoadBalance;
use flow_model::planner::{
    self, Aggregate, Cache, Design, DesignResult, FailureScope, PlanConfig, Recovery, RunResult,
    Summary,
};
use flow_model::rates::Rates;
use flow_model::stats::{self, Estimate};
use rayon::prelude::*;

use crate::{common, plan_plots};

/// `fabric plan …`
#[derive(Debug, clap::Subcommand)]
pub enum Command {
    /// Months of component failures and repairs against designs: the bus bandwidth a job
    /// keeps, unreachable hosts, interruptions, effective training time, side by side.
    Resilience(Box<ResilienceArgs>),
    /// Merge shard results (`--shard i/N` JSON files) into one.
    Merge(MergeArgs),
}

/// Arguments of `fabric plan resilience`.
#[derive(Debug, clap::Args)]
pub struct ResilienceArgs {
    /// Designs: spec files (TOML/YAML/JSON) or preset names (`fabric topo presets`).
    #[arg(required = true, value_name = "DESIGN")]
    pub designs: Vec<String>,
    /// GPUs of the job (placed on whole servers, topology-aware); several sizes
    /// (`1024,4096,16384`) sweep them in one run, with a table by job size.
    #[arg(
        long,
        value_delimiter = ',',
        default_value = "4096",
        conflicts_with = "job"
    )]
    pub job_gpus: Vec<u64>,
    /// Several jobs at once, repeated: `--job NAME:GPUS[:COLLECTIVE]` (hierarchical, ring
    /// or tree), in priority order (spare servers go to the first job first). Each job gets
    /// its own servers and figures; their flows share the fabric.
    #[arg(long, value_name = "NAME:GPUS[:COLLECTIVE]")]
    pub job: Vec<String>,
    /// A tenant file (as `fabric routes verify --tenants`): each job runs on its tenant's
    /// servers (`--job NAME:GPUS` names a tenant; without `--job`, every tenant runs one job
    /// on all its servers); servers no entry owns are the shared spare pool.
    #[arg(long, value_name = "FILE")]
    pub tenants: Option<PathBuf>,
    /// Horizon of each trial (days).
    #[arg(long, default_value_t = 30.0)]
    pub days: f64,
    /// Monte-Carlo trials per design (with --precision: the most trials to run).
    #[arg(long, default_value_t = 100)]
    pub trials: u32,
    /// Run trials until the 95 % interval of every design's lost training time is within
    /// ± this many percent of it (or --trials is reached).
    #[arg(long, value_name = "PERCENT")]
    pub precision: Option<f64>,
    /// Failures drawn: `all` (the whole cluster: GPUs, servers, software and the network,
    /// from the Llama 3 root-cause table) or `network` (links, switches, NICs only).
    #[arg(long, default_value = "all")]
    pub failures: String,
    /// Probability that a network failure on the job's paths that the routing survives
    /// still interrupts the job (an assumption: the RoCE transport times out before the
    /// re-route completes). 0 turns it off.
    #[arg(long, default_value_t = 0.5)]
    pub reroute_interrupt: f64,
    /// Seed (trial t of seed S is the same in every run and shard).
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// Failure and repair rates overriding the cited defaults (TOML; see docs/planner.md).
    #[arg(long, value_name = "FILE")]
    pub rates: Option<PathBuf>,
    /// Load balancing of the job's flows: ecmp, spray (even split), entropy (spraying over
    /// 128 hashed entropy values) or adaptive.
    #[arg(long, default_value = "ecmp")]
    pub lb: String,
    /// Checkpoint interval (hours): each interruption loses half of it on average.
    #[arg(long, default_value_t = 1.0)]
    pub checkpoint_hours: f64,
    /// Restart cost after an interruption (minutes).
    #[arg(long, default_value_t = 10.0)]
    pub restart_minutes: f64,
    /// Scale-up (NVLink) bandwidth per GPU, one direction, Gb/s (H100 NVLink 4: 3600).
    #[arg(long, default_value_t = 3600.0)]
    pub scale_up_gbps: f64,
    /// Parallel connections per rail-ring edge (NCCL channels per NIC), each hashed on its
    /// own (an assumption: NCCL typically runs several channels per NIC).
    #[arg(long, default_value_t = 4)]
    pub channels: u32,
    /// Spare servers kept for the job beyond its own (default: every server of the fabric
    /// it does not use). When more of the job's partition is down than there are spares,
    /// the job waits for a repair.
    #[arg(long, value_name = "N")]
    pub spare_servers: Option<u32>,
    /// Minutes to swap a spare server into the job after a hardware interruption, on top
    /// of the restart (an assumption).
    #[arg(long, default_value_t = 5.0)]
    pub node_swap_minutes: f64,
    /// Spare switches on site (default: no pool; a failed switch is down for its repair
    /// time). With a pool, a failed switch is swapped in --switch-swap-hours while a spare
    /// is on hand and the failed unit returns after its class repair time.
    #[arg(long, value_name = "N")]
    pub spare_switches: Option<u32>,
    /// Hours to swap a spare switch in (an assumption).
    #[arg(long, default_value_t = 1.0)]
    pub switch_swap_hours: f64,
    /// Checkpoint size per GPU, GB (default: Llama 3 405B's weights and optimizer state,
    /// 405 B × 14 bytes over 16,384 GPUs).
    #[arg(long, default_value_t = 405.0 * 14.0 / 16_384.0)]
    pub checkpoint_gb_per_gpu: f64,
    /// Storage bandwidth for checkpoint writes and restores, GB/s for the whole cluster
    /// (Llama 3's Tectonic: 2 TB/s sustained).
    #[arg(long, default_value_t = 2000.0)]
    pub storage_gbytes_per_s: f64,
    /// PXN-style cross-plane recovery: a NIC cut off in a server that keeps another NIC
    /// sends its rail through a peer GPU's NIC instead of interrupting the job.
    #[arg(long)]
    pub pxn: bool,
    /// GPUs per scale-up (NVLink) domain, overriding the design's `hosts.scale_up_domain`
    /// (a GPU failure takes its whole domain down).
    #[arg(long, value_name = "GPUS")]
    pub scale_up_domain: Option<u32>,
    /// Price list for the cost per GPU (TOML, as `fabric topo compare --prices`).
    #[arg(long, value_name = "FILE")]
    pub prices: Option<PathBuf>,
    /// Write the result (mergeable) as JSON.
    #[arg(long, value_name = "OUT", num_args = 0..=1, default_missing_value = "-")]
    pub json: Option<PathBuf>,
    /// Write SVG plots (CDF of bus bandwidth, trial 0's timeline) into this directory.
    #[arg(long, value_name = "DIR")]
    pub plot: Option<PathBuf>,
    /// Run only shard i of N (0-based): trials t with t mod N = i.
    #[arg(long, value_name = "i/N")]
    pub shard: Option<String>,
    /// No progress bar.
    #[arg(long)]
    pub quiet: bool,
}

/// Arguments of `fabric plan merge`.
#[derive(Debug, clap::Args)]
pub struct MergeArgs {
    /// Shard result files written by `fabric plan resilience --shard i/N --json FILE`.
    #[arg(required = true, value_name = "SHARD.json")]
    pub files: Vec<PathBuf>,
    /// Write the merged result as JSON.
    #[arg(long, value_name = "OUT", num_args = 0..=1, default_missing_value = "-")]
    pub json: Option<PathBuf>,
    /// Write SVG plots of the merged result into this directory.
    #[arg(long, value_name = "DIR")]
    pub plot: Option<PathBuf>,
}

/// Runs a `fabric plan` command.
pub fn run(c: Command) -> anyhow::Result<()> {
    match c {
        Command::Resilience(a) => resilience(*a),
        Command::Merge(a) => merge(a),
    }
}

/// Parses `i/N` (0 ≤ i < N).
fn parse_shard(s: &str) -> anyhow::Result<(u32, u32)> {
    let bad = || anyhow::anyhow!("--shard {s}: expected i/N with 0 ≤ i < N, e.g. 3/16");
    let (i, n) = s.split_once('/').ok_or_else(bad)?;
    let (i, n): (u32, u32) = (
        i.trim().parse().map_err(|_| bad())?,
        n.trim().parse().map_err(|_| bad())?,
    );
    if n == 0 || i >= n {
        return Err(bad());
    }
    Ok((i, n))
}

/// Loads a design, with its scale-up domain overridden when asked (checked by the spec's
/// own validation: a whole number of servers).
fn load_design(arg: &str, scale_up_domain: Option<u32>) -> anyhow::Result<topo::Fabric> {
    let (mut spec, origin) = common::design_spec(arg)?;
    if let Some(d) = scale_up_domain {
        spec.hosts.scale_up_domain = Some(d);
    }
    Ok(spec.build(&origin)?)
}

fn config(a: &ResilienceArgs) -> anyhow::Result<PlanConfig> {
    let rates = match &a.rates {
        None => Rates::default(),
        Some(p) => {
            let text = common::read_capped(p, common::MAX_SPEC_BYTES)
                .with_context(|| format!("cannot read rates file {}", p.display()))?;
            Rates::parse_toml(&text, &p.display().to_string())?
        }
    };
    let lb = LoadBalance::parse(&a.lb, a.seed)
        .with_context(|| format!("--lb {}: expected ecmp, spray, entropy or adaptive", a.lb))?;
    let scope = match a.failures.as_str() {
        "all" => FailureScope::All,
        "network" => FailureScope::Network,
        other => anyhow::bail!("--failures {other}: expected all or network"),
    };
    let cfg = PlanConfig {
        job_gpus: a.job_gpus.first().copied().unwrap_or(0),
        days: a.days,
        trials: a.trials,
        seed: a.seed,
        lb,
        checkpoint_hours: a.checkpoint_hours,
        restart_minutes: a.restart_minutes,
        scale_up_gbps: a.scale_up_gbps,
        channels: a.channels,
        rates,
        scope,
        reroute_interrupt: a.reroute_interrupt,
        recovery: Recovery {
            spare_servers: a.spare_servers,
            node_swap_minutes: a.node_swap_minutes,
            spare_switches: a.spare_switches,
            switch_swap_hours: a.switch_swap_hours,
            checkpoint_gb_per_gpu: a.checkpoint_gb_per_gpu,
            storage_gbytes_per_s: a.storage_gbytes_per_s,
            pxn: a.pxn,
        },
    };
    cfg.validate()?;
    Ok(cfg)
}

/// Checks before any trial runs that the outputs can be written: the JSON file's
/// directory exists and the file is writable; the plot directory can be created and
/// written to.
fn check_outputs(json: Option<&Path>, plot: Option<&Path>) -> anyhow::Result<()> {
    if let Some(p) = json.filter(|p| *p != Path::new("-")) {
        anyhow::ensure!(!p.is_dir(), "--json {}: is a directory", p.display());
        let existed = p.exists();
        std::fs::OpenOptions::new()
            .append(true)
            .create(true)
            .open(p)
            .with_context(|| format!("--json {}: cannot write there", p.display()))?;
        if !existed {
            std::fs::remove_file(p).ok();
        }
    }
    if let Some(dir) = plot {
        std::fs::create_dir_all(dir)
            .with_context(|| format!("--plot {}: cannot create the directory", dir.display()))?;
        let probe = dir.join(format!(".fabric-plot-probe-{}", std::process::id()));
        std::fs::write(&probe, b"")
            .with_context(|| format!("--plot {}: cannot write there", dir.display()))?;
        std::fs::remove_file(&probe).ok();
    }
    Ok(())
}

/// Runs `trials` of one design in parallel (a cache per thread): `run(cache, t, aggs)`
/// adds trial `t` to the aggregates of the design's `jobs` and returns its timeline when
/// `t` is 0.
fn run_trials<L: Send>(
    jobs: usize,
    trials: &[u32],
    bar: &indicatif::ProgressBar,
    run: impl Fn(&mut Cache, u32, &mut [Aggregate]) -> Option<L> + Sync,
) -> (Vec<Aggregate>, Option<L>) {
    trials
        .par_iter()
        .map_init(Cache::default, |cache, &t| {
            let mut aggs = vec![Aggregate::default(); jobs];
            let line = run(cache, t, &mut aggs);
            bar.inc(1);
            (aggs, line)
        })
        .reduce(
            || (vec![Aggregate::default(); jobs], None),
            |(mut a, la), (b, lb)| {
                for (x, y) in a.iter_mut().zip(&b) {
                    x.merge(y);
                }
                (a, la.or(lb))
            },
        )
}

/// The trials of every design of a run: per design, each job's aggregate and trial 0's
/// timeline (if this shard ran it), and the trials run.
pub(crate) struct Rounds<L> {
    pub(crate) aggs: Vec<Vec<Aggregate>>,
    pub(crate) lines: Vec<Option<L>>,
    pub(crate) trials: u32,
}

/// One design of a run for [`run_rounds`]: its progress-bar label and each job's
/// parameters (for the precision of its figures).
pub(crate) struct RoundDesign {
    pub(crate) label: String,
    pub(crate) jobs: Vec<PlanConfig>,
}

/// Runs the trials of shard `si` of `sn` on every design: `--trials` of them, or with
/// `--precision` rounds of trials until the 95 % interval of every job's lost training
/// time is within the precision (at most `--trials`). `run(k, cache, t, aggs)` runs trial
/// `t` of design `k`.
pub(crate) fn run_rounds<L: Send>(
    a: &ResilienceArgs,
    (si, sn): (u32, u32),
    designs: &[RoundDesign],
    run: impl Fn(usize, &mut Cache, u32, &mut [Aggregate]) -> Option<L> + Sync,
) -> Rounds<L> {
    let max_trials = a.trials;
    let mut target = match a.precision {
        Some(_) => max_trials.min(16),
        None => max_trials,
    };
    let bar = progress(a.quiet, (target as usize * designs.len()) as u64);
    let mut aggs: Vec<Vec<Aggregate>> = designs
        .iter()
        .map(|d| vec![Aggregate::default(); d.jobs.len()])
        .collect();
    let mut lines: Vec<Option<L>> = designs.iter().map(|_| None).collect();
    let mut done = 0u32;
    loop {
        let trials: Vec<u32> = planner::shard_trials(target, si, sn)
            .filter(|&t| t >= done)
            .collect();
        for (k, d) in designs.iter().enumerate() {
            bar.set_message(d.label.clone());
            let (agg, line) = run_trials(d.jobs.len(), &trials, &bar, |cache, t, aggs| {
                run(k, cache, t, aggs)
            });
            for (x, y) in aggs[k].iter_mut().zip(&agg) {
                x.merge(y);
            }
            lines[k] = lines[k].take().or(line);
        }
        done = target;
        let Some(p) = a.precision else { break };
        // every job of every design precise enough
        let need = designs
            .iter()
            .zip(&aggs)
            .flat_map(|(d, ag)| d.jobs.iter().zip(ag))
            .map(|(cfg, agg)| {
                let s = planner::summarize("", 0, 1.0, 0.0, cfg, agg);
                let lost = s.effective_training.map(|x| 1.0 - x);
                stats::trials_for(&lost, done, p / 100.0)
            })
            .max()
            .unwrap_or(done)
            .min(max_trials);
        if need <= done {
            break;
        }
        // grow by at most 4× per round: the estimate of the spread improves as trials come
        target = need.min(done.saturating_mul(4));
        bar.set_length((target as usize * designs.len()) as u64);
    }
    bar.finish_and_clear();
    Rounds {
        aggs,
        lines,
        trials: done,
    }
}

pub(crate) fn resilience(a: ResilienceArgs) -> anyhow::Result<()> {
    check_outputs(a.json.as_deref(), a.plot.as_deref())?;
    let shard = a
        .shard
        .as_deref()
        .map(parse_shard)
        .transpose()?
        .unwrap_or((0, 1));
    let cfg = config(&a)?;
    anyhow::ensure!(!a.job_gpus.is_empty(), "--job-gpus: give at least one size");
    let sweep = a.job_gpus.len() > 1;
    if let Some(p) = a.precision {
        anyhow::ensure!(
            p.is_finite() && p > 0.0 && p < 100.0,
            "--precision {p}: expected a percentage above 0 and below 100"
        );
        anyhow::ensure!(
            a.shard.is_none(),
            "--precision cannot be used with --shard (every shard must run the same trials); give --trials"
        );
    }
    anyhow::ensure!(
        !(sweep && a.shard.is_some()),
        "--shard runs one job size: give one --job-gpus per shard (as docs/planner/slurm-array.sh does)"
    );
    let prices = common::prices(a.prices.as_deref())?;
    let fabrics: Vec<topo::Fabric> = a
        .designs
        .iter()
        .map(|d| load_design(d, a.scale_up_domain).with_context(|| format!("design {d}")))
        .collect::<anyhow::Result<_>>()?;
    let mut json = crate::common::JsonOut::new(a.json.as_deref())?;
    if !a.job.is_empty() || a.tenants.is_some() {
        return crate::cmd_plan_jobs::resilience(&a, cfg, &fabrics, &prices, shard, &mut json);
    }
    let mut results = Vec::new();
    for &gpus in &a.job_gpus {
        let mut c = cfg.clone();
        c.job_gpus = gpus;
        c.validate()?;
        let mut names = Vec::new();
        let mut designs = Vec::new();
        for (name, f) in a.designs.iter().zip(&fabrics) {
            if sweep && gpus > f.num_gpus() {
                println!(
                    "{gpus}-GPU job: {name} holds {} GPUs, left out",
                    f.num_gpus()
                );
                continue;
            }
            designs.push((
                f,
                Design::new(f, &c).with_context(|| format!("design {name}"))?,
            ));
            names.push(name.clone());
        }
        if designs.is_empty() {
            continue;
        }
        let r = run_size(&a, c, &names, &designs, &prices, shard);
        if sweep {
            print!("\n{gpus}-GPU job\n");
        }
        print!("{}", render_table(&r));
        results.push(r);
    }
    if sweep {
        print!("\n{}", render_sweep(&results));
        json.write(&results)?;
    } else if let Some(r) = results.first() {
        json.write(r)?;
    }
    write_plots(a.plot.as_deref(), |dir| plot_results(&results, dir))
}

/// Writes plots into `dir` when one is given, naming every file written.
pub(crate) fn write_plots(
    dir: Option<&Path>,
    plots: impl FnOnce(&Path) -> anyhow::Result<Vec<PathBuf>>,
) -> anyhow::Result<()> {
    if let Some(dir) = dir {
        for p in plots(dir)? {
            println!("wrote {}", p.display());
        }
    }
    Ok(())
}

/// Plots of one result, or of a sweep: one directory per job size and the sweep plot.
fn plot_results(results: &[RunResult], dir: &Path) -> anyhow::Result<Vec<PathBuf>> {
    let [one] = results else {
        let mut out = Vec::new();
        for r in results {
            let sub = dir.join(format!("gpus-{}", r.config.job_gpus));
            out.extend(plan_plots::write(r, &sub)?);
        }
        out.push(plan_plots::sweep(results, dir)?);
        return Ok(out);
    };
    plan_plots::write(one, dir)
}

/// Runs the trials of one job size on every design (until the precision is reached).
fn run_size(
    a: &ResilienceArgs,
    mut cfg: PlanConfig,
    names: &[String],
    designs: &[(&topo::Fabric, Design<'_>)],
    prices: &topo::analysis::PriceList,
    shard: (u32, u32),
) -> RunResult {
    let rounds: Vec<RoundDesign> = names
        .iter()
        .map(|name| RoundDesign {
            label: format!("{name}, {} GPUs", cfg.job_gpus),
            jobs: vec![cfg.clone()],
        })
        .collect();
    let r = run_rounds(a, shard, &rounds, |k, cache, t, aggs| {
        planner::run_trial(&designs[k].1, t, cache, &mut aggs[0], t == 0)
    });
    cfg.trials = r.trials;
    let aggs = r.aggs.into_iter().map(|mut a| a.remove(0));
    let mut out = Vec::new();
    for ((name, (f, d)), (agg, timeline)) in names.iter().zip(designs).zip(aggs.zip(r.lines)) {
        let cost = topo::analysis::summarize(f, &d.healthy, prices).cost_per_gpu_usd;
        let summary = planner::summarize(name, f.num_gpus(), d.healthy_busbw, cost, &cfg, &agg);
        out.push(DesignResult {
            design: name.clone(),
            fingerprint: planner::fingerprint(f),
            gpus: f.num_gpus(),
            healthy_busbw: d.healthy_busbw,
            cost_per_gpu_usd: cost,
            aggregate: agg,
            timeline,
            summary,
        });
    }
    RunResult {
        config: cfg,
        shards: vec![shard.0],
        shard_count: shard.1,
        designs: out,
    }
}

/// Figures by job size (rows) and design (columns).
pub fn render_sweep(results: &[RunResult]) -> String {
    let names = plan_plots::design_names(results);
    let figures: [(&str, Cell); 4] = [
        ("interruptions / day", |s| est(&s.interruptions_per_day, 2)),
        ("lost waiting", |s| pct(&s.lost_waiting)),
        ("lost to checkpoint writes", |s| {
            pct(&s.lost_to_checkpoint_writes)
        }),
        ("effective training time", |s| pct(&s.effective_training)),
    ];
    let mut rows: Vec<Vec<String>> = Vec::new();
    for (label, f) in figures {
        for r in results {
            let mut row = vec![format!("{label}, {} GPUs", r.config.job_gpus)];
            for n in &names {
                row.push(
                    r.designs
                        .iter()
                        .find(|d| d.design == *n)
                        .map_or("(does not fit)".into(), |d| f(&d.summary)),
                );
            }
            rows.push(row);
        }
    }
    let mut head = vec!["by job size".to_string()];
    head.extend(names.iter().map(|n| n.to_string()));
    rows.insert(0, head);
    aligned(&rows)
}

/// Cells of a text table, columns aligned (the first left, the others right).
pub(crate) fn aligned(rows: &[Vec<String>]) -> String {
    let n = rows.iter().map(Vec::len).max().unwrap_or(0);
    let widths: Vec<usize> = (0..n)
        .map(|i| {
            rows.iter()
                .filter_map(|r| r.get(i))
                .map(|c| c.chars().count())
                .max()
                .unwrap_or(0)
        })
        .collect();
    let mut out = String::new();
    for row in rows {
        for (i, (v, w)) in row.iter().zip(&widths).enumerate() {
            if i == 0 {
                out.push_str(&format!("{v:w$}"));
            } else {
                out.push_str(&format!("  {v:>w$}"));
            }
        }
        out.push('\n');
    }
    out
}

pub(crate) fn progress(quiet: bool, n: u64) -> indicatif::ProgressBar {
    if quiet {
        return indicatif::ProgressBar::hidden();
    }
    let b = indicatif::ProgressBar::new(n);
    b.set_style(
        indicatif::ProgressStyle::with_template(
            "{spinner} [{elapsed_precise}] {bar:30} {pos}/{len} trials · {per_sec} · {msg}",
        )
        .expect("valid template"),
    );
    b
}

/// The largest shard result `fabric plan merge` reads (a shard of a 100k-GPU sweep is a
/// few hundred kB of JSON; anything near this is not a result).
pub(crate) const MAX_RESULT_BYTES: u64 = 64 << 20;

pub(crate) fn merge(a: MergeArgs) -> anyhow::Result<()> {
    check_outputs(a.json.as_deref(), a.plot.as_deref())?;
    let mut json = crate::common::JsonOut::new(a.json.as_deref())?;
    let values: Vec<(PathBuf, serde_json::Value)> = a
        .files
        .iter()
        .map(|p| {
            let text = crate::common::read_capped(p, MAX_RESULT_BYTES)
                .with_context(|| format!("cannot read shard result {}", p.display()))?;
            let v: serde_json::Value = serde_json::from_str(&text)
                .with_context(|| format!("{}: not a JSON result", p.display()))?;
            Ok((p.clone(), v))
        })
        .collect::<anyhow::Result<_>>()?;
    // a multi-job result has its jobs at the top
    let multi = |v: &serde_json::Value| v.get("jobs").is_some();
    if values.iter().any(|(_, v)| multi(v)) {
        if let Some((p, _)) = values.iter().find(|(_, v)| !multi(v)) {
            anyhow::bail!(
                "{}: a single-job result among multi-job ones: merge shards of one run",
                p.display()
            );
        }
        return crate::cmd_plan_jobs::merge(&values, &mut json, a.plot.as_deref());
    }
    let merged = planner::merge(&parse_shards(&values)?)?;
    let trials = merged.designs.first().map_or(0, |d| d.aggregate.trials);
    warn_missing_shards(merged.shard_count, &merged.shards, trials);
    report(&merged, &mut json, a.plot.as_deref())
}

/// Shard results (files already read as JSON) as `T`; an error names the file and the
/// field.
pub(crate) fn parse_shards<T: serde::de::DeserializeOwned>(
    files: &[(PathBuf, serde_json::Value)],
) -> anyhow::Result<Vec<T>> {
    files
        .iter()
        .map(|(p, v)| {
            serde_path_to_error::deserialize(v)
                .map_err(|e| anyhow::anyhow!("{}: {}: {}", p.display(), e.path(), e.inner()))
        })
        .collect()
}

/// Warns when shards of `count` are missing from a merged result (it covers `trials`).
pub(crate) fn warn_missing_shards(count: u32, shards: &[u32], trials: u64) {
    let missing = planner::missing_shards_of(count, shards);
    if !missing.is_empty() {
        eprintln!(
            "warning: shards {missing:?} of {count} are missing; the figures cover {trials} trials"
        );
    }
}

fn report(
    r: &RunResult,
    json: &mut crate::common::JsonOut,
    plot: Option<&Path>,
) -> anyhow::Result<()> {
    print!("{}", render_table(r));
    json.write(r)?;
    write_plots(plot, |dir| plan_plots::write(r, dir))
}

type Cell = fn(&Summary) -> String;

/// `value [lo, hi]` with `digits` decimals, `value [±?]` without an interval.
pub(crate) fn est(e: &Estimate, digits: usize) -> String {
    if e.lo.is_finite() && e.hi.is_finite() {
        format!(
            "{:.digits$} [{:.digits$}, {:.digits$}]",
            e.value, e.lo, e.hi
        )
    } else {
        format!("{:.digits$} [±?]", e.value)
    }
}

/// An estimate of a share, in percent.
pub(crate) fn pct(e: &Estimate) -> String {
    est(&e.map(|x| 100.0 * x), 2) + " %"
}

fn cause(s: &Summary, c: usize) -> String {
    est(&s.interruptions_by_cause[planner::CAUSES[c]], 3)
}

fn class(s: &Summary, c: usize) -> String {
    est(&s.failures_per_day[planner::CLASSES[c]], 3)
}

const ROWS: &[(&str, Cell)] = &[
    ("GPUs in fabric", |s| s.gpus.to_string()),
    ("cost per GPU (USD)", |s| {
        format!("${:.0}", s.cost_per_gpu_usd)
    }),
    ("healthy busbw (GB/s)", |s| {
        format!("{:.1}", s.healthy_busbw_gbytes)
    }),
    ("busbw / healthy p50", |s| est(&s.rel_p50, 3)),
    ("busbw / healthy p99", |s| est(&s.rel_p99, 3)),
    ("busbw / healthy worst", |s| est(&s.rel_worst, 3)),
    ("busbw / healthy mean", |s| est(&s.rel_mean, 4)),
    ("time with unreachable NICs", |s| pct(&s.unreachable_share)),
    ("job interruptions / day", |s| {
        est(&s.interruptions_per_day, 3)
    }),
    ("  network: NIC cut off", |s| cause(s, 0)),
    ("  network: re-route timeout", |s| cause(s, 1)),
    ("  GPU", |s| cause(s, 2)),
    ("  server", |s| cause(s, 3)),
    ("  software", |s| cause(s, 4)),
    ("lost to interruptions", |s| pct(&s.lost_to_interruptions)),
    ("lost to node swaps", |s| pct(&s.lost_to_node_swaps)),
    ("lost to checkpoint writes", |s| {
        pct(&s.lost_to_checkpoint_writes)
    }),
    ("lost waiting (job cannot run)", |s| pct(&s.lost_waiting)),
    ("effective training time", |s| pct(&s.effective_training)),
    ("NIC cut-offs ridden through (PXN) / day", |s| {
        est(&s.pxn_absorbed_per_day, 3)
    }),
    ("switch failures with no spare / day", |s| {
        est(&s.switch_without_spare_per_day, 3)
    }),
    ("ECMP width lost (mean)", |s| pct(&s.ecmp_width_lost_mean)),
    ("ECMP width lost (max)", |s| {
        format!("{:.2} %", 100.0 * s.ecmp_width_lost_max)
    }),
    ("failures / day: host links", |s| class(s, 0)),
    ("  fabric links", |s| class(s, 1)),
    ("  leaves", |s| class(s, 2)),
    ("  spines", |s| class(s, 3)),
    ("  cores", |s| class(s, 4)),
    ("  NICs", |s| class(s, 5)),
    ("  GPUs", |s| class(s, 6)),
    ("  servers", |s| class(s, 7)),
    ("  software", |s| class(s, 8)),
    ("trials", |s| s.trials.to_string()),
    ("states evaluated / reused", |s| {
        format!("{} / {}", s.evaluations, s.cache_hits)
    }),
];

/// The first two lines of a plan's table: `what` ran under config `c` (`sharing`, if not
/// empty, says how spares are shared, ending in "; "), and the shards merged.
pub(crate) fn run_header(
    what: &str,
    c: &planner::PlanConfig,
    sharing: &str,
    shards: &[u32],
    shard_count: u32,
) -> String {
    format!(
        "{what}, {} days × {} trials (seed {}), {}, {} channels per ring edge; checkpoint every {} h, restart {} min; re-route interrupts with p = {} (assumption)\nfailures: {}; {sharing}figures with 95 % intervals [lo, hi] over trials{}\n",
        c.days,
        c.trials,
        c.seed,
        c.lb.describe(),
        c.channels,
        c.checkpoint_hours,
        c.restart_minutes,
        c.reroute_interrupt,
        c.scope.label(),
        if shard_count > 1 {
            format!("; shards {shards:?} of {shard_count}")
        } else {
            String::new()
        }
    )
}

/// The side-by-side table.
pub fn render_table(r: &RunResult) -> String {
    let c = &r.config;
    let mut out = run_header(
        &format!("{}-GPU job", c.job_gpus),
        c,
        "",
        &r.shards,
        r.shard_count,
    );
    if r.designs.iter().all(|d| d.aggregate.trials == 0) {
        out.push_str(&format!(
            "no trials: this result holds none of the {} trials (shards {:?} of {} hold trials t with t mod {} in {:?}); there are no figures to show\n",
            c.trials, r.shards, r.shard_count, r.shard_count, r.shards
        ));
        return out;
    }
    let mut head = vec![String::new()];
    head.extend(r.designs.iter().map(|d| d.design.clone()));
    let mut rows = vec![head];
    rows.extend(ROWS.iter().map(|(label, f)| {
        let mut row = vec![label.to_string()];
        row.extend(r.designs.iter().map(|d| f(&d.summary)));
        row
    }));
    out.push_str(&aligned(&rows));
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(dir: &Path, shard: Option<&str>, out: &str) -> ResilienceArgs {
        ResilienceArgs {
            designs: vec!["fat-tree-k4".into(), "fat-tree-k6".into()],
            job_gpus: vec![8],
            days: 10.0,
            trials: 6,
            precision: None,
            failures: "network".into(),
            reroute_interrupt: 0.0,
            seed: 9,
            rates: Some(dir.join("rates.toml")),
            lb: "spray".into(),
            checkpoint_hours: 1.0,
            restart_minutes: 10.0,
            scale_up_gbps: 3600.0,
            channels: 2,
            spare_servers: None,
            node_swap_minutes: 5.0,
            spare_switches: None,
            switch_swap_hours: 1.0,
            checkpoint_gb_per_gpu: 0.346,
            storage_gbytes_per_s: 2000.0,
            pxn: false,
            scale_up_domain: None,
            prices: None,
            job: Vec::new(),
            tenants: None,
            json: Some(dir.join(out)),
            plot: None,
            shard: shard.map(String::from),
            quiet: true,
        }
    }

    fn read(p: &Path) -> RunResult {
        serde_json::from_str(&std::fs::read_to_string(p).unwrap()).unwrap()
    }

    #[test]
    fn shards_merge_into_the_whole_run_and_plots_are_written() {
        let dir = std::env::temp_dir().join(format!("fabric-plan-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(
            dir.join("rates.toml"),
            "[host_link]\nafr_percent = 3000\n[fabric_link]\nafr_percent = 3000\n[leaf]\nafr_percent = 2000\n",
        )
        .unwrap();
        resilience(args(&dir, None, "all.json")).unwrap();
        resilience(args(&dir, Some("0/2"), "s0.json")).unwrap();
        resilience(args(&dir, Some("1/2"), "s1.json")).unwrap();
        let whole = read(&dir.join("all.json"));
        // The per-cause and per-class maps are written in key order: the same run gives the
        // same bytes (they were hash maps, in a random order per process).
        let text = std::fs::read_to_string(dir.join("all.json")).unwrap();
        let v: serde_json::Value = serde_json::from_str(&text).unwrap();
        for key in ["interruptions_by_cause", "failures_per_day"] {
            let want: Vec<String> = v["designs"][0]["summary"][key]
                .as_object()
                .unwrap()
                .keys()
                .cloned()
                .collect();
            assert!(want.len() >= 4, "{key}: {want:?}");
            // Where each key is written, in the first design's map (`want` is sorted:
            // serde_json's map is a BTreeMap).
            let map = &text[text.find(&format!("\"{key}\"")).unwrap()..];
            let written: Vec<usize> = want
                .iter()
                .map(|k| map.find(&format!("\"{k}\"")).unwrap())
                .collect();
            assert!(written.is_sorted(), "{key}: written out of order: {map}");
        }
        let mut m = MergeArgs {
            files: vec![dir.join("s1.json"), dir.join("s0.json")],
            json: Some(dir.join("merged.json")),
            plot: Some(dir.join("plots")),
        };
        merge(m).unwrap();
        let merged = read(&dir.join("merged.json"));
        assert_eq!(merged.shards, vec![0, 1]);
        for (a, b) in whole.designs.iter().zip(&merged.designs) {
            assert_eq!(a.aggregate.trials, 6);
            assert_eq!(a.aggregate.failures, b.aggregate.failures);
            assert_eq!(a.aggregate.interruptions, b.aggregate.interruptions);
            assert_eq!(a.summary.rel_p99, b.summary.rel_p99);
            assert!(
                (a.summary.unreachable_share.value - b.summary.unreachable_share.value).abs()
                    < 1e-12
            );
            assert_eq!(a.timeline, b.timeline);
            assert!(a.aggregate.failures.iter().sum::<u64>() > 0);
        }
        for f in [
            "busbw-tail.svg",
            "timeline-busbw.svg",
            "timeline-unusable.svg",
            "timeline-failed.svg",
        ] {
            let t = std::fs::read_to_string(dir.join("plots").join(f)).unwrap();
            assert!(t.starts_with("<svg") && t.contains("fat-tree-k6"), "{f}");
        }
        let table = render_table(&merged);
        assert!(
            table.contains("job interruptions / day") && table.contains("fat-tree-k4"),
            "{table}"
        );
        // a shard file that is not a result: the error names the file and the field
        std::fs::write(dir.join("bad.json"), "{\"config\": 3}").unwrap();
        m = MergeArgs {
            files: vec![dir.join("bad.json")],
            json: None,
            plot: None,
        };
        let e = merge(m).unwrap_err().to_string();
        assert!(e.contains("bad.json: config: invalid type"), "{e}");
        // the job must fit
        let mut big = args(&dir, None, "x.json");
        big.job_gpus = vec![1000];
        let e = format!("{:#}", resilience(big).unwrap_err());
        assert!(
            e.contains("1000 GPUs do not fit in fat-tree-k4 (16 GPUs)"),
            "{e}"
        );
        std::fs::remove_dir_all(&dir).ok();
    }

    #[test]
    fn bad_parameters_get_clear_errors() {
        let dir = std::env::temp_dir();
        let check = |f: &dyn Fn(&mut ResilienceArgs), want: &str| {
            let mut a = args(&dir, None, "unused.json");
            a.rates = None;
            f(&mut a);
            let e = format!("{:#}", resilience(a).unwrap_err());
            assert!(e.contains(want), "{e}");
        };
        check(
            &|a| a.lb = "ecmpp".into(),
            "--lb ecmpp: expected ecmp, spray, entropy or adaptive",
        );
        check(
            &|a| a.days = 0.0,
            "days: 0 is not a horizon above 0 and at most 3650 days",
        );
        check(&|a| a.trials = 0, "trials: 0 is not from 1 to 1,000,000");
        check(&|a| a.channels = 0, "channels: 0: expected 1 to 64");
        check(
            &|a| a.designs = vec!["nope".into()],
            "design nope: unknown preset `nope`",
        );
        check(
            &|a| a.rates = Some("/no/such/rates.toml".into()),
            "cannot read rates file /no/such/rates.toml",
        );
        check(
            &|a| a.shard = Some("2/2".into()),
            "--shard 2/2: expected i/N",
        );
        check(
            &|a| a.failures = "gpu".into(),
            "--failures gpu: expected all or network",
        );
        check(
            &|a| a.reroute_interrupt = 1.5,
            "re-route interruption probability: 1.5: expected 0 to 1",
        );
        check(&|a| a.precision = Some(0.0), "--precision 0: expected");
    }

    #[test]
    fn precision_chooses_the_trials() {
        let dir = std::env::temp_dir().join(format!("fabric-plan-p-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("rates.toml"), "[host]\nafr_percent = 3000\n").unwrap();
        let mut a = args(&dir, None, "p.json");
        a.failures = "all".into();
        a.designs = vec!["fat-tree-k4".into()];
        a.trials = 400;
        a.precision = Some(20.0);
        resilience(a).unwrap();
        let r = read(&dir.join("p.json"));
        let s = &r.designs[0].summary;
        let lost = s.effective_training.map(|x| 1.0 - x);
        // more than the first round of 16, fewer than the cap, and precise enough
        assert!(
            r.config.trials > 16 && r.config.trials < 400,
            "{}",
            r.config.trials
        );
        assert!(lost.relative_half_width() <= 0.2, "{lost:?}");
        assert_eq!(s.trials, r.config.trials as u64);
        std::fs::remove_dir_all(&dir).ok();
    }

    #[test]
    fn output_paths_are_checked_before_any_trial() {
        let dir = std::env::temp_dir();
        let mut a = args(&dir, None, "unused.json");
        a.rates = None;
        a.json = Some("/no/such/dir/r.json".into());
        // a huge run: if the check came after the trials, this test would not finish
        a.trials = 1_000_000;
        a.days = 365.0;
        let e = format!("{:#}", resilience(a).unwrap_err());
        assert!(
            e.contains("--json /no/such/dir/r.json: cannot write there"),
            "{e}"
        );
        let mut a = args(&dir, None, "unused.json");
        a.json = None;
        a.trials = 1_000_000;
        std::fs::write(
            dir.join(format!("fabric-plan-file-{}", std::process::id())),
            "",
        )
        .unwrap();
        a.plot = Some(
            dir.join(format!("fabric-plan-file-{}", std::process::id()))
                .join("p"),
        );
        let e = format!("{:#}", resilience(a).unwrap_err());
        assert!(e.contains("cannot create the directory"), "{e}");
        std::fs::remove_file(dir.join(format!("fabric-plan-file-{}", std::process::id()))).ok();
    }

    /// A shard result or rates file larger than the cap (a sparse file, /dev/zero) is
    /// refused with its name and the limit, read no further than the limit.
    #[test]
    fn huge_shard_and_rates_files_are_refused_naming_file_and_limit() {
        let huge = testkit::huge::HugeFiles::new("fabric-plan", "json", MAX_RESULT_BYTES);
        for file in huge.all() {
            let e = merge(MergeArgs {
                files: vec![file.to_path_buf()],
                json: None,
                plot: None,
            })
            .map_err(|e| format!("{e:#}"))
            .unwrap_err();
            assert!(
                e.contains(&format!("cannot read shard result {}", file.display()))
                    && e.contains("larger than the 64 MiB"),
                "{e}"
            );
        }
        let dir = std::env::temp_dir().join(format!("fabric-plan-huge-out-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let mut a = args(&dir, None, "out.json");
        a.rates = Some(huge.sparse().to_path_buf());
        let e = format!("{:#}", resilience(a).unwrap_err());
        assert!(
            e.contains(&format!(
                "cannot read rates file {}",
                huge.sparse().display()
            )) && e.contains("larger than the 64 MiB"),
            "{e}"
        );
        std::fs::remove_dir_all(&dir).ok();
    }

    #[test]
    fn merge_refuses_changed_designs_and_tampered_counts_and_empty_shards_say_so() {
        let dir = std::env::temp_dir().join(format!("fabric-plan-m-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(
            dir.join("rates.toml"),
            "[host_link]\nafr_percent = 3000\n[leaf]\nafr_percent = 2000\n",
        )
        .unwrap();
        let spec = |servers: u32| {
            format!(
                "name = \"d\"\n[hosts]\nservers = {servers}\nrate = \"100G\"\n[[planes]]\nleaves_per_pod = 4\nleaf = {{ radix = 8, down = 4, up = 4 }}\nspine = {{ radix = 4 }}\n"
            )
        };
        let design = dir.join("d.toml");
        let shard = |i: u32, out: &str| {
            let mut a = args(&dir, Some(&format!("{i}/2")), out);
            a.designs = vec![design.display().to_string()];
            resilience(a).unwrap();
            dir.join(out)
        };
        std::fs::write(&design, spec(16)).unwrap();
        let s0 = shard(0, "s0.json");
        std::fs::write(&design, spec(12)).unwrap();
        let s1 = shard(1, "s1.json");
        let merge_files = |files: Vec<PathBuf>| {
            merge(MergeArgs {
                files,
                json: None,
                plot: None,
            })
            .map_err(|e| format!("{e:#}"))
        };
        let e = merge_files(vec![s0.clone(), s1]).unwrap_err();
        assert!(e.contains("changed between shards [0] and [1]"), "{e}");
        // tampered: an interruption count edited by hand
        std::fs::write(&design, spec(16)).unwrap();
        let s1 = shard(1, "s1.json");
        assert!(merge_files(vec![s0.clone(), s1.clone()]).is_ok());
        let mut r = read(&s1);
        r.designs[0].aggregate.interruptions += 1;
        std::fs::write(&s1, serde_json::to_string(&r).unwrap()).unwrap();
        let e = merge_files(vec![s0.clone(), s1.clone()]).unwrap_err();
        assert!(
            e.contains("are not the sums of its per-trial records"),
            "{e}"
        );
        // a trial dropped from the records
        let mut r = read(&s0);
        r.designs[0].aggregate.per_trial.pop();
        std::fs::write(&s1, serde_json::to_string(&r).unwrap()).unwrap();
        let e = merge_files(vec![s1]).unwrap_err();
        assert!(e.contains("cover 2 trials, not the 3"), "{e}");
        // an empty shard: 6 trials in 8 shards, shard 7 has none
        let mut a = args(&dir, Some("7/8"), "s7.json");
        a.designs = vec![design.display().to_string()];
        resilience(a).unwrap();
        let r = read(&dir.join("s7.json"));
        let t = render_table(&r);
        assert!(
            t.contains("no trials: this result holds none of the 6 trials"),
            "{t}"
        );
        assert!(!t.contains("100.00 %"), "{t}");
        std::fs::remove_dir_all(&dir).ok();
    }

    #[test]
    fn the_table_labels_scope_and_load_balancing_without_debug_text() {
        let dir = std::env::temp_dir().join(format!("fabric-plan-l-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let mut a = args(&dir, None, "all.json");
        a.rates = None;
        a.failures = "all".into();
        a.lb = "ecmp".into();
        a.designs = vec!["fat-tree-k4".into()];
        a.trials = 3;
        resilience(a).unwrap();
        let t = render_table(&read(&dir.join("all.json")));
        assert!(
            t.contains("failures: whole cluster (GPU, server, software and network failures)"),
            "{t}"
        );
        assert!(
            t.contains("ECMP (flow hash)") && !t.contains("Ecmp {"),
            "{t}"
        );
        assert!(t.contains("lost waiting (job cannot run)"), "{t}");
        assert!(t.contains("95 % intervals"), "{t}");
        std::fs::remove_dir_all(&dir).ok();
    }

    #[test]
    fn a_job_size_sweep_gives_a_table_and_a_plot_by_size_and_recovery_flags_reach_the_model() {
        let dir = std::env::temp_dir().join(format!("fabric-plan-w-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let mut a = args(&dir, None, "sweep.json");
        a.rates = None;
        a.failures = "all".into();
        a.lb = "ecmp".into();
        a.job_gpus = vec![4, 32];
        a.trials = 3;
        a.spare_servers = Some(2);
        a.spare_switches = Some(1);
        a.plot = Some(dir.join("plots"));
        resilience(a).unwrap();
        let text = std::fs::read_to_string(dir.join("sweep.json")).unwrap();
        let rs: Vec<RunResult> = serde_json::from_str(&text).unwrap();
        // fat-tree-k4 holds 16 GPUs: left out of the 32-GPU run
        assert_eq!(rs.len(), 2, "{text}");
        assert_eq!(rs[0].config.job_gpus, 4);
        assert_eq!(rs[0].config.recovery.spare_servers, Some(2));
        assert_eq!(rs[0].config.recovery.spare_switches, Some(1));
        assert_eq!(rs[1].config.job_gpus, 32);
        assert_eq!(rs[1].designs.len(), 1);
        let t = render_sweep(&rs);
        assert!(t.contains("effective training time, 32 GPUs"), "{t}");
        assert!(t.contains("(does not fit)"), "{t}");
        for f in [
            "gpus-4/busbw-tail.svg",
            "gpus-32/timeline-failed.svg",
            "sweep-effective-training.svg",
        ] {
            let t = std::fs::read_to_string(dir.join("plots").join(f)).unwrap();
            assert!(t.starts_with("<svg"), "{f}");
        }
        std::fs::remove_dir_all(&dir).ok();
    }

    #[test]
    fn plots_are_readable_log_tail_distinct_markers_whole_ticks_no_debug_text() {
        let dir = std::env::temp_dir().join(format!("fabric-plan-plots-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let mut a = args(&dir, None, "p.json");
        a.rates = None;
        a.failures = "all".into();
        a.lb = "ecmp".into();
        a.trials = 2;
        a.plot = Some(dir.join("plots"));
        resilience(a).unwrap();
        let read = |f: &str| std::fs::read_to_string(dir.join("plots").join(f)).unwrap();
        let tail = read("busbw-tail.svg");
        // a log axis (1e-5 … 1e0), the share below healthy in the legend, no debug text
        assert!(tail.contains("1e-5") && tail.contains("1e0"), "{tail}");
        assert!(tail.contains("below healthy"), "{tail}");
        assert!(!tail.contains("Ecmp {") && tail.contains("ECMP"), "{tail}");
        // two designs: a filled circle for the first, a polygon (triangle) for the second,
        // the second line dashed
        assert!(
            tail.contains("<circle") && tail.contains("<polygon"),
            "{tail}"
        );
        // counts: whole-number ticks only
        let failed = read("timeline-failed.svg");
        let labels: Vec<&str> = failed
            .split("<text")
            .filter_map(|t| t.split('>').nth(1))
            .filter_map(|t| t.split('<').next())
            .collect();
        assert!(
            !labels
                .iter()
                .any(|l| l.parse::<f64>().is_ok() && l.contains('.')),
            "{labels:?}"
        );
        let unusable = read("timeline-unusable.svg");
        assert!(unusable.contains("% of the fabric"), "{unusable}");
        // no float noise in any tick label (`0.30000000000000004`)
        for svg in [&tail, &failed, &unusable, &read("timeline-busbw.svg")] {
            for l in svg
                .split("<text")
                .filter_map(|t| t.split('>').nth(1))
                .filter_map(|t| t.split('<').next())
                .filter(|l| l.parse::<f64>().is_ok())
            {
                let decimals = l.split('.').nth(1).map_or(0, str::len);
                assert!(decimals <= 3, "tick label {l}");
            }
        }
        std::fs::remove_dir_all(&dir).ok();
    }

    #[test]
    fn the_scale_up_domain_flag_overrides_the_design_and_is_checked() {
        let f = load_design("fat-tree-k4", Some(4)).unwrap();
        assert_eq!(f.host_layout().scale_up_domain, 4);
        assert_eq!(f.scale_up_domain_of(topo::NodeId(5)), 1);
        let e = format!("{:#}", load_design("fat-tree-k4", Some(0)).unwrap_err());
        assert!(e.contains("scale_up_domain"), "{e}");
    }

    #[test]
    fn shard_syntax() {
        assert_eq!(parse_shard("3/16").unwrap(), (3, 16));
        for bad in ["16/16", "1", "a/2", "0/0", "-1/2"] {
            let e = parse_shard(bad).unwrap_err().to_string();
            assert!(e.contains("expected i/N"), "{bad}: {e}");
        }
    }
}
