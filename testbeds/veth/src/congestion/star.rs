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
    let peers = links.iter().map(|l| Some(l.b_mac)).collect();
    let c = switch_config(cfg, links.iter().map(|l| l.a_mac).collect(), peers, routes);
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
                    mac: links[i].b_mac,
                    ip: host_ip(i),
                    gateway_mac: links[i].a_mac,
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
