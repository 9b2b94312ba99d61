//! [`Frame`]: the unit of a stream and of a recording — newline-delimited JSON, one
//! frame per line, the [`Frame::Fabric`] frame first.
//!
//! A frame is an object with one key naming its type: `{"fabric": {…}}`,
//! `{"snapshot": {…}}`, `{"event": {…}}`. A line whose single key is a type this reader
//! does not know gives [`Error::UnknownFrame`], which a reader should skip (that is
//! the forward-compatibility rule for new frame types). Lines are capped
//! ([`DEFAULT_MAX_LINE`]) so a peer cannot make a reader allocate without bound.

use crate::{Error, Event, FabricInfo, Result, Snapshot};
use serde::{Deserialize, Serialize};
use std::io::BufRead;

/// Default cap on one line (frame), bytes: 256 MiB, several times the densest snapshot
/// of a 300k-link fabric (see `docs/telemetry.md`).
pub const DEFAULT_MAX_LINE: usize = 256 << 20;

/// One unit of a telemetry stream or recording.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[allow(clippy::large_enum_variant)]
pub enum Frame {
    /// The fabric map (first frame of every stream and recording).
    Fabric(FabricInfo),
    /// A snapshot.
    Snapshot(Snapshot),
    /// An event.
    Event(Event),
}

impl Frame {
    /// The frame as one JSON line, ending in `\n`.
    pub fn to_json_line(&self) -> String {
        let mut s = serde_json::to_string(self).expect("frames always serialize");
        s.push('\n');
        s
    }

    /// Parses one line (with or without its `\n`).
    pub fn from_json_line(line: &[u8]) -> Result<Frame> {
        let line = line.strip_suffix(b"\n").unwrap_or(line);
        let line = line.strip_suffix(b"\r").unwrap_or(line);
        serde_json::from_slice(line).map_err(|e| unknown_or(line, e))
    }

    /// Timestamp in ns of a snapshot or event (`None` for the fabric frame).
    pub fn time_ns(&self) -> Option<u64> {
        match self {
            Frame::Fabric(_) => None,
            Frame::Snapshot(s) => Some(s.time.ns),
            Frame::Event(e) => Some(e.time.ns),
        }
    }
}

/// Tells an unknown frame type (skippable) from a broken frame.
fn unknown_or(line: &[u8], e: serde_json::Error) -> Error {
    #[derive(Deserialize)]
    struct Probe(std::collections::BTreeMap<String, serde::de::IgnoredAny>);
    const KNOWN: [&str; 3] = ["fabric", "snapshot", "event"];
    if let Ok(Probe(m)) = serde_json::from_slice::<Probe>(line)
        && m.len() == 1
        && let Some(k) = m.keys().next()
        && !KNOWN.contains(&k.as_str())
    {
        return Error::UnknownFrame(k.chars().take(64).collect());
    }
    Error::Json(e.to_string())
}

/// Reads one line of at most `max` bytes (plus its `\n`) into `buf` (cleared first).
/// `Ok(false)` at a clean end of input; a last line without `\n` is [`Error::Truncated`].
pub fn read_line_capped(r: &mut impl BufRead, buf: &mut Vec<u8>, max: usize) -> Result<bool> {
    buf.clear();
    loop {
        let chunk = r.fill_buf()?;
        if chunk.is_empty() {
            return if buf.is_empty() {
                Ok(false)
            } else {
                Err(Error::Truncated { bytes: buf.len() })
            };
        }
        let (take, done) = match chunk.iter().position(|&b| b == b'\n') {
            Some(i) => (i + 1, true),
            None => (chunk.len(), false),
        };
        if buf.len() + take > max + 1 {
            return Err(Error::TooLong { max });
        }
        buf.extend_from_slice(&chunk[..take]);
        r.consume(take);
        if done {
            return Ok(true);
        }
    }
}

/// Reads the next frame from a newline-delimited stream (`None` at its end), skipping
/// blank lines and frames of unknown type.
pub fn read_frame(r: &mut impl BufRead, max_line: usize) -> Result<Option<Frame>> {
    let mut buf = Vec::new();
    loop {
        if !read_line_capped(r, &mut buf, max_line)? {
            return Ok(None);
        }
        if buf.iter().all(u8::is_ascii_whitespace) {
            continue;
        }
        match Frame::from_json_line(&buf) {
            Err(Error::UnknownFrame(_)) => continue,
            other => return other.map(Some),
        }
    }
}

/// A sans-IO line decoder for a stream arriving in chunks (HTTP body, socket): push
/// bytes in, pull frames out. Frames of unknown type are skipped.
#[derive(Debug)]
pub struct LineDecoder {
    buf: Vec<u8>,
    /// Start of the unparsed part of `buf`.
    start: usize,
    /// Length of the line being received (bytes after the last `\n`).
    partial: usize,
    max: usize,
}

impl LineDecoder {
    /// A decoder that rejects lines longer than `max_line` bytes.
    pub fn new(max_line: usize) -> Self {
        LineDecoder {
            buf: Vec::new(),
            start: 0,
            partial: 0,
            max: max_line,
        }
    }

    /// Appends received bytes. Fails once the line being received is longer than the cap.
    pub fn push(&mut self, bytes: &[u8]) -> Result<()> {
        if self.start > 0 {
            self.buf.drain(..self.start);
            self.start = 0;
        }
        self.partial = match bytes.iter().rposition(|&b| b == b'\n') {
            Some(i) => bytes.len() - i - 1,
            None => self.partial + bytes.len(),
        };
        if self.partial > self.max {
            return Err(Error::TooLong { max: self.max });
        }
        self.buf.extend_from_slice(bytes);
        Ok(())
    }

    /// The next complete frame, if one has arrived.
    pub fn next_frame(&mut self) -> Result<Option<Frame>> {
        loop {
            let rest = &self.buf[self.start..];
            let Some(nl) = rest.iter().position(|&b| b == b'\n') else {
                return Ok(None);
            };
            let line = &rest[..nl];
            self.start += nl + 1;
            if line.len() > self.max {
                return Err(Error::TooLong { max: self.max });
            }
            if line.iter().all(u8::is_ascii_whitespace) {
                continue;
            }
            match Frame::from_json_line(line) {
                Err(Error::UnknownFrame(_)) => continue,
                other => return other.map(Some),
            }
        }
    }

    /// Bytes received but not yet part of a complete line.
    pub fn pending(&self) -> usize {
        self.buf.len() - self.start
    }
}
