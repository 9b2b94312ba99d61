//! The congestion testbed: one userspace switch namespace and N host namespaces in a
//! star, each host joined to a switch port by a veth pair. Two threads run it — one
//! event loop for the switch (all its ports' AF_PACKET sockets), one for all hosts,
//! both `SCHED_FIFO` — each reading its sockets' receive rings, sending in `sendmmsg`
//! batches and waiting with [`afpacket::Waiter`] (short naps while traffic flows,
//! `ppoll` when idle) until the next pacing or timer deadline. The report says how far
//! each loop fell behind ([`CongestionReport::faithful`]).
//!
//! [`spawn`] starts a compiled `scenario` [`Workplan`] (flows over host indices with
//! start/stop times in the scenario's — virtual — time) and returns a [`LiveRun`]: live
//! `fabric_api::Snapshot`s at every sampling point, a stop that both loops obey, and
//! [`LiveRun::join`] for the [`CongestionReport`] in virtual time, so figures compare with
//! the simulator ([`CongestionReport::outcome`]). [`run_workplan`] is spawn-and-join. See
//! `veth_core::endpoint` for the time scaling.
//!
//! The testbed is a star by default; [`CongestionConfig::topology`] builds a multi-switch
//! `topo` fabric instead (2-leaf × 2-spine leaf–spine, k=4 fat-tree), every switch a
//! userspace switch served by the same one switch loop ([`fabric`]).
//!
//! Layout: [`star`] and [`fabric`] build the namespaces, sockets, switches and hosts; `loops` holds the
//! two real-time event loops; [`telemetry`] turns their counters into snapshots;
//! `results` assembles the report.

pub mod capture;
pub mod fabric;
mod loops;
pub mod reaction;
mod results;
pub mod star;
pub mod telemetry;
pub mod twin;

use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc;

use cc_algos::{Bytes, CcKind, Duration, Instant, PfcConfig, Rate, RedEcn, TrimPolicy};
use fabric_api::{FabricInfo, Snapshot};
use report::outcome::{FabricCounts, FlowOutcome, RunOutcome};

use crate::{Error, Result};
use cc_algos::uec::ev::EvPolicyKind;
use scenario::Workplan;
use veth_core::endpoint::TimeScale;
use veth_core::spray::SprayConfig;
use veth_core::switch::PortCounters;

pub use loops::LoopLoad;
pub use report::jain;

/// Configuration of a congestion-testbed run.
#[derive(Debug, Clone)]
pub struct CongestionConfig {
    /// Hosts (one switch port each on the star; on a fabric, the fabric's hosts).
    pub hosts: usize,
    /// Star or multi-switch fabric.
    pub topology: fabric::Topology,
    /// A host whose NIC never stops pausing its switch port (a PFC storm), if any.
    pub storm: Option<StormConfig>,
    /// The PFC watchdog on every switch (`cc_algos::pfcwd`, real time; None: off).
    pub pfcwd: Option<cc_algos::pfcwd::WatchdogConfig>,
    /// ETS between the priorities at every switch egress (None: strict priority).
    pub ets: Option<cc_algos::ets::EtsConfig>,
    /// Real rate of every link (what the engine paces at).
    pub link_rate: Rate,
    /// The rate the congestion control believes the links have; `virtual / link_rate`
    /// is the time scale (must divide exactly).
    pub virtual_rate: Rate,
    /// RoCE payload per data packet (multiple of 4).
    pub payload: usize,
    /// Shared switch buffer.
    pub buffer: Bytes,
    /// ECN marking (the DCQCN CP).
    pub ecn: Option<RedEcn>,
    /// PFC XOFF/XON per ingress port and priority (`None`: PFC off). The link rate in
    /// it must be the real `link_rate` (quanta are real bit times).
    pub pfc: Option<PfcConfig>,
    /// Trimming.
    pub trim: Option<TrimPolicy>,
    /// Sender algorithm.
    pub cc: CcKind,
    /// Packet spraying: the EV policy every sender uses (its receivers then accept
    /// reordering; see `veth_core::spray`), or `None` for one entropy value per flow
    /// (per-flow ECMP, go-back-N receivers).
    pub spray: Option<EvPolicyKind>,
    /// Entropy values a sprayed flow uses (htsim `-paths`; a power of two, at most
    /// 16384). Scenario `network.evs` sets it.
    pub evs: u16,
    /// Unloaded RTT in virtual time (for window-based algorithms' defaults).
    pub base_rtt: Duration,
    /// Retransmission timeout of the senders' go-back-N, virtual time (the simulator's
    /// default, so `--compare-sim` runs recover from a tail loss alike).
    pub rto: Duration,
    /// Sampling period of the time series, virtual time.
    pub sample: Duration,
    /// Write what the switch ports `pcap_ports` send and receive to this pcapng file
    /// (one interface per port, virtual-time stamps; see [`capture`]).
    pub pcap: Option<PathBuf>,
    /// Global switch ports to capture (on the star port `i` faces host `i`).
    pub pcap_ports: Vec<usize>,
    /// Wall-clock limit of the run (safety net).
    pub wall_limit: std::time::Duration,
    /// Seed for ECN decisions.
    pub seed: u64,
    /// Pacing token-bucket depth (real time) of switch ports, NICs and flows: how much
    /// an event loop that woke late may catch up. Wake-ups here are ~50 µs late, more
    /// than a 4 KiB frame time at 1 Gb/s (33 µs), so strict pacing would halve the rate.
    pub pacing_burst: Duration,
    /// Pacing token-bucket depth of the switch ports (real time). Larger than the
    /// hosts' so that a switch loop delayed by the OS catches up and the bottleneck keeps
    /// its long-term rate; senders keep a small bucket so they do not burst into queues.
    pub switch_pacing_burst: Duration,
}

