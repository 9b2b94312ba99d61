//! Golden tests of every export format on a k=4 fat-tree (16 hosts, 20
//! switches), plus parse-back checks where the format allows: the JSON
//! document round-trips through serde into the documented schema and agrees
//! with the routing tables; every `ip -batch` line parses under the `ip route`
//! grammar; SONiC files are valid JSON with matching `nexthop`/`ifname`
//! lists; Slurm hostlists expand to every server exactly once.
//!
//! Snapshots live in `tests/snapshots/`; after an intended format change,
//! review and accept them with `INSTA_UPDATE=always cargo test -p topo --test export_golden`.

use std::collections::{BTreeMap, BTreeSet};

use serde::Deserialize;
use topo::addressing::AddressPlan;
use topo::export::{self, Format, MemSink, Routed, Tables, ipbatch, slurm};
use topo::lft::Lft;
use topo::{Fabric, Routes};

fn k4() -> (Fabric, Routes, AddressPlan) {
    let f = topo::generators::fat_tree(4, topo::Rate::gbps(400)).unwrap();
    let r = Routes::compute(&f);
    let a = AddressPlan::new(&f).unwrap();
    (f, r, a)
}

fn export_all(f: &Fabric, tables: Tables<'_>, addr: &AddressPlan) -> MemSink {
    let routed = Routed {
        fabric: f,
        addr,
        tables,
        lanes: None,
    };
    let mut sink = MemSink::new();
    for fmt in Format::ALL {
        export::export(&routed, fmt, &mut sink).unwrap_or_else(|e| panic!("{fmt}: {e}"));
    }
    sink
}

#[test]
fn golden_ecmp() {
    let (f, r, a) = k4();
    let sink = export_all(&f, Tables::Ecmp(&r), &a);
    // Per-switch formats write one file per switch.
    for dir in ["ip", "ip-nhg", "frr/bgp", "frr/static", "sonic"] {
        let n = sink
            .files
            .keys()
            .filter(|k| {
                k.starts_with(&format!("{dir}/"))
                    && k.matches('/').count() == dir.matches('/').count() + 1
            })
            .count();
        assert_eq!(n, 20, "{dir}");
    }
    for file in [
        "routes.json",
        "ip/pod0-leaf0.batch",
        "ip/pod0-agg0.batch",
        "ip/core0-0.batch",
        "ip-nhg/pod0-leaf0.batch",
        "ip-nhg/core0-0.batch",
        "frr/bgp/pod0-leaf0.conf",
        "frr/bgp/pod0-agg0.conf",
        "frr/bgp/core0-0.conf",
        "frr/static/pod0-agg0.conf",
        "sonic/pod0-leaf0.json",
        "opensm/plane0/lfts.dump",
        "opensm/plane0/fabric.net",
        "opensm/plane0/guid2lid",
        "fabric.dot",
        "topology.conf",
        "topology.yaml",
        "k8s/nodes.yaml",
        "k8s/kueue-topology.yaml",
    ] {
        let name = file.replace(['/', '.'], "_");
        insta::assert_snapshot!(
            name,
            sink.text(file).unwrap_or_else(|| panic!("{file} missing"))
        );
    }
}

#[test]
fn opensm_lft_is_the_same_whatever_the_engine() {
    // The OpenSM LFT is single-path either way; from ECMP tables it takes the same d-mod-k
    // member as the single-path engine, so it is balanced at every tier (issue 15: it used
    // to take `lid mod width` at every tier, correlating leaf and aggregation choices).
    let f = topo::generators::fat_tree(8, topo::Rate::gbps(400)).unwrap();
    let r = Routes::compute(&f);
    let a = AddressPlan::new(&f).unwrap();
    let lft = Lft::compute(&f, &r);
    let ecmp = export_all(&f, Tables::Ecmp(&r), &a);
    let single = export_all(&f, Tables::SinglePath(&r, &lft), &a);
    assert_eq!(
        ecmp.text("opensm/plane0/lfts.dump").unwrap(),
        single.text("opensm/plane0/lfts.dump").unwrap()
    );
}

