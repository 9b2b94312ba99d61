//! `fabric testbed frr` (root): brings up the FRR testbed ([`veth::frr::FrrTestbed`]:
//! switches running FRR with BFD, lldpd and node_exporter on a management network, a
//! Prometheus scraping them), prints what to point `fabric serve --observe` and
//! Prometheus clients at, and tears everything down on Ctrl-C or SIGTERM.
//!
//! With `--converge N` it measures instead: N switch–switch link failures (and returns)
//! under BGP with BFD, BGP alone and fabric's central repair, each on a fresh testbed of
//! the same design ([`veth::frr::converge`]), and prints p50/p99 of failure → every FIB
//! repaired and return → every FIB back.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use crate::common::FabricArgs;

/// `fabric testbed frr` options.
#[derive(Debug, clap::Args)]
pub struct FrrArgs {
    #[command(flatten)]
    pub fabric: FabricArgs,
    /// Leave BFD out of the FRR configs (failures that keep carrier then wait for the
    /// BGP hold timer).
    #[arg(long)]
    pub no_bfd: bool,
    /// Longest wait for BGP to converge to the tables before reporting.
    #[arg(long, default_value = "120s", value_parser = crate::serve::parse_duration)]
    pub converge_timeout: Duration,
    /// Measure convergence instead: N link failures (and returns) per repairer
    /// (1..=1000), then exit.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..=1000))]
    pub converge: Option<u32>,
    /// With --converge: how links fail.
    #[arg(long, value_enum, default_value = "carrier", requires = "converge")]
    pub failure: Failure,
    /// With --converge: the repairers to measure, in order.
    #[arg(
        long,
        value_enum,
        value_delimiter = ',',
        default_value = "bfd,bgp,central",
        requires = "converge"
    )]
    pub repairers: Vec<RepairerArg>,
    /// With --converge: longest wait for one repair (or return) before it counts as not
    /// repaired.
    #[arg(long, default_value = "60s", value_parser = crate::serve::parse_duration, requires = "converge")]
    pub repair_timeout: Duration,
}

/// How a link fails in `--converge`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Failure {
    /// `ip link set IF down` on one end (the other loses carrier).
    Carrier,
    /// `tc qdisc … pfifo limit 0` on both ends: carrier stays, packets are dropped.
    Silent,
}

/// A repairer of `--converge`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum RepairerArg {
    /// FRR's eBGP with BFD.
    Bfd,
    /// FRR's eBGP without BFD.
    Bgp,
    /// fabric's central repair (the routed testbed, as `fabric serve --testbed`).
    Central,
}

/// Runs the testbed until SIGINT/SIGTERM.
pub fn run(a: FrrArgs) -> anyhow::Result<()> {
    let stop = Arc::new(AtomicBool::new(false));
    {
        let stop = stop.clone();
        veth::netns::on_signal(move |_| stop.store(true, Ordering::Relaxed))?;
    }
    let f = a.fabric.load()?;
    if let Some(n) = a.converge {
        return converge(&f, &a, n as usize, &stop);
    }
    let name = f.name().to_string();
    let opts = veth::frr::FrrOptions {
        bfd: !a.no_bfd,
        ..Default::default()
    };
    let t = Instant::now();
    let tb = veth::frr::FrrTestbed::build(f.clone(), &opts)
        .map_err(|e| anyhow::anyhow!("building the FRR testbed of {name}: {e}"))?;
    let d = tb.wait_converged(&topo::Routes::compute(&f), a.converge_timeout)?;
    let prefix = tb.routed().testbed().ns_name("");
    let prom = tb
        .prometheus()
        .map(|p| format!("http://{p}"))
        .unwrap_or_default();
    println!(
        "FRR testbed of {name} up in {:.1} s: {} switches, BGP {} ({} of {} FIB entries differ from the tables)",
        t.elapsed().as_secs_f64(),
        tb.agents().len(),
        if d.entries.is_empty() {
            "converged"
        } else {
            "NOT converged"
        },
        d.entries.len(),
        d.checked
    );
    println!("namespaces:        {prefix}s<i> (switches), {prefix}h<i> (hosts)");
    println!(
        "management:        bridge {} on {}",
        tb.mgmt().bridge(),
        tb.mgmt().subnet()
    );
    println!("prometheus:        {prom}");
    println!(
        "lldpd sockets:     {}/lldpd-<switch>.sock",
        tb.dir().display()
    );
    println!(
        "vtysh:             ip netns exec {prefix}s0 vtysh -N {prefix}s0 -c 'show bgp summary'"
    );
    println!(
        "observe it:        fabric serve --observe --fabric {name} --prometheus {prom} --lldp-dir {} --fib-netns {prefix}",
        tb.dir().display()
    );
    println!("Ctrl-C or SIGTERM tears it down.");
    while !stop.load(Ordering::Relaxed) {
        std::thread::sleep(Duration::from_millis(100));
    }
    tb.teardown()?;
    println!("torn down");
    Ok(())
}

