//! The links table's rows come from the worker thread, not the UI thread: a sample
//! waits for its rows, stale rows are dropped, freezing holds everything, and the worker
//! gives the same rows as the in-line computation.

mod common;

use common::*;
use crossterm::event::{KeyCode, KeyEvent};
use fabric_tui::app::{Msg, Tab};
use fabric_tui::metrics::Sample;
use fabric_tui::rows::Worker;
use fabric_tui::theme::Theme;
use fabric_tui::{Action, App};
use std::sync::mpsc::{self, Receiver};
use std::time::Duration;

fn samples() -> (fabric_tui::FabricView, Vec<Sample>) {
    let (view, msgs) = messages(true);
    let s = msgs
        .into_iter()
        .filter_map(|m| match m {
            Msg::Sample(s) => Some(s),
            _ => None,
        })
        .collect();
    (view, s)
}

fn type_filter(a: &mut App, text: &str) {
    a.update(Msg::Action(Action::Filter));
    for c in text.chars() {
        a.update(Msg::Key(KeyEvent::from(KeyCode::Char(c))));
    }
    a.update(Msg::Key(KeyEvent::from(KeyCode::Enter)));
}

/// The next message from the worker (rows), within 60 s (generous: a loaded machine).
fn rows_msg(rx: &Receiver<Msg>) -> Msg {
    let m = rx
        .recv_timeout(Duration::from_secs(60))
        .expect("the worker answers");
    assert!(matches!(m, Msg::Rows(_)), "{m:?}");
    m
}

/// An app whose rows come from a real worker thread, with the fixture's first sample on
/// screen and `filter` typed in.
fn threaded(filter: &str) -> (App, Receiver<Msg>, Vec<Sample>) {
    let (view, s) = samples();
    let mut a = App::new(view, Default::default());
    let (tx, rx) = mpsc::channel();
    a.set_worker(Worker::spawn(tx));
    a.update(Msg::Action(Action::NextView));
    assert_eq!(a.tab, Tab::Links);
    // the default order needs no worker: shown at once
    a.update(Msg::Sample(s[0].clone()));
    assert_eq!(a.current().map(|x| x.at_ns), Some(s[0].at_ns));
    assert!(!a.rows_pending());
    assert!(rx.try_recv().is_err());
    type_filter(&mut a, filter);
    (a, rx, s)
}

#[test]
fn the_filter_runs_on_the_worker_and_a_sample_waits_for_its_rows() {
    let (mut a, rx, s) = threaded("util>50 or drops>0");
    // the filter was not applied here: its rows are asked for
    assert!(a.rows_pending());
    assert!(a.table_ids().is_empty());
    a.update(rows_msg(&rx));
    assert!(!a.rows_pending());
    let first = a.table_rows();
    assert!(!first.is_empty() && first.len() < a.fabric.links.len());
    // a new sample is not shown before its rows arrive
    a.update(Msg::Sample(s[1].clone()));
    assert_eq!(a.current().map(|x| x.at_ns), Some(s[0].at_ns));
    assert!(a.rows_pending());
    assert_eq!(
        a.table_rows(),
        first,
        "the shown sample keeps its rows meanwhile"
    );
    a.update(rows_msg(&rx));
    assert_eq!(a.current().map(|x| x.at_ns), Some(s[1].at_ns));
    // the same rows as computed in line (an app without a worker)
    let mut inline = App::new((*a.fabric).clone(), Default::default());
    inline.update(Msg::Action(Action::NextView));
    type_filter(&mut inline, "util>50 or drops>0");
    inline.update(Msg::Sample(s[1].clone()));
    assert_eq!(a.table_rows(), inline.table_rows());
    let keep: Vec<bool> = (0..a.fabric.links.len() as u32)
        .map(|id| a.keeps(id))
        .collect();
    let want: Vec<bool> = (0..a.fabric.links.len() as u32)
        .map(|id| inline.keeps(id))
        .collect();
    assert_eq!(keep, want);
    assert!(keep.iter().any(|k| !k), "the heat map's mask filters");
    let r = &s[1].links;
    assert!(
        a.table_rows()
            .windows(2)
            .all(|w| r[w[0] as usize].util >= r[w[1] as usize].util)
    );
}

#[test]
fn a_changed_query_drops_stale_rows_and_samples_queue_behind_the_one_waiting() {
    let (mut a, rx, s) = threaded("util>50");
    // the query changes before the answer comes: that answer is stale
    a.update(Msg::Action(Action::Sort));
    // the worker answers both jobs, or only the newest if both were queued: the stale
    // answer (if any) changes nothing
    let mut answers = 0;
    while a.rows_pending() {
        a.update(rows_msg(&rx));
        answers += 1;
    }
    assert!((1..=2).contains(&answers));
    assert!(!a.rows_pending());
    let r = &s[0].links;
    let rows = a.table_rows();
    assert!(rows.iter().all(|&l| r[l as usize].util > 0.5));
    assert!(
        rows.windows(2)
            .all(|w| r[w[0] as usize].bps >= r[w[1] as usize].bps),
        "sorted by rate, the second query"
    );
    // two samples before any answer: each answer shows one, in order
    let mut later = s[1].clone();
    later.at_ns += 1_000_000_000;
    a.update(Msg::Sample(s[1].clone()));
    a.update(Msg::Sample(later.clone()));
    assert_eq!(a.current().map(|x| x.at_ns), Some(s[0].at_ns));
    a.update(rows_msg(&rx));
    assert_eq!(a.current().map(|x| x.at_ns), Some(s[1].at_ns));
    a.update(rows_msg(&rx));
    assert_eq!(a.current().map(|x| x.at_ns), Some(later.at_ns));
    assert!(!a.rows_pending());
}

#[test]
fn freezing_holds_a_sample_that_waits_for_its_rows() {
    let (mut a, rx, s) = threaded("drops>0");
    a.update(rows_msg(&rx));
    a.update(Msg::Sample(s[1].clone()));
    a.update(Msg::Action(Action::Freeze));
    // its rows come while frozen: the screen does not change
    a.update(rows_msg(&rx));
    assert_eq!(a.current().map(|x| x.at_ns), Some(s[0].at_ns));
    a.update(Msg::Action(Action::Freeze));
    a.update(rows_msg(&rx));
    assert_eq!(a.current().map(|x| x.at_ns), Some(s[1].at_ns));
    assert_eq!(a.table_rows(), vec![DROP_LINK as u32]);
}

#[test]
fn in_line_rows_keep_the_screens() {
    // no worker: the same screens as before rows moved off the UI thread
    let mut a = app(Theme::Full, true);
    a.update(Msg::Action(Action::NextView));
    type_filter(&mut a, "drops>0");
    assert!(!a.rows_pending());
    assert_eq!(a.table_rows(), vec![DROP_LINK as u32]);
    let t = text(&draw(&mut a, 120, 30));
    assert!(t.contains("links 1–1 of 1"), "{t}");
    assert!(!t.contains("filtering"), "{t}");
}
