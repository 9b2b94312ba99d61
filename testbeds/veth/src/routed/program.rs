//! Programming `topo`'s tables into the switches: legacy multipath routes or next-hop
//! objects and groups, and reading back what the kernel holds.

use super::*;

/// A next-hop group: its switch, family and `(member object, weight)` list.
pub(super) type GroupKey = (NodeId, Family, Vec<(u32, u8)>);

/// Bookkeeping of next-hop-object programming.
#[derive(Debug)]
pub(super) struct NhState {
    pub(super) ifindex: Vec<Vec<u32>>,
    pub(super) groups: std::sync::Mutex<std::collections::HashMap<GroupKey, u32>>,
    /// Objects written since the last link change at their switch (not re-sent).
    pub(super) made: std::sync::Mutex<HashSet<(NodeId, u32)>>,
}

impl NhState {
    /// Whether object `id` of switch `s` must be (re)written; marks it written.
    pub(super) fn needs(&self, s: NodeId, id: u32) -> bool {
        self.made.lock().expect("nh registry").insert((s, id))
    }

    /// Forget what was written at `nodes`: a link going down deletes the kernel's
    /// objects on it and shrinks the groups using them, so rewrite them when used.
    pub(super) fn invalidate(&self, nodes: &[NodeId]) {
        self.made
            .lock()
            .expect("nh registry")
            .retain(|(n, _)| !nodes.contains(n));
    }
}

/// Next-hop object id of `port` in family `fam` (gateway objects; groups start at
/// [`NH_GROUP_BASE`]).
pub(super) fn nh_port_id(fam: Family, port: topo::Port) -> u32 {
    match fam {
        Family::V4 => 1 + port as u32,
        Family::V6 => 70_000 + port as u32,
    }
}

/// The routing protocol number (RTPROT_*, `proto 251` in `ip route`) of every ToR-prefix
/// route the testbed programs: how its routes are told from anyone else's (drift repair
/// removes only these). Unassigned in iproute2's `rt_protos` (FRR uses 186–196).
pub const ROUTE_PROTOCOL: u8 = 251;

/// `m` marked as the testbed's ([`ROUTE_PROTOCOL`]).
fn ours(mut m: RouteMessage) -> RouteMessage {
    m.header.protocol = ROUTE_PROTOCOL.into();
    m
}

/// First id of next-hop groups.
pub(super) const NH_GROUP_BASE: u32 = 200_000;

impl RoutedTestbed {
    /// The leaves of switch `s`'s plane (the destinations of its routes).
    pub(super) fn plane_leaves(&self, s: NodeId) -> Vec<NodeId> {
        match self.fabric.plane(s) {
            Some(p) => self.fabric.plane_info(p).leaves().map(NodeId).collect(),
            None => Vec::new(),
        }
    }

    /// Leaf `leaf`'s ToR prefix in family `fam`, as `(address, length)`.
    pub(super) fn tor_prefix(&self, leaf: NodeId, fam: Family) -> Option<(IpAddr, u8)> {
        match fam {
            Family::V4 => self
                .plan
                .tor_prefix_v4(leaf)
                .map(|p| (p.addr.into(), p.len)),
            Family::V6 => self
                .plan
                .tor_prefix_v6(leaf)
                .map(|p| (p.addr.into(), p.len)),
        }
    }

    /// Install (or replace, or delete) the routes (both families) of `s` toward leaf
    /// `leaf` from the current tables. Returns how many routes were written or deleted.
    pub(super) fn program(&self, s: NodeId, leaf: NodeId) -> Result<usize> {
        if self.routes.entry(s, leaf) == LOCAL || self.is_gone(s) {
            return Ok(0);
        }
        if self.nexthops.is_some() {
            return self.program_nh(s, leaf);
        }
        let nl = &self.nl[s.idx()];
        let mut n = 0;
        if let Some(prefix) = self.plan.tor_prefix_v4(leaf) {
            match entry_hops(&self.fabric, &self.plan, &self.routes, s, leaf) {
                Some(hops) => {
                    nl.replace_route(ours(multipath_route(prefix.addr, prefix.len, &hops)))?
                }
                None => {
                    nl.del_route(prefix.addr, prefix.len, ROUTE_PROTOCOL)?;
                }
            }
            n += 1;
        }
        if self.ipv6
            && let Some(prefix) = self.plan.tor_prefix_v6(leaf)
        {
            match entry_hops6(&self.fabric, &self.plan, &self.routes, s, leaf) {
                Some(hops) => {
                    nl.replace_route(ours(multipath_route6(prefix.addr, prefix.len, &hops)))?
                }
                None => {
                    nl.del_route(prefix.addr, prefix.len, ROUTE_PROTOCOL)?;
                }
            }
            n += 1;
        }
        Ok(n)
    }

    /// [`Self::program`] for every entry of `entries`, going on past a switch that
    /// refuses (one switch's error must not leave the others unrepaired): the routes
    /// written or deleted, and the first error.
    pub(super) fn program_each(
        &self,
        entries: impl IntoIterator<Item = (NodeId, NodeId)>,
    ) -> (usize, Option<Error>) {
        let (mut n, mut first) = (0, None);
        for (s, leaf) in entries {
            match self.program(s, leaf) {
                Ok(k) => n += k,
                Err(e) => {
                    first.get_or_insert(e);
                }
            }
        }
        (n, first)
    }

