//! `GET /metrics`: the latest snapshot in the Prometheus exposition formats, through a
//! prometheus-client [`Collector`] that reads the snapshot at scrape time (no per-port
//! metric objects are kept: a 300k-link fabric would need millions).
//!
//! Names, labels and units follow the issue (base units, `_total` counters): every port
//! has `fabric_port_up` (0 when down) and a `fabric_link_info` series naming its peer;
//! a counter family appears when the source measures it. Labels: `switch` (the node's
//! name; for a host NIC port the host's name), `port` (the node's port number). The
//! daemon's own health is under `fabric_daemon_*`.
//!
//! The OpenMetrics text is served when the scraper asks for it (Prometheus does);
//! otherwise the classic text format 0.0.4 (`promtool check metrics` reads that), made
//! from the same encoding by [`to_classic`].

use std::fmt::Write;
use std::sync::Arc;

use fabric_api::{Column, FabricInfo, Snapshot};
use prometheus_client::collector::Collector;
use prometheus_client::encoding::{DescriptorEncoder, EncodeMetric};
use prometheus_client::metrics::MetricType;
use prometheus_client::metrics::counter::ConstCounter;
use prometheus_client::metrics::gauge::ConstGauge;
use prometheus_client::registry::Registry;

use super::health::DaemonHealth;
use super::hub::{Counters, Hub};

/// Labels of every port, built once from the fabric map.
#[derive(Debug)]
pub struct PortLabels {
    switch: Vec<Arc<str>>,
    port: Vec<String>,
    /// `(peer switch, peer port, link)` per port, when the map knows them.
    peer: Vec<Option<(Arc<str>, String, String)>>,
}

impl PortLabels {
    /// Labels of `info`'s ports.
    pub fn new(info: &FabricInfo) -> Self {
        let names: Vec<Arc<str>> = info
            .nodes
            .iter()
            .map(|n| Arc::from(n.name.as_str()))
            .collect();
        let unknown: Arc<str> = Arc::from("?");
        let name = |i: u32| {
            names
                .get(i as usize)
                .cloned()
                .unwrap_or_else(|| unknown.clone())
        };
        PortLabels {
            switch: info.ports.iter().map(|p| name(p.node)).collect(),
            port: info.ports.iter().map(|p| p.port.to_string()).collect(),
            peer: info
                .ports
                .iter()
                .map(|p| match (p.peer, p.peer_port, p.link) {
                    (Some(n), Some(pp), Some(l)) => {
                        Some((name(n), pp.to_string(), l.0.to_string()))
                    }
                    _ => None,
                })
                .collect(),
        }
    }

    /// `switch` and `port` labels of port `i`.
    pub fn of(&self, i: usize) -> [(&'static str, &str); 2] {
        [("switch", &self.switch[i]), ("port", &self.port[i])]
    }
}

/// What a scrape encodes.
#[derive(Debug)]
pub struct Exposition {
    hub: Arc<Hub>,
    labels: PortLabels,
    health: Arc<DaemonHealth>,
}

/// Encodes a family of one counter per port from a column (skipped when absent).
fn port_counter(
    enc: &mut DescriptorEncoder<'_>,
    labels: &PortLabels,
    name: &str,
    help: &str,
    col: Option<&Column>,
    scale: f64,
) -> std::fmt::Result {
    let Some(col) = col else { return Ok(()) };
    let mut m = enc.encode_descriptor(name, help, None, MetricType::Counter)?;
    for (i, v) in col.iter().enumerate() {
        let set = labels.of(i);
        let fam = m.encode_family(&set)?;
        if scale == 1.0 {
            ConstCounter::new(v).encode(fam)?;
        } else {
            ConstCounter::new(v as f64 * scale).encode(fam)?;
        }
    }
    Ok(())
}

/// Sum of the present columns, port by port (`None` when none is present).
fn sum_columns(cols: &[Option<&Column>], n: usize) -> Option<Column> {
    let present: Vec<&Column> = cols.iter().flatten().copied().collect();
    if present.is_empty() {
        return None;
    }
    let mut v = vec![0u64; n];
    for c in present {
        for (i, x) in c.nonzero() {
            if let Some(s) = v.get_mut(i) {
                *s = s.saturating_add(x);
            }
        }
    }
    Some(Column::Dense(v))
}

impl Exposition {
    /// The exposition of `hub`'s snapshots.
    pub fn new(hub: Arc<Hub>, health: Arc<DaemonHealth>) -> Self {
        let labels = PortLabels::new(hub.info());
        Exposition {
            hub,
            labels,
            health,
        }
    }

