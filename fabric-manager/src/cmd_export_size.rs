//! The output-size check of `fabric routes export` and `fabric build`: before a byte goes
//! to disk, the export is sized, so a 100k-GPU `ip` export (tens of GB) is refused with
//! its size under `--max-output` (default 2 GB) instead of filling the disk without a word.
//!
//! Two steps, both into counting sinks that throw the bytes away:
//! 1. *Sample*: each format is counted up to [`SAMPLE_BYTES`]. A format that ends within
//!    it is known exactly; a per-switch format that does not is extrapolated from the
//!    switch files it finished, weighted by each switch's routes and next hops (the first
//!    files are leaves, the largest ones; within 10 % at k=16 and 2 % at k=32). When the
//!    sum is clearly within the limit (≤ 80 %) the export goes ahead; clearly above
//!    (≥ 125 %) it is refused with the estimate and a `--max-output` 10 % above it.
//!    A single-file format such as `routes.json` larger than the sample cannot be
//!    extrapolated; when what could be sized, plus the sample of each such file, is
//!    already clearly above the limit, the export is refused on that lower bound (a
//!    k=48 `fabric build` was refused after 70 s of counting 31 GB before).
//! 2. Otherwise (near the limit, or a single-file format larger than the sample) the
//!    whole export is counted to its end: a refusal names the exact size in bytes, and
//!    that size given back as `--max-output` is accepted.

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

/// How much of each format [`check`] counts before extrapolating.
pub const SAMPLE_BYTES: u64 = 32_000_000;

/// Sizes the export of `formats` of `c` against `limit` (see the module header): the
/// size, exact or estimated, when it may be written; the error (naming the size, the
/// limit and the flag) when not; `None` without a limit.
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
    let budget = SAMPLE_BYTES.min(limit);
    let sampled = sample(&routed, formats, budget)?;
    if let Some(total) = sampled.total() {
        if total <= limit / 5 * 4 {
            return Ok(Some(total));
        }
        if total / 5 * 4 >= limit {
            anyhow::bail!("{}", sampled.refusal(limit));
        }
    } else if sampled.lower_bound(budget) / 5 * 4 >= limit {
        anyhow::bail!("{}", sampled.refusal_at_least(limit, budget));
    }
    let list: Vec<Format> = formats.iter().copied().collect();
    let mut count = export::CountingSink::default();
    export::export_many(&routed, &list, &mut count)?;
    if count.bytes <= limit {
        return Ok(Some(count.bytes));
    }
    anyhow::bail!(
        "--max-output {}: the export would write {} bytes ({}, counted in full); pass \
         --max-output {} or more, or --max-output none, to write it",
        human(limit),
        count.bytes,
        human(count.bytes),
        count.bytes
    )
}

/// A `--max-output` value 10 % above `bytes`, in whole GB.
fn suggest(bytes: u64) -> String {
    format!("{}GB", (bytes as f64 * 1.1 / 1e9).ceil().max(1.0))
}

/// Each format counted up to a budget.
#[derive(Debug, Default)]
struct Sampled {
    /// Bytes of the formats that ended within the budget.
    exact: u64,
    /// Per-switch formats past the budget: the format and its extrapolation.
    estimated: Vec<(Format, (u64, usize, usize))>,
    /// Formats past the budget that cannot be extrapolated (one file each).
    unknown: Vec<Format>,
}

impl Sampled {
    /// The formats that could be sized, exact or estimated.
    fn sized(&self) -> u64 {
        self.exact + self.estimated.iter().map(|(_, e)| e.0).sum::<u64>()
    }

    /// The whole export's size, exact or estimated, if every format could be sized.
    fn total(&self) -> Option<u64> {
        self.unknown.is_empty().then(|| self.sized())
    }

    /// The least the export can write when some formats could not be sized: what could,
    /// plus the `budget` each unsized one passed.
    fn lower_bound(&self, budget: u64) -> u64 {
        self.sized() + budget * self.unknown.len() as u64
    }

    /// The parts of a refusal: each extrapolated format with its estimate.
    fn estimated_parts(&self) -> Vec<String> {
        self.estimated
            .iter()
            .map(|(fmt, (bytes, done, of))| {
                format!(
                    "{fmt}: about {}, extrapolated from its first {done} of {of} switch files",
                    human(*bytes)
                )
            })
            .collect()
    }

