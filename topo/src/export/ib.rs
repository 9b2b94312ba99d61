//! InfiniBand view of a fabric plane: the three files of [`super::opensm`]
//! built from the model, the addressing plan and a routing table.
//!
//! Every plane is its own IB subnet (one subnet manager per plane, as in
//! multi-plane fabrics). LIDs and GUIDs come from [`AddressPlan`]: host ports
//! are LIDs `1..=H` in (leaf, leaf port) order, the plane's switches follow; a
//! plane needing more than the 49,151 unicast LIDs (IBA vol. 1 §4.1.3:
//! 0x0001–0xBFFF) is an error. A host port's GUID is node GUID + IB port
//! number, which is how ibsim numbers CA ports. IB port numbers are model
//! port + 1 (port 0 is a switch's management port).

use std::io::{self, Write};

use super::opensm::{self, IbKind, NetNode, NetPort};
use super::{ExportError, fastfmt};
use crate::addressing::AddressPlan;
use crate::lft::Lft;
use crate::model::{Fabric, LinkId, NodeId, Port};
use crate::routing::{NO_ROUTE, Routes};

/// LIDs of one plane (one IB subnet), from the addressing plan.
#[derive(Debug, Clone)]
pub struct LidPlan {
    /// The plane.
    pub plane: u16,
    /// `lid[node]`, 0 when the node has no port in the plane.
    lid: Vec<u16>,
    /// Nodes in LID order.
    by_lid: Vec<NodeId>,
}

impl LidPlan {
    /// Collects the LIDs of `plane` from `addr`.
    pub fn new(f: &Fabric, addr: &AddressPlan, plane: u16) -> Result<Self, ExportError> {
        let info = f.plane_info(plane);
        let mut lid = vec![0u16; f.num_nodes()];
        let mut by_lid = Vec::new();
        let needed = f
            .hosts()
            .filter(|&h| f.attachment(h, plane).is_some())
            .count()
            + info.switches().len();
        for h in f.hosts().filter(|&h| f.attachment(h, plane).is_some()) {
            lid[h.idx()] = addr
                .host_lid(h, plane)
                .ok_or(ExportError::TooManyLids { plane, needed })?;
            by_lid.push(h);
        }
        for s in info.switches().map(NodeId) {
            lid[s.idx()] = addr
                .switch_lid(f, s)
                .ok_or(ExportError::TooManyLids { plane, needed })?;
            by_lid.push(s);
        }
        by_lid.sort_by_key(|n| lid[n.idx()]);
        Ok(Self { plane, lid, by_lid })
    }

    /// LID of `n` in this plane (0 if it has none).
    pub fn lid(&self, n: NodeId) -> u16 {
        self.lid[n.idx()]
    }

    /// Largest LID in use.
    pub fn max_lid(&self) -> u16 {
        self.by_lid.last().map_or(0, |&n| self.lid(n))
    }

    /// Nodes in LID order.
    pub fn nodes(&self) -> &[NodeId] {
        &self.by_lid
    }
}

/// GUID of the port that carries `n`'s LID in `plane` (a switch's port 0, a
/// CA's port toward the plane).
pub fn lid_port_guid(f: &Fabric, addr: &AddressPlan, n: NodeId, plane: u16) -> u64 {
    match f.is_host(n).then(|| f.attachment(n, plane)).flatten() {
        Some(a) => addr.port_guid(f, n, a.host_port),
        None => addr.node_guid(n),
    }
}

fn kind(f: &Fabric, n: NodeId) -> IbKind {
    if f.is_host(n) {
        IbKind::Ca
    } else {
        IbKind::Switch
    }
}

/// Min-hop distances (in switch hops inside the plane) from every node to `dst`.
fn bfs_to(
    f: &Fabric,
    plane: u16,
    dst: NodeId,
    link_up: &dyn Fn(LinkId) -> bool,
    dist: &mut [u32],
    queue: &mut Vec<NodeId>,
) {
    dist.fill(u32::MAX);
    queue.clear();
    dist[dst.idx()] = 0;
    queue.push(dst);
    let mut head = 0;
    while head < queue.len() {
        let n = queue[head];
        head += 1;
        for (peer, l) in f.ports(n) {
            if f.is_host(peer)
                || f.plane(peer) != Some(plane)
                || dist[peer.idx()] != u32::MAX
                || !link_up(l)
            {
                continue;
            }
            dist[peer.idx()] = dist[n.idx()] + 1;
            queue.push(peer);
        }
    }
}

