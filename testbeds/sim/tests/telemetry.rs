//! Live telemetry: a run stepped with `run_until` and sampled with snapshots gives the
//! same results as one `run()`, its counters only grow, the last snapshot equals the
//! results, events say what happened, and snapshots are reproducible.
//! (Run optimised: `cargo test -p sim --profile ci --test telemetry`.)

use cc_algos::{Bytes, Duration, Instant, Rate, RedEcn};
use fabric_api::{Column, EventKind, FabricInfo, Frame, Snapshot};
use scenario::{CompileCtx, Scenario, Workplan};
use sim::{LbScheme, RunState, Sim, SimConfig, SimResults};

fn fat_tree(k: u32) -> topo::Fabric {
    topo::generators::fat_tree(k, topo::Rate::gbps(100)).unwrap()
}

fn plan(toml: &str, hosts: u32) -> Workplan {
    Scenario::from_toml_str(toml, "test.toml")
        .unwrap()
        .compile(&CompileCtx::new(hosts, Rate::gbps(100), 1))
        .unwrap()
}

fn incast_cfg() -> SimConfig {
    SimConfig {
        cc: "dcqcn".parse().unwrap(),
        pfc: true,
        ecn: Some(RedEcn::dcqcn_paper()),
        pfc_xoff: Bytes(30_000),
        pfc_xon: Bytes(15_000),
        ..SimConfig::default()
    }
}

/// A failure injected while running: link `link` down at `at`, back at `back`.
#[derive(Clone, Copy)]
struct Inject {
    link: topo::LinkId,
    at: Instant,
    back: Instant,
}

/// Steps a run every `step`, taking a snapshot each time (and one at the end).
fn stepped(
    f: &topo::Fabric,
    cfg: SimConfig,
    p: &Workplan,
    step: Duration,
    inject: Option<Inject>,
) -> (SimResults, Vec<Snapshot>, Vec<fabric_api::Event>) {
    let mut sim = Sim::from_fabric(f, cfg, p).unwrap();
    sim.enable_events();
    let mut snaps = vec![sim.take_snapshot()];
    let mut t = Instant::ZERO;
    let mut failure = None;
    loop {
        t += step;
        if let Some(j) = inject {
            // Inject exactly at the chosen instants (they fall on step boundaries).
            if t == j.at {
                sim.run_until(t);
                failure = Some(sim.fail_link(j.link, Duration::micros(10)).unwrap());
            } else if t == j.back {
                sim.run_until(t);
                sim.restore_failure(failure.unwrap()).unwrap();
            }
        }
        let state = sim.run_until(t);
        snaps.push(sim.take_snapshot());
        if state == RunState::Finished {
            break;
        }
    }
    let r = sim.results();
    assert_eq!(r, sim.results(), "results read twice are the same");
    (r, snaps, sim.drain_events())
}

/// The same run in one go (failures injected at the same instants).
fn in_one_go(f: &topo::Fabric, cfg: SimConfig, p: &Workplan, inject: Option<Inject>) -> SimResults {
    let mut sim = Sim::from_fabric(f, cfg, p).unwrap();
    if let Some(j) = inject {
        sim.run_until(j.at);
        let i = sim.fail_link(j.link, Duration::micros(10)).unwrap();
        sim.run_until(j.back);
        sim.restore_failure(i).unwrap();
    }
    sim.run()
}

fn col(c: &Option<Column>) -> &Column {
    c.as_ref().expect("the simulator measures this counter")
}

