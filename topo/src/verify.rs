//! Verification of routing tables, by walking them (never by trusting how they were built):
//!
//! * **Reachability**: for every destination leaf, every ECMP branch from every switch is
//!   followed; a (source leaf, destination leaf) pair is reachable only if *every* branch
//!   delivers. Host pairs are then counted per plane (a pair needs one common plane where
//!   both host links are up and the leaves reach each other). Pairs with no common plane
//!   (e.g. DeepSeek's one-NIC-per-plane layout, where cross-plane traffic is forwarded
//!   inside the server over NVLink) are reported separately, not as violations.
//! * **Loops**: a branch that revisits a switch in the same phase.
//! * **Up/down turns**: after a down (or global) hop, no up or global hop.
//! * **Deadlock freedom**: the channel dependency graph (directed links; an edge when a
//!   packet arriving on one may leave on the other at the switch between) must be acyclic
//!   (Dally & Seitz, IEEE Trans. Computers 1987); checked with Kahn's algorithm on the
//!   dependency bitsets. When it is cyclic, the channels Kahn could not order go into a
//!   `petgraph` graph: its strongly connected components (Tarjan) count the channels on
//!   cycles, and A* inside the smallest component gives one shortest cycle, reported as
//!   channels (link + direction) and the switches on it, so a user can see where.
//! * **Lanes** ([`verify_lanes`]): pairs that [`crate::lanes::route_around`] put on a lane
//!   ≥ 1 are walked without the up/down rule (their detours turn down-up), and the channel
//!   dependency graph is built and checked per lane, each from the switches that lane's
//!   pairs reach.
//! * **ECMP widths** (see [`WidthStats`]).

use crate::lanes::Lanes;
use crate::model::*;
use crate::routing::{LOCAL, NO_ROUTE, Routes, WidthStats};

const MAX_EXAMPLES: usize = 20;

/// A violation found on a (switch, destination leaf) entry.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
pub struct EntryIssue {
    /// Switch where it shows.
    pub switch: NodeId,
    /// Destination leaf.
    pub dest_leaf: NodeId,
}

/// Result of [`verify`].
#[derive(Debug, Clone, serde::Serialize)]
pub struct VerifyReport {
    /// Hosts (NICs).
    pub hosts: u64,
    /// Ordered host pairs that share at least one plane.
    pub pairs_with_common_plane: u64,
    /// Ordered host pairs without a common plane (not a violation).
    pub pairs_without_common_plane: u64,
    /// Pairs (sharing a plane) that reach each other.
    pub reachable_pairs: u64,
    /// Pairs (sharing a plane) that do not.
    pub unreachable_pairs: u64,
    /// Of those, pairs still physically connected in a shared plane (over live links):
    /// they have a path, just no up*/down* one.
    pub unreachable_no_updown: u64,
    /// Of those, pairs with no live path at all in any shared plane (disconnected).
    pub unreachable_disconnected: u64,
    /// Some unreachable pairs `(src, dst)`.
    pub unreachable_examples: Vec<(NodeId, NodeId)>,
    /// Host pairs (sharing a plane) whose only routes are on a lane ≥ 1: no up*/down* path,
    /// routed around on a further lane (0 without lanes).
    pub pairs_on_extra_lanes: u64,
    /// Lanes the tables use (1: up*/down* only).
    pub lanes_used: u8,
    /// (source leaf, destination leaf) pairs walked on lanes ≥ 1.
    pub lane_leaf_pairs: u64,
    /// Hosts cut off entirely (every host link down, e.g. their only leaf failed).
    pub isolated_hosts: Vec<NodeId>,
    /// Destination hosts, not isolated, that some non-isolated source sharing a plane
    /// cannot reach.
    pub unreachable_hosts: Vec<NodeId>,
    /// (source leaf, destination leaf) pairs checked, over all planes.
    pub leaf_pairs: u64,
    /// Entries where a branch loops.
    pub loops: u64,
    /// Entries where a branch turns up after going down.
    pub updown_violations: u64,
    /// Entries reached by traffic that have no next hop (black holes).
    pub black_holes: u64,
    /// Example entries for each kind.
    pub loop_examples: Vec<EntryIssue>,
    /// Example entries.
    pub updown_examples: Vec<EntryIssue>,
    /// Example entries.
    pub black_hole_examples: Vec<EntryIssue>,
    /// Channels (directed links) in the dependency graph.
    pub cdg_channels: u64,
    /// Dependencies.
    pub cdg_edges: u64,
    /// Whether the channel dependency graph is acyclic.
    pub cdg_acyclic: bool,
    /// Channels that lie on some dependency cycle (in a strongly connected component of
    /// more than one channel); 0 when acyclic.
    pub cdg_cyclic_channels: u64,
    /// One shortest dependency cycle (from the smallest strongly connected component):
    /// each channel's packets may wait for the next one's, the last for the first.
    /// Empty when acyclic.
    pub cdg_cycle: Vec<Channel>,
    /// Lane of [`Self::cdg_cycle`].
    pub cdg_cycle_lane: u8,
    /// The dependency graph of each lane (lane 0 first); the `cdg_*` totals above are over
    /// all lanes (channels: lane 0's).
    pub lanes: Vec<LaneCdg>,
    /// ECMP widths.
    pub ecmp: WidthStats,
}

/// One lane's channel dependency graph.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct LaneCdg {
    /// The lane.
    pub lane: u8,
    /// Dependencies.
    pub edges: u64,
    /// Acyclic?
    pub acyclic: bool,
    /// Channels on cycles.
    pub cyclic_channels: u64,
}

