//! Several jobs (or tenants) at once on one design: the planner's trials with every job
//! placed on its own servers, failures interrupting only the jobs they hit, a shared pool
//! of spare servers, and the jobs' bandwidth evaluated together with the flow model.
//!
//! * **Servers.** Each job has home servers: a tenant's servers (the first ones it owns,
//!   enough for its GPUs; the rest of the tenant's servers are its private spares), or,
//!   for a job given by size only, the next free servers in server order after the jobs
//!   before it (packed under as few leaves and pods as possible, as the single-job
//!   planner does). The **shared pool** is every server no job (or tenant, or service)
//!   owns, limited to the first [`crate::planner::Recovery::spare_servers`] of them.
//! * **Placement in a state.** Jobs in priority order (the order given: the first job has
//!   the highest priority). A job runs on its usable home servers, replacing the others
//!   with its usable private spares, then with usable servers of the shared pool that no
//!   job before it took; when that is not enough, it waits (and holds no pool server).
//!   **Spares are shared by priority**: a job whose server fails takes a pool server even
//!   when a job of lower priority runs on it, and that job stops when the pool has no
//!   other (counted as *preempted*). The placement is a function of the state (as the
//!   single-job planner's), so it is cached with the state.
//! * **Interruptions** per job, as in the single-job planner: a NIC of the job cut off,
//!   a GPU domain or server of the job down, a re-route on the job's links
//!   (`reroute_interrupt`), software (drawn per job GPU, so a job's share grows with its
//!   GPUs), and preemption. A failure of a part no flow or server of a job uses never
//!   interrupts it; a shared leaf, spine or link can interrupt several.
//! * **Bandwidth.** All jobs that run in a state are evaluated together with the flow
//!   model (max-min fair sharing of the links they share), each relative to its healthy
//!   bandwidth *with every job running*; the healthy bandwidth of each job alone is kept
//!   to show the contention.
//! * **Lost time** per job with its own checkpoint cost (it grows with the job's GPUs;
//!   each job is taken to have the storage bandwidth to itself while it writes); the
//!   cluster total is the GPU-hours all jobs lose.
//! * **One job alone** gives exactly the single-job planner's figures with the same seed
//!   (the same failure draws, the same placement; tested).

use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;
use serde::{Deserialize, Serialize};
use topo::{Fabric, NodeId};

use crate::placement::{self, Health};
use crate::planner::{
    self, Aggregate, Cache, Cause, Collective, Design, Losses, PlanConfig, StateEval, Summary,
    TrialJobs,
};
use crate::stats::{self, Estimate};
use crate::{Error, Result};

/// Longest job name.
pub const MAX_NAME: usize = 64;
/// Most jobs in one run.
pub const MAX_JOBS: usize = 256;

/// One job of a run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct JobSpec {
    /// Name (a tenant's, with a tenant file).
    pub name: String,
    /// GPUs (whole servers are taken).
    pub gpus: u64,
    /// Its collective.
    #[serde(default)]
    pub collective: Collective,
    /// Servers the job owns (a tenant's, ascending); `None`: packed in server order.
    #[serde(default)]
    pub servers: Option<Vec<u32>>,
}

impl JobSpec {
    /// The run's parameters for this job's own figures (its GPUs: checkpoint size, the
    /// software failures it draws).
    pub fn config(&self, run: &PlanConfig) -> PlanConfig {
        let mut c = run.clone();
        c.job_gpus = self.gpus;
        c
    }

    /// This job's figures on design `design` (`gpus` in the fabric) from its aggregate.
    fn summary(
        &self,
        design: &str,
        gpus: u64,
        healthy_busbw: f64,
        run: &PlanConfig,
        agg: &Aggregate,
    ) -> Summary {
        let name = format!("{design}: {}", self.name);
        planner::summarize(&name, gpus, healthy_busbw, 0.0, &self.config(run), agg)
    }
}

