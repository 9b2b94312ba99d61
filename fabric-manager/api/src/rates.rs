//! Rates between two snapshots, computed one way for every reader (TUI, daemon, tests).
//!
//! A counter that went **down** between the two snapshots was reset (the source
//! restarted, an interface was re-created): its delta is its new value, not a wrap to
//! 2^64 ([`counter_delta`]). Counters are 64-bit, so a real wrap does not happen within
//! the life of a fabric (2^64 bytes at 800 Gb/s is 5.8 years).

use crate::{Column, Error, FabricInfo, PortCounters, Result, Snapshot};
use std::collections::BTreeMap;

/// The increase of a cumulative counter from `prev` to `cur`; a decrease means the
/// counter was reset to zero in between, so the increase is `cur`.
#[inline]
pub fn counter_delta(prev: u64, cur: u64) -> u64 {
    if cur >= prev { cur - prev } else { cur }
}

/// Rates of one port over an interval. `None` where the source does not measure the
/// counter (or, for the ECN share, sent no packet).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct PortRate {
    /// Transmit rate, Gb/s.
    pub tx_gbps: Option<f64>,
    /// Receive rate, Gb/s.
    pub rx_gbps: Option<f64>,
    /// Transmit rate over the port's speed (0..=1, more only if the speed is wrong).
    pub utilisation: Option<f64>,
    /// Drops of every cause per second.
    pub drops_per_s: Option<f64>,
    /// PFC PAUSE frames sent per second (all priorities).
    pub pfc_tx_per_s: Option<f64>,
    /// PFC PAUSE frames received per second (all priorities).
    pub pfc_rx_per_s: Option<f64>,
    /// Share of the interval the egress was paused (summed over priorities).
    pub paused_share: Option<f64>,
    /// ECN-marked share of the frames sent.
    pub ecn_mark_share: Option<f64>,
}

/// Two snapshots of one stream, checked to be comparable.
#[derive(Debug)]
pub struct Interval<'a> {
    info: &'a FabricInfo,
    prev: &'a Snapshot,
    cur: &'a Snapshot,
    dt_ns: u64,
}

impl<'a> Interval<'a> {
    /// `prev` and `cur` must read the same clock, `cur` strictly later, and both match
    /// the fabric map.
    pub fn new(info: &'a FabricInfo, prev: &'a Snapshot, cur: &'a Snapshot) -> Result<Self> {
        if prev.time.clock != cur.time.clock {
            return Err(Error::Rates(format!(
                "snapshots {} and {} read different clocks ({:?}, {:?})",
                prev.seq, cur.seq, prev.time.clock, cur.time.clock
            )));
        }
        if cur.time.ns <= prev.time.ns {
            return Err(Error::Rates(format!(
                "snapshot {} (t = {} ns) is not later than snapshot {} (t = {} ns)",
                cur.seq, cur.time.ns, prev.seq, prev.time.ns
            )));
        }
        prev.validate(info)?;
        cur.validate(info)?;
        Ok(Interval {
            info,
            prev,
            cur,
            dt_ns: cur.time.ns - prev.time.ns,
        })
    }

    /// Length of the interval, ns.
    pub fn dt_ns(&self) -> u64 {
        self.dt_ns
    }

    /// Increase of one counter column at port `i` (`None` if either snapshot lacks it).
    fn delta(&self, pick: impl Fn(&PortCounters) -> Option<&Column>, i: usize) -> Option<u64> {
        let (p, c) = (&self.prev.counters, &self.cur.counters);
        Some(counter_delta(pick(p)?.get(i), pick(c)?.get(i)))
    }

    /// Increase summed over a per-priority map (`None` if neither snapshot has any).
    fn delta_prio(
        &self,
        pick: impl Fn(&PortCounters) -> &BTreeMap<u8, Column>,
        i: usize,
    ) -> Option<u64> {
        let (p, c) = (pick(&self.prev.counters), pick(&self.cur.counters));
        if c.is_empty() {
            return None;
        }
        let before = |prio: &u8| p.get(prio).map_or(0, |col| col.get(i));
        Some(
            c.iter()
                .map(|(prio, col)| counter_delta(before(prio), col.get(i)))
                .sum(),
        )
    }

    /// Port `i`'s speed (the snapshot's gauge if it has one, else the map's), bits/s.
    pub fn speed_bps(&self, i: usize) -> u64 {
        match &self.cur.gauges.speed_bps {
            Some(c) => c.get(i),
            None => self.info.ports.get(i).map_or(0, |p| p.speed_bps),
        }
    }

