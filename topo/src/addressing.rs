//! The addressing plan: IPv4/IPv6 prefixes per ToR and host addresses, loopbacks,
//! point-to-point link subnets, BGP ASNs (RFC 7938), InfiniBand LIDs and GUIDs.
//!
//! All addresses are computed from ids (no tables), so accessors are O(1) after the
//! plan is built.
//!
//! * **ToR prefixes** (IPv4): each leaf gets the smallest power-of-two block holding its
//!   host ports + 2 (network and gateway), allocated in leaf order from `host_v4`
//!   (default `10.0.0.0/10`). The leaf (gateway) is `.1`; the host on leaf port `p` is
//!   `.(p + 2)`. IPv6: `fd00:0:0:<leaf>::/64` under `host_v6`; gateway `::1`, host `::(p+2)`.
//! * **Loopbacks**: switch `i` (counting switches from 0) is `10.128.0.0/16 + i` (/32) and
//!   `fd00:ffff::<i>/128`.
//! * **Point-to-point subnets**: switch–switch link `j` (counting only those) gets
//!   `10.64.0.0/10 + 2j` as a /31 (lower end `.0`, upper end `.1`, RFC 3021) and
//!   `fd00:fffe::<2j>/127`.
//! * **ASNs** (RFC 7938 §5.2.1, 4-byte private range of RFC 6996 because the 2-byte range
//!   has only 1023 numbers, as RFC 7938 §5.2.2 notes): the top tier of each plane
//!   shares one ASN (`4200000000 + plane`); tier 2 of a 3-tier plane / a Dragonfly+ group
//!   shares one ASN per pod (`4201000000 + plane × 65536 + pod`); every ToR has its own
//!   (`4210000000 + leaf index`).
//! * **LIDs**: each plane is its own subnet; host ports are LIDs `1..=H` in column order
//!   (leaf, leaf port), switches follow. `None` past the unicast range (`0xBFFF`).
//! * **GUIDs**: node GUID `0x0002_c903_0000_0000 | node id << 8` (Mellanox OUI `00:02:c9`);
//!   a host port GUID adds `port + 1`; a switch's port GUID is its node GUID.

use std::net::{Ipv4Addr, Ipv6Addr};

use crate::model::*;
use crate::{Error, Result};

/// An IPv4 prefix.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize)]
pub struct V4Net {
    /// Network address.
    pub addr: Ipv4Addr,
    /// Prefix length.
    pub len: u8,
}

impl std::fmt::Display for V4Net {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}/{}", self.addr, self.len)
    }
}

/// An IPv6 prefix.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize)]
pub struct V6Net {
    /// Network address.
    pub addr: Ipv6Addr,
    /// Prefix length.
    pub len: u8,
}

impl std::fmt::Display for V6Net {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}/{}", self.addr, self.len)
    }
}

/// Bases of the plan.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PlanConfig {
    /// ToR prefixes come from here.
    pub host_v4: V4Net,
    /// Point-to-point /31s come from here.
    pub p2p_v4: V4Net,
    /// Loopback /32s come from here.
    pub loopback_v4: V4Net,
}

impl Default for PlanConfig {
    fn default() -> Self {
        PlanConfig {
            host_v4: V4Net {
                addr: Ipv4Addr::new(10, 0, 0, 0),
                len: 10,
            },
            p2p_v4: V4Net {
                addr: Ipv4Addr::new(10, 64, 0, 0),
                len: 10,
            },
            loopback_v4: V4Net {
                addr: Ipv4Addr::new(10, 128, 0, 0),
                len: 16,
            },
        }
    }
}

