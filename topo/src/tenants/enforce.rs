//! The enforcement layer: what the real tools apply on top of the routing tables so that
//! tenants stay apart.
//!
//! * **InfiniBand partitions** (OpenSM `partitions.conf`): two ports talk only if they
//!   share a PKey and at least one of them is a full member. Every tenant and every service
//!   has a partition, its hosts full members. A service reached with `access = "full"`
//!   puts its hosts into the tenant's partition as full members; with `"limited"` the
//!   tenant's hosts are limited members of the service's partition (they reach the
//!   service, never each other there). The default partition (0x7fff) holds every host as
//!   a limited member and the subnet manager as a full one: hosts reach the SM only.
//! * **VRFs on the leaves** (Linux VRF devices, FRR `vrf`, SONiC `VRF|`): the leaf port of
//!   every host is enslaved to its entry's VRF; that VRF routes (host /32 and /128) to the
//!   entry's own hosts and to the hosts of the services it may reach (a service's VRF: to
//!   the tenants that reach it); uplinks stay in the default VRF, which keeps the fabric
//!   tables for transit. A packet from a host is looked up in its VRF at the ingress leaf,
//!   so a destination not routed there is dropped before it enters the fabric, whatever
//!   path (detour or lane) the tables would give it.
//!
//! [`Enforcement::from_tenants`] derives both from a tenant file; [`parse_partitions`]
//! reads a deployed `partitions.conf` back, so the proof can check what is really loaded.

use std::collections::HashMap;

use crate::addressing::AddressPlan;
use crate::export::ib::lid_port_guid;
use crate::model::{Fabric, NodeId};

use super::{Access, DEFAULT_PKEY, Kind, Tenants};

/// Membership of a port in a partition.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Membership {
    /// May talk to every member.
    Full,
    /// May talk to full members only.
    Limited,
}

/// An InfiniBand partition.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct Partition {
    /// Name (the entry's, or `Default`).
    pub name: String,
    /// PKey (15 bits).
    pub pkey: u16,
    /// Service level of the partition's traffic (OpenSM `sl=`).
    pub sl: u8,
    /// Host members, ascending by node.
    pub members: Vec<(NodeId, Membership)>,
}

/// One entry's VRF: on every leaf with a port of one of its hosts.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct Vrf {
    /// Name (the entry's).
    pub name: String,
    /// Routing table id.
    pub table: u32,
    /// Hosts whose leaf ports are enslaved to it.
    pub ports_of: Vec<NodeId>,
    /// Hosts it routes to, ascending.
    pub routes_to: Vec<NodeId>,
}

impl Vrf {
    /// Whether the VRF has a route to host `d`.
    pub fn routes(&self, d: NodeId) -> bool {
        self.routes_to.binary_search(&d).is_ok()
    }
}

/// Partitions and VRFs, derived from a tenant file or read back from what is deployed.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct Enforcement {
    /// InfiniBand partitions, the default one first.
    pub partitions: Vec<Partition>,
    /// VRFs (index = entry index of the tenant file they come from).
    pub vrfs: Vec<Vrf>,
    /// VRF index per host (`None`: its leaf port is in the default VRF).
    pub vrf_of: Vec<Option<u32>>,
}

