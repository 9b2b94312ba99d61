//! `fabric testbed compare`: one scenario, several congestion-control algorithms, each run
//! `--repeat N` times on veth (veth is not deterministic) and once in the simulator twin
//! (deterministic), summarised in one table — drops, pauses, ECN marks, CNPs, FCT
//! p50/p99/max (median over the veth runs and their range), bottleneck utilisation,
//! veth/simulator ratios, how many runs kept up with real time — with a verdict per
//! algorithm; the same rows as JSON and CSV, each naming algorithm, scenario,
//! parameters and build. The twin also runs `--repeat` times with its senders' starts
//! a few microseconds apart (`--twin-jitter`), since some outcomes hang on that timing
//! noise, which every veth run has (docs/veth.md, "DCQCN's two outcomes"), and once per
//! veth run with that run's own measured starts (`twin::replayed`), for a run-by-run
//! ratio.

use std::path::PathBuf;

use anyhow::{Context, bail};
use cc_algos::CcKind;
use report::outcome::RunOutcome;
use serde::Serialize;
use veth::congestion::{CongestionConfig, CongestionReport};

use crate::cmd_testbed::RunArgs;

#[derive(Debug, clap::Args)]
pub struct CompareArgs {
    #[command(flatten)]
    pub run: RunArgs,
    /// Algorithms to compare, comma-separated (`--cc` names).
    #[arg(long, default_value = "dcqcn,dctcp,nscc,rccc,hpcc")]
    pub algorithms: String,
    /// Veth runs per algorithm (1..=20).
    #[arg(long, default_value_t = 3)]
    pub repeat: usize,
    /// Write the rows as CSV.
    #[arg(long)]
    pub csv: Option<PathBuf>,
    /// Also run the simulator twin `--repeat` times with every flow's start moved later
    /// by up to this much (virtual time; `0us`: not at all), each run with other offsets:
    /// the timing noise of a real-time testbed, on which some outcomes hang (DCQCN's
    /// incast has two). The default is 500 µs of real time at the default scale of 100,
    /// about as late as the veth loops run.
    #[arg(long, default_value = "5us", value_parser = scenario::units::parse_time)]
    pub twin_jitter: cc_algos::Duration,
}

/// Median FCT ratio (veth/simulator) within which an algorithm "agrees".
pub const AGREE: (f64, f64) = (0.67, 1.5);

/// One run of one side, reduced to the table's columns (µs of virtual time).
#[derive(Debug, Clone, Default, Serialize, PartialEq)]
pub struct RunRow {
    pub drops: u64,
    pub pauses: u64,
    pub ecn_marks: u64,
    pub cnps: u64,
    pub finished: usize,
    pub flows: usize,
    pub fct_p50_us: Option<f64>,
    pub fct_p99_us: Option<f64>,
    pub fct_max_us: Option<f64>,
    /// The busiest port's transmitted bytes over the run, as a fraction of its rate.
    pub bottleneck_utilisation: f64,
    /// Veth: both event loops kept up with real time (`CongestionReport::faithful`).
    pub kept_up: bool,
    /// Veth: some flow's controller moved (false with congestion: the algorithm did not run).
    pub controller_reacted: bool,
}

impl RunRow {
    fn from_outcome(o: &RunOutcome, utilisation: f64) -> RunRow {
        let f = o.fct();
        let some = |x: f64| (f.finished > 0).then_some(x);
        RunRow {
            drops: o.counts.drops,
            pauses: o.counts.pauses,
            ecn_marks: o.counts.ecn_marks,
            cnps: o.counts.cnps,
            finished: f.finished,
            flows: f.finished + f.unfinished,
            fct_p50_us: some(f.p50_us),
            fct_p99_us: some(f.p99_us),
            fct_max_us: some(f.max_us),
            bottleneck_utilisation: utilisation,
            kept_up: true,
            controller_reacted: true,
        }
    }

    /// A veth run.
    pub fn veth(r: &CongestionReport) -> RunRow {
        let secs = r.duration_us * 1e-6;
        let cap = r.virtual_rate_gbps * 1e9 / 8.0 * secs;
        let busiest = r.ports.iter().map(|p| p.tx_bytes).max().unwrap_or(0);
        let util = if cap > 0.0 { busiest as f64 / cap } else { 0.0 };
        RunRow {
            kept_up: r.faithful(),
            controller_reacted: !r.controller_inert(),
            ..RunRow::from_outcome(&r.outcome(), util)
        }
    }

