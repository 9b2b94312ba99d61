//! The routed testbed: a `topo` fabric (single- or multi-plane: one NIC port per plane,
//! probes per plane) realised as Linux namespaces (one per switch and per host) joined by
//! veth pairs, with the kernel forwarding IPv4 and IPv6 (dual stack,
//! [`RoutedOptions::ipv6`]) along the ECMP tables `topo` computes, programmed through
//! rtnetlink (no `ip`).
//!
//! - Addresses come from [`topo::addressing::AddressPlan`]: each switch–switch link gets
//!   its /31 and its /127, each host its address as a /32 (and /128) with a link-scope
//!   route to its leaf's gateway and a default route through it; the leaf carries the
//!   gateway address (/32, /128) on every host-facing port and a /32 (/128) route per
//!   host, so hosts under one leaf also talk through the leaf.
//! - IPv6 is switched on only in the routed testbed's namespaces ([`IPV6_SYSCTLS`]:
//!   no DAD, SLAAC, RA or router solicitation, addresses kept on link-down), before any
//!   veth exists; [`Netns::create`] keeps it off for the star testbed.
//! - Every switch row of [`topo::Routes`] becomes one route per destination ToR prefix
//!   and family: one gateway, or a legacy multipath route (`RTA_MULTIPATH`; weight =
//!   number of times a port appears in the group, passed to the kernel minus one, see
//!   [`crate::netlink`]) — or, with [`RoutedOptions::nexthop_objects`], next-hop objects
//!   and groups (hand-built RTM_NEWNEXTHOP) named by the route (RTA_NH_ID). The switches
//!   get the sysctls that make legacy multipath skip a down link (`ignore_routes_with_linkdown=1`, `fib_multipath_use_neigh=1`, NOTES.md)
//!   and the L4 multipath hash for both families (`fib_multipath_hash_policy=1`) so UDP
//!   flows with different ports spread.
//! - With [`RoutedOptions::link_mbps`] every veth end gets a tbf root qdisc
//!   ([`crate::netlink::Tbf`], TCA_OPTIONS built by hand) that is read back from the kernel;
//!   [`RoutedTestbed::blast`] measures what one UDP flow gets across the shaped fabric.
//! - [`RoutedTestbed::restore_link`] brings a failed link back (netlink, then
//!   [`topo::Routes::restore_links`]) and re-programs the entries that changed.
//! - [`RoutedTestbed::probe_rounds`] sends real UDP datagrams between host pairs, in
//!   several families at once, from sockets opened inside the host namespaces and
//!   reports which arrived.
//! - [`RoutedTestbed::spread`] sends many flows (distinct source ports) from one host and
//!   reads the leaf's per-uplink `tx_packets` (IFLA_STATS64) before and after.
//! - [`RoutedTestbed::fail_link`] sets a link down through netlink, re-routes with
//!   [`topo::Routes::fail_links`] (incremental) and re-programs only the changed entries.
//! - [`verify`] runs all of it and returns a [`VerifyReport`] with one [`FamilyReport`]
//!   per family (`fabric testbed verify`).
//!
//! Namespaces belong to a [`Testbed`] guard: they are removed on drop, panic and Ctrl-C.

use std::collections::HashSet;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr, UdpSocket};
use std::time::{Duration, Instant};

use netlink_packet_route::route::{RouteMessage, RouteScope};
use rtnetlink::RouteMessageBuilder;
use topo::addressing::AddressPlan;
use topo::routing::{LOCAL, NO_ROUTE};
use topo::{Fabric, LinkId, NodeId, Routes};

use super::netns::{Netns, in_netns};
use super::{Error, Result, Testbed};
use crate::netlink::{
    NextHop, Nl, Psched, Tbf, TbfState, multipath_route, multipath_route6, route_dst, route_hops,
};

/// UDP port every host listens on for probes.
pub const PROBE_PORT: u16 = 7_000;
/// UDP port of the rate measurement ([`RoutedTestbed::blast`]).
pub const BLAST_PORT: u16 = 7_001;
const MAGIC: u32 = 0xfab0_0001;

/// Interface name of port `p` of any node.
pub fn ifname(p: topo::Port) -> String {
    format!("p{p}")
}

/// Sysctls written in every switch namespace (key under `/proc/sys`, value).
pub const SWITCH_SYSCTLS: &[(&str, &str)] = &[
    ("net/ipv4/ip_forward", "1"),
    ("net/ipv4/conf/all/rp_filter", "0"),
    ("net/ipv4/conf/default/rp_filter", "0"),
    ("net/ipv4/conf/all/ignore_routes_with_linkdown", "1"),
    ("net/ipv4/conf/default/ignore_routes_with_linkdown", "1"),
    ("net/ipv4/fib_multipath_use_neigh", "1"),
    ("net/ipv4/fib_multipath_hash_policy", "1"),
];

/// IPv6 sysctls of every routed-testbed namespace (hosts and switches), written right
/// after the namespace is created and before any veth exists, so every link inherits
/// them from `conf/default`: no duplicate address detection (addresses usable at once,
/// never "tentative"), no SLAAC, no router advertisements or solicitations, and
/// addresses kept when a link is set down (so a restored link has its /127 again).
/// IPv6 itself is switched on last ([`Netns::create`] switches it off for the star).
pub const IPV6_SYSCTLS: &[(&str, &str)] = &[
    ("net/ipv6/conf/all/accept_dad", "0"),
    ("net/ipv6/conf/default/accept_dad", "0"),
    ("net/ipv6/conf/all/dad_transmits", "0"),
    ("net/ipv6/conf/default/dad_transmits", "0"),
    ("net/ipv6/conf/all/autoconf", "0"),
    ("net/ipv6/conf/default/autoconf", "0"),
    ("net/ipv6/conf/all/accept_ra", "0"),
    ("net/ipv6/conf/default/accept_ra", "0"),
    ("net/ipv6/conf/all/router_solicitations", "0"),
    ("net/ipv6/conf/default/router_solicitations", "0"),
    ("net/ipv6/conf/all/keep_addr_on_down", "1"),
    ("net/ipv6/conf/default/keep_addr_on_down", "1"),
    ("net/ipv6/conf/all/disable_ipv6", "0"),
    ("net/ipv6/conf/default/disable_ipv6", "0"),
];

/// IPv6 sysctls of every switch namespace: forwarding, skip next hops whose link lost
/// carrier, and the L4 (5-tuple) multipath hash.
pub const SWITCH_SYSCTLS_V6: &[(&str, &str)] = &[
    ("net/ipv6/conf/all/forwarding", "1"),
    ("net/ipv6/conf/default/forwarding", "1"),
    ("net/ipv6/conf/all/ignore_routes_with_linkdown", "1"),
    ("net/ipv6/conf/default/ignore_routes_with_linkdown", "1"),
    ("net/ipv6/fib_multipath_hash_policy", "1"),
];

/// An address family of the dual-stack testbed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, serde::Serialize)]
pub enum Family {
    V4,
    V6,
}

impl std::fmt::Display for Family {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Family::V4 => "IPv4",
            Family::V6 => "IPv6",
        })
    }
}

/// The route of `switch` toward destination leaf `leaf` as `(gateway, weight)` next hops
/// (`None`: the entry is local or there is no route). Pure: unit-tested without root.
pub fn entry_hops(
    f: &Fabric,
    plan: &AddressPlan,
    routes: &Routes,
    switch: NodeId,
    leaf: NodeId,
) -> Option<Vec<(Ipv4Addr, u8)>> {
    group_hops(routes, switch, leaf, |p| peer_addr(f, plan, switch, p))
}

/// The IPv6 twin of [`entry_hops`]: gateways are the peers' ends of the /127s.
pub fn entry_hops6(
    f: &Fabric,
    plan: &AddressPlan,
    routes: &Routes,
    switch: NodeId,
    leaf: NodeId,
) -> Option<Vec<(Ipv6Addr, u8)>> {
    group_hops(routes, switch, leaf, |p| peer_addr6(f, plan, switch, p))
}

fn group_hops<A: PartialEq + Copy>(
    routes: &Routes,
    switch: NodeId,
    leaf: NodeId,
    gateway: impl Fn(topo::Port) -> Option<A>,
) -> Option<Vec<(A, u8)>> {
    let e = routes.entry(switch, leaf);
    if e == LOCAL || e == NO_ROUTE {
        return None;
    }
    let mut hops: Vec<(A, u8)> = Vec::new();
    for &p in routes.groups().get(e) {
        let gw = gateway(p)?;
        match hops.iter_mut().find(|(g, _)| *g == gw) {
            Some((_, w)) => *w = w.saturating_add(1),
            None => hops.push((gw, 1)),
        }
    }
    (!hops.is_empty()).then_some(hops)
}

/// Address of the far end of `n`'s port `p` on a switch–switch link.
fn peer_addr(f: &Fabric, plan: &AddressPlan, n: NodeId, p: topo::Port) -> Option<Ipv4Addr> {
    let l = f.port_link(n, p);
    let (_, a, b) = plan.link_v4(l)?;
    Some(if f.link(l).a == n { b } else { a })
}

/// Address of `n`'s own end of port `p` on a switch–switch link.
fn own_addr(f: &Fabric, plan: &AddressPlan, n: NodeId, p: topo::Port) -> Option<(Ipv4Addr, u8)> {
    let l = f.port_link(n, p);
    let (net, a, b) = plan.link_v4(l)?;
    Some((if f.link(l).a == n { a } else { b }, net.len))
}

/// IPv6 address of the far end of `n`'s port `p` on a switch–switch link (/127).
fn peer_addr6(f: &Fabric, plan: &AddressPlan, n: NodeId, p: topo::Port) -> Option<Ipv6Addr> {
    let l = f.port_link(n, p);
    let (_, a, b) = plan.link_v6(l)?;
    Some(if f.link(l).a == n { b } else { a })
}

