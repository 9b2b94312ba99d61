//! `fabric routes export`: writes routing tables and topology in the formats
//! other tools read (see `topo::export` and `docs/exports.md`).
//!
//! ```text
//! fabric routes export --preset fat-tree-k8 --format ip,frr-bgp --out out/
//! fabric routes export --preset fat-tree-k8 --format json --out routes.json
//! ```
//! Files stream through a [`DirSink`] (one `BufWriter<File>` open at a time), so a
//! 100k-GPU export needs no more memory than the model and its tables.

use std::collections::BTreeSet;
use std::fs::{self, File};
use std::io::{self, BufWriter, Write};
use std::path::{Path, PathBuf};

use anyhow::{Context, bail};
use topo::addressing::AddressPlan;
use topo::export::{self, Format, Routed, Sink, Tables};
use topo::lft::Lft;
use topo::{Fabric, Routes};

use crate::common::FabricArgs;

/// Routing engine whose tables are exported.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Engine {
    /// Up*/down* ECMP: every equal-cost next hop, one route per ToR prefix.
    Ecmp,
    /// Single path per destination host (d-mod-k, like OpenSM ftree): /32 routes.
    SinglePath,
}

/// Failures applied before the tables are exported (topo re-routes
/// incrementally: `Routes::fail_links`).
#[derive(Debug, Clone, Default, clap::Args)]
pub struct FailArgs {
    /// Fail the link(s) between two nodes, by name: `A:B` (e.g.
    /// `pod0-leaf0:pod0-agg0`). Repeatable.
    #[arg(long = "fail-link", value_name = "A:B")]
    pub fail_link: Vec<String>,
    /// Fail every link of a node (switch or host NIC), by name. Repeatable.
    #[arg(long = "fail-node", value_name = "NAME")]
    pub fail_node: Vec<String>,
}

impl FailArgs {
    /// The links these options name, checked against the fabric.
    pub fn links(&self, f: &Fabric) -> anyhow::Result<Vec<topo::LinkId>> {
        let names = f.name_index();
        let node = |n: &str, opt: &str| {
            names
                .get(n)
                .copied()
                .with_context(|| format!("{opt}: no node named `{n}` in fabric {}", f.name()))
        };
        let mut links = Vec::new();
        for spec in &self.fail_link {
            let (a, b) = spec
                .split_once(':')
                .with_context(|| format!("--fail-link {spec}: expected two node names as A:B"))?;
            let (a, b) = (node(a, "--fail-link")?, node(b, "--fail-link")?);
            let before = links.len();
            links.extend(f.ports(a).filter(|&(peer, _)| peer == b).map(|(_, l)| l));
            if links.len() == before {
                bail!(
                    "--fail-link {spec}: {} and {} are not linked",
                    f.node_name(a),
                    f.node_name(b)
                );
            }
        }
        for n in &self.fail_node {
            let id = node(n, "--fail-node")?;
            links.extend(f.ports(id).map(|(_, l)| l));
        }
        links.sort_unstable();
        links.dedup();
        Ok(links)
    }
}

/// Arguments of `fabric routes export`.
#[derive(Debug, clap::Args)]
pub struct Args {
    #[command(flatten)]
    pub fabric: FabricArgs,
    #[command(flatten)]
    pub fail: FailArgs,
    /// Routing engine. The OpenSM LFT is single-path either way: with `ecmp` each
    /// entry takes ECMP member `lid mod width`.
    #[arg(long, value_enum, default_value_t = Engine::Ecmp)]
    pub engine: Engine,
    /// Formats to write, comma-separated or repeated: json, ip, frr-bgp,
    /// frr-static, sonic, opensm, dot, slurm, or all.
    #[arg(long, value_delimiter = ',', required = true, value_name = "FORMAT")]
    pub format: Vec<String>,
    /// Output directory (created if missing), or a file path when exporting one
    /// single-file format (json, dot, slurm).
    #[arg(long, value_name = "DIR|FILE", default_value = "out")]
    pub out: PathBuf,
}

/// Parses `--format` values into a sorted set of formats.
pub(crate) fn parse_formats(names: &[String]) -> anyhow::Result<BTreeSet<Format>> {
    let mut set = BTreeSet::new();
    for n in names {
        let n = n.trim();
        if n == "all" {
            set.extend(Format::ALL);
        } else if let Some(f) = Format::from_name(n) {
            set.insert(f);
        } else {
            let known: Vec<&str> = Format::ALL.iter().map(|f| f.name()).collect();
            bail!(
                "--format: unknown format `{n}`; expected one of {}, or all",
                known.join(", ")
            );
        }
    }
    Ok(set)
}

/// One file written by a sink.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Written {
    /// Path on disk.
    pub path: PathBuf,
    /// Size in bytes.
    pub bytes: u64,
}

/// A writer that counts what goes through it.
#[derive(Debug)]
pub(crate) struct Counted<W> {
    inner: W,
    bytes: u64,
}

