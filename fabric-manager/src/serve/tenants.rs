//! Per-tenant live views (`fabric serve --tenants FILE`): each host link mapped to the
//! tenant (or shared service) owning its host, and the counters of those links summed
//! per tenant — `GET /api/v1/tenants`, the `fabric_tenant_*` Prometheus families, and
//! the `tenants` of every stream event that concerns a tenant's port, link or host.
//!
//! **Scope: host links only.** A tenant is credited with the links between its hosts and
//! their leaves; links above the leaves are not attributed to anyone, although a tenant
//! whose VRFs keep it on its own leaves might be proven to own some: that proof (over
//! every pair's paths) is not made here.
//!
//! Counted at the *leaf* end of each host link, so that a source that only has switch
//! counters (a fabric observed through Prometheus) gives the same figures as the
//! simulator: `sent` is what the leaf received from the tenant's NICs, `received` what it
//! sent them; PFC frames per priority the leaf sent to the NICs (`pfc_to_hosts`: the
//! tenant's NICs told to pause) and received from them (`pfc_from_hosts`); queue depth
//! per priority of the leaf's egress toward the NICs. Drops are summed over both ends.
//! A counter the source does not measure is `null` (the TUI shows "n/a"), never 0.

use std::collections::BTreeMap;
use std::sync::Mutex;

use fabric_api::{Clock, Column, Event, EventKind, FabricInfo, Snapshot};
use prometheus_client::encoding::{DescriptorEncoder, EncodeMetric};
use prometheus_client::metrics::MetricType;
use prometheus_client::metrics::counter::ConstCounter;
use prometheus_client::metrics::gauge::ConstGauge;
use serde::Serialize;
use topo::tenants::{Kind, Tenants};

const NONE: u16 = u16::MAX;

/// One tenant or service and its host links.
#[derive(Debug, Clone, Serialize)]
pub struct EntryPorts {
    /// Name.
    pub name: String,
    /// Tenant or service.
    pub kind: Kind,
    /// Its traffic classes (PFC priorities).
    pub classes: Vec<u8>,
    /// Bandwidth share, percent.
    pub share: u32,
    /// Host NICs.
    pub hosts: u32,
    /// Host links (one per NIC port the map has).
    pub links: u32,
    /// Port indices of the leaf ends of its host links.
    #[serde(skip)]
    pub leaf_ports: Vec<u32>,
    /// Port indices of the host ends.
    #[serde(skip)]
    pub host_ports: Vec<u32>,
}

/// Which tenant owns which port and node of a fabric map.
#[derive(Debug, Clone)]
pub struct TenantMap {
    entries: Vec<EntryPorts>,
    port_owner: Vec<u16>,
    node_owner: Vec<u16>,
    /// Line rate of each port in the map, bits/s.
    port_speed: Vec<u64>,
}

impl TenantMap {
    /// Maps `info`'s nodes (by name) to `t`'s entries, resolved against `f`; every port
    /// of a host link gets its host's entry.
    pub fn new(info: &FabricInfo, f: &topo::Fabric, t: &Tenants) -> TenantMap {
        let names = f.name_index();
        let node_owner: Vec<u16> = info
            .nodes
            .iter()
            .map(|n| {
                names
                    .get(n.name.as_str())
                    .filter(|&&id| f.is_host(id))
                    .and_then(|&id| t.owner(id))
                    .map_or(NONE, |e| e as u16)
            })
            .collect();
        let mut entries: Vec<EntryPorts> = t
            .entries()
            .iter()
            .map(|e| EntryPorts {
                name: e.name.clone(),
                kind: e.kind,
                classes: e.classes.clone(),
                share: e.share,
                hosts: e.hosts.len() as u32,
                links: 0,
                leaf_ports: Vec::new(),
                host_ports: Vec::new(),
            })
            .collect();
        let owner = |n: u32| node_owner.get(n as usize).copied().unwrap_or(NONE);
        let mut port_owner = vec![NONE; info.ports.len()];
        for (i, p) in info.ports.iter().enumerate() {
            let (own, peer) = (owner(p.node), p.peer.map_or(NONE, owner));
            if own != NONE {
                port_owner[i] = own;
                entries[own as usize].host_ports.push(i as u32);
                entries[own as usize].links += 1;
            } else if peer != NONE {
                port_owner[i] = peer;
                entries[peer as usize].leaf_ports.push(i as u32);
            }
        }
        TenantMap {
            entries,
            port_owner,
            node_owner,
            port_speed: info.ports.iter().map(|p| p.speed_bps).collect(),
        }
    }

