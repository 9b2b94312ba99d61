//! `fabric place`: topology-aware placement, measured.
//!
//! * `fabric place job DESIGN --gpus N --pattern P` — places one job under every policy
//!   (Slurm 22.05 tree, block, random, ours) on the fabric's current health (a health file,
//!   a running daemon, or `--fail`), and scores each placement with the flow model.
//! * `fabric place trace DESIGN` — replays a synthetic job trace under every policy.
//! * `fabric place drain --daemon URL` — the drain/resume suggestions of a running daemon
//!   as `scontrol` and `kubectl` commands (fabric suggests; it never applies them).
//!
//! A health file (JSON):
//! ```json
//! {"failed": ["pod0-leaf0--pod0-agg1", "host3-nic0--pod0-leaf1"],
//!  "degraded": {"host1-nic0--pod0-leaf0": 0.25},
//!  "hosts_down": ["host12"], "busy": ["host[0-3]"]}
//! ```
//! `failed` takes the names of `--fail`; `degraded` maps a link to the share of its rate
//! left (0 < x < 1); `hosts_down` and `busy` are Slurm host lists of servers.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::Duration;

use anyhow::{Context, bail};
use flow_model::eval::Evaluator;
use flow_model::place::{Cluster, Collective, Policy, score};
use flow_model::trace;
use topo::export::slurm::expand_hostlist;
use topo::{Fabric, Routes};

use crate::failure_args::FailureArgs;

/// `fabric place` subcommands.
#[derive(Debug, clap::Subcommand)]
pub enum Command {
    /// Place one job under every policy and score each placement with the flow model.
    Job(JobArgs),
    /// Replay a synthetic job trace under every policy: queueing delay, fragmentation,
    /// bus bandwidth.
    Trace(TraceArgs),
    /// Which servers a running daemon suggests to drain or resume (scontrol / kubectl).
    Drain(DrainArgs),
}

/// Where the fabric's health comes from.
#[derive(Debug, Clone, Default, clap::Args)]
pub struct HealthArgs {
    /// Health file (JSON: failed, degraded, hosts_down, busy; see `docs/placement.md`).
    #[arg(long, value_name = "FILE")]
    pub health: Option<PathBuf>,
    /// A running `fabric serve` of the same design: its links down now.
    #[arg(long, value_name = "URL")]
    pub daemon: Option<String>,
    /// Failures named on the command line.
    #[command(flatten)]
    pub fail: FailureArgs,
}

/// `fabric place job` options.
#[derive(Debug, clap::Args)]
pub struct JobArgs {
    /// Design: a spec file or a preset name.
    pub design: String,
    /// GPUs the job asks for (whole servers are given).
    #[arg(long)]
    pub gpus: u64,
    /// Collective: ring, hierarchical or all-to-all.
    #[arg(long, default_value = "ring")]
    pub pattern: String,
    /// Bytes per rank (K, M, G: powers of 1024).
    #[arg(long, default_value = "1G")]
    pub bytes: String,
    /// The fabric's health (`--seed` also seeds the random policy).
    #[command(flatten)]
    pub health: HealthArgs,
    /// Write the result as JSON (`-`: standard output).
    #[arg(long, value_name = "OUT", num_args = 0..=1, default_missing_value = "-")]
    pub json: Option<PathBuf>,
}

/// `fabric place trace` options.
#[derive(Debug, clap::Args)]
pub struct TraceArgs {
    /// Design: a spec file or a preset name.
    #[arg(default_value = "deepseek-mpft")]
    pub design: String,
    /// Jobs in the trace.
    #[arg(long, default_value_t = 400)]
    pub jobs: usize,
    /// Offered load (GPU-time asked per GPU-time available).
    #[arg(long, default_value_t = 0.9)]
    pub load: f64,
    /// Collective each job runs when it is scored.
    #[arg(long, default_value = "hierarchical")]
    pub pattern: String,
    /// Seed of the trace.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// Write an SVG plot of the table here.
    #[arg(long, value_name = "FILE")]
    pub svg: Option<PathBuf>,
    /// Write the result as JSON (`-`: standard output).
    #[arg(long, value_name = "OUT", num_args = 0..=1, default_missing_value = "-")]
    pub json: Option<PathBuf>,
}

