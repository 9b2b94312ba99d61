//! The congestion testbed: one userspace switch namespace and N host namespaces in a
//! star, each host joined to a switch port by a veth pair. Two threads run it — one
//! event loop for the switch (all its ports' AF_PACKET sockets), one for all hosts,
//! both `SCHED_FIFO` — each reading its sockets' receive rings, sending in `sendmmsg`
//! batches and waiting with [`afpacket::Waiter`] (short naps while traffic flows,
//! `ppoll` when idle) until the next pacing or timer deadline. The report says how far
//! each loop fell behind ([`CongestionReport::faithful`]).
//!
//! [`run_workplan`] executes a compiled `scenario` [`Workplan`] (flows over host indices
//! with start/stop times in the scenario's — virtual — time) and returns a
//! [`CongestionReport`] in virtual time, so figures compare with the simulator. See
//! [`super::endpoint`] for the time scaling.

use std::collections::HashMap;
use std::net::Ipv4Addr;
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use cc_algos::{Bytes, CcKind, Duration, Instant, PathParams, PfcConfig, Rate, RedEcn, TrimPolicy};

use super::afpacket::{self, PacketSocket};
use crate::{Error, Result, Testbed, netlink};
use scenario::Workplan;
use veth_core::endpoint::{Completed, Host, HostConfig, TimeScale};
use veth_core::pcap::PcapWriter;
use veth_core::switch::{PortCounters, Switch, SwitchConfig};

/// Configuration of a congestion-testbed run.
#[derive(Debug, Clone)]
pub struct CongestionConfig {
    /// Hosts (one switch port each).
    pub hosts: usize,
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
    /// Unloaded RTT in virtual time (for window-based algorithms' defaults).
    pub base_rtt: Duration,
    /// Retransmission timeout of the senders' go-back-N, virtual time (the simulator's
    /// default, so `--compare-sim` runs recover from a tail loss alike).
    pub rto: Duration,
    /// Sampling period of the time series, virtual time.
    pub sample: Duration,
    /// Write what switch port `pcap_port` sends and receives to this file.
    pub pcap: Option<PathBuf>,
    pub pcap_port: usize,
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
            base_rtt: Duration::micros(10),
            rto: Duration::millis(1),
            sample: Duration::micros(20),
            pcap: None,
            pcap_port: 0,
            wall_limit: std::time::Duration::from_secs(60),
            seed: 1,
            pacing_burst: Duration::micros(300),
            switch_pacing_burst: Duration::micros(2000),
        }
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

    /// Apply a scenario's `[network]` overrides.
    pub fn apply(&mut self, n: &scenario::NetworkOverrides) -> Result<()> {
        if let Some(m) = n.mtu {
            self.payload = (m.0 as usize).next_multiple_of(4).clamp(64, 8192);
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
        Ok(())
    }
}

/// Per-flow results (virtual time).
#[derive(Debug, Clone, serde::Serialize)]
pub struct FlowResult {
    pub id: u32,
    pub src: u32,
    pub dst: u32,
    pub size: Option<u64>,
    /// In-order bytes delivered.
    pub delivered: u64,
    /// Virtual start and completion times (µs).
    pub start_us: f64,
    pub completed_us: Option<f64>,
    /// Delivered throughput per sample, Gb/s (virtual).
    pub gbps: Vec<f64>,
    /// The sender's congestion-control rate at each sample, Gb/s (virtual).
    pub cc_rate_gbps: Vec<f64>,
    pub cnps: u64,
    pub naks: u64,
    pub timeouts: u64,
    pub retransmitted_packets: u64,
    pub ce_packets: u64,
    /// Final controller rate, Gb/s (virtual).
    pub final_rate_gbps: f64,
}