/// Counters never decrease from one snapshot to the next; the deltas add up to the
/// last snapshot, and the last snapshot equals the results.
fn check_against_results(info: &FabricInfo, snaps: &[Snapshot], r: &SimResults) {
    let lossy = r.totals.drops_failure > 0;
    let n = info.ports.len();
    for s in snaps {
        s.validate(info).unwrap();
    }
    for w in snaps.windows(2) {
        assert!(w[1].time.ns >= w[0].time.ns);
        for (name, c) in w[1].counters.columns() {
            let before = w[0]
                .counters
                .columns()
                .into_iter()
                .find(|(m, _)| *m == name)
                .map(|(_, c)| c.clone());
            let before = before.unwrap_or_else(|| Column::zeros(n));
            for i in 0..n {
                assert!(
                    c.get(i) >= before.get(i),
                    "{name}[{i}] went down between snapshots {} and {}",
                    w[0].seq,
                    w[1].seq
                );
            }
        }
    }
    let last = snaps.last().unwrap();
    // Sum of deltas from zero = the last snapshot, per counter.
    let summed = |pick: fn(&Snapshot) -> &Option<Column>, i: usize| -> u64 {
        snaps
            .windows(2)
            .map(|w| col(pick(&w[1])).get(i) - col(pick(&w[0])).get(i))
            .sum::<u64>()
            + col(pick(&snaps[0])).get(i)
    };
    let mut pfc_rx_total = 0;
    for l in &r.links {
        let i = info
            .ports
            .iter()
            .position(|p| p.node == l.node && p.port == l.port)
            .unwrap();
        assert_eq!(
            summed(|s| &s.counters.tx_bytes, i),
            l.tx_bytes,
            "tx_bytes port {i}"
        );
        assert_eq!(summed(|s| &s.counters.tx_pkts, i), l.tx_pkts);
        assert_eq!(summed(|s| &s.counters.drops_buffer, i), l.drops);
        assert_eq!(summed(|s| &s.counters.ecn_marks, i), l.ecn_marks);
        assert_eq!(summed(|s| &s.counters.trims, i), l.trims);
        let rx: u64 = last.counters.pfc_rx.values().map(|c| c.get(i)).sum();
        assert_eq!(rx, l.pauses_rcvd);
        pfc_rx_total += rx;
        let paused_ns = col(&last.counters.paused_ns).get(i);
        assert!(
            (paused_ns as f64 / 1e3 - l.paused_us).abs() < 1e-3,
            "paused {paused_ns} ns vs {} us",
            l.paused_us
        );
    }
    let t = &last.totals;
    assert_eq!(t.drops_buffer, r.totals.drops_buffer);
    assert_eq!(t.drops_failure, r.totals.drops_failure);
    assert_eq!(t.drops_no_route, r.totals.drops_noroute);
    assert_eq!(t.ecn_marks, r.totals.ecn_marks);
    assert_eq!(t.trims, r.totals.trims);
    assert_eq!(t.pfc_tx, r.totals.pauses_sent + r.totals.resumes_sent);
    assert_eq!(t.pfc_rx, pfc_rx_total);
    assert_eq!(t.cnps, r.totals.cnps);
    assert_eq!(t.flows_finished as usize, r.fct.finished);
    // Every frame sent arrives at the peer port (the run ended drained), except the
    // ones lost in flight on a failed link.
    if lossy {
        assert!(t.rx_bytes < t.tx_bytes);
    } else {
        assert_eq!(t.rx_bytes, t.tx_bytes);
    }
}

fn check_run(
    name: &str,
    f: &topo::Fabric,
    cfg: SimConfig,
    p: &Workplan,
    inject: Option<Inject>,
) -> Vec<fabric_api::Event> {
    let whole = in_one_go(f, cfg.clone(), p, inject);
    let (r, snaps, events) = stepped(f, cfg.clone(), p, Duration::micros(5), inject);
    assert_eq!(r, whole, "{name}: stepping and snapshots changed the run");
    assert!(snaps.len() > 5, "{name}: only {} snapshots", snaps.len());
    let info = Sim::from_fabric(f, cfg, p).unwrap().fabric_info();
    check_against_results(&info, &snaps, &r);
    let finished = events
        .iter()
        .filter(|e| matches!(e.what, EventKind::FlowFinished { .. }))
        .count();
    assert_eq!(
        finished, r.fct.finished,
        "{name}: one flow-finished event per finished flow"
    );
    events
}

#[test]
fn incast_snapshots_add_up_to_the_results() {
    let f = fat_tree(4);
    let p = plan(
        "[[workload]]\nkind = \"incast\"\nsenders = \"1..8\"\nreceiver = 0\nsize = \"300KB\"\n",
        16,
    );
    let r = in_one_go(&f, incast_cfg(), &p, None);
    assert!(
        r.totals.pauses_sent > 0 && r.totals.ecn_marks > 0,
        "the incast must exercise PFC and ECN: {:?}",
        r.totals
    );
    check_run("incast", &f, incast_cfg(), &p, None);
}

