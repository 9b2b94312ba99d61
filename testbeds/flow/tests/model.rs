//! Known answers of the flow model on small fabrics.

use flow_model::LoadBalance;
use flow_model::eval::{Evaluator, Job};
use flow_model::traffic::Pattern;
use topo::{NodeId, Rate, Routes, generators};

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() <= 1e-9 * b.abs().max(1.0)
}

#[test]
fn incast_shares_the_receiver_link() {
    let f = generators::fat_tree(4, Rate::gbps(100)).unwrap();
    let r = Routes::compute(&f);
    let senders: Vec<NodeId> = (1..16).map(NodeId).collect();
    let job = Job {
        name: "incast".into(),
        pattern: Pattern::Incast {
            senders,
            receiver: NodeId(0),
        },
        bytes: 1e6,
    };
    let e = Evaluator::default().evaluate(&f, &r, &[job], LoadBalance::Ecmp { seed: 1 }, 3);
    let j = &e.jobs[0];
    assert!(close(j.min_rate_bps, 100e9 / 15.0));
    assert!(close(j.time_s, 15.0 * 1e6 * 8.0 / 100e9));
    // the receiver's host link is the busiest, fully used
    assert_eq!(e.busiest[0].to, f.node_name(NodeId(0)));
    assert!(close(e.busiest[0].utilisation, 1.0));
}

#[test]
fn permutation_spray_runs_at_line_rate_ecmp_collides() {
    let f = generators::fat_tree(8, Rate::gbps(100)).unwrap();
    let r = Routes::compute(&f);
    let hosts: Vec<NodeId> = f.hosts().collect();
    let job = Job {
        name: "perm".into(),
        pattern: Pattern::Permutation { hosts, seed: 5 },
        bytes: 1e6,
    };
    let mut ev = Evaluator::default();
    let s = ev.evaluate(&f, &r, std::slice::from_ref(&job), LoadBalance::Spray, 1);
    assert!(
        close(s.jobs[0].time_s, 1e6 * 8.0 / 100e9),
        "{:?}",
        s.jobs[0]
    );
    let e = ev.evaluate(
        &f,
        &r,
        std::slice::from_ref(&job),
        LoadBalance::Ecmp { seed: 1 },
        1,
    );
    assert!(
        e.jobs[0].time_s > s.jobs[0].time_s * 1.5,
        "hash collisions slow ECMP: {:?}",
        e.jobs[0]
    );
    let a = ev.evaluate(
        &f,
        &r,
        std::slice::from_ref(&job),
        LoadBalance::Adaptive { seed: 1 },
        1,
    );
    assert!(
        a.jobs[0].time_s < e.jobs[0].time_s,
        "adaptive beats ECMP: {:?}",
        a.jobs[0]
    );
}

#[test]
fn all_to_all_and_tree_on_a_full_bisection_fabric() {
    let f = generators::fat_tree(4, Rate::gbps(100)).unwrap();
    let r = Routes::compute(&f);
    let hosts: Vec<NodeId> = f.hosts().collect();
    let mut ev = Evaluator::default();
    let a2a = Job {
        name: "a2a".into(),
        pattern: Pattern::AllToAll {
            hosts: hosts.clone(),
        },
        bytes: 15e6,
    };
    let e = ev.evaluate(&f, &r, &[a2a], LoadBalance::Spray, 1);
    // each host sends 15 MB (1 MB to each of 15 peers) through its 100G link
    assert!(
        close(e.jobs[0].time_s, 15e6 * 8.0 / 100e9),
        "{:?}",
        e.jobs[0]
    );
    assert!(close(e.jobs[0].busbw_bytes_per_s, 12.5e9 * 15.0 / 16.0));
    let tree = Job {
        name: "tree".into(),
        pattern: Pattern::TreeAllReduce { ranks: hosts },
        bytes: 1e9,
    };
    let t = ev.evaluate(&f, &r, &[tree], LoadBalance::Spray, 1);
    // an inner node of both trees sends to its parent and two children: 3 flows share
    // its link in the worst case; time = (bytes / 2) / rate
    assert!(t.jobs[0].time_s >= 0.5 * 8e9 / 100e9 - 1e-12);
    assert!(t.jobs[0].busbw_bytes_per_s > 0.0);
}

#[test]
fn hierarchical_on_multi_plane_and_unroutable_cross_plane_ring() {
    let f = topo::presets::build("deepseek-mpft").unwrap();
    let r = Routes::compute(&f);
    let ranks: Vec<NodeId> = (0..64 * 8).map(NodeId).collect(); // 64 servers
    let mut ev = Evaluator::default();
    let h = Job {
        name: "h".into(),
        pattern: Pattern::Hierarchical {
            ranks: ranks.clone(),
            scale_up_bps: 3.6e12,
        },
        bytes: 1e9,
    };
    let e = ev.evaluate(&f, &r, &[h], LoadBalance::Ecmp { seed: 1 }, 1);
    // 64 domains of 8 GPUs; rail rings at 400G each carry bytes/8:
    // net = 2·63/64 · 1e9/8 · 8 / 400e9; scale-up = 2·7/8 · 8e9 / 3.6e12 (smaller)
    let net = 2.0 * 63.0 / 64.0 * 1e9 / 8.0 * 8.0 / 400e9;
    assert!(close(e.jobs[0].time_s, net), "{:?}", e.jobs[0]);
    assert_eq!(e.jobs[0].flows, 8 * 64);
    // a flat ring through NICs of different planes has no path in a multi-plane fabric
    let ring = Job {
        name: "r".into(),
        pattern: Pattern::RingAllReduce { ranks },
        bytes: 1e9,
    };
    let e = ev.evaluate(&f, &r, &[ring], LoadBalance::Ecmp { seed: 1 }, 1);
    assert!(e.jobs[0].unroutable > 0 && e.jobs[0].time_s.is_infinite());
    assert_eq!(e.jobs[0].busbw_bytes_per_s, 0.0);
}

#[test]
fn failed_links_slow_ecmp_jobs_and_two_jobs_share() {
    let f = generators::fat_tree(4, Rate::gbps(100)).unwrap();
    let mut r = Routes::compute(&f);
    let ranks: Vec<NodeId> = f.hosts().collect();
    let ring = |name: &str, ranks: Vec<NodeId>| Job {
        name: name.into(),
        pattern: Pattern::RingAllReduce { ranks },
        bytes: 1e9,
    };
    let mut ev = Evaluator::default();
    // two rings over the same hosts share every host link: half the rate each
    let both = ev.evaluate(
        &f,
        &r,
        &[ring("a", ranks.clone()), ring("b", ranks.clone())],
        LoadBalance::Spray,
        1,
    );
    assert!(close(both.jobs[0].min_rate_bps, 50e9) && close(both.jobs[1].min_rate_bps, 50e9));
    // cut both uplinks of host 0's leaf but one: the ring still runs; cut all: no path
    let leaf = f.attachment(NodeId(0), 0).unwrap().leaf;
    r.fail_links(&f, &[f.port_link(leaf, 2), f.port_link(leaf, 3)]);
    let e = ev.evaluate(&f, &r, &[ring("a", ranks)], LoadBalance::Spray, 1);
    assert!(e.jobs[0].unroutable > 0);
}
