use proptest::prelude::*;

use super::enforce::{Enforcement, Membership};
use super::*;
use crate::{Format, Rate, Routes, generators};

fn k4() -> Fabric {
    generators::fat_tree(4, Rate::gbps(400)).unwrap()
}

const GOOD: &str = r#"
[[services]]
name = "storage"
servers = ["14-15"]
pkey = 0x0100
[[tenants]]
name = "a"
servers = ["0-5"]
share = 50
access = { storage = "limited" }
[[tenants]]
name = "b"
servers = [6, "7-13"]
classes = [1, 2]
share = 40
"#;

fn resolve(text: &str) -> Result<Tenants> {
    let file = TenantFile::parse(text, Format::Toml, "t.toml")?;
    Tenants::resolve(&file, &k4(), "t.toml")
}

fn err_of(text: &str) -> String {
    resolve(text).unwrap_err().to_string()
}

#[test]
fn good_file_resolves_with_keys_and_tables() {
    let t = resolve(GOOD).unwrap();
    let names: Vec<&str> = t.entries().iter().map(|e| e.name.as_str()).collect();
    assert_eq!(names, ["storage", "a", "b"]);
    let pk: Vec<u16> = t.entries().iter().map(|e| e.pkey).collect();
    assert_eq!(pk, [0x0100, 0x0001, 0x0002]);
    let vrf: Vec<u32> = t.entries().iter().map(|e| e.vrf).collect();
    assert_eq!(vrf, [1001, 1002, 1003]);
    assert_eq!(t.entries()[2].classes, [1, 2]);
    assert_eq!(t.entries()[2].sl, 1);
    assert_eq!(t.allowed(NodeId(0), NodeId(14)), Some(Allowed::Service));
    assert_eq!(t.allowed(NodeId(6), NodeId(14)), None);
    assert_eq!(t.allowed(NodeId(0), NodeId(6)), None);
    assert_eq!(t.allowed(NodeId(7), NodeId(6)), Some(Allowed::Same));
}

#[test]
fn same_file_in_yaml_and_json() {
    let f = k4();
    let toml = TenantFile::parse(GOOD, Format::Toml, "t.toml").unwrap();
    let yaml = "services:\n  - {name: storage, servers: [\"14-15\"], pkey: 256}\ntenants:\n  - {name: a, servers: [\"0-5\"], share: 50, access: {storage: limited}}\n  - {name: b, servers: [6, \"7-13\"], classes: [1, 2], share: 40}\n";
    let y = TenantFile::parse(yaml, Format::Yaml, "t.yaml").unwrap();
    assert_eq!(y, toml);
    let json = serde_json::to_string(&toml).unwrap();
    let j = TenantFile::parse(&json, Format::Json, "t.json").unwrap();
    assert_eq!(j, toml);
    assert_eq!(
        Tenants::resolve(&j, &f, "t.json").unwrap(),
        Tenants::resolve(&toml, &f, "t.toml").unwrap()
    );
}

