//! The fabric model: nodes, ports, links, planes, in flat arrays.
//!
//! * Nodes have compact ids ([`NodeId`], a `u32`). **Hosts come first**: host `h` is
//!   `NodeId(h)` for `h < num_hosts()`, so per-destination tables index by `NodeId.0`.
//!   A host is one *NIC* (one addressable endpoint); NICs are grouped into servers
//!   ([`Fabric::server_of`]) and servers into scale-up domains.
//! * Switches follow, ordered by plane, then tier (1 = leaf/ToR, 2 = spine/aggregation,
//!   3 = core), then pod. [`Fabric::plane_info`] gives the id ranges.
//! * Ports are numbered per node from 0 ([`Port`], a `u16`); a switch's down ports come
//!   first, then its up ports, then its global (Dragonfly+) ports. InfiniBand exports add 1
//!   (IB port 0 is the management port).
//! * Adjacency is CSR: [`Fabric::ports`] gives the `(peer, link)` of every port of a node.
//! * A [`Link`] joins `(a, a_port)` (the lower tier end) and `(b, b_port)`, with a rate in
//!   bits per second and an optional one-way propagation delay in nanoseconds.
//! * A host has at most one port per plane; [`Fabric::attachment`] says which leaf port it
//!   reaches in a plane.

use std::collections::HashMap;
use std::fmt;
use std::ops::Range;

/// A node (host NIC or switch). Hosts are `0..num_hosts`, switches after them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Default, serde::Serialize)]
#[serde(transparent)]
pub struct NodeId(pub u32);

impl NodeId {
    /// The id as an array index.
    #[inline]
    pub fn idx(self) -> usize {
        self.0 as usize
    }
}

impl fmt::Display for NodeId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "n{}", self.0)
    }
}

/// A link (one cable, full duplex).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Default, serde::Serialize)]
#[serde(transparent)]
pub struct LinkId(pub u32);

impl LinkId {
    /// The id as an array index.
    #[inline]
    pub fn idx(self) -> usize {
        self.0 as usize
    }
}

/// A port number, local to its node, from 0.
pub type Port = u16;

/// "No node" marker in flat arrays.
pub(crate) const NONE: u32 = u32::MAX;

/// Tier of a host.
pub const TIER_HOST: u8 = 0;
/// Tier of a leaf / ToR switch.
pub const TIER_LEAF: u8 = 1;
/// Tier of a spine (2-tier fabric) / aggregation switch (3-tier) / Dragonfly+ spine.
pub const TIER_SPINE: u8 = 2;
/// Tier of a core switch (3-tier fabric).
pub const TIER_CORE: u8 = 3;

/// Host or switch.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum NodeKind {
    /// An endpoint NIC (tier 0).
    Host,
    /// A switch (tier ≥ 1).
    Switch,
}

/// One cable between two node ports. `a` is the end on the lower tier (for a host link,
/// `a` is the host); for a same-tier (Dragonfly+ global) link, the lower id.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Link {
    /// Lower end.
    pub a: NodeId,
    /// Port on `a`.
    pub a_port: Port,
    /// Upper end.
    pub b: NodeId,
    /// Port on `b`.
    pub b_port: Port,
    /// Line rate in bits per second (each direction).
    pub rate_bps: u64,
    /// One-way propagation delay in nanoseconds, when the spec gives one.
    pub delay_ns: Option<u32>,
}

impl Link {
    /// The other end as seen from `n` (`n` must be an end).
    #[inline]
    pub fn other(&self, n: NodeId) -> (NodeId, Port) {
        if self.a == n {
            (self.b, self.b_port)
        } else {
            (self.a, self.a_port)
        }
    }
}

/// Which way a port points.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Direction {
    /// Toward a lower tier (to a host, or spine → leaf).
    Down,
    /// Toward a higher tier.
    Up,
    /// To the same tier (Dragonfly+ global links between spines).
    Global,
}

/// Where a host's port lands in one plane.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Attachment {
    /// Host port number.
    pub host_port: Port,
    /// The leaf switch.
    pub leaf: NodeId,
    /// The leaf's port toward the host.
    pub leaf_port: Port,
    /// The link.
    pub link: LinkId,
}

/// Topology family of a plane (decides the routing rule; see [`crate::routing`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum PlaneKind {
    /// Folded Clos / fat-tree (2 or 3 switch tiers), routed up*/down*.
    Clos,
    /// Dragonfly+: groups of leaf/spine, global links between spines, minimal routing.
    DragonflyPlus,
}