/// `fabric place drain` options.
#[derive(Debug, clap::Args)]
pub struct DrainArgs {
    /// The daemon's address.
    #[arg(long, default_value = "http://127.0.0.1:9464")]
    pub daemon: String,
    /// Print `kubectl taint` / `kubectl uncordon` lines instead of `scontrol`.
    #[arg(long)]
    pub kubectl: bool,
    /// Give up after this many seconds.
    #[arg(long, default_value_t = 5.0)]
    pub timeout: f64,
}

/// Runs a `fabric place` subcommand.
pub fn run(c: Command) -> anyhow::Result<()> {
    match c {
        Command::Job(a) => job(a),
        Command::Trace(a) => run_trace(a),
        Command::Drain(a) => drain(a),
    }
}

fn collective(s: &str) -> anyhow::Result<Collective> {
    Collective::parse(s).ok_or_else(|| {
        anyhow::anyhow!("--pattern {s}: unknown pattern; expected ring, hierarchical or all-to-all")
    })
}

/// The health file's shape.
#[derive(Debug, Default, serde::Deserialize)]
#[serde(deny_unknown_fields, default)]
struct HealthFile {
    failed: Vec<String>,
    degraded: BTreeMap<String, f64>,
    hosts_down: Vec<String>,
    busy: Vec<String>,
}

/// Health resolved on a fabric.
#[derive(Debug, Default)]
struct Health {
    /// Capacity factor per link.
    scale: Vec<f64>,
    down_servers: Vec<u32>,
    busy: Vec<u32>,
    failed: Vec<topo::LinkId>,
}

fn servers_of(f: &Fabric, what: &str, list: &[String]) -> anyhow::Result<Vec<u32>> {
    let n = f.host_layout().servers;
    let mut out = Vec::new();
    for expr in list {
        let names = expand_hostlist(expr).map_err(|e| anyhow::anyhow!("{what}: {expr}: {e}"))?;
        for name in names {
            let s: u32 = name
                .strip_prefix("host")
                .and_then(|x| x.parse().ok())
                .filter(|&s| s < n)
                .ok_or_else(|| {
                    anyhow::anyhow!("{what}: {name}: expected a server host0..host{}", n - 1)
                })?;
            out.push(s);
        }
    }
    Ok(out)
}

fn resolve_health(f: &Fabric, a: &HealthArgs) -> anyhow::Result<Health> {
    let mut h = Health {
        scale: vec![1.0; f.num_links()],
        ..Health::default()
    };
    let fails = a.fail.resolve(f)?;
    h.failed.extend(fails.links);
    if let Some(path) = &a.health {
        let text = crate::common::read_capped(path, crate::common::MAX_SPEC_BYTES)
            .with_context(|| format!("cannot read health file {}", path.display()))?;
        let de = &mut serde_json::Deserializer::from_str(&text);
        let file: HealthFile = serde_path_to_error::deserialize(de)
            .map_err(|e| anyhow::anyhow!("{}: {}: {}", path.display(), e.path(), e.inner()))?;
        let set = topo::failures::resolve(f, &file.failed)
            .map_err(|e| anyhow::anyhow!("{}: failed: {e}", path.display()))?;
        h.failed.extend(set.links);
        for (name, &x) in &file.degraded {
            if !(x > 0.0 && x < 1.0) {
                bail!(
                    "{}: degraded.{name}: {x} is not the share of the rate left (expected 0 < x < 1; a dead link goes under `failed`)",
                    path.display()
                );
            }
            let set = topo::failures::resolve(f, std::slice::from_ref(name))
                .map_err(|e| anyhow::anyhow!("{}: degraded: {e}", path.display()))?;
            for l in set.links {
                h.scale[l.idx()] = h.scale[l.idx()].min(x);
            }
        }
        let shown = path.display().to_string();
        h.down_servers = servers_of(f, &format!("{shown}: hosts_down"), &file.hosts_down)?;
        h.busy = servers_of(f, &format!("{shown}: busy"), &file.busy)?;
    }
    if let Some(url) = &a.daemon {
        h.failed.extend(daemon_links_down(f, url)?);
    }
    for l in &h.failed {
        h.scale[l.idx()] = 0.0;
    }
    Ok(h)
}

