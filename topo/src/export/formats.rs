//! The routing-table exporters: walk every switch with
//! [`routes::for_each_weighted_route`] and write one format.
//!
//! Hot loops append to a reused line buffer with [`fastfmt`] and per-port text
//! rendered once per switch ([`PortText`]): a leaf of a k=64 fat-tree uses each
//! uplink in 2,047 routes, so formatting it once instead of 2,047 times is most
//! of the export's speed. The line shapes are those of the record writers
//! (`ipbatch::write_route`, `sonic::SonicWriter`), which the golden tests pin.
//!
//! Every IP format is dual stack: a switch's IPv4 routes, then the same routes
//! in IPv6 (buffered per switch while the IPv4 lines stream out). ECMP tables
//! carry the capacity weights of [`crate::wcmp`] where failures made next hops
//! unequal.

use std::io::Write;

use super::routes::{self, Hop, LinuxIf, Route, SonicIf};
use super::{ExportError, Routed, Sink, Tables, fastfmt, frr, ipbatch, json, sink};
use crate::model::{NodeId, TIER_LEAF};
use crate::wcmp::Weights;

/// An address family of the IP exports.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
enum Fam {
    V4,
    V6,
}

/// Appends a route's prefix in `fam`.
fn prefix(buf: &mut Vec<u8>, route: &Route, fam: Fam) {
    match fam {
        Fam::V4 => fastfmt::v4net(buf, route.prefix),
        Fam::V6 => fastfmt::v6net(buf, route.prefix6),
    }
}

/// Per-port text of one switch.
struct PortText {
    /// Gateway address toward the port's neighbour (`10.64.0.1`).
    via: Vec<Vec<u8>>,
    /// The same in IPv6 (`fd00:fffe::1`).
    via6: Vec<Vec<u8>>,
    /// Linux interface name (`swp3`).
    linux: Vec<Vec<u8>>,
    /// SONiC interface name (`Ethernet8`).
    sonic: Vec<Vec<u8>>,
    /// JSON next-hop object up to (not including) its weight.
    json: Vec<Vec<u8>>,
}

impl PortText {
    fn new(r: &Routed<'_>, s: NodeId) -> Self {
        let f = r.fabric;
        let n = f.degree(s);
        let mut t = PortText {
            via: Vec::with_capacity(n),
            via6: Vec::with_capacity(n),
            linux: Vec::with_capacity(n),
            sonic: Vec::with_capacity(n),
            json: Vec::with_capacity(n),
        };
        for p in 0..n as u16 {
            let mut via = Vec::new();
            let mut via6 = Vec::new();
            let peer = f.peer(s, p);
            if let Some((_, a)) = routes::peer_addr(f, r.addr, s, p) {
                fastfmt::ipv4(&mut via, a);
            }
            if let Some((_, a)) = routes::peer_addr6(f, r.addr, s, p) {
                fastfmt::ipv6(&mut via6, a);
            }
            let linux = LinuxIf(p).to_string().into_bytes();
            let mut j = format!(
                "{{\"port\": {p}, \"ifname\": \"{}\", \"neighbor\": ",
                LinuxIf(p)
            )
            .into_bytes();
            let _ = json::write_str(&mut j, f.node_name(peer));
            j.extend_from_slice(b", \"via\": \"");
            j.extend_from_slice(&via);
            j.extend_from_slice(b"\", \"via6\": \"");
            j.extend_from_slice(&via6);
            j.extend_from_slice(b"\", \"weight\": ");
            t.via.push(via);
            t.via6.push(via6);
            t.linux.push(linux);
            t.sonic.push(SonicIf(p).to_string().into_bytes());
            t.json.push(j);
        }
        t
    }

    fn via(&self, fam: Fam, h: &Hop) -> &[u8] {
        match fam {
            Fam::V4 => &self.via[usize::from(h.port)],
            Fam::V6 => &self.via6[usize::from(h.port)],
        }
    }
}

/// The capacity weights of ECMP tables with unequal next hops (`None`: all equal,
/// or single-path tables).
pub fn weights(r: &Routed<'_>) -> Option<Weights> {
    match r.tables {
        Tables::Ecmp(routes) => {
            let w = Weights::compute(r.fabric, routes);
            (!w.is_empty()).then_some(w)
        }
        Tables::SinglePath(..) => None,
    }
}

