//! `fabric-api`: the telemetry and API schema shared by every source (simulator, veth
//! testbeds, a Linux host), the daemon (`fabric serve`) and `fabric-tui`. Pure: serde
//! types and functions, no I/O beyond the `io::Read`/`io::Write` a caller hands in, no
//! clock.
//!
//! # Layout
//! * [`fabric`] — [`FabricInfo`]: nodes and ports, sent once per stream or recording
//!   (one JSON array per field); [`FabricInfo::from_topo`] puts link `l`'s ends at
//!   ports `2l` and `2l + 1`.
//! * [`snapshot`] — [`Snapshot`]: cumulative per-port counters ([`PortCounters`]) kept
//!   apart from gauges ([`PortGauges`]), flows, totals; one [`Column`] per counter in port
//!   order, dense or sparse ([`column`]).
//! * [`event`] — [`Event`]: link/switch down and up, reroute, PFC storm, deadlock, flow
//!   finished, miswiring; open to new kinds.
//! * [`frame`] — [`Frame`] = fabric | snapshot | event, one JSON line each: the unit of
//!   the daemon's stream (`GET /api/v1/telemetry/stream?from=SEQ`) and of recordings;
//!   [`LineDecoder`] / [`read_frame`] with a line cap.
//! * [`prom`] — Prometheus's query API as both its readers use it: the server's URL,
//!   the query's encoding, the instant-vector answer.
//! * [`packed`] — the packed column payload (varints in base64) for long busy columns.
//! * [`rates`] — [`Interval`]: per-port Gb/s, utilisation, drops/s, PAUSE frames/s,
//!   paused share and ECN-mark share between two snapshots, with counter resets handled;
//!   [`Interval::deltas`] computes every port's at once, one pass per column.
//! * [`recording`] — [`recording::Writer`] / [`recording::Reader`]: a JSON-lines file
//!   with an index at its end, seekable by time.
//!
//! # Compatibility rule
//! [`SCHEMA_VERSION`] is carried by [`FabricInfo`] and the recording header. Within one
//! version, writers may only *add*: new optional fields, new counters, new
//! [`EventKind`]s, [`SourceKind`]s, [`Detector`]s and new frame types. Readers ignore
//! fields they do not know, read unknown event kinds as [`EventKind::Unknown`] and skip
//! frames of unknown type ([`Error::UnknownFrame`]). Renaming, removing or changing the
//! meaning of a field bumps the version; a reader refuses a version newer than its own
//! ([`Error::Version`]). See `docs/telemetry.md`.
//!
//! # Example
//! ```
//! use fabric_api::{Column, FabricInfo, Frame, Interval, LineDecoder, Snapshot, Source,
//!                  SourceKind, Timestamp, DEFAULT_MAX_LINE};
//! let f = topo::generators::fat_tree(4, topo::Rate::gbps(400)).unwrap();
//! let info = FabricInfo::from_topo(&f, 8);
//! let n = info.ports.len();
//! let src = Source { kind: SourceKind::Sim, name: "demo".into() };
//! let mut a = Snapshot::new(0, Timestamp::virtual_ns(0), src.clone());
//! a.counters.tx_bytes = Some(Column::zeros(n));
//! let mut b = Snapshot::new(1, Timestamp::virtual_ns(1_000_000), src);
//! let mut tx = vec![0; n];
//! tx[0] = 50_000_000; // 50 MB in 1 ms on a 400G port
//! b.counters.tx_bytes = Some(Column::from(tx));
//!
//! // A stream: one frame per line, the fabric map first.
//! let mut wire = Frame::Fabric(info.clone()).to_json_line();
//! wire += &Frame::Snapshot(a).to_json_line();
//! wire += &Frame::Snapshot(b).to_json_line();
//! let mut dec = LineDecoder::new(DEFAULT_MAX_LINE);
//! dec.push(wire.as_bytes()).unwrap();
//! let mut frames = Vec::new();
//! while let Some(fr) = dec.next_frame().unwrap() { frames.push(fr); }
//! let (Frame::Snapshot(a), Frame::Snapshot(b)) = (&frames[1], &frames[2]) else { panic!() };
//! let rate = Interval::new(&info, a, b).unwrap().port(0);
//! assert_eq!(rate.tx_gbps, Some(400.0));
//! assert_eq!(rate.utilisation, Some(1.0));
//! ```

pub mod column;
pub mod event;
pub mod fabric;
pub mod frame;
pub mod ids;
pub mod packed;
pub mod prom;
pub mod rates;
pub mod recording;
pub mod snapshot;

pub use column::Column;
pub use event::{Detector, Event, EventKind, NamedEvent};
pub use fabric::{FabricInfo, NodeInfo, PortInfo};
pub use frame::{DEFAULT_MAX_LINE, Frame, LineDecoder, read_frame};
pub use rates::{Deltas, Interval, PortDelta, PortRate, counter_delta};
pub use snapshot::{
    Clock, FlowSample, PortCounters, PortGauges, Snapshot, Source, SourceKind, Timestamp, Totals,
};

/// Version of the schema this crate reads and writes.
pub const SCHEMA_VERSION: u32 = 1;

/// What can go wrong reading, writing or comparing telemetry.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// Reading or writing the underlying stream failed.
    #[error("I/O: {0}")]
    Io(#[from] std::io::Error),
    /// A line is not a valid frame.
    #[error("invalid frame: {0}")]
    Json(String),
    /// A frame of a type this reader does not know (skip it).
    #[error("unknown frame type `{0}` (written by a newer version; skipped by readers)")]
    UnknownFrame(String),
    /// The input ended in the middle of a line.
    #[error("truncated: the input ends inside a line ({bytes} bytes after the last newline)")]
    Truncated {
        /// Bytes of the incomplete line.
        bytes: usize,
    },
    /// A line is longer than the cap.
    #[error("a line is longer than the {max}-byte cap")]
    TooLong {
        /// The cap, bytes.
        max: usize,
    },
    /// Written by a newer schema version.
    #[error("schema version {found} is newer than this reader's ({supported}); upgrade the reader")]
    Version {
        /// Version found.
        found: u32,
        /// Version this crate supports.
        supported: u32,
    },
    /// A value does not fit the fabric map or the schema's rules.
    #[error("{what}: {msg}")]
    Invalid {
        /// Which field.
        what: String,
        /// What is wrong.
        msg: String,
    },
    /// Two snapshots cannot be compared.
    #[error("rates: {0}")]
    Rates(String),
    /// Not a recording at all.
    #[error("not a fabric telemetry recording: {0}")]
    Foreign(String),
    /// A recording is damaged at an offset.
    #[error("corrupt recording at byte {offset}: {msg}")]
    Corrupt {
        /// Byte offset of the bad line.
        offset: u64,
        /// What is wrong.
        msg: String,
    },
    /// A frame is older than the previous one.
    #[error("frames must be written in time order: {ns} ns after {prev_ns} ns")]
    OutOfOrder {
        /// Time of the previous frame, ns.
        prev_ns: u64,
        /// Time of the rejected frame, ns.
        ns: u64,
    },
}

/// Result with this crate's [`Error`].
pub type Result<T> = std::result::Result<T, Error>;
