//! Declarative fabric specs (TOML, YAML or JSON through serde) and the generator that
//! turns a validated spec into a [`Fabric`].
//!
//! A spec describes hosts (servers × NICs × ports per NIC, GPUs, scale-up domain) and a
//! list of planes (`[[planes]]`, each with `copies`). Every plane is one of:
//!
//! * **2-tier leaf–spine** (no `core`): `pods × leaves_per_pod` leaves, each with
//!   `leaf.up` uplinks spread evenly over *all* spines; spines = leaf uplinks / `spine.down`.
//! * **3-tier folded Clos** (`core` present): a pod has `leaves_per_pod` leaves and
//!   `leaves_per_pod × leaf.up / spine.down` aggregation switches (full bisection inside
//!   the pod when `leaf.up × uplink rate ≥ leaf.down × host rate`); aggregation switch `j`
//!   of every pod connects to core group `j` (the k-ary fat-tree wiring of Al-Fares et al.,
//!   SIGCOMM 2008). `spine.up < spine.down` reduces bandwidth between pods ("computing
//!   islands").
//! * **Dragonfly+** (`kind = "dragonfly-plus"`): pods are groups; inside a group a
//!   leaf–spine; `spine.up` ports per spine are global links to spines of the other
//!   groups, spread evenly over all group pairs (Shpiner et al., "Dragonfly+", HiPINEB 2017).
//!
//! Hosts: server `s` has `nics_per_server` NICs (host nodes) with `ports_per_nic` ports.
//! NIC port `(r, q)` lands in plane `(r × ports_per_nic + q) mod planes`, so 8 single-port
//! NICs over 8 planes is DeepSeek's one-NIC-per-plane layout and 8 dual-port NICs over
//! 2 planes is Alibaba HPN's dual-plane layout. Inside a plane a server has
//! `A = nics × ports / planes` attachments ("rails"); with `rail_optimized = true` rail `j`
//! of every server of a pod lands on the pod's rail-`j` leaves, otherwise attachments fill
//! leaves in order.
//!
//! Validation errors name the origin, the field path and what was expected, e.g.
//! `fabric.toml: planes[1].leaf.radix: 48 ports cannot give 32 down + 32 up`.

use serde::{Deserialize, Serialize};

mod generate;
mod validate;

pub(crate) use validate::limits;
pub use validate::{MAX_HOSTS, MAX_LINKS, MAX_PORTS, MAX_SWITCHES, Plan};

use crate::model::*;
use crate::tenants::{EntrySpec, TenantFile, Tenants};
use crate::units::Rate;
use crate::{Error, Result};

/// A fabric spec, as written in a file.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Spec {
    /// Fabric name.
    pub name: String,
    /// One-line description.
    #[serde(default)]
    pub description: String,
    /// Where the design comes from (paper, reference architecture).
    #[serde(default)]
    pub source: Vec<String>,
    /// Tenants: traffic classes a switch has for them (a tenant file's
    /// `traffic_classes`, default 8; docs/tenants.md).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub traffic_classes: Option<u32>,
    /// Servers, NICs, GPUs.
    pub hosts: HostSpec,
    /// Planes (at least one).
    pub planes: Vec<PlaneSpec>,
    /// Tenants: shared services (`[[services]]`, as in a tenant file).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub services: Vec<EntrySpec>,
    /// Tenants (`[[tenants]]`, as in a tenant file): checked against the fabric when the
    /// spec is built, with the tenant file's errors ([`Spec::tenants`]).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tenants: Vec<EntrySpec>,
}

/// Hosts of a fabric.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HostSpec {
    /// Number of servers; default: as many as the fabric has ports for.
    #[serde(default)]
    pub servers: Option<u32>,
    /// GPUs per server.
    #[serde(default = "one")]
    pub gpus_per_server: u32,
    /// NICs (addressable endpoints, host nodes) per server.
    #[serde(default = "one")]
    pub nics_per_server: u32,
    /// Ports per NIC (each in a different plane).
    #[serde(default = "one")]
    pub ports_per_nic: u32,
    /// Rail-optimized attachment (NIC `j` of every server of a pod on rail `j`'s leaves).
    #[serde(default)]
    pub rail_optimized: bool,
    /// GPUs per scale-up (NVLink) domain; default: one server.
    #[serde(default)]
    pub scale_up_domain: Option<u32>,
    /// Host link rate.
    pub rate: Rate,
    /// Host link one-way propagation delay (ns).
    #[serde(default)]
    pub delay_ns: Option<u32>,
}

