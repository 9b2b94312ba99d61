//! Root-only: the congestion testbed on a multi-switch fabric (every switch a userspace
//! switch, one loop for all), with the scenarios only a multi-hop fabric shows.

use cc_algos::pfcwd::{Action, WatchdogConfig};
use cc_algos::{CcKind, DcqcnPreset, Rate};
use scenario::{CompileCtx, Scenario};
use topo::NodeId;
use veth::congestion::fabric::Topology;
use veth::congestion::{CongestionConfig, CongestionReport, StormConfig, twin};
mod common;
use common::{enabled, link_mbps_or, run_faithful as run, scenario_plan, serial};

const LEAF_SPINE: Topology = Topology::LeafSpine {
    leaves: 2,
    spines: 2,
    hosts_per_leaf: 4,
};

fn print_ports(r: &CongestionReport) {
    for (n, c) in r.port_names.iter().zip(&r.ports) {
        eprintln!(
            "{}:p{} -> {}: tx {} rx {} pauses sent {} pfc rx {} paused {} maxq {} drops {} down-drops {}",
            n.switch,
            n.port,
            n.peer,
            c.tx_packets,
            c.rx_packets,
            c.pauses_sent,
            c.pfc_received,
            c.paused_time,
            c.max_queue_bytes,
            c.drops,
            c.link_down_drops
        );
    }
    for f in &r.flows {
        eprintln!(
            "flow {} cnps {} naks {} to {}",
            f.id, f.cnps, f.naks, f.timeouts
        );
        eprintln!(
            "flow {} {}->{} delivered {} fct {:?} gbps {:?}",
            f.id,
            f.src,
            f.dst,
            f.delivered,
            f.completed_us.map(|t| t - f.start_us),
            f.gbps.iter().map(|x| *x as u32).collect::<Vec<_>>()
        );
    }
    eprintln!(
        "drops {} late {} {}",
        r.total_drops(),
        r.switch_max_late_us,
        r.hosts_max_late_us
    );
}

/// Mean of a per-sample series (Gb/s) over samples whose time is in `[from, to)` µs.
fn mean_over(series: &[f64], sample_us: f64, from: f64, to: f64) -> f64 {
    let v: Vec<f64> = series
        .iter()
        .enumerate()
        .filter(|(i, _)| {
            let t = *i as f64 * sample_us;
            t >= from && t < to
        })
        .map(|(_, &x)| x)
        .collect();
    v.iter().sum::<f64>() / v.len().max(1) as f64
}

/// The simulator twin of the head-of-line scenario, on an ECMP seed under which the
/// victim (4 -> 1) shares a spine with incast frames, as the scenario means it to (and as
/// the veth run's placement does, checked by its pauses into host 4). ECMP is a hash in
/// both: with the simulator's default seed and its (source, destination, connection
/// ordinal) key all three cross-leaf incast flows take one spine and the victim the other,
/// and there is no head-of-line blocking to compare. The victim's leaf-1 uplink is the one
/// with its 16 MB; the other carries all 6 MB of cross-leaf incast only when it is alone.
fn hol_twin(cfg: &CongestionConfig, plan: &scenario::Workplan) -> sim::SimResults {
    for seed in [0x5EED, 1, 2, 3, 4, 5, 6, 7] {
        let mut sc = twin::sim_config(cfg);
        sc.sample = Some(cc_algos::Duration::micros(20));
        sc.stop = plan.stop;
        sc.ecmp_seed = seed;
        let s = sim::Sim::from_net(twin::sim_net(cfg).unwrap(), sc, plan)
            .unwrap()
            .run();
        let f = cfg.topology.fabric(cfg.virtual_rate).unwrap().unwrap();
        let l1 = f.attachment(NodeId(4), 0).unwrap().leaf;
        let up: Vec<u64> = s
            .links
            .iter()
            .filter(|l| NodeId(l.node) == l1 && f.tier(NodeId(l.peer)) == 2)
            .map(|l| l.data_bytes)
            .collect();
        if up.iter().copied().min().unwrap_or(0) < 5_000_000 {
            eprintln!("simulator twin: ECMP seed {seed:#x}, leaf 1 uplinks {up:?} B");
            return s;
        }
    }
    panic!("no ECMP seed puts the simulated victim beside the incast");
}

