//! Plane 0 of a `topo` fabric as an InfiniBand subnet: the files ibsim and OpenSM read,
//! the names ibsim gives nodes (`S-<guid>`, `H-<guid>`), LIDs, and directed-route paths
//! (which reach a switch whatever its forwarding tables hold).
//!
//! IB port numbers are model port + 1 (port 0 is a switch's management port), as in the
//! exports ([`topo::export::ib`]).

use std::collections::HashMap;
use std::io::Write;
use std::sync::Arc;

use topo::addressing::AddressPlan;
use topo::export::ib::{self, LftComments, LidPlan};
use topo::lft::Lft;
use topo::{Fabric, LinkId, NodeId, Port, Routes};

use crate::tables::{self, Lfts};
use crate::{Error, Result};

/// The subnet every fabric is simulated as (one subnet manager per plane; the harness runs
/// the first plane).
pub const PLANE: u16 = 0;

/// A fabric's plane 0 as an IB subnet.
#[derive(Debug)]
pub struct Design {
    /// The fabric.
    pub fabric: Arc<Fabric>,
    /// Its addressing plan (GUIDs and LIDs).
    pub addr: AddressPlan,
    /// LIDs of plane 0.
    pub lids: LidPlan,
    by_guid: HashMap<u64, NodeId>,
    by_lid: HashMap<u16, NodeId>,
    /// The node the tools run on (directed routes start there).
    origin: NodeId,
}

impl Design {
    /// The subnet of `f`; an error for a multi-plane fabric (run one subnet per plane
    /// with its own fabric) or one whose LIDs do not fit.
    pub fn new(f: Arc<Fabric>) -> Result<Design> {
        if f.num_planes() != 1 {
            return Err(Error::Fabric(format!(
                "{}: {} planes; the InfiniBand testbed runs one subnet (a single-plane fabric)",
                f.name(),
                f.num_planes()
            )));
        }
        let addr = AddressPlan::without_ipv4(&f).map_err(|e| Error::Fabric(e.to_string()))?;
        let lids = LidPlan::new(&f, &addr, PLANE).map_err(|e| Error::Fabric(e.to_string()))?;
        let by_guid = (0..f.num_nodes() as u32)
            .map(NodeId)
            .map(|n| (addr.node_guid(n), n))
            .collect();
        let by_lid = lids.nodes().iter().map(|&n| (lids.lid(n), n)).collect();
        let origin = lids.nodes()[0];
        Ok(Design {
            fabric: f,
            addr,
            lids,
            by_guid,
            by_lid,
            origin,
        })
    }

    /// The name ibsim and ibnetdiscover give node `n` (`S-<guid>` or `H-<guid>`).
    pub fn ib_name(&self, n: NodeId) -> String {
        let kind = if self.fabric.is_host(n) { 'H' } else { 'S' };
        format!("{kind}-{:016x}", self.addr.node_guid(n))
    }

    /// The node behind an ibsim name, if the design has it.
    pub fn node_of_ib_name(&self, name: &str) -> Option<NodeId> {
        let hex = name
            .strip_prefix("S-")
            .or_else(|| name.strip_prefix("H-"))?;
        self.node_of_guid(u64::from_str_radix(hex, 16).ok()?)
    }

    /// The node with node GUID `g`.
    pub fn node_of_guid(&self, g: u64) -> Option<NodeId> {
        self.by_guid.get(&g).copied()
    }

    /// The node holding `lid`.
    pub fn node_of_lid(&self, lid: u16) -> Option<NodeId> {
        self.by_lid.get(&lid).copied()
    }

    /// LID of `n`.
    pub fn lid(&self, n: NodeId) -> u16 {
        self.lids.lid(n)
    }

    /// The node the subnet manager and the tools run on: umad2sim attaches its clients
    /// to the first channel adapter of the `.net`, the host with the lowest LID.
    pub fn sm_node(&self) -> NodeId {
        self.lids.nodes()[0]
    }

    /// The node the tools run on: [`Self::sm_node`] unless [`Self::set_origin`] said
    /// otherwise (a real HCA, found by its LID).
    pub fn origin(&self) -> NodeId {
        self.origin
    }

    /// The tools run on the node holding `lid` (a channel adapter of the design).
    pub fn set_origin(&mut self, lid: u16) -> Result<()> {
        match self.node_of_lid(lid) {
            Some(n) if self.fabric.is_host(n) => {
                self.origin = n;
                Ok(())
            }
            Some(n) => Err(Error::Fabric(format!(
                "the tools' port has LID {lid}, which the design gives switch {}: run them on a channel adapter",
                self.fabric.node_name(n)
            ))),
            None => Err(Error::Fabric(format!(
                "the tools' port has LID {lid}, which the design gives no node (its LIDs are 1..={})",
                self.lids.max_lid()
            ))),
        }
    }

    /// Writes the `.net` of the whole design (ibsim simulates every cable; failures are
    /// made on its console).
    pub fn write_net(&self, w: &mut impl Write) -> Result<()> {
        ib::write_net(w, &self.fabric, &self.addr, &self.lids, &|_| true)
            .map_err(|e| Error::Fabric(e.to_string()))
    }

    /// Writes OpenSM's `guid2lid` cache file (so it keeps the design's LIDs).
    pub fn write_guid2lid(&self, w: &mut impl Write) -> Result<()> {
        ib::write_guid2lid(w, &self.fabric, &self.addr, &self.lids).map_err(crate::io("guid2lid"))
    }

