//! `scenario`: one description of a workload that both the packet simulator
//! (the simulator (crate `sim`)) and the veth testbeds run, so their results can be compared.
//!
//! A scenario is a TOML file: a list of `[[workload]]` tables (incast, permutation,
//! all-to-all, ring/tree all-reduce, fairness, victim flow, Poisson arrivals,
//! explicit flows, htsim connection matrices), optional `[[failure]]` tables
//! (a link or switch going down at a time, re-routed after a detection delay) and
//! optional `[network]` overrides. [`Scenario::compile`] turns it into a
//! [`Workplan`]: a flat list of [`FlowSpec`]s over host indices `0..n`, with start
//! times or dependencies (collective phases), that a driver executes.
//!
//! Layout: [`units`] (sizes, times, rates, host sets), [`cm`] (htsim `.cm` files),
//! this file (the file format and the compiler).
//!
//! ```
//! use scenario::{Scenario, CompileCtx};
//! use cc_algos::Rate;
//! let s = Scenario::from_toml_str(r#"
//!     name = "incast"
//!     [[workload]]
//!     kind = "incast"
//!     senders = "1..16"
//!     receiver = 0
//!     size = "2MB"
//! "#, "example.toml").unwrap();
//! let plan = s.compile(&CompileCtx::new(16, Rate::gbps(100), 1)).unwrap();
//! assert_eq!(plan.flows.len(), 15);
//! assert!(plan.flows.iter().all(|f| f.dst == 0));
//! ```

pub mod cm;
mod compile;
pub mod rng;
pub mod tenancy;

pub use compile::{MAX_FLOWS, TREE_CHUNK, double_binary_tree};
pub use tenancy::ScenarioTenants;
pub mod units;

use crate::rng::Rng;
use cc_algos::{Bytes, Duration, Instant, Rate};
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};
use units::{HostSet, de_opt_rate, de_opt_size, de_opt_time, de_size, de_time};

/// Errors from reading or compiling a scenario.
#[derive(Debug, thiserror::Error)]
pub enum ScenarioError {
    /// The file could not be read.
    #[error("{file}: cannot read: {source}")]
    Io {
        /// The file.
        file: String,
        /// The OS error.
        source: std::io::Error,
    },
    /// The file is not valid TOML or does not match the scenario schema.
    #[error("{file}: {message}")]
    Parse {
        /// The file.
        file: String,
        /// Parser message, with line and column.
        message: String,
    },
    /// A field has a value that is well-formed but not usable.
    #[error("{file}: {field}: {message}")]
    Invalid {
        /// The file.
        file: String,
        /// Path of the field, e.g. `workload[2].receiver`.
        field: String,
        /// What was wrong and what was expected.
        message: String,
    },
    /// A tenant file could not be read.
    #[error("{file}: {message}")]
    Tenants {
        /// The tenant file.
        file: String,
        /// What was wrong.
        message: String,
    },
    /// A tenant file does not parse or does not fit the fabric (the message names the
    /// file, the entry's field, what was expected and the limit).
    #[error("{0}")]
    TenantFile(String),
    /// A line of an htsim connection matrix is malformed.
    #[error("{file}:{line}: {message}")]
    ConnectionMatrix {
        /// The file.
        file: String,
        /// 1-based line number.
        line: usize,
        /// What was wrong and what was expected.
        message: String,
    },
}

/// Result alias for this module.
pub type Result<T> = std::result::Result<T, ScenarioError>;

/// A workload file, as written by a user.
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Scenario {
    /// Short name, shown in reports.
    #[serde(default)]
    pub name: Option<String>,
    /// Free text.
    #[serde(default)]
    pub description: Option<String>,
    /// Simulated time at which the run stops even if flows are unfinished.
    #[serde(default, deserialize_with = "de_opt_time")]
    pub stop: Option<Duration>,
    /// Seed for the random parts of the workload (permutations, arrivals).
    /// Defaults to the run's seed.
    #[serde(default)]
    pub seed: Option<u64>,
    /// Network settings this scenario needs (override the driver's defaults).
    #[serde(default)]
    pub network: NetworkOverrides,
    /// A tenant file (relative to the scenario file): workloads with `tenant = "a"` take
    /// their class from it and the ports its ETS weights ([`tenancy`]). A driver's
    /// `--tenants FILE` replaces it.
    #[serde(default)]
    pub tenants: Option<PathBuf>,
    /// The workloads, run side by side.
    #[serde(default, rename = "workload")]
    pub workloads: Vec<Workload>,
    /// Failures during the run.
    #[serde(default, rename = "failure")]
    pub failures: Vec<Failure>,
    /// Links running below their rate (from the start or from a time on).
    #[serde(default, rename = "degrade")]
    pub degrades: Vec<Degrade>,
    /// Where the file was read from (for messages and relative paths).
    #[serde(skip)]
    pub origin: String,
    /// Directory relative paths (connection matrices) are resolved against.
    #[serde(skip)]
    pub base_dir: Option<PathBuf>,
}

