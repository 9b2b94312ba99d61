//! `fabric serve --observe`: a fabric the daemon did not build and never writes to — a
//! BGP-routed Ethernet fabric (FRR or SONiC) already scraped by Prometheus. It reads:
//!
//! - **the design** from `--fabric`/`--preset` (the switches' names are the design's);
//! - **counters** from Prometheus's HTTP API ([`super::prom_query`]), in
//!   node_exporter's own series names: `node_network_{transmit,receive}_{bytes,packets,
//!   drop,errs}_total{device}` and `node_network_carrier{device}`, each series carrying
//!   the switch's name in label `--switch-label` (default `switch`) and the port in
//!   `device`, named as `--port-names` says (`p<port>` in the testbed, `swp<port+1>` on
//!   a Linux switch, `Ethernet<4·port>` on SONiC; docs/observe.md maps a SONiC
//!   exporter's names onto these with recording rules). A port whose carrier is 0 is
//!   down; a link with a down end is failed, and the tables are those of the fabric
//!   with its failed links (topo's incremental re-route). Each counter comes with its
//!   scrape time ([`counters_query`]); a snapshot is made at one instant every series
//!   has been scraped up to ([`super::scrapes`]), none when a read brought no new
//!   scrape, and every counter counts from the daemon's first read ([`super::baseline`]).
//! - **neighbours** from lldpd ([`super::lldp_neighbours`]) in `--lldp-dir`, compared
//!   with the design ([`veth::routed::compare_neighbours`]: missing, unexpected,
//!   miswired) on switch–switch ports;
//! - **FIBs** read back through netlink in each switch's namespace (`--fib-netns
//!   PREFIX`: `PREFIX` + `s<i>`) and checked against the tables of the live topology
//!   ([`veth::frr::fib`]: missing ECMP members, extra and more-specific routes, black
//!   holes, next hops over failed links).
//!
//! It has no [`super::source::Actuator`]: [`Source::actuator`] is `None`, so the
//! collector answers every request to fail or restore a link or repair a route with
//! [`super::source::OBSERVE_ONLY`]. A Prometheus (or lldpd) that is down, slow or
//! answers garbage makes the sample (or check) an error the collector counts and logs;
//! the daemon keeps serving the last good values.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use fabric_api::{Column, Detector, Event, EventKind, FabricInfo, Snapshot, Timestamp};
use topo::addressing::AddressPlan;
use topo::{Fabric, LinkId, NodeId, Routes};
use veth::frr::fib::FibRoute;
use veth::netlink::Nl;
use veth::netns::Netns;
use veth::routed::{MismatchKind, NeighbourReport, ifname, node_role};

use super::baseline::Baseline;
use super::prom_query::{Credentials, Prometheus, Series};
use super::scrapes::{Key, Read, Scrape, Scrapes};
use super::source::{Sample, Source, SourceMap};
use super::{lldp_neighbours, log};

/// How switch ports are named in the exporters' `device` label and in LLDP.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum PortNames {
    /// `p<port>` (the project's testbeds).
    Testbed,
    /// `swp<port+1>` (Linux whitebox switches, the `frr-bgp` export).
    Linux,
    /// `Ethernet<4·port>` (SONiC).
    Sonic,
}

impl PortNames {
    /// The name of `port` (the inverse of [`Self::port`]).
    #[cfg(test)]
    pub fn name(self, port: topo::Port) -> String {
        match self {
            PortNames::Testbed => ifname(port),
            PortNames::Linux => topo::export::routes::LinuxIf(port).to_string(),
            PortNames::Sonic => topo::export::routes::SonicIf(port).to_string(),
        }
    }

    /// The port a name stands for.
    pub fn port(self, name: &str) -> Option<topo::Port> {
        let num = |p: &str| p.parse::<u32>().ok();
        let p = match self {
            PortNames::Testbed => num(name.strip_prefix('p')?)?,
            PortNames::Linux => num(name.strip_prefix("swp")?)?.checked_sub(1)?,
            PortNames::Sonic => {
                let n = num(name.strip_prefix("Ethernet")?)?;
                if n % 4 != 0 {
                    return None;
                }
                n / 4
            }
        };
        topo::Port::try_from(p).ok()
    }
}

