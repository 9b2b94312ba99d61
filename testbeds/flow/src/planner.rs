//! The resilience planner: seeded Monte-Carlo timelines of component failures and
//! repairs, each state evaluated with the flow model.
//!
//! * **Components**: the network's (host links, fabric links, leaves, spines /
//!   aggregation, cores, NICs; each maps to the links it takes down) and the rest of the
//!   cluster's (GPUs: a failure takes its whole scale-up domain down; servers; software,
//!   which restarts the job and takes nothing down). [`FailureScope::Network`] keeps only
//!   the network's.
//! * **A trial** draws, per class, a Poisson stream of failures over the horizon (rate =
//!   components × AFR; a failure that hits a component already down is dropped, which
//!   thins the stream to the rate of the components still up) and an exponential repair
//!   time for each. At every state change the state is evaluated — or taken from a cache
//!   keyed by the set of failed components: re-route ([`Routes::fail_links`] on the
//!   healthy tables), reachability and placement ([`crate::placement`]), and the job's
//!   hierarchical all-reduce ([`crate::traffic::Pattern::Hierarchical`]) relative to the
//!   healthy fabric.
//! * **Interruptions** ([`Cause`]): a failure that makes a NIC of the job's current
//!   placement unreachable, takes down a GPU domain or server of it, or a software failure,
//!   interrupts the job (it restarts on available servers). A network failure the routing
//!   survives (a spine, a fabric link, one ToR of a dual-ToR NIC) interrupts the job with
//!   probability [`PlanConfig::reroute_interrupt`] when it carried the job's traffic —
//!   **an assumption**: the RoCE transport times out (NCCL_IB_TIMEOUT / NCCL_IB_RETRY_CNT)
//!   before the re-route completes, e.g. a silent failure detected by a BGP hold timer.
//! * **Lost time**: each interruption loses half a checkpoint interval plus the restart
//!   cost; while there are not enough available servers for the job (waiting for repairs)
//!   it cannot run at all, and all of that time is lost too.
//! * **Trial `t`** is seeded from (`seed`, `t`) alone, so trials can run in any order, in
//!   parallel or in shards (`t mod N = i`), and merged shards equal one run.

use std::cmp::Ordering;
use std::collections::{BTreeMap, BinaryHeap, HashMap};
use std::sync::Arc;

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use serde::{Deserialize, Serialize};
use topo::{Fabric, LinkId, NodeId, Routes, TIER_CORE, TIER_LEAF, TIER_SPINE};

use crate::eval::{Evaluator, Job};
use crate::paths::LoadBalance;
use crate::placement::{self, Health, PlaceRules};
use crate::rates::{NUM_CLASSES, Rates};
use crate::stats::{self, Estimate};
use crate::traffic::Pattern;
use crate::{Error, Result};

/// Component class names, in [`Rates::classes`] order.
pub const CLASSES: [&str; NUM_CLASSES] = [
    "host_link",
    "fabric_link",
    "leaf",
    "spine",
    "core",
    "nic",
    "gpu",
    "host",
    "software",
];
/// The first class that is not part of the network (the GPU class).
pub const FIRST_CLUSTER_CLASS: usize = 6;
const LEAF: usize = 2;
const CORE: usize = 4;
const GPU: usize = 6;
const HOST: usize = 7;
const SOFTWARE: usize = 8;

/// Which failures a run draws.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum FailureScope {
    /// The whole cluster: network, GPUs, servers, software.
    All,
    /// The network's share only: links, switches, NICs.
    Network,
}

impl FailureScope {
    /// What the figures cover, for labels.
    pub fn label(self) -> &'static str {
        match self {
            FailureScope::All => "whole cluster (GPU, server, software and network failures)",
            FailureScope::Network => "network only (links, switches, NICs)",
        }
    }
}

/// Why the job was interrupted.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Cause {
    /// A NIC of the job became unreachable (its link, ToR or the NIC failed).
    NicCutOff = 0,
    /// A failure on the job's paths outlasted the transport timeout (assumption).
    Reroute = 1,
    /// A GPU (its scale-up domain) of the job failed.
    Gpu = 2,
    /// A server of the job failed.
    Host = 3,
    /// Software.
    Software = 4,
}

/// Number of [`Cause`]s.
pub const NUM_CAUSES: usize = 5;
/// Cause names, in [`Cause`] order.
pub const CAUSES: [&str; NUM_CAUSES] = [
    "network: NIC cut off",
    "network: re-route timeout",
    "GPU",
    "server",
    "software",
];
/// Bins of the relative-bandwidth histogram over [0, [`HIST_MAX`]].
pub const HIST_BINS: usize = 1500;
/// Upper end of the histogram (a re-placed job may beat the healthy placement a little).
pub const HIST_MAX: f64 = 1.5;
/// Most failure events one trial may draw (expected value), to bound memory and time.
pub const MAX_EVENTS_PER_TRIAL: f64 = 1e6;

/// Planner parameters (the same for every design of a run).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PlanConfig {
    /// GPUs of the job.
    pub job_gpus: u64,
    /// Horizon (days).
    pub days: f64,
    /// Trials.
    pub trials: u32,
    /// Seed.
    pub seed: u64,
    /// Load balancing of the job's flows.
    pub lb: LoadBalance,
    /// Checkpoint interval (hours): an interruption loses half of it on average.
    pub checkpoint_hours: f64,
    /// Restart cost after an interruption (minutes).
    pub restart_minutes: f64,
    /// Scale-up bandwidth per GPU, one direction (Gb/s); NVLink 4 (H100): 450 GB/s = 3,600.
    pub scale_up_gbps: f64,
    /// Parallel connections per rail-ring edge (NCCL channels per NIC), each hashed on
    /// its own.
    pub channels: u32,
    /// Failure and repair rates.
    pub rates: Rates,
    /// Which failures are drawn.
    pub scope: FailureScope,
    /// Probability that a network failure on the job's paths that the routing survives
    /// still interrupts the job (**assumption**; see the module docs).
    pub reroute_interrupt: f64,
    /// Spares, swap times, checkpoint storage and PXN.
    #[serde(default)]
    pub recovery: Recovery,
}

/// How the cluster and the job recover from a failure: spare pools and swap times,
/// checkpoint storage, PXN. The defaults are assumptions or cited, field by field.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Recovery {
    /// Spare servers kept for the job beyond the servers it runs on (`None`: every server
    /// of the fabric the job does not use). The job's partition is its servers plus the
    /// spares, the first in server order; when more of them are down than there are
    /// spares, the job waits for a repair.
    pub spare_servers: Option<u32>,
    /// Minutes to swap a spare server into the job after a hardware interruption (drain,
    /// health check, requeue), on top of the restart. **Assumption**: 5 min for a hot
    /// spare already imaged and checked.
    pub node_swap_minutes: f64,
    /// Spare switches on site (`None`: no pool modelled; a failed switch is down for its
    /// class repair time). With a pool, a failed switch is back after
    /// [`Recovery::switch_swap_hours`] while a spare is on hand, and the failed unit
    /// returns to the pool after its class repair time (RMA); with the pool empty the
    /// switch stays down for its own repair time.
    pub spare_switches: Option<u32>,
    /// Hours to swap a spare switch in (re-cable, load the config). **Assumption**: 1 h.
    pub switch_swap_hours: f64,
    /// Checkpoint bytes per GPU (GB). Default 0.346: Llama 3 405B's model and optimizer
    /// state (405 B parameters × 14 bytes: bf16 weights, fp32 master weights and two Adam
    /// moments; Rajbhandari et al., ZeRO, SC 2020, §3.1) over its 16,384 GPUs; the
    /// checkpoint of a job grows with its GPUs (weak scaling).
    pub checkpoint_gb_per_gpu: f64,
    /// Storage bandwidth for checkpoint writes and restores (GB/s, the whole cluster's).
    /// Default 2,000: Llama 3's Tectonic file system, 2 TB/s sustained (Dubey et al.
    /// 2024, §3.3.1). Writes are taken as blocking (no asynchronous checkpointing).
    pub storage_gbytes_per_s: f64,
    /// PXN-style cross-plane recovery: a NIC cut off in a server that keeps another NIC
    /// does not interrupt the job; its rail's traffic goes over NVLink through a peer
    /// GPU's NIC. Modelled by dropping that rail job-wide, so the other rails carry its
    /// share (bus bandwidth × live rails / rails; conservative when two servers lose
    /// different rails).
    pub pxn: bool,
}

impl Default for Recovery {
    fn default() -> Self {
        Recovery {
            spare_servers: None,
            node_swap_minutes: 5.0,
            spare_switches: None,
            switch_swap_hours: 1.0,
            checkpoint_gb_per_gpu: 405.0 * 14.0 / 16_384.0,
            storage_gbytes_per_s: 2000.0,
            pxn: false,
        }
    }
}

impl Recovery {
    /// Seconds to write (or read back) the checkpoint of a job of `gpus` GPUs.
    pub fn checkpoint_seconds(&self, gpus: u64) -> f64 {
        gpus as f64 * self.checkpoint_gb_per_gpu / self.storage_gbytes_per_s
    }

