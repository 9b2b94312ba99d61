//! [`DaemonHealth`]: what the daemon derives from the events it sees — carrier changes
//! per port and the event-to-repaired histogram of reroutes — exported in `/metrics` and
//! summarised in `/api/v1/health`.

use std::sync::Mutex;

use fabric_api::{Event, EventKind, FabricInfo};
use prometheus_client::encoding::{DescriptorEncoder, EncodeMetric};
use prometheus_client::metrics::MetricType;
use prometheus_client::metrics::counter::ConstCounter;
use serde::Serialize;

use super::metrics::PortLabels;

/// Upper bounds of the reroute histogram's buckets, seconds (1 ms to 10 s: FRR's BFD
/// defaults detect in ~0.9 s, OpenSM sweeps every 10 s).
pub const REROUTE_BUCKETS: [f64; 13] = [
    0.001, 0.002, 0.005, 0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1.0, 2.0, 5.0, 10.0,
];

/// A cumulative histogram.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct Histogram {
    /// Observations per bucket (not cumulative), one more than the bounds (+Inf).
    pub counts: Vec<u64>,
    /// Sum of observations, seconds.
    pub sum: f64,
    /// Observations.
    pub count: u64,
}

impl Histogram {
    fn observe(&mut self, x: f64) {
        if self.counts.is_empty() {
            self.counts = vec![0; REROUTE_BUCKETS.len() + 1];
        }
        let b = REROUTE_BUCKETS
            .iter()
            .position(|&u| x <= u)
            .unwrap_or(REROUTE_BUCKETS.len());
        self.counts[b] += 1;
        self.sum += x;
        self.count += 1;
    }

    /// `(upper bound, cumulative count)` pairs, `+Inf` last.
    #[cfg(test)]
    pub fn cumulative(&self) -> Vec<(f64, u64)> {
        let mut acc = 0;
        REROUTE_BUCKETS
            .iter()
            .copied()
            .chain([f64::INFINITY])
            .enumerate()
            .map(|(i, u)| {
                acc += self.counts.get(i).copied().unwrap_or(0);
                (u, acc)
            })
            .collect()
    }
}

/// Mutable part.
#[derive(Debug, Default)]
struct State {
    carrier_changes: Vec<u64>,
    reroute: Histogram,
    links_down: std::collections::BTreeSet<u32>,
    unreachable_pairs: u64,
    last_reroute_ns: Option<u64>,
}

/// Health state derived from events.
#[derive(Debug)]
pub struct DaemonHealth {
    /// Ports of each link (`link → [port a, port b]`), for carrier counting.
    link_ports: Vec<[u32; 2]>,
    state: Mutex<State>,
}

/// The summary `/api/v1/health` serves.
#[derive(Debug, Clone, Serialize)]
pub struct HealthSummary {
    /// Links down now (link ids).
    pub links_down: Vec<u32>,
    /// Host pairs without a route after the latest reroute.
    pub unreachable_pairs: u64,
    /// Reroutes seen and their event-to-repaired times.
    pub reroutes: Histogram,
    /// Latest reroute's event-to-repaired time, ns.
    pub last_reroute_ns: Option<u64>,
}

impl DaemonHealth {
    /// Health of the fabric `info` maps.
    pub fn new(info: &FabricInfo) -> Self {
        let mut link_ports: Vec<[u32; 2]> = Vec::new();
        for (i, p) in info.ports.iter().enumerate() {
            if let Some(l) = p.link {
                let l = l.0 as usize;
                if link_ports.len() <= l {
                    link_ports.resize(l + 1, [u32::MAX; 2]);
                }
                let slot = &mut link_ports[l];
                let k = usize::from(slot[0] != u32::MAX);
                slot[k] = i as u32;
            }
        }
        DaemonHealth {
            link_ports,
            state: Mutex::new(State {
                carrier_changes: vec![0; info.ports.len()],
                ..State::default()
            }),
        }
    }

    /// Takes the events of one snapshot into account.
    pub fn on_events(&self, events: &[Event]) {
        let mut s = self.state.lock().expect("health lock");
        for e in events {
            match &e.what {
                EventKind::LinkDown { link, .. } | EventKind::LinkUp { link, .. } => {
                    let down = matches!(e.what, EventKind::LinkDown { .. });
                    if down {
                        s.links_down.insert(link.0);
                    } else {
                        s.links_down.remove(&link.0);
                    }
                    for &p in self.link_ports.get(link.0 as usize).into_iter().flatten() {
                        if let Some(c) = s.carrier_changes.get_mut(p as usize) {
                            *c += 1;
                        }
                    }
                }
                EventKind::Reroute {
                    unreachable_pairs,
                    repaired_ns,
                    ..
                } => {
                    s.reroute.observe(*repaired_ns as f64 * 1e-9);
                    // A source that could not count them leaves the last count standing.
                    if let Some(n) = unreachable_pairs {
                        s.unreachable_pairs = *n;
                    }
                    s.last_reroute_ns = Some(*repaired_ns);
                }
                _ => {}
            }
        }
    }

    /// The summary.
    pub fn summary(&self) -> HealthSummary {
        let s = self.state.lock().expect("health lock");
        HealthSummary {
            links_down: s.links_down.iter().copied().collect(),
            unreachable_pairs: s.unreachable_pairs,
            reroutes: s.reroute.clone(),
            last_reroute_ns: s.last_reroute_ns,
        }
    }

    /// `fabric_port_carrier_changes_total`.
    pub fn encode_carrier_changes(
        &self,
        enc: &mut DescriptorEncoder<'_>,
        labels: &PortLabels,
    ) -> std::fmt::Result {
        let s = self.state.lock().expect("health lock");
        let mut m = enc.encode_descriptor(
            "fabric_port_carrier_changes",
            "Carrier (link up/down) changes the daemon saw on this port",
            None,
            MetricType::Counter,
        )?;
        for (i, &c) in s.carrier_changes.iter().enumerate() {
            ConstCounter::new(c).encode(m.encode_family(&labels.of(i))?)?;
        }
        Ok(())
    }

    /// The fabric-wide health metrics.
    pub fn encode(
        &self,
        enc: &mut DescriptorEncoder<'_>,
        _labels: &PortLabels,
    ) -> std::fmt::Result {
        let s = self.state.lock().expect("health lock");
        let mut m = enc.encode_descriptor(
            "fabric_reroute_duration_seconds",
            "From a link event to routes repaired",
            None,
            MetricType::Histogram,
        )?;
        let no_exemplars: Option<&std::collections::HashMap<usize, _>> = None;
        // The encoder accumulates: hand it per-bucket counts.
        let buckets: Vec<(f64, u64)> = REROUTE_BUCKETS
            .iter()
            .copied()
            .chain([f64::INFINITY])
            .enumerate()
            .map(|(i, u)| (u, s.reroute.counts.get(i).copied().unwrap_or(0)))
            .collect();
        m.encode_histogram::<prometheus_client::encoding::NoLabelSet>(
            s.reroute.sum,
            s.reroute.count,
            &buckets,
            no_exemplars,
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn histogram_buckets_are_cumulative() {
        let mut h = Histogram::default();
        for x in [0.0005, 0.004, 0.004, 30.0] {
            h.observe(x);
        }
        let c = h.cumulative();
        assert_eq!(c[0], (0.001, 1));
        assert_eq!(c[2], (0.005, 3));
        assert_eq!(c.last().unwrap().1, 4);
        assert_eq!(h.count, 4);
    }
}
