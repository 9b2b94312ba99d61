//! Route drift: what the kernel holds compared with what `topo`'s tables want, for every
//! switch, destination leaf and family — one route dump per switch and family.
//!
//! The kernel expands a route that names a next-hop group (`nhid`) into its member
//! gateways in dumps (`net.ipv4.nexthop_compat_mode`, on by default), so the comparison
//! sees the groups' current members: a next-hop object deleted with its link shrinks the
//! expansion. With next-hop objects, a route that no longer names a group (replaced by a
//! legacy one behind the testbed's back) is drift too.

use serde::Serialize;

use super::*;

/// How a route differs from the tables.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum DriftKind {
    /// The tables want a route the kernel does not have.
    Missing,
    /// The kernel has a route the tables do not want: to a ToR prefix (no route there,
    /// or the leaf's own prefix), or to anything more specific inside one (a `/32` or
    /// `/29` added by hand wins over the fabric's routes by longest match), except a
    /// leaf's link routes to its own hosts.
    Extra,
    /// Both have it with different next hops (gateways or weights), or it does not name
    /// a next-hop group where it should.
    Different,
}

impl DriftKind {
    /// Every kind, in report order.
    pub const ALL: [DriftKind; 3] = [DriftKind::Missing, DriftKind::Extra, DriftKind::Different];

    /// Lower-case name.
    pub fn as_str(self) -> &'static str {
        match self {
            DriftKind::Missing => "missing",
            DriftKind::Extra => "extra",
            DriftKind::Different => "different",
        }
    }
}

/// One drifted route.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct DriftEntry {
    /// Switch name.
    pub switch: String,
    /// Destination leaf name.
    pub leaf: String,
    /// Address family.
    pub family: Family,
    /// Destination prefix.
    pub prefix: String,
    /// What differs.
    pub kind: DriftKind,
    /// `(gateway, weight)` next hops the tables want (empty: no route).
    pub wanted: Hops,
    /// `(gateway, weight)` next hops in the kernel (empty: no route).
    pub kernel: Hops,
    /// The next-hop group (or object) the kernel's route names, if any.
    pub kernel_nhid: Option<u32>,
    /// The routing protocol number of the kernel's route (RTPROT_*; the testbed's is
    /// [`ROUTE_PROTOCOL`]), if there is one.
    pub kernel_protocol: Option<u8>,
}

/// What [`RoutedTestbed::drift`] found.
#[derive(Debug, Clone, Default, Serialize)]
pub struct Drift {
    /// (switch, leaf, family) entries compared.
    pub checked: usize,
    /// The entries that differ.
    pub entries: Vec<DriftEntry>,
    /// Time the dumps and the comparison took, s.
    pub took_s: f64,
}

impl Drift {
    /// Entries of kind `k`.
    pub fn count(&self, k: DriftKind) -> usize {
        self.entries.iter().filter(|e| e.kind == k).count()
    }
}

/// The next-hop group id a route names.
fn route_nhid(m: &RouteMessage) -> Option<u32> {
    use netlink_packet_route::route::RouteAttribute;
    m.attributes.iter().find_map(|a| match a {
        RouteAttribute::NhId(id) => Some(*id),
        _ => None,
    })
}

/// `(gateway, weight)` next hops.
type Hops = Vec<(IpAddr, u16)>;

/// A mismatch: its kind, the wanted and the kernel's next hops, the kernel's group id.
pub(super) type Mismatch = (DriftKind, Hops, Hops, Option<u32>);

/// Compares one entry; `None` when it matches.
pub(super) fn compare(
    wanted: Option<Hops>,
    kernel: Option<&RouteMessage>,
    want_nhid: bool,
) -> Option<Mismatch> {
    let nhid = kernel.and_then(route_nhid);
    let got = kernel.map(route_hops);
    let kind = match (&wanted, &got) {
        (None, None) => return None,
        (Some(_), None) => DriftKind::Missing,
        (None, Some(_)) => DriftKind::Extra,
        (Some(w), Some(k)) if w == k && (!want_nhid || nhid.is_some()) => return None,
        (Some(_), Some(_)) => DriftKind::Different,
    };
    Some((
        kind,
        wanted.unwrap_or_default(),
        got.unwrap_or_default(),
        nhid,
    ))
}