impl CongestionConfig {
    /// Defaults: 1 Gb/s real links standing for 100 Gb/s (scale 100), 4 KiB payload,
    /// 32 MB shared buffer (a Tomahawk-3-class switch ASIC; it covers 16 ingress ports
    /// at XOFF plus the headroom the emulated hosts use after a PAUSE, measured at
    /// 2–100 KB per port, up to ~300 KB when the machine is loaded),
    /// DCQCN paper ECN setting (Kmin 5 KB, Kmax 200 KB, Pmax 1 %),
    /// PFC XOFF 256 KB / XON 128 KB, DCQCN paper parameters, 10 µs virtual base RTT,
    /// 1 ms retransmission timeout, 20 µs samples.
    pub fn new(hosts: usize) -> CongestionConfig {
        let link_rate = Rate::gbps(1);
        CongestionConfig {
            hosts,
            topology: fabric::Topology::Star,
            storm: None,
            pfcwd: None,
            ets: None,
            link_rate,
            virtual_rate: Rate::gbps(100),
            payload: 4096,
            buffer: Bytes(32_000_000),
            ecn: Some(RedEcn::dcqcn_paper()),
            pfc: Some(
                PfcConfig::new(Bytes(256_000), Bytes(128_000), 0xffff, link_rate).expect("valid"),
            ),
            trim: None,
            cc: CcKind::Dcqcn(cc_algos::DcqcnPreset::Paper),
            spray: None,
            evs: 128,
            base_rtt: Duration::micros(10),
            rto: Duration::millis(1),
            sample: Duration::micros(20),
            pcap: None,
            pcap_ports: vec![0],
            wall_limit: std::time::Duration::from_secs(60),
            seed: 1,
            pacing_burst: Duration::micros(300),
            switch_pacing_burst: Duration::micros(2000),
        }
    }

    /// [`CongestionConfig::new`] on a multi-switch `topology` (its hosts).
    pub fn on(topology: fabric::Topology) -> CongestionConfig {
        let mut c = CongestionConfig::new(topology.hosts().unwrap_or(2));
        c.topology = topology;
        c
    }

    /// Whether the switches stamp INT and the hosts echo it: the algorithm needs it (HPCC).
    pub fn int(&self) -> bool {
        matches!(self.cc, CcKind::Hpcc)
    }

    /// The time scale `virtual_rate / link_rate`.
    pub fn scale(&self) -> Result<TimeScale> {
        let (v, r) = (self.virtual_rate.as_bps(), self.link_rate.as_bps());
        if r == 0 || v % r != 0 || v < r {
            return Err(Error::Invalid(format!(
                "virtual rate {} must be a whole multiple of the link rate {}",
                self.virtual_rate, self.link_rate
            )));
        }
        Ok(TimeScale(v / r))
    }

