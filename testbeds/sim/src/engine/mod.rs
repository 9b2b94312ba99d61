//! The discrete-event engine: ports with per-priority queues, switches with a
//! shared buffer, PFC, ECN, trimming, load balancing, hosts running `cc-algos`.
//!
//! Model (one event loop, integer picoseconds):
//! - A port transmits one frame at a time: serialisation `wire·8/rate`, then the
//!   frame arrives at the peer after the link's propagation delay (+ switching
//!   latency at a switch). `TxDone` frees the port for the next frame.
//! - Egress scheduling is strict priority: PFC frames, then control (ACK, NACK, CNP,
//!   trimmed headers), then data priorities from 7 down to 0, skipping paused ones;
//!   with `SimConfig::ets`, ETS (strict priorities, then DWRR by weight) between them.
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
//!
//! Layout: this file holds the state, construction and the event loop; one module per
//! concern holds the handlers: [`links`] (egress scheduling, transmission), [`switch`]
//! (arrivals, routing, load balancing, buffer admission), [`pfc`] (PAUSE frames,
//! paused time, the deadlock watchdog), [`hosts`] (flows, NIC, ACKs, timers, receivers),
//! [`failures`] (links and switches down and up, re-routing), [`sampling`] (time
//! series) and [`finish`] (results).

use super::config::{CcChoice, LbScheme, SimConfig};
use super::net::{BfsRoutes, Net, Router};
use super::queue::{EventQueue, LaneQueue};
use super::results::*;
use cc_algos::uec::ev::{EvConfig, EvPolicy, EvPolicyKind, PathSignal};
use cc_algos::{
    Ack, AnyCc, AnyReceiver, Bytes, DataArrival, Duration, Feedback, Instant, PathParams,
    PfcConfig, PfcEgress, PfcFrame, PfcIngress, Rate, ReceiverCc, SenderCc, TrimDecision,
};
use scenario::rng::{Rng, mix64};
use scenario::{FailureSpec, FailureTarget, Workplan};
use std::collections::{HashMap, VecDeque};

mod build;
mod ets;
mod failures;
mod finish;
mod hosts;
mod ideal;
mod int;
mod knobs;
mod links;
mod paths;
mod pfc;
mod prefetch;
mod repeat;
mod sampling;
mod switch;
mod telemetry;
mod watchdog;

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
const EV_REPEAT: u32 = 14;
/// PFC watchdog poll (id 0) or a storming host's PAUSE (id host + 1).
const EV_PFCWD: u32 = 15;

const EV_NAMES: [&str; 16] = [
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
    "repeat",
    "pfcwd",
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
/// The sender asks for an ACK at once (UEC's AR flag): set on a flow's last new packet
/// and when its window is full, so ACK coalescing never leaves the sender waiting.
const F_AR: u8 = 8;

/// Failure/restore events with this id bit set act on `degraded[id & !DEGRADE_BIT]`
/// (degradations share the failure event kinds; the 4-bit kind space is nearly full).
const DEGRADE_BIT: u32 = 1 << 27;

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
    /// Generation of the flow that sent it (see `repeat`).
    round: u8,
    /// Switches crossed so far (the index into [`paths::PathCache`]; 0 as it leaves
    /// a host).
    hop: u8,
    /// The egress port the next switch took for an earlier packet of the same flow and
    /// direction, read from the path cache as this packet left its last node ([`NIL`]:
    /// not known). Only a hint for the event loop's prefetching: routing never reads
    /// it, and a stale one costs a useless prefetch.
    egress_hint: u32,
}

const _: () = assert!(std::mem::size_of::<Pkt>() == 48);

impl Pkt {
    /// Whether it travels toward its flow's source (an ACK, NACK, CNP or credit): the
    /// direction [`paths::PathCache`] keeps apart from the data's.
    #[inline]
    fn back(&self) -> bool {
        self.kind != K_DATA
    }
}

