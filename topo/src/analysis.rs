//! Design figures: counts, bisection bandwidth, oversubscription, diameter, path
//! diversity, ECMP widths, cables/optics and cost per GPU — for `fabric topo show` and
//! side-by-side `fabric topo compare` (the way the DeepSeek-V3 ISCA 2025 paper, Table 3,
//! compares fat-tree, multi-plane fat-tree, Slim Fly and Dragonfly designs).
//!
//! * **Bisection bandwidth** (per direction), summed over planes: for each plane the
//!   minimum of half the host injection bandwidth, half the leaf uplink bandwidth, and the
//!   capacity that crosses a cut between halves of the pods (half the tier-2 uplink
//!   bandwidth of a 3-tier plane; the global links between the two halves of the groups
//!   of a Dragonfly+ plane). Exact for the regular fabrics generated here.
//! * **Oversubscription** of a tier: down bandwidth / (up + global + external up)
//!   bandwidth over all its switches.
//! * **Diameter**: host-to-host links on the longest shortest up*/down* path.
//! * **Path diversity**: number of distinct shortest paths between two leaves (parallel
//!   links count separately), min and mean over leaf pairs, over up to 32 sampled
//!   destination leaves per plane.
//! * **Cost**: see [`PriceList`].

use serde::{Deserialize, Serialize};

use crate::model::*;
use crate::routing::{LOCAL, NO_ROUTE, Routes, WidthStats};

/// Prices for the cost estimate. Rough list-price ballparks (2024, USD) meant to be
/// overridden with the user's own quotes (`fabric topo compare --prices FILE.toml`);
/// relative figures between designs matter more than absolute ones.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct PriceList {
    /// Switch cost per Gb/s of connected port capacity (a 400G port ≈ $1,000).
    pub switch_usd_per_gbps: f64,
    /// One transceiver per Gb/s (a 400G optic ≈ $600).
    pub optic_usd_per_gbps: f64,
    /// One fibre cable between two optics.
    pub fiber_usd: f64,
    /// One copper (DAC/AEC) cable, used for host links unless `optical_host_links`.
    pub copper_usd: f64,
    /// Host links use optics + fibre instead of copper.
    pub optical_host_links: bool,
}

impl Default for PriceList {
    fn default() -> Self {
        PriceList {
            switch_usd_per_gbps: 2.5,
            optic_usd_per_gbps: 1.5,
            fiber_usd: 50.0,
            copper_usd: 100.0,
            optical_host_links: false,
        }
    }
}

/// Figures of one design.
#[derive(Debug, Clone, Serialize)]
pub struct Summary {
    /// Fabric name.
    pub name: String,
    /// Planes.
    pub planes: usize,
    /// Servers.
    pub servers: u64,
    /// Host NICs (addressable endpoints).
    pub nics: u64,
    /// GPUs.
    pub gpus: u64,
    /// Switches in tiers 1, 2, 3 (all planes).
    pub switches_per_tier: [u64; 3],
    /// All switches.
    pub switches: u64,
    /// Host–leaf links.
    pub host_links: u64,
    /// Switch–switch links.
    pub switch_links: u64,
    /// Cables (= links).
    pub cables: u64,
    /// Optical transceivers.
    pub optics: u64,
    /// Total host injection bandwidth (bits/s, one direction).
    pub injection_bps: u64,
    /// Bisection bandwidth (bits/s, one direction).
    pub bisection_bps: u64,
    /// Bisection / (injection / 2): 1.0 = full bisection.
    pub bisection_ratio: f64,
    /// Down : up bandwidth of tiers 1..3 (`None`: tier absent or top tier).
    pub oversubscription: [Option<f64>; 3],
    /// Host-to-host links on the longest shortest path.
    pub diameter: u32,
    /// Fewest shortest paths between two leaves.
    pub path_diversity_min: f64,
    /// Mean shortest paths between two leaves.
    pub path_diversity_mean: f64,
    /// ECMP widths.
    pub ecmp: WidthStats,
    /// Estimated network cost (USD).
    pub cost_usd: f64,
    /// Per GPU.
    pub cost_per_gpu_usd: f64,
}

