//! Not root-only (the simulator twin alone): DCQCN's 8:1 incast is bistable. Its
//! flows' completion times depend on which senders get cut first, and start times a few
//! microseconds apart — what a real-time veth run's senders always have — flip a run
//! between two outcomes. The twin with every flow starting at the same instant gives
//! one of them, so a veth median is compared against one sample of a two-valued
//! outcome (docs/veth.md, "DCQCN's two outcomes").

use cc_algos::{CcKind, Duration};
use veth::congestion::{CongestionConfig, twin};
mod common;
use common::scenario_plan;

/// The twin's median FCT (µs) for each of `seeds` runs whose flows start up to
/// `jitter` later than planned (`twin::jittered`, the offsets of run `seed`).
fn p50s_with_start_jitter(jitter: Duration, seeds: u64) -> Vec<f64> {
    let base = scenario_plan("veth-incast-8to1.toml", 9);
    (1..=seeds)
        .map(|seed| {
            let mut cfg = CongestionConfig::new(9);
            cfg.cc = "dcqcn".parse::<CcKind>().unwrap();
            cfg.seed = seed;
            cfg.apply(&base.network).unwrap();
            let plan = twin::jittered(&base, jitter, seed);
            let s = twin::run_sim(&cfg, &plan, None).unwrap();
            let mut fct: Vec<f64> = s.flows.iter().map(|x| x.fct_us.unwrap()).collect();
            fct.sort_by(f64::total_cmp);
            fct[fct.len() / 2]
        })
        .collect()
}

#[test]
fn dcqcn_incast_in_the_twin_has_two_outcomes_a_few_microseconds_of_start_jitter_apart() {
    let sync = p50s_with_start_jitter(Duration::ZERO, 8);
    eprintln!("starts together: p50 {sync:?} µs");
    assert!(
        sync.iter().all(|&p| (3_400.0..3_500.0).contains(&p)),
        "with every flow starting at once the seed changes nothing: {sync:?}"
    );
    // Printed for docs/veth.md's table, not asserted.
    for us in [5, 50] {
        let p = p50s_with_start_jitter(Duration::micros(us), 24);
        eprintln!("starts up to {us} µs apart: p50 {p:?} µs");
    }
    let jittered = p50s_with_start_jitter(Duration::micros(20), 24);
    eprintln!("starts up to 20 µs apart: p50 {jittered:?} µs");
    let low = jittered.iter().filter(|&&p| p < 2_800.0).count();
    let high = jittered.iter().filter(|&&p| p > 3_200.0).count();
    assert!(
        low >= 6 && high >= 6 && low + high == jittered.len(),
        "two outcomes, each seen often, nothing between: {low} under 2.8 ms, {high} over 3.2 ms of {}",
        jittered.len()
    );
}

/// A veth run's own starts (`FlowResult::first_sent_us`) move the twin's flows: each to
/// when it left its host, never earlier than planned; a flow never sent keeps its start.
#[test]
fn the_twin_replays_a_run_s_own_starts_and_its_lateness_is_measured() {
    use veth::congestion::{CongestionReport, FlowResult};
    let plan = scenario_plan("veth-incast-8to1.toml", 9);
    let planned: Vec<f64> = plan
        .flows
        .iter()
        .map(|f| f.start.picos() as f64 / 1e6)
        .collect();
    // Flow k left k × 3 µs late, except the last, which never left; flow 0 "early" by a
    // rounding of the clocks.
    let n = plan.flows.len();
    let report = CongestionReport {
        flows: plan
            .flows
            .iter()
            .enumerate()
            .map(|(k, f)| FlowResult {
                id: f.id,
                first_sent_us: match k {
                    0 => Some(planned[0] - 0.001),
                    k if k == n - 1 => None,
                    k => Some(planned[k] + 3.0 * k as f64),
                },
                ..FlowResult::default()
            })
            .collect(),
        ..CongestionReport::default()
    };
    let replayed = twin::replayed(&plan, &report);
    for (k, f) in replayed.flows.iter().enumerate() {
        let late = f.start.picos() as f64 / 1e6 - planned[k];
        let want = if k == 0 || k == n - 1 {
            0.0
        } else {
            3.0 * k as f64
        };
        assert!(
            (late - want).abs() < 1e-6,
            "flow {k}: {late} µs late, want {want}"
        );
    }
    let (lo, hi) = twin::start_lateness_us(&plan, &report).unwrap();
    assert_eq!(lo, 0.0, "an early stamp counts as on time");
    assert!((hi - 3.0 * (n - 2) as f64).abs() < 1e-6, "{hi}");
    assert_eq!(
        twin::start_lateness_us(&plan, &CongestionReport::default()),
        None
    );
    // The replayed plan runs in the twin like any other.
    let mut cfg = CongestionConfig::new(9);
    cfg.cc = "dctcp".parse::<CcKind>().unwrap();
    cfg.apply(&plan.network).unwrap();
    let s = twin::run_sim(&cfg, &replayed, None).unwrap();
    assert!(s.flows.iter().all(|f| f.fct_us.is_some()));
}