/// What the event loop reads and writes for a port on every frame it sends, packed
/// into one 64-byte cache line: at 8,192 hosts the ports' state is far larger than
/// the caches, and the same fields kept in separate arrays cost one cache miss each
/// (docs/sim.md, "Speed at scale").
#[derive(Clone, Copy, Debug)]
#[repr(C, align(64))]
struct PortState {
    /// The port is transmitting until this time.
    busy_until: u64,
    /// Time of the port's valid `TxDone` event (u64::MAX: none); scheduled only
    /// when something waits for the port. Events at other times are stale.
    txdone_at: u64,
    /// Data bytes queued over all classes.
    qtotal: u64,
    /// Serialisation time of one byte at the port's rate, ps, when that is a whole
    /// number (80 at 100 Gb/s; 0 otherwise: divide). Kept with the port's rate, which
    /// a degradation changes ([`PortState::set_rate`]).
    ps_per_byte: u64,
    pause_q: Fifo,
    ctrl_q: Fifo,
    /// A frame sent now arrives at the peer this long after its last bit leaves:
    /// the link's propagation delay, plus the switching latency if the peer is a
    /// switch, ps (constant, from `Net` and the config).
    arrive_ps: u64,
    /// Owning node and peer port (constant, copies of `Net`'s).
    node: u32,
    peer: u32,
}

const _: () = assert!(std::mem::size_of::<PortState>() == 64);

impl PortState {
    /// An idle port of `node` at `rate`, linked to `peer`, whose frames arrive
    /// `arrive_ps` after their last bit leaves.
    fn idle(node: u32, peer: u32, arrive_ps: u64, rate: Rate) -> Self {
        let mut ps = PortState {
            busy_until: 0,
            txdone_at: u64::MAX,
            qtotal: 0,
            ps_per_byte: 0,
            pause_q: Fifo::EMPTY,
            ctrl_q: Fifo::EMPTY,
            arrive_ps,
            node,
            peer,
        };
        ps.set_rate(rate);
        ps
    }

    /// Take a new link rate: the whole picoseconds a byte takes, if they are whole.
    fn set_rate(&mut self, rate: Rate) {
        let bps = rate.as_bps();
        self.ps_per_byte = if bps != 0 && 8_000_000_000_000 % bps == 0 {
            8_000_000_000_000 / bps
        } else {
            0
        };
    }

    /// Serialisation time of `bytes` at the port's `rate`, ps: [`links::tx_ps`] bit for
    /// bit, with a multiplication instead of a division at the usual rates.
    #[inline]
    fn tx_ps(&self, rate: &Rate, bytes: u64) -> u64 {
        match bytes.checked_mul(self.ps_per_byte) {
            Some(ps) if self.ps_per_byte != 0 => ps,
            _ => links::tx_ps(*rate, bytes),
        }
    }
}

/// One (port, class) data queue and the bytes in it.
#[derive(Clone, Copy, Debug)]
struct ClassQueue {
    q: Fifo,
    bytes: u64,
}

impl ClassQueue {
    const EMPTY: ClassQueue = ClassQueue {
        q: Fifo::EMPTY,
        bytes: 0,
    };
}

/// A flow's state, its fields in the order the hot paths read them (`repr(C)`, each
/// flow on its own cache lines): what a sender's NIC reads to pick and build a packet
/// first (the event loop prefetches those lines ahead of the NIC's `TxDone`), then its
/// congestion control, then the receiver's side, then what only a flow's start and end
/// read. Left to the compiler that first group was spread over five of twelve lines.
#[derive(Debug)]
#[repr(C, align(64))]
struct FlowState {
    // The sender: choosing and building a packet, taking its ACK.
    inflight: u64,
    next_tx: u64,
    stop: u64,
    /// Bytes to deliver (u64::MAX: long-lived).
    size: u64,
    next_seq: u32,
    npkts: u32,
    retx: VecDeque<u32>,
    pstate: Vec<u8>,
    acked: u64,
    rto_at: u64,
    timer_at: u64,
    last_progress: u64,
    /// RCCC: credit still to request.
    to_request: u64,
    /// Latest RTT sample, ps (0: none yet).
    last_rtt: u64,
    dst: u32,
    ev_next: u16,
    /// NIC port (local index) for per-flow schemes, or u8::MAX for any.
    pin: u8,
    prio: u8,
    class: u8,
    /// Generation (bumped when a repeating workload restarts the flow).
    round: u8,
    done: bool,
    started: bool,
    ev: Option<Box<EvPolicy>>,
    cc: Option<AnyCc>,
    // The receiver.
    rcvd: Vec<u64>,
    recvd: u64,
    recv_done: u64,
    src: u32,
    /// ACK coalescing: the next in-order sequence number the receiver waits for, how
    /// many packets beyond it arrived out of order, and whether an AR arrived while
    /// packets were out of order (htsim's `_ack_request`: ACK again once they drain).
    rx_next: u32,
    rx_ooo: u32,
    rx_ack_request: bool,
    rx_ce: bool,
    hash: u64,
    /// ACK coalescing (receiver side): sequence numbers received and not yet ACKed,
    /// their payload bytes, and whether any carried CE (`rx_ce`).
    rx_pending: Vec<u32>,
    rx_pending_bytes: u64,
    /// ACK coalescing: the newest packet received and not yet ACKed (its send time and
    /// entropy value go into the coalesced ACK).
    rx_last: Pkt,
    /// ACK coalescing: packets the receiver NACKed (trimmed) and has not received since.
    rx_holes: Vec<u32>,
    // Start, end and counters.
    start_at: u64,
    finish: u64,
    retransmits: u64,
    timeouts: u64,
    last_sample_acked: u64,
    /// CNPs received.
    cnps: u64,
    /// NACKs received.
    nacks: u64,
    deps_left: u32,
    group: u32,
}

