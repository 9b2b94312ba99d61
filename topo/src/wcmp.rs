//! Weighted ECMP: next-hop weights proportional to the capacity each next hop still
//! has toward a destination, so that after failures a switch sends less to the
//! neighbour that lost part of its way onward.
//!
//! The weight of next hop `p` of switch `s` toward destination leaf `d` is the rate of
//! its link times the number of live paths its neighbour still has toward `d` along
//! the ECMP tables:
//!
//! ```text
//! paths(d, d) = 1
//! paths(s, d) = Σ over next hops q of s toward d: paths(peer(q), d)
//! weight(s, d, p) ∝ rate(link p) × paths(peer(p), d)
//! ```
//!
//! (path-weighted ECMP as in WCMP, Zhou et al., "WCMP: Weighted Cost Multipathing for
//! Improving Fairness in Data Centers", EuroSys 2014 §3: a neighbour that lost part of
//! its way onward gets a share proportional to what it kept, so the links behind it
//! carry no more than the others). The tables are loop-free, so the recursion over the
//! next-hop DAG ends. Weights are divided by the group's greatest common divisor and, if
//! the largest is still above [`MAX_WEIGHT`] (the Linux kernel's limit), scaled to it
//! (rounded, at least 1). A healthy fat-tree with one link rate has no weighted entry.
//!
//! Example: on a k=4 fat-tree whose `pod0-agg0` lost one of its two core links, every
//! leaf of pod 0 reaches the other pods through `pod0-agg0` (1 core link left) and
//! `pod0-agg1` (2): weights 1 and 2.
//!
//! ```
//! use topo::{generators, Rate, Routes, NodeId, wcmp::Weights};
//! let f = generators::fat_tree(4, Rate::gbps(400)).unwrap();
//! let mut r = Routes::compute(&f);
//! assert!(Weights::compute(&f, &r).is_empty()); // healthy: every group equal
//! let names = f.name_index();
//! let agg0 = names["pod0-agg0"];
//! let core = (0..f.degree(agg0) as u16).map(|p| f.port_link(agg0, p))
//!     .find(|&l| f.tier(f.link(l).b) == 3).unwrap();
//! r.fail_links(&f, &[core]);
//! let w = Weights::compute(&f, &r);
//! let leaf0 = names["pod0-leaf0"];
//! let remote = names["pod1-leaf0"];
//! assert_eq!(w.get(leaf0, remote), Some(&[1, 2][..]));
//! ```

use crate::model::{Fabric, NodeId, PlaneKind};
use crate::routing::{LOCAL, NO_ROUTE, Routes};

/// What makes the switches of a tier alike for the weights: (up-link rate, distinct upper
/// switches, parallel links to each, distinct lower switches); `None` when a switch's
/// parallel links to its upper neighbours are not all as many or its up links differ in rate.
fn shape(f: &Fabric, s: NodeId) -> Option<(u64, usize, usize, usize)> {
    let t = f.tier(s);
    let mut up: Vec<(NodeId, u64)> = Vec::new();
    let mut down: Vec<NodeId> = Vec::new();
    for (peer, l) in f.ports(s) {
        match f.tier(peer) {
            pt if pt > t => up.push((peer, f.link(l).rate_bps)),
            pt if pt < t && !f.is_host(peer) => down.push(peer),
            _ => {}
        }
    }
    up.sort_unstable();
    down.sort_unstable();
    down.dedup();
    let rate = up.first().map_or(0, |u| u.1);
    if up.iter().any(|u| u.1 != rate) {
        return None;
    }
    let runs: Vec<usize> = up.chunk_by(|a, b| a.0 == b.0).map(<[_]>::len).collect();
    let m = runs.first().copied().unwrap_or(0);
    runs.iter()
        .all(|&x| x == m)
        .then_some((rate, runs.len(), m, down.len()))
}

