//! Watching the routed testbed: carrier changes from the kernel's multicast link group
//! (`RTNLGRP_LINK`, as `ip monitor link`) in every switch namespace — never a poll of
//! one link at a time — and the incremental repair they trigger, so a link that fails
//! without the testbed's doing (another program sets an interface down, a veth is
//! deleted) is routed around, and restored when it comes back.
//!
//! A link counts as down when either watched end reports no lower-layer carrier
//! (`IFF_LOWER_UP` clear) or disappears; up when every watched end has it again. Hosts'
//! namespaces are not watched: a host link is seen from its leaf.

use std::collections::HashMap;
use std::os::fd::AsRawFd;

use fabric_api::{Detector, Event, EventKind, Timestamp};
use netlink_packet_route::RouteNetlinkMessage;
use netlink_packet_route::link::{LinkFlags, LinkMessage};
use rtnetlink::packet_core::{NetlinkMessage, NetlinkPayload};

use super::*;

/// `RTNLGRP_LINK` (linux/rtnetlink.h).
const RTNLGRP_LINK: u32 = 1;

/// A link's carrier changed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LinkChange {
    /// The link.
    pub link: LinkId,
    /// Up (carrier on every watched end) or down.
    pub up: bool,
    /// When the watcher read the kernel's message.
    pub detected: Instant,
}

/// One switch namespace's subscription.
#[derive(Debug)]
struct Watched {
    node: NodeId,
    sock: netlink_sys::Socket,
    /// Interface index → port.
    ports: HashMap<u32, topo::Port>,
    /// The namespace, and what its file was when the subscription was made.
    ns: Netns,
    id: Option<vanish::NsIdentity>,
}

/// The multicast link subscriptions of every switch namespace.
#[derive(Debug)]
pub struct LinkWatcher {
    watched: Vec<Watched>,
    /// Ends (node, port) without carrier.
    down_ends: HashMap<(NodeId, topo::Port), ()>,
    /// Links currently down.
    down: HashMap<LinkId, ()>,
    /// Messages that did not parse (counted, dropped).
    pub malformed: u64,
    /// Host namespaces (not subscribed: a host link is seen from its leaf), with what
    /// their file was at start, to notice one deleted.
    hosts: Vec<(NodeId, Netns, Option<vanish::NsIdentity>)>,
}

impl RoutedTestbed {
    /// Subscribe to link events in every switch namespace.
    pub fn watch(&self) -> Result<LinkWatcher> {
        let mut watched = Vec::new();
        for s in self.fabric.switches().filter(|&s| !self.is_gone(s)) {
            let ns = &self.ns[s.idx()];
            let os = |e: std::io::Error| Error::Os {
                what: format!("RTNLGRP_LINK socket in netns {}", ns.name()),
                source: e,
            };
            let sock = in_netns(ns, || -> std::io::Result<netlink_sys::Socket> {
                let mut sock = netlink_sys::Socket::new(netlink_sys::protocols::NETLINK_ROUTE)?;
                sock.bind_auto()?;
                sock.add_membership(RTNLGRP_LINK)?;
                sock.set_non_blocking(true)?;
                Ok(sock)
            })?
            .map_err(os)?;
            let mut ports = HashMap::new();
            for p in 0..self.fabric.degree(s) as topo::Port {
                ports.insert(self.nl[s.idx()].index(&ifname(p))?, p);
            }
            watched.push(Watched {
                node: s,
                sock,
                ports,
                ns: ns.clone(),
                id: vanish::NsIdentity::of(ns),
            });
        }
        let hosts = self
            .fabric
            .hosts()
            .filter(|&h| !self.is_gone(h))
            .map(|h| {
                let ns = self.ns[h.idx()].clone();
                let id = vanish::NsIdentity::of(&ns);
                (h, ns, id)
            })
            .collect();
        Ok(LinkWatcher {
            hosts,
            watched,
            down_ends: HashMap::new(),
            down: HashMap::new(),
            malformed: 0,
        })
    }

    /// Route around link `l`, which went down without the testbed's doing: re-route
    /// incrementally in `topo` and re-program only the changed entries (the failed
    /// member leaves its next-hop groups). `detected` is when the event was read: the
    /// report's `reprogram_s` runs from then.
    pub fn repair_down(&mut self, l: LinkId, detected: Instant) -> Result<Failure> {
        self.reroute_around(l, detected)
    }

