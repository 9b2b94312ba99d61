//! Optional TOML config: theme, units and key bindings. Unknown fields and actions are
//! rejected with their name.
//!
//! ```toml
//! theme = "ansi16"        # full | ansi16 | none
//! units = "bytes"         # bits | bytes
//! [keys]
//! freeze = ["space", "z"] # action name = keys (see the help screen, `?`)
//! quit = ["q"]
//! ```

use crate::error::{Error, Result};
use crate::keys::KeyMap;
use crate::theme::Theme;
use crate::units::Units;
use serde::Deserialize;
use std::collections::BTreeMap;

/// The config file.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Config {
    /// Colour theme.
    pub theme: Option<Theme>,
    /// Rate units.
    pub units: Option<Units>,
    /// Action name → keys; replaces that action's default keys.
    #[serde(default)]
    pub keys: BTreeMap<String, Vec<String>>,
}

impl Config {
    /// Parse `text` (named `path` in errors).
    pub fn parse(text: &str, path: &str) -> Result<Config> {
        toml::from_str(text).map_err(|e| Error::Config {
            path: path.into(),
            msg: e.message().to_string() + &at(text, e.span()),
        })
    }

    /// Read and parse a file.
    pub fn load(path: &std::path::Path) -> Result<Config> {
        let p = path.display().to_string();
        let text = std::fs::read_to_string(path).map_err(|e| Error::Config {
            path: p.clone(),
            msg: e.to_string(),
        })?;
        Config::parse(&text, &p)
    }

    /// The default key map with this config's bindings applied.
    pub fn keymap(&self, path: &str) -> Result<KeyMap> {
        let mut m = KeyMap::default();
        for (action, keys) in &self.keys {
            m.bind(action, keys).map_err(|e| match e {
                Error::Config { msg, .. } => Error::Config {
                    path: path.into(),
                    msg,
                },
                Error::Key { action, key, msg } => Error::Config {
                    path: path.into(),
                    msg: format!("keys.{action}: `{key}`: {msg}"),
                },
                other => other,
            })?;
        }
        m.check().map_err(|msg| Error::Config {
            path: path.into(),
            msg: format!("[keys]: {msg}"),
        })?;
        Ok(m)
    }
}

fn at(text: &str, span: Option<std::ops::Range<usize>>) -> String {
    let Some(s) = span else { return String::new() };
    let upto = &text[..s.start.min(text.len())];
    let line = upto.matches('\n').count() + 1;
    let col = upto.len() - upto.rfind('\n').map_or(0, |i| i + 1) + 1;
    format!(" (line {line}, column {col})")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Action;
    use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};

    #[test]
    fn parses_and_rejects() {
        let c = Config::parse(
            "theme = \"ansi16\"\nunits = \"bytes\"\n[keys]\nfreeze = [\"z\"]\n",
            "c.toml",
        )
        .unwrap();
        assert_eq!(
            (c.theme, c.units),
            (Some(Theme::Ansi16), Some(Units::Bytes))
        );
        let m = c.keymap("c.toml").unwrap();
        assert_eq!(
            m.action(&KeyEvent::new(KeyCode::Char('z'), KeyModifiers::NONE)),
            Some(Action::Freeze)
        );

        let e = Config::parse("theme = \"full\"\ncolour = 1\n", "c.toml")
            .unwrap_err()
            .to_string();
        assert_eq!(
            e,
            "c.toml: unknown field `colour`, expected one of `theme`, `units`, `keys` (line 2, column 1)"
        );
        let e = Config::parse("theme = \"pink\"", "c.toml")
            .unwrap_err()
            .to_string();
        assert!(
            e.starts_with(
                "c.toml: unknown variant `pink`, expected one of `full`, `ansi16`, `none`"
            ),
            "{e}"
        );
        let c = Config::parse("[keys]\nfrezee = [\"z\"]", "c.toml").unwrap();
        let e = c.keymap("c.toml").unwrap_err().to_string();
        assert!(
            e.starts_with("c.toml: keys.frezee: unknown action (actions: quit, help,"),
            "{e}"
        );
        let c = Config::parse("[keys]\nfreeze = [\"q\"]", "c.toml").unwrap();
        assert_eq!(
            c.keymap("c.toml").unwrap_err().to_string(),
            "c.toml: [keys]: key `q` is bound to both `quit` and `freeze`: give one of them other keys"
        );
        let c = Config::parse("[keys]\nquit = [\"ctrl-\"]", "c.toml").unwrap();
        assert!(
            c.keymap("c.toml")
                .unwrap_err()
                .to_string()
                .starts_with("c.toml: keys.quit: `ctrl-`: expected")
        );
    }
}