    /// The endpoints' spraying, validated (`None` when flows keep one entropy value).
    pub fn spray_config(&self) -> Result<Option<SprayConfig>> {
        let Some(kind) = self.spray else {
            return Ok(None);
        };
        let c = SprayConfig {
            kind,
            evs: self.evs,
            seed: self.seed,
        };
        c.validate()
            .map_err(|e| Error::Invalid(format!("spraying ({kind:?}): {e}")))?;
        Ok(Some(c))
    }

    /// Apply a scenario's `[network]` overrides.
    pub fn apply(&mut self, n: &scenario::NetworkOverrides) -> Result<()> {
        if let Some(e) = n.evs {
            self.evs = e;
            self.spray_config()?;
        }
        if let Some(m) = n.mtu {
            if !(64..=8192).contains(&m.0) || !m.0.is_multiple_of(4) {
                return Err(Error::Invalid(format!(
                    "network.mtu: {} B cannot be carried by the veth engine: it needs a multiple of 4 in 64..=8192 B (the simulator accepts more; give an MTU both honour)",
                    m.0
                )));
            }
            self.payload = m.0 as usize;
        }
        if let Some(b) = n.buffer {
            self.buffer = b;
        }
        if n.pfc == Some(false) {
            self.pfc = None;
        }
        if n.pfc == Some(true) || n.pfc_xoff.is_some() || n.pfc_xon.is_some() {
            let cur = self.pfc.unwrap_or(
                PfcConfig::new(Bytes(256_000), Bytes(128_000), 0xffff, self.link_rate)
                    .expect("valid"),
            );
            let xoff = n.pfc_xoff.unwrap_or(cur.xoff);
            let xon = n.pfc_xon.unwrap_or(cur.xon.min(xoff));
            self.pfc = Some(
                PfcConfig::new(xoff, xon, 0xffff, self.link_rate)
                    .map_err(|e| Error::Invalid(format!("scenario [network] pfc: {e}")))?,
            );
        }
        if n.ecn_kmin.is_some() || n.ecn_kmax.is_some() || n.ecn_pmax.is_some() {
            let cur = self.ecn.unwrap_or(RedEcn::dcqcn_paper());
            self.ecn = Some(
                RedEcn::new(
                    n.ecn_kmin.unwrap_or(cur.kmin),
                    n.ecn_kmax.unwrap_or(cur.kmax),
                    n.ecn_pmax.unwrap_or(cur.pmax),
                )
                .map_err(|e| Error::Invalid(format!("scenario [network] ecn: {e}")))?,
            );
        }
        if let Some(t) = n.trim_threshold {
            self.trim =
                Some(TrimPolicy::new(t, Bytes(64)).map_err(|e| {
                    Error::Invalid(format!("scenario [network] trim_threshold: {e}"))
                })?);
        }
        if let Some(w) = n.ets {
            self.ets = Some(
                cc_algos::ets::EtsConfig::from_weights(w)
                    .map_err(|e| Error::Invalid(format!("scenario [network] ets: {e}")))?,
            );
        }
        Ok(())
    }
}

/// A PFC storm: host `host`'s NIC sends its switch port a PAUSE of `priority` with the
/// longest quanta every `every` (real time) from `at` (virtual time) on, forever.
#[derive(Debug, Clone, Copy)]
pub struct StormConfig {
    pub host: usize,
    pub at: Duration,
    pub priority: u8,
    pub every: Duration,
}

impl StormConfig {
    /// Host `host` storms priority 0 (the scenarios' default class) from `at`, a PAUSE
    /// every 5 ms of real time (its quanta last 33 ms at 1 Gb/s).
    pub fn new(host: usize, at: Duration) -> StormConfig {
        StormConfig {
            host,
            at,
            priority: 0,
            every: Duration::millis(5),
        }
    }
}