    /// The simulator twin's run.
    pub fn sim(s: &sim::SimResults) -> RunRow {
        let util = s.links.iter().map(|l| l.utilisation).fold(0.0, f64::max);
        RunRow::from_outcome(&s.outcome(), util)
    }
}

/// The median and range of a column over the veth runs (runs without a value left out).
#[derive(Debug, Clone, Copy, Default, Serialize, PartialEq)]
pub struct Range {
    pub median: f64,
    pub min: f64,
    pub max: f64,
}

impl Range {
    pub fn of(values: impl Iterator<Item = f64>) -> Option<Range> {
        let mut v: Vec<f64> = values.collect();
        if v.is_empty() {
            return None;
        }
        v.sort_by(f64::total_cmp);
        let n = v.len();
        let median = if n % 2 == 1 {
            v[n / 2]
        } else {
            (v[n / 2 - 1] + v[n / 2]) / 2.0
        };
        Some(Range {
            median,
            min: v[0],
            max: v[n - 1],
        })
    }
}

/// One algorithm: its veth runs, its simulator run, the verdict.
#[derive(Debug, Clone, Serialize)]
pub struct AlgoRow {
    pub algorithm: String,
    pub scenario: String,
    pub parameters: String,
    pub build: String,
    pub veth: Vec<RunRow>,
    pub sim: RunRow,
    pub fct_p50_us: Option<Range>,
    pub fct_p99_us: Option<Range>,
    pub fct_max_us: Option<Range>,
    /// Median veth p50 FCT over the simulator's.
    pub p50_ratio: Option<f64>,
    pub max_ratio: Option<f64>,
    pub verdict: String,
    /// Most a flow's start was moved in the jittered twin runs, µs (virtual).
    pub twin_jitter_us: f64,
    /// The twin's runs with jittered starts (none when `--twin-jitter 0us`).
    pub sim_jittered: Vec<RunRow>,
    pub sim_jittered_p50_us: Option<Range>,
    /// Median veth p50 FCT over the jittered twin runs' median p50.
    pub jittered_p50_ratio: Option<f64>,
    /// The twin of each veth run, its flows started when that run's actually left their
    /// hosts (`veth::congestion::twin::replayed`; same order as `veth`).
    pub sim_replayed: Vec<RunRow>,
    /// Each veth run's start lateness over its flows, µs (virtual): least and most.
    pub start_late_us: Vec<Option<(f64, f64)>>,
    /// Each veth run's p50 FCT over its replayed twin's: median [min–max] over the runs.
    pub replayed_p50_ratio: Option<Range>,
}

impl AlgoRow {
    pub fn new(
        algorithm: &str,
        scenario: &str,
        parameters: &str,
        veth: Vec<RunRow>,
        sim: RunRow,
    ) -> AlgoRow {
        let range = |f: fn(&RunRow) -> Option<f64>| Range::of(veth.iter().filter_map(f));
        let (p50, p99, max) = (
            range(|r| r.fct_p50_us),
            range(|r| r.fct_p99_us),
            range(|r| r.fct_max_us),
        );
        let ratio = |v: Option<Range>, s: Option<f64>| match (v, s) {
            (Some(v), Some(s)) if s > 0.0 => Some(v.median / s),
            _ => None,
        };
        let p50_ratio = ratio(p50, sim.fct_p50_us);
        let max_ratio = ratio(max, sim.fct_max_us);
        let verdict = verdict(&veth, &sim, p50_ratio, None);
        AlgoRow {
            algorithm: algorithm.into(),
            scenario: scenario.into(),
            parameters: parameters.into(),
            build: build(),
            veth,
            sim,
            fct_p50_us: p50,
            fct_p99_us: p99,
            fct_max_us: max,
            p50_ratio,
            max_ratio,
            verdict,
            twin_jitter_us: 0.0,
            sim_jittered: Vec::new(),
            sim_jittered_p50_us: None,
            jittered_p50_ratio: None,
            sim_replayed: Vec::new(),
            start_late_us: Vec::new(),
            replayed_p50_ratio: None,
        }
    }

