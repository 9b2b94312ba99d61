//! A synthetic GPU-cluster job trace, replayed under each placement policy.
//!
//! **The trace.** Jobs arrive as a Poisson process; sizes are powers of two from one
//! server (8 GPUs) to 4,096 GPUs; run times are log-normal. The shape follows what
//! Microsoft's Philly trace showed (Jeon et al., "Analysis of Large-Scale Multi-Tenant GPU
//! Clusters for DNN Training Workloads", USENIX ATC 2019, §2–3): most jobs are small,
//! a few large jobs hold most of the GPU time, and run times span minutes to days with a
//! heavy tail. The weights below are ours, chosen to that shape (not fitted to the trace,
//! whose smallest jobs are single GPUs; here a server is the unit): see [`SIZE_WEIGHTS`].
//!
//! **The replay.** First come, first served, no backfill: the head job waits until its
//! policy can place it. On every arrival and departure the free servers' fragmentation
//! ([`crate::place::fragmentation`]) is sampled, time-weighted up to the last arrival.
//! Every placed job is scored once, when it starts, by the flow model: its collective
//! together with the collectives of the jobs running then (they share the links); mean
//! bus bandwidth per policy. Run times do not depend on the placement (the replay measures what a
//! placement gives, not a feedback loop).

use rand::{Rng, SeedableRng};
use topo::{Fabric, Routes};

use crate::eval::Evaluator;
use crate::eval::Job;
use crate::place::{Cluster, Collective, Policy, fragmentation, job, score_among};

/// Probability of each size `8 · 2^k` GPUs, k = 0.. (8 GPUs to 4,096 GPUs).
pub const SIZE_WEIGHTS: [f64; 10] = [0.30, 0.20, 0.15, 0.12, 0.09, 0.06, 0.04, 0.02, 0.015, 0.005];

/// Median run time, seconds (log-normal, σ = [`RUN_SIGMA`]).
pub const RUN_MEDIAN_S: f64 = 2.0 * 3600.0;
/// σ of ln(run time).
pub const RUN_SIGMA: f64 = 1.5;

/// One job of the trace.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct TraceJob {
    /// Arrival, seconds.
    pub arrive_s: f64,
    /// GPUs.
    pub gpus: u64,
    /// Run time, seconds.
    pub run_s: f64,
}

/// `n` jobs for a fabric of `gpus` GPUs at offered load `load` (GPU-seconds asked per
/// GPU-second available), seeded.
pub fn synthetic(n: usize, gpus: u64, load: f64, seed: u64) -> Vec<TraceJob> {
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(seed);
    let total: f64 = SIZE_WEIGHTS.iter().sum();
    let mean_size: f64 = SIZE_WEIGHTS
        .iter()
        .enumerate()
        .map(|(k, w)| w / total * 8.0 * 2f64.powi(k as i32))
        .sum();
    let mean_run = RUN_MEDIAN_S * (RUN_SIGMA * RUN_SIGMA / 2.0).exp();
    // arrivals per second so that rate × size × run = load × gpus
    let rate = load * gpus as f64 / (mean_size * mean_run);
    let mut t = 0.0;
    let mut out = Vec::with_capacity(n);
    for _ in 0..n {
        t += -(1.0 - rng.random::<f64>()).ln() / rate;
        let mut u = rng.random::<f64>() * total;
        let mut k = 0;
        while k + 1 < SIZE_WEIGHTS.len() && u > SIZE_WEIGHTS[k] {
            u -= SIZE_WEIGHTS[k];
            k += 1;
        }
        let size = (8u64 << k).min(gpus);
        // Box–Muller normal
        let (a, b): (f64, f64) = (rng.random::<f64>().max(1e-300), rng.random());
        let z = (-2.0 * a.ln()).sqrt() * (2.0 * std::f64::consts::PI * b).cos();
        out.push(TraceJob {
            arrive_s: t,
            gpus: size,
            run_s: RUN_MEDIAN_S * (RUN_SIGMA * z).exp(),
        });
    }
    out
}

/// What one policy did with the trace.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct ReplayResult {
    /// Policy name.
    pub policy: String,
    /// Jobs placed.
    pub jobs: usize,
    /// Mean and p95 queueing delay, seconds.
    pub mean_wait_s: f64,
    /// 95th percentile queueing delay, seconds.
    pub p95_wait_s: f64,
    /// Time-weighted mean fragmentation of the free servers.
    pub fragmentation: f64,
    /// Time-weighted mean share of servers busy.
    pub utilisation: f64,
    /// Mean bus bandwidth of the placed jobs' collectives (bytes/s).
    pub mean_busbw_bytes_per_s: f64,
    /// Mean number of blocks a multi-block job spans, over jobs bigger than a block.
    pub mean_blocks_large: f64,
}

