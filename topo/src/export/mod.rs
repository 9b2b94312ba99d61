//! Exporters: routing tables and topology in formats other tools read.
//!
//! | format | files | read by |
//! |---|---|---|
//! | [`Format::Json`] | `routes.json` | anything; schema in `docs/exports.md` |
//! | [`Format::IpBatch`] | `ip/<switch>.batch` | `ip -batch` (iproute2) |
//! | [`Format::IpNhg`] | `ip-nhg/<switch>.batch` | `ip -batch`, with next-hop objects |
//! | [`Format::FrrBgp`] | `frr/bgp/<switch>.conf` | FRR (eBGP per RFC 7938) |
//! | [`Format::FrrStatic`] | `frr/static/<switch>.conf` | FRR (static routes) |
//! | [`vrf_bgp`] (tenants) | `vrf/frr-bgp/<switch>.conf` | FRR: `frr-bgp` with per-tenant VRFs on the leaves |
//! | [`Format::Sonic`] | `sonic/<switch>.json` | SONiC `swssconfig` (APPL_DB `ROUTE_TABLE`) |
//! | [`Format::Opensm`] | `opensm/plane<p>/{lfts.dump,fabric.net,guid2lid}` | `opensm -R file -U`, `ibsim` |
//! | [`Format::Dot`] | `fabric.dot` | Graphviz |
//! | [`Format::Slurm`] | `topology.conf` | Slurm `topology/tree` |
//! | [`Format::SlurmYaml`] | `topology.yaml` | Slurm ≥ 25.05 (`tree` and `block`) |
//! | [`Format::K8s`] | `k8s/{nodes,kueue-topology}.yaml` | `kubectl apply`, Kueue, KAI |
//!
//! The scheduler formats share one view of the fabric, [`sched::SchedTree`].
//!
//! Everything streams: exporters write through a [`Sink`] that hands out one
//! `impl Write` per file, so memory does not grow with the output (a 100k-GPU
//! fabric's tables run to gigabytes). The format layer (`ipbatch`, `frr`,
//! `sonic`, `opensm`, `dot`, `slurm`, `json`) writes records; the adapters
//! (`ib`, `topology`, `routes`) walk the model and the tables.
//!
//! ```
//! use topo::addressing::AddressPlan;
//! use topo::export::{self, Format, MemSink, Routed, Tables};
//! let f = topo::generators::fat_tree(4, topo::Rate::gbps(400)).unwrap();
//! let routes = topo::Routes::compute(&f);
//! let addr = AddressPlan::new(&f).unwrap();
//! let routed = Routed { fabric: &f, addr: &addr, tables: Tables::Ecmp(&routes), lanes: None };
//! let mut sink = MemSink::new(); // fabric-manager streams to files instead
//! export::export(&routed, Format::IpBatch, &mut sink).unwrap();
//! let leaf = sink.text("ip/pod0-leaf0.batch").unwrap();
//! assert!(leaf.contains("route replace 10.0.0.4/30 proto static nexthop via 10.64.0.1 dev swp3 weight 1"));
//! export::export(&routed, Format::Dot, &mut sink).unwrap();
//! assert!(sink.text("fabric.dot").unwrap().starts_with("graph"));
//! ```

pub mod dot;
mod fastfmt;
mod formats;
pub mod frr;
pub mod ib;
pub mod ipbatch;
pub mod json;
pub mod k8s;
pub mod lanes;
pub mod opensm;
pub mod partitions;
pub mod routes;
pub mod sched;
mod sink;
pub mod slurm;
pub mod sonic;
mod tables;
pub mod topology;
pub mod vrf;
pub mod vrf_bgp;

pub use sink::{Counter, CountingSink, MemSink, Sink};
pub use tables::Tables;

use crate::addressing::AddressPlan;
use crate::model::Fabric;

/// An export format.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Format {
    /// JSON document of all tables (documented schema).
    Json,
    /// Linux `ip -batch` route commands per switch.
    IpBatch,
    /// Linux `ip -batch` with next-hop objects and groups (`nexthop`, `nhid`).
    IpNhg,
    /// FRR eBGP configuration per switch (RFC 7938).
    FrrBgp,
    /// FRR static-route configuration per switch.
    FrrStatic,
    /// SONiC APPL_DB ROUTE_TABLE entries (swssconfig JSON) per switch.
    Sonic,
    /// OpenSM LFT dump + ibnetdiscover/ibsim topology + guid2lid, per plane.
    Opensm,
    /// Graphviz DOT of the topology.
    Dot,
    /// Slurm topology.conf (tree plugin).
    Slurm,
    /// Slurm topology.yaml (tree and block topologies).
    SlurmYaml,
    /// Kubernetes node labels and a Kueue `Topology`.
    K8s,
}