/// The addressing plan of a fabric.
#[derive(Debug, Clone)]
pub struct AddressPlan {
    cfg: PlanConfig,
    nh: u32,
    /// Per leaf (id − first leaf of all switches…): index among all leaves.
    leaf_index: Vec<u32>,
    /// Per leaf index: (base offset in host block, prefix length).
    leaf_block: Vec<(u32, u8)>,
    /// Per link: index among switch–switch links (u32::MAX for host links).
    p2p_index: Vec<u32>,
    /// Per host per plane: LID column (1-based LID = col + 1).
    lid_col: Vec<u32>,
    /// Per plane: (first switch, number of host ports).
    plane_lid: Vec<(u32, u32)>,
    np: usize,
    /// Whether IPv4 is planned (see [`AddressPlan::without_ipv4`]).
    v4: bool,
}

const NONE_U32: u32 = u32::MAX;

impl AddressPlan {
    /// Builds the plan with the default bases.
    pub fn new(f: &Fabric) -> Result<AddressPlan> {
        AddressPlan::with_config(f, PlanConfig::default())
    }

    /// Builds the plan without IPv4 (IPv6, ASNs, LIDs and GUIDs only): for exports that
    /// need no IPv4 address (OpenSM, DOT, Slurm), so a fabric too large for the IPv4
    /// blocks (a k=256 fat-tree needs 8.4M ToR addresses, a /10 holds 4.2M) still
    /// exports. Every IPv4 accessor then returns `None`.
    pub fn without_ipv4(f: &Fabric) -> Result<AddressPlan> {
        AddressPlan::plan(f, PlanConfig::default(), false)
    }

    /// Builds the plan; fails if a block is too small for the fabric.
    pub fn with_config(f: &Fabric, cfg: PlanConfig) -> Result<AddressPlan> {
        AddressPlan::plan(f, cfg, true)
    }

    /// True if the plan has IPv4 addresses.
    pub fn has_ipv4(&self) -> bool {
        self.v4
    }

    fn plan(f: &Fabric, cfg: PlanConfig, v4: bool) -> Result<AddressPlan> {
        let nh = f.num_hosts() as u32;
        let np = f.num_planes();
        let mut leaf_index = vec![NONE_U32; f.num_switches()];
        let mut leaf_block = Vec::new();
        let mut next: u64 = 0;
        let mut li = 0u32;
        for p in f.planes() {
            for l in p.leaves() {
                let n = NodeId(l);
                let hosts = (0..f.degree(n) as Port)
                    .filter(|&k| f.is_host(f.peer(n, k)))
                    .count() as u64;
                // Host addresses are leaf port + 2, so size by the highest host port.
                let need = (0..f.degree(n) as Port)
                    .filter(|&k| f.is_host(f.peer(n, k)))
                    .map(|k| k as u64 + 3)
                    .max()
                    .unwrap_or(2)
                    .max(hosts + 2);
                let size = need.next_power_of_two().max(4);
                next = next.div_ceil(size) * size;
                let len = 32 - size.trailing_zeros() as u8;
                leaf_index[(l - nh) as usize] = li;
                leaf_block.push((next as u32, len));
                next += size;
                li += 1;
            }
        }
        let cap = 1u64 << (32 - cfg.host_v4.len);
        if v4 && next > cap {
            return Err(Error::Addressing(format!(
                "ToR prefixes need {next} IPv4 addresses but {} holds {cap}",
                cfg.host_v4
            )));
        }
        let mut p2p_index = vec![NONE_U32; f.num_links()];
        let mut j = 0u32;
        for (i, l) in f.links().iter().enumerate() {
            if !f.is_host(l.a) {
                p2p_index[i] = j;
                j += 1;
            }
        }
        let cap = 1u64 << (32 - cfg.p2p_v4.len);
        if v4 && 2 * j as u64 > cap {
            return Err(Error::Addressing(format!(
                "{j} point-to-point links need {} addresses but {} holds {cap}",
                2 * j,
                cfg.p2p_v4
            )));
        }
        let cap = 1u64 << (32 - cfg.loopback_v4.len);
        if v4 && f.num_switches() as u64 > cap {
            return Err(Error::Addressing(format!(
                "{} switches need loopbacks but {} holds {cap}",
                f.num_switches(),
                cfg.loopback_v4
            )));
        }
        let mut lid_col = vec![NONE_U32; nh as usize * np];
        let mut plane_lid = Vec::new();
        for (pi, p) in f.planes().iter().enumerate() {
            let mut cols: Vec<(u32, Port, u32)> = f
                .hosts()
                .filter_map(|h| {
                    f.attachment(h, pi as u16)
                        .map(|a| (a.leaf.0, a.leaf_port, h.0))
                })
                .collect();
            cols.sort_unstable();
            for (c, &(_, _, h)) in cols.iter().enumerate() {
                lid_col[h as usize * np + pi] = c as u32;
            }
            plane_lid.push((p.switches().start, cols.len() as u32));
        }
        Ok(AddressPlan {
            cfg,
            nh,
            leaf_index,
            leaf_block,
            p2p_index,
            lid_col,
            plane_lid,
            np,
            v4,
        })
    }