    fn validate(&self) -> Result<()> {
        let bad = |what: &str, msg: String| {
            Err(Error::Param {
                what: what.into(),
                msg,
            })
        };
        if !(self.node_swap_minutes.is_finite()
            && (0.0..=10_080.0).contains(&self.node_swap_minutes))
        {
            return bad(
                "node swap time",
                format!(
                    "{} minutes: expected 0 to 10,080 (a week)",
                    self.node_swap_minutes
                ),
            );
        }
        if !(self.switch_swap_hours.is_finite()
            && self.switch_swap_hours > 0.0
            && self.switch_swap_hours <= 8760.0)
        {
            return bad(
                "switch swap time",
                format!(
                    "{} hours: expected above 0 and at most 8,760 (a year)",
                    self.switch_swap_hours
                ),
            );
        }
        if !(self.checkpoint_gb_per_gpu.is_finite()
            && (0.0..=10_000.0).contains(&self.checkpoint_gb_per_gpu))
        {
            return bad(
                "checkpoint size",
                format!(
                    "{} GB per GPU: expected 0 to 10,000",
                    self.checkpoint_gb_per_gpu
                ),
            );
        }
        if !(self.storage_gbytes_per_s.is_finite() && self.storage_gbytes_per_s > 0.0) {
            return bad(
                "storage bandwidth",
                format!(
                    "{} GB/s: expected a positive number",
                    self.storage_gbytes_per_s
                ),
            );
        }
        Ok(())
    }
}

impl PlanConfig {
    /// Checks ranges.
    pub fn validate(&self) -> Result<()> {
        let bad = |what: &str, msg: String| {
            Err(Error::Param {
                what: what.into(),
                msg,
            })
        };
        if self.job_gpus == 0 {
            return bad("job GPUs", "must be at least 1".into());
        }
        if !(self.days.is_finite() && self.days > 0.0 && self.days <= 3650.0) {
            return bad(
                "days",
                format!(
                    "{} is not a horizon above 0 and at most 3650 days",
                    self.days
                ),
            );
        }
        if self.trials == 0 || self.trials > 1_000_000 {
            return bad(
                "trials",
                format!("{} is not from 1 to 1,000,000", self.trials),
            );
        }
        if !(self.checkpoint_hours.is_finite() && self.checkpoint_hours > 0.0) {
            return bad(
                "checkpoint interval",
                format!(
                    "{} hours: expected a positive number",
                    self.checkpoint_hours
                ),
            );
        }
        if !(self.restart_minutes.is_finite() && self.restart_minutes >= 0.0) {
            return bad(
                "restart cost",
                format!("{} minutes: expected 0 or more", self.restart_minutes),
            );
        }
        if !(1..=64).contains(&self.channels) {
            return bad(
                "channels",
                format!(
                    "{}: expected 1 to 64 connections per ring edge",
                    self.channels
                ),
            );
        }
        if !(0.0..=1.0).contains(&self.reroute_interrupt) {
            return bad(
                "re-route interruption probability",
                format!("{}: expected 0 to 1", self.reroute_interrupt),
            );
        }
        if !(self.scale_up_gbps.is_finite() && self.scale_up_gbps > 0.0) {
            return bad(
                "scale-up bandwidth",
                format!("{} Gb/s: expected a positive number", self.scale_up_gbps),
            );
        }
        self.recovery.validate()?;
        let ckpt = self.recovery.checkpoint_seconds(self.job_gpus) / 3600.0;
        if ckpt >= self.checkpoint_hours {
            return bad(
                "checkpoint interval",
                format!(
                    "{} hours is shorter than writing one checkpoint ({ckpt:.2} h for {} GPUs × {} GB at {} GB/s)",
                    self.checkpoint_hours,
                    self.job_gpus,
                    self.recovery.checkpoint_gb_per_gpu,
                    self.recovery.storage_gbytes_per_s
                ),
            );
        }
        Ok(())
    }
}

/// Failable components of a fabric, grouped by class, each with its links (CSR).
#[derive(Debug, Clone)]
pub struct Components {
    /// `class_start[c]..class_start[c + 1]` are the components of class `c`.
    pub class_start: [u32; NUM_CLASSES + 1],
    off: Vec<u32>,
    links: Vec<LinkId>,
}

impl Components {
    /// All components of `f`.
    pub fn of(f: &Fabric) -> Components {
        let mut c = Components {
            class_start: [0; NUM_CLASSES + 1],
            off: vec![0],
            links: Vec::new(),
        };
        let push = |c: &mut Components, ls: &mut dyn Iterator<Item = LinkId>| {
            c.links.extend(ls);
            c.off.push(c.links.len() as u32);
        };
        let all = (0..f.num_links() as u32).map(LinkId);
        for l in all.clone().filter(|&l| f.is_host(f.link(l).a)) {
            push(&mut c, &mut std::iter::once(l));
        }
        c.class_start[1] = c.len() as u32;
        for l in all.filter(|&l| !f.is_host(f.link(l).a)) {
            push(&mut c, &mut std::iter::once(l));
        }
        for (ci, tier) in [(2, TIER_LEAF), (3, TIER_SPINE), (4, TIER_CORE)] {
            c.class_start[ci] = c.len() as u32;
            for s in f.switches_in_tier(tier) {
                push(&mut c, &mut f.ports(s).map(|(_, l)| l));
            }
        }
        c.class_start[5] = c.len() as u32;
        for h in f.hosts() {
            push(&mut c, &mut f.ports(h).map(|(_, l)| l));
        }
        // GPUs, servers and the one software component take no links down
        let lay = f.host_layout();
        let counts = [f.num_gpus() as usize, lay.servers as usize, 1];
        for (ci, n) in (GPU..).zip(counts) {
            c.class_start[ci] = c.len() as u32;
            c.off.extend(std::iter::repeat_n(c.links.len() as u32, n));
        }
        c.class_start[NUM_CLASSES] = c.len() as u32;
        c
    }
    /// Number of components.
    pub fn len(&self) -> usize {
        self.off.len() - 1
    }
    /// True when there are none.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
    /// Components of class `c`.
    pub fn count(&self, c: usize) -> u32 {
        self.class_start[c + 1] - self.class_start[c]
    }
    /// Class of component `i`.
    pub fn class_of(&self, i: u32) -> usize {
        (0..NUM_CLASSES)
            .find(|&c| i < self.class_start[c + 1])
            .unwrap_or(NUM_CLASSES - 1)
    }
    /// Links of component `i`.
    pub fn links(&self, i: u32) -> &[LinkId] {
        &self.links[self.off[i as usize] as usize..self.off[i as usize + 1] as usize]
    }
}

/// The network part of a failure state: who can reach whom.
#[derive(Debug, Clone)]
pub struct NetState {
    /// Per NIC.
    pub health: Health,
    /// Share of the healthy fabric's ECMP next hops lost.
    pub width_lost: f64,
}

/// The job's bandwidth in one (network state, placement).
#[derive(Debug, Clone)]
pub struct JobState {
    /// Job bus bandwidth / healthy (0 when a flow has no path).
    pub rel_busbw: f64,
    /// Bit set of the (undirected) links the job's flows use.
    pub links: Vec<u64>,
}

impl JobState {
    fn uses(&self, l: LinkId) -> bool {
        self.links
            .get(l.idx() / 64)
            .is_some_and(|w| w >> (l.idx() % 64) & 1 == 1)
    }
}

/// What one failure state costs.
#[derive(Debug, Clone)]
pub struct StateEval {
    /// Job bus bandwidth / healthy (0 when the job cannot be placed or a flow has no path).
    pub rel_busbw: f64,
    /// Unreachable NICs.
    pub unreachable: usize,
    /// Reachability and ECMP width.
    pub net: Arc<NetState>,
    /// The job's NICs (`None`: not enough available servers, the job cannot run).
    pub placement: Option<Vec<NodeId>>,
    /// The job's links (`None` when it cannot run).
    pub job: Option<Arc<JobState>>,
}

impl StateEval {
    /// Reachability of every NIC.
    pub fn health(&self) -> &Health {
        &self.net.health
    }
    /// Share of the healthy fabric's ECMP next hops lost.
    pub fn width_lost(&self) -> f64 {
        self.net.width_lost
    }
}

/// The collective a job runs (all-reduce flavours; bus bandwidth by the nccl-tests
/// definition).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Collective {
    /// Scale-up inside domains, rail-aligned rings between them (NCCL's default on
    /// multi-NIC servers).
    #[default]
    Hierarchical,
    /// One flat ring over the job's NICs in rank order.
    Ring,
    /// NCCL's double binary tree over the job's NICs.
    Tree,
}

impl Collective {
    /// Parses `hierarchical`, `ring` or `tree`.
    pub fn parse(s: &str) -> Option<Collective> {
        match s {
            "hierarchical" => Some(Collective::Hierarchical),
            "ring" => Some(Collective::Ring),
            "tree" => Some(Collective::Tree),
            _ => None,
        }
    }
    /// Name, as parsed.
    pub fn name(self) -> &'static str {
        match self {
            Collective::Hierarchical => "hierarchical",
            Collective::Ring => "ring",
            Collective::Tree => "tree",
        }
    }
    fn pattern(self, ranks: Vec<NodeId>, cfg: &PlanConfig) -> Pattern {
        match self {
            Collective::Hierarchical => Pattern::Hierarchical {
                ranks,
                scale_up_bps: cfg.scale_up_gbps * 1e9,
                channels: cfg.channels,
            },
            Collective::Ring => Pattern::RingAllReduce { ranks },
            Collective::Tree => Pattern::TreeAllReduce { ranks },
        }
    }
}

