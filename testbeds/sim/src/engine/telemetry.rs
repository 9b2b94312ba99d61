//! Live telemetry in the `fabric-api` schema: the fabric map, snapshots taken while the
//! run goes on (they read the state and close open paused-time intervals in the copy
//! only), and events (links and switches down and up, re-routes, finished flows,
//! deadlocks).
//!
//! Ports follow `fabric_api`'s order: port `2l` is the lower end of link `l` and
//! `2l + 1` the upper end. For a `topo` fabric `l` is the `topo::LinkId`; for a
//! hand-made [`Net`] links are numbered by their lower global port, in the same layout.

use super::*;
use fabric_api::{
    Column, Detector, Event, EventKind, FabricInfo, FlowSample, NodeInfo, PortInfo, Snapshot,
    Source, SourceKind, Timestamp,
};
use std::collections::BTreeMap;

/// PFC priorities a port has in the fabric map.
const PRIORITIES: u8 = 8;
/// Above this many (switch × host) route lookups, re-route events leave out the
/// switches changed and the unreachable pairs rather than stall the run.
const MAX_ROUTE_SCAN: u64 = 20_000_000;

/// Link id of every global port, and the `fabric_api` port index of every global port.
pub(super) fn port_maps(net: &Net, fabric: Option<&topo::Fabric>) -> (Vec<u32>, Vec<u32>) {
    let np = net.ports() as usize;
    let mut link = vec![0u32; np];
    let mut api = vec![0u32; np];
    match fabric {
        Some(f) => {
            for p in 0..np {
                let node = net.port_node[p];
                let local = (p as u32 - net.port_off[node as usize]) as u16;
                let l = f.port_link(topo::NodeId(node), local);
                link[p] = l.0;
                api[p] = FabricInfo::topo_port_index(f, topo::NodeId(node), local);
            }
        }
        None => {
            // Links by lower port, their two ends consecutive (a port looped to itself,
            // which hand-made nets should not have, takes one index).
            let (mut next_link, mut next_port) = (0, 0);
            for p in 0..np {
                let peer = net.port_peer[p] as usize;
                if p <= peer {
                    link[p] = next_link;
                    link[peer] = next_link;
                    api[p] = next_port;
                    api[peer] = next_port + u32::from(peer != p);
                    next_link += 1;
                    next_port += 1 + u32::from(peer != p);
                }
            }
        }
    }
    (link, api)
}

/// A column of `n` entries with `v(p)` at the api index of every global port `p`.
fn column(api: &[u32], n: usize, v: impl Fn(usize) -> u64) -> Column {
    let mut out = vec![0u64; n];
    for (p, &a) in api.iter().enumerate() {
        out[a as usize] = v(p);
    }
    Column::Dense(out)
}

impl<Q: EventQueue> Sim<Q> {
    /// The fabric map of this run, for the first frame of a stream or recording.
    pub fn fabric_info(&self) -> FabricInfo {
        if let Some(f) = &self.fabric {
            return FabricInfo::from_topo(f, PRIORITIES);
        }
        let net = &self.net;
        let nodes = (0..net.nodes())
            .map(|n| NodeInfo {
                name: if net.is_host(n) {
                    format!("host{n}")
                } else {
                    format!("switch{n}")
                },
                tier: net.tier[n as usize],
                plane: None,
                pod: None,
            })
            .collect();
        let mut ports = vec![None; net.ports() as usize];
        for p in 0..net.ports() as usize {
            let (node, peer) = (net.port_node[p], net.port_peer[p] as usize);
            let local = |g: usize| (g as u32 - net.port_off[net.port_node[g] as usize]) as u16;
            ports[self.api_port[p] as usize] = Some(PortInfo {
                node,
                port: local(p),
                link: Some(topo::LinkId(self.port_link[p])),
                peer: Some(net.port_node[peer]),
                peer_port: Some(local(peer)),
                speed_bps: net.port_rate[p].as_bps(),
            });
        }
        FabricInfo {
            schema_version: fabric_api::SCHEMA_VERSION,
            name: net.name.clone(),
            priorities: PRIORITIES,
            nodes,
            ports: ports
                .into_iter()
                .map(|p| p.expect("every port mapped"))
                .collect(),
            instance: None,
        }
    }

    /// Paused time of global port `p` up to now, ps, with open intervals closed in the
    /// copy (the run's own bookkeeping is untouched).
    pub(super) fn paused_ps_now(&self, p: usize, end: u64) -> u64 {
        let mut total = self.pc[p].paused_ps;
        for c in 0..self.nclass {
            let (mark, until) = self.pause_mark[p * self.nclass + c];
            let e = until.min(end);
            if e > mark {
                total += e - mark;
            }
        }
        total
    }