fn count_routes(r: &Routed<'_>, s: NodeId) -> Result<usize, ExportError> {
    let mut n = 0;
    routes::for_each_route(r.fabric, r.addr, &r.tables, s, |_, _| {
        n += 1;
        Ok(())
    })?;
    Ok(n)
}

/// Walks switch `s`'s routes once and lets `emit` write each in both families:
/// the IPv4 text into a line that goes to `w` at once, the IPv6 text into `tail`,
/// which goes to `w` after the last route (so a file holds the IPv4 routes, then
/// IPv6, without walking the tables twice).
fn dual_stack<W: Write>(
    r: &Routed<'_>,
    wt: Option<&Weights>,
    s: NodeId,
    w: &mut W,
    (line, tail): (&mut Vec<u8>, &mut Vec<u8>),
    mut emit: impl FnMut(&Route, &[Hop], Fam, &mut Vec<u8>) -> Result<(), ExportError>,
) -> Result<(), ExportError> {
    tail.clear();
    routes::for_each_weighted_route(r.fabric, r.addr, &r.tables, wt, s, |route, hops| {
        line.clear();
        emit(route, hops, Fam::V4, line)?;
        emit(route, hops, Fam::V6, tail)?;
        w.write_all(line)?;
        Ok(())
    })?;
    w.write_all(tail)?;
    Ok(())
}

/// `ip/<switch>.batch` for every switch (lines as [`ipbatch::write_route`] and
/// [`ipbatch::write_onlink_route`] write them): the IPv4 routes, then IPv6.
pub fn export_ip<S: Sink>(
    r: &Routed<'_>,
    wt: Option<&Weights>,
    sink: &mut S,
) -> Result<(), ExportError> {
    let f = r.fabric;
    let (mut line, mut tail) = (Vec::with_capacity(4096), Vec::with_capacity(4096));
    for s in f.switches() {
        let path = format!("ip/{}.batch", f.node_name(s));
        let pt = PortText::new(r, s);
        sink::with_file(sink, &path, |w| {
            let n = count_routes(r, s)?;
            ipbatch::write_header(w, f.node_name(s), n, n)?;
            let bufs = (&mut line, &mut tail);
            dual_stack(r, wt, s, w, bufs, |route, hops, fam, out| {
                out.extend_from_slice(b"route replace ");
                prefix(out, route, fam);
                out.extend_from_slice(b" proto static");
                if route.local {
                    out.extend_from_slice(b" dev ");
                    out.extend_from_slice(&pt.linux[usize::from(hops[0].port)]);
                    out.extend_from_slice(b" scope link");
                } else if let [h] = hops {
                    out.extend_from_slice(b" via ");
                    out.extend_from_slice(pt.via(fam, h));
                    out.extend_from_slice(b" dev ");
                    out.extend_from_slice(&pt.linux[usize::from(h.port)]);
                } else {
                    for h in hops {
                        out.extend_from_slice(b" nexthop via ");
                        out.extend_from_slice(pt.via(fam, h));
                        out.extend_from_slice(b" dev ");
                        out.extend_from_slice(&pt.linux[usize::from(h.port)]);
                        out.extend_from_slice(b" weight ");
                        fastfmt::dec(out, u64::from(h.weight));
                    }
                }
                out.push(b'\n');
                Ok(())
            })
        })?;
    }
    Ok(())
}

/// First id of IPv4 next-hop groups in `ip-nhg` files (IPv4 next hops are `port + 1`).
pub const NHG_GROUP_BASE: u32 = 100_000;
/// IPv6 next-hop objects are `NHG_V6_BASE + port + 1`.
pub const NHG_V6_BASE: u32 = 50_000;
/// First id of IPv6 next-hop groups.
pub const NHG_GROUP_BASE6: u32 = 1_000_000;