/// A job running in one state: its NICs (with PXN, those of its live rails), its servers
/// and its collective.
#[derive(Debug, Clone)]
pub(crate) struct RunningJob {
    pub(crate) ranks: Vec<NodeId>,
    pub(crate) servers: usize,
    pub(crate) collective: Collective,
}

/// A design ready for trials: the fabric, its healthy tables and healthy figures.
#[derive(Debug)]
pub struct Design<'a> {
    /// The fabric.
    pub fabric: &'a Fabric,
    /// Healthy routing tables.
    pub healthy: Routes,
    /// Components.
    pub comps: Components,
    attached: Vec<u64>,
    healthy_next_hops: u64,
    /// Healthy job bus bandwidth (bytes/s).
    pub healthy_busbw: f64,
    /// The rates drawn (the configuration's, restricted to its scope).
    pub(crate) rates: Rates,
    pub(crate) cfg: PlanConfig,
    pub(crate) rules: PlaceRules,
}

/// GPUs per server of the Llama 3 cluster the server failure rate comes from.
const LLAMA3_GPUS_PER_SERVER: f64 = 8.0;

/// Bytes per rank of the evaluated all-reduce (a bandwidth model: bus bandwidth does not
/// depend on it).
const JOB_BYTES: f64 = 1e9;

impl<'a> Design<'a> {
    /// Prepares a design; errors if the job does not fit or the rates would draw too many
    /// events.
    pub fn new(f: &'a Fabric, cfg: &PlanConfig) -> Result<Design<'a>> {
        cfg.validate()?;
        if cfg.job_gpus > f.num_gpus() {
            return Err(Error::Param {
                what: "job GPUs".into(),
                msg: format!(
                    "{} GPUs do not fit in {} ({} GPUs)",
                    cfg.job_gpus,
                    f.name(),
                    f.num_gpus()
                ),
            });
        }
        let lay = f.host_layout();
        let job_servers = cfg.job_gpus.div_ceil(lay.gpus_per_server.max(1) as u64);
        let partition = match cfg.recovery.spare_servers {
            None => None,
            Some(n) if job_servers + n as u64 <= lay.servers as u64 => Some(job_servers as u32 + n),
            Some(n) => {
                return Err(Error::Param {
                    what: "spare servers".into(),
                    msg: format!(
                        "{n} spares and the job's {job_servers} servers exceed the {} servers of {}",
                        lay.servers,
                        f.name()
                    ),
                });
            }
        };
        let rules = PlaceRules {
            partition,
            pxn: cfg.recovery.pxn,
        };
        let mut d = Design::network(f, cfg, rules)?;
        let h = d.healthy_health();
        let p =
            placement::place_in(f, &h, cfg.job_gpus, &[], rules).ok_or_else(|| Error::Param {
                what: "job GPUs".into(),
                msg: format!(
                    "no placement for {} GPUs on the healthy {}",
                    cfg.job_gpus,
                    f.name()
                ),
            })?;
        let job = RunningJob {
            servers: p.len() / lay.nics_per_server.max(1) as usize,
            ranks: p,
            collective: Collective::Hierarchical,
        };
        d.healthy_busbw = d.job_states(&mut Evaluator::default(), &d.healthy, vec![job])[0].0;
        if d.healthy_busbw <= 0.0 {
            return Err(Error::Param {
                what: "job".into(),
                msg: format!("the job has no bandwidth on the healthy {}", f.name()),
            });
        }
        Ok(d)
    }

    /// The network part of a design (components, healthy tables, rates), with no job
    /// bandwidth yet; errors if the rates would draw too many events.
    pub(crate) fn network(
        f: &'a Fabric,
        cfg: &PlanConfig,
        rules: PlaceRules,
    ) -> Result<Design<'a>> {
        let comps = Components::of(f);
        let rates = match cfg.scope {
            FailureScope::All => cfg.rates,
            FailureScope::Network => cfg.rates.network_only(),
        };
        let mut d = Design {
            fabric: f,
            healthy_next_hops: 0,
            healthy: Routes::compute(f),
            comps,
            attached: placement::attached_masks(f),
            healthy_busbw: 0.0,
            rates,
            cfg: cfg.clone(),
            rules,
        };
        let expected: f64 = (0..NUM_CLASSES)
            .map(|c| d.exposure(c) * d.rates.classes()[c].1.per_hour())
            .sum::<f64>()
            * cfg.days
            * 24.0;
        if expected > MAX_EVENTS_PER_TRIAL {
            return Err(Error::Param {
                what: "rates".into(),
                msg: format!(
                    "{expected:.0} failures expected per trial on {} (limit {MAX_EVENTS_PER_TRIAL:.0}): lower the AFRs or the horizon",
                    f.name()
                ),
            });
        }
        d.healthy_next_hops = d.healthy.width_stats().total_next_hops;
        Ok(d)
    }

    /// Health of every NIC on the healthy fabric.
    pub(crate) fn healthy_health(&self) -> Health {
        placement::health(self.fabric, &self.healthy, &self.attached)
    }

    /// Components of class `c` exposed to its rate: the software class counts the job's
    /// GPUs; the server class counts servers scaled to the 8-GPU servers its rate was
    /// measured on (Llama 3), so a design of 1-GPU servers is not charged 8× the host
    /// failures per GPU (an assumption: host parts scale with the GPUs they serve).
    pub(crate) fn exposure(&self, c: usize) -> f64 {
        match c {
            SOFTWARE => self.cfg.job_gpus as f64,
            HOST => {
                let g = self.fabric.host_layout().gpus_per_server.max(1) as f64;
                self.comps.count(c) as f64 * g / LLAMA3_GPUS_PER_SERVER
            }
            _ => self.comps.count(c) as f64,
        }
    }

    /// Servers a failed GPU or server component takes down (empty for the network's).
    pub fn servers_down(&self, comp: u32) -> std::ops::Range<u32> {
        let lay = self.fabric.host_layout();
        match self.comps.class_of(comp) {
            GPU => {
                let server = (comp - self.comps.class_start[GPU]) / lay.gpus_per_server.max(1);
                let per_domain = (lay.scale_up_domain / lay.gpus_per_server.max(1)).max(1);
                let first = server / per_domain * per_domain;
                first..(first + per_domain).min(lay.servers)
            }
            HOST => {
                let s = comp - self.comps.class_start[HOST];
                s..s + 1
            }
            _ => 0..0,
        }
    }

    /// Bus bandwidth (bytes/s) and links of every job, all running at once on `routes`
    /// (their flows share the links: max-min fair between jobs as within one).
    pub(crate) fn job_states(
        &self,
        ev: &mut Evaluator,
        routes: &Routes,
        jobs: Vec<RunningJob>,
    ) -> Vec<(f64, Vec<u64>)> {
        let gpus_per_server = self.fabric.host_layout().gpus_per_server as usize;
        // the bus factor of each job's GPUs, not of the NICs left carrying them
        let gpus: Vec<f64> = jobs
            .iter()
            .map(|j| (j.servers * gpus_per_server) as f64)
            .collect();
        let jobs: Vec<Job> = jobs
            .into_iter()
            .map(|j| Job {
                name: "job".into(),
                pattern: j.collective.pattern(j.ranks, &self.cfg),
                bytes: JOB_BYTES,
            })
            .collect();
        let (r, paths) = ev.evaluate_paths(self.fabric, routes, &jobs, self.cfg.lb, 0);
        let words = self.fabric.num_links().div_ceil(64);
        let mut at = 0usize;
        r.jobs
            .iter()
            .zip(gpus)
            .map(|(j, g)| {
                // a link is the job's when one of its flows puts load on it
                let mut links = vec![0u64; words];
                for i in at..at + j.flows {
                    if r.rates[i] <= 0.0 {
                        continue;
                    }
                    let (ls, ws) = paths.entries(i);
                    for (&l, &w) in ls.iter().zip(ws) {
                        if w > 0.0 {
                            let u = l as usize / 2;
                            links[u / 64] |= 1 << (u % 64);
                        }
                    }
                }
                at += j.flows;
                let bw = if j.unroutable > 0 {
                    0.0
                } else {
                    j.algbw_bytes_per_s * 2.0 * (g - 1.0) / g.max(1.0)
                };
                (bw, links)
            })
            .collect()
    }

    fn routes_for(&self, net_failed: &[u32]) -> Routes {
        let mut routes = self.healthy.clone();
        let links: Vec<LinkId> = net_failed
            .iter()
            .flat_map(|&c| self.comps.links(c).iter().copied())
            .collect();
        if !links.is_empty() {
            routes.fail_links(self.fabric, &links);
        }
        routes
    }

    fn net_state(&self, routes: &Routes) -> NetState {
        let nh = routes.width_stats().total_next_hops;
        NetState {
            health: placement::health(self.fabric, routes, &self.attached),
            width_lost: if self.healthy_next_hops > 0 {
                1.0 - nh as f64 / self.healthy_next_hops as f64
            } else {
                0.0
            },
        }
    }