    fn ports(&self, s: &Snapshot, enc: &mut DescriptorEncoder<'_>) -> std::fmt::Result {
        let n = self.labels.port.len();
        let l = &self.labels;
        let c = &s.counters;
        {
            let mut m = enc.encode_descriptor(
                "fabric_port_up",
                "1 when the port's oper state is up, 0 when down",
                None,
                MetricType::Gauge,
            )?;
            let mut down = s.gauges.oper_down.iter().peekable();
            for i in 0..n {
                let is_down = down.next_if(|&&d| d as usize == i).is_some();
                ConstGauge::new(i64::from(!is_down)).encode(m.encode_family(&l.of(i))?)?;
            }
        }
        self.health.encode_carrier_changes(enc, l)?;
        let tx_drops = sum_columns(
            &[
                c.drops_buffer.as_ref(),
                c.drops_failure.as_ref(),
                c.drops_no_route.as_ref(),
            ],
            n,
        );
        let families: [(&str, &str, Option<&Column>); 6] = [
            (
                "fabric_port_receive_bytes",
                "Bytes received",
                c.rx_bytes.as_ref(),
            ),
            (
                "fabric_port_transmit_bytes",
                "Bytes transmitted",
                c.tx_bytes.as_ref(),
            ),
            (
                "fabric_port_receive_packets",
                "Frames received",
                c.rx_pkts.as_ref(),
            ),
            (
                "fabric_port_transmit_packets",
                "Frames transmitted",
                c.tx_pkts.as_ref(),
            ),
            (
                "fabric_port_transmit_drops",
                "Packets dropped at this egress (no buffer, failed link, no route)",
                tx_drops.as_ref(),
            ),
            (
                "fabric_port_receive_drops",
                "Packets the kernel dropped or errored on this interface",
                c.drops_kernel.as_ref(),
            ),
        ];
        for (name, help, col) in families {
            port_counter(enc, l, name, help, col, 1.0)?;
        }
        {
            let mut m = enc.encode_descriptor(
                "fabric_port_speed_bytes",
                "Line rate in bytes per second",
                None,
                MetricType::Gauge,
            )?;
            for (i, p) in self.hub.info().ports.iter().enumerate() {
                let bps = s
                    .gauges
                    .speed_bps
                    .as_ref()
                    .map_or(p.speed_bps, |c| c.get(i));
                ConstGauge::new(bps / 8).encode(m.encode_family(&l.of(i))?)?;
            }
        }
        if !s.gauges.queue_bytes.is_empty() {
            let mut m = enc.encode_descriptor(
                "fabric_queue_occupancy_bytes",
                "Bytes queued at this egress, per queue (PFC priority)",
                None,
                MetricType::Gauge,
            )?;
            for (q, col) in &s.gauges.queue_bytes {
                let q = q.to_string();
                for (i, v) in col.iter().enumerate() {
                    let [a, b] = l.of(i);
                    ConstGauge::new(v).encode(m.encode_family(&[a, b, ("queue", &q)])?)?;
                }
            }
        }
        port_counter(
            enc,
            l,
            "fabric_queue_ecn_marked_packets",
            "Packets ECN-marked at this egress (all queues)",
            c.ecn_marks.as_ref(),
            1.0,
        )?;
        self.pfc(s, enc)?;
        port_counter(
            enc,
            l,
            "fabric_pfc_paused_seconds",
            "Seconds this egress spent paused by PFC (summed over priorities)",
            c.paused_ns.as_ref(),
            1e-9,
        )?;
        self.link_info(enc)
    }

    fn pfc(&self, s: &Snapshot, enc: &mut DescriptorEncoder<'_>) -> std::fmt::Result {
        let c = &s.counters;
        if c.pfc_tx.is_empty() && c.pfc_rx.is_empty() {
            return Ok(());
        }
        let mut m = enc.encode_descriptor(
            "fabric_pfc_pause_frames",
            "PFC PAUSE frames sent (tx) or received (rx) on this port, per priority",
            None,
            MetricType::Counter,
        )?;
        for (dir, map) in [("tx", &c.pfc_tx), ("rx", &c.pfc_rx)] {
            for (p, col) in map {
                let p = p.to_string();
                for (i, v) in col.iter().enumerate() {
                    let [a, b] = self.labels.of(i);
                    let set = [a, b, ("direction", dir), ("priority", &p)];
                    ConstCounter::new(v).encode(m.encode_family(&set)?)?;
                }
            }
        }
        Ok(())
    }

    fn link_info(&self, enc: &mut DescriptorEncoder<'_>) -> std::fmt::Result {
        let mut m = enc.encode_descriptor(
            "fabric_link_info",
            "The cable on each port: its peer switch and port and the link id",
            None,
            MetricType::Gauge,
        )?;
        for i in 0..self.labels.port.len() {
            let Some((ps, pp, link)) = &self.labels.peer[i] else {
                continue;
            };
            let [a, b] = self.labels.of(i);
            let set = [
                a,
                b,
                ("peer_switch", &**ps),
                ("peer_port", pp),
                ("link", link),
            ];
            ConstGauge::new(1).encode(m.encode_family(&set)?)?;
        }
        Ok(())
    }

