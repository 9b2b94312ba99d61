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
    // (cut off after 500 ms; kept, it would be read until the 30 s read timeout)
    let mut s = TcpStream::connect(&d.addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
    let t = Instant::now();
    let mut buf = Vec::new();
    let _ = s.read_to_end(&mut buf);
    assert!(
        t.elapsed() < Duration::from_secs(20),
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

/// A keep-alive connection left idle after a request (a Prometheus between scrapes)
/// was logged as a WARN and counted as a bad connection at every header timeout.
#[test]
fn an_idle_keep_alive_connection_is_closed_quietly() {
    let d = with_token("keep-alive", &["--header-timeout", "200ms"]);
    let mut s = TcpStream::connect(&d.addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    write!(s, "GET /api/v1/health HTTP/1.1\r\nHost: {}\r\n\r\n", d.addr).unwrap();
    let mut buf = Vec::new();
    // The answer, then the close after the idle time.
    let _ = s.read_to_end(&mut buf);
    assert!(String::from_utf8_lossy(&buf).starts_with("HTTP/1.1 200"));
    let h = d.health();
    assert_eq!(h["daemon"]["bad_connections"], 0, "{h}");
    assert!(!d.stderr().contains("WARN"), "{}", d.stderr());
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
        common::WAIT,
    );
    let h = d.health();
    assert_eq!(h["status"], "degraded");
    assert_eq!(h["reroutes"]["count"], 1, "{h}");
    // the events are published with the next snapshot, which may come after the health
    d.wait_for(
        |d| {
            d.json("/api/v1/events")
                .as_array()
                .is_some_and(|a| a.len() >= 2)
        },
        common::WAIT,
    );
    let ev = d.json("/api/v1/events");
    let kinds: Vec<&str> = ev
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["what"]["kind"].as_str().unwrap())
        .collect();
    assert_eq!(kinds, ["link-down", "reroute"], "{ev}");
    // named `switch:port` too, for readers without the fabric map
    let at = ev[0]["at"].as_array().unwrap();
    assert!(at.iter().any(|p| p == "pod0-leaf0:2"), "{ev}");
    assert_eq!(ev[1]["at"], ev[0]["at"], "{ev}");
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
    d.wait_for(|d| d.health()["status"] == "ok", common::WAIT);
    let r = d.request("POST", "/api/v1/reroute", &[("Authorization", &auth)], b"");
    assert_eq!(r.status, 200, "{}", r.text());
    assert!(r.text().contains("0 switches changed"), "{}", r.text());
}

#[test]
fn a_recording_started_and_stopped_over_http_reads_back() {
    let dir = common::temp_dir("recording-file");
    let d = with_token("recording", &["--record-dir", dir.to_str().unwrap()]);
    let path = dir.join("run.ndjson");
    let auth = format!("Bearer {TOKEN}");
    let body = serde_json::json!({ "path": "run.ndjson" }).to_string();
    let ct = [
        ("Authorization", auth.as_str()),
        ("Content-Type", "application/json"),
    ];
    let r = d.request("POST", "/api/v1/recording", &ct, body.as_bytes());
    assert_eq!(r.status, 200, "{}", r.text());
    let r = d.request("POST", "/api/v1/recording", &ct, body.as_bytes());
    assert_eq!(r.status, 409, "already recording: {}", r.text());
    // a few snapshots recorded: waited for (a loaded machine may make fewer than one per
    // interval), not slept for; the collector records a snapshot before it is counted
    let seq = |d: &Daemon| d.health()["latest_seq"].as_u64().unwrap();
    let seq0 = seq(&d);
    d.wait_for(|d| seq(d) >= seq0 + 4, common::WAIT);
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

/// `POST /api/v1/reroute` in `--sim` stamped its event with the wall clock inside a
/// simulated-time stream, and the recording in progress stopped ("time goes back"); it
/// also counted as a repair in `fabric_reroute_duration_seconds`.
#[test]
fn a_manual_reroute_keeps_the_streams_clock_and_is_not_a_repair() {
    let dir = common::temp_dir("reroute-clock-file");
    let d = with_token("reroute-clock", &["--record-dir", dir.to_str().unwrap()]);
    let path = dir.join("run.rec");
    let auth = format!("Bearer {TOKEN}");
    let ct = [
        ("Authorization", auth.as_str()),
        ("Content-Type", "application/json"),
    ];
    let body = serde_json::json!({ "path": "run.rec" }).to_string();
    let r = d.request("POST", "/api/v1/recording", &ct, body.as_bytes());
    assert_eq!(r.status, 200, "{}", r.text());
    let manual = |d: &Daemon| {
        d.json("/api/v1/events?limit=1000")
            .as_array()
            .unwrap()
            .iter()
            .filter(|e| {
                e["what"]["kind"] == "reroute"
                    && e["what"]["links"].as_array().is_some_and(|l| l.is_empty())
            })
            .count()
    };
    for n in 1..=3 {
        let r = d.request("POST", "/api/v1/reroute", &ct[..1], b"");
        assert_eq!(r.status, 200, "{}", r.text());
        // its event goes out (and into the recording) with the next snapshot: waited
        // for, or under load the recording could stop before the last one is in it
        d.wait_for(|d| manual(d) >= n, common::WAIT);
    }
    let r = d.request("DELETE", "/api/v1/recording", &ct[..1], b"");
    assert_eq!(r.status, 200, "still recording: {}", r.text());
    assert!(!d.stderr().contains("recording stopped"), "{}", d.stderr());
    let mut rd = fabric_api::recording::Reader::open(std::fs::File::open(&path).unwrap()).unwrap();
    let frames = rd.read_all().unwrap();
    let manual: Vec<&fabric_api::Event> = frames
        .iter()
        .filter_map(|f| match f {
            Frame::Event(e) => Some(e),
            _ => None,
        })
        .filter(
            |e| matches!(&e.what, fabric_api::EventKind::Reroute { links, .. } if links.is_empty()),
        )
        .collect();
    assert_eq!(manual.len(), 3, "{manual:?}");
    assert!(
        manual
            .iter()
            .all(|e| e.time.clock == fabric_api::Clock::Virtual),
        "{manual:?}"
    );
    // Repairs counted = reroutes that followed a link change, not the manual ones.
    let events = d.json("/api/v1/events?limit=1000");
    let repairs = events
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| {
            e["what"]["kind"] == "reroute"
                && e["what"]["links"].as_array().is_some_and(|l| !l.is_empty())
        })
        .count();
    let m = d.get("/metrics").text();
    let counted = common::metric(&m, "fabric_reroute_duration_seconds_count").unwrap();
    assert!(
        counted as usize <= repairs,
        "{counted} counted, {repairs} link-driven reroutes"
    );
}

/// `POST /api/v1/recording` created a file at any path the caller named, as the
/// daemon's user: only plain names inside --record-dir now, never over a symlink, and at
/// most --record-max-files files of --record-max-bytes. Errors are JSON everywhere (405,
/// 415, 422 too), the Bearer scheme is case-insensitive, an empty path is 400.
#[test]
fn recordings_stay_inside_the_record_dir_within_their_caps() {
    let dir = common::temp_dir("record-dir-files");
    let outside = common::temp_dir("record-dir-outside");
    std::os::unix::fs::symlink(outside.join("evil"), dir.join("link")).unwrap();
    let d = with_token(
        "record-dir",
        &[
            "--record-dir",
            dir.to_str().unwrap(),
            "--record-max-files",
            "3",
            "--record-max-bytes",
            "20000",
        ],
    );
    let post = |auth: &str, ct: &str, body: &str| {
        d.request(
            "POST",
            "/api/v1/recording",
            &[("Authorization", auth), ("Content-Type", ct)],
            body.as_bytes(),
        )
    };
    let json = "application/json";
    let bearer = format!("bearer {TOKEN}");
    let path = |p: &str| serde_json::json!({ "path": p }).to_string();
    let error_of = |r: &common::Response| -> String {
        let v: serde_json::Value = serde_json::from_slice(&r.body)
            .unwrap_or_else(|e| panic!("{} not JSON ({e}): {}", r.status, r.text()));
        v["error"].as_str().unwrap().to_string()
    };
    let target = outside.join("x.rec");
    for (p, why) in [
        ("", "empty"),
        (target.to_str().unwrap(), "absolute"),
        ("../x.rec", "directories"),
        ("..", "not a file name"),
    ] {
        let r = post(&bearer, json, &path(p));
        assert_eq!(r.status, 400, "{p:?}: {}", r.text());
        assert!(error_of(&r).contains(why), "{p:?}: {}", r.text());
    }
    let r = post(&bearer, json, &path("link"));
    assert_eq!(r.status, 409, "{}", r.text());
    assert!(!outside.join("evil").exists(), "wrote through the symlink");
    assert!(!target.exists());
    // Uniform JSON errors.
    let r = post(&bearer, "text/plain", &path("a.rec"));
    assert_eq!(r.status, 415, "{}", r.text());
    error_of(&r);
    let r = post(&bearer, json, "{\"file\": \"a.rec\"}");
    assert_eq!(r.status, 422, "{}", r.text());
    error_of(&r);
    // A 405 names the allowed methods (RFC 9110 section 15.5.6), in `Allow` and in the
    // JSON body (which said only "Method Not Allowed").
    let r = d.request("PUT", "/api/v1/recording", &[], b"");
    assert_eq!(r.status, 405, "{}", r.text());
    assert_eq!(r.header("allow"), Some("POST,DELETE"), "{}", r.text());
    assert!(error_of(&r).contains("POST,DELETE"), "{}", r.text());
    let r = d.request("DELETE", "/api/v1/health", &[], b"");
    assert_eq!(r.status, 405, "{}", r.text());
    assert_eq!(r.header("allow"), Some("GET,HEAD"), "{}", r.text());
    assert!(error_of(&r).contains("GET,HEAD"), "{}", r.text());
    // The size cap ends a recording on its own (a k=4 snapshot is several kB).
    let r = post(&bearer, json, &path("a.rec"));
    assert_eq!(r.status, 200, "{}", r.text());
    d.wait_for(
        |d| d.stderr().contains("reached --record-max-bytes 20000"),
        common::WAIT,
    );
    let size = std::fs::metadata(dir.join("a.rec")).unwrap().len();
    assert!(size < 200_000, "{size} bytes");
    fabric_api::recording::Reader::open(std::fs::File::open(dir.join("a.rec")).unwrap())
        .unwrap()
        .read_all()
        .unwrap();
    // link + a.rec + b.rec = 3 files: the fourth is refused.
    let r = post(&format!("BEARER {TOKEN}"), json, &path("b.rec"));
    assert_eq!(r.status, 200, "{}", r.text());
    let r = d.request(
        "DELETE",
        "/api/v1/recording",
        &[("Authorization", &bearer)],
        b"",
    );
    assert_eq!(r.status, 200, "{}", r.text());
    let r = post(&bearer, json, &path("c.rec"));
    assert_eq!(r.status, 507, "{}", r.text());
    assert!(
        error_of(&r).contains("--record-max-files 3"),
        "{}",
        r.text()
    );
    // Without --record-dir, nothing is recorded over the API.
    let plain = with_token("no-record-dir", &[]);
    let r = plain.request(
        "POST",
        "/api/v1/recording",
        &[("Authorization", &bearer), ("Content-Type", json)],
        path("a.rec").as_bytes(),
    );
    assert_eq!(r.status, 403, "{}", r.text());
    assert!(error_of(&r).contains("--record-dir"), "{}", r.text());
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
        common::WAIT,
    );
    let r = d.get("/api/v1/telemetry/stream?from=0");
    assert_eq!(r.status, 410, "{}", r.text());
    assert!(
        r.text().contains("oldest snapshot that can be resumed"),
        "{}",
        r.text()
    );
}

