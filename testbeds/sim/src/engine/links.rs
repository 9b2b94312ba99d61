//! Ports and links: strict-priority egress scheduling, dequeue (with ECN marking and
//! the PFC ingress accounting it triggers) and serialisation onto the link.

use super::*;

impl<Q: EventQueue> Sim<Q> {
    pub(super) fn try_tx(&mut self, p: u32) {
        let pu = p as usize;
        if !self.up[pu] {
            return;
        }
        if self.busy_until[pu] > self.now {
            // Busy: make sure the port comes back for what is waiting.
            if self.txdone_at[pu] != self.busy_until[pu] {
                self.txdone_at[pu] = self.busy_until[pu];
                self.q.push(self.busy_until[pu], EV_TXDONE, p);
            }
            return;
        }
        let node = self.net.port_node[pu];
        let pid = if let Some(i) = self.pause_q[pu].pop(&mut self.pkts) {
            i
        } else if let Some(i) = self.ctrl_q[pu].pop(&mut self.pkts) {
            if !self.net.is_host(node) {
                self.node_buf[node as usize] -= self.pkts[i as usize].wire as u64;
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

    /// Dequeue the next data packet of the highest unpaused priority.
    pub(super) fn pop_data(&mut self, p: u32) -> Option<u32> {
        let pu = p as usize;
        if self.qtotal[pu] == 0 {
            return None;
        }
        let mut earliest_resume = u64::MAX;
        for c in 0..self.nclass {
            let k = pu * self.nclass + c;
            if self.data_q[k].is_empty() {
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
            let i = self.data_q[k].pop(&mut self.pkts).expect("non-empty");
            let w = self.pkts[i as usize].wire as u64;
            self.pc[pu].q_area += self.qtotal[pu] as u128 * (self.now - self.pc[pu].q_last) as u128;
            self.pc[pu].q_last = self.now;
            self.qbytes[k] -= w;
            self.qtotal[pu] -= w;
            let node = self.net.port_node[pu];
            if !self.net.is_host(node) {
                self.node_buf[node as usize] -= w;
                // ECN at dequeue, on the depth left behind.
                if let Some(red) = self.cfg.ecn {
                    let u = self.rng.next_f64();
                    if red.should_mark(Bytes(self.qbytes[k]), u) {
                        let pk = &mut self.pkts[i as usize];
                        if pk.flags & F_CE == 0 {
                            pk.flags |= F_CE;
                            self.pc[pu].marks += 1;
                        }
                    }
                }
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
        if earliest_resume != u64::MAX && earliest_resume < self.wake_at[pu] {
            self.wake_at[pu] = earliest_resume;
            self.q.push(earliest_resume, EV_PORTWAKE, p);
        }
        None
    }

    pub(super) fn transmit(&mut self, p: u32, pid: u32) {
        let pu = p as usize;
        let wire = self.pkts[pid as usize].wire as u64;
        let dur = self.net.port_rate[pu].tx_time(Bytes(wire)).as_picos();
        self.busy_until[pu] = self.now + dur;
        let c = &mut self.pc[pu];
        c.tx_bytes += wire;
        c.tx_pkts += 1;
        if self.pkts[pid as usize].kind == K_DATA {
            c.data_bytes += wire;
        }
        let end = self.now + dur;
        // A TxDone is needed only if something waits for this port: queued frames,
        // or a host with flows that may pull more data. Otherwise the next arrival
        // finds the port free by `busy_until` (this halves the events on idle hops).
        let node = self.net.port_node[pu];
        if self.qtotal[pu] > 0
            || !self.ctrl_q[pu].is_empty()
            || !self.pause_q[pu].is_empty()
            || (self.net.is_host(node) && !self.hosts[node as usize].active.is_empty())
        {
            self.txdone_at[pu] = end;
            self.q.push(end, EV_TXDONE, p);
        }
        let peer = self.net.port_peer[pu];
        let peer_node = self.net.port_node[peer as usize];
        let mut at = end + self.net.port_delay[pu].as_picos();
        if !self.net.is_host(peer_node) {
            at += self.cfg.switch_latency.as_picos();
        }
        self.pkts[pid as usize].port = peer;
        self.q.push(at, EV_ARRIVE, pid);
    }
}