#[test]
fn permutation_snapshots_add_up_to_the_results() {
    let f = fat_tree(4);
    let p = plan(
        "[[workload]]\nkind = \"permutation\"\nsize = \"500KB\"\n",
        16,
    );
    let cfg = SimConfig {
        lb: LbScheme::Spray,
        ..SimConfig::default()
    };
    check_run("permutation", &f, cfg, &p, None);
}

#[test]
fn injected_failure_is_rerouted_and_reported() {
    let f = fat_tree(4);
    let leaf = topo::NodeId(16);
    let up = f.port_link(leaf, 2); // the leaf's first uplink
    let p = plan("[[workload]]\nkind = \"permutation\"\nsize = \"1MB\"\n", 16);
    let cfg = SimConfig {
        lb: LbScheme::Spray,
        rto: Some(Duration::micros(100)),
        ..SimConfig::default()
    };
    let inject = Inject {
        link: up,
        at: Instant::from_picos(20_000_000),
        back: Instant::from_picos(200_000_000),
    };
    let events = check_run("failure", &f, cfg, &p, Some(inject));
    let kinds: Vec<&EventKind> = events
        .iter()
        .map(|e| &e.what)
        .filter(|k| !matches!(k, EventKind::FlowFinished { .. }))
        .collect();
    assert_eq!(kinds.len(), 4, "{kinds:?}");
    assert!(
        matches!(kinds[0], EventKind::LinkDown { link, detect_ns: Some(10_000), .. } if *link == up)
    );
    let EventKind::Reroute {
        links,
        switches_changed,
        unreachable_pairs,
        repaired_ns,
    } = kinds[1]
    else {
        panic!("{:?}", kinds[1])
    };
    assert_eq!(
        (links.as_slice(), *repaired_ns, *unreachable_pairs),
        (&[up][..], 10_000, Some(0))
    );
    let changed = switches_changed.as_ref().unwrap();
    assert!(
        changed.contains(&leaf.0),
        "the leaf that lost an uplink re-routes: {changed:?}"
    );
    assert!(matches!(kinds[2], EventKind::LinkUp { link, .. } if *link == up));
    assert!(matches!(kinds[3], EventKind::Reroute { .. }));
    // Events carry the snapshot they belong to and come in time order.
    assert!(
        events
            .windows(2)
            .all(|w| w[0].time.ns <= w[1].time.ns && w[0].seq <= w[1].seq)
    );
    assert_eq!(
        events
            .iter()
            .find(|e| matches!(e.what, EventKind::LinkDown { .. }))
            .unwrap()
            .time
            .ns,
        20_000
    );
}

#[test]
fn snapshots_are_reproducible_for_a_seed() {
    let f = fat_tree(4);
    let p = plan(
        "[[workload]]\nkind = \"permutation\"\nsize = \"300KB\"\n",
        16,
    );
    let cfg = |seed| SimConfig {
        seed,
        lb: LbScheme::Spray,
        cc: "dcqcn".parse().unwrap(),
        pfc: true,
        ..SimConfig::default()
    };
    let lines = |seed| {
        let (_, snaps, events) = stepped(&f, cfg(seed), &p, Duration::micros(7), None);
        let mut out: Vec<String> = snaps
            .into_iter()
            .map(|s| Frame::Snapshot(s).to_json_line())
            .collect();
        out.extend(events.into_iter().map(|e| Frame::Event(e).to_json_line()));
        out
    };
    let a = lines(3);
    assert_eq!(a, lines(3));
    assert_ne!(a, lines(4));
}

