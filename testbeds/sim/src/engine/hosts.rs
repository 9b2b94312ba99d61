//! Hosts: flow start, the NIC pulling paced data from flows, retransmission timers,
//! delivery, ACK/NACK/CNP/credit handling and the receiver-side algorithms.

use super::*;

impl<Q: EventQueue> Sim<Q> {
    pub(super) fn kick_host(&mut self, h: u32) {
        for p in self.net.ports_of(h) {
            self.try_tx(p);
        }
    }

    pub(super) fn flow_start(&mut self, f: u32) {
        let fl = &mut self.flows[f as usize];
        if fl.started {
            return;
        }
        fl.started = true;
        fl.start_at = self.now;
        fl.last_progress = self.now;
        fl.next_tx = self.now;
        let src = fl.src;
        // A multi-plane NIC's line rate is the sum of its ports.
        let line = self.net.nic_rate(src);
        if let CcChoice::Algo(k) = self.cfg.cc {
            let path = PathParams {
                line_rate: line,
                base_rtt: Duration::picos(self.base_rtt_for(src, self.flows[f as usize].dst)),
                // cc-algos counts the MTU on the wire (payload + 64 B of headers).
                mtu: self.cfg.mtu + self.cfg.header,
            };
            match self.with_init_window(k.config(&path)).build() {
                Ok(cc) => {
                    let fl = &mut self.flows[f as usize];
                    if let AnyCc::Rccc(r) = &cc {
                        fl.to_request = r.request_for(Bytes(fl.size)).0;
                    }
                    fl.cc = Some(cc);
                }
                // An initial window the algorithm cannot take: fall back to its preset
                // (init_knobs has rejected a zero window).
                Err(_) => {
                    let cc = k
                        .build(&path)
                        .unwrap_or_else(|e| panic!("cc-algos refused its own preset for {k}: {e}"));
                    self.flows[f as usize].cc = Some(cc);
                }
            }
        }
        let kind = match self.cfg.lb {
            LbScheme::Spray => Some(EvPolicyKind::Oblivious),
            LbScheme::Reps => Some(EvPolicyKind::Reps),
            LbScheme::Bitmap => Some(EvPolicyKind::Bitmap),
            LbScheme::Mixed => Some(EvPolicyKind::Mixed),
            _ => None,
        };
        if let Some(kind) = kind {
            let seed = mix64(self.cfg.seed ^ (f as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15));
            let pol = EvConfig::new(self.cfg.evs, seed)
                .build(kind)
                .expect("evs validated at construction");
            self.flows[f as usize].ev = Some(Box::new(pol));
        }
        self.hosts[src as usize].active.push(f);
        self.arm_cc_timer(f);
        self.kick_host(src);
    }

    /// Unloaded round-trip time between two hosts along the first route: per hop
    /// the link delay and switching latency both ways, plus one data frame and one
    /// ACK serialisation per hop.
    pub fn base_rtt(&self, src: u32, dst: u32) -> u64 {
        let mut node;
        let mut total = 0u64;
        let data = self.cfg.mtu.0 + self.cfg.header.0;
        let ack = self.cfg.ctrl_size.0;
        let mut port = match self.net.ports_of(src).next() {
            Some(p) => p,
            None => return 0,
        };
        for _ in 0..64 {
            let pu = port as usize;
            let d = self.net.port_delay[pu].as_picos();
            let r = self.net.port_rate[pu];
            total += 2 * d + r.tx_time(Bytes(data)).as_picos() + r.tx_time(Bytes(ack)).as_picos();
            let next = self.net.port_node[self.net.port_peer[pu] as usize];
            if next == dst {
                return total;
            }
            if !self.net.is_host(next) {
                total += 2 * self.cfg.switch_latency.as_picos();
            }
            node = next;
            let hops = self.router.next_hops(node, dst);
            let Some(&h) = hops.first() else { return total };
            port = self.net.port_off[node as usize] + h as u32;
        }
        total
    }

