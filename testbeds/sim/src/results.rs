//! What a run produces: per-flow completion times, per-link counters, totals,
//! collective bandwidths, optional time series and a deadlock report. Everything
//! is `Serialize` (the `--json` output) and summarised by [`report`].

use scenario::{Collective, Workplan};
use serde::Serialize;

/// At most this many flows get a rate time series (the rest count in Jain's index).
pub const MAX_FLOW_SERIES: usize = 64;
/// Cap on utilisation/queue matrix cells (samples × ports).
pub const MAX_SERIES_CELLS: usize = 8_000_000;

/// One flow's outcome.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct FlowResult {
    /// Flow id (index in the workplan).
    pub id: u32,
    /// Source host.
    pub src: u32,
    /// Destination host.
    pub dst: u32,
    /// Bytes (none for long-lived flows).
    pub size: Option<u64>,
    /// Workload index.
    pub group: u32,
    /// Priority.
    pub priority: u8,
    /// When it started (after its dependencies), µs.
    pub start_us: Option<f64>,
    /// Completion time (last byte acknowledged − start), µs.
    pub fct_us: Option<f64>,
    /// Ideal FCT on an idle fabric: size on the wire at host line rate + base RTT, µs.
    pub ideal_us: Option<f64>,
    /// `fct / ideal`.
    pub slowdown: Option<f64>,
    /// When the receiver had every byte, µs (absolute).
    pub recv_done_us: Option<f64>,
    /// Bytes acknowledged.
    pub acked: u64,
    /// Packets resent.
    pub retransmits: u64,
    /// Retransmission timeouts.
    pub timeouts: u64,
}

/// One direction of one link (a port's transmit side).
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct LinkResult {
    /// Transmitting node.
    pub node: u32,
    /// Its local port.
    pub port: u16,
    /// Receiving node.
    pub peer: u32,
    /// Tier of the transmitting node (0 = host).
    pub node_tier: u8,
    /// Tier of the receiving node.
    pub peer_tier: u8,
    /// Link rate, Gb/s.
    pub rate_gbps: f64,
    /// Bytes sent (all frames).
    pub tx_bytes: u64,
    /// Data-packet bytes sent.
    pub data_bytes: u64,
    /// Frames sent.
    pub tx_pkts: u64,
    /// Mean utilisation over the run.
    pub utilisation: f64,
    /// Packets dropped at this egress.
    pub drops: u64,
    /// ECN marks applied here.
    pub ecn_marks: u64,
    /// Packets trimmed here.
    pub trims: u64,
    /// PAUSE frames this port's ingress side sent upstream.
    pub pauses_sent: u64,
    /// PFC frames received (this egress was told to pause/resume).
    pub pauses_rcvd: u64,
    /// Time this egress spent paused (summed over priorities), µs.
    pub paused_us: f64,
    /// Largest queue, bytes.
    pub max_queue: u64,
    /// Time-averaged queue, bytes.
    pub avg_queue: f64,
}

fn is_zero(x: &u64) -> bool {
    *x == 0
}