#[test]
fn repeating_workloads_keep_going_until_the_stop_time() {
    let f = fat_tree(4);
    let p = plan(
        "[[workload]]\nkind = \"incast\"\nsenders = \"1..5\"\nreceiver = 0\nsize = \"64KB\"\n\
         [[workload]]\nkind = \"permutation\"\nhosts = \"8..16\"\nsize = \"64KB\"\n",
        16,
    );
    let cfg = SimConfig {
        stop: Some(Instant::from_picos(1_000_000_000)),
        lb: LbScheme::Spray,
        ..SimConfig::default()
    };
    let make = || {
        let mut sim = Sim::from_fabric(&f, cfg.clone(), &p).unwrap();
        sim.set_repeat(Duration::micros(100)).unwrap();
        sim
    };
    let whole = make().run();
    let mut sim = make();
    sim.enable_events();
    let info = sim.fabric_info();
    let mut snaps = vec![];
    let mut t = Instant::ZERO;
    while sim.run_until(t) == RunState::Running {
        snaps.push(sim.take_snapshot());
        t += Duration::micros(50);
    }
    snaps.push(sim.take_snapshot());
    let r = sim.results();
    assert_eq!(r, whole, "stepping a repeating run changes nothing");
    assert_eq!(r.run.end_us, 1000.0, "the run ends at the stop time");
    // Two workloads, each restarted at most once per 100 µs period, and more than once.
    let repeats = r.totals.workload_repeats;
    assert!((4..=20).contains(&repeats), "{repeats} restarts");
    let finished = sim
        .drain_events()
        .iter()
        .filter(|e| matches!(e.what, EventKind::FlowFinished { .. }))
        .count();
    assert!(
        finished as u64 >= p.flows.len() as u64 * 3,
        "{finished} flow completions"
    );
    for w in snaps.windows(2) {
        w[1].validate(&info).unwrap();
        assert!(w[1].totals.tx_bytes >= w[0].totals.tx_bytes);
    }
    // Refused set-ups.
    let mut no_stop = Sim::from_fabric(&f, SimConfig::default(), &p).unwrap();
    assert!(
        no_stop
            .set_repeat(Duration::ZERO)
            .unwrap_err()
            .to_string()
            .contains("stop time")
    );
    let rccc = SimConfig {
        cc: "rccc".parse().unwrap(),
        ..cfg.clone()
    };
    let e = Sim::from_fabric(&f, rccc, &p)
        .unwrap()
        .set_repeat(Duration::ZERO)
        .unwrap_err();
    assert!(e.to_string().contains("rccc"), "{e}");
}

#[test]
fn failures_by_name_and_bad_requests() {
    let f = fat_tree(4);
    let p = plan(
        "[[workload]]\nkind = \"permutation\"\nsize = \"200KB\"\n",
        16,
    );
    let mut sim = Sim::from_fabric(
        &f,
        SimConfig {
            lb: LbScheme::Spray,
            ..SimConfig::default()
        },
        &p,
    )
    .unwrap();
    sim.enable_events();
    sim.run_until(Instant::from_picos(10_000_000));
    let agg = f.node_name(topo::NodeId(24)).to_string();
    let i = sim.fail_switch(&agg, Duration::micros(5)).unwrap();
    assert!(
        sim.fail_switch("nope", Duration::ZERO)
            .unwrap_err()
            .to_string()
            .contains("no switch named `nope`")
    );
    assert!(
        sim.fail_switch(f.node_name(topo::NodeId(0)), Duration::ZERO)
            .is_err(),
        "a host is not a switch"
    );
    assert!(
        sim.fail_link(topo::LinkId(1 << 20), Duration::ZERO)
            .unwrap_err()
            .to_string()
            .contains("does not exist")
    );
    sim.run_until(Instant::from_picos(30_000_000));
    sim.restore_failure(i).unwrap();
    assert!(
        sim.restore_failure(i)
            .unwrap_err()
            .to_string()
            .contains("already restored")
    );
    let s = sim.snapshot();
    assert!(
        !s.gauges.oper_down.is_empty(),
        "the switch's ports are down until the restore event runs"
    );
    let r = sim.run();
    assert_eq!(r.fct.unfinished, 0);
    assert_eq!((r.totals.failures, r.totals.reroutes), (1, 2));
    assert!(sim.snapshot().gauges.oper_down.is_empty());
    let kinds: Vec<EventKind> = sim
        .drain_events()
        .into_iter()
        .map(|e| e.what)
        .filter(|k| !matches!(k, EventKind::FlowFinished { .. }))
        .collect();
    assert!(
        matches!(kinds[0], EventKind::SwitchDown { node: 24, .. }),
        "{kinds:?}"
    );
    assert!(
        matches!(kinds[2], EventKind::SwitchUp { node: 24, .. }),
        "{kinds:?}"
    );
    assert!(
        sim.fail_link(topo::LinkId(0), Duration::ZERO)
            .unwrap_err()
            .to_string()
            .contains("finished")
    );
}