#[derive(Debug, Default)]
struct HostState {
    /// Flows with data to send, in round-robin order, held inline for up to four (a
    /// host's NIC reads them on every pull: a separate buffer was one more cache miss
    /// after the host's own line, which the event loop prefetches for a `TxDone`).
    active: smallvec::SmallVec<[u32; 4]>,
    rr: usize,
    wake_at: u64,
    rx: Option<AnyReceiver>,
    rx_timer: u64,
}

/// Per-port counters. The ones a transmitting port updates on every frame come first,
/// together (the first 64 of 144 bytes); those of the receiving side follow.
#[derive(Clone, Debug, Default)]
struct PortCounters {
    q_area: u128,
    q_last: u64,
    max_q: u64,
    tx_bytes: u64,
    tx_pkts: u64,
    data_bytes: u64,
    marks: u64,
    rx_bytes: u64,
    rx_pkts: u64,
    drops: u64,
    trims: u64,
    pauses_rcvd: u64,
    paused_ps: u64,
    drops_failure: u64,
    drops_noroute: u64,
    last_sample_bytes: u64,
}

/// Where a stepped run is ([`Sim::run_until`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RunState {
    /// Events remain.
    Running,
    /// The run has ended (all flows done, the stop time, a deadlock, or no events left).
    Finished,
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
pub struct Sim<Q: EventQueue = LaneQueue> {
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
    /// Per port: the state every frame touches, one cache line each.
    port: Vec<PortState>,
    /// Per port: time of its valid `PortWake` event (u64::MAX: none).
    port_wake: Vec<u64>,
    /// Per (port, class): the data queue and its bytes.
    cq: Vec<ClassQueue>,
    /// Per port: the ETS scheduler between data classes (empty: strict priority).
    ets: Vec<cc_algos::ets::Ets>,
    pfc_in: Vec<PfcIngress>,
    pfc_out: Vec<PfcEgress>,
    /// Per (port, class): paused-time bookkeeping (last mark, paused until).
    pause_mark: Vec<(u64, u64)>,
    refresh_at: Vec<u64>,
    pc: Vec<PortCounters>,
    salt: Vec<u64>,
    flowlet: Vec<HashMap<u32, (u64, u16)>>,
    node_buf: Vec<u64>,
    // Hosts and flows.
    hosts: Vec<HostState>,
    flows: Vec<FlowState>,
    /// Every flow's ECMP/spraying hash (a copy of `FlowState::hash`, read at every
    /// switch hop: 8 bytes a flow stay in cache where the flow states do not).
    flow_hash: Vec<u64>,
    /// Under ECMP, the egress every switch chose for each flow and direction.
    paths: paths::PathCache,
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
    // Telemetry.
    /// Per (port, class): PFC PAUSE frames sent / received.
    pfc_tx: Vec<u64>,
    pfc_rx: Vec<u64>,
    /// Link id of every global port, and its index in `fabric_api`'s port order.
    port_link: Vec<u32>,
    api_port: Vec<u32>,
    /// Sequence number of the next snapshot.
    snap_seq: u64,
    events_on: bool,
    events_out: Vec<fabric_api::Event>,
    /// The run reached its end (all done, stop time, deadlock or no events left).
    finished: bool,
    /// Repeating workloads, when set.
    repeat: Option<Box<repeat::Repeat>>,
    /// The htsim-style knobs' state (ACK coalescing, per-port buffers, degraded
    /// links, network base RTT, HPCC's INT).
    kx: knobs::KnobState,
    /// PFC watchdog state.
    pfcwd: watchdog::Pfcwd,
}

