//! The recording format: a file of frames that a replay can seek by time.
//!
//! ```text
//! {"format":"fabric-telemetry-recording","schema_version":1}    header line
//! {"fabric":{…}}                                                 the fabric map
//! {"snapshot":{…}} / {"event":{…}} …                             frames in time order
//! {"index":{"snapshots":[[t_ns,seq,offset],…]}}                  written by finish()
//! {"index_at":                1234567}                           fixed 34-byte trailer
//! ```
//!
//! Every line is a JSON document, so `head`, `grep` and `jq` work on it; the frame lines
//! are exactly the lines of the live stream. The [`Writer`] writes frames as they come
//! (nothing is buffered beyond the `io::Write` it is given) and appends the index on
//! [`Writer::finish`]. A file without the index (the writer did not finish) is still
//! readable: [`Reader::open`] rebuilds the index in one scan. A truncated, corrupt or
//! foreign file is an error that says what and at which byte offset; lines are capped.

use crate::frame::read_line_capped;
use crate::{DEFAULT_MAX_LINE, Error, FabricInfo, Frame, Result, SCHEMA_VERSION};
use serde::{Deserialize, Serialize};
use std::io::{BufReader, Read, Seek, SeekFrom, Write};

/// Value of the header's `format` field.
pub const MAGIC: &str = "fabric-telemetry-recording";
/// Length of the trailer line (`{"index_at":` + 20 right-aligned digits + `}\n`).
pub const TRAILER_LEN: u64 = 34;
/// Read buffer, bytes (a busy 10k-link snapshot is ~280 KB: a few reads, not dozens).
const READ_BUF: usize = 1 << 16;
/// Cap on the header line, bytes.
const MAX_HEADER: usize = 4096;

#[derive(Serialize, Deserialize)]
struct Header {
    format: String,
    schema_version: u32,
}

/// Where one snapshot starts in the file.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct IndexEntry {
    /// Snapshot time, ns.
    pub t_ns: u64,
    /// Snapshot sequence number.
    pub seq: u64,
    /// Byte offset of its line.
    pub offset: u64,
}

#[derive(Serialize, Deserialize)]
struct IndexBody {
    snapshots: Vec<(u64, u64, u64)>,
}

#[derive(Serialize, Deserialize)]
struct IndexLine {
    index: IndexBody,
}

#[derive(Serialize, Deserialize)]
struct Trailer {
    index_at: u64,
}

/// Writes a recording incrementally.
#[derive(Debug)]
pub struct Writer<W: Write> {
    w: W,
    info: FabricInfo,
    offset: u64,
    last_ns: u64,
    index: Vec<IndexEntry>,
}

impl<W: Write> Writer<W> {
    /// Writes the header and the fabric map.
    pub fn new(mut w: W, info: &FabricInfo) -> Result<Self> {
        info.validate()?;
        let header = Header {
            format: MAGIC.into(),
            schema_version: SCHEMA_VERSION,
        };
        let mut line = serde_json::to_string(&header).expect("header serializes");
        line.push('\n');
        let fabric = Frame::Fabric(info.clone()).to_json_line();
        w.write_all(line.as_bytes())?;
        w.write_all(fabric.as_bytes())?;
        Ok(Writer {
            w,
            info: info.clone(),
            offset: (line.len() + fabric.len()) as u64,
            last_ns: 0,
            index: Vec::new(),
        })
    }

    /// Appends a snapshot or an event; frames must come in time order, and a snapshot
    /// must match the fabric map.
    pub fn write(&mut self, frame: &Frame) -> Result<()> {
        let t = match frame {
            Frame::Fabric(_) => {
                return Err(Error::Invalid {
                    what: "recording frame".into(),
                    msg: "the fabric map is written once, by Writer::new".into(),
                });
            }
            Frame::Snapshot(s) => {
                s.validate(&self.info)?;
                s.time.ns
            }
            Frame::Event(e) => e.time.ns,
        };
        if t < self.last_ns {
            return Err(Error::OutOfOrder {
                prev_ns: self.last_ns,
                ns: t,
            });
        }
        let line = frame.to_json_line();
        self.w.write_all(line.as_bytes())?;
        if let Frame::Snapshot(s) = frame {
            self.index.push(IndexEntry {
                t_ns: t,
                seq: s.seq,
                offset: self.offset,
            });
        }
        self.last_ns = t;
        self.offset += line.len() as u64;
        Ok(())
    }

    /// Bytes written so far.
    pub fn bytes_written(&self) -> u64 {
        self.offset
    }

    /// Flushes the underlying writer (a reader can then scan what was written).
    pub fn flush(&mut self) -> Result<()> {
        Ok(self.w.flush()?)
    }

