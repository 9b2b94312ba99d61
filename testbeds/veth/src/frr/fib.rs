//! A switch's FIB, read back through netlink in its namespace, checked against the
//! tables `topo` computes for the live topology — whoever wrote the routes (FRR's zebra
//! here, protocol `bgp`). Next hops are compared by the port they leave through, with
//! weights reduced by their greatest common divisor: FRR names IPv6 next hops by the
//! neighbour's link-local address and writes link-bandwidth weights scaled to 100
//! (1:2 becomes 33:66, equal shares 1:1 or 100:100), so gateways and raw weights differ
//! from the tables while the forwarding is the same.
//!
//! A route is compared as a [`FibRoute`] (prefix, ports with shares, gateways as read,
//! protocol), whoever read it: netlink dumps here ([`FibRoute::from_netlink`]) or FRR's
//! own RIB as `vtysh` prints it ([`super::vtysh_fib`]).
//!
//! Findings reuse [`crate::routed::Drift`]: `missing` (the tables want a route, the FIB
//! has none, or a black hole), `extra` (a route the tables do not want, or one more
//! specific than a ToR prefix — a hand-made route that would steal part of a prefix),
//! `different` (other ports or shares: a missing ECMP member, or a next hop over a
//! failed link).

use std::collections::HashMap;
use std::net::IpAddr;
use std::time::Instant;

use netlink_packet_route::route::{RouteAttribute, RouteMessage, RouteType};
use topo::addressing::AddressPlan;
use topo::routing::{LOCAL, NO_ROUTE};
use topo::{Fabric, NodeId, Routes};

use crate::netlink::{Nl, route_dst, route_hops};
use crate::routed::{Drift, DriftEntry, DriftKind, Family, entry_hops, entry_hops6, ifname};
use crate::{Error, Result};

/// `(port, share)` next hops, sorted, shares reduced by their gcd.
pub type PortHops = Vec<(topo::Port, u32)>;

fn gcd(a: u32, b: u32) -> u32 {
    if b == 0 { a } else { gcd(b, a % b) }
}

/// Sorts, merges equal ports and divides the weights by their gcd.
pub fn normalize(mut hops: Vec<(topo::Port, u32)>) -> PortHops {
    hops.sort();
    let mut out: PortHops = Vec::new();
    for (p, w) in hops {
        match out.last_mut() {
            Some((q, v)) if *q == p => *v += w,
            _ => out.push((p, w)),
        }
    }
    let g = out.iter().fold(0, |g, &(_, w)| gcd(g, w));
    if g > 1 {
        for (_, w) in &mut out {
            *w /= g;
        }
    }
    out
}

/// The ports (with multiplicity) the tables send `switch`'s traffic to `leaf` through;
/// `None` for no route (or the leaf itself).
pub fn wanted_ports(routes: &Routes, switch: NodeId, leaf: NodeId) -> Option<PortHops> {
    let e = routes.entry(switch, leaf);
    if e == LOCAL || e == NO_ROUTE {
        return None;
    }
    let hops = routes
        .groups()
        .get(e)
        .iter()
        .map(|&p| (p, 1))
        .collect::<Vec<_>>();
    (!hops.is_empty()).then(|| normalize(hops))
}

/// A route's next hops as ports (`port_of`: interface index → port); a black hole,
/// an unreachable route or a next hop out of a non-fabric interface gives no port.
pub fn route_ports(m: &RouteMessage, port_of: &HashMap<u32, topo::Port>) -> PortHops {
    if matches!(
        m.header.kind,
        RouteType::BlackHole | RouteType::Unreachable | RouteType::Prohibit
    ) {
        return Vec::new();
    }
    let mut hops = Vec::new();
    for a in &m.attributes {
        match a {
            RouteAttribute::Oif(i) => hops.extend(port_of.get(i).map(|&p| (p, 1))),
            RouteAttribute::MultiPath(nhs) => {
                for nh in nhs {
                    if let Some(&p) = port_of.get(&nh.interface_index) {
                        hops.push((p, nh.hops as u32 + 1));
                    }
                }
            }
            _ => {}
        }
    }
    normalize(hops)
}