    /// Writes the LFT dump of `lft` (OpenSM's `file` engine format) for the links `routes`
    /// holds up: host LIDs as `lft` says, every other reachable LID min-hop, each entry
    /// with its destination's comment or not ([`ib::write_lfts`]).
    pub fn write_lfts(
        &self,
        w: &mut impl Write,
        routes: &Routes,
        lft: &Lft,
        comments: LftComments,
    ) -> Result<()> {
        ib::write_lfts(
            w,
            &self.fabric,
            &self.addr,
            &self.lids,
            routes,
            lft,
            comments,
        )
        .map_err(|e| Error::Fabric(e.to_string()))
    }

    /// The tables [`Self::write_lfts`] writes, parsed.
    pub fn lfts(&self, routes: &Routes, lft: &Lft) -> Result<Lfts> {
        let mut buf = Vec::new();
        self.write_lfts(&mut buf, routes, lft, LftComments::Kept)?;
        tables::parse(&String::from_utf8_lossy(&buf), "lfts.dump")
    }

    /// The switch end of `l` and its IB port: where ibsim's console cuts the cable.
    pub fn switch_end(&self, l: LinkId) -> Result<(NodeId, u8)> {
        let f = &self.fabric;
        if l.idx() >= f.num_links() {
            return Err(Error::Fabric(format!("no link {}", l.0)));
        }
        let k = f.link(l);
        let (n, p) = if f.is_host(k.a) {
            (k.b, k.b_port)
        } else {
            (k.a, k.a_port)
        };
        Ok((n, ib_port(p)))
    }

    /// The link at IB port `port` of `n`.
    pub fn link_at(&self, n: NodeId, port: u8) -> Option<LinkId> {
        let p = Port::from(port.checked_sub(1)?);
        (usize::from(p) < self.fabric.degree(n)).then(|| self.fabric.port_link(n, p))
    }

    /// Directed-route path (`0,p1,p2,…`, IB ports) from the tools' node ([`Self::origin`]) to every node,
    /// over the links `routes` holds up; `None` where the node is cut off. A path never
    /// passes through another host.
    pub fn dr_paths(&self, routes: &Routes) -> Vec<Option<String>> {
        let f = &self.fabric;
        let from = self.origin;
        let mut path: Vec<Option<String>> = vec![None; f.num_nodes()];
        path[from.idx()] = Some("0".to_string());
        let mut queue = std::collections::VecDeque::from([from]);
        while let Some(n) = queue.pop_front() {
            if n != from && f.is_host(n) {
                continue;
            }
            let here = path[n.idx()].clone().unwrap_or_default();
            for (p, (peer, l)) in f.ports(n).enumerate() {
                if path[peer.idx()].is_some() || !routes.link_is_up(l) {
                    continue;
                }
                if f.plane(peer).is_some_and(|pl| pl != PLANE) {
                    continue;
                }
                path[peer.idx()] = Some(format!("{here},{}", p + 1));
                queue.push_back(peer);
            }
        }
        path
    }
}

/// IB port number of model port `p`.
pub fn ib_port(p: Port) -> u8 {
    (u32::from(p) + 1).min(255) as u8
}

#[cfg(test)]
mod tests {
    use super::*;

    fn k4() -> Design {
        let f = topo::generators::fat_tree(4, topo::Rate::gbps(400)).unwrap();
        Design::new(Arc::new(f)).unwrap()
    }

    #[test]
    fn names_lids_and_ports_round_trip() {
        let d = k4();
        let f = d.fabric.clone();
        for n in (0..f.num_nodes() as u32).map(NodeId) {
            assert_eq!(d.node_of_ib_name(&d.ib_name(n)), Some(n));
            assert_eq!(d.node_of_lid(d.lid(n)), Some(n));
        }
        assert_eq!(d.ib_name(d.sm_node()), "H-0002c90300000000");
        assert_eq!(d.lid(d.sm_node()), 1);
        assert_eq!(d.node_of_ib_name("S-zz"), None);
        assert_eq!(d.node_of_ib_name("X-0002c90300000000"), None);
        // A host link is cut at its leaf end; IB ports are model ports + 1.
        let leaf = f.name_index()["pod0-leaf0"];
        let l = f.port_link(leaf, 0);
        assert_eq!(d.switch_end(l).unwrap(), (leaf, 1));
        assert_eq!(d.link_at(leaf, 1), Some(l));
        assert_eq!(d.link_at(leaf, 0), None);
        assert_eq!(d.link_at(leaf, 200), None);
        assert!(d.switch_end(LinkId(9999)).is_err());
    }

    #[test]
    fn directed_routes_avoid_failed_links_and_hosts() {
        let d = k4();
        let f = d.fabric.clone();
        let mut r = Routes::compute(&f);
        let paths = d.dr_paths(&r);
        let leaf = f.name_index()["pod0-leaf0"];
        assert_eq!(paths[leaf.idx()].as_deref(), Some("0,1"));
        assert!(paths.iter().all(Option::is_some));
        // Cut the SM's host link: nothing is reachable but the SM's node.
        r.fail_links(&f, &[f.port_link(leaf, 0)]);
        let paths = d.dr_paths(&r);
        assert_eq!(paths.iter().filter(|p| p.is_some()).count(), 1);
    }

    #[test]
    fn a_multi_plane_fabric_is_refused() {
        let f = topo::presets::build("deepseek-mpft").unwrap();
        let e = Design::new(Arc::new(f)).unwrap_err();
        assert!(e.to_string().contains("planes"), "{e}");
    }
}