/// IPv6 address of `n`'s own end of port `p` on a switch–switch link.
fn own_addr6(f: &Fabric, plan: &AddressPlan, n: NodeId, p: topo::Port) -> Option<(Ipv6Addr, u8)> {
    let l = f.port_link(n, p);
    let (net, a, b) = plan.link_v6(l)?;
    Some((if f.link(l).a == n { a } else { b }, net.len))
}

/// Gateway (`::1`) of a leaf's IPv6 ToR prefix.
fn gateway_v6(plan: &AddressPlan, leaf: NodeId) -> Option<Ipv6Addr> {
    plan.tor_prefix_v6(leaf)
        .map(|n| Ipv6Addr::from(u128::from(n.addr) + 1))
}

/// Figures of building the testbed.
#[derive(Debug, Clone, Default, serde::Serialize)]
pub struct SetupStats {
    pub namespaces: usize,
    pub veths: usize,
    pub addresses: usize,
    pub routes: usize,
    /// Namespaces + sysctls.
    pub netns_s: f64,
    /// veth pairs up.
    pub links_s: f64,
    /// Addresses and routes.
    pub routes_s: f64,
    /// tbf qdiscs installed (and read back) with `link_mbps`.
    pub qdiscs: usize,
    /// Installing and reading back the qdiscs.
    pub shaping_s: f64,
    /// The shaping every veth end got (`None`: unshaped).
    pub tbf: Option<Tbf>,
    pub total_s: f64,
}

/// Outcome of one all-pairs probe round.
#[derive(Debug, Clone, serde::Serialize)]
pub struct ProbeRound {
    pub family: Family,
    /// Pairs probed.
    pub pairs: usize,
    /// Datagrams sent (first tries and retries).
    pub sent: usize,
    /// Pairs whose probe arrived.
    pub received: usize,
    /// Pairs whose probe never arrived (src, dst host names, plane).
    pub missing: Vec<(String, String, u16)>,
    /// Per plane that had pairs: (plane, pairs, received).
    pub per_plane: Vec<(u16, usize, usize)>,
    /// From the first send to the last arrival (or the timeout).
    pub elapsed_s: f64,
}

impl ProbeRound {
    pub fn ok(&self) -> bool {
        self.missing.is_empty()
    }
}

/// Per-uplink transmit counts of one leaf during a spread test.
#[derive(Debug, Clone, serde::Serialize)]
pub struct Spread {
    pub family: Family,
    pub src: String,
    pub dst: String,
    pub leaf: String,
    /// Whether `topo` says `src` reaches `dst` (else no flow is expected to arrive).
    pub reachable: bool,
    /// Flows (distinct source ports) sent, and how many arrived.
    pub flows: usize,
    pub delivered: usize,
    /// (interface, peer switch, tx packets during the test, link up).
    pub uplinks: Vec<(String, String, u64, bool)>,
}

impl Spread {
    /// Uplinks that carried at least one probe.
    pub fn used(&self) -> usize {
        self.uplinks.iter().filter(|u| u.2 > 0).count()
    }

    /// max / mean of the tx counts over the live uplinks (1.0 = perfect balance).
    pub fn imbalance(&self) -> f64 {
        let live: Vec<u64> = self.uplinks.iter().filter(|u| u.3).map(|u| u.2).collect();
        let sum: u64 = live.iter().sum();
        if live.is_empty() || sum == 0 {
            return f64::NAN;
        }
        *live.iter().max().expect("non-empty") as f64 / (sum as f64 / live.len() as f64)
    }
}

/// What a link failure (or a restore, [`RoutedTestbed::restore_link`]) did.
#[derive(Debug, Clone, serde::Serialize)]
pub struct Failure {
    /// `a:port -- b:port`.
    pub link: String,
    /// (switch, destination leaf) entries topo changed (IPv4 and IPv6 routes follow the
    /// same entries).
    pub entries_changed: usize,
    /// Routes replaced or deleted through netlink.
    pub routes_reprogrammed: usize,
    /// From link down (with a `between` step: from its end) — or link up — to the last
    /// route re-programmed.
    pub reprogram_s: f64,
    /// Restore only: from the link-up request until both ends were operationally up
    /// (`None`: not within 2 s, or a failure). Routes are re-programmed after that.
    pub oper_up_s: Option<f64>,
}

/// One host's probe sockets of one family (opened inside its namespace).
#[derive(Debug)]
struct Sock {
    addr: IpAddr,
    rx: UdpSocket,
    tx: UdpSocket,
}

/// One host's probe sockets in one plane.
#[derive(Debug)]
struct PlaneSock {
    v4: Sock,
    v6: Option<Sock>,
}

/// One host's probe sockets, per plane it has a port in.
#[derive(Debug)]
struct HostSock {
    planes: Vec<Option<PlaneSock>>,
}

impl HostSock {
    fn get(&self, fam: Family, plane: u16) -> Option<&Sock> {
        let p = self.planes.get(plane as usize)?.as_ref()?;
        match fam {
            Family::V4 => Some(&p.v4),
            Family::V6 => p.v6.as_ref(),
        }
    }
}

/// A next-hop group: its switch, family and `(member object, weight)` list.
type GroupKey = (NodeId, Family, Vec<(u32, u8)>);

/// Bookkeeping of next-hop-object programming.
#[derive(Debug)]
struct NhState {
    ifindex: Vec<Vec<u32>>,
    groups: std::sync::Mutex<std::collections::HashMap<GroupKey, u32>>,
    /// Objects written since the last link change at their switch (not re-sent).
    made: std::sync::Mutex<HashSet<(NodeId, u32)>>,
}

impl NhState {
    /// Whether object `id` of switch `s` must be (re)written; marks it written.
    fn needs(&self, s: NodeId, id: u32) -> bool {
        self.made.lock().expect("nh registry").insert((s, id))
    }

    /// Forget what was written at `nodes`: a link going down deletes the kernel's
    /// objects on it and shrinks the groups using them, so rewrite them when used.
    fn invalidate(&self, nodes: &[NodeId]) {
        self.made
            .lock()
            .expect("nh registry")
            .retain(|(n, _)| !nodes.contains(n));
    }
}

/// A probe path: source host, destination host, plane (multi-plane fabrics: one NIC
/// port per plane; a probe stays in its plane).
pub type Lane = (NodeId, NodeId, u16);

/// How [`RoutedTestbed::build_with`] builds the testbed.
#[derive(Debug, Clone)]
pub struct RoutedOptions {
    /// Dual stack: IPv6 addresses, routes and probes besides IPv4 (default on).
    pub ipv6: bool,
    /// Shape every link to this many Mb/s with a tbf root qdisc on both ends of every
    /// veth ([`Tbf::mbps`]: 32 KiB bucket, 20 ms of queue). `None`: unshaped.
    pub link_mbps: Option<u64>,
    /// Program switch routes as next-hop objects (RTM_NEWNEXTHOP, one per port and
    /// family, plus one multipath group per distinct port set; routes carry RTA_NH_ID)
    /// instead of legacy RTA_MULTIPATH routes.
    pub nexthop_objects: bool,
    /// Write the sysctls that make legacy multipath skip next hops whose link lost
    /// carrier (`ignore_routes_with_linkdown` for both families, IPv4
    /// `fib_multipath_use_neigh`). Default on; off to see the kernel without them.
    pub linkdown_sysctls: bool,
    /// Fail (and restore) a link at its `b` end (for a leaf uplink: the upper switch), so
    /// the `a` end only loses carrier; default: at its `a` end (admin-down there).
    pub fail_at_b_end: bool,
}

impl Default for RoutedOptions {
    fn default() -> Self {
        RoutedOptions {
            ipv6: true,
            link_mbps: None,
            nexthop_objects: false,
            linkdown_sysctls: true,
            fail_at_b_end: false,
        }
    }
}

/// The sysctls [`RoutedOptions::linkdown_sysctls`] switches off.
fn is_linkdown_sysctl(key: &str) -> bool {
    key.ends_with("ignore_routes_with_linkdown") || key.ends_with("fib_multipath_use_neigh")
}

/// Next-hop object id of `port` in family `fam` (gateway objects; groups start at
/// [`NH_GROUP_BASE`]).
fn nh_port_id(fam: Family, port: topo::Port) -> u32 {
    match fam {
        Family::V4 => 1 + port as u32,
        Family::V6 => 70_000 + port as u32,
    }
}

/// First id of next-hop groups.
const NH_GROUP_BASE: u32 = 200_000;

/// Outcome of [`RoutedTestbed::blast`]: one UDP flow at full speed for a while.
#[derive(Debug, Clone, serde::Serialize)]
pub struct Blast {
    pub family: Family,
    pub src: String,
    pub dst: String,
    /// UDP payload bytes per datagram.
    pub payload: usize,
    /// Ethernet frame bytes per datagram (payload + UDP + IP + Ethernet headers), what
    /// tbf counts.
    pub frame: usize,
    /// How long the sender sent, in s.
    pub send_s: f64,
    pub sent: u64,
    pub received: u64,
    /// Received frame rate between the first and the last arrival, in Mb/s.
    pub rx_mbps: f64,
}

/// A fabric realised as namespaces, veths and kernel routes.
#[derive(Debug)]
pub struct RoutedTestbed {
    // Field order: sockets and netlink clients go before the guard that deletes the
    // namespaces.
    hosts: Vec<HostSock>,
    nl: Vec<Nl>,
    ns: Vec<Netns>,
    fabric: Fabric,
    plan: AddressPlan,
    routes: Routes,
    ipv6: bool,
    fail_at_b_end: bool,
    /// With next-hop objects: link index per (node, port), and the group ids allocated
    /// per (switch, family, members).
    nexthops: Option<NhState>,
    round: u32,
    setup: SetupStats,
    tb: Testbed,
}

