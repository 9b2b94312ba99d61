//! The simulator twin of a congestion run: the same fabric (star or `topo` fabric) at the
//! virtual rate, the same buffer, ECN, PFC thresholds, MTU, congestion control and
//! retransmission timeout, the same workplan — so that `report::compare` can put the
//! two side by side (`fabric testbed run --compare-sim`, the fabric tests), with the same
//! storming host and PFC watchdog when the run has them.
//!
//! What differs, and stays different: the simulator's links have a 500 ns propagation
//! delay and no OS between the switch and the wire; the veth engine's PFC reaction
//! time is its loop's lateness (tens of µs of virtual time), so its pauses arrive later
//! and its headroom is larger; ECMP hashes differ (each picks its own paths).

use cc_algos::pfcwd::WatchdogConfig;
use cc_algos::uec::ev::EvPolicyKind;
use cc_algos::{Bytes, Duration, Instant};
use sim::config::Storm;
use sim::config::{CcChoice, LbScheme, SimConfig};
use sim::net::{Net, NetBuilder};

use super::CongestionConfig;
use crate::{Error, Result};
use scenario::Workplan;

/// The simulator's settings for `cfg`.
pub fn sim_config(cfg: &CongestionConfig) -> SimConfig {
    let mut sc = SimConfig {
        mtu: Bytes(cfg.payload as u64 + 58),
        header: Bytes(58),
        cc: CcChoice::Algo(cfg.cc),
        pfc: cfg.pfc.is_some(),
        buffer: cfg.buffer,
        ecn: cfg.ecn,
        trim: cfg.trim,
        rto: Some(cfg.rto),
        seed: cfg.seed,
        lb: lb_scheme(cfg.spray),
        evs: cfg.evs,
        ..SimConfig::default()
    };
    if let Some(p) = cfg.pfc {
        sc.pfc_xoff = p.xoff;
        sc.pfc_xon = p.xon;
    }
    // The storm and the watchdog run on the veth switch's real clock; the twin runs the
    // same rule on virtual time, every duration divided by the time scale (a 100 ms
    // detection at scale 100 is 1 ms of simulated time: below SONiC's range, on purpose).
    let scale = cfg.scale().map_or(1, |s| s.0);
    let virt = |d: Duration| Duration::picos(d.as_picos() / scale);
    sc.pfcwd = cfg.pfcwd.map(|w| WatchdogConfig {
        detection: virt(w.detection),
        restoration: virt(w.restoration),
        action: w.action,
    });
    sc.storm = cfg.storm.map(|s| Storm {
        host: s.host as u32,
        at: Instant::ZERO + s.at,
        every: virt(s.every),
        priority: s.priority,
    });
    sc
}

/// The simulator's load balancing for the endpoints' spraying: the same EV policy
/// (`cc-algos`), or per-flow ECMP when flows keep one entropy value.
pub fn lb_scheme(spray: Option<EvPolicyKind>) -> LbScheme {
    match spray {
        None => LbScheme::Ecmp,
        Some(EvPolicyKind::Oblivious) => LbScheme::Spray,
        Some(EvPolicyKind::Bitmap) => LbScheme::Bitmap,
        Some(EvPolicyKind::Reps) => LbScheme::Reps,
        Some(EvPolicyKind::Mixed) => LbScheme::Mixed,
    }
}

/// The run's fabric in the simulator, links at the virtual rate.
pub fn sim_net(cfg: &CongestionConfig) -> Result<Net> {
    let delay = SimConfig::default().link_delay;
    Ok(match cfg.topology.fabric(cfg.virtual_rate)? {
        Some(f) => Net::from_fabric(&f, delay),
        None => NetBuilder::star(cfg.hosts as u32, cfg.virtual_rate, delay),
    })
}

/// `plan` with every flow's start moved later by a fixed pseudo-random offset below
/// `up_to` (virtual time), a different set of offsets for each `run`: the timing noise a
/// real-time testbed always has, for a twin that otherwise starts its senders in
/// lockstep. Some algorithms' outcome depends on it (DCQCN's incast has two, docs/veth.md
/// "DCQCN's two outcomes"), so a spread of such runs, not one run, is what a veth
/// spread should be held against.
pub fn jittered(plan: &Workplan, up_to: Duration, run: u64) -> Workplan {
    let mut p = plan.clone();
    let span = up_to.as_picos();
    if span > 0 {
        for f in &mut p.flows {
            f.start += Duration::picos(scenario::rng::mix64(run << 32 | u64::from(f.id)) % span);
        }
    }
    p
}

/// `plan` with each flow starting when it actually left its host in the veth run
/// `report` (`FlowResult::first_sent_us`): the twin of that one run, with the lateness
/// of its starts. A flow the run never sent, or sent "early" by the rounding of the
/// clocks, keeps its planned start.
pub fn replayed(plan: &Workplan, report: &super::CongestionReport) -> Workplan {
    let mut p = plan.clone();
    for r in &report.flows {
        // A workplan's flows sit at their ids (`Workplan::flows`).
        if let (Some(us), Some(f)) = (r.first_sent_us, p.flows.get_mut(r.id as usize))
            && us.is_finite()
            && us > 0.0
        {
            f.start = f.start.max(Instant::from_picos((us * 1e6).round() as u64));
        }
    }
    p
}

/// How late the run `report` started its flows against `plan` (virtual µs): the
/// smallest and the largest lateness over the flows it sent (`None`: it sent none).
pub fn start_lateness_us(plan: &Workplan, report: &super::CongestionReport) -> Option<(f64, f64)> {
    report
        .flows
        .iter()
        .filter_map(|r| {
            let planned = plan.flows.get(r.id as usize)?.start.picos() as f64 / 1e6;
            Some((r.first_sent_us? - planned).max(0.0))
        })
        .fold(None, |acc, late| {
            Some(acc.map_or((late, late), |(lo, hi): (f64, f64)| {
                (lo.min(late), hi.max(late))
            }))
        })
}

/// Run `plan` in the simulator on the twin of `cfg` (with `sample`: time series).
pub fn run_sim(
    cfg: &CongestionConfig,
    plan: &Workplan,
    sample: Option<cc_algos::Duration>,
) -> Result<sim::SimResults> {
    let mut sc = sim_config(cfg);
    sc.sample = sample;
    sc.stop = plan.stop;
    let mut s = sim::Sim::from_net(sim_net(cfg)?, sc, plan)
        .map_err(|e| Error::Invalid(format!("simulator twin of the run: {e}")))?;
    Ok(s.run())
}