/// The collector's pace is compared with a second daemon's, started alike and run over
/// the same time with no stream client: both get what a loaded machine gives them (one
/// run at `nice -n 19` made 40 snapshots in 42 s where 850 were "expected"), so only a
/// collector slowed by its slow client falls behind the other.
#[test]
fn a_slow_stream_client_is_dropped_and_the_collector_keeps_its_pace() {
    let args = ["--sim", "--interval", "50ms", "--stream-lag", "4"];
    let d = Daemon::start("slow", &args);
    let control = Daemon::start("slow-control", &args);
    let seq = |d: &Daemon| d.health()["latest_seq"].as_u64().unwrap();
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
    let (seq0, base0) = (seq(&d), seq(&control));
    let t0 = Instant::now();
    d.wait_for(
        |d| d.health()["daemon"]["stream_dropped"] == 1,
        common::WAIT,
    );
    let h = d.health();
    assert_eq!(h["stream_clients"], 0, "both clients forgotten: {h}");
    assert!(d.stderr().contains("stream client dropped"));
    // The collector was never slowed: as many snapshots, all along, as the control's
    // (at least 20 of them, so that one snapshot more or less does not decide).
    control.wait_for(|c| seq(c) >= base0 + 20, common::WAIT);
    let (got, base) = ((seq(&d) - seq0) as f64, (seq(&control) - base0) as f64);
    assert!(
        got > 0.7 * base,
        "{got} snapshots with a slow client, {base} without, in the same {:?}",
        t0.elapsed()
    );
    // The slow client's connection was closed: reading drains what was buffered, then ends.
    slow.set_read_timeout(Some(Duration::from_secs(10)))
        .unwrap();
    let mut sink = Vec::new();
    let r = (&slow).read_to_end(&mut sink);
    assert!(r.is_ok() || r.unwrap_err().kind() == std::io::ErrorKind::ConnectionReset);
}

