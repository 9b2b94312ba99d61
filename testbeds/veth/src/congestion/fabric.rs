//! The congestion testbed on a multi-switch `topo` fabric instead of a star: a namespace
//! per host and per switch, a veth pair per cable (MTU 9000), one AF_PACKET socket per
//! switch port and per host, and one userspace switch (`veth_core::switch`) per fabric
//! switch, all served by the one switch loop through a `veth_core::fabric::SwitchSet`.
//! Routing tables are `topo`'s up*/down* ECMP next hops toward every host; the switches
//! hash (source, destination, UDP source port) over the group, each with its own salt.
//! ECN and PFC run per hop: a leaf that fills pauses its spine, the spine pauses the
//! leaves and hosts upstream.
//!
//! Global port numbering (what the report's `ports` and the live snapshots follow): ports
//! `0..hosts` are the leaf ports facing hosts `0..hosts` (as switch port `i` faces host
//! `i` on the star), then every other switch port, switch by switch, port by port.
//! [`Topology::Star`] builds the star of [`super::star`].

use std::collections::HashMap;
use std::net::Ipv4Addr;

use cc_algos::Instant;
use topo::{Fabric, LinkId, NodeId, Routes};
use veth_core::endpoint::TimeScale;
use veth_core::fabric::{FabricEvent, SwitchSet};
use veth_core::switch::Switch;

use super::CongestionConfig;
use super::star::{Sockets, device_mac, host_ip};
use crate::afpacket::PacketSocket;
use crate::{Error, Result, Testbed, VethLink, netlink};
use scenario::{FailureTarget, Workplan};

/// The shape of the congestion testbed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Topology {
    /// One switch, one port per host.
    #[default]
    Star,
    /// A 2-tier leaf–spine (`topo::generators::leaf_spine`).
    LeafSpine {
        leaves: u32,
        spines: u32,
        hosts_per_leaf: u32,
    },
    /// A 3-tier k-ary fat-tree (`topo::generators::fat_tree`): k³/4 hosts.
    FatTree { k: u32 },
}

/// Largest fabric the one switch loop serves: switch ports (sockets) in all.
pub const MAX_SWITCH_PORTS: usize = 96;

impl Topology {
    /// The `topo` fabric (`None` for the star), links at `rate`.
    pub fn fabric(&self, rate: cc_algos::Rate) -> Result<Option<Fabric>> {
        let r = topo::Rate(rate.as_bps());
        let f = match *self {
            Topology::Star => return Ok(None),
            Topology::LeafSpine {
                leaves,
                spines,
                hosts_per_leaf,
            } => topo::generators::leaf_spine(leaves, spines, hosts_per_leaf, r),
            Topology::FatTree { k } => topo::generators::fat_tree(k, r),
        }
        .map_err(|e| Error::Invalid(format!("topology {self}: {e}")))?;
        let ports: usize = f.switches().map(|s| f.degree(s)).sum();
        if ports > MAX_SWITCH_PORTS {
            return Err(Error::Invalid(format!(
                "topology {self}: {ports} switch ports; the one switch loop serves at most {MAX_SWITCH_PORTS} (a k=4 fat-tree has 64)"
            )));
        }
        Ok(Some(f))
    }

    /// Hosts of the topology (`None` for the star: its size is the config's).
    pub fn hosts(&self) -> Option<usize> {
        match *self {
            Topology::Star => None,
            Topology::LeafSpine {
                leaves,
                hosts_per_leaf,
                ..
            } => Some((leaves * hosts_per_leaf) as usize),
            Topology::FatTree { k } => Some((k * k * k / 4) as usize),
        }
    }
}

impl std::fmt::Display for Topology {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match *self {
            Topology::Star => write!(f, "star"),
            Topology::LeafSpine {
                leaves,
                spines,
                hosts_per_leaf,
            } => write!(f, "leaf-spine:{leaves}x{spines}x{hosts_per_leaf}"),
            Topology::FatTree { k } => write!(f, "fat-tree:{k}"),
        }
    }
}