    /// Evaluates the state with these components failed (sorted), without a cache.
    pub fn evaluate_state(&self, ev: &mut Evaluator, failed: &[u32]) -> StateEval {
        let mut cache = Cache {
            ev: std::mem::take(ev),
            ..Cache::default()
        };
        let down = self.down_counts(failed);
        let e = cache.state(self, failed, &down).pop();
        *ev = cache.ev;
        e.expect("one job")
    }

    /// Per server, how many failed components hold it down.
    pub(crate) fn down_counts(&self, failed: &[u32]) -> Vec<u16> {
        let mut down = vec![0u16; self.fabric.host_layout().servers as usize];
        for &c in failed {
            for s in self.servers_down(c) {
                down[s as usize] += 1;
            }
        }
        down
    }
}

/// Evaluations of states (per thread): network states keyed by the failed network
/// components, the jobs' bandwidth keyed by (network state, every job's placement).
#[derive(Debug, Default)]
pub struct Cache {
    net: HashMap<Vec<u32>, Arc<NetState>>,
    jobs: HashMap<(Vec<u32>, u64), Vec<Arc<JobState>>>,
    routes: Option<(Vec<u32>, Routes)>,
    /// Evaluations computed (network re-routes and flow-model runs).
    pub misses: u64,
    /// Evaluations reused.
    pub hits: u64,
    ev: Evaluator,
}

/// Most entries a cache keeps before it starts over.
const CACHE_CAP: usize = 4096;

/// The network components of a sorted failure set (their ids come first).
fn net_part<'f>(d: &Design<'_>, failed: &'f [u32]) -> &'f [u32] {
    &failed[..failed.partition_point(|&c| c < d.comps.class_start[GPU])]
}

fn placement_key(p: &[NodeId]) -> u64 {
    let mut s = topo::failures::SplitMix64(p.len() as u64);
    let mut h = 0u64;
    for n in p {
        h = h.rotate_left(7) ^ s.next_u64() ^ n.0 as u64;
    }
    h
}

impl Cache {
    fn routes(&mut self, d: &Design<'_>, net: &[u32]) -> &Routes {
        if self.routes.as_ref().is_none_or(|(k, _)| k != net) {
            self.routes = Some((net.to_vec(), d.routes_for(net)));
        }
        &self.routes.as_ref().expect("just set").1
    }

    /// The state with `failed` components down (sorted; network components first, as
    /// their ids are lower) and `down[s]` components holding server `s` down.
    /// The network state with the network components `net_key` failed (sorted).
    fn net(&mut self, d: &Design<'_>, net_key: &[u32]) -> Arc<NetState> {
        match self.net.get(net_key) {
            Some(n) => {
                self.hits += 1;
                n.clone()
            }
            None => {
                self.misses += 1;
                let n = Arc::new(d.net_state(self.routes(d, net_key)));
                if self.net.len() >= CACHE_CAP {
                    self.net.clear();
                }
                self.net.insert(net_key.to_vec(), n.clone());
                n
            }
        }
    }

    /// Bandwidth and links of `jobs` running together in the network state `net_key`
    /// (evaluated with the flow model; not cached here).
    pub(crate) fn evaluate_jobs(
        &mut self,
        d: &Design<'_>,
        net_key: &[u32],
        jobs: Vec<RunningJob>,
    ) -> Vec<(f64, Vec<u64>)> {
        let mut ev = std::mem::take(&mut self.ev);
        let routes = self.routes(d, net_key);
        let out = d.job_states(&mut ev, routes, jobs);
        self.ev = ev;
        out
    }

    /// Each job's state with `failed` components down (sorted; network components first,
    /// as their ids are lower) and `down[s]` components holding server `s` down. The jobs'
    /// bandwidths are cached by (network state, every job's placement).
    pub(crate) fn state<J: TrialJobs>(
        &mut self,
        j: &J,
        failed: &[u32],
        down: &[u16],
    ) -> Vec<StateEval> {
        let d = j.base();
        let net_key = net_part(d, failed);
        let net = self.net(d, net_key);
        let placements = j.place(&net.health, down);
        let jobs: Option<Vec<Arc<JobState>>> = placements.iter().any(Option::is_some).then(|| {
            let mut key = 0u64;
            for p in &placements {
                key =
                    key.rotate_left(13) ^ p.as_deref().map_or(0x9e37_79b9_7f4a_7c15, placement_key);
            }
            let key = (net_key.to_vec(), key);
            if let Some(js) = self.jobs.get(&key) {
                self.hits += 1;
                return js.clone();
            }
            self.misses += 1;
            let run = running(j, &net.health, &placements);
            let mut evals = self.evaluate_jobs(d, net_key, run).into_iter();
            let out: Vec<Arc<JobState>> = placements
                .iter()
                .zip(j.healthy_busbw())
                .map(|(p, healthy)| {
                    let (bw, links) = match p {
                        Some(_) => evals.next().expect("one result per running job"),
                        None => (0.0, Vec::new()),
                    };
                    Arc::new(JobState {
                        rel_busbw: bw / healthy,
                        links,
                    })
                })
                .collect();
            if self.jobs.len() >= CACHE_CAP {
                self.jobs.clear();
            }
            self.jobs.insert(key, out.clone());
            out
        });
        placements
            .into_iter()
            .enumerate()
            .map(|(k, p)| {
                let job = p.as_ref().and(jobs.as_ref()).map(|js| js[k].clone());
                StateEval {
                    rel_busbw: job.as_ref().map_or(0.0, |j| j.rel_busbw),
                    unreachable: net.health.num_unreachable,
                    net: net.clone(),
                    placement: p,
                    job,
                }
            })
            .collect()
    }
}

/// One point of a trial's timeline (a state that began at `hour`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TimelinePoint {
    /// Start of the state (hours).
    pub hour: f64,
    /// Job bus bandwidth relative to healthy (0 while the job cannot run).
    pub rel_busbw: f64,
    /// Unreachable NICs.
    pub unreachable: usize,
    /// Components down.
    pub failed: usize,
    /// The event that began the state: `fail <class>` / `repair <class>` / `start`.
    pub event: String,
    /// Share of the fabric's GPUs on servers that are down or have a NIC cut off
    /// (comparable across designs with different server layouts).
    #[serde(default)]
    pub unusable_gpus: f64,
}

/// The figures of one trial (kept per trial for confidence intervals and merge checks).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TrialRecord {
    /// Trial index.
    pub trial: u32,
    /// Interruptions by cause ([`CAUSES`] order).
    pub interruptions: [u32; NUM_CAUSES],
    /// Failures by class ([`CLASSES`] order).
    pub failures: [u32; NUM_CLASSES],
    /// Hours the job could not run (not enough available servers).
    pub down_hours: f64,
    /// Σ relative bus bandwidth × hours.
    pub rel_hours: f64,
    /// Hours with an unreachable NIC.
    pub unreachable_hours: f64,
    /// Σ ECMP width lost × hours.
    pub width_lost_hours: f64,
    /// Largest ECMP width lost.
    pub width_lost_max: f64,
    /// Lowest relative bus bandwidth.
    pub min_rel: f64,
    /// Hours per histogram bin, only the bins used.
    pub hist: Vec<(u32, f64)>,
    /// NIC cut-offs the job rode through with PXN (no interruption).
    #[serde(default)]
    pub pxn_absorbed: u32,
    /// Switch failures that found the spare pool empty (down for their repair time).
    #[serde(default)]
    pub switch_without_spare: u32,
    /// Several jobs: times the job was stopped because a job of higher priority took the
    /// last spare server it was running on (`fabric plan resilience --job`).
    #[serde(default)]
    pub preempted: u32,
}

impl TrialRecord {
    /// An empty record of trial `t`.
    fn new(t: u32) -> TrialRecord {
        TrialRecord {
            trial: t,
            interruptions: [0; NUM_CAUSES],
            failures: [0; NUM_CLASSES],
            down_hours: 0.0,
            rel_hours: 0.0,
            unreachable_hours: 0.0,
            width_lost_hours: 0.0,
            width_lost_max: 0.0,
            min_rel: f64::INFINITY,
            hist: Vec::new(),
            pxn_absorbed: 0,
            switch_without_spare: 0,
            preempted: 0,
        }
    }
    fn total_interruptions(&self) -> u32 {
        self.interruptions.iter().sum::<u32>() + self.preempted
    }
    /// Interruptions after which the job takes a spare server (a NIC, GPU or server of
    /// it lost).
    fn hardware_interruptions(&self) -> u32 {
        self.interruptions[Cause::NicCutOff as usize]
            + self.interruptions[Cause::Gpu as usize]
            + self.interruptions[Cause::Host as usize]
    }
    fn network_interruptions(&self) -> u32 {
        self.interruptions[Cause::NicCutOff as usize] + self.interruptions[Cause::Reroute as usize]
    }
}

/// Mergeable totals over trials.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Aggregate {
    /// Trials.
    pub trials: u64,
    /// Simulated hours.
    pub hours: f64,
    /// Hours spent with relative bus bandwidth in each bin of width HIST_MAX / HIST_BINS.
    pub hist_hours: Vec<f64>,
    /// Lowest relative bus bandwidth seen (NaN before any trial; `null` in JSON).
    #[serde(with = "stats::non_finite_as_null")]
    pub min_rel: f64,
    /// Job interruptions, all causes.
    pub interruptions: u64,
    /// Failures per class (CLASSES order).
    pub failures: [u64; NUM_CLASSES],
    /// States evaluated.
    pub evaluations: u64,
    /// States taken from the cache.
    pub cache_hits: u64,
    /// Per trial, in trial order.
    pub per_trial: Vec<TrialRecord>,
}