impl VerifyReport {
    /// True when nothing is violated.
    pub fn ok(&self) -> bool {
        self.unreachable_pairs == 0
            && self.loops == 0
            && self.updown_violations == 0
            && self.black_holes == 0
            && self.cdg_acyclic
    }
}

/// A channel: a link used in one direction, `from` port `port` to `to`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
pub struct Channel {
    /// Sending node.
    pub from: NodeId,
    /// Port on `from`.
    pub port: Port,
    /// Receiving node.
    pub to: NodeId,
    /// The link.
    pub link: LinkId,
}

const UNSEEN: u8 = 0;
const BUSY: u8 = 1;
const GOOD: u8 = 2;
const BAD: u8 = 3;

#[derive(Clone, Copy, PartialEq, Eq)]
enum Fault {
    Loop,
    UpDown,
    Hole,
}

struct Walk<'a> {
    f: &'a Fabric,
    r: &'a Routes,
    /// Down-up turns allowed (a pair on a lane ≥ 1): only loops and holes are faults.
    turns: bool,
    first: u32,
    d: NodeId,
    state: Vec<u8>,
    faults: Vec<(Fault, NodeId)>,
    /// Per port slot of the plane's switches (from `slot0`): the peer, its tier and
    /// whether the link is up, read together.
    hops: Vec<Hop>,
    slot0: usize,
}

/// A port as a walk needs it.
#[derive(Clone, Copy)]
struct Hop {
    peer: NodeId,
    tier: u8,
    live: bool,
}

/// The [`Hop`]s of the switches `sw`, indexed by port slot from the first one's.
fn plane_hops(f: &Fabric, r: &Routes, sw: std::ops::Range<u32>) -> (Vec<Hop>, usize) {
    let slot0 = f.port_off[sw.start as usize] as usize;
    let hops = sw
        .flat_map(|v| {
            let v = NodeId(v);
            (0..f.degree(v) as Port).map(move |p| {
                let peer = f.peer(v, p);
                Hop {
                    peer,
                    tier: f.tier(peer),
                    live: r.link_is_up(f.port_link(v, p)),
                }
            })
        })
        .collect();
    (hops, slot0)
}

impl Walk<'_> {
    /// phase 0: may still go up; 1: down only.
    fn visit(&mut self, v: NodeId, phase: u8) -> bool {
        if v == self.d {
            return true;
        }
        let si = ((v.0 - self.first) * 2 + phase as u32) as usize;
        match self.state[si] {
            GOOD => return true,
            BAD => return false,
            BUSY => {
                self.faults.push((Fault::Loop, v));
                return false;
            }
            _ => {}
        }
        self.state[si] = BUSY;
        let e = self.r.entry(v, self.d);
        let mut ok = true;
        if e == NO_ROUTE || e == LOCAL {
            // At the source leaf this is plain unreachability; deeper it is a black hole.
            if !(self.f.tier(v) == TIER_LEAF && phase == 0) {
                self.faults.push((Fault::Hole, v));
            }
            ok = false;
        } else {
            let t = self.f.tier(v);
            let off = self.f.port_off[v.idx()] as usize - self.slot0;
            for &p in self.r.groups().get(e) {
                let Hop {
                    peer: w,
                    tier: wt,
                    live,
                } = self.hops[off + p as usize];
                if !live || wt == TIER_HOST {
                    self.faults.push((Fault::Hole, v));
                    ok = false;
                    continue;
                }
                let next_phase = if self.turns {
                    0
                } else if wt > t {
                    if phase == 1 {
                        self.faults.push((Fault::UpDown, v));
                        ok = false;
                        continue;
                    }
                    0
                } else {
                    if wt == t && phase == 1 {
                        self.faults.push((Fault::UpDown, v));
                        ok = false;
                        continue;
                    }
                    1
                };
                // Settled states answer without a call (most branches, once a destination's
                // first few sources are walked).
                if w != self.d {
                    match self.state[((w.0 - self.first) * 2 + next_phase as u32) as usize] {
                        GOOD => continue,
                        BAD => {
                            ok = false;
                            continue;
                        }
                        _ => {}
                    }
                }
                if !self.visit(w, next_phase) {
                    ok = false;
                }
            }
        }
        self.state[si] = if ok { GOOD } else { BAD };
        ok
    }
}

/// Verifies the tables of every plane, every pair on lane 0 (up*/down*).
pub fn verify(f: &Fabric, r: &Routes) -> VerifyReport {
    verify_lanes(f, r, &Lanes::none())
}

/// Verifies the tables with each leaf pair on its lane (see the module docs).
pub fn verify_lanes(f: &Fabric, r: &Routes, lanes: &Lanes) -> VerifyReport {
    let np = f.num_planes();
    let mut rep = empty_report(f, r);
    verify_leaf_pairs(f, r, lanes, np, &mut rep);
    rep
}

