//! RoCEv2 endpoints, sans-IO: a [`Host`] sends the data of its flows as RC SEND Only
//! packets paced by a `cc-algos` sender controller, answers data with ACKs (AETH) and,
//! through a `cc-algos` receiver controller (the DCQCN NP), with CNPs (BTH opcode 0x81).
//! Loss recovery is RoCE's go-back-N: the receiver accepts only the expected PSN and
//! NAKs (AETH syndrome "PSN sequence error") the first gap; the sender rewinds to the
//! NAKed PSN, or to the last acknowledged PSN when its retransmission timer fires.
//!
//! # Time scaling
//! The engine runs links at rates the userspace code sustains (e.g. 1 Gb/s) while the
//! congestion control keeps the parameters of the fabric it was tuned for (e.g. 100 Gb/s).
//! With `S = virtual rate / real rate`, the controller sees **virtual time = real time / S**
//! and its **virtual rate is paced at rate / S**; bytes are not scaled. Then every
//! product the algorithms depend on is preserved: bytes sent per timer period
//! (rate × time), queue bytes (ECN Kmin/Kmax, PFC XOFF, buffer), the byte counter, and
//! RTT in units of packet times. A 55 µs DCQCN timer is 5.5 ms of real time at S = 100.
//! Reports convert back to virtual time so they compare with the simulator directly.
//!
//! Packet payload (after the BTH): 8 bytes of the sender's timestamp (real ns since the
//! engine's start), then zeros. ACK payload: the echoed timestamp, then a 4-byte count
//! of CE-marked packets since the previous ACK (the ECN echo DCTCP-style senders need).

use std::collections::HashMap;
use std::net::Ipv4Addr;

use cc_algos::{
    Ack, AnyCc, Bytes, DataArrival, Duration, Feedback, Instant, PfcEgress, Rate, ReceiverCc,
    SenderCc,
};

use super::wire::ethernet::{self, ETHERTYPE_IPV4, ETHERTYPE_MAC_CONTROL, Mac};
use super::wire::ib::{AethRepr, BthRepr, DEFAULT_PKEY, Syndrome, opcode};
use super::wire::ipv4::Ecn;
use super::wire::{pfc, roce};

/// DSCP of CNPs and ACKs (class 6: strict priority above data, never paused).
pub const CONTROL_DSCP: u8 = 48;
/// Offset added to a flow id to form its QP number (QPs 0 and 1 are special in IB).
pub const QP_BASE: u32 = 16;

/// Time scale between the wire (real) and the congestion control (virtual).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TimeScale(pub u64);

impl TimeScale {
    pub fn to_virtual(self, real: Instant) -> Instant {
        Instant::from_picos(real.picos() / self.0)
    }
    pub fn to_real(self, virt: Instant) -> Instant {
        Instant::from_picos(virt.picos().saturating_mul(self.0))
    }
    pub fn dur_to_virtual(self, d: Duration) -> Duration {
        Duration::picos(d.as_picos() / self.0)
    }
    pub fn dur_to_real(self, d: Duration) -> Duration {
        Duration::picos(d.as_picos().saturating_mul(self.0))
    }
    pub fn rate_to_real(self, r: Rate) -> Rate {
        Rate::bps(r.as_bps() / self.0)
    }
}

/// A receiver-side controller the host can own (DCQCN NP, RCCC receiver).
pub trait Receiver: ReceiverCc + Send + std::fmt::Debug {}
impl<T: ReceiverCc + Send + std::fmt::Debug> Receiver for T {}

/// A flow this host sends.
#[derive(Debug)]
pub struct SendFlow {
    pub id: u32,
    pub dst_ip: Ipv4Addr,
    pub dscp: u8,
    /// Bytes to deliver, or `None` for a long-lived flow.
    pub size: Option<u64>,
    /// Real start time.
    pub start: Instant,
    /// Real stop time for long-lived flows.
    pub stop: Option<Instant>,
    /// Flows that must complete first.
    pub after: Vec<u32>,
    pub cc: AnyCc,
    next_psn: u32,
    acked_psn: u32,
    next_at: Instant,
    last_progress: Instant,
    /// Payload bytes sent (including retransmissions).
    pub sent_bytes: u64,
    pub retransmits: u64,
    pub cnps: u64,
    pub naks: u64,
    pub timeouts: u64,
}

