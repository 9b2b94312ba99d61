//! Tenants in a scenario: a tenant file (`tenants = "FILE"` in the scenario, or a
//! driver's `--tenants FILE`) checked against the fabric the scenario runs on, as a map
//! from host index to tenant. A workload with `tenant = "a"` takes its traffic class
//! from the file (the entry's service level: DSCP/PCP `sl`, `topo::tenants::classes`)
//! and must run on `a`'s hosts and the services `a` may reach; the egress ports take
//! the file's ETS weights from the shares (`Tenants::ets_weights`).
//!
//! The file itself is topo's (`topo::tenants`): its errors name the file, the entry's
//! field, what was expected and the limit; this module adds only what a scenario needs.

use std::io::Read;
use std::path::Path;

use topo::Fabric;
use topo::tenants::{Kind, TenantFile, Tenants};

use crate::{Result, ScenarioError};

/// The largest tenant file read (100k hosts listed one by one are a few MB).
pub const MAX_TENANT_FILE_BYTES: u64 = 64 << 20;

/// One tenant or service as a scenario sees it.
#[derive(Clone, Debug, PartialEq)]
struct Entry {
    name: String,
    tenant: bool,
    /// Its traffic class (the entry's service level).
    class: u8,
    /// Services it may reach (entry indices).
    reaches: Vec<u32>,
}

/// A tenant file resolved against a fabric, by host index (`0..hosts`, the order of
/// `Fabric::hosts`).
#[derive(Clone, Debug, PartialEq)]
pub struct ScenarioTenants {
    /// The tenant file, for messages.
    pub origin: String,
    entries: Vec<Entry>,
    /// Entry index per host index (`u32::MAX`: in no entry).
    owner: Vec<u32>,
    /// ETS weight per priority from the shares.
    ets: [u8; 8],
}

const NONE: u32 = u32::MAX;

impl ScenarioTenants {
    /// The scenario's view of resolved tenants on fabric `f`; `origin` names the file.
    pub fn from_tenants(t: &Tenants, f: &Fabric, origin: &str) -> ScenarioTenants {
        let entries = t
            .entries()
            .iter()
            .map(|e| Entry {
                name: e.name.clone(),
                tenant: e.kind == Kind::Tenant,
                class: e.sl,
                reaches: e.access.iter().map(|&(i, _)| i as u32).collect(),
            })
            .collect();
        let owner = f
            .hosts()
            .map(|h| t.owner(h).map_or(NONE, |o| o as u32))
            .collect();
        ScenarioTenants {
            origin: origin.to_string(),
            entries,
            owner,
            ets: t.ets_weights(),
        }
    }

    /// Reads a tenant file ([`read_tenants`]) and checks it against `f`.
    pub fn load(path: &Path, f: &Fabric) -> Result<ScenarioTenants> {
        let t = read_tenants(path, f)?;
        Ok(ScenarioTenants::from_tenants(
            &t,
            f,
            &path.display().to_string(),
        ))
    }

    /// The ETS weights the file's shares give, or `None` when fewer than two classes
    /// carry a weight: one weighted class has nothing to share a port with, and strict
    /// priority (no ETS) serves it the same way.
    pub fn ets(&self) -> Option<[u8; 8]> {
        (self.ets.iter().filter(|&&w| w > 0).count() >= 2).then_some(self.ets)
    }

    /// The class of host `h`'s traffic: its entry's (`None`: in no entry).
    pub fn class_of_host(&self, h: u32) -> Option<u8> {
        let o = *self.owner.get(h as usize)?;
        self.entries.get(o as usize).map(|e| e.class)
    }

    /// Hosts the fabric has (the file was checked against).
    pub fn hosts(&self) -> u32 {
        self.owner.len() as u32
    }

    /// The tenant named `name`: its index and class, or what the file has instead.
    pub(crate) fn tenant(&self, name: &str) -> std::result::Result<(usize, u8), String> {
        match self.entries.iter().position(|e| e.name == name) {
            Some(i) if self.entries[i].tenant => Ok((i, self.entries[i].class)),
            Some(_) => Err(format!(
                "`{name}` is a service in {}: a workload belongs to a tenant ({})",
                self.origin,
                self.names(true)
            )),
            None => Err(format!(
                "no tenant named `{name}` in {} (tenants: {})",
                self.origin,
                self.names(true)
            )),
        }
    }