#[test]
fn golden_single_path() {
    let (f, r, a) = k4();
    let lft = Lft::compute(&f, &r);
    let sink = export_all(&f, Tables::SinglePath(&r, &lft), &a);
    insta::assert_snapshot!(
        "single_path_ip_pod0-agg0",
        sink.text("ip/pod0-agg0.batch").unwrap()
    );
    insta::assert_snapshot!(
        "single_path_lfts",
        sink.text("opensm/plane0/lfts.dump").unwrap()
    );
    // Every LFT entry toward a host equals the single-path table.
    let dump = sink.text("opensm/plane0/lfts.dump").unwrap();
    let mut sw = None;
    let mut checked = 0;
    for line in dump.lines() {
        if let Some(rest) = line.strip_prefix("Unicast lids") {
            let name = rest.rsplit("('").next().unwrap().trim_end_matches("'):");
            sw = Some(f.name_index()[name]);
        } else if let Some(rest) = line.strip_prefix("0x") {
            let mut it = rest.split_whitespace();
            let _lid = it.next();
            let port: u16 = it.next().unwrap().parse().unwrap();
            let dst = rest.rsplit(": '").next().unwrap().trim_end_matches('\'');
            let d = f.name_index()[dst];
            if f.is_host(d) {
                assert_eq!(Some(port - 1), lft.port(&f, sw.unwrap(), d), "{line}");
                checked += 1;
            }
        }
    }
    assert_eq!(checked, 20 * 16);
}

/// The documented JSON schema (docs/exports.md), as a reader would declare it.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Doc {
    schema: String,
    fabric: String,
    engine: String,
    planes: u32,
    hosts: u32,
    failed_links: Vec<String>,
    failed_switches: Vec<String>,
    lanes: JLanes,
    switches: Vec<Switch>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct JLanes {
    used: u8,
    pairs: Vec<JLanePair>,
}

