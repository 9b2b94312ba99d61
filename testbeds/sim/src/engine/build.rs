//! Construction steps of [`Sim::with_queue`]: limits and configuration checks, priority
//! classes, per-port state, PFC state per port, ECMP salts, host receivers, and one [`FlowState`] per
//! flow of the workplan.

use super::*;
use scenario::FlowSpec;

/// Sizes the event encoding can hold, and configuration values the engine cannot use.
pub(super) fn check_config(np: usize, cfg: &SimConfig, plan: &Workplan) -> Result<(), SimError> {
    if np as u32 > crate::queue::MAX_ID || plan.flows.len() as u32 > crate::queue::MAX_ID {
        return Err(SimError::TooLarge(format!(
            "{np} ports / {} flows exceed 2^28",
            plan.flows.len()
        )));
    }
    if cfg.mtu.0 == 0 || cfg.mtu.0 > 1 << 20 {
        return Err(SimError::Config(format!(
            "mtu {} B out of range",
            cfg.mtu.0
        )));
    }
    if cfg.lb.uses_ev() && !cfg.evs.is_power_of_two() {
        return Err(SimError::Config(format!(
            "evs must be a power of two for EV policies, got {}",
            cfg.evs
        )));
    }
    Ok(())
}

/// The scenario's `[[network.link]]` overrides written into the net: each named link's
/// rate and/or propagation delay, both directions unless one-way. Applied before anything
/// reads the net, so PFC, pacing, base RTTs, ideal FCTs and degradations (which scale
/// the overridden rate) all see them.
pub(super) fn link_overrides(net: &mut Net, plan: &Workplan) -> Result<(), SimError> {
    let n = net.nodes();
    for (i, l) in plan.network.links.iter().enumerate() {
        let [a, b] = l.link;
        let Some(p) = (a < n && b < n).then(|| net.port_to(a, b)).flatten() else {
            return Err(SimError::Config(format!(
                "network.link[{i}]: no link between nodes {a} and {b} ({n} nodes)"
            )));
        };
        let mut ports = vec![p];
        if !l.one_way {
            ports.push(net.port_peer[p as usize]);
        }
        for p in ports {
            if let Some(r) = l.rate {
                net.port_rate[p as usize] = r;
            }
            if let Some(d) = l.delay {
                net.port_delay[p as usize] = d;
            }
        }
    }
    Ok(())
}

/// Every port's per-frame state, idle, with its constants (node, peer, arrival delay).
pub(super) fn port_states(net: &Net, cfg: &SimConfig) -> Vec<PortState> {
    (0..net.ports() as usize)
        .map(|p| {
            let peer = net.port_peer[p];
            let mut arrive_ps = net.port_delay[p].as_picos();
            // A port left unconnected (`u32::MAX`) never transmits (it is never routed to).
            if peer != u32::MAX && !net.is_host(net.port_node[peer as usize]) {
                arrive_ps += cfg.switch_latency.as_picos();
            }
            PortState::idle(net.port_node[p], peer, arrive_ps, net.port_rate[p])
        })
        .collect()
}

/// How far ahead of the clock a frame's events land: the longest serialisation of a
/// full frame plus the delay to the next hop, over the connected ports (ps). The
/// event queue sizes its year to it.
pub(super) fn horizon(net: &Net, cfg: &SimConfig, port: &[PortState]) -> u64 {
    let frame = cfg.mtu.0 + cfg.header.0;
    port.iter()
        .zip(&net.port_rate)
        .filter(|(ps, r)| ps.peer != u32::MAX && r.as_bps() != 0)
        .map(|(ps, &r)| ps.arrive_ps.saturating_add(super::links::tx_ps(r, frame)))
        .max()
        .unwrap_or(0)
}

/// Classes: the distinct priorities the flows use, highest first (at least one).
pub(super) fn classes(plan: &Workplan) -> Vec<u8> {
    let mut prios: Vec<u8> = plan.flows.iter().map(|f| f.priority).collect();
    prios.sort_unstable_by(|a, b| b.cmp(a));
    prios.dedup();
    if prios.is_empty() {
        prios.push(0);
    }
    prios
}

/// The class index of a priority.
pub(super) fn class_of(prios: &[u8], p: u8) -> u8 {
    prios.iter().position(|&x| x == p).unwrap_or(0) as u8
}

/// PFC ingress counters and egress pause state for every port.
pub(super) fn pfc_state(
    net: &Net,
    cfg: &SimConfig,
) -> Result<(Vec<PfcIngress>, Vec<PfcEgress>), SimError> {
    let np = net.ports() as usize;
    let mut pfc_in = Vec::with_capacity(np);
    let mut pfc_out = Vec::with_capacity(np);
    for p in 0..np {
        let r = net.port_rate[p];
        let r = if r == Rate::ZERO { Rate::gbps(1) } else { r };
        let pc = PfcConfig::new(cfg.pfc_xoff, cfg.pfc_xon, cfg.pfc_quanta, r)
            .map_err(|e| SimError::Config(e.to_string()))?;
        pfc_in.push(PfcIngress::new(pc));
        pfc_out.push(PfcEgress::new(r));
    }
    Ok((pfc_in, pfc_out))
}

