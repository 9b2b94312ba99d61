//! Switches: arrivals, routing through the [`crate::net::Router`], load balancing among
//! equal-cost next hops, and admission into the shared buffer (drops, trimming).

use super::*;

impl<Q: EventQueue> Sim<Q> {
    pub(super) fn arrive(&mut self, pid: u32) {
        let pk = self.pkts[pid as usize];
        let r = pk.port;
        let ru = r as usize;
        if !self.up[ru] {
            self.t.drops_failure += 1;
            self.pc[ru].drops_failure += 1;
            self.release(pid);
            return;
        }
        self.pc[ru].rx_bytes += pk.wire as u64;
        self.pc[ru].rx_pkts += 1;
        let node = self.net.port_node[ru];
        if pk.kind == K_PAUSE {
            self.release(pid);
            self.pc[ru].pauses_rcvd += 1;
            if let Some(c) = self.prio_of.iter().position(|&x| x == pk.class) {
                self.pfc_rx[ru * self.nclass + c] += 1;
            }
            if self.pfcwd_ignores_pause(r, pk.class) {
                return;
            }
            let now = Instant::from_picos(self.now);
            let fr = PfcFrame {
                priority: pk.class,
                quanta: pk.seq as u16,
            };
            self.pfc_out[ru].on_frame(now, fr);
            if let Some(c) = self.prio_of.iter().position(|&x| x == pk.class) {
                let until = self.pfc_out[ru]
                    .resume_at(now, pk.class)
                    .map(|t| t.picos())
                    .unwrap_or(self.now);
                self.account_pause(r, c, until);
            }
            if fr.is_resume() {
                self.try_tx(r);
            } else if let Some(t) = self.pfc_out[ru].resume_at(now, pk.class) {
                let t = t.picos();
                if t < self.port_wake[ru] || self.port_wake[ru] <= self.now {
                    self.port_wake[ru] = t;
                    self.q.push(t, EV_PORTWAKE, r);
                }
            }
            return;
        }
        if self.net.is_host(node) {
            self.deliver(node, pid);
            return;
        }
        // Switch: route.
        let back = pk.back();
        let next_hop = pk.hop.saturating_add(1);
        self.pkts[pid as usize].hop = next_hop;
        let e = match self.paths.get(pk.flow, back, pk.hop, node) {
            Some(e) => e,
            None => {
                let Some(e) = self.route(node, pid, &pk) else {
                    return;
                };
                self.paths.set(pk.flow, back, pk.hop, node, e);
                e
            }
        };
        if !self.up[e as usize] {
            self.t.drops_failure += 1;
            self.pc[e as usize].drops_failure += 1;
            self.release(pid);
            return;
        }
        self.pkts[pid as usize].egress_hint = self.paths.hint(pk.flow, back, next_hop);
        self.enqueue(node, e, pid, r);
    }

    /// The global egress port switch `node` routes packet `pid` (`pk`) to, or `None`
    /// when it has no route (the packet is dropped and counted).
    fn route(&mut self, node: u32, pid: u32, pk: &Pkt) -> Option<u32> {
        let dst = pk.dst;
        let hops = self.router.next_hops(node, dst);
        if hops.is_empty() {
            let ru = pk.port as usize;
            self.t.drops_noroute += 1;
            self.pc[ru].drops_noroute += 1;
            self.release(pid);
            return None;
        }
        let local = match self.pick(node, hops, pk) {
            Some(h) => h,
            None => {
                // Flowlets change the engine's state: copy the hops out of the router.
                let mut buf = std::mem::take(&mut self.hop_buf);
                buf.clear();
                buf.extend_from_slice(self.router.next_hops(node, dst));
                let h = self.choose_flowlet(node, &buf, pk);
                self.hop_buf = buf;
                h
            }
        };
        Some(self.net.port_off[node as usize] + local as u32)
    }