fn secs(t: Instant) -> f64 {
    t.elapsed().as_secs_f64()
}

fn io(what: impl Into<String>) -> impl FnOnce(std::io::Error) -> Error {
    let what = what.into();
    move |source| Error::Os { what, source }
}

impl RoutedTestbed {
    /// Build the namespaces, veths, addresses and routes of `f` (any number of planes),
    /// dual stack (see [`RoutedOptions`]).
    pub fn build(f: Fabric) -> Result<RoutedTestbed> {
        Self::build_with(f, &RoutedOptions::default())
    }

    /// [`Self::build`] with options.
    pub fn build_with(f: Fabric, opts: &RoutedOptions) -> Result<RoutedTestbed> {
        let plan = AddressPlan::new(&f)
            .map_err(|e| Error::Invalid(format!("fabric {}: addressing: {e}", f.name())))?;
        let routes = Routes::compute(&f);
        let mut tb = Testbed::new()?;
        let mut st = SetupStats::default();
        let t0 = Instant::now();

        // Namespaces.
        let mut ns = Vec::with_capacity(f.num_nodes());
        for i in 0..f.num_nodes() as u32 {
            let n = NodeId(i);
            let role = if f.is_host(n) {
                format!("h{i}")
            } else {
                format!("s{}", i - f.num_hosts() as u32)
            };
            let x = tb.add_netns(&role)?;
            if opts.ipv6 {
                for (k, v) in IPV6_SYSCTLS {
                    x.sysctl(k, v)?;
                }
            }
            if f.is_host(n) {
                x.sysctl("net/ipv4/conf/all/rp_filter", "0")?;
                x.sysctl("net/ipv4/conf/default/rp_filter", "0")?;
                if opts.ipv6 {
                    // A link set down marks its kept IPv6 addresses tentative; a host whose
                    // own link failed must still open its spread sockets (and see the
                    // probes fail), as it can in IPv4.
                    x.sysctl("net/ipv6/ip_nonlocal_bind", "1")?;
                }
            } else {
                for (k, v) in SWITCH_SYSCTLS {
                    if opts.linkdown_sysctls || !is_linkdown_sysctl(k) {
                        x.sysctl(k, v)?;
                    }
                }
                if opts.ipv6 {
                    for (k, v) in SWITCH_SYSCTLS_V6 {
                        if opts.linkdown_sysctls || !is_linkdown_sysctl(k) {
                            x.sysctl(k, v)?;
                        }
                    }
                }
            }
            ns.push(x);
        }
        st.namespaces = ns.len();
        st.netns_s = secs(t0);

        // veth pairs.
        let t1 = Instant::now();
        for l in f.links() {
            tb.connect(
                &ns[l.a.idx()],
                &ifname(l.a_port),
                &ns[l.b.idx()],
                &ifname(l.b_port),
            )?;
        }
        st.veths = f.num_links();
        st.links_s = secs(t1);

        // Shaping: a tbf root qdisc on both ends of every veth, read back.
        if let Some(mbps) = opts.link_mbps {
            if mbps == 0 {
                return Err(Error::Invalid(
                    "link rate: expected at least 1 Mb/s, got 0".into(),
                ));
            }
            let t = Instant::now();
            let psched = Psched::read()?;
            let tbf = Tbf::mbps(mbps);
            for l in f.links() {
                for (n, p) in [(l.a, l.a_port), (l.b, l.b_port)] {
                    let c = Nl::open(&ns[n.idx()])?;
                    c.set_tbf(&ifname(p), &tbf, &psched)?;
                    let idx = c.index(&ifname(p))?;
                    let got: Vec<TbfState> = c
                        .tbf_qdiscs()?
                        .into_iter()
                        .filter(|q| q.index == idx)
                        .collect();
                    if got.len() != 1
                        || got[0].rate_bytes != tbf.rate_bytes()
                        || got[0].limit != tbf.limit()
                    {
                        return Err(Error::Invalid(format!(
                            "tbf on {}:{} reads back as {got:?}, expected rate {} B/s, limit {} B",
                            f.node_name(n),
                            ifname(p),
                            tbf.rate_bytes(),
                            tbf.limit()
                        )));
                    }
                    st.qdiscs += 1;
                }
            }
            st.tbf = Some(tbf);
            st.shaping_s = secs(t);
        }

        // Addresses and routes.
        let t2 = Instant::now();
        let nl = ns.iter().map(Nl::open).collect::<Result<Vec<_>>>()?;
        for h in f.hosts() {
            for p in f.host_planes(h).collect::<Vec<_>>() {
                let (a, r) = host_link(&f, &plan, &nl, h, p, opts.ipv6, true)?;
                st.addresses += a;
                st.routes += r;
            }
        }
        for s in f.switches() {
            for p in 0..f.degree(s) as topo::Port {
                if let Some((a, len)) = own_addr(&f, &plan, s, p) {
                    nl[s.idx()].add_addr(&ifname(p), a, len)?;
                    st.addresses += 1;
                }
                if opts.ipv6
                    && let Some((a, len)) = own_addr6(&f, &plan, s, p)
                {
                    nl[s.idx()].add_addr(&ifname(p), a, len)?;
                    st.addresses += 1;
                }
            }
        }
        let mut rt = RoutedTestbed {
            hosts: Vec::new(),
            nl,
            ns,
            fabric: f,
            plan,
            routes,
            ipv6: opts.ipv6,
            fail_at_b_end: opts.fail_at_b_end,
            nexthops: None,
            round: 0,
            setup: st,
            tb,
        };
        if opts.nexthop_objects {
            let mut ifindex = Vec::with_capacity(rt.fabric.num_nodes());
            for i in 0..rt.fabric.num_nodes() {
                let n = NodeId(i as u32);
                let mut v = Vec::new();
                if !rt.fabric.is_host(n) {
                    for p in 0..rt.fabric.degree(n) as topo::Port {
                        v.push(rt.nl[i].index(&ifname(p))?);
                    }
                }
                ifindex.push(v);
            }
            rt.nexthops = Some(NhState {
                ifindex,
                groups: std::sync::Mutex::new(Default::default()),
                made: std::sync::Mutex::new(Default::default()),
            });
        }
        let switches: Vec<NodeId> = rt.fabric.switches().collect();
        for s in switches {
            for l in rt.plane_leaves(s) {
                rt.setup.routes += rt.program(s, l)?;
            }
        }
        rt.setup.routes_s = secs(t2);

        // Probe sockets inside the host namespaces.
        let hosts: Vec<NodeId> = rt.fabric.hosts().collect();
        for h in hosts {
            let mut planes = Vec::new();
            for p in 0..rt.fabric.num_planes() as u16 {
                let Some(addr) = rt.plan.host_v4(&rt.fabric, h, p) else {
                    planes.push(None);
                    continue;
                };
                let v4 = open_sock(&rt.ns[h.idx()], addr.into())?;
                let v6 = if rt.ipv6 {
                    let a6 = rt.plan.host_v6(&rt.fabric, h, p).expect("checked above");
                    Some(open_sock(&rt.ns[h.idx()], a6.into())?)
                } else {
                    None
                };
                planes.push(Some(PlaneSock { v4, v6 }));
            }
            rt.hosts.push(HostSock { planes });
        }
        rt.setup.total_s = secs(t0);
        Ok(rt)
    }

    /// Address of host `h`'s plane-0 port in family `fam` (`None`: not a host, no port
    /// in plane 0, or no such family here).
    pub fn host_addr(&self, h: NodeId, fam: Family) -> Option<IpAddr> {
        self.host_addr_in(h, fam, 0)
    }

    /// Address of host `h`'s port in `plane`, family `fam`.
    pub fn host_addr_in(&self, h: NodeId, fam: Family, plane: u16) -> Option<IpAddr> {
        self.hosts.get(h.idx())?.get(fam, plane).map(|s| s.addr)
    }

    /// The leaves of switch `s`'s plane (the destinations of its routes).
    fn plane_leaves(&self, s: NodeId) -> Vec<NodeId> {
        match self.fabric.plane(s) {
            Some(p) => self.fabric.plane_info(p).leaves().map(NodeId).collect(),
            None => Vec::new(),
        }
    }

