//! The simulator's ECMP hash is keyed like a 5-tuple — the two hosts and the
//! connection's ordinal between them — so a connection's path does not depend on which
//! other workloads the scenario holds (issue 22). Tenant B runs in pod 0 of a k=4
//! fat-tree; tenant A in pods 1–3, on links B never uses. Adding A (first in the file,
//! so every B flow gets another flow id) must leave every byte of B where it was.

use sim::{LbScheme, SimConfig, SimResults};

mod common;
use common::{fat_tree, plan};

/// B: flows between pod 0's two edge switches (hosts 0,1 and 2,3), several connections
/// per pair and different sizes, so a moved connection shows in the link bytes.
const B: &str = r#"
[[workload]]
name = "B 1"
kind = "incast"
senders = "0..2"
receiver = 2
size = "1MB"

[[workload]]
name = "B 2"
kind = "incast"
senders = "0..2"
receiver = 2
size = "3MB"

[[workload]]
name = "B 3"
kind = "incast"
senders = "0..2"
receiver = 3
size = "5MB"

[[workload]]
name = "B 4"
kind = "incast"
senders = "2..4"
receiver = 0
size = "7MB"

[[workload]]
name = "B 5"
kind = "incast"
senders = "2..4"
receiver = 1
size = "11MB"
"#;

/// A: an all-to-all over pods 1–3.
const A: &str = r#"
[[workload]]
name = "A"
kind = "all_to_all"
hosts = "4..16"
size = "64KB"
"#;

fn run(toml: &str, lb: LbScheme) -> SimResults {
    let f = fat_tree(4);
    let p = plan(toml, f.num_hosts() as u32);
    let cfg = SimConfig {
        lb,
        ..SimConfig::default()
    };
    sim::Sim::from_fabric(&f, cfg, &p).unwrap().run()
}

#[test]
fn a_connection_keeps_its_path_when_another_tenant_is_added() {
    // ECMP only: a sprayed flow's first entropy value is drawn from the run's random
    // stream, which other tenants' flows advance, and flowlets re-pick by timing
    for lb in [LbScheme::Ecmp] {
        let alone = run(B, lb);
        let both = run(&format!("{A}{B}"), lb);
        assert_eq!(alone.totals.drops + both.totals.drops, 0, "{lb:?}");
        let mut used = 0;
        for l in alone.links.iter().filter(|l| l.data_bytes > 0) {
            let m = both
                .links
                .iter()
                .find(|m| (m.node, m.port) == (l.node, l.port))
                .unwrap();
            assert_eq!(
                m.data_bytes, l.data_bytes,
                "{lb:?}: B's bytes on node {} port {} moved when A was added",
                l.node, l.port
            );
            used += 1;
        }
        // B crosses both aggregation switches of its pod
        assert!(used >= 8, "{lb:?}: B used only {used} links");
    }
}
