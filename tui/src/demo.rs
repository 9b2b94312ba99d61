//! `--demo` (the default): the packet simulator (crate `sim`) running real traffic on a
//! `topo` fabric, paced to wall-clock time on its own thread — a ring all-reduce over half
//! the hosts, an incast beside it, and a link under the all-reduce failing and being
//! repaired. When the workload is done it starts again (a new epoch, the next seed);
//! counters restart, which the rate code reads as a reset, and time keeps going.
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
use scenario::{CompileCtx, Scenario, Workplan};
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
    /// When, in each epoch, the victim link fails and when it is repaired.
    pub fail_at: Duration,
    /// See `fail_at`.
    pub repair_at: Duration,
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
    plan: Workplan,
    cfg: SimConfig,
    sim: Sim,
    step: Duration,
    epoch: u64,
    /// Simulated time (ns) at which the current epoch started, on the demo's clock.
    offset_ns: u64,
    last_ns: u64,
    seq: u64,
    victim: topo::LinkId,
    failure: Option<usize>,
    fail_at: Instant,
    repair_at: Instant,
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
            plan,
            cfg,
            sim,
            step: c.step,
            epoch: 0,
            offset_ns: 0,
            last_ns: 0,
            seq: 0,
            victim,
            failure: None,
            fail_at: Instant::ZERO + c.fail_at,
            repair_at: Instant::ZERO + c.repair_at,
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

    /// Epochs started so far (1 for the first).
    pub fn epoch(&self) -> u64 {
        self.epoch + 1
    }

    /// Simulated time of the last snapshot, ns since the demo started.
    pub fn now_ns(&self) -> u64 {
        self.last_ns
    }

    /// Advance one step: the snapshot at its end and the events on the way.
    pub fn step(&mut self) -> Result<Vec<Frame>> {
        let now = self.sim.now();
        let next = Instant::ZERO
            + Duration::picos(((now.picos() / self.step.as_picos()) + 1) * self.step.as_picos());
        self.failures(now, next)?;
        let state = self.sim.run_until(next);
        let mut out: Vec<Frame> = Vec::new();
        for mut e in self.sim.drain_events() {
            e.time.ns += self.offset_ns;
            e.seq = self.seq + 1;
            out.push(Frame::Event(e));
        }
        let mut s = self.sim.take_snapshot();
        s.time.ns += self.offset_ns;
        self.seq += 1;
        s.seq = self.seq;
        self.last_ns = s.time.ns;
        out.push(Frame::Snapshot(s));
        if state == RunState::Finished {
            self.next_epoch()?;
        }
        Ok(out)
    }

    fn failures(&mut self, now: Instant, next: Instant) -> Result<()> {
        let bad = |e: sim::SimError| Error::Config {
            path: "--demo".into(),
            msg: e.to_string(),
        };
        let (fail, repair) = (self.fail_at, self.repair_at);
        if self.failure.is_none() && now < fail && next >= fail {
            self.sim.run_until(fail);
            self.failure = Some(self.sim.fail_link(self.victim, DETECT).map_err(bad)?);
        }
        if let Some(i) = self.failure.filter(|_| now < repair && next >= repair) {
            self.sim.run_until(repair);
            self.sim.restore_failure(i).map_err(bad)?;
        }
        Ok(())
    }

    fn next_epoch(&mut self) -> Result<()> {
        self.epoch += 1;
        self.offset_ns = self.last_ns + self.step.as_nanos();
        self.cfg.seed += 1;
        self.sim = Sim::from_fabric(&self.fabric, self.cfg.clone(), &self.plan).map_err(|e| {
            Error::Config {
                path: "--demo".into(),
                msg: e.to_string(),
            }
        })?;
        self.sim.enable_events();
        self.failure = None;
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
    let wall0 = std::time::Instant::now();
    let label = |d: &Demo| {
        format!(
            "demo {} (sim, 1 s = {} simulated, epoch {})",
            d.fabric().name(),
            crate::units::duration((c.ratio * 1e9) as u64),
            d.epoch()
        )
    };
    let _ = tx.send(Msg::Status(SourceStatus::Live(label(&demo))));
    let mut epoch = demo.epoch();
    loop {
        // wall-clock instant at which the next step's simulated time is due
        let due = std::time::Duration::from_secs_f64(
            (demo.now_ns() + c.step.as_nanos()) as f64 / 1e9 / c.ratio,
        );
        let wait = due.saturating_sub(wall0.elapsed());
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
        if demo.epoch() != epoch {
            epoch = demo.epoch();
            let _ = tx.send(Msg::Status(SourceStatus::Live(label(&demo))));
        }
    }
    finish(rec);
}

fn finish(rec: Option<Recorder>) {
    if let Some(r) = rec {
        let _ = r.finish();
    }
}