/// Network settings a scenario may pin. Every field is optional; unset fields
/// keep the driver's defaults (and command-line flags win over both).
#[derive(Clone, Debug, Default, Deserialize, Serialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct NetworkOverrides {
    /// Payload bytes per packet (default 4096).
    #[serde(default, deserialize_with = "de_opt_size")]
    pub mtu: Option<Bytes>,
    /// Shared buffer per switch.
    #[serde(default, deserialize_with = "de_opt_size")]
    pub buffer: Option<Bytes>,
    /// Enable PFC on the lossless priorities.
    #[serde(default)]
    pub pfc: Option<bool>,
    /// PFC XOFF threshold per ingress port and priority.
    #[serde(default, deserialize_with = "de_opt_size")]
    pub pfc_xoff: Option<Bytes>,
    /// PFC XON threshold per ingress port and priority.
    #[serde(default, deserialize_with = "de_opt_size")]
    pub pfc_xon: Option<Bytes>,
    /// ECN marking: queue depth where marking starts.
    #[serde(default, deserialize_with = "de_opt_size")]
    pub ecn_kmin: Option<Bytes>,
    /// ECN marking: queue depth where the probability reaches `ecn_pmax`.
    #[serde(default, deserialize_with = "de_opt_size")]
    pub ecn_kmax: Option<Bytes>,
    /// ECN marking probability at `ecn_kmax`.
    #[serde(default)]
    pub ecn_pmax: Option<f64>,
    /// Trim packets (UEC) instead of dropping them when a queue exceeds this depth.
    #[serde(default, deserialize_with = "de_opt_size")]
    pub trim_threshold: Option<Bytes>,
    /// Propagation delay of every link (default 500 ns).
    #[serde(default, deserialize_with = "de_opt_time")]
    pub link_delay: Option<Duration>,
    /// Retransmission timeout: a time (e.g. "1ms"), or "htsim" to derive it from the
    /// network as htsim does (the simulator's default).
    #[serde(default, deserialize_with = "de_opt_rto")]
    pub rto: Option<RtoSetting>,
    /// Entropy values a sprayed flow uses (htsim `-paths`; a power of two).
    #[serde(default)]
    pub evs: Option<u16>,
    /// Sender initial window in bytes (htsim `-cwnd` is in packets: use `init_window_pkts`).
    #[serde(default, deserialize_with = "de_opt_size")]
    pub init_window: Option<Bytes>,
    /// Sender initial window in packets (htsim `-cwnd`).
    #[serde(default)]
    pub init_window_pkts: Option<u32>,
    /// One ACK per this many bytes received (htsim's UEC sink: 16 KB); 0 ACKs every packet.
    #[serde(default, deserialize_with = "de_opt_size")]
    pub ack_every: Option<Bytes>,
    /// The base RTT senders assume: their own path's, or the network's largest (htsim).
    #[serde(default)]
    pub base_rtt: Option<BaseRttName>,
    /// Switch buffer model: a shared buffer per switch, or htsim's per-port queues.
    #[serde(default)]
    pub buffer_model: Option<BufferModelName>,
    /// Per-port model: data queue per egress port, in bytes.
    #[serde(default, deserialize_with = "de_opt_size")]
    pub queue: Option<Bytes>,
    /// Per-port model: data queue per egress port, in BDPs of the longest path.
    #[serde(default)]
    pub queue_bdp: Option<f64>,
    /// Per-port model: header/control queue per egress port (default 2 × `queue`).
    #[serde(default, deserialize_with = "de_opt_size")]
    pub header_queue: Option<Bytes>,
    /// Per-port model: which packet a full queue trims.
    #[serde(default)]
    pub trim_victim: Option<TrimVictimName>,
    /// ETS between the data priorities at every egress port: a weight per priority 0-7
    /// (1-100, relative; 0 keeps the priority strict, served first). Unset: strict
    /// priority for all, 7 highest.
    #[serde(default)]
    pub ets: Option<[u8; 8]>,
    /// Per-link overrides of the fabric's rate and propagation delay (`[[network.link]]`),
    /// applied to the fabric the driver built (the fabric spec stays as it is).
    #[serde(default, rename = "link")]
    pub links: Vec<LinkOverride>,
}

/// One `[[network.link]]` entry: a link of the fabric (by the node ids of its two ends)
/// with another rate and/or propagation delay, both directions unless `one_way`.
#[derive(Clone, Debug, Default, Deserialize, Serialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct LinkOverride {
    /// The link, by the fabric node ids of its two ends.
    pub link: [u32; 2],
    /// Only the direction from `link[0]` to `link[1]` (default: both).
    #[serde(default)]
    pub one_way: bool,
    /// Its rate (e.g. "200Gbps").
    #[serde(default, deserialize_with = "de_opt_rate")]
    pub rate: Option<Rate>,
    /// Its one-way propagation delay (e.g. "2us").
    #[serde(default, deserialize_with = "de_opt_time")]
    pub delay: Option<Duration>,
}

/// `network.rto` values.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub enum RtoSetting {
    /// Derived from the network as htsim's UEC runs do (15 µs + 6 queue drain times).
    Htsim,
    /// A fixed timeout.
    Fixed(Duration),
}

impl RtoSetting {
    /// Parse `"htsim"` or a time such as `"1ms"`.
    pub fn parse(s: &str) -> std::result::Result<RtoSetting, String> {
        match s.trim() {
            "htsim" | "auto" => Ok(RtoSetting::Htsim),
            t => match units::parse_time(t) {
                Ok(d) if d > Duration::ZERO => Ok(RtoSetting::Fixed(d)),
                Ok(_) => Err("a retransmit timeout must be positive".into()),
                Err(e) => Err(format!("{e}; or \"htsim\" to derive it from the network")),
            },
        }
    }
}

fn de_opt_rto<'de, D: serde::Deserializer<'de>>(
    d: D,
) -> std::result::Result<Option<RtoSetting>, D::Error> {
    let s = String::deserialize(d)?;
    RtoSetting::parse(&s)
        .map(Some)
        .map_err(serde::de::Error::custom)
}

/// `network.base_rtt` values.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum BaseRttName {
    /// Each sender's own path.
    Path,
    /// The network's largest unloaded RTT (htsim).
    NetworkMax,
}

/// `network.buffer_model` values.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum BufferModelName {
    /// Shared buffer per switch.
    Shared,
    /// Per-port queues (htsim).
    PerPort,
}

/// `network.trim_victim` values.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum TrimVictimName {
    /// The arriving packet.
    Arriving,
    /// The head of the queue.
    Head,
    /// htsim: arriving or last queued, ½ each.
    Htsim,
}

fn one() -> u32 {
    1
}