impl Default for Aggregate {
    fn default() -> Self {
        Aggregate {
            trials: 0,
            hours: 0.0,
            hist_hours: vec![0.0; HIST_BINS],
            min_rel: f64::NAN,
            interruptions: 0,
            failures: [0; NUM_CLASSES],
            evaluations: 0,
            cache_hits: 0,
            per_trial: Vec::new(),
        }
    }
}

fn bin_of(rel: f64) -> usize {
    ((rel / HIST_MAX * HIST_BINS as f64) as usize).min(HIST_BINS - 1)
}

impl Aggregate {
    /// Adds another aggregate (trials of another shard or thread).
    pub fn merge(&mut self, o: &Aggregate) {
        self.trials += o.trials;
        self.hours += o.hours;
        for (a, b) in self.hist_hours.iter_mut().zip(&o.hist_hours) {
            *a += b;
        }
        self.min_rel = self.min_rel.min(o.min_rel);
        self.interruptions += o.interruptions;
        for c in 0..NUM_CLASSES {
            self.failures[c] += o.failures[c];
        }
        self.evaluations += o.evaluations;
        self.cache_hits += o.cache_hits;
        self.per_trial.extend(o.per_trial.iter().cloned());
        self.per_trial.sort_by_key(|r| r.trial);
    }

    pub(crate) fn add_trial(&mut self, r: TrialRecord, hours: f64) {
        self.trials += 1;
        self.hours += hours;
        for &(b, h) in &r.hist {
            self.hist_hours[b as usize] += h;
        }
        self.min_rel = self.min_rel.min(r.min_rel);
        self.interruptions += r.total_interruptions() as u64;
        for c in 0..NUM_CLASSES {
            self.failures[c] += r.failures[c] as u64;
        }
        let at = self.per_trial.partition_point(|x| x.trial < r.trial);
        self.per_trial.insert(at, r);
    }

    /// Relative bus bandwidth the job has at least `1 − q` of the time (q = 0.5: median;
    /// q = 0.99: the level it stays above 99 % of the time), from the histogram (bin
    /// width 0.001).
    pub fn rel_at_least(&self, q: f64) -> f64 {
        let hist: Vec<(u32, f64)> = self
            .hist_hours
            .iter()
            .enumerate()
            .filter(|(_, h)| **h > 0.0)
            .map(|(i, &h)| (i as u32, h))
            .collect();
        quantile(&[&hist], q)
    }

    /// Checks that the totals are the sums of the per-trial records and that the records
    /// cover exactly `trials` (a tampered or truncated file fails here).
    pub fn check(&self, trials: &[u32], days: f64) -> std::result::Result<(), String> {
        let got: Vec<u32> = self.per_trial.iter().map(|r| r.trial).collect();
        if got != trials {
            return Err(format!(
                "its per-trial records cover {} trials, not the {} its shards hold",
                got.len(),
                trials.len()
            ));
        }
        let close = |a: f64, b: f64| (a - b).abs() <= 1e-6 * a.abs().max(b.abs()).max(1.0);
        let mut sum = Aggregate::default();
        for r in &self.per_trial {
            sum.add_trial(r.clone(), days * 24.0);
        }
        let hist_total: f64 = self.hist_hours.iter().sum();
        let ok = sum.trials == self.trials
            && sum.interruptions == self.interruptions
            && sum.failures == self.failures
            && close(sum.hours, self.hours)
            && close(hist_total, self.hours)
            && sum
                .hist_hours
                .iter()
                .zip(&self.hist_hours)
                .all(|(a, b)| close(*a, *b))
            && self.per_trial.iter().all(|r| {
                let h: f64 = r.hist.iter().map(|x| x.1).sum();
                close(h, days * 24.0)
            });
        if ok {
            Ok(())
        } else {
            Err("its totals (trials, hours, interruptions, failures or the histogram) are not the sums of its per-trial records".into())
        }
    }
}

/// Level of relative bandwidth the pooled histograms stay at or above `1 − q` of the time.
fn quantile(hists: &[&Vec<(u32, f64)>], q: f64) -> f64 {
    let mut all: Vec<(u32, f64)> = hists.iter().flat_map(|h| h.iter().copied()).collect();
    let total: f64 = all.iter().map(|x| x.1).sum();
    if total <= 0.0 {
        return 0.0;
    }
    all.sort_unstable_by_key(|x| x.0);
    let target = (1.0 - q) * total;
    let mut acc = 0.0;
    for (b, h) in &all {
        acc += h;
        if acc >= target - 1e-12 * total {
            return *b as f64 * HIST_MAX / HIST_BINS as f64;
        }
    }
    HIST_MAX
}

/// A failure or repair of component `comp` at `hour`.
#[derive(Debug, Clone, Copy, PartialEq)]
struct Ev {
    hour: f64,
    comp: u32,
}

impl Eq for Ev {}
impl Ord for Ev {
    fn cmp(&self, o: &Self) -> Ordering {
        o.hour.total_cmp(&self.hour).then(o.comp.cmp(&self.comp))
    }
}
impl PartialOrd for Ev {
    fn partial_cmp(&self, o: &Self) -> Option<Ordering> {
        Some(self.cmp(o))
    }
}

fn exp(rng: &mut ChaCha8Rng, mean: f64) -> f64 {
    let u: f64 = rng.random();
    -(1.0 - u).ln() * mean
}

/// Seed of trial `t`.
fn trial_seed(seed: u64, t: u32) -> u64 {
    let mut s = topo::failures::SplitMix64(seed ^ (t as u64).wrapping_mul(0xa076_1d64_78bd_642f));
    s.next_u64()
}

/// Failure arrivals of one trial, sorted by time.
fn draw_failures(d: &Design<'_>, rng: &mut ChaCha8Rng, hours: f64) -> Vec<Ev> {
    let mut out = Vec::new();
    for (c, (_, r)) in d.rates.classes().iter().enumerate() {
        let n = d.comps.count(c);
        let rate = d.exposure(c) * r.per_hour();
        if n == 0 || rate <= 0.0 {
            continue;
        }
        let mut t = 0.0;
        loop {
            t += exp(rng, 1.0 / rate);
            if t >= hours {
                break;
            }
            let comp = d.comps.class_start[c] + rng.random_range(0..n);
            out.push(Ev { hour: t, comp });
        }
    }
    out.sort_by(|a, b| a.hour.total_cmp(&b.hour).then(a.comp.cmp(&b.comp)));
    out
}

/// Accumulates one trial's record state by state.
struct TrialAcc {
    rec: TrialRecord,
    hist: Vec<f64>,
}

impl TrialAcc {
    fn new(t: u32) -> TrialAcc {
        TrialAcc {
            rec: TrialRecord::new(t),
            hist: vec![0.0; HIST_BINS],
        }
    }

    /// The finished record (histogram bins used only).
    fn finish(self) -> TrialRecord {
        let mut rec = self.rec;
        rec.hist = self
            .hist
            .iter()
            .enumerate()
            .filter(|(_, h)| **h > 0.0)
            .map(|(i, &h)| (i as u32, h))
            .collect();
        rec
    }

    fn add_state(&mut self, e: &StateEval, hours: f64) {
        if hours <= 0.0 {
            return;
        }
        let r = &mut self.rec;
        self.hist[bin_of(e.rel_busbw)] += hours;
        r.min_rel = r.min_rel.min(e.rel_busbw);
        r.rel_hours += e.rel_busbw * hours;
        if e.placement.is_none() {
            r.down_hours += hours;
        }
        if e.unreachable > 0 {
            r.unreachable_hours += hours;
        }
        r.width_lost_hours += e.width_lost() * hours;
        r.width_lost_max = r.width_lost_max.max(e.width_lost());
    }
}

/// Why the event `comp` failing, moving the state from `cur` to `next`, interrupts the
/// job (`None`: it does not, or the job was not running).
pub(crate) fn interruption(
    d: &Design<'_>,
    comp: u32,
    cur: &StateEval,
    next: &StateEval,
    rng: &mut ChaCha8Rng,
) -> Option<Cause> {
    let (p, job) = (cur.placement.as_ref()?, cur.job.as_ref()?);
    let class = d.comps.class_of(comp);
    match class {
        SOFTWARE => Some(Cause::Software),
        GPU | HOST => {
            let nics = d.fabric.host_layout().nics_per_server;
            let r = d.servers_down(comp);
            let first = p.partition_point(|h| h.0 < r.start * nics);
            let hit = p.get(first).is_some_and(|h| h.0 < r.end * nics);
            hit.then_some(if class == GPU {
                Cause::Gpu
            } else {
                Cause::Host
            })
        }
        _ => {
            let cut = newly_cut(cur, next);
            // with PXN the job rides through a cut-off NIC while it keeps its servers
            let moved = !d.rules.pxn || next.placement.as_ref() != Some(p);
            if cut && moved {
                Some(Cause::NicCutOff)
            } else if d.comps.links(comp).iter().any(|&l| job.uses(l))
                && rng.random::<f64>() < d.cfg.reroute_interrupt
            {
                Some(Cause::Reroute)
            } else {
                None
            }
        }
    }
}

