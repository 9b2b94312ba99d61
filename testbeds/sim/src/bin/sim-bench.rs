//! `sim-bench`: the simulator's benchmark against the htsim anchor.
//!
//! The anchor (htsim UEC build, measured on this machine kind, see docs/sim.md):
//! 1024-host fat-tree permutation, 1024 × 2 MB at 100 Gb/s, 128 paths, 400 µs
//! simulated — 19–22 s CPU, 146 MB, p99 FCT ≈ 200 µs.
//!
//! ```text
//! sim-bench                      # the anchor workload (k=16 fat-tree, 1024 hosts)
//! sim-bench --k 8 --k 16 --k 32  # scaling table
//! sim-bench --rto-us 1000        # the 1 ms timeout the recorded digests were taken with
//! sim-bench --queue calendar     # compare event queues (lanes: the default, FIFO lanes
//!                                # per delay over a calendar; calendar: 1,024 ps buckets;
//!                                # adaptive: adaptive width; heap)
//! ```
//! Prints simulated/wall time, the CPU time of setup and of the event loop apart,
//! events per CPU second and CPU per event, peak memory (VmHWM), FCT figures and the
//! results' digest (`sim::digest`: equal digests, equal results).

use cc_algos::{Duration, Instant, Rate};
use scenario::{CompileCtx, Scenario};
use sim::net::{Net, Router};
use sim::queue::{CalendarQueue, EventQueue, HeapQueue, LaneQueue};
use sim::{CcChoice, LbScheme, Sim, SimConfig, SimResults};
use std::time::Instant as WallClock;

fn peak_rss_mb() -> f64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("VmHWM:"))
                .and_then(|l| l.split_whitespace().nth(1)?.parse::<f64>().ok())
        })
        .map(|kb| kb / 1024.0)
        .unwrap_or(0.0)
}

/// CPU time of this (single-threaded) process, seconds: the scheduler's on-CPU
/// nanoseconds from `/proc/self/schedstat`, else `utime + stime` from
/// `/proc/self/stat` (10 ms ticks).
fn cpu_seconds() -> f64 {
    if let Some(ns) = std::fs::read_to_string("/proc/self/schedstat")
        .ok()
        .and_then(|s| s.split_whitespace().next()?.parse::<u64>().ok())
    {
        return ns as f64 / 1e9;
    }
    std::fs::read_to_string("/proc/self/stat")
        .ok()
        .and_then(|s| {
            let rest = &s[s.rfind(')')? + 2..];
            let f: Vec<&str> = rest.split_whitespace().collect();
            let ut: f64 = f.get(11)?.parse().ok()?;
            let st: f64 = f.get(12)?.parse().ok()?;
            Some((ut + st) / 100.0)
        })
        .unwrap_or(0.0)
}

struct Opts {
    ks: Vec<u32>,
    cc: CcChoice,
    lb: LbScheme,
    queue: String,
    size: String,
    stop_us: Option<u64>,
    seed: u64,
    /// A fixed retransmit timeout (the digests recorded before the timeout was derived
    /// from the network were taken with 1,000 µs).
    rto_us: Option<u64>,
}

/// One run's measurements.
struct Measured {
    r: SimResults,
    wall: f64,
    /// CPU building the net, the routes and the simulator.
    setup_cpu: f64,
    /// CPU running the event loop (and collecting the results).
    run_cpu: f64,
}

fn parse_args() -> Result<Opts, String> {
    let mut o = Opts {
        ks: Vec::new(),
        cc: "nscc".parse().or_else(|_| "dcqcn".parse())?,
        lb: LbScheme::Spray,
        queue: "lanes".into(),
        size: "2MB".into(),
        stop_us: None,
        rto_us: None,
        seed: 1,
    };
    let mut it = std::env::args().skip(1);
    while let Some(a) = it.next() {
        let mut val = || it.next().ok_or(format!("{a} needs a value"));
        match a.as_str() {
            "--k" => o.ks.push(val()?.parse().map_err(|e| format!("--k: {e}"))?),
            "--cc" => o.cc = val()?.parse()?,
            "--lb" => o.lb = val()?.parse()?,
            "--queue" => o.queue = val()?,
            "--size" => o.size = val()?,
            "--stop-us" => o.stop_us = Some(val()?.parse().map_err(|e| format!("--stop-us: {e}"))?),
            "--seed" => o.seed = val()?.parse().map_err(|e| format!("--seed: {e}"))?,
            "--rto-us" => o.rto_us = Some(val()?.parse().map_err(|e| format!("--rto-us: {e}"))?),
            "-h" | "--help" => {
                println!(
                    "sim-bench [--k K]... [--cc NAME] [--lb NAME] [--queue lanes|calendar|adaptive|heap] [--size 2MB] [--stop-us N] [--seed N] [--rto-us N]"
                );
                std::process::exit(0);
            }
            _ => return Err(format!("unknown argument {a}")),
        }
    }
    if o.ks.is_empty() {
        o.ks.push(16);
    }
    Ok(o)
}

