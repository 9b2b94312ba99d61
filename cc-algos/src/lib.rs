//! `cc-algos`: congestion control as pure, clock-injected state machines.
//!
//! Nothing in this crate reads a clock, opens a socket or sleeps. Time is an
//! [`Instant`] argument, timers are deadlines ([`SenderCc::next_timeout`] /
//! [`SenderCc::on_timeout`]), so the same controller runs in a unit test, in the
//! packet simulator (`testbeds::sim`) and on real packets (`testbeds::veth`).
//!
//! Layout:
//! - [`units`]: `Instant`, `Duration` (integer picoseconds), `Bytes`, `Rate` (bit/s).
//! - [`traits`]: the interfaces: [`SenderCc`] (sender), [`ReceiverCc`] (receiver:
//!   CNPs, credit), [`EcnMarker`] (switch).
//! - [`dcqcn`]: DCQCN reaction point [`DcqcnRp`] and notification point [`DcqcnNp`],
//!   with `paper`, `mellanox` and `hpcc-ns3` presets ([`DcqcnConfig`]).
//! - [`uec`]: Ultra Ethernet 1.0: NSCC sender window ([`Nscc`]), RCCC receiver credit
//!   ([`RcccReceiver`] paces credit, [`RcccSender`] spends it), entropy-value path
//!   selection for packet spraying ([`EvPolicy`]: oblivious, bitmap, REPS, mixed).
//! - [`dctcp`]: DCTCP baseline ([`Dctcp`]).
//! - [`hpcc`]: HPCC baseline ([`Hpcc`], INT-driven; feed it with
//!   [`SenderCc::on_ack_int`]).
//! - [`ets`]: 802.1Qaz ETS: strict priorities, then DWRR between weighted priorities
//!   ([`ets::Ets`], the egress scheduler of the simulator and the veth switch).
//! - [`marking`]: RED-style ECN marking ([`RedEcn`], the DCQCN congestion point).
//! - [`pfc`]: 802.1Qbb XOFF/XON ingress state machine and pause application.
//! - [`pfcwd`]: PFC watchdog as SONiC defines it (storm detection, actions, restoration).
//! - [`trim`]: UEC packet-trimming policy.
//! - [`any`]: [`AnyCc`], enum dispatch over all senders, built by name ([`CcKind`]) or
//!   from a serialisable [`CcConfig`]; [`AnyReceiver`] for the receiver half (DCQCN NP,
//!   RCCC credit pacer), from [`CcKind::build_receiver`].
//! - [`error`]: [`Error`] and [`Result`].
//!
//! # Driving a sender
//!
//! A driver owns the clock and the packets. For each flow it keeps one [`AnyCc`] and:
//! calls `on_send` when a packet leaves, `on_ack`/`on_cnp`/`on_nack` when feedback
//! arrives, `on_timeout(now)` whenever `now >= next_timeout()`, and before sending asks
//! `rate()` (pace at that rate), `window()` (bytes in flight allowed, if `Some`) and
//! `credit()` (bytes allowed by receiver credit, if `Some`).
//!
//! Per algorithm, what the driver must feed:
//! - DCQCN: CE marks at the receiver → [`DcqcnNp`] → CNP → `on_cnp`. ACKs are ignored.
//! - DCTCP / NSCC: ACKs with `acked` bytes, `ecn_echo` and (NSCC) an `rtt` sample; NACKs
//!   for trimmed/lost packets. NSCC's [`Nscc::last_quadrant`] = `SwitchPath` is the cue to
//!   move the flow's EV ([`EvPolicy::on_feedback`] with `PathSignal::Ecn`).
//! - RCCC: at flow start, `RcccReceiver::on_request(flow, sender.request_for(size))`; drain
//!   `poll_feedback` at `next_timeout` and deliver each `Credit` with `on_credit`; the
//!   sender sends only while `credit() > 0`.
//! - Switches: [`RedEcn::should_mark`] at dequeue, [`PfcIngress`] on enqueue/dequeue per
//!   ingress port, [`TrimPolicy::decide`] on enqueue.
//!
//! ```
//! use cc_algos::{Bytes, CcKind, DcqcnNp, Duration, Instant, PathParams, Rate, RedEcn, SenderCc};
//! let path = PathParams { line_rate: Rate::gbps(100), base_rtt: Duration::micros(10), mtu: Bytes(4096) };
//! let mut cc = "dcqcn".parse::<CcKind>().unwrap().build(&path).unwrap();
//! let mut np = DcqcnNp::new(Duration::micros(50));
//! let red = RedEcn::dcqcn_paper();
//!
//! // The switch sees 300 KB queued and marks (u comes from the driver's seeded RNG).
//! let ce = red.should_mark(Bytes::kb(300), 0.42);
//! // The receiver turns the mark into a CNP, the sender halves its rate (α = 1).
//! let t = Instant::ZERO + Duration::micros(3);
//! if np.on_packet(t, 7, ce) { cc.on_cnp(t); }
//! assert_eq!(cc.rate(), Rate::gbps(50));
//! // Five rate-increase timer expiries later (fast recovery), RC = 100 − 50/2⁵ Gb/s.
//! for _ in 0..5 { let d = cc.next_timeout().unwrap(); cc.on_timeout(d); }
//! assert_eq!(cc.rate(), Rate::bps(98_437_500_000));
//! ```

pub mod any;
pub mod dcqcn;
pub mod dctcp;
pub mod error;
pub mod ets;
pub mod hpcc;
pub mod marking;
pub mod pfc;
pub mod pfcwd;
pub mod traits;
pub mod trim;
pub mod uec;
pub mod units;

pub use any::{AnyCc, AnyReceiver, CcConfig, CcKind, PathParams};
pub use dcqcn::{DcqcnConfig, DcqcnNp, DcqcnPreset, DcqcnRp};
pub use dctcp::{Dctcp, DctcpConfig};
pub use error::{Error, Result};
pub use hpcc::{Hpcc, HpccConfig};
pub use marking::RedEcn;
pub use pfc::{PfcConfig, PfcEgress, PfcFrame, PfcIngress};
pub use traits::{
    Ack, CcMetrics, DataArrival, EcnMarker, Feedback, FlowId, IntHop, ReceiverCc, SenderCc,
};
pub use trim::{TrimDecision, TrimPolicy};
pub use uec::{
    EvPolicy, EvPolicyKind, Nscc, NsccConfig, PathSignal, RcccConfig, RcccReceiver, RcccSender,
};
pub use units::{Bytes, Duration, Instant, Rate};