/// PAUSE frames sent on each hop of the victim's way back: leaf 0 to the spines, the
/// spines to leaf 1, leaf 1 to the victim's sender (host 4). (veth, sim).
fn hops(f: &topo::Fabric, r: &CongestionReport, s: &sim::SimResults) -> [(u64, u64); 3] {
    let leaf = |h: u32| f.attachment(NodeId(h), 0).unwrap().leaf;
    let (l0, l1, h4) = (leaf(0), leaf(4), NodeId(4));
    let name = |n: NodeId| f.node_name(n).to_string();
    let veth = |sw: &dyn Fn(&str, u8) -> bool, peer: &dyn Fn(&str) -> bool| {
        r.port_names
            .iter()
            .zip(&r.ports)
            .filter(|(n, _)| sw(&n.switch, n.tier) && peer(&n.peer))
            .map(|(_, c)| c.pauses_sent)
            .sum::<u64>()
    };
    let simc = |sw: &dyn Fn(NodeId) -> bool, peer: &dyn Fn(NodeId) -> bool| {
        s.links
            .iter()
            .filter(|l| sw(NodeId(l.node)) && peer(NodeId(l.peer)))
            .map(|l| l.pauses_sent)
            .sum::<u64>()
    };
    let spine = |n: NodeId| f.tier(n) == 2;
    [
        (
            veth(&|s, _| s == name(l0), &|p| f.tier(f.name_index()[p]) == 2),
            simc(&|n| n == l0, &spine),
        ),
        (
            veth(&|_, t| t == 2, &|p| p == name(l1)),
            simc(&spine, &|n| n == l1),
        ),
        (
            veth(&|s, _| s == name(l1), &|p| p == name(h4)),
            simc(&|n| n == l1, &|n| n == h4),
        ),
    ]
}

#[test]
fn pfc_pauses_spread_to_a_victim_that_shares_no_bottleneck_and_it_recovers() {
    if !enabled() {
        return;
    }
    let _g = serial();
    let mut cfg = CongestionConfig::on(LEAF_SPINE);
    let plan = scenario_plan("veth-fabric-hol.toml", 8);
    cfg.apply(&plan.network).unwrap();
    let r = run(&cfg, &plan);
    print_ports(&r);
    let s = hol_twin(&cfg, &plan);
    let c = report::compare::compare(&s.outcome(), &r.outcome()).unwrap();
    eprintln!(
        "agreement (veth / sim): median FCT {:.2}×, last FCT {:.2}×, pauses {} / {}",
        c.median_ratio(),
        c.last_ratio(),
        c.counts.1.pauses,
        c.counts.0.pauses
    );
    let f = cfg.topology.fabric(cfg.virtual_rate).unwrap().unwrap();
    let hops = hops(&f, &r, &s);
    eprintln!(
        "pauses per hop (veth, sim): leaf0->spines {:?}, spines->leaf1 {:?}, leaf1->host4 {:?}",
        hops[0], hops[1], hops[2]
    );

    // Lossless means zero, in both.
    assert_eq!(
        (c.counts.0.drops, c.counts.1.drops),
        (0, 0),
        "sim, veth drops"
    );
    assert!(r.all_completed);
    // The pause spread hop by hop to the victim's own NIC, in both.
    for (i, (v, sm)) in hops.iter().enumerate() {
        assert!(*v > 0 && *sm > 0, "hop {i}: pauses veth {v}, sim {sm}");
    }
    // The victim (flow 0) during the incast and after it.
    let incast_end = |fcts: Vec<f64>| fcts.into_iter().fold(0.0, f64::max);
    let veth_end = incast_end(
        r.flows[1..]
            .iter()
            .map(|x| x.completed_us.unwrap())
            .collect(),
    );
    let v = &r.flows[0];
    let during = mean_over(&v.gbps, r.sample_us, 0.0, veth_end);
    let after = mean_over(
        &v.gbps,
        r.sample_us,
        veth_end + 40.0,
        v.completed_us.unwrap() - 20.0,
    );
    let series = s.series.as_ref().unwrap();
    let sim_rate: Vec<f64> = series
        .flow_rates
        .iter()
        .map(|row| {
            row.iter()
                .find(|(id, _)| *id == 0)
                .map_or(0.0, |(_, g)| *g as f64)
        })
        .collect();
    let sim_end = incast_end(
        s.flows[1..]
            .iter()
            .map(|x| x.start_us.unwrap() + x.fct_us.unwrap())
            .collect(),
    );
    let sim_sample = series.t_us.get(1).copied().unwrap_or(20.0) - series.t_us[0];
    let sim_during = mean_over(&sim_rate, sim_sample, 0.0, sim_end);
    let sim_after = mean_over(
        &sim_rate,
        sim_sample,
        sim_end + 40.0,
        s.flows[0].fct_us.unwrap() - 20.0,
    );
    eprintln!(
        "victim Gb/s during the incast / after it: veth {during:.1} / {after:.1} (incast ends {veth_end:.0} µs); sim {sim_during:.1} / {sim_after:.1} (ends {sim_end:.0} µs)"
    );
    // Head-of-line blocking: its max-min share is at least 50 Gb/s; paused hop by hop
    // it gets less than that, and less than half of what it gets once the incast is over.
    for (what, d, a) in [("veth", during, after), ("sim", sim_during, sim_after)] {
        assert!(
            d < 50.0 && d < 0.5 * a,
            "{what}: victim {d:.1} Gb/s during the incast, {a:.1} after"
        );
    }
    // Recovery: near line rate once the incast is over (the simulator 98-99 Gb/s; the veth
    // victim 98 in most runs, 76 in one clean-clone CI run on a quiet machine: the real
    // switch loop's pacing catch-up, so its bound has more margin).
    assert!(
        after > 70.0 && sim_after > 85.0,
        "victim after the incast: veth {after:.1}, sim {sim_after:.1} Gb/s"
    );
}

