//! Drawing: [`render`] lays the screen out and hands each panel its rectangle; every
//! panel has its own file. Layout adapts to the terminal: side and bottom panels appear
//! when there is room, and a terminal below [`MIN_W`] × [`MIN_H`] gets a message.

mod cell;
mod events;
mod flows;
mod footer;
mod header;
mod heat;
mod help;
mod links;

use crate::app::{App, Tab};
use crate::heatmap::Level;
use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::style::{Color, Style};
use ratatui::text::Line;
use ratatui::widgets::{Paragraph, Wrap};

/// Narrowest terminal drawn.
pub const MIN_W: u16 = 40;
/// Shortest terminal drawn.
pub const MIN_H: u16 = 12;
/// Width of the heat view's side panel (hottest links), shown from 140 columns.
const SIDE_W: u16 = 50;
/// Height of the heat view's events panel, shown from 40 rows.
const BOTTOM_H: u16 = 8;

/// Where each panel goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Areas {
    /// Status, losslessness, PFC/ECN, per-tier utilisation.
    pub header: Rect,
    /// View tabs.
    pub tabs: Rect,
    /// The current view.
    pub body: Rect,
    /// Hottest links beside the heat map, when wide enough.
    pub side: Option<Rect>,
    /// Recent events under the heat map, when tall enough.
    pub bottom: Option<Rect>,
    /// Key hints or the filter being typed.
    pub footer: Rect,
}

/// Lay out `area` (None when too small).
pub fn areas(area: Rect, app: &App) -> Option<Areas> {
    if area.width < MIN_W || area.height < MIN_H {
        return None;
    }
    let header_h = if area.height >= 20 { 3 } else { 2 };
    let header = Rect {
        height: header_h,
        ..area
    };
    let tabs = Rect {
        y: area.y + header_h,
        height: 1,
        ..area
    };
    let footer = Rect {
        y: area.bottom() - 1,
        height: 1,
        ..area
    };
    let mut body = Rect {
        y: tabs.bottom(),
        height: footer.y - tabs.bottom(),
        ..area
    };
    let (mut side, mut bottom) = (None, None);
    if app.tab == Tab::Heatmap && !app.side_by_side {
        if body.width >= 140 {
            body.width -= SIDE_W;
            side = Some(Rect {
                x: body.right(),
                width: SIDE_W,
                ..body
            });
        }
        if body.height >= 40 - 5 {
            body.height -= BOTTOM_H;
            bottom = Some(Rect {
                y: body.bottom(),
                height: BOTTOM_H,
                width: area.width,
                ..body
            });
            if let Some(s) = &mut side {
                s.height = body.height;
            }
        }
    }
    Some(Areas {
        header,
        tabs,
        body,
        side,
        bottom,
        footer,
    })
}

/// What a mouse click at a screen position means.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Hit {
    /// A view's tab.
    Tab(Tab),
    /// A row of the links table (its index in table order).
    LinkRow(usize),
    /// A column header of the links table.
    LinkSort(crate::table::SortKey),
    /// A row of the flows table (its index in the view's order).
    FlowRow(usize),
    /// A column header of the flows table.
    FlowSort(crate::table::FlowSort),
}

/// What is at column `x`, line `y` of the app's screen (laid out as [`render`] does).
pub fn hit(app: &App, x: u16, y: u16) -> Option<Hit> {
    let a = areas(Rect::new(0, 0, app.size.0, app.size.1), app)?;
    if y == a.tabs.y {
        let mut left = a.tabs.x;
        for (i, tab) in Tab::ALL.iter().enumerate() {
            if i > 0 {
                left += 3; // " │ "
            }
            let w = tab.name().chars().count() as u16 + 2;
            if x >= left && x < left + w {
                return Some(Hit::Tab(*tab));
            }
            left += w;
        }
        return None;
    }
    let body = a.body;
    if y < body.y || y >= body.bottom() {
        return None;
    }
    match app.tab {
        Tab::Links if app.link_open.is_none() => {
            if y == body.y + 1 {
                links::column_at(body, x).map(Hit::LinkSort)
            } else {
                links::row_at(body, app, y).map(Hit::LinkRow)
            }
        }
        Tab::Flows => {
            if y == body.y + 1 {
                flows::column_at(body, x).map(Hit::FlowSort)
            } else {
                flows::row_at(body, app, y).map(Hit::FlowRow)
            }
        }
        _ => None,
    }
}

/// The furthest the help screen scrolls at the app's terminal size.
pub fn help_max_scroll(app: &App) -> usize {
    help::max_scroll(app)
}

/// Grid bins the heat map can show now: (rows, columns).
pub fn heat_capacity(app: &App) -> (u32, u32) {
    let area = Rect::new(0, 0, app.size.0, app.size.1);
    let Some(a) = areas(area, app) else {
        return (1, 1);
    };
    let planes = if app.side_by_side {
        app.fabric.planes.len().max(1) as u16
    } else {
        1
    };
    let w = a.body.width / planes;
    heat::capacity(Rect { width: w, ..a.body }, app.theme)
}

