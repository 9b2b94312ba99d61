//! The routing-table exporters: walk every switch with
//! [`routes::for_each_route`] and write one format through the record writers.

use std::io::Write;

use super::routes::{self, Hop, LinuxIf, Route, SonicIf};
use super::{ExportError, Routed, Sink, frr, ipbatch, json, sink, sonic};
use crate::model::{NodeId, TIER_LEAF};

/// `ip/<switch>.batch` for every switch.
pub fn export_ip<S: Sink>(r: &Routed<'_>, sink: &mut S) -> Result<(), ExportError> {
    let f = r.fabric;
    let mut nh: Vec<ipbatch::NextHop<std::net::Ipv4Addr, LinuxIf>> = Vec::new();
    for s in f.switches() {
        let path = format!("ip/{}.batch", f.node_name(s));
        sink::with_file(sink, &path, |w| {
            ipbatch::write_header(w, f.node_name(s), count_routes(r, s)?)?;
            routes::for_each_route(f, r.addr, &r.tables, s, |route, hops| {
                if route.local {
                    writeln!(w, "route replace {} proto static dev {} scope link", route.prefix, LinuxIf(hops[0].port))?;
                    return Ok(());
                }
                nh.clear();
                nh.extend(hops.iter().map(|h| ipbatch::NextHop { via: h.via, dev: LinuxIf(h.port), weight: 1 }));
                ipbatch::write_route(w, route.prefix, &nh)?;
                Ok(())
            })?;
            Ok(())
        })?;
    }
    Ok(())
}

fn count_routes(r: &Routed<'_>, s: NodeId) -> Result<usize, ExportError> {
    let mut n = 0;
    routes::for_each_route(r.fabric, r.addr, &r.tables, s, |_, _| {
        n += 1;
        Ok(())
    })?;
    Ok(n)
}

/// `sonic/<switch>.json` for every switch.
pub fn export_sonic<S: Sink>(r: &Routed<'_>, sink: &mut S) -> Result<(), ExportError> {
    let f = r.fabric;
    let mut list: Vec<(std::net::Ipv4Addr, SonicIf, u32)> = Vec::new();
    for s in f.switches() {
        let path = format!("sonic/{}.json", f.node_name(s));
        sink::with_file(sink, &path, |w| {
            let mut sw = sonic::SonicWriter::start(w)?;
            routes::for_each_route(f, r.addr, &r.tables, s, |route, hops| {
                // A directly attached host: SONiC takes the host itself as next hop.
                list.clear();
                list.extend(hops.iter().map(|h| (h.via, SonicIf(h.port), 1)));
                sw.route(w, route.prefix, &list)?;
                Ok(())
            })?;
            sw.finish(w)?;
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
                Some((net, a)) => (format!("{a}/{}", net.len), format!("to {}", f.node_name(peer))),
                None => continue,
            }
        };
        interfaces.push(frr::Interface { name: LinuxIf(p).to_string(), address, description });
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
        let asn = r.addr.asn(f, s).ok_or_else(|| ExportError::Addressing(format!("{}: no ASN", f.node_name(s))))?;
        let mut neighbors = Vec::new();
        for p in 0..f.degree(s) as u16 {
            let peer = f.peer(s, p);
            if f.is_host(peer) {
                continue;
            }
            let Some((_, a)) = routes::peer_addr(f, r.addr, s, p) else { continue };
            let remote_as = r.addr.asn(f, peer).unwrap_or(0);
            neighbors.push(frr::Neighbor { address: a.to_string(), remote_as, description: f.node_name(peer).to_owned() });
        }
        let networks: Vec<String> = if f.tier(s) == TIER_LEAF {
            r.addr.tor_prefix_v4(s).map(|p| p.to_string()).into_iter().collect()
        } else {
            Vec::new()
        };
        let up = (0..f.degree(s) as u16).filter(|&p| f.tier(f.peer(s, p)) > f.tier(s)).count();
        let host_routes: Vec<(String, String)> = (0..f.degree(s) as u16)
            .filter(|&p| f.is_host(f.peer(s, p)))
            .filter_map(|p| {
                let h = f.peer(s, p);
                let ip = r.addr.host_v4(f, h, f.plane(s)?)?;
                Some((format!("{ip}/32"), LinuxIf(p).to_string()))
            })
            .collect();
        let path = format!("frr/bgp/{}.conf", f.node_name(s));
        let rt = router(r, s);
        sink::with_file(sink, &path, |w| {
            Ok(frr::write_bgp(w, &rt, asn, &neighbors, &networks, &host_routes, up.max(1))?)
        })?;
    }
    Ok(())
}