/// The result of a run.
#[derive(Debug, Clone, serde::Serialize)]
pub struct CongestionReport {
    pub scale: u64,
    pub link_rate_gbps: f64,
    pub virtual_rate_gbps: f64,
    /// Virtual duration of the run (µs).
    pub duration_us: f64,
    /// Sample period (µs, virtual).
    pub sample_us: f64,
    pub flows: Vec<FlowResult>,
    /// Switch counters per port.
    pub ports: Vec<PortCounters>,
    /// Queue bytes per switch port per sample.
    pub queue_bytes: Vec<Vec<u64>>,
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
    /// Frames dropped by the switch (buffer full).
    pub switch_drops: u64,
    /// Frames the kernel dropped at our sockets (receive buffer full), all sockets.
    pub kernel_drops: u64,
    /// Frames dropped inside the veths (stats64 rx/tx_dropped), all links.
    pub veth_drops: u64,
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
    /// All drops: switch buffer, kernel sockets, veths.
    /// Whether both event loops kept up: neither fell more than [`MAX_FAITHFUL_LATE_US`]
    /// (real time) behind. When they did not, frames waited in socket
    /// rings unseen by PFC and ECN, or the emulated NICs fell below their rate, and the
    /// figures of the run describe the machine more than the fabric.
    pub fn faithful(&self) -> bool {
        self.switch_max_late_us <= MAX_FAITHFUL_LATE_US
            && self.hosts_max_late_us <= MAX_FAITHFUL_LATE_US
    }

    pub fn total_drops(&self) -> u64 {
        self.switch_drops + self.kernel_drops + self.veth_drops
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

pub use report::jain;

fn host_ip(i: usize) -> Ipv4Addr {
    Ipv4Addr::new(10, 200, (i / 250) as u8, (i % 250) as u8 + 1)
}

struct Clock(std::time::Instant);
impl Clock {
    fn now(&self) -> Instant {
        Instant::from_picos(self.0.elapsed().as_nanos() as u64 * 1000)
    }
    fn unix_nanos(&self, t: Instant) -> u64 {
        let base = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_nanos() as u64)
            .unwrap_or(0);
        base.saturating_sub(self.0.elapsed().as_nanos() as u64) + t.nanos()
    }
}

/// How far an event loop fell behind (real time): for each iteration, the time from its
/// start to the next iteration's start minus the sleep it asked for — the iteration's
/// own work plus any delay of the OS in running it again. While a loop is behind, the
/// switch does not forward (its rings fill unseen by PFC and ECN) or the hosts do not
/// send, so a run with a large figure is not a faithful emulation; the report says so
/// instead of hiding it.
#[derive(Debug, Default)]
struct Lateness {
    start: Option<(std::time::Instant, std::time::Duration)>,
    max: std::time::Duration,
    /// Gaps over 500 µs: (when, how long), for `FABRIC_VETH_DEBUG`.
    long: Vec<(std::time::Instant, std::time::Duration)>,
}

impl Lateness {
    /// At the top of an iteration.
    fn on_wake(&mut self) {
        let now = std::time::Instant::now();
        if let Some((start, sleep)) = self.start {
            let behind = now.duration_since(start).saturating_sub(sleep);
            self.max = self.max.max(behind);
            if behind > std::time::Duration::from_micros(500) && self.long.len() < 64 {
                self.long.push((now, behind));
            }
        }
        self.start = Some((now, std::time::Duration::ZERO));
    }

    /// Before waiting: the loop asks to sleep at most `sleep`.
    fn sleeping(&mut self, sleep: std::time::Duration) {
        if let Some((_, s)) = &mut self.start {
            *s = sleep;
        }
    }

    fn debug(&self, what: &str, t0: std::time::Instant) {
        if std::env::var_os("FABRIC_VETH_DEBUG").is_some() {
            let v: Vec<String> = self
                .long
                .iter()
                .map(|(t, d)| format!("{:.1}ms:{}us", (*t - t0).as_secs_f64() * 1e3, d.as_micros()))
                .collect();
            eprintln!("{what} gaps > 500 us: {}", v.join(" "));
        }
    }

