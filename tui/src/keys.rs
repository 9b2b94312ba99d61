//! Key bindings: every [`Action`] with its name (as the config file writes it), its help
//! text and its default keys. Keys map to actions through a [`KeyMap`] lookup, not an
//! if/else chain; the help screen lists [`KeyMap::bindings`].

use crate::error::{Error, Result};
use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};

/// What a key does.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Action {
    /// Leave.
    Quit,
    /// Show or hide the help screen.
    Help,
    /// Next view (heat map → links → flows → events).
    NextView,
    /// Previous view.
    PrevView,
    /// The heat map view.
    ViewHeat,
    /// The links view.
    ViewLinks,
    /// The flows view.
    ViewFlows,
    /// The events view.
    ViewEvents,
    /// Move up.
    Up,
    /// Move down.
    Down,
    /// Move left.
    Left,
    /// Move right.
    Right,
    /// A page up.
    PageUp,
    /// A page down.
    PageDown,
    /// To the first row.
    Home,
    /// To the last row.
    End,
    /// Drill down into the selection.
    Enter,
    /// Back up one level (or close help / clear the filter).
    Back,
    /// Type a filter.
    Filter,
    /// Sort by the next column.
    Sort,
    /// Reverse the sort order.
    SortReverse,
    /// Freeze / unfreeze the display.
    Freeze,
    /// Show only faulty links (down, dropping, pausing).
    FaultsOnly,
    /// Bits or bytes.
    Units,
    /// Next plane.
    NextPlane,
    /// Previous plane.
    PrevPlane,
    /// One plane or all planes side by side.
    SideBySide,
    /// Fixed (0–100 %) or automatic chart y-scale.
    YScale,
    /// Replay: jump back 10 s.
    SeekBack,
    /// Replay: jump forward 10 s.
    SeekForward,
    /// Replay: play faster.
    Faster,
    /// Replay: play slower.
    Slower,
    /// Suspend to the shell (`fg` resumes).
    Suspend,
    /// Next tenant (`--tenants`): restrict the views to its links; after the last, all.
    Tenant,
}

/// (action, config name, help text, default keys).
pub const ACTIONS: [(Action, &str, &str, &[&str]); 34] = [
    (Action::Quit, "quit", "quit", &["q", "ctrl-c"]),
    (Action::Help, "help", "show / hide this help", &["?", "f1"]),
    (Action::NextView, "next-view", "next view", &["tab"]),
    (Action::PrevView, "prev-view", "previous view", &["backtab"]),
    (Action::ViewHeat, "view-heat", "heat map view", &["1"]),
    (Action::ViewLinks, "view-links", "links view", &["2"]),
    (Action::ViewFlows, "view-flows", "flows view", &["3"]),
    (Action::ViewEvents, "view-events", "events view", &["4"]),
    (Action::Up, "up", "move up", &["up", "k"]),
    (Action::Down, "down", "move down", &["down", "j"]),
    (Action::Left, "left", "move left", &["left", "h"]),
    (Action::Right, "right", "move right", &["right", "l"]),
    (Action::PageUp, "page-up", "page up", &["pgup"]),
    (Action::PageDown, "page-down", "page down", &["pgdn"]),
    (Action::Home, "home", "first row", &["home", "g"]),
    (Action::End, "end", "last row", &["end", "G"]),
    (
        Action::Enter,
        "enter",
        "drill down (pod → switch pair → link)",
        &["enter"],
    ),
    (
        Action::Back,
        "back",
        "back up / close / clear filter",
        &["esc", "backspace"],
    ),
    (
        Action::Filter,
        "filter",
        "filter links (util>90 and pfc>0, leaf-3, plane=2)",
        &["/"],
    ),
    (Action::Sort, "sort", "sort by the next column", &["s"]),
    (
        Action::SortReverse,
        "sort-reverse",
        "reverse the sort order",
        &["S"],
    ),
    (
        Action::Freeze,
        "freeze",
        "freeze / unfreeze the display (replay: pause / play)",
        &["space"],
    ),
    (
        Action::FaultsOnly,
        "faults-only",
        "only faulty links (down, drops, PFC)",
        &["f"],
    ),
    (Action::Units, "units", "bits / bytes per second", &["u"]),
    (Action::NextPlane, "next-plane", "next plane", &["]"]),
    (Action::PrevPlane, "prev-plane", "previous plane", &["["]),
    (
        Action::SideBySide,
        "side-by-side",
        "one plane / all planes side by side",
        &["p"],
    ),
    (
        Action::YScale,
        "y-scale",
        "charts: fixed / automatic y-scale",
        &["y"],
    ),
    (
        Action::SeekBack,
        "seek-back",
        "replay: back 1/20 of the recording",
        &["<", ","],
    ),
    (
        Action::SeekForward,
        "seek-forward",
        "replay: forward 1/20 of the recording",
        &[">", "."],
    ),
    (Action::Faster, "faster", "replay: twice as fast", &["+"]),
    (Action::Slower, "slower", "replay: half as fast", &["-"]),
    (
        Action::Suspend,
        "suspend",
        "suspend to the shell (fg resumes)",
        &["ctrl-z"],
    ),
    (
        Action::Tenant,
        "tenant",
        "next tenant: its links only (--tenants FILE), then all",
        &["t"],
    ),
];