impl std::str::FromStr for Topology {
    type Err = Error;
    /// `star`, `leaf-spine:LxSxH` (leaves × spines × hosts per leaf) or `fat-tree:K`.
    fn from_str(s: &str) -> Result<Topology> {
        let bad = |why: &str| {
            Error::Invalid(format!(
                "topology {s:?}: {why}; expected star, leaf-spine:LEAVESxSPINESxHOSTS_PER_LEAF (e.g. leaf-spine:2x2x4) or fat-tree:K (e.g. fat-tree:4)"
            ))
        };
        let num = |x: &str| {
            x.parse::<u32>()
                .map_err(|_| bad(&format!("{x:?} is not a number")))
        };
        match s.split_once(':') {
            None if s == "star" => Ok(Topology::Star),
            Some(("leaf-spine", dims)) => {
                let v: Vec<&str> = dims.split('x').collect();
                let [l, sp, h] = v[..] else {
                    return Err(bad("a leaf-spine has three dimensions"));
                };
                let (leaves, spines, hosts_per_leaf) = (num(l)?, num(sp)?, num(h)?);
                if leaves < 2 || spines < 1 || hosts_per_leaf < 1 {
                    return Err(bad("at least 2 leaves, 1 spine and 1 host per leaf"));
                }
                Ok(Topology::LeafSpine {
                    leaves,
                    spines,
                    hosts_per_leaf,
                })
            }
            Some(("fat-tree", k)) => {
                let k = num(k)?;
                if k < 2 || k % 2 != 0 {
                    return Err(bad("k must be even and at least 2"));
                }
                Ok(Topology::FatTree { k })
            }
            _ => Err(bad("unknown shape")),
        }
    }
}

/// What one global port is: its switch, its port there, and where the cable goes.
#[derive(Debug, Clone, serde::Serialize)]
pub struct PortName {
    /// Switch name (`topo` node name, `sw` on the star).
    pub switch: String,
    /// Port on that switch.
    pub port: u16,
    /// Node at the other end.
    pub peer: String,
    /// `topo` tier of the switch (1 leaf, 2 spine/aggregation, 3 core).
    pub tier: u8,
    /// Tier of the peer (0: a host).
    pub peer_tier: u8,
}

impl PortName {
    /// The port as plots, captures and the live map name it: `sw:p3→h3`, `leaf1:p4→spine0`.
    pub fn label(&self) -> String {
        format!("{}:p{}→{}", self.switch, self.port, self.peer)
    }
}

/// A built testbed, star or fabric.
#[derive(Debug)]
pub struct Built {
    /// The guard owning every namespace.
    pub tb: Testbed,
    /// Host `i`'s link: end a on its leaf, end b in the host.
    pub host_links: Vec<VethLink>,
    /// The AF_PACKET sockets: switch sockets by global port, host sockets by host.
    pub sockets: Sockets,
    /// Every switch.
    pub switches: SwitchSet,
    /// What each global port is.
    pub port_names: Vec<PortName>,
}

