//! `--prometheus URL`: rates from a Prometheus server that scrapes `fabric serve`
//! daemons (one per plane or pod, or federated), through its HTTP query API, so a fabric
//! watched by several daemons is seen as one.
//!
//! The fabric's shape comes from the `fabric_link_info{switch,port,peer_switch,peer_port}`
//! series: hosts are the nodes whose every peer has more links than they do, a switch's
//! tier is its distance from the nearest host, planes are the connected components of the
//! switch graph and, in 3-tier planes, pods are the components of its leaf–aggregation
//! graph. Rates are `rate(…[window])` of the daemon's counters (metric names in
//! `docs/serve.md`).
//!
//! With a design (`--fabric`), it reads the switches' own **node_exporter** series
//! instead — the names `fabric serve --observe` reads (docs/observe.md), with the switch's
//! design name in label `switch` and the port in `device` (`p<port>`, `swp<port+1>` or
//! `Ethernet<4·port>`, recognised by their form): the busier of a port's transmit and
//! receive byte rates, drops and errors summed, `node_network_carrier` 0 as down. A
//! link whose series stopped (its exporter down, or a port gone from the answer) keeps
//! its last values, marked stale (greyed), and the header counts the stale links.

use crate::app::{Msg, SourceStatus};
use crate::fabric::{FabricView, LinkLabel, NodeLabel};
use crate::metrics::{LinkRates, Sample};
use crate::source::{Control, time_of_day};
use std::collections::{HashMap, VecDeque};
use std::sync::mpsc::{Receiver, RecvTimeoutError, Sender};
use std::time::{Duration, Instant};

pub use fabric_api::prom::Series;
use fabric_api::prom::{self, PromUrl};

/// (switch name, port) → link index.
pub type PortLinks = HashMap<(String, u16), u32>;

/// A Prometheus server's address, from `http://HOST:PORT[/prefix]`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Server {
    /// `HOST:PORT`.
    pub addr: String,
    /// Path prefix (empty or `/prefix`).
    pub prefix: String,
}

impl Server {
    /// Parse a URL; only plain `http://` is supported.
    pub fn parse(url: &str) -> Result<Server, String> {
        let PromUrl { addr, prefix } = PromUrl::parse(url)?;
        Ok(Server { addr, prefix })
    }

    /// Run an instant query.
    pub fn query(&self, q: &str) -> Result<Vec<Series>, String> {
        let path = format!("{}/api/v1/query?query={}", self.prefix, prom::encode(q));
        let mut body = crate::http::get(&self.addr, &path, Duration::from_secs(10))
            .map_err(|e| e.to_string())?;
        let mut text = String::new();
        std::io::Read::read_to_string(&mut std::io::Read::take(&mut body, 256 << 20), &mut text)
            .map_err(|e| e.to_string())?;
        prom::parse_vector(text.as_bytes())
    }
}

/// The fabric described by `fabric_link_info` series, and each (switch, port)'s link.
pub fn infer_fabric(name: &str, info: &[Series]) -> (FabricView, HashMap<(String, u16), u32>) {
    let mut ids: HashMap<String, u32> = HashMap::new();
    let mut names: Vec<String> = Vec::new();
    let mut id = |n: &str| {
        *ids.entry(n.to_string()).or_insert_with(|| {
            names.push(n.to_string());
            names.len() as u32 - 1
        })
    };
    let mut ends: Vec<(u32, u16, u32, u16)> = Vec::new();
    let mut seen: HashMap<(u32, u16), ()> = HashMap::new();
    for (l, _) in info {
        let get = |k: &str| l.get(k).map(String::as_str).unwrap_or("");
        let (Ok(p), Ok(pp)) = (get("port").parse::<u16>(), get("peer_port").parse::<u16>()) else {
            continue;
        };
        let (a, b) = (id(get("switch")), id(get("peer_switch")));
        if seen.contains_key(&(a, p)) || seen.contains_key(&(b, pp)) {
            continue;
        }
        seen.insert((a, p), ());
        seen.insert((b, pp), ());
        ends.push((a, p, b, pp));
    }
    let n = names.len();
    let mut adj = vec![Vec::new(); n];
    for &(a, _, b, _) in &ends {
        adj[a as usize].push(b);
        adj[b as usize].push(a);
    }
    let tier = tiers(&adj);
    let (plane, pod) = planes_and_pods(&adj, &tier);
    let nodes: Vec<NodeLabel> = (0..n)
        .map(|i| NodeLabel {
            name: names[i].clone(),
            tier: tier[i],
            plane: plane[i],
            pod: pod[i],
        })
        .collect();
    let mut port_link = HashMap::new();
    let links = ends
        .iter()
        .enumerate()
        .map(|(i, &(a, ap, b, bp))| {
            port_link.insert((names[a as usize].clone(), ap), i as u32);
            port_link.insert((names[b as usize].clone(), bp), i as u32);
            let (a, ap, b, bp) = if tier[a as usize] <= tier[b as usize] {
                (a, ap, b, bp)
            } else {
                (b, bp, a, ap)
            };
            LinkLabel {
                a,
                a_port: ap,
                b,
                b_port: bp,
                rate_bps: 0,
                tier: tier[a as usize].min(2),
                plane: plane[b as usize],
            }
        })
        .collect();
    (FabricView::new(name.to_string(), nodes, links), port_link)
}

