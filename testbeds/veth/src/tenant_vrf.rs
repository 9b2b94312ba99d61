//! Per-tenant routing on a routed testbed's leaves: the tables of
//! [`topo::tenants::leaf::leaf_vrfs`] programmed through rtnetlink, each host-facing port
//! bound to its tenant's table.
//!
//! On a switch the binding is a VRF device (the `vrf-ip`, `vrf-frr`, `vrf-sonic` exports).
//! This machine's kernel has no VRF driver (`CONFIG_NET_VRF` is not set; `ip link add …
//! type vrf` answers "Unknown device type"), so the testbed binds a port to its tenant's
//! table the way VRF-lite did before VRF devices: a policy rule `iif <port> lookup <table>`
//! (pref [`RULE_PREF`], both families) — what the kernel's own l3mdev rule does for an
//! enslaved port. The tables are the exports' tables, route for route: an `unreachable`
//! default (a miss is dropped, never looked up in the main table), host routes to the
//! tenant's own hosts and the services it may reach, uplinks as next hops. The main table
//! is untouched: traffic from the uplinks still reaches every host.
//!
//! Messages are built as values ([`rule_payload`], [`table_routes`]) and sent by
//! [`apply`], so the bytes are unit-tested without root.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

use netlink_packet_route::route::{
    RouteAttribute, RouteMessage, RouteNextHop, RouteScope, RouteType,
};
use rtnetlink::RouteMessageBuilder;
use topo::tenants::leaf::{LeafVrf, Out};

use crate::Result;
use crate::routed::{RoutedTestbed, ifname};

/// Priority of the per-port rules (the kernel's l3mdev rule uses 1000 too).
pub const RULE_PREF: u32 = 1000;
/// RTM_NEWRULE (linux/rtnetlink.h).
pub const RTM_NEWRULE: u16 = 32;
/// Metric of the `unreachable` defaults (as the exports write it).
pub const UNREACHABLE_METRIC: u32 = topo::export::vrf::UNREACHABLE_METRIC;

/// What [`apply`] programmed.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Applied {
    /// Tenant tables programmed (one per tenant per leaf).
    pub tables: usize,
    /// Ports bound (one rule per family each).
    pub ports: usize,
    /// Routes written.
    pub routes: usize,
}

/// The RTM_NEWRULE payload (linux/fib_rules.h): `struct fib_rule_hdr` { family, dst_len,
/// src_len, tos, table (RT_TABLE_UNSPEC: the table is in FRA_TABLE), res1, res2, action
/// (FR_ACT_TO_TBL = 1), flags u32 }, then FRA_IIFNAME (3, NUL-terminated), FRA_PRIORITY
/// (6, u32), FRA_TABLE (15, u32).
pub fn rule_payload(v6: bool, iif: &str, table: u32, pref: u32) -> Vec<u8> {
    let family = if v6 { libc::AF_INET6 } else { libc::AF_INET } as u8;
    let mut b = vec![family, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0];
    let mut attr = |ty: u16, data: &[u8]| {
        let len = 4 + data.len();
        b.extend_from_slice(&(len as u16).to_ne_bytes());
        b.extend_from_slice(&ty.to_ne_bytes());
        b.extend_from_slice(data);
        b.resize(b.len() + (len.div_ceil(4) * 4 - len), 0);
    };
    let mut name = iif.as_bytes().to_vec();
    name.push(0);
    attr(3, &name);
    attr(6, &pref.to_ne_bytes());
    attr(15, &table.to_ne_bytes());
    b
}

/// The routes of one leaf's tenant table: the unreachable defaults, then one host route per
/// destination and family. `index` maps a testbed interface name to its ifindex.
pub fn table_routes(
    v: &LeafVrf,
    v6: bool,
    index: &mut dyn FnMut(&str) -> Result<u32>,
) -> Result<Vec<RouteMessage>> {
    let t = v.table;
    let mut out = vec![
        RouteMessageBuilder::<Ipv4Addr>::new()
            .table_id(t)
            .kind(RouteType::Unreachable)
            .priority(UNREACHABLE_METRIC)
            .build(),
    ];
    if v6 {
        out.push(
            RouteMessageBuilder::<Ipv6Addr>::new()
                .table_id(t)
                .kind(RouteType::Unreachable)
                .priority(UNREACHABLE_METRIC)
                .build(),
        );
    }
    for r in &v.routes {
        let fams = [r.v4.map(IpAddr::V4), r.v6.filter(|_| v6).map(IpAddr::V6)];
        for dst in fams.into_iter().flatten() {
            out.push(host_route(t, dst, &r.out, index)?);
        }
    }
    Ok(out)
}