#[test]
fn errors_name_file_entry_field_and_limit() {
    let cases: [(&str, &str, &str); 12] = [
        (
            "servers = [\"0-5\"]",
            "servers = [\"0-16\"]",
            "t.toml: tenants[0].servers[0]: server 16 does not exist: the fabric has 16 servers (0-15)",
        ),
        (
            "servers = [6, \"7-13\"]",
            "servers = [5, \"7-13\"]",
            "t.toml: tenants[1].servers[0]: host5-nic0 (server 5) is already in tenants[0].servers[0]: an entry's hosts must not overlap another's",
        ),
        (
            "classes = [1, 2]",
            "classes = [1, 8]",
            "t.toml: tenants[1].classes[1]: class 8: a switch has 8 classes (expected 0-7)",
        ),
        (
            "classes = [1, 2]",
            "classes = [0, 1, 2, 3, 4, 5, 6, 7, 0]",
            "t.toml: tenants[1].classes: 9 classes, more than a switch has (traffic_classes = 8)",
        ),
        (
            "share = 40",
            "share = 51",
            "t.toml: tenants[1].share: 51 % brings the shares to 101 %: the shares of all entries add up to at most 100 %",
        ),
        (
            "pkey = 0x0100",
            "pkey = 0x7fff",
            "t.toml: services[0].pkey: 0x7fff: expected a 15-bit partition key 0x0001-0x7ffe (0x7fff is the default partition)",
        ),
        (
            "classes = [1, 2]",
            "classes = [1, 2]\npkey = 0x0100",
            "t.toml: tenants[1].pkey: 0x0100 is already the PKey of services[0]",
        ),
        (
            "classes = [1, 2]",
            "classes = [1, 2]\nvrf = 254",
            "t.toml: tenants[1].vrf: 254: expected a routing table id 1-4294967295 other than 252-255 (Linux reserves them)",
        ),
        (
            "access = { storage = \"limited\" }",
            "access = { backup = \"limited\" }",
            "t.toml: tenants[0].access.backup: no service named `backup` (services: storage)",
        ),
        (
            "name = \"b\"",
            "name = \"a\"",
            "t.toml: tenants[1].name: `a` is already the name of tenants[0]",
        ),
        (
            "servers = [6, \"7-13\"]",
            "servers = [6, \"13-7\"]",
            "t.toml: tenants[1].servers[1]: range \"13-7\" runs backwards (expected first <= last)",
        ),
        (
            "servers = [6, \"7-13\"]",
            "hosts = [\"host99-nic0\"]",
            "t.toml: tenants[1].hosts[0]: no host named `host99-nic0` in fabric `fat-tree-k4` (host names look like `host0-nic0`)",
        ),
    ];
    for (from, to, want) in cases {
        assert!(GOOD.contains(from), "{from}");
        let text = GOOD.replacen(from, to, 1);
        assert_eq!(err_of(&text), want, "{to}");
    }
    // Unknown fields and bad types carry the path, as for specs.
    let e = err_of(&GOOD.replace("share = 40", "shares = 40"));
    assert!(
        e.starts_with("t.toml: tenants[1].shares: unknown field `shares`"),
        "{e}"
    );
    let e = err_of(&GOOD.replace("servers = [6,", "servers = [-6,"));
    assert!(
        e.starts_with("t.toml: tenants[1].servers[0]: invalid value"),
        "{e}"
    );
    let e = err_of(&GOOD.replace("\"limited\"", "\"some\""));
    assert!(
        e.starts_with("t.toml: tenants[0].access.storage: unknown variant `some`"),
        "{e}"
    );
}

#[test]
fn gpus_map_to_nics_or_whole_servers() {
    // fat_tree: 1 GPU, 1 NIC per server: GPU g is host g.
    let t = resolve("[[tenants]]\nname = \"g\"\ngpus = [\"2-3\"]\n").unwrap();
    assert_eq!(t.entries()[0].hosts, [NodeId(2), NodeId(3)]);
    // 8 GPUs and 1 NIC per server: whole servers only.
    let spec = "name = \"s\"\n[hosts]\nrate = \"400G\"\ngpus_per_server = 8\n[[planes]]\nleaves_per_pod = 2\nleaf = { radix = 8, down = 4, up = 4 }\nspine = { radix = 8 }\n";
    let f = crate::Spec::parse(spec, Format::Toml, "s")
        .unwrap()
        .build("s")
        .unwrap();
    let file = TenantFile::parse(
        "[[tenants]]\nname = \"g\"\ngpus = [\"8-15\", \"20-23\"]\n",
        Format::Toml,
        "g.toml",
    )
    .unwrap();
    let e = Tenants::resolve(&file, &f, "g.toml")
        .unwrap_err()
        .to_string();
    assert_eq!(
        e,
        "g.toml: tenants[0].gpus[1]: GPUs 20-23 cover part of a server: with 8 GPUs and 1 NICs per server a tenant gets whole servers (GPU ranges from a multiple of 8 to one below a multiple)"
    );
    let file = TenantFile::parse(
        "[[tenants]]\nname = \"g\"\ngpus = [\"8-15\"]\n",
        Format::Toml,
        "g.toml",
    )
    .unwrap();
    assert_eq!(
        Tenants::resolve(&file, &f, "g").unwrap().entries()[0].hosts,
        [NodeId(1)]
    );
}

