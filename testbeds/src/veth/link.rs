//! Links, addresses, routes and link statistics inside a namespace, through rtnetlink.
//!
//! A netlink socket belongs to the namespace it was created in (NOTES.md), so [`Nl::open`]
//! creates the socket with the thread switched into the namespace ([`super::netns::in_netns`])
//! and then drives it from a private current-thread tokio runtime: the synchronous API
//! below hides the async client.
//!
//! Messages are built as values by pure functions ([`veth_message`], [`multipath_route`])
//! that are unit-tested without root; only [`Nl`] methods do I/O (STYLE.md point 14).

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};
use std::os::fd::AsRawFd;

use futures::TryStreamExt;
use netlink_packet_route::address::{AddressAttribute, AddressFlags, AddressHeaderFlags};
use netlink_packet_route::link::{InfoData, InfoVeth, LinkAttribute, LinkMessage, State};
use netlink_packet_route::route::{RouteAddress, RouteAttribute, RouteMessage, RouteNextHop};
use rtnetlink::{Handle, LinkUnspec, LinkVeth, RouteMessageBuilder};

use super::netns::{Netns, in_netns};
use super::{Error, Result};

/// Link counters from `IFLA_STATS64`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct LinkStats {
    pub rx_packets: u64,
    pub tx_packets: u64,
    pub rx_bytes: u64,
    pub tx_bytes: u64,
    pub rx_dropped: u64,
    pub tx_dropped: u64,
}

/// A netlink client bound to one namespace.
#[derive(Debug)]
pub struct Nl {
    ns: String,
    rt: tokio::runtime::Runtime,
    handle: Handle,
}

fn nl_err(ns: &str, what: impl std::fmt::Display, e: rtnetlink::Error) -> Error {
    Error::Netlink {
        what: format!("{what} (netns {ns})"),
        source: e,
    }
}

/// The `add` message for a veth pair `name` ↔ `peer`, the peer created directly in the
/// namespace whose file descriptor is `peer_ns_fd` (IFLA_NET_NS_FD inside the peer's
/// info), so names only need to be unique per namespace and nothing ever appears in the
/// root namespace.
pub fn veth_message(
    name: &str,
    peer: &str,
    peer_ns_fd: i32,
    mac: [u8; 6],
    peer_mac: [u8; 6],
) -> LinkMessage {
    let peer_msg = LinkUnspec::new_with_name(peer)
        .setns_by_fd(peer_ns_fd)
        .address(peer_mac.to_vec())
        .build();
    LinkVeth::new(name, peer)
        .address(mac.to_vec())
        .set_info_data(InfoData::Veth(InfoVeth::Peer(peer_msg)))
        .build()
}

/// A multipath route to `dst/len` over `(gateway, weight)` next hops. The kernel stores
/// a next hop's weight minus one (`rtnh_hops`), so `ip route` weight `w` is passed as `w-1`.
pub fn multipath_route(dst: Ipv4Addr, len: u8, hops: &[(Ipv4Addr, u8)]) -> RouteMessage {
    let b = RouteMessageBuilder::<Ipv4Addr>::new().destination_prefix(dst, len);
    if let [(gw, _)] = hops {
        return b.gateway(*gw).build();
    }
    b.multipath(next_hops(hops)).build()
}

/// The IPv6 twin of [`multipath_route`]: `RTA_MULTIPATH` with `rtnh_hops = w − 1` for
/// `AF_INET6` as well (the kernel accepts it since 4.16 and dumps the route back as one
/// message with all next hops).
pub fn multipath_route6(dst: Ipv6Addr, len: u8, hops: &[(Ipv6Addr, u8)]) -> RouteMessage {
    let b = RouteMessageBuilder::<Ipv6Addr>::new().destination_prefix(dst, len);
    if let [(gw, _)] = hops {
        return b.gateway(*gw).build();
    }
    b.multipath(next_hops(hops)).build()
}

fn next_hops<A: Copy + Into<RouteAddress>>(hops: &[(A, u8)]) -> Vec<RouteNextHop> {
    hops.iter()
        .map(|(gw, w)| {
            let mut nh = RouteNextHop::default();
            nh.hops = w.saturating_sub(1);
            nh.attributes.push(RouteAttribute::Gateway((*gw).into()));
            nh
        })
        .collect()
}

