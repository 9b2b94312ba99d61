//! From `fabric-api` frames to what the screen shows: the port map becomes a
//! [`FabricView`], each pair of consecutive snapshots a [`Sample`] (rates computed by
//! `fabric_api::Interval`, both ports of a link folded), each event a line of text.
//! Runs on a source's thread, never on the UI thread.

use crate::app::Msg;
use crate::fabric::{FabricView, LinkLabel, NodeLabel};
use crate::metrics::{EventRow, FlowRow, LinkRates, PrioRates, Priorities, Sample, Severity};
use crate::units::duration;
use fabric_api::{Event, EventKind, FabricInfo, Frame, Interval, Snapshot};

/// Which link and which end each port is.
#[derive(Debug, Clone)]
pub struct PortMap {
    /// Link index of each port.
    pub link_of: Vec<u32>,
}

impl FabricView {
    /// From a source's port map. Ports with a link id become that link (lower-tier end
    /// first); a port with no link (a host whose peer is unknown) becomes a link of its own.
    pub fn from_info(info: &FabricInfo) -> (FabricView, PortMap) {
        let nodes: Vec<NodeLabel> = info
            .nodes
            .iter()
            .map(|n| NodeLabel {
                name: n.name.clone(),
                tier: n.tier,
                plane: n.plane,
                pod: n.pod,
            })
            .collect();
        let tier = |n: u32| nodes.get(n as usize).map_or(0, |x| x.tier);
        let plane = |n: u32| nodes.get(n as usize).and_then(|x| x.plane);
        let mut by_id: std::collections::HashMap<u32, u32> = Default::default();
        let mut links: Vec<LinkLabel> = Vec::new();
        let mut link_of = Vec::with_capacity(info.ports.len());
        for p in &info.ports {
            let existing = p.link.and_then(|l| by_id.get(&l.0).copied());
            if let Some(i) = existing {
                link_of.push(i);
                continue;
            }
            let (peer, peer_port) = (p.peer.unwrap_or(p.node), p.peer_port.unwrap_or(p.port));
            let (a, a_port, b, b_port) = if tier(p.node) <= tier(peer) {
                (p.node, p.port, peer, peer_port)
            } else {
                (peer, peer_port, p.node, p.port)
            };
            let i = links.len() as u32;
            links.push(LinkLabel {
                a,
                a_port,
                b,
                b_port,
                rate_bps: p.speed_bps,
                tier: tier(a).min(2),
                plane: plane(b).or(plane(a)),
            });
            if let Some(l) = p.link {
                by_id.insert(l.0, i);
            }
            link_of.push(i);
        }
        (
            FabricView::new(info.name.clone(), nodes, links),
            PortMap { link_of },
        )
    }
}

/// Turns a stream of frames into app messages.
#[derive(Debug)]
pub struct Aggregator {
    info: FabricInfo,
    map: PortMap,
    prev: Option<Snapshot>,
    /// When each link now down went down (ns), to say how long a repair took.
    down_since: std::collections::HashMap<u32, u64>,
}

impl Aggregator {
    /// For the fabric described by `info`.
    pub fn new(info: FabricInfo) -> (Aggregator, FabricView) {
        let (view, map) = FabricView::from_info(&info);
        (
            Aggregator {
                info,
                map,
                prev: None,
                down_since: Default::default(),
            },
            view,
        )
    }

    /// The port map in force.
    pub fn info(&self) -> &FabricInfo {
        &self.info
    }

    /// Forget the previous snapshot (after a seek: rates restart from the next pair).
    pub fn reset(&mut self) {
        self.prev = None;
    }

    /// The messages one frame produces (none for the first snapshot: rates need two).
    pub fn frame(&mut self, f: Frame, view: &FabricView) -> Vec<Msg> {
        match f {
            Frame::Fabric(info) => {
                let (agg, v) = Aggregator::new(info);
                *self = agg;
                vec![Msg::Fabric(Box::new(v))]
            }
            Frame::Snapshot(s) => self
                .snapshot(s, view)
                .map(Msg::Sample)
                .into_iter()
                .collect(),
            // Finished flows are in the flows view; as events they would bury the rest.
            Frame::Event(e) if matches!(e.what, EventKind::FlowFinished { .. }) => Vec::new(),
            Frame::Event(e) => {
                let mut row = event_row(&e, view, &self.info);
                match e.what {
                    EventKind::LinkDown { link, .. } => {
                        self.down_since.insert(link.0, e.time.ns);
                    }
                    EventKind::LinkUp { link, .. } => {
                        if let Some(t) = self.down_since.remove(&link.0) {
                            row.text +=
                                &format!(", down for {}", duration(e.time.ns.saturating_sub(t)));
                        }
                    }
                    _ => {}
                }
                vec![Msg::Event(row)]
            }
        }
    }