    /// Choose a data packet for host `h`'s port `p`, or schedule a wake-up.
    pub(super) fn host_pull(&mut self, h: u32, p: u32) -> Option<u32> {
        let hu = h as usize;
        let n = self.hosts[hu].active.len();
        if n == 0 {
            return None;
        }
        let local = (p - self.net.port_off[hu]) as u8;
        let mut earliest = u64::MAX;
        let now = self.now;
        let nowi = Instant::from_picos(now);
        // Round robin from `rr`, without a division on the common path (`rr` ≤ n
        // unless flows finished since).
        let rr = self.hosts[hu].rr;
        let start = if rr < n { rr } else { rr % n };
        for k in 0..n {
            let idx = if start + k < n {
                start + k
            } else {
                start + k - n
            };
            let f = self.hosts[hu].active[idx];
            let fl = &self.flows[f as usize];
            if fl.pin != u8::MAX && fl.pin != local {
                continue;
            }
            if self.cfg.pfc && self.pfc_out[p as usize].is_paused(nowi, fl.prio) {
                continue;
            }
            // Anything to send?
            let has_retx = !fl.retx.is_empty();
            let has_new = fl.next_seq < fl.npkts && now < fl.stop;
            if !has_retx && !has_new {
                continue;
            }
            let payload = self.cfg.mtu.0;
            if let Some(cc) = &fl.cc
                && let Some(w) = cc.window()
                && fl.inflight > 0
                && fl.inflight + payload > w.0
            {
                continue;
            }
            if let Some(cc) = &fl.cc
                && cc.credit() == Some(Bytes::ZERO)
            {
                continue;
            }
            if fl.next_tx > now {
                earliest = earliest.min(fl.next_tx);
                continue;
            }
            // Found one.
            if let Some(i) = self.make_data(f, p) {
                self.hosts[hu].rr = idx + 1;
                return Some(i);
            }
        }
        if earliest != u64::MAX && earliest < self.hosts[hu].wake_at {
            self.hosts[hu].wake_at = earliest;
            self.q.push(earliest, EV_HOSTWAKE, h);
        }
        None
    }

    pub(super) fn payload_of(&self, f: &FlowState, seq: u32) -> u64 {
        let mtu = self.cfg.mtu.0;
        if f.size == u64::MAX {
            mtu
        } else {
            (f.size - seq as u64 * mtu).min(mtu)
        }
    }

    pub(super) fn make_data(&mut self, f: u32, p: u32) -> Option<u32> {
        let fu = f as usize;
        // Next sequence: a retransmission first.
        let (seq, retransmission) = loop {
            match self.flows[fu].retx.pop_front() {
                Some(s) if self.flows[fu].pstate[s as usize] == S_RETXQ => {
                    self.flows[fu].retransmits += 1;
                    self.t.retransmits += 1;
                    break (s, true);
                }
                Some(_) => continue,
                None => {
                    let fl = &mut self.flows[fu];
                    if fl.next_seq >= fl.npkts || self.now >= fl.stop {
                        return None;
                    }
                    let s = fl.next_seq;
                    fl.next_seq += 1;
                    fl.pstate.push(0);
                    break (s, false);
                }
            }
        };
        let payload = self.payload_of(&self.flows[fu], seq);
        let ev = self.pick_ev(f);
        let fl = &mut self.flows[fu];
        fl.pstate[seq as usize] = S_INFLIGHT;
        if fl.inflight == 0 {
            // Nothing was outstanding: the retransmit timer runs from this packet (as
            // htsim's `startRTO`), not from the last ACK, long past for a paced flow.
            fl.last_progress = self.now;
        }
        fl.inflight += payload;
        let wire = payload + self.cfg.header.0;
        let rate = fl.cc.as_ref().map(|c| c.rate()).unwrap_or(Rate::ZERO);
        let line = self.net.port_rate[p as usize];
        if rate != Rate::ZERO && rate < line {
            fl.next_tx = fl.next_tx.max(self.now) + links::tx_ps(rate, wire);
        } else {
            fl.next_tx = self.now;
        }
        let now = Instant::from_picos(self.now);
        if let Some(cc) = fl.cc.as_mut() {
            cc.on_send(now, Bytes(payload));
        }
        let req = fl.to_request.min(u32::MAX as u64);
        fl.to_request -= req;
        let ar = if self.wants_ack(&self.flows[fu], retransmission) {
            F_AR
        } else {
            0
        };
        let fl = &mut self.flows[fu];
        let pk = Pkt {
            next: NIL,
            flow: f,
            seq,
            wire: wire as u32,
            dst: fl.dst,
            port: 0,
            sent_at: self.now,
            req: req as u32,
            ev,
            kind: K_DATA,
            class: fl.class,
            flags: ar,
            round: fl.round,
            hop: 0,
            egress_hint: self.paths.hint(f, false, 0),
        };
        if fl.rto_at == u64::MAX {
            fl.rto_at = self.now + self.kx.rto;
            self.q.push(fl.rto_at, EV_RTO, f);
        }
        self.t.data_pkts += 1;
        self.arm_cc_timer(f);
        Some(self.alloc(pk))
    }

