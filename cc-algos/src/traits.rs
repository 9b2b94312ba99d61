//! The interfaces every algorithm implements. Drivers (simulator, veth engine)
//! only ever talk to these traits, so swapping DCQCN for NSCC changes no driver code.

use crate::units::{Bytes, Duration, Instant, Rate};
use serde::Serialize;

/// What an acknowledgement tells the sender. Built by the driver from whatever
/// the receiver sent back (RoCE ACK, UEC ACK, simulator ACK event).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Ack {
    /// Bytes newly acknowledged by this ACK (not cumulative).
    pub acked: Bytes,
    /// The acknowledged data carried a CE mark (ECN-echo).
    pub ecn_echo: bool,
    /// RTT sample measured from this ACK, if the packet carried a send timestamp.
    pub rtt: Option<Duration>,
}

/// A telemetry snapshot of a sender's controller.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct CcMetrics {
    /// Current pacing rate.
    pub rate: Rate,
    /// Current congestion window, for window-based algorithms.
    pub window: Option<Bytes>,
    /// Algorithm-specific named values (e.g. DCQCN `alpha`, `target_rate`).
    pub extra: Vec<(&'static str, f64)>,
}

/// Sender-side congestion control: events in, decisions out.
///
/// Rate-based algorithms (DCQCN) answer [`SenderCc::rate`] and return `None`
/// from [`SenderCc::window`]; window-based ones (NSCC, DCTCP) return a window and
/// a pacing rate (line rate if they do not pace).
pub trait SenderCc {
    /// `bytes` of payload left the sender at `now`.
    fn on_send(&mut self, now: Instant, bytes: Bytes);
    /// An acknowledgement arrived.
    fn on_ack(&mut self, now: Instant, ack: Ack);
    /// A congestion notification packet (RoCEv2 CNP, BTH opcode 0x81) arrived.
    fn on_cnp(&mut self, now: Instant);
    /// `bytes` were negatively acknowledged (lost, or trimmed by a switch).
    fn on_nack(&mut self, now: Instant, bytes: Bytes);
    /// The deadline returned by [`SenderCc::next_timeout`] was reached.
    fn on_timeout(&mut self, now: Instant);
    /// The next deadline at which [`SenderCc::on_timeout`] must be called.
    fn next_timeout(&self) -> Option<Instant>;
    /// The rate at which the sender may transmit now.
    fn rate(&self) -> Rate;
    /// The congestion window (bytes in flight allowed), if window-based.
    fn window(&self) -> Option<Bytes>;
    /// A snapshot for telemetry and plots.
    fn metrics(&self) -> CcMetrics;
    /// An acknowledgement carrying in-band network telemetry (one record per hop, in
    /// path order), for INT-based algorithms (HPCC). Others treat it as a plain ACK.
    fn on_ack_int(&mut self, now: Instant, ack: Ack, _int: &[IntHop]) {
        self.on_ack(now, ack)
    }
    /// `bytes` of credit arrived from the receiver (credit-based algorithms such as UEC
    /// RCCC). Others ignore it.
    fn on_credit(&mut self, _now: Instant, _bytes: Bytes) {}
    /// Bytes the sender may still transmit against credit already received, for
    /// credit-based algorithms; `None` means "not credit-limited".
    fn credit(&self) -> Option<Bytes> {
        None
    }
}

/// One hop's in-band network telemetry record, as HPCC's switches stamp it on data
/// packets and receivers echo it in ACKs (Li et al., SIGCOMM 2019, §3.2, Fig. 4).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct IntHop {
    /// Egress queue length when the packet left.
    pub qlen: Bytes,
    /// Cumulative bytes the egress port has transmitted (a free-running counter).
    pub tx_bytes: u64,
    /// When the packet left the port.
    pub ts: Instant,
    /// The port's line rate.
    pub link_rate: Rate,
    /// Which egress port wrote the record, where the network says (`None`: not told;
    /// the record is then taken to come from the same port as the previous packet's at
    /// this hop, HPCC's single-path assumption). With packet spraying consecutive
    /// packets cross different links at the same hop, and their counters cannot be
    /// compared.
    pub port: Option<u32>,
}

/// Identifies a flow (RoCE QP, UEC PDC, simulator flow) at a receiver or switch.
pub type FlowId = u64;

/// A data packet as seen by a receiver-side controller.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct DataArrival {
    /// The flow the packet belongs to.
    pub flow: FlowId,
    /// Payload bytes carried (the original size for a trimmed packet).
    pub bytes: Bytes,
    /// The packet carried a CE mark (ECN congestion experienced).
    pub ce: bool,
    /// A switch trimmed the payload away (UEC packet trimming); only the header arrived.
    pub trimmed: bool,
}

/// Feedback a receiver-side controller asks the driver to send back to a sender.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub enum Feedback {
    /// Send a congestion notification packet (RoCEv2 CNP, BTH opcode 0x81) to `flow`'s sender.
    Cnp { flow: FlowId },
    /// Grant `bytes` of credit to `flow`'s sender (UEC RCCC).
    Credit { flow: FlowId, bytes: Bytes },
}

/// Receiver-side congestion control (DCQCN NP, UEC RCCC receiver): data in, feedback out.
///
/// The driver calls [`ReceiverCc::on_data`] for each arriving data packet, then drains
/// [`ReceiverCc::poll_feedback`] until it returns `None`, and calls `poll_feedback` again at
/// [`ReceiverCc::next_timeout`] (credit pacing is timer-driven).
pub trait ReceiverCc {
    /// A data packet arrived at `now`.
    fn on_data(&mut self, now: Instant, pkt: DataArrival);
    /// The next feedback packet to send at `now`, if any.
    fn poll_feedback(&mut self, now: Instant) -> Option<Feedback>;
    /// When `poll_feedback` may next return something without a new arrival.
    fn next_timeout(&self) -> Option<Instant>;
}

/// Switch-side ECN marking decision for one egress queue.
///
/// `u` is a uniform random number in `[0, 1)` supplied by the driver, so that the
/// driver's seeded RNG keeps the simulation deterministic.
pub trait EcnMarker {
    /// Whether to set CE on a packet leaving (or joining) a queue holding `qlen` bytes.
    fn should_mark(&self, qlen: Bytes, u: f64) -> bool;
}
