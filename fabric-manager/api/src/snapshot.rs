//! [`Snapshot`]: the state of every port (and flow) at one instant.
//!
//! Counters are **cumulative** (since the source started), so a reader that misses a
//! snapshot loses nothing; rates come from two snapshots ([`crate::rates`]). Gauges
//! (queue depth, oper state, speed) are instantaneous. Every per-port array follows the
//! port order of the stream's [`crate::FabricInfo`]. A counter the source does not
//! measure is absent (`None`); a measured counter that is zero everywhere is a sparse
//! column of a dozen bytes (`{"n":N,"i":[],"v":[]}`), so readers can tell "0" from "—".

use crate::fabric::same_len;
use crate::{Column, Error, FabricInfo, Result};
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use std::collections::BTreeMap;

/// Which clock a timestamp reads.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Clock {
    /// Simulated time since the start of the run.
    Virtual,
    /// Wall-clock time since the Unix epoch.
    WallClock,
}

/// An instant: nanoseconds on a [`Clock`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Timestamp {
    /// Nanoseconds (since the run started for [`Clock::Virtual`], since the Unix epoch
    /// for [`Clock::WallClock`]).
    pub ns: u64,
    /// Which clock.
    pub clock: Clock,
}

impl Timestamp {
    /// Virtual time.
    pub fn virtual_ns(ns: u64) -> Self {
        Timestamp {
            ns,
            clock: Clock::Virtual,
        }
    }
    /// Wall-clock time.
    pub fn wall_ns(ns: u64) -> Self {
        Timestamp {
            ns,
            clock: Clock::WallClock,
        }
    }
}

/// What kind of thing produced the telemetry.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum SourceKind {
    /// The packet simulator (`fabric sim`).
    Sim,
    /// The userspace-switch veth congestion testbed.
    VethCongestion,
    /// The routed (kernel forwarding) veth testbed.
    RoutedTestbed,
    /// A Linux host's (or namespaces') own links.
    LinuxHost,
    /// An InfiniBand subnet (OpenSM; counters from PerfMgt).
    Infiniband,
    /// A source this reader does not know (newer writer).
    #[serde(other)]
    Unknown,
}

/// The source of a snapshot.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Source {
    /// Kind.
    pub kind: SourceKind,
    /// Name (scenario, testbed or host name).
    pub name: String,
}

/// Cumulative per-port counters; each present column has one entry per port.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct PortCounters {
    /// Bytes transmitted (all frames).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tx_bytes: Option<Column>,
    /// Bytes received.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rx_bytes: Option<Column>,
    /// Frames transmitted.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tx_pkts: Option<Column>,
    /// Frames received.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rx_pkts: Option<Column>,
    /// Packets dropped at this egress for lack of buffer.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub drops_buffer: Option<Column>,
    /// Packets lost because this port's link had failed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub drops_failure: Option<Column>,
    /// Packets dropped here for want of a route.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub drops_no_route: Option<Column>,
    /// Drops the kernel reports on the interface (rx/tx dropped and errors).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub drops_kernel: Option<Column>,
    /// ECN CE marks applied at this egress.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ecn_marks: Option<Column>,
    /// Packets trimmed at this egress.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub trims: Option<Column>,
    /// PFC PAUSE frames sent by this port (toward its peer), per priority.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub pfc_tx: BTreeMap<u8, Column>,
    /// PFC PAUSE frames received on this port (its egress told to pause), per priority.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub pfc_rx: BTreeMap<u8, Column>,
    /// Nanoseconds this egress spent paused, summed over priorities.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub paused_ns: Option<Column>,
}

impl PortCounters {
    /// Every present column with its JSON name (the per-priority maps as `pfc_tx[p]`).
    pub fn columns(&self) -> Vec<(String, &Column)> {
        let plain = [
            ("tx_bytes", &self.tx_bytes),
            ("rx_bytes", &self.rx_bytes),
            ("tx_pkts", &self.tx_pkts),
            ("rx_pkts", &self.rx_pkts),
            ("drops_buffer", &self.drops_buffer),
            ("drops_failure", &self.drops_failure),
            ("drops_no_route", &self.drops_no_route),
            ("drops_kernel", &self.drops_kernel),
            ("ecn_marks", &self.ecn_marks),
            ("trims", &self.trims),
            ("paused_ns", &self.paused_ns),
        ];
        let mut out: Vec<(String, &Column)> = plain
            .into_iter()
            .filter_map(|(n, c)| c.as_ref().map(|c| (n.to_string(), c)))
            .collect();
        for (name, m) in [("pfc_tx", &self.pfc_tx), ("pfc_rx", &self.pfc_rx)] {
            out.extend(m.iter().map(|(p, c)| (format!("{name}[{p}]"), c)));
        }
        out
    }
}