    /// Every port and flow now (virtual time), numbered with the current sequence
    /// number. Reading it does not change the run.
    pub fn snapshot(&self) -> Snapshot {
        let n = self.api_port.len();
        let api = &self.api_port;
        let pc = &self.pc;
        let src = Source {
            kind: SourceKind::Sim,
            name: self.plan.name.clone(),
        };
        let mut s = Snapshot::new(self.snap_seq, Timestamp::virtual_ns(self.now / 1000), src);
        let c = &mut s.counters;
        c.tx_bytes = Some(column(api, n, |p| pc[p].tx_bytes));
        c.rx_bytes = Some(column(api, n, |p| pc[p].rx_bytes));
        c.tx_pkts = Some(column(api, n, |p| pc[p].tx_pkts));
        c.rx_pkts = Some(column(api, n, |p| pc[p].rx_pkts));
        c.drops_buffer = Some(column(api, n, |p| pc[p].drops));
        c.drops_failure = Some(column(api, n, |p| pc[p].drops_failure));
        c.drops_no_route = Some(column(api, n, |p| pc[p].drops_noroute));
        c.ecn_marks = Some(column(api, n, |p| pc[p].marks));
        c.trims = Some(column(api, n, |p| pc[p].trims));
        c.paused_ns = Some(column(api, n, |p| self.paused_ps_now(p, self.now) / 1000));
        for (k, &prio) in self.prio_of.iter().enumerate() {
            let at = |v: &[u64], p: usize| v[p * self.nclass + k];
            c.pfc_tx
                .insert(prio, column(api, n, |p| at(&self.pfc_tx, p)));
            c.pfc_rx
                .insert(prio, column(api, n, |p| at(&self.pfc_rx, p)));
        }
        s.gauges.queue_bytes = self
            .prio_of
            .iter()
            .enumerate()
            .map(|(k, &prio)| (prio, column(api, n, |p| self.cq[p * self.nclass + k].bytes)))
            .collect::<BTreeMap<_, _>>();
        let mut down: Vec<u32> = (0..self.up.len())
            .filter(|&p| !self.up[p])
            .map(|p| api[p])
            .collect();
        down.sort_unstable();
        s.gauges.oper_down = down;
        s.flows = Some(self.flow_samples());
        s.sum_ports_into_totals();
        s.totals.cnps = self.t.cnps;
        s.totals.nacks = self.t.nacks;
        s.totals.flows_finished = self.flows_done;
        s.totals.flows_active = self.flows.iter().filter(|f| f.started && !f.done).count() as u64;
        s
    }

    /// The flows that have started.
    fn flow_samples(&self) -> Vec<FlowSample> {
        self.flows
            .iter()
            .enumerate()
            .filter(|(_, f)| f.started)
            .map(|(i, f)| {
                let cc = f.cc.as_ref();
                FlowSample {
                    id: i as u64,
                    src: f.src,
                    dst: f.dst,
                    rate_bps: cc.map(|c| c.rate().as_bps()).filter(|&r| r > 0),
                    window_bytes: cc.and_then(|c| c.window()).map(|w| w.0),
                    cnps: f.cnps,
                    nacks: f.nacks,
                    rtt_ns: (f.last_rtt > 0).then_some(f.last_rtt / 1000),
                    bytes_done: f.acked,
                    finished: f.done,
                }
            })
            .collect()
    }

    /// [`Self::snapshot`], then the next snapshot gets the next sequence number (events
    /// from now on belong to it).
    pub fn take_snapshot(&mut self) -> Snapshot {
        let s = self.snapshot();
        self.snap_seq += 1;
        s
    }

    /// Start recording events (off by default: a run without telemetry keeps none).
    pub fn enable_events(&mut self) {
        self.events_on = true;
    }

    /// The events since the last call, in time order.
    pub fn drain_events(&mut self) -> Vec<Event> {
        std::mem::take(&mut self.events_out)
    }

    pub(super) fn emit(&mut self, what: EventKind) {
        if self.events_on {
            self.events_out.push(Event {
                seq: self.snap_seq,
                time: Timestamp::virtual_ns(self.now / 1000),
                what,
            });
        }
    }

    /// The events of failure `i` going down (`down`) or coming back.
    pub(super) fn emit_failure(&mut self, i: usize, down: bool) {
        if !self.events_on {
            return;
        }
        let detect_ns = self.failures[i].detect.as_picos() / 1000;
        let by = Detector::Injected;
        let what = match self.failures[i].target {
            FailureTarget::Switch(node) if down => EventKind::SwitchDown {
                node,
                detected_by: by,
            },
            FailureTarget::Switch(node) => EventKind::SwitchUp {
                node,
                detected_by: by,
            },
            FailureTarget::Link(..) => {
                let link = topo::LinkId(self.port_link[self.failed_ports[i][0] as usize]);
                if down {
                    EventKind::LinkDown {
                        link,
                        detected_by: by,
                        detect_ns: Some(detect_ns),
                    }
                } else {
                    EventKind::LinkUp {
                        link,
                        detected_by: by,
                    }
                }
            }
        };
        self.emit(what);
    }