    /// The entropy value for the next packet of a flow (the `cc-algos` EV policy
    /// for spraying schemes, a fixed per-flow value otherwise).
    pub(super) fn pick_ev(&mut self, f: u32) -> u16 {
        let fl = &mut self.flows[f as usize];
        match fl.ev.as_mut() {
            Some(p) => p.next_ev(),
            None => fl.ev_next,
        }
    }

    pub(super) fn arm_cc_timer(&mut self, f: u32) {
        let fl = &mut self.flows[f as usize];
        if let Some(t) = fl.cc.as_ref().and_then(|c| c.next_timeout()) {
            let t = t.picos().max(self.now);
            if t < fl.timer_at || fl.timer_at < self.now {
                fl.timer_at = t;
                self.q.push(t, EV_CCTIMER, f);
            }
        }
    }

    pub(super) fn cc_timer(&mut self, f: u32) {
        let fu = f as usize;
        if self.flows[fu].timer_at != self.now || self.flows[fu].done {
            return;
        }
        self.flows[fu].timer_at = u64::MAX;
        let now = Instant::from_picos(self.now);
        if let Some(cc) = self.flows[fu].cc.as_mut()
            && cc.next_timeout().is_some_and(|t| t <= now)
        {
            cc.on_timeout(now);
        }
        self.arm_cc_timer(f);
        let src = self.flows[fu].src;
        self.kick_host(src);
    }

    pub(super) fn on_rto(&mut self, f: u32) {
        let fu = f as usize;
        let rto = self.kx.rto;
        if self.flows[fu].rto_at != self.now {
            return;
        }
        self.flows[fu].rto_at = u64::MAX;
        if self.flows[fu].done {
            return;
        }
        let fl = &self.flows[fu];
        if fl.inflight > 0 && self.now >= fl.last_progress + rto {
            // Everything in flight is presumed lost.
            let mut lost = 0;
            let seqs: Vec<u32> = (0..fl.pstate.len() as u32)
                .filter(|&s| fl.pstate[s as usize] == S_INFLIGHT)
                .collect();
            for s in seqs {
                let pl = self.payload_of(&self.flows[fu], s);
                let fl = &mut self.flows[fu];
                fl.pstate[s as usize] = S_RETXQ;
                fl.retx.push_back(s);
                lost += pl;
            }
            let fl = &mut self.flows[fu];
            fl.inflight = 0;
            fl.timeouts += 1;
            fl.last_progress = self.now;
            self.t.timeouts += 1;
            if let Some(cc) = fl.cc.as_mut() {
                cc.on_nack(Instant::from_picos(self.now), Bytes(lost));
            }
            let src = fl.src;
            self.arm_cc_timer(f);
            self.kick_host(src);
        }
        let fl = &mut self.flows[fu];
        let next = (fl.last_progress + rto).max(self.now + rto / 4);
        fl.rto_at = next;
        self.q.push(next, EV_RTO, f);
    }