    /// Bring link `l` back into the tables after its carrier returned by itself. An end
    /// whose interface was replaced meanwhile (same name, new index: a veth deleted and
    /// made again, or moved away and back) is adopted first ([`Self::readopt`]).
    pub fn repair_up(&mut self, l: LinkId, detected: Instant) -> Result<Failure> {
        self.readopt(l)?;
        self.reroute_back(l, detected, None)
    }

    /// Adopts the interfaces of link `l` that were replaced since they were programmed
    /// (found by name, `p<PORT>`, with an index other than the one next-hop objects were
    /// written with): the next-hop objects use the new index from now on, and the
    /// addresses the testbed gave the link's ends are added again (a new interface has
    /// none). Returns how many ends were adopted.
    pub fn readopt(&mut self, l: LinkId) -> Result<usize> {
        let link = *self.fabric.link(l);
        let mut replaced = Vec::new();
        for (n, p) in [(link.a, link.a_port), (link.b, link.b_port)] {
            if self.is_gone(n) || self.fabric.is_host(n) {
                continue;
            }
            let Some(st) = self.nexthops.as_mut() else {
                continue;
            };
            let idx = self.nl[n.idx()].index(&ifname(p))?;
            let known = &mut st.ifindex[n.idx()][p as usize];
            if *known != idx {
                *known = idx;
                replaced.push((n, p));
            }
        }
        if replaced.is_empty() {
            return Ok(0);
        }
        if let Some(h) = [link.a, link.b]
            .into_iter()
            .find(|&x| self.fabric.is_host(x) && !self.is_gone(x))
            && let Some(plane) = self
                .fabric
                .host_planes(h)
                .find(|&p| self.fabric.attachment(h, p).is_some_and(|a| a.link == l))
        {
            host_link(
                &self.fabric,
                &self.plan,
                &self.nl,
                h,
                plane,
                self.ipv6,
                true,
            )?;
        } else {
            for &(n, p) in &replaced {
                let nl = &self.nl[n.idx()];
                if let Some((a, len)) = own_addr::<Ipv4Addr>(&self.fabric, &self.plan, n, p) {
                    ensure_addr(nl, &ifname(p), a.into(), len)?;
                }
                if self.ipv6
                    && let Some((a, len)) = own_addr::<Ipv6Addr>(&self.fabric, &self.plan, n, p)
                {
                    ensure_addr(nl, &ifname(p), a.into(), len)?;
                }
            }
        }
        Ok(replaced.len())
    }
}

impl LinkChange {
    /// The `link-down` / `link-up` event of this change (`detected_by: carrier`), at
    /// `time`, in snapshot `seq`.
    pub fn event(&self, seq: u64, time: Timestamp) -> Event {
        let what = if self.up {
            EventKind::LinkUp {
                link: self.link,
                detected_by: Detector::Carrier,
            }
        } else {
            EventKind::LinkDown {
                link: self.link,
                detected_by: Detector::Carrier,
                detect_ns: None,
            }
        };
        Event { seq, time, what }
    }
}

impl RoutedTestbed {
    /// The `fabric-api` events of a detected change and its repair: the link going down
    /// (or up) as its carrier said, then the reroute — links, switches changed, host pairs
    /// left without a route, and the time from detection to the last route re-programmed.
    /// `seq` is the snapshot they belong to; timestamps are wall-clock.
    pub fn repair_events(&self, change: &LinkChange, repair: &Failure, seq: u64) -> [Event; 2] {
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos() as u64);
        let repaired_ns = (repair.reprogram_s * 1e9) as u64;
        let at = |ns: u64| Timestamp::wall_ns(ns);
        [
            change.event(seq, at(now.saturating_sub(repaired_ns))),
            Event {
                seq,
                time: at(now),
                what: EventKind::Reroute {
                    links: vec![change.link],
                    switches_changed: Some(repair.switches_changed.clone()),
                    unreachable_pairs: Some(self.unreachable_pairs().len() as u64),
                    repaired_ns,
                },
            },
        ]
    }
}

