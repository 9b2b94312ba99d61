//! The simulator as a telemetry source: a `topo` fabric and a workload that keeps going,
//! paced to the wall clock (`ratio` simulated seconds per wall-clock second).
//!
//! Each sample steps the simulator with `run_until` to the virtual time the wall clock
//! asks for and reads its `snapshot` (which does not disturb the run) and its events.
//! The workload loops: when an iteration of the scenario ends (the built-in demo: a ring
//! all-reduce over every host), the next one starts at once on a fresh simulator with the
//! next seed, its counters added on top of those of the finished iterations, so the
//! stream's counters stay cumulative and its clock monotonic. A link failed through the
//! API goes down in the running simulator (routing reacts after the detection delay,
//! the simulator's own reroute path and events) and stays down in later iterations until
//! it is restored.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::{Duration, Instant as WallInstant};

use anyhow::Context;
use cc_algos::{Instant, Rate};
use fabric_api::{Column, FabricInfo, PortCounters, Snapshot};
use scenario::{CompileCtx, Scenario, Workplan};
use sim::{CcChoice, RunState, Sim, SimConfig};
use topo::{Fabric, LinkId};

use super::config::SourceSpec;
use super::source::{Actuator, Sample, Source, SourceMap};

/// The built-in demo: a ring all-reduce over every host, 256 KB per rank.
pub const DEMO_SCENARIO: &str = "name = \"demo: looping ring all-reduce\"\n\n[[workload]]\nkind = \"ring_allreduce\"\nsize = \"256KB\"\n";

/// At most this much wall-clock time is spent simulating per sample; a source that
/// cannot keep up falls behind the wall clock instead of stalling the collector.
const BUDGET: Duration = Duration::from_millis(250);

/// Time from a failure to the simulator's routing reacting (virtual).
const DETECT: cc_algos::Duration = cc_algos::Duration::micros(10);

/// A PAUSE storm played into the simulation (`--storm-host`): host `host`'s NIC sends
/// its leaf a PAUSE of priority `priority` with the longest quanta every
/// [`STORM_EVERY`] from `at` on, until `until` (stream time, virtual; `None`: for
/// good). An iteration starting before `until` storms (from its start, or from `at`)
/// and runs until `until` whatever the scenario's stop (so the next one runs without
/// it); flows into the stormed host never finish meanwhile.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StormSpec {
    /// The storming host.
    pub host: u32,
    /// Its PFC priority.
    pub priority: u8,
    /// Start, ns of stream time.
    pub at: u64,
    /// End, ns of stream time.
    pub until: Option<u64>,
}

/// Time between two PAUSE frames of a storming host (virtual): a third of the longest
/// quanta at 100 Gb/s (65,535 × 512 bit times = 335 µs), so the pause never lapses.
pub const STORM_EVERY: cc_algos::Duration = cc_algos::Duration::micros(100);

/// The simulator source.
#[derive(Debug)]
pub struct SimSource {
    fabric: Arc<Fabric>,
    info: FabricInfo,
    plan: Workplan,
    cfg: SimConfig,
    ratio: f64,
    name: String,
    sim: Sim,
    iteration: u64,
    /// Virtual time at which the running iteration started, ns.
    offset_ns: u64,
    /// Counters of the finished iterations.
    base: PortCounters,
    /// CNPs, NACKs and finished flows of the finished iterations.
    base_flows: (u64, u64, u64),
    /// Links failed through the API, with their failure index in the running simulator.
    failed: BTreeMap<LinkId, usize>,
    /// The storm to play, if any.
    storm: Option<StormSpec>,
    /// Most virtual time one sample may advance, ns (see [`SimSource::set_step`]).
    max_step_ns: u64,
}

