//! `fabric serve` as a user runs it: the real binary on a free loopback port, its HTTP
//! API, the token, bad requests, the stream (resume, slow and gone clients) and shutdown.

mod common;

use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::{Duration, Instant};

use common::{Daemon, Stream};
use fabric_api::{FabricInfo, Frame, Snapshot};

const TOKEN: &str = "test-token-0123456789abcdef";

fn with_token(name: &str, extra: &[&str]) -> Daemon {
    let dir = common::temp_dir(&format!("{name}-token"));
    let file = dir.join("token");
    std::fs::write(&file, format!("{TOKEN}\n")).unwrap();
    let mut args = vec![
        "--sim",
        "--interval",
        "100ms",
        "--token-file",
        file.to_str().unwrap(),
    ];
    args.extend_from_slice(extra);
    Daemon::start(name, &args)
}

#[test]
fn endpoints_answer_with_the_fabric_and_its_telemetry() {
    let d = Daemon::start("endpoints", &["--sim", "--interval", "100ms"]);
    let info: FabricInfo = serde_json::from_slice(&d.get("/api/v1/topology").body).unwrap();
    assert_eq!(info.name, "fat-tree-k4");
    assert_eq!(info.ports.len(), 2 * 48);
    let snap: Snapshot = serde_json::from_slice(&d.get("/api/v1/telemetry").body).unwrap();
    snap.validate(&info).unwrap();
    assert!(snap.totals.tx_bytes > 0, "the demo moves bytes");

    let r = d.json("/api/v1/routes/pod0-leaf0");
    let routes = r["routes"].as_array().unwrap();
    // 2 local hosts + 7 other leaves of the plane.
    assert_eq!(routes.len(), 2 + 7, "{r}");
    assert!(
        routes
            .iter()
            .any(|x| x["next_hops"].as_array().unwrap().len() == 2)
    );
    assert_eq!(d.get("/api/v1/routes/host0-nic0").status, 404);
    assert_eq!(d.get("/api/v1/routes/nope").status, 404);
    assert_eq!(d.get("/api/v1/nope").status, 404);

    let h = d.health();
    assert_eq!(h["status"], "ok", "{h}");
    assert!(h["source"].as_str().unwrap().contains("fat-tree-k4"));

    let m = d.get("/metrics");
    assert_eq!(
        m.header("content-type"),
        Some("text/plain; version=0.0.4; charset=utf-8")
    );
    let text = m.text();
    for want in [
        "# TYPE fabric_port_up gauge",
        "fabric_port_up{switch=\"pod0-leaf0\",port=\"0\"} 1",
        "# TYPE fabric_port_transmit_bytes_total counter",
        "fabric_link_info{switch=\"host0-nic0\",port=\"0\",peer_switch=\"pod0-leaf0\",peer_port=\"0\",link=\"0\"} 1",
        "fabric_port_speed_bytes{switch=\"pod0-leaf0\",port=\"0\"}",
        "fabric_reroute_duration_seconds_bucket{le=\"+Inf\"} 0",
        "fabric_daemon_snapshots_total",
    ] {
        assert!(text.contains(want), "/metrics lacks {want}");
    }
    let om = d.request(
        "GET",
        "/metrics",
        &[("Accept", "application/openmetrics-text;version=1.0.0")],
        b"",
    );
    assert!(
        om.header("content-type")
            .unwrap()
            .starts_with("application/openmetrics-text")
    );
    assert!(om.text().ends_with("# EOF\n"));
}

