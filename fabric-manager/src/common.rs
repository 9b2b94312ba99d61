//! Arguments shared by several commands: the one fabric loader and preset grammar every
//! subcommand uses, and the error that means "the check found a violation" (exit 1) as
//! opposed to every other failure — bad input, usage, the system (exit 2).

use std::path::{Path, PathBuf};

use anyhow::Context;

/// A check ran and found a violation (routes that loop, a testbed pair that does not
/// reach): `fabric` exits with status 1. Every other error exits with 2.
#[derive(Debug)]
pub struct CheckFailed(pub String);

impl std::fmt::Display for CheckFailed {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for CheckFailed {}

/// A run stopped before it finished: by SIGINT (exit 130), SIGTERM (143), SIGHUP (129) or its own
/// wall-clock limit (124, as timeout(1) does).
#[derive(Debug)]
pub struct Interrupted {
    /// The exit status.
    pub status: u8,
    /// What stopped it and what did not finish.
    pub what: String,
}

impl std::fmt::Display for Interrupted {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.what)
    }
}

impl std::error::Error for Interrupted {}

/// Exit status for an error: 1 when a check found a violation, 130/143/124 for an
/// interrupted run ([`Interrupted`]), 2 otherwise.
pub fn exit_status(e: &anyhow::Error) -> u8 {
    if e.downcast_ref::<CheckFailed>().is_some() {
        1
    } else if let Some(i) = e.downcast_ref::<Interrupted>() {
        i.status
    } else {
        2
    }
}

/// How every `fabric` subcommand starts a message about an error on standard error (bad
/// input, exit 2; a failed check, exit 1), as clap does for a bad command line.
pub const ERROR_PREFIX: &str = "error: ";

/// An error and its causes on one line (`a: b: c`), leaving out a cause whose text the
/// line already ends with (an error that prints its source, as `veth::Error::Os` does,
/// would otherwise show the OS error twice).
pub fn error_line(e: &anyhow::Error) -> String {
    let mut line = String::new();
    for cause in e.chain() {
        let text = cause.to_string();
        if line.ends_with(&text) {
            continue;
        }
        if !line.is_empty() {
            line.push_str(": ");
        }
        line.push_str(&text);
    }
    line
}

/// The one `--json [OUT]` convention of every command: `--json FILE` writes the JSON to
/// FILE (and the readable text to standard output as usual); `--json` alone or `--json -`
/// puts the JSON — and nothing else — on standard output, the readable text going to
/// standard error.
#[derive(Debug)]
pub enum JsonOut {
    /// No JSON asked for.
    Off,
    /// JSON into this file.
    File(PathBuf),
    /// JSON on the original standard output (saved here); fd 1 now points to stderr.
    Stdout(std::fs::File),
}

impl JsonOut {
    /// From the `--json` argument; for `-`, moves the readable text to stderr now.
    pub fn new(arg: Option<&Path>) -> anyhow::Result<JsonOut> {
        match arg {
            None => Ok(JsonOut::Off),
            Some(p) if p == Path::new("-") => {
                use std::io::Write as _;
                use std::os::fd::FromRawFd;
                let _ = std::io::stdout().flush();
                // SAFETY: dup/dup2 on the process's own standard descriptors; the saved
                // descriptor is owned by the returned File.
                let saved = unsafe { libc::dup(1) };
                anyhow::ensure!(saved >= 0, "--json -: cannot duplicate standard output");
                anyhow::ensure!(
                    unsafe { libc::dup2(2, 1) } >= 0,
                    "--json -: cannot move the text to standard error"
                );
                Ok(JsonOut::Stdout(unsafe {
                    std::fs::File::from_raw_fd(saved)
                }))
            }
            Some(p) => Ok(JsonOut::File(p.to_path_buf())),
        }
    }

    /// Write `v` (pretty-printed, newline-terminated) where the argument said.
    pub fn write<T: serde::Serialize>(&mut self, v: &T) -> anyhow::Result<()> {
        use std::io::Write as _;
        match self {
            JsonOut::Off => Ok(()),
            JsonOut::File(p) => {
                let f = std::fs::File::create(&*p)
                    .with_context(|| format!("--json: cannot create {}", p.display()))?;
                let mut w = std::io::BufWriter::new(f);
                serde_json::to_writer_pretty(&mut w, v)?;
                writeln!(w)?;
                w.flush()
                    .with_context(|| format!("--json: cannot write {}", p.display()))?;
                println!("JSON written to {}", p.display());
                Ok(())
            }
            JsonOut::Stdout(f) => {
                serde_json::to_writer_pretty(&mut *f, v)?;
                writeln!(f)?;
                Ok(())
            }
        }
    }
}

