//! `fabric testbed`: real veth testbeds in network namespaces (root required).
//!
//! - `up`: create a star testbed (one switch namespace, N host namespaces, veth pairs)
//!   and leave it running; prints its run id.
//! - `run SCENARIO`: build a star, run a `scenario` file on it with the userspace switch
//!   (PFC, ECN) and RoCEv2 endpoints (DCQCN from `cc-algos`), print the figures, remove it.
//! - `verify [--preset NAME | --fabric SPEC | --fat-tree K | --leaf-spine LxSxH] [--planes N]`:
//!   realise a `topo` fabric as namespaces with kernel ECMP routes (rtnetlink), dual stack,
//!   optionally shaped (`--link-mbps`), probe all host pairs (per plane) over UDP in IPv4
//!   and IPv6, show the ECMP spread of one leaf, fail a link, re-route incrementally, probe
//!   again, restore the link, probe again; report recovery and restore times per family;
//!   exit non-zero if any check of either family fails.
//! - `down RUN_ID` / `down --all`: remove a testbed made by `up`.
//! - `clean`: remove leftovers of crashed runs (namespaces named `fab-*` whose owning
//!   process is gone; `--all`: every `fab-*` namespace).
//!
//! Every command that creates namespaces removes them on Ctrl-C too.

use std::path::PathBuf;

use anyhow::{Context, bail};
use cc_algos::{CcKind, Rate};
use scenario::{CompileCtx, Scenario};
use veth::congestion::{CongestionConfig, jain};
use veth::{Testbed, netns, routed};

use crate::common::FabricArgs;

#[derive(Debug, clap::Subcommand)]
pub enum Command {
    /// Create a star testbed (switch + hosts joined by veths) and leave it up.
    Up {
        /// Number of host namespaces.
        #[arg(long, default_value_t = 4)]
        hosts: usize,
    },
    /// Run a scenario file on a fresh veth testbed of userspace switches: a star, a
    /// leaf-spine or a fat-tree (`--topology`).
    Run(RunArgs),
    /// Run a scenario with each congestion-control algorithm, `--repeat N` times on veth
    /// and once in the simulator twin, and print one table (JSON and CSV beside it).
    Compare(crate::cmd_testbed_compare::CompareArgs),
    /// Realise a fabric with kernel routing, probe all pairs, fail a link, re-route, probe again.
    Verify(VerifyArgs),
    /// Bring up a routed fabric whose switches run FRR (BGP, BFD), lldpd and
    /// node_exporter, scraped by a Prometheus; print how to observe it; tear down on Ctrl-C.
    Frr(crate::cmd_testbed_frr::FrrArgs),
    /// Remove a testbed created by `up`.
    Down {
        /// The run id `up` printed.
        run_id: Option<String>,
        /// Remove every testbed namespace (`fab-*`).
        #[arg(long)]
        all: bool,
    },
    /// Remove leftovers of crashed runs (only our `fab-*` namespaces).
    Clean {
        /// Also remove namespaces of live runs.
        #[arg(long)]
        all: bool,
    },
}

#[derive(Debug, clap::Args)]
pub struct VerifyArgs {
    #[command(flatten)]
    pub fabric: FabricArgs,
    /// A k-ary 3-tier fat-tree (the default is k = 4: 16 hosts, 20 switches).
    #[arg(long, value_name = "K", conflicts_with_all = ["fabric", "preset", "leaf_spine"])]
    pub fat_tree: Option<u32>,
    /// A 2-tier leaf–spine `LEAVESxSPINESxHOSTS_PER_LEAF`, e.g. `4x2x2`.
    #[arg(long, value_name = "LxSxH", conflicts_with_all = ["fabric", "preset"])]
    pub leaf_spine: Option<String>,
    /// Copies of the `--fat-tree` / `--leaf-spine` plane, each host with one NIC port per
    /// plane (multi-plane fabric); probes stay in their plane.
    #[arg(long, value_name = "N", default_value_t = 1, conflicts_with_all = ["fabric", "preset"])]
    pub planes: u32,
    /// Link to fail (`link:N` or `A--B`, as in `fabric routes --fail`); default: the
    /// busiest uplink of the first host's leaf during the spread test.
    #[arg(long, value_name = "LINK")]
    pub fail: Option<String>,
    /// Flows (distinct UDP source ports) of the ECMP spread test.
    #[arg(long, default_value_t = 256)]
    pub flows: usize,
    /// After the link-down, probe all pairs once before re-programming the routes, to
    /// show what the kernel alone does (legacy multipath + linkdown sysctls).
    #[arg(long)]
    pub kernel_first: bool,
    /// IPv4 only (by default the testbed is dual stack and every check runs for IPv4
    /// and IPv6).
    #[arg(long)]
    pub ipv4_only: bool,
    /// Skip the restore step (by default the failed link is set up again, the changed
    /// routes re-programmed, all pairs probed again and the spread repeated).
    #[arg(long)]
    pub no_restore: bool,
    /// Shape every link to R Mb/s (a tbf qdisc on both ends of every veth: 32 KiB
    /// bucket, 20 ms queue) and check one UDP flow per family gets R ± 10 %.
    #[arg(long, value_name = "R")]
    pub link_mbps: Option<u64>,
    /// Program the switch routes as next-hop objects and groups (RTM_NEWNEXTHOP, routes
    /// with `nhid`) instead of legacy multipath routes.
    #[arg(long)]
    pub nexthop_objects: bool,
    /// Leave out the sysctls that make legacy multipath skip next hops without carrier
    /// (`ignore_routes_with_linkdown`, `fib_multipath_use_neigh`), e.g. with
    /// `--kernel-first` to see the kernel without them.
    #[arg(long)]
    pub no_linkdown_sysctls: bool,
    /// Set the failed link down at its far end (for a leaf uplink: at the upper switch),
    /// so the leaf only loses carrier.
    #[arg(long)]
    pub fail_far_end: bool,
    /// Write the full report as JSON.
    #[arg(long, value_name = "OUT", num_args = 0..=1, default_missing_value = "-")]
    pub json: Option<PathBuf>,
}