/// The switches of one plane.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PlaneInfo {
    /// Topology family.
    pub kind: PlaneKind,
    /// Switch ids per tier: `tiers[t - 1]` is the range of tier `t` (1..=3); empty if absent.
    pub tiers: [Range<u32>; 3],
    /// Number of pods (Dragonfly+ groups).
    pub pods: u32,
    /// Up ports per switch tier that lead outside the modelled fabric (e.g. to a core that
    /// is not modelled), counted for oversubscription only: `external_up[t - 1]`.
    pub external_up: [u32; 3],
    /// Rate of each of those external up links (bits/s), per tier.
    pub external_up_rate_bps: [u64; 3],
    /// Ports per switch of each tier as the spec (or preset) states: `radix[t - 1]`. A switch
    /// may use fewer (a leaf with an empty port); see [`Fabric::radix`].
    pub radix: [u32; 3],
}

impl PlaneInfo {
    /// All switch ids of the plane.
    pub fn switches(&self) -> Range<u32> {
        self.tiers[0].start..self.tiers.iter().map(|r| r.end).max().unwrap_or(0)
    }
    /// Leaf ids of the plane.
    pub fn leaves(&self) -> Range<u32> {
        self.tiers[0].clone()
    }
    /// Number of switch tiers present (2 or 3).
    pub fn num_tiers(&self) -> u8 {
        self.tiers.iter().filter(|r| !r.is_empty()).count() as u8
    }
}

/// Host grouping (servers of several NICs, scale-up domains).
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
pub struct HostLayout {
    /// Servers.
    pub servers: u32,
    /// NICs (host nodes) per server.
    pub nics_per_server: u32,
    /// GPUs per server.
    pub gpus_per_server: u32,
    /// GPUs per scale-up (NVLink) domain.
    pub scale_up_domain: u32,
}

/// A whole fabric: immutable topology. Link state (failures) lives in the routing tables.
#[derive(Clone)]
pub struct Fabric {
    pub(crate) name: String,
    pub(crate) hosts: HostLayout,
    pub(crate) tier: Vec<u8>,
    pub(crate) plane: Vec<u16>,
    pub(crate) pod: Vec<u32>,
    pub(crate) name_buf: String,
    pub(crate) name_off: Vec<u32>,
    pub(crate) port_off: Vec<u32>,
    pub(crate) port_peer: Vec<NodeId>,
    pub(crate) port_link: Vec<LinkId>,
    pub(crate) links: Vec<Link>,
    pub(crate) planes: Vec<PlaneInfo>,
    /// `[host * planes + plane]`, `None` if the host has no port in that plane.
    pub(crate) attach: Vec<Option<Attachment>>,
}

impl fmt::Debug for Fabric {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Fabric")
            .field("name", &self.name)
            .field("hosts", &self.num_hosts())
            .field("switches", &self.num_switches())
            .field("links", &self.num_links())
            .field("planes", &self.planes)
            .finish_non_exhaustive()
    }
}