    /// Rates of port `i`.
    pub fn port(&self, i: usize) -> PortRate {
        let dt_s = self.dt_ns as f64 * 1e-9;
        let per_s = |d: Option<u64>| d.map(|d| d as f64 / dt_s);
        let gbps = |d: Option<u64>| d.map(|d| d as f64 * 8.0 / dt_s / 1e9);
        let tx = self.delta(|c| c.tx_bytes.as_ref(), i);
        let speed = self.speed_bps(i);
        let drops = [
            self.delta(|c| c.drops_buffer.as_ref(), i),
            self.delta(|c| c.drops_failure.as_ref(), i),
            self.delta(|c| c.drops_no_route.as_ref(), i),
            self.delta(|c| c.drops_kernel.as_ref(), i),
        ];
        let any_drops = drops.iter().any(Option::is_some);
        let tx_pkts = self.delta(|c| c.tx_pkts.as_ref(), i);
        let marks = self.delta(|c| c.ecn_marks.as_ref(), i);
        PortRate {
            tx_gbps: gbps(tx),
            rx_gbps: gbps(self.delta(|c| c.rx_bytes.as_ref(), i)),
            utilisation: tx
                .filter(|_| speed > 0)
                .map(|b| b as f64 * 8.0 / (speed as f64 * dt_s)),
            drops_per_s: any_drops.then(|| drops.iter().flatten().sum::<u64>() as f64 / dt_s),
            pfc_tx_per_s: per_s(self.delta_prio(|c| &c.pfc_tx, i)),
            pfc_rx_per_s: per_s(self.delta_prio(|c| &c.pfc_rx, i)),
            paused_share: self
                .delta(|c| c.paused_ns.as_ref(), i)
                .map(|d| d as f64 / self.dt_ns as f64),
            ecn_mark_share: match (marks, tx_pkts) {
                (Some(m), Some(p)) if p > 0 => Some(m as f64 / p as f64),
                _ => None,
            },
        }
    }

    /// Rates of every port, in port order.
    pub fn ports(&self) -> Vec<PortRate> {
        (0..self.info.ports.len()).map(|i| self.port(i)).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Source, SourceKind, Timestamp};

    #[test]
    fn rates_over_one_interval_and_a_reset() {
        let f = topo::generators::fat_tree(2, topo::Rate::gbps(100)).unwrap();
        let info = FabricInfo::from_topo(&f, 8);
        let n = info.ports.len();
        let src = Source {
            kind: SourceKind::Sim,
            name: "t".into(),
        };
        let mut a = Snapshot::new(0, Timestamp::virtual_ns(1_000_000), src.clone());
        let mut b = Snapshot::new(1, Timestamp::virtual_ns(2_000_000), src);
        let col = |v0: u64| {
            let mut v = vec![0; n];
            v[0] = v0;
            Some(Column::Dense(v))
        };
        a.counters.tx_bytes = col(1_000_000);
        b.counters.tx_bytes = col(1_000_000 + 6_250_000); // 50 Gb/s over 1 ms
        a.counters.tx_pkts = col(100);
        b.counters.tx_pkts = col(200);
        a.counters.ecn_marks = col(10);
        b.counters.ecn_marks = col(35);
        a.counters.paused_ns = col(0);
        b.counters.paused_ns = col(250_000);
        a.counters.drops_buffer = col(500);
        b.counters.drops_buffer = col(7); // reset in between: 7 new drops
        b.counters.pfc_tx.insert(3, Column::Dense(vec![4; n]));
        let iv = Interval::new(&info, &a, &b).unwrap();
        let r = iv.port(0);
        assert!((r.tx_gbps.unwrap() - 50.0).abs() < 1e-9);
        assert!((r.utilisation.unwrap() - 0.5).abs() < 1e-9);
        assert_eq!(r.rx_gbps, None);
        assert!((r.ecn_mark_share.unwrap() - 0.25).abs() < 1e-12);
        assert!((r.paused_share.unwrap() - 0.25).abs() < 1e-12);
        assert!((r.drops_per_s.unwrap() - 7000.0).abs() < 1e-6);
        assert!((r.pfc_tx_per_s.unwrap() - 4000.0).abs() < 1e-6);
        assert_eq!(iv.ports()[1].tx_gbps, Some(0.0));
        assert!(Interval::new(&info, &b, &a).is_err());
        b.counters.trims = Some(Column::zeros(n + 1));
        let e = Interval::new(&info, &a, &b).unwrap_err().to_string();
        assert!(
            e.contains("counters.trims") && e.contains(&format!("{} ports", n)),
            "{e}"
        );
    }
}
