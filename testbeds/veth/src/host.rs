//! Read-only telemetry of links the project did not create: every interface (but `lo`)
//! of the namespaces whose names start with a prefix (`--netns-prefix P`), or of the
//! current namespace — a Linux host or routers set up by other tools. One RTM_GETLINK dump
//! per namespace per snapshot; nothing is ever written.
//!
//! Without a fabric ([`HostTelemetry::open`]) the port map lists each namespace as a node
//! and each interface found as a port, in (namespace, interface index) order, peers and
//! links unknown. With one ([`HostTelemetry::open_mapped`]) the namespaces are the fabric's
//! nodes by name (`PREFIX` + node name) and interface `pN` is port N: the map is the
//! fabric's own (`FabricInfo::from_topo`, peers and links known), and a port whose
//! namespace or interface is missing reads as down. An interface that disappears later
//! reads as down with its counters zero; one that appears later is not in the map.

use std::collections::HashMap;

use fabric_api::{
    Column, FabricInfo, NodeInfo, PortInfo, SCHEMA_VERSION, Snapshot, Source, SourceKind, Timestamp,
};

use crate::netlink::{LinkStats, Nl};
use crate::netns::Netns;
use crate::{Error, Result};

/// The current namespace, as a path [`Netns`] can open.
const CURRENT: &str = "/proc/thread-self/ns/net";

/// One namespace being watched.
#[derive(Debug)]
struct Target {
    nl: Nl,
    /// Interface name → port index in the map.
    ports: HashMap<String, usize>,
}

/// Telemetry of existing namespaces (or of this host).
#[derive(Debug)]
pub struct HostTelemetry {
    info: FabricInfo,
    targets: Vec<Target>,
}

/// The namespaces under `/run/netns` whose names start with `prefix`, sorted.
pub fn namespaces_with_prefix(prefix: &str) -> Result<Vec<String>> {
    let dir = match std::fs::read_dir("/run/netns") {
        Ok(d) => d,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => {
            return Err(Error::Os {
                what: "list /run/netns".into(),
                source: e,
            });
        }
    };
    let mut v: Vec<String> = dir
        .filter_map(|e| e.ok())
        .filter_map(|e| e.file_name().into_string().ok())
        .filter(|n| n.starts_with(prefix))
        .collect();
    v.sort();
    Ok(v)
}

impl HostTelemetry {
    /// Watch the namespaces named `prefix*` (an error if there is none), or the current
    /// namespace when `prefix` is `None`.
    pub fn open(prefix: Option<&str>) -> Result<HostTelemetry> {
        let names: Vec<String> = match prefix {
            Some(p) => {
                let v = namespaces_with_prefix(p)?;
                if v.is_empty() {
                    return Err(Error::Invalid(format!(
                        "no network namespace under /run/netns starts with `{p}` (see `ip netns list`)"
                    )));
                }
                v
            }
            None => vec![CURRENT.to_string()],
        };
        let mut nodes = Vec::new();
        let mut ports = Vec::new();
        let mut targets = Vec::new();
        for (node, name) in names.iter().enumerate() {
            let nl = Nl::open(&Netns::from_name(name))?;
            let mut links: Vec<(String, LinkStats)> =
                nl.stats()?.into_iter().filter(|(n, _)| n != "lo").collect();
            links.sort_by_key(|(_, st)| st.index);
            let mut map = HashMap::new();
            for (port, (ifname, _)) in links.iter().enumerate() {
                map.insert(ifname.clone(), ports.len());
                ports.push(PortInfo {
                    node: node as u32,
                    port: port as u16,
                    link: None,
                    peer: None,
                    peer_port: None,
                    speed_bps: 0,
                });
            }
            nodes.push(NodeInfo {
                name: if name == CURRENT {
                    "host".into()
                } else {
                    name.clone()
                },
                tier: 0,
                plane: None,
                pod: None,
            });
            targets.push(Target { nl, ports: map });
        }
        let info = FabricInfo {
            schema_version: SCHEMA_VERSION,
            name: prefix.map_or("this host".into(), |p| format!("namespaces {p}*")),
            priorities: 8,
            nodes,
            ports,
            instance: None,
        };
        Ok(HostTelemetry { info, targets })
    }

    /// Watch the namespaces `prefix` + node name of `fabric`, their interfaces `pN` as the
    /// fabric's ports N. A namespace that does not exist is an error naming it.
    pub fn open_mapped(prefix: &str, fabric: &topo::Fabric) -> Result<HostTelemetry> {
        let present = namespaces_with_prefix(prefix)?;
        let mut targets = Vec::new();
        for n in 0..fabric.num_nodes() as u32 {
            let node = topo::NodeId(n);
            let name = format!("{prefix}{}", fabric.node_name(node));
            if !present.contains(&name) {
                return Err(Error::Invalid(format!(
                    "fabric {}: node {} has no namespace {name} (expected one per node, named PREFIX + node name)",
                    fabric.name(),
                    fabric.node_name(node)
                )));
            }
            let ports = (0..fabric.degree(node) as topo::Port)
                .map(|p| {
                    let i = FabricInfo::topo_port_index(fabric, node, p) as usize;
                    (format!("p{p}"), i)
                })
                .collect();
            targets.push(Target {
                nl: Nl::open(&Netns::from_name(&name))?,
                ports,
            });
        }
        Ok(HostTelemetry {
            info: FabricInfo::from_topo(fabric, 8),
            targets,
        })
    }

    /// The port map (send it once, before the snapshots).
    pub fn fabric_info(&self) -> &FabricInfo {
        &self.info
    }

    /// Every port's counters now (wall clock), one dump per namespace.
    pub fn snapshot(&self, seq: u64) -> Result<Snapshot> {
        let n = self.info.ports.len();
        let mut stats: Vec<Option<LinkStats>> = vec![None; n];
        for t in &self.targets {
            for (name, st) in t.nl.stats()? {
                if let Some(&i) = t.ports.get(&name) {
                    stats[i] = Some(st);
                }
            }
        }
        let col = |f: fn(&LinkStats) -> u64| -> Option<Column> {
            Some(Column::from(
                stats
                    .iter()
                    .map(|s| s.as_ref().map_or(0, f))
                    .collect::<Vec<_>>(),
            ))
        };
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos() as u64);
        let source = Source {
            kind: SourceKind::LinuxHost,
            name: self.info.name.clone(),
        };
        let mut s = Snapshot::new(seq, Timestamp::wall_ns(now), source);
        s.counters.tx_bytes = col(|s| s.tx_bytes);
        s.counters.rx_bytes = col(|s| s.rx_bytes);
        s.counters.tx_pkts = col(|s| s.tx_packets);
        s.counters.rx_pkts = col(|s| s.rx_packets);
        s.counters.drops_kernel = col(|s| s.rx_dropped + s.tx_dropped + s.rx_errors + s.tx_errors);
        s.gauges.oper_down = stats
            .iter()
            .enumerate()
            .filter(|(_, s)| !s.is_some_and(|s| s.carrier && s.oper_up))
            .map(|(i, _)| i as u32)
            .collect();
        s.sum_ports_into_totals();
        Ok(s)
    }
}