impl Fabric {
    /// Fabric name (from the spec or generator).
    pub fn name(&self) -> &str {
        &self.name
    }
    /// Number of nodes (hosts + switches).
    pub fn num_nodes(&self) -> usize {
        self.tier.len()
    }
    /// Number of host NICs (`NodeId(0..num_hosts)`).
    pub fn num_hosts(&self) -> usize {
        (self.hosts.servers * self.hosts.nics_per_server) as usize
    }
    /// Number of switches.
    pub fn num_switches(&self) -> usize {
        self.num_nodes() - self.num_hosts()
    }
    /// Number of links.
    pub fn num_links(&self) -> usize {
        self.links.len()
    }
    /// Number of planes.
    pub fn num_planes(&self) -> usize {
        self.planes.len()
    }
    /// Host grouping.
    pub fn host_layout(&self) -> HostLayout {
        self.hosts
    }
    /// GPUs in the fabric.
    pub fn num_gpus(&self) -> u64 {
        self.hosts.servers as u64 * self.hosts.gpus_per_server as u64
    }
    /// Host ids.
    pub fn hosts(&self) -> impl Iterator<Item = NodeId> + '_ {
        (0..self.num_hosts() as u32).map(NodeId)
    }
    /// Switch ids.
    pub fn switches(&self) -> impl Iterator<Item = NodeId> + '_ {
        (self.num_hosts() as u32..self.num_nodes() as u32).map(NodeId)
    }
    /// Host or switch.
    pub fn kind(&self, n: NodeId) -> NodeKind {
        if self.tier[n.idx()] == TIER_HOST {
            NodeKind::Host
        } else {
            NodeKind::Switch
        }
    }
    /// True for hosts.
    #[inline]
    pub fn is_host(&self, n: NodeId) -> bool {
        n.idx() < self.num_hosts()
    }
    /// Tier: 0 host, 1 leaf/ToR, 2 spine/aggregation, 3 core.
    #[inline]
    pub fn tier(&self, n: NodeId) -> u8 {
        self.tier[n.idx()]
    }
    /// Plane of a switch; `None` for a host (hosts may span planes: see [`Self::host_planes`]).
    #[inline]
    pub fn plane(&self, n: NodeId) -> Option<u16> {
        let p = self.plane[n.idx()];
        (p != u16::MAX).then_some(p)
    }
    /// Pod (Dragonfly+ group) of a leaf or tier-2 switch, or of a host (its leaves' pod);
    /// `None` for core switches and the spines of a 2-tier fabric.
    #[inline]
    pub fn pod(&self, n: NodeId) -> Option<u32> {
        let p = self.pod[n.idx()];
        (p != NONE).then_some(p)
    }
    /// Server of a host NIC.
    pub fn server_of(&self, host: NodeId) -> u32 {
        host.0 / self.hosts.nics_per_server
    }
    /// NIC index (rail) of a host NIC within its server.
    pub fn nic_index(&self, host: NodeId) -> u32 {
        host.0 % self.hosts.nics_per_server
    }
    /// Scale-up (NVLink) domain of a host NIC.
    pub fn scale_up_domain_of(&self, host: NodeId) -> u32 {
        let servers_per_domain =
            (self.hosts.scale_up_domain / self.hosts.gpus_per_server.max(1)).max(1);
        self.server_of(host) / servers_per_domain
    }
    /// Node name (e.g. `p0-pod3-leaf5`, `host12-nic3`).
    pub fn node_name(&self, n: NodeId) -> &str {
        let s = self.name_off[n.idx()] as usize;
        let e = self.name_off[n.idx() + 1] as usize;
        &self.name_buf[s..e]
    }
    /// Map from names to ids (built on call; O(nodes)).
    pub fn name_index(&self) -> HashMap<&str, NodeId> {
        (0..self.num_nodes() as u32)
            .map(|i| (self.node_name(NodeId(i)), NodeId(i)))
            .collect()
    }
    /// Number of ports of a node.
    #[inline]
    pub fn degree(&self, n: NodeId) -> usize {
        (self.port_off[n.idx() + 1] - self.port_off[n.idx()]) as usize
    }
    /// Ports a node has: a switch's radix from its spec (at least the ports in use: with
    /// breakouts one radix port carries several links), a host's links.
    pub fn radix(&self, n: NodeId) -> u32 {
        let used = self.degree(n) as u32;
        match self.plane(n) {
            Some(p) if !self.is_host(n) => {
                let t = self.tier(n) as usize;
                self.planes[p as usize].radix[t - 1].max(used)
            }
            _ => used,
        }
    }
    /// Largest port count of any node.
    pub fn max_degree(&self) -> usize {
        self.port_off
            .windows(2)
            .map(|w| (w[1] - w[0]) as usize)
            .max()
            .unwrap_or(0)
    }
    /// `(peer, link)` of every port of `n`, indexed by port number.
    #[inline]
    pub fn ports(&self, n: NodeId) -> impl ExactSizeIterator<Item = (NodeId, LinkId)> + '_ {
        let r = self.port_off[n.idx()] as usize..self.port_off[n.idx() + 1] as usize;
        self.port_peer[r.clone()]
            .iter()
            .copied()
            .zip(self.port_link[r].iter().copied())
    }
    /// Peer node on a port.
    #[inline]
    pub fn peer(&self, n: NodeId, port: Port) -> NodeId {
        self.port_peer[self.port_off[n.idx()] as usize + port as usize]
    }
    /// Link on a port.
    #[inline]
    pub fn port_link(&self, n: NodeId, port: Port) -> LinkId {
        self.port_link[self.port_off[n.idx()] as usize + port as usize]
    }
    /// Which way a port points.
    pub fn direction(&self, n: NodeId, port: Port) -> Direction {
        let t = self.tier(n);
        let pt = self.tier(self.peer(n, port));
        match pt.cmp(&t) {
            std::cmp::Ordering::Less => Direction::Down,
            std::cmp::Ordering::Greater => Direction::Up,
            std::cmp::Ordering::Equal => Direction::Global,
        }
    }
    /// A link.
    #[inline]
    pub fn link(&self, l: LinkId) -> &Link {
        &self.links[l.idx()]
    }
    /// All links.
    pub fn links(&self) -> &[Link] {
        &self.links
    }
    /// Planes.
    pub fn planes(&self) -> &[PlaneInfo] {
        &self.planes
    }
    /// One plane.
    pub fn plane_info(&self, p: u16) -> &PlaneInfo {
        &self.planes[p as usize]
    }
    /// Where `host` attaches in `plane` (`None` if it has no port there).
    #[inline]
    pub fn attachment(&self, host: NodeId, plane: u16) -> Option<Attachment> {
        self.attach[host.idx() * self.planes.len() + plane as usize]
    }
    /// Planes a host has a port in.
    pub fn host_planes(&self, host: NodeId) -> impl Iterator<Item = u16> + '_ {
        (0..self.planes.len() as u16).filter(move |&p| self.attachment(host, p).is_some())
    }
    /// Switches of a tier in all planes.
    pub fn switches_in_tier(&self, tier: u8) -> impl Iterator<Item = NodeId> + '_ {
        self.planes
            .iter()
            .flat_map(move |p| p.tiers[tier as usize - 1].clone())
            .map(NodeId)
    }
}

