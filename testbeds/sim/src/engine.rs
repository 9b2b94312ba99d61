//! The discrete-event engine: ports with per-priority queues, switches with a
//! shared buffer, PFC, ECN, trimming, load balancing, hosts running `cc-algos`.
//!
//! Model (one event loop, integer picoseconds):
//! - A port transmits one frame at a time: serialisation `wire·8/rate`, then the
//!   frame arrives at the peer after the link's propagation delay (+ switching
//!   latency at a switch). `TxDone` frees the port for the next frame.
//! - Egress scheduling is strict priority: PFC frames, then control (ACK, NACK, CNP,
//!   trimmed headers), then data priorities from 7 down to 0, skipping paused ones.
//! - PFC (IEEE 802.1Qbb): bytes buffered per (ingress port, priority) are counted by
//!   `cc_algos::PfcIngress`; crossing XOFF sends a PAUSE frame back through that
//!   port (it takes 64 B of link time and the link delay), XON sends a resume, XOFF
//!   is refreshed before its quanta expire. The upstream egress obeys it through
//!   `cc_algos::PfcEgress`. Pauses therefore propagate hop by hop.
//! - ECN: `cc_algos::RedEcn` decides at dequeue from the egress queue depth, with
//!   a uniform number drawn from the seeded RNG.
//! - Hosts: every flow has a `cc_algos::AnyCc`; the NIC serves flows round-robin,
//!   each paced at `rate()` and limited by `window()`. Receivers ACK every data
//!   packet (echoing CE, the EV and the send time), NACK trimmed packets, and
//!   generate CNPs through `cc_algos::DcqcnNp` for DCQCN.
//! - Reliability: selective ACKs per packet; NACKed packets are resent at once;
//!   packets unacknowledged for `rto` are resent.

use super::config::{CcChoice, LbScheme, SimConfig};
use super::net::{BfsRoutes, Net, Router};
use super::queue::{CalendarQueue, EventQueue};
use super::results::*;
use cc_algos::uec::ev::{EvConfig, EvPolicy, EvPolicyKind, PathSignal};
use cc_algos::{
    Ack, AnyCc, AnyReceiver, Bytes, DataArrival, Duration, Feedback, Instant, PathParams,
    PfcConfig, PfcEgress, PfcFrame, PfcIngress, Rate, ReceiverCc, SenderCc, TrimDecision,
};
use scenario::rng::{Rng, mix64};
use scenario::{FailureSpec, FailureTarget, Workplan};
use std::collections::{HashMap, VecDeque};

// Event kinds.
const EV_TXDONE: u32 = 0;
const EV_ARRIVE: u32 = 1;
const EV_FLOWSTART: u32 = 2;
const EV_HOSTWAKE: u32 = 3;
const EV_CCTIMER: u32 = 4;
const EV_RTO: u32 = 5;
const EV_PORTWAKE: u32 = 6;
const EV_PFCREFRESH: u32 = 7;
const EV_FAIL: u32 = 8;
const EV_REROUTE: u32 = 9;
const EV_RESTORE: u32 = 10;
const EV_SAMPLE: u32 = 11;
const EV_WATCHDOG: u32 = 12;
const EV_RXTIMER: u32 = 13;

const EV_NAMES: [&str; 14] = [
    "tx_done",
    "arrive",
    "flow_start",
    "host_wake",
    "cc_timer",
    "rto",
    "port_wake",
    "pfc_refresh",
    "fail",
    "reroute",
    "restore",
    "sample",
    "watchdog",
    "rx_timer",
];

// Packet kinds.
const K_DATA: u8 = 0;
const K_ACK: u8 = 1;
const K_NACK: u8 = 2;
const K_CNP: u8 = 3;
const K_PAUSE: u8 = 4;
const K_CREDIT: u8 = 5;

// Packet flags.
const F_CE: u8 = 1;
const F_TRIM: u8 = 2;
const F_ECHO: u8 = 4;

// Sender per-packet state.
const S_INFLIGHT: u8 = 1;
const S_ACKED: u8 = 2;
const S_RETXQ: u8 = 3;

/// A FIFO of packets linked through `Pkt::next` (no per-queue allocation: a
/// queue is 8 bytes and pushing/popping touches only the packets involved).
#[derive(Clone, Copy, Debug)]
struct Fifo {
    head: u32,
    tail: u32,
}

impl Fifo {
    const EMPTY: Fifo = Fifo {
        head: NIL,
        tail: NIL,
    };
    #[inline]
    fn is_empty(&self) -> bool {
        self.head == NIL
    }
    #[inline]
    fn push(&mut self, pkts: &mut [Pkt], id: u32) {
        pkts[id as usize].next = NIL;
        if self.tail == NIL {
            self.head = id;
        } else {
            pkts[self.tail as usize].next = id;
        }
        self.tail = id;
    }
    #[inline]
    fn pop(&mut self, pkts: &mut [Pkt]) -> Option<u32> {
        if self.head == NIL {
            return None;
        }
        let id = self.head;
        self.head = pkts[id as usize].next;
        if self.head == NIL {
            self.tail = NIL;
        }
        Some(id)
    }
}

const NIL: u32 = u32::MAX;

#[derive(Clone, Copy, Debug, Default)]
struct Pkt {
    /// Next packet in the same queue.
    next: u32,
    flow: u32,
    seq: u32,
    wire: u32,
    /// Destination host (data: flow dst; ACK/NACK/CNP: flow src).
    dst: u32,
    /// Receiving port while in flight; ingress port while queued at a switch.
    port: u32,
    sent_at: u64,
    /// RCCC: credit requested (data) or granted (credit packets), bytes.
    req: u32,
    ev: u16,
    kind: u8,
    class: u8,
    flags: u8,
}

#[derive(Debug)]
struct FlowState {
    src: u32,
    dst: u32,
    /// Bytes to deliver (u64::MAX: long-lived).
    size: u64,
    class: u8,
    prio: u8,
    stop: u64,
    start_at: u64,
    started: bool,
    done: bool,
    finish: u64,
    recv_done: u64,
    next_seq: u32,
    npkts: u32,
    retx: VecDeque<u32>,
    pstate: Vec<u8>,
    rcvd: Vec<u64>,
    inflight: u64,
    acked: u64,
    recvd: u64,
    next_tx: u64,
    cc: Option<AnyCc>,
    timer_at: u64,
    rto_at: u64,
    last_progress: u64,
    hash: u64,
    /// NIC port (local index) for per-flow schemes, or u8::MAX for any.
    pin: u8,
    deps_left: u32,
    ev_next: u16,
    ev: Option<Box<EvPolicy>>,
    /// RCCC: credit still to request.
    to_request: u64,
    retransmits: u64,
    timeouts: u64,
    group: u32,
    last_sample_acked: u64,
}