    /// Put a control packet on a host's NIC; returns its slot.
    pub(super) fn send_ctrl(&mut self, h: u32, pk: Pkt, choose_by: u64) -> Option<u32> {
        let ports = self.net.ports_of(h);
        let n = ports.len() as u64;
        if n == 0 {
            return None;
        }
        // First live port starting from a hash of the flow.
        let start = choose_by % n;
        let mut port = None;
        for k in 0..n {
            let p = ports.start + ((start + k) % n) as u32;
            if self.up[p as usize] {
                port = Some(p);
                break;
            }
        }
        let p = port?;
        let egress_hint = self.paths.hint(pk.flow, pk.back(), 0);
        let pid = self.alloc(Pkt {
            hop: 0,
            egress_hint,
            ..pk
        });
        self.port[p as usize].ctrl_q.push(&mut self.pkts, pid);
        self.try_tx(p);
        Some(pid)
    }

    pub(super) fn deliver(&mut self, h: u32, pid: u32) {
        let pk = self.pkts[pid as usize];
        if self.kx.int_on {
            self.int_take(pid);
        }
        self.release(pid);
        self.delivered += 1;
        let f = pk.flow;
        let fu = f as usize;
        if pk.round != self.flows[fu].round {
            // A packet of a previous round of a repeating workload.
            return;
        }
        match pk.kind {
            K_DATA => {
                let src = self.flows[fu].src;
                let hash = self.flows[fu].hash;
                let ctrl = self.cfg.ctrl_size.0 as u32;
                if pk.flags & F_TRIM != 0 {
                    // With ACK coalescing, a trimmed header also flushes the ACK of
                    // what was received before it, and the receiver remembers the hole
                    // (beyond htsim's sink, see docs/sim.md): the NACK shrinks the
                    // sender's window, and without these ACKs the retransmission can
                    // wait behind packets already delivered until the timeout.
                    if self.cfg.ack_every.is_some() {
                        self.flush_ack(h, f);
                        let fl = &mut self.flows[fu];
                        let have = fl
                            .rcvd
                            .get(pk.seq as usize / 64)
                            .is_some_and(|w| w & (1u64 << (pk.seq % 64)) != 0);
                        if !have && !fl.rx_holes.contains(&pk.seq) {
                            fl.rx_holes.push(pk.seq);
                        }
                    }
                    self.receiver_data(h, &pk, true);
                    self.t.nacks += 1;
                    let nack = Pkt {
                        kind: K_NACK,
                        wire: ctrl,
                        dst: src,
                        flags: 0,
                        ..pk
                    };
                    let _ = self.send_ctrl(h, nack, hash);
                    return;
                }
                let ce = pk.flags & F_CE != 0;
                // Receiver bookkeeping.
                let fl = &mut self.flows[fu];
                let w = pk.seq as usize / 64;
                if fl.rcvd.len() <= w {
                    fl.rcvd.resize(w + 1, 0);
                }
                let bit = 1u64 << (pk.seq % 64);
                let dup = fl.rcvd[w] & bit != 0;
                if !dup {
                    fl.rcvd[w] |= bit;
                    let pl = self.payload_of(&self.flows[fu], pk.seq);
                    let fl = &mut self.flows[fu];
                    fl.recvd += pl;
                    if fl.size != u64::MAX && fl.recvd >= fl.size && fl.recv_done == 0 {
                        fl.recv_done = self.now.max(1);
                        self.release_dependents(f);
                    }
                }
                // ACK every data packet, or every `ack_every` bytes.
                self.send_ack(h, &pk, ce, dup);
                // Receiver-side algorithm (DCQCN NP, RCCC credit pacer).
                self.receiver_data(h, &pk, false);
            }
            K_ACK => self.on_ack(f, &pk),
            K_NACK => {
                let seq = pk.seq as usize;
                let pl = self.payload_of(&self.flows[fu], pk.seq);
                let fl = &mut self.flows[fu];
                fl.nacks += 1;
                if let Some(p) = fl.ev.as_mut() {
                    p.on_feedback(pk.ev, PathSignal::Nack);
                }
                if fl.pstate.get(seq) == Some(&S_INFLIGHT) {
                    fl.pstate[seq] = S_RETXQ;
                    fl.retx.push_back(pk.seq);
                    fl.inflight -= pl;
                    fl.last_progress = self.now;
                    if let Some(cc) = fl.cc.as_mut() {
                        cc.on_nack(Instant::from_picos(self.now), Bytes(pl));
                    }
                }
                self.arm_cc_timer(f);
                let src = self.flows[fu].src;
                self.kick_host(src);
            }
            K_CREDIT => {
                if let Some(cc) = self.flows[fu].cc.as_mut() {
                    cc.on_credit(Instant::from_picos(self.now), Bytes(pk.req as u64));
                }
                let src = self.flows[fu].src;
                self.kick_host(src);
            }
            K_CNP => {
                self.flows[fu].cnps += 1;
                if let Some(cc) = self.flows[fu].cc.as_mut() {
                    cc.on_cnp(Instant::from_picos(self.now));
                }
                self.arm_cc_timer(f);
                let src = self.flows[fu].src;
                self.kick_host(src);
            }
            _ => {}
        }
    }