/// `ip-nhg/<switch>.batch`: the same routes as [`export_ip`], but through
/// Linux next-hop objects: `nexthop replace id <port+1> via X dev swpN` for
/// every port a route uses (IPv6: `id 50000+port+1`), `nexthop replace id
/// <100000+i> group a/b/…` for every distinct ECMP group (`a,w/b,w` when
/// weighted; IPv6 groups from 1000000), and `route replace P proto static nhid
/// G`. Objects are written just before their first use. With next-hop objects
/// the kernel moves flows off a next hop whose link goes down at once, which
/// legacy multipath routes do not do (NOTES.md, measured on veth).
pub fn export_ip_nhg<S: Sink>(
    r: &Routed<'_>,
    wt: Option<&Weights>,
    sink: &mut S,
) -> Result<(), ExportError> {
    let f = r.fabric;
    let (mut line, mut tail) = (Vec::with_capacity(4096), Vec::with_capacity(4096));
    type Key = (Fam, Vec<(u16, u32)>);
    let mut groups: std::collections::HashMap<Key, u32> = std::collections::HashMap::new();
    for s in f.switches() {
        let path = format!("ip-nhg/{}.batch", f.node_name(s));
        let pt = PortText::new(r, s);
        let mut defined = [vec![false; f.degree(s)], vec![false; f.degree(s)]];
        groups.clear();
        let mut n_groups = [0u32; 2];
        sink::with_file(sink, &path, |w| {
            writeln!(
                w,
                "# {}: {n} IPv4 + {n} IPv6 routes through next-hop objects (ids: port + 1, \
                 IPv6 {NHG_V6_BASE} + port + 1; groups from {NHG_GROUP_BASE}, IPv6 from \
                 {NHG_GROUP_BASE6}), generated by fabric",
                f.node_name(s),
                n = count_routes(r, s)?
            )?;
            let bufs = (&mut line, &mut tail);
            dual_stack(r, wt, s, w, bufs, |route, hops, fam, out| {
                if route.local {
                    out.extend_from_slice(b"route replace ");
                    prefix(out, route, fam);
                    out.extend_from_slice(b" proto static dev ");
                    out.extend_from_slice(&pt.linux[usize::from(hops[0].port)]);
                    out.extend_from_slice(b" scope link\n");
                    return Ok(());
                }
                let (fi, base) = match fam {
                    Fam::V4 => (0, 1),
                    Fam::V6 => (1, NHG_V6_BASE + 1),
                };
                for h in hops {
                    let p = usize::from(h.port);
                    if !defined[fi][p] {
                        defined[fi][p] = true;
                        out.extend_from_slice(b"nexthop replace id ");
                        fastfmt::dec(out, u64::from(base) + p as u64);
                        out.extend_from_slice(b" via ");
                        out.extend_from_slice(pt.via(fam, h));
                        out.extend_from_slice(b" dev ");
                        out.extend_from_slice(&pt.linux[p]);
                        out.push(b'\n');
                    }
                }
                let id = if let [h] = hops {
                    base + u32::from(h.port)
                } else {
                    let key = (fam, hops.iter().map(|h| (h.port, h.weight)).collect());
                    match groups.get(&key) {
                        Some(&g) => g,
                        None => {
                            let (first, limit) = match fam {
                                Fam::V4 => (NHG_GROUP_BASE, NHG_GROUP_BASE6),
                                Fam::V6 => (NHG_GROUP_BASE6, u32::MAX),
                            };
                            let g = first.saturating_add(n_groups[fi]);
                            if g >= limit {
                                return Err(ExportError::Addressing(format!(
                                    "{}: more than {} distinct next-hop groups",
                                    f.node_name(s),
                                    limit - first
                                )));
                            }
                            n_groups[fi] += 1;
                            groups.insert(key, g);
                            out.extend_from_slice(b"nexthop replace id ");
                            fastfmt::dec(out, u64::from(g));
                            out.extend_from_slice(b" group ");
                            for (i, h) in hops.iter().enumerate() {
                                if i > 0 {
                                    out.push(b'/');
                                }
                                fastfmt::dec(out, u64::from(base + u32::from(h.port)));
                                if h.weight != 1 {
                                    out.push(b',');
                                    fastfmt::dec(out, u64::from(h.weight));
                                }
                            }
                            out.push(b'\n');
                            g
                        }
                    }
                };
                out.extend_from_slice(b"route replace ");
                prefix(out, route, fam);
                out.extend_from_slice(b" proto static nhid ");
                fastfmt::dec(out, u64::from(id));
                out.push(b'\n');
                Ok(())
            })
        })?;
    }
    Ok(())
}

