//! JSON helpers for the JSON-based exports (`routes.json`, SONiC, DOT names):
//! string escaping per RFC 8259 §7. The `routes.json` writer itself is in
//! `formats.rs`; its schema (`fabric-routes/v1`) is documented in `docs/exports.md`.

use std::io::{self, Write};

/// Writes `s` as a JSON string literal (RFC 8259 §7: `"`, `\` and control
/// characters escaped).
pub fn write_str<W: Write>(w: &mut W, s: &str) -> io::Result<()> {
    w.write_all(b"\"")?;
    let bytes = s.as_bytes();
    let mut start = 0;
    for (i, &b) in bytes.iter().enumerate() {
        let esc: Option<&[u8]> = match b {
            b'"' => Some(b"\\\""),
            b'\\' => Some(b"\\\\"),
            b'\n' => Some(b"\\n"),
            b'\r' => Some(b"\\r"),
            b'\t' => Some(b"\\t"),
            0..=0x1f => None,
            _ => continue,
        };
        w.write_all(&bytes[start..i])?;
        match esc {
            Some(e) => w.write_all(e)?,
            None => write!(w, "\\u{b:04x}")?,
        }
        start = i + 1;
    }
    w.write_all(&bytes[start..])?;
    w.write_all(b"\"")
}