/// One workload. `kind` selects the variant; all times are relative to the start
/// of the run; `priority` (0–7, default 0) is the traffic class.
#[derive(Clone, Debug, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case", deny_unknown_fields)]
pub enum Workload {
    /// N senders to one receiver, all starting at once.
    Incast {
        /// Name in reports.
        #[serde(default)]
        name: Option<String>,
        /// The senders.
        senders: HostSet,
        /// The receiver.
        receiver: u32,
        /// Bytes per sender.
        #[serde(deserialize_with = "de_size")]
        size: Bytes,
        /// Start time.
        #[serde(default, deserialize_with = "de_time")]
        start: Duration,
        /// Traffic class (default 0; a tenant's workload takes its tenant's).
        #[serde(default)]
        priority: Option<u8>,
        /// The tenant it belongs to: its traffic class and hosts come from the tenant file.
        #[serde(default)]
        tenant: Option<String>,
    },
    /// Every host sends to one other host, each host receiving exactly once
    /// (a random derangement drawn from the scenario seed).
    Permutation {
        /// Name in reports.
        #[serde(default)]
        name: Option<String>,
        /// Participating hosts (default all).
        #[serde(default)]
        hosts: HostSet,
        /// Bytes per flow.
        #[serde(deserialize_with = "de_size")]
        size: Bytes,
        /// Start time.
        #[serde(default, deserialize_with = "de_time")]
        start: Duration,
        /// Traffic class (default 0; a tenant's workload takes its tenant's).
        #[serde(default)]
        priority: Option<u8>,
        /// The tenant it belongs to: its traffic class and hosts come from the tenant file.
        #[serde(default)]
        tenant: Option<String>,
    },
    /// Every host sends `size` to every other host (MoE dispatch).
    AllToAll {
        /// Name in reports.
        #[serde(default)]
        name: Option<String>,
        /// Participating hosts (default all).
        #[serde(default)]
        hosts: HostSet,
        /// Bytes per (source, destination) pair.
        #[serde(deserialize_with = "de_size")]
        size: Bytes,
        /// Start time.
        #[serde(default, deserialize_with = "de_time")]
        start: Duration,
        /// Traffic class (default 0; a tenant's workload takes its tenant's).
        #[serde(default)]
        priority: Option<u8>,
        /// The tenant it belongs to: its traffic class and hosts come from the tenant file.
        #[serde(default)]
        tenant: Option<String>,
    },
    /// Ring all-reduce of a `size`-byte buffer on each rank: 2(n−1) steps, each
    /// rank sending `size/n` to its ring successor, a step starting when the
    /// rank has received the previous step's chunk (reduce-scatter, then all-gather).
    RingAllreduce {
        /// Name in reports.
        #[serde(default)]
        name: Option<String>,
        /// Ranks, in order (default all hosts).
        #[serde(default)]
        hosts: HostSet,
        /// Buffer size per rank.
        #[serde(deserialize_with = "de_size")]
        size: Bytes,
        /// Ring successor of rank i is rank (i + stride) mod n (default 1); a
        /// stride of the hosts-per-leaf makes every ring hop cross the fabric.
        #[serde(default = "one")]
        stride: u32,
        /// Start time.
        #[serde(default, deserialize_with = "de_time")]
        start: Duration,
        /// Traffic class (default 0; a tenant's workload takes its tenant's).
        #[serde(default)]
        priority: Option<u8>,
        /// The tenant it belongs to: its traffic class and hosts come from the tenant file.
        #[serde(default)]
        tenant: Option<String>,
    },
    /// Tree all-reduce on NCCL's double binary tree ([`double_binary_tree`]):
    /// two trees, each all-reducing half the buffer, pipelined in chunks.
    TreeAllreduce {
        /// Name in reports.
        #[serde(default)]
        name: Option<String>,
        /// Ranks (default all hosts).
        #[serde(default)]
        hosts: HostSet,
        /// Buffer size per rank.
        #[serde(deserialize_with = "de_size")]
        size: Bytes,
        /// Start time.
        #[serde(default, deserialize_with = "de_time")]
        start: Duration,
        /// Traffic class (default 0; a tenant's workload takes its tenant's).
        #[serde(default)]
        priority: Option<u8>,
        /// The tenant it belongs to: its traffic class and hosts come from the tenant file.
        #[serde(default)]
        tenant: Option<String>,
    },
    /// Long-lived flows to one receiver joining one by one every `interval`, then
    /// leaving in reverse order, so the fair share steps down and back up.
    Fairness {
        /// Name in reports.
        #[serde(default)]
        name: Option<String>,
        /// The senders, in joining order.
        senders: HostSet,
        /// The receiver.
        receiver: u32,
        /// Time between joins (and between leaves).
        #[serde(deserialize_with = "de_time")]
        interval: Duration,
        /// Start time of the first flow.
        #[serde(default, deserialize_with = "de_time")]
        start: Duration,
        /// Traffic class (default 0; a tenant's workload takes its tenant's).
        #[serde(default)]
        priority: Option<u8>,
        /// The tenant it belongs to: its traffic class and hosts come from the tenant file.
        #[serde(default)]
        tenant: Option<String>,
    },
    /// An incast beside a victim flow that shares part of its path.
    Victim {
        /// Name in reports.
        #[serde(default)]
        name: Option<String>,
        /// Incast senders.
        senders: HostSet,
        /// Incast receiver.
        receiver: u32,
        /// Bytes per incast sender.
        #[serde(deserialize_with = "de_size")]
        size: Bytes,
        /// Victim source.
        victim_src: u32,
        /// Victim destination.
        victim_dst: u32,
        /// Victim flow size.
        #[serde(deserialize_with = "de_size")]
        victim_size: Bytes,
        /// Incast start.
        #[serde(default, deserialize_with = "de_time")]
        start: Duration,
        /// Victim start (default: with the incast).
        #[serde(default, deserialize_with = "de_opt_time")]
        victim_start: Option<Duration>,
        /// Traffic class (default 0; a tenant's workload takes its tenant's).
        #[serde(default)]
        priority: Option<u8>,
        /// The tenant it belongs to: its traffic class and hosts come from the tenant file.
        #[serde(default)]
        tenant: Option<String>,
    },
    /// Poisson flow arrivals per source at `load` × host link rate, random
    /// destinations, sizes fixed (`size`) or drawn from a CDF (`cdf`).
    Poisson {
        /// Name in reports.
        #[serde(default)]
        name: Option<String>,
        /// Participating hosts (default all).
        #[serde(default)]
        hosts: HostSet,
        /// Offered load per host, as a fraction of its link rate (0 < load ≤ 1).
        load: f64,
        /// A fixed flow size.
        #[serde(default, deserialize_with = "de_opt_size")]
        size: Option<Bytes>,
        /// A flow-size CDF: `[[bytes, cumulative probability], ...]`, increasing,
        /// ending at probability 1; sizes are interpolated linearly.
        #[serde(default)]
        cdf: Option<Vec<(f64, f64)>>,
        /// First arrival no earlier than this.
        #[serde(default, deserialize_with = "de_time")]
        start: Duration,
        /// Arrivals stop after this long.
        #[serde(deserialize_with = "de_time")]
        duration: Duration,
        /// Traffic class (default 0; a tenant's workload takes its tenant's).
        #[serde(default)]
        priority: Option<u8>,
        /// The tenant it belongs to: its traffic class and hosts come from the tenant file.
        #[serde(default)]
        tenant: Option<String>,
    },
    /// Explicit flows.
    Flows {
        /// Name in reports.
        #[serde(default)]
        name: Option<String>,
        /// The flows.
        flow: Vec<FlowLine>,
        /// Traffic class (per-flow `priority` wins; default 0).
        #[serde(default)]
        priority: Option<u8>,
        /// The tenant it belongs to: its traffic class and hosts come from the tenant file.
        #[serde(default)]
        tenant: Option<String>,
    },
    /// An htsim connection matrix (`.cm`), path relative to the scenario file.
    ConnectionMatrix {
        /// Name in reports.
        #[serde(default)]
        name: Option<String>,
        /// The `.cm` file.
        file: PathBuf,
        /// Traffic class (default 0; a tenant's workload takes its tenant's).
        #[serde(default)]
        priority: Option<u8>,
        /// The tenant it belongs to: its traffic class and hosts come from the tenant file.
        #[serde(default)]
        tenant: Option<String>,
    },
}

/// One explicit flow.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FlowLine {
    /// Source host.
    pub src: u32,
    /// Destination host.
    pub dst: u32,
    /// Bytes.
    #[serde(deserialize_with = "de_size")]
    pub size: Bytes,
    /// Start time.
    #[serde(default, deserialize_with = "de_time")]
    pub start: Duration,
    /// Traffic class override.
    #[serde(default)]
    pub priority: Option<u8>,
}

