//! `--demo` (the default): the packet simulator (crate `sim`) running real traffic on a
//! `topo` fabric, paced to wall-clock time on its own thread — in every plane a ring
//! all-reduce and an incast beside it, scaled to the fabric ([`builtin_scenario`]), and a
//! link under the all-reduce failing and being repaired, every `cycle` of simulated time.
//! The workloads repeat (`Sim::set_repeat`), and a simulation that ends (its stop time, a
//! deadlock) is followed by a fresh epoch whose clock goes on from there, so the demo runs
//! until it is quit; `sim::pacing::Pacer` ties simulated time to the wall clock.
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
    /// Simulated time at which one simulation ends and the next epoch starts.
    pub stop: Duration,
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
            // hours of wall-clock demo per epoch at the default ratio
            stop: Duration::secs(1000),
        }
    }
}

/// Most ranks of the built-in all-reduce (all planes together) (a 64-rank ring is 8,064 flows).
pub const MAX_RING: usize = 64;
/// Most senders of the built-in incast (all planes together).
pub const MAX_INCAST: usize = 16;

/// The built-in workload, scaled to `fabric`: in every plane (or once, when every host
/// has a port in every plane) a ring all-reduce over hosts of the first half of that
/// plane's hosts, spread evenly over them so the ring crosses the fabric, and an incast
/// from a quarter of the hosts into the first host of the second half. On a multi-plane
/// fabric every plane carries traffic; [`MAX_RING`] ranks and [`MAX_INCAST`] senders are
/// shared among the planes, so a large fabric costs the simulator no more than a small one.
pub fn builtin_scenario(fabric: &topo::Fabric) -> String {
    let mut out = String::from("name = \"demo: all-reduce beside an incast\"\n");
    let groups = plane_groups(fabric);
    // as many hosts busy in all as on one plane: the simulation keeps pace
    let (ring, incast) = (
        (MAX_RING / groups.len()).max(4),
        (MAX_INCAST / groups.len()).max(2),
    );
    for (p, hosts) in groups.iter().enumerate() {
        let half = (hosts.len() / 2).max(2).min(hosts.len());
        let ranks = spread(&hosts[..half], ring);
        let rest = &hosts[half.min(hosts.len() - 1)..];
        let quarter = (1 + hosts.len() / 4).min(rest.len());
        let (receiver, senders) = (rest[0], spread(&rest[1..quarter], incast));
        let list = |v: &[u32]| v.iter().map(u32::to_string).collect::<Vec<_>>().join(", ");
        out += &format!(
            "[[workload]]\nname = \"all-reduce {p}\"\nkind = \"ring_allreduce\"\nhosts = [{}]\nsize = \"256MB\"\npriority = 3\n",
            list(&ranks)
        );
        if !senders.is_empty() {
            out += &format!(
                "[[workload]]\nname = \"incast {p}\"\nkind = \"incast\"\nsenders = [{}]\nreceiver = {receiver}\nsize = \"4MB\"\npriority = 3\n",
                list(&senders)
            );
        }
    }
    out
}

/// The hosts of each plane, when hosts sit in one plane each (DeepSeek's multi-plane
/// fat-tree); all hosts as one group otherwise (one plane, or dual-homed NICs).
fn plane_groups(f: &topo::Fabric) -> Vec<Vec<u32>> {
    let planes = f.num_planes().max(1);
    let single = f.hosts().all(|h| f.host_planes(h).count() <= 1);
    if planes == 1 || !single {
        return vec![f.hosts().map(|h| h.0).collect()];
    }
    let mut groups = vec![Vec::new(); planes];
    for h in f.hosts() {
        if let Some(p) = f.host_planes(h).next() {
            groups[p as usize].push(h.0);
        }
    }
    groups.retain(|g| g.len() >= 3);
    groups
}

/// At most `n` of `v`, evenly spaced from its start.
fn spread(v: &[u32], n: usize) -> Vec<u32> {
    if v.len() <= n {
        return v.to_vec();
    }
    (0..n).map(|i| v[i * v.len() / n]).collect()
}

