//! `fabric flow`: one collective or traffic pattern on a design, evaluated by the
//! flow-level model (crate `flow-model`) with a load-balancing policy and failed links:
//! bus bandwidth, completion time, the busiest links; JSON on request.
//!
//! ```text
//! fabric flow fat-tree-k8 --pattern ring --lb ecmp
//! fabric flow deepseek-mpft --pattern hierarchical --hosts 4096 --fail-links 20 --json -
//! fabric flow alibaba-hpn --pattern all-to-all --hosts 256 --lb entropy --bytes 1M
//! ```

use anyhow::Context;
use flow_model::LoadBalance;
use flow_model::eval::{BusyLink, Evaluator, Job, JobResult};
use flow_model::traffic::Pattern;
use topo::{NodeId, Routes};

use crate::common;
use crate::failure_args::FailureArgs;

/// Arguments of `fabric flow`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// Design: a spec file (TOML/YAML/JSON) or a preset name (`fabric topo presets`).
    pub design: String,
    /// Traffic: ring (ring all-reduce), tree (double-binary-tree all-reduce),
    /// hierarchical (scale-up inside domains, one ring per rail between them),
    /// all-to-all, permutation (seeded derangement) or incast (every host to the first).
    #[arg(long, default_value = "ring")]
    pub pattern: String,
    /// Hosts (NICs) taking part: the first N in host order (default: all).
    #[arg(long, value_name = "N")]
    pub hosts: Option<usize>,
    /// Bytes per rank: the all-reduce buffer, an all-to-all rank's whole send buffer (split
    /// evenly over its peers), a permutation or incast sender's flow; K, M, G suffixes are
    /// powers of 1024.
    #[arg(long, default_value = "1G")]
    pub bytes: String,
    /// Load balancing: ecmp, spray (ideal even split: an upper bound), entropy (spraying
    /// over 128 hashed entropy values) or adaptive (least-loaded path per flow; per-packet
    /// adaptive routing is nearer spray).
    #[arg(long, default_value = "ecmp")]
    pub lb: String,
    /// Parallel connections per ring edge (hierarchical only; NCCL channels per NIC).
    #[arg(long, default_value_t = 4)]
    pub channels: u32,
    /// Scale-up (NVLink) bandwidth per GPU, one direction, Gb/s (hierarchical only).
    #[arg(long, default_value_t = 3600.0)]
    pub scale_up_gbps: f64,
    /// Busiest links to list.
    #[arg(long, default_value_t = 5)]
    pub top: usize,
    /// Failures applied before the traffic runs.
    #[command(flatten)]
    pub fail: FailureArgs,
    /// Write the result as JSON (`-`: on standard output, the text on standard error).
    #[arg(long, value_name = "OUT", num_args = 0..=1, default_missing_value = "-")]
    pub json: Option<std::path::PathBuf>,
}

/// What `fabric flow` reports.
#[derive(Debug, serde::Serialize)]
pub struct Outcome {
    /// Design name.
    pub design: String,
    /// Pattern name.
    pub pattern: String,
    /// Load balancing, as modelled.
    pub lb: String,
    /// Hosts taking part.
    pub hosts: usize,
    /// Failed links, by name.
    pub failed_links: Vec<String>,
    /// The job's figures (bus bandwidth in bytes/s, time in s).
    pub result: JobResult,
    /// The busiest directed links.
    pub busiest: Vec<BusyLink>,
}

/// Parses `1G`, `512K`, `2M`, `1000` (bytes; suffixes are powers of 1024), at most 1 PB.
pub(crate) fn parse_bytes(s: &str) -> anyhow::Result<f64> {
    let bad = || anyhow::anyhow!("--bytes {s}: expected a positive size such as 1G, 256M, 4096");
    let t = s.trim();
    let (num, mult) = match t.chars().last() {
        Some('K' | 'k') => (&t[..t.len() - 1], 1024.0),
        Some('M' | 'm') => (&t[..t.len() - 1], 1024.0 * 1024.0),
        Some('G' | 'g') => (&t[..t.len() - 1], 1024.0 * 1024.0 * 1024.0),
        _ => (t, 1.0),
    };
    let v: f64 = num.parse().map_err(|_| bad())?;
    anyhow::ensure!(v.is_finite() && v > 0.0 && v * mult <= 1e15, bad());
    Ok(v * mult)
}

