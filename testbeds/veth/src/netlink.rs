//! Links, addresses, routes and link statistics inside a namespace, through rtnetlink.
//!
//! A netlink socket belongs to the namespace it was created in (NOTES.md), so [`Nl::open`]
//! creates the socket with the thread switched into the namespace ([`super::netns::in_netns`])
//! and then drives it from a private current-thread tokio runtime, one per client (never
//! one per call): the synchronous API below hides the async client. From inside a tokio
//! runtime (a daemon), call it from `spawn_blocking`, where it neither blocks a runtime
//! worker nor nests a `block_on` in async code (root test
//! `the_netlink_client_works_from_inside_a_tokio_runtime`).
//!
//! tbf shaping ([`Tbf`]) is here too: netlink-packet-route 0.34 has no tbf options, so
//! TCA_OPTIONS is built from raw attributes and parsed back from a qdisc dump.
//!
//! Messages are built as values by pure functions ([`veth_message`], [`multipath_route`])
//! that are unit-tested without root; only [`Nl`] methods do I/O (STYLE.md point 14).

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};
use std::os::fd::AsRawFd;

use futures::{StreamExt, TryStreamExt};
use netlink_packet_route::RouteNetlinkMessage;
use netlink_packet_route::address::{AddressAttribute, AddressFlags, AddressHeaderFlags};
use netlink_packet_route::link::{InfoData, InfoVeth, LinkAttribute, LinkMessage, State};
use netlink_packet_route::route::{RouteAddress, RouteAttribute, RouteMessage, RouteNextHop};
use netlink_packet_route::tc::{TcAttribute, TcHandle, TcMessage, TcOption};
use rtnetlink::packet_core::{
    DefaultNla, NLM_F_ACK, NLM_F_CREATE, NLM_F_REPLACE, NLM_F_REQUEST, NetlinkMessage,
    NetlinkPayload, Nla,
};
use rtnetlink::{Handle, LinkUnspec, LinkVeth, RouteMessageBuilder};

use super::netns::{Netns, in_netns};
use super::{Error, Result};

/// Link counters from `IFLA_STATS64`, with the carrier and operational state from the
/// same dump message.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct LinkStats {
    pub rx_packets: u64,
    pub tx_packets: u64,
    pub rx_bytes: u64,
    pub tx_bytes: u64,
    pub rx_dropped: u64,
    pub tx_dropped: u64,
    pub rx_errors: u64,
    pub tx_errors: u64,
    /// `IFLA_CARRIER`: the link has a carrier.
    pub carrier: bool,
    /// `IFLA_OPERSTATE` is up.
    pub oper_up: bool,
    /// `IFLA_CARRIER_CHANGES`.
    pub carrier_changes: u32,
    /// The interface index.
    pub index: u32,
}

/// A netlink client bound to one namespace.
#[derive(Debug)]
pub struct Nl {
    ns: String,
    rt: tokio::runtime::Runtime,
    handle: Handle,
    /// A plain NETLINK_ROUTE socket in the same namespace for messages netlink-packet-route
    /// 0.34 cannot express (RTM_NEWNEXTHOP), opened on first use; with its sequence number.
    raw: std::sync::Mutex<Option<(netlink_sys::Socket, u32)>>,
    /// Set by [`Nl::close`]: the namespace is never entered again.
    closed: bool,
}

fn nl_err(ns: &str, what: impl std::fmt::Display, e: rtnetlink::Error) -> Error {
    Error::Netlink {
        what: format!("{what} (netns {ns})"),
        source: e,
    }
}

/// The `add` message for a veth pair `name` ↔ `peer`, the peer created directly in the
/// namespace whose file descriptor is `peer_ns_fd` (IFLA_NET_NS_FD inside the peer's
/// info), so names only need to be unique per namespace and nothing ever appears in the
/// root namespace.
pub fn veth_message(
    name: &str,
    peer: &str,
    peer_ns_fd: i32,
    mac: [u8; 6],
    peer_mac: [u8; 6],
) -> LinkMessage {
    let peer_msg = LinkUnspec::new_with_name(peer)
        .setns_by_fd(peer_ns_fd)
        .address(peer_mac.to_vec())
        .build();
    LinkVeth::new(name, peer)
        .address(mac.to_vec())
        .set_info_data(InfoData::Veth(InfoVeth::Peer(peer_msg)))
        .build()
}

/// A multipath route to `dst/len` over `(gateway, weight)` next hops. The kernel stores
/// a next hop's weight minus one (`rtnh_hops`), so `ip route` weight `w` is passed as `w-1`.
pub fn multipath_route(dst: Ipv4Addr, len: u8, hops: &[(Ipv4Addr, u8)]) -> RouteMessage {
    let b = RouteMessageBuilder::<Ipv4Addr>::new().destination_prefix(dst, len);
    if let [(gw, _)] = hops {
        return b.gateway(*gw).build();
    }
    b.multipath(next_hops(hops)).build()
}

/// The IPv6 twin of [`multipath_route`]: `RTA_MULTIPATH` with `rtnh_hops = w − 1` for
/// `AF_INET6` as well (the kernel accepts it since 4.16 and dumps the route back as one
/// message with all next hops).
pub fn multipath_route6(dst: Ipv6Addr, len: u8, hops: &[(Ipv6Addr, u8)]) -> RouteMessage {
    let b = RouteMessageBuilder::<Ipv6Addr>::new().destination_prefix(dst, len);
    if let [(gw, _)] = hops {
        return b.gateway(*gw).build();
    }
    b.multipath(next_hops(hops)).build()
}

fn next_hops<A: Copy + Into<RouteAddress>>(hops: &[(A, u8)]) -> Vec<RouteNextHop> {
    hops.iter()
        .map(|(gw, w)| {
            let mut nh = RouteNextHop::default();
            nh.hops = w.saturating_sub(1);
            nh.attributes.push(RouteAttribute::Gateway((*gw).into()));
            nh
        })
        .collect()
}

