//! The resilience planner: seeded Monte-Carlo timelines of component failures and
//! repairs, each state evaluated with the flow model.
//!
//! * **Components**: host links, fabric (switch–switch) links, leaves, spines
//!   (aggregation), cores, NICs; each maps to the links it takes down.
//! * **A trial** draws, per class, a Poisson stream of failures over the horizon (rate =
//!   components × AFR; a failure that hits a component already down is dropped, which
//!   thins the stream to the rate of the components still up) and an exponential repair
//!   time for each. At every state change the state is evaluated — or taken from a cache
//!   keyed by the set of failed components: re-route ([`Routes::fail_links`] on the
//!   healthy tables), reachability and placement ([`crate::placement`]), and the job's
//!   hierarchical all-reduce ([`crate::traffic::Pattern::Hierarchical`]) relative to the
//!   healthy fabric.
//! * **Interruptions**: a failure that makes a NIC of the job's current placement
//!   unreachable interrupts the job (it restarts on healthy servers). Failures the routing
//!   survives (a spine, a fabric link, one ToR of a dual-ToR NIC) only cost bandwidth.
//! * **Trial `t`** is seeded from (`seed`, `t`) alone, so trials can run in any order, in
//!   parallel or in shards (`t mod N = i`), and merged shards equal one run.

use std::cmp::Ordering;
use std::collections::{BinaryHeap, HashMap};
use std::sync::Arc;

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use serde::{Deserialize, Serialize};
use topo::{Fabric, LinkId, NodeId, Routes, TIER_CORE, TIER_LEAF, TIER_SPINE};

use crate::eval::{Evaluator, Job};
use crate::paths::LoadBalance;
use crate::placement::{self, Health};
use crate::rates::{ClassRate, Rates};
use crate::traffic::Pattern;
use crate::{Error, Result};

/// Component class names, in [`Rates::classes`] order.
pub const CLASSES: [&str; 6] = ["host_link", "fabric_link", "leaf", "spine", "core", "nic"];
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
    /// Failure and repair rates.
    pub rates: Rates,
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
        if !(self.scale_up_gbps.is_finite() && self.scale_up_gbps > 0.0) {
            return bad(
                "scale-up bandwidth",
                format!("{} Gb/s: expected a positive number", self.scale_up_gbps),
            );
        }
        Ok(())
    }
}

/// Failable components of a fabric, grouped by class, each with its links (CSR).
#[derive(Debug, Clone)]
pub struct Components {
    /// `class_start[c]..class_start[c + 1]` are the components of class `c`.
    pub class_start: [u32; 7],
    off: Vec<u32>,
    links: Vec<LinkId>,
}