/// Which fabric to work on: a spec file or a named preset (one grammar for every
/// command, see [`preset_spec`]), with an explicit rate override.
#[derive(Debug, Clone, Default, clap::Args)]
pub struct FabricArgs {
    /// Fabric spec file (TOML, YAML or JSON, chosen by extension).
    #[arg(long, value_name = "SPEC", conflicts_with = "preset")]
    pub fabric: Option<PathBuf>,
    /// Named preset: any of `fabric topo presets`, `leaf-spine-<LEAVES>x<SPINES>`
    /// (SPINES hosts per leaf), each optionally with `-x<PLANES>`.
    #[arg(long, value_name = "NAME")]
    pub preset: Option<String>,
    /// Run every link (host and switch) at this rate instead of the design's, e.g. 100G.
    #[arg(long, value_name = "RATE")]
    pub link_rate: Option<String>,
}

impl FabricArgs {
    /// A preset by name, with no override.
    pub fn preset(name: &str) -> FabricArgs {
        FabricArgs {
            preset: Some(name.to_string()),
            ..FabricArgs::default()
        }
    }

    /// The spec and its origin (file name or `preset NAME`), with `--link-rate` applied.
    /// Errors if neither a file nor a preset is given.
    pub fn spec(&self) -> anyhow::Result<(topo::Spec, String)> {
        let (mut spec, mut origin) = match (&self.fabric, &self.preset) {
            (Some(path), _) => read_spec_file(path)?,
            (None, Some(name)) => preset_spec(name)?,
            (None, None) => anyhow::bail!(
                "no fabric given: pass --fabric SPEC_FILE or --preset NAME (see `fabric topo presets`)"
            ),
        };
        if let Some(r) = &self.link_rate {
            let rate = topo::Rate::parse(r).map_err(|e| anyhow::anyhow!("--link-rate {r}: {e}"))?;
            with_link_rate(&mut spec, rate);
            origin = format!("{origin} at {r}");
        }
        Ok((spec, origin))
    }

    /// Loads and builds the fabric.
    pub fn load(&self) -> anyhow::Result<topo::Fabric> {
        let (spec, origin) = self.spec()?;
        Ok(spec.build(&origin)?)
    }

    /// [`Self::load`], with `default` as the preset when neither is given.
    pub fn load_or(&self, default: &str) -> anyhow::Result<topo::Fabric> {
        if self.fabric.is_none() && self.preset.is_none() {
            let mut a = self.clone();
            a.preset = Some(default.to_string());
            return a.load();
        }
        self.load()
    }
}

/// Every link of the design at `rate`: hosts, and every tier's up links (breakout
/// accounting by native port rate no longer applies).
fn with_link_rate(spec: &mut topo::Spec, rate: topo::Rate) {
    spec.hosts.rate = rate;
    for p in &mut spec.planes {
        for t in [&mut p.leaf, &mut p.spine] {
            t.uplink_rate = None;
            t.port_rate = None;
        }
        if let Some(c) = &mut p.core {
            c.uplink_rate = None;
            c.port_rate = None;
        }
    }
}

/// Reads a spec file; the format comes from the extension.
pub fn read_spec_file(path: &Path) -> anyhow::Result<(topo::Spec, String)> {
    let origin = path.display().to_string();
    let format = topo::Format::from_path(&origin).with_context(|| {
        format!("{origin}: unknown spec format (expected a .toml, .yaml, .yml or .json file)")
    })?;
    let text = read_capped(path, MAX_SPEC_BYTES)
        .with_context(|| format!("cannot read fabric spec {origin}"))?;
    let spec = topo::Spec::parse(&text, format, &origin)?;
    Ok((spec, origin))
}

/// The largest fabric spec read (a 100k-GPU spec in any format is a few kB; a generated
/// one listing every link is far below this).
pub const MAX_SPEC_BYTES: u64 = 64 << 20;

