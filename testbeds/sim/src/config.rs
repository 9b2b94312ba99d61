//! Simulation settings: congestion control, load balancing, switch buffers, PFC,
//! ECN, trimming, timers. Defaults are the ones the correctness scenarios and the
//! htsim comparison use; each says where it comes from.

use cc_algos::{Bytes, CcKind, Duration, Instant, Rate, RedEcn, TrimPolicy};
use serde::Serialize;
use std::fmt;
use std::str::FromStr;

/// Load-balancing scheme.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum LbScheme {
    /// Per-flow ECMP: a seeded hash of the 5-tuple picks the next hop.
    Ecmp,
    /// Flowlet switching (LetFlow-style): a flow may move to a random next hop
    /// after an idle gap longer than `flowlet_gap` (Vanini et al., NSDI 2017).
    Flowlet,
    /// Per-packet spraying: the sender draws a random entropy value (EV) per
    /// packet (oblivious spraying), switches hash (flow, EV).
    Spray,
    /// REPS: the sender re-uses EVs that came back in un-marked ACKs and draws new
    /// ones otherwise (Bonato et al., "REPS: Recycled Entropy Packet Spraying", 2024).
    Reps,
    /// Per-packet spraying avoiding EVs recently seen with an ECN mark (bitmap).
    Bitmap,
    /// UEC's mixed policy: REPS recycling, falling back to the bitmap when no good EV
    /// is cached (htsim's default load balancer when a sender has many paths).
    Mixed,
    /// Adaptive routing: each switch sends each packet to the least-loaded
    /// equal-cost egress (by queued bytes).
    Adaptive,
}

impl LbScheme {
    /// Every scheme, in table order.
    pub const ALL: [LbScheme; 7] = [
        LbScheme::Ecmp,
        LbScheme::Flowlet,
        LbScheme::Spray,
        LbScheme::Reps,
        LbScheme::Bitmap,
        LbScheme::Mixed,
        LbScheme::Adaptive,
    ];
    /// Accepted names.
    pub const NAMES: &'static str = "ecmp, flowlet, spray, reps, bitmap, mixed, adaptive";
    /// Whether the sender chooses an entropy value per packet.
    pub fn uses_ev(self) -> bool {
        matches!(
            self,
            LbScheme::Spray | LbScheme::Reps | LbScheme::Bitmap | LbScheme::Mixed
        )
    }
    /// Whether a flow keeps one NIC port (plane).
    pub fn per_flow(self) -> bool {
        matches!(self, LbScheme::Ecmp | LbScheme::Flowlet)
    }
}

impl fmt::Display for LbScheme {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            LbScheme::Ecmp => "ecmp",
            LbScheme::Flowlet => "flowlet",
            LbScheme::Spray => "spray",
            LbScheme::Reps => "reps",
            LbScheme::Bitmap => "bitmap",
            LbScheme::Mixed => "mixed",
            LbScheme::Adaptive => "adaptive",
        })
    }
}

impl FromStr for LbScheme {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        Ok(match s.trim().to_ascii_lowercase().as_str() {
            "ecmp" => LbScheme::Ecmp,
            "flowlet" => LbScheme::Flowlet,
            "spray" | "oblivious" => LbScheme::Spray,
            "reps" => LbScheme::Reps,
            "bitmap" => LbScheme::Bitmap,
            "mixed" | "reps-bitmap" => LbScheme::Mixed,
            "adaptive" | "ar" => LbScheme::Adaptive,
            _ => {
                return Err(format!(
                    "unknown load-balancing scheme `{s}`; expected one of: {}",
                    LbScheme::NAMES
                ));
            }
        })
    }
}

/// Which sender algorithm every flow runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CcChoice {
    /// No congestion control: send at line rate, no window (RoCE without DCQCN).
    None,
    /// A `cc-algos` algorithm.
    Algo(CcKind),
}

impl CcChoice {
    /// Accepted names.
    pub fn names() -> String {
        format!("none, {}", CcKind::NAMES)
    }
}

impl fmt::Display for CcChoice {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            CcChoice::None => f.write_str("none"),
            CcChoice::Algo(k) => write!(f, "{k}"),
        }
    }
}

impl FromStr for CcChoice {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        if matches!(s.trim(), "none" | "line") {
            return Ok(CcChoice::None);
        }
        s.parse::<CcKind>()
            .map(CcChoice::Algo)
            .map_err(|e| format!("{e}; or `none`"))
    }
}

