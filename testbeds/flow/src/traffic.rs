//! Traffic patterns and how their completion time and bus bandwidth follow from the flow
//! rates.
//!
//! Every pattern turns into flows between host NICs plus a rule that maps the max-min
//! rates to a completion time for `bytes` per rank. Bus bandwidth follows the nccl-tests
//! definitions (NVIDIA nccl-tests, `doc/PERFORMANCE.md`): all-reduce
//! `busbw = algbw × 2(n−1)/n`, all-to-all `busbw = algbw × (n−1)/n`, with
//! `algbw = bytes / time`. This is a bandwidth model: per-step latency is not modelled,
//! so small messages, where latency dominates, are out of its scope.
//!
//! * **Ring all-reduce** — rank `i` sends to rank `i+1`; `2(n−1)` steps of `bytes/n` each,
//!   all gated by the slowest flow: `time = 2(n−1)/n × bytes / min rate`, so
//!   `busbw = min rate`.
//! * **Tree all-reduce** — NCCL's double binary tree (Sanders, Speck, Träff 2009;
//!   [`double_binary_tree`], the same trees as the scenario compiler gives the packet
//!   simulator): two trees over the ranks, each carrying half the data, pipelined reduce
//!   up and broadcast down in chunks of [`scenario::TREE_CHUNK`]; every tree edge carries
//!   `bytes/2` each way, plus the pipeline's fill and drain, one chunk per level up and
//!   down: `time = (bytes/2 + 2 × depth × chunk) / min rate of the edges`.
//! * **Hierarchical all-reduce** — ranks grouped by scale-up domain: reduce-scatter and
//!   all-gather inside the domain over scale-up links (`2(g−1)/g × bytes / B_su`, g GPUs
//!   per domain), and between domains one ring per rail (the `j`-th NIC of every domain),
//!   each all-reducing `bytes / m` (m NICs per domain) over `channels` parallel
//!   connections per ring edge (an edge runs at the sum of its channels' rates): `2(D−1)/D × (bytes/m) / min rate`.
//!   The two phases are pipelined chunk by chunk (as NCCL's rings and trees overlap
//!   NVLink and network steps), so the time is the larger of the two.
//! * **Permutation** — each rank sends `bytes` to one other (random derangement with a
//!   seed); **all-to-all** — each rank sends `bytes/(n−1)` to every other; **incast** — each
//!   sender sends `bytes` to one receiver. Their completion time comes from a fluid
//!   simulation: rates are re-filled every time a flow finishes.

use topo::{Fabric, NodeId};

use crate::paths::Flow;

/// A traffic pattern over host NICs.
#[derive(Debug, Clone, PartialEq)]
pub enum Pattern {
    /// Random derangement of the hosts (seeded).
    Permutation {
        /// Participating NICs.
        hosts: Vec<NodeId>,
        /// Seed of the derangement.
        seed: u64,
    },
    /// Every host to every other.
    AllToAll {
        /// Participating NICs.
        hosts: Vec<NodeId>,
    },
    /// Ring all-reduce in rank order.
    RingAllReduce {
        /// NICs in ring order.
        ranks: Vec<NodeId>,
    },
    /// Double-binary-tree all-reduce over ranks in this order.
    TreeAllReduce {
        /// NICs in rank order.
        ranks: Vec<NodeId>,
    },
    /// Scale-up inside domains, rail-aligned rings between domains.
    Hierarchical {
        /// NICs of the job (any order; grouped by domain and rail here).
        ranks: Vec<NodeId>,
        /// Scale-up bandwidth per GPU, one direction (bits/s).
        scale_up_bps: f64,
        /// Parallel connections (NCCL channels / queue pairs) per ring edge, each hashed
        /// on its own: NCCL runs several channels per NIC, and a dual-port NIC spreads
        /// them over its ports.
        channels: u32,
    },
    /// Many senders to one receiver.
    Incast {
        /// Senders.
        senders: Vec<NodeId>,
        /// Receiver.
        receiver: NodeId,
    },
}