/// The `(gateway, weight)` next hops of a route as read back from the kernel (weight =
/// `rtnh_hops + 1`); a plain gateway route gives one hop of weight 1.
pub fn route_hops(m: &RouteMessage) -> Vec<(IpAddr, u16)> {
    let ip = |a: &RouteAddress| match a {
        RouteAddress::Inet(v) => Some(IpAddr::V4(*v)),
        RouteAddress::Inet6(v) => Some(IpAddr::V6(*v)),
        _ => None,
    };
    let mut out = Vec::new();
    for a in &m.attributes {
        match a {
            RouteAttribute::Gateway(g) => out.extend(ip(g).map(|g| (g, 1))),
            RouteAttribute::MultiPath(nhs) => {
                for nh in nhs {
                    for x in &nh.attributes {
                        if let RouteAttribute::Gateway(g) = x {
                            out.extend(ip(g).map(|g| (g, nh.hops as u16 + 1)));
                        }
                    }
                }
            }
            _ => {}
        }
    }
    out.sort();
    out
}

/// Destination `(address, prefix length)` of a route message (`None`: default route).
pub fn route_dst(m: &RouteMessage) -> Option<(IpAddr, u8)> {
    m.attributes.iter().find_map(|a| match a {
        RouteAttribute::Destination(RouteAddress::Inet(v)) => {
            Some((IpAddr::V4(*v), m.header.destination_prefix_length))
        }
        RouteAttribute::Destination(RouteAddress::Inet6(v)) => {
            Some((IpAddr::V6(*v), m.header.destination_prefix_length))
        }
        _ => None,
    })
}

/// RTM_NEWNEXTHOP (linux/rtnetlink.h).
pub const RTM_NEWNEXTHOP: u16 = 104;
const NHA_ID: u16 = 1;
const NHA_GROUP: u16 = 2;
const NHA_GROUP_TYPE: u16 = 3;
const NHA_OIF: u16 = 5;
const NHA_GATEWAY: u16 = 6;

/// A next-hop object (Linux ≥ 5.3, `ip nexthop`): one gateway out of one link, or a
/// multipath group of other objects.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum NextHop {
    /// `id` via `gateway` dev `oif`.
    Via { id: u32, gateway: IpAddr, oif: u32 },
    /// `id` group of `(member id, weight)`; weights are passed minus one, as in routes.
    Group { id: u32, members: Vec<(u32, u8)> },
}

/// One netlink message: `struct nlmsghdr` (length, type, flags, seq, pid 0) + `payload`.
pub fn raw_nlmsg(ty: u16, flags: u16, seq: u32, payload: &[u8]) -> Vec<u8> {
    let mut m = Vec::with_capacity(16 + payload.len());
    m.extend_from_slice(&((16 + payload.len()) as u32).to_ne_bytes());
    m.extend_from_slice(&ty.to_ne_bytes());
    m.extend_from_slice(&flags.to_ne_bytes());
    m.extend_from_slice(&seq.to_ne_bytes());
    m.extend_from_slice(&0u32.to_ne_bytes());
    m.extend_from_slice(payload);
    m
}

fn push_attr(m: &mut Vec<u8>, kind: u16, value: &[u8]) {
    m.extend_from_slice(&((4 + value.len()) as u16).to_ne_bytes());
    m.extend_from_slice(&kind.to_ne_bytes());
    m.extend_from_slice(value);
    while !m.len().is_multiple_of(4) {
        m.push(0);
    }
}

/// The RTM_NEWNEXTHOP payload (linux/nexthop.h): `struct nhmsg` { family u8 (AF_INET /
/// AF_INET6 for a gateway, AF_UNSPEC for a group), scope u8, protocol u8, resvd u8,
/// flags u32 } then NHA_ID (u32); for a gateway NHA_OIF (u32) and NHA_GATEWAY (4 or 16
/// bytes); for a group NHA_GROUP = `struct nexthop_grp` { id u32, weight u8 (w − 1),
/// weight_high u8, resvd u16 } per member and NHA_GROUP_TYPE = 0 (multipath).
pub fn nexthop_payload(nh: &NextHop) -> Vec<u8> {
    let mut m = Vec::new();
    let family = match nh {
        NextHop::Via {
            gateway: IpAddr::V4(_),
            ..
        } => libc::AF_INET as u8,
        NextHop::Via {
            gateway: IpAddr::V6(_),
            ..
        } => libc::AF_INET6 as u8,
        NextHop::Group { .. } => libc::AF_UNSPEC as u8,
    };
    // RTPROT_BOOT (3), as `ip nexthop` uses by default.
    m.extend_from_slice(&[family, 0, 3, 0]);
    m.extend_from_slice(&0u32.to_ne_bytes());
    match nh {
        NextHop::Via { id, gateway, oif } => {
            push_attr(&mut m, NHA_ID, &id.to_ne_bytes());
            push_attr(&mut m, NHA_OIF, &oif.to_ne_bytes());
            match gateway {
                IpAddr::V4(a) => push_attr(&mut m, NHA_GATEWAY, &a.octets()),
                IpAddr::V6(a) => push_attr(&mut m, NHA_GATEWAY, &a.octets()),
            }
        }
        NextHop::Group { id, members } => {
            push_attr(&mut m, NHA_ID, &id.to_ne_bytes());
            let mut g = Vec::new();
            for (mid, w) in members {
                g.extend_from_slice(&mid.to_ne_bytes());
                g.push(w.saturating_sub(1));
                g.push(0);
                g.extend_from_slice(&0u16.to_ne_bytes());
            }
            push_attr(&mut m, NHA_GROUP, &g);
            push_attr(&mut m, NHA_GROUP_TYPE, &0u16.to_ne_bytes());
        }
    }
    m
}

/// The kernel's packet-scheduler clock, from `/proc/net/psched` (four hex words:
/// ticks→µs numerator, µs→ticks denominator, clock resolution, and a legacy field).
/// tc-tbf(8) gives the bucket size (`buffer`) in these ticks.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Psched {
    /// Scheduler ticks per microsecond.
    pub ticks_per_us: f64,
}

