//! Tenants: who owns which hosts of a fabric, which traffic classes and share they get,
//! and which shared services (storage, management) they may reach — checked against a
//! fabric, turned into the enforcement layer the real tools apply, and proven isolating.
//!
//! # Layout
//! * [`file`] — the tenant file as written (TOML/YAML/JSON): `[[tenants]]` and
//!   `[[services]]` entries with servers, GPUs or host names (numbers and `"a-b"` ranges),
//!   classes, a share, a PKey, a VRF table and `access = { storage = "limited" }`.
//! * this module — [`Tenants::resolve`]: the file against a fabric, with errors that name
//!   the file, the entry's field, what was expected and the limit (unknown hosts, overlaps,
//!   too many classes, PKey / VRF collisions, shares over 100 %).
//! * [`classes`] — each entry's class (DSCP, PCP) and the ETS weight of every priority
//!   from the shares, for the schedulers of the simulator and the veth switch.
//! * [`enforce`] — what enforces it: InfiniBand partitions (PKeys, full and limited
//!   members) and per-tenant VRFs on the leaves (which destinations each VRF routes).
//! * [`leaf`] — those VRFs as routes on every leaf (for the VRF exports and the testbed).
//! * [`proof`] — over every host pair, the tables plus that layer: no tenant reaches
//!   another except through a service the file allows; every leak with its path.
//!
//! # Example
//! ```
//! use topo::tenants::{Tenants, TenantFile, enforce::Enforcement, proof};
//! let f = topo::generators::fat_tree(4, topo::Rate::gbps(400)).unwrap();
//! let text = r#"
//! [[services]]
//! name = "storage"
//! servers = ["14-15"]
//! [[tenants]]
//! name = "a"
//! servers = ["0-5"]
//! share = 50
//! access = { storage = "limited" }
//! [[tenants]]
//! name = "b"
//! servers = ["6-13"]
//! classes = [1]
//! share = 50
//! "#;
//! let file = TenantFile::parse(text, topo::Format::Toml, "t.toml").unwrap();
//! let t = Tenants::resolve(&file, &f, "t.toml").unwrap();
//! let routes = topo::Routes::compute(&f);
//! let enf = Enforcement::from_tenants(&f, &t);
//! let report = proof::prove(&f, &routes, &t, &enf);
//! assert!(report.ok(), "{:?}", report.leaks);
//! // a's hosts reach each other and storage; b's do not reach a's or storage.
//! assert_eq!(report.allowed_pairs, 6 * 5 + 8 * 7 + 2 * 1 + 2 * 6 * 2);
//! ```

pub mod classes;
pub mod enforce;
pub mod file;
pub mod leaf;
pub mod proof;

use std::collections::{BTreeMap, HashMap};

pub use file::{Access, EntrySpec, Item, TenantFile};

use crate::model::{Fabric, NodeId};
use crate::{Error, Result};

/// Most traffic classes a switch has (802.1Qbb priorities; data VLs in use on InfiniBand).
pub const MAX_CLASSES: u32 = crate::lanes::MAX_LANES as u32;
/// Longest entry name: VRF devices are named `Vrf-<name>` (`IFNAMSIZ` is 16 with the NUL;
/// SONiC wants the `Vrf` prefix).
pub const MAX_NAME: usize = 11;
/// The first VRF table id given to an entry without one.
pub const FIRST_VRF: u32 = 1001;
/// Routing tables Linux reserves (unspec, compat, default, main, local).
pub const RESERVED_TABLES: [u64; 5] = [0, 252, 253, 254, 255];
/// The default partition's PKey (OpenSM's `Default`).
pub const DEFAULT_PKEY: u16 = 0x7fff;

/// Whether an entry is a tenant or a shared service.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Kind {
    /// A tenant.
    Tenant,
    /// A shared service.
    Service,
}

/// One checked tenant or service.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct Entry {
    /// Name.
    pub name: String,
    /// Tenant or service.
    pub kind: Kind,
    /// Its host (NIC) nodes, ascending.
    pub hosts: Vec<NodeId>,
    /// Its traffic classes.
    pub classes: Vec<u8>,
    /// Bandwidth share in percent.
    pub share: u32,
    /// Partition key (15 bits).
    pub pkey: u16,
    /// VRF routing table id.
    pub vrf: u32,
    /// Service level of its partition / traffic class of its VRF.
    pub sl: u8,
    /// Tenants: the services it may reach (entry index) and how.
    pub access: Vec<(usize, Access)>,
}

/// A tenant file checked against a fabric.
#[derive(Debug, Clone, PartialEq)]
pub struct Tenants {
    entries: Vec<Entry>,
    /// Entry index per host node (`NONE`: unassigned).
    owner: Vec<u32>,
    /// Traffic classes a switch has.
    pub traffic_classes: u8,
}

