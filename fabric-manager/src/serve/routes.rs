//! [`RouteView`]: the ECMP tables the daemon holds for a `topo` fabric (computed at
//! start, updated incrementally on link events), served per switch as JSON.

use std::sync::RwLock;
use std::time::Instant;

use serde::Serialize;
use topo::addressing::AddressPlan;
use topo::export::Tables;
use topo::export::routes::for_each_route;
use topo::{Fabric, LinkId, NodeId, Routes};

/// One next hop in the JSON answer.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct NextHop {
    /// Outgoing port.
    pub port: u16,
    /// Interface name (`swp1` for port 0).
    pub ifname: String,
    /// Neighbour node.
    pub peer: String,
    /// Gateway address.
    pub via: String,
}

/// One route in the JSON answer.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct RouteEntry {
    /// Destination prefix.
    pub prefix: String,
    /// Destination node (leaf or host).
    pub dst: String,
    /// Directly attached host.
    pub local: bool,
    /// The ECMP group.
    pub next_hops: Vec<NextHop>,
}

/// `GET /api/v1/routes/{switch}`.
#[derive(Debug, Clone, Serialize)]
pub struct SwitchRoutes {
    /// Switch name.
    pub switch: String,
    /// Routes in destination order.
    pub routes: Vec<RouteEntry>,
    /// Destinations without a route (after failures).
    pub unreachable_destinations: u64,
    /// Links currently failed in the tables.
    pub failed_links: Vec<u32>,
}

/// What a table update changed.
#[derive(Debug, Clone, Default)]
pub struct Update {
    /// Switches whose tables changed.
    pub switches_changed: Vec<u32>,
    /// Host pairs (same plane) without a route afterwards.
    pub unreachable_pairs: u64,
    /// Time the update took, ns.
    pub took_ns: u64,
}

/// How the interfaces of a port are named in the answers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum IfNames {
    /// `swp1`, `swp2`, … (port + 1), as `fabric routes export` writes them for switches.
    Export,
    /// `p0`, `p1`, … (the port number), as the veth testbeds name their interfaces, so
    /// `ip -n NETNS link show p2` finds the port the API names.
    Testbed,
}

/// The daemon's tables.
#[derive(Debug)]
pub struct RouteView {
    fabric: std::sync::Arc<Fabric>,
    addr: Option<AddressPlan>,
    routes: RwLock<Routes>,
    ifnames: IfNames,
}

impl RouteView {
    /// Tables of `fabric`, all links up; interfaces named by `ifnames`.
    pub fn new(fabric: std::sync::Arc<Fabric>, ifnames: IfNames) -> Self {
        let routes = Routes::compute(&fabric);
        let addr = AddressPlan::new(&fabric).ok();
        RouteView {
            fabric,
            addr,
            routes: RwLock::new(routes),
            ifnames,
        }
    }

    /// Fails `links` (incremental re-route).
    pub fn fail(&self, links: &[LinkId]) -> Update {
        let t = Instant::now();
        let mut r = self.routes.write().expect("routes lock");
        let rep = r.fail_links(&self.fabric, links);
        let took_ns = t.elapsed().as_nanos() as u64;
        let mut sw: Vec<u32> = rep.changed.iter().map(|(s, _)| s.0).collect();
        sw.sort_unstable();
        sw.dedup();
        Update {
            switches_changed: sw,
            unreachable_pairs: unreachable_pairs(&self.fabric, &r),
            took_ns,
        }
    }

    /// Restores `links`.
    pub fn restore(&self, links: &[LinkId]) -> Update {
        let t = Instant::now();
        let mut r = self.routes.write().expect("routes lock");
        let before = r.clone();
        r.restore_links(&self.fabric, links);
        let took_ns = t.elapsed().as_nanos() as u64;
        Update {
            switches_changed: changed_switches(&self.fabric, &before, &r),
            unreachable_pairs: unreachable_pairs(&self.fabric, &r),
            took_ns,
        }
    }

