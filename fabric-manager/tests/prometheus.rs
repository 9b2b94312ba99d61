//! A real Prometheus (Debian's `prometheus` package) scrapes the real `fabric serve` on
//! loopback; its HTTP query API must return `fabric_port_up` for every port and a
//! non-zero `rate()` of transmitted bytes. `promtool check metrics` must accept the
//! exposition. Fails when the tools are missing, unless `FABRIC_SKIP_TOOLS=1`.

mod common;

use std::io::Write;
use std::process::{Command, Stdio};
use std::time::Duration;

use common::{Daemon, http_get};

fn have(tool: &str) -> bool {
    Command::new(tool)
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success())
}

fn tools_present() -> bool {
    if have("prometheus") && have("promtool") {
        return true;
    }
    if std::env::var("FABRIC_SKIP_TOOLS").as_deref() == Ok("1") {
        eprintln!("skipped: prometheus/promtool not installed (FABRIC_SKIP_TOOLS=1)");
        return false;
    }
    panic!("prometheus and promtool are needed (scripts/install-deps.sh installs them)");
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
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

struct Prom(std::process::Child);

impl Drop for Prom {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
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
    let cfg = dir.join("prometheus.yml");
    std::fs::write(
        &cfg,
        format!(
            "global:\n  scrape_interval: 1s\n  evaluation_interval: 1s\nscrape_configs:\n  - job_name: fabric\n    static_configs:\n      - targets: ['{}']\n",
            d.addr
        ),
    )
    .unwrap();
    let prom_addr = format!("127.0.0.1:{}", free_port());
    let log = std::fs::File::create(dir.join("prometheus.log")).unwrap();
    let _prom = Prom(
        Command::new("prometheus")
            .arg(format!("--config.file={}", cfg.display()))
            .arg(format!(
                "--storage.tsdb.path={}",
                dir.join("data").display()
            ))
            .arg(format!("--web.listen-address={prom_addr}"))
            .stdout(log.try_clone().unwrap())
            .stderr(log)
            .spawn()
            .unwrap(),
    );
    let plog = || std::fs::read_to_string(dir.join("prometheus.log")).unwrap_or_default();
    let ready = |_: &Daemon| {
        std::net::TcpStream::connect(&prom_addr).is_ok()
            && http_get(&prom_addr, "/-/ready").status == 200
    };
    d.wait_for(ready, Duration::from_secs(60));
    // Every port is present and up.
    let mut up = Vec::new();
    d.wait_for(
        |_| {
            up = query(&prom_addr, "fabric_port_up");
            up.len() == 96
        },
        Duration::from_secs(30),
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
            rates = query(&prom_addr, q);
            rates.len() == 16
                && rates
                    .iter()
                    .all(|s| s["value"][1].as_str().unwrap().parse::<f64>().unwrap() > 0.0)
        },
        Duration::from_secs(40),
    );
    // Joining on fabric_link_info names every host port's peer leaf.
    let joined = query(
        &prom_addr,
        "fabric_port_up{switch=~\"host.*\"} * on(switch, port) group_left(peer_switch) fabric_link_info",
    );
    assert_eq!(joined.len(), 16, "{joined:?}\n{}", plog());
    assert!(joined.iter().all(|s| {
        s["metric"]["peer_switch"]
            .as_str()
            .unwrap()
            .contains("leaf")
    }));
}