const NONE: u32 = u32::MAX;

/// Why a host pair may talk.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Allowed {
    /// Both in the same tenant or service.
    Same,
    /// A tenant and a service it may reach.
    Service,
}

impl Tenants {
    /// Checks `file` against `f`; errors name `origin`, the entry's field path, what was
    /// expected and the limit.
    pub fn resolve(file: &TenantFile, f: &Fabric, origin: &str) -> Result<Tenants> {
        Resolver::new(file, f, origin).run()
    }

    /// The tenants and services: services first, in file order, then tenants.
    pub fn entries(&self) -> &[Entry] {
        &self.entries
    }

    /// The entry owning host `h`, if any.
    pub fn owner(&self, h: NodeId) -> Option<usize> {
        let o = *self.owner.get(h.idx())?;
        (o != NONE).then_some(o as usize)
    }

    /// Whether hosts `a` and `b` may talk, and why (`None`: they must not).
    pub fn allowed(&self, a: NodeId, b: NodeId) -> Option<Allowed> {
        let (ea, eb) = (self.owner(a)?, self.owner(b)?);
        if ea == eb {
            return Some(Allowed::Same);
        }
        let reaches = |t: usize, s: usize| self.entries[t].access.iter().any(|&(i, _)| i == s);
        (reaches(ea, eb) || reaches(eb, ea)).then_some(Allowed::Service)
    }

    /// Entry by name.
    pub fn by_name(&self, name: &str) -> Option<usize> {
        self.entries.iter().position(|e| e.name == name)
    }
}

/// One check's error.
fn err(origin: &str, path: impl Into<String>, msg: impl Into<String>) -> Error {
    Error::Spec {
        origin: origin.to_string(),
        path: path.into(),
        msg: msg.into(),
    }
}

struct Resolver<'a> {
    file: &'a TenantFile,
    f: &'a Fabric,
    origin: &'a str,
    owner: Vec<u32>,
    /// Field path of the item that gave each host its owner.
    owner_path: HashMap<u32, String>,
}

impl<'a> Resolver<'a> {
    fn new(file: &'a TenantFile, f: &'a Fabric, origin: &'a str) -> Self {
        Resolver {
            file,
            f,
            origin,
            owner: vec![NONE; f.num_hosts()],
            owner_path: HashMap::new(),
        }
    }

    /// `(field path prefix, spec)` of every entry, services first.
    fn specs(&self) -> Vec<(String, &'a EntrySpec, Kind)> {
        let s = self.file.services.iter().enumerate();
        let t = self.file.tenants.iter().enumerate();
        s.map(|(i, e)| (format!("services[{i}]"), e, Kind::Service))
            .chain(t.map(|(i, e)| (format!("tenants[{i}]"), e, Kind::Tenant)))
            .collect()
    }

    fn run(mut self) -> Result<Tenants> {
        let o = self.origin;
        let tc = self.file.traffic_classes;
        if tc == 0 || tc > MAX_CLASSES {
            return Err(err(
                o,
                "traffic_classes",
                format!(
                    "{tc}: expected 1 to {MAX_CLASSES} (a switch has {MAX_CLASSES} lossless priorities / data VLs)"
                ),
            ));
        }
        if self.file.tenants.is_empty() {
            return Err(err(
                o,
                "tenants",
                "no tenants: expected at least one [[tenants]] entry",
            ));
        }
        let specs = self.specs();
        let mut names: BTreeMap<&str, String> = BTreeMap::new();
        for (path, e, _) in &specs {
            check_name(o, path, &e.name)?;
            if let Some(first) = names.insert(&e.name, path.clone()) {
                return Err(err(
                    o,
                    format!("{path}.name"),
                    format!("`{}` is already the name of {first}", e.name),
                ));
            }
        }
        let mut entries = Vec::with_capacity(specs.len());
        for (i, (path, e, kind)) in specs.iter().enumerate() {
            let hosts = self.hosts(i as u32, path, e)?;
            let classes = self.classes(path, e, tc)?;
            let sl = match e.sl {
                None => classes[0],
                Some(sl) if sl < tc => sl as u8,
                Some(sl) => {
                    return Err(err(
                        o,
                        format!("{path}.sl"),
                        format!("{sl}: expected a class below traffic_classes = {tc}"),
                    ));
                }
            };
            let access = self.access(path, e, *kind, &specs)?;
            entries.push(Entry {
                name: e.name.clone(),
                kind: *kind,
                hosts,
                classes,
                share: e.share,
                pkey: 0,
                vrf: 0,
                sl,
                access,
            });
        }
        self.shares(&specs)?;
        self.pkeys(&specs, &mut entries)?;
        self.vrfs(&specs, &mut entries)?;
        Ok(Tenants {
            entries,
            owner: self.owner,
            traffic_classes: tc as u8,
        })
    }