    fn leaf_idx(&self, leaf: NodeId) -> Option<u32> {
        let i = *self.leaf_index.get(leaf.0.checked_sub(self.nh)? as usize)?;
        (i != NONE_U32).then_some(i)
    }

    /// IPv4 prefix of a ToR (leaf).
    pub fn tor_prefix_v4(&self, leaf: NodeId) -> Option<V4Net> {
        if !self.v4 {
            return None;
        }
        let (off, len) = self.leaf_block[self.leaf_idx(leaf)? as usize];
        Some(V4Net {
            addr: Ipv4Addr::from(u32::from(self.cfg.host_v4.addr) + off),
            len,
        })
    }

    /// IPv6 prefix of a ToR: `fd00:0:0:<leaf index>::/64`.
    pub fn tor_prefix_v6(&self, leaf: NodeId) -> Option<V6Net> {
        let i = self.leaf_idx(leaf)? as u128;
        Some(V6Net {
            addr: Ipv6Addr::from((0xfd00u128 << 112) | (i << 64)),
            len: 64,
        })
    }

    /// Gateway (leaf) address in its ToR prefix.
    pub fn gateway_v4(&self, leaf: NodeId) -> Option<Ipv4Addr> {
        self.tor_prefix_v4(leaf)
            .map(|n| Ipv4Addr::from(u32::from(n.addr) + 1))
    }

    /// Gateway (leaf) address in its IPv6 ToR prefix (`::1`).
    pub fn gateway_v6(&self, leaf: NodeId) -> Option<Ipv6Addr> {
        self.tor_prefix_v6(leaf)
            .map(|n| Ipv6Addr::from(u128::from(n.addr) + 1))
    }

    /// IPv4 address of a host's port in `plane` (in its leaf's prefix).
    pub fn host_v4(&self, f: &Fabric, host: NodeId, plane: u16) -> Option<Ipv4Addr> {
        let a = f.attachment(host, plane)?;
        let n = self.tor_prefix_v4(a.leaf)?;
        Some(Ipv4Addr::from(u32::from(n.addr) + a.leaf_port as u32 + 2))
    }

    /// IPv6 address of a host's port in `plane`.
    pub fn host_v6(&self, f: &Fabric, host: NodeId, plane: u16) -> Option<Ipv6Addr> {
        let a = f.attachment(host, plane)?;
        let n = self.tor_prefix_v6(a.leaf)?;
        Some(Ipv6Addr::from(u128::from(n.addr) + a.leaf_port as u128 + 2))
    }

    /// Loopback (/32) of a switch.
    pub fn loopback_v4(&self, sw: NodeId) -> Option<Ipv4Addr> {
        if !self.v4 {
            return None;
        }
        let i = sw.0.checked_sub(self.nh)?;
        Some(Ipv4Addr::from(u32::from(self.cfg.loopback_v4.addr) + i))
    }