#[derive(Debug, Default)]
struct HostState {
    active: Vec<u32>,
    rr: usize,
    wake_at: u64,
    rx: Option<AnyReceiver>,
    rx_timer: u64,
}

#[derive(Clone, Debug, Default)]
struct PortCounters {
    tx_bytes: u64,
    tx_pkts: u64,
    data_bytes: u64,
    drops: u64,
    marks: u64,
    trims: u64,
    pauses_rcvd: u64,
    paused_ps: u64,
    max_q: u64,
    q_area: u128,
    q_last: u64,
    last_sample_bytes: u64,
}

/// What stopped the run.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Stop {
    Running,
    AllDone,
    Deadlock,
}

/// Progress report for long runs (simulated time, events so far).
#[derive(Clone, Copy, Debug)]
pub struct Progress {
    /// Simulated time now.
    pub now: Instant,
    /// Events processed.
    pub events: u64,
    /// Flows finished / total.
    pub flows_done: u64,
    /// Total flows.
    pub flows: u64,
}

/// Errors setting up a run.
#[derive(Debug, thiserror::Error)]
pub enum SimError {
    /// The workload names a host the fabric does not have.
    #[error("flow {flow}: host {host} does not exist (the fabric has {hosts} hosts)")]
    NoSuchHost {
        /// Flow id.
        flow: u32,
        /// Host index.
        host: u32,
        /// Host count.
        hosts: u32,
    },
    /// A failure names a link or switch the fabric does not have.
    #[error("failure[{index}]: {message}")]
    BadFailure {
        /// Index in the scenario's failures.
        index: usize,
        /// What was wrong.
        message: String,
    },
    /// Two hosts of a flow share no plane, or no route joins them (e.g. in a
    /// multi-plane fabric whose NICs each sit in one plane): the flow could never finish.
    #[error(
        "flow {flow}: host {src} cannot reach host {dst} in any plane (they share no plane or no route joins them); pick hosts that share a plane"
    )]
    NoPath {
        /// Flow id.
        flow: u32,
        /// Source host index.
        src: u32,
        /// Destination host index.
        dst: u32,
    },
    /// A configuration value is unusable.
    #[error("config: {0}")]
    Config(String),
    /// The run is too big for the event encoding.
    #[error("too large: {0}")]
    TooLarge(String),
}

/// The simulator.
#[derive(Debug)]
pub struct Sim<Q: EventQueue = CalendarQueue> {
    cfg: SimConfig,
    net: Net,
    router: Router,
    fabric: Option<topo::Fabric>,
    q: Q,
    now: u64,
    rng: Rng,
    events: u64,
    by_kind: [u64; 16],
    // Packets.
    pkts: Vec<Pkt>,
    free: Vec<u32>,
    // Priority classes in use.
    nclass: usize,
    prio_of: Vec<u8>,
    // Ports.
    up: Vec<bool>,
    /// The port is transmitting until this time.
    busy_until: Vec<u64>,
    /// Time of the port's valid `TxDone` event (u64::MAX: none); scheduled only
    /// when something waits for the port. Events at other times are stale.
    txdone_at: Vec<u64>,
    pause_q: Vec<Fifo>,
    ctrl_q: Vec<Fifo>,
    data_q: Vec<Fifo>,
    qbytes: Vec<u64>,
    qtotal: Vec<u64>,
    pfc_in: Vec<PfcIngress>,
    pfc_out: Vec<PfcEgress>,
    /// Per (port, class): paused-time bookkeeping (last mark, paused until).
    pause_mark: Vec<(u64, u64)>,
    wake_at: Vec<u64>,
    refresh_at: Vec<u64>,
    pc: Vec<PortCounters>,
    salt: Vec<u64>,
    flowlet: Vec<HashMap<u32, (u64, u16)>>,
    node_buf: Vec<u64>,
    // Hosts and flows.
    hosts: Vec<HostState>,
    flows: Vec<FlowState>,
    dependents: Vec<Vec<u32>>,
    flows_done: u64,
    stop: Stop,
    // Failures.
    failures: Vec<FailureSpec>,
    failed_ports: Vec<Vec<u32>>,
    // Counters.
    t: Totals,
    delivered: u64,
    watchdog_mark: u64,
    deadlock: Option<DeadlockReport>,
    // Series.
    series: Option<Series>,
    sample_ports: Vec<u32>,
    plan: Workplan,
    hop_buf: Vec<u16>,
}

impl Sim<CalendarQueue> {
    /// A simulator over `topo`'s fabric and routes, with the default event queue.
    pub fn from_fabric(
        fabric: &topo::Fabric,
        cfg: SimConfig,
        plan: &Workplan,
    ) -> Result<Self, SimError> {
        let net = Net::from_fabric(fabric, cfg.link_delay);
        let routes = topo::Routes::compute(fabric);
        let hosts = fabric.num_hosts() as u32;
        for f in &plan.flows {
            let (src, dst) = (topo::NodeId(f.src), topo::NodeId(f.dst));
            if f.src < hosts && f.dst < hosts && routes.host_ports(src, dst).next().is_none() {
                return Err(SimError::NoPath {
                    flow: f.id,
                    src: f.src,
                    dst: f.dst,
                });
            }
        }
        Sim::with_queue(
            net,
            Router::Topo(Box::new(routes)),
            Some(fabric.clone()),
            cfg,
            plan,
            CalendarQueue::new(10, 4096),
        )
    }

    /// A simulator over a hand-made net with BFS shortest-path ECMP routes.
    pub fn from_net(net: Net, cfg: SimConfig, plan: &Workplan) -> Result<Self, SimError> {
        let up = vec![true; net.ports() as usize];
        let r = BfsRoutes::compute(&net, &up);
        Sim::with_queue(
            net,
            Router::Bfs(r),
            None,
            cfg,
            plan,
            CalendarQueue::new(10, 4096),
        )
    }
}

