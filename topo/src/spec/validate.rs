//! Validation of a [`Spec`] in named steps ([`Checker`]), with checked arithmetic and size
//! limits: every spec number is bounded before it multiplies, so no input overflows, panics
//! or builds a fabric past [`MAX_HOSTS`], [`MAX_SWITCHES`] or [`MAX_LINKS`].

use super::{HostSpec, PlaneSpec, Spec, TierSpec};
use crate::model::PlaneKind;
use crate::units::Rate;
use crate::{Error, Result};

impl Spec {
    /// Checks the spec and computes the derived counts, in named steps: the hosts
    /// ([`Checker::hosts`]), each plane ([`Checker::plane`]: counts, tiers, spines,
    /// cores, Dragonfly+ global links, server slots), the server count, and the size
    /// limits ([`MAX_HOSTS`], [`MAX_SWITCHES`], [`MAX_LINKS`]). All arithmetic on spec
    /// numbers is done in `u64` after each factor is bounded, so no input overflows.
    pub fn validate(&self, origin: &str) -> Result<Plan> {
        let c = Checker { origin };
        let hp = c.hosts(self)?;
        let mut planes = Vec::new();
        let mut capacity = u64::MAX;
        for (i, p) in self.planes.iter().enumerate() {
            let (pp, cap) = c.plane(i, p, &self.hosts, hp.rails)?;
            capacity = capacity.min(cap);
            planes.extend(std::iter::repeat_n(pp, p.copies as usize));
        }
        let servers = c.servers(self.hosts.servers, capacity)?;
        c.size(&self.hosts, hp, servers, &planes)?;
        Ok(Plan {
            servers,
            rails: hp.rails,
            planes,
        })
    }
}

/// The largest fabric [`Spec::build`] builds: host NICs. A 3-tier k-ary fat-tree has k³/4
/// hosts, so the largest one is k = 160 (1,024,000 hosts).
pub const MAX_HOSTS: u64 = 1 << 20;
/// The largest fabric [`Spec::build`] builds: switches.
pub const MAX_SWITCHES: u64 = 1 << 18;
/// The largest fabric [`Spec::build`] builds: links (host links included).
pub const MAX_LINKS: u64 = 1 << 22;

pub(crate) fn limits() -> String {
    format!(
        "the largest fabric this tool builds has {MAX_HOSTS} hosts, {MAX_SWITCHES} switches and {MAX_LINKS} links"
    )
}

/// Most GPUs one server may hold (a scale-up rack is `scale_up_domain`, not a server).
pub const MAX_GPUS_PER_SERVER: u32 = 1024;
/// Most ports (links) one switch can have.
pub const MAX_PORTS: u32 = u16::MAX as u32 / 2;

/// Counts derived from the host section.
#[derive(Debug, Clone, Copy)]
struct HostPlan {
    nplanes: u32,
    rails: u32,
}

/// The validation steps of [`Spec::validate`]; every error names `origin` and a field.
struct Checker<'a> {
    origin: &'a str,
}

