//! `flow-model`: a flow-level model of a `topo` fabric (max-min fair rates by progressive
//! filling) and, on top of it, the Monte-Carlo resilience planner.
//!
//! Pure: no I/O, no clock. Rates are bits per second, times seconds, sizes bytes.
//!
//! # Layout
//! * [`paths`] — flows → paths over the routing tables ([`LoadBalance`]: ECMP, spray,
//!   adaptive), all in one arena of directed-link ids.
//! * [`fill`] — max-min fair rates by progressive filling with a heap of link
//!   saturation levels.
//! * [`refill`] — max-min rates again after flows finish, re-filling only the flows the
//!   departures can change (the fluid completion-time simulation's inner step).
//! * [`traffic`] — patterns (permutation, all-to-all, ring / tree / hierarchical
//!   all-reduce, incast) and how rates give completion time and bus bandwidth.
//! * [`eval`] — one evaluation of a set of jobs: rates, utilisation, busiest links.
//! * [`placement`] — which NICs are reachable in a failure state; the planner's placement.
//! * [`place`] — placement policies (Slurm tree, block, random, ours) on a fabric with
//!   failed and degraded links, scored by the flow model.
//! * [`trace`] — a synthetic GPU-cluster job trace replayed under each policy.
//! * [`rates`] — failure and repair rates per component class, with cited defaults and
//!   TOML overrides.
//! * [`planner`] — seeded Monte-Carlo timelines of failures and repairs, evaluated with
//!   the flow model; per-design summaries; shard merging.
//! * [`multijob`] — several jobs or tenants at once on one design: each on its own
//!   servers, a shared spare pool by priority, bandwidth evaluated together, per-job and
//!   cluster figures.
//!
//! # Example
//! ```
//! use flow_model::{eval::{Evaluator, Job}, traffic::Pattern, LoadBalance};
//! use topo::{generators, Rate, Routes, NodeId};
//!
//! let f = generators::fat_tree(4, Rate::gbps(100)).unwrap();
//! let mut routes = Routes::compute(&f);
//! let ranks: Vec<NodeId> = f.hosts().collect();
//! let job = Job { name: "ar".into(), pattern: Pattern::RingAllReduce { ranks }, bytes: 1e9 };
//! let mut ev = Evaluator::default();
//! let healthy = ev.evaluate(&f, &routes, &[job.clone()], LoadBalance::Spray, 5);
//! // a full-bisection fat-tree runs a ring at line rate: bus bandwidth 100 Gb/s = 12.5 GB/s
//! assert!((healthy.jobs[0].busbw_bytes_per_s - 12.5e9).abs() < 1e3);
//! // fail an edge–aggregation link: sprayed traffic still finds the other uplink
//! let leaf = f.attachment(NodeId(0), 0).unwrap().leaf;
//! routes.fail_links(&f, &[f.port_link(leaf, 2)]);
//! let failed = ev.evaluate(&f, &routes, &[job], LoadBalance::Spray, 5);
//! assert!(failed.jobs[0].busbw_bytes_per_s <= healthy.jobs[0].busbw_bytes_per_s);
//! ```

pub mod eval;
pub mod fill;
pub mod multijob;
pub mod paths;
pub mod place;
pub mod placement;
pub mod planner;
pub mod rates;
pub mod refill;
pub mod stats;
pub mod trace;
pub mod traffic;

pub use paths::LoadBalance;

/// Errors of the `flow-model` crate.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// A rates file could not be read: syntax or type error, with the field path.
    #[error("{origin}: {path}: {msg}")]
    Rates {
        /// File name or other origin given by the caller.
        origin: String,
        /// Field path, e.g. `leaf.afr_percent`.
        path: String,
        /// What was wrong and what was expected.
        msg: String,
    },
    /// A planner parameter is out of range.
    #[error("{what}: {msg}")]
    Param {
        /// Which parameter.
        what: String,
        /// What was wrong and what was expected.
        msg: String,
    },
    /// Shard results cannot be merged.
    #[error("cannot merge: {0}")]
    Merge(String),
}

/// Result with [`Error`].
pub type Result<T> = std::result::Result<T, Error>;
