//! [`Event`]: something that happened between two snapshots.
//!
//! An event carries the sequence number of the snapshot it belongs to (the first snapshot
//! taken at or after it, i.e. the one whose counters include its effects) and its own
//! timestamp. [`EventKind`] is tagged by `"kind"` and open: a kind this reader does not
//! know reads as [`EventKind::Unknown`] instead of failing the stream.

use crate::{Timestamp, ids};
use serde::{Deserialize, Serialize};
use topo::LinkId;

/// What noticed a change.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Detector {
    /// The source injected it itself (a simulated failure, a test's own netlink call).
    Injected,
    /// Carrier / oper-state change (netlink link event).
    Carrier,
    /// Probes stopped (or started) getting through.
    Probe,
    /// A counter moved the way only this could explain.
    Counters,
    /// A detector this reader does not know.
    #[serde(other)]
    Unknown,
}

/// One event.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Event {
    /// The snapshot it belongs to (the first one taken at or after it).
    pub seq: u64,
    /// When it happened.
    pub time: Timestamp,
    /// What happened.
    pub what: EventKind,
}

/// What happened. Ports are indices into the stream's [`crate::FabricInfo::ports`],
/// nodes indices into its `nodes`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "kebab-case")]
#[non_exhaustive]
pub enum EventKind {
    /// A link went down.
    LinkDown {
        /// The link.
        #[serde(with = "ids::link")]
        link: LinkId,
        /// What noticed it.
        detected_by: Detector,
        /// From the failure to its detection, ns, when known.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        detect_ns: Option<u64>,
    },
    /// A link came back.
    LinkUp {
        /// The link.
        #[serde(with = "ids::link")]
        link: LinkId,
        /// What noticed it.
        detected_by: Detector,
    },
    /// A whole switch failed (all its links down).
    SwitchDown {
        /// The switch (node index).
        node: u32,
        /// What noticed it.
        detected_by: Detector,
    },
    /// A failed switch came back.
    SwitchUp {
        /// The switch (node index).
        node: u32,
        /// What noticed it.
        detected_by: Detector,
    },
    /// Routes were recomputed and installed after a failure or restore.
    Reroute {
        /// Links whose state change caused it.
        #[serde(default, with = "ids::links")]
        links: Vec<LinkId>,
        /// Switches whose tables changed (node indices); absent when the source did not
        /// work it out (too large a fabric to compare tables on the event path).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        switches_changed: Option<Vec<u32>>,
        /// Host pairs with no route left after it; absent when not counted.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        unreachable_pairs: Option<u64>,
        /// From the event (the failure) to routes repaired, ns.
        repaired_ns: u64,
    },
    /// A port kept sending PAUSE on a priority for longer than the storm threshold.
    PfcStorm {
        /// The port sending PAUSE.
        port: u32,
        /// PFC priority.
        priority: u8,
    },
    /// Routes that had drifted from the tables were re-programmed: missing and different
    /// ones re-added, extra ones the daemon wrote removed.
    RoutesRepaired {
        /// Missing routes re-added.
        missing: u64,
        /// Extra routes removed.
        extra: u64,
        /// Different routes re-programmed.
        different: u64,
        /// Extra routes left because another routing protocol wrote them.
        skipped: u64,
    },
    /// A PFC storm ended.
    PfcStormRestored {
        /// The port.
        port: u32,
        /// PFC priority.
        priority: u8,
        /// How long it lasted, ns.
        lasted_ns: u64,
    },
    /// Paused egress ports waiting on each other in a cycle (a PFC deadlock).
    Deadlock {
        /// The cycle, as port indices.
        ports: Vec<u32>,
    },
    /// A sized flow delivered its last byte.
    FlowFinished {
        /// Flow id (as in [`crate::FlowSample::id`]).
        flow: u64,
        /// Source host (node index).
        src: u32,
        /// Destination host (node index).
        dst: u32,
        /// Flow size, bytes.
        bytes: u64,
        /// Flow completion time, ns.
        fct_ns: u64,
    },
    /// A port is cabled to something other than the fabric map says.
    Miswiring {
        /// The port.
        port: u32,
        /// The peer the map expects (name).
        expected: String,
        /// The peer found (name, or what was seen).
        found: String,
    },
    /// An event kind this reader does not know (written by a newer writer).
    #[serde(other)]
    Unknown,
}