impl RoutedTestbed {
    /// Reads every switch's routes back (one dump per switch and family) and compares
    /// each ToR-prefix route with the tables.
    pub fn drift(&self) -> Result<Drift> {
        let t = Instant::now();
        let mut d = Drift::default();
        let want_nhid = self.nexthops.is_some();
        for s in self.fabric.switches().filter(|&s| !self.is_gone(s)) {
            for fam in self.families() {
                let dump = match fam {
                    Family::V4 => self.nl[s.idx()].routes()?,
                    Family::V6 => self.nl[s.idx()].routes6()?,
                };
                for leaf in self.plane_leaves(s) {
                    let Some(dst) = self.tor_prefix(leaf, fam) else {
                        continue;
                    };
                    d.checked += 1;
                    let wanted = if self.routes.entry(s, leaf) == LOCAL {
                        None
                    } else {
                        self.wanted_hops(s, leaf, fam)
                    };
                    let kernel = dump.iter().find(|m| route_dst(m) == Some(dst));
                    let kernel_protocol = kernel.map(|m| u8::from(m.header.protocol));
                    if let Some((kind, wanted, kernel, kernel_nhid)) =
                        compare(wanted, kernel, want_nhid)
                    {
                        d.entries.push(DriftEntry {
                            switch: self.fabric.node_name(s).to_string(),
                            leaf: self.fabric.node_name(leaf).to_string(),
                            family: fam,
                            prefix: format!("{}/{}", dst.0, dst.1),
                            kind,
                            wanted,
                            kernel,
                            kernel_nhid,
                            kernel_protocol,
                        });
                    }
                }
                d.entries.extend(self.inside_plan(s, fam, &dump));
            }
        }
        d.took_s = secs(t);
        Ok(d)
    }

    /// Every main-table unicast route in `dump` (switch `s`'s, family `fam`) inside the
    /// address plan of `s`'s plane (the span of its leaves' ToR prefixes) that the tables
    /// do not hold: more specific than a ToR prefix (a `/32` wins by longest match), or
    /// spanning several (a `/29` over two `/30`s catches what a missing route leaves),
    /// or the span itself. A leaf's link routes to its own hosts are wanted; anything else
    /// there is [`DriftKind::Extra`]. The ToR prefixes themselves are compared per leaf.
    fn inside_plan(&self, s: NodeId, fam: Family, dump: &[RouteMessage]) -> Vec<DriftEntry> {
        let prefixes: Vec<(NodeId, (IpAddr, u8))> = self
            .plane_leaves(s)
            .into_iter()
            .filter_map(|l| Some((l, self.tor_prefix(l, fam)?)))
            .collect();
        let Some(span) = span(prefixes.iter().map(|&(_, p)| p)) else {
            return Vec::new();
        };
        let mut out = Vec::new();
        for m in dump.iter().filter(|m| is_main_unicast(m)) {
            let Some(dst) = route_dst(m) else { continue };
            if !inside(dst, span) || prefixes.iter().any(|&(_, p)| p == dst) {
                continue;
            }
            let leaf = prefixes
                .iter()
                .find(|&&(_, p)| inside(dst, p) || inside(p, dst))
                .map(|&(l, _)| l);
            let hops = route_hops(m);
            if leaf == Some(s) && hops.is_empty() && is_host_route(dst, fam) {
                continue;
            }
            out.push(DriftEntry {
                switch: self.fabric.node_name(s).to_string(),
                // A route in a gap between ToR prefixes names the switch itself.
                leaf: self.fabric.node_name(leaf.unwrap_or(s)).to_string(),
                family: fam,
                prefix: format!("{}/{}", dst.0, dst.1),
                kind: DriftKind::Extra,
                wanted: Vec::new(),
                kernel: hops,
                kernel_nhid: route_nhid(m),
                kernel_protocol: Some(u8::from(m.header.protocol)),
            });
        }
        out
    }
}

/// Whether `dst` is a host route (`/32`, `/128`). On a leaf, inside its own prefix and with
/// no gateway, that is the link route to one of its own hosts, however the testbed was built
/// (an adopted testbed's routes come from `ip -batch`, not from addresses the daemon assigned).
fn is_host_route(dst: (IpAddr, u8), fam: Family) -> bool {
    let host_len = match fam {
        Family::V4 => 32,
        Family::V6 => 128,
    };
    dst.1 == host_len
}

/// A route of the main table that forwards (not a local, broadcast or blackhole entry)
/// and that someone wrote: the kernel's own routes for the switch's addresses
/// (`proto kernel`, such as the `/128` of an IPv6 gateway address) are not drift.
fn is_main_unicast(m: &RouteMessage) -> bool {
    use netlink_packet_route::route::{RouteAttribute, RouteType};
    let table = m
        .attributes
        .iter()
        .find_map(|a| match a {
            RouteAttribute::Table(t) => Some(*t),
            _ => None,
        })
        .unwrap_or(u32::from(m.header.table));
    table == 254
        && m.header.kind == RouteType::Unicast
        && u8::from(m.header.protocol) != RTPROT_KERNEL
}

/// `proto kernel` (linux/rtnetlink.h): a route the kernel made from an address.
const RTPROT_KERNEL: u8 = 2;

