//! An InfiniBand subnet as a telemetry source (`fabric serve --infiniband`): ibsim
//! simulates `--fabric` from its `.net` export and a real OpenSM (`-s 1 -R file`) is the
//! subnet manager; fabric is its brain (the tables it loads) and its eyes (what the
//! daemon reports). Everything runs in [`ib_testbed`]; the daemon starts it, and stops it
//! (OpenSM, ibsim, their directory) when the source is dropped — SIGINT/SIGTERM end the
//! daemon gracefully, which drops it.
//!
//! - **Detection**: every sample reads OpenSM's log since the last one; a trap 128 (a
//!   switch reporting a port state change) has that switch's ports read (`iblinkinfo`
//!   over a directed route) and compared with the links fabric holds up; when that
//!   cannot tell — and every [`DISCOVER_EVERY`] — `ibnetdiscover` compares every cable.
//! - **Answer**: a changed cable is routed around (or back over) incrementally, the new
//!   tables are written for OpenSM's `file` engine and OpenSM is made to load them
//!   (`SIGHUP`; one changed entry read back per sweep until a switch holds it). Events:
//!   `link-down`/`link-up` (detected by the trap: `carrier`), then `reroute` with the
//!   switches whose tables changed and the time from the failure (or the command) to the
//!   sweep that loaded the new tables.
//! - **Read-back** (the drift check): every switch's table read with `ibroute` over
//!   directed routes and compared with fabric's; a switch lacking an entry for a LID it
//!   can reach is reported missing too. Repairing drift writes the tables again and has
//!   OpenSM load them — the only way this source ever writes anything.
//! - **Cabling**: `ibnetdiscover`'s cables against the design (missing, unexpected,
//!   miswired, and the Clos rules), the ports of failed links left out.
//! - **Counters**: `perfquery -x` on every port (PortXmitData/PortRcvData are in 4-byte
//!   words). ibsim carries no data traffic: only the data and packet counters move, and
//!   they count management datagrams; error counters move only when set on ibsim's
//!   console (`PerformanceSet`), and a cut cable does not raise `LinkDownedCounter`.
//! - **Commands**: failing a link cuts the cable on ibsim's console (`Unlink`), restoring
//!   it reconnects it (`ReLink`) — a simulated cable, as an outside failure would be; the
//!   detection and the answer then run as for any failure.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::Arc;
use std::time::{Duration, Instant};

use fabric_api::{Column, Event, EventKind, FabricInfo, Snapshot, SourceKind, Timestamp};
use ib_testbed::brain::{Brain, LinkChange};
use ib_testbed::parse;
use ib_testbed::subnet::Attach;
use topo::{Fabric, LinkId, NodeId};

use super::log;
use super::source::{Actuator, Sample, Source, SourceMap};

/// Discovery runs at least this often even without a trap (a lost trap, a cable that
/// came back without one).
pub const DISCOVER_EVERY: Duration = Duration::from_secs(30);

/// The InfiniBand source.
#[derive(Debug)]
pub struct IbSource {
    brain: Brain,
    fabric: Arc<Fabric>,
    info: FabricInfo,
    /// Where the next read of OpenSM's log starts.
    log_offset: u64,
    last_discovery: Instant,
    /// Links a command cut or restored, with the time of the command.
    commanded: HashMap<LinkId, Instant>,
    /// Events since the last sample (from commands and drift repairs).
    pending: Vec<Event>,
    errors: u64,
    /// Last counters read, per port index of the map (kept when a read fails).
    counters: PortCounters,
}

#[derive(Debug, Default, Clone)]
struct PortCounters {
    tx_bytes: Vec<u64>,
    rx_bytes: Vec<u64>,
    tx_pkts: Vec<u64>,
    rx_pkts: Vec<u64>,
}