impl Psched {
    /// Parse the text of `/proc/net/psched`. As iproute2's `tc_core_init` reads it: ticks
    /// per µs = t2us / us2t × (clock_res / 10⁶), where a clock resolution of 10⁹ is a
    /// compatibility marker meaning "t2us = us2t".
    pub fn parse(text: &str) -> Result<Psched> {
        let w: Vec<u32> = text
            .split_whitespace()
            .take(3)
            .map(|x| u32::from_str_radix(x, 16))
            .collect::<std::result::Result<_, _>>()
            .map_err(|e| Error::Invalid(format!("/proc/net/psched: {e} in {text:?}")))?;
        let [mut t2us, us2t, clock_res] = w[..] else {
            return Err(Error::Invalid(format!(
                "/proc/net/psched: expected 3 hex words, got {text:?}"
            )));
        };
        if us2t == 0 || clock_res == 0 {
            return Err(Error::Invalid(format!(
                "/proc/net/psched: zero field in {text:?}"
            )));
        }
        if clock_res == 1_000_000_000 {
            t2us = us2t;
        }
        Ok(Psched {
            ticks_per_us: t2us as f64 / us2t as f64 * (clock_res as f64 / 1e6),
        })
    }

    /// Read `/proc/net/psched`.
    pub fn read() -> Result<Psched> {
        let text = std::fs::read_to_string("/proc/net/psched").map_err(|e| Error::Os {
            what: "read /proc/net/psched".into(),
            source: e,
        })?;
        Psched::parse(&text)
    }

    /// Ticks needed to send `bytes` at `rate` bytes/s (iproute2's `tc_calc_xmittime`).
    pub fn xmit_ticks(&self, rate: u64, bytes: u32) -> u32 {
        let us = 1e6 * bytes as f64 / rate as f64;
        (us * self.ticks_per_us).min(u32::MAX as f64) as u32
    }
}

/// A token-bucket filter (tc-tbf(8)): `rate` with a bucket of `burst` bytes and a queue
/// that holds `latency` worth of bytes at that rate on top of the bucket.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
pub struct Tbf {
    /// Rate in bits/s.
    pub rate_bps: u64,
    /// Bucket size in bytes.
    pub burst: u32,
    /// Longest time a packet may wait in the queue, in µs.
    pub latency_us: u32,
}

/// Netlink attribute numbers inside TCA_OPTIONS of a tbf qdisc (linux/pkt_sched.h).
const TCA_TBF_PARMS: u16 = 1;
/// TCA_OPTIONS (linux/rtnetlink.h), the attribute that holds them.
const TCA_OPTIONS: u16 = 2;
const TCA_TBF_RATE64: u16 = 4;
const TCA_TBF_BURST: u16 = 6;
/// `tc_ratespec.linklayer`: Ethernet (the kernel then needs no rate table).
const TC_LINKLAYER_ETHERNET: u8 = 1;

impl Tbf {
    /// `rate` Mb/s with NOTES.md's set-up that holds the rate exactly on a veth: a 32 KiB
    /// bucket and 20 ms of queue (`tc qdisc add … tbf rate Rmbit burst 32kb latency 20ms`).
    pub fn mbps(rate: u64) -> Tbf {
        Tbf {
            rate_bps: rate * 1_000_000,
            burst: 32 * 1024,
            latency_us: 20_000,
        }
    }

    /// Rate in bytes/s (what the kernel's `tc_ratespec` holds).
    pub fn rate_bytes(&self) -> u64 {
        self.rate_bps / 8
    }

    /// Queue limit in bytes: the bytes `latency` drains at `rate`, plus the bucket (as
    /// iproute2 computes `limit` from `latency`).
    pub fn limit(&self) -> u32 {
        let l = self.rate_bytes() as f64 * self.latency_us as f64 / 1e6 + self.burst as f64;
        l.min(u32::MAX as f64) as u32
    }

    /// The TCA_OPTIONS of a tbf qdisc, built by hand (netlink-packet-route 0.34 has no tbf
    /// type): TCA_TBF_PARMS = `struct tc_tbf_qopt` { rate: tc_ratespec (cell_log u8,
    /// linklayer u8, overhead u16, cell_align i16, mpu u16, rate u32), peakrate:
    /// tc_ratespec (unused, zero), limit u32 (bytes), buffer u32 (ticks), mtu u32 (peak
    /// bucket, zero without peakrate) } in host byte order; TCA_TBF_RATE64 (u64) when the
    /// rate does not fit the 32-bit field; TCA_TBF_BURST (u32 bytes), from which the
    /// kernel recomputes the bucket time itself.
    pub fn options(&self, psched: &Psched) -> Vec<TcOption> {
        let rate = self.rate_bytes();
        let mut parms = Vec::with_capacity(36);
        // rate: tc_ratespec
        parms.push(0u8); // cell_log
        parms.push(TC_LINKLAYER_ETHERNET);
        parms.extend_from_slice(&0u16.to_ne_bytes()); // overhead
        parms.extend_from_slice(&(-1i16).to_ne_bytes()); // cell_align (as tc sets it)
        parms.extend_from_slice(&0u16.to_ne_bytes()); // mpu
        parms.extend_from_slice(&(rate.min(u32::MAX as u64) as u32).to_ne_bytes());
        parms.extend_from_slice(&[0u8; 12]); // peakrate
        parms.extend_from_slice(&self.limit().to_ne_bytes());
        parms.extend_from_slice(&psched.xmit_ticks(rate, self.burst).to_ne_bytes());
        parms.extend_from_slice(&0u32.to_ne_bytes()); // mtu
        let mut v = vec![TcOption::Other(DefaultNla::new(TCA_TBF_PARMS, parms))];
        if rate >= 1 << 32 {
            v.push(TcOption::Other(DefaultNla::new(
                TCA_TBF_RATE64,
                rate.to_ne_bytes().to_vec(),
            )));
        }
        v.push(TcOption::Other(DefaultNla::new(
            TCA_TBF_BURST,
            self.burst.to_ne_bytes().to_vec(),
        )));
        v
    }

