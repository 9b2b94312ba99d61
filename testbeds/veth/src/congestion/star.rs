//! The star the congestion testbed runs on: a switch namespace `sw` with ports `p0..pN`,
//! host namespaces `h0..hN` each joined to its port by a veth pair (MTU 9000), one
//! AF_PACKET socket per port and per host, and the sans-IO switch and hosts
//! (`veth_core`) configured for them.

use std::collections::HashMap;
use std::net::Ipv4Addr;

use cc_algos::{Bytes, PathParams};
use veth_core::endpoint::{Host, HostConfig, TimeScale};
use veth_core::switch::{Switch, SwitchConfig};
use veth_core::wire::ethernet::Mac;

use super::CongestionConfig;
use crate::afpacket::PacketSocket;
use crate::{Error, Result, Testbed, VethLink, netlink};
use scenario::Workplan;

/// Host `i`'s address.
pub fn host_ip(i: usize) -> Ipv4Addr {
    Ipv4Addr::new(10, 200, (i / 250) as u8, (i % 250) as u8 + 1)
}

/// The MAC of the emulated device (a userspace switch port, an emulated RoCE NIC) on a
/// veth end whose kernel interface has `kernel`: the same address with its second byte
/// set to `0xfb`. [`crate::mac_for`] gives every kernel interface of a testbed `02:fa:…`,
/// so no kernel of the run owns a device MAC: a frame addressed to one is
/// `PACKET_OTHERHOST` for the namespace it lands in, handed to our AF_PACKET socket and
/// then dropped by the kernel's IPv4 input at its first test, instead of being routed,
/// given a `dst` and freed by `ip_error` — work the sender of every hop paid (~15 % of
/// the fabric loop's CPU, docs/veth.md "Forwarding benchmark").
pub fn device_mac(kernel: Mac) -> Mac {
    let mut m = kernel;
    m[1] = 0xfb;
    m
}

/// The sockets of a star: one per switch port, one per host, in host order.
#[derive(Debug)]
pub struct Sockets {
    /// Switch port `i`'s socket.
    pub switch: Vec<PacketSocket>,
    /// Host `i`'s socket.
    pub hosts: Vec<PacketSocket>,
}

/// The namespaces and links of a run; removed when dropped.
#[derive(Debug)]
pub struct Star {
    /// The guard owning every namespace.
    pub tb: Testbed,
    /// Link `i` joins switch port `i` (end a) to host `i` (end b).
    pub links: Vec<VethLink>,
    /// The AF_PACKET sockets (moved to the event loops).
    pub sockets: Sockets,
}

impl Star {
    /// Create the namespaces, veth pairs and sockets of `cfg.hosts` hosts.
    pub fn build(cfg: &CongestionConfig) -> Result<Star> {
        let mut tb = Testbed::new()?;
        let sw = tb.add_netns("sw")?;
        let mut links = Vec::new();
        let mut host_ns = Vec::new();
        for i in 0..cfg.hosts {
            let h = tb.add_netns(&format!("h{i}"))?;
            let l = tb.connect(&sw, &format!("p{i}"), &h, "eth0")?;
            netlink::Nl::open(&sw)?.set_mtu(&format!("p{i}"), 9000)?;
            netlink::Nl::open(&h)?.set_mtu("eth0", 9000)?;
            links.push(l);
            host_ns.push(h);
        }
        let switch = (0..cfg.hosts)
            .map(|i| PacketSocket::open(&sw, &format!("p{i}")))
            .collect::<Result<Vec<_>>>()?;
        let hosts = host_ns
            .iter()
            .map(|h| PacketSocket::open(h, "eth0"))
            .collect::<Result<Vec<_>>>()?;
        Ok(Star {
            tb,
            links,
            sockets: Sockets { switch, hosts },
        })
    }
}

/// IPv4 packets taken in by the IP stacks of every namespace of `tb` (`Ip: InReceives`
/// of each namespace's `/proc/net/snmp`, read from inside it).
pub fn kernel_ip_input(tb: &Testbed) -> Result<u64> {
    let mut n = 0;
    for ns in tb.namespaces() {
        let text =
            crate::netns::in_netns(ns, || std::fs::read_to_string("/proc/thread-self/net/snmp"))?
                .map_err(|e| Error::Os {
                what: format!("read /proc/net/snmp in {}", ns.name()),
                source: e,
            })?;
        n += snmp_ip_in_receives(&text).ok_or_else(|| {
            Error::Invalid(format!(
                "/proc/net/snmp in {}: no Ip InReceives counter",
                ns.name()
            ))
        })?;
    }
    Ok(n)
}

/// `Ip: InReceives` from a `/proc/net/snmp` text: a header line `Ip: Forwarding
/// DefaultTTL InReceives ...` followed by a value line `Ip: 2 64 17 ...`.
fn snmp_ip_in_receives(text: &str) -> Option<u64> {
    let mut ip = text.lines().filter(|l| l.starts_with("Ip: "));
    let (names, values) = (ip.next()?, ip.next()?);
    let col = names.split_whitespace().position(|w| w == "InReceives")?;
    values.split_whitespace().nth(col)?.parse().ok()
}

