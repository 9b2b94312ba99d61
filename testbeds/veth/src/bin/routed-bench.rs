//! Routed-testbed figures (root): what one telemetry interval costs — one RTM_GETLINK
//! dump (stats64, carrier, operstate) per namespace — on fat-trees k=4 and k=8, and how
//! fast a link set down from outside the testbed is detected (RTNLGRP_LINK) and routed
//! around, p50/p99 over N failures of different aggregation→core links on k=4, each
//! restored before the next.
//!
//! `cargo run --release -p veth --bin routed-bench -- [FAILURES]` (default 20)

use std::time::{Duration, Instant};

use topo::{Rate, generators};
use veth::routed::{RoutedOptions, RoutedTestbed};

fn percentile(v: &mut [f64], q: f64) -> f64 {
    v.sort_by(f64::total_cmp);
    let rank = ((q * v.len() as f64).ceil() as usize).clamp(1, v.len());
    v[rank - 1]
}

/// Median time of one stats interval (every namespace dumped once), ms.
fn stats_interval(k: u32, rounds: usize) -> veth::Result<(usize, f64)> {
    let f = generators::fat_tree(k, Rate::gbps(100)).expect("valid k");
    let rt = RoutedTestbed::build_with(f, &RoutedOptions::default())?;
    let n = rt.fabric().num_nodes();
    let mut t = Vec::new();
    for _ in 0..rounds {
        let t0 = Instant::now();
        for i in 0..n {
            let s = rt.nl(topo::NodeId(i as u32)).stats()?;
            std::hint::black_box(s);
        }
        t.push(t0.elapsed().as_secs_f64() * 1e3);
    }
    rt.teardown()?;
    Ok((n, percentile(&mut t, 0.5)))
}

fn wait(
    w: &mut veth::routed::LinkWatcher,
    f: &topo::Fabric,
    l: topo::LinkId,
    up: bool,
) -> veth::Result<Instant> {
    let t = Instant::now();
    while t.elapsed() < Duration::from_secs(2) {
        for c in w.poll(f, Duration::from_millis(20))? {
            if c.link == l && c.up == up {
                return Ok(c.detected);
            }
        }
    }
    Err(veth::Error::Invalid(format!("link {l:?} never reported")))
}

fn failures(n: usize) -> veth::Result<()> {
    let f = generators::fat_tree(4, Rate::gbps(100)).expect("k=4");
    let mut rt = RoutedTestbed::build_with(f, &RoutedOptions::default())?;
    let mut w = rt.watch()?;
    let links: Vec<(topo::NodeId, u16, topo::LinkId)> = {
        let f = rt.fabric();
        f.switches()
            .filter(|&s| f.tier(s) == 2)
            .flat_map(|s| {
                (0..f.degree(s) as u16)
                    .filter(move |&p| f.tier(f.peer(s, p)) == 3)
                    .map(move |p| (s, p, f.port_link(s, p)))
            })
            .collect()
    };
    let (mut detect, mut repair) = (Vec::new(), Vec::new());
    for i in 0..n {
        let (s, p, l) = links[i % links.len()];
        let outside = veth::netlink::Nl::open(rt.netns(s))?;
        let t0 = Instant::now();
        outside.set_down(&format!("p{p}"))?;
        let d = wait(&mut w, rt.fabric(), l, false)?;
        rt.repair_down(l, d)?;
        detect.push((d - t0).as_secs_f64() * 1e3);
        repair.push(t0.elapsed().as_secs_f64() * 1e3);
        outside.set_up(&format!("p{p}"))?;
        let u = wait(&mut w, rt.fabric(), l, true)?;
        rt.repair_up(l, u)?;
    }
    println!(
        "k=4, {n} aggregation→core links set down from outside: detected p50 {:.2} ms p99 {:.2} ms; routes repaired p50 {:.2} ms p99 {:.2} ms after the event",
        percentile(&mut detect, 0.5),
        percentile(&mut detect, 0.99),
        percentile(&mut repair, 0.5),
        percentile(&mut repair, 0.99)
    );
    rt.teardown()
}

fn main() -> veth::Result<()> {
    let n: usize = std::env::args()
        .nth(1)
        .and_then(|a| a.parse().ok())
        .unwrap_or(20);
    veth::netns::install_signal_cleanup()?;
    for k in [4, 8] {
        let (ns, ms) = stats_interval(k, 20)?;
        println!(
            "k={k}: one stats interval ({ns} namespaces, one link dump each): median {ms:.2} ms"
        );
    }
    failures(n)
}
