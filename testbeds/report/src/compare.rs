//! Comparing two runs of the same workplan (the simulator against the veth testbed):
//! flows are matched by id, and a flow that the two runs did not carry the same way
//! (another source, destination, size or priority) makes the comparison an error rather
//! than a quiet mismatch.
//!
//! ```
//! use report::compare::compare;
//! use report::outcome::{FlowOutcome, RunOutcome};
//! let run = |source: &str, fct: f64| RunOutcome {
//!     source: source.into(),
//!     duration_us: 1_000.0,
//!     flows: vec![FlowOutcome { id: 0, src: 1, dst: 0, size: Some(1_000_000), fct_us: Some(fct), delivered: 1_000_000, ..Default::default() }],
//!     ..Default::default()
//! };
//! let c = compare(&run("sim", 100.0), &run("veth", 150.0)).unwrap();
//! assert_eq!(c.flows[0].ratio, Some(1.5));
//! ```

use serde::Serialize;

use crate::outcome::{FabricCounts, FctStats, FlowOutcome, RunOutcome};

/// Why two runs cannot be compared.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum CompareError {
    /// A flow is in one run and not in the other.
    #[error(
        "flow {id} is in the {has} run but not in the {lacks} run: the runs were not given the same workplan"
    )]
    Unmatched {
        /// The flow's id.
        id: u32,
        /// The run that has it.
        has: String,
        /// The run that lacks it.
        lacks: String,
    },
    /// The runs carried a flow differently.
    #[error(
        "flow {id}: the {a} run carried it with {field} {va}, the {b} run with {vb}: compare only runs that honour the same settings"
    )]
    Differs {
        /// The flow's id.
        id: u32,
        /// The field that differs.
        field: &'static str,
        /// First run's name and value.
        a: String,
        /// Its value.
        va: String,
        /// Second run's name.
        b: String,
        /// Its value.
        vb: String,
    },
}

/// One flow in both runs.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct FlowPair {
    /// Flow id.
    pub id: u32,
    /// Source → destination.
    pub src: u32,
    /// Destination.
    pub dst: u32,
    /// FCT in the first run, µs.
    pub a_fct_us: Option<f64>,
    /// FCT in the second run, µs.
    pub b_fct_us: Option<f64>,
    /// `b / a` when both finished.
    pub ratio: Option<f64>,
}

/// Two runs side by side.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Comparison {
    /// Name of the first run (e.g. `sim`).
    pub a: String,
    /// Name of the second run (e.g. `veth`).
    pub b: String,
    /// Every flow, in id order.
    pub flows: Vec<FlowPair>,
    /// FCT figures of each run.
    pub a_fct: FctStats,
    /// FCT figures of the second run.
    pub b_fct: FctStats,
    /// Jain's index of each run's mean rates.
    pub jain: (f64, f64),
    /// Fabric counters of each run.
    pub counts: (FabricCounts, FabricCounts),
}

impl Comparison {
    /// `b / a` of the median FCTs (0 when the first run finished nothing).
    pub fn median_ratio(&self) -> f64 {
        ratio(self.a_fct.p50_us, self.b_fct.p50_us)
    }

    /// `b / a` of the last completions.
    pub fn last_ratio(&self) -> f64 {
        ratio(self.a_fct.max_us, self.b_fct.max_us)
    }
}

fn ratio(a: f64, b: f64) -> f64 {
    if a > 0.0 { b / a } else { 0.0 }
}

