//! Deadlock-free routes where up*/down* has none: detours on further lanes, the way
//! OpenSM's DFSSSP (Domke, Hoefler, Nagel, IPDPS 2011) and Nue (Domke et al., HPDC 2016)
//! keep arbitrary routes deadlock-free with virtual lanes.
//!
//! After failures, a (source leaf, destination leaf) pair of a plane can have a live path
//! but no up*/down* one: every live way turns up after going down. Up*/down* leaves such a
//! pair unrouted (as OpenSM's `updn` does); routing it on the same lane can close a cycle
//! of channel dependencies, i.e. a PFC / credit deadlock (OpenSM's `minhop` does that).
//! [`route_around`] routes them and keeps every lane's channel dependency graph acyclic:
//!
//! 1. **Routes.** Per destination leaf `d`, every switch with an up*/down* entry keeps it,
//!    with `D(v)` = its table distance. A switch without one gets
//!    `D(v) = 1 + min D(w)` over its live switch neighbours (a shortest path over the live
//!    graph to a switch that has an up*/down* route, then that route). Switches on the way
//!    from a stranded source leaf get an entry: every live neighbour with `D(w) = D(v) − 1`
//!    (ECMP). `D` falls by one per hop, so no branch loops. Only those switches are written
//!    ([`Routes::detours`]); every up*/down* entry is left as it was.
//! 2. **Lanes.** Lane 0 carries every up*/down* pair, as before (acyclic by the up*/down*
//!    rule). The stranded pairs, in (plane, destination, source) order, go greedily on lane 1
//!    while its dependency graph stays acyclic, else on lane 2, …: a pair's dependencies
//!    (channel → channel at every switch of every branch, up*/down* tail included) are
//!    added to the lane's graph, a petgraph [`Acyclic`] that keeps a topological order
//!    up to date (Pearce–Kelly) and refuses an edge that would close a cycle; on a refusal
//!    the pair's edges are removed again and the next lane is tried. More lanes than
//!    `max_lanes` is an error ([`crate::Error::LanesExhausted`]), and the detours are removed
//!    again.
//!
//! A lane is a virtual lane (InfiniBand: the pair's path SL, mapped SL→VL) or a lossless
//! traffic class (RoCE: a PFC priority the sender's DSCP selects); forwarding tables are per
//! destination and carry no lane, so the sender (or the subnet manager's path records)
//! puts a pair on its lane. [`crate::verify::verify_lanes`] walks every pair on its lane and
//! checks each lane's channel dependency graph.

use std::collections::{HashMap, HashSet};

use petgraph::acyclic::Acyclic;
use petgraph::data::Build;
use petgraph::graph::{DiGraph, NodeIndex};

use crate::model::*;
use crate::routing::{LOCAL, NO_ROUTE, Routes};
use crate::{Error, Result};

/// Most lanes [`route_around`] may use: eight PFC priorities on Ethernet; eight data VLs on
/// most InfiniBand HCAs and switches (the architecture allows 15).
pub const MAX_LANES: u8 = 8;

/// A failure set that strands a leaf of a k=4 fat-tree (`generators::fat_tree(4, …)`):
/// `pod0-leaf0` keeps only its uplink to `pod0-agg0`, which has lost both core links, so
/// `leaf0 → agg0 → leaf1 → agg1 → core` (a down-up turn) is the only way out of the pod, and
/// the only way in. 2 hosts ⇄ 12 hosts of other pods, both ways: 48 host pairs. For examples
/// and tests (`failures::resolve(&f, &STRANDED_K4.map(String::from))`).
pub const STRANDED_K4: [&str; 3] = [
    "pod0-leaf0--pod0-agg1",
    "pod0-agg0--core0-0",
    "pod0-agg0--core0-1",
];

/// The lane of every (source leaf, destination leaf) pair that is not on lane 0.
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize)]
pub struct Lanes {
    /// `(source leaf, destination leaf, lane)`, lane ≥ 1, sorted by the pair.
    pairs: Vec<(NodeId, NodeId, u8)>,
    /// Lanes in use (1: up*/down* only).
    pub used: u8,
    /// Leaf pairs on each lane from 1 (`per_lane[0]` is lane 1).
    pub per_lane: Vec<u64>,
    /// Detour entries written into the tables.
    pub entries_added: usize,
    /// Dependencies on each lane from 1.
    pub edges_per_lane: Vec<u64>,
}