fn pattern(a: &Args, hosts: Vec<NodeId>) -> anyhow::Result<Pattern> {
    let need = |n: usize| {
        anyhow::ensure!(
            hosts.len() >= n,
            "--pattern {}: needs at least {n} hosts, got {}",
            a.pattern,
            hosts.len()
        );
        Ok(())
    };
    Ok(match a.pattern.as_str() {
        "ring" => {
            need(2)?;
            Pattern::RingAllReduce { ranks: hosts }
        }
        "tree" => {
            need(2)?;
            Pattern::TreeAllReduce { ranks: hosts }
        }
        "hierarchical" => {
            need(1)?;
            anyhow::ensure!(
                (1..=64).contains(&a.channels),
                "--channels {}: expected 1 to 64",
                a.channels
            );
            anyhow::ensure!(
                a.scale_up_gbps.is_finite() && a.scale_up_gbps > 0.0,
                "--scale-up-gbps {}: expected a positive number",
                a.scale_up_gbps
            );
            Pattern::Hierarchical {
                ranks: hosts,
                scale_up_bps: a.scale_up_gbps * 1e9,
                channels: a.channels,
            }
        }
        "all-to-all" => {
            need(2)?;
            Pattern::AllToAll { hosts }
        }
        "permutation" => {
            need(2)?;
            Pattern::Permutation {
                hosts,
                seed: a.fail.seed,
            }
        }
        "incast" => {
            need(2)?;
            Pattern::Incast {
                receiver: hosts[0],
                senders: hosts[1..].to_vec(),
            }
        }
        other => anyhow::bail!(
            "--pattern {other}: expected ring, tree, hierarchical, all-to-all, permutation or incast"
        ),
    })
}

/// Evaluates the pattern; the outcome and its text.
pub fn evaluate(a: &Args) -> anyhow::Result<Outcome> {
    let f = common::load_design(&a.design).with_context(|| format!("design {}", a.design))?;
    let lb = LoadBalance::parse(&a.lb, a.fail.seed)
        .with_context(|| format!("--lb {}: expected ecmp, spray, entropy or adaptive", a.lb))?;
    let bytes = parse_bytes(&a.bytes)?;
    let n = a.hosts.unwrap_or(f.num_hosts());
    anyhow::ensure!(
        (1..=f.num_hosts()).contains(&n),
        "--hosts {n}: {} has {} host NICs",
        f.name(),
        f.num_hosts()
    );
    let hosts: Vec<NodeId> = f.hosts().take(n).collect();
    let job = Job {
        name: a.pattern.clone(),
        pattern: pattern(a, hosts)?,
        bytes,
    };
    let failures = a.fail.resolve(&f)?;
    let mut routes = Routes::compute(&f);
    if !failures.is_empty() {
        routes.fail_links(&f, &failures.links);
    }
    let ev = Evaluator::default().evaluate(&f, &routes, &[job], lb, a.top);
    Ok(Outcome {
        design: f.name().to_string(),
        pattern: a.pattern.clone(),
        lb: lb.describe(),
        hosts: n,
        failed_links: failures.link_names(&f),
        result: ev.jobs.into_iter().next().context("one job evaluated")?,
        busiest: ev.busiest,
    })
}

/// The readable report.
pub fn render(o: &Outcome) -> String {
    let r = &o.result;
    let mut s = format!(
        "{} on {}: {} hosts, {} flows, load balancing: {}\n",
        o.pattern, o.design, o.hosts, r.flows, o.lb
    );
    if !o.failed_links.is_empty() {
        s += &format!("failed links: {}\n", o.failed_links.join(", "));
    }
    if r.unroutable > 0 {
        s += &format!(
            "{} flows have no path: the pattern cannot complete\n",
            r.unroutable
        );
        return s;
    }
    s += &format!(
        "bus bandwidth {:.2} GB/s ({:.1} Gb/s), algorithm bandwidth {:.2} GB/s, completion {}\n",
        r.busbw_bytes_per_s / 1e9,
        r.busbw_bytes_per_s * 8.0 / 1e9,
        r.algbw_bytes_per_s / 1e9,
        seconds(r.time_s)
    );
    s += &format!(
        "flow rates: slowest {:.1} Gb/s, mean {:.1} Gb/s\n",
        r.min_rate_bps / 1e9,
        r.mean_rate_bps / 1e9
    );
    if !o.busiest.is_empty() {
        s += "busiest links:\n";
        for b in &o.busiest {
            s += &format!("  {} -> {}  {:.1} %\n", b.from, b.to, 100.0 * b.utilisation);
        }
    }
    s
}