/// Compare run `b` against run `a`, flow by flow (matched by id).
pub fn compare(a: &RunOutcome, b: &RunOutcome) -> Result<Comparison, CompareError> {
    let (fa, fb) = (by_id(a), by_id(b));
    let mut flows = Vec::with_capacity(fa.len());
    let (mut i, mut j) = (0, 0);
    while i < fa.len() || j < fb.len() {
        match (fa.get(i), fb.get(j)) {
            (Some(x), Some(y)) if x.id == y.id => {
                same_flow(a, x, b, y)?;
                flows.push(FlowPair {
                    id: x.id,
                    src: x.src,
                    dst: x.dst,
                    a_fct_us: x.fct_us,
                    b_fct_us: y.fct_us,
                    ratio: x
                        .fct_us
                        .zip(y.fct_us)
                        .filter(|(p, _)| *p > 0.0)
                        .map(|(p, q)| q / p),
                });
                i += 1;
                j += 1;
            }
            (Some(x), y) if y.is_none_or(|y| x.id < y.id) => {
                return Err(unmatched(x.id, a, b));
            }
            (_, Some(y)) => return Err(unmatched(y.id, b, a)),
            _ => unreachable!("the loop runs while one side has flows left"),
        }
    }
    Ok(Comparison {
        a: a.source.clone(),
        b: b.source.clone(),
        flows,
        a_fct: a.fct(),
        b_fct: b.fct(),
        jain: (a.jain(), b.jain()),
        counts: (a.counts.clone(), b.counts.clone()),
    })
}

fn by_id(r: &RunOutcome) -> Vec<&FlowOutcome> {
    let mut v: Vec<&FlowOutcome> = r.flows.iter().collect();
    v.sort_by_key(|f| f.id);
    v
}

fn unmatched(id: u32, has: &RunOutcome, lacks: &RunOutcome) -> CompareError {
    CompareError::Unmatched {
        id,
        has: has.source.clone(),
        lacks: lacks.source.clone(),
    }
}

fn same_flow(
    a: &RunOutcome,
    x: &FlowOutcome,
    b: &RunOutcome,
    y: &FlowOutcome,
) -> Result<(), CompareError> {
    let fields: [(&'static str, String, String); 4] = [
        ("source", x.src.to_string(), y.src.to_string()),
        ("destination", x.dst.to_string(), y.dst.to_string()),
        ("size", format!("{:?}", x.size), format!("{:?}", y.size)),
        ("priority", x.priority.to_string(), y.priority.to_string()),
    ];
    for (field, va, vb) in fields {
        if va != vb {
            return Err(CompareError::Differs {
                id: x.id,
                field,
                a: a.source.clone(),
                va,
                b: b.source.clone(),
                vb,
            });
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(source: &str, fcts: &[(u32, Option<f64>)]) -> RunOutcome {
        RunOutcome {
            source: source.into(),
            duration_us: 1_000.0,
            flows: fcts
                .iter()
                .map(|&(id, fct)| FlowOutcome {
                    id,
                    src: id + 1,
                    dst: 0,
                    size: Some(10_000),
                    priority: 3,
                    start_us: 0.0,
                    fct_us: fct,
                    ideal_us: None,
                    delivered: if fct.is_some() { 10_000 } else { 0 },
                })
                .collect(),
            counts: FabricCounts::default(),
        }
    }

    #[test]
    fn flows_are_matched_by_id_whatever_their_order() {
        let a = run("sim", &[(0, Some(10.0)), (1, Some(20.0)), (2, Some(40.0))]);
        let b = run("veth", &[(2, Some(60.0)), (0, Some(30.0)), (1, None)]);
        let c = compare(&a, &b).unwrap();
        let ratios: Vec<Option<f64>> = c.flows.iter().map(|f| f.ratio).collect();
        assert_eq!(ratios, vec![Some(3.0), None, Some(1.5)]);
        assert_eq!(
            (c.a_fct.finished, c.b_fct.finished, c.b_fct.unfinished),
            (3, 2, 1)
        );
        assert_eq!(c.last_ratio(), 1.5);
    }

    #[test]
    fn a_flow_missing_or_carried_differently_is_refused() {
        let a = run("sim", &[(0, Some(10.0)), (1, Some(20.0))]);
        let b = run("veth", &[(0, Some(10.0))]);
        assert_eq!(
            compare(&a, &b).unwrap_err().to_string(),
            "flow 1 is in the sim run but not in the veth run: the runs were not given the same workplan"
        );
        assert!(matches!(
            compare(&b, &a),
            Err(CompareError::Unmatched { id: 1, .. })
        ));
        let mut c = a.clone();
        c.source = "veth".into();
        c.flows[1].priority = 5;
        assert_eq!(
            compare(&a, &c).unwrap_err().to_string(),
            "flow 1: the sim run carried it with priority 3, the veth run with 5: compare only runs that honour the same settings"
        );
    }
}
