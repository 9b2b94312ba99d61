//! Tenants on the command line: `fabric routes verify --tenants FILE [--partitions FILE]`
//! (the isolation proof, `topo::tenants::proof`) and the tenant formats of
//! `fabric routes export --tenants FILE --format
//! opensm-partitions,vrf-ip,vrf-frr,vrf-frr-bgp,vrf-sonic`.

use std::fmt::Write as _;
use std::path::Path;

use anyhow::Context;
use topo::addressing::AddressPlan;
use topo::export::vrf::VrfFormat;
use topo::export::{Routed, Sink, Tables};
use topo::tenants::enforce::{Enforcement, parse_partitions};
use topo::tenants::proof::{self, Report};
use topo::tenants::{Tenants, leaf};
use topo::{Fabric, Routes};

use crate::common::FabricArgs;

/// The largest partitions.conf read (100k hosts listed one by one are a few MB; tenant
/// files have the same cap, `scenario::tenancy::MAX_TENANT_FILE_BYTES`).
pub const MAX_FILE_BYTES: u64 = 64 << 20;

/// The export formats that need `--tenants`.
pub const FORMATS: [&str; 5] = [
    "opensm-partitions",
    "vrf-ip",
    "vrf-frr",
    "vrf-frr-bgp",
    "vrf-sonic",
];

/// Reads and checks a tenant file against `f` (`scenario::tenancy::read_tenants`, the
/// one reader of tenant files).
pub fn load(path: &Path, f: &Fabric) -> anyhow::Result<Tenants> {
    Ok(scenario::tenancy::read_tenants(path, f)?)
}

/// The `[[tenants]]` section of the fabric spec file `fa` names (presets have none),
/// checked against `f`, with the spec file's name.
fn spec_section(fa: &FabricArgs, f: &Fabric) -> anyhow::Result<Option<(Tenants, String)>> {
    let Some(path) = &fa.fabric else {
        return Ok(None);
    };
    let (spec, origin) = crate::common::read_spec_file(path)?;
    Ok(spec.tenants(f, &origin)?.map(|t| (t, origin)))
}

fn both(spec: &str, file: &Path) -> anyhow::Error {
    anyhow::anyhow!(
        "{spec}: the spec has a [[tenants]] section and a tenant file was given too ({}): give one (drop the file to use the spec's tenants, or the section to use the file)",
        file.display()
    )
}

/// The run's tenants: the fabric spec's `[[tenants]]` section, or `cli` (`--tenants
/// FILE`); a spec with a section and a file is refused.
pub fn fabric_tenants(
    fa: &FabricArgs,
    f: &Fabric,
    cli: Option<&Path>,
) -> anyhow::Result<Option<Tenants>> {
    match (spec_section(fa, f)?, cli) {
        (Some((_, spec)), Some(c)) => Err(both(&spec, c)),
        (Some((t, _)), None) => Ok(Some(t)),
        (None, Some(c)) => load(c, f).map(Some),
        (None, None) => Ok(None),
    }
}

/// The tenants of a scenario run on `f` (built from `fa`): `cli` (`--tenants FILE`) if
/// given, with a note when it replaces the scenario's own `tenants` key, else the
/// scenario's, else the spec's `[[tenants]]` section; a spec section and a file are
/// refused together.
pub fn scenario_tenants(
    scen: &scenario::Scenario,
    fa: Option<&FabricArgs>,
    f: &Fabric,
    cli: Option<&Path>,
) -> anyhow::Result<Option<scenario::ScenarioTenants>> {
    if let (Some(c), Some(own)) = (cli, &scen.tenants) {
        eprintln!(
            "note: --tenants {} replaces the scenario's tenants = \"{}\"",
            c.display(),
            own.display()
        );
    }
    let section = match fa {
        Some(fa) => spec_section(fa, f)?,
        None => None,
    };
    match (section, scen.tenants_path(cli)) {
        (Some((_, spec)), Some(file)) => Err(both(&spec, &file)),
        (Some((t, spec)), None) => Ok(Some(scenario::ScenarioTenants::from_tenants(&t, f, &spec))),
        (None, _) => Ok(scen.load_tenants(f, cli)?),
    }
}