/// Share of servers (hence of GPUs) that are down or have a NIC cut off.
fn unusable_share(d: &Design<'_>, e: &StateEval, down: &[u16]) -> f64 {
    let lay = d.fabric.host_layout();
    let nics = lay.nics_per_server.max(1) as usize;
    let out = (0..lay.servers as usize)
        .filter(|&s| {
            down[s] > 0 || e.health().unreachable[s * nics..(s + 1) * nics].contains(&true)
        })
        .count();
    out as f64 / lay.servers.max(1) as f64
}

/// True when a NIC of `cur`'s placement that was reachable is cut off in `next`.
fn newly_cut(cur: &StateEval, next: &StateEval) -> bool {
    cur.placement.as_ref().is_some_and(|p| {
        p.iter()
            .any(|h| !cur.health().unreachable[h.idx()] && next.health().unreachable[h.idx()])
    })
}

/// Spare switches on hand and the failed units out for repair (return hours).
struct SparePool {
    on_hand: Option<u32>,
    returns: Vec<f64>,
}

impl SparePool {
    fn new(spares: Option<u32>) -> SparePool {
        SparePool {
            on_hand: spares,
            returns: Vec::new(),
        }
    }

    /// A switch failed at `hour`, its unit repaired at `repaired`: `Some(true)` when a
    /// spare goes in (the unit joins the pool when repaired), `Some(false)` when the
    /// pool is empty, `None` without a pool.
    fn take(&mut self, hour: f64, repaired: f64) -> Option<bool> {
        let on_hand = self.on_hand.as_mut()?;
        let before = self.returns.len();
        self.returns.retain(|&r| r > hour);
        *on_hand += (before - self.returns.len()) as u32;
        if *on_hand == 0 {
            return Some(false);
        }
        *on_hand -= 1;
        self.returns.push(repaired);
        Some(true)
    }
}

/// The jobs a trial walks: the single-job planner's [`Design`] is one job,
/// [`crate::multijob::JobsDesign`] several. Everything else about a trial (failure
/// draws, repairs, spare switches, interruptions, records) is the same code for both.
pub(crate) trait TrialJobs {
    /// The network part and the run's parameters.
    fn base(&self) -> &Design<'_>;
    /// Each job's NICs in this state (`None`: it cannot run).
    fn place(&self, health: &Health, down: &[u16]) -> Vec<Option<Vec<NodeId>>>;
    /// Each job's healthy bus bandwidth (bytes/s): its figures are relative to it.
    fn healthy_busbw(&self) -> &[f64];
    /// GPUs of job `k` (its share of the software failures).
    fn gpus(&self, k: usize) -> u64;
    /// The collective job `k` runs.
    fn collective(&self, k: usize) -> Collective;
}

impl TrialJobs for Design<'_> {
    fn base(&self) -> &Design<'_> {
        self
    }
    fn place(&self, health: &Health, down: &[u16]) -> Vec<Option<Vec<NodeId>>> {
        let placed = placement::place_in(self.fabric, health, self.cfg.job_gpus, down, self.rules);
        // with PXN the job runs on the rails left in every one of its servers
        vec![placed.filter(|p| {
            !self.rules.pxn || !placement::live_rails(self.fabric, health, p).is_empty()
        })]
    }
    fn healthy_busbw(&self) -> &[f64] {
        std::slice::from_ref(&self.healthy_busbw)
    }
    fn gpus(&self, _: usize) -> u64 {
        self.cfg.job_gpus
    }
    fn collective(&self, _: usize) -> Collective {
        Collective::Hierarchical
    }
}

/// The jobs that run (placed), as the flow model sees them.
pub(crate) fn running<J: TrialJobs>(
    j: &J,
    health: &Health,
    placements: &[Option<Vec<NodeId>>],
) -> Vec<RunningJob> {
    let d = j.base();
    let nics = d.fabric.host_layout().nics_per_server.max(1) as usize;
    placements
        .iter()
        .enumerate()
        .filter_map(|(k, p)| {
            let p = p.as_ref()?;
            Some(RunningJob {
                ranks: if d.rules.pxn {
                    placement::live_rails(d.fabric, health, p)
                } else {
                    p.clone()
                },
                servers: p.len() / nics,
                collective: j.collective(k),
            })
        })
        .collect()
}

/// Seed of the draw that gives a software failure to a job (apart from the trial's own
/// stream, so one job alone draws exactly what it would draw with no other job).
fn software_seed(seed: u64, t: u32) -> u64 {
    trial_seed(seed, t) ^ 0x736f_6674_7761_7265
}

/// The job a software failure hits: drawn in proportion to the jobs' GPUs (no draw for
/// one job).
fn software_job<J: TrialJobs>(j: &J, rng: &mut ChaCha8Rng) -> usize {
    let n = j.healthy_busbw().len();
    if n == 1 {
        return 0;
    }
    let total: u64 = (0..n).map(|k| j.gpus(k)).sum();
    let mut x = rng.random_range(0..total);
    for k in 0..n {
        if x < j.gpus(k) {
            return k;
        }
        x -= j.gpus(k);
    }
    n - 1
}

/// A state of a trial as its timeline sees it.
pub(crate) struct Moment<'s> {
    /// Start of the state (hours).
    pub(crate) hour: f64,
    /// Each job's state.
    pub(crate) states: &'s [StateEval],
    /// Components down.
    pub(crate) failed: usize,
    /// Per server, the failed components holding it down.
    pub(crate) down: &'s [u16],
    /// The event that began the state: `fail <class>` / `repair <class>` / `start`.
    pub(crate) event: String,
}

/// Walks trial `t` of the jobs `j`: draws the failures, plays them and their repairs in
/// time order, evaluates every state (from `cache` when it can) and adds job `k`'s record
/// to `aggs[k]`. With `timeline`, returns `point` of every state.
pub(crate) fn walk<J: TrialJobs, P>(
    j: &J,
    t: u32,
    cache: &mut Cache,
    aggs: &mut [Aggregate],
    timeline: bool,
    point: impl Fn(Moment<'_>) -> P,
) -> Option<Vec<P>> {
    let d = j.base();
    let hours = d.cfg.days * 24.0;
    let mut rng = ChaCha8Rng::seed_from_u64(trial_seed(d.cfg.seed, t));
    let mut soft_rng = ChaCha8Rng::seed_from_u64(software_seed(d.cfg.seed, t));
    let failures = draw_failures(d, &mut rng, hours);
    let rates = d.rates.classes();
    let mut repairs: BinaryHeap<Ev> = BinaryHeap::new();
    let mut failed: Vec<u32> = Vec::new();
    let mut down = vec![0u16; d.fabric.host_layout().servers as usize];
    let (h0, m0) = (cache.hits, cache.misses);
    let mut cur = cache.state(j, &failed, &down);
    let mut accs: Vec<TrialAcc> = cur.iter().map(|_| TrialAcc::new(t)).collect();
    let mut since = 0.0;
    let mut line = timeline.then(|| {
        vec![point(Moment {
            hour: 0.0,
            states: &cur,
            failed: 0,
            down: &down,
            event: "start".into(),
        })]
    });
    let mut switches = SparePool::new(d.cfg.recovery.spare_switches);
    let mut fi = 0;
    loop {
        let next_fail = failures.get(fi).copied();
        let next_rep = repairs.peek().copied().filter(|r| r.hour < hours);
        let (ev, is_fail) = match (next_fail, next_rep) {
            (None, None) => break,
            (Some(a), Some(b)) if b.hour < a.hour => (b, false),
            (Some(a), _) => (a, true),
            (None, Some(b)) => (b, false),
        };
        let class = d.comps.class_of(ev.comp);
        if is_fail {
            fi += 1;
            if class == SOFTWARE {
                let k = software_job(j, &mut soft_rng);
                accs[k].rec.failures[class] += 1;
                if cur[k].placement.is_some() {
                    accs[k].rec.interruptions[Cause::Software as usize] += 1;
                }
                continue;
            }
            let Err(pos) = failed.binary_search(&ev.comp) else {
                continue; // already down: thinned
            };
            failed.insert(pos, ev.comp);
            for s in d.servers_down(ev.comp) {
                down[s as usize] += 1;
            }
            for a in &mut accs {
                a.rec.failures[class] += 1;
            }
            let repair = exp(&mut rng, rates[class].1.mttr_hours);
            let back = if (LEAF..=CORE).contains(&class) {
                match switches.take(ev.hour, ev.hour + repair) {
                    Some(true) => d.cfg.recovery.switch_swap_hours,
                    Some(false) => {
                        for a in &mut accs {
                            a.rec.switch_without_spare += 1;
                        }
                        repair
                    }
                    None => repair,
                }
            } else {
                repair
            };
            repairs.push(Ev {
                hour: ev.hour + back,
                comp: ev.comp,
            });
        } else {
            repairs.pop();
            if let Ok(pos) = failed.binary_search(&ev.comp) {
                failed.remove(pos);
                for s in d.servers_down(ev.comp) {
                    down[s as usize] -= 1;
                }
            }
        }
        for (a, e) in accs.iter_mut().zip(&cur) {
            a.add_state(e, ev.hour - since);
        }
        since = ev.hour;
        let next = cache.state(j, &failed, &down);
        if is_fail {
            for ((a, c), n) in accs.iter_mut().zip(&cur).zip(&next) {
                match interruption(d, ev.comp, c, n, &mut rng) {
                    Some(cause) => a.rec.interruptions[cause as usize] += 1,
                    None if class < GPU && newly_cut(c, n) => a.rec.pxn_absorbed += 1,
                    // running before, stopped now, not hit itself: a job of higher
                    // priority took its spare (never with one job)
                    None if c.placement.is_some() && n.placement.is_none() => a.rec.preempted += 1,
                    None => {}
                }
            }
        }
        cur = next;
        if let Some(l) = line.as_mut() {
            let what = if is_fail { "fail" } else { "repair" };
            l.push(point(Moment {
                hour: ev.hour,
                states: &cur,
                failed: failed.len(),
                down: &down,
                event: format!("{what} {}", CLASSES[class]),
            }));
        }
    }
    for ((a, e), agg) in accs.into_iter().zip(&cur).zip(aggs.iter_mut()) {
        let mut a = a;
        a.add_state(e, hours - since);
        agg.add_trial(a.finish(), hours);
    }
    if let Some(first) = aggs.first_mut() {
        // state evaluations are shared by the jobs: counted once, on the first job
        first.cache_hits += cache.hits - h0;
        first.evaluations += cache.misses - m0;
    }
    line
}

/// Runs trial `t`, adding it to `agg`; returns its timeline when `timeline` is set.
pub fn run_trial(
    d: &Design<'_>,
    t: u32,
    cache: &mut Cache,
    agg: &mut Aggregate,
    timeline: bool,
) -> Option<Vec<TimelinePoint>> {
    walk(d, t, cache, std::slice::from_mut(agg), timeline, |m| {
        let e = &m.states[0];
        TimelinePoint {
            hour: m.hour,
            rel_busbw: e.rel_busbw,
            unreachable: e.unreachable,
            failed: m.failed,
            event: m.event,
            unusable_gpus: unusable_share(d, e, m.down),
        }
    })
}

fn hists<'a>(v: &[&'a TrialRecord]) -> Vec<&'a Vec<(u32, f64)>> {
    v.iter().map(|r| &r.hist).collect()
}

