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
}
