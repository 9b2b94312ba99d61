//! The demo's seeded simulation (fat-tree k=4, failure at 200 µs, repair at 600 µs),
//! stepped without pacing: real traffic, the failure and repair seen, and the same screens
//! from two runs.

mod common;

use cc_algos::Duration;
use fabric_tui::app::{Msg, SourceStatus};
use fabric_tui::demo::{Demo, DemoConfig};
use fabric_tui::ingest::Aggregator;
use fabric_tui::metrics::Severity;
use fabric_tui::{Action, App};

fn cfg() -> DemoConfig {
    DemoConfig {
        preset: "fat-tree-k4".into(),
        fail_at: Duration::micros(200),
        repair_at: Duration::micros(600),
        cycle: Duration::millis(1),
        ..DemoConfig::default()
    }
}

/// Run `steps` steps; return the app and the screen at 120×40 after each `shot` steps.
fn run(steps: usize, shots: &[usize]) -> (App, Vec<String>) {
    let mut d = Demo::new(&cfg()).unwrap();
    let (mut agg, view) = Aggregator::new(d.info());
    let mut app = App::new(view.clone(), Default::default());
    app.update(Msg::Status(SourceStatus::Live("demo (seeded)".into())));
    let mut screens = Vec::new();
    for i in 1..=steps {
        for f in d.step().unwrap() {
            for m in agg.frame(f, &view) {
                app.update(m);
            }
        }
        if shots.contains(&i) {
            screens.push(common::text(&common::draw(&mut app, 120, 40)));
        }
    }
    (app, screens)
}

#[test]
fn traffic_failure_and_repair_deterministically() {
    let (mut app, screens) = run(40, &[5, 15, 40]);
    let s = app.current().unwrap();
    assert!(
        s.totals.tiers[0].max > 0.5,
        "hosts send: {:?}",
        s.totals.tiers
    );
    assert!(
        s.totals.tiers[1].max > 0.1,
        "leaf uplinks carry traffic: {:?}",
        s.totals.tiers
    );
    let texts: Vec<&str> = app.events.iter().map(|e| e.text.as_str()).collect();
    let down = app
        .events
        .iter()
        .position(|e| e.severity == Severity::Bad && e.text.starts_with("link down"))
        .expect("a link down event");
    let up = app
        .events
        .iter()
        .position(|e| e.text.starts_with("link up"))
        .expect("a link up event");
    assert!(down < up, "{texts:?}");
    assert!(
        app.events[up].text.ends_with(", down for 400.0µs"),
        "{}",
        app.events[up].text
    );
    assert!(texts.iter().any(|t| t.starts_with("reroute")), "{texts:?}");
    // during the failure (screen 2, t = 300 µs) the failed link shows ✖; after the repair not
    assert!(screens[1].contains("✖ 1 link down"), "{}", screens[1]);
    assert!(screens[2].contains("all links up"), "{}", screens[2]);
    insta::assert_snapshot!("demo_k4_failed_120x40", screens[1]);
    app.update(Msg::Action(Action::NextView));
    app.update(Msg::Action(Action::NextView));
    insta::assert_snapshot!(
        "demo_k4_flows_120x40",
        common::text(&common::draw(&mut app, 120, 40))
    );
    let (_, again) = run(40, &[5, 15, 40]);
    assert_eq!(screens, again, "same seed, same screens");
}

/// Every preset runs the built-in workload (deepseek-mpft, alibaba-hpn and dragonfly-plus
/// asked for 134,201,344 flows before it was scaled to the fabric), and on the
/// multi-plane fabric every plane carries traffic.
#[test]
fn builtin_workload_fits_every_preset_and_fills_every_plane() {
    for preset in [
        "deepseek-mpft",
        "alibaba-hpn",
        "dragonfly-plus",
        "superpod-h100",
    ] {
        let c = DemoConfig {
            preset: preset.into(),
            ..DemoConfig::default()
        };
        let mut d = Demo::new(&c).unwrap_or_else(|e| panic!("{preset}: {e}"));
        if preset != "deepseek-mpft" {
            continue;
        }
        let (mut agg, view) = Aggregator::new(d.info());
        let mut last = None;
        for _ in 0..4 {
            for f in d.step().unwrap() {
                for m in agg.frame(f, &view) {
                    if let Msg::Sample(s) = m {
                        last = Some(s);
                    }
                }
            }
        }
        let s = last.expect("samples");
        let mut busy = vec![false; view.planes.len()];
        for (l, r) in view.links.iter().zip(&s.links) {
            if r.util > 0.1 {
                busy[l.plane.unwrap_or(0) as usize] = true;
            }
        }
        assert_eq!(busy, vec![true; 8], "traffic in every plane of {preset}");
    }
}

/// A simulation that reaches its stop time is followed by a new epoch: the demo runs on,
/// its clock never going back (the demo used to end after about 52 s).
#[test]
fn demo_runs_on_past_the_end_of_a_simulation() {
    let mut d = Demo::new(&DemoConfig {
        stop: Duration::micros(300),
        ..cfg()
    })
    .unwrap();
    let mut last = 0;
    for _ in 0..40 {
        for f in d.step().expect("runs on") {
            if let fabric_api::Frame::Snapshot(s) = f {
                assert!(s.time.ns > last, "time goes on: {} after {last}", s.time.ns);
                last = s.time.ns;
            }
        }
    }
    assert!(d.epochs() >= 2, "epochs {}", d.epochs());
    assert_eq!(last, 800_000);
}