/// Per-flow results (virtual time).
#[derive(Debug, Clone, Default, serde::Serialize)]
pub struct FlowResult {
    pub id: u32,
    pub src: u32,
    pub dst: u32,
    pub size: Option<u64>,
    /// The priority (PFC class) the flow's data was carried at.
    pub priority: u8,
    /// In-order bytes delivered.
    pub delivered: u64,
    /// Virtual start and completion times (µs).
    pub start_us: f64,
    pub completed_us: Option<f64>,
    /// When the flow's first frame actually left its host (virtual µs; `None`: never
    /// sent). Later than `start_us` by however late the hosts' loop ran.
    pub first_sent_us: Option<f64>,
    /// Delivered throughput per sample, Gb/s (virtual).
    pub gbps: Vec<f64>,
    /// The sender's congestion-control rate at each sample, Gb/s (virtual).
    pub cc_rate_gbps: Vec<f64>,
    /// The sender's window at each sample, bytes (empty: not a window-based controller).
    pub cc_window_bytes: Vec<f64>,
    /// Credit granted to the sender per sample, Gb/s (virtual; empty: not credit-based).
    pub cc_credit_gbps: Vec<f64>,
    /// How the controller reacted while the flow was active (`None`: too short to judge).
    pub reaction: Option<reaction::Reaction>,
    pub cnps: u64,
    /// CNPs the sender received in each sample.
    pub cnps_per_sample: Vec<u64>,
    pub naks: u64,
    pub timeouts: u64,
    pub retransmitted_packets: u64,
    pub ce_packets: u64,
    /// Final controller rate, Gb/s (virtual).
    pub final_rate_gbps: f64,
}

/// The result of a run.
#[derive(Debug, Clone, Default, serde::Serialize)]
pub struct CongestionReport {
    pub scale: u64,
    pub link_rate_gbps: f64,
    pub virtual_rate_gbps: f64,
    /// Virtual duration of the run (µs).
    pub duration_us: f64,
    /// Sample period (µs, virtual).
    pub sample_us: f64,
    pub flows: Vec<FlowResult>,
    /// Switch counters per port (global ports; see [`fabric`]).
    pub ports: Vec<PortCounters>,
    /// Time each port of `ports` was held by a received PAUSE, µs of virtual time.
    pub paused_virtual_us: Vec<f64>,
    /// What each port of `ports` is (switch, port, peer).
    pub port_names: Vec<fabric::PortName>,
    /// Topology the run was on.
    pub topology: String,
    /// Queue bytes per switch port per sample.
    pub queue_bytes: Vec<Vec<u64>>,
    /// ECN marks each switch port made in each sample.
    pub ecn_marks_per_sample: Vec<Vec<u64>>,
    /// PAUSE frames each switch port sent in each sample.
    pub pauses_sent_per_sample: Vec<Vec<u64>>,
    /// Share of each sample (0–1) each switch port was held by a received PAUSE.
    pub paused_fraction_per_sample: Vec<Vec<f32>>,
    pub max_buffer_used: u64,
    /// Largest PFC headroom any ingress port used (bytes above XOFF while pausing its
    /// peer; see [`PortCounters::max_headroom_bytes`]).
    pub max_headroom_bytes: u64,
    /// How far (real µs) the switch loop fell behind at worst: one iteration's own work
    /// plus the OS's delay beyond the sleep it asked for; see
    /// [`CongestionReport::faithful`].
    pub switch_max_late_us: f64,
    /// The same for the hosts' loop.
    pub hosts_max_late_us: f64,
    /// What the switch loop did and what it cost (iterations, frames, CPU).
    pub switch_load: loops::LoopLoad,
    /// The same for the hosts' loop.
    pub hosts_load: loops::LoopLoad,
    /// Frames dropped by the switch (buffer full).
    pub switch_drops: u64,
    /// Frames the kernel dropped at our sockets (receive buffer full), all sockets.
    pub kernel_drops: u64,
    /// Frames dropped inside the veths (stats64 rx/tx_dropped), all links.
    pub veth_drops: u64,
    /// IPv4 packets the kernels of the run's namespaces took into their IP stack
    /// (`Ip: InReceives` of `/proc/net/snmp`, all namespaces). Every frame of the run
    /// carries device MACs no kernel owns ([`star::device_mac`]), so this stays 0: a
    /// non-zero figure means frames were routed (and dropped) by a namespace's kernel
    /// at the expense of the loop that sent them.
    pub kernel_ip_input: u64,
    /// Frames lost on links that failed during the run (queued on a port that went down).
    pub link_down_drops: u64,
    /// Frames a switch had no (live) route for: after a link failure, until the re-route.
    pub unroutable: u64,
    /// Frames the PFC watchdog discarded (for a stormed queue).
    pub pfcwd_drops: u64,
    /// Storms the watchdog detected, all ports.
    pub pfcwd_storms: u64,
    /// PAUSE frames the storming host sent.
    pub storm_pauses: u64,
    pub ecn_marks: u64,
    pub pauses_sent: u64,
    pub pfc_frames_received_by_hosts: u64,
    pub cnps_sent: u64,
    /// RCCC credit grants sent by receivers.
    pub credits_sent: u64,
    pub malformed: u64,
    /// Whether every sized flow completed before the limits.
    pub all_completed: bool,
}

