//! [`Source`]: what the collector owns and samples — the simulator
//! ([`super::sim_source`]) or the routed veth testbed ([`super::testbed_source`]).
//!
//! Reading and acting are separate capabilities: every source reports (snapshots,
//! events, drift, cabling); only a source that may write hands out an [`Actuator`]
//! through [`Source::actuator`]. An observe-only source returns `None` there, so no
//! request can fail a link or rewrite a route through it: it has no code that could.

use std::sync::Arc;
use std::time::Duration;

use fabric_api::{Event, FabricInfo, Snapshot};
use topo::LinkId;

/// What a source describes once, at start.
#[derive(Debug, Clone)]
pub struct SourceMap {
    /// The fabric map (sent once, first frame of every stream).
    pub info: FabricInfo,
    /// The `topo` fabric behind the source, when it has one (for routes).
    pub fabric: Option<Arc<topo::Fabric>>,
}

impl SourceMap {
    /// The map of a source: its fabric map and, when it has one, its `topo` fabric.
    pub fn new(info: FabricInfo, fabric: Option<Arc<topo::Fabric>>) -> Self {
        SourceMap { info, fabric }
    }
}

/// Where a node of a source lives: its network namespace and the kernel's name of each
/// of its ports (`GET /api/v1/namespaces`). The API names a port `NODE:PORT` (and the
/// exports `swp<PORT+1>`); the testbed's interfaces are `p<PORT>`.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct NodePlace {
    /// Node name.
    pub node: String,
    /// The network namespace holding it (`ip netns exec NETNS …`); a path for the
    /// namespace the daemon runs in (`/proc/self/ns/net`).
    pub netns: String,
    /// Its ports.
    pub ports: Vec<PortPlace>,
}

/// One port of a [`NodePlace`].
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct PortPlace {
    /// Port number (the API's `port`).
    pub port: u16,
    /// The API's name of the port, `NODE:PORT` (what `/api/v1/links/{link}/fail` takes).
    pub api: String,
    /// The kernel's interface name in the node's namespace (`ip -n NETNS link show IFNAME`).
    pub ifname: String,
}

/// One sample of a source.
#[derive(Debug)]
pub struct Sample {
    /// The snapshot; `None` when the read brought nothing new (an observed fabric whose
    /// exporters were not scraped since the last one): no snapshot is published, readers
    /// keep the last one and its rates, and the events wait for the next snapshot.
    pub snapshot: Option<Snapshot>,
    /// Events since the previous sample.
    pub events: Vec<Event>,
    /// Time spent reading the state into the snapshot (as opposed to advancing the
    /// source), ns, when the source measures it.
    pub read_ns: Option<u64>,
}

/// A telemetry source. The collector calls it from one thread, one call at a time.
pub trait Source: Send {
    /// The port map and the fabric.
    fn map(&self) -> SourceMap;
    /// Brings the source up to `elapsed` wall-clock time since start and returns snapshot
    /// number `seq` with the events since the previous one.
    fn sample(&mut self, elapsed: Duration, seq: u64) -> Result<Sample, String>;
    /// True when the source reports its own `Reroute` events (the simulator and the
    /// testbed do); false makes the collector report the daemon's table updates as
    /// reroutes.
    fn reports_reroutes(&self) -> bool {
        true
    }
    /// Errors the source met and survived since the previous call (background work such
    /// as a link watcher); the collector adds them to `fabric_daemon_source_errors_total`.
    fn take_errors(&mut self) -> u64 {
        0
    }
    /// Reads back the routes the source's data plane holds and compares them with its
    /// tables; `None` when there is nothing to compare (the simulator forwards from the
    /// tables themselves).
    fn drift(&mut self) -> Option<Result<veth::routed::Drift, String>> {
        None
    }
    /// Checks the cabling against the spec (LLDP on every port); `None` when the source
    /// has no cables to check.
    fn check_topology(&mut self) -> Option<Result<veth::routed::NeighbourReport, String>> {
        None
    }
    /// Where each node lives (namespace, kernel interface names); `None` for a source
    /// without namespaces (the simulator, a fabric observed from outside).
    fn places(&self) -> Option<Vec<NodePlace>> {
        None
    }
    /// The source's write capability; `None` for a source that only observes.
    fn actuator(&mut self) -> Option<&mut dyn Actuator> {
        None
    }
}

/// What a source that may act on its fabric can do. Only sources that own their fabric
/// (the simulator, a testbed the daemon built or adopted) implement it.
pub trait Actuator {
    /// Reprograms the routes that drifted (see [`veth::routed::RoutedTestbed::repair_drift`])
    /// and compares again: the repair and the drift left after it; `None` when there is
    /// nothing to compare.
    fn repair_drift(
        &mut self,
    ) -> Option<Result<(veth::routed::DriftRepair, veth::routed::Drift), String>> {
        None
    }
    /// Fails a link (as a real failure would: the source detects and reacts on its own).
    fn fail_link(&mut self, link: LinkId) -> Result<String, String>;
    /// Restores a failed link.
    fn restore_link(&mut self, link: LinkId) -> Result<String, String>;
}

/// The answer to a request to act on a source that only observes.
pub const OBSERVE_ONLY: &str =
    "this daemon only observes its fabric: it never fails links or writes routes";
