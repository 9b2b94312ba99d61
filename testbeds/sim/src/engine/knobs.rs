//! The knobs htsim users expect (docs/sim.md maps each to its htsim flag): degraded
//! links, the base RTT senders assume, the initial window, ACK coalescing and the
//! per-port buffer model. Their state lives in [`KnobState`]; a run that uses none of
//! them only pays for a few `is_empty()` / `bool` checks.

use super::*;
use crate::config::{BaseRttMode, BufferModel, QueueSize, TrimVictim};
use cc_algos::IntHop;
use scenario::DegradeSpec;

/// State of the optional knobs.
#[derive(Debug, Default)]
pub(super) struct KnobState {
    /// Per-port buffer model in use.
    pub per_port: bool,
    /// Per-port model: data queue limit per egress port, bytes (at full rate).
    pub pp_queue: u64,
    /// Per-port model: header/control queue limit per egress port, bytes.
    pub pp_header: u64,
    /// Per-port model: which packet a full queue trims.
    pub victim: TrimVictim,
    /// Per-port model: bytes in each port's control queue.
    pub ctrl_bytes: Vec<u64>,
    /// Degraded links: every degradation's spec and ports.
    pub degrades: Vec<(DegradeSpec, Vec<u32>)>,
    /// Rate fraction of every port (empty: nothing is ever degraded in this run).
    pub scale: Vec<f64>,
    /// Nominal port rates (empty unless something is degraded).
    pub nominal: Vec<Rate>,
    /// The network's largest unloaded RTT, ps (0: not needed by this run).
    pub net_max_rtt: u64,
    /// The retransmission timeout in force, ps (`SimConfig::rto`, or derived).
    pub rto: u64,
    /// ACK coalescing: the sequence numbers each coalesced ACK covers (an ACK's
    /// `req` is its slot + 1), and the free slots.
    pub ack_sets: Vec<Vec<u32>>,
    pub ack_free: Vec<u32>,
    /// HPCC: in-band telemetry is stamped and echoed.
    pub int_on: bool,
    /// INT records of every packet slot (HPCC runs only).
    pub int_hops: Vec<Vec<IntHop>>,
    /// The INT of the packet being delivered.
    pub int_scratch: Vec<IntHop>,
}

impl<Q: EventQueue> Sim<Q> {
    /// Resolve the knobs against the fabric and schedule degradations.
    pub(super) fn init_knobs(&mut self) -> Result<(), SimError> {
        let np = self.net.ports() as usize;
        self.kx.int_on = matches!(self.cfg.cc, CcChoice::Algo(cc_algos::CcKind::Hpcc));
        if let Some(w) = self.cfg.init_window
            && w.bytes(self.cfg.mtu) == Bytes::ZERO
        {
            return Err(SimError::Config("init_window must be positive".into()));
        }
        let needs_max = self.cfg.base_rtt == BaseRttMode::NetworkMax
            || self.cfg.rto.is_none()
            || matches!(
                self.cfg.buffer_model,
                BufferModel::PerPort {
                    queue: QueueSize::Bdp(_),
                    ..
                }
            );
        if needs_max {
            self.kx.net_max_rtt = self.network_max_rtt();
        }
        if let BufferModel::PerPort {
            queue,
            header_queue,
            victim,
        } = self.cfg.buffer_model
        {
            let wire = self.cfg.mtu.0 + self.cfg.header.0;
            let q = match queue {
                QueueSize::Bytes(b) => b.0,
                // htsim (`main_uec.cpp`): ceil(BDP / packet) packets, times the factor.
                QueueSize::Bdp(f) => (f * self.bdp_packets() as f64).round() as u64 * wire,
            };
            if q < wire {
                return Err(SimError::Config(format!(
                    "per-port queue of {q} B cannot hold one {wire} B packet"
                )));
            }
            self.kx.per_port = true;
            self.kx.pp_queue = q;
            self.kx.pp_header = header_queue.map(|b| b.0).unwrap_or(2 * q);
            self.kx.victim = victim;
            self.kx.ctrl_bytes = vec![0; np];
        }
        self.kx.rto = match self.cfg.rto {
            Some(d) => d.as_picos(),
            None => self.htsim_rto(),
        };
        let specs: Vec<DegradeSpec> = self
            .cfg
            .degraded
            .iter()
            .chain(&self.plan.degrades)
            .cloned()
            .collect();
        if specs.len() >= DEGRADE_BIT as usize {
            return Err(SimError::TooLarge(format!(
                "{} degraded links",
                specs.len()
            )));
        }
        for (i, d) in specs.into_iter().enumerate() {
            let n = self.net.nodes();
            let Some(p) = (d.from < n && d.to < n)
                .then(|| self.net.port_to(d.from, d.to))
                .flatten()
            else {
                return Err(SimError::Config(format!(
                    "degrade[{i}]: no link between nodes {} and {} ({n} nodes)",
                    d.from, d.to
                )));
            };
            if !(d.fraction > 0.0 && d.fraction <= 1.0) {
                return Err(SimError::Config(format!(
                    "degrade[{i}].fraction: {} is outside (0, 1]",
                    d.fraction
                )));
            }
            let mut ports = vec![p];
            if d.both {
                ports.push(self.net.port_peer[p as usize]);
            }
            if self.kx.scale.is_empty() {
                self.kx.scale = vec![1.0; np];
                self.kx.nominal = self.net.port_rate.clone();
            }
            let id = i as u32 | DEGRADE_BIT;
            let (at, until) = (d.at.picos(), d.until.map(|u| u.picos()));
            self.kx.degrades.push((d, ports));
            if at == 0 {
                self.degrade(i as u32, true);
            } else {
                self.q.push(at, EV_FAIL, id);
            }
            if let Some(u) = until {
                self.q.push(u, EV_RESTORE, id);
            }
        }
        Ok(())
    }

