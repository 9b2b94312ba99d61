//! The out-of-band management network, as real fabrics have one: a bridge in the root
//! namespace and an interface `mgmt0` in every switch namespace, in its own /24 from
//! 100.64.0.0/10 (shared address space, RFC 6598), chosen per run so parallel runs never
//! collide. The fabric never routes it: BGP advertises only loopbacks and ToR prefixes
//! (no `redistribute connected`), so the /24 is a connected route on `mgmt0` alone, and
//! the switches have no default route. The agents (node_exporter, lldpd's management
//! address) live on it; the root namespace (Prometheus, `fabric serve`) reaches them
//! through the bridge.

use std::net::Ipv4Addr;

use super::procs::run;
use crate::netns::Netns;
use crate::{Error, Result};

/// Name of the management interface in every switch namespace.
pub const MGMT_IF: &str = "mgmt0";
/// First host number of the switches in the /24 (`.1` is the root namespace).
const FIRST: u32 = 10;
/// Most switches on one management /24.
pub const MAX_SWITCHES: usize = 240;

/// The management network of one run; the bridge is deleted on drop (the switch-side
/// veths go with their namespaces).
#[derive(Debug)]
pub struct MgmtNet {
    bridge: String,
    /// The /24's network address.
    net: Ipv4Addr,
    switches: usize,
    deleted: bool,
}

/// The /24 number `i` (0..16384) of 100.64.0.0/10.
fn subnet(i: u32) -> Ipv4Addr {
    Ipv4Addr::from(u32::from(Ipv4Addr::new(100, 64, 0, 0)) + ((i % 16_384) << 8))
}

/// A run's starting /24 index: from the pid and run sequence, so concurrent runs start
/// apart; [`MgmtNet::create`] then skips any /24 the root namespace already uses.
fn first_index(run_id: &str) -> u32 {
    // FNV-1a over the run id (pid and sequence in base 36).
    let mut h: u32 = 0x811c_9dc5;
    for b in run_id.bytes() {
        h = (h ^ b as u32).wrapping_mul(0x0100_0193);
    }
    h % 16_384
}

impl MgmtNet {
    /// Creates the bridge `fmb<run_id>` with `.1` of a free /24, and one veth per switch
    /// namespace (`fm<run_id>-<i>` on the bridge, `mgmt0` with `.<10+i>` in the switch).
    pub fn create(run_id: &str, switches: &[&Netns]) -> Result<MgmtNet> {
        if switches.len() > MAX_SWITCHES {
            return Err(Error::Invalid(format!(
                "management network: {} switches, at most {MAX_SWITCHES} on one /24",
                switches.len()
            )));
        }
        let used = run(None, "ip", &["-4", "-o", "addr", "show"])?;
        let start = first_index(run_id);
        let net = (0..64)
            .map(|k| subnet(start + k))
            .find(|n| {
                let o = n.octets();
                !used.contains(&format!(" {}.{}.{}.", o[0], o[1], o[2]))
            })
            .ok_or_else(|| Error::Invalid("management network: no free /24 found".into()))?;
        let bridge = format!("fmb{run_id}");
        if bridge.len() > 15 {
            return Err(Error::Invalid(format!("bridge name {bridge} too long")));
        }
        run(None, "ip", &["link", "add", &bridge, "type", "bridge"])?;
        let mut m = MgmtNet {
            bridge,
            net,
            switches: switches.len(),
            deleted: false,
        };
        let root = format!("{}/24", m.root_addr());
        run(None, "ip", &["addr", "add", &root, "dev", &m.bridge])?;
        run(None, "ip", &["link", "set", &m.bridge, "up"])?;
        for (i, ns) in switches.iter().enumerate() {
            let here = format!("fm{run_id}-{i}");
            run(
                None,
                "ip",
                &[
                    "link",
                    "add",
                    &here,
                    "type",
                    "veth",
                    "peer",
                    "name",
                    MGMT_IF,
                    "netns",
                    ns.name(),
                ],
            )?;
            run(
                None,
                "ip",
                &["link", "set", &here, "master", &m.bridge, "up"],
            )?;
            let addr = format!("{}/24", m.switch_addr(i));
            run(
                None,
                "ip",
                &["-n", ns.name(), "addr", "add", &addr, "dev", MGMT_IF],
            )?;
            run(None, "ip", &["-n", ns.name(), "link", "set", MGMT_IF, "up"])?;
            run(None, "ip", &["-n", ns.name(), "link", "set", "lo", "up"])?;
        }
        m.switches = switches.len();
        Ok(m)
    }

    /// The root namespace's address on the bridge.
    pub fn root_addr(&self) -> Ipv4Addr {
        Ipv4Addr::from(u32::from(self.net) + 1)
    }

    /// The management address of the `i`-th switch (in `fabric.switches()` order).
    pub fn switch_addr(&self, i: usize) -> Ipv4Addr {
        Ipv4Addr::from(u32::from(self.net) + FIRST + i as u32)
    }

    /// The /24, as `a.b.c.0/24`.
    pub fn subnet(&self) -> String {
        format!("{}/24", self.net)
    }

    /// The bridge's name.
    pub fn bridge(&self) -> &str {
        &self.bridge
    }

    /// Number of switches on it.
    pub fn switches(&self) -> usize {
        self.switches
    }

    /// Deletes the bridge now (also done on drop).
    pub fn delete(&mut self) -> Result<()> {
        if self.deleted {
            return Ok(());
        }
        self.deleted = true;
        run(None, "ip", &["link", "del", &self.bridge]).map(|_| ())
    }
}

impl Drop for MgmtNet {
    fn drop(&mut self) {
        if let Err(e) = self.delete() {
            eprintln!("management bridge {}: {e}", self.bridge);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn subnets_stay_in_the_shared_space() {
        for i in [0, 1, 16_383, 16_384, u32::MAX] {
            let n = subnet(i);
            assert_eq!(n.octets()[0], 100);
            assert!((64..128).contains(&n.octets()[1]), "{n}");
            assert_eq!(n.octets()[3], 0);
        }
        assert_ne!(first_index("k3x_0"), first_index("k3x_1"));
    }
}