    fn max_us(&self) -> f64 {
        self.max.as_secs_f64() * 1e6
    }
}

/// Largest lateness of an event loop (real µs) for which a run counts as faithful:
/// 5 ms real is 50 µs of virtual time at the default scale, five base RTTs. Under an
/// incast at full load one iteration of the switch loop (up to 64 frames from every
/// port, then the sends) takes 0.5–1.5 ms on this machine, so 1 ms would flag nearly
/// every run; beyond 5 ms the OS kept a loop from running (`FABRIC_VETH_DEBUG=1`
/// lists every gap over 500 µs).
pub const MAX_FAITHFUL_LATE_US: f64 = 5000.0;

/// What the switch thread hands back: the switch, its sockets, the queue series per
/// port, and how far (real µs) its loop fell behind.
type SwitchOutcome = (Switch, Vec<PacketSocket>, Vec<Vec<u64>>, f64);

/// Frames one emulated host may send per visit of the host loop.
const HOST_BATCH: usize = 16;

/// Wait until `next` (at most 500 µs) for the loop's sockets; `busy`: this iteration
/// moved frames. A ring that already holds frames means no wait at all.
fn sleep_until(
    waiter: &mut afpacket::Waiter,
    busy: bool,
    readable: bool,
    now: Instant,
    next: Option<Instant>,
) -> std::time::Duration {
    let max = Duration::micros(500);
    let wait = match next {
        _ if readable => Duration::ZERO,
        Some(t) if t <= now => Duration::ZERO,
        Some(t) => (t - now).min(max),
        None => max,
    };
    waiter.wait(busy || readable, wait.as_nanos())
}

/// Build the star, run `plan`, tear everything down, report.
pub fn run_workplan(cfg: &CongestionConfig, plan: &Workplan) -> Result<CongestionReport> {
    let scale = cfg.scale()?;
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
    }
    if !cfg.payload.is_multiple_of(4) || cfg.payload < 16 || cfg.payload > 8192 {
        return Err(Error::Invalid(format!(
            "payload {} must be a multiple of 4 in 16..=8192",
            cfg.payload
        )));
    }
    let mut tb = Testbed::new()?;
    let sw = tb.add_netns("sw")?;
    let mut links = Vec::new();
    let mut host_ns = Vec::new();
    for i in 0..cfg.hosts {
        let h = tb.add_netns(&format!("h{i}"))?;
        let l = tb.connect(&sw, &format!("p{i}"), &h, "eth0")?;
        netlink::Nl::open(&sw)?.set_mtu(&format!("p{i}"), 9000)?;
        netlink::Nl::open(&h)?.set_mtu("eth0", 9000)?;
        links.push(l);
        host_ns.push(h);
    }
    let mut sw_socks = Vec::new();
    for i in 0..cfg.hosts {
        sw_socks.push(PacketSocket::open(&sw, &format!("p{i}"))?);
    }
    let mut host_socks = Vec::new();
    for h in &host_ns {
        host_socks.push(PacketSocket::open(h, "eth0")?);
    }

    // Switch.
    let mut routes = HashMap::new();
    for i in 0..cfg.hosts {
        routes.insert(host_ip(i), i);
    }
    let swcfg = SwitchConfig {
        port_macs: links.iter().map(|l| l.a_mac).collect(),
        link_rate: cfg.link_rate,
        buffer: cfg.buffer,
        ecn: cfg.ecn,
        pfc: cfg.pfc,
        pfc_priorities: 0x3f,
        trim: cfg.trim,
        routes,
        next_hop_macs: links.iter().map(|l| Some(l.b_mac)).collect(),
        seed: cfg.seed,
        pacing_burst: cfg.switch_pacing_burst,
    };
    let mut switch = Switch::new(swcfg);