    /// Degradation `i` starts (`on`) or ends: its ports' rates, queue limits and ECN
    /// thresholds scale by its fraction (htsim `alloc_queue(.., reduced_speed)` scales
    /// the queue's speed, size and ECN thresholds by `_failed_link_ratio`).
    pub(super) fn degrade(&mut self, i: u32, on: bool) {
        let (d, ports) = &self.kx.degrades[i as usize];
        let f = if on { d.fraction } else { 1.0 };
        for &p in ports {
            let pu = p as usize;
            self.kx.scale[pu] = f;
            let r = self.kx.nominal[pu].as_bps_f64() * f;
            self.net.port_rate[pu] = Rate::from_bps_f64(r);
            self.port[pu].set_rate(self.net.port_rate[pu]);
        }
    }

    /// A queue depth as the port's thresholds see it: degraded ports compare
    /// `bytes / fraction` against unscaled thresholds (the same as scaling them).
    #[inline]
    pub(super) fn scaled_depth(&self, port: usize, bytes: u64) -> u64 {
        match self.kx.scale.get(port) {
            Some(&s) if s < 1.0 => (bytes as f64 / s) as u64,
            _ => bytes,
        }
    }

    /// The nominal (undegraded) rate of a port.
    pub(super) fn nominal_rate(&self, port: usize) -> Rate {
        self.kx
            .nominal
            .get(port)
            .copied()
            .unwrap_or(self.net.port_rate[port])
    }

    /// The base RTT the algorithm of a flow from `src` to `dst` is built with
    /// (its path's, or the network's largest, by `SimConfig::base_rtt`).
    pub fn assumed_base_rtt(&self, src: u32, dst: u32) -> Duration {
        Duration::picos(self.base_rtt_for(src, dst))
    }

    /// The per-port model's data queue per egress port (at full rate), if in use.
    pub fn per_port_queue(&self) -> Option<Bytes> {
        self.kx.per_port.then_some(Bytes(self.kx.pp_queue))
    }

    /// The network's bandwidth-delay product in whole packets, rounded up as htsim's
    /// `calculate_bdp_pkt`: the largest host rate × the largest unloaded RTT.
    fn bdp_packets(&self) -> u64 {
        let wire = self.cfg.mtu.0 + self.cfg.header.0;
        let bdp = self.host_rate().bdp(Duration::picos(self.kx.net_max_rtt)).0;
        bdp.div_ceil(wire).max(1)
    }

    /// The largest host NIC rate.
    fn host_rate(&self) -> Rate {
        (0..self.net.hosts)
            .map(|h| self.net.nic_rate(h))
            .max()
            .unwrap_or(Rate::gbps(100))
    }

    /// htsim's minimum RTO (`main_uec.cpp`): 15 µs plus six times the time one port's
    /// queue takes to drain at the host rate; the queue is the per-port model's, or
    /// one BDP (in whole packets) with the shared buffer.
    fn htsim_rto(&self) -> u64 {
        let queue = if self.kx.per_port {
            self.kx.pp_queue
        } else {
            self.bdp_packets() * (self.cfg.mtu.0 + self.cfg.header.0)
        };
        Duration::micros(15).as_picos() + 6 * links::tx_ps(self.host_rate(), queue)
    }

