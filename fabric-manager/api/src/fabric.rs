//! [`FabricInfo`]: the node and port map, sent once per stream or recording so that
//! snapshots carry only numbers.
//!
//! Nodes and ports are stored as rows in Rust and as one array per field in JSON
//! (`{"name": [...], "tier": [...], ...}`), which keeps a 100k-GPU map a few MB.
//!
//! **Port order** for a fabric built from `topo` ([`FabricInfo::from_topo`]): port
//! `2·l` is the lower end (`a`) of link `l`, port `2·l + 1` its upper end (`b`); so
//! `port / 2` is the [`LinkId`] and `port ^ 1` the peer port. Other sources (a Linux host
//! whose peers are unknown) list their ports in any order, with `link`/`peer` absent.

use crate::{Error, Result, SCHEMA_VERSION, ids};
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use topo::LinkId;

/// A node: a switch or a host NIC. For a `topo` fabric the index is the `topo::NodeId`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NodeInfo {
    /// Name (e.g. `p0-pod3-leaf5`, `host12-nic3`).
    pub name: String,
    /// Tier: 0 host, 1 leaf/ToR, 2 spine/aggregation, 3 core.
    pub tier: u8,
    /// Plane of a switch (`None` for hosts, which may span planes).
    pub plane: Option<u16>,
    /// Pod (Dragonfly+ group), when the node has one.
    pub pod: Option<u32>,
}

/// One end of a link: a node's port.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PortInfo {
    /// Index of the node in [`FabricInfo::nodes`].
    pub node: u32,
    /// The node's local port number.
    pub port: u16,
    /// The cable, when known.
    pub link: Option<LinkId>,
    /// Index of the peer node in [`FabricInfo::nodes`], when known.
    pub peer: Option<u32>,
    /// The peer's port number, when known.
    pub peer_port: Option<u16>,
    /// Line rate in bits per second (each direction).
    pub speed_bps: u64,
}

/// The fabric a stream or recording talks about.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct FabricInfo {
    /// Schema version of everything that follows (see the crate docs for the rule).
    pub schema_version: u32,
    /// Fabric name.
    pub name: String,
    /// PFC priorities a port has (per-priority arrays have at most this many entries).
    pub priorities: u8,
    /// Nodes (switches and host NICs).
    #[serde(serialize_with = "ser_nodes", deserialize_with = "de_nodes")]
    pub nodes: Vec<NodeInfo>,
    /// Ports, in the order every per-port array of a snapshot follows.
    #[serde(serialize_with = "ser_ports", deserialize_with = "de_ports")]
    pub ports: Vec<PortInfo>,
    /// Which run of the daemon sends this stream (a new id on every start), absent in
    /// recordings and from sources that are not a daemon. A reader that reconnects and
    /// sees another instance is talking to a restarted daemon: its sequence numbers
    /// start again, so the reader starts afresh (re-reads the map, resumes from 0).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub instance: Option<String>,
}

impl FabricInfo {
    /// The map of a `topo` fabric: every node, and two ports per link in link order
    /// (see the module docs), with `priorities` PFC priorities per port.
    pub fn from_topo(f: &topo::Fabric, priorities: u8) -> Self {
        let nodes = (0..f.num_nodes() as u32)
            .map(|i| {
                let n = topo::NodeId(i);
                NodeInfo {
                    name: f.node_name(n).to_string(),
                    tier: f.tier(n),
                    plane: f.plane(n),
                    pod: f.pod(n),
                }
            })
            .collect();
        let mut ports = Vec::with_capacity(2 * f.num_links());
        for (l, link) in f.links().iter().enumerate() {
            let ends = [
                (link.a, link.a_port, link.b, link.b_port),
                (link.b, link.b_port, link.a, link.a_port),
            ];
            for (n, p, peer, pp) in ends {
                ports.push(PortInfo {
                    node: n.0,
                    port: p,
                    link: Some(LinkId(l as u32)),
                    peer: Some(peer.0),
                    peer_port: Some(pp),
                    speed_bps: link.rate_bps,
                });
            }
        }
        FabricInfo {
            schema_version: SCHEMA_VERSION,
            name: f.name().to_string(),
            priorities,
            nodes,
            ports,
            instance: None,
        }
    }

    /// The same map with another instance id (the daemon stamps its own on start).
    pub fn with_instance(mut self, instance: Option<String>) -> Self {
        self.instance = instance;
        self
    }

    /// Index of the port at `(node, port)` for a `topo` fabric (`2·link + end`).
    pub fn topo_port_index(f: &topo::Fabric, node: topo::NodeId, port: topo::Port) -> u32 {
        let l = f.port_link(node, port);
        2 * l.0 + u32::from(f.link(l).a != node || f.link(l).a_port != port)
    }

    /// Name of the node a port belongs to.
    pub fn port_node_name(&self, port: usize) -> Option<&str> {
        let p = self.ports.get(port)?;
        self.nodes.get(p.node as usize).map(|n| n.name.as_str())
    }

