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

/// What one scrape asks for: `?switch=A,B` keeps the per-port series of those nodes'
/// ports (by the `switch` label: a node's name), `?family=P,Q` the families whose name
/// starts with one of the prefixes; both absent: everything.
#[derive(Debug, Clone, Default)]
pub struct Selection {
    /// Port indices, ascending (`None`: every port).
    ports: Option<Vec<usize>>,
    /// Family name prefixes (`None`: every family).
    families: Option<Vec<String>>,
}

/// Most names or prefixes one filter takes.
pub const MAX_FILTER_ITEMS: usize = 4096;

/// Comma-separated items of a filter (empty ones dropped), at most [`MAX_FILTER_ITEMS`].
fn items<'a>(what: &str, list: &'a str) -> Result<Vec<&'a str>, String> {
    let v: Vec<&str> = list.split(',').filter(|x| !x.is_empty()).collect();
    if v.is_empty() {
        return Err(format!(
            "{what}: expected one or more comma-separated names"
        ));
    }
    if v.len() > MAX_FILTER_ITEMS {
        return Err(format!(
            "{what}: {} names, at most {MAX_FILTER_ITEMS}",
            v.len()
        ));
    }
    Ok(v)
}

impl Selection {
    /// The selection `?switch=` and `?family=` describe over `info`'s ports; an unknown
    /// node name is an error naming it.
    pub fn parse(
        info: &FabricInfo,
        switch: Option<&str>,
        family: Option<&str>,
    ) -> Result<Selection, String> {
        let ports = match switch {
            None => None,
            Some(list) => {
                let mut nodes = Vec::new();
                for name in items("switch", list)? {
                    let n = info
                        .nodes
                        .iter()
                        .position(|x| x.name == name)
                        .ok_or_else(|| format!("switch: no node named {name:?}"))?;
                    nodes.push(n as u32);
                }
                nodes.sort_unstable();
                Some(
                    (0..info.ports.len())
                        .filter(|&i| nodes.binary_search(&info.ports[i].node).is_ok())
                        .collect(),
                )
            }
        };
        let families = match family {
            None => None,
            Some(list) => Some(
                items("family", list)?
                    .into_iter()
                    .map(String::from)
                    .collect(),
            ),
        };
        Ok(Selection { ports, families })
    }

    /// The selected ports among `n`, ascending.
    pub fn ports(&self, n: usize) -> Box<dyn Iterator<Item = usize> + '_> {
        match &self.ports {
            None => Box::new(0..n),
            Some(v) => Box::new(v.iter().copied().filter(move |&i| i < n)),
        }
    }

    /// `(port, value)` of the selected ports in `col`, ascending (every port: one pass).
    pub fn values<'a>(&'a self, col: &'a Column) -> Box<dyn Iterator<Item = (usize, u64)> + 'a> {
        match &self.ports {
            None => Box::new(col.iter().enumerate()),
            Some(v) => Box::new(
                v.iter()
                    .copied()
                    .filter(|&i| i < col.len())
                    .map(|i| (i, col.get(i))),
            ),
        }
    }

    /// Whether port `i` is selected.
    pub fn has_port(&self, i: usize) -> bool {
        self.ports
            .as_ref()
            .is_none_or(|v| v.binary_search(&i).is_ok())
    }

    /// Whether family `name` is selected.
    pub fn family(&self, name: &str) -> bool {
        self.families
            .as_ref()
            .is_none_or(|v| v.iter().any(|p| name.starts_with(p.as_str())))
    }
}

/// What a scrape encodes.
#[derive(Debug)]
pub struct Exposition {
    hub: Arc<Hub>,
    labels: PortLabels,
    health: Arc<DaemonHealth>,
    /// Factor on the per-port traffic counters: wall-clock seconds per second of the
    /// source's clock (`1 / --ratio` for the simulator, 1 otherwise), so that `rate()`
    /// over Prometheus' wall-clock time gives the same per-second figures as the stream,
    /// whose snapshots carry the source's own time.
    rate_scale: f64,
}