fn seconds(t: f64) -> String {
    if t >= 1.0 {
        format!("{t:.3} s")
    } else if t >= 1e-3 {
        format!("{:.3} ms", t * 1e3)
    } else {
        format!("{:.1} µs", t * 1e6)
    }
}

/// Runs `fabric flow`.
pub fn run(a: Args) -> anyhow::Result<()> {
    let mut json = common::JsonOut::new(a.json.as_deref())?;
    let o = evaluate(&a)?;
    print!("{}", render(&o));
    json.write(&o)
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    #[derive(Debug, clap::Parser)]
    struct Cli {
        #[command(flatten)]
        args: Args,
    }

    fn args(line: &str) -> Args {
        Cli::try_parse_from(std::iter::once("flow").chain(line.split_whitespace()))
            .unwrap()
            .args
    }

    #[test]
    fn a_full_bisection_ring_runs_at_line_rate_and_failures_cost_bandwidth() {
        // the fat-tree-k4 preset at 400 Gb/s: a ring all-reduce at line rate, 50 GB/s
        let o = evaluate(&args("fat-tree-k4 --pattern ring --lb spray")).unwrap();
        assert!((o.result.busbw_bytes_per_s - 50e9).abs() < 1e3, "{o:?}");
        assert!(render(&o).contains("bus bandwidth 50.00 GB/s (400.0 Gb/s)"));
        assert!(o.lb.contains("upper bound"));
        // a permutation under ECMP with two failed links: no faster, links named
        let healthy = evaluate(&args("fat-tree-k4 --pattern permutation --bytes 1M")).unwrap();
        let failed = evaluate(&args(
            "fat-tree-k4 --pattern permutation --bytes 1M --fail-links 2",
        ))
        .unwrap();
        assert_eq!(failed.failed_links.len(), 2);
        assert!(failed.result.time_s >= healthy.result.time_s);
        // incast: 15 senders into one 400 Gb/s NIC, 1 MiB each
        let o = evaluate(&args("fat-tree-k4 --pattern incast --bytes 1M")).unwrap();
        let want = 15.0 * 1048576.0 * 8.0 / 400e9;
        assert!((o.result.time_s - want).abs() / want < 1e-6, "{o:?}");
    }

    #[test]
    fn every_pattern_evaluates_and_json_has_the_figures() {
        for p in [
            "ring",
            "tree",
            "hierarchical",
            "all-to-all",
            "permutation",
            "incast",
        ] {
            let o = evaluate(&args(&format!("fat-tree-k4 --pattern {p} --hosts 8"))).unwrap();
            assert!(
                o.result.busbw_bytes_per_s > 0.0 && o.result.time_s > 0.0,
                "{p}"
            );
            let j = serde_json::to_value(&o).unwrap();
            assert!(j["result"]["busbw_bytes_per_s"].as_f64().unwrap() > 0.0);
            assert!(j["result"]["time_s"].as_f64().unwrap() > 0.0);
        }
    }

    #[test]
    fn bad_input_gets_clear_errors() {
        let e = |line: &str| format!("{:#}", evaluate(&args(line)).unwrap_err());
        assert!(e("fat-tree-k4 --pattern rings").contains("--pattern rings: expected ring"));
        assert!(e("fat-tree-k4 --hosts 99").contains("--hosts 99: fat-tree-k4 has 16 host NICs"));
        assert!(e("fat-tree-k4 --bytes 0").contains("--bytes 0: expected a positive size"));
        assert!(e("fat-tree-k4 --lb x").contains("--lb x: expected ecmp"));
        assert!(e("nope").contains("design nope"));
        assert!(e("fat-tree-k4 --pattern ring --hosts 1").contains("needs at least 2 hosts"));
        assert!(e("fat-tree-k4 --fail nosuch").contains("nosuch"));
    }
}