/// The ECMP hash salt of every node (one salt for all without per-switch salting).
pub(super) fn ecmp_salts(nodes: usize, cfg: &SimConfig) -> Vec<u64> {
    (0..nodes as u64)
        .map(|n| {
            if cfg.ecmp_per_switch_salt {
                mix64(n.wrapping_mul(0x9E37_79B9_7F4A_7C15) ^ cfg.ecmp_seed)
            } else {
                mix64(cfg.ecmp_seed)
            }
        })
        .collect()
}

/// Host state, with the receiver-side algorithm of the chosen congestion control.
pub(super) fn host_states(net: &Net, cfg: &SimConfig) -> Result<Vec<HostState>, SimError> {
    let mut hosts: Vec<HostState> = (0..net.hosts)
        .map(|_| HostState {
            rx_timer: u64::MAX,
            // No wake-up pending (0 would read as "one is pending" and a paced
            // sender's first wake-up would never be scheduled).
            wake_at: u64::MAX,
            ..HostState::default()
        })
        .collect();
    if let CcChoice::Algo(k) = cfg.cc {
        for (h, hs) in hosts.iter_mut().enumerate() {
            let path = PathParams {
                line_rate: net.nic_rate(h as u32),
                base_rtt: Duration::micros(10),
                mtu: cfg.mtu + cfg.header,
            };
            hs.rx = k
                .build_receiver(&path)
                .map_err(|e| SimError::Config(e.to_string()))?;
        }
    }
    Ok(hosts)
}

/// One state per flow and, per flow, the flows that wait for it.
pub(super) fn flow_states(
    net: &Net,
    cfg: &SimConfig,
    plan: &Workplan,
    prios: &[u8],
    rng: &mut Rng,
) -> Result<(Vec<FlowState>, Vec<Vec<u32>>), SimError> {
    let mut flows = Vec::with_capacity(plan.flows.len());
    let mut dependents = vec![Vec::new(); plan.flows.len()];
    for f in &plan.flows {
        for h in [f.src, f.dst] {
            if h >= net.hosts {
                return Err(SimError::NoSuchHost {
                    flow: f.id,
                    host: h,
                    hosts: net.hosts,
                });
            }
        }
        for &a in &f.after {
            dependents[a as usize].push(f.id);
        }
        flows.push(flow_state(net, cfg, f, class_of(prios, f.priority), rng));
    }
    Ok((flows, dependents))
}

/// A flow before it starts (draws its first entropy value from `rng`).
pub(super) fn flow_state(
    net: &Net,
    cfg: &SimConfig,
    f: &FlowSpec,
    class: u8,
    rng: &mut Rng,
) -> FlowState {
    let size = f.size.map(|b| b.0).unwrap_or(u64::MAX);
    let npkts = if size == u64::MAX {
        u32::MAX
    } else {
        size.div_ceil(cfg.mtu.0).max(1) as u32
    };
    // keyed like a 5-tuple: the two hosts and the connection's ordinal between them (its
    // "source port"), not the flow: a collective's steps keep their path, and a
    // connection keeps it when other hosts' flows are added
    let hash = mix64(
        (f.src as u64) << 32
            ^ f.dst as u64
            ^ mix64(f.ordinal as u64 ^ cfg.ecmp_seed.rotate_left(17)),
    );
    let nports = net.ports_of(f.src).len() as u64;
    FlowState {
        src: f.src,
        dst: f.dst,
        size,
        class,
        prio: f.priority,
        stop: f.stop.map(|t| t.picos()).unwrap_or(u64::MAX),
        start_at: f.start.picos(),
        started: false,
        done: false,
        finish: 0,
        recv_done: 0,
        next_seq: 0,
        npkts,
        retx: VecDeque::new(),
        pstate: Vec::new(),
        rcvd: Vec::new(),
        inflight: 0,
        acked: 0,
        recvd: 0,
        next_tx: 0,
        cc: None,
        timer_at: u64::MAX,
        rto_at: u64::MAX,
        last_progress: 0,
        hash,
        pin: if cfg.lb.per_flow() {
            (hash % nports.max(1)) as u8
        } else {
            u8::MAX
        },
        deps_left: f.after.len() as u32,
        ev_next: (rng.below(cfg.evs.max(1) as u64)) as u16,
        ev: None,
        to_request: 0,
        retransmits: 0,
        timeouts: 0,
        group: f.group,
        last_sample_acked: 0,
        cnps: 0,
        nacks: 0,
        last_rtt: 0,
        round: 0,
        rx_pending: Vec::new(),
        rx_pending_bytes: 0,
        rx_ce: false,
        rx_next: 0,
        rx_ooo: 0,
        rx_ack_request: false,
        rx_last: Pkt::default(),
        rx_holes: Vec::new(),
    }
}
