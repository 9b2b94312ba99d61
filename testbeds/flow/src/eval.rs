//! One evaluation: jobs' flows → paths → max-min rates → per-job completion time and bus
//! bandwidth, per-link utilisation, busiest links.

use topo::{Fabric, LinkId, Routes};

use crate::fill::{Filler, link_loads};
use crate::paths::{self, LoadBalance, PathSet};
use crate::refill::Refill;
use crate::traffic::{Expanded, Pattern, Timing};

/// A job: a pattern and the bytes each rank contributes (all-reduce buffer size, bytes per
/// permutation flow, …).
#[derive(Debug, Clone, PartialEq)]
pub struct Job {
    /// Name in reports.
    pub name: String,
    /// Traffic.
    pub pattern: Pattern,
    /// Bytes per rank.
    pub bytes: f64,
}

/// Result of one job.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct JobResult {
    /// Job name.
    pub name: String,
    /// Flows of the job on the fabric.
    pub flows: usize,
    /// Flows with no path (endpoints unreachable from each other).
    pub unroutable: usize,
    /// Slowest flow (bits/s).
    pub min_rate_bps: f64,
    /// Mean flow rate (bits/s).
    pub mean_rate_bps: f64,
    /// Completion time (s); infinite when a flow has no path.
    pub time_s: f64,
    /// Algorithm bandwidth `bytes / time` (bytes/s).
    pub algbw_bytes_per_s: f64,
    /// Bus bandwidth (bytes/s, nccl-tests definition).
    pub busbw_bytes_per_s: f64,
}

/// A loaded directed link.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct BusyLink {
    /// Link id.
    pub link: u32,
    /// Sending node's name.
    pub from: String,
    /// Receiving node's name.
    pub to: String,
    /// Load / capacity.
    pub utilisation: f64,
}

/// Everything one evaluation computes.
#[derive(Debug, Clone)]
pub struct Evaluation {
    /// Per job.
    pub jobs: Vec<JobResult>,
    /// Rate of every flow (all jobs, in job order), bits/s.
    pub rates: Vec<f64>,
    /// Utilisation (load / capacity) per directed link `2 × link + d`; 0 for a down link.
    pub utilisation: Vec<f64>,
    /// The most utilised directed links, busiest first.
    pub busiest: Vec<BusyLink>,
}

/// Capacities of the directed links (bits/s), 0 for links down in `routes`.
pub fn capacities(f: &Fabric, routes: &Routes) -> Vec<f64> {
    let mut cap = Vec::with_capacity(2 * f.num_links());
    for (i, l) in f.links().iter().enumerate() {
        let c = if routes.link_is_up(LinkId(i as u32)) {
            l.rate_bps as f64
        } else {
            0.0
        };
        cap.push(c);
        cap.push(c);
    }
    cap
}

/// Reusable evaluator (keeps the filling scratch between calls).
#[derive(Debug, Default)]
pub struct Evaluator {
    filler: Filler,
    /// Capacity factor per link (degraded links: below 1); empty: every link at its rate.
    pub link_scale: Vec<f64>,
    /// Re-fills after completions so far, and the flows they re-filled (the others kept
    /// their rates: [`crate::refill`]).
    pub refills: u64,
    /// See `refills`.
    pub refilled_flows: u64,
}

impl Evaluator {
    /// Evaluates `jobs` together on `routes` (their flows share the fabric) and lists the
    /// `top` busiest links.
    pub fn evaluate(
        &mut self,
        f: &Fabric,
        routes: &Routes,
        jobs: &[Job],
        lb: LoadBalance,
        top: usize,
    ) -> Evaluation {
        self.evaluate_paths(f, routes, jobs, lb, top).0
    }

