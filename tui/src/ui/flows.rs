//! Flows and congestion control: per-flow rate or window, CNPs, RTT; braille charts of
//! host throughput, queue depth and per-tier utilisation over time.

use crate::app::App;
use crate::table::FlowSort;
use crate::units::{duration, rate, si, stamp};
use ratatui::Frame;
use ratatui::layout::{Constraint, Rect};
use ratatui::style::{Color, Style};
use ratatui::symbols::Marker;
use ratatui::text::Span;
use ratatui::widgets::{
    Axis, Block, Cell, Chart, Dataset, GraphType, LegendPosition, Paragraph, Row, Table,
};

/// Draw the flows view.
pub fn render(f: &mut Frame<'_>, r: Rect, app: &App) {
    let table = table_area(r);
    let charts_h = r.height - table.height;
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

/// Where the flows table goes in the view's rectangle `r`.
fn table_area(r: Rect) -> Rect {
    let charts_h = if r.height >= 22 { r.height / 2 } else { 0 };
    Rect {
        height: r.height - charts_h,
        ..r
    }
}

/// The row (in sorted order) of the flows table at screen line `y` of the view in `r`.
pub fn row_at(r: Rect, app: &App, y: u16) -> Option<usize> {
    let r = table_area(r);
    let total = app.current().map_or(0, |s| s.flows.len());
    let height = r.height.saturating_sub(3) as usize;
    let first = r.y + 2;
    if y < first || y >= first + height as u16 || total == 0 {
        return None;
    }
    let sel = app.selected.min(total - 1);
    let row = (sel + 1).saturating_sub(height) + (y - first) as usize;
    (row < total).then_some(row)
}

/// The sort column under screen column `x` of the flows table's header.
pub fn column_at(r: Rect, x: u16) -> Option<FlowSort> {
    let inner = Block::bordered().inner(table_area(r));
    let cols = ratatui::layout::Layout::horizontal(WIDTHS)
        .spacing(1)
        .split(inner);
    let keys = [
        Some(FlowSort::Id),
        None,
        Some(FlowSort::Rate),
        None,
        Some(FlowSort::Cnps),
        Some(FlowSort::Rtt),
        Some(FlowSort::Bytes),
        None,
    ];
    let i = cols.iter().position(|c| x >= c.x && x < c.right())?;
    keys.get(i).copied().flatten()
}

/// The flows table's columns.
const WIDTHS: [Constraint; 8] = [
    Constraint::Length(6),
    Constraint::Fill(1),
    Constraint::Length(11),
    Constraint::Length(8),
    Constraint::Length(6),
    Constraint::Length(9),
    Constraint::Length(8),
    Constraint::Length(6),
];

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
    let order = app.flow_sort.order(flows, app.flow_ascending);
    let rows = order
        .iter()
        .enumerate()
        .skip(offset)
        .take(height)
        .map(|(i, &k)| {
            let x = &flows[k];
            // a finished flow sends nothing: not its last rate
            let rw = match x.rate_bps {
                Some(b) if !x.finished => rate(b, app.units),
                _ => "-".into(),
            };
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
    let mark = |k: FlowSort| {
        if app.flow_sort == k {
            format!("{}{}", k.name(), if app.flow_ascending { "▲" } else { "▼" })
        } else {
            k.name().to_string()
        }
    };
    let header = Row::new([
        mark(FlowSort::Id),
        "src → dst".into(),
        mark(FlowSort::Rate),
        "window".into(),
        mark(FlowSort::Cnps),
        mark(FlowSort::Rtt),
        mark(FlowSort::Bytes),
        "state".into(),
    ])
    .style(t.title());
    f.render_widget(Table::new(rows, WIDTHS).header(header).block(block), r);
}

/// The charts' time span, seconds on the source's clock.
fn xs(app: &App) -> (f64, f64) {
    let p = &app.history.points;
    let a = p.front().map_or(0.0, |x| x.at_ns as f64 / 1e9);
    let b = p.back().map_or(1.0, |x| x.at_ns as f64 / 1e9);
    (a, if b > a { b } else { a + 1e-9 })
}

/// Time-axis labels: start, middle and end on the source's clock, as precise as the
/// span needs (`2.40ms … 2.50ms` for the simulated demo; it read `0s … 0s`).
fn time_labels(x0: f64, x1: f64) -> Vec<String> {
    let ns = |s: f64| (s * 1e9).round().max(0.0) as u64;
    vec![stamp(ns(x0)), stamp(ns((x0 + x1) / 2.0)), stamp(ns(x1))]
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
        // a legend on every chart with named series, whatever its size
        .legend_position(Some(LegendPosition::TopLeft))
        .hidden_legend_constraints((Constraint::Percentage(100), Constraint::Percentage(100)))
        .x_axis(
            Axis::default()
                .bounds([x0, x1])
                .labels(time_labels(x0, x1))
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn time_labels_say_something_at_any_span() {
        // the simulated demo: 100 µs of history (it read `0s … 0s`)
        assert_eq!(time_labels(0.0024, 0.0025), ["2.40ms", "2.45ms", "2.50ms"]);
        assert_eq!(time_labels(2.4e-6, 2.6e-6), ["2.4µs", "2.5µs", "2.6µs"]);
        assert_eq!(time_labels(11.0, 12.0), ["11.00s", "11.50s", "12.00s"]);
        assert_eq!(
            time_labels(3600.0, 3660.0),
            ["1:00:00.000", "1:00:30.000", "1:01:00.000"]
        );
    }
}
