//! A switch's FIB as FRR itself reports it: `vtysh -c 'show ip route json'` (and `show
//! ipv6 route json`), for fabrics whose kernel the observer cannot reach through netlink
//! (a real switch: run vtysh there, or read what a collector saved).
//!
//! FRR's answer is one JSON object keyed by prefix, each a list of route entries (one
//! per protocol that offered a route). The FIB is the entry with `"installed": true`;
//! its next hops are those with `"fib": true` (a recursive next hop is skipped: the
//! resolving ones that follow it carry the interface). A next hop is mapped to a port by
//! `interfaceName`; `blackhole`/`unreachable` next hops or interfaces that are no fabric
//! port give no port, which the check reports as a missing route. Weights are FRR's own
//! (the kernel's, 1 when absent).
//!
//! Bad input is an error that names what was wrong, never a panic: at most
//! [`MAX_JSON`] bytes, [`MAX_NEXTHOPS`] next hops per route, weights up to 65535, prefix
//! lengths within the family's.

use std::net::IpAddr;

use serde_json::Value;

use super::fib::{FibRoute, normalize};
use super::procs::run;
use crate::netns::Netns;
use crate::{Error, Result};

/// Largest vtysh answer read (a k=64 switch's routes are a few MB).
pub const MAX_JSON: usize = 64 << 20;
/// Most next hops one route may have.
pub const MAX_NEXTHOPS: usize = 1024;

/// The kernel's `RTPROT_*` number of an FRR protocol name (for the report).
fn protocol(name: &str) -> Option<u8> {
    Some(match name {
        "kernel" | "connected" => 2,
        "static" => 4,
        "bgp" => 186,
        "isis" => 187,
        "ospf" | "ospf6" => 188,
        "rip" | "ripng" => 189,
        _ => return None,
    })
}

fn bad(what: impl std::fmt::Display) -> Error {
    Error::Invalid(format!("vtysh route JSON: {what}"))
}

/// Parses `a.b.c.d/len` or `x::y/len`.
pub fn parse_prefix(s: &str) -> Result<(IpAddr, u8)> {
    let (a, l) = s
        .split_once('/')
        .ok_or_else(|| bad(format!("prefix {s:?}: expected ADDRESS/LENGTH")))?;
    let addr: IpAddr = a
        .parse()
        .map_err(|_| bad(format!("prefix {s:?}: {a:?} is not an IP address")))?;
    let max = if addr.is_ipv4() { 32 } else { 128 };
    let len: u8 = l
        .parse()
        .ok()
        .filter(|&n| n <= max)
        .ok_or_else(|| bad(format!("prefix {s:?}: length {l:?} is not 0..={max}")))?;
    Ok((addr, len))
}

/// The installed routes of one `show ip[v6] route json` answer; `port_of` maps an
/// interface name to a fabric port.
pub fn parse(text: &[u8], port_of: impl Fn(&str) -> Option<topo::Port>) -> Result<Vec<FibRoute>> {
    if text.len() > MAX_JSON {
        return Err(bad(format!(
            "{} bytes, more than the {MAX_JSON} read",
            text.len()
        )));
    }
    let v: Value = serde_json::from_slice(text).map_err(|e| bad(format!("not JSON: {e}")))?;
    let map = v
        .as_object()
        .ok_or_else(|| bad("expected an object keyed by prefix"))?;
    let mut out = Vec::new();
    for (key, entries) in map {
        let entries = entries
            .as_array()
            .ok_or_else(|| bad(format!("{key}: expected a list of route entries")))?;
        let Some(e) = entries
            .iter()
            .find(|e| e.get("installed").and_then(Value::as_bool) == Some(true))
        else {
            continue;
        };
        let dst = parse_prefix(e.get("prefix").and_then(Value::as_str).unwrap_or(key))?;
        out.push(route(key, dst, e, &port_of)?);
    }
    Ok(out)
}