/// Ports toward a destination leaf from the switches whose tables have no entry for it.
///
/// After failures a switch can have no route toward a leaf that it still reaches over live
/// links: no up*/down* path and no source whose detour passes it
/// ([`crate::lanes::route_around`] writes entries only on detour paths). Data between hosts
/// never reaches such a switch, but the switch itself is an end node on InfiniBand (its port 0
/// answers the subnet manager, sends traps), so OpenSM's `updn` and `minhop` give every
/// switch an entry for every LID it can reach, and an LFT without one breaks, e.g., `ibroute`
/// from a subnet manager on a host of that leaf. For such a switch the dump takes the
/// neighbours that are one hop closer, over live links, to the nearest switch that has an
/// entry: the hop count falls by one per hop until a switch with an entry is reached, whose
/// route then delivers, so these entries add no loop, and no pair's data path uses them.
#[derive(Debug, Default)]
pub struct UnroutedLeaves {
    /// `(switch, destination leaf)` → the range of `ports` to choose from.
    at: std::collections::HashMap<(NodeId, NodeId), (u32, u32)>,
    ports: Vec<Port>,
}

impl UnroutedLeaves {
    /// Collects the ports for every (switch, leaf) of `plane` where `routes` has none and
    /// the switch reaches the leaf over live links.
    pub fn new(f: &Fabric, routes: &Routes, plane: u16) -> UnroutedLeaves {
        let mut out = UnroutedLeaves::default();
        let info = f.plane_info(plane);
        let switches: Vec<NodeId> = info.switches().map(NodeId).collect();
        let base = info.switches().start;
        let mut dist = vec![u32::MAX; switches.len()];
        let mut queue: Vec<NodeId> = Vec::new();
        for (li, leaf) in info.leaves().map(NodeId).enumerate() {
            let unrouted = |s: NodeId| routes.row_entries(s)[li] == NO_ROUTE;
            if !switches.iter().any(|&s| unrouted(s)) {
                continue;
            }
            // Multi-source BFS from every switch with an entry, over live switch links.
            dist.fill(u32::MAX);
            queue.clear();
            for &s in &switches {
                if !unrouted(s) {
                    dist[(s.0 - base) as usize] = 0;
                    queue.push(s);
                }
            }
            let mut head = 0;
            while head < queue.len() {
                let n = queue[head];
                head += 1;
                let dn = dist[(n.0 - base) as usize];
                for (peer, l) in f.ports(n) {
                    if f.is_host(peer) || f.plane(peer) != Some(plane) || !routes.link_is_up(l) {
                        continue;
                    }
                    let d = &mut dist[(peer.0 - base) as usize];
                    if *d == u32::MAX {
                        *d = dn + 1;
                        queue.push(peer);
                    }
                }
            }
            for &s in &switches {
                let ds = dist[(s.0 - base) as usize];
                if ds == 0 || ds == u32::MAX {
                    continue; // has an entry, or cannot reach the leaf at all
                }
                let start = out.ports.len() as u32;
                for (p, (peer, l)) in f.ports(s).enumerate() {
                    if !f.is_host(peer)
                        && f.plane(peer) == Some(plane)
                        && routes.link_is_up(l)
                        && dist[(peer.0 - base) as usize] == ds - 1
                    {
                        out.ports.push(p as Port);
                    }
                }
                out.at.insert((s, leaf), (start, out.ports.len() as u32));
            }
        }
        out
    }

    /// Ports of `switch` toward `leaf` if its tables have no entry (empty otherwise).
    pub fn ports(&self, switch: NodeId, leaf: NodeId) -> &[Port] {
        self.at
            .get(&(switch, leaf))
            .map_or(&[], |&(a, b)| &self.ports[a as usize..b as usize])
    }

    /// Number of (switch, leaf) pairs filled in.
    pub fn len(&self) -> usize {
        self.at.len()
    }

    /// True when every switch had an entry for every leaf it reaches.
    pub fn is_empty(&self) -> bool {
        self.at.is_empty()
    }
}

/// What follows the port on each line of an LFT dump.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LftComments {
    /// `0xLID PORT # Channel Adapter portguid 0x…: 'name'`, as OpenSM's own dump reads.
    Kept,
    /// `0xLID PORT` alone: what OpenSM's `file` engine reads, about a fifth of the bytes.
    Dropped,
}