/// Draw the whole screen.
pub fn render(f: &mut Frame<'_>, app: &App) {
    let area = f.area();
    let Some(a) = areas(area, app) else {
        let msg = format!(
            "terminal too small: {}×{} — fabric-tui needs at least {MIN_W}×{MIN_H}",
            area.width, area.height
        );
        f.render_widget(Paragraph::new(msg).wrap(Wrap { trim: true }), area);
        return;
    };
    header::render(f, a.header, app);
    render_tabs(f, a.tabs, app);
    match app.tab {
        Tab::Heatmap => match app.path.last() {
            Some(Level::Cell { .. }) => cell::render_cell(f, a.body, app),
            Some(Level::Link(id)) => cell::render_link(f, a.body, app, *id),
            _ => match leftover_events(a.body, a.bottom, app) {
                // the lines the grid does not need show the latest events (80×24)
                Some((grid, events)) => {
                    heat::render(f, grid, app);
                    events::render(f, events, app, true);
                }
                None => heat::render(f, a.body, app),
            },
        },
        Tab::Links => match app.link_open {
            Some(id) => cell::render_link(f, a.body, app, id),
            None => links::render(f, a.body, app),
        },
        Tab::Flows => flows::render(f, a.body, app),
        Tab::Events => events::render(f, a.body, app, false),
    }
    if let Some(r) = a.side {
        links::render_hottest(f, r, app);
    }
    if let Some(r) = a.bottom {
        events::render(f, r, app, true);
    }
    if matches!(app.status, crate::app::SourceStatus::Disconnected { .. }) {
        // Stale values are greyed out (all but the status line), never passed off as live.
        let stale = Rect {
            y: area.y + 1,
            height: a.footer.y - area.y - 1,
            ..area
        };
        f.buffer_mut().set_style(stale, stale_style(app));
    }
    footer::render(f, a.footer, app);
    if app.help {
        help::render(f, area, app);
    }
}

/// Fewest lines worth an events panel (borders and three events).
const LEFTOVER_MIN: u16 = 5;

/// The heat map's grid and, below it, the lines it does not need for events, when
/// there is no events panel yet and enough lines are left over.
fn leftover_events(body: Rect, bottom: Option<Rect>, app: &App) -> Option<(Rect, Rect)> {
    if bottom.is_some() {
        return None;
    }
    let need = heat::needed_height(body, app)?;
    if body.height < need + LEFTOVER_MIN {
        return None;
    }
    let grid = Rect {
        height: need,
        ..body
    };
    let events = Rect {
        y: body.y + need,
        height: body.height - need,
        ..body
    };
    Some((grid, events))
}

fn stale_style(app: &App) -> Style {
    match app.theme {
        crate::theme::Theme::None => Style::new().add_modifier(ratatui::style::Modifier::DIM),
        _ => Style::new().fg(Color::DarkGray).bg(Color::Reset),
    }
}

fn render_tabs(f: &mut Frame<'_>, r: Rect, app: &App) {
    let t = app.theme;
    let mut spans = Vec::new();
    for (i, tab) in Tab::ALL.iter().enumerate() {
        if i > 0 {
            spans.push(ratatui::text::Span::styled(" │ ", t.dim()));
        }
        let style = if *tab == app.tab {
            t.title().add_modifier(ratatui::style::Modifier::REVERSED)
        } else {
            t.text()
        };
        spans.push(ratatui::text::Span::styled(
            format!(" {} ", tab.name()),
            style,
        ));
    }
    let mut right = Vec::new();
    if let Some(name) = app.tenant_name() {
        right.push(format!("tenant {name}"));
    }
    if app.faults_only {
        right.push("faults only".to_string());
    }
    if let Some(e) = &app.filter.expr {
        right.push(format!("filter {e}"));
    }
    let arrow = |up: bool| if up { "▲" } else { "▼" };
    if app.tab == Tab::Links {
        right.push(format!("sort {} {}", app.sort.name(), arrow(app.ascending)));
    }
    if app.tab == Tab::Flows {
        right.push(format!(
            "sort {} {}",
            app.flow_sort.name(),
            arrow(app.flow_ascending)
        ));
    }
    let line = Line::from(spans);
    f.render_widget(Paragraph::new(line), r);
    if !right.is_empty() {
        let text = right.join(" · ");
        let w = (text.chars().count() as u16).min(r.width);
        let used = Tab::ALL
            .iter()
            .map(|t| t.name().len() as u16 + 5)
            .sum::<u16>();
        if used + w < r.width {
            f.render_widget(
                Paragraph::new(text).style(t.warn()),
                Rect {
                    x: r.right() - w,
                    width: w,
                    ..r
                },
            );
        }
    }
}