/// The `(gateway, weight)` next hops of a route as read back from the kernel (weight =
/// `rtnh_hops + 1`); a plain gateway route gives one hop of weight 1.
pub fn route_hops(m: &RouteMessage) -> Vec<(IpAddr, u16)> {
    let ip = |a: &RouteAddress| match a {
        RouteAddress::Inet(v) => Some(IpAddr::V4(*v)),
        RouteAddress::Inet6(v) => Some(IpAddr::V6(*v)),
        _ => None,
    };
    let mut out = Vec::new();
    for a in &m.attributes {
        match a {
            RouteAttribute::Gateway(g) => out.extend(ip(g).map(|g| (g, 1))),
            RouteAttribute::MultiPath(nhs) => {
                for nh in nhs {
                    for x in &nh.attributes {
                        if let RouteAttribute::Gateway(g) = x {
                            out.extend(ip(g).map(|g| (g, nh.hops as u16 + 1)));
                        }
                    }
                }
            }
            _ => {}
        }
    }
    out.sort();
    out
}

/// Destination `(address, prefix length)` of a route message (`None`: default route).
pub fn route_dst(m: &RouteMessage) -> Option<(IpAddr, u8)> {
    m.attributes.iter().find_map(|a| match a {
        RouteAttribute::Destination(RouteAddress::Inet(v)) => {
            Some((IpAddr::V4(*v), m.header.destination_prefix_length))
        }
        RouteAttribute::Destination(RouteAddress::Inet6(v)) => {
            Some((IpAddr::V6(*v), m.header.destination_prefix_length))
        }
        _ => None,
    })
}

impl Nl {
    /// Open a netlink connection inside `ns`.
    pub fn open(ns: &Netns) -> Result<Nl> {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .map_err(|e| Error::Os {
                what: "tokio runtime".into(),
                source: e,
            })?;
        let (conn, handle, _) = {
            let _enter = rt.enter();
            in_netns(ns, rtnetlink::new_connection)?.map_err(|e| Error::Os {
                what: format!("netlink socket in netns {}", ns.name()),
                source: e,
            })?
        };
        rt.spawn(conn);
        Ok(Nl {
            ns: ns.name().to_string(),
            rt,
            handle,
        })
    }

    /// Create a veth pair: `name` here, `peer` in `peer_ns`, both down.
    pub fn add_veth(
        &self,
        name: &str,
        mac: [u8; 6],
        peer_ns: &Netns,
        peer: &str,
        peer_mac: [u8; 6],
    ) -> Result<()> {
        let fd = peer_ns.open()?;
        let msg = veth_message(name, peer, fd.as_raw_fd(), mac, peer_mac);
        self.rt
            .block_on(self.handle.link().add(msg).execute())
            .map_err(|e| {
                nl_err(
                    &self.ns,
                    format!("add veth {name} <-> {}:{peer}", peer_ns.name()),
                    e,
                )
            })
    }

    /// The index of link `name`.
    pub fn index(&self, name: &str) -> Result<u32> {
        let name2 = name.to_string();
        let r = self.rt.block_on(async {
            self.handle
                .link()
                .get()
                .match_name(name2)
                .execute()
                .try_next()
                .await
        });
        match r {
            Ok(Some(m)) => Ok(m.header.index),
            Ok(None) => Err(Error::Invalid(format!(
                "no link {name} in netns {}",
                self.ns
            ))),
            Err(e) => Err(nl_err(&self.ns, format!("get link {name}"), e)),
        }
    }

    fn set(&self, name: &str, up: bool) -> Result<()> {
        let idx = self.index(name)?;
        let b = LinkUnspec::new_with_index(idx);
        let msg = if up { b.up() } else { b.down() }.build();
        self.rt
            .block_on(self.handle.link().set(msg).execute())
            .map_err(|e| {
                nl_err(
                    &self.ns,
                    format!("set {name} {}", if up { "up" } else { "down" }),
                    e,
                )
            })
    }

    /// Whether link `name`'s operational state (IFLA_OPERSTATE) is UP. The kernel sets it
    /// from its link watcher, the same work that activates the link's qdisc after a
    /// carrier change (until then the device drops what it sends), and it may run up to
    /// a second after the change.
    pub fn oper_up(&self, name: &str) -> Result<bool> {
        let name2 = name.to_string();
        let r = self.rt.block_on(async {
            self.handle
                .link()
                .get()
                .match_name(name2)
                .execute()
                .try_next()
                .await
        });
        match r {
            Ok(Some(m)) => Ok(m
                .attributes
                .iter()
                .any(|a| matches!(a, LinkAttribute::OperState(State::Up)))),
            Ok(None) => Err(Error::Invalid(format!(
                "no link {name} in netns {}",
                self.ns
            ))),
            Err(e) => Err(nl_err(&self.ns, format!("get link {name}"), e)),
        }
    }