    // Hosts and flows.
    let path = PathParams {
        line_rate: cfg.virtual_rate,
        base_rtt: cfg.base_rtt,
        mtu: Bytes(cfg.payload as u64 + 58),
    };
    let receiver = cfg
        .cc
        .build_receiver(&path)
        .map_err(|e| Error::Invalid(format!("congestion control {}: {e}", cfg.cc)))?;
    let mut hosts: Vec<Host> = (0..cfg.hosts)
        .map(|i| {
            let np: Box<dyn veth_core::endpoint::Receiver> = match &receiver {
                Some(r) => Box::new(r.clone()),
                None => Box::new(veth_core::endpoint::NoReceiver),
            };
            Host::new(
                HostConfig {
                    mac: links[i].b_mac,
                    ip: host_ip(i),
                    gateway_mac: links[i].a_mac,
                    link_rate: cfg.link_rate,
                    scale,
                    payload: cfg.payload,
                    ack_every: 8,
                    rto: scale.dur_to_real(cfg.rto),
                    pacing_burst: cfg.pacing_burst,
                },
                np,
            )
        })
        .collect();
    for f in &plan.flows {
        let cc = cfg
            .cc
            .build(&path)
            .map_err(|e| Error::Invalid(format!("congestion control {}: {e}", cfg.cc)))?;
        let start = scale.to_real(f.start);
        let stop = f.stop.map(|s| scale.to_real(s));
        hosts[f.src as usize].add_send_flow(
            f.id,
            host_ip(f.dst as usize),
            f.priority.min(5),
            f.size.map(|b| b.0),
            start,
            stop,
            f.after.clone(),
            cc,
        );
        hosts[f.dst as usize].add_recv_flow(f.id, host_ip(f.src as usize), f.size.map(|b| b.0));
    }
    let real_stop = plan.stop.map(|s| scale.to_real(s));
    let sample_real = scale.dur_to_real(cfg.sample);

    let stop = Arc::new(AtomicBool::new(false));
    let clock = Arc::new(Clock(std::time::Instant::now()));
    let wall_limit = cfg.wall_limit;

    // Switch thread.
    let sw_stop = stop.clone();
    let sw_clock = clock.clone();
    let pcap_cfg = cfg.pcap.clone().map(|p| (p, cfg.pcap_port));

