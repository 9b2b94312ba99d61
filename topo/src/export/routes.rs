//! The IP view of a routed fabric that the IP exporters share: per switch,
//! one route per destination prefix with its next hops resolved to
//! interfaces and gateway addresses from the [`AddressPlan`].
//!
//! - **ECMP** tables ([`Tables::Ecmp`]) give one route per destination ToR
//!   prefix of the switch's plane (the tables are aggregated per leaf), next
//!   hops = the up*/down* ECMP group, gateway = the neighbour's end of the
//!   link's /31.
//! - **Single-path** tables ([`Tables::SinglePath`]) give one /32 per
//!   destination host port, with the one next hop the d-mod-k table chose.
//! - At a destination's own leaf the hosts are directly attached: one /32 per
//!   host port, out of the host-facing interface with no gateway
//!   ([`Route::local`]; `ip` writes these `scope link`).
//!
//! - Every route is dual stack: [`Route::prefix`] / [`Hop::via`] in IPv4 and
//!   [`Route::prefix6`] / [`Hop::via6`] in IPv6 (ToR /64, host /128, link /127 ends).
//! - With [`Weights`] (ECMP tables after failures) each [`Hop::weight`] is its
//!   capacity-derived weight ([`crate::wcmp`]); otherwise 1.
//!
//! Interface names: Linux `swp<port+1>` (as Cumulus/SONiC-VS name front-panel
//! ports, 1-based), SONiC `Ethernet<4·port>` (4 lanes per port, the usual
//! SONiC numbering). Routes to switch loopbacks are not part of the tables;
//! the BGP configuration advertises them.

use std::net::{Ipv4Addr, Ipv6Addr};

use super::{ExportError, Tables};
use crate::addressing::{AddressPlan, V4Net, V6Net};
use crate::model::{Fabric, LinkId, NodeId, Port};
use crate::routing::{LOCAL, NO_ROUTE};
use crate::wcmp::Weights;

/// Linux interface name of a switch port: `swp1` for port 0.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LinuxIf(pub Port);

impl std::fmt::Display for LinuxIf {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "swp{}", u32::from(self.0) + 1)
    }
}

/// SONiC interface name of a switch port: `Ethernet0`, `Ethernet4`, …
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SonicIf(pub Port);

impl std::fmt::Display for SonicIf {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Ethernet{}", 4 * u32::from(self.0))
    }
}

/// One next hop: the port, the neighbour behind it and its address on the link.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Hop {
    /// Outgoing port (model numbering, from 0).
    pub port: Port,
    /// Neighbour node.
    pub peer: NodeId,
    /// Gateway: the neighbour's address on the link (the host's own address
    /// for a directly attached host).
    pub via: Ipv4Addr,
    /// The same in IPv6 (the far end of the link's /127, or the host's address).
    pub via6: Ipv6Addr,
    /// Relative weight (1 unless the tables' [`Weights`] say otherwise).
    pub weight: u32,
}

/// One route of a switch.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Route {
    /// Destination prefix.
    pub prefix: V4Net,
    /// Destination prefix in IPv6.
    pub prefix6: V6Net,
    /// Destination node: the leaf owning the prefix, or the host of a /32.
    pub dst: NodeId,
    /// True for a directly attached host (no gateway).
    pub local: bool,
}

/// The far end of `node`'s link on `port` in one family: the host's address toward a
/// host, else the other end of the link's subnet (`link` gives the `a` and `b` ends).
fn far_end<A>(
    f: &Fabric,
    node: NodeId,
    port: Port,
    host: impl FnOnce(NodeId, u16) -> Option<A>,
    link: impl FnOnce(LinkId) -> Option<(A, A)>,
) -> Option<(NodeId, A)> {
    let peer = f.peer(node, port);
    if f.is_host(peer) {
        return Some((peer, host(peer, f.plane(node)?)?));
    }
    let l = f.port_link(node, port);
    let (a, b) = link(l)?;
    Some((peer, if f.link(l).a == node { b } else { a }))
}

/// `node`'s own end of its link on `port` (`link` gives the subnet and both ends).
fn near_end<N, A>(
    f: &Fabric,
    node: NodeId,
    port: Port,
    link: impl FnOnce(LinkId) -> Option<(N, A, A)>,
) -> Option<(N, A)> {
    let l = f.port_link(node, port);
    let (net, a, b) = link(l)?;
    Some((net, if f.link(l).a == node { a } else { b }))
}

/// Address of `node`'s neighbour on `node`'s `port` (the far end of the link).
pub fn peer_addr(
    f: &Fabric,
    addr: &AddressPlan,
    node: NodeId,
    port: Port,
) -> Option<(NodeId, Ipv4Addr)> {
    far_end(
        f,
        node,
        port,
        |h, pl| addr.host_v4(f, h, pl),
        |l| addr.link_v4(l).map(|(_, a, b)| (a, b)),
    )
}

/// [`peer_addr`] in IPv6: the far end of the link's /127, or the host's address.
pub fn peer_addr6(
    f: &Fabric,
    addr: &AddressPlan,
    node: NodeId,
    port: Port,
) -> Option<(NodeId, Ipv6Addr)> {
    far_end(
        f,
        node,
        port,
        |h, pl| addr.host_v6(f, h, pl),
        |l| addr.link_v6(l).map(|(_, a, b)| (a, b)),
    )
}

/// Address of `node`'s own end of the link on `port` (`None` toward hosts:
/// the leaf uses its gateway address there).
pub fn own_addr(
    f: &Fabric,
    addr: &AddressPlan,
    node: NodeId,
    port: Port,
) -> Option<(V4Net, Ipv4Addr)> {
    near_end(f, node, port, |l| addr.link_v4(l))
}

