//! UEC RCCC — Receiver Credit-based Congestion Control (Ultra Ethernet Specification
//! 1.0, congestion management: RCCC). The receiver knows its own link is the last hop
//! every flow to it shares, so it hands out *credit* at its link rate, round-robin over
//! the senders that still need some; a sender transmits only against credit.
//!
//! - [`RcccReceiver`] ([`ReceiverCc`]): senders announce demand with
//!   [`RcccReceiver::on_request`] (UEC: the backlog field of a request/data packet);
//!   [`ReceiverCc::poll_feedback`] returns `Feedback::Credit` grants paced so that the data
//!   they release fills the link exactly (grant of `g` payload bytes occupies the link for
//!   the serialisation time of `g` plus one header per MSS). A trimmed packet's bytes are
//!   re-requested automatically (its retransmission needs credit).
//! - [`RcccSender`] ([`SenderCc`]): holds the credit. It starts with a speculative
//!   allowance (htsim starts UEC senders with credit = max window = 1.5·BDP, so a lone flow
//!   runs at line rate from the first RTT); [`RcccSender::request_for`] says how much
//!   credit to ask the receiver for.
//!
//! Credit counts payload bytes, like [`SenderCc::on_send`]. As in htsim
//! (`can_send_RCCC`: `credit() > 0`), a sender may start a packet while it holds any
//! credit; the balance may then go negative by less than one packet, and later grants
//! repay it, so over a flow the bytes sent equal the credit received exactly.

use crate::error::{Result, invalid};
use crate::traits::{Ack, CcMetrics, DataArrival, Feedback, FlowId, ReceiverCc, SenderCc};
use crate::units::{Bytes, Duration, Instant, Rate};
use serde::{Deserialize, Serialize};
use std::collections::{HashMap, VecDeque};

/// RCCC parameters, shared by the receiver and the sender side.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct RcccConfig {
    /// Rate at which the receiver hands out credit: its link rate.
    pub link_rate: Rate,
    /// Largest packet on the wire.
    pub mtu: Bytes,
    /// Header bytes per packet (payload per full packet = MTU − this); 64 B as in htsim.
    pub header: Bytes,
    /// Credit per grant: 4 MSS (htsim `UecSink::_mtus_per_pull = 4`, "as per default in
    /// UEC spec").
    pub quantum: Bytes,
    /// Speculative credit a sender starts with: 1.5·BDP (htsim `startConnection`,
    /// `_credit = _configured_maxwnd`).
    pub initial_credit: Bytes,
    /// A sender never holds more credit than this (htsim caps at the max window).
    pub max_credit: Bytes,
    /// Sender pacing rate (its line rate).
    pub line_rate: Rate,
}

impl RcccConfig {
    /// Defaults for a path: credit at `line_rate` (receiver link = sender link rate).
    pub fn new(line_rate: Rate, base_rtt: Duration, mtu: Bytes) -> Self {
        let header = Bytes(64);
        let mss = mtu.saturating_sub(header).max(Bytes(1));
        let max = line_rate.bdp(base_rtt).mul_f64(1.5).max(mtu);
        RcccConfig {
            link_rate: line_rate,
            mtu,
            header,
            quantum: mss * 4,
            initial_credit: max,
            max_credit: max,
            line_rate,
        }
    }

    /// Payload per full packet.
    pub fn mss(&self) -> Bytes {
        self.mtu.saturating_sub(self.header)
    }

    pub fn validate(&self) -> Result<()> {
        const A: &str = "rccc";
        if self.link_rate == Rate::ZERO {
            return Err(invalid(A, "link_rate", "must be positive"));
        }
        if self.mtu <= self.header {
            return Err(invalid(
                A,
                "mtu",
                format!("must exceed the header ({})", self.header),
            ));
        }
        if self.quantum == Bytes::ZERO {
            return Err(invalid(A, "quantum", "must be positive"));
        }
        if self.initial_credit > self.max_credit {
            return Err(invalid(A, "initial_credit", "must not exceed max_credit"));
        }
        Ok(())
    }

    /// Link time taken by the packets that `payload` bytes of credit release.
    pub fn wire_time(&self, payload: Bytes) -> Duration {
        let pkts = payload.0.div_ceil(self.mss().0.max(1));
        self.link_rate.tx_time(payload + self.header * pkts)
    }

    pub fn build_receiver(&self) -> Result<RcccReceiver> {
        self.validate()?;
        Ok(RcccReceiver {
            cfg: *self,
            demand: HashMap::new(),
            ring: VecDeque::new(),
            next_grant: Instant::ZERO,
            granted: 0,
        })
    }

    pub fn build_sender(&self) -> Result<RcccSender> {
        self.validate()?;
        Ok(RcccSender {
            cfg: *self,
            credit: self.initial_credit.0 as i64,
            received: 0,
            sent: 0,
        })
    }
}

