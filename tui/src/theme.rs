//! Colour themes. Every colour also carries a glyph (✖ down, ! drops, P pausing, shades
//! for utilisation), so the screen reads in 16 colours and with `NO_COLOR`.

use ratatui::style::{Color, Modifier, Style};
use serde::Deserialize;

/// Glyph of a link that is down.
pub const DOWN: char = '✖';
/// Glyph of a link that drops packets.
pub const DROP: char = '!';
/// Glyph of a link paused by PFC.
pub const PAUSE: char = 'P';

/// Which palette.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Theme {
    /// 24-bit colour.
    #[default]
    Full,
    /// The 16 ANSI colours.
    Ansi16,
    /// No colour at all (`NO_COLOR`): bold, reverse and glyphs only.
    None,
}

/// The full theme's utilisation ramp: dark blue-grey (idle) → green → yellow → red. A
/// constant, not built on the stack per call (the heat map colours every bin per frame).
const RAMP: [(f32, (u8, u8, u8)); 4] = [
    (0.0, (40, 48, 64)),
    (0.3, (46, 160, 67)),
    (0.7, (230, 200, 40)),
    (1.0, (230, 40, 40)),
];

/// The 16-colour theme's utilisation bands: each colour from its lower bound on (the
/// heat map's legend names every one).
pub const ANSI16_BANDS: [(f32, Color); 7] = [
    (0.0, Color::DarkGray),
    (0.01, Color::Blue),
    (0.3, Color::Cyan),
    (0.5, Color::Green),
    (0.7, Color::Yellow),
    (0.85, Color::LightRed),
    (0.95, Color::Red),
];

/// Utilisation shades, idle to full, for the no-colour heat map.
const SHADES: [char; 6] = [' ', '·', '░', '▒', '▓', '█'];

/// `v.round() as u8`, exactly, without a call into libm (the heat map colours every
/// bin of every frame): below 2²³, `v − trunc(v)` is exact, so comparing it with 0.5
/// rounds half away from zero as `f32::round` does. Negative and NaN give 0, as `as u8`.
fn round_u8(v: f32) -> u8 {
    let whole = v as u32; // truncates toward zero, saturates
    let up = v - whole as f32 >= 0.5;
    whole.saturating_add(u32::from(up)).min(255) as u8
}

impl Theme {
    /// Colour of a utilisation 0..=1 (`Reset` in the no-colour theme).
    pub fn util(self, u: f32) -> Color {
        let u = u.clamp(0.0, 1.0);
        match self {
            Theme::Full => {
                let stops = &RAMP;
                let i = stops
                    .iter()
                    .rposition(|s| u >= s.0)
                    .unwrap_or(0)
                    .min(stops.len() - 2);
                let ((u0, a), (u1, b)) = (stops[i], stops[i + 1]);
                let t = ((u - u0) / (u1 - u0)).clamp(0.0, 1.0);
                let mix = |x: u8, y: u8| round_u8(x as f32 + (y as f32 - x as f32) * t);
                Color::Rgb(mix(a.0, b.0), mix(a.1, b.1), mix(a.2, b.2))
            }
            Theme::Ansi16 => {
                let i = ANSI16_BANDS.iter().rposition(|b| u >= b.0).unwrap_or(0);
                ANSI16_BANDS[i].1
            }
            Theme::None => Color::Reset,
        }
    }

    /// A shade glyph for a utilisation 0..=1.
    pub fn shade(u: f32) -> char {
        if u <= 0.0 {
            return SHADES[0];
        }
        SHADES[1 + ((u.clamp(0.0, 1.0) * 4.999) as usize).min(4)]
    }

    /// Does this theme colour the heat map (two links per character)?
    pub fn colours(self) -> bool {
        self != Theme::None
    }

    fn fg(self, c: Color) -> Style {
        if self == Theme::None {
            Style::new()
        } else {
            Style::new().fg(c)
        }
    }

    /// Normal text.
    pub fn text(self) -> Style {
        Style::new()
    }
    /// Secondary text (labels, axes, stale values).
    pub fn dim(self) -> Style {
        match self {
            Theme::None => Style::new().add_modifier(Modifier::DIM),
            _ => Style::new().fg(Color::DarkGray),
        }
    }
    /// Good news (LOSSLESS, live).
    pub fn ok(self) -> Style {
        self.fg(Color::Green).add_modifier(Modifier::BOLD)
    }
    /// Warning (PFC pausing, reroute).
    pub fn warn(self) -> Style {
        self.fg(Color::Yellow).add_modifier(Modifier::BOLD)
    }
    /// Bad news (LOSS DETECTED, link down).
    pub fn bad(self) -> Style {
        match self {
            Theme::None => Style::new().add_modifier(Modifier::BOLD | Modifier::REVERSED),
            _ => Style::new().fg(Color::Red).add_modifier(Modifier::BOLD),
        }
    }
    /// Titles and the active tab.
    pub fn title(self) -> Style {
        self.fg(Color::Cyan).add_modifier(Modifier::BOLD)
    }
    /// The selected row / cursor.
    pub fn selected(self) -> Style {
        Style::new().add_modifier(Modifier::REVERSED)
    }
    /// A banner (FROZEN, DISCONNECTED).
    pub fn banner(self) -> Style {
        match self {
            Theme::None => Style::new().add_modifier(Modifier::BOLD | Modifier::REVERSED),
            _ => Style::new()
                .fg(Color::Black)
                .bg(Color::Yellow)
                .add_modifier(Modifier::BOLD),
        }
    }
    /// A cell value that changed since the previous sample.
    pub fn changed(self) -> Style {
        Style::new().add_modifier(Modifier::BOLD)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ramp_and_shades() {
        assert_eq!(Theme::Full.util(0.0), Color::Rgb(40, 48, 64));
        assert_eq!(Theme::Full.util(1.0), Color::Rgb(230, 40, 40));
        assert_eq!(Theme::Ansi16.util(0.97), Color::Red);
        assert_eq!(Theme::Ansi16.util(0.0), Color::DarkGray);
        assert_eq!(Theme::Ansi16.util(0.009), Color::DarkGray);
        assert_eq!(Theme::Ansi16.util(0.01), Color::Blue);
        assert_eq!(Theme::Ansi16.util(0.5), Color::Green);
        assert_eq!(Theme::Ansi16.util(0.9), Color::LightRed);
        assert_eq!(Theme::None.util(0.97), Color::Reset);
        assert_eq!(Theme::shade(0.0), ' ');
        assert_eq!(Theme::shade(0.001), '·');
        assert_eq!(Theme::shade(1.0), '█');
    }

    #[test]
    fn round_u8_is_f32_round() {
        // every half and its neighbours, a dense sweep, and the edges
        let mut vs: Vec<f32> = (0..=600).map(|k| k as f32 / 2.0 - 20.0).collect();
        for v in vs.clone() {
            vs.extend([v.next_up(), v.next_down()]);
        }
        vs.extend((0..2_000_000).map(|k| k as f32 * 0.000_137));
        vs.extend([
            f32::NAN,
            f32::INFINITY,
            f32::NEG_INFINITY,
            1e30,
            -1e30,
            0.0,
            -0.0,
        ]);
        for v in vs {
            assert_eq!(round_u8(v), v.round() as u8, "{v}");
        }
    }
}