/// An address as 128 bits (IPv4 in the top 32) and its family's width.
fn bits(a: IpAddr) -> (u128, u8) {
    match a {
        IpAddr::V4(v) => (u128::from(u32::from(v)) << 96, 32),
        IpAddr::V6(v) => (u128::from(v), 128),
    }
}

/// The mask of a `len`-bit prefix over [`bits`].
fn mask(len: u8) -> u128 {
    if len == 0 {
        0
    } else {
        u128::MAX << (128 - u32::from(len.min(128)))
    }
}

/// Whether prefix `dst` lies inside `p` (equal or longer, same family).
fn inside(dst: (IpAddr, u8), p: (IpAddr, u8)) -> bool {
    let ((d, dw), (n, nw)) = (bits(dst.0), bits(p.0));
    dw == nw && dst.1 >= p.1 && p.1 <= nw && d & mask(p.1) == n & mask(p.1)
}

/// `ADDR/LEN` as a drift entry writes it.
fn parse_prefix(s: &str) -> Option<(IpAddr, u8)> {
    let (a, l) = s.split_once('/')?;
    Some((a.parse().ok()?, l.parse().ok()?))
}

/// The smallest prefix holding every one of `prefixes` (same family); `None` for none.
fn span(prefixes: impl Iterator<Item = (IpAddr, u8)>) -> Option<(IpAddr, u8)> {
    let mut out: Option<(u128, u8, u8)> = None; // (bits, length, family width)
    for (a, len) in prefixes {
        let (b, w) = bits(a);
        out = Some(match out {
            None => (b, len, w),
            Some((_, _, ow)) if ow != w => return None,
            Some((o, olen, _)) => {
                let common = (o ^ b).leading_zeros().min(128) as u8;
                (o, olen.min(len).min(common), w)
            }
        });
    }
    let (b, len, w) = out?;
    let net = b & mask(len);
    let addr = if w == 32 {
        IpAddr::V4(Ipv4Addr::from((net >> 96) as u32))
    } else {
        IpAddr::V6(Ipv6Addr::from(net))
    };
    Some((addr, len))
}

/// What [`RoutedTestbed::repair_drift`] did.
#[derive(Debug, Clone, Default, Serialize)]
pub struct DriftRepair {
    /// Missing entries re-added.
    pub missing: usize,
    /// Extra entries (the testbed's own routes) removed.
    pub extra: usize,
    /// Different entries re-programmed from the tables.
    pub different: usize,
    /// Extra routes left in place because another protocol wrote them (not ours to
    /// remove).
    pub skipped: Vec<DriftEntry>,
    /// Routes written or deleted through netlink (both families of an entry are
    /// re-programmed together).
    pub routes: usize,
    /// Entries whose repair the kernel refused, with its error (the others are still
    /// repaired).
    pub failed: Vec<(DriftEntry, String)>,
    /// Time the repair took, s.
    pub took_s: f64,
}