impl<Q: EventQueue> Sim<Q> {
    /// Full constructor: net, router, optional `topo` fabric (for failure
    /// re-routing through `topo`), config, workload and event queue.
    pub fn with_queue(
        net: Net,
        router: Router,
        fabric: Option<topo::Fabric>,
        cfg: SimConfig,
        plan: &Workplan,
        q: Q,
    ) -> Result<Self, SimError> {
        let np = net.ports() as usize;
        if np as u32 > super::queue::MAX_ID || plan.flows.len() as u32 > super::queue::MAX_ID {
            return Err(SimError::TooLarge(format!(
                "{np} ports / {} flows exceed 2^28",
                plan.flows.len()
            )));
        }
        if matches!(cfg.cc, CcChoice::Algo(cc_algos::CcKind::Hpcc)) {
            return Err(SimError::Config(
                "hpcc needs per-hop INT telemetry, which the simulator does not model; use dcqcn, nscc, rccc or dctcp".into(),
            ));
        }
        if cfg.mtu.0 == 0 || cfg.mtu.0 > 1 << 20 {
            return Err(SimError::Config(format!(
                "mtu {} B out of range",
                cfg.mtu.0
            )));
        }
        // Classes: the distinct priorities used, highest first.
        let mut prios: Vec<u8> = plan.flows.iter().map(|f| f.priority).collect();
        prios.sort_unstable_by(|a, b| b.cmp(a));
        prios.dedup();
        if prios.is_empty() {
            prios.push(0);
        }
        let nclass = prios.len();
        let class_of = |p: u8| prios.iter().position(|&x| x == p).unwrap_or(0) as u8;
        let pfc_cfg = |rate: Rate| {
            PfcConfig::new(cfg.pfc_xoff, cfg.pfc_xon, cfg.pfc_quanta, rate)
                .map_err(|e| SimError::Config(e.to_string()))
        };
        let mut pfc_in = Vec::with_capacity(np);
        let mut pfc_out = Vec::with_capacity(np);
        for p in 0..np {
            let r = net.port_rate[p];
            let r = if r == Rate::ZERO { Rate::gbps(1) } else { r };
            pfc_in.push(PfcIngress::new(pfc_cfg(r)?));
            pfc_out.push(PfcEgress::new(r));
        }
        let nodes = net.nodes() as usize;
        let salt: Vec<u64> = (0..nodes as u64)
            .map(|n| {
                if cfg.ecmp_per_switch_salt {
                    mix64(n.wrapping_mul(0x9E37_79B9_7F4A_7C15) ^ cfg.ecmp_seed)
                } else {
                    mix64(cfg.ecmp_seed)
                }
            })
            .collect();
        let mut hosts: Vec<HostState> = (0..net.hosts)
            .map(|_| HostState {
                rx_timer: u64::MAX,
                ..HostState::default()
            })
            .collect();
        if cfg.lb.uses_ev() && !cfg.evs.is_power_of_two() {
            return Err(SimError::Config(format!(
                "evs must be a power of two for EV policies, got {}",
                cfg.evs
            )));
        }
        if let CcChoice::Algo(k) = cfg.cc {
            for (h, hs) in hosts.iter_mut().enumerate() {
                let line = net.nic_rate(h as u32);
                let path = PathParams {
                    line_rate: line,
                    base_rtt: Duration::micros(10),
                    mtu: cfg.mtu + cfg.header,
                };
                hs.rx = k
                    .build_receiver(&path)
                    .map_err(|e| SimError::Config(e.to_string()))?;
            }
        }
        let mut rng = Rng::new(cfg.seed);
        let mut flows = Vec::with_capacity(plan.flows.len());
        let mut dependents = vec![Vec::new(); plan.flows.len()];
        for f in &plan.flows {
            for h in [f.src, f.dst] {
                if h >= net.hosts {
                    return Err(SimError::NoSuchHost {
                        flow: f.id,
                        host: h,
                        hosts: net.hosts,
                    });
                }
            }
            for &a in &f.after {
                dependents[a as usize].push(f.id);
            }
            let size = f.size.map(|b| b.0).unwrap_or(u64::MAX);
            let npkts = if size == u64::MAX {
                u32::MAX
            } else {
                size.div_ceil(cfg.mtu.0).max(1) as u32
            };
            let hash = mix64(
                (f.src as u64) << 32
                    ^ f.dst as u64
                    ^ mix64(f.id as u64 ^ cfg.ecmp_seed.rotate_left(17)),
            );
            let nports = net.ports_of(f.src).len() as u64;
            flows.push(FlowState {
                src: f.src,
                dst: f.dst,
                size,
                class: class_of(f.priority),
                prio: f.priority,
                stop: f.stop.map(|t| t.picos()).unwrap_or(u64::MAX),
                start_at: f.start.picos(),
                started: false,
                done: false,
                finish: 0,
                recv_done: 0,
                next_seq: 0,
                npkts,
                retx: VecDeque::new(),
                pstate: Vec::new(),
                rcvd: Vec::new(),
                inflight: 0,
                acked: 0,
                recvd: 0,
                next_tx: 0,
                cc: None,
                timer_at: u64::MAX,
                rto_at: u64::MAX,
                last_progress: 0,
                hash,
                pin: if cfg.lb.per_flow() {
                    (hash % nports.max(1)) as u8
                } else {
                    u8::MAX
                },
                deps_left: f.after.len() as u32,
                ev_next: (rng.below(cfg.evs.max(1) as u64)) as u16,
                ev: None,
                to_request: 0,
                retransmits: 0,
                timeouts: 0,
                group: f.group,
                last_sample_acked: 0,
            });
        }
        let mut s = Sim {
            net,
            router,
            fabric,
            q,
            now: 0,
            rng,
            events: 0,
            by_kind: [0; 16],
            pkts: Vec::with_capacity(1 << 16),
            free: Vec::new(),
            nclass,
            prio_of: prios.clone(),
            up: vec![true; np],
            busy_until: vec![0; np],
            txdone_at: vec![u64::MAX; np],
            pause_q: vec![Fifo::EMPTY; np],
            ctrl_q: vec![Fifo::EMPTY; np],
            data_q: vec![Fifo::EMPTY; np * nclass],
            qbytes: vec![0; np * nclass],
            qtotal: vec![0; np],
            pfc_in,
            pfc_out,
            pause_mark: vec![(0, 0); np * nclass],
            wake_at: vec![u64::MAX; np],
            refresh_at: vec![u64::MAX; np],
            pc: vec![PortCounters::default(); np],
            salt,
            flowlet: if cfg.lb == LbScheme::Flowlet {
                (0..nodes).map(|_| HashMap::new()).collect()
            } else {
                Vec::new()
            },
            node_buf: vec![0; nodes],
            hosts,
            flows,
            dependents,
            flows_done: 0,
            stop: Stop::Running,
            failures: plan.failures.clone(),
            failed_ports: vec![Vec::new(); plan.failures.len()],
            t: Totals::default(),
            delivered: 0,
            watchdog_mark: u64::MAX,
            deadlock: None,
            series: None,
            sample_ports: Vec::new(),
            plan: plan.clone(),
            hop_buf: Vec::new(),
            cfg,
        };
        s.validate_failures()?;
        s.schedule_initial();
        Ok(s)
    }

