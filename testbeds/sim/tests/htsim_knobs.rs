//! The knobs htsim users expect (docs/sim.md maps each to its htsim flag): the ideal
//! FCT on an idle path, degraded links, initial window, ACK coalescing, the base RTT
//! senders assume, the per-port buffer model and the mixed entropy policy. Asserted
//! figures; run optimised in CI (`cargo test -p sim --profile ci --test htsim_knobs`).

use cc_algos::{Bytes, Duration, Rate, TrimPolicy};
use scenario::{CompileCtx, Scenario};
use sim::config::{BufferModel, InitWindow, QueueSize, TrimVictim};
use sim::net::{Net, NetBuilder};
use sim::{LbScheme, Sim, SimConfig, SimResults};

mod common;
use common::{incast, plan, run, star};

fn one_flow(src: u32, dst: u32, size: &str) -> String {
    format!(
        "[[workload]]\nkind = \"flows\"\n[[workload.flow]]\nsrc = {src}\ndst = {dst}\nsize = \"{size}\"\n"
    )
}

/// Two hosts joined through a chain of switches whose links have the given rates.
fn chain(rates_gbps: &[u64], delay_ns: u64) -> Net {
    let mut b = NetBuilder::new(2);
    let sw: Vec<u32> = (1..rates_gbps.len()).map(|_| b.add_switch(1)).collect();
    let mut nodes = vec![0];
    nodes.extend(&sw);
    nodes.push(1);
    for (i, &r) in rates_gbps.iter().enumerate() {
        b.link(
            nodes[i],
            nodes[i + 1],
            Rate::gbps(r),
            Duration::nanos(delay_ns),
        );
    }
    b.build()
}

#[test]
fn an_idle_path_has_slowdown_exactly_one() {
    let cases: Vec<(Net, &str, Duration)> = vec![
        (star(2), "4096B", Duration::ZERO),
        (star(2), "1B", Duration::ZERO),
        (star(2), "2MB", Duration::ZERO),
        (star(2), "41000B", Duration::nanos(300)),
        // A slow hop in the middle paces the train; a slow first hop; a fast core.
        (chain(&[100, 25, 100], 700), "1MB", Duration::ZERO),
        (
            chain(&[25, 100, 400, 100], 200),
            "123457B",
            Duration::nanos(150),
        ),
        (chain(&[100, 400, 400, 100], 1000), "5000B", Duration::ZERO),
    ];
    for (i, (net, size, lat)) in cases.into_iter().enumerate() {
        let cfg = SimConfig {
            switch_latency: lat,
            ..SimConfig::default()
        };
        let r = run(net, cfg, &plan(&one_flow(0, 1, size), 2));
        let s = r.flows[0].slowdown.unwrap();
        assert!((s - 1.0).abs() < 1e-9, "case {i} ({size}): slowdown {s}");
    }
    // On a fat-tree, across pods (5 hops each way), with the topo router.
    let f = topo::generators::fat_tree(4, topo::Rate::gbps(100)).unwrap();
    let p = plan(&one_flow(0, 15, "300KB"), 16);
    let r = Sim::from_fabric(&f, SimConfig::default(), &p)
        .unwrap()
        .run();
    let s = r.flows[0].slowdown.unwrap();
    assert!((s - 1.0).abs() < 1e-9, "fat-tree: slowdown {s}");
}

