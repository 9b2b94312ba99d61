//! Update logic without a terminal, the draw count while frozen, and replay = live.

mod common;

use common::*;
use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use fabric_api::recording::Writer;
use fabric_tui::app::{Msg, Request, Tab};
use fabric_tui::driver::{MIN_FRAME, Ui};
use fabric_tui::heatmap::Level;
use fabric_tui::source::Replay;
use fabric_tui::theme::Theme;
use fabric_tui::units::Units;
use fabric_tui::{Action, App};
use ratatui::Terminal;
use ratatui::backend::TestBackend;
use std::time::Instant;

fn key(app: &mut App, c: KeyCode) {
    app.update(Msg::Key(KeyEvent::new(c, KeyModifiers::NONE)));
}

#[test]
fn keys_drive_the_state() {
    let mut a = app(Theme::Full, true);
    a.update(Msg::Resize(120, 40));
    key(&mut a, KeyCode::Tab);
    assert_eq!(a.tab, Tab::Links);
    key(&mut a, KeyCode::BackTab);
    assert_eq!(a.tab, Tab::Heatmap);
    key(&mut a, KeyCode::Char('u'));
    assert_eq!(a.units, Units::Bytes);
    key(&mut a, KeyCode::Char('f'));
    assert!(a.faults_only);
    key(&mut a, KeyCode::Char('?'));
    assert!(a.help);
    key(&mut a, KeyCode::Char('j')); // ignored under help
    assert_eq!(a.cursor, (0, 0));
    key(&mut a, KeyCode::Esc);
    assert!(!a.help);
    key(&mut a, KeyCode::Char('<'));
    key(&mut a, KeyCode::Char('+'));
    assert_eq!(a.requests, vec![Request::Seek(-1), Request::Speed(2.0)]);
    key(&mut a, KeyCode::Char('q'));
    assert!(a.quit);
}

#[test]
fn drill_down_and_back_with_breadcrumb() {
    let mut a = app(Theme::Full, true);
    a.update(Msg::Resize(120, 40));
    // pod × core grid fits 1:1 at 120×40: Enter on (pod 1, core 2) opens pod 1's grid
    for x in [Action::Down, Action::Right, Action::Right, Action::Enter] {
        a.update(Msg::Action(x));
    }
    assert_eq!(a.breadcrumb(), vec!["plane 0", "pod 1"]);
    let (g, _, pod) = a.grid().unwrap();
    assert_eq!((pod, g.rows.len(), g.cols.len()), (Some(1), 4, 4));
    // leaf × agg of pod 1: cell (leaf 0, agg 1) → its links → one link
    for x in [Action::Right, Action::Enter] {
        a.update(Msg::Action(x));
    }
    assert!(matches!(
        a.path.last(),
        Some(Level::Cell { row: 0, col: 1 })
    ));
    assert_eq!(a.breadcrumb()[2], "pod1-leaf0 ↔ pod1-agg1");
    let links = a.cell_links();
    assert_eq!(links.len(), 1);
    a.update(Msg::Action(Action::Enter));
    assert_eq!(a.path.last(), Some(&Level::Link(links[0])));
    let t = draw(&mut a, 120, 40);
    insta::assert_snapshot!(text(&t));
    for _ in 0..3 {
        a.update(Msg::Action(Action::Back));
    }
    assert!(a.path.is_empty());
    assert_eq!(a.breadcrumb(), vec!["plane 0"]);
}

#[test]
fn links_table_enter_opens_the_link_there_and_esc_comes_back() {
    let mut a = app(Theme::Full, true);
    a.update(Msg::Resize(120, 40));
    for x in [Action::NextView, Action::Sort, Action::Sort, Action::Enter] {
        a.update(Msg::Action(x));
    }
    // opened in the view it was chosen from (it used to jump to the heat map)
    assert_eq!(a.tab, Tab::Links);
    assert_eq!(a.link_open, Some(DROP_LINK as u32));
    assert!(a.path.is_empty());
    let screen = text(&draw(&mut a, 120, 40));
    assert!(screen.contains("Esc back to the table"), "{screen}");
    a.update(Msg::Action(Action::Back));
    assert_eq!((a.tab, a.link_open), (Tab::Links, None));
    assert_eq!(a.table_ids()[a.selected], DROP_LINK as u32);
}