    /// The RTM_NEWQDISC message that makes this the root qdisc of link `index`.
    pub fn message(&self, index: u32, psched: &Psched) -> TcMessage {
        let mut m = TcMessage::with_index(index as i32);
        m.header.parent = TcHandle::ROOT;
        m.header.handle = TcHandle { major: 1, minor: 0 };
        m.attributes.push(TcAttribute::Kind("tbf".into()));
        m.attributes
            .push(TcAttribute::Options(self.options(psched)));
        m
    }
}

/// A tbf qdisc as the kernel reports it (RTM_GETQDISC dump).
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
pub struct TbfState {
    /// Link index.
    pub index: u32,
    /// Rate in bytes/s (TCA_TBF_RATE64 if present, else the 32-bit field).
    pub rate_bytes: u64,
    /// Queue limit in bytes.
    pub limit: u32,
    /// Bucket in scheduler ticks.
    pub buffer_ticks: u32,
}

/// The netlink attributes packed in `b` as `(type, value)`: each a 4-byte header
/// (length u16 including the header, type u16 with the nested/byte-order flags masked
/// off), the value, padding to 4 bytes. Stops at the first malformed header.
pub fn nested_attrs(b: &[u8]) -> Vec<(u16, Vec<u8>)> {
    let mut out = Vec::new();
    let mut at = 0;
    while at + 4 <= b.len() {
        let len = u16::from_ne_bytes([b[at], b[at + 1]]) as usize;
        let kind = u16::from_ne_bytes([b[at + 2], b[at + 3]]) & 0x3fff;
        if len < 4 || at + len > b.len() {
            break;
        }
        out.push((kind, b[at + 4..at + len].to_vec()));
        at += len.div_ceil(4) * 4;
    }
    out
}

/// Parse the TCA_OPTIONS of a tbf qdisc (the inverse of [`Tbf::options`]).
pub fn parse_tbf(index: u32, opts: &[TcOption]) -> Option<TbfState> {
    // netlink-packet-route 0.34 does not know tbf: a dump yields the whole TCA_OPTIONS
    // as one opaque attribute (kind 2) whose value is the nested list, so walk it here.
    let mut attrs: Vec<(u16, Vec<u8>)> = Vec::new();
    for o in opts {
        if let TcOption::Other(nla) = o {
            let mut v = vec![0u8; nla.value_len()];
            nla.emit_value(&mut v);
            if nla.kind() == TCA_OPTIONS {
                attrs.extend(nested_attrs(&v));
            } else {
                attrs.push((nla.kind(), v));
            }
        }
    }
    let mut parms = None;
    let mut rate64 = None;
    for (kind, v) in attrs {
        match kind {
            TCA_TBF_PARMS if v.len() >= 36 => parms = Some(v),
            TCA_TBF_RATE64 if v.len() >= 8 => {
                rate64 = Some(u64::from_ne_bytes(v[..8].try_into().expect("8 bytes")))
            }
            _ => {}
        }
    }
    let p = parms?;
    let u = |k: usize| u32::from_ne_bytes(p[k..k + 4].try_into().expect("4 bytes"));
    Some(TbfState {
        index,
        rate_bytes: rate64.unwrap_or(u(8) as u64),
        limit: u(24),
        buffer_ticks: u(28),
    })
}

/// The single-threaded runtime a client's requests run on.
fn runtime() -> Result<tokio::runtime::Runtime> {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| Error::Os {
            what: "tokio runtime".into(),
            source: e,
        })
}

impl Nl {
    /// Open a netlink connection inside `ns`.
    pub fn open(ns: &Netns) -> Result<Nl> {
        let rt = runtime()?;
        let (conn, handle, _) = {
            let _enter = rt.enter();
            in_netns(ns, rtnetlink::new_connection)?.map_err(|e| Error::Os {
                what: format!("netlink socket in netns {}", ns.name()),
                source: e,
            })?
        };
        rt.spawn(conn);
        Ok(Nl {
            ns: ns.name().to_string(),
            rt,
            handle,
            raw: std::sync::Mutex::new(None),
            closed: false,
        })
    }

    /// A client that refers to no namespace: every request fails (a placeholder for a
    /// node whose namespace is elsewhere, e.g. another router). `label` names it in
    /// errors.
    pub fn detached(label: &str) -> Result<Nl> {
        let rt = runtime()?;
        // The connection (and its socket) is dropped at once: the handle only fails.
        let (_, handle, _) = {
            let _enter = rt.enter();
            rtnetlink::new_connection().map_err(|e| Error::Os {
                what: "netlink socket".into(),
                source: e,
            })?
        };
        Ok(Nl {
            ns: label.to_string(),
            rt,
            handle,
            raw: std::sync::Mutex::new(None),
            closed: true,
        })
    }

    /// Releases the namespace: closes the rtnetlink connection (its runtime and the
    /// task owning the socket) and the raw socket, so the kernel can destroy the
    /// namespace once nothing else holds it (a socket keeps its namespace alive). Every
    /// later request fails at once; the namespace is never entered again, even if a new
    /// one appears under the same name.
    pub fn close(&mut self) {
        *self.raw.lock().unwrap_or_else(|p| p.into_inner()) = None;
        self.closed = true;
        // A runtime without drivers cannot fail to build; if it did, the old one (and
        // its socket) would be kept: say so rather than panic.
        match tokio::runtime::Builder::new_current_thread().build() {
            Ok(rt) => drop(std::mem::replace(&mut self.rt, rt)),
            Err(e) => eprintln!("netns {}: cannot release the netlink socket: {e}", self.ns),
        }
    }

