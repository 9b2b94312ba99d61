//! `--demo` (the default): the packet simulator (crate `sim`) running real traffic on a
//! `topo` fabric, paced to wall-clock time on its own thread — a ring all-reduce over half
//! the hosts, an incast beside it, and a link under the all-reduce failing and being
//! repaired, every `cycle` of simulated time. The workloads repeat (`Sim::set_repeat`),
//! so the demo runs for as long as it is watched; `sim::pacing::Pacer` ties simulated
//! time to the wall clock.
//!
//! Snapshots and events come from `Sim::take_snapshot` / `drain_events` in the
//! `fabric-api` schema, so the demo goes through the same aggregation and recording
//! path as a daemon's stream.

use crate::app::{Msg, SourceStatus};
use crate::error::{Error, Result};
use crate::ingest::Aggregator;
use crate::source::{Control, Recorder};
use cc_algos::{Bytes, Duration, Instant, RedEcn};
use fabric_api::{FabricInfo, Frame};
use scenario::{CompileCtx, Scenario};
use sim::{RunState, Sim, SimConfig};
use std::sync::mpsc::{Receiver, RecvTimeoutError, Sender};

/// What to simulate and how fast.
#[derive(Debug, Clone)]
pub struct DemoConfig {
    /// A `topo` preset (`fabric topo presets`): `fat-tree-k8`, `deepseek-mpft`, …
    pub preset: String,
    /// A scenario file instead of the built-in workload.
    pub scenario: Option<std::path::PathBuf>,
    /// Simulated time between two snapshots.
    pub step: Duration,
    /// Simulated seconds per wall-clock second.
    pub ratio: f64,
    /// Seed of the first epoch.
    pub seed: u64,
    /// When, in each cycle, the victim link fails and when it is repaired.
    pub fail_at: Duration,
    /// See `fail_at`.
    pub repair_at: Duration,
    /// Length of the failure cycle.
    pub cycle: Duration,
}

impl Default for DemoConfig {
    fn default() -> Self {
        DemoConfig {
            preset: "fat-tree-k8".into(),
            scenario: None,
            step: Duration::micros(20),
            ratio: 2e-4,
            seed: 1,
            fail_at: Duration::millis(2),
            repair_at: Duration::millis(6),
            cycle: Duration::millis(10),
        }
    }
}

/// The built-in workload for `hosts` hosts: a ring all-reduce over the first half, an
/// incast from a quarter of the hosts into one host of the second half.
pub fn builtin_scenario(hosts: u32) -> String {
    let half = (hosts / 2).max(2);
    let q0 = half + 1;
    let q1 = (half + 1 + hosts / 4).min(hosts).max(q0 + 1);
    format!(
        "name = \"demo: all-reduce beside an incast\"\n\
         [[workload]]\nname = \"all-reduce\"\nkind = \"ring_allreduce\"\nhosts = \"0..{half}\"\nsize = \"256MB\"\npriority = 3\n\
         [[workload]]\nname = \"incast\"\nkind = \"incast\"\nsenders = \"{q0}..{q1}\"\nreceiver = {half}\nsize = \"4MB\"\npriority = 3\n"
    )
}

/// The simulation behind the demo, stepped by the caller.
#[derive(Debug)]
pub struct Demo {
    fabric: topo::Fabric,
    sim: Sim,
    step: Duration,
    seq: u64,
    victim: topo::LinkId,
    failure: Option<usize>,
    fail_at: u64,
    repair_at: u64,
    cycle: u64,
}

/// Time routing takes to notice the failure.
const DETECT: Duration = Duration::micros(50);

fn sim_config(seed: u64) -> SimConfig {
    SimConfig {
        seed,
        cc: sim::CcChoice::Algo(cc_algos::CcKind::Dcqcn(cc_algos::DcqcnPreset::Paper)),
        pfc: true,
        ecn: Some(RedEcn::dcqcn_paper()),
        pfc_xoff: Bytes(60_000),
        pfc_xon: Bytes(30_000),
        // workloads repeat until this (simulated) time: hours of wall-clock demo
        stop: Some(Instant::ZERO + Duration::secs(1000)),
        // the 1 ms retransmit timeout the demo's snapshots were taken with (the
        // simulator's default is now derived from the network, as htsim's)
        rto: Some(Duration::millis(1)),
        ..SimConfig::default()
    }
}

impl Demo {
    /// Build the fabric, the workload and the first epoch.
    pub fn new(c: &DemoConfig) -> Result<Demo> {
        let bad = |msg: String| Error::Config {
            path: "--demo".into(),
            msg,
        };
        let fabric = topo::presets::build(&c.preset)
            .map_err(|e| bad(format!("--preset {}: {e}", c.preset)))?;
        let hosts = fabric.num_hosts() as u32;
        let scen = match &c.scenario {
            Some(p) => Scenario::from_file(p).map_err(|e| bad(e.to_string()))?,
            None => Scenario::from_toml_str(&builtin_scenario(hosts), "built-in demo")
                .map_err(|e| bad(e.to_string()))?,
        };
        let rate = cc_algos::Rate::bps(
            fabric
                .links()
                .first()
                .map_or(100_000_000_000, |l| l.rate_bps),
        );
        let plan = scen
            .compile(&CompileCtx::new(hosts, rate, c.seed))
            .map_err(|e| bad(e.to_string()))?;
        let cfg = sim_config(c.seed);
        let mut sim =
            Sim::from_fabric(&fabric, cfg.clone(), &plan).map_err(|e| bad(e.to_string()))?;
        sim.enable_events();
        let victim = victim_link(&fabric);
        Ok(Demo {
            fabric,
            sim,
            step: c.step,
            seq: 0,
            victim,
            failure: None,
            fail_at: c.fail_at.as_picos(),
            repair_at: c.repair_at.as_picos(),
            cycle: c.cycle.as_picos(),
        })
    }

