//! `fabric testbed frr` (root): brings up the FRR testbed ([`veth::frr::FrrTestbed`]:
//! switches running FRR with BFD, lldpd and node_exporter on a management network, a
//! Prometheus scraping them), prints what to point `fabric serve --observe` and
//! Prometheus clients at, and tears everything down on Ctrl-C or SIGTERM.

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
}

/// Runs the testbed until SIGINT/SIGTERM.
pub fn run(a: FrrArgs) -> anyhow::Result<()> {
    let stop = Arc::new(AtomicBool::new(false));
    {
        let stop = stop.clone();
        veth::netns::on_signal(move |_| stop.store(true, Ordering::Relaxed))?;
    }
    let f = a.fabric.load()?;
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