#[test]
fn malformed_oversized_and_slow_requests_are_refused_counted_and_survived() {
    let d = with_token("malformed", &["--header-timeout", "500ms"]);
    // Not HTTP at all.
    let r = d.raw(b"HELLO\r\n\r\n");
    assert_eq!(r.status, 400, "{r:?}");
    // A request head far over the 16 KiB limit.
    let big = format!(
        "GET /api/v1/health HTTP/1.1\r\nHost: x\r\nX-Big: {}\r\n\r\n",
        "a".repeat(64 * 1024)
    );
    let r = d.raw(big.as_bytes());
    assert_eq!(r.status, 431, "{r:?}");
    // A body over the 64 KiB limit.
    let auth = format!("Bearer {TOKEN}");
    let body = vec![b' '; 100 * 1024];
    let r = d.request(
        "POST",
        "/api/v1/recording",
        &[
            ("Authorization", &auth),
            ("Content-Type", "application/json"),
        ],
        &body,
    );
    assert_eq!(r.status, 413, "{}", r.text());
    // Malformed JSON and an unknown field.
    let r = d.request(
        "POST",
        "/api/v1/recording",
        &[
            ("Authorization", &auth),
            ("Content-Type", "application/json"),
        ],
        b"{\"path\": ",
    );
    assert_eq!(r.status, 400, "{}", r.text());
    let r = d.request(
        "POST",
        "/api/v1/recording",
        &[
            ("Authorization", &auth),
            ("Content-Type", "application/json"),
        ],
        b"{\"path\": \"/tmp/x\", \"bogus\": 1}",
    );
    assert_eq!(r.status, 422, "{}", r.text());
    // Bad query strings.
    assert_eq!(d.get("/api/v1/telemetry/stream?from=abc").status, 400);
    assert_eq!(d.get("/api/v1/events?limit=-1").status, 400);
    // A client that never sends its request head is cut off after the header timeout.
    let mut s = TcpStream::connect(&d.addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    let t = Instant::now();
    let mut buf = Vec::new();
    let _ = s.read_to_end(&mut buf);
    assert!(
        t.elapsed() < Duration::from_secs(5),
        "silent client kept {:?}",
        t.elapsed()
    );
    // Still serving, and every refusal counted.
    let h = d.health();
    assert_eq!(h["status"], "ok");
    assert!(h["daemon"]["bad_requests"].as_u64().unwrap() >= 5, "{h}");
    assert!(h["daemon"]["bad_connections"].as_u64().unwrap() >= 2, "{h}");
    let log = d.stderr();
    assert!(log.contains("refused with 413"), "{log}");
}

#[test]
fn mutating_endpoints_need_the_token() {
    let plain = Daemon::start("notoken", &["--sim", "--interval", "100ms"]);
    let r = plain.request("POST", "/api/v1/links/0/fail", &[], b"");
    assert_eq!(r.status, 403, "{}", r.text());
    assert!(r.text().contains("--token-file"));
    drop(plain);

    let d = with_token("token", &[]);
    let r = d.request("POST", "/api/v1/links/0/fail", &[], b"");
    assert_eq!(r.status, 401);
    let r = d.request(
        "POST",
        "/api/v1/links/0/fail",
        &[("Authorization", "Bearer wrong-token-000000000")],
        b"",
    );
    assert_eq!(r.status, 401);
    // A bad link name is not revealed to a caller without the token.
    let r = d.request("POST", "/api/v1/links/9999/fail", &[], b"");
    assert_eq!(r.status, 401);
    let auth = format!("Bearer {TOKEN}");
    let r = d.request(
        "POST",
        "/api/v1/links/9999/fail",
        &[("Authorization", &auth)],
        b"",
    );
    assert_eq!(r.status, 404, "{}", r.text());
    assert!(r.text().contains("links 0 to 47"));
    assert_eq!(d.health()["daemon"]["auth_failures"], 3);
    assert!(d.stderr().contains("wrong token refused"));

    // Fail the first leaf uplink of pod0-leaf0 by name.
    let r = d.request(
        "POST",
        "/api/v1/links/pod0-leaf0:2/fail",
        &[("Authorization", &auth)],
        b"",
    );
    assert_eq!(r.status, 200, "{}", r.text());
    d.wait_for(
        |d| d.health()["links_down"].as_array().unwrap().len() == 1,
        Duration::from_secs(10),
    );
    let h = d.health();
    assert_eq!(h["status"], "degraded");
    assert_eq!(h["reroutes"]["count"], 1, "{h}");
    let ev = d.json("/api/v1/events");
    let kinds: Vec<&str> = ev
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["what"]["kind"].as_str().unwrap())
        .collect();
    assert_eq!(kinds, ["link-down", "reroute"], "{ev}");
    let link = ev[0]["what"]["link"].as_u64().unwrap() as u32;
    let routes = d.json("/api/v1/routes/pod0-leaf0");
    assert_eq!(routes["failed_links"], serde_json::json!([link]));
    let m = d.get("/metrics").text();
    assert!(
        m.contains("fabric_port_up{switch=\"pod0-leaf0\",port=\"2\"} 0"),
        "port 2 down"
    );
    assert!(m.contains("fabric_port_carrier_changes_total{switch=\"pod0-leaf0\",port=\"2\"} 1"));
    let r = d.request(
        "POST",
        "/api/v1/links/pod0-leaf0:2/fail",
        &[("Authorization", &auth)],
        b"",
    );
    assert_eq!(r.status, 409, "failing a down link: {}", r.text());
    let r = d.request(
        "POST",
        &format!("/api/v1/links/{link}/restore"),
        &[("Authorization", &auth)],
        b"",
    );
    assert_eq!(r.status, 200, "{}", r.text());
    d.wait_for(|d| d.health()["status"] == "ok", Duration::from_secs(10));
    let r = d.request("POST", "/api/v1/reroute", &[("Authorization", &auth)], b"");
    assert_eq!(r.status, 200, "{}", r.text());
    assert!(r.text().contains("0 switches changed"), "{}", r.text());
}

