//! Live telemetry of the congestion testbed in the `fabric-api` schema.
//!
//! The testbed as a port map ([`port_map`]). The star: nodes `h0..hN` (tier 0) then `sw`
//! (tier 1); link `i` is host `i`'s `eth0` (port `2i`) and switch port `i` (port
//! `2i + 1`). A multi-switch fabric: `topo`'s own map (`FabricInfo::from_topo`: every
//! node, port `2·link` the link's lower end, `2·link + 1` its upper end), so the
//! switch-to-switch links are in the map and in every snapshot with their bytes, marks,
//! pauses and queues, not only the host links. The switch ports carry everything the userspace switch counts
//! (bytes, frames, buffer drops, ECN marks, trims, PFC per priority, paused time, queue
//! depth); the host ports carry what an emulated NIC counts (frames sent and received,
//! PAUSE frames received). Timestamps are virtual (the run's time scale undone).

use std::collections::BTreeMap;
use std::sync::mpsc;

use cc_algos::{Instant, SenderCc};
use fabric_api::{
    Column, FabricInfo, FlowSample, NodeInfo, PortInfo, SCHEMA_VERSION, Snapshot, Source,
    SourceKind, Timestamp,
};
use topo::LinkId;
use veth_core::endpoint::{Host, TimeScale};
use veth_core::switch::PortCounters;

use super::CongestionConfig;

/// PFC priorities the snapshots describe.
const PRIORITIES: u8 = 8;

/// Where each port's counters go in a snapshot's per-port columns (indices into the
/// port map's `ports`).
#[derive(Debug, Clone)]
pub struct Layout {
    /// Host `i`'s NIC port.
    host: Vec<usize>,
    /// Global switch port `g` (the report's numbering).
    switch: Vec<usize>,
    /// Ports in the map.
    len: usize,
}

/// The port map of `cfg`'s testbed and where each port's counters go in it.
pub fn port_map(cfg: &CongestionConfig) -> crate::Result<(FabricInfo, Layout)> {
    let Some(f) = cfg.topology.fabric(cfg.virtual_rate)? else {
        let n = cfg.hosts;
        let layout = Layout {
            host: (0..n).map(|i| 2 * i).collect(),
            switch: (0..n).map(|i| 2 * i + 1).collect(),
            len: 2 * n,
        };
        return Ok((star_info(cfg), layout));
    };
    let mut info = FabricInfo::from_topo(&f, PRIORITIES);
    info.name = format!("veth {}", cfg.topology);
    // `from_topo`'s port of one end of a link.
    let end = |n: topo::NodeId, p: u16| {
        let l = f.port_link(n, p);
        2 * l.idx() + usize::from(f.link(l).a != n)
    };
    let layout = Layout {
        host: f.hosts().map(|h| end(h, 0)).collect(),
        switch: super::fabric::global_order(&f)
            .into_iter()
            .map(|(s, p)| end(topo::NodeId(s), p))
            .collect(),
        len: info.ports.len(),
    };
    Ok((info, layout))
}

/// The port map of a star of `cfg.hosts` hosts.
pub fn star_info(cfg: &CongestionConfig) -> FabricInfo {
    let n = cfg.hosts as u32;
    let mut nodes: Vec<NodeInfo> = (0..n)
        .map(|i| NodeInfo {
            name: format!("h{i}"),
            tier: 0,
            plane: None,
            pod: None,
        })
        .collect();
    nodes.push(NodeInfo {
        name: "sw".into(),
        tier: 1,
        plane: Some(0),
        pod: None,
    });
    let speed = cfg.virtual_rate.as_bps();
    let ports = (0..n)
        .flat_map(|i| {
            [
                PortInfo {
                    node: i,
                    port: 0,
                    link: Some(LinkId(i)),
                    peer: Some(n),
                    peer_port: Some(i as u16),
                    speed_bps: speed,
                },
                PortInfo {
                    node: n,
                    port: i as u16,
                    link: Some(LinkId(i)),
                    peer: Some(i),
                    peer_port: Some(0),
                    speed_bps: speed,
                },
            ]
        })
        .collect();
    FabricInfo {
        schema_version: SCHEMA_VERSION,
        name: format!("veth star of {n}"),
        priorities: PRIORITIES,
        nodes,
        ports,
        instance: None,
    }
}

/// Sends one snapshot per sampling point.
#[derive(Debug)]
pub struct Live {
    layout: Layout,
    scale: TimeScale,
    name: String,
    /// `None` once the reader has gone: no more snapshots are built.
    tx: Option<mpsc::Sender<Snapshot>>,
    seq: u64,
}

impl Live {
    /// Snapshots of the testbed `info` (its ports placed by `layout`) go to `tx`.
    pub fn new(
        info: FabricInfo,
        layout: Layout,
        scale: TimeScale,
        tx: mpsc::Sender<Snapshot>,
    ) -> Self {
        Live {
            layout,
            scale,
            name: info.name,
            tx: Some(tx),
            seq: 0,
        }
    }

