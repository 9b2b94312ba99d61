//! `sim`: a deterministic, seeded packet-level discrete-event simulator over
//! `topo` fabrics, driving the `cc-algos` state machines unchanged.
//!
//! Layout: [`net`] (the flattened fabric and routing sources), [`queue`] (event
//! queues), [`config`] (settings), [`engine`] (the event loop: links, switches,
//! PFC, ECN, trimming, load balancing, hosts), [`results`] (what a run produces),
//! [`digest`] (a run's results as one 64-bit number, to prove an engine change kept them),
//! [`summary`] and [`plots`] (a run as text and SVG; the seeded RNG is `scenario::rng`),
//! [`pacing`] (virtual time tied to wall-clock time for live demos). Live telemetry in
//! the `fabric-api` schema: [`Sim::run_until`], [`Sim::snapshot`], [`Sim::fabric_info`],
//! events, failures injected while running (`docs/telemetry.md`).
//!
//! ```
//! use scenario::{Scenario, CompileCtx};
//! use sim::{Sim, SimConfig, net::NetBuilder};
//! use cc_algos::{Duration, Rate};
//! let net = NetBuilder::star(4, Rate::gbps(100), Duration::nanos(500));
//! let s = Scenario::from_toml_str(
//!     "[[workload]]\nkind = \"incast\"\nsenders = \"1..4\"\nreceiver = 0\nsize = \"100KB\"\n",
//!     "doc.toml").unwrap();
//! let plan = s.compile(&CompileCtx::new(4, Rate::gbps(100), 1)).unwrap();
//! let mut sim = Sim::from_net(net, SimConfig::default(), &plan).unwrap();
//! let r = sim.run();
//! assert_eq!(r.fct.finished, 3);
//! ```

pub mod config;
pub mod digest;
pub mod engine;
pub mod net;
pub mod outcome;
pub mod pacing;
pub mod plots;
mod prefetch;
pub mod queue;
pub mod results;
pub mod summary;

pub use config::{CcChoice, LbScheme, SimConfig};
pub use engine::{Progress, RunState, Sim, SimError};
pub use results::SimResults;
