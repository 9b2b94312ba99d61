//! Telemetry cost in the simulator:
//! `cargo run --release -p sim --example telemetry_bench [-- ROUNDS]`.
//!
//! 1. Snapshot cost (build + JSON line) on simulated fabrics of ~10k links
//!    (`fat-tree-k24`) and ~360k links (8 planes of a k=40 fat-tree, 102,400 GPUs),
//!    after a short permutation so that counters are not zero.
//! 2. Events/s of a k=16 fat-tree permutation (1024 hosts × 200 KB, NSCC, spraying)
//!    with telemetry (a snapshot and its JSON line, plus the events, every 10 µs of
//!    virtual time) as a ratio to the same run without it; the two alternate, ROUNDS
//!    times each (default 3), and the medians are compared.

use cc_algos::{Duration, Instant, Rate};
use fabric_api::Frame;
use scenario::{CompileCtx, Scenario, Workplan};
use sim::{LbScheme, RunState, Sim, SimConfig};
use std::time::Instant as Wall;

fn plan(f: &topo::Fabric, toml: &str) -> Workplan {
    Scenario::from_toml_str(toml, "bench.toml")
        .unwrap()
        .compile(&CompileCtx::new(f.num_hosts() as u32, Rate::gbps(400), 1))
        .unwrap()
}

fn cfg() -> SimConfig {
    SimConfig {
        lb: LbScheme::Spray,
        ..SimConfig::default()
    }
}

fn snapshot_cost(name: &str, f: &topo::Fabric, hosts: &str) {
    let t = Wall::now();
    // A permutation among the first `hosts` hosts, cut short: the counters move.
    let p = plan(
        f,
        &format!("[[workload]]\nkind = \"permutation\"\nhosts = {hosts}\nsize = \"64KB\"\n"),
    );
    let mut sim = Sim::from_fabric(f, cfg(), &p).unwrap();
    let setup = t.elapsed().as_secs_f64();
    sim.run_until(Instant::from_picos(3_000_000));
    let info = sim.fabric_info();
    let map = Frame::Fabric(info).to_json_line().len();
    let mut best = (f64::MAX, f64::MAX, 0);
    for _ in 0..3 {
        let t = Wall::now();
        let s = sim.snapshot();
        let build = t.elapsed().as_secs_f64();
        let t = Wall::now();
        let line = Frame::Snapshot(s).to_json_line();
        let json = t.elapsed().as_secs_f64();
        best = (best.0.min(build), best.1.min(json), line.len());
    }
    println!(
        "{name}: {} links, {} ports · set-up {setup:.1} s · fabric map {:.2} MB · snapshot: build {:.1} ms, JSON {:.1} ms, {:.2} MB",
        f.num_links(),
        2 * f.num_links(),
        map as f64 / 1e6,
        best.0 * 1e3,
        best.1 * 1e3,
        best.2 as f64 / 1e6
    );
}

/// One run: events processed and wall seconds; with telemetry every `every`.
fn timed_run(f: &topo::Fabric, p: &Workplan, every: Option<Duration>) -> (u64, f64, u64) {
    let mut sim = Sim::from_fabric(f, cfg(), p).unwrap();
    let t = Wall::now();
    let mut bytes = 0u64;
    match every {
        None => {
            sim.run();
        }
        Some(step) => {
            sim.enable_events();
            let mut at = Instant::ZERO;
            loop {
                at += step;
                let state = sim.run_until(at);
                for e in sim.drain_events() {
                    bytes += Frame::Event(e).to_json_line().len() as u64;
                }
                bytes += Frame::Snapshot(sim.take_snapshot()).to_json_line().len() as u64;
                if state == RunState::Finished {
                    break;
                }
            }
        }
    }
    let wall = t.elapsed().as_secs_f64();
    (sim.results().run.events, wall, bytes)
}

fn median(v: &mut [f64]) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

fn main() {
    let rounds: usize = std::env::args()
        .nth(1)
        .and_then(|a| a.parse().ok())
        .unwrap_or(3);
    let k16 = topo::generators::fat_tree(16, topo::Rate::gbps(400)).unwrap();
    let p = plan(
        &k16,
        "[[workload]]\nkind = \"permutation\"\nsize = \"200KB\"\n",
    );
    let (mut plain, mut with) = (Vec::new(), Vec::new());
    for r in 0..rounds {
        let (ev, w, _) = timed_run(&k16, &p, None);
        plain.push(ev as f64 / w);
        let (ev2, w2, bytes) = timed_run(&k16, &p, Some(Duration::micros(10)));
        with.push(ev2 as f64 / w2);
        assert_eq!(ev, ev2, "telemetry must not change the run");
        println!(
            "round {r}: without {:.2} M events/s ({w:.2} s), with {:.2} M events/s ({w2:.2} s, {:.1} MB of JSON lines)",
            ev as f64 / w / 1e6,
            ev2 as f64 / w2 / 1e6,
            bytes as f64 / 1e6
        );
    }
    let (a, b) = (median(&mut plain), median(&mut with));
    println!(
        "k=16 permutation, telemetry every 10 µs: {:.2} vs {:.2} M events/s → ratio {:.3} (median of {rounds})",
        b / 1e6,
        a / 1e6,
        b / a
    );
    snapshot_cost(
        "fat-tree-k24",
        &topo::presets::build("fat-tree-k24").unwrap(),
        "\"0..512\"",
    );
    let mut spec = topo::generators::fat_tree_spec(40, topo::Rate::gbps(400));
    spec.name = "mp8-k40".into();
    spec.planes[0].copies = 8;
    spec.hosts.nics_per_server = 8;
    spec.hosts.gpus_per_server = 8;
    spec.hosts.servers = Some(12_800);
    // NIC i of a server is in plane i: a permutation among the NICs of plane 0.
    let plane0: Vec<String> = (0..512).map(|s| (8 * s).to_string()).collect();
    let hosts = format!("[{}]", plane0.join(", "));
    snapshot_cost(
        "mp8-k40 (8 planes, 102,400 GPUs)",
        &spec.build("bench").unwrap(),
        &hosts,
    );
}