    /// Send UDP datagrams of `payload` bytes from `src` to `dst` in family `fam` as fast
    /// as one blocking socket can for `dur` (a shaped fabric back-pressures the sender
    /// through its socket buffer), count what arrives, and measure the arrival rate in
    /// Ethernet frame bytes (what tbf meters) between the first and the last arrival.
    pub fn blast(
        &self,
        fam: Family,
        src: NodeId,
        dst: NodeId,
        dur: Duration,
        payload: usize,
    ) -> Result<Blast> {
        let missing = || Error::Invalid(format!("the testbed carries no {fam}"));
        let from = self.host_addr(src, fam).ok_or_else(missing)?;
        let to = self.host_addr(dst, fam).ok_or_else(missing)?;
        let (tx, rx) = (
            in_netns(&self.ns[src.idx()], || {
                UdpSocket::bind(SocketAddr::new(from, 0)).map_err(io(format!("bind [{from}]:0")))
            })??,
            in_netns(&self.ns[dst.idx()], || {
                UdpSocket::bind(SocketAddr::new(to, BLAST_PORT))
                    .map_err(io(format!("bind [{to}]:{BLAST_PORT}")))
            })??,
        );
        set_rcvbuf(&rx, 8 << 20)?;
        rx.set_read_timeout(Some(Duration::from_millis(300)))
            .map_err(io("set blast socket timeout"))?;
        let receiver = std::thread::spawn(move || {
            let mut buf = vec![0u8; 65_536];
            let (mut n, mut first, mut last) = (0u64, None::<Instant>, None::<Instant>);
            let deadline = Instant::now() + dur + Duration::from_secs(3);
            while Instant::now() < deadline {
                match rx.recv(&mut buf) {
                    Ok(_) => {
                        let now = Instant::now();
                        first.get_or_insert(now);
                        last = Some(now);
                        n += 1;
                    }
                    // Quiet for 300 ms after traffic: the sender is done.
                    Err(_) if first.is_some() => break,
                    Err(_) => {}
                }
            }
            (n, first, last)
        });
        let msg = vec![0x5au8; payload];
        let dst_sa = SocketAddr::new(to, BLAST_PORT);
        let t0 = Instant::now();
        let mut sent = 0u64;
        while t0.elapsed() < dur {
            if tx.send_to(&msg, dst_sa).is_ok() {
                sent += 1;
            }
        }
        let send_s = secs(t0);
        let (received, first, last) = receiver
            .join()
            .map_err(|_| Error::Invalid("blast receiver thread panicked".into()))?;
        let frame = payload
            + 8
            + 14
            + match fam {
                Family::V4 => 20,
                Family::V6 => 40,
            };
        let rx_mbps = match (first, last) {
            (Some(a), Some(b)) if received > 1 && b > a => {
                (received - 1) as f64 * frame as f64 * 8.0 / (b - a).as_secs_f64() / 1e6
            }
            _ => 0.0,
        };
        Ok(Blast {
            family: fam,
            src: self.fabric.node_name(src).to_string(),
            dst: self.fabric.node_name(dst).to_string(),
            payload,
            frame,
            send_s,
            sent,
            received,
            rx_mbps,
        })
    }

    /// The address families this testbed carries (IPv4, and IPv6 unless switched off).
    pub fn families(&self) -> Vec<Family> {
        if self.ipv6 {
            vec![Family::V4, Family::V6]
        } else {
            vec![Family::V4]
        }
    }

    /// Install (or replace, or delete) the routes (both families) of `s` toward leaf
    /// `leaf` from the current tables. Returns how many routes were written or deleted.
    fn program(&self, s: NodeId, leaf: NodeId) -> Result<usize> {
        if self.routes.entry(s, leaf) == LOCAL {
            return Ok(0);
        }
        if self.nexthops.is_some() {
            return self.program_nh(s, leaf);
        }
        let nl = &self.nl[s.idx()];
        let mut n = 0;
        if let Some(prefix) = self.plan.tor_prefix_v4(leaf) {
            match entry_hops(&self.fabric, &self.plan, &self.routes, s, leaf) {
                Some(hops) => nl.replace_route(multipath_route(prefix.addr, prefix.len, &hops))?,
                None => {
                    nl.del_route(prefix.addr, prefix.len)?;
                }
            }
            n += 1;
        }
        if self.ipv6
            && let Some(prefix) = self.plan.tor_prefix_v6(leaf)
        {
            match entry_hops6(&self.fabric, &self.plan, &self.routes, s, leaf) {
                Some(hops) => nl.replace_route(multipath_route6(prefix.addr, prefix.len, &hops))?,
                None => {
                    nl.del_route(prefix.addr, prefix.len)?;
                }
            }
            n += 1;
        }
        Ok(n)
    }

    /// [`Self::program`] with next-hop objects: (re)create one gateway object per port
    /// of the group (the kernel deletes the objects of a link that goes down, so they are
    /// re-added whenever used), one multipath group object per distinct port set (weights
    /// − 1, as in routes), and replace the route with one that only names the object
    /// (RTA_NH_ID). No route: the route is deleted.
    fn program_nh(&self, s: NodeId, leaf: NodeId) -> Result<usize> {
        let st = self.nexthops.as_ref().expect("next-hop mode");
        let nl = &self.nl[s.idx()];
        let e = self.routes.entry(s, leaf);
        let mut ports: Vec<(topo::Port, u8)> = Vec::new();
        if e != NO_ROUTE {
            for &p in self.routes.groups().get(e) {
                match ports.iter_mut().find(|x| x.0 == p) {
                    Some(x) => x.1 = x.1.saturating_add(1),
                    None => ports.push((p, 1)),
                }
            }
        }
        let mut n = 0;
        for fam in self.families() {
            let prefix: Option<(IpAddr, u8)> = match fam {
                Family::V4 => self
                    .plan
                    .tor_prefix_v4(leaf)
                    .map(|p| (p.addr.into(), p.len)),
                Family::V6 => self
                    .plan
                    .tor_prefix_v6(leaf)
                    .map(|p| (p.addr.into(), p.len)),
            };
            let Some((dst, len)) = prefix else { continue };
            n += 1;
            if ports.is_empty() {
                nl.del_route(dst, len)?;
                continue;
            }
            let mut members = Vec::new();
            for &(p, w) in &ports {
                let gateway: IpAddr = match fam {
                    Family::V4 => peer_addr(&self.fabric, &self.plan, s, p).map(IpAddr::V4),
                    Family::V6 => peer_addr6(&self.fabric, &self.plan, s, p).map(IpAddr::V6),
                }
                .ok_or_else(|| {
                    Error::Invalid(format!(
                        "{} port {p}: no peer address",
                        self.fabric.node_name(s)
                    ))
                })?;
                let id = nh_port_id(fam, p);
                if st.needs(s, id) {
                    nl.set_nexthop(&NextHop::Via {
                        id,
                        gateway,
                        oif: st.ifindex[s.idx()][p as usize],
                    })?;
                }
                members.push((id, w));
            }
            let id = if let [(id, _)] = members[..] {
                id
            } else {
                let gid = {
                    let mut g = st.groups.lock().expect("group registry");
                    let next = NH_GROUP_BASE + g.len() as u32;
                    *g.entry((s, fam, members.clone())).or_insert(next)
                };
                if st.needs(s, gid) {
                    nl.set_nexthop(&NextHop::Group { id: gid, members })?;
                }
                gid
            };
            let msg = match (fam, dst) {
                (Family::V4, IpAddr::V4(d)) => RouteMessageBuilder::<Ipv4Addr>::new()
                    .destination_prefix(d, len)
                    .nhid(id)
                    .build(),
                (_, IpAddr::V6(d)) => RouteMessageBuilder::<Ipv6Addr>::new()
                    .destination_prefix(d, len)
                    .nhid(id)
                    .build(),
                _ => unreachable!("prefix family follows fam"),
            };
            nl.replace_route(msg)?;
        }
        Ok(n)
    }

    /// The route of switch `s` toward leaf `leaf` as the kernel holds it now, read back
    /// through a netlink dump: `(gateway, weight)` next hops (weight = stored + 1), `None`
    /// if there is no such route. For checking what [`Self::program`] wrote.
    pub fn kernel_hops(
        &self,
        s: NodeId,
        leaf: NodeId,
        fam: Family,
    ) -> Result<Option<Vec<(IpAddr, u16)>>> {
        let (dst, msgs) = match fam {
            Family::V4 => {
                let p = self.plan.tor_prefix_v4(leaf);
                (
                    p.map(|p| (IpAddr::V4(p.addr), p.len)),
                    self.nl[s.idx()].routes()?,
                )
            }
            Family::V6 => {
                let p = self.plan.tor_prefix_v6(leaf);
                (
                    p.map(|p| (IpAddr::V6(p.addr), p.len)),
                    self.nl[s.idx()].routes6()?,
                )
            }
        };
        let Some(dst) = dst else {
            return Ok(None);
        };
        Ok(msgs
            .iter()
            .find(|m| route_dst(m) == Some(dst))
            .map(route_hops))
    }

    /// The next hops `topo` wants for `s` → `leaf` in family `fam`, in the form of
    /// [`Self::kernel_hops`].
    pub fn wanted_hops(&self, s: NodeId, leaf: NodeId, fam: Family) -> Option<Vec<(IpAddr, u16)>> {
        let mut v: Vec<(IpAddr, u16)> = match fam {
            Family::V4 => entry_hops(&self.fabric, &self.plan, &self.routes, s, leaf)?
                .into_iter()
                .map(|(a, w)| (a.into(), w.into()))
                .collect(),
            Family::V6 => entry_hops6(&self.fabric, &self.plan, &self.routes, s, leaf)?
                .into_iter()
                .map(|(a, w)| (a.into(), w.into()))
                .collect(),
        };
        v.sort();
        Some(v)
    }
    /// The fabric.
    pub fn fabric(&self) -> &Fabric {
        &self.fabric
    }

    /// The current routing state (after failures).
    pub fn routes(&self) -> &Routes {
        &self.routes
    }

    /// Setup figures.
    pub fn setup(&self) -> &SetupStats {
        &self.setup
    }

    /// The run's namespace guard.
    pub fn testbed(&self) -> &Testbed {
        &self.tb
    }

    /// Namespace of node `n`.
    pub fn netns(&self, n: NodeId) -> &Netns {
        &self.ns[n.idx()]
    }

    /// Netlink client of node `n`.
    pub fn nl(&self, n: NodeId) -> &Nl {
        &self.nl[n.idx()]
    }

    /// Ordered host pairs with a port in a common plane, per such plane, split by
    /// whether `topo` says they reach each other there now.
    fn lanes(&self, reachable: bool) -> Vec<Lane> {
        let mut v = Vec::new();
        for p in 0..self.fabric.num_planes() as u16 {
            for s in self.fabric.hosts() {
                if self.fabric.attachment(s, p).is_none() {
                    continue;
                }
                for d in self.fabric.hosts() {
                    if s != d
                        && self.fabric.attachment(d, p).is_some()
                        && self.routes.plane_reaches(s, d, p) == reachable
                    {
                        v.push((s, d, p));
                    }
                }
            }
        }
        v
    }