/// The simulation behind the demo, stepped by the caller.
#[derive(Debug)]
pub struct Demo {
    fabric: topo::Fabric,
    sim: Sim,
    plan: scenario::Workplan,
    seed: u64,
    start_seed: u64,
    /// Simulated time of the epochs before this one, ps (a snapshot's time is this plus
    /// the simulator's own clock, so time never runs backwards across epochs).
    offset_ps: u64,
    stop: Duration,
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

fn sim_config(seed: u64, stop: Duration) -> SimConfig {
    SimConfig {
        seed,
        cc: sim::CcChoice::Algo(cc_algos::CcKind::Dcqcn(cc_algos::DcqcnPreset::Paper)),
        pfc: true,
        ecn: Some(RedEcn::dcqcn_paper()),
        pfc_xoff: Bytes(60_000),
        pfc_xon: Bytes(30_000),
        // workloads repeat until this (simulated) time, then a new epoch starts
        stop: Some(Instant::ZERO + stop),
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
            None => Scenario::from_toml_str(&builtin_scenario(&fabric), "built-in demo")
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
        let sim = epoch(&fabric, &plan, c.seed, c.stop)?;
        let victim = victim_link(&fabric);
        Ok(Demo {
            fabric,
            sim,
            plan,
            seed: c.seed,
            start_seed: c.seed,
            offset_ps: 0,
            stop: c.stop,
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

    /// Simulated time now (across epochs).
    pub fn now(&self) -> Instant {
        Instant::from_picos(self.offset_ps + self.sim.now().picos())
    }

    /// Epochs started after the first (a simulation that ended, by a deadlock or its
    /// stop time, is followed by a fresh one with the next seed).
    pub fn epochs(&self) -> u64 {
        self.seed - self.start_seed
    }

    /// Advance one step: the snapshot at its end and the events on the way. Runs for
    /// ever: the workloads repeat, and a simulation that ends is followed by a new epoch.
    pub fn step(&mut self) -> Result<Vec<Frame>> {
        let now = self.sim.now();
        let next =
            Instant::from_picos((now.picos() / self.step.as_picos() + 1) * self.step.as_picos());
        self.failures(now, next)?;
        let state = self.sim.run_until(next);
        let offset_ns = self.offset_ps / 1000;
        let mut out: Vec<Frame> = self
            .sim
            .drain_events()
            .into_iter()
            .map(|mut e| {
                e.time.ns += offset_ns;
                Frame::Event(e)
            })
            .collect();
        let mut s = self.sim.take_snapshot();
        self.seq += 1;
        s.seq = self.seq;
        s.time.ns += offset_ns;
        out.push(Frame::Snapshot(s));
        if state == RunState::Finished {
            self.next_epoch()?;
        }
        Ok(out)
    }

    /// A fresh simulation of the same workload with the next seed, its clock continuing
    /// where this one stopped.
    fn next_epoch(&mut self) -> Result<()> {
        self.offset_ps += self.sim.now().picos();
        self.seed += 1;
        self.sim = epoch(&self.fabric, &self.plan, self.seed, self.stop)?;
        self.failure = None;
        Ok(())
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

/// One epoch of the demo: the simulator on `plan`, its workloads repeating until the
/// stop time, reporting events.
fn epoch(
    fabric: &topo::Fabric,
    plan: &scenario::Workplan,
    seed: u64,
    stop: Duration,
) -> Result<Sim> {
    let bad = |e: sim::SimError| Error::Config {
        path: "--demo".into(),
        msg: e.to_string(),
    };
    let mut sim = Sim::from_fabric(fabric, sim_config(seed, stop), plan).map_err(bad)?;
    sim.set_repeat(Duration::ZERO).map_err(bad)?;
    sim.enable_events();
    Ok(sim)
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
    Recorder::record_or_stop(&mut rec, &Frame::Fabric(info), &tx);
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
            Recorder::record_or_stop(&mut rec, &f, &tx);
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
