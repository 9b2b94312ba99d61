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
        Some(c.iter().fold(0u64, |a, (prio, col)| {
            a.saturating_add(counter_delta(before(prio), col.get(i)))
        }))
    }

    /// Port `i`'s speed (the snapshot's gauge if it has one, else the map's), bits/s.
    pub fn speed_bps(&self, i: usize) -> u64 {
        match &self.cur.gauges.speed_bps {
            Some(c) => c.get(i),
            None => self.info.ports.get(i).map_or(0, |p| p.speed_bps),
        }
    }

    /// Counter increases of port `i`.
    pub fn port_delta(&self, i: usize) -> PortDelta {
        let drops = DROPS.map(|pick| self.delta(pick, i));
        PortDelta {
            tx_bytes: self.delta(|c| c.tx_bytes.as_ref(), i),
            rx_bytes: self.delta(|c| c.rx_bytes.as_ref(), i),
            tx_pkts: self.delta(|c| c.tx_pkts.as_ref(), i),
            drops: drops.into_iter().flatten().reduce(u64::saturating_add),
            pfc_tx: self.delta_prio(|c| &c.pfc_tx, i),
            pfc_rx: self.delta_prio(|c| &c.pfc_rx, i),
            paused_ns: self.delta(|c| c.paused_ns.as_ref(), i),
            ecn_marks: self.delta(|c| c.ecn_marks.as_ref(), i),
        }
    }

    /// Rates of port `i` (a lookup in every column: for a whole fabric, [`Self::deltas`]
    /// is one pass per column instead).
    pub fn port(&self, i: usize) -> PortRate {
        self.port_delta(i).rate(self.dt_ns, self.speed_bps(i))
    }

    /// Rates of every port, in port order.
    pub fn ports(&self) -> Vec<PortRate> {
        (0..self.info.ports.len()).map(|i| self.port(i)).collect()
    }

    /// Every port's counter increases, computed one column at a time (one pass over each
    /// column, dense or sparse), for a reader that shows the whole fabric. Same values
    /// as [`Self::port_delta`] and [`Self::port`].
    pub fn deltas(&self) -> Deltas {
        let n = self.info.ports.len();
        let (p, c) = (&self.prev.counters, &self.cur.counters);
        let plain = |pick: Pick| {
            let (a, b) = (pick(p)?, pick(c)?);
            let mut out = vec![0; n];
            add_deltas(Some(a), b, &mut out);
            Some(out)
        };
        let mut drops = None::<Vec<u64>>;
        for pick in DROPS {
            if let (Some(a), Some(b)) = (pick(p), pick(c)) {
                add_deltas(Some(a), b, drops.get_or_insert_with(|| vec![0; n]));
            }
        }
        let prio = |pm: &BTreeMap<u8, Column>, cm: &BTreeMap<u8, Column>| {
            (!cm.is_empty()).then(|| {
                let mut out = vec![0; n];
                for (prio, col) in cm {
                    add_deltas(pm.get(prio), col, &mut out);
                }
                out
            })
        };
        let speed_bps = match &self.cur.gauges.speed_bps {
            Some(col) => {
                let mut v = vec![0; n];
                col.add_to(&mut v);
                v
            }
            None => self.info.ports.iter().map(|p| p.speed_bps).collect(),
        };
        Deltas {
            dt_ns: self.dt_ns,
            speed_bps,
            tx_bytes: plain(|c| c.tx_bytes.as_ref()),
            rx_bytes: plain(|c| c.rx_bytes.as_ref()),
            tx_pkts: plain(|c| c.tx_pkts.as_ref()),
            drops,
            pfc_tx: prio(&p.pfc_tx, &c.pfc_tx),
            pfc_rx: prio(&p.pfc_rx, &c.pfc_rx),
            paused_ns: plain(|c| c.paused_ns.as_ref()),
            ecn_marks: plain(|c| c.ecn_marks.as_ref()),
        }
    }
}

type Pick = fn(&PortCounters) -> Option<&Column>;

/// The drop counters, every cause.
const DROPS: [Pick; 4] = [
    |c| c.drops_buffer.as_ref(),
    |c| c.drops_failure.as_ref(),
    |c| c.drops_no_route.as_ref(),
    |c| c.drops_kernel.as_ref(),
];

/// Adds `counter_delta(prev[i], cur[i])` into `out[i]` for every port, in one pass. A
/// delta is 0 wherever `cur` is 0 (no increase, or a reset to 0), so only `cur`'s
/// non-zero values are visited when it is sparse; `prev` absent reads as zeros.
fn add_deltas(prev: Option<&Column>, cur: &Column, out: &mut [u64]) {
    if let (Some(Column::Dense(p)), Column::Dense(c)) = (prev, cur) {
        for ((o, &p), &c) in out.iter_mut().zip(p).zip(c) {
            *o = o.saturating_add(counter_delta(p, c));
        }
        return;
    }
    // prev's value at ascending indices: dense by index, sparse by a cursor
    let mut k = 0;
    let mut prev_at = |i: usize| match prev {
        None => 0,
        Some(Column::Dense(p)) => p.get(i).copied().unwrap_or(0),
        Some(Column::Sparse { idx, val, .. }) => {
            while k < idx.len() && (idx[k] as usize) < i {
                k += 1;
            }
            if idx.get(k) == Some(&(i as u32)) {
                val[k]
            } else {
                0
            }
        }
    };
    for (i, c) in cur.nonzero() {
        let d = counter_delta(prev_at(i), c);
        if let Some(o) = out.get_mut(i) {
            *o = o.saturating_add(d);
        }
    }
}