/// Instantaneous per-port values.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct PortGauges {
    /// Bytes queued at this egress, per priority.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub queue_bytes: BTreeMap<u8, Column>,
    /// Ports whose oper state is down, ascending (empty: all up).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub oper_down: Vec<u32>,
    /// Current speed in bits/s, when the source reads it (absent: the fabric map's).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub speed_bps: Option<Column>,
}

/// One flow at the snapshot's instant.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct FlowSample {
    /// Flow id (stable over the run).
    pub id: u64,
    /// Source host (node index).
    pub src: u32,
    /// Destination host (node index).
    pub dst: u32,
    /// Sending rate in bits/s (rate-based control), if any.
    pub rate_bps: Option<u64>,
    /// Congestion window in bytes (window-based control), if any.
    pub window_bytes: Option<u64>,
    /// CNPs received so far.
    pub cnps: u64,
    /// NACKs received so far.
    pub nacks: u64,
    /// Latest RTT sample, ns.
    pub rtt_ns: Option<u64>,
    /// Bytes acknowledged so far.
    pub bytes_done: u64,
    /// True once the last byte was acknowledged.
    pub finished: bool,
}

/// Fabric-wide totals at the snapshot's instant (cumulative, like the counters).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct Totals {
    /// Bytes transmitted by all ports.
    pub tx_bytes: u64,
    /// Bytes received by all ports.
    pub rx_bytes: u64,
    /// Frames transmitted.
    pub tx_pkts: u64,
    /// Frames received.
    pub rx_pkts: u64,
    /// Drops for lack of buffer.
    pub drops_buffer: u64,
    /// Drops on failed links.
    pub drops_failure: u64,
    /// Drops for want of a route.
    pub drops_no_route: u64,
    /// Kernel-reported drops.
    pub drops_kernel: u64,
    /// ECN marks.
    pub ecn_marks: u64,
    /// Trimmed packets.
    pub trims: u64,
    /// PFC PAUSE frames sent (all priorities).
    pub pfc_tx: u64,
    /// PFC PAUSE frames received (all priorities).
    pub pfc_rx: u64,
    /// Paused time summed over ports, ns.
    pub paused_ns: u64,
    /// CNPs sent.
    pub cnps: u64,
    /// NACKs sent.
    pub nacks: u64,
    /// Flows started and not finished.
    pub flows_active: u64,
    /// Flows finished.
    pub flows_finished: u64,
}

/// The state of the fabric at one instant.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Snapshot {
    /// Sequence number, from 0, +1 per snapshot of the stream.
    pub seq: u64,
    /// When it was taken.
    pub time: Timestamp,
    /// Who took it.
    pub source: Source,
    /// Cumulative per-port counters.
    pub counters: PortCounters,
    /// Instantaneous per-port values.
    pub gauges: PortGauges,
    /// Flows, where the source has flows.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        serialize_with = "ser_flows",
        deserialize_with = "de_flows"
    )]
    pub flows: Option<Vec<FlowSample>>,
    /// Fabric totals.
    pub totals: Totals,
}

impl Snapshot {
    /// An empty snapshot (no counter measured) for `source` at `time`.
    pub fn new(seq: u64, time: Timestamp, source: Source) -> Self {
        Snapshot {
            seq,
            time,
            source,
            counters: PortCounters::default(),
            gauges: PortGauges::default(),
            flows: None,
            totals: Totals::default(),
        }
    }

    /// Sums the per-port counters into [`Self::totals`] (flow-level fields untouched).
    pub fn sum_ports_into_totals(&mut self) {
        let c = &self.counters;
        let s = |c: &Option<Column>| c.as_ref().map_or(0, Column::sum);
        let m = |m: &BTreeMap<u8, Column>| m.values().map(Column::sum).sum::<u64>();
        let t = &mut self.totals;
        t.tx_bytes = s(&c.tx_bytes);
        t.rx_bytes = s(&c.rx_bytes);
        t.tx_pkts = s(&c.tx_pkts);
        t.rx_pkts = s(&c.rx_pkts);
        t.drops_buffer = s(&c.drops_buffer);
        t.drops_failure = s(&c.drops_failure);
        t.drops_no_route = s(&c.drops_no_route);
        t.drops_kernel = s(&c.drops_kernel);
        t.ecn_marks = s(&c.ecn_marks);
        t.trims = s(&c.trims);
        t.pfc_tx = m(&c.pfc_tx);
        t.pfc_rx = m(&c.pfc_rx);
        t.paused_ns = s(&c.paused_ns);
    }