impl Components {
    /// All components of `f`.
    pub fn of(f: &Fabric) -> Components {
        let mut c = Components {
            class_start: [0; 7],
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
        c.class_start[6] = c.len() as u32;
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
        (0..6).find(|&c| i < self.class_start[c + 1]).unwrap_or(5)
    }
    /// Links of component `i`.
    pub fn links(&self, i: u32) -> &[LinkId] {
        &self.links[self.off[i as usize] as usize..self.off[i as usize + 1] as usize]
    }
}

/// What one failure state costs.
#[derive(Debug, Clone)]
pub struct StateEval {
    /// Job bus bandwidth / healthy (0 when the job cannot be placed or a flow has no path).
    pub rel_busbw: f64,
    /// Unreachable NICs.
    pub unreachable: usize,
    /// Per NIC.
    pub health: Health,
    /// Share of the healthy fabric's ECMP next hops lost.
    pub width_lost: f64,
    /// The job's NICs (`None`: not enough healthy servers).
    pub placement: Option<Vec<NodeId>>,
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
    cfg: PlanConfig,
}

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
        let comps = Components::of(f);
        let hours = cfg.days * 24.0;
        let expected: f64 = cfg
            .rates
            .classes()
            .iter()
            .enumerate()
            .map(|(c, (_, r))| comps.count(c) as f64 * r.per_hour() * hours)
            .sum();
        if expected > MAX_EVENTS_PER_TRIAL {
            return Err(Error::Param {
                what: "rates".into(),
                msg: format!(
                    "{expected:.0} failures expected per trial on {} (limit {MAX_EVENTS_PER_TRIAL:.0}): lower the AFRs or the horizon",
                    f.name()
                ),
            });
        }
        let healthy = Routes::compute(f);
        let mut d = Design {
            fabric: f,
            healthy_next_hops: healthy.width_stats().total_next_hops,
            healthy,
            comps,
            attached: placement::attached_masks(f),
            healthy_busbw: 0.0,
            cfg: cfg.clone(),
        };
        let mut ev = Evaluator::default();
        let h = placement::health(f, &d.healthy, &d.attached);
        let p = placement::place(f, &h, cfg.job_gpus).ok_or_else(|| Error::Param {
            what: "job GPUs".into(),
            msg: format!(
                "no placement for {} GPUs on the healthy {}",
                cfg.job_gpus,
                f.name()
            ),
        })?;
        d.healthy_busbw = d.busbw(&mut ev, &d.healthy, p);
        if d.healthy_busbw <= 0.0 {
            return Err(Error::Param {
                what: "job".into(),
                msg: format!("the job has no bandwidth on the healthy {}", f.name()),
            });
        }
        Ok(d)
    }

    fn busbw(&self, ev: &mut Evaluator, routes: &Routes, ranks: Vec<NodeId>) -> f64 {
        let job = Job {
            name: "job".into(),
            pattern: Pattern::Hierarchical {
                ranks,
                scale_up_bps: self.cfg.scale_up_gbps * 1e9,
            },
            bytes: JOB_BYTES,
        };
        let r = ev.evaluate(
            self.fabric,
            routes,
            std::slice::from_ref(&job),
            self.cfg.lb,
            0,
        );
        if r.jobs[0].unroutable > 0 {
            0.0
        } else {
            r.jobs[0].busbw_bytes_per_s
        }
    }

    /// Evaluates the state with these components failed (sorted).
    pub fn evaluate_state(&self, ev: &mut Evaluator, failed: &[u32]) -> StateEval {
        let f = self.fabric;
        let mut routes = self.healthy.clone();
        let links: Vec<LinkId> = failed
            .iter()
            .flat_map(|&c| self.comps.links(c).iter().copied())
            .collect();
        if !links.is_empty() {
            routes.fail_links(f, &links);
        }
        let nh = routes.width_stats().total_next_hops;
        let width_lost = if self.healthy_next_hops > 0 {
            1.0 - nh as f64 / self.healthy_next_hops as f64
        } else {
            0.0
        };
        let health = placement::health(f, &routes, &self.attached);
        let placement = placement::place(f, &health, self.cfg.job_gpus);
        let rel_busbw = match &placement {
            Some(p) => self.busbw(ev, &routes, p.clone()) / self.healthy_busbw,
            None => 0.0,
        };
        StateEval {
            rel_busbw,
            unreachable: health.num_unreachable,
            health,
            width_lost,
            placement,
        }
    }
}

/// Evaluations keyed by the sorted set of failed components.
#[derive(Debug, Default)]
pub struct Cache {
    map: HashMap<Vec<u32>, Arc<StateEval>>,
    /// Evaluations computed.
    pub misses: u64,
    /// Evaluations reused.
    pub hits: u64,
    ev: Evaluator,
}

/// Most states a cache keeps before it starts over.
const CACHE_CAP: usize = 4096;

impl Cache {
    fn get(&mut self, d: &Design<'_>, failed: &[u32]) -> Arc<StateEval> {
        if let Some(e) = self.map.get(failed) {
            self.hits += 1;
            return e.clone();
        }
        self.misses += 1;
        let e = Arc::new(d.evaluate_state(&mut self.ev, failed));
        if self.map.len() >= CACHE_CAP {
            self.map.clear();
        }
        self.map.insert(failed.to_vec(), e.clone());
        e
    }
}