/// Reads a text file of at most `limit` bytes; a larger one (or an endless one such as
/// `/dev/zero`) is an error naming the limit, read no further than the limit.
pub fn read_capped(path: &Path, limit: u64) -> anyhow::Result<String> {
    use std::io::Read;
    let mut text = String::new();
    std::fs::File::open(path)?
        .take(limit + 1)
        .read_to_string(&mut text)?;
    if text.len() as u64 > limit {
        anyhow::bail!("larger than the {} MiB such a file may have", limit >> 20);
    }
    Ok(text)
}

/// A preset's spec. The grammar, the same for every command: `NAME[-x<PLANES>]` where NAME
/// is one of `fabric topo presets` (e.g. `fat-tree-k8`, 400 Gb/s like every fat-tree
/// preset) or `leaf-spine-<LEAVES>x<SPINES>` (SPINES hosts per leaf, 400 Gb/s), and
/// `-x<PLANES>` copies every plane PLANES times. A rate is changed only by `--link-rate`.
pub fn preset_spec(name: &str) -> anyhow::Result<(topo::Spec, String)> {
    let (base, planes) = match name.rsplit_once("-x") {
        Some((b, p)) if !p.is_empty() && p.chars().all(|c| c.is_ascii_digit()) => {
            let planes: u32 = p
                .parse()
                .ok()
                .filter(|&n| (1..=64).contains(&n))
                .with_context(|| format!("preset `{name}`: -x{p}: planes must be 1..=64"))?;
            (b, planes)
        }
        _ => (name, 1),
    };
    let spec = match base.strip_prefix("leaf-spine-") {
        Some(ls) => leaf_spine(name, ls)?,
        None => topo::presets::spec(base).map_err(|e| match e {
            topo::Error::UnknownPreset { .. } => anyhow::anyhow!(
                "{e}; besides these: dragonfly-plus-g<GROUPS>, leaf-spine-<LEAVES>x<SPINES>, and -x<PLANES> after any name"
            ),
            e => e.into(),
        })?,
    };
    let spec = if planes > 1 {
        topo::generators::multi_plane_spec(spec, planes)
    } else {
        spec
    };
    Ok((spec, format!("preset {name}")))
}

/// `leaf-spine-<LEAVES>x<SPINES>`: SPINES hosts per leaf, one link from every leaf to every
/// spine, 400 Gb/s.
fn leaf_spine(name: &str, ls: &str) -> anyhow::Result<topo::Spec> {
    let bad = || {
        anyhow::anyhow!(
            "preset `{name}`: expected leaf-spine-<LEAVES>x<SPINES> with 1..=4096 of each, e.g. leaf-spine-8x16"
        )
    };
    let (l, s) = ls.split_once('x').ok_or_else(bad)?;
    let in_range = |x: &str| x.parse::<u32>().ok().filter(|n| (1..=4096).contains(n));
    let (l, s) = (in_range(l).ok_or_else(bad)?, in_range(s).ok_or_else(bad)?);
    Ok(topo::generators::leaf_spine_spec(
        l,
        s,
        s,
        1,
        topo::Rate::gbps(400),
    ))
}

/// A design named on the command line: an existing file, else a preset name.
pub fn design_spec(arg: &str) -> anyhow::Result<(topo::Spec, String)> {
    let p = Path::new(arg);
    if p.exists() {
        read_spec_file(p)
    } else if topo::Format::from_path(arg).is_some() || arg.contains('/') {
        anyhow::bail!(
            "{arg}: no such file (a design is a spec file, .toml/.yaml/.yml/.json, or a preset of `fabric topo presets`)"
        )
    } else {
        preset_spec(arg)
    }
}

/// Loads and builds a design named on the command line.
pub fn load_design(arg: &str) -> anyhow::Result<topo::Fabric> {
    let (spec, origin) = design_spec(arg)?;
    Ok(spec.build(&origin)?)
}

