//! The header: source state, losslessness (LOSSLESS / LOSS DETECTED and where), PFC,
//! ECN, failed links, and per-tier p99 / max utilisation with sparklines.

use crate::app::{App, SourceStatus};
use crate::theme;
use crate::units::{pct, si};
use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};
use ratatui::widgets::Paragraph;

const TIER_NAMES: [&str; 3] = ["host–leaf", "leaf–spine", "spine–core"];
const SHORT_NAMES: [&str; 3] = ["H–L", "L–S", "S–C"];
const SPARK: [char; 8] = ['▁', '▂', '▃', '▄', '▅', '▆', '▇', '█'];

/// Draw the header into `r` (2 or 3 lines).
pub fn render(f: &mut Frame<'_>, r: Rect, app: &App) {
    let mut lines = vec![status_line(app, r.width), loss_line(app, r.width)];
    if r.height >= 3 {
        lines.push(tier_line(app, r.width));
    }
    f.render_widget(Paragraph::new(lines), r);
}

fn status_line(app: &App, width: u16) -> Line<'static> {
    let t = app.theme;
    let mut s = vec![
        Span::styled(" fabric-tui ", t.title()),
        Span::raw(format!("{} ", app.fabric.name)),
    ];
    let (text, style) = match &app.status {
        SourceStatus::Connecting(n) => (format!("… connecting to {n}"), t.warn()),
        SourceStatus::Live(n) => (format!("● LIVE {n}"), t.ok()),
        SourceStatus::Replay {
            name,
            speed,
            paused,
            at_ns,
            len_ns,
            ended,
            ..
        } => (
            format!(
                "{} REPLAY {name} {}× {} / {}{}",
                if *paused { "❚❚" } else { "▶" },
                crate::units::speed(*speed),
                crate::units::stamp(*at_ns),
                crate::units::stamp(*len_ns),
                match (*ended, *paused) {
                    (true, true) => " (end) PAUSED",
                    (true, false) => " (end)",
                    (false, true) => " PAUSED",
                    (false, false) => "",
                }
            ),
            t.warn(),
        ),
        SourceStatus::Disconnected {
            name,
            since,
            reason,
        } => (
            format!("✖ DISCONNECTED (values stale) from {name} since {since}: {reason}"),
            t.bad(),
        ),
    };
    s.push(Span::styled(text, style));
    if let Some(rec) = &app.recording {
        s.push(Span::raw(" "));
        s.push(Span::styled(format!("● REC {rec}"), t.bad()));
    }
    if app.frozen {
        s.push(Span::raw(" "));
        s.push(Span::styled(" ❚❚ FROZEN ", t.banner()));
    }
    if let (Some(i), Some(name)) = (app.tenant, app.tenant_name()) {
        let links = app.tenants.links.get(i).map_or(0, Vec::len);
        s.push(Span::raw(" "));
        s.push(Span::styled(
            format!(" TENANT {name}: {links} host links "),
            t.banner(),
        ));
    }
    if let Some(cur) = app.current() {
        let used: usize = s.iter().map(|x| x.width()).sum();
        let tail = format!("t={} ", crate::units::stamp(cur.at_ns));
        let pad = (width as usize).saturating_sub(used + tail.len());
        if pad > 0 {
            s.push(Span::raw(" ".repeat(pad)));
            s.push(Span::styled(tail, t.dim()));
        }
    }
    Line::from(s)
}

fn loss_line(app: &App, width: u16) -> Line<'static> {
    let t = app.theme;
    let Some(tot) = app.view_totals() else {
        return Line::from(Span::styled(" no data yet", t.dim()));
    };
    let mut s = vec![Span::raw(" ")];
    // The indicator always shows; the other parts are added while they fit, most urgent first.
    let mut parts: Vec<(String, ratatui::style::Style)> = Vec::new();
    if tot.lossless() {
        s.push(Span::styled("✔ LOSSLESS", t.ok()));
    } else {
        s.push(Span::styled(
            format!("{} LOSS DETECTED", theme::DROP),
            t.bad(),
        ));
        let rate = format!(
            " {} drops/s ({} total)",
            si(tot.drops_per_s),
            si(tot.drops_total as f64)
        );
        s.push(Span::styled(rate, t.bad()));
        if let Some(l) = tot.worst_drop_link {
            parts.push((format!(" at {}", app.fabric.link_name(l)), t.bad()));
        }
    }
    if tot.failed_links > 0 {
        let n = tot.failed_links;
        parts.push((
            format!(
                " │ {} {n} link{} down",
                theme::DOWN,
                if n == 1 { "" } else { "s" }
            ),
            t.bad(),
        ));
    }
    let pfc = if tot.pfc_per_s > 0.0 {
        (
            format!(
                " │ {} PFC {}/s paused {}",
                theme::PAUSE,
                si(tot.pfc_per_s),
                pct(tot.paused_share as f32)
            ),
            t.warn(),
        )
    } else {
        (" │ no PFC pauses".to_string(), t.text())
    };
    parts.push(pfc);
    parts.push((format!(" │ ECN {}/s", si(tot.ecn_per_s)), t.text()));
    if tot.failed_links == 0 {
        parts.push((" │ all links up".to_string(), t.ok()));
    }
    let mut used: usize = s.iter().map(|x| x.width()).sum();
    for (text, style) in parts {
        let w = text.chars().count();
        if used + w > width as usize {
            break;
        }
        used += w;
        s.push(Span::styled(text, style));
    }
    Line::from(s)
}

fn tier_line(app: &App, width: u16) -> Line<'static> {
    let t = app.theme;
    let Some(tot) = app.view_totals() else {
        return Line::default();
    };
    let tiers: Vec<usize> = (0..3).filter(|&k| tot.tiers[k].links > 0).collect();
    let per = (width as usize).saturating_sub(1) / tiers.len().max(1);
    let mut s = vec![Span::raw(" ")];
    for k in tiers {
        let x = tot.tiers[k];
        let name = if per >= 32 {
            TIER_NAMES[k]
        } else {
            SHORT_NAMES[k]
        };
        let text = format!("{name} p99 {} max {} ", pct(x.p99), pct(x.max));
        let spark_w = per.saturating_sub(text.chars().count() + 2).min(30);
        s.push(Span::raw(text.clone()));
        if spark_w >= 4 {
            let pts: Vec<f32> = app
                .view_history()
                .points
                .iter()
                .rev()
                .take(spark_w)
                .map(|p| p.tier_max[k])
                .collect();
            let line: String = pts
                .iter()
                .rev()
                .map(|&u| SPARK[((u.clamp(0.0, 1.0) * 7.0).round()) as usize])
                .collect();
            s.push(Span::styled(
                line.clone(),
                ratatui::style::Style::new().fg(t.util(x.max)),
            ));
            s.push(Span::raw(" ".repeat(spark_w - pts.len() + 1)));
        } else {
            s.push(Span::raw(" "));
        }
    }
    Line::from(s)
}