#[test]
fn a_degraded_link_runs_at_its_fraction_with_scaled_thresholds() {
    let p = plan(&one_flow(1, 0, "1MB"), 2);
    let full = run(star(2), SimConfig::default(), &p);
    let degraded = |toml: &str| {
        let p = plan(&format!("{}{toml}", one_flow(1, 0, "1MB")), 2);
        run(star(2), SimConfig::default(), &p)
    };
    // Switch (node 2) → receiver (node 0) at a quarter of its rate from the start:
    // the 1 MB flow takes four times as long (the ideal stays the fabric's).
    let r = degraded("[[degrade]]\nlink = [2, 0]\nfraction = 0.25\none_way = true\n");
    let ratio = r.flows[0].fct_us.unwrap() / full.flows[0].fct_us.unwrap();
    assert!((ratio - 4.0).abs() < 0.1, "fct ratio {ratio}");
    let port = r.links.iter().find(|l| l.node == 2 && l.peer == 0).unwrap();
    assert!((port.rate_gbps - 25.0).abs() < 1e-9, "{}", port.rate_gbps);
    // The text summary says so, not only the JSON.
    let text = sim::summary::summary(&r);
    assert!(
        text.contains("degraded link n2→n0 at 25 % of its rate from 0.0 µs to the end"),
        "{text}"
    );
    // Only the other direction degraded: data are not slowed (ACKs are tiny).
    let r = degraded("[[degrade]]\nlink = [0, 2]\nfraction = 0.25\none_way = true\n");
    let ratio = r.flows[0].fct_us.unwrap() / full.flows[0].fct_us.unwrap();
    assert!(ratio < 1.01, "reverse-only ratio {ratio}");
    // From 40 µs to 80 µs only: in between the flow moves at a quarter of the rate.
    let r =
        degraded("[[degrade]]\nlink = [2, 0]\nfraction = 0.25\nat = \"40us\"\nuntil = \"80us\"\n");
    let extra = r.flows[0].fct_us.unwrap() - full.flows[0].fct_us.unwrap();
    assert!(
        sim::summary::summary(&r)
            .contains("degraded link n2↔n0 at 25 % of its rate from 40.0 µs until 80.0 µs")
    );
    // 40 µs at 25 % instead of 100 %: 30 µs of the transfer is left over.
    assert!((extra - 30.0).abs() < 1.5, "extra {extra} µs");
    // A link that does not exist is a precise error.
    let p = plan(
        &format!(
            "{}[[degrade]]\nlink = [0, 1]\nfraction = 0.5\n",
            one_flow(1, 0, "1MB")
        ),
        2,
    );
    let e = Sim::from_net(star(2), SimConfig::default(), &p)
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("degrade[0]") && e.contains("no link between nodes 0 and 1"),
        "{e}"
    );
    // The scenario checks the fraction.
    let e = Scenario::from_toml_str(
        &format!(
            "{}[[degrade]]\nlink = [2, 0]\nfraction = 1.5\n",
            one_flow(1, 0, "1MB")
        ),
        "d.toml",
    )
    .unwrap()
    .compile(&CompileCtx::new(2, Rate::gbps(100), 1))
    .unwrap_err()
    .to_string();
    assert!(
        e.contains("degrade[0].fraction") && e.contains("(0, 1]"),
        "{e}"
    );

    // ECN thresholds scale with the rate (htsim's reduced_speed queues): DCTCP's
    // step mark at K = 100 KB holds a degraded bottleneck's queue near K × fraction.
    let p = plan(&incast(4, "1MB"), 5);
    let cfg = || SimConfig::default().with_cc_defaults("dctcp".parse().unwrap());
    let q = |r: &SimResults| {
        r.links
            .iter()
            .find(|l| l.node == 5 && l.peer == 0)
            .unwrap()
            .avg_queue
    };
    let base = run(star(5), cfg(), &p);
    let mut c = cfg();
    c.degraded = plan(
        &format!(
            "{}[[degrade]]\nlink = [5, 0]\nfraction = 0.5\n",
            incast(4, "1MB")
        ),
        5,
    )
    .degrades;
    let half = run(star(5), c, &p);
    let (qb, qh) = (q(&base), q(&half));
    assert!(qh < 0.7 * qb && qh > 0.3 * qb, "avg queue {qh} vs {qb}");
    assert_eq!(half.fct.finished, 4);
}

#[test]
fn initial_window_limits_the_first_round_trip() {
    let p = plan(&one_flow(0, 1, "256KB"), 2);
    let fct = |w: Option<InitWindow>| {
        let cfg = SimConfig {
            init_window: w,
            ..SimConfig::default().with_cc_defaults("nscc".parse().unwrap())
        };
        run(star(2), cfg, &p).flows[0].fct_us.unwrap()
    };
    let default = fct(None);
    let one = fct(Some(InitWindow::Packets(1)));
    let bytes = fct(Some(InitWindow::Bytes(Bytes(4160))));
    // One packet (4,096 + 64 B) per first RTT instead of a BDP: slower to start.
    assert!(one > default * 1.1, "{one} vs {default}");
    assert!(
        (one - bytes).abs() < 1e-9,
        "packets and bytes agree: {one} vs {bytes}"
    );
}

