//! The routed testbed: a `topo` fabric (single- or multi-plane: one NIC port per plane,
//! probes per plane) realised as Linux namespaces (one per switch and per host) joined by
//! veth pairs, with the kernel forwarding IPv4 and IPv6 (dual stack,
//! [`RoutedOptions::ipv6`]) along the ECMP tables `topo` computes, programmed through
//! rtnetlink (no `ip`).
//!
//! - Addresses come from [`topo::addressing::AddressPlan`]: each switch–switch link gets
//!   its /31 and its /127, each host its address as a /32 (and /128) with a link-scope
//!   route to its leaf's gateway and a default route through it; the leaf carries the
//!   gateway address (/32, /128) on every host-facing port and a /32 (/128) route per
//!   host, so hosts under one leaf also talk through the leaf.
//! - IPv6 is switched on only in the routed testbed's namespaces ([`IPV6_SYSCTLS`]:
//!   no DAD, SLAAC, RA or router solicitation, addresses kept on link-down), before any
//!   veth exists; [`Netns::create`] keeps it off for the star testbed.
//! - Every switch row of [`topo::Routes`] becomes one route per destination ToR prefix
//!   and family: one gateway, or a legacy multipath route (`RTA_MULTIPATH`; weight =
//!   number of times a port appears in the group, passed to the kernel minus one, see
//!   [`crate::netlink`]) — or, with [`RoutedOptions::nexthop_objects`], next-hop objects
//!   and groups (hand-built RTM_NEWNEXTHOP) named by the route (RTA_NH_ID). The switches
//!   get the sysctls that make legacy multipath skip a down link (`ignore_routes_with_linkdown=1`, `fib_multipath_use_neigh=1`, NOTES.md)
//!   and the L4 multipath hash for both families (`fib_multipath_hash_policy=1`) so UDP
//!   flows with different ports spread.
//! - With [`RoutedOptions::link_mbps`] every veth end gets a tbf root qdisc
//!   ([`crate::netlink::Tbf`], TCA_OPTIONS built by hand) that is read back from the kernel;
//!   [`RoutedTestbed::blast`] measures what one UDP flow gets across the shaped fabric.
//! - [`RoutedTestbed::restore_link`] brings a failed link back (netlink, then
//!   [`topo::Routes::restore_links`]) and re-programs the entries that changed.
//! - [`RoutedTestbed::probe_rounds`] sends real UDP datagrams between host pairs, in
//!   several families at once, from sockets opened inside the host namespaces and
//!   reports which arrived.
//! - [`RoutedTestbed::spread`] sends many flows (distinct source ports) from one host and
//!   reads the leaf's per-uplink `tx_packets` (IFLA_STATS64) before and after.
//! - [`RoutedTestbed::fail_link`] sets a link down through netlink, re-routes with
//!   [`topo::Routes::fail_links`] (incremental) and re-programs only the changed entries.
//! - [`RoutedTestbed::drift`] reads every switch's routes back and reports the ones
//!   missing, extra or different from the tables ([`Drift`]).
//! - [`RoutedTestbed::check_neighbours`] sends and hears LLDP on every port (pnet
//!   datalink channels) and reports missing, unexpected and miswired neighbours and
//!   broken Clos rules ([`NeighbourReport`]).
//! - [`verify`] runs all of it and returns a [`VerifyReport`] with one [`FamilyReport`]
//!   per family (`fabric testbed verify`).
//!
//! Namespaces belong to a [`Testbed`] guard: they are removed on drop, panic and Ctrl-C.

use std::collections::HashSet;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr, UdpSocket};
use std::time::{Duration, Instant};

use netlink_packet_route::route::{RouteMessage, RouteScope};
use rtnetlink::RouteMessageBuilder;
use topo::addressing::AddressPlan;
use topo::routing::{LOCAL, NO_ROUTE};
use topo::{Fabric, LinkId, NodeId, Routes};

use super::netns::{Netns, in_netns};
use super::{Error, Result, Testbed};
use crate::netlink::{
    NextHop, Nl, Psched, Tbf, TbfState, multipath_route, multipath_route6, route_dst, route_hops,
};

mod addr;
mod build;
mod drift;
mod failover;
mod neighbours;
mod probe;
mod program;
mod telemetry;
#[cfg(test)]
mod tests;
mod vanish;
mod verify;
mod watch;

use addr::*;
use build::*;
use probe::*;
use program::*;

pub use addr::{entry_hops, entry_hops6};
pub use build::{RoutedOptions, SetupStats, node_role};
pub use drift::{Drift, DriftEntry, DriftKind, DriftRepair};
pub use failover::Failure;
pub use neighbours::{
    Mismatch, MismatchKind, NeighbourReport, check_neighbours, compare_neighbours,
};
pub use probe::{Blast, Lane, ProbeRound, Spread};
pub use program::ROUTE_PROTOCOL;
pub use vanish::NodeGone;
use vanish::Presence;
pub use verify::{FamilyReport, VerifyOptions, VerifyReport, verify};
pub use watch::{LinkChange, LinkWatcher};

/// UDP port every host listens on for probes.
pub const PROBE_PORT: u16 = 7_000;
/// UDP port of the rate measurement ([`RoutedTestbed::blast`]).
pub const BLAST_PORT: u16 = 7_001;
const MAGIC: u32 = 0xfab0_0001;

/// Interface name of port `p` of any node.
pub fn ifname(p: topo::Port) -> String {
    format!("p{p}")
}

