//! The links table (only the visible rows are built) and the "hottest links" side panel.

use crate::app::App;
use crate::metrics::LinkRates;
use crate::table::{SortKey, change};
use crate::theme;
use crate::units::{pct, rate, si};
use ratatui::Frame;
use ratatui::layout::{Constraint, Rect};
use ratatui::style::Style;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Cell, Paragraph, Row, Table};
use std::cmp::Ordering;

const TIERS: [&str; 3] = ["host", "leaf", "spine"];

/// Rows that fit in a table of `r` (borders and header taken off).
fn visible(r: Rect) -> usize {
    r.height.saturating_sub(3) as usize
}

/// Draw the links table.
pub fn render(f: &mut Frame<'_>, r: Rect, app: &App) {
    let t = app.theme;
    let height = visible(r);
    let ids = app.table_ids();
    let total = ids.len();
    let sel = app.selected.min(total.saturating_sub(1));
    let offset = (sel + 1).saturating_sub(height);
    let rows = ids
        .iter()
        .skip(offset)
        .take(height)
        .enumerate()
        .map(|(i, &id)| {
            let row = row(app, id, r.width);
            if offset + i == sel {
                row.style(t.selected())
            } else {
                row
            }
        });
    let title = format!(
        " links {}–{} of {total}{}{} ",
        if total == 0 { 0 } else { offset + 1 },
        (offset + height).min(total),
        if total < app.fabric.links.len() {
            format!(" (of {})", app.fabric.links.len())
        } else {
            String::new()
        },
        if app.rows_pending() {
            " (filtering…)"
        } else {
            ""
        }
    );
    let header = header(app, r.width);
    let table = Table::new(rows, widths(r.width))
        .header(header)
        .block(Block::bordered().title(Span::styled(title, t.title())));
    f.render_widget(table, r);
    if total == 0 {
        let msg = if app.current().is_none() {
            "no data yet"
        } else if app.rows_pending() {
            "filtering…"
        } else {
            "no link matches"
        };
        f.render_widget(
            Paragraph::new(msg).style(t.dim()),
            Rect {
                x: r.x + 2,
                y: r.y + 2,
                width: r.width.saturating_sub(4),
                height: 1,
            },
        );
    }
}

fn widths(w: u16) -> Vec<Constraint> {
    let mut v = vec![
        Constraint::Fill(1),
        Constraint::Length(2),
        Constraint::Length(16),
        Constraint::Length(10),
    ];
    if w >= 80 {
        v.extend([Constraint::Length(9), Constraint::Length(7)]);
    }
    if w >= 100 {
        v.extend([
            Constraint::Length(7),
            Constraint::Length(6),
            Constraint::Length(5),
            Constraint::Length(5),
        ]);
    }
    v
}

fn header(app: &App, w: u16) -> Row<'static> {
    let mark = |k: SortKey, name: &str| {
        if app.sort == k {
            format!("{name}{}", if app.ascending { "▲" } else { "▼" })
        } else {
            name.to_string()
        }
    };
    let mut h = vec![
        mark(SortKey::Link, "link"),
        String::new(),
        mark(SortKey::Util, "util"),
        mark(SortKey::Gbps, "rate"),
    ];
    if w >= 80 {
        h.extend([mark(SortKey::Drops, "drops/s"), mark(SortKey::Pfc, "PFC/s")]);
    }
    if w >= 100 {
        h.extend([
            mark(SortKey::Paused, "paused"),
            mark(SortKey::Ecn, "ECN"),
            "plane".into(),
            "tier".into(),
        ]);
    }
    Row::new(h).style(app.theme.title())
}