    /// Feed a data arrival to the host's receiver algorithm and send what it says.
    pub(super) fn receiver_data(&mut self, h: u32, pk: &Pkt, trimmed: bool) {
        let hu = h as usize;
        let trimmed_bytes = self.payload_of(&self.flows[pk.flow as usize], pk.seq);
        let Some(rx) = self.hosts[hu].rx.as_mut() else {
            return;
        };
        let now = Instant::from_picos(self.now);
        if pk.req > 0
            && let AnyReceiver::Rccc(r) = rx
        {
            r.on_request(now, pk.flow as u64, Bytes(pk.req as u64));
        }
        let payload = (pk.wire as u64).saturating_sub(self.cfg.header.0);
        rx.on_data(
            now,
            DataArrival {
                flow: pk.flow as u64,
                bytes: if trimmed {
                    Bytes(trimmed_bytes)
                } else {
                    Bytes(payload)
                },
                ce: pk.flags & F_CE != 0,
                trimmed,
            },
        );
        self.poll_receiver(h);
    }

    pub(super) fn poll_receiver(&mut self, h: u32) {
        let hu = h as usize;
        let now = Instant::from_picos(self.now);
        let ctrl = self.cfg.ctrl_size.0 as u32;
        loop {
            let Some(rx) = self.hosts[hu].rx.as_mut() else {
                return;
            };
            let Some(fb) = rx.poll_feedback(now) else {
                break;
            };
            let (flow, kind, req) = match fb {
                Feedback::Cnp { flow } => {
                    self.t.cnps += 1;
                    (flow as u32, K_CNP, 0)
                }
                Feedback::Credit { flow, bytes } => {
                    self.t.credits += 1;
                    (flow as u32, K_CREDIT, bytes.0.min(u32::MAX as u64) as u32)
                }
            };
            let Some(fl) = self.flows.get(flow as usize) else {
                continue;
            };
            let (src, hash) = (fl.src, fl.hash);
            let pk = Pkt {
                flow,
                kind,
                wire: ctrl,
                dst: src,
                req,
                ev: fl.ev_next,
                round: fl.round,
                ..Pkt::default()
            };
            let _ = self.send_ctrl(h, pk, hash);
        }
        if let Some(t) = self.hosts[hu].rx.as_ref().and_then(|r| r.next_timeout()) {
            let t = t.picos().max(self.now + 1);
            let cur = self.hosts[hu].rx_timer;
            if t < cur || cur <= self.now {
                self.hosts[hu].rx_timer = t;
                self.q.push(t, EV_RXTIMER, h);
            }
        }
    }