/// ~260 stream clients used to take every connection, and `/metrics`, health and
/// `fabric status` hung: streams are capped on their own (503 with a reason), below the
/// connection limit, and a freed place can be taken again.
#[test]
fn stream_clients_are_capped_apart_and_leave_room_for_scrapes_and_health() {
    let d = Daemon::start(
        "max-streams",
        &[
            "--sim",
            "--interval",
            "100ms",
            "--max-connections",
            "8",
            "--max-streams",
            "3",
        ],
    );
    let mut streams: Vec<Stream> = (0..3)
        .map(|_| Stream::open(&d.addr, "/api/v1/telemetry/stream"))
        .collect();
    for s in &mut streams {
        assert_eq!(s.status, 200);
        assert!(s.next_line().unwrap().starts_with("{\"fabric\""));
    }
    // More streams than the connection limit: each refused at once, with a reason.
    for _ in 0..10 {
        let r = d.get("/api/v1/telemetry/stream");
        assert_eq!(r.status, 503, "{}", r.text());
        let body: serde_json::Value = serde_json::from_slice(&r.body).unwrap();
        assert!(
            body["error"]
                .as_str()
                .unwrap()
                .contains("too many stream clients"),
            "{body}"
        );
        assert_eq!(r.header("retry-after"), Some("5"));
    }
    for path in ["/metrics", "/api/v1/health", "/api/v1/telemetry"] {
        assert_eq!(d.get(path).status, 200, "{path}");
    }
    let metrics = d.get("/metrics").text();
    assert_eq!(
        common::metric(&metrics, "fabric_daemon_stream_clients_refused_total"),
        Some(10.0),
        "{metrics}"
    );
    let status = std::process::Command::new(env!("CARGO_BIN_EXE_fabric"))
        .args(["status", "--daemon", &d.addr])
        .output()
        .unwrap();
    assert!(
        !status.stdout.is_empty(),
        "fabric status answered: {status:?}"
    );
    // A stream that ends gives its place back.
    drop(streams.pop());
    d.wait_for(
        |d| {
            let mut s = Stream::open(&d.addr, "/api/v1/telemetry/stream");
            s.status == 200 && s.next_line().is_some()
        },
        common::WAIT,
    );
}