    /// The tenants and services, in the tenant file's order (services first).
    pub fn entries(&self) -> &[EntryPorts] {
        &self.entries
    }

    /// The entry owning port `p` (a host link's end), if any.
    #[cfg(test)]
    fn port(&self, p: u32) -> Option<&str> {
        let o = self
            .port_owner
            .get(p as usize)
            .copied()
            .filter(|&o| o != NONE)?;
        Some(self.entries[o as usize].name.as_str())
    }

    /// The tenants an event concerns (its ports, links' ends, a flow's hosts), each once,
    /// in the file's order.
    pub fn of_event(&self, e: &Event) -> Vec<String> {
        let link_ports = |l: topo::LinkId| [2 * l.0, 2 * l.0 + 1];
        let owners: Vec<u16> = match &e.what {
            EventKind::LinkDown { link, .. } | EventKind::LinkUp { link, .. } => {
                self.ports(&link_ports(*link))
            }
            EventKind::Reroute { links, .. } => {
                let ports: Vec<u32> = links.iter().flat_map(|l| link_ports(*l)).collect();
                self.ports(&ports)
            }
            EventKind::PfcStorm { port, .. }
            | EventKind::PfcStormRestored { port, .. }
            | EventKind::Miswiring { port, .. } => self.ports(&[*port]),
            EventKind::Deadlock { ports } => self.ports(ports),
            EventKind::FlowFinished { src, dst, .. } => [*src, *dst]
                .iter()
                .map(|&n| self.node_owner.get(n as usize).copied().unwrap_or(NONE))
                .collect(),
            _ => Vec::new(),
        };
        let mut seen: Vec<u16> = owners.into_iter().filter(|&o| o != NONE).collect();
        seen.sort_unstable();
        seen.dedup();
        seen.into_iter()
            .map(|o| self.entries[o as usize].name.clone())
            .collect()
    }

    /// Port `p`'s speed: the source's reading, else the map's line rate.
    fn speed(&self, s: &Snapshot, p: u32) -> u64 {
        let map = self.port_speed.get(p as usize).copied().unwrap_or(0);
        s.gauges
            .speed_bps
            .as_ref()
            .map_or(map, |c| c.get(p as usize))
    }

    fn ports(&self, ports: &[u32]) -> Vec<u16> {
        ports
            .iter()
            .map(|&p| self.port_owner.get(p as usize).copied().unwrap_or(NONE))
            .collect()
    }

    /// Each entry's cumulative counters in `s`.
    pub fn sums(&self, s: &Snapshot) -> Vec<Sums> {
        let c = &s.counters;
        self.entries
            .iter()
            .map(|e| {
                let leaf = &e.leaf_ports[..];
                let both: Vec<u32> = leaf.iter().chain(&e.host_ports).copied().collect();
                let drops = [
                    &c.drops_buffer,
                    &c.drops_failure,
                    &c.drops_no_route,
                    &c.drops_kernel,
                ];
                let present: Vec<&Column> = drops.iter().filter_map(|d| d.as_ref()).collect();
                Sums {
                    sent_bytes: sum(c.rx_bytes.as_ref(), leaf),
                    received_bytes: sum(c.tx_bytes.as_ref(), leaf),
                    drops: (!present.is_empty())
                        .then(|| present.iter().map(|col| sum_of(col, &both)).sum()),
                    ecn_marks: sum(c.ecn_marks.as_ref(), leaf),
                    paused_ns: sum(c.paused_ns.as_ref(), &both),
                    pfc_to_hosts: per_priority(&c.pfc_tx, leaf),
                    pfc_from_hosts: per_priority(&c.pfc_rx, leaf),
                    queue_bytes: per_priority(&s.gauges.queue_bytes, leaf),
                    capacity_bps: leaf.iter().map(|&p| self.speed(s, p)).sum(),
                }
            })
            .collect()
    }
}

fn sum_of(col: &Column, ports: &[u32]) -> u64 {
    ports
        .iter()
        .fold(0u64, |a, &p| a.saturating_add(col.get(p as usize)))
}

fn sum(col: Option<&Column>, ports: &[u32]) -> Option<u64> {
    col.map(|c| sum_of(c, ports))
}

