//! `fabric sim`: run a scenario on a fabric in the packet simulator, and
//! `fabric sim compare-lb`: one workload under every load-balancing scheme.
//!
//! ```text
//! fabric sim --preset fat-tree-k8 --scenario scenarios/incast.toml --cc nscc --lb spray --json out.json --plot plots/
//! fabric sim --scenario scenarios/permutation.toml --lb mixed --evs 256 --ack-every 16KB \
//!     --base-rtt network-max --buffer-model per-port --queue-bdp 1 --trim-victim htsim
//! fabric sim compare-lb                      # permutation, all-to-all, ring all-reduce on
//!                                            # a k=8 fat-tree and a two-plane leaf-spine
//! ```

use crate::common::FabricArgs;
use anyhow::{Context, bail};
use cc_algos::{Duration, Instant, Rate};
use scenario::{CompileCtx, Scenario, Workplan};
use sim::{CcChoice, LbScheme, Progress, Sim, SimConfig, SimResults};
use std::path::{Path, PathBuf};

/// `fabric sim [OPTIONS]` or `fabric sim compare-lb [OPTIONS]`.
#[derive(Debug, clap::Args)]
#[command(args_conflicts_with_subcommands = true)]
pub struct Args {
    #[command(subcommand)]
    pub command: Option<Box<SimCommand>>,
    #[command(flatten)]
    pub run: Box<RunArgs>,
}

/// Subcommands of `fabric sim`.
#[derive(Debug, clap::Subcommand)]
pub enum SimCommand {
    /// Run one workload under every load-balancing scheme and print one table
    /// (bus bandwidth, FCT slowdown, up-link load, drops, pauses) and an SVG chart.
    CompareLb(Box<CompareArgs>),
    /// Write a scenario's flows as an htsim connection matrix (`.cm`).
    ExportCm(ExportCmArgs),
}

/// Options of a single run.
#[derive(Debug, clap::Args)]
pub struct RunArgs {
    #[command(flatten)]
    pub fabric: FabricArgs,
    /// Scenario file (TOML; see scenarios/ for examples).
    #[arg(long, value_name = "FILE")]
    pub scenario: Option<PathBuf>,
    /// Congestion control: none, dcqcn[-paper|-mellanox|-hpcc-ns3], nscc, nscc-notrim, rccc, dctcp, hpcc (on per-hop INT).
    #[arg(long, default_value = "nscc")]
    pub cc: String,
    /// Load balancing: ecmp, flowlet, spray, reps, bitmap, mixed (REPS with bitmap fallback), adaptive.
    #[arg(long, default_value = "ecmp")]
    pub lb: String,
    /// Enable PFC (lossless priorities).
    #[arg(long)]
    pub pfc: bool,
    /// Seed (same seed, same inputs: byte-identical results).
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// Stop at this simulated time even if flows are unfinished (e.g. 10ms).
    #[arg(long, value_name = "TIME")]
    pub stop: Option<String>,
    /// ECMP hash seed.
    #[arg(long, value_name = "N")]
    pub ecmp_seed: Option<u64>,
    /// Use the same ECMP hash at every switch (no per-switch salt): shows polarisation.
    #[arg(long)]
    pub ecmp_polarize: bool,
    /// Time-series sampling period (default 10us when --plot is given).
    #[arg(long, value_name = "TIME")]
    pub sample: Option<String>,
    /// Write the full results as JSON.
    #[arg(long, value_name = "OUT", num_args = 0..=1, default_missing_value = "-")]
    pub json: Option<PathBuf>,
    /// Write SVG plots into this directory.
    #[arg(long, value_name = "DIR")]
    pub plot: Option<PathBuf>,
    /// No progress bar.
    #[arg(long)]
    pub quiet: bool,
    /// Record the fabric map, snapshots and events into FILE (see docs/telemetry.md).
    #[arg(long, value_name = "FILE")]
    pub record: Option<PathBuf>,
    /// Snapshot interval of --record, in virtual time.
    #[arg(long, value_name = "TIME", default_value = "10us")]
    pub record_every: String,
    /// The htsim knobs, written over the scenario's `[network]` (flags win).
    #[command(flatten)]
    pub knobs: crate::sim_knobs::Knobs,
    /// Tenant file (TOML/YAML/JSON): workloads with `tenant = "a"` take their class from
    /// it and the ports its ETS weights; replaces the scenario's `tenants` key.
    #[arg(long, value_name = "FILE")]
    pub tenants: Option<PathBuf>,
}