/// A key with its modifiers.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Chord {
    /// The key.
    pub code: KeyCode,
    /// Ctrl / Alt (Shift is folded into the character).
    pub mods: KeyModifiers,
}

impl Chord {
    /// Parse `q`, `G`, `ctrl-c`, `alt-x`, `space`, `enter`, `esc`, `tab`, `backtab`,
    /// `backspace`, `up`, `down`, `left`, `right`, `pgup`, `pgdn`, `home`, `end`, `f1`…`f12`.
    pub fn parse(s: &str) -> std::result::Result<Chord, String> {
        let mut mods = KeyModifiers::NONE;
        let mut rest = s;
        loop {
            if let Some(r) = rest.strip_prefix("ctrl-").filter(|r| !r.is_empty()) {
                mods |= KeyModifiers::CONTROL;
                rest = r;
            } else if let Some(r) = rest.strip_prefix("alt-").filter(|r| !r.is_empty()) {
                mods |= KeyModifiers::ALT;
                rest = r;
            } else {
                break;
            }
        }
        let code = match rest {
            "space" => KeyCode::Char(' '),
            "enter" => KeyCode::Enter,
            "esc" => KeyCode::Esc,
            "tab" => KeyCode::Tab,
            "backtab" => KeyCode::BackTab,
            "backspace" => KeyCode::Backspace,
            "up" => KeyCode::Up,
            "down" => KeyCode::Down,
            "left" => KeyCode::Left,
            "right" => KeyCode::Right,
            "pgup" => KeyCode::PageUp,
            "pgdn" => KeyCode::PageDown,
            "home" => KeyCode::Home,
            "end" => KeyCode::End,
            f if f.len() > 1
                && f.starts_with('f')
                && f[1..].parse::<u8>().is_ok_and(|n| (1..=12).contains(&n)) =>
            {
                KeyCode::F(f[1..].parse().unwrap_or(1))
            }
            c if c.chars().count() == 1 => KeyCode::Char(c.chars().next().unwrap_or(' ')),
            _ => {
                return Err(
                    "expected one character, ctrl-/alt- and a key, or one of space, enter, esc, tab, backtab, backspace, up, down, left, right, pgup, pgdn, home, end, f1..f12".into(),
                );
            }
        };
        Ok(Chord { code, mods })
    }

    fn of(k: &KeyEvent) -> Chord {
        Chord {
            code: k.code,
            mods: k.modifiers & (KeyModifiers::CONTROL | KeyModifiers::ALT),
        }
    }
}

impl std::fmt::Display for Chord {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.mods.contains(KeyModifiers::CONTROL) {
            f.write_str("ctrl-")?;
        }
        if self.mods.contains(KeyModifiers::ALT) {
            f.write_str("alt-")?;
        }
        match self.code {
            KeyCode::Char(' ') => f.write_str("space"),
            KeyCode::Char(c) => write!(f, "{c}"),
            KeyCode::Enter => f.write_str("enter"),
            KeyCode::Esc => f.write_str("esc"),
            KeyCode::Tab => f.write_str("tab"),
            KeyCode::BackTab => f.write_str("shift-tab"),
            KeyCode::Backspace => f.write_str("backspace"),
            KeyCode::Up => f.write_str("↑"),
            KeyCode::Down => f.write_str("↓"),
            KeyCode::Left => f.write_str("←"),
            KeyCode::Right => f.write_str("→"),
            KeyCode::PageUp => f.write_str("pgup"),
            KeyCode::PageDown => f.write_str("pgdn"),
            KeyCode::Home => f.write_str("home"),
            KeyCode::End => f.write_str("end"),
            KeyCode::F(n) => write!(f, "f{n}"),
            other => write!(f, "{other:?}"),
        }
    }
}

/// Keys → actions.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KeyMap {
    bindings: Vec<(Action, Vec<Chord>)>,
}

impl Default for KeyMap {
    fn default() -> KeyMap {
        let bindings = ACTIONS
            .iter()
            .map(|(a, _, _, keys)| {
                (
                    *a,
                    keys.iter().filter_map(|k| Chord::parse(k).ok()).collect(),
                )
            })
            .collect();
        KeyMap { bindings }
    }
}

