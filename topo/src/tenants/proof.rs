//! The isolation proof: over every ordered host pair, the routing tables plus the
//! enforcement layer ([`super::enforce`]) against what the tenant file allows.
//!
//! A pair *reaches* on Ethernet when the source's ingress VRF routes the destination and
//! the tables carry it there on some plane (host links up, an entry at every hop — detours
//! on further lanes included); on InfiniBand when the two share a partition with a full
//! member among them and the tables carry it. A pair that reaches but may not is a
//! **leak**, reported with the path that carries it (first next hop at every switch); a
//! pair that may talk and that the tables carry, but the enforcement layer blocks, is
//! **blocked**. Pairs the tables themselves cannot carry (a failed host link) are counted
//! apart: `fabric routes verify` reports those.
//!
//! The check is O(hosts²) constant-time lookups; paths are walked only for what is
//! reported (at most [`MAX_LISTED`] per kind).

use crate::model::{Fabric, NodeId};
use crate::routing::Routes;

use super::enforce::Enforcement;
use super::{Allowed, Tenants};

/// Pairs listed in full per kind of finding (all are counted).
pub const MAX_LISTED: usize = 100;

/// Which enforcement layer a finding is about.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Layer {
    /// VRFs on the leaves (Ethernet).
    Vrf,
    /// InfiniBand partitions.
    Partition,
}

/// One pair that reaches but must not (or may but cannot).
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct Finding {
    /// Layer.
    pub layer: Layer,
    /// Source host.
    pub src: String,
    /// Its entry (`-`: none).
    pub src_entry: String,
    /// Destination host.
    pub dst: String,
    /// Its entry.
    pub dst_entry: String,
    /// What lets it through (VRF `a` at leaf X / partition `p` 0x0001) or blocks it.
    pub via: String,
    /// Nodes the tables carry it through, source to destination.
    pub path: Vec<String>,
}

/// The proof's outcome.
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize)]
pub struct Report {
    /// Ordered host pairs checked.
    pub pairs: u64,
    /// Pairs the tenant file allows that reach on every layer.
    pub allowed_pairs: u64,
    /// Pairs that must not talk and do not, on every layer.
    pub isolated_pairs: u64,
    /// Pairs the tables cannot carry at all (failed links): not the tenants' doing.
    pub unrouted_pairs: u64,
    /// Leaks found, per layer summed.
    pub leak_count: u64,
    /// Allowed pairs an enforcement layer blocks.
    pub blocked_count: u64,
    /// The first leaks with their paths.
    pub leaks: Vec<Finding>,
    /// The first blocked allowed pairs.
    pub blocked: Vec<Finding>,
}

impl Report {
    /// No leak and no allowed pair blocked.
    pub fn ok(&self) -> bool {
        self.leak_count == 0 && self.blocked_count == 0
    }
}

/// Proves `t` over `routes` (as failed and detoured) with enforcement `enf`.
pub fn prove(f: &Fabric, routes: &Routes, t: &Tenants, enf: &Enforcement) -> Report {
    let mut rep = Report::default();
    let entry = |h: NodeId| {
        t.owner(h)
            .map_or("-".to_string(), |i| t.entries()[i].name.clone())
    };
    let hosts: Vec<NodeId> = f.hosts().collect();
    for &s in &hosts {
        for &d in &hosts {
            if s == d {
                continue;
            }
            rep.pairs += 1;
            let Some(plane) = (0..f.num_planes() as u16).find(|&p| routes.plane_reaches(s, d, p))
            else {
                rep.unrouted_pairs += 1;
                continue;
            };
            let may = t.allowed(s, d).is_some();
            // Booleans first: text only for what is reported.
            let vrf = enf.vrf(s).is_none_or(|v| v.routes(d));
            let part = enf.shared_partition(s, d);
            let mut clean = true;
            for (layer, pass) in [(Layer::Vrf, vrf), (Layer::Partition, part.is_some())] {
                if may == pass {
                    continue;
                }
                clean = false;
                let (count, list) = if pass {
                    (&mut rep.leak_count, &mut rep.leaks)
                } else {
                    (&mut rep.blocked_count, &mut rep.blocked)
                };
                *count += 1;
                if list.len() >= MAX_LISTED {
                    continue;
                }
                let via = match (layer, part) {
                    (Layer::Vrf, _) if pass => vrf_text(f, routes, enf, s, plane),
                    (Layer::Vrf, _) => "no route in the source's VRF".to_string(),
                    (Layer::Partition, Some(p)) => format!("partition {} {:#06x}", p.name, p.pkey),
                    (Layer::Partition, None) => {
                        "no shared partition with a full member".to_string()
                    }
                };
                list.push(Finding {
                    layer,
                    src: f.node_name(s).to_string(),
                    src_entry: entry(s),
                    dst: f.node_name(d).to_string(),
                    dst_entry: entry(d),
                    via,
                    path: path(f, routes, s, d, plane),
                });
            }
            if clean {
                if may {
                    rep.allowed_pairs += 1;
                } else {
                    rep.isolated_pairs += 1;
                }
            }
        }
    }
    rep
}

/// What routes `s`'s traffic at its ingress leaf in `plane`: its VRF, or the default
/// VRF when its port is in none.
fn vrf_text(f: &Fabric, routes: &Routes, enf: &Enforcement, s: NodeId, plane: u16) -> String {
    let leaf = routes.host_leaf(s, plane).map_or("-", |l| f.node_name(l));
    match enf.vrf(s) {
        None => format!("default VRF at {leaf} (host in no tenant)"),
        Some(v) => format!("VRF {} (table {}) at {leaf}", v.name, v.table),
    }
}

/// The path the tables give `s → d` in `plane`: the first next hop at every switch.
pub fn path(f: &Fabric, routes: &Routes, s: NodeId, d: NodeId, plane: u16) -> Vec<String> {
    let mut out = vec![f.node_name(s).to_string()];
    let Some(mut at) = routes.host_leaf(s, plane) else {
        return out;
    };
    for _ in 0..64 {
        out.push(f.node_name(at).to_string());
        let Some(&port) = routes.next_hops(at, d).first() else {
            out.push("(no route)".into());
            return out;
        };
        let next = f.peer(at, port);
        if next == d {
            out.push(f.node_name(d).to_string());
            return out;
        }
        at = next;
    }
    out.push("(loop)".into());
    out
}

/// Why `a` and `b` may talk, as text (`-`: they must not).
pub fn why(t: &Tenants, a: NodeId, b: NodeId) -> &'static str {
    match t.allowed(a, b) {
        Some(Allowed::Same) => "same entry",
        Some(Allowed::Service) => "shared service",
        None => "-",
    }
}