impl Sim<LaneQueue> {
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
            LaneQueue::for_sim(),
        )
    }

    /// A simulator over a hand-made net with BFS shortest-path ECMP routes.
    pub fn from_net(net: Net, cfg: SimConfig, plan: &Workplan) -> Result<Self, SimError> {
        let up = vec![true; net.ports() as usize];
        let r = BfsRoutes::compute(&net, &up);
        Sim::with_queue(net, Router::Bfs(r), None, cfg, plan, LaneQueue::for_sim())
    }
}

impl<Q: EventQueue> Sim<Q> {
    /// Full constructor: net, router, optional `topo` fabric (for failure
    /// re-routing through `topo`), config, workload and event queue.
    pub fn with_queue(
        mut net: Net,
        router: Router,
        fabric: Option<topo::Fabric>,
        cfg: SimConfig,
        plan: &Workplan,
        mut q: Q,
    ) -> Result<Self, SimError> {
        build::link_overrides(&mut net, plan)?;
        let np = net.ports() as usize;
        build::check_config(np, &cfg, plan)?;
        let prios = build::classes(plan);
        let nclass = prios.len();
        let (pfc_in, pfc_out) = build::pfc_state(&net, &cfg)?;
        let nodes = net.nodes() as usize;
        let salt = build::ecmp_salts(nodes, &cfg);
        let hosts = build::host_states(&net, &cfg)?;
        let mut rng = Rng::new(cfg.seed);
        let (flows, dependents) = build::flow_states(&net, &cfg, plan, &prios, &mut rng)?;
        let (port_link, api_port) = telemetry::port_maps(&net, fabric.as_ref());
        let port = build::port_states(&net, &cfg);
        q.fit_horizon(build::horizon(&net, &cfg, &port));
        let flow_hash = flows.iter().map(|f| f.hash).collect();
        let paths = paths::PathCache::new(flows.len(), cfg.lb == LbScheme::Ecmp);
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
            prio_of: prios,
            up: vec![true; np],
            port,
            port_wake: vec![u64::MAX; np],
            cq: vec![ClassQueue::EMPTY; np * nclass],
            ets: Self::ets_state(&cfg, np),
            pfc_in,
            pfc_out,
            pause_mark: vec![(0, 0); np * nclass],
            refresh_at: vec![u64::MAX; np],
            pc: vec![PortCounters::default(); np],
            salt,
            paths,
            flowlet: if cfg.lb == LbScheme::Flowlet {
                (0..nodes).map(|_| HashMap::new()).collect()
            } else {
                Vec::new()
            },
            node_buf: vec![0; nodes],
            hosts,
            flows,
            flow_hash,
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
            pfc_tx: vec![0; np * nclass],
            pfc_rx: vec![0; np * nclass],
            port_link,
            api_port,
            snap_seq: 0,
            events_on: false,
            events_out: Vec::new(),
            finished: false,
            repeat: None,
            kx: knobs::KnobState::default(),
            pfcwd: watchdog::Pfcwd::default(),
            cfg,
        };
        s.validate_failures()?;
        s.init_knobs()?;
        s.schedule_initial();
        Ok(s)
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
        self.schedule_pfcwd();
        if let Some(p) = self.cfg.sample {
            // Switch-owned ports (fabric links and host downlinks).
            self.sample_ports = (0..self.net.ports())
                .filter(|&p| !self.net.is_host(self.net.port_node[p as usize]))
                .collect();
            let ports = self
                .sample_ports
                .iter()
                .map(|&p| {
                    let node = self.net.port_node[p as usize];
                    SeriesPort {
                        node,
                        port: (p - self.net.port_off[node as usize]) as u16,
                        link: self.port_link[p as usize],
                    }
                })
                .collect();
            self.series = Some(Series {
                ports,
                ..Series::default()
            });
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

    /// Run to completion, calling `progress` every `every` events.
    pub fn run_with_progress(
        &mut self,
        every: u64,
        progress: &mut dyn FnMut(Progress),
    ) -> SimResults {
        self.step_until(u64::MAX, every, progress);
        self.results()
    }

    /// Run every event up to and including virtual time `t`, then stop with the clock at
    /// `t` (the next event stays queued, in its place). Returns [`RunState::Finished`]
    /// once the run has ended; calling again then does nothing.
    pub fn run_until(&mut self, t: Instant) -> RunState {
        self.step_until(t.picos(), u64::MAX, &mut |_| {})
    }

    /// Virtual time now.
    pub fn now(&self) -> Instant {
        Instant::from_picos(self.now)
    }

    /// Whether the run has ended.
    pub fn is_finished(&self) -> bool {
        self.finished
    }

    fn step_until(
        &mut self,
        until: u64,
        every: u64,
        progress: &mut dyn FnMut(Progress),
    ) -> RunState {
        if self.finished {
            return RunState::Finished;
        }
        let stop = self.cfg.stop.map(|t| t.picos()).unwrap_or(u64::MAX);
        let mut next_report = self.events.saturating_add(every);
        while let Some(ev) = self.q.pop() {
            if ev.t > stop {
                self.now = stop;
                return self.finish_run();
            }
            if ev.t > until {
                self.q.unpop(ev);
                self.now = self.now.max(until);
                return RunState::Running;
            }
            debug_assert!(ev.t >= self.now);
            self.prefetch_ahead();
            self.now = ev.t;
            self.events += 1;
            self.by_kind[ev.kind() as usize] += 1;
            self.dispatch(ev);
            if self.stop != Stop::Running {
                return self.finish_run();
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
        self.finish_run()
    }

    fn dispatch(&mut self, ev: super::queue::Ev) {
        let id = ev.id();
        match ev.kind() {
            EV_TXDONE => {
                if self.port[id as usize].txdone_at == self.now {
                    self.port[id as usize].txdone_at = u64::MAX;
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
            EV_RTO => self.on_rto(id),
            EV_PORTWAKE => {
                if self.port_wake[id as usize] == self.now {
                    self.port_wake[id as usize] = u64::MAX;
                    self.try_tx(id);
                }
            }
            EV_PFCREFRESH => self.pfc_refresh(id),
            EV_FAIL if id & DEGRADE_BIT != 0 => self.degrade(id & !DEGRADE_BIT, true),
            EV_RESTORE if id & DEGRADE_BIT != 0 => self.degrade(id & !DEGRADE_BIT, false),
            EV_FAIL => self.fail(id as usize),
            EV_REROUTE => self.reroute(id as usize),
            EV_RESTORE => self.restore(id as usize),
            EV_SAMPLE => self.sample(),
            EV_WATCHDOG => self.watchdog(),
            EV_REPEAT => self.restart_group(id),
            EV_PFCWD => self.on_pfcwd(id),
            EV_RXTIMER => {
                if self.hosts[id as usize].rx_timer == self.now {
                    self.hosts[id as usize].rx_timer = u64::MAX;
                    self.poll_receiver(id);
                }
            }
            _ => unreachable!("unknown event kind"),
        }
    }

    /// The end of a run: say whether a pause cycle kept flows from finishing.
    fn finish_run(&mut self) -> RunState {
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
        self.finished = true;
        RunState::Finished
    }

    fn alloc(&mut self, p: Pkt) -> u32 {
        let i = if let Some(i) = self.free.pop() {
            self.pkts[i as usize] = p;
            i
        } else {
            self.pkts.push(p);
            (self.pkts.len() - 1) as u32
        };
        if self.kx.int_on {
            self.int_alloc(i);
        }
        i
    }

    #[inline]
    fn release(&mut self, i: u32) {
        self.free.push(i);
    }
}