/// One FIB route as the check compares it, whoever read it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FibRoute {
    /// Destination prefix.
    pub dst: (IpAddr, u8),
    /// Next hops as ports with shares ([`normalize`]d); empty for a black hole, an
    /// unreachable route or next hops that leave through no fabric port.
    pub ports: PortHops,
    /// Gateways and weights as read (for the report).
    pub hops: Vec<(IpAddr, u16)>,
    /// The route's protocol as the kernel numbers it (`rtnetlink` `RTPROT_*`), if known.
    pub protocol: Option<u8>,
}

impl FibRoute {
    /// A netlink route message (`port_of`: interface index → port); `None` without a
    /// destination.
    pub fn from_netlink(m: &RouteMessage, port_of: &HashMap<u32, topo::Port>) -> Option<Self> {
        Some(FibRoute {
            dst: route_dst(m)?,
            ports: route_ports(m, port_of),
            hops: route_hops(m),
            protocol: Some(u8::from(m.header.protocol)),
        })
    }

    /// Every route of a dump that has a destination.
    pub fn from_dump(dump: &[RouteMessage], port_of: &HashMap<u32, topo::Port>) -> Vec<Self> {
        dump.iter()
            .filter_map(|m| Self::from_netlink(m, port_of))
            .collect()
    }
}

/// Whether `a/alen` lies inside `b/blen` (same family).
fn within(a: IpAddr, alen: u8, b: IpAddr, blen: u8) -> bool {
    if alen < blen {
        return false;
    }
    match (a, b) {
        (IpAddr::V4(a), IpAddr::V4(b)) => {
            let m = if blen == 0 {
                0
            } else {
                u32::MAX << (32 - blen)
            };
            u32::from(a) & m == u32::from(b) & m
        }
        (IpAddr::V6(a), IpAddr::V6(b)) => {
            let m = if blen == 0 {
                0
            } else {
                u128::MAX << (128 - blen)
            };
            u128::from(a) & m == u128::from(b) & m
        }
        _ => false,
    }
}

/// What one switch's FIB is checked with.
#[derive(Debug)]
pub struct SwitchFib<'a> {
    /// The switch.
    pub switch: NodeId,
    /// Its IPv4 routes (one dump).
    pub v4: &'a [FibRoute],
    /// Its IPv6 routes (one dump; empty: IPv6 not checked).
    pub v6: &'a [FibRoute],
}

/// Compares one switch's FIB with `routes` (the tables of the live topology) and adds
/// the findings to `d`. Pure: unit-tested on hand-made routes.
pub fn compare_switch(
    f: &Fabric,
    plan: &AddressPlan,
    routes: &Routes,
    fib: &SwitchFib<'_>,
    d: &mut Drift,
) {
    let s = fib.switch;
    let Some(plane) = f.plane(s) else {
        return;
    };
    let leaves: Vec<NodeId> = f.plane_info(plane).leaves().map(NodeId).collect();
    for (fam, dump) in [(Family::V4, fib.v4), (Family::V6, fib.v6)] {
        if fam == Family::V6 && dump.is_empty() {
            continue;
        }
        let mut prefixes = Vec::new();
        for &leaf in &leaves {
            let dst: Option<(IpAddr, u8)> = match fam {
                Family::V4 => plan.tor_prefix_v4(leaf).map(|p| (p.addr.into(), p.len)),
                Family::V6 => plan.tor_prefix_v6(leaf).map(|p| (p.addr.into(), p.len)),
            };
            let Some(dst) = dst else { continue };
            prefixes.push((leaf, dst));
            d.checked += 1;
            let wanted = wanted_ports(routes, s, leaf);
            let kernel = dump.iter().find(|m| m.dst == dst);
            let got = kernel.map(|m| m.ports.clone());
            let kind = match (&wanted, &got) {
                (None, None) => continue,
                // The leaf itself: connected host routes, no prefix route wanted.
                (None, Some(_)) if routes.entry(s, leaf) == LOCAL => continue,
                (Some(_), None) => DriftKind::Missing,
                (Some(_), Some(g)) if g.is_empty() => DriftKind::Missing,
                (None, Some(_)) => DriftKind::Extra,
                (Some(w), Some(g)) if w == g => continue,
                (Some(_), Some(_)) => DriftKind::Different,
            };
            d.entries
                .push(entry(f, plan, routes, s, leaf, fam, dst, kind, kernel));
        }
        // Routes more specific than a ToR prefix (never in the design).
        for m in dump {
            let (a, len) = m.dst;
            if let Some(&(leaf, (pa, plen))) = prefixes
                .iter()
                .find(|(_, (pa, plen))| len > *plen && within(a, len, *pa, *plen))
            {
                // A leaf's own host routes are connected ones (its ports): not drift.
                if routes.entry(s, leaf) == LOCAL {
                    continue;
                }
                let _ = (pa, plen);
                d.entries.push(entry(
                    f,
                    plan,
                    routes,
                    s,
                    leaf,
                    fam,
                    (a, len),
                    DriftKind::Extra,
                    Some(m),
                ));
            }
        }
    }
}