/// The enforcement layer to prove: derived from the tenant file, with the partitions of a
/// deployed `partitions.conf` (plane 0) instead when one is given.
pub fn enforcement(
    f: &Fabric,
    t: &Tenants,
    partitions: Option<&Path>,
) -> anyhow::Result<Enforcement> {
    let mut enf = Enforcement::from_tenants(f, t);
    if let Some(p) = partitions {
        let text = crate::common::read_capped(p, MAX_FILE_BYTES)
            .with_context(|| format!("cannot read partitions file {}", p.display()))?;
        let addr = AddressPlan::without_ipv4(f)?;
        enf.partitions = parse_partitions(&text, f, &addr, 0, &p.display().to_string())?;
    }
    Ok(enf)
}

/// Runs the proof; its text report.
pub fn prove(f: &Fabric, routes: &Routes, t: &Tenants, enf: &Enforcement) -> (Report, String) {
    let rep = proof::prove(f, routes, t, enf);
    (rep.clone(), render(t, &rep))
}

fn render(t: &Tenants, r: &Report) -> String {
    let mut s = String::new();
    let tenants = t
        .entries()
        .iter()
        .map(|e| {
            format!(
                "{} ({:?}, {} hosts, pkey {:#06x}, vrf {})",
                e.name,
                e.kind,
                e.hosts.len(),
                e.pkey,
                e.vrf
            )
            .to_lowercase()
        })
        .collect::<Vec<_>>()
        .join(", ");
    let _ = writeln!(s, "tenants: {tenants}");
    let mark = if r.ok() { "ok  " } else { "FAIL" };
    let _ = writeln!(
        s,
        "  {mark} isolation over {} host pairs (VRFs and partitions): {} allowed reach, {} isolated, {} unrouted by the tables; {} leaks, {} allowed pairs blocked",
        r.pairs, r.allowed_pairs, r.isolated_pairs, r.unrouted_pairs, r.leak_count, r.blocked_count
    );
    for l in &r.leaks {
        let _ = writeln!(
            s,
            "       leak: {} ({}) -> {} ({}) through {}: {}",
            l.src,
            l.src_entry,
            l.dst,
            l.dst_entry,
            l.via,
            l.path.join(" > ")
        );
    }
    if r.leak_count as usize > r.leaks.len() {
        let _ = writeln!(
            s,
            "       … and {} more leaks",
            r.leak_count as usize - r.leaks.len()
        );
    }
    for b in &r.blocked {
        let _ = writeln!(
            s,
            "       blocked: {} ({}) -> {} ({}): {}",
            b.src, b.src_entry, b.dst, b.dst_entry, b.via
        );
    }
    s
}

/// Splits `--format` names into the tenant formats and the others.
pub fn split_formats(names: &[String]) -> (Vec<String>, Vec<String>) {
    names
        .iter()
        .map(|n| n.trim().to_string())
        .partition(|n| !FORMATS.contains(&n.as_str()))
}

/// Writes the tenant formats `names` into `sink`.
pub fn export<S: Sink>(
    f: &Fabric,
    routes: &Routes,
    addr: &AddressPlan,
    t: &Tenants,
    names: &[String],
    sink: &mut S,
) -> anyhow::Result<()> {
    let enf = Enforcement::from_tenants(f, t);
    let vrfs = leaf::leaf_vrfs(f, routes, addr, &enf);
    for n in names {
        match n.as_str() {
            "opensm-partitions" => topo::export::partitions::export(f, addr, t, &enf, sink)?,
            "vrf-frr-bgp" => {
                let routed = Routed {
                    fabric: f,
                    addr,
                    tables: Tables::Ecmp(routes),
                    lanes: None,
                };
                topo::export::vrf_bgp::export(&routed, &vrfs, sink)?;
            }
            other => {
                let fmt = VrfFormat::ALL
                    .into_iter()
                    .find(|v| v.name() == other)
                    .with_context(|| format!("--format: unknown tenant format `{other}`"))?;
                topo::export::vrf::export(f, &vrfs, fmt, sink)?;
            }
        }
    }
    Ok(())
}