fn one() -> u32 {
    1
}

/// One plane (or `copies` identical planes).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PlaneSpec {
    /// Identical copies of this plane.
    #[serde(default = "one")]
    pub copies: u32,
    /// Topology family.
    #[serde(default = "clos")]
    pub kind: PlaneKind,
    /// Pods (Dragonfly+ groups; rail groups / scalable units of a 2-tier fabric).
    #[serde(default = "one")]
    pub pods: u32,
    /// Leaves per pod.
    pub leaves_per_pod: u32,
    /// Leaf / ToR tier.
    pub leaf: TierSpec,
    /// Spine (2-tier) / aggregation (3-tier) / Dragonfly+ spine tier.
    pub spine: TierSpec,
    /// Core tier (makes the plane 3-tier).
    #[serde(default)]
    pub core: Option<TierSpec>,
}

fn clos() -> PlaneKind {
    PlaneKind::Clos
}

/// One switch tier.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TierSpec {
    /// Ports per switch (of `port_rate`, when given; a 400G port broken out into
    /// 2 × 200G then counts as half a port per 200G link).
    pub radix: u32,
    /// Native port rate, for breakout accounting.
    #[serde(default)]
    pub port_rate: Option<Rate>,
    /// Down ports per switch; default `radix - up`.
    #[serde(default)]
    pub down: Option<u32>,
    /// Up ports per switch (global ports for a Dragonfly+ spine; ports toward a core that
    /// is not modelled for the top tier of a Clos).
    #[serde(default)]
    pub up: u32,
    /// Rate of the up links; default: the rate of the tier below.
    #[serde(default)]
    pub uplink_rate: Option<Rate>,
    /// One-way propagation delay of the up links (ns).
    #[serde(default)]
    pub delay_ns: Option<u32>,
}

/// Input formats.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    /// TOML.
    Toml,
    /// YAML.
    Yaml,
    /// JSON.
    Json,
}

impl Format {
    /// From a file name's extension.
    pub fn from_path(path: &str) -> Option<Format> {
        let ext = path.rsplit('.').next()?.to_ascii_lowercase();
        match ext.as_str() {
            "toml" => Some(Format::Toml),
            "yaml" | "yml" => Some(Format::Yaml),
            "json" => Some(Format::Json),
            _ => None,
        }
    }
}

/// A field path as a user reads it: serde_path_to_error's `?` segments (a place it
/// could not name, inside an enum or a map key) left out.
fn clean_path(path: &str) -> String {
    let mut out = String::new();
    for seg in path.split('.') {
        let seg = seg.trim_start_matches('?');
        if seg.is_empty() {
            continue;
        }
        if !out.is_empty() && !seg.starts_with('[') {
            out.push('.');
        }
        out.push_str(seg);
    }
    out
}

pub(crate) fn parse_err(origin: &str, path: String, msg: String) -> Error {
    let path = clean_path(&path);
    // A deserializer may prefix its own (possibly shorter) path: say the place once.
    let msg = match msg.split_once(": ") {
        Some((p, rest))
            if !p.contains(' ')
                && (p == "." || path.starts_with(&clean_path(p)) || p.contains('?')) =>
        {
            rest.to_string()
        }
        _ => msg,
    };
    let path = if path.is_empty() || path == "." {
        "(top level)".to_string()
    } else {
        path
    };
    Error::Parse {
        origin: origin.to_string(),
        path,
        msg,
    }
}

/// Deepest bracket nesting a spec may have (a spec needs fewer than 10 levels). Deeper text
/// is refused before parsing: YAML nested 100,000 deep took the parser 59 s (quadratic).
pub const MAX_NESTING: usize = 64;
/// Deepest indentation, in columns, a spec line may have (block-style YAML nests by
/// indentation; a spec needs fewer than 40).
pub const MAX_INDENT: usize = 512;