#[allow(clippy::too_many_arguments)]
fn entry(
    f: &Fabric,
    plan: &AddressPlan,
    routes: &Routes,
    s: NodeId,
    leaf: NodeId,
    fam: Family,
    dst: (IpAddr, u8),
    kind: DriftKind,
    kernel: Option<&FibRoute>,
) -> DriftEntry {
    let wanted: Vec<(IpAddr, u16)> = match fam {
        Family::V4 => entry_hops(f, plan, routes, s, leaf)
            .unwrap_or_default()
            .into_iter()
            .map(|(g, w)| (g.into(), w as u16))
            .collect(),
        Family::V6 => entry_hops6(f, plan, routes, s, leaf)
            .unwrap_or_default()
            .into_iter()
            .map(|(g, w)| (g.into(), w as u16))
            .collect(),
    };
    DriftEntry {
        switch: f.node_name(s).to_string(),
        leaf: f.node_name(leaf).to_string(),
        family: fam,
        prefix: format!("{}/{}", dst.0, dst.1),
        kind,
        wanted,
        kernel: kernel.map(|m| m.hops.clone()).unwrap_or_default(),
        kernel_nhid: None,
        kernel_protocol: kernel.and_then(|m| m.protocol),
    }
}

/// Interface index → port of a switch (its interfaces `p<port>`).
pub fn port_map(f: &Fabric, s: NodeId, nl: &Nl) -> Result<HashMap<u32, topo::Port>> {
    let mut m = HashMap::new();
    for p in 0..f.degree(s) as topo::Port {
        m.insert(nl.index(&ifname(p))?, p);
    }
    Ok(m)
}

/// Reads every switch's FIB (`nl[i]`: the `i`-th switch in `f.switches()` order, with
/// its port map) through netlink and compares it with `routes`.
pub fn check(
    f: &Fabric,
    plan: &AddressPlan,
    routes: &Routes,
    switches: &[(NodeId, &Nl, &HashMap<u32, topo::Port>)],
    ipv6: bool,
) -> Result<Drift> {
    let mut i = 0;
    check_with(f, plan, routes, switches.len(), |_| {
        let (s, nl, port_of) = switches[i];
        i += 1;
        let v4 = FibRoute::from_dump(&nl.routes()?, port_of);
        let v6 = if ipv6 {
            FibRoute::from_dump(&nl.routes6()?, port_of)
        } else {
            Vec::new()
        };
        Ok((s, v4, v6))
    })
}

/// Compares `n` switches' FIBs with `routes`; `read(i)` gives the `i`-th switch and its
/// IPv4 and IPv6 routes (IPv6 empty: not checked), read however the caller reads them.
pub fn check_with(
    f: &Fabric,
    plan: &AddressPlan,
    routes: &Routes,
    n: usize,
    mut read: impl FnMut(usize) -> Result<(NodeId, Vec<FibRoute>, Vec<FibRoute>)>,
) -> Result<Drift> {
    let t = Instant::now();
    let mut d = Drift::default();
    for i in 0..n {
        let (s, v4, v6) = read(i)?;
        compare_switch(
            f,
            plan,
            routes,
            &SwitchFib {
                switch: s,
                v4: &v4,
                v6: &v6,
            },
            &mut d,
        );
    }
    if d.checked == 0 && f.num_switches() > 0 {
        return Err(Error::Invalid(
            "no route to check: no switch has a plane".into(),
        ));
    }
    d.took_s = t.elapsed().as_secs_f64();
    Ok(d)
}

