//! Root-only: load balancing by the endpoints on the multi-switch veth fabric — senders
//! that spray every packet over entropy values (`cc-algos` EV policies, as in the
//! simulator) with receivers that accept reordering — against a slowed spine path, and
//! the same scenario in the simulator twin.

use cc_algos::uec::ev::EvPolicyKind;
use cc_algos::{CcKind, Rate};
use scenario::{CompileCtx, Scenario};
use topo::NodeId;
use veth::congestion::fabric::Topology;
use veth::congestion::{CongestionConfig, CongestionReport, twin};
mod common;
use common::{enabled, run_faithful as run, scenario_plan, serial};

const LEAF_SPINE: Topology = Topology::LeafSpine {
    leaves: 2,
    spines: 2,
    hosts_per_leaf: 4,
};

/// Bytes leaf 1 sent toward (spine 0, spine 1), veth.
fn veth_uplinks(r: &CongestionReport) -> (u64, u64) {
    let tx = |peer: &str| {
        r.port_names
            .iter()
            .zip(&r.ports)
            .filter(|(n, _)| n.switch == "leaf1" && n.peer == peer)
            .map(|(_, c)| c.tx_bytes)
            .sum::<u64>()
    };
    (tx("spine0"), tx("spine1"))
}

/// Data bytes leaf 1 sent toward (spine 0, spine 1), simulator.
fn sim_uplinks(s: &sim::SimResults) -> (u64, u64) {
    // Node ids of the 2x2x4 leaf-spine: leaf 1 = 9, spines 10 and 11.
    let tx = |peer: u32| {
        s.links
            .iter()
            .filter(|l| l.node == 9 && l.peer == peer)
            .map(|l| l.data_bytes)
            .sum::<u64>()
    };
    (tx(10), tx(11))
}

fn share((slow, fast): (u64, u64)) -> f64 {
    fast as f64 / (slow + fast).max(1) as f64
}

#[test]
fn reps_moves_most_bytes_off_a_slowed_spine_and_oblivious_spraying_does_not() {
    if !enabled() {
        return;
    }
    let _g = serial();
    let plan = scenario_plan("veth-fabric-reps.toml", 8);
    let f = LEAF_SPINE.fabric(Rate::gbps(100)).unwrap().unwrap();
    assert_eq!(
        (
            f.node_name(NodeId(9)),
            f.node_name(NodeId(10)),
            f.node_name(NodeId(11))
        ),
        ("leaf1", "spine0", "spine1"),
        "the scenario's node ids"
    );
    let mut shares = Vec::new();
    for kind in [EvPolicyKind::Oblivious, EvPolicyKind::Reps] {
        let mut cfg = CongestionConfig::on(LEAF_SPINE);
        cfg.cc = "nscc".parse::<CcKind>().unwrap();
        cfg.spray = Some(kind);
        cfg.apply(&plan.network).unwrap();
        let r = run(&cfg, &plan);
        let s = twin::run_sim(&cfg, &plan, None).unwrap();
        let (v, m) = (veth_uplinks(&r), sim_uplinks(&s));
        let naks: u64 = r.flows.iter().map(|x| x.naks).sum();
        let timeouts: u64 = r.flows.iter().map(|x| x.timeouts).sum();
        eprintln!(
            "{kind:?}: leaf1 -> spine0 / spine1: veth {} / {} B (share via spine1 {:.2}), sim {} / {} B ({:.2}); veth naks {naks} timeouts {timeouts} drops {} marks {} late {:.0}/{:.0} µs; FCT veth {:?} sim {:?}",
            v.0,
            v.1,
            share(v),
            m.0,
            m.1,
            share(m),
            r.total_drops(),
            r.ecn_marks,
            r.switch_max_late_us,
            r.hosts_max_late_us,
            r.flows
                .iter()
                .map(|x| x.completed_us.map(|t| (t - x.start_us) as u64))
                .collect::<Vec<_>>(),
            s.flows
                .iter()
                .map(|x| x.fct_us.map(|t| t as u64))
                .collect::<Vec<_>>(),
        );
        assert!(r.all_completed, "{kind:?}: veth flows complete");
        assert!(
            s.flows.iter().all(|x| x.fct_us.is_some()),
            "{kind:?}: sim flows complete"
        );
        // Reordering is not loss: a sprayed flow is never NAKed without trimming.
        assert_eq!(naks, 0, "{kind:?}: NAKs");
        assert_eq!(r.total_drops(), 0, "{kind:?}: lossless");
        // Completion times agree with the simulator within a factor of 2.
        let c = report::compare::compare(&s.outcome(), &r.outcome()).unwrap();
        eprintln!(
            "{kind:?}: FCT veth/sim median {:.2}×, last {:.2}×",
            c.median_ratio(),
            c.last_ratio()
        );
        assert!(
            (0.5..2.0).contains(&c.last_ratio()),
            "{kind:?}: last FCT veth/sim {:.2}",
            c.last_ratio()
        );
        shares.push((share(v), share(m)));
    }
    let [(obl_v, obl_s), (reps_v, reps_s)] = shares[..] else {
        unreachable!()
    };
    // Oblivious spraying splits evenly, whatever the paths do.
    for (what, x) in [("veth", obl_v), ("sim", obl_s)] {
        assert!(
            (0.4..0.6).contains(&x),
            "{what}: oblivious share via spine 1 {x:.2}"
        );
    }
    // REPS moves most of the bytes to the fast spine, in both, with margin.
    for (what, reps, obl) in [("veth", reps_v, obl_v), ("sim", reps_s, obl_s)] {
        assert!(
            reps > 0.65 && reps > obl + 0.1,
            "{what}: REPS share via spine 1 {reps:.2}, oblivious {obl:.2}"
        );
    }
}