fn http_get(url: &str, path: &str, timeout: f64) -> anyhow::Result<serde_json::Value> {
    let auth = crate::cmd_status::authority(url)?;
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    rt.block_on(async {
        let (code, body) = tokio::time::timeout(
            Duration::from_secs_f64(timeout),
            crate::cmd_status::get(&auth, path),
        )
        .await
        .map_err(|_| anyhow::anyhow!("{auth}: no answer within {timeout} s"))??;
        if code != 200 {
            bail!(
                "{auth}: {path} answered {code}: {}",
                String::from_utf8_lossy(&body)
            );
        }
        serde_json::from_slice(&body).with_context(|| format!("{auth}: {path}: not JSON"))
    })
}

/// Links down in a running daemon (its link ids are the design's: the daemon's map lists
/// links in the design's order).
fn daemon_links_down(f: &Fabric, url: &str) -> anyhow::Result<Vec<topo::LinkId>> {
    let v = http_get(url, "/api/v1/health", 5.0)?;
    let list = v
        .get("links_down")
        .or_else(|| v.get("fabric").and_then(|x| x.get("links_down")))
        .and_then(|x| x.as_array())
        .ok_or_else(|| anyhow::anyhow!("{url}: /api/v1/health has no links_down"))?;
    let mut out = Vec::new();
    for x in list {
        let id = x.as_u64().filter(|&i| i < f.num_links() as u64).ok_or_else(|| {
            anyhow::anyhow!(
                "{url}: link {x} is not a link of this design ({} links): is the daemon running another design?",
                f.num_links()
            )
        })?;
        out.push(topo::LinkId(id as u32));
    }
    Ok(out)
}

/// One policy's placement and score.
#[derive(Debug, serde::Serialize)]
struct Row {
    policy: String,
    servers: String,
    blocks: usize,
    pods: usize,
    busbw_gbytes_per_s: f64,
    share_leaf: f64,
    share_spine: f64,
    share_core: f64,
    degraded_servers: usize,
}