/// Everything the simulator needs besides the fabric and the workload.
#[derive(Clone, Debug)]
pub struct SimConfig {
    /// Seed: the same seed, fabric, workload and config give byte-identical results.
    pub seed: u64,
    /// Payload bytes per data packet (default 4096, as htsim's UEC runs).
    pub mtu: Bytes,
    /// Header bytes added to every data packet on the wire (default 64).
    pub header: Bytes,
    /// Size of ACK / NACK / CNP / trimmed packets on the wire (default 64).
    pub ctrl_size: Bytes,
    /// Sender algorithm.
    pub cc: CcChoice,
    /// Load balancing.
    pub lb: LbScheme,
    /// Number of entropy values a sprayed flow uses (htsim `-paths`, default 128).
    pub evs: u16,
    /// ECMP hash seed (change it to see a different polarisation).
    pub ecmp_seed: u64,
    /// Salt the ECMP hash with the switch id (real switches do); `false` uses the
    /// same function at every hop, which polarises multi-tier fabrics.
    pub ecmp_per_switch_salt: bool,
    /// Flowlet idle gap (default 10 µs).
    pub flowlet_gap: Duration,
    /// Enable PFC on all data priorities.
    pub pfc: bool,
    /// PFC XOFF threshold per ingress port and priority.
    pub pfc_xoff: Bytes,
    /// PFC XON threshold.
    pub pfc_xon: Bytes,
    /// Quanta in an XOFF frame (0xFFFF: the maximum, refreshed at half-life).
    pub pfc_quanta: u16,
    /// Shared buffer per switch.
    pub buffer: Bytes,
    /// Per-queue limit when PFC is off (tail drop), default = the shared buffer.
    pub queue_limit: Option<Bytes>,
    /// ECN marking at switch egress (none: no marking).
    pub ecn: Option<RedEcn>,
    /// Packet trimming (UEC) instead of dropping.
    pub trim: Option<TrimPolicy>,
    /// Per-hop switching latency added to every switch arrival.
    pub switch_latency: Duration,
    /// Propagation delay of links the fabric does not give one for.
    pub link_delay: Duration,
    /// Retransmission timeout (no ACK progress for this long: resend what is in flight).
    /// `None` (the default) derives it as htsim's UEC runs do (`main_uec.cpp`: 15 µs
    /// plus six times the time to drain one port's queue at the host rate), where the
    /// queue is the per-port model's data queue, or one BDP of the network's largest
    /// unloaded RTT with the shared buffer (htsim's default queue when trimming):
    /// 64.9 µs on a 100 Gb/s three-tier fat-tree with 500 ns links, instead of the
    /// fixed 1 ms it was.
    pub rto: Option<Duration>,
    /// Time-series sampling period (none: no series).
    pub sample: Option<Duration>,
    /// Stop time (none: when every flow has finished).
    pub stop: Option<Instant>,
    /// Deadlock watchdog period (no delivery for this long with PFC pauses
    /// outstanding: look for a cycle of paused ports).
    pub watchdog: Duration,
    /// Host link rate used for ideal FCTs when links differ (default: the host's port rate).
    pub ideal_rate: Option<Rate>,
    /// The sender's initial window (htsim `-cwnd`, in packets there): `None` keeps the
    /// algorithm's own default (one BDP for NSCC and DCTCP). Applies to window
    /// algorithms (NSCC, DCTCP) and RCCC's initial credit.
    pub init_window: Option<InitWindow>,
    /// ACK coalescing: one ACK per this many payload bytes received (htsim's UEC sink
    /// `_bytes_unacked_threshold`, 16 KB); `None` ACKs every packet.
    pub ack_every: Option<Bytes>,
    /// Which unloaded RTT each sender's algorithm is built with.
    pub base_rtt: BaseRttMode,
    /// Switch buffer model.
    pub buffer_model: BufferModel,
    /// Links running below their rate, from the start or from a time on (htsim
    /// `-failed N` with `-down_ratio`); also from a scenario's `[[degrade]]` entries.
    pub degraded: Vec<scenario::DegradeSpec>,
    /// The PFC watchdog on every switch egress queue (`cc_algos::pfcwd`; none: off).
    pub pfcwd: Option<cc_algos::pfcwd::WatchdogConfig>,
    /// A host whose NIC never stops pausing its leaf port (a PFC storm); none: no storm.
    pub storm: Option<Storm>,
    /// ETS between the data priorities of every port (weights per priority, e.g. the
    /// tenants' shares); none: strict priority, 7 highest.
    pub ets: Option<cc_algos::ets::EtsConfig>,
}

/// A per-port queue size.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum QueueSize {
    /// Bytes.
    Bytes(Bytes),
    /// Bandwidth-delay products: host rate × the network's largest unloaded RTT
    /// (resolved when the run is built; htsim sizes `-q` the same way).
    Bdp(f64),
}

/// An initial window given in bytes or in packets (of `mtu` payload).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum InitWindow {
    /// Bytes.
    Bytes(Bytes),
    /// Packets (htsim `-cwnd`).
    Packets(u32),
}