/// Where `--fib-netns` reads each switch's FIB from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum FibFrom {
    /// The kernel's routes, dumped through netlink in the switch's namespace.
    Netlink,
    /// FRR's own view: `vtysh -N <namespace> -c 'show ip[v6] route json'` (the FRR
    /// instance named after the namespace), its installed routes and FIB next hops.
    Vtysh,
}

/// What `--observe` reads, from the command line.
#[derive(Debug, Clone, PartialEq)]
pub struct ObserveSpec {
    /// Fabric spec file or preset name (the design).
    pub fabric: String,
    /// Prometheus's URL (`http://HOST:PORT[/prefix]`).
    pub prometheus: String,
    /// File with Prometheus credentials (`bearer TOKEN` or `basic USER:PASSWORD`).
    pub credentials: Option<PathBuf>,
    /// Label naming the switch in the exporters' series.
    pub switch_label: String,
    /// Port naming in `device` labels and LLDP port ids.
    pub port_names: PortNames,
    /// Directory with each switch's lldpd socket or lldpcli JSON.
    pub lldp_dir: Option<PathBuf>,
    /// Namespace prefix of the switches whose FIBs are read through netlink.
    pub fib_netns: Option<String>,
    /// Where each switch's FIB is read from.
    pub fib_from: FibFrom,
    /// Timeout of one Prometheus request.
    pub timeout: Duration,
}

/// The node_exporter series one query reads.
const SERIES: &str =
    "node_network_(transmit|receive)_(bytes|packets|drop|errs)_total|node_network_carrier";

/// The cumulative counters read, by index (a [`Key`]'s second part): the
/// first four are the columns of the same names, the rest are summed as the port's drops.
const COUNTERS: [&str; 8] = [
    "node_network_transmit_bytes_total",
    "node_network_receive_bytes_total",
    "node_network_transmit_packets_total",
    "node_network_receive_packets_total",
    "node_network_transmit_drop_total",
    "node_network_receive_drop_total",
    "node_network_transmit_errs_total",
    "node_network_receive_errs_total",
];

/// The label that carries, on a scrape-time series of the query, the counter it times.
const SCRAPED: &str = "fabric_scraped";

/// The one instant query a sample makes: every series' value, and beside each counter
/// its scrape time — `timestamp()` of the plain selector is the time of the sample it
/// selects (the scrape's), where the answer's own `[time, value]` is the evaluation
/// time. `timestamp()` drops the metric's name, so each name is selected apart and put
/// back in label [`SCRAPED`] (which also keeps these series apart from the values for
/// `or`). One query, so values and times come from one evaluation.
fn counters_query(switch_label: &str) -> String {
    let mut q = format!("{{__name__=~\"{SERIES}\",{switch_label}!=\"\"}}");
    for name in COUNTERS {
        q += &format!(
            " or label_replace(timestamp({name}{{{switch_label}!=\"\"}}), \"{SCRAPED}\", \"{name}\", \"\", \"\")"
        );
    }
    q
}

/// One switch's FIB reader.
struct FibReader {
    switch: NodeId,
    how: ReadFib,
}

/// How one switch's FIB is read (both only dump).
enum ReadFib {
    /// Netlink route dumps; interface index → port.
    Netlink(Nl, HashMap<u32, topo::Port>),
    /// `vtysh -N <namespace>` in that namespace.
    Vtysh(Netns),
}

/// The observe-only source.
pub struct ObserveSource {
    fabric: Arc<Fabric>,
    info: FabricInfo,
    plan: AddressPlan,
    prom: Prometheus,
    switch_label: String,
    port_names: PortNames,
    lldp_dir: Option<PathBuf>,
    fibs: Vec<FibReader>,
    /// Tables of the live topology (the design minus `failed`).
    routes: Routes,
    failed: BTreeSet<LinkId>,
    /// Ports seen down at the last sample.
    down: BTreeSet<(NodeId, topo::Port)>,
    /// Every counter series' last two scrapes, aligned to one instant per snapshot.
    scrapes: Scrapes,
    /// Every counter series counted from the daemon's first read.
    baseline: Baseline<Key>,
    /// The last snapshot's time, ns.
    last_ns: u64,
    errors: u64,
}

