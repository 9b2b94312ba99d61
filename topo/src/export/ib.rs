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
use crate::model::{Fabric, LinkId, NodeId, Port};

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

/// Writes the OpenSM LFT dump of one plane. `next_hops(switch, host, out)`
/// must fill `out` with the switch's ECMP next-hop ports (model numbering)
/// toward host NIC `host` in this plane; when it gives several, the entry
/// uses `out[lid % out.len()]` (destination-mod-k spreading, as OpenSM's
/// ftree engine does); when it gives none (the host is cut off by failures)
/// the LID is left out of the switch's table, as OpenSM leaves unrouted LIDs.
/// Routes to switch LIDs are min-hop paths over the links `link_up` accepts,
/// spread the same way; they carry management traffic only.
pub fn write_lfts<W: Write>(
    w: &mut W,
    f: &Fabric,
    addr: &AddressPlan,
    plan: &LidPlan,
    link_up: &dyn Fn(LinkId) -> bool,
    mut next_hops: impl FnMut(NodeId, NodeId, &mut Vec<Port>),
) -> Result<(), ExportError> {
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
        bfs_to(f, plan.plane, t, link_up, &mut dist, &mut queue);
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
    let max_lid = plan.max_lid();
    // The part of an entry after the port depends only on the destination: render it
    // once per plane, not once per (switch, destination).
    let suffix: Vec<Vec<u8>> = plan
        .nodes()
        .iter()
        .map(|&d| {
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
    let mut hops = Vec::new();
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
                hops.clear();
                next_hops(s, d, &mut hops);
                match hops.len() {
                    0 => continue, // no route: the LID stays unrouted on this switch
                    n => ib_port(hops[usize::from(dlid) % n])?,
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
