//! The output-size check of `fabric routes export` and `fabric build`: before a byte goes
//! to disk, the export runs once into a counting sink that stops as soon as it passes
//! `--max-output` (default 2 GB), so a 100k-GPU `ip` export (about 10 GB) is refused with
//! its size instead of filling the disk without a word.
//!
//! The count is exact below the limit. Above it, counting stops at the limit (formatting
//! runs at hundreds of MB/s, so the check costs at most a few seconds), and the format it
//! stopped in is extrapolated from the switch files it finished.

use std::cell::Cell;
use std::collections::BTreeSet;
use std::io::{self, Write};
use std::rc::Rc;

use topo::Fabric;
use topo::export::{self, Format, Routed, Sink};

use crate::cmd_export::{Computed, human};

/// The default `--max-output`.
pub const DEFAULT_MAX_OUTPUT: &str = "2GB";

/// `--max-output`: the most bytes an export may write, or no limit.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MaxOutput(pub Option<u64>);

/// Parses `--max-output`: a size in decimal units (`500MB`, `20GB`, `1.5TB`, `1000000`)
/// or `none`.
pub fn parse_max_output(s: &str) -> Result<MaxOutput, String> {
    let t = s.trim();
    if t.eq_ignore_ascii_case("none") {
        return Ok(MaxOutput(None));
    }
    let bad =
        || format!("`{s}`: expected a size such as 500MB, 20GB or 1.5TB (decimal units), or none");
    let split = t
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(t.len());
    let (num, unit) = t.split_at(split);
    let mult: f64 = match unit.trim().to_ascii_lowercase().as_str() {
        "" | "b" => 1.0,
        "kb" | "k" => 1e3,
        "mb" | "m" => 1e6,
        "gb" | "g" => 1e9,
        "tb" | "t" => 1e12,
        _ => return Err(bad()),
    };
    let v: f64 = num.parse().map_err(|_| bad())?;
    let bytes = v * mult;
    if !(bytes.is_finite() && (1.0..=1e18).contains(&bytes)) {
        return Err(bad());
    }
    Ok(MaxOutput(Some(bytes as u64)))
}

/// The `--max-output` flag, shared by `fabric routes export` and `fabric build`.
#[derive(Debug, Clone, clap::Args)]
pub struct SizeArgs {
    /// Refuse to write more than this (500MB, 20GB, decimal units), or `none`. The
    /// export is counted before anything is written; above the limit nothing is written
    /// and the error gives the size.
    #[arg(
        long,
        value_name = "SIZE|none",
        default_value = DEFAULT_MAX_OUTPUT,
        value_parser = parse_max_output
    )]
    pub max_output: MaxOutput,
}

/// The per-switch directories of the routing formats (one file per switch).
const PER_SWITCH_DIRS: [&str; 5] = ["ip", "ip-nhg", "frr/bgp", "frr/static", "sonic"];

/// Where counting stopped, past the limit.
#[derive(Debug, Clone, PartialEq)]
pub struct Above {
    /// The limit.
    pub limit: u64,
    /// The directory (or file) being written when the limit was passed.
    pub at: String,
    /// For a per-switch directory: its whole size extrapolated from the switch files
    /// finished, with how many of how many.
    pub extrapolated: Option<(u64, usize, usize)>,
}

impl std::fmt::Display for Above {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let limit = human(self.limit);
        write!(
            f,
            "--max-output {limit}: the export would write more than {limit} (counting stopped in {}",
            self.at
        )?;
        match self.extrapolated {
            Some((bytes, done, of)) => {
                let gb = (bytes as f64 * 1.1 / 1e9).ceil().max(1.0);
                write!(
                    f,
                    ", which alone holds about {} by its first {done} of {of} switch files); \
                     pass --max-output {gb}GB or more, or --max-output none, to write it",
                    human(bytes)
                )
            }
            None => write!(
                f,
                "); pass a larger --max-output, or --max-output none, to write it"
            ),
        }
    }
}

/// Counts what exporting `formats` of `c` would write, stopping past `limit`: the exact
/// byte count when within it.
pub fn check(
    f: &Fabric,
    c: &Computed,
    formats: &BTreeSet<Format>,
    limit: MaxOutput,
) -> anyhow::Result<Option<u64>> {
    let Some(limit) = limit.0 else {
        return Ok(None);
    };
    let routed = Routed {
        fabric: f,
        addr: &c.addr,
        tables: c.tables(),
        lanes: Some(&c.lanes),
    };
    let list: Vec<Format> = formats.iter().copied().collect();
    let mut sink = LimitedCount::new(limit);
    match export::export_many(&routed, &list, &mut sink) {
        Ok(()) => Ok(Some(sink.total.get())),
        Err(_) if sink.total.get() > limit => Err(anyhow::Error::msg(sink.above(f.num_switches()))),
        Err(e) => Err(e.into()),
    }
}

/// A sink that counts bytes, per directory, and fails a write once the total passes the
/// limit.
struct LimitedCount {
    limit: u64,
    total: Rc<Cell<u64>>,
    /// The directory (or, for a top-level file, the file) of the file open last.
    at: String,
    /// Bytes and files finished in `at`.
    done_bytes: u64,
    done_files: usize,
}