/// A report with nothing counted yet.
fn empty_report(f: &Fabric, r: &Routes) -> VerifyReport {
    VerifyReport {
        hosts: f.num_hosts() as u64,
        pairs_with_common_plane: 0,
        pairs_without_common_plane: 0,
        reachable_pairs: 0,
        unreachable_pairs: 0,
        unreachable_no_updown: 0,
        unreachable_disconnected: 0,
        unreachable_examples: Vec::new(),
        isolated_hosts: Vec::new(),
        unreachable_hosts: Vec::new(),
        leaf_pairs: 0,
        loops: 0,
        updown_violations: 0,
        black_holes: 0,
        loop_examples: Vec::new(),
        updown_examples: Vec::new(),
        black_hole_examples: Vec::new(),
        cdg_channels: 0,
        cdg_edges: 0,
        cdg_acyclic: true,
        cdg_cyclic_channels: 0,
        cdg_cycle: Vec::new(),
        cdg_cycle_lane: 0,
        lanes: Vec::new(),
        pairs_on_extra_lanes: 0,
        lanes_used: 1,
        lane_leaf_pairs: 0,
        ecmp: r.width_stats(),
    }
}

/// The channel-dependency check alone, as [`verify`] runs it: `(channels, edges,
/// acyclic)`. For the benchmark that compares it with petgraph (`examples/cdg_petgraph.rs`).
#[doc(hidden)]
pub fn cdg_check(f: &Fabric, r: &Routes) -> (u64, u64, bool) {
    let c = cdg(f, r, None);
    (c.channels, c.edges, c.acyclic)
}

/// The same check with the graph materialised in petgraph and `toposort`: the
/// alternative the hand-written one is measured against. Dependencies are deduplicated
/// with the same per-channel bitsets, so the two differ only in the graph (explicit edges
/// in petgraph vs enumerated on the fly) and the topological sort.
#[doc(hidden)]
pub fn cdg_check_petgraph(f: &Fabric, r: &Routes) -> (u64, u64, bool) {
    let nslots = f.port_off[f.num_nodes()] as usize;
    let words = f.max_degree().div_ceil(64).max(1);
    let slot = |n: NodeId, p: Port| f.port_off[n.idx()] as usize + p as usize;
    // bits[channel (u, port)] = the out ports of w = peer(u, port) it may wait for.
    let mut bits = vec![0u64; nslots * words];
    for_each_dependency(f, r, None, |u, port, _, _, outs| {
        let base = slot(u, port) * words;
        for &o in outs {
            bits[base + o as usize / 64] |= 1 << (o % 64);
        }
    });
    let mut g = petgraph::graph::DiGraph::<(), ()>::with_capacity(nslots, 0);
    for _ in 0..nslots {
        g.add_node(());
    }
    for n in 0..f.num_nodes() as u32 {
        let n = NodeId(n);
        for port in 0..f.degree(n) as Port {
            let a = slot(n, port);
            let w = f.peer(n, port);
            for wi in 0..words {
                let mut b = bits[a * words + wi];
                while b != 0 {
                    let o = (wi * 64 + b.trailing_zeros() as usize) as Port;
                    b &= b - 1;
                    g.add_edge((a as u32).into(), (slot(w, o) as u32).into(), ());
                }
            }
        }
    }
    let acyclic = petgraph::algo::toposort(&g, None).is_ok();
    (nslots as u64, g.edge_count() as u64, acyclic)
}

/// Leaf-pair reachability, loops, up/down turns, black holes, host pairs and the CDG.
fn verify_leaf_pairs(f: &Fabric, r: &Routes, lanes: &Lanes, np: usize, rep: &mut VerifyReport) {
    // Leaf-pair reachability per plane: bad[(src li, dst li)] listed.
    let mut bad_pairs: Vec<Vec<(u32, u32)>> = vec![Vec::new(); np];
    for (pi, p) in f.planes().iter().enumerate() {
        let sw = p.switches();
        let leaves = p.leaves();
        let (hops, slot0) = plane_hops(f, r, sw.clone());
        let new_walk = |turns| Walk {
            f,
            r,
            turns,
            first: sw.start,
            d: NodeId(0),
            state: vec![UNSEEN; sw.len() * 2],
            faults: Vec::new(),
            hops: hops.clone(),
            slot0,
        };
        // Lane 0 (up*/down*) and the further lanes (down-up turns allowed).
        let mut walks = [new_walk(false), new_walk(true)];
        for d in leaves.clone() {
            for w in &mut walks {
                w.d = NodeId(d);
                w.state.fill(UNSEEN);
                w.faults.clear();
            }
            for s in leaves.clone() {
                if s == d {
                    continue;
                }
                rep.leaf_pairs += 1;
                let extra = lanes.lane(NodeId(s), NodeId(d)) > 0;
                rep.lane_leaf_pairs += extra as u64;
                if !walks[extra as usize].visit(NodeId(s), 0) {
                    bad_pairs[pi].push((s - leaves.start, d - leaves.start));
                }
            }
            let mut faults: Vec<(Fault, NodeId)> = walks
                .iter()
                .flat_map(|w| w.faults.iter().copied())
                .collect();
            faults.sort_by_key(|&(k, n)| (k as u8, n));
            faults.dedup();
            for &(k, n) in &faults {
                let issue = EntryIssue {
                    switch: n,
                    dest_leaf: NodeId(d),
                };
                let (count, ex) = match k {
                    Fault::Loop => (&mut rep.loops, &mut rep.loop_examples),
                    Fault::UpDown => (&mut rep.updown_violations, &mut rep.updown_examples),
                    Fault::Hole => (&mut rep.black_holes, &mut rep.black_hole_examples),
                };
                *count += 1;
                if ex.len() < MAX_EXAMPLES {
                    ex.push(issue);
                }
            }
        }
    }
    host_pairs(f, r, lanes, &bad_pairs, rep);
    lane_cdgs(f, r, lanes, rep);
}