impl Format {
    /// Every format, in the order `fabric build` writes them.
    pub const ALL: [Format; 11] = [
        Format::Json,
        Format::IpBatch,
        Format::IpNhg,
        Format::FrrBgp,
        Format::FrrStatic,
        Format::Sonic,
        Format::Opensm,
        Format::Dot,
        Format::Slurm,
        Format::SlurmYaml,
        Format::K8s,
    ];

    /// The command-line name (`ip`, `frr-bgp`, …).
    pub fn name(self) -> &'static str {
        match self {
            Format::Json => "json",
            Format::IpBatch => "ip",
            Format::IpNhg => "ip-nhg",
            Format::FrrBgp => "frr-bgp",
            Format::FrrStatic => "frr-static",
            Format::Sonic => "sonic",
            Format::Opensm => "opensm",
            Format::Dot => "dot",
            Format::Slurm => "slurm",
            Format::SlurmYaml => "slurm-yaml",
            Format::K8s => "k8s",
        }
    }

    /// Parses a command-line name.
    pub fn from_name(s: &str) -> Option<Format> {
        Format::ALL.into_iter().find(|f| f.name() == s)
    }

    /// True if the format needs routing tables (false: topology only).
    pub fn needs_routes(self) -> bool {
        !matches!(
            self,
            Format::Dot | Format::Slurm | Format::SlurmYaml | Format::K8s
        )
    }

    /// True if the format writes IP addresses (IPv4 and IPv6): the address plan must
    /// hold IPv4 (else [`crate::addressing::AddressPlan::without_ipv4`] will do).
    pub fn needs_ip(self) -> bool {
        !matches!(
            self,
            Format::Opensm | Format::Dot | Format::Slurm | Format::SlurmYaml | Format::K8s
        )
    }

    /// The single file this format writes, if it writes exactly one.
    pub fn single_file(self) -> Option<&'static str> {
        match self {
            Format::Json => Some("routes.json"),
            Format::Dot => Some("fabric.dot"),
            Format::Slurm => Some("topology.conf"),
            Format::SlurmYaml => Some("topology.yaml"),
            _ => None,
        }
    }
}

impl std::fmt::Display for Format {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// Why an export failed.
#[derive(Debug, thiserror::Error)]
pub enum ExportError {
    /// Writing an output failed.
    /// (The cause is in the message and not also a `source`, so a chain printer such as
    /// anyhow's `{:#}` says it once.)
    #[error("writing export: {0}")]
    Io(std::io::Error),
    /// An IB plane has more nodes than one subnet has unicast LIDs.
    #[error(
        "plane {plane} needs {needed} LIDs but one InfiniBand subnet has only 49151 unicast LIDs \
         (0x0001-0xbfff); split the fabric into more planes or export an IP format instead"
    )]
    TooManyLids {
        /// The plane.
        plane: u16,
        /// LIDs it would need.
        needed: usize,
    },
    /// A port number does not fit InfiniBand's 8-bit port numbers.
    #[error("port {port} does not fit an InfiniBand port number (1..=254)")]
    PortTooHigh {
        /// The IB port number that was needed.
        port: u32,
    },
    /// The address plan has no address for something the format needs.
    #[error("address plan: {0}")]
    Addressing(String),
    /// The format needs routing tables; use the routing exporter.
    #[error("format `{0}` exports routing tables; it needs a routed fabric")]
    NeedsRoutes(Format),
}

impl From<std::io::Error> for ExportError {
    fn from(e: std::io::Error) -> Self {
        ExportError::Io(e)
    }
}

/// Writes a topology-only format ([`Format::Dot`] or a scheduler format).
pub fn export_topology<S: Sink>(
    f: &Fabric,
    format: Format,
    sink: &mut S,
) -> Result<(), ExportError> {
    match format {
        Format::Dot => {
            sink::with_file(sink, "fabric.dot", |w| topology::write_dot(w, f, &|_| true))
        }
        Format::Slurm => sink::with_file(sink, "topology.conf", |w| topology::write_slurm(w, f)),
        Format::SlurmYaml => sink::with_file(sink, "topology.yaml", |w| {
            let t = sched::SchedTree::new(f);
            Ok(slurm::write_topology_yaml(w, &t, f.name())?)
        }),
        Format::K8s => {
            let t = sched::SchedTree::new(f);
            sink::with_file(sink, "k8s/nodes.yaml", |w| Ok(k8s::write_nodes(w, &t)?))?;
            sink::with_file(sink, "k8s/kueue-topology.yaml", |w| {
                Ok(k8s::write_kueue(w, &t)?)
            })
        }
        other => Err(ExportError::NeedsRoutes(other)),
    }
}

