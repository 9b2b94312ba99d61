//! Screens on `TestBackend` from a fixed snapshot of a real fat-tree (k=8), frozen clock.

mod common;

use common::*;
use fabric_tui::app::{Msg, Tab};
use fabric_tui::theme::Theme;
use fabric_tui::{Action, App};
use proptest::prelude::*;
use ratatui::style::Color;

fn act(app: &mut App, a: &[Action]) {
    for x in a {
        app.update(Msg::Action(*x));
    }
}

#[test]
fn main_view_at_three_sizes() {
    for (w, h) in [(80, 24), (120, 40), (200, 50)] {
        let mut app = app(Theme::Full, true);
        let t = draw(&mut app, w, h);
        insta::assert_snapshot!(format!("heat_{w}x{h}"), text(&t));
    }
}

#[test]
fn too_small() {
    let mut app = app(Theme::Full, true);
    let t = draw(&mut app, 30, 10);
    insta::assert_snapshot!(text(&t));
    assert!(text(&t).contains("terminal too small: 30×10"));
}

#[test]
fn colour_debug_and_themes() {
    let mut a = app(Theme::Full, true);
    let t = draw(&mut a, 80, 24);
    insta::assert_debug_snapshot!("colour_80x24", t.backend().buffer());
    for theme in [Theme::Ansi16, Theme::None] {
        let mut a = app(theme, true);
        let t = draw(&mut a, 120, 40);
        insta::assert_snapshot!(format!("theme_{theme:?}_120x40"), text(&t));
        insta::assert_debug_snapshot!(
            format!("theme_{theme:?}_colour_120x40"),
            t.backend().buffer()
        );
    }
}

#[test]
fn views_at_120x40() {
    for (tab, name) in [
        (Tab::Links, "links"),
        (Tab::Flows, "flows"),
        (Tab::Events, "events"),
    ] {
        let mut a = app(Theme::Full, true);
        while a.tab != tab {
            act(&mut a, &[Action::NextView]);
        }
        let t = draw(&mut a, 120, 40);
        insta::assert_snapshot!(format!("{name}_120x40"), text(&t));
    }
}

#[test]
fn help_lists_every_binding() {
    let mut a = app(Theme::Full, false);
    act(&mut a, &[Action::Help]);
    let t = draw(&mut a, 120, 40);
    let s = text(&t);
    for (_, help, keys) in a.keys.bindings() {
        assert!(s.contains(help), "help misses `{help}`");
        for k in keys {
            assert!(
                s.contains(&k.to_string()),
                "help misses key {k} for `{help}`"
            );
        }
    }
    insta::assert_snapshot!(s);
}

fn find(t: &ratatui::Terminal<ratatui::backend::TestBackend>, needle: &str) -> Option<(u16, u16)> {
    let s = text(t);
    for (y, line) in s.lines().enumerate() {
        if let Some(i) = line.find(needle) {
            let x = line[..i].chars().count();
            return Some((x as u16, y as u16));
        }
    }
    None
}

#[test]
fn loss_indicator_turns_red_where_drops_are() {
    let mut a = app(Theme::Full, true);
    let t = draw(&mut a, 200, 50);
    let (x, y) = find(&t, "LOSS DETECTED").expect("indicator");
    assert_eq!(t.backend().buffer()[(x, y)].fg, Color::Red);
    let where_ = a.fabric.link_name(DROP_LINK as u32);
    assert!(
        text(&t)
            .lines()
            .nth(y as usize)
            .unwrap()
            .contains(&format!("at {where_}"))
    );
    assert!(find(&t, "LOSSLESS").is_none());

    let mut a = app(Theme::Full, false);
    let t = draw(&mut a, 200, 50);
    let (x, y) = find(&t, "LOSSLESS").expect("indicator");
    assert_eq!(t.backend().buffer()[(x, y)].fg, Color::Green);
    assert!(find(&t, "LOSS DETECTED").is_none());
}