    /// Ordered host pairs (per common plane) `topo` says can reach each other now.
    pub fn reachable_pairs(&self) -> Vec<Lane> {
        self.lanes(true)
    }

    /// Ordered host pairs (per common plane) `topo` says cannot reach each other now.
    pub fn unreachable_pairs(&self) -> Vec<Lane> {
        self.lanes(false)
    }

    fn payload(&self, src: NodeId, dst: NodeId) -> [u8; 16] {
        let mut b = [0u8; 16];
        b[0..4].copy_from_slice(&MAGIC.to_be_bytes());
        b[4..8].copy_from_slice(&self.round.to_be_bytes());
        b[8..12].copy_from_slice(&src.0.to_be_bytes());
        b[12..16].copy_from_slice(&dst.0.to_be_bytes());
        b
    }

    /// Drain every host's probe sockets of family `fam`; calls `seen(src, dst, plane)`
    /// for this round's probes (the plane is the receiving socket's).
    fn drain(&self, fam: Family, mut seen: impl FnMut(NodeId, NodeId, u16)) {
        let mut buf = [0u8; 64];
        for (i, h) in self.hosts.iter().enumerate() {
            for p in 0..h.planes.len() as u16 {
                let Some(sock) = h.get(fam, p) else { continue };
                while let Ok((n, _)) = sock.rx.recv_from(&mut buf) {
                    if n != 16 {
                        continue;
                    }
                    let w =
                        |k: usize| u32::from_be_bytes(buf[k..k + 4].try_into().expect("4 bytes"));
                    if w(0) != MAGIC || w(4) != self.round || w(12) != i as u32 {
                        continue;
                    }
                    seen(NodeId(w(8)), NodeId(w(12)), p);
                }
            }
        }
    }

    /// Send one UDP probe per pair (resent every `retry` while missing) and wait until
    /// all arrived or `timeout` passed.
    pub fn probe_round(
        &mut self,
        fam: Family,
        pairs: &[Lane],
        retry: Duration,
        timeout: Duration,
    ) -> ProbeRound {
        self.probe_rounds(&[fam], pairs, retry, timeout)
            .pop()
            .expect("one family")
    }

    /// [`Self::probe_round`] for several families at once (all probes in flight
    /// together); one [`ProbeRound`] per family, in the order given, each with the time
    /// of its own last arrival. Families the testbed does not carry report every pair
    /// missing.
    pub fn probe_rounds(
        &mut self,
        fams: &[Family],
        pairs: &[Lane],
        retry: Duration,
        timeout: Duration,
    ) -> Vec<ProbeRound> {
        self.round = self.round.wrapping_add(1);
        let t0 = Instant::now();
        let mut missing: Vec<HashSet<Lane>> = fams
            .iter()
            .map(|_| pairs.iter().copied().collect())
            .collect();
        let mut sent = vec![0; fams.len()];
        let mut done_at = vec![t0; fams.len()];
        let mut last_send: Option<Instant> = None;
        loop {
            if last_send.is_none_or(|t| t.elapsed() >= retry) {
                for (k, &fam) in fams.iter().enumerate() {
                    for &(s, d, p) in pairs {
                        if !missing[k].contains(&(s, d, p)) {
                            continue;
                        }
                        let (Some(from), Some(to)) = (
                            self.hosts[s.idx()].get(fam, p),
                            self.hosts[d.idx()].get(fam, p),
                        ) else {
                            continue;
                        };
                        // A send error (e.g. no route yet) counts as a lost probe.
                        let _ = from
                            .tx
                            .send_to(&self.payload(s, d), SocketAddr::new(to.addr, PROBE_PORT));
                        sent[k] += 1;
                    }
                }
                last_send = Some(Instant::now());
            }
            for (k, &fam) in fams.iter().enumerate() {
                let before = missing[k].len();
                let m = &mut missing[k];
                self.drain(fam, |s, d, p| {
                    m.remove(&(s, d, p));
                });
                if missing[k].len() < before {
                    done_at[k] = Instant::now();
                }
            }
            if missing.iter().all(|m| m.is_empty()) || t0.elapsed() >= timeout {
                break;
            }
            std::thread::sleep(Duration::from_micros(200));
        }
        let end = Instant::now();
        fams.iter()
            .enumerate()
            .map(|(k, &family)| {
                let mut miss: Vec<Lane> = missing[k].iter().copied().collect();
                miss.sort();
                let done = if miss.is_empty() { done_at[k] } else { end };
                let mut per_plane: Vec<(u16, usize, usize)> = Vec::new();
                for &(_, _, p) in pairs {
                    match per_plane.iter_mut().find(|x| x.0 == p) {
                        Some(x) => x.1 += 1,
                        None => per_plane.push((p, 1, 0)),
                    }
                }
                per_plane.sort();
                for x in &mut per_plane {
                    x.2 = x.1 - miss.iter().filter(|m| m.2 == x.0).count();
                }
                ProbeRound {
                    family,
                    pairs: pairs.len(),
                    sent: sent[k],
                    received: pairs.len() - miss.len(),
                    missing: miss
                        .into_iter()
                        .map(|(s, d, p)| {
                            (
                                self.fabric.node_name(s).to_string(),
                                self.fabric.node_name(d).to_string(),
                                p,
                            )
                        })
                        .collect(),
                    elapsed_s: (done - t0).as_secs_f64(),
                    per_plane,
                }
            })
            .collect()
    }

    fn uplinks(&self, leaf: NodeId) -> Vec<topo::Port> {
        (0..self.fabric.degree(leaf) as topo::Port)
            .filter(|&p| !self.fabric.is_host(self.fabric.peer(leaf, p)))
            .collect()
    }

    fn tx_counts(&self, n: NodeId) -> Result<Vec<(String, u64)>> {
        Ok(self.nl[n.idx()]
            .stats()?
            .into_iter()
            .map(|(name, s)| (name, s.tx_packets))
            .collect())
    }

    /// Send `flows` probes of family `fam` from `src` to `dst`, each from its own socket
    /// (distinct source port), and count what each uplink of `src`'s leaf transmitted
    /// meanwhile.
    pub fn spread(
        &mut self,
        fam: Family,
        src: NodeId,
        dst: NodeId,
        flows: usize,
    ) -> Result<Spread> {
        let f = &self.fabric;
        let leaf = f
            .attachment(src, 0)
            .ok_or_else(|| Error::Invalid(format!("{} is not attached", f.node_name(src))))?
            .leaf;
        let missing = || Error::Invalid(format!("the testbed carries no {fam}"));
        let addr = self.hosts[src.idx()].get(fam, 0).ok_or_else(missing)?.addr;
        let to = SocketAddr::new(
            self.hosts[dst.idx()].get(fam, 0).ok_or_else(missing)?.addr,
            PROBE_PORT,
        );
        let socks = in_netns(&self.ns[src.idx()], || -> Result<Vec<UdpSocket>> {
            (0..flows)
                .map(|_| {
                    UdpSocket::bind(SocketAddr::new(addr, 0))
                        .map_err(io(format!("bind [{addr}]:0")))
                })
                .collect()
        })??;
        self.round = self.round.wrapping_add(1);
        let before = self.tx_counts(leaf)?;
        let msg = self.payload(src, dst);
        let mut delivered = 0;
        for (i, s) in socks.iter().enumerate() {
            let _ = s.send_to(&msg, to);
            // Drain as we go so a small receive buffer never drops a flow.
            if i % 16 == 15 {
                self.drain(fam, |s, d, p| {
                    if (s, d, p) == (src, dst, 0) {
                        delivered += 1;
                    }
                });
            }
        }
        let t0 = Instant::now();
        while delivered < flows && t0.elapsed() < Duration::from_secs(2) {
            self.drain(fam, |s, d, p| {
                if (s, d, p) == (src, dst, 0) {
                    delivered += 1;
                }
            });
            std::thread::sleep(Duration::from_micros(500));
        }
        let after = self.tx_counts(leaf)?;
        let get = |v: &[(String, u64)], n: &str| v.iter().find(|x| x.0 == n).map_or(0, |x| x.1);
        let uplinks = self
            .uplinks(leaf)
            .into_iter()
            .map(|p| {
                let name = ifname(p);
                let up = self.routes.link_is_up(self.fabric.port_link(leaf, p));
                (
                    name.clone(),
                    self.fabric.node_name(self.fabric.peer(leaf, p)).to_string(),
                    get(&after, &name).saturating_sub(get(&before, &name)),
                    up,
                )
            })
            .collect();
        Ok(Spread {
            family: fam,
            reachable: self.routes.plane_reaches(src, dst, 0),
            src: self.fabric.node_name(src).to_string(),
            dst: self.fabric.node_name(dst).to_string(),
            leaf: self.fabric.node_name(leaf).to_string(),
            flows,
            delivered,
            uplinks,
        })
    }

    /// Fail link `l`: set its `a` end down through netlink (the `b` end loses carrier;
    /// the other way round with [`RoutedOptions::fail_at_b_end`]), re-route
    /// incrementally in `topo` and re-program the changed entries.
    pub fn fail_link(&mut self, l: LinkId) -> Result<Failure> {
        self.fail_link_with(l, None::<fn(&mut RoutedTestbed)>)
    }