    /// Send one hand-built rtnetlink request (`ty`, `flags` | NLM_F_REQUEST | NLM_F_ACK,
    /// `payload` = family header + attributes) on the raw socket and wait for its ack.
    pub fn raw_request(&self, ty: u16, flags: u16, payload: &[u8], what: &str) -> Result<()> {
        let os = |e: std::io::Error| Error::Os {
            what: format!("{what} (netns {})", self.ns),
            source: e,
        };
        if self.closed {
            return Err(os(std::io::Error::from_raw_os_error(libc::ENOENT)));
        }
        let mut guard = self.raw.lock().expect("raw netlink socket");
        if guard.is_none() {
            let ns = Netns::from_name(&self.ns);
            let sock = in_netns(&ns, || -> std::io::Result<netlink_sys::Socket> {
                let mut s = netlink_sys::Socket::new(netlink_sys::protocols::NETLINK_ROUTE)?;
                s.bind_auto()?;
                s.connect(&netlink_sys::SocketAddr::new(0, 0))?;
                Ok(s)
            })?
            .map_err(os)?;
            *guard = Some((sock, 0));
        }
        let (sock, seq) = guard.as_mut().expect("opened above");
        *seq = seq.wrapping_add(1);
        let msg = raw_nlmsg(ty, flags | NLM_F_REQUEST | NLM_F_ACK, *seq, payload);
        sock.send(&msg, 0).map_err(os)?;
        loop {
            let mut buf: Vec<u8> = Vec::with_capacity(65_536);
            sock.recv(&mut buf, 0).map_err(os)?;
            let mut at = 0;
            while at + 16 <= buf.len() {
                let len = u32::from_ne_bytes(buf[at..at + 4].try_into().expect("4")) as usize;
                let mty = u16::from_ne_bytes([buf[at + 4], buf[at + 5]]);
                let mseq = u32::from_ne_bytes(buf[at + 8..at + 12].try_into().expect("4"));
                if len < 16 || at + len > buf.len() {
                    break;
                }
                // NLMSG_ERROR = 2: i32 error (0 = ack) after the 16-byte header.
                if mty == 2 && mseq == *seq && len >= 20 {
                    let code = i32::from_ne_bytes(buf[at + 16..at + 20].try_into().expect("4"));
                    if code == 0 {
                        return Ok(());
                    }
                    return Err(os(std::io::Error::from_raw_os_error(-code)));
                }
                at += len.div_ceil(4) * 4;
            }
        }
    }

    /// Create or replace next-hop object `id` (RTM_NEWNEXTHOP, see [`nexthop_payload`]).
    pub fn set_nexthop(&self, nh: &NextHop) -> Result<()> {
        self.raw_request(
            RTM_NEWNEXTHOP,
            NLM_F_CREATE | NLM_F_REPLACE,
            &nexthop_payload(nh),
            &format!("nexthop {nh:?}"),
        )
    }

    /// Create a veth pair: `name` here, `peer` in `peer_ns`, both down.
    pub fn add_veth(
        &self,
        name: &str,
        mac: [u8; 6],
        peer_ns: &Netns,
        peer: &str,
        peer_mac: [u8; 6],
    ) -> Result<()> {
        let fd = peer_ns.open()?;
        let msg = veth_message(name, peer, fd.as_raw_fd(), mac, peer_mac);
        self.rt
            .block_on(self.handle.link().add(msg).execute())
            .map_err(|e| {
                nl_err(
                    &self.ns,
                    format!("add veth {name} <-> {}:{peer}", peer_ns.name()),
                    e,
                )
            })
    }

    /// The link message of `name` (one RTM_GETLINK).
    fn link(&self, name: &str) -> Result<LinkMessage> {
        let name2 = name.to_string();
        let r = self.rt.block_on(async {
            self.handle
                .link()
                .get()
                .match_name(name2)
                .execute()
                .try_next()
                .await
        });
        match r {
            Ok(Some(m)) => Ok(m),
            Ok(None) => Err(Error::Invalid(format!(
                "no link {name} in netns {}",
                self.ns
            ))),
            Err(e) => Err(nl_err(&self.ns, format!("get link {name}"), e)),
        }
    }

    /// The index of link `name`.
    pub fn index(&self, name: &str) -> Result<u32> {
        Ok(self.link(name)?.header.index)
    }

    fn set(&self, name: &str, up: bool) -> Result<()> {
        let idx = self.index(name)?;
        let b = LinkUnspec::new_with_index(idx);
        let msg = if up { b.up() } else { b.down() }.build();
        self.rt
            .block_on(self.handle.link().set(msg).execute())
            .map_err(|e| {
                nl_err(
                    &self.ns,
                    format!("set {name} {}", if up { "up" } else { "down" }),
                    e,
                )
            })
    }

    /// Whether link `name`'s operational state (IFLA_OPERSTATE) is UP. The kernel sets it
    /// from its link watcher, the same work that activates the link's qdisc after a
    /// carrier change (until then the device drops what it sends), and it may run up to
    /// a second after the change.
    pub fn oper_up(&self, name: &str) -> Result<bool> {
        Ok(self
            .link(name)?
            .attributes
            .iter()
            .any(|a| matches!(a, LinkAttribute::OperState(State::Up))))
    }

    pub fn set_up(&self, name: &str) -> Result<()> {
        self.set(name, true)
    }

    pub fn set_down(&self, name: &str) -> Result<()> {
        self.set(name, false)
    }

    /// Move link `name` into namespace `to`, named `new_name` there (it arrives down) —
    /// as re-cabling its end to another box would: one RTM_NEWLINK with IFLA_NET_NS_FD
    /// and IFLA_IFNAME.
    pub fn move_link(&self, name: &str, to: &Netns, new_name: &str) -> Result<()> {
        let idx = self.index(name)?;
        let fd = to.open()?;
        let msg = LinkUnspec::new_with_index(idx)
            .setns_by_fd(fd.as_raw_fd())
            .name(new_name)
            .build();
        self.rt
            .block_on(self.handle.link().set(msg).execute())
            .map_err(|e| {
                nl_err(
                    &self.ns,
                    format!("move {name} to {} as {new_name}", to.name()),
                    e,
                )
            })
    }

    /// Rename link `name` to `new_name` (it must be down).
    pub fn rename_link(&self, name: &str, new_name: &str) -> Result<()> {
        let idx = self.index(name)?;
        let msg = LinkUnspec::new_with_index(idx).name(new_name).build();
        self.rt
            .block_on(self.handle.link().set(msg).execute())
            .map_err(|e| nl_err(&self.ns, format!("rename {name} to {new_name}"), e))
    }

