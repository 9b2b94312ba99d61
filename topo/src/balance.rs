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
        let load = pair_loads(f, r, t, pi as u16);
        for s in t.first_switch..t.first_switch + t.rows {
            let s = NodeId(s);
            let ti = f.tier(s) as usize - 1;
            let per_port = t.port_loads(f, s);
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
            let off = f.port_off[s.idx()] as usize;
            for &k in &live {
                dests[ti].push(per_port[k as usize]);
                pairs[ti].push(load[off + k as usize - load_base(f, t)]);
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

/// All-to-all pairs per port slot of the plane's switches: for each destination column,
/// the sources of every leaf (live host links) are pushed up through the tables, tier by
/// tier; only up / global ports are counted (traffic going down never turns up again).
fn pair_loads(f: &Fabric, r: &Routes, t: &crate::lft::PlaneLft, plane: u16) -> Vec<u64> {
    let base = load_base(f, t);
    let end = f.port_off[(t.first_switch + t.rows) as usize] as usize;
    let mut load = vec![0u64; end - base];
    let info = f.plane_info(plane);
    let sources: Vec<u64> = info
        .leaves()
        .map(|l| {
            let l = NodeId(l);
            (0..f.degree(l) as Port)
                .filter(|&k| {
                    f.direction(l, k) == Direction::Down && r.link_is_up(f.port_link(l, k))
                })
                .count() as u64
        })
        .collect();
    let mut inflow = vec![0u64; t.rows as usize];
    let by_tier: Vec<Vec<u32>> = info
        .tiers
        .iter()
        .map(|range| range.clone().collect())
        .collect();
    for (c, &d) in t.columns.iter().enumerate() {
        inflow.fill(0);
        for (i, &n) in sources.iter().enumerate() {
            inflow[(info.leaves().start + i as u32 - t.first_switch) as usize] = n;
        }
        // The destination's own host is not a source toward itself.
        if let Some(a) = f.attachment(d, plane) {
            let li = (a.leaf.0 - t.first_switch) as usize;
            inflow[li] = inflow[li].saturating_sub(1);
        }
        for tier in &by_tier {
            for &s in tier {
                let s = NodeId(s);
                let x = inflow[(s.0 - t.first_switch) as usize];
                if x == 0 {
                    continue;
                }
                let Some(k) = t.get(s, c) else { continue };
                if !is_up(f, s, k) {
                    continue;
                }
                load[f.port_off[s.idx()] as usize + k as usize - base] += x;
                let w = f.peer(s, k);
                if f.direction(s, k) == Direction::Up {
                    inflow[(w.0 - t.first_switch) as usize] += x;
                }
            }
        }
    }
    load
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
