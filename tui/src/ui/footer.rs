//! The footer: key hints for the current view, built from the key map (so rebinding
//! shows here), or the filter being typed with its error. Hints that do not fit are
//! dropped whole, least useful first; `?` help and quit always stay.

use crate::app::{App, Tab};
use crate::keys::Action;
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
        Line::from(Span::styled(hints(app, r.width as usize), t.dim()))
    };
    f.render_widget(Paragraph::new(line), r);
}

/// The hints of the current view, most useful first (help first, quit last).
fn wanted(app: &App) -> Vec<(&'static [Action], &'static str)> {
    use Action::*;
    let mut v: Vec<(&'static [Action], &'static str)> = Vec::new();
    if app.help {
        v.push((&[Up, Down], "scroll"));
        v.push((&[Back], "close"));
        return v;
    }
    let planes = app.fabric.planes.len() > 1;
    v.push((&[NextView], "view"));
    match app.tab {
        Tab::Heatmap => {
            v.push((&[Up, Down, Left, Right], "move"));
            v.push((&[Enter], "drill"));
            if !app.path.is_empty() {
                v.push((&[Back], "back"));
            }
            v.push((&[Filter], "filter"));
            if planes {
                v.push((&[PrevPlane, NextPlane], "plane"));
                v.push((&[SideBySide], "side by side"));
            }
            v.push((&[FaultsOnly], "faults"));
        }
        Tab::Links if app.link_open.is_some() => v.push((&[Back], "back to the table")),
        Tab::Links => {
            v.push((&[Up, Down], "move"));
            v.push((&[Enter], "open"));
            v.push((&[Sort], "sort"));
            v.push((&[SortReverse], "reverse"));
            v.push((&[Filter], "filter"));
            v.push((&[FaultsOnly], "faults"));
        }
        Tab::Flows => {
            v.push((&[Up, Down], "move"));
            v.push((&[Sort], "sort"));
            v.push((&[SortReverse], "reverse"));
            v.push((&[YScale], "y-scale"));
        }
        Tab::Events => v.push((&[Up, Down], "scroll")),
    }
    if app.replaying() {
        v.push((&[Freeze], "pause"));
        v.push((&[SeekBack, SeekForward], "seek"));
        v.push((&[Slower, Faster], "speed"));
    } else {
        v.push((&[Freeze], "freeze"));
    }
    v.push((&[Units], "units"));
    v
}

/// The keys of `actions` as the hint shows them: the first key of each (`↑↓`, `< >`).
fn keys(app: &App, actions: &[Action]) -> Option<String> {
    let ks: Vec<String> = actions
        .iter()
        .filter_map(|a| app.keys.keys_of(*a).first().map(|c| c.to_string()))
        .collect();
    if ks.is_empty() {
        return None;
    }
    let arrows = ks
        .iter()
        .all(|k| ["↑", "↓", "←", "→"].contains(&k.as_str()));
    Some(if arrows { ks.concat() } else { ks.join(" ") })
}

/// The hint line for `width` columns: whole hints only.
pub fn hints(app: &App, width: usize) -> String {
    let one = |actions: &[Action], label: &str| keys(app, actions).map(|k| format!("{k} {label}"));
    let first = one(&[Action::Help], "help");
    let last = one(&[Action::Quit], "quit");
    let mut out: Vec<String> = first.into_iter().collect();
    // a leading space, then the hints two spaces apart
    let mut used = out
        .iter()
        .chain(&last)
        .map(|h| h.chars().count() + 2)
        .sum::<usize>()
        - 1;
    for (actions, label) in wanted(app) {
        let Some(h) = one(actions, label) else {
            continue;
        };
        let w = h.chars().count() + 2;
        if used + w > width {
            break; // the rest matter less
        }
        used += w;
        out.push(h);
    }
    out.extend(last);
    format!(" {}", out.join("  "))
}