#[derive(Debug, clap::Args)]
pub struct RunArgs {
    /// Scenario file (TOML, the shared `scenario` language).
    pub scenario: PathBuf,
    /// Hosts in the star (default: as many as the scenario uses; a leaf-spine or
    /// fat-tree has its own number).
    #[arg(long)]
    pub hosts: Option<usize>,
    /// The testbed's shape: `star` (one userspace switch), `leaf-spine:LxSxH` (e.g.
    /// `leaf-spine:2x2x4`) or `fat-tree:K` (e.g. `fat-tree:4`): every switch a userspace
    /// switch with `topo`'s ECMP tables, PFC and ECN per hop, all served by one loop.
    #[arg(long, default_value = "star")]
    pub topology: veth::congestion::fabric::Topology,
    /// Make this host's NIC storm: from `--storm-at` on it pauses its switch port and
    /// never stops (a PAUSE with the longest quanta every 5 ms, real time, of priority 0,
    /// or of the host's tenant's class with a tenant file).
    #[arg(long)]
    pub storm_host: Option<usize>,
    /// When the storm starts (virtual time, e.g. `100us`).
    #[arg(long, default_value = "0us", value_parser = scenario::units::parse_time)]
    pub storm_at: cc_algos::Duration,
    /// Run the PFC watchdog (`cc_algos::pfcwd`, action drop, restoration 2× detection) on
    /// every switch with this detection time (real time, 100 ms to 5 s, e.g. `100ms`).
    #[arg(long, value_parser = scenario::units::parse_time)]
    pub pfcwd: Option<cc_algos::Duration>,
    /// Real link rate the engine paces at, in Mb/s.
    #[arg(long, default_value_t = 1000)]
    pub link_mbps: u64,
    /// Link rate the congestion control is tuned for, in Gb/s (time scale = this / link rate).
    #[arg(long, default_value_t = 100)]
    pub virtual_gbps: u64,
    /// Congestion control: dcqcn, dcqcn-mellanox, dcqcn-hpcc-ns3, dctcp, nscc (window,
    /// ECN echo, RTT from echoed timestamps) or rccc (receiver credit).
    #[arg(long, default_value = "dcqcn")]
    pub cc: String,
    /// Spray every packet over entropy values with this policy (oblivious, bitmap, reps,
    /// mixed; the simulator's `--lb` policies) and let receivers accept reordering;
    /// without it each flow keeps one entropy value (per-flow ECMP, go-back-N). The
    /// number of values is the scenario's `network.evs`.
    #[arg(long, value_name = "POLICY")]
    pub spray: Option<cc_algos::uec::ev::EvPolicyKind>,
    /// Write what the `--pcap-port` switch ports send and receive to this file: pcapng,
    /// one interface per port named as the port (`sw:p0→h0`, `leaf1:p4→spine0`),
    /// timestamps in virtual time (ns since the start of the run).
    #[arg(long)]
    pub pcap: Option<PathBuf>,
    /// Switch ports to capture, repeated or comma-separated (`--pcap-port 0,3`): global
    /// numbering, ports 0..hosts face the hosts (on the star port i faces host i), then
    /// every other switch port, switch by switch (`testbed run` prints the names).
    /// Only with `--pcap` (without it nothing would be captured).
    #[arg(long, value_delimiter = ',', default_value = "0", requires = "pcap")]
    pub pcap_port: Vec<usize>,
    /// Write the full report (time series, counters) as JSON.
    #[arg(long, value_name = "OUT", num_args = 0..=1, default_missing_value = "-")]
    pub json: Option<PathBuf>,
    /// Wall-clock limit in seconds (at least 1: a run limited to 0 s would stop at once).
    #[arg(long, default_value_t = 120, value_parser = clap::value_parser!(u64).range(1..))]
    pub wall_limit: u64,
    /// Also run the same workplan in the packet simulator on a star with the same
    /// parameters (at the virtual rate) and print both side by side.
    #[arg(long)]
    pub compare_sim: bool,
    /// Write SVG plots (per-flow throughput and controller rate over time, switch
    /// queue depth per port) into this directory.
    #[arg(long)]
    pub plot: Option<PathBuf>,
    /// Write the run's live snapshots (one per sampling point, virtual time) into a
    /// recording that `fabric-tui --replay` reads.
    #[arg(long, value_name = "FILE")]
    pub record: Option<PathBuf>,
    /// Tenant file (TOML/YAML/JSON) checked against the `--topology` fabric: workloads
    /// with `tenant = "a"` take their class from it and every switch port its ETS
    /// weights; replaces the scenario's `tenants` key.
    #[arg(long, value_name = "FILE")]
    pub tenants: Option<PathBuf>,
}

fn need_root() -> anyhow::Result<()> {
    if !netns::is_root() {
        bail!(
            "`fabric testbed` creates network namespaces and veth pairs and needs root (CAP_SYS_ADMIN, CAP_NET_ADMIN): run it with sudo"
        );
    }
    Ok(())
}

pub fn run(command: Command) -> anyhow::Result<()> {
    need_root()?;
    if let Command::Run(a) = command {
        // A live run stops on SIGINT/SIGTERM and tears down through its guard.
        return run_scenario(a);
    }
    if let Command::Frr(a) = command {
        // Runs until SIGINT/SIGTERM and tears down through its guards.
        return crate::cmd_testbed_frr::run(a);
    }
    if let Command::Compare(a) = command {
        return crate::cmd_testbed_compare::run(a);
    }
    netns::install_signal_cleanup()?;
    match command {
        Command::Up { hosts } => up(hosts),
        Command::Run(_) | Command::Frr(_) | Command::Compare(_) => {
            unreachable!("handled above")
        }
        Command::Verify(a) => verify(a),
        Command::Down { run_id, all } => down(run_id, all),
        Command::Clean { all } => {
            let removed = netns::clean(all)?;
            if removed.is_empty() {
                println!("nothing to clean");
            }
            for n in removed {
                println!("removed {n}");
            }
            Ok(())
        }
    }
}