/// Whether every switch of a tier (a range of switch ids) has the same [`shape`].
fn tier_alike(f: &Fabric, tier: &std::ops::Range<u32>) -> bool {
    let mut it = tier.clone().map(|s| shape(f, NodeId(s)));
    match it.next() {
        None => true,
        Some(None) => false,
        Some(first) => it.all(|x| x == first),
    }
}

/// The largest next-hop weight Linux accepts (`ip route … weight 1..=256`).
pub const MAX_WEIGHT: u32 = 256;

/// Next-hop weights of every ECMP entry whose next hops are not all equal; entries not
/// held here have weight 1 on every member.
#[derive(Debug, Clone, Default)]
pub struct Weights {
    /// Per plane: (first switch, first leaf, leaves, offset of each (switch, leaf)
    /// entry's weights in `w` or `NONE`; empty while the plane has no weighted entry).
    planes: Vec<(u32, u32, usize, Vec<u32>)>,
    /// Entries held.
    count: usize,
    /// Each entry's length followed by its weights, in group order.
    w: Vec<u32>,
}

#[cfg(test)]
const UNKNOWN: u64 = u64::MAX;
const NO_ROW: u32 = u32::MAX;
const NONE: u32 = u32::MAX;

impl Weights {
    /// Computes the weights of `r`'s ECMP tables on `f` (links down in `r` carry
    /// no path). The path counts of a plane are one `switches × leaves` matrix filled
    /// in order of distance to the destination (a next hop is one hop closer), row by
    /// row, so each pass reads the tables and the matrix in order; then one more pass
    /// turns the groups with unequal members into weights. Measured with
    /// `examples/wcmp_scale.rs`. Skipped (no weighted entry) when [`Self::uniform`] proves
    /// every group equal.
    pub fn compute(f: &Fabric, r: &Routes) -> Weights {
        if Self::uniform(f, r) {
            return Weights::layout(f);
        }
        Self::compute_all(f, r)
    }

    /// Whether no ECMP group of `r` can have unequal weights, without computing them: no
    /// switch–switch link down and no detour, every plane a Clos, and in every switch tier
    /// of a plane one rate on the up links, the same number of distinct upper and lower
    /// switch neighbours, and the same number of parallel links to each upper one. Then all
    /// switches of a tier are alike, every member of a group reaches the destination by as
    /// many paths of the same rates, and every weight is 1 (checked against
    /// [`Self::compute_all`] by a property test). O(links).
    pub fn uniform(f: &Fabric, r: &Routes) -> bool {
        let switch_link_down = r.failed_links().any(|l| !f.is_host(f.link(l).a));
        if switch_link_down || !r.detours().is_empty() {
            return false;
        }
        f.planes()
            .iter()
            .all(|p| p.kind == PlaneKind::Clos && p.tiers.iter().all(|t| tier_alike(f, t)))
    }

