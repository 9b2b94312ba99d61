//! The userspace switch core, sans-IO: frames in (`on_frame`), frames out
//! (`poll_transmit`), deadlines (`next_wakeup`). The I/O loop in [`super::engine`]
//! feeds it from AF_PACKET sockets; unit tests feed it directly.
//!
//! Model (one output-queued shared-buffer switch, as in the DCQCN paper's testbed):
//! - forwarding by destination IPv4 address (a host table: address → one port or an
//!   ECMP group); in a group the switch hashes (source, destination, UDP source port)
//!   with its own salt: a sender that keeps its UDP source port (RoCEv2's entropy
//!   value) per flow gets per-flow ECMP, one that changes it per packet is sprayed;
//!   ports that are down ([`Switch::set_port_up`]) are left out of every group;
//! - per egress port, 8 priority queues served in strict priority (7 highest), or with
//!   [`SwitchConfig::ets`] by ETS (strict priorities first, then DWRR by weight); the
//!   priority is the DSCP class selector (`dscp >> 3`: data DSCP 26 → 3, CNP/ACK DSCP 48 → 6);
//! - each egress port is paced at its link rate: a frame occupies the port for
//!   `(len + 24) × 8 / rate` (preamble, FCS and inter-frame gap counted);
//! - one shared buffer for all ports: a frame that does not fit is dropped and counted;
//! - ECN: the `cc-algos` CP policy ([`cc_algos::RedEcn`]) decides on enqueue from the
//!   egress queue length; the switch rewrites the IPv4 ECN bits to CE with an
//!   incremental checksum update (the RoCEv2 ICRC masks them);
//! - PFC: per ingress port and priority, [`cc_algos::PfcIngress`] counts the bytes held
//!   and asks for XOFF/XON frames, sent on the ingress port ahead of everything else;
//!   received PFC frames pause our egress per priority through [`cc_algos::PfcEgress`];
//! - trimming ([`cc_algos::TrimPolicy`]): a data frame that would exceed the threshold
//!   is cut to its headers and queued at the control priority;
//! - counters for everything ([`PortCounters`]).
//!
//! Time is real time of the I/O loop as a `cc_algos::Instant` (picoseconds since start);
//! rates are real link rates. Buffer thresholds are bytes, which the time scaling of
//! [`super::endpoint`] leaves unchanged.

use std::collections::{HashMap, VecDeque};
use std::net::Ipv4Addr;

use cc_algos::pfcwd::{QueueSample, QueueWatch, Verdict, WatchdogConfig};
use cc_algos::{
    Bytes, Duration, Instant, PfcConfig, PfcEgress, PfcIngress, Rate, RedEcn, TrimDecision,
    TrimPolicy,
};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

use crate::wire::ethernet::{self, ETHERTYPE_IPV4, ETHERTYPE_MAC_CONTROL, Mac};
use crate::wire::ipv4::{self, Ecn};
use crate::wire::{ib, pfc, udp};

/// Priorities (802.1p classes).
pub const PRIORITIES: usize = 8;
/// Per-frame wire overhead not in the buffer: preamble + SFD (8), FCS (4), IFG (12).
pub const WIRE_OVERHEAD: u64 = 24;

/// Configuration of a switch.
#[derive(Debug, Clone)]
pub struct SwitchConfig {
    /// MAC address of each port (source of PFC frames).
    pub port_macs: Vec<Mac>,
    /// Link rate of every port.
    pub link_rate: Rate,
    /// Shared buffer size.
    pub buffer: Bytes,
    /// ECN marking on egress queues (None: no marking).
    pub ecn: Option<RedEcn>,
    /// PFC thresholds per ingress port and priority (None: PFC off).
    pub pfc: Option<PfcConfig>,
    /// Priorities PFC applies to (bit mask; usually only the data class 3).
    pub pfc_priorities: u8,
    /// Trimming of data frames (None: off).
    pub trim: Option<TrimPolicy>,
    /// Destination address → egress ports (one port, or an ECMP group).
    pub routes: HashMap<Ipv4Addr, Vec<usize>>,
    /// Salt of the ECMP hash; give every switch of a fabric its own, or all switches
    /// would make the same choice for a flow (hash polarisation).
    pub ecmp_salt: u64,
    /// Destination MAC to write on frames leaving each port (the attached host), if any.
    pub next_hop_macs: Vec<Option<Mac>>,
    /// Seed of the RNG for ECN decisions.
    pub seed: u64,
    /// Depth of each port's pacing token bucket (see [`Switch::poll_transmit`]).
    pub pacing_burst: Duration,
    /// PFC watchdog on every egress queue of the PFC priorities (None: off): the
    /// `cc_algos::pfcwd` logic the daemon runs, polled every `detection / 4` of the
    /// switch's (real) time.
    pub pfcwd: Option<WatchdogConfig>,
    /// Stamp an INT record ([`crate::int`], for HPCC) on every data frame each port sends.
    pub int: bool,
    /// ETS between the priorities of every egress port (None: strict priority).
    pub ets: Option<cc_algos::ets::EtsConfig>,
}

impl SwitchConfig {
    /// A switch with these ports, rate, buffer and routes; no ECN, PFC or trimming, PFC
    /// priority 3 when PFC is set, no MAC rewrite, no pacing burst, seed 1, salt 0.
    pub fn new(
        port_macs: Vec<Mac>,
        link_rate: Rate,
        buffer: Bytes,
        routes: HashMap<Ipv4Addr, Vec<usize>>,
    ) -> SwitchConfig {
        let n = port_macs.len();
        SwitchConfig {
            port_macs,
            link_rate,
            buffer,
            ecn: None,
            pfc: None,
            pfc_priorities: 1 << 3,
            trim: None,
            routes,
            ecmp_salt: 0,
            next_hop_macs: vec![None; n],
            seed: 1,
            pacing_burst: Duration::ZERO,
            pfcwd: None,
            int: false,
            ets: None,
        }
    }
}