/// A failure during the run.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Failure {
    /// When the element goes down.
    #[serde(deserialize_with = "de_time")]
    pub at: Duration,
    /// A link, named by the fabric node ids of its two ends.
    #[serde(default)]
    pub link: Option<[u32; 2]>,
    /// A switch, by fabric node id.
    #[serde(default)]
    pub switch: Option<u32>,
    /// Time until routing reacts (tables recomputed without the element).
    #[serde(default, deserialize_with = "de_time")]
    pub detect: Duration,
    /// When the element comes back (optional).
    #[serde(default, deserialize_with = "de_opt_time")]
    pub restore: Option<Duration>,
}

/// A link (or one direction of it) running at a fraction of its rate: its queue
/// limit and ECN thresholds scale by the same fraction, as htsim scales a link it
/// runs at `-down_ratio` (`alloc_queue(.., reduced_speed)`).
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Degrade {
    /// The link, by the fabric node ids of its two ends.
    pub link: [u32; 2],
    /// Only the direction from `link[0]` to `link[1]` (default: both directions).
    #[serde(default)]
    pub one_way: bool,
    /// Fraction of the rate left, in (0, 1].
    pub fraction: f64,
    /// When the link slows down (default: from the start).
    #[serde(default, deserialize_with = "de_time")]
    pub at: Duration,
    /// When it is back at full rate (optional).
    #[serde(default, deserialize_with = "de_opt_time")]
    pub until: Option<Duration>,
}

/// A compiled degradation.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct DegradeSpec {
    /// The port side the degradation starts from.
    pub from: u32,
    /// The other end.
    pub to: u32,
    /// Both directions.
    pub both: bool,
    /// Fraction of the rate left.
    pub fraction: f64,
    /// Start.
    pub at: Instant,
    /// End.
    pub until: Option<Instant>,
}

/// Context a scenario is compiled against.
#[derive(Clone, Debug)]
pub struct CompileCtx {
    /// Number of hosts in the fabric.
    pub hosts: u32,
    /// Host link rate (for Poisson loads).
    pub host_rate: Rate,
    /// Seed for the random parts (used unless the scenario pins one).
    pub seed: u64,
    /// The tenant file, resolved against the fabric ([`Scenario::load_tenants`]).
    pub tenants: Option<ScenarioTenants>,
}

impl CompileCtx {
    /// A context for `hosts` hosts at `host_rate`.
    pub fn new(hosts: u32, host_rate: Rate, seed: u64) -> Self {
        CompileCtx {
            hosts,
            host_rate,
            seed,
            tenants: None,
        }
    }

    /// The same context with tenants.
    pub fn with_tenants(mut self, tenants: Option<ScenarioTenants>) -> Self {
        self.tenants = tenants;
        self
    }
}

/// Index of a flow in [`Workplan::flows`].
pub type FlowId = u32;

/// One flow to run.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct FlowSpec {
    /// Index in the plan.
    pub id: FlowId,
    /// Source host index.
    pub src: u32,
    /// Destination host index.
    pub dst: u32,
    /// Bytes to deliver; `None` for a long-lived flow ended by `stop`.
    pub size: Option<Bytes>,
    /// Earliest start.
    pub start: Instant,
    /// Flows that must have been fully received before this one starts.
    pub after: Vec<FlowId>,
    /// For long-lived flows: when the sender stops.
    pub stop: Option<Instant>,
    /// Traffic class (0–7).
    pub priority: u8,
    /// Index of the workload it belongs to ([`Workplan::groups`]).
    pub group: u32,
    /// The connection (queue pair) the flow is sent on: the id of the connection's first
    /// flow. A collective keeps one connection per peer for the communicator's life
    /// (NCCL), so all steps of a ring edge share it, and with it their ECMP hash; any
    /// other flow opens its own (`conn == id`).
    pub conn: FlowId,
    /// The connection's ordinal among the connections from `src` to `dst` (0 for the
    /// first, in plan order): with the two hosts it names the connection the way a
    /// 5-tuple's source port does, so it keys the simulator's ECMP hash and a
    /// connection keeps its path when flows between other hosts are added.
    pub ordinal: u32,
}

/// What kind of collective a workload is, for bus-bandwidth figures.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Collective {
    /// All-reduce: busbw = algbw · 2(n−1)/n (NCCL tests' convention).
    AllReduce,
    /// All-to-all: busbw = algbw · (n−1)/n.
    AllToAll,
    /// Permutation: busbw = algbw (one flow per rank).
    Permutation,
}

/// One workload of the plan.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Group {
    /// Name (the workload's `name`, or `kind#index`).
    pub name: String,
    /// The workload kind as written in the file.
    pub kind: String,
    /// Number of ranks (hosts taking part).
    pub ranks: u32,
    /// The collective's buffer size per rank (for algbw = size / time).
    pub size: Bytes,
    /// Set for collectives.
    pub collective: Option<Collective>,
}

/// What fails.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum FailureTarget {
    /// The link between two fabric nodes (both directions).
    Link(u32, u32),
    /// A whole switch.
    Switch(u32),
}

/// A compiled failure.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct FailureSpec {
    /// When it goes down.
    pub at: Instant,
    /// What goes down.
    pub target: FailureTarget,
    /// Delay until routing reacts.
    pub detect: Duration,
    /// When it comes back.
    pub restore: Option<Instant>,
}

/// A compiled scenario: flows over host indices, failures, and the stop time.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct Workplan {
    /// Scenario name.
    pub name: String,
    /// All flows; `flows[i].id == i`.
    pub flows: Vec<FlowSpec>,
    /// One entry per workload.
    pub groups: Vec<Group>,
    /// Failures, in file order.
    pub failures: Vec<FailureSpec>,
    /// Degraded links, in file order.
    pub degrades: Vec<DegradeSpec>,
    /// Stop time, if set.
    pub stop: Option<Instant>,
    /// Network overrides from the file.
    pub network: NetworkOverrides,
}

/// The largest TOML scenario read (a scenario is a few kB; `/dev/zero` or a runaway
/// generated file is refused at this size instead of filling memory).
pub const MAX_SCENARIO_BYTES: u64 = 64 << 20;

impl Scenario {
    /// Read a scenario file, by its extension: an htsim connection matrix (`.cm` or
    /// `.tm`, see [`Scenario::from_connection_matrix`]) or TOML (anything else).
    pub fn from_file(path: &Path) -> Result<Scenario> {
        if cm::is_matrix_file(path) {
            return Scenario::from_connection_matrix(path);
        }
        use std::io::Read;
        let file = path.display().to_string();
        let mut text = String::new();
        std::fs::File::open(path)
            .and_then(|f| f.take(MAX_SCENARIO_BYTES + 1).read_to_string(&mut text))
            .map_err(|source| ScenarioError::Io {
                file: file.clone(),
                source,
            })?;
        if text.len() as u64 > MAX_SCENARIO_BYTES {
            return Err(ScenarioError::Parse {
                file,
                message: format!(
                    "larger than the {} MiB a scenario file may have",
                    MAX_SCENARIO_BYTES >> 20
                ),
            });
        }
        let mut s = Scenario::from_toml_str(&text, &file)?;
        s.base_dir = path.parent().map(Path::to_path_buf);
        Ok(s)
    }