    /// With the twin of each veth run at that run's own starts (`runs[i]` replays
    /// `veth[i]`, which started its flows `late[i]` µs late).
    pub fn with_replayed_twin(mut self, runs: Vec<RunRow>, late: Vec<Option<(f64, f64)>>) -> Self {
        self.replayed_p50_ratio =
            Range::of(self.veth.iter().zip(&runs).filter_map(|(v, t)| {
                match (v.fct_p50_us, t.fct_p50_us) {
                    (Some(v), Some(t)) if t > 0.0 => Some(v / t),
                    _ => None,
                }
            }));
        self.sim_replayed = runs;
        self.start_late_us = late;
        self
    }

    /// With the twin's runs whose flows started up to `up_to` apart.
    pub fn with_jittered_twin(mut self, up_to: cc_algos::Duration, runs: Vec<RunRow>) -> Self {
        let p50 = Range::of(runs.iter().filter_map(|r| r.fct_p50_us));
        self.jittered_p50_ratio = match (self.fct_p50_us, p50) {
            (Some(v), Some(s)) if s.median > 0.0 => Some(v.median / s.median),
            _ => None,
        };
        self.twin_jitter_us = up_to.as_picos() as f64 / 1e6;
        self.sim_jittered_p50_us = p50;
        self.sim_jittered = runs;
        let nearest = self.fct_p50_us.and_then(|v| {
            self.sim_jittered
                .iter()
                .filter_map(|r| r.fct_p50_us)
                .filter(|&p| p > 0.0)
                .map(|p| v.median / p)
                .min_by(|a, b| a.ln().abs().total_cmp(&b.ln().abs()))
        });
        self.verdict = verdict(&self.veth, &self.sim, self.p50_ratio, nearest);
        self
    }
}

/// `agrees` when every veth run finished every flow, kept up with real time, had a
/// controller that reacted and no drop the simulator did not have, and the median p50
/// FCT is within [`AGREE`] of the simulator's; otherwise every reason it does not.
///
/// The FCT is taken against the lockstep twin (`p50_ratio`) and, when that is outside
/// [`AGREE`], against the nearest of the twin's runs with jittered starts
/// (`nearest_jittered`: veth's median p50 over that run's p50, if the twin ran so): an
/// outcome that hangs on starts no real-time run has should not decide the verdict, and
/// where the twin has two outcomes (DCQCN's 8:1 incast) its median is one of them, so
/// the run nearest to veth is what says whether veth landed on an outcome the twin has.
/// Such an agreement says so, with both ratios.
pub fn verdict(
    veth: &[RunRow],
    sim: &RunRow,
    p50_ratio: Option<f64>,
    nearest_jittered: Option<f64>,
) -> String {
    let n = veth.len();
    let mut why = Vec::new();
    let count = |f: fn(&RunRow) -> bool| veth.iter().filter(|r| f(r)).count();
    let behind = count(|r| !r.kept_up);
    if behind > 0 {
        why.push(format!("{behind}/{n} runs fell behind real time"));
    }
    let unfinished = count(|r| r.finished < r.flows);
    if unfinished > 0 {
        why.push(format!("{unfinished}/{n} runs left flows unfinished"));
    }
    let inert = count(|r| !r.controller_reacted);
    if inert > 0 {
        why.push(format!(
            "the controller never reacted in {inert}/{n} congested runs"
        ));
    }
    if sim.drops == 0 && veth.iter().any(|r| r.drops > 0) {
        why.push("veth dropped, the simulator did not".into());
    }
    let inside = |x: f64| (AGREE.0..=AGREE.1).contains(&x);
    let mut only_jittered = None;
    // Three decimals: a ratio just outside the band must not print as its edge.
    match (p50_ratio, nearest_jittered) {
        (Some(x), _) if inside(x) => {}
        (Some(x), Some(j)) if inside(j) => only_jittered = Some((x, j)),
        (Some(x), j) => why.push(format!(
            "median FCT {x:.3}× the simulator's{} (outside {}–{}×)",
            j.map(|j| format!(", {j:.3}× its nearest run with jittered starts"))
                .unwrap_or_default(),
            AGREE.0,
            AGREE.1
        )),
        (None, _) => why.push("no FCT to compare".into()),
    }
    match (why.is_empty(), only_jittered) {
        (true, None) => "agrees".into(),
        (true, Some((x, j))) => format!(
            "agrees with a twin run with jittered starts (median FCT {j:.3}× the nearest; {x:.3}× the lockstep twin)"
        ),
        (false, _) => format!("differs: {}", why.join("; ")),
    }
}