/// Hosts (tier 0) are nodes whose every peer has more links; others are their distance
/// from the nearest host (capped at 3).
fn tiers(adj: &[Vec<u32>]) -> Vec<u8> {
    let mut tier = vec![u8::MAX; adj.len()];
    let mut q = VecDeque::new();
    for (i, peers) in adj.iter().enumerate() {
        if !peers.is_empty() && peers.iter().all(|&p| adj[p as usize].len() > peers.len()) {
            tier[i] = 0;
            q.push_back(i);
        }
    }
    while let Some(i) = q.pop_front() {
        for &p in &adj[i] {
            if tier[p as usize] == u8::MAX {
                tier[p as usize] = (tier[i] + 1).min(3);
                q.push_back(p as usize);
            }
        }
    }
    tier.iter()
        .map(|&t| if t == u8::MAX { 1 } else { t })
        .collect()
}

fn components(adj: &[Vec<u32>], keep: impl Fn(usize) -> bool) -> Vec<Option<u32>> {
    let mut comp = vec![None; adj.len()];
    let mut next = 0;
    for s in 0..adj.len() {
        if comp[s].is_some() || !keep(s) {
            continue;
        }
        comp[s] = Some(next);
        let mut stack = vec![s];
        while let Some(i) = stack.pop() {
            for &p in &adj[i] {
                let p = p as usize;
                if comp[p].is_none() && keep(p) {
                    comp[p] = Some(next);
                    stack.push(p);
                }
            }
        }
        next += 1;
    }
    comp
}

fn planes_and_pods(adj: &[Vec<u32>], tier: &[u8]) -> (Vec<Option<u16>>, Vec<Option<u32>>) {
    let plane: Vec<Option<u16>> = components(adj, |i| tier[i] > 0)
        .into_iter()
        .map(|c| c.map(|c| c as u16))
        .collect();
    let three_tier: Vec<bool> = {
        let np = plane
            .iter()
            .flatten()
            .map(|&p| p as usize + 1)
            .max()
            .unwrap_or(0);
        let mut v = vec![false; np];
        for (i, p) in plane.iter().enumerate() {
            if let (Some(p), 3) = (p, tier[i]) {
                v[*p as usize] = true;
            }
        }
        v
    };
    let pods = components(adj, |i| {
        matches!(tier[i], 1 | 2) && plane[i].is_some_and(|p| three_tier[p as usize])
    });
    (plane, pods)
}