    fn names(&self, tenants: bool) -> String {
        let n: Vec<&str> = self
            .entries
            .iter()
            .filter(|e| e.tenant == tenants)
            .map(|e| e.name.as_str())
            .collect();
        if n.is_empty() {
            "none".into()
        } else {
            n.join(", ")
        }
    }

    /// Whether tenant `t`'s workload may use host `h`: one of its own, or a host of a
    /// service it may reach. The error says whose the host is.
    pub(crate) fn check_host(&self, t: usize, h: u32) -> std::result::Result<(), String> {
        let e = &self.entries[t];
        let o = self.owner.get(h as usize).copied().unwrap_or(NONE);
        if o as usize == t || e.reaches.contains(&o) {
            return Ok(());
        }
        let whose = match self.entries.get(o as usize) {
            Some(x) if x.tenant => format!("is tenant `{}`'s", x.name),
            Some(x) => format!(
                "is in service `{}`, which `{}` may not reach",
                x.name, e.name
            ),
            None => format!("is in no entry of {}", self.origin),
        };
        let services: Vec<&str> = e
            .reaches
            .iter()
            .map(|&s| self.entries[s as usize].name.as_str())
            .collect();
        let reach = if services.is_empty() {
            String::new()
        } else {
            format!(" and the services it may reach ({})", services.join(", "))
        };
        Err(format!(
            "host {h} {whose}: a workload of tenant `{}` runs on its hosts{reach}",
            e.name
        ))
    }

    /// Whether host `h` belongs to the tenant itself (not to a service).
    pub(crate) fn is_own(&self, t: usize, h: u32) -> bool {
        self.owner.get(h as usize) == Some(&(t as u32))
    }
}

/// Reads a tenant file (TOML, YAML or JSON by extension; at most
/// [`MAX_TENANT_FILE_BYTES`], read no further) and checks it against `f`. The one reader
/// of tenant files: the scenarios', `fabric`'s (`routes`, `serve`) and `fabric-tui`'s.
pub fn read_tenants(path: &Path, f: &Fabric) -> Result<Tenants> {
    let origin = path.display().to_string();
    let fail = |message: String| ScenarioError::Tenants {
        file: origin.clone(),
        message,
    };
    let format = topo::Format::from_path(&origin).ok_or_else(|| {
        fail("unknown tenant file format (expected a .toml, .yaml, .yml or .json file)".into())
    })?;
    let mut text = String::new();
    std::fs::File::open(path)
        .and_then(|file| {
            file.take(MAX_TENANT_FILE_BYTES + 1)
                .read_to_string(&mut text)
        })
        .map_err(|e| fail(format!("cannot read: {e}")))?;
    if text.len() as u64 > MAX_TENANT_FILE_BYTES {
        return Err(fail(format!(
            "larger than the {} MiB a tenant file may have",
            MAX_TENANT_FILE_BYTES >> 20
        )));
    }
    let file = TenantFile::parse(&text, format, &origin).map_err(topo_err)?;
    Tenants::resolve(&file, f, &origin).map_err(topo_err)
}

fn topo_err(e: topo::Error) -> ScenarioError {
    ScenarioError::TenantFile(e.to_string())
}

impl crate::Workload {
    /// The tenant the workload belongs to (`tenant = "a"`).
    pub fn tenant(&self) -> Option<&str> {
        use crate::Workload::*;
        match self {
            Incast { tenant, .. }
            | Permutation { tenant, .. }
            | AllToAll { tenant, .. }
            | RingAllreduce { tenant, .. }
            | TreeAllreduce { tenant, .. }
            | Fairness { tenant, .. }
            | Victim { tenant, .. }
            | Poisson { tenant, .. }
            | Flows { tenant, .. }
            | ConnectionMatrix { tenant, .. } => tenant.as_deref(),
        }
    }