/// Build `cfg.topology` for `plan`: namespaces, veths, sockets, switches with their
/// routes, and the failures of `plan` as scheduled events (real time at `scale`).
pub fn build(cfg: &CongestionConfig, plan: &Workplan, scale: TimeScale) -> Result<Built> {
    let Some(f) = cfg.topology.fabric(cfg.link_rate)? else {
        if !plan.failures.is_empty() || !plan.degrades.is_empty() || !plan.network.links.is_empty()
        {
            return Err(Error::Invalid(
                "scenario failures, degraded links and [[network.link]] overrides need a multi-switch topology (the star has no link between switches)".into(),
            ));
        }
        let star = super::star::Star::build(cfg)?;
        let switch = super::star::switch(cfg, &star.links);
        let port_names = (0..cfg.hosts)
            .map(|i| PortName {
                switch: "sw".into(),
                port: i as u16,
                peer: format!("h{i}"),
                tier: 1,
                peer_tier: 0,
            })
            .collect();
        return Ok(Built {
            tb: star.tb,
            host_links: star.links,
            sockets: star.sockets,
            switches: SwitchSet::single(switch),
            port_names,
        });
    };
    if f.num_hosts() != cfg.hosts {
        return Err(Error::Invalid(format!(
            "topology {} has {} hosts but the run is configured for {}",
            cfg.topology,
            f.num_hosts(),
            cfg.hosts
        )));
    }
    let mut tb = Testbed::new()?;
    let ns = (0..f.num_nodes() as u32)
        .map(|n| {
            let role = if f.is_host(NodeId(n)) {
                format!("h{n}")
            } else {
                format!("s{}", n - f.num_hosts() as u32)
            };
            tb.add_netns(&role)
        })
        .collect::<Result<Vec<_>>>()?;
    // veths: a = the upper end (a switch), b = the lower end (host or lower switch).
    let mut ends: HashMap<(u32, u16), ([u8; 6], [u8; 6])> = HashMap::new();
    let mut host_links = vec![None; f.num_hosts()];
    for l in f.links() {
        let (up_if, low_if) = (
            format!("p{}", l.b_port),
            if f.is_host(l.a) {
                "eth0".to_string()
            } else {
                format!("p{}", l.a_port)
            },
        );
        let v = tb.connect(&ns[l.b.idx()], &up_if, &ns[l.a.idx()], &low_if)?;
        netlink::Nl::open(&ns[l.b.idx()])?.set_mtu(&up_if, 9000)?;
        netlink::Nl::open(&ns[l.a.idx()])?.set_mtu(&low_if, 9000)?;
        // (own MAC, peer MAC) of each switch end: the devices' MACs, which no kernel
        // of the run owns (see `device_mac`).
        let (a, b) = (device_mac(v.a_mac), device_mac(v.b_mac));
        ends.insert((l.b.0, l.b_port), (a, b));
        if f.is_host(l.a) {
            host_links[l.a.idx()] = Some(v);
        } else {
            ends.insert((l.a.0, l.a_port), (b, a));
        }
    }
    let host_links = host_links
        .into_iter()
        .enumerate()
        .map(|(i, l)| l.ok_or_else(|| Error::Invalid(format!("host {i} has no link"))))
        .collect::<Result<Vec<_>>>()?;
    let order = global_order(&f);
    let sw0 = f.num_hosts() as u32;
    let switch_sockets = order
        .iter()
        .map(|&(s, p)| PacketSocket::open(&ns[s as usize], &format!("p{p}")))
        .collect::<Result<Vec<_>>>()?;
    let host_sockets = (0..f.num_hosts())
        .map(|h| PacketSocket::open(&ns[h], "eth0"))
        .collect::<Result<Vec<_>>>()?;
    let routes = Routes::compute(&f);
    let switches: Vec<Switch> = f
        .switches()
        .map(|s| {
            let deg = f.degree(s) as u16;
            let mac = |p: u16| ends.get(&(s.0, p)).copied().unwrap_or_default();
            let mut c = super::star::switch_config(
                cfg,
                (0..deg).map(|p| mac(p).0).collect(),
                (0..deg).map(|p| Some(mac(p).1)).collect(),
                table(&f, &routes, s),
            );
            c.ecmp_salt = scenario::rng::mix64(cfg.seed ^ u64::from(s.0));
            c.seed = cfg.seed ^ u64::from(s.0);
            Switch::new(c)
        })
        .collect();
    let map = order
        .iter()
        .map(|&(s, p)| ((s - sw0) as usize, p as usize))
        .collect();
    let mut set = SwitchSet::new(switches, map).map_err(Error::Invalid)?;
    let base = link_fractions(&f, plan, cfg.virtual_rate, &set)?;
    for (&p, &fr) in &base {
        set.set_port_fraction(p, fr).map_err(Error::Invalid)?;
    }
    let mut events = failure_events(&f, &routes, plan, scale, &set)?;
    events.extend(degrade_events(&f, plan, scale, &set, &base)?);
    set.schedule(events).map_err(Error::Invalid)?;
    let port_names = order
        .iter()
        .map(|&(s, p)| {
            let peer = f.peer(NodeId(s), p);
            PortName {
                switch: f.node_name(NodeId(s)).to_string(),
                port: p,
                peer: f.node_name(peer).to_string(),
                tier: f.tier(NodeId(s)),
                peer_tier: f.tier(peer),
            }
        })
        .collect();
    Ok(Built {
        tb,
        host_links,
        sockets: Sockets {
            switch: switch_sockets,
            hosts: host_sockets,
        },
        switches: set,
        port_names,
    })
}

/// Global port order: (switch node, port) of the leaf port of every host, in host
/// order, then the other switch ports.
pub fn global_order(f: &Fabric) -> Vec<(u32, u16)> {
    let mut order: Vec<(u32, u16)> = f
        .hosts()
        .map(|h| {
            let a = f.attachment(h, 0).expect("a single-plane host has a leaf");
            (a.leaf.0, a.leaf_port)
        })
        .collect();
    for s in f.switches() {
        for p in 0..f.degree(s) as u16 {
            if !f.is_host(f.peer(s, p)) {
                order.push((s.0, p));
            }
        }
    }
    order
}

