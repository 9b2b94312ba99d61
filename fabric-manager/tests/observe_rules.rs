//! The SONiC recording rules shipped in docs/observe/sonic-rules.yml load and pass their
//! unit tests (`promtool test rules`): SONiC-exporter-shaped series come out under the
//! node_exporter names `fabric serve --observe` reads. Needs Debian's `prometheus`
//! package (promtool) unless `FABRIC_SKIP_TOOLS=1`.

mod common;

#[test]
fn the_sonic_mapping_rules_pass_promtool() {
    if !testkit::tools::require(&["promtool"], &[]) {
        return;
    }
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/../docs/observe");
    common::promtool_check_and_test(dir, "sonic-rules.yml", "sonic-rules.test.yml");
    // The rules' test asks the daemon's own query, and the rules record every name it reads.
    let src = include_str!("../src/serve/observe_source.rs");
    let test = std::fs::read_to_string(format!("{dir}/sonic-rules.test.yml")).unwrap();
    let series =
        "node_network_(transmit|receive)_(bytes|packets|drop|errs)_total|node_network_carrier";
    assert!(
        src.contains(&format!("\"{series}\"")),
        "observe_source.rs reads other series than {series}"
    );
    assert!(test.contains(series));
    let rules = std::fs::read_to_string(format!("{dir}/sonic-rules.yml")).unwrap();
    for dir in ["transmit", "receive"] {
        for what in ["bytes", "packets", "drop", "errs"] {
            let name = format!("record: node_network_{dir}_{what}_total");
            assert!(rules.contains(&name), "sonic-rules.yml has no `{name}`");
        }
    }
    assert!(rules.contains("record: node_network_carrier"));
}
