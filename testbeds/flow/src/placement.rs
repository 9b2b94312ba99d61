//! Which hosts can talk in a failure state, and where a topology-aware scheduler puts a job.
//!
//! **Usable planes.** A NIC can use plane `p` when its link into `p` is up and its leaf
//! there is *connected*: it has a live uplink (or is the plane's only leaf) and routes to
//! every other leaf of the plane that has one. **Unreachable hosts.** A NIC is unreachable
//! when some other NIC shares a plane with it in the healthy fabric but no usable plane in
//! this state — a single-homed NIC whose link or ToR failed, or the two ends of a pair
//! whose surviving ports are in different planes. The check groups NICs by their
//! (attached planes, usable planes) bit masks, so it costs O(hosts + groups²).
//!
//! **Placement.** A job of `N` GPUs takes `⌈N / GPUs per server⌉` whole servers, in server
//! order, skipping servers with an unreachable NIC. Servers are numbered leaf by leaf and
//! pod by pod, so this packs a job under as few leaves and pods as possible — what a
//! topology-aware scheduler (Slurm `topology/tree`, Kubernetes topology-aware scheduling)
//! aims for.

use std::collections::HashMap;

use topo::routing::NO_ROUTE;
use topo::{Fabric, NodeId, Routes, TIER_LEAF};

/// Reachability of every NIC in one routing state.
#[derive(Debug, Clone, PartialEq)]
pub struct Health {
    /// Usable-plane mask per NIC.
    pub usable: Vec<u64>,
    /// Unreachable flag per NIC.
    pub unreachable: Vec<bool>,
    /// Number of unreachable NICs.
    pub num_unreachable: usize,
}

/// Attached-plane mask per NIC (healthy fabric).
pub fn attached_masks(f: &Fabric) -> Vec<u64> {
    f.hosts()
        .map(|h| f.host_planes(h).fold(0u64, |m, p| m | 1 << p))
        .collect()
}

/// Connected flag per leaf (indexed by `leaf − first switch id`), see the module docs.
fn connected_leaves(f: &Fabric, routes: &Routes) -> Vec<bool> {
    let nh = f.num_hosts() as u32;
    let mut ok = vec![false; f.num_switches()];
    for p in f.planes() {
        let leaves = p.leaves();
        let n = leaves.len();
        let isolated: Vec<bool> = leaves
            .clone()
            .map(|l| {
                let v = NodeId(l);
                n > 1
                    && !f
                        .ports(v)
                        .any(|(peer, link)| f.tier(peer) > TIER_LEAF && routes.link_is_up(link))
            })
            .collect();
        for (i, l) in leaves.clone().enumerate() {
            if isolated[i] {
                continue;
            }
            let row = routes.row_entries(NodeId(l));
            ok[(l - nh) as usize] = row
                .iter()
                .enumerate()
                .all(|(j, &e)| e != NO_ROUTE || isolated[j] || j == i);
        }
    }
    ok
}

/// Health of every NIC under `routes`; `attached` from [`attached_masks`].
pub fn health(f: &Fabric, routes: &Routes, attached: &[u64]) -> Health {
    let nh = f.num_hosts() as u32;
    let leaf_ok = connected_leaves(f, routes);
    let mut usable = vec![0u64; nh as usize];
    for h in f.hosts() {
        for p in f.host_planes(h) {
            let a = f
                .attachment(h, p)
                .expect("host_planes lists attached planes");
            if routes.link_is_up(a.link) && leaf_ok[(a.leaf.0 - nh) as usize] {
                usable[h.idx()] |= 1 << p;
            }
        }
    }
    let mut groups: HashMap<(u64, u64), usize> = HashMap::new();
    for h in 0..nh as usize {
        *groups.entry((attached[h], usable[h])).or_default() += 1;
    }
    let keys: Vec<((u64, u64), usize)> = groups.into_iter().collect();
    let bad: HashMap<(u64, u64), bool> = keys
        .iter()
        .map(|&((am, um), _)| {
            let b = am != 0
                && (um == 0
                    || keys.iter().any(|&((a2, u2), c2)| {
                        let other = if (a2, u2) == (am, um) { c2 > 1 } else { c2 > 0 };
                        other && u2 != 0 && am & a2 != 0 && um & u2 == 0
                    }));
            ((am, um), b)
        })
        .collect();
    let unreachable: Vec<bool> = (0..nh as usize)
        .map(|h| bad[&(attached[h], usable[h])])
        .collect();
    let num_unreachable = unreachable.iter().filter(|&&b| b).count();
    Health {
        usable,
        unreachable,
        num_unreachable,
    }
}

/// Which servers a scheduler may give a job, and what makes a server usable.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct PlaceRules {
    /// Only the first `n` servers (the job's partition: its servers and its spares);
    /// `None`: every server.
    pub partition: Option<u32>,
    /// PXN: a server with some NICs cut off stays usable while one of its NICs is left
    /// (the cut-off rails' traffic goes over NVLink through a peer GPU's NIC).
    pub pxn: bool,
}