/// Switch `s`'s table: every host's address → the ECMP group `topo` computed.
fn table(f: &Fabric, routes: &Routes, s: NodeId) -> HashMap<Ipv4Addr, Vec<usize>> {
    f.hosts()
        .map(|h| {
            let ports = routes.next_hops(s, h).iter().map(|&p| p as usize).collect();
            (host_ip(h.idx()), ports)
        })
        .collect()
}

/// Every switch's table after `routes` changed.
fn tables(f: &Fabric, routes: &Routes) -> Vec<HashMap<Ipv4Addr, Vec<usize>>> {
    f.switches().map(|s| table(f, routes, s)).collect()
}

/// The link between two fabric nodes.
fn link_between(f: &Fabric, a: u32, b: u32) -> Option<LinkId> {
    (0..f.num_links() as u32).map(LinkId).find(|&l| {
        let k = f.link(l);
        (k.a.0, k.b.0) == (a, b) || (k.a.0, k.b.0) == (b, a)
    })
}

/// The scenario's failures as fabric events: at `at` both switch ends of the link go
/// down (each switch drops the port from its groups at once); at `at + detect` every
/// table is replaced by `topo`'s re-route without the link; at `restore` the ports come
/// back and the original tables return.
fn failure_events(
    f: &Fabric,
    routes: &Routes,
    plan: &Workplan,
    scale: TimeScale,
    set: &SwitchSet,
) -> Result<Vec<FabricEvent>> {
    let mut out = Vec::new();
    let sw0 = f.num_hosts() as u32;
    for (i, fs) in plan.failures.iter().enumerate() {
        let FailureTarget::Link(a, b) = fs.target else {
            return Err(Error::Invalid(format!(
                "failure {i}: the veth fabric fails links only (a switch failure is not emulated)"
            )));
        };
        let l = link_between(f, a, b).ok_or_else(|| {
            Error::Invalid(format!(
                "failure {i}: nodes {a} and {b} are not joined by a link of {}",
                f.name()
            ))
        })?;
        let k = *f.link(l);
        if f.is_host(k.a) {
            return Err(Error::Invalid(format!(
                "failure {i}: link {a}–{b} is a host's only link; fail a link between switches"
            )));
        }
        let ports: Vec<usize> = [(k.a.0, k.a_port), (k.b.0, k.b_port)]
            .iter()
            .filter_map(|&(n, p)| set.global((n - sw0) as usize, p as usize))
            .collect();
        let mut after = routes.clone();
        after.fail_links(f, &[l]);
        let real = |t: Instant| scale.to_real(t);
        out.push(FabricEvent {
            at: real(fs.at),
            down: ports.clone(),
            up: vec![],
            rates: vec![],
            routes: None,
        });
        out.push(FabricEvent {
            at: real(fs.at + fs.detect),
            down: vec![],
            up: vec![],
            rates: vec![],
            routes: Some(tables(f, &after)),
        });
        if let Some(r) = fs.restore {
            out.push(FabricEvent {
                at: real(r),
                down: vec![],
                up: ports,
                rates: vec![],
                routes: Some(tables(f, routes)),
            });
        }
    }
    Ok(out)
}

/// The switch egress ports (global) from node `from` toward `to`, and back unless
/// `one_way`; `what` names the scenario entry in errors. A host's own NIC is not a switch
/// port (its pacing is the host loop's): only switch directions can be slowed.
fn switch_ports(
    f: &Fabric,
    set: &SwitchSet,
    what: &str,
    (from, to): (u32, u32),
    one_way: bool,
) -> Result<Vec<usize>> {
    let l = link_between(f, from, to).ok_or_else(|| {
        Error::Invalid(format!(
            "{what}: nodes {from} and {to} are not joined by a link of {}",
            f.name()
        ))
    })?;
    let k = *f.link(l);
    let port_on = |n: u32| if n == k.a.0 { k.a_port } else { k.b_port };
    let sw0 = f.num_hosts() as u32;
    let ends = if one_way { vec![from] } else { vec![from, to] };
    let mut ports = Vec::new();
    for n in ends {
        if f.is_host(NodeId(n)) {
            return Err(Error::Invalid(format!(
                "{what}: node {n} is a host; the veth fabric slows switch ports only (give the switch-to-host direction with one_way, or a link between switches)"
            )));
        }
        ports.extend(set.global((n - sw0) as usize, port_on(n) as usize));
    }
    Ok(ports)
}