/// One point of a trial's timeline (a state that began at `hour`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TimelinePoint {
    /// Start of the state (hours).
    pub hour: f64,
    /// Job bus bandwidth relative to healthy.
    pub rel_busbw: f64,
    /// Unreachable NICs.
    pub unreachable: usize,
    /// Components down.
    pub failed: usize,
    /// The event that began the state: `fail <class>` / `repair <class>` / `start`.
    pub event: String,
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
    /// Lowest relative bus bandwidth seen.
    pub min_rel: f64,
    /// Σ rel × hours.
    pub rel_hours: f64,
    /// Hours with at least one unreachable NIC.
    pub unreachable_hours: f64,
    /// Σ unreachable NICs × hours.
    pub unreachable_nic_hours: f64,
    /// Job interruptions caused by the network.
    pub interruptions: u64,
    /// Failures per class (CLASSES order).
    pub failures: [u64; 6],
    /// Σ ECMP width lost × hours.
    pub width_lost_hours: f64,
    /// Largest ECMP width lost.
    pub width_lost_max: f64,
    /// States evaluated.
    pub evaluations: u64,
    /// States taken from the cache.
    pub cache_hits: u64,
}

impl Default for Aggregate {
    fn default() -> Self {
        Aggregate {
            trials: 0,
            hours: 0.0,
            hist_hours: vec![0.0; HIST_BINS],
            min_rel: f64::INFINITY,
            rel_hours: 0.0,
            unreachable_hours: 0.0,
            unreachable_nic_hours: 0.0,
            interruptions: 0,
            failures: [0; 6],
            width_lost_hours: 0.0,
            width_lost_max: 0.0,
            evaluations: 0,
            cache_hits: 0,
        }
    }
}

impl Aggregate {
    fn add_state(&mut self, e: &StateEval, hours: f64) {
        if hours <= 0.0 {
            return;
        }
        self.hours += hours;
        let bin = ((e.rel_busbw / HIST_MAX * HIST_BINS as f64) as usize).min(HIST_BINS - 1);
        self.hist_hours[bin] += hours;
        self.min_rel = self.min_rel.min(e.rel_busbw);
        self.rel_hours += e.rel_busbw * hours;
        if e.unreachable > 0 {
            self.unreachable_hours += hours;
        }
        self.unreachable_nic_hours += e.unreachable as f64 * hours;
        self.width_lost_hours += e.width_lost * hours;
        self.width_lost_max = self.width_lost_max.max(e.width_lost);
    }

    /// Adds another aggregate (trials of another shard or thread).
    pub fn merge(&mut self, o: &Aggregate) {
        self.trials += o.trials;
        self.hours += o.hours;
        for (a, b) in self.hist_hours.iter_mut().zip(&o.hist_hours) {
            *a += b;
        }
        self.min_rel = self.min_rel.min(o.min_rel);
        self.rel_hours += o.rel_hours;
        self.unreachable_hours += o.unreachable_hours;
        self.unreachable_nic_hours += o.unreachable_nic_hours;
        self.interruptions += o.interruptions;
        for c in 0..6 {
            self.failures[c] += o.failures[c];
        }
        self.width_lost_hours += o.width_lost_hours;
        self.width_lost_max = self.width_lost_max.max(o.width_lost_max);
        self.evaluations += o.evaluations;
        self.cache_hits += o.cache_hits;
    }