    /// The retransmission timeout in force (`SimConfig::rto`, or derived as htsim's).
    pub fn rto(&self) -> Duration {
        Duration::picos(self.kx.rto)
    }

    /// The base RTT a flow's algorithm is built with.
    pub(super) fn base_rtt_for(&self, src: u32, dst: u32) -> u64 {
        match self.cfg.base_rtt {
            BaseRttMode::Path => self.base_rtt(src, dst),
            BaseRttMode::NetworkMax => self.kx.net_max_rtt,
        }
    }

    /// The largest unloaded RTT between hosts: from host 0 to every host and back
    /// (the diameter of a symmetric fabric), and over the workload's pairs.
    fn network_max_rtt(&self) -> u64 {
        let h = self.net.hosts;
        let mut m = (1..h)
            .map(|d| self.base_rtt(0, d).max(self.base_rtt(d, 0)))
            .max()
            .unwrap_or(0);
        for f in self.flows.iter().take(1 << 16) {
            m = m.max(self.base_rtt(f.src, f.dst));
        }
        m
    }

    /// The initial window for a flow's configuration, if one is set.
    pub(super) fn with_init_window(&self, cfg: cc_algos::CcConfig) -> cc_algos::CcConfig {
        match self.cfg.init_window {
            Some(w) => cfg.with_initial_window(w.bytes(self.cfg.mtu + self.cfg.header)),
            None => cfg,
        }
    }

    /// ACK a data packet, or (ACK coalescing) remember it until htsim's UEC sink
    /// (`UecSink::processData`) would ACK: `ack_every` bytes are pending, the packet
    /// carried CE, it is the flow's first packet, the sender asked for an ACK (AR), an
    /// AR arrived while packets were out of order and they have now drained, the packet
    /// was a duplicate, or the flow is complete. Beyond htsim, it also ACKs at once
    /// while a packet it NACKed has not arrived again (docs/sim.md says why). A
    /// coalesced ACK covers every pending packet and echoes CE if any of them had it.
    pub(super) fn send_ack(&mut self, h: u32, pk: &Pkt, ce: bool, dup: bool) {
        let Some(n) = self.cfg.ack_every else {
            self.emit_ack(h, pk, ce, 0);
            return;
        };
        let fu = pk.flow as usize;
        let pl = self.payload_of(&self.flows[fu], pk.seq);
        let drained = !dup && self.track_in_order(fu, pk.seq, pk.flags & F_AR != 0);
        let fl = &mut self.flows[fu];
        fl.rx_pending.push(pk.seq);
        fl.rx_pending_bytes += pl;
        fl.rx_ce |= ce;
        fl.rx_last = *pk;
        let complete = fl.size != u64::MAX && fl.recvd >= fl.size;
        let first = !dup && fl.recvd == pl;
        if let Some(i) = fl.rx_holes.iter().position(|&s| s == pk.seq) {
            fl.rx_holes.swap_remove(i);
        }
        let hole = !fl.rx_holes.is_empty();
        let at_once = fl.rx_pending_bytes >= n.0
            || pk.flags & F_AR != 0
            || ce
            || first
            || drained
            || hole
            || dup
            || complete;
        if at_once {
            self.flush_ack(h, pk.flow);
        }
    }

    /// ACK coalescing: send one ACK for every packet of flow `f` received and not yet
    /// ACKed (nothing if there is none). It carries the newest one's send time and
    /// entropy value, and CE if any of them had it.
    pub(super) fn flush_ack(&mut self, h: u32, f: u32) {
        let fl = &mut self.flows[f as usize];
        if fl.rx_pending.is_empty() {
            return;
        }
        let echo = fl.rx_ce;
        let last = fl.rx_last;
        fl.rx_pending_bytes = 0;
        fl.rx_ce = false;
        let slot = match self.kx.ack_free.pop() {
            Some(s) => s as usize,
            None => {
                self.kx.ack_sets.push(Vec::new());
                self.kx.ack_sets.len() - 1
            }
        };
        std::mem::swap(
            &mut self.kx.ack_sets[slot],
            &mut self.flows[f as usize].rx_pending,
        );
        self.flows[f as usize].rx_pending.clear();
        self.emit_ack(h, &last, echo, slot as u32 + 1);
    }

    /// Send an ACK for data packet `pk` (`set` 0), or for the coalesced set `set`.
    fn emit_ack(&mut self, h: u32, pk: &Pkt, echo: bool, set: u32) {
        let fu = pk.flow as usize;
        let (src, hash) = (self.flows[fu].src, self.flows[fu].hash);
        self.t.acks += 1;
        let ack = Pkt {
            kind: K_ACK,
            wire: self.cfg.ctrl_size.0 as u32,
            dst: src,
            flags: if echo { F_ECHO } else { 0 },
            req: set,
            ..*pk
        };
        let id = self.send_ctrl(h, ack, hash);
        if self.kx.int_on
            && let Some(id) = id
        {
            self.int_echo(id);
        }
    }