    let sw_thread = std::thread::Builder::new()
        .name("veth-switch".into())
        .spawn(move || -> Result<SwitchOutcome> {
            afpacket::set_fine_timer_slack();
            afpacket::set_realtime().map_err(|e| Error::Os {
                what: "SCHED_FIFO for the switch thread".into(),
                source: e,
            })?;
            let mut pcap = match &pcap_cfg {
                Some((p, _)) => Some(
                    PcapWriter::new(std::io::BufWriter::new(std::fs::File::create(p).map_err(
                        |e| Error::Os {
                            what: format!("create pcap {}", p.display()),
                            source: e,
                        },
                    )?))
                    .map_err(|e| Error::Os {
                        what: "write pcap header".into(),
                        source: e,
                    })?,
                ),
                None => None,
            };
            let pcap_port = pcap_cfg.as_ref().map(|(_, p)| *p);
            let n = sw_socks.len();
            let mut waiter = afpacket::Waiter::new(sw_socks.iter().map(|s| s.raw_fd()).collect());
            let mut pool = afpacket::FramePool::default();
            let mut pending: Vec<Vec<Vec<u8>>> = vec![Vec::new(); n];
            let mut queue_series: Vec<Vec<u64>> = vec![Vec::new(); n];
            let mut next_sample = Instant::ZERO;
            let mut late = Lateness::default();
            while !sw_stop.load(Ordering::Relaxed) {
                let now = sw_clock.now();
                late.on_wake();
                let mut busy = false;
                for (p, s) in sw_socks.iter_mut().enumerate() {
                    let k = s.recv_batch();
                    busy |= k > 0;
                    for i in 0..k {
                        let f = pool.copy(s.frame(i));
                        if pcap_port == Some(p)
                            && let Some(w) = pcap.as_mut()
                        {
                            let _ = w.write_frame(sw_clock.unix_nanos(now), &f);
                        }
                        switch.on_frame(now, p, f);
                    }
                }
                switch.on_timeout(now);
                for p in 0..n {
                    while pending[p].len() < afpacket::BATCH {
                        match switch.poll_transmit(now, p) {
                            Some(f) => pending[p].push(f),
                            None => break,
                        }
                    }
                    if pending[p].is_empty() {
                        continue;
                    }
                    let sent = sw_socks[p].send_batch(&pending[p]);
                    busy |= sent > 0;
                    if pcap_port == Some(p)
                        && let Some(w) = pcap.as_mut()
                    {
                        for f in &pending[p][..sent] {
                            let _ = w.write_frame(sw_clock.unix_nanos(now), f);
                        }
                    }
                    pool.recycle(pending[p].drain(..sent));
                }
                if now >= next_sample {
                    for (p, q) in queue_series.iter_mut().enumerate() {
                        q.push(switch.counters(p).queue_bytes);
                    }
                    next_sample += sample_real;
                }
                let mut next = switch.next_wakeup(now);
                if pending.iter().any(|p| !p.is_empty()) {
                    next = Some(now + Duration::micros(20));
                }
                let next = Some(next.map_or(next_sample, |t| t.min(next_sample)));
                let readable = sw_socks.iter().any(|s| s.readable());
                let slept = sleep_until(&mut waiter, busy, readable, sw_clock.now(), next);
                late.sleeping(slept);
            }
            if let Some(w) = pcap.as_mut() {
                let _ = w.flush();
            }
            for s in &mut sw_socks {
                s.read_kernel_drops();
            }
            late.debug("switch", sw_clock.0);
            Ok((switch, sw_socks, queue_series, late.max_us()))
        })
        .map_err(|e| Error::Os {
            what: "spawn switch thread".into(),
            source: e,
        })?;