impl InitWindow {
    /// The window in bytes for packets of `mtu` payload bytes.
    pub fn bytes(self, mtu: Bytes) -> Bytes {
        match self {
            InitWindow::Bytes(b) => b,
            InitWindow::Packets(n) => Bytes(n as u64 * mtu.0),
        }
    }
}

/// The base RTT an algorithm assumes.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum BaseRttMode {
    /// The unloaded RTT of the sender's own path (default).
    #[default]
    Path,
    /// The largest unloaded RTT in the network, for every sender, as htsim's UEC
    /// runs do (`network_max_unloaded_rtt`, from the topology's diameter).
    NetworkMax,
}

/// Which packet a full per-port queue trims (htsim `CompositeQueue`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum TrimVictim {
    /// The arriving packet (default).
    #[default]
    Arriving,
    /// The packet at the head of the queue (the next to leave).
    Head,
    /// htsim's choice: with probability ½ the arriving packet, otherwise the packet
    /// queued last (`CompositeQueue::receivePacket`, `_enqueued_low.pop_front()`).
    Htsim,
}

/// Switch buffer model.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub enum BufferModel {
    /// A shared buffer per switch (`buffer`), each egress queue limited only by it
    /// (and by `queue_limit` without PFC). Trimming above the `trim` threshold.
    #[default]
    Shared,
    /// htsim's switch: every egress port has its own data queue of `queue` bytes
    /// (htsim `-q`, often set as a multiple of the BDP); a data packet that does not
    /// fit is trimmed (when `trim` is set, else dropped), the victim chosen by
    /// `victim`; headers and control packets go to a priority queue capped at
    /// `header_queue` bytes (htsim: 2 × the data queue), beyond which they are dropped.
    PerPort {
        /// Data queue per egress port (default 1 BDP).
        queue: QueueSize,
        /// Header/control queue per egress port (default 2 × `queue`).
        header_queue: Option<Bytes>,
        /// Which packet a full queue trims.
        victim: TrimVictim,
    },
}

/// A PFC storm: host `host` sends its leaf a PAUSE of `priority` with the longest quanta
/// every `every` from `at` on.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Storm {
    pub host: u32,
    pub at: Instant,
    pub every: Duration,
    pub priority: u8,
}

impl Default for SimConfig {
    fn default() -> Self {
        SimConfig {
            seed: 1,
            mtu: Bytes(4096),
            header: Bytes(64),
            ctrl_size: Bytes(64),
            cc: CcChoice::None,
            lb: LbScheme::Ecmp,
            evs: 128,
            ecmp_seed: 0x5EED,
            ecmp_per_switch_salt: true,
            flowlet_gap: Duration::micros(10),
            pfc: false,
            // Headroom for 100 Gb/s, 500 ns links, 4 KiB MTU is ~16 KB
            // (PfcConfig::headroom); XOFF leaves room for several packets.
            pfc_xoff: Bytes(64 * 1024),
            pfc_xon: Bytes(48 * 1024),
            pfc_quanta: 0xFFFF,
            buffer: Bytes(32 * 1024 * 1024),
            queue_limit: None,
            ecn: None,
            trim: None,
            switch_latency: Duration::ZERO,
            link_delay: Duration::nanos(500),
            rto: None,
            sample: None,
            stop: None,
            watchdog: Duration::micros(500),
            ideal_rate: None,
            init_window: None,
            ack_every: None,
            base_rtt: BaseRttMode::Path,
            buffer_model: BufferModel::Shared,
            degraded: Vec::new(),
            pfcwd: None,
            storm: None,
            ets: None,
        }
    }
}

impl SimConfig {
    /// Apply a scenario's `[network]` overrides.
    pub fn apply(&mut self, o: &scenario::NetworkOverrides) -> Result<(), String> {
        if let Some(m) = o.mtu {
            self.mtu = m;
        }
        if let Some(b) = o.buffer {
            self.buffer = b;
        }
        if let Some(p) = o.pfc {
            self.pfc = p;
        }
        if let Some(x) = o.pfc_xoff {
            self.pfc_xoff = x;
        }
        if let Some(x) = o.pfc_xon {
            self.pfc_xon = x;
        }
        if o.ecn_kmin.is_some() || o.ecn_kmax.is_some() || o.ecn_pmax.is_some() {
            let base = self.ecn.unwrap_or_else(RedEcn::dcqcn_paper);
            self.ecn = Some(
                RedEcn::new(
                    o.ecn_kmin.unwrap_or(base.kmin),
                    o.ecn_kmax.unwrap_or(base.kmax),
                    o.ecn_pmax.unwrap_or(base.pmax),
                )
                .map_err(|e| e.to_string())?,
            );
        }
        if let Some(t) = o.trim_threshold {
            self.trim = Some(TrimPolicy::new(t, self.ctrl_size).map_err(|e| e.to_string())?);
        }
        if let Some(d) = o.link_delay {
            self.link_delay = d;
        }
        match o.rto {
            Some(scenario::RtoSetting::Fixed(d)) => self.rto = Some(d),
            Some(scenario::RtoSetting::Htsim) => self.rto = None,
            None => {}
        }
        if let Some(w) = o.ets {
            self.ets = Some(cc_algos::ets::EtsConfig::from_weights(w).map_err(|e| e.to_string())?);
        }
        self.apply_htsim_knobs(o);
        Ok(())
    }
}

