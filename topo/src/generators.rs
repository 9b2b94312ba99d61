//! Generators: convenient constructors that build a [`Spec`] and generate it.
//!
//! Every generator goes through [`Spec::build`], so a generated fabric and the same design
//! written as a spec file are identical.

use crate::Result;
use crate::model::{Fabric, PlaneKind};
use crate::spec::{HostSpec, PlaneSpec, Spec, TierSpec};
use crate::units::Rate;

fn tier(radix: u32, down: Option<u32>, up: u32) -> TierSpec {
    TierSpec {
        radix,
        port_rate: None,
        down,
        up,
        uplink_rate: None,
        delay_ns: None,
    }
}

fn hosts(rate: Rate) -> HostSpec {
    HostSpec {
        servers: None,
        gpus_per_server: 1,
        nics_per_server: 1,
        ports_per_nic: 1,
        rail_optimized: false,
        scale_up_domain: None,
        rate,
        delay_ns: None,
    }
}

/// Spec of a 3-tier k-ary fat-tree (Al-Fares et al., SIGCOMM 2008): k pods of k/2 edge and
/// k/2 aggregation switches, (k/2)² cores, k³/4 hosts, 5k²/4 switches, all links at `rate`.
pub fn fat_tree_spec(k: u32, rate: Rate) -> Spec {
    let h = k / 2;
    let k64 = k as u64;
    Spec {
        name: format!("fat-tree-k{k}"),
        description: format!(
            "3-tier {k}-ary fat-tree: {} hosts, {} switches",
            k64 * k64 * k64 / 4,
            5 * k64 * k64 / 4
        ),
        source: vec!["M. Al-Fares, A. Loukissas, A. Vahdat. A Scalable, Commodity Data Center Network Architecture. SIGCOMM 2008, §3.".into()],
        traffic_classes: None,
        hosts: hosts(rate),
        services: vec![],
        tenants: vec![],
        planes: vec![PlaneSpec {
            copies: 1,
            kind: PlaneKind::Clos,
            pods: k,
            leaves_per_pod: h,
            leaf: tier(k, Some(h), h),
            spine: tier(k, Some(h), h),
            core: Some(tier(k, Some(k), 0)),
        }],
    }
}

/// A 3-tier k-ary fat-tree (k even, 2 ≤ k ≤ 160: larger ones exceed
/// [`crate::spec::MAX_HOSTS`] and get an error saying so).
pub fn fat_tree(k: u32, rate: Rate) -> Result<Fabric> {
    fat_tree_spec(k, rate).build(&format!("fat-tree-k{k}"))
}

/// Spec of a 2-tier leaf–spine: `leaves` leaves with `hosts_per_leaf` hosts and one uplink
/// to each of `spines` spines (`parallel` links per leaf–spine pair).
pub fn leaf_spine_spec(
    leaves: u32,
    spines: u32,
    hosts_per_leaf: u32,
    parallel: u32,
    rate: Rate,
) -> Spec {
    // Saturating: an absurd size becomes a radix that validation refuses by name.
    let up = spines.saturating_mul(parallel);
    Spec {
        name: format!("leaf-spine-{leaves}x{spines}"),
        description: format!("2-tier leaf-spine: {leaves} leaves, {spines} spines"),
        source: vec![],
        traffic_classes: None,
        hosts: hosts(rate),
        services: vec![],
        tenants: vec![],
        planes: vec![PlaneSpec {
            copies: 1,
            kind: PlaneKind::Clos,
            pods: 1,
            leaves_per_pod: leaves,
            leaf: tier(hosts_per_leaf.saturating_add(up), Some(hosts_per_leaf), up),
            spine: tier(
                leaves.saturating_mul(parallel),
                Some(leaves.saturating_mul(parallel)),
                0,
            ),
            core: None,
        }],
    }
}

/// A 2-tier leaf–spine.
pub fn leaf_spine(leaves: u32, spines: u32, hosts_per_leaf: u32, rate: Rate) -> Result<Fabric> {
    leaf_spine_spec(leaves, spines, hosts_per_leaf, 1, rate).build("leaf-spine")
}

/// Makes `planes` copies of every plane of `spec`, one NIC port per plane
/// (each host NIC port in its own plane).
pub fn multi_plane_spec(mut spec: Spec, planes: u32) -> Spec {
    for p in &mut spec.planes {
        p.copies *= planes;
    }
    spec.hosts.ports_per_nic *= planes;
    spec.name = format!("{}-x{planes}", spec.name);
    spec
}