    /// A scenario of one workload: the connections of an htsim connection matrix
    /// (checked now, so a malformed matrix is reported before any fabric is built).
    pub fn from_connection_matrix(path: &Path) -> Result<Scenario> {
        cm::ConnectionMatrix::from_file(path)?;
        let origin = path.display().to_string();
        Ok(Scenario {
            name: path.file_stem().map(|s| s.to_string_lossy().into_owned()),
            workloads: vec![Workload::ConnectionMatrix {
                name: None,
                file: path.to_path_buf(),
                priority: None,
                tenant: None,
            }],
            origin,
            ..Scenario::default()
        })
    }

    /// The tenant file this run uses: `cli` (a driver's `--tenants FILE`) if given, else
    /// the scenario's `tenants` key, relative to the scenario file.
    pub fn tenants_path(&self, cli: Option<&Path>) -> Option<PathBuf> {
        if let Some(p) = cli {
            return Some(p.to_path_buf());
        }
        let p = self.tenants.as_ref()?;
        Some(match &self.base_dir {
            Some(d) if p.is_relative() => d.join(p),
            _ => p.clone(),
        })
    }

    /// Reads and checks the run's tenant file ([`Scenario::tenants_path`]) against the
    /// fabric the scenario runs on; `None` without one.
    pub fn load_tenants(
        &self,
        f: &topo::Fabric,
        cli: Option<&Path>,
    ) -> Result<Option<ScenarioTenants>> {
        self.tenants_path(cli)
            .map(|p| ScenarioTenants::load(&p, f))
            .transpose()
    }

    /// Whether a workload names `all` hosts (so the scenario has no size of its own: a
    /// driver that builds one namespace per host must be told how many).
    pub fn uses_every_host(&self) -> bool {
        self.workloads.iter().any(|w| match w {
            Workload::Incast { senders: s, .. }
            | Workload::Fairness { senders: s, .. }
            | Workload::Victim { senders: s, .. } => *s == HostSet::All,
            Workload::Permutation { hosts: h, .. }
            | Workload::AllToAll { hosts: h, .. }
            | Workload::RingAllreduce { hosts: h, .. }
            | Workload::TreeAllreduce { hosts: h, .. }
            | Workload::Poisson { hosts: h, .. } => *h == HostSet::All,
            Workload::Flows { .. } | Workload::ConnectionMatrix { .. } => false,
        })
    }

    /// Parse scenario text; `origin` names it in error messages.
    pub fn from_toml_str(text: &str, origin: &str) -> Result<Scenario> {
        let mut s: Scenario = toml::from_str(text).map_err(|e| ScenarioError::Parse {
            file: origin.to_string(),
            message: e.to_string().trim_end().to_string(),
        })?;
        s.origin = origin.to_string();
        if s.workloads.is_empty() {
            return Err(ScenarioError::Invalid {
                file: origin.to_string(),
                field: "workload".into(),
                message: "no [[workload]] table: a scenario needs at least one workload".into(),
            });
        }
        Ok(s)
    }

    fn invalid(&self, field: String, message: impl Into<String>) -> ScenarioError {
        ScenarioError::Invalid {
            file: self.origin.clone(),
            field,
            message: message.into(),
        }
    }

    /// Turn the file into flows over `ctx.hosts` hosts, checking every host index.
    pub fn compile(&self, ctx: &CompileCtx) -> Result<Workplan> {
        let mut rng = Rng::new(self.seed.unwrap_or(ctx.seed) ^ 0x5CE7_A210);
        let mut plan = Workplan {
            name: self.name.clone().unwrap_or_else(|| self.origin.clone()),
            stop: self.stop.map(|d| Instant::ZERO + d),
            network: self.network.clone(),
            ..Workplan::default()
        };
        if let Some(p) = self.network.ecn_pmax
            && !(0.0..=1.0).contains(&p)
        {
            return Err(self.invalid("network.ecn_pmax".into(), "must be in [0, 1]"));
        }
        if let Some(w) = self.network.ets
            && let Some(p) = w.iter().position(|&w| w > 100)
        {
            return Err(self.invalid(
                format!("network.ets[{p}]"),
                format!("weight {}: expected 0 (strict) or 1-100", w[p]),
            ));
        }
        if let Some(m) = self.network.mtu
            && (m.0 < 64 || m.0 > 65_536)
        {
            return Err(self.invalid(
                "network.mtu".into(),
                format!("{} B is outside 64 B..64 KiB", m.0),
            ));
        }
        self.check_tenants(ctx, &mut plan)?;
        for (wi, w) in self.workloads.iter().enumerate() {
            self.compile_one(wi, w, ctx, &mut rng, &mut plan)?;
        }
        compile::number_connections(&mut plan.flows);
        for (fi, f) in self.failures.iter().enumerate() {
            let target = match (f.link, f.switch) {
                (Some([a, b]), None) => FailureTarget::Link(a, b),
                (None, Some(s)) => FailureTarget::Switch(s),
                _ => {
                    return Err(self.invalid(
                        format!("failure[{fi}]"),
                        "give exactly one of `link = [a, b]` or `switch = n`",
                    ));
                }
            };
            if let Some(r) = f.restore
                && r <= f.at
            {
                return Err(
                    self.invalid(format!("failure[{fi}].restore"), "must be later than `at`")
                );
            }
            plan.failures.push(FailureSpec {
                at: Instant::ZERO + f.at,
                target,
                detect: f.detect,
                restore: f.restore.map(|d| Instant::ZERO + d),
            });
        }
        for (di, d) in self.degrades.iter().enumerate() {
            if !(d.fraction > 0.0 && d.fraction <= 1.0) {
                return Err(self.invalid(
                    format!("degrade[{di}].fraction"),
                    format!("{} is outside (0, 1]", d.fraction),
                ));
            }
            if d.link[0] == d.link[1] {
                return Err(self.invalid(
                    format!("degrade[{di}].link"),
                    "the two ends must be different nodes",
                ));
            }
            if let Some(u) = d.until
                && u <= d.at
            {
                return Err(self.invalid(format!("degrade[{di}].until"), "must be later than `at`"));
            }
            plan.degrades.push(DegradeSpec {
                from: d.link[0],
                to: d.link[1],
                both: !d.one_way,
                fraction: d.fraction,
                at: Instant::ZERO + d.at,
                until: d.until.map(|u| Instant::ZERO + u),
            });
        }
        self.check_network()?;
        Ok(plan)
    }
}

