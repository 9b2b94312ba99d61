//! The help screen: every key binding (from the key map, so rebinding shows here) and the
//! filter syntax.

use crate::app::App;
use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Clear, Paragraph, Wrap};

/// Draw help over `area`.
pub fn render(f: &mut Frame<'_>, area: Rect, app: &App) {
    let t = app.theme;
    let mut lines = Vec::new();
    for (_, help, keys) in app.keys.bindings() {
        let keys: Vec<String> = keys.iter().map(|k| k.to_string()).collect();
        lines.push(Line::from(vec![
            Span::styled(format!("{:>16}  ", keys.join(" ")), t.title()),
            Span::raw(help),
        ]));
    }
    lines.push(Line::default());
    lines.push(Line::from(Span::styled(
        "filter: util>90 and pfc>0 · drops>0 or down · leaf-3 · plane=2 and tier=leaf · not (ecn<5)",
        t.dim(),
    )));
    lines.push(Line::from(Span::styled(
        "fields: util paused ecn (%), gbps, drops pfc (/s), plane, tier",
        t.dim(),
    )));
    lines.push(Line::from(Span::styled(
        "glyphs: ✖ link down · ! drops · P PFC pausing · ↑↓ changed",
        t.dim(),
    )));
    let w = area.width.min(100);
    let h = (lines.len() as u16 + 2).min(area.height);
    let r = Rect {
        x: area.x + (area.width - w) / 2,
        y: area.y + (area.height - h) / 2,
        width: w,
        height: h,
    };
    f.render_widget(Clear, r);
    let block = Block::bordered().title(Span::styled(" help — ? or Esc to close ", t.title()));
    f.render_widget(
        Paragraph::new(lines)
            .wrap(Wrap { trim: false })
            .block(block),
        r,
    );
}
