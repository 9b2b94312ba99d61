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
use crate::failure_args::{FailureArgs, Failures};

/// Routing engine whose tables are exported.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Engine {
    /// Up*/down* ECMP: every equal-cost next hop, one route per ToR prefix.
    Ecmp,
    /// Single path per destination host (d-mod-k, like OpenSM ftree): /32 routes.
    SinglePath,
}

/// Arguments of `fabric routes export`.
#[derive(Debug, clap::Args)]
pub struct Args {
    #[command(flatten)]
    pub fabric: FabricArgs,
    #[command(flatten)]
    pub fail: FailureArgs,
    #[command(flatten)]
    pub lanes: crate::lane_args::LaneArgs,
    /// Write the tables even when some host pairs are unreachable (default: refuse, exit 1,
    /// as `fabric build` does).
    #[arg(long)]
    pub allow_unreachable: bool,
    /// Routing engine. The OpenSM LFT is single-path either way: with `ecmp` the export
    /// computes the same single-path table `single-path` writes.
    #[arg(long, value_enum, default_value_t = Engine::Ecmp)]
    pub engine: Engine,
    /// Formats to write, comma-separated or repeated: json, ip, ip-nhg, frr-bgp,
    /// frr-static, sonic, opensm, dot, slurm, slurm-yaml, k8s, or all; with --tenants also
    /// opensm-partitions, vrf-ip, vrf-frr, vrf-frr-bgp, vrf-sonic.
    #[arg(long, value_delimiter = ',', required = true, value_name = "FORMAT")]
    pub format: Vec<String>,
    /// Output directory (created if missing), or a file path when exporting one
    /// single-file format (json, dot, slurm, slurm-yaml).
    #[arg(long, value_name = "DIR|FILE", default_value = "out")]
    pub out: PathBuf,
    /// Tenant file (docs/tenants.md) for the tenant formats.
    #[arg(long, value_name = "FILE")]
    pub tenants: Option<PathBuf>,
    #[command(flatten)]
    pub size: crate::cmd_export_size::SizeArgs,
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
    // An existing non-directory (a file, or a device such as /dev/full or /dev/stdout) is
    // written as a file; so is a new path with an extension.
    let looks_like_file = match std::fs::metadata(out) {
        Ok(m) => !m.is_dir(),
        Err(_) => out.extension().is_some(),
    };
    if looks_like_file && !one_file {
        bail!(
            "--out {}: is (or looks like) a file, but {} write several files; give a directory",
            out.display(),
            formats
                .iter()
                .map(|f| f.name())
                .collect::<Vec<_>>()
                .join(", ")
        );
    }
    if looks_like_file {
        if let Some(dir) = out.parent().filter(|d| !d.as_os_str().is_empty()) {
            check_out_dir(dir)?;
        }
        Ok(DirSink::file(out))
    } else {
        check_out_dir(out)?;
        Ok(DirSink::dir(out))
    }
}

/// Fails at once when `dir` cannot become the output directory because it, or the first
/// of its ancestors that exists, is not a directory (`/etc/passwd`, `/etc/passwd/x`): the
/// error the sink would give when creating it, before any routing is done.
pub(crate) fn check_out_dir(dir: &Path) -> anyhow::Result<()> {
    let Some(existing) = dir.ancestors().find(|a| a.exists()) else {
        return Ok(());
    };
    if existing.is_dir() {
        return Ok(());
    }
    let errno = if existing == dir {
        libc::EEXIST
    } else {
        libc::ENOTDIR
    };
    let e = with_path(
        io::Error::from_raw_os_error(errno),
        "creating directory",
        dir,
    );
    bail!("--out {}: {e}", dir.display())
}

/// The tables of `engine` for `fabric`, computed once (after failures).
pub(crate) struct Computed {
    pub routes: Routes,
    pub lft: Option<Lft>,
    pub addr: AddressPlan,
    /// The failures applied.
    pub failures: Failures,
    /// What the failures changed, if any were given.
    pub reroute: Option<topo::routing::RerouteReport>,
    /// Pairs routed around on further lanes (`--lanes`).
    pub lanes: topo::lanes::Lanes,
    /// Why the pairs without an up*/down* path were not routed (too few lanes), if so.
    pub lane_error: Option<String>,
}

