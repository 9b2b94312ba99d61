//! The footer: key hints, or the filter being typed with its error.

use crate::app::App;
use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};
use ratatui::widgets::Paragraph;

/// Draw the footer line.
pub fn render(f: &mut Frame<'_>, r: Rect, app: &App) {
    let t = app.theme;
    let line = if app.filter.editing {
        let mut s = vec![
            Span::styled("/", t.title()),
            Span::raw(app.filter.text.clone()),
            Span::styled("█", t.text()),
        ];
        let text = app.filter.text.trim();
        if let (false, Err(e)) = (text.is_empty(), text.parse::<crate::filter::Expr>()) {
            s.push(Span::styled(format!("  {e}"), t.dim()));
        }
        s.push(Span::styled("   enter apply · esc clear", t.dim()));
        Line::from(s)
    } else if let Some(e) = &app.filter.error {
        Line::from(Span::styled(
            format!(
                " filter `{}`: {e} (/ to edit, esc to clear)",
                app.filter.text
            ),
            t.bad(),
        ))
    } else {
        let hints = "? help  tab view  ↑↓←→ move  enter drill  esc back  / filter  s sort  space freeze  f faults  u units  q quit";
        Line::from(Span::styled(format!(" {hints}"), t.dim()))
    };
    f.render_widget(Paragraph::new(line), r);
}