    fn daemon(&self, enc: &mut DescriptorEncoder<'_>) -> std::fmt::Result {
        let k: &Counters = &self.hub.counters;
        let counters = [
            (
                "fabric_daemon_connections",
                "TCP connections accepted",
                k.connections.get(),
            ),
            (
                "fabric_daemon_bad_connections",
                "Connections ended by a protocol error (malformed or oversized request head, header timeout)",
                k.bad_connections.get(),
            ),
            (
                "fabric_daemon_bad_requests",
                "Requests refused as malformed or too large",
                k.bad_requests.get(),
            ),
            (
                "fabric_daemon_auth_failures",
                "Requests refused for a missing or wrong token",
                k.auth_failures.get(),
            ),
            (
                "fabric_daemon_request_timeouts",
                "Requests that timed out",
                k.timeouts.get(),
            ),
            (
                "fabric_daemon_stream_clients",
                "Stream clients served",
                k.stream_clients.get(),
            ),
            (
                "fabric_daemon_stream_clients_dropped",
                "Stream clients dropped for falling behind",
                k.stream_dropped.get(),
            ),
            (
                "fabric_daemon_snapshots",
                "Snapshots published",
                k.snapshots.get(),
            ),
            (
                "fabric_daemon_source_errors",
                "Errors the telemetry source reported",
                k.source_errors.get(),
            ),
        ];
        for (name, help, v) in counters {
            let m = enc.encode_descriptor(name, help, None, MetricType::Counter)?;
            ConstCounter::new(v).encode(m)?;
        }
        let m = enc.encode_descriptor(
            "fabric_daemon_stream_clients_connected",
            "Stream clients connected now",
            None,
            MetricType::Gauge,
        )?;
        ConstGauge::new(self.hub.stream_clients() as i64).encode(m)?;
        if let Some(latest) = self.hub.latest() {
            let m = enc.encode_descriptor(
                "fabric_daemon_snapshot_seq",
                "Sequence number of the latest snapshot",
                None,
                MetricType::Gauge,
            )?;
            ConstGauge::new(latest.snapshot.seq as i64).encode(m)?;
            let m = enc.encode_descriptor(
                "fabric_daemon_collect_seconds",
                "Time the collector spent producing and publishing the latest snapshot",
                None,
                MetricType::Gauge,
            )?;
            ConstGauge::new(latest.cost_ns as f64 * 1e-9).encode(m)?;
        }
        Ok(())
    }
}

impl Collector for Exposition {
    fn encode(&self, mut enc: DescriptorEncoder<'_>) -> std::fmt::Result {
        if let Some(latest) = self.hub.latest() {
            self.ports(&latest.snapshot, &mut enc)?;
        }
        self.health.encode(&mut enc, &self.labels)?;
        self.daemon(&mut enc)
    }
}

/// A registry holding the exposition.
pub fn registry(exp: Exposition) -> Registry {
    let mut r = Registry::default();
    r.register_collector(Box::new(exp));
    r
}

/// The OpenMetrics text of `registry`.
pub fn encode_openmetrics(registry: &Registry) -> String {
    let mut s = String::with_capacity(1 << 16);
    prometheus_client::encoding::text::encode(&mut s, registry).expect("writing to a String");
    s
}

/// OpenMetrics text → Prometheus text format 0.0.4: counters' `HELP`/`TYPE` lines take
/// the `_total` name their samples carry; `# UNIT` and `# EOF` are dropped.
pub fn to_classic(om: &str) -> String {
    let mut out = String::with_capacity(om.len());
    let mut counter_help: Option<String> = None;
    for line in om.lines() {
        if line == "# EOF" || line.starts_with("# UNIT ") {
            continue;
        }
        if let Some(rest) = line.strip_prefix("# HELP ") {
            counter_help = Some(rest.to_string());
            continue;
        }
        if let Some(rest) = line.strip_prefix("# TYPE ") {
            let (name, kind) = rest.split_once(' ').unwrap_or((rest, "untyped"));
            let suffix = if kind == "counter" { "_total" } else { "" };
            if let Some(h) = counter_help.take() {
                let (_, text) = h.split_once(' ').unwrap_or((&h, ""));
                let _ = writeln!(out, "# HELP {name}{suffix} {text}");
            }
            let _ = writeln!(out, "# TYPE {name}{suffix} {kind}");
            continue;
        }
        out.push_str(line);
        out.push('\n');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn classic_format_names_counters_with_total() {
        let om = "# HELP a_bytes Bytes.\n# TYPE a_bytes counter\na_bytes_total{x=\"1\"} 5\n# HELP g A gauge.\n# TYPE g gauge\n# UNIT g seconds\ng 1\n# EOF\n";
        assert_eq!(
            to_classic(om),
            "# HELP a_bytes_total Bytes.\n# TYPE a_bytes_total counter\na_bytes_total{x=\"1\"} 5\n# HELP g A gauge.\n# TYPE g gauge\ng 1\n"
        );
    }

    #[test]
    fn sums_present_columns_only() {
        assert_eq!(sum_columns(&[None, None], 3), None);
        let a = Column::from(vec![1, 0, 2]);
        let b = Column::zeros(3);
        assert_eq!(sum_columns(&[Some(&a), None, Some(&b)], 3), Some(a.clone()));
    }
}