impl Checker<'_> {
    fn err(&self, path: impl Into<String>, msg: impl Into<String>) -> Error {
        Error::Spec {
            origin: self.origin.to_string(),
            path: path.into(),
            msg: msg.into(),
        }
    }

    /// Hosts: counts at least 1, NIC ports spread evenly over the planes.
    fn hosts(&self, s: &Spec) -> Result<HostPlan> {
        let h = &s.hosts;
        if s.planes.is_empty() {
            return Err(self.err("planes", "at least one plane is required ([[planes]])"));
        }
        for (name, v) in [
            ("gpus_per_server", h.gpus_per_server),
            ("nics_per_server", h.nics_per_server),
            ("ports_per_nic", h.ports_per_nic),
        ] {
            if v == 0 {
                return Err(self.err(format!("hosts.{name}"), "must be at least 1"));
            }
        }
        if h.gpus_per_server > MAX_GPUS_PER_SERVER {
            return Err(self.err(
                "hosts.gpus_per_server",
                format!(
                    "{} GPUs per server; expected 1 to {MAX_GPUS_PER_SERVER}",
                    h.gpus_per_server
                ),
            ));
        }
        if h.nics_per_server as u64 > MAX_HOSTS {
            return Err(self.err(
                "hosts.nics_per_server",
                format!("{} NICs per server; {}", h.nics_per_server, limits()),
            ));
        }
        let nplanes = s.num_planes();
        if nplanes == 0 || nplanes > 64 {
            let total: u64 = s.planes.iter().map(|p| p.copies as u64).sum();
            return Err(self.err(
                "planes",
                format!("{total} planes in total; expected 1 to 64"),
            ));
        }
        if h.ports_per_nic > nplanes {
            return Err(self.err(
                "hosts.ports_per_nic",
                format!(
                    "{} ports per NIC but only {nplanes} planes: each port of a NIC must be in a different plane",
                    h.ports_per_nic
                ),
            ));
        }
        // ≤ 2^20 × 64: fits.
        let nic_ports = h.nics_per_server * h.ports_per_nic;
        if !nic_ports.is_multiple_of(nplanes) {
            return Err(self.err(
                "hosts.nics_per_server",
                format!(
                    "{} NICs × {} ports = {nic_ports} ports per server cannot be spread evenly over {nplanes} planes",
                    h.nics_per_server, h.ports_per_nic
                ),
            ));
        }
        if let Some(d) = h.scale_up_domain
            && (d == 0 || d % h.gpus_per_server != 0)
        {
            return Err(self.err(
                "hosts.scale_up_domain",
                format!(
                    "{d} GPUs is not a whole number of {}-GPU servers",
                    h.gpus_per_server
                ),
            ));
        }
        Ok(HostPlan {
            nplanes,
            rails: nic_ports / nplanes,
        })
    }

    /// One `[[planes]]` entry: its plan and how many servers it has ports for.
    fn plane(&self, i: usize, p: &PlaneSpec, h: &HostSpec, rails: u32) -> Result<(PlanePlan, u64)> {
        let at = |f: &str| format!("planes[{i}].{f}");
        self.plane_counts(p, &at)?;
        let df = p.kind == PlaneKind::DragonflyPlus;
        let leaf_up_rate = p.leaf.uplink_rate.unwrap_or(h.rate);
        let spine_up_rate = p.spine.uplink_rate.unwrap_or(leaf_up_rate);
        let leaf_down = check_tier(&p.leaf, &at("leaf"), h.rate, leaf_up_rate, self.origin)?;
        let spine_down = check_tier(
            &p.spine,
            &at("spine"),
            leaf_up_rate,
            spine_up_rate,
            self.origin,
        )?;
        if leaf_down == 0 {
            return Err(self.err(at("leaf.down"), "a leaf needs at least one host port"));
        }
        if p.leaf.up == 0 {
            return Err(self.err(at("leaf.up"), "a leaf needs at least one uplink"));
        }
        if spine_down == 0 {
            return Err(self.err(at("spine.down"), "a spine needs at least one down port"));
        }
        let per_pod_spines = p.core.is_some() || df;
        let spines = self.spines(p, &at, spine_down, per_pod_spines)?;
        let cores = match &p.core {
            Some(c) => self.cores(p, c, &at, spines, spine_up_rate)?,
            None => 0,
        };
        if df {
            self.global_links(p, &at, spines)?;
        }
        let spp = self.servers_per_pod(p, &at, h.rail_optimized, rails, leaf_down)?;
        let plan = PlanePlan {
            kind: p.kind,
            pods: p.pods,
            lpp: p.leaves_per_pod,
            leaf_down,
            leaf_up: p.leaf.up,
            spines,
            per_pod_spines,
            spine_up: p.spine.up,
            cores,
            servers_per_pod: spp,
            leaf_up_rate: leaf_up_rate.0,
            spine_up_rate: spine_up_rate.0,
            leaf_delay: p.leaf.delay_ns,
            spine_delay: p.spine.delay_ns,
            radix: [
                p.leaf.radix,
                p.spine.radix,
                p.core.as_ref().map_or(0, |c| c.radix),
            ],
        };
        Ok((plan, spp as u64 * p.pods as u64))
    }

    /// Copies, pods and leaves at least 1, Dragonfly+ shape, and at most
    /// [`MAX_SWITCHES`] leaves (which bounds every product below).
    fn plane_counts(&self, p: &PlaneSpec, at: &dyn Fn(&str) -> String) -> Result<()> {
        for (name, v) in [
            ("copies", p.copies),
            ("pods", p.pods),
            ("leaves_per_pod", p.leaves_per_pod),
        ] {
            if v == 0 {
                return Err(self.err(at(name), "must be at least 1"));
            }
        }
        let df = p.kind == PlaneKind::DragonflyPlus;
        if df && p.core.is_some() {
            return Err(self.err(
                at("core"),
                "a Dragonfly+ plane has no core tier (remove [core])",
            ));
        }
        if df && p.pods < 2 {
            return Err(self.err(at("pods"), "a Dragonfly+ plane needs at least 2 groups"));
        }
        let leaves = p.pods as u64 * p.leaves_per_pod as u64;
        if leaves > MAX_SWITCHES {
            return Err(self.err(
                at("leaves_per_pod"),
                format!(
                    "{} pods × {} leaves per pod = {leaves} leaves; {}",
                    p.pods,
                    p.leaves_per_pod,
                    limits()
                ),
            ));
        }
        Ok(())
    }

    /// Spines per pod (or per plane): leaf uplinks / `spine.down`, spread evenly.
    fn spines(
        &self,
        p: &PlaneSpec,
        at: &dyn Fn(&str) -> String,
        spine_down: u32,
        per_pod: bool,
    ) -> Result<u32> {
        let leaves = if per_pod {
            p.leaves_per_pod as u64
        } else {
            p.pods as u64 * p.leaves_per_pod as u64
        };
        // ≤ 2^18 leaves × 2^15 ports.
        let uplinks = leaves * p.leaf.up as u64;
        if !uplinks.is_multiple_of(spine_down as u64) {
            return Err(self.err(
                at("spine.down"),
                format!(
                    "{spine_down} down ports per spine do not divide the {uplinks} leaf uplinks {} (expected a divisor of {uplinks})",
                    if per_pod { "of a pod" } else { "of the plane" }
                ),
            ));
        }
        let spines = uplinks / spine_down as u64;
        let total = spines * if per_pod { p.pods as u64 } else { 1 };
        if total > MAX_SWITCHES {
            return Err(self.err(
                at("spine.down"),
                format!("{total} spines in the plane; {}", limits()),
            ));
        }
        let spines = spines as u32;
        if !p.leaf.up.is_multiple_of(spines) {
            return Err(self.err(
                at("leaf.up"),
                format!(
                    "{} uplinks cannot be spread evenly over {spines} spines{} (expected a multiple of {spines})",
                    p.leaf.up,
                    if per_pod { " per pod" } else { "" }
                ),
            ));
        }
        Ok(spines)
    }

    /// Cores per core group of a 3-tier plane.
    fn cores(
        &self,
        p: &PlaneSpec,
        c: &TierSpec,
        at: &dyn Fn(&str) -> String,
        spines: u32,
        core_rate: Rate,
    ) -> Result<u32> {
        let core_down = check_tier(
            c,
            &at("core"),
            core_rate,
            c.uplink_rate.unwrap_or(core_rate),
            self.origin,
        )?;
        if p.spine.up == 0 {
            return Err(self.err(
                at("spine.up"),
                "a 3-tier plane needs aggregation uplinks to the core",
            ));
        }
        if c.up != 0 {
            return Err(self.err(
                at("core.up"),
                "the core is the top tier: expected 0 up ports",
            ));
        }
        // ≤ 2^18 pods × 2^15 ports.
        let agg_up = p.pods as u64 * p.spine.up as u64;
        if core_down == 0 || !agg_up.is_multiple_of(core_down as u64) {
            return Err(self.err(
                at("core.down"),
                format!(
                    "{core_down} down ports per core do not divide the {agg_up} uplinks of aggregation switch j across all pods (pods × spine.up)"
                ),
            ));
        }
        let cores = agg_up / core_down as u64;
        let total = cores.saturating_mul(spines as u64);
        if total > MAX_SWITCHES {
            return Err(self.err(
                at("core.down"),
                format!("{total} core switches in the plane; {}", limits()),
            ));
        }
        let cores = cores as u32;
        if !p.spine.up.is_multiple_of(cores) {
            return Err(self.err(
                at("spine.up"),
                format!(
                    "{} uplinks cannot be spread evenly over the {cores} cores of a core group (expected a multiple of {cores})",
                    p.spine.up
                ),
            ));
        }
        Ok(cores)
    }

    /// Dragonfly+: global ports of a group spread evenly over the other groups.
    fn global_links(&self, p: &PlaneSpec, at: &dyn Fn(&str) -> String, spines: u32) -> Result<()> {
        let global = spines as u64 * p.spine.up as u64;
        if p.spine.up == 0 || !global.is_multiple_of(p.pods as u64 - 1) {
            return Err(self.err(
                at("spine.up"),
                format!(
                    "{spines} spines × {} global ports = {global} per group cannot be spread evenly over the {} other groups",
                    p.spine.up,
                    p.pods - 1
                ),
            ));
        }
        Ok(())
    }

    /// Servers a pod has host ports for.
    fn servers_per_pod(
        &self,
        p: &PlaneSpec,
        at: &dyn Fn(&str) -> String,
        rail_optimized: bool,
        rails: u32,
        leaf_down: u32,
    ) -> Result<u32> {
        // ≤ 2^18 leaves × 2^15 ports = 2^33: checked against MAX_HOSTS before the cast.
        let spp = if rail_optimized {
            if !p.leaves_per_pod.is_multiple_of(rails) {
                return Err(self.err(
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
                return Err(self.err(
                    at("leaf.down"),
                    format!(
                        "{slots} host ports per pod cannot hold whole servers of {rails} ports in this plane"
                    ),
                ));
            }
            slots / rails as u64
        };
        if spp.saturating_mul(p.pods as u64) > MAX_HOSTS {
            return Err(self.err(
                at("leaves_per_pod"),
                format!("{} servers per pod × {} pods; {}", spp, p.pods, limits()),
            ));
        }
        Ok(spp as u32)
    }

    /// The server count: given (at least 1, at most what the planes have ports for) or
    /// as many as fit.
    fn servers(&self, given: Option<u32>, capacity: u64) -> Result<u32> {
        match given {
            Some(0) => Err(self.err("hosts.servers", "must be at least 1")),
            Some(s) if s as u64 > capacity => Err(self.err(
                "hosts.servers",
                format!("{s} servers do not fit: the planes have ports for at most {capacity}"),
            )),
            Some(s) => Ok(s),
            // capacity ≤ MAX_HOSTS (checked per plane).
            None => Ok(capacity as u32),
        }
    }

    /// Hosts, switches and links within [`MAX_HOSTS`], [`MAX_SWITCHES`], [`MAX_LINKS`].
    fn size(&self, h: &HostSpec, hp: HostPlan, servers: u32, planes: &[PlanePlan]) -> Result<()> {
        let hosts = servers as u64 * h.nics_per_server as u64;
        let mut switches = 0u64;
        let mut links = servers as u64 * hp.rails as u64 * hp.nplanes as u64;
        for p in planes {
            let (sw, l) = p.size();
            switches = switches.saturating_add(sw);
            links = links.saturating_add(l);
        }
        if hosts > MAX_HOSTS || switches > MAX_SWITCHES || links > MAX_LINKS {
            let path = if hosts > MAX_HOSTS {
                "hosts.servers"
            } else {
                "planes"
            };
            return Err(self.err(
                path,
                format!(
                    "this fabric would have {hosts} hosts, {switches} switches and {links} links; {}",
                    limits()
                ),
            ));
        }
        Ok(())
    }
}

impl PlanePlan {
    /// Switches and switch–switch links of one plane (saturating).
    fn size(&self) -> (u64, u64) {
        let leaves = self.pods as u64 * self.lpp as u64;
        let spines = self.spines as u64
            * if self.per_pod_spines {
                self.pods as u64
            } else {
                1
            };
        let cores = self.cores as u64 * self.spines as u64;
        let leaf_up = leaves * self.leaf_up as u64;
        let spine_up = match (self.cores > 0, self.kind) {
            (true, _) => spines * self.spine_up as u64,
            (false, PlaneKind::DragonflyPlus) => spines * self.spine_up as u64 / 2,
            _ => 0,
        };
        (leaves + spines + cores, leaf_up.saturating_add(spine_up))
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
    pub(super) kind: PlaneKind,
    pub(super) pods: u32,
    pub(super) lpp: u32,
    pub(super) leaf_down: u32,
    pub(super) leaf_up: u32,
    /// Spines per pod (per_pod_spines) or per plane.
    pub(super) spines: u32,
    pub(super) per_pod_spines: bool,
    pub(super) spine_up: u32,
    /// Cores per core group (there are `spines` groups).
    pub(super) cores: u32,
    pub(super) servers_per_pod: u32,
    pub(super) leaf_up_rate: u64,
    pub(super) spine_up_rate: u64,
    pub(super) leaf_delay: Option<u32>,
    pub(super) spine_delay: Option<u32>,
    /// Ports per switch of each tier as the spec states (0: no such tier).
    pub(super) radix: [u32; 3],
}

/// Checks `down + up ≤ radix` (bandwidth-weighted when `port_rate` is given); returns `down`.
fn check_tier(t: &TierSpec, at: &str, down_rate: Rate, up_rate: Rate, origin: &str) -> Result<u32> {
    let err = |f: &str, msg: String| Error::Spec {
        origin: origin.to_string(),
        path: format!("{at}.{f}"),
        msg,
    };
    if t.radix == 0 || t.radix > MAX_PORTS {
        return Err(err(
            "radix",
            format!("{} ports; expected 1 to {MAX_PORTS}", t.radix),
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
            // lanes in units of 1/1000 port; u128 so no rate overflows
            let units = |rate: Rate| (rate.0 as u128 * 1000).div_ceil(pr.0 as u128);
            let total = t.radix as u128 * 1000;
            let up_units = t.up as u128 * units(up_rate);
            let down = match t.down {
                Some(d) => d,
                None => (total.saturating_sub(up_units) / units(down_rate).max(1))
                    .min(u32::MAX as u128) as u32,
            };
            let used = down as u128 * units(down_rate) + up_units;
            if used > total {
                return Err(err(
                    "radix",
                    format!(
                        "{} ports of {pr} cannot give {down} down × {down_rate} + {} up × {up_rate}",
                        t.radix, t.up
                    ),
                ));
            }
            // Broken-out links still need a port number each.
            if down as u64 + t.up as u64 > MAX_PORTS as u64 {
                return Err(err(
                    "port_rate",
                    format!(
                        "{down} down + {} up links of {pr} ports broken out; expected at most {MAX_PORTS} links per switch",
                        t.up
                    ),
                ));
            }
            Ok(down)
        }
    }
}

#[cfg(test)]
mod tests {
    //! Inputs that used to panic or hang (issue 9): each now gets an error naming the field.
    use super::*;
    use crate::Format;

    fn build_err(text: &str) -> String {
        Spec::parse(text, Format::Toml, "f.toml")
            .unwrap()
            .build("f.toml")
            .unwrap_err()
            .to_string()
    }

    const HEAD: &str = "name = \"t\"\n[hosts]\nrate = \"100G\"\n";

    #[test]
    fn huge_leaf_count_is_an_error_not_a_division_by_zero() {
        let t = format!(
            "{HEAD}[[planes]]\nleaves_per_pod = 2147483648\nleaf = {{ radix = 64, down = 32, up = 32 }}\nspine = {{ radix = 64 }}\n"
        );
        assert_eq!(
            build_err(&t),
            "f.toml: planes[0].leaves_per_pod: 1 pods × 2147483648 leaves per pod = 2147483648 leaves; \
             the largest fabric this tool builds has 1048576 hosts, 262144 switches and 4194304 links"
        );
    }

    #[test]
    fn huge_nic_count_is_an_error_not_an_overflow() {
        let t = "name = \"t\"\n[hosts]\nrate = \"100G\"\nnics_per_server = 4294967295\nports_per_nic = 2\n\
             [[planes]]\ncopies = 2\nleaves_per_pod = 4\nleaf = { radix = 64, down = 32, up = 32 }\nspine = { radix = 64 }\n";
        assert_eq!(
            build_err(t),
            "f.toml: hosts.nics_per_server: 4294967295 NICs per server; \
             the largest fabric this tool builds has 1048576 hosts, 262144 switches and 4194304 links"
        );
    }

    /// Issue 21: `gpus_per_server = 4294967295` was accepted.
    #[test]
    fn absurd_gpus_per_server_is_refused_with_the_limit() {
        let t = "name = \"t\"\n[hosts]\nrate = \"100G\"\ngpus_per_server = 4294967295\n\
             [[planes]]\nleaves_per_pod = 4\nleaf = { radix = 64, down = 32, up = 32 }\nspine = { radix = 64 }\n";
        assert_eq!(
            build_err(t),
            "f.toml: hosts.gpus_per_server: 4294967295 GPUs per server; expected 1 to 1024"
        );
    }

    #[test]
    fn plane_copies_do_not_overflow() {
        let t = format!(
            "{HEAD}[[planes]]\ncopies = 4294967295\nleaves_per_pod = 4\nleaf = {{ radix = 64, down = 32, up = 32 }}\nspine = {{ radix = 64 }}\n\
             [[planes]]\ncopies = 4294967295\nleaves_per_pod = 4\nleaf = {{ radix = 64, down = 32, up = 32 }}\nspine = {{ radix = 64 }}\n"
        );
        assert_eq!(
            build_err(&t),
            "f.toml: planes: 8589934590 planes in total; expected 1 to 64"
        );
    }

    #[test]
    fn fat_tree_k1000_is_refused_with_the_limit() {
        let e = crate::generators::fat_tree(1000, Rate::gbps(400))
            .unwrap_err()
            .to_string();
        assert_eq!(
            e,
            "fat-tree-k1000: planes[0].leaves_per_pod: 1000 pods × 500 leaves per pod = 500000 leaves; \
             the largest fabric this tool builds has 1048576 hosts, 262144 switches and 4194304 links"
        );
        let e = crate::presets::spec("fat-tree-k1000")
            .unwrap_err()
            .to_string();
        assert_eq!(
            e,
            "preset fat-tree-k1000: k: 1000 is not an even switch radix from 2 to 160 \
             (a k-ary fat-tree has k³/4 hosts; the largest fabric this tool builds has 1048576 hosts)"
        );
        // Just over the host limit: the sizes and the limit are named.
        let e = crate::generators::fat_tree(162, Rate::gbps(400))
            .unwrap_err()
            .to_string();
        assert_eq!(
            e,
            "fat-tree-k162: planes[0].leaves_per_pod: 6561 servers per pod × 162 pods; \
             the largest fabric this tool builds has 1048576 hosts, 262144 switches and 4194304 links"
        );
        // The largest fat-tree preset builds.
        assert!(
            crate::presets::spec("fat-tree-k160")
                .unwrap()
                .validate("x")
                .is_ok()
        );
    }

    #[test]
    fn breakout_beyond_port_numbers_is_refused() {
        let t = format!(
            "{HEAD}[[planes]]\nleaves_per_pod = 4\nleaf = {{ radix = 32767, port_rate = \"1T\", up = 1, uplink_rate = \"1T\" }}\nspine = {{ radix = 64 }}\n"
        )
        .replace("rate = \"100G\"", "rate = 1");
        assert_eq!(
            build_err(&t),
            "f.toml: planes[0].leaf.port_rate: 32766000 down + 1 up links of 1Tb/s ports broken out; expected at most 32767 links per switch"
        );
    }

    #[test]
    fn too_many_links_names_the_counts() {
        // 2-tier: 8192 leaves × 1024 uplinks = 8,388,608 links.
        let t = format!(
            "{HEAD}[[planes]]\nleaves_per_pod = 8192\nleaf = {{ radix = 1025, down = 1, up = 1024 }}\nspine = {{ radix = 8192 }}\n"
        );
        assert_eq!(
            build_err(&t),
            "f.toml: planes: this fabric would have 8192 hosts, 9216 switches and 8396800 links; \
             the largest fabric this tool builds has 1048576 hosts, 262144 switches and 4194304 links"
        );
    }
}