/// Refuses text nested deeper than [`MAX_NESTING`] brackets (`[`, `{`, outside quotes and
/// comments) or indented deeper than [`MAX_INDENT`] columns, naming the line.
fn check_nesting(text: &str, origin: &str) -> Result<()> {
    let too_deep = |line: usize, what: String| Error::Parse {
        origin: origin.to_string(),
        path: "(top level)".into(),
        msg: format!("line {line}: {what}; a fabric spec needs far fewer"),
    };
    let (mut depth, mut line, mut indent) = (0usize, 1usize, Some(0usize));
    let (mut quote, mut escaped, mut comment, mut prev) = (None, false, false, '\n');
    for c in text.chars() {
        if c == '\n' {
            (line, indent, comment, prev) = (line + 1, Some(0), false, c);
            continue;
        }
        if let Some(n) = indent.as_mut() {
            if c == ' ' {
                *n += 1;
                if *n > MAX_INDENT {
                    return Err(too_deep(
                        line,
                        format!("indented more than {MAX_INDENT} columns"),
                    ));
                }
            } else {
                indent = None;
            }
        }
        if comment {
            continue;
        }
        if let Some(q) = quote {
            if escaped {
                escaped = false;
            } else if c == '\\' && q == '"' {
                escaped = true;
            } else if c == q {
                quote = None;
            }
            continue;
        }
        match c {
            '"' | '\'' => quote = Some(c),
            '#' if prev.is_whitespace() => comment = true,
            '[' | '{' => {
                depth += 1;
                if depth > MAX_NESTING {
                    return Err(too_deep(
                        line,
                        format!("nested deeper than {MAX_NESTING} levels"),
                    ));
                }
            }
            ']' | '}' => depth = depth.saturating_sub(1),
            _ => {}
        }
        prev = c;
    }
    Ok(())
}

impl Spec {
    /// Parses spec text; `origin` (usually the file name) goes into error messages. Text
    /// nested deeper than [`MAX_NESTING`] (or indented past [`MAX_INDENT`]) is refused.
    pub fn parse(text: &str, format: Format, origin: &str) -> Result<Spec> {
        check_nesting(text, origin)?;
        match format {
            Format::Toml => {
                let de = toml::Deserializer::parse(text).map_err(|e| {
                    parse_err(origin, String::new(), e.to_string().trim().to_string())
                })?;
                serde_path_to_error::deserialize(de).map_err(|e| {
                    let path = e.path().to_string();
                    let inner = e.into_inner();
                    parse_err(origin, path, inner.message().to_string())
                })
            }
            Format::Yaml => {
                let de = serde_yaml_ng::Deserializer::from_str(text);
                serde_path_to_error::deserialize(de).map_err(|e| {
                    let path = e.path().to_string();
                    parse_err(origin, path, e.into_inner().to_string())
                })
            }
            Format::Json => {
                let mut de = serde_json::Deserializer::from_str(text);
                serde_path_to_error::deserialize(&mut de).map_err(|e| {
                    let path = e.path().to_string();
                    parse_err(origin, path, e.into_inner().to_string())
                })
            }
        }
    }

    /// Serializes the spec as TOML.
    pub fn to_toml(&self) -> String {
        toml::to_string(self).unwrap_or_default()
    }

    /// Total number of planes (sum of `copies`).
    pub fn num_planes(&self) -> u32 {
        self.planes
            .iter()
            .fold(0u32, |n, p| n.saturating_add(p.copies))
    }

    /// Validates and builds the fabric, its tenants section included (checked as a
    /// tenant file would be). `origin` goes into error messages.
    pub fn build(&self, origin: &str) -> Result<Fabric> {
        let plan = self.validate(origin)?;
        let f = generate::generate(self, &plan);
        self.tenants(&f, origin)?;
        Ok(f)
    }