/// `sonic/<switch>.json` for every switch (entries as `sonic::SonicWriter`
/// writes them: a `weight` list only where the next hops are unequal), IPv4
/// entries then IPv6.
pub fn export_sonic<S: Sink>(
    r: &Routed<'_>,
    wt: Option<&Weights>,
    sink: &mut S,
) -> Result<(), ExportError> {
    let f = r.fabric;
    let (mut line, mut tail) = (Vec::with_capacity(4096), Vec::with_capacity(4096));
    for s in f.switches() {
        let path = format!("sonic/{}.json", f.node_name(s));
        let pt = PortText::new(r, s);
        sink::with_file(sink, &path, |w| {
            let mut first = true;
            w.write_all(b"[")?;
            let bufs = (&mut line, &mut tail);
            dual_stack(r, wt, s, w, bufs, |route, hops, fam, out| {
                out.extend_from_slice(if first { b"\n" } else { b",\n" });
                first = false;
                out.extend_from_slice(b"  {\n    \"ROUTE_TABLE:");
                prefix(out, route, fam);
                out.extend_from_slice(b"\": {\n      \"nexthop\": \"");
                for (i, h) in hops.iter().enumerate() {
                    if i > 0 {
                        out.push(b',');
                    }
                    // A directly attached host is its own next hop.
                    out.extend_from_slice(pt.via(fam, h));
                }
                out.extend_from_slice(b"\",\n      \"ifname\": \"");
                for (i, h) in hops.iter().enumerate() {
                    if i > 0 {
                        out.push(b',');
                    }
                    out.extend_from_slice(&pt.sonic[usize::from(h.port)]);
                }
                out.push(b'"');
                if hops.windows(2).any(|p| p[0].weight != p[1].weight) {
                    out.extend_from_slice(b",\n      \"weight\": \"");
                    for (i, h) in hops.iter().enumerate() {
                        if i > 0 {
                            out.push(b',');
                        }
                        fastfmt::dec(out, u64::from(h.weight));
                    }
                    out.push(b'"');
                }
                out.extend_from_slice(b"\n    },\n    \"OP\": \"SET\"\n  }");
                Ok(())
            })?;
            w.write_all(if first { b"]\n" } else { b"\n]\n" })?;
            Ok(())
        })?;
    }
    Ok(())
}

pub(super) fn router(r: &Routed<'_>, s: NodeId) -> frr::Router {
    let f = r.fabric;
    let mut interfaces = Vec::new();
    for p in 0..f.degree(s) as u16 {
        let peer = f.peer(s, p);
        let description = format!("to {}", f.node_name(peer));
        let (address, address6) = if f.is_host(peer) {
            // Host-facing ports carry the ToR gateway address (one per port, /32, /128).
            match r.addr.gateway_v4(s) {
                Some(gw) => (
                    format!("{gw}/32"),
                    r.addr.gateway_v6(s).map(|a| format!("{a}/128")),
                ),
                None => continue,
            }
        } else {
            match routes::own_addr(f, r.addr, s, p) {
                Some((net, a)) => (
                    format!("{a}/{}", net.len),
                    routes::own_addr6(f, r.addr, s, p).map(|(n, a)| format!("{a}/{}", n.len)),
                ),
                None => continue,
            }
        };
        interfaces.push(frr::Interface {
            name: LinuxIf(p).to_string(),
            address,
            address6,
            description,
            vrf: None,
        });
    }
    frr::Router {
        hostname: f.node_name(s).to_owned(),
        loopback: r.addr.loopback_v4(s).map(|a| format!("{a}/32")),
        loopback6: r.addr.loopback_v6(s).map(|a| format!("{a}/128")),
        interfaces,
    }
}

/// `frr/bgp/<switch>.conf`: RFC 7938 eBGP with the plan's ASNs, dual stack.
pub fn export_frr_bgp<S: Sink>(r: &Routed<'_>, sink: &mut S) -> Result<(), ExportError> {
    let f = r.fabric;
    for s in f.switches() {
        let b = bgp_of(r, s)?;
        let path = format!("frr/bgp/{}.conf", f.node_name(s));
        let rt = router(r, s);
        sink::with_file(sink, &path, |w| Ok(frr::write_bgp(w, &rt, &b)?))?;
    }
    Ok(())
}