#[test]
fn ack_coalescing_sends_one_ack_per_16kb() {
    let p = plan(&incast(4, "1MB"), 5);
    // No ECN marks here: htsim's sink ACKs a CE-marked packet at once (checked below).
    let base = SimConfig {
        ecn: None,
        ..SimConfig::default().with_cc_defaults("nscc".parse().unwrap())
    };
    let per_pkt = run(star(5), base.clone(), &p);
    let cfg = SimConfig {
        ack_every: Some(Bytes(16_384)),
        ..base
    };
    let co = run(star(5), cfg.clone(), &p);
    // With marking, every marked packet is ACKed at once.
    let marked = run(
        star(5),
        SimConfig {
            ecn: SimConfig::default()
                .with_cc_defaults("nscc".parse().unwrap())
                .ecn,
            ..cfg
        },
        &p,
    );
    assert!(marked.totals.ecn_marks > 100, "{}", marked.totals.ecn_marks);
    assert!(marked.totals.acks >= marked.totals.ecn_marks);
    assert!(marked.totals.acks > co.totals.acks);
    assert_eq!(co.fct.finished, 4);
    assert_eq!(per_pkt.totals.acks, per_pkt.totals.data_pkts);
    // 16 KiB = 4 packets of 4 KiB: a quarter of the ACKs, plus the ones the senders ask
    // for (AR) when their window is full.
    let ratio = co.totals.acks as f64 / co.totals.data_pkts as f64;
    assert!((0.25..0.40).contains(&ratio), "acks/data {ratio}");
    assert_eq!(co.totals.timeouts, 0);
    // Completion within a few percent of per-packet ACKs.
    let (a, b) = (co.fct.max_us, per_pkt.fct.max_us);
    assert!((a - b).abs() / b < 0.05, "max fct {a} vs {b}");
}

#[test]
fn network_max_base_rtt_is_the_diameter_for_every_sender() {
    let f = topo::generators::fat_tree(4, topo::Rate::gbps(100)).unwrap();
    // One flow inside a rack, one across pods.
    let toml = "[[workload]]\nkind = \"flows\"\n[[workload.flow]]\nsrc = 0\ndst = 1\nsize = \"100KB\"\n[[workload.flow]]\nsrc = 2\ndst = 15\nsize = \"100KB\"\n";
    let p = plan(toml, 16);
    let mk = |mode| {
        let cfg = SimConfig {
            base_rtt: mode,
            ..SimConfig::default().with_cc_defaults("nscc".parse().unwrap())
        };
        Sim::from_fabric(&f, cfg, &p).unwrap()
    };
    let path = mk(sim::config::BaseRttMode::Path);
    let max = mk(sim::config::BaseRttMode::NetworkMax);
    let (near, far) = (path.assumed_base_rtt(0, 1), path.assumed_base_rtt(2, 15));
    assert!(near < far, "{near:?} {far:?}");
    assert_eq!(max.assumed_base_rtt(0, 1), far);
    assert_eq!(max.assumed_base_rtt(2, 15), far);
}

fn per_port(victim: TrimVictim, header: Option<Bytes>) -> SimConfig {
    SimConfig {
        buffer_model: BufferModel::PerPort {
            queue: QueueSize::Bdp(1.0),
            header_queue: header,
            victim,
        },
        trim: Some(TrimPolicy::new(Bytes(u64::MAX / 4), Bytes(64)).unwrap()),
        ..SimConfig::default().with_cc_defaults("nscc".parse().unwrap())
    }
}