impl<W: Write> Write for Counted<W> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let n = self.inner.write(buf)?;
        self.bytes += n as u64;
        Ok(n)
    }
    fn write_all(&mut self, buf: &[u8]) -> io::Result<()> {
        self.inner.write_all(buf)?;
        self.bytes += buf.len() as u64;
        Ok(())
    }
    fn flush(&mut self) -> io::Result<()> {
        self.inner.flush()
    }
}

/// Writes exports under a directory, or (`single`) everything into one file.
#[derive(Debug)]
pub(crate) struct DirSink {
    root: PathBuf,
    single: bool,
    /// Files written so far, in order.
    pub written: Vec<Written>,
}

impl DirSink {
    /// A sink writing `root/<relative path>`.
    pub fn dir(root: &Path) -> Self {
        Self {
            root: root.to_path_buf(),
            single: false,
            written: Vec::new(),
        }
    }
    /// A sink writing the one file of a single-file format to `path`.
    pub fn file(path: &Path) -> Self {
        Self {
            root: path.to_path_buf(),
            single: true,
            written: Vec::new(),
        }
    }
    fn target(&self, rel: &str) -> PathBuf {
        if self.single {
            self.root.clone()
        } else {
            self.root.join(rel)
        }
    }
}

fn with_path(e: io::Error, what: &str, p: &Path) -> io::Error {
    io::Error::new(e.kind(), format!("{what} {}: {e}", p.display()))
}

impl Sink for DirSink {
    type Writer = Counted<BufWriter<File>>;

    fn open(&mut self, rel: &str) -> io::Result<Self::Writer> {
        let p = self.target(rel);
        if let Some(dir) = p.parent().filter(|d| !d.as_os_str().is_empty()) {
            fs::create_dir_all(dir).map_err(|e| with_path(e, "creating directory", dir))?;
        }
        let file = File::create(&p).map_err(|e| with_path(e, "creating", &p))?;
        Ok(Counted {
            inner: BufWriter::with_capacity(256 * 1024, file),
            bytes: 0,
        })
    }

    fn finish(&mut self, rel: &str, mut w: Self::Writer) -> io::Result<()> {
        let p = self.target(rel);
        w.flush().map_err(|e| with_path(e, "writing", &p))?;
        w.inner
            .into_inner()
            .map_err(|e| with_path(e.into_error(), "writing", &p))?;
        self.written.push(Written {
            path: p,
            bytes: w.bytes,
        });
        Ok(())
    }
}

/// Chooses the sink for `--out`: a file if exactly one single-file format is
/// asked for and `out` is not an existing directory and has an extension.
pub(crate) fn sink_for(out: &Path, formats: &BTreeSet<Format>) -> anyhow::Result<DirSink> {
    let one_file = formats.len() == 1 && formats.iter().all(|f| f.single_file().is_some());
    let looks_like_file = !out.is_dir() && out.extension().is_some();
    if looks_like_file && !one_file {
        bail!(
            "--out {}: looks like a file, but {} write several files; give a directory",
            out.display(),
            formats
                .iter()
                .map(|f| f.name())
                .collect::<Vec<_>>()
                .join(", ")
        );
    }
    Ok(if looks_like_file {
        DirSink::file(out)
    } else {
        DirSink::dir(out)
    })
}

/// Loads the fabric named by `--fabric SPEC` or `--preset NAME`, or `default`
/// when neither is given.
pub(crate) fn load_fabric(a: &FabricArgs, default: Option<&str>) -> anyhow::Result<Fabric> {
    if let Some(path) = &a.fabric {
        let origin = path.display().to_string();
        let format = topo::Format::from_path(&origin).with_context(|| {
            format!("--fabric {origin}: unknown extension; expected .toml, .yaml, .yml or .json")
        })?;
        let text =
            fs::read_to_string(path).with_context(|| format!("--fabric {origin}: cannot read"))?;
        return Ok(topo::Spec::parse(&text, format, &origin)?.build(&origin)?);
    }
    let name = a
        .preset
        .as_deref()
        .or(default)
        .context("give --fabric SPEC or --preset NAME")?;
    preset(name)
}

/// Built-in fabrics by name: `fat-tree-k<K>` (3-tier k-ary fat-tree, 400 Gb/s links).
fn preset(name: &str) -> anyhow::Result<Fabric> {
    if let Some(k) = name
        .strip_prefix("fat-tree-k")
        .and_then(|k| k.parse::<u32>().ok())
    {
        return Ok(topo::generators::fat_tree(k, topo::Rate::gbps(400))?);
    }
    bail!("--preset {name}: unknown preset (known: fat-tree-k<K> for even K, e.g. fat-tree-k8)")
}

/// The tables of `engine` for `fabric`, computed once (after failures).
pub(crate) struct Computed {
    pub routes: Routes,
    pub lft: Option<Lft>,
    pub addr: AddressPlan,
    /// What the failures changed, if any were given.
    pub reroute: Option<topo::routing::RerouteReport>,
}

impl Computed {
    pub fn new(f: &Fabric, engine: Engine, fail: &FailArgs) -> anyhow::Result<Self> {
        let links = fail.links(f)?;
        let mut routes = Routes::compute(f);
        let reroute = (!links.is_empty()).then(|| routes.fail_links(f, &links));
        let lft = (engine == Engine::SinglePath).then(|| Lft::compute(f, &routes));
        let addr = AddressPlan::new(f)?;
        Ok(Self {
            routes,
            lft,
            addr,
            reroute,
        })
    }