/// Switch `s`'s eBGP sessions, originated prefixes, host routes and `maximum-paths`.
pub(super) fn bgp_of(r: &Routed<'_>, s: NodeId) -> Result<frr::Bgp, ExportError> {
    let f = r.fabric;
    let no_asn = |n: NodeId| ExportError::Addressing(format!("{}: no ASN", f.node_name(n)));
    let mut b = frr::Bgp {
        asn: r.addr.asn(f, s).ok_or_else(|| no_asn(s))?,
        ..Default::default()
    };
    for p in 0..f.degree(s) as u16 {
        let peer = f.peer(s, p);
        if f.is_host(peer) {
            continue;
        }
        let remote_as = r.addr.asn(f, peer).ok_or_else(|| no_asn(peer))?;
        let description = f.node_name(peer).to_owned();
        if let Some((_, a)) = routes::peer_addr(f, r.addr, s, p) {
            b.neighbors.push(frr::Neighbor {
                address: a.to_string(),
                remote_as,
                description: description.clone(),
            });
        }
        if let Some((_, a)) = routes::peer_addr6(f, r.addr, s, p) {
            b.neighbors6.push(frr::Neighbor {
                address: a.to_string(),
                remote_as,
                description,
            });
        }
    }
    if f.tier(s) == TIER_LEAF {
        b.networks
            .extend(r.addr.tor_prefix_v4(s).map(|p| p.to_string()));
        b.networks6
            .extend(r.addr.tor_prefix_v6(s).map(|p| p.to_string()));
    }
    let plane = f.plane(s);
    for p in (0..f.degree(s) as u16).filter(|&p| f.is_host(f.peer(s, p))) {
        let h = f.peer(s, p);
        let ifname = LinuxIf(p).to_string();
        if let Some(ip) = plane.and_then(|pl| r.addr.host_v4(f, h, pl)) {
            b.host_routes.push((format!("{ip}/32"), ifname.clone()));
        }
        if let Some(ip) = plane.and_then(|pl| r.addr.host_v6(f, h, pl)) {
            b.host_routes6.push((format!("{ip}/128"), ifname));
        }
    }
    // RFC 7938 §6.1: ECMP over all up ports (the widest group a switch can have).
    b.maximum_paths = (0..f.degree(s) as u16)
        .filter(|&p| f.tier(f.peer(s, p)) > f.tier(s))
        .count()
        .max(1);
    Ok(b)
}

/// `frr/static/<switch>.conf`: the computed table as static routes, one
/// `ip route PREFIX GATEWAY IFNAME` line per ECMP member (`ip route PREFIX
/// IFNAME` toward a directly attached host), then the same as `ipv6 route`.
/// FRR static routes have no weights: a file whose table is weighted says so in
/// a comment and points to the formats that carry them.
pub fn export_frr_static<S: Sink>(
    r: &Routed<'_>,
    wt: Option<&Weights>,
    sink: &mut S,
) -> Result<(), ExportError> {
    let f = r.fabric;
    let (mut line, mut tail) = (Vec::with_capacity(4096), Vec::with_capacity(4096));
    for s in f.switches() {
        let path = format!("frr/static/{}.conf", f.node_name(s));
        let rt = router(r, s);
        let pt = PortText::new(r, s);
        sink::with_file(sink, &path, |w| {
            frr::write_preamble(w, &rt, "static routes")?;
            let mut weighted = 0usize;
            let bufs = (&mut line, &mut tail);
            dual_stack(r, wt, s, w, bufs, |route, hops, fam, out| {
                let cmd: &[u8] = match fam {
                    Fam::V4 => {
                        weighted +=
                            usize::from(hops.windows(2).any(|p| p[0].weight != p[1].weight));
                        b"ip route "
                    }
                    Fam::V6 => b"ipv6 route ",
                };
                for h in hops {
                    out.extend_from_slice(cmd);
                    prefix(out, route, fam);
                    if !route.local {
                        out.push(b' ');
                        out.extend_from_slice(pt.via(fam, h));
                    }
                    out.push(b' ');
                    out.extend_from_slice(&pt.linux[usize::from(h.port)]);
                    out.push(b'\n');
                }
                Ok(())
            })?;
            if weighted > 0 {
                writeln!(
                    w,
                    "! {weighted} route(s) have unequal next-hop weights, which FRR static \
                     routes cannot carry (equal split here); see ip/, ip-nhg/, sonic/ or frr/bgp/"
                )?;
            }
            writeln!(w, "!\nend")?;
            Ok(())
        })?;
    }
    Ok(())
}

