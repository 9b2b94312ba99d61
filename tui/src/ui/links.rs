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

/// The row of the links table at screen line `y` in a table drawn in `r`.
pub fn row_at(r: Rect, app: &App, y: u16) -> Option<usize> {
    let total = app.table_ids().len();
    let height = visible(r);
    let first = r.y + 2; // border and header
    if y < first || y >= first + height as u16 || total == 0 {
        return None;
    }
    let sel = app.selected.min(total - 1);
    let row = (sel + 1).saturating_sub(height) + (y - first) as usize;
    (row < total).then_some(row)
}

/// The sort column under screen column `x` of the links table's header in `r`.
pub fn column_at(r: Rect, x: u16) -> Option<SortKey> {
    let inner = Block::bordered().inner(r);
    let cols = ratatui::layout::Layout::horizontal(widths(r.width))
        .spacing(1)
        .split(inner);
    let keys = [
        Some(SortKey::Link),
        None,
        Some(SortKey::Util),
        Some(SortKey::Gbps),
        Some(SortKey::Drops),
        Some(SortKey::Pfc),
        Some(SortKey::Paused),
        Some(SortKey::Ecn),
        None,
        None,
    ];
    let i = cols.iter().position(|c| x >= c.x && x < c.right())?;
    keys.get(i).copied().flatten()
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

/// Tier names as the hottest-links panel heads its sections.
const TIER_TITLES: [&str; 3] = ["host–leaf", "leaf–spine", "spine–core"];

/// The busiest matching links of each tier in `tiers`, up to `per` each, walking the
/// sample's order by utilisation once (it stops when every tier is full).
fn hottest_per_tier(app: &App, tiers: &[u8], per: usize) -> Vec<Vec<u32>> {
    let mut out: Vec<Vec<u32>> = vec![Vec::new(); tiers.len()];
    if per == 0 {
        return out;
    }
    let by_util = app.current().map_or(&[][..], |s| &s.by_util[..]);
    let mut open = tiers.len();
    for &id in by_util {
        if open == 0 {
            break;
        }
        let tier = app.fabric.links[id as usize].tier.min(2);
        let Some(k) = tiers.iter().position(|&t| t == tier) else {
            continue;
        };
        if out[k].len() < per && app.keeps(id) {
            out[k].push(id);
            open -= usize::from(out[k].len() == per);
        }
    }
    out
}

/// The hottest fabric links beside the heat map, per tier (leaf–spine, spine–core):
/// host NICs busy at line rate are what an all-reduce looks like, so the host tier is
/// left out unless the fabric has no other.
pub fn render_hottest(f: &mut Frame<'_>, r: Rect, app: &App) {
    let t = app.theme;
    let present: Vec<u8> = app.current().map_or(Vec::new(), |s| {
        (0..3u8)
            .filter(|&k| s.totals.tiers[k as usize].links > 0)
            .collect()
    });
    let fabric: Vec<u8> = present.iter().copied().filter(|&k| k > 0).collect();
    let tiers = if fabric.is_empty() { present } else { fabric };
    let lines = r.height.saturating_sub(2) as usize;
    let per = (lines / tiers.len().max(1)).saturating_sub(1);
    let groups = hottest_per_tier(app, &tiers, per);
    let name_w = r.width.saturating_sub(2 + 1 + 1 + 5 + 2) as usize;
    let mut out: Vec<Line<'static>> = Vec::new();
    for (k, ids) in tiers.iter().zip(&groups) {
        out.push(Line::from(Span::styled(
            TIER_TITLES[*k as usize].to_string(),
            t.dim(),
        )));
        for &id in ids {
            let x = app.rates().get(id as usize).copied().unwrap_or_default();
            let g = if x.down {
                theme::DOWN
            } else if x.drops_per_s > 0.0 {
                theme::DROP
            } else if x.pfc_per_s > 0.0 {
                theme::PAUSE
            } else {
                ' '
            };
            let name: String = app.fabric.link_name(id).chars().take(name_w).collect();
            out.push(Line::from(vec![
                Span::raw(format!("{name:<name_w$} ")),
                Span::styled(g.to_string(), t.bad()),
                Span::styled(
                    format!(" {:>4}", pct(x.util)),
                    Style::new().fg(t.util(x.util)),
                ),
            ]));
        }
    }
    let title = if tiers.contains(&0) {
        " hottest links "
    } else {
        " hottest fabric links per tier "
    };
    let block = Block::bordered().title(Span::styled(title, t.title()));
    f.render_widget(Paragraph::new(out).block(block), r);
}
