//! Max-min fair rates by progressive filling (Bertsekas & Gallager, *Data Networks*,
//! 2nd ed., §6.5.2), with weighted link use (a sprayed flow puts `w × rate` on a link).
//!
//! All unfrozen flows share one water level `L`. A link with capacity `c`, load `F` from
//! frozen flows and summed weight `W` of unfrozen flows saturates at level
//! `(c − F) / W`. The links sit in a binary heap keyed by that level (lazy deletion: an
//! entry is stale when the link's version moved on). Popping the lowest level freezes every
//! unfrozen flow on that link at `L`; each frozen flow updates `F` and `W` of its other
//! links and re-pushes them. Cost: O(path entries × log links), not O(rounds × links).
//!
//! Flows without a path get rate 0 and are reported as unroutable.

use std::cmp::Ordering;
use std::collections::BinaryHeap;

use crate::paths::PathSet;

/// Relative slack when comparing loads with capacities.
pub const EPS: f64 = 1e-9;

#[derive(Debug, Clone, Copy, PartialEq)]
struct Item {
    level: f64,
    link: u32,
    version: u32,
}

impl Eq for Item {}

impl Ord for Item {
    fn cmp(&self, o: &Self) -> Ordering {
        // min-heap on level, then link id for determinism
        o.level
            .total_cmp(&self.level)
            .then_with(|| o.link.cmp(&self.link))
    }
}

impl PartialOrd for Item {
    fn partial_cmp(&self, o: &Self) -> Option<Ordering> {
        Some(self.cmp(o))
    }
}

/// Reusable scratch for [`Filler::max_min`] (sized to the number of directed links).
#[derive(Debug, Default)]
pub struct Filler {
    frozen_load: Vec<f64>,
    weight: Vec<f64>,
    version: Vec<u32>,
    /// `mark[d] == epoch`: link `d` carries a flow being filled in this call.
    mark: Vec<u32>,
    epoch: u32,
    /// Position of each touched link in `touched` (valid where marked).
    slot: Vec<u32>,
    /// Flows being filled through each touched link (CSR over `touched`, built per call).
    by_link_off: Vec<u32>,
    by_link: Vec<u32>,
    touched: Vec<u32>,
    heap: BinaryHeap<Item>,
    /// Links whose level moved while one link's flows froze (pushed once afterwards).
    moved: Vec<u32>,
    /// `moved_at[d] == step`: link `d` is in `moved` already.
    moved_at: Vec<u64>,
    step: u64,
}

impl Filler {
    /// Max-min fair rates (bits/s) of the flows in `ps` over directed links of capacity
    /// `cap[d]` (bits/s; a capacity of 0 means the link is down).
    pub fn max_min(&mut self, ps: &PathSet, cap: &[f64]) -> Vec<f64> {
        let mut rate = vec![0.0; ps.len()];
        let free: Vec<u32> = (0..ps.len() as u32)
            .filter(|&i| !ps.unroutable(i as usize))
            .collect();
        self.fill(ps, cap, &free, &mut rate, 0.0, |_| 0.0);
        rate
    }

    /// Progressive filling of the flows `free` only (their entries of `rate` are
    /// overwritten; the others are not read), starting at water level `floor`, over links
    /// that already carry `base(d)` bits/s of other, frozen flows. With `floor = 0` and no
    /// base load this is the whole max-min computation; [`crate::refill`] restarts it at
    /// the level where departed flows had frozen.
    pub(crate) fn fill(
        &mut self,
        ps: &PathSet,
        cap: &[f64],
        free: &[u32],
        rate: &mut [f64],
        floor: f64,
        base: impl Fn(usize) -> f64,
    ) {
        self.index_flows(ps, cap.len(), free, base);
        for &fi in free {
            rate[fi as usize] = f64::NAN;
        }
        let mut left = free.len();
        for k in 0..self.touched.len() {
            self.push(self.touched[k], cap, floor);
        }
        while left > 0 {
            let Some(it) = self.heap.pop() else { break };
            let d = it.link as usize;
            if it.version != self.version[d] || self.weight[d] <= EPS {
                continue;
            }
            let level = it.level.max(floor);
            let k = self.slot[d] as usize;
            let (s, e) = (
                self.by_link_off[k] as usize,
                self.by_link_off[k + 1] as usize,
            );
            self.step += 1;
            self.moved.clear();
            for k in s..e {
                let fi = self.by_link[k] as usize;
                if !rate[fi].is_nan() {
                    continue;
                }
                rate[fi] = level;
                left -= 1;
                let (links, ws) = ps.entries(fi);
                for (&m, &w) in links.iter().zip(ws) {
                    let m = m as usize;
                    self.frozen_load[m] += w * level;
                    self.weight[m] -= w;
                    self.version[m] = self.version[m].wrapping_add(1);
                    if m != d && self.moved_at[m] != self.step {
                        self.moved_at[m] = self.step;
                        self.moved.push(m as u32);
                    }
                }
            }
            // one heap entry per link whose level moved (earlier ones would be stale)
            for k in 0..self.moved.len() {
                self.push(self.moved[k], cap, level);
            }
        }
        // Flows left unfrozen only if some link had no capacity bound (cannot happen with
        // finite capacities); give them 0 rather than NaN.
        for &fi in free {
            if rate[fi as usize].is_nan() {
                rate[fi as usize] = 0.0;
            }
        }
    }