    /// [`Self::fail_link`], calling `between(self)` after the link went down and before
    /// the routes are re-programmed (e.g. to probe what the kernel alone does).
    pub fn fail_link_with<F: FnOnce(&mut RoutedTestbed)>(
        &mut self,
        l: LinkId,
        between: Option<F>,
    ) -> Result<Failure> {
        let link = *self.fabric.link(l);
        let mut t0 = Instant::now();
        let (n, p) = self.down_end(l);
        self.nl[n.idx()].set_down(&ifname(p))?;
        if let Some(step) = between {
            step(self);
            t0 = Instant::now();
        }
        let rep = self.routes.fail_links(&self.fabric, &[l]);
        if let Some(st) = &self.nexthops {
            st.invalidate(&[link.a, link.b]);
        }
        let mut n = 0;
        for &(s, leaf) in &rep.changed {
            n += self.program(s, leaf)?;
        }
        Ok(Failure {
            link: format!(
                "{}:{} -- {}:{}",
                self.fabric.node_name(link.a),
                ifname(link.a_port),
                self.fabric.node_name(link.b),
                ifname(link.b_port)
            ),
            entries_changed: rep.changed.len(),
            routes_reprogrammed: n,
            reprogram_s: secs(t0),
            oper_up_s: None,
        })
    }

    /// The end of link `l` that [`Self::fail_link`] sets down.
    fn down_end(&self, l: LinkId) -> (NodeId, topo::Port) {
        let link = self.fabric.link(l);
        if self.fail_at_b_end {
            (link.b, link.b_port)
        } else {
            (link.a, link.a_port)
        }
    }

    /// The next-hop port list of every `(switch, leaf)` entry (empty: none or local), to
    /// find the entries a non-incremental re-route changed.
    fn table_snapshot(&self) -> Vec<(NodeId, NodeId, Vec<topo::Port>)> {
        let mut v = Vec::new();
        for s in self.fabric.switches() {
            for l in self.plane_leaves(s) {
                let e = self.routes.entry(s, l);
                let ports = if e == LOCAL || e == NO_ROUTE {
                    Vec::new()
                } else {
                    self.routes.groups().get(e).to_vec()
                };
                v.push((s, l, ports));
            }
        }
        v
    }

    /// Restore link `l` after [`Self::fail_link`]: set its `a` end up through netlink
    /// (the `b` end regains carrier), bring it back in `topo`
    /// ([`topo::Routes::restore_links`], which recomputes the tables), and re-program
    /// only the entries whose next hops changed (both families).
    pub fn restore_link(&mut self, l: LinkId) -> Result<Failure> {
        let link = *self.fabric.link(l);
        let t0 = Instant::now();
        let (n, p) = self.down_end(l);
        self.nl[n.idx()].set_up(&ifname(p))?;
        // Wait (≤ 2 s) until both ends are operationally up: before the kernel's link
        // watcher has run, the far end still drops what it sends (no ARP/ND replies), and
        // with `fib_multipath_use_neigh` the leaf then skips the restored next hop.
        let (ia, ib) = (ifname(link.a_port), ifname(link.b_port));
        let mut carrier_s = None;
        while t0.elapsed() < Duration::from_secs(2) {
            if self.nl[link.a.idx()].oper_up(&ia)? && self.nl[link.b.idx()].oper_up(&ib)? {
                carrier_s = Some(secs(t0));
                break;
            }
            std::thread::sleep(Duration::from_millis(1));
        }
        let before = self.table_snapshot();
        self.routes.restore_links(&self.fabric, &[l]);
        if let Some(st) = &self.nexthops {
            st.invalidate(&[link.a, link.b]);
        }
        let after = self.table_snapshot();
        let mut changed = 0;
        let mut n = 0;
        // A host's routes went with its link (the kernel flushes routes through a link
        // set down); `topo` has no entries for them: re-install both ends.
        if let Some(h) = [link.a, link.b]
            .into_iter()
            .find(|&x| self.fabric.is_host(x))
            && let Some(p) = self
                .fabric
                .host_planes(h)
                .find(|&p| self.fabric.attachment(h, p).is_some_and(|a| a.link == l))
        {
            n += host_link(&self.fabric, &self.plan, &self.nl, h, p, self.ipv6, false)?.1;
        }
        for (b, a) in before.iter().zip(&after) {
            if b.2 != a.2 {
                changed += 1;
                n += self.program(a.0, a.1)?;
            }
        }
        Ok(Failure {
            link: format!(
                "{}:{} -- {}:{}",
                self.fabric.node_name(link.a),
                ifname(link.a_port),
                self.fabric.node_name(link.b),
                ifname(link.b_port)
            ),
            entries_changed: changed,
            routes_reprogrammed: n,
            reprogram_s: secs(t0),
            oper_up_s: carrier_s,
        })
    }

    /// Delete every namespace now (also done on drop).
    pub fn teardown(mut self) -> Result<()> {
        self.hosts.clear();
        self.nl.clear();
        self.tb.teardown()
    }
}

/// Raise a socket's receive buffer past `rmem_max` (SO_RCVBUFFORCE, we are root).
fn set_rcvbuf(s: &UdpSocket, bytes: libc::c_int) -> Result<()> {
    use std::os::fd::AsRawFd;
    // SAFETY: a valid socket fd and a pointer to a c_int of the given size.
    let rc = unsafe {
        libc::setsockopt(
            s.as_raw_fd(),
            libc::SOL_SOCKET,
            libc::SO_RCVBUFFORCE,
            (&bytes as *const libc::c_int).cast(),
            std::mem::size_of::<libc::c_int>() as libc::socklen_t,
        )
    };
    if rc != 0 {
        return Err(Error::Os {
            what: "setsockopt SO_RCVBUFFORCE on a probe socket".into(),
            source: std::io::Error::last_os_error(),
        });
    }
    Ok(())
}

/// Addresses (with `add_addrs`) and routes of host `h`'s link to its leaf, both ends:
/// the host's address, a route to the gateway and a default route through it; the
/// leaf's gateway address on the port and a route to the host. Routes are replaced, so
/// this also re-installs what the kernel flushed when the link was set down. Returns
/// (addresses, routes) written.
fn host_link(
    f: &Fabric,
    plan: &AddressPlan,
    nl: &[Nl],
    h: NodeId,
    plane: u16,
    ipv6: bool,
    add_addrs: bool,
) -> Result<(usize, usize)> {
    let a = f.attachment(h, plane).ok_or_else(|| {
        Error::Invalid(format!(
            "host {} has no port in plane {plane}",
            f.node_name(h)
        ))
    })?;
    // Single plane: a default route. Several planes: one route per ToR prefix of the
    // plane through this plane's NIC, so a probe to a plane-p address leaves through the
    // plane-p port (and stays in plane p).
    let multi = f.num_planes() > 1;
    let plane_leaves: Vec<NodeId> = f.plane_info(plane).leaves().map(NodeId).collect();
    let addr = plan
        .host_v4(f, h, plane)
        .ok_or_else(|| Error::Invalid(format!("host {} has no IPv4 address", f.node_name(h))))?;
    let gw = plan
        .gateway_v4(a.leaf)
        .ok_or_else(|| Error::Invalid(format!("leaf {} has no prefix", a.leaf.0)))?;
    let hif = ifname(a.host_port);
    let lif = ifname(a.leaf_port);
    let hn = &nl[h.idx()];
    let ln = &nl[a.leaf.idx()];
    let (mut na, mut nr) = (0, 0);
    if add_addrs {
        hn.add_addr(&hif, addr, 32)?;
        ln.add_addr(&lif, gw, 32)?;
        na += 2;
    }
    let hidx = hn.index(&hif)?;
    let lidx = ln.index(&lif)?;
    hn.replace_route(link_route(gw, hidx))?;
    let dsts: Vec<(Ipv4Addr, u8)> = if multi {
        plane_leaves
            .iter()
            .filter_map(|&l| plan.tor_prefix_v4(l))
            .map(|p| (p.addr, p.len))
            .collect()
    } else {
        vec![(Ipv4Addr::UNSPECIFIED, 0)]
    };
    for &(d, len) in &dsts {
        hn.replace_route(
            RouteMessageBuilder::<Ipv4Addr>::new()
                .destination_prefix(d, len)
                .gateway(gw)
                .output_interface(hidx)
                .build(),
        )?;
    }
    ln.replace_route(link_route(addr, lidx))?;
    nr += 2 + dsts.len();
    if ipv6 {
        // The same shape in IPv6: host ::(p+2)/128, leaf gateway ::1/128 on every
        // host port, a connected /128 each way and the host's default (or per-ToR) routes.
        let addr6 = plan.host_v6(f, h, plane).ok_or_else(|| {
            Error::Invalid(format!("host {} has no IPv6 address", f.node_name(h)))
        })?;
        let gw6 = gateway_v6(plan, a.leaf)
            .ok_or_else(|| Error::Invalid(format!("leaf {} has no IPv6 prefix", a.leaf.0)))?;
        if add_addrs {
            hn.add_addr(&hif, addr6, 128)?;
            ln.add_addr(&lif, gw6, 128)?;
            na += 2;
        }
        hn.replace_route(link_route6(gw6, hidx))?;
        let dsts: Vec<(Ipv6Addr, u8)> = if multi {
            plane_leaves
                .iter()
                .filter_map(|&l| plan.tor_prefix_v6(l))
                .map(|p| (p.addr, p.len))
                .collect()
        } else {
            vec![(Ipv6Addr::UNSPECIFIED, 0)]
        };
        for &(d, len) in &dsts {
            hn.replace_route(
                RouteMessageBuilder::<Ipv6Addr>::new()
                    .destination_prefix(d, len)
                    .gateway(gw6)
                    .output_interface(hidx)
                    .build(),
            )?;
        }
        ln.replace_route(link_route6(addr6, lidx))?;
        nr += 2 + dsts.len();
    }
    Ok((na, nr))
}