/// A job with its servers.
#[derive(Debug, Clone)]
pub struct PlacedJob {
    /// The job.
    pub spec: JobSpec,
    /// Servers it runs on while they are usable.
    pub home: Vec<u32>,
    /// Its own spare servers (a tenant's servers beyond its job).
    pub private: Vec<u32>,
}

/// A design ready for multi-job trials.
#[derive(Debug)]
pub struct JobsDesign<'a> {
    /// The network part and the run's parameters (`job_gpus` = all jobs' GPUs).
    pub base: Design<'a>,
    /// Jobs in priority order.
    pub jobs: Vec<PlacedJob>,
    /// The shared pool of spare servers, in server order.
    pub pool: Vec<u32>,
    /// Healthy bus bandwidth of each job with every job running (bytes/s).
    pub healthy_busbw: Vec<f64>,
    /// Healthy bus bandwidth of each job alone on the design (bytes/s).
    pub alone_busbw: Vec<f64>,
}

fn bad<T>(what: &str, msg: String) -> Result<T> {
    Err(Error::Param {
        what: what.into(),
        msg,
    })
}

impl<'a> JobsDesign<'a> {
    /// Places `jobs` on `f`. `owned`: servers that belong to an entry of a tenant file
    /// without a job here (a tenant not run, a service): never spares. Errors name the job
    /// and what does not fit.
    pub fn new(
        f: &'a Fabric,
        cfg: &PlanConfig,
        jobs: &[JobSpec],
        owned: &[u32],
    ) -> Result<JobsDesign<'a>> {
        check_specs(jobs)?;
        let lay = f.host_layout();
        let per = lay.gpus_per_server.max(1) as u64;
        let total: u64 = jobs.iter().map(|j| j.gpus).sum();
        let mut base_cfg = cfg.clone();
        base_cfg.job_gpus = total;
        base_cfg.validate()?;
        let mut taken = vec![false; lay.servers as usize];
        for &s in owned {
            if let Some(t) = taken.get_mut(s as usize) {
                *t = true;
            }
        }
        // tenants' servers first, then the jobs given by size fill the free servers
        let mut placed: Vec<Option<PlacedJob>> = vec![None; jobs.len()];
        for (k, j) in jobs.iter().enumerate() {
            let Some(servers) = &j.servers else { continue };
            let need = j.gpus.div_ceil(per) as usize;
            if let Some(&s) = servers.iter().find(|&&s| s >= lay.servers) {
                return bad(
                    &format!("job {}", j.name),
                    format!(
                        "server {s} is not in {} ({} servers)",
                        f.name(),
                        lay.servers
                    ),
                );
            }
            if need > servers.len() {
                return bad(
                    &format!("job {}", j.name),
                    format!(
                        "{} GPUs need {need} servers of {per} GPUs; it owns {} ({} GPUs)",
                        j.gpus,
                        servers.len(),
                        servers.len() as u64 * per
                    ),
                );
            }
            for &s in servers {
                if std::mem::replace(&mut taken[s as usize], true) {
                    let other = jobs[..k]
                        .iter()
                        .find(|o| o.servers.as_ref().is_some_and(|v| v.contains(&s)))
                        .map_or("a tenant or service not run".to_string(), |o| {
                            format!("job {}", o.name)
                        });
                    return bad(
                        &format!("job {}", j.name),
                        format!("server {s} also belongs to {other}"),
                    );
                }
            }
            placed[k] = Some(PlacedJob {
                spec: j.clone(),
                home: servers[..need].to_vec(),
                private: servers[need..].to_vec(),
            });
        }
        let free_servers: Vec<u32> = (0..lay.servers).filter(|&s| !taken[s as usize]).collect();
        let mut free = free_servers.into_iter();
        for (k, j) in jobs.iter().enumerate() {
            if placed[k].is_some() {
                continue;
            }
            let need = j.gpus.div_ceil(per) as usize;
            let home: Vec<u32> = free.by_ref().take(need).collect();
            if home.len() < need {
                let asked: Vec<String> = jobs
                    .iter()
                    .map(|j| format!("{} ({} servers)", j.name, j.gpus.div_ceil(per)))
                    .collect();
                return bad(
                    "jobs",
                    format!(
                        "{} do not fit together in {} ({} servers of {per} GPUs{}): job {} finds {} free servers for the {need} it needs",
                        asked.join(", "),
                        f.name(),
                        lay.servers,
                        if owned.is_empty() {
                            String::new()
                        } else {
                            format!(
                                ", {} of them owned by tenants or services not run",
                                owned.len()
                            )
                        },
                        j.name,
                        home.len()
                    ),
                );
            }
            for &s in &home {
                taken[s as usize] = true;
            }
            placed[k] = Some(PlacedJob {
                spec: j.clone(),
                home,
                private: Vec::new(),
            });
        }
        let jobs: Vec<PlacedJob> = placed.into_iter().map(|p| p.expect("placed")).collect();
        let mut pool: Vec<u32> = (0..lay.servers).filter(|&s| !taken[s as usize]).collect();
        if let Some(n) = cfg.recovery.spare_servers {
            if n as usize > pool.len() {
                return bad(
                    "spare servers",
                    format!(
                        "{n} spares asked; {} has {} servers left after the jobs' {}",
                        f.name(),
                        pool.len(),
                        lay.servers as usize - pool.len()
                    ),
                );
            }
            pool.truncate(n as usize);
        }
        let rules = placement::PlaceRules {
            partition: None,
            pxn: cfg.recovery.pxn,
        };
        let base = Design::network(f, &base_cfg, rules)?;
        let mut d = JobsDesign {
            base,
            jobs,
            pool,
            healthy_busbw: Vec::new(),
            alone_busbw: Vec::new(),
        };
        let mut cache = Cache::default();
        let health = d.base.healthy_health();
        let placements = d.place(&health, &[]);
        let running = planner::running(&d, &health, &placements);
        d.healthy_busbw = cache
            .evaluate_jobs(&d.base, &[], running.clone())
            .into_iter()
            .map(|x| x.0)
            .collect();
        d.alone_busbw = running
            .into_iter()
            .map(|r| cache.evaluate_jobs(&d.base, &[], vec![r])[0].0)
            .collect();
        for (j, bw) in d.jobs.iter().zip(&d.healthy_busbw) {
            if *bw <= 0.0 {
                let hint = if j.spec.collective != Collective::Hierarchical
                    && f.host_layout().nics_per_server > 1
                {
                    " (a flat ring or tree runs over every NIC in rank order and crosses planes that may not connect: use hierarchical on a multi-NIC design)"
                } else {
                    ""
                };
                return bad(
                    &format!("job {}", j.spec.name),
                    format!("it has no bandwidth on the healthy {}{hint}", f.name()),
                );
            }
        }
        Ok(d)
    }

    /// The configuration of job `k` alone (its GPUs), for its figures.
    pub fn job_config(&self, k: usize) -> PlanConfig {
        self.jobs[k].spec.config(&self.base.cfg)
    }

    /// Each job's NICs in this state (`None`: it cannot run), see the module docs.
    pub fn place(&self, health: &Health, down: &[u16]) -> Vec<Option<Vec<NodeId>>> {
        let f = self.base.fabric;
        let lay = f.host_layout();
        let per = lay.gpus_per_server.max(1) as u64;
        let nics = lay.nics_per_server as usize;
        let pxn = self.base.rules.pxn;
        let usable = |s: u32| {
            let s = s as usize;
            let cut = &health.unreachable[s * nics..(s + 1) * nics];
            let unusable = if pxn {
                cut.iter().all(|&b| b)
            } else {
                cut.iter().any(|&b| b)
            };
            !(down.get(s).is_some_and(|&n| n > 0) || unusable)
        };
        let mut pool_taken = vec![false; self.pool.len()];
        self.jobs
            .iter()
            .map(|j| {
                let need = j.spec.gpus.div_ceil(per) as usize;
                let mut servers: Vec<u32> = j.home.iter().copied().filter(|&s| usable(s)).collect();
                servers.extend(
                    j.private
                        .iter()
                        .copied()
                        .filter(|&s| usable(s))
                        .take(need - servers.len()),
                );
                let mut took = Vec::new();
                for (i, &s) in self.pool.iter().enumerate() {
                    if servers.len() == need {
                        break;
                    }
                    if !pool_taken[i] && usable(s) {
                        pool_taken[i] = true;
                        took.push(i);
                        servers.push(s);
                    }
                }
                servers.sort_unstable();
                let p: Vec<NodeId> = servers
                    .iter()
                    .flat_map(|&s| s as usize * nics..(s as usize + 1) * nics)
                    .map(|h| NodeId(h as u32))
                    .collect();
                // with PXN the job runs on the rails left in every one of its servers
                let runs = servers.len() == need
                    && (!pxn || !placement::live_rails(f, health, &p).is_empty());
                if runs {
                    Some(p)
                } else {
                    for i in took {
                        pool_taken[i] = false;
                    }
                    None
                }
            })
            .collect()
    }

    /// Why a failure of component `comp` alone, from the healthy state, interrupts each
    /// job (`None`: it does not); re-route timeouts are drawn with the run's probability
    /// from `seed`. Software failures are drawn per job in a trial and are not asked here.
    pub fn interrupted_by(&self, cache: &mut Cache, comp: u32, seed: u64) -> Vec<Option<Cause>> {
        let healthy = self.evaluate_state(cache, &[]);
        let failed = self.evaluate_state(cache, &[comp]);
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        healthy
            .iter()
            .zip(&failed)
            .map(|(c, n)| planner::interruption(&self.base, comp, c, n, &mut rng))
            .collect()
    }

    /// Evaluates the state with these components failed (sorted), per job.
    pub fn evaluate_state(&self, cache: &mut Cache, failed: &[u32]) -> Vec<StateEval> {
        let down = self.base.down_counts(failed);
        cache.state(self, failed, &down)
    }
}