impl LimitedCount {
    fn new(limit: u64) -> Self {
        Self {
            limit,
            total: Rc::default(),
            at: String::new(),
            done_bytes: 0,
            done_files: 0,
        }
    }

    fn above(&self, switches: usize) -> Above {
        let per_switch = PER_SWITCH_DIRS.contains(&self.at.as_str());
        Above {
            limit: self.limit,
            at: if per_switch {
                format!("{}/", self.at)
            } else {
                self.at.clone()
            },
            extrapolated: (per_switch && self.done_files > 0).then(|| {
                let per_file = self.done_bytes as f64 / self.done_files as f64;
                (
                    (per_file * switches as f64) as u64,
                    self.done_files,
                    switches,
                )
            }),
        }
    }
}

/// The writer of a [`LimitedCount`].
struct Limited {
    limit: u64,
    total: Rc<Cell<u64>>,
    bytes: u64,
}

impl Write for Limited {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let n = buf.len() as u64;
        self.bytes += n;
        self.total.set(self.total.get() + n);
        if self.total.get() > self.limit {
            return Err(io::Error::other("past --max-output"));
        }
        Ok(buf.len())
    }
    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

impl Sink for LimitedCount {
    type Writer = Limited;

    fn open(&mut self, path: &str) -> io::Result<Limited> {
        let at = match path.rsplit_once('/') {
            Some((dir, _)) => dir,
            None => path,
        };
        if at != self.at {
            self.at = at.to_string();
            self.done_bytes = 0;
            self.done_files = 0;
        }
        Ok(Limited {
            limit: self.limit,
            total: Rc::clone(&self.total),
            bytes: 0,
        })
    }

    fn finish(&mut self, _path: &str, w: Limited) -> io::Result<()> {
        self.done_bytes += w.bytes;
        self.done_files += 1;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cmd_export::Engine;

    #[test]
    fn sizes_parse_in_decimal_units_and_bad_ones_say_what_is_expected() {
        let ok = |s| parse_max_output(s).unwrap().0;
        assert_eq!(ok("2GB"), Some(2_000_000_000));
        assert_eq!(ok("500mb"), Some(500_000_000));
        assert_eq!(ok("1.5TB"), Some(1_500_000_000_000));
        assert_eq!(ok("1000"), Some(1000));
        assert_eq!(ok("none"), None);
        for bad in ["", "GB", "2XB", "-1GB", "0", "1e30"] {
            let e = parse_max_output(bad).unwrap_err();
            assert!(e.contains("expected a size such as 500MB"), "{bad}: {e}");
        }
    }

    fn k8() -> (Fabric, Computed, BTreeSet<Format>) {
        let f = crate::common::load_design("fat-tree-k8").unwrap();
        let c = Computed::new(&f, Engine::Ecmp, Default::default()).unwrap();
        (f, c, [Format::IpBatch].into_iter().collect())
    }

    /// Within the limit the count is the exact size the export writes.
    #[test]
    fn within_the_limit_the_count_is_exact() {
        let (f, c, formats) = k8();
        let n = check(&f, &c, &formats, MaxOutput(Some(1 << 40)))
            .unwrap()
            .unwrap();
        let mut sink = topo::export::CountingSink::default();
        let routed = Routed {
            fabric: &f,
            addr: &c.addr,
            tables: c.tables(),
            lanes: Some(&c.lanes),
        };
        export::export(&routed, Format::IpBatch, &mut sink).unwrap();
        assert_eq!(n, sink.bytes);
        assert_eq!(check(&f, &c, &formats, MaxOutput(None)).unwrap(), None);
    }

    /// Past the limit: refused, naming the limit, the directory, an extrapolated size
    /// within 25 % of the real one, and the flag.
    #[test]
    fn past_the_limit_it_is_refused_with_the_size_and_the_flag() {
        let (f, c, formats) = k8();
        let mut sink = topo::export::CountingSink::default();
        let routed = Routed {
            fabric: &f,
            addr: &c.addr,
            tables: c.tables(),
            lanes: Some(&c.lanes),
        };
        export::export(&routed, Format::IpBatch, &mut sink).unwrap();
        let limit = sink.bytes / 3;
        let e = check(&f, &c, &formats, MaxOutput(Some(limit))).unwrap_err();
        let msg = e.to_string();
        assert!(
            msg.starts_with(&format!("--max-output {}:", human(limit))),
            "{msg}"
        );
        assert!(msg.contains("counting stopped in ip/"), "{msg}");
        assert!(msg.contains("or --max-output none"), "{msg}");
        let mut count = LimitedCount::new(limit);
        assert!(export::export(&routed, Format::IpBatch, &mut count).is_err());
        let (est, done, of) = count.above(f.num_switches()).extrapolated.unwrap();
        assert_eq!(of, 80);
        assert!(done > 0 && done < of, "{done}");
        let ratio = est as f64 / sink.bytes as f64;
        assert!((0.75..=1.25).contains(&ratio), "{est} vs {}", sink.bytes);
    }
}