#[test]
fn partitions_and_vrfs_follow_the_access_modes() {
    let f = k4();
    let text = GOOD
        .replace(
            "[[tenants]]\nname = \"b\"",
            "[[services]]\nname = \"mgmt\"\nhosts = [\"host13-nic0\"]\n[[tenants]]\nname = \"b\"",
        )
        .replace(
            "servers = [6, \"7-13\"]",
            "servers = [\"6-12\"]\naccess = { mgmt = \"full\" }",
        );
    let file = TenantFile::parse(&text, Format::Toml, "t").unwrap();
    let t = Tenants::resolve(&file, &f, "t").unwrap();
    let enf = Enforcement::from_tenants(&f, &t);
    let p = |n: &str| enf.partitions.iter().find(|p| p.name == n).unwrap();
    // storage: its hosts full, a's limited; b (full access to mgmt): mgmt full in b's.
    assert!(
        p("storage")
            .members
            .contains(&(NodeId(0), Membership::Limited))
    );
    assert!(
        p("storage")
            .members
            .contains(&(NodeId(14), Membership::Full))
    );
    assert!(p("b").members.contains(&(NodeId(13), Membership::Full)));
    assert!(enf.shared_partition(NodeId(0), NodeId(1)).is_some());
    assert!(enf.shared_partition(NodeId(0), NodeId(6)).is_none());
    assert_eq!(
        enf.shared_partition(NodeId(0), NodeId(14)).unwrap().name,
        "storage"
    );
    assert_eq!(
        enf.shared_partition(NodeId(13), NodeId(6)).unwrap().name,
        "b"
    );
    let routes = Routes::compute(&f);
    let rep = proof::prove(&f, &routes, &t, &enf);
    assert!(rep.ok(), "{:?} {:?}", rep.leaks, rep.blocked);
    assert_eq!(rep.unrouted_pairs, 0);
}

#[test]
fn leak_is_caught_with_its_path_when_file_and_layer_disagree() {
    let f = k4();
    let t = resolve(GOOD).unwrap();
    // The layer deployed for an older file in which host6 was still a's.
    let old = resolve(
        &GOOD
            .replace("servers = [\"0-5\"]", "servers = [\"0-6\"]")
            .replace("servers = [6, \"7-13\"]", "servers = [\"7-13\"]"),
    )
    .unwrap();
    let enf = Enforcement::from_tenants(&f, &old);
    let routes = Routes::compute(&f);
    let rep = proof::prove(&f, &routes, &t, &enf);
    assert!(!rep.ok());
    // host0 → host6 leaks through a's VRF and partition, on a path across the fabric.
    let l = rep
        .leaks
        .iter()
        .find(|l| l.src == "host0-nic0" && l.dst == "host6-nic0" && l.layer == proof::Layer::Vrf)
        .unwrap();
    assert_eq!(l.src_entry, "a");
    assert_eq!(l.dst_entry, "b");
    assert_eq!(l.via, "VRF a (table 1002) at pod0-leaf0");
    assert_eq!(l.path.first().unwrap(), "host0-nic0");
    assert_eq!(l.path.last().unwrap(), "host6-nic0");
    assert!(l.path.iter().any(|n| n.starts_with("core")), "{:?}", l.path);
    assert!(
        rep.leaks
            .iter()
            .any(|l| l.layer == proof::Layer::Partition && l.via.starts_with("partition a "))
    );
    // And host6 is blocked from its own tenant b.
    assert!(
        rep.blocked
            .iter()
            .any(|b| b.src == "host6-nic0" && b.dst_entry == "b")
    );
    // A route added by hand to a VRF is a leak too.
    let mut enf = Enforcement::from_tenants(&f, &t);
    let b = t.by_name("b").unwrap();
    enf.vrfs[b].routes_to.insert(0, NodeId(1));
    let rep = proof::prove(&f, &routes, &t, &enf);
    assert_eq!(rep.leak_count, 8, "{:?}", rep.leaks);
    assert!(
        rep.leaks
            .iter()
            .all(|l| l.dst == "host1-nic0" && l.src_entry == "b")
    );
}