/// Counters of one port. `rx_*` count frames arriving on the port, `tx_*` frames
/// leaving it; `marks`, `drops`, `trims` and queue figures refer to its egress queues.
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize)]
pub struct PortCounters {
    pub rx_packets: u64,
    pub rx_bytes: u64,
    pub tx_packets: u64,
    pub tx_bytes: u64,
    /// Frames CE-marked on enqueue.
    pub ecn_marks: u64,
    /// Frames dropped because the shared buffer was full.
    pub drops: u64,
    /// Frames trimmed to headers.
    pub trims: u64,
    /// PFC pause frames sent (XOFF and refreshes) by this port.
    pub pauses_sent: u64,
    /// `pauses_sent` per priority.
    pub pauses_sent_by_priority: [u64; 8],
    /// PFC resume frames (zero quanta) sent by this port.
    pub resumes_sent: u64,
    /// PFC frames received on this port.
    pub pfc_received: u64,
    /// PAUSE frames received per priority (a frame pausing several counts for each).
    pub pfc_received_by_priority: [u64; 8],
    /// Headroom used: the largest ingress occupancy of one priority above its XOFF
    /// threshold, i.e. the bytes that kept arriving on this port after it had asked its
    /// peer to pause. A real switch must reserve this much per port and priority to
    /// stay lossless (802.1Qbb headroom: cable, MTU and the peer's reaction time).
    pub max_headroom_bytes: u64,
    /// Time this port's egress had data but was held by a received PAUSE (the
    /// switch's clock: real time on veth; reports give it in virtual time too).
    #[serde(rename = "paused_real_ps")]
    pub paused_time: Duration,
    /// Bytes queued now (all priorities).
    pub queue_bytes: u64,
    /// Largest `queue_bytes` seen.
    pub max_queue_bytes: u64,
    /// Frames that could not be parsed or routed (counted and dropped).
    pub malformed: u64,
    /// Frames with no route (counted and dropped).
    pub unroutable: u64,
    /// Frames lost because this port went down while they were queued on it (a link
    /// failure loses what was on its way out).
    pub link_down_drops: u64,
    /// PFC storms the watchdog detected on this port's egress queues.
    pub pfcwd_storms: u64,
    /// Storms it restored.
    pub pfcwd_restored: u64,
    /// Frames the watchdog discarded (queued, or arriving, for a stormed queue).
    pub pfcwd_drops: u64,
}

#[derive(Debug)]
struct Queued {
    frame: Vec<u8>,
    in_port: usize,
    prio: u8,
}

#[derive(Debug)]
struct Port {
    queues: [VecDeque<Queued>; PRIORITIES],
    queue_bytes: [u64; PRIORITIES],
    free_at: Instant,
    control: VecDeque<Vec<u8>>,
    pfc_in: Option<PfcIngress>,
    pfc_out: PfcEgress,
    paused_since: Option<Instant>,
    up: bool,
    /// Fraction of the link rate the port runs at (1.0; less on a degraded link).
    fraction: f64,
    /// Data frames sent per priority (the watchdog's transmit counter).
    tx_by_prio: [u64; PRIORITIES],
    watch: [QueueWatch; PRIORITIES],
    /// ETS scheduler state (None: strict priority).
    ets: Option<cc_algos::ets::Ets>,
    c: PortCounters,
}

/// The switch.
#[derive(Debug)]
pub struct Switch {
    cfg: SwitchConfig,
    ports: Vec<Port>,
    used: u64,
    rng: ChaCha8Rng,
    /// Next watchdog poll.
    wd_next: Instant,
    /// Peak shared-buffer occupancy.
    pub max_buffer_used: u64,
}

/// What the switch reads from an IPv4 frame.
struct Class {
    src: Ipv4Addr,
    dst: Ipv4Addr,
    dscp: u8,
    /// UDP source port (RoCEv2's entropy value); 0 for other protocols.
    entropy: u16,
    /// A RoCE data packet (trimmable).
    data: bool,
}

/// The ECMP hash of a frame (splitmix64 of source, destination, entropy and the switch's
/// salt): the same inputs always choose the same member of a group.
pub fn ecmp_hash(src: Ipv4Addr, dst: Ipv4Addr, entropy: u16, salt: u64) -> u64 {
    let mut z = (u64::from(u32::from(src)) << 32 | u64::from(u32::from(dst)))
        ^ (u64::from(entropy)).rotate_left(17)
        ^ salt;
    for _ in 0..2 {
        z = z.wrapping_add(0x9e37_79b9_7f4a_7c15);
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^= z >> 31;
    }
    z
}

/// Parse what the switch needs from an IPv4 frame; `None` if malformed.
fn classify(frame: &[u8]) -> Option<Class> {
    let e = ethernet::checked(frame).ok()?;
    if ethernet::ethertype(&e) != ETHERTYPE_IPV4 {
        return None;
    }
    let ip = ipv4::checked(e.payload()).ok()?;
    if !ip.verify_checksum() {
        return None;
    }
    let u = (u8::from(ip.next_header()) == ipv4::PROTO_UDP)
        .then(|| udp::checked(ip.payload()).ok())
        .flatten();
    let data = u.as_ref().is_some_and(|u| {
        u.dst_port() == udp::ROCEV2_PORT && u.payload().first() == Some(&ib::opcode::RC_SEND_ONLY)
    });
    Some(Class {
        src: ip.src_addr(),
        dst: ip.dst_addr(),
        dscp: ip.dscp(),
        entropy: u.map_or(0, |u| u.src_port()),
        data,
    })
}

impl Switch {
    pub fn new(cfg: SwitchConfig) -> Switch {
        let ports = (0..cfg.port_macs.len())
            .map(|_| Port {
                queues: Default::default(),
                queue_bytes: [0; PRIORITIES],
                free_at: Instant::ZERO,
                control: VecDeque::new(),
                pfc_in: cfg.pfc.map(PfcIngress::new),
                pfc_out: PfcEgress::new(cfg.link_rate),
                paused_since: None,
                fraction: 1.0,
                up: true,
                tx_by_prio: [0; PRIORITIES],
                watch: Default::default(),
                ets: cfg.ets.as_ref().map(cc_algos::ets::Ets::new),
                c: PortCounters::default(),
            })
            .collect();
        let rng = ChaCha8Rng::seed_from_u64(cfg.seed);
        Switch {
            cfg,
            ports,
            used: 0,
            rng,
            wd_next: Instant::ZERO,
            max_buffer_used: 0,
        }
    }