    /// Relative bus bandwidth the job has at least `1 − q` of the time (q = 0.5: median;
    /// q = 0.99: the level it stays above 99 % of the time), from the histogram (bin
    /// width 0.001).
    pub fn rel_at_least(&self, q: f64) -> f64 {
        if self.hours <= 0.0 {
            return 0.0;
        }
        let target = (1.0 - q) * self.hours;
        let mut acc = 0.0;
        for (i, &h) in self.hist_hours.iter().enumerate() {
            acc += h;
            if acc >= target - 1e-12 * self.hours && h > 0.0 {
                return i as f64 * HIST_MAX / HIST_BINS as f64;
            }
        }
        HIST_MAX
    }
}

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
    for (c, (_, r)) in d.cfg.rates.classes().iter().enumerate() {
        let n = d.comps.count(c);
        let rate = n as f64 * r.per_hour();
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

/// Runs trial `t`, adding it to `agg`; returns its timeline when `timeline` is set.
pub fn run_trial(
    d: &Design<'_>,
    t: u32,
    cache: &mut Cache,
    agg: &mut Aggregate,
    timeline: bool,
) -> Option<Vec<TimelinePoint>> {
    let hours = d.cfg.days * 24.0;
    let mut rng = ChaCha8Rng::seed_from_u64(trial_seed(d.cfg.seed, t));
    let failures = draw_failures(d, &mut rng, hours);
    let rates: [(&str, ClassRate); 6] = d.cfg.rates.classes();
    let mut repairs: BinaryHeap<Ev> = BinaryHeap::new();
    let mut failed: Vec<u32> = Vec::new();
    let (h0, m0) = (cache.hits, cache.misses);
    let mut cur = cache.get(d, &failed);
    let mut since = 0.0;
    let mut line = timeline.then(|| {
        vec![TimelinePoint {
            hour: 0.0,
            rel_busbw: cur.rel_busbw,
            unreachable: cur.unreachable,
            failed: 0,
            event: "start".into(),
        }]
    });
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
        if is_fail {
            fi += 1;
            let Err(pos) = failed.binary_search(&ev.comp) else {
                continue; // already down: thinned
            };
            failed.insert(pos, ev.comp);
            let c = d.comps.class_of(ev.comp);
            agg.failures[c] += 1;
            repairs.push(Ev {
                hour: ev.hour + exp(&mut rng, rates[c].1.mttr_hours),
                comp: ev.comp,
            });
        } else {
            repairs.pop();
            if let Ok(pos) = failed.binary_search(&ev.comp) {
                failed.remove(pos);
            }
        }
        agg.add_state(&cur, ev.hour - since);
        since = ev.hour;
        let next = cache.get(d, &failed);
        if is_fail
            && let Some(p) = &cur.placement
            && p.iter().any(|h| next.health.unreachable[h.idx()])
        {
            agg.interruptions += 1;
        }
        cur = next;
        if let Some(l) = line.as_mut() {
            let c = CLASSES[d.comps.class_of(ev.comp)];
            l.push(TimelinePoint {
                hour: ev.hour,
                rel_busbw: cur.rel_busbw,
                unreachable: cur.unreachable,
                failed: failed.len(),
                event: format!("{} {c}", if is_fail { "fail" } else { "repair" }),
            });
        }
    }
    agg.add_state(&cur, hours - since);
    agg.trials += 1;
    agg.cache_hits += cache.hits - h0;
    agg.evaluations += cache.misses - m0;
    line
}