fn up(hosts: usize) -> anyhow::Result<()> {
    if hosts == 0 {
        bail!("--hosts must be at least 1");
    }
    let mut tb = Testbed::new()?;
    let sw = tb.add_netns("sw")?;
    for i in 0..hosts {
        let h = tb.add_netns(&format!("h{i}"))?;
        tb.connect(&sw, &format!("p{i}"), &h, "eth0")?;
    }
    let id = tb.run_id().to_string();
    for ns in tb.namespaces() {
        println!("{}", ns.name());
    }
    tb.persist();
    println!("testbed {id} is up; remove it with `fabric testbed down {id}`");
    Ok(())
}

fn down(run_id: Option<String>, all: bool) -> anyhow::Result<()> {
    let prefix = match (&run_id, all) {
        (Some(id), false) => format!("{}{id}-", netns::PREFIX),
        (None, true) => netns::PREFIX.to_string(),
        _ => bail!("give either a RUN_ID (as printed by `fabric testbed up`) or --all"),
    };
    let names: Vec<String> = netns::list_ours()
        .into_iter()
        .filter(|n| n.starts_with(&prefix))
        .collect();
    if names.is_empty() {
        bail!("no testbed namespaces match {prefix}* (see `ip netns list`)");
    }
    for n in names {
        netns::Netns::from_name(&n).delete()?;
        println!("removed {n}");
    }
    Ok(())
}

fn verify_fabric(a: &VerifyArgs) -> anyhow::Result<topo::Fabric> {
    let rate = topo::Rate::gbps(100);
    if let Some(ls) = &a.leaf_spine {
        let v: Vec<u32> = ls
            .split('x')
            .map(|x| x.parse::<u32>())
            .collect::<Result<_, _>>()
            .ok()
            .filter(|v: &Vec<u32>| v.len() == 3 && v.iter().all(|&n| n > 0))
            .with_context(|| {
                format!("--leaf-spine {ls}: expected LEAVESxSPINESxHOSTS_PER_LEAF, e.g. 4x2x2")
            })?;
        let spec = topo::generators::leaf_spine_spec(v[0], v[1], v[2], 1, rate);
        return planes(spec, a.planes, "leaf-spine");
    }
    if a.fabric.fabric.is_some() || a.fabric.preset.is_some() {
        return a.fabric.load();
    }
    let k = a.fat_tree.unwrap_or(4);
    let spec = topo::generators::fat_tree_spec(k, rate);
    planes(spec, a.planes, &format!("fat-tree-k{k}"))
}

/// `spec` as is (one plane) or with `n` copies of its plane, one NIC port per plane.
fn planes(spec: topo::spec::Spec, n: u32, name: &str) -> anyhow::Result<topo::Fabric> {
    match n {
        0 => bail!("--planes: expected at least 1, got 0"),
        1 => Ok(spec.build(name)?),
        n => Ok(topo::generators::multi_plane_spec(spec, n).build(&format!("{name}-x{n}"))?),
    }
}

fn verify(a: VerifyArgs) -> anyhow::Result<()> {
    let mut json = crate::common::JsonOut::new(a.json.as_deref())?;
    let f = verify_fabric(&a)?;
    let opts = verify_options(&a, &f)?;
    print_testbed(&a, &f);
    let r = routed::verify(f, &opts)?;
    print_setup(&r.setup);
    print_before_failure(&r);
    print_failure(&r);
    if let Some(re) = &r.restore {
        print_restore(&r, re);
    }
    print_verdict(&r);
    json.write(&r)?;
    if !r.ok() {
        return Err(crate::common::CheckFailed(
            "routed testbed verification failed (see above)".into(),
        )
        .into());
    }
    println!("OK");
    Ok(())
}

/// The verification's options from the command line (`--fail` resolved on `f`).
fn verify_options(a: &VerifyArgs, f: &topo::Fabric) -> anyhow::Result<routed::VerifyOptions> {
    let mut opts = routed::VerifyOptions {
        testbed: routed::RoutedOptions {
            ipv6: !a.ipv4_only,
            link_mbps: a.link_mbps,
            nexthop_objects: a.nexthop_objects,
            linkdown_sysctls: !a.no_linkdown_sysctls,
            fail_at_b_end: a.fail_far_end,
        },
        spread_flows: a.flows,
        kernel_first: a.kernel_first,
        restore: !a.no_restore,
        ..Default::default()
    };
    if let Some(name) = &a.fail {
        let set = topo::failures::resolve(f, std::slice::from_ref(name))?;
        if set.links.len() != 1 {
            bail!(
                "--fail {name}: names {} links; give exactly one link (link:N or A--B)",
                set.links.len()
            );
        }
        opts.fail = Some(set.links[0]);
    }
    Ok(opts)
}

fn print_testbed(a: &VerifyArgs, f: &topo::Fabric) {
    println!(
        "routed testbed: {} ({} hosts, {} switches, {} links), {}, {}",
        f.name(),
        f.num_hosts(),
        f.num_switches(),
        f.num_links(),
        if a.ipv4_only {
            "IPv4 only"
        } else {
            "dual stack (IPv4 + IPv6)"
        },
        if a.nexthop_objects {
            "next-hop objects"
        } else {
            "legacy multipath routes"
        }
    );
}

fn print_setup(s: &routed::SetupStats) {
    println!(
        "setup: {} namespaces, {} veths, {} addresses, {} routes in {:.2} s (namespaces {:.2} s, veths {:.2} s, addresses+routes {:.2} s)",
        s.namespaces, s.veths, s.addresses, s.routes, s.total_s, s.netns_s, s.links_s, s.routes_s
    );
    if let Some(t) = &s.tbf {
        println!(
            "shaping: {} tbf qdiscs (rate {} Mb/s, burst {} B, limit {} B) installed and read back in {:.2} s",
            s.qdiscs,
            t.rate_bps / 1_000_000,
            t.burst,
            t.limit(),
            s.shaping_s
        );
    }
}