#[test]
fn per_port_queues_trim_at_their_size() {
    let p = plan(&incast(8, "500KB"), 9);
    let mut seen = Vec::new();
    for victim in [TrimVictim::Arriving, TrimVictim::Head, TrimVictim::Htsim] {
        let sim = Sim::from_net(star(9), per_port(victim, None), &p).unwrap();
        let q = sim.per_port_queue().unwrap();
        let mut sim = sim;
        let r = sim.run();
        assert_eq!(r.fct.finished, 8, "{victim:?}");
        assert!(r.totals.trims > 0, "{victim:?}: no trims");
        assert_eq!(r.totals.drops, 0, "{victim:?}");
        for l in &r.links {
            assert!(
                l.max_queue <= q.0,
                "{victim:?}: queue {} > {}",
                l.max_queue,
                q.0
            );
        }
        seen.push(r.fct.max_us);
    }
    // The victims differ.
    assert!(seen[0] != seen[1] || seen[0] != seen[2], "{seen:?}");
    // A tiny header queue drops headers beyond its cap (the sender recovers by timeout).
    let r = run(
        star(9),
        per_port(TrimVictim::Arriving, Some(Bytes(128))),
        &p,
    );
    assert!(r.totals.drops > 0 && r.totals.trims > 0);
    // The queue size must hold a packet.
    let mut cfg = per_port(TrimVictim::Arriving, None);
    cfg.buffer_model = BufferModel::PerPort {
        queue: QueueSize::Bytes(Bytes(1000)),
        header_queue: None,
        victim: TrimVictim::Arriving,
    };
    let e = Sim::from_net(star(9), cfg, &p).unwrap_err().to_string();
    assert!(e.contains("cannot hold one 4160 B packet"), "{e}");
}

#[test]
fn mixed_entropy_policy_runs_beside_the_others() {
    let f = topo::generators::fat_tree(4, topo::Rate::gbps(100)).unwrap();
    let p = plan("[[workload]]\nkind = \"permutation\"\nsize = \"1MB\"\n", 16);
    let mut fcts = Vec::new();
    for lb in [
        LbScheme::Spray,
        LbScheme::Reps,
        LbScheme::Bitmap,
        LbScheme::Mixed,
    ] {
        let cfg = SimConfig {
            lb,
            evs: 16,
            ..SimConfig::default().with_cc_defaults("nscc".parse().unwrap())
        };
        let r = Sim::from_fabric(&f, cfg, &p).unwrap().run();
        assert_eq!(r.fct.finished, 16, "{lb}");
        assert_eq!(r.run.lb, lb.to_string());
        fcts.push(r.fct.p99_us);
    }
    assert_eq!("mixed".parse::<LbScheme>().unwrap(), LbScheme::Mixed);
    // Within 2x of each other on a non-blocking fabric.
    let (lo, hi) = fcts
        .iter()
        .fold((f64::MAX, 0.0f64), |(a, b), &x| (a.min(x), b.max(x)));
    assert!(hi < 2.0 * lo, "{fcts:?}");
}

#[test]
fn scenario_network_knobs_reach_the_config() {
    const W: &str = "[[workload]]\nkind = \"permutation\"\nsize = \"1MB\"\n";
    let s = Scenario::from_toml_str(
        &format!("[network]\nevs = 64\ninit_window_pkts = 8\nack_every = \"16KB\"\nbase_rtt = \"network-max\"\nbuffer_model = \"per-port\"\nqueue_bdp = 2.0\ntrim_victim = \"htsim\"\n{W}"),
        "n.toml",
    )
    .unwrap();
    let p = s.compile(&CompileCtx::new(4, Rate::gbps(100), 1)).unwrap();
    let mut cfg = SimConfig::default();
    cfg.apply(&p.network).unwrap();
    assert_eq!(cfg.evs, 64);
    assert_eq!(cfg.init_window, Some(InitWindow::Packets(8)));
    assert_eq!(cfg.ack_every, Some(Bytes(16_000)));
    assert_eq!(cfg.base_rtt, sim::config::BaseRttMode::NetworkMax);
    assert_eq!(
        cfg.buffer_model,
        BufferModel::PerPort {
            queue: QueueSize::Bdp(2.0),
            header_queue: None,
            victim: TrimVictim::Htsim
        }
    );
    // The retransmit timeout: a time, or derived as htsim's.
    for (toml, want) in [
        ("rto = \"250us\"", Some(Duration::micros(250))),
        ("rto = \"htsim\"", None),
    ] {
        let s = Scenario::from_toml_str(&format!("[network]\n{toml}\n{W}"), "n.toml").unwrap();
        let p = s.compile(&CompileCtx::new(4, Rate::gbps(100), 1)).unwrap();
        let mut cfg = SimConfig {
            rto: Some(Duration::millis(3)),
            ..SimConfig::default()
        };
        cfg.apply(&p.network).unwrap();
        assert_eq!(cfg.rto, want, "{toml}");
    }
    for bad in ["rto = \"soon\"", "rto = \"0us\""] {
        let e = Scenario::from_toml_str(&format!("[network]\n{bad}\n{W}"), "n.toml")
            .unwrap_err()
            .to_string();
        assert!(e.contains("rto"), "{bad}: {e}");
    }
    for (toml, want) in [
        (
            "buffer_model = \"per-port\"\ntrim_threshold = \"100KB\"",
            "network.trim_threshold: per-port queues trim a packet when the queue is full",
        ),
        ("evs = 100", "network.evs"),
        ("queue = \"1MB\"", "need buffer_model = \"per-port\""),
        ("init_window = \"8KB\"\ninit_window_pkts = 2", "not both"),
        (
            "buffer_model = \"per-port\"\nqueue_bdp = -1.0",
            "network.queue_bdp",
        ),
    ] {
        let e = Scenario::from_toml_str(&format!("[network]\n{toml}\n{W}"), "n.toml")
            .unwrap()
            .compile(&CompileCtx::new(4, Rate::gbps(100), 1))
            .unwrap_err()
            .to_string();
        assert!(e.contains(want), "{toml}: {e}");
    }
    let e = Scenario::from_toml_str("[network]\nbase_rtt = \"longest\"\n", "n.toml")
        .unwrap_err()
        .to_string();
    assert!(e.contains("network-max"), "{e}");
}

