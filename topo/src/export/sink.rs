//! Where exported files go: a [`Sink`] opens one named output at a time.
//!
//! The exporters in this module never touch the file system themselves (the
//! crate stays pure): they ask a sink for a writer by relative path, stream
//! into it and [`Sink::finish`] it. `fabric-manager` supplies a directory sink
//! (a `BufWriter<File>` per output); tests use [`MemSink`].

use std::collections::BTreeMap;
use std::io::{self, Write};

/// A destination for exported files, addressed by relative path (`ip/leaf-0-0.batch`).
pub trait Sink {
    /// The writer handed out for one file.
    type Writer: Write;
    /// Opens (creates or truncates) the output `path` (relative, `/`-separated).
    fn open(&mut self, path: &str) -> io::Result<Self::Writer>;
    /// Flushes and closes a writer opened by [`Sink::open`], reporting write errors.
    fn finish(&mut self, path: &str, writer: Self::Writer) -> io::Result<()>;
}

/// An in-memory sink: every file becomes a `Vec<u8>`, keyed by its path.
/// For tests and small fabrics only; large exports go to a directory sink.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct MemSink {
    /// Files written so far, path → contents.
    pub files: BTreeMap<String, Vec<u8>>,
}

impl MemSink {
    /// An empty sink.
    pub fn new() -> Self {
        Self::default()
    }

    /// The contents of `path` as UTF-8 text, if such a file was written.
    pub fn text(&self, path: &str) -> Option<&str> {
        self.files
            .get(path)
            .and_then(|b| std::str::from_utf8(b).ok())
    }
}

impl Sink for MemSink {
    type Writer = Vec<u8>;

    fn open(&mut self, _path: &str) -> io::Result<Vec<u8>> {
        Ok(Vec::new())
    }

    fn finish(&mut self, path: &str, writer: Vec<u8>) -> io::Result<()> {
        self.files.insert(path.to_owned(), writer);
        Ok(())
    }
}

/// A sink that counts bytes and throws them away: measures exporter speed
/// without the file system (see the `export_bench` benchmark).
#[derive(Debug, Default, Clone, Copy)]
pub struct CountingSink {
    /// Files opened.
    pub files: u64,
    /// Bytes written over all files.
    pub bytes: u64,
}

/// The writer of a [`CountingSink`].
#[derive(Debug, Default)]
pub struct Counter {
    bytes: u64,
}

impl Write for Counter {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.bytes += buf.len() as u64;
        Ok(buf.len())
    }
    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

impl Sink for CountingSink {
    type Writer = Counter;

    fn open(&mut self, _path: &str) -> io::Result<Counter> {
        self.files += 1;
        Ok(Counter::default())
    }

    fn finish(&mut self, _path: &str, writer: Counter) -> io::Result<()> {
        self.bytes += writer.bytes;
        Ok(())
    }
}

/// Opens `path` on `sink`, runs `body` on the writer and finishes it.
pub(crate) fn with_file<S: Sink>(
    sink: &mut S,
    path: &str,
    body: impl FnOnce(&mut S::Writer) -> Result<(), super::ExportError>,
) -> Result<(), super::ExportError> {
    let mut w = sink.open(path)?;
    body(&mut w)?;
    Ok(sink.finish(path, w)?)
}
