//! A 64-bit digest of what a run computed, to prove that an engine change (a faster
//! event queue, a new state layout) leaves the results of a seeded run unchanged.
//!
//! The digest covers everything the event loop decides: the event count per kind, the
//! end time, the packet slab's peak, every total, every flow's start, completion,
//! bytes, retransmissions and timeouts, every port's counters and queue figures, the
//! deadlock report and the sampled series. It leaves out what is derived afterwards
//! from those (FCT percentiles, slowdowns against an ideal FCT, balance figures), so
//! a change to how an ideal FCT is computed does not change it. Floating-point
//! figures are hashed by their bits: "unchanged" means bit for bit.
//!
//! ```
//! # use scenario::{Scenario, CompileCtx};
//! # use sim::{Sim, SimConfig, net::NetBuilder};
//! # use cc_algos::{Duration, Rate};
//! let net = NetBuilder::star(3, Rate::gbps(100), Duration::nanos(500));
//! let s = Scenario::from_toml_str(
//!     "[[workload]]\nkind = \"incast\"\nsenders = \"1..3\"\nreceiver = 0\nsize = \"64KB\"\n",
//!     "doc.toml").unwrap();
//! let plan = s.compile(&CompileCtx::new(3, Rate::gbps(100), 1)).unwrap();
//! let a = sim::digest::digest(&Sim::from_net(net.clone(), SimConfig::default(), &plan).unwrap().run());
//! let b = sim::digest::digest(&Sim::from_net(net, SimConfig::default(), &plan).unwrap().run());
//! assert_eq!(a, b);
//! ```

use crate::results::SimResults;

/// FNV-1a over 64-bit words (each word fed as its 8 little-endian bytes).
#[derive(Clone, Copy, Debug)]
struct Fnv(u64);

impl Fnv {
    const PRIME: u64 = 0x0000_0100_0000_01B3;
    fn new() -> Self {
        Fnv(0xCBF2_9CE4_8422_2325)
    }
    fn u64(&mut self, x: u64) {
        for b in x.to_le_bytes() {
            self.0 ^= b as u64;
            self.0 = self.0.wrapping_mul(Self::PRIME);
        }
    }
    fn f64(&mut self, x: f64) {
        self.u64(x.to_bits());
    }
    fn opt(&mut self, x: Option<f64>) {
        match x {
            Some(v) => {
                self.u64(1);
                self.f64(v);
            }
            None => self.u64(0),
        }
    }
    fn str(&mut self, s: &str) {
        self.u64(s.len() as u64);
        for b in s.bytes() {
            self.u64(b as u64);
        }
    }
}

/// The digest of a run's results (see the module documentation for what it covers).
pub fn digest(r: &SimResults) -> u64 {
    let mut h = Fnv::new();
    let run = &r.run;
    h.u64(run.events);
    for (name, n) in &run.events_by_kind {
        h.str(name);
        h.u64(*n);
    }
    h.f64(run.end_us);
    h.u64(run.peak_packets);
    let t = &r.totals;
    for x in [
        t.data_pkts,
        t.acks,
        t.nacks,
        t.cnps,
        t.credits,
        t.drops,
        t.drops_buffer,
        t.drops_failure,
        t.drops_noroute,
        t.trims,
        t.pauses_sent,
        t.resumes_sent,
        t.pauses_rcvd,
        t.ecn_marks,
        t.retransmits,
        t.timeouts,
        t.failures,
        t.reroutes,
        t.max_queue,
        t.workload_repeats,
    ] {
        h.u64(x);
    }
    h.f64(t.paused_us);
    h.u64(r.flows.len() as u64);
    for f in &r.flows {
        h.u64(f.id as u64);
        h.opt(f.start_us);
        h.opt(f.fct_us);
        h.opt(f.recv_done_us);
        h.u64(f.acked);
        h.u64(f.retransmits);
        h.u64(f.timeouts);
    }
    h.u64(r.links.len() as u64);
    for l in &r.links {
        for x in [
            l.node as u64,
            l.port as u64,
            l.tx_bytes,
            l.data_bytes,
            l.tx_pkts,
            l.drops,
            l.ecn_marks,
            l.trims,
            l.pauses_sent,
            l.pauses_rcvd,
            l.max_queue,
        ] {
            h.u64(x);
        }
        h.f64(l.paused_us);
        h.f64(l.avg_queue);
    }
    match &r.deadlock {
        Some(d) => {
            h.u64(1);
            h.f64(d.at_us);
            h.u64(d.stuck_bytes);
            for &(n, p, m) in &d.cycle {
                h.u64(n as u64);
                h.u64(p as u64);
                h.u64(m as u64);
            }
        }
        None => h.u64(0),
    }
    if let Some(s) = &r.series {
        h.u64(s.t_us.len() as u64);
        for &x in s.t_us.iter().chain(&s.jain) {
            h.f64(x);
        }
        for row in s.util.iter().chain(&s.queue) {
            for &x in row {
                h.u64(x.to_bits() as u64);
            }
        }
        for row in &s.flow_rates {
            for &(f, g) in row {
                h.u64(f as u64);
                h.u64(g.to_bits() as u64);
            }
        }
    }
    h.0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fnv_known_vector() {
        // FNV-1a 64 of the 8 zero bytes of `0u64`.
        let mut h = Fnv::new();
        h.u64(0);
        assert_eq!(h.0, 0xA8C7_F832_281A_39C5);
    }
}