impl CongestionReport {
    /// Whether both event loops kept up: neither fell more than [`MAX_FAITHFUL_LATE_US`]
    /// (real time) behind. When they did not, frames waited in socket
    /// rings unseen by PFC and ECN, or the emulated NICs fell below their rate, and the
    /// figures of the run describe the machine more than the fabric.
    pub fn faithful(&self) -> bool {
        self.switch_max_late_us <= MAX_FAITHFUL_LATE_US
            && self.hosts_max_late_us <= MAX_FAITHFUL_LATE_US
    }

    /// Whether the run gave the controllers a congestion signal (ECN marks, drops) and
    /// yet no flow's controller ever moved its rate, window or credit: then the algorithm
    /// did not run (as HPCC did not before the switch stamped INT), and agreement with
    /// the simulator means nothing. PFC pauses alone are no such signal: a scenario with
    /// ECN off (the fabric HoL scenario measures PFC alone) leaves DCQCN at line rate by
    /// design.
    pub fn controller_inert(&self) -> bool {
        let congested = self.ecn_marks > 0 || self.total_drops() > 0;
        congested
            && self
                .flows
                .iter()
                .all(|f| f.reaction.as_ref().is_none_or(|r| !r.changed))
    }

    /// Flows with a size that did not complete (ids).
    pub fn unfinished(&self) -> Vec<u32> {
        self.flows
            .iter()
            .filter(|f| f.size.is_some() && f.completed_us.is_none())
            .map(|f| f.id)
            .collect()
    }

    /// All drops: switch buffer, kernel sockets, veths, failed links, no route, watchdog.
    pub fn total_drops(&self) -> u64 {
        self.switch_drops
            + self.kernel_drops
            + self.veth_drops
            + self.link_down_drops
            + self.unroutable
            + self.pfcwd_drops
    }

    /// Per-flow mean throughput (Gb/s virtual) over samples `[from_us, to_us)`.
    pub fn mean_gbps(&self, flow: usize, from_us: f64, to_us: f64) -> f64 {
        let s = &self.flows[flow].gbps;
        let a = (from_us / self.sample_us) as usize;
        let b = ((to_us / self.sample_us) as usize).min(s.len());
        if b <= a {
            return 0.0;
        }
        s[a..b].iter().sum::<f64>() / (b - a) as f64
    }
}

impl CongestionReport {
    /// This run in the outcome model shared with the simulator (`report::outcome`),
    /// named `veth`; times in virtual µs.
    pub fn outcome(&self) -> RunOutcome {
        RunOutcome {
            source: "veth".into(),
            duration_us: self.duration_us,
            flows: self
                .flows
                .iter()
                .map(|f| FlowOutcome {
                    id: f.id,
                    src: f.src,
                    dst: f.dst,
                    size: f.size,
                    priority: f.priority,
                    start_us: f.start_us,
                    fct_us: f.completed_us.map(|t| t - f.start_us),
                    ideal_us: None,
                    delivered: f.delivered,
                })
                .collect(),
            counts: FabricCounts {
                drops: self.total_drops(),
                pauses: self.pauses_sent,
                ecn_marks: self.ecn_marks,
                cnps: self.cnps_sent,
            },
        }
    }
}

/// Largest lateness of an event loop (real µs) for which a run counts as faithful:
/// 5 ms real is 50 µs of virtual time at the default scale, five base RTTs. Under an
/// incast at full load one iteration of the switch loop (up to 64 frames from every
/// port, then the sends) takes 0.5–1.5 ms on this machine, so 1 ms would flag nearly
/// every run; beyond 5 ms the OS kept a loop from running (`FABRIC_VETH_DEBUG=1`
/// lists every gap over 500 µs).
pub const MAX_FAITHFUL_LATE_US: f64 = 5000.0;

/// The highest priority the engine carries data on: 6 is its class for CNPs and ACKs
/// (strict priority, never paused) and 7 is left alone.
pub const MAX_DATA_PRIORITY: u8 = 5;

