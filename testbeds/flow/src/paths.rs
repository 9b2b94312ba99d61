//! Flow paths over the routing tables, stored in one arena.
//!
//! A flow's path is a list of `(directed link, weight)` entries: a directed link is
//! `2 × link + d` (`d = 0` from the link's lower end `a` toward `b`, `1` back), the weight
//! is the share of the flow's rate that crosses it (1 for a single path; fractions when a
//! flow is sprayed). All paths of an evaluation live in one [`PathSet`] (CSR: offsets +
//! flat entries), so the filling loop walks contiguous memory.
//!
//! How a flow picks its way ([`LoadBalance`]):
//! * **ECMP** — one path; the source NIC port (plane) and every switch's next hop are chosen
//!   by a hash of (seed, flow id, switch), as a switch hashes a flow's 5-tuple.
//! * **Spray** — the flow is split evenly over the usable planes of its source and, at every
//!   switch, evenly over the live next hops: what per-packet spraying converges to.
//! * **Entropy** — oblivious packet spraying as NICs and the packet simulator do it: the
//!   flow cycles through `evs` entropy values, each hashed at every switch to one next hop,
//!   so a path carries the share of values that land on it — close to, but not exactly,
//!   an even split (the difference matters: see docs/planner.md, faithfulness).
//! * **Adaptive** — one path per flow, flows placed in order; each takes, among its
//!   up*/down* shortest paths, one whose most loaded link carries the fewest flows placed so
//!   far (ties by hash): adaptive routing with an ideal view of the load, the upper bound of
//!   what flowlet or adaptive routing can reach for long flows.

use std::borrow::Borrow;
use std::collections::HashMap;

use topo::{Fabric, LinkId, NodeId, Routes};

/// Load-balancing mode.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum LoadBalance {
    /// Flow-hashed ECMP with a seed.
    Ecmp {
        /// Hash seed.
        seed: u64,
    },
    /// Even split over usable planes and live next hops (packet spraying).
    Spray,
    /// Packet spraying over a finite set of entropy values.
    Entropy {
        /// Entropy values per flow (1 to 4,096).
        evs: u16,
        /// Hash seed.
        seed: u64,
    },
    /// Least-loaded next hop per flow, flows placed in order.
    Adaptive {
        /// Seed for breaking ties.
        seed: u64,
    },
}

impl LoadBalance {
    /// Parses `ecmp`, `spray`, `entropy` (128 values) or `adaptive` (with the given seed).
    pub fn parse(s: &str, seed: u64) -> Option<LoadBalance> {
        match s {
            "ecmp" => Some(LoadBalance::Ecmp { seed }),
            "spray" => Some(LoadBalance::Spray),
            "entropy" => Some(LoadBalance::Entropy { evs: 128, seed }),
            "adaptive" => Some(LoadBalance::Adaptive { seed }),
            _ => None,
        }
    }

    /// What the mode models, for reports: `spray` and `adaptive` are ideals (upper bounds
    /// of what real spraying and adaptive routing reach), `ecmp` and `entropy` model the
    /// hashes as NICs and switches do.
    pub fn describe(&self) -> String {
        match self {
            LoadBalance::Ecmp { .. } => "ECMP (flow hash)".into(),
            LoadBalance::Spray => "spray, ideal even split (an upper bound)".into(),
            LoadBalance::Entropy { evs, .. } => {
                format!("spray over {evs} hashed entropy values")
            }
            LoadBalance::Adaptive { .. } => {
                "adaptive, least-loaded path per flow (per-packet adaptive routing is nearer spray)"
                    .into()
            }
        }
    }
}

/// Directed link id (see the module docs).
#[inline]
pub fn dlink(f: &Fabric, l: LinkId, from: NodeId) -> u32 {
    2 * l.0 + u32::from(f.link(l).a != from)
}

/// One flow between two host NICs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Flow {
    /// Source NIC.
    pub src: NodeId,
    /// Destination NIC.
    pub dst: NodeId,
    /// Id mixed into the ECMP hash (distinguishes parallel flows of one pair).
    pub id: u64,
}