impl Computed {
    /// Routes `f` after `failures` (already resolved: an input error is the caller's).
    #[cfg(test)]
    pub fn new(f: &Fabric, engine: Engine, failures: Failures) -> anyhow::Result<Self> {
        Self::for_formats(
            f,
            engine,
            failures,
            topo::lanes::MAX_LANES,
            Format::ALL.iter(),
        )
    }

    /// [`Self::new`] with the address plan `formats` need: without IPv4 when none of
    /// them writes IP addresses, so an InfiniBand-only export of a fabric too large for
    /// the IPv4 blocks (a k=256 fat-tree) does not fail on them.
    pub fn for_formats<'a>(
        f: &Fabric,
        engine: Engine,
        failures: Failures,
        max_lanes: u8,
        mut formats: impl Iterator<Item = &'a Format>,
    ) -> anyhow::Result<Self> {
        let mut routes = Routes::compute(f);
        let reroute = (!failures.is_empty()).then(|| routes.fail_links(f, &failures.links));
        let (lanes, lane_error) = crate::lane_args::route_around(f, &mut routes, max_lanes);
        let lft = (engine == Engine::SinglePath).then(|| Lft::compute(f, &routes));
        let addr = if formats.any(|f| f.needs_ip()) {
            AddressPlan::new(f)?
        } else {
            AddressPlan::without_ipv4(f)?
        };
        Ok(Self {
            routes,
            lft,
            addr,
            failures,
            reroute,
            lanes,
            lane_error,
        })
    }

    /// Verifies the tables, each pair on its lane.
    pub fn verify(&self, f: &Fabric) -> topo::verify::VerifyReport {
        topo::verify::verify_lanes(f, &self.routes, &self.lanes)
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
        lanes: Some(&c.lanes),
    };
    let list: Vec<Format> = formats.iter().copied().collect();
    export::export_many(&routed, &list, sink).with_context(|| {
        let names: Vec<&str> = list.iter().map(|f| f.name()).collect();
        format!("exporting {} to {}", names.join(","), out.display())
    })?;
    if let Some(w) = slurm_failure_warning(c, formats, sink.single) {
        eprintln!("warning: {w}");
    }
    if !c.failures.is_empty() && !sink.single {
        // The tables were made for a failed fabric: name every failed link and switch
        // beside them, one per line, as `--fail` accepts them.
        let mut w = sink.open("failures.txt")?;
        writeln!(
            w,
            "# failed before routing: {} links, {} switches (names as --fail takes them)",
            c.failures.links.len(),
            c.failures.switches.len()
        )?;
        for n in c.failures.switch_names(f) {
            writeln!(w, "switch {n}")?;
        }
        for n in c.failures.link_names(f) {
            writeln!(w, "link {n}")?;
        }
        sink.finish("failures.txt", w)?;
    }
    if !c.lanes.is_empty() && !sink.single {
        write_lanes(f, c, formats.contains(&Format::Opensm), sink)?;
    }
    Ok(())
}

/// What a `topology.conf` written after failures cannot say. The other single-file formats
/// carry the failures (`routes.json`: `failed_links`, `failed_switches`, `lanes`;
/// `fabric.dot`: failed links dashed red); Slurm's tree plugin has no link state.
fn slurm_failure_warning(c: &Computed, formats: &BTreeSet<Format>, single: bool) -> Option<String> {
    if !formats.contains(&Format::Slurm) || c.failures.is_empty() {
        return None;
    }
    Some(format!(
        "topology.conf is the design's tree: Slurm's topology/tree has no link state, so the \
         {} failed links and {} failed switches are not in it; {}",
        c.failures.links.len(),
        c.failures.switches.len(),
        if single {
            "written as one file they are recorded nowhere: export to a directory to get \
             failures.txt beside it"
        } else {
            "failures.txt beside it lists them"
        }
    ))
}