/// Whole-run counters.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct Totals {
    /// Data packets sent by hosts (including retransmissions).
    pub data_pkts: u64,
    /// ACKs sent.
    pub acks: u64,
    /// NACKs sent (for trimmed packets).
    pub nacks: u64,
    /// CNPs sent.
    pub cnps: u64,
    /// RCCC credit grants sent.
    pub credits: u64,
    /// All drops.
    pub drops: u64,
    /// Packets the PFC watchdog discarded (queues it found stormed, action drop).
    #[serde(skip_serializing_if = "is_zero")]
    pub pfcwd_drops: u64,
    /// Storms the PFC watchdog detected / restored.
    #[serde(skip_serializing_if = "is_zero")]
    pub pfcwd_storms: u64,
    #[serde(skip_serializing_if = "is_zero")]
    pub pfcwd_restored: u64,
    /// PAUSE frames a storming host sent.
    #[serde(skip_serializing_if = "is_zero")]
    pub storm_pauses: u64,
    /// Drops for lack of buffer (tail drop).
    pub drops_buffer: u64,
    /// Packets lost on failed links.
    pub drops_failure: u64,
    /// Packets with no route.
    pub drops_noroute: u64,
    /// Packets trimmed.
    pub trims: u64,
    /// PAUSE frames sent (including refreshes).
    pub pauses_sent: u64,
    /// Resume (XON) frames sent.
    pub resumes_sent: u64,
    /// PFC frames received.
    pub pauses_rcvd: u64,
    /// Sum over ports of paused time, µs.
    pub paused_us: f64,
    /// ECN marks.
    pub ecn_marks: u64,
    /// Retransmitted packets.
    pub retransmits: u64,
    /// Retransmission timeouts.
    pub timeouts: u64,
    /// Failures applied.
    pub failures: u64,
    /// Routing recomputations.
    pub reroutes: u64,
    /// Largest queue anywhere, bytes.
    pub max_queue: u64,
    /// Times a repeating workload started again.
    pub workload_repeats: u64,
}

/// FCT statistics over finished sized flows.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct FctSummary {
    /// Finished flows.
    pub finished: usize,
    /// Unfinished sized flows.
    pub unfinished: usize,
    /// FCT p50, µs.
    pub p50_us: f64,
    /// FCT p99, µs.
    pub p99_us: f64,
    /// FCT max, µs.
    pub max_us: f64,
    /// FCT mean, µs.
    pub mean_us: f64,
    /// Slowdown p50.
    pub slowdown_p50: f64,
    /// Slowdown p99.
    pub slowdown_p99: f64,
    /// Slowdown max.
    pub slowdown_max: f64,
}

/// One workload's outcome.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct GroupResult {
    /// Name.
    pub name: String,
    /// Kind.
    pub kind: String,
    /// Ranks.
    pub ranks: u32,
    /// Flows.
    pub flows: usize,
    /// Unfinished flows.
    pub unfinished: usize,
    /// First start, µs.
    pub start_us: f64,
    /// Last byte received, µs (none if unfinished).
    pub end_us: Option<f64>,
    /// Collective algorithm bandwidth (size per rank / time), Gb/s.
    pub algbw_gbps: Option<f64>,
    /// Bus bandwidth (NCCL tests' convention), Gb/s.
    pub busbw_gbps: Option<f64>,
    /// Bus bandwidth as a fraction of the host NIC rate (all planes).
    pub busbw_of_ideal: Option<f64>,
    /// FCT statistics of the group's flows.
    pub fct: FctSummary,
    /// Jain's fairness index of the flows' mean throughputs.
    pub jain: Option<f64>,
}

/// Load balance over switch up-links (ports toward a higher tier).
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct LoadBalance {
    /// Up-links counted.
    pub uplinks: usize,
    /// Largest data bytes on one up-link ÷ the mean over up-links (1 = ideal).
    pub max_over_mean: f64,
    /// Coefficient of variation of up-link data bytes.
    pub cv: f64,
}

/// A PFC deadlock: paused egress ports waiting on each other in a cycle.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct DeadlockReport {
    /// When it was detected, µs.
    pub at_us: f64,
    /// The cycle as `(node, local port, peer node)`.
    pub cycle: Vec<(u32, u16, u32)>,
    /// Bytes stuck in queues.
    pub stuck_bytes: u64,
}

/// Which port a column of [`Series::util`] and [`Series::queue`] is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct SeriesPort {
    /// The transmitting switch (node id; for a `topo` fabric its `NodeId`).
    pub node: u32,
    /// Its local port number.
    pub port: u16,
    /// The link (for a `topo` fabric its `LinkId`; else links numbered by lower port).
    pub link: u32,
}

