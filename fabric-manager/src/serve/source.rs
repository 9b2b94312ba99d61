//! [`Source`]: what the collector owns and samples — the simulator today; the routed
//! veth testbed and a Linux host's own links share the same interface.

use std::sync::Arc;
use std::time::Duration;

use fabric_api::{Event, FabricInfo, Snapshot};
use topo::LinkId;

/// A telemetry source. The collector calls it from one thread, one call at a time.
pub trait Source: Send {
    /// The fabric map (sent once, first frame of every stream).
    fn info(&self) -> FabricInfo;
    /// The `topo` fabric behind the source, when it has one (for routes).
    fn fabric(&self) -> Option<Arc<topo::Fabric>>;
    /// Brings the source up to `elapsed` wall-clock time since start and returns snapshot
    /// number `seq` with the events since the previous one.
    fn sample(&mut self, elapsed: Duration, seq: u64) -> Result<(Snapshot, Vec<Event>), String>;
    /// Fails a link (as a real failure would: the source detects and reacts on its own).
    fn fail_link(&mut self, link: LinkId) -> Result<String, String>;
    /// Restores a failed link.
    fn restore_link(&mut self, link: LinkId) -> Result<String, String>;
}