/// Check that the engine can run `plan` on `cfg` exactly as written: every host exists,
/// every priority is one it carries data on, the payload fits. Nothing is changed
/// silently; a setting it cannot honour is an error.
pub fn check(cfg: &CongestionConfig, plan: &Workplan) -> Result<()> {
    if cfg.hosts < 2 {
        return Err(Error::Invalid(
            "the congestion testbed needs at least 2 hosts".into(),
        ));
    }
    for f in &plan.flows {
        if f.src as usize >= cfg.hosts || f.dst as usize >= cfg.hosts {
            return Err(Error::Invalid(format!(
                "flow {} uses host {} but the testbed has {} hosts",
                f.id,
                f.src.max(f.dst),
                cfg.hosts
            )));
        }
        if f.priority > MAX_DATA_PRIORITY {
            return Err(Error::Invalid(format!(
                "flow {} has priority {}: the veth engine carries data on priorities 0..={MAX_DATA_PRIORITY} (6 is its CNP/ACK class); give the workload a priority both the simulator and the testbed honour",
                f.id, f.priority
            )));
        }
    }
    if let Some(s) = cfg.storm
        && s.host >= cfg.hosts
    {
        return Err(Error::Invalid(format!(
            "storm host {} does not exist: the testbed has {} hosts",
            s.host, cfg.hosts
        )));
    }
    cfg.spray_config()?;
    if !cfg.payload.is_multiple_of(4) || cfg.payload < 16 || cfg.payload > 8192 {
        return Err(Error::Invalid(format!(
            "payload {} must be a multiple of 4 in 16..=8192",
            cfg.payload
        )));
    }
    if cfg.int() && cfg.payload < veth_core::int::MIN_PAYLOAD {
        return Err(Error::Invalid(format!(
            "payload {} B: {} needs INT records in every data packet, at least {} B of payload",
            cfg.payload,
            cfg.cc,
            veth_core::int::MIN_PAYLOAD
        )));
    }
    Ok(())
}

/// Every `--pcap-port` must name a port of the switches built (`ports` of them, global
/// numbering: on the star, port `i` faces host `i`), once.
pub fn check_pcap_port(cfg: &CongestionConfig, ports: usize) -> Result<()> {
    if cfg.pcap.is_none() {
        return Ok(());
    }
    if cfg.pcap_ports.is_empty() {
        return Err(Error::Invalid(
            "--pcap needs at least one --pcap-port to capture".into(),
        ));
    }
    for (i, &p) in cfg.pcap_ports.iter().enumerate() {
        if p >= ports {
            return Err(Error::Invalid(format!(
                "pcap port {p}: the {} has switch ports 0..={} (on the star port i faces host i)",
                cfg.topology,
                ports.saturating_sub(1)
            )));
        }
        if cfg.pcap_ports[..i].contains(&p) {
            return Err(Error::Invalid(format!(
                "pcap port {p} is listed twice in --pcap-port"
            )));
        }
    }
    Ok(())
}

/// What to capture in a built testbed (`None` without `--pcap`).
fn capture_spec(
    cfg: &CongestionConfig,
    names: &[fabric::PortName],
    scale: TimeScale,
) -> Option<capture::CaptureSpec> {
    let path = cfg.pcap.clone()?;
    let ports = cfg
        .pcap_ports
        .iter()
        .map(|&p| (p, names.get(p).map_or(format!("port {p}"), |n| n.label())))
        .collect();
    Some(capture::CaptureSpec { path, ports, scale })
}

/// Stops a [`LiveRun`] from another thread; made before the run (see [`spawn_with`]) it
/// can be handed to a signal handler installed before any thread of the run exists.
#[derive(Debug, Clone, Default)]
pub struct Stopper(Arc<AtomicBool>);

impl Stopper {
    /// Ask both event loops to stop at their next iteration.
    pub fn stop(&self) {
        self.0.store(true, Ordering::Relaxed);
    }
}

/// A congestion run in progress. Dropping it without [`LiveRun::join`] stops the run
/// and waits for it (the namespaces are removed either way).
#[derive(Debug)]
pub struct LiveRun {
    info: FabricInfo,
    stop: Arc<AtomicBool>,
    snapshots: mpsc::Receiver<Snapshot>,
    thread: Option<std::thread::JoinHandle<Result<CongestionReport>>>,
}

impl LiveRun {
    /// The star as a port map: the order every snapshot's per-port arrays follow.
    pub fn fabric(&self) -> &FabricInfo {
        &self.info
    }