    /// Resolves an entry's servers, GPUs and host names; marks their owner.
    fn hosts(&mut self, idx: u32, path: &str, e: &EntrySpec) -> Result<Vec<NodeId>> {
        let (o, f) = (self.origin, self.f);
        let lay = f.host_layout();
        let nics = u64::from(lay.nics_per_server);
        let servers = u64::from(lay.servers);
        let gpus_per = u64::from(lay.gpus_per_server).max(1);
        let gpus = servers * gpus_per;
        let mut out = Vec::new();
        for (j, it) in e.servers.iter().enumerate() {
            let p = format!("{path}.servers[{j}]");
            if it.last >= servers {
                return Err(err(
                    o,
                    p,
                    format!(
                        "server {} does not exist: the fabric has {servers} servers (0-{})",
                        it.last,
                        servers.saturating_sub(1)
                    ),
                ));
            }
            for s in it.first..=it.last {
                for n in 0..nics {
                    self.claim(idx, &p, NodeId((s * nics + n) as u32), &mut out)?;
                }
            }
        }
        for (j, it) in e.gpus.iter().enumerate() {
            let p = format!("{path}.gpus[{j}]");
            if it.last >= gpus {
                return Err(err(
                    o,
                    p,
                    format!(
                        "GPU {} does not exist: the fabric has {gpus} GPUs (0-{})",
                        it.last,
                        gpus.saturating_sub(1)
                    ),
                ));
            }
            if nics == gpus_per {
                for g in it.first..=it.last {
                    self.claim(idx, &p, NodeId(g as u32), &mut out)?;
                }
            } else if it.first % gpus_per != 0 || (it.last + 1) % gpus_per != 0 {
                return Err(err(
                    o,
                    p,
                    format!(
                        "GPUs {}-{} cover part of a server: with {gpus_per} GPUs and {nics} NICs per server a tenant gets whole servers (GPU ranges from a multiple of {gpus_per} to one below a multiple)",
                        it.first, it.last
                    ),
                ));
            } else {
                for s in it.first / gpus_per..=it.last / gpus_per {
                    for n in 0..nics {
                        self.claim(idx, &p, NodeId((s * nics + n) as u32), &mut out)?;
                    }
                }
            }
        }
        if !e.hosts.is_empty() {
            let index = f.name_index();
            for (j, name) in e.hosts.iter().enumerate() {
                let p = format!("{path}.hosts[{j}]");
                match index.get(name.as_str()) {
                    Some(&n) if f.is_host(n) => self.claim(idx, &p, n, &mut out)?,
                    Some(_) => {
                        return Err(err(
                            o,
                            p,
                            format!(
                                "`{name}` is a switch: expected a host (NIC) name like `host0-nic0`"
                            ),
                        ));
                    }
                    None => {
                        return Err(err(
                            o,
                            p,
                            format!(
                                "no host named `{name}` in fabric `{}` (host names look like `host0-nic0`)",
                                f.name()
                            ),
                        ));
                    }
                }
            }
        }
        if out.is_empty() {
            return Err(err(
                o,
                path,
                format!("`{}` has no hosts: expected servers, gpus or hosts", e.name),
            ));
        }
        out.sort_unstable();
        Ok(out)
    }

    fn claim(&mut self, idx: u32, path: &str, h: NodeId, out: &mut Vec<NodeId>) -> Result<()> {
        let slot = &mut self.owner[h.idx()];
        if *slot == idx {
            return Ok(()); // listed twice in one entry
        }
        if *slot != NONE {
            let first = &self.owner_path[&h.0];
            let name = self.f.node_name(h);
            return Err(err(
                self.origin,
                path,
                format!(
                    "{name} (server {}) is already in {first}: an entry's hosts must not overlap another's",
                    self.f.server_of(h)
                ),
            ));
        }
        *slot = idx;
        self.owner_path.insert(h.0, path.to_string());
        out.push(h);
        Ok(())
    }

    fn classes(&self, path: &str, e: &EntrySpec, tc: u32) -> Result<Vec<u8>> {
        let o = self.origin;
        if e.classes.len() > tc as usize {
            return Err(err(
                o,
                format!("{path}.classes"),
                format!(
                    "{} classes, more than a switch has (traffic_classes = {tc})",
                    e.classes.len()
                ),
            ));
        }
        let mut out = Vec::with_capacity(e.classes.len().max(1));
        for (j, &c) in e.classes.iter().enumerate() {
            if c >= tc {
                return Err(err(
                    o,
                    format!("{path}.classes[{j}]"),
                    format!(
                        "class {c}: a switch has {tc} classes (expected 0-{})",
                        tc - 1
                    ),
                ));
            }
            if out.contains(&(c as u8)) {
                return Err(err(
                    o,
                    format!("{path}.classes[{j}]"),
                    format!("class {c} is listed twice"),
                ));
            }
            out.push(c as u8);
        }
        if out.is_empty() {
            out.push(0);
        }
        Ok(out)
    }

