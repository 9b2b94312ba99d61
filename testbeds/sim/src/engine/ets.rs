//! ETS between the data classes of a port (`SimConfig::ets`): which class
//! [`super::links`]' dequeue serves next. The scheduler is `cc_algos::ets::Ets` (the
//! veth switch runs the same one); this module gives it the port's ready classes by
//! priority and the size of their head packets. Control frames (ACK, NACK, CNP, trimmed
//! headers) and PAUSE frames keep their own queues, served before any data class.

use super::*;

impl<Q: EventQueue> Sim<Q> {
    /// One scheduler per port when ETS is on, none when it is off.
    pub(super) fn ets_state(cfg: &SimConfig, ports: usize) -> Vec<cc_algos::ets::Ets> {
        match &cfg.ets {
            Some(e) => vec![cc_algos::ets::Ets::new(e); ports],
            None => Vec::new(),
        }
    }

    /// The class ETS serves next on port `pu`: `None` when ETS is off or no class may
    /// send (empty or paused; the caller's strict scan then finds the next resume time).
    pub(super) fn ets_pick(&mut self, pu: usize) -> Option<usize> {
        if self.ets.is_empty() {
            return None;
        }
        let now = Instant::from_picos(self.now);
        let mut ready = 0u8;
        for c in 0..self.nclass {
            let prio = self.prio_of[c];
            let empty = self.cq[pu * self.nclass + c].q.is_empty();
            let paused = self.cfg.pfc && self.pfc_out[pu].is_paused(now, prio);
            if !empty && !paused {
                ready |= 1 << (prio & 7);
            }
        }
        let (cq, pkts, nclass) = (&self.cq, &self.pkts, self.nclass);
        let prio_of = &self.prio_of;
        let head = |prio: usize| {
            let c = prio_of
                .iter()
                .position(|&x| x as usize == prio)
                .unwrap_or(0);
            pkts[cq[pu * nclass + c].q.head as usize].wire as u64
        };
        let prio = self.ets[pu].select(ready, head)?;
        self.prio_of.iter().position(|&x| x as usize == prio)
    }
}