    pub fn num_ports(&self) -> usize {
        self.ports.len()
    }

    pub fn counters(&self, port: usize) -> &PortCounters {
        &self.ports[port].c
    }

    /// Time `port` has been held by a received PAUSE up to `now`: its counter plus the
    /// pause in progress (the counter grows only when a pause ends).
    pub fn paused_time_at(&self, port: usize, now: Instant) -> Duration {
        let p = &self.ports[port];
        p.c.paused_time + p.paused_since.map_or(Duration::ZERO, |t| now - t)
    }

    /// Shared-buffer bytes in use.
    pub fn buffer_used(&self) -> u64 {
        self.used
    }

    fn pfc_frame(&mut self, port: usize, f: cc_algos::PfcFrame) {
        if self.cfg.pfc_priorities & (1 << f.priority) == 0 {
            return;
        }
        let p = &mut self.ports[port];
        if f.quanta == 0 {
            p.c.resumes_sent += 1;
        } else {
            p.c.pauses_sent += 1;
            p.c.pauses_sent_by_priority[f.priority as usize & 7] += 1;
        }
        let frame = pfc::Repr::single(f.priority, f.quanta).to_frame(self.cfg.port_macs[port]);
        p.control.push_back(frame.to_vec());
    }

    /// The egress port of a frame: its route's only port, or the ECMP hash's pick among
    /// the group's ports that are up. `None`: no route, or every port of it down.
    fn route(&self, cl: &Class) -> Option<usize> {
        let group = self.cfg.routes.get(&cl.dst)?;
        let n = self.ports.len();
        let live = |&&p: &&usize| p < n && self.ports[p].up;
        let k = group.iter().filter(live).count();
        if k == 0 {
            return None;
        }
        let h = ecmp_hash(cl.src, cl.dst, cl.entropy, self.cfg.ecmp_salt);
        group
            .iter()
            .filter(live)
            .nth((h % k as u64) as usize)
            .copied()
    }

    /// Replace the routing table (a re-route after a failure; frames already queued
    /// stay where they are).
    pub fn set_routes(&mut self, routes: HashMap<Ipv4Addr, Vec<usize>>) {
        self.cfg.routes = routes;
    }

    /// The routing table.
    pub fn routes(&self) -> &HashMap<Ipv4Addr, Vec<usize>> {
        &self.cfg.routes
    }

    /// Whether `port` is up.
    pub fn port_up(&self, port: usize) -> bool {
        self.ports[port].up
    }

    /// Take `port` down (its link failed) or bring it back. Down, it leaves every ECMP
    /// group at once (the local repair a switch does on loss of signal), the frames
    /// queued on it are lost (counted in [`PortCounters::link_down_drops`], their buffer
    /// and PFC ingress bytes released) and frames routed only through it are unroutable.
    pub fn set_port_up(&mut self, now: Instant, port: usize, up: bool) {
        self.ports[port].up = up;
        if up {
            return;
        }
        let lost = self.discard(now, port, None);
        let p = &mut self.ports[port];
        p.control.clear();
        p.paused_since = None;
        p.c.link_down_drops += lost;
    }

    /// Run `port` at `fraction` of the link rate (a degraded link; 1.0 restores it): its
    /// pacing slows and its ECN thresholds scale by the fraction (the queue is compared
    /// as `bytes / fraction`, as htsim's reduced-speed queues and the simulator do).
    /// A fraction outside (0, 1] is refused.
    pub fn set_port_fraction(&mut self, port: usize, fraction: f64) -> Result<(), String> {
        if !(fraction > 0.0 && fraction <= 1.0) {
            return Err(format!(
                "port {port}: rate fraction {fraction} is outside (0, 1]"
            ));
        }
        self.ports[port].fraction = fraction;
        Ok(())
    }

    /// Empty `port`'s queue of priority `prio` (all of them with `None`), releasing the
    /// frames' buffer and PFC ingress bytes; how many were discarded.
    fn discard(&mut self, now: Instant, port: usize, prio: Option<usize>) -> u64 {
        let lost: Vec<Queued> = self.ports[port]
            .queues
            .iter_mut()
            .enumerate()
            .filter(|(q, _)| prio.is_none_or(|p| p == *q))
            .flat_map(|(_, q)| q.drain(..))
            .collect();
        let n = lost.len() as u64;
        for q in lost {
            let len = q.frame.len() as u64;
            self.used -= len;
            let p = &mut self.ports[port];
            p.queue_bytes[q.prio as usize] -= len;
            p.c.queue_bytes -= len;
            let resume = self.ports[q.in_port]
                .pfc_in
                .as_mut()
                .and_then(|pi| pi.on_dequeue(now, q.prio, Bytes(len)));
            if let Some(f) = resume {
                self.pfc_frame(q.in_port, f);
            }
        }
        n
    }