    /// [`Self::compute`] without the [`Self::uniform`] shortcut (for its test and benchmark).
    #[doc(hidden)]
    pub fn compute_all(f: &Fabric, r: &Routes) -> Weights {
        let mut out = Weights::layout(f);
        let groups = r.groups();
        let mut members: Vec<u64> = Vec::new();
        for p in f.planes() {
            let sw = p.switches();
            let leaves = p.leaves();
            let (ns, nl) = (sw.len(), leaves.len());
            // Per switch of the plane, per port: the neighbour's row (NO_ROW toward a
            // host or over a failed link) and the link's rate in Mb/s.
            let ports: Vec<Vec<(u32, u64)>> = sw
                .clone()
                .map(|s| {
                    let s = NodeId(s);
                    (0..f.degree(s) as u16)
                        .map(|port| {
                            let l = f.port_link(s, port);
                            let peer = f.peer(s, port);
                            let row = if r.link_is_up(l) && sw.contains(&peer.0) {
                                peer.0 - sw.start
                            } else {
                                NO_ROW
                            };
                            (row, (f.link(l).rate_bps / 1_000_000).max(1))
                        })
                        .collect()
                })
                .collect();
            let mut paths = vec![0u32; ns * nl];
            let mut max_d = 0u8;
            for si in 0..ns {
                let dist = r.row_distances(NodeId(sw.start + si as u32));
                for (di, &d) in dist.iter().enumerate() {
                    match d {
                        0 => paths[si * nl + di] = 1,
                        u8::MAX => {}
                        d => max_d = max_d.max(d),
                    }
                }
            }
            for h in 1..=max_d {
                for si in 0..ns {
                    let s = NodeId(sw.start + si as u32);
                    let dist = r.row_distances(s);
                    for (di, &e) in r.row_entries(s).iter().enumerate() {
                        if dist[di] != h || e == LOCAL || e == NO_ROUTE {
                            continue;
                        }
                        let mut n = 0u32;
                        for &port in groups.get(e) {
                            let peer = ports[si][usize::from(port)].0;
                            if peer != NO_ROW {
                                n = n.saturating_add(paths[peer as usize * nl + di]);
                            }
                        }
                        paths[si * nl + di] = n;
                    }
                }
            }
            for (si, my_ports) in ports.iter().enumerate() {
                let s = NodeId(sw.start + si as u32);
                for (di, &e) in r.row_entries(s).iter().enumerate() {
                    if e == LOCAL || e == NO_ROUTE || groups.get(e).len() < 2 {
                        continue;
                    }
                    members.clear();
                    members.extend(groups.get(e).iter().map(|&port| {
                        let (peer, mbps) = my_ports[usize::from(port)];
                        if peer == NO_ROW {
                            return 0;
                        }
                        mbps.saturating_mul(u64::from(paths[peer as usize * nl + di]))
                    }));
                    if members.windows(2).all(|m| m[0] == m[1]) {
                        continue;
                    }
                    if let Some(ws) = normalise(&members) {
                        out.insert(s, NodeId(leaves.start + di as u32), &ws);
                    }
                }
            }
        }
        out
    }

    /// The straightforward form of [`Self::compute`] (memoised recursion per
    /// destination): the oracle the fast form is tested against.
    #[cfg(test)]
    fn compute_recursive(f: &Fabric, r: &Routes) -> Weights {
        let mut out = Weights::layout(f);
        let mut cap: Vec<u64> = Vec::new();
        let mut members: Vec<u64> = Vec::new();
        for p in f.planes() {
            let sw = p.switches();
            cap.clear();
            cap.resize(sw.len(), UNKNOWN);
            for d in p.leaves() {
                cap.fill(UNKNOWN);
                let d = NodeId(d);
                for s in sw.clone() {
                    let s = NodeId(s);
                    let e = r.entry(s, d);
                    if e == LOCAL || e == NO_ROUTE {
                        continue;
                    }
                    members.clear();
                    for &port in r.groups().get(e) {
                        let l = f.port_link(s, port);
                        let peer = f.peer(s, port);
                        let n = paths(f, r, d, peer, sw.start, &mut cap);
                        let mbps = (f.link(l).rate_bps / 1_000_000).max(1);
                        members.push(mbps.saturating_mul(n));
                    }
                    if let Some(ws) = normalise(&members) {
                        out.insert(s, d, &ws);
                    }
                }
            }
        }
        out
    }

    /// No weighted entry yet, one (empty) index per plane of `f`.
    fn layout(f: &Fabric) -> Weights {
        Weights {
            planes: f
                .planes()
                .iter()
                .map(|p| {
                    (
                        p.switches().start,
                        p.leaves().start,
                        p.leaves().len(),
                        Vec::new(),
                    )
                })
                .collect(),
            ..Weights::default()
        }
    }

    /// The (plane, index) of (switch, leaf), if both are in one plane.
    fn slot(&self, switch: NodeId, leaf: NodeId) -> Option<(usize, usize)> {
        // Planes are in switch order: the last one starting at or below `switch`.
        let pi = self
            .planes
            .partition_point(|p| p.0 <= switch.0)
            .checked_sub(1)?;
        let (s0, l0, nl, _) = &self.planes[pi];
        let li = leaf.0.checked_sub(*l0)? as usize;
        (li < *nl).then(|| (pi, (switch.0 - s0) as usize * nl + li))
    }