impl std::fmt::Debug for ObserveSource {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ObserveSource")
            .field("fabric", &self.fabric.name())
            .field("prometheus", &self.prom.addr())
            .field("failed", &self.failed)
            .finish()
    }
}

impl ObserveSource {
    /// Loads the design and opens the readers (nothing is written anywhere).
    pub fn open(spec: &ObserveSpec, fabric: Fabric) -> anyhow::Result<Self> {
        let creds = match &spec.credentials {
            Some(p) => Some(Credentials::from_file(p).map_err(anyhow::Error::msg)?),
            None => None,
        };
        let prom =
            Prometheus::new(&spec.prometheus, creds, spec.timeout).map_err(anyhow::Error::msg)?;
        let plan = AddressPlan::new(&fabric)
            .map_err(|e| anyhow::anyhow!("--fabric {}: addressing: {e}", fabric.name()))?;
        let mut fibs = Vec::new();
        if let Some(prefix) = &spec.fib_netns {
            for s in fabric.switches() {
                let ns = Netns::from_name(&format!("{prefix}{}", node_role(&fabric, s)));
                let how = match spec.fib_from {
                    FibFrom::Netlink => {
                        let nl = Nl::open(&ns).map_err(|e| {
                            anyhow::anyhow!("--fib-netns {prefix}: {}: {e}", ns.name())
                        })?;
                        let ports = veth::frr::fib::port_map(&fabric, s, &nl).map_err(|e| {
                            anyhow::anyhow!("--fib-netns {prefix}: {}: {e}", ns.name())
                        })?;
                        ReadFib::Netlink(nl, ports)
                    }
                    FibFrom::Vtysh => ReadFib::Vtysh(ns),
                };
                fibs.push(FibReader { switch: s, how });
            }
        }
        let info = FabricInfo::from_topo(&fabric, 8);
        let routes = Routes::compute(&fabric);
        log::info(&format!(
            "observing {} (read-only): counters from Prometheus {}, {}, {}",
            fabric.name(),
            prom.addr(),
            spec.lldp_dir
                .as_ref()
                .map_or("no LLDP".to_string(), |d| format!(
                    "LLDP from {}",
                    d.display()
                )),
            spec.fib_netns
                .as_ref()
                .map_or("no FIB read-back".to_string(), |p| format!(
                    "FIBs from namespaces {p}* ({})",
                    match spec.fib_from {
                        FibFrom::Netlink => "netlink",
                        FibFrom::Vtysh => "vtysh",
                    }
                )),
        ));
        Ok(ObserveSource {
            fabric: Arc::new(fabric),
            info,
            plan,
            prom,
            switch_label: spec.switch_label.clone(),
            port_names: spec.port_names,
            lldp_dir: spec.lldp_dir.clone(),
            fibs,
            routes,
            failed: BTreeSet::new(),
            down: BTreeSet::new(),
            scrapes: Scrapes::default(),
            baseline: Baseline::default(),
            last_ns: 0,
            errors: 0,
        })
    }

    /// `(switch, port)` of a series, from its labels.
    fn port_of(
        &self,
        labels: &BTreeMap<String, String>,
        names: &HashMap<&str, NodeId>,
    ) -> Option<(NodeId, topo::Port)> {
        let n = *names.get(labels.get(&self.switch_label)?.as_str())?;
        let p = self.port_names.port(labels.get("device")?)?;
        (usize::from(p) < self.fabric.degree(n)).then_some((n, p))
    }