/// Options of `compare-lb`.
#[derive(Debug, clap::Args)]
pub struct CompareArgs {
    #[command(flatten)]
    pub fabric: FabricArgs,
    /// Workloads: permutation, all-to-all, ring (comma-separated), or a scenario file.
    #[arg(long, default_value = "permutation,all-to-all,ring")]
    pub workloads: String,
    /// Schemes to compare (comma-separated).
    #[arg(long, default_value = "ecmp,flowlet,spray,reps,bitmap,adaptive")]
    pub schemes: String,
    /// Congestion control.
    #[arg(long, default_value = "nscc")]
    pub cc: String,
    /// Enable PFC.
    #[arg(long)]
    pub pfc: bool,
    /// Seed.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// Bytes per flow for permutation (all-to-all uses size/16 per pair, ring uses
    /// 4× per rank).
    #[arg(long, default_value = "2MB")]
    pub size: String,
    /// Write all rows as JSON.
    #[arg(long, value_name = "OUT", num_args = 0..=1, default_missing_value = "-")]
    pub json: Option<PathBuf>,
    /// Write bar charts (busbw % of line rate, p99 slowdown) into this directory.
    #[arg(long, value_name = "DIR")]
    pub plot: Option<PathBuf>,
    /// The htsim knobs, written over every workload's `[network]` (flags win).
    #[command(flatten)]
    pub knobs: crate::sim_knobs::Knobs,
}

/// Options of `export-cm`.
#[derive(Debug, clap::Args)]
pub struct ExportCmArgs {
    #[command(flatten)]
    pub fabric: FabricArgs,
    /// Scenario file.
    #[arg(long, value_name = "FILE")]
    pub scenario: PathBuf,
    /// Seed for the scenario's random parts.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// Output `.cm` file (default: stdout).
    #[arg(long, value_name = "OUT")]
    pub out: Option<PathBuf>,
}

pub fn run(args: Args) -> anyhow::Result<()> {
    match args.command.map(|c| *c) {
        Some(SimCommand::CompareLb(a)) => compare_lb(*a),
        Some(SimCommand::ExportCm(a)) => export_cm(a),
        None => run_one(*args.run),
    }
}

fn parse_time(what: &str, s: &str) -> anyhow::Result<Duration> {
    scenario::units::parse_time(s).map_err(|e| anyhow::anyhow!("{what}: {e}"))
}

fn host_rate(f: &topo::Fabric) -> Rate {
    f.links()
        .iter()
        .find(|l| l.a.idx() < f.num_hosts())
        .map(|l| Rate::bps(l.rate_bps))
        .unwrap_or(Rate::gbps(100))
}

fn sim_config(
    cc: &str,
    lb: &str,
    pfc: bool,
    seed: u64,
    plan: &Workplan,
) -> anyhow::Result<SimConfig> {
    let cc: CcChoice = cc
        .parse()
        .map_err(|e: String| anyhow::anyhow!("--cc: {e}"))?;
    let lb: LbScheme = lb
        .parse()
        .map_err(|e: String| anyhow::anyhow!("--lb: {e}"))?;
    let mut cfg = SimConfig {
        seed,
        lb,
        pfc,
        stop: plan.stop,
        ..SimConfig::default()
    }
    .with_cc_defaults(cc);
    cfg.apply(&plan.network)
        .map_err(|e| anyhow::anyhow!("scenario [network]: {e}"))?;
    if pfc {
        cfg.pfc = true;
    }
    Ok(cfg)
}

fn simulate(
    fabric: &topo::Fabric,
    cfg: SimConfig,
    plan: &Workplan,
    quiet: bool,
) -> anyhow::Result<(SimResults, f64)> {
    let mut sim = Sim::from_fabric(fabric, cfg, plan)?;
    let wall = std::time::Instant::now();
    let bar = if quiet {
        indicatif::ProgressBar::hidden()
    } else {
        let b = indicatif::ProgressBar::new(plan.flows.len() as u64);
        b.set_style(
            indicatif::ProgressStyle::with_template(
                "{spinner} [{elapsed_precise}] {bar:30} {pos}/{len} flows · {msg}",
            )
            .expect("valid template"),
        );
        b
    };
    let r = sim.run_with_progress(1 << 18, &mut |p: Progress| {
        let secs = wall.elapsed().as_secs_f64().max(1e-9);
        bar.set_position(p.flows_done);
        bar.set_message(format!(
            "sim t = {:.1} µs · {:.2} M events/s",
            p.now.picos() as f64 / 1e6,
            p.events as f64 / secs / 1e6
        ));
    });
    bar.finish_and_clear();
    Ok((r, wall.elapsed().as_secs_f64()))
}