#[test]
fn a_recording_started_and_stopped_over_http_reads_back() {
    let d = with_token("recording", &[]);
    let dir = common::temp_dir("recording-file");
    let path = dir.join("run.ndjson");
    let auth = format!("Bearer {TOKEN}");
    let body = serde_json::json!({ "path": path }).to_string();
    let ct = [
        ("Authorization", auth.as_str()),
        ("Content-Type", "application/json"),
    ];
    let r = d.request("POST", "/api/v1/recording", &ct, body.as_bytes());
    assert_eq!(r.status, 200, "{}", r.text());
    let r = d.request("POST", "/api/v1/recording", &ct, body.as_bytes());
    assert_eq!(r.status, 409, "already recording: {}", r.text());
    std::thread::sleep(Duration::from_millis(500));
    let r = d.request(
        "DELETE",
        "/api/v1/recording",
        &[("Authorization", &auth)],
        b"",
    );
    assert_eq!(r.status, 200, "{}", r.text());
    let mut rd = fabric_api::recording::Reader::open(std::fs::File::open(&path).unwrap()).unwrap();
    assert_eq!(rd.fabric().name, "fat-tree-k4");
    let frames = rd.read_all().unwrap();
    let snaps: Vec<u64> = frames
        .iter()
        .filter_map(|f| match f {
            Frame::Snapshot(s) => Some(s.seq),
            _ => None,
        })
        .collect();
    assert!(snaps.len() >= 3, "{snaps:?}");
    assert!(snaps.windows(2).all(|w| w[1] == w[0] + 1), "{snaps:?}");
    // An existing file is never overwritten.
    let r = d.request("POST", "/api/v1/recording", &ct, body.as_bytes());
    assert_eq!(r.status, 409);
    assert!(r.text().contains("exists"), "{}", r.text());
}

#[test]
fn a_non_loopback_address_needs_a_token() {
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_fabric"))
        .args(["serve", "--sim", "--listen", "0.0.0.0:0"])
        .env_remove("FABRIC_SERVE_TOKEN")
        .output()
        .unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("non-loopback address needs a token"), "{err}");
}

fn frame_seq(line: &str) -> (String, Option<u64>) {
    let v: serde_json::Value = serde_json::from_str(line).unwrap();
    let (kind, body) = v.as_object().unwrap().iter().next().unwrap();
    (kind.clone(), body["seq"].as_u64())
}