fn row(app: &App, id: u32, w: u16) -> Row<'static> {
    let t = app.theme;
    let idle = LinkRates::default();
    let r = app.rates().get(id as usize).unwrap_or(&idle);
    let prev = app.previous().and_then(|p| p.links.get(id as usize));
    let label = &app.fabric.links[id as usize];
    let state = if r.down {
        Span::styled(theme::DOWN.to_string(), t.bad())
    } else if r.drops_per_s > 0.0 {
        Span::styled(theme::DROP.to_string(), t.bad())
    } else if r.pfc_per_s > 0.0 {
        Span::styled(theme::PAUSE.to_string(), t.warn())
    } else {
        Span::raw(" ")
    };
    let arrow = match prev.map(|p| change(p.util, r.util, 0.05)) {
        Some(Ordering::Greater) => "↑",
        Some(Ordering::Less) => "↓",
        _ => " ",
    };
    let bar = bar(r.util, 6);
    let util = Line::from(vec![
        Span::styled(bar, Style::new().fg(t.util(r.util))),
        Span::raw(format!(" {:>4}", pct(r.util))),
        Span::styled(arrow, t.changed()),
    ]);
    let changed = |now: f32, before: Option<f32>| {
        if before.is_some_and(|b| b != now) {
            t.changed()
        } else {
            t.text()
        }
    };
    let mut cells = vec![
        Cell::from(app.fabric.link_name(id)),
        Cell::from(state),
        Cell::from(util),
        Cell::from(rate(r.bps as f64, app.units)),
    ];
    if w >= 80 {
        let ds = if r.drops_per_s > 0.0 {
            t.bad()
        } else {
            changed(r.drops_per_s, prev.map(|p| p.drops_per_s))
        };
        cells.push(Cell::from(Span::styled(si(r.drops_per_s as f64), ds)));
        let ps = if r.pfc_per_s > 0.0 {
            t.warn()
        } else {
            t.text()
        };
        cells.push(Cell::from(Span::styled(si(r.pfc_per_s as f64), ps)));
    }
    if w >= 100 {
        cells.push(Cell::from(pct(r.paused)));
        cells.push(Cell::from(pct(r.ecn)));
        cells.push(Cell::from(
            label.plane.map_or("-".into(), |p| p.to_string()),
        ));
        cells.push(Cell::from(TIERS[label.tier.min(2) as usize]));
    }
    if r.stale {
        // Last known values of a link whose counters stopped: greyed.
        Row::new(cells).style(t.dim())
    } else {
        Row::new(cells)
    }
}

/// A utilisation bar of `w` characters with eighth blocks.
pub fn bar(u: f32, w: usize) -> String {
    const EIGHTHS: [char; 8] = ['▏', '▎', '▍', '▌', '▋', '▊', '▉', '█'];
    let eighths = (u.clamp(0.0, 1.0) * (w * 8) as f32).round() as usize;
    let mut s = "█".repeat(eighths / 8);
    if !eighths.is_multiple_of(8) {
        s.push(EIGHTHS[eighths % 8 - 1]);
    }
    format!("{s:<w$}")
}

/// The hottest links beside the heat map.
pub fn render_hottest(f: &mut Frame<'_>, r: Rect, app: &App) {
    let t = app.theme;
    let n = visible(r) + 1;
    let q = crate::table::Query {
        filter: app.filter.expr.as_ref(),
        faults_only: app.faults_only,
        ..Default::default()
    };
    let by_util = app.current().map_or(&[][..], |s| &s.by_util[..]);
    let ids: Vec<u32> = if by_util.len() == app.fabric.links.len() {
        // the filter's matches come from the rows worker: a walk down the sample's order
        by_util
            .iter()
            .copied()
            .filter(|&id| app.keeps(id))
            .take(n)
            .collect()
    } else {
        crate::table::top(&app.fabric, app.rates(), &q, n, by_util)
    };
    let rows = ids.iter().take(n).map(|&id| {
        let x = app.rates().get(id as usize).copied().unwrap_or_default();
        let g = if x.down {
            "✖"
        } else if x.drops_per_s > 0.0 {
            "!"
        } else if x.pfc_per_s > 0.0 {
            "P"
        } else {
            " "
        };
        Row::new(vec![
            Cell::from(app.fabric.link_name(id)),
            Cell::from(Span::styled(g, t.bad())),
            Cell::from(Span::styled(
                format!("{:>4}", pct(x.util)),
                Style::new().fg(t.util(x.util)),
            )),
        ])
    });
    let table = Table::new(
        rows,
        [
            Constraint::Fill(1),
            Constraint::Length(1),
            Constraint::Length(5),
        ],
    )
    .block(Block::bordered().title(Span::styled(" hottest links ", t.title())));
    f.render_widget(table, r);
}