    pub fn set_up(&self, name: &str) -> Result<()> {
        self.set(name, true)
    }

    pub fn set_down(&self, name: &str) -> Result<()> {
        self.set(name, false)
    }

    /// Set the MTU of link `name`.
    pub fn set_mtu(&self, name: &str, mtu: u32) -> Result<()> {
        let idx = self.index(name)?;
        let msg = LinkUnspec::new_with_index(idx).mtu(mtu).build();
        self.rt
            .block_on(self.handle.link().set(msg).execute())
            .map_err(|e| nl_err(&self.ns, format!("set {name} mtu {mtu}"), e))
    }

    /// Add `addr/len` (IPv4 or IPv6; IPv6 with `IFA_F_NODAD`) to link `name`.
    pub fn add_addr(&self, name: &str, addr: impl Into<IpAddr>, len: u8) -> Result<()> {
        let addr = addr.into();
        let idx = self.index(name)?;
        let mut req = self.handle.address().add(idx, addr, len);
        if addr.is_ipv6() {
            // IFA_F_NODAD: never tentative, not even while the link waits for carrier
            // (the kernel skips the TENTATIVE flag for NODAD addresses).
            let m = req.message_mut();
            m.header.flags |= AddressHeaderFlags::Nodad;
            m.attributes
                .push(AddressAttribute::Flags(AddressFlags::Nodad));
        }
        self.rt
            .block_on(req.execute())
            .map_err(|e| nl_err(&self.ns, format!("add {addr}/{len} to {name}"), e))
    }

    /// Add or replace a route (see [`multipath_route`]).
    pub fn replace_route(&self, msg: RouteMessage) -> Result<()> {
        let what = format!("replace route {:?}", msg.attributes.first());
        self.rt
            .block_on(self.handle.route().add(msg).replace().execute())
            .map_err(|e| nl_err(&self.ns, what, e))
    }

    /// Delete the main-table route to `dst/len` (IPv4 or IPv6). Returns `false` if there
    /// was none.
    pub fn del_route(&self, dst: impl Into<IpAddr>, len: u8) -> Result<bool> {
        let dst = dst.into();
        let msg = match dst {
            IpAddr::V4(d) => RouteMessageBuilder::<Ipv4Addr>::new()
                .destination_prefix(d, len)
                .build(),
            IpAddr::V6(d) => RouteMessageBuilder::<Ipv6Addr>::new()
                .destination_prefix(d, len)
                .build(),
        };
        match self.rt.block_on(self.handle.route().del(msg).execute()) {
            Ok(()) => Ok(true),
            Err(rtnetlink::Error::NetlinkError(e))
                if e.raw_code() == -libc::ESRCH || e.raw_code() == -libc::ENOENT =>
            {
                Ok(false)
            }
            Err(e) => Err(nl_err(&self.ns, format!("delete route {dst}/{len}"), e)),
        }
    }

    /// Every IPv4 route of the main table (for checks).
    pub fn routes(&self) -> Result<Vec<RouteMessage>> {
        let q = RouteMessageBuilder::<Ipv4Addr>::new().build();
        self.rt
            .block_on(self.handle.route().get(q).execute().try_collect())
            .map_err(|e| nl_err(&self.ns, "dump routes", e))
    }

    /// Every IPv6 route of the main table (for checks).
    pub fn routes6(&self) -> Result<Vec<RouteMessage>> {
        let q = RouteMessageBuilder::<Ipv6Addr>::new().build();
        self.rt
            .block_on(self.handle.route().get(q).execute().try_collect())
            .map_err(|e| nl_err(&self.ns, "dump IPv6 routes", e))
    }

    /// Every address of the namespace as `(link index, address, prefix length, IFA_F_*
    /// flags)` (for checks, e.g. that no IPv6 address is tentative).
    pub fn addresses(&self) -> Result<Vec<(u32, IpAddr, u8, u32)>> {
        let msgs: Vec<_> = self
            .rt
            .block_on(self.handle.address().get().execute().try_collect())
            .map_err(|e| nl_err(&self.ns, "dump addresses", e))?;
        let mut out = Vec::new();
        for m in msgs {
            let mut addr = None;
            // IFA_FLAGS (32 bits) supersedes the 8-bit header flags when present.
            let mut flags = u32::from(m.header.flags.bits());
            for a in &m.attributes {
                match a {
                    AddressAttribute::Address(ip) => addr = Some(*ip),
                    AddressAttribute::Flags(f) => flags = f.bits(),
                    _ => {}
                }
            }
            if let Some(ip) = addr {
                out.push((m.header.index, ip, m.header.prefix_len, flags));
            }
        }
        Ok(out)
    }