/// NICs of the servers a topology-aware scheduler gives a job of `gpus` GPUs, or `None`
/// when there are not enough healthy servers. `down[s] > 0` marks server `s` as down (a
/// failed GPU domain or server); an empty `down` means none is.
pub fn place(f: &Fabric, health: &Health, gpus: u64, down: &[u16]) -> Option<Vec<NodeId>> {
    place_in(f, health, gpus, down, PlaceRules::default())
}

/// [`place`] under `rules`: within the partition, and with PXN a server needs one
/// reachable NIC instead of all.
pub fn place_in(
    f: &Fabric,
    health: &Health,
    gpus: u64,
    down: &[u16],
    rules: PlaceRules,
) -> Option<Vec<NodeId>> {
    let lay = f.host_layout();
    let need = gpus.div_ceil(lay.gpus_per_server.max(1) as u64) as usize;
    let nics = lay.nics_per_server as usize;
    let servers = rules.partition.map_or(lay.servers, |p| p.min(lay.servers)) as usize;
    let mut out = Vec::with_capacity(need * nics);
    let mut taken = 0usize;
    for s in 0..servers {
        if taken == need {
            break;
        }
        let r = s * nics..(s + 1) * nics;
        let cut = &health.unreachable[r.clone()];
        let unusable = if rules.pxn {
            cut.iter().all(|&b| b)
        } else {
            cut.iter().any(|&b| b)
        };
        if down.get(s).is_some_and(|&n| n > 0) || unusable {
            continue;
        }
        out.extend(r.map(|h| NodeId(h as u32)));
        taken += 1;
    }
    (taken == need).then_some(out)
}

/// The NICs of a placement on the rails (NIC slots within a server) that are reachable
/// in every server of it: with PXN a rail cut off anywhere is dropped job-wide and the
/// other rails carry its share. Empty when no rail is left.
pub fn live_rails(f: &Fabric, health: &Health, placement: &[NodeId]) -> Vec<NodeId> {
    let nics = f.host_layout().nics_per_server.max(1) as usize;
    let mut dead = vec![false; nics];
    for h in placement {
        if health.unreachable[h.idx()] {
            dead[h.idx() % nics] = true;
        }
    }
    placement
        .iter()
        .copied()
        .filter(|h| !dead[h.idx() % nics])
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use topo::{Rate, generators};

    #[test]
    fn single_homed_host_link_failure() {
        let f = generators::fat_tree(4, Rate::gbps(100)).unwrap();
        let mut r = Routes::compute(&f);
        let am = attached_masks(&f);
        assert_eq!(health(&f, &r, &am).num_unreachable, 0);
        r.fail_links(&f, &[f.attachment(NodeId(5), 0).unwrap().link]);
        let h = health(&f, &r, &am);
        assert_eq!(h.num_unreachable, 1);
        assert!(h.unreachable[5]);
        // 8 GPUs = 8 one-GPU servers; server 5 is skipped
        let p = place(&f, &h, 8, &[]).unwrap();
        assert_eq!(p.len(), 8);
        assert!(!p.contains(&NodeId(5)) && p.contains(&NodeId(8)));
        assert!(place(&f, &h, 16, &[]).is_none());
        // server 2 down as well: skipped too
        let mut down = vec![0u16; 16];
        down[2] = 1;
        let p = place(&f, &h, 8, &down).unwrap();
        assert!(!p.contains(&NodeId(2)) && p.contains(&NodeId(9)));
        // a partition of 10 servers: 2 of them unusable, the job of 8 still fits; of 9 not
        let rules = |n| PlaceRules {
            partition: Some(n),
            pxn: false,
        };
        assert_eq!(place_in(&f, &h, 8, &down, rules(10)).unwrap().len(), 8);
        assert!(place_in(&f, &h, 8, &down, rules(9)).is_none());
    }

    #[test]
    fn pxn_keeps_a_server_with_one_nic_left_and_drops_its_rail() {
        // 4 servers of 2 NICs, one per plane: cut NIC 1 of server 0 (plane 1)
        let text = "name = \"two-plane\"\n[hosts]\nservers = 4\ngpus_per_server = 2\nnics_per_server = 2\nrate = \"100G\"\n\
             [[planes]]\ncopies = 2\nleaves_per_pod = 2\nleaf = { radix = 4, down = 2, up = 2 }\nspine = { radix = 2 }\n";
        let f = topo::Spec::parse(text, topo::Format::Toml, "t")
            .unwrap()
            .build("t")
            .unwrap();
        let mut r = Routes::compute(&f);
        let am = attached_masks(&f);
        r.fail_links(&f, &[f.attachment(NodeId(1), 1).unwrap().link]);
        let h = health(&f, &r, &am);
        assert!(h.unreachable[1] && !h.unreachable[0]);
        // without PXN, server 0 is skipped; with it, kept
        assert!(place(&f, &h, 8, &[]).is_none());
        let pxn = PlaceRules {
            partition: None,
            pxn: true,
        };
        let p = place_in(&f, &h, 8, &[], pxn).unwrap();
        assert_eq!(p.len(), 8);
        // rail 1 is dropped everywhere: the NICs left are the rail-0 ones
        let live = live_rails(&f, &h, &p);
        assert_eq!(live, vec![NodeId(0), NodeId(2), NodeId(4), NodeId(6)]);
    }
}