impl LinkWatcher {
    /// Wait up to `timeout` for link events; the links whose state changed, in order.
    pub fn poll(&mut self, f: &Fabric, timeout: Duration) -> Result<Vec<LinkChange>> {
        let mut fds: Vec<libc::pollfd> = self
            .watched
            .iter()
            .map(|w| libc::pollfd {
                fd: w.sock.as_raw_fd(),
                events: libc::POLLIN,
                revents: 0,
            })
            .collect();
        let ms = timeout.as_millis().min(i32::MAX as u128) as i32;
        // SAFETY: `fds` is a valid array of pollfd for the duration of the call.
        let n = unsafe { libc::poll(fds.as_mut_ptr(), fds.len() as libc::nfds_t, ms) };
        if n < 0 {
            let e = std::io::Error::last_os_error();
            if e.kind() == std::io::ErrorKind::Interrupted {
                return Ok(Vec::new());
            }
            return Err(Error::Os {
                what: "poll link watchers".into(),
                source: e,
            });
        }
        let mut changes = Vec::new();
        for (i, fd) in fds.iter().enumerate() {
            if fd.revents & libc::POLLIN != 0 {
                self.drain(i, f, &mut changes)?;
            }
        }
        Ok(changes)
    }

    /// The nodes (switches and hosts) whose namespace file is gone or replaced since
    /// the watcher was made (`ip netns del`): a switch's subscription is dropped (so it
    /// no longer holds the namespace) and every link of theirs counts as down from now
    /// on, so the carrier losses their peers report next are not changes. Call
    /// [`RoutedTestbed::node_gone`] for each.
    pub fn vanished(&mut self, f: &Fabric) -> Vec<NodeId> {
        let mut gone = Vec::new();
        self.watched.retain(|w| {
            let still = vanish::NsIdentity::of(&w.ns) == w.id;
            if !still {
                gone.push(w.node);
            }
            still
        });
        self.hosts.retain(|(h, ns, id)| {
            let still = vanish::NsIdentity::of(ns) == *id;
            if !still {
                gone.push(*h);
            }
            still
        });
        for &s in &gone {
            for p in 0..f.degree(s) as topo::Port {
                self.down_ends.insert((s, p), ());
                self.down.insert(f.port_link(s, p), ());
            }
        }
        gone
    }

    /// Read every pending message of subscription `i`.
    fn drain(&mut self, i: usize, f: &Fabric, changes: &mut Vec<LinkChange>) -> Result<()> {
        loop {
            let mut buf: Vec<u8> = Vec::with_capacity(65_536);
            match self.watched[i].sock.recv(&mut buf, 0) {
                Ok(_) => {}
                Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => return Ok(()),
                Err(e) => {
                    return Err(Error::Os {
                        what: "read link events".into(),
                        source: e,
                    });
                }
            }
            let detected = Instant::now();
            for m in self.link_messages(&buf) {
                let w = &mut self.watched[i];
                let Some(port) = w.track(f, &m) else {
                    continue; // lo, or an interface the fabric does not have
                };
                let node = w.node;
                if let Some(c) = self.end_changed(f, node, port, m.carrier, detected) {
                    changes.push(c);
                }
            }
        }
    }

    /// Every RTM_NEWLINK / RTM_DELLINK in one datagram.
    fn link_messages(&mut self, buf: &[u8]) -> Vec<LinkNews> {
        let mut out = Vec::new();
        let mut at = 0;
        while at + 16 <= buf.len() {
            let len = u32::from_ne_bytes(buf[at..at + 4].try_into().expect("4")) as usize;
            if len < 16 || at + len > buf.len() {
                self.malformed += 1;
                break;
            }
            match NetlinkMessage::<RouteNetlinkMessage>::deserialize(&buf[at..at + len]) {
                Ok(m) => match m.payload {
                    NetlinkPayload::InnerMessage(RouteNetlinkMessage::NewLink(l)) => {
                        out.push(LinkNews {
                            index: l.header.index,
                            name: link_name(&l),
                            carrier: has_carrier(&l),
                            new: true,
                        });
                    }
                    NetlinkPayload::InnerMessage(RouteNetlinkMessage::DelLink(l)) => {
                        out.push(LinkNews {
                            index: l.header.index,
                            name: link_name(&l),
                            carrier: false,
                            new: false,
                        });
                    }
                    _ => {}
                },
                Err(_) => self.malformed += 1,
            }
            at += len.div_ceil(4) * 4;
        }
        out
    }