    /// The snapshot of `series` (the answer to [`counters_query`]) at the instant every
    /// counter has been scraped up to ([`super::scrapes`]), its counters counted from the
    /// daemon's first read ([`Baseline`]); `None` when the read brought no new scrape.
    /// Updates the down ports either way.
    fn snapshot(&mut self, series: &[Series], seq: u64) -> Option<Snapshot> {
        let f = self.fabric.clone();
        let names = f.name_index();
        let mut down = BTreeSet::new();
        let mut values: HashMap<Key, f64> = HashMap::new();
        let mut scraped: HashMap<Key, i64> = HashMap::new();
        for (labels, v) in series {
            let Some((node, port)) = self.port_of(labels, &names) else {
                continue;
            };
            let i = FabricInfo::topo_port_index(&f, node, port);
            if let Some(name) = labels.get(SCRAPED) {
                if let Some(c) = COUNTERS.iter().position(|n| n == name)
                    && v.is_finite()
                {
                    scraped.insert((i, c as u8), (v * 1e3).round() as i64);
                }
                continue;
            }
            let name = labels.get("__name__").map(String::as_str).unwrap_or("");
            if name == "node_network_carrier" {
                if *v == 0.0 {
                    down.insert((node, port));
                }
                continue;
            }
            // Counters are floats in Prometheus; non-finite or negative values are garbage.
            if let Some(c) = COUNTERS.iter().position(|n| *n == name)
                && v.is_finite()
                && *v >= 0.0
            {
                values.insert((i, c as u8), *v);
            }
        }
        self.down = down;
        let latest = values.into_iter().filter_map(|(k, v)| {
            let t_ms = *scraped.get(&k)?;
            Some((k, Scrape { t_ms, v }))
        });
        let (t_ns, at) = match self.scrapes.read(latest) {
            Read::NoNewData => return None,
            Read::Empty => (super::collector::now_ns(), Vec::new()),
            Read::At { t_ms, values } => ((t_ms.max(0) as u64).saturating_mul(1_000_000), values),
        };
        for (k, v) in at {
            self.baseline.count(k, v.round() as u64);
        }
        // Never back in time (a snapshot stamped by the daemon's clock, then Prometheus's).
        let t_ns = t_ns.max(self.last_ns + 1);
        self.last_ns = t_ns;
        let source = fabric_api::Source {
            kind: fabric_api::SourceKind::LinuxHost,
            name: format!("{} (observed)", f.name()),
        };
        let mut s = Snapshot::new(seq, Timestamp::wall_ns(t_ns), source);
        let n = 2 * f.num_links();
        let mut cols: [Option<Vec<u64>>; 5] = Default::default();
        for ((i, c), count) in self.baseline.counts() {
            let col = cols[usize::from(c).min(4)].get_or_insert_with(|| vec![0; n]);
            if let Some(x) = col.get_mut(i as usize) {
                *x = x.saturating_add(count);
            }
        }
        let [tx_bytes, rx_bytes, tx_pkts, rx_pkts, drops] = cols.map(|c| c.map(Column::from));
        s.counters.tx_bytes = tx_bytes;
        s.counters.rx_bytes = rx_bytes;
        s.counters.tx_pkts = tx_pkts;
        s.counters.rx_pkts = rx_pkts;
        s.counters.drops_kernel = drops;
        s.gauges.oper_down = self
            .down
            .iter()
            .map(|&(node, p)| FabricInfo::topo_port_index(&f, node, p))
            .collect();
        s.gauges.oper_down.sort_unstable();
        s.sum_ports_into_totals();
        Some(s)
    }

    /// Follows the failed links the down ports imply: events for the changes, and the
    /// tables of the live topology.
    fn follow_links(&mut self, seq: u64, time: Timestamp) -> Vec<Event> {
        let f = self.fabric.clone();
        let failed: BTreeSet<LinkId> = self.down.iter().map(|&(n, p)| f.port_link(n, p)).collect();
        if failed == self.failed {
            return Vec::new();
        }
        let mut ev = Vec::new();
        for &l in failed.difference(&self.failed) {
            ev.push(Event {
                seq,
                time,
                what: EventKind::LinkDown {
                    link: l,
                    detected_by: Detector::Counters,
                    detect_ns: None,
                },
            });
        }
        for &l in self.failed.difference(&failed) {
            ev.push(Event {
                seq,
                time,
                what: EventKind::LinkUp {
                    link: l,
                    detected_by: Detector::Counters,
                },
            });
        }
        let mut r = Routes::compute(&f);
        r.fail_links(&f, &failed.iter().copied().collect::<Vec<_>>());
        self.routes = r;
        log::info(&format!(
            "observed failed links: {:?}",
            failed.iter().map(|l| l.0).collect::<Vec<_>>()
        ));
        self.failed = failed;
        ev
    }
}