/// Bytes sent by the ports of `switch` toward `peer` (veth report).
fn tx_bytes(r: &CongestionReport, switch: &str, peer: &str) -> u64 {
    r.port_names
        .iter()
        .zip(&r.ports)
        .filter(|(n, _)| n.switch == switch && n.peer == peer)
        .map(|(_, c)| c.tx_bytes)
        .sum()
}

#[test]
fn a_failed_uplink_moves_every_flow_to_the_surviving_spine() {
    if !enabled() {
        return;
    }
    let _g = serial();
    // ConnectX firmware's DCQCN: with the paper's parameters a flow cut four or five times
    // in a row recovers at 40 Mb/s per 55 µs, so the last FCT on veth swung 0.96–2.4× the
    // simulator's from run to run (CNP timing); with these it stays 0.57–0.93× (11 runs).
    let mut cfg = CongestionConfig::on(LEAF_SPINE);
    cfg.cc = CcKind::Dcqcn(DcqcnPreset::Mellanox);
    let plan = scenario_plan("veth-fabric-link-failure.toml", 8);
    let f = cfg.topology.fabric(cfg.virtual_rate).unwrap().unwrap();
    let name = |n: u32| f.node_name(NodeId(n)).to_string();
    assert_eq!(
        (f.tier(NodeId(9)), f.tier(NodeId(10))),
        (1, 2),
        "the scenario's node ids"
    );
    let r = run(&cfg, &plan);
    print_ports(&r);
    let s = twin::run_sim(&cfg, &plan, None).unwrap();
    let c = report::compare::compare(&s.outcome(), &r.outcome()).unwrap();
    eprintln!(
        "agreement (veth / sim): median FCT {:.2}×, last FCT {:.2}×; veth lost {} on the link + {} unroutable, sim {} (failure) + {} (no route)",
        c.median_ratio(),
        c.last_ratio(),
        r.link_down_drops,
        r.unroutable,
        s.totals.drops_failure,
        s.totals.drops_noroute
    );
    assert!(r.all_completed, "every flow recovers and completes");
    assert_eq!(c.a_fct.finished, 4, "sim: every flow completes");
    // No loss but the failure's own: buffers, sockets and veths lost nothing.
    assert_eq!((r.switch_drops, r.kernel_drops, r.veth_drops), (0, 0, 0));
    // After the failure everything crosses spine 1: it carried most of the 16 MB.
    let (l1, s0, s1) = (name(9), name(10), name(11));
    let via_s1 = tx_bytes(&r, &l1, &s1);
    let via_s0 = tx_bytes(&r, &l1, &s0);
    eprintln!("leaf1 -> spine0 {via_s0} B, -> spine1 {via_s1} B");
    assert!(
        via_s1 > 12_000_000 && via_s0 < 4_000_000,
        "spine0 {via_s0} B, spine1 {via_s1} B"
    );
    // The last flows finish within 0.4–2× of the simulator's (measured 0.57–0.93×: veth
    // ends first; docs/veth.md says why they differ).
    assert!(
        (0.4..2.0).contains(&c.last_ratio()),
        "last FCT veth/sim {:.2}",
        c.last_ratio()
    );
}