/// `--converge N`: every repairer in turn, then the table.
fn converge(f: &topo::Fabric, a: &FrrArgs, n: usize, stop: &AtomicBool) -> anyhow::Result<()> {
    use veth::frr::converge::{self, FailureKind};
    let kind = match a.failure {
        Failure::Carrier => FailureKind::Carrier,
        Failure::Silent => FailureKind::Silent,
    };
    let mut all = Vec::new();
    for r in &a.repairers {
        if stop.load(Ordering::Relaxed) {
            break;
        }
        let t = Instant::now();
        let mut i = 0;
        let show = |x: &converge::Timing| {
            i += 1;
            let s = |v: Option<f64>| v.map_or("not repaired".to_string(), |v| format!("{v:.3} s"));
            eprintln!(
                "  {r:?} {i}/{n}: link {} down → {} ({} probes lost), up → {} ({} lost)",
                x.link.0,
                s(x.down_s),
                x.down_loss.lost,
                s(x.up_s),
                x.up_loss.lost
            );
        };
        let runs = match r {
            RepairerArg::Bfd => converge::run_frr(f, true, kind, n, a.repair_timeout, show),
            RepairerArg::Bgp => converge::run_frr(f, false, kind, n, a.repair_timeout, show),
            RepairerArg::Central => converge::run_central(f, kind, n, a.repair_timeout, show),
        }
        .map_err(|e| anyhow::anyhow!("{r:?}: {e}"))?;
        eprintln!(
            "{r:?}: {:.0} s; {} probes lost on the healthy fabric before the first failure",
            t.elapsed().as_secs_f64(),
            runs.idle_lost
        );
        all.push(runs);
    }
    let pairs = veth::frr::probe_loss::pairs(f).len();
    print!("{}", converge_table(f.name(), &all, pairs));
    Ok(())
}

/// The Markdown table of `--converge`.
pub fn converge_table(name: &str, all: &[veth::frr::converge::Runs], pairs: usize) -> String {
    use veth::frr::converge::{PROBE_INTERVAL, percentile};
    let ms = |v: Option<f64>| v.map_or("–".to_string(), |v| format!("{:.0} ms", v * 1e3));
    let n = |v: Option<f64>| v.map_or("–".to_string(), |v| format!("{v:.0}"));
    let mut o = format!(
        "{name}: link failure → every FIB repaired, and return → every FIB back (p50 / p99 over the failures); \
         probes: one datagram per host pair on different leaves ({pairs} pairs) every {} ms, \
         lost from the failure (return) until repaired (back)\n\n\
         | repairer | failure | failures | repaired | down p50 | down p99 | lost p50 / p99 | longest outage p99 | back | up p50 | up p99 | lost back p50 / p99 | check round ≤ |\n\
         |---|---|---|---|---|---|---|---|---|---|---|---|---|\n",
        PROBE_INTERVAL.as_millis()
    );
    for r in all {
        let (d, u) = (r.down(), r.up());
        let (ld, lu) = (r.lost_down(), r.lost_up());
        o += &format!(
            "| {} | {:?} | {} | {} | {} | {} | {} / {} | {} | {} | {} | {} | {} / {} | {} |\n",
            r.repairer.as_str(),
            r.kind,
            r.timings.len(),
            d.len(),
            ms(percentile(&d, 50.0)),
            ms(percentile(&d, 99.0)),
            n(percentile(&ld, 50.0)),
            n(percentile(&ld, 99.0)),
            ms(percentile(&r.outage_down(), 99.0)),
            u.len(),
            ms(percentile(&u, 50.0)),
            ms(percentile(&u, 99.0)),
            n(percentile(&lu, 50.0)),
            n(percentile(&lu, 99.0)),
            if r.resolution_s > 0.0 {
                ms(Some(r.resolution_s))
            } else {
                "– (synchronous)".into()
            },
        );
    }
    o
}