/// The fabric of `fabric sim`: the one given, else for a connection matrix the
/// smallest fat-tree preset that holds its nodes (as htsim sizes its fat-tree to
/// `-nodes`), else `fat-tree-k8`.
fn sim_fabric(f: &FabricArgs, scenario: &Path) -> anyhow::Result<topo::Fabric> {
    if f.fabric.is_some() || f.preset.is_some() || scenario.extension().is_none_or(|e| e != "cm") {
        return f.load_or("fat-tree-k8");
    }
    let nodes = scenario::cm::ConnectionMatrix::from_file(scenario)?.nodes as u64;
    let k = (2..=64u64)
        .step_by(2)
        .find(|k| k * k * k / 4 >= nodes)
        .with_context(|| {
            format!(
                "{}: {nodes} nodes need more than a fat-tree-k64 (65,536 hosts); give --fabric or --preset",
                scenario.display()
            )
        })?;
    let name = format!("fat-tree-k{k}");
    eprintln!("{}: {nodes} nodes: running on {name}", scenario.display());
    FabricArgs {
        preset: Some(name),
        ..f.clone()
    }
    .load()
}

/// The fabric, the compiled scenario (with the knob flags written over its
/// `[network]`) and the simulator settings of a single run.
fn prepare(a: &RunArgs) -> anyhow::Result<(topo::Fabric, Workplan, SimConfig)> {
    let Some(path) = &a.scenario else {
        bail!(
            "--scenario FILE is required (see scenarios/ for examples), or use `fabric sim compare-lb`"
        );
    };
    let mut scen = Scenario::from_file(path)?;
    a.knobs.overlay(&mut scen.network)?;
    let fabric = sim_fabric(&a.fabric, path)?;
    let tenants = crate::tenant_args::scenario_tenants(
        &scen,
        Some(&a.fabric),
        &fabric,
        a.tenants.as_deref(),
    )?;
    let plan = scen
        .compile(
            &CompileCtx::new(fabric.num_hosts() as u32, host_rate(&fabric), a.seed)
                .with_tenants(tenants),
        )
        .map_err(|e| a.knobs.explain(e))?;
    let mut cfg = sim_config(&a.cc, &a.lb, a.pfc, a.seed, &plan)?;
    if let Some(s) = &a.stop {
        cfg.stop = Some(Instant::ZERO + parse_time("--stop", s)?);
    }
    if let Some(seed) = a.ecmp_seed {
        cfg.ecmp_seed = seed;
    }
    cfg.ecmp_per_switch_salt = !a.ecmp_polarize;
    cfg.sample = match (&a.sample, &a.plot) {
        (Some(s), _) => Some(parse_time("--sample", s)?),
        (None, Some(_)) => Some(Duration::micros(10)),
        _ => None,
    };
    Ok((fabric, plan, cfg))
}

fn run_one(a: RunArgs) -> anyhow::Result<()> {
    let mut json = crate::common::JsonOut::new(a.json.as_deref())?;
    let (fabric, plan, cfg) = prepare(&a)?;
    let (r, wall) = match &a.record {
        Some(out) => {
            let every = parse_time("--record-every", &a.record_every)?;
            let (r, wall, rec) =
                crate::record::simulate_recording(&fabric, cfg, &plan, out, every)?;
            println!(
                "recorded {} snapshots and {} events ({:.1} MB) into {}",
                rec.snapshots,
                rec.events,
                rec.bytes as f64 / 1e6,
                out.display()
            );
            (r, wall)
        }
        None => simulate(&fabric, cfg, &plan, a.quiet)?,
    };
    print!("{}", sim::summary::summary(&r));
    // The digest is `sim-bench`'s: equal digests, equal results (docs/sim.md compares
    // the two on the same matrix).
    println!(
        "wall {:.2} s · {} events · {:.2} M events/s · digest {:016x}",
        wall,
        r.run.events,
        r.run.events as f64 / wall.max(1e-9) / 1e6,
        sim::digest::digest(&r)
    );
    json.write(&r)?;
    if let Some(dir) = &a.plot {
        for p in sim::plots::write_all(&r, dir)? {
            println!("wrote {}", p.display());
        }
    }
    if r.deadlock.is_some() {
        bail!("the run deadlocked (see the report above)");
    }
    Ok(())
}