    /// The traffic class written in the file (`priority = n`).
    pub fn priority(&self) -> Option<u8> {
        use crate::Workload::*;
        match self {
            Incast { priority, .. }
            | Permutation { priority, .. }
            | AllToAll { priority, .. }
            | RingAllreduce { priority, .. }
            | TreeAllreduce { priority, .. }
            | Fairness { priority, .. }
            | Victim { priority, .. }
            | Poisson { priority, .. }
            | Flows { priority, .. }
            | ConnectionMatrix { priority, .. } => *priority,
        }
    }

    /// The fields that gave a flow its source and destination, for messages (`k`: the
    /// flow's index in the workload).
    fn host_fields(&self, k: usize, src: u32, dst: u32) -> (String, String) {
        use crate::Workload::*;
        let pair = |a: &str, b: &str| (a.to_string(), b.to_string());
        match self {
            Incast { .. } | Fairness { .. } => pair("senders", "receiver"),
            Victim {
                victim_src,
                victim_dst,
                ..
            } if (*victim_src, *victim_dst) == (src, dst) => pair("victim_src", "victim_dst"),
            Victim { .. } => pair("senders", "receiver"),
            Flows { .. } => (format!("flow[{k}].src"), format!("flow[{k}].dst")),
            ConnectionMatrix { .. } => pair("file", "file"),
            _ => pair("hosts", "hosts"),
        }
    }
}

impl crate::Scenario {
    /// Before any workload: the tenant file fits the fabric the plan is for, the
    /// scenario does not name one the driver left unread, and the ports take the file's
    /// ETS weights (a scenario's own `network.ets` must then agree with them).
    pub(crate) fn check_tenants(
        &self,
        ctx: &crate::CompileCtx,
        plan: &mut crate::Workplan,
    ) -> Result<()> {
        let Some(t) = &ctx.tenants else {
            if let Some(p) = &self.tenants {
                return Err(self.invalid(
                    "tenants".into(),
                    format!(
                        "{}: this run did not read the tenant file (it is checked against the fabric the scenario runs on; `fabric sim` and `fabric testbed run` read it)",
                        p.display()
                    ),
                ));
            }
            return Ok(());
        };
        if t.hosts() != ctx.hosts {
            return Err(self.invalid(
                "tenants".into(),
                format!(
                    "{} was checked against a fabric of {} hosts; the scenario runs on {}",
                    t.origin,
                    t.hosts(),
                    ctx.hosts
                ),
            ));
        }
        if let Some(w) = t.ets() {
            match self.network.ets {
                Some(mine) if mine != w => {
                    return Err(self.invalid(
                        "network.ets".into(),
                        format!(
                            "{mine:?} differs from the weights the shares in {} give, {w:?}: leave `ets` out to take the tenant file's",
                            t.origin
                        ),
                    ));
                }
                _ => plan.network.ets = Some(w),
            }
        }
        Ok(())
    }

    /// The class of workload `wi` and, for a tenant's workload, the tenant's index: its
    /// tenant's class, else its own `priority` (default 0).
    pub(crate) fn workload_class(
        &self,
        wi: usize,
        w: &crate::Workload,
        ctx: &crate::CompileCtx,
    ) -> Result<(u8, Option<usize>)> {
        let Some(name) = w.tenant() else {
            return Ok((w.priority().unwrap_or(0), None));
        };
        let field = |f: &str| format!("workload[{wi}].{f}");
        let Some(t) = &ctx.tenants else {
            return Err(self.invalid(
                field("tenant"),
                format!(
                    "`{name}` needs a tenant file: give `tenants = \"FILE\"` in the scenario or --tenants FILE"
                ),
            ));
        };
        let (i, class) = t
            .tenant(name)
            .map_err(|m| self.invalid(field("tenant"), m))?;
        let class_note = |f: &str| {
            self.invalid(
                field(f),
                format!(
                    "give `tenant` or `priority`, not both: tenant `{name}`'s class is {class} ({})",
                    t.origin
                ),
            )
        };
        if w.priority().is_some() {
            return Err(class_note("priority"));
        }
        if let crate::Workload::Flows { flow, .. } = w
            && let Some(k) = flow.iter().position(|f| f.priority.is_some())
        {
            return Err(class_note(&format!("flow[{k}].priority")));
        }
        Ok((class, Some(i)))
    }

