//! A fabric of userspace switches behind one flat port numbering, sans-IO: the event
//! loop that serves every switch of a multi-switch testbed (one thread for all of them,
//! since the machine has two cores) sees *global* ports — one per AF_PACKET socket — and
//! this set dispatches each to its switch and local port. A star is the set of one switch.
//!
//! Frames between two switches go out on real veth links and come back in through the
//! peer's socket: every hop is a real frame, with PFC and ECN at each.
//!
//! Link failures are scheduled [`FabricEvent`]s (real time of the loop): the ports of
//! the link go down at once (each switch drops it from its ECMP groups, the local repair
//! on loss of signal), and at `reroute` the tables computed without the link (from `topo`)
//! replace every switch's routes.
//!
//! ```
//! use std::collections::HashMap;
//! use veth_core::fabric::SwitchSet;
//! use veth_core::switch::{Switch, SwitchConfig};
//! let sw = |ports: usize| Switch::new(SwitchConfig::new(
//!     vec![[2, 0, 0, 0, 0, 1]; ports],
//!     cc_algos::Rate::gbps(1),
//!     cc_algos::Bytes(1_000_000),
//!     HashMap::new(),
//! ));
//! // Global ports 0, 1 are switch 0's ports 0, 1; global port 2 is switch 1's port 0.
//! let set = SwitchSet::new(vec![sw(2), sw(1)], vec![(0, 0), (0, 1), (1, 0)]).unwrap();
//! assert_eq!(set.num_ports(), 3);
//! assert_eq!(set.locate(2), (1, 0));
//! ```

use std::collections::HashMap;
use std::net::Ipv4Addr;

use cc_algos::{Duration, Instant};

use crate::switch::{PortCounters, Switch};

/// Something scheduled on the fabric (real time of the loop).
#[derive(Debug, Clone)]
pub struct FabricEvent {
    /// When it happens.
    pub at: Instant,
    /// Global ports that go down (both ends of a failed link) ...
    pub down: Vec<usize>,
    /// ... or come back up.
    pub up: Vec<usize>,
    /// New routing tables, one per switch (`None`: keep the tables).
    pub routes: Option<Vec<HashMap<Ipv4Addr, Vec<usize>>>>,
    /// Global ports whose rate changes: (port, fraction of the link rate in (0, 1]),
    /// a degraded link or its restoration (1.0).
    pub rates: Vec<(usize, f64)>,
}

/// Every switch of a fabric, addressed by global port.
#[derive(Debug)]
pub struct SwitchSet {
    switches: Vec<Switch>,
    /// Global port → (switch, local port).
    map: Vec<(usize, usize)>,
    /// Pending events, earliest first.
    events: Vec<FabricEvent>,
}

impl SwitchSet {
    /// `map[g]` is the (switch, local port) behind global port `g`; every port of every
    /// switch must appear exactly once.
    pub fn new(switches: Vec<Switch>, map: Vec<(usize, usize)>) -> Result<SwitchSet, String> {
        let mut seen: Vec<Vec<bool>> = switches
            .iter()
            .map(|s| vec![false; s.num_ports()])
            .collect();
        for (g, &(s, p)) in map.iter().enumerate() {
            let slot = seen.get_mut(s).and_then(|v| v.get_mut(p)).ok_or_else(|| {
                format!("global port {g} names switch {s} port {p}, which does not exist")
            })?;
            if *slot {
                return Err(format!(
                    "global port {g}: switch {s} port {p} is mapped twice"
                ));
            }
            *slot = true;
        }
        if let Some((s, v)) = seen.iter().enumerate().find(|(_, v)| v.iter().any(|x| !x)) {
            let p = v.iter().position(|x| !x).unwrap_or(0);
            return Err(format!("switch {s} port {p} has no global port"));
        }
        Ok(SwitchSet {
            switches,
            map,
            events: Vec::new(),
        })
    }

    /// One switch, its ports in order.
    pub fn single(switch: Switch) -> SwitchSet {
        let map = (0..switch.num_ports()).map(|p| (0, p)).collect();
        SwitchSet {
            switches: vec![switch],
            map,
            events: Vec::new(),
        }
    }

    /// Schedule `events` (kept earliest first); a rate fraction outside (0, 1] or a
    /// port that does not exist is refused.
    pub fn schedule(&mut self, mut events: Vec<FabricEvent>) -> Result<(), String> {
        for e in &events {
            for &(g, f) in &e.rates {
                if g >= self.map.len() || !(f > 0.0 && f <= 1.0) {
                    return Err(format!(
                        "rate change of global port {g} to {f} of the link rate: the port must exist ({} ports) and the fraction be in (0, 1]",
                        self.map.len()
                    ));
                }
            }
        }
        self.events.append(&mut events);
        self.events.sort_by_key(|e| std::cmp::Reverse(e.at));
        Ok(())
    }