/// How a pattern's completion time follows from rates.
#[derive(Debug, Clone, PartialEq)]
pub enum Timing {
    /// All flows gated by the slowest: `time = max(fixed × bytes, factor × bytes × 8 / min
    /// rate)`, with the min taken per group of flows (`groups[i]` of flow i) and the max
    /// over groups. Every `per_edge` consecutive flows are the channels of one ring or tree
    /// edge (parallel connections between the same two ranks): an edge's rate is their sum.
    Gated {
        /// Multiplier of bytes (e.g. 2(n−1)/n for a ring).
        factor: f64,
        /// Group of each flow (all 0 for one ring).
        groups: Vec<u32>,
        /// Flows (channels) per edge.
        per_edge: u32,
        /// Time per byte of the phases outside the fabric (scale-up), seconds; they overlap
        /// the fabric phase, so the completion time is the larger of the two.
        fixed_s_per_byte: f64,
        /// Chunk steps a pipelined collective spends filling and draining (a tree: its
        /// depth up and down), each one chunk of [`scenario::TREE_CHUNK`] (or of the
        /// whole `factor × bytes` when smaller) more per edge; 0 for a ring.
        fill_chunks: u32,
    },
    /// Flows of `bytes[i]` each, completion by fluid simulation.
    Fluid {
        /// Bytes of each flow.
        bytes: Vec<f64>,
    },
}

/// Flows, timing rule and the bus-bandwidth factor of a pattern.
#[derive(Debug, Clone, PartialEq)]
pub struct Expanded {
    /// The flows.
    pub flows: Vec<Flow>,
    /// Completion rule.
    pub timing: Timing,
    /// `busbw = bytes / time × bus_factor`.
    pub bus_factor: f64,
    /// Ranks (GPUs for hierarchical collectives, else NICs).
    pub ranks: usize,
}

fn ring_flows(
    ranks: &[NodeId],
    channels: u32,
    flows: &mut Vec<Flow>,
    groups: &mut Vec<u32>,
    g: u32,
) {
    let n = ranks.len();
    if n < 2 {
        return;
    }
    for i in 0..n {
        for c in 0..channels {
            flows.push(Flow {
                src: ranks[i],
                dst: ranks[(i + 1) % n],
                id: (g as u64) << 32 | c as u64,
            });
            groups.push(g);
        }
    }
}

/// Levels (edges from root to the deepest leaf) of the deeper of the two trees.
fn tree_depth(n: usize) -> u32 {
    let mut deepest = 0;
    for t in 0..2u8 {
        for c in 0..n {
            let (mut at, mut d) = (c, 0u32);
            while let Some(p) = double_binary_tree(n, t, at) {
                at = p;
                d += 1;
                if d as usize > n {
                    break;
                }
            }
            deepest = deepest.max(d);
        }
    }
    deepest
}

/// NCCL's double binary tree, from the scenario compiler (which the packet simulator
/// runs), so the model and the simulator use one definition.
pub use scenario::double_binary_tree;

impl Pattern {
    /// Flows and timing of the pattern on fabric `f`.
    pub fn expand(&self, f: &Fabric) -> Expanded {
        let mut flows = Vec::new();
        let mut groups = Vec::new();
        match self {
            Pattern::RingAllReduce { ranks } => {
                ring_flows(ranks, 1, &mut flows, &mut groups, 0);
                let n = ranks.len() as f64;
                Expanded {
                    flows,
                    timing: Timing::Gated {
                        factor: 2.0 * (n - 1.0) / n,
                        groups,
                        per_edge: 1,
                        fixed_s_per_byte: 0.0,
                        fill_chunks: 0,
                    },
                    bus_factor: 2.0 * (n - 1.0) / n,
                    ranks: ranks.len(),
                }
            }
            Pattern::TreeAllReduce { ranks } => {
                let n = ranks.len();
                for t in 0..2u8 {
                    for c in 0..n {
                        let Some(p) = double_binary_tree(n, t, c) else {
                            continue;
                        };
                        let (c, p) = (ranks[c], ranks[p]);
                        for (a, b) in [(c, p), (p, c)] {
                            flows.push(Flow {
                                src: a,
                                dst: b,
                                id: t as u64,
                            });
                            groups.push(t as u32);
                        }
                    }
                }
                let nf = n as f64;
                Expanded {
                    flows,
                    timing: Timing::Gated {
                        factor: 0.5,
                        groups,
                        per_edge: 1,
                        fixed_s_per_byte: 0.0,
                        fill_chunks: 2 * tree_depth(n),
                    },
                    bus_factor: 2.0 * (nf - 1.0) / nf,
                    ranks: n,
                }
            }
            Pattern::Hierarchical {
                ranks,
                scale_up_bps,
                channels,
            } => hierarchical(f, ranks, *scale_up_bps, (*channels).max(1)),
            Pattern::Permutation { hosts, seed } => {
                let n = hosts.len();
                let perm = derangement(n, *seed);
                for (i, &j) in perm.iter().enumerate() {
                    flows.push(Flow {
                        src: hosts[i],
                        dst: hosts[j],
                        id: 0,
                    });
                }
                fluid(flows, 1.0, 1.0, n)
            }
            Pattern::AllToAll { hosts } => {
                let n = hosts.len();
                for &a in hosts {
                    for &b in hosts {
                        if a != b {
                            flows.push(Flow {
                                src: a,
                                dst: b,
                                id: 0,
                            });
                        }
                    }
                }
                let per = 1.0 / (n.max(2) - 1) as f64;
                fluid(flows, per, (n as f64 - 1.0) / n as f64, n)
            }
            Pattern::Incast { senders, receiver } => {
                for &s in senders {
                    flows.push(Flow {
                        src: s,
                        dst: *receiver,
                        id: 0,
                    });
                }
                let n = senders.len();
                fluid(flows, 1.0, n as f64, n + 1)
            }
        }
    }
}