/// Writes the OpenSM LFT dump of one plane: every switch's entry for every LID it reaches
/// over live links, each entry followed by its destination's comment or not (`comments`;
/// the entries are the same either way).
///
/// - A host LID takes the single-path table's port ([`Lft`]; the same table whichever
///   engine computed `routes`, so the dump is balanced as `fabric routes balance` reports).
///   Where the tables have no route to the host's leaf but the switch still reaches it, the
///   entry takes a min-hop way to the nearest switch with a route ([`UnroutedLeaves`]),
///   spread by `lid mod ways`; a host cut off by failures has no entry.
/// - A switch LID takes a min-hop path over live links, spread the same way; these carry
///   management traffic only.
pub fn write_lfts<W: Write>(
    w: &mut W,
    f: &Fabric,
    addr: &AddressPlan,
    plan: &LidPlan,
    routes: &Routes,
    lft: &Lft,
    comments: LftComments,
) -> Result<(), ExportError> {
    let link_up = |l: LinkId| routes.link_is_up(l);
    let info = f.plane_info(plan.plane);
    let switches: Vec<NodeId> = info.switches().map(NodeId).collect();
    // out_port[s_index * nswitch + t_index]: IB port from switch s toward switch t.
    let ns = switches.len();
    let base = info.switches().start;
    let mut to_switch = vec![0u8; ns * ns];
    let mut dist = vec![u32::MAX; f.num_nodes()];
    let mut queue = Vec::new();
    let mut cand: Vec<Port> = Vec::new();
    for (ti, &t) in switches.iter().enumerate() {
        bfs_to(f, plan.plane, t, &link_up, &mut dist, &mut queue);
        let tlid = u32::from(plan.lid(t));
        for (si, &s) in switches.iter().enumerate() {
            if s == t {
                continue;
            }
            let ds = dist[s.idx()];
            if ds == u32::MAX {
                continue; // cut off by failures: no entry (0 = none)
            }
            cand.clear();
            for (p, (peer, l)) in f.ports(s).enumerate() {
                if !f.is_host(peer) && link_up(l) && dist[peer.idx()] == ds - 1 {
                    cand.push(p as Port);
                }
            }
            let port = cand[tlid as usize % cand.len()];
            to_switch[si * ns + ti] = ib_port(port)?;
        }
    }
    let unrouted = UnroutedLeaves::new(f, routes, plan.plane);
    let max_lid = plan.max_lid();
    // The part of an entry after the port depends only on the destination: render it
    // once per plane, not once per (switch, destination).
    let suffix: Vec<Vec<u8>> = plan
        .nodes()
        .iter()
        .map(|&d| {
            if comments == LftComments::Dropped {
                return b"\n".to_vec();
            }
            let mut b = Vec::new();
            let _ = opensm::lft_entry(
                &mut b,
                0,
                0,
                kind(f, d),
                lid_port_guid(f, addr, d, plan.plane),
                f.node_name(d),
            );
            b.split_off(b.iter().position(|&c| c == b'#').unwrap_or(0) - 1)
        })
        .collect();
    let mut block = Vec::new();
    for (si, &s) in switches.iter().enumerate() {
        let slid = plan.lid(s);
        block.clear();
        opensm::lft_switch_header(&mut block, max_lid, slid, addr.node_guid(s), f.node_name(s))?;
        let mut dumped = 0;
        for (di, &d) in plan.nodes().iter().enumerate() {
            let dlid = plan.lid(d);
            let port = if d == s {
                0
            } else if f.is_host(d) {
                match lft.port(f, s, d) {
                    Some(p) => ib_port(p)?,
                    None => {
                        let ways = routes
                            .host_leaf(d, plan.plane)
                            .map_or(&[][..], |leaf| unrouted.ports(s, leaf));
                        match ways.len() {
                            0 => continue, // cut off: the LID stays unrouted on this switch
                            n => ib_port(ways[usize::from(dlid) % n])?,
                        }
                    }
                }
            } else {
                match to_switch[si * ns + (d.0 - base) as usize] {
                    0 => continue,
                    p => p,
                }
            };
            dumped += 1;
            // Same bytes as opensm::lft_entry.
            block.extend_from_slice(b"0x");
            fastfmt::hex_pad(&mut block, u64::from(dlid), 4);
            block.push(b' ');
            fastfmt::dec_pad(&mut block, u64::from(port), 3);
            block.extend_from_slice(&suffix[di]);
        }
        opensm::lft_switch_trailer(&mut block, dumped)?;
        w.write_all(&block)?;
    }
    Ok(())
}

