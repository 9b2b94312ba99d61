//! The simulator's view of a fabric: nodes, global port ids, link rates and delays
//! in flat arrays, plus the routing source ([`Router`]).
//!
//! Node ids follow `topo`: hosts are `0..hosts`, switches after them; ports are
//! numbered per node from 0 and flattened into global port ids through a CSR
//! offset table, so a port's state lives at one array index.

use cc_algos::{Duration, Rate};
use std::collections::VecDeque;

/// Flattened topology.
#[derive(Clone, Debug)]
pub struct Net {
    /// Number of hosts (node ids `0..hosts`).
    pub hosts: u32,
    /// `port_off[n]..port_off[n+1]` are node `n`'s global port ids.
    pub port_off: Vec<u32>,
    /// Owning node of each global port.
    pub port_node: Vec<u32>,
    /// Global id of the port at the other end of the link.
    pub port_peer: Vec<u32>,
    /// Link rate of the port.
    pub port_rate: Vec<Rate>,
    /// One-way propagation delay of the link.
    pub port_delay: Vec<Duration>,
    /// Tier of each node (0 = host), for reports.
    pub tier: Vec<u8>,
    /// Fabric name.
    pub name: String,
}

impl Net {
    /// Number of nodes.
    pub fn nodes(&self) -> u32 {
        self.port_off.len() as u32 - 1
    }
    /// Number of global ports.
    pub fn ports(&self) -> u32 {
        self.port_node.len() as u32
    }
    /// Global port ids of node `n`.
    #[inline]
    pub fn ports_of(&self, n: u32) -> std::ops::Range<u32> {
        self.port_off[n as usize]..self.port_off[n as usize + 1]
    }
    /// Whether node `n` is a host.
    #[inline]
    pub fn is_host(&self, n: u32) -> bool {
        n < self.hosts
    }
    /// Peer node of a global port.
    #[inline]
    pub fn peer_node(&self, p: u32) -> u32 {
        self.port_node[self.port_peer[p as usize] as usize]
    }
    /// A host's NIC rate: the sum of its ports' rates (one per plane); 100 Gb/s
    /// for a host without ports.
    pub fn nic_rate(&self, h: u32) -> Rate {
        let bps: u64 = self
            .ports_of(h)
            .map(|p| self.port_rate[p as usize].as_bps())
            .sum();
        if bps == 0 {
            Rate::gbps(100)
        } else {
            Rate::bps(bps)
        }
    }
    /// Global port of node `n` leading to node `m` (first one), if any.
    pub fn port_to(&self, n: u32, m: u32) -> Option<u32> {
        self.ports_of(n).find(|&p| self.peer_node(p) == m)
    }

    /// Build from `topo`'s fabric model (ids and port numbers are kept).
    pub fn from_fabric(f: &topo::Fabric, default_delay: Duration) -> Net {
        let mut b = NetBuilder::new(f.num_hosts() as u32);
        for n in 0..f.num_nodes() as u32 {
            if n >= f.num_hosts() as u32 {
                b.add_switch(f.tier(topo::NodeId(n)));
            }
        }
        let mut off = Vec::with_capacity(f.num_nodes() + 1);
        let mut acc = 0u32;
        for n in 0..f.num_nodes() as u32 {
            off.push(acc);
            acc += f.degree(topo::NodeId(n)) as u32;
        }
        off.push(acc);
        let total = acc as usize;
        let mut port_node = vec![0u32; total];
        let mut port_peer = vec![u32::MAX; total];
        let mut port_rate = vec![Rate::ZERO; total];
        let mut port_delay = vec![default_delay; total];
        for l in f.links() {
            let pa = off[l.a.idx()] + l.a_port as u32;
            let pb = off[l.b.idx()] + l.b_port as u32;
            port_node[pa as usize] = l.a.0;
            port_node[pb as usize] = l.b.0;
            port_peer[pa as usize] = pb;
            port_peer[pb as usize] = pa;
            let r = Rate::bps(l.rate_bps);
            port_rate[pa as usize] = r;
            port_rate[pb as usize] = r;
            let d = l
                .delay_ns
                .map(|d| Duration::nanos(d as u64))
                .unwrap_or(default_delay);
            port_delay[pa as usize] = d;
            port_delay[pb as usize] = d;
        }
        Net {
            hosts: f.num_hosts() as u32,
            port_off: off,
            port_node,
            port_peer,
            port_rate,
            port_delay,
            tier: b.tier,
            name: f.name().to_string(),
        }
    }
}

/// Builds a [`Net`] link by link (tests, hand-made topologies).
#[derive(Debug, Clone)]
pub struct NetBuilder {
    hosts: u32,
    tier: Vec<u8>,
    links: Vec<(u32, u32, Rate, Duration)>,
    name: String,
}