    /// Set the MTU of link `name`.
    pub fn set_mtu(&self, name: &str, mtu: u32) -> Result<()> {
        let idx = self.index(name)?;
        let msg = LinkUnspec::new_with_index(idx).mtu(mtu).build();
        self.rt
            .block_on(self.handle.link().set(msg).execute())
            .map_err(|e| nl_err(&self.ns, format!("set {name} mtu {mtu}"), e))
    }

    /// Add `addr/len` (IPv4 or IPv6; IPv6 with `IFA_F_NODAD`) to link `name`.
    pub fn add_addr(&self, name: &str, addr: impl Into<IpAddr>, len: u8) -> Result<()> {
        let addr = addr.into();
        let idx = self.index(name)?;
        let mut req = self.handle.address().add(idx, addr, len);
        if addr.is_ipv6() {
            // IFA_F_NODAD: never tentative, not even while the link waits for carrier
            // (the kernel skips the TENTATIVE flag for NODAD addresses).
            let m = req.message_mut();
            m.header.flags |= AddressHeaderFlags::Nodad;
            m.attributes
                .push(AddressAttribute::Flags(AddressFlags::Nodad));
        }
        self.rt
            .block_on(req.execute())
            .map_err(|e| nl_err(&self.ns, format!("add {addr}/{len} to {name}"), e))
    }

    /// Add or replace a route (see [`multipath_route`]).
    pub fn replace_route(&self, msg: RouteMessage) -> Result<()> {
        let what = format!("replace route {:?}", msg.attributes.first());
        self.rt
            .block_on(self.handle.route().add(msg).replace().execute())
            .map_err(|e| nl_err(&self.ns, what, e))
    }

    /// Delete the main-table route to `dst/len` (IPv4 or IPv6) written by routing
    /// protocol `protocol` (RTPROT_*; 0: whoever wrote it). Returns `false` if there was
    /// none (or only another protocol's). Any scope matches (`RT_SCOPE_NOWHERE`, as
    /// `ip route del`): a gateway route is universe-scoped, a device route link-scoped.
    pub fn del_route(&self, dst: impl Into<IpAddr>, len: u8, protocol: u8) -> Result<bool> {
        let dst = dst.into();
        let proto = netlink_packet_route::route::RouteProtocol::from(protocol);
        let msg = match dst {
            IpAddr::V4(d) => RouteMessageBuilder::<Ipv4Addr>::new()
                .destination_prefix(d, len)
                .protocol(proto)
                .scope(netlink_packet_route::route::RouteScope::NoWhere)
                .build(),
            IpAddr::V6(d) => RouteMessageBuilder::<Ipv6Addr>::new()
                .destination_prefix(d, len)
                .protocol(proto)
                .build(),
        };
        match self.rt.block_on(self.handle.route().del(msg).execute()) {
            Ok(()) => Ok(true),
            Err(rtnetlink::Error::NetlinkError(e))
                if e.raw_code() == -libc::ESRCH || e.raw_code() == -libc::ENOENT =>
            {
                Ok(false)
            }
            Err(e) => Err(nl_err(&self.ns, format!("delete route {dst}/{len}"), e)),
        }
    }

    /// Every IPv4 route of the main table (for checks).
    pub fn routes(&self) -> Result<Vec<RouteMessage>> {
        let q = RouteMessageBuilder::<Ipv4Addr>::new().build();
        self.rt
            .block_on(self.handle.route().get(q).execute().try_collect())
            .map_err(|e| nl_err(&self.ns, "dump routes", e))
    }

    /// Every IPv6 route of the main table (for checks).
    pub fn routes6(&self) -> Result<Vec<RouteMessage>> {
        let q = RouteMessageBuilder::<Ipv6Addr>::new().build();
        self.rt
            .block_on(self.handle.route().get(q).execute().try_collect())
            .map_err(|e| nl_err(&self.ns, "dump IPv6 routes", e))
    }

    /// Every address of the namespace as `(link index, address, prefix length, IFA_F_*
    /// flags)` (for checks, e.g. that no IPv6 address is tentative).
    pub fn addresses(&self) -> Result<Vec<(u32, IpAddr, u8, u32)>> {
        let msgs: Vec<_> = self
            .rt
            .block_on(self.handle.address().get().execute().try_collect())
            .map_err(|e| nl_err(&self.ns, "dump addresses", e))?;
        let mut out = Vec::new();
        for m in msgs {
            let mut addr = None;
            // IFA_FLAGS (32 bits) supersedes the 8-bit header flags when present.
            let mut flags = u32::from(m.header.flags.bits());
            for a in &m.attributes {
                match a {
                    AddressAttribute::Address(ip) => addr = Some(*ip),
                    AddressAttribute::Flags(f) => flags = f.bits(),
                    _ => {}
                }
            }
            if let Some(ip) = addr {
                out.push((m.header.index, ip, m.header.prefix_len, flags));
            }
        }
        Ok(out)
    }

    /// Make `tbf` the root qdisc of link `name` (create or replace), through a hand-built
    /// RTM_NEWQDISC (see [`Tbf::options`]).
    pub fn set_tbf(&self, name: &str, tbf: &Tbf, psched: &Psched) -> Result<()> {
        let idx = self.index(name)?;
        let mut req = NetlinkMessage::from(RouteNetlinkMessage::NewQueueDiscipline(
            tbf.message(idx, psched),
        ));
        req.header.flags = NLM_F_REQUEST | NLM_F_ACK | NLM_F_CREATE | NLM_F_REPLACE;
        let what = format!("tbf rate {} bit/s on {name}", tbf.rate_bps);
        let mut handle = self.handle.clone();
        self.rt.block_on(async {
            let mut resp = handle
                .request(req)
                .map_err(|e| nl_err(&self.ns, &what, e))?;
            while let Some(m) = resp.next().await {
                if let NetlinkPayload::Error(e) = m.payload
                    && e.code.is_some()
                {
                    return Err(nl_err(&self.ns, &what, rtnetlink::Error::NetlinkError(e)));
                }
            }
            Ok(())
        })
    }

