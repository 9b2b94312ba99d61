//! The recording reader's errors on damaged and foreign files, and forward compatibility.

mod common;

use common::small_info;
use fabric_api::recording::{Reader, TRAILER_LEN, Writer};
use fabric_api::*;
use std::io::Cursor;

fn sample() -> (FabricInfo, Vec<u8>) {
    let info = small_info();
    let n = info.ports.len();
    let mut out = Vec::new();
    let mut w = Writer::new(&mut out, &info).unwrap();
    for k in 0..5u64 {
        let src = Source {
            kind: SourceKind::Sim,
            name: "t".into(),
        };
        let mut s = Snapshot::new(k, Timestamp::virtual_ns(k * 1000), src);
        s.counters.tx_bytes = Some(Column::from(vec![k * 10; n]));
        s.sum_ports_into_totals();
        w.write(&Frame::Snapshot(s)).unwrap();
        let e = Event {
            seq: k + 1,
            time: Timestamp::virtual_ns(k * 1000 + 500),
            what: EventKind::LinkDown {
                link: topo::LinkId(1),
                detected_by: Detector::Injected,
                detect_ns: Some(5),
            },
        };
        w.write(&Frame::Event(e)).unwrap();
    }
    w.finish().unwrap();
    (info, out)
}

fn open_err(bytes: &[u8]) -> String {
    match Reader::open(Cursor::new(bytes)).and_then(|mut r| r.read_all()) {
        Ok(f) => panic!("accepted ({} frames)", f.len()),
        Err(e) => e.to_string(),
    }
}

#[test]
fn reads_back_and_seeks() {
    let (info, bytes) = sample();
    let mut r = Reader::open(Cursor::new(&bytes)).unwrap();
    assert_eq!(r.fabric(), &info);
    assert_eq!(r.index().len(), 5);
    let all = r.read_all().unwrap();
    assert_eq!(all.len(), 10);
    let e = r.seek_time(2999).unwrap().unwrap();
    assert_eq!((e.seq, e.t_ns), (2, 2000));
    let Some(Frame::Snapshot(s)) = r.next_frame().unwrap() else {
        panic!()
    };
    assert_eq!(s.totals.tx_bytes, 20 * info.ports.len() as u64);
    assert_eq!(r.seek_time(0).unwrap().unwrap().seq, 0);
    r.rewind().unwrap();
    assert_eq!(r.read_all().unwrap(), all);
}

#[test]
fn rejects_foreign_files() {
    assert!(open_err(b"").contains("empty"));
    assert!(open_err(b"hello world\n").contains("not a fabric telemetry recording"));
    assert!(
        open_err(b"{\"format\":\"pcap\",\"schema_version\":1}\n")
            .contains("expected \"fabric-telemetry-recording\"")
    );
    assert!(open_err(&[b'x'; 10_000]).contains("no header line within the first 4096 bytes"));
    let newer = b"{\"format\":\"fabric-telemetry-recording\",\"schema_version\":99}\n";
    assert!(open_err(newer).contains("schema version 99 is newer"));
}

#[test]
fn rejects_truncated_and_corrupt_files() {
    let (_, bytes) = sample();
    // Cut inside the third line (the first snapshot): no trailer, the scan meets a partial line.
    let third = bytes
        .iter()
        .enumerate()
        .filter(|e| *e.1 == b'\n')
        .nth(2)
        .unwrap()
        .0;
    let e = open_err(&bytes[..third - 3]);
    assert!(
        e.contains("corrupt recording at byte") && e.contains("truncated"),
        "{e}"
    );
    // Only the header.
    let first = bytes.iter().position(|&b| b == b'\n').unwrap();
    assert!(open_err(&bytes[..=first]).contains("no fabric map"));
    // A byte changed inside a frame.
    // (a changed key: the event's "seq" becomes "#eq", a required field missing).
    let mut bad = bytes.clone();
    let seq = third
        + bad[third..]
            .windows(5)
            .position(|w| w == b"\"seq\"")
            .unwrap();
    bad[seq + 1] = b'#';
    let e = open_err(&bad);
    assert!(e.contains(&format!("byte {}", third + 1)), "{e}");
    // A trailer pointing outside the data.
    let mut bad = bytes.clone();
    let t = bad.len() - TRAILER_LEN as usize;
    bad[t..].copy_from_slice(b"{\"index_at\":                   7}\n");
    assert!(open_err(&bad).contains("outside the data"));
    // A line longer than the cap.
    let r = Reader::open_with_cap(Cursor::new(&bytes), 100);
    assert!(r.unwrap_err().to_string().contains("100-byte cap"));
}

#[test]
fn writer_refuses_out_of_order_and_mismatched_frames() {
    let info = small_info();
    let mut w = Writer::new(Vec::new(), &info).unwrap();
    let src = Source {
        kind: SourceKind::Sim,
        name: "t".into(),
    };
    w.write(&Frame::Snapshot(Snapshot::new(
        0,
        Timestamp::virtual_ns(10),
        src.clone(),
    )))
    .unwrap();
    let e = w.write(&Frame::Snapshot(Snapshot::new(
        1,
        Timestamp::virtual_ns(9),
        src.clone(),
    )));
    assert!(e.unwrap_err().to_string().contains("time order"));
    let mut s = Snapshot::new(1, Timestamp::virtual_ns(11), src);
    s.counters.trims = Some(Column::zeros(3));
    let e = w.write(&Frame::Snapshot(s)).unwrap_err().to_string();
    assert!(e.contains("counters.trims: 3 entries"), "{e}");
    assert!(w.write(&Frame::Fabric(info)).is_err());
}

#[test]
fn newer_writers_frames_and_events_are_skipped_or_unknown() {
    let line = br#"{"heatmap":{"x":1}}"#;
    assert!(matches!(Frame::from_json_line(line), Err(Error::UnknownFrame(k)) if k == "heatmap"));
    let ev = br#"{"event":{"seq":1,"time":{"ns":5,"clock":"wall-clock"},"what":{"kind":"optics-degraded","dbm":-7.5},"extra":true}}"#;
    let Frame::Event(e) = Frame::from_json_line(ev).unwrap() else {
        panic!()
    };
    assert_eq!(e.what, EventKind::Unknown);
    let mut stream = Vec::new();
    stream.extend_from_slice(line);
    stream.push(b'\n');
    stream.extend_from_slice(ev);
    stream.push(b'\n');
    let f = read_frame(&mut &stream[..], 1 << 20).unwrap().unwrap();
    assert!(matches!(f, Frame::Event(_)));
    // A line over the cap in a chunked stream.
    let mut d = LineDecoder::new(16);
    assert!(d.push(b"{\"event\":").is_ok());
    assert!(
        d.push(b"0123456789")
            .unwrap_err()
            .to_string()
            .contains("16-byte cap")
    );
}