impl NetBuilder {
    /// A fabric with `hosts` hosts (node ids `0..hosts`).
    pub fn new(hosts: u32) -> Self {
        NetBuilder {
            hosts,
            tier: vec![0; hosts as usize],
            links: Vec::new(),
            name: "custom".into(),
        }
    }
    /// Name the fabric.
    pub fn name(mut self, name: &str) -> Self {
        self.name = name.into();
        self
    }
    /// Add a switch of a tier (≥ 1); returns its node id.
    pub fn add_switch(&mut self, tier: u8) -> u32 {
        self.tier.push(tier.max(1));
        self.tier.len() as u32 - 1
    }
    /// Connect two nodes; ports are numbered in the order links are added.
    pub fn link(&mut self, a: u32, b: u32, rate: Rate, delay: Duration) -> &mut Self {
        self.links.push((a, b, rate, delay));
        self
    }
    /// Finish.
    pub fn build(self) -> Net {
        let n = self.tier.len();
        let mut deg = vec![0u32; n];
        for &(a, b, _, _) in &self.links {
            deg[a as usize] += 1;
            deg[b as usize] += 1;
        }
        let mut off = vec![0u32; n + 1];
        for i in 0..n {
            off[i + 1] = off[i] + deg[i];
        }
        let total = off[n] as usize;
        let mut next = off.clone();
        let mut port_node = vec![0; total];
        let mut port_peer = vec![0; total];
        let mut port_rate = vec![Rate::ZERO; total];
        let mut port_delay = vec![Duration::ZERO; total];
        for &(a, b, r, d) in &self.links {
            let pa = next[a as usize];
            next[a as usize] += 1;
            let pb = next[b as usize];
            next[b as usize] += 1;
            for (p, q, node) in [(pa, pb, a), (pb, pa, b)] {
                port_node[p as usize] = node;
                port_peer[p as usize] = q;
                port_rate[p as usize] = r;
                port_delay[p as usize] = d;
            }
        }
        Net {
            hosts: self.hosts,
            port_off: off,
            port_node,
            port_peer,
            port_rate,
            port_delay,
            tier: self.tier,
            name: self.name,
        }
    }

    /// `n` hosts on one switch (a single-bottleneck star), node `n` is the switch.
    pub fn star(n: u32, rate: Rate, delay: Duration) -> Net {
        let mut b = NetBuilder::new(n).name(&format!("star-{n}"));
        let s = b.add_switch(1);
        for h in 0..n {
            b.link(h, s, rate, delay);
        }
        b.build()
    }
}

/// Where next hops come from.
#[derive(Clone, Debug)]
pub enum Router {
    /// `topo`'s up*/down* ECMP tables (with its failure re-routing).
    Topo(Box<topo::Routes>),
    /// Shortest-path ECMP tables computed here by BFS (hand-made nets, tests).
    Bfs(BfsRoutes),
    /// Explicit per-(switch, destination) next hops (e.g. deliberately cyclic routing).
    Static(StaticRoutes),
}

impl Router {
    /// Equal-cost next-hop *local* port numbers of `switch` toward host `dst`.
    #[inline]
    pub fn next_hops(&self, switch: u32, dst: u32) -> &[u16] {
        match self {
            Router::Topo(r) => r.next_hops(topo::NodeId(switch), topo::NodeId(dst)),
            Router::Bfs(r) => r.next_hops(switch, dst),
            Router::Static(r) => r.next_hops(switch, dst),
        }
    }
}

/// Explicit routes: `(switch, dst) -> local ports`.
#[derive(Clone, Debug, Default)]
pub struct StaticRoutes {
    first_switch: u32,
    hosts: u32,
    table: Vec<Vec<u16>>,
}

impl StaticRoutes {
    /// Empty tables for `net`.
    pub fn new(net: &Net) -> Self {
        let sw = (net.nodes() - net.hosts) as usize;
        StaticRoutes {
            first_switch: net.hosts,
            hosts: net.hosts,
            table: vec![Vec::new(); sw * net.hosts as usize],
        }
    }
    /// Set the next hops of `switch` toward `dst`.
    pub fn set(&mut self, switch: u32, dst: u32, ports: Vec<u16>) {
        let i = (switch - self.first_switch) as usize * self.hosts as usize + dst as usize;
        self.table[i] = ports;
    }
    /// Next hops.
    pub fn next_hops(&self, switch: u32, dst: u32) -> &[u16] {
        let i = (switch - self.first_switch) as usize * self.hosts as usize + dst as usize;
        &self.table[i]
    }
}

