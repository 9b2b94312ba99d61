//! Root-only: every congestion-control algorithm really runs on veth — on the 8:1
//! incast (8 × 1 MB into one host, 100 Gb/s virtual on 1 Gb/s veth) each controller
//! cuts what it controls (DCQCN its rate; DCTCP, NSCC and HPCC their window; RCCC the
//! credit its receiver grants) and then raises it again. HPCC reacts only because the
//! userspace switch stamps INT on data frames (`veth_core::int`); before, its window
//! never moved. All five run in this one test, one after another (about 1 s each).
//!
//! Veth is not deterministic: the test asks for a reaction of most flows, not of all,
//! and re-runs a run that failed while its engine fell behind real time (`common::run_checked`).

use cc_algos::Rate;
use scenario::{CompileCtx, Scenario};
use veth::congestion::{CongestionConfig, CongestionReport};
mod common;
use common::{enabled, run_checked, serial};

const ALGORITHMS: [&str; 5] = ["dcqcn", "dctcp", "nscc", "rccc", "hpcc"];

fn incast_8_to_1() -> scenario::Workplan {
    Scenario::from_toml_str(
        r#"
        name = "incast8"
        [[workload]]
        kind = "incast"
        senders = "1..9"
        receiver = 0
        size = "1MB"
        "#,
        "incast8.toml",
    )
    .unwrap()
    .compile(&CompileCtx::new(9, Rate::gbps(100), 1))
    .unwrap()
}

fn reactions(r: &CongestionReport) -> String {
    r.flows
        .iter()
        .map(|f| match &f.reaction {
            Some(x) => format!(
                "flow {}: {} ref {:.1} min {:.1} then {:.1} (cut {}, recovered {}; CNPs {}, CE {}, {:.0}–{:.0} µs, {} samples)",
                f.id,
                x.signal,
                x.reference,
                x.min,
                x.max_after_min,
                x.cut,
                x.recovered,
                f.cnps,
                f.ce_packets,
                f.start_us,
                f.completed_us.unwrap_or(f64::NAN),
                f.cc_rate_gbps.len(),
            ),
            None => format!("flow {}: not judged", f.id),
        })
        .collect::<Vec<_>>()
        .join("; ")
}

/// Whether most flows of `r` cut then recovered, with nothing lost.
fn reacted(r: &CongestionReport) -> Result<(), String> {
    let reacted = r
        .flows
        .iter()
        .filter(|f| f.reaction.as_ref().is_some_and(|x| x.cut && x.recovered))
        .count();
    if !r.all_completed || r.total_drops() != 0 || r.malformed != 0 {
        return Err(format!(
            "completed {}, drops {}, malformed {}",
            r.all_completed,
            r.total_drops(),
            r.malformed
        ));
    }
    if reacted < 5 {
        return Err(format!(
            "only {reacted} of 8 flows cut then recovered (marks {}, pauses {}, {:.0} µs, late switch {:.0} µs hosts {:.0} µs): {}",
            r.ecn_marks,
            r.pauses_sent,
            r.duration_us,
            r.switch_max_late_us,
            r.hosts_max_late_us,
            reactions(r)
        ));
    }
    Ok(())
}

#[test]
fn every_algorithm_cuts_then_recovers_on_the_8_to_1_incast() {
    if !enabled() {
        return;
    }
    let _serial = serial();
    let plan = incast_8_to_1();
    let mut failures = Vec::new();
    for cc in ALGORITHMS {
        let mut cfg = CongestionConfig::new(9);
        cfg.cc = cc.parse().unwrap();
        match run_checked(&cfg, &plan, reacted) {
            Ok(r) => println!(
                "{cc}: completed {}, drops {}, marks {}, pauses {}; {}",
                r.all_completed,
                r.total_drops(),
                r.ecn_marks,
                r.pauses_sent,
                reactions(&r)
            ),
            Err(why) => failures.push(format!("{cc}: {why}")),
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}