/// The build the figures come from: crate version and git commit when known.
fn build() -> String {
    let commit = std::process::Command::new("git")
        .args(["rev-parse", "--short", "HEAD"])
        .output()
        .ok()
        .filter(|o| o.status.success())
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string());
    format!(
        "fabric {}{}",
        env!("CARGO_PKG_VERSION"),
        commit.map_or(String::new(), |c| format!(" ({c})"))
    )
}

fn us(v: Option<f64>) -> String {
    v.map_or("–".into(), |x| format!("{x:.0}"))
}

fn range(r: Option<Range>) -> String {
    r.map_or("–".into(), |r| {
        format!("{:.0} [{:.0}–{:.0}]", r.median, r.min, r.max)
    })
}

fn median_count(rows: &[RunRow], f: fn(&RunRow) -> u64) -> String {
    Range::of(rows.iter().map(|r| f(r) as f64)).map_or("–".into(), |r| {
        format!("{:.0} [{:.0}–{:.0}]", r.median, r.min, r.max)
    })
}

/// The table: one row per algorithm and side.
pub fn table(rows: &[AlgoRow]) -> String {
    let header = [
        "algorithm",
        "side",
        "drops",
        "pauses",
        "ECN marks",
        "CNPs",
        "FCT p50 µs",
        "FCT p99 µs",
        "FCT max µs",
        "bottleneck util.",
        "veth/sim p50 (max)",
        "kept up",
        "verdict",
    ];
    let mut out = Vec::new();
    for a in rows {
        let n = a.veth.len();
        let util = Range::of(a.veth.iter().map(|r| r.bottleneck_utilisation));
        out.push(vec![
            a.algorithm.clone(),
            format!("veth ×{n}"),
            median_count(&a.veth, |r| r.drops),
            median_count(&a.veth, |r| r.pauses),
            median_count(&a.veth, |r| r.ecn_marks),
            median_count(&a.veth, |r| r.cnps),
            range(a.fct_p50_us),
            range(a.fct_p99_us),
            range(a.fct_max_us),
            util.map_or("–".into(), |u| format!("{:.2}", u.median)),
            match (a.p50_ratio, a.max_ratio) {
                (Some(p), Some(m)) => format!("{p:.2}× ({m:.2}×)"),
                (Some(p), None) => format!("{p:.2}×"),
                _ => "–".into(),
            },
            format!("{}/{n}", a.veth.iter().filter(|r| r.kept_up).count()),
            a.verdict.clone(),
        ]);
        let s = &a.sim;
        out.push(vec![
            String::new(),
            "sim".into(),
            s.drops.to_string(),
            s.pauses.to_string(),
            s.ecn_marks.to_string(),
            s.cnps.to_string(),
            us(s.fct_p50_us),
            us(s.fct_p99_us),
            us(s.fct_max_us),
            format!("{:.2}", s.bottleneck_utilisation),
            String::new(),
            String::new(),
            String::new(),
        ]);
        if !a.sim_jittered.is_empty() {
            out.push(twin_runs_row(
                format!(
                    "sim ×{}, starts ≤ {} µs apart",
                    a.sim_jittered.len(),
                    a.twin_jitter_us
                ),
                &a.sim_jittered,
                a.jittered_p50_ratio
                    .map_or(String::new(), |p| format!("{p:.2}×")),
            ));
        }
        if !a.sim_replayed.is_empty() {
            let latest = a
                .start_late_us
                .iter()
                .flatten()
                .map(|l| l.1)
                .fold(0.0, f64::max);
            out.push(twin_runs_row(
                format!(
                    "sim ×{}, each veth run's starts (≤ {latest:.0} µs late)",
                    a.sim_replayed.len()
                ),
                &a.sim_replayed,
                a.replayed_p50_ratio.map_or(String::new(), |r| {
                    format!("{:.2}× [{:.2}–{:.2}] per run", r.median, r.min, r.max)
                }),
            ));
        }
    }
    report::table(&header, &out)
}