/// Shortest-path ECMP by BFS from every destination's attachment set.
/// Hosts with the same set of neighbour switches share one table row.
#[derive(Clone, Debug)]
pub struct BfsRoutes {
    first_switch: u32,
    /// Row of each destination host.
    row_of_host: Vec<u32>,
    rows: u32,
    /// `(switch, row)` -> range in `pool`.
    off: Vec<u32>,
    pool: Vec<u16>,
    /// `host_index[h]..host_index[h+1]`: entries of `host_port` for host `h`.
    host_index: Vec<u32>,
    /// `(leaf switch, local port facing the host)` for every live host link.
    host_port: Vec<(u32, u16)>,
}

impl BfsRoutes {
    /// Compute over the links that are up (`up[p]` for global port `p`).
    pub fn compute(net: &Net, up: &[bool]) -> BfsRoutes {
        let nodes = net.nodes() as usize;
        let first_switch = net.hosts;
        let nsw = nodes - net.hosts as usize;
        // Group hosts by their (sorted) neighbour set.
        let mut key_rows: std::collections::HashMap<Vec<u32>, u32> = Default::default();
        let mut reps = Vec::new();
        let mut row_of_host = Vec::with_capacity(net.hosts as usize);
        for h in 0..net.hosts {
            let mut nb: Vec<u32> = net
                .ports_of(h)
                .filter(|&p| up[p as usize])
                .map(|p| net.peer_node(p))
                .collect();
            nb.sort_unstable();
            nb.dedup();
            let next = key_rows.len() as u32;
            let r = *key_rows.entry(nb).or_insert_with(|| {
                reps.push(h);
                next
            });
            row_of_host.push(r);
        }
        let rows = reps.len() as u32;
        let mut off = vec![0u32; nsw * rows as usize + 1];
        let mut pool = Vec::new();
        let mut dist = vec![u16::MAX; nodes];
        let mut q = VecDeque::new();
        // Build row by row, then transpose into (switch, row) order.
        let mut per_row: Vec<Vec<Vec<u16>>> = Vec::with_capacity(rows as usize);
        for &h in &reps {
            dist.fill(u16::MAX);
            dist[h as usize] = 0;
            q.clear();
            q.push_back(h);
            while let Some(n) = q.pop_front() {
                // Hosts other than the destination are not transit nodes.
                if net.is_host(n) && n != h {
                    continue;
                }
                for p in net.ports_of(n) {
                    if !up[p as usize] {
                        continue;
                    }
                    let m = net.peer_node(p);
                    if dist[m as usize] == u16::MAX {
                        dist[m as usize] = dist[n as usize] + 1;
                        q.push_back(m);
                    }
                }
            }
            let mut row = vec![Vec::new(); nsw];
            for (si, hops) in row.iter_mut().enumerate() {
                let s = first_switch + si as u32;
                let ds = dist[s as usize];
                if ds == u16::MAX || ds == 0 {
                    continue;
                }
                for p in net.ports_of(s) {
                    if !up[p as usize] {
                        continue;
                    }
                    let m = net.peer_node(p);
                    if net.is_host(m) {
                        continue; // the last hop is resolved per host
                    }
                    if dist[m as usize] == ds - 1 {
                        hops.push((p - net.port_off[s as usize]) as u16);
                    }
                }
            }
            per_row.push(row);
        }
        for si in 0..nsw {
            for r in 0..rows as usize {
                pool.extend_from_slice(&per_row[r][si]);
                off[si * rows as usize + r + 1] = pool.len() as u32;
            }
        }
        // The last hop: the leaf port facing each host, over live links only.
        let mut host_index = vec![0u32; net.hosts as usize + 1];
        let mut host_port = Vec::new();
        for h in 0..net.hosts {
            for p in net.ports_of(h) {
                if up[p as usize] {
                    let q = net.port_peer[p as usize];
                    let s = net.port_node[q as usize];
                    host_port.push((s, (q - net.port_off[s as usize]) as u16));
                }
            }
            host_index[h as usize + 1] = host_port.len() as u32;
        }
        BfsRoutes {
            first_switch,
            row_of_host,
            rows,
            off,
            pool,
            host_index,
            host_port,
        }
    }

    /// Next hops of `switch` toward `dst`.
    #[inline]
    pub fn next_hops(&self, switch: u32, dst: u32) -> &[u16] {
        let d = dst as usize;
        for i in self.host_index[d]..self.host_index[d + 1] {
            let (s, p) = &self.host_port[i as usize];
            if *s == switch {
                return std::slice::from_ref(p);
            }
        }
        let si = (switch - self.first_switch) as usize;
        let k = si * self.rows as usize + self.row_of_host[d] as usize;
        &self.pool[self.off[k] as usize..self.off[k + 1] as usize]
    }
}