impl KeyMap {
    /// The action bound to a key, if any.
    pub fn action(&self, k: &KeyEvent) -> Option<Action> {
        let c = Chord::of(k);
        self.bindings
            .iter()
            .find(|(_, keys)| keys.contains(&c))
            .map(|(a, _)| *a)
    }

    /// Every action with its help text and keys, in help order.
    pub fn bindings(&self) -> impl Iterator<Item = (Action, &'static str, &[Chord])> + '_ {
        self.bindings.iter().map(|(a, keys)| {
            let help = ACTIONS.iter().find(|x| x.0 == *a).map_or("", |x| x.2);
            (*a, help, keys.as_slice())
        })
    }

    /// Replace the keys of the action named `name` (its config name).
    pub fn bind(&mut self, name: &str, keys: &[String]) -> Result<()> {
        let Some(&(action, ..)) = ACTIONS.iter().find(|x| x.1 == name) else {
            let names: Vec<_> = ACTIONS.iter().map(|x| x.1).collect();
            return Err(Error::Config {
                path: String::new(),
                msg: format!(
                    "keys.{name}: unknown action (actions: {})",
                    names.join(", ")
                ),
            });
        };
        let chords = keys
            .iter()
            .map(|k| {
                Chord::parse(k).map_err(|msg| Error::Key {
                    action: name.into(),
                    key: k.clone(),
                    msg,
                })
            })
            .collect::<Result<Vec<_>>>()?;
        for (a, ks) in &mut self.bindings {
            if *a == action {
                *ks = chords.clone();
            }
        }
        Ok(())
    }

    /// Refuse a key bound to two actions (or twice to one), naming both: a rebinding
    /// that takes a default key must also rebind the action that had it.
    pub fn check(&self) -> std::result::Result<(), String> {
        let name = |a: Action| ACTIONS.iter().find(|x| x.0 == a).map_or("?", |x| x.1);
        let mut seen: Vec<(Chord, Action)> = Vec::new();
        for (a, keys) in &self.bindings {
            for c in keys {
                if let Some((_, first)) = seen.iter().find(|(k, _)| k == c) {
                    return Err(if first == a {
                        format!("key `{c}` is bound twice to `{}`", name(*a))
                    } else {
                        format!(
                            "key `{c}` is bound to both `{}` and `{}`: give one of them other keys",
                            name(*first),
                            name(*a)
                        )
                    });
                }
                seen.push((*c, *a));
            }
        }
        Ok(())
    }

    /// The keys of `a` (empty when unbound).
    pub fn keys_of(&self, a: Action) -> &[Chord] {
        self.bindings
            .iter()
            .find(|(x, _)| *x == a)
            .map_or(&[], |(_, k)| k.as_slice())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_and_rebinding() {
        let mut m = KeyMap::default();
        let key = |c| KeyEvent::new(KeyCode::Char(c), KeyModifiers::NONE);
        assert_eq!(m.action(&key('q')), Some(Action::Quit));
        assert_eq!(
            m.action(&KeyEvent::new(KeyCode::Char('c'), KeyModifiers::CONTROL)),
            Some(Action::Quit)
        );
        assert_eq!(
            m.action(&KeyEvent::new(KeyCode::Char('G'), KeyModifiers::SHIFT)),
            Some(Action::End)
        );
        m.bind("freeze", &["z".into(), "x".into()]).unwrap();
        assert_eq!(m.action(&key('x')), Some(Action::Freeze));
        assert_eq!(m.action(&key(' ')), None);
        assert_eq!(m.check(), Ok(()));
        // a key bound to two actions is refused, naming both (it used to move silently)
        m.bind("freeze", &["z".into(), "q".into()]).unwrap();
        assert_eq!(
            m.check().unwrap_err(),
            "key `q` is bound to both `quit` and `freeze`: give one of them other keys"
        );
        m.bind("quit", &["ctrl-q".into()]).unwrap();
        assert_eq!(m.check(), Ok(()));
        assert_eq!(m.action(&key('q')), Some(Action::Freeze));
        m.bind("units", &["u".into(), "u".into()]).unwrap();
        assert_eq!(m.check().unwrap_err(), "key `u` is bound twice to `units`");
        let e = m
            .bind("freeze", &["ctrl-shift".into()])
            .unwrap_err()
            .to_string();
        assert!(
            e.starts_with("key binding `ctrl-shift` for `freeze`: expected one character"),
            "{e}"
        );
        assert!(
            m.bind("frezee", &[])
                .unwrap_err()
                .to_string()
                .contains("keys.frezee: unknown action")
        );
        assert_eq!(ACTIONS.len(), m.bindings().count());
    }

    #[test]
    fn the_defaults_bind_no_key_twice() {
        assert_eq!(KeyMap::default().check(), Ok(()));
    }
}