    fn insert(&mut self, switch: NodeId, leaf: NodeId, ws: &[u32]) {
        let Some((pi, i)) = self.slot(switch, leaf) else {
            return;
        };
        let (_, _, nl, at) = &mut self.planes[pi];
        // Grown to the rows used so far (switches are inserted in increasing order).
        if i >= at.len() {
            at.resize((i / *nl + 1) * *nl, NONE);
        }
        at[i] = self.w.len() as u32;
        self.w.push(ws.len() as u32);
        self.w.extend_from_slice(ws);
        self.count += 1;
    }

    /// The weights of `switch` toward destination leaf `leaf`, one per member of its
    /// ECMP group in group order; `None` when they are all equal (or there is no group).
    pub fn get(&self, switch: NodeId, leaf: NodeId) -> Option<&[u32]> {
        let (pi, i) = self.slot(switch, leaf)?;
        let o = *self.planes[pi].3.get(i)?;
        if o == NONE {
            return None;
        }
        let o = o as usize;
        // Each entry is stored as its length followed by its weights.
        let n = self.w[o] as usize;
        Some(&self.w[o + 1..o + 1 + n])
    }

    /// Number of entries with unequal weights.
    pub fn len(&self) -> usize {
        self.count
    }

    /// True if every entry's next hops are equally weighted.
    pub fn is_empty(&self) -> bool {
        self.count == 0
    }
}

/// Live paths from `s` to leaf `d` along the tables (memoised in `memo`, indexed from
/// `first`; saturating).
#[cfg(test)]
fn paths(f: &Fabric, r: &Routes, d: NodeId, s: NodeId, first: u32, memo: &mut [u64]) -> u64 {
    if s == d {
        return 1;
    }
    if f.is_host(s) {
        return 0;
    }
    let i = (s.0 - first) as usize;
    if memo[i] != UNKNOWN {
        return memo[i];
    }
    // Mark as being computed (0) so a cycle in broken tables ends instead of recursing.
    memo[i] = 0;
    let e = r.entry(s, d);
    let mut n = 0u64;
    if e != NO_ROUTE && e != LOCAL {
        for &port in r.groups().get(e) {
            if r.link_is_up(f.port_link(s, port)) {
                n = n.saturating_add(paths(f, r, d, f.peer(s, port), first, memo));
            }
        }
    }
    let n = n.min(UNKNOWN - 1);
    memo[i] = n;
    n
}

fn gcd(mut a: u64, mut b: u64) -> u64 {
    while b != 0 {
        (a, b) = (b, a % b);
    }
    a
}

