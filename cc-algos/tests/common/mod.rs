//! A small deterministic test driver: N senders share one bottleneck link (a FIFO with
//! RED/step ECN marking at dequeue and optional UEC trimming), the receiver ACKs every
//! packet (echoing CE and carrying an RTT sample), and runs the algorithm's receiver half
//! (DCQCN NP → CNPs, RCCC credit pacer → credits). Everything advances on simulated
//! time through one event queue; no randomness except the marking `u`, drawn from a
//! seeded ChaCha8 RNG.
//!
//! Path: sender NIC (paces at `rate()`, serialises at line rate) → switch queue →
//! bottleneck link (`link`, serialisation) → propagation `prop` → receiver; ACKs,
//! NACKs, CNPs and credits return after `prop`. Unloaded RTT = 2·tx(MTU) + 2·prop.

#![allow(dead_code)]

use cc_algos::{
    Ack, AnyCc, AnyReceiver, Bytes, CcKind, DataArrival, Duration, Feedback, Instant, PathParams,
    Rate, ReceiverCc, RedEcn, SenderCc, TrimDecision, TrimPolicy,
};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use std::cmp::Reverse;
use std::collections::{BinaryHeap, VecDeque};

pub const HDR: u64 = 64;

#[derive(Clone, Copy, Debug)]
struct Pkt {
    flow: usize,
    payload: u64,
    wire: u64,
    sent_at: Instant,
    ce: bool,
    trimmed: bool,
}

#[derive(Clone, Copy, Debug)]
enum Ev {
    TrySend(usize),
    Timer(usize),
    LinkDone,
    AtSwitch(Pkt),
    AtReceiver(Pkt),
    AckBack(usize, Ack),
    NackBack(usize, u64),
    CnpBack(usize),
    CreditBack(usize, Bytes),
    RxTimer,
}

pub struct Sender {
    pub cc: AnyCc,
    pub remaining: u64,
    pub inflight: u64,
    next_tx: Instant,
    try_scheduled: bool,
    timer_at: Option<Instant>,
    pub start: Instant,
    pub size: u64,
    pub delivered: u64,
    pub finish: Option<Instant>,
}

pub struct Dumbbell {
    pub path: PathParams,
    pub link: Rate,
    pub prop: Duration,
    pub red: RedEcn,
    pub trim: Option<TrimPolicy>,
    pub senders: Vec<Sender>,
    pub rx: Option<AnyReceiver>,
    rx_timer_at: Option<Instant>,
    queue: VecDeque<Pkt>,
    pub qbytes: u64,
    busy: bool,
    events: BinaryHeap<Reverse<(Instant, u64, usize)>>,
    slab: Vec<Option<Ev>>,
    seq: u64,
    pub now: Instant,
    rng: ChaCha8Rng,
    pub max_queue: u64,
    pub marks: u64,
    pub trims: u64,
    pub cnps: u64,
    /// (time, queue bytes) sampled at every dequeue.
    pub queue_trace: Vec<(Instant, u64)>,
    /// Bytes delivered per flow inside the measurement window.
    pub window_start: Instant,
    pub window_bytes: Vec<u64>,
}

impl Dumbbell {
    /// `n` flows of `kind` at `rate` into a bottleneck of the same rate, one-way
    /// propagation `prop`, MTU `mtu`.
    pub fn new(
        kind: CcKind,
        n: usize,
        rate: Rate,
        prop: Duration,
        mtu: Bytes,
        red: RedEcn,
    ) -> Self {
        let base_rtt = rate.tx_time(mtu) * 2 + prop * 2;
        let path = PathParams {
            line_rate: rate,
            base_rtt,
            mtu,
        };
        let senders = (0..n)
            .map(|_| Sender {
                cc: kind.build(&path).unwrap(),
                remaining: u64::MAX,
                inflight: 0,
                next_tx: Instant::ZERO,
                try_scheduled: false,
                timer_at: None,
                start: Instant::ZERO,
                size: u64::MAX,
                delivered: 0,
                finish: None,
            })
            .collect();
        Dumbbell {
            path,
            link: rate,
            prop,
            red,
            trim: None,
            senders,
            rx: kind.build_receiver(&path).unwrap(),
            rx_timer_at: None,
            queue: VecDeque::new(),
            qbytes: 0,
            busy: false,
            events: BinaryHeap::new(),
            slab: Vec::new(),
            seq: 0,
            now: Instant::ZERO,
            rng: ChaCha8Rng::seed_from_u64(42),
            max_queue: 0,
            marks: 0,
            trims: 0,
            cnps: 0,
            queue_trace: Vec::new(),
            window_start: Instant::MAX,
            window_bytes: vec![0; n],
        }
    }