    /// The PFC watchdog's poll, when due: feed every PFC queue's sample to its
    /// [`QueueWatch`]; a storm detected under `drop` discards the queue and (under
    /// `drop` or `forward`) lifts the pause the peer keeps sending.
    fn watchdog(&mut self, now: Instant) {
        let Some(cfg) = self.cfg.pfcwd else {
            return;
        };
        if now < self.wd_next {
            return;
        }
        self.wd_next = now + Duration::picos(cfg.detection.as_picos() / 4);
        for port in 0..self.ports.len() {
            for prio in 0..PRIORITIES {
                if self.cfg.pfc_priorities & (1 << prio) == 0 {
                    continue;
                }
                let p = &mut self.ports[port];
                let sample = QueueSample {
                    paused: p.pfc_out.is_paused(now, prio as u8),
                    queued_packets: p.queues[prio].len() as u64,
                    tx_packets: p.tx_by_prio[prio],
                    pfc_rx: p.c.pfc_received_by_priority[prio],
                };
                match p.watch[prio].on_sample(&cfg, now, sample) {
                    Verdict::StormDetected => {
                        p.c.pfcwd_storms += 1;
                        if p.watch[prio].ignore_pause(&cfg) {
                            let resume = cc_algos::PfcFrame {
                                priority: prio as u8,
                                quanta: 0,
                            };
                            p.pfc_out.on_frame(now, resume);
                        }
                        if p.watch[prio].drop_packets(&cfg) {
                            let n = self.discard(now, port, Some(prio));
                            self.ports[port].c.pfcwd_drops += n;
                        }
                    }
                    Verdict::StormRestored { .. } => p.c.pfcwd_restored += 1,
                    Verdict::None => {}
                }
            }
        }
    }

    /// Whether the watchdog holds `port`'s priority `prio` stormed with `what` applying.
    fn stormed(
        &self,
        port: usize,
        prio: usize,
        what: fn(&QueueWatch, &WatchdogConfig) -> bool,
    ) -> bool {
        self.cfg
            .pfcwd
            .is_some_and(|c| what(&self.ports[port].watch[prio], &c))
    }

    /// A frame arrived on `in_port` at `now`.
    pub fn on_frame(&mut self, now: Instant, in_port: usize, mut frame: Vec<u8>) {
        let len = frame.len() as u64;
        {
            let c = &mut self.ports[in_port].c;
            c.rx_packets += 1;
            c.rx_bytes += len;
        }
        // PFC / MAC control.
        if frame.len() >= ethernet::HEADER_LEN
            && ethernet::ethertype(&ethernet::Packet::new_unchecked(&frame[..]))
                == ETHERTYPE_MAC_CONTROL
        {
            match pfc::Repr::from_frame(&frame) {
                Ok(Some(r)) => {
                    // Priorities whose PAUSE frames the watchdog ignores (bit mask).
                    let ignored: u8 = (0..PRIORITIES)
                        .filter(|&prio| self.stormed(in_port, prio, QueueWatch::ignore_pause))
                        .fold(0, |m, prio| m | 1 << prio);
                    let port = &mut self.ports[in_port];
                    port.c.pfc_received += 1;
                    for prio in 0..PRIORITIES {
                        if r.class_enable & (1 << prio) != 0 && r.quanta[prio] > 0 {
                            port.c.pfc_received_by_priority[prio] += 1;
                        }
                        if r.class_enable & (1 << prio) != 0 && ignored & (1 << prio) == 0 {
                            port.pfc_out.on_frame(
                                now,
                                cc_algos::PfcFrame {
                                    priority: prio as u8,
                                    quanta: r.quanta[prio],
                                },
                            );
                        }
                    }
                }
                _ => self.ports[in_port].c.malformed += 1,
            }
            return;
        }
        let Some(cl) = classify(&frame) else {
            self.ports[in_port].c.malformed += 1;
            return;
        };
        let (dscp, is_data) = (cl.dscp, cl.data);
        let Some(out) = self.route(&cl) else {
            self.ports[in_port].c.unroutable += 1;
            return;
        };
        let mut prio = (dscp >> 3) & 7;
        // Trimming: cut the payload, keep the headers, send at the control priority.
        if is_data && let Some(t) = self.cfg.trim {
            let q = self.ports[out].queue_bytes[prio as usize];
            if let TrimDecision::Trim { .. } = t.decide(Bytes(q), Bytes(len)) {
                trim_frame(&mut frame);
                self.ports[out].c.trims += 1;
                prio = 6;
            }
        }
        let len = frame.len() as u64;
        if self.stormed(out, prio as usize, QueueWatch::drop_packets) {
            self.ports[out].c.pfcwd_drops += 1;
            return;
        }
        if self.used + len > self.cfg.buffer.0 {
            self.ports[out].c.drops += 1;
            return;
        }
        if let Some(mac) = self.cfg.next_hop_macs.get(out).copied().flatten() {
            ethernet::set_dst(&mut ethernet::Packet::new_unchecked(&mut frame[..]), mac);
        }
        if let Some(mac) = self.cfg.port_macs.get(out).copied() {
            ethernet::set_src(&mut ethernet::Packet::new_unchecked(&mut frame[..]), mac);
        }
        self.used += len;
        self.max_buffer_used = self.max_buffer_used.max(self.used);
        let pfc_req = self.ports[in_port]
            .pfc_in
            .as_mut()
            .and_then(|p| p.on_enqueue(now, prio, Bytes(len)));
        if let Some(pi) = &self.ports[in_port].pfc_in
            && pi.is_pausing(prio)
        {
            let above = pi.occupancy(prio).0.saturating_sub(pi.config().xoff.0);
            let c = &mut self.ports[in_port].c;
            c.max_headroom_bytes = c.max_headroom_bytes.max(above);
        }
        if let Some(f) = pfc_req {
            self.pfc_frame(in_port, f);
        }
        let p = &mut self.ports[out];
        p.queue_bytes[prio as usize] += len;
        p.c.queue_bytes += len;
        p.c.max_queue_bytes = p.c.max_queue_bytes.max(p.c.queue_bytes);
        p.queues[prio as usize].push_back(Queued {
            frame,
            in_port,
            prio,
        });
    }