#[test]
fn the_stream_starts_with_the_fabric_and_resumes_from_a_sequence_number() {
    let d = Daemon::start(
        "resume",
        &["--sim", "--interval", "50ms", "--history", "40"],
    );
    let mut s = Stream::open(&d.addr, "/api/v1/telemetry/stream");
    assert_eq!(s.status, 200);
    assert_eq!(frame_seq(&s.next_line().unwrap()).0, "fabric");
    let (k, first) = frame_seq(&s.next_line().unwrap());
    assert_eq!(k, "snapshot");
    let first = first.unwrap();
    let (_, second) = frame_seq(&s.next_line().unwrap());
    assert_eq!(second, Some(first + 1), "live snapshots in order");
    drop(s);
    // Resume from an earlier snapshot: the kept frames from there on, then live ones.
    let from = first.saturating_sub(2);
    let mut s = Stream::open(&d.addr, &format!("/api/v1/telemetry/stream?from={from}"));
    assert_eq!(frame_seq(&s.next_line().unwrap()).0, "fabric");
    let mut seqs = Vec::new();
    for _ in 0..8 {
        let line = s.next_line().unwrap();
        let frame = Frame::from_json_line(line.as_bytes()).unwrap();
        if let Frame::Snapshot(snap) = frame {
            seqs.push(snap.seq);
        }
    }
    assert_eq!(seqs[0], from);
    assert!(
        seqs.windows(2).all(|w| w[1] == w[0] + 1),
        "no gap, no duplicate: {seqs:?}"
    );
    // Server-sent events carry the sequence number as the event id.
    let mut s = Stream::open(
        &d.addr,
        &format!("/api/v1/telemetry/stream?from={from}&format=sse"),
    );
    let fabric = s.next_line().unwrap();
    assert!(
        fabric.starts_with("data: {\"fabric\":") && fabric.ends_with("}\n\n"),
        "{fabric}"
    );
    let snap = s.next_line().unwrap();
    assert!(snap.starts_with(&format!("id: {from}\ndata: {{")), "{snap}");
    // The future and the forgotten past are refused with what is available.
    let r = d.get("/api/v1/telemetry/stream?from=999999");
    assert_eq!(r.status, 400);
    assert!(r.text().contains("not reached yet"), "{}", r.text());
    d.wait_for(
        |d| d.health()["latest_seq"].as_u64().unwrap() > 60,
        Duration::from_secs(30),
    );
    let r = d.get("/api/v1/telemetry/stream?from=0");
    assert_eq!(r.status, 410, "{}", r.text());
    assert!(
        r.text().contains("oldest snapshot that can be resumed"),
        "{}",
        r.text()
    );
}

#[test]
fn a_slow_stream_client_is_dropped_and_the_collector_keeps_its_pace() {
    let d = Daemon::start(
        "slow",
        &["--sim", "--interval", "50ms", "--stream-lag", "4"],
    );
    let mut gone = Stream::open(&d.addr, "/api/v1/telemetry/stream");
    gone.next_line().unwrap();
    drop(gone); // a client that disconnects
    let slow = TcpStream::connect(&d.addr).unwrap();
    // A small receive buffer, so that the daemon's send buffer fills within seconds.
    let size: libc::c_int = 4096;
    let rc = unsafe {
        use std::os::fd::AsRawFd;
        libc::setsockopt(
            slow.as_raw_fd(),
            libc::SOL_SOCKET,
            libc::SO_RCVBUF,
            (&size as *const libc::c_int).cast(),
            std::mem::size_of::<libc::c_int>() as libc::socklen_t,
        )
    };
    assert_eq!(rc, 0);
    (&slow)
        .write_all(
            format!(
                "GET /api/v1/telemetry/stream HTTP/1.1\r\nHost: {}\r\n\r\n",
                d.addr
            )
            .as_bytes(),
        )
        .unwrap();
    let seq0 = d.health()["latest_seq"].as_u64().unwrap();
    let t0 = Instant::now();
    d.wait_for(
        |d| d.health()["daemon"]["stream_dropped"] == 1,
        Duration::from_secs(60),
    );
    let h = d.health();
    assert_eq!(h["stream_clients"], 0, "both clients forgotten: {h}");
    assert!(d.stderr().contains("stream client dropped"));
    // The collector was never slowed: about one snapshot per interval all along.
    std::thread::sleep(Duration::from_millis(500));
    let seq1 = d.health()["latest_seq"].as_u64().unwrap();
    let expected = t0.elapsed().as_secs_f64() / 0.05;
    let got = (seq1 - seq0) as f64;
    assert!(
        got > 0.7 * expected,
        "{got} snapshots in {:?} (expected ~{expected})",
        t0.elapsed()
    );
    // The slow client's connection was closed: reading drains what was buffered, then ends.
    slow.set_read_timeout(Some(Duration::from_secs(10)))
        .unwrap();
    let mut sink = Vec::new();
    let r = (&slow).read_to_end(&mut sink);
    assert!(r.is_ok() || r.unwrap_err().kind() == std::io::ErrorKind::ConnectionReset);
}