fn job(a: JobArgs) -> anyhow::Result<()> {
    let coll = collective(&a.pattern)?;
    let bytes = crate::cmd_flow::parse_bytes(&a.bytes)?;
    let f = crate::common::load_design(&a.design)?;
    let h = resolve_health(&f, &a.health)?;
    let mut routes = Routes::compute(&f);
    if !h.failed.is_empty() {
        routes.fail_links(&f, &h.failed);
    }
    let mut c = Cluster::new(&f);
    c.set_health(&f, &h.scale, &h.down_servers);
    for &s in &h.busy {
        c.busy[s as usize] = true;
    }
    let need = c
        .servers_for(&f, a.gpus)
        .map_err(|e| anyhow::anyhow!("--gpus {}: {e}", a.gpus))?;
    let mut ev = Evaluator::default();
    let mut rows = Vec::new();
    for p in Policy::all(a.health.fail.seed) {
        let servers = match c.place(p, need, false) {
            Ok(s) => s,
            Err(e) => {
                eprintln!("{}: {e}", p.name());
                continue;
            }
        };
        let sc = score(
            &f, &routes, &c.tree, &h.scale, &servers, coll, bytes, &mut ev,
        );
        let names: Vec<String> = servers.iter().map(|&s| format!("host{s}")).collect();
        rows.push(Row {
            policy: p.name().into(),
            servers: topo::export::slurm::hostlist(names.iter().map(String::as_str)),
            blocks: sc.blocks,
            pods: sc.pods,
            busbw_gbytes_per_s: sc.busbw_bytes_per_s / 1e9,
            share_leaf: sc.tier_share[0],
            share_spine: sc.tier_share[1],
            share_core: sc.tier_share[2],
            degraded_servers: servers.iter().filter(|&&s| c.degraded[s as usize]).count(),
        });
    }
    if rows.is_empty() {
        bail!(
            "no policy could place {} GPUs ({need} servers): {} servers are free and healthy",
            a.gpus,
            c.free()
        );
    }
    if let Some(out) = &a.json {
        crate::common::JsonOut::new(Some(out))?.write(&rows)?;
        if out.as_os_str() == "-" {
            return Ok(());
        }
    }
    println!(
        "{}: {} GPUs ({need} servers), {}, {} link(s) failed, {} degraded, {} server(s) down, {} busy",
        f.name(),
        a.gpus,
        coll.name(),
        h.failed.len(),
        h.scale.iter().filter(|&&x| x > 0.0 && x < 1.0).count(),
        c.down.iter().filter(|&&d| d).count(),
        h.busy.len()
    );
    println!(
        "| policy | blocks | pods | busbw GB/s | traffic: leaf / spine / core | degraded servers | servers |"
    );
    println!("|---|---|---|---|---|---|---|");
    for r in &rows {
        println!(
            "| {} | {} | {} | {:.1} | {:.0}% / {:.0}% / {:.0}% | {} | {} |",
            r.policy,
            r.blocks,
            r.pods,
            r.busbw_gbytes_per_s,
            100.0 * r.share_leaf,
            100.0 * r.share_spine,
            100.0 * r.share_core,
            r.degraded_servers,
            r.servers
        );
    }
    Ok(())
}

fn run_trace(a: TraceArgs) -> anyhow::Result<()> {
    let coll = collective(&a.pattern)?;
    if a.jobs == 0 || a.jobs > 100_000 {
        bail!("--jobs {}: expected 1 to 100000", a.jobs);
    }
    if !(a.load.is_finite() && a.load > 0.0 && a.load <= 4.0) {
        bail!("--load {}: expected a number above 0 and at most 4", a.load);
    }
    let f = crate::common::load_design(&a.design)?;
    let routes = Routes::compute(&f);
    let jobs = trace::synthetic(a.jobs, f.num_gpus(), a.load, a.seed);
    let mut rows = Vec::new();
    for p in Policy::all(a.seed) {
        rows.push(trace::replay(
            &f,
            &routes,
            &jobs,
            p,
            coll,
            1024.0 * 1024.0 * 1024.0,
        ));
    }
    if let Some(out) = &a.json {
        crate::common::JsonOut::new(Some(out))?.write(&rows)?;
    }
    println!(
        "{}: {} GPUs, {} jobs, offered load {}, {} scored among the running jobs",
        f.name(),
        f.num_gpus(),
        a.jobs,
        a.load,
        coll.name()
    );
    println!(
        "| policy | mean wait (h) | p95 wait (h) | fragmentation | utilisation | mean busbw GB/s | blocks per multi-block job |"
    );
    println!("|---|---|---|---|---|---|---|");
    for r in &rows {
        println!(
            "| {} | {:.2} | {:.2} | {:.1}% | {:.1}% | {:.1} | {:.1} |",
            r.policy,
            r.mean_wait_s / 3600.0,
            r.p95_wait_s / 3600.0,
            100.0 * r.fragmentation,
            100.0 * r.utilisation,
            r.mean_busbw_bytes_per_s / 1e9,
            r.mean_blocks_large
        );
    }
    if let Some(path) = &a.svg {
        plot(path, &rows)?;
    }
    Ok(())
}