    /// The fabric map (first frame).
    pub fn info(&self) -> FabricInfo {
        self.sim.fabric_info()
    }

    /// The fabric.
    pub fn fabric(&self) -> &topo::Fabric {
        &self.fabric
    }

    /// Simulated time now.
    pub fn now(&self) -> Instant {
        self.sim.now()
    }

    /// Advance one step: the snapshot at its end and the events on the way.
    pub fn step(&mut self) -> Result<Vec<Frame>> {
        let now = self.sim.now();
        let next =
            Instant::from_picos((now.picos() / self.step.as_picos() + 1) * self.step.as_picos());
        self.failures(now, next)?;
        let state = self.sim.run_until(next);
        let mut out: Vec<Frame> = self
            .sim
            .drain_events()
            .into_iter()
            .map(Frame::Event)
            .collect();
        let mut s = self.sim.take_snapshot();
        self.seq += 1;
        s.seq = self.seq;
        out.push(Frame::Snapshot(s));
        if state == RunState::Finished {
            return Err(Error::Config {
                path: "--demo".into(),
                msg: "the simulation ended (deadlock or stop time)".into(),
            });
        }
        Ok(out)
    }

    /// Fail or repair the victim link when `(now, next]` crosses a point of the cycle.
    fn failures(&mut self, now: Instant, next: Instant) -> Result<()> {
        let bad = |e: sim::SimError| Error::Config {
            path: "--demo".into(),
            msg: e.to_string(),
        };
        let base = now.picos() / self.cycle * self.cycle;
        for at in [
            base + self.fail_at,
            base + self.repair_at,
            base + self.cycle + self.fail_at,
        ] {
            if !(now.picos() < at && at <= next.picos()) {
                continue;
            }
            self.sim.run_until(Instant::from_picos(at));
            match self.failure.take() {
                None if (at % self.cycle) == self.fail_at => {
                    self.failure = Some(self.sim.fail_link(self.victim, DETECT).map_err(bad)?)
                }
                Some(i) if (at % self.cycle) == self.repair_at => {
                    self.sim.restore_failure(i).map_err(bad)?
                }
                other => self.failure = other,
            }
        }
        Ok(())
    }
}

/// An uplink of the first host's leaf: the all-reduce's ring crosses it.
fn victim_link(f: &topo::Fabric) -> topo::LinkId {
    let Some(att) = f.attachment(topo::NodeId(0), 0) else {
        return topo::LinkId(0);
    };
    let leaf = att.leaf;
    (0..f.degree(leaf) as u16)
        .find(|&p| f.direction(leaf, p) == topo::Direction::Up)
        .map_or(att.link, |p| f.port_link(leaf, p))
}

/// Run the demo paced at `ratio` simulated seconds per second until stopped.
pub fn run(
    mut demo: Demo,
    c: &DemoConfig,
    tx: Sender<Msg>,
    ctl: Receiver<Control>,
    mut rec: Option<Recorder>,
) {
    let info = demo.info();
    let (mut agg, view) = Aggregator::new(info.clone());
    if let Some(r) = &mut rec {
        let _ = r.frame(&Frame::Fabric(info));
    }
    let Ok(mut pacer) = sim::pacing::Pacer::new(c.ratio) else {
        return finish(rec);
    };
    let wall0 = std::time::Instant::now();
    let wall = || wall0.elapsed().as_nanos() as u64;
    pacer.target(wall());
    let label = format!(
        "demo {} (simulated, 1 s = {})",
        demo.fabric().name(),
        crate::units::duration((c.ratio * 1e9) as u64)
    );
    let _ = tx.send(Msg::Status(SourceStatus::Live(label)));
    loop {
        let next = Instant::from_picos(demo.now().picos() + c.step.as_picos());
        let wait = std::time::Duration::from_nanos(pacer.wall_until(next, wall()));
        match ctl.recv_timeout(wait) {
            Ok(Control::Stop) | Err(RecvTimeoutError::Disconnected) => break,
            Ok(_) | Err(RecvTimeoutError::Timeout) => {}
        }
        let frames = match demo.step() {
            Ok(f) => f,
            Err(e) => {
                let reason = e.to_string();
                let _ = tx.send(Msg::Status(SourceStatus::Disconnected {
                    name: "demo".into(),
                    since: crate::source::time_of_day(),
                    reason,
                }));
                break;
            }
        };
        for f in frames {
            if let Some(r) = &mut rec
                && r.frame(&f).is_err()
            {
                rec = None;
            }
            for m in agg.frame(f, &view) {
                if tx.send(m).is_err() {
                    return finish(rec);
                }
            }
        }
        // fell behind by more than a second of wall time: go on from here, do not race
        let should = pacer.target(wall());
        if should.picos().saturating_sub(demo.now().picos()) as f64 > c.ratio * 1e12 {
            pacer.rebase(demo.now());
        }
    }
    finish(rec);
}

fn finish(rec: Option<Recorder>) {
    if let Some(r) = rec {
        let _ = r.finish();
    }
}