/// What a receiver knows of one flow.
#[derive(Debug, Clone, Default, serde::Serialize)]
pub struct RecvFlow {
    /// In-order payload bytes delivered.
    pub bytes: u64,
    pub expected_psn: u32,
    pub ce_packets: u64,
    pub out_of_order: u64,
    /// Trimmed packets received (headers only).
    pub trimmed: u64,
    /// Real time of the last in-order byte.
    pub last_rx: Option<Instant>,
    /// Real time the flow completed (all `size` bytes), if sized.
    pub completed: Option<Instant>,
    #[serde(skip)]
    nak_outstanding: bool,
    #[serde(skip)]
    ce_since_ack: u32,
}

/// Endpoint counters.
#[derive(Debug, Clone, Default, serde::Serialize)]
pub struct HostCounters {
    pub tx_packets: u64,
    pub rx_packets: u64,
    pub acks_sent: u64,
    pub cnps_sent: u64,
    pub naks_sent: u64,
    pub pfc_received: u64,
    /// Frames that failed to parse (bad ICRC, truncated, ...): counted and dropped.
    pub malformed: u64,
    /// Frames for unknown flows.
    pub unknown_flow: u64,
}

/// Host parameters.
#[derive(Debug, Clone)]
pub struct HostConfig {
    pub mac: Mac,
    pub ip: Ipv4Addr,
    /// MAC of the switch port the host is attached to.
    pub gateway_mac: Mac,
    /// Real NIC rate.
    pub link_rate: Rate,
    pub scale: TimeScale,
    /// RoCE payload bytes per data packet (multiple of 4).
    pub payload: usize,
    /// Request an ACK every this many packets.
    pub ack_every: u32,
    /// Retransmission timeout (real time).
    pub rto: Duration,
    /// Depth of the NIC's and each flow's pacing token bucket (real time): how much a
    /// late event loop may catch up at once.
    pub pacing_burst: Duration,
}

/// One host: its flows, its receiver state, its NIC pacing and PFC state.
#[derive(Debug)]
pub struct Host {
    pub cfg: HostConfig,
    pub flows: Vec<SendFlow>,
    pub recv: HashMap<u32, RecvFlow>,
    /// Sizes of flows this host receives (for completion).
    pub recv_sizes: HashMap<u32, Option<u64>>,
    /// Source address of each flow this host receives (for feedback).
    pub recv_src: HashMap<u32, Ipv4Addr>,
    np: Box<dyn Receiver>,
    nic_free_at: Instant,
    pfc: PfcEgress,
    control: Vec<Vec<u8>>,
    rr: usize,
    zeros: Vec<u8>,
    pub c: HostCounters,
}

/// Completion state shared by all hosts of an engine (for `after` dependencies).
pub type Completed = std::collections::HashSet<u32>;

impl Host {
    pub fn new(cfg: HostConfig, np: Box<dyn Receiver>) -> Host {
        let zeros = vec![0u8; cfg.payload];
        Host {
            pfc: PfcEgress::new(cfg.link_rate),
            cfg,
            flows: Vec::new(),
            recv: HashMap::new(),
            recv_sizes: HashMap::new(),
            recv_src: HashMap::new(),
            np,
            nic_free_at: Instant::ZERO,
            control: Vec::new(),
            rr: 0,
            zeros,
            c: HostCounters::default(),
        }
    }

    /// Add a flow to send.
    #[allow(clippy::too_many_arguments)]
    pub fn add_send_flow(
        &mut self,
        id: u32,
        dst_ip: Ipv4Addr,
        priority: u8,
        size: Option<u64>,
        start: Instant,
        stop: Option<Instant>,
        after: Vec<u32>,
        cc: AnyCc,
    ) {
        self.flows.push(SendFlow {
            id,
            dst_ip,
            dscp: (priority & 7) << 3,
            size,
            start,
            stop,
            after,
            cc,
            next_psn: 0,
            acked_psn: 0,
            next_at: start,
            last_progress: start,
            sent_bytes: 0,
            retransmits: 0,
            cnps: 0,
            naks: 0,
            timeouts: 0,
        });
    }

    /// Expect flow `id` of `size` bytes from `src`.
    pub fn add_recv_flow(&mut self, id: u32, src: Ipv4Addr, size: Option<u64>) {
        self.recv_sizes.insert(id, size);
        self.recv_src.insert(id, src);
        self.recv.insert(id, RecvFlow::default());
    }

    fn packets_of(&self, f: &SendFlow) -> Option<u32> {
        f.size
            .map(|s| s.div_ceil(self.cfg.payload as u64).max(1) as u32)
    }

    fn flow_finished_sending(&self, f: &SendFlow, now: Instant) -> bool {
        match (self.packets_of(f), f.stop) {
            (Some(n), _) => f.acked_psn >= n,
            (None, Some(stop)) => now >= stop,
            (None, None) => false,
        }
    }