/// `routes.json`: the documented schema `fabric-routes/v1`.
pub fn export_json<S: Sink>(
    r: &Routed<'_>,
    wt: Option<&Weights>,
    sink: &mut S,
) -> Result<(), ExportError> {
    let f = r.fabric;
    sink::with_file(sink, "routes.json", |w| {
        w.write_all(b"{\n  \"schema\": \"fabric-routes/v1\",\n  \"fabric\": ")?;
        json::write_str(w, f.name())?;
        write!(
            w,
            ",\n  \"engine\": \"{}\",\n  \"planes\": {},\n  \"hosts\": {},\n",
            r.tables.engine(),
            f.num_planes(),
            f.num_hosts()
        )?;
        write_json_state(w, r)?;
        w.write_all(b",\n  \"switches\": [")?;
        let mut line = Vec::with_capacity(4096);
        for (i, s) in f.switches().enumerate() {
            w.write_all(if i == 0 { b"\n" } else { b",\n" })?;
            write_json_switch(w, r, wt, s, &mut line)?;
        }
        w.write_all(b"\n  ]\n}\n")?;
        Ok(())
    })
}

/// The state the tables were made for: `failed_links` (names as `--fail` takes them),
/// `failed_switches` (every link down) and `lanes` (pairs routed on a lane ≥ 1).
fn write_json_state<W: Write>(w: &mut W, r: &Routed<'_>) -> Result<(), ExportError> {
    let f = r.fabric;
    let routes = r.tables.routes();
    w.write_all(b"  \"failed_links\": [")?;
    for (i, l) in routes.failed_links().enumerate() {
        w.write_all(if i == 0 { b"" } else { b", " })?;
        json::write_str(w, &crate::failures::link_name(f, l))?;
    }
    w.write_all(b"],\n  \"failed_switches\": [")?;
    let dead = f
        .switches()
        .filter(|&s| f.degree(s) > 0 && f.ports(s).all(|(_, l)| !routes.link_is_up(l)));
    for (i, s) in dead.enumerate() {
        w.write_all(if i == 0 { b"" } else { b", " })?;
        json::write_str(w, f.node_name(s))?;
    }
    let none = crate::lanes::Lanes::none();
    let lanes = r.lanes.unwrap_or(&none);
    write!(
        w,
        "],\n  \"lanes\": {{\"used\": {}, \"pairs\": [",
        lanes.used
    )?;
    for (i, &(src, dst, lane)) in lanes.pairs().iter().enumerate() {
        w.write_all(if i == 0 { b"\n    " } else { b",\n    " })?;
        write!(
            w,
            "{{\"plane\": {}, \"src_leaf\": ",
            f.plane(src).unwrap_or(0)
        )?;
        json::write_str(w, f.node_name(src))?;
        w.write_all(b", \"dst_leaf\": ")?;
        json::write_str(w, f.node_name(dst))?;
        write!(w, ", \"lane\": {lane}}}")?;
    }
    w.write_all(if lanes.pairs().is_empty() {
        b"]}"
    } else {
        b"\n  ]}"
    })?;
    Ok(())
}

