//! Events: failures, repairs and their durations, reroutes, PFC storms, miswiring.

use crate::app::App;
use crate::metrics::Severity;
use crate::units::stamp;
use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Paragraph};

/// Draw events, newest first (`compact`: the panel under the heat map).
pub fn render(f: &mut Frame<'_>, r: Rect, app: &App, compact: bool) {
    let t = app.theme;
    let title = format!(" events ({}) ", app.events.len());
    let block = Block::bordered().title(Span::styled(title, t.title()));
    let height = r.height.saturating_sub(2) as usize;
    if app.events.is_empty() {
        f.render_widget(
            Paragraph::new(Span::styled("no events", t.dim())).block(block),
            r,
        );
        return;
    }
    let skip = if compact {
        0
    } else {
        app.selected.min(app.events.len().saturating_sub(1))
    };
    let lines: Vec<Line<'_>> = app
        .events
        .iter()
        .rev()
        .skip(skip)
        .take(height)
        .map(|e| {
            let (g, style) = match e.severity {
                Severity::Info => ("·", t.text()),
                Severity::Warn => ("▲", t.warn()),
                Severity::Bad => ("✖", t.bad()),
            };
            Line::from(vec![
                Span::styled(format!("{:>12} ", stamp(e.at_ns)), t.dim()),
                Span::styled(format!("{g} "), style),
                Span::styled(e.text.clone(), style),
            ])
        })
        .collect();
    f.render_widget(Paragraph::new(lines).block(block), r);
}