/// Sampled time series.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct Series {
    /// Column `k` of every `util` and `queue` row is the port `ports[k]`.
    pub ports: Vec<SeriesPort>,
    /// Sample times, µs.
    pub t_us: Vec<f64>,
    /// Jain's index over active flows' rates at each sample.
    pub jain: Vec<f64>,
    /// Per sample: `(flow, Gb/s)` for the first flows (see [`MAX_FLOW_SERIES`]).
    pub flow_rates: Vec<Vec<(u32, f32)>>,
    /// Per sample, per switch-owned port: utilisation in the last period.
    pub util: Vec<Vec<f32>>,
    /// Per sample, per switch-owned port: queued bytes.
    pub queue: Vec<Vec<f32>>,
}

/// Run parameters echoed in the results.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct RunInfo {
    /// Congestion control.
    pub cc: String,
    /// Load balancing.
    pub lb: String,
    /// PFC on.
    pub pfc: bool,
    /// Seed.
    pub seed: u64,
    /// Payload bytes per packet.
    pub mtu: u64,
    /// Hosts in the fabric.
    pub hosts: u32,
    /// Simulated end time, µs.
    pub end_us: f64,
    /// Events processed.
    pub events: u64,
    /// Events per kind.
    pub events_by_kind: Vec<(String, u64)>,
    /// Most packets alive at once (slab size).
    pub peak_packets: u64,
    /// Links that ran below their rate (`[[degrade]]`, `SimConfig::degraded`).
    pub degraded: Vec<DegradedLink>,
}

/// One degraded link of a run, as given.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct DegradedLink {
    /// Node ids of the link's ends (from → to).
    pub link: [u32; 2],
    /// Both directions (else only from → to).
    pub both: bool,
    /// Fraction of the rate left.
    pub fraction: f64,
    /// Start, µs.
    pub at_us: f64,
    /// End, µs (none: to the end of the run).
    pub until_us: Option<f64>,
}

/// Everything a run produced.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct SimResults {
    /// Fabric name.
    pub fabric: String,
    /// Scenario name.
    pub scenario: String,
    /// Run parameters.
    pub run: RunInfo,
    /// FCTs over all sized flows.
    pub fct: FctSummary,
    /// Per workload.
    pub groups: Vec<GroupResult>,
    /// Goodput: bytes acknowledged ÷ run time, Gb/s.
    pub goodput_gbps: f64,
    /// Totals.
    pub totals: Totals,
    /// Up-link balance.
    pub load_balance: LoadBalance,
    /// Deadlock, if one was found.
    pub deadlock: Option<DeadlockReport>,
    /// Per flow.
    pub flows: Vec<FlowResult>,
    /// Per port (transmit direction).
    pub links: Vec<LinkResult>,
    /// Time series, if sampled.
    pub series: Option<Series>,
}

pub use report::{jain, percentile};

fn summarise<'a>(flows: impl Iterator<Item = &'a FlowResult>) -> FctSummary {
    let mut fct = Vec::new();
    let mut sd = Vec::new();
    let mut unfinished = 0;
    for f in flows {
        if f.size.is_none() {
            continue;
        }
        match (f.fct_us, f.slowdown) {
            (Some(t), Some(s)) => {
                fct.push(t);
                sd.push(s);
            }
            _ => unfinished += 1,
        }
    }
    fct.sort_by(f64::total_cmp);
    sd.sort_by(f64::total_cmp);
    FctSummary {
        finished: fct.len(),
        unfinished,
        p50_us: percentile(&fct, 0.5),
        p99_us: percentile(&fct, 0.99),
        max_us: fct.last().copied().unwrap_or(0.0),
        mean_us: if fct.is_empty() {
            0.0
        } else {
            fct.iter().sum::<f64>() / fct.len() as f64
        },
        slowdown_p50: percentile(&sd, 0.5),
        slowdown_p99: percentile(&sd, 0.99),
        slowdown_max: sd.last().copied().unwrap_or(0.0),
    }
}