impl Lanes {
    /// No extra lanes: every pair on lane 0.
    pub fn none() -> Lanes {
        Lanes {
            used: 1,
            ..Lanes::default()
        }
    }

    /// Lane of the pair `src_leaf → dst_leaf` (0 unless placed on a further lane).
    pub fn lane(&self, src_leaf: NodeId, dst_leaf: NodeId) -> u8 {
        match self
            .pairs
            .binary_search_by_key(&(src_leaf, dst_leaf), |&(s, d, _)| (s, d))
        {
            Ok(i) => self.pairs[i].2,
            Err(_) => 0,
        }
    }

    /// Every pair on a lane ≥ 1, as `(source leaf, destination leaf, lane)`.
    pub fn pairs(&self) -> &[(NodeId, NodeId, u8)] {
        &self.pairs
    }

    /// True when every pair is on lane 0.
    pub fn is_empty(&self) -> bool {
        self.pairs.is_empty()
    }
}

/// One lane's channel dependency graph, kept acyclic.
struct LaneGraph {
    g: Acyclic<DiGraph<(), ()>>,
    node: HashMap<u32, NodeIndex>,
    edges: HashSet<(u32, u32)>,
}

impl LaneGraph {
    fn new() -> LaneGraph {
        LaneGraph {
            g: Acyclic::new(),
            node: HashMap::new(),
            edges: HashSet::new(),
        }
    }

    fn node(&mut self, c: u32) -> NodeIndex {
        let g = &mut self.g;
        *self.node.entry(c).or_insert_with(|| g.add_node(()))
    }

    /// Adds the dependencies if the graph stays acyclic; otherwise leaves it unchanged.
    fn try_add(&mut self, deps: &[(u32, u32)]) -> bool {
        let mut added = Vec::new();
        for &(a, b) in deps {
            if self.edges.contains(&(a, b)) {
                continue;
            }
            let (na, nb) = (self.node(a), self.node(b));
            match self.g.try_add_edge(na, nb, ()) {
                Ok(e) => {
                    self.edges.insert((a, b));
                    added.push((e, (a, b)));
                }
                Err(_) => {
                    // Newest first: petgraph's edge removal swaps in the last edge.
                    for (e, ab) in added.into_iter().rev() {
                        self.g.remove_edge(e);
                        self.edges.remove(&ab);
                    }
                    return false;
                }
            }
        }
        true
    }
}

/// Scratch state of one plane.
struct Scratch {
    first: u32,
    d: Vec<u16>,
    needed: Vec<bool>,
    open: Vec<u32>,
    stack: Vec<u32>,
}

const FAR: u16 = u16::MAX;

/// Routes every stranded leaf pair (live path, no up*/down* path) on lanes
/// `1..max_lanes` (see the module docs); `max_lanes` 1 routes nothing. On
/// [`Error::LanesExhausted`] the tables are left without detours.
pub fn route_around(f: &Fabric, r: &mut Routes, max_lanes: u8) -> Result<Lanes> {
    r.clear_detours();
    let mut lanes = Lanes::none();
    if max_lanes <= 1 {
        return Ok(lanes);
    }
    let max_lanes = max_lanes.min(MAX_LANES);
    let mut graphs: Vec<LaneGraph> = Vec::new();
    let mut stranded = 0usize;
    let mut unplaced = 0usize;
    let mut deps = Vec::new();
    for p in f.planes() {
        let sw = p.switches();
        let mut s = Scratch {
            first: sw.start,
            d: vec![FAR; sw.len()],
            needed: vec![false; sw.len()],
            open: Vec::new(),
            stack: Vec::new(),
        };
        for d in p.leaves() {
            let d = NodeId(d);
            let sources = detours_to(f, r, p, d, &mut s);
            for src in sources {
                stranded += 1;
                pair_dependencies(f, r, src, d, &mut deps);
                let lane = (0..graphs.len())
                    .find(|&i| graphs[i].try_add(&deps))
                    .or_else(|| {
                        (graphs.len() + 1 < max_lanes as usize).then(|| {
                            let mut g = LaneGraph::new();
                            let ok = g.try_add(&deps);
                            debug_assert!(ok, "one pair's routes are loop-free");
                            graphs.push(g);
                            graphs.len() - 1
                        })
                    });
                match lane {
                    Some(i) => lanes.pairs.push((src, d, i as u8 + 1)),
                    None => unplaced += 1,
                }
            }
        }
    }
    if unplaced > 0 {
        r.clear_detours();
        return Err(Error::LanesExhausted {
            max: max_lanes,
            pairs: stranded,
            unplaced,
        });
    }
    lanes.pairs.sort_unstable();
    lanes.used = graphs.len() as u8 + 1;
    lanes.per_lane = vec![0; graphs.len()];
    for &(_, _, l) in &lanes.pairs {
        lanes.per_lane[l as usize - 1] += 1;
    }
    lanes.edges_per_lane = graphs.iter().map(|g| g.edges.len() as u64).collect();
    lanes.entries_added = r.detours().len();
    Ok(lanes)
}