/// A table row for several runs of the twin (`side` names them): medians [min–max].
fn twin_runs_row(side: String, runs: &[RunRow], ratio: String) -> Vec<String> {
    let range_of = |f: fn(&RunRow) -> Option<f64>| Range::of(runs.iter().filter_map(f));
    let util = Range::of(runs.iter().map(|r| r.bottleneck_utilisation));
    vec![
        String::new(),
        side,
        median_count(runs, |r| r.drops),
        median_count(runs, |r| r.pauses),
        median_count(runs, |r| r.ecn_marks),
        median_count(runs, |r| r.cnps),
        range(range_of(|r| r.fct_p50_us)),
        range(range_of(|r| r.fct_p99_us)),
        range(range_of(|r| r.fct_max_us)),
        util.map_or("–".into(), |u| format!("{:.2}", u.median)),
        ratio,
        String::new(),
        String::new(),
    ]
}

fn csv_field(s: &str) -> String {
    if s.contains([',', '"', '\n']) {
        format!("\"{}\"", s.replace('"', "\"\""))
    } else {
        s.to_string()
    }
}

/// The rows as CSV: one line per run (veth runs numbered from 1, the simulator `sim`,
/// the twin's jittered runs `sim-jitter` numbered from 1, and the twin of veth run i at
/// its own starts `sim-replay` i).
pub fn csv(rows: &[AlgoRow]) -> String {
    let mut out = String::from(
        "algorithm,scenario,parameters,build,side,run,drops,pauses,ecn_marks,cnps,finished,flows,fct_p50_us,fct_p99_us,fct_max_us,bottleneck_utilisation,kept_up,controller_reacted,verdict\n",
    );
    let opt = |v: Option<f64>| v.map_or(String::new(), |x| format!("{x:.1}"));
    for a in rows {
        let runs = a
            .veth
            .iter()
            .enumerate()
            .map(|(i, r)| ("veth", (i + 1).to_string(), r))
            .chain(std::iter::once(("sim", "sim".to_string(), &a.sim)))
            .chain(
                a.sim_jittered
                    .iter()
                    .enumerate()
                    .map(|(i, r)| ("sim-jitter", (i + 1).to_string(), r)),
            )
            .chain(
                a.sim_replayed
                    .iter()
                    .enumerate()
                    .map(|(i, r)| ("sim-replay", (i + 1).to_string(), r)),
            );
        for (side, run, r) in runs {
            let fields = [
                csv_field(&a.algorithm),
                csv_field(&a.scenario),
                csv_field(&a.parameters),
                csv_field(&a.build),
                side.into(),
                run,
                r.drops.to_string(),
                r.pauses.to_string(),
                r.ecn_marks.to_string(),
                r.cnps.to_string(),
                r.finished.to_string(),
                r.flows.to_string(),
                opt(r.fct_p50_us),
                opt(r.fct_p99_us),
                opt(r.fct_max_us),
                format!("{:.3}", r.bottleneck_utilisation),
                r.kept_up.to_string(),
                r.controller_reacted.to_string(),
                csv_field(&a.verdict),
            ];
            out.push_str(&fields.join(","));
            out.push('\n');
        }
    }
    out
}

/// The parameters a row names: topology, hosts, rates, buffer, ECN, PFC, MTU.
fn parameters(cfg: &CongestionConfig) -> String {
    format!(
        "{} of {} hosts, links {} as {}, buffer {} B, ECN {}, PFC {}, payload {} B",
        cfg.topology,
        cfg.hosts,
        cfg.link_rate,
        cfg.virtual_rate,
        cfg.buffer.0,
        cfg.ecn.map_or("off".into(), |e| format!(
            "Kmin {} Kmax {} Pmax {}",
            e.kmin.0, e.kmax.0, e.pmax
        )),
        cfg.pfc.map_or("off".into(), |p| format!(
            "XOFF {} XON {}",
            p.xoff.0, p.xon.0
        )),
        cfg.payload
    )
}