/// Reads a price list (TOML) or returns the defaults.
pub fn prices(path: Option<&Path>) -> anyhow::Result<topo::analysis::PriceList> {
    let Some(path) = path else {
        return Ok(Default::default());
    };
    let text = read_capped(path, MAX_PRICES_BYTES)
        .with_context(|| format!("cannot read price list {}", path.display()))?;
    let de = toml::Deserializer::parse(&text)
        .map_err(|e| anyhow::anyhow!("{}: {}", path.display(), e))?;
    let p: topo::analysis::PriceList = serde_path_to_error::deserialize(de).map_err(|e| {
        anyhow::anyhow!("{}: {}: {}", path.display(), e.path(), e.inner().message())
    })?;
    for (field, v) in [
        ("switch_usd_per_gbps", p.switch_usd_per_gbps),
        ("optic_usd_per_gbps", p.optic_usd_per_gbps),
        ("fiber_usd", p.fiber_usd),
        ("copper_usd", p.copper_usd),
    ] {
        anyhow::ensure!(
            v.is_finite() && v >= 0.0,
            "{}: {field}: {v} is not a price (expected a number of dollars, 0 or more)",
            path.display()
        );
    }
    Ok(p)
}

/// The largest price list read (five numbers; anything near this is not a price list).
const MAX_PRICES_BYTES: u64 = 1 << 20;

#[cfg(test)]
mod tests {
    #[test]
    fn an_os_error_is_printed_once() {
        let os = std::io::Error::from_raw_os_error(libc::EPERM);
        let e = anyhow::Error::new(veth::Error::Os {
            what: "create netns fab-1-sw".into(),
            source: os,
        })
        .context("build the testbed");
        let line = super::error_line(&e);
        assert_eq!(line.matches("Operation not permitted").count(), 1, "{line}");
        assert!(
            line.starts_with("build the testbed: create netns fab-1-sw: "),
            "{line}"
        );
    }

    #[test]
    fn an_interrupted_run_exits_with_its_status() {
        let e = anyhow::Error::new(super::Interrupted {
            status: 130,
            what: "interrupted".into(),
        });
        assert_eq!(super::exit_status(&e), 130);
        assert_eq!(super::exit_status(&anyhow::anyhow!("bad input")), 2);
    }

    use super::*;