fn print_round(what: &str, p: &routed::ProbeRound) {
    let planes = if p.per_plane.len() > 1 {
        let v: Vec<String> = p
            .per_plane
            .iter()
            .map(|(pl, n, ok)| format!("plane {pl}: {ok}/{n}"))
            .collect();
        format!(" [{}]", v.join(", "))
    } else {
        String::new()
    };
    println!(
        "{} {what}: {}/{} pairs reached{planes} ({} UDP probes) in {:.1} ms{}",
        p.family,
        p.received,
        p.pairs,
        p.sent,
        p.elapsed_s * 1e3,
        if p.ok() {
            String::new()
        } else {
            format!("; MISSING {:?}", p.missing)
        }
    );
}

fn print_spread(what: &str, sp: &routed::Spread) {
    println!(
        "{} ECMP spread {what}: {} flows {}→{} ({} delivered), tx per uplink of {}:",
        sp.family, sp.flows, sp.src, sp.dst, sp.delivered, sp.leaf
    );
    for (ifn, peer, tx, up) in &sp.uplinks {
        println!(
            "  {ifn} → {peer}: {tx} packets{}",
            if *up { "" } else { " (failed)" }
        );
    }
    println!(
        "  {} uplinks used; imbalance max/mean {:.2}",
        sp.used(),
        sp.imbalance()
    );
}

/// Probes, spread and rate before the failure, per family.
fn print_before_failure(r: &routed::VerifyReport) {
    for x in &r.families {
        print_round("all pairs before failure", &x.before);
    }
    for x in &r.families {
        print_spread("before failure", &x.spread);
    }
    for x in &r.families {
        if let Some(b) = &x.blast {
            println!(
                "{} rate: one UDP flow {}→{} for {:.2} s, {} B datagrams ({} B frames): {}/{} received, {:.1} Mb/s of frames (link {} Mb/s){}",
                b.family,
                b.src,
                b.dst,
                b.send_s,
                b.payload,
                b.frame,
                b.received,
                b.sent,
                b.rx_mbps,
                x.link_mbps.unwrap_or(0),
                if x.rate_ok() {
                    ""
                } else {
                    " — OUTSIDE ±10 %"
                }
            );
        }
    }
    for x in &r.families {
        if let Some(k) = &x.kernel_only {
            println!(
                "{} kernel alone (link down, routes not yet re-programmed): {}/{} pairs reached in {:.1} ms; missing {:?}",
                k.family,
                k.received,
                k.pairs,
                k.elapsed_s * 1e3,
                k.missing
            );
        }
    }
}

/// The failure, what topo changed, recovery per family.
fn print_failure(r: &routed::VerifyReport) {
    println!(
        "failed {}: topo changed {} entries, {} routes re-programmed in {:.1} ms",
        r.failure.link,
        r.failure.entries_changed,
        r.failure.routes_reprogrammed,
        r.failure.reprogram_s * 1e3
    );
    if r.unreachable.is_empty() {
        println!("topo: every pair still reachable");
    } else {
        println!(
            "topo: {} pairs unreachable (not probed): {:?}",
            r.unreachable.len(),
            r.unreachable
        );
    }
    for x in &r.families {
        print_round("all pairs after failure", &x.after);
        match x.recovery_s {
            Some(t) => println!(
                "{} recovered in {:.1} ms (link down → all reachable pairs answered, {} round(s))",
                x.family,
                t * 1e3,
                x.rounds_to_recover
            ),
            None => println!(
                "{} NOT recovered after {} rounds",
                x.family, x.rounds_to_recover
            ),
        }
    }
    for x in &r.families {
        print_spread("after failure", &x.spread_after);
    }
}

/// The restore and what it brought back, per family.
fn print_restore(r: &routed::VerifyReport, re: &routed::Failure) {
    println!(
        "restored {}: both ends operationally up after {}; topo changed {} entries, {} routes re-programmed {:.1} ms after the link-up request",
        re.link,
        re.oper_up_s
            .map_or("NOT within 2 s".to_string(), |t| format!(
                "{:.1} ms",
                t * 1e3
            )),
        re.entries_changed,
        re.routes_reprogrammed,
        re.reprogram_s * 1e3
    );
    for x in &r.families {
        if let Some(p) = &x.restored {
            print_round("all pairs after restore", p);
        }
        match x.restore_s {
            Some(t) => println!(
                "{} restored in {:.1} ms (link up → all reachable pairs answered, {} round(s))",
                x.family,
                t * 1e3,
                x.rounds_to_restore
            ),
            None => println!(
                "{} NOT all reachable after the restore ({} rounds)",
                x.family, x.rounds_to_restore
            ),
        }
    }
    for x in &r.families {
        if let Some(sp) = &x.spread_restored {
            print_spread("after restore", sp);
        }
    }
}

fn print_verdict(r: &routed::VerifyReport) {
    for x in &r.families {
        println!(
            "{}: {}",
            x.family,
            if x.ok() {
                "all checks passed"
            } else {
                "FAILED"
            }
        );
    }
    if r.leaked.is_empty() {
        println!("teardown: no namespace left");
    } else {
        println!("teardown: LEAKED {:?}", r.leaked);
    }
}

/// The most hosts the congestion testbed's star may have (one namespace each, all
/// served by one host loop).
const MAX_STAR_HOSTS: usize = 64;

/// The most either rate flag accepts (a typo, not a link, beyond it).
const MAX_RATE_FLAG: u64 = 1_000_000;

/// `--link-mbps` and `--virtual-gbps`: both positive, the virtual rate a whole multiple
/// of the link rate (the time scale).
fn check_rates(link_mbps: u64, virtual_gbps: u64) -> anyhow::Result<()> {
    if !(1..=MAX_RATE_FLAG).contains(&link_mbps) {
        bail!(
            "--link-mbps {link_mbps}: the real rate the engine paces every veth link at must be 1..={MAX_RATE_FLAG} Mb/s (default 1000; the engine keeps up with about 1000 here)"
        );
    }
    if !(1..=MAX_RATE_FLAG).contains(&virtual_gbps) {
        bail!(
            "--virtual-gbps {virtual_gbps}: the rate the congestion control is tuned for must be 1..={MAX_RATE_FLAG} Gb/s and a whole multiple of --link-mbps (default 100)"
        );
    }
    let virtual_mbps = virtual_gbps * 1000;
    if virtual_mbps < link_mbps || !virtual_mbps.is_multiple_of(link_mbps) {
        bail!(
            "--virtual-gbps {virtual_gbps} --link-mbps {link_mbps}: the virtual rate must be at least the link rate and a whole multiple of it (the time scale), e.g. --virtual-gbps 100 --link-mbps 1000"
        );
    }
    Ok(())
}