/// Frames dropped inside the veths (stats64 rx/tx_dropped) of every namespace of `tb`.
pub fn veth_drops(tb: &Testbed) -> Result<u64> {
    let mut drops = 0;
    for ns in tb.namespaces() {
        for (name, st) in netlink::Nl::open(ns)?.stats()? {
            if name != "lo" {
                drops += st.rx_dropped + st.tx_dropped;
            }
        }
    }
    Ok(drops)
}

/// The switch: one port per host, a /32 route per host.
pub fn switch(cfg: &CongestionConfig, links: &[VethLink]) -> Switch {
    let routes: HashMap<Ipv4Addr, Vec<usize>> =
        (0..cfg.hosts).map(|i| (host_ip(i), vec![i])).collect();
    let peers = links.iter().map(|l| Some(device_mac(l.b_mac))).collect();
    let own = links.iter().map(|l| device_mac(l.a_mac)).collect();
    let c = switch_config(cfg, own, peers, routes);
    Switch::new(c)
}

/// A switch of the run: `cfg`'s rate, buffer, ECN, PFC on priorities 0..=5, trimming,
/// ETS and pacing, with these port MACs, next-hop MACs and routes (salt 0, seed `cfg.seed`).
pub fn switch_config(
    cfg: &CongestionConfig,
    port_macs: Vec<Mac>,
    next_hop_macs: Vec<Option<Mac>>,
    routes: HashMap<Ipv4Addr, Vec<usize>>,
) -> SwitchConfig {
    let mut c = SwitchConfig::new(port_macs, cfg.link_rate, cfg.buffer, routes);
    c.ecn = cfg.ecn;
    c.pfc = cfg.pfc;
    c.pfc_priorities = 0x3f;
    c.trim = cfg.trim;
    c.next_hop_macs = next_hop_macs;
    c.seed = cfg.seed;
    c.pacing_burst = cfg.switch_pacing_burst;
    c.pfcwd = cfg.pfcwd;
    c.int = cfg.int();
    c.ets = cfg.ets.clone();
    c
}

/// The hosts, each with its receiver and the send/receive halves of its flows.
pub fn hosts(
    cfg: &CongestionConfig,
    plan: &Workplan,
    links: &[VethLink],
    scale: TimeScale,
) -> Result<Vec<Host>> {
    let path = PathParams {
        line_rate: cfg.virtual_rate,
        base_rtt: cfg.base_rtt,
        mtu: Bytes(cfg.payload as u64 + 58),
    };
    let cc_err = |e| Error::Invalid(format!("congestion control {}: {e}", cfg.cc));
    let receiver = cfg.cc.build_receiver(&path).map_err(cc_err)?;
    let spray = cfg.spray_config()?;
    let mut hosts: Vec<Host> = (0..cfg.hosts)
        .map(|i| {
            let np: Box<dyn veth_core::endpoint::Receiver> = match &receiver {
                Some(r) => Box::new(r.clone()),
                None => Box::new(veth_core::endpoint::NoReceiver),
            };
            Host::new(
                HostConfig {
                    mac: device_mac(links[i].b_mac),
                    ip: host_ip(i),
                    gateway_mac: device_mac(links[i].a_mac),
                    link_rate: cfg.link_rate,
                    scale,
                    payload: cfg.payload,
                    ack_every: 8,
                    rto: scale.dur_to_real(cfg.rto),
                    pacing_burst: cfg.pacing_burst,
                    spray,
                    int: cfg.int(),
                },
                np,
            )
        })
        .collect();
    for f in &plan.flows {
        let cc = cfg.cc.build(&path).map_err(cc_err)?;
        let stop = f.stop.map(|s| scale.to_real(s));
        hosts[f.src as usize].add_send_flow(
            f.id,
            host_ip(f.dst as usize),
            f.priority,
            f.size.map(|b| b.0),
            scale.to_real(f.start),
            stop,
            f.after.clone(),
            cc,
        );
        hosts[f.dst as usize].add_recv_flow(f.id, host_ip(f.src as usize), f.size.map(|b| b.0));
    }
    Ok(hosts)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ip_in_receives_is_read_from_the_ip_lines_of_snmp() {
        let text = "Ip: Forwarding DefaultTTL InReceives InHdrErrors\nIp: 2 64 1234 0\n\
                    Icmp: InMsgs InErrors\nIcmp: 5 0\n";
        assert_eq!(snmp_ip_in_receives(text), Some(1234));
        assert_eq!(snmp_ip_in_receives("Icmp: InMsgs\nIcmp: 5\n"), None);
        assert_eq!(
            snmp_ip_in_receives("Ip: Forwarding InReceives\nIp: 2\n"),
            None
        );
    }

    #[test]
    fn device_macs_differ_from_every_kernel_mac_of_a_testbed() {
        for (n, side) in [(0, 0), (7, 1), (70_000, 1)] {
            let kernel = crate::mac_for(n, side);
            let dev = device_mac(kernel);
            assert_ne!(dev, kernel);
            assert_eq!(dev[1], 0xfb, "{dev:02x?}");
            // Locally administered unicast, unique per kernel MAC.
            assert_eq!(dev[0] & 0x03, 0x02);
            assert_eq!((dev[2..]), kernel[2..]);
        }
    }
}