impl Enforcement {
    /// What enforces `t` on `f` (the subnet manager, a full member of the default
    /// partition, is not a host here: see [`Self::with_sm`]).
    pub fn from_tenants(f: &Fabric, t: &Tenants) -> Enforcement {
        let es = t.entries();
        let mut parts = vec![Partition {
            name: "Default".into(),
            pkey: DEFAULT_PKEY,
            sl: 0,
            members: f.hosts().map(|h| (h, Membership::Limited)).collect(),
        }];
        let mut routes_to: Vec<Vec<NodeId>> = es.iter().map(|e| e.hosts.clone()).collect();
        for e in es {
            parts.push(Partition {
                name: e.name.clone(),
                pkey: e.pkey,
                sl: e.sl,
                members: e.hosts.iter().map(|&h| (h, Membership::Full)).collect(),
            });
        }
        for (ti, e) in es.iter().enumerate() {
            for &(si, a) in &e.access {
                let svc = &es[si];
                match a {
                    Access::Full => parts[ti + 1]
                        .members
                        .extend(svc.hosts.iter().map(|&h| (h, Membership::Full))),
                    Access::Limited => parts[si + 1]
                        .members
                        .extend(e.hosts.iter().map(|&h| (h, Membership::Limited))),
                }
                let (th, sh) = (e.hosts.clone(), svc.hosts.clone());
                routes_to[ti].extend(sh);
                routes_to[si].extend(th);
            }
        }
        for p in &mut parts {
            p.members.sort_unstable();
        }
        let vrfs = es
            .iter()
            .zip(routes_to)
            .map(|(e, mut to)| {
                to.sort_unstable();
                to.dedup();
                Vrf {
                    name: e.name.clone(),
                    table: e.vrf,
                    ports_of: e.hosts.clone(),
                    routes_to: to,
                }
            })
            .collect();
        let vrf_of = f.hosts().map(|h| t.owner(h).map(|i| i as u32)).collect();
        debug_assert!(
            es.iter()
                .all(|e| e.kind == Kind::Tenant || e.access.is_empty())
        );
        Enforcement {
            partitions: parts,
            vrfs,
            vrf_of,
        }
    }

    /// Makes `sm` (the host running the subnet manager) a full member of the default
    /// partition, as OpenSM's `SELF=full` does.
    pub fn with_sm(mut self, sm: NodeId) -> Enforcement {
        if let Some(p) = self.partitions.iter_mut().find(|p| p.pkey == DEFAULT_PKEY) {
            for m in &mut p.members {
                if m.0 == sm {
                    m.1 = Membership::Full;
                }
            }
        }
        self
    }

    /// The partition through which `a` and `b` may talk (they share its PKey and one of
    /// them is a full member), if any.
    pub fn shared_partition(&self, a: NodeId, b: NodeId) -> Option<&Partition> {
        self.partitions.iter().find(|p| {
            let m = |h: NodeId| {
                p.members
                    .binary_search_by_key(&h, |x| x.0)
                    .ok()
                    .map(|i| p.members[i].1)
            };
            match (m(a), m(b)) {
                (Some(x), Some(y)) => x == Membership::Full || y == Membership::Full,
                _ => false,
            }
        })
    }

    /// The VRF host `h`'s leaf port is in (`None`: the default VRF).
    pub fn vrf(&self, h: NodeId) -> Option<&Vrf> {
        let i = (*self.vrf_of.get(h.idx())?)?;
        self.vrfs.get(i as usize)
    }
}

/// A `partitions.conf` that could not be read back.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{origin}:{line}: {msg}")]
pub struct PartitionsError {
    /// File name.
    pub origin: String,
    /// 1-based line.
    pub line: usize,
    /// What was wrong and what was expected.
    pub msg: String,
}