impl Scenario {
    /// The `[network]` knobs that need a range check.
    fn check_network(&self) -> Result<()> {
        let n = &self.network;
        if let Some(e) = n.evs
            && (e == 0 || !e.is_power_of_two())
        {
            return Err(self.invalid(
                "network.evs".into(),
                format!("{e} is not a power of two (htsim -paths: 1, 2, 4, … 32768)"),
            ));
        }
        if n.init_window.is_some() && n.init_window_pkts.is_some() {
            return Err(self.invalid(
                "network.init_window".into(),
                "give `init_window` (bytes) or `init_window_pkts`, not both",
            ));
        }
        if n.init_window == Some(Bytes(0)) || n.init_window_pkts == Some(0) {
            return Err(self.invalid("network.init_window".into(), "must be positive"));
        }
        if let Some(q) = n.queue_bdp
            && !(q > 0.0 && q <= 1000.0)
        {
            return Err(self.invalid(
                "network.queue_bdp".into(),
                format!("{q} is outside (0, 1000]"),
            ));
        }
        if n.queue.is_some() && n.queue_bdp.is_some() {
            return Err(self.invalid(
                "network.queue".into(),
                "give `queue` (bytes) or `queue_bdp`, not both",
            ));
        }
        for (i, l) in n.links.iter().enumerate() {
            let field = |f: &str| format!("network.link[{i}]{f}");
            if l.rate.is_none() && l.delay.is_none() {
                return Err(self.invalid(field(""), "give a `rate`, a `delay` or both"));
            }
            if l.rate == Some(Rate::ZERO) {
                return Err(self.invalid(field(".rate"), "must be positive"));
            }
            if l.link[0] == l.link[1] {
                return Err(
                    self.invalid(field(".link"), format!("both ends are node {}", l.link[0]))
                );
            }
        }
        let per_port_only = n.queue.is_some()
            || n.queue_bdp.is_some()
            || n.header_queue.is_some()
            || n.trim_victim.is_some();
        if n.trim_threshold.is_some() && n.buffer_model == Some(BufferModelName::PerPort) {
            return Err(self.invalid(
                "network.trim_threshold".into(),
                "per-port queues trim a packet when the queue is full (htsim's composite queue), \
                 so a trim threshold would be ignored: size the queue with `queue` or \
                 `queue_bdp` instead, or use buffer_model = \"shared\"",
            ));
        }
        if per_port_only && n.buffer_model != Some(BufferModelName::PerPort) {
            return Err(self.invalid(
                "network.buffer_model".into(),
                "`queue`, `queue_bdp`, `header_queue` and `trim_victim` need buffer_model = \"per-port\"",
            ));
        }
        Ok(())
    }
}

fn gcd(a: usize, b: usize) -> usize {
    if b == 0 { a } else { gcd(b, a % b) }
}

/// A random permutation of `0..n` with no fixed point (Sattolo's algorithm gives a
/// single random cycle, which is a derangement for n ≥ 2).
pub fn derangement(n: usize, rng: &mut Rng) -> Vec<usize> {
    let mut p: Vec<usize> = (0..n).collect();
    for i in (1..n).rev() {
        let j = rng.below(i as u64) as usize;
        p.swap(i, j);
    }
    p
}

/// A flow-size distribution.
#[derive(Clone, Debug, PartialEq)]
pub enum SizeDist {
    /// Always this many bytes.
    Fixed(f64),
    /// Piecewise-linear CDF points `(bytes, p)`.
    Cdf(Vec<(f64, f64)>),
}

impl SizeDist {
    /// Validate a CDF table.
    pub fn from_cdf(points: &[(f64, f64)]) -> std::result::Result<SizeDist, String> {
        if points.len() < 2 {
            return Err("needs at least two [bytes, probability] points".into());
        }
        for (i, w) in points.windows(2).enumerate() {
            if w[1].0 < w[0].0 || w[1].1 < w[0].1 {
                return Err(format!(
                    "point {} is not increasing in bytes and probability",
                    i + 1
                ));
            }
        }
        if points
            .iter()
            .any(|&(b, p)| b < 0.0 || !(0.0..=1.0).contains(&p))
        {
            return Err("sizes must be ≥ 0 and probabilities in [0, 1]".into());
        }
        if (points.last().map(|p| p.1).unwrap_or(0.0) - 1.0).abs() > 1e-9 {
            return Err("the last probability must be 1".into());
        }
        Ok(SizeDist::Cdf(points.to_vec()))
    }

    /// Mean size in bytes.
    pub fn mean(&self) -> f64 {
        match self {
            SizeDist::Fixed(b) => *b,
            SizeDist::Cdf(p) => {
                let mut m = p[0].0 * p[0].1;
                for w in p.windows(2) {
                    m += (w[1].1 - w[0].1) * (w[0].0 + w[1].0) / 2.0;
                }
                m
            }
        }
    }

