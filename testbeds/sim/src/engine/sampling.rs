//! Time series sampled at a fixed period (flow rates, Jain index, port utilisation and
//! queue depth).

use super::*;

impl<Q: EventQueue> Sim<Q> {
    pub(super) fn sample(&mut self) {
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
            queue.push(self.port[pu].qtotal as f32);
        }
        let s = self.series.as_mut().expect("sampling implies a series");
        s.t_us.push(self.now as f64 / 1e6);
        s.jain.push(jain(&rates));
        s.flow_rates.push(row_rates);
        if (s.util.len() + 1) * util.len() <= MAX_SERIES_CELLS {
            s.util.push(util);
            s.queue.push(queue);
        }
        if self.flows_done < self.flows.len() as u64 || self.repeating() {
            self.q.push(self.now + dt, EV_SAMPLE, 0);
        }
    }
}