    fn validate_failures(&mut self) -> Result<(), SimError> {
        for (i, f) in self.failures.clone().iter().enumerate() {
            let ports: Vec<u32> = match f.target {
                FailureTarget::Link(a, b) => {
                    let n = self.net.nodes();
                    if a >= n || b >= n {
                        return Err(SimError::BadFailure {
                            index: i,
                            message: format!("node {} does not exist ({n} nodes)", a.max(b)),
                        });
                    }
                    let Some(p) = self.net.port_to(a, b) else {
                        return Err(SimError::BadFailure {
                            index: i,
                            message: format!("no link between nodes {a} and {b}"),
                        });
                    };
                    vec![p, self.net.port_peer[p as usize]]
                }
                FailureTarget::Switch(s) => {
                    if s < self.net.hosts || s >= self.net.nodes() {
                        return Err(SimError::BadFailure {
                            index: i,
                            message: format!("node {s} is not a switch"),
                        });
                    }
                    self.net
                        .ports_of(s)
                        .flat_map(|p| [p, self.net.port_peer[p as usize]])
                        .collect()
                }
            };
            self.failed_ports[i] = ports;
        }
        Ok(())
    }

    fn schedule_initial(&mut self) {
        for i in 0..self.flows.len() {
            if self.flows[i].deps_left == 0 {
                let t = self.flows[i].start_at;
                self.q.push(t, EV_FLOWSTART, i as u32);
            }
        }
        for (i, f) in self.failures.iter().enumerate() {
            self.q.push(f.at.picos(), EV_FAIL, i as u32);
            self.q.push((f.at + f.detect).picos(), EV_REROUTE, i as u32);
            if let Some(r) = f.restore {
                self.q.push(r.picos(), EV_RESTORE, i as u32);
                self.q.push((r + f.detect).picos(), EV_REROUTE, i as u32);
            }
        }
        if self.cfg.pfc {
            self.q.push(self.cfg.watchdog.as_picos(), EV_WATCHDOG, 0);
        }
        if let Some(p) = self.cfg.sample {
            // Switch-owned ports (fabric links and host downlinks).
            self.sample_ports = (0..self.net.ports())
                .filter(|&p| !self.net.is_host(self.net.port_node[p as usize]))
                .collect();
            self.series = Some(Series::default());
            self.q.push(p.as_picos(), EV_SAMPLE, 0);
        }
    }

    /// The config in use.
    pub fn config(&self) -> &SimConfig {
        &self.cfg
    }

    /// The flattened net.
    pub fn net(&self) -> &Net {
        &self.net
    }

    /// Run to completion (all flows finished, the stop time, or a deadlock).
    pub fn run(&mut self) -> SimResults {
        self.run_with_progress(u64::MAX, &mut |_| {})
    }

    /// Run, calling `progress` every `every` events.
    pub fn run_with_progress(
        &mut self,
        every: u64,
        progress: &mut dyn FnMut(Progress),
    ) -> SimResults {
        let stop = self.cfg.stop.map(|t| t.picos()).unwrap_or(u64::MAX);
        let mut next_report = every;
        while let Some(ev) = self.q.pop() {
            if ev.t > stop {
                self.now = stop;
                break;
            }
            debug_assert!(ev.t >= self.now);
            self.now = ev.t;
            self.events += 1;
            self.by_kind[ev.kind() as usize] += 1;
            let id = ev.id();
            match ev.kind() {
                EV_TXDONE => {
                    if self.txdone_at[id as usize] == self.now {
                        self.txdone_at[id as usize] = u64::MAX;
                        self.try_tx(id);
                    }
                }
                EV_ARRIVE => self.arrive(id),
                EV_FLOWSTART => self.flow_start(id),
                EV_HOSTWAKE => {
                    if self.hosts[id as usize].wake_at == self.now {
                        self.hosts[id as usize].wake_at = u64::MAX;
                        self.kick_host(id);
                    }
                }
                EV_CCTIMER => self.cc_timer(id),
                EV_RTO => self.rto(id),
                EV_PORTWAKE => {
                    if self.wake_at[id as usize] == self.now {
                        self.wake_at[id as usize] = u64::MAX;
                        self.try_tx(id);
                    }
                }
                EV_PFCREFRESH => self.pfc_refresh(id),
                EV_FAIL => self.fail(id as usize),
                EV_REROUTE => self.reroute(),
                EV_RESTORE => self.restore(id as usize),
                EV_SAMPLE => self.sample(),
                EV_WATCHDOG => self.watchdog(),
                EV_RXTIMER => {
                    if self.hosts[id as usize].rx_timer == self.now {
                        self.hosts[id as usize].rx_timer = u64::MAX;
                        self.poll_receiver(id);
                    }
                }
                _ => unreachable!("unknown event kind"),
            }
            if self.stop != Stop::Running {
                break;
            }
            if self.events >= next_report {
                next_report += every;
                progress(Progress {
                    now: Instant::from_picos(self.now),
                    events: self.events,
                    flows_done: self.flows_done,
                    flows: self.flows.len() as u64,
                });
            }
        }
        if self.stop == Stop::Running
            && self.flows_done < self.flows.len() as u64
            && self.cfg.pfc
            && self.deadlock.is_none()
        {
            // The queue drained (or we hit the stop time) with flows unfinished:
            // say whether a pause cycle is the reason.
            if let Some(cycle) = self.find_pause_cycle() {
                self.report_deadlock(cycle);
            }
        }
        self.results()
    }

    // ---- packets -------------------------------------------------------------

    #[inline]
    fn alloc(&mut self, p: Pkt) -> u32 {
        if let Some(i) = self.free.pop() {
            self.pkts[i as usize] = p;
            i
        } else {
            self.pkts.push(p);
            (self.pkts.len() - 1) as u32
        }
    }

    #[inline]
    fn release(&mut self, i: u32) {
        self.free.push(i);
    }

    // ---- ports ---------------------------------------------------------------

