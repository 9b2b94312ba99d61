//! `fabric plan resilience` and `fabric plan merge`: the Monte-Carlo resilience planner
//! (crate `flow-model`) on designs named like other commands (a spec file or a preset).
//!
//! Trials run in parallel on all cores (rayon); a shard (`--shard i/N`) runs trials
//! `t mod N = i`, and `fabric plan merge` adds shard results up into the whole run.

use std::path::{Path, PathBuf};

use anyhow::Context;
use flow_model::LoadBalance;
use flow_model::planner::{
    self, Aggregate, Cache, Design, DesignResult, FailureScope, PlanConfig, RunResult, Summary,
    TimelinePoint,
};
use flow_model::rates::Rates;
use flow_model::stats::{self, Estimate};
use rayon::prelude::*;

use crate::common;

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
    /// GPUs of the job (placed on whole servers, topology-aware).
    #[arg(long, default_value_t = 4096)]
    pub job_gpus: u64,
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

fn config(a: &ResilienceArgs) -> anyhow::Result<PlanConfig> {
    let rates = match &a.rates {
        None => Rates::default(),
        Some(p) => {
            let text = std::fs::read_to_string(p)
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
        job_gpus: a.job_gpus,
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

/// Runs `trials` of one design in parallel; the timeline of trial 0 if among them.
fn run_trials(
    d: &Design<'_>,
    trials: &[u32],
    bar: &indicatif::ProgressBar,
) -> (Aggregate, Option<Vec<TimelinePoint>>) {
    trials
        .par_iter()
        .map_init(Cache::default, |cache, &t| {
            let mut agg = Aggregate::default();
            let line = planner::run_trial(d, t, cache, &mut agg, t == 0);
            bar.inc(1);
            (agg, line)
        })
        .reduce(
            || (Aggregate::default(), None),
            |(mut a, la), (b, lb)| {
                a.merge(&b);
                (a, la.or(lb))
            },
        )
}

/// Trials to run next for a target precision (percent) after `done`, from every design's
/// interval of lost training time so far; `done` when all are precise enough.
fn trials_needed(cfg: &PlanConfig, aggs: &[Aggregate], done: u32, precision: f64) -> u32 {
    aggs.iter()
        .map(|a| {
            let s = planner::summarize("", 0, 1.0, 0.0, cfg, a);
            let lost = s.effective_training.map(|x| 1.0 - x);
            stats::trials_for(&lost, done, precision / 100.0)
        })
        .max()
        .unwrap_or(done)
}

fn resilience(a: ResilienceArgs) -> anyhow::Result<()> {
    check_outputs(a.json.as_deref(), a.plot.as_deref())?;
    let (si, sn) = a
        .shard
        .as_deref()
        .map(parse_shard)
        .transpose()?
        .unwrap_or((0, 1));
    let mut cfg = config(&a)?;
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
    let prices = common::prices(a.prices.as_deref())?;
    let fabrics: Vec<topo::Fabric> = a
        .designs
        .iter()
        .map(|d| common::load_design(d).with_context(|| format!("design {d}")))
        .collect::<anyhow::Result<_>>()?;
    let designs: Vec<Design<'_>> = a
        .designs
        .iter()
        .zip(&fabrics)
        .map(|(name, f)| Design::new(f, &cfg).with_context(|| format!("design {name}")))
        .collect::<anyhow::Result<_>>()?;
    let mut json = crate::common::JsonOut::new(a.json.as_deref())?;
    let max_trials = cfg.trials;
    let mut target = match a.precision {
        Some(_) => max_trials.min(16),
        None => max_trials,
    };
    let bar = progress(a.quiet, (target as usize * fabrics.len()) as u64);
    let mut aggs: Vec<Aggregate> = vec![Aggregate::default(); designs.len()];
    let mut lines: Vec<Option<Vec<TimelinePoint>>> = vec![None; designs.len()];
    let mut done = 0u32;
    loop {
        let trials: Vec<u32> = planner::shard_trials(target, si, sn)
            .filter(|&t| t >= done)
            .collect();
        for (k, (name, d)) in a.designs.iter().zip(&designs).enumerate() {
            bar.set_message(name.clone());
            let (agg, line) = run_trials(d, &trials, &bar);
            aggs[k].merge(&agg);
            lines[k] = lines[k].take().or(line);
        }
        done = target;
        let Some(p) = a.precision else { break };
        let need = trials_needed(&cfg, &aggs, done, p).min(max_trials);
        if need <= done {
            break;
        }
        // grow by at most 4× per round: the estimate of the spread improves as trials come
        target = need.min(done.saturating_mul(4));
        bar.set_length((target as usize * fabrics.len()) as u64);
    }
    bar.finish_and_clear();
    cfg.trials = done;
    let mut out = Vec::new();
    for (((name, f), d), (agg, timeline)) in a
        .designs
        .iter()
        .zip(&fabrics)
        .zip(&designs)
        .zip(aggs.into_iter().zip(lines))
    {
        let cost = topo::analysis::summarize(f, &d.healthy, &prices).cost_per_gpu_usd;
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
    let result = RunResult {
        config: cfg,
        shards: vec![si],
        shard_count: sn,
        designs: out,
    };
    report(&result, &mut json, a.plot.as_deref())
}

fn progress(quiet: bool, n: u64) -> indicatif::ProgressBar {
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

fn merge(a: MergeArgs) -> anyhow::Result<()> {
    check_outputs(a.json.as_deref(), a.plot.as_deref())?;
    let mut json = crate::common::JsonOut::new(a.json.as_deref())?;
    let parts: Vec<RunResult> = a
        .files
        .iter()
        .map(|p| {
            let text = std::fs::read_to_string(p)
                .with_context(|| format!("cannot read shard result {}", p.display()))?;
            let de = &mut serde_json::Deserializer::from_str(&text);
            serde_path_to_error::deserialize(de)
                .map_err(|e| anyhow::anyhow!("{}: {}: {}", p.display(), e.path(), e.inner()))
        })
        .collect::<anyhow::Result<_>>()?;
    let merged = planner::merge(&parts)?;
    let missing = planner::missing_shards(&merged);
    if !missing.is_empty() {
        eprintln!(
            "warning: shards {missing:?} of {} are missing; the figures cover {} trials",
            merged.shard_count,
            merged.designs.first().map_or(0, |d| d.aggregate.trials)
        );
    }
    report(&merged, &mut json, a.plot.as_deref())
}

fn report(
    r: &RunResult,
    json: &mut crate::common::JsonOut,
    plot: Option<&Path>,
) -> anyhow::Result<()> {
    print!("{}", render_table(r));
    json.write(r)?;
    if let Some(dir) = plot {
        for p in plots(r, dir)? {
            println!("wrote {}", p.display());
        }
    }
    Ok(())
}

type Cell = fn(&Summary) -> String;

/// `value [lo, hi]` with `digits` decimals, `value [±?]` without an interval.
fn est(e: &Estimate, digits: usize) -> String {
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
fn pct(e: &Estimate) -> String {
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
    ("lost waiting (job cannot run)", |s| pct(&s.lost_waiting)),
    ("effective training time", |s| pct(&s.effective_training)),
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

/// The side-by-side table.
pub fn render_table(r: &RunResult) -> String {
    let c = &r.config;
    let mut out = format!(
        "{}-GPU job, {} days × {} trials (seed {}), {}, {} channels per ring edge; checkpoint every {} h, restart {} min; re-route interrupts with p = {} (assumption)\nfailures: {}; figures with 95 % intervals [lo, hi] over trials{}\n",
        c.job_gpus,
        c.days,
        c.trials,
        c.seed,
        c.lb.describe(),
        c.channels,
        c.checkpoint_hours,
        c.restart_minutes,
        c.reroute_interrupt,
        c.scope.label(),
        if r.shard_count > 1 {
            format!("; shards {:?} of {}", r.shards, r.shard_count)
        } else {
            String::new()
        }
    );
    if r.designs.iter().all(|d| d.aggregate.trials == 0) {
        out.push_str(&format!(
            "no trials: this result holds none of the {} trials (shards {:?} of {} hold trials t with t mod {} in {:?}); there are no figures to show\n",
            c.trials, r.shards, r.shard_count, r.shard_count, r.shards
        ));
        return out;
    }
    let names: Vec<&str> = r.designs.iter().map(|d| d.design.as_str()).collect();
    let cells: Vec<Vec<String>> = ROWS
        .iter()
        .map(|(_, f)| r.designs.iter().map(|d| f(&d.summary)).collect())
        .collect();
    let w0 = ROWS.iter().map(|r| r.0.chars().count()).max().unwrap_or(0);
    let widths: Vec<usize> = (0..names.len())
        .map(|i| {
            cells
                .iter()
                .map(|row| row[i].chars().count())
                .max()
                .unwrap_or(0)
                .max(names[i].len())
        })
        .collect();
    out.push_str(&format!("{:w0$}", ""));
    for (n, w) in names.iter().zip(&widths) {
        out.push_str(&format!("  {n:>w$}"));
    }
    out.push('\n');
    for ((label, _), row) in ROWS.iter().zip(&cells) {
        out.push_str(&format!("{label:w0$}"));
        for (v, w) in row.iter().zip(&widths) {
            out.push_str(&format!("  {v:>w$}"));
        }
        out.push('\n');
    }
    out
}

/// CDF of relative bus bandwidth over time, as a step line.
fn cdf(a: &Aggregate) -> Vec<(f64, f64)> {
    let mut pts = vec![(0.0, 0.0)];
    let mut acc = 0.0;
    let bin = planner::HIST_MAX / planner::HIST_BINS as f64;
    for (i, &h) in a.hist_hours.iter().enumerate() {
        if h > 0.0 {
            let x = i as f64 * bin;
            pts.push((x, acc));
            acc += h / a.hours;
            pts.push((x, acc));
        }
    }
    if let Some(&(x, _)) = pts.last() {
        pts.push((x.max(1.0), acc));
    }
    pts
}

/// A trial's timeline as step lines: (hour, value).
fn steps(line: &[TimelinePoint], end: f64, v: impl Fn(&TimelinePoint) -> f64) -> Vec<(f64, f64)> {
    let mut pts = Vec::with_capacity(2 * line.len() + 1);
    for (i, p) in line.iter().enumerate() {
        if i > 0 {
            pts.push((p.hour, v(&line[i - 1])));
        }
        pts.push((p.hour, v(p)));
    }
    if let Some(last) = line.last() {
        pts.push((end, v(last)));
    }
    pts
}

fn plots(r: &RunResult, dir: &Path) -> anyhow::Result<Vec<PathBuf>> {
    use report::plots::line_chart;
    std::fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
    let job = format!("{}-GPU job, {} days", r.config.job_gpus, r.config.days);
    let mut out = Vec::new();
    let series: Vec<(String, Vec<(f64, f64)>)> = r
        .designs
        .iter()
        .map(|d| (d.design.clone(), cdf(&d.aggregate)))
        .collect();
    let p = dir.join("busbw-cdf.svg");
    line_chart(
        &p,
        &format!("all-reduce bus bandwidth / healthy, CDF over time — {job}"),
        "bus bandwidth / healthy",
        "share of time",
        &series,
    )?;
    out.push(p);
    let end = r.config.days * 24.0;
    let with_line: Vec<&DesignResult> = r.designs.iter().filter(|d| d.timeline.is_some()).collect();
    if !with_line.is_empty() {
        let tl = |v: fn(&TimelinePoint) -> f64| -> Vec<(String, Vec<(f64, f64)>)> {
            with_line
                .iter()
                .map(|d| {
                    (
                        d.design.clone(),
                        steps(d.timeline.as_deref().unwrap_or(&[]), end, v),
                    )
                })
                .collect()
        };
        let p = dir.join("timeline-busbw.svg");
        line_chart(
            &p,
            &format!("trial 0: bus bandwidth / healthy — {job}"),
            "hour",
            "bus bandwidth / healthy",
            &tl(|p| p.rel_busbw),
        )?;
        out.push(p);
        let p = dir.join("timeline-unreachable.svg");
        line_chart(
            &p,
            &format!("trial 0: unreachable NICs — {job}"),
            "hour",
            "NICs",
            &tl(|p| p.unreachable as f64),
        )?;
        out.push(p);
        let p = dir.join("timeline-failed.svg");
        line_chart(
            &p,
            &format!("trial 0: components down — {job}"),
            "hour",
            "components",
            &tl(|p| p.failed as f64),
        )?;
        out.push(p);
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(dir: &Path, shard: Option<&str>, out: &str) -> ResilienceArgs {
        ResilienceArgs {
            designs: vec!["fat-tree-k4".into(), "fat-tree-k6".into()],
            job_gpus: 8,
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
            prices: None,
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
            "busbw-cdf.svg",
            "timeline-busbw.svg",
            "timeline-unreachable.svg",
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
        big.job_gpus = 1000;
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
    fn shard_syntax() {
        assert_eq!(parse_shard("3/16").unwrap(), (3, 16));
        for bad in ["16/16", "1", "a/2", "0/0", "-1/2"] {
            let e = parse_shard(bad).unwrap_err().to_string();
            assert!(e.contains("expected i/N"), "{bad}: {e}");
        }
    }
}