/// Per-design figures, derived from an [`Aggregate`], each with its 95 % interval
/// ([`crate::stats`]).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Summary {
    /// Design name.
    pub design: String,
    /// GPUs in the fabric.
    pub gpus: u64,
    /// What the figures cover ([`FailureScope::label`]).
    pub covers: String,
    /// Healthy job bus bandwidth (GB/s).
    pub healthy_busbw_gbytes: f64,
    /// Median relative bus bandwidth (time-weighted; 0 while the job cannot run).
    pub rel_p50: Estimate,
    /// Relative bus bandwidth the job has at least 99 % of the time.
    pub rel_p99: Estimate,
    /// Worst relative bus bandwidth.
    pub rel_worst: Estimate,
    /// Time-weighted mean relative bus bandwidth.
    pub rel_mean: Estimate,
    /// Share of time with an unreachable NIC.
    pub unreachable_share: Estimate,
    /// Job interruptions per day, all causes in scope.
    pub interruptions_per_day: Estimate,
    /// Job interruptions per day caused by the network.
    pub network_interruptions_per_day: Estimate,
    /// Interruptions per day by cause ([`CAUSES`]).
    pub interruptions_by_cause: BTreeMap<String, Estimate>,
    /// Share of time lost to interruptions (half a checkpoint interval plus the restart
    /// cost each).
    pub lost_to_interruptions: Estimate,
    /// Share of time lost swapping spare servers into the job (each hardware
    /// interruption).
    #[serde(default)]
    pub lost_to_node_swaps: Estimate,
    /// Share of time lost writing checkpoints (blocking; grows with the job's GPUs).
    #[serde(default)]
    pub lost_to_checkpoint_writes: Estimate,
    /// Share of time the job cannot run: not enough available servers (waiting for
    /// repairs).
    pub lost_waiting: Estimate,
    /// NIC cut-offs per day the job rode through with PXN.
    #[serde(default)]
    pub pxn_absorbed_per_day: Estimate,
    /// Switch failures per day that found the spare pool empty.
    #[serde(default)]
    pub switch_without_spare_per_day: Estimate,
    /// Several jobs: stops per day because a job of higher priority took the job's last
    /// spare server (counted among the interruptions).
    #[serde(default)]
    pub preempted_per_day: Estimate,
    /// Share of wall time left for training: 1 − both losses.
    pub effective_training: Estimate,
    /// Time-weighted mean share of ECMP next hops lost.
    pub ecmp_width_lost_mean: Estimate,
    /// Largest share of ECMP next hops lost.
    pub ecmp_width_lost_max: f64,
    /// Failures per day by class.
    pub failures_per_day: BTreeMap<String, Estimate>,
    /// Network cost per GPU (USD, topo's price list).
    pub cost_per_gpu_usd: f64,
    /// Trials.
    pub trials: u64,
    /// States evaluated / reused.
    pub evaluations: u64,
    /// States reused from the cache.
    pub cache_hits: u64,
}

/// Shares of one trial's horizon a job loses, by kind.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Losses {
    interrupt: f64,
    swap: f64,
    wait: f64,
    write: f64,
}

impl Losses {
    /// The losses of the job of `cfg.job_gpus` GPUs in trial `r`.
    pub(crate) fn of(cfg: &PlanConfig, r: &TrialRecord) -> Losses {
        let hours = cfg.days * 24.0;
        let rec = &cfg.recovery;
        let ckpt_h = rec.checkpoint_seconds(cfg.job_gpus) / 3600.0;
        // an interruption loses half a checkpoint interval, the restart and reading the
        // checkpoint back
        let cost_h = cfg.checkpoint_hours / 2.0 + cfg.restart_minutes / 60.0 + ckpt_h;
        let interrupt = (r.total_interruptions() as f64 * cost_h / hours).min(1.0);
        let swap =
            (r.hardware_interruptions() as f64 * rec.node_swap_minutes / 60.0 / hours).min(1.0);
        let wait = r.down_hours / hours;
        // blocking checkpoint writes, one per interval while the job runs
        let write = (1.0 - interrupt - swap - wait).max(0.0) * ckpt_h / cfg.checkpoint_hours;
        Losses {
            interrupt,
            swap,
            wait,
            write,
        }
    }

    /// Share left for training.
    pub(crate) fn effective(&self) -> f64 {
        (1.0 - self.interrupt - self.swap - self.wait - self.write).max(0.0)
    }
}

/// Figures of a design from its aggregate.
pub fn summarize(
    design: &str,
    gpus: u64,
    healthy_busbw: f64,
    cost_per_gpu_usd: f64,
    cfg: &PlanConfig,
    a: &Aggregate,
) -> Summary {
    let hours = cfg.days * 24.0;
    let recs = &a.per_trial;
    // every figure here is a count or a share: an interval never goes below 0
    let per_trial = |f: &dyn Fn(&TrialRecord) -> f64| -> Estimate {
        let mut e = stats::mean_interval(&recs.iter().map(f).collect::<Vec<_>>());
        e.lo = e.lo.max(0.0);
        e
    };
    // a share of time: its interval stays within [0, 1] too
    let share = |f: &dyn Fn(&TrialRecord) -> f64| -> Estimate {
        let mut e = per_trial(f);
        e.hi = e.hi.min(1.0);
        e
    };
    let per_day = |n: u32| n as f64 / cfg.days;
    let interrupt_share = |r: &TrialRecord| Losses::of(cfg, r).interrupt;
    let swap_share = |r: &TrialRecord| Losses::of(cfg, r).swap;
    let wait_share = |r: &TrialRecord| Losses::of(cfg, r).wait;
    let write_share = |r: &TrialRecord| Losses::of(cfg, r).write;
    Summary {
        design: design.into(),
        gpus,
        covers: cfg.scope.label().into(),
        healthy_busbw_gbytes: healthy_busbw / 1e9,
        rel_p50: stats::bootstrap(recs, |v| quantile(&hists(v), 0.5)),
        rel_p99: stats::bootstrap(recs, |v| quantile(&hists(v), 0.99)),
        rel_worst: stats::bootstrap(recs, |v| {
            v.iter().map(|r| r.min_rel).fold(f64::INFINITY, f64::min)
        })
        .map(|x| if x.is_finite() { x } else { 0.0 }),
        rel_mean: per_trial(&|r| r.rel_hours / hours),
        unreachable_share: share(&|r| r.unreachable_hours / hours),
        interruptions_per_day: per_trial(&|r| per_day(r.total_interruptions())),
        network_interruptions_per_day: per_trial(&|r| per_day(r.network_interruptions())),
        interruptions_by_cause: CAUSES
            .iter()
            .enumerate()
            .map(|(c, n)| (n.to_string(), per_trial(&|r| per_day(r.interruptions[c]))))
            .collect(),
        lost_to_interruptions: share(&interrupt_share),
        lost_to_node_swaps: share(&swap_share),
        lost_to_checkpoint_writes: share(&write_share),
        lost_waiting: share(&wait_share),
        effective_training: share(&|r| Losses::of(cfg, r).effective()),
        preempted_per_day: per_trial(&|r| per_day(r.preempted)),
        pxn_absorbed_per_day: per_trial(&|r| per_day(r.pxn_absorbed)),
        switch_without_spare_per_day: per_trial(&|r| per_day(r.switch_without_spare)),
        ecmp_width_lost_mean: share(&|r| r.width_lost_hours / hours),
        ecmp_width_lost_max: recs.iter().map(|r| r.width_lost_max).fold(0.0, f64::max),
        failures_per_day: CLASSES
            .iter()
            .enumerate()
            .map(|(c, n)| (n.to_string(), per_trial(&|r| per_day(r.failures[c]))))
            .collect(),
        cost_per_gpu_usd,
        trials: a.trials,
        evaluations: a.evaluations,
        cache_hits: a.cache_hits,
    }
}