/// The receiver's credit pacer.
#[derive(Clone, Debug)]
pub struct RcccReceiver {
    cfg: RcccConfig,
    demand: HashMap<FlowId, u64>,
    ring: VecDeque<FlowId>,
    next_grant: Instant,
    granted: u64,
}

impl RcccReceiver {
    /// `flow`'s sender needs `bytes` more credit.
    pub fn on_request(&mut self, _now: Instant, flow: FlowId, bytes: Bytes) {
        if bytes == Bytes::ZERO {
            return;
        }
        let d = self.demand.entry(flow).or_insert(0);
        if *d == 0 {
            self.ring.push_back(flow);
        }
        *d += bytes.0;
    }

    /// Outstanding demand of `flow`.
    pub fn demand(&self, flow: FlowId) -> Bytes {
        Bytes(self.demand.get(&flow).copied().unwrap_or(0))
    }

    /// Senders still waiting for credit.
    pub fn active_senders(&self) -> usize {
        self.ring.len()
    }

    /// Total credit granted so far.
    pub fn granted(&self) -> Bytes {
        Bytes(self.granted)
    }

    /// Forget a flow (finished or aborted).
    pub fn remove_flow(&mut self, flow: FlowId) {
        self.demand.remove(&flow);
        self.ring.retain(|&f| f != flow);
    }
}

impl ReceiverCc for RcccReceiver {
    fn on_data(&mut self, now: Instant, pkt: DataArrival) {
        if pkt.trimmed {
            self.on_request(now, pkt.flow, pkt.bytes);
        }
    }

    fn poll_feedback(&mut self, now: Instant) -> Option<Feedback> {
        if now < self.next_grant {
            return None;
        }
        let flow = self.ring.pop_front()?;
        let d = self.demand.get_mut(&flow)?;
        let g = (*d).min(self.cfg.quantum.0);
        *d -= g;
        if *d > 0 {
            self.ring.push_back(flow);
        } else {
            self.demand.remove(&flow);
        }
        // Keep the pace when polled slightly late; restart from `now` after idling.
        let t = self.cfg.wire_time(Bytes(g));
        let base = if self.next_grant + t >= now {
            self.next_grant
        } else {
            now
        };
        self.next_grant = base + t;
        self.granted += g;
        Some(Feedback::Credit {
            flow,
            bytes: Bytes(g),
        })
    }

    fn next_timeout(&self) -> Option<Instant> {
        if self.ring.is_empty() {
            None
        } else {
            Some(self.next_grant)
        }
    }
}

/// The sender's credit account.
#[derive(Clone, Debug)]
pub struct RcccSender {
    cfg: RcccConfig,
    /// Credit balance; negative after starting a packet larger than the balance.
    credit: i64,
    received: u64,
    sent: u64,
}

impl RcccSender {
    /// Credit to request from the receiver for a `backlog` of payload bytes still to
    /// send, given the credit already held.
    pub fn request_for(&self, backlog: Bytes) -> Bytes {
        Bytes((backlog.0 as i128 - self.credit as i128).clamp(0, u64::MAX as i128) as u64)
    }
    /// Credit owed: bytes sent beyond the credit held (less than one packet when the
    /// driver sends only while `credit() > 0`).
    /// Credit received from the receiver so far (cumulative).
    pub fn received(&self) -> Bytes {
        Bytes(self.received)
    }
    pub fn overdraft(&self) -> Bytes {
        Bytes((-self.credit).max(0) as u64)
    }
}

