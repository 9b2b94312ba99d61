//! Per-tier balance of single-path tables ([`Lft`]): how evenly each tier's up links share
//! destinations and the traffic of an all-to-all.
//!
//! For every switch tier with up (or Dragonfly+ global) ports, over the live up ports:
//! * **destinations per up port** — columns (destination host ports) a switch sends out of
//!   each up port; the ideal is the switch's up-routed destinations / its live up ports;
//! * **all-to-all pair load per up link** — ordered (source, destination) host pairs of the
//!   plane whose single path leaves through that port, found by pushing, per destination,
//!   the number of sources through the tables tier by tier (leaf → spine → core).
//!
//! Each is reported as max, mean and max / mean over the tier (1.0 = perfectly even), the
//! number of idle up links (no pair crosses them), and the worst switch: the most
//! destinations on one of its up ports against its ideal (⌈routed / live ports⌉).

use crate::lft::Lft;
use crate::model::*;
use crate::routing::Routes;

/// Balance of one switch tier (all planes).
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct TierBalance {
    /// Tier (1 leaf, 2 spine/aggregation, 3 core).
    pub tier: u8,
    /// Live up ports in the tier.
    pub up_ports: u64,
    /// Most destinations on one up port.
    pub dest_max: u32,
    /// Mean destinations per up port.
    pub dest_mean: f64,
    /// Most all-to-all pairs on one up link.
    pub pair_max: u64,
    /// Mean all-to-all pairs per up link.
    pub pair_mean: f64,
    /// Up links no all-to-all pair crosses.
    pub idle_up_links: u64,
    /// Worst switch: name index, most destinations on one up port, its ideal.
    pub worst_switch: Option<(NodeId, u32, u32)>,
}

impl TierBalance {
    /// Destinations: max / mean (1.0 = even).
    pub fn dest_ratio(&self) -> f64 {
        ratio(self.dest_max as f64, self.dest_mean)
    }
    /// All-to-all pairs: max / mean (1.0 = even).
    pub fn pair_ratio(&self) -> f64 {
        ratio(self.pair_max as f64, self.pair_mean)
    }
    /// Worst switch: most destinations on one up port / ideal.
    pub fn worst_ratio(&self) -> f64 {
        self.worst_switch
            .map_or(1.0, |(_, m, i)| ratio(m as f64, i as f64))
    }
}

fn ratio(max: f64, mean: f64) -> f64 {
    if mean > 0.0 { max / mean } else { 1.0 }
}

fn is_up(f: &Fabric, s: NodeId, k: Port) -> bool {
    matches!(f.direction(s, k), Direction::Up | Direction::Global)
}

/// Per-tier balance of `lft` (computed from `r`, whose failed links are left out).
pub fn of_lft(f: &Fabric, r: &Routes, lft: &Lft) -> Vec<TierBalance> {
    let mut dests: [Vec<u32>; 3] = Default::default();
    let mut pairs: [Vec<u64>; 3] = Default::default();
    let mut worst: [Option<(NodeId, u32, u32)>; 3] = [None; 3];
    for (pi, t) in lft.planes.iter().enumerate() {
        let (load, dest_count) = loads(f, r, t, pi as u16);
        for s in t.first_switch..t.first_switch + t.rows {
            let s = NodeId(s);
            let ti = f.tier(s) as usize - 1;
            let off = f.port_off[s.idx()] as usize - load_base(f, t);
            let per_port = &dest_count[off..off + f.degree(s)];
            let live: Vec<Port> = (0..f.degree(s) as Port)
                .filter(|&k| is_up(f, s, k) && r.link_is_up(f.port_link(s, k)))
                .collect();
            if live.is_empty() {
                continue;
            }
            let routed: u32 = live.iter().map(|&k| per_port[k as usize]).sum();
            let max = live
                .iter()
                .map(|&k| per_port[k as usize])
                .max()
                .unwrap_or(0);
            let ideal = routed.div_ceil(live.len() as u32);
            let r_new = ratio(max as f64, ideal as f64);
            if worst[ti].is_none_or(|(_, m, i)| r_new > ratio(m as f64, i as f64)) {
                worst[ti] = Some((s, max, ideal));
            }
            for &k in &live {
                dests[ti].push(per_port[k as usize]);
                pairs[ti].push(load[off + k as usize]);
            }
        }
    }
    (0..3)
        .filter(|&ti| !dests[ti].is_empty())
        .map(|ti| {
            let n = dests[ti].len() as f64;
            TierBalance {
                tier: ti as u8 + 1,
                up_ports: dests[ti].len() as u64,
                dest_max: dests[ti].iter().copied().max().unwrap_or(0),
                dest_mean: dests[ti].iter().map(|&x| x as f64).sum::<f64>() / n,
                pair_max: pairs[ti].iter().copied().max().unwrap_or(0),
                pair_mean: pairs[ti].iter().map(|&x| x as f64).sum::<f64>() / n,
                idle_up_links: pairs[ti].iter().filter(|&&x| x == 0).count() as u64,
                worst_switch: worst[ti],
            }
        })
        .collect()
}