    /// Appends the index and the trailer, flushes, and returns the writer.
    pub fn finish(mut self) -> Result<W> {
        let body = IndexBody {
            snapshots: self
                .index
                .iter()
                .map(|e| (e.t_ns, e.seq, e.offset))
                .collect(),
        };
        let mut line = serde_json::to_string(&IndexLine { index: body }).expect("index serializes");
        line.push('\n');
        self.w.write_all(line.as_bytes())?;
        writeln!(self.w, "{{\"index_at\":{:>20}}}", self.offset)?;
        self.w.flush()?;
        Ok(self.w)
    }
}

/// Reads a recording: the fabric map, frames in order, and seeks by time.
#[derive(Debug)]
pub struct Reader<R: Read + Seek> {
    r: BufReader<R>,
    fabric: FabricInfo,
    index: Vec<IndexEntry>,
    data_start: u64,
    data_end: u64,
    pos: u64,
    last_ns: u64,
    max_line: usize,
    line: Vec<u8>,
}

impl<R: Read + Seek> Reader<R> {
    /// Opens a recording with the default line cap.
    pub fn open(r: R) -> Result<Self> {
        Self::open_with_cap(r, DEFAULT_MAX_LINE)
    }

    /// Opens a recording, rejecting lines longer than `max_line` bytes. Loads the index
    /// from the trailer, or rebuilds it by scanning every frame when there is none.
    pub fn open_with_cap(r: R, max_line: usize) -> Result<Self> {
        let mut rd = Reader {
            r: BufReader::with_capacity(READ_BUF, r),
            fabric: FabricInfo::default(),
            index: Vec::new(),
            data_start: 0,
            data_end: 0,
            pos: 0,
            last_ns: 0,
            max_line,
            line: Vec::new(),
        };
        rd.read_header()?;
        let len = rd.r.seek(SeekFrom::End(0))?;
        match rd.read_trailer(len)? {
            Some(at) => rd.load_index(at)?,
            None => rd.scan(len)?,
        }
        rd.seek_to(rd.data_start)?;
        Ok(rd)
    }

    fn read_header(&mut self) -> Result<()> {
        let foreign = |msg: String| Error::Foreign(msg);
        match read_line_capped(&mut self.r, &mut self.line, MAX_HEADER) {
            Ok(true) => {}
            Ok(false) => return Err(foreign("the file is empty".into())),
            Err(Error::TooLong { .. } | Error::Truncated { .. }) => {
                return Err(foreign(format!(
                    "no header line within the first {MAX_HEADER} bytes"
                )));
            }
            Err(e) => return Err(e),
        }
        let h: Header = serde_json::from_slice(&self.line)
            .map_err(|e| foreign(format!("the first line is not a recording header ({e})")))?;
        if h.format != MAGIC {
            return Err(foreign(format!(
                "format is {:?}, expected {MAGIC:?}",
                h.format
            )));
        }
        if h.schema_version > SCHEMA_VERSION {
            return Err(Error::Version {
                found: h.schema_version,
                supported: SCHEMA_VERSION,
            });
        }
        let mut pos = self.line.len() as u64;
        if !read_line_capped(&mut self.r, &mut self.line, self.max_line)? {
            return Err(corrupt(
                pos,
                "the file ends after its header (no fabric map)",
            ));
        }
        match Frame::from_json_line(&self.line) {
            Ok(Frame::Fabric(f)) => {
                f.validate().map_err(|e| corrupt(pos, &e.to_string()))?;
                self.fabric = f;
            }
            Ok(_) => return Err(corrupt(pos, "the second line is not the fabric map")),
            Err(e) => return Err(corrupt(pos, &format!("fabric map: {e}"))),
        }
        pos += self.line.len() as u64;
        self.data_start = pos;
        Ok(())
    }

    /// The index offset from the trailer, if the file ends with one.
    fn read_trailer(&mut self, len: u64) -> Result<Option<u64>> {
        if len < self.data_start + TRAILER_LEN {
            return Ok(None);
        }
        self.r.seek(SeekFrom::Start(len - TRAILER_LEN))?;
        let mut buf = [0u8; TRAILER_LEN as usize];
        self.r.read_exact(&mut buf)?;
        if !buf.starts_with(b"{\"index_at\":") || buf[buf.len() - 1] != b'\n' {
            return Ok(None);
        }
        let t: Trailer = serde_json::from_slice(&buf)
            .map_err(|e| corrupt(len - TRAILER_LEN, &format!("trailer: {e}")))?;
        if t.index_at < self.data_start || t.index_at > len - TRAILER_LEN {
            return Err(corrupt(
                len - TRAILER_LEN,
                &format!("index offset {} outside the data", t.index_at),
            ));
        }
        Ok(Some(t.index_at))
    }