/// Paths of a set of flows in one arena.
#[derive(Debug, Clone, Default)]
pub struct PathSet {
    /// `entries[off[i]..off[i + 1]]` are flow `i`'s entries.
    pub off: Vec<u32>,
    /// Directed link of each entry.
    pub link: Vec<u32>,
    /// Share of the flow's rate on that link.
    pub weight: Vec<f64>,
}

impl PathSet {
    /// A set with no flows.
    pub fn new() -> PathSet {
        PathSet {
            off: vec![0],
            ..Default::default()
        }
    }
    /// Adds a flow with these (directed link, weight) entries.
    pub fn push<E: Borrow<(u32, f64)>>(&mut self, entries: impl IntoIterator<Item = E>) {
        for e in entries {
            let (d, w) = *e.borrow();
            self.link.push(d);
            self.weight.push(w);
        }
        self.off.push(self.link.len() as u32);
    }
    /// A set of flows, each given by its (directed link, weight) entries.
    pub fn from_paths<P, E>(paths: impl IntoIterator<Item = P>) -> PathSet
    where
        P: IntoIterator<Item = E>,
        E: Borrow<(u32, f64)>,
    {
        let mut ps = PathSet::new();
        for p in paths {
            ps.push(p);
        }
        ps
    }
    /// Number of flows.
    pub fn len(&self) -> usize {
        self.off.len().saturating_sub(1)
    }
    /// True when there are no flows.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
    /// Entries of flow `i`.
    #[inline]
    pub fn entries(&self, i: usize) -> (&[u32], &[f64]) {
        let r = self.off[i] as usize..self.off[i + 1] as usize;
        (&self.link[r.clone()], &self.weight[r])
    }
    /// True when flow `i` has no path (its endpoints cannot reach each other).
    pub fn unroutable(&self, i: usize) -> bool {
        self.off[i] == self.off[i + 1]
    }
}