/// The dependency graph of every lane, into the report.
fn lane_cdgs(f: &Fabric, r: &Routes, lanes: &Lanes, rep: &mut VerifyReport) {
    rep.lanes_used = lanes.used.max(1);
    for lane in 0..rep.lanes_used {
        let c = cdg(f, r, (!lanes.is_empty()).then_some((lanes, lane)));
        if lane == 0 {
            rep.cdg_channels = c.channels;
        }
        rep.cdg_edges += c.edges;
        if !c.acyclic && rep.cdg_acyclic {
            rep.cdg_cycle = c.cycle;
            rep.cdg_cycle_lane = lane;
        }
        rep.cdg_acyclic &= c.acyclic;
        rep.cdg_cyclic_channels += c.cyclic_channels;
        rep.lanes.push(LaneCdg {
            lane,
            edges: c.edges,
            acyclic: c.acyclic,
            cyclic_channels: c.cyclic_channels,
        });
    }
}

/// Counts host pairs from the leaf-pair results.
fn host_pairs(
    f: &Fabric,
    r: &Routes,
    lanes: &Lanes,
    bad_pairs: &[Vec<(u32, u32)>],
    rep: &mut VerifyReport,
) {
    let np = f.num_planes();
    let nh = f.num_hosts();
    // Pairs sharing a plane, by plane-mask histogram.
    let mut hist: std::collections::HashMap<u64, u64> = Default::default();
    for h in f.hosts() {
        let m = f.host_planes(h).fold(0u64, |m, p| m | 1 << p);
        *hist.entry(m).or_default() += 1;
    }
    let mut share = 0u64;
    for (&m1, &c1) in &hist {
        for (&m2, &c2) in &hist {
            if m1 & m2 != 0 {
                share += c1 * c2;
            }
        }
        if m1 != 0 {
            share -= c1; // (a, a)
        }
    }
    rep.pairs_with_common_plane = share;
    rep.pairs_without_common_plane = (nh as u64) * (nh as u64).saturating_sub(1) - share;
    // Candidate unreachable pairs: under failing leaf pairs, and involving a down host link.
    let mut hosts_on: Vec<Vec<Vec<NodeId>>> = Vec::with_capacity(np);
    for (pi, p) in f.planes().iter().enumerate() {
        let mut v = vec![Vec::new(); p.leaves().len()];
        for h in f.hosts() {
            if let Some(a) = f.attachment(h, pi as u16) {
                v[(a.leaf.0 - p.leaves().start) as usize].push(h);
            }
        }
        hosts_on.push(v);
    }
    let mut cand: std::collections::HashSet<(NodeId, NodeId)> = Default::default();
    let bad_set: Vec<std::collections::HashSet<(u32, u32)>> = bad_pairs
        .iter()
        .map(|l| l.iter().copied().collect())
        .collect();
    let reaches = |a: NodeId, b: NodeId| {
        (0..np as u16).any(|p| {
            let (Some(x), Some(y)) = (f.attachment(a, p), f.attachment(b, p)) else {
                return false;
            };
            let l0 = f.plane_info(p).leaves().start;
            r.link_is_up(x.link)
                && r.link_is_up(y.link)
                && (x.leaf == y.leaf
                    || !bad_set[p as usize].contains(&(x.leaf.0 - l0, y.leaf.0 - l0)))
        })
    };
    let check = |a: NodeId, b: NodeId, cand: &mut std::collections::HashSet<(NodeId, NodeId)>| {
        if a != b && !reaches(a, b) && f.host_planes(a).any(|p| f.attachment(b, p).is_some()) {
            cand.insert((a, b));
        }
    };
    for (pi, list) in bad_pairs.iter().enumerate() {
        for &(ls, ld) in list {
            for &a in &hosts_on[pi][ls as usize] {
                for &b in &hosts_on[pi][ld as usize] {
                    check(a, b, &mut cand);
                }
            }
        }
    }
    let down_hosts: Vec<NodeId> = r
        .failed_links()
        .map(|l| f.link(l).a)
        .filter(|&a| f.is_host(a))
        .collect();
    for a in down_hosts {
        for b in f.hosts() {
            check(a, b, &mut cand);
            check(b, a, &mut cand);
        }
    }
    rep.unreachable_pairs = cand.len() as u64;
    rep.pairs_on_extra_lanes = extra_lane_pairs(f, r, lanes, &bad_set);
    let comp = Components::new(f, r);
    rep.unreachable_disconnected = cand
        .iter()
        .filter(|&&(a, b)| !comp.connected(f, r, a, b))
        .count() as u64;
    rep.unreachable_no_updown = rep.unreachable_pairs - rep.unreachable_disconnected;
    rep.reachable_pairs = share - rep.unreachable_pairs;
    let isolated: Vec<NodeId> = f
        .hosts()
        .filter(|&h| {
            let mut any = false;
            let mut live = false;
            for p in 0..np as u16 {
                if let Some(a) = f.attachment(h, p) {
                    any = true;
                    live |= r.link_is_up(a.link);
                }
            }
            any && !live
        })
        .collect();
    let is_isolated = |h: NodeId| isolated.binary_search(&h).is_ok();
    let mut ex: Vec<_> = cand.iter().copied().collect();
    ex.sort_unstable();
    let mut dsts: Vec<NodeId> = ex
        .iter()
        .filter(|p| !is_isolated(p.0) && !is_isolated(p.1))
        .map(|p| p.1)
        .collect();
    dsts.sort_unstable();
    dsts.dedup();
    rep.unreachable_hosts = dsts;
    rep.isolated_hosts = isolated;
    ex.truncate(MAX_EXAMPLES);
    rep.unreachable_examples = ex;
}