impl SimConfig {
    /// The `[network]` knobs that mirror htsim's flags (docs/sim.md has the table).
    /// The scenario crate has range-checked them.
    fn apply_htsim_knobs(&mut self, o: &scenario::NetworkOverrides) {
        use scenario::{BaseRttName, BufferModelName, TrimVictimName};
        if let Some(e) = o.evs {
            self.evs = e;
        }
        if let Some(w) = o.init_window {
            self.init_window = Some(InitWindow::Bytes(w));
        }
        if let Some(n) = o.init_window_pkts {
            self.init_window = Some(InitWindow::Packets(n));
        }
        if let Some(a) = o.ack_every {
            self.ack_every = (a.0 > 0).then_some(a);
        }
        if let Some(b) = o.base_rtt {
            self.base_rtt = match b {
                BaseRttName::Path => BaseRttMode::Path,
                BaseRttName::NetworkMax => BaseRttMode::NetworkMax,
            };
        }
        match o.buffer_model {
            Some(BufferModelName::Shared) => self.buffer_model = BufferModel::Shared,
            Some(BufferModelName::PerPort) => {
                let queue = match (o.queue, o.queue_bdp) {
                    (Some(q), _) => QueueSize::Bytes(q),
                    (None, Some(f)) => QueueSize::Bdp(f),
                    (None, None) => QueueSize::Bdp(1.0),
                };
                self.buffer_model = BufferModel::PerPort {
                    queue,
                    header_queue: o.header_queue,
                    victim: match o.trim_victim {
                        None | Some(TrimVictimName::Arriving) => TrimVictim::Arriving,
                        Some(TrimVictimName::Head) => TrimVictim::Head,
                        Some(TrimVictimName::Htsim) => TrimVictim::Htsim,
                    },
                };
            }
            None => {}
        }
    }

    /// Switch-side defaults that suit an algorithm (applied by `fabric sim` unless
    /// overridden):
    /// - DCQCN: RED ECN Kmin 5 KB, Kmax 200 KB, Pmax 1 % (Zhu et al. 2015, §5).
    /// - DCTCP: step marking at K = 100 KB (≈ 65 × 1.5 KB packets, the DCTCP paper's
    ///   K for 10 Gb/s scaled as it recommends, Alizadeh et al. 2010 §3.4).
    /// - NSCC / RCCC: RED 20 KB–80 KB with Pmax 1 (htsim's UEC runs mark between 20 %
    ///   and 80 % of a ~100 KB queue) and, where the variant trims, trimming above
    ///   200 KB (UEC packet trimming).
    /// - none: no marking.
    pub fn with_cc_defaults(mut self, cc: CcChoice) -> Self {
        use cc_algos::CcKind;
        self.cc = cc;
        let red = |a, b, p| RedEcn::new(Bytes(a), Bytes(b), p).expect("valid constants");
        let (ecn, trim) = match cc {
            CcChoice::None => (None, None),
            CcChoice::Algo(CcKind::Dcqcn(_)) => (Some(RedEcn::dcqcn_paper()), None),
            CcChoice::Algo(CcKind::Dctcp) => (Some(RedEcn::step(Bytes(100_000))), None),
            CcChoice::Algo(CcKind::Nscc { trimming }) => (
                Some(red(20_000, 80_000, 1.0)),
                trimming.then(|| TrimPolicy::new(Bytes(200_000), self.ctrl_size).expect("valid")),
            ),
            // HPCC reacts to INT only; ECN marks would be ignored.
            CcChoice::Algo(CcKind::Hpcc) => (None, None),
            CcChoice::Algo(CcKind::Rccc) => (
                Some(red(20_000, 80_000, 1.0)),
                Some(TrimPolicy::new(Bytes(200_000), self.ctrl_size).expect("valid")),
            ),
            CcChoice::Algo(_) => (Some(red(20_000, 80_000, 1.0)), None),
        };
        self.ecn = ecn;
        self.trim = trim;
        self
    }
}
