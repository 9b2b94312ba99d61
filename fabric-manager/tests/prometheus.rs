//! A real Prometheus (Debian's `prometheus` package) scrapes the real `fabric serve` on
//! loopback; its HTTP query API must return `fabric_port_up` for every port and a
//! non-zero `rate()` of transmitted bytes. `promtool check metrics` must accept the
//! exposition. Fails when the tools are missing, unless `FABRIC_SKIP_TOOLS=1`.

mod common;

use std::io::Write;
use std::process::{Command, Stdio};
use std::time::Duration;

use common::{Daemon, http_get};
use testkit::prometheus::Prometheus;

fn tools_present() -> bool {
    testkit::tools::require(&["prometheus", "promtool"], &[])
}

/// Runs a PromQL instant query; returns the result vector.
fn query(prom: &str, q: &str) -> Vec<serde_json::Value> {
    let enc: String = q
        .bytes()
        .map(|b| match b {
            b'a'..=b'z' | b'A'..=b'Z' | b'0'..=b'9' | b'_' | b'-' | b'.' => (b as char).to_string(),
            _ => format!("%{b:02X}"),
        })
        .collect();
    let r = http_get(prom, &format!("/api/v1/query?query={enc}"));
    assert_eq!(r.status, 200, "{q}: {}", r.text());
    let v: serde_json::Value = serde_json::from_slice(&r.body).unwrap();
    assert_eq!(v["status"], "success", "{v}");
    v["data"]["result"].as_array().unwrap().clone()
}

#[test]
fn promtool_accepts_the_exposition() {
    if !tools_present() {
        return;
    }
    let d = Daemon::start("promtool", &["--sim", "--interval", "100ms"]);
    let text = d.get("/metrics").body;
    let mut p = Command::new("promtool")
        .args(["check", "metrics"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    p.stdin.take().unwrap().write_all(&text).unwrap();
    let out = p.wait_with_output().unwrap();
    let msg = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(out.status.success(), "promtool check metrics: {msg}");
    assert!(msg.trim().is_empty(), "promtool lint findings: {msg}");
}

#[test]
fn a_real_prometheus_scrapes_the_daemon_and_answers_queries() {
    if !tools_present() {
        return;
    }
    let d = Daemon::start("prometheus", &["--sim", "--interval", "200ms"]);
    let dir = common::temp_dir("prometheus-tsdb");
    let prom = Prometheus::start(&dir, &[&d.addr]);
    prom.wait_ready(Duration::from_secs(60));
    let prom_addr = prom.addr();
    // Every port is present and up.
    let mut up = Vec::new();
    d.wait_for(
        |_| {
            up = query(prom_addr, "fabric_port_up");
            up.len() == 96
        },
        common::WAIT,
    );
    assert!(up.iter().all(|s| s["value"][1] == "1"), "{up:?}");
    assert!(
        up.iter()
            .all(|s| s["metric"]["job"] == "fabric" && s["metric"]["switch"].is_string())
    );
    // A rate over a few scrapes: the demo's all-reduce sends on every host port.
    let q = "rate(fabric_port_transmit_bytes_total{switch=~\"host.*\"}[5s])";
    let mut rates = Vec::new();
    d.wait_for(
        |_| {
            rates = query(prom_addr, q);
            rates.len() == 16
                && rates
                    .iter()
                    .all(|s| s["value"][1].as_str().unwrap().parse::<f64>().unwrap() > 0.0)
        },
        common::WAIT,
    );
    // The same utilisation from Prometheus (rate over wall-clock time, what
    // `fabric-tui --prometheus` reads) as from the stream's snapshots (deltas over their
    // simulated time, what `fabric-tui --connect` reads): the simulator's counters run on
    // simulated time, 1/1000 of wall-clock time, and Prometheus saw 0.0 % where the stream
    // saw 14 % until the exposition scaled them.
    let info: fabric_api::FabricInfo =
        serde_json::from_slice(&d.get("/api/v1/topology").body).unwrap();
    let hosts: Vec<usize> = (0..info.ports.len())
        .filter(|&i| {
            info.port_node_name(i)
                .is_some_and(|n| n.starts_with("host"))
        })
        .collect();
    let snap = || -> fabric_api::Snapshot {
        serde_json::from_slice(&d.get("/api/v1/telemetry").body).unwrap()
    };
    let a = snap();
    std::thread::sleep(Duration::from_secs(10));
    let b = snap();
    let dt = (b.time.ns - a.time.ns) as f64 * 1e-9;
    let tx =
        |s: &fabric_api::Snapshot, i: usize| s.counters.tx_bytes.as_ref().unwrap().get(i) as f64;
    let stream_util = hosts
        .iter()
        .map(|&i| (tx(&b, i) - tx(&a, i)) / dt / (info.ports[i].speed_bps as f64 / 8.0))
        .sum::<f64>()
        / hosts.len() as f64;
    let avg = query(
        prom_addr,
        "avg(rate(fabric_port_transmit_bytes_total{switch=~\"host.*\"}[10s]) / on(switch, port) fabric_port_speed_bytes)",
    );
    let prom_util: f64 = avg[0]["value"][1].as_str().unwrap().parse().unwrap();
    assert!(stream_util > 0.01, "the demo sends: {stream_util}");
    assert!(
        (prom_util - stream_util).abs() <= 0.5 * stream_util.max(prom_util) + 0.02,
        "host-port utilisation: Prometheus {:.2} %, stream {:.2} %",
        prom_util * 100.0,
        stream_util * 100.0
    );
    // Joining on fabric_link_info names every host port's peer leaf.
    let joined = query(
        prom_addr,
        "fabric_port_up{switch=~\"host.*\"} * on(switch, port) group_left(peer_switch) fabric_link_info",
    );
    assert_eq!(joined.len(), 16, "{joined:?}\n{}", prom.log());
    assert!(joined.iter().all(|s| {
        s["metric"]["peer_switch"]
            .as_str()
            .unwrap()
            .contains("leaf")
    }));
}

/// The shipped alerting rules (docs/daemon/alerts.yml) load, and their unit tests pass:
/// each alert fires on the daemon's series and stays quiet on a healthy fabric.
#[test]
fn the_alerting_rules_pass_promtool() {
    if !tools_present() {
        return;
    }
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/../docs/daemon");
    common::promtool_check_and_test(dir, "alerts.yml", "alerts.test.yml");
    // Every metric the rules use is one the daemon exports.
    let rules = std::fs::read_to_string(format!("{dir}/alerts.yml")).unwrap();
    let src = [
        include_str!("../src/serve/metrics.rs"),
        include_str!("../src/serve/health.rs"),
    ]
    .concat();
    for name in rules
        .split(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
        .filter(|w| w.starts_with("fabric_"))
    {
        let family = name.trim_end_matches("_total");
        assert!(
            src.contains(&format!("\"{family}\"")),
            "alerts.yml uses {name}, which the daemon does not export"
        );
    }
}