    /// The sample for the interval ending at `s` (None for the first snapshot, or one
    /// that is not comparable with the previous: it then starts a new interval).
    pub fn snapshot(&mut self, s: Snapshot, view: &FabricView) -> Option<Sample> {
        let out = self.prev.as_ref().and_then(|p| self.sample(p, &s, view));
        self.prev = Some(s);
        out
    }

    fn sample(&self, prev: &Snapshot, cur: &Snapshot, view: &FabricView) -> Option<Sample> {
        let iv = Interval::new(&self.info, prev, cur).ok()?;
        // one pass per column (a lookup per port and column costs a binary search in
        // every sparse column)
        let d = iv.deltas();
        let dt_s = iv.dt_ns() as f64 * 1e-9;
        let mut queue = vec![0u64; self.map.link_of.len()];
        for c in cur.gauges.queue_bytes.values() {
            c.add_to(&mut queue);
        }
        let mut links = vec![LinkRates::default(); view.links.len()];
        for (i, &l) in self.map.link_of.iter().enumerate() {
            let pd = d.port_delta(i);
            let r = pd.rate(d.dt_ns, d.speed_bps[i]);
            let x = &mut links[l as usize];
            x.util = x.util.max(r.utilisation.unwrap_or(0.0) as f32);
            x.bps = x.bps.max((r.tx_gbps.unwrap_or(0.0) * 1e9) as f32);
            x.drops_per_s += r.drops_per_s.unwrap_or(0.0) as f32;
            x.pfc_per_s += r.pfc_tx_per_s.or(r.pfc_rx_per_s).unwrap_or(0.0) as f32;
            x.paused = x.paused.max(r.paused_share.unwrap_or(0.0) as f32);
            x.ecn = x.ecn.max(r.ecn_mark_share.unwrap_or(0.0) as f32);
            x.ecn_per_s += (pd.ecn_marks.unwrap_or(0) as f64 / dt_s) as f32;
            x.queue_bytes = x.queue_bytes.max(queue[i].min(u32::MAX as u64) as u32);
        }
        for &p in &cur.gauges.oper_down {
            if let Some(&l) = self.map.link_of.get(p as usize) {
                links[l as usize].down = true;
            }
        }
        let priorities = self.priorities(prev, cur, dt_s);
        let t = &cur.totals;
        let mut s = Sample {
            at_ns: cur.time.ns,
            interval_ns: iv.dt_ns(),
            links,
            flows: cur
                .flows
                .as_deref()
                .unwrap_or(&[])
                .iter()
                .map(|f| flow_row(f, view))
                .collect(),
            priorities,
            ..Sample::default()
        };
        s.totals.drops_total = t.drops_buffer + t.drops_failure + t.drops_no_route + t.drops_kernel;
        s.finish(view);
        Some(s)
    }
}

impl Aggregator {
    /// Per-priority rates of the links that have any (PFC frames sent on either end,
    /// per priority; queue depth of the larger end): `None` when the snapshot has no
    /// per-priority column (the source does not count per priority).
    fn priorities(&self, prev: &Snapshot, cur: &Snapshot, dt_s: f64) -> Option<Priorities> {
        let (pfc, queue) = (&cur.counters.pfc_tx, &cur.gauges.queue_bytes);
        let mut measured: Vec<u8> = pfc.keys().chain(queue.keys()).copied().collect();
        measured.retain(|&p| p < 8);
        measured.sort_unstable();
        measured.dedup();
        if measured.is_empty() {
            return None;
        }
        let mut by_link: std::collections::BTreeMap<u32, PrioRates> = Default::default();
        for (&p, col) in pfc.iter().filter(|(p, _)| **p < 8) {
            let before = prev.counters.pfc_tx.get(&p);
            for (i, v) in col.nonzero() {
                let d = v.saturating_sub(before.map_or(0, |c| c.get(i)));
                if let (true, Some(&l)) = (d > 0, self.map.link_of.get(i)) {
                    by_link.entry(l).or_default().pfc_per_s[p as usize] += (d as f64 / dt_s) as f32;
                }
            }
        }
        for (&p, col) in queue.iter().filter(|(p, _)| **p < 8) {
            for (i, v) in col.nonzero() {
                if let Some(&l) = self.map.link_of.get(i) {
                    let q = &mut by_link.entry(l).or_default().queue_bytes[p as usize];
                    *q = (*q).max(v.min(u32::MAX as u64) as u32);
                }
            }
        }
        Some(Priorities {
            measured,
            links: by_link.into_iter().collect(),
        })
    }
}

