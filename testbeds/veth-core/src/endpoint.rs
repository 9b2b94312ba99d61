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
//!
//! # Packet spraying (UEC)
//! With [`HostConfig::spray`] set, every flow a host sends changes its entropy value per
//! packet by a `cc-algos` EV policy and every flow it receives accepts packets out of
//! order ([`crate::spray`]): the receiver keeps a bitmap beyond the cumulative point and
//! never NAKs a reordering (only a trimmed packet), ACKs stay cumulative and echo the
//! entropy and CE bit of each packet received since the previous ACK, which the sender
//! feeds to its policy. Loss recovery stays a rewind (to the NAKed or last acknowledged
//! PSN); the receiver discards what it already holds. A sprayed receiver also ACKs
//! packets nobody asked an ACK for once they have waited [`ACK_DELAY_OF_RTO`] of the
//! RTO (a NIC's ACK coalescing timer): a window sender whose window shrank below what it
//! had in flight would otherwise wait for its timeout (seen as 1 ms stalls before it).
//!
//! # Receiver credit (UEC RCCC)
//! A sender whose controller holds credit (`credit()` is `Some`) first sends a credit
//! request frame (BTH opcode 0x1F, reserved in the IBA, payload: 8-byte big-endian bytes
//! requested, from `RcccSender::request_for` of its whole flow), and sends data only while
//! its credit is positive (it may overdraw by less than one packet). The receiver feeds the
//! request to its `cc-algos` receiver (`RcccReceiver::on_request`), drains `poll_feedback`
//! at `next_timeout`, and sends each grant as a credit frame (BTH opcode 0x1E, payload:
//! 8-byte big-endian credit bytes, control DSCP), which the sender delivers with `on_credit`.

use std::collections::HashMap;
use std::net::Ipv4Addr;

use cc_algos::{
    Ack, AnyCc, AnyReceiver, Bytes, DataArrival, Duration, Feedback, Instant, PfcEgress, Rate,
    ReceiverCc, SenderCc,
};

use crate::int;
use crate::spray::{Arrival, Echo, ReorderWindow, SprayConfig, Sprayer};
use crate::wire::ethernet::{self, ETHERTYPE_IPV4, ETHERTYPE_MAC_CONTROL, Mac};
use crate::wire::ib::{AethRepr, BthRepr, DEFAULT_PKEY, Syndrome, opcode};
use crate::wire::ipv4::Ecn;
use crate::wire::{pfc, roce};

/// DSCP of CNPs and ACKs (class 6: strict priority above data, never paused).
pub const CONTROL_DSCP: u8 = 48;
/// A sprayed receiver's delayed-ACK timer, as a fraction of the RTO (1/64: 16 µs of
/// virtual time with the 1 ms default, a few base RTTs).
pub const ACK_DELAY_OF_RTO: u64 = 64;

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
pub trait Receiver: ReceiverCc + Send + std::fmt::Debug {
    /// A sender asked for `bytes` of credit for `flow` (RCCC); others ignore it.
    fn on_request(&mut self, _now: Instant, _flow: u64, _bytes: Bytes) {}
}
impl Receiver for cc_algos::DcqcnNp {}

/// The receiver of algorithms that need only ACKs (DCTCP, NSCC, HPCC): no CNPs, no credit.
#[derive(Debug, Clone, Copy, Default)]
pub struct NoReceiver;

impl ReceiverCc for NoReceiver {
    fn on_data(&mut self, _now: Instant, _pkt: DataArrival) {}
    fn poll_feedback(&mut self, _now: Instant) -> Option<Feedback> {
        None
    }
    fn next_timeout(&self) -> Option<Instant> {
        None
    }
}
impl Receiver for NoReceiver {}
impl Receiver for AnyReceiver {
    fn on_request(&mut self, now: Instant, flow: u64, bytes: Bytes) {
        if let AnyReceiver::Rccc(r) = self {
            r.on_request(now, flow, bytes);
        }
    }
}

/// What the receiver controller learns of a data packet: a trimmed packet (its original
/// size is the flow's payload size; the switch cut the rest) and one the receiver does
/// not take (`delivered` false: out of order for go-back-N, or a duplicate) count as not
/// delivered, so that an RCCC receiver grants their credit again.
fn arrival(cfg: &HostConfig, flow: u32, payload: &[u8], ce: bool, delivered: bool) -> DataArrival {
    let trimmed = payload.is_empty();
    DataArrival {
        flow: flow as u64,
        bytes: Bytes(if trimmed {
            cfg.payload as u64
        } else {
            payload.len() as u64
        }),
        ce,
        trimmed: !delivered,
    }
}

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
    /// Credit grants received (RCCC).
    pub credits: u64,
    /// Whether the credit request of a credit-based flow has been sent.
    requested: bool,
    /// The flow's EV policy when it sprays.
    pub spray: Option<Sprayer>,
    /// When the flow's first frame (its credit request, or its first data packet) was
    /// handed to the wire: the real start, later than `start` by however late the loop
    /// ran — what a simulator twin replaying the run should start the flow at.
    pub first_sent: Option<Instant>,
}

impl SendFlow {
    /// One line of the sender's state, for diagnosing a stalled flow.
    pub fn state(&self) -> String {
        use cc_algos::SenderCc;
        format!(
            "flow {}: next psn {} acked psn {} sent {} B, retransmits {}, naks {}, timeouts {}, credit {:?}, grants {}, requested {}",
            self.id,
            self.next_psn,
            self.acked_psn,
            self.sent_bytes,
            self.retransmits,
            self.naks,
            self.timeouts,
            self.cc.credit(),
            self.credits,
            self.requested
        )
    }
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
    /// Out-of-order receiver of a sprayed flow (`None`: go-back-N).
    #[serde(skip)]
    window: Option<ReorderWindow>,
    /// Entropies to echo in the next ACK (sprayed flows).
    #[serde(skip)]
    echo: Echo,
    /// A sprayed flow's packet asked for an ACK while a gap held the cumulative point:
    /// ACK again when the point advances (the sender waits for it).
    #[serde(skip)]
    ack_owed: bool,
    /// A sprayed flow's first packet since its last ACK (the delayed-ACK timer).
    #[serde(skip)]
    unacked_since: Option<Instant>,
}