fn per_priority(map: &BTreeMap<u8, Column>, ports: &[u32]) -> Option<BTreeMap<u8, u64>> {
    (!map.is_empty()).then(|| map.iter().map(|(&p, c)| (p, sum_of(c, ports))).collect())
}

/// One entry's counters, cumulative (gauges: now); `None`: the source does not measure it.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct Sums {
    /// Bytes the leaves received from the entry's NICs.
    pub sent_bytes: Option<u64>,
    /// Bytes the leaves sent to the entry's NICs.
    pub received_bytes: Option<u64>,
    /// Packets dropped at either end of its host links, every cause.
    pub drops: Option<u64>,
    /// ECN marks at the leaf egresses toward its NICs.
    pub ecn_marks: Option<u64>,
    /// Time the egresses at both ends of its host links spent paused, ns.
    pub paused_ns: Option<u64>,
    /// PFC PAUSE frames the leaves sent to its NICs, per priority.
    pub pfc_to_hosts: Option<BTreeMap<u8, u64>>,
    /// PFC PAUSE frames its NICs sent to the leaves, per priority.
    pub pfc_from_hosts: Option<BTreeMap<u8, u64>>,
    /// Bytes queued at the leaf egresses toward its NICs, per priority (a gauge).
    pub queue_bytes: Option<BTreeMap<u8, u64>>,
    /// Line rate of its host links at the leaf, bits/s.
    #[serde(skip)]
    pub capacity_bps: u64,
}

/// Rates of one entry over the last interval.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct Rates {
    /// Bits per second its NICs sent into the fabric.
    pub sent_bps: Option<f64>,
    /// Bits per second the fabric delivered to its NICs.
    pub received_bps: Option<f64>,
    /// `sent_bps` over its host links' line rate, 0..1.
    pub sent_utilisation: Option<f64>,
    /// `received_bps` over its host links' line rate, 0..1.
    pub received_utilisation: Option<f64>,
    /// Drops per second.
    pub drops_per_s: Option<f64>,
    /// PFC frames to its NICs per second, all priorities.
    pub pfc_to_hosts_per_s: Option<f64>,
}

/// One entry in `GET /api/v1/tenants`.
#[derive(Debug, Clone, Serialize)]
pub struct EntryView {
    /// Who.
    #[serde(flatten)]
    pub entry: EntryPorts,
    /// Cumulative counters.
    #[serde(flatten)]
    pub sums: Sums,
    /// Over the last interval (absent until two snapshots were seen).
    pub rates: Option<Rates>,
}

/// `GET /api/v1/tenants`.
#[derive(Debug, Clone, Serialize)]
pub struct View {
    /// Snapshot the figures are from.
    pub seq: Option<u64>,
    /// Its time, ns on the source's clock.
    pub time_ns: Option<u64>,
    /// Length of the interval the rates are over, ns.
    pub interval_ns: Option<u64>,
    /// The clock of `time_ns` and `interval_ns`, whose seconds the rates are per: the
    /// simulator's (`virtual`) or the wall clock.
    pub clock: Option<Clock>,
    /// The factor between these cumulative counts and the `fabric_tenant_*` counters on
    /// `/metrics` (metric = count × factor): `1 / --ratio` for the simulator, so that
    /// Prometheus' `rate()` over wall-clock seconds gives `rates`; 1 otherwise.
    pub metrics_scale: f64,
    /// What a tenant is credited with.
    pub scope: &'static str,
    /// Tenants and services.
    pub tenants: Vec<EntryView>,
}

/// What `scope` says.
pub const SCOPE: &str = "host links only: each tenant's host-to-leaf links, counted at the leaf end (drops at both ends); links above the leaves are not attributed";

#[derive(Debug, Default)]
struct Kept {
    prev: Option<(u64, Vec<Sums>)>,
    cur: Option<(u64, u64, Vec<Sums>)>,
    clock: Option<Clock>,
}

/// The map and the last two snapshots' sums (the collector feeds it at every publish).
#[derive(Debug)]
pub struct TenantLive {
    /// The map.
    pub map: TenantMap,
    /// The factor `/metrics` puts on the counts (see [`View::metrics_scale`]): one
    /// factor for the API and the exposition.
    metrics_scale: f64,
    kept: Mutex<Kept>,
}