/// Open a host's probe sockets for `addr` inside `ns`: a non-blocking receiver on
/// [`PROBE_PORT`] with a 4 MiB buffer and a sender on an ephemeral port.
fn open_sock(ns: &Netns, addr: IpAddr) -> Result<Sock> {
    let (rx, tx) = in_netns(ns, || -> Result<_> {
        let rx = UdpSocket::bind(SocketAddr::new(addr, PROBE_PORT))
            .map_err(io(format!("bind [{addr}]:{PROBE_PORT}")))?;
        let tx =
            UdpSocket::bind(SocketAddr::new(addr, 0)).map_err(io(format!("bind [{addr}]:0")))?;
        Ok((rx, tx))
    })??;
    rx.set_nonblocking(true)
        .map_err(io("set probe socket non-blocking"))?;
    set_rcvbuf(&rx, 4 << 20)?;
    Ok(Sock { addr, rx, tx })
}

/// A connected (no gateway) IPv6 /128 route to `dst` out of interface `oif`.
fn link_route6(dst: Ipv6Addr, oif: u32) -> RouteMessage {
    RouteMessageBuilder::<Ipv6Addr>::new()
        .destination_prefix(dst, 128)
        .output_interface(oif)
        .build()
}

/// A link-scope /32 route to `dst` out of interface `oif`.
fn link_route(dst: Ipv4Addr, oif: u32) -> RouteMessage {
    RouteMessageBuilder::<Ipv4Addr>::new()
        .destination_prefix(dst, 32)
        .output_interface(oif)
        .scope(RouteScope::Link)
        .build()
}

/// Options of [`verify`].
#[derive(Debug, Clone)]
pub struct VerifyOptions {
    /// How the testbed is built (dual stack by default).
    pub testbed: RoutedOptions,
    /// Flows (distinct source ports) of the ECMP spread test, per family.
    pub spread_flows: usize,
    /// Link to fail (default: the leaf uplink that carried most IPv4 spread flows).
    pub fail: Option<LinkId>,
    /// Time limit of one all-pairs round.
    pub round_timeout: Duration,
    /// Time limit for recovery after the failure.
    pub recover_limit: Duration,
    /// Before re-programming, probe all pairs once with only the kernel's own reaction
    /// to the link-down (legacy multipath + sysctls); adds that round to the recovery time.
    pub kernel_first: bool,
    /// After the failure: restore the link, re-program, probe all pairs again and check
    /// the spread uses the restored uplink again.
    pub restore: bool,
    /// With [`RoutedOptions::link_mbps`]: send one UDP flow per family for this long
    /// from the spread's source to its destination and check the received rate is
    /// within ±10 % of the link rate.
    pub blast: Duration,
}

impl Default for VerifyOptions {
    fn default() -> Self {
        VerifyOptions {
            testbed: RoutedOptions::default(),
            spread_flows: 256,
            fail: None,
            round_timeout: Duration::from_secs(3),
            recover_limit: Duration::from_secs(10),
            kernel_first: false,
            restore: true,
            blast: Duration::from_secs(1),
        }
    }
}

/// What [`verify`] measured for one address family.
#[derive(Debug, Clone, serde::Serialize)]
pub struct FamilyReport {
    pub family: Family,
    /// All pairs before the failure.
    pub before: ProbeRound,
    pub spread: Spread,
    /// With [`VerifyOptions::kernel_first`]: all pairs reachable before the failure,
    /// probed after the link-down and before re-programming (may miss some: informative).
    pub kernel_only: Option<ProbeRound>,
    /// The last probe round after the failure (the first fully successful one, if any).
    pub after: ProbeRound,
    /// Probe rounds sent after the failure until one fully succeeded.
    pub rounds_to_recover: usize,
    /// From link down to the end of this family's first fully successful round
    /// (`None`: never).
    pub recovery_s: Option<f64>,
    pub spread_after: Spread,
    /// With [`VerifyOptions::restore`]: the last probe round after the restore.
    pub restored: Option<ProbeRound>,
    /// Rounds after the restore until one fully succeeded.
    pub rounds_to_restore: usize,
    /// From link up to the end of this family's first fully successful round after it.
    pub restore_s: Option<f64>,
    /// The spread after the restore.
    pub spread_restored: Option<Spread>,
    /// Interface of the failed link on the spread's leaf, if it is one of its uplinks.
    pub failed_uplink: Option<String>,
    /// With shaping: the rate one UDP flow got across the fabric, before the failure.
    pub blast: Option<Blast>,
    /// With shaping: the link rate the blast must reach (±10 %), in Mb/s.
    pub link_mbps: Option<u64>,
}

impl FamilyReport {
    /// Whether the restore step passed (`true` when there was none): all pairs again,
    /// every spread flow delivered, and the restored uplink (if it is one of the spread
    /// leaf's) carries traffic again.
    pub fn restore_ok(&self) -> bool {
        let Some(r) = &self.restored else {
            return true;
        };
        let Some(sp) = &self.spread_restored else {
            return false;
        };
        r.ok()
            && self.restore_s.is_some()
            && (sp.delivered == sp.flows || !sp.reachable)
            && self
                .failed_uplink
                .as_ref()
                .is_none_or(|i| sp.uplinks.iter().any(|u| &u.0 == i && u.2 > 0 && u.3))
    }

    /// Every reachable pair reached before and after the failure, recovery happened,
    /// the spread used at least two uplinks and delivered every flow.
    pub fn ok(&self) -> bool {
        self.before.ok()
            && self.after.ok()
            && self.recovery_s.is_some()
            && self.spread.used() >= 2.min(self.spread.uplinks.len())
            && self.spread.delivered == self.spread.flows
            && (self.spread_after.delivered == self.spread_after.flows
                || !self.spread_after.reachable)
            && self.restore_ok()
            && self.rate_ok()
    }

    /// With shaping: the blast's received rate is within ±10 % of the link rate.
    pub fn rate_ok(&self) -> bool {
        match (self.link_mbps, &self.blast) {
            (None, _) => true,
            (Some(r), Some(b)) => (b.rx_mbps - r as f64).abs() <= 0.1 * r as f64,
            (Some(_), None) => false,
        }
    }
}

/// Everything [`verify`] measured.
#[derive(Debug, Clone, serde::Serialize)]
pub struct VerifyReport {
    pub fabric: String,
    pub hosts: usize,
    pub switches: usize,
    pub setup: SetupStats,
    /// One report per address family (IPv4 first).
    pub families: Vec<FamilyReport>,
    pub failure: Failure,
    /// Pairs topo says are unreachable after the failure (not probed): (src, dst, plane).
    pub unreachable: Vec<(String, String, u16)>,
    /// With [`VerifyOptions::restore`]: what restoring the link did.
    pub restore: Option<Failure>,
    /// Namespaces of this run still present after teardown (must be empty).
    pub leaked: Vec<String>,
}

impl VerifyReport {
    /// All checks of every family passed and nothing leaked.
    pub fn ok(&self) -> bool {
        !self.families.is_empty()
            && self.families.iter().all(FamilyReport::ok)
            && self.leaked.is_empty()
    }

    /// The report of family `fam`, if the testbed carried it.
    pub fn family(&self, fam: Family) -> Option<&FamilyReport> {
        self.families.iter().find(|r| r.family == fam)
    }
}

/// Probe `pairs` in rounds of ≤ 250 ms over `fams` until every family had one fully
/// successful round or `limit` passed since `t0`. Returns per family: the last round,
/// the number of rounds it took and the time from `t0` to the end of its first fully
/// successful round. Families are probed together; one that succeeded is not probed again.
fn probe_until_ok(
    rt: &mut RoutedTestbed,
    fams: &[Family],
    pairs: &[Lane],
    t0: Instant,
    limit: Duration,
) -> Vec<(ProbeRound, usize, Option<f64>)> {
    let mut out: Vec<Option<(ProbeRound, usize, Option<f64>)>> = vec![None; fams.len()];
    let mut rounds = 0;
    loop {
        rounds += 1;
        let todo: Vec<usize> = (0..fams.len())
            .filter(|&k| out[k].as_ref().is_none_or(|o| o.2.is_none()))
            .collect();
        let want: Vec<Family> = todo.iter().map(|&k| fams[k]).collect();
        let res = rt.probe_rounds(
            &want,
            pairs,
            Duration::from_millis(50),
            Duration::from_millis(250),
        );
        for (&k, r) in todo.iter().zip(res) {
            // Recovery ends with the end of the first fully successful round.
            let t = r.ok().then(|| t0.elapsed().as_secs_f64());
            out[k] = Some((r, rounds, t));
        }
        if out
            .iter()
            .all(|o| o.as_ref().is_some_and(|o| o.2.is_some()))
            || t0.elapsed() >= limit
        {
            break;
        }
    }
    out.into_iter().map(|o| o.expect("probed")).collect()
}