/// Spraying needs more than one path: on the star every pair of hosts has one.
fn check_spray(topology: veth::congestion::fabric::Topology, spray: bool) -> anyhow::Result<()> {
    if spray && topology == veth::congestion::fabric::Topology::Star {
        bail!(
            "--spray on the star: its hosts have one path between them, so spraying only reorders nothing; give a multi-path --topology (leaf-spine:2x2x4, fat-tree:4)"
        );
    }
    Ok(())
}

/// The signal that stopped a run (0: none), written by the signal thread.
static STOP_SIGNAL: std::sync::atomic::AtomicI32 = std::sync::atomic::AtomicI32::new(0);

/// Why a run ended before every sized flow finished, and with which exit status:
/// `None` when it finished.
fn interruption(
    r: &veth::congestion::CongestionReport,
    signal: i32,
    wall_limit_hit: bool,
) -> Option<crate::common::Interrupted> {
    let unfinished = r.unfinished();
    if unfinished.is_empty() && signal == 0 {
        return None;
    }
    let (status, why) = match signal {
        libc::SIGINT => (130, "interrupted by SIGINT".to_string()),
        libc::SIGTERM => (143, "stopped by SIGTERM".to_string()),
        libc::SIGHUP => (129, "stopped by SIGHUP (its terminal closed)".to_string()),
        _ if wall_limit_hit => (124, "stopped at its --wall-limit".to_string()),
        _ => (3, "ended before every flow finished".to_string()),
    };
    let ids: Vec<String> = unfinished.iter().map(|i| i.to_string()).collect();
    Some(crate::common::Interrupted {
        status,
        what: format!(
            "the run was {why} after {:.0} µs (virtual): {} of {} flows did not finish{}",
            r.duration_us,
            unfinished.len(),
            r.flows.len(),
            if ids.is_empty() {
                String::new()
            } else {
                format!(" (flows {})", ids.join(", "))
            }
        ),
    })
}

/// The run `a` asks for: the congestion testbed's configuration and the compiled
/// scenario (rates, topology, storm, watchdog, algorithm, spraying, capture checked).
pub(crate) fn configure(a: &RunArgs) -> anyhow::Result<(CongestionConfig, scenario::Workplan)> {
    check_rates(a.link_mbps, a.virtual_gbps)?;
    check_spray(a.topology, a.spray.is_some())?;
    let scenario = Scenario::from_file(&a.scenario)?;
    let virtual_rate = Rate::gbps(a.virtual_gbps);
    let tenants = testbed_tenants(a, &scenario, virtual_rate)?;
    let used = |hosts: u32| -> anyhow::Result<_> {
        Ok(scenario
            .compile(&CompileCtx::new(hosts, virtual_rate, 1).with_tenants(tenants.clone()))?)
    };
    let hosts = match (a.topology.hosts(), a.hosts) {
        (Some(n), Some(h)) if h != n => bail!(
            "--hosts {h} --topology {}: the topology has {n} hosts; leave --hosts out",
            a.topology
        ),
        (Some(n), _) => n,
        (None, h) => match h {
            Some(h) if h > MAX_STAR_HOSTS => bail!(
                "--hosts {h}: the congestion testbed builds one namespace per host and runs them all from one core; at most {MAX_STAR_HOSTS} hosts"
            ),
            Some(h) => h,
            None if scenario.uses_every_host() => bail!(
                "{}: a workload uses `all` hosts, so the scenario does not say how many namespaces to build: give --hosts N (2..={MAX_STAR_HOSTS})",
                a.scenario.display()
            ),
            None => {
                // The scenario names its hosts: learn how many it uses.
                let p = used(MAX_STAR_HOSTS as u32)?;
                p.flows
                    .iter()
                    .map(|f| f.src.max(f.dst) as usize + 1)
                    .max()
                    .unwrap_or(2)
                    .max(2)
            }
        },
    };
    let plan = used(hosts as u32)?;
    let mut cfg = CongestionConfig::new(hosts);
    cfg.topology = a.topology;
    // A storming NIC pauses its own traffic's class: its tenant's, with a tenant file.
    cfg.storm = a.storm_host.map(|h| veth::congestion::StormConfig {
        priority: tenants
            .as_ref()
            .and_then(|t| t.class_of_host(h as u32))
            .unwrap_or(0),
        ..veth::congestion::StormConfig::new(h, a.storm_at)
    });
    cfg.pfcwd = a
        .pfcwd
        .map(|d| {
            cc_algos::pfcwd::WatchdogConfig::new(
                d,
                cc_algos::Duration::picos(d.as_picos() * 2),
                cc_algos::pfcwd::Action::Drop,
            )
        })
        .transpose()
        .context("--pfcwd")?;
    cfg.link_rate = Rate::mbps(a.link_mbps);
    cfg.virtual_rate = virtual_rate;
    cfg.pfc = cfg.pfc.map(|p| cc_algos::PfcConfig {
        link_rate: cfg.link_rate,
        ..p
    });
    cfg.cc =
        a.cc.parse::<CcKind>()
            .with_context(|| format!("--cc {}", a.cc))?;
    cfg.spray = a.spray;
    cfg.apply(&plan.network)?;
    cfg.spray_config().context("--spray")?;
    cfg.pcap = a.pcap.clone();
    cfg.pcap_ports = a.pcap_port.clone();
    cfg.wall_limit = std::time::Duration::from_secs(a.wall_limit);
    Ok((cfg, plan))
}