fn check_specs(jobs: &[JobSpec]) -> Result<()> {
    if jobs.is_empty() {
        return bad("jobs", "give at least one job".into());
    }
    if jobs.len() > MAX_JOBS {
        return bad("jobs", format!("{} jobs: at most {MAX_JOBS}", jobs.len()));
    }
    for (k, j) in jobs.iter().enumerate() {
        if j.name.is_empty() || j.name.len() > MAX_NAME {
            return bad(
                "job name",
                format!("`{}`: expected 1 to {MAX_NAME} characters", j.name),
            );
        }
        if jobs[..k].iter().any(|o| o.name == j.name) {
            return bad("job name", format!("`{}` is given twice", j.name));
        }
        if j.gpus == 0 {
            return bad(
                &format!("job {}", j.name),
                "0 GPUs: expected at least 1".into(),
            );
        }
    }
    Ok(())
}

/// One point of trial 0's timeline with several jobs.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct JobsTimelinePoint {
    /// Start of the state (hours).
    pub hour: f64,
    /// Per job (in job order): bus bandwidth relative to healthy, 0 while it cannot run.
    pub rel_busbw: Vec<f64>,
    /// Components down.
    pub failed: usize,
    /// The event that began the state.
    pub event: String,
}

/// Runs trial `t` for every job, adding job `k`'s record to `aggs[k]`; returns the
/// timeline when `timeline` is set. The walk is the single-job planner's
/// ([`planner::run_trial`]: the same code) with one state per job.
pub fn run_trial(
    d: &JobsDesign<'_>,
    t: u32,
    cache: &mut Cache,
    aggs: &mut [Aggregate],
    timeline: bool,
) -> Option<Vec<JobsTimelinePoint>> {
    planner::walk(d, t, cache, aggs, timeline, |m| JobsTimelinePoint {
        hour: m.hour,
        rel_busbw: m.states.iter().map(|e| e.rel_busbw).collect(),
        failed: m.failed,
        event: m.event,
    })
}