    /// Checks that every per-port array matches the fabric map (length, priorities,
    /// indices), so readers can index without bounds surprises.
    pub fn validate(&self, info: &FabricInfo) -> Result<()> {
        let n = info.ports.len();
        let check = |name: &str, c: &Column| {
            if c.len() == n {
                Ok(())
            } else {
                Err(Error::Invalid {
                    what: format!("snapshot {} counters.{name}", self.seq),
                    msg: format!("{} entries but the fabric has {n} ports", c.len()),
                })
            }
        };
        for (name, c) in self.counters.columns() {
            check(&name, c)?;
        }
        for (p, c) in &self.gauges.queue_bytes {
            check(&format!("gauges.queue_bytes[{p}]"), c)?;
        }
        if let Some(c) = &self.gauges.speed_bps {
            check("gauges.speed_bps", c)?;
        }
        let prios = self
            .counters
            .pfc_tx
            .keys()
            .chain(self.counters.pfc_rx.keys());
        if let Some(p) = prios
            .chain(self.gauges.queue_bytes.keys())
            .find(|&&p| p >= info.priorities)
        {
            return Err(Error::Invalid {
                what: format!("snapshot {} priority {p}", self.seq),
                msg: format!("the fabric declares {} priorities", info.priorities),
            });
        }
        if let Some(&p) = self.gauges.oper_down.iter().find(|&&p| p as usize >= n) {
            return Err(Error::Invalid {
                what: format!("snapshot {} gauges.oper_down", self.seq),
                msg: format!("port {p} but the fabric has {n} ports"),
            });
        }
        Ok(())
    }
}

/// JSON form of the flow table (one array per field; optional fields absent when no
/// flow has them).
#[derive(Serialize, Deserialize)]
struct FlowCols {
    id: Vec<u64>,
    src: Vec<u32>,
    dst: Vec<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    rate_bps: Option<Vec<Option<u64>>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    window_bytes: Option<Vec<Option<u64>>>,
    cnps: Column,
    nacks: Column,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    rtt_ns: Option<Vec<Option<u64>>>,
    bytes_done: Vec<u64>,
    finished: Vec<bool>,
}

fn opt_col(
    flows: &[FlowSample],
    f: impl Fn(&FlowSample) -> Option<u64>,
) -> Option<Vec<Option<u64>>> {
    flows
        .iter()
        .any(|x| f(x).is_some())
        .then(|| flows.iter().map(f).collect())
}

fn ser_flows<S: Serializer>(
    flows: &Option<Vec<FlowSample>>,
    s: S,
) -> std::result::Result<S::Ok, S::Error> {
    let Some(flows) = flows else {
        return s.serialize_none();
    };
    FlowCols {
        id: flows.iter().map(|f| f.id).collect(),
        src: flows.iter().map(|f| f.src).collect(),
        dst: flows.iter().map(|f| f.dst).collect(),
        rate_bps: opt_col(flows, |f| f.rate_bps),
        window_bytes: opt_col(flows, |f| f.window_bytes),
        cnps: Column::Dense(flows.iter().map(|f| f.cnps).collect()),
        nacks: Column::Dense(flows.iter().map(|f| f.nacks).collect()),
        rtt_ns: opt_col(flows, |f| f.rtt_ns),
        bytes_done: flows.iter().map(|f| f.bytes_done).collect(),
        finished: flows.iter().map(|f| f.finished).collect(),
    }
    .serialize(s)
}

fn de_flows<'de, D: Deserializer<'de>>(
    d: D,
) -> std::result::Result<Option<Vec<FlowSample>>, D::Error> {
    let Some(c) = Option::<FlowCols>::deserialize(d)? else {
        return Ok(None);
    };
    let n = c.id.len();
    let opt_len = |v: &Option<Vec<Option<u64>>>| v.as_ref().map_or(n, Vec::len);
    let lens = [
        n,
        c.src.len(),
        c.dst.len(),
        opt_len(&c.rate_bps),
        opt_len(&c.window_bytes),
        c.cnps.len(),
        c.nacks.len(),
        opt_len(&c.rtt_ns),
        c.bytes_done.len(),
        c.finished.len(),
    ];
    same_len("flows", &lens)?;
    let at = |v: &Option<Vec<Option<u64>>>, i: usize| v.as_ref().and_then(|v| v[i]);
    Ok(Some(
        (0..n)
            .map(|i| FlowSample {
                id: c.id[i],
                src: c.src[i],
                dst: c.dst[i],
                rate_bps: at(&c.rate_bps, i),
                window_bytes: at(&c.window_bytes, i),
                cnps: c.cnps.get(i),
                nacks: c.nacks.get(i),
                rtt_ns: at(&c.rtt_ns, i),
                bytes_done: c.bytes_done[i],
                finished: c.finished[i],
            })
            .collect(),
    ))
}