/// Host pairs routed only on lanes ≥ 1: under a leaf pair on a further lane that delivers,
/// with no shared plane where they reach each other on lane 0.
fn extra_lane_pairs(
    f: &Fabric,
    r: &Routes,
    lanes: &Lanes,
    bad_set: &[std::collections::HashSet<(u32, u32)>],
) -> u64 {
    if lanes.is_empty() {
        return 0;
    }
    let mut on_leaf: std::collections::HashMap<NodeId, Vec<NodeId>> = Default::default();
    for h in f.hosts() {
        for p in f.host_planes(h) {
            let a = f
                .attachment(h, p)
                .expect("host_planes lists attached planes");
            if r.link_is_up(a.link) {
                on_leaf.entry(a.leaf).or_default().push(h);
            }
        }
    }
    let good = |p: u16, x: NodeId, y: NodeId| {
        let l0 = f.plane_info(p).leaves().start;
        !bad_set[p as usize].contains(&(x.0 - l0, y.0 - l0))
    };
    let on_lane0 = |a: NodeId, b: NodeId| {
        f.host_planes(a).any(|p| {
            let (Some(x), Some(y)) = (f.attachment(a, p), f.attachment(b, p)) else {
                return false;
            };
            r.link_is_up(x.link)
                && r.link_is_up(y.link)
                && (x.leaf == y.leaf
                    || (good(p, x.leaf, y.leaf) && lanes.lane(x.leaf, y.leaf) == 0))
        })
    };
    let mut pairs: std::collections::HashSet<(NodeId, NodeId)> = Default::default();
    for &(s, d, _) in lanes.pairs() {
        let Some(p) = f.plane(s) else { continue };
        if !good(p, s, d) {
            continue;
        }
        let none = Vec::new();
        for &a in on_leaf.get(&s).unwrap_or(&none) {
            for &b in on_leaf.get(&d).unwrap_or(&none) {
                if a != b && !on_lane0(a, b) {
                    pairs.insert((a, b));
                }
            }
        }
    }
    pairs.len() as u64
}

/// Connected components of the live switch graph (petgraph union-find over live
/// switch–switch links; they never leave a plane).
struct Components(petgraph::unionfind::UnionFind<u32>);

impl Components {
    fn new(f: &Fabric, r: &Routes) -> Components {
        let mut uf = petgraph::unionfind::UnionFind::new(f.num_nodes());
        for (i, l) in f.links().iter().enumerate() {
            if !f.is_host(l.a) && r.link_is_up(LinkId(i as u32)) {
                uf.union(l.a.0, l.b.0);
            }
        }
        Components(uf)
    }

    /// Whether hosts `a` and `b` have a live path in some shared plane (both host links up,
    /// their leaves in one component); forwarding never crosses a host.
    fn connected(&self, f: &Fabric, r: &Routes, a: NodeId, b: NodeId) -> bool {
        f.host_planes(a).any(|p| {
            let (Some(x), Some(y)) = (f.attachment(a, p), f.attachment(b, p)) else {
                return false;
            };
            r.link_is_up(x.link) && r.link_is_up(y.link) && self.0.equiv(x.leaf.0, y.leaf.0)
        })
    }
}

/// Every channel dependency the tables create, per destination leaf: a packet on the
/// channel `(u, port)` toward `d` arrives at `w` on `in_port` and may wait for any of `outs`,
/// `w`'s next hops toward `d`. Called as `visit(u, port, w, in_port, outs)`; repeats are not
/// removed (callers keep bitsets). `lane: None` takes every entry; `Some((lanes, l))` only
/// the switches that the pairs on lane `l` reach from their source leaves.
fn for_each_dependency(
    f: &Fabric,
    r: &Routes,
    lane: Option<(&Lanes, u8)>,
    mut visit: impl FnMut(NodeId, Port, NodeId, Port, &[Port]),
) {
    let mut reach = Vec::new();
    let mut stack = Vec::new();
    for p in f.planes() {
        let sw = p.switches();
        for d in p.leaves() {
            let d = NodeId(d);
            if let Some((lanes, l)) = lane {
                reached(
                    f,
                    r,
                    p,
                    d,
                    |s| lanes.lane(s, d) == l,
                    &mut reach,
                    &mut stack,
                );
            }
            for u in sw.clone() {
                if lane.is_some() && !reach[(u - sw.start) as usize] {
                    continue;
                }
                let u = NodeId(u);
                let e = r.entry(u, d);
                if e == NO_ROUTE || e == LOCAL {
                    continue;
                }
                for &port in r.groups().get(e) {
                    let w = f.peer(u, port);
                    if f.is_host(w) || w == d {
                        continue;
                    }
                    let ew = r.entry(w, d);
                    if ew == NO_ROUTE || ew == LOCAL {
                        continue;
                    }
                    let in_port = f.link(f.port_link(u, port)).other(u).1;
                    visit(u, port, w, in_port, r.groups().get(ew));
                }
            }
        }
    }
}

/// A peer switch, its row of entries, where the channel's bitset starts and its words.
type NextRow<'a> = (NodeId, &'a [u32], usize, usize);

