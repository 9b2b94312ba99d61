//! Seeded runs whose results must not change when the engine is made faster: each
//! case's `sim::digest` (events per kind, every flow's times, every port's counters,
//! series) was recorded with the engine of main at commit 0411009, before the
//! "speed at scale" work (docs/sim.md). A change that alters any of them changes the
//! simulation, not only its speed.
//!
//! If a change is *meant* to alter results (a model fix), rerun with
//! `cargo test -p sim --profile ci --test digest_golden -- --nocapture`, check the
//! printed figures, and update the table in the same commit, saying why.

use cc_algos::{Bytes, Duration, Rate, RedEcn, TrimPolicy};
use scenario::{CompileCtx, Scenario, Workplan};
use sim::{LbScheme, Sim, SimConfig};

fn plan(toml: &str, hosts: u32, seed: u64) -> Workplan {
    Scenario::from_toml_str(toml, "golden.toml")
        .unwrap()
        .compile(&CompileCtx::new(hosts, Rate::gbps(100), seed))
        .unwrap()
}

fn fat_tree(k: u32) -> topo::Fabric {
    topo::generators::fat_tree(k, topo::Rate::gbps(100)).unwrap()
}

/// The sim-bench workload (NSCC, trimming, RED 20–80 KB, 128 EVs), smaller.
fn bench_cfg(seed: u64, lb: LbScheme) -> SimConfig {
    SimConfig {
        seed,
        cc: "nscc".parse().unwrap(),
        lb,
        evs: 128,
        ecn: Some(RedEcn::new(Bytes(20_000), Bytes(80_000), 1.0).unwrap()),
        trim: Some(TrimPolicy::new(Bytes(200_000), Bytes(64)).unwrap()),
        ..SimConfig::default()
    }
}

struct Case {
    name: &'static str,
    k: u32,
    toml: String,
    cfg: SimConfig,
    seed: u64,
}

fn cases() -> Vec<Case> {
    let perm = |size: &str| format!("[[workload]]\nkind = \"permutation\"\nsize = \"{size}\"\n");
    let mut v = Vec::new();
    for seed in [1, 2, 3] {
        v.push(Case {
            name: "perm-k4-nscc-spray",
            k: 4,
            toml: perm("400KB"),
            cfg: bench_cfg(seed, LbScheme::Spray),
            seed,
        });
    }
    v.push(Case {
        name: "perm-k8-nscc-spray",
        k: 8,
        toml: perm("1MB"),
        cfg: bench_cfg(4, LbScheme::Spray),
        seed: 4,
    });
    for (name, lb) in [
        ("perm-k6-nscc-reps", LbScheme::Reps),
        ("perm-k6-nscc-bitmap", LbScheme::Bitmap),
        ("perm-k6-nscc-ecmp", LbScheme::Ecmp),
        ("perm-k6-nscc-adaptive", LbScheme::Adaptive),
    ] {
        v.push(Case {
            name,
            k: 6,
            toml: perm("200KB"),
            cfg: bench_cfg(5, lb),
            seed: 5,
        });
    }
    v.push(Case {
        name: "a2a-k4-dcqcn-pfc-spray-sampled",
        k: 4,
        toml: "[[workload]]\nkind = \"all_to_all\"\nsize = \"100KB\"\n".into(),
        cfg: SimConfig {
            seed: 7,
            cc: "dcqcn".parse().unwrap(),
            lb: LbScheme::Spray,
            pfc: true,
            ecn: Some(RedEcn::dcqcn_paper()),
            sample: Some(Duration::micros(10)),
            ..SimConfig::default()
        },
        seed: 7,
    });
    v.push(Case {
        name: "a2a-k4-none-pfc-ecmp",
        k: 4,
        toml: "[[workload]]\nkind = \"all_to_all\"\nsize = \"100KB\"\n".into(),
        cfg: SimConfig {
            seed: 8,
            pfc: true,
            lb: LbScheme::Ecmp,
            pfc_xoff: Bytes(20_000),
            pfc_xon: Bytes(10_000),
            ..SimConfig::default()
        },
        seed: 8,
    });
    v.push(Case {
        name: "incast-k4-dctcp-flowlet",
        k: 4,
        toml:
            "[[workload]]\nkind = \"incast\"\nsenders = \"1..12\"\nreceiver = 0\nsize = \"300KB\"\n"
                .into(),
        cfg: SimConfig {
            seed: 9,
            cc: "dctcp".parse().unwrap(),
            lb: LbScheme::Flowlet,
            ecn: Some(RedEcn::new(Bytes(30_000), Bytes(30_001), 1.0).unwrap()),
            queue_limit: Some(Bytes(200_000)),
            ..SimConfig::default()
        },
        seed: 9,
    });
    v.push(Case {
        name: "incast-k4-rccc-spray",
        k: 4,
        toml:
            "[[workload]]\nkind = \"incast\"\nsenders = \"1..9\"\nreceiver = 0\nsize = \"200KB\"\n"
                .into(),
        cfg: SimConfig {
            seed: 10,
            cc: "rccc".parse().unwrap(),
            lb: LbScheme::Spray,
            trim: Some(TrimPolicy::new(Bytes(100_000), Bytes(64)).unwrap()),
            ..SimConfig::default()
        },
        seed: 10,
    });
    // Host 0's leaf is node 16; its first uplink fails at 20 µs and comes back at 150 µs.
    let f = fat_tree(4);
    let up = f
        .ports(topo::NodeId(16))
        .map(|(peer, _)| peer.0)
        .find(|&p| p > 16)
        .unwrap();
    v.push(Case {
        name: "perm-k4-failure-spray",
        k: 4,
        toml: format!(
            "{}[[failure]]\nat = \"20us\"\nlink = [16, {up}]\ndetect = \"10us\"\nrestore = \"150us\"\n",
            perm("1MB")
        ),
        cfg: SimConfig {
            seed: 11,
            lb: LbScheme::Spray,
            rto: Some(Duration::micros(100)),
            ..bench_cfg(11, LbScheme::Spray)
        },
        seed: 11,
    });
    // The same failure under ECMP: the switches' remembered paths must be dropped when
    // the routes change (engine/paths.rs).
    v.push(Case {
        name: "perm-k4-failure-ecmp",
        k: 4,
        toml: format!(
            "{}[[failure]]\nat = \"20us\"\nlink = [16, {up}]\ndetect = \"10us\"\nrestore = \"150us\"\n",
            perm("1MB")
        ),
        cfg: SimConfig {
            seed: 12,
            rto: Some(Duration::micros(100)),
            ..bench_cfg(12, LbScheme::Ecmp)
        },
        seed: 12,
    });
    v
}