fn host_route(
    table: u32,
    dst: IpAddr,
    out: &Out,
    index: &mut dyn FnMut(&str) -> Result<u32>,
) -> Result<RouteMessage> {
    let msg = match (dst, out) {
        (IpAddr::V4(d), Out::Local(p)) => RouteMessageBuilder::<Ipv4Addr>::new()
            .table_id(table)
            .destination_prefix(d, 32)
            .output_interface(index(&ifname(*p))?)
            .scope(RouteScope::Link)
            .build(),
        (IpAddr::V6(d), Out::Local(p)) => RouteMessageBuilder::<Ipv6Addr>::new()
            .table_id(table)
            .destination_prefix(d, 128)
            .output_interface(index(&ifname(*p))?)
            .build(),
        (IpAddr::V4(d), Out::Uplinks(hops)) => {
            let mut nhs = Vec::new();
            for u in hops {
                if let Some(gw) = u.via4 {
                    nhs.push(next_hop(index(&ifname(u.port))?, IpAddr::V4(gw)));
                }
            }
            RouteMessageBuilder::<Ipv4Addr>::new()
                .table_id(table)
                .destination_prefix(d, 32)
                .multipath(nhs)
                .build()
        }
        (IpAddr::V6(d), Out::Uplinks(hops)) => {
            let mut nhs = Vec::new();
            for u in hops {
                if let Some(gw) = u.via6 {
                    nhs.push(next_hop(index(&ifname(u.port))?, IpAddr::V6(gw)));
                }
            }
            RouteMessageBuilder::<Ipv6Addr>::new()
                .table_id(table)
                .destination_prefix(d, 128)
                .multipath(nhs)
                .build()
        }
    };
    Ok(msg)
}

fn next_hop(ifindex: u32, gw: IpAddr) -> RouteNextHop {
    let mut nh = RouteNextHop::default();
    nh.interface_index = ifindex;
    nh.attributes.push(RouteAttribute::Gateway(match gw {
        IpAddr::V4(a) => a.into(),
        IpAddr::V6(a) => a.into(),
    }));
    nh
}

/// Programs `vrfs` (from `leaf_vrfs` over the testbed's fabric, tables and address plan)
/// into the testbed's leaves; IPv6 too when `v6`.
pub fn apply(tb: &RoutedTestbed, vrfs: &[LeafVrf], v6: bool) -> Result<Applied> {
    let mut done = Applied::default();
    for v in vrfs {
        let nl = tb.nl(v.leaf);
        let mut index = |name: &str| nl.index(name);
        for msg in table_routes(v, v6, &mut index)? {
            nl.replace_route(msg)?;
            done.routes += 1;
        }
        for &(p, _) in &v.ports {
            let port = ifname(p);
            for fam6 in [false, true].into_iter().filter(|&x| !x || v6) {
                let what = format!("rule iif {port} lookup {} (v6 {fam6})", v.table);
                nl.raw_request(
                    RTM_NEWRULE,
                    NLM_F_CREATE | NLM_F_EXCL,
                    &rule_payload(fam6, &port, v.table, RULE_PREF),
                    &what,
                )?;
            }
            done.ports += 1;
        }
        done.tables += 1;
    }
    Ok(done)
}

const NLM_F_CREATE: u16 = 0x400;
const NLM_F_EXCL: u16 = 0x200;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rule_bytes_are_fib_rule_hdr_and_attributes() {
        let b = rule_payload(false, "p1", 1003, 1000);
        assert_eq!(&b[..12], &[2, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0]);
        // FRA_IIFNAME "p1\0" (len 7, padded to 8), FRA_PRIORITY, FRA_TABLE.
        assert_eq!(&b[12..16], &[7, 0, 3, 0]);
        assert_eq!(&b[16..20], b"p1\0\0");
        assert_eq!(&b[20..24], &[8, 0, 6, 0]);
        assert_eq!(&b[24..28], &1000u32.to_ne_bytes());
        assert_eq!(&b[28..32], &[8, 0, 15, 0]);
        assert_eq!(&b[32..36], &1003u32.to_ne_bytes());
        assert_eq!(b.len(), 36);
        assert_eq!(rule_payload(true, "p1", 1, 1)[0], libc::AF_INET6 as u8);
    }

    #[test]
    fn table_starts_unreachable_and_routes_uplinks_with_their_ports() {
        use topo::tenants::leaf::{HostRoute, Uplink};
        let v = LeafVrf {
            leaf: topo::NodeId(4),
            device: "Vrf-a".into(),
            table: 1003,
            ports: vec![(0, topo::NodeId(0))],
            routes: vec![
                HostRoute {
                    dst: topo::NodeId(0),
                    v4: Some("10.0.0.2".parse().unwrap()),
                    v6: None,
                    out: Out::Local(0),
                },
                HostRoute {
                    dst: topo::NodeId(2),
                    v4: Some("10.0.0.10".parse().unwrap()),
                    v6: None,
                    out: Out::Uplinks(vec![
                        Uplink {
                            port: 2,
                            via4: Some("10.64.0.1".parse().unwrap()),
                            via6: None,
                        },
                        Uplink {
                            port: 3,
                            via4: Some("10.64.0.3".parse().unwrap()),
                            via6: None,
                        },
                    ]),
                },
            ],
        };
        let mut index = |n: &str| Ok(n.trim_start_matches('p').parse::<u32>().unwrap() + 10);
        let msgs = table_routes(&v, false, &mut index).unwrap();
        assert_eq!(msgs.len(), 3);
        assert_eq!(msgs[0].header.kind, RouteType::Unreachable);
        assert!(
            msgs.iter()
                .all(|m| m.attributes.contains(&RouteAttribute::Table(1003)))
        );
        assert!(msgs[1].attributes.contains(&RouteAttribute::Oif(10)));
        let Some(RouteAttribute::MultiPath(nhs)) = msgs[2]
            .attributes
            .iter()
            .find(|a| matches!(a, RouteAttribute::MultiPath(_)))
        else {
            panic!("no multipath: {:?}", msgs[2]);
        };
        assert_eq!(
            nhs.iter().map(|n| n.interface_index).collect::<Vec<_>>(),
            [12, 13]
        );
    }
}