/// `lanes.txt` and, with the OpenSM format, each plane's `qos-policy.conf` (path SL = lane).
fn write_lanes(f: &Fabric, c: &Computed, opensm: bool, sink: &mut DirSink) -> anyhow::Result<()> {
    let mut w = sink.open("lanes.txt")?;
    export::lanes::write(f, &c.addr, &c.lanes, &mut w)?;
    sink.finish("lanes.txt", w)?;
    for p in (0..f.num_planes() as u16).filter(|_| opensm) {
        let mut buf = Vec::new();
        if export::lanes::write_qos_policy(f, &c.addr, &c.lanes, p, &mut buf)? {
            let rel = format!("opensm/plane{p}/qos-policy.conf");
            let mut w = sink.open(&rel)?;
            w.write_all(&buf)?;
            sink.finish(&rel, w)?;
        }
    }
    Ok(())
}

pub fn run(args: Args) -> anyhow::Result<()> {
    use crate::failure_args::input;
    let (names, tenant_formats) = crate::tenant_args::split_formats(&args.format);
    let formats = input(parse_formats(&names));
    let fabric = input(args.fabric.load());
    let tenants = input(crate::tenant_args::fabric_tenants(
        &args.fabric,
        &fabric,
        args.tenants.as_deref(),
    ));
    if !tenant_formats.is_empty() && tenants.is_none() {
        input::<()>(Err(anyhow::anyhow!(
            "--format {}: needs tenants: --tenants FILE or a spec with a [[tenants]] section",
            tenant_formats.join(",")
        )));
    }
    let mut sink = if tenant_formats.is_empty() {
        input(sink_for(&args.out, &formats))
    } else {
        input(check_out_dir(&args.out));
        DirSink::dir(&args.out)
    };
    // The VRF formats write IP addresses.
    let ip = tenant_formats.iter().any(|n| n.starts_with("vrf-"));
    let failures = input(args.fail.resolve(&fabric));
    let computed = input(Computed::for_formats(
        &fabric,
        args.engine,
        failures,
        args.lanes.lanes,
        formats.iter().chain(ip.then_some(&Format::IpBatch)),
    ));
    if let Some(rep) = &computed.reroute {
        println!("failures: {}", computed.failures.summary(&fabric));
        println!(
            "re-route: {} entries changed, {} next hops lost",
            rep.changed.len(),
            rep.width_lost
        );
        let v = computed.verify(&fabric);
        if let Some(line) = crate::lane_args::lanes_line(&v, computed.lanes.pairs().len()) {
            println!("lanes: {line}");
        }
        if let Some(e) = &computed.lane_error {
            println!("lanes: {e}");
        }
        match unreachable_verdict(&v, args.allow_unreachable) {
            Some(Err(refusal)) => {
                eprintln!("{}routes export: {refusal}", crate::common::ERROR_PREFIX);
                std::process::exit(1);
            }
            Some(Ok(warning)) => println!("warning: {warning}"),
            None => {}
        }
    }
    input(crate::cmd_export_size::check(
        &fabric,
        &computed,
        &formats,
        args.size.max_output,
    ));
    write_formats(&fabric, &computed, &formats, &mut sink, &args.out)?;
    if let Some(t) = &tenants {
        crate::tenant_args::export(
            &fabric,
            &computed.routes,
            &computed.addr,
            t,
            &tenant_formats,
            &mut sink,
        )?;
    }
    print_written(&sink.written);
    Ok(())
}

/// After failures: nothing to say (all reachable), a warning (unreachable pairs, allowed),
/// or the refusal (unreachable pairs, not allowed: exit 1 as `fabric build`).
pub(crate) fn unreachable_verdict(
    v: &topo::verify::VerifyReport,
    allow: bool,
) -> Option<Result<String, String>> {
    if v.unreachable_pairs == 0 {
        return None;
    }
    let what = unreachable_line(v);
    Some(if allow {
        Ok(format!(
            "{what}; writing the tables anyway (--allow-unreachable)"
        ))
    } else {
        Err(format!(
            "{what}; not writing tables (pass --allow-unreachable to write them anyway)"
        ))
    })
}