    /// Loopback (/128) of a switch: `fd00:ffff::<i>`.
    pub fn loopback_v6(&self, sw: NodeId) -> Option<Ipv6Addr> {
        let i = sw.0.checked_sub(self.nh)? as u128;
        Some(Ipv6Addr::from((0xfd00_ffffu128 << 96) | i))
    }

    /// /31 of a switch–switch link and the addresses of its `a` (lower) and `b` ends.
    pub fn link_v4(&self, l: LinkId) -> Option<(V4Net, Ipv4Addr, Ipv4Addr)> {
        let j = *self.p2p_index.get(l.idx())?;
        if j == NONE_U32 || !self.v4 {
            return None;
        }
        let a = u32::from(self.cfg.p2p_v4.addr) + 2 * j;
        Some((
            V4Net {
                addr: Ipv4Addr::from(a),
                len: 31,
            },
            Ipv4Addr::from(a),
            Ipv4Addr::from(a + 1),
        ))
    }

    /// /127 of a switch–switch link and its two ends.
    pub fn link_v6(&self, l: LinkId) -> Option<(V6Net, Ipv6Addr, Ipv6Addr)> {
        let j = *self.p2p_index.get(l.idx())?;
        if j == NONE_U32 {
            return None;
        }
        let a = (0xfd00_fffeu128 << 96) | (2 * j as u128);
        Some((
            V6Net {
                addr: Ipv6Addr::from(a),
                len: 127,
            },
            Ipv6Addr::from(a),
            Ipv6Addr::from(a + 1),
        ))
    }

    /// BGP ASN of a switch (RFC 7938 §5.2.1).
    pub fn asn(&self, f: &Fabric, sw: NodeId) -> Option<u32> {
        let pl = f.plane(sw)? as u32;
        let p = f.plane_info(pl as u16);
        let t = f.tier(sw);
        let top = p.num_tiers();
        if t == TIER_LEAF {
            return Some(4_210_000_000 + self.leaf_idx(sw)?);
        }
        if t == top && p.kind == PlaneKind::Clos {
            return Some(4_200_000_000 + pl);
        }
        Some(4_201_000_000 + pl * 65_536 + f.pod(sw)?)
    }

    /// InfiniBand LID of a host's port in `plane` (its plane's subnet).
    pub fn host_lid(&self, host: NodeId, plane: u16) -> Option<u16> {
        let c = *self.lid_col.get(host.idx() * self.np + plane as usize)?;
        lid(c as u64 + 1)
    }

    /// LID of a switch (after the plane's host ports).
    pub fn switch_lid(&self, f: &Fabric, sw: NodeId) -> Option<u16> {
        let pl = f.plane(sw)? as usize;
        let (first, hosts) = self.plane_lid[pl];
        lid(hosts as u64 + (sw.0 - first) as u64 + 1)
    }

    /// Node GUID.
    pub fn node_guid(&self, n: NodeId) -> u64 {
        0x0002_c903_0000_0000 | (n.0 as u64) << 8
    }

    /// Port GUID (hosts: node GUID + port + 1; switches: the node GUID).
    pub fn port_guid(&self, f: &Fabric, n: NodeId, port: Port) -> u64 {
        if f.is_host(n) {
            self.node_guid(n) + port as u64 + 1
        } else {
            self.node_guid(n)
        }
    }
}

