//! The routing-table exporters: walk every switch with
//! [`routes::for_each_route`] and write one format.
//!
//! Hot loops append to a reused line buffer with [`fastfmt`] and per-port text
//! rendered once per switch ([`PortText`]): a leaf of a k=64 fat-tree uses each
//! uplink in 2,047 routes, so formatting it once instead of 2,047 times is most
//! of the export's speed. The line shapes are those of the record writers
//! (`ipbatch::write_route`, `sonic::SonicWriter`), which the golden tests pin.

use std::io::Write;

use super::routes::{self, Hop, LinuxIf, Route, SonicIf};
use super::{ExportError, Routed, Sink, fastfmt, frr, ipbatch, json, sink};
use crate::model::{NodeId, TIER_LEAF};

/// Per-port text of one switch.
struct PortText {
    /// Gateway address toward the port's neighbour (`10.64.0.1`).
    via: Vec<Vec<u8>>,
    /// Linux interface name (`swp3`).
    linux: Vec<Vec<u8>>,
    /// SONiC interface name (`Ethernet8`).
    sonic: Vec<Vec<u8>>,
    /// JSON next-hop object.
    json: Vec<Vec<u8>>,
}

impl PortText {
    fn new(r: &Routed<'_>, s: NodeId) -> Self {
        let f = r.fabric;
        let n = f.degree(s);
        let mut t = PortText {
            via: Vec::with_capacity(n),
            linux: Vec::with_capacity(n),
            sonic: Vec::with_capacity(n),
            json: Vec::with_capacity(n),
        };
        for p in 0..n as u16 {
            let mut via = Vec::new();
            let peer = f.peer(s, p);
            if let Some((_, a)) = routes::peer_addr(f, r.addr, s, p) {
                fastfmt::ipv4(&mut via, a);
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
            j.extend_from_slice(b"\", \"weight\": 1}");
            t.via.push(via);
            t.linux.push(linux);
            t.sonic.push(SonicIf(p).to_string().into_bytes());
            t.json.push(j);
        }
        t
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

/// `ip/<switch>.batch` for every switch (lines as [`ipbatch::write_route`] and
/// [`ipbatch::write_onlink_route`] write them).
pub fn export_ip<S: Sink>(r: &Routed<'_>, sink: &mut S) -> Result<(), ExportError> {
    let f = r.fabric;
    let mut line = Vec::with_capacity(4096);
    for s in f.switches() {
        let path = format!("ip/{}.batch", f.node_name(s));
        let pt = PortText::new(r, s);
        sink::with_file(sink, &path, |w| {
            ipbatch::write_header(w, f.node_name(s), count_routes(r, s)?)?;
            routes::for_each_route(f, r.addr, &r.tables, s, |route, hops| {
                line.clear();
                line.extend_from_slice(b"route replace ");
                fastfmt::v4net(&mut line, route.prefix);
                line.extend_from_slice(b" proto static");
                if route.local {
                    line.extend_from_slice(b" dev ");
                    line.extend_from_slice(&pt.linux[usize::from(hops[0].port)]);
                    line.extend_from_slice(b" scope link");
                } else if let [h] = hops {
                    line.extend_from_slice(b" via ");
                    line.extend_from_slice(&pt.via[usize::from(h.port)]);
                    line.extend_from_slice(b" dev ");
                    line.extend_from_slice(&pt.linux[usize::from(h.port)]);
                } else {
                    for h in hops {
                        line.extend_from_slice(b" nexthop via ");
                        line.extend_from_slice(&pt.via[usize::from(h.port)]);
                        line.extend_from_slice(b" dev ");
                        line.extend_from_slice(&pt.linux[usize::from(h.port)]);
                        line.extend_from_slice(b" weight 1");
                    }
                }
                line.push(b'\n');
                w.write_all(&line)?;
                Ok(())
            })?;
            Ok(())
        })?;
    }
    Ok(())
}

/// First id of next-hop groups in `ip-nhg` files (next hops are `port + 1`).
pub const NHG_GROUP_BASE: u32 = 100_000;

/// `ip-nhg/<switch>.batch`: the same routes as [`export_ip`], but through
/// Linux next-hop objects: `nexthop replace id <port+1> via X dev swpN` for
/// every port a route uses, `nexthop replace id <100000+i> group a/b/…` for
/// every distinct ECMP group, and `route replace P proto static nhid G`.
/// Objects are written just before their first use. With next-hop objects
/// the kernel moves flows off a next hop whose link goes down at once, which
/// legacy multipath routes do not do (NOTES.md, measured on veth).
pub fn export_ip_nhg<S: Sink>(r: &Routed<'_>, sink: &mut S) -> Result<(), ExportError> {
    let f = r.fabric;
    let mut line = Vec::with_capacity(4096);
    let mut groups: std::collections::HashMap<Vec<u16>, u32> = std::collections::HashMap::new();
    let mut ports: Vec<u16> = Vec::new();
    for s in f.switches() {
        let path = format!("ip-nhg/{}.batch", f.node_name(s));
        let pt = PortText::new(r, s);
        let mut defined = vec![false; f.degree(s)];
        groups.clear();
        sink::with_file(sink, &path, |w| {
            writeln!(
                w,
                "# {}: {} routes through next-hop objects (ids: port + 1; groups from {NHG_GROUP_BASE}), generated by fabric",
                f.node_name(s),
                count_routes(r, s)?
            )?;
            routes::for_each_route(f, r.addr, &r.tables, s, |route, hops| {
                line.clear();
                if route.local {
                    line.extend_from_slice(b"route replace ");
                    fastfmt::v4net(&mut line, route.prefix);
                    line.extend_from_slice(b" proto static dev ");
                    line.extend_from_slice(&pt.linux[usize::from(hops[0].port)]);
                    line.extend_from_slice(b" scope link\n");
                    w.write_all(&line)?;
                    return Ok(());
                }
                for h in hops {
                    let p = usize::from(h.port);
                    if !defined[p] {
                        defined[p] = true;
                        line.extend_from_slice(b"nexthop replace id ");
                        fastfmt::dec(&mut line, p as u64 + 1);
                        line.extend_from_slice(b" via ");
                        line.extend_from_slice(&pt.via[p]);
                        line.extend_from_slice(b" dev ");
                        line.extend_from_slice(&pt.linux[p]);
                        line.push(b'\n');
                    }
                }
                let id = if let [h] = hops {
                    u32::from(h.port) + 1
                } else {
                    ports.clear();
                    ports.extend(hops.iter().map(|h| h.port));
                    match groups.get(&ports) {
                        Some(&g) => g,
                        None => {
                            let g = NHG_GROUP_BASE + groups.len() as u32;
                            groups.insert(ports.clone(), g);
                            line.extend_from_slice(b"nexthop replace id ");
                            fastfmt::dec(&mut line, u64::from(g));
                            line.extend_from_slice(b" group ");
                            for (i, h) in hops.iter().enumerate() {
                                if i > 0 {
                                    line.push(b'/');
                                }
                                fastfmt::dec(&mut line, u64::from(h.port) + 1);
                            }
                            line.push(b'\n');
                            g
                        }
                    }
                };
                line.extend_from_slice(b"route replace ");
                fastfmt::v4net(&mut line, route.prefix);
                line.extend_from_slice(b" proto static nhid ");
                fastfmt::dec(&mut line, u64::from(id));
                line.push(b'\n');
                w.write_all(&line)?;
                Ok(())
            })?;
            Ok(())
        })?;
    }
    Ok(())
}

/// `sonic/<switch>.json` for every switch (entries as `sonic::SonicWriter`
/// writes them; all weights are equal, so no `weight` field).
pub fn export_sonic<S: Sink>(r: &Routed<'_>, sink: &mut S) -> Result<(), ExportError> {
    let f = r.fabric;
    let mut line = Vec::with_capacity(4096);
    for s in f.switches() {
        let path = format!("sonic/{}.json", f.node_name(s));
        let pt = PortText::new(r, s);
        sink::with_file(sink, &path, |w| {
            let mut first = true;
            w.write_all(b"[")?;
            routes::for_each_route(f, r.addr, &r.tables, s, |route, hops| {
                line.clear();
                line.extend_from_slice(if first { b"\n" } else { b",\n" });
                first = false;
                line.extend_from_slice(b"  {\n    \"ROUTE_TABLE:");
                fastfmt::v4net(&mut line, route.prefix);
                line.extend_from_slice(b"\": {\n      \"nexthop\": \"");
                for (i, h) in hops.iter().enumerate() {
                    if i > 0 {
                        line.push(b',');
                    }
                    // A directly attached host is its own next hop.
                    line.extend_from_slice(&pt.via[usize::from(h.port)]);
                }
                line.extend_from_slice(b"\",\n      \"ifname\": \"");
                for (i, h) in hops.iter().enumerate() {
                    if i > 0 {
                        line.push(b',');
                    }
                    line.extend_from_slice(&pt.sonic[usize::from(h.port)]);
                }
                line.extend_from_slice(b"\"\n    },\n    \"OP\": \"SET\"\n  }");
                w.write_all(&line)?;
                Ok(())
            })?;
            w.write_all(if first { b"]\n" } else { b"\n]\n" })?;
            Ok(())
        })?;
    }
    Ok(())
}

fn router(r: &Routed<'_>, s: NodeId) -> frr::Router {
    let f = r.fabric;
    let mut interfaces = Vec::new();
    for p in 0..f.degree(s) as u16 {
        let peer = f.peer(s, p);
        let (address, description) = if f.is_host(peer) {
            // Host-facing ports carry the ToR gateway address (one per port, /32).
            match r.addr.gateway_v4(s) {
                Some(gw) => (format!("{gw}/32"), format!("to {}", f.node_name(peer))),
                None => continue,
            }
        } else {
            match routes::own_addr(f, r.addr, s, p) {
                Some((net, a)) => (
                    format!("{a}/{}", net.len),
                    format!("to {}", f.node_name(peer)),
                ),
                None => continue,
            }
        };
        interfaces.push(frr::Interface {
            name: LinuxIf(p).to_string(),
            address,
            description,
        });
    }
    frr::Router {
        hostname: f.node_name(s).to_owned(),
        loopback: r.addr.loopback_v4(s).map(|a| format!("{a}/32")),
        interfaces,
    }
}

/// `frr/bgp/<switch>.conf`: RFC 7938 eBGP with the plan's ASNs.
pub fn export_frr_bgp<S: Sink>(r: &Routed<'_>, sink: &mut S) -> Result<(), ExportError> {
    let f = r.fabric;
    for s in f.switches() {
        let asn = r
            .addr
            .asn(f, s)
            .ok_or_else(|| ExportError::Addressing(format!("{}: no ASN", f.node_name(s))))?;
        let mut neighbors = Vec::new();
        for p in 0..f.degree(s) as u16 {
            let peer = f.peer(s, p);
            if f.is_host(peer) {
                continue;
            }
            let Some((_, a)) = routes::peer_addr(f, r.addr, s, p) else {
                continue;
            };
            let remote_as = r
                .addr
                .asn(f, peer)
                .ok_or_else(|| ExportError::Addressing(format!("{}: no ASN", f.node_name(peer))))?;
            neighbors.push(frr::Neighbor {
                address: a.to_string(),
                remote_as,
                description: f.node_name(peer).to_owned(),
            });
        }
        let networks: Vec<String> = if f.tier(s) == TIER_LEAF {
            r.addr
                .tor_prefix_v4(s)
                .map(|p| p.to_string())
                .into_iter()
                .collect()
        } else {
            Vec::new()
        };
        let host_routes: Vec<(String, String)> = (0..f.degree(s) as u16)
            .filter(|&p| f.is_host(f.peer(s, p)))
            .filter_map(|p| {
                let ip = r.addr.host_v4(f, f.peer(s, p), f.plane(s)?)?;
                Some((format!("{ip}/32"), LinuxIf(p).to_string()))
            })
            .collect();
        // RFC 7938 §6.1: ECMP over all up ports (the widest group a switch can have).
        let up = (0..f.degree(s) as u16)
            .filter(|&p| f.tier(f.peer(s, p)) > f.tier(s))
            .count();
        let path = format!("frr/bgp/{}.conf", f.node_name(s));
        let rt = router(r, s);
        sink::with_file(sink, &path, |w| {
            Ok(frr::write_bgp(
                w,
                &rt,
                asn,
                &neighbors,
                &networks,
                &host_routes,
                up.max(1),
            )?)
        })?;
    }
    Ok(())
}

/// `frr/static/<switch>.conf`: the computed table as static routes, one
/// `ip route PREFIX GATEWAY IFNAME` line per ECMP member (`ip route PREFIX
/// IFNAME` toward a directly attached host).
pub fn export_frr_static<S: Sink>(r: &Routed<'_>, sink: &mut S) -> Result<(), ExportError> {
    let f = r.fabric;
    let mut line = Vec::with_capacity(4096);
    for s in f.switches() {
        let path = format!("frr/static/{}.conf", f.node_name(s));
        let rt = router(r, s);
        let pt = PortText::new(r, s);
        sink::with_file(sink, &path, |w| {
            frr::write_preamble(w, &rt, "static routes")?;
            routes::for_each_route(f, r.addr, &r.tables, s, |route, hops| {
                line.clear();
                for h in hops {
                    line.extend_from_slice(b"ip route ");
                    fastfmt::v4net(&mut line, route.prefix);
                    if !route.local {
                        line.push(b' ');
                        line.extend_from_slice(&pt.via[usize::from(h.port)]);
                    }
                    line.push(b' ');
                    line.extend_from_slice(&pt.linux[usize::from(h.port)]);
                    line.push(b'\n');
                }
                w.write_all(&line)?;
                Ok(())
            })?;
            writeln!(w, "!\nend")?;
            Ok(())
        })?;
    }
    Ok(())
}

/// `routes.json`: the documented schema `fabric-routes/v1`.
pub fn export_json<S: Sink>(r: &Routed<'_>, sink: &mut S) -> Result<(), ExportError> {
    let f = r.fabric;
    sink::with_file(sink, "routes.json", |w| {
        w.write_all(b"{\n  \"schema\": \"fabric-routes/v1\",\n  \"fabric\": ")?;
        json::write_str(w, f.name())?;
        write!(
            w,
            ",\n  \"engine\": \"{}\",\n  \"planes\": {},\n  \"hosts\": {},\n  \"switches\": [",
            r.tables.engine(),
            f.num_planes(),
            f.num_hosts()
        )?;
        let mut line = Vec::with_capacity(4096);
        for (i, s) in f.switches().enumerate() {
            w.write_all(if i == 0 { b"\n" } else { b",\n" })?;
            write_json_switch(w, r, s, &mut line)?;
        }
        w.write_all(b"\n  ]\n}\n")?;
        Ok(())
    })
}

fn write_json_switch<W: Write>(
    w: &mut W,
    r: &Routed<'_>,
    s: NodeId,
    line: &mut Vec<u8>,
) -> Result<(), ExportError> {
    let f = r.fabric;
    let opt = |v: Option<String>| v.unwrap_or_else(|| "null".to_owned());
    w.write_all(b"    {\"name\": ")?;
    json::write_str(w, f.node_name(s))?;
    write!(
        w,
        ", \"id\": {}, \"plane\": {}, \"tier\": {}, \"pod\": {}, \"asn\": {}, \"loopback\": {}, \"lid\": {},\n     \"routes\": [",
        s.0,
        f.plane(s).unwrap_or(0),
        f.tier(s),
        opt(f.pod(s).map(|p| p.to_string())),
        opt(r.addr.asn(f, s).map(|a| a.to_string())),
        opt(r.addr.loopback_v4(s).map(|a| format!("\"{a}\""))),
        opt(r.addr.switch_lid(f, s).map(|l| l.to_string())),
    )?;
    let pt = PortText::new(r, s);
    let mut first = true;
    // Destination names are JSON-escaped once per destination, not per switch.
    routes::for_each_route(f, r.addr, &r.tables, s, |route: &Route, hops: &[Hop]| {
        line.clear();
        line.extend_from_slice(if first { b"\n" } else { b",\n" });
        first = false;
        line.extend_from_slice(b"      {\"prefix\": \"");
        fastfmt::v4net(line, route.prefix);
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
        }
        line.extend_from_slice(b"]}");
        w.write_all(line)?;
        Ok(())
    })?;
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