/// Reads an OpenSM `partitions.conf` of the shape [`crate::export::partitions`] writes
/// (`Name=0xPKEY[, flags] : 0xGUID=full|limited, …;`, keywords `ALL_CAS`, `ALL`,
/// `ALL_SWITCHES`, `SELF` allowed) into partitions over `f`'s hosts in `plane`. Port GUIDs
/// of no host of the plane are an error; switch members are left out (they forward, they
/// do not send).
pub fn parse_partitions(
    text: &str,
    f: &Fabric,
    addr: &AddressPlan,
    plane: u16,
    origin: &str,
) -> Result<Vec<Partition>, PartitionsError> {
    let guids: HashMap<u64, NodeId> = f
        .hosts()
        .filter(|&h| f.attachment(h, plane).is_some())
        .map(|h| (lid_port_guid(f, addr, h, plane), h))
        .collect();
    let mut out = Vec::new();
    // Statements end with ';' and may span lines; comments run from '#' to the line end.
    let mut stmt = String::new();
    let mut first_line = 1;
    for (i, raw) in text.lines().enumerate() {
        let line = raw.split('#').next().unwrap_or("");
        if stmt.trim().is_empty() {
            first_line = i + 1;
        }
        for c in line.chars() {
            if c == ';' {
                let e = |msg: String| PartitionsError {
                    origin: origin.to_string(),
                    line: first_line,
                    msg,
                };
                out.push(statement(&stmt, &guids, f.hosts()).map_err(e)?);
                stmt.clear();
                first_line = i + 1;
            } else {
                stmt.push(c);
            }
        }
        stmt.push(' ');
    }
    if !stmt.trim().is_empty() {
        return Err(PartitionsError {
            origin: origin.to_string(),
            line: first_line,
            msg: "statement without its closing `;`".into(),
        });
    }
    Ok(out)
}

fn statement(
    s: &str,
    guids: &HashMap<u64, NodeId>,
    hosts: impl Iterator<Item = NodeId>,
) -> Result<Partition, String> {
    let (head, body) = s
        .split_once(':')
        .ok_or_else(|| format!("`{}`: expected `Name=PKEY : members`", s.trim()))?;
    let mut flags = head.split(',');
    let (name, pkey) = flags
        .next()
        .and_then(|nk| nk.split_once('='))
        .ok_or_else(|| format!("`{}`: expected `Name=PKEY`", head.trim()))?;
    let pkey = parse_num(pkey.trim())
        .filter(|&k| k <= 0xffff)
        .ok_or_else(|| format!("`{}`: expected a PKey like 0x8001", pkey.trim()))?
        as u16
        & 0x7fff;
    let mut sl = 0;
    for fl in flags {
        if let Some(v) = fl.trim().strip_prefix("sl=") {
            sl = parse_num(v.trim())
                .filter(|&v| v < 16)
                .ok_or_else(|| format!("`{}`: expected an SL 0-15", fl.trim()))?
                as u8;
        }
    }
    let default = if pkey == DEFAULT_PKEY {
        Membership::Limited
    } else {
        Membership::Full
    };
    let all: Vec<NodeId> = hosts.collect();
    let mut members: Vec<(NodeId, Membership)> = Vec::new();
    for m in body.split(',').map(str::trim).filter(|m| !m.is_empty()) {
        let (who, how) = match m.split_once('=') {
            Some((w, h)) => (w.trim(), h.trim()),
            None => (m, ""),
        };
        let how = match how {
            "full" => Membership::Full,
            "limited" => Membership::Limited,
            "both" => Membership::Full,
            "" => default,
            o => return Err(format!("`{o}`: expected full, limited or both")),
        };
        match who {
            "ALL" | "ALL_CAS" => members.extend(all.iter().map(|&h| (h, how))),
            "ALL_SWITCHES" | "SELF" | "ALL_ROUTERS" => {}
            g => {
                let guid = parse_num(g).ok_or_else(|| format!("`{g}`: expected a port GUID"))?;
                let h = guids
                    .get(&guid)
                    .ok_or_else(|| format!("{guid:#018x} is the port GUID of no host"))?;
                members.push((*h, how));
            }
        }
    }
    // A port listed twice keeps its strongest membership.
    members.sort_unstable();
    members.dedup_by_key(|m| m.0);
    Ok(Partition {
        name: name.trim().to_string(),
        pkey,
        sl,
        members,
    })
}

fn parse_num(s: &str) -> Option<u64> {
    match s.strip_prefix("0x").or_else(|| s.strip_prefix("0X")) {
        Some(h) => u64::from_str_radix(h, 16).ok(),
        None => s.parse().ok(),
    }
}
