//! The fabric as a scheduler sees it: servers grouped into *blocks* (the servers that share
//! their leaf switches), blocks into pods, pods under one root, plus the scale-up
//! (NVLink) domains. Every scheduler export (Slurm `topology.conf` / `topology.yaml`,
//! Kubernetes node labels, the Kueue `Topology`) is written from this one view.
//!
//! **Why one tree, whatever the planes.** A scheduler places servers, not NICs. In a
//! multi-plane fabric (DeepSeek's 8 planes, Alibaba HPN's dual plane) each server has a
//! port in every plane, and the planes are copies: the servers that share a leaf in one
//! plane share one in every plane. One tree per plane would list every server once per
//! plane, which Slurm rejects (a node under two leaves) and which says nothing more. So
//! the block is computed over *all* planes: servers are joined when any of their NICs
//! share a leaf (union-find over leaves), and a block is a connected group.
//!
//! * plain Clos, one NIC to one leaf: a block is a leaf's servers, named after the leaf;
//! * multi-plane: a block is "leaf `i` of every plane", named after plane 0's leaf
//!   without its `p0-` prefix (`pod3-leaf5`);
//! * rail-optimised (a server's NICs on different leaves, one per rail): a block is the
//!   rail group, the servers that share the same set of rail leaves (an HPN segment), named
//!   `pod<p>` when it is the whole pod, `pod<p>-rg<i>` when a pod has several.
//!
//! Traffic between two servers of a block never leaves the block's leaves (for a rail
//! group: as long as it stays on its rail, which NCCL's rail-aligned rings do), which is
//! what the tree plugin's leaf means.

use std::collections::BTreeMap;

use crate::model::{Direction, Fabric, NodeId};

/// A group of servers that share their leaf switches.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Block {
    /// Scheduler-facing name (a leaf's name, or `pod<p>[-rg<i>]`).
    pub name: String,
    /// Servers in it, ascending.
    pub servers: Vec<u32>,
    /// Pod of its leaves (0 in a 2-tier fabric).
    pub pod: u32,
}

/// The fabric's scheduler view. See the module docs.
#[derive(Debug, Clone, PartialEq)]
pub struct SchedTree {
    /// Name of the root (the fabric's name, made safe for Slurm).
    pub root: String,
    /// Number of servers.
    pub servers: u32,
    /// Blocks in pod order, then leaf order.
    pub blocks: Vec<Block>,
    /// Block of every server (`u32::MAX`: a server with no link).
    pub block_of: Vec<u32>,
    /// Pods (indices into `blocks` per pod); one entry when the fabric has one pod, and
    /// then the tree has no pod level.
    pub pods: Vec<Vec<u32>>,
    /// Servers per scale-up domain.
    pub servers_per_domain: u32,
    /// Rate of one server link (bits/s), the first server's first link.
    pub host_link_bps: u64,
    /// Rate of one leaf up link (bits/s), 0 when the leaves have none.
    pub leaf_up_bps: u64,
    /// Rate of one tier-2 up link (bits/s), 0 when the fabric has two tiers.
    pub spine_up_bps: u64,
}

/// Slurm node name of a server: `host<s>`, the server part of the model's NIC names
/// `host<s>-nic<r>`.
pub fn server_name(server: u32) -> String {
    format!("host{server}")
}

fn find(parent: &mut [u32], mut x: u32) -> u32 {
    while parent[x as usize] != x {
        parent[x as usize] = parent[parent[x as usize] as usize];
        x = parent[x as usize];
    }
    x
}

fn up_rate(f: &Fabric, tier: u8) -> u64 {
    f.switches_in_tier(tier)
        .next()
        .and_then(|s| {
            (0..f.degree(s) as u16)
                .find(|&p| f.direction(s, p) == Direction::Up)
                .map(|p| f.link(f.port_link(s, p)).rate_bps)
        })
        .unwrap_or(0)
}

