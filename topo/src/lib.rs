//! `topo`: the fabric model and everything computed from it, purely (no I/O beyond
//! parsing text a caller hands in, no clock): specs, generators, presets, addressing,
//! routing engines, verification and failures.
//!
//! # Layout
//! * [`model`] — [`Fabric`]: compact ids ([`NodeId`] `u32`, hosts first), ports per node
//!   ([`Port`] `u16`, down ports first), CSR adjacency, [`Link`]s with a rate in bits/s
//!   and an optional delay in ns, planes, pods, tiers (0 host, 1 leaf, 2 spine/agg, 3 core).
//! * [`spec`] — declarative specs (TOML/YAML/JSON) → [`Fabric`], with precise errors.
//! * [`generators`] — fat-tree, leaf–spine, multi-plane, Dragonfly+ constructors.
//! * [`routing`] — up*/down* ECMP tables per destination ToR, deduplicated next-hop
//!   groups, incremental re-routing after link/switch failures.
//! * [`lanes`] — deadlock-free detours where up*/down* has none, on further virtual
//!   lanes / traffic classes (DFSSSP-like), each lane's dependency graph acyclic.
//! * [`lft`] — single-path balanced (d-mod-k / ftree-style) tables, one byte per entry.
//! * [`balance`] — per-tier balance of single-path tables (destinations and all-to-all
//!   pairs per up link).
//! * [`addressing`] — IPv4/IPv6 ToR prefixes, loopbacks, /31 and /127 link subnets,
//!   RFC 7938 ASNs, LIDs and GUIDs.
//! * [`presets`] — named published fabrics as cited spec files (`topo/presets/*.toml`).
//! * [`analysis`] — counts, bisection, oversubscription, diameter, path diversity, cost;
//!   side-by-side tables.
//! * [`verify`] — reachability, loops, up/down turns, black holes, acyclic channel
//!   dependency graph, ECMP widths.
//! * [`failures`] — failure sets by name or seeded random draw.
//! * [`export`] — table and topology exporters (see `docs/export.md`).
//! * [`tenants`] — tenant files, their partitions and VRFs, the isolation proof.
//! * [`units`] — [`Rate`] parsing (`"400G"`).
//!
//! Rates are bits per second (`u64`), delays nanoseconds. Figures and commands:
//! `docs/topo.md`.
//!
//! # Example
//! ```
//! use topo::{generators, Rate, Routes, NodeId};
//! use topo::lft::Lft;
//! use topo::addressing::AddressPlan;
//!
//! let f = generators::fat_tree(4, Rate::gbps(400)).unwrap();
//! assert_eq!((f.num_hosts(), f.num_switches()), (16, 20));
//!
//! // ECMP: every switch's equal-cost next hops toward a host.
//! let mut routes = Routes::compute(&f);
//! let leaf = f.attachment(NodeId(0), 0).unwrap().leaf;
//! let far = NodeId(15);
//! assert_eq!(routes.next_hops(leaf, far).len(), 2); // both uplinks
//! // A host picks its NIC port/plane among those that reach the destination.
//! assert_eq!(routes.pick_host_port(NodeId(0), far, 7), Some((0, 0)));
//!
//! // Single-path tables (one port per destination, balanced like OpenSM ftree).
//! let mut lft = Lft::compute(&f, &routes);
//! assert!(lft.port(&f, leaf, far).is_some());
//!
//! // Fail a leaf uplink: incremental re-route, then patch the single-path tables.
//! let up = f.port_link(leaf, 2);
//! let report = routes.fail_links(&f, &[up]);
//! assert_eq!(routes.next_hops(leaf, far).len(), 1);
//! lft.update(&f, &routes, &report.changed);
//! assert_eq!(lft.port(&f, leaf, far), Some(3));
//!
//! // Addresses.
//! let plan = AddressPlan::new(&f).unwrap();
//! assert_eq!(plan.host_v4(&f, NodeId(0), 0).unwrap().to_string(), "10.0.0.2");
//!
//! // Verification: the failed link leaves every pair reachable, loop-free, deadlock-free.
//! let report = topo::verify::verify(&f, &routes);
//! assert!(report.ok());
//!
//! // Specs and presets.
//! let spec = topo::presets::spec("deepseek-mpft").unwrap();
//! assert_eq!(spec.num_planes(), 8);
//! let e = topo::Spec::parse("name = 1", topo::Format::Toml, "f.toml").unwrap_err();
//! assert_eq!(e.to_string(), "f.toml: name: invalid type: integer `1`, expected a string");
//! ```

pub mod addressing;
pub mod analysis;
pub mod balance;
pub mod export;
pub mod failures;
pub mod generators;
pub mod lanes;
pub mod lft;
pub mod model;
pub mod presets;
pub mod routing;
pub mod spec;
pub mod tenants;
pub mod units;
pub mod verify;
pub mod wcmp;

pub use model::*;
pub use routing::Routes;
pub use spec::{Format, Spec};
pub use units::Rate;

/// Errors of the `topo` crate.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// A spec could not be read (syntax or type error), with the field path.
    #[error("{origin}: {path}: {msg}")]
    Parse {
        /// File name or other origin given by the caller.
        origin: String,
        /// Field path, e.g. `planes[0].leaf.radix`.
        path: String,
        /// What was wrong and what was expected.
        msg: String,
    },
    /// A spec was read but is inconsistent.
    #[error("{origin}: {path}: {msg}")]
    Spec {
        /// File name or other origin given by the caller.
        origin: String,
        /// Field path.
        path: String,
        /// What was wrong and what was expected.
        msg: String,
    },
    /// The address plan does not fit in its blocks.
    #[error("address plan: {0}")]
    Addressing(String),
    /// No preset with this name.
    #[error("unknown preset `{name}` (known: {known})")]
    UnknownPreset {
        /// Name asked for.
        name: String,
        /// Names available.
        known: String,
    },
    /// A failure specification is invalid.
    #[error("invalid failure `{0}`: {1}")]
    BadFailure(String, String),
    /// The pairs without an up*/down* path need more lanes than allowed.
    #[error(
        "deadlock-free routing needs more than {max} lanes: {unplaced} of {pairs} leaf pairs without an up*/down* path fit on no lane (lane 0 is up*/down* only, detours take lanes 1 and up; allow more lanes, at most {}, or repair links)",
        crate::lanes::MAX_LANES
    )]
    LanesExhausted {
        /// Lanes allowed.
        max: u8,
        /// Leaf pairs that needed a further lane.
        pairs: usize,
        /// Of those, pairs that fit on none.
        unplaced: usize,
    },
    /// More random failures asked for than the fabric has.
    #[error("asked to fail {asked} {what}, but the fabric has only {available}")]
    TooManyFailures {
        /// Count asked for.
        asked: usize,
        /// Count the fabric has.
        available: usize,
        /// What is failed.
        what: &'static str,
    },
}

/// Result with [`Error`].
pub type Result<T> = std::result::Result<T, Error>;