#[derive(Debug, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
struct JLanePair {
    plane: u16,
    src_leaf: String,
    dst_leaf: String,
    lane: u8,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Switch {
    name: String,
    id: u32,
    plane: u16,
    tier: u8,
    pod: Option<u32>,
    asn: Option<u32>,
    loopback: Option<std::net::Ipv4Addr>,
    loopback6: Option<std::net::Ipv6Addr>,
    lid: Option<u16>,
    routes: Vec<JRoute>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct JRoute {
    prefix: String,
    prefix6: String,
    dst: String,
    local: bool,
    nexthops: Vec<JHop>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct JHop {
    port: u16,
    ifname: String,
    neighbor: String,
    via: std::net::Ipv4Addr,
    via6: std::net::Ipv6Addr,
    weight: u32,
}

#[test]
fn json_round_trips_and_matches_the_tables() {
    let (f, r, a) = k4();
    let sink = export_all(&f, Tables::Ecmp(&r), &a);
    let doc: Doc = serde_json::from_str(sink.text("routes.json").unwrap()).unwrap();
    assert_eq!(
        (
            doc.schema.as_str(),
            doc.fabric.as_str(),
            doc.engine.as_str()
        ),
        ("fabric-routes/v1", "fat-tree-k4", "ecmp")
    );
    assert_eq!((doc.planes, doc.hosts, doc.switches.len()), (1, 16, 20));
    assert!(doc.failed_links.is_empty() && doc.failed_switches.is_empty());
    assert_eq!((doc.lanes.used, doc.lanes.pairs.len()), (1, 0));
    let names = f.name_index();
    for s in &doc.switches {
        let id = names[s.name.as_str()];
        assert_eq!(
            (id.0, s.plane, s.tier, s.pod),
            (s.id, 0, f.tier(id), f.pod(id))
        );
        assert_eq!(s.asn, a.asn(&f, id));
        assert_eq!(s.loopback, a.loopback_v4(id));
        assert_eq!(s.loopback6, a.loopback_v6(id));
        assert_eq!(s.lid, a.switch_lid(&f, id));
        for route in &s.routes {
            let dst = names[route.dst.as_str()];
            // The next hops are exactly the ECMP group toward any host behind `dst`.
            let host = if f.is_host(dst) {
                dst
            } else {
                f.hosts()
                    .find(|&h| f.attachment(h, 0).unwrap().leaf == dst)
                    .unwrap()
            };
            let want: Vec<u16> = r.next_hops(id, host).to_vec();
            let got: Vec<u16> = route.nexthops.iter().map(|h| h.port).collect();
            assert_eq!(got, want, "{} -> {}", s.name, route.prefix);
            assert_eq!(route.local, f.is_host(dst));
            for h in &route.nexthops {
                assert_eq!(names[h.neighbor.as_str()], f.peer(id, h.port));
                assert_eq!(h.ifname, format!("swp{}", h.port + 1));
                assert_eq!(h.weight, 1);
                assert_ne!(h.via, std::net::Ipv4Addr::UNSPECIFIED);
                assert_ne!(h.via6, std::net::Ipv6Addr::UNSPECIFIED);
            }
            if route.local {
                let plane = f.plane(id).unwrap();
                let v6 = a.host_v6(&f, dst, plane).unwrap();
                assert_eq!(route.prefix6, format!("{v6}/128"));
                assert_eq!(route.nexthops[0].via6, v6);
            } else {
                assert_eq!(route.prefix, a.tor_prefix_v4(dst).unwrap().to_string());
                assert_eq!(route.prefix6, a.tor_prefix_v6(dst).unwrap().to_string());
            }
        }
        // Every leaf of the plane is reachable from every switch: leaves route to 7
        // other ToR prefixes + 2 local hosts, other switches to all 8 prefixes.
        let expect = if f.tier(id) == 1 { 9 } else { 8 };
        assert_eq!(s.routes.len(), expect, "{}", s.name);
    }
}

#[test]
fn ip_batch_lines_parse_and_count() {
    let (f, r, a) = k4();
    for sink in [
        export_all(&f, Tables::Ecmp(&r), &a),
        export_all(&f, Tables::SinglePath(&r, &Lft::compute(&f, &r)), &a),
    ] {
        for s in f.switches() {
            let text = sink.text(&format!("ip/{}.batch", f.node_name(s))).unwrap();
            // `# NAME: N IPv4 + M IPv6 routes, …`
            let words: Vec<&str> = text.lines().next().unwrap().split_whitespace().collect();
            let (v4, v6): (usize, usize) = (words[2].parse().unwrap(), words[5].parse().unwrap());
            assert_eq!(v4, v6);
            let mut routes = [0, 0];
            let mut prefixes = BTreeSet::new();
            for (i, line) in text.lines().enumerate() {
                if let Some(p) = ipbatch::parse_line(i + 1, line)
                    .unwrap_or_else(|e| panic!("{}: {e}", f.node_name(s)))
                {
                    assert!(p.nexthops.is_empty() != p.onlink.is_none(), "{line}");
                    routes[usize::from(p.prefix.contains(':'))] += 1;
                    assert!(prefixes.insert(p.prefix));
                }
            }
            assert_eq!(routes, [v4, v6], "{}", f.node_name(s));
        }
    }
}

#[test]
fn sonic_entries_are_well_formed() {
    let (f, r, a) = k4();
    let sink = export_all(&f, Tables::Ecmp(&r), &a);
    for s in f.switches() {
        let v: serde_json::Value = serde_json::from_str(
            sink.text(&format!("sonic/{}.json", f.node_name(s)))
                .unwrap(),
        )
        .unwrap();
        for e in v.as_array().unwrap() {
            let o = e.as_object().unwrap();
            assert_eq!(o["OP"], "SET");
            let (key, fields) = o
                .iter()
                .find(|(k, _)| k.starts_with("ROUTE_TABLE:"))
                .unwrap();
            assert!(key["ROUTE_TABLE:".len()..].contains('/'));
            let nh = fields["nexthop"].as_str().unwrap().split(',').count();
            let ifs: Vec<&str> = fields["ifname"].as_str().unwrap().split(',').collect();
            assert_eq!(nh, ifs.len());
            assert!(ifs.iter().all(|i| i.starts_with("Ethernet")));
        }
    }
}

#[test]
fn slurm_tree_covers_every_server_once() {
    let (f, _, _) = k4();
    let mut sink = MemSink::new();
    export::export_topology(&f, Format::Slurm, &mut sink).unwrap();
    let text = sink.text("topology.conf").unwrap();
    let mut seen: BTreeMap<String, usize> = BTreeMap::new();
    let mut switches = BTreeSet::new();
    let mut children = BTreeSet::new();
    for line in text.lines().filter(|l| !l.starts_with('#')) {
        let mut it = line.split_whitespace();
        let name = it.next().unwrap().strip_prefix("SwitchName=").unwrap();
        switches.insert(name.to_owned());
        let kv = it.next().unwrap();
        if let Some(nodes) = kv.strip_prefix("Nodes=") {
            for n in slurm::expand_hostlist(nodes).unwrap() {
                *seen.entry(n).or_default() += 1;
            }
        } else {
            children.extend(slurm::expand_hostlist(kv.strip_prefix("Switches=").unwrap()).unwrap());
        }
    }
    assert_eq!(seen.len(), 16);
    assert!(seen.values().all(|&c| c == 1));
    assert!(
        children.is_subset(&switches),
        "every child switch is defined"
    );
    assert_eq!(switches.difference(&children).count(), 1, "one root");
}

#[test]
fn multi_plane_writes_one_subnet_per_plane() {
    let spec = topo::generators::multi_plane_spec(
        topo::generators::leaf_spine_spec(4, 2, 4, 1, topo::Rate::gbps(400)),
        2,
    );
    let f = spec.build("test").unwrap();
    let r = Routes::compute(&f);
    let a = AddressPlan::new(&f).unwrap();
    let sink = export_all(&f, Tables::Ecmp(&r), &a);
    for p in 0..2 {
        let net = sink.text(&format!("opensm/plane{p}/fabric.net")).unwrap();
        assert_eq!(net.matches("\nSwitch\t").count(), 6, "plane {p}");
        assert_eq!(net.matches("\nCa\t").count(), f.num_hosts(), "plane {p}");
        let g2l = sink.text(&format!("opensm/plane{p}/guid2lid")).unwrap();
        assert_eq!(g2l.lines().count(), 6 + f.num_hosts());
    }
}

#[test]
fn failures_show_in_every_table() {
    let (f, mut r, a) = k4();
    let names = f.name_index();
    let (leaf, agg) = (names["pod0-leaf0"], names["pod0-agg0"]);
    let link = f.ports(leaf).find(|&(p, _)| p == agg).unwrap().1;
    let port = (0..f.degree(leaf) as u16)
        .find(|&p| f.peer(leaf, p) == agg)
        .unwrap();
    r.fail_links(&f, &[link]);
    let lft = Lft::compute(&f, &r);
    for sink in [
        export_all(&f, Tables::Ecmp(&r), &a),
        export_all(&f, Tables::SinglePath(&r, &lft), &a),
    ] {
        let ip = sink.text("ip/pod0-leaf0.batch").unwrap();
        let dev = format!("dev swp{}", port + 1);
        assert!(
            !ip.contains(&format!("{dev} ")) && !ip.contains(&format!("{dev}\n")),
            "failed port still used:\n{ip}"
        );
        // The agg's side of the link is gone from its tables too.
        assert!(
            !sink
                .text("ip/pod0-agg0.batch")
                .unwrap()
                .contains("dev swp1\n")
        );
        // The LFT routes around it: no entry of pod0-leaf0 leaves through the failed port.
        let dump = sink.text("opensm/plane0/lfts.dump").unwrap();
        let block = dump
            .split("Unicast lids")
            .find(|b| b.contains("('pod0-leaf0')"))
            .unwrap();
        let ib_port = format!(" {:03} #", port + 1);
        assert!(!block.contains(&ib_port), "{block}");
        assert_eq!(
            block.lines().filter(|l| l.starts_with("0x")).count(),
            36,
            "every LID still routed"
        );
        // The .net leaves the failed link out on both ends, so ibsim and OpenSM see the
        // fabric the tables were made for; the other links stay.
        let net = sink.text("opensm/plane0/fabric.net").unwrap();
        let node = |name: &str| {
            net.split("\n\n")
                .find(|b| b.contains(&format!("# \"{name}\" base port")))
                .unwrap()
                .to_string()
        };
        assert!(!node("pod0-leaf0").contains("\"pod0-agg0\""), "{net}");
        assert!(!node("pod0-agg0").contains("\"pod0-leaf0\""), "{net}");
        assert!(node("pod0-leaf0").contains("\"pod0-agg1\""));
        assert!(node("pod0-agg0").contains("\"pod0-leaf1\""));
    }
}

/// After an aggregation switch loses one of its core links, the leaves of its pod
/// weight it 1 against 2 toward the other pods in every format that carries weights
/// (both families), and FRR static says it cannot.
#[test]
fn weighted_ecmp_after_a_core_link_failure() {
    let (f, mut r, a) = k4();
    let names = f.name_index();
    let agg = names["pod0-agg0"];
    let core_link = f
        .ports(agg)
        .find(|&(p, _)| f.tier(p) == 3)
        .map(|(_, l)| l)
        .unwrap();
    r.fail_links(&f, &[core_link]);
    let sink = export_all(&f, Tables::Ecmp(&r), &a);
    let remote = a.tor_prefix_v4(names["pod1-leaf0"]).unwrap().to_string();
    let remote6 = a.tor_prefix_v6(names["pod1-leaf0"]).unwrap().to_string();
    // ip: kernel weights, agg0 (swp3) 1, agg1 (swp4) 2, in both families.
    let ip = sink.text("ip/pod0-leaf0.batch").unwrap();
    for (pfx, fam) in [(&remote, 4), (&remote6, 6)] {
        let line = ip
            .lines()
            .find(|l| l.starts_with(&format!("route replace {pfx} ")))
            .unwrap_or_else(|| panic!("no IPv{fam} route to {pfx}:\n{ip}"));
        let p = ipbatch::parse_line(1, line).unwrap().unwrap();
        let w: Vec<(&str, u32)> = p.nexthops.iter().map(|h| (h.1.as_str(), h.2)).collect();
        assert_eq!(w, [("swp3", 1), ("swp4", 2)], "{line}");
    }
    // Inside the pod the split stays equal.
    let local = a.tor_prefix_v4(names["pod0-leaf1"]).unwrap().to_string();
    assert!(ip.contains(&format!(
        "route replace {local} proto static nexthop via 10.64.0.1 dev swp3 weight 1 nexthop via 10.64.0.3 dev swp4 weight 1\n"
    )));
    // ip-nhg: weighted groups `id,weight`.
    let nhg = sink.text("ip-nhg/pod0-leaf0.batch").unwrap();
    assert!(nhg.contains(" group 3/4,2\n"), "{nhg}");
    assert!(nhg.contains(" group 50003/50004,2\n"), "{nhg}");
    // SONiC: a weight list on the weighted entries only.
    let sonic: serde_json::Value =
        serde_json::from_str(sink.text("sonic/pod0-leaf0.json").unwrap()).unwrap();
    let entry = |pfx: &str| {
        sonic
            .as_array()
            .unwrap()
            .iter()
            .find_map(|e| e.get(format!("ROUTE_TABLE:{pfx}")))
            .unwrap()
            .clone()
    };
    assert_eq!(entry(&remote)["weight"], "1,2");
    assert_eq!(entry(&remote6)["weight"], "1,2");
    assert!(entry(&local).get("weight").is_none());
    // JSON carries the weights.
    let doc: Doc = serde_json::from_str(sink.text("routes.json").unwrap()).unwrap();
    let leaf = doc
        .switches
        .iter()
        .find(|s| s.name == "pod0-leaf0")
        .unwrap();
    let route = leaf.routes.iter().find(|r| r.prefix == remote).unwrap();
    let w: Vec<u32> = route.nexthops.iter().map(|h| h.weight).collect();
    assert_eq!(w, [1, 2]);
    // FRR static cannot carry weights and says so; BGP sets link bandwidth.
    let st = sink.text("frr/static/pod0-leaf0.conf").unwrap();
    assert!(st.contains("have unequal next-hop weights"), "{st}");
    let bgp = sink.text("frr/bgp/pod0-leaf0.conf").unwrap();
    assert!(bgp.contains("set extcommunity bandwidth num-multipaths"));
}

/// Issue 21: `--format json --out r.json` after failures printed that pairs were routed on
/// further lanes, but the file had no lane and no failure field. The single-file formats
/// now carry what they can hold: `routes.json` the failed links, failed switches and every
/// pair's lane; `fabric.dot` the failed links, dashed red.
#[test]
fn single_file_exports_carry_failures_and_lanes() {
    let (f, mut r, a) = k4();
    let set = topo::failures::resolve(&f, &topo::lanes::STRANDED_K4.map(String::from)).unwrap();
    r.fail_links(&f, &set.links);
    let agg = f.name_index()["pod3-agg1"];
    r.fail_nodes(&f, &[agg]);
    let lanes = topo::lanes::route_around(&f, &mut r, 8).unwrap();
    assert_eq!(lanes.used, 2);
    let routed = Routed {
        fabric: &f,
        addr: &a,
        tables: Tables::Ecmp(&r),
        lanes: Some(&lanes),
    };
    let mut sink = MemSink::new();
    export::export_many(&routed, &[Format::Json, Format::Dot], &mut sink).unwrap();
    let doc: Doc = serde_json::from_str(sink.text("routes.json").unwrap()).unwrap();
    let mut want: Vec<String> = r
        .failed_links()
        .map(|l| topo::failures::link_name(&f, l))
        .collect();
    want.sort();
    let mut got = doc.failed_links.clone();
    got.sort();
    assert_eq!(got, want);
    for name in STRANDED_NAMES {
        assert!(doc.failed_links.iter().any(|l| l == name), "{name}");
    }
    assert_eq!(doc.failed_switches, vec!["pod3-agg1".to_string()]);
    assert_eq!(doc.lanes.used, 2);
    let pairs: Vec<JLanePair> = lanes
        .pairs()
        .iter()
        .map(|&(s, d, lane)| JLanePair {
            plane: 0,
            src_leaf: f.node_name(s).into(),
            dst_leaf: f.node_name(d).into(),
            lane,
        })
        .collect();
    assert!(!pairs.is_empty());
    assert_eq!(doc.lanes.pairs, pairs);
    let dot = sink.text("fabric.dot").unwrap();
    let dashed = dot.lines().filter(|l| l.contains("style=dashed")).count();
    assert_eq!(dashed, want.len(), "{dot}");
    assert!(dot.contains(&format!("// {} failed links", want.len())));
}

const STRANDED_NAMES: [&str; 3] = topo::lanes::STRANDED_K4;