fn flow_row(f: &fabric_api::FlowSample, v: &FabricView) -> FlowRow {
    FlowRow {
        id: f.id,
        src: v.node_name(f.src).to_string(),
        dst: v.node_name(f.dst).to_string(),
        rate_bps: f.rate_bps.map(|r| r as f64),
        window: f.window_bytes,
        cnps: f.cnps + f.nacks,
        rtt_ns: f.rtt_ns,
        bytes_done: f.bytes_done,
        finished: f.finished,
    }
}

type Described = (Severity, String, Option<u32>);

/// One line describing an event.
pub fn event_row(e: &Event, v: &FabricView, info: &FabricInfo) -> EventRow {
    let (severity, text, link) =
        link_event(&e.what, v).unwrap_or_else(|| other_event(&e.what, v, info));
    EventRow {
        at_ns: e.time.ns,
        severity,
        text,
        link,
    }
}

/// Links and switches going down and up, and reroutes.
fn link_event(what: &EventKind, v: &FabricView) -> Option<Described> {
    let link = |l: topo::LinkId| {
        if (l.0 as usize) < v.links.len() {
            v.link_name(l.0)
        } else {
            format!("link {}", l.0)
        }
    };
    Some(match what {
        EventKind::LinkDown {
            link: l,
            detected_by,
            detect_ns,
        } => {
            let after = detect_ns.map_or(String::new(), |d| {
                format!(", detected after {}", duration(d))
            });
            (
                Severity::Bad,
                format!("link down {} ({detected_by:?}{after})", link(*l)),
                Some(l.0),
            )
        }
        EventKind::LinkUp {
            link: l,
            detected_by,
        } => (
            Severity::Info,
            format!("link up {} ({detected_by:?})", link(*l)),
            Some(l.0),
        ),
        EventKind::SwitchDown { node, .. } => (
            Severity::Bad,
            format!("switch down {}", v.node_name(*node)),
            None,
        ),
        EventKind::SwitchUp { node, .. } => (
            Severity::Info,
            format!("switch up {}", v.node_name(*node)),
            None,
        ),
        EventKind::Reroute {
            links,
            switches_changed,
            unreachable_pairs,
            repaired_ns,
        } => {
            let mut text = match links.as_slice() {
                [] => "reroute (manual)".to_string(),
                [l] => format!("reroute after {}", link(*l)),
                [l, rest @ ..] => {
                    format!("reroute after {} and {} more links", link(*l), rest.len())
                }
            };
            if let Some(s) = switches_changed {
                text += &format!(", {} switches changed", s.len());
            }
            if let Some(u) = unreachable_pairs {
                text += &format!(", {u} unreachable pairs");
            }
            text += &format!(", repaired in {}", duration(*repaired_ns));
            let bad = unreachable_pairs.is_some_and(|u| u > 0);
            (
                if bad { Severity::Bad } else { Severity::Warn },
                text,
                links.first().map(|l| l.0),
            )
        }
        _ => return None,
    })
}