/// The port count of a node in the `.net`: its radix (a 64-port leaf with an empty port is
/// `Switch 64`, not 63), capped at 254, InfiniBand's most ports per switch; the ports in use
/// must fit.
fn net_ports(f: &Fabric, n: NodeId) -> Result<u8, ExportError> {
    let used = ib_port(f.degree(n).saturating_sub(1) as Port)?;
    Ok(used.max(f.radix(n).min(254) as u8))
}

fn ib_port(p: Port) -> Result<u8, ExportError> {
    u8::try_from(u32::from(p) + 1).map_err(|_| ExportError::PortTooHigh {
        port: u32::from(p) + 1,
    })
}

/// Writes the `guid2lid` file of one plane.
pub fn write_guid2lid<W: Write>(
    w: &mut W,
    f: &Fabric,
    addr: &AddressPlan,
    plan: &LidPlan,
) -> io::Result<()> {
    for &n in plan.nodes() {
        opensm::guid2lid_entry(w, lid_port_guid(f, addr, n, plan.plane), plan.lid(n))?;
    }
    Ok(())
}

/// Writes the ibnetdiscover/ibsim topology of one plane: every switch of the
/// plane and every host NIC with a port in it, with all in-plane links.
pub fn write_net<W: Write>(
    w: &mut W,
    f: &Fabric,
    addr: &AddressPlan,
    plan: &LidPlan,
    link_up: &dyn Fn(LinkId) -> bool,
) -> Result<(), ExportError> {
    let nsw = f.plane_info(plan.plane).switches().len();
    opensm::net_header(
        w,
        &format!("{} plane {}", f.name(), plan.plane),
        nsw,
        plan.nodes().len() - nsw,
    )?;
    let mut ports = Vec::new();
    for &n in plan.nodes() {
        let me = net_node(f, addr, n, plan)?;
        ports.clear();
        for (p, (peer, link)) in f.ports(n).enumerate() {
            if plan.lid(peer) == 0 {
                continue; // the peer is outside this plane (another plane of a host NIC)
            }
            if !link_up(link) {
                continue; // failed: ibsim and OpenSM see the fabric the tables were made for
            }
            let l = f.link(link);
            let peer_port = if l.a == n { l.b_port } else { l.a_port };
            let peer_node = net_node(f, addr, peer, plan)?;
            ports.push(NetPort {
                port: ib_port(p as Port)?,
                local_lid: plan.lid(n),
                peer: peer_node,
                peer_port: ib_port(peer_port)?,
                peer_lid: plan.lid(peer),
            });
        }
        opensm::net_node(w, &me, &ports)?;
    }
    Ok(())
}

fn net_node<'f>(
    f: &'f Fabric,
    addr: &AddressPlan,
    n: NodeId,
    plan: &LidPlan,
) -> Result<NetNode<'f>, ExportError> {
    Ok(NetNode {
        kind: kind(f, n),
        guid: addr.node_guid(n),
        ports: net_ports(f, n)?,
        name: f.node_name(n),
        lid: plan.lid(n),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The dump with [`LftComments::Dropped`] is the one with [`LftComments::Kept`] with
    /// each entry's ` # …` cut off, byte for byte, also after a failure (entries routed
    /// around it, LIDs cut off left out).
    #[test]
    fn dropping_comments_only_cuts_each_entrys_comment() {
        let f = crate::generators::fat_tree(4, crate::Rate::gbps(400)).unwrap();
        let addr = AddressPlan::new(&f).unwrap();
        let plan = LidPlan::new(&f, &addr, 0).unwrap();
        let mut routes = Routes::compute(&f);
        let agg = f.name_index()["pod0-agg0"];
        routes.fail_links(&f, &[f.port_link(agg, 2), f.port_link(agg, 3)]);
        let lft = Lft::compute(&f, &routes);
        let dump = |comments| {
            let mut out = Vec::new();
            write_lfts(&mut out, &f, &addr, &plan, &routes, &lft, comments).unwrap();
            String::from_utf8(out).unwrap()
        };
        let (kept, dropped) = (dump(LftComments::Kept), dump(LftComments::Dropped));
        let entries = kept.lines().filter(|l| l.starts_with("0x")).count();
        assert!(entries > 20 * 30, "{entries} entries");
        let commented = kept.lines().filter(|l| l.contains(" # ")).count();
        assert_eq!(commented, entries);
        let mut cut: String = kept
            .lines()
            .map(|l| l.split(" # ").next().unwrap())
            .collect::<Vec<_>>()
            .join("\n");
        cut.push('\n');
        assert_eq!(dropped, cut);
    }
}
