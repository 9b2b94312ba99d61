//! Addresses and next hops of the routed testbed, from `topo`'s address plan and tables.

use super::*;

/// An address family as the routed testbed uses it: the plan's point-to-point switch
/// links (a /31 per link in IPv4, a /127 in IPv6), host addresses, ToR prefixes and
/// gateways, and the routes built from them. One generic path serves both families.
pub trait LinkAddr: Copy + PartialEq + Into<IpAddr> + std::fmt::Display {
    /// The family's name in messages.
    const NAME: &'static str;
    /// A host route's prefix length (32, 128).
    const HOST_LEN: u8;
    /// The unspecified address (the default route's destination).
    const UNSPECIFIED: Self;
    /// The link's prefix length and its `a` and `b` ends' addresses.
    fn link_ends(plan: &AddressPlan, l: LinkId) -> Option<(u8, Self, Self)>;
    /// Host `h`'s address in `plane`.
    fn host(plan: &AddressPlan, f: &Fabric, h: NodeId, plane: u16) -> Option<Self>;
    /// The gateway address a leaf carries on its host ports.
    fn gateway(plan: &AddressPlan, leaf: NodeId) -> Option<Self>;
    /// A leaf's ToR prefix.
    fn tor_prefix(plan: &AddressPlan, leaf: NodeId) -> Option<(Self, u8)>;
    /// A host route to `dst` straight out of interface `oif`.
    fn link_route(dst: Self, oif: u32) -> RouteMessage;
    /// A route to `dst/len` through `gw` out of interface `oif`.
    fn via(dst: Self, len: u8, gw: Self, oif: u32) -> RouteMessage;
}

impl LinkAddr for Ipv4Addr {
    const NAME: &'static str = "IPv4";
    const HOST_LEN: u8 = 32;
    const UNSPECIFIED: Self = Ipv4Addr::UNSPECIFIED;
    fn link_ends(plan: &AddressPlan, l: LinkId) -> Option<(u8, Self, Self)> {
        plan.link_v4(l).map(|(net, a, b)| (net.len, a, b))
    }
    fn host(plan: &AddressPlan, f: &Fabric, h: NodeId, plane: u16) -> Option<Self> {
        plan.host_v4(f, h, plane)
    }
    fn gateway(plan: &AddressPlan, leaf: NodeId) -> Option<Self> {
        plan.gateway_v4(leaf)
    }
    fn tor_prefix(plan: &AddressPlan, leaf: NodeId) -> Option<(Self, u8)> {
        plan.tor_prefix_v4(leaf).map(|p| (p.addr, p.len))
    }
    fn link_route(dst: Self, oif: u32) -> RouteMessage {
        RouteMessageBuilder::<Ipv4Addr>::new()
            .destination_prefix(dst, 32)
            .output_interface(oif)
            .scope(RouteScope::Link)
            .build()
    }
    fn via(dst: Self, len: u8, gw: Self, oif: u32) -> RouteMessage {
        RouteMessageBuilder::<Ipv4Addr>::new()
            .destination_prefix(dst, len)
            .gateway(gw)
            .output_interface(oif)
            .build()
    }
}

impl LinkAddr for Ipv6Addr {
    const NAME: &'static str = "IPv6";
    const HOST_LEN: u8 = 128;
    const UNSPECIFIED: Self = Ipv6Addr::UNSPECIFIED;
    fn link_ends(plan: &AddressPlan, l: LinkId) -> Option<(u8, Self, Self)> {
        plan.link_v6(l).map(|(net, a, b)| (net.len, a, b))
    }
    fn host(plan: &AddressPlan, f: &Fabric, h: NodeId, plane: u16) -> Option<Self> {
        plan.host_v6(f, h, plane)
    }
    fn gateway(plan: &AddressPlan, leaf: NodeId) -> Option<Self> {
        gateway_v6(plan, leaf)
    }
    fn tor_prefix(plan: &AddressPlan, leaf: NodeId) -> Option<(Self, u8)> {
        plan.tor_prefix_v6(leaf).map(|p| (p.addr, p.len))
    }
    fn link_route(dst: Self, oif: u32) -> RouteMessage {
        RouteMessageBuilder::<Ipv6Addr>::new()
            .destination_prefix(dst, 128)
            .output_interface(oif)
            .build()
    }
    fn via(dst: Self, len: u8, gw: Self, oif: u32) -> RouteMessage {
        RouteMessageBuilder::<Ipv6Addr>::new()
            .destination_prefix(dst, len)
            .gateway(gw)
            .output_interface(oif)
            .build()
    }
}