    /// The sequence numbers an ACK covers, passed to `each` (the slot is recycled).
    pub(super) fn acked_seqs(&mut self, pk: &Pkt, mut each: impl FnMut(&mut Self, u32)) {
        if pk.req == 0 || self.cfg.ack_every.is_none() {
            each(self, pk.seq);
            return;
        }
        let slot = (pk.req - 1) as usize;
        let mut seqs = std::mem::take(&mut self.kx.ack_sets[slot]);
        for &s in &seqs {
            each(self, s);
        }
        seqs.clear();
        self.kx.ack_sets[slot] = seqs;
        self.kx.ack_free.push(slot as u32);
    }

    /// Receiver side of ACK coalescing: advance the in-order point past `seq` (a new
    /// packet, already in the `rcvd` bitmap) and count packets held out of order.
    /// Returns true when an earlier AR asked for an ACK once the out-of-order packets
    /// drained and they now have (htsim's `_ack_request`).
    fn track_in_order(&mut self, fu: usize, seq: u32, ar: bool) -> bool {
        let fl = &mut self.flows[fu];
        let has = |rcvd: &[u64], s: u32| {
            rcvd.get(s as usize / 64)
                .is_some_and(|w| w & (1u64 << (s % 64)) != 0)
        };
        if ar {
            fl.rx_ack_request = true;
        }
        if seq == fl.rx_next {
            fl.rx_next += 1;
            while has(&fl.rcvd, fl.rx_next) {
                fl.rx_next += 1;
                fl.rx_ooo -= 1;
            }
            if fl.rx_ooo == 0 && fl.rx_ack_request {
                fl.rx_ack_request = false;
                return true;
            }
        } else if seq > fl.rx_next {
            fl.rx_ooo += 1;
        }
        false
    }

    /// Whether the sender asks for an ACK at once with this packet (htsim's UEC source
    /// sets AR on every retransmission, on its last new packet, and when the packet
    /// fills its window): only matters with ACK coalescing.
    pub(super) fn wants_ack(&self, f: &FlowState, retransmission: bool) -> bool {
        if self.cfg.ack_every.is_none() {
            return false;
        }
        let last = f.next_seq >= f.npkts;
        let full =
            f.cc.as_ref()
                .and_then(|c| c.window())
                .is_some_and(|w| f.inflight + self.cfg.mtu.0 >= w.0);
        retransmission || last || full
    }

    /// Per-port buffer model: admit a packet into egress port `e`'s queues.
    pub(super) fn enqueue_per_port(&mut self, node: u32, e: u32, pid: u32, in_port: u32) {
        let eu = e as usize;
        let pk = self.pkts[pid as usize];
        if pk.kind != K_DATA || pk.flags & F_TRIM != 0 {
            self.enqueue_header(node, e, pid);
            return;
        }
        let w = pk.wire as u64;
        let limit = self.kx.pp_queue;
        let fits = |s: &Self| s.scaled_depth(eu, s.port[eu].qtotal + w) <= limit;
        if fits(self) {
            self.push_data(node, e, pid, in_port);
            return;
        }
        let Some(tp) = self.cfg.trim else {
            self.t.drops_buffer += 1;
            self.pc[eu].drops += 1;
            self.release(pid);
            return;
        };
        let k = eu * self.nclass + pk.class as usize;
        let victim = match self.kx.victim {
            _ if self.cq[k].q.is_empty() => TrimVictim::Arriving,
            TrimVictim::Htsim if self.rng.next_f64() < 0.5 => TrimVictim::Arriving,
            v => v,
        };
        let booted = match victim {
            TrimVictim::Arriving => {
                self.trim_into_header(node, e, pid, tp.trimmed_size);
                return;
            }
            TrimVictim::Head => self.unqueue_head(e, k),
            TrimVictim::Htsim => self.unqueue_tail(e, k, pid, in_port),
        };
        self.trim_into_header(node, e, booted, tp.trimmed_size);
        if victim == TrimVictim::Head {
            if fits(self) {
                self.push_data(node, e, pid, in_port);
            } else {
                self.trim_into_header(node, e, pid, tp.trimmed_size);
            }
        }
    }

