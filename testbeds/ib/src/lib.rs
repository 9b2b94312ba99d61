//! An InfiniBand subnet on this machine: `ibsim` (Debian `ibsim-utils`) simulates the
//! switches and channel adapters of a fabric from the project's `.net` export, a real
//! `opensm` (Debian `opensm`) is its subnet manager, and the `infiniband-diags` tools
//! (`ibnetdiscover`, `ibroute`, `perfquery`) read it back. Every program talks to the
//! simulator through `LD_PRELOAD=libumad2sim.so` over a socket named per run
//! (`IBSIM_SOCKNAME`), so no root and no RDMA hardware is needed, and several subnets
//! (other tests, other users) run side by side.
//!
//! # Layout
//! * [`design`] — plane 0 of a `topo` fabric as an IB subnet: the files ibsim and OpenSM
//!   read (`fabric.net`, `guid2lid`, `lfts.dump`), names, LIDs and directed-route paths.
//! * [`dump`] — fabric's LFT file for OpenSM's `file` engine, compared switch by switch.
//! * [`tables`] — LFT blocks (`ibroute`, OpenSM's dumps, fabric's), compared; LIDs a
//!   switch can reach but holds no entry for.
//! * [`parse`] — the rest of what the tools print: cables (`ibnetdiscover`), port
//!   counters (`perfquery`), OpenSM log lines.
//! * [`ibsim`] — the simulator process and its console (`Unlink`, `ReLink`, `Error`,
//!   `PerformanceSet`); the diagnostic tools run against it.
//! * [`opensm`] — an OpenSM process (`-s` sweeps, one routing engine, the `file` engine
//!   re-reading fabric's tables on `SIGHUP`) and its log.
//! * [`subnet`] — the three together in a private directory: fail and restore links,
//!   discover the cabling, read every switch's table back.
//! * [`brain`] — fabric as OpenSM's brain: detect a cable change, re-route
//!   incrementally, have OpenSM (`file` engine) load the new tables, verify them.
//! * [`tools`] — how the tools reach a subnet: ibsim's socket or a real HCA's port.
//! * [`process`] — children killed on drop and on SIGINT/SIGTERM/SIGHUP.
//!
//! # Example
//! ```no_run
//! use ib_testbed::{opensm::Engine, subnet::Subnet};
//! let f = topo::generators::fat_tree(4, topo::Rate::gbps(400)).unwrap();
//! let mut net = Subnet::start(std::sync::Arc::new(f), "example").unwrap();
//! net.start_sm(Engine::Minhop, &Default::default()).unwrap();
//! // 16 host cables and 32 switch cables, each seen from both ends.
//! assert_eq!(net.discover().unwrap().len(), 96);
//! ```
//! Everything started is stopped, and the directory removed, when the [`subnet::Subnet`]
//! is dropped; [`process::kill_children_on_signal`] covers SIGINT/SIGTERM/SIGHUP in
//! programs that have no signal handling of their own.

pub mod brain;
pub mod design;
pub mod dump;
pub mod ibsim;
pub mod opensm;
pub mod parse;
pub mod process;
pub mod subnet;
pub mod tables;
pub mod tools;

use std::path::PathBuf;

/// The preload library that connects the IB tools to ibsim (Debian `libumad2sim0`).
pub const UMAD2SIM: &str = "/usr/lib/x86_64-linux-gnu/umad2sim/libumad2sim.so";

/// What can go wrong running a subnet.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// A program or file the subnet needs is not installed.
    #[error("{0} not installed: run scripts/install-deps.sh (as root)")]
    Missing(String),
    /// Reading or writing a file, or starting a program.
    #[error("{what}: {source}")]
    Io {
        /// What was being done.
        what: String,
        /// The OS error.
        source: std::io::Error,
    },
    /// A tool exited with an error.
    #[error("{cmd} failed: {stderr}")]
    Tool {
        /// The command line.
        cmd: String,
        /// Its standard error.
        stderr: String,
    },
    /// A program did not reach the expected state in time.
    #[error("{what}: nothing after {secs:.1} s; see {log}")]
    Timeout {
        /// What was awaited.
        what: String,
        /// How long.
        secs: f64,
        /// The log to read.
        log: PathBuf,
    },
    /// A tool's output could not be parsed.
    #[error("{what}: unexpected output: {line:?}")]
    Parse {
        /// Which output.
        what: String,
        /// The line.
        line: String,
    },
    /// The fabric cannot be simulated (e.g. a LID plan error), or a request names
    /// something the fabric does not have.
    #[error("{0}")]
    Fabric(String),
}

/// Result of this crate.
pub type Result<T> = std::result::Result<T, Error>;

pub(crate) fn io(what: impl Into<String>) -> impl FnOnce(std::io::Error) -> Error {
    let what = what.into();
    move |source| Error::Io { what, source }
}

/// The programs a subnet runs, and the preload library.
pub const TOOLS: [&str; 5] = ["ibsim", "opensm", "ibnetdiscover", "ibroute", "perfquery"];