/// More streams than connections is refused at start-up, with the reason.
#[test]
fn max_streams_must_leave_connections_free() {
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_fabric"))
        .args(["serve", "--sim", "--listen", "127.0.0.1:0"])
        .args(["--max-connections", "8", "--max-streams", "8"])
        .output()
        .unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("--max-streams 8: must be below --max-connections 8"),
        "{err}"
    );
    assert!(out.stdout.is_empty(), "no readiness line: {out:?}");
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
    // The simulator has no namespaces to name.
    assert!(!text.contains("namespaces"), "{text}");
    let r = d.get("/api/v1/namespaces");
    assert_eq!(r.status, 404, "{}", r.text());
    assert!(r.text().contains("no network namespaces"), "{}", r.text());
    drop(d);
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_fabric"))
        .args(["status", "--daemon", "http://127.0.0.1:1"])
        .output()
        .unwrap();
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("is `fabric serve` running?"));
}

/// `fabric status` printed raw JSON (`daemon {…}`, `([16])`) and exited 0 on a degraded
/// fabric: now it names links by their ports and exits 1; `--json` for scripts.
#[test]
fn fabric_status_names_links_and_fails_when_degraded() {
    let d = with_token("status-degraded", &[]);
    let r = d.request(
        "POST",
        "/api/v1/links/16/fail",
        &[("Authorization", &format!("Bearer {TOKEN}"))],
        b"",
    );
    assert_eq!(r.status, 200, "{}", r.text());
    d.wait_for(|d| d.health()["status"] == "degraded", common::WAIT);
    let status = |json: bool| {
        let mut c = std::process::Command::new(env!("CARGO_BIN_EXE_fabric"));
        c.args(["status", "--daemon", &d.addr]);
        if json {
            c.arg("--json");
        }
        c.output().unwrap()
    };
    let out = status(false);
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(1), "{text}");
    assert!(text.contains("status      degraded"), "{text}");
    assert!(
        text.contains(" -- ") && text.contains("(link 16)"),
        "{text}"
    );
    assert!(!text.contains('{') && !text.contains("(["), "{text}");
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("the fabric is degraded"),
        "{out:?}"
    );
    let out = status(true);
    assert_eq!(out.status.code(), Some(1));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["status"], "degraded");
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