/// The queries of one refresh.
pub fn queries(window: &str) -> [(&'static str, String); 9] {
    let r = |m: &str| format!("sum by (switch, port) (rate({m}[{window}]))");
    [
        ("tx", r("fabric_port_transmit_bytes_total")),
        ("speed", "fabric_port_speed_bytes".into()),
        ("tx_drops", r("fabric_port_transmit_drops_total")),
        ("rx_drops", r("fabric_port_receive_drops_total")),
        ("pfc", r("fabric_pfc_pause_frames_total{direction=\"tx\"}")),
        ("paused", r("fabric_pfc_paused_seconds_total")),
        ("ecn", r("fabric_queue_ecn_marked_packets_total")),
        ("pkts", r("fabric_port_transmit_packets_total")),
        ("up", "fabric_port_up".into()),
    ]
}

/// Fold query results into a sample of `view`'s links.
pub fn sample(
    view: &FabricView,
    ports: &HashMap<(String, u16), u32>,
    res: &HashMap<&str, Vec<Series>>,
    at_ns: u64,
    interval_ns: u64,
) -> Sample {
    let mut s = Sample::idle(view, at_ns);
    s.interval_ns = interval_ns;
    let mut per_port: HashMap<u32, [f64; 9]> = HashMap::new();
    let keys = [
        "tx", "speed", "tx_drops", "rx_drops", "pfc", "paused", "ecn", "pkts", "up",
    ];
    for (k, name) in keys.iter().enumerate() {
        for (labels, v) in res.get(name).map_or(&[][..], |v| &v[..]) {
            let (Some(sw), Some(Ok(p))) = (
                labels.get("switch"),
                labels.get("port").map(|p| p.parse::<u16>()),
            ) else {
                continue;
            };
            let Some(&l) = ports.get(&(sw.clone(), p)) else {
                continue;
            };
            let e = per_port
                .entry(l * 2 + (view.node_name(view.links[l as usize].a) != sw) as u32)
                .or_insert([f64::NAN; 9]);
            e[k] = *v;
        }
    }
    for (key, v) in per_port {
        let x: &mut LinkRates = &mut s.links[(key / 2) as usize];
        let val = |k: usize| if v[k].is_finite() { v[k] } else { 0.0 };
        let bps = val(0) * 8.0;
        let speed = val(1) * 8.0;
        x.bps = x.bps.max(bps as f32);
        if speed > 0.0 {
            x.util = x.util.max((bps / speed) as f32);
        }
        x.drops_per_s += (val(2) + val(3)) as f32;
        x.pfc_per_s += val(4) as f32;
        x.paused = x.paused.max(val(5) as f32);
        if val(7) > 0.0 {
            x.ecn = x.ecn.max((val(6) / val(7)) as f32);
        }
        x.ecn_per_s += val(6) as f32;
        x.down |= v[8] == 0.0;
    }
    s
}

/// A design (spec file or preset) for `--prometheus --fabric`.
pub fn load_design(arg: &str) -> Result<topo::Fabric, String> {
    let path = std::path::Path::new(arg);
    if !path.exists() {
        return topo::presets::build(arg).map_err(|e| format!("--fabric {arg}: {e}"));
    }
    let format = topo::Format::from_path(arg).ok_or_else(|| {
        format!("--fabric {arg}: unknown spec format (expected .toml, .yaml, .yml or .json)")
    })?;
    let mut text = String::new();
    std::fs::File::open(path)
        .and_then(|f| {
            std::io::Read::read_to_string(&mut std::io::Read::take(f, MAX_SPEC + 1), &mut text)
        })
        .map_err(|e| format!("--fabric {arg}: {e}"))?;
    if text.len() as u64 > MAX_SPEC {
        return Err(format!("--fabric {arg}: larger than {MAX_SPEC} bytes"));
    }
    topo::Spec::parse(&text, format, arg)
        .and_then(|s| s.build(arg))
        .map_err(|e| format!("--fabric {arg}: {e}"))
}

/// Largest spec file read.
const MAX_SPEC: u64 = 64 << 20;

/// The port a node_exporter `device` names: `p<port>` (testbeds), `swp<port+1>` (Linux
/// switches, the `frr-bgp` export) or `Ethernet<4·port>` (SONiC).
pub fn device_port(device: &str) -> Option<u16> {
    let num = |p: &str| p.parse::<u32>().ok();
    let p = if let Some(n) = device.strip_prefix("swp") {
        num(n)?.checked_sub(1)?
    } else if let Some(n) = device.strip_prefix("Ethernet") {
        let n = num(n)?;
        (n % 4 == 0).then_some(n / 4)?
    } else {
        num(device.strip_prefix('p')?)?
    };
    u16::try_from(p).ok()
}

/// The queries of one node_exporter refresh (each counter on its own: `rate()` drops the
/// metric name, so one selector over several names would give clashing series).
pub fn node_queries(window: &str) -> [(&'static str, String); 7] {
    let r = |m: &str| {
        format!("sum by (switch, device) (rate(node_network_{m}_total{{switch!=\"\"}}[{window}]))")
    };
    [
        ("tx", r("transmit_bytes")),
        ("rx", r("receive_bytes")),
        ("drops", r("transmit_drop")),
        ("drops_rx", r("receive_drop")),
        ("errs", r("transmit_errs")),
        ("errs_rx", r("receive_errs")),
        ("up", "node_network_carrier{switch!=\"\"}".into()),
    ]
}

/// (switch name, port) → link index of the design's view ([`FabricView::from_topo`]:
/// link ids are topo's).
pub fn design_ports(f: &topo::Fabric) -> PortLinks {
    let mut m = HashMap::new();
    for (i, l) in f.links().iter().enumerate() {
        m.insert((f.node_name(l.a).to_string(), l.a_port), i as u32);
        m.insert((f.node_name(l.b).to_string(), l.b_port), i as u32);
    }
    m
}

/// Fold node_exporter query results into a sample of the design's links. `last` holds
/// each link's last fresh rates: a link none of whose ports has a carrier series in this
/// answer (its exporters stopped answering) keeps them, marked stale. Returns the sample
/// and the number of stale links.
pub fn node_sample(
    view: &FabricView,
    ports: &PortLinks,
    res: &HashMap<&str, Vec<Series>>,
    last: &mut [Option<LinkRates>],
    at_ns: u64,
    interval_ns: u64,
) -> (Sample, usize) {
    let mut s = Sample::idle(view, at_ns);
    s.interval_ns = interval_ns;
    let mut fresh = vec![false; view.links.len()];
    for (key, series) in res {
        for (labels, v) in series {
            let (Some(sw), Some(p)) = (
                labels.get("switch"),
                labels.get("device").and_then(|d| device_port(d)),
            ) else {
                continue;
            };
            let Some(&l) = ports.get(&(sw.clone(), p)) else {
                continue;
            };
            let v = if v.is_finite() { *v } else { 0.0 };
            let x = &mut s.links[l as usize];
            match *key {
                "tx" | "rx" => {
                    x.bps = x.bps.max((v * 8.0) as f32);
                    let speed = view.links[l as usize].rate_bps as f64;
                    if speed > 0.0 {
                        x.util = x.util.max((v * 8.0 / speed) as f32);
                    }
                }
                "drops" | "drops_rx" | "errs" | "errs_rx" => x.drops_per_s += v as f32,
                "up" => {
                    // An instant vector: present only while the exporter answers (a
                    // range's rate outlives a failed scrape by the window).
                    fresh[l as usize] = true;
                    x.down |= v == 0.0;
                }
                _ => {}
            }
        }
    }
    let mut stale = 0;
    for (i, x) in s.links.iter_mut().enumerate() {
        if fresh[i] {
            last[i] = Some(*x);
        } else if let Some(prev) = last[i] {
            *x = LinkRates {
                stale: true,
                ..prev
            };
            stale += 1;
        }
    }
    (s, stale)
}

/// Poll `server` for the node_exporter series of `design`'s switches every `every`.
pub fn run_nodes(
    server: Server,
    design: topo::Fabric,
    every: Duration,
    tx: Sender<Msg>,
    ctl: Receiver<Control>,
) {
    let name = format!("prometheus {} (node_exporter)", server.addr);
    let window = format!("{}s", (every.as_secs() * 4).max(30));
    let view = FabricView::from_topo(&design);
    let ports = design_ports(&design);
    let mut last = vec![None; view.links.len()];
    poll_loop(&name, every, &tx, &ctl, |at, dt| {
        let res: HashMap<&str, Vec<Series>> = node_queries(&window)
            .into_iter()
            .map(|(k, q)| server.query(&q).map(|r| (k, r)))
            .collect::<Result<_, String>>()?;
        let (mut s, stale) = node_sample(&view, &ports, &res, &mut last, at, dt);
        s.finish(&view);
        let live = match stale {
            0 => name.clone(),
            1 => format!("{name}, 1 link stale"),
            n => format!("{name}, {n} links stale"),
        };
        Ok((s, live))
    });
}

/// Poll `server` every `every`, sending samples (and the fabric map first).
pub fn run(server: Server, every: Duration, tx: Sender<Msg>, ctl: Receiver<Control>) {
    let name = format!("prometheus {}", server.addr);
    let window = format!("{}s", (every.as_secs() * 4).max(30));
    let mut fabric: Option<(FabricView, PortLinks)> = None;
    poll_loop(&name, every, &tx, &ctl, |at, dt| {
        let had_fabric = fabric.is_some();
        let res = poll(&server, &name, &window, &mut fabric)?;
        let (view, ports) = fabric.as_ref().expect("set by poll");
        if !had_fabric {
            let _ = tx.send(Msg::Fabric(Box::new(view.clone())));
        }
        let mut s = sample(view, ports, &res, at, dt);
        s.finish(view);
        Ok((s, name.clone()))
    });
}

/// The loop both Prometheus sources share: every `every`, `refresh(at_ns, interval_ns)`
/// gives a finished sample and the status line, or why the server could not be read (shown
/// as disconnected, never fatal). Drops are summed over the run here. Returns on
/// `Control::Stop` or when the UI has gone.
fn poll_loop(
    name: &str,
    every: Duration,
    tx: &Sender<Msg>,
    ctl: &Receiver<Control>,
    mut refresh: impl FnMut(u64, u64) -> Result<(Sample, String), String>,
) {
    let start = Instant::now();
    let mut last = Instant::now();
    let mut drops_total = 0.0;
    loop {
        let t = Instant::now();
        let since = last.elapsed();
        match refresh(
            start.elapsed().as_nanos() as u64,
            since.as_nanos().max(1) as u64,
        ) {
            Ok((mut s, live)) => {
                drops_total +=
                    s.links.iter().map(|l| l.drops_per_s as f64).sum::<f64>() * since.as_secs_f64();
                s.totals.drops_total = drops_total.round() as u64;
                last = Instant::now();
                let _ = tx.send(Msg::Status(SourceStatus::Live(live)));
                if tx.send(Msg::Sample(s)).is_err() {
                    return;
                }
            }
            Err(reason) => {
                let _ = tx.send(Msg::Status(SourceStatus::Disconnected {
                    name: name.to_string(),
                    since: time_of_day(),
                    reason,
                }));
            }
        }
        match ctl.recv_timeout(every.saturating_sub(t.elapsed())) {
            Ok(Control::Stop) | Err(RecvTimeoutError::Disconnected) => return,
            _ => {}
        }
    }
}

fn poll<'a>(
    server: &Server,
    name: &str,
    window: &str,
    fabric: &mut Option<(FabricView, PortLinks)>,
) -> Result<HashMap<&'a str, Vec<Series>>, String> {
    if fabric.is_none() {
        let info = server.query("fabric_link_info")?;
        if info.is_empty() {
            return Err(
                "no fabric_link_info series yet (is a fabric serve daemon scraped?)".into(),
            );
        }
        *fabric = Some(infer_fabric(name, &info));
    }
    let mut res = HashMap::new();
    for (k, q) in queries(window) {
        res.insert(k, server.query(&q)?);
    }
    Ok(res)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeMap;

    fn link_info(f: &topo::Fabric) -> Vec<Series> {
        let mut out = Vec::new();
        for (i, l) in f.links().iter().enumerate() {
            for (n, p, m, q) in [
                (l.a, l.a_port, l.b, l.b_port),
                (l.b, l.b_port, l.a, l.a_port),
            ] {
                let mut m2 = BTreeMap::new();
                m2.insert("switch".into(), f.node_name(n).to_string());
                m2.insert("port".into(), p.to_string());
                m2.insert("peer_switch".into(), f.node_name(m).to_string());
                m2.insert("peer_port".into(), q.to_string());
                m2.insert("link".into(), i.to_string());
                out.push((m2, 1.0));
            }
        }
        out
    }

    #[test]
    fn infers_tiers_planes_and_pods() {
        let f = topo::generators::fat_tree(4, topo::Rate::gbps(400)).unwrap();
        let (v, ports) = infer_fabric("p", &link_info(&f));
        assert_eq!(v.links.len(), f.num_links());
        assert_eq!(ports.len(), 2 * f.num_links());
        let want = FabricView::from_topo(&f);
        for (a, b) in v.nodes.iter().zip(&want.nodes) {
            let wb = want.nodes.iter().find(|x| x.name == a.name).unwrap();
            assert_eq!(a.tier, wb.tier, "{}", a.name);
            let _ = b;
        }
        assert_eq!(v.planes.len(), 1);
        assert_eq!(
            (
                v.planes[0].top.rows.len(),
                v.planes[0].top.cols.len(),
                v.planes[0].pods.len()
            ),
            (4, 4, 4)
        );
        let spec = topo::generators::multi_plane_spec(
            topo::generators::leaf_spine_spec(4, 2, 2, 1, topo::Rate::gbps(400)),
            2,
        );
        let f = spec.build("mp").unwrap();
        let (v, _) = infer_fabric("p", &link_info(&f));
        assert_eq!(v.planes.len(), 2);
        assert_eq!(v.planes[0].top.links.len(), 8);
    }

    fn series(sw: &str, dev: &str, v: f64) -> Series {
        let mut m = BTreeMap::new();
        m.insert("switch".to_string(), sw.to_string());
        m.insert("device".to_string(), dev.to_string());
        (m, v)
    }

    #[test]
    fn device_names() {
        assert_eq!(device_port("p3"), Some(3));
        assert_eq!(device_port("swp1"), Some(0));
        assert_eq!(device_port("swp0"), None);
        assert_eq!(device_port("Ethernet8"), Some(2));
        assert_eq!(device_port("Ethernet6"), None);
        assert_eq!(device_port("mgmt0"), None);
        assert_eq!(device_port("lo"), None);
    }

    #[test]
    fn node_exporter_series_fold_onto_the_design_and_go_stale() {
        let f = topo::generators::fat_tree(4, topo::Rate::gbps(100)).unwrap();
        let view = FabricView::from_topo(&f);
        let ports = design_ports(&f);
        let l = f
            .links()
            .iter()
            .position(|l| !f.is_host(l.a) && !f.is_host(l.b))
            .unwrap();
        let link = f.links()[l];
        let (a, b) = (f.node_name(link.a), f.node_name(link.b));
        let (pa, pb) = (format!("p{}", link.a_port), format!("p{}", link.b_port));
        let mut res = HashMap::new();
        // 1.25 GB/s = 10 Gb/s out of a, 2.5 GB/s into a (b's transmit side not reported).
        res.insert("tx", vec![series(a, &pa, 1.25e9), series(a, "mgmt0", 9e9)]);
        res.insert("rx", vec![series(a, &pa, 2.5e9)]);
        res.insert("drops", vec![series(b, &pb, 3.0)]);
        res.insert("up", vec![series(a, &pa, 1.0), series(b, &pb, 0.0)]);
        let mut last = vec![None; view.links.len()];
        let (s, stale) = node_sample(&view, &ports, &res, &mut last, 1, 1);
        let x = s.links[l];
        assert_eq!(stale, 0);
        assert_eq!(x.bps, 20e9);
        assert!((x.util - 0.2).abs() < 1e-6, "{x:?}");
        assert_eq!(x.drops_per_s, 3.0);
        assert!(x.down && !x.stale);
        // The next answer has rates (a range outlives a failed scrape) but no carrier for
        // the link's ports: last values, greyed.
        res.get_mut("up").unwrap().clear();
        res.insert("tx", vec![series(a, &pa, 1.0)]);
        let (s, stale) = node_sample(&view, &ports, &res, &mut last, 2, 1);
        assert_eq!(stale, 1);
        assert_eq!(s.links[l], LinkRates { stale: true, ..x });
        // Links never heard of are idle, not stale.
        assert!(s.links.iter().enumerate().all(|(i, y)| i == l || !y.stale));
    }

    #[test]
    fn designs_load_or_say_why_not() {
        assert_eq!(load_design("fat-tree-k4").unwrap().num_links(), 48);
        assert!(
            load_design("no-such-preset")
                .unwrap_err()
                .starts_with("--fabric no-such-preset")
        );
        assert!(
            load_design("/dev/null")
                .unwrap_err()
                .contains("unknown spec format")
        );
    }

    #[test]
    fn urls() {
        assert_eq!(
            Server::parse("http://prom/p/").unwrap(),
            Server {
                addr: "prom:80".into(),
                prefix: "/p".into()
            }
        );
        assert!(
            Server::parse("https://prom")
                .unwrap_err()
                .contains("https is not supported")
        );
    }
}