/// [`own_addr`] in IPv6: `node`'s end of the link's /127.
pub fn own_addr6(
    f: &Fabric,
    addr: &AddressPlan,
    node: NodeId,
    port: Port,
) -> Option<(V6Net, Ipv6Addr)> {
    near_end(f, node, port, |l| addr.link_v6(l))
}

fn missing(f: &Fabric, s: NodeId, what: &str) -> ExportError {
    ExportError::Addressing(format!("{}: no {what} in the address plan", f.node_name(s)))
}

fn host_route(
    f: &Fabric,
    addr: &AddressPlan,
    plane: u16,
    h: NodeId,
) -> Result<(V4Net, V6Net), ExportError> {
    let ip = addr
        .host_v4(f, h, plane)
        .ok_or_else(|| missing(f, h, "host address"))?;
    let ip6 = addr
        .host_v6(f, h, plane)
        .ok_or_else(|| missing(f, h, "host IPv6 address"))?;
    Ok((
        V4Net { addr: ip, len: 32 },
        V6Net {
            addr: ip6,
            len: 128,
        },
    ))
}

/// The callback of [`for_each_route`] as a trait object.
type EmitFn<'e> = dyn FnMut(&Route, &[Hop]) -> Result<(), ExportError> + 'e;

/// Calls `emit(route, hops)` for every route of switch `s`, in destination
/// order (leaf order for ECMP, host LID-column order for single path). Entries
/// without a route are skipped and counted in the return value. Every hop has
/// weight 1 ([`for_each_weighted_route`] gives the capacity weights).
pub fn for_each_route(
    f: &Fabric,
    addr: &AddressPlan,
    tables: &Tables<'_>,
    s: NodeId,
    emit: impl FnMut(&Route, &[Hop]) -> Result<(), ExportError>,
) -> Result<u64, ExportError> {
    for_each_weighted_route(f, addr, tables, None, s, emit)
}

/// [`for_each_route`] with `weights` (of ECMP tables, [`Weights::compute`])
/// setting [`Hop::weight`].
pub fn for_each_weighted_route(
    f: &Fabric,
    addr: &AddressPlan,
    tables: &Tables<'_>,
    weights: Option<&Weights>,
    s: NodeId,
    mut emit: impl FnMut(&Route, &[Hop]) -> Result<(), ExportError>,
) -> Result<u64, ExportError> {
    let plane = f.plane(s).ok_or_else(|| missing(f, s, "plane"))?;
    let info = f.plane_info(plane);
    let routes = tables.routes();
    let mut hops: Vec<Hop> = Vec::new();
    let mut skipped = 0u64;
    let resolve = |p: Port, hops: &mut Vec<Hop>| -> Result<(), ExportError> {
        let (peer, via) = peer_addr(f, addr, s, p).ok_or_else(|| missing(f, s, "link address"))?;
        let (_, via6) =
            peer_addr6(f, addr, s, p).ok_or_else(|| missing(f, s, "IPv6 link address"))?;
        hops.push(Hop {
            port: p,
            peer,
            via,
            via6,
            weight: 1,
        });
        Ok(())
    };
    // Directly attached hosts of a leaf (both engines).
    let local_hosts = |emit: &mut EmitFn<'_>, hops: &mut Vec<Hop>| -> Result<(), ExportError> {
        for p in 0..f.degree(s) as Port {
            let h = f.peer(s, p);
            if !f.is_host(h) || !routes.link_is_up(f.port_link(s, p)) {
                continue;
            }
            hops.clear();
            resolve(p, hops)?;
            let (prefix, prefix6) = host_route(f, addr, plane, h)?;
            emit(
                &Route {
                    prefix,
                    prefix6,
                    dst: h,
                    local: true,
                },
                hops,
            )?;
        }
        Ok(())
    };
    match tables {
        Tables::Ecmp(r) => {
            for leaf in info.leaves().map(NodeId) {
                match r.entry(s, leaf) {
                    LOCAL => local_hosts(&mut emit, &mut hops)?,
                    NO_ROUTE => skipped += 1,
                    g => {
                        hops.clear();
                        for &p in r.groups().get(g) {
                            resolve(p, &mut hops)?;
                        }
                        if let Some(ws) = weights.and_then(|w| w.get(s, leaf)) {
                            for (h, &w) in hops.iter_mut().zip(ws) {
                                h.weight = w;
                            }
                        }
                        let prefix = addr
                            .tor_prefix_v4(leaf)
                            .ok_or_else(|| missing(f, leaf, "ToR prefix"))?;
                        let prefix6 = addr
                            .tor_prefix_v6(leaf)
                            .ok_or_else(|| missing(f, leaf, "IPv6 ToR prefix"))?;
                        emit(
                            &Route {
                                prefix,
                                prefix6,
                                dst: leaf,
                                local: false,
                            },
                            &hops,
                        )?;
                    }
                }
            }
        }
        Tables::SinglePath(_, lft) => {
            let t = &lft.planes[usize::from(plane)];
            let mut locals_done = false;
            for (c, &h) in t.columns.iter().enumerate() {
                let leaf = f.attachment(h, plane).map(|a| a.leaf);
                if leaf == Some(s) {
                    if !locals_done {
                        local_hosts(&mut emit, &mut hops)?;
                        locals_done = true;
                    }
                    continue;
                }
                match t.get(s, c) {
                    None => skipped += 1,
                    Some(p) => {
                        hops.clear();
                        resolve(p, &mut hops)?;
                        let (prefix, prefix6) = host_route(f, addr, plane, h)?;
                        emit(
                            &Route {
                                prefix,
                                prefix6,
                                dst: h,
                                local: false,
                            },
                            &hops,
                        )?;
                    }
                }
            }
        }
    }
    Ok(skipped)
}