    /// The tenants section (`traffic_classes`, `[[services]]`, `[[tenants]]`) as a tenant
    /// file; `None` when the spec has none of them.
    pub fn tenant_file(&self) -> Option<TenantFile> {
        let none =
            self.traffic_classes.is_none() && self.services.is_empty() && self.tenants.is_empty();
        (!none).then(|| TenantFile {
            traffic_classes: self.traffic_classes.unwrap_or(8),
            services: self.services.clone(),
            tenants: self.tenants.clone(),
        })
    }

    /// The tenants section checked against `f` (the fabric this spec builds), with the
    /// errors a tenant file gets (`tenants[1].servers[0]: …`); `None` without one.
    pub fn tenants(&self, f: &Fabric, origin: &str) -> Result<Option<Tenants>> {
        self.tenant_file()
            .map(|file| Tenants::resolve(&file, f, origin))
            .transpose()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// YAML nested 100,000 deep (flow style) took 59 s to be refused; now the nesting check
    /// refuses it at once, naming the file, line and limit. Block style by indentation too;
    /// brackets inside quotes and comments do not count.
    #[test]
    fn deep_nesting_is_refused_before_parsing() {
        let deep = format!(
            "name: x\nplanes: {}{}\n",
            "[".repeat(100_000),
            "]".repeat(100_000)
        );
        for format in [Format::Yaml, Format::Json, Format::Toml] {
            let e = Spec::parse(&deep, format, "deep.yaml")
                .unwrap_err()
                .to_string();
            assert!(
                e.starts_with("deep.yaml: (top level): line 2: nested deeper than 64 levels"),
                "{e}"
            );
        }
        let mut block = String::from("name: x\nplanes:\n");
        for i in 0..600 {
            block.push_str(&" ".repeat(i));
            block.push_str("- \n");
        }
        let e = Spec::parse(&block, Format::Yaml, "b.yaml")
            .unwrap_err()
            .to_string();
        assert!(e.contains("indented more than 512 columns"), "{e}");
        let quoted = format!(
            "name: \"{}\" # {}\nplanes: []\n",
            "[".repeat(100),
            "{".repeat(100)
        );
        let e = Spec::parse(&quoted, Format::Yaml, "q.yaml")
            .unwrap_err()
            .to_string();
        assert!(!e.contains("nested deeper"), "{e}");
    }

    fn two_tier(leaf_radix: u32) -> String {
        format!(
            r#"
name = "t"
[hosts]
rate = "100G"
[[planes]]
leaves_per_pod = 4
leaf = {{ radix = {leaf_radix}, down = 32, up = 32 }}
spine = {{ radix = 64 }}
"#
        )
    }

    #[test]
    fn error_paths_have_no_question_marks_and_say_the_place_once() {
        assert_eq!(clean_path("planes[0].?.radix"), "planes[0].radix");
        assert_eq!(clean_path("?"), "");
        assert_eq!(clean_path("?.planes[1]"), "planes[1]");
        let yaml = "name: x\nplanes:\n  - leaf: {radix: 64, down: 32, up: 32}\n    spine: {radix: 64}\n    hosts: 3\n";
        let e = Spec::parse(yaml, Format::Yaml, "a.yaml")
            .unwrap_err()
            .to_string();
        assert!(
            e.starts_with("a.yaml: planes[0].hosts: unknown field `hosts`"),
            "{e}"
        );
        assert_eq!(e.matches("planes[0]").count(), 1, "{e}");
        assert!(!e.contains('?'), "{e}");
    }

    #[test]
    fn radix_error_names_field() {
        let s = Spec::parse(&two_tier(48), Format::Toml, "fabric.toml").unwrap();
        let e = s.build("fabric.toml").unwrap_err().to_string();
        assert_eq!(
            e,
            "fabric.toml: planes[0].leaf.radix: 48 ports cannot give 32 down + 32 up"
        );
    }

    #[test]
    fn second_plane_error_has_its_index() {
        let text = r#"
name = "t"
[hosts]
rate = "400G"
nics_per_server = 2
[[planes]]
leaves_per_pod = 2
leaf = { radix = 64, down = 32, up = 32 }
spine = { radix = 64 }
[[planes]]
leaves_per_pod = 2
leaf = { radix = 48, down = 32, up = 32 }
spine = { radix = 64 }
"#;
        let e = Spec::parse(text, Format::Toml, "f.toml")
            .unwrap()
            .build("f.toml")
            .unwrap_err();
        assert_eq!(
            e.to_string(),
            "f.toml: planes[1].leaf.radix: 48 ports cannot give 32 down + 32 up"
        );
    }

    #[test]
    fn type_errors_have_paths_in_all_formats() {
        let toml_text = two_tier(64).replace("radix = 64, down", "radix = \"many\", down");
        let e = Spec::parse(&toml_text, Format::Toml, "a.toml")
            .unwrap_err()
            .to_string();
        assert!(
            e.starts_with("a.toml: planes[0].leaf.radix: invalid type: string \"many\""),
            "{e}"
        );
        let yaml = "name: t\nhosts: {rate: 100G}\nplanes:\n  - leaves_per_pod: 2\n    leaf: {radix: 64, up: -3}\n    spine: {radix: 64}\n";
        let e = Spec::parse(yaml, Format::Yaml, "a.yaml")
            .unwrap_err()
            .to_string();
        assert!(
            e.starts_with("a.yaml: planes[0].leaf.up: invalid type: integer `-3`, expected u32"),
            "{e}"
        );
        let json = r#"{"name":"t","hosts":{"rate":"fast"},"planes":[]}"#;
        let e = Spec::parse(json, Format::Json, "a.json")
            .unwrap_err()
            .to_string();
        assert!(
            e.starts_with("a.json: hosts.rate: `fast` is not a rate"),
            "{e}"
        );
        let json = r#"{"name":"t","hosts":{"rate":"1G","colour":1},"planes":[]}"#;
        let e = Spec::parse(json, Format::Json, "a.json")
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("hosts.colour") || e.contains("unknown field `colour`"),
            "{e}"
        );
    }