    let sized: Vec<(u32, u32)> = plan
        .flows
        .iter()
        .filter(|f| f.size.is_some())
        .map(|f| (f.id, f.dst))
        .collect();
    let n_sized = sized.len();
    let mut rate_series: HashMap<u32, Vec<f64>> =
        plan.flows.iter().map(|f| (f.id, Vec::new())).collect();
    let mut delivered_series: HashMap<u32, Vec<u64>> =
        plan.flows.iter().map(|f| (f.id, Vec::new())).collect();
    let host_stop = stop.clone();
    let host_clock = clock.clone();
    // Host loop on a thread of its own (so the caller's scheduling is left alone).
    let host_thread = std::thread::Builder::new()
        .name("veth-hosts".into())
        .spawn(move || {
            let clock = host_clock;
            afpacket::set_fine_timer_slack();
            // The hosts' loop is real-time too: when a build or another test took its
            // CPU, the emulated NICs fell below line rate together (an 8:1 incast that
            // never congested) or their receive rings overflowed.
            if let Err(e) = afpacket::set_realtime() {
                host_stop.store(true, Ordering::Relaxed);
                return Err(Error::Os {
                    what: "SCHED_FIFO for the hosts thread".into(),
                    source: e,
                });
            }
            let mut waiter = afpacket::Waiter::new(host_socks.iter().map(|s| s.raw_fd()).collect());
            let mut completed: Completed = Completed::new();
            let mut next_sample = Instant::ZERO;
            let mut out: Vec<Vec<u8>> = Vec::new();
            let mut pending: Vec<Vec<Vec<u8>>> = vec![Vec::new(); hosts.len()];
            let wall_start = std::time::Instant::now();
            let end;
            let mut late = Lateness::default();
            loop {
                late.on_wake();
                let mut busy = false;
                // Each host reads its own ring right before it sends, so a PAUSE (or a
                // CNP, a credit) that arrived while the other hosts were busy is obeyed
                // before its next frame, as a NIC would; and it sends at most
                // HOST_BATCH frames per visit, which bounds what it can put on the wire
                // after a PAUSE reached it.
                for (i, h) in hosts.iter_mut().enumerate() {
                    let now = clock.now();
                    let s = &mut host_socks[i];
                    let k = s.recv_batch();
                    busy |= k > 0;
                    for j in 0..k {
                        h.on_frame(now, s.frame(j));
                    }
                    s.release_batch();
                    h.on_timeout(now);
                    if pending[i].len() < HOST_BATCH {
                        out.clear();
                        h.poll_transmit(now, &completed, &mut out, HOST_BATCH - pending[i].len());
                        pending[i].append(&mut out);
                    }
                    if !pending[i].is_empty() {
                        let sent = s.send_batch(&pending[i]);
                        busy |= sent > 0;
                        pending[i].drain(..sent);
                    }
                }
                let now = clock.now();
                for &(id, dst) in &sized {
                    if !completed.contains(&id)
                        && hosts[dst as usize]
                            .recv
                            .get(&id)
                            .is_some_and(|r| r.completed.is_some())
                    {
                        completed.insert(id);
                    }
                }
                if now >= next_sample {
                    for h in &hosts {
                        for (id, r) in &h.recv {
                            if let Some(v) = delivered_series.get_mut(id) {
                                v.push(r.bytes);
                            }
                        }
                        for f in &h.flows {
                            if let Some(v) = rate_series.get_mut(&f.id) {
                                use cc_algos::SenderCc;
                                v.push(f.cc.rate().as_gbps_f64());
                            }
                        }
                    }
                    next_sample += sample_real;
                }
                let all_done =
                    completed.len() == sized.len() && hosts.iter().all(|h| h.senders_done(now));
                let past_stop = real_stop.is_some_and(|s| now >= s);
                if all_done || past_stop || wall_start.elapsed() > wall_limit {
                    end = now;
                    break;
                }
                let mut next = hosts
                    .iter()
                    .filter_map(|h| h.next_wakeup(now, &completed))
                    .min();
                if pending.iter().any(|p| !p.is_empty()) {
                    next = Some(now + Duration::micros(20));
                }
                let next = Some(next.map_or(next_sample, |t| t.min(next_sample)));
                let readable = host_socks.iter().any(|s| s.readable());
                let slept = sleep_until(&mut waiter, busy, readable, clock.now(), next);
                late.sleeping(slept);
            }
            host_stop.store(true, Ordering::Relaxed);
            late.debug("hosts", clock.0);
            for s in &mut host_socks {
                s.read_kernel_drops();
            }
            Ok((
                hosts,
                host_socks,
                delivered_series,
                rate_series,
                completed,
                end,
                late.max_us(),
            ))
        })
        .map_err(|e| Error::Os {
            what: "spawn host thread".into(),
            source: e,
        })?;
    let host_res = host_thread.join();
    stop.store(true, Ordering::Relaxed);
    let sw_res = sw_thread.join();
    let (hosts, host_socks, delivered_series, mut rate_series, completed, end, hosts_late) =
        host_res.map_err(|_| Error::Invalid("host thread panicked".into()))??;
    let (switch, sw_socks, queue_series, switch_late) =
        sw_res.map_err(|_| Error::Invalid("switch thread panicked".into()))??;
    let kernel_drops: u64 = sw_socks.iter().map(|s| s.kernel_drops).sum::<u64>()
        + host_socks.iter().map(|s| s.kernel_drops).sum::<u64>();
    let mut veth_drops = 0;
    for ns in tb.namespaces() {
        for (name, st) in netlink::Nl::open(ns)?.stats()? {
            if name != "lo" {
                veth_drops += st.rx_dropped + st.tx_dropped;
            }
        }
    }
    drop(sw_socks);
    drop(host_socks);
    tb.teardown()?;