/// Sysctls written in every switch namespace (key under `/proc/sys`, value).
pub const SWITCH_SYSCTLS: &[(&str, &str)] = &[
    ("net/ipv4/ip_forward", "1"),
    ("net/ipv4/conf/all/rp_filter", "0"),
    ("net/ipv4/conf/default/rp_filter", "0"),
    ("net/ipv4/conf/all/ignore_routes_with_linkdown", "1"),
    ("net/ipv4/conf/default/ignore_routes_with_linkdown", "1"),
    ("net/ipv4/fib_multipath_use_neigh", "1"),
    ("net/ipv4/fib_multipath_hash_policy", "1"),
];

/// IPv6 sysctls of every routed-testbed namespace (hosts and switches), written right
/// after the namespace is created and before any veth exists, so every link inherits
/// them from `conf/default`: no duplicate address detection (addresses usable at once,
/// never "tentative"), no SLAAC, no router advertisements or solicitations, and
/// addresses kept when a link is set down (so a restored link has its /127 again).
/// IPv6 itself is switched on last ([`Netns::create`] switches it off for the star).
pub const IPV6_SYSCTLS: &[(&str, &str)] = &[
    ("net/ipv6/conf/all/accept_dad", "0"),
    ("net/ipv6/conf/default/accept_dad", "0"),
    ("net/ipv6/conf/all/dad_transmits", "0"),
    ("net/ipv6/conf/default/dad_transmits", "0"),
    ("net/ipv6/conf/all/autoconf", "0"),
    ("net/ipv6/conf/default/autoconf", "0"),
    ("net/ipv6/conf/all/accept_ra", "0"),
    ("net/ipv6/conf/default/accept_ra", "0"),
    ("net/ipv6/conf/all/router_solicitations", "0"),
    ("net/ipv6/conf/default/router_solicitations", "0"),
    ("net/ipv6/conf/all/keep_addr_on_down", "1"),
    ("net/ipv6/conf/default/keep_addr_on_down", "1"),
    ("net/ipv6/conf/all/disable_ipv6", "0"),
    ("net/ipv6/conf/default/disable_ipv6", "0"),
];

/// IPv6 sysctls of every switch namespace: forwarding, skip next hops whose link lost
/// carrier, and the L4 (5-tuple) multipath hash.
pub const SWITCH_SYSCTLS_V6: &[(&str, &str)] = &[
    ("net/ipv6/conf/all/forwarding", "1"),
    ("net/ipv6/conf/default/forwarding", "1"),
    ("net/ipv6/conf/all/ignore_routes_with_linkdown", "1"),
    ("net/ipv6/conf/default/ignore_routes_with_linkdown", "1"),
    ("net/ipv6/fib_multipath_hash_policy", "1"),
];

/// An address family of the dual-stack testbed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, serde::Serialize)]
pub enum Family {
    V4,
    V6,
}

impl std::fmt::Display for Family {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Family::V4 => "IPv4",
            Family::V6 => "IPv6",
        })
    }
}

/// A fabric realised as namespaces, veths and kernel routes.
#[derive(Debug)]
pub struct RoutedTestbed {
    // Field order: sockets and netlink clients go before the guard that deletes the
    // namespaces.
    hosts: Vec<HostSock>,
    nl: Vec<Nl>,
    ns: Vec<Netns>,
    fabric: Fabric,
    plan: AddressPlan,
    routes: Routes,
    ipv6: bool,
    fail_at_b_end: bool,
    /// With next-hop objects: link index per (node, port), and the group ids allocated
    /// per (switch, family, members).
    nexthops: Option<NhState>,
    round: u32,
    /// Per node: whether its namespace is here, vanished ([`RoutedTestbed::node_gone`];
    /// never entered again) or elsewhere ([`RoutedTestbed::adopt_switch`]).
    presence: Vec<Presence>,
    setup: SetupStats,
    tb: Testbed,
}

fn secs(t: Instant) -> f64 {
    t.elapsed().as_secs_f64()
}

fn io(what: impl Into<String>) -> impl FnOnce(std::io::Error) -> Error {
    let what = what.into();
    move |source| Error::Os { what, source }
}

impl RoutedTestbed {
    /// Address of host `h`'s plane-0 port in family `fam` (`None`: not a host, no port
    /// in plane 0, or no such family here).
    pub fn host_addr(&self, h: NodeId, fam: Family) -> Option<IpAddr> {
        self.host_addr_in(h, fam, 0)
    }

    /// Address of host `h`'s port in `plane`, family `fam`.
    pub fn host_addr_in(&self, h: NodeId, fam: Family, plane: u16) -> Option<IpAddr> {
        self.hosts.get(h.idx())?.get(fam, plane).map(|s| s.addr)
    }

    /// The address families this testbed carries (IPv4, and IPv6 unless switched off).
    pub fn families(&self) -> Vec<Family> {
        if self.ipv6 {
            vec![Family::V4, Family::V6]
        } else {
            vec![Family::V4]
        }
    }

    /// The fabric.
    pub fn fabric(&self) -> &Fabric {
        &self.fabric
    }

    /// The current routing state (after failures).
    pub fn routes(&self) -> &Routes {
        &self.routes
    }

    /// Setup figures.
    pub fn setup(&self) -> &SetupStats {
        &self.setup
    }

    /// The run's namespace guard.
    pub fn testbed(&self) -> &Testbed {
        &self.tb
    }

    /// Namespace of node `n`.
    pub fn netns(&self, n: NodeId) -> &Netns {
        &self.ns[n.idx()]
    }

    /// Netlink client of node `n`.
    pub fn nl(&self, n: NodeId) -> &Nl {
        &self.nl[n.idx()]
    }

    /// Delete every namespace now (also done on drop).
    pub fn teardown(mut self) -> Result<()> {
        self.hosts.clear();
        self.nl.clear();
        self.tb.teardown()
    }
}