/// Endpoint counters.
#[derive(Debug, Clone, Default, serde::Serialize)]
pub struct HostCounters {
    pub tx_packets: u64,
    pub rx_packets: u64,
    pub acks_sent: u64,
    pub cnps_sent: u64,
    pub naks_sent: u64,
    /// Credit grants sent (RCCC receiver).
    pub credits_sent: u64,
    pub pfc_received: u64,
    /// PAUSE frames received per priority (a frame pausing several counts for each).
    pub pfc_received_by_priority: [u64; 8],
    /// Frames that failed to parse (bad ICRC, truncated, ...): counted and dropped.
    pub malformed: u64,
    /// Frames for unknown flows.
    pub unknown_flow: u64,
    /// PAUSE frames this NIC sent as a storm ([`Host::storm`]).
    pub storm_pauses: u64,
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
    /// Spray every flow this host sends and accept reordering on every flow it
    /// receives (`None`: one entropy value per flow and go-back-N).
    pub spray: Option<SprayConfig>,
    /// The switches stamp INT records on data ([`crate::int`], for HPCC): every ACK and
    /// NAK this host sends ends in the INT trailer, and every one it receives is read
    /// with it (both ends of a run agree).
    pub int: bool,
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
    /// A PFC storm this NIC sends (see [`Host::storm`]).
    storm: Option<Storm>,
    pub c: HostCounters,
}

