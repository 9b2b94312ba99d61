//! The DCQCN notification point: the receiver's CNP generator (Zhu et al. 2015, §3.1:
//! "at most one CNP every N µs per flow"; N = 50 µs in the paper).

use crate::traits::{DataArrival, Feedback, FlowId, ReceiverCc};
use crate::units::{Duration, Instant};
use std::collections::{HashMap, VecDeque};

/// Per-flow CNP rate limiter.
#[derive(Clone, Debug)]
pub struct DcqcnNp {
    interval: Duration,
    last_cnp: HashMap<FlowId, Instant>,
    pending: VecDeque<FlowId>,
    /// CNPs generated.
    pub cnps_sent: u64,
    /// CE-marked packets that did not trigger a CNP (inside the interval).
    pub marks_suppressed: u64,
}

impl DcqcnNp {
    /// At most one CNP per flow per `interval` (zero: one per CE-marked packet).
    pub fn new(interval: Duration) -> Self {
        DcqcnNp {
            interval,
            last_cnp: HashMap::new(),
            pending: VecDeque::new(),
            cnps_sent: 0,
            marks_suppressed: 0,
        }
    }

    /// The direct form: a packet of `flow` arrived at `now`, CE-marked or not;
    /// returns whether to send a CNP for it now.
    pub fn on_packet(&mut self, now: Instant, flow: FlowId, ce: bool) -> bool {
        if !ce {
            return false;
        }
        let due = match self.last_cnp.get(&flow) {
            None => true,
            Some(&t) => now >= t + self.interval,
        };
        if due {
            self.last_cnp.insert(flow, now);
            self.cnps_sent += 1;
        } else {
            self.marks_suppressed += 1;
        }
        due
    }

    /// Forget a finished flow's state.
    pub fn remove_flow(&mut self, flow: FlowId) {
        self.last_cnp.remove(&flow);
    }
}

impl ReceiverCc for DcqcnNp {
    fn on_data(&mut self, now: Instant, pkt: DataArrival) {
        if self.on_packet(now, pkt.flow, pkt.ce) {
            self.pending.push_back(pkt.flow);
        }
    }

    fn poll_feedback(&mut self, _now: Instant) -> Option<Feedback> {
        self.pending.pop_front().map(|flow| Feedback::Cnp { flow })
    }

    fn next_timeout(&self) -> Option<Instant> {
        None
    }
}