/// The run's tenant file checked against the `--topology` fabric (the star has none).
fn testbed_tenants(
    a: &RunArgs,
    scenario: &Scenario,
    rate: Rate,
) -> anyhow::Result<Option<scenario::ScenarioTenants>> {
    if scenario.tenants_path(a.tenants.as_deref()).is_none() {
        return Ok(None);
    }
    let Some(f) = a.topology.fabric(rate)? else {
        bail!(
            "{}: a tenant file is checked against the fabric's hosts, and the star has no fabric: give --topology leaf-spine:LxSxH or fat-tree:K",
            a.scenario.display()
        );
    };
    crate::tenant_args::scenario_tenants(scenario, None, &f, a.tenants.as_deref())
}

fn run_scenario(a: RunArgs) -> anyhow::Result<()> {
    let mut json = crate::common::JsonOut::new(a.json.as_deref())?;
    // The plots are written after the run: a directory that cannot be made is refused
    // now, not after a run the user waited for.
    if let Some(dir) = &a.plot {
        std::fs::create_dir_all(dir)
            .with_context(|| format!("--plot {}: cannot create the directory", dir.display()))?;
    }
    let (cfg, plan) = configure(&a)?;
    let hosts = cfg.hosts;
    let scale = cfg.scale()?;
    println!(
        "scenario {} on a {} of {hosts} hosts: links {} standing for {} (time scale {}), cc {}{}",
        plan.name,
        cfg.topology,
        cfg.link_rate,
        cfg.virtual_rate,
        scale.0,
        cfg.cc,
        cfg.spray.map_or(String::new(), |k| format!(
            ", spraying ({k:?}, {} EVs)",
            cfg.evs
        ))
    );
    // SIGINT/SIGTERM stop the run; it then tears down through its guard and reports.
    // The handler goes in before the run's threads exist, so they all leave the signals
    // to it.
    let stopper = veth::congestion::Stopper::default();
    let on_signal = stopper.clone();
    netns::on_signal(move |sig| {
        STOP_SIGNAL.store(sig, std::sync::atomic::Ordering::Relaxed);
        on_signal.stop()
    })?;
    let started = std::time::Instant::now();
    let run = veth::congestion::spawn_with(&cfg, &plan, stopper)?;
    let r = match &a.record {
        Some(out) => crate::record::record_live(run, out)?,
        None => {
            let mut run = run;
            run.ignore_snapshots();
            run.join()?
        }
    };
    let interrupted = interruption(
        &r,
        STOP_SIGNAL.load(std::sync::atomic::Ordering::Relaxed),
        started.elapsed() >= cfg.wall_limit,
    );
    println!(
        "ran {:.0} µs (virtual); drops: {} (switch {}, kernel {}, veth {}, PFC watchdog {}); ECN marks {}; PFC pauses sent {}; CNPs {}; credit grants {}; max buffer {} B; max PFC headroom used {} B",
        r.duration_us,
        r.total_drops(),
        r.switch_drops,
        r.kernel_drops,
        r.veth_drops,
        r.pfcwd_drops,
        r.ecn_marks,
        r.pauses_sent,
        r.cnps_sent,
        r.credits_sent,
        r.max_buffer_used,
        r.max_headroom_bytes
    );
    println!(
        "engine: switch loop at most {:.0} µs, hosts' loop at most {:.0} µs late (real time)",
        r.switch_max_late_us, r.hosts_max_late_us
    );
    if !r.faithful() {
        println!(
            "WARNING: an engine loop fell more than {:.0} µs (real) behind; while it did, frames waited unseen by PFC/ECN or the NICs fell below their rate: the figures describe this machine's load more than the fabric. Re-run on a quieter machine or with a lower --link-mbps.",
            veth::congestion::MAX_FAITHFUL_LATE_US
        );
    }
    println!(
        "| flow | src→dst | delivered | FCT (µs, virtual) | mean Gb/s | CNPs | NAKs | timeouts |"
    );
    println!("|---|---|---|---|---|---|---|---|");
    let mut means = Vec::new();
    for f in &r.flows {
        let end = f.completed_us.unwrap_or(r.duration_us);
        let mean = f.delivered as f64 * 8.0 / ((end - f.start_us).max(1e-9) * 1e3);
        means.push(mean);
        println!(
            "| {} | {}→{} | {} B | {} | {:.2} | {} | {} | {} |",
            f.id,
            f.src,
            f.dst,
            f.delivered,
            f.completed_us
                .map_or("-".to_string(), |t| format!("{:.0}", t - f.start_us)),
            mean,
            f.cnps,
            f.naks,
            f.timeouts
        );
    }
    println!("Jain fairness of mean rates: {:.3}", jain(&means));
    print_reactions(&r);
    for (p, c) in r.ports.iter().enumerate() {
        if c.tx_packets + c.rx_packets > 0 {
            let name = r.port_names.get(p).map_or(String::new(), |n| {
                format!(" ({}:p{} → {})", n.switch, n.port, n.peer)
            });
            println!(
                "port {p}{name}: tx {} pkts, rx {} pkts, marks {}, drops {}, pauses sent {}, PFC received {}, paused {:.1} µs (virtual), max queue {} B, headroom used {} B",
                c.tx_packets,
                c.rx_packets,
                c.ecn_marks,
                c.drops,
                c.pauses_sent,
                c.pfc_received,
                r.paused_virtual_us.get(p).copied().unwrap_or(0.0),
                c.max_queue_bytes,
                c.max_headroom_bytes
            );
        }
    }
    if cfg.storm.is_some() || cfg.pfcwd.is_some() {
        println!(
            "PFC storm: {} PAUSE frames sent by the storming host; watchdog: {} storms detected, {} frames dropped",
            r.storm_pauses, r.pfcwd_storms, r.pfcwd_drops
        );
    }
    if r.ports.iter().any(|c| c.link_down_drops > 0) {
        println!(
            "frames lost on failed links: {}",
            r.ports.iter().map(|c| c.link_down_drops).sum::<u64>()
        );
    }
    json.write(&r)?;
    if let Some(p) = &a.pcap {
        let ports: Vec<String> = a
            .pcap_port
            .iter()
            .map(|&i| {
                r.port_names
                    .get(i)
                    .map_or(format!("port {i}"), |n| format!("{i} ({})", n.label()))
            })
            .collect();
        println!(
            "capture of switch ports {} in {} (pcapng, virtual time)",
            ports.join(", "),
            p.display()
        );
    }
    // The simulator twin (with its time series, for the plots) unless the veth run is
    // truncated: a complete simulator run would not compare with it.
    let twin = if a.compare_sim && interrupted.is_none() {
        Some(veth::congestion::twin::run_sim(
            &cfg,
            &plan,
            Some(cfg.sample),
        )?)
    } else {
        None
    };
    if let Some(dir) = &a.plot {
        for p in crate::veth_plots::write(&r, &cfg, twin.as_ref(), &plan.name, dir)? {
            println!("plot {}", p.display());
        }
    }
    if let Some(i) = interrupted {
        if a.compare_sim {
            println!(
                "not compared with the simulator: the veth run is truncated and the simulator's would be complete"
            );
        }
        return Err(i.into());
    }
    if let Some(s) = &twin {
        compare_with_sim(&cfg, s, &r)?;
    }
    Ok(())
}