/// PFC storms, deadlocks, flows, miswiring and kinds this reader does not know.
fn other_event(what: &EventKind, v: &FabricView, info: &FabricInfo) -> Described {
    let port = |p: u32| {
        let Some(pi) = info.ports.get(p as usize) else {
            return format!("port {p}");
        };
        format!("{}:{}", v.node_name(pi.node), pi.port)
    };
    match what {
        EventKind::PfcStorm { port: p, priority } => (
            Severity::Bad,
            format!("PFC storm at {} priority {priority}", port(*p)),
            None,
        ),
        EventKind::PfcStormRestored {
            port: p,
            priority,
            lasted_ns,
        } => (
            Severity::Warn,
            format!(
                "PFC storm over at {} priority {priority}, lasted {}",
                port(*p),
                duration(*lasted_ns)
            ),
            None,
        ),
        EventKind::Deadlock { ports } => {
            let names: Vec<String> = ports.iter().take(4).map(|p| port(*p)).collect();
            (
                Severity::Bad,
                format!(
                    "PFC deadlock over {} ports: {}",
                    ports.len(),
                    names.join(", ")
                ),
                None,
            )
        }
        EventKind::FlowFinished {
            flow,
            src,
            dst,
            bytes,
            fct_ns,
        } => (
            Severity::Info,
            format!(
                "flow {flow} {} → {} finished: {}B in {}",
                v.node_name(*src),
                v.node_name(*dst),
                crate::units::si(*bytes as f64),
                duration(*fct_ns)
            ),
            None,
        ),
        EventKind::Miswiring {
            port: p,
            expected,
            found,
        } => (
            Severity::Bad,
            format!(
                "miswiring at {}: expected {expected}, found {found}",
                port(*p)
            ),
            None,
        ),
        other => (Severity::Warn, format!("event {other:?}"), None),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use fabric_api::{Column, Source, SourceKind, Timestamp};

    #[test]
    fn two_snapshots_make_link_rates() {
        let f = topo::generators::fat_tree(4, topo::Rate::gbps(400)).unwrap();
        let info = FabricInfo::from_topo(&f, 8);
        let (mut agg, view) = Aggregator::new(info.clone());
        assert_eq!(view.links.len(), f.num_links());
        assert_eq!(view, FabricView::from_topo(&f));
        let n = info.ports.len();
        let src = Source {
            kind: SourceKind::Sim,
            name: "t".into(),
        };
        let mut a = Snapshot::new(0, Timestamp::virtual_ns(0), src.clone());
        a.counters.tx_bytes = Some(Column::zeros(n));
        a.counters.drops_buffer = Some(Column::zeros(n));
        let mut b = Snapshot::new(1, Timestamp::virtual_ns(1_000_000), src);
        let mut tx = vec![0; n];
        tx[7] = 25_000_000; // port 7 = upper end of link 3: 200 Gb/s for 1 ms
        let mut drops = vec![0; n];
        drops[6] = 5;
        b.counters.tx_bytes = Some(Column::from(tx));
        b.counters.drops_buffer = Some(Column::from(drops));
        b.gauges.oper_down = vec![9];
        b.sum_ports_into_totals();
        assert!(agg.snapshot(a, &view).is_none());
        let s = agg.snapshot(b, &view).unwrap();
        assert_eq!(s.links[3].util, 0.5);
        assert_eq!(s.links[3].drops_per_s, 5000.0);
        assert!(s.links[4].down);
        assert_eq!(s.totals.drops_total, 5);
        assert_eq!(s.totals.worst_drop_link, Some(3));
        assert_eq!(s.totals.failed_links, 1);
    }

    /// More bytes in an interval than the line can carry read as 100 %, not 116 %
    /// (the header printed `max 116%`); the rate keeps what was counted.
    #[test]
    fn utilisation_above_line_rate_is_capped() {
        let f = topo::generators::fat_tree(4, topo::Rate::gbps(400)).unwrap();
        let info = FabricInfo::from_topo(&f, 8);
        let (mut agg, view) = Aggregator::new(info.clone());
        let n = info.ports.len();
        let src = Source {
            kind: SourceKind::Sim,
            name: "t".into(),
        };
        let mut a = Snapshot::new(0, Timestamp::virtual_ns(0), src.clone());
        a.counters.tx_bytes = Some(Column::zeros(n));
        let mut b = Snapshot::new(1, Timestamp::virtual_ns(1_000_000), src);
        let mut tx = vec![0; n];
        tx[7] = 58_000_000; // 464 Gb/s for 1 ms on a 400 Gb/s link: 116 %
        b.counters.tx_bytes = Some(Column::from(tx));
        agg.snapshot(a, &view);
        let s = agg.snapshot(b, &view).unwrap();
        assert_eq!(s.links[3].util, 1.0);
        assert!((s.links[3].bps - 464e9).abs() < 1e6, "{}", s.links[3].bps);
        let tier = s.totals.tiers[view.links[3].tier as usize];
        assert_eq!((tier.max, tier.p99), (1.0, 1.0));
    }
}