#[test]
fn the_links_cursor_follows_the_link_when_rows_re_sort() {
    let mut a = app(Theme::Full, true);
    a.update(Msg::Resize(120, 40));
    a.update(Msg::Action(Action::NextView));
    for _ in 0..7 {
        a.update(Msg::Action(Action::Down));
    }
    let link = a.table_ids()[7];
    assert_eq!(a.selected_link, Some(link));
    // another sort column: the cursor moves to the link's new row
    for _ in 0..3 {
        a.update(Msg::Action(Action::Sort));
        assert_eq!(a.table_ids()[a.selected], link, "sort {:?}", a.sort);
    }
    a.update(Msg::Action(Action::SortReverse));
    assert_eq!(a.table_ids()[a.selected], link);
    // back to utilisation, then a new sample in which the link is the busiest of all
    while a.sort != fabric_tui::table::SortKey::Util {
        a.update(Msg::Action(Action::Sort));
    }
    a.update(Msg::Action(Action::SortReverse));
    let mut s = a.current().unwrap().clone();
    s.links[link as usize].util = 1.0;
    s.by_util.clear();
    s.finish(&a.fabric);
    a.update(Msg::Sample(s));
    assert_eq!(a.table_ids()[0], link);
    assert_eq!((a.selected, a.selected_link), (0, Some(link)));
    let screen = text(&draw(&mut a, 120, 40));
    let name = a.fabric.link_name(link);
    let row = screen.lines().find(|l| l.contains(&name)).unwrap();
    assert!(
        screen.lines().nth(6).unwrap().contains(&name),
        "{row}\n{screen}"
    );
}

#[test]
fn frozen_means_no_redraw_and_unfreeze_shows_the_latest() {
    let (view, msgs) = messages(true);
    let mut ui = Ui::new(
        App::new(view, Default::default()),
        Terminal::new(TestBackend::new(120, 40)).unwrap(),
    );
    let t0 = Instant::now();
    assert!(ui.draw_due(t0).unwrap());
    ui.handle(Msg::Action(Action::Freeze));
    assert!(ui.draw_due(t0 + MIN_FRAME).unwrap()); // the FROZEN banner
    let drawn = ui.draws;
    let screen = text(&ui.term);
    assert!(screen.contains("FROZEN"));
    for (i, m) in msgs.iter().cloned().enumerate() {
        ui.handle(m);
        assert!(!ui.draw_due(t0 + MIN_FRAME * (i as u32 + 2)).unwrap());
    }
    assert_eq!(ui.draws, drawn);
    assert!(ui.app.current().is_none(), "samples wait while frozen");
    ui.handle(Msg::Action(Action::Freeze));
    assert!(ui.draw_due(t0 + MIN_FRAME * 100).unwrap());
    assert_eq!(ui.app.current().map(|s| s.at_ns), Some(12_000_000_000));
    // idle: nothing new, no redraw
    assert!(!ui.draw_due(t0 + MIN_FRAME * 200).unwrap());
}

#[test]
fn draws_are_capped_at_10_hz() {
    let (view, msgs) = messages(true);
    let mut ui = Ui::new(
        App::new(view, Default::default()),
        Terminal::new(TestBackend::new(80, 24)).unwrap(),
    );
    let t0 = Instant::now();
    assert!(ui.draw_due(t0).unwrap());
    ui.handle(msgs[0].clone());
    assert!(!ui.draw_due(t0 + MIN_FRAME / 2).unwrap());
    assert_eq!(ui.next_draw(t0 + MIN_FRAME / 2), Some(t0 + MIN_FRAME));
    assert!(ui.draw_due(t0 + MIN_FRAME).unwrap());
}