#[test]
fn link_overrides_change_one_links_rate_and_delay() {
    // Hosts 0 and 1 through switch 2; 1 MB from 0 to 1 at 100 Gb/s.
    let fct = |extra: &str| {
        let p = plan(&format!("{}{extra}", one_flow(0, 1, "1MB")), 2);
        let r = Sim::from_net(chain(&[100, 100], 500), SimConfig::default(), &p)
            .unwrap()
            .run();
        let f = &r.flows[0];
        // The ideal FCT sees the overrides: an idle path is still exactly 1.
        let s = f.slowdown.unwrap();
        assert!((s - 1.0).abs() < 1e-9, "{extra}: slowdown {s}");
        f.fct_us.unwrap()
    };
    let base = fct("");
    let link = |body: &str| format!("[[network.link]]\n{body}\n");
    // The switch's link to host 1 at a quarter of the rate: the flow takes ~4x.
    let slow = fct(&link("link = [2, 1]\nrate = \"25Gbps\""));
    assert!((3.8..4.2).contains(&(slow / base)), "{base} -> {slow}");
    // One way: only the direction named first; ACKs on the slow way do not matter.
    let data_way = fct(&link("link = [2, 1]\nrate = \"25Gbps\"\none_way = true"));
    let ack_way = fct(&link("link = [1, 2]\nrate = \"25Gbps\"\none_way = true"));
    assert!(
        (data_way - slow).abs() < 0.01 * slow,
        "{slow} vs {data_way}"
    );
    assert!(ack_way < 1.05 * base, "{base} vs {ack_way}");
    // Host 0's link at 10 µs instead of 500 ns each way: the last packet arrives 9.5 µs
    // later and its ACK needs 9.5 µs more.
    let far = fct(&link("link = [0, 2]\ndelay = \"10us\""));
    assert!((far - base - 19.0).abs() < 0.01, "{base} -> {far}");
    // A link the fabric does not have.
    let p = plan(
        &format!(
            "{}{}",
            one_flow(0, 1, "1MB"),
            link("link = [0, 1]\nrate = \"1Gbps\"")
        ),
        2,
    );
    let e = Sim::from_net(chain(&[100, 100], 500), SimConfig::default(), &p)
        .err()
        .unwrap()
        .to_string();
    assert!(
        e.contains("network.link[0]: no link between nodes 0 and 1 (3 nodes)"),
        "{e}"
    );
}