/// First port slot of a plane's switches (pair loads are indexed from it).
fn load_base(f: &Fabric, t: &crate::lft::PlaneLft) -> usize {
    f.port_off[t.first_switch as usize] as usize
}

/// Columns pushed through the tables together by [`loads`]: each switch's row is then
/// read 256 entries at a time instead of one entry per column, a whole table apart.
const BLOCK: usize = 256;

/// All-to-all pairs per port slot of the plane's switches: for each destination column,
/// the sources of every leaf (live host links) are pushed up through the tables, tier by
/// tier; only up / global ports are counted (traffic going down never turns up again).
/// Columns go [`BLOCK`] at a time, so the row-major table is read along its rows. Also
/// counts the destinations (columns) on every port slot in the same pass, which is
/// [`crate::lft::PlaneLft::port_loads`] for every switch at once.
fn loads(f: &Fabric, r: &Routes, t: &crate::lft::PlaneLft, plane: u16) -> (Vec<u64>, Vec<u32>) {
    let base = load_base(f, t);
    let end = f.port_off[(t.first_switch + t.rows) as usize] as usize;
    let mut load = vec![0u64; end - base];
    let mut dests = vec![0u32; end - base];
    let info = f.plane_info(plane);
    // Sources per leaf and the counts pushed up fit u32: at most the plane's hosts.
    let sources: Vec<u32> = info
        .leaves()
        .map(|l| {
            let l = NodeId(l);
            (0..f.degree(l) as Port)
                .filter(|&k| {
                    f.direction(l, k) == Direction::Down && r.link_is_up(f.port_link(l, k))
                })
                .count() as u32
        })
        .collect();
    // Per port slot: counted (up or global) and, if up, the row the traffic climbs to.
    let climbs: Vec<(bool, Option<usize>)> = (t.first_switch..t.first_switch + t.rows)
        .flat_map(|s| {
            let s = NodeId(s);
            (0..f.degree(s) as Port).map(move |k| {
                let up = f.direction(s, k) == Direction::Up;
                let to = up.then(|| (f.peer(s, k).0 - t.first_switch) as usize);
                (is_up(f, s, k), to)
            })
        })
        .collect();
    let mut inflow = vec![0u32; t.rows as usize * BLOCK];
    let mut entries = [0 as Port; BLOCK];
    let by_tier: Vec<Vec<u32>> = info
        .tiers
        .iter()
        .map(|range| range.clone().collect())
        .collect();
    let leaf_row = (info.leaves().start - t.first_switch) as usize;
    for c0 in (0..t.columns.len()).step_by(BLOCK) {
        let cols = c0..t.columns.len().min(c0 + BLOCK);
        inflow.fill(0);
        for (i, &n) in sources.iter().enumerate() {
            inflow[(leaf_row + i) * BLOCK..][..cols.len()].fill(n);
        }
        // The destination's own host is not a source toward itself.
        for c in cols.clone() {
            if let Some(a) = f.attachment(t.columns[c], plane) {
                let x = &mut inflow[(a.leaf.0 - t.first_switch) as usize * BLOCK + c - c0];
                *x = x.saturating_sub(1);
            }
        }
        for tier in &by_tier {
            for &s in tier {
                let row = (s - t.first_switch) as usize;
                let slot0 = f.port_off[s as usize] as usize - base;
                t.raw_row(NodeId(s), cols.clone(), &mut entries);
                for (j, &v) in entries[..cols.len()].iter().enumerate() {
                    if v == 0 {
                        continue;
                    }
                    let k = slot0 + v as usize - 1;
                    dests[k] += 1;
                    let x = inflow[row * BLOCK + j];
                    if x == 0 {
                        continue;
                    }
                    let (counted, to) = climbs[k];
                    if !counted {
                        continue;
                    }
                    load[k] += x as u64;
                    if let Some(w) = to {
                        inflow[w * BLOCK + j] += x;
                    }
                }
            }
        }
    }
    (load, dests)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::generators::fat_tree;
    use crate::units::Rate;

    #[test]
    fn fat_tree_single_path_is_even_at_every_tier() {
        let f = fat_tree(8, Rate::gbps(100)).unwrap();
        let r = Routes::compute(&f);
        let b = of_lft(&f, &r, &Lft::compute(&f, &r));
        assert_eq!(b.len(), 2, "{b:?}");
        // Leaves: 124 remote destinations over 4 up ports; pairs: 4 sources × 124 / 4.
        assert_eq!((b[0].dest_max, b[0].dest_mean), (31, 31.0));
        assert_eq!((b[0].pair_max, b[0].pair_mean), (124, 124.0));
        // Aggregation: 112 inter-pod destinations over 4 core links; 16 sources of the pod,
        // 4 of each leaf reach this agg for its share: 16 × 112 / 16 links per pod = 112.
        assert_eq!((b[1].dest_max, b[1].dest_mean), (28, 28.0));
        assert_eq!(b[1].pair_ratio(), 1.0);
        assert_eq!(b[1].idle_up_links, 0);
        // Total up-link pair load at the aggregation tier = inter-pod pairs.
        let total = b[1].pair_mean * b[1].up_ports as f64;
        assert_eq!(total, (128 * 112) as f64);
    }

    #[test]
    fn failures_spread_over_surviving_uplinks() {
        // 20 random failed links on k=8 (seed 3: pod4-agg3 keeps 3 of its 4 core links; plain
        // d-mod-k gave it 48 destinations on one of them, ideal 34). Every switch with a
        // failed up link now stays within one destination of its ideal.
        let f = fat_tree(8, Rate::gbps(100)).unwrap();
        let mut r = Routes::compute(&f);
        let links = crate::failures::random_links_checked(&f, 20, 3).unwrap();
        let rep = r.fail_links(&f, &links);
        let fresh = Lft::compute(&f, &r);
        let mut checked = 0;
        for t in &fresh.planes {
            for s in t.first_switch..t.first_switch + t.rows {
                let s = NodeId(s);
                let live: Vec<Port> = (0..f.degree(s) as Port)
                    .filter(|&k| f.direction(s, k) == Direction::Up)
                    .filter(|&k| r.link_is_up(f.port_link(s, k)))
                    .collect();
                if live.len()
                    == (0..f.degree(s) as Port)
                        .filter(|&k| f.direction(s, k) == Direction::Up)
                        .count()
                {
                    continue;
                }
                let loads = t.port_loads(&f, s);
                let up: Vec<u32> = live.iter().map(|&k| loads[k as usize]).collect();
                let ideal = up.iter().sum::<u32>().div_ceil(up.len() as u32);
                assert!(
                    up.iter().all(|&x| x <= ideal + 1),
                    "{}: {up:?} vs ideal {ideal}",
                    f.node_name(s)
                );
                checked += 1;
            }
        }
        assert!(checked >= 10, "{checked}");
        // Patching a healthy table gives the same as computing it fresh.
        let mut patched = Lft::compute(&f, &Routes::compute(&f));
        patched.update(&f, &r, &rep.changed);
        for s in f.switches() {
            for d in f.hosts() {
                assert_eq!(patched.port(&f, s, d), fresh.port(&f, s, d));
            }
        }
    }
}