pub fn run(a: CompareArgs) -> anyhow::Result<()> {
    if !(1..=20).contains(&a.repeat) {
        bail!("--repeat {}: give 1..=20 veth runs per algorithm", a.repeat);
    }
    if a.run.pcap.is_some() || a.run.record.is_some() || a.run.plot.is_some() {
        bail!(
            "`testbed compare` runs many times: --pcap, --record and --plot belong to `testbed run`"
        );
    }
    let algorithms: Vec<(String, CcKind)> = a
        .algorithms
        .split(',')
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(|s| {
            s.parse::<CcKind>()
                .map(|k| (s.to_string(), k))
                .with_context(|| format!("--algorithms: {s:?}"))
        })
        .collect::<anyhow::Result<_>>()?;
    if algorithms.is_empty() {
        bail!("--algorithms: name at least one of {}", CcKind::NAMES);
    }
    let mut json = crate::common::JsonOut::new(a.run.json.as_deref())?;
    let (base, plan) = crate::cmd_testbed::configure(&a.run)?;
    // A run's loops set its stop flag when they finish: every run gets its own
    // Stopper, and a signal stops the current one.
    let current = std::sync::Arc::new(std::sync::Mutex::new(veth::congestion::Stopper::default()));
    let stopped = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let (current2, stopped2) = (current.clone(), stopped.clone());
    veth::netns::on_signal(move |_| {
        stopped2.store(true, std::sync::atomic::Ordering::Relaxed);
        if let Ok(s) = current2.lock() {
            s.stop();
        }
    })?;
    let mut rows = Vec::new();
    for (name, kind) in &algorithms {
        let mut cfg = base.clone();
        cfg.cc = *kind;
        let mut veth_rows = Vec::new();
        let (mut replays, mut lateness) = (Vec::new(), Vec::new());
        for i in 1..=a.repeat {
            let stopper = veth::congestion::Stopper::default();
            if let Ok(mut c) = current.lock() {
                *c = stopper.clone();
            }
            if stopped.load(std::sync::atomic::Ordering::Relaxed) {
                stopper.stop();
            }
            let run = veth::congestion::spawn_with(&cfg, &plan, stopper)?;
            let mut run = run;
            run.ignore_snapshots();
            let r = run.join()?;
            if stopped.load(std::sync::atomic::Ordering::Relaxed) {
                return Err(crate::common::Interrupted {
                    status: 130,
                    what: format!(
                        "`testbed compare` was stopped during {name} run {i}: no table (a truncated run is not compared)"
                    ),
                }
                .into());
            }
            let row = RunRow::veth(&r);
            let twin = veth::congestion::twin::replayed(&plan, &r);
            let replay = RunRow::sim(&veth::congestion::twin::run_sim(&cfg, &twin, None)?);
            let late = veth::congestion::twin::start_lateness_us(&plan, &r);
            eprintln!(
                "{name} veth run {i}/{}: p50 {} µs, max {} µs, kept up {}; flows started {} µs late; the twin with this run's starts: p50 {} µs, max {} µs",
                a.repeat,
                us(row.fct_p50_us),
                us(row.fct_max_us),
                row.kept_up,
                late.map_or("–".into(), |(lo, hi)| format!("{lo:.1}–{hi:.1}")),
                us(replay.fct_p50_us),
                us(replay.fct_max_us),
            );
            veth_rows.push(row);
            replays.push(replay);
            lateness.push(late);
        }
        let s = veth::congestion::twin::run_sim(&cfg, &plan, None)?;
        let jittered = jittered_twin_runs(&cfg, &plan, a.twin_jitter, a.repeat)?;
        rows.push(
            AlgoRow::new(
                name,
                &plan.name,
                &parameters(&cfg),
                veth_rows,
                RunRow::sim(&s),
            )
            .with_jittered_twin(a.twin_jitter, jittered)
            .with_replayed_twin(replays, lateness),
        );
    }
    println!(
        "scenario {}: {} — veth median [min–max] over {} runs, simulator twin once with every flow starting on time{}; FCT in µs of virtual time",
        plan.name,
        parameters(&base),
        a.repeat,
        if a.twin_jitter.as_picos() > 0 {
            format!(
                " and {} times with starts moved by up to {} µs",
                a.repeat,
                a.twin_jitter.as_picos() as f64 / 1e6
            )
        } else {
            String::new()
        }
    );
    print!("{}", table(&rows));
    json.write(&rows)?;
    if let Some(p) = &a.csv {
        std::fs::write(p, csv(&rows)).with_context(|| format!("write {}", p.display()))?;
        println!("CSV in {}", p.display());
    }
    Ok(())
}

