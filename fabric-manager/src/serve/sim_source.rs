//! The simulator as a telemetry source: a `topo` fabric and a workload that keeps going,
//! paced to the wall clock (`ratio` simulated seconds per wall-clock second).
//!
//! The workload runs as back-to-back iterations of the scenario (the built-in demo: a
//! ring all-reduce over every host), each a complete, seeded simulator run; the counters
//! of finished iterations add up into the cumulative per-port columns, and virtual time
//! is the sum of the iterations' durations. A failed link is failed from the start of
//! every following iteration (the simulator's own reroute path, detection time 0) until
//! it is restored. Snapshots therefore advance by whole iterations: keep an iteration
//! (simulated) shorter than `interval × ratio` for smooth rates.

use std::collections::BTreeSet;
use std::sync::Arc;
use std::time::{Duration, Instant as WallInstant};

use anyhow::Context;
use cc_algos::{Instant, Rate};
use fabric_api::{
    Column, Detector, Event, EventKind, FabricInfo, Snapshot, Source as ApiSource, SourceKind,
    Timestamp,
};
use scenario::{CompileCtx, FailureSpec, FailureTarget, Scenario, Workplan};
use sim::{CcChoice, Sim, SimConfig, SimResults};
use topo::{Fabric, LinkId};

use super::config::SourceSpec;
use super::source::Source;

/// The built-in demo: a ring all-reduce over every host, 256 KB per rank.
pub const DEMO_SCENARIO: &str = "name = \"demo: looping ring all-reduce\"\n\n[[workload]]\nkind = \"ring_allreduce\"\nsize = \"256KB\"\n";

/// At most this much wall-clock time is spent simulating per sample; a source that
/// cannot keep up falls behind the wall clock instead of stalling the collector.
const BUDGET: Duration = Duration::from_millis(250);

/// Cumulative counters, one per port in the fabric map's order.
#[derive(Debug, Default)]
struct Acc {
    tx_bytes: Vec<u64>,
    rx_bytes: Vec<u64>,
    tx_pkts: Vec<u64>,
    rx_pkts: Vec<u64>,
    drops_buffer: Vec<u64>,
    ecn_marks: Vec<u64>,
    trims: Vec<u64>,
    pfc_tx: Vec<u64>,
    pfc_rx: Vec<u64>,
    paused_ns: Vec<u64>,
    drops_failure: u64,
    drops_no_route: u64,
    cnps: u64,
    nacks: u64,
    flows_finished: u64,
}

/// The simulator source.
#[derive(Debug)]
pub struct SimSource {
    fabric: Arc<Fabric>,
    info: FabricInfo,
    plan: Workplan,
    cfg: SimConfig,
    ratio: f64,
    name: String,
    /// The one priority every flow uses, if they share one.
    priority: Option<u8>,
    iteration: u64,
    virt_ns: u64,
    acc: Acc,
    failed: BTreeSet<LinkId>,
    events: Vec<(u64, EventKind)>,
}

/// Opens the source a spec names.
pub fn open(spec: &SourceSpec) -> anyhow::Result<Box<dyn Source>> {
    match spec {
        SourceSpec::Sim {
            fabric,
            scenario,
            ratio,
            seed,
        } => Ok(Box::new(SimSource::new(
            fabric,
            scenario.as_deref(),
            *ratio,
            *seed,
        )?)),
    }
}

fn load_fabric(arg: &str) -> anyhow::Result<Fabric> {
    if std::path::Path::new(arg).exists() {
        let args = crate::common::FabricArgs {
            fabric: Some(arg.into()),
            ..Default::default()
        };
        return args.load();
    }
    crate::common::FabricArgs::preset(arg).load()
}