    /// Run global port `g` at `fraction` of its link rate from now on (see
    /// [`Switch::set_port_fraction`]).
    pub fn set_port_fraction(&mut self, g: usize, fraction: f64) -> Result<(), String> {
        let &(s, p) = self
            .map
            .get(g)
            .ok_or_else(|| format!("global port {g} does not exist ({} ports)", self.map.len()))?;
        self.switches[s].set_port_fraction(p, fraction)
    }

    /// The (switch, local port) of global port `g`.
    pub fn locate(&self, g: usize) -> (usize, usize) {
        self.map[g]
    }

    /// The global port of `switch`'s local port `port`.
    pub fn global(&self, switch: usize, port: usize) -> Option<usize> {
        self.map.iter().position(|&m| m == (switch, port))
    }

    pub fn num_ports(&self) -> usize {
        self.map.len()
    }

    pub fn switches(&self) -> &[Switch] {
        &self.switches
    }

    pub fn switches_mut(&mut self) -> &mut [Switch] {
        &mut self.switches
    }

    pub fn counters(&self, g: usize) -> &PortCounters {
        let (s, p) = self.map[g];
        self.switches[s].counters(p)
    }

    /// [`Switch::paused_time_at`] of global port `g`.
    pub fn paused_time_at(&self, g: usize, now: Instant) -> Duration {
        let (s, p) = self.map[g];
        self.switches[s].paused_time_at(p, now)
    }

    /// The largest shared-buffer occupancy any switch reached.
    pub fn max_buffer_used(&self) -> u64 {
        self.switches
            .iter()
            .map(|s| s.max_buffer_used)
            .max()
            .unwrap_or(0)
    }

    pub fn on_frame(&mut self, now: Instant, g: usize, frame: Vec<u8>) {
        let (s, p) = self.map[g];
        self.switches[s].on_frame(now, p, frame);
    }

    pub fn poll_transmit(&mut self, now: Instant, g: usize) -> Option<Vec<u8>> {
        let (s, p) = self.map[g];
        self.switches[s].poll_transmit(now, p)
    }

    /// Every switch's timers, and the scheduled events due at `now`.
    pub fn on_timeout(&mut self, now: Instant) {
        while self.events.last().is_some_and(|e| e.at <= now) {
            let e = self.events.pop().expect("non-empty");
            for (g, up) in e
                .down
                .iter()
                .map(|&g| (g, false))
                .chain(e.up.iter().map(|&g| (g, true)))
            {
                if let Some(&(s, p)) = self.map.get(g) {
                    self.switches[s].set_port_up(now, p, up);
                }
            }
            for &(g, fraction) in &e.rates {
                if let Some(&(s, p)) = self.map.get(g) {
                    // Fractions are checked when the events are scheduled.
                    let _ = self.switches[s].set_port_fraction(p, fraction);
                }
            }
            if let Some(tables) = e.routes {
                for (sw, t) in self.switches.iter_mut().zip(tables) {
                    sw.set_routes(t);
                }
            }
        }
        for s in &mut self.switches {
            s.on_timeout(now);
        }
    }