#[test]
fn isolation_holds_after_failures_and_detours_on_further_lanes() {
    let f = k4();
    let t = resolve(GOOD).unwrap();
    let enf = Enforcement::from_tenants(&f, &t);
    let mut routes = Routes::compute(&f);
    let set = crate::failures::resolve(&f, &crate::lanes::STRANDED_K4.map(String::from)).unwrap();
    routes.fail_links(&f, &set.links);
    let lanes = crate::lanes::route_around(&f, &mut routes, crate::lanes::MAX_LANES).unwrap();
    assert!(lanes.used > 1);
    let rep = proof::prove(&f, &routes, &t, &enf);
    assert!(rep.ok(), "{:?}", rep.leaks);
    assert_eq!(rep.unrouted_pairs, 0);
    // A host in no tenant is in the default VRF: it reaches everyone, and that is a leak.
    let text = GOOD.replace("servers = [\"14-15\"]", "servers = [14]");
    let t = resolve(&text).unwrap();
    let rep = proof::prove(&f, &routes, &t, &Enforcement::from_tenants(&f, &t));
    assert_eq!(rep.leak_count, 15);
    assert!(
        rep.leaks[0].via.contains("default VRF"),
        "{:?}",
        rep.leaks[0]
    );
}

#[test]
fn partitions_conf_reads_back() {
    let f = k4();
    let t = resolve(GOOD).unwrap();
    let addr = crate::addressing::AddressPlan::new(&f).unwrap();
    let enf = Enforcement::from_tenants(&f, &t);
    let mut buf = Vec::new();
    crate::export::partitions::write(&f, &addr, &t, &enf, 0, &mut buf).unwrap();
    let text = String::from_utf8(buf).unwrap();
    let back = enforce::parse_partitions(&text, &f, &addr, 0, "p").unwrap();
    assert_eq!(back, enf.partitions);
    let e = enforce::parse_partitions("a=0x1 : 0x99=full;", &f, &addr, 0, "p.conf").unwrap_err();
    assert_eq!(
        e.to_string(),
        "p.conf:1: 0x0000000000000099 is the port GUID of no host"
    );
    let e = enforce::parse_partitions("a=0x1 : ALL", &f, &addr, 0, "p.conf").unwrap_err();
    assert_eq!(e.to_string(), "p.conf:1: statement without its closing `;`");
}