/// A NIC that never stops pausing its switch port: a PAUSE with the longest quanta
/// for one priority, sent again every `every` from `next` on (the classic PFC storm
/// of a NIC whose receive pipeline is stuck).
#[derive(Debug, Clone, Copy)]
struct Storm {
    next: Instant,
    every: Duration,
    priority: u8,
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
            storm: None,
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
        // A spray config is validated where it is built (`SprayConfig::validate`).
        let spray = self.cfg.spray.and_then(|c| c.sprayer(id).ok());
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
            credits: 0,
            requested: false,
            spray,
            first_sent: None,
        });
    }

    /// Expect flow `id` of `size` bytes from `src`.
    pub fn add_recv_flow(&mut self, id: u32, src: Ipv4Addr, size: Option<u64>) {
        self.recv_sizes.insert(id, size);
        self.recv_src.insert(id, src);
        let window = self.cfg.spray.map(|_| ReorderWindow::default());
        self.recv.insert(
            id,
            RecvFlow {
                window,
                ..RecvFlow::default()
            },
        );
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
        let Ok(e) = ethernet::checked(frame) else {
            self.c.malformed += 1;
            return;
        };
        match ethernet::ethertype(&e) {
            ETHERTYPE_MAC_CONTROL => match pfc::Repr::from_frame(frame) {
                Ok(Some(r)) => {
                    self.c.pfc_received += 1;
                    for prio in 0..8u8 {
                        if r.class_enable & (1 << prio) != 0 && r.quanta[prio as usize] > 0 {
                            self.c.pfc_received_by_priority[prio as usize] += 1;
                        }
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
            opcode::CREDIT_REQUEST | opcode::CREDIT => {
                let Some(bytes) = payload
                    .get(..8)
                    .map(|b| u64::from_be_bytes(b.try_into().expect("8")))
                else {
                    self.c.malformed += 1;
                    return;
                };
                if r.bth.opcode == opcode::CREDIT_REQUEST {
                    if !self.recv.contains_key(&flow) {
                        self.c.unknown_flow += 1;
                        return;
                    }
                    self.np.on_request(vnow, flow as u64, Bytes(bytes));
                    self.drain_feedback(now, r.ip_src);
                } else if let Some(f) = self.flows.iter_mut().find(|f| f.id == flow) {
                    f.credits += 1;
                    f.cc.on_credit(vnow, Bytes(bytes));
                } else {
                    self.c.unknown_flow += 1;
                }
            }
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
                let (payload, records) = if self.cfg.int {
                    let Some(split) = int::split_trailer(payload) else {
                        self.c.malformed += 1;
                        return;
                    };
                    split
                } else {
                    (payload, &[][..])
                };
                let Some(f) = self.flows.iter_mut().find(|f| f.id == flow) else {
                    self.c.unknown_flow += 1;
                    return;
                };
                // A zero timestamp (a delayed ACK) carries no RTT sample.
                let ts = payload
                    .get(..8)
                    .map(|b| u64::from_be_bytes(b.try_into().expect("8")))
                    .filter(|&t| t != 0);
                let ce = payload
                    .get(8..12)
                    .map_or(0, |b| u32::from_be_bytes(b.try_into().expect("4")));
                let echo = payload.get(12..).unwrap_or_default();
                match a.syndrome {
                    Syndrome::Ack { .. } => {
                        if let Some(s) = f.spray.as_mut() {
                            s.on_echo(echo);
                        }
                        // MSN carries the next expected PSN (cumulative).
                        if a.msn > f.acked_psn {
                            let newly = (a.msn - f.acked_psn) as u64 * payload_sz;
                            f.acked_psn = a.msn;
                            // After a go-back-N rewind, an ACK for packets sent before the
                            // rewind can overtake `next_psn`: never resend what is acked.
                            f.next_psn = f.next_psn.max(a.msn);
                            f.last_progress = now;
                            let rtt = ts.map(|t| {
                                scale.dur_to_virtual(Duration::nanos(now.nanos().saturating_sub(t)))
                            });
                            let ack = Ack {
                                acked: Bytes(newly),
                                ecn_echo: ce > 0,
                                rtt,
                            };
                            if records.is_empty() {
                                f.cc.on_ack(vnow, ack);
                            } else {
                                let mut hops = [cc_algos::IntHop::default(); int::MAX_HOPS];
                                let mut n = 0;
                                for (slot, h) in hops.iter_mut().zip(int::hops(records)) {
                                    *slot = h.to_virtual(scale);
                                    n += 1;
                                }
                                f.cc.on_ack_int(vnow, ack, &hops[..n]);
                            }
                        }
                    }
                    Syndrome::Nak { .. } => {
                        f.naks += 1;
                        if let (Some(s), Some(p)) = (f.spray.as_mut(), echo.get(..2)) {
                            let port = u16::from_be_bytes([p[0], p[1]]);
                            s.on_feedback(port, cc_algos::uec::ev::PathSignal::Nack);
                        }
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
        if rf.window.is_some() {
            return self.on_sprayed_data(now, flow, r, payload);
        }
        let ce = r.ecn == Ecn::Ce;
        let trimmed = payload.is_empty();
        // The receiver controller learns which bytes must be sent again: a trimmed
        // packet (its original size is the flow's payload size; the switch cut the rest)
        // and a packet go-back-N discards (out of order or duplicate) are reported as
        // not delivered, so an RCCC receiver grants their credit again. Before this,
        // an RCCC flow that lost packets stalled: its sender had spent the credit on
        // them and the receiver never re-granted it.
        let in_order = !trimmed && r.bth.psn == rf.expected_psn;
        self.np.on_data(
            self.cfg.scale.to_virtual(now),
            arrival(&self.cfg, flow, payload, ce, in_order),
        );
        let src = r.ip_src;
        if trimmed {
            // A switch cut this packet: NAK it at once (UEC trimming, NDP-style).
            rf.trimmed += 1;
            if r.bth.psn >= rf.expected_psn && !rf.nak_outstanding {
                rf.nak_outstanding = true;
                let msn = rf.expected_psn;
                self.push_aeth(src, flow, Syndrome::Nak { code: 0 }, msn, &[0u8; 12], &[]);
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
                let ce = std::mem::take(&mut rf.ce_since_ack);
                let msn = rf.expected_psn;
                self.ack_data(src, flow, msn, payload, ce);
            }
        } else if r.bth.psn > rf.expected_psn {
            rf.out_of_order += 1;
            if !rf.nak_outstanding {
                rf.nak_outstanding = true;
                let msn = rf.expected_psn;
                self.push_aeth(src, flow, Syndrome::Nak { code: 0 }, msn, &[0u8; 12], &[]);
            }
        } else if r.bth.ack_req {
            // A duplicate asking for an ACK (a retransmission after a lost ACK or a
            // timeout): acknowledge again what was received (IBA 9.7.5.1.2).
            let msn = rf.expected_psn;
            self.ack_data(src, flow, msn, payload, 0);
        }
        // Other duplicates (psn < expected) are ignored.
        self.drain_feedback(now, src);
    }

    /// Acknowledge in-order flow `flow` up to `msn` for the data packet `payload`: echo
    /// its timestamp (its first 8 bytes, fewer if it is shorter), report `ce` CE-marked
    /// packets since the previous ACK, and echo its INT records.
    fn ack_data(&mut self, src: Ipv4Addr, flow: u32, msn: u32, payload: &[u8], ce: u32) {
        let mut pl = [0u8; 12];
        let t = payload.len().min(8);
        pl[..t].copy_from_slice(&payload[..t]);
        pl[8..].copy_from_slice(&ce.to_be_bytes());
        let records = int::records_of_data(payload);
        self.push_aeth(
            src,
            flow,
            Syndrome::Ack { credits: 0x1f },
            msn,
            &pl,
            records,
        );
    }

    /// Data of a sprayed flow: accepted in any order within the window; ACKs are
    /// cumulative and echo the entropy of every packet since the previous ACK; only a
    /// trimmed packet is NAKed (with its entropy, so the sender penalises that path).
    fn on_sprayed_data(&mut self, now: Instant, flow: u32, r: &roce::Repr, payload: &[u8]) {
        let Some(rf) = self.recv.get_mut(&flow) else {
            return;
        };
        let Some(w) = rf.window.as_mut() else {
            return;
        };
        let ce = r.ecn == Ecn::Ce;
        let trimmed = payload.is_empty();
        let arrival = (!trimmed).then(|| w.accept(r.bth.psn));
        let expected = w.expected();
        let new = matches!(arrival, Some(Arrival::New { .. }));
        self.np.on_data(
            self.cfg.scale.to_virtual(now),
            self::arrival(&self.cfg, flow, payload, ce, new),
        );
        let src = r.ip_src;
        if trimmed {
            rf.trimmed += 1;
            if r.bth.psn >= expected && !rf.nak_outstanding {
                rf.nak_outstanding = true;
                let mut pl = [0u8; 14];
                pl[12..].copy_from_slice(&r.udp_src.to_be_bytes());
                self.push_aeth(src, flow, Syndrome::Nak { code: 0 }, expected, &pl, &[]);
            }
            self.drain_feedback(now, src);
            return;
        }
        let mut ack = r.bth.ack_req;
        match arrival {
            Some(Arrival::New { advanced }) => {
                rf.echo.push(r.udp_src, ce);
                rf.ce_packets += ce as u64;
                rf.ce_since_ack += ce as u32;
                if advanced == 0 {
                    rf.out_of_order += 1;
                    rf.ack_owed |= r.bth.ack_req;
                } else {
                    ack |= std::mem::take(&mut rf.ack_owed);
                    rf.bytes += u64::from(advanced) * self.cfg.payload as u64;
                    rf.last_rx = Some(now);
                    rf.nak_outstanding = false;
                    let size = self.recv_sizes.get(&flow).copied().flatten();
                    if let Some(s) = size
                        && rf.bytes >= s
                        && rf.completed.is_none()
                    {
                        rf.completed = Some(now);
                    }
                }
            }
            // Too far ahead: dropped, recovered by the sender's timeout.
            Some(Arrival::BeyondWindow) => rf.out_of_order += 1,
            _ => {}
        }
        if ack {
            let records = int::records_of_data(payload);
            self.sprayed_ack(flow, &payload[..8.min(payload.len())], records);
        } else if new {
            rf.unacked_since.get_or_insert(now);
        }
        self.drain_feedback(now, src);
    }

    /// The cumulative ACK of sprayed flow `flow`, echoing timestamp `ts` (empty: none),
    /// the entropies received since the previous ACK and INT `records` (empty: none).
    fn sprayed_ack(&mut self, flow: u32, ts: &[u8], records: &[u8]) {
        let Some(rf) = self.recv.get_mut(&flow) else {
            return;
        };
        let expected = rf.window.as_ref().map_or(rf.expected_psn, |w| w.expected());
        let mut pl = [0u8; 12 + 2 * crate::spray::MAX_ECHO];
        let t = ts.len().min(8);
        pl[..t].copy_from_slice(&ts[..t]);
        pl[8..12].copy_from_slice(&rf.ce_since_ack.to_be_bytes());
        rf.ce_since_ack = 0;
        rf.unacked_since = None;
        let len = 12 + rf.echo.drain_into(&mut pl[12..]);
        let src = self
            .recv_src
            .get(&flow)
            .copied()
            .unwrap_or(Ipv4Addr::UNSPECIFIED);
        self.push_aeth(
            src,
            flow,
            Syndrome::Ack { credits: 0x1f },
            expected,
            &pl[..len],
            records,
        );
    }

    /// When the delayed-ACK timer of sprayed flows fires (real time).
    fn ack_delay(&self) -> Duration {
        Duration::picos(self.cfg.rto.as_picos() / ACK_DELAY_OF_RTO)
    }

    /// Queue an RC ACK or NAK (AETH with `syndrome` and `msn`) for `flow` and count it;
    /// in a run with INT its payload ends in the trailer echoing `records`.
    fn push_aeth(
        &mut self,
        dst: Ipv4Addr,
        flow: u32,
        syndrome: Syndrome,
        msn: u32,
        payload: &[u8],
        records: &[u8],
    ) {
        let nak = matches!(syndrome, Syndrome::Nak { .. });
        let aeth = AethRepr { syndrome, msn };
        let mut buf = [0u8; 12 + 2 * crate::spray::MAX_ECHO + int::TRAILER_MAX];
        let payload = if self.cfg.int {
            let n = payload.len();
            buf[..n].copy_from_slice(payload);
            let t = int::write_trailer(records, &mut buf[n..]);
            &buf[..n + t]
        } else {
            payload
        };
        let f = self.feedback_frame(dst, flow, opcode::RC_ACK, Some(aeth), payload);
        self.control.push(f);
        if nak {
            self.c.naks_sent += 1;
        } else {
            self.c.acks_sent += 1;
        }
    }

    /// Send what the receiver controller has to say now (CNPs, credit grants).
    fn drain_feedback(&mut self, now: Instant, fallback_src: Ipv4Addr) {
        while let Some(fb) = self.np.poll_feedback(self.cfg.scale.to_virtual(now)) {
            let (flow, op, payload) = match fb {
                Feedback::Cnp { flow } => {
                    self.c.cnps_sent += 1;
                    (flow, opcode::CNP, vec![0u8; roce::CNP_PAYLOAD])
                }
                Feedback::Credit { flow, bytes } => {
                    self.c.credits_sent += 1;
                    (flow, opcode::CREDIT, bytes.0.to_be_bytes().to_vec())
                }
            };
            let dst = self
                .recv_src
                .get(&(flow as u32))
                .copied()
                .unwrap_or(fallback_src);
            let f = self.feedback_frame(dst, flow as u32, op, None, &payload);
            self.control.push(f);
        }
    }

    /// Timers: congestion-control deadlines and retransmission timeouts.
    pub fn on_timeout(&mut self, now: Instant) {
        let scale = self.cfg.scale;
        let vnow = scale.to_virtual(now);
        let rto = self.cfg.rto;
        if self.np.next_timeout().is_some_and(|t| t <= vnow) {
            self.drain_feedback(now, Ipv4Addr::UNSPECIFIED);
        }
        let delay = self.ack_delay();
        let mut late: Vec<u32> = self
            .recv
            .iter()
            .filter(|(_, r)| r.unacked_since.is_some_and(|t| now >= t + delay))
            .map(|(&id, _)| id)
            .collect();
        late.sort_unstable();
        for id in late {
            self.sprayed_ack(id, &[], &[]);
        }
        let totals: Vec<Option<u32>> = self.flows.iter().map(|f| self.packets_of(f)).collect();
        for (f, total) in self.flows.iter_mut().zip(totals) {
            while let Some(t) = f.cc.next_timeout() {
                if t > vnow {
                    break;
                }
                f.cc.on_timeout(vnow);
            }
            // A credit-based flow with data left, nothing in flight and no credit for a
            // whole RTO asks again for what is left: credit can be lost on the way (the
            // sender caps what it holds at `max_credit`, so grants that pile up while
            // its loop runs late are dropped) and the receiver, having granted all it
            // was asked for, would wait for data that never comes.
            if f.requested
                && f.next_psn == f.acked_psn
                && total.is_none_or(|t| f.next_psn < t)
                && f.cc.credit() == Some(Bytes::ZERO)
                && now > f.last_progress + rto
            {
                f.requested = false;
                f.last_progress = now;
            }
            if f.next_psn > f.acked_psn && now > f.last_progress + rto {
                f.timeouts += 1;
                f.retransmits += f.next_psn.saturating_sub(f.acked_psn) as u64;
                f.next_psn = f.acked_psn;
                f.last_progress = now;
                // A credit-based flow that must resend with no credit left would wait
                // forever: the receiver re-grants only for what reaches it, and the
                // lost tail never does. Ask again for what is left (as UEC's RCCC
                // sender re-requests credit).
                if f.cc.credit() == Some(Bytes::ZERO) {
                    f.requested = false;
                }
            }
        }
    }

    /// Make this NIC storm: from `from` (real time) on it sends its switch port a PAUSE
    /// of priority `priority` with the longest quanta every `every`, and never stops.
    pub fn storm(&mut self, from: Instant, every: Duration, priority: u8) {
        self.storm = Some(Storm {
            next: from,
            every,
            priority,
        });
    }

    /// PAUSE frames of a storm sent so far.
    pub fn storm_pauses(&self) -> u64 {
        self.c.storm_pauses
    }

    /// Frames to send at `now` (control first, then paced data), at most `max`.
    pub fn poll_transmit(
        &mut self,
        now: Instant,
        done: &Completed,
        out: &mut Vec<Vec<u8>>,
        max: usize,
    ) {
        if let Some(st) = &mut self.storm
            && now >= st.next
        {
            let f = pfc::Repr::single(st.priority, 0xffff).to_frame(self.cfg.mac);
            self.control.push(f.to_vec());
            self.c.storm_pauses += 1;
            st.next = now + st.every;
        }
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
                && f.next_psn.saturating_sub(f.acked_psn) as u64 * payload_len as u64 >= w.0
            {
                continue;
            }
            if f.cc.credit().is_some() && !f.requested {
                // Ask the receiver for the credit the rest of the flow needs beyond
                // the credit held (a long-lived flow asks for an unbounded amount).
                f.requested = true;
                let backlog = total.map_or(u64::MAX / 2, |t| {
                    t.saturating_sub(f.next_psn) as u64 * payload_len as u64
                });
                let want = match &f.cc {
                    AnyCc::Rccc(s) => s.request_for(Bytes(backlog)),
                    _ => Bytes(backlog),
                };
                let req = roce::Repr {
                    eth_dst: self.cfg.gateway_mac,
                    eth_src: self.cfg.mac,
                    ip_src: self.cfg.ip,
                    ip_dst: f.dst_ip,
                    dscp: CONTROL_DSCP,
                    ecn: Ecn::NotEct,
                    ttl: 64,
                    ident: 0,
                    udp_src: 0xc000 | (f.id as u16 & 0x3fff),
                    bth: BthRepr {
                        opcode: opcode::CREDIT_REQUEST,
                        solicited: false,
                        pad_count: 0,
                        pkey: DEFAULT_PKEY,
                        dest_qp: QP_BASE + f.id,
                        ack_req: false,
                        psn: 0,
                    },
                    aeth: None,
                    payload_len: 8,
                };
                let mut b = vec![0u8; req.buffer_len()];
                req.emit(&mut b, &want.0.to_be_bytes());
                f.first_sent.get_or_insert(now);
                out.push(b);
                if out.len() >= max {
                    break;
                }
            }
            if f.cc.credit().is_some_and(|c| c == Bytes::ZERO) {
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
            // A window-limited sender also asks on the packet that fills its window:
            // otherwise no ACK may come before the window opens.
            let fills_window = f.cc.window().is_some_and(|w| {
                (f.next_psn + 1).saturating_sub(f.acked_psn) as u64 * payload_len as u64 >= w.0
            });
            let ack_req = last
                || fills_window
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
                udp_src: match f.spray.as_mut() {
                    Some(s) => s.next_port(),
                    None => 0xc000 | (f.id as u16 & 0x3fff),
                },
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
            f.first_sent.get_or_insert(now);
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
        if let Some(st) = &self.storm {
            upd(st.next);
        }
        let delay = self.ack_delay();
        for r in self.recv.values() {
            if let Some(t) = r.unacked_since {
                upd(t + delay);
            }
        }
        if let Some(v) = self.np.next_timeout() {
            upd(self.cfg.scale.to_real(v));
        }
        for f in &self.flows {
            if let Some(v) = f.cc.next_timeout() {
                upd(self.cfg.scale.to_real(v));
            }
            // A flow blocked by its window or its credit waits for feedback (an arrival)
            // or its retransmission timer, not for its pacing time.
            let window_open = f.cc.window().is_none_or(|w| {
                (f.next_psn.saturating_sub(f.acked_psn) as u64 * self.cfg.payload as u64) < w.0
            });
            let has_credit = f.cc.credit().is_none_or(|c| c > Bytes::ZERO) || !f.requested;
            let active = self.packets_of(f).is_none_or(|tot| f.next_psn < tot)
                && f.stop.is_none_or(|s| now < s)
                && f.after.iter().all(|a| done.contains(a))
                && window_open
                && has_credit;
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wire::ipv4;
    use cc_algos::{CcKind, DcqcnNp, PathParams};

    fn host(i: u8) -> Host {
        Host::new(
            HostConfig {
                mac: [2, 0, 0, 0, 0, i],
                ip: Ipv4Addr::new(10, 0, 0, i),
                gateway_mac: [2, 0, 0, 0, 1, i],
                link_rate: Rate::gbps(1),
                scale: TimeScale(100),
                payload: 1024,
                ack_every: 4,
                rto: Duration::millis(40),
                pacing_burst: Duration::ZERO,
                spray: None,
                int: false,
            },
            Box::new(DcqcnNp::new(Duration::micros(50))),
        )
    }

    fn dcqcn() -> AnyCc {
        "dcqcn"
            .parse::<CcKind>()
            .unwrap()
            .build(&PathParams {
                line_rate: Rate::gbps(100),
                base_rtt: Duration::micros(10),
                mtu: Bytes(1082),
            })
            .unwrap()
    }

    fn pair(size: u64) -> (Host, Host) {
        let mut a = host(1);
        let mut b = host(2);
        a.add_send_flow(
            7,
            b.cfg.ip,
            3,
            Some(size),
            Instant::ZERO,
            None,
            vec![],
            dcqcn(),
        );
        b.add_recv_flow(7, a.cfg.ip, Some(size));
        (a, b)
    }

    fn t(us: u64) -> Instant {
        Instant::ZERO + Duration::micros(us)
    }

    #[test]
    fn data_is_paced_at_line_rate_and_acked_cumulatively() {
        let (mut a, mut b) = pair(8 * 1024);
        let done = Completed::new();
        let mut out = Vec::new();
        a.poll_transmit(t(0), &done, &mut out, 64);
        assert_eq!(out.len(), 1, "one frame per serialisation time at 1 Gb/s");
        let mut now = 0;
        while a.flows[0].next_psn < 8 {
            now += 9; // (1082 + 24) B at 1 Gb/s = 8.848 µs
            a.poll_transmit(t(now), &done, &mut out, 64);
        }
        assert_eq!(out.len(), 8);
        let (r, _) = roce::Repr::parse(&out[0]).unwrap();
        assert_eq!((r.dscp, r.ecn, r.bth.dest_qp), (24, Ecn::Ect0, QP_BASE + 7));
        for f in &out {
            b.on_frame(t(now), f);
        }
        assert_eq!(b.recv[&7].bytes, 8 * 1024);
        assert!(b.recv[&7].completed.is_some());
        let mut acks = Vec::new();
        b.poll_transmit(t(now), &done, &mut acks, 64);
        assert_eq!(acks.len(), 2, "AckReq on PSN 3 and on the last packet");
        for f in &acks {
            a.on_frame(t(now + 5), f);
        }
        assert!(a.senders_done(t(now + 5)));
        assert_eq!(a.c.malformed + b.c.malformed, 0);
    }

    #[test]
    fn a_flow_notes_when_its_first_frame_left_not_when_it_was_due() {
        let mut a = host(1);
        a.add_send_flow(
            9,
            Ipv4Addr::new(10, 0, 0, 2),
            3,
            Some(4096),
            t(10),
            None,
            vec![],
            dcqcn(),
        );
        let (done, mut out) = (Completed::new(), Vec::new());
        a.poll_transmit(t(4), &done, &mut out, 64);
        assert!(
            out.is_empty() && a.flows[0].first_sent.is_none(),
            "not due yet"
        );
        // The loop looked again only at 13 µs (late by 3): that is the flow's start.
        a.poll_transmit(t(13), &done, &mut out, 64);
        assert_eq!((out.len(), a.flows[0].first_sent), (1, Some(t(13))));
        a.poll_transmit(t(30), &done, &mut out, 64);
        assert!(out.len() > 1);
        assert_eq!(
            a.flows[0].first_sent,
            Some(t(13)),
            "the first frame's time stays"
        );
    }

    /// An HPCC sender and its receiver; `int`: the run stamps and echoes INT.
    fn hpcc_pair(int: bool) -> (Host, Host) {
        let (mut a, mut b) = (host(1), host(2));
        a.cfg.int = int;
        b.cfg.int = int;
        let hpcc = "hpcc"
            .parse::<CcKind>()
            .unwrap()
            .build(&PathParams {
                line_rate: Rate::gbps(100),
                base_rtt: Duration::micros(10),
                mtu: Bytes(1082),
            })
            .unwrap();
        let size = 1 << 20;
        a.add_send_flow(7, b.cfg.ip, 3, Some(size), t(0), None, vec![], hpcc);
        b.add_recv_flow(7, a.cfg.ip, Some(size));
        (a, b)
    }

    /// Send for `us` µs through one switch hop whose queue holds `qlen` bytes (stamped
    /// on every data frame when `stamp`), ACKs straight back; the sender's final window.
    fn hpcc_through_a_queue(a: &mut Host, b: &mut Host, stamp: bool, qlen: u32) -> u64 {
        let done = Completed::new();
        let mut tx_bytes = 0;
        for now in 0..2_000u64 {
            let mut out = Vec::new();
            a.poll_transmit(t(now), &done, &mut out, 64);
            for mut f in out {
                tx_bytes += f.len() as u64;
                if stamp {
                    let hop = int::Hop {
                        ts_ns: t(now).nanos(),
                        tx_bytes,
                        qlen,
                        rate_mbps: 1000,
                        port: 1,
                    };
                    assert!(int::stamp(&mut f, hop));
                }
                b.on_frame(t(now), &f);
            }
            let mut acks = Vec::new();
            b.poll_transmit(t(now), &done, &mut acks, 64);
            for f in &acks {
                a.on_frame(t(now + 1), f);
            }
        }
        assert_eq!(a.c.malformed + b.c.malformed, 0);
        a.flows[0].cc.window().expect("HPCC has a window").0
    }

    #[test]
    fn hpcc_cuts_its_window_on_echoed_int_of_a_deep_queue() {
        let w0 = hpcc_pair(true).0.flows[0].cc.window().unwrap().0;
        let (mut a, mut b) = hpcc_pair(true);
        let deep = hpcc_through_a_queue(&mut a, &mut b, true, 200_000);
        assert!(
            deep < w0 / 2,
            "a 200 KB queue (1.6 BDP) must cut the window: {deep} of {w0} B"
        );
        let (mut a, mut b) = hpcc_pair(true);
        let empty = hpcc_through_a_queue(&mut a, &mut b, true, 0);
        assert!(
            empty > deep,
            "an empty queue at 1/100 of the link rate keeps a larger window: {empty} vs {deep} B"
        );
        // Without INT (before: the engine's only mode) HPCC never hears of the queue.
        let (mut a, mut b) = hpcc_pair(false);
        assert_eq!(hpcc_through_a_queue(&mut a, &mut b, false, 200_000), w0);
    }

    /// A data packet shorter than the 8-byte timestamp it should carry, asking for an
    /// ACK (in order, and again as a duplicate): acknowledged with what it has. Before,
    /// building the ACK panicked on the short copy.
    #[test]
    fn a_short_data_packet_asking_for_an_ack_is_acked_not_a_panic() {
        let (a, mut b) = pair(1024);
        let mut r = roce::Repr::send_only(a.cfg.ip, b.cfg.ip, 3, 3);
        r.eth_dst = b.cfg.mac;
        r.bth.dest_qp = QP_BASE + 7;
        r.bth.ack_req = true;
        let f = r.to_frame();
        b.on_frame(t(1), &f);
        b.on_frame(t(2), &f);
        let mut acks = Vec::new();
        b.poll_transmit(t(2), &Completed::new(), &mut acks, 64);
        let acked = acks
            .iter()
            .filter(|f| roce::Repr::parse(f).unwrap().0.bth.opcode == opcode::RC_ACK)
            .count();
        assert_eq!(acked, 2, "{acks:?}");
        assert_eq!(b.recv[&7].bytes, 3);
    }

    #[test]
    fn ce_mark_yields_a_cnp_that_cuts_the_rate() {
        let (mut a, mut b) = pair(1024);
        let mut out = Vec::new();
        a.poll_transmit(t(0), &Completed::new(), &mut out, 64);
        let mut f = out.pop().unwrap();
        ipv4::set_ecn(&mut ipv4::Packet::new_unchecked(&mut f[14..]), Ecn::Ce);
        b.on_frame(t(1), &f);
        let mut fb = Vec::new();
        b.poll_transmit(t(1), &Completed::new(), &mut fb, 64);
        let cnp = fb
            .iter()
            .find(|f| roce::Repr::parse(f).unwrap().0.bth.opcode == opcode::CNP)
            .expect("a CNP");
        let (r, payload) = roce::Repr::parse(cnp).unwrap();
        assert_eq!(
            (r.dscp, r.bth.dest_qp, payload.len()),
            (CONTROL_DSCP, QP_BASE + 7, 16)
        );
        let before = a.flows[0].cc.rate();
        a.on_frame(t(2), cnp);
        assert_eq!(a.flows[0].cnps, 1);
        assert!(a.flows[0].cc.rate() < before);
    }

    #[test]
    fn a_gap_is_naked_and_the_sender_goes_back() {
        let (mut a, mut b) = pair(4 * 1024);
        let done = Completed::new();
        let mut out = Vec::new();
        for now in [0, 9, 18, 27] {
            a.poll_transmit(t(now), &done, &mut out, 64);
        }
        assert_eq!(out.len(), 4);
        b.on_frame(t(30), &out[0]);
        b.on_frame(t(30), &out[2]); // PSN 1 lost
        b.on_frame(t(30), &out[3]);
        assert_eq!(b.recv[&7].expected_psn, 1);
        let mut fb = Vec::new();
        b.poll_transmit(t(30), &done, &mut fb, 64);
        assert_eq!(b.c.naks_sent, 1, "one NAK per gap");
        for f in &fb {
            a.on_frame(t(31), f);
        }
        assert_eq!((a.flows[0].naks, a.flows[0].next_psn), (1, 1));
        let mut again = Vec::new();
        for now in [40, 49, 58] {
            a.poll_transmit(t(now), &done, &mut again, 64);
        }
        for f in &again {
            b.on_frame(t(60), f);
        }
        assert_eq!(b.recv[&7].bytes, 4 * 1024);
    }

    #[test]
    fn a_sprayed_flow_is_received_in_any_order_without_naks() {
        let spray = crate::spray::SprayConfig {
            kind: cc_algos::uec::ev::EvPolicyKind::Bitmap,
            evs: 64,
            seed: 5,
        };
        let (mut a, mut b) = {
            let mut a = host(1);
            let mut b = host(2);
            a.cfg.spray = Some(spray);
            b.cfg.spray = Some(spray);
            a.add_send_flow(7, b.cfg.ip, 3, Some(16 * 1024), t(0), None, vec![], dcqcn());
            b.add_recv_flow(7, a.cfg.ip, Some(16 * 1024));
            (a, b)
        };
        let done = Completed::new();
        let mut out = Vec::new();
        let mut now = 0;
        while a.flows[0].next_psn < 16 {
            a.poll_transmit(t(now), &done, &mut out, 64);
            now += 9;
        }
        let ports: std::collections::HashSet<u16> = out
            .iter()
            .map(|f| roce::Repr::parse(f).unwrap().0.udp_src)
            .collect();
        assert!(ports.len() > 8, "sprayed over many entropies: {ports:?}");
        // Deliver in reverse order, packet 5 marked CE.
        ipv4::set_ecn(&mut ipv4::Packet::new_unchecked(&mut out[5][14..]), Ecn::Ce);
        for f in out.iter().rev() {
            b.on_frame(t(now), f);
        }
        assert_eq!(b.c.naks_sent, 0, "reordering is not a loss");
        assert_eq!(b.recv[&7].bytes, 16 * 1024);
        assert!(b.recv[&7].completed.is_some());
        assert_eq!(b.recv[&7].out_of_order, 15);
        let mut acks = Vec::new();
        b.poll_transmit(t(now), &done, &mut acks, 64);
        assert!(!acks.is_empty());
        for f in &acks {
            a.on_frame(t(now + 5), f);
        }
        assert!(a.senders_done(t(now + 5)));
        // The marked packet's EV is penalised, through the echo.
        let (r5, _) = roce::Repr::parse(&out[5]).unwrap();
        let sp = a.flows[0].spray.as_ref().unwrap();
        let penalised = (0..64u16).filter(|&ev| sp.policy().penalty(ev) > 0).count();
        assert_eq!(penalised, 1, "one EV penalised (port {:#x})", r5.udp_src);
        assert_eq!(sp.policy().bad_ev, 0);
    }

    #[test]
    fn a_sprayed_receiver_acks_unrequested_packets_after_its_delay() {
        let spray = crate::spray::SprayConfig {
            kind: cc_algos::uec::ev::EvPolicyKind::Reps,
            evs: 64,
            seed: 5,
        };
        let mut a = host(1);
        let mut b = host(2);
        a.cfg.spray = Some(spray);
        b.cfg.spray = Some(spray);
        a.add_send_flow(7, b.cfg.ip, 3, Some(64 * 1024), t(0), None, vec![], dcqcn());
        b.add_recv_flow(7, a.cfg.ip, Some(64 * 1024));
        let done = Completed::new();
        let mut out = Vec::new();
        for now in [0, 9, 18] {
            a.poll_transmit(t(now), &done, &mut out, 64);
        }
        assert_eq!(
            out.len(),
            3,
            "PSNs 0..3, none asks for an ACK (every 4th does)"
        );
        for f in &out {
            b.on_frame(t(20), f);
        }
        let mut acks = Vec::new();
        b.poll_transmit(t(20), &done, &mut acks, 64);
        assert!(acks.is_empty());
        let due = t(20) + Duration::micros(40_000 / ACK_DELAY_OF_RTO);
        assert_eq!(b.next_wakeup(t(20), &done), Some(due));
        b.on_timeout(due);
        b.poll_transmit(due, &done, &mut acks, 64);
        assert_eq!(acks.len(), 1, "the delayed ACK");
        a.on_frame(due, &acks[0]);
        assert_eq!(
            a.flows[0].state().split(", ").next().unwrap(),
            "flow 7: next psn 3 acked psn 3 sent 3072 B"
        );
        assert_eq!(b.next_wakeup(due, &done), None, "nothing more owed");
    }

    /// Host 1 sending flow 7 of `size` bytes with RCCC to host 2, which runs the RCCC
    /// receiver; returns both and the sender's initial credit.
    fn rccc_pair(size: u64) -> (Host, Host, u64) {
        let path = PathParams {
            line_rate: Rate::gbps(100),
            base_rtt: Duration::micros(10),
            mtu: Bytes(1082),
        };
        let kind: CcKind = "rccc".parse().unwrap();
        let mut a = host(1);
        let mut b = Host::new(
            host(2).cfg,
            Box::new(kind.build_receiver(&path).unwrap().unwrap()),
        );
        let cc = kind.build(&path).unwrap();
        let initial = cc.credit().unwrap().0;
        a.add_send_flow(7, b.cfg.ip, 3, Some(size), t(0), None, vec![], cc);
        b.add_recv_flow(7, a.cfg.ip, Some(size));
        (a, b, initial)
    }

    #[test]
    fn rccc_sender_requests_credit_and_spends_only_what_it_is_granted() {
        let size = 400 * 1024;
        let (mut a, mut b, initial) = rccc_pair(size);
        let done = Completed::new();
        let mut out = Vec::new();
        let mut now = 0;
        while now < 100_000 && a.flows[0].cc.credit() != Some(Bytes::ZERO) {
            let mut o = Vec::new();
            a.poll_transmit(t(now), &done, &mut o, 64);
            out.append(&mut o);
            now += 9;
        }
        let (req, pl) = roce::Repr::parse(&out[0]).unwrap();
        assert_eq!(req.bth.opcode, opcode::CREDIT_REQUEST);
        assert_eq!(
            u64::from_be_bytes(pl[..8].try_into().unwrap()),
            size - initial
        );
        let data = out.len() as u64 - 1;
        assert_eq!(
            data,
            initial.div_ceil(1024),
            "stops when the credit is spent"
        );
        // Nothing more until credit comes back.
        let mut more = Vec::new();
        a.poll_transmit(t(now + 1000), &done, &mut more, 64);
        assert!(more.is_empty());
        // The receiver grants (paced by its timer) and the sender resumes.
        b.on_frame(t(now), &out[0]);
        let mut grants = Vec::new();
        for k in 0..200 {
            let tk = t(now + k);
            if b.next_wakeup(tk, &done).is_some_and(|w| w <= tk) {
                b.on_timeout(tk);
            }
            let mut o = Vec::new();
            b.poll_transmit(tk, &done, &mut o, 64);
            grants.append(&mut o);
        }
        assert!(b.c.credits_sent > 0);
        let (g, gp) = roce::Repr::parse(&grants[0]).unwrap();
        assert_eq!((g.bth.opcode, g.dscp), (opcode::CREDIT, CONTROL_DSCP));
        assert!(u64::from_be_bytes(gp[..8].try_into().unwrap()) > 0);
        for f in &grants {
            a.on_frame(t(now + 200), f);
        }
        assert_eq!(a.flows[0].credits, b.c.credits_sent);
        a.poll_transmit(t(now + 2000), &done, &mut more, 64);
        assert!(!more.is_empty(), "credit lets the sender go on");
    }

    #[test]
    fn rccc_sender_without_credit_asks_again_after_an_rto() {
        // Credit can be lost (grants beyond the sender's cap, a stalled loop): a sender
        // with data left, no credit and no grant for an RTO must ask again, or the flow
        // waits forever (seen in the trimming test before this rule).
        let size = 400 * 1024;
        let (mut a, mut b, _) = rccc_pair(size);
        let done = Completed::new();
        // Send the request and the initial credit; the receiver gets the data (not the
        // request) and its ACKs come back; no grant ever reaches the sender.
        let mut now = 0;
        let mut sent = Vec::new();
        while now < 100_000 && a.flows[0].cc.credit() != Some(Bytes::ZERO) {
            let mut o = Vec::new();
            a.poll_transmit(t(now), &done, &mut o, 64);
            sent.append(&mut o);
            now += 9;
        }
        assert_eq!(a.flows[0].cc.credit(), Some(Bytes::ZERO));
        for f in &sent[1..] {
            b.on_frame(t(now), f);
        }
        let mut acks = Vec::new();
        b.poll_transmit(t(now), &done, &mut acks, 64);
        for f in &acks {
            a.on_frame(t(now), f);
        }
        let requests = |frames: &[Vec<u8>]| {
            frames
                .iter()
                .filter(|f| roce::Repr::parse(f).unwrap().0.bth.opcode == opcode::CREDIT_REQUEST)
                .count()
        };
        assert_eq!(requests(&sent), 1);
        // Before an RTO: silence. After it: a new request for what is left.
        let mut out = Vec::new();
        a.on_timeout(t(now + 1_000));
        a.poll_transmit(t(now + 1_000), &done, &mut out, 64);
        assert_eq!(requests(&out), 0, "no request before an RTO");
        let later = now + 41_000 + 1;
        a.on_timeout(t(later));
        out.clear();
        a.poll_transmit(t(later), &done, &mut out, 64);
        assert_eq!(
            requests(&out),
            1,
            "asks again after an RTO without credit: {}",
            a.flows[0].state()
        );
        let req = out
            .iter()
            .find(|f| roce::Repr::parse(f).unwrap().0.bth.opcode == opcode::CREDIT_REQUEST)
            .unwrap();
        let (_, pl) = roce::Repr::parse(req).unwrap();
        let asked = u64::from_be_bytes(pl[..8].try_into().unwrap());
        assert!(
            asked > 0 && asked <= size,
            "asks for the rest, not more: {asked}"
        );
    }

    #[test]
    fn corrupted_frames_are_counted_not_panicking() {
        let (mut a, mut b) = pair(1024);
        let mut out = Vec::new();
        a.poll_transmit(t(0), &Completed::new(), &mut out, 64);
        let mut f = out.pop().unwrap();
        let n = f.len();
        f[n - 10] ^= 0xff; // payload byte: ICRC no longer matches
        b.on_frame(t(1), &f);
        b.on_frame(t(1), &f[..20]);
        b.on_frame(t(1), &[]);
        assert_eq!(b.c.malformed, 3);
        assert_eq!(b.recv[&7].bytes, 0);
    }
}