    /// Recomputes every table from scratch (failed links stay failed).
    pub fn recompute(&self) -> Update {
        let t = Instant::now();
        let mut r = self.routes.write().expect("routes lock");
        let failed: Vec<LinkId> = r.failed_links().collect();
        let before = r.clone();
        let mut fresh = Routes::compute(&self.fabric);
        if !failed.is_empty() {
            fresh.fail_links(&self.fabric, &failed);
        }
        *r = fresh;
        let took_ns = t.elapsed().as_nanos() as u64;
        Update {
            switches_changed: changed_switches(&self.fabric, &before, &r),
            unreachable_pairs: unreachable_pairs(&self.fabric, &r),
            took_ns,
        }
    }

    /// The routes of the switch named `name` (or numbered `name`).
    pub fn switch_routes(&self, name: &str) -> Result<SwitchRoutes, String> {
        let f = &self.fabric;
        let node = f
            .name_index()
            .get(name)
            .copied()
            .or_else(|| {
                name.parse::<u32>()
                    .ok()
                    .filter(|&i| (i as usize) < f.num_nodes())
                    .map(NodeId)
            })
            .ok_or_else(|| format!("no switch named {name:?}"))?;
        if f.is_host(node) {
            return Err(format!("{name} is a host, not a switch"));
        }
        let addr = self
            .addr
            .as_ref()
            .ok_or_else(|| "this fabric has no address plan".to_string())?;
        let r = self.routes.read().expect("routes lock");
        let mut routes = Vec::new();
        let skipped = for_each_route(f, addr, &Tables::Ecmp(&r), node, |route, hops| {
            routes.push(RouteEntry {
                prefix: format!("{}/{}", route.prefix.addr, route.prefix.len),
                dst: f.node_name(route.dst).to_string(),
                local: route.local,
                next_hops: hops
                    .iter()
                    .map(|h| NextHop {
                        port: h.port,
                        ifname: match self.ifnames {
                            IfNames::Export => topo::export::routes::LinuxIf(h.port).to_string(),
                            IfNames::Testbed => veth::routed::ifname(h.port),
                        },
                        peer: f.node_name(h.peer).to_string(),
                        via: h.via.to_string(),
                    })
                    .collect(),
            });
            Ok(())
        })
        .map_err(|e| e.to_string())?;
        Ok(SwitchRoutes {
            switch: f.node_name(node).to_string(),
            routes,
            unreachable_destinations: skipped,
            failed_links: r.failed_links().map(|l| l.0).collect(),
        })
    }
}

/// Switches whose table rows differ between `a` and `b` (group contents compared, not
/// group ids, which a recomputation may renumber).
fn changed_switches(f: &Fabric, a: &Routes, b: &Routes) -> Vec<u32> {
    use topo::routing::{LOCAL, NO_ROUTE};
    let same = |x: u32, y: u32| {
        if [x, y].iter().any(|&g| g == LOCAL || g == NO_ROUTE) {
            x == y
        } else {
            a.groups().get(x) == b.groups().get(y)
        }
    };
    f.switches()
        .filter(|&s| {
            let (ra, rb) = (a.row_entries(s), b.row_entries(s));
            ra.len() != rb.len() || ra.iter().zip(rb).any(|(&x, &y)| !same(x, y))
        })
        .map(|s| s.0)
        .collect()
}

/// Ordered host pairs of a plane with no route on that plane (a host reaches another
/// when some plane they share has a path).
fn unreachable_pairs(f: &Fabric, r: &Routes) -> u64 {
    // Per plane, a leaf reaches a leaf when its table has an entry for it; count
    // host pairs behind leaves that cannot reach each other.
    let mut n = 0u64;
    for plane in 0..f.num_planes() as u16 {
        let info = f.plane_info(plane);
        let leaves: Vec<NodeId> = info.leaves().map(NodeId).collect();
        let hosts_of = |leaf: NodeId| {
            f.ports(leaf)
                .filter(|&(peer, l)| f.is_host(peer) && r.link_is_up(l))
                .count() as u64
        };
        let counts: Vec<u64> = leaves.iter().map(|&l| hosts_of(l)).collect();
        for (i, &a) in leaves.iter().enumerate() {
            for (j, &b) in leaves.iter().enumerate() {
                if i != j && r.entry(a, b) == topo::routing::NO_ROUTE {
                    n += counts[i] * counts[j];
                }
            }
        }
    }
    n
}