    pub fn mss(&self) -> u64 {
        self.path.mtu.0 - HDR
    }

    fn push(&mut self, at: Instant, ev: Ev) {
        self.slab.push(Some(ev));
        self.events
            .push(Reverse((at, self.seq, self.slab.len() - 1)));
        self.seq += 1;
    }

    /// Start flow `i` at `at` with `size` payload bytes (`u64::MAX`: long-lived).
    pub fn start(&mut self, i: usize, at: Instant, size: u64) {
        self.senders[i].remaining = size;
        self.senders[i].size = size;
        self.senders[i].start = at;
        self.senders[i].next_tx = at;
        if let (Some(AnyReceiver::Rccc(r)), AnyCc::Rccc(s)) = (&mut self.rx, &self.senders[i].cc) {
            let want = s.request_for(Bytes(size.min(1 << 50)));
            r.on_request(at, i as u64, want);
        }
        self.senders[i].try_scheduled = true;
        self.push(at, Ev::TrySend(i));
        self.arm_rx_timer();
    }

    fn arm_timer(&mut self, i: usize) {
        let t = self.senders[i].cc.next_timeout();
        if let Some(at) = t
            && t != self.senders[i].timer_at
        {
            self.senders[i].timer_at = t;
            self.push(at.max(self.now), Ev::Timer(i));
        }
    }

    fn arm_rx_timer(&mut self) {
        let t = self.rx.as_ref().and_then(|r| r.next_timeout());
        if let Some(at) = t
            && t != self.rx_timer_at
        {
            self.rx_timer_at = t;
            self.push(at.max(self.now), Ev::RxTimer);
        }
    }

    fn try_send(&mut self, i: usize) {
        let now = self.now;
        let mss = self.mss();
        let s = &mut self.senders[i];
        s.try_scheduled = false;
        if s.remaining == 0 {
            return;
        }
        if now < s.next_tx {
            s.try_scheduled = true;
            let t = s.next_tx;
            self.push(t, Ev::TrySend(i));
            return;
        }
        let payload = s.remaining.min(mss);
        if let Some(w) = s.cc.window()
            && s.inflight + payload > w.0.max(payload)
        {
            return; // woken by an ACK/NACK
        }
        if let Some(c) = s.cc.credit()
            && c.0 == 0
        {
            return; // woken by credit
        }
        s.cc.on_send(now, Bytes(payload));
        s.remaining -= payload;
        s.inflight += payload;
        let wire = payload + HDR;
        let pace = s.cc.rate().min(self.path.line_rate);
        s.next_tx = now + pace.tx_time(Bytes(wire));
        let pkt = Pkt {
            flow: i,
            payload,
            wire,
            sent_at: now,
            ce: false,
            trimmed: false,
        };
        // The NIC serialises at line rate; the packet reaches the switch when done.
        let arrive = now + self.path.line_rate.tx_time(Bytes(wire));
        let more = s.remaining > 0;
        let next = s.next_tx;
        s.try_scheduled = more;
        self.enqueue_at(arrive, pkt);
        if more {
            self.push(next, Ev::TrySend(i));
        }
        self.arm_timer(i);
    }

    fn enqueue_at(&mut self, at: Instant, pkt: Pkt) {
        self.push(at, Ev::AtSwitch(pkt));
    }

    fn switch_arrive(&mut self, mut pkt: Pkt) {
        if let Some(t) = self.trim
            && let TrimDecision::Trim { size } = t.decide(Bytes(self.qbytes), Bytes(pkt.wire))
        {
            pkt.trimmed = true;
            pkt.wire = size.0;
            self.trims += 1;
        }
        self.qbytes += pkt.wire;
        self.max_queue = self.max_queue.max(self.qbytes);
        self.queue.push_back(pkt);
        if !self.busy {
            self.start_tx();
        }
    }

    fn start_tx(&mut self) {
        if let Some(p) = self.queue.front() {
            self.busy = true;
            let t = self.now + self.link.tx_time(Bytes(p.wire));
            self.push(t, Ev::LinkDone);
        } else {
            self.busy = false;
        }
    }