fn run_one<Q: EventQueue>(k: u32, o: &Opts, q: Q) -> Result<Measured, String> {
    let fabric = topo::generators::fat_tree(k, topo::Rate::gbps(100)).map_err(|e| e.to_string())?;
    let hosts = fabric.num_hosts() as u32;
    let scen = Scenario::from_toml_str(
        &format!(
            "name = \"permutation\"\n[[workload]]\nkind = \"permutation\"\nsize = \"{}\"\n",
            o.size
        ),
        "bench",
    )
    .map_err(|e| e.to_string())?;
    let plan = scen
        .compile(&CompileCtx::new(hosts, Rate::gbps(100), o.seed))
        .map_err(|e| e.to_string())?;
    let cfg = SimConfig {
        seed: o.seed,
        cc: o.cc,
        lb: o.lb,
        evs: 128,
        pfc: false,
        ecn: Some(
            cc_algos::RedEcn::new(cc_algos::Bytes(20_000), cc_algos::Bytes(80_000), 1.0).unwrap(),
        ),
        trim: Some(
            cc_algos::TrimPolicy::new(cc_algos::Bytes(200_000), cc_algos::Bytes(64)).unwrap(),
        ),
        stop: o.stop_us.map(|us| Instant::ZERO + Duration::micros(us)),
        rto: o.rto_us.map(Duration::micros),
        ..SimConfig::default()
    };
    let c0 = cpu_seconds();
    let w0 = WallClock::now();
    let net = Net::from_fabric(&fabric, cfg.link_delay);
    let routes = topo::Routes::compute(&fabric);
    let mut sim = Sim::with_queue(
        net,
        Router::Topo(Box::new(routes)),
        Some(fabric),
        cfg,
        &plan,
        q,
    )
    .map_err(|e| e.to_string())?;
    let c1 = cpu_seconds();
    let r = sim.run();
    Ok(Measured {
        r,
        wall: w0.elapsed().as_secs_f64(),
        setup_cpu: c1 - c0,
        run_cpu: cpu_seconds() - c1,
    })
}

fn main() {
    let o = match parse_args() {
        Ok(o) => o,
        Err(e) => {
            eprintln!("sim-bench: {e}");
            std::process::exit(2);
        }
    };
    // Exactly what runs (docs/sim.md compares it with htsim's flags).
    println!(
        "workload: k-ary fat-tree ({:?}) from topo, 100 Gb/s links with 500 ns propagation, \
         permutation (one flow per host, a derangement drawn from seed {}) of {} per flow; \
         cc {}, lb {}, 128 EVs, payload 4096 B + 64 B header, ACK/NACK 64 B, one ACK per \
         packet, base RTT of each flow's own path, ECN RED 20–80 KB Pmax 1 at dequeue, \
         trimming above 200 KB to 64 B, shared 32 MB buffer per switch, no PFC, RTO 1 ms",
        o.ks, o.seed, o.size, o.cc, o.lb
    );
    println!(
        "| hosts | cc | lb | queue | sim time | wall s | setup cpu s | run cpu s | events | M events / run cpu s | µs cpu / event | data pkts | acks | p50 FCT µs | p99 FCT µs | max FCT µs | drops | trims | peak MB | digest |"
    );
    println!("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|");
    for &k in &o.ks {
        let res = match o.queue.as_str() {
            "heap" => run_one(k, &o, HeapQueue::default()),
            "calendar" => run_one(k, &o, CalendarQueue::for_sim()),
            "adaptive" => run_one(k, &o, CalendarQueue::adaptive(10, 4096)),
            "lanes" => run_one(k, &o, LaneQueue::for_sim()),
            q => Err(format!(
                "unknown queue {q} (lanes, calendar, adaptive or heap)"
            )),
        };
        let m = match res {
            Ok(x) => x,
            Err(e) => {
                eprintln!("sim-bench: k={k}: {e}");
                std::process::exit(1);
            }
        };
        let r = &m.r;
        let ev = r.run.events as f64;
        println!(
            "| {} | {} | {} | {} | {:.0} µs | {:.2} | {:.2} | {:.2} | {} | {:.2} | {:.3} | {} | {} | {:.1} | {:.1} | {:.1} | {} | {} | {:.0} | {:016x} |",
            r.run.hosts,
            r.run.cc,
            r.run.lb,
            o.queue,
            r.run.end_us,
            m.wall,
            m.setup_cpu,
            m.run_cpu,
            r.run.events,
            ev / m.run_cpu / 1e6,
            m.run_cpu / ev * 1e6,
            r.totals.data_pkts,
            r.totals.acks,
            r.fct.p50_us,
            r.fct.p99_us,
            r.fct.max_us,
            r.totals.drops,
            r.totals.trims,
            peak_rss_mb(),
            sim::digest::digest(r),
        );
        eprintln!(
            "events by kind: {:?}; peak packets in flight: {}",
            r.run.events_by_kind, r.run.peak_packets
        );
    }
}