impl TrialJobs for JobsDesign<'_> {
    fn base(&self) -> &Design<'_> {
        &self.base
    }
    fn place(&self, health: &Health, down: &[u16]) -> Vec<Option<Vec<NodeId>>> {
        JobsDesign::place(self, health, down)
    }
    fn healthy_busbw(&self) -> &[f64] {
        &self.healthy_busbw
    }
    fn gpus(&self, k: usize) -> u64 {
        self.jobs[k].spec.gpus
    }
    fn collective(&self, k: usize) -> Collective {
        self.jobs[k].spec.collective
    }
}

/// One job's part of a design's result.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct JobOutcome {
    /// The job.
    pub spec: JobSpec,
    /// Its home servers.
    pub home_servers: u32,
    /// Its own spare servers (a tenant's beyond the job).
    pub private_spares: u32,
    /// Healthy bus bandwidth alone on the design (bytes/s).
    pub healthy_busbw_alone: f64,
    /// Healthy bus bandwidth with every job running (bytes/s): figures are relative to it.
    pub healthy_busbw: f64,
    /// Totals over the trials.
    pub aggregate: Aggregate,
    /// Figures (recomputed on merge).
    pub summary: Summary,
}

/// Figures of all jobs together.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ClusterFigures {
    /// GPUs of all jobs.
    pub job_gpus: u64,
    /// GPU-hours all jobs lose over the horizon (interruptions, swaps, checkpoint writes,
    /// waiting).
    pub gpu_hours_lost: Estimate,
    /// The same per day.
    pub gpu_hours_lost_per_day: Estimate,
    /// Effective training time of all jobs' GPUs together (GPU-weighted).
    pub effective_training: Estimate,
    /// Stops per day of all jobs.
    pub interruptions_per_day: Estimate,
}