impl Source for ObserveSource {
    fn map(&self) -> SourceMap {
        SourceMap::new(self.info.clone(), Some(self.fabric.clone()))
    }

    fn sample(&mut self, _elapsed: Duration, seq: u64) -> Result<Sample, String> {
        let t = Instant::now();
        let series = self
            .prom
            .query(&counters_query(&self.switch_label))
            .map_err(|e| {
                self.errors += 1;
                format!("counters are stale: {e}")
            })?;
        let snapshot = self.snapshot(&series, seq);
        // A link's events carry the time of the scrape that showed them (the collector
        // gives them the next snapshot's time when this read made none).
        let time = snapshot
            .as_ref()
            .map_or(Timestamp::wall_ns(self.last_ns), |s| s.time);
        let events = self.follow_links(seq, time);
        Ok(Sample {
            snapshot,
            events,
            read_ns: Some(t.elapsed().as_nanos() as u64),
        })
    }

    fn reports_reroutes(&self) -> bool {
        // The fabric's own control plane reroutes; the daemon only reports link changes.
        true
    }

    fn take_errors(&mut self) -> u64 {
        std::mem::take(&mut self.errors)
    }

    fn drift(&mut self) -> Option<Result<veth::routed::Drift, String>> {
        if self.fibs.is_empty() {
            return None;
        }
        let fibs = &self.fibs;
        let names = self.port_names;
        Some(
            veth::frr::fib::check_with(&self.fabric, &self.plan, &self.routes, fibs.len(), |i| {
                let r = &fibs[i];
                let (v4, v6) = match &r.how {
                    ReadFib::Netlink(nl, ports) => (
                        FibRoute::from_dump(&nl.routes()?, ports),
                        FibRoute::from_dump(&nl.routes6()?, ports),
                    ),
                    ReadFib::Vtysh(ns) => {
                        veth::frr::vtysh_fib::read(ns, ns.name(), true, |n| names.port(n))?
                    }
                };
                Ok((r.switch, ports_only(v4), ports_only(v6)))
            })
            .map_err(|e| e.to_string()),
        )
    }

    fn check_topology(&mut self) -> Option<Result<NeighbourReport, String>> {
        let dir = self.lldp_dir.clone()?;
        Some(self.check_cabling(&dir))
    }
}

impl ObserveSource {
    /// Both ends of every link with an end seen down.
    fn failed_ends(&self) -> BTreeSet<(NodeId, topo::Port)> {
        let f = &self.fabric;
        self.down
            .iter()
            .flat_map(|&(n, p)| {
                let l = f.link(f.port_link(n, p));
                [(l.a, l.a_port), (l.b, l.b_port)]
            })
            .collect()
    }