    /// Marks the links of the `free` flows, sets their base load and summed weight, and
    /// lists the free flows through each of them.
    fn index_flows(&mut self, ps: &PathSet, nl: usize, free: &[u32], base: impl Fn(usize) -> f64) {
        self.frozen_load.resize(nl, 0.0);
        self.weight.resize(nl, 0.0);
        self.version.resize(nl, 0);
        self.mark.resize(nl, 0);
        self.slot.resize(nl, 0);
        self.moved_at.resize(nl, 0);
        self.epoch = self.epoch.wrapping_add(1);
        if self.epoch == 0 {
            self.mark.iter_mut().for_each(|m| *m = 0);
            self.epoch = 1;
        }
        self.touched.clear();
        self.heap.clear();
        self.by_link_off.clear();
        self.by_link_off.push(0);
        for &fi in free {
            let (links, ws) = ps.entries(fi as usize);
            for (&d, &w) in links.iter().zip(ws) {
                let du = d as usize;
                if self.mark[du] != self.epoch {
                    self.mark[du] = self.epoch;
                    self.slot[du] = self.touched.len() as u32;
                    self.touched.push(d);
                    self.by_link_off.push(0);
                    self.frozen_load[du] = base(du);
                    self.weight[du] = 0.0;
                }
                self.weight[du] += w;
                self.by_link_off[self.slot[du] as usize + 1] += 1;
            }
        }
        for k in 0..self.touched.len() {
            self.by_link_off[k + 1] += self.by_link_off[k];
        }
        let total = self.by_link_off[self.touched.len()] as usize;
        self.by_link.resize(total, 0);
        let mut fill: Vec<u32> = self.by_link_off[..self.touched.len()].to_vec();
        for &fi in free {
            for &d in ps.entries(fi as usize).0 {
                let k = self.slot[d as usize] as usize;
                self.by_link[fill[k] as usize] = fi;
                fill[k] += 1;
            }
        }
    }

    fn push(&mut self, d: u32, cap: &[f64], floor: f64) {
        let i = d as usize;
        if self.weight[i] <= EPS {
            return;
        }
        let level = ((cap[i] - self.frozen_load[i]) / self.weight[i]).max(floor);
        self.heap.push(Item {
            level,
            link: d,
            version: self.version[i],
        });
    }
}

/// Load (bits/s) on every directed link for the given rates.
pub fn link_loads(ps: &PathSet, rate: &[f64], nl: usize) -> Vec<f64> {
    let mut load = vec![0.0; nl];
    for (fi, &r) in rate.iter().enumerate() {
        let (links, ws) = ps.entries(fi);
        for (&d, &w) in links.iter().zip(ws) {
            load[d as usize] += w * r;
        }
    }
    load
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ps(paths: &[&[(u32, f64)]]) -> PathSet {
        PathSet::from_paths(paths.iter().copied())
    }

    #[test]
    fn classic_example() {
        // links 0 (cap 10) and 1 (cap 4); flow A on 0, flow B on 0+1, flow C on 1.
        let p = ps(&[&[(0, 1.0)], &[(0, 1.0), (1, 1.0)], &[(1, 1.0)], &[]]);
        let r = Filler::default().max_min(&p, &[10.0, 4.0]);
        assert_eq!(r, vec![8.0, 2.0, 2.0, 0.0]);
    }

    #[test]
    fn weighted_split() {
        // one flow sprayed half/half over links 0 and 1 (cap 10 each), another on link 0.
        let p = ps(&[&[(0, 0.5), (1, 0.5)], &[(0, 1.0)]]);
        let r = Filler::default().max_min(&p, &[10.0, 10.0]);
        // level L: link 0 has 0.5L + L = 10 → L = 6.67 for both; then flow 0 frozen too.
        assert!((r[0] - 20.0 / 3.0).abs() < 1e-9 && (r[1] - 20.0 / 3.0).abs() < 1e-9);
        let mut f = Filler::default();
        // reuse of scratch gives the same answer
        assert_eq!(f.max_min(&p, &[10.0, 10.0]), f.max_min(&p, &[10.0, 10.0]));
    }
}
