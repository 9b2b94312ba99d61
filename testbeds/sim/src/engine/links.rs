//! Ports and links: strict-priority (or ETS, [`super::ets`]) egress scheduling, dequeue (with ECN marking and
//! the PFC ingress accounting it triggers) and serialisation onto the link.

use super::*;

/// `rate.tx_time(Bytes(bytes))` in ps, bit for bit, with a 64-bit division when
/// `bytes · 8 · 10¹²` fits in 64 bits (any frame under 2 MiB) instead of the general
/// 128-bit one, which was ~5 % of the instructions of a large run.
#[inline]
pub(super) fn tx_ps(rate: Rate, bytes: u64) -> u64 {
    let bps = rate.as_bps();
    if bps != 0 && bytes < 1 << 21 {
        (bytes * 8_000_000_000_000).div_ceil(bps)
    } else {
        rate.tx_time(Bytes(bytes)).as_picos()
    }
}

impl<Q: EventQueue> Sim<Q> {
    pub(super) fn try_tx(&mut self, p: u32) {
        let pu = p as usize;
        if !self.up[pu] {
            return;
        }
        if self.port[pu].busy_until > self.now {
            // Busy: make sure the port comes back for what is waiting.
            if self.port[pu].txdone_at != self.port[pu].busy_until {
                self.port[pu].txdone_at = self.port[pu].busy_until;
                self.q.push(self.port[pu].busy_until, EV_TXDONE, p);
            }
            return;
        }
        let node = self.port[pu].node;
        let pid = if let Some(i) = self.port[pu].pause_q.pop(&mut self.pkts) {
            i
        } else if let Some(i) = self.port[pu].ctrl_q.pop(&mut self.pkts) {
            if !self.net.is_host(node) {
                let w = self.pkts[i as usize].wire as u64;
                self.node_buf[node as usize] -= w;
                if self.kx.per_port {
                    self.kx.ctrl_bytes[pu] -= w;
                }
            }
            i
        } else if let Some(i) = self.pop_data_kept(p) {
            i
        } else if self.net.is_host(node) {
            match self.host_pull(node, p) {
                Some(i) => i,
                None => return,
            }
        } else {
            return;
        };
        self.transmit(p, pid);
    }

    /// Dequeue the next data packet of the highest unpaused priority, or of the
    /// class ETS chooses when `SimConfig::ets` is set.
    pub(super) fn pop_data(&mut self, p: u32) -> Option<u32> {
        let pu = p as usize;
        if self.port[pu].qtotal == 0 {
            return None;
        }
        let mut earliest_resume = u64::MAX;
        let classes = self.ets_pick(pu).map_or(0..self.nclass, |c| c..c + 1);
        for c in classes {
            let k = pu * self.nclass + c;
            if self.cq[k].q.is_empty() {
                continue;
            }
            let prio = self.prio_of[c];
            if self.cfg.pfc {
                let now = Instant::from_picos(self.now);
                if let Some(t) = self.pfc_out[pu].resume_at(now, prio) {
                    earliest_resume = earliest_resume.min(t.picos());
                    continue;
                }
            }
            let i = self.cq[k].q.pop(&mut self.pkts).expect("non-empty");
            let w = self.pkts[i as usize].wire as u64;
            self.integrate_queue(pu);
            self.cq[k].bytes -= w;
            self.port[pu].qtotal -= w;
            let node = self.port[pu].node;
            if !self.net.is_host(node) {
                self.node_buf[node as usize] -= w;
                self.mark_at_dequeue(pu, i, self.cq[k].bytes);
                if self.cfg.pfc {
                    let ing = self.pkts[i as usize].port;
                    let now = Instant::from_picos(self.now);
                    if let Some(fr) = self.pfc_in[ing as usize].on_dequeue(now, prio, Bytes(w)) {
                        self.send_pfc(ing, fr);
                    }
                }
            }
            return Some(i);
        }
        if earliest_resume != u64::MAX && earliest_resume < self.port_wake[pu] {
            self.port_wake[pu] = earliest_resume;
            self.q.push(earliest_resume, EV_PORTWAKE, p);
        }
        None
    }

    /// ECN at dequeue from switch port `pu`, on the `left` bytes its class queue keeps
    /// behind packet `i` (RED with a draw from the run's generator).
    #[inline]
    fn mark_at_dequeue(&mut self, pu: usize, i: u32, left: u64) {
        if let Some(red) = self.cfg.ecn {
            let u = self.rng.next_f64();
            let depth = self.scaled_depth(pu, left);
            if red.should_mark(Bytes(depth), u) {
                let pk = &mut self.pkts[i as usize];
                if pk.flags & F_CE == 0 {
                    pk.flags |= F_CE;
                    self.pc[pu].marks += 1;
                }
            }
        }
    }

    /// Whether switch port `eu` sends a control frame queued now at once: it is up and
    /// idle, and no PFC or control frame waits in it (they go first).
    #[inline]
    fn sends_ctrl_now(&self, eu: usize) -> bool {
        let ps = &self.port[eu];
        self.up[eu] && ps.busy_until <= self.now && ps.pause_q.is_empty() && ps.ctrl_q.is_empty()
    }