impl RoutedTestbed {
    /// Reprograms what drifted in `d` (a [`Self::drift`] report): a missing or different
    /// entry is re-programmed from the tables (its next-hop objects and group re-sent),
    /// an extra route is deleted when the testbed wrote it ([`ROUTE_PROTOCOL`]) and
    /// left (listed in `skipped`) when another protocol did. Switches whose namespace
    /// vanished are skipped; an entry the kernel refuses is listed in `failed` and the
    /// repair goes on.
    pub fn repair_drift(&self, d: &Drift) -> Result<DriftRepair> {
        let t = Instant::now();
        let names = self.fabric.name_index();
        let node = |name: &str| {
            names.get(name).copied().ok_or_else(|| {
                Error::Invalid(format!("drift entry names {name:?}, not in the fabric"))
            })
        };
        let mut r = DriftRepair::default();
        let mut done = HashSet::new();
        for e in &d.entries {
            let (s, leaf) = (node(&e.switch)?, node(&e.leaf)?);
            if self.is_gone(s) {
                continue;
            }
            match e.kind {
                DriftKind::Missing | DriftKind::Different => {
                    if done.insert((s, leaf)) {
                        if let Some(st) = &self.nexthops {
                            // Rewrite the objects and group even if they were written
                            // before: a member may be what vanished.
                            st.invalidate(&[s]);
                        }
                        match self.program(s, leaf) {
                            Ok(n) => r.routes += n,
                            Err(err) => {
                                r.failed.push((e.clone(), err.to_string()));
                                continue;
                            }
                        }
                    }
                    if e.kind == DriftKind::Missing {
                        r.missing += 1;
                    } else {
                        r.different += 1;
                    }
                }
                DriftKind::Extra if e.kernel_protocol == Some(ROUTE_PROTOCOL) => {
                    // The entry's own prefix: a ToR prefix, or a route inside the plan.
                    let (dst, len) = parse_prefix(&e.prefix).ok_or_else(|| {
                        Error::Invalid(format!("drift entry prefix {:?}", e.prefix))
                    })?;
                    if let Err(err) = self.nl[s.idx()].del_route(dst, len, ROUTE_PROTOCOL) {
                        r.failed.push((e.clone(), err.to_string()));
                        continue;
                    }
                    r.routes += 1;
                    r.extra += 1;
                }
                DriftKind::Extra => r.skipped.push(e.clone()),
            }
        }
        r.took_s = secs(t);
        Ok(r)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use netlink_packet_route::route::RouteAttribute;

    fn route(hops: &[(Ipv4Addr, u8)], nhid: Option<u32>) -> RouteMessage {
        let mut m = multipath_route(Ipv4Addr::new(10, 0, 0, 0), 30, hops);
        if let Some(id) = nhid {
            m.attributes.push(RouteAttribute::NhId(id));
        }
        m
    }

    #[test]
    fn entries_are_classified() {
        let a = Ipv4Addr::new(10, 64, 0, 1);
        let b = Ipv4Addr::new(10, 64, 0, 3);
        let want = |v: &[(Ipv4Addr, u16)]| Some(v.iter().map(|&(g, w)| (g.into(), w)).collect());
        let both = route(&[(a, 1), (b, 1)], Some(200_000));
        assert_eq!(compare(want(&[(a, 1), (b, 1)]), Some(&both), true), None);
        assert_eq!(compare(None, None, true), None);
        let (k, w, got, id) = compare(want(&[(a, 1)]), None, true).unwrap();
        assert_eq!(
            (k, w.len(), got.len(), id),
            (DriftKind::Missing, 1, 0, None)
        );
        let (k, _, got, id) = compare(None, Some(&both), true).unwrap();
        assert_eq!((k, got.len(), id), (DriftKind::Extra, 2, Some(200_000)));
        // One member gone, a weight changed, or no group where one should be.
        let one = route(&[(a, 1)], Some(200_000));
        let k = compare(want(&[(a, 1), (b, 1)]), Some(&one), true)
            .unwrap()
            .0;
        assert_eq!(k, DriftKind::Different);
        let heavy = route(&[(a, 2), (b, 1)], Some(200_000));
        let k = compare(want(&[(a, 1), (b, 1)]), Some(&heavy), true)
            .unwrap()
            .0;
        assert_eq!(k, DriftKind::Different);
        let legacy = route(&[(a, 1), (b, 1)], None);
        let k = compare(want(&[(a, 1), (b, 1)]), Some(&legacy), true)
            .unwrap()
            .0;
        assert_eq!(k, DriftKind::Different);
        assert_eq!(compare(want(&[(a, 1), (b, 1)]), Some(&legacy), false), None);
    }
}

#[cfg(test)]
mod prefix_tests {
    use super::*;

    #[test]
    fn routes_inside_the_plan() {
        let v4 = |s: &str, l| (s.parse::<IpAddr>().unwrap(), l);
        let tor = v4("10.1.2.0", 24);
        assert!(inside(v4("10.1.2.7", 32), tor));
        assert!(inside(v4("10.1.2.8", 29), tor));
        assert!(inside(v4("10.1.2.0", 24), tor), "the prefix itself");
        assert!(!inside(v4("10.1.3.7", 32), tor), "outside");
        assert!(!inside(v4("10.1.0.0", 16), tor), "wider");
        let v6 = |s: &str, l| (s.parse::<IpAddr>().unwrap(), l);
        assert!(inside(v6("fd00:1:2::5", 128), v6("fd00:1:2::", 64)));
        assert!(!inside(v6("fd00:1:3::5", 128), v6("fd00:1:2::", 64)));
        assert!(!inside(v4("10.1.2.7", 32), v6("::", 0)), "families differ");
        // Eight /30s of a k=4 fat-tree span a /27; a /29 over two of them is inside it,
        // the default route and the /8 are not.
        let tors = (0..8).map(|i| v4(&format!("10.0.0.{}", 4 * i), 30));
        let plan = span(tors).unwrap();
        assert_eq!(plan, v4("10.0.0.0", 27));
        assert!(inside(v4("10.0.0.8", 29), plan));
        assert!(!inside(v4("0.0.0.0", 0), plan));
        assert!(!inside(v4("10.0.0.0", 8), plan));
        let v6tors = (0..8u16).map(|i| v6(&format!("fd00:0:0:{i:x}::"), 64));
        assert_eq!(span(v6tors).unwrap(), v6("fd00::", 61));
        assert_eq!(span(std::iter::empty()), None);
        assert_eq!(parse_prefix("10.0.0.8/29"), Some(v4("10.0.0.8", 29)));
        assert_eq!(parse_prefix("10.0.0.8"), None);
        assert_eq!(
            span([v4("10.0.0.0", 30), v6("fd00::", 64)].into_iter()),
            None
        );
    }
}
