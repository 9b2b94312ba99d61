//! Telemetry cost in the simulator:
//! `cargo run --release -p sim --example telemetry_bench [-- ROUNDS]`.
//!
//! 1. Snapshot cost (build + JSON line) on simulated fabrics of ~10k links
//!    (`fat-tree-k24`) and ~360k links (8 planes of a k=40 fat-tree, 102,400 GPUs),
//!    a few µs into a permutation of every host (every plane), so every link is busy.
//! 2. Events/s of a k=16 fat-tree permutation at 100 Gb/s (1024 hosts × 2 MB, the
//!    htsim anchor workload of docs/sim.md; NSCC, spraying)
//!    with telemetry (a snapshot and its JSON line, plus the events, every 10 µs of
//!    virtual time) as a ratio to the same run without it; the two alternate, ROUNDS
//!    times each (default 3), and the medians are compared.

use cc_algos::{Duration, Instant, Rate};
use fabric_api::Frame;
use scenario::{CompileCtx, Scenario, Workplan};
use sim::{LbScheme, RunState, Sim, SimConfig};
use std::time::Instant as Wall;

fn plan(f: &topo::Fabric, toml: &str, gbps: u64) -> Workplan {
    Scenario::from_toml_str(toml, "bench.toml")
        .unwrap()
        .compile(&CompileCtx::new(f.num_hosts() as u32, Rate::gbps(gbps), 1))
        .unwrap()
}

fn cfg() -> SimConfig {
    SimConfig {
        lb: LbScheme::Spray,
        ..SimConfig::default()
    }
}

fn snapshot_cost(name: &str, f: &topo::Fabric, workload: &str, run_us: u64) {
    let t = Wall::now();
    let p = plan(f, workload, 400);
    let mut sim = Sim::from_fabric(f, cfg(), &p).unwrap();
    let setup = t.elapsed().as_secs_f64();
    let t = Wall::now();
    sim.run_until(Instant::from_picos(run_us * 1_000_000));
    let ran = t.elapsed().as_secs_f64();
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
        "{name}: {} links, {} ports · set-up {setup:.1} s, {run_us} µs simulated in {ran:.1} s · fabric map {:.2} MB · snapshot: build {:.1} ms, JSON {:.1} ms, {:.2} MB",
        f.num_links(),
        2 * f.num_links(),
        map as f64 / 1e6,
        best.0 * 1e3,
        best.1 * 1e3,
        best.2 as f64 / 1e6
    );
}

/// One run: events processed and wall seconds; with telemetry every `every`.
fn timed_run(f: &topo::Fabric, p: &Workplan, every: Option<Duration>) -> (u64, f64, f64, u64) {
    let mut sim = Sim::from_fabric(f, cfg(), p).unwrap();
    let t = Wall::now();
    let cpu = cpu_s();
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
    let cpu = cpu_s() - cpu;
    (sim.results().run.events, wall, cpu, bytes)
}

/// CPU time (user + system) this process (one thread) has used, s, from `/proc/self/stat`
/// (clock ticks of 10 ms): on a machine shared with other jobs it moves far less than
/// wall time.
fn cpu_s() -> f64 {
    let stat = std::fs::read_to_string("/proc/self/stat").unwrap_or_default();
    // Fields after the command name (which ends with ')'): state, ppid, …, utime is the
    // 12th and stime the 13th (tpgid may be -1, so index rather than filter).
    let rest = stat.rsplit_once(')').map_or("", |(_, r)| r);
    let f: Vec<&str> = rest.split_whitespace().collect();
    let tick = |i: usize| f.get(i).and_then(|x| x.parse::<u64>().ok());
    match (tick(11), tick(12)) {
        (Some(u), Some(s)) => (u + s) as f64 / 100.0,
        _ => f64::NAN,
    }
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
    let k16 = topo::generators::fat_tree(16, topo::Rate::gbps(100)).unwrap();
    let p = plan(
        &k16,
        "[[workload]]\nkind = \"permutation\"\nsize = \"2MB\"\n",
        100,
    );
    let (mut plain, mut with, mut plain_cpu, mut with_cpu) = (vec![], vec![], vec![], vec![]);
    for r in 0..rounds {
        let (ev, w, c, _) = timed_run(&k16, &p, None);
        let (ev2, w2, c2, bytes) = timed_run(&k16, &p, Some(Duration::micros(10)));
        assert_eq!(ev, ev2, "telemetry must not change the run");
        plain.push(ev as f64 / w);
        with.push(ev2 as f64 / w2);
        plain_cpu.push(ev as f64 / c);
        with_cpu.push(ev2 as f64 / c2);
        println!(
            "round {r}: {ev} events; without {w:.2} s wall / {c:.2} s CPU, with {w2:.2} s wall / {c2:.2} s CPU ({:.1} MB of JSON lines)",
            bytes as f64 / 1e6
        );
    }
    for (what, a, b) in [
        ("wall", &mut plain, &mut with),
        ("CPU", &mut plain_cpu, &mut with_cpu),
    ] {
        let (a, b) = (median(a), median(b));
        println!(
            "k=16 permutation, telemetry every 10 µs, {what} time: {:.2} vs {:.2} M events/s → ratio {:.3} (medians of {rounds})",
            b / 1e6,
            a / 1e6,
            b / a
        );
    }
    let all = "[[workload]]\nkind = \"permutation\"\nsize = \"1MB\"\n";
    let k24 = topo::presets::build("fat-tree-k24").unwrap();
    snapshot_cost("fat-tree-k24", &k24, all, 5);
    let mut spec = topo::generators::fat_tree_spec(40, topo::Rate::gbps(400));
    spec.name = "mp8-k40".into();
    spec.planes[0].copies = 8;
    spec.hosts.nics_per_server = 8;
    spec.hosts.gpus_per_server = 8;
    spec.hosts.servers = Some(12_800);
    // NIC i of a server is in plane i: one permutation per plane.
    let mut per_plane = String::new();
    for plane in 0..8 {
        let hosts: Vec<String> = (0..12_800).map(|s| (8 * s + plane).to_string()).collect();
        per_plane += &format!(
            "[[workload]]\nkind = \"permutation\"\nhosts = [{}]\nsize = \"1MB\"\n",
            hosts.join(",")
        );
    }
    let mp8 = spec.build("bench").unwrap();
    snapshot_cost("mp8-k40 (8 planes, 102,400 GPUs)", &mp8, &per_plane, 2);
}