fn route(
    key: &str,
    dst: (IpAddr, u8),
    e: &Value,
    port_of: &impl Fn(&str) -> Option<topo::Port>,
) -> Result<FibRoute> {
    let nhs = match e.get("nexthops") {
        None => &Vec::new(),
        Some(n) => n
            .as_array()
            .ok_or_else(|| bad(format!("{key}: nexthops is not a list")))?,
    };
    if nhs.len() > MAX_NEXTHOPS {
        return Err(bad(format!(
            "{key}: {} next hops, more than {MAX_NEXTHOPS}",
            nhs.len()
        )));
    }
    let (mut ports, mut hops) = (Vec::new(), Vec::new());
    for nh in nhs {
        let flag = |k: &str| nh.get(k).and_then(Value::as_bool) == Some(true);
        if !flag("fib") || flag("recursive") {
            continue;
        }
        let weight = match nh.get("weight") {
            None => 1,
            Some(w) => w
                .as_u64()
                .filter(|w| (1..=65_535).contains(w))
                .ok_or_else(|| bad(format!("{key}: weight {w} is not 1..=65535")))?
                as u16,
        };
        if flag("blackhole") || flag("unreachable") {
            continue;
        }
        if let Some(ip) = nh.get("ip").and_then(Value::as_str) {
            let ip: IpAddr = ip
                .parse()
                .map_err(|_| bad(format!("{key}: next hop {ip:?} is not an IP address")))?;
            hops.push((ip, weight));
        }
        if let Some(p) = nh
            .get("interfaceName")
            .and_then(Value::as_str)
            .and_then(port_of)
        {
            ports.push((p, weight as u32));
        }
    }
    Ok(FibRoute {
        dst,
        ports: normalize(ports),
        hops,
        protocol: e.get("protocol").and_then(Value::as_str).and_then(protocol),
    })
}