/// How the flows' controllers reacted; a warning when a congested run's never moved.
fn print_reactions(r: &veth::congestion::CongestionReport) {
    let judged: Vec<_> = r.flows.iter().filter_map(|f| f.reaction.as_ref()).collect();
    if let Some(first) = judged.first() {
        let cut = judged.iter().filter(|x| x.cut).count();
        let both = judged.iter().filter(|x| x.cut && x.recovered).count();
        println!(
            "controller ({}): {cut} of {} flows cut it below half, {both} cut it and raised it again",
            first.signal,
            judged.len()
        );
    }
    if r.controller_inert() {
        println!(
            "WARNING: the run was congested (ECN marks {}, pauses {}, drops {}) but no flow's congestion control ever changed its rate, window or credit: the algorithm did not run, and no comparison with the simulator means anything",
            r.ecn_marks,
            r.pauses_sent,
            r.total_drops()
        );
    }
}

/// Print the veth run beside `s`, the simulator's run (crate `sim`) on its twin (the same
/// star or fabric at the virtual rate, with the veth run's buffer, ECN, PFC, MTU and
/// congestion control: `veth::congestion::twin`).
fn compare_with_sim(
    cfg: &CongestionConfig,
    s: &sim::SimResults,
    veth: &veth::congestion::CongestionReport,
) -> anyhow::Result<()> {
    println!(
        "simulator: the same {} ({} hosts) at {} with the same buffer, ECN, PFC, MTU and cc",
        cfg.topology, cfg.hosts, cfg.virtual_rate
    );
    let c = report::compare::compare(&s.outcome(), &veth.outcome())?;
    print!("{}", comparison_table(&c));
    if veth.controller_inert() {
        println!(
            "NOT COMPARABLE: the veth run's congestion control never reacted (see the warning above); the figures above do not show agreement"
        );
    }
    Ok(())
}