    #[test]
    fn uneven_spread_is_rejected() {
        let t = two_tier(64).replace("spine = { radix = 64 }", "spine = { radix = 2 }");
        let e = Spec::parse(&t, Format::Toml, "x")
            .unwrap()
            .build("x")
            .unwrap_err()
            .to_string();
        assert_eq!(
            e,
            "x: planes[0].leaf.up: 32 uplinks cannot be spread evenly over 64 spines (expected a multiple of 64)"
        );
        let t = two_tier(64).replace("spine = { radix = 64 }", "spine = { radix = 60 }");
        let e = Spec::parse(&t, Format::Toml, "x")
            .unwrap()
            .build("x")
            .unwrap_err()
            .to_string();
        assert_eq!(
            e,
            "x: planes[0].spine.down: 60 down ports per spine do not divide the 128 leaf uplinks of the plane (expected a divisor of 128)"
        );
    }

    #[test]
    fn too_many_servers() {
        let t = two_tier(64).replace("rate = \"100G\"", "rate = \"100G\"\nservers = 1000");
        let e = Spec::parse(&t, Format::Toml, "x")
            .unwrap()
            .build("x")
            .unwrap_err()
            .to_string();
        assert_eq!(
            e,
            "x: hosts.servers: 1000 servers do not fit: the planes have ports for at most 128"
        );
    }

    #[test]
    fn leaf_spine_counts() {
        let f = Spec::parse(&two_tier(64), Format::Toml, "x")
            .unwrap()
            .build("x")
            .unwrap();
        assert_eq!(f.num_hosts(), 128);
        assert_eq!(f.switches_in_tier(1).count(), 4);
        assert_eq!(f.switches_in_tier(2).count(), 2);
        assert_eq!(f.num_links(), 128 + 4 * 32);
        let leaf = NodeId(128);
        assert_eq!(f.degree(leaf), 64);
        assert_eq!(f.direction(leaf, 0), Direction::Down);
        assert_eq!(f.direction(leaf, 32), Direction::Up);
        assert_eq!(f.node_name(leaf), "leaf0");
        assert_eq!(f.node_name(NodeId(0)), "host0-nic0");
    }
}