fn export_cm(a: ExportCmArgs) -> anyhow::Result<()> {
    let fabric = a.fabric.load_or("fat-tree-k8")?;
    let n = fabric.num_hosts() as u32;
    let scen = Scenario::from_file(&a.scenario)?;
    let tenants = crate::tenant_args::scenario_tenants(&scen, Some(&a.fabric), &fabric, None)?;
    let plan =
        scen.compile(&CompileCtx::new(n, host_rate(&fabric), a.seed).with_tenants(tenants))?;
    let (m, skipped) = scenario::cm::ConnectionMatrix::from_plan(&plan, n);
    let text = m.to_text();
    match &a.out {
        Some(p) => {
            std::fs::write(p, text).with_context(|| format!("{}: cannot write", p.display()))?
        }
        None => print!("{text}"),
    }
    if skipped > 0 {
        eprintln!(
            "note: {skipped} flows with dependencies or no size have no .cm equivalent and were left out"
        );
    }
    Ok(())
}

/// One row of the comparison.
#[derive(Debug, serde::Serialize)]
struct Row {
    fabric: String,
    workload: String,
    scheme: String,
    busbw_gbps: Option<f64>,
    busbw_of_line: Option<f64>,
    slowdown_p50: f64,
    slowdown_p99: f64,
    fct_p99_us: f64,
    uplink_max_over_mean: f64,
    drops: u64,
    pauses: u64,
    unfinished: usize,
    sim_us: f64,
    wall_s: f64,
}

fn workload_toml(w: &str, size: &str, hosts_per_leaf: u32) -> anyhow::Result<(String, String)> {
    let b = scenario::units::parse_size(size).map_err(|e| anyhow::anyhow!("--size: {e}"))?;
    Ok(match w {
        "permutation" => (
            "permutation".into(),
            format!(
                "name = \"permutation\"\n[[workload]]\nkind = \"permutation\"\nsize = {}\n",
                b.0
            ),
        ),
        "all-to-all" | "alltoall" | "all_to_all" => (
            "all-to-all".into(),
            format!(
                "name = \"all-to-all\"\n[[workload]]\nkind = \"all_to_all\"\nsize = {}\n",
                (b.0 / 16).max(1)
            ),
        ),
        "ring" | "ring-allreduce" => (
            "ring all-reduce".into(),
            // A stride one more than the hosts per leaf makes ring neighbours sit on
            // different leaves (and is coprime with power-of-two host counts).
            format!(
                "name = \"ring all-reduce\"\n[[workload]]\nkind = \"ring_allreduce\"\nsize = {}\nstride = {}\n",
                b.0 * 4,
                hosts_per_leaf + 1
            ),
        ),
        path => {
            let s = crate::common::read_capped(Path::new(path), crate::common::MAX_SPEC_BYTES).with_context(|| {
                format!(
                    "`{path}` is neither permutation, all-to-all, ring nor a readable scenario file"
                )
            })?;
            (path.to_string(), s)
        }
    })
}