/// The dependencies of every entry (what [`for_each_dependency`] gives with `lane: None`)
/// as bitsets `dep[woff[w] + in_port * words(w)]` over `w`'s out ports, filled row by row:
/// for each switch `u` and destination leaf `d`, every member `p` of `u`'s group toward `d`
/// adds `w = peer(u, p)`'s whole group toward `d`, one OR per 64 ports from a mask made
/// once per distinct group. `u`'s row and its neighbours' rows stay in cache (a k=48
/// fat-tree: 2,880 rows of 1,152 entries, 63 M group members, 49 distinct groups).
fn every_dependency(f: &Fabric, r: &Routes, woff: &[usize], dep: &mut [u64]) {
    let words = f.max_degree().div_ceil(64).max(1);
    let groups = r.groups();
    let mut mask = vec![0u64; groups.len() * words];
    for g in 0..groups.len() {
        for &p in groups.get(g as u32) {
            mask[g * words + p as usize / 64] |= 1 << (p % 64);
        }
    }
    // Per port of `u`: the peer switch's row, and where the channel's bitset starts.
    let mut next: Vec<Option<NextRow<'_>>> = Vec::new();
    for pl in f.planes() {
        let leaf0 = pl.leaves().start;
        for u in pl.switches() {
            let u = NodeId(u);
            next.clear();
            next.extend((0..f.degree(u) as Port).map(|p| {
                let (w, in_port) = f.link(f.port_link(u, p)).other(u);
                let wn = f.degree(w).div_ceil(64);
                (!f.is_host(w)).then(|| {
                    (
                        w,
                        r.row_entries(w),
                        woff[w.idx()] + in_port as usize * wn,
                        wn,
                    )
                })
            }));
            for (li, &e) in r.row_entries(u).iter().enumerate() {
                if e == NO_ROUTE || e == LOCAL {
                    continue;
                }
                let d = NodeId(leaf0 + li as u32);
                for &p in groups.get(e) {
                    let Some((w, row, base, wn)) = next[p as usize] else {
                        continue;
                    };
                    let ew = row[li];
                    if w == d || ew == NO_ROUTE || ew == LOCAL {
                        continue;
                    }
                    let m = &mask[ew as usize * words..][..wn];
                    for (x, &y) in dep[base..base + wn].iter_mut().zip(m) {
                        *x |= y;
                    }
                }
            }
        }
    }
}

/// Marks in `reach` (indexed from the plane's first switch) the switches that the tables
/// lead to from the source leaves `from` selects, toward leaf `d`.
fn reached(
    f: &Fabric,
    r: &Routes,
    p: &PlaneInfo,
    d: NodeId,
    from: impl Fn(NodeId) -> bool,
    reach: &mut Vec<bool>,
    stack: &mut Vec<NodeId>,
) {
    let first = p.switches().start;
    reach.clear();
    reach.resize(p.switches().len(), false);
    stack.clear();
    stack.extend(p.leaves().map(NodeId).filter(|&s| s != d && from(s)));
    while let Some(u) = stack.pop() {
        let i = (u.0 - first) as usize;
        if reach[i] {
            continue;
        }
        reach[i] = true;
        let e = r.entry(u, d);
        if e == NO_ROUTE || e == LOCAL {
            continue;
        }
        for &port in r.groups().get(e) {
            let w = f.peer(u, port);
            if !f.is_host(w) && !reach[(w.0 - first) as usize] {
                stack.push(w);
            }
        }
    }
}

/// One channel dependency graph checked.
struct CdgCheck {
    channels: u64,
    edges: u64,
    acyclic: bool,
    cyclic_channels: u64,
    cycle: Vec<Channel>,
}

/// Builds the channel dependency graph from the tables (of every entry, or of one lane)
/// and checks it for cycles.
fn cdg(f: &Fabric, r: &Routes, lane: Option<(&Lanes, u8)>) -> CdgCheck {
    // Channel id: port slot (node, port) of the *sending* end = port_off[node] + port.
    let nslots = f.port_off[f.num_nodes()] as usize;
    let words_of = |n: NodeId| f.degree(n).div_ceil(64);
    // dep[slot_in at w] -> bitset over w's out ports; slot_in indexed by w's port slot.
    let mut woff = vec![0usize; f.num_nodes() + 1];
    for n in 0..f.num_nodes() {
        let nn = NodeId(n as u32);
        woff[n + 1] = woff[n]
            + if f.is_host(nn) {
                0
            } else {
                f.degree(nn) * words_of(nn)
            };
    }
    let mut dep = vec![0u64; woff[f.num_nodes()]];
    match lane {
        None => every_dependency(f, r, &woff, &mut dep),
        Some(_) => for_each_dependency(f, r, lane, |_, _, w, in_port, outs| {
            let wn = words_of(w);
            let base = woff[w.idx()] + in_port as usize * wn;
            for &o in outs {
                dep[base + o as usize / 64] |= 1 << (o % 64);
            }
        }),
    }
    // Kahn: channel c = (u, port) slot; edges c -> (w, o).
    let slot = |n: NodeId, p: Port| f.port_off[n.idx()] as usize + p as usize;
    let mut indeg = vec![0u32; nslots];
    let mut edges = 0u64;
    let for_each_edge = |c_node: NodeId, c_port: Port, out: &mut dyn FnMut(usize)| {
        let w = f.peer(c_node, c_port);
        if f.is_host(w) {
            return;
        }
        let in_port = f.link(f.port_link(c_node, c_port)).other(c_node).1 as usize;
        let wn = words_of(w);
        let base = woff[w.idx()] + in_port * wn;
        for wi in 0..wn {
            let mut bits = dep[base + wi];
            while bits != 0 {
                let b = bits.trailing_zeros() as usize;
                bits &= bits - 1;
                out(slot(w, (wi * 64 + b) as Port));
            }
        }
    };
    for n in 0..f.num_nodes() as u32 {
        let n = NodeId(n);
        for p in 0..f.degree(n) as Port {
            for_each_edge(n, p, &mut |t| {
                indeg[t] += 1;
                edges += 1;
            });
        }
    }
    let mut owner = vec![(NodeId(0), 0 as Port); nslots];
    for n in 0..f.num_nodes() as u32 {
        let n = NodeId(n);
        for p in 0..f.degree(n) as Port {
            owner[slot(n, p)] = (n, p);
        }
    }
    let mut queue: Vec<usize> = (0..nslots).filter(|&c| indeg[c] == 0).collect();
    let mut done = 0usize;
    while let Some(c) = queue.pop() {
        done += 1;
        let (n, p) = owner[c];
        for_each_edge(n, p, &mut |t| {
            indeg[t] -= 1;
            if indeg[t] == 0 {
                queue.push(t);
            }
        });
    }
    let mut c = CdgCheck {
        channels: nslots as u64,
        edges,
        acyclic: done == nslots,
        cyclic_channels: 0,
        cycle: Vec::new(),
    };
    if !c.acyclic {
        // Channels Kahn could not order: the cycles and what hangs off them.
        let residual: Vec<usize> = (0..nslots).filter(|&c| indeg[c] > 0).collect();
        let (count, cycle) = find_cycle(&residual, |c, out| {
            let (n, p) = owner[c];
            for_each_edge(n, p, out)
        });
        c.cyclic_channels = count;
        c.cycle = cycle
            .into_iter()
            .map(|c| {
                let (from, port) = owner[c];
                Channel {
                    from,
                    port,
                    to: f.peer(from, port),
                    link: f.port_link(from, port),
                }
            })
            .collect();
    }
    c
}

