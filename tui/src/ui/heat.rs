//! The heat map: a plane's grid (or a drilled-down window of it), downsampled by maximum,
//! two bins per character with half blocks (one bin and a shade glyph without colour).

use crate::app::App;
use crate::bins::{GridId, Panel};
use crate::fabric::Grid;
use crate::heatmap::{Bin, Binning, Window};
use crate::theme::{self, Theme};
use crate::units::pct;
use ratatui::Frame;
use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::style::{Color, Modifier, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Paragraph};

/// Width of the row-label column.
const LABEL_W: u16 = 12;

fn inner(r: Rect) -> (Rect, u16) {
    let i = Block::new().borders(Borders::ALL).inner(r);
    let label = if i.width >= 40 { LABEL_W } else { 0 };
    // one line for the column axis, one for the legend / cursor line
    let cells = Rect {
        x: i.x + label,
        y: i.y + 1,
        width: i.width.saturating_sub(label),
        height: i.height.saturating_sub(2),
    };
    (cells, label)
}

/// Bins that fit in a heat-map panel of `r`: (rows, columns).
pub fn capacity(r: Rect, theme: Theme) -> (u32, u32) {
    let (c, _) = inner(r);
    let per_char = if theme.colours() { 2 } else { 1 };
    ((c.height as u32 * per_char).max(1), (c.width as u32).max(1))
}

/// Lines the current grid needs in a panel of `r` (borders, axis and legend included),
/// drawn as it would be in the whole of `r`; None when it is not one grid (side by
/// side, no planes) or needs all of `r`.
pub fn needed_height(r: Rect, app: &App) -> Option<u16> {
    if app.fabric.planes.is_empty() || (app.side_by_side && app.fabric.planes.len() > 1) {
        return None;
    }
    let b = app.binning()?;
    let (cells, _) = inner(r);
    let per_char: u32 = if app.theme.colours() { 2 } else { 1 };
    let sc = Scale::new(cells, per_char, &b);
    let lines = (b.bin_rows * sc.sy).div_ceil(per_char);
    let need = lines as u16 + (r.height - cells.height);
    (need < r.height).then_some(need)
}

/// Draw the heat map (one plane, or all planes side by side).
pub fn render(f: &mut Frame<'_>, r: Rect, app: &App) {
    if app.fabric.planes.is_empty() {
        let msg = "this fabric has no switch planes to draw; see the Links view";
        f.render_widget(Paragraph::new(msg).block(Block::bordered()), r);
        return;
    }
    if app.side_by_side && app.fabric.planes.len() > 1 {
        let n = app.fabric.planes.len() as u16;
        let w = r.width / n;
        for (i, p) in app.fabric.planes.iter().enumerate() {
            let area = Rect {
                x: r.x + i as u16 * w,
                width: w,
                ..r
            };
            let (cap_r, cap_c) = capacity(area, app.theme);
            let b = Binning::fit(Window::all(&p.top), cap_r, cap_c);
            let panel = app.heat_panel(
                GridId {
                    plane: i,
                    pod: None,
                },
                b,
            );
            let cursor = (i == app.plane).then_some(app.cursor);
            draw_grid(f, area, app, &p.top, &panel, cursor, p.top.title.clone());
        }
        return;
    }
    let (Some((g, _, pod)), Some(b)) = (app.grid(), app.binning()) else {
        return;
    };
    let title = format!("{} — {}", app.breadcrumb().join(" › "), g.title);
    let id = GridId {
        plane: app.plane,
        pod,
    };
    draw_grid(
        f,
        r,
        app,
        g,
        &app.heat_panel(id, b),
        Some(app.cursor),
        title,
    );
}