impl IbSource {
    /// Starts ibsim on `fabric` and OpenSM on fabric's tables (its first sweep awaited).
    pub fn open(fabric: Fabric) -> anyhow::Result<Self> {
        let t = Instant::now();
        let name = fabric.name().to_string();
        let brain = Brain::start(Arc::new(fabric), "serve")
            .map_err(|e| anyhow::anyhow!("--infiniband {name}: {e}"))?;
        let s = Self::with_brain(brain);
        log::info(&format!(
            "infiniband {name}: ibsim and OpenSM (file engine on fabric's tables) up in {:.2} s; files in {}",
            t.elapsed().as_secs_f64(),
            s.brain.net().dir().display()
        ));
        Ok(s)
    }

    /// Attaches to a running subnet of `fabric` and its OpenSM (`--ib-attach`): starts
    /// nothing. The subnet must match the design — every node of the design present with
    /// the LID the design export assigns, every cable where the design puts it (a cable
    /// neither end of which answers is taken as down and routed around) — or it is
    /// refused with what differs. Then fabric's tables are written to the LFT file and
    /// OpenSM made to load them (`SIGHUP`).
    pub fn attach(fabric: Fabric, a: &Attach) -> anyhow::Result<Self> {
        let t = Instant::now();
        let name = fabric.name().to_string();
        let err = |e: ib_testbed::Error| anyhow::anyhow!("--ib-attach {name}: {e}");
        let brain = Brain::attach(Arc::new(fabric), a).map_err(err)?;
        let (peers, lids) = brain.net().discover_with_lids().map_err(err)?;
        let design = brain.net().design();
        let f = design.fabric.clone();
        let mut differs = brain.net().lid_mismatches(&lids);
        for &n in design.lids.nodes() {
            if f.degree(n) > 0 && !lids.contains_key(&design.ib_name(n)) {
                differs.push(format!(
                    "{} ({}) is not in the running subnet",
                    f.node_name(n),
                    design.ib_name(n)
                ));
            }
        }
        anyhow::ensure!(
            differs.is_empty(),
            "--ib-attach {name}: the running subnet is not the design ({} difference(s)): {}",
            differs.len(),
            shortlist(&differs)
        );
        let down = unheard_links(&brain, &peers);
        let report = cabling_report(&brain, &peers, &down);
        if !report.mismatches.is_empty() {
            let m: Vec<String> = report
                .mismatches
                .iter()
                .map(|m| {
                    format!(
                        "{} at {}: expected {}, seen {}",
                        m.kind.as_str(),
                        m.at,
                        m.expected.as_deref().unwrap_or("-"),
                        m.seen.as_deref().unwrap_or("nothing")
                    )
                })
                .collect();
            anyhow::bail!(
                "--ib-attach {name}: the running subnet is not cabled as the design ({} finding(s)): {}",
                m.len(),
                shortlist(&m)
            );
        }
        let mut s = Self::with_brain(brain);
        let down: Vec<LinkId> = down.into_iter().collect();
        let (up_line, sweeps) = s.brain.adopt(&down).map_err(err)?;
        s.log_offset = s.sm_log_end();
        log::info(&format!(
            "infiniband {name}: attached to OpenSM pid {} ({} ports cabled as designed, {} cable(s) down and routed around, every LID as designed); fabric's tables written to {} and loaded in {} sweep(s) ({}), {:.2} s in all; OpenSM and the subnet are left running on exit",
            a.sm_pid,
            report.heard,
            down.len(),
            a.lfts.display(),
            sweeps,
            up_line.trim(),
            t.elapsed().as_secs_f64(),
        ));
        Ok(s)
    }

    fn with_brain(brain: Brain) -> Self {
        let fabric = brain.net().design().fabric.clone();
        let n = 2 * fabric.num_links();
        let mut s = IbSource {
            info: FabricInfo::from_topo(&fabric, 1),
            fabric,
            log_offset: 0,
            last_discovery: Instant::now(),
            commanded: HashMap::new(),
            pending: Vec::new(),
            errors: 0,
            counters: PortCounters {
                tx_bytes: vec![0; n],
                rx_bytes: vec![0; n],
                tx_pkts: vec![0; n],
                rx_pkts: vec![0; n],
            },
            brain,
        };
        s.log_offset = s.sm_log_end();
        s
    }

