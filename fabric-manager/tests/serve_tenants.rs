//! `fabric serve --tenants FILE` on the built-in simulated demo (fat-tree-k4 with
//! docs/tenants/fat-tree-k4.toml): the per-tenant view over HTTP, the `fabric_tenant_*`
//! metrics with `tenant` and `priority` labels, and events naming the tenant whose host
//! link failed. No root, no tools.

mod common;

use common::{Daemon, TOKEN};

const TENANTS: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/../docs/tenants/fat-tree-k4.toml"
);

fn number(v: &serde_json::Value) -> u64 {
    v.as_u64()
        .unwrap_or_else(|| panic!("expected a number: {v}"))
}

#[test]
fn the_demo_serves_per_tenant_counters_metrics_and_events() {
    let d = Daemon::start_with_token(
        "tenants",
        &["--sim", "--interval", "100ms", "--tenants", TENANTS],
    );
    // Rates need two snapshots; traffic needs the demo's flows to have started.
    d.wait_for(
        |d| {
            let v = d.json("/api/v1/tenants");
            let t = v["tenants"].as_array().cloned().unwrap_or_default();
            !v["interval_ns"].is_null() && t.iter().any(|e| number(&e["sent_bytes"]) > 0)
        },
        common::WAIT,
    );
    let v = d.json("/api/v1/tenants");
    assert!(
        v["scope"].as_str().unwrap().starts_with("host links only"),
        "{v}"
    );
    let t = v["tenants"].as_array().unwrap();
    let names: Vec<&str> = t.iter().map(|e| e["name"].as_str().unwrap()).collect();
    assert_eq!(names, ["mgmt", "storage", "a", "b"], "{v}");
    let a = &t[2];
    assert_eq!(
        (a["kind"].as_str(), number(&a["hosts"])),
        (Some("tenant"), 6)
    );
    assert_eq!(number(&a["links"]), 6);
    assert_eq!(a["classes"], serde_json::json!([1]));
    // The simulator measures PFC per priority: objects keyed by priority, with numbers.
    for key in ["pfc_to_hosts", "pfc_from_hosts", "queue_bytes"] {
        let m = a[key].as_object().unwrap_or_else(|| panic!("{key}: {a}"));
        assert!(m.contains_key("0"), "{key}: {a}");
        assert!(m.values().all(|x| x.is_u64()), "{key}: {a}");
    }
    number(&a["drops"]);
    let r = &a["rates"];
    let u = r["sent_utilisation"].as_f64().unwrap();
    assert!((0.0..=1.0).contains(&u), "{r}");

    let m = d.get("/metrics").text();
    for line in [
        "fabric_tenant_hosts{tenant=\"a\",kind=\"tenant\"} 6",
        "fabric_tenant_hosts{tenant=\"storage\",kind=\"service\"} 2",
        "fabric_tenant_sent_bytes_total{tenant=\"a\"}",
        "fabric_tenant_drops_total{tenant=\"b\"}",
        "fabric_tenant_pfc_pause_frames_total{tenant=\"a\",direction=\"to_hosts\",priority=\"0\"}",
        "fabric_tenant_queue_bytes{tenant=\"b\",priority=\"0\"}",
    ] {
        assert!(m.contains(line), "{line} missing from /metrics");
    }

    // host1 (tenant a) hangs off pod0-leaf0 port 1: its link failing is a's event.
    let auth = format!("Bearer {TOKEN}");
    let r = d.request(
        "POST",
        "/api/v1/links/pod0-leaf0:1/fail",
        &[("Authorization", &auth)],
        b"",
    );
    assert_eq!(r.status, 200, "{}", r.text());
    d.wait_for(
        |d| {
            d.json("/api/v1/events")
                .as_array()
                .is_some_and(|a| a.iter().any(|e| e["what"]["kind"] == "link-down"))
        },
        common::WAIT,
    );
    let ev = d.json("/api/v1/events");
    let down = ev
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["what"]["kind"] == "link-down")
        .unwrap();
    assert_eq!(down["tenants"], serde_json::json!(["a"]), "{ev}");
}

#[test]
fn without_a_tenant_file_the_route_says_how_to_get_one_and_a_bad_file_stops_the_start() {
    let d = Daemon::start("no-tenants", &["--sim", "--interval", "100ms"]);
    let r = d.get("/api/v1/tenants");
    assert_eq!(r.status, 404, "{}", r.text());
    assert!(r.text().contains("--tenants FILE"), "{}", r.text());
    assert!(!d.get("/metrics").text().contains("fabric_tenant_"));
    drop(d);

    let bad = common::temp_dir("bad-tenants").join("t.toml");
    std::fs::write(&bad, "[[tenants]]\nname = \"a\"\nservers = [\"0-99\"]\n").unwrap();
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_fabric"))
        .args(["serve", "--listen", "127.0.0.1:0", "--sim", "--tenants"])
        .arg(&bad)
        .output()
        .unwrap();
    let (stdout, stderr) = (
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr),
    );
    assert!(!out.status.success(), "{stdout}{stderr}");
    assert!(!stdout.contains("listening on"), "{stdout}");
    assert!(
        stderr.contains("t.toml: tenants[0].servers[0]: server 99 does not exist"),
        "{stderr}"
    );
}