    /// The cabling check on switch–switch ports from lldpd's neighbours.
    fn check_cabling(&self, dir: &std::path::Path) -> Result<NeighbourReport, String> {
        let t = Instant::now();
        let f = &self.fabric;
        let mut heard = BTreeMap::new();
        // Both ends of a failed link are a link down, not a cabling fault: an end set
        // down by hand has no carrier series at all (node_exporter reads no carrier of
        // an interface that is administratively down), only its peer reads carrier 0.
        let down = self.failed_ends();
        let mut skip: BTreeSet<(NodeId, topo::Port)> = down.clone();
        let mut r = NeighbourReport::default();
        for n in (0..f.num_nodes() as u32).map(NodeId) {
            let ports = 0..f.degree(n) as topo::Port;
            let watched = if f.is_host(n) {
                None
            } else {
                lldp_neighbours::read(dir, f.node_name(n))?
            };
            let Some(neigh) = watched else {
                // Hosts, and switches without an LLDP source: not checked.
                skip.extend(ports.map(|p| (n, p)));
                continue;
            };
            for p in ports {
                if f.is_host(f.peer(n, p)) {
                    // Hosts run no LLDP agent here: their ports are not checked.
                    skip.insert((n, p));
                    continue;
                }
                if down.contains(&(n, p)) {
                    r.down += 1;
                    continue;
                }
                r.ports += 1;
            }
            for nb in neigh {
                let Some(p) = self.port_names.port(&nb.local) else {
                    continue;
                };
                if usize::from(p) >= f.degree(n) {
                    continue;
                }
                // In the design's port naming, so that compare_neighbours reads it.
                let port = self
                    .port_names
                    .port(&nb.port)
                    .map_or(nb.port.clone(), ifname);
                heard.insert((n, p), (nb.chassis, port));
            }
        }
        r.heard = heard.keys().filter(|k| !skip.contains(k)).count();
        r.mismatches = veth::routed::compare_neighbours(f, &heard, &skip)
            .into_iter()
            // The leaf rule is only meaningful when every leaf uplink was checked.
            .filter(|m| m.kind != MismatchKind::LeafMissesSpine || skip.is_empty())
            .collect();
        r.took_s = t.elapsed().as_secs_f64();
        Ok(r)
    }
}