    /// [`Self::evaluate`], also returning the flows' paths (flows in job order).
    pub fn evaluate_paths(
        &mut self,
        f: &Fabric,
        routes: &Routes,
        jobs: &[Job],
        lb: LoadBalance,
        top: usize,
    ) -> (Evaluation, PathSet) {
        let expanded: Vec<Expanded> = jobs.iter().map(|j| j.pattern.expand(f)).collect();
        let flows: Vec<paths::Flow> = expanded
            .iter()
            .flat_map(|e| e.flows.iter().copied())
            .collect();
        let ps = paths::build(f, routes, &flows, lb);
        let mut cap = capacities(f, routes);
        for (l, &x) in self.link_scale.iter().enumerate() {
            for d in 0..2 {
                if let Some(c) = cap.get_mut(2 * l + d) {
                    *c *= x.clamp(0.0, 1.0);
                }
            }
        }
        let rates = self.filler.max_min(&ps, &cap);
        let fluid_done = self.fluid_times(&ps, &cap, &expanded, jobs, &rates);
        let mut results = Vec::with_capacity(jobs.len());
        let mut at = 0usize;
        for (k, (job, e)) in jobs.iter().zip(&expanded).enumerate() {
            let n = e.flows.len();
            let r = &rates[at..at + n];
            let unroutable = (at..at + n).filter(|&i| ps.unroutable(i)).count();
            let time_s = match &e.timing {
                Timing::Gated {
                    factor,
                    groups,
                    per_edge,
                    fixed_s_per_byte,
                    fill_chunks,
                } => {
                    let per_edge_bytes = GatedBytes {
                        bytes: job.bytes,
                        factor: *factor,
                        fill: fill_bytes(*fill_chunks, *factor * job.bytes),
                    };
                    gated_time(r, groups, *per_edge, per_edge_bytes, *fixed_s_per_byte)
                }
                Timing::Fluid { .. } => fluid_done[k],
            };
            results.push(job_result(job, e, r, unroutable, time_s));
            at += n;
        }
        let loads = link_loads(&ps, &rates, cap.len());
        let utilisation: Vec<f64> = loads
            .iter()
            .zip(&cap)
            .map(|(&l, &c)| if c > 0.0 { l / c } else { 0.0 })
            .collect();
        let busiest = busiest(f, &utilisation, top);
        let e = Evaluation {
            jobs: results,
            rates,
            utilisation,
            busiest,
        };
        (e, ps)
    }

    /// Completion times of the fluid jobs: rates are re-filled whenever flows finish;
    /// flows of gated jobs (collectives) keep running as background.
    fn fluid_times(
        &mut self,
        ps: &PathSet,
        cap: &[f64],
        expanded: &[Expanded],
        jobs: &[Job],
        first: &[f64],
    ) -> Vec<f64> {
        let mut done = vec![f64::NAN; jobs.len()];
        if !expanded
            .iter()
            .any(|e| matches!(e.timing, Timing::Fluid { .. }))
        {
            return done;
        }
        // bits per flow (infinite for gated flows)
        let mut bits = Vec::with_capacity(ps.len());
        for (e, j) in expanded.iter().zip(jobs) {
            match &e.timing {
                Timing::Fluid { bytes } => bits.extend(bytes.iter().map(|b| b * j.bytes * 8.0)),
                Timing::Gated { .. } => {
                    bits.extend(std::iter::repeat_n(f64::INFINITY, e.flows.len()))
                }
            }
        }
        let finish = self.finish_times(ps, cap, &bits, Some(first));
        let mut at = 0;
        for (k, e) in expanded.iter().enumerate() {
            let n = e.flows.len();
            if matches!(e.timing, Timing::Fluid { .. }) {
                done[k] = finish[at..at + n].iter().copied().fold(0.0, f64::max);
            }
            at += n;
        }
        done
    }

    /// Finish time (s) of every flow carrying `bits[i]` (infinite: never ends), all
    /// starting together, with max-min rates re-filled each time flows finish (a fluid
    /// simulation; completions due within [`BATCH`] of each other share one re-fill).
    /// Unroutable flows never finish. After 10,000 re-fills the remaining
    /// flows finish at their current rates. `first`: the rates of the first filling, when
    /// the caller has them.
    pub fn finish_times(
        &mut self,
        ps: &PathSet,
        cap: &[f64],
        bits: &[f64],
        first: Option<&[f64]>,
    ) -> Vec<f64> {
        let mut left = bits.to_vec();
        let mut finish = vec![f64::INFINITY; ps.len()];
        let mut active: Vec<u32> = (0..ps.len() as u32)
            .filter(|&i| !ps.unroutable(i as usize))
            .collect();
        let mut rate = match first {
            Some(r) => r.to_vec(),
            None => self.filler.max_min(ps, cap),
        };
        let mut refill = Refill::new(ps, &rate, &active, cap);
        let mut gone = Vec::new();
        let mut now = 0.0f64;
        for round in 0.. {
            let mut dt = f64::INFINITY;
            for &i in &active {
                let i = i as usize;
                if left[i].is_finite() && rate[i] > 0.0 {
                    dt = dt.min(left[i] / rate[i]);
                }
            }
            if !dt.is_finite() {
                break;
            }
            if round >= 10_000 {
                for &i in &active {
                    let i = i as usize;
                    if left[i].is_finite() && rate[i] > 0.0 {
                        finish[i] = now + left[i] / rate[i];
                    }
                }
                break;
            }
            // Batch the completions: every flow due within BATCH (relative) of the first
            // finishes now at its own projected time, so flows that finish close together
            // share one re-fill (thousands of staggered completions of an all-to-all
            // would each cost one otherwise).
            let horizon = dt + BATCH * (now + dt);
            let t0 = now;
            now += dt;
            gone.clear();
            active.retain(|&fi| {
                let i = fi as usize;
                if !left[i].is_finite() {
                    return true;
                }
                let due = if rate[i] > 0.0 {
                    left[i] / rate[i]
                } else {
                    f64::INFINITY
                };
                if due <= horizon || left[i] - rate[i] * dt <= 1e-9 * bits[i].max(1.0) {
                    finish[i] = t0 + due.min(horizon);
                    gone.push(fi);
                    return false;
                }
                left[i] -= rate[i] * dt;
                true
            });
            if active.iter().all(|&i| !left[i as usize].is_finite()) {
                break;
            }
            let n = refill.after_departures(&mut self.filler, ps, cap, &mut rate, &active, &gone);
            self.refills += 1;
            self.refilled_flows += n as u64;
        }
        finish
    }
}