    /// The earliest instant something may happen without a new arrival.
    pub fn next_wakeup(&self, now: Instant) -> Option<Instant> {
        self.switches
            .iter()
            .filter_map(|s| s.next_wakeup(now))
            .chain(self.events.last().map(|e| e.at))
            .min()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::switch::SwitchConfig;
    use crate::wire::roce;
    use cc_algos::{Bytes, Duration, Rate};

    fn frame(src: Ipv4Addr, dst: Ipv4Addr, entropy: u16) -> Vec<u8> {
        roce::Repr::send_only(src, dst, entropy, 64).to_frame()
    }

    /// A leaf with a host port 0 and two uplinks 1, 2 that both reach 10.0.1.1.
    fn leaf(salt: u64) -> Switch {
        let mut c = SwitchConfig::new(
            (0..3).map(|i| [2, 0xaa, 0, 0, 0, i]).collect(),
            Rate::gbps(1),
            Bytes(10_000_000),
            HashMap::from([(Ipv4Addr::new(10, 0, 1, 1), vec![1, 2])]),
        );
        c.ecmp_salt = salt;
        Switch::new(c)
    }

    fn t(us: u64) -> Instant {
        Instant::ZERO + Duration::micros(us)
    }

    /// Drain every port (advancing time as the pacer asks); frames sent per port.
    fn sent_per_port(s: &mut SwitchSet, from: Instant) -> [u64; 3] {
        let mut n = [0; 3];
        let mut now = from;
        while let Some(at) = s.next_wakeup(now) {
            now = now.max(at);
            for (g, c) in n.iter_mut().enumerate() {
                while s.poll_transmit(now, g).is_some() {
                    *c += 1;
                }
            }
        }
        n
    }

    #[test]
    fn one_entropy_value_is_one_path_and_spraying_uses_both() {
        let (src, dst) = (Ipv4Addr::new(10, 0, 0, 1), Ipv4Addr::new(10, 0, 1, 1));
        let mut s = SwitchSet::single(leaf(7));
        for _ in 0..100 {
            s.on_frame(t(0), 0, frame(src, dst, 0xc001));
        }
        let n = sent_per_port(&mut s, t(0));
        assert_eq!(n[0], 0);
        assert!(n[1] == 100 || n[2] == 100, "a flow takes one path: {n:?}");
        for ev in 0..256u16 {
            s.on_frame(t(0), 0, frame(src, dst, 0xc000 | ev));
        }
        let n = sent_per_port(&mut s, t(1000));
        assert_eq!(n[1] + n[2], 256);
        assert!(n[1] > 96 && n[2] > 96, "256 entropy values spread: {n:?}");
    }

    #[test]
    fn a_failed_uplink_leaves_the_group_and_loses_its_queue() {
        let (src, dst) = (Ipv4Addr::new(10, 0, 0, 1), Ipv4Addr::new(10, 0, 1, 1));
        let mut s = SwitchSet::single(leaf(7));
        for ev in 0..64u16 {
            s.on_frame(t(0), 0, frame(src, dst, ev));
        }
        let queued_on_1 = s.switches()[0].counters(1).queue_bytes;
        assert!(queued_on_1 > 0);
        s.schedule(vec![FabricEvent {
            at: t(5),
            down: vec![1],
            up: vec![],
            routes: None,
            rates: vec![],
        }])
        .unwrap();
        assert_eq!(s.next_wakeup(t(0)), Some(t(0)));
        s.on_timeout(t(5));
        assert!(!s.switches()[0].port_up(1));
        let c = s.counters(1).clone();
        assert!(c.link_down_drops > 0 && c.queue_bytes == 0);
        for ev in 0..64u16 {
            s.on_frame(t(6), 0, frame(src, dst, ev));
        }
        let n = sent_per_port(&mut s, t(6));
        let c = s.counters(1).clone();
        assert_eq!(n[1], 0, "a down port sends nothing");
        assert_eq!(s.counters(2).tx_packets, 64 + 64 - c.link_down_drops);
        // Buffer accounting: what was lost was released.
        assert_eq!(s.switches()[0].buffer_used(), 0);
    }

    /// When the last of `n` frames queued on port 1 at `from` has left.
    fn drain_time(s: &mut SwitchSet, from: Instant) -> Instant {
        let mut now = from;
        while let Some(at) = s.next_wakeup(now) {
            now = now.max(at);
            while s.poll_transmit(now, 1).is_some() {}
        }
        now
    }

    #[test]
    fn a_degraded_port_sends_at_its_fraction_of_the_rate() {
        let (src, dst) = (Ipv4Addr::new(10, 0, 0, 1), Ipv4Addr::new(10, 0, 1, 1));
        let one_path = |s: &mut SwitchSet| {
            s.switches_mut()[0].set_routes(HashMap::from([(dst, vec![1])]));
        };
        let mut full = SwitchSet::single(leaf(7));
        one_path(&mut full);
        let mut slow = SwitchSet::single(leaf(7));
        one_path(&mut slow);
        let bad = FabricEvent {
            at: t(0),
            down: vec![],
            up: vec![],
            routes: None,
            rates: vec![(1, 1.5)],
        };
        assert!(slow.schedule(vec![bad]).unwrap_err().contains("(0, 1]"));
        slow.schedule(vec![FabricEvent {
            at: t(0),
            down: vec![],
            up: vec![],
            routes: None,
            rates: vec![(1, 0.25)],
        }])
        .unwrap();
        slow.on_timeout(t(0));
        for s in [&mut full, &mut slow] {
            for _ in 0..50 {
                s.on_frame(t(0), 0, frame(src, dst, 1));
            }
        }
        let (a, b) = (drain_time(&mut full, t(0)), drain_time(&mut slow, t(0)));
        let ratio = (b - Instant::ZERO).as_picos() as f64 / (a - Instant::ZERO).as_picos() as f64;
        assert!(
            (3.8..4.2).contains(&ratio),
            "a quarter of the rate: {ratio}"
        );
    }

    #[test]
    fn the_map_must_cover_every_port_once() {
        assert!(SwitchSet::new(vec![leaf(0)], vec![(0, 0), (0, 1)]).is_err());
        assert!(SwitchSet::new(vec![leaf(0)], vec![(0, 0), (0, 1), (0, 1)]).is_err());
        assert!(SwitchSet::new(vec![leaf(0)], vec![(0, 0), (0, 1), (1, 0)]).is_err());
        assert!(SwitchSet::new(vec![leaf(0)], vec![(0, 2), (0, 1), (0, 0)]).is_ok());
    }
}