fn compare_lb(a: CompareArgs) -> anyhow::Result<()> {
    let mut json = crate::common::JsonOut::new(a.json.as_deref())?;
    let fabrics: Vec<topo::Fabric> = if a.fabric.fabric.is_some() || a.fabric.preset.is_some() {
        vec![a.fabric.load()?]
    } else {
        // The default comparison runs at 100 Gb/s, like htsim's reference runs; said in
        // the fabric's name in every row.
        let at_100g = |name: &str| FabricArgs {
            link_rate: Some(a.fabric.link_rate.clone().unwrap_or_else(|| "100G".into())),
            ..FabricArgs::preset(name)
        };
        vec![
            at_100g("fat-tree-k8").load()?,
            at_100g("leaf-spine-8x16-x2").load()?,
        ]
    };
    let schemes: Vec<LbScheme> = a
        .schemes
        .split(',')
        .map(|s| {
            s.parse()
                .map_err(|e: String| anyhow::anyhow!("--schemes: {e}"))
        })
        .collect::<anyhow::Result<_>>()?;
    let mut rows = Vec::new();
    for fabric in &fabrics {
        let n = fabric.num_hosts() as u32;
        let hosts_per_leaf = fabric
            .switches_in_tier(1)
            .next()
            .map(|l| fabric.ports(l).filter(|(p, _)| fabric.is_host(*p)).count() as u32)
            .unwrap_or(1);
        for w in a.workloads.split(',') {
            let (wname, text) = workload_toml(w.trim(), &a.size, hosts_per_leaf)?;
            let mut scen = Scenario::from_toml_str(&text, &wname)?;
            a.knobs.overlay(&mut scen.network)?;
            let plan = scen
                .compile(&CompileCtx::new(n, host_rate(fabric), a.seed))
                .map_err(|e| a.knobs.explain(e))?;
            for &lb in &schemes {
                let cfg = sim_config(&a.cc, &lb.to_string(), a.pfc, a.seed, &plan)?;
                eprintln!("{} · {wname} · {lb} ...", fabric.name());
                let (r, wall) = simulate(fabric, cfg, &plan, true)?;
                let g = r.groups.first();
                rows.push(Row {
                    fabric: fabric.name().to_string(),
                    workload: wname.clone(),
                    scheme: lb.to_string(),
                    busbw_gbps: g.and_then(|g| g.busbw_gbps),
                    busbw_of_line: g.and_then(|g| g.busbw_of_ideal),
                    slowdown_p50: r.fct.slowdown_p50,
                    slowdown_p99: r.fct.slowdown_p99,
                    fct_p99_us: r.fct.p99_us,
                    uplink_max_over_mean: r.load_balance.max_over_mean,
                    drops: r.totals.drops,
                    pauses: r.totals.pauses_sent,
                    unfinished: r.fct.unfinished,
                    sim_us: r.run.end_us,
                    wall_s: wall,
                });
            }
        }
    }
    let opt = |v: Option<f64>, d: usize| v.map(|x| format!("{x:.d$}")).unwrap_or("-".into());
    let table_rows: Vec<Vec<String>> = rows
        .iter()
        .map(|r| {
            vec![
                r.fabric.clone(),
                r.workload.clone(),
                r.scheme.clone(),
                opt(r.busbw_gbps, 1),
                opt(r.busbw_of_line.map(|x| x * 100.0), 0),
                format!("{:.2}", r.slowdown_p50),
                format!("{:.2}", r.slowdown_p99),
                format!("{:.2}", r.uplink_max_over_mean),
                r.drops.to_string(),
                r.pauses.to_string(),
                r.unfinished.to_string(),
            ]
        })
        .collect();
    println!(
        "cc {} · pfc {} · seed {}",
        a.cc,
        if a.pfc { "on" } else { "off" },
        a.seed
    );
    print!(
        "{}",
        report::table(
            &[
                "fabric",
                "workload",
                "lb",
                "busbw Gb/s",
                "busbw % of line",
                "slowdown p50",
                "slowdown p99",
                "max/mean up-link load",
                "drops",
                "pauses",
                "unfinished",
            ],
            &table_rows,
        )
    );
    json.write(&rows)?;
    if let Some(dir) = &a.plot {
        std::fs::create_dir_all(dir)?;
        for fabric in &fabrics {
            let name = fabric.name().to_string();
            let mine: Vec<&Row> = rows.iter().filter(|r| r.fabric == name).collect();
            let mut cats: Vec<String> = mine.iter().map(|r| r.workload.clone()).collect();
            cats.dedup();
            let series: Vec<(String, Vec<f64>)> = schemes
                .iter()
                .map(|s| {
                    let v = cats
                        .iter()
                        .map(|c| {
                            mine.iter()
                                .find(|r| &r.workload == c && r.scheme == s.to_string())
                                .and_then(|r| r.busbw_of_line)
                                .unwrap_or(0.0)
                                * 100.0
                        })
                        .collect();
                    (s.to_string(), v)
                })
                .collect();
            let p = dir.join(format!("compare-lb-{name}.svg"));
            report::plots::bars(
                &p,
                &format!("bus bandwidth by load balancing — {name}, cc {}", a.cc),
                "busbw, % of line rate",
                &cats,
                &series,
            )?;
            println!("wrote {}", p.display());
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run_args(scenario: &Path) -> RunArgs {
        RunArgs {
            fabric: FabricArgs::preset("fat-tree-k4"),
            scenario: Some(scenario.to_path_buf()),
            cc: "nscc".into(),
            lb: "spray".into(),
            pfc: false,
            seed: 1,
            stop: None,
            ecmp_seed: None,
            ecmp_polarize: false,
            sample: None,
            json: None,
            plot: None,
            quiet: true,
            record: None,
            record_every: "10us".into(),
            knobs: Default::default(),
            tenants: None,
        }
    }

    #[test]
    fn runs_a_scenario_and_reports_bad_ones_precisely() {
        let dir = std::env::temp_dir().join(format!("fabric-sim-cli-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let good = dir.join("good.toml");
        std::fs::write(
            &good,
            "[[workload]]\nkind = \"incast\"\nsenders = \"1..4\"\nreceiver = 0\nsize = \"100KB\"\n",
        )
        .unwrap();
        let mut a = run_args(&good);
        a.json = Some(dir.join("out.json"));
        a.plot = Some(dir.join("plots"));
        // 3 × 100 KB into one 400 Gb/s port take ~6 µs: sample finer than the 10 µs default.
        a.sample = Some("500ns".into());
        run_one(a).unwrap();
        let j: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(dir.join("out.json")).unwrap()).unwrap();
        assert_eq!(j["fct"]["finished"], 3);
        assert!(dir.join("plots/rates.svg").exists());

        let bad = dir.join("bad.toml");
        std::fs::write(
            &bad,
            "[[workload]]\nkind = \"incast\"\nsenders = \"1..4\"\nreceiver = 99\nsize = \"100KB\"\n",
        )
        .unwrap();
        let e = run_one(run_args(&bad)).unwrap_err().to_string();
        assert!(
            e.ends_with("bad.toml: workload[0].receiver: host 99 does not exist: the fabric has 16 hosts (0..16)"),
            "{e}"
        );
        let mut a = run_args(&good);
        a.lb = "random".into();
        let e = run_one(a).unwrap_err().to_string();
        assert!(
            e.starts_with("--lb: unknown load-balancing scheme `random`"),
            "{e}"
        );
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn knob_flags_parse_from_the_command_line() {
        use clap::{CommandFactory, Parser};
        #[derive(Debug, Parser)]
        struct Cli {
            #[command(flatten)]
            run: RunArgs,
        }
        Cli::command().debug_assert();
        let c = Cli::try_parse_from([
            "sim",
            "--scenario",
            "x.toml",
            "--evs",
            "256",
            "--init-window-pkts",
            "10",
            "--ack-every",
            "16KiB",
            "--base-rtt",
            "network-max",
            "--buffer-model",
            "per-port",
            "--queue-bdp",
            "1",
            "--trim-victim",
            "htsim",
            "--link-delay",
            "1us",
        ])
        .unwrap();
        let k = &c.run.knobs;
        assert_eq!((k.evs, k.queue_bdp), (Some(256), Some(1.0)));
        assert_eq!(k.ack_every.as_deref(), Some("16KiB"));
        let e = Cli::try_parse_from(["sim", "--queue", "64KB", "--queue-bdp", "1"])
            .unwrap_err()
            .to_string();
        assert!(e.contains("cannot be used with"), "{e}");
        #[derive(Debug, Parser)]
        struct Compare {
            #[command(flatten)]
            args: CompareArgs,
        }
        Compare::command().debug_assert();
        let c =
            Compare::try_parse_from(["compare-lb", "--evs", "64", "--ack-every", "16KB"]).unwrap();
        assert_eq!(c.args.knobs.evs, Some(64));
    }

    #[test]
    fn knob_flags_override_the_scenario_and_are_checked_by_it() {
        let dir = std::env::temp_dir().join(format!("fabric-sim-knobs-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let file = dir.join("knobs.toml");
        std::fs::write(
            &file,
            "[network]\nevs = 64\nack_every = \"8KB\"\n[[workload]]\nkind = \"incast\"\nsenders = \"1..4\"\nreceiver = 0\nsize = \"100KB\"\n",
        )
        .unwrap();
        // Without flags, the file's values; with them, the flags'.
        let (_, _, cfg) = prepare(&run_args(&file)).unwrap();
        assert_eq!((cfg.evs, cfg.ack_every), (64, Some(cc_algos::Bytes(8000))));
        let mut a = run_args(&file);
        a.knobs.evs = Some(16);
        a.knobs.ack_every = Some("0".into());
        let (_, plan, cfg) = prepare(&a).unwrap();
        assert_eq!((cfg.evs, cfg.ack_every), (16, None));
        assert_eq!(plan.network.evs, Some(16));
        run_one(a).unwrap();
        // A bad value is refused by the scenario's own check, naming field and flag.
        let mut a = run_args(&file);
        a.knobs.evs = Some(12);
        let e = run_one(a).unwrap_err().to_string();
        assert!(
            e.contains("knobs.toml: network.evs: 12 is not a power of two") && e.contains("--evs"),
            "{e}"
        );
        let mut a = run_args(&file);
        a.knobs.queue_bdp = Some(2.0);
        let e = run_one(a).unwrap_err().to_string();
        assert!(e.contains("need buffer_model = \"per-port\""), "{e}");
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