/// htsim's settings on the two incasts where ACK coalescing used to stall flows until
/// the retransmit timeout with no packet lost: all 15 senders of a 16-host fat-tree into
/// one host, and 8 senders on one leaf into a host on the other leaf of a leaf–spine,
/// plus the same 8:1 on one switch. With the 1 ms timeout of before, 16 KiB ACK
/// coalescing took 1–10 timeouts per run (up to 3× the last FCT); the receiver now
/// ACKs at once as htsim's sink does (CE, first packet, AR, drained out-of-order,
/// duplicate) and while a packet it NACKed is missing.
#[test]
fn ack_coalescing_never_waits_for_the_retransmit_timeout() {
    let htsim = |ack_every: Option<Bytes>| SimConfig {
        ack_every,
        lb: LbScheme::Mixed,
        evs: 256,
        base_rtt: sim::config::BaseRttMode::NetworkMax,
        init_window: Some(InitWindow::Packets(50)),
        // The old fixed timeout, so that a stall shows in the FCT.
        rto: Some(Duration::millis(1)),
        ..per_port(TrimVictim::Htsim, None)
    };
    let senders = |from: u32, n: u32| {
        format!(
            "[[workload]]\nkind = \"incast\"\nsenders = \"{from}..{}\"\nreceiver = 0\nsize = \"2MB\"\n",
            from + n
        )
    };
    let ft = topo::generators::fat_tree(4, topo::Rate::gbps(100)).unwrap();
    let ls = topo::generators::leaf_spine(2, 8, 8, topo::Rate::gbps(100)).unwrap();
    type Runner<'a> = Box<dyn Fn(SimConfig) -> SimResults + 'a>;
    let cases: Vec<(&str, Runner<'_>)> = vec![
        (
            "16-host fat-tree, 15:1",
            Box::new(|c| {
                Sim::from_fabric(&ft, c, &plan(&senders(1, 15), 16))
                    .unwrap()
                    .run()
            }),
        ),
        (
            "leaf-spine 2x8, 8:1 across leaves",
            Box::new(|c| {
                Sim::from_fabric(&ls, c, &plan(&senders(8, 8), 16))
                    .unwrap()
                    .run()
            }),
        ),
        (
            "one switch, 8:1",
            Box::new(|c| run(star(9), c, &plan(&senders(1, 8), 9))),
        ),
    ];
    for (name, go) in cases {
        let every = go(htsim(None));
        let co = go(htsim(Some(Bytes(16_384))));
        assert_eq!(co.fct.finished, every.fct.finished, "{name}");
        assert_eq!(co.totals.drops, 0, "{name}");
        assert!(co.totals.trims > 0, "{name}: the case trims");
        assert_eq!(co.totals.timeouts, 0, "{name}: timeouts without loss");
        let (a, b) = (co.fct.max_us, every.fct.max_us);
        assert!((a - b).abs() / b < 0.03, "{name}: last FCT {a} vs {b} µs");
    }
}

/// The retransmit timeout is derived from the network as htsim's (`main_uec.cpp`: 15 µs
/// plus six drain times of one port's queue at the host rate) unless one is given.
#[test]
fn retransmit_timeout_is_derived_like_htsim() {
    let ft = topo::generators::fat_tree(4, topo::Rate::gbps(100)).unwrap();
    let p = plan(&incast(2, "100KB"), 16);
    let sim = |cfg| Sim::from_fabric(&ft, cfg, &p).unwrap();
    let drain = |q: Bytes| Rate::gbps(100).tx_time(q).as_picos();
    // Per-port queues: the queue is the per-port one (1 BDP in whole packets, as
    // htsim's ceil(BDP / packet)).
    let pp = sim(per_port(TrimVictim::Arriving, None));
    let q = pp.per_port_queue().unwrap();
    let wire = 4096 + 64;
    assert_eq!(q.0 % wire, 0, "{q:?} is whole packets");
    let rtt = pp.assumed_base_rtt(0, 15);
    let bdp = Rate::gbps(100).bdp(rtt).0;
    assert_eq!(q.0, bdp.div_ceil(wire) * wire, "bdp {bdp}");
    assert_eq!(
        pp.rto().as_picos(),
        Duration::micros(15).as_picos() + 6 * drain(q)
    );
    // Shared buffer: htsim's trimming default, one BDP.
    let shared = sim(SimConfig::default().with_cc_defaults("nscc".parse().unwrap()));
    assert_eq!(shared.rto(), pp.rto());
    let us = shared.rto().as_picos() as f64 / 1e6;
    assert!((50.0..100.0).contains(&us), "derived RTO {us} µs");
    // Given: taken as it is.
    let fixed = sim(SimConfig {
        rto: Some(Duration::micros(700)),
        ..SimConfig::default()
    });
    assert_eq!(fixed.rto(), Duration::micros(700));
}