/// Per-design figures, derived from an [`Aggregate`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Summary {
    /// Design name.
    pub design: String,
    /// GPUs in the fabric.
    pub gpus: u64,
    /// Healthy job bus bandwidth (GB/s).
    pub healthy_busbw_gbytes: f64,
    /// Median relative bus bandwidth (time-weighted).
    pub rel_p50: f64,
    /// Relative bus bandwidth the job has at least 99 % of the time.
    pub rel_p99: f64,
    /// Worst relative bus bandwidth.
    pub rel_worst: f64,
    /// Time-weighted mean relative bus bandwidth.
    pub rel_mean: f64,
    /// Share of time with an unreachable NIC.
    pub unreachable_share: f64,
    /// Mean unreachable NICs.
    pub unreachable_mean: f64,
    /// Network-caused job interruptions per day.
    pub interruptions_per_day: f64,
    /// Share of wall time left for training after interruptions (checkpoint interval / 2
    /// lost plus the restart cost, per interruption).
    pub effective_training: f64,
    /// Time-weighted mean share of ECMP next hops lost.
    pub ecmp_width_lost_mean: f64,
    /// Largest share of ECMP next hops lost.
    pub ecmp_width_lost_max: f64,
    /// Failures per day by class.
    pub failures_per_day: HashMap<String, f64>,
    /// Network cost per GPU (USD, topo's price list).
    pub cost_per_gpu_usd: f64,
    /// Trials.
    pub trials: u64,
    /// States evaluated / reused.
    pub evaluations: u64,
    /// States reused from the cache.
    pub cache_hits: u64,
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
    let days = a.trials as f64 * cfg.days;
    let per_day = |x: f64| if days > 0.0 { x / days } else { 0.0 };
    let ipd = per_day(a.interruptions as f64);
    let lost_h = ipd * (cfg.checkpoint_hours / 2.0 + cfg.restart_minutes / 60.0);
    let hours = a.hours.max(f64::MIN_POSITIVE);
    Summary {
        design: design.into(),
        gpus,
        healthy_busbw_gbytes: healthy_busbw / 1e9,
        rel_p50: a.rel_at_least(0.5),
        rel_p99: a.rel_at_least(0.99),
        rel_worst: if a.min_rel.is_finite() {
            a.min_rel
        } else {
            0.0
        },
        rel_mean: a.rel_hours / hours,
        unreachable_share: a.unreachable_hours / hours,
        unreachable_mean: a.unreachable_nic_hours / hours,
        interruptions_per_day: ipd,
        effective_training: (1.0 - lost_h / 24.0).max(0.0),
        ecmp_width_lost_mean: a.width_lost_hours / hours,
        ecmp_width_lost_max: a.width_lost_max,
        failures_per_day: CLASSES
            .iter()
            .zip(a.failures)
            .map(|(c, n)| (c.to_string(), per_day(n as f64)))
            .collect(),
        cost_per_gpu_usd,
        trials: a.trials,
        evaluations: a.evaluations,
        cache_hits: a.cache_hits,
    }
}

/// One design's part of a (shard) result file.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DesignResult {
    /// Design name (as given on the command line).
    pub design: String,
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

/// Trials of shard `i` of `n`: `t` with `t mod n = i`.
pub fn shard_trials(trials: u32, i: u32, n: u32) -> impl Iterator<Item = u32> {
    (i..trials).step_by(n.max(1) as usize)
}

/// Merges shard results of one sweep: same parameters, same designs, distinct shards.
pub fn merge(parts: &[RunResult]) -> Result<RunResult> {
    let Some(first) = parts.first() else {
        return Err(Error::Merge("no results given".into()));
    };
    let mut out = first.clone();
    for p in &parts[1..] {
        if p.config != first.config {
            return Err(Error::Merge(
                "the results were run with different parameters (job, days, trials, seed, rates …)"
                    .into(),
            ));
        }
        if p.shard_count != first.shard_count {
            return Err(Error::Merge(format!(
                "shard counts differ: {} and {}",
                first.shard_count, p.shard_count
            )));
        }
        let names = |r: &RunResult| {
            r.designs
                .iter()
                .map(|d| d.design.clone())
                .collect::<Vec<_>>()
        };
        if names(p) != names(first) {
            return Err(Error::Merge(format!(
                "designs differ: {:?} and {:?}",
                names(first),
                names(p)
            )));
        }
        for s in &p.shards {
            if out.shards.contains(s) {
                return Err(Error::Merge(format!("shard {s} given twice")));
            }
            out.shards.push(*s);
        }
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
    (0..r.shard_count)
        .filter(|s| !r.shards.contains(s))
        .collect()
}