/// "N host pairs unreachable (A without an up*/down* path, B disconnected)".
pub(crate) fn unreachable_line(v: &topo::verify::VerifyReport) -> String {
    format!(
        "{} host pairs unreachable ({} without an up*/down* path though connected, {} disconnected)",
        v.unreachable_pairs, v.unreachable_no_updown, v.unreachable_disconnected
    )
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
    fn unreachable_hosts_are_refused_unless_allowed() {
        let f = topo::generators::fat_tree(4, topo::Rate::gbps(400)).unwrap();
        let fail = FailureArgs {
            fail: vec!["host0-nic0--pod0-leaf0".into()],
            ..Default::default()
        };
        let c = Computed::new(&f, Engine::Ecmp, fail.resolve(&f).unwrap()).unwrap();
        let v = topo::verify::verify(&f, &c.routes);
        let refusal = unreachable_verdict(&v, false).unwrap().unwrap_err();
        assert_eq!(
            refusal,
            "30 host pairs unreachable (0 without an up*/down* path though connected, 30 disconnected); \
             not writing tables (pass --allow-unreachable to write them anyway)"
        );
        assert!(unreachable_verdict(&v, true).unwrap().is_ok());
        // The failure is named beside the tables.
        let dir = std::env::temp_dir().join(format!("fabric-export-fail-{}", std::process::id()));
        let mut sink = DirSink::dir(&dir);
        let formats = parse_formats(&["opensm".into()]).unwrap();
        write_formats(&f, &c, &formats, &mut sink, &dir).unwrap();
        let text = fs::read_to_string(dir.join("failures.txt")).unwrap();
        assert!(text.contains("link host0-nic0--pod0-leaf0"), "{text}");
        let _ = fs::remove_dir_all(&dir);
        // Healthy: nothing to say.
        let healthy = Computed::new(&f, Engine::Ecmp, Failures::default()).unwrap();
        assert!(unreachable_verdict(&topo::verify::verify(&f, &healthy.routes), false).is_none());
    }

    /// Issue 21: a single-file export after failures carries them (JSON: failed links and
    /// every pair's lane), and a topology.conf, which cannot, is warned about.
    #[test]
    fn single_file_json_carries_failures_and_lanes() {
        let f = topo::generators::fat_tree(4, topo::Rate::gbps(400)).unwrap();
        let fail = FailureArgs {
            fail: topo::lanes::STRANDED_K4.map(String::from).to_vec(),
            ..Default::default()
        };
        let c = Computed::new(&f, Engine::Ecmp, fail.resolve(&f).unwrap()).unwrap();
        assert_eq!(c.lanes.used, 2);
        let path = std::env::temp_dir().join(format!("fabric-r-{}.json", std::process::id()));
        let json = parse_formats(&["json".into()]).unwrap();
        let mut sink = sink_for(&path, &json).unwrap();
        write_formats(&f, &c, &json, &mut sink, &path).unwrap();
        let doc: serde_json::Value =
            serde_json::from_str(&fs::read_to_string(&path).unwrap()).unwrap();
        let _ = fs::remove_file(&path);
        assert_eq!(doc["failed_links"].as_array().unwrap().len(), 3, "{doc}");
        assert_eq!(doc["lanes"]["used"], 2);
        assert_eq!(
            doc["lanes"]["pairs"].as_array().unwrap().len(),
            c.lanes.pairs().len()
        );
        let slurm = parse_formats(&["slurm".into()]).unwrap();
        let w = slurm_failure_warning(&c, &slurm, true).unwrap();
        assert!(
            w.contains("3 failed links") && w.contains("recorded nowhere"),
            "{w}"
        );
        assert!(slurm_failure_warning(&c, &json, true).is_none());
        let healthy = Computed::new(&f, Engine::Ecmp, Failures::default()).unwrap();
        assert!(slurm_failure_warning(&healthy, &slurm, true).is_none());
    }

    #[test]
    fn default_preset_loads() {
        let none = FabricArgs::default();
        assert_eq!(none.load_or("fat-tree-k4").unwrap().num_hosts(), 16);
        assert!(none.load().is_err());
    }

    #[test]
    fn human_sizes() {
        assert_eq!(human(999), "999 B");
        assert_eq!(human(1_500), "1.5 kB");
        assert_eq!(human(2_000_000_000), "2.0 GB");
    }
}
