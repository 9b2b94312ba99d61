//! The tenant filter (`--tenants`, key `t`) and per-priority counters in the link detail,
//! drawn on `TestBackend` from the fixed k=8 fixture of `common`.

mod common;

use common::*;
use fabric_api::Frame;
use fabric_tui::app::{Msg, Options, SourceStatus, Tab};
use fabric_tui::ingest::Aggregator;
use fabric_tui::tenants::TenantSpec;
use fabric_tui::theme::Theme;
use fabric_tui::{Action, App};

fn act(app: &mut App, a: &[Action]) {
    for x in a {
        app.update(Msg::Action(*x));
    }
}

/// Tenants a (servers 0-7: pod 0's first two leaves) and b (servers 8-19).
fn spec() -> TenantSpec {
    let path = std::env::temp_dir().join(format!("tui-tenants-test-{}.toml", std::process::id()));
    std::fs::write(
        &path,
        "[[tenants]]\nname = \"a\"\nservers = [\"0-7\"]\nclasses = [3]\nshare = 50\n\
         [[tenants]]\nname = \"b\"\nservers = [\"8-19\"]\nshare = 50\n",
    )
    .unwrap();
    let s = TenantSpec::load(&path, &fabric()).unwrap();
    let _ = std::fs::remove_file(&path);
    s
}

#[test]
fn t_restricts_the_links_table_and_header_to_a_tenant_and_back() {
    let mut app = app(Theme::None, true);
    app.set_tenants(spec());
    act(&mut app, &[Action::ViewLinks, Action::Tenant]);
    assert_eq!(app.tenant_name(), Some("a"));
    let t = draw(&mut app, 120, 30);
    let screen = text(&t);
    assert!(screen.contains("TENANT a: 8 host links"), "{screen}");
    assert!(screen.contains("links 1–8 of 8 (of "), "{screen}");
    let ids = app.table_rows();
    assert_eq!(ids.len(), 8);
    for id in &ids {
        let l = &app.fabric.links[*id as usize];
        let host = app.fabric.node_name(l.a);
        let n: u32 = host[4..host.find('-').unwrap()].parse().unwrap();
        assert!(n < 8, "{host} is not a's");
    }
    // The header's totals are a's links' only: host–leaf tier, 8 links.
    let tot = app.view_totals().unwrap();
    assert_eq!(tot.tiers[0].links, 8);
    assert_eq!((tot.tiers[1].links, tot.tiers[2].links), (0, 0));
    insta::assert_snapshot!("tenant_a_links_120x30", screen);

    act(&mut app, &[Action::Tenant]);
    assert_eq!(app.tenant_name(), Some("b"));
    assert_eq!(app.table_rows().len(), 12);
    act(&mut app, &[Action::Tenant]);
    assert_eq!(app.tenant_name(), None);
    assert_eq!(app.table_rows().len(), app.fabric.links.len());
    let screen = text(&draw(&mut app, 120, 30));
    assert!(!screen.contains("TENANT"), "{screen}");
}

#[test]
fn without_a_tenant_file_t_does_nothing() {
    let mut app = app(Theme::None, true);
    act(&mut app, &[Action::Tenant]);
    assert_eq!(app.tenant, None);
}

#[test]
fn the_link_detail_shows_counters_per_priority_or_na() {
    let mut app = app(Theme::None, true);
    act(&mut app, &[Action::ViewLinks, Action::Enter]);
    let id = app.link_open.expect("a link is open");
    let screen = text(&draw(&mut app, 120, 30));
    assert!(screen.contains("priority         3"), "{screen}");
    assert!(screen.contains("PFC/s"), "{screen}");
    insta::assert_snapshot!("link_detail_priorities_120x30", screen);

    // The same fixture from a source without per-priority counters: "n/a", not zeros.
    let mut frames = frames(true).into_iter();
    let Some(Frame::Fabric(info)) = frames.next() else {
        unreachable!()
    };
    let (mut agg, view) = Aggregator::new(info);
    let mut plain = App::new(
        view.clone(),
        Options {
            theme: Theme::None,
            ..Default::default()
        },
    );
    plain.update(Msg::Status(SourceStatus::Live("no priorities".into())));
    for f in frames {
        let f = match f {
            Frame::Snapshot(mut s) => {
                s.counters.pfc_tx.clear();
                s.gauges.queue_bytes.clear();
                Frame::Snapshot(s)
            }
            other => other,
        };
        for m in agg.frame(f, &view) {
            plain.update(m);
        }
    }
    plain.update(Msg::Action(Action::ViewLinks));
    plain.link_open = Some(id);
    assert_eq!(plain.tab, Tab::Links);
    let screen = text(&draw(&mut plain, 120, 30));
    assert!(
        screen.contains("per priority: n/a (this source has no per-priority counters)"),
        "{screen}"
    );
}
