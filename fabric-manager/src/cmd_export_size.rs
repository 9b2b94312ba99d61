//! The output-size check of `fabric routes export` and `fabric build`: before a byte goes
//! to disk, the export runs once into a counting sink that stops as soon as it passes
//! `--max-output` (default 2 GB), so a 100k-GPU `ip` export (about 10 GB) is refused with
//! its size instead of filling the disk without a word.
//!
//! The count is exact below the limit. Above it, counting stops at the limit (formatting
//! runs at hundreds of MB/s, so the check costs at most a few seconds), and the format it
//! stopped in is extrapolated from the switch files it finished, weighted by each switch's
//! share of the routes and next hops (the first files are leaves, the largest ones).

use std::cell::Cell;
use std::collections::{BTreeSet, HashSet};
use std::io::{self, Write};
use std::rc::Rc;

use topo::export::{self, Format, Routed, Sink};
use topo::{Fabric, NodeId};

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
        Err(_) if sink.total.get() > limit => Err(anyhow::Error::msg(sink.above(&routed))),
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
    /// Bytes finished in `at`, and the names of those files (without directory and
    /// extension: the switch names of a per-switch directory).
    done_bytes: u64,
    done_files: Vec<String>,
}

impl LimitedCount {
    fn new(limit: u64) -> Self {
        Self {
            limit,
            total: Rc::default(),
            at: String::new(),
            done_bytes: 0,
            done_files: Vec::new(),
        }
    }

    /// Where counting stopped; a per-switch directory's size extrapolated from the files
    /// finished by the switches' [`weight`]s.
    fn above(&self, r: &Routed<'_>) -> Above {
        let per_switch = PER_SWITCH_DIRS.contains(&self.at.as_str());
        let mut above = Above {
            limit: self.limit,
            at: self.at.clone(),
            extrapolated: None,
        };
        if !per_switch {
            return above;
        }
        above.at.push('/');
        let f = r.fabric;
        let done: HashSet<&str> = self.done_files.iter().map(String::as_str).collect();
        let (mut done_weight, mut total_weight) = (0u64, 0u64);
        for s in f.switches() {
            let w = weight(r, &self.at, s);
            total_weight += w;
            if done.contains(f.node_name(s)) {
                done_weight += w;
            }
        }
        if done_weight > 0 {
            let bytes = self.done_bytes as f64 * total_weight as f64 / done_weight as f64;
            above.extrapolated = Some((bytes as u64, done.len(), f.num_switches()));
        }
        above
    }
}

/// What the size of switch `s`'s file in per-switch directory `dir` grows with: routes
/// and next hops for the formats that write every next hop of every route (`ip`,
/// `frr/static`, `sonic`); routes and ports for `ip-nhg` (each group written once); ports
/// for `frr/bgp` (one neighbour each). ECMP tables are read from the switch's row (a
/// k=64 fat-tree's 5,120 rows in milliseconds); single-path tables give every switch one
/// single-hop route per host of its plane, so every switch weighs the same.
fn weight(r: &Routed<'_>, dir: &str, s: NodeId) -> u64 {
    use topo::routing::{LOCAL, NO_ROUTE};
    let ports = r.fabric.degree(s) as u64;
    if dir == "frr/bgp" {
        return ports;
    }
    let (mut routes, mut hops) = (0u64, 0u64);
    match r.tables {
        export::Tables::Ecmp(t) => {
            for &g in t.row_entries(s) {
                match g {
                    NO_ROUTE => {}
                    LOCAL => (routes, hops) = (routes + 1, hops + 1),
                    g => (routes, hops) = (routes + 1, hops + t.groups().get(g).len() as u64),
                }
            }
        }
        // One single-hop route per host of the plane on every switch: the same size.
        export::Tables::SinglePath(..) => return 1,
    }
    if dir == "ip-nhg" {
        routes + ports
    } else {
        routes + hops
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
            self.done_files.clear();
        }
        Ok(Limited {
            limit: self.limit,
            total: Rc::clone(&self.total),
            bytes: 0,
        })
    }

    fn finish(&mut self, path: &str, w: Limited) -> io::Result<()> {
        self.done_bytes += w.bytes;
        let name = path.rsplit_once('/').map_or(path, |(_, n)| n);
        let stem = name.rsplit_once('.').map_or(name, |(s, _)| s);
        self.done_files.push(stem.to_string());
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

    fn routed(preset: &str) -> (Fabric, Computed, BTreeSet<Format>) {
        let f = crate::common::load_design(preset).unwrap();
        let c = Computed::new(&f, Engine::Ecmp, Default::default()).unwrap();
        (f, c, [Format::IpBatch].into_iter().collect())
    }

    /// Within the limit the count is the exact size the export writes.
    #[test]
    fn within_the_limit_the_count_is_exact() {
        let (f, c, formats) = routed("fat-tree-k8");
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
    /// within 10 % of the real one (from leaves only: the limit is passed before the
    /// first spine), and the flag.
    #[test]
    fn past_the_limit_it_is_refused_with_the_size_and_the_flag() {
        let (f, c, formats) = routed("fat-tree-k16");
        let mut sink = topo::export::CountingSink::default();
        let routed = Routed {
            fabric: &f,
            addr: &c.addr,
            tables: c.tables(),
            lanes: Some(&c.lanes),
        };
        export::export(&routed, Format::IpBatch, &mut sink).unwrap();
        let limit = sink.bytes / 8;
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
        let (est, done, of) = count.above(&routed).extrapolated.unwrap();
        assert_eq!(of, 320);
        assert!(done > 0 && done < of, "{done}");
        let ratio = est as f64 / sink.bytes as f64;
        assert!((0.9..=1.1).contains(&ratio), "{est} vs {}", sink.bytes);
        assert!(count.done_files.iter().all(|n| n.contains("leaf")));
    }
}