    /// Paused-time bookkeeping when a frame changes (port, class)'s pause deadline.
    fn account_pause(&mut self, port: u32, class: usize, new_until: u64) {
        let k = port as usize * self.nclass + class;
        let (mark, until) = self.pause_mark[k];
        let paused_end = until.min(self.now);
        if paused_end > mark {
            self.pc[port as usize].paused_ps += paused_end - mark;
        }
        self.pause_mark[k] = (self.now, new_until);
    }

    fn try_tx(&mut self, p: u32) {
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
        } else if let Some(i) = self.pop_data(p) {
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
    fn pop_data(&mut self, p: u32) -> Option<u32> {
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

    fn transmit(&mut self, p: u32, pid: u32) {
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

    fn send_pfc(&mut self, port: u32, fr: PfcFrame) {
        let pid = self.alloc(Pkt {
            kind: K_PAUSE,
            class: fr.priority,
            seq: fr.quanta as u32,
            wire: 64,
            ..Pkt::default()
        });
        self.pause_q[port as usize].push(&mut self.pkts, pid);
        if fr.is_resume() {
            self.t.resumes_sent += 1;
        } else {
            self.t.pauses_sent += 1;
            self.arm_refresh(port);
        }
        self.try_tx(port);
    }

    fn arm_refresh(&mut self, port: u32) {
        if let Some(t) = self.pfc_in[port as usize].next_timeout() {
            let t = t.picos();
            if t < self.refresh_at[port as usize] || self.refresh_at[port as usize] <= self.now {
                self.refresh_at[port as usize] = t;
                self.q.push(t, EV_PFCREFRESH, port);
            }
        }
    }

    fn pfc_refresh(&mut self, port: u32) {
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
                Some(fr) => {
                    let pid = self.alloc(Pkt {
                        kind: K_PAUSE,
                        class: fr.priority,
                        seq: fr.quanta as u32,
                        wire: 64,
                        ..Pkt::default()
                    });
                    self.pause_q[pu].push(&mut self.pkts, pid);
                    self.t.pauses_sent += 1;
                }
                None => break,
            }
        }
        self.arm_refresh(port);
        self.try_tx(port);
    }

    // ---- arrivals --------------------------------------------------------------

    fn arrive(&mut self, pid: u32) {
        let pk = self.pkts[pid as usize];
        let r = pk.port;
        let ru = r as usize;
        if !self.up[ru] {
            self.t.drops_failure += 1;
            self.release(pid);
            return;
        }
        let node = self.net.port_node[ru];
        if pk.kind == K_PAUSE {
            self.release(pid);
            self.pc[ru].pauses_rcvd += 1;
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
                if t < self.wake_at[ru] || self.wake_at[ru] <= self.now {
                    self.wake_at[ru] = t;
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
        let dst = pk.dst;
        let hops = self.router.next_hops(node, dst);
        if hops.is_empty() {
            self.t.drops_noroute += 1;
            self.release(pid);
            return;
        }
        let mut buf = std::mem::take(&mut self.hop_buf);
        buf.clear();
        buf.extend_from_slice(hops);
        let local = self.choose(node, &buf, &pk);
        self.hop_buf = buf;
        let e = self.net.port_off[node as usize] + local as u32;
        if !self.up[e as usize] {
            self.t.drops_failure += 1;
            self.release(pid);
            return;
        }
        self.enqueue(node, e, pid, r);
    }

    /// Pick one of the equal-cost next hops for a packet.
    fn choose(&mut self, node: u32, hops: &[u16], pk: &Pkt) -> u16 {
        let n = hops.len();
        if n == 1 {
            return hops[0];
        }
        let salt = self.salt[node as usize];
        let fh = self.flows[pk.flow as usize].hash;
        let pick = |h: u64| hops[((h as u128 * n as u128) >> 64) as usize];
        match self.cfg.lb {
            LbScheme::Ecmp => pick(mix64(fh ^ salt)),
            LbScheme::Spray | LbScheme::Reps | LbScheme::Bitmap => {
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
                    return pick(mix64(fh ^ salt));
                }
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
            LbScheme::Adaptive => {
                let base = self.net.port_off[node as usize];
                let start = (mix64(fh ^ salt ^ pk.seq as u64) % n as u64) as usize;
                let mut best = hops[start];
                let mut best_q = u64::MAX;
                for k in 0..n {
                    let h = hops[(start + k) % n];
                    let e = (base + h as u32) as usize;
                    let q = self.qtotal[e] + u64::from(self.busy_until[e] > self.now);
                    if q < best_q {
                        best_q = q;
                        best = h;
                    }
                }
                best
            }
        }
    }

    fn enqueue(&mut self, node: u32, e: u32, pid: u32, in_port: u32) {
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
            self.node_buf[node as usize] += pk.wire as u64;
            self.ctrl_q[eu].push(&mut self.pkts, pid);
            self.try_tx(e);
            return;
        }
        let c = pk.class as usize;
        let k = eu * self.nclass + c;
        if let Some(tp) = self.cfg.trim
            && let TrimDecision::Trim { size } =
                tp.decide(Bytes(self.qbytes[k]), Bytes(pk.wire as u64))
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
            self.node_buf[node as usize] += w;
            self.ctrl_q[eu].push(&mut self.pkts, pid);
            self.try_tx(e);
            return;
        }
        let w = pk.wire as u64;
        let over_buffer = self.node_buf[node as usize] + w > cap;
        let over_queue = !self.cfg.pfc
            && self
                .cfg
                .queue_limit
                .is_some_and(|l| self.qbytes[k] + w > l.0);
        if over_buffer || over_queue {
            self.t.drops_buffer += 1;
            self.pc[eu].drops += 1;
            self.release(pid);
            return;
        }
        self.node_buf[node as usize] += w;
        self.pc[eu].q_area += self.qtotal[eu] as u128 * (self.now - self.pc[eu].q_last) as u128;
        self.pc[eu].q_last = self.now;
        self.qbytes[k] += w;
        self.qtotal[eu] += w;
        if self.qtotal[eu] > self.pc[eu].max_q {
            self.pc[eu].max_q = self.qtotal[eu];
        }
        self.pkts[pid as usize].port = in_port;
        self.data_q[k].push(&mut self.pkts, pid);
        if self.cfg.pfc {
            let now = Instant::from_picos(self.now);
            let prio = self.prio_of[c];
            if let Some(fr) = self.pfc_in[in_port as usize].on_enqueue(now, prio, Bytes(w)) {
                self.send_pfc(in_port, fr);
            }
        }
        self.try_tx(e);
    }

    // ---- hosts -----------------------------------------------------------------

    fn kick_host(&mut self, h: u32) {
        for p in self.net.ports_of(h) {
            self.try_tx(p);
        }
    }

    fn flow_start(&mut self, f: u32) {
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
                base_rtt: Duration::picos(self.base_rtt(src, self.flows[f as usize].dst)),
                // cc-algos counts the MTU on the wire (payload + 64 B of headers).
                mtu: self.cfg.mtu + self.cfg.header,
            };
            match k.build(&path) {
                Ok(cc) => {
                    let fl = &mut self.flows[f as usize];
                    if let AnyCc::Rccc(r) = &cc {
                        fl.to_request = r.request_for(Bytes(fl.size)).0;
                    }
                    fl.cc = Some(cc);
                }
                Err(e) => panic!("cc-algos refused its own preset for {k}: {e}"),
            }
        }
        let kind = match self.cfg.lb {
            LbScheme::Spray => Some(EvPolicyKind::Oblivious),
            LbScheme::Reps => Some(EvPolicyKind::Reps),
            LbScheme::Bitmap => Some(EvPolicyKind::Bitmap),
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
    fn host_pull(&mut self, h: u32, p: u32) -> Option<u32> {
        let hu = h as usize;
        let n = self.hosts[hu].active.len();
        if n == 0 {
            return None;
        }
        let local = (p - self.net.port_off[hu]) as u8;
        let mut earliest = u64::MAX;
        let now = self.now;
        let nowi = Instant::from_picos(now);
        let start = self.hosts[hu].rr % n;
        for k in 0..n {
            let idx = (start + k) % n;
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

    fn payload_of(&self, f: &FlowState, seq: u32) -> u64 {
        let mtu = self.cfg.mtu.0;
        if f.size == u64::MAX {
            mtu
        } else {
            (f.size - seq as u64 * mtu).min(mtu)
        }
    }

    fn make_data(&mut self, f: u32, p: u32) -> Option<u32> {
        let fu = f as usize;
        // Next sequence: a retransmission first.
        let seq = loop {
            match self.flows[fu].retx.pop_front() {
                Some(s) if self.flows[fu].pstate[s as usize] == S_RETXQ => {
                    self.flows[fu].retransmits += 1;
                    self.t.retransmits += 1;
                    break s;
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
                    break s;
                }
            }
        };
        let payload = self.payload_of(&self.flows[fu], seq);
        let ev = self.pick_ev(f);
        let fl = &mut self.flows[fu];
        fl.pstate[seq as usize] = S_INFLIGHT;
        fl.inflight += payload;
        let wire = payload + self.cfg.header.0;
        let rate = fl.cc.as_ref().map(|c| c.rate()).unwrap_or(Rate::ZERO);
        let line = self.net.port_rate[p as usize];
        if rate != Rate::ZERO && rate < line {
            fl.next_tx = fl.next_tx.max(self.now) + rate.tx_time(Bytes(wire)).as_picos();
        } else {
            fl.next_tx = self.now;
        }
        let now = Instant::from_picos(self.now);
        if let Some(cc) = fl.cc.as_mut() {
            cc.on_send(now, Bytes(payload));
        }
        let req = fl.to_request.min(u32::MAX as u64);
        fl.to_request -= req;
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
            flags: 0,
        };
        if fl.rto_at == u64::MAX {
            fl.rto_at = self.now + self.cfg.rto.as_picos();
            self.q.push(fl.rto_at, EV_RTO, f);
        }
        self.t.data_pkts += 1;
        self.arm_cc_timer(f);
        Some(self.alloc(pk))
    }

    /// The entropy value for the next packet of a flow (the `cc-algos` EV policy
    /// for spraying schemes, a fixed per-flow value otherwise).
    fn pick_ev(&mut self, f: u32) -> u16 {
        let fl = &mut self.flows[f as usize];
        match fl.ev.as_mut() {
            Some(p) => p.next_ev(),
            None => fl.ev_next,
        }
    }

    fn arm_cc_timer(&mut self, f: u32) {
        let fl = &mut self.flows[f as usize];
        if let Some(t) = fl.cc.as_ref().and_then(|c| c.next_timeout()) {
            let t = t.picos().max(self.now);
            if t < fl.timer_at || fl.timer_at < self.now {
                fl.timer_at = t;
                self.q.push(t, EV_CCTIMER, f);
            }
        }
    }

    fn cc_timer(&mut self, f: u32) {
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

    fn rto(&mut self, f: u32) {
        let fu = f as usize;
        let rto = self.cfg.rto.as_picos();
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

    /// Put a control packet on a host's NIC.
    fn send_ctrl(&mut self, h: u32, pk: Pkt, choose_by: u64) {
        let ports = self.net.ports_of(h);
        let n = ports.len() as u64;
        if n == 0 {
            return;
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
        let Some(p) = port else {
            return;
        };
        let pid = self.alloc(pk);
        self.ctrl_q[p as usize].push(&mut self.pkts, pid);
        self.try_tx(p);
    }

    fn deliver(&mut self, h: u32, pid: u32) {
        let pk = self.pkts[pid as usize];
        self.release(pid);
        self.delivered += 1;
        let f = pk.flow;
        let fu = f as usize;
        match pk.kind {
            K_DATA => {
                let src = self.flows[fu].src;
                let hash = self.flows[fu].hash;
                let ctrl = self.cfg.ctrl_size.0 as u32;
                if pk.flags & F_TRIM != 0 {
                    self.receiver_data(h, &pk, true);
                    self.t.nacks += 1;
                    let nack = Pkt {
                        kind: K_NACK,
                        wire: ctrl,
                        dst: src,
                        flags: 0,
                        ..pk
                    };
                    self.send_ctrl(h, nack, hash);
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
                if fl.rcvd[w] & bit == 0 {
                    fl.rcvd[w] |= bit;
                    let pl = self.payload_of(&self.flows[fu], pk.seq);
                    let fl = &mut self.flows[fu];
                    fl.recvd += pl;
                    if fl.size != u64::MAX && fl.recvd >= fl.size && fl.recv_done == 0 {
                        fl.recv_done = self.now.max(1);
                        self.release_dependents(f);
                    }
                }
                // ACK every data packet.
                self.t.acks += 1;
                let ack = Pkt {
                    kind: K_ACK,
                    wire: ctrl,
                    dst: src,
                    flags: if ce { F_ECHO } else { 0 },
                    ..pk
                };
                self.send_ctrl(h, ack, hash);
                // Receiver-side algorithm (DCQCN NP, RCCC credit pacer).
                self.receiver_data(h, &pk, false);
            }
            K_ACK => self.on_ack(f, &pk),
            K_NACK => {
                let seq = pk.seq as usize;
                let pl = self.payload_of(&self.flows[fu], pk.seq);
                let fl = &mut self.flows[fu];
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
    fn receiver_data(&mut self, h: u32, pk: &Pkt, trimmed: bool) {
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

    fn poll_receiver(&mut self, h: u32) {
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
                ..Pkt::default()
            };
            self.send_ctrl(h, pk, hash);
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

    fn on_ack(&mut self, f: u32, pk: &Pkt) {
        let fu = f as usize;
        let seq = pk.seq as usize;
        let pl = self.payload_of(&self.flows[fu], pk.seq);
        let now = Instant::from_picos(self.now);
        let ecn = pk.flags & F_ECHO != 0;
        let fl = &mut self.flows[fu];
        let newly = match fl.pstate.get(seq) {
            Some(&S_INFLIGHT) => {
                fl.inflight -= pl;
                true
            }
            Some(&S_RETXQ) => true,
            _ => false,
        };
        if newly {
            fl.pstate[seq] = S_ACKED;
            fl.acked += pl;
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
        if let Some(cc) = fl.cc.as_mut() {
            cc.on_ack(
                now,
                Ack {
                    acked: Bytes(if newly { pl } else { 0 }),
                    ecn_echo: ecn,
                    rtt: Some(Duration::picos(self.now - pk.sent_at)),
                },
            );
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
            if self.flows_done == self.flows.len() as u64 {
                self.stop = Stop::AllDone;
            }
            return;
        }
        self.arm_cc_timer(f);
        let src = self.flows[fu].src;
        self.kick_host(src);
    }

    fn release_dependents(&mut self, f: u32) {
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

    // ---- failures ----------------------------------------------------------------

    fn fail(&mut self, i: usize) {
        let ports = self.failed_ports[i].clone();
        for p in ports {
            let pu = p as usize;
            if !self.up[pu] {
                continue;
            }
            self.up[pu] = false;
            // Queued packets on a dead port are lost.
            let node = self.net.port_node[pu];
            let is_switch = !self.net.is_host(node);
            let mut lost = Vec::new();
            while let Some(i) = self.ctrl_q[pu].pop(&mut self.pkts) {
                lost.push(i);
            }
            for c in 0..self.nclass {
                let k = pu * self.nclass + c;
                while let Some(i) = self.data_q[k].pop(&mut self.pkts) {
                    lost.push(i);
                }
                self.qbytes[pu * self.nclass + c] = 0;
            }
            while let Some(i) = self.pause_q[pu].pop(&mut self.pkts) {
                self.free.push(i);
            }
            self.qtotal[pu] = 0;
            for pid in lost {
                let pk = self.pkts[pid as usize];
                if is_switch {
                    self.node_buf[node as usize] -= pk.wire as u64;
                    if self.cfg.pfc && pk.kind == K_DATA && pk.flags & F_TRIM == 0 {
                        let prio = self.prio_of[pk.class as usize];
                        let now = Instant::from_picos(self.now);
                        if let Some(fr) = self.pfc_in[pk.port as usize].on_dequeue(
                            now,
                            prio,
                            Bytes(pk.wire as u64),
                        ) {
                            self.send_pfc(pk.port, fr);
                        }
                    }
                }
                self.t.drops_failure += 1;
                self.release(pid);
            }
        }
        self.t.failures += 1;
    }

    fn restore(&mut self, i: usize) {
        let ports = self.failed_ports[i].clone();
        for p in &ports {
            self.up[*p as usize] = true;
            self.pfc_out[*p as usize] = PfcEgress::new(self.net.port_rate[*p as usize]);
        }
        for p in ports {
            self.try_tx(p);
        }
    }

    /// Recompute routes around every port that is down now.
    fn reroute(&mut self) {
        match &mut self.router {
            Router::Topo(r) => {
                let f = self.fabric.as_ref().expect("topo router has a fabric");
                // Links down now, by topo link id.
                let mut down = Vec::new();
                let mut upl = Vec::new();
                for n in 0..f.num_nodes() as u32 {
                    for (port, (_peer, link)) in f.ports(topo::NodeId(n)).enumerate() {
                        let g = self.net.port_off[n as usize] + port as u32;
                        if !self.up[g as usize] {
                            down.push(link);
                        } else {
                            upl.push(link);
                        }
                    }
                }
                down.sort_unstable();
                down.dedup();
                upl.sort_unstable();
                upl.dedup();
                let restored: Vec<topo::LinkId> = r
                    .failed_links()
                    .filter(|l| down.binary_search(l).is_err())
                    .collect();
                if !restored.is_empty() {
                    r.restore_links(f, &restored);
                }
                let newly: Vec<topo::LinkId> =
                    down.iter().copied().filter(|&l| r.link_is_up(l)).collect();
                if !newly.is_empty() {
                    r.fail_links(f, &newly);
                }
            }
            Router::Bfs(r) => *r = BfsRoutes::compute(&self.net, &self.up),
            Router::Static(_) => {}
        }
        self.t.reroutes += 1;
        // Per-flow NIC pins may point at a dead port now.
        if self.cfg.lb.per_flow() {
            for fl in &mut self.flows {
                let ports = self.net.ports_of(fl.src);
                let n = ports.len() as u64;
                if n > 1 && !self.up[(ports.start + fl.pin as u32) as usize] {
                    for k in 0..n {
                        let cand = ((fl.hash + k) % n) as u8;
                        if self.up[(ports.start + cand as u32) as usize] {
                            fl.pin = cand;
                            break;
                        }
                    }
                }
            }
        }
        for h in 0..self.net.hosts {
            self.kick_host(h);
        }
    }

    // ---- time series and watchdog -------------------------------------------------

    fn sample(&mut self) {
        let Some(period) = self.cfg.sample else {
            return;
        };
        let dt = period.as_picos();
        let mut rates = Vec::new();
        let mut row_rates = Vec::new();
        for (i, fl) in self.flows.iter_mut().enumerate() {
            let d = fl.acked - fl.last_sample_acked;
            fl.last_sample_acked = fl.acked;
            let active = fl.started && (!fl.done || d > 0);
            if active {
                let gbps = d as f64 * 8.0 / (dt as f64 * 1e-12) / 1e9;
                rates.push(gbps);
                if i < MAX_FLOW_SERIES {
                    row_rates.push((i as u32, gbps as f32));
                }
            }
        }
        let mut util = Vec::with_capacity(self.sample_ports.len());
        let mut queue = Vec::with_capacity(self.sample_ports.len());
        for &p in &self.sample_ports {
            let pu = p as usize;
            let c = &mut self.pc[pu];
            let b = c.tx_bytes - c.last_sample_bytes;
            c.last_sample_bytes = c.tx_bytes;
            let cap = self.net.port_rate[pu].bytes_in(period).0.max(1);
            util.push((b as f64 / cap as f64) as f32);
            queue.push(self.qtotal[pu] as f32);
        }
        let s = self.series.as_mut().expect("sampling implies a series");
        s.t_us.push(self.now as f64 / 1e6);
        s.jain.push(jain(&rates));
        s.flow_rates.push(row_rates);
        if (s.util.len() + 1) * util.len() <= MAX_SERIES_CELLS {
            s.util.push(util);
            s.queue.push(queue);
        }
        if self.flows_done < self.flows.len() as u64 {
            self.q.push(self.now + dt, EV_SAMPLE, 0);
        }
    }

    fn watchdog(&mut self) {
        if self.flows_done == self.flows.len() as u64 {
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
    fn find_pause_cycle(&self) -> Option<Vec<u32>> {
        let now = Instant::from_picos(self.now);
        let np = self.net.ports() as usize;
        let blocked = |p: usize| -> bool {
            if self.qtotal[p] == 0 || self.net.is_host(self.net.port_node[p]) {
                return false;
            }
            (0..self.nclass).any(|c| {
                !self.data_q[p * self.nclass + c].is_empty()
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

    fn report_deadlock(&mut self, cycle: Vec<u32>) {
        let stuck: u64 = self.qtotal.iter().sum();
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
    }

    // ---- results -----------------------------------------------------------------

    fn results(&mut self) -> SimResults {
        let end = self.now;
        // Close paused-time intervals.
        for p in 0..self.net.ports() {
            for c in 0..self.nclass {
                let k = p as usize * self.nclass + c;
                let (mark, until) = self.pause_mark[k];
                let e = until.min(end);
                if e > mark {
                    self.pc[p as usize].paused_ps += e - mark;
                }
                self.pause_mark[k] = (end, until);
            }
            let pu = p as usize;
            self.pc[pu].q_area += self.qtotal[pu] as u128 * (end - self.pc[pu].q_last) as u128;
            self.pc[pu].q_last = end;
        }
        let mut flows = Vec::with_capacity(self.flows.len());
        for (i, fl) in self.flows.iter().enumerate() {
            let rate = self
                .cfg
                .ideal_rate
                .unwrap_or_else(|| self.net.nic_rate(fl.src));
            let (ideal, fct) = if fl.size == u64::MAX {
                (None, None)
            } else {
                let wire = fl.npkts as u64 * self.cfg.header.0 + fl.size;
                let ideal = rate.tx_time(Bytes(wire)).as_picos() + self.base_rtt(fl.src, fl.dst);
                (
                    Some(ideal as f64 / 1e6),
                    fl.done.then(|| (fl.finish - fl.start_at) as f64 / 1e6),
                )
            };
            flows.push(FlowResult {
                id: i as u32,
                src: fl.src,
                dst: fl.dst,
                size: (fl.size != u64::MAX).then_some(fl.size),
                group: fl.group,
                priority: fl.prio,
                start_us: fl.started.then(|| fl.start_at as f64 / 1e6),
                fct_us: fct,
                ideal_us: ideal,
                slowdown: match (fct, ideal) {
                    (Some(f), Some(i)) if i > 0.0 => Some(f / i),
                    _ => None,
                },
                recv_done_us: (fl.recv_done > 0).then(|| fl.recv_done as f64 / 1e6),
                acked: fl.acked,
                retransmits: fl.retransmits,
                timeouts: fl.timeouts,
            });
        }
        let mut links = Vec::new();
        let mut t = self.t.clone();
        for p in 0..self.net.ports() {
            let pu = p as usize;
            let c = &self.pc[pu];
            let node = self.net.port_node[pu];
            let peer = self.net.peer_node(p);
            t.pauses_rcvd += c.pauses_rcvd;
            t.paused_us += c.paused_ps as f64 / 1e6;
            t.ecn_marks += c.marks;
            let dur = end.max(1) as f64;
            links.push(LinkResult {
                node,
                port: (p - self.net.port_off[node as usize]) as u16,
                peer,
                node_tier: self.net.tier[node as usize],
                peer_tier: self.net.tier[peer as usize],
                rate_gbps: self.net.port_rate[pu].as_gbps_f64(),
                tx_bytes: c.tx_bytes,
                data_bytes: c.data_bytes,
                tx_pkts: c.tx_pkts,
                utilisation: c.tx_bytes as f64 * 8.0
                    / (self.net.port_rate[pu].as_bps().max(1) as f64 * dur * 1e-12),
                drops: c.drops,
                ecn_marks: c.marks,
                trims: c.trims,
                pauses_sent: self.pfc_in[pu].pauses_sent,
                pauses_rcvd: c.pauses_rcvd,
                paused_us: c.paused_ps as f64 / 1e6,
                max_queue: c.max_q,
                avg_queue: (c.q_area / end.max(1) as u128) as f64,
            });
        }
        t.drops = t.drops_buffer + t.drops_failure + t.drops_noroute;
        t.max_queue = links.iter().map(|l| l.max_queue).max().unwrap_or(0);
        SimResults::assemble(
            &self.plan,
            self.net.name.clone(),
            RunInfo {
                cc: self.cfg.cc.to_string(),
                lb: self.cfg.lb.to_string(),
                pfc: self.cfg.pfc,
                seed: self.cfg.seed,
                mtu: self.cfg.mtu.0,
                hosts: self.net.hosts,
                end_us: end as f64 / 1e6,
                events: self.events,
                events_by_kind: EV_NAMES
                    .iter()
                    .zip(self.by_kind)
                    .filter(|(_, n)| *n > 0)
                    .map(|(k, n)| (k.to_string(), n))
                    .collect(),
                peak_packets: self.pkts.len() as u64,
            },
            flows,
            links,
            t,
            self.series.take(),
            self.deadlock.clone(),
        )
    }
}