#[test]
fn a_link_rate_override_slows_the_spine_path_like_a_degrade() {
    if !enabled() {
        return;
    }
    let _g = serial();
    // The scenario of the test above with the slow link given as a `[[network.link]]`
    // rate (25 of 100 Gb/s) instead of a `[[degrade]]`.
    let plan = Scenario::from_toml_str(
        "[[workload]]\nkind = \"flows\"\nflow = [ { src = 4, dst = 0, size = \"8MB\" }, { src = 5, dst = 1, size = \"8MB\" } ]\n[network]\nevs = 128\n[[network.link]]\nlink = [9, 10]\nrate = \"25Gbps\"\n",
        "link-override.toml",
    )
    .unwrap()
    .compile(&CompileCtx::new(8, Rate::gbps(100), 1))
    .unwrap();
    let mut cfg = CongestionConfig::on(LEAF_SPINE);
    cfg.cc = "nscc".parse::<CcKind>().unwrap();
    cfg.spray = Some(EvPolicyKind::Reps);
    cfg.apply(&plan.network).unwrap();
    let r = run(&cfg, &plan);
    let s = twin::run_sim(&cfg, &plan, None).unwrap();
    let (v, m) = (share(veth_uplinks(&r)), share(sim_uplinks(&s)));
    eprintln!("link override, REPS: share via spine 1 veth {v:.2}, sim {m:.2}");
    assert!(r.all_completed && r.total_drops() == 0);
    assert!(v > 0.65 && m > 0.65, "veth {v:.2}, sim {m:.2}");
}

/// Last completion time of a run's flows, µs (veth: from each flow's start).
fn last_fct_us(r: &CongestionReport) -> f64 {
    r.flows
        .iter()
        .filter_map(|x| x.completed_us.map(|t| t - x.start_us))
        .fold(0.0, f64::max)
}

#[test]
fn hpcc_with_spraying_keeps_its_rate_because_int_names_the_port() {
    if !enabled() {
        return;
    }
    let _g = serial();
    let plan = scenario_plan("veth-fabric-hpcc-spray.toml", 8);
    let mut last = Vec::new();
    for spray in [None, Some(EvPolicyKind::Oblivious)] {
        let mut cfg = CongestionConfig::on(LEAF_SPINE);
        cfg.cc = "hpcc".parse::<CcKind>().unwrap();
        cfg.spray = spray;
        cfg.apply(&plan.network).unwrap();
        let r = run(&cfg, &plan);
        let s = twin::run_sim(&cfg, &plan, None).unwrap();
        let v = veth_uplinks(&r);
        let c = report::compare::compare(&s.outcome(), &r.outcome()).unwrap();
        eprintln!(
            "{spray:?}: leaf1 -> spine0 / spine1 {} / {} B; drops {} marks {} late {:.0}/{:.0} µs; last FCT veth {:.0} µs, veth/sim last {:.2}× median {:.2}×",
            v.0,
            v.1,
            r.total_drops(),
            r.ecn_marks,
            r.switch_max_late_us,
            r.hosts_max_late_us,
            last_fct_us(&r),
            c.last_ratio(),
            c.median_ratio(),
        );
        assert!(r.all_completed, "{spray:?}: veth flows complete");
        assert_eq!(r.total_drops(), 0, "{spray:?}: lossless");
        if spray.is_some() {
            assert!(
                (0.3..0.7).contains(&share(v)),
                "sprayed flows use both uplinks: share via spine 1 {:.2}",
                share(v)
            );
            // Sprayed, HPCC on veth finishes as its simulator twin does. (On single
            // paths the two hash the flows onto the uplinks differently, so one may
            // take twice as long as the other.)
            assert!(
                (0.5..2.0).contains(&c.last_ratio()),
                "{spray:?}: last FCT veth/sim {:.2}",
                c.last_ratio()
            );
        }
        last.push(last_fct_us(&r));
    }
    // Spraying never costs HPCC its rate: two flows on two uplinks need no more time
    // than on the paths ECMP gave them (both on one uplink at worst).
    let (single, sprayed) = (last[0], last[1]);
    assert!(
        sprayed <= 1.25 * single,
        "HPCC's last FCT sprayed {sprayed:.0} µs against {single:.0} µs on single paths"
    );
}