    /// Whether every flow this host sends has finished (acknowledged or stopped).
    pub fn senders_done(&self, now: Instant) -> bool {
        self.flows
            .iter()
            .all(|f| self.flow_finished_sending(f, now))
    }

    fn feedback_frame(
        &self,
        dst_ip: Ipv4Addr,
        flow: u32,
        op: u8,
        aeth: Option<AethRepr>,
        payload: &[u8],
    ) -> Vec<u8> {
        let r = roce::Repr {
            eth_dst: self.cfg.gateway_mac,
            eth_src: self.cfg.mac,
            ip_src: self.cfg.ip,
            ip_dst: dst_ip,
            dscp: CONTROL_DSCP,
            ecn: Ecn::NotEct,
            ttl: 64,
            ident: 0,
            udp_src: 0xc000 | (flow as u16 & 0x3fff),
            bth: BthRepr {
                opcode: op,
                solicited: false,
                pad_count: 0,
                pkey: DEFAULT_PKEY,
                dest_qp: QP_BASE + flow,
                ack_req: false,
                psn: aeth.map_or(0, |a| a.msn),
            },
            aeth,
            payload_len: payload.len(),
        };
        let mut b = vec![0u8; r.buffer_len()];
        r.emit(&mut b, payload);
        b
    }

    /// A frame arrived at real time `now`.
    pub fn on_frame(&mut self, now: Instant, frame: &[u8]) {
        self.c.rx_packets += 1;
        let Ok(e) = ethernet::Packet::new_checked(frame) else {
            self.c.malformed += 1;
            return;
        };
        match e.ethertype() {
            ETHERTYPE_MAC_CONTROL => match pfc::Repr::from_frame(frame) {
                Ok(Some(r)) => {
                    self.c.pfc_received += 1;
                    for prio in 0..8u8 {
                        if r.class_enable & (1 << prio) != 0 {
                            self.pfc.on_frame(
                                now,
                                cc_algos::PfcFrame {
                                    priority: prio,
                                    quanta: r.quanta[prio as usize],
                                },
                            );
                        }
                    }
                }
                _ => self.c.malformed += 1,
            },
            ETHERTYPE_IPV4 => self.on_roce(now, frame),
            _ => self.c.malformed += 1,
        }
    }

    fn on_roce(&mut self, now: Instant, frame: &[u8]) {
        let Ok((r, payload)) = roce::Repr::parse(frame) else {
            self.c.malformed += 1;
            return;
        };
        if r.bth.dest_qp < QP_BASE {
            self.c.unknown_flow += 1;
            return;
        }
        let flow = r.bth.dest_qp - QP_BASE;
        let vnow = self.cfg.scale.to_virtual(now);
        match r.bth.opcode {
            opcode::RC_SEND_ONLY => self.on_data(now, flow, &r, payload),
            opcode::CNP => {
                if let Some(f) = self.flows.iter_mut().find(|f| f.id == flow) {
                    f.cnps += 1;
                    f.cc.on_cnp(vnow);
                } else {
                    self.c.unknown_flow += 1;
                }
            }
            opcode::RC_ACK => {
                let Some(a) = r.aeth else {
                    self.c.malformed += 1;
                    return;
                };
                let payload_sz = self.cfg.payload as u64;
                let scale = self.cfg.scale;
                let Some(f) = self.flows.iter_mut().find(|f| f.id == flow) else {
                    self.c.unknown_flow += 1;
                    return;
                };
                let ts = payload
                    .get(..8)
                    .map(|b| u64::from_be_bytes(b.try_into().expect("8")));
                let ce = payload
                    .get(8..12)
                    .map_or(0, |b| u32::from_be_bytes(b.try_into().expect("4")));
                match a.syndrome {
                    Syndrome::Ack { .. } => {
                        // MSN carries the next expected PSN (cumulative).
                        if a.msn > f.acked_psn {
                            let newly = (a.msn - f.acked_psn) as u64 * payload_sz;
                            f.acked_psn = a.msn;
                            f.last_progress = now;
                            let rtt = ts.map(|t| {
                                scale.dur_to_virtual(Duration::nanos(now.nanos().saturating_sub(t)))
                            });
                            f.cc.on_ack(
                                vnow,
                                Ack {
                                    acked: Bytes(newly),
                                    ecn_echo: ce > 0,
                                    rtt,
                                },
                            );
                        }
                    }
                    Syndrome::Nak { .. } => {
                        f.naks += 1;
                        f.cc.on_nack(vnow, Bytes(payload_sz));
                        if a.msn >= f.acked_psn && a.msn < f.next_psn {
                            f.retransmits += (f.next_psn - a.msn) as u64;
                            f.acked_psn = a.msn;
                            f.next_psn = a.msn;
                            f.last_progress = now;
                        }
                    }
                    Syndrome::RnrNak { .. } => {}
                }
            }
            _ => self.c.unknown_flow += 1,
        }
    }