/// Computes the figures of a fabric with its routing tables.
pub fn summarize(f: &Fabric, r: &Routes, prices: &PriceList) -> Summary {
    let mut s = Summary {
        name: f.name().to_string(),
        planes: f.num_planes(),
        servers: f.host_layout().servers as u64,
        nics: f.num_hosts() as u64,
        gpus: f.num_gpus(),
        switches_per_tier: [0; 3],
        switches: f.num_switches() as u64,
        host_links: 0,
        switch_links: 0,
        cables: f.num_links() as u64,
        optics: 0,
        injection_bps: 0,
        bisection_bps: 0,
        bisection_ratio: 0.0,
        oversubscription: [None; 3],
        diameter: 0,
        path_diversity_min: 0.0,
        path_diversity_mean: 0.0,
        ecmp: r.width_stats(),
        cost_usd: 0.0,
        cost_per_gpu_usd: 0.0,
    };
    let gbps = |b: u64| b as f64 / 1e9;
    let mut cost = 0.0;
    for l in f.links() {
        let host = f.is_host(l.a);
        if host {
            s.host_links += 1;
            s.injection_bps = s.injection_bps.saturating_add(l.rate_bps);
            cost += prices.switch_usd_per_gbps * gbps(l.rate_bps);
        } else {
            s.switch_links += 1;
            cost += 2.0 * prices.switch_usd_per_gbps * gbps(l.rate_bps);
        }
        if !host || prices.optical_host_links {
            s.optics += 2;
            cost += 2.0 * prices.optic_usd_per_gbps * gbps(l.rate_bps) + prices.fiber_usd;
        } else {
            cost += prices.copper_usd;
        }
    }
    s.cost_usd = cost;
    s.cost_per_gpu_usd = if s.gpus > 0 {
        cost / s.gpus as f64
    } else {
        0.0
    };
    // Per-tier bandwidth.
    let mut down = [0u128; 3];
    let mut up = [0u128; 3];
    for (pi, p) in f.planes().iter().enumerate() {
        let _ = pi;
        for t in 1..=3u8 {
            let range = p.tiers[t as usize - 1].clone();
            s.switches_per_tier[t as usize - 1] += range.len() as u64;
            for v in range {
                let v = NodeId(v);
                for (k, (_, l)) in f.ports(v).enumerate() {
                    let rate = f.link(l).rate_bps as u128;
                    match f.direction(v, k as Port) {
                        Direction::Down => down[t as usize - 1] += rate,
                        Direction::Up | Direction::Global => up[t as usize - 1] += rate,
                    }
                }
                up[t as usize - 1] += p.external_up[t as usize - 1] as u128
                    * p.external_up_rate_bps[t as usize - 1] as u128;
            }
        }
        s.bisection_bps = s.bisection_bps.saturating_add(plane_bisection(f, p));
    }
    for t in 0..3 {
        if up[t] > 0 {
            s.oversubscription[t] = Some(down[t] as f64 / up[t] as f64);
        }
    }
    s.bisection_ratio = if s.injection_bps > 0 {
        s.bisection_bps as f64 / (s.injection_bps as f64 / 2.0)
    } else {
        0.0
    };
    // Diameter and path diversity.
    let mut diam = 0u32;
    let (mut pmin, mut psum, mut pn) = (f64::INFINITY, 0.0, 0u64);
    for p in f.planes() {
        let leaves = p.leaves();
        for a in leaves.clone() {
            for b in leaves.clone() {
                if a != b
                    && let Some(d) = r.distance(NodeId(a), NodeId(b))
                {
                    diam = diam.max(d as u32 + 2);
                }
            }
        }
        if leaves.len() == 1 {
            diam = diam.max(2);
        }
        let nl = leaves.len();
        let step = nl.div_ceil(32).max(1);
        let sw = p.switches();
        let mut paths = vec![0f64; sw.len()];
        let mut order: Vec<(u8, u32)> = Vec::with_capacity(sw.len());
        for di in (0..nl).step_by(step) {
            let d = NodeId(leaves.start + di as u32);
            order.clear();
            for v in sw.clone() {
                if let Some(x) = r.distance(NodeId(v), d) {
                    order.push((x, v));
                }
            }
            order.sort_unstable();
            paths.fill(0.0);
            for &(_, v) in &order {
                let vi = (v - sw.start) as usize;
                let e = r.entry(NodeId(v), d);
                paths[vi] = match e {
                    LOCAL => 1.0,
                    NO_ROUTE => 0.0,
                    g => r
                        .groups()
                        .get(g)
                        .iter()
                        .map(|&k| paths[(f.peer(NodeId(v), k).0 - sw.start) as usize])
                        .sum(),
                };
            }
            for a in leaves.clone() {
                if a == d.0 {
                    continue;
                }
                let x = paths[(a - sw.start) as usize];
                if x > 0.0 {
                    pmin = pmin.min(x);
                    psum += x;
                    pn += 1;
                }
            }
        }
    }
    s.diameter = diam;
    s.path_diversity_min = if pn > 0 { pmin } else { 0.0 };
    s.path_diversity_mean = if pn > 0 { psum / pn as f64 } else { 0.0 };
    s
}