fn fluid(flows: Vec<Flow>, share: f64, bus_factor: f64, ranks: usize) -> Expanded {
    let bytes = vec![share; flows.len()];
    Expanded {
        flows,
        timing: Timing::Fluid { bytes },
        bus_factor,
        ranks,
    }
}

/// A derangement of 0..n (no fixed point for n ≥ 2): Sattolo's algorithm gives a single
/// n-cycle; it is seeded with SplitMix64.
pub fn derangement(n: usize, seed: u64) -> Vec<usize> {
    let mut p: Vec<usize> = (0..n).collect();
    let mut rng = topo::failures::SplitMix64(seed);
    for i in (1..n).rev() {
        let j = (rng.next_u64() % i as u64) as usize;
        p.swap(i, j);
    }
    p
}

fn hierarchical(f: &Fabric, ranks: &[NodeId], scale_up_bps: f64, channels: u32) -> Expanded {
    let mut sorted = ranks.to_vec();
    sorted.sort_unstable();
    sorted.dedup();
    // domains in order of first appearance (sorted ids keep topology order)
    let mut domains: Vec<(u32, Vec<NodeId>)> = Vec::new();
    for &h in &sorted {
        let d = f.scale_up_domain_of(h);
        match domains.last_mut() {
            Some((dd, v)) if *dd == d => v.push(h),
            _ => domains.push((d, vec![h])),
        }
    }
    let lay = f.host_layout();
    let nd = domains.len();
    let m = domains.iter().map(|d| d.1.len()).min().unwrap_or(1).max(1);
    let g = (lay.scale_up_domain.max(1) as f64).min(
        // a job smaller than a domain uses only its servers' GPUs
        (sorted.len() as f64 / lay.nics_per_server.max(1) as f64) * lay.gpus_per_server as f64,
    );
    let gpus =
        (sorted.len() as f64 / lay.nics_per_server.max(1) as f64) * lay.gpus_per_server as f64;
    let mut flows = Vec::new();
    let mut groups = Vec::new();
    for rail in 0..m {
        let ring: Vec<NodeId> = domains.iter().map(|d| d.1[rail]).collect();
        ring_flows(&ring, channels, &mut flows, &mut groups, rail as u32);
    }
    let fixed_s_per_byte = if g > 1.0 && scale_up_bps > 0.0 {
        2.0 * (g - 1.0) / g * 8.0 / scale_up_bps
    } else {
        0.0
    };
    let d = nd as f64;
    Expanded {
        flows,
        timing: Timing::Gated {
            factor: if nd > 1 {
                2.0 * (d - 1.0) / d / m as f64
            } else {
                0.0
            },
            groups,
            per_edge: channels.max(1),
            fixed_s_per_byte,
            fill_chunks: 0,
        },
        bus_factor: 2.0 * (gpus - 1.0) / gpus.max(1.0),
        ranks: gpus as usize,
    }
}