/// Incremental construction of a [`Fabric`] (used by the generators).
#[derive(Debug)]
pub(crate) struct FabricBuilder {
    pub(crate) f: Fabric,
    next_port: Vec<u16>,
    ends: Vec<(u32, Port, u32, Port)>,
    nplanes: usize,
}

impl FabricBuilder {
    pub(crate) fn new(name: &str, hosts: HostLayout, num_planes: usize) -> Self {
        let nh = (hosts.servers * hosts.nics_per_server) as usize;
        let mut b = FabricBuilder {
            f: Fabric {
                name: name.to_string(),
                hosts,
                tier: Vec::new(),
                plane: Vec::new(),
                pod: Vec::new(),
                name_buf: String::new(),
                name_off: vec![0],
                port_off: Vec::new(),
                port_peer: Vec::new(),
                port_link: Vec::new(),
                links: Vec::new(),
                planes: Vec::new(),
                attach: vec![None; nh * num_planes],
            },
            next_port: Vec::new(),
            ends: Vec::new(),
            nplanes: num_planes,
        };
        for h in 0..nh as u32 {
            let s = h / hosts.nics_per_server;
            let r = h % hosts.nics_per_server;
            b.add_node(TIER_HOST, u16::MAX, NONE, format_args!("host{s}-nic{r}"));
        }
        b
    }

    pub(crate) fn add_node(
        &mut self,
        tier: u8,
        plane: u16,
        pod: u32,
        name: fmt::Arguments<'_>,
    ) -> NodeId {
        use fmt::Write;
        let id = NodeId(self.f.tier.len() as u32);
        self.f.tier.push(tier);
        self.f.plane.push(plane);
        self.f.pod.push(pod);
        let _ = self.f.name_buf.write_fmt(name);
        self.f.name_off.push(self.f.name_buf.len() as u32);
        self.next_port.push(0);
        id
    }

    /// Adds a link; ports are taken in creation order on each node.
    pub(crate) fn add_link(
        &mut self,
        a: NodeId,
        b: NodeId,
        rate_bps: u64,
        delay_ns: Option<u32>,
    ) -> LinkId {
        let ap = self.next_port[a.idx()];
        let bp = self.next_port[b.idx()];
        self.next_port[a.idx()] += 1;
        self.next_port[b.idx()] += 1;
        let id = LinkId(self.f.links.len() as u32);
        self.f.links.push(Link {
            a,
            a_port: ap,
            b,
            b_port: bp,
            rate_bps,
            delay_ns,
        });
        self.ends.push((a.0, ap, b.0, bp));
        if self.f.tier[a.idx()] == TIER_HOST {
            let plane = self.f.plane[b.idx()];
            let slot = a.idx() * self.nplanes + plane as usize;
            self.f.attach[slot] = Some(Attachment {
                host_port: ap,
                leaf: b,
                leaf_port: bp,
                link: id,
            });
            if self.f.pod[a.idx()] == NONE {
                self.f.pod[a.idx()] = self.f.pod[b.idx()];
            }
        }
        id
    }

    pub(crate) fn next_id(&self) -> u32 {
        self.f.tier.len() as u32
    }

    pub(crate) fn finish(mut self) -> Fabric {
        let n = self.f.tier.len();
        let mut off = Vec::with_capacity(n + 1);
        let mut acc = 0u32;
        off.push(0);
        for &d in &self.next_port {
            acc += d as u32;
            off.push(acc);
        }
        let mut peer = vec![NodeId(NONE); acc as usize];
        let mut link = vec![LinkId(NONE); acc as usize];
        for (i, &(a, ap, b, bp)) in self.ends.iter().enumerate() {
            let ia = off[a as usize] as usize + ap as usize;
            let ib = off[b as usize] as usize + bp as usize;
            peer[ia] = NodeId(b);
            link[ia] = LinkId(i as u32);
            peer[ib] = NodeId(a);
            link[ib] = LinkId(i as u32);
        }
        self.f.port_off = off;
        self.f.port_peer = peer;
        self.f.port_link = link;
        self.f
    }
}
