//! Read-only telemetry of links the project did not create: every interface (but `lo`)
//! of the namespaces whose names start with a prefix (`--netns-prefix P`), or of the
//! current namespace — a Linux host or routers set up by other tools. One RTM_GETLINK dump
//! per namespace per snapshot; nothing is ever written.
//!
//! The port map lists each namespace as a node and each interface found at
//! [`HostTelemetry::open`] as a port, in (namespace, interface index) order; peers and
//! links are unknown (absent) — mapping interfaces onto a fabric spec by name is not done
//! here. An interface that disappears later reads as down with its last counters zero; one
//! that appears later is not in the map.

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
        };
        Ok(HostTelemetry { info, targets })
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