impl SchedTree {
    /// The scheduler view of `f`.
    pub fn new(f: &Fabric) -> SchedTree {
        let lay = f.host_layout();
        let nps = lay.nics_per_server;
        let nh = f.num_hosts() as u32;
        let ns = f.num_switches();
        // union-find over leaves (switch index = id − hosts)
        let mut parent: Vec<u32> = (0..ns as u32).collect();
        let mut first_leaf: Vec<Option<u32>> = vec![None; lay.servers as usize];
        for s in 0..lay.servers {
            for r in 0..nps {
                let h = NodeId(s * nps + r);
                for p in f.host_planes(h) {
                    let Some(a) = f.attachment(h, p) else {
                        continue;
                    };
                    let l = a.leaf.0 - nh;
                    match first_leaf[s as usize] {
                        None => first_leaf[s as usize] = Some(l),
                        Some(l0) => {
                            let (x, y) = (find(&mut parent, l0), find(&mut parent, l));
                            parent[x.max(y) as usize] = x.min(y);
                        }
                    }
                }
            }
        }
        // group servers by component root, in order of the component's smallest leaf
        let mut comps: BTreeMap<u32, Vec<u32>> = BTreeMap::new();
        for s in 0..lay.servers {
            if let Some(l) = first_leaf[s as usize] {
                let c = find(&mut parent, l);
                comps.entry(c).or_default().push(s);
            }
        }
        // leaves of each component
        let mut comp_leaves: BTreeMap<u32, Vec<u32>> = BTreeMap::new();
        for l in 0..ns as u32 {
            if f.tier(NodeId(l + nh)) == crate::model::TIER_LEAF {
                let c = find(&mut parent, l);
                if comps.contains_key(&c) {
                    comp_leaves.entry(c).or_default().push(l);
                }
            }
        }
        let mut by_pod: BTreeMap<u32, Vec<(u32, Vec<u32>)>> = BTreeMap::new();
        for (c, servers) in comps {
            let leaves = &comp_leaves[&c];
            let pod = f.pod(NodeId(leaves[0] + nh)).unwrap_or(0);
            by_pod.entry(pod).or_default().push((c, servers));
        }
        let mut blocks = Vec::new();
        let mut pods = Vec::new();
        for (pod, comps_in_pod) in &by_pod {
            let mut idx = Vec::new();
            let n_in_pod = comps_in_pod.len();
            for (i, (c, servers)) in comps_in_pod.iter().enumerate() {
                let leaves = &comp_leaves[c];
                let per_plane = leaves.len() <= f.num_planes();
                let name = if per_plane {
                    strip_plane(f.node_name(NodeId(leaves[0] + nh))).to_string()
                } else if n_in_pod == 1 {
                    format!("pod{pod}")
                } else {
                    format!("pod{pod}-rg{i}")
                };
                idx.push(blocks.len() as u32);
                blocks.push(Block {
                    name,
                    servers: servers.clone(),
                    pod: *pod,
                });
            }
            pods.push(idx);
        }
        let mut block_of = vec![u32::MAX; lay.servers as usize];
        for (b, blk) in blocks.iter().enumerate() {
            for &s in &blk.servers {
                block_of[s as usize] = b as u32;
            }
        }
        let host_link_bps = f
            .attachment(NodeId(0), f.host_planes(NodeId(0)).next().unwrap_or(0))
            .map_or(0, |a| f.link(a.link).rate_bps);
        SchedTree {
            root: safe_name(f.name()),
            servers: lay.servers,
            blocks,
            block_of,
            pods,
            servers_per_domain: (lay.scale_up_domain / lay.gpus_per_server.max(1)).max(1),
            host_link_bps,
            leaf_up_bps: up_rate(f, crate::model::TIER_LEAF),
            spine_up_bps: up_rate(f, crate::model::TIER_SPINE),
        }
    }

    /// True when the tree has a pod level: more than one pod, and some pod holds more
    /// than one block (a pod that is one block, an HPN segment, is that block).
    pub fn has_pods(&self) -> bool {
        self.pods.len() > 1 && self.pods.iter().any(|p| p.len() > 1)
    }

    /// Name of pod `p` (its index in [`Self::pods`]).
    pub fn pod_name(&self, p: usize) -> String {
        let pod = self.blocks[self.pods[p][0] as usize].pod;
        format!("pod{pod}")
    }

    /// Scale-up domain of a server.
    pub fn domain_of(&self, server: u32) -> u32 {
        server / self.servers_per_domain
    }

    /// True when every scale-up domain lies inside one block (so a domain label nests
    /// under the block label, as Kueue's levels must).
    pub fn domains_nest(&self) -> bool {
        (0..self.servers).all(|s| {
            let d0 = self.domain_of(s) * self.servers_per_domain;
            self.block_of[s as usize] == self.block_of[d0 as usize]
        })
    }

    /// Servers per block when all blocks have the same size, else the smallest.
    pub fn block_size(&self) -> u32 {
        self.blocks
            .iter()
            .map(|b| b.servers.len() as u32)
            .min()
            .unwrap_or(0)
    }
}

/// `pod3-leaf5` for `p0-pod3-leaf5`: plane 0's leaf stands for the same leaf of every plane.
fn strip_plane(name: &str) -> &str {
    match name.split_once('-') {
        Some((p, rest))
            if p.len() > 1 && p.starts_with('p') && p[1..].bytes().all(|b| b.is_ascii_digit()) =>
        {
            rest
        }
        _ => name,
    }
}

/// The fabric's name with anything but `[A-Za-z0-9_-]` replaced by `_`.
pub fn safe_name(name: &str) -> String {
    name.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' || c == '_' {
                c
            } else {
                '_'
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Rate, generators, presets};

    #[test]
    fn fat_tree_blocks_are_leaves() {
        let f = generators::fat_tree(4, Rate::gbps(400)).unwrap();
        let t = SchedTree::new(&f);
        assert_eq!(t.blocks.len(), 8);
        assert_eq!(t.blocks[0].name, "pod0-leaf0");
        assert_eq!(t.blocks[0].servers, vec![0, 1]);
        assert_eq!(t.pods.len(), 4);
        assert!(t.has_pods());
        assert_eq!(t.host_link_bps, 400_000_000_000);
        assert_eq!(t.leaf_up_bps, 400_000_000_000);
    }

    #[test]
    fn multi_plane_is_one_tree() {
        let f = presets::build("deepseek-mpft").unwrap();
        let t = SchedTree::new(&f);
        let all: usize = t.blocks.iter().map(|b| b.servers.len()).sum();
        assert_eq!(all as u32, t.servers);
        assert!(t.block_of.iter().all(|&b| b != u32::MAX));
        assert!(!t.blocks[0].name.starts_with("p0-"), "{}", t.blocks[0].name);
    }

    #[test]
    fn rail_optimised_blocks_are_segments() {
        let f = presets::build("alibaba-hpn").unwrap();
        let t = SchedTree::new(&f);
        assert_eq!(t.blocks.len(), 15, "one block per HPN segment");
        assert_eq!(t.blocks[0].name, "pod0");
        assert_eq!(t.block_size(), 128);
        assert!(t.domains_nest());
    }
}