/// `(case, seed, digest)` recorded at main 0411009 (see the module header), re-recorded
/// when the ECMP hash was keyed by (source, destination, connection ordinal) instead of
/// the connection's first flow id (every case moved: spraying's entropy values hash
/// from the same key).
const GOLDEN: &[(&str, u64, u64)] = &[
    ("perm-k4-nscc-spray", 1, 0xafdfc7162ef900f3), // 28407 events, 1568 data pkts, 0 drops, 0 pauses, max FCT 48.6 µs
    ("perm-k4-nscc-spray", 2, 0x278642f8989b8317), // 31898 events, 1568 data pkts, 0 drops, 0 pauses, max FCT 45.3 µs
    ("perm-k4-nscc-spray", 3, 0x5922eff034303ea3), // 29972 events, 1568 data pkts, 0 drops, 0 pauses, max FCT 47.4 µs
    ("perm-k8-nscc-spray", 4, 0xaed2352ce68f6e7e), // 660184 events, 31360 data pkts, 0 drops, 0 pauses, max FCT 111.8 µs
    ("perm-k6-nscc-reps", 5, 0x9bc7a5c8f52eda0f), // 50933 events, 2646 data pkts, 0 drops, 0 pauses, max FCT 30.5 µs
    ("perm-k6-nscc-bitmap", 5, 0x1f77c813f2d8449a), // 50927 events, 2646 data pkts, 0 drops, 0 pauses, max FCT 30.2 µs
    ("perm-k6-nscc-ecmp", 5, 0x3b81e432fe52db2f), // 45467 events, 2784 data pkts, 0 drops, 0 pauses, max FCT 113.6 µs
    ("perm-k6-nscc-adaptive", 5, 0x4625a778f849353b), // 49184 events, 2646 data pkts, 0 drops, 0 pauses, max FCT 29.2 µs
    ("a2a-k4-dcqcn-pfc-spray-sampled", 7, 0x68b80911d183ff7d), // 122721 events, 6000 data pkts, 0 drops, 0 pauses, max FCT 135.5 µs
    ("a2a-k4-none-pfc-ecmp", 8, 0x028693f2960f57fc), // 115145 events, 6000 data pkts, 0 drops, 358 pauses, max FCT 196.7 µs
    ("incast-k4-dctcp-flowlet", 9, 0x0d107f83c6b16764), // 11270 events, 886 data pkts, 72 drops, 0 pauses, max FCT 1409.6 µs
    ("incast-k4-rccc-spray", 10, 0x3f415104428b6bf8), // 8809 events, 604 data pkts, 0 drops, 0 pauses, max FCT 135.5 µs
    ("perm-k4-failure-spray", 11, 0xaec6a27fb6f01b41), // 73793 events, 4025 data pkts, 105 drops, 0 pauses, max FCT 487.5 µs
    // Recorded at main 7813afe, before the ECMP path cache:
    ("perm-k4-failure-ecmp", 12, 0x2d1d811e91c2a241), // 64363 events, 4127 data pkts, 134 drops, 0 pauses, max FCT 746.7 µs
];

#[test]
fn results_unchanged_for_the_same_seed() {
    let mut got = Vec::new();
    for mut c in cases() {
        // The goldens were recorded with the 1 ms retransmit timeout that was the
        // default then (the default is now derived from the network, as htsim's).
        c.cfg.rto = c.cfg.rto.or(Some(Duration::millis(1)));
        let f = fat_tree(c.k);
        let p = plan(&c.toml, f.num_hosts() as u32, c.seed);
        let r = Sim::from_fabric(&f, c.cfg, &p).unwrap().run();
        let d = sim::digest::digest(&r);
        println!(
            "    (\"{}\", {}, 0x{d:016x}), // {} events, {} data pkts, {} drops, {} pauses, max FCT {:.1} µs",
            c.name,
            c.seed,
            r.run.events,
            r.totals.data_pkts,
            r.totals.drops,
            r.totals.pauses_sent,
            r.fct.max_us
        );
        got.push((c.name, c.seed, d));
    }
    assert_eq!(got.len(), GOLDEN.len(), "one golden digest per case");
    for (g, e) in got.iter().zip(GOLDEN) {
        assert_eq!(
            g, e,
            "{} (seed {}): results changed (digest {:016x}, recorded {:016x})",
            g.0, g.1, g.2, e.2
        );
    }
}