    /// The next frame `port` may send at `now`: PFC frames first, then the highest
    /// non-paused priority (or ETS's choice), if the port's pacer allows.
    pub fn poll_transmit(&mut self, now: Instant, port: usize) -> Option<Vec<u8>> {
        if !self.ports[port].up {
            return None;
        }
        if let Some(f) = self.ports[port].control.pop_front() {
            let p = &mut self.ports[port];
            p.c.tx_packets += 1;
            p.c.tx_bytes += f.len() as u64;
            return Some(f);
        }
        let p = &mut self.ports[port];
        let rate = port_rate(self.cfg.link_rate, p.fraction);
        if now < p.free_at {
            return None;
        }
        let mut any_paused = false;
        let mut pick = None;
        if let Some(ets) = p.ets.as_mut() {
            let heads = p
                .queues
                .each_ref()
                .map(|q| q.front().map(|f| f.frame.len() as u64));
            pick = crate::ets::select(ets, now, &p.pfc_out, heads);
        }
        let scan = if pick.is_some() { 0 } else { PRIORITIES };
        for prio in (0..scan).rev() {
            if p.queues[prio].is_empty() {
                continue;
            }
            if p.pfc_out.is_paused(now, prio as u8) {
                any_paused = true;
                continue;
            }
            pick = Some(prio);
            break;
        }
        // Paused-time accounting: the port had data it could not send.
        match (pick, any_paused, p.paused_since) {
            (None, true, None) => p.paused_since = Some(now),
            (Some(_), _, Some(t)) | (None, false, Some(t)) => {
                p.c.paused_time += now - t;
                p.paused_since = None;
            }
            _ => {}
        }
        let prio = pick?;
        let q = p.queues[prio].pop_front().expect("non-empty");
        let len = q.frame.len() as u64;
        p.queue_bytes[prio] -= len;
        p.c.queue_bytes -= len;
        p.c.tx_packets += 1;
        p.c.tx_bytes += len;
        p.tx_by_prio[prio] += 1;
        // Pace: the port is busy for the frame's serialisation time. A loop that wakes
        // late may catch up by at most `pacing_burst` (a token bucket of that depth),
        // so OS wake-up latency does not lower the link rate.
        let tx = rate.tx_time(Bytes(len + WIRE_OVERHEAD));
        p.free_at = p.free_at.max(now - self.cfg.pacing_burst) + tx;
        let in_port = q.in_port;
        let mut frame = q.frame;
        if self.cfg.int {
            // HPCC's INT: what the frame leaves behind, the counter with it included.
            let hop = crate::int::Hop {
                ts_ns: now.nanos(),
                tx_bytes: p.c.tx_bytes,
                qlen: p.c.queue_bytes.min(u64::from(u32::MAX)) as u32,
                rate_mbps: (rate.as_bps() / 1_000_000).min(u64::from(u32::MAX)) as u32,
                port: crate::int::port_id(self.cfg.port_macs[port]),
            };
            crate::int::stamp(&mut frame, hop);
        }
        self.mark_at_dequeue(port, prio, &mut frame);
        self.used -= len;
        let resume = self.ports[in_port]
            .pfc_in
            .as_mut()
            .and_then(|pi| pi.on_dequeue(now, q.prio, Bytes(len)));
        if let Some(f) = resume {
            self.pfc_frame(in_port, f);
        }
        Some(frame)
    }

    /// ECN (the CP) as a data frame leaves `port`'s queue `prio`: RED on the bytes it
    /// leaves behind in that queue, as the simulator marks (`sim`'s `mark_at_dequeue`),
    /// so a mark tells the receiver the queue as it is when the frame departs, not as it
    /// was a whole queueing delay earlier. On a degraded port the depth is seen by
    /// thresholds scaled by its fraction, as htsim and the simulator scale them.
    fn mark_at_dequeue(&mut self, port: usize, prio: usize, frame: &mut [u8]) {
        let Some(red) = self.cfg.ecn else {
            return;
        };
        let p = &self.ports[port];
        let left = (p.queue_bytes[prio] as f64 / p.fraction) as u64;
        let u: f64 = self.rng.random();
        if red.should_mark(Bytes(left), u) && frame.len() > ethernet::HEADER_LEN {
            let mut ip = ipv4::Packet::new_unchecked(&mut frame[ethernet::HEADER_LEN..]);
            if ipv4::ecn(&ip) != Ecn::NotEct {
                ipv4::set_ecn(&mut ip, Ecn::Ce);
                self.ports[port].c.ecn_marks += 1;
            }
        }
    }

    /// PFC refresh timers; call at [`Switch::next_wakeup`].
    pub fn on_timeout(&mut self, now: Instant) {
        self.watchdog(now);
        for port in 0..self.ports.len() {
            loop {
                let f = match self.ports[port].pfc_in.as_mut() {
                    Some(pi) if pi.next_timeout().is_some_and(|t| t <= now) => pi.on_timeout(now),
                    _ => None,
                };
                match f {
                    Some(f) => self.pfc_frame(port, f),
                    None => break,
                }
            }
        }
    }

    /// Whether `port` has a frame it could send (ignoring the pacer and pauses).
    pub fn has_pending(&self, port: usize) -> bool {
        let p = &self.ports[port];
        !p.control.is_empty() || p.queues.iter().any(|q| !q.is_empty())
    }

    /// The earliest instant something may happen without a new arrival.
    pub fn next_wakeup(&self, now: Instant) -> Option<Instant> {
        let mut t: Option<Instant> = None;
        let mut upd = |x: Instant| t = Some(t.map_or(x, |y: Instant| y.min(x)));
        if self.cfg.pfcwd.is_some() {
            upd(self.wd_next);
        }
        for p in self.ports.iter().filter(|p| p.up) {
            if !p.control.is_empty() {
                upd(now);
            }
            for prio in 0..PRIORITIES {
                if p.queues[prio].is_empty() {
                    continue;
                }
                let at = p
                    .pfc_out
                    .resume_at(now, prio as u8)
                    .unwrap_or(now)
                    .max(p.free_at);
                upd(at);
            }
            if let Some(pi) = &p.pfc_in
                && let Some(x) = pi.next_timeout()
            {
                upd(x);
            }
        }
        t
    }
}

/// The rate of a port running at `fraction` of `link`.
fn port_rate(link: Rate, fraction: f64) -> Rate {
    if fraction >= 1.0 {
        link
    } else {
        Rate::bps(((link.as_bps() as f64 * fraction) as u64).max(1))
    }
}