/// One design's part of a multi-job result.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct JobsDesignResult {
    /// Design name.
    pub design: String,
    /// [`planner::fingerprint`] of the fabric.
    pub fingerprint: String,
    /// GPUs in the fabric.
    pub gpus: u64,
    /// Cost per GPU (USD).
    pub cost_per_gpu_usd: f64,
    /// Servers in the shared spare pool.
    pub shared_spares: u32,
    /// Per job, in priority order.
    pub jobs: Vec<JobOutcome>,
    /// All jobs together.
    pub cluster: ClusterFigures,
    /// Timeline of trial 0 (only in the shard that ran it).
    pub timeline: Option<Vec<JobsTimelinePoint>>,
}

/// A multi-job result file: a whole run or one shard.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct JobsRunResult {
    /// Parameters (`job_gpus`: all jobs' GPUs).
    pub config: PlanConfig,
    /// The jobs in priority order (a tenant's servers: those in the first design).
    pub jobs: Vec<JobSpec>,
    /// Shards merged into this result, out of `shard_count`.
    pub shards: Vec<u32>,
    /// Total shards of the sweep.
    pub shard_count: u32,
    /// Per design.
    pub designs: Vec<JobsDesignResult>,
}

impl JobsRunResult {
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

/// The figures of all jobs from their aggregates (per trial: the sum over jobs).
pub fn cluster_figures(cfg: &PlanConfig, jobs: &[JobOutcome]) -> ClusterFigures {
    let hours = cfg.days * 24.0;
    let job_gpus: u64 = jobs.iter().map(|j| j.spec.gpus).sum();
    let trials = jobs.first().map_or(0, |j| j.aggregate.per_trial.len());
    let mut lost = vec![0.0; trials];
    let mut stops = vec![0.0; trials];
    for j in jobs {
        let c = j.spec.config(cfg);
        for (t, r) in j.aggregate.per_trial.iter().enumerate().take(trials) {
            lost[t] += j.spec.gpus as f64 * hours * (1.0 - Losses::of(&c, r).effective());
            stops[t] += (r.interruptions.iter().sum::<u32>() + r.preempted) as f64 / cfg.days;
        }
    }
    let floor = |mut e: Estimate| {
        e.lo = e.lo.max(0.0);
        e
    };
    let gpu_hours_lost = floor(stats::mean_interval(&lost));
    let total_h = job_gpus as f64 * hours;
    ClusterFigures {
        job_gpus,
        gpu_hours_lost,
        gpu_hours_lost_per_day: gpu_hours_lost.map(|x| x / cfg.days),
        effective_training: {
            let e = gpu_hours_lost.map(|x| 1.0 - x / total_h.max(1e-9));
            // lo and hi swap under 1 − x
            Estimate {
                value: e.value,
                lo: e.hi.min(1.0),
                hi: e.lo.min(1.0),
            }
        },
        interruptions_per_day: floor(stats::mean_interval(&stops)),
    }
}

/// Per-job summaries and the cluster figures of one design, from the jobs' aggregates.
pub fn outcome(
    d: &JobsDesign<'_>,
    cfg: &PlanConfig,
    name: &str,
    aggs: Vec<Aggregate>,
) -> (Vec<JobOutcome>, ClusterFigures) {
    let f = d.base.fabric;
    let jobs: Vec<JobOutcome> = d
        .jobs
        .iter()
        .zip(aggs)
        .enumerate()
        .map(|(k, (j, agg))| {
            let summary = j
                .spec
                .summary(name, f.num_gpus(), d.healthy_busbw[k], cfg, &agg);
            JobOutcome {
                spec: j.spec.clone(),
                home_servers: j.home.len() as u32,
                private_spares: j.private.len() as u32,
                healthy_busbw_alone: d.alone_busbw[k],
                healthy_busbw: d.healthy_busbw[k],
                aggregate: agg,
                summary,
            }
        })
        .collect();
    let cluster = cluster_figures(cfg, &jobs);
    (jobs, cluster)
}

/// Merges shard results of one multi-job sweep: same parameters, jobs and designs
/// (names and fingerprints), distinct shards, every job's totals equal to its per-trial
/// records.
pub fn merge(parts: &[JobsRunResult]) -> Result<JobsRunResult> {
    let Some(first) = parts.first() else {
        return Err(Error::Merge("no results given".into()));
    };
    for p in parts {
        check_part(p)?;
    }
    let mut out = first.clone();
    for p in &parts[1..] {
        if p.config != first.config || p.jobs != first.jobs {
            return Err(Error::Merge(
                "the results were run with different parameters or jobs (job sizes, days, trials, seed, rates …)".into(),
            ));
        }
        crate::planner::join_shard(&first.header(), &p.header(), &mut out.shards)?;
        for (o, d) in out.designs.iter_mut().zip(&p.designs) {
            for (oj, dj) in o.jobs.iter_mut().zip(&d.jobs) {
                oj.aggregate.merge(&dj.aggregate);
            }
            if o.timeline.is_none() {
                o.timeline = d.timeline.clone();
            }
        }
    }
    out.shards.sort_unstable();
    for d in &mut out.designs {
        for j in &mut d.jobs {
            j.summary = j.spec.summary(
                &d.design,
                d.gpus,
                j.healthy_busbw,
                &out.config,
                &j.aggregate,
            );
        }
        d.cluster = cluster_figures(&out.config, &d.jobs);
    }
    Ok(out)
}

fn check_part(p: &JobsRunResult) -> Result<()> {
    let held = planner::held_trials(p.config.trials, &p.shards, p.shard_count)?;
    for d in &p.designs {
        // a tenant's servers may differ between designs: names, sizes and collectives not
        let same = |a: &JobSpec, b: &JobSpec| {
            a.name == b.name && a.gpus == b.gpus && a.collective == b.collective
        };
        if d.jobs.len() != p.jobs.len()
            || d.jobs.iter().zip(&p.jobs).any(|(a, b)| !same(&a.spec, b))
        {
            return Err(Error::Merge(format!(
                "design {}: its jobs are not the run's jobs",
                d.design
            )));
        }
        for j in &d.jobs {
            let what = format!("design {}, job {}", d.design, j.spec.name);
            planner::check_aggregate(&what, &j.aggregate, &held, p.config.days, &p.shards)?;
        }
    }
    Ok(())
}