impl SenderCc for RcccSender {
    fn on_send(&mut self, _now: Instant, bytes: Bytes) {
        self.sent += bytes.0;
        self.credit = self
            .credit
            .saturating_sub(bytes.0.min(i64::MAX as u64) as i64);
    }
    /// RCCC reacts to credit only.
    fn on_ack(&mut self, _now: Instant, _ack: Ack) {}
    fn on_cnp(&mut self, _now: Instant) {}
    /// The receiver re-grants credit for trimmed data; nothing to do here.
    fn on_nack(&mut self, _now: Instant, _bytes: Bytes) {}
    fn on_timeout(&mut self, _now: Instant) {}
    fn next_timeout(&self) -> Option<Instant> {
        None
    }
    fn rate(&self) -> Rate {
        self.cfg.line_rate
    }
    fn window(&self) -> Option<Bytes> {
        None
    }
    fn metrics(&self) -> CcMetrics {
        CcMetrics {
            rate: self.rate(),
            window: None,
            extra: vec![
                ("credit", self.credit as f64),
                ("credit_received", self.received as f64),
                ("overdraft", self.overdraft().0 as f64),
            ],
        }
    }
    fn on_credit(&mut self, _now: Instant, bytes: Bytes) {
        self.received += bytes.0;
        let max = self.cfg.max_credit.0.min(i64::MAX as u64) as i64;
        let add = bytes.0.min(i64::MAX as u64) as i64;
        self.credit = self.credit.saturating_add(add).min(max);
    }
    fn credit(&self) -> Option<Bytes> {
        Some(Bytes(self.credit.max(0) as u64))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cfg() -> RcccConfig {
        RcccConfig::new(Rate::gbps(100), Duration::micros(10), Bytes(4150))
    }

    #[test]
    fn defaults() {
        let c = cfg();
        assert_eq!(c.mss(), Bytes(4086));
        assert_eq!(c.quantum, Bytes(4 * 4086));
        assert_eq!(c.initial_credit, Bytes(187_500)); // 1.5 × 125,000
        // 4 full packets of credit occupy 4 × 4150 B of link: 1.328 µs at 100 Gb/s.
        assert_eq!(c.wire_time(c.quantum), Duration::nanos(1_328));
    }

    /// Drain every grant due up to `end`, returning (time, flow, bytes).
    fn run(rx: &mut RcccReceiver, end: Instant) -> Vec<(Instant, FlowId, Bytes)> {
        let mut out = Vec::new();
        let mut now = Instant::ZERO;
        while let Some(t) = rx.next_timeout() {
            if t > end {
                break;
            }
            now = now.max(t);
            while let Some(Feedback::Credit { flow, bytes }) = rx.poll_feedback(now) {
                out.push((now, flow, bytes));
            }
        }
        out
    }

    #[test]
    fn credit_is_paced_at_link_rate_and_shared_round_robin() {
        let c = cfg();
        let mut rx = c.build_receiver().unwrap();
        for f in 0..4 {
            rx.on_request(Instant::ZERO, f, Bytes::mb(10));
        }
        let end = Instant::ZERO + Duration::micros(100);
        let grants = run(&mut rx, end);
        // Credit released in 100 µs fills the link: payload + headers ≈ 100 µs × 100 Gb/s.
        let payload: u64 = grants.iter().map(|g| g.2.0).sum();
        let wire = c.wire_time(Bytes(payload));
        assert!(
            wire <= Duration::micros(100) + c.wire_time(c.quantum),
            "{wire}"
        );
        assert!(
            wire >= Duration::micros(100) - c.wire_time(c.quantum),
            "{wire}"
        );
        // Round robin: per-flow shares differ by at most one quantum.
        let per: Vec<u64> = (0..4)
            .map(|f| grants.iter().filter(|g| g.1 == f).map(|g| g.2.0).sum())
            .collect();
        let (mn, mx) = (per.iter().min().unwrap(), per.iter().max().unwrap());
        assert!(mx - mn <= c.quantum.0, "{per:?}");
        // Consecutive grants are exactly one quantum's wire time apart.
        for w in grants.windows(2) {
            assert_eq!(w[1].0 - w[0].0, c.wire_time(w[0].2));
        }
    }

    #[test]
    fn demand_is_honoured_exactly_and_trims_are_regranted() {
        let c = cfg();
        let mut rx = c.build_receiver().unwrap();
        rx.on_request(Instant::ZERO, 1, Bytes(50_000));
        let g = run(&mut rx, Instant::ZERO + Duration::secs(1));
        assert_eq!(g.iter().map(|g| g.2.0).sum::<u64>(), 50_000);
        assert_eq!(g.last().unwrap().2, Bytes(50_000 - 3 * 4 * 4086));
        assert_eq!(rx.next_timeout(), None);
        rx.on_data(
            Instant::ZERO,
            DataArrival {
                flow: 1,
                bytes: Bytes(4086),
                ce: false,
                trimmed: true,
            },
        );
        assert_eq!(rx.demand(1), Bytes(4086));
        rx.on_data(
            Instant::ZERO,
            DataArrival {
                flow: 1,
                bytes: Bytes(4086),
                ce: true,
                trimmed: false,
            },
        );
        assert_eq!(rx.demand(1), Bytes(4086));
    }

    #[test]
    fn sender_spends_only_credit() {
        let c = cfg();
        let mut tx = c.build_sender().unwrap();
        assert_eq!(tx.credit(), Some(Bytes(187_500)));
        assert_eq!(tx.request_for(Bytes::mb(1)), Bytes(1_000_000 - 187_500));
        tx.on_send(Instant::ZERO, Bytes(187_000));
        assert_eq!(tx.credit(), Some(Bytes(500)));
        tx.on_send(Instant::ZERO, Bytes(1_000));
        assert_eq!(tx.overdraft(), Bytes(500));
        assert_eq!(tx.credit(), Some(Bytes::ZERO));
        // The debt is repaid by the next grant.
        tx.on_credit(Instant::ZERO, Bytes(600));
        assert_eq!(tx.credit(), Some(Bytes(100)));
        tx.on_credit(Instant::ZERO, Bytes(10_000_000));
        assert_eq!(tx.credit(), Some(c.max_credit));
    }
}