/// A bad configuration or a source that cannot open: no readiness line on stdout, and
/// the error said once on stderr.
#[test]
fn a_bad_configuration_is_refused_before_the_readiness_line_and_said_once() {
    let missing = common::temp_dir("no-scenario").join("missing.toml");
    for (args, said) in [
        (vec!["--sim", "--history", "0"], "--history 0"),
        (vec!["--sim", "--events-kept", "0"], "--events-kept 0"),
        (vec!["--sim", missing.to_str().unwrap()], "missing.toml"),
    ] {
        let out = std::process::Command::new(env!("CARGO_BIN_EXE_fabric"))
            .args(["serve", "--listen", "127.0.0.1:0"])
            .args(&args)
            .output()
            .unwrap();
        let (stdout, stderr) = (
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr),
        );
        assert!(!out.status.success(), "{args:?}: {stdout}{stderr}");
        assert!(!stdout.contains("listening on"), "{args:?}: {stdout}");
        assert_eq!(stderr.matches(said).count(), 1, "{args:?}: {stderr}");
        assert_eq!(stderr.lines().count(), 1, "{args:?}: {stderr}");
    }
}

/// A source that fails at every sample (its Prometheus is not there) logged the same
/// error at every sample, ten lines a second: said once now, every failure counted.
#[test]
fn a_source_error_that_repeats_is_logged_once_and_counted_every_time() {
    let d = Daemon::launch(
        "repeated-error",
        &[
            "--observe",
            "--prometheus",
            "http://127.0.0.1:1",
            "--interval",
            "100ms",
        ],
    );
    let errors = |d: &Daemon| {
        common::metric(
            &d.get("/metrics").text(),
            "fabric_daemon_source_errors_total",
        )
        .unwrap_or(0.0)
    };
    d.wait_for(|d| errors(d) >= 5.0, common::WAIT);
    let log = d.stderr();
    let said = log.lines().filter(|l| l.contains(" WARN source: ")).count();
    assert_eq!(said, 1, "{log}");
}