    fn access(
        &self,
        path: &str,
        e: &EntrySpec,
        kind: Kind,
        specs: &[(String, &EntrySpec, Kind)],
    ) -> Result<Vec<(usize, Access)>> {
        let o = self.origin;
        if kind == Kind::Service && !e.access.is_empty() {
            return Err(err(
                o,
                format!("{path}.access"),
                "a service has no access list: tenants name the services they reach",
            ));
        }
        let mut out = Vec::new();
        for (name, &a) in &e.access {
            let i = specs
                .iter()
                .position(|(_, s, k)| *k == Kind::Service && s.name == *name);
            match i {
                Some(i) => out.push((i, a)),
                None => {
                    let known: Vec<&str> = specs
                        .iter()
                        .filter(|(_, _, k)| *k == Kind::Service)
                        .map(|(_, s, _)| s.name.as_str())
                        .collect();
                    let known = if known.is_empty() {
                        "none defined".to_string()
                    } else {
                        known.join(", ")
                    };
                    return Err(err(
                        o,
                        format!("{path}.access.{name}"),
                        format!("no service named `{name}` (services: {known})"),
                    ));
                }
            }
        }
        Ok(out)
    }

    fn shares(&self, specs: &[(String, &EntrySpec, Kind)]) -> Result<()> {
        let mut total: u64 = 0;
        for (path, e, _) in specs {
            total += u64::from(e.share);
            if total > 100 {
                return Err(err(
                    self.origin,
                    format!("{path}.share"),
                    format!(
                        "{} % brings the shares to {total} %: the shares of all entries add up to at most 100 %",
                        e.share
                    ),
                ));
            }
        }
        Ok(())
    }

    fn pkeys(&self, specs: &[(String, &EntrySpec, Kind)], entries: &mut [Entry]) -> Result<()> {
        let o = self.origin;
        let mut used: BTreeMap<u16, &str> = BTreeMap::new();
        used.insert(DEFAULT_PKEY, "the default partition");
        for ((path, e, _), out) in specs.iter().zip(entries.iter_mut()) {
            let Some(k) = e.pkey else { continue };
            if !(1..DEFAULT_PKEY as u64).contains(&k) {
                return Err(err(
                    o,
                    format!("{path}.pkey"),
                    format!(
                        "{k:#x}: expected a 15-bit partition key 0x0001-0x7ffe (0x7fff is the default partition)"
                    ),
                ));
            }
            if let Some(first) = used.insert(k as u16, path) {
                return Err(err(
                    o,
                    format!("{path}.pkey"),
                    format!("{k:#06x} is already the PKey of {first}"),
                ));
            }
            out.pkey = k as u16;
        }
        let mut next = 1u16;
        for out in entries.iter_mut().filter(|e| e.pkey == 0) {
            while used.contains_key(&next) {
                next += 1;
            }
            out.pkey = next;
            used.insert(next, "");
        }
        Ok(())
    }

    fn vrfs(&self, specs: &[(String, &EntrySpec, Kind)], entries: &mut [Entry]) -> Result<()> {
        let o = self.origin;
        let mut used: BTreeMap<u32, &str> = BTreeMap::new();
        for ((path, e, _), out) in specs.iter().zip(entries.iter_mut()) {
            let Some(t) = e.vrf else { continue };
            if t > u64::from(u32::MAX) || RESERVED_TABLES.contains(&t) {
                return Err(err(
                    o,
                    format!("{path}.vrf"),
                    format!(
                        "{t}: expected a routing table id 1-{} other than 252-255 (Linux reserves them)",
                        u32::MAX
                    ),
                ));
            }
            if let Some(first) = used.insert(t as u32, path) {
                return Err(err(
                    o,
                    format!("{path}.vrf"),
                    format!("table {t} is already the VRF of {first}"),
                ));
            }
            out.vrf = t as u32;
        }
        let mut next = FIRST_VRF;
        for out in entries.iter_mut().filter(|e| e.vrf == 0) {
            while used.contains_key(&next) {
                next += 1;
            }
            out.vrf = next;
            used.insert(next, "");
        }
        Ok(())
    }
}

fn check_name(o: &str, path: &str, name: &str) -> Result<()> {
    let ok_chars = name
        .chars()
        .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_');
    if name.is_empty() || name.len() > MAX_NAME || !ok_chars {
        return Err(err(
            o,
            format!("{path}.name"),
            format!(
                "`{}`: expected 1-{MAX_NAME} letters, digits, `-` or `_` (it names a VRF device and a partition)",
                name.chars().take(40).collect::<String>()
            ),
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests;