    /// Every flow workload `wi` compiled into (`flows`) runs between hosts of tenant
    /// `t` and the services it may reach, at least one end its own.
    pub(crate) fn check_tenant_flows(
        &self,
        wi: usize,
        w: &crate::Workload,
        t: usize,
        ctx: &crate::CompileCtx,
        flows: &[crate::FlowSpec],
    ) -> Result<()> {
        let Some(ten) = &ctx.tenants else {
            return Ok(());
        };
        for (k, f) in flows.iter().enumerate() {
            let (fs, fd) = w.host_fields(k, f.src, f.dst);
            for (h, fld) in [(f.src, &fs), (f.dst, &fd)] {
                ten.check_host(t, h)
                    .map_err(|m| self.invalid(format!("workload[{wi}].{fld}"), m))?;
            }
            if !ten.is_own(t, f.src) && !ten.is_own(t, f.dst) {
                return Err(self.invalid(
                    format!("workload[{wi}].{fs}"),
                    format!(
                        "the flow from host {} to host {} has neither end on tenant `{}`'s hosts: a tenant's workload has at least one end on its own hosts",
                        f.src,
                        f.dst,
                        w.tenant().unwrap_or_default()
                    ),
                ));
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{CompileCtx, Scenario, Workplan};
    use cc_algos::Rate;

    /// A k=4 fat-tree (16 hosts, host i = server i): storage 14-15, a 0-6, b 7-13.
    const FILE: &str = r#"
[[services]]
name = "storage"
servers = ["14-15"]
[[tenants]]
name = "a"
servers = ["0-6"]
classes = [1]
share = 60
access = { storage = "limited" }
[[tenants]]
name = "b"
servers = ["7-13"]
classes = [2]
share = 40
"#;

    struct Dir(std::path::PathBuf);
    impl Drop for Dir {
        fn drop(&mut self) {
            std::fs::remove_dir_all(&self.0).ok();
        }
    }

    fn dir(tag: &str) -> Dir {
        let d = std::env::temp_dir().join(format!("scenario-ten-{tag}-{}", std::process::id()));
        std::fs::create_dir_all(&d).unwrap();
        Dir(d)
    }

    fn fabric() -> Fabric {
        topo::generators::fat_tree(4, topo::Rate::gbps(100)).unwrap()
    }

    /// Compiles `scenario` (with `tenants = "t.toml"` holding `file`) on the k=4 fat-tree.
    fn compile(tag: &str, file: &str, scenario: &str) -> Result<Workplan> {
        let d = dir(tag);
        std::fs::write(d.0.join("t.toml"), file).unwrap();
        let p = d.0.join("s.toml");
        std::fs::write(&p, format!("tenants = \"t.toml\"\n{scenario}")).unwrap();
        let s = Scenario::from_file(&p)?;
        let f = fabric();
        let t = s.load_tenants(&f, None)?;
        s.compile(&CompileCtx::new(16, Rate::gbps(100), 1).with_tenants(t))
    }

    fn err(tag: &str, file: &str, scenario: &str) -> String {
        compile(tag, file, scenario).unwrap_err().to_string()
    }

    const A_INCAST: &str = "[[workload]]\nkind = \"incast\"\nsenders = \"1..7\"\nreceiver = 0\nsize = \"1MB\"\ntenant = \"a\"\n";
    const B_RING: &str = "[[workload]]\nkind = \"ring_allreduce\"\nhosts = \"7..14\"\nsize = \"7MB\"\ntenant = \"b\"\n";

    #[test]
    fn a_tenant_gives_its_workloads_their_class_and_the_ports_the_shares() {
        let p = compile("ok", FILE, &format!("{A_INCAST}{B_RING}")).unwrap();
        let by_group = |g: u32| p.flows.iter().filter(move |f| f.group == g);
        assert!(by_group(0).all(|f| f.priority == 1));
        assert!(by_group(1).all(|f| f.priority == 2));
        // storage's class 0 has no share: weight 1, the least (`Tenants::ets_weights`)
        assert_eq!(p.network.ets, Some([1, 60, 40, 0, 0, 0, 0, 0]));
        // The same plan as the classes and weights written by hand.
        let hand = Scenario::from_toml_str(
            &format!(
                "[network]\nets = [1, 60, 40, 0, 0, 0, 0, 0]\n{}{}",
                A_INCAST.replace("tenant = \"a\"", "priority = 1"),
                B_RING.replace("tenant = \"b\"", "priority = 2")
            ),
            "hand.toml",
        )
        .unwrap()
        .compile(&CompileCtx::new(16, Rate::gbps(100), 1))
        .unwrap();
        assert_eq!(
            Workplan {
                name: hand.name.clone(),
                ..p
            },
            hand
        );
    }

    #[test]
    fn a_tenant_reaches_the_services_it_may_and_no_other_host() {
        let to_storage = "[[workload]]\nkind = \"flows\"\ntenant = \"a\"\nflow = [{ src = 3, dst = 14, size = \"1MB\" }, { src = 15, dst = 0, size = \"1MB\" }]\n";
        assert_eq!(compile("svc", FILE, to_storage).unwrap().flows.len(), 2);
        let e = err("svc-b", FILE, &to_storage.replace("\"a\"", "\"b\""));
        assert!(
            e.ends_with(
                "s.toml: workload[0].flow[0].src: host 3 is tenant `a`'s: a workload of tenant `b` runs on its hosts"
            ),
            "{e}"
        );
        let e = err(
            "svc-c",
            FILE,
            "[[workload]]\nkind = \"flows\"\ntenant = \"b\"\nflow = [{ src = 8, dst = 15, size = \"1MB\" }]\n",
        );
        assert!(
            e.ends_with("workload[0].flow[0].dst: host 15 is in service `storage`, which `b` may not reach: a workload of tenant `b` runs on its hosts"),
            "{e}"
        );
        let e = err(
            "svc-d",
            FILE,
            "[[workload]]\nkind = \"flows\"\ntenant = \"a\"\nflow = [{ src = 14, dst = 15, size = \"1MB\" }]\n",
        );
        assert!(e.contains("neither end on tenant `a`'s hosts"), "{e}");
        let e = err("ring", FILE, &B_RING.replace("7..14", "6..14"));
        assert!(
            e.ends_with("workload[0].hosts: host 6 is tenant `a`'s: a workload of tenant `b` runs on its hosts"),
            "{e}"
        );
        let e = err(
            "incast",
            FILE,
            &A_INCAST.replace("receiver = 0", "receiver = 9"),
        );
        assert!(e.contains("workload[0].receiver: host 9 is tenant `b`'s: a workload of tenant `a` runs on its hosts and the services it may reach (storage)"), "{e}");
    }

    #[test]
    fn unknown_tenants_missing_files_and_double_classes_are_named() {
        let e = err("unk", FILE, &A_INCAST.replace("\"a\"", "\"c\""));
        assert!(
            e.contains("workload[0].tenant: no tenant named `c` in ")
                && e.ends_with("t.toml (tenants: a, b)"),
            "{e}"
        );
        let e = err("svcname", FILE, &A_INCAST.replace("\"a\"", "\"storage\""));
        assert!(e.contains("`storage` is a service in"), "{e}");
        let e = err("both", FILE, &format!("{A_INCAST}priority = 3\n"));
        assert!(
            e.contains("workload[0].priority: give `tenant` or `priority`, not both: tenant `a`'s class is 1"),
            "{e}"
        );
        let e = err(
            "flowprio",
            FILE,
            "[[workload]]\nkind = \"flows\"\ntenant = \"a\"\nflow = [{ src = 1, dst = 2, size = \"1MB\", priority = 5 }]\n",
        );
        assert!(
            e.contains("workload[0].flow[0].priority: give `tenant` or `priority`"),
            "{e}"
        );
        let e = err(
            "ets",
            FILE,
            &format!("[network]\nets = [0, 50, 50, 0, 0, 0, 0, 0]\n{A_INCAST}"),
        );
        assert!(
            e.contains(
                "network.ets: [0, 50, 50, 0, 0, 0, 0, 0] differs from the weights the shares in "
            ) && e
                .ends_with("[1, 60, 40, 0, 0, 0, 0, 0]: leave `ets` out to take the tenant file's"),
            "{e}"
        );
        // A tenant without a tenant file; a tenant file the driver did not read.
        let s = Scenario::from_toml_str(A_INCAST, "s.toml").unwrap();
        let e = s
            .compile(&CompileCtx::new(16, Rate::gbps(100), 1))
            .unwrap_err()
            .to_string();
        assert_eq!(
            e,
            "s.toml: workload[0].tenant: `a` needs a tenant file: give `tenants = \"FILE\"` in the scenario or --tenants FILE"
        );
        let s =
            Scenario::from_toml_str(&format!("tenants = \"t.toml\"\n{B_RING}"), "s.toml").unwrap();
        let e = s
            .compile(&CompileCtx::new(16, Rate::gbps(100), 1))
            .unwrap_err()
            .to_string();
        assert!(
            e.starts_with("s.toml: tenants: t.toml: this run did not read the tenant file"),
            "{e}"
        );
        // Checked against another fabric than the plan's.
        let t = ScenarioTenants::from_tenants(
            &Tenants::resolve(
                &TenantFile::parse(FILE, topo::Format::Toml, "t.toml").unwrap(),
                &fabric(),
                "t.toml",
            )
            .unwrap(),
            &fabric(),
            "t.toml",
        );
        let s = Scenario::from_toml_str(B_RING, "s.toml").unwrap();
        let e = s
            .compile(&CompileCtx::new(32, Rate::gbps(100), 1).with_tenants(Some(t)))
            .unwrap_err()
            .to_string();
        assert_eq!(
            e,
            "s.toml: tenants: t.toml was checked against a fabric of 16 hosts; the scenario runs on 32"
        );
    }

    #[test]
    fn a_tenant_file_that_does_not_fit_the_fabric_is_refused_with_its_field() {
        let e = err("fit", &FILE.replace("\"7-13\"", "\"7-16\""), B_RING);
        assert!(
            e.ends_with("t.toml: tenants[1].servers[0]: server 16 does not exist: the fabric has 16 servers (0-15)"),
            "{e}"
        );
        let e = err("parse", &FILE.replace("share = 40", "shares = 40"), B_RING);
        assert!(
            e.contains("t.toml: tenants[1]") && e.contains("shares"),
            "{e}"
        );
        let d = dir("ext");
        let f = d.0.join("t.ini");
        std::fs::write(&f, FILE).unwrap();
        let e = ScenarioTenants::load(&f, &fabric())
            .unwrap_err()
            .to_string();
        assert!(
            e.ends_with(
                "t.ini: unknown tenant file format (expected a .toml, .yaml, .yml or .json file)"
            ),
            "{e}"
        );
        let e = ScenarioTenants::load(&d.0.join("none.toml"), &fabric())
            .unwrap_err()
            .to_string();
        assert!(e.contains("none.toml: cannot read:"), "{e}");
    }

    #[test]
    fn one_shared_class_keeps_strict_priority() {
        let shared = FILE
            .replace("classes = [2]", "classes = [1]")
            .replace(
                "[[services]]\nname = \"storage\"\nservers = [\"14-15\"]\n",
                "",
            )
            .replace("access = { storage = \"limited\" }\n", "");
        assert!(!shared.contains("storage"), "{shared}");
        let p = compile("shared", &shared, &format!("{A_INCAST}{B_RING}")).unwrap();
        assert_eq!(p.network.ets, None);
        assert!(p.flows.iter().all(|f| f.priority == 1));
    }

    #[test]
    fn the_command_line_file_replaces_the_scenarios() {
        let s = Scenario::from_toml_str(
            "tenants = \"t.toml\"\n[[workload]]\nkind = \"permutation\"\nsize = \"1KB\"\n",
            "s.toml",
        )
        .unwrap();
        assert_eq!(s.tenants_path(None), Some("t.toml".into()));
        assert_eq!(
            s.tenants_path(Some(Path::new("/x/u.yaml"))),
            Some("/x/u.yaml".into())
        );
    }
}