/// Replays `trace` on `f` under `policy`, scoring each job's `coll` with `bytes` per rank.
pub fn replay(
    f: &Fabric,
    routes: &Routes,
    trace: &[TraceJob],
    policy: Policy,
    coll: Collective,
    bytes: f64,
) -> ReplayResult {
    let mut c = Cluster::new(f);
    let mut ev = Evaluator::default();
    let block = c.tree.block_size() as usize;
    // running: (end time, id, servers, its collective)
    let mut running: Vec<(f64, u64, Vec<u32>, Job)> = Vec::new();
    let mut waits = Vec::with_capacity(trace.len());
    let mut busbw = Vec::with_capacity(trace.len());
    let mut blocks_large = Vec::new();
    let (mut now, mut frag_area, mut busy_area) = (0.0f64, 0.0f64, 0.0f64);
    let servers = c.tree.servers as f64;
    let mut next = 0usize;
    let last_arrival = trace.last().map_or(0.0, |j| j.arrive_s);
    let mut queue: std::collections::VecDeque<usize> = std::collections::VecDeque::new();
    loop {
        // start what fits, in order
        while let Some(&j) = queue.front() {
            let Ok(need) = c.servers_for(f, trace[j].gpus) else {
                queue.pop_front();
                continue;
            };
            match c.place(policy, need, false) {
                Ok(s) => {
                    queue.pop_front();
                    c.allocate(j as u64, &s, policy);
                    waits.push(now - trace[j].arrive_s);
                    let bg: Vec<Job> = running.iter().map(|r| r.3.clone()).collect();
                    let sc = score_among(f, routes, &c.tree, &[], &s, coll, bytes, &bg, &mut ev);
                    busbw.push(sc.busbw_bytes_per_s);
                    if s.len() > block {
                        blocks_large.push(sc.blocks as f64);
                    }
                    let jb = job(f, &s, coll, bytes);
                    running.push((now + trace[j].run_s, j as u64, s, jb));
                }
                Err(_) => break,
            }
        }
        // next event: an arrival or a departure
        let t_arr = trace.get(next).map_or(f64::INFINITY, |j| j.arrive_s);
        let dep = running
            .iter()
            .enumerate()
            .min_by(|a, b| a.1.0.total_cmp(&b.1.0))
            .map(|(i, r)| (i, r.0));
        let t_dep = dep.map_or(f64::INFINITY, |d| d.1);
        let t = t_arr.min(t_dep);
        if !t.is_finite() {
            break;
        }
        // averages run to the last arrival (the drain-out after it is not steady state)
        let until = t.min(last_arrival);
        if until > now {
            let busy = c.busy.iter().filter(|&&b| b).count() as f64;
            frag_area += fragmentation(&c) * (until - now);
            busy_area += busy / servers * (until - now);
        }
        now = t;
        if t_dep <= t_arr {
            let (i, _) = dep.expect("a departure");
            let (_, id, s, _) = running.swap_remove(i);
            c.release(id, &s);
        } else {
            queue.push_back(next);
            next += 1;
        }
    }
    let mean = |v: &[f64]| {
        if v.is_empty() {
            0.0
        } else {
            v.iter().sum::<f64>() / v.len() as f64
        }
    };
    let mut sorted = waits.clone();
    sorted.sort_by(f64::total_cmp);
    let p95 = sorted
        .get(((sorted.len() as f64 * 0.95) as usize).min(sorted.len().saturating_sub(1)))
        .copied()
        .unwrap_or(0.0);
    ReplayResult {
        policy: policy.name().into(),
        jobs: waits.len(),
        mean_wait_s: mean(&waits),
        p95_wait_s: p95,
        fragmentation: if last_arrival > 0.0 {
            frag_area / last_arrival
        } else {
            0.0
        },
        utilisation: if last_arrival > 0.0 {
            busy_area / last_arrival
        } else {
            0.0
        },
        mean_busbw_bytes_per_s: mean(&busbw),
        mean_blocks_large: mean(&blocks_large),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn trace_is_seeded_and_sized() {
        let a = synthetic(200, 1024, 0.8, 3);
        assert_eq!(a, synthetic(200, 1024, 0.8, 3));
        assert!(
            a.iter()
                .all(|j| j.gpus >= 8 && j.gpus <= 1024 && j.gpus.is_power_of_two())
        );
        assert!(a.windows(2).all(|w| w[0].arrive_s <= w[1].arrive_s));
    }

    #[test]
    fn replay_places_every_job_and_topo_spans_fewer_blocks() {
        let f = topo::presets::build("fat-tree-k8").unwrap();
        let routes = Routes::compute(&f);
        // fat-tree-k8: one GPU per server, 128 servers
        let trace: Vec<TraceJob> = synthetic(60, 128, 0.9, 5)
            .into_iter()
            .map(|j| TraceJob {
                gpus: (j.gpus / 8).max(1),
                ..j
            })
            .collect();
        let slurm = replay(
            &f,
            &routes,
            &trace,
            Policy::SlurmTree,
            Collective::Ring,
            1e8,
        );
        let ours = replay(&f, &routes, &trace, Policy::Topo, Collective::Ring, 1e8);
        let rnd = replay(
            &f,
            &routes,
            &trace,
            Policy::Random(1),
            Collective::Ring,
            1e8,
        );
        assert_eq!(slurm.jobs, 60);
        assert_eq!(ours.jobs, 60);
        assert!(
            ours.mean_blocks_large <= rnd.mean_blocks_large,
            "{ours:?} {rnd:?}"
        );
        assert!(ours.mean_busbw_bytes_per_s >= rnd.mean_busbw_bytes_per_s * 0.99);
    }
}