    fn link_done(&mut self) {
        let mut p = self.queue.pop_front().expect("a packet in service");
        // Mark at dequeue, on the queue length including the departing packet.
        let u: f64 = self.rng.random();
        if !p.trimmed && self.red.should_mark(Bytes(self.qbytes), u) {
            p.ce = true;
            self.marks += 1;
        }
        self.qbytes -= p.wire;
        self.queue_trace.push((self.now, self.qbytes));
        let t = self.now + self.prop;
        self.push(t, Ev::AtReceiver(p));
        self.start_tx();
    }

    pub fn run_until(&mut self, end: Instant) {
        while let Some(Reverse((t, _, idx))) = self.events.peek().copied() {
            if t > end {
                break;
            }
            self.events.pop();
            self.now = t;
            let ev = self.slab[idx].take().expect("event once");
            self.handle(ev);
        }
        self.now = end;
    }

    fn handle(&mut self, ev: Ev) {
        match ev {
            Ev::TrySend(i) => self.try_send(i),
            Ev::Timer(i) => {
                let s = &mut self.senders[i];
                if s.timer_at.is_some_and(|t| t <= self.now) {
                    s.timer_at = None;
                    s.cc.on_timeout(self.now);
                }
                self.arm_timer(i);
                self.wake(i);
            }
            Ev::AtSwitch(p) => self.switch_arrive(p),
            Ev::AtReceiver(p) => self.receive(p),
            Ev::LinkDone => self.link_done(),
            Ev::AckBack(i, a) => {
                let s = &mut self.senders[i];
                s.inflight = s.inflight.saturating_sub(a.acked.0);
                s.cc.on_ack(self.now, a);
                self.arm_timer(i);
                self.wake(i);
            }
            Ev::NackBack(i, b) => {
                let s = &mut self.senders[i];
                s.inflight = s.inflight.saturating_sub(b);
                s.remaining = s.remaining.saturating_add(b); // retransmit
                s.cc.on_nack(self.now, Bytes(b));
                self.arm_timer(i);
                self.wake(i);
            }
            Ev::CnpBack(i) => {
                self.senders[i].cc.on_cnp(self.now);
                self.arm_timer(i);
            }
            Ev::CreditBack(i, b) => {
                self.senders[i].cc.on_credit(self.now, b);
                self.wake(i);
            }
            Ev::RxTimer => {
                self.rx_timer_at = None;
                self.drain_rx();
                self.arm_rx_timer();
            }
        }
    }

    fn wake(&mut self, i: usize) {
        if !self.senders[i].try_scheduled && self.senders[i].remaining > 0 {
            self.senders[i].try_scheduled = true;
            let t = self.now.max(self.senders[i].next_tx);
            self.push(t, Ev::TrySend(i));
        }
    }

    fn drain_rx(&mut self) {
        let now = self.now;
        let mut out = Vec::new();
        if let Some(rx) = &mut self.rx {
            while let Some(f) = rx.poll_feedback(now) {
                out.push(f);
            }
        }
        for f in out {
            match f {
                Feedback::Cnp { flow } => {
                    self.cnps += 1;
                    self.push(now + self.prop, Ev::CnpBack(flow as usize));
                }
                Feedback::Credit { flow, bytes } => {
                    self.push(now + self.prop, Ev::CreditBack(flow as usize, bytes))
                }
            }
        }
    }

    fn receive(&mut self, p: Pkt) {
        let now = self.now;
        if let Some(rx) = &mut self.rx {
            rx.on_data(
                now,
                DataArrival {
                    flow: p.flow as u64,
                    bytes: Bytes(p.payload),
                    ce: p.ce,
                    trimmed: p.trimmed,
                },
            );
        }
        self.drain_rx();
        self.arm_rx_timer();
        let back = now + self.prop;
        if p.trimmed {
            self.push(back, Ev::NackBack(p.flow, p.payload));
            return;
        }
        let s = &mut self.senders[p.flow];
        s.delivered += p.payload;
        if s.delivered == s.size {
            s.finish = Some(now);
        }
        if now >= self.window_start {
            self.window_bytes[p.flow] += p.payload;
        }
        let rtt = back - p.sent_at;
        self.push(
            back,
            Ev::AckBack(
                p.flow,
                Ack {
                    acked: Bytes(p.payload),
                    ecn_echo: p.ce,
                    rtt: Some(rtt),
                },
            ),
        );
    }
}
