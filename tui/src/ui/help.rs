//! The help screen: every key binding (from the key map, so rebinding shows here) and the
//! filter syntax. It scrolls (↑↓, PgUp/PgDn, Home/End) when the terminal is short.

use crate::app::App;
use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Clear, Paragraph};

fn lines(app: &App) -> Vec<Line<'static>> {
    let t = app.theme;
    let mut lines = Vec::new();
    for (_, help, keys) in app.keys.bindings() {
        let keys: Vec<String> = keys.iter().map(|k| k.to_string()).collect();
        let keys = if keys.is_empty() {
            "(unbound)".to_string()
        } else {
            keys.join(" ")
        };
        lines.push(Line::from(vec![
            Span::styled(format!("{keys:>16}  "), t.title()),
            Span::raw(help),
        ]));
    }
    lines.push(Line::default());
    for text in [
        "mouse: click a tab, a row or a column header (sorts); the wheel scrolls",
        "filter: util>90 and pfc>0 · drops>0 or down · leaf-3",
        "        plane=2 and tier=leaf · not (ecn<5)",
        "fields: util paused ecn (%), gbps, drops pfc (/s), plane, tier",
        "glyphs: ✖ link down · ! drops · P PFC pausing · ↑↓ changed",
    ] {
        lines.push(Line::from(Span::styled(text, t.dim())));
    }
    lines
}

/// Where the help box goes in `area`, and how many lines it has.
fn place(area: Rect, n: usize) -> Rect {
    let w = area.width.min(100);
    let h = (n as u16 + 2).min(area.height);
    Rect {
        x: area.x + (area.width - w) / 2,
        y: area.y + (area.height - h) / 2,
        width: w,
        height: h,
    }
}

/// The furthest the help can scroll at the app's terminal size.
pub fn max_scroll(app: &App) -> usize {
    let n = lines(app).len();
    let r = place(Rect::new(0, 0, app.size.0, app.size.1), n);
    n.saturating_sub(r.height.saturating_sub(2) as usize)
}

/// Draw help over `area`.
pub fn render(f: &mut Frame<'_>, area: Rect, app: &App) {
    let t = app.theme;
    let all = lines(app);
    let n = all.len();
    let r = place(area, n);
    let rows = r.height.saturating_sub(2) as usize;
    let top = app.help_scroll.min(n.saturating_sub(rows));
    let title = if rows < n {
        format!(
            " help {}–{} of {n}, ↑↓ PgUp PgDn scroll — ? or Esc to close ",
            top + 1,
            (top + rows).min(n)
        )
    } else {
        " help — ? or Esc to close ".to_string()
    };
    f.render_widget(Clear, r);
    let block = Block::bordered().title(Span::styled(title, t.title()));
    let shown: Vec<Line<'static>> = all.into_iter().skip(top).take(rows).collect();
    f.render_widget(Paragraph::new(shown).block(block), r);
}
