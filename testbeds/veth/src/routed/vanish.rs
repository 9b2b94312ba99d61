//! A node namespace that vanishes (`ip netns del` while the testbed runs): detecting
//! it, releasing what keeps the namespace alive, and routing around the node.
//!
//! Deleting a named namespace only removes its bind mount: the kernel destroys the
//! namespace (and every veth in it, whose peers then vanish too) when the last
//! reference goes, and every socket created inside holds one. So a testbed that keeps
//! netlink sockets in a switch namespace would keep the switch forwarding after its
//! owner deleted it, and nothing would be seen. The watcher therefore records the
//! identity (device, inode) of every node's `/run/netns/NAME` at start and compares
//! it at each poll ([`NsIdentity`]); a file gone or replaced means the namespace was
//! deleted. The watcher then drops that switch's subscription and
//! [`RoutedTestbed::node_gone`] closes its netlink client (and a host's probe sockets)
//! — after which the kernel destroys the namespace — and fails every link of the node
//! in `topo` at once (one reroute, only changed entries re-programmed, never on the
//! gone node).

use std::os::unix::fs::MetadataExt;

use fabric_api::{Detector, Event, EventKind, Timestamp};

use super::*;

/// What a named namespace's file is: the nsfs inode of the namespace while mounted.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct NsIdentity {
    dev: u64,
    ino: u64,
}

impl NsIdentity {
    /// The identity of `ns`'s file now (`None`: the file is gone).
    pub(super) fn of(ns: &Netns) -> Option<NsIdentity> {
        std::fs::metadata(ns.path()).ok().map(|m| NsIdentity {
            dev: m.dev(),
            ino: m.ino(),
        })
    }
}

/// Where a node's namespace is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Presence {
    /// Here: the testbed programs and watches it.
    Here,
    /// It was deleted while the testbed ran ([`RoutedTestbed::node_gone`]).
    Vanished,
    /// Another machine's (or namespace's) business: only its tables are computed
    /// ([`RoutedTestbed::adopt_switch`]).
    Elsewhere,
}

/// What [`RoutedTestbed::node_gone`] did.
#[derive(Debug, Clone)]
pub struct NodeGone {
    /// The switch or host.
    pub node: NodeId,
    /// Whether it is a switch (else a host).
    pub switch: bool,
    /// Its links that were up until now (now failed in the tables).
    pub links: Vec<LinkId>,
    /// The reroute around them.
    pub repair: Failure,
}

impl RoutedTestbed {
    /// Whether node `n`'s namespace is not here to program or read: it vanished
    /// ([`Self::node_gone`]) or is elsewhere ([`Self::adopt_switch`]).
    pub fn is_gone(&self, n: NodeId) -> bool {
        self.presence.get(n.idx()) != Some(&Presence::Here)
    }

    /// Node `n`'s namespace was deleted while the testbed ran.
    pub fn vanished(&self, n: NodeId) -> bool {
        self.presence.get(n.idx()) == Some(&Presence::Vanished)
    }

    /// Node `s`'s namespace was deleted behind the testbed's back: close its netlink
    /// client and a host's probe sockets (the last sockets the testbed holds there, once
    /// the watcher dropped its subscription), so the kernel destroys it and its veths;
    /// fail every link of `s` that was up in `topo` at once and re-program the changed
    /// entries of the switches. `detected`: when the deletion was seen (`reprogram_s`
    /// runs from then).
    pub fn node_gone(&mut self, s: NodeId, detected: Instant) -> Result<NodeGone> {
        if s.idx() >= self.fabric.num_nodes() {
            return Err(Error::Invalid(format!("no node {}", s.0)));
        }
        self.presence[s.idx()] = Presence::Vanished;
        self.nl[s.idx()].close();
        if let Some(h) = self.hosts.get_mut(s.idx()) {
            h.planes.clear();
        }
        let failed: HashSet<LinkId> = self.routes.failed_links().collect();
        let links: Vec<LinkId> = (0..self.fabric.degree(s) as topo::Port)
            .map(|p| self.fabric.port_link(s, p))
            .filter(|l| !failed.contains(l))
            .collect();
        let rep = self.routes.fail_links(&self.fabric, &links);
        if let Some(st) = &self.nexthops {
            let mut nodes: Vec<NodeId> = links.iter().map(|&l| self.fabric.link(l).a).collect();
            nodes.extend(links.iter().map(|&l| self.fabric.link(l).b));
            st.invalidate(&nodes);
        }
        let entries: Vec<(NodeId, NodeId)> = rep
            .changed
            .iter()
            .copied()
            .filter(|&(sw, _)| !self.is_gone(sw))
            .collect();
        let (n, err) = self.program_each(entries.iter().copied());
        if let Some(e) = err {
            return Err(e);
        }
        let mut switches: Vec<u32> = entries.iter().map(|&(sw, _)| sw.0).collect();
        switches.sort_unstable();
        switches.dedup();
        Ok(NodeGone {
            node: s,
            switch: !self.fabric.is_host(s),
            repair: Failure {
                link: format!("switch {}", self.fabric.node_name(s)),
                entries_changed: rep.changed.len(),
                switches_changed: switches,
                routes_reprogrammed: n,
                reprogram_s: secs(detected),
                oper_up_s: None,
            },
            links,
        })
    }

    /// The `fabric-api` events of a vanished node: each of its links down (its peers
    /// lose their veths: `detected_by: carrier`), a switch down, and the reroute.
    pub fn gone_events(&self, g: &NodeGone, seq: u64) -> Vec<Event> {
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos() as u64);
        let repaired_ns = (g.repair.reprogram_s * 1e9) as u64;
        let at = Timestamp::wall_ns(now.saturating_sub(repaired_ns));
        let mut v: Vec<Event> = g
            .links
            .iter()
            .map(|&link| Event {
                seq,
                time: at,
                what: EventKind::LinkDown {
                    link,
                    detected_by: Detector::Carrier,
                    detect_ns: None,
                },
            })
            .collect();
        if g.switch {
            v.push(Event {
                seq,
                time: at,
                what: EventKind::SwitchDown {
                    node: g.node.0,
                    detected_by: Detector::Carrier,
                },
            });
        }
        v.push(Event {
            seq,
            time: Timestamp::wall_ns(now),
            what: EventKind::Reroute {
                links: g.links.clone(),
                switches_changed: Some(g.repair.switches_changed.clone()),
                unreachable_pairs: Some(self.unreachable_pairs().len() as u64),
                repaired_ns,
            },
        });
        v
    }
}