    /// Snapshots, one per sampling point (virtual clock), cumulative counters; the
    /// channel closes when the run ends. A reader that falls behind loses none: they
    /// queue (at most one per sampling point of the run).
    pub fn snapshots(&self) -> &mpsc::Receiver<Snapshot> {
        &self.snapshots
    }

    /// Ask both event loops to stop at their next iteration.
    pub fn stop(&self) {
        self.stop.store(true, Ordering::Relaxed);
    }

    /// Nobody will read the snapshots: drop the receiver, so the run stops building them
    /// (and none queue up).
    pub fn ignore_snapshots(&mut self) {
        drop(std::mem::replace(&mut self.snapshots, mpsc::channel().1));
    }

    /// A handle that stops the run from elsewhere (a signal handler, another thread).
    pub fn stopper(&self) -> Stopper {
        Stopper(self.stop.clone())
    }

    /// Wait for the run to end; the report of what ran until then.
    pub fn join(mut self) -> Result<CongestionReport> {
        let t = self.thread.take().expect("joined once");
        t.join()
            .map_err(|_| Error::Invalid("the congestion run panicked".into()))?
    }
}

impl Drop for LiveRun {
    fn drop(&mut self) {
        if let Some(t) = self.thread.take() {
            self.stop();
            let _ = t.join();
        }
    }
}

/// Build the star and start `plan` on it; see [`LiveRun`].
pub fn spawn(cfg: &CongestionConfig, plan: &Workplan) -> Result<LiveRun> {
    spawn_with(cfg, plan, Stopper::default())
}

/// [`spawn`], stopped by `stopper`.
pub fn spawn_with(cfg: &CongestionConfig, plan: &Workplan, stopper: Stopper) -> Result<LiveRun> {
    check(cfg, plan)?;
    let scale = cfg.scale()?;
    let (info, layout) = telemetry::port_map(cfg)?;
    let stop = stopper.0;
    let (tx, rx) = mpsc::channel();
    let (cfg2, plan2, stop2) = (cfg.clone(), plan.clone(), stop.clone());
    let live = (info.clone(), layout);
    let thread = std::thread::Builder::new()
        .name("veth-congestion".into())
        .spawn(move || run(&cfg2, &plan2, scale, stop2, tx, live))
        .map_err(|e| Error::Os {
            what: "spawn the congestion run".into(),
            source: e,
        })?;
    Ok(LiveRun {
        info,
        stop,
        snapshots: rx,
        thread: Some(thread),
    })
}

/// Build the star, run `plan`, tear everything down, report.
pub fn run_workplan(cfg: &CongestionConfig, plan: &Workplan) -> Result<CongestionReport> {
    let mut run = spawn(cfg, plan)?;
    run.ignore_snapshots();
    run.join()
}