/// Increases of one port's counters over an interval (`None`: not measured).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct PortDelta {
    /// Bytes sent.
    pub tx_bytes: Option<u64>,
    /// Bytes received.
    pub rx_bytes: Option<u64>,
    /// Frames sent.
    pub tx_pkts: Option<u64>,
    /// Drops of every cause (present when any cause is measured).
    pub drops: Option<u64>,
    /// PFC PAUSE frames sent, all priorities.
    pub pfc_tx: Option<u64>,
    /// PFC PAUSE frames received, all priorities.
    pub pfc_rx: Option<u64>,
    /// Time paused, ns.
    pub paused_ns: Option<u64>,
    /// ECN marks.
    pub ecn_marks: Option<u64>,
}

impl PortDelta {
    /// Rates over `dt_ns` for a port of `speed_bps` bits/s; over an empty interval
    /// (`dt_ns` 0: nothing new was read) every rate is `None`, never a division by zero.
    pub fn rate(&self, dt_ns: u64, speed_bps: u64) -> PortRate {
        if dt_ns == 0 {
            return PortRate::default();
        }
        let dt_s = dt_ns as f64 * 1e-9;
        let per_s = |d: Option<u64>| d.map(|d| d as f64 / dt_s);
        let gbps = |d: Option<u64>| d.map(|d| d as f64 * 8.0 / dt_s / 1e9);
        PortRate {
            tx_gbps: gbps(self.tx_bytes),
            rx_gbps: gbps(self.rx_bytes),
            utilisation: self
                .tx_bytes
                .filter(|_| speed_bps > 0)
                .map(|b| b as f64 * 8.0 / (speed_bps as f64 * dt_s)),
            drops_per_s: per_s(self.drops),
            pfc_tx_per_s: per_s(self.pfc_tx),
            pfc_rx_per_s: per_s(self.pfc_rx),
            paused_share: self.paused_ns.map(|d| d as f64 / dt_ns as f64),
            ecn_mark_share: match (self.ecn_marks, self.tx_pkts) {
                (Some(m), Some(p)) if p > 0 => Some(m as f64 / p as f64),
                _ => None,
            },
        }
    }
}

/// Every port's counter increases over an [`Interval`], one vector per counter (absent
/// where the source does not measure it), from [`Interval::deltas`].
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Deltas {
    /// Length of the interval, ns.
    pub dt_ns: u64,
    /// Each port's speed, bits/s.
    pub speed_bps: Vec<u64>,
    /// Bytes sent.
    pub tx_bytes: Option<Vec<u64>>,
    /// Bytes received.
    pub rx_bytes: Option<Vec<u64>>,
    /// Frames sent.
    pub tx_pkts: Option<Vec<u64>>,
    /// Drops of every cause.
    pub drops: Option<Vec<u64>>,
    /// PFC PAUSE frames sent, all priorities.
    pub pfc_tx: Option<Vec<u64>>,
    /// PFC PAUSE frames received, all priorities.
    pub pfc_rx: Option<Vec<u64>>,
    /// Time paused, ns.
    pub paused_ns: Option<Vec<u64>>,
    /// ECN marks.
    pub ecn_marks: Option<Vec<u64>>,
}

impl Deltas {
    /// Counter increases of port `i` (every field `None` past the last port).
    pub fn port_delta(&self, i: usize) -> PortDelta {
        let at = |v: &Option<Vec<u64>>| v.as_ref().and_then(|v| v.get(i).copied());
        PortDelta {
            tx_bytes: at(&self.tx_bytes),
            rx_bytes: at(&self.rx_bytes),
            tx_pkts: at(&self.tx_pkts),
            drops: at(&self.drops),
            pfc_tx: at(&self.pfc_tx),
            pfc_rx: at(&self.pfc_rx),
            paused_ns: at(&self.paused_ns),
            ecn_marks: at(&self.ecn_marks),
        }
    }

    /// Rates of port `i`, as [`Interval::port`].
    pub fn port(&self, i: usize) -> PortRate {
        let speed = self.speed_bps.get(i).copied().unwrap_or(0);
        self.port_delta(i).rate(self.dt_ns, speed)
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
        let d = iv.deltas();
        for i in 0..n {
            assert_eq!(d.port(i), iv.port(i), "port {i}");
        }
        assert!(Interval::new(&info, &b, &a).is_err());
        // An empty interval has no rates (it gave inf and NaN).
        assert_eq!(
            iv.port_delta(0).rate(0, 100_000_000_000),
            PortRate::default()
        );
        b.counters.trims = Some(Column::zeros(n + 1));
        let e = Interval::new(&info, &a, &b).unwrap_err().to_string();
        assert!(
            e.contains("counters.trims") && e.contains(&format!("{} ports", n)),
            "{e}"
        );
    }
}