/// Live switch neighbours of `v`: `(port, peer)`.
fn live_switch_ports<'a>(
    f: &'a Fabric,
    r: &'a Routes,
    v: NodeId,
) -> impl Iterator<Item = (Port, NodeId)> + 'a {
    f.ports(v)
        .enumerate()
        .filter(move |&(_, (w, l))| !f.is_host(w) && r.link_is_up(l))
        .map(|(k, (w, _))| (k as Port, w))
}

/// Writes the detour entries toward leaf `d` and returns the stranded source leaves it
/// routed (those with a live path), in id order.
fn detours_to(
    f: &Fabric,
    r: &mut Routes,
    p: &PlaneInfo,
    d: NodeId,
    s: &mut Scratch,
) -> Vec<NodeId> {
    let first = s.first;
    let at = |v: NodeId| (v.0 - first) as usize;
    // Stranded sources: leaves with no entry toward d.
    let stranded: Vec<NodeId> = p
        .leaves()
        .map(NodeId)
        .filter(|&l| l != d && r.entry(l, d) == NO_ROUTE)
        .collect();
    if stranded.is_empty() {
        return Vec::new();
    }
    // D: table distance where there is an entry; relaxed over the live graph elsewhere.
    s.open.clear();
    for v in p.switches() {
        let v = NodeId(v);
        let e = r.entry(v, d);
        s.d[at(v)] = match e {
            LOCAL => 0,
            NO_ROUTE => {
                s.open.push(v.0);
                FAR
            }
            _ => r.distance(v, d).map_or(FAR, u16::from),
        };
    }
    loop {
        let mut changed = false;
        for &v in &s.open {
            let v = NodeId(v);
            let best = live_switch_ports(f, r, v)
                .map(|(_, w)| s.d[at(w)].saturating_add(1))
                .min()
                .unwrap_or(FAR);
            if best < s.d[at(v)] {
                s.d[at(v)] = best;
                changed = true;
            }
        }
        if !changed {
            break;
        }
    }
    // Switches without an entry on the way from a stranded source: write their entries.
    let routed: Vec<NodeId> = stranded
        .into_iter()
        .filter(|&l| s.d[at(l)] != FAR)
        .collect();
    s.stack.clear();
    s.stack.extend(routed.iter().map(|l| l.0));
    let mut ports = Vec::new();
    while let Some(v) = s.stack.pop() {
        let v = NodeId(v);
        if s.needed[at(v)] {
            continue;
        }
        s.needed[at(v)] = true;
        let dv = s.d[at(v)];
        ports.clear();
        for (k, w) in live_switch_ports(f, r, v) {
            if s.d[at(w)].saturating_add(1) == dv {
                ports.push(k);
                if r.entry(w, d) == NO_ROUTE && !s.needed[at(w)] {
                    s.stack.push(w.0);
                }
            }
        }
        r.set_detour(v, d, &ports, dv.min(u8::MAX as u16 - 1) as u8);
    }
    for &v in &s.open {
        s.needed[(v - first) as usize] = false;
    }
    routed
}

