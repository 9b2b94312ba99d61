//! [`DaemonHealth`]: what the daemon derives from the snapshots and events it sees —
//! carrier changes per port, the event-to-repaired histogram of reroutes, the PFC
//! watchdog over every queue that received PAUSE frames (`cc_algos::pfcwd`), link-flap
//! damping between link events and routing ([`super::damping`]), and alarms with
//! thresholds that clear on recovery ([`super::alarms`]) — exported in `/metrics` and
//! summarised in `/api/v1/health`.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::Mutex;

use cc_algos::Instant;
use cc_algos::pfcwd::{QueueSample, QueueWatch, Verdict, WatchCounters, WatchdogConfig};
use fabric_api::{Column, Event, EventKind, FabricInfo, Snapshot};
use prometheus_client::encoding::{DescriptorEncoder, EncodeMetric, NoLabelSet};
use prometheus_client::metrics::MetricType;
use prometheus_client::metrics::counter::ConstCounter;
use prometheus_client::metrics::gauge::ConstGauge;
use serde::Serialize;
use topo::LinkId;

use super::alarms::{Alarm, AlarmKind, Alarms, Severity};
use super::damping::{DampingConfig, LinkDamper};
use super::metrics::{PortLabels, Selection};

/// Upper bounds of the reroute histogram's buckets, seconds: 10 µs (the simulator's
/// re-route delay) to 10 s (FRR's BFD defaults detect in ~0.9 s, OpenSM sweeps every
/// 10 s), with 100 µs steps below 1 ms, where the routed testbed's repairs fall
/// (0.6–1.4 ms measured).
pub const REROUTE_BUCKETS: [f64; 18] = [
    0.00001, 0.0001, 0.0002, 0.0005, 0.0008, 0.001, 0.0015, 0.002, 0.005, 0.01, 0.02, 0.05, 0.1,
    0.5, 1.0, 2.0, 5.0, 10.0,
];

/// A cumulative histogram.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct Histogram {
    /// Observations per bucket (not cumulative), one more than the bounds (+Inf).
    pub counts: Vec<u64>,
    /// Sum of observations, seconds.
    pub sum: f64,
    /// Observations.
    pub count: u64,
}

impl Histogram {
    fn observe(&mut self, x: f64) {
        if self.counts.is_empty() {
            self.counts = vec![0; REROUTE_BUCKETS.len() + 1];
        }
        let b = REROUTE_BUCKETS
            .iter()
            .position(|&u| x <= u)
            .unwrap_or(REROUTE_BUCKETS.len());
        self.counts[b] += 1;
        self.sum += x;
        self.count += 1;
    }

    /// `(upper bound, cumulative count)` pairs, `+Inf` last.
    #[cfg(test)]
    pub fn cumulative(&self) -> Vec<(f64, u64)> {
        let mut acc = 0;
        REROUTE_BUCKETS
            .iter()
            .copied()
            .chain([f64::INFINITY])
            .enumerate()
            .map(|(i, u)| {
                acc += self.counts.get(i).copied().unwrap_or(0);
                (u, acc)
            })
            .collect()
    }
}

/// Thresholds of the per-port alarms.
#[derive(Debug, Clone, Copy)]
pub struct Thresholds {
    /// Transmit utilisation above which a port raises a warning.
    pub utilisation: f64,
    /// Share of an interval spent paused above which a port raises a warning.
    pub pause_share: f64,
}

impl Default for Thresholds {
    fn default() -> Self {
        Thresholds {
            utilisation: 0.95,
            pause_share: 0.5,
        }
    }
}

/// What the health checks use.
#[derive(Debug, Clone, Copy, Default)]
pub struct HealthConfig {
    /// PFC watchdog settings.
    pub pfcwd: WatchdogConfig,
    /// Link-flap damping settings.
    pub damping: DampingConfig,
    /// Alarm thresholds.
    pub thresholds: Thresholds,
}

/// Columns of the previous snapshot the checks take differences against.
#[derive(Debug, Default)]
struct Prev {
    t_ns: u64,
    tx_pkts: Vec<u64>,
    tx_bytes: Vec<u64>,
    drops: Vec<u64>,
    paused_ns: Vec<u64>,
    pfc_rx: BTreeMap<u8, Vec<u64>>,
}