#[test]
fn replay_gives_the_same_screens() {
    let frames = frames(true);
    let dir = std::env::temp_dir().join(format!("fabric-tui-replay-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("fixture.rec");
    let fabric_api::Frame::Fabric(info) = &frames[0] else {
        unreachable!()
    };
    let mut w = Writer::new(std::fs::File::create(&path).unwrap(), info).unwrap();
    for f in &frames[1..] {
        w.write(f).unwrap();
    }
    w.finish().unwrap();

    let mut live = app(Theme::Full, true);
    let mut r = Replay::open(&path).unwrap();
    let mut replayed = App::new(r.view().clone(), Default::default());
    replayed.update(Msg::Status(fabric_tui::app::SourceStatus::Live(
        "fixture (seeded)".into(),
    )));
    for m in r.all_messages().unwrap() {
        replayed.update(m);
    }
    for tab in 0..4 {
        for (w, h) in [(80, 24), (200, 50)] {
            assert_eq!(
                text(&draw(&mut live, w, h)),
                text(&draw(&mut replayed, w, h)),
                "tab {tab} at {w}×{h}"
            );
        }
        live.update(Msg::Action(Action::NextView));
        replayed.update(Msg::Action(Action::NextView));
    }
    // a damaged file is refused with its name
    std::fs::write(&path, b"{\"not\":\"a recording\"}\n").unwrap();
    let e = Replay::open(&path).unwrap_err().to_string();
    assert!(e.starts_with(&path.display().to_string()), "{e}");
    std::fs::remove_dir_all(&dir).unwrap();
}

fn click(app: &mut App, x: u16, y: u16) {
    use crossterm::event::{MouseButton, MouseEvent, MouseEventKind};
    app.update(Msg::Mouse(MouseEvent {
        kind: MouseEventKind::Down(MouseButton::Left),
        column: x,
        row: y,
        modifiers: KeyModifiers::NONE,
    }));
}

fn wheel(app: &mut App, down: bool) {
    use crossterm::event::{MouseEvent, MouseEventKind};
    let kind = if down {
        MouseEventKind::ScrollDown
    } else {
        MouseEventKind::ScrollUp
    };
    app.update(Msg::Mouse(MouseEvent {
        kind,
        column: 10,
        row: 10,
        modifiers: KeyModifiers::NONE,
    }));
}

/// Where `needle` is on the screen (column, line).
fn at(screen: &str, needle: &str) -> (u16, u16) {
    for (y, line) in screen.lines().enumerate() {
        if let Some(i) = line.find(needle) {
            return (line[..i].chars().count() as u16, y as u16);
        }
    }
    panic!("`{needle}` not on screen:\n{screen}")
}

/// Mouse: a click on a tab opens it, on a column header sorts by it (again: the other
/// way), on a row selects it; the wheel moves three rows. Number keys open views.
#[test]
fn mouse_clicks_tabs_headers_and_rows_and_the_wheel_scrolls() {
    let mut a = app(Theme::Full, true);
    let s = text(&draw(&mut a, 120, 40));
    let (x, y) = at(&s, "Links");
    click(&mut a, x + 1, y);
    assert_eq!(a.tab, Tab::Links);
    let s = text(&draw(&mut a, 120, 40));
    let (x, y) = at(&s, "PFC/s");
    click(&mut a, x, y);
    assert_eq!(
        (a.sort, a.ascending),
        (fabric_tui::table::SortKey::Pfc, false)
    );
    click(&mut a, x + 2, y);
    assert_eq!(
        (a.sort, a.ascending),
        (fabric_tui::table::SortKey::Pfc, true)
    );
    let s = text(&draw(&mut a, 120, 40));
    assert!(s.contains("PFC/s▲"), "{s}");
    // the fourth row: selected, and the cursor follows its link
    click(&mut a, 5, y + 4);
    assert_eq!(a.selected, 3);
    assert_eq!(a.selected_link, Some(a.table_ids()[3]));
    wheel(&mut a, true);
    assert_eq!(a.selected, 6);
    wheel(&mut a, false);
    assert_eq!(a.selected, 3);
    // the flows table's headers sort it too
    key(&mut a, KeyCode::Char('3'));
    assert_eq!(a.tab, Tab::Flows);
    let s = text(&draw(&mut a, 120, 40));
    let (x, y) = at(&s, "CNPs");
    click(&mut a, x + 1, y);
    assert_eq!(a.flow_sort, fabric_tui::table::FlowSort::Cnps);
    key(&mut a, KeyCode::Char('4'));
    assert_eq!(a.tab, Tab::Events);
    key(&mut a, KeyCode::Char('1'));
    assert_eq!(a.tab, Tab::Heatmap);
}
