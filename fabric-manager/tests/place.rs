//! `fabric place` end to end: bad requests get clear errors (exit 2); a running daemon's
//! failed host link becomes a drain suggestion (endpoint, metric, `fabric place drain`),
//! then a resume when it comes back; `fabric place job --daemon` avoids that server.

mod common;

use std::process::Command;

use common::Daemon;

const TOKEN: &str = "place-test-token";

fn fabric(args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_fabric"))
        .args(args)
        .output()
        .expect("running fabric")
}

#[test]
fn bad_job_requests_are_refused_with_clear_errors() {
    let o = fabric(&["place", "job", "fat-tree-k4", "--gpus", "64"]);
    assert_eq!(o.status.code(), Some(2));
    let e = String::from_utf8_lossy(&o.stderr);
    assert!(
        e.contains("--gpus 64") && e.contains("fabric has 16"),
        "{e}"
    );
    let o = fabric(&[
        "place",
        "job",
        "fat-tree-k4",
        "--gpus",
        "4",
        "--pattern",
        "allreduce",
    ]);
    assert_eq!(o.status.code(), Some(2));
    let e = String::from_utf8_lossy(&o.stderr);
    assert!(
        e.contains("unknown pattern") && e.contains("all-to-all"),
        "{e}"
    );
}

#[test]
fn a_cut_nic_is_drained_then_resumed_and_placement_avoids_it() {
    let dir = common::temp_dir("place-drain-token");
    let file = dir.join("token");
    std::fs::write(&file, format!("{TOKEN}\n")).unwrap();
    let d = Daemon::start(
        "place-drain",
        &[
            "--sim",
            "--interval",
            "100ms",
            "--token-file",
            file.to_str().unwrap(),
        ],
    );
    let auth = format!("Bearer {TOKEN}");
    let r = d.get("/api/v1/drain");
    assert_eq!(r.status, 200);
    let v: serde_json::Value = serde_json::from_slice(&r.body).unwrap();
    assert_eq!(v["drain"], serde_json::json!([]), "{v}");
    // pod0-leaf0's port 0 leads to host0's NIC
    let r = d.request(
        "POST",
        "/api/v1/links/pod0-leaf0:0/fail",
        &[("Authorization", &auth)],
        b"",
    );
    assert_eq!(r.status, 200, "{}", r.text());
    d.wait_for(
        |d| {
            d.json("/api/v1/drain")["drain"]
                .as_array()
                .is_some_and(|a| !a.is_empty())
        },
        common::WAIT,
    );
    let v = d.json("/api/v1/drain");
    assert_eq!(v["drain"][0]["node"], "host0", "{v}");
    let m = d.get("/metrics").text();
    assert!(
        m.lines().any(
            |l| l.starts_with("fabric_scheduler_drain_suggested{node=\"host0\"")
                && l.ends_with(" 1")
        ),
        "{}",
        m.lines()
            .filter(|l| l.contains("scheduler"))
            .collect::<Vec<_>>()
            .join("\n")
    );
    let url = format!("http://{}", d.addr);
    let o = fabric(&["place", "drain", "--daemon", &url]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(
        out.contains("scontrol update nodename=host0 state=drain reason=\"fabric: host0-nic0"),
        "{out}"
    );
    // placement on the daemon's health skips host0
    let o = fabric(&[
        "place",
        "job",
        "fat-tree-k4",
        "--gpus",
        "2",
        "--daemon",
        &url,
    ]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let out = String::from_utf8_lossy(&o.stdout);
    let topo_row = out
        .lines()
        .find(|l| l.starts_with("| topo |"))
        .unwrap_or_else(|| panic!("{out}"));
    assert!(
        !topo_row.contains("host0,") && !topo_row.contains("host[0-"),
        "{out}"
    );
    assert!(out.contains("1 link(s) failed"), "{out}");
    // the link comes back: resume
    let r = d.request(
        "POST",
        "/api/v1/links/pod0-leaf0:0/restore",
        &[("Authorization", &auth)],
        b"",
    );
    assert_eq!(r.status, 200, "{}", r.text());
    d.wait_for(
        |d| {
            d.json("/api/v1/drain")["resume"]
                .as_array()
                .is_some_and(|a| !a.is_empty())
        },
        common::WAIT,
    );
    let v = d.json("/api/v1/drain");
    assert_eq!(v["drain"], serde_json::json!([]), "{v}");
    assert_eq!(v["resume"][0]["node"], "host0", "{v}");
    let o = fabric(&["place", "drain", "--daemon", &url]);
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(
        out.contains("scontrol update nodename=host0 state=resume"),
        "{out}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}
