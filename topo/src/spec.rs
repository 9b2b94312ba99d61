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

use crate::model::*;
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
    /// Servers, NICs, GPUs.
    pub hosts: HostSpec,
    /// Planes (at least one).
    pub planes: Vec<PlaneSpec>,
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

fn parse_err(origin: &str, path: String, msg: String) -> Error {
    let msg = msg
        .strip_prefix(&format!("{path}: "))
        .map(str::to_string)
        .unwrap_or(msg);
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

impl Spec {
    /// Parses spec text; `origin` (usually the file name) goes into error messages.
    pub fn parse(text: &str, format: Format, origin: &str) -> Result<Spec> {
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
        self.planes.iter().map(|p| p.copies).sum()
    }

    /// Validates and builds the fabric. `origin` goes into error messages.
    pub fn build(&self, origin: &str) -> Result<Fabric> {
        let plan = self.validate(origin)?;
        Ok(generate(self, &plan))
    }

    /// Checks the spec and computes the derived counts.
    pub fn validate(&self, origin: &str) -> Result<Plan> {
        let err = |path: String, msg: String| Error::Spec {
            origin: origin.to_string(),
            path,
            msg,
        };
        let h = &self.hosts;
        if self.planes.is_empty() {
            return Err(err(
                "planes".into(),
                "at least one plane is required ([[planes]])".into(),
            ));
        }
        for (name, v) in [
            ("gpus_per_server", h.gpus_per_server),
            ("nics_per_server", h.nics_per_server),
            ("ports_per_nic", h.ports_per_nic),
        ] {
            if v == 0 {
                return Err(err(format!("hosts.{name}"), "must be at least 1".into()));
            }
        }
        let nplanes = self.num_planes();
        if nplanes == 0 || nplanes > 64 {
            return Err(err(
                "planes".into(),
                format!("{nplanes} planes in total; expected 1 to 64"),
            ));
        }
        if h.ports_per_nic > nplanes {
            return Err(err(
                "hosts.ports_per_nic".into(),
                format!(
                    "{} ports per NIC but only {nplanes} planes: each port of a NIC must be in a different plane",
                    h.ports_per_nic
                ),
            ));
        }
        let nic_ports = h.nics_per_server * h.ports_per_nic;
        if !nic_ports.is_multiple_of(nplanes) {
            return Err(err(
                "hosts.nics_per_server".into(),
                format!(
                    "{} NICs × {} ports = {nic_ports} ports per server cannot be spread evenly over {nplanes} planes",
                    h.nics_per_server, h.ports_per_nic
                ),
            ));
        }
        let rails = nic_ports / nplanes;
        if let Some(d) = h.scale_up_domain
            && (d == 0 || d % h.gpus_per_server != 0)
        {
            return Err(err(
                "hosts.scale_up_domain".into(),
                format!(
                    "{d} GPUs is not a whole number of {}-GPU servers",
                    h.gpus_per_server
                ),
            ));
        }
        let mut planes = Vec::new();
        let mut capacity = u64::MAX;
        for (i, p) in self.planes.iter().enumerate() {
            let at = |f: &str| format!("planes[{i}].{f}");
            if p.copies == 0 {
                return Err(err(at("copies"), "must be at least 1".into()));
            }
            if p.pods == 0 {
                return Err(err(at("pods"), "must be at least 1".into()));
            }
            if p.leaves_per_pod == 0 {
                return Err(err(at("leaves_per_pod"), "must be at least 1".into()));
            }
            let df = p.kind == PlaneKind::DragonflyPlus;
            if df && p.core.is_some() {
                return Err(err(
                    at("core"),
                    "a Dragonfly+ plane has no core tier (remove [core])".into(),
                ));
            }
            if df && p.pods < 2 {
                return Err(err(
                    at("pods"),
                    "a Dragonfly+ plane needs at least 2 groups".into(),
                ));
            }
            let leaf_rate = h.rate;
            let leaf_up_rate = p.leaf.uplink_rate.unwrap_or(leaf_rate);
            let spine_up_rate = p.spine.uplink_rate.unwrap_or(leaf_up_rate);
            let leaf_down = check_tier(&p.leaf, &at("leaf"), leaf_rate, leaf_up_rate, origin)?;
            let spine_down =
                check_tier(&p.spine, &at("spine"), leaf_up_rate, spine_up_rate, origin)?;
            if leaf_down == 0 {
                return Err(err(
                    at("leaf.down"),
                    "a leaf needs at least one host port".into(),
                ));
            }
            if p.leaf.up == 0 {
                return Err(err(
                    at("leaf.up"),
                    "a leaf needs at least one uplink".into(),
                ));
            }
            if spine_down == 0 {
                return Err(err(
                    at("spine.down"),
                    "a spine needs at least one down port".into(),
                ));
            }
            let leaves = p.pods as u64 * p.leaves_per_pod as u64;
            let per_pod_spines = p.core.is_some() || df;
            let uplinks = if per_pod_spines {
                p.leaves_per_pod as u64
            } else {
                leaves
            } * p.leaf.up as u64;
            if !uplinks.is_multiple_of(spine_down as u64) {
                return Err(err(
                    at("spine.down"),
                    format!(
                        "{spine_down} down ports per spine do not divide the {uplinks} leaf uplinks {} (expected a divisor of {uplinks})",
                        if per_pod_spines {
                            "of a pod"
                        } else {
                            "of the plane"
                        }
                    ),
                ));
            }
            let spines = (uplinks / spine_down as u64) as u32;
            if p.leaf.up % spines != 0 {
                return Err(err(
                    at("leaf.up"),
                    format!(
                        "{} uplinks cannot be spread evenly over {spines} spines{} (expected a multiple of {spines})",
                        p.leaf.up,
                        if per_pod_spines { " per pod" } else { "" }
                    ),
                ));
            }
            let mut cores = 0u32;
            let mut core_down = 0;
            if let Some(c) = &p.core {
                let core_rate = spine_up_rate;
                core_down = check_tier(
                    c,
                    &at("core"),
                    core_rate,
                    c.uplink_rate.unwrap_or(core_rate),
                    origin,
                )?;
                if p.spine.up == 0 {
                    return Err(err(
                        at("spine.up"),
                        "a 3-tier plane needs aggregation uplinks to the core".into(),
                    ));
                }
                if c.up != 0 {
                    return Err(err(
                        at("core.up"),
                        "the core is the top tier: expected 0 up ports".into(),
                    ));
                }
                let agg_up = p.pods as u64 * p.spine.up as u64;
                if core_down == 0 || !agg_up.is_multiple_of(core_down as u64) {
                    return Err(err(
                        at("core.down"),
                        format!(
                            "{core_down} down ports per core do not divide the {agg_up} uplinks of aggregation switch j across all pods (pods × spine.up)"
                        ),
                    ));
                }
                cores = (agg_up / core_down as u64) as u32;
                if p.spine.up % cores != 0 {
                    return Err(err(
                        at("spine.up"),
                        format!(
                            "{} uplinks cannot be spread evenly over the {cores} cores of a core group (expected a multiple of {cores})",
                            p.spine.up
                        ),
                    ));
                }
            }
            if df {
                let global = spines as u64 * p.spine.up as u64;
                if p.spine.up == 0 || !global.is_multiple_of(p.pods as u64 - 1) {
                    return Err(err(
                        at("spine.up"),
                        format!(
                            "{spines} spines × {} global ports = {global} per group cannot be spread evenly over the {} other groups",
                            p.spine.up,
                            p.pods - 1
                        ),
                    ));
                }
            }
            // host attachment capacity per pod
            let spp = if h.rail_optimized {
                if p.leaves_per_pod % rails != 0 {
                    return Err(err(
                        at("leaves_per_pod"),
                        format!(
                            "rail-optimized: {} leaves per pod cannot be split into {rails} rails (expected a multiple of {rails})",
                            p.leaves_per_pod
                        ),
                    ));
                }
                (p.leaves_per_pod / rails) as u64 * leaf_down as u64
            } else {
                let slots = p.leaves_per_pod as u64 * leaf_down as u64;
                if !slots.is_multiple_of(rails as u64) {
                    return Err(err(
                        at("leaf.down"),
                        format!(
                            "{} host ports per pod cannot hold whole servers of {rails} ports in this plane",
                            slots
                        ),
                    ));
                }
                slots / rails as u64
            };
            capacity = capacity.min(spp * p.pods as u64);
            for _ in 0..p.copies {
                planes.push(PlanePlan {
                    spec: i,
                    kind: p.kind,
                    pods: p.pods,
                    lpp: p.leaves_per_pod,
                    leaf_down,
                    leaf_up: p.leaf.up,
                    spines,
                    per_pod_spines,
                    spine_down,
                    spine_up: p.spine.up,
                    cores,
                    core_down,
                    servers_per_pod: spp as u32,
                    leaf_up_rate: leaf_up_rate.0,
                    spine_up_rate: spine_up_rate.0,
                    leaf_delay: p.leaf.delay_ns,
                    spine_delay: p.spine.delay_ns,
                });
            }
        }
        let servers = match h.servers {
            Some(0) => return Err(err("hosts.servers".into(), "must be at least 1".into())),
            Some(s) if s as u64 > capacity => {
                return Err(err(
                    "hosts.servers".into(),
                    format!("{s} servers do not fit: the planes have ports for at most {capacity}"),
                ));
            }
            Some(s) => s,
            None => capacity as u32,
        };
        let nodes = servers as u64 * h.nics_per_server as u64
            + planes
                .iter()
                .map(|p| {
                    p.pods as u64 * p.lpp as u64
                        + p.spines as u64 * if p.per_pod_spines { p.pods as u64 } else { 1 }
                        + p.cores as u64 * p.spines as u64
                })
                .sum::<u64>();
        if nodes > (u32::MAX / 2) as u64 {
            return Err(err(
                "planes".into(),
                format!("{nodes} nodes is more than this tool handles (2^31)"),
            ));
        }
        Ok(Plan {
            servers,
            rails,
            planes,
        })
    }
}

/// Derived counts of a validated spec.
#[derive(Debug, Clone)]
pub struct Plan {
    /// Servers.
    pub servers: u32,
    /// Attachments per server per plane.
    pub rails: u32,
    pub(crate) planes: Vec<PlanePlan>,
}

#[derive(Debug, Clone)]
pub(crate) struct PlanePlan {
    #[allow(dead_code)]
    spec: usize,
    kind: PlaneKind,
    pods: u32,
    lpp: u32,
    leaf_down: u32,
    leaf_up: u32,
    /// Spines per pod (per_pod_spines) or per plane.
    spines: u32,
    per_pod_spines: bool,
    #[allow(dead_code)]
    spine_down: u32,
    spine_up: u32,
    /// Cores per core group (there are `spines` groups).
    cores: u32,
    #[allow(dead_code)]
    core_down: u32,
    servers_per_pod: u32,
    leaf_up_rate: u64,
    spine_up_rate: u64,
    leaf_delay: Option<u32>,
    spine_delay: Option<u32>,
}

/// Checks `down + up ≤ radix` (bandwidth-weighted when `port_rate` is given); returns `down`.
fn check_tier(t: &TierSpec, at: &str, down_rate: Rate, up_rate: Rate, origin: &str) -> Result<u32> {
    let err = |f: &str, msg: String| Error::Spec {
        origin: origin.to_string(),
        path: format!("{at}.{f}"),
        msg,
    };
    if t.radix == 0 || t.radix > u16::MAX as u32 / 2 {
        return Err(err(
            "radix",
            format!("{} ports; expected 1 to 32767", t.radix),
        ));
    }
    match t.port_rate {
        None => {
            let down = match t.down {
                Some(d) => d,
                None => t.radix.checked_sub(t.up).ok_or_else(|| {
                    err(
                        "radix",
                        format!("{} ports cannot give {} up", t.radix, t.up),
                    )
                })?,
            };
            if down as u64 + t.up as u64 > t.radix as u64 {
                return Err(err(
                    "radix",
                    format!("{} ports cannot give {down} down + {} up", t.radix, t.up),
                ));
            }
            Ok(down)
        }
        Some(pr) => {
            // lanes in units of 1/1000 port
            let units = |rate: Rate| (rate.0 as u128 * 1000).div_ceil(pr.0 as u128) as u64;
            let total = t.radix as u64 * 1000;
            let up_units = t.up as u64 * units(up_rate);
            let down = match t.down {
                Some(d) => d,
                None => (total.saturating_sub(up_units) / units(down_rate).max(1)) as u32,
            };
            let used = down as u64 * units(down_rate) + up_units;
            if used > total {
                return Err(err(
                    "radix",
                    format!(
                        "{} ports of {pr} cannot give {down} down × {down_rate} + {} up × {up_rate}",
                        t.radix, t.up
                    ),
                ));
            }
            Ok(down)
        }
    }
}

/// Builds the fabric of a validated spec.
fn generate(spec: &Spec, plan: &Plan) -> Fabric {
    let h = &spec.hosts;
    let np = plan.planes.len();
    let layout = HostLayout {
        servers: plan.servers,
        nics_per_server: h.nics_per_server,
        gpus_per_server: h.gpus_per_server,
        scale_up_domain: h.scale_up_domain.unwrap_or(h.gpus_per_server),
    };
    let mut b = FabricBuilder::new(&spec.name, layout, np);
    let pre = |p: usize| {
        if np > 1 {
            format!("p{p}-")
        } else {
            String::new()
        }
    };
    // Nodes, plane by plane.
    let mut starts = Vec::new(); // (leaf0, spine0, core0)
    for (pi, pp) in plan.planes.iter().enumerate() {
        let pl = pre(pi);
        let p16 = pi as u16;
        let df = pp.kind == PlaneKind::DragonflyPlus;
        let leaf0 = b.next_id();
        for pod in 0..pp.pods {
            for l in 0..pp.lpp {
                if df {
                    b.add_node(TIER_LEAF, p16, pod, format_args!("{pl}g{pod}-leaf{l}"));
                } else if pp.pods > 1 {
                    b.add_node(TIER_LEAF, p16, pod, format_args!("{pl}pod{pod}-leaf{l}"));
                } else {
                    b.add_node(TIER_LEAF, p16, pod, format_args!("{pl}leaf{l}"));
                }
            }
        }
        let spine0 = b.next_id();
        if pp.per_pod_spines {
            for pod in 0..pp.pods {
                for s in 0..pp.spines {
                    if df {
                        b.add_node(TIER_SPINE, p16, pod, format_args!("{pl}g{pod}-spine{s}"));
                    } else {
                        b.add_node(TIER_SPINE, p16, pod, format_args!("{pl}pod{pod}-agg{s}"));
                    }
                }
            }
        } else {
            for s in 0..pp.spines {
                b.add_node(TIER_SPINE, p16, NONE, format_args!("{pl}spine{s}"));
            }
        }
        let core0 = b.next_id();
        for g in 0..if pp.cores > 0 { pp.spines } else { 0 } {
            for c in 0..pp.cores {
                b.add_node(TIER_CORE, p16, NONE, format_args!("{pl}core{g}-{c}"));
            }
        }
        let end = b.next_id();
        b.f.planes.push(PlaneInfo {
            kind: pp.kind,
            tiers: [leaf0..spine0, spine0..core0, core0..end],
            pods: pp.pods,
            external_up: [0, if pp.cores == 0 && !df { pp.spine_up } else { 0 }, 0],
            external_up_rate_bps: [0, pp.spine_up_rate, 0],
        });
        starts.push((leaf0, spine0, core0));
    }
    // Host links: all planes first, so every leaf's down ports precede its up ports.
    let nplanes = np as u32;
    for (pi, pp) in plan.planes.iter().enumerate() {
        let (leaf0, _, _) = starts[pi];
        for s in 0..plan.servers {
            let pod = s / pp.servers_per_pod;
            let ls = s % pp.servers_per_pod;
            for j in 0..plan.rails {
                let g = j * nplanes + pi as u32;
                let r = g / h.ports_per_nic;
                let host = NodeId(s * h.nics_per_server + r);
                let leaf_local = if h.rail_optimized {
                    j * (pp.lpp / plan.rails) + ls / pp.leaf_down
                } else {
                    (ls * plan.rails + j) / pp.leaf_down
                };
                let leaf = NodeId(leaf0 + pod * pp.lpp + leaf_local);
                b.add_link(host, leaf, h.rate.0, h.delay_ns);
            }
        }
    }
    // Leaf → spine.
    for (pi, pp) in plan.planes.iter().enumerate() {
        let (leaf0, spine0, _) = starts[pi];
        for pod in 0..pp.pods {
            for l in 0..pp.lpp {
                let leaf = NodeId(leaf0 + pod * pp.lpp + l);
                for u in 0..pp.leaf_up {
                    let s = if pp.per_pod_spines {
                        pod * pp.spines + u % pp.spines
                    } else {
                        u % pp.spines
                    };
                    b.add_link(leaf, NodeId(spine0 + s), pp.leaf_up_rate, pp.leaf_delay);
                }
            }
        }
    }
    // Aggregation → core.
    for (pi, pp) in plan.planes.iter().enumerate() {
        if pp.cores == 0 {
            continue;
        }
        let (_, spine0, core0) = starts[pi];
        for pod in 0..pp.pods {
            for j in 0..pp.spines {
                let agg = NodeId(spine0 + pod * pp.spines + j);
                for u in 0..pp.spine_up {
                    let c = NodeId(core0 + j * pp.cores + u % pp.cores);
                    b.add_link(agg, c, pp.spine_up_rate, pp.spine_delay);
                }
            }
        }
    }
    // Dragonfly+ global links: port i of group g goes to group g + 1 + (i mod (G-1)).
    for (pi, pp) in plan.planes.iter().enumerate() {
        if pp.kind != PlaneKind::DragonflyPlus {
            continue;
        }
        let (_, spine0, _) = starts[pi];
        let g_n = pp.pods;
        let hh = pp.spine_up;
        let per_group = pp.spines * hh;
        for g in 0..g_n {
            for i in 0..per_group {
                let off = 1 + i % (g_n - 1);
                let m = i / (g_n - 1);
                let g2 = (g + off) % g_n;
                if g < g2 {
                    let i2 = m * (g_n - 1) + (g_n - off - 1);
                    let s1 = NodeId(spine0 + g * pp.spines + i / hh);
                    let s2 = NodeId(spine0 + g2 * pp.spines + i2 / hh);
                    b.add_link(s1, s2, pp.spine_up_rate, pp.spine_delay);
                }
            }
        }
    }
    b.finish()
}

#[cfg(test)]
mod tests {
    use super::*;

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
