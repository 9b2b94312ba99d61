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

use std::collections::HashMap;

use crate::model::{Fabric, NodeId};
use crate::routing::{LOCAL, NO_ROUTE, Routes};

/// The largest next-hop weight Linux accepts (`ip route … weight 1..=256`).
pub const MAX_WEIGHT: u32 = 256;

/// Next-hop weights of every ECMP entry whose next hops are not all equal; entries not
/// held here have weight 1 on every member.
#[derive(Debug, Clone, Default)]
pub struct Weights {
    /// (switch, destination leaf) → offset of the entry's weights in `w`.
    at: HashMap<(u32, u32), u32>,
    /// Weights, one per member of the entry's group, in group order.
    w: Vec<u32>,
}

const UNKNOWN: u64 = u64::MAX;

impl Weights {
    /// Computes the weights of `r`'s ECMP tables on `f` (links down in `r` carry
    /// no path). Cost: one pass over every (switch, leaf, member), memoised per
    /// destination leaf.
    pub fn compute(f: &Fabric, r: &Routes) -> Weights {
        let mut out = Weights::default();
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
                        out.at.insert((s.0, d.0), out.w.len() as u32);
                        out.w.push(ws.len() as u32);
                        out.w.extend_from_slice(&ws);
                    }
                }
            }
        }
        out
    }

    /// The weights of `switch` toward destination leaf `leaf`, one per member of its
    /// ECMP group in group order; `None` when they are all equal (or there is no group).
    pub fn get(&self, switch: NodeId, leaf: NodeId) -> Option<&[u32]> {
        let &o = self.at.get(&(switch.0, leaf.0))?;
        let o = o as usize;
        // Each entry is stored as its length followed by its weights.
        let n = self.w[o] as usize;
        Some(&self.w[o + 1..o + 1 + n])
    }

    /// Number of entries with unequal weights.
    pub fn len(&self) -> usize {
        self.at.len()
    }

    /// True if every entry's next hops are equally weighted.
    pub fn is_empty(&self) -> bool {
        self.at.is_empty()
    }
}

/// Live paths from `s` to leaf `d` along the tables (memoised in `memo`, indexed from
/// `first`; saturating).
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
                                           fails in 0usize..12, seed: u64) {
            let f = fat_tree(k, Rate::gbps(400)).unwrap();
            let mut r = Routes::compute(&f);
            prop_assert!(Weights::compute(&f, &r).is_empty());
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
            let w = Weights::compute(&f, &r);
            for s in f.switches() {
                for d in f.plane_info(0).leaves().map(NodeId) {
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