/// Opens the source a spec names; `interval` is the collector's sampling interval.
pub fn open(spec: &SourceSpec, interval: Duration) -> anyhow::Result<Box<dyn Source>> {
    match spec {
        SourceSpec::Sim {
            fabric,
            scenario,
            ratio,
            seed,
            storm,
        } => {
            let mut s = SimSource::new(fabric, scenario.as_deref(), *ratio, *seed)?;
            s.set_step(interval);
            if let Some(st) = storm {
                s.set_storm(*st)?;
            }
            Ok(Box::new(s))
        }
        SourceSpec::Testbed { fabric } => {
            let f = load_fabric(fabric).with_context(|| format!("--fabric {fabric}"))?;
            Ok(Box::new(super::testbed_source::TestbedSource::open(f)?))
        }
        SourceSpec::Netns { fabric, prefix } => {
            let f = load_fabric(fabric).with_context(|| format!("--fabric {fabric}"))?;
            Ok(Box::new(super::testbed_source::TestbedSource::adopt(
                f, prefix,
            )?))
        }
        SourceSpec::Infiniband { fabric, attach } => {
            let f = load_fabric(fabric).with_context(|| format!("--fabric {fabric}"))?;
            Ok(Box::new(match attach {
                None => super::ib_source::IbSource::open(f)?,
                Some(a) => super::ib_source::IbSource::attach(f, a)?,
            }))
        }
        SourceSpec::HostNetns { fabric, switch } => {
            let f = load_fabric(fabric).with_context(|| format!("--fabric {fabric}"))?;
            Ok(Box::new(super::testbed_source::TestbedSource::adopt_here(
                f, switch,
            )?))
        }
        SourceSpec::Observe(spec) => {
            let f =
                load_fabric(&spec.fabric).with_context(|| format!("--fabric {}", spec.fabric))?;
            Ok(Box::new(super::observe_source::ObserveSource::open(
                spec, f,
            )?))
        }
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

/// `a += b`, column by column (a column absent in `a` is taken from `b`).
fn add_columns(a: &mut Option<Column>, b: &Option<Column>) {
    let Some(b) = b else { return };
    match a {
        None => *a = Some(b.clone()),
        Some(a) => {
            let mut v = a.to_dense();
            for (i, x) in b.nonzero() {
                if let Some(s) = v.get_mut(i) {
                    *s += x;
                }
            }
            *a = Column::Dense(v);
        }
    }
}

/// `a += b` for every counter.
fn add_counters(a: &mut PortCounters, b: &PortCounters) {
    for (x, y) in [
        (&mut a.tx_bytes, &b.tx_bytes),
        (&mut a.rx_bytes, &b.rx_bytes),
        (&mut a.tx_pkts, &b.tx_pkts),
        (&mut a.rx_pkts, &b.rx_pkts),
        (&mut a.drops_buffer, &b.drops_buffer),
        (&mut a.drops_failure, &b.drops_failure),
        (&mut a.drops_no_route, &b.drops_no_route),
        (&mut a.drops_kernel, &b.drops_kernel),
        (&mut a.ecn_marks, &b.ecn_marks),
        (&mut a.trims, &b.trims),
        (&mut a.paused_ns, &b.paused_ns),
    ] {
        add_columns(x, y);
    }
    for (x, y) in [(&mut a.pfc_tx, &b.pfc_tx), (&mut a.pfc_rx, &b.pfc_rx)] {
        for (p, c) in y {
            let mut sum = x.remove(p);
            add_columns(&mut sum, &Some(c.clone()));
            if let Some(sum) = sum {
                x.insert(*p, sum);
            }
        }
    }
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
        let mut cfg = SimConfig {
            seed,
            pfc: true,
            ..SimConfig::default()
        }
        .with_cc_defaults("dcqcn".parse::<CcChoice>().map_err(anyhow::Error::msg)?);
        cfg.apply(&plan.network)
            .map_err(|e| anyhow::anyhow!("scenario [network]: {e}"))?;
        if cfg.stop.is_none() {
            // An iteration that never ends (a long-lived flow, a deadlock) is cut here and
            // the next one starts.
            cfg.stop = Some(Instant::ZERO + cc_algos::Duration::millis(50));
        }
        let mut sim = Sim::from_fabric(&f, cfg.clone(), &plan)?;
        sim.enable_events();
        let info = sim.fabric_info();
        Ok(SimSource {
            name: format!("{} on {}", plan.name, f.name()),
            fabric: Arc::new(f),
            info,
            plan,
            cfg,
            ratio,
            sim,
            iteration: 0,
            offset_ns: 0,
            base: PortCounters::default(),
            base_flows: (0, 0, 0),
            failed: BTreeMap::new(),
            storm: None,
            max_step_ns: u64::MAX,
        })
    }

    /// Sampled every `interval`: one sample advances the simulation by at most two
    /// intervals of virtual time (`2 × interval × ratio`). A simulation slower than its
    /// ratio (a loaded machine, a large fabric) falls behind the wall clock and catches up
    /// at most at twice its pace, instead of jumping to the wall clock in one step: a jump
    /// of 1.8 s at `--ratio 1` once held a whole 1.5 s PAUSE storm between two snapshots,
    /// and the watchdog, which polls at the snapshots, never saw it.
    pub fn set_step(&mut self, interval: Duration) {
        self.max_step_ns = (2.0 * interval.as_secs_f64() * self.ratio * 1e9).max(1.0) as u64;
    }

    /// Plays `storm` from now on: the running iteration restarts with it (the first
    /// one, as the source has not run yet when `fabric serve` sets it).
    pub fn set_storm(&mut self, storm: StormSpec) -> anyhow::Result<()> {
        let hosts = self.fabric.num_hosts();
        if storm.host as usize >= hosts {
            anyhow::bail!(
                "--storm-host {}: the fabric {} has hosts 0 to {}",
                storm.host,
                self.fabric.name(),
                hosts.saturating_sub(1)
            );
        }
        if storm.priority > 7 {
            anyhow::bail!("storm priority {}: expected 0 to 7", storm.priority);
        }
        self.storm = Some(storm);
        let mut sim = Sim::from_fabric(&self.fabric, self.iteration_config(), &self.plan)?;
        sim.enable_events();
        self.sim = sim;
        Ok(())
    }

    /// The configuration of the iteration starting now (at `offset_ns`): the next seed,
    /// and the storm while its window is open (the iteration cut at its end).
    fn iteration_config(&self) -> SimConfig {
        let mut cfg = self.cfg.clone();
        cfg.seed = self.cfg.seed.wrapping_add(self.iteration);
        let Some(st) = self.storm else {
            return cfg;
        };
        if st.until.is_some_and(|u| u <= self.offset_ns) {
            return cfg;
        }
        let local = |ns: u64| Instant::ZERO + cc_algos::Duration::nanos(ns - self.offset_ns);
        cfg.storm = Some(sim::config::Storm {
            host: st.host,
            at: local(st.at.max(self.offset_ns)),
            every: STORM_EVERY,
            priority: st.priority,
        });
        // A storming iteration runs until the storm ends, past the scenario's stop: a
        // restart in the middle would empty the stormed queues.
        cfg.stop = st.until.map(local);
        cfg
    }

    /// Ends the finished iteration and starts the next, with the failed links down.
    fn next_iteration(&mut self) -> Result<(), String> {
        let last = self.sim.snapshot();
        add_counters(&mut self.base, &last.counters);
        self.base_flows.0 += last.totals.cnps;
        self.base_flows.1 += last.totals.nacks;
        self.base_flows.2 += last.totals.flows_finished;
        self.offset_ns += self.sim.now().nanos().max(1);
        self.iteration += 1;
        let cfg = self.iteration_config();
        let mut sim = Sim::from_fabric(&self.fabric, cfg, &self.plan).map_err(|e| e.to_string())?;
        sim.enable_events();
        let links: Vec<LinkId> = self.failed.keys().copied().collect();
        for l in links {
            let i = sim
                .fail_link(l, cc_algos::Duration::ZERO)
                .map_err(|e| e.to_string())?;
            self.failed.insert(l, i);
        }
        // Those links were already down: their re-injection at time 0 is no news.
        sim.run_until(Instant::ZERO);
        sim.drain_events();
        self.sim = sim;
        Ok(())
    }

    /// The cumulative snapshot now, numbered `seq`.
    fn snapshot(&self, seq: u64) -> Snapshot {
        let mut s = self.sim.snapshot();
        s.seq = seq;
        s.time.ns += self.offset_ns;
        s.source.name = self.name.clone();
        add_counters(&mut s.counters, &self.base);
        s.sum_ports_into_totals();
        s.totals.cnps += self.base_flows.0;
        s.totals.nacks += self.base_flows.1;
        s.totals.flows_finished += self.base_flows.2;
        if let Some(flows) = &mut s.flows {
            let per = self.plan.flows.len() as u64;
            for f in flows {
                f.id += self.iteration * per;
            }
        }
        s
    }
}

impl Source for SimSource {
    fn map(&self) -> SourceMap {
        SourceMap::new(self.info.clone(), Some(self.fabric.clone()))
    }

    fn sample(&mut self, elapsed: Duration, seq: u64) -> Result<Sample, String> {
        let now_ns = self.offset_ns + self.sim.now().nanos();
        let target = ((elapsed.as_secs_f64() * self.ratio * 1e9) as u64)
            .min(now_ns.saturating_add(self.max_step_ns));
        let wall = WallInstant::now();
        let mut events = Vec::new();
        loop {
            let local = target.saturating_sub(self.offset_ns);
            let state = self
                .sim
                .run_until(Instant::from_picos(local.saturating_mul(1000)));
            for mut e in self.sim.drain_events() {
                e.seq = seq;
                e.time.ns += self.offset_ns;
                events.push(e);
            }
            if state == RunState::Running {
                break;
            }
            // Never leave a finished simulator in place: commands go to the running one.
            self.next_iteration()?;
            if self.offset_ns >= target || wall.elapsed() > BUDGET {
                break;
            }
        }
        let t = WallInstant::now();
        let snapshot = self.snapshot(seq);
        Ok(Sample {
            snapshot: Some(snapshot),
            events,
            read_ns: Some(t.elapsed().as_nanos() as u64),
        })
    }

    fn actuator(&mut self) -> Option<&mut dyn Actuator> {
        Some(self)
    }
}

impl Actuator for SimSource {
    fn fail_link(&mut self, link: LinkId) -> Result<String, String> {
        if self.failed.contains_key(&link) {
            return Err(format!("link {} is already down", link.0));
        }
        let i = self
            .sim
            .fail_link(link, DETECT)
            .map_err(|e| e.to_string())?;
        self.failed.insert(link, i);
        Ok(format!(
            "link {} failed; the simulator re-routes after {} us",
            link.0,
            DETECT.as_picos() / 1_000_000
        ))
    }

    fn restore_link(&mut self, link: LinkId) -> Result<String, String> {
        let Some(i) = self.failed.remove(&link) else {
            return Err(format!("link {} is not down", link.0));
        };
        self.sim.restore_failure(i).map_err(|e| e.to_string())?;
        Ok(format!("link {} restored", link.0))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_storm_runs_in_the_iterations_of_its_window_and_is_checked() {
        let mut s = SimSource::new("fat-tree-k4", None, 1e-3, 1).unwrap();
        let ms = |x: u64| x * 1_000_000;
        let bad = StormSpec {
            host: 16,
            priority: 0,
            at: 0,
            until: None,
        };
        let e = s.set_storm(bad).unwrap_err().to_string();
        assert!(
            e.contains("--storm-host 16: the fabric fat-tree-k4 has hosts 0 to 15"),
            "{e}"
        );
        let storm = StormSpec {
            host: 3,
            priority: 0,
            at: ms(5),
            until: Some(ms(20)),
        };
        s.set_storm(storm).unwrap();
        let local = |x: u64| Instant::ZERO + cc_algos::Duration::nanos(x);
        let c = s.iteration_config();
        let st = c.storm.unwrap();
        assert_eq!(
            (st.host, st.at, c.stop),
            (3, local(ms(5)), Some(local(ms(20))))
        );
        // An iteration starting inside the window storms from its start, until the end.
        s.offset_ns = ms(12);
        let c = s.iteration_config();
        assert_eq!(c.storm.unwrap().at, local(0));
        assert_eq!(c.stop, Some(local(ms(8))));
        // After it: the scenario's own stop, no storm.
        s.offset_ns = ms(20);
        let c = s.iteration_config();
        assert!(c.storm.is_none());
        assert_eq!(c.stop, s.cfg.stop);
    }

    /// A simulation behind the wall clock (here: sampled 10 s after it started, as after
    /// a slow start on a loaded machine) advances two intervals of virtual time per
    /// sample; it used to jump to the wall clock at once, so a PAUSE storm shorter than
    /// the jump fell between two snapshots and the watchdog never saw it.
    #[test]
    fn a_sample_behind_the_wall_clock_advances_at_most_two_intervals() {
        let mut s = SimSource::new("fat-tree-k4", None, 1e-3, 1).unwrap();
        s.set_step(Duration::from_millis(100));
        let (mut last, mut seq) = (0, 0);
        for _ in 0..4 {
            let t = s
                .sample(Duration::from_secs(10), seq)
                .unwrap()
                .snapshot
                .unwrap()
                .time
                .ns;
            assert!(t > last, "it moves on: {t} ns");
            assert!(t - last <= 200_000, "{} ns in one sample", t - last);
            (last, seq) = (t, seq + 1);
        }
    }

    #[test]
    fn counters_stay_cumulative_across_iterations() {
        let mut s = SimSource::new("fat-tree-k4", None, 1e-3, 1).unwrap();
        let (mut last, mut last_t, mut seq) = (0, 0, 0);
        // 10 ms of virtual time: many all-reduce iterations. A sample may stop short of
        // its target (the wall-clock budget, on a slow build); later samples catch up.
        let target = Duration::from_secs(10);
        while last_t + 200_000 < 10_000_000 {
            let snap = s.sample(target, seq).unwrap().snapshot.unwrap();
            snap.validate(&s.info).unwrap();
            assert!(snap.totals.tx_bytes >= last, "counters never decrease");
            assert!(snap.time.ns >= last_t, "time never goes back");
            last = snap.totals.tx_bytes;
            last_t = snap.time.ns;
            seq += 1;
            assert!(seq < 200, "no progress: {last_t} ns");
        }
        assert!(s.iteration >= 10, "{} iterations", s.iteration);
        // Every iteration moves the same bytes (same workload, no failure).
        let per_iteration = last as f64 / (s.iteration as f64 + 0.5);
        assert!(per_iteration > 1e6, "{per_iteration}");
    }

    #[test]
    fn a_failed_link_stays_down_across_iterations_until_restored() {
        let mut s = SimSource::new("fat-tree-k4", None, 1e-3, 1).unwrap();
        let leaf = s.fabric.name_index()["pod0-leaf0"];
        let up = s.fabric.port_link(leaf, 2);
        s.sample(Duration::from_millis(100), 0).unwrap();
        s.fail_link(up).unwrap();
        assert!(s.fail_link(up).unwrap_err().contains("already down"));
        let Sample {
            snapshot,
            events: ev,
            ..
        } = s.sample(Duration::from_secs(2), 1).unwrap();
        let snap = snapshot.unwrap();
        let kinds: Vec<String> = ev.iter().map(|e| format!("{:?}", e.what)).collect();
        assert!(kinds[0].starts_with("LinkDown"), "{kinds:?}");
        assert!(kinds.iter().any(|k| k.starts_with("Reroute")), "{kinds:?}");
        assert!(kinds.iter().all(|k| !k.starts_with("LinkUp")), "{kinds:?}");
        assert!(s.iteration >= 2, "iterations ran with the link down");
        assert_eq!(snap.gauges.oper_down, vec![2 * up.0, 2 * up.0 + 1]);
        let tx = snap.counters.tx_bytes.as_ref().unwrap();
        let before = tx.get(2 * up.0 as usize);
        let snap = s
            .sample(Duration::from_secs(4), 2)
            .unwrap()
            .snapshot
            .unwrap();
        let tx2 = snap.counters.tx_bytes.as_ref().unwrap();
        assert_eq!(
            tx2.get(2 * up.0 as usize),
            before,
            "nothing crosses a failed link"
        );
        s.restore_link(up).unwrap();
        let Sample {
            snapshot,
            events: ev,
            ..
        } = s.sample(Duration::from_secs(6), 3).unwrap();
        let snap = snapshot.unwrap();
        assert!(snap.gauges.oper_down.is_empty());
        assert!(
            ev.iter()
                .any(|e| matches!(e.what, fabric_api::EventKind::LinkUp { .. }))
        );
        assert!(s.restore_link(up).unwrap_err().contains("not down"));
    }
}