#[test]
fn a_k4_fat_tree_carries_a_permutation_losslessly_like_the_simulator() {
    if !enabled() {
        return;
    }
    let _g = serial();
    // 20 switches, 64 switch ports in one loop: real links at 200 Mb/s (time scale 500)
    // so that the loop keeps up with 16 flows crossing up to 5 hops (docs/veth.md, "Why
    // the fabric loop falls behind at 1 Gb/s"; VETH_LINK_MBPS=1000 measures it there).
    let mut cfg = CongestionConfig::on(Topology::FatTree { k: 4 });
    cfg.link_rate = Rate::mbps(link_mbps_or(200));
    cfg.pfc = cfg.pfc.map(|p| cc_algos::PfcConfig {
        link_rate: cfg.link_rate,
        ..p
    });
    let plan = Scenario::from_toml_str(
        "[[workload]]\nkind = \"permutation\"\nsize = \"1MB\"\n",
        "fat-tree.toml",
    )
    .unwrap()
    .compile(&CompileCtx::new(16, Rate::gbps(100), 1))
    .unwrap();
    let r = run(&cfg, &plan);
    let s = twin::run_sim(&cfg, &plan, None).unwrap();
    let c = report::compare::compare(&s.outcome(), &r.outcome()).unwrap();
    let hops: u64 = r.ports.iter().map(|p| p.tx_packets).sum();
    let cores: u64 = r
        .port_names
        .iter()
        .zip(&r.ports)
        .filter(|(n, _)| n.tier == 3)
        .map(|(_, p)| p.tx_packets)
        .sum();
    eprintln!(
        "fat-tree k=4: {} flows, frames forwarded {hops} ({cores} by cores), FCT veth/sim median {:.2}×, last {:.2}×, late switch {:.0} µs, hosts {:.0} µs\n  switch loop {}\n  hosts loop {}",
        r.flows.len(),
        c.median_ratio(),
        c.last_ratio(),
        r.switch_max_late_us,
        r.hosts_max_late_us,
        r.switch_load,
        r.hosts_load
    );
    assert!(r.all_completed && c.a_fct.finished == 16);
    assert_eq!(
        (c.counts.0.drops, c.counts.1.drops),
        (0, 0),
        "sim, veth drops"
    );
    assert!(cores > 0, "inter-pod flows cross the core");
    // Every hop's frames carry device MACs no kernel owns: no namespace's IPv4 stack saw
    // one (they were routed and dropped there, on the sending loop's CPU, until session 9).
    assert_eq!(
        r.kernel_ip_input, 0,
        "IPv4 packets taken in by namespace kernels"
    );
    assert!(
        (0.5..2.0).contains(&c.median_ratio()),
        "median FCT veth/sim {:.2}",
        c.median_ratio()
    );
}