/// Mutable part.
#[derive(Debug, Default)]
struct State {
    carrier_changes: Vec<u64>,
    reroute: Histogram,
    links_down: BTreeSet<u32>,
    switches_down: BTreeSet<u32>,
    switch_failures: u64,
    /// Drifted entries repaired so far: missing, extra, different.
    drift_repaired: [u64; 3],
    unreachable_pairs: u64,
    last_reroute_ns: Option<u64>,
    prev: Option<Prev>,
    watches: HashMap<(u32, u8), QueueWatch>,
    dampers: BTreeMap<u32, LinkDamper>,
    alarms: Alarms,
    drift: Option<RouteDrift>,
    topology: Option<TopologyCheck>,
    /// Snapshot sequence number of the latest link-down or link-up event.
    last_link_change_seq: Option<u64>,
}

/// The latest LLDP check of the cabling against the spec.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct TopologyCheck {
    /// Ports checked.
    pub ports: u64,
    /// Ports that heard a neighbour.
    pub heard: u64,
    /// Findings per kind (`missing`, `unexpected`, `miswired`, `spine-to-spine`,
    /// `leaf-misses-spine`), every kind present.
    pub mismatches: BTreeMap<String, u64>,
    /// Snapshot sequence number of the check.
    pub at_seq: u64,
    /// A link went down or up after the check: its findings may no longer hold until the
    /// next one (every `--drift-interval`, or `GET /api/v1/topology/check`).
    pub stale: bool,
}

/// The latest route-drift check (sources with a kernel data plane).
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct RouteDrift {
    /// Entries (switch, destination, family) compared.
    pub checked: u64,
    /// Routes the tables want and the kernel lacks.
    pub missing: u64,
    /// Routes the kernel has and the tables do not want.
    pub extra: u64,
    /// Routes with other next hops than the tables'.
    pub different: u64,
    /// Snapshot sequence number of the check.
    pub at_seq: u64,
    /// Time the check took, s.
    pub took_s: f64,
}

impl RouteDrift {
    /// Drifted entries.
    pub fn total(&self) -> u64 {
        self.missing + self.extra + self.different
    }
}

/// Health state derived from snapshots and events.
#[derive(Debug)]
pub struct DaemonHealth {
    cfg: HealthConfig,
    /// Ports of each link (`link → [port a, port b]`).
    link_ports: Vec<[u32; 2]>,
    /// `switch port` names of every port, for alarms.
    names: Vec<String>,
    /// Node names, for alarms.
    node_names: Vec<String>,
    /// The node of every port.
    port_nodes: Vec<u32>,
    speeds: Vec<u64>,
    state: Mutex<State>,
}

/// What one snapshot's checks produced.
#[derive(Debug, Default)]
pub struct Observed {
    /// New events (PFC storms and their restoration).
    pub events: Vec<Event>,
    /// Link states to pass on to routing after damping (`(link, up)`).
    pub links: Vec<(LinkId, bool)>,
}

/// A stormed queue in the health report.
#[derive(Debug, Clone, Serialize)]
pub struct Storm {
    /// Port index.
    pub port: u32,
    /// `switch port`.
    pub name: String,
    /// Priority.
    pub priority: u8,
}

/// The summary `/api/v1/health` serves.
#[derive(Debug, Clone, Serialize)]
pub struct HealthSummary {
    /// Links down now (link ids).
    pub links_down: Vec<u32>,
    /// Links damped now (link ids).
    pub links_damped: Vec<u32>,
    /// Switches down as a whole now (names), e.g. whose namespace was deleted.
    pub switches_down: Vec<String>,
    /// Host pairs without a route after the latest reroute.
    pub unreachable_pairs: u64,
    /// Reroutes seen and their event-to-repaired times.
    pub reroutes: Histogram,
    /// Latest reroute's event-to-repaired time, ns.
    pub last_reroute_ns: Option<u64>,
    /// Queues in a PFC storm now.
    pub pfc_storms: Vec<Storm>,
    /// Active alarms, most severe first.
    pub alarms: Vec<Alarm>,
    /// The latest route-drift check (absent: the source has no kernel routes).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub route_drift: Option<RouteDrift>,
    /// The latest cabling check (absent: the source has no cables to check).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub topology: Option<TopologyCheck>,
}

fn dense(c: &Option<Column>, n: usize) -> Vec<u64> {
    c.as_ref().map_or_else(|| vec![0; n], Column::to_dense)
}