    /// Build the snapshot at `now` (real clock of the run) and send it. A reader that has
    /// gone away is not an error: from then on nothing is built, so a run nobody watches
    /// does not pay for its telemetry in its real-time loop.
    pub fn send(&mut self, now: Instant, switch: &[PortCounters], hosts: &[Host]) {
        if self.tx.is_none() {
            return;
        }
        let s = self.snapshot(now, switch, hosts);
        self.seq += 1;
        if self.tx.as_ref().is_some_and(|tx| tx.send(s).is_err()) {
            self.tx = None;
        }
    }

    /// The snapshot at `now` from the switch's port counters and the hosts.
    pub fn snapshot(&self, now: Instant, switch: &[PortCounters], hosts: &[Host]) -> Snapshot {
        let t = Timestamp::virtual_ns(self.scale.to_virtual(now).nanos());
        let source = Source {
            kind: SourceKind::VethCongestion,
            name: self.name.clone(),
        };
        let mut s = Snapshot::new(self.seq, t, source);
        let l = &self.layout;
        // Every host's and every switch port's value at its place in the map.
        let col = |host: &dyn Fn(&Host) -> u64, sw: &dyn Fn(&PortCounters) -> u64| -> Column {
            let mut v = vec![0u64; l.len];
            for (h, &i) in hosts.iter().zip(&l.host) {
                v[i] = host(h);
            }
            for (c, &i) in switch.iter().zip(&l.switch) {
                v[i] = sw(c);
            }
            Column::from(v)
        };
        let c = &mut s.counters;
        c.tx_pkts = Some(col(&|h| h.c.tx_packets, &|p| p.tx_packets));
        c.rx_pkts = Some(col(&|h| h.c.rx_packets, &|p| p.rx_packets));
        // The switch counts bytes; the emulated NICs count frames only.
        c.tx_bytes = Some(col(&|_| 0, &|p| p.tx_bytes));
        c.rx_bytes = Some(col(&|_| 0, &|p| p.rx_bytes));
        c.drops_buffer = Some(col(&|_| 0, &|p| p.drops));
        c.drops_no_route = Some(col(&|_| 0, &|p| p.unroutable));
        c.ecn_marks = Some(col(&|_| 0, &|p| p.ecn_marks));
        c.trims = Some(col(&|_| 0, &|p| p.trims));
        c.paused_ns = Some(col(&|_| 0, &|p| {
            self.scale.dur_to_virtual(p.paused_time).as_nanos()
        }));
        c.pfc_tx = per_priority(&|p| col(&|_| 0, &|c| c.pauses_sent_by_priority[p]));
        c.pfc_rx = per_priority(&|p| {
            col(&|h| h.c.pfc_received_by_priority[p], &|c| {
                c.pfc_received_by_priority[p]
            })
        });
        s.gauges.queue_bytes = BTreeMap::from([(0, col(&|_| 0, &|p| p.queue_bytes))]);
        s.flows = Some(flows(hosts));
        s.sum_ports_into_totals();
        let f = s.flows.as_deref().unwrap_or_default();
        s.totals.cnps = hosts.iter().map(|h| h.c.cnps_sent).sum();
        s.totals.nacks = hosts.iter().map(|h| h.c.naks_sent).sum();
        s.totals.flows_finished = f.iter().filter(|x| x.finished).count() as u64;
        s.totals.flows_active = f.len() as u64 - s.totals.flows_finished;
        s
    }
}

/// A column per priority that has any count (the others are absent).
fn per_priority(col: &dyn Fn(usize) -> Column) -> BTreeMap<u8, Column> {
    (0..PRIORITIES as usize)
        .map(|p| (p as u8, col(p)))
        .filter(|(_, c)| !c.all_zero())
        .collect()
}

/// Every sending flow, with what its receiver got.
fn flows(hosts: &[Host]) -> Vec<FlowSample> {
    let received = |id: u32| {
        hosts
            .iter()
            .find_map(|h| h.recv.get(&id))
            .map_or((0, false), |r| (r.bytes, r.completed.is_some()))
    };
    let host_of = |ip: std::net::Ipv4Addr| hosts.iter().position(|h| h.cfg.ip == ip);
    hosts
        .iter()
        .enumerate()
        .flat_map(|(src, h)| {
            h.flows.iter().map(move |f| {
                let (bytes, done) = received(f.id);
                FlowSample {
                    id: f.id as u64,
                    src: src as u32,
                    dst: host_of(f.dst_ip).map_or(u32::MAX, |d| d as u32),
                    rate_bps: Some(f.cc.rate().as_bps()),
                    window_bytes: None,
                    cnps: f.cnps,
                    nacks: f.naks,
                    rtt_ns: None,
                    bytes_done: bytes,
                    finished: done,
                }
            })
        })
        .collect()
}