fn item() -> impl Strategy<Value = String> {
    prop_oneof![
        any::<u64>().prop_map(|v| v.to_string()),
        (any::<u64>(), any::<u64>()).prop_map(|(a, b)| format!("\"{a}-{b}\"")),
        (0u64..20, 0u64..20).prop_map(|(a, b)| format!("\"{a}-{b}\"")),
        any::<i64>().prop_map(|v| v.to_string()),
        "[a-z0-9-]{0,6}".prop_map(|s| format!("\"{s}\"")),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    /// Any values, however large: an answer (never a panic, a hang or a huge allocation).
    #[test]
    fn unbounded_values_never_panic(
        items in proptest::collection::vec(item(), 0..4),
        gpus in proptest::collection::vec(item(), 0..3),
        classes in proptest::collection::vec(any::<u32>(), 0..10),
        share in any::<u32>(),
        pkey in any::<u64>(),
        vrf in any::<u64>(),
        tc in any::<u32>(),
        name in "[a-z0-9-]{0,20}",
    ) {
        let text = format!(
            "traffic_classes = {tc}\n[[tenants]]\nname = \"{name}\"\nservers = [{}]\ngpus = [{}]\nclasses = [{}]\nshare = {share}\npkey = {pkey}\nvrf = {vrf}\n[[tenants]]\nname = \"z\"\nservers = [\"0-3\"]\n",
            items.join(", "),
            gpus.join(", "),
            classes.iter().map(u32::to_string).collect::<Vec<_>>().join(", "),
        );
        match TenantFile::parse(&text, Format::Toml, "p.toml") {
            Err(e) => prop_assert!(e.to_string().starts_with("p.toml: ")),
            Ok(file) => match Tenants::resolve(&file, &k4(), "p.toml") {
                Err(e) => prop_assert!(e.to_string().starts_with("p.toml: "), "{e}"),
                Ok(t) => {
                    let f = k4();
                    prop_assert!(t.entries().iter().all(|e| !e.hosts.is_empty() && e.pkey < DEFAULT_PKEY));
                    let rep = proof::prove(&f, &Routes::compute(&f), &t, &Enforcement::from_tenants(&f, &t));
                    // Hosts in no entry are in the default VRF: leaks, never a panic.
                    let unassigned = f.hosts().filter(|&h| t.owner(h).is_none()).count();
                    prop_assert_eq!(rep.leak_count == 0, unassigned == 0);
                }
            },
        }
    }
}

#[test]
fn vrf_exports_hold_each_leafs_tenants() {
    let f = k4();
    let t = resolve(GOOD).unwrap();
    let addr = crate::addressing::AddressPlan::new(&f).unwrap();
    let enf = Enforcement::from_tenants(&f, &t);
    let routes = Routes::compute(&f);
    let vrfs = leaf::leaf_vrfs(&f, &routes, &addr, &enf);
    // pod0-leaf0 has host0, host1 (tenant a): one VRF, routing a's 6 hosts and storage's 2.
    let l0: Vec<_> = vrfs
        .iter()
        .filter(|v| f.node_name(v.leaf) == "pod0-leaf0")
        .collect();
    assert_eq!(l0.len(), 1);
    assert_eq!((l0[0].device.as_str(), l0[0].table), ("Vrf-a", 1002));
    assert_eq!(l0[0].routes.len(), 8);
    let mut sink = crate::export::MemSink::new();
    for fmt in crate::export::vrf::VrfFormat::ALL {
        crate::export::vrf::export(&f, &vrfs, fmt, &mut sink).unwrap();
    }
    let ip = sink.text("vrf/ip/pod0-leaf0.batch").unwrap();
    assert!(ip.starts_with("link add Vrf-a type vrf table 1002\nlink set Vrf-a up\nroute replace table 1002 unreachable default metric 4278198272\n"), "{ip}");
    assert!(ip.contains("link set swp1 master Vrf-a\n"), "{ip}");
    assert!(ip.contains("route replace 10.0.0.2/32 dev swp1\n"), "{ip}");
    assert!(
        ip.contains("route replace table 1002 10.0.0.2/32 dev swp1\n"),
        "{ip}"
    );
    assert!(
        !ip.contains("10.0.1.10/32"),
        "b's host6 is not routed in a's VRF: {ip}"
    );
    let frr = sink.text("vrf/frr/pod0-leaf0.conf").unwrap();
    assert!(
        frr.contains("vrf Vrf-a\n ip route 0.0.0.0/0 blackhole 255\n"),
        "{frr}"
    );
    assert!(frr.contains("nexthop-vrf default\n"), "{frr}");
    let sonic = sink.text("vrf/sonic/pod0-leaf0.json").unwrap();
    let v: serde_json::Value = serde_json::from_str(sonic).unwrap();
    assert!(
        v.as_array()
            .unwrap()
            .iter()
            .any(|e| e.get("INTF_TABLE:Ethernet0").is_some())
    );
    assert!(
        sonic.contains("\"ROUTE_TABLE:Vrf-a:10.0.0.2/32\""),
        "{sonic}"
    );
}

#[test]
fn classes_give_ets_weights_and_dscp() {
    let text = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../docs/tenants/fat-tree-k4.toml"
    ))
    .unwrap();
    let t = resolve(&text).unwrap();
    // a: class 1, 50 %; b: class 2, 40 %; the services class 0 with no share.
    assert_eq!(t.ets_weights(), [1, 50, 40, 0, 0, 0, 0, 0]);
    let f = k4();
    let host = |i: usize| f.hosts().nth(i).unwrap();
    assert_eq!(t.class_of_host(host(1)), Some(1));
    assert_eq!(t.class_of_host(host(7)), Some(2));
    assert_eq!(classes::dscp(2), 16);
    // A share split over two classes, the odd percent to the first.
    let t =
        resolve("[[tenants]]\nname = \"a\"\nservers = [\"0-15\"]\nclasses = [3, 4]\nshare = 45\n")
            .unwrap();
    assert_eq!(t.ets_weights(), [0, 0, 0, 23, 22, 0, 0, 0]);
}