    /// The refusal of an export whose [lower bound](Self::lower_bound) is well above
    /// `limit`: what it writes at least, the single files that were not sized, and how to
    /// have it counted exactly or written.
    fn refusal_at_least(&self, limit: u64, budget: u64) -> String {
        let mut parts = self.estimated_parts();
        for fmt in &self.unknown {
            let name = match fmt.single_file() {
                Some(file) => format!("{fmt} ({file})"),
                None => fmt.to_string(),
            };
            parts.push(format!(
                "{name}: more than {}, one file, sized only by formatting it in full",
                human(budget)
            ));
        }
        let lower = self.lower_bound(budget);
        format!(
            "--max-output {}: the export would write more than {} ({}); pass --max-output \
             none to write it, or --max-output {} or more to have it counted exactly first",
            human(limit),
            human(lower),
            parts.join("; "),
            suggest(lower)
        )
    }

    /// The refusal of an export estimated well above `limit`.
    fn refusal(&self, limit: u64) -> String {
        let total = self.total().unwrap_or(0);
        let parts = self.estimated_parts();
        format!(
            "--max-output {}: the export would write about {} ({}); pass --max-output {} \
             or more, or --max-output none, to write it",
            human(limit),
            human(total),
            parts.join("; "),
            suggest(total)
        )
    }
}