    /// [`Self::program`] with next-hop objects: (re)create one gateway object per port
    /// of the group (the kernel deletes the objects of a link that goes down, so they are
    /// re-added whenever used), one multipath group object per distinct port set (weights
    /// − 1, as in routes), and replace the route with one that only names the object
    /// (RTA_NH_ID). No route: the route is deleted.
    pub(super) fn program_nh(&self, s: NodeId, leaf: NodeId) -> Result<usize> {
        let st = self.nexthops.as_ref().expect("next-hop mode");
        let nl = &self.nl[s.idx()];
        let e = self.routes.entry(s, leaf);
        let mut ports: Vec<(topo::Port, u8)> = Vec::new();
        if e != NO_ROUTE {
            for &p in self.routes.groups().get(e) {
                match ports.iter_mut().find(|x| x.0 == p) {
                    Some(x) => x.1 = x.1.saturating_add(1),
                    None => ports.push((p, 1)),
                }
            }
        }
        let mut n = 0;
        for fam in self.families() {
            let Some((dst, len)) = self.tor_prefix(leaf, fam) else {
                continue;
            };
            n += 1;
            if ports.is_empty() {
                nl.del_route(dst, len, ROUTE_PROTOCOL)?;
                continue;
            }
            let mut members = Vec::new();
            for &(p, w) in &ports {
                let gateway: IpAddr = match fam {
                    Family::V4 => peer_addr(&self.fabric, &self.plan, s, p).map(IpAddr::V4),
                    Family::V6 => peer_addr(&self.fabric, &self.plan, s, p).map(IpAddr::V6),
                }
                .ok_or_else(|| {
                    Error::Invalid(format!(
                        "{} port {p}: no peer address",
                        self.fabric.node_name(s)
                    ))
                })?;
                let id = nh_port_id(fam, p);
                if st.needs(s, id) {
                    nl.set_nexthop(&NextHop::Via {
                        id,
                        gateway,
                        oif: st.ifindex[s.idx()][p as usize],
                    })?;
                }
                members.push((id, w));
            }
            let id = if let [(id, _)] = members[..] {
                id
            } else {
                let gid = {
                    let mut g = st.groups.lock().expect("group registry");
                    let next = NH_GROUP_BASE + g.len() as u32;
                    *g.entry((s, fam, members.clone())).or_insert(next)
                };
                if st.needs(s, gid) {
                    nl.set_nexthop(&NextHop::Group { id: gid, members })?;
                }
                gid
            };
            let msg = match (fam, dst) {
                (Family::V4, IpAddr::V4(d)) => RouteMessageBuilder::<Ipv4Addr>::new()
                    .destination_prefix(d, len)
                    .nhid(id)
                    .build(),
                (_, IpAddr::V6(d)) => RouteMessageBuilder::<Ipv6Addr>::new()
                    .destination_prefix(d, len)
                    .nhid(id)
                    .build(),
                _ => unreachable!("prefix family follows fam"),
            };
            nl.replace_route(ours(msg))?;
        }
        Ok(n)
    }

    /// The route of switch `s` toward leaf `leaf` as the kernel holds it now, read back
    /// through a netlink dump: `(gateway, weight)` next hops (weight = stored + 1), `None`
    /// if there is no such route. For checking what [`Self::program`] wrote.
    pub fn kernel_hops(
        &self,
        s: NodeId,
        leaf: NodeId,
        fam: Family,
    ) -> Result<Option<Vec<(IpAddr, u16)>>> {
        let (dst, msgs) = match fam {
            Family::V4 => {
                let p = self.plan.tor_prefix_v4(leaf);
                (
                    p.map(|p| (IpAddr::V4(p.addr), p.len)),
                    self.nl[s.idx()].routes()?,
                )
            }
            Family::V6 => {
                let p = self.plan.tor_prefix_v6(leaf);
                (
                    p.map(|p| (IpAddr::V6(p.addr), p.len)),
                    self.nl[s.idx()].routes6()?,
                )
            }
        };
        let Some(dst) = dst else {
            return Ok(None);
        };
        Ok(msgs
            .iter()
            .find(|m| route_dst(m) == Some(dst))
            .map(route_hops))
    }

    /// The next hops `topo` wants for `s` → `leaf` in family `fam`, in the form of
    /// [`Self::kernel_hops`].
    pub fn wanted_hops(&self, s: NodeId, leaf: NodeId, fam: Family) -> Option<Vec<(IpAddr, u16)>> {
        let mut v: Vec<(IpAddr, u16)> = match fam {
            Family::V4 => entry_hops(&self.fabric, &self.plan, &self.routes, s, leaf)?
                .into_iter()
                .map(|(a, w)| (a.into(), w.into()))
                .collect(),
            Family::V6 => entry_hops6(&self.fabric, &self.plan, &self.routes, s, leaf)?
                .into_iter()
                .map(|(a, w)| (a.into(), w.into()))
                .collect(),
        };
        v.sort();
        Some(v)
    }
}
