//! Flows and congestion control: per-flow rate or window, CNPs, RTT; braille charts of
//! host throughput, queue depth and per-tier utilisation over time.

use crate::app::App;
use crate::units::{duration, rate, si};
use ratatui::Frame;
use ratatui::layout::{Constraint, Rect};
use ratatui::style::{Color, Style};
use ratatui::symbols::Marker;
use ratatui::text::Span;
use ratatui::widgets::{Axis, Block, Cell, Chart, Dataset, GraphType, Paragraph, Row, Table};

/// Draw the flows view.
pub fn render(f: &mut Frame<'_>, r: Rect, app: &App) {
    let charts_h = if r.height >= 22 { r.height / 2 } else { 0 };
    let table = Rect {
        height: r.height - charts_h,
        ..r
    };
    flows_table(f, table, app);
    if charts_h > 0 {
        let c = Rect {
            y: table.bottom(),
            height: charts_h,
            ..r
        };
        let w = c.width / 3;
        throughput(f, Rect { width: w, ..c }, app);
        queue(
            f,
            Rect {
                x: c.x + w,
                width: w,
                ..c
            },
            app,
        );
        utilisation(
            f,
            Rect {
                x: c.x + 2 * w,
                width: c.width - 2 * w,
                ..c
            },
            app,
        );
    }
}

fn flows_table(f: &mut Frame<'_>, r: Rect, app: &App) {
    let t = app.theme;
    let flows = app.current().map_or(&[][..], |s| &s.flows[..]);
    let active = flows.iter().filter(|x| !x.finished).count();
    let title = format!(
        " flows: {active} active, {} finished ",
        flows.len() - active
    );
    let block = Block::bordered().title(Span::styled(title, t.title()));
    if flows.is_empty() {
        let msg = if app.current().is_none() {
            "no data yet"
        } else {
            "this source reports no flows (per-port counters only)"
        };
        f.render_widget(Paragraph::new(msg).style(t.dim()).block(block), r);
        return;
    }
    let height = r.height.saturating_sub(3) as usize;
    let sel = app.selected.min(flows.len() - 1);
    let offset = (sel + 1).saturating_sub(height);
    let rows = flows
        .iter()
        .enumerate()
        .skip(offset)
        .take(height)
        .map(|(i, x)| {
            let rw = x.rate_bps.map_or("-".into(), |b| rate(b, app.units));
            let win = x
                .window
                .map_or("-".into(), |w| format!("{}B", si(w as f64)));
            let row = Row::new(vec![
                Cell::from(x.id.to_string()),
                Cell::from(format!("{} → {}", x.src, x.dst)),
                Cell::from(rw),
                Cell::from(win),
                Cell::from(si(x.cnps as f64)),
                Cell::from(x.rtt_ns.map_or("-".into(), duration)),
                Cell::from(format!("{}B", si(x.bytes_done as f64))),
                Cell::from(if x.finished {
                    Span::styled("done", t.dim())
                } else {
                    Span::styled("active", t.ok())
                }),
            ]);
            if i == sel {
                row.style(t.selected())
            } else {
                row
            }
        });
    let header = Row::new([
        "id",
        "src → dst",
        "rate",
        "window",
        "CNPs",
        "RTT",
        "done",
        "state",
    ])
    .style(t.title());
    let w = [
        Constraint::Length(6),
        Constraint::Fill(1),
        Constraint::Length(11),
        Constraint::Length(8),
        Constraint::Length(6),
        Constraint::Length(9),
        Constraint::Length(8),
        Constraint::Length(6),
    ];
    f.render_widget(Table::new(rows, w).header(header).block(block), r);
}

fn xs(app: &App) -> (f64, f64) {
    let p = &app.history.points;
    let a = p.front().map_or(0.0, |x| x.at_ns as f64 / 1e9);
    let b = p.back().map_or(1.0, |x| x.at_ns as f64 / 1e9);
    (a, if b > a { b } else { a + 1.0 })
}

fn chart<'a>(
    app: &App,
    title: String,
    sets: Vec<Dataset<'a>>,
    ymax: f64,
    ylabel: String,
) -> Chart<'a> {
    let t = app.theme;
    let (x0, x1) = xs(app);
    Chart::new(sets)
        .block(Block::bordered().title(Span::styled(title, t.title())))
        .x_axis(
            Axis::default()
                .bounds([x0, x1])
                .labels([format!("{x0:.0}s"), format!("{x1:.0}s")])
                .style(t.dim()),
        )
        .y_axis(
            Axis::default()
                .bounds([0.0, ymax])
                .labels(["0".to_string(), ylabel])
                .style(t.dim()),
        )
}

fn throughput(f: &mut Frame<'_>, r: Rect, app: &App) {
    let pts: Vec<(f64, f64)> = app
        .history
        .points
        .iter()
        .map(|p| (p.at_ns as f64 / 1e9, p.host_bps))
        .collect();
    let max = pts.iter().map(|p| p.1).fold(1.0, f64::max);
    let ds = Dataset::default()
        .marker(Marker::Braille)
        .graph_type(GraphType::Line)
        .style(Style::new().fg(Color::Cyan))
        .data(&pts);
    f.render_widget(
        chart(
            app,
            " host throughput ".into(),
            vec![ds],
            max * 1.1,
            rate(max * 1.1, app.units),
        ),
        r,
    );
}

fn queue(f: &mut Frame<'_>, r: Rect, app: &App) {
    let pts: Vec<(f64, f64)> = app
        .history
        .points
        .iter()
        .map(|p| (p.at_ns as f64 / 1e9, p.max_queue as f64))
        .collect();
    let max = pts.iter().map(|p| p.1).fold(1.0, f64::max);
    let ds = Dataset::default()
        .marker(Marker::Braille)
        .graph_type(GraphType::Line)
        .style(Style::new().fg(Color::Yellow))
        .data(&pts);
    f.render_widget(
        chart(
            app,
            " max queue depth ".into(),
            vec![ds],
            max * 1.1,
            format!("{}B", si(max * 1.1)),
        ),
        r,
    );
}

fn utilisation(f: &mut Frame<'_>, r: Rect, app: &App) {
    let names = ["host–leaf", "leaf–spine", "spine–core"];
    let colours = [Color::Green, Color::Cyan, Color::Magenta];
    let series: Vec<Vec<(f64, f64)>> = (0..3)
        .map(|k| {
            app.history
                .points
                .iter()
                .map(|p| (p.at_ns as f64 / 1e9, p.tier_max[k] as f64 * 100.0))
                .collect()
        })
        .collect();
    let present = app
        .current()
        .map_or([false; 3], |s| s.totals.tiers.map(|x| x.links > 0));
    let sets = (0..3)
        .filter(|&k| present[k])
        .map(|k| {
            Dataset::default()
                .name(names[k])
                .marker(Marker::Braille)
                .graph_type(GraphType::Line)
                .style(Style::new().fg(colours[k]))
                .data(&series[k])
        })
        .collect();
    let max = if app.y_fixed {
        100.0
    } else {
        series.iter().flatten().map(|p| p.1).fold(1.0, f64::max) * 1.1
    };
    let scale = if app.y_fixed { "fixed" } else { "auto" };
    f.render_widget(
        chart(
            app,
            format!(" max util per tier ({scale}, y) "),
            sets,
            max,
            format!("{max:.0}%"),
        ),
        r,
    );
}