/// The scenario's `[[network.link]]` rate overrides, as the fraction of the links'
/// (virtual) rate each switch egress port runs at from the start. The veth links are
/// veths: a propagation delay is not emulated (the simulator twin has it), and a link
/// can be slowed, not sped up beyond the rate of every link.
fn link_fractions(
    f: &Fabric,
    plan: &Workplan,
    link_rate: cc_algos::Rate,
    set: &SwitchSet,
) -> Result<HashMap<usize, f64>> {
    let mut base = HashMap::new();
    for (i, l) in plan.network.links.iter().enumerate() {
        let what = format!("network.link[{i}]");
        if l.delay.is_some() {
            return Err(Error::Invalid(format!(
                "{what}.delay: the veth fabric does not emulate propagation delay (its links are veth pairs; the simulator twin does): give a rate only"
            )));
        }
        let Some(r) = l.rate else { continue };
        let fr = r.as_bps() as f64 / link_rate.as_bps() as f64;
        if fr > 1.0 {
            return Err(Error::Invalid(format!(
                "{what}.rate: {r} is above the fabric's link rate {link_rate}: the veth engine can slow a link, not speed it up"
            )));
        }
        for p in switch_ports(f, set, &what, (l.link[0], l.link[1]), l.one_way)? {
            base.insert(p, fr);
        }
    }
    Ok(base)
}