/// The twin's `runs` runs of `plan` with starts moved by up to `up_to` (none if zero).
fn jittered_twin_runs(
    cfg: &CongestionConfig,
    plan: &scenario::Workplan,
    up_to: cc_algos::Duration,
    runs: usize,
) -> anyhow::Result<Vec<RunRow>> {
    if up_to.as_picos() == 0 {
        return Ok(Vec::new());
    }
    (1..=runs as u64)
        .map(|run| {
            let p = veth::congestion::twin::jittered(plan, up_to, run);
            Ok(RunRow::sim(&veth::congestion::twin::run_sim(
                cfg, &p, None,
            )?))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The side of every CSV line after the header (the test rows' fields hold no comma).
    fn sides(csv: &str) -> Vec<&str> {
        csv.lines()
            .skip(1)
            .map(|l| l.split(',').nth(4).unwrap())
            .collect()
    }

    fn row(p50: Option<f64>, kept_up: bool, reacted: bool) -> RunRow {
        RunRow {
            finished: 8,
            flows: 8,
            fct_p50_us: p50,
            fct_max_us: p50.map(|x| x * 2.0),
            kept_up,
            controller_reacted: reacted,
            ..RunRow::default()
        }
    }

    #[test]
    fn ranges_take_the_median_and_skip_runs_without_a_value() {
        let r = Range::of([3.0, 1.0, 2.0, 10.0].into_iter()).unwrap();
        assert_eq!((r.median, r.min, r.max), (2.5, 1.0, 10.0));
        assert!(Range::of(std::iter::empty()).is_none());
    }

    #[test]
    fn the_verdict_names_every_reason_it_does_not_agree() {
        let sim = row(Some(1000.0), true, true);
        let good = vec![row(Some(900.0), true, true), row(Some(1100.0), true, true)];
        let a = AlgoRow::new("dcqcn", "incast", "p", good, sim.clone());
        assert_eq!(a.verdict, "agrees");
        assert_eq!(a.p50_ratio, Some(1.0));
        let bad = vec![row(Some(3000.0), false, false), row(None, true, true)];
        let a = AlgoRow::new("hpcc", "incast", "p", bad, sim);
        assert!(a.verdict.contains("1/2 runs fell behind"), "{}", a.verdict);
        assert!(a.verdict.contains("never reacted"), "{}", a.verdict);
        assert!(a.verdict.contains("3.000×"), "{}", a.verdict);
    }

    #[test]
    fn a_lockstep_outlier_agrees_through_the_jittered_twin_and_says_so() {
        // The lockstep twin landed in the other outcome: veth 2,000 µs against 3,400 is
        // 0.588×, outside the band. The jittered runs have both outcomes and their median
        // (3,400) is the upper one; the nearest run (2,100) gives 0.952×.
        let veth = vec![row(Some(2000.0), true, true)];
        let a = AlgoRow::new("dcqcn", "incast", "p", veth, row(Some(3400.0), true, true));
        assert!(
            a.verdict.starts_with("differs: median FCT 0.588×"),
            "{}",
            a.verdict
        );
        let jittered = vec![
            row(Some(3400.0), true, true),
            row(Some(3500.0), true, true),
            row(Some(2100.0), true, true),
        ];
        let b = a
            .clone()
            .with_jittered_twin(cc_algos::Duration::micros(5), jittered);
        assert!((b.jittered_p50_ratio.unwrap() - 2000.0 / 3400.0).abs() < 1e-9);
        assert_eq!(
            b.verdict,
            "agrees with a twin run with jittered starts (median FCT 0.952× the nearest; 0.588× the lockstep twin)"
        );
        // Outside the band both ways: both ratios in the reason.
        let far = vec![
            row(Some(9000.0), true, true),
            row(Some(12000.0), true, true),
        ];
        let c = a.with_jittered_twin(cc_algos::Duration::micros(5), far);
        assert!(
            c.verdict
                .contains("0.588× the simulator's, 0.222× its nearest run with jittered starts"),
            "{}",
            c.verdict
        );
        // Any other reason still makes it differ, whatever the FCTs.
        let behind = vec![row(Some(3400.0), false, true)];
        let d = AlgoRow::new(
            "dcqcn",
            "incast",
            "p",
            behind,
            row(Some(3400.0), true, true),
        )
        .with_jittered_twin(
            cc_algos::Duration::micros(5),
            vec![row(Some(3400.0), true, true)],
        );
        assert!(
            d.verdict.starts_with("differs: 1/1 runs fell behind"),
            "{}",
            d.verdict
        );
    }

    #[test]
    fn each_veth_run_has_its_twin_at_its_own_starts_with_a_per_run_ratio() {
        let veth = vec![row(Some(2400.0), true, true), row(Some(3300.0), true, true)];
        let a = AlgoRow::new("dcqcn", "incast", "p", veth, row(Some(3400.0), true, true))
            .with_replayed_twin(
                vec![row(Some(2500.0), true, true), row(Some(3000.0), true, true)],
                vec![Some((1.5, 42.0)), Some((0.0, 380.4))],
            );
        // Per run: 2400 / 2500 = 0.96, 3300 / 3000 = 1.10.
        let r = a.replayed_p50_ratio.expect("a range");
        assert!(
            (r.min - 0.96).abs() < 1e-9 && (r.max - 1.1).abs() < 1e-9,
            "{r:?}"
        );
        let t = table(std::slice::from_ref(&a));
        assert!(
            t.contains("sim ×2, each veth run's starts (≤ 380 µs late)")
                && t.contains("2750 [2500–3000]")
                && t.contains("1.03× [0.96–1.10] per run"),
            "{t}"
        );
        let c = csv(&[a]);
        let side = sides(&c);
        assert_eq!(side, ["veth", "veth", "sim", "sim-replay", "sim-replay"]);
    }

    #[test]
    fn table_and_csv_name_algorithm_scenario_and_a_dash_for_nothing_finished() {
        let mut nothing = row(None, true, true);
        nothing.finished = 0;
        let a = AlgoRow::new(
            "nscc",
            "veth incast 8:1",
            "star, a,b",
            vec![nothing],
            row(Some(500.0), true, true),
        );
        let t = table(std::slice::from_ref(&a));
        assert!(t.contains("nscc") && t.contains('–'), "{t}");
        let c = csv(&[a]);
        let lines: Vec<&str> = c.lines().collect();
        assert_eq!(lines.len(), 3, "header, one veth run, the simulator");
        assert!(lines[1].starts_with("nscc,veth incast 8:1,\"star, a,b\",fabric "));
        assert!(lines[2].contains(",sim,sim,"));
    }

    #[test]
    fn the_jittered_twin_has_its_own_row_ratio_and_csv_lines() {
        let veth = vec![row(Some(3000.0), true, true), row(Some(2600.0), true, true)];
        let a = AlgoRow::new("dcqcn", "incast", "p", veth, row(Some(3400.0), true, true));
        let plain = table(std::slice::from_ref(&a));
        assert!(
            !plain.contains("apart"),
            "no jittered runs, no row: {plain}"
        );
        let jittered = vec![
            row(Some(2700.0), true, true),
            row(Some(3500.0), true, true),
            row(Some(2600.0), true, true),
        ];
        let a = a.with_jittered_twin(cc_algos::Duration::micros(5), jittered);
        let r = a.sim_jittered_p50_us.expect("a range");
        assert_eq!((r.median, r.min, r.max), (2700.0, 2600.0, 3500.0));
        // Veth's median p50 (2800) over the jittered twin's (2700).
        assert!((a.jittered_p50_ratio.unwrap() - 2800.0 / 2700.0).abs() < 1e-9);
        let t = table(std::slice::from_ref(&a));
        assert!(
            t.contains("sim ×3, starts ≤ 5 µs apart") && t.contains("2700 [2600–3500]"),
            "{t}"
        );
        assert!(t.contains("1.04×"), "{t}");
        assert_eq!(
            a.verdict, "agrees",
            "inside the band against the lockstep twin"
        );
        let c = csv(&[a]);
        let side = sides(&c);
        assert_eq!(
            side,
            [
                "veth",
                "veth",
                "sim",
                "sim-jitter",
                "sim-jitter",
                "sim-jitter"
            ]
        );
    }
}
