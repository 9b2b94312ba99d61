//! `--connect`: the daemon's NDJSON stream served by a test server that drops the
//! connection once; the source shows DISCONNECTED, reconnects with `from=` the next
//! sequence number and goes on.

mod common;

use fabric_tui::app::{Msg, SourceStatus};
use fabric_tui::source::{Control, connect};
use std::io::{BufRead, BufReader, Write};
use std::net::TcpListener;
use std::sync::mpsc;
use std::time::Duration;

#[test]
fn reconnects_and_resumes() {
    let frames = common::frames(true);
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = l.local_addr().unwrap().to_string();
    let (paths_tx, paths_rx) = mpsc::channel();
    std::thread::spawn(move || {
        for (n, s) in l.incoming().enumerate() {
            let mut s = s.unwrap();
            let mut r = BufReader::new(s.try_clone().unwrap());
            let mut line = String::new();
            r.read_line(&mut line).unwrap();
            paths_tx
                .send(line.split_whitespace().nth(1).unwrap().to_string())
                .unwrap();
            while r.read_line(&mut line).unwrap() > 2 && line.ends_with("\r\n") && line != "\r\n" {
                line.clear();
            }
            write!(s, "HTTP/1.1 200 OK\r\nContent-Type: application/x-ndjson\r\nTransfer-Encoding: chunked\r\n\r\n").unwrap();
            // first connection: the map, an event and two snapshots, then the line drops;
            // second: the map again and the last snapshot, then stays open
            let send: Vec<_> = if n == 0 {
                frames[..5].to_vec()
            } else {
                vec![frames[0].clone(), frames[5].clone()]
            };
            for f in send {
                let line = f.to_json_line();
                write!(s, "{:x}\r\n{line}\r\n", line.len()).unwrap();
            }
            if n > 0 {
                std::thread::sleep(Duration::from_secs(5));
            }
        }
    });
    let (tx, rx) = mpsc::channel();
    let (ctl_tx, ctl_rx) = mpsc::channel();
    let t = std::thread::spawn(move || connect(addr, tx, ctl_rx, None));
    let mut got = Vec::new();
    while let Ok(m) = rx.recv_timeout(Duration::from_secs(60)) {
        let done = matches!(&m, Msg::Sample(s) if s.at_ns == 12_000_000_000);
        got.push(m);
        if done {
            break;
        }
    }
    ctl_tx.send(Control::Stop).unwrap();
    drop(rx);
    let kinds: Vec<&str> = got
        .iter()
        .map(|m| match m {
            Msg::Fabric(_) => "fabric",
            Msg::Sample(_) => "sample",
            Msg::Event(_) => "event",
            Msg::Status(SourceStatus::Live(_)) => "live",
            Msg::Status(SourceStatus::Disconnected { .. }) => "disconnected",
            _ => "other",
        })
        .collect();
    assert_eq!(
        kinds,
        [
            "live",
            "fabric",
            "event",
            "event",
            "sample",
            "disconnected",
            "live",
            "sample"
        ]
    );
    let Msg::Status(SourceStatus::Disconnected { reason, since, .. }) = &got[5] else {
        unreachable!()
    };
    assert_eq!(reason, "the daemon closed the stream");
    assert!(since.ends_with(" UTC"));
    assert_eq!(paths_rx.recv().unwrap(), "/api/v1/telemetry/stream?from=0");
    assert_eq!(paths_rx.recv().unwrap(), "/api/v1/telemetry/stream?from=2");
    let _ = t.join();
}