/// Spec of a Dragonfly+ plane: `groups` groups of `leaves` leaves (each with `hosts_per_leaf`
/// hosts and one uplink per spine) and `spines` spines with `global` global ports each.
pub fn dragonfly_plus_spec(
    groups: u32,
    leaves: u32,
    spines: u32,
    hosts_per_leaf: u32,
    global: u32,
    rate: Rate,
) -> Spec {
    Spec {
        name: format!("dragonfly-plus-g{groups}"),
        description: format!("Dragonfly+: {groups} groups of {leaves} leaves + {spines} spines"),
        source: vec!["A. Shpiner, Z. Haramaty, S. Eliad, V. Zdornov, B. Gafni, E. Zahavi. Dragonfly+: Low Cost Topology for Scaling Datacenters. HiPINEB 2017.".into()],
        traffic_classes: None,
        hosts: hosts(rate),
        services: vec![],
        tenants: vec![],
        planes: vec![PlaneSpec {
            copies: 1,
            kind: PlaneKind::DragonflyPlus,
            pods: groups,
            leaves_per_pod: leaves,
            leaf: tier(
                hosts_per_leaf.saturating_add(spines),
                Some(hosts_per_leaf),
                spines,
            ),
            spine: tier(leaves.saturating_add(global), Some(leaves), global),
            core: None,
        }],
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::NodeId;

    #[test]
    fn fat_tree_counts() {
        for k in [4u32, 8, 16] {
            let f = fat_tree(k, Rate::gbps(100)).unwrap();
            assert_eq!(f.num_hosts() as u32, k * k * k / 4);
            assert_eq!(f.num_switches() as u32, 5 * k * k / 4);
            assert_eq!(f.switches_in_tier(3).count() as u32, k * k / 4);
            assert_eq!(f.num_links() as u32, 3 * k * k * k / 4);
            for s in f.switches() {
                assert_eq!(f.degree(s) as u32, k, "{}", f.node_name(s));
            }
        }
    }

    #[test]
    fn fat_tree_core_wiring() {
        // Core group j connects to aggregation switch j of every pod, once.
        let k = 4;
        let f = fat_tree(k, Rate::gbps(100)).unwrap();
        for c in f.switches_in_tier(3) {
            let pods: Vec<_> = f.ports(c).map(|(p, _)| f.pod(p).unwrap()).collect();
            assert_eq!(pods, (0..k).collect::<Vec<_>>());
        }
        assert_eq!(f.node_name(NodeId(16)), "pod0-leaf0");
    }

    #[test]
    fn multi_plane_host_ports() {
        let f = multi_plane_spec(fat_tree_spec(4, Rate::gbps(100)), 2)
            .build("x")
            .unwrap();
        assert_eq!(f.num_planes(), 2);
        assert_eq!(f.num_hosts(), 16);
        assert_eq!(f.num_switches(), 40);
        for h in f.hosts() {
            assert_eq!(f.host_planes(h).collect::<Vec<_>>(), vec![0, 1]);
            let a0 = f.attachment(h, 0).unwrap();
            let a1 = f.attachment(h, 1).unwrap();
            assert_eq!((a0.host_port, a1.host_port), (0, 1));
            assert_eq!(f.plane(a1.leaf), Some(1));
        }
    }

    #[test]
    fn dragonfly_plus_global_links() {
        let f = dragonfly_plus_spec(5, 2, 2, 2, 2, Rate::gbps(100))
            .build("x")
            .unwrap();
        // 5 groups × 2 spines × 2 global ports / 2 ends = 10 links; one per group pair.
        let global: Vec<_> = f
            .links()
            .iter()
            .filter(|l| f.tier(l.a) == 2 && f.tier(l.b) == 2)
            .collect();
        assert_eq!(global.len(), 10);
        let mut pairs: Vec<_> = global
            .iter()
            .map(|l| (f.pod(l.a).unwrap(), f.pod(l.b).unwrap()))
            .collect();
        pairs.sort();
        pairs.dedup();
        assert_eq!(pairs.len(), 10);
        for s in f.switches_in_tier(2) {
            assert_eq!(f.degree(s), 4);
        }
    }
}
