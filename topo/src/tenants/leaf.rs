//! The VRFs of every leaf as routes: what the VRF exports write and what the routed
//! testbed programs, from one computation.
//!
//! A leaf has the VRF of every entry with a host port on it. Its table holds an
//! `unreachable` default (a lookup that misses must not fall through to the main table)
//! and one host route per destination the VRF may reach: out of the host's port when the
//! host hangs off this leaf, else over the uplinks the fabric tables give toward the host
//! (next hops in the default VRF: the uplinks stay there). The main table keeps a host
//! route per enslaved port, so traffic arriving on the uplinks still reaches the host.

use std::net::{Ipv4Addr, Ipv6Addr};

use crate::addressing::AddressPlan;
use crate::export::routes::{peer_addr, peer_addr6};
use crate::model::{Fabric, NodeId, Port, TIER_LEAF};
use crate::routing::Routes;

use super::enforce::Enforcement;

/// One next hop of a VRF route, in the default VRF.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Uplink {
    /// Leaf port.
    pub port: Port,
    /// The neighbour's IPv4 address on the link.
    pub via4: Option<Ipv4Addr>,
    /// The neighbour's IPv6 address on the link.
    pub via6: Option<Ipv6Addr>,
}

/// Where a VRF route goes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Out {
    /// Out of the leaf port facing the host.
    Local(Port),
    /// Over these uplinks (ECMP).
    Uplinks(Vec<Uplink>),
}

/// A host route of a VRF.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HostRoute {
    /// Destination host.
    pub dst: NodeId,
    /// Its IPv4 address in the leaf's plane (`/32`).
    pub v4: Option<Ipv4Addr>,
    /// Its IPv6 address (`/128`).
    pub v6: Option<Ipv6Addr>,
    /// Where it goes.
    pub out: Out,
}

/// One VRF on one leaf.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LeafVrf {
    /// The leaf.
    pub leaf: NodeId,
    /// Device name (`Vrf-<entry>`; SONiC wants the `Vrf` prefix).
    pub device: String,
    /// Routing table id.
    pub table: u32,
    /// Host-facing ports enslaved to it, with their hosts.
    pub ports: Vec<(Port, NodeId)>,
    /// Its host routes.
    pub routes: Vec<HostRoute>,
}

/// The device name of an entry's VRF.
pub fn device(name: &str) -> String {
    format!("Vrf-{name}")
}

/// Every leaf's VRFs, by leaf then entry, over `routes` (as failed).
pub fn leaf_vrfs(
    f: &Fabric,
    routes: &Routes,
    addr: &AddressPlan,
    enf: &Enforcement,
) -> Vec<LeafVrf> {
    let mut out = Vec::new();
    for leaf in f.switches_in_tier(TIER_LEAF) {
        let Some(plane) = f.plane(leaf) else { continue };
        for v in &enf.vrfs {
            let ports: Vec<(Port, NodeId)> = v
                .ports_of
                .iter()
                .filter_map(|&h| {
                    let a = f.attachment(h, plane)?;
                    (a.leaf == leaf).then_some((a.leaf_port, h))
                })
                .collect();
            if ports.is_empty() {
                continue;
            }
            let routes = v
                .routes_to
                .iter()
                .filter_map(|&d| host_route(f, routes, addr, leaf, plane, d))
                .collect();
            out.push(LeafVrf {
                leaf,
                device: device(&v.name),
                table: v.table,
                ports,
                routes,
            });
        }
    }
    out
}

fn host_route(
    f: &Fabric,
    routes: &Routes,
    addr: &AddressPlan,
    leaf: NodeId,
    plane: u16,
    d: NodeId,
) -> Option<HostRoute> {
    let a = f.attachment(d, plane)?;
    let out = if a.leaf == leaf {
        Out::Local(a.leaf_port)
    } else {
        let hops: Vec<Uplink> = routes
            .next_hops(leaf, d)
            .iter()
            .map(|&port| Uplink {
                port,
                via4: peer_addr(f, addr, leaf, port).map(|x| x.1),
                via6: peer_addr6(f, addr, leaf, port).map(|x| x.1),
            })
            .collect();
        if hops.is_empty() {
            return None;
        }
        Out::Uplinks(hops)
    };
    Some(HostRoute {
        dst: d,
        v4: addr.host_v4(f, d, plane),
        v6: addr.host_v6(f, d, plane),
        out,
    })
}