/// Among `nodes` (of a directed graph given by `edges(v, out)`), the number of nodes on
/// cycles and one shortest cycle of the smallest strongly connected component, with petgraph:
/// Tarjan's SCC, then A* (unit costs) from a successor of the component's first node back
/// to it.
fn find_cycle(nodes: &[usize], edges: impl Fn(usize, &mut dyn FnMut(usize))) -> (u64, Vec<usize>) {
    use petgraph::graph::{DiGraph, NodeIndex};
    let index: std::collections::HashMap<usize, NodeIndex> = nodes
        .iter()
        .enumerate()
        .map(|(i, &c)| (c, NodeIndex::new(i)))
        .collect();
    let mut g: DiGraph<usize, ()> = DiGraph::with_capacity(nodes.len(), nodes.len() * 4);
    for &c in nodes {
        g.add_node(c);
    }
    for &c in nodes {
        edges(c, &mut |t| {
            if let Some(&ti) = index.get(&t) {
                g.add_edge(index[&c], ti, ());
            }
        });
    }
    let sccs: Vec<Vec<NodeIndex>> = petgraph::algo::tarjan_scc(&g)
        .into_iter()
        .filter(|s| s.len() > 1)
        .collect();
    let count = sccs.iter().map(|s| s.len() as u64).sum();
    let Some(scc) = sccs.iter().min_by_key(|s| s.len()) else {
        return (count, Vec::new());
    };
    let inside: std::collections::HashSet<NodeIndex> = scc.iter().copied().collect();
    let start = scc[0];
    let best = g
        .neighbors(start)
        .filter(|n| inside.contains(n))
        .filter_map(|next| {
            // Every path between two nodes of a component stays inside it: no filter needed.
            petgraph::algo::astar(&g, next, |n| n == start, |_| 1u32, |_| 0)
        })
        .min_by_key(|(cost, _)| *cost);
    let cycle = best
        .map(|(_, path)| {
            // path: next … start; the cycle is start → next → … → (back to start).
            let mut v = vec![g[start]];
            v.extend(path[..path.len() - 1].iter().map(|&n| g[n]));
            v
        })
        .unwrap_or_default();
    (count, cycle)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::generators::*;
    use crate::units::Rate;

    #[test]
    fn fat_tree_verifies() {
        let f = fat_tree(8, Rate::gbps(100)).unwrap();
        let r = Routes::compute(&f);
        let v = verify(&f, &r);
        assert!(v.ok(), "{v:?}");
        assert_eq!(v.pairs_with_common_plane, 128 * 127);
        assert_eq!(v.reachable_pairs, 128 * 127);
        assert_eq!(v.leaf_pairs, 32 * 31);
        assert!(v.cdg_edges > 0);
    }

    #[test]
    fn dragonfly_plus_is_deadlock_free_with_minimal_routing() {
        let f = dragonfly_plus_spec(5, 2, 2, 2, 2, Rate::gbps(100))
            .build("x")
            .unwrap();
        let r = Routes::compute(&f);
        let v = verify(&f, &r);
        assert!(v.ok(), "{v:?}");
        assert_eq!(v.reachable_pairs, 20 * 19);
    }

    #[test]
    fn isolated_host_is_listed() {
        let f = fat_tree(4, Rate::gbps(100)).unwrap();
        let mut r = Routes::compute(&f);
        let a = f.attachment(NodeId(5), 0).unwrap();
        r.fail_links(&f, &[a.link]);
        let v = verify(&f, &r);
        assert!(!v.ok());
        assert_eq!(v.unreachable_pairs, 2 * 15);
        assert_eq!(
            (v.unreachable_disconnected, v.unreachable_no_updown),
            (30, 0)
        );
        assert_eq!(v.isolated_hosts, vec![NodeId(5)]);
        assert!(v.unreachable_hosts.is_empty());
        assert!(v.unreachable_examples.contains(&(NodeId(0), NodeId(5))));
    }

    #[test]
    fn corrupted_tables_are_caught() {
        let f = leaf_spine(2, 2, 1, Rate::gbps(100)).unwrap();
        let mut r = Routes::compute(&f);
        assert!(verify(&f, &r).ok());
        // spine0 sends leaf1's traffic back down to leaf0, which goes up again: a bounce.
        let (leaf0, leaf1, spine0) = (NodeId(2), NodeId(3), NodeId(4));
        r.set_entry(spine0, leaf1, &[0]);
        let v = verify(&f, &r);
        assert!(v.updown_violations > 0, "{v:?}");
        assert!(!v.cdg_acyclic);
        assert!(
            v.updown_examples
                .iter()
                .any(|e| e.switch == leaf0 && e.dest_leaf == leaf1)
        );
        assert!(!v.ok());
        // An empty group on the way is a black hole.
        let mut r = Routes::compute(&f);
        r.set_entry(spine0, leaf1, &[]);
        let v = verify(&f, &r);
        assert_eq!(v.black_holes, 1);
        assert_eq!(v.black_hole_examples[0].switch, spine0);
        assert_eq!(v.unreachable_pairs, 1);
        // No route at the source leaf is unreachability, not a black hole.
        let mut r = Routes::compute(&f);
        r.set_entry(leaf0, leaf1, &[]);
        let v = verify(&f, &r);
        assert_eq!((v.black_holes, v.unreachable_pairs), (0, 1));
    }

    /// Loop-free routes with down-up turns whose dependencies close a ring of six channels
    /// over three leaves and three spines: can deadlock under PFC. The report names the ring.
    #[test]
    fn dependency_cycle_is_located() {
        let f = leaf_spine(3, 3, 1, Rate::gbps(100)).unwrap();
        let mut r = Routes::compute(&f);
        let (leaf, spine) = (|i: u32| NodeId(3 + i), |i: u32| NodeId(6 + i));
        // Leaf port 1 + s goes to spine s; spine port l goes to leaf l.
        for (d, via) in [(2u32, [0u32, 1]), (0, [1, 2]), (1, [2, 0])] {
            // To leaf d: leaf via[0] → spine via[0] → leaf via[1] → spine via[1] → leaf d.
            let (a, b) = (via[0], via[1]);
            r.set_entry(leaf(a), leaf(d), &[1 + a as Port]);
            r.set_entry(spine(a), leaf(d), &[b as Port]);
            r.set_entry(leaf(b), leaf(d), &[1 + b as Port]);
            r.set_entry(spine(b), leaf(d), &[d as Port]);
        }
        let v = verify(&f, &r);
        assert_eq!(v.loops, 0, "{v:?}");
        assert!(!v.cdg_acyclic);
        assert_eq!(v.cdg_cyclic_channels, 6);
        let c = &v.cdg_cycle;
        assert_eq!(c.len(), 6, "{c:?}");
        for (i, ch) in c.iter().enumerate() {
            assert_eq!(ch.to, c[(i + 1) % c.len()].from, "a chain: {c:?}");
            assert_eq!(f.peer(ch.from, ch.port), ch.to);
        }
        let mut on: Vec<NodeId> = c.iter().map(|ch| ch.from).collect();
        on.sort();
        assert_eq!(on, (3..9).map(NodeId).collect::<Vec<_>>());
        // A healthy table has none.
        let v = verify(&f, &Routes::compute(&f));
        assert!(v.cdg_acyclic && v.cdg_cycle.is_empty() && v.cdg_cyclic_channels == 0);
    }

    #[test]
    fn partition_is_reported() {
        let f = leaf_spine(2, 1, 1, Rate::gbps(100)).unwrap();
        let r = Routes::compute(&f);
        let v = verify(&f, &r);
        assert!(v.ok());
        // Partition: fail the only spine's link to leaf 1.
        let mut r2 = r.clone();
        let leaf1 = NodeId(3);
        r2.fail_links(&f, &[f.port_link(leaf1, 1)]);
        let v = verify(&f, &r2);
        assert_eq!(v.unreachable_pairs, 2);
        assert_eq!(v.unreachable_disconnected, 2);
        assert!(!v.ok());
    }

    #[test]
    fn no_updown_path_is_told_apart_from_disconnected() {
        // pod0-leaf0 keeps only its uplink to pod0-agg0, which loses both core links:
        // leaf0 → agg0 → leaf1 → agg1 → core is a live path, but it turns up after down.
        let f = fat_tree(4, Rate::gbps(100)).unwrap();
        let mut r = Routes::compute(&f);
        let set =
            crate::failures::resolve(&f, &crate::lanes::STRANDED_K4.map(String::from)).unwrap();
        r.fail_links(&f, &set.links);
        let v = verify(&f, &r);
        // 2 hosts of leaf0 ⇄ 12 hosts in other pods, both directions.
        assert_eq!(v.unreachable_pairs, 2 * 12 * 2, "{v:?}");
        assert_eq!(v.unreachable_no_updown, 48);
        assert_eq!(v.unreachable_disconnected, 0);
    }
}