/// A routed fabric: what the routing exporters read.
#[derive(Debug, Clone, Copy)]
pub struct Routed<'a> {
    /// The topology.
    pub fabric: &'a Fabric,
    /// Its addresses, LIDs, GUIDs and ASNs.
    pub addr: &'a AddressPlan,
    /// The tables to export.
    pub tables: Tables<'a>,
    /// The lanes of pairs routed around on further lanes ([`crate::lanes::route_around`]);
    /// `None`: every pair on lane 0. `routes.json` carries them.
    pub lanes: Option<&'a crate::lanes::Lanes>,
}

/// Writes one format of a routed fabric into `sink` (file names in the module table).
/// Several formats: [`export_many`] computes the ECMP weights once for all of them.
pub fn export<S: Sink>(r: &Routed<'_>, format: Format, sink: &mut S) -> Result<(), ExportError> {
    export_many(r, &[format], sink)
}

/// Writes `formats` of a routed fabric into `sink`, in that order, with the
/// weighted-ECMP weights ([`crate::wcmp::Weights`]) computed once if any of them
/// writes IP routes.
pub fn export_many<S: Sink>(
    r: &Routed<'_>,
    formats: &[Format],
    sink: &mut S,
) -> Result<(), ExportError> {
    let wt = if formats.iter().any(|f| f.needs_ip() && *f != Format::FrrBgp) {
        formats::weights(r)
    } else {
        None
    };
    for &format in formats {
        export_with(r, wt.as_ref(), format, sink)?;
    }
    Ok(())
}

fn export_with<S: Sink>(
    r: &Routed<'_>,
    wt: Option<&crate::wcmp::Weights>,
    format: Format,
    sink: &mut S,
) -> Result<(), ExportError> {
    match format {
        Format::Json => formats::export_json(r, wt, sink),
        Format::IpBatch => formats::export_ip(r, wt, sink),
        Format::IpNhg => formats::export_ip_nhg(r, wt, sink),
        Format::FrrBgp => formats::export_frr_bgp(r, sink),
        Format::FrrStatic => formats::export_frr_static(r, wt, sink),
        Format::Sonic => formats::export_sonic(r, wt, sink),
        Format::Opensm => export_opensm(r, sink),
        Format::Dot => sink::with_file(sink, "fabric.dot", |w| {
            let routes = r.tables.routes();
            topology::write_dot(w, r.fabric, &|l| routes.link_is_up(l))
        }),
        Format::Slurm | Format::SlurmYaml | Format::K8s => export_topology(r.fabric, format, sink),
    }
}

/// Writes `opensm/plane<p>/{lfts.dump,fabric.net,guid2lid}` for every plane.
pub fn export_opensm<S: Sink>(r: &Routed<'_>, sink: &mut S) -> Result<(), ExportError> {
    let (f, addr) = (r.fabric, r.addr);
    let routes = r.tables.routes();
    // An LFT is single-path whatever the engine: from ECMP tables, the single-path engine's
    // table, so both engines write the same balanced file.
    let computed;
    let lft = match r.tables {
        Tables::SinglePath(_, lft) => lft,
        Tables::Ecmp(routes) => {
            computed = crate::lft::Lft::compute(f, routes);
            &computed
        }
    };
    for p in 0..f.num_planes() as u16 {
        let plan = ib::LidPlan::new(f, addr, p)?;
        let dir = format!("opensm/plane{p}");
        sink::with_file(sink, &format!("{dir}/fabric.net"), |w| {
            let up = |l| routes.link_is_up(l);
            ib::write_net(w, f, addr, &plan, &up)
        })?;
        sink::with_file(sink, &format!("{dir}/guid2lid"), |w| {
            Ok(ib::write_guid2lid(w, f, addr, &plan)?)
        })?;
        sink::with_file(sink, &format!("{dir}/lfts.dump"), |w| {
            ib::write_lfts(w, f, addr, &plan, routes, lft, ib::LftComments::Kept)
        })?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An I/O cause is said once, whether the error is printed alone or as a chain.
    #[test]
    fn io_cause_is_printed_once() {
        let e = ExportError::from(std::io::Error::other("disk full"));
        assert_eq!(e.to_string(), "writing export: disk full");
        assert!(std::error::Error::source(&e).is_none());
        let chain = anyhow_like(&e);
        assert_eq!(chain.matches("disk full").count(), 1, "{chain}");
    }

    /// What a chain printer writes: the error, then each source after `: `.
    fn anyhow_like(e: &dyn std::error::Error) -> String {
        let mut s = e.to_string();
        let mut cur = e.source();
        while let Some(c) = cur {
            s += &format!(": {c}");
            cur = c.source();
        }
        s
    }
}