    pub fn tables(&self) -> Tables<'_> {
        match &self.lft {
            Some(l) => Tables::SinglePath(&self.routes, l),
            None => Tables::Ecmp(&self.routes),
        }
    }
}

/// Writes `formats` of a routed fabric into `sink`.
pub(crate) fn write_formats(
    f: &Fabric,
    c: &Computed,
    formats: &BTreeSet<Format>,
    sink: &mut DirSink,
    out: &Path,
) -> anyhow::Result<()> {
    let routed = Routed {
        fabric: f,
        addr: &c.addr,
        tables: c.tables(),
    };
    for &fmt in formats {
        export::export(&routed, fmt, sink)
            .with_context(|| format!("exporting {fmt} to {}", out.display()))?;
    }
    Ok(())
}

pub fn run(args: Args) -> anyhow::Result<()> {
    let formats = parse_formats(&args.format)?;
    let fabric = load_fabric(&args.fabric, None)?;
    let mut sink = sink_for(&args.out, &formats)?;
    let computed = Computed::new(&fabric, args.engine, &args.fail)?;
    if let Some(rep) = &computed.reroute {
        println!(
            "failed {} link(s): {} entries changed, {} next hops lost",
            rep.links_failed,
            rep.changed.len(),
            rep.width_lost
        );
    }
    write_formats(&fabric, &computed, &formats, &mut sink, &args.out)?;
    print_written(&sink.written);
    Ok(())
}

/// Prints the files written, one per line with its size; a run of more than
/// three files in one directory (the per-switch formats) is summarised.
pub(crate) fn print_written(written: &[Written]) {
    let mut i = 0;
    while i < written.len() {
        let dir = written[i].path.parent();
        let n = written[i..]
            .iter()
            .take_while(|w| w.path.parent() == dir)
            .count();
        let group = &written[i..i + n];
        if n <= 3 {
            for w in group {
                println!("  {:>10}  {}", human(w.bytes), w.path.display());
            }
        } else {
            let bytes: u64 = group.iter().map(|w| w.bytes).sum();
            let d = dir.map(|d| d.display().to_string()).unwrap_or_default();
            println!("  {:>10}  {d}/ ({n} files)", human(bytes));
        }
        i += n;
    }
}

/// Bytes as `12.3 MB` (decimal units).
pub(crate) fn human(b: u64) -> String {
    const U: [&str; 5] = ["B", "kB", "MB", "GB", "TB"];
    let mut v = b as f64;
    let mut i = 0;
    while v >= 1000.0 && i + 1 < U.len() {
        v /= 1000.0;
        i += 1;
    }
    if i == 0 {
        format!("{b} B")
    } else {
        format!("{v:.1} {}", U[i])
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formats_parse_and_reject_unknown() {
        let all = parse_formats(&["all".into()]).unwrap();
        assert_eq!(all.len(), Format::ALL.len());
        let two = parse_formats(&["ip".into(), "dot".into()]).unwrap();
        assert_eq!(
            two.into_iter().collect::<Vec<_>>(),
            vec![Format::IpBatch, Format::Dot]
        );
        let e = parse_formats(&["xml".into()]).unwrap_err().to_string();
        assert!(
            e.contains("unknown format `xml`") && e.contains("frr-bgp"),
            "{e}"
        );
    }

    #[test]
    fn out_file_only_for_one_single_file_format() {
        let json = parse_formats(&["json".into()]).unwrap();
        assert!(
            sink_for(Path::new("/nonexistent/routes.json"), &json)
                .unwrap()
                .single
        );
        let ip = parse_formats(&["ip".into()]).unwrap();
        assert!(sink_for(Path::new("/nonexistent/routes.json"), &ip).is_err());
        assert!(
            !sink_for(Path::new("/nonexistent/outdir"), &ip)
                .unwrap()
                .single
        );
    }

    #[test]
    fn failures_name_links_or_fail_precisely() {
        let f = topo::generators::fat_tree(4, topo::Rate::gbps(400)).unwrap();
        let ok = FailArgs {
            fail_link: vec!["pod0-leaf0:pod0-agg0".into()],
            fail_node: vec!["core0-0".into()],
        };
        assert_eq!(ok.links(&f).unwrap().len(), 1 + 4);
        let bad = |l: &str| {
            FailArgs {
                fail_link: vec![l.into()],
                fail_node: vec![],
            }
            .links(&f)
            .unwrap_err()
            .to_string()
        };
        assert!(bad("pod0-leaf0").contains("expected two node names as A:B"));
        assert!(bad("pod0-leaf0:nosuch").contains("no node named `nosuch`"));
        assert!(bad("pod0-leaf0:core0-0").contains("are not linked"));
    }

    #[test]
    fn human_sizes() {
        assert_eq!(human(999), "999 B");
        assert_eq!(human(1_500), "1.5 kB");
        assert_eq!(human(2_000_000_000), "2.0 GB");
    }
}
