//! PFC (IEEE 802.1Qbb): PAUSE frames sent and refreshed by ingress ports, paused-time
//! accounting at egress ports, and the deadlock watchdog (a cycle of paused ports).

use super::*;

impl<Q: EventQueue> Sim<Q> {
    /// Paused-time bookkeeping when a frame changes (port, class)'s pause deadline.
    pub(super) fn account_pause(&mut self, port: u32, class: usize, new_until: u64) {
        let k = port as usize * self.nclass + class;
        let (mark, until) = self.pause_mark[k];
        let paused_end = until.min(self.now);
        if paused_end > mark {
            self.pc[port as usize].paused_ps += paused_end - mark;
        }
        self.pause_mark[k] = (self.now, new_until);
    }

    pub(super) fn send_pfc(&mut self, port: u32, fr: PfcFrame) {
        self.queue_pfc_frame(port, fr);
        if !fr.is_resume() {
            self.arm_refresh(port);
        }
        self.try_tx(port);
    }

    /// Puts a PFC frame (PAUSE, or resume with zero quanta) at the head of `port`'s
    /// transmit queue and counts it.
    fn queue_pfc_frame(&mut self, port: u32, fr: PfcFrame) {
        let pid = self.alloc(Pkt {
            kind: K_PAUSE,
            class: fr.priority,
            seq: fr.quanta as u32,
            wire: 64,
            ..Pkt::default()
        });
        self.port[port as usize].pause_q.push(&mut self.pkts, pid);
        if fr.is_resume() {
            self.t.resumes_sent += 1;
        } else {
            self.t.pauses_sent += 1;
        }
        if let Some(c) = self.prio_of.iter().position(|&x| x == fr.priority) {
            self.pfc_tx[port as usize * self.nclass + c] += 1;
        }
    }

    pub(super) fn arm_refresh(&mut self, port: u32) {
        if let Some(t) = self.pfc_in[port as usize].next_timeout() {
            let t = t.picos();
            if t < self.refresh_at[port as usize] || self.refresh_at[port as usize] <= self.now {
                self.refresh_at[port as usize] = t;
                self.q.push(t, EV_PFCREFRESH, port);
            }
        }
    }

    pub(super) fn pfc_refresh(&mut self, port: u32) {
        let pu = port as usize;
        if self.refresh_at[pu] != self.now {
            return;
        }
        self.refresh_at[pu] = u64::MAX;
        let now = Instant::from_picos(self.now);
        while let Some(t) = self.pfc_in[pu].next_timeout() {
            if t > now {
                break;
            }
            match self.pfc_in[pu].on_timeout(now) {
                Some(fr) => self.queue_pfc_frame(port, fr),
                None => break,
            }
        }
        self.arm_refresh(port);
        self.try_tx(port);
    }

    pub(super) fn watchdog(&mut self) {
        if self.flows_done == self.flows.len() as u64 && !self.repeating() {
            return;
        }
        if self.delivered == self.watchdog_mark
            && let Some(cycle) = self.find_pause_cycle()
        {
            self.report_deadlock(cycle);
            self.stop = Stop::Deadlock;
            return;
        }
        self.watchdog_mark = self.delivered;
        self.q
            .push(self.now + self.cfg.watchdog.as_picos(), EV_WATCHDOG, 0);
    }

    /// A cycle of switch egress ports, each paused with data queued, each waiting
    /// for a paused, non-empty egress port on the next switch (a PFC deadlock).
    pub(super) fn find_pause_cycle(&self) -> Option<Vec<u32>> {
        let now = Instant::from_picos(self.now);
        let np = self.net.ports() as usize;
        let blocked = |p: usize| -> bool {
            if self.port[p].qtotal == 0 || self.net.is_host(self.net.port_node[p]) {
                return false;
            }
            (0..self.nclass).any(|c| {
                !self.cq[p * self.nclass + c].q.is_empty()
                    && self.pfc_out[p].is_paused(now, self.prio_of[c])
            })
        };
        let is_blocked: Vec<bool> = (0..np).map(blocked).collect();
        // DFS with colours over the graph p -> blocked ports of peer switch.
        let mut colour = vec![0u8; np];
        let mut parent = vec![u32::MAX; np];
        for s in 0..np {
            if !is_blocked[s] || colour[s] != 0 {
                continue;
            }
            let mut stack: Vec<(u32, u32)> = vec![(s as u32, 0)];
            colour[s] = 1;
            while let Some(&mut (p, ref mut k)) = stack.last_mut() {
                let peer_node = self.net.peer_node(p);
                let ports = self.net.ports_of(peer_node);
                let mut advanced = false;
                while (*k as usize) < ports.len() {
                    let q = ports.start + *k;
                    *k += 1;
                    let qu = q as usize;
                    if !is_blocked[qu] {
                        continue;
                    }
                    if colour[qu] == 1 {
                        // Cycle: q ... p.
                        let mut cyc = vec![q];
                        let mut x = p;
                        while x != q {
                            cyc.push(x);
                            x = parent[x as usize];
                            if x == u32::MAX {
                                break;
                            }
                        }
                        cyc.reverse();
                        return Some(cyc);
                    }
                    if colour[qu] == 0 {
                        colour[qu] = 1;
                        parent[qu] = p;
                        stack.push((q, 0));
                        advanced = true;
                        break;
                    }
                }
                if !advanced {
                    colour[p as usize] = 2;
                    stack.pop();
                }
            }
        }
        None
    }

    pub(super) fn report_deadlock(&mut self, cycle: Vec<u32>) {
        let stuck: u64 = self.port.iter().map(|p| p.qtotal).sum();
        self.deadlock = Some(DeadlockReport {
            at_us: self.now as f64 / 1e6,
            cycle: cycle
                .iter()
                .map(|&p| {
                    let n = self.net.port_node[p as usize];
                    (
                        n,
                        (p - self.net.port_off[n as usize]) as u16,
                        self.net.peer_node(p),
                    )
                })
                .collect(),
            stuck_bytes: stuck,
        });
        self.emit_deadlock(&cycle);
    }
}