impl TenantLive {
    /// A live view over `map`, its counts exposed on `/metrics` times `metrics_scale`
    /// (`1 / --ratio` for the simulator, 1 otherwise).
    pub fn new(map: TenantMap, metrics_scale: f64) -> Self {
        TenantLive {
            map,
            metrics_scale,
            kept: Mutex::new(Kept::default()),
        }
    }

    /// Takes a new snapshot's sums.
    pub fn observe(&self, s: &Snapshot) {
        let sums = self.map.sums(s);
        let mut k = self.kept.lock().expect("tenants lock");
        k.prev = k.cur.take().map(|(_, t, v)| (t, v));
        k.cur = Some((s.seq, s.time.ns, sums));
        k.clock = Some(s.time.clock);
    }

    /// The latest sums (`None` before the first snapshot).
    pub fn latest(&self) -> Option<Vec<Sums>> {
        let k = self.kept.lock().expect("tenants lock");
        k.cur.as_ref().map(|(_, _, v)| v.clone())
    }

    /// The view served at `/api/v1/tenants`.
    pub fn view(&self) -> View {
        let k = self.kept.lock().expect("tenants lock");
        let interval = match (&k.prev, &k.cur) {
            (Some((t0, _)), Some((_, t1, _))) if t1 > t0 => Some(t1 - t0),
            _ => None,
        };
        let tenants = self
            .map
            .entries
            .iter()
            .enumerate()
            .map(|(i, e)| {
                let sums = k
                    .cur
                    .as_ref()
                    .map(|(_, _, v)| v[i].clone())
                    .unwrap_or_default();
                let rates = match (&k.prev, interval) {
                    (Some((_, p)), Some(dt)) => Some(rates(&p[i], &sums, dt)),
                    _ => None,
                };
                EntryView {
                    entry: e.clone(),
                    sums,
                    rates,
                }
            })
            .collect();
        View {
            seq: k.cur.as_ref().map(|c| c.0),
            time_ns: k.cur.as_ref().map(|c| c.1),
            interval_ns: interval,
            clock: k.clock,
            metrics_scale: self.metrics_scale,
            scope: SCOPE,
            tenants,
        }
    }
}

/// Rates between two sums `dt_ns` apart.
pub fn rates(prev: &Sums, cur: &Sums, dt_ns: u64) -> Rates {
    let dt = dt_ns as f64 * 1e-9;
    let per_s = |a: Option<u64>, b: Option<u64>| Some(b?.saturating_sub(a?) as f64 / dt);
    let bits = |a, b| per_s(a, b).map(|x| x * 8.0);
    let util = |bps: Option<f64>| {
        (cur.capacity_bps > 0).then_some(())?;
        bps.map(|b| (b / cur.capacity_bps as f64).min(1.0))
    };
    let total = |m: &Option<BTreeMap<u8, u64>>| m.as_ref().map(|m| m.values().sum::<u64>());
    let sent_bps = bits(prev.sent_bytes, cur.sent_bytes);
    let received_bps = bits(prev.received_bytes, cur.received_bytes);
    Rates {
        sent_bps,
        received_bps,
        sent_utilisation: util(sent_bps),
        received_utilisation: util(received_bps),
        drops_per_s: per_s(prev.drops, cur.drops),
        pfc_to_hosts_per_s: per_s(total(&prev.pfc_to_hosts), total(&cur.pfc_to_hosts)),
    }
}

/// A counter family of [`Sums`]: name, help, the field, its unit in the base unit.
type CounterFamily = (&'static str, &'static str, fn(&Sums) -> Option<u64>, f64);