#[test]
fn sigterm_ends_streams_and_exits_cleanly() {
    let mut d = Daemon::start("sigterm", &["--sim", "--interval", "100ms"]);
    let mut s = Stream::open(&d.addr, "/api/v1/telemetry/stream");
    s.next_line().unwrap();
    let t = Instant::now();
    let status = d.terminate();
    assert!(status.success(), "{status:?}\n{}", d.stderr());
    assert!(
        t.elapsed() < Duration::from_secs(5),
        "shutdown took {:?}",
        t.elapsed()
    );
    // The stream ended properly (the terminating zero-length chunk), not by a reset.
    while s.next_line().is_some() {}
    let log = d.stderr();
    assert!(log.contains("SIGTERM: shutting down"), "{log}");
    assert!(log.contains("INFO stopped"), "{log}");
    assert!(TcpStream::connect(&d.addr).is_err(), "still listening");
}

#[test]
fn fabric_status_summarises_a_running_daemon() {
    let d = Daemon::start("status", &["--sim", "--interval", "100ms"]);
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_fabric"))
        .args(["status", "--daemon", &format!("http://{}", d.addr)])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{text}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(text.contains("status      ok"), "{text}");
    assert!(text.contains("fat-tree-k4"), "{text}");
    assert!(text.contains("GB sent"), "{text}");
    drop(d);
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_fabric"))
        .args(["status", "--daemon", "http://127.0.0.1:1"])
        .output()
        .unwrap();
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("is `fabric serve` running?"));
}

#[test]
fn metrics_filters_keep_one_switchs_ports_or_some_families() {
    let d = Daemon::start("metrics-filter", &["--sim", "--interval", "100ms"]);
    let samples = |t: &str| -> Vec<String> {
        t.lines()
            .filter(|l| !l.starts_with('#'))
            .map(String::from)
            .collect()
    };
    let all = d.get("/metrics").text();
    let up = |t: &str| {
        t.lines()
            .filter(|l| l.starts_with("fabric_port_up{"))
            .count()
    };
    assert_eq!(up(&all), 96);
    // One switch: only its 4 ports' series; the fabric-wide families stay.
    let r = d.get("/metrics?switch=pod0-leaf0");
    assert_eq!(r.status, 200, "{}", r.text());
    let one = r.text();
    assert_eq!(up(&one), 4, "{one}");
    for l in samples(&one).iter().filter(|l| l.contains("switch=\"")) {
        assert!(l.contains("switch=\"pod0-leaf0\""), "{l}");
    }
    assert!(one.contains("fabric_daemon_snapshots_total"), "{one}");
    assert!(one.len() * 5 < all.len(), "{} vs {}", one.len(), all.len());
    // Two switches, one family: 8 lines, all of that family.
    let r = d.get("/metrics?switch=pod0-leaf0,core0-0&family=fabric_port_up");
    let s = samples(&r.text());
    assert_eq!(s.len(), 8, "{s:?}");
    assert!(s.iter().all(|l| l.starts_with("fabric_port_up{")), "{s:?}");
    // Family prefixes: every daemon family and nothing else.
    let s = samples(&d.get("/metrics?family=fabric_daemon_").text());
    assert!(s.len() >= 10, "{s:?}");
    assert!(s.iter().all(|l| l.starts_with("fabric_daemon_")), "{s:?}");
    // Mistakes: named, refused, counted.
    let r = d.get("/metrics?switch=pod9-leaf9");
    assert_eq!(r.status, 400);
    assert!(
        r.text().contains("no node named \\\"pod9-leaf9\\\""),
        "{}",
        r.text()
    );
    assert_eq!(d.get("/metrics?switch=").status, 400);
    assert_eq!(d.get("/metrics?color=red").status, 400);
    let m = d.get("/metrics?family=fabric_daemon_bad_requests").text();
    assert!(m.contains("fabric_daemon_bad_requests_total 3"), "{m}");
}