    /// Checks the cross references (node and peer indices in range) and the version.
    pub fn validate(&self) -> Result<()> {
        if self.schema_version > SCHEMA_VERSION {
            return Err(Error::Version {
                found: self.schema_version,
                supported: SCHEMA_VERSION,
            });
        }
        let n = self.nodes.len() as u64;
        for (i, p) in self.ports.iter().enumerate() {
            let bad = |what: &str, v: u32| Error::Invalid {
                what: format!("fabric.ports[{i}].{what}"),
                msg: format!("node index {v} but the fabric has {n} nodes"),
            };
            if u64::from(p.node) >= n {
                return Err(bad("node", p.node));
            }
            if let Some(peer) = p.peer
                && u64::from(peer) >= n
            {
                return Err(bad("peer", peer));
            }
        }
        Ok(())
    }
}

/// JSON form of the node table.
#[derive(Serialize, Deserialize)]
struct NodeCols {
    name: Vec<String>,
    tier: Vec<u8>,
    plane: Vec<Option<u16>>,
    pod: Vec<Option<u32>>,
}

fn ser_nodes<S: Serializer>(nodes: &[NodeInfo], s: S) -> std::result::Result<S::Ok, S::Error> {
    NodeCols {
        name: nodes.iter().map(|n| n.name.clone()).collect(),
        tier: nodes.iter().map(|n| n.tier).collect(),
        plane: nodes.iter().map(|n| n.plane).collect(),
        pod: nodes.iter().map(|n| n.pod).collect(),
    }
    .serialize(s)
}

fn de_nodes<'de, D: Deserializer<'de>>(d: D) -> std::result::Result<Vec<NodeInfo>, D::Error> {
    let c = NodeCols::deserialize(d)?;
    same_len(
        "nodes",
        &[c.name.len(), c.tier.len(), c.plane.len(), c.pod.len()],
    )?;
    Ok(c.name
        .into_iter()
        .zip(c.tier)
        .zip(c.plane.into_iter().zip(c.pod))
        .map(|((name, tier), (plane, pod))| NodeInfo {
            name,
            tier,
            plane,
            pod,
        })
        .collect())
}

/// JSON form of the port table.
#[derive(Serialize, Deserialize)]
struct PortCols {
    node: Vec<u32>,
    port: Vec<u16>,
    #[serde(with = "ids::opt_links")]
    link: Vec<Option<LinkId>>,
    peer: Vec<Option<u32>>,
    peer_port: Vec<Option<u16>>,
    speed_bps: Vec<u64>,
}

fn ser_ports<S: Serializer>(ports: &[PortInfo], s: S) -> std::result::Result<S::Ok, S::Error> {
    PortCols {
        node: ports.iter().map(|p| p.node).collect(),
        port: ports.iter().map(|p| p.port).collect(),
        link: ports.iter().map(|p| p.link).collect(),
        peer: ports.iter().map(|p| p.peer).collect(),
        peer_port: ports.iter().map(|p| p.peer_port).collect(),
        speed_bps: ports.iter().map(|p| p.speed_bps).collect(),
    }
    .serialize(s)
}

fn de_ports<'de, D: Deserializer<'de>>(d: D) -> std::result::Result<Vec<PortInfo>, D::Error> {
    let c = PortCols::deserialize(d)?;
    let lens = [
        c.node.len(),
        c.port.len(),
        c.link.len(),
        c.peer.len(),
        c.peer_port.len(),
        c.speed_bps.len(),
    ];
    same_len("ports", &lens)?;
    let mut out = Vec::with_capacity(c.node.len());
    for i in 0..c.node.len() {
        out.push(PortInfo {
            node: c.node[i],
            port: c.port[i],
            link: c.link[i],
            peer: c.peer[i],
            peer_port: c.peer_port[i],
            speed_bps: c.speed_bps[i],
        });
    }
    Ok(out)
}

/// Every column of a table must have the same length.
pub(crate) fn same_len<E: serde::de::Error>(
    table: &str,
    lens: &[usize],
) -> std::result::Result<(), E> {
    if lens.iter().any(|&l| l != lens[0]) {
        return Err(E::custom(format!(
            "{table}: columns of different lengths {lens:?}"
        )));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn topo_map_round_trips_and_follows_link_order() {
        let f = topo::generators::fat_tree(4, topo::Rate::gbps(400)).unwrap();
        let info = FabricInfo::from_topo(&f, 8);
        assert_eq!(info.nodes.len(), 36);
        assert_eq!(info.ports.len(), 2 * f.num_links());
        for (i, p) in info.ports.iter().enumerate() {
            assert_eq!(p.link, Some(LinkId(i as u32 / 2)));
            let q = &info.ports[i ^ 1];
            assert_eq!((p.peer, p.peer_port), (Some(q.node), Some(q.port)));
            let idx = FabricInfo::topo_port_index(&f, topo::NodeId(p.node), p.port);
            assert_eq!(idx, i as u32);
        }
        assert_eq!(info.port_node_name(0), Some("host0-nic0"));
        let json = serde_json::to_string(&info).unwrap();
        let back: FabricInfo = serde_json::from_str(&json).unwrap();
        assert_eq!(back, info);
        back.validate().unwrap();
    }
}
