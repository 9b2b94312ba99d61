//! The noisy-neighbour scenarios (scenarios/noisy-*.toml) on a k=8 fat-tree: tenant B's
//! ring all-reduce beside tenant A's 15:1 incast, with one shared class, with per-tenant
//! classes and ETS, each with ECMP and with spraying. Asserts B's slowdown and how far
//! A's PFC pauses reach B's hosts (docs/tenants.md has the table this prints).
//! (Run optimised in CI: `cargo test -p sim --profile ci --test sim_noisy`.)

use cc_algos::RedEcn;
use scenario::{CompileCtx, Scenario, Workplan};
use sim::{LbScheme, Sim, SimConfig, SimResults};

mod common;
use common::fat_tree;

fn plan(name: &str, hosts: u32) -> Workplan {
    let path = format!("{}/../../scenarios/{name}.toml", env!("CARGO_MANIFEST_DIR"));
    Scenario::from_file(std::path::Path::new(&path))
        .unwrap()
        .compile(&CompileCtx::new(hosts, cc_algos::Rate::gbps(100), 1))
        .unwrap()
}

/// What B sees in one run.
#[derive(Debug)]
struct Row {
    /// B's all-reduce time, µs.
    b_us: f64,
    /// PAUSE frames B's hosts' NICs received, and the time they spent paused (µs).
    b_pauses: u64,
    b_paused_us: f64,
    drops: u64,
}

fn run(name: &str, lb: LbScheme) -> Row {
    let f = fat_tree(8);
    let p = plan(name, f.num_hosts() as u32);
    let mut cfg = SimConfig {
        cc: "dcqcn".parse().unwrap(),
        ecn: Some(RedEcn::dcqcn_paper()),
        lb,
        ..SimConfig::default()
    };
    cfg.apply(&p.network).unwrap();
    let r: SimResults = Sim::from_fabric(&f, cfg, &p).unwrap().run();
    let g = r.groups.iter().find(|g| g.name.starts_with("B ")).unwrap();
    assert_eq!(g.unfinished, 0, "{name}: B unfinished");
    let hosts: Vec<u32> = f.hosts().map(|h| h.0).collect();
    let b_hosts: Vec<u32> = [1, 31, 2, 47, 3, 63, 79, 95].map(|i| hosts[i]).to_vec();
    let b_links = r
        .links
        .iter()
        .filter(|l| l.node_tier == 0 && b_hosts.contains(&l.node));
    let (b_pauses, b_paused_us) =
        b_links.fold((0, 0.0), |(n, t), l| (n + l.pauses_rcvd, t + l.paused_us));
    Row {
        b_us: g.end_us.unwrap() - g.start_us,
        b_pauses,
        b_paused_us,
        drops: r.totals.drops,
    }
}

#[test]
fn per_tenant_classes_and_ets_shield_b_from_a_incast() {
    let mut rows = Vec::new();
    for (lb, lb_name) in [(LbScheme::Ecmp, "ecmp"), (LbScheme::Spray, "spray")] {
        let alone = run("noisy-alone", lb);
        let shared = run("noisy-shared", lb);
        let ets = run("noisy-ets", lb);
        for (what, r) in [("alone", &alone), ("shared", &shared), ("ets", &ets)] {
            eprintln!(
                "| {lb_name} | {what} | {:.0} | {:.2} | {} | {:.0} | {} |",
                r.b_us,
                r.b_us / alone.b_us,
                r.b_pauses,
                r.b_paused_us,
                r.drops
            );
            assert_eq!(r.drops, 0, "{lb_name} {what}: lossless");
        }
        rows.push((lb_name, alone, shared, ets));
    }
    // Measured (deterministic): spraying 4.11× with one shared class, 1.21× with per-tenant
    // classes and ETS. Bounds leave room for small model changes, not for a lost effect.
    // ECMP rows are printed, not asserted: the simulator keys a connection's ECMP hash by
    // its flow id, so B's ring lands on other paths in each scenario (A's flows come first
    // in two of them) and the ECMP rows measure hash placement as much as isolation (B
    // alone collides with itself: 3,558 µs against 1,278 sprayed). docs/tenants.md.
    let (lb, alone, shared, ets) = &rows[1];
    let (s, e) = (shared.b_us / alone.b_us, ets.b_us / alone.b_us);
    assert!(s > 2.0, "{lb}: one shared class slows B only {s:.2}x");
    assert!(e < 1.35, "{lb}: per-tenant classes + ETS slow B {e:.2}x");
    assert!(
        e < s - 1.0,
        "{lb}: ETS {e:.2}x not clearly below shared {s:.2}x"
    );
    // Sprayed, B alone never fills a queue: every pause its NICs see in the shared class
    // is A's incast spreading; with its own class, none.
    let (_, alone, shared, ets) = &rows[1];
    assert_eq!(alone.b_pauses, 0);
    assert!(
        shared.b_pauses > 0,
        "A's pauses reach B's NICs in one class"
    );
    assert_eq!(
        ets.b_pauses, 0,
        "no pause reaches B's NICs in its own class"
    );
}
