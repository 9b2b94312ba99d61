//! The ideal flow completion time: what a flow alone on an idle fabric takes, so that
//! an idle path reports a slowdown of exactly 1.
//!
//! The flow's packets leave the NIC back to back and are stored and forwarded at every
//! hop of its first route. For `n` equal packets of `s` bytes over hops of rates
//! `r_1..r_H`, packet `k` leaves hop `i` at
//! `D_i(k) = Σ_{j≤i} s/r_j + Σ_{j<i} (d_j + L_j) + (k−1)·s/min_{j≤i} r_j`
//! (a tandem of deterministic servers: the slowest hop so far paces the train); the
//! last, possibly shorter packet then follows hop by hop,
//! `D_i(n) = max(D_{i−1}(n) + d_{i−1} + L_{i−1}, D_i(n−1)) + s_n/r_i`. The FCT adds the
//! last hop's delay and the ACK's way back (serialisation, delay and switching per hop).
//! Serialisation times are the engine's own (`Rate::tx_time` per packet, in ps).
//!
//! (The previous formula, size/rate + base RTT, counted one packet's serialisation at
//! the first hop twice: an idle path reported 0.998.)

use super::*;

impl<Q: EventQueue> Sim<Q> {
    /// The ideal FCT of a `size`-byte flow (`npkts` packets) from `src` to `dst`, ps.
    pub(super) fn ideal_fct(&self, src: u32, dst: u32, size: u64, npkts: u32) -> u64 {
        let mtu = self.cfg.mtu.0;
        let hdr = self.cfg.header.0;
        let full = Bytes(mtu + hdr);
        let last = Bytes(size.saturating_sub((npkts.max(1) as u64 - 1) * mtu) + hdr);
        let ports = self.net.ports_of(src);
        if ports.len() != 1 || self.cfg.ideal_rate.is_some() {
            // Several NIC ports (planes) or a pinned rate: the whole flow at that rate
            // plus one unloaded round trip, less the first hop's serialisation the round
            // trip already counts.
            let rate = self
                .cfg
                .ideal_rate
                .unwrap_or_else(|| self.net.nic_rate(src));
            let wire = npkts as u64 * hdr + size;
            let first = self
                .nominal_rate(ports.start as usize)
                .tx_time(full)
                .as_picos();
            return (rate.tx_time(Bytes(wire)).as_picos() + self.base_rtt(src, dst))
                .saturating_sub(first);
        }
        let Some(path) = self.first_route(src, dst) else {
            return 0;
        };
        let lat = self.cfg.switch_latency.as_picos();
        // Time to move from the end of hop i's transmission to hop i+1's queue.
        let hop_gap = |p: u32| {
            let pu = p as usize;
            let peer = self.net.port_node[self.net.port_peer[pu] as usize];
            self.net.port_delay[pu].as_picos() + if self.net.is_host(peer) { 0 } else { lat }
        };
        let n = npkts.max(1) as u64;
        let (mut sum_s, mut sum_gap, mut slowest) = (0u64, 0u64, 0u64);
        let mut prev_last: Option<u64> = None;
        for (i, &p) in path.iter().enumerate() {
            let r = self.nominal_rate(p as usize);
            let ts = r.tx_time(full).as_picos();
            let tl = r.tx_time(last).as_picos();
            sum_s += ts;
            slowest = slowest.max(ts);
            // Departure of packet n−1 from this hop (none when n = 1).
            let d_prev = (n >= 2).then(|| sum_s + sum_gap + (n - 2) * slowest);
            let arrive_last = match prev_last {
                None => 0,
                Some(d) => d + hop_gap(path[i - 1]),
            };
            let start = match d_prev {
                Some(d) => d.max(arrive_last),
                None => arrive_last,
            };
            prev_last = Some(start + tl);
            sum_gap += hop_gap(p);
        }
        let mut t = prev_last.unwrap_or(0) + hop_gap(*path.last().expect("non-empty path"));
        // The ACK's way back, along the reverse of the same links.
        let ack = self.cfg.ctrl_size;
        for &p in path.iter().rev() {
            let back = self.net.port_peer[p as usize];
            t += self.nominal_rate(back as usize).tx_time(ack).as_picos() + hop_gap(back);
        }
        t
    }

    /// The global ports of the first route from `src` to `dst` (in order), if any.
    fn first_route(&self, src: u32, dst: u32) -> Option<Vec<u32>> {
        let mut port = self.net.ports_of(src).next()?;
        let mut path = Vec::with_capacity(8);
        for _ in 0..64 {
            path.push(port);
            let next = self.net.port_node[self.net.port_peer[port as usize] as usize];
            if next == dst {
                return Some(path);
            }
            let &h = self.router.next_hops(next, dst).first()?;
            port = self.net.port_off[next as usize] + h as u32;
        }
        None
    }
}