fn draw_grid(
    f: &mut Frame<'_>,
    r: Rect,
    app: &App,
    g: &Grid,
    panel: &Panel,
    cursor: Option<(u32, u32)>,
    title: String,
) {
    let t = app.theme;
    let block = Block::bordered().title(Span::styled(format!(" {title} "), t.title()));
    f.render_widget(block, r);
    let (cells, label_w) = inner(r);
    if cells.width == 0 || cells.height == 0 {
        return;
    }
    let (b, bins) = (&panel.binning, &panel.bins);
    // a bin spans several half rows and characters: colour each once
    let colours: Vec<Color> = bins.iter().map(|x| colour(t, x)).collect();
    let per_char: u32 = if t.colours() { 2 } else { 1 };
    let sc = Scale::new(cells, per_char, b);
    let buf = f.buffer_mut();
    for y in 0..cells.height {
        for x in 0..cells.width {
            let Some(c) = sc.col(x) else { continue };
            let half = |h: u32| {
                sc.row(y as u32 * per_char + h).map(|r| {
                    let i = (r * b.bin_cols + c) as usize;
                    (r, (bins[i], colours[i]))
                })
            };
            let (top, bottom) = (half(0), if per_char == 2 { half(1) } else { None });
            let Some((tr, top)) = top else { continue };
            let cur = cursor.and_then(|(cr, cc)| {
                if cc != c {
                    None
                } else if cr == tr {
                    Some(0)
                } else if bottom.is_some_and(|(br, _)| br == cr) {
                    Some(1)
                } else {
                    None
                }
            });
            let first = sc.first(x);
            draw_cell(
                buf,
                (cells.x + x, cells.y + y),
                t,
                top,
                bottom.map(|x| x.1),
                cur,
                first,
            );
        }
    }
    let i = Block::bordered().inner(r);
    let flags: Vec<Option<char>> = panel.row_faults.iter().map(glyph).collect();
    axes(buf, i, label_w, g, b, &sc, t, &flags);
    let legend = legend_line(app, g, b, bins, cursor);
    f.render_widget(
        Paragraph::new(legend),
        Rect {
            y: i.bottom().saturating_sub(1),
            height: 1,
            ..i
        },
    );
}

fn glyph(b: &Bin) -> Option<char> {
    if b.down {
        Some(theme::DOWN)
    } else if b.drops {
        Some(theme::DROP)
    } else if b.pause {
        Some(theme::PAUSE)
    } else {
        None
    }
}

fn colour(t: Theme, b: &Bin) -> Color {
    if b.links > 0 {
        t.util(b.util)
    } else {
        Color::Reset
    }
}

/// One character: `top` and `bottom` bins with their colours.
fn draw_cell(
    buf: &mut Buffer,
    at: (u16, u16),
    t: Theme,
    (top, top_colour): (Bin, Color),
    bottom: Option<(Bin, Color)>,
    cursor: Option<u32>,
    first: bool,
) {
    let Some(cell) = buf.cell_mut(at) else {
        return;
    };
    let glyph = |b: &Bin| if first { glyph(b) } else { None };
    if !t.colours() {
        let ch = glyph(&top).unwrap_or(if top.links > 0 {
            Theme::shade(top.util)
        } else {
            ' '
        });
        let style = if cursor.is_some() {
            Style::new().add_modifier(Modifier::REVERSED)
        } else {
            Style::new()
        };
        cell.set_char(ch).set_style(style);
        return;
    }
    let (mut fg, mut bg) = (top_colour, bottom.map_or(Color::Reset, |x| x.1));
    let bottom = bottom.map(|x| x.0);
    match cursor {
        Some(0) => fg = Color::White,
        Some(_) => bg = Color::White,
        None => {}
    }
    let flagged = glyph(&top).or_else(|| bottom.as_ref().and_then(glyph));
    if let Some(ch) = flagged {
        // A fault glyph replaces the half blocks: red-on-hot, readable in 16 colours.
        let under = if top.util >= bottom.map_or(0.0, |b| b.util) {
            fg
        } else {
            bg
        };
        let fg = if matches!(t, Theme::Ansi16) {
            Color::White
        } else {
            Color::Rgb(255, 255, 255)
        };
        cell.set_char(ch)
            .set_style(Style::new().fg(fg).bg(under).add_modifier(Modifier::BOLD));
        if cursor.is_some() {
            cell.modifier.insert(Modifier::REVERSED);
        }
        return;
    }
    cell.set_char('▀').set_style(Style::new().fg(fg).bg(bg));
}

/// How bins map onto characters: small grids are scaled up (up to 6 characters wide
/// and 4 half-rows tall per bin, with a gap column from 3 wide) to fill the panel.
struct Scale {
    sx: u32,
    sy: u32,
    per_char: u32,
    rows: u32,
    cols: u32,
}

impl Scale {
    fn new(cells: Rect, per_char: u32, b: &Binning) -> Scale {
        let sx = (cells.width as u32 / b.bin_cols.max(1)).clamp(1, 6);
        let mut sy = (cells.height as u32 * per_char / b.bin_rows.max(1)).clamp(1, 4);
        if per_char == 2 && sy > 1 {
            sy &= !1; // whole characters per bin, so row labels line up
        }
        Scale {
            sx,
            sy,
            per_char,
            rows: b.bin_rows,
            cols: b.bin_cols,
        }
    }

    /// Bin column under character column `x` (None in a gap or past the grid).
    fn col(&self, x: u16) -> Option<u32> {
        let x = x as u32;
        let c = x / self.sx;
        (c < self.cols && !(self.sx >= 3 && x % self.sx == self.sx - 1)).then_some(c)
    }