fn plane_bisection(f: &Fabric, p: &PlaneInfo) -> u64 {
    let mut host = 0u64;
    let mut leaf_up = 0u64;
    for v in p.leaves() {
        let v = NodeId(v);
        for (k, (_, l)) in f.ports(v).enumerate() {
            match f.direction(v, k as Port) {
                Direction::Down => host = host.saturating_add(f.link(l).rate_bps),
                _ => leaf_up = leaf_up.saturating_add(f.link(l).rate_bps),
            }
        }
    }
    let mut b = (host / 2).min(leaf_up / 2);
    let half = p.pods / 2;
    match p.kind {
        PlaneKind::Clos => {
            if p.num_tiers() == 3 && p.pods >= 2 {
                let mut agg_up = 0u64;
                for v in p.tiers[1].clone() {
                    let v = NodeId(v);
                    for (k, (_, l)) in f.ports(v).enumerate() {
                        if f.direction(v, k as Port) == Direction::Up {
                            agg_up = agg_up.saturating_add(f.link(l).rate_bps);
                        }
                    }
                }
                b = b.min(agg_up / 2);
            }
        }
        PlaneKind::DragonflyPlus => {
            let mut cross = 0u64;
            for v in p.tiers[1].clone() {
                let v = NodeId(v);
                for (k, (w, l)) in f.ports(v).enumerate() {
                    if f.direction(v, k as Port) == Direction::Global
                        && v < w
                        && (f.pod(v).unwrap_or(0) < half) != (f.pod(w).unwrap_or(0) < half)
                    {
                        cross = cross.saturating_add(f.link(l).rate_bps);
                    }
                }
            }
            b = b.min(cross);
        }
    }
    b
}

fn fmt_bps(b: u64) -> String {
    let v = b as f64;
    if v >= 1e15 {
        format!("{:.2} Pb/s", v / 1e15)
    } else if v >= 1e12 {
        format!("{:.2} Tb/s", v / 1e12)
    } else {
        format!("{:.1} Gb/s", v / 1e9)
    }
}