#[test]
fn filter_and_sort_in_the_links_table() {
    let mut a = app(Theme::Full, true);
    act(&mut a, &[Action::NextView, Action::Filter]);
    for c in "util>50 and pfc>0".chars() {
        a.update(Msg::Key(crossterm::event::KeyEvent::from(
            crossterm::event::KeyCode::Char(c),
        )));
    }
    a.update(Msg::Key(crossterm::event::KeyEvent::from(
        crossterm::event::KeyCode::Enter,
    )));
    assert!(a.filter.error.is_none());
    let rows = a.table_rows();
    let r = a.rates();
    assert!(!rows.is_empty());
    assert!(
        rows.iter()
            .all(|&l| r[l as usize].util > 0.5 && r[l as usize].pfc_per_s > 0.0)
    );
    assert!(
        rows.windows(2)
            .all(|w| r[w[0] as usize].util >= r[w[1] as usize].util)
    );
    let want = (0..a.fabric.links.len())
        .filter(|&l| r[l].util > 0.5 && r[l].pfc_per_s > 0.0)
        .count();
    assert_eq!(rows.len(), want);
    let t = draw(&mut a, 120, 40);
    insta::assert_snapshot!(text(&t));
    // sort by drops: the dropping link comes first
    act(&mut a, &[Action::Back, Action::Sort, Action::Sort]);
    assert!(a.filter.expr.is_none());
    assert_eq!(a.table_rows()[0], DROP_LINK as u32);
    // a bad filter says why and filters nothing
    act(&mut a, &[Action::Filter]);
    for c in "util>>3".chars() {
        a.update(Msg::Key(crossterm::event::KeyEvent::from(
            crossterm::event::KeyCode::Char(c),
        )));
    }
    a.update(Msg::Key(crossterm::event::KeyEvent::from(
        crossterm::event::KeyCode::Enter,
    )));
    assert_eq!(
        a.filter.error.as_deref(),
        Some("at column 6: expected a number after `util`")
    );
    let t = draw(&mut a, 120, 40);
    assert!(text(&t).contains("filter `util>>3`: at column 6"));
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(200))]
    #[test]
    fn no_panic_at_any_size(w in 1u16..=300, h in 1u16..=100, tab in 0usize..4, help: bool, theme in 0usize..3, drill: bool) {
        let theme = [Theme::Full, Theme::Ansi16, Theme::None][theme];
        let mut a = app(theme, true);
        a.update(Msg::Resize(w, h));
        for _ in 0..tab {
            act(&mut a, &[Action::NextView]);
        }
        if drill {
            act(&mut a, &[Action::Down, Action::Right, Action::Enter, Action::Enter, Action::Enter, Action::Enter]);
        }
        if help {
            act(&mut a, &[Action::Help]);
        }
        let _ = draw(&mut a, w, h);
    }
}

#[test]
fn disconnected_greys_out_stale_values() {
    let mut a = app(Theme::Full, true);
    a.update(Msg::Status(fabric_tui::app::SourceStatus::Disconnected {
        name: "fabric serve 10.0.0.1:9100".into(),
        since: "17:32:10 UTC".into(),
        reason: "connection refused".into(),
    }));
    let t = draw(&mut a, 120, 40);
    let s = text(&t);
    assert!(
        s.contains(
            "✖ DISCONNECTED (values stale) from fabric serve 10.0.0.1:9100 since 17:32:10 UTC: conn"
        ),
        "{s}"
    );
    let b = t.backend().buffer();
    for y in 1..39 {
        for x in 0..120 {
            assert_eq!(b[(x, y)].fg, Color::DarkGray, "({x}, {y}) not greyed");
        }
    }
    insta::assert_snapshot!(s);
}

/// The footer comes from the key map and the view: a rebound key shows as bound, each
/// view lists its own keys, and at 80 columns whole hints are dropped (never cut
/// mid-word); `? help` and `q quit` always stay.
#[test]
fn footer_is_built_from_the_key_map_and_the_view() {
    let mut a = app(Theme::Full, true);
    a.keys.bind("freeze", &["z".into()]).unwrap();
    a.keys.bind("sort", &["o".into()]).unwrap();
    let footer = |a: &mut fabric_tui::App, w| {
        let t = draw(a, w, 24);
        text(&t).lines().last().unwrap().trim_end().to_string()
    };
    let heat = footer(&mut a, 80);
    assert!(heat.starts_with(" ? help"), "{heat}");
    assert!(heat.ends_with("q quit"), "{heat}");
    assert!(
        heat.contains("z freeze") && !heat.contains("space"),
        "{heat}"
    );
    assert!(heat.contains("enter drill"), "{heat}");
    a.update(Msg::Action(Action::NextView));
    let links = footer(&mut a, 80);
    assert!(
        links.contains("o sort") && links.contains("S reverse"),
        "{links}"
    );
    assert!(!links.contains("drill"), "{links}");
    // narrow: fewer hints, each whole
    let narrow = footer(&mut a, 40);
    assert!(
        narrow.starts_with(" ? help") && narrow.ends_with("q quit"),
        "{narrow}"
    );
    let wide = footer(&mut a, 200);
    for hint in narrow.trim().split("  ") {
        assert!(
            wide.contains(hint),
            "`{hint}` is not a whole hint: {narrow}"
        );
    }
    // unbinding an action drops its hint
    a.keys.bind("sort", &[]).unwrap();
    assert!(!footer(&mut a, 200).contains("sort"));
}