/// Reads FRR instance `instance`'s FIB with `vtysh -N INSTANCE -c 'show ip route json'`
/// (and `show ipv6 route json` when `ipv6`), run in namespace `ns`; `port_of` maps an
/// interface name to a fabric port. Returns the IPv4 and IPv6 routes.
pub fn read(
    ns: &Netns,
    instance: &str,
    ipv6: bool,
    port_of: impl Fn(&str) -> Option<topo::Port> + Copy,
) -> Result<(Vec<FibRoute>, Vec<FibRoute>)> {
    let show = |cmd: &str| -> Result<Vec<FibRoute>> {
        let out = run(Some(ns), "vtysh", &["-N", instance, "-c", cmd])?;
        parse(out.as_bytes(), port_of)
            .map_err(|e| Error::Invalid(format!("{} `{cmd}`: {e}", ns.name())))
    };
    let v4 = show("show ip route json")?;
    let v6 = if ipv6 {
        show("show ipv6 route json")?
    } else {
        Vec::new()
    };
    Ok((v4, v6))
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn port(name: &str) -> Option<topo::Port> {
        name.strip_prefix('p')?.parse().ok()
    }

    /// Trimmed from FRR 8.4.4's answer on the testbed's pod0-leaf0.
    const LEAF: &str = r#"{
      "10.0.1.0/24":[{"prefix":"10.0.1.0/24","prefixLen":24,"protocol":"bgp","vrfId":0,
        "vrfName":"default","selected":true,"destSelected":true,"distance":20,"metric":0,
        "installed":true,"table":254,"internalStatus":16,"internalFlags":8,
        "internalNextHopNum":2,"internalNextHopActiveNum":2,"uptime":"00:00:41",
        "nexthops":[
          {"flags":3,"fib":true,"ip":"10.255.0.1","afi":"ipv4","interfaceIndex":4,"interfaceName":"p2","active":true,"weight":1},
          {"flags":3,"fib":true,"ip":"10.255.0.5","afi":"ipv4","interfaceIndex":5,"interfaceName":"p3","active":true,"weight":1}]}],
      "10.0.2.0/24":[
        {"prefix":"10.0.2.0/24","protocol":"static","selected":false,"installed":false,
         "nexthops":[{"flags":1,"blackhole":true,"active":true}]},
        {"prefix":"10.0.2.0/24","protocol":"bgp","selected":true,"installed":true,
         "nexthops":[
          {"flags":3,"fib":true,"ip":"10.255.0.1","interfaceName":"p2","active":true,"weight":33},
          {"flags":3,"fib":true,"ip":"10.255.0.5","interfaceName":"p3","active":true,"weight":66},
          {"flags":1,"ip":"10.255.0.9","interfaceName":"p4","active":false}]}],
      "10.0.3.0/24":[{"prefix":"10.0.3.0/24","protocol":"bgp","installed":false,"nexthops":[]}],
      "10.0.4.0/24":[{"prefix":"10.0.4.0/24","protocol":"static","installed":true,
         "nexthops":[{"flags":3,"fib":true,"blackhole":true,"active":true}]}],
      "100.64.0.0/24":[{"prefix":"100.64.0.0/24","protocol":"connected","installed":true,
         "nexthops":[{"flags":3,"fib":true,"directlyConnected":true,"interfaceName":"mgmt0","active":true}]}]
    }"#;

    #[test]
    fn installed_routes_and_their_fib_next_hops() {
        let r = parse(LEAF.as_bytes(), port).unwrap();
        assert_eq!(r.len(), 4, "{r:?}");
        let get = |p: &str| {
            r.iter()
                .find(|x| x.dst == parse_prefix(p).unwrap())
                .unwrap()
        };
        let a = get("10.0.1.0/24");
        assert_eq!(a.ports, vec![(2, 1), (3, 1)]);
        assert_eq!(a.protocol, Some(186));
        assert_eq!(a.hops.len(), 2);
        // The installed entry of two; the next hop not in the FIB left out; 33:66 = 1:2.
        assert_eq!(get("10.0.2.0/24").ports, vec![(2, 1), (3, 2)]);
        // A black hole and a non-fabric interface: no port.
        assert!(get("10.0.4.0/24").ports.is_empty());
        assert!(get("100.64.0.0/24").ports.is_empty());
        assert!(
            r.iter()
                .all(|x| x.dst != parse_prefix("10.0.3.0/24").unwrap())
        );
    }

    #[test]
    fn ipv6_link_local_next_hops_map_by_interface() {
        let j = r#"{"fd00:0:1::/64":[{"prefix":"fd00:0:1::/64","protocol":"bgp","installed":true,
          "nexthops":[{"fib":true,"ip":"fe80::1","afi":"ipv6","interfaceName":"p2","active":true},
                      {"fib":true,"ip":"fe80::2","afi":"ipv6","interfaceName":"p3","active":true}]}]}"#;
        let r = parse(j.as_bytes(), port).unwrap();
        assert_eq!(r[0].dst.1, 64);
        assert_eq!(r[0].ports, vec![(2, 1), (3, 1)]);
        assert_eq!(r[0].hops[0].0, "fe80::1".parse::<IpAddr>().unwrap());
    }

    #[test]
    fn malformed_answers_are_errors_that_say_what() {
        for (j, want) in [
            ("", "not JSON"),
            ("[]", "expected an object"),
            (r#"{"10.0.0.0/24":{}}"#, "expected a list"),
            (r#"{"10.0.0.0/33":[{"installed":true}]}"#, "length \"33\""),
            (r#"{"x/8":[{"installed":true}]}"#, "not an IP address"),
            (r#"{"10.0.0.0":[{"installed":true}]}"#, "ADDRESS/LENGTH"),
            (
                r#"{"10.0.0.0/8":[{"installed":true,"nexthops":{}}]}"#,
                "nexthops is not a list",
            ),
            (
                r#"{"10.0.0.0/8":[{"installed":true,"nexthops":[{"fib":true,"weight":0}]}]}"#,
                "weight 0",
            ),
            (
                r#"{"10.0.0.0/8":[{"installed":true,"nexthops":[{"fib":true,"ip":"nope"}]}]}"#,
                "\"nope\" is not an IP address",
            ),
        ] {
            let e = parse(j.as_bytes(), port).unwrap_err().to_string();
            assert!(e.contains(want), "{j}: {e}");
            assert!(e.contains("vtysh route JSON"), "{e}");
        }
        let many: Vec<String> = (0..=MAX_NEXTHOPS)
            .map(|i| format!(r#"{{"fib":true,"interfaceName":"p{i}"}}"#))
            .collect();
        let j = format!(
            r#"{{"10.0.0.0/8":[{{"installed":true,"nexthops":[{}]}}]}}"#,
            many.join(",")
        );
        assert!(
            parse(j.as_bytes(), port)
                .unwrap_err()
                .to_string()
                .contains("more than 1024")
        );
    }

    /// A route as FRR would print it.
    fn render(dst: (IpAddr, u8), hops: &[(u16, u16, bool)]) -> String {
        let nh: Vec<String> = hops
            .iter()
            .map(|&(p, w, fib)| {
                format!(
                    r#"{{"flags":3,"fib":{fib},"ip":"10.255.{}.{}","interfaceName":"p{p}","active":true,"weight":{w}}}"#,
                    p / 256,
                    p % 256
                )
            })
            .collect();
        format!(
            r#""{0}/{1}":[{{"prefix":"{0}/{1}","protocol":"bgp","installed":true,"nexthops":[{2}]}}]"#,
            dst.0,
            dst.1,
            nh.join(",")
        )
    }

    proptest! {
        /// Any bytes: routes or an error, never a panic.
        #[test]
        fn any_bytes_are_routes_or_an_error(b in proptest::collection::vec(any::<u8>(), 0..512)) {
            let _ = parse(&b, port);
        }

        /// Any JSON-ish text built from FRR's own keys: routes or an error, never a panic.
        #[test]
        fn frr_shaped_garbage_is_routes_or_an_error(
            parts in proptest::collection::vec(prop_oneof![
                Just("{".to_string()), Just("}".to_string()), Just("[".to_string()),
                Just("]".to_string()), Just(",".to_string()), Just(":".to_string()),
                Just("\"installed\"".to_string()), Just("true".to_string()),
                Just("\"nexthops\"".to_string()), Just("\"fib\"".to_string()),
                Just("\"weight\"".to_string()), Just("\"10.0.0.0/8\"".to_string()),
                Just("\"interfaceName\"".to_string()), Just("\"p1\"".to_string()),
                Just("\"ip\"".to_string()), Just("-1".to_string()), Just("1e99".to_string()),
            ], 0..64)
        ) {
            let _ = parse(parts.concat().as_bytes(), port);
        }

        /// What FRR prints comes back: the FIB next hops' ports with reduced shares.
        #[test]
        fn printed_routes_parse_back(
            routes in proptest::collection::btree_map(
                (any::<u32>(), 8u8..=32),
                proptest::collection::vec((0u16..64, 1u16..=255, any::<bool>()), 0..8),
                0..16,
            )
        ) {
            let text = format!("{{{}}}", routes
                .iter()
                .map(|(&(a, l), h)| render((IpAddr::from(a.to_be_bytes()), l), h))
                .collect::<Vec<_>>()
                .join(","));
            let got = parse(text.as_bytes(), port).unwrap();
            prop_assert_eq!(got.len(), routes.len());
            for r in &got {
                let (a, l) = (r.dst.0, r.dst.1);
                let IpAddr::V4(a4) = a else { unreachable!() };
                let h = &routes[&(u32::from(a4), l)];
                let want = normalize(h.iter().filter(|x| x.2).map(|&(p, w, _)| (p, w as u32)).collect());
                prop_assert_eq!(&r.ports, &want);
            }
        }
    }
}