impl SimSource {
    /// A source running `scenario` (a file; `None`: the demo) on `fabric`.
    pub fn new(
        fabric: &str,
        scenario: Option<&str>,
        ratio: f64,
        seed: u64,
    ) -> anyhow::Result<Self> {
        let f = load_fabric(fabric).with_context(|| format!("--fabric {fabric}"))?;
        let scen = match scenario {
            Some(p) => Scenario::from_file(std::path::Path::new(p))?,
            None => Scenario::from_toml_str(DEMO_SCENARIO, "built-in demo")?,
        };
        let host_rate = f
            .links()
            .iter()
            .find(|l| l.a.idx() < f.num_hosts())
            .map_or(Rate::gbps(100), |l| Rate::bps(l.rate_bps));
        let plan = scen.compile(&CompileCtx::new(f.num_hosts() as u32, host_rate, seed))?;
        if plan.flows.iter().any(|fl| fl.size.is_none()) {
            anyhow::bail!(
                "{}: the daemon loops sized flows only (a long-lived flow never ends an iteration)",
                plan.name
            );
        }
        let mut cfg = SimConfig {
            seed,
            pfc: true,
            ..SimConfig::default()
        }
        .with_cc_defaults("dcqcn".parse::<CcChoice>().map_err(anyhow::Error::msg)?);
        cfg.apply(&plan.network)
            .map_err(|e| anyhow::anyhow!("scenario [network]: {e}"))?;
        if cfg.stop.is_none() {
            // An iteration that never ends (a deadlock) must not hang the collector.
            cfg.stop = Some(Instant::ZERO + cc_algos::Duration::millis(50));
        }
        // Fail fast on a workload the fabric cannot run.
        Sim::from_fabric(&f, cfg.clone(), &plan)?;
        let info = FabricInfo::from_topo(&f, 8);
        let prios: BTreeSet<u8> = plan.flows.iter().map(|fl| fl.priority).collect();
        let priority = (prios.len() == 1).then(|| *prios.first().expect("one priority"));
        let n = info.ports.len();
        let z = || vec![0u64; n];
        Ok(SimSource {
            name: format!("{} on {}", plan.name, f.name()),
            fabric: Arc::new(f),
            info,
            plan,
            cfg,
            ratio,
            priority,
            iteration: 0,
            virt_ns: 0,
            acc: Acc {
                tx_bytes: z(),
                rx_bytes: z(),
                tx_pkts: z(),
                rx_pkts: z(),
                drops_buffer: z(),
                ecn_marks: z(),
                trims: z(),
                pfc_tx: z(),
                pfc_rx: z(),
                paused_ns: z(),
                ..Acc::default()
            },
            failed: BTreeSet::new(),
            events: Vec::new(),
        })
    }

    /// One iteration of the workload with the current failures.
    fn iterate(&mut self) -> Result<SimResults, String> {
        let mut plan = self.plan.clone();
        for &l in &self.failed {
            let link = self.fabric.link(l);
            plan.failures.push(FailureSpec {
                at: Instant::ZERO,
                target: FailureTarget::Link(link.a.0, link.b.0),
                detect: cc_algos::Duration::ZERO,
                restore: None,
            });
        }
        let mut cfg = self.cfg.clone();
        cfg.seed = self.cfg.seed.wrapping_add(self.iteration);
        let mut sim = Sim::from_fabric(&self.fabric, cfg, &plan).map_err(|e| e.to_string())?;
        self.iteration += 1;
        Ok(sim.run())
    }

    fn add(&mut self, r: &SimResults) {
        let a = &mut self.acc;
        for l in &r.links {
            let node = topo::NodeId(l.node);
            if u32::from(l.port) as usize >= self.fabric.degree(node) {
                continue;
            }
            let tx = FabricInfo::topo_port_index(&self.fabric, node, l.port) as usize;
            let rx = tx ^ 1; // the peer's end of the same link
            a.tx_bytes[tx] += l.tx_bytes;
            a.tx_pkts[tx] += l.tx_pkts;
            a.rx_bytes[rx] += l.tx_bytes;
            a.rx_pkts[rx] += l.tx_pkts;
            a.drops_buffer[tx] += l.drops;
            a.ecn_marks[tx] += l.ecn_marks;
            a.trims[tx] += l.trims;
            a.pfc_tx[tx] += l.pauses_sent;
            a.pfc_rx[tx] += l.pauses_rcvd;
            a.paused_ns[tx] += (l.paused_us * 1e3) as u64;
        }
        a.drops_failure += r.totals.drops_failure;
        a.drops_no_route += r.totals.drops_noroute;
        a.cnps += r.totals.cnps;
        a.nacks += r.totals.nacks;
        a.flows_finished += r.fct.finished as u64;
        self.virt_ns += (r.run.end_us * 1e3).max(1.0) as u64;
    }