    /// Every tbf qdisc of the namespace, as the kernel reports it.
    pub fn tbf_qdiscs(&self) -> Result<Vec<TbfState>> {
        let h = self.handle.clone();
        let msgs: Vec<TcMessage> = self
            .rt
            .block_on(h.qdisc().get().execute().try_collect())
            .map_err(|e| nl_err(&self.ns, "dump qdiscs", e))?;
        let mut out = Vec::new();
        for m in msgs {
            let tbf = m
                .attributes
                .iter()
                .any(|a| matches!(a, TcAttribute::Kind(k) if k == "tbf"));
            if !tbf {
                continue;
            }
            for a in &m.attributes {
                if let TcAttribute::Options(o) = a
                    && let Some(st) = parse_tbf(m.header.index as u32, o)
                {
                    out.push(st);
                }
            }
        }
        Ok(out)
    }

    /// Names of all links in the namespace.
    pub fn link_names(&self) -> Result<Vec<String>> {
        Ok(self.stats()?.into_iter().map(|(n, _)| n).collect())
    }

    /// `(name, stats64 + carrier + operstate)` of every link: one RTM_GETLINK dump.
    pub fn stats(&self) -> Result<Vec<(String, LinkStats)>> {
        let msgs: Vec<LinkMessage> = self
            .rt
            .block_on(self.handle.link().get().execute().try_collect())
            .map_err(|e| nl_err(&self.ns, "dump links", e))?;
        let mut out = Vec::new();
        for m in msgs {
            let mut name = String::new();
            let mut st = LinkStats::default();
            for a in &m.attributes {
                match a {
                    LinkAttribute::IfName(n) => name = n.clone(),
                    LinkAttribute::Stats64(s) => {
                        st.rx_packets = s.rx_packets;
                        st.tx_packets = s.tx_packets;
                        st.rx_bytes = s.rx_bytes;
                        st.tx_bytes = s.tx_bytes;
                        st.rx_dropped = s.rx_dropped;
                        st.tx_dropped = s.tx_dropped;
                        st.rx_errors = s.rx_errors;
                        st.tx_errors = s.tx_errors;
                    }
                    LinkAttribute::Carrier(c) => st.carrier = *c != 0,
                    LinkAttribute::OperState(o) => st.oper_up = *o == State::Up,
                    LinkAttribute::CarrierChanges(c) => st.carrier_changes = *c,
                    _ => {}
                }
            }
            st.index = m.header.index;
            out.push((name, st));
        }
        Ok(out)
    }
}