/// The channel dependencies of every branch from leaf `src` to leaf `d` along the tables:
/// `(channel, next channel)`, a channel being the sending port's slot.
fn pair_dependencies(f: &Fabric, r: &Routes, src: NodeId, d: NodeId, out: &mut Vec<(u32, u32)>) {
    out.clear();
    let slot = |n: NodeId, p: Port| f.port_off[n.idx()] + p as u32;
    let mut seen = HashSet::new();
    let mut stack = vec![src];
    while let Some(u) = stack.pop() {
        if !seen.insert(u) {
            continue;
        }
        let e = r.entry(u, d);
        if e == NO_ROUTE || e == LOCAL {
            continue;
        }
        for &port in r.groups().get(e) {
            let w = f.peer(u, port);
            if w == d || f.is_host(w) {
                continue;
            }
            let ew = r.entry(w, d);
            if ew == NO_ROUTE || ew == LOCAL {
                continue;
            }
            for &o in r.groups().get(ew) {
                out.push((slot(u, port), slot(w, o)));
            }
            stack.push(w);
        }
    }
    out.sort_unstable();
    out.dedup();
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::generators::*;
    use crate::units::Rate;

    /// [`STRANDED_K4`] applied.
    fn stranded_k4() -> (Fabric, Routes) {
        let f = fat_tree(4, Rate::gbps(100)).unwrap();
        let mut r = Routes::compute(&f);
        let set = crate::failures::resolve(&f, &STRANDED_K4.map(String::from)).unwrap();
        r.fail_links(&f, &set.links);
        (f, r)
    }

    #[test]
    fn stranded_pairs_go_on_lane_one() {
        let (f, mut r) = stranded_k4();
        let idx = f.name_index();
        let leaf0 = idx["pod0-leaf0"];
        let leaf1 = idx["pod0-leaf1"];
        let far = idx["pod1-leaf0"];
        assert_eq!(r.entry(leaf0, far), NO_ROUTE);
        let lanes = route_around(&f, &mut r, MAX_LANES).unwrap();
        // leaf0 ⇄ the 6 leaves of other pods: the way in is as blocked as the way out
        // (pod0-agg1 cannot go down to leaf0, pod0-agg0 has no core link).
        assert_eq!(lanes.pairs().len(), 12, "{lanes:?}");
        assert_eq!(lanes.used, 2);
        assert_eq!(lanes.lane(leaf0, far), 1);
        assert_eq!(lanes.lane(far, leaf0), 1);
        assert_eq!(lanes.lane(leaf1, far), 0);
        // leaf0 goes up to agg0, which goes down to leaf1 (the down-up turn).
        let agg0 = idx["pod0-agg0"];
        let up = r.next_hops(leaf0, NodeId(15));
        assert_eq!(up.len(), 1);
        assert_eq!(f.peer(leaf0, up[0]), agg0);
        let down = r.next_hops(agg0, NodeId(15));
        assert_eq!(f.peer(agg0, down[0]), leaf1);
        assert_eq!(r.distance(leaf0, far), Some(6));
        // Toward the 6 leaves, the detours are leaf0's and agg0's entries; toward leaf0,
        // those of the switches on the way from the other pods.
        assert!(lanes.entries_added > 12);
        assert_eq!(lanes.entries_added, r.detours().len());
        let v = crate::verify::verify_lanes(&f, &r, &lanes);
        assert!(v.ok(), "{v:?}");
        assert_eq!(v.lanes.len(), 2);
        // 2 hosts of leaf0 ⇄ 12 hosts in other pods, both directions.
        assert_eq!(v.pairs_on_extra_lanes, 2 * 12 * 2);
        assert_eq!(v.unreachable_pairs, 0);
        // A failure clears the detours (and lists them as changed).
        let rep = r.fail_links(&f, &[]);
        assert_eq!(rep.changed.len(), lanes.entries_added);
        assert_eq!(r.entry(leaf0, far), NO_ROUTE);
    }

    #[test]
    fn one_lane_routes_nothing() {
        let (f, mut r) = stranded_k4();
        let lanes = route_around(&f, &mut r, 1).unwrap();
        assert!(lanes.is_empty());
        assert!(r.detours().is_empty());
        assert!(!crate::verify::verify(&f, &r).ok());
    }

    #[test]
    fn healthy_fabric_needs_no_lane() {
        let f = fat_tree(8, Rate::gbps(100)).unwrap();
        let mut r = Routes::compute(&f);
        let lanes = route_around(&f, &mut r, MAX_LANES).unwrap();
        assert_eq!((lanes.used, lanes.entries_added), (1, 0));
    }
}
