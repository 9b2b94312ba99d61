//! HPCC, DCQCN, NSCC and DCTCP on the same incast and all-to-all (docs/sim.md, "HPCC").
//!
//! ```text
//! cargo run --release -p sim --example cc_compare            # k=4 fat-tree, 16 hosts
//! cargo run --release -p sim --example cc_compare -- --k 8   # 128 hosts
//! ```
//! Workloads: incast 8:1 of 1 MB (hosts 1–8 → host 0) and an all-to-all of 64 KB per
//! pair over every host, PFC on (XOFF 64 KB), each algorithm with its switch defaults
//! (`SimConfig::with_cc_defaults`). Prints FCT slowdown, the bottleneck's queue, the
//! bottleneck's utilisation while the incast lasts, ECN marks, PAUSEs and drops.

use sim::{CcChoice, Sim, SimConfig, SimResults};

fn run(f: &topo::Fabric, toml: &str, cc: CcChoice) -> SimResults {
    let hosts = f.num_hosts() as u32;
    let plan = scenario::Scenario::from_toml_str(toml, "cc_compare")
        .and_then(|s| {
            s.compile(&scenario::CompileCtx::new(
                hosts,
                cc_algos::Rate::gbps(100),
                1,
            ))
        })
        .expect("valid scenario");
    let cfg = SimConfig {
        pfc: true,
        ..SimConfig::default().with_cc_defaults(cc)
    };
    Sim::from_fabric(f, cfg, &plan).expect("valid run").run()
}

fn main() {
    let mut k = 4;
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        match (a.as_str(), args.next()) {
            ("--k", Some(v)) => k = v.parse().expect("--k N"),
            _ => {
                eprintln!("usage: cc_compare [--k K]");
                std::process::exit(2);
            }
        }
    }
    let f = topo::generators::fat_tree(k, topo::Rate::gbps(100)).expect("fat-tree");
    let workloads = [
        (
            "incast 8:1 × 1 MB",
            "[[workload]]\nkind = \"incast\"\nsenders = \"1..9\"\nreceiver = 0\nsize = \"1MB\"\n",
        ),
        (
            "all-to-all × 64 KB",
            "[[workload]]\nkind = \"all_to_all\"\nsize = \"64KB\"\n",
        ),
    ];
    println!(
        "| workload | cc | slowdown p50 | slowdown p99 | max FCT µs | bottleneck avg queue KB | max queue KB | bottleneck util | ECN marks | PAUSEs | drops |"
    );
    println!("|---|---|---|---|---|---|---|---|---|---|---|");
    for (name, toml) in workloads {
        for cc in ["hpcc", "dcqcn", "nscc", "dctcp"] {
            let r = run(&f, toml, cc.parse().expect("known algorithm"));
            let b = bottleneck(&r);
            println!(
                "| {name} | {cc} | {:.2} | {:.2} | {:.1} | {:.1} | {:.1} | {:.3} | {} | {} | {} |",
                r.fct.slowdown_p50,
                r.fct.slowdown_p99,
                r.fct.max_us,
                b.avg_queue / 1e3,
                b.max_queue as f64 / 1e3,
                b.tx_bytes as f64 * 8.0 / (b.rate_gbps * 1e3 * r.fct.max_us),
                r.totals.ecn_marks,
                r.totals.pauses_rcvd,
                r.totals.drops
            );
        }
    }
}

/// The switch port into host 0 (the incast's bottleneck).
fn bottleneck(r: &SimResults) -> &sim::results::LinkResult {
    r.links
        .iter()
        .find(|l| l.peer == 0 && l.node_tier > 0)
        .expect("host 0 has a switch port")
}