fn lid(v: u64) -> Option<u16> {
    (v <= 0xBFFF).then_some(v as u16)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::generators::*;
    use crate::units::Rate;
    use std::collections::HashSet;

    #[test]
    fn fat_tree_plan_is_unique_and_contained() {
        let f = fat_tree(8, Rate::gbps(100)).unwrap();
        let a = AddressPlan::new(&f).unwrap();
        let mut seen = HashSet::new();
        for h in f.hosts() {
            let ip = a.host_v4(&f, h, 0).unwrap();
            assert!(seen.insert(ip), "{ip}");
            let leaf = f.attachment(h, 0).unwrap().leaf;
            let n = a.tor_prefix_v4(leaf).unwrap();
            let mask = u32::MAX << (32 - n.len);
            assert_eq!(u32::from(ip) & mask, u32::from(n.addr));
            assert_ne!(Some(ip), a.gateway_v4(leaf));
        }
        let leaf0 = NodeId(f.num_hosts() as u32);
        assert_eq!(a.tor_prefix_v4(leaf0).unwrap().to_string(), "10.0.0.0/29");
        assert_eq!(
            a.host_v4(&f, NodeId(0), 0),
            Some(Ipv4Addr::new(10, 0, 0, 2))
        );
        assert_eq!(a.host_v6(&f, NodeId(0), 0).unwrap().to_string(), "fd00::2");
        assert_eq!(a.loopback_v4(leaf0), Some(Ipv4Addr::new(10, 128, 0, 0)));
        let l = LinkId(f.num_hosts() as u32);
        let (net, x, y) = a.link_v4(l).unwrap();
        assert_eq!(
            (net.to_string(), x, y),
            (
                "10.64.0.0/31".into(),
                Ipv4Addr::new(10, 64, 0, 0),
                Ipv4Addr::new(10, 64, 0, 1)
            )
        );
        assert!(a.link_v4(LinkId(0)).is_none());
        // ASNs: every ToR unique; one per pod at tier 2; one for all cores.
        let tors: HashSet<_> = f
            .switches_in_tier(1)
            .map(|s| a.asn(&f, s).unwrap())
            .collect();
        assert_eq!(tors.len(), 32);
        let aggs: HashSet<_> = f
            .switches_in_tier(2)
            .map(|s| a.asn(&f, s).unwrap())
            .collect();
        assert_eq!(aggs.len(), 8);
        let cores: HashSet<_> = f
            .switches_in_tier(3)
            .map(|s| a.asn(&f, s).unwrap())
            .collect();
        assert_eq!(cores, HashSet::from([4_200_000_000]));
        assert_eq!(a.host_lid(NodeId(0), 0), Some(1));
        assert_eq!(a.switch_lid(&f, leaf0), Some(129));
        assert_eq!(a.port_guid(&f, NodeId(1), 0), a.node_guid(NodeId(1)) + 1);
    }

    #[test]
    fn a_plan_without_ipv4_ignores_the_ipv4_blocks() {
        // k=24: 288 leaves x 16 addresses = 4,608 > a /20's 4,096.
        let f = fat_tree(24, Rate::gbps(100)).unwrap();
        let small = V4Net {
            addr: Ipv4Addr::new(10, 0, 0, 0),
            len: 20,
        };
        let cfg = PlanConfig {
            host_v4: small,
            ..Default::default()
        };
        assert!(AddressPlan::with_config(&f, cfg).is_err());
        let a = AddressPlan::without_ipv4(&f).unwrap();
        assert!(!a.has_ipv4());
        let leaf = f.switches().next().unwrap();
        let h = NodeId(0);
        assert_eq!(
            (
                a.tor_prefix_v4(leaf),
                a.host_v4(&f, h, 0),
                a.loopback_v4(leaf)
            ),
            (None, None, None)
        );
        assert!(a.link_v4(LinkId(f.num_hosts() as u32)).is_none());
        assert_eq!(a.host_v6(&f, h, 0).unwrap().to_string(), "fd00::2");
        assert_eq!(a.host_lid(h, 0), Some(1));
    }

    #[test]
    fn too_small_block_is_an_error() {
        let f = fat_tree(8, Rate::gbps(100)).unwrap();
        let cfg = PlanConfig {
            host_v4: V4Net {
                addr: Ipv4Addr::new(10, 0, 0, 0),
                len: 26,
            },
            ..Default::default()
        };
        let e = AddressPlan::with_config(&f, cfg).unwrap_err().to_string();
        assert_eq!(
            e,
            "address plan: ToR prefixes need 256 IPv4 addresses but 10.0.0.0/26 holds 64"
        );
    }
}