/// The route of `switch` toward destination leaf `leaf` as `(gateway, weight)` next hops
/// in family `A` (`None`: the entry is local or there is no route). Pure: unit-tested
/// without root.
pub fn hops<A: LinkAddr>(
    f: &Fabric,
    plan: &AddressPlan,
    routes: &Routes,
    switch: NodeId,
    leaf: NodeId,
) -> Option<Vec<(A, u8)>> {
    group_hops(routes, switch, leaf, |p| peer_addr::<A>(f, plan, switch, p))
}

/// [`hops`] in IPv4: gateways are the peers' ends of the /31s.
pub fn entry_hops(
    f: &Fabric,
    plan: &AddressPlan,
    routes: &Routes,
    switch: NodeId,
    leaf: NodeId,
) -> Option<Vec<(Ipv4Addr, u8)>> {
    hops(f, plan, routes, switch, leaf)
}

/// [`hops`] in IPv6: gateways are the peers' ends of the /127s.
pub fn entry_hops6(
    f: &Fabric,
    plan: &AddressPlan,
    routes: &Routes,
    switch: NodeId,
    leaf: NodeId,
) -> Option<Vec<(Ipv6Addr, u8)>> {
    hops(f, plan, routes, switch, leaf)
}

pub(super) fn group_hops<A: PartialEq + Copy>(
    routes: &Routes,
    switch: NodeId,
    leaf: NodeId,
    gateway: impl Fn(topo::Port) -> Option<A>,
) -> Option<Vec<(A, u8)>> {
    let e = routes.entry(switch, leaf);
    if e == LOCAL || e == NO_ROUTE {
        return None;
    }
    let mut hops: Vec<(A, u8)> = Vec::new();
    for &p in routes.groups().get(e) {
        let gw = gateway(p)?;
        match hops.iter_mut().find(|(g, _)| *g == gw) {
            Some((_, w)) => *w = w.saturating_add(1),
            None => hops.push((gw, 1)),
        }
    }
    (!hops.is_empty()).then_some(hops)
}

/// Address (family `A`) of the far end of `n`'s port `p` on a switch–switch link.
pub(super) fn peer_addr<A: LinkAddr>(
    f: &Fabric,
    plan: &AddressPlan,
    n: NodeId,
    p: topo::Port,
) -> Option<A> {
    let l = f.port_link(n, p);
    let (_, a, b) = A::link_ends(plan, l)?;
    Some(if f.link(l).a == n { b } else { a })
}

/// Address (family `A`) of `n`'s own end of port `p` on a switch–switch link, with the
/// prefix length.
pub(super) fn own_addr<A: LinkAddr>(
    f: &Fabric,
    plan: &AddressPlan,
    n: NodeId,
    p: topo::Port,
) -> Option<(A, u8)> {
    let l = f.port_link(n, p);
    let (len, a, b) = A::link_ends(plan, l)?;
    Some((if f.link(l).a == n { a } else { b }, len))
}

/// Gateway (`::1`) of a leaf's IPv6 ToR prefix.
pub(super) fn gateway_v6(plan: &AddressPlan, leaf: NodeId) -> Option<Ipv6Addr> {
    plan.tor_prefix_v6(leaf)
        .map(|n| Ipv6Addr::from(u128::from(n.addr) + 1))
}