    fn sm_log_end(&mut self) -> u64 {
        self.brain.subnet().sm().map_or(0, |sm| sm.log_end())
    }

    /// The LIDs of the switches that sent a trap 128 since the last call, and the offset
    /// in OpenSM's log just after the first such line.
    fn new_traps(&mut self) -> Result<(Vec<u16>, Option<u64>), String> {
        let mut off = self.log_offset;
        let sm = self.brain.subnet().sm().ok_or("OpenSM is not running")?;
        let (lines, end) = sm.lines_from(off).map_err(|e| e.to_string())?;
        self.log_offset = end;
        let (mut lids, mut first_end) = (Vec::new(), None);
        for l in &lines {
            off += l.len() as u64 + 1;
            if let Some(lid) = parse::trap128_lid(l) {
                first_end.get_or_insert(off);
                if !lids.contains(&lid) {
                    lids.push(lid);
                }
            }
        }
        Ok((lids, first_end))
    }

    /// Finds what changed — at the trapping switches `lids` if they tell, else by
    /// discovering the whole subnet — and answers it; the events.
    fn detect_and_answer(
        &mut self,
        lids: &[u16],
        trap_end: Option<u64>,
    ) -> Result<Vec<Event>, String> {
        let detected = Instant::now();
        let at_traps = if lids.is_empty() {
            None
        } else {
            self.brain.detect_at(lids).map_err(|e| e.to_string())?
        };
        let changes = match at_traps {
            Some(c) => c,
            None => {
                self.last_discovery = Instant::now();
                self.brain.detect().map_err(|e| e.to_string())?.0
            }
        };
        if changes.is_empty() {
            return Ok(Vec::new());
        }
        let now = Timestamp::wall_ns(super::collector::now_ns());
        let mut events: Vec<Event> = changes.iter().map(|c| link_event(c, now)).collect();
        let t0 = changes
            .iter()
            .filter_map(|c| self.commanded.remove(&c.link))
            .min()
            .unwrap_or(detected);
        let a = self
            .brain
            .answer_after(&changes, trap_end)
            .map_err(|e| e.to_string())?;
        // The answer's sweeps logged their own lines: skip them.
        self.log_offset = self.sm_log_end();
        let took = t0.elapsed();
        log::info(&format!(
            "infiniband: {} link(s) changed ({}); {} LFT entries on {} switches re-routed in {:.2} ms, written in {:.1} ms, loaded by OpenSM in {:.0} ms ({} sweep(s), {} SIGHUP(s)); {:.0} ms from the {}",
            changes.len(),
            changes
                .iter()
                .map(|c| format!("{} {}", c.link.0, if c.up { "up" } else { "down" }))
                .collect::<Vec<_>>()
                .join(", "),
            a.entries_changed,
            a.switches_changed.len(),
            a.compute_us as f64 / 1e3,
            a.write_us as f64 / 1e3,
            a.load_us as f64 / 1e3,
            a.sweeps,
            a.hups,
            took.as_secs_f64() * 1e3,
            if t0 == detected {
                "detection"
            } else {
                "command"
            }
        ));
        events.push(Event {
            seq: 0,
            time: Timestamp::wall_ns(super::collector::now_ns()),
            what: EventKind::Reroute {
                links: changes.iter().map(|c| c.link).collect(),
                switches_changed: Some(a.switches_changed.iter().map(|s| s.0).collect()),
                unreachable_pairs: None,
                repaired_ns: took.as_nanos() as u64,
            },
        });
        Ok(events)
    }