#[cfg(test)]
mod tests {
    use super::*;
    use netlink_packet_route::route::{RouteNextHop, RouteProtocol};
    use std::net::Ipv4Addr;

    fn route(dst: Ipv4Addr, len: u8, hops: &[(u32, u8)]) -> RouteMessage {
        let mut m = crate::netlink::multipath_route(dst, len, &[]);
        m.attributes
            .retain(|a| !matches!(a, RouteAttribute::MultiPath(_)));
        let nhs = hops
            .iter()
            .map(|&(oif, w)| {
                let mut nh = RouteNextHop::default();
                nh.interface_index = oif;
                nh.hops = w;
                nh
            })
            .collect();
        m.attributes.push(RouteAttribute::MultiPath(nhs));
        m.header.protocol = RouteProtocol::Bgp;
        m
    }

    #[test]
    fn shares_are_reduced() {
        assert_eq!(normalize(vec![(3, 66), (2, 33)]), vec![(2, 1), (3, 2)]);
        assert_eq!(normalize(vec![(2, 100), (3, 100)]), vec![(2, 1), (3, 1)]);
        assert_eq!(
            normalize(vec![(2, 1), (2, 1), (3, 2)]),
            vec![(2, 1), (3, 1)]
        );
    }

    #[test]
    fn a_leaf_fib_is_classified() {
        let f = topo::generators::fat_tree(4, topo::Rate::gbps(100)).unwrap();
        let plan = AddressPlan::new(&f).unwrap();
        let routes = Routes::compute(&f);
        let s = f
            .switches()
            .find(|&s| f.node_name(s) == "pod0-leaf0")
            .unwrap();
        let leaves: Vec<NodeId> = f
            .plane_info(f.plane(s).unwrap())
            .leaves()
            .map(NodeId)
            .collect();
        // Ports 2 and 3 are the uplinks (ifindex 12, 13).
        let port_of: HashMap<u32, topo::Port> = [(12, 2), (13, 3)].into_iter().collect();
        let mut v4 = Vec::new();
        for &l in leaves.iter().filter(|&&l| l != s) {
            let p = plan.tor_prefix_v4(l).unwrap();
            v4.push(route(p.addr, p.len, &[(12, 99), (13, 99)]));
        }
        let fib = |v4: &[RouteMessage]| {
            let mut d = Drift::default();
            compare_switch(
                &f,
                &plan,
                &routes,
                &SwitchFib {
                    switch: s,
                    v4: &FibRoute::from_dump(v4, &port_of),
                    v6: &[],
                },
                &mut d,
            );
            d
        };
        let d = fib(&v4);
        assert_eq!(d.checked, 8);
        assert!(d.entries.is_empty(), "{:?}", d.entries);
        // One member gone, one route gone, one more-specific route added by hand.
        v4[0] = route(
            route_dst(&v4[0])
                .map(|(a, _)| match a {
                    IpAddr::V4(a) => a,
                    _ => unreachable!(),
                })
                .unwrap(),
            30,
            &[(12, 0)],
        );
        v4.remove(1);
        let far = plan.tor_prefix_v4(leaves[7]).unwrap();
        v4.push(route(far.addr, 32, &[(12, 0)]));
        let d = fib(&v4);
        assert_eq!(d.count(DriftKind::Different), 1, "{:?}", d.entries);
        assert_eq!(d.count(DriftKind::Missing), 1);
        assert_eq!(d.count(DriftKind::Extra), 1);
        let extra = d
            .entries
            .iter()
            .find(|e| e.kind == DriftKind::Extra)
            .unwrap();
        assert!(extra.prefix.ends_with("/32"), "{extra:?}");
    }
}