#[inline]
fn mix(mut z: u64) -> u64 {
    z = z.wrapping_add(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// The key of entropy value `ev` of the flow with hash `h`; each switch mixes it with its
/// own id to pick a next hop, so the key itself needs no mixing.
#[inline]
fn ev_key(h: u64, ev: u64) -> u64 {
    h ^ (ev + 1).wrapping_mul(0xa24b_aed4_963e_e407)
}

/// `h` mapped onto `0..k` by its high bits (a multiply instead of a division).
#[inline]
fn pick(h: u64, k: usize) -> usize {
    ((h as u128 * k as u128) >> 64) as usize
}

fn flow_hash(seed: u64, fl: &Flow) -> u64 {
    mix(seed ^ mix(((fl.src.0 as u64) << 32 | fl.dst.0 as u64) ^ mix(fl.id)))
}

/// Most hops a path may take before it is declared looping (a verified up*/down* fabric
/// needs at most 6 switch hops plus the two host links).
const MAX_HOPS: usize = 16;

/// Builds the paths of `flows` under `routes` with `lb`. `dload` (adaptive mode) is
/// scratch of one entry per directed link.
pub fn build(f: &Fabric, routes: &Routes, flows: &[Flow], lb: LoadBalance) -> PathSet {
    let mut ps = PathSet {
        off: Vec::with_capacity(flows.len() + 1),
        link: Vec::with_capacity(flows.len() * 6),
        weight: Vec::with_capacity(flows.len() * 6),
    };
    ps.off.push(0);
    let mut spray = SprayScratch::default();
    let mut load = match lb {
        LoadBalance::Adaptive { .. } => vec![0f64; 2 * f.num_links()],
        _ => Vec::new(),
    };
    for fl in flows {
        let start = ps.link.len();
        let ok = match lb {
            LoadBalance::Ecmp { seed } => single(f, routes, fl, flow_hash(seed, fl), None, &mut ps),
            LoadBalance::Adaptive { seed } => {
                single(f, routes, fl, flow_hash(seed, fl), Some(&mut load), &mut ps)
            }
            LoadBalance::Spray => sprayed(f, routes, fl, &mut spray, &mut ps),
            LoadBalance::Entropy { evs, seed } => entropy(
                f,
                routes,
                fl,
                flow_hash(seed, fl),
                evs.clamp(1, 4096),
                &mut spray,
                &mut ps,
            ),
        };
        if !ok {
            ps.link.truncate(start);
            ps.weight.truncate(start);
        }
        ps.off.push(ps.link.len() as u32);
    }
    ps
}

/// One path: plane by hash, next hops by hash (ECMP) or least load (adaptive).
fn single(
    f: &Fabric,
    routes: &Routes,
    fl: &Flow,
    h: u64,
    mut load: Option<&mut Vec<f64>>,
    ps: &mut PathSet,
) -> bool {
    if fl.src == fl.dst {
        return false;
    }
    let Some((plane, _)) = pick_plane(routes, fl, h, load.as_deref(), f) else {
        return false;
    };
    let att = f
        .attachment(fl.src, plane)
        .expect("usable plane has an attachment");
    let push = |ps: &mut PathSet, d: u32, load: &mut Option<&mut Vec<f64>>| {
        ps.link.push(d);
        ps.weight.push(1.0);
        if let Some(l) = load.as_deref_mut() {
            l[d as usize] += 1.0;
        }
    };
    push(ps, dlink(f, att.link, fl.src), &mut load);
    let mut at = att.leaf;
    let mut memo = HashMap::new();
    for hop in 0..MAX_HOPS {
        let nh = routes.next_hops(at, fl.dst);
        if nh.is_empty() {
            return false;
        }
        let port = match load.as_deref() {
            None => nh[(mix(h ^ (at.0 as u64) << 8 ^ hop as u64) % nh.len() as u64) as usize],
            Some(l) => {
                memo.clear();
                least_loaded(f, routes, at, fl.dst, l, h, &mut memo).1
            }
        };
        let link = f.port_link(at, port);
        push(ps, dlink(f, link, at), &mut load);
        at = f.peer(at, port);
        if at == fl.dst {
            return true;
        }
        if f.is_host(at) {
            return false;
        }
    }
    false
}

/// Smallest bottleneck load (flows) from `at` to `dst` over the routing DAG, and the port
/// to take; memoised per node.
fn least_loaded(
    f: &Fabric,
    routes: &Routes,
    at: NodeId,
    dst: NodeId,
    load: &[f64],
    h: u64,
    memo: &mut HashMap<u32, (f64, u16)>,
) -> (f64, u16) {
    if let Some(&m) = memo.get(&at.0) {
        return m;
    }
    let nh = routes.next_hops(at, dst);
    let mut best = (f64::INFINITY, u16::MAX);
    if !nh.is_empty() {
        let start = (mix(h ^ at.0 as u64) % nh.len() as u64) as usize;
        for i in 0..nh.len() {
            let p = nh[(start + i) % nh.len()];
            let d = dlink(f, f.port_link(at, p), at) as usize;
            let peer = f.peer(at, p);
            let rest = if peer == dst {
                0.0
            } else if f.is_host(peer) {
                f64::INFINITY
            } else {
                least_loaded(f, routes, peer, dst, load, h, memo).0
            };
            let b = load[d].max(rest);
            if b < best.0 || best.1 == u16::MAX {
                best = (b, p);
            }
        }
    }
    memo.insert(at.0, best);
    best
}

fn pick_plane(
    routes: &Routes,
    fl: &Flow,
    h: u64,
    load: Option<&Vec<f64>>,
    f: &Fabric,
) -> Option<(u16, u16)> {
    match load {
        None => routes.pick_host_port(fl.src, fl.dst, h),
        Some(l) => routes.host_ports(fl.src, fl.dst).min_by(|a, b| {
            let la = l[dlink(f, f.attachment(fl.src, a.0).unwrap().link, fl.src) as usize];
            let lb = l[dlink(f, f.attachment(fl.src, b.0).unwrap().link, fl.src) as usize];
            la.total_cmp(&lb)
        }),
    }
}

#[derive(Debug, Default)]
struct SprayScratch {
    cur: Vec<(u32, f64)>,
    next: Vec<(u32, f64)>,
    out: Vec<(u32, f64)>,
    /// Weight per directed link of the flow being built (entropy), and the links set.
    acc: Vec<f64>,
    acc_links: Vec<u32>,
    /// Entropy values' hashes, grouped by the node they are at.
    evh: Vec<u64>,
    /// Groups of values at a node: (node, first index into `evh`, count); this hop's and
    /// the next.
    groups: Vec<(u32, u32, u32)>,
    next_groups: Vec<(u32, u32, u32)>,
    /// Scratch of [`SprayScratch::split`].
    pick: Vec<u32>,
    count: Vec<u32>,
    fill: Vec<u32>,
    sorted: Vec<u64>,
}

/// The usable planes of a flow and the share of each (even), or `None` when it has none.
fn plane_shares(routes: &Routes, fl: &Flow) -> Option<(Vec<(u16, u16)>, f64)> {
    if fl.src == fl.dst {
        return None;
    }
    let planes: Vec<(u16, u16)> = routes.host_ports(fl.src, fl.dst).collect();
    let share = 1.0 / planes.len().max(1) as f64;
    (!planes.is_empty()).then_some((planes, share))
}

/// Fractions: even over usable planes, then even over live next hops at every switch,
/// merged per node level by level.
fn sprayed(f: &Fabric, routes: &Routes, fl: &Flow, s: &mut SprayScratch, ps: &mut PathSet) -> bool {
    let Some((planes, share)) = plane_shares(routes, fl) else {
        return false;
    };
    s.cur.clear();
    s.out.clear();
    for (p, _) in planes {
        let att = f
            .attachment(fl.src, p)
            .expect("usable plane has an attachment");
        s.out.push((dlink(f, att.link, fl.src), share));
        s.cur.push((att.leaf.0, share));
    }
    for _ in 0..MAX_HOPS {
        s.next.clear();
        for &(v, w) in &s.cur {
            let v = NodeId(v);
            let nh = routes.next_hops(v, fl.dst);
            if nh.is_empty() {
                return false;
            }
            let part = w / nh.len() as f64;
            for &p in nh {
                s.out.push((dlink(f, f.port_link(v, p), v), part));
                let peer = f.peer(v, p);
                if peer != fl.dst {
                    if f.is_host(peer) {
                        return false;
                    }
                    s.next.push((peer.0, part));
                }
            }
        }
        if s.next.is_empty() {
            s.out.sort_unstable_by_key(|e| e.0);
            merge_into(&s.out, ps);
            return true;
        }
        s.next.sort_unstable_by_key(|e| e.0);
        s.cur.clear();
        for &(v, w) in &s.next {
            match s.cur.last_mut() {
                Some(last) if last.0 == v => last.1 += w,
                _ => s.cur.push((v, w)),
            }
        }
    }
    false
}

/// Even over usable planes, then per entropy value one hashed path; weights merged.
fn entropy(
    f: &Fabric,
    routes: &Routes,
    fl: &Flow,
    h: u64,
    evs: u16,
    s: &mut SprayScratch,
    ps: &mut PathSet,
) -> bool {
    let Some((planes, share)) = plane_shares(routes, fl) else {
        return false;
    };
    // weights summed per directed link in a dense array (in path order, as a sort and
    // merge would add them), then emitted in link order
    s.acc.resize(2 * f.num_links(), 0.0);
    for &d in &s.acc_links {
        s.acc[d as usize] = 0.0;
    }
    s.acc_links.clear();
    let part = share / evs as f64;
    let ok = entropy_walks(f, routes, fl, h, evs, &planes, share, part, s);
    if ok {
        s.acc_links.sort_unstable();
        for &d in &s.acc_links {
            ps.link.push(d);
            ps.weight.push(s.acc[d as usize]);
        }
    }
    ok
}

/// The walks of [`entropy`]: per plane, every entropy value from the source's leaf to the
/// destination, weights into `s.acc`. The values travel in groups (a node and a run of
/// value hashes in `s.evh`): a node with one next hop moves its whole group at once, a
/// node with several splits it by each value's hash (the same choice a walk per value
/// would make).
#[allow(clippy::too_many_arguments)]
fn entropy_walks(
    f: &Fabric,
    routes: &Routes,
    fl: &Flow,
    h: u64,
    evs: u16,
    planes: &[(u16, u16)],
    share: f64,
    part: f64,
    s: &mut SprayScratch,
) -> bool {
    for &(p, _) in planes {
        let att = f
            .attachment(fl.src, p)
            .expect("usable plane has an attachment");
        s.add(dlink(f, att.link, fl.src), share);
        s.evh.clear();
        s.evh.extend((0..evs as u64).map(|ev| ev_key(h, ev)));
        s.groups.clear();
        s.groups.push((att.leaf.0, 0, evs as u32));
        for _ in 0..MAX_HOPS {
            if s.groups.is_empty() {
                break;
            }
            s.next_groups.clear();
            for gi in 0..s.groups.len() {
                let (v, first, len) = s.groups[gi];
                if !s.split(f, routes, fl, NodeId(v), first, len, part) {
                    return false;
                }
            }
            std::mem::swap(&mut s.groups, &mut s.next_groups);
        }
        if !s.groups.is_empty() {
            return false; // looping: more than MAX_HOPS
        }
    }
    true
}

impl SprayScratch {
    fn add(&mut self, d: u32, w: f64) {
        if self.acc[d as usize] == 0.0 {
            self.acc_links.push(d);
        }
        self.acc[d as usize] += w;
    }

    /// Moves the `len` entropy values at `s.evh[first..]`, sitting at `at`, one hop on:
    /// weights onto the links taken, groups for the next hop into `next_groups` (none for
    /// values that arrived). False when `at` has no route or a value reaches another host.
    #[allow(clippy::too_many_arguments)]
    fn split(
        &mut self,
        f: &Fabric,
        routes: &Routes,
        fl: &Flow,
        at: NodeId,
        first: u32,
        len: u32,
        part: f64,
    ) -> bool {
        let nh = routes.next_hops(at, fl.dst);
        if nh.is_empty() {
            return false;
        }
        let k = nh.len();
        if k == 1 {
            return self.hop(f, fl, at, nh[0], first, len, part);
        }
        // counting sort of the values by next-hop index
        self.count.clear();
        self.count.resize(k + 1, 0);
        self.pick.clear();
        let run = first as usize..(first + len) as usize;
        for &e in &self.evh[run.clone()] {
            let i = pick(mix(e ^ (at.0 as u64) << 8), k) as u32;
            self.pick.push(i);
            self.count[i as usize + 1] += 1;
        }
        for i in 0..k {
            self.count[i + 1] += self.count[i];
        }
        self.sorted.clear();
        self.sorted.resize(len as usize, 0);
        self.fill.clear();
        self.fill.extend_from_slice(&self.count[..k]);
        for (j, &i) in self.pick.iter().enumerate() {
            self.sorted[self.fill[i as usize] as usize] = self.evh[first as usize + j];
            self.fill[i as usize] += 1;
        }
        self.evh[run].copy_from_slice(&self.sorted);
        for (i, &port) in nh.iter().enumerate() {
            let n = self.count[i + 1] - self.count[i];
            if n > 0 && !self.hop(f, fl, at, port, first + self.count[i], n, part) {
                return false;
            }
        }
        true
    }

    /// The `n` values at `s.evh[first..]` leave `at` by `port`.
    #[allow(clippy::too_many_arguments)]
    fn hop(
        &mut self,
        f: &Fabric,
        fl: &Flow,
        at: NodeId,
        port: u16,
        first: u32,
        n: u32,
        part: f64,
    ) -> bool {
        self.add(dlink(f, f.port_link(at, port), at), n as f64 * part);
        let peer = f.peer(at, port);
        if peer == fl.dst {
            return true;
        }
        if f.is_host(peer) {
            return false;
        }
        self.next_groups.push((peer.0, first, n));
        true
    }
}

fn merge_into(sorted: &[(u32, f64)], ps: &mut PathSet) {
    let start = ps.link.len();
    for &(d, w) in sorted {
        if ps.link.len() > start && *ps.link.last().unwrap() == d {
            *ps.weight.last_mut().unwrap() += w;
        } else {
            ps.link.push(d);
            ps.weight.push(w);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use topo::{Rate, generators};

    #[test]
    fn ecmp_path_is_a_chain_and_spray_conserves_weight() {
        let f = generators::fat_tree(4, Rate::gbps(100)).unwrap();
        let r = Routes::compute(&f);
        let flows = [Flow {
            src: NodeId(0),
            dst: NodeId(15),
            id: 0,
        }];
        let e = build(&f, &r, &flows, LoadBalance::Ecmp { seed: 1 });
        assert_eq!(e.entries(0).0.len(), 6); // host, leaf-agg, agg-core, core-agg, agg-leaf, host
        let s = build(&f, &r, &flows, LoadBalance::Spray);
        let (links, w) = s.entries(0);
        // 1 + 2 + 4 + 4 + 2 + 1 directed links, each hop level carries weight 1 in total
        assert_eq!(links.len(), 14);
        assert!((w.iter().sum::<f64>() - 6.0).abs() < 1e-12);
        // entropy values: weights per hop level still sum to 1; one value = one path;
        // many values approach the even split
        let one = build(&f, &r, &flows, LoadBalance::Entropy { evs: 1, seed: 1 });
        assert_eq!(one.entries(0).0.len(), 6);
        let many = build(&f, &r, &flows, LoadBalance::Entropy { evs: 4096, seed: 1 });
        let (l, w) = many.entries(0);
        assert_eq!(l.len(), 14);
        assert!((w.iter().sum::<f64>() - 6.0).abs() < 1e-9);
        assert!(w.iter().all(|&x| x > 0.2), "{w:?}");
        let same = [Flow {
            src: NodeId(3),
            dst: NodeId(3),
            id: 0,
        }];
        assert!(build(&f, &r, &same, LoadBalance::Spray).unroutable(0));
    }

    /// The entropy split as one walk per value (how it was first written), for
    /// [`entropy_groups_equal_one_walk_per_value`].
    fn entropy_by_walks(
        f: &Fabric,
        routes: &Routes,
        fl: &Flow,
        h: u64,
        evs: u16,
    ) -> Vec<(u32, f64)> {
        let Some((planes, share)) = plane_shares(routes, fl) else {
            return Vec::new();
        };
        let part = share / evs as f64;
        let mut out: Vec<(u32, f64)> = Vec::new();
        for (p, _) in planes {
            let att = f.attachment(fl.src, p).unwrap();
            out.push((dlink(f, att.link, fl.src), share));
            for ev in 0..evs as u64 {
                let ev_hash = ev_key(h, ev);
                let mut at = att.leaf;
                for _ in 0..MAX_HOPS {
                    let nh = routes.next_hops(at, fl.dst);
                    if nh.is_empty() {
                        return Vec::new();
                    }
                    let port = nh[pick(mix(ev_hash ^ (at.0 as u64) << 8), nh.len())];
                    out.push((dlink(f, f.port_link(at, port), at), part));
                    at = f.peer(at, port);
                    if at == fl.dst {
                        break;
                    }
                }
            }
        }
        out.sort_by_key(|e| e.0);
        let mut merged: Vec<(u32, f64)> = Vec::new();
        for (d, w) in out {
            match merged.last_mut() {
                Some(last) if last.0 == d => last.1 += w,
                _ => merged.push((d, w)),
            }
        }
        merged
    }

    #[test]
    fn entropy_groups_equal_one_walk_per_value() {
        let mut fabrics = vec![generators::fat_tree(4, Rate::gbps(100)).unwrap()];
        let two = generators::multi_plane_spec(
            generators::leaf_spine_spec(4, 4, 4, 1, Rate::gbps(100)),
            2,
        );
        fabrics.push(two.build("two-plane").unwrap());
        for f in &fabrics {
            let mut r = Routes::compute(f);
            r.fail_links(f, &topo::failures::random_links(f, 3, 5));
            let hosts: Vec<NodeId> = f.hosts().collect();
            for (i, &a) in hosts.iter().enumerate() {
                let b = hosts[(i * 7 + 3) % hosts.len()];
                let fl = Flow {
                    src: a,
                    dst: b,
                    id: i as u64,
                };
                for evs in [1u16, 7, 128] {
                    let lb = LoadBalance::Entropy { evs, seed: 9 };
                    let got = build(f, &r, &[fl], lb);
                    let want = entropy_by_walks(f, &r, &fl, flow_hash(9, &fl), evs);
                    let (l, w) = got.entries(0);
                    assert_eq!(l.len(), want.len(), "{fl:?} evs {evs}");
                    for ((&d, &x), &(e, y)) in l.iter().zip(w).zip(&want) {
                        assert_eq!(d, e);
                        assert!((x - y).abs() <= 1e-12, "{fl:?} link {d}: {x} vs {y}");
                    }
                }
            }
        }
    }
}
