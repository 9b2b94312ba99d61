//! ETS between traffic classes in the simulator (`[network] ets`): the bottleneck's
//! bytes split by the weights, strict priority without them.
//! (Run optimised in CI: `cargo test -p sim --profile ci --test sim_ets`.)

use cc_algos::{Duration, Instant};
use sim::SimConfig;

mod common;
use common::{plan, run, star};

/// Two line-rate senders (hosts 1, 2 at priorities 1, 2) into host 0 for 2 ms, lossless:
/// the share of priority 1 in what host 0 received.
fn share_of_priority_1(ets: &str) -> (f64, u64) {
    let p = plan(
        &format!(
            "{ets}
[[workload]]
kind = \"flows\"
[[workload.flow]]
src = 1
dst = 0
size = \"100MB\"
priority = 1
[[workload.flow]]
src = 2
dst = 0
size = \"100MB\"
priority = 2
"
        ),
        3,
    );
    let mut cfg = SimConfig {
        pfc: true,
        stop: Some(Instant::ZERO + Duration::millis(2)),
        ..SimConfig::default()
    };
    cfg.apply(&p.network).unwrap();
    let r = run(star(3), cfg, &p);
    let a: Vec<u64> = r.flows.iter().map(|f| f.acked).collect();
    (a[0] as f64 / (a[0] + a[1]) as f64, r.totals.drops)
}

#[test]
fn ets_splits_a_bottleneck_by_weight() {
    // Strict priority: priority 2 takes the link, 1 gets (nearly) nothing.
    let (strict, drops) = share_of_priority_1("");
    assert!(strict < 0.05, "strict: priority 1 got {strict}");
    assert_eq!(drops, 0);
    for (w1, w2) in [(70, 30), (50, 50), (20, 80)] {
        let (s, drops) = share_of_priority_1(&format!(
            "[network]\nets = [0, {w1}, {w2}, 0, 0, 0, 0, 0]\n"
        ));
        let want = w1 as f64 / (w1 + w2) as f64;
        eprintln!("ets {w1}:{w2}: priority 1 got {s:.3}");
        assert!((s - want).abs() < 0.03, "ets {w1}:{w2}: priority 1 got {s}");
        assert_eq!(drops, 0, "lossless");
    }
}

#[test]
fn ets_weight_over_100_is_an_error() {
    let e = scenario::Scenario::from_toml_str(
        "[network]\nets = [0, 120, 0, 0, 0, 0, 0, 0]\n[[workload]]\nkind = \"incast\"\nsenders = \"1..3\"\nreceiver = 0\nsize = \"1MB\"\n",
        "t.toml",
    )
    .unwrap()
    .compile(&scenario::CompileCtx::new(4, cc_algos::Rate::gbps(100), 1))
    .unwrap_err();
    assert_eq!(
        e.to_string(),
        "t.toml: network.ets[1]: weight 120: expected 0 (strict) or 1-100"
    );
}