/// Build `f` as a routed testbed, probe all pairs, measure the ECMP spread, fail a link,
/// re-route, probe again, remove everything — for every address family the testbed
/// carries (IPv4 and IPv6 by default; probes of both families are in flight together).
pub fn verify(f: Fabric, opts: &VerifyOptions) -> Result<VerifyReport> {
    let mut rt = RoutedTestbed::build_with(f, &opts.testbed)?;
    let prefix = rt.testbed().ns_name("");
    let fams = rt.families();
    let pairs = rt.reachable_pairs();
    let before = rt.probe_rounds(
        &fams,
        &pairs,
        Duration::from_millis(200),
        opts.round_timeout,
    );

    // Spread: from the first host to the first host under another leaf that is farthest.
    let f = rt.fabric();
    let src = NodeId(0);
    let src_leaf = f
        .attachment(src, 0)
        .ok_or_else(|| Error::Invalid("host 0 is not attached".into()))?
        .leaf;
    let dst = f
        .hosts()
        .filter(|&h| f.attachment(h, 0).is_some_and(|a| a.leaf != src_leaf))
        .max_by_key(|&h| {
            let l = f.attachment(h, 0).expect("filtered").leaf;
            (
                rt.routes().distance(src_leaf, l).unwrap_or(0),
                u32::MAX - h.0,
            )
        })
        .ok_or_else(|| Error::Invalid("the fabric needs hosts under two leaves".into()))?;
    let spreads = fams
        .iter()
        .map(|&fam| rt.spread(fam, src, dst, opts.spread_flows))
        .collect::<Result<Vec<_>>>()?;
    let blasts = match opts.testbed.link_mbps {
        Some(_) => fams
            .iter()
            .map(|&fam| rt.blast(fam, src, dst, opts.blast, 1400).map(Some))
            .collect::<Result<Vec<_>>>()?,
        None => vec![None; fams.len()],
    };

    let fail = match opts.fail {
        Some(l) => l,
        None => {
            let busiest = spreads[0]
                .uplinks
                .iter()
                .max_by_key(|u| u.2)
                .ok_or_else(|| Error::Invalid("the source leaf has no uplink".into()))?;
            let p: topo::Port = busiest.0[1..].parse().expect("our interface names");
            rt.fabric().port_link(src_leaf, p)
        }
    };
    if fail.idx() >= rt.fabric().num_links() {
        return Err(Error::Invalid(format!(
            "link {} does not exist (the fabric has {} links)",
            fail.0,
            rt.fabric().num_links()
        )));
    }
    let t_down = Instant::now();
    let mut kernel_only = None;
    let failure = if opts.kernel_first {
        let before_pairs = rt.reachable_pairs();
        let fams2 = fams.clone();
        rt.fail_link_with(
            fail,
            Some(|rt: &mut RoutedTestbed| {
                kernel_only = Some(rt.probe_rounds(
                    &fams2,
                    &before_pairs,
                    Duration::from_millis(50),
                    Duration::from_millis(250),
                ));
            }),
        )?
    } else {
        rt.fail_link(fail)?
    };
    let unreachable: Vec<(String, String, u16)> = rt
        .unreachable_pairs()
        .into_iter()
        .map(|(s, d, p)| {
            (
                rt.fabric().node_name(s).to_string(),
                rt.fabric().node_name(d).to_string(),
                p,
            )
        })
        .collect();
    let pairs = rt.reachable_pairs();
    let after = probe_until_ok(&mut rt, &fams, &pairs, t_down, opts.recover_limit);
    // The failed link must carry nothing now.
    let spreads_after = fams
        .iter()
        .map(|&fam| rt.spread(fam, src, dst, opts.spread_flows))
        .collect::<Result<Vec<_>>>()?;
    // Restore: link up, re-program, all pairs again, the uplink carries traffic again.
    let (restore, mut restored, mut spreads_restored) = if opts.restore {
        let t_up = Instant::now();
        let rep = rt.restore_link(fail)?;
        let pairs = rt.reachable_pairs();
        let res = probe_until_ok(&mut rt, &fams, &pairs, t_up, opts.recover_limit);
        let sp = fams
            .iter()
            .map(|&fam| rt.spread(fam, src, dst, opts.spread_flows))
            .collect::<Result<Vec<_>>>()?;
        (Some(rep), Some(res.into_iter()), Some(sp.into_iter()))
    } else {
        (None, None, None)
    };
    let fl = *rt.fabric().link(fail);
    let failed_uplink = [(fl.a, fl.a_port), (fl.b, fl.b_port)]
        .into_iter()
        .find(|&(n, p)| n == src_leaf && !rt.fabric().is_host(rt.fabric().peer(n, p)))
        .map(|(_, p)| ifname(p));
    let (fabric, hosts, switches) = (
        rt.fabric().name().to_string(),
        rt.fabric().num_hosts(),
        rt.fabric().num_switches(),
    );
    let setup = rt.setup().clone();
    rt.teardown()?;
    let leaked = super::netns::list_ours()
        .into_iter()
        .filter(|n| n.starts_with(&prefix))
        .collect();
    let mut kernel_only = kernel_only.map(|v| v.into_iter());
    let families = fams
        .iter()
        .zip(before)
        .zip(spreads)
        .zip(after)
        .zip(spreads_after)
        .zip(blasts)
        .map(
            |(
                ((((&family, before), spread), (after, rounds, recovery_s)), spread_after),
                blast,
            )| {
                let (restored, rounds_to_restore, restore_s) = restored
                    .as_mut()
                    .and_then(|r| r.next())
                    .map_or((None, 0, None), |(r, n, t)| (Some(r), n, t));
                FamilyReport {
                    family,
                    before,
                    spread,
                    kernel_only: kernel_only.as_mut().and_then(|k| k.next()),
                    after,
                    rounds_to_recover: rounds,
                    recovery_s,
                    spread_after,
                    restored,
                    rounds_to_restore,
                    restore_s,
                    spread_restored: spreads_restored.as_mut().and_then(|s| s.next()),
                    failed_uplink: failed_uplink.clone(),
                    blast,
                    link_mbps: opts.testbed.link_mbps,
                }
            },
        )
        .collect();
    Ok(VerifyReport {
        fabric,
        hosts,
        switches,
        setup,
        families,
        failure,
        unreachable,
        restore,
        leaked,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use topo::{Rate, generators};

    #[test]
    fn leaf_spine_entries_become_equal_weight_multipath_routes() {
        let f = generators::leaf_spine(3, 2, 2, Rate::gbps(100)).unwrap();
        let plan = AddressPlan::new(&f).unwrap();
        let routes = Routes::compute(&f);
        let leaves: Vec<NodeId> = f.plane_info(0).leaves().map(NodeId).collect();
        let (l0, l1) = (leaves[0], leaves[1]);
        let hops = entry_hops(&f, &plan, &routes, l0, l1).expect("a route");
        assert_eq!(hops.len(), 2, "{hops:?}");
        assert!(hops.iter().all(|&(_, w)| w == 1));
        // Gateways are the spines' ends of the leaf's /31s, all distinct.
        assert_ne!(hops[0].0, hops[1].0);
        assert!(
            entry_hops(&f, &plan, &routes, l0, l0).is_none(),
            "own prefix is local"
        );
    }

    #[test]
    fn ipv6_entries_use_the_peers_slash127_ends_with_the_same_weights() {
        let f = generators::leaf_spine(3, 2, 2, Rate::gbps(100)).unwrap();
        let plan = AddressPlan::new(&f).unwrap();
        let routes = Routes::compute(&f);
        let leaves: Vec<NodeId> = f.plane_info(0).leaves().map(NodeId).collect();
        for s in f.switches() {
            for &l in &leaves {
                let v4 = entry_hops(&f, &plan, &routes, s, l);
                let v6 = entry_hops6(&f, &plan, &routes, s, l);
                assert_eq!(v4.is_some(), v6.is_some());
                let (Some(v4), Some(v6)) = (v4, v6) else {
                    continue;
                };
                assert_eq!(
                    v4.iter().map(|h| h.1).collect::<Vec<_>>(),
                    v6.iter().map(|h| h.1).collect::<Vec<_>>()
                );
                for (_, gw) in v6.iter().map(|h| (h.1, h.0)) {
                    assert_eq!(gw.segments()[..2], [0xfd00, 0xfffe], "{gw}");
                }
            }
        }
        // The gateway is ::1 of the leaf's /64.
        let gw = gateway_v6(&plan, leaves[1]).unwrap();
        assert_eq!(gw.segments(), [0xfd00, 0, 0, 1, 0, 0, 0, 1]);
    }

    #[test]
    fn failed_uplink_leaves_one_next_hop() {
        let f = generators::leaf_spine(3, 2, 2, Rate::gbps(100)).unwrap();
        let plan = AddressPlan::new(&f).unwrap();
        let mut routes = Routes::compute(&f);
        let leaves: Vec<NodeId> = f.plane_info(0).leaves().map(NodeId).collect();
        let up = (0..f.degree(leaves[0]) as topo::Port)
            .find(|&p| !f.is_host(f.peer(leaves[0], p)))
            .unwrap();
        let rep = routes.fail_links(&f, &[f.port_link(leaves[0], up)]);
        assert!(!rep.changed.is_empty());
        let hops = entry_hops(&f, &plan, &routes, leaves[0], leaves[1]).unwrap();
        assert_eq!(hops.len(), 1);
        assert_ne!(Some(hops[0].0), peer_addr(&f, &plan, leaves[0], up));
    }

    #[test]
    fn link_ends_get_the_two_addresses_of_their_slash31() {
        let f = generators::fat_tree(4, Rate::gbps(100)).unwrap();
        let plan = AddressPlan::new(&f).unwrap();
        for s in f.switches() {
            for p in 0..f.degree(s) as topo::Port {
                if let Some((mine, len)) = own_addr(&f, &plan, s, p) {
                    assert_eq!(len, 31);
                    let peer = f.peer(s, p);
                    let back = (0..f.degree(peer) as topo::Port)
                        .find(|&q| f.port_link(peer, q) == f.port_link(s, p))
                        .unwrap();
                    assert_eq!(peer_addr(&f, &plan, peer, back), Some(mine));
                    assert_eq!(
                        u32::from(mine) >> 1,
                        u32::from(peer_addr(&f, &plan, s, p).unwrap()) >> 1
                    );
                }
            }
        }
    }

    #[test]
    fn spread_imbalance_is_max_over_mean_of_live_uplinks() {
        let s = Spread {
            family: Family::V4,
            reachable: true,
            src: "h0".into(),
            dst: "h9".into(),
            leaf: "l0".into(),
            flows: 4,
            delivered: 4,
            uplinks: vec![
                ("p2".into(), "s0".into(), 3, true),
                ("p3".into(), "s1".into(), 1, true),
                ("p4".into(), "s2".into(), 0, false),
            ],
        };
        assert_eq!(s.used(), 2);
        assert!((s.imbalance() - 1.5).abs() < 1e-12);
    }
}