    fn temp(name: &str, text: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!("fabric-common-{}-{name}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let p = dir.join(name);
        std::fs::write(&p, text).unwrap();
        p
    }

    #[test]
    fn spec_file_errors_name_file_and_field() {
        let p = temp(
            "bad.toml",
            "name = \"x\"\n[hosts]\nrate = \"400G\"\n[[planes]]\nleaves_per_pod = 4\nleaf = { radix = 48, down = 32, up = 32 }\nspine = { radix = 64 }\n",
        );
        let args = FabricArgs {
            fabric: Some(p.clone()),
            ..FabricArgs::default()
        };
        let e = args.load().unwrap_err().to_string();
        assert_eq!(
            e,
            format!(
                "{}: planes[0].leaf.radix: 48 ports cannot give 32 down + 32 up",
                p.display()
            )
        );
        let p2 = temp("spec.txt", "");
        let e = read_spec_file(&p2).unwrap_err().to_string();
        assert!(e.contains("unknown spec format"), "{e}");
        let e = FabricArgs::default().load().unwrap_err().to_string();
        assert!(e.contains("--fabric SPEC_FILE or --preset NAME"), "{e}");
        let e = load_design("no-such-design").unwrap_err().to_string();
        assert!(e.starts_with("unknown preset `no-such-design`"), "{e}");
        // A file name that does not exist is a missing file, not an unknown preset.
        let e = load_design("nonexistent.toml").unwrap_err().to_string();
        assert!(e.starts_with("nonexistent.toml: no such file"), "{e}");
        std::fs::remove_dir_all(p.parent().unwrap()).ok();
    }

    #[test]
    fn an_endless_spec_file_is_refused_at_the_size_limit() {
        let e = read_spec_file(Path::new("/dev/zero")).unwrap_err();
        assert!(e.to_string().contains("unknown spec format"), "{e:#}");
        // Through a spec-named link to /dev/zero, or a sparse file past the limit: read
        // up to the limit, then refused.
        let huge = testkit::huge::HugeFiles::new("fabric-spec", "toml", MAX_SPEC_BYTES);
        for p in huge.all() {
            let e = format!("{:#}", read_spec_file(p).unwrap_err());
            assert!(
                e.contains("cannot read fabric spec") && e.contains("larger than the 64 MiB"),
                "{e}"
            );
        }
    }

    #[test]
    fn one_preset_grammar_and_explicit_rate_overrides() {
        let load = |name: &str| FabricArgs::preset(name).load();
        let f = load("fat-tree-k4").unwrap();
        assert_eq!(f.num_hosts(), 16);
        // One name, one fabric: the fat-tree presets are 400 Gb/s everywhere.
        assert!(f.links().iter().all(|l| l.rate_bps == 400_000_000_000));
        let f = load("leaf-spine-4x8-x2").unwrap();
        assert_eq!((f.num_hosts(), f.num_planes()), (32, 2));
        let f = FabricArgs {
            link_rate: Some("100G".into()),
            ..FabricArgs::preset("fat-tree-k4")
        }
        .load()
        .unwrap();
        assert!(f.links().iter().all(|l| l.rate_bps == 100_000_000_000));
        let e = load("torus-3d").unwrap_err().to_string();
        assert!(
            e.contains("unknown preset `torus-3d`") && e.contains("leaf-spine-"),
            "{e}"
        );
        let e = load("fat-tree-k5").unwrap_err().to_string();
        assert!(e.contains("not an even switch radix"), "{e}");
        let e = load("leaf-spine-0x8").unwrap_err().to_string();
        assert!(e.contains("1..=4096"), "{e}");
        let e = load("fat-tree-k4-x0").unwrap_err().to_string();
        assert!(e.contains("planes must be 1..=64"), "{e}");
        let e = FabricArgs {
            link_rate: Some("fast".into()),
            ..FabricArgs::preset("fat-tree-k4")
        }
        .load()
        .unwrap_err()
        .to_string();
        assert!(e.starts_with("--link-rate fast:"), "{e}");
    }

    #[test]
    fn json_goes_to_the_file_asked_for() {
        let dir = std::env::temp_dir().join(format!("fabric-json-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let p = dir.join("out.json");
        let mut j = JsonOut::new(Some(&p)).unwrap();
        j.write(&vec![1, 2, 3]).unwrap();
        let back: Vec<u32> = serde_json::from_str(&std::fs::read_to_string(&p).unwrap()).unwrap();
        assert_eq!(back, vec![1, 2, 3]);
        JsonOut::new(None).unwrap().write(&0).unwrap();
        let e = JsonOut::new(Some(&dir.join("no/such/dir.json")))
            .unwrap()
            .write(&0)
            .unwrap_err()
            .to_string();
        assert!(e.contains("--json: cannot create"), "{e}");
        std::fs::remove_dir_all(&dir).ok();
    }

    #[test]
    fn yaml_spec_and_prices() {
        let p = temp(
            "ok.yaml",
            "name: small\nhosts: {rate: 100G}\nplanes:\n  - leaves_per_pod: 2\n    leaf: {radix: 4, down: 2, up: 2}\n    spine: {radix: 2}\n",
        );
        let f = load_design(p.to_str().unwrap()).unwrap();
        assert_eq!((f.num_hosts(), f.num_switches()), (4, 4));
        let pr = temp("prices.toml", "copper_usd = 1.0\nbogus = 2\n");
        let e = prices(Some(&pr)).unwrap_err().to_string();
        assert!(e.contains("bogus"), "{e}");
        let pr = temp("prices2.toml", "copper_usd = 1.0\n");
        assert_eq!(prices(Some(&pr)).unwrap().copper_usd, 1.0);
        // A negative or non-finite price is refused, naming the field (TOML has nan and inf).
        for (text, field) in [
            ("fiber_usd = -50.0\n", "fiber_usd: -50 is not a price"),
            (
                "switch_usd_per_gbps = nan\n",
                "switch_usd_per_gbps: NaN is not a price",
            ),
            (
                "optic_usd_per_gbps = inf\n",
                "optic_usd_per_gbps: inf is not a price",
            ),
        ] {
            let pr = temp("prices3.toml", text);
            let e = prices(Some(&pr)).unwrap_err().to_string();
            assert!(
                e.ends_with(&format!(
                    "prices3.toml: {field} (expected a number of dollars, 0 or more)"
                )),
                "{e}"
            );
        }
        // An endless file is read no further than the limit.
        let e = format!("{:#}", prices(Some(Path::new("/dev/zero"))).unwrap_err());
        assert!(
            e.contains("cannot read price list /dev/zero") && e.contains("larger than"),
            "{e}"
        );
        std::fs::remove_dir_all(p.parent().unwrap()).ok();
    }
}