/// Bring link `name` up in `ns` (opens a short-lived connection).
pub fn set_up_by_name(ns: &Netns, name: &str) -> Result<()> {
    Nl::open(ns)?.set_up(name)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn veth_message_carries_peer_namespace_and_macs() {
        let m = veth_message("p0", "p1", 42, [2, 0, 0, 0, 0, 1], [2, 0, 0, 0, 0, 2]);
        let dbg = format!("{m:?}");
        assert!(dbg.contains("NetNsFd(42)"), "{dbg}");
        assert!(dbg.contains("IfName(\"p1\")"), "{dbg}");
        assert!(dbg.contains("IfName(\"p0\")"), "{dbg}");
        assert!(dbg.contains("Address([2, 0, 0, 0, 0, 2])"), "{dbg}");
    }

    #[test]
    fn multipath_weights_are_stored_minus_one() {
        let m = multipath_route(
            Ipv4Addr::new(10, 1, 0, 0),
            24,
            &[
                (Ipv4Addr::new(10, 0, 0, 1), 1),
                (Ipv4Addr::new(10, 0, 0, 3), 3),
            ],
        );
        let hops = m
            .attributes
            .iter()
            .find_map(|a| match a {
                RouteAttribute::MultiPath(h) => Some(h.clone()),
                _ => None,
            })
            .expect("multipath attribute");
        assert_eq!(hops.iter().map(|h| h.hops).collect::<Vec<_>>(), vec![0, 2]);
        assert_eq!(m.header.destination_prefix_length, 24);
    }

    #[test]
    fn ipv6_multipath_weights_are_stored_minus_one_and_read_back_plus_one() {
        let a: Ipv6Addr = "fd00:fffe::1".parse().unwrap();
        let b: Ipv6Addr = "fd00:fffe::3".parse().unwrap();
        let dst: Ipv6Addr = "fd00:0:0:1::".parse().unwrap();
        let m = multipath_route6(dst, 64, &[(a, 1), (b, 3)]);
        assert_eq!(m.header.destination_prefix_length, 64);
        assert_eq!(route_hops(&m), vec![(IpAddr::V6(a), 1), (IpAddr::V6(b), 3)]);
        assert_eq!(route_dst(&m), Some((IpAddr::V6(dst), 64)));
        let one = multipath_route6(dst, 64, &[(a, 1)]);
        assert_eq!(route_hops(&one), vec![(IpAddr::V6(a), 1)]);
    }

    #[test]
    fn psched_of_this_kernel_is_64ns_ticks() {
        // /proc/net/psched on Linux 6.x (PSCHED_SHIFT 6): 15.625 ticks per µs.
        let p = Psched::parse("000003e8 00000040 000f4240 3b9aca00\n").unwrap();
        assert_eq!(p.ticks_per_us, 15.625);
        // The clock_res = 10⁹ compatibility marker means t2us = us2t.
        let p = Psched::parse("000003e8 00000040 3b9aca00 3b9aca00").unwrap();
        assert_eq!(p.ticks_per_us, 1000.0);
        for bad in ["", "1 2", "zz 1 1", "1 0 1"] {
            assert!(Psched::parse(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn tbf_100mbit_burst_32k_latency_20ms_matches_tc() {
        let p = Psched::parse("000003e8 00000040 000f4240 3b9aca00").unwrap();
        let t = Tbf::mbps(100);
        assert_eq!(t.rate_bytes(), 12_500_000);
        // tc: limit = rate × latency + burst = 250 000 + 32 768.
        assert_eq!(t.limit(), 282_768);
        // 32 KiB at 12.5 MB/s = 2621.44 µs = 40 960 ticks of 64 ns.
        assert_eq!(p.xmit_ticks(t.rate_bytes(), t.burst), 40_960);
        let opts = t.options(&p);
        assert_eq!(opts.len(), 2, "PARMS + BURST, no RATE64 below 4 GB/s");
        let st = parse_tbf(7, &opts).unwrap();
        assert_eq!(
            st,
            TbfState {
                index: 7,
                rate_bytes: 12_500_000,
                limit: 282_768,
                buffer_ticks: 40_960
            }
        );
        // The struct tc_tbf_qopt layout: 36 bytes, linklayer Ethernet, rate at 8.
        let TcOption::Other(parms) = &opts[0] else {
            panic!()
        };
        let mut v = vec![0; parms.value_len()];
        parms.emit_value(&mut v);
        assert_eq!(v.len(), 36);
        assert_eq!(v[1], 1);
        assert_eq!(&v[8..12], &12_500_000u32.to_ne_bytes());
        assert_eq!(&v[12..24], &[0; 12], "no peak rate");
    }

    #[test]
    fn tbf_rate_above_4_gbyte_per_s_goes_in_rate64() {
        let p = Psched::parse("000003e8 00000040 000f4240 3b9aca00").unwrap();
        let t = Tbf::mbps(400_000); // 400 Gb/s = 50 GB/s
        let opts = t.options(&p);
        assert_eq!(opts.len(), 3);
        let st = parse_tbf(1, &opts).unwrap();
        assert_eq!(st.rate_bytes, 50_000_000_000);
    }

    #[test]
    fn a_dumped_tca_options_blob_is_walked_as_nested_attributes() {
        // What netlink-packet-route 0.34 yields for a tbf dump: TCA_OPTIONS (kind 2) as
        // one opaque attribute holding PARMS (and here RATE64).
        let p = Psched::parse("000003e8 00000040 000f4240 3b9aca00").unwrap();
        let t = Tbf::mbps(400_000);
        let mut blob = Vec::new();
        for o in t.options(&p) {
            let TcOption::Other(n) = o else { panic!() };
            let mut v = vec![0; n.value_len()];
            n.emit_value(&mut v);
            blob.extend_from_slice(&((v.len() + 4) as u16).to_ne_bytes());
            blob.extend_from_slice(&n.kind().to_ne_bytes());
            blob.extend_from_slice(&v);
            while blob.len() % 4 != 0 {
                blob.push(0);
            }
        }
        let wrapped = vec![TcOption::Other(DefaultNla::new(2, blob.clone()))];
        assert_eq!(parse_tbf(3, &wrapped).unwrap().rate_bytes, 50_000_000_000);
        assert_eq!(nested_attrs(&blob).len(), 3);
        // Truncated: no panic, only what is whole.
        assert!(nested_attrs(&blob[..10]).is_empty());
        assert_eq!(parse_tbf(3, &[]), None);
    }

    proptest::proptest! {
        /// Arbitrary bytes as a nested attribute list: never a panic, and every
        /// attribute found lies inside the input.
        #[test]
        fn nested_attrs_never_panic(b in proptest::collection::vec(proptest::num::u8::ANY, 0..256)) {
            let total: usize = nested_attrs(&b).iter().map(|a| a.1.len() + 4).sum();
            proptest::prop_assert!(total <= b.len());
            let _ = parse_tbf(0, &[TcOption::Other(DefaultNla::new(2, b))]);
        }
    }

    #[test]
    fn nexthop_messages_have_the_kernel_layout() {
        let via = nexthop_payload(&NextHop::Via {
            id: 3,
            gateway: IpAddr::V4(Ipv4Addr::new(10, 64, 0, 1)),
            oif: 7,
        });
        // nhmsg (8) + NHA_ID (8) + NHA_OIF (8) + NHA_GATEWAY (8).
        assert_eq!(via.len(), 32);
        assert_eq!(via[0], libc::AF_INET as u8);
        assert_eq!(&via[8..12], &[8, 0, 1, 0][..]);
        assert_eq!(&via[12..16], &3u32.to_ne_bytes());
        assert_eq!(&via[16..20], &[8, 0, 5, 0][..]);
        assert_eq!(&via[28..32], &[10, 64, 0, 1]);
        let v6 = nexthop_payload(&NextHop::Via {
            id: 4,
            gateway: IpAddr::V6("fd00:fffe::1".parse().unwrap()),
            oif: 7,
        });
        assert_eq!(v6[0], libc::AF_INET6 as u8);
        assert_eq!(v6.len(), 8 + 8 + 8 + 20);
        let g = nexthop_payload(&NextHop::Group {
            id: 9,
            members: vec![(3, 1), (4, 3)],
        });
        assert_eq!(g[0], libc::AF_UNSPEC as u8);
        // NHA_GROUP: 2 × struct nexthop_grp (8 bytes), weights stored minus one.
        let a = nested_attrs(&g[8..]);
        assert_eq!(a[1].0, 2);
        assert_eq!(a[1].1.len(), 16);
        assert_eq!((a[1].1[4], a[1].1[12]), (0, 2));
        assert_eq!(a[2], (3, 0u16.to_ne_bytes().to_vec()));
        let m = raw_nlmsg(RTM_NEWNEXTHOP, 0x5, 42, &g);
        assert_eq!(
            u32::from_ne_bytes(m[..4].try_into().unwrap()) as usize,
            m.len()
        );
        assert_eq!(u16::from_ne_bytes([m[4], m[5]]), 104);
    }

    #[test]
    fn single_next_hop_is_a_plain_gateway_route() {
        let m = multipath_route(
            Ipv4Addr::new(10, 1, 0, 0),
            24,
            &[(Ipv4Addr::new(10, 0, 0, 1), 1)],
        );
        assert!(
            m.attributes
                .iter()
                .any(|a| matches!(a, RouteAttribute::Gateway(_)))
        );
    }
}