    /// Per switch, a fingerprint of its next hops toward every host (`None` when the
    /// fabric is too large to scan on the event path).
    pub(super) fn route_fingerprints(&self) -> Option<Vec<u64>> {
        let (hosts, nodes) = (self.net.hosts, self.net.nodes());
        if (nodes - hosts) as u64 * hosts as u64 > MAX_ROUTE_SCAN {
            return None;
        }
        Some(
            (hosts..nodes)
                .map(|s| {
                    (0..hosts).fold(0u64, |acc, d| {
                        let hops = self.router.next_hops(s, d);
                        let h = hops.iter().fold(d as u64, |a, &x| mix64(a ^ x as u64));
                        acc.wrapping_add(mix64(h ^ hops.len() as u64))
                    })
                })
                .collect(),
        )
    }

    /// Host pairs `(s, d)`, `s ≠ d`, with no path now: following the routing tables from
    /// one of `s`'s live ports over live ports never reaches `d`. Hosts with the same
    /// neighbours are counted as one group; per destination every switch is visited once.
    pub(super) fn unreachable_pairs(&self) -> Option<u64> {
        let (hosts, nodes) = (self.net.hosts, self.net.nodes());
        let mut groups: HashMap<Vec<u32>, (u32, u64)> = HashMap::new();
        let mut group_of = Vec::with_capacity(hosts as usize);
        for h in 0..hosts {
            let nbrs: Vec<u32> = self
                .net
                .ports_of(h)
                .filter(|&p| self.up[p as usize])
                .map(|p| self.net.peer_node(p))
                .collect();
            let next = groups.len() as u32;
            let e = groups.entry(nbrs).or_insert((next, 0));
            e.1 += 1;
            group_of.push(e.0);
        }
        let work = (groups.len() as u64 + (nodes - hosts) as u64) * hosts as u64;
        if work > MAX_ROUTE_SCAN {
            return None;
        }
        let mut state = vec![0u8; (nodes - hosts) as usize];
        let mut pairs = 0u64;
        for d in 0..hosts {
            state.fill(0);
            for (nbrs, &(g, count)) in &groups {
                let reached = nbrs
                    .iter()
                    .any(|&n| n == d || (!self.net.is_host(n) && self.reaches(n, d, &mut state)));
                if !reached {
                    pairs += count - u64::from(group_of[d as usize] == g);
                }
            }
        }
        Some(pairs)
    }

    /// Whether switch `s`'s next hops toward host `d` lead there over live ports
    /// (`state` per switch: 0 unknown, 1 on the current path, 2 yes, 3 no).
    fn reaches(&self, s: u32, d: u32, state: &mut [u8]) -> bool {
        let k = (s - self.net.hosts) as usize;
        match state[k] {
            2 => return true,
            1 | 3 => return false,
            _ => {}
        }
        state[k] = 1;
        let base = self.net.port_off[s as usize];
        let ok = self.router.next_hops(s, d).iter().any(|&h| {
            let p = base + h as u32;
            let n = self.net.peer_node(p);
            self.up[p as usize] && (n == d || (!self.net.is_host(n) && self.reaches(n, d, state)))
        });
        state[k] = if ok { 2 } else { 3 };
        ok
    }
}

impl<Q: EventQueue> Sim<Q> {
    /// The re-route event after failure `i`'s detection delay (`before`: the route
    /// fingerprints before recomputing).
    pub(super) fn emit_reroute(&mut self, i: usize, before: Option<Vec<u64>>) {
        let after = self.route_fingerprints();
        let hosts = self.net.hosts;
        let switches_changed = before.zip(after).map(|(b, a)| {
            (0..b.len())
                .filter(|&k| b[k] != a[k])
                .map(|k| hosts + k as u32)
                .collect()
        });
        let mut links: Vec<topo::LinkId> = self.failed_ports[i]
            .iter()
            .map(|&p| topo::LinkId(self.port_link[p as usize]))
            .collect();
        links.sort_unstable();
        links.dedup();
        let what = EventKind::Reroute {
            links,
            switches_changed,
            unreachable_pairs: self.unreachable_pairs(),
            repaired_ns: self.failures[i].detect.as_picos() / 1000,
        };
        self.emit(what);
    }

    /// The event of flow `f` finishing.
    pub(super) fn emit_flow_finished(&mut self, f: u32) {
        if !self.events_on {
            return;
        }
        let fl = &self.flows[f as usize];
        let what = EventKind::FlowFinished {
            flow: f as u64,
            src: fl.src,
            dst: fl.dst,
            bytes: if fl.size == u64::MAX {
                fl.acked
            } else {
                fl.size
            },
            fct_ns: (fl.finish - fl.start_at) / 1000,
        };
        self.emit(what);
    }

    /// The event of a PFC deadlock (the cycle of paused ports).
    pub(super) fn emit_deadlock(&mut self, cycle: &[u32]) {
        let ports = cycle.iter().map(|&p| self.api_port[p as usize]).collect();
        self.emit(EventKind::Deadlock { ports });
    }
}
