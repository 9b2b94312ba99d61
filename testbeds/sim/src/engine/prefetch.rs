//! Prefetching for the next events: at 1,024 hosts and more the state an event reads (its
//! packet, the ports, the flow) is out of the nearer caches most of the time, and the
//! engine waits on those misses (docs/sim.md, "Where the time goes"). While one event is
//! handled, the loop asks for the state of the next two, one level of indirection per
//! event of lead. Only hints: no stage writes anything, so events and results are
//! unchanged. (A third stage, one event ahead, that also looked up the route and the
//! egress port an arrival will take, cost ~145 more instructions per event than the
//! misses it saved: it was measured and dropped.)

use super::*;
use crate::prefetch::{prefetch, prefetch_all, prefetch_bytes, prefetch_span};

impl<Q: EventQueue> Sim<Q> {
    /// Ask for the state of the events one and two places ahead in the queue.
    #[inline]
    pub(super) fn prefetch_ahead(&self) {
        if let Some(ev) = self.q.peek_hint2() {
            self.prefetch_first(ev);
        }
        if let Some(ev) = self.q.peek_hint() {
            self.prefetch_second(ev);
        }
    }

    /// Two events ahead: the packet an arrival reads (both lines, when a 48-byte packet
    /// straddles two); the port (and its first data
    /// queue) a `TxDone` serves, and its node's host state (a NIC's `TxDone` pulls from
    /// the host's active flows).
    #[inline]
    fn prefetch_first(&self, next: crate::queue::Ev) {
        let id = next.id() as usize;
        match next.kind() {
            EV_ARRIVE => {
                if let Some(p) = self.pkts.get(id) {
                    prefetch_span(p);
                }
            }
            EV_TXDONE => {
                if let Some(p) = self.port.get(id) {
                    prefetch(p);
                }
                if let Some(&n) = self.net.port_node.get(id)
                    && let Some(h) = self.hosts.get(n as usize)
                {
                    prefetch(h);
                }
                if let Some(c) = self.cq.get(id * self.nclass) {
                    prefetch(c);
                }
            }
            _ => {}
        }
    }

    /// One event ahead, what the first stage's lines point at. An arrival: the
    /// receiving port's counters, and at a switch the flow's path under ECMP (with the
    /// egress port and counters the packet's [hint](Pkt::egress_hint) names) or else
    /// its hash, at a host the flow's state. A `TxDone`: the packet at the head of the
    /// port's control or first data queue (the dequeue reads its link), the port's
    /// transmit counters, and at a NIC the sender's part of the flow its round robin
    /// reaches first.
    #[inline]
    fn prefetch_second(&self, next: crate::queue::Ev) {
        let id = next.id() as usize;
        match next.kind() {
            EV_ARRIVE => {
                let Some(p) = self.pkts.get(id) else { return };
                if let Some(c) = self.pc.get(p.port as usize) {
                    prefetch(&c.rx_bytes);
                }
                let to_host = self
                    .net
                    .port_node
                    .get(p.port as usize)
                    .is_some_and(|&n| self.net.is_host(n));
                if to_host {
                    if let Some(f) = self.flows.get(p.flow as usize) {
                        prefetch_all(f);
                    }
                } else if let Some(line) = self.paths.line(p.flow, p.back()) {
                    prefetch(line);
                    let e = p.egress_hint as usize;
                    if let (Some(ps), Some(c)) = (self.port.get(e), self.pc.get(e)) {
                        prefetch(ps);
                        prefetch(c);
                    }
                } else if let Some(h) = self.flow_hash.get(p.flow as usize) {
                    prefetch(h);
                }
            }
            EV_TXDONE => {
                let Some(ps) = self.port.get(id) else { return };
                let head = if ps.ctrl_q.is_empty() {
                    self.cq.get(id * self.nclass).map_or(NIL, |c| c.q.head)
                } else {
                    ps.ctrl_q.head
                };
                if let Some(p) = self.pkts.get(head as usize) {
                    prefetch_span(p);
                }
                if let Some(c) = self.pc.get(id) {
                    prefetch(c);
                }
                // A NIC: the sender's part of the flow its round robin reaches first.
                if let Some(&n) = self.net.port_node.get(id)
                    && let Some(h) = self.hosts.get(n as usize)
                    && let Some(&f) = h.active.get(h.rr).or(h.active.first())
                    && let Some(fl) = self.flows.get(f as usize)
                {
                    prefetch_bytes(fl, 0, std::mem::offset_of!(FlowState, cc));
                }
            }
            _ => {}
        }
    }
}
