//! Max-min rates again after some flows left, without re-filling every flow.
//!
//! Progressive filling ([`crate::fill`]) raises one water level and freezes flows as
//! their links saturate, lowest level first. Let `L0` be the lowest rate among the
//! departed flows. Below `L0` nothing the departed flows did mattered: a link they used
//! saturated no earlier than `L0` (each of them froze at the first of its links to
//! saturate), and without them it carries less at every level, so it saturates no
//! earlier either; every other link sees exactly the same loads. The new filling therefore
//! passes through the same state at `L0`: every flow whose rate was below `L0` frozen at
//! that same rate, every other flow still rising. [`Refill::after_departures`] keeps the
//! first group and restarts the filling at `L0` for the second, over the load the first
//! group puts on each link. When the fastest flows finish first (equal sizes), that is a
//! small share of the flows.
//!
//! The load of the kept flows is tracked per link in fixed point (integers: adding and
//! removing a flow's share cancels exactly, so no rounding error builds up over
//! thousands of departures; the unit is 2^-52 of the largest capacity, about the
//! resolution of an `f64` load).

use crate::fill::Filler;
use crate::paths::PathSet;

/// The largest capacity maps to this many fixed-point units: 2^-52 of it is the
/// resolution, and a link's load (at most about its capacity) stays far inside `i64`.
const FULL_SCALE: f64 = (1u64 << 52) as f64;

/// Restart the filling a hair below the lowest departed rate, so that a flow frozen in
/// the same step as that rate (equal up to rounding) is filled again rather than kept.
const MARGIN: f64 = 1e-9;

/// The load of the running flows on every directed link, kept across departures.
#[derive(Debug, Clone)]
pub struct Refill {
    /// Σ over running flows of `weight × rate × scale`, truncated per flow, per directed
    /// link.
    load: Vec<i64>,
    /// Fixed-point units per bit/s.
    scale: f64,
    /// Scratch: flows to re-fill.
    free: Vec<u32>,
}

impl Refill {
    /// Starts from `rate`, the max-min rates of the `running` flows of `ps` over directed
    /// links of capacity `cap`.
    pub fn new(ps: &PathSet, rate: &[f64], running: &[u32], cap: &[f64]) -> Refill {
        let top = cap.iter().copied().fold(0.0, f64::max);
        let mut r = Refill {
            load: vec![0; cap.len()],
            scale: FULL_SCALE / if top > 0.0 { top } else { 1.0 },
            free: Vec::new(),
        };
        for &fi in running {
            r.add(ps, fi, rate[fi as usize], 1);
        }
        r
    }

    fn add(&mut self, ps: &PathSet, fi: u32, rate: f64, sign: i64) {
        let (links, ws) = ps.entries(fi as usize);
        for (&d, &w) in links.iter().zip(ws) {
            self.load[d as usize] += sign * (w * rate * self.scale) as i64;
        }
    }

    /// The flows `gone` left; `running` are those still running (not including `gone`).
    /// Updates `rate` of the running flows to the max-min rates without the departed ones,
    /// re-filling only the flows at or above the lowest departed rate. `rate` must hold
    /// the max-min rates of `running` and `gone` together (as [`Filler::max_min`] or an
    /// earlier call left them). Returns how many flows were re-filled.
    pub fn after_departures(
        &mut self,
        filler: &mut Filler,
        ps: &PathSet,
        cap: &[f64],
        rate: &mut [f64],
        running: &[u32],
        gone: &[u32],
    ) -> usize {
        if gone.is_empty() {
            return 0;
        }
        let mut low = f64::INFINITY;
        for &g in gone {
            low = low.min(rate[g as usize]);
            self.add(ps, g, rate[g as usize], -1);
        }
        let floor = (low * (1.0 - MARGIN)).max(0.0);
        self.free.clear();
        for &fi in running {
            if rate[fi as usize] >= floor && !ps.unroutable(fi as usize) {
                self.free.push(fi);
            }
        }
        let free = std::mem::take(&mut self.free);
        for &fi in &free {
            self.add(ps, fi, rate[fi as usize], -1);
        }
        let (load, scale) = (&self.load, self.scale);
        filler.fill(ps, cap, &free, rate, floor, |d| load[d] as f64 / scale);
        for &fi in &free {
            self.add(ps, fi, rate[fi as usize], 1);
        }
        let n = free.len();
        self.free = free;
        n
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ps(paths: &[&[(u32, f64)]]) -> PathSet {
        PathSet::from_paths(paths.iter().copied())
    }

    #[test]
    fn a_departure_can_lower_another_flows_rate() {
        // links 0 (cap 10) and 1 (cap 4); A on 0, B on 0+1, C on 1, D on 1.
        // Before: link 1 saturates first at 4/3 (B, C, D), A takes 10 − 4/3.
        // Without D: link 1 at 2 (B, C), A falls to 8 — not only the departed flow's
        // link changes.
        let p = ps(&[&[(0, 1.0)], &[(0, 1.0), (1, 1.0)], &[(1, 1.0)], &[(1, 1.0)]]);
        let cap = [10.0, 4.0];
        let mut f = Filler::default();
        let mut rate = f.max_min(&p, &cap);
        let mut r = Refill::new(&p, &rate, &[0, 1, 2, 3], &cap);
        r.after_departures(&mut f, &p, &cap, &mut rate, &[0, 1, 2], &[3]);
        assert_eq!(&rate[..3], &[8.0, 2.0, 2.0]);
    }

    #[test]
    fn only_flows_at_or_above_the_departed_rate_are_refilled() {
        // link 0 (cap 2): A, B; link 1 (cap 10): C, D. C leaves at rate 5: A and B (rate
        // 1) stay, D is re-filled alone up to 10.
        let p = ps(&[&[(0, 1.0)], &[(0, 1.0)], &[(1, 1.0)], &[(1, 1.0)]]);
        let cap = [2.0, 10.0];
        let mut f = Filler::default();
        let mut rate = f.max_min(&p, &cap);
        let mut r = Refill::new(&p, &rate, &[0, 1, 2, 3], &cap);
        let n = r.after_departures(&mut f, &p, &cap, &mut rate, &[0, 1, 3], &[2]);
        assert_eq!(n, 1);
        assert_eq!([rate[0], rate[1], rate[3]], [1.0, 1.0, 10.0]);
    }
}