    /// Is character column `x` the first of its bin (where fault glyphs go)?
    fn first(&self, x: u16) -> bool {
        (x as u32).is_multiple_of(self.sx)
    }

    /// Bin row under half-row `hr`.
    fn row(&self, hr: u32) -> Option<u32> {
        let r = hr / self.sy;
        (r < self.rows).then_some(r)
    }
}

#[allow(clippy::too_many_arguments)]
fn axes(
    buf: &mut Buffer,
    i: Rect,
    label_w: u16,
    g: &Grid,
    b: &Binning,
    sc: &Scale,
    t: Theme,
    flags: &[Option<char>],
) {
    let w = b.window;
    let name = |v: &[String], k: u32| v.get(k as usize).cloned().unwrap_or_default();
    let cols = format!(
        "{} {}…{} ({} per column{})",
        " ".repeat(label_w as usize),
        name(&g.cols, w.col0),
        name(&g.cols, w.col0 + w.cols.saturating_sub(1)),
        b.cols_per_bin,
        if sc.per_char == 2 {
            ", 2 rows per line"
        } else {
            ""
        },
    );
    buf.set_stringn(i.x, i.y, cols, i.width as usize, t.dim());
    if label_w == 0 {
        return;
    }
    let mut last = None;
    for y in 0..i.height.saturating_sub(2) {
        let Some(r) = sc.row(y as u32 * sc.per_char) else {
            break;
        };
        if last == Some(r) {
            continue;
        }
        last = Some(r);
        let cells = b.cells_of(r, 0);
        let more = if cells.rows > 1 { "…" } else { "" };
        let label = format!("{}{more}", name(&g.rows, cells.row0));
        let n = label.chars().count();
        let label: String = if n >= label_w as usize {
            label.chars().skip(n + 1 - label_w as usize).collect()
        } else {
            label
        };
        buf.set_stringn(
            i.x,
            i.y + 1 + y,
            format!("{label:>0$}", label_w as usize - 1),
            label_w as usize,
            t.dim(),
        );
        if let Some(Some(ch)) = flags.get(r as usize) {
            buf.set_stringn(i.x + label_w - 1, i.y + 1 + y, ch.to_string(), 1, t.bad());
        }
    }
}

fn legend_line(
    app: &App,
    g: &Grid,
    b: &Binning,
    bins: &[Bin],
    cursor: Option<(u32, u32)>,
) -> Line<'static> {
    let t = app.theme;
    let mut s = Vec::new();
    if let Some((cr, cc)) = cursor.filter(|&(r, c)| r < b.bin_rows && c < b.bin_cols) {
        let bin = bins[(cr * b.bin_cols + cc) as usize];
        let w = b.cells_of(cr, cc);
        let name = |v: &[String], k: u32| v.get(k as usize).cloned().unwrap_or_default();
        let rows = if w.rows == 1 {
            name(&g.rows, w.row0)
        } else {
            format!(
                "{}…{}",
                name(&g.rows, w.row0),
                name(&g.rows, w.row0 + w.rows - 1)
            )
        };
        let cols = if w.cols == 1 {
            name(&g.cols, w.col0)
        } else {
            format!(
                "{}…{}",
                name(&g.cols, w.col0),
                name(&g.cols, w.col0 + w.cols - 1)
            )
        };
        let mut text = format!(
            "▸ {rows} × {cols}: {} links, max {}",
            bin.links,
            pct(bin.util)
        );
        for (flag, what) in [
            (bin.down, " ✖ down"),
            (bin.drops, " ! drops"),
            (bin.pause, " P PFC"),
        ] {
            if flag {
                text += what;
            }
        }
        s.push(Span::styled(
            text,
            if bin.down || bin.drops {
                t.bad()
            } else {
                t.text()
            },
        ));
        s.push(Span::raw("   "));
    }
    if t == Theme::Ansi16 {
        // every colour the map uses, from its lower bound
        for (u, c) in theme::ANSI16_BANDS {
            s.push(Span::styled("█", Style::new().fg(c)));
            s.push(Span::styled(format!("{} ", pct(u)), t.dim()));
        }
    } else if t.colours() {
        for u in [0.0, 0.3, 0.7, 1.0] {
            s.push(Span::styled("█", Style::new().fg(t.util(u))));
            s.push(Span::styled(format!("{} ", pct(u)), t.dim()));
        }
    } else {
        s.push(Span::styled("·░▒▓█ 0→100% ", t.dim()));
    }
    s.push(Span::styled("✖ down ! drops P PFC", t.dim()));
    Line::from(s)
}