    fn on_data(&mut self, now: Instant, flow: u32, r: &roce::Repr, payload: &[u8]) {
        let Some(rf) = self.recv.get_mut(&flow) else {
            self.c.unknown_flow += 1;
            return;
        };
        let ce = r.ecn == Ecn::Ce;
        let trimmed = payload.is_empty();
        self.np.on_data(
            self.cfg.scale.to_virtual(now),
            DataArrival {
                flow: flow as u64,
                bytes: Bytes(payload.len() as u64),
                ce,
                trimmed,
            },
        );
        let src = r.ip_src;
        if trimmed {
            // A switch cut this packet: NAK it at once (UEC trimming, NDP-style).
            rf.trimmed += 1;
            if r.bth.psn >= rf.expected_psn && !rf.nak_outstanding {
                rf.nak_outstanding = true;
                let aeth = AethRepr {
                    syndrome: Syndrome::Nak { code: 0 },
                    msn: rf.expected_psn,
                };
                let f = self.feedback_frame(src, flow, opcode::RC_ACK, Some(aeth), &[0u8; 12]);
                self.control.push(f);
                self.c.naks_sent += 1;
            }
        } else if r.bth.psn == rf.expected_psn {
            rf.expected_psn += 1;
            rf.bytes += payload.len() as u64;
            rf.last_rx = Some(now);
            rf.nak_outstanding = false;
            rf.ce_packets += ce as u64;
            rf.ce_since_ack += ce as u32;
            let size = self.recv_sizes.get(&flow).copied().flatten();
            if let Some(s) = size
                && rf.bytes >= s
                && rf.completed.is_none()
            {
                rf.completed = Some(now);
            }
            if r.bth.ack_req {
                let mut pl = [0u8; 12];
                pl[..8].copy_from_slice(&payload[..8.min(payload.len())]);
                pl[8..].copy_from_slice(&rf.ce_since_ack.to_be_bytes());
                rf.ce_since_ack = 0;
                let aeth = AethRepr {
                    syndrome: Syndrome::Ack { credits: 0x1f },
                    msn: rf.expected_psn,
                };
                let f = self.feedback_frame(src, flow, opcode::RC_ACK, Some(aeth), &pl);
                self.control.push(f);
                self.c.acks_sent += 1;
            }
        } else if r.bth.psn > rf.expected_psn {
            rf.out_of_order += 1;
            if !rf.nak_outstanding {
                rf.nak_outstanding = true;
                let aeth = AethRepr {
                    syndrome: Syndrome::Nak { code: 0 },
                    msn: rf.expected_psn,
                };
                let f = self.feedback_frame(src, flow, opcode::RC_ACK, Some(aeth), &[0u8; 12]);
                self.control.push(f);
                self.c.naks_sent += 1;
            }
        }
        // Duplicates (psn < expected) are ignored.
        while let Some(fb) = self.np.poll_feedback(self.cfg.scale.to_virtual(now)) {
            if let Feedback::Cnp { flow } = fb {
                let dst = self.recv_src.get(&(flow as u32)).copied().unwrap_or(src);
                let f = self.feedback_frame(
                    dst,
                    flow as u32,
                    opcode::CNP,
                    None,
                    &[0u8; roce::CNP_PAYLOAD],
                );
                self.control.push(f);
                self.c.cnps_sent += 1;
            }
        }
    }

    /// Timers: congestion-control deadlines and retransmission timeouts.
    pub fn on_timeout(&mut self, now: Instant) {
        let scale = self.cfg.scale;
        let vnow = scale.to_virtual(now);
        let rto = self.cfg.rto;
        for f in &mut self.flows {
            while let Some(t) = f.cc.next_timeout() {
                if t > vnow {
                    break;
                }
                f.cc.on_timeout(vnow);
            }
            if f.next_psn > f.acked_psn && now > f.last_progress + rto {
                f.timeouts += 1;
                f.retransmits += (f.next_psn - f.acked_psn) as u64;
                f.next_psn = f.acked_psn;
                f.last_progress = now;
            }
        }
    }