/// Encodes a family of one counter per selected port from a column (skipped when
/// absent or not selected).
fn port_counter(
    enc: &mut DescriptorEncoder<'_>,
    (labels, sel): (&PortLabels, &Selection),
    name: &str,
    help: &str,
    col: Option<&Column>,
    scale: f64,
) -> std::fmt::Result {
    let Some(col) = col else { return Ok(()) };
    if !sel.family(name) {
        return Ok(());
    }
    let mut m = enc.encode_descriptor(name, help, None, MetricType::Counter)?;
    for (i, v) in sel.values(col) {
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
    pub fn new(hub: Arc<Hub>, health: Arc<DaemonHealth>, rate_scale: f64) -> Self {
        let labels = PortLabels::new(hub.info());
        Exposition {
            hub,
            labels,
            health,
            rate_scale,
        }
    }

    fn ports(
        &self,
        s: &Snapshot,
        sel: &Selection,
        enc: &mut DescriptorEncoder<'_>,
    ) -> std::fmt::Result {
        let n = self.labels.port.len();
        let l = &self.labels;
        let c = &s.counters;
        if sel.family("fabric_port_up") {
            let mut m = enc.encode_descriptor(
                "fabric_port_up",
                "1 when the port's oper state is up, 0 when down",
                None,
                MetricType::Gauge,
            )?;
            let down = &s.gauges.oper_down;
            for i in sel.ports(n) {
                let is_down = down.binary_search(&(i as u32)).is_ok();
                ConstGauge::new(i64::from(!is_down)).encode(m.encode_family(&l.of(i))?)?;
            }
        }
        if sel.family("fabric_port_carrier_changes") {
            self.health.encode_carrier_changes(enc, (l, sel))?;
        }
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
            port_counter(enc, (l, sel), name, help, col, self.rate_scale)?;
        }
        if sel.family("fabric_port_speed_bytes") {
            let mut m = enc.encode_descriptor(
                "fabric_port_speed_bytes",
                "Line rate in bytes per second",
                None,
                MetricType::Gauge,
            )?;
            let ports = &self.hub.info().ports;
            for i in sel.ports(n) {
                let p = &ports[i];
                let bps = s
                    .gauges
                    .speed_bps
                    .as_ref()
                    .map_or(p.speed_bps, |c| c.get(i));
                ConstGauge::new(bps / 8).encode(m.encode_family(&l.of(i))?)?;
            }
        }
        if !s.gauges.queue_bytes.is_empty() && sel.family("fabric_queue_occupancy_bytes") {
            let mut m = enc.encode_descriptor(
                "fabric_queue_occupancy_bytes",
                "Bytes queued at this egress, per queue (PFC priority)",
                None,
                MetricType::Gauge,
            )?;
            for (q, col) in &s.gauges.queue_bytes {
                let q = q.to_string();
                for (i, v) in sel.values(col) {
                    let [a, b] = l.of(i);
                    ConstGauge::new(v).encode(m.encode_family(&[a, b, ("queue", &q)])?)?;
                }
            }
        }
        port_counter(
            enc,
            (l, sel),
            "fabric_queue_ecn_marked_packets",
            "Packets ECN-marked at this egress (all queues)",
            c.ecn_marks.as_ref(),
            self.rate_scale,
        )?;
        self.pfc(s, sel, enc)?;
        port_counter(
            enc,
            (l, sel),
            "fabric_pfc_paused_seconds",
            "Seconds this egress spent paused by PFC (summed over priorities)",
            c.paused_ns.as_ref(),
            1e-9 * self.rate_scale,
        )?;
        self.link_info(sel, enc)
    }

    fn pfc(
        &self,
        s: &Snapshot,
        sel: &Selection,
        enc: &mut DescriptorEncoder<'_>,
    ) -> std::fmt::Result {
        let c = &s.counters;
        if (c.pfc_tx.is_empty() && c.pfc_rx.is_empty()) || !sel.family("fabric_pfc_pause_frames") {
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
                for (i, v) in sel.values(col) {
                    let [a, b] = self.labels.of(i);
                    let set = [a, b, ("direction", dir), ("priority", &p)];
                    let fam = m.encode_family(&set)?;
                    if self.rate_scale == 1.0 {
                        ConstCounter::new(v).encode(fam)?;
                    } else {
                        ConstCounter::new(v as f64 * self.rate_scale).encode(fam)?;
                    }
                }
            }
        }
        Ok(())
    }

    fn link_info(&self, sel: &Selection, enc: &mut DescriptorEncoder<'_>) -> std::fmt::Result {
        if !sel.family("fabric_link_info") {
            return Ok(());
        }
        let mut m = enc.encode_descriptor(
            "fabric_link_info",
            "The cable on each port: its peer switch and port and the link id",
            None,
            MetricType::Gauge,
        )?;
        for i in sel.ports(self.labels.port.len()) {
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

    fn daemon(&self, sel: &Selection, enc: &mut DescriptorEncoder<'_>) -> std::fmt::Result {
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
                "fabric_daemon_stream_clients_refused",
                "Stream requests refused (503) because --max-streams clients were connected",
                k.stream_refused.get(),
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
        for (name, help, v) in counters.into_iter().filter(|c| sel.family(c.0)) {
            let m = enc.encode_descriptor(name, help, None, MetricType::Counter)?;
            ConstCounter::new(v).encode(m)?;
        }
        let mut counts = vec![(
            "fabric_daemon_stream_clients_connected",
            "Stream clients connected now",
            self.hub.stream_clients() as i64,
        )];
        let mut seconds = Vec::new();
        if let Some(latest) = self.hub.latest() {
            counts.push((
                "fabric_daemon_snapshot_seq",
                "Sequence number of the latest snapshot",
                latest.snapshot.seq as i64,
            ));
            seconds.push((
                "fabric_daemon_sample_seconds",
                "Time the source took to produce the latest snapshot (simulator: stepping and reading it)",
                latest.sample_ns,
            ));
            seconds.push((
                "fabric_daemon_publish_seconds",
                "Time from the latest snapshot to its publication (health checks, JSON, history)",
                latest.publish_ns,
            ));
            if let Some(ns) = latest.read_ns {
                seconds.push((
                    "fabric_daemon_read_seconds",
                    "Within the sample time, the time spent reading the state into the snapshot",
                    ns,
                ));
            }
        }
        for (name, help, v) in counts.into_iter().filter(|g| sel.family(g.0)) {
            let m = enc.encode_descriptor(name, help, None, MetricType::Gauge)?;
            ConstGauge::new(v).encode(m)?;
        }
        for (name, help, ns) in seconds.into_iter().filter(|g| sel.family(g.0)) {
            let m = enc.encode_descriptor(name, help, None, MetricType::Gauge)?;
            ConstGauge::new(ns as f64 * 1e-9).encode(m)?;
        }
        Ok(())
    }
}

/// One scrape: the exposition and what it asks for.
#[derive(Debug)]
struct Scrape {
    exp: Arc<Exposition>,
    sel: Selection,
}

impl Collector for Scrape {
    fn encode(&self, mut enc: DescriptorEncoder<'_>) -> std::fmt::Result {
        let (exp, sel) = (&self.exp, &self.sel);
        if let Some(latest) = exp.hub.latest() {
            exp.ports(&latest.snapshot, sel, &mut enc)?;
        }
        if let Some(t) = exp.hub.tenants() {
            super::tenants::encode(t, sel, &mut enc)?;
        }
        exp.health.encode(&mut enc, (&exp.labels, sel))?;
        super::drain::encode(&exp.hub, &exp.health, sel, &mut enc)?;
        exp.daemon(sel, &mut enc)?;
        super::process::encode(sel, &mut enc)
    }
}

/// A registry holding one scrape of `exp` (`sel`: what it asks for).
pub fn registry(exp: Arc<Exposition>, sel: Selection) -> Registry {
    let mut r = Registry::default();
    r.register_collector(Box::new(Scrape { exp, sel }));
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
    fn a_selection_keeps_the_named_nodes_ports_and_family_prefixes() {
        let f = topo::generators::fat_tree(4, topo::Rate::gbps(100)).unwrap();
        let info = FabricInfo::from_topo(&f, 8);
        let all = Selection::parse(&info, None, None).unwrap();
        assert_eq!(all.ports(96).count(), 96);
        assert!(all.family("anything"));
        let sel =
            Selection::parse(&info, Some("pod0-leaf0,core0-0"), Some("fabric_port_")).unwrap();
        let ports: Vec<usize> = sel.ports(96).collect();
        assert_eq!(ports.len(), 8);
        for &i in &ports {
            let n = &info.nodes[info.ports[i].node as usize].name;
            assert!(n == "pod0-leaf0" || n == "core0-0", "{n}");
            assert!(sel.has_port(i));
        }
        let col = Column::from((0..96).collect::<Vec<u64>>());
        let got: Vec<(usize, u64)> = sel.values(&col).collect();
        assert_eq!(
            got,
            ports.iter().map(|&i| (i, i as u64)).collect::<Vec<_>>()
        );
        assert!(sel.family("fabric_port_up") && !sel.family("fabric_link_info"));
        let e = Selection::parse(&info, Some("pod0-leaf0,nope"), None).unwrap_err();
        assert_eq!(e, "switch: no node named \"nope\"");
        assert!(
            Selection::parse(&info, None, Some(","))
                .unwrap_err()
                .contains("family")
        );
        let many = vec!["x"; MAX_FILTER_ITEMS + 1].join(",");
        assert!(
            Selection::parse(&info, None, Some(&many))
                .unwrap_err()
                .contains("at most")
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