/// The comparison as the CLI prints it: counters side by side, then per-flow FCTs.
fn comparison_table(c: &report::compare::Comparison) -> String {
    let (a, b) = &c.counts;
    let fmt = |v: Option<f64>| v.map_or("–".to_string(), |x| format!("{x:.0}"));
    // A side that finished nothing has no FCT (`–`), and no ratio is made with it.
    let both = c.a_fct.finished > 0 && c.b_fct.finished > 0;
    let fct = |finished: usize, us: f64, ratio: Option<f64>| match (finished, ratio) {
        (0, _) => "–".to_string(),
        (_, Some(x)) => format!("{us:.0} ({x:.2}×)"),
        (_, None) => format!("{us:.0}"),
    };
    let mut rows = vec![
        vec!["drops".into(), a.drops.to_string(), b.drops.to_string()],
        vec![
            "PFC pauses".into(),
            a.pauses.to_string(),
            b.pauses.to_string(),
        ],
        vec![
            "ECN marks".into(),
            a.ecn_marks.to_string(),
            b.ecn_marks.to_string(),
        ],
        vec!["CNPs".into(), a.cnps.to_string(), b.cnps.to_string()],
        vec![
            "flows finished".into(),
            c.a_fct.finished.to_string(),
            c.b_fct.finished.to_string(),
        ],
        vec![
            "median FCT (µs)".into(),
            fct(c.a_fct.finished, c.a_fct.p50_us, None),
            fct(
                c.b_fct.finished,
                c.b_fct.p50_us,
                both.then(|| c.median_ratio()),
            ),
        ],
        vec![
            "last FCT (µs)".into(),
            fct(c.a_fct.finished, c.a_fct.max_us, None),
            fct(
                c.b_fct.finished,
                c.b_fct.max_us,
                both.then(|| c.last_ratio()),
            ),
        ],
        vec![
            "Jain of mean rates".into(),
            format!("{:.3}", c.jain.0),
            format!("{:.3}", c.jain.1),
        ],
    ];
    let mut out = report::table(&["", &c.a, &c.b], &rows);
    rows = c
        .flows
        .iter()
        .map(|f| {
            vec![
                f.id.to_string(),
                format!("{}→{}", f.src, f.dst),
                fmt(f.a_fct_us),
                fmt(f.b_fct_us),
                f.ratio.map_or("–".into(), |r| format!("{r:.2}")),
            ]
        })
        .collect();
    let a_fct = format!("{} FCT (µs)", c.a);
    let b_fct = format!("{} FCT (µs)", c.b);
    let ratio = format!("{}/{}", c.b, c.a);
    out.push_str(&report::table(
        &["flow", "src→dst", &a_fct, &b_fct, &ratio],
        &rows,
    ));
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(fat_tree: Option<u32>, leaf_spine: Option<&str>) -> VerifyArgs {
        VerifyArgs {
            fabric: FabricArgs::default(),
            fat_tree,
            leaf_spine: leaf_spine.map(String::from),
            planes: 1,
            fail: None,
            flows: 256,
            kernel_first: false,
            ipv4_only: false,
            no_restore: false,
            link_mbps: None,
            nexthop_objects: false,
            no_linkdown_sysctls: false,
            fail_far_end: false,
            json: None,
        }
    }

    #[test]
    fn verify_defaults_to_a_k4_fat_tree() {
        let f = verify_fabric(&args(None, None)).unwrap();
        assert_eq!((f.num_hosts(), f.num_switches()), (16, 20));
        let f = verify_fabric(&args(Some(6), None)).unwrap();
        assert_eq!(f.num_hosts(), 54);
    }

    #[test]
    fn planes_copy_the_generated_plane_with_one_nic_port_each() {
        let mut a = args(None, Some("2x2x2"));
        a.planes = 2;
        let f = verify_fabric(&a).unwrap();
        assert_eq!((f.num_planes(), f.num_hosts(), f.num_switches()), (2, 4, 8));
        assert_eq!(f.name(), "leaf-spine-2x2-x2");
        let mut a = args(Some(4), None);
        a.planes = 3;
        let f = verify_fabric(&a).unwrap();
        assert_eq!((f.num_planes(), f.num_hosts()), (3, 16));
        a.planes = 0;
        assert_eq!(
            verify_fabric(&a).unwrap_err().to_string(),
            "--planes: expected at least 1, got 0"
        );
    }

    #[derive(clap::Parser)]
    struct Run {
        #[command(flatten)]
        run: RunArgs,
    }

    #[test]
    fn spray_takes_an_ev_policy_or_names_the_ones_it_knows() {
        use clap::Parser;
        let r = Run::try_parse_from(["run", "s.toml", "--spray", "reps"]).unwrap();
        assert_eq!(r.run.spray, Some(cc_algos::uec::ev::EvPolicyKind::Reps));
        assert_eq!(
            Run::try_parse_from(["run", "s.toml"]).unwrap().run.spray,
            None
        );
        let e = Run::try_parse_from(["run", "s.toml", "--spray", "nope"])
            .err()
            .unwrap()
            .to_string();
        assert!(
            e.contains("--spray") && e.contains("oblivious, bitmap, reps, mixed"),
            "{e}"
        );
    }

    #[test]
    fn leaf_spine_shape_is_parsed_or_rejected_precisely() {
        let f = verify_fabric(&args(None, Some("4x2x3"))).unwrap();
        assert_eq!((f.num_hosts(), f.num_switches()), (12, 6));
        for bad in ["4x2", "4x0x2", "axbxc", "4x2x2x1"] {
            let e = verify_fabric(&args(None, Some(bad)))
                .unwrap_err()
                .to_string();
            assert_eq!(
                e,
                format!("--leaf-spine {bad}: expected LEAVESxSPINESxHOSTS_PER_LEAF, e.g. 4x2x2")
            );
        }
    }

    #[test]
    fn zero_or_mismatched_rates_name_the_flag_and_the_valid_range() {
        let e = check_rates(0, 100).unwrap_err().to_string();
        assert!(e.contains("--link-mbps 0") && e.contains("1..="), "{e}");
        let e = check_rates(1000, 0).unwrap_err().to_string();
        assert!(e.contains("--virtual-gbps 0") && e.contains("1..="), "{e}");
        let e = check_rates(3000, 100).unwrap_err().to_string();
        assert!(e.contains("whole multiple"), "{e}");
        assert!(check_rates(1000, 100).is_ok());
        assert!(check_rates(500, 100).is_ok());
    }

    #[test]
    fn spraying_on_the_one_path_star_is_refused() {
        use veth::congestion::fabric::Topology;
        let e = check_spray(Topology::Star, true).unwrap_err().to_string();
        assert!(e.contains("one path"), "{e}");
        assert!(check_spray(Topology::Star, false).is_ok());
        assert!(check_spray("leaf-spine:2x2x4".parse().unwrap(), true).is_ok());
    }

    #[test]
    fn run_help_names_every_topology() {
        use clap::CommandFactory;
        let mut cmd = Run::command();
        let help = cmd.render_long_help().to_string();
        for t in ["star", "leaf-spine:", "fat-tree:"] {
            assert!(
                help.contains(t),
                "`testbed run --help` does not name {t}: {help}"
            );
        }
    }

    fn outcome(source: &str, fcts: &[Option<f64>]) -> report::outcome::RunOutcome {
        report::outcome::RunOutcome {
            source: source.into(),
            duration_us: 100.0,
            flows: fcts
                .iter()
                .enumerate()
                .map(|(i, &fct_us)| report::outcome::FlowOutcome {
                    id: i as u32,
                    size: Some(1000),
                    fct_us,
                    ..Default::default()
                })
                .collect(),
            counts: Default::default(),
        }
    }

    #[test]
    fn a_side_that_finished_nothing_shows_a_dash_not_zero() {
        let c = report::compare::compare(
            &outcome("sim", &[Some(10.0), Some(20.0)]),
            &outcome("veth", &[None, None]),
        )
        .unwrap();
        let t = comparison_table(&c);
        let median = t.lines().find(|l| l.contains("median FCT")).unwrap();
        assert!(median.contains('–') && !median.contains("0.00×"), "{t}");
    }

    fn report_with(unfinished: bool) -> veth::congestion::CongestionReport {
        veth::congestion::CongestionReport {
            duration_us: 500.0,
            flows: vec![veth::congestion::FlowResult {
                id: 4,
                size: Some(1000),
                completed_us: (!unfinished).then_some(50.0),
                ..Default::default()
            }],
            ..Default::default()
        }
    }

    #[test]
    fn an_interrupted_run_names_its_unfinished_flows_and_its_status() {
        let i = interruption(&report_with(true), libc::SIGINT, false).unwrap();
        assert_eq!(i.status, 130);
        assert!(
            i.what.contains("flows 4") && i.what.contains("SIGINT"),
            "{}",
            i.what
        );
        assert_eq!(
            interruption(&report_with(true), libc::SIGTERM, false)
                .unwrap()
                .status,
            143
        );
        assert_eq!(
            interruption(&report_with(true), 0, true).unwrap().status,
            124
        );
        // A signal after every flow finished still says the run was stopped.
        assert_eq!(
            interruption(&report_with(false), libc::SIGINT, false)
                .unwrap()
                .status,
            130
        );
        assert!(interruption(&report_with(false), 0, false).is_none());
    }
}
