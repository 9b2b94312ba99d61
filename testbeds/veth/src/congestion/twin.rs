//! The simulator twin of a congestion run: the same fabric (star or `topo` fabric) at the
//! virtual rate, the same buffer, ECN, PFC thresholds, MTU, congestion control and
//! retransmission timeout, the same workplan — so that `report::compare` can put the
//! two side by side (`fabric testbed run --compare-sim`, the fabric tests).
//!
//! What differs, and stays different: the simulator's links have a 500 ns propagation
//! delay and no OS between the switch and the wire; the veth engine's PFC reaction
//! time is its loop's lateness (tens of µs of virtual time), so its pauses arrive later
//! and its headroom is larger; ECMP hashes differ (each picks its own paths).

use cc_algos::Bytes;
use sim::config::{CcChoice, SimConfig};
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
        rto: cfg.rto,
        seed: cfg.seed,
        ..SimConfig::default()
    };
    if let Some(p) = cfg.pfc {
        sc.pfc_xoff = p.xoff;
        sc.pfc_xon = p.xon;
    }
    sc
}

/// The run's fabric in the simulator, links at the virtual rate.
pub fn sim_net(cfg: &CongestionConfig) -> Result<Net> {
    let delay = SimConfig::default().link_delay;
    Ok(match cfg.topology.fabric(cfg.virtual_rate)? {
        Some(f) => Net::from_fabric(&f, delay),
        None => NetBuilder::star(cfg.hosts as u32, cfg.virtual_rate, delay),
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
    let mut s = sim::Sim::from_net(sim_net(cfg)?, sc, plan)
        .map_err(|e| Error::Invalid(format!("simulator twin of the run: {e}")))?;
    Ok(s.run())
}