impl SimResults {
    /// Put the pieces together and compute the summaries.
    #[allow(clippy::too_many_arguments)]
    pub fn assemble(
        plan: &Workplan,
        fabric: String,
        run: RunInfo,
        flows: Vec<FlowResult>,
        links: Vec<LinkResult>,
        totals: Totals,
        series: Option<Series>,
        deadlock: Option<DeadlockReport>,
    ) -> SimResults {
        let fct = summarise(flows.iter());
        // NIC rate of host 0 (all its ports: one per plane).
        let host_rate = links
            .iter()
            .filter(|l| l.node_tier == 0 && l.node == 0)
            .map(|l| l.rate_gbps)
            .sum::<f64>();
        let host_rate = if host_rate > 0.0 { host_rate } else { 100.0 };
        let mut groups = Vec::new();
        for (gi, g) in plan.groups.iter().enumerate() {
            let fl: Vec<&FlowResult> = flows.iter().filter(|f| f.group == gi as u32).collect();
            let unfinished = fl
                .iter()
                .filter(|f| f.size.is_some() && f.recv_done_us.is_none())
                .count();
            let start = plan
                .flows
                .iter()
                .filter(|f| f.group == gi as u32)
                .map(|f| f.start.picos() as f64 / 1e6)
                .fold(f64::INFINITY, f64::min);
            let end = if unfinished == 0 {
                fl.iter().filter_map(|f| f.recv_done_us).reduce(f64::max)
            } else {
                None
            };
            let algbw = match (g.collective, end) {
                (Some(_), Some(e)) if e > start => {
                    Some(g.size.0 as f64 * 8.0 / ((e - start) * 1e-6) / 1e9)
                }
                _ => None,
            };
            let n = g.ranks as f64;
            let busbw = algbw.map(|a| match g.collective {
                Some(Collective::AllReduce) => a * 2.0 * (n - 1.0) / n,
                Some(Collective::AllToAll) => a * (n - 1.0) / n,
                _ => a,
            });
            let thr: Vec<f64> = fl
                .iter()
                .filter_map(|f| Some(f.acked as f64 / f.fct_us?))
                .collect();
            groups.push(GroupResult {
                name: g.name.clone(),
                kind: g.kind.clone(),
                ranks: g.ranks,
                flows: fl.len(),
                unfinished,
                start_us: if start.is_finite() { start } else { 0.0 },
                end_us: end,
                algbw_gbps: algbw,
                busbw_gbps: busbw,
                busbw_of_ideal: busbw.map(|b| b / host_rate),
                fct: summarise(fl.iter().copied()),
                jain: (!thr.is_empty()).then(|| jain(&thr)),
            });
        }
        let acked: u64 = flows.iter().map(|f| f.acked).sum();
        let goodput = if run.end_us > 0.0 {
            acked as f64 * 8.0 / (run.end_us * 1e-6) / 1e9
        } else {
            0.0
        };
        let up: Vec<f64> = links
            .iter()
            .filter(|l| l.node_tier > 0 && l.peer_tier > l.node_tier)
            .map(|l| l.data_bytes as f64)
            .collect();
        let load_balance = if up.is_empty() {
            LoadBalance::default()
        } else {
            let mean = up.iter().sum::<f64>() / up.len() as f64;
            let max = up.iter().copied().fold(0.0, f64::max);
            let var = up.iter().map(|x| (x - mean) * (x - mean)).sum::<f64>() / up.len() as f64;
            LoadBalance {
                uplinks: up.len(),
                max_over_mean: if mean > 0.0 { max / mean } else { 0.0 },
                cv: if mean > 0.0 { var.sqrt() / mean } else { 0.0 },
            }
        };
        SimResults {
            fabric,
            scenario: plan.name.clone(),
            run,
            fct,
            groups,
            goodput_gbps: goodput,
            totals,
            load_balance,
            deadlock,
            flows,
            links,
            series,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percentiles_and_jain() {
        let v: Vec<f64> = (1..=100).map(|x| x as f64).collect();
        assert_eq!(percentile(&v, 0.5), 50.0);
        assert_eq!(percentile(&v, 0.99), 99.0);
        assert_eq!(percentile(&v, 1.0), 100.0);
        assert_eq!(jain(&[1.0, 1.0, 1.0]), 1.0);
        assert!((jain(&[1.0, 0.0]) - 0.5).abs() < 1e-12);
    }
}