/// Flows due within this share of the elapsed time of the first one to finish complete
/// in the same re-fill ([`Evaluator::finish_times`]): each keeps its exact projected finish
/// time, the others see its capacity freed at most 1 % of the elapsed time early.
pub const BATCH: f64 = 0.01;

/// Bytes per edge that `fill_chunks` pipeline steps add when each edge carries
/// `per_edge` bytes in chunks of [`scenario::TREE_CHUNK`].
fn fill_bytes(fill_chunks: u32, per_edge: f64) -> f64 {
    if fill_chunks == 0 || per_edge <= 0.0 {
        return 0.0;
    }
    let chunk = scenario::TREE_CHUNK as f64;
    let chunks = (per_edge / chunk).ceil().max(1.0);
    fill_chunks as f64 * per_edge / chunks
}

/// What a gated collective moves over each edge: `factor × bytes` plus `fill` bytes of
/// pipeline fill and drain.
#[derive(Debug, Clone, Copy)]
struct GatedBytes {
    bytes: f64,
    factor: f64,
    fill: f64,
}

fn gated_time(rates: &[f64], groups: &[u32], per_edge: u32, b: GatedBytes, fixed: f64) -> f64 {
    let GatedBytes {
        bytes,
        factor,
        fill,
    } = b;
    let ng = groups.iter().max().map_or(0, |&g| g as usize + 1);
    let mut min = vec![f64::INFINITY; ng];
    let pe = per_edge.max(1) as usize;
    for (edge, g) in rates.chunks(pe).zip(groups.chunks(pe)) {
        let r: f64 = edge.iter().sum();
        min[g[0] as usize] = min[g[0] as usize].min(r);
    }
    let worst = min.into_iter().fold(f64::INFINITY, f64::min);
    let net = if factor == 0.0 || rates.is_empty() {
        0.0
    } else if worst <= 0.0 {
        f64::INFINITY
    } else {
        (factor * bytes + fill) * 8.0 / worst
    };
    // the scale-up and fabric phases are pipelined (NCCL overlaps them chunk by chunk)
    net.max(fixed * bytes)
}

fn job_result(job: &Job, e: &Expanded, r: &[f64], unroutable: usize, time_s: f64) -> JobResult {
    let min = r.iter().copied().fold(f64::INFINITY, f64::min);
    let mean = if r.is_empty() {
        0.0
    } else {
        r.iter().sum::<f64>() / r.len() as f64
    };
    let algbw = if time_s > 0.0 && time_s.is_finite() {
        job.bytes / time_s
    } else {
        0.0
    };
    JobResult {
        name: job.name.clone(),
        flows: e.flows.len(),
        unroutable,
        min_rate_bps: if r.is_empty() { 0.0 } else { min },
        mean_rate_bps: mean,
        time_s,
        algbw_bytes_per_s: algbw,
        busbw_bytes_per_s: algbw * e.bus_factor,
    }
}

fn busiest(f: &Fabric, util: &[f64], top: usize) -> Vec<BusyLink> {
    let mut idx: Vec<u32> = (0..util.len() as u32)
        .filter(|&d| util[d as usize] > 0.0)
        .collect();
    let top = top.min(idx.len());
    if top == 0 {
        return Vec::new();
    }
    idx.select_nth_unstable_by(top - 1, |&a, &b| {
        util[b as usize]
            .total_cmp(&util[a as usize])
            .then(a.cmp(&b))
    });
    idx.truncate(top);
    idx.sort_unstable_by(|&a, &b| {
        util[b as usize]
            .total_cmp(&util[a as usize])
            .then(a.cmp(&b))
    });
    idx.into_iter()
        .map(|d| {
            let l = f.link(LinkId(d / 2));
            let (from, to) = if d % 2 == 0 { (l.a, l.b) } else { (l.b, l.a) };
            BusyLink {
                link: d / 2,
                from: f.node_name(from).to_string(),
                to: f.node_name(to).to_string(),
                utilisation: util[d as usize],
            }
        })
        .collect()
}