/// A fingerprint of a fabric's structure (host layout, every link's ends, ports and
/// rate): shards of a design file that changed between them do not merge.
pub fn fingerprint(f: &Fabric) -> String {
    // FNV-1a, 64 bit
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    let mut eat = |x: u64| {
        for b in x.to_le_bytes() {
            h ^= b as u64;
            h = h.wrapping_mul(0x0100_0000_01b3);
        }
    };
    let lay = f.host_layout();
    for x in [
        lay.servers,
        lay.nics_per_server,
        lay.gpus_per_server,
        lay.scale_up_domain,
    ] {
        eat(x as u64);
    }
    eat(f.num_nodes() as u64);
    for l in f.links() {
        eat(l.a.0 as u64 | (l.a_port as u64) << 32);
        eat(l.b.0 as u64 | (l.b_port as u64) << 32);
        eat(l.rate_bps);
    }
    format!("{h:016x}")
}

/// One design's part of a (shard) result file.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DesignResult {
    /// Design name (as given on the command line).
    pub design: String,
    /// [`fingerprint`] of the fabric.
    pub fingerprint: String,
    /// GPUs in the fabric.
    pub gpus: u64,
    /// Healthy job bus bandwidth (bytes/s).
    pub healthy_busbw: f64,
    /// Cost per GPU (USD).
    pub cost_per_gpu_usd: f64,
    /// Totals over this shard's trials.
    pub aggregate: Aggregate,
    /// Timeline of trial 0 (only in the shard that ran it).
    pub timeline: Option<Vec<TimelinePoint>>,
    /// Figures (recomputed on merge).
    pub summary: Summary,
}

/// A result file: a whole run (`shard = [0, 1]`) or one shard.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunResult {
    /// Parameters.
    pub config: PlanConfig,
    /// Shards merged into this result, out of `shard_count`.
    pub shards: Vec<u32>,
    /// Total shards of the sweep.
    pub shard_count: u32,
    /// Per design.
    pub designs: Vec<DesignResult>,
}

impl RunResult {
    /// What [`crate::planner::join_shard`] compares between shards.
    pub(crate) fn header(&self) -> crate::planner::ShardHeader<'_> {
        crate::planner::ShardHeader {
            count: self.shard_count,
            designs: self
                .designs
                .iter()
                .map(|d| (d.design.as_str(), d.fingerprint.as_str()))
                .collect(),
            shards: &self.shards,
        }
    }
}

/// Trials of shard `i` of `n`: `t` with `t mod n = i`.
pub fn shard_trials(trials: u32, i: u32, n: u32) -> impl Iterator<Item = u32> {
    (i..trials).step_by(n.max(1) as usize)
}

/// The trials a result file's shards hold (sorted), refusing a shard number not below
/// the shard count.
pub(crate) fn held_trials(trials: u32, shards: &[u32], count: u32) -> Result<Vec<u32>> {
    if shards.iter().any(|&s| s >= count) {
        return Err(Error::Merge(format!(
            "shards {shards:?} are not all below the shard count {count}"
        )));
    }
    let mut held: Vec<u32> = shards
        .iter()
        .flat_map(|&s| shard_trials(trials, s, count))
        .collect();
    held.sort_unstable();
    Ok(held)
}

/// Checks one aggregate of a result file (`what`: `design X`, `design X, job Y`): its
/// histogram size, and its totals against its per-trial records and the trials `held`
/// by its `shards`.
pub(crate) fn check_aggregate(
    what: &str,
    a: &Aggregate,
    held: &[u32],
    days: f64,
    shards: &[u32],
) -> Result<()> {
    if a.hist_hours.len() != HIST_BINS {
        return Err(Error::Merge(format!(
            "{what}: {} histogram bins, expected {HIST_BINS}",
            a.hist_hours.len()
        )));
    }
    a.check(held, days)
        .map_err(|e| Error::Merge(format!("{what} of shards {shards:?}: {e}")))
}

/// Checks one result file: shard numbers, and every design's aggregate.
fn check_part(p: &RunResult) -> Result<()> {
    let held = held_trials(p.config.trials, &p.shards, p.shard_count)?;
    for d in &p.designs {
        let what = format!("design {}", d.design);
        check_aggregate(&what, &d.aggregate, &held, p.config.days, &p.shards)?;
    }
    Ok(())
}

/// Where a shard came from: its sweep's shard count, its designs (name, fabric
/// fingerprint) in order, and the shards it holds.
pub(crate) struct ShardHeader<'a> {
    pub count: u32,
    pub designs: Vec<(&'a str, &'a str)>,
    pub shards: &'a [u32],
}

/// Checks that shard `p` belongs to the same sweep as `first` (shard count, designs and
/// their fingerprints) and adds its shards to `seen`, refusing one given twice.
pub(crate) fn join_shard(
    first: &ShardHeader<'_>,
    p: &ShardHeader<'_>,
    seen: &mut Vec<u32>,
) -> Result<()> {
    if p.count != first.count {
        return Err(Error::Merge(format!(
            "shard counts differ: {} and {}",
            first.count, p.count
        )));
    }
    let names = |h: &ShardHeader<'_>| {
        h.designs
            .iter()
            .map(|d| d.0.to_string())
            .collect::<Vec<_>>()
    };
    if names(p) != names(first) {
        return Err(Error::Merge(format!(
            "designs differ: {:?} and {:?}",
            names(first),
            names(p)
        )));
    }
    for (a, b) in first.designs.iter().zip(&p.designs) {
        if a.1 != b.1 {
            return Err(Error::Merge(format!(
                "design {} changed between shards {:?} and {:?} (fabric fingerprint {} vs {}): re-run every shard on one version of the design",
                a.0, first.shards, p.shards, a.1, b.1
            )));
        }
    }
    for s in p.shards {
        if seen.contains(s) {
            return Err(Error::Merge(format!("shard {s} given twice")));
        }
        seen.push(*s);
    }
    Ok(())
}

/// Merges shard results of one sweep: same parameters, same designs (names and
/// fingerprints), distinct shards, totals that add up.
pub fn merge(parts: &[RunResult]) -> Result<RunResult> {
    let Some(first) = parts.first() else {
        return Err(Error::Merge("no results given".into()));
    };
    for p in parts {
        check_part(p)?;
    }
    let mut out = first.clone();
    for p in &parts[1..] {
        if p.config != first.config {
            return Err(Error::Merge(
                "the results were run with different parameters (job, days, trials, seed, rates …)"
                    .into(),
            ));
        }
        join_shard(&first.header(), &p.header(), &mut out.shards)?;
        for (o, d) in out.designs.iter_mut().zip(&p.designs) {
            o.aggregate.merge(&d.aggregate);
            if o.timeline.is_none() {
                o.timeline = d.timeline.clone();
            }
        }
    }
    out.shards.sort_unstable();
    for d in &mut out.designs {
        d.summary = summarize(
            &d.design,
            d.gpus,
            d.healthy_busbw,
            d.cost_per_gpu_usd,
            &out.config,
            &d.aggregate,
        );
    }
    Ok(out)
}

/// Shards missing from a merged result (empty when complete).
pub fn missing_shards(r: &RunResult) -> Vec<u32> {
    missing_shards_of(r.shard_count, &r.shards)
}

/// Shards of `count` not in `have`.
pub fn missing_shards_of(count: u32, have: &[u32]) -> Vec<u32> {
    (0..count).filter(|s| !have.contains(s)).collect()
}

#[cfg(test)]
mod tests {
    use super::SparePool;
    use proptest::prelude::*;

    proptest! {
        /// Spares on hand plus units out for repair stay the pool's size, and a spare is
        /// handed out only while one is on hand.
        #[test]
        fn the_switch_spare_pool_never_creates_or_loses_a_unit(
            size in 0u32..5,
            events in prop::collection::vec((0.0f64..100.0, 0.0f64..50.0), 0..40),
        ) {
            let mut pool = SparePool::new(Some(size));
            let mut events = events;
            events.sort_by(|a, b| a.0.total_cmp(&b.0));
            for (hour, repair) in events {
                let out = pool.returns.iter().filter(|&&r| r > hour).count() as u32;
                let given = pool.take(hour, hour + repair);
                prop_assert_eq!(given, Some(out < size));
                prop_assert_eq!(pool.on_hand.unwrap() + pool.returns.len() as u32, size);
            }
            prop_assert_eq!(SparePool::new(None).take(1.0, 2.0), None);
        }
    }
}