fn fmt_int(v: u64) -> String {
    let s = v.to_string();
    let mut out = String::new();
    for (i, c) in s.chars().enumerate() {
        if i > 0 && (s.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// The rows of the comparison table: (label, one value per design).
pub fn table_rows(designs: &[Summary]) -> Vec<(String, Vec<String>)> {
    let over = |o: Option<f64>| o.map_or("-".to_string(), |x| format!("{x:.3}:1"));
    type Cell = Box<dyn Fn(&Summary) -> String>;
    let rows: Vec<(&str, Cell)> = vec![
        ("planes", Box::new(|s| s.planes.to_string())),
        ("servers", Box::new(|s| fmt_int(s.servers))),
        ("GPUs", Box::new(|s| fmt_int(s.gpus))),
        ("NICs (endpoints)", Box::new(|s| fmt_int(s.nics))),
        (
            "leaf switches",
            Box::new(|s| fmt_int(s.switches_per_tier[0])),
        ),
        (
            "spine/agg switches",
            Box::new(|s| fmt_int(s.switches_per_tier[1])),
        ),
        (
            "core switches",
            Box::new(|s| fmt_int(s.switches_per_tier[2])),
        ),
        ("switches", Box::new(|s| fmt_int(s.switches))),
        ("links (cables)", Box::new(|s| fmt_int(s.cables))),
        ("  host links", Box::new(|s| fmt_int(s.host_links))),
        ("  switch links", Box::new(|s| fmt_int(s.switch_links))),
        ("optics", Box::new(|s| fmt_int(s.optics))),
        (
            "injection bandwidth",
            Box::new(|s| fmt_bps(s.injection_bps)),
        ),
        (
            "bisection bandwidth",
            Box::new(|s| fmt_bps(s.bisection_bps)),
        ),
        (
            "bisection / full",
            Box::new(|s| format!("{:.3}", s.bisection_ratio)),
        ),
        (
            "oversubscription leaf",
            Box::new(move |s| over(s.oversubscription[0])),
        ),
        (
            "oversubscription tier 2",
            Box::new(move |s| over(s.oversubscription[1])),
        ),
        ("diameter (links)", Box::new(|s| s.diameter.to_string())),
        (
            "path diversity min",
            Box::new(|s| format!("{}", s.path_diversity_min)),
        ),
        (
            "path diversity mean",
            Box::new(|s| format!("{:.1}", s.path_diversity_mean)),
        ),
        ("ECMP width max", Box::new(|s| s.ecmp.max.to_string())),
        ("ECMP groups", Box::new(|s| s.ecmp.groups.to_string())),
        (
            "cost (USD)",
            Box::new(|s| format!("${}", fmt_int(s.cost_usd.round() as u64))),
        ),
        (
            "cost per GPU (USD)",
            Box::new(|s| format!("${}", fmt_int(s.cost_per_gpu_usd.round() as u64))),
        ),
    ];
    rows.into_iter()
        .map(|(l, f)| (l.to_string(), designs.iter().map(&f).collect()))
        .collect()
}

/// A plain-text side-by-side table.
pub fn render_table(designs: &[Summary]) -> String {
    let rows = table_rows(designs);
    let names: Vec<&str> = designs.iter().map(|d| d.name.as_str()).collect();
    let w0 = rows.iter().map(|r| r.0.len()).max().unwrap_or(0).max(6);
    let widths: Vec<usize> = (0..designs.len())
        .map(|i| {
            rows.iter()
                .map(|r| r.1[i].len())
                .max()
                .unwrap_or(0)
                .max(names[i].len())
        })
        .collect();
    let mut out = format!("{:w0$}", "");
    for (i, n) in names.iter().enumerate() {
        out.push_str(&format!("  {:>w$}", n, w = widths[i]));
    }
    out.push('\n');
    for (label, vals) in rows {
        out.push_str(&format!("{label:w0$}"));
        for (i, v) in vals.iter().enumerate() {
            out.push_str(&format!("  {:>w$}", v, w = widths[i]));
        }
        out.push('\n');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::generators::*;
    use crate::units::Rate;

    fn sum(f: &Fabric) -> Summary {
        summarize(f, &Routes::compute(f), &PriceList::default())
    }

    #[test]
    fn fat_tree_figures() {
        let f = fat_tree(8, Rate::gbps(100)).unwrap();
        let s = sum(&f);
        assert_eq!(s.switches_per_tier, [32, 32, 16]);
        assert_eq!(s.bisection_ratio, 1.0);
        assert_eq!(s.oversubscription, [Some(1.0), Some(1.0), None]);
        assert_eq!(s.diameter, 6);
        // between pods: (k/2)² = 16 paths; inside a pod: k/2 = 4
        assert_eq!(s.path_diversity_min, 4.0);
        assert_eq!(s.optics, 2 * 256);
        assert_eq!(s.host_links, 128);
    }

    #[test]
    fn hpn_oversubscription() {
        let f = crate::presets::build("alibaba-hpn").unwrap();
        let s = sum(&f);
        let leaf = s.oversubscription[0].unwrap();
        assert!((leaf - 25.6 / 24.0).abs() < 1e-9, "{leaf}");
        assert_eq!(s.oversubscription[1], Some(15.0));
        assert_eq!(s.diameter, 4);
    }

    #[test]
    fn oversubscribed_leaf_spine_bisection() {
        // 4 leaves × 4 hosts at 100G, 2 uplinks each: 2:1 at the leaf.
        let f = leaf_spine(4, 2, 4, Rate::gbps(100)).unwrap();
        let s = sum(&f);
        assert_eq!(s.oversubscription[0], Some(2.0));
        assert_eq!(s.bisection_ratio, 0.5);
        assert_eq!(s.diameter, 4);
        assert_eq!(s.path_diversity_min, 2.0);
        let t = render_table(&[s.clone(), s]);
        assert!(
            t.contains("oversubscription leaf") && t.contains("2.000:1"),
            "{t}"
        );
    }
}