#[test]
fn a_pfc_storm_spreads_until_the_watchdog_breaks_it() {
    if !enabled() {
        return;
    }
    let _g = serial();
    let mut cfg = CongestionConfig::on(LEAF_SPINE);
    cfg.storm = Some(StormConfig::new(0, cc_algos::Duration::micros(100)));
    let wd = WatchdogConfig::new(
        cc_algos::Duration::millis(100),
        cc_algos::Duration::millis(200),
        Action::Drop,
    )
    .unwrap();
    cfg.pfcwd = Some(wd);
    let plan = scenario_plan("veth-fabric-pfc-storm.toml", 8);
    let r = run(&cfg, &plan);
    print_ports(&r);
    let stat = |sw: &str, peer: &str| {
        r.port_names
            .iter()
            .zip(&r.ports)
            .find(|(n, _)| n.switch == sw && n.peer == peer)
            .map(|(_, c)| c.clone())
            .unwrap()
    };
    for (n, c) in r.port_names.iter().zip(&r.ports) {
        if c.pfcwd_storms + c.pfcwd_drops > 0 {
            eprintln!(
                "watchdog {}:p{} → {}: storms {}, drops {}",
                n.switch, n.port, n.peer, c.pfcwd_storms, c.pfcwd_drops
            );
        }
    }
    let victims: Vec<Option<f64>> = r.flows[3..]
        .iter()
        .map(|f| f.completed_us.map(|t| t - f.start_us))
        .collect();
    eprintln!(
        "ran {:.0} µs; storms {}, watchdog drops {}, all drops {}; host 0 sent {} storm PAUSEs; victims' FCT {:?} µs",
        r.duration_us,
        r.pfcwd_storms,
        r.pfcwd_drops,
        r.total_drops(),
        r.storm_pauses,
        victims
    );
    // The storm spread: leaf 0's port to host 0 was paused, then the ports of the hops
    // upstream of it (spines toward leaf 0, leaf 1 toward the spines) were paused too.
    let (l0, l1) = ("leaf0", "leaf1");
    assert!(
        stat(l0, "host0-nic0").pfc_received > 10,
        "host 0 kept pausing"
    );
    let spines_paused = ["spine0", "spine1"]
        .iter()
        .filter(|s| stat(s, l0).pfc_received > 0)
        .count();
    let leaf1_paused = ["spine0", "spine1"]
        .iter()
        .filter(|s| stat(l1, s).pfc_received > 0)
        .count();
    assert!(
        spines_paused > 0 && leaf1_paused > 0,
        "the pause spread two hops: spines {spines_paused}, leaf 1 uplinks {leaf1_paused}"
    );
    // The watchdog broke it where it started, on the port facing host 0.
    assert!(stat(l0, "host0-nic0").pfcwd_storms >= 1);
    // The victims (flows 3, 4 never touch host 0) move again: at least one finishes.
    // The pause also held queues upstream long enough for the watchdog to call them
    // stormed too (false positives of SONiC's rule under propagated pauses), and such a
    // queue drops what it holds until its restoration time passes: a victim behind one
    // of them waits for that, then restarts under DCQCN after its timeouts.
    assert!(victims.iter().any(|v| v.is_some()), "victims {victims:?}");
    assert!(r.flows[3..].iter().all(|f| f.delivered > 1_000_000));
    assert!(r.flows[..3].iter().all(|f| f.completed_us.is_none()));
    // The only loss is the watchdog's own (it drops what is queued for a stormed queue).
    assert_eq!(
        r.total_drops(),
        r.pfcwd_drops,
        "drops besides the watchdog's"
    );

    // The simulator twin: the same storm, the same watchdog rule on virtual time.
    let s = twin::run_sim(&cfg, &plan, None).unwrap();
    let f = cfg.topology.fabric(cfg.virtual_rate).unwrap().unwrap();
    let names = f.name_index();
    let id = |n: &str| names[n].0;
    let rcvd = |a: &str, b: &str| {
        s.links
            .iter()
            .find(|l| l.node == id(a) && l.peer == id(b))
            .map_or(0, |l| l.pauses_rcvd)
    };
    let sim_victims: Vec<Option<f64>> = s.flows[3..].iter().map(|x| x.fct_us).collect();
    eprintln!(
        "sim: storms {}, watchdog drops {}, all drops {}, storm PAUSEs {}; victims' FCT {:?} µs; PAUSEs received: leaf0 from host 0 {}, spines from leaf 0 {}/{}, leaf 1 from spines {}/{}",
        s.totals.pfcwd_storms,
        s.totals.pfcwd_drops,
        s.totals.drops,
        s.totals.storm_pauses,
        sim_victims,
        rcvd(l0, "host0-nic0"),
        rcvd("spine0", l0),
        rcvd("spine1", l0),
        rcvd(l1, "spine0"),
        rcvd(l1, "spine1"),
    );
    assert!(s.totals.storm_pauses > 10 && s.totals.pfcwd_storms >= 1);
    assert_eq!(
        s.totals.drops, s.totals.pfcwd_drops,
        "sim: drops besides the watchdog's"
    );
    // Since the simulator paces DCQCN senders by rate (not by ACKs), its storm spreads
    // to the spines as on veth and the watchdog also trips upstream; the victims are held
    // behind those queues and need not finish within the run, but they must move.
    let sim_acked: Vec<u64> = s.flows[3..].iter().map(|x| x.acked).collect();
    eprintln!("sim victims' bytes acknowledged {sim_acked:?}");
    assert!(
        sim_acked.iter().all(|&a| a > 0),
        "sim victims made no progress: {sim_acked:?}"
    );
}