/// The help scrolls: at 80×24 every binding can be reached (a third was cut off).
#[test]
fn help_scrolls_at_80x24() {
    let mut a = app(Theme::Full, true);
    a.update(Msg::Resize(80, 24));
    a.update(Msg::Action(Action::Help));
    let first = text(&draw(&mut a, 80, 24));
    assert!(first.contains("help 1–22 of "), "{first}");
    assert!(!first.contains("suspend to the shell"), "{first}");
    a.update(Msg::Action(Action::End));
    let last = text(&draw(&mut a, 80, 24));
    assert!(last.contains("suspend to the shell"), "{last}");
    assert!(last.contains("glyphs: ✖ link down"), "{last}");
    // Up from the end moves one line at once (the scroll is clamped)
    a.update(Msg::Action(Action::Up));
    let up = text(&draw(&mut a, 80, 24));
    assert!(!up.contains("glyphs: ✖ link down"), "{up}");
    a.update(Msg::Action(Action::Home));
    assert_eq!(text(&draw(&mut a, 80, 24)), first);
}

/// Flows view: `s` sorts there too, a finished flow shows no rate (not its last one),
/// the utilisation chart has a legend and the time axes say when.
#[test]
fn flows_view_sorts_has_legends_and_finished_flows_send_nothing() {
    let mut a = app(Theme::Full, true);
    act(&mut a, &[Action::NextView, Action::NextView]);
    let s = text(&draw(&mut a, 120, 40));
    let row = |s: &str, id: &str| {
        s.lines()
            .find(|l| l.starts_with(&format!("│{id} ")))
            .unwrap_or_else(|| panic!("no flow {id}:\n{s}"))
            .to_string()
    };
    // flow 5 finished at 100 Gb/s: no rate, and last by rate
    assert!(!row(&s, "5").contains("100Gb/s"), "{}", row(&s, "5"));
    assert!(s.contains("rate▼") && s.contains("sort rate ▼"), "{s}");
    let first = s.lines().position(|l| l.starts_with("│4 ")).unwrap();
    let finished = s.lines().position(|l| l.starts_with("│5 ")).unwrap();
    let zero = s.lines().position(|l| l.starts_with("│0 ")).unwrap();
    assert!(first < zero && zero < finished, "{s}");
    // legends name the tiers; the axes say when (11.00s … 12.00s)
    for name in ["host–leaf", "leaf–spine", "spine–core"] {
        assert!(s.matches(name).count() >= 2, "no legend `{name}`:\n{s}");
    }
    assert!(s.contains("11.00s") && s.contains("12.00s"), "{s}");
    // `s`: by bytes delivered, largest first; `S` reverses
    act(&mut a, &[Action::Sort]);
    let s = text(&draw(&mut a, 120, 40));
    assert!(s.contains("done▼"), "{s}");
    let pos = |s: &str, id: &str| s.lines().position(|l| l.starts_with(&format!("│{id} ")));
    assert!(pos(&s, "5") < pos(&s, "0"), "{s}");
    act(&mut a, &[Action::SortReverse]);
    let s = text(&draw(&mut a, 120, 40));
    assert!(s.contains("done▲") && pos(&s, "0") < pos(&s, "5"), "{s}");
}

/// The 16-colour legend names every colour the heat map uses (it showed four of seven).
#[test]
fn ansi16_legend_names_every_colour_of_the_map() {
    let mut a = app(Theme::Ansi16, true);
    let t = draw(&mut a, 120, 40);
    let b = t.backend().buffer();
    let legend_y = (0..b.area.height)
        .find(|&y| {
            let line: String = (0..b.area.width).map(|x| b[(x, y)].symbol()).collect();
            line.contains("! drops P PFC")
        })
        .expect("a legend line");
    let mut legend = std::collections::BTreeSet::new();
    let mut map = std::collections::BTreeSet::new();
    for y in 0..b.area.height {
        for x in 0..b.area.width {
            let c = &b[(x, y)];
            match c.symbol() {
                "█" if y == legend_y => {
                    legend.insert(format!("{:?}", c.fg));
                }
                "▀" | "▄" if y < legend_y => {
                    map.insert(format!("{:?}", c.fg));
                    map.insert(format!("{:?}", c.bg));
                }
                _ => {}
            }
        }
    }
    map.remove("Reset");
    // white is the cursor, which the legend line describes (`▸ pod 0 × core 3: …`)
    map.remove("White");
    assert!(map.len() >= 4, "{map:?}");
    let missing: Vec<_> = map.difference(&legend).collect();
    assert!(missing.is_empty(), "not in the legend: {missing:?}");
    assert_eq!(legend.len(), 7, "{legend:?}");
}