/// Cut a RoCE data frame to its headers (Ethernet/IPv4/UDP/BTH, 54 B) plus a fresh
/// ICRC (58 B in all): the receiver sees a valid packet with no payload, which it
/// recognises as trimmed and NAKs. Lengths and the IPv4 checksum are fixed up.
fn trim_frame(frame: &mut Vec<u8>) {
    let hdr = ethernet::HEADER_LEN + ipv4::HEADER_LEN + udp::HEADER_LEN + ib::BTH_LEN;
    frame.truncate(hdr);
    let ip_len = hdr + ib::ICRC_LEN - ethernet::HEADER_LEN;
    let ip = &mut frame[ethernet::HEADER_LEN..];
    ip[2..4].copy_from_slice(&(ip_len as u16).to_be_bytes());
    ipv4::Packet::new_unchecked(&mut *ip).fill_checksum();
    let udp_len = (ip_len - ipv4::HEADER_LEN) as u16;
    ip[ipv4::HEADER_LEN + 4..ipv4::HEADER_LEN + 6].copy_from_slice(&udp_len.to_be_bytes());
    let crc = ib::icrc_ipv4(&frame[ethernet::HEADER_LEN..]);
    frame.extend_from_slice(&crc.to_le_bytes());
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wire::roce;

    fn data_frame(dst: Ipv4Addr, payload: usize, ecn: Ecn) -> Vec<u8> {
        let mut r = roce::Repr::send_only(Ipv4Addr::new(10, 0, 0, 9), dst, 1000, payload);
        r.ecn = ecn;
        r.to_frame()
    }

    fn cfg(ports: usize) -> SwitchConfig {
        let routes = (0..ports)
            .map(|i| (Ipv4Addr::new(10, 0, 0, i as u8 + 1), vec![i]))
            .collect();
        SwitchConfig::new(
            (0..ports).map(|i| [2, 0xaa, 0, 0, 0, i as u8]).collect(),
            Rate::gbps(1),
            Bytes(100_000),
            routes,
        )
    }

    fn t(us: u64) -> Instant {
        Instant::ZERO + Duration::micros(us)
    }

    #[test]
    fn forwards_by_destination_and_paces_at_link_rate() {
        let mut c = cfg(3);
        c.pacing_burst = Duration::micros(10);
        let mut s = Switch::new(c);
        let dst = Ipv4Addr::new(10, 0, 0, 3);
        for _ in 0..3 {
            s.on_frame(t(0), 0, data_frame(dst, 1000, Ecn::Ect0));
        }
        let f = s.poll_transmit(t(0), 2).expect("first frame at once");
        assert_eq!(roce::Repr::parse(&f).unwrap().0.ip_dst, dst);
        // (1058 + 24) B at 1 Gb/s = 8.656 µs: nothing before that.
        assert!(s.poll_transmit(t(8), 2).is_none());
        assert!(s.poll_transmit(t(9), 2).is_some());
        // Sent 0.344 µs late: the token bucket keeps the schedule (next at 2 × 8.656 µs).
        assert_eq!(
            s.next_wakeup(t(9)),
            Some(Instant::ZERO + Duration::nanos(17_312))
        );
        assert!(s.poll_transmit(t(18), 2).is_some());
        assert_eq!(s.counters(2).tx_packets, 3);
        assert_eq!(s.counters(0).rx_packets, 3);
        assert_eq!(s.buffer_used(), 0);
    }

    /// A data frame to `dst` at `prio` (DSCP = class selector `prio << 3`).
    fn frame_at(dst: Ipv4Addr, payload: usize, prio: u8) -> Vec<u8> {
        let mut r = roce::Repr::send_only(Ipv4Addr::new(10, 0, 0, 9), dst, 1000, payload);
        r.dscp = prio << 3;
        r.to_frame()
    }

    #[test]
    fn ets_shares_an_egress_by_weight_and_strict_goes_first() {
        let dst = Ipv4Addr::new(10, 0, 0, 3);
        let mut c = cfg(3);
        c.buffer = Bytes(10_000_000);
        c.ets = Some(cc_algos::ets::EtsConfig::from_weights([0, 70, 30, 0, 0, 0, 0, 0]).unwrap());
        let mut s = Switch::new(c);
        // Priority 1 from port 0, priority 2 from port 1, always backlogged; a frame of
        // the strict control priority 6 arrives half way.
        for _ in 0..1_000 {
            s.on_frame(t(0), 0, frame_at(dst, 1000, 1));
            s.on_frame(t(0), 1, frame_at(dst, 1000, 2));
        }
        let mut sent = [0u64; 8];
        let mut now = t(0);
        for i in 0..1_000 {
            if i == 500 {
                s.on_frame(now, 0, frame_at(dst, 1000, 6));
            }
            now = s.next_wakeup(now).unwrap().max(now);
            let f = s.poll_transmit(now, 2).expect("work conserving");
            let prio = (roce::Repr::parse(&f).unwrap().0.dscp >> 3) as usize;
            if i == 500 {
                assert_eq!(prio, 6, "strict priority first");
            }
            sent[prio] += f.len() as u64;
        }
        let share = sent[1] as f64 / (sent[1] + sent[2]) as f64;
        assert!(
            (share - 0.7).abs() < 0.02,
            "priority 1 got {share}: {sent:?}"
        );
        // Without ETS, strict priority: priority 2 only.
        let mut s = Switch::new(cfg(3));
        for _ in 0..10 {
            s.on_frame(t(0), 0, frame_at(dst, 1000, 1));
            s.on_frame(t(0), 1, frame_at(dst, 1000, 2));
        }
        let f = s.poll_transmit(t(0), 2).unwrap();
        assert_eq!(roce::Repr::parse(&f).unwrap().0.dscp >> 3, 2);
    }

    #[test]
    fn int_records_the_queue_left_behind_the_tx_counter_and_the_departure() {
        let mut c = cfg(3);
        c.int = true;
        let mut s = Switch::new(c);
        let dst = Ipv4Addr::new(10, 0, 0, 3);
        let f = data_frame(dst, 1000, Ecn::Ect0);
        let len = f.len() as u64;
        s.on_frame(t(0), 0, f.clone());
        s.on_frame(t(0), 1, f);
        let first = s.poll_transmit(t(0), 2).unwrap();
        let second = s.poll_transmit(t(9), 2).unwrap();
        let hop = |f: &[u8]| {
            let (_, payload) = roce::Repr::parse(f).expect("valid ICRC after the stamp");
            let v: Vec<crate::int::Hop> =
                crate::int::hops(crate::int::records_of_data(payload)).collect();
            assert_eq!(v.len(), 1);
            v[0]
        };
        let (a, b) = (hop(&first), hop(&second));
        assert_eq!((a.qlen, a.tx_bytes, a.ts_ns), (len as u32, len, 0));
        assert_eq!((b.qlen, b.tx_bytes, b.ts_ns), (0, 2 * len, 9_000));
        assert_eq!(a.rate_mbps, 1000);
        // Without INT the switch leaves the payload alone.
        let mut s = Switch::new(cfg(3));
        s.on_frame(t(0), 0, data_frame(dst, 1000, Ecn::Ect0));
        let f = s.poll_transmit(t(0), 2).unwrap();
        let (_, payload) = roce::Repr::parse(&f).unwrap();
        assert!(crate::int::records_of_data(payload).is_empty());
    }

    #[test]
    fn full_buffer_drops_and_counts() {
        let mut s = Switch::new(cfg(2));
        for _ in 0..200 {
            s.on_frame(
                t(0),
                0,
                data_frame(Ipv4Addr::new(10, 0, 0, 2), 1000, Ecn::Ect0),
            );
        }
        let c = s.counters(1);
        assert_eq!(c.drops, 200 - 100_000 / 1058);
        assert!(s.buffer_used() <= 100_000);
    }

    #[test]
    fn ecn_marks_above_kmax_with_valid_checksum() {
        let mut c = cfg(2);
        c.ecn = Some(RedEcn::new(Bytes(2000), Bytes(4000), 1.0).unwrap());
        let mut s = Switch::new(c);
        for _ in 0..10 {
            s.on_frame(
                t(0),
                0,
                data_frame(Ipv4Addr::new(10, 0, 0, 2), 1000, Ecn::Ect0),
            );
        }
        assert_eq!(
            s.counters(1).ecn_marks,
            0,
            "nothing is marked on the way in"
        );
        // Bytes each frame leaves behind as it departs: 9522, 8464, ..., 1058, 0: the
        // first six leave more than Kmax and are always marked, the last two less than
        // Kmin and never.
        let mut marked = Vec::new();
        for i in 0..10 {
            let f = s.poll_transmit(t(100 * i), 1).unwrap();
            let (r, _) = roce::Repr::parse(&f).expect("checksums and ICRC still valid");
            marked.push(r.ecn == Ecn::Ce);
        }
        assert_eq!(&marked[..6], &[true; 6]);
        assert_eq!(&marked[8..], &[false; 2]);
        let n = marked.iter().filter(|&&m| m).count() as u64;
        assert_eq!(n, s.counters(1).ecn_marks);
    }

    #[test]
    fn a_frame_is_marked_by_the_queue_it_leaves_not_the_one_it_joined() {
        // As the simulator marks: the frame at the head of a long queue carries the
        // congestion to the receiver now; the last frame of the burst leaves an empty
        // queue and is not marked (marking on arrival had it the other way round).
        let mut c = cfg(2);
        c.ecn = Some(RedEcn::step(Bytes(4000)));
        let mut s = Switch::new(c);
        for _ in 0..10 {
            s.on_frame(
                t(0),
                0,
                data_frame(Ipv4Addr::new(10, 0, 0, 2), 1000, Ecn::Ect0),
            );
        }
        let ce = |f: Vec<u8>| roce::Repr::parse(&f).unwrap().0.ecn == Ecn::Ce;
        assert!(
            ce(s.poll_transmit(t(0), 1).unwrap()),
            "first out: 9522 B behind it"
        );
        for i in 1..9 {
            s.poll_transmit(t(100 * i), 1).unwrap();
        }
        assert!(
            !ce(s.poll_transmit(t(900), 1).unwrap()),
            "last out: 0 B behind it"
        );
        assert_eq!(s.counters(1).ecn_marks, 6);
    }

    #[test]
    fn a_degraded_port_marks_at_thresholds_scaled_by_its_fraction() {
        // Step marking at 4000 B on the bytes a departing frame leaves behind (9522,
        // 8464, ..., 1058, 0): at full rate the first six are marked (down to 4232 B);
        // at half rate the queue counts double, so the first eight (down to 2116 B).
        let marks = |fraction: f64| {
            let mut c = cfg(2);
            c.ecn = Some(RedEcn::step(Bytes(4000)));
            let mut s = Switch::new(c);
            s.set_port_fraction(1, fraction).unwrap();
            for _ in 0..10 {
                s.on_frame(
                    t(0),
                    0,
                    data_frame(Ipv4Addr::new(10, 0, 0, 2), 1000, Ecn::Ect0),
                );
            }
            for i in 0..10 {
                s.poll_transmit(t(100 * i), 1).unwrap();
            }
            s.counters(1).ecn_marks
        };
        assert_eq!((marks(1.0), marks(0.5)), (6, 8));
        let mut s = Switch::new(cfg(2));
        assert!(s.set_port_fraction(1, 0.0).unwrap_err().contains("(0, 1]"));
    }

    #[test]
    fn pfc_pauses_the_ingress_and_resumes_it() {
        let mut c = cfg(3);
        c.pfc = Some(PfcConfig::new(Bytes(5000), Bytes(2000), 0xffff, Rate::gbps(1)).unwrap());
        let mut s = Switch::new(c);
        for _ in 0..6 {
            s.on_frame(
                t(0),
                0,
                data_frame(Ipv4Addr::new(10, 0, 0, 3), 1000, Ecn::Ect0),
            );
        }
        // XOFF crossed on port 0 (ingress): a PFC frame for priority 3 goes out of port 0.
        let f = s.poll_transmit(t(0), 0).expect("pause frame");
        assert_eq!(
            pfc::Repr::from_frame(&f).unwrap(),
            Some(pfc::Repr::single(3, 0xffff))
        );
        assert_eq!(s.counters(0).pauses_sent, 1);
        assert_eq!(
            s.counters(0).pauses_sent_by_priority,
            [0, 0, 0, 1, 0, 0, 0, 0]
        );
        // Headroom: the 5th frame crossed XOFF, the 6th still arrived after the pause.
        let len = data_frame(Ipv4Addr::new(10, 0, 0, 3), 1000, Ecn::Ect0).len() as u64;
        assert!(5 * len >= 5000 && 4 * len < 5000);
        assert_eq!(s.counters(0).max_headroom_bytes, 6 * len - 5000);
        assert_eq!(s.counters(1).max_headroom_bytes, 0);
        // Drain port 2 until the ingress count falls to XON: a resume follows.
        let mut now = 0;
        while s.poll_transmit(t(now), 2).is_some() || s.has_pending(2) {
            now += 10;
            if let Some(f) = s.poll_transmit(t(now), 0) {
                assert_eq!(
                    pfc::Repr::from_frame(&f).unwrap(),
                    Some(pfc::Repr::single(3, 0))
                );
            }
        }
        assert_eq!(s.counters(0).resumes_sent, 1);
    }

    #[test]
    fn received_pause_holds_the_egress_and_is_timed() {
        let mut s = Switch::new(cfg(2));
        let pause = pfc::Repr::single(3, 0xffff).to_frame([2, 0, 0, 0, 0, 7]);
        s.on_frame(t(0), 1, pause.to_vec());
        s.on_frame(
            t(0),
            0,
            data_frame(Ipv4Addr::new(10, 0, 0, 2), 1000, Ecn::Ect0),
        );
        assert!(s.poll_transmit(t(1), 1).is_none());
        assert!(s.poll_transmit(t(1000), 1).is_none());
        let resume = pfc::Repr::single(3, 0).to_frame([2, 0, 0, 0, 0, 7]);
        s.on_frame(t(2000), 1, resume.to_vec());
        assert!(s.poll_transmit(t(2001), 1).is_some());
        assert_eq!(s.counters(1).pfc_received, 2);
        // The resume is a PFC frame but not a pause.
        assert_eq!(
            s.counters(1).pfc_received_by_priority,
            [0, 0, 0, 1, 0, 0, 0, 0]
        );
        assert_eq!(s.counters(1).paused_time, Duration::micros(2000));
    }

    #[test]
    fn trimming_cuts_payload_and_keeps_valid_headers() {
        let mut c = cfg(2);
        c.trim = Some(TrimPolicy::new(Bytes(3000), Bytes(64)).unwrap());
        let mut s = Switch::new(c);
        for _ in 0..4 {
            s.on_frame(
                t(0),
                0,
                data_frame(Ipv4Addr::new(10, 0, 0, 2), 1000, Ecn::Ect0),
            );
        }
        assert_eq!(s.counters(1).trims, 2);
        // The trimmed frames go first (control priority 6).
        let f = s.poll_transmit(t(0), 1).unwrap();
        assert_eq!(f.len(), 14 + 20 + 8 + 12 + 4);
        let (r, payload) = roce::Repr::parse(&f).expect("a valid RoCE frame (ICRC recomputed)");
        assert!(payload.is_empty());
        assert_eq!(r.dscp >> 3, 3, "DSCP unchanged, only the queue differs");
    }

    #[test]
    fn the_watchdog_breaks_a_storm_after_its_detection_time() {
        let mut c = cfg(2);
        c.pfc = Some(PfcConfig::new(Bytes(50_000), Bytes(20_000), 0xffff, Rate::gbps(1)).unwrap());
        c.pfcwd = Some(
            WatchdogConfig::new(
                Duration::millis(100),
                Duration::millis(200),
                cc_algos::pfcwd::Action::Drop,
            )
            .unwrap(),
        );
        let mut s = Switch::new(c);
        let dst = Ipv4Addr::new(10, 0, 0, 2);
        let pause = pfc::Repr::single(3, 0xffff).to_frame([2, 0, 0, 0, 0, 7]);
        let ms = |m: u64| t(m * 1000);
        // The peer of port 1 pauses priority 3 every 10 ms and never stops.
        for m in (0..=150).step_by(10) {
            s.on_frame(ms(m), 1, pause.to_vec());
            s.on_frame(ms(m), 0, data_frame(dst, 1000, Ecn::Ect0));
            s.on_timeout(ms(m));
            assert!(s.poll_transmit(ms(m), 1).is_none(), "paused at {m} ms");
            if s.counters(1).pfcwd_storms > 0 {
                break;
            }
        }
        let c1 = s.counters(1).clone();
        assert_eq!(c1.pfcwd_storms, 1, "detected: {c1:?}");
        assert!(
            c1.pfcwd_drops > 0 && c1.queue_bytes == 0,
            "the stormed queue is dropped"
        );
        assert_eq!(s.buffer_used(), 0);
        // Stormed: arrivals are dropped and further PAUSE frames are ignored.
        s.on_frame(ms(160), 1, pause.to_vec());
        s.on_frame(ms(160), 0, data_frame(dst, 1000, Ecn::Ect0));
        assert_eq!(s.counters(1).pfcwd_drops, c1.pfcwd_drops + 1);
        assert!(!s.has_pending(1));
    }

    proptest::proptest! {
        #[test]
        fn garbage_is_counted_never_panics(data in proptest::collection::vec(proptest::num::u8::ANY, 0..300)) {
            let mut s = Switch::new(cfg(2));
            s.on_frame(t(0), 0, data);
            let c = s.counters(0);
            proptest::prop_assert_eq!(c.rx_packets, 1);
            let _ = s.poll_transmit(t(1), 1);
        }
    }
}