    fn load_index(&mut self, at: u64) -> Result<()> {
        self.r.seek(SeekFrom::Start(at))?;
        if !read_line_capped(&mut self.r, &mut self.line, self.max_line)? {
            return Err(corrupt(at, "index line missing"));
        }
        let idx: IndexLine =
            serde_json::from_slice(&self.line).map_err(|e| corrupt(at, &format!("index: {e}")))?;
        let mut prev = (0, self.data_start);
        for (i, &(t_ns, seq, offset)) in idx.index.snapshots.iter().enumerate() {
            if offset < prev.1 || offset >= at || t_ns < prev.0 {
                return Err(corrupt(
                    at,
                    &format!("index entry {i} out of order or outside the data"),
                ));
            }
            prev = (t_ns, offset + 1);
            self.index.push(IndexEntry { t_ns, seq, offset });
        }
        self.data_end = at;
        Ok(())
    }

    fn scan(&mut self, len: u64) -> Result<()> {
        self.data_end = len;
        self.seek_to(self.data_start)?;
        while let Some((offset, frame)) = self.next_with_offset()? {
            if let Frame::Snapshot(s) = frame {
                self.index.push(IndexEntry {
                    t_ns: s.time.ns,
                    seq: s.seq,
                    offset,
                });
            }
        }
        Ok(())
    }

    fn seek_to(&mut self, pos: u64) -> Result<()> {
        self.r.seek(SeekFrom::Start(pos))?;
        self.pos = pos;
        self.last_ns = 0;
        Ok(())
    }

    /// The fabric map.
    pub fn fabric(&self) -> &FabricInfo {
        &self.fabric
    }

    /// Every snapshot's time, sequence number and offset, in order.
    pub fn index(&self) -> &[IndexEntry] {
        &self.index
    }

    /// Positions the reader at the last snapshot taken at or before `t_ns` (at the first
    /// frame if there is none), so the next frames rebuild the state at `t_ns`. Returns
    /// the snapshot's index entry.
    pub fn seek_time(&mut self, t_ns: u64) -> Result<Option<IndexEntry>> {
        let k = self.index.partition_point(|e| e.t_ns <= t_ns);
        let entry = k.checked_sub(1).map(|k| self.index[k]);
        self.seek_to(entry.map_or(self.data_start, |e| e.offset))?;
        Ok(entry)
    }

    /// Back to the first frame after the fabric map.
    pub fn rewind(&mut self) -> Result<()> {
        self.seek_to(self.data_start)
    }

    /// The next snapshot or event, `None` at the end of the data.
    pub fn next_frame(&mut self) -> Result<Option<Frame>> {
        Ok(self.next_with_offset()?.map(|(_, f)| f))
    }

    fn next_with_offset(&mut self) -> Result<Option<(u64, Frame)>> {
        loop {
            if self.pos >= self.data_end {
                return Ok(None);
            }
            let at = self.pos;
            let got = read_line_capped(&mut self.r, &mut self.line, self.max_line)
                .map_err(|e| corrupt(at, &e.to_string()))?;
            if !got {
                return Err(corrupt(at, "the file ends before the index says"));
            }
            self.pos += self.line.len() as u64;
            if self.pos > self.data_end {
                return Err(corrupt(at, "a frame runs into the index"));
            }
            let frame = match Frame::from_json_line(&self.line) {
                Err(Error::UnknownFrame(_)) => continue,
                Err(e) => return Err(corrupt(at, &e.to_string())),
                Ok(f) => f,
            };
            self.check(at, &frame)?;
            return Ok(Some((at, frame)));
        }
    }

    fn check(&mut self, at: u64, frame: &Frame) -> Result<()> {
        let t = match frame {
            Frame::Fabric(_) => return Err(corrupt(at, "a second fabric map")),
            Frame::Snapshot(s) => {
                s.validate(&self.fabric)
                    .map_err(|e| corrupt(at, &e.to_string()))?;
                s.time.ns
            }
            Frame::Event(e) => e.time.ns,
        };
        if t < self.last_ns {
            return Err(corrupt(
                at,
                &format!("time goes back from {} ns to {t} ns", self.last_ns),
            ));
        }
        self.last_ns = t;
        Ok(())
    }

    /// Every remaining frame (convenience for tests and small recordings).
    pub fn read_all(&mut self) -> Result<Vec<Frame>> {
        let mut out = Vec::new();
        while let Some(f) = self.next_frame()? {
            out.push(f);
        }
        Ok(out)
    }
}

fn corrupt(offset: u64, msg: &str) -> Error {
    Error::Corrupt {
        offset,
        msg: msg.to_string(),
    }
}