    /// Record end `(node, port)`'s carrier; the link's change if it has one.
    fn end_changed(
        &mut self,
        f: &Fabric,
        node: NodeId,
        port: topo::Port,
        carrier: bool,
        detected: Instant,
    ) -> Option<LinkChange> {
        let link = f.port_link(node, port);
        if carrier {
            self.down_ends.remove(&(node, port));
        } else {
            self.down_ends.insert((node, port), ());
        }
        let l = f.link(link);
        let any_down = [(l.a, l.a_port), (l.b, l.b_port)]
            .iter()
            .any(|e| self.down_ends.contains_key(e));
        let was_down = self.down.contains_key(&link);
        match (was_down, any_down) {
            (false, true) => {
                self.down.insert(link, ());
                Some(LinkChange {
                    link,
                    up: false,
                    detected,
                })
            }
            (true, false) => {
                self.down.remove(&link);
                Some(LinkChange {
                    link,
                    up: true,
                    detected,
                })
            }
            _ => None,
        }
    }
}

/// What one link message says.
#[derive(Debug, Clone, PartialEq, Eq)]
struct LinkNews {
    /// Interface index.
    index: u32,
    /// Interface name (IFLA_IFNAME), when the message carries it.
    name: Option<String>,
    /// Lower-layer carrier (false for a deleted interface).
    carrier: bool,
    /// RTM_NEWLINK (an interface that exists), not RTM_DELLINK.
    new: bool,
}

impl Watched {
    /// The port message `m` is about. Ports are tracked by name, not by the index seen at
    /// start: an interface that appears under a port's name (a veth deleted and made
    /// again, or moved away and back) is that port from now on, its old index forgotten.
    fn track(&mut self, f: &Fabric, m: &LinkNews) -> Option<topo::Port> {
        if let Some(&p) = self.ports.get(&m.index) {
            return Some(p);
        }
        let p = m.name.as_deref().and_then(port_of)?;
        if !m.new || usize::from(p) >= f.degree(self.node) {
            return None;
        }
        self.ports.retain(|_, q| *q != p);
        self.ports.insert(m.index, p);
        Some(p)
    }
}

/// The port whose interface is named `name` (`p<PORT>`, as [`ifname`] names it).
fn port_of(name: &str) -> Option<topo::Port> {
    let p: topo::Port = name.strip_prefix('p')?.parse().ok()?;
    (ifname(p) == name).then_some(p)
}

/// The interface name a link message carries.
fn link_name(l: &LinkMessage) -> Option<String> {
    use netlink_packet_route::link::LinkAttribute;
    l.attributes.iter().find_map(|a| match a {
        LinkAttribute::IfName(n) => Some(n.clone()),
        _ => None,
    })
}

/// Whether a link message says the lower layer has a carrier.
fn has_carrier(l: &LinkMessage) -> bool {
    l.header.flags.contains(LinkFlags::LowerUp)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ports_are_named_p_and_their_number() {
        assert_eq!(port_of("p0"), Some(0));
        assert_eq!(port_of("p17"), Some(17));
        assert_eq!(port_of("p017"), None, "not how the testbed names it");
        assert_eq!(port_of("swp1"), None);
        assert_eq!(port_of("p"), None);
        assert_eq!(port_of("lo"), None);
    }

    #[test]
    fn an_interface_made_again_under_a_ports_name_is_that_port() {
        let f = topo::generators::fat_tree(4, topo::Rate::gbps(100)).unwrap();
        let s = f.switches().next().unwrap();
        let mut w = Watched {
            node: s,
            sock: netlink_sys::Socket::new(netlink_sys::protocols::NETLINK_ROUTE).unwrap(),
            ports: HashMap::from([(10, 0), (11, 1)]),
            ns: Netns::current(),
            id: None,
        };
        let news = |index, name: &str, new| LinkNews {
            index,
            name: Some(name.into()),
            carrier: false,
            new,
        };
        assert_eq!(w.track(&f, &news(11, "p1", false)), Some(1), "deleted");
        assert_eq!(w.track(&f, &news(12, "lo", true)), None);
        assert_eq!(w.track(&f, &news(13, "p9", true)), None, "no such port");
        assert_eq!(
            w.track(&f, &news(14, "p1", false)),
            None,
            "an unknown one deleted"
        );
        assert_eq!(w.track(&f, &news(15, "p1", true)), Some(1), "made again");
        assert_eq!(w.ports, HashMap::from([(10, 0), (15, 1)]));
        assert_eq!(w.track(&f, &news(15, "p1", true)), Some(1));
    }
}
