//! The PFC watchdog in the simulator — the `cc_algos::pfcwd` rule the daemon and the veth
//! switch run, unchanged — and storming hosts (a NIC that never stops pausing its leaf).
//!
//! Every `detection / 4` the watchdog samples each switch egress queue (paused by its
//! peer, packets queued, data bytes sent by the port, PAUSE frames received for the
//! priority) into its [`QueueWatch`]. A storm detected under `drop` or `forward` lifts
//! the pause and ignores the peer's PAUSE frames from then on; under `drop` the queue's
//! packets are discarded as the port dequeues them (counted in `Totals::pfcwd_drops`).
//! Restoration (no PAUSE for the restoration time) returns the queue to normal.
//!
//! A storming host sends its leaf port a PAUSE with the longest quanta for one priority
//! every `every` from `at` on, until the run ends.

use super::*;
use cc_algos::pfcwd::{QueueSample, QueueWatch, Verdict};

/// Event id of the watchdog's poll (storming host `h` is id `h + 1`).
const POLL: u32 = 0;

/// Per (port, class) state of the watchdog.
#[derive(Debug, Default)]
pub(super) struct Pfcwd {
    watch: Vec<QueueWatch>,
}

impl<Q: EventQueue> Sim<Q> {
    /// First poll and first storm PAUSE, when configured.
    pub(super) fn schedule_pfcwd(&mut self) {
        if let Some(w) = self.cfg.pfcwd {
            self.pfcwd.watch = vec![QueueWatch::default(); self.net.ports() as usize * self.nclass];
            self.q.push(self.period(&w), EV_PFCWD, POLL);
        }
        if let Some(st) = self.cfg.storm {
            self.q.push(st.at.picos(), EV_PFCWD, st.host + 1);
        }
    }

    fn period(&self, w: &cc_algos::pfcwd::WatchdogConfig) -> u64 {
        (w.detection.as_picos() / 4).max(1)
    }

    pub(super) fn on_pfcwd(&mut self, id: u32) {
        if self.finished || self.stop != Stop::Running {
            return;
        }
        if id == POLL {
            self.pfcwd_poll();
        } else {
            self.storm_pause(id - 1);
        }
    }

    /// The storming host pauses its port's peer again.
    fn storm_pause(&mut self, host: u32) {
        let Some(st) = self.cfg.storm else { return };
        let port = self.net.ports_of(host).start;
        self.t.storm_pauses += 1;
        self.send_pfc(
            port,
            PfcFrame {
                priority: st.priority,
                quanta: 0xffff,
            },
        );
        if self.flows_done < self.flows.len() as u64 {
            self.q
                .push(self.now + st.every.as_picos(), EV_PFCWD, host + 1);
        }
    }

    fn pfcwd_poll(&mut self) {
        let Some(w) = self.cfg.pfcwd else { return };
        let now = Instant::from_picos(self.now);
        for p in 0..self.net.ports() {
            let pu = p as usize;
            if self.net.is_host(self.net.port_node[pu]) {
                continue;
            }
            for c in 0..self.nclass {
                let k = pu * self.nclass + c;
                let prio = self.prio_of[c];
                let s = QueueSample {
                    paused: self.pfc_out[pu].is_paused(now, prio),
                    queued_packets: self.cq[k].bytes.div_ceil(self.cfg.mtu.0.max(1)),
                    tx_packets: self.pc[pu].data_bytes,
                    pfc_rx: self.pfc_rx[k],
                };
                match self.pfcwd.watch[k].on_sample(&w, now, s) {
                    Verdict::StormDetected => {
                        self.t.pfcwd_storms += 1;
                        if self.pfcwd.watch[k].ignore_pause(&w) {
                            let resume = PfcFrame {
                                priority: prio,
                                quanta: 0,
                            };
                            self.pfc_out[pu].on_frame(now, resume);
                            self.account_pause(p, c, self.now);
                            self.try_tx(p);
                        }
                    }
                    Verdict::StormRestored { .. } => self.t.pfcwd_restored += 1,
                    Verdict::None => {}
                }
            }
        }
        if self.flows_done < self.flows.len() as u64 {
            self.q.push(self.now + self.period(&w), EV_PFCWD, POLL);
        }
    }

    /// Whether the watchdog ignores PAUSE frames of `priority` arriving on `port`.
    pub(super) fn pfcwd_ignores_pause(&self, port: u32, priority: u8) -> bool {
        let (Some(w), Some(c)) = (
            self.cfg.pfcwd,
            self.prio_of.iter().position(|&x| x == priority),
        ) else {
            return false;
        };
        self.pfcwd
            .watch
            .get(port as usize * self.nclass + c)
            .is_some_and(|q| q.ignore_pause(&w))
    }

    /// The next data packet `p` sends: what [`Self::pop_data`] gives, after discarding
    /// the packets of queues the watchdog drops.
    pub(super) fn pop_data_kept(&mut self, p: u32) -> Option<u32> {
        while let Some(i) = self.pop_data(p) {
            let Some(w) = self.cfg.pfcwd else {
                return Some(i);
            };
            let k = p as usize * self.nclass + self.pkts[i as usize].class as usize;
            if !self.pfcwd.watch.get(k).is_some_and(|q| q.drop_packets(&w)) {
                return Some(i);
            }
            self.t.pfcwd_drops += 1;
            self.pc[p as usize].drops += 1;
            self.release(i);
        }
        None
    }
}