    fn snapshot(&self, seq: u64) -> Snapshot {
        let src = ApiSource {
            kind: SourceKind::Sim,
            name: self.name.clone(),
        };
        let mut s = Snapshot::new(seq, Timestamp::virtual_ns(self.virt_ns), src);
        let a = &self.acc;
        let col = |v: &Vec<u64>| Some(Column::from(v.clone()));
        let c = &mut s.counters;
        c.tx_bytes = col(&a.tx_bytes);
        c.rx_bytes = col(&a.rx_bytes);
        c.tx_pkts = col(&a.tx_pkts);
        c.rx_pkts = col(&a.rx_pkts);
        c.drops_buffer = col(&a.drops_buffer);
        c.ecn_marks = col(&a.ecn_marks);
        c.trims = col(&a.trims);
        c.paused_ns = col(&a.paused_ns);
        // The simulator counts PAUSE frames per port; they belong to one priority only
        // when every flow uses the same one (otherwise they are not reported).
        if let Some(prio) = self.priority {
            c.pfc_tx.insert(prio, Column::from(a.pfc_tx.clone()));
            c.pfc_rx.insert(prio, Column::from(a.pfc_rx.clone()));
        }
        s.gauges.oper_down = self
            .failed
            .iter()
            .flat_map(|l| [2 * l.0, 2 * l.0 + 1])
            .collect();
        s.sum_ports_into_totals();
        s.totals.drops_failure = a.drops_failure;
        s.totals.drops_no_route = a.drops_no_route;
        s.totals.cnps = a.cnps;
        s.totals.nacks = a.nacks;
        s.totals.flows_finished = a.flows_finished;
        s
    }
}

impl Source for SimSource {
    fn info(&self) -> FabricInfo {
        self.info.clone()
    }

    fn fabric(&self) -> Option<Arc<Fabric>> {
        Some(self.fabric.clone())
    }

    fn sample(&mut self, elapsed: Duration, seq: u64) -> Result<(Snapshot, Vec<Event>), String> {
        let target = (elapsed.as_secs_f64() * self.ratio * 1e9) as u64;
        let wall = WallInstant::now();
        while self.virt_ns < target && wall.elapsed() < BUDGET {
            let r = self.iterate()?;
            self.add(&r);
        }
        let events = self
            .events
            .drain(..)
            .map(|(t, what)| Event {
                seq,
                time: Timestamp::virtual_ns(t),
                what,
            })
            .collect();
        Ok((self.snapshot(seq), events))
    }

    fn fail_link(&mut self, link: LinkId) -> Result<String, String> {
        if !self.failed.insert(link) {
            return Err(format!("link {} is already down", link.0));
        }
        self.events.push((
            self.virt_ns,
            EventKind::LinkDown {
                link,
                detected_by: Detector::Injected,
                detect_ns: Some(0),
            },
        ));
        Ok(format!("link {} failed", link.0))
    }

    fn restore_link(&mut self, link: LinkId) -> Result<String, String> {
        if !self.failed.remove(&link) {
            return Err(format!("link {} is not down", link.0));
        }
        self.events.push((
            self.virt_ns,
            EventKind::LinkUp {
                link,
                detected_by: Detector::Injected,
            },
        ));
        Ok(format!("link {} restored", link.0))
    }
}