    /// Frames to send at `now` (control first, then paced data), at most `max`.
    pub fn poll_transmit(
        &mut self,
        now: Instant,
        done: &Completed,
        out: &mut Vec<Vec<u8>>,
        max: usize,
    ) {
        out.append(&mut self.control);
        let n = self.flows.len();
        if n == 0 {
            return;
        }
        let payload_len = self.cfg.payload;
        let vnow = self.cfg.scale.to_virtual(now);
        let mut tried = 0;
        while out.len() < max && tried < n {
            if now < self.nic_free_at {
                break;
            }
            let i = self.rr % n;
            self.rr = self.rr.wrapping_add(1);
            tried += 1;
            let total = self.packets_of(&self.flows[i]);
            let f = &mut self.flows[i];
            if now < f.start || now < f.next_at || f.stop.is_some_and(|s| now >= s) {
                continue;
            }
            if !f.after.iter().all(|a| done.contains(a)) {
                continue;
            }
            if total.is_some_and(|t| f.next_psn >= t) {
                continue;
            }
            let prio = f.dscp >> 3;
            if self.pfc.is_paused(now, prio) {
                continue;
            }
            if let Some(w) = f.cc.window()
                && (f.next_psn - f.acked_psn) as u64 * payload_len as u64 >= w.0
            {
                continue;
            }
            let last = total.is_some_and(|t| f.next_psn + 1 == t);
            // Ask for an ACK every `ack_every` packets, on the last packet, and on every
            // packet of a slow flow (packets further apart than RTO/16), so that an
            // unacknowledged tail never waits for packets that come too late.
            let gap_est = self
                .cfg
                .scale
                .rate_to_real(f.cc.rate())
                .min(self.cfg.link_rate)
                .tx_time(Bytes(payload_len as u64 + 82));
            let ack_req = last
                || (f.next_psn + 1).is_multiple_of(self.cfg.ack_every)
                || gap_est * 16 >= self.cfg.rto;
            let r = roce::Repr {
                eth_dst: self.cfg.gateway_mac,
                eth_src: self.cfg.mac,
                ip_src: self.cfg.ip,
                ip_dst: f.dst_ip,
                dscp: f.dscp,
                ecn: Ecn::Ect0,
                ttl: 64,
                ident: f.next_psn as u16,
                udp_src: 0xc000 | (f.id as u16 & 0x3fff),
                bth: BthRepr {
                    opcode: opcode::RC_SEND_ONLY,
                    solicited: false,
                    pad_count: 0,
                    pkey: DEFAULT_PKEY,
                    dest_qp: QP_BASE + f.id,
                    ack_req,
                    psn: f.next_psn & 0xff_ffff,
                },
                aeth: None,
                payload_len,
            };
            let mut b = vec![0u8; r.buffer_len()];
            self.zeros[..8].copy_from_slice(&now.nanos().to_be_bytes());
            r.emit(&mut b, &self.zeros);
            let wire = Bytes(b.len() as u64 + super::switch::WIRE_OVERHEAD);
            f.next_psn += 1;
            f.sent_bytes += payload_len as u64;
            f.cc.on_send(vnow, Bytes(payload_len as u64));
            // Pace the flow at its controller's rate (scaled to real), the NIC at line rate.
            let flow_rate = self
                .cfg
                .scale
                .rate_to_real(f.cc.rate())
                .min(self.cfg.link_rate);
            let gap = flow_rate.tx_time(wire);
            f.next_at = f.next_at.max(now - self.cfg.pacing_burst) + gap;
            let nic = self.cfg.link_rate.tx_time(wire);
            self.nic_free_at = self.nic_free_at.max(now - self.cfg.pacing_burst) + nic;
            self.c.tx_packets += 1;
            out.push(b);
            // Something was sent: every flow gets another turn (a loop that woke late
            // catches up within the pacing buckets).
            tried = 0;
        }
    }

    /// The earliest real instant this host needs attention without a new arrival.
    pub fn next_wakeup(&self, now: Instant, done: &Completed) -> Option<Instant> {
        let mut t: Option<Instant> = None;
        let mut upd = |x: Instant| t = Some(t.map_or(x, |y: Instant| y.min(x)));
        if !self.control.is_empty() {
            upd(now);
        }
        for f in &self.flows {
            if let Some(v) = f.cc.next_timeout() {
                upd(self.cfg.scale.to_real(v));
            }
            let active = self.packets_of(f).is_none_or(|tot| f.next_psn < tot)
                && f.stop.is_none_or(|s| now < s)
                && f.after.iter().all(|a| done.contains(a));
            if active {
                let prio = f.dscp >> 3;
                let resume = self.pfc.resume_at(now, prio).unwrap_or(now);
                upd(f.next_at.max(f.start).max(self.nic_free_at).max(resume));
            }
            if f.next_psn > f.acked_psn {
                upd(f.last_progress + self.cfg.rto);
            }
        }
        t
    }
}
