//! Addresses and next hops of the routed testbed, from `topo`'s address plan and tables.

use super::*;

/// The route of `switch` toward destination leaf `leaf` as `(gateway, weight)` next hops
/// (`None`: the entry is local or there is no route). Pure: unit-tested without root.
pub fn entry_hops(
    f: &Fabric,
    plan: &AddressPlan,
    routes: &Routes,
    switch: NodeId,
    leaf: NodeId,
) -> Option<Vec<(Ipv4Addr, u8)>> {
    group_hops(routes, switch, leaf, |p| peer_addr(f, plan, switch, p))
}

/// The IPv6 twin of [`entry_hops`]: gateways are the peers' ends of the /127s.
pub fn entry_hops6(
    f: &Fabric,
    plan: &AddressPlan,
    routes: &Routes,
    switch: NodeId,
    leaf: NodeId,
) -> Option<Vec<(Ipv6Addr, u8)>> {
    group_hops(routes, switch, leaf, |p| peer_addr6(f, plan, switch, p))
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

/// Address of the far end of `n`'s port `p` on a switch–switch link.
pub(super) fn peer_addr(
    f: &Fabric,
    plan: &AddressPlan,
    n: NodeId,
    p: topo::Port,
) -> Option<Ipv4Addr> {
    let l = f.port_link(n, p);
    let (_, a, b) = plan.link_v4(l)?;
    Some(if f.link(l).a == n { b } else { a })
}

/// Address of `n`'s own end of port `p` on a switch–switch link.
pub(super) fn own_addr(
    f: &Fabric,
    plan: &AddressPlan,
    n: NodeId,
    p: topo::Port,
) -> Option<(Ipv4Addr, u8)> {
    let l = f.port_link(n, p);
    let (net, a, b) = plan.link_v4(l)?;
    Some((if f.link(l).a == n { a } else { b }, net.len))
}

/// IPv6 address of the far end of `n`'s port `p` on a switch–switch link (/127).
pub(super) fn peer_addr6(
    f: &Fabric,
    plan: &AddressPlan,
    n: NodeId,
    p: topo::Port,
) -> Option<Ipv6Addr> {
    let l = f.port_link(n, p);
    let (_, a, b) = plan.link_v6(l)?;
    Some(if f.link(l).a == n { b } else { a })
}

/// IPv6 address of `n`'s own end of port `p` on a switch–switch link.
pub(super) fn own_addr6(
    f: &Fabric,
    plan: &AddressPlan,
    n: NodeId,
    p: topo::Port,
) -> Option<(Ipv6Addr, u8)> {
    let l = f.port_link(n, p);
    let (net, a, b) = plan.link_v6(l)?;
    Some((if f.link(l).a == n { a } else { b }, net.len))
}

/// Gateway (`::1`) of a leaf's IPv6 ToR prefix.
pub(super) fn gateway_v6(plan: &AddressPlan, leaf: NodeId) -> Option<Ipv6Addr> {
    plan.tor_prefix_v6(leaf)
        .map(|n| Ipv6Addr::from(u128::from(n.addr) + 1))
}
