//! One outcome model for every kind of run (the packet simulator, the veth congestion
//! testbed): what each flow did and what the fabric counted, with every figure — FCT
//! percentiles and slowdown, Jain's index, goodput — computed here once.
//!
//! ```
//! use report::outcome::{FlowOutcome, RunOutcome};
//! let flow = |id, fct| FlowOutcome {
//!     id, src: id + 1, dst: 0, size: Some(1_000_000), priority: 3,
//!     start_us: 0.0, fct_us: Some(fct), ideal_us: Some(80.0), delivered: 1_000_000,
//! };
//! let run = RunOutcome { source: "sim".into(), flows: vec![flow(0, 100.0), flow(1, 300.0)], ..Default::default() };
//! let fct = run.fct();
//! assert_eq!((fct.finished, fct.p50_us, fct.max_us), (2, 100.0, 300.0));
//! assert_eq!(run.slowdown().max, 3.75);
//! ```

use serde::Serialize;

use crate::metrics::{jain, percentile};

/// One flow, as a run reports it. Times are µs of the run's own time (virtual time for the
/// simulator and for the veth testbed's scaled clock).
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct FlowOutcome {
    /// Flow id: its index in the workplan both runs were given.
    pub id: u32,
    /// Source host.
    pub src: u32,
    /// Destination host.
    pub dst: u32,
    /// Bytes to send (`None`: a long-lived flow).
    pub size: Option<u64>,
    /// The priority the run actually carried the flow at.
    pub priority: u8,
    /// When the flow started, µs.
    pub start_us: f64,
    /// Completion time (last byte − start), µs; `None` if unfinished.
    pub fct_us: Option<f64>,
    /// Ideal completion time on an idle path, µs, where the run knows it.
    pub ideal_us: Option<f64>,
    /// Bytes delivered in order.
    pub delivered: u64,
}

impl FlowOutcome {
    /// `fct / ideal`, when both are known.
    pub fn slowdown(&self) -> Option<f64> {
        Some(self.fct_us? / self.ideal_us.filter(|&i| i > 0.0)?)
    }

    /// Mean delivered rate over the flow's life (to `end_us` when unfinished), Gb/s.
    pub fn mean_gbps(&self, end_us: f64) -> f64 {
        let life = self.fct_us.unwrap_or(end_us - self.start_us).max(1e-9);
        self.delivered as f64 * 8.0 / (life * 1e3)
    }
}

/// What a run counted in the fabric, beside its flows.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct FabricCounts {
    /// Packets dropped anywhere (switch buffers, sockets, links).
    pub drops: u64,
    /// PFC pause frames sent by switches.
    pub pauses: u64,
    /// Packets marked CE by switches.
    pub ecn_marks: u64,
    /// CNPs sent by receivers.
    pub cnps: u64,
}

/// A whole run.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct RunOutcome {
    /// What ran it: `sim`, `veth`, …
    pub source: String,
    /// How long the run lasted, µs.
    pub duration_us: f64,
    /// Every flow, in id order.
    pub flows: Vec<FlowOutcome>,
    /// Fabric counters.
    pub counts: FabricCounts,
}

/// Percentiles of a set of values (nearest rank), with how many there were.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct Spread {
    /// Values counted.
    pub n: usize,
    /// Median.
    pub p50: f64,
    /// 99th percentile.
    pub p99: f64,
    /// Largest.
    pub max: f64,
}

impl Spread {
    /// The spread of `values` (any order).
    pub fn of(mut values: Vec<f64>) -> Spread {
        values.sort_by(f64::total_cmp);
        Spread {
            n: values.len(),
            p50: percentile(&values, 0.5),
            p99: percentile(&values, 0.99),
            max: values.last().copied().unwrap_or(0.0),
        }
    }
}

/// Flow completion times.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct FctStats {
    /// Sized flows that finished.
    pub finished: usize,
    /// Sized flows that did not.
    pub unfinished: usize,
    /// Median FCT, µs.
    pub p50_us: f64,
    /// 99th percentile FCT, µs.
    pub p99_us: f64,
    /// Largest FCT, µs.
    pub max_us: f64,
}

impl RunOutcome {
    /// Completion times of the sized flows.
    pub fn fct(&self) -> FctStats {
        let sized = self.flows.iter().filter(|f| f.size.is_some());
        let done: Vec<f64> = sized.clone().filter_map(|f| f.fct_us).collect();
        let s = Spread::of(done);
        FctStats {
            finished: s.n,
            unfinished: sized.count() - s.n,
            p50_us: s.p50,
            p99_us: s.p99,
            max_us: s.max,
        }
    }

    /// Slowdowns (FCT / ideal) of the finished flows whose ideal is known.
    pub fn slowdown(&self) -> Spread {
        Spread::of(
            self.flows
                .iter()
                .filter_map(FlowOutcome::slowdown)
                .collect(),
        )
    }

    /// Jain's index of the flows' mean delivered rates.
    pub fn jain(&self) -> f64 {
        let rates: Vec<f64> = self
            .flows
            .iter()
            .map(|f| f.mean_gbps(self.duration_us))
            .collect();
        jain(&rates)
    }

    /// Bytes delivered over the run's duration, Gb/s.
    pub fn goodput_gbps(&self) -> f64 {
        let bytes: u64 = self.flows.iter().map(|f| f.delivered).sum();
        bytes as f64 * 8.0 / (self.duration_us.max(1e-9) * 1e3)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn flow(id: u32, fct: Option<f64>, delivered: u64) -> FlowOutcome {
        FlowOutcome {
            id,
            src: id + 1,
            dst: 0,
            size: Some(1_000),
            priority: 0,
            start_us: 0.0,
            fct_us: fct,
            ideal_us: Some(10.0),
            delivered,
        }
    }

    #[test]
    fn figures_of_a_run() {
        let run = RunOutcome {
            source: "t".into(),
            duration_us: 100.0,
            flows: vec![
                flow(0, Some(10.0), 1_000),
                flow(1, Some(20.0), 1_000),
                flow(2, None, 500),
            ],
            counts: FabricCounts::default(),
        };
        let f = run.fct();
        assert_eq!((f.finished, f.unfinished), (2, 1));
        assert_eq!((f.p50_us, f.max_us), (10.0, 20.0));
        let s = run.slowdown();
        assert_eq!((s.n, s.p50, s.max), (2, 1.0, 2.0));
        // 2,500 B in 100 µs = 0.2 Gb/s.
        assert!((run.goodput_gbps() - 0.2).abs() < 1e-12);
        // Rates 0.8, 0.4 and 0.04 Gb/s: not fair.
        let j = run.jain();
        assert!(j > 0.5 && j < 0.8, "{j}");
        let even = RunOutcome {
            flows: vec![flow(0, Some(10.0), 1_000), flow(1, Some(10.0), 1_000)],
            ..run
        };
        assert!((even.jain() - 1.0).abs() < 1e-12);
    }
}