// ---- the `[[tenants]]` section of a fabric spec ----

/// fat-tree-k4's spec with `section` (tenant-file text) in it; `traffic_classes` and any
/// other top-level key of the section go first, before the spec's tables.
fn spec_with(section: &str) -> String {
    let spec = generators::fat_tree_spec(4, Rate::gbps(400)).to_toml();
    let (keys, tables): (Vec<&str>, Vec<&str>) = {
        let cut = section.find("[[").unwrap_or(section.len());
        (vec![&section[..cut]], vec![&section[cut..]])
    };
    format!("{}\n{spec}\n{}", keys.concat(), tables.concat())
}

fn build_spec(text: &str, format: Format) -> Result<Fabric> {
    crate::Spec::parse(text, format, "s.toml")?.build("s.toml")
}

#[test]
fn a_spec_section_is_the_tenant_file_inside_the_spec() {
    let text = spec_with(GOOD);
    let spec = crate::Spec::parse(&text, Format::Toml, "s.toml").unwrap();
    let f = spec.build("s.toml").unwrap();
    let from_spec = spec.tenants(&f, "t.toml").unwrap().unwrap();
    assert_eq!(from_spec, resolve(GOOD).unwrap());
    // The same in YAML and JSON, and written back as TOML.
    let json = serde_json::to_string(&spec).unwrap();
    assert_eq!(
        crate::Spec::parse(&json, Format::Json, "s.json").unwrap(),
        spec
    );
    let yaml = serde_yaml_ng::to_string(&spec).unwrap();
    assert_eq!(
        crate::Spec::parse(&yaml, Format::Yaml, "s.yaml").unwrap(),
        spec
    );
    let back = crate::Spec::parse(&spec.to_toml(), Format::Toml, "s.toml").unwrap();
    assert_eq!(back, spec);
    // No section, no tenants.
    let plain = generators::fat_tree_spec(4, Rate::gbps(400));
    assert_eq!(plain.tenant_file(), None);
    assert_eq!(plain.tenants(&f, "s.toml").unwrap(), None);
    assert!(!plain.to_toml().contains("tenants"));
}