/// Two bar charts: mean bus bandwidth per policy (`path`) and mean queueing delay per
/// policy (`path` with `-wait` before the extension).
fn plot(path: &std::path::Path, rows: &[trace::ReplayResult]) -> anyhow::Result<()> {
    let cats: Vec<String> = rows.iter().map(|r| r.policy.clone()).collect();
    report::plots::bars(
        path,
        "Trace replay: mean bus bandwidth of placed jobs",
        "GB/s",
        &cats,
        &[(
            "mean busbw".into(),
            rows.iter()
                .map(|r| r.mean_busbw_bytes_per_s / 1e9)
                .collect(),
        )],
    )
    .with_context(|| format!("writing {}", path.display()))?;
    let stem = path.file_stem().and_then(|s| s.to_str()).unwrap_or("trace");
    let wait = path.with_file_name(format!("{stem}-wait.svg"));
    report::plots::bars(
        &wait,
        "Trace replay: queueing delay",
        "hours",
        &cats,
        &[
            (
                "mean wait".into(),
                rows.iter().map(|r| r.mean_wait_s / 3600.0).collect(),
            ),
            (
                "p95 wait".into(),
                rows.iter().map(|r| r.p95_wait_s / 3600.0).collect(),
            ),
        ],
    )
    .with_context(|| format!("writing {}", wait.display()))?;
    Ok(())
}

/// One suggestion of the daemon's `/api/v1/drain`.
#[derive(Debug, serde::Deserialize)]
struct Suggestion {
    node: String,
    #[serde(default)]
    reason: String,
}

#[derive(Debug, serde::Deserialize)]
struct DrainReport {
    drain: Vec<Suggestion>,
    resume: Vec<Suggestion>,
}

fn drain(a: DrainArgs) -> anyhow::Result<()> {
    if !(a.timeout.is_finite() && a.timeout > 0.0) {
        bail!(
            "--timeout {}: expected a positive number of seconds",
            a.timeout
        );
    }
    let v = http_get(&a.daemon, "/api/v1/drain", a.timeout)?;
    let r: DrainReport = serde_json::from_value(v).context("the daemon's drain report")?;
    for s in &r.drain {
        if a.kubectl {
            println!(
                "kubectl taint nodes {} fabric.example/link-down=true:NoSchedule  # {}",
                s.node, s.reason
            );
        } else {
            println!(
                "scontrol update nodename={} state=drain reason=\"{}\"",
                s.node, s.reason
            );
        }
    }
    for s in &r.resume {
        if a.kubectl {
            println!("kubectl taint nodes {} fabric.example/link-down-", s.node);
        } else {
            println!("scontrol update nodename={} state=resume", s.node);
        }
    }
    eprintln!(
        "{} to drain, {} to resume (suggestions: fabric applies nothing)",
        r.drain.len(),
        r.resume.len()
    );
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bad_requests_get_clear_errors() {
        let e = collective("allreduce").unwrap_err().to_string();
        assert!(
            e.contains("unknown pattern") && e.contains("hierarchical"),
            "{e}"
        );
        let a = JobArgs {
            design: "fat-tree-k4".into(),
            gpus: 17,
            pattern: "ring".into(),
            bytes: "1M".into(),
            health: HealthArgs::default(),
            json: None,
        };
        let e = job(a).unwrap_err().to_string();
        assert!(
            e.contains("--gpus 17") && e.contains("fabric has 16"),
            "{e}"
        );
    }

    #[test]
    fn health_file_errors_name_the_field() {
        let f = topo::generators::fat_tree(4, topo::Rate::gbps(400)).unwrap();
        let dir = std::env::temp_dir().join(format!("fab-place-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let p = dir.join("h.json");
        for (text, want) in [
            (r#"{"degraded": {"link:0": 1.5}}"#, "degraded.link:0"),
            (r#"{"hosts_down": ["host99"]}"#, "hosts_down: host99"),
            (r#"{"failed": ["nosuch--x"]}"#, "failed"),
            (r#"{"fialed": []}"#, "fialed"),
        ] {
            std::fs::write(&p, text).unwrap();
            let a = HealthArgs {
                health: Some(p.clone()),
                ..HealthArgs::default()
            };
            let e = resolve_health(&f, &a).unwrap_err().to_string();
            assert!(e.contains(want), "{text}: {e}");
        }
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
