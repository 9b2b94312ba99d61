//! [`Event`]: something that happened between two snapshots.
//!
//! An event carries the sequence number of the snapshot it belongs to (the first snapshot
//! taken at or after it, i.e. the one whose counters include its effects) and its own
//! timestamp. [`EventKind`] is tagged by `"kind"` and open: a kind this reader does not
//! know reads as [`EventKind::Unknown`] instead of failing the stream.

use crate::{FabricInfo, Timestamp, ids};
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

impl Event {
    /// Where it happened, named from the fabric map: `switch:port` for every port it
    /// concerns (both ends of a link, in link order), a switch's name for a whole switch,
    /// the two hosts of a flow. Empty for an event about no one place (route repairs) or
    /// of a kind this reader does not know; an index outside the map reads `port 7`,
    /// `node 7`, `link 7`.
    pub fn places(&self, info: &FabricInfo) -> Vec<String> {
        match &self.what {
            EventKind::LinkDown { link, .. } | EventKind::LinkUp { link, .. } => {
                link_ends(info, *link)
            }
            EventKind::SwitchDown { node, .. } | EventKind::SwitchUp { node, .. } => {
                vec![node_name(info, *node)]
            }
            EventKind::Reroute { links, .. } => {
                links.iter().flat_map(|l| link_ends(info, *l)).collect()
            }
            EventKind::PfcStorm { port, .. }
            | EventKind::PfcStormRestored { port, .. }
            | EventKind::Miswiring { port, .. } => vec![port_name(info, *port)],
            EventKind::Deadlock { ports } => ports.iter().map(|p| port_name(info, *p)).collect(),
            EventKind::FlowFinished { src, dst, .. } => {
                vec![node_name(info, *src), node_name(info, *dst)]
            }
            EventKind::RoutesRepaired { .. } | EventKind::Unknown => Vec::new(),
        }
    }
}

fn node_name(info: &FabricInfo, n: u32) -> String {
    info.nodes
        .get(n as usize)
        .map_or_else(|| format!("node {n}"), |x| x.name.clone())
}

/// `switch:port` of port index `p`.
pub fn port_name(info: &FabricInfo, p: u32) -> String {
    match info.ports.get(p as usize) {
        Some(x) => format!("{}:{}", node_name(info, x.node), x.port),
        None => format!("port {p}"),
    }
}

/// Both ends of link `l`: its ports are `2·l` and `2·l + 1` in maps made from a design
/// (checked), else found by a scan.
fn link_ends(info: &FabricInfo, l: LinkId) -> Vec<String> {
    let of = |p: u32| {
        info.ports
            .get(p as usize)
            .is_some_and(|x| x.link == Some(l))
    };
    let ends: Vec<u32> = if of(2 * l.0) && of(2 * l.0 + 1) {
        vec![2 * l.0, 2 * l.0 + 1]
    } else {
        (0..info.ports.len() as u32).filter(|&p| of(p)).collect()
    };
    if ends.is_empty() {
        return vec![format!("link {}", l.0)];
    }
    ends.into_iter().map(|p| port_name(info, p)).collect()
}

/// An event with its places named ([`Event::places`]), as the daemon serves it:
/// `{"seq":…,"time":…,"what":{…},"at":["leaf0:3","spine1:0"]}`, so a reader without
/// the fabric map (curl, jq, an alert) can tell where. A reader of [`Event`] ignores
/// `at`; an event without places has none.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct NamedEvent {
    /// The event.
    #[serde(flatten)]
    pub event: Event,
    /// Its places, `switch:port` (see [`Event::places`]).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub at: Vec<String>,
    /// The tenants it concerns (`fabric serve --tenants`: a tenant's host link, port or
    /// host), absent when none.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tenants: Vec<String>,
}

impl NamedEvent {
    /// `event` with its places named from `info`.
    pub fn new(event: Event, info: &FabricInfo) -> NamedEvent {
        let at = event.places(info);
        NamedEvent {
            event,
            at,
            tenants: Vec::new(),
        }
    }

    /// The same, naming the tenants it concerns.
    pub fn with_tenants(mut self, tenants: Vec<String>) -> NamedEvent {
        self.tenants = tenants;
        self
    }

    /// The event frame as one JSON line (`{"event":{…,"at":[…]}}` and `\n`), read back by
    /// [`crate::Frame::from_json_line`] as a [`crate::Frame::Event`].
    pub fn to_json_line(&self) -> String {
        #[derive(Serialize)]
        struct Line<'a> {
            event: &'a NamedEvent,
        }
        let mut s = serde_json::to_string(&Line { event: self }).expect("events serialize");
        s.push('\n');
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Frame, Timestamp};

    #[test]
    fn events_name_their_places_switch_port() {
        let f = topo::generators::fat_tree(4, topo::Rate::gbps(400)).unwrap();
        let info = FabricInfo::from_topo(&f, 8);
        let l = LinkId(20);
        let link = f.link(l);
        let end = |n: topo::NodeId, p| format!("{}:{}", f.node_name(n), p);
        let ev = Event {
            seq: 3,
            time: Timestamp::virtual_ns(5),
            what: EventKind::LinkDown {
                link: l,
                detected_by: Detector::Carrier,
                detect_ns: None,
            },
        };
        let want = vec![end(link.a, link.a_port), end(link.b, link.b_port)];
        assert_eq!(ev.places(&info), want);
        // the line carries the names, and reads back as the same event
        let named = NamedEvent::new(ev.clone(), &info);
        let line = named.to_json_line();
        assert!(
            line.contains(&format!("\"at\":[\"{}\",\"{}\"]", want[0], want[1])),
            "{line}"
        );
        assert_eq!(
            Frame::from_json_line(line.as_bytes()).unwrap(),
            Frame::Event(ev)
        );
        let back: NamedEvent =
            serde_json::from_str(&serde_json::to_string(&named).unwrap()).unwrap();
        assert_eq!(back, named);
        // ports, switches, and indices the map does not hold
        let storm = EventKind::PfcStorm {
            port: 2 * 20 + 1,
            priority: 3,
        };
        let e = |what| Event {
            seq: 0,
            time: Timestamp::virtual_ns(0),
            what,
        };
        assert_eq!(e(storm).places(&info), vec![want[1].clone()]);
        let sw = EventKind::SwitchDown {
            node: link.b.0,
            detected_by: Detector::Injected,
        };
        assert_eq!(e(sw).places(&info), vec![f.node_name(link.b).to_string()]);
        let far = EventKind::Deadlock {
            ports: vec![1_000_000],
        };
        assert_eq!(e(far).places(&info), vec!["port 1000000".to_string()]);
        let gone = EventKind::LinkUp {
            link: LinkId(1_000_000),
            detected_by: Detector::Probe,
        };
        assert_eq!(e(gone).places(&info), vec!["link 1000000".to_string()]);
        let repaired = EventKind::RoutesRepaired {
            missing: 1,
            extra: 0,
            different: 0,
            skipped: 0,
        };
        assert!(
            !NamedEvent::new(e(repaired), &info)
                .to_json_line()
                .contains("\"at\"")
        );
    }
}