#[test]
fn a_spec_section_gets_the_tenant_files_errors_when_the_spec_is_built() {
    for (section, want) in [
        (
            GOOD.replace("[6, \"7-13\"]", "[6, \"7-16\"]"),
            "s.toml: tenants[1].servers[1]: server 16 does not exist: the fabric has 16 servers (0-15)",
        ),
        (
            GOOD.replace("servers = [\"0-5\"]", "servers = [\"0-6\"]"),
            "s.toml: tenants[1].servers[0]: host6-nic0 (server 6) is already in tenants[0].servers[0]: an entry's hosts must not overlap another's",
        ),
        (
            format!("traffic_classes = 2\n{GOOD}"),
            "s.toml: tenants[1].classes[1]: class 2: a switch has 2 classes (expected 0-1)",
        ),
        (
            "[[services]]\nname = \"storage\"\nservers = [1]\n".to_string(),
            "s.toml: tenants: no tenants: expected at least one [[tenants]] entry",
        ),
    ] {
        let e = build_spec(&spec_with(&section), Format::Toml)
            .unwrap_err()
            .to_string();
        assert_eq!(e, want);
        // Word for word what the same text as a tenant file gets (a tenant file without
        // `[[tenants]]` does not parse: the key is required there).
        if let Ok(file) = TenantFile::parse(&section, Format::Toml, "s.toml") {
            let e2 = Tenants::resolve(&file, &k4(), "s.toml")
                .unwrap_err()
                .to_string();
            assert_eq!(e, e2);
        }
    }
    let e = build_spec(
        &spec_with("[[tenants]]\nname = \"a\"\nservers = [1]\nsharez = 3\n"),
        Format::Toml,
    )
    .unwrap_err()
    .to_string();
    assert!(
        e.starts_with("s.toml: tenants[0].sharez: unknown field `sharez`"),
        "{e}"
    );
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(128))]

    /// Any values in a spec's tenants section: the spec parses and builds or names the
    /// field, never a panic, a hang or a huge allocation, and a section that parses gets
    /// exactly the answer the same text gets as a tenant file.
    #[test]
    fn a_spec_section_with_unbounded_values_answers_as_a_tenant_file_does(
        items in proptest::collection::vec(item(), 0..4),
        gpus in proptest::collection::vec(item(), 0..3),
        hosts in proptest::collection::vec("[a-z0-9-]{0,12}", 0..3),
        classes in proptest::collection::vec(any::<u32>(), 0..10),
        share in any::<u32>(),
        pkey in any::<u64>(),
        vrf in any::<u64>(),
        tc in any::<u32>(),
        sl in any::<u32>(),
        name in "[a-z0-9-]{0,20}",
    ) {
        let section = format!(
            "traffic_classes = {tc}\n[[tenants]]\nname = \"{name}\"\nservers = [{}]\ngpus = [{}]\nhosts = [{}]\nclasses = [{}]\nshare = {share}\npkey = {pkey}\nvrf = {vrf}\nsl = {sl}\n[[tenants]]\nname = \"z\"\nservers = [\"0-3\"]\n",
            items.join(", "),
            gpus.join(", "),
            hosts.iter().map(|h| format!("\"{h}\"")).collect::<Vec<_>>().join(", "),
            classes.iter().map(u32::to_string).collect::<Vec<_>>().join(", "),
        );
        let built = build_spec(&spec_with(&section), Format::Toml);
        match TenantFile::parse(&section, Format::Toml, "s.toml") {
            Err(_) => {
                let e = built.unwrap_err().to_string();
                prop_assert!(e.starts_with("s.toml: "), "{e}");
            }
            Ok(file) => {
                let alone = Tenants::resolve(&file, &k4(), "s.toml");
                match (built, alone) {
                    (Ok(f), Ok(t)) => {
                        prop_assert_eq!(f.num_hosts(), k4().num_hosts());
                        let inside = |e: &Entry| e.hosts.iter().all(|h| h.idx() < f.num_hosts());
                        prop_assert!(t.entries().iter().all(inside));
                    }
                    (Err(a), Err(b)) => prop_assert_eq!(a.to_string(), b.to_string()),
                    (a, b) => prop_assert!(false, "spec {:?} vs file {:?}", a.map(|_| ()), b.map(|_| ())),
                }
            }
        }
    }
}
