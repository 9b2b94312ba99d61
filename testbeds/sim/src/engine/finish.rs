//! The results of a run: flows, per-port counters and totals assembled into
//! [`SimResults`], readable any number of times.

use super::*;

impl<Q: EventQueue> Sim<Q> {
    /// The results so far (at the end of a run: the run's results). Open paused-time and
    /// queue-area intervals are closed in the copy, so this can be read any number of
    /// times, also in the middle of a stepped run.
    pub fn results(&self) -> SimResults {
        let end = self.now;
        let mut flows = Vec::with_capacity(self.flows.len());
        for (i, fl) in self.flows.iter().enumerate() {
            let (ideal, fct) = if fl.size == u64::MAX {
                (None, None)
            } else {
                let ideal = self.ideal_fct(fl.src, fl.dst, fl.size, fl.npkts);
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
            let paused_ps = self.paused_ps_now(pu, end);
            let q_area = c.q_area + self.port[pu].qtotal as u128 * (end - c.q_last) as u128;
            let node = self.net.port_node[pu];
            let peer = self.net.peer_node(p);
            t.pauses_rcvd += c.pauses_rcvd;
            t.paused_us += paused_ps as f64 / 1e6;
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
                paused_us: paused_ps as f64 / 1e6,
                max_queue: c.max_q,
                avg_queue: (q_area / end.max(1) as u128) as f64,
            });
        }
        t.drops = t.drops_buffer + t.drops_failure + t.drops_noroute + t.pfcwd_drops;
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
                degraded: self
                    .kx
                    .degrades
                    .iter()
                    .map(|(d, _)| crate::results::DegradedLink {
                        link: [d.from, d.to],
                        both: d.both,
                        fraction: d.fraction,
                        at_us: d.at.picos() as f64 / 1e6,
                        until_us: d.until.map(|u| u.picos() as f64 / 1e6),
                    })
                    .collect(),
            },
            flows,
            links,
            t,
            self.series.clone(),
            self.deadlock.clone(),
        )
    }
}