/// `members` reduced by their gcd and scaled into `1..=MAX_WEIGHT` (rounded, then
/// reduced again); `None` if they come out all equal.
fn normalise(members: &[u64]) -> Option<Vec<u32>> {
    let g = members.iter().fold(0, |g, &m| gcd(g, m)).max(1);
    let max = members.iter().max().copied().unwrap_or(1) / g;
    let mut ws: Vec<u32> = members
        .iter()
        .map(|&m| {
            let v = m / g;
            let w = if max <= u64::from(MAX_WEIGHT) {
                v
            } else {
                // Round to nearest; u128 so that huge rates cannot overflow.
                ((u128::from(v) * u128::from(MAX_WEIGHT) + u128::from(max) / 2) / u128::from(max))
                    as u64
            };
            w.clamp(1, u64::from(MAX_WEIGHT)) as u32
        })
        .collect();
    if ws.windows(2).all(|p| p[0] == p[1]) {
        return None;
    }
    let g = ws.iter().fold(0u64, |g, &w| gcd(g, w.into())).max(1) as u32;
    ws.iter_mut().for_each(|w| *w /= g);
    Some(ws)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::generators::fat_tree;
    use crate::units::Rate;
    use proptest::prelude::*;

    #[test]
    fn normalise_reduces_and_scales() {
        assert_eq!(normalise(&[400, 800, 1200]), Some(vec![1, 2, 3]));
        assert_eq!(normalise(&[1, 1000]), Some(vec![1, 256]));
        // A member with nothing onward keeps the minimum weight 1.
        assert_eq!(normalise(&[0, 7, 14]), Some(vec![1, 1, 2]));
        assert_eq!(normalise(&[5, 5]), None);
        // Scaling can make them equal (dropped) or leave a common factor (reduced).
        assert_eq!(normalise(&[1000, 1001]), None);
        assert_eq!(normalise(&[500, 1000, 1001]), Some(vec![1, 2, 2]));
    }

    #[test]
    fn a_failed_core_link_weights_the_pod_toward_the_other_agg() {
        let f = fat_tree(8, Rate::gbps(400)).unwrap();
        let mut r = Routes::compute(&f);
        assert!(Weights::compute(&f, &r).is_empty());
        let names = f.name_index();
        let agg0 = names["pod0-agg0"];
        let up: Vec<_> = (0..f.degree(agg0) as u16)
            .map(|p| f.port_link(agg0, p))
            .filter(|&l| f.tier(f.link(l).b) == 3)
            .collect();
        assert_eq!(up.len(), 4);
        r.fail_links(&f, &up[..1]);
        let w = Weights::compute(&f, &r);
        let leaf0 = names["pod0-leaf0"];
        let remote = names["pod3-leaf2"];
        // pod0-agg0 keeps 3 of 4 core links, the other three aggs 4: weights 3,4,4,4.
        let g = r.groups().get(r.entry(leaf0, remote));
        let want: Vec<u32> = g
            .iter()
            .map(|&p| if f.peer(leaf0, p) == agg0 { 3 } else { 4 })
            .collect();
        assert_eq!(w.get(leaf0, remote), Some(&want[..]));
        // Inside the pod nothing changed.
        assert_eq!(w.get(leaf0, names["pod0-leaf1"]), None);
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(24))]
        /// Every weighted entry has one weight per group member, each in 1..=256, and
        /// their gcd is 1; a healthy fat-tree has none.
        #[test]
        fn weights_are_bounded_and_reduced(k in prop::sample::select(vec![4u32, 6, 8]),
                                           fails in 0usize..40, seed: u64) {
            let f = fat_tree(k, Rate::gbps(400)).unwrap();
            let mut r = Routes::compute(&f);
            prop_assert!(Weights::uniform(&f, &r));
            prop_assert!(Weights::compute_all(&f, &r).is_empty());
            let sw_links: Vec<_> = (0..f.num_links() as u32)
                .map(crate::model::LinkId)
                .filter(|&l| !f.is_host(f.link(l).a))
                .collect();
            let mut x = seed | 1;
            let mut failed = Vec::new();
            for _ in 0..fails {
                x ^= x << 13; x ^= x >> 7; x ^= x << 17;
                failed.push(sw_links[(x % sw_links.len() as u64) as usize]);
            }
            failed.sort_unstable();
            failed.dedup();
            r.fail_links(&f, &failed);
            prop_assert_eq!(Weights::uniform(&f, &r), failed.is_empty());
            let w = Weights::compute(&f, &r);
            // The fast form equals the recursive one, entry by entry.
            let oracle = Weights::compute_recursive(&f, &r);
            prop_assert_eq!(w.len(), oracle.len());
            for s in f.switches() {
                for d in f.plane_info(0).leaves().map(NodeId) {
                    prop_assert_eq!(w.get(s, d), oracle.get(s, d));
                    if let Some(ws) = w.get(s, d) {
                        let e = r.entry(s, d);
                        prop_assert_eq!(ws.len(), r.groups().get(e).len());
                        prop_assert!(ws.iter().all(|&v| (1..=MAX_WEIGHT).contains(&v)));
                        prop_assert_eq!(ws.iter().fold(0u64, |g, &v| gcd(g, v.into())), 1);
                        prop_assert!(ws.windows(2).any(|p| p[0] != p[1]));
                    }
                }
            }
        }
    }
}
