//! The fabric's own CSR adjacency (what the routing engines walk) against the same graph in
//! petgraph, on the traversal the routing core repeats for every destination: a BFS over
//! the switches from every leaf (hop distances to every switch), the same queue and distance
//! array over both graphs. Same distances asserted;
//! medians of alternating runs. The routing engines add the up*/down* rule and the
//! next-hop groups on top of this walk; this isolates the graph representation.
//!
//! `cargo run --release -p topo --example csr_petgraph -- [K...]` (default 16 32)

use std::collections::VecDeque;
use std::time::Instant;

use petgraph::graph::{NodeIndex, UnGraph};
use topo::{Fabric, NodeId, Rate, generators};

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

/// Sum of hop distances from every leaf to every switch, walking topo's CSR ports.
fn csr(f: &Fabric, leaves: &[NodeId]) -> u64 {
    let mut dist = vec![u32::MAX; f.num_nodes()];
    let mut q = VecDeque::new();
    let mut sum = 0u64;
    for &l in leaves {
        dist.fill(u32::MAX);
        dist[l.idx()] = 0;
        q.push_back(l);
        while let Some(n) = q.pop_front() {
            sum += dist[n.idx()] as u64;
            for (peer, _) in f.ports(n) {
                if !f.is_host(peer) && dist[peer.idx()] == u32::MAX {
                    dist[peer.idx()] = dist[n.idx()] + 1;
                    q.push_back(peer);
                }
            }
        }
    }
    sum
}

/// The same walk over petgraph's graph (`neighbors`), the queue and distance array as above.
fn petgraph_bfs(g: &UnGraph<bool, ()>, leaves: &[NodeId]) -> u64 {
    let mut dist = vec![u32::MAX; g.node_count()];
    let mut q = VecDeque::new();
    let mut sum = 0u64;
    for &l in leaves {
        dist.fill(u32::MAX);
        dist[l.idx()] = 0;
        q.push_back(NodeIndex::new(l.idx()));
        while let Some(n) = q.pop_front() {
            let d = dist[n.index()];
            sum += d as u64;
            for m in g.neighbors(n) {
                if !g[m] && dist[m.index()] == u32::MAX {
                    dist[m.index()] = d + 1;
                    q.push_back(m);
                }
            }
        }
    }
    sum
}

fn main() {
    let ks: Vec<u32> = std::env::args()
        .skip(1)
        .filter_map(|a| a.parse().ok())
        .collect();
    let ks = if ks.is_empty() { vec![16, 32] } else { ks };
    for k in ks {
        let f = generators::fat_tree(k, Rate::gbps(400)).expect("valid k");
        let leaves: Vec<NodeId> = f.switches().filter(|&s| f.tier(s) == 1).collect();
        // Nodes in topo's order (weight: is a host); hosts are never entered.
        let mut g = UnGraph::<bool, ()>::with_capacity(f.num_nodes(), f.num_links());
        for n in 0..f.num_nodes() as u32 {
            g.add_node(f.is_host(NodeId(n)));
        }
        for l in f.links() {
            if !f.is_host(l.a) && !f.is_host(l.b) {
                g.add_edge(NodeIndex::new(l.a.idx()), NodeIndex::new(l.b.idx()), ());
            }
        }
        let (mut own, mut pg) = (Vec::new(), Vec::new());
        for _ in 0..5 {
            let t = Instant::now();
            let a = csr(&f, &leaves);
            own.push(t.elapsed().as_secs_f64() * 1e3);
            let t = Instant::now();
            let b = petgraph_bfs(&g, &leaves);
            pg.push(t.elapsed().as_secs_f64() * 1e3);
            assert_eq!(a, b, "the two walks disagree");
        }
        let (a, b) = (median(own), median(pg));
        println!(
            "fat-tree k={k}: BFS over the switches from each of {} leaves: CSR {a:.1} ms, petgraph {b:.1} ms ({:.2}×)",
            leaves.len(),
            b / a
        );
    }
}