/// The `fabric_tenant_*` families of the latest sums (label `tenant`; per priority also
/// `priority`). Counters are the API's counts times [`View::metrics_scale`], as the
/// per-port ones are scaled (simulated time to wall-clock time); a counter the source
/// does not measure has no family.
pub fn encode(
    live: &TenantLive,
    sel: &super::metrics::Selection,
    enc: &mut DescriptorEncoder<'_>,
) -> std::fmt::Result {
    let rate_scale = live.metrics_scale;
    let Some(sums) = live.latest() else {
        return Ok(());
    };
    let entries = live.map.entries();
    if sel.family("fabric_tenant_hosts") {
        let mut m = enc.encode_descriptor(
            "fabric_tenant_hosts",
            "Host NICs of a tenant or shared service (kind)",
            None,
            MetricType::Gauge,
        )?;
        for e in entries {
            let kind = if e.kind == Kind::Tenant {
                "tenant"
            } else {
                "service"
            };
            let set = [("tenant", e.name.as_str()), ("kind", kind)];
            ConstGauge::new(i64::from(e.hosts)).encode(m.encode_family(&set)?)?;
        }
    }
    let counters: [CounterFamily; 5] = [
        (
            "fabric_tenant_sent_bytes",
            "Bytes the leaves received from the tenant's NICs",
            |s| s.sent_bytes,
            1.0,
        ),
        (
            "fabric_tenant_received_bytes",
            "Bytes the leaves sent to the tenant's NICs",
            |s| s.received_bytes,
            1.0,
        ),
        (
            "fabric_tenant_drops",
            "Packets dropped at either end of the tenant's host links",
            |s| s.drops,
            1.0,
        ),
        (
            "fabric_tenant_ecn_marked_packets",
            "Packets ECN-marked at the leaf egresses toward the tenant's NICs",
            |s| s.ecn_marks,
            1.0,
        ),
        (
            "fabric_tenant_pfc_paused_seconds",
            "Seconds the egresses of the tenant's host links spent paused (both ends)",
            |s| s.paused_ns,
            1e-9,
        ),
    ];
    for (name, help, get, unit) in counters {
        if !sel.family(name) || sums.iter().all(|s| get(s).is_none()) {
            continue;
        }
        let mut m = enc.encode_descriptor(name, help, None, MetricType::Counter)?;
        for (e, s) in entries.iter().zip(&sums) {
            if let Some(v) = get(s) {
                let set = [("tenant", e.name.as_str())];
                let fam = m.encode_family(&set)?;
                ConstCounter::new(v as f64 * unit * rate_scale).encode(fam)?;
            }
        }
    }
    if sel.family("fabric_tenant_pfc_pause_frames")
        && sums
            .iter()
            .any(|s| s.pfc_to_hosts.is_some() || s.pfc_from_hosts.is_some())
    {
        let mut m = enc.encode_descriptor(
            "fabric_tenant_pfc_pause_frames",
            "PFC PAUSE frames the leaves sent to the tenant's NICs (to_hosts) or received from them (from_hosts), per priority",
            None,
            MetricType::Counter,
        )?;
        for (e, s) in entries.iter().zip(&sums) {
            for (dir, map) in [
                ("to_hosts", &s.pfc_to_hosts),
                ("from_hosts", &s.pfc_from_hosts),
            ] {
                for (p, v) in map.iter().flatten() {
                    let p = p.to_string();
                    let set = [
                        ("tenant", e.name.as_str()),
                        ("direction", dir),
                        ("priority", &p),
                    ];
                    ConstCounter::new(*v as f64 * rate_scale).encode(m.encode_family(&set)?)?;
                }
            }
        }
    }
    if sel.family("fabric_tenant_queue_bytes") && sums.iter().any(|s| s.queue_bytes.is_some()) {
        let mut m = enc.encode_descriptor(
            "fabric_tenant_queue_bytes",
            "Bytes queued at the leaf egresses toward the tenant's NICs, per priority",
            None,
            MetricType::Gauge,
        )?;
        for (e, s) in entries.iter().zip(&sums) {
            for (p, v) in s.queue_bytes.iter().flatten() {
                let p = p.to_string();
                let set = [("tenant", e.name.as_str()), ("priority", &p)];
                ConstGauge::new(*v).encode(m.encode_family(&set)?)?;
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use fabric_api::{Detector, Timestamp};
    use topo::tenants::TenantFile;

    const FILE: &str = r#"
[[services]]
name = "storage"
servers = ["15"]
[[tenants]]
name = "a"
servers = ["0-3"]
share = 50
classes = [1]
[[tenants]]
name = "b"
servers = ["4-7"]
share = 40
classes = [2]
"#;

    fn setup() -> (topo::Fabric, FabricInfo, TenantMap) {
        let f = topo::generators::fat_tree(4, topo::Rate::gbps(100)).unwrap();
        let file = TenantFile::parse(FILE, topo::Format::Toml, "t.toml").unwrap();
        let t = Tenants::resolve(&file, &f, "t.toml").unwrap();
        let info = FabricInfo::from_topo(&f, 8);
        let map = TenantMap::new(&info, &f, &t);
        (f, info, map)
    }

    /// The port index of `node`'s end of its (only) host link.
    fn host_link_ports(f: &topo::Fabric, host: &str) -> (u32, u32) {
        let h = f.name_index()[host];
        let (_, l) = f.ports(h).next().unwrap();
        let link = f.link(l);
        let (host_end, leaf_end) = if link.a == h { (0, 1) } else { (1, 0) };
        (2 * l.0 + host_end, 2 * l.0 + leaf_end)
    }

    #[test]
    fn host_links_map_to_their_hosts_entry_and_nothing_else_does() {
        let (f, info, map) = setup();
        let names: Vec<&str> = map.entries().iter().map(|e| e.name.as_str()).collect();
        assert_eq!(names, ["storage", "a", "b"]);
        let counts: Vec<(u32, usize, usize)> = map
            .entries()
            .iter()
            .map(|e| (e.hosts, e.leaf_ports.len(), e.host_ports.len()))
            .collect();
        assert_eq!(counts, [(1, 1, 1), (4, 4, 4), (4, 4, 4)]);
        let (h, l) = host_link_ports(&f, "host2-nic0");
        assert_eq!((map.port(h), map.port(l)), (Some("a"), Some("a")));
        let (h, l) = host_link_ports(&f, "host9-nic0");
        assert_eq!(
            (map.port(h), map.port(l)),
            (None, None),
            "host9 is in no entry"
        );
        // No port above the leaves belongs to anyone.
        for (i, p) in info.ports.iter().enumerate() {
            let host_link = info.nodes[p.node as usize].tier == 0
                || p.peer.is_some_and(|q| info.nodes[q as usize].tier == 0);
            if !host_link {
                assert_eq!(map.port(i as u32), None, "port {i}");
            }
        }
    }

    #[test]
    fn sums_count_the_leaf_end_and_leave_unmeasured_counters_null() {
        let (f, info, map) = setup();
        let n = info.ports.len();
        let (h0, l0) = host_link_ports(&f, "host0-nic0");
        let (_, l5) = host_link_ports(&f, "host5-nic0");
        let mut s = Snapshot::new(
            1,
            Timestamp::virtual_ns(1_000_000),
            fabric_api::Source {
                kind: fabric_api::SourceKind::Sim,
                name: "t".into(),
            },
        );
        let col = |v: &[(u32, u64)]| {
            let mut d = vec![0; n];
            for &(p, x) in v {
                d[p as usize] = x;
            }
            Column::from(d)
        };
        s.counters.rx_bytes = Some(col(&[(l0, 1000), (h0, 7)]));
        s.counters.tx_bytes = Some(col(&[(l0, 500), (l5, 300)]));
        s.counters.drops_buffer = Some(col(&[(h0, 2), (l5, 3)]));
        s.counters.pfc_tx.insert(1, col(&[(l0, 4)]));
        s.counters.pfc_tx.insert(2, col(&[(l5, 9)]));
        s.gauges.queue_bytes.insert(2, col(&[(l5, 4096)]));
        let sums = map.sums(&s);
        let (a, b) = (&sums[1], &sums[2]);
        assert_eq!(a.sent_bytes, Some(1000), "counted at the leaf end only");
        assert_eq!(a.received_bytes, Some(500));
        assert_eq!((a.drops, b.drops), (Some(2), Some(3)));
        assert_eq!(a.pfc_to_hosts, Some(BTreeMap::from([(1, 4), (2, 0)])));
        assert_eq!(b.pfc_to_hosts, Some(BTreeMap::from([(1, 0), (2, 9)])));
        assert_eq!(b.queue_bytes, Some(BTreeMap::from([(2, 4096)])));
        // Not measured by this source: null, never 0.
        assert_eq!(
            (a.ecn_marks, a.paused_ns, a.pfc_from_hosts.clone()),
            (None, None, None)
        );
        let json = serde_json::to_string(a).unwrap();
        assert!(json.contains("\"pfc_from_hosts\":null"), "{json}");
    }

    /// `/metrics` scaled its `fabric_tenant_*` counters by `1 / --ratio` (so that
    /// `rate()` over wall-clock seconds gives per-simulated-second rates) while
    /// `/api/v1/tenants` gave the counts on the source's clock, and neither said so. One
    /// factor now serves both, and the view states it with its clock: metric = count ×
    /// factor, and Prometheus' rate of the metric is the view's rate.
    #[test]
    fn the_api_and_metrics_share_one_factor_and_say_it() {
        #[derive(Debug)]
        struct Exp(std::sync::Arc<TenantLive>);
        impl prometheus_client::collector::Collector for Exp {
            fn encode(&self, mut enc: DescriptorEncoder<'_>) -> std::fmt::Result {
                encode(
                    &self.0,
                    &super::super::metrics::Selection::default(),
                    &mut enc,
                )
            }
        }
        let (f, info, map) = setup();
        let (_, l0) = host_link_ports(&f, "host0-nic0");
        // --ratio 0.001: a simulated millisecond per wall-clock second.
        let live = std::sync::Arc::new(TenantLive::new(map, 1000.0));
        let snap = |seq, t_ns, bytes| {
            let mut s = Snapshot::new(
                seq,
                Timestamp::virtual_ns(t_ns),
                fabric_api::Source {
                    kind: fabric_api::SourceKind::Sim,
                    name: "t".into(),
                },
            );
            let mut col = vec![0; info.ports.len()];
            col[l0 as usize] = bytes;
            s.counters.rx_bytes = Some(Column::from(col));
            s
        };
        live.observe(&snap(0, 1_000_000, 0));
        // 100 Gb/s over a simulated millisecond.
        live.observe(&snap(1, 2_000_000, 12_500_000));
        let v = live.view();
        assert_eq!((v.clock, v.metrics_scale), (Some(Clock::Virtual), 1000.0));
        let a = &v.tenants[1];
        assert_eq!(a.entry.name, "a");
        assert_eq!(a.sums.sent_bytes, Some(12_500_000));
        let api_bps = a.rates.as_ref().unwrap().sent_bps.unwrap();
        assert!((api_bps - 100e9).abs() < 1.0, "{api_bps}");
        let json = serde_json::to_string(&v).unwrap();
        assert!(
            json.contains(r#""clock":"virtual""#) && json.contains(r#""metrics_scale":1000.0"#),
            "{json}"
        );
        let mut r = prometheus_client::registry::Registry::default();
        r.register_collector(Box::new(Exp(live.clone())));
        let text = super::super::metrics::encode_openmetrics(&r);
        let metric: f64 = text
            .lines()
            .find_map(|l| l.strip_prefix(r#"fabric_tenant_sent_bytes_total{tenant="a"} "#))
            .unwrap_or_else(|| panic!("no sent bytes of a in:\n{text}"))
            .parse()
            .unwrap();
        assert_eq!(metric, 12_500_000.0 * v.metrics_scale);
        // The simulated millisecond took a wall-clock second: Prometheus' rate.
        let wall_s = v.interval_ns.unwrap() as f64 * 1e-9 * v.metrics_scale;
        let prom_bps = metric * 8.0 / wall_s;
        assert!((prom_bps - api_bps).abs() < 1.0, "{prom_bps} vs {api_bps}");
    }

    #[test]
    fn rates_need_two_snapshots_and_use_the_line_rate() {
        let prev = Sums {
            sent_bytes: Some(0),
            received_bytes: None,
            capacity_bps: 400_000_000_000,
            ..Sums::default()
        };
        let cur = Sums {
            sent_bytes: Some(25_000_000),
            ..prev.clone()
        };
        let r = rates(&prev, &cur, 1_000_000);
        assert_eq!(r.sent_bps, Some(200e9));
        assert_eq!(r.sent_utilisation, Some(0.5));
        assert_eq!((r.received_bps, r.received_utilisation), (None, None));
    }

    #[test]
    fn events_name_the_tenants_they_touch() {
        let (f, _, map) = setup();
        let (h, _) = host_link_ports(&f, "host5-nic0");
        let ev = |what| Event {
            seq: 0,
            time: Timestamp::virtual_ns(0),
            what,
        };
        let down = ev(EventKind::LinkDown {
            link: topo::LinkId(h / 2),
            detected_by: Detector::Injected,
            detect_ns: None,
        });
        assert_eq!(map.of_event(&down), ["b"]);
        let names = f.name_index();
        let flow = ev(EventKind::FlowFinished {
            flow: 1,
            src: names["host15-nic0"].0,
            dst: names["host1-nic0"].0,
            bytes: 1,
            fct_ns: 1,
        });
        assert_eq!(map.of_event(&flow), ["storage", "a"]);
        let core = ev(EventKind::LinkDown {
            link: topo::LinkId(f.num_links() as u32 - 1),
            detected_by: Detector::Injected,
            detect_ns: None,
        });
        assert!(map.of_event(&core).is_empty());
    }
}