impl DaemonHealth {
    /// Health of the fabric `info` maps.
    pub fn new(info: &FabricInfo, cfg: HealthConfig) -> Self {
        let mut link_ports: Vec<[u32; 2]> = Vec::new();
        for (i, p) in info.ports.iter().enumerate() {
            if let Some(l) = p.link {
                let l = l.0 as usize;
                if link_ports.len() <= l {
                    link_ports.resize(l + 1, [u32::MAX; 2]);
                }
                let slot = &mut link_ports[l];
                let k = usize::from(slot[0] != u32::MAX);
                slot[k] = i as u32;
            }
        }
        let names = (0..info.ports.len())
            .map(|i| {
                let node = info.port_node_name(i).unwrap_or("?");
                // `switch:port`, as the API names a link end (`POST /api/v1/links/A:2/fail`).
                format!("{node}:{}", info.ports[i].port)
            })
            .collect();
        DaemonHealth {
            cfg,
            link_ports,
            names,
            node_names: info.nodes.iter().map(|n| n.name.clone()).collect(),
            port_nodes: info.ports.iter().map(|p| p.node).collect(),
            speeds: info.ports.iter().map(|p| p.speed_bps).collect(),
            state: Mutex::new(State {
                carrier_changes: vec![0; info.ports.len()],
                ..State::default()
            }),
        }
    }