    /// Pick one of the equal-cost next hops for a packet, for every scheme but
    /// flowlets (`None`: call [`Self::choose_flowlet`]). Read-only, so the hops can
    /// stay borrowed from the router: the arrival path copies nothing.
    #[inline]
    pub(super) fn pick(&self, node: u32, hops: &[u16], pk: &Pkt) -> Option<u16> {
        let n = hops.len();
        if n == 1 {
            return Some(hops[0]);
        }
        let salt = self.salt[node as usize];
        let fh = self.flow_hash[pk.flow as usize];
        let pick = |h: u64| hops[((h as u128 * n as u128) >> 64) as usize];
        Some(match self.cfg.lb {
            LbScheme::Ecmp => pick(mix64(fh ^ salt)),
            LbScheme::Spray | LbScheme::Reps | LbScheme::Bitmap | LbScheme::Mixed => {
                if pk.kind == K_DATA || pk.kind == K_ACK || pk.kind == K_NACK {
                    pick(mix64(
                        fh ^ salt ^ (pk.ev as u64 + 1).wrapping_mul(0xA24B_AED4_963E_E407),
                    ))
                } else {
                    pick(mix64(fh ^ salt))
                }
            }
            LbScheme::Flowlet => {
                if pk.kind != K_DATA {
                    pick(mix64(fh ^ salt))
                } else {
                    return None;
                }
            }
            LbScheme::Adaptive => {
                let base = self.net.port_off[node as usize];
                let start = (mix64(fh ^ salt ^ pk.seq as u64) % n as u64) as usize;
                let mut best = hops[start];
                let mut best_q = u64::MAX;
                for k in 0..n {
                    let h = hops[(start + k) % n];
                    let e = (base + h as u32) as usize;
                    let q = self.port[e].qtotal + u64::from(self.port[e].busy_until > self.now);
                    if q < best_q {
                        best_q = q;
                        best = h;
                    }
                }
                best
            }
        })
    }

    /// LetFlow: a data packet keeps its flow's next hop unless the flow was idle for
    /// the flowlet gap, then takes a random one (`hops` has two or more).
    pub(super) fn choose_flowlet(&mut self, node: u32, hops: &[u16], pk: &Pkt) -> u16 {
        let n = hops.len();
        let gap = self.cfg.flowlet_gap.as_picos();
        let now = self.now;
        let entry = self.flowlet[node as usize].get(&pk.flow).copied();
        let port = match entry {
            Some((last, port)) if now - last <= gap && hops.contains(&port) => port,
            _ => hops[self.rng.below(n as u64) as usize],
        };
        self.flowlet[node as usize].insert(pk.flow, (now, port));
        port
    }

    pub(super) fn enqueue(&mut self, node: u32, e: u32, pid: u32, in_port: u32) {
        if self.kx.per_port {
            self.enqueue_per_port(node, e, pid, in_port);
            return;
        }
        let eu = e as usize;
        let pk = self.pkts[pid as usize];
        let cap = self.cfg.buffer.0;
        if pk.kind != K_DATA || pk.flags & F_TRIM != 0 {
            if self.node_buf[node as usize] + pk.wire as u64 > cap {
                self.t.drops_buffer += 1;
                self.pc[eu].drops += 1;
                self.release(pid);
                return;
            }
            self.queue_ctrl(node, e, pid);
            return;
        }
        let c = pk.class as usize;
        let k = eu * self.nclass + c;
        // Degraded ports see their depth scaled up (thresholds scaled down).
        let depth = self.scaled_depth(eu, self.cq[k].bytes);
        if let Some(tp) = self.cfg.trim
            && let TrimDecision::Trim { size } = tp.decide(Bytes(depth), Bytes(pk.wire as u64))
        {
            let pkm = &mut self.pkts[pid as usize];
            pkm.wire = size.0 as u32;
            pkm.flags |= F_TRIM;
            self.pc[eu].trims += 1;
            self.t.trims += 1;
            let w = pkm.wire as u64;
            if self.node_buf[node as usize] + w > cap {
                self.t.drops_buffer += 1;
                self.pc[eu].drops += 1;
                self.release(pid);
                return;
            }
            self.queue_ctrl(node, e, pid);
            return;
        }
        let w = pk.wire as u64;
        let over_buffer = self.node_buf[node as usize] + w > cap;
        let over_queue = !self.cfg.pfc
            && self
                .cfg
                .queue_limit
                .is_some_and(|l| self.scaled_depth(eu, self.cq[k].bytes + w) > l.0);
        if over_buffer || over_queue {
            self.t.drops_buffer += 1;
            self.pc[eu].drops += 1;
            self.release(pid);
            return;
        }
        self.push_data(node, e, pid, in_port);
    }
}