/// `frr/static/<switch>.conf`: the computed table as static routes.
pub fn export_frr_static<S: Sink>(r: &Routed<'_>, sink: &mut S) -> Result<(), ExportError> {
    let f = r.fabric;
    for s in f.switches() {
        let path = format!("frr/static/{}.conf", f.node_name(s));
        let rt = router(r, s);
        sink::with_file(sink, &path, |w| {
            frr::write_preamble(w, &rt, "static routes")?;
            routes::for_each_route(f, r.addr, &r.tables, s, |route, hops| {
                for h in hops {
                    if route.local {
                        writeln!(w, "ip route {} {}", route.prefix, LinuxIf(h.port))?;
                    } else {
                        writeln!(w, "ip route {} {} {}", route.prefix, h.via, LinuxIf(h.port))?;
                    }
                }
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
        for (i, s) in f.switches().enumerate() {
            w.write_all(if i == 0 { b"\n" } else { b",\n" })?;
            write_json_switch(w, r, s)?;
        }
        w.write_all(b"\n  ]\n}\n")?;
        Ok(())
    })
}

fn write_json_switch<W: Write>(w: &mut W, r: &Routed<'_>, s: NodeId) -> Result<(), ExportError> {
    let f = r.fabric;
    w.write_all(b"    {\"name\": ")?;
    json::write_str(w, f.node_name(s))?;
    write!(w, ", \"id\": {}, \"plane\": {}, \"tier\": {}", s.0, f.plane(s).unwrap_or(0), f.tier(s))?;
    match f.pod(s) {
        Some(p) => write!(w, ", \"pod\": {p}")?,
        None => w.write_all(b", \"pod\": null")?,
    }
    match r.addr.asn(f, s) {
        Some(a) => write!(w, ", \"asn\": {a}")?,
        None => w.write_all(b", \"asn\": null")?,
    }
    match r.addr.loopback_v4(s) {
        Some(a) => write!(w, ", \"loopback\": \"{a}\"")?,
        None => w.write_all(b", \"loopback\": null")?,
    }
    match r.addr.switch_lid(f, s) {
        Some(l) => write!(w, ", \"lid\": {l}")?,
        None => w.write_all(b", \"lid\": null")?,
    }
    w.write_all(b",\n     \"routes\": [")?;
    let mut first = true;
    routes::for_each_route(f, r.addr, &r.tables, s, |route: &Route, hops: &[Hop]| {
        w.write_all(if first { b"\n" } else { b",\n" })?;
        first = false;
        write!(w, "      {{\"prefix\": \"{}\", \"dst\": ", route.prefix)?;
        json::write_str(w, f.node_name(route.dst))?;
        write!(w, ", \"local\": {}, \"nexthops\": [", route.local)?;
        for (i, h) in hops.iter().enumerate() {
            if i > 0 {
                w.write_all(b", ")?;
            }
            write!(w, "{{\"port\": {}, \"ifname\": \"{}\", \"neighbor\": ", h.port, LinuxIf(h.port))?;
            json::write_str(w, f.node_name(h.peer))?;
            write!(w, ", \"via\": \"{}\", \"weight\": 1}}", h.via)?;
        }
        w.write_all(b"]}")?;
        Ok(())
    })?;
    w.write_all(if first { b"]}" } else { b"\n     ]}" })?;
    Ok(())
}