    /// Reads every node's port counters into `self.counters`; counts the nodes that
    /// could not be read (a switch the SM's LID does not route to, for one).
    fn read_counters(&mut self) -> u64 {
        let f = self.fabric.clone();
        let mut failed = 0;
        for n in (0..f.num_nodes() as u32).map(NodeId) {
            if f.degree(n) == 0 {
                continue;
            }
            let by_port = match self.brain.net().node_counters(n) {
                Ok(c) => c,
                Err(_) => {
                    failed += 1;
                    continue;
                }
            };
            for (ib_port, c) in by_port {
                let Some(p) = ib_port.checked_sub(1).map(u16::from) else {
                    continue;
                };
                if usize::from(p) >= f.degree(n) {
                    continue;
                }
                let i = FabricInfo::topo_port_index(&f, n, p) as usize;
                let get = |k: &str| c.get(k).copied().unwrap_or(0);
                self.counters.tx_bytes[i] = 4 * get("PortXmitData");
                self.counters.rx_bytes[i] = 4 * get("PortRcvData");
                self.counters.tx_pkts[i] = get("PortXmitPkts");
                self.counters.rx_pkts[i] = get("PortRcvPkts");
            }
        }
        failed
    }

    fn snapshot(&self, seq: u64) -> Snapshot {
        let source = fabric_api::Source {
            kind: SourceKind::Infiniband,
            name: self.fabric.name().to_string(),
        };
        let mut s = Snapshot::new(seq, Timestamp::wall_ns(super::collector::now_ns()), source);
        let c = &mut s.counters;
        c.tx_bytes = Some(Column::from(self.counters.tx_bytes.clone()));
        c.rx_bytes = Some(Column::from(self.counters.rx_bytes.clone()));
        c.tx_pkts = Some(Column::from(self.counters.tx_pkts.clone()));
        c.rx_pkts = Some(Column::from(self.counters.rx_pkts.clone()));
        let routes = self.brain.routes();
        s.gauges.oper_down = routes
            .failed_links()
            .flat_map(|l| [2 * l.0, 2 * l.0 + 1])
            .collect();
        s.sum_ports_into_totals();
        s
    }

    fn set_link(&mut self, l: LinkId, up: bool) -> Result<String, String> {
        if !self.brain.net().owned() {
            return Err(format!(
                "attached to a subnet fabric did not start: fabric never cuts or restores its cables (link {})",
                l.0
            ));
        }
        if l.idx() >= self.fabric.num_links() {
            return Err(format!("no link {}", l.0));
        }
        if self.brain.routes().link_is_up(l) == up {
            return Err(format!(
                "link {} is {}",
                l.0,
                if up { "not down" } else { "already down" }
            ));
        }
        self.commanded.insert(l, Instant::now());
        let r = if up {
            self.brain.subnet().relink(l)
        } else {
            self.brain.subnet().unlink(l)
        };
        r.map_err(|e| {
            self.commanded.remove(&l);
            e.to_string()
        })?;
        let (n, p) = self
            .brain
            .net()
            .design()
            .switch_end(l)
            .map_err(|e| e.to_string())?;
        Ok(format!(
            "{}[{p}] {} on ibsim's console; fabric re-routes when OpenSM hears the switch's trap",
            self.fabric.node_name(n),
            if up { "relinked" } else { "unlinked" }
        ))
    }
}

fn link_event(c: &LinkChange, time: Timestamp) -> Event {
    let what = if c.up {
        EventKind::LinkUp {
            link: c.link,
            detected_by: fabric_api::Detector::Carrier,
        }
    } else {
        EventKind::LinkDown {
            link: c.link,
            detected_by: fabric_api::Detector::Carrier,
            detect_ns: None,
        }
    };
    Event { seq: 0, time, what }
}

impl Source for IbSource {
    fn map(&self) -> SourceMap {
        SourceMap::new(self.info.clone(), Some(self.fabric.clone()))
    }