    /// Trim a data packet to its header and queue it as a header.
    fn trim_into_header(&mut self, node: u32, e: u32, pid: u32, size: Bytes) {
        let pkm = &mut self.pkts[pid as usize];
        pkm.wire = size.0 as u32;
        pkm.flags |= F_TRIM;
        self.pc[e as usize].trims += 1;
        self.t.trims += 1;
        self.enqueue_header(node, e, pid);
    }

    /// Per-port model: queue a header or control packet (dropped above the cap).
    fn enqueue_header(&mut self, node: u32, e: u32, pid: u32) {
        let eu = e as usize;
        let w = self.pkts[pid as usize].wire as u64;
        if self.kx.ctrl_bytes[eu] + w > self.kx.pp_header {
            self.t.drops_buffer += 1;
            self.pc[eu].drops += 1;
            self.release(pid);
            return;
        }
        self.queue_ctrl(node, e, pid);
    }

    /// Take the packet at the head of data queue `k` of port `e` out (to be trimmed).
    fn unqueue_head(&mut self, e: u32, k: usize) -> u32 {
        let id = self.cq[k].q.pop(&mut self.pkts).expect("non-empty");
        self.unaccount(e, k, id);
        id
    }

    /// htsim's victim: the packet queued last leaves the data queue and the arriving
    /// packet `pid` takes its place. The packet slots swap contents so the FIFO link
    /// stays intact; the returned slot holds the booted packet.
    fn unqueue_tail(&mut self, e: u32, k: usize, pid: u32, in_port: u32) -> u32 {
        let tail = self.cq[k].q.tail;
        self.unaccount(e, k, tail);
        let node = self.net.port_node[e as usize];
        let booted = self.pkts[tail as usize];
        let arriving = self.pkts[pid as usize];
        self.pkts[pid as usize] = booted;
        // `tail` keeps its place (and its `next` = NIL) with the arriving packet's contents.
        self.pkts[tail as usize] = Pkt {
            next: NIL,
            port: in_port,
            ..arriving
        };
        self.account(node, e, k, tail);
        pid
    }

    /// Add the time since the last change × the port's queued bytes to its queue area
    /// (the mean queue's numerator); call before the port's `qtotal` changes.
    #[inline]
    pub(super) fn integrate_queue(&mut self, eu: usize) {
        self.pc[eu].q_area +=
            self.port[eu].qtotal as u128 * (self.now - self.pc[eu].q_last) as u128;
        self.pc[eu].q_last = self.now;
    }

    /// Remove a packet's bytes from a data queue's counters (and its ingress PFC count).
    fn unaccount(&mut self, e: u32, k: usize, id: u32) {
        let eu = e as usize;
        let pk = self.pkts[id as usize];
        let w = pk.wire as u64;
        self.integrate_queue(eu);
        self.cq[k].bytes -= w;
        self.port[eu].qtotal -= w;
        let node = self.net.port_node[eu];
        self.node_buf[node as usize] -= w;
        if self.cfg.pfc {
            let prio = self.prio_of[pk.class as usize];
            let now = Instant::from_picos(self.now);
            if let Some(fr) = self.pfc_in[pk.port as usize].on_dequeue(now, prio, Bytes(w)) {
                self.send_pfc(pk.port, fr);
            }
        }
    }

    /// Add a packet's bytes to a data queue's counters (and its ingress PFC count).
    fn account(&mut self, node: u32, e: u32, k: usize, id: u32) {
        let eu = e as usize;
        let pk = self.pkts[id as usize];
        let w = pk.wire as u64;
        self.integrate_queue(eu);
        self.cq[k].bytes += w;
        self.port[eu].qtotal += w;
        self.node_buf[node as usize] += w;
        if self.port[eu].qtotal > self.pc[eu].max_q {
            self.pc[eu].max_q = self.port[eu].qtotal;
        }
        if self.cfg.pfc {
            let prio = self.prio_of[pk.class as usize];
            let now = Instant::from_picos(self.now);
            if let Some(fr) = self.pfc_in[pk.port as usize].on_enqueue(now, prio, Bytes(w)) {
                self.send_pfc(pk.port, fr);
            }
        }
    }

    /// Queue a data packet at egress `e` (admission already decided).
    pub(super) fn push_data(&mut self, node: u32, e: u32, pid: u32, in_port: u32) {
        if self.sends_data_now(e as usize) {
            self.cut_through(e, pid);
            return;
        }
        let k = e as usize * self.nclass + self.pkts[pid as usize].class as usize;
        self.pkts[pid as usize].port = in_port;
        self.account(node, e, k, pid);
        self.cq[k].q.push(&mut self.pkts, pid);
        self.try_tx(e);
    }
}
