//! Drill-down below the heat map: the links of one cell (switch pair), and one link.

use crate::app::App;
use crate::units::{duration, pct, rate, si};
use ratatui::Frame;
use ratatui::layout::{Constraint, Rect};
use ratatui::style::Style;
use ratatui::symbols::Marker;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Axis, Block, Cell, Chart, Dataset, GraphType, Paragraph, Row, Table};

/// The links between the pair of the selected cell.
pub fn render_cell(f: &mut Frame<'_>, r: Rect, app: &App) {
    let t = app.theme;
    let links = app.cell_links();
    let sel = app.selected.min(links.len().saturating_sub(1));
    let rows = links.iter().enumerate().map(|(i, &id)| {
        let x = app.rates().get(id as usize).copied().unwrap_or_default();
        let l = &app.fabric.links[id as usize];
        let state = if x.down {
            "✖ down"
        } else if x.drops_per_s > 0.0 {
            "! drops"
        } else if x.pfc_per_s > 0.0 {
            "P PFC"
        } else {
            "up"
        };
        let row = Row::new(vec![
            Cell::from(format!("link {id}")),
            Cell::from(format!("{}:{}", app.fabric.node_name(l.a), l.a_port)),
            Cell::from(format!("{}:{}", app.fabric.node_name(l.b), l.b_port)),
            Cell::from(Span::styled(pct(x.util), Style::new().fg(t.util(x.util)))),
            Cell::from(rate(x.bps as f64, app.units)),
            Cell::from(si(x.drops_per_s as f64)),
            Cell::from(si(x.pfc_per_s as f64)),
            Cell::from(state),
        ]);
        if i == sel {
            row.style(t.selected())
        } else {
            row
        }
    });
    let header = Row::new([
        "link",
        "lower end",
        "upper end",
        "util",
        "rate",
        "drops/s",
        "PFC/s",
        "state",
    ])
    .style(t.title());
    let w = [8, 18, 18, 6, 11, 8, 7, 8].map(Constraint::Length);
    let title = format!(" {} ", app.breadcrumb().join(" › "));
    f.render_widget(
        Table::new(rows, w)
            .header(header)
            .block(Block::bordered().title(Span::styled(title, t.title()))),
        r,
    );
}

/// One link: both ends, line rate, current figures and its utilisation over time.
pub fn render_link(f: &mut Frame<'_>, r: Rect, app: &App, id: u32) {
    let t = app.theme;
    let l = &app.fabric.links[id as usize];
    let x = app.rates().get(id as usize).copied().unwrap_or_default();
    let title = if app.tab == crate::app::Tab::Links {
        format!(
            " links › {} — Esc back to the table ",
            app.fabric.link_name(id)
        )
    } else {
        format!(" {} ", app.breadcrumb().join(" › "))
    };
    let block = Block::bordered().title(Span::styled(title, t.title()));
    let inner = block.inner(r);
    f.render_widget(block, r);
    let state = if x.down {
        Span::styled("✖ DOWN", t.bad())
    } else {
        Span::styled("up", t.ok())
    };
    let lines = vec![
        Line::from(format!(
            "{}  port {}  ↔  {}  port {}",
            app.fabric.node_name(l.a),
            l.a_port,
            app.fabric.node_name(l.b),
            l.b_port
        )),
        Line::from(vec![
            Span::raw(format!(
                "line rate {}  plane {}  tier {}  state ",
                rate(l.rate_bps as f64, app.units),
                l.plane.map_or("-".into(), |p| p.to_string()),
                l.tier
            )),
            state,
        ]),
        Line::from(format!(
            "util {} ({})  drops {}/s  PFC {}/s  paused {}  ECN {} ({}/s)  queue {}B",
            pct(x.util),
            rate(x.bps as f64, app.units),
            si(x.drops_per_s as f64),
            si(x.pfc_per_s as f64),
            pct(x.paused),
            pct(x.ecn),
            si(x.ecn_per_s as f64),
            si(x.queue_bytes as f64)
        )),
    ];
    let mut lines = lines;
    lines.extend(priority_lines(app, id));
    lines.push(Line::from(Span::styled(
        app.current().map_or(String::new(), |s| {
            format!("interval {}", duration(s.interval_ns))
        }),
        t.dim(),
    )));
    let text_h = (lines.len() as u16).min(inner.height);
    f.render_widget(
        Paragraph::new(lines),
        Rect {
            height: text_h,
            ..inner
        },
    );
    let chart_area = Rect {
        y: inner.y + text_h,
        height: inner.height - text_h,
        ..inner
    };
    if chart_area.height >= 5 {
        util_chart(f, chart_area, app, x.util);
    }
}

/// Per-priority PFC and queue depth of link `id`, one column per priority the source
/// counts; "n/a" when it counts none (never zeros it did not measure).
fn priority_lines(app: &App, id: u32) -> Vec<Line<'static>> {
    let Some(cur) = app.current() else {
        return Vec::new();
    };
    let Some((measured, r)) = cur.link_priorities(id) else {
        return vec![Line::from(Span::styled(
            "per priority: n/a (this source has no per-priority counters)",
            app.theme.dim(),
        ))];
    };
    let cols = |f: &dyn Fn(usize) -> String| {
        measured
            .iter()
            .map(|&p| format!("{:>7}", f(p as usize)))
            .collect::<String>()
    };
    vec![
        Line::from(format!("priority   {}", cols(&|p| p.to_string()))),
        Line::from(format!(
            "PFC/s      {}",
            cols(&|p| si(r.pfc_per_s[p] as f64))
        )),
        Line::from(format!(
            "queue B    {}",
            cols(&|p| si(r.queue_bytes[p] as f64))
        )),
    ]
}

/// The link's utilisation over the samples since it was opened (braille).
fn util_chart(f: &mut Frame<'_>, chart_area: Rect, app: &App, now: f32) {
    let t = app.theme;
    let pts: Vec<(f64, f64)> = app
        .link_history
        .iter()
        .enumerate()
        .map(|(i, x)| (i as f64, x.util as f64 * 100.0))
        .collect();
    let n = pts.len().max(2) as f64;
    let ds = Dataset::default()
        .name("util %")
        .marker(Marker::Braille)
        .graph_type(GraphType::Line)
        .style(Style::new().fg(t.util(now)))
        .data(&pts);
    let chart = Chart::new(vec![ds])
        .x_axis(
            Axis::default()
                .bounds([0.0, n - 1.0])
                .title(Span::styled("samples", t.dim())),
        )
        .y_axis(
            Axis::default()
                .bounds([0.0, 100.0])
                .labels(["0", "50", "100"])
                .style(t.dim()),
        );
    f.render_widget(chart, chart_area);
}
