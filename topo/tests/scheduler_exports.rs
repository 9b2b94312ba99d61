//! The scheduler exports (Slurm `topology.conf` / `topology.yaml`, Kubernetes node labels,
//! Kueue `Topology`) on every preset family: each server under exactly one block, every
//! child defined, one root; the YAML files parse and hold what Kubernetes / Slurm expect.

use std::collections::{BTreeMap, BTreeSet};

use serde_yaml_ng::Value;
use topo::export::{self, Format, MemSink, slurm};

fn exports(f: &topo::Fabric) -> MemSink {
    let mut sink = MemSink::new();
    for fmt in [Format::Slurm, Format::SlurmYaml, Format::K8s] {
        export::export_topology(f, fmt, &mut sink).unwrap();
    }
    sink
}

/// Checks a topology.conf: every server once under a `Nodes=` line, every `Switches=`
/// child defined, one root. Returns the servers per leaf line.
fn check_tree(text: &str, servers: usize) -> BTreeMap<String, Vec<String>> {
    let mut seen: BTreeMap<String, usize> = BTreeMap::new();
    let (mut switches, mut children) = (BTreeSet::new(), BTreeSet::new());
    let mut leaves = BTreeMap::new();
    for line in text.lines().filter(|l| !l.starts_with('#')) {
        let mut it = line.split_whitespace();
        let name = it.next().unwrap().strip_prefix("SwitchName=").unwrap();
        assert!(switches.insert(name.to_owned()), "{name} defined twice");
        let kv = it.next().unwrap();
        assert!(it.next().unwrap().starts_with("LinkSpeed="), "{line}");
        if let Some(nodes) = kv.strip_prefix("Nodes=") {
            let hosts = slurm::expand_hostlist(nodes).unwrap();
            for n in &hosts {
                *seen.entry(n.clone()).or_default() += 1;
            }
            leaves.insert(name.to_owned(), hosts);
        } else {
            children.extend(slurm::expand_hostlist(kv.strip_prefix("Switches=").unwrap()).unwrap());
        }
    }
    assert_eq!(seen.len(), servers);
    assert!(seen.values().all(|&c| c == 1));
    assert!(children.is_subset(&switches));
    assert!(switches.difference(&children).count() <= 1, "one root");
    leaves
}

#[test]
fn every_preset_family_gives_one_tree_and_parsable_yaml() {
    for name in [
        "fat-tree-k8",
        "deepseek-mpft",
        "alibaba-hpn",
        "superpod-h100",
        "dragonfly-plus-g5",
    ] {
        let f = topo::presets::build(name).unwrap();
        let servers = f.host_layout().servers as usize;
        let sink = exports(&f);
        let leaves = check_tree(sink.text("topology.conf").unwrap(), servers);
        // topology.yaml: a list of two topologies, tree (default) and block
        let y: Value = serde_yaml_ng::from_str(sink.text("topology.yaml").unwrap()).unwrap();
        let tops = y.as_sequence().unwrap();
        assert_eq!(tops[0]["topology"], "fabric-tree", "{name}");
        assert_eq!(tops[0]["cluster_default"], true);
        let sw = tops[0]["tree"]["switches"].as_sequence().unwrap();
        let yaml_leaves = sw.iter().filter(|s| s.get("nodes").is_some()).count();
        assert_eq!(yaml_leaves, leaves.len(), "{name}");
        let block = &tops[1]["block"];
        let sizes: Vec<u64> = block["block_sizes"]
            .as_sequence()
            .unwrap()
            .iter()
            .map(|v| v.as_u64().unwrap())
            .collect();
        assert!(
            sizes.windows(2).all(|w| w[1] == 2 * w[0]),
            "{name}: {sizes:?}"
        );
        let mut in_blocks = 0;
        for b in block["blocks"].as_sequence().unwrap() {
            in_blocks += slurm::expand_hostlist(b["nodes"].as_str().unwrap())
                .unwrap()
                .len();
        }
        assert_eq!(in_blocks, servers, "{name}");
        // nodes.yaml: a v1 List of Nodes, each with the tier labels
        let y: Value = serde_yaml_ng::from_str(sink.text("k8s/nodes.yaml").unwrap()).unwrap();
        assert_eq!(y["apiVersion"], "v1");
        assert_eq!(y["kind"], "List");
        let items = y["items"].as_sequence().unwrap();
        assert_eq!(items.len(), servers);
        for it in items {
            assert_eq!(it["kind"], "Node");
            let labels = it["metadata"]["labels"].as_mapping().unwrap();
            for k in [
                export::k8s::LEAF,
                export::k8s::CORE,
                export::k8s::ACCELERATOR,
            ] {
                assert!(
                    labels.get(k).and_then(Value::as_str).is_some(),
                    "{name}: {k}"
                );
            }
            let host = it["metadata"]["name"].as_str().unwrap();
            let leaf = labels[export::k8s::LEAF].as_str().unwrap();
            assert!(
                leaves[leaf].iter().any(|h| h == host),
                "{name}: {host} not under {leaf}"
            );
        }
        // Kueue Topology: levels from the widest label down to the host name
        let y: Value =
            serde_yaml_ng::from_str(sink.text("k8s/kueue-topology.yaml").unwrap()).unwrap();
        assert_eq!(y["kind"], "Topology");
        let levels: Vec<&str> = y["spec"]["levels"]
            .as_sequence()
            .unwrap()
            .iter()
            .map(|l| l["nodeLabel"].as_str().unwrap())
            .collect();
        assert_eq!(levels.first(), Some(&export::k8s::CORE));
        assert_eq!(levels.last(), Some(&export::k8s::HOSTNAME));
    }
}

#[test]
fn multi_plane_is_one_tree_not_one_per_plane() {
    let f = topo::presets::build("deepseek-mpft").unwrap();
    assert!(f.num_planes() > 1);
    let sink = exports(&f);
    let text = sink.text("topology.conf").unwrap();
    assert!(
        !text.contains("SwitchName=p1-"),
        "no second plane's switches"
    );
    check_tree(text, f.host_layout().servers as usize);
}

#[test]
fn rail_optimised_blocks_hold_whole_segments() {
    let f = topo::presets::build("alibaba-hpn").unwrap();
    let sink = exports(&f);
    let leaves = check_tree(sink.text("topology.conf").unwrap(), 15 * 128);
    assert_eq!(leaves.len(), 15);
    assert!(leaves.values().all(|v| v.len() == 128));
}