    pub(super) fn on_ack(&mut self, f: u32, pk: &Pkt) {
        let fu = f as usize;
        let now = Instant::from_picos(self.now);
        let ecn = pk.flags & F_ECHO != 0;
        let mut newly = 0u64;
        self.acked_seqs(pk, |s, seq| newly += s.ack_one(fu, seq));
        let fl = &mut self.flows[fu];
        if newly > 0 {
            fl.last_progress = self.now;
        }
        if let Some(p) = fl.ev.as_mut() {
            p.on_feedback(
                pk.ev,
                if ecn {
                    PathSignal::Ecn
                } else {
                    PathSignal::Good
                },
            );
        }
        fl.last_rtt = self.now - pk.sent_at;
        if let Some(cc) = fl.cc.as_mut() {
            let ack = Ack {
                acked: Bytes(newly),
                ecn_echo: ecn,
                rtt: Some(Duration::picos(self.now - pk.sent_at)),
            };
            if self.kx.int_on && !self.kx.int_scratch.is_empty() {
                cc.on_ack_int(now, ack, &self.kx.int_scratch);
            } else {
                cc.on_ack(now, ack);
            }
        }
        let complete = if fl.size == u64::MAX {
            self.now >= fl.stop && fl.inflight == 0 && fl.retx.is_empty()
        } else {
            fl.acked >= fl.size
        };
        if complete && !fl.done {
            fl.done = true;
            fl.finish = self.now;
            fl.ev = None;
            let src = fl.src;
            self.flows_done += 1;
            let act = &mut self.hosts[src as usize].active;
            if let Some(i) = act.iter().position(|&x| x == f) {
                act.remove(i);
            }
            if self.flows_done == self.flows.len() as u64 && !self.repeating() {
                self.stop = Stop::AllDone;
            }
            self.repeat_on_done(f);
            self.emit_flow_finished(f);
            return;
        }
        self.arm_cc_timer(f);
        let src = self.flows[fu].src;
        self.kick_host(src);
    }

    /// Mark one sequence number acknowledged; returns its payload if it is news.
    fn ack_one(&mut self, fu: usize, seq: u32) -> u64 {
        let pl = self.payload_of(&self.flows[fu], seq);
        let fl = &mut self.flows[fu];
        let newly = match fl.pstate.get(seq as usize) {
            Some(&S_INFLIGHT) => {
                fl.inflight -= pl;
                true
            }
            Some(&S_RETXQ) => true,
            _ => false,
        };
        if newly {
            fl.pstate[seq as usize] = S_ACKED;
            fl.acked += pl;
            pl
        } else {
            0
        }
    }

    pub(super) fn release_dependents(&mut self, f: u32) {
        let deps = std::mem::take(&mut self.dependents[f as usize]);
        for &d in &deps {
            let fl = &mut self.flows[d as usize];
            fl.deps_left -= 1;
            if fl.deps_left == 0 {
                let t = fl.start_at.max(self.now);
                self.q.push(t, EV_FLOWSTART, d);
            }
        }
        self.dependents[f as usize] = deps;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::net::NetBuilder;

    /// A flow that sends after a gap with nothing in flight (paced at a low rate, its
    /// previous packets all ACKed) starts its retransmit timer at that packet: the last
    /// ACK, more than a timeout ago, must not make the new packet look lost at the next
    /// timer check. Before the fix that check fired a timeout with no packet lost.
    #[test]
    fn a_packet_sent_with_nothing_in_flight_restarts_the_timer() {
        let net = NetBuilder::star(2, Rate::gbps(100), Duration::nanos(500));
        let scen = scenario::Scenario::from_toml_str(
            "[[workload]]\nkind = \"incast\"\nsenders = \"1..2\"\nreceiver = 0\nsize = \"1MB\"\n",
            "t.toml",
        )
        .unwrap();
        let plan = scen
            .compile(&scenario::CompileCtx::new(2, Rate::gbps(100), 1))
            .unwrap();
        let mut sim = Sim::from_net(net, SimConfig::default(), &plan).unwrap();
        // The flow's last progress (an ACK) was at 0; nothing is in flight.
        let rto = sim.kx.rto;
        sim.now = 10 * rto;
        sim.flows[0].started = true;
        sim.flows[0].last_progress = 0;
        assert_eq!(sim.flows[0].inflight, 0);
        let nic = sim.net.ports_of(1).next().unwrap();
        sim.make_data(0, nic).expect("a packet");
        // The timer's next check, right after the send.
        sim.now += 1;
        sim.flows[0].rto_at = sim.now;
        sim.on_rto(0);
        assert_eq!(sim.flows[0].timeouts, 0, "a timeout 1 ps after the send");
        assert!(sim.flows[0].inflight > 0);
    }
}