    /// Whether switch port `eu` sends a data frame queued now at once: as
    /// [`Self::sends_ctrl_now`], no data waits either, and no PFC, ETS or PFC watchdog
    /// state takes part in the dequeue.
    #[inline]
    pub(super) fn sends_data_now(&self, eu: usize) -> bool {
        self.sends_ctrl_now(eu)
            && self.port[eu].qtotal == 0
            && !self.cfg.pfc
            && self.ets.is_empty()
            && self.cfg.pfcwd.is_none()
    }

    /// Queue a control frame or trimmed header at switch `node`'s port `e` (admitted),
    /// counted in the node's buffer (and the per-port model's header bytes). A port that
    /// [sends it at once](Self::sends_ctrl_now) sends it without the queue: the bytes
    /// would go in and straight out again.
    pub(super) fn queue_ctrl(&mut self, node: u32, e: u32, pid: u32) {
        let eu = e as usize;
        if self.sends_ctrl_now(eu) {
            self.transmit(e, pid);
            return;
        }
        let w = self.pkts[pid as usize].wire as u64;
        self.node_buf[node as usize] += w;
        if self.kx.per_port {
            self.kx.ctrl_bytes[eu] += w;
        }
        self.port[eu].ctrl_q.push(&mut self.pkts, pid);
        self.try_tx(e);
    }

    /// Send data packet `pid` from switch port `e`, which [sends it at
    /// once](Self::sends_data_now): what queuing and dequeuing it would leave behind —
    /// the queue's high-water mark, its area clock, the ECN draw on an empty queue — and
    /// the transmission, without the queue's round trip (most hops of a lightly loaded
    /// fabric).
    pub(super) fn cut_through(&mut self, e: u32, pid: u32) {
        let eu = e as usize;
        let w = self.pkts[pid as usize].wire as u64;
        let c = &mut self.pc[eu];
        c.q_last = self.now;
        c.max_q = c.max_q.max(w);
        self.mark_at_dequeue(eu, pid, 0);
        self.transmit(e, pid);
    }

    pub(super) fn transmit(&mut self, p: u32, pid: u32) {
        let pu = p as usize;
        let wire = self.pkts[pid as usize].wire as u64;
        let dur = self.port[pu].tx_ps(&self.net.port_rate[pu], wire);
        self.port[pu].busy_until = self.now + dur;
        let c = &mut self.pc[pu];
        c.tx_bytes += wire;
        c.tx_pkts += 1;
        if self.pkts[pid as usize].kind == K_DATA {
            c.data_bytes += wire;
            if self.kx.int_on && !self.net.is_host(self.net.port_node[pu]) {
                self.int_stamp(p, pid);
            }
        }
        let end = self.now + dur;
        // A TxDone is needed only if something waits for this port: queued frames,
        // or a host with flows that may pull more data. Otherwise the next arrival
        // finds the port free by `busy_until` (this halves the events on idle hops).
        let node = self.port[pu].node;
        if self.port[pu].qtotal > 0
            || !self.port[pu].ctrl_q.is_empty()
            || !self.port[pu].pause_q.is_empty()
            || (self.net.is_host(node) && !self.hosts[node as usize].active.is_empty())
        {
            self.port[pu].txdone_at = end;
            self.q.push(end, EV_TXDONE, p);
        }
        let (peer, at) = (self.port[pu].peer, end + self.port[pu].arrive_ps);
        self.pkts[pid as usize].port = peer;
        self.q.push(at, EV_ARRIVE, pid);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        /// The fast path is `Rate::tx_time` exactly, on both sides of its limit.
        #[test]
        fn tx_ps_is_tx_time(bps in 0u64..2_000_000_000_000, bytes in 0u64..(1 << 23)) {
            let r = Rate::bps(bps);
            let d = r.tx_time(Bytes(bytes));
            prop_assert_eq!(tx_ps(r, bytes), d.as_picos());
        }
    }

    proptest! {
        /// A port's multiplication (whole picoseconds per byte) is `Rate::tx_time`
        /// exactly, at the usual rates and at any other.
        #[test]
        fn port_tx_ps_is_tx_time(
            bps in prop_oneof![
                Just(0u64), Just(1), Just(25_000_000_000), Just(100_000_000_000),
                Just(400_000_000_000), Just(800_000_000_000), 1u64..2_000_000_000_000
            ],
            bytes in prop_oneof![0u64..(1 << 23), any::<u32>().prop_map(u64::from), Just(u64::MAX)],
        ) {
            let r = Rate::bps(bps);
            let ps = PortState::idle(0, 0, 0, r);
            prop_assert_eq!(ps.tx_ps(&r, bytes), r.tx_time(Bytes(bytes)).as_picos());
        }
    }

    #[test]
    fn tx_ps_edges() {
        for bps in [1, 7, 100_000_000_000, 400_000_000_000, u64::MAX] {
            for bytes in [0, 1, 64, 4160, (1 << 21) - 1, 1 << 21, u32::MAX as u64] {
                let r = Rate::bps(bps);
                assert_eq!(
                    tx_ps(r, bytes),
                    r.tx_time(Bytes(bytes)).as_picos(),
                    "{bps} {bytes}"
                );
            }
        }
    }
}