    fn sample(&mut self, _elapsed: Duration, seq: u64) -> Result<Sample, String> {
        let t = Instant::now();
        let (lids, trap_end) = self.new_traps()?;
        let mut events = std::mem::take(&mut self.pending);
        if !lids.is_empty() || self.last_discovery.elapsed() >= DISCOVER_EVERY {
            match self.detect_and_answer(&lids, trap_end) {
                Ok(mut e) => events.append(&mut e),
                Err(e) => {
                    self.errors += 1;
                    log::warn(&format!("infiniband: answering a cable change: {e}"));
                }
            }
        }
        let failed = self.read_counters();
        if failed > 0 {
            self.errors += 1;
        }
        for e in &mut events {
            e.seq = seq;
        }
        Ok(Sample {
            snapshot: Some(self.snapshot(seq)),
            events,
            read_ns: Some(t.elapsed().as_nanos() as u64),
        })
    }

    fn take_errors(&mut self) -> u64 {
        std::mem::take(&mut self.errors)
    }

    fn drift(&mut self) -> Option<Result<veth::routed::Drift, String>> {
        let t = Instant::now();
        Some(
            self.brain
                .verify()
                .map(|(d, unreached)| drift_report(&self.brain, &d, &unreached, t))
                .map_err(|e| e.to_string()),
        )
    }

    fn check_topology(&mut self) -> Option<Result<veth::routed::NeighbourReport, String>> {
        Some(self.cabling().map_err(|e| e.to_string()))
    }

    fn actuator(&mut self) -> Option<&mut dyn Actuator> {
        Some(self)
    }
}

impl IbSource {
    /// `ibnetdiscover` against the design, the ports of links fabric holds failed left out.
    fn cabling(&self) -> ib_testbed::Result<veth::routed::NeighbourReport> {
        let t = Instant::now();
        let peers = self.brain.net().discover()?;
        let failed: BTreeSet<LinkId> = self.brain.routes().failed_links().collect();
        let mut r = cabling_report(&self.brain, &peers, &failed);
        r.took_s = t.elapsed().as_secs_f64();
        Ok(r)
    }
}

/// The cables `peers` shows against the design, the ports of the links `down` left out.
fn cabling_report(
    b: &Brain,
    peers: &[parse::PortPeer],
    down: &BTreeSet<LinkId>,
) -> veth::routed::NeighbourReport {
    let d = b.net().design();
    let f = &d.fabric;
    let mut heard: BTreeMap<(NodeId, topo::Port), (String, String)> = BTreeMap::new();
    for p in peers {
        let Some(n) = d.node_of_ib_name(&p.node) else {
            continue; // a node the design lacks: seen from its neighbour's port
        };
        let Some(port) = p.port.checked_sub(1).map(u16::from) else {
            continue;
        };
        let seen = match d.node_of_ib_name(&p.peer) {
            Some(m) => (
                f.node_name(m).to_string(),
                veth::routed::ifname(u16::from(p.peer_port.saturating_sub(1))),
            ),
            None => (p.peer.clone(), format!("ib{}", p.peer_port)),
        };
        heard.insert((n, port), seen);
    }
    let mut ports = BTreeSet::new();
    for &l in down {
        let k = f.link(l);
        ports.insert((k.a, k.a_port));
        ports.insert((k.b, k.b_port));
    }
    let mismatches = veth::routed::compare_neighbours(f, &heard, &ports);
    veth::routed::NeighbourReport {
        ports: 2 * f.num_links() - ports.len(),
        heard: heard.len(),
        down: ports.len(),
        mismatches,
        took_s: 0.0,
    }
}

/// The design's links neither end of which `peers` shows cabled to anything: down.
fn unheard_links(b: &Brain, peers: &[parse::PortPeer]) -> BTreeSet<LinkId> {
    let d = b.net().design();
    let f = &d.fabric;
    let heard: BTreeSet<(NodeId, u8)> = peers
        .iter()
        .filter_map(|p| Some((d.node_of_ib_name(&p.node)?, p.port)))
        .collect();
    (0..f.num_links() as u32)
        .map(LinkId)
        .filter(|&l| {
            let k = f.link(l);
            let a = (k.a, ib_testbed::design::ib_port(k.a_port));
            let z = (k.b, ib_testbed::design::ib_port(k.b_port));
            !heard.contains(&a) && !heard.contains(&z)
        })
        .collect()
}