/// A FIB's routes compared by the ports they leave through, not by their shares: BGP
/// weights the survivors of a failure by link bandwidth (FRR's 33:66 after an
/// aggregation–core link fails) where the daemon's tables split equally, so comparing
/// shares would report every such route as drift on a fabric that routes correctly.
fn ports_only(mut routes: Vec<FibRoute>) -> Vec<FibRoute> {
    for r in &mut routes {
        for (_, w) in &mut r.ports {
            *w = 1;
        }
    }
    routes
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn port_names_round_trip() {
        for names in [PortNames::Testbed, PortNames::Linux, PortNames::Sonic] {
            for p in [0u16, 1, 7, 63] {
                assert_eq!(names.port(&names.name(p)), Some(p), "{names:?} {p}");
            }
        }
        assert_eq!(PortNames::Sonic.port("Ethernet2"), None);
        assert_eq!(PortNames::Linux.port("swp0"), None);
        assert_eq!(PortNames::Testbed.port("mgmt0"), None);
    }

    fn source() -> ObserveSource {
        let f = topo::generators::fat_tree(4, topo::Rate::gbps(100)).unwrap();
        let spec = ObserveSpec {
            fabric: "fat-tree-k4".into(),
            prometheus: "http://127.0.0.1:1".into(),
            credentials: None,
            switch_label: "switch".into(),
            port_names: PortNames::Testbed,
            lldp_dir: None,
            fib_netns: None,
            fib_from: FibFrom::Netlink,
            timeout: Duration::from_millis(200),
        };
        ObserveSource::open(&spec, f).unwrap()
    }

    fn lab(name: &str, sw: &str, dev: &str) -> BTreeMap<String, String> {
        [("__name__", name), ("switch", sw), ("device", dev)]
            .into_iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    /// `series` as the answer to [`counters_query`] gives them, every counter scraped at
    /// `t_ms`: each with its scrape-time series beside it.
    fn answer(series: &[(BTreeMap<String, String>, f64)], t_ms: i64) -> Vec<Series> {
        let mut out = series.to_vec();
        for (labels, _) in series {
            let mut l = labels.clone();
            let name = l.remove("__name__").unwrap();
            if COUNTERS.contains(&name.as_str()) {
                l.insert(SCRAPED.into(), name);
                out.push((l, t_ms as f64 / 1e3));
            }
        }
        out
    }

    #[test]
    fn series_become_counters_and_a_zero_carrier_a_failed_link() {
        let mut s = source();
        let at = |tx: f64| {
            vec![
                (
                    lab("node_network_transmit_bytes_total", "pod0-leaf0", "p2"),
                    tx,
                ),
                (lab("node_network_carrier", "pod0-leaf0", "p2"), 0.0),
                (lab("node_network_carrier", "pod0-leaf0", "p3"), 1.0),
                // Unknown switch, unknown device, garbage value: ignored.
                (lab("node_network_transmit_bytes_total", "nope", "p2"), 5.0),
                (
                    lab("node_network_transmit_bytes_total", "pod0-leaf0", "mgmt0"),
                    5.0,
                ),
                (
                    lab("node_network_receive_bytes_total", "pod0-leaf0", "p3"),
                    f64::NAN,
                ),
            ]
        };
        let first = s.snapshot(&answer(&at(1e6), 1_000), 0).unwrap();
        assert_eq!(first.time.ns, 1_000_000_000, "the scrape's time");
        let snap = s.snapshot(&answer(&at(1e6 + 1500.0), 2_000), 1).unwrap();
        assert_eq!(snap.time.ns, 2_000_000_000);
        let f = s.fabric.clone();
        let leaf = f.name_index()["pod0-leaf0"];
        let i = FabricInfo::topo_port_index(&f, leaf, 2) as usize;
        let tx = snap.counters.tx_bytes.as_ref().unwrap();
        assert_eq!(tx.sum(), 1500, "counted from the daemon's first read");
        assert_eq!(tx.get(i), 1500);
        assert!(snap.counters.rx_bytes.is_none(), "only garbage was read");
        assert_eq!(snap.gauges.oper_down, vec![i as u32]);
        let ev = s.follow_links(1, snap.time);
        assert_eq!(ev.len(), 1);
        assert!(matches!(ev[0].what, EventKind::LinkDown { .. }));
        assert_eq!(ev[0].time, snap.time);
        assert_eq!(s.routes.failed_links().count(), 1);
        // Observe-only: no actuator.
        assert!(s.actuator().is_none());
    }

    /// The same scrape read again (the daemon's interval shorter than the scrape
    /// interval) makes no snapshot: it used to make one whose rates were 0.
    #[test]
    fn a_read_without_a_new_scrape_makes_no_snapshot() {
        let mut s = source();
        let tx = |v: f64| {
            vec![(
                lab("node_network_transmit_bytes_total", "pod0-leaf0", "p2"),
                v,
            )]
        };
        assert!(s.snapshot(&answer(&tx(10.0), 1_000), 0).is_some());
        assert!(s.snapshot(&answer(&tx(10.0), 1_000), 1).is_none());
        assert!(s.snapshot(&answer(&tx(20.0), 2_000), 1).is_some());
        // A value without its scrape time is not read.
        assert!(s.snapshot(&tx(30.0), 2).is_none());
    }

    /// node_exporter's counters run from each switch's boot: 22 frames dropped before
    /// lldpd started made a healthy observed fabric read "LOSS DETECTED (22 total)", and
    /// only drops were counted from the daemon's start. Every counter column now is,
    /// with one rule; a counter that went back (the exporter restarted) goes on from its
    /// count.
    #[test]
    fn every_counter_column_counts_from_the_daemons_first_read() {
        let mut s = source();
        let f = s.fabric.clone();
        let leaf = f.name_index()["pod0-leaf0"];
        let i = FabricInfo::topo_port_index(&f, leaf, 2) as usize;
        let mut t_ms = 0;
        let mut read = |lifetime: f64| {
            let series: Vec<_> = COUNTERS
                .iter()
                .enumerate()
                .map(|(c, name)| (lab(name, "pod0-leaf0", "p2"), lifetime + c as f64))
                .collect();
            t_ms += 1000;
            let snap = s.snapshot(&answer(&series, t_ms), 0).unwrap();
            let c = &snap.counters;
            [
                &c.tx_bytes,
                &c.rx_bytes,
                &c.tx_pkts,
                &c.rx_pkts,
                &c.drops_kernel,
            ]
            .map(|col| col.as_ref().unwrap().get(i))
        };
        assert_eq!(read(20.0), [0; 5], "lifetime counts are not seen");
        assert_eq!(read(20.0), [0; 5]);
        // Drops sum four series.
        assert_eq!(read(25.0), [5, 5, 5, 5, 20]);
        // The exporter restarted: its counters start again, from 3 + c.
        let after = read(3.0);
        assert_eq!(after[..4], [8, 9, 10, 11], "each goes on from its count");
        assert_eq!(after[4], 20 + 7 + 8 + 9 + 10);
    }

    /// `ip link set p2 down` on pod0-agg0 (observed on the FRR testbed): that end has no
    /// carrier series, its peer reads carrier 0, and lldpd on pod0-agg0 hears nothing on
    /// p2. A link down, not a cabling fault: it used to be reported `missing` (and raised
    /// the critical miswiring alarm) at pod0-agg0:p2.
    #[test]
    fn both_ends_of_a_link_down_are_left_out_of_the_cabling_check() {
        let mut s = source();
        let f = s.fabric.clone();
        let agg = f.name_index()["pod0-agg0"];
        let l = f.link(f.port_link(agg, 2));
        let (core, core_port) = if l.a == agg {
            (l.b, l.b_port)
        } else {
            (l.a, l.a_port)
        };
        let dir = std::env::temp_dir().join(format!("fabric-observe-lldp-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        // pod0-agg0's lldpd: every switch neighbour as the design says, except on p2.
        let mut ifs = Vec::new();
        for p in (0..f.degree(agg) as topo::Port).filter(|&p| p != 2) {
            let l = f.link(f.port_link(agg, p));
            let (peer, peer_port) = if l.a == agg {
                (l.b, l.b_port)
            } else {
                (l.a, l.a_port)
            };
            ifs.push(serde_json::json!({ format!("p{p}"): {
                "chassis": { f.node_name(peer): {} },
                "port": { "id": { "value": format!("p{peer_port}") } },
            }}));
        }
        let json = serde_json::json!({ "lldp": { "interface": ifs } });
        std::fs::write(dir.join("pod0-agg0.json"), json.to_string()).unwrap();
        s.lldp_dir = Some(dir.clone());
        let core_name = f.node_name(core).to_string();
        let series = vec![(
            lab("node_network_carrier", &core_name, &format!("p{core_port}")),
            0.0,
        )];
        s.snapshot(&answer(&series, 1_000), 0);
        let r = s.check_topology().unwrap().unwrap();
        std::fs::remove_dir_all(&dir).unwrap();
        assert!(r.mismatches.is_empty(), "{:?}", r.mismatches);
        assert_eq!(r.down, 1, "pod0-agg0:p2 counts as down");
        assert_eq!(r.ports, 3);
    }

    /// After an aggregation–core link fails, FRR weights pod0-leaf0's two uplinks 1:2 by
    /// link bandwidth; the daemon's tables split equally. Same ports: not drift (it
    /// reported 48 `different` routes on the FRR testbed, with the route-drift alarm).
    #[test]
    fn bgp_link_bandwidth_shares_are_not_drift() {
        let s = source();
        let f = s.fabric.clone();
        let agg = f.name_index()["pod0-agg0"];
        let (leaf, remote) = (f.name_index()["pod0-leaf0"], f.name_index()["pod1-leaf0"]);
        let mut routes = Routes::compute(&f);
        routes.fail_links(&f, &[f.port_link(agg, 2)]);
        let wanted = veth::frr::fib::wanted_ports(&routes, leaf, remote).unwrap();
        assert_eq!(wanted.len(), 2);
        let bgp = FibRoute {
            dst: (std::net::Ipv4Addr::new(10, 0, 0, 8).into(), 30),
            ports: vec![(wanted[0].0, 1), (wanted[1].0, 2)],
            hops: Vec::new(),
            protocol: Some(186),
        };
        assert_ne!(bgp.ports, wanted);
        assert_eq!(ports_only(vec![bgp])[0].ports, wanted);
    }

    #[test]
    fn prometheus_down_is_an_error_not_a_panic() {
        let mut s = source();
        let e = s.sample(Duration::ZERO, 0).unwrap_err();
        assert!(e.contains("stale"), "{e}");
        assert_eq!(s.take_errors(), 1);
    }
}