    /// One sample.
    pub fn sample(&self, rng: &mut Rng) -> f64 {
        match self {
            SizeDist::Fixed(b) => *b,
            SizeDist::Cdf(p) => {
                let u = rng.next_f64();
                if u <= p[0].1 {
                    return p[0].0;
                }
                for w in p.windows(2) {
                    if u <= w[1].1 {
                        let span = w[1].1 - w[0].1;
                        let f = if span > 0.0 { (u - w[0].1) / span } else { 1.0 };
                        return w[0].0 + f * (w[1].0 - w[0].0);
                    }
                }
                p[p.len() - 1].0
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A scenario file past the cap (a sparse file, /dev/zero) is refused naming the file
    /// and the limit, read no further than the limit.
    #[test]
    fn a_huge_scenario_file_is_refused_at_the_cap() {
        let huge = testkit::huge::HugeFiles::new("scenario", "toml", MAX_SCENARIO_BYTES);
        for p in huge.all() {
            let e = Scenario::from_file(p).unwrap_err().to_string();
            assert_eq!(
                e,
                format!(
                    "{}: larger than the 64 MiB a scenario file may have",
                    p.display()
                )
            );
        }
    }

    fn ctx(n: u32) -> CompileCtx {
        CompileCtx::new(n, Rate::gbps(100), 7)
    }

    fn parse(t: &str) -> Result<Scenario> {
        Scenario::from_toml_str(t, "t.toml")
    }

    #[test]
    fn permutation_is_a_derangement() {
        let s = parse("[[workload]]\nkind = \"permutation\"\nsize = \"1MB\"\n").unwrap();
        let p = s.compile(&ctx(64)).unwrap();
        assert_eq!(p.flows.len(), 64);
        let mut dsts: Vec<u32> = p.flows.iter().map(|f| f.dst).collect();
        assert!(p.flows.iter().all(|f| f.src != f.dst));
        dsts.sort();
        assert_eq!(dsts, (0..64).collect::<Vec<_>>());
        // every flow on a connection of its own
        assert!(p.flows.iter().all(|f| f.conn == f.id));
        // Same seed, same plan.
        assert_eq!(p, s.compile(&ctx(64)).unwrap());
    }

    #[test]
    fn ring_allreduce_dependencies() {
        let s =
            parse("[[workload]]\nkind = \"ring_allreduce\"\nhosts = \"0..4\"\nsize = \"4MB\"\n")
                .unwrap();
        let p = s.compile(&ctx(8)).unwrap();
        assert_eq!(p.flows.len(), 4 * 6);
        assert!(p.flows.iter().all(|f| f.size == Some(Bytes(1_000_000))));
        // Step 1 of rank 1 waits for step 0's flow 0 -> 1.
        let f = &p.flows[5];
        assert_eq!(f.src, 1);
        assert_eq!(p.flows[f.after[0] as usize].dst, 1);
        assert_eq!(p.groups[0].collective, Some(Collective::AllReduce));
        // Every step of an edge goes over the edge's connection (its step-0 flow), as
        // NCCL keeps its queue pairs: rank 1's edge is flow 1 in every step.
        for f in &p.flows {
            assert_eq!(p.flows[f.conn as usize].src, f.src);
            assert_eq!(p.flows[f.conn as usize].dst, f.dst);
            assert!(p.flows[f.conn as usize].after.is_empty());
        }
        assert_eq!(f.conn, 1);
        let bad = parse(
            "[[workload]]\nkind = \"ring_allreduce\"\nhosts = \"0..4\"\nstride = 2\nsize = \"4MB\"\n",
        )
        .unwrap()
        .compile(&ctx(8))
        .unwrap_err()
        .to_string();
        assert!(bad.contains("workload[0].stride"), "{bad}");
    }

    #[test]
    fn tree_allreduce_shape() {
        let s =
            parse("[[workload]]\nkind = \"tree_allreduce\"\nhosts = \"0..7\"\nsize = \"1MB\"\n")
                .unwrap();
        let p = s.compile(&ctx(8)).unwrap();
        // 2 trees × 6 edges × up and down × 2 chunks of 250 KB (half the buffer each)
        assert_eq!(p.flows.len(), 48);
        assert!(p.flows.iter().all(|f| f.size == Some(Bytes(250_000))));
        // Every flow's dependencies are earlier flows: the plan is acyclic.
        assert!(p.flows.iter().all(|f| f.after.iter().all(|&a| a < f.id)));
        // one connection per tree edge and direction: 2 × 6 × 2
        let mut conns: Vec<u32> = p.flows.iter().map(|f| f.conn).collect();
        conns.sort();
        conns.dedup();
        assert_eq!(conns.len(), 24);
    }

    #[test]
    fn double_binary_tree_is_nccls() {
        // NCCL's picture for 12 ranks (src/graph/trees.cc): tree 0 rooted at 0 with child
        // 8; tree 1 its mirror, rooted at 11 with child 3.
        let t0: Vec<Option<usize>> = (0..12).map(|i| double_binary_tree(12, 0, i)).collect();
        let want0 = [
            None,
            Some(2),
            Some(4),
            Some(2),
            Some(8),
            Some(6),
            Some(4),
            Some(6),
            Some(0),
            Some(10),
            Some(8),
            Some(10),
        ];
        assert_eq!(t0, want0);
        assert_eq!(double_binary_tree(12, 1, 11), None);
        assert_eq!(double_binary_tree(12, 1, 3), Some(11));
        assert_eq!(double_binary_tree(12, 1, 7), Some(3));
        // odd: tree 1 is tree 0 shifted by one rank
        for i in 0..11 {
            assert_eq!(
                double_binary_tree(11, 1, (i + 1) % 11),
                double_binary_tree(11, 0, i).map(|u| (u + 1) % 11)
            );
        }
        // every size: one root, every other rank reaches it
        for n in 2..70 {
            for t in 0..2 {
                let roots = (0..n)
                    .filter(|&i| double_binary_tree(n, t, i).is_none())
                    .count();
                assert_eq!(roots, 1, "n {n} tree {t}");
                for i in 0..n {
                    let (mut at, mut hops) = (i, 0);
                    while let Some(u) = double_binary_tree(n, t, at) {
                        at = u;
                        hops += 1;
                        assert!(hops < n, "n {n} tree {t}: cycle from {i}");
                    }
                }
            }
        }
    }

    #[test]
    fn a_scenario_over_all_hosts_says_so() {
        let all = parse("[[workload]]\nkind = \"permutation\"\nsize = \"1KB\"\n").unwrap();
        assert!(all.uses_every_host());
        let some = parse(
            "[[workload]]\nkind = \"incast\"\nsenders = \"1..4\"\nreceiver = 0\nsize = \"1KB\"\n",
        )
        .unwrap();
        assert!(!some.uses_every_host());
    }

    #[test]
    fn a_connection_matrix_file_is_a_scenario_by_its_extension() {
        let dir = std::env::temp_dir().join(format!("scenario-cm-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let p = dir.join("two.cm");
        std::fs::write(
            &p,
            "Nodes 4\nConnections 2\n0->1 id 1 start 0 size 1000\n2->3 id 2 start 0 size 2000\n",
        )
        .unwrap();
        let plan = Scenario::from_file(&p).unwrap().compile(&ctx(4)).unwrap();
        assert_eq!(plan.flows.len(), 2);
        assert_eq!(plan.flows[1].size, Some(Bytes(2000)));
        let e = Scenario::from_file(&p)
            .unwrap()
            .compile(&ctx(2))
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("declares 4 nodes but the fabric has 2 hosts"),
            "{e}"
        );
        // htsim's UEC build names the same files `.tm`.
        let tm = dir.join("two.tm");
        std::fs::copy(&p, &tm).unwrap();
        let plan = Scenario::from_file(&tm).unwrap().compile(&ctx(4)).unwrap();
        assert_eq!(plan.flows.len(), 2);
        std::fs::remove_dir_all(&dir).ok();
    }

    #[test]
    fn workloads_too_large_to_hold_are_refused_before_they_are_built() {
        let e = parse("[[workload]]\nkind = \"all_to_all\"\nsize = \"1KB\"\n")
            .unwrap()
            .compile(&ctx(8192))
            .unwrap_err()
            .to_string();
        assert_eq!(
            e,
            "t.toml: workload[0].kind: would make 67100672 flows; a scenario may have at most 20000000 (use fewer hosts or a shorter duration)"
        );
        let e = parse(
            "[[workload]]\nkind = \"poisson\"\nload = 1.0\nsize = \"1KB\"\nduration = \"3600s\"\n",
        )
        .unwrap()
        .compile(&ctx(8))
        .unwrap_err()
        .to_string();
        assert!(e.contains("a scenario may have at most 20000000"), "{e}");
        let e = parse("[[workload]]\nkind = \"incast\"\nsenders = \"1..4\"\nreceiver = 0\nsize = \"1KB\"\nstart = \"20000000s\"\n")
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("longer than the longest time a scenario may give, 3600s"),
            "{e}"
        );
    }

    #[test]
    fn errors_name_the_field() {
        let e = parse(
            "[[workload]]\nkind = \"incast\"\nsenders = \"1..4\"\nreceiver = 40\nsize = \"1MB\"\n",
        )
        .unwrap()
        .compile(&ctx(8))
        .unwrap_err()
        .to_string();
        assert_eq!(
            e,
            "t.toml: workload[0].receiver: host 40 does not exist: the fabric has 8 hosts (0..8)"
        );
        let e = parse("[[workload]]\nkind = \"incast\"\nsenders = \"1..4\"\nreceiver = 0\nsize = \"1 parsec\"\n")
            .unwrap_err()
            .to_string();
        assert!(e.contains("unknown size unit"), "{e}");
        // Tagged workloads are buffered by serde, so the position is the table's header.
        assert!(e.contains("line 1"), "{e}");
        let e = parse("[[workload]]\nkind = \"incest\"\n")
            .unwrap_err()
            .to_string();
        assert!(e.contains("unknown variant `incest`"), "{e}");
        let e = parse(
            "[[workload]]\nkind = \"incast\"\nsenders = \"1..4\"\nreciever = 0\nsize = \"1MB\"\n",
        )
        .unwrap_err()
        .to_string();
        assert!(e.contains("reciever"), "{e}");
        let e = parse("name = \"x\"\n").unwrap_err().to_string();
        assert!(e.contains("no [[workload]]"), "{e}");
    }

    #[test]
    fn fairness_staircase() {
        let s = parse(
            "[[workload]]\nkind = \"fairness\"\nsenders = [1, 2, 3]\nreceiver = 0\ninterval = \"1ms\"\n",
        )
        .unwrap();
        let p = s.compile(&ctx(4)).unwrap();
        let ms = |f: &FlowSpec| {
            (
                f.start.picos() / 1_000_000_000,
                f.stop.unwrap().picos() / 1_000_000_000,
            )
        };
        assert_eq!(
            p.flows.iter().map(ms).collect::<Vec<_>>(),
            vec![(0, 5), (1, 4), (2, 3)]
        );
    }

    #[test]
    fn poisson_load_matches() {
        let s = parse(
            "[[workload]]\nkind = \"poisson\"\nload = 0.5\nsize = \"100KB\"\nduration = \"10ms\"\n",
        )
        .unwrap();
        let p = s.compile(&ctx(16)).unwrap();
        let bytes: u64 = p.flows.iter().map(|f| f.size.unwrap().0).sum();
        // Offered: 16 hosts × 0.5 × 100 Gb/s × 10 ms = 1 GB.
        let offered = bytes as f64 / 1e9;
        assert!((0.9..1.1).contains(&offered), "{offered}");
        let d = SizeDist::from_cdf(&[(0.0, 0.0), (100.0, 0.5), (300.0, 1.0)]).unwrap();
        assert!((d.mean() - 125.0).abs() < 1e-9);
        assert!(SizeDist::from_cdf(&[(0.0, 0.0), (100.0, 0.5)]).is_err());
    }

    #[test]
    fn failures_compile() {
        let s = parse(
            "[[workload]]\nkind = \"permutation\"\nsize = \"1MB\"\n[[failure]]\nat = \"10us\"\nlink = [3, 17]\ndetect = \"5us\"\n[[failure]]\nat = \"10us\"\n",
        )
        .unwrap();
        let e = s.compile(&ctx(8)).unwrap_err().to_string();
        assert!(e.contains("failure[1]"), "{e}");
    }

    #[test]
    fn link_overrides_parse_and_are_checked() {
        let w = "[[workload]]\nkind = \"permutation\"\nsize = \"1MB\"\n";
        let s = parse(&format!(
            "{w}[[network.link]]\nlink = [8, 10]\nrate = \"25Gbps\"\n[[network.link]]\nlink = [9, 11]\ndelay = \"2us\"\none_way = true\n"
        ))
        .unwrap();
        let p = s.compile(&ctx(8)).unwrap();
        assert_eq!(p.network.links.len(), 2);
        assert_eq!(p.network.links[0].rate, Some(Rate::gbps(25)));
        assert_eq!(
            (p.network.links[1].delay, p.network.links[1].one_way),
            (Some(Duration::micros(2)), true)
        );
        for (bad, msg) in [
            (
                "link = [8, 10]\n",
                "network.link[0]: give a `rate`, a `delay` or both",
            ),
            (
                "link = [8, 10]\nrate = \"0Gbps\"\n",
                "network.link[0].rate: must be positive",
            ),
            (
                "link = [8, 8]\ndelay = \"1us\"\n",
                "network.link[0].link: both ends are node 8",
            ),
        ] {
            let s = parse(&format!("{w}[[network.link]]\n{bad}")).unwrap();
            let e = s.compile(&ctx(8)).unwrap_err().to_string();
            assert!(e.contains(msg), "{e}");
        }
        assert!(parse(&format!("{w}[[network.link]]\nlink = [8, 10]\nspeed = 1\n")).is_err());
    }
}

#[cfg(test)]
mod compile_fuzz {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]
        /// Any numbers in any workload kind: parsing and compiling give a plan or an
        /// error, never a panic, and a plan never holds more than MAX_FLOWS flows or a
        /// host outside the fabric.
        #[test]
        fn any_numbers_parse_and_compile_to_a_bounded_plan_or_an_error(
            kind in prop::sample::select(vec!["incast", "permutation", "all_to_all", "ring_allreduce", "tree_allreduce", "fairness", "victim", "poisson"]),
            a in any::<u64>(), b in any::<u64>(), size in any::<u64>(), unit in prop::sample::select(vec!["B", "KB", "MB", "GB", "TB"]),
            start in any::<u32>(), load in any::<f64>(), stride in any::<u32>(), hosts in 0u32..5000,
        ) {
            let toml = format!(
                "[[workload]]\nkind = \"{kind}\"\nsenders = \"{a}..{b}\"\nhosts = \"{a}..={b}\"\nreceiver = {r}\nsize = \"{size}{unit}\"\nstart = \"{start}us\"\nload = {load:?}\nstride = {stride}\ninterval = \"{start}ns\"\nvictim_src = {vs}\nvictim_dst = {vd}\nvictim_size = \"{size}B\"\nduration = \"{start}ns\"\n",
                r = a % 64,
                vs = b % 64,
                vd = (b / 64) % 64,
            );
            // Fields a kind does not have are refused by the file format
            // (deny_unknown_fields); the minimal file reaches the compiler for most kinds.
            let minimal = format!(
                "[[workload]]\nkind = \"{kind}\"\nsize = \"{size}{unit}\"\nhosts = \"{a}..{b}\"\n"
            );
            for text in [toml, minimal] {
                let plan = Scenario::from_toml_str(&text, "fuzz.toml")
                    .and_then(|s| s.compile(&CompileCtx::new(hosts, Rate::gbps(100), 1)));
                if let Ok(p) = plan {
                    prop_assert!(p.flows.len() <= MAX_FLOWS);
                    prop_assert!(p.flows.iter().all(|f| f.src < hosts && f.dst < hosts));
                }
            }
        }
    }
}