fn run(
    cfg: &CongestionConfig,
    plan: &Workplan,
    scale: TimeScale,
    stop: Arc<AtomicBool>,
    snapshots: mpsc::Sender<Snapshot>,
    (info, layout): (FabricInfo, telemetry::Layout),
) -> Result<CongestionReport> {
    let built = fabric::build(cfg, plan, scale)?;
    check_pcap_port(cfg, built.port_names.len())?;
    let capture = capture_spec(cfg, &built.port_names, scale);
    let mut hosts = star::hosts(cfg, plan, &built.host_links, scale)?;
    if let Some(s) = cfg.storm {
        hosts[s.host].storm(scale.to_real(Instant::ZERO + s.at), s.every, s.priority);
    }
    let live = telemetry::Live::new(info, layout, scale, snapshots);
    let (star_tb, sockets, port_names) = (built.tb, built.sockets, built.port_names);
    let mut ran = loops::run(
        cfg,
        plan,
        scale,
        &stop,
        sockets,
        built.switches,
        hosts,
        live,
        capture,
    )?;
    let drops = results::OutsideDrops {
        kernel: ran
            .switch
            .sockets
            .iter()
            .map(|s| s.kernel_drops)
            .sum::<u64>()
            + ran
                .hosts
                .sockets
                .iter()
                .map(|s| s.kernel_drops)
                .sum::<u64>(),
        veth: star::veth_drops(&star_tb)?,
    };
    // The last snapshot: every counter as the report has it.
    let ports: Vec<PortCounters> = (0..ran.switch.switch.num_ports())
        .map(|p| ran.switch.switch.counters(p).clone())
        .collect();
    let end = ran.hosts.end;
    let h = &mut ran.hosts;
    h.live.send(end, &ports, &h.hosts);
    let mut report = results::assemble(cfg, plan, scale, &ran, drops);
    report.kernel_ip_input = star::kernel_ip_input(&star_tb)?;
    report.port_names = port_names;
    drop(ran);
    let mut tb = star_tb;
    tb.teardown()?;
    Ok(report)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scenario_ets_weights_reach_every_switch() {
        let mut cfg = CongestionConfig::new(4);
        let n = scenario::NetworkOverrides {
            ets: Some([0, 50, 50, 0, 0, 0, 0, 0]),
            ..Default::default()
        };
        cfg.apply(&n).unwrap();
        let sw = star::switch_config(&cfg, vec![[0; 6]; 2], vec![None; 2], Default::default());
        assert_eq!(sw.ets.unwrap().weights(), [0, 50, 50, 0, 0, 0, 0, 0]);
        let bad = scenario::NetworkOverrides {
            ets: Some([0, 0, 0, 0, 0, 0, 0, 101]),
            ..Default::default()
        };
        let e = cfg.apply(&bad).unwrap_err().to_string();
        assert!(e.contains("ets") && e.contains("weight 101"), "{e}");
    }

    #[test]
    fn jain_index() {
        assert!((jain(&[1.0, 1.0, 1.0]) - 1.0).abs() < 1e-12);
        assert!((jain(&[1.0, 0.0]) - 0.5).abs() < 1e-12);
    }

    fn flow(id: u32, reaction: Option<reaction::Reaction>) -> FlowResult {
        FlowResult {
            id,
            size: Some(1000),
            reaction,
            ..FlowResult::default()
        }
    }

    #[test]
    fn a_congested_run_whose_controllers_never_moved_is_inert() {
        let flat = reaction::Reaction::judge("window_bytes", &[125e3; 5], 0..5, None);
        let moved = reaction::Reaction::judge("window_bytes", &[125e3, 9e3, 2e4], 0..3, None);
        let mut r = CongestionReport {
            ecn_marks: 3834,
            flows: vec![flow(1, flat.clone()), flow(2, flat)],
            ..CongestionReport::default()
        };
        assert!(r.controller_inert());
        r.flows[1].reaction = moved;
        assert!(!r.controller_inert());
        // Without congestion a flat controller is right.
        r.flows[1].reaction = r.flows[0].reaction.clone();
        r.ecn_marks = 0;
        assert!(!r.controller_inert());
        // PFC alone (ECN off): the controllers had no signal to react to.
        r.pauses_sent = 158;
        assert!(!r.controller_inert());
        r.switch_drops = 1;
        assert!(r.controller_inert());
    }

    #[test]
    fn unfinished_names_sized_flows_without_completion() {
        let mut done = flow(1, None);
        done.completed_us = Some(10.0);
        let mut endless = flow(3, None);
        endless.size = None;
        let r = CongestionReport {
            flows: vec![done, flow(2, None), endless],
            ..CongestionReport::default()
        };
        assert_eq!(r.unfinished(), vec![2]);
    }

    #[test]
    fn a_pcap_port_the_switches_lack_is_refused() {
        let mut c = CongestionConfig::new(9);
        c.pcap = Some("x.pcap".into());
        c.pcap_ports = vec![2, 99];
        let e = check_pcap_port(&c, 9).unwrap_err().to_string();
        assert!(e.contains("pcap port 99") && e.contains("0..=8"), "{e}");
        c.pcap_ports = vec![8, 0, 3];
        assert!(check_pcap_port(&c, 9).is_ok());
        c.pcap_ports = vec![3, 0, 3];
        let e = check_pcap_port(&c, 9).unwrap_err().to_string();
        assert!(e.contains("pcap port 3 is listed twice"), "{e}");
        c.pcap_ports.clear();
        let e = check_pcap_port(&c, 9).unwrap_err().to_string();
        assert!(e.contains("at least one --pcap-port"), "{e}");
    }

    #[test]
    fn scale_must_divide() {
        let mut c = CongestionConfig::new(2);
        assert_eq!(c.scale().unwrap(), TimeScale(100));
        c.virtual_rate = Rate::bps(1_500_000_000);
        assert!(c.scale().is_err());
    }
}