/// The re-route event's switches are exactly those whose next hops toward some host
/// changed, computed here independently with `topo`'s tables before and after.
#[test]
fn reroute_names_exactly_the_switches_whose_tables_changed() {
    let f = fat_tree(8);
    let leaf = topo::NodeId(128);
    let up = f.port_link(leaf, 4); // the leaf's first uplink (4 down ports on k=8)
    let before = topo::Routes::compute(&f);
    let mut after = before.clone();
    after.fail_links(&f, &[up]);
    let expected: Vec<u32> = f
        .switches()
        .filter(|&s| {
            f.hosts()
                .any(|d| before.next_hops(s, d) != after.next_hops(s, d))
        })
        .map(|s| s.0)
        .collect();
    assert!(!expected.is_empty() && expected.len() < f.num_switches());
    let p = plan(
        "[[workload]]\nkind = \"permutation\"\nsize = \"100KB\"\n",
        128,
    );
    let mut sim = Sim::from_fabric(&f, SimConfig::default(), &p).unwrap();
    sim.enable_events();
    sim.run_until(Instant::from_picos(5_000_000));
    sim.fail_link(up, Duration::micros(2)).unwrap();
    sim.run_until(Instant::from_picos(10_000_000));
    let changed = sim
        .drain_events()
        .into_iter()
        .find_map(|e| match e.what {
            EventKind::Reroute {
                switches_changed, ..
            } => switches_changed,
            _ => None,
        })
        .expect("a reroute event with the switches changed");
    assert_eq!(changed, expected);
}

/// A host whose only link fails can neither send nor receive: 2 × 15 pairs on a k=4
/// fat-tree; the restore brings them back.
#[test]
fn unreachable_pairs_count_a_cut_off_host() {
    let f = fat_tree(4);
    let host_link = f.port_link(topo::NodeId(0), 0);
    let p = plan(
        "[[workload]]\nkind = \"permutation\"\nhosts = \"4..16\"\nsize = \"100KB\"\n",
        16,
    );
    let mut sim = Sim::from_fabric(&f, SimConfig::default(), &p).unwrap();
    sim.enable_events();
    sim.run_until(Instant::from_picos(1_000_000));
    let i = sim.fail_link(host_link, Duration::micros(1)).unwrap();
    sim.run_until(Instant::from_picos(5_000_000));
    sim.restore_failure(i).unwrap();
    sim.run();
    let counts: Vec<Option<u64>> = sim
        .drain_events()
        .into_iter()
        .filter_map(|e| match e.what {
            EventKind::Reroute {
                unreachable_pairs, ..
            } => Some(unreachable_pairs),
            _ => None,
        })
        .collect();
    assert_eq!(counts, vec![Some(30), Some(0)]);
}

/// A hand-made net (no `topo` fabric) gets a fabric map of its own: every port once, the
/// two ends of a link next to each other, names the failure calls accept.
#[test]
fn hand_made_nets_have_a_fabric_map() {
    let net = sim::net::NetBuilder::star(4, Rate::gbps(100), Duration::nanos(500));
    let p = plan(
        "[[workload]]\nkind = \"incast\"\nsenders = \"1..4\"\nreceiver = 0\nsize = \"50KB\"\n",
        4,
    );
    let mut sim = Sim::from_net(net, SimConfig::default(), &p).unwrap();
    let info = sim.fabric_info();
    info.validate().unwrap();
    assert_eq!(info.ports.len(), 8);
    for (i, port) in info.ports.iter().enumerate() {
        let peer = &info.ports[i ^ 1];
        assert_eq!(
            (port.peer, port.peer_port, port.link),
            (Some(peer.node), Some(peer.port), peer.link)
        );
    }
    assert_eq!(info.nodes[4].name, "switch4");
    sim.run_until(Instant::from_picos(2_000_000));
    sim.snapshot().validate(&info).unwrap();
    sim.fail_switch("switch4", Duration::micros(1)).unwrap();
    sim.run_until(Instant::from_picos(3_000_000));
    assert_eq!(
        sim.snapshot().gauges.oper_down,
        (0..8).collect::<Vec<u32>>()
    );
}