    fn link_ends(&self, l: u32) -> impl Iterator<Item = u32> + '_ {
        self.link_ports
            .get(l as usize)
            .into_iter()
            .flatten()
            .copied()
            .filter(|&p| p != u32::MAX)
    }

    fn node_name(&self, n: u32) -> String {
        self.node_names
            .get(n as usize)
            .cloned()
            .unwrap_or_else(|| format!("node {n}"))
    }

    /// Whether link `l` has an end on one of `nodes`.
    fn touches(&self, l: u32, nodes: &BTreeSet<u32>) -> bool {
        self.link_ends(l).any(|p| {
            self.port_nodes
                .get(p as usize)
                .is_some_and(|n| nodes.contains(n))
        })
    }

    fn link_name(&self, l: u32) -> String {
        let ends: Vec<&str> = self
            .link_ends(l)
            .map(|p| self.names[p as usize].as_str())
            .collect();
        format!("link {l} ({})", ends.join(" - "))
    }

    /// Takes one snapshot and its events into account.
    pub fn observe(&self, snap: &Snapshot, events: &[Event]) -> Observed {
        let mut st = self.state.lock().expect("health lock");
        let st = &mut *st;
        let mut out = Observed::default();
        let t = snap.time.ns;
        for e in events {
            self.on_event(st, snap.seq, t, e, &mut out);
        }
        let cfg = &self.cfg.damping;
        for (&l, d) in st.dampers.iter_mut() {
            if let Some(up) = d.on_tick(cfg, t) {
                out.links.push((LinkId(l), up));
            }
        }
        let damped: Vec<u32> = st
            .dampers
            .iter()
            .filter(|(_, d)| d.damped())
            .map(|(&l, _)| l)
            .collect();
        for l in st.alarms.keys(AlarmKind::LinkDamped) {
            if !damped.contains(&(l as u32)) {
                st.alarms
                    .set(false, AlarmKind::LinkDamped, l, || unreachable!());
            }
        }
        for l in damped {
            let penalty = st.dampers[&l].penalty();
            st.alarms
                .set(true, AlarmKind::LinkDamped, u64::from(l), || Alarm {
                    kind: AlarmKind::LinkDamped,
                    severity: Severity::Warning,
                    object: self.link_name(l),
                    message: format!("flapping: penalty {penalty:.0} over the suppress threshold"),
                    since_seq: snap.seq,
                });
        }
        let prev = st.prev.take();
        if let Some(prev) = &prev {
            self.watchdog(st, prev, snap, &mut out);
            self.port_alarms(st, prev, snap);
        }
        st.prev = Some(self.prev_of(snap));
        out
    }

    fn on_event(&self, st: &mut State, seq: u64, t: u64, e: &Event, out: &mut Observed) {
        match &e.what {
            EventKind::LinkDown { link, .. } | EventKind::LinkUp { link, .. } => {
                let up = matches!(e.what, EventKind::LinkUp { .. });
                st.last_link_change_seq = Some(seq);
                if up {
                    st.links_down.remove(&link.0);
                } else {
                    st.links_down.insert(link.0);
                }
                for p in self.link_ends(link.0) {
                    st.carrier_changes[p as usize] += 1;
                }
                let d = st.dampers.entry(link.0).or_default();
                if let Some(up) = d.on_change(&self.cfg.damping, t, up) {
                    out.links.push((*link, up));
                }
                st.alarms
                    .set(!up, AlarmKind::LinkDown, u64::from(link.0), || Alarm {
                        kind: AlarmKind::LinkDown,
                        severity: Severity::Minor,
                        object: self.link_name(link.0),
                        message: "link down".into(),
                        since_seq: seq,
                    });
            }
            EventKind::SwitchDown { node, .. } | EventKind::SwitchUp { node, .. } => {
                let down = matches!(e.what, EventKind::SwitchDown { .. });
                if down && st.switches_down.insert(*node) {
                    st.switch_failures += 1;
                } else if !down {
                    st.switches_down.remove(node);
                }
                st.alarms
                    .set(down, AlarmKind::SwitchDown, u64::from(*node), || Alarm {
                        kind: AlarmKind::SwitchDown,
                        severity: Severity::Critical,
                        object: self.node_name(*node),
                        message: "switch down: every link of it failed".into(),
                        since_seq: seq,
                    });
            }
            EventKind::Reroute {
                links,
                unreachable_pairs,
                repaired_ns,
                ..
            } => {
                // A recompute asked for over the API (no link changed) is not a repair.
                if !links.is_empty() {
                    st.reroute.observe(*repaired_ns as f64 * 1e-9);
                    st.last_reroute_ns = Some(*repaired_ns);
                }
                if let Some(u) = unreachable_pairs {
                    st.unreachable_pairs = *u;
                    st.alarms.set(*u > 0, AlarmKind::Unreachable, 0, || Alarm {
                        kind: AlarmKind::Unreachable,
                        severity: Severity::Critical,
                        object: "fabric".into(),
                        message: format!("{u} host pairs have no route"),
                        since_seq: seq,
                    });
                }
            }
            _ => {}
        }
    }

    /// Takes reroute events produced after [`Self::observe`] (the daemon's own table
    /// updates) into account.
    pub fn record(&self, seq: u64, t_ns: u64, events: &[Event]) {
        let mut st = self.state.lock().expect("health lock");
        let mut ignored = Observed::default();
        for e in events {
            self.on_event(&mut st, seq, t_ns, e, &mut ignored);
        }
    }

    fn prev_of(&self, s: &Snapshot) -> Prev {
        let n = self.names.len();
        let c = &s.counters;
        let drops = dense(&c.drops_buffer, n);
        Prev {
            t_ns: s.time.ns,
            tx_pkts: dense(&c.tx_pkts, n),
            tx_bytes: dense(&c.tx_bytes, n),
            drops,
            paused_ns: dense(&c.paused_ns, n),
            pfc_rx: c
                .pfc_rx
                .iter()
                .map(|(&p, col)| (p, col.to_dense()))
                .collect(),
        }
    }

    /// PFC watchdog: a queue is watched from its first PAUSE frame on.
    fn watchdog(&self, st: &mut State, prev: &Prev, s: &Snapshot, out: &mut Observed) {
        let now = Instant::from_picos(s.time.ns.saturating_mul(1000));
        let tx = s.counters.tx_pkts.as_ref();
        for (&prio, col) in &s.counters.pfc_rx {
            let before = prev.pfc_rx.get(&prio);
            let queue = s.gauges.queue_bytes.get(&prio);
            let mut ports: BTreeSet<u32> = col
                .nonzero()
                .filter(|&(i, v)| before.is_none_or(|b| b.get(i).copied().unwrap_or(0) != v))
                .map(|(i, _)| i as u32)
                .collect();
            ports.extend(st.watches.keys().filter(|k| k.1 == prio).map(|k| k.0));
            for p in ports {
                let i = p as usize;
                let sample = QueueSample {
                    paused: false,
                    queued_packets: queue.map_or(0, |q| q.get(i)),
                    tx_packets: tx.map_or(0, |c| c.get(i)),
                    pfc_rx: col.get(i),
                };
                let w = st.watches.entry((p, prio)).or_insert_with(|| {
                    // Prime it with the previous poll so the first difference counts.
                    let mut w = QueueWatch::default();
                    let first = QueueSample {
                        paused: false,
                        queued_packets: 0,
                        tx_packets: prev.tx_pkts.get(i).copied().unwrap_or(0),
                        pfc_rx: before.and_then(|b| b.get(i).copied()).unwrap_or(0),
                    };
                    w.on_sample(
                        &self.cfg.pfcwd,
                        Instant::from_picos(prev.t_ns.saturating_mul(1000)),
                        first,
                    );
                    w
                });
                let what = match w.on_sample(&self.cfg.pfcwd, now, sample) {
                    Verdict::None => continue,
                    Verdict::StormDetected => EventKind::PfcStorm {
                        port: p,
                        priority: prio,
                    },
                    Verdict::StormRestored { lasted } => EventKind::PfcStormRestored {
                        port: p,
                        priority: prio,
                        lasted_ns: lasted.as_picos() / 1000,
                    },
                };
                let on = matches!(what, EventKind::PfcStorm { .. });
                st.alarms.set(
                    on,
                    AlarmKind::PfcStorm,
                    u64::from(p) * 8 + u64::from(prio),
                    || Alarm {
                        kind: AlarmKind::PfcStorm,
                        severity: Severity::Critical,
                        object: format!("{} priority {prio}", self.names[i]),
                        message: format!("PFC storm, action {:?}", self.cfg.pfcwd.action),
                        since_seq: s.seq,
                    },
                );
                out.events.push(Event {
                    seq: s.seq,
                    time: s.time,
                    what,
                });
            }
        }
    }

    /// Utilisation, drops and pause share per port, against the thresholds.
    fn port_alarms(&self, st: &mut State, prev: &Prev, s: &Snapshot) {
        let dt = s.time.ns.saturating_sub(prev.t_ns);
        if dt == 0 {
            return;
        }
        let th = self.cfg.thresholds;
        let c = &s.counters;
        let delta = |col: &Option<Column>, before: &[u64], i: usize| {
            col.as_ref()
                .map_or(0, |c| c.get(i))
                .saturating_sub(before.get(i).copied().unwrap_or(0))
        };
        for i in 0..self.names.len() {
            let util = delta(&c.tx_bytes, &prev.tx_bytes, i) as f64 * 8e9
                / (dt as f64 * self.speeds[i].max(1) as f64);
            let drops = delta(&c.drops_buffer, &prev.drops, i);
            let paused = delta(&c.paused_ns, &prev.paused_ns, i) as f64 / dt as f64;
            let key = i as u64;
            let name = &self.names[i];
            // Messages are formatted only for alarms that are on (O(ports) per snapshot).
            st.alarms
                .set(util > th.utilisation, AlarmKind::Utilisation, key, || {
                    Alarm {
                        kind: AlarmKind::Utilisation,
                        severity: Severity::Warning,
                        object: name.clone(),
                        message: format!(
                            "utilisation {:.0} % over {:.0} %",
                            util * 100.0,
                            th.utilisation * 100.0
                        ),
                        since_seq: s.seq,
                    }
                });
            st.alarms.set(drops > 0, AlarmKind::Drops, key, || Alarm {
                kind: AlarmKind::Drops,
                severity: Severity::Minor,
                object: name.clone(),
                message: format!("{drops} packets dropped in the last interval"),
                since_seq: s.seq,
            });
            st.alarms
                .set(paused > th.pause_share, AlarmKind::PauseShare, key, || {
                    Alarm {
                        kind: AlarmKind::PauseShare,
                        severity: Severity::Warning,
                        object: name.clone(),
                        message: format!(
                            "paused {:.0} % of the interval (threshold {:.0} %)",
                            paused * 100.0,
                            th.pause_share * 100.0
                        ),
                        since_seq: s.seq,
                    }
                });
        }
    }

    /// The summary.
    pub fn summary(&self) -> HealthSummary {
        let s = self.state.lock().expect("health lock");
        HealthSummary {
            links_down: s.links_down.iter().copied().collect(),
            switches_down: s.switches_down.iter().map(|&n| self.node_name(n)).collect(),
            links_damped: s
                .dampers
                .iter()
                .filter(|(_, d)| d.damped())
                .map(|(&l, _)| l)
                .collect(),
            unreachable_pairs: s.unreachable_pairs,
            reroutes: s.reroute.clone(),
            last_reroute_ns: s.last_reroute_ns,
            pfc_storms: s
                .watches
                .iter()
                .filter(|(_, w)| w.stormed())
                .map(|(&(port, priority), _)| Storm {
                    port,
                    name: self.names[port as usize].clone(),
                    priority,
                })
                .collect(),
            alarms: s.alarms.list_without(|kind, key| {
                // A switch down is one alarm: its links' own link-down alarms are part of it.
                kind == AlarmKind::LinkDown && self.touches(key as u32, &s.switches_down)
            }),
            route_drift: s.drift.clone(),
            topology: s.topology.clone().map(|mut t| {
                t.stale = s.last_link_change_seq.is_some_and(|c| c >= t.at_seq);
                t
            }),
        }
    }

    /// Records a cabling check; a critical alarm while anything is miswired.
    pub fn set_topology(&self, t: TopologyCheck) {
        let mut st = self.state.lock().expect("health lock");
        let n: u64 = t.mismatches.values().sum();
        st.alarms.set(n > 0, AlarmKind::Miswiring, 0, || Alarm {
            kind: AlarmKind::Miswiring,
            severity: Severity::Critical,
            object: "cabling".into(),
            message: format!(
                "{n} LLDP findings on {} ports: {}",
                t.ports,
                t.mismatches
                    .iter()
                    .filter(|(_, v)| **v > 0)
                    .map(|(k, v)| format!("{v} {k}"))
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
            since_seq: t.at_seq,
        });
        st.topology = Some(t);
    }

    /// Records a route-drift check; a minor alarm while routes differ.
    pub fn set_drift(&self, d: RouteDrift) {
        let mut st = self.state.lock().expect("health lock");
        let n = d.total();
        st.alarms.set(n > 0, AlarmKind::RouteDrift, 0, || Alarm {
            kind: AlarmKind::RouteDrift,
            severity: Severity::Minor,
            object: "routes".into(),
            message: format!(
                "{n} of {} routes differ from the tables: {} missing, {} extra, {} different",
                d.checked, d.missing, d.extra, d.different
            ),
            since_seq: d.at_seq,
        });
        st.drift = Some(d);
    }

    /// Counts a drift repair's entries (`fabric_route_drift_repaired_total{kind}`).
    pub fn record_drift_repair(&self, r: &veth::routed::DriftRepair) {
        let mut st = self.state.lock().expect("health lock");
        for (i, n) in [r.missing, r.extra, r.different].into_iter().enumerate() {
            st.drift_repaired[i] += n as u64;
        }
    }

    /// `fabric_port_carrier_changes_total`.
    pub fn encode_carrier_changes(
        &self,
        enc: &mut DescriptorEncoder<'_>,
        (labels, sel): (&PortLabels, &Selection),
    ) -> std::fmt::Result {
        let s = self.state.lock().expect("health lock");
        let mut m = enc.encode_descriptor(
            "fabric_port_carrier_changes",
            "Carrier (link up/down) changes the daemon saw on this port",
            None,
            MetricType::Counter,
        )?;
        for i in sel.ports(s.carrier_changes.len()) {
            let c = s.carrier_changes[i];
            let set = labels.of(i);
            ConstCounter::new(c).encode(m.encode_family(&set)?)?;
        }
        Ok(())
    }

    /// The health metrics the selection asks for: reroute histogram, watchdog, damping,
    /// drift, cabling, switches down, alarms.
    pub fn encode(
        &self,
        enc: &mut DescriptorEncoder<'_>,
        (labels, sel): (&PortLabels, &Selection),
    ) -> std::fmt::Result {
        let s = self.state.lock().expect("health lock");
        if sel.family("fabric_reroute_duration_seconds") {
            self.encode_reroutes(enc, &s)?;
        }
        self.encode_ports(enc, &s, (labels, sel))?;
        self.encode_fabric(enc, &s, sel)
    }

    /// `fabric_reroute_duration_seconds`.
    fn encode_reroutes(&self, enc: &mut DescriptorEncoder<'_>, s: &State) -> std::fmt::Result {
        let mut m = enc.encode_descriptor(
            "fabric_reroute_duration_seconds",
            "From a link event to routes repaired",
            None,
            MetricType::Histogram,
        )?;
        let no_exemplars: Option<&HashMap<usize, _>> = None;
        // The encoder accumulates: hand it per-bucket counts.
        let buckets: Vec<(f64, u64)> = REROUTE_BUCKETS
            .iter()
            .copied()
            .chain([f64::INFINITY])
            .enumerate()
            .map(|(i, u)| (u, s.reroute.counts.get(i).copied().unwrap_or(0)))
            .collect();
        m.encode_histogram::<NoLabelSet>(s.reroute.sum, s.reroute.count, &buckets, no_exemplars)
    }

    /// The per-port health families: watchdog and damping.
    fn encode_ports(
        &self,
        enc: &mut DescriptorEncoder<'_>,
        s: &State,
        (labels, sel): (&PortLabels, &Selection),
    ) -> std::fmt::Result {
        let mut watches: Vec<(&(u32, u8), &QueueWatch)> = s.watches.iter().collect();
        watches.retain(|((port, _), _)| sel.has_port(*port as usize));
        watches.sort_by_key(|(k, _)| **k);
        for (name, help, get) in [
            (
                "fabric_pfcwd_storms_detected",
                "PFC storms the watchdog detected on this queue",
                (|c: WatchCounters| c.storms_detected) as fn(WatchCounters) -> u64,
            ),
            (
                "fabric_pfcwd_storms_restored",
                "PFC storms on this queue that ended",
                |c: WatchCounters| c.storms_restored,
            ),
        ] {
            if !sel.family(name) {
                continue;
            }
            let mut m = enc.encode_descriptor(name, help, None, MetricType::Counter)?;
            for ((port, prio), w) in &watches {
                let [a, b] = labels.of(*port as usize);
                let p = prio.to_string();
                let set = [a, b, ("priority", p.as_str())];
                ConstCounter::new(get(w.counters())).encode(m.encode_family(&set)?)?;
            }
        }
        let ends = |l: u32| self.link_ends(l).filter(|&p| sel.has_port(p as usize));
        if sel.family("fabric_link_damped") {
            let mut m = enc.encode_descriptor(
                "fabric_link_damped",
                "1 while the link on this port is held down by flap damping",
                None,
                MetricType::Gauge,
            )?;
            for (&l, d) in &s.dampers {
                for p in ends(l) {
                    let set = labels.of(p as usize);
                    ConstGauge::new(i64::from(d.damped())).encode(m.encode_family(&set)?)?;
                }
            }
        }
        if !sel.family("fabric_link_flap_events") {
            return Ok(());
        }
        let mut m = enc.encode_descriptor(
            "fabric_link_flap_events",
            "Link state changes on this port before and after damping",
            None,
            MetricType::Counter,
        )?;
        for (&l, d) in &s.dampers {
            for p in ends(l) {
                let [a, b] = labels.of(p as usize);
                for (stage, v) in [
                    ("before_damping", d.events_before),
                    ("after_damping", d.events_after),
                ] {
                    ConstCounter::new(v).encode(m.encode_family(&[a, b, ("stage", stage)])?)?;
                }
            }
        }
        Ok(())
    }

    /// The fabric-wide health families: drift, cabling, switches down, alarms.
    fn encode_fabric(
        &self,
        enc: &mut DescriptorEncoder<'_>,
        s: &State,
        sel: &Selection,
    ) -> std::fmt::Result {
        if let Some(d) = s
            .drift
            .as_ref()
            .filter(|_| sel.family("fabric_route_drift_entries"))
        {
            let mut m = enc.encode_descriptor(
                "fabric_route_drift_entries",
                "Routes that differ from the tables at the latest check, by kind",
                None,
                MetricType::Gauge,
            )?;
            for (kind, v) in [
                ("missing", d.missing),
                ("extra", d.extra),
                ("different", d.different),
            ] {
                ConstGauge::new(v as i64).encode(m.encode_family(&[("kind", kind)])?)?;
            }
        }
        if s.drift.is_some() && sel.family("fabric_route_drift_repaired") {
            let mut m = enc.encode_descriptor(
                "fabric_route_drift_repaired",
                "Drifted route entries the daemon re-programmed (missing, different) or removed (extra)",
                None,
                MetricType::Counter,
            )?;
            for (kind, v) in ["missing", "extra", "different"]
                .into_iter()
                .zip(s.drift_repaired)
            {
                ConstCounter::new(v).encode(m.encode_family(&[("kind", kind)])?)?;
            }
        }
        if let Some(t) = s
            .topology
            .as_ref()
            .filter(|_| sel.family("fabric_topology_mismatches"))
        {
            let mut m = enc.encode_descriptor(
                "fabric_topology_mismatches",
                "Cabling findings of the latest LLDP check against the spec, by kind",
                None,
                MetricType::Gauge,
            )?;
            for (kind, v) in &t.mismatches {
                ConstGauge::new(*v as i64).encode(m.encode_family(&[("kind", kind.as_str())])?)?;
            }
        }
        if sel.family("fabric_switches_down") {
            let m = enc.encode_descriptor(
                "fabric_switches_down",
                "Switches down as a whole (every link failed, e.g. the namespace deleted)",
                None,
                MetricType::Gauge,
            )?;
            ConstGauge::new(s.switches_down.len() as i64).encode(m)?;
        }
        if sel.family("fabric_unreachable_host_pairs") {
            let m = enc.encode_descriptor(
                "fabric_unreachable_host_pairs",
                "Host pairs with no route in the daemon's tables after the latest reroute",
                None,
                MetricType::Gauge,
            )?;
            ConstGauge::new(s.unreachable_pairs as i64).encode(m)?;
        }
        if sel.family("fabric_switch_failures") {
            let m = enc.encode_descriptor(
                "fabric_switch_failures",
                "Switches that went down as a whole since the daemon started",
                None,
                MetricType::Counter,
            )?;
            ConstCounter::new(s.switch_failures).encode(m)?;
        }
        if !sel.family("fabric_alarms_active") {
            return Ok(());
        }
        let mut m = enc.encode_descriptor(
            "fabric_alarms_active",
            "Active alarms by severity",
            None,
            MetricType::Gauge,
        )?;
        for sev in Severity::ALL {
            let set = [("severity", sev.as_str())];
            ConstGauge::new(s.alarms.count(sev) as i64).encode(m.encode_family(&set)?)?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn histogram_buckets_are_cumulative() {
        let mut h = Histogram::default();
        for x in [0.0005, 0.004, 0.004, 30.0] {
            h.observe(x);
        }
        let c = h.cumulative();
        assert_eq!(c[0], (0.00001, 0));
        assert_eq!(c[3], (0.0005, 1), "a 0.5 ms repair falls below 1 ms");
        assert_eq!(c[5], (0.001, 1));
        assert_eq!(c[8], (0.005, 3));
        assert_eq!(c.last().unwrap().1, 4);
        assert_eq!(h.count, 4);
    }

    fn fabric() -> (FabricInfo, DaemonHealth) {
        let f = topo::generators::fat_tree(4, topo::Rate::gbps(100)).unwrap();
        let info = FabricInfo::from_topo(&f, 8);
        let h = DaemonHealth::new(&info, HealthConfig::default());
        (info, h)
    }

    fn snap(info: &FabricInfo, seq: u64, ms: u64, pfc_rx: u64, queued: u64, tx: u64) -> Snapshot {
        let n = info.ports.len();
        let src = fabric_api::Source {
            kind: fabric_api::SourceKind::Sim,
            name: "t".into(),
        };
        let mut s = Snapshot::new(seq, fabric_api::Timestamp::virtual_ns(ms * 1_000_000), src);
        let col = |v: u64| {
            let mut c = vec![0; n];
            c[5] = v;
            Column::from(c)
        };
        s.counters.pfc_rx.insert(3, col(pfc_rx));
        s.counters.tx_pkts = Some(col(tx));
        s.gauges.queue_bytes.insert(3, col(queued));
        s
    }

    /// A host that keeps pausing port 5, priority 3: a storm event after the detection
    /// time (200 ms, SONiC's default), a critical alarm, restored when it stops.
    #[test]
    fn simulated_storm_through_the_daemon() {
        let (info, h) = fabric();
        let mut storms = Vec::new();
        for k in 0..=6u64 {
            let o = h.observe(&snap(&info, k, 100 * k, 10 * k, 4096, 77), &[]);
            storms.extend(o.events.into_iter().map(|e| (k, e.what)));
        }
        // Stuck since the poll at 0 ms; the polls at 100 and 200 ms agree: storm at 200 ms.
        assert_eq!(
            storms,
            vec![(
                2,
                EventKind::PfcStorm {
                    port: 5,
                    priority: 3
                }
            )]
        );
        let sum = h.summary();
        assert_eq!(sum.pfc_storms.len(), 1);
        assert_eq!(sum.alarms[0].severity, Severity::Critical);
        assert!(
            sum.alarms[0].object.contains("priority 3"),
            "{:?}",
            sum.alarms
        );
        // The host stops: no PAUSE frames, the queue drains.
        let mut restored = None;
        for k in 7..=12u64 {
            let o = h.observe(&snap(&info, k, 100 * k, 60, 0, 77 + k), &[]);
            if let Some(e) = o.events.first() {
                restored = Some((k, e.what.clone()));
            }
        }
        assert_eq!(
            restored,
            Some((
                8,
                EventKind::PfcStormRestored {
                    port: 5,
                    priority: 3,
                    lasted_ns: 600_000_000
                }
            ))
        );
        assert!(h.summary().alarms.is_empty(), "cleared on recovery");
    }

    #[test]
    fn flapping_links_are_damped_before_routing() {
        let (info, h) = fabric();
        let link = LinkId(7);
        let ev = |seq, up: bool| Event {
            seq,
            time: fabric_api::Timestamp::virtual_ns(seq * 500_000_000),
            what: if up {
                EventKind::LinkUp {
                    link,
                    detected_by: fabric_api::Detector::Carrier,
                }
            } else {
                EventKind::LinkDown {
                    link,
                    detected_by: fabric_api::Detector::Carrier,
                    detect_ns: None,
                }
            },
        };
        let mut passed = Vec::new();
        for k in 0..8u64 {
            let mut s = snap(&info, k, 500 * k, 0, 0, 0);
            s.counters.pfc_rx.clear();
            passed.extend(h.observe(&s, &[ev(k, k % 2 == 1)]).links);
        }
        // down, up, down, up, down (damped: passed on), then up/down/up held.
        let ups: Vec<bool> = passed.iter().map(|&(_, up)| up).collect();
        assert_eq!(ups, vec![false, true, false, true, false]);
        let sum = h.summary();
        assert_eq!(sum.links_damped, vec![7]);
        assert!(sum.alarms.iter().any(|a| a.kind == AlarmKind::LinkDamped));
    }
}