    /// Names of all links in the namespace.
    pub fn link_names(&self) -> Result<Vec<String>> {
        Ok(self.stats()?.into_iter().map(|(n, _)| n).collect())
    }

    /// `(name, stats64)` of every link.
    pub fn stats(&self) -> Result<Vec<(String, LinkStats)>> {
        let msgs: Vec<LinkMessage> = self
            .rt
            .block_on(self.handle.link().get().execute().try_collect())
            .map_err(|e| nl_err(&self.ns, "dump links", e))?;
        let mut out = Vec::new();
        for m in msgs {
            let mut name = String::new();
            let mut st = LinkStats::default();
            for a in &m.attributes {
                match a {
                    LinkAttribute::IfName(n) => name = n.clone(),
                    LinkAttribute::Stats64(s) => {
                        st = LinkStats {
                            rx_packets: s.rx_packets,
                            tx_packets: s.tx_packets,
                            rx_bytes: s.rx_bytes,
                            tx_bytes: s.tx_bytes,
                            rx_dropped: s.rx_dropped,
                            tx_dropped: s.tx_dropped,
                        }
                    }
                    _ => {}
                }
            }
            out.push((name, st));
        }
        Ok(out)
    }
}

/// Bring link `name` up in `ns` (opens a short-lived connection).
pub fn set_up_by_name(ns: &Netns, name: &str) -> Result<()> {
    Nl::open(ns)?.set_up(name)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn veth_message_carries_peer_namespace_and_macs() {
        let m = veth_message("p0", "p1", 42, [2, 0, 0, 0, 0, 1], [2, 0, 0, 0, 0, 2]);
        let dbg = format!("{m:?}");
        assert!(dbg.contains("NetNsFd(42)"), "{dbg}");
        assert!(dbg.contains("IfName(\"p1\")"), "{dbg}");
        assert!(dbg.contains("IfName(\"p0\")"), "{dbg}");
        assert!(dbg.contains("Address([2, 0, 0, 0, 0, 2])"), "{dbg}");
    }

    #[test]
    fn multipath_weights_are_stored_minus_one() {
        let m = multipath_route(
            Ipv4Addr::new(10, 1, 0, 0),
            24,
            &[
                (Ipv4Addr::new(10, 0, 0, 1), 1),
                (Ipv4Addr::new(10, 0, 0, 3), 3),
            ],
        );
        let hops = m
            .attributes
            .iter()
            .find_map(|a| match a {
                RouteAttribute::MultiPath(h) => Some(h.clone()),
                _ => None,
            })
            .expect("multipath attribute");
        assert_eq!(hops.iter().map(|h| h.hops).collect::<Vec<_>>(), vec![0, 2]);
        assert_eq!(m.header.destination_prefix_length, 24);
    }

    #[test]
    fn ipv6_multipath_weights_are_stored_minus_one_and_read_back_plus_one() {
        let a: Ipv6Addr = "fd00:fffe::1".parse().unwrap();
        let b: Ipv6Addr = "fd00:fffe::3".parse().unwrap();
        let dst: Ipv6Addr = "fd00:0:0:1::".parse().unwrap();
        let m = multipath_route6(dst, 64, &[(a, 1), (b, 3)]);
        assert_eq!(m.header.destination_prefix_length, 64);
        assert_eq!(route_hops(&m), vec![(IpAddr::V6(a), 1), (IpAddr::V6(b), 3)]);
        assert_eq!(route_dst(&m), Some((IpAddr::V6(dst), 64)));
        let one = multipath_route6(dst, 64, &[(a, 1)]);
        assert_eq!(route_hops(&one), vec![(IpAddr::V6(a), 1)]);
    }

    #[test]
    fn single_next_hop_is_a_plain_gateway_route() {
        let m = multipath_route(
            Ipv4Addr::new(10, 1, 0, 0),
            24,
            &[(Ipv4Addr::new(10, 0, 0, 1), 1)],
        );
        assert!(
            m.attributes
                .iter()
                .any(|a| matches!(a, RouteAttribute::Gateway(_)))
        );
    }
}