/// The scenario's degraded links as fabric events: at `at` the switch egress port from
/// `from` toward `to` (and the reverse one unless one-way) runs at `fraction` of its rate
/// (of its `[[network.link]]` rate if it has one, in `base`), with its ECN thresholds
/// scaled alike; at `until` it is back at that rate.
fn degrade_events(
    f: &Fabric,
    plan: &Workplan,
    scale: TimeScale,
    set: &SwitchSet,
    base: &HashMap<usize, f64>,
) -> Result<Vec<FabricEvent>> {
    let mut out = Vec::new();
    for (i, d) in plan.degrades.iter().enumerate() {
        let ports = switch_ports(f, set, &format!("degrade[{i}]"), (d.from, d.to), !d.both)?;
        let at = |t: Instant, fr: f64| FabricEvent {
            at: scale.to_real(t),
            down: vec![],
            up: vec![],
            rates: ports
                .iter()
                .map(|&p| (p, fr * base.get(&p).copied().unwrap_or(1.0)))
                .collect(),
            routes: None,
        };
        out.push(at(d.at, d.fraction));
        if let Some(u) = d.until {
            out.push(at(u, 1.0));
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn topologies_parse_or_say_what_is_expected() {
        assert_eq!("star".parse::<Topology>().unwrap(), Topology::Star);
        assert_eq!(
            "leaf-spine:2x2x4".parse::<Topology>().unwrap(),
            Topology::LeafSpine {
                leaves: 2,
                spines: 2,
                hosts_per_leaf: 4
            }
        );
        assert_eq!(
            "fat-tree:4".parse::<Topology>().unwrap(),
            Topology::FatTree { k: 4 }
        );
        for bad in ["ring", "fat-tree:3", "leaf-spine:2x2", "leaf-spine:axbxc"] {
            let e = bad.parse::<Topology>().unwrap_err().to_string();
            assert!(e.contains("expected star"), "{bad}: {e}");
        }
        assert_eq!(Topology::FatTree { k: 4 }.to_string(), "fat-tree:4");
    }

    #[test]
    fn fat_tree_k4_fits_and_k6_is_refused() {
        let r = cc_algos::Rate::gbps(1);
        let f = Topology::FatTree { k: 4 }.fabric(r).unwrap().unwrap();
        assert_eq!(f.num_hosts(), 16);
        assert!(
            Topology::FatTree { k: 6 }
                .fabric(r)
                .unwrap_err()
                .to_string()
                .contains("at most")
        );
    }

    /// The 2-leaf × 2-spine leaf–spine with 4 hosts per leaf, 1 Gb/s links.
    fn leaf_spine() -> Fabric {
        Topology::LeafSpine {
            leaves: 2,
            spines: 2,
            hosts_per_leaf: 4,
        }
        .fabric(cc_algos::Rate::gbps(1))
        .unwrap()
        .unwrap()
    }

    #[test]
    fn global_ports_start_with_the_host_ports_in_host_order() {
        let f = leaf_spine();
        let o = global_order(&f);
        assert_eq!(o.len(), 8 + 4 + 4);
        for (h, &(s, p)) in o.iter().take(8).enumerate() {
            assert_eq!(f.peer(NodeId(s), p), NodeId(h as u32));
        }
        // Every switch port once.
        let mut sorted = o.clone();
        sorted.sort();
        sorted.dedup();
        assert_eq!(sorted.len(), o.len());
    }

    /// The switches of a 2x2x4 leaf-spine without namespaces (no MACs): enough to resolve
    /// scenario entries to global ports.
    fn leaf_spine_set() -> (Fabric, SwitchSet) {
        let f = leaf_spine();
        let routes = Routes::compute(&f);
        let switches = f
            .switches()
            .map(|s| {
                Switch::new(veth_core::switch::SwitchConfig::new(
                    vec![[0; 6]; f.degree(s)],
                    cc_algos::Rate::gbps(1),
                    cc_algos::Bytes(1_000_000),
                    table(&f, &routes, s),
                ))
            })
            .collect();
        let sw0 = f.num_hosts() as u32;
        let map = global_order(&f)
            .iter()
            .map(|&(s, p)| ((s - sw0) as usize, p as usize))
            .collect();
        let set = SwitchSet::new(switches, map).unwrap();
        (f, set)
    }

    fn plan_with(network: &str) -> Workplan {
        scenario::Scenario::from_toml_str(
            &format!("[[workload]]\nkind = \"permutation\"\nsize = \"1MB\"\n{network}"),
            "links.toml",
        )
        .unwrap()
        .compile(&scenario::CompileCtx::new(8, cc_algos::Rate::gbps(100), 1))
        .unwrap()
    }

    #[test]
    fn link_rate_overrides_become_port_fractions_and_delays_are_refused() {
        let (f, set) = leaf_spine_set();
        let v = cc_algos::Rate::gbps(100);
        // Leaf 1 (node 9) - spine 0 (node 10) at 25 Gb/s, both ways: two switch ports.
        let p = plan_with("[[network.link]]\nlink = [9, 10]\nrate = \"25Gbps\"\n");
        let base = link_fractions(&f, &p, v, &set).unwrap();
        assert_eq!(base.len(), 2);
        assert!(base.values().all(|&x| (x - 0.25).abs() < 1e-12));
        let names: Vec<(u32, u16)> = base
            .keys()
            .map(|&g| {
                let (s, port) = set.locate(g);
                (s as u32 + f.num_hosts() as u32, port as u16)
            })
            .collect();
        for (n, port) in names {
            let peer = f.peer(NodeId(n), port).0;
            assert!(
                (n, peer) == (9, 10) || (n, peer) == (10, 9),
                "{n} -> {peer}"
            );
        }
        // A degrade of the same link multiplies the override.
        let p = plan_with(
            "[[network.link]]\nlink = [9, 10]\nrate = \"50Gbps\"\n[[degrade]]\nlink = [9, 10]\nfraction = 0.5\n",
        );
        let base = link_fractions(&f, &p, v, &set).unwrap();
        let ev = degrade_events(&f, &p, TimeScale(100), &set, &base).unwrap();
        assert!(ev[0].rates.iter().all(|&(_, x)| (x - 0.25).abs() < 1e-12));
        for (net, want) in [
            (
                "[[network.link]]\nlink = [9, 10]\ndelay = \"1us\"\n",
                "network.link[0].delay: the veth fabric does not emulate propagation delay",
            ),
            (
                "[[network.link]]\nlink = [9, 10]\nrate = \"200Gbps\"\n",
                "network.link[0].rate: 200.000 Gb/s is above",
            ),
            (
                "[[network.link]]\nlink = [0, 8]\nrate = \"50Gbps\"\n",
                "network.link[0]: node 0 is a host",
            ),
            (
                "[[network.link]]\nlink = [8, 9]\nrate = \"50Gbps\"\n",
                "network.link[0]: nodes 8 and 9 are not joined",
            ),
        ] {
            let e = link_fractions(&f, &plan_with(net), v, &set)
                .unwrap_err()
                .to_string();
            assert!(e.contains(want), "{e}");
        }
    }

    #[test]
    fn every_table_reaches_every_host_in_a_k4_fat_tree() {
        let f = topo::generators::fat_tree(4, topo::Rate(1_000_000_000)).unwrap();
        let routes = Routes::compute(&f);
        for s in f.switches() {
            let t = table(&f, &routes, s);
            assert_eq!(t.len(), 16);
            assert!(t.values().all(|g| !g.is_empty()));
        }
        // An edge switch has two uplinks toward a host in another pod.
        let edge = f.attachment(NodeId(0), 0).unwrap().leaf;
        assert_eq!(table(&f, &routes, edge)[&host_ip(15)].len(), 2);
    }
}