/// The first few of `items`, `; `-separated, with how many more.
fn shortlist(items: &[String]) -> String {
    const SHOWN: usize = 8;
    let mut s = items[..items.len().min(SHOWN)].join("; ");
    if items.len() > SHOWN {
        s.push_str(&format!("; and {} more", items.len() - SHOWN));
    }
    s
}

/// The read-back as a drift report: one entry per differing LFT entry (prefix
/// `lid N`, the ports in the kind's terms), and one `missing` entry per LID a switch can
/// reach but holds no entry for (fabric's tables lacking it too).
fn drift_report(
    b: &Brain,
    d: &ib_testbed::tables::LftDiff,
    unreached: &[(NodeId, u16)],
    t: Instant,
) -> veth::routed::Drift {
    use veth::routed::{DriftEntry, DriftKind, Family};
    let design = b.net().design();
    let f = &design.fabric;
    let name = |n: Option<NodeId>| n.map_or("?".to_string(), |n| f.node_name(n).to_string());
    let mut out = veth::routed::Drift {
        checked: d.checked,
        ..Default::default()
    };
    let port = |p: Option<u8>| p.map_or("none".to_string(), |p| p.to_string());
    for e in &d.entries {
        let kind = match (e.want, e.got) {
            (Some(_), None) => DriftKind::Missing,
            (None, Some(_)) => DriftKind::Extra,
            _ => DriftKind::Different,
        };
        out.entries.push(DriftEntry {
            switch: name(design.node_of_guid(e.switch)),
            leaf: name(design.node_of_lid(e.lid)),
            family: Family::V4,
            prefix: format!(
                "lid {} (port {} wanted, {} held)",
                e.lid,
                port(e.want),
                port(e.got)
            ),
            kind,
            wanted: Vec::new(),
            kernel: Vec::new(),
            kernel_nhid: None,
            kernel_protocol: None,
        });
    }
    let known: BTreeSet<(String, u16)> = d
        .entries
        .iter()
        .map(|e| (name(design.node_of_guid(e.switch)), e.lid))
        .collect();
    for &(s, lid) in unreached {
        if known.contains(&(f.node_name(s).to_string(), lid)) {
            continue;
        }
        out.entries.push(DriftEntry {
            switch: f.node_name(s).to_string(),
            leaf: name(design.node_of_lid(lid)),
            family: Family::V4,
            prefix: format!("lid {lid} (reachable, no entry in fabric's tables either)"),
            kind: DriftKind::Missing,
            wanted: Vec::new(),
            kernel: Vec::new(),
            kernel_nhid: None,
            kernel_protocol: None,
        });
    }
    out.took_s = t.elapsed().as_secs_f64();
    out
}

impl Actuator for IbSource {
    fn repair_drift(
        &mut self,
    ) -> Option<Result<(veth::routed::DriftRepair, veth::routed::Drift), String>> {
        let t = Instant::now();
        let before = match self.drift()? {
            Ok(d) => d,
            Err(e) => return Some(Err(e)),
        };
        let mut run = || -> Result<_, String> {
            self.brain.reload().map_err(|e| e.to_string())?;
            self.log_offset = self.sm_log_end();
            let after = self.drift().unwrap_or_else(|| Ok(Default::default()))?;
            use veth::routed::DriftKind;
            let r = veth::routed::DriftRepair {
                missing: before.count(DriftKind::Missing),
                extra: before.count(DriftKind::Extra),
                different: before.count(DriftKind::Different),
                skipped: Vec::new(),
                routes: before.entries.len(),
                failed: Vec::new(),
                took_s: t.elapsed().as_secs_f64(),
            };
            Ok((r, after))
        };
        Some(run())
    }

    fn fail_link(&mut self, link: LinkId) -> Result<String, String> {
        self.set_link(link, false)
    }

    fn restore_link(&mut self, link: LinkId) -> Result<String, String> {
        self.set_link(link, true)
    }
}