    if std::env::var_os("FABRIC_VETH_DEBUG").is_some() {
        for h in &hosts {
            for f in &h.flows {
                eprintln!("{}", f.state());
            }
            for (id, r) in &h.recv {
                eprintln!("receiver of flow {id}: {r:?}");
            }
        }
    }
    // Report.
    let to_us = |t: Instant| scale.to_virtual(t).picos() as f64 / 1e6;
    let sample_us = cfg.sample.as_micros_f64();
    let mut flows = Vec::new();
    for f in &plan.flows {
        let rx = hosts[f.dst as usize]
            .recv
            .get(&f.id)
            .cloned()
            .unwrap_or_default();
        let sf = hosts[f.src as usize].flows.iter().find(|s| s.id == f.id);
        let series = &delivered_series[&f.id];
        let mut gbps = Vec::with_capacity(series.len());
        let mut prev = 0u64;
        for &b in series {
            gbps.push((b - prev) as f64 * 8.0 / (sample_us * 1e3));
            prev = b;
        }
        use cc_algos::SenderCc;
        flows.push(FlowResult {
            id: f.id,
            src: f.src,
            dst: f.dst,
            size: f.size.map(|b| b.0),
            delivered: rx.bytes,
            start_us: f.start.picos() as f64 / 1e6,
            completed_us: rx.completed.map(to_us),
            gbps,
            cc_rate_gbps: rate_series.remove(&f.id).unwrap_or_default(),
            cnps: sf.map_or(0, |s| s.cnps),
            naks: sf.map_or(0, |s| s.naks),
            timeouts: sf.map_or(0, |s| s.timeouts),
            retransmitted_packets: sf.map_or(0, |s| s.retransmits),
            ce_packets: rx.ce_packets,
            final_rate_gbps: sf.map_or(0.0, |s| s.cc.rate().as_gbps_f64()),
        });
    }
    let ports: Vec<PortCounters> = (0..switch.num_ports())
        .map(|p| switch.counters(p).clone())
        .collect();
    let max_headroom = ports
        .iter()
        .map(|p| p.max_headroom_bytes)
        .max()
        .unwrap_or(0);
    Ok(CongestionReport {
        scale: scale.0,
        link_rate_gbps: cfg.link_rate.as_gbps_f64(),
        virtual_rate_gbps: cfg.virtual_rate.as_gbps_f64(),
        duration_us: to_us(end),
        sample_us,
        flows,
        switch_drops: ports.iter().map(|p| p.drops).sum(),
        ecn_marks: ports.iter().map(|p| p.ecn_marks).sum(),
        pauses_sent: ports.iter().map(|p| p.pauses_sent).sum(),
        malformed: ports.iter().map(|p| p.malformed).sum::<u64>()
            + hosts.iter().map(|h| h.c.malformed).sum::<u64>(),
        pfc_frames_received_by_hosts: hosts.iter().map(|h| h.c.pfc_received).sum(),
        cnps_sent: hosts.iter().map(|h| h.c.cnps_sent).sum(),
        credits_sent: hosts.iter().map(|h| h.c.credits_sent).sum(),
        ports,
        queue_bytes: queue_series,
        max_buffer_used: switch.max_buffer_used,
        max_headroom_bytes: max_headroom,
        switch_max_late_us: switch_late,
        hosts_max_late_us: hosts_late,
        kernel_drops,
        veth_drops,
        all_completed: completed.len() == n_sized,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn jain_index() {
        assert!((jain(&[1.0, 1.0, 1.0]) - 1.0).abs() < 1e-12);
        assert!((jain(&[1.0, 0.0]) - 0.5).abs() < 1e-12);
    }

    #[test]
    fn scale_must_divide() {
        let mut c = CongestionConfig::new(2);
        assert_eq!(c.scale().unwrap(), TimeScale(100));
        c.virtual_rate = Rate::bps(1_500_000_000);
        assert!(c.scale().is_err());
    }
}