fn write_json_switch<W: Write>(
    w: &mut W,
    r: &Routed<'_>,
    wt: Option<&Weights>,
    s: NodeId,
    line: &mut Vec<u8>,
) -> Result<(), ExportError> {
    let f = r.fabric;
    let opt = |v: Option<String>| v.unwrap_or_else(|| "null".to_owned());
    w.write_all(b"    {\"name\": ")?;
    json::write_str(w, f.node_name(s))?;
    write!(
        w,
        ", \"id\": {}, \"plane\": {}, \"tier\": {}, \"pod\": {}, \"asn\": {}, \"loopback\": {}, \"loopback6\": {}, \"lid\": {},\n     \"routes\": [",
        s.0,
        f.plane(s).unwrap_or(0),
        f.tier(s),
        opt(f.pod(s).map(|p| p.to_string())),
        opt(r.addr.asn(f, s).map(|a| a.to_string())),
        opt(r.addr.loopback_v4(s).map(|a| format!("\"{a}\""))),
        opt(r.addr.loopback_v6(s).map(|a| format!("\"{a}\""))),
        opt(r.addr.switch_lid(f, s).map(|l| l.to_string())),
    )?;
    let pt = PortText::new(r, s);
    let mut first = true;
    // Destination names are JSON-escaped once per destination, not per switch.
    routes::for_each_weighted_route(
        f,
        r.addr,
        &r.tables,
        wt,
        s,
        |route: &Route, hops: &[Hop]| {
            line.clear();
            line.extend_from_slice(if first { b"\n" } else { b",\n" });
            first = false;
            line.extend_from_slice(b"      {\"prefix\": \"");
            fastfmt::v4net(line, route.prefix);
            line.extend_from_slice(b"\", \"prefix6\": \"");
            fastfmt::v6net(line, route.prefix6);
            line.extend_from_slice(b"\", \"dst\": ");
            let _ = json::write_str(line, f.node_name(route.dst));
            line.extend_from_slice(if route.local {
                b", \"local\": true, \"nexthops\": ["
            } else {
                b", \"local\": false, \"nexthops\": ["
            });
            for (i, h) in hops.iter().enumerate() {
                if i > 0 {
                    line.extend_from_slice(b", ");
                }
                line.extend_from_slice(&pt.json[usize::from(h.port)]);
                fastfmt::dec(line, u64::from(h.weight));
                line.push(b'}');
            }
            line.extend_from_slice(b"]}");
            w.write_all(line)?;
            Ok(())
        },
    )?;
    w.write_all(if first { b"]}" } else { b"\n     ]}" })?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::addressing::AddressPlan;
    use crate::export::{MemSink, Tables, export, ipbatch::NextHop, sonic::SonicWriter};
    use crate::{Rate, Routes, generators};

    /// The fast paths write exactly what the record writers write.
    #[test]
    fn fast_paths_match_the_record_writers() {
        let f = generators::fat_tree(4, Rate::gbps(400)).unwrap();
        let r = Routes::compute(&f);
        let a = AddressPlan::new(&f).unwrap();
        let routed = Routed {
            fabric: &f,
            addr: &a,
            tables: Tables::Ecmp(&r),
            lanes: None,
        };
        let mut sink = MemSink::new();
        export(&routed, crate::export::Format::IpBatch, &mut sink).unwrap();
        export(&routed, crate::export::Format::Sonic, &mut sink).unwrap();
        let mut lines = 0;
        for s in f.switches() {
            let ip = sink.text(&format!("ip/{}.batch", f.node_name(s))).unwrap();
            for (i, line) in ip.lines().enumerate() {
                let Some(p) = ipbatch::parse_line(i + 1, line).unwrap() else {
                    continue;
                };
                if let Some(dev) = &p.onlink {
                    let mut again = Vec::new();
                    ipbatch::write_onlink_route(&mut again, &p.prefix, dev).unwrap();
                    assert_eq!(String::from_utf8(again).unwrap(), format!("{line}\n"));
                    lines += 1;
                    continue;
                }
                let hops: Vec<NextHop<&str, &str>> = p
                    .nexthops
                    .iter()
                    .map(|(v, d, w)| NextHop {
                        via: v.as_str(),
                        dev: d.as_str(),
                        weight: *w,
                    })
                    .collect();
                let mut again = Vec::new();
                ipbatch::write_route(&mut again, &p.prefix, &hops).unwrap();
                assert_eq!(String::from_utf8(again).unwrap(), format!("{line}\n"));
                lines += 1;
            }
            let text = sink
                .text(&format!("sonic/{}.json", f.node_name(s)))
                .unwrap();
            let v: serde_json::Value = serde_json::from_str(text).unwrap();
            let mut again = Vec::new();
            let mut sw = SonicWriter::start(&mut again).unwrap();
            for e in v.as_array().unwrap() {
                let (key, fields) = e
                    .as_object()
                    .unwrap()
                    .iter()
                    .find(|(k, _)| k.starts_with("ROUTE_TABLE:"))
                    .unwrap();
                let nh: Vec<&str> = fields["nexthop"].as_str().unwrap().split(',').collect();
                let ifs: Vec<&str> = fields["ifname"].as_str().unwrap().split(',').collect();
                let hops: Vec<(&str, &str, u32)> =
                    nh.iter().zip(&ifs).map(|(a, b)| (*a, *b, 1)).collect();
                sw.route(&mut again, &key["ROUTE_TABLE:".len()..], &hops)
                    .unwrap();
            }
            sw.finish(&mut again).unwrap();
            assert_eq!(String::from_utf8(again).unwrap(), text);
        }
        assert!(lines > 100);
    }
}