/// Counts every format of `formats` alone, up to `budget` bytes each.
fn sample(r: &Routed<'_>, formats: &BTreeSet<Format>, budget: u64) -> anyhow::Result<Sampled> {
    let mut s = Sampled::default();
    for &fmt in formats {
        let mut sink = LimitedCount::new(budget);
        match export::export(r, fmt, &mut sink) {
            Ok(()) => s.exact += sink.total.get(),
            Err(_) if sink.total.get() > budget => match sink.extrapolate(r) {
                Some(e) => s.estimated.push((fmt, e)),
                None => s.unknown.push(fmt),
            },
            Err(e) => return Err(e.into()),
        }
    }
    Ok(s)
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

    /// Past the budget in a per-switch directory: its whole size extrapolated from the
    /// files finished by the switches' [`weight`]s, with how many files of how many; `None`
    /// in a single file, or before the first file of the directory was finished.
    fn extrapolate(&self, r: &Routed<'_>) -> Option<(u64, usize, usize)> {
        if !PER_SWITCH_DIRS.contains(&self.at.as_str()) {
            return None;
        }
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
        (done_weight > 0).then(|| {
            let bytes = self.done_bytes as f64 * total_weight as f64 / done_weight as f64;
            (bytes as u64, done.len(), f.num_switches())
        })
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

    /// What the exporters read of a computed design.
    fn view<'a>(f: &'a Fabric, c: &'a Computed) -> Routed<'a> {
        Routed {
            fabric: f,
            addr: &c.addr,
            tables: c.tables(),
            lanes: Some(&c.lanes),
        }
    }

    /// The bytes the `ip` format writes, counted by the exporter itself.
    fn ip_bytes(f: &Fabric, c: &Computed) -> u64 {
        let mut sink = topo::export::CountingSink::default();
        export::export(&view(f, c), Format::IpBatch, &mut sink).unwrap();
        sink.bytes
    }

    /// Within the limit the count is the exact size the export writes.
    #[test]
    fn within_the_limit_the_count_is_exact() {
        let (f, c, formats) = routed("fat-tree-k8");
        let n = check(&f, &c, &formats, MaxOutput(Some(1 << 40)))
            .unwrap()
            .unwrap();
        let written = ip_bytes(&f, &c);
        assert_eq!(n, written);
        assert_eq!(check(&f, &c, &formats, MaxOutput(None)).unwrap(), None);
        // At the limit: exact, written.
        let at = check(&f, &c, &formats, MaxOutput(Some(written))).unwrap();
        assert_eq!(at, Some(written));
        // One byte under: the estimate is near the limit, so the whole export is
        // counted, and refused with its exact size.
        let e = check(&f, &c, &formats, MaxOutput(Some(written - 1)))
            .unwrap_err()
            .to_string();
        assert!(
            e.contains(&format!(
                "would write {written} bytes ({}, counted in full); pass --max-output {written} or more",
                human(written)
            )),
            "{e}"
        );
    }

    /// A single file larger than the sample cannot be extrapolated: counted to its end,
    /// and the refusal names its exact size, which is then accepted.
    #[test]
    fn a_single_file_past_the_limit_is_counted_to_its_end() {
        let (f, c, _) = routed("fat-tree-k8");
        let json: BTreeSet<Format> = [Format::Json].into_iter().collect();
        let mut sink = topo::export::CountingSink::default();
        export::export(&view(&f, &c), Format::Json, &mut sink).unwrap();
        let size = sink.bytes;
        assert!(size > 500_000, "{size}");
        let e = check(&f, &c, &json, MaxOutput(Some(500_000)))
            .unwrap_err()
            .to_string();
        assert_eq!(
            e,
            format!(
                "--max-output 500.0 kB: the export would write {size} bytes ({}, counted in full); pass --max-output {size} or more, or --max-output none, to write it",
                human(size)
            )
        );
        let named = parse_max_output(&size.to_string()).unwrap();
        assert_eq!(check(&f, &c, &json, named).unwrap(), Some(size));
    }

    /// A single file past the sample beside a per-switch format well past the limit: the
    /// lower bound (the estimate plus the sample of the file) is enough to refuse, without
    /// counting the file in full; the refusal says which file was not sized.
    #[test]
    fn well_past_the_limit_a_single_file_is_not_counted_in_full() {
        let (f, c, _) = routed("fat-tree-k16");
        let limit = ip_bytes(&f, &c) / 8;
        let mut sink = topo::export::CountingSink::default();
        export::export(&view(&f, &c), Format::Json, &mut sink).unwrap();
        assert!(
            sink.bytes > limit,
            "routes.json {} within {limit}",
            sink.bytes
        );
        let both: BTreeSet<Format> = [Format::Json, Format::IpBatch].into_iter().collect();
        let msg = check(&f, &c, &both, MaxOutput(Some(limit)))
            .unwrap_err()
            .to_string();
        assert!(
            msg.starts_with(&format!(
                "--max-output {}: the export would write more than ",
                human(limit)
            )),
            "{msg}"
        );
        assert!(msg.contains("(ip: about "), "{msg}");
        assert!(
            msg.contains(&format!(
                "json (routes.json): more than {}, one file, sized only by formatting it in full",
                human(limit)
            )),
            "{msg}"
        );
        assert!(
            msg.contains("or more to have it counted exactly first"),
            "{msg}"
        );
        assert!(!msg.contains("counted in full)"), "{msg}");
    }

    /// Well past the limit: refused from the sample, naming the limit, the format, an
    /// extrapolated size within 10 % of the real one (from leaves only: the sample ends
    /// before the first spine), and the flag.
    #[test]
    fn past_the_limit_it_is_refused_with_the_size_and_the_flag() {
        let (f, c, formats) = routed("fat-tree-k16");
        let written = ip_bytes(&f, &c);
        let limit = written / 8;
        let e = check(&f, &c, &formats, MaxOutput(Some(limit))).unwrap_err();
        let msg = e.to_string();
        assert!(
            msg.starts_with(&format!(
                "--max-output {}: the export would write about",
                human(limit)
            )),
            "{msg}"
        );
        assert!(msg.contains("(ip: about "), "{msg}");
        assert!(msg.contains(" of 320 switch files"), "{msg}");
        assert!(msg.contains("or --max-output none"), "{msg}");
        let mut count = LimitedCount::new(limit);
        let routed = view(&f, &c);
        assert!(export::export(&routed, Format::IpBatch, &mut count).is_err());
        let (est, done, of) = count.extrapolate(&routed).unwrap();
        assert_eq!(of, 320);
        assert!(done > 0 && done < of, "{done}");
        let ratio = est as f64 / written as f64;
        assert!((0.9..=1.1).contains(&ratio), "{est} vs {}", written);
        assert!(count.done_files.iter().all(|n| n.contains("leaf")));
    }
}
