//! Property tests: every frame round-trips through JSON lines and recordings, and no
//! input bytes make a decoder or the recording reader panic.

mod common;

use common::*;
use fabric_api::recording::{Reader, Writer};
use fabric_api::*;
use proptest::prelude::*;
use std::io::Cursor;

fn frames_in_time_order(info: &FabricInfo) -> impl Strategy<Value = Vec<Frame>> {
    let n = info.ports.len();
    let one = prop_oneof![
        snapshot(n).prop_map(Frame::Snapshot),
        event().prop_map(Frame::Event),
    ];
    proptest::collection::vec(one, 0..8).prop_map(|mut v| {
        // Recordings are in time order on one clock.
        for f in &mut v {
            match f {
                Frame::Snapshot(s) => s.time.clock = Clock::Virtual,
                Frame::Event(e) => e.time.clock = Clock::Virtual,
                Frame::Fabric(_) => {}
            }
        }
        v.sort_by_key(|f| f.time_ns());
        v
    })
}

fn record(info: &FabricInfo, frames: &[Frame], finish: bool) -> Vec<u8> {
    let mut out = Vec::new();
    let mut w = Writer::new(&mut out, info).unwrap();
    for f in frames {
        w.write(f).unwrap();
    }
    if finish {
        w.finish().unwrap();
    } else {
        drop(w); // what a writer that never finished leaves behind
    }
    out
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(128))]

    #[test]
    fn snapshots_round_trip(s in (0usize..40).prop_flat_map(snapshot)) {
        let line = Frame::Snapshot(s.clone()).to_json_line();
        prop_assert!(line.ends_with('\n') && !line[..line.len() - 1].contains('\n'));
        prop_assert_eq!(Frame::from_json_line(line.as_bytes()).unwrap(), Frame::Snapshot(s));
    }

    #[test]
    fn arbitrary_snapshot_round_trips(s in snapshot(17)) {
        let line = Frame::Snapshot(s.clone()).to_json_line();
        prop_assert_eq!(Frame::from_json_line(line.as_bytes()).unwrap(), Frame::Snapshot(s));
    }

    #[test]
    fn long_columns_round_trip_in_every_form(c in (0usize..1500).prop_flat_map(column)) {
        let s = serde_json::to_string(&c).unwrap();
        prop_assert_eq!(serde_json::from_str::<Column>(&s).unwrap(), c);
    }

    #[test]
    fn arbitrary_packed_payloads_never_panic(n in any::<u32>(), p in "[A-Za-z0-9+/!]{0,64}") {
        let json = format!(r#"{{"n":{n},"p":"{p}"}}"#);
        if let Ok(c) = serde_json::from_str::<Column>(&json) {
            prop_assert_eq!(c.len(), n as usize);
        }
    }

    #[test]
    fn events_round_trip(e in event()) {
        let line = Frame::Event(e.clone()).to_json_line();
        prop_assert_eq!(Frame::from_json_line(line.as_bytes()).unwrap(), Frame::Event(e));
    }

    #[test]
    fn recordings_round_trip_and_seek(frames in frames_in_time_order(&small_info()), t in any::<u64>()) {
        let info = small_info();
        for finish in [true, false] {
            let bytes = record(&info, &frames, finish);
            let mut r = Reader::open(Cursor::new(&bytes)).unwrap();
            prop_assert_eq!(r.fabric(), &info);
            prop_assert_eq!(&r.read_all().unwrap(), &frames);
            let snaps: Vec<&Snapshot> = frames.iter().filter_map(|f| match f {
                Frame::Snapshot(s) => Some(s), _ => None }).collect();
            prop_assert_eq!(r.index().len(), snaps.len());
            // Seek: the last snapshot at or before t, and the frames from it on.
            let entry = r.seek_time(t).unwrap();
            let want = snaps.iter().rposition(|s| s.time.ns <= t);
            prop_assert_eq!(entry.map(|e| e.seq), want.map(|k| snaps[k].seq));
            let rest = r.read_all().unwrap();
            match want {
                Some(k) => prop_assert_eq!(&rest[0], &Frame::Snapshot(snaps[k].clone())),
                None => prop_assert_eq!(rest.len(), frames.len()),
            }
        }
    }

    #[test]
    fn arbitrary_bytes_never_panic_the_reader(bytes in proptest::collection::vec(any::<u8>(), 0..400)) {
        if let Ok(mut r) = Reader::open_with_cap(Cursor::new(&bytes), 1 << 16) {
            let _ = r.read_all();
            let _ = r.seek_time(5);
        }
        let mut d = LineDecoder::new(64);
        for chunk in bytes.chunks(7) {
            if d.push(chunk).is_err() { break; }
            while let Ok(Some(_)) = d.next_frame() {}
        }
        let _ = read_frame(&mut &bytes[..], 1 << 16);
    }

    #[test]
    fn damaged_recordings_give_errors_not_panics(
        frames in frames_in_time_order(&small_info()),
        cut in any::<prop::sample::Index>(),
        flip in any::<prop::sample::Index>(),
        byte in any::<u8>(),
    ) {
        let info = small_info();
        let bytes = record(&info, &frames, true);
        // Truncation anywhere is either rejected or (when the cut removed only the
        // index) reads back a prefix of what was written.
        let cut = &bytes[..cut.index(bytes.len())];
        if let Ok(got) = Reader::open(Cursor::new(cut)).and_then(|mut r| r.read_all()) {
            prop_assert!(got.len() <= frames.len());
            prop_assert_eq!(&got[..], &frames[..got.len()]);
        }
        let mut flipped = bytes.clone();
        let i = flip.index(flipped.len());
        flipped[i] = byte;
        if let Ok(mut r) = Reader::open(Cursor::new(&flipped)) {
            let _ = r.read_all();
        }
    }
}

/// The daemon's instance id travels in the fabric frame; a map without one (a recording,
/// an older daemon) reads as before.
#[test]
fn the_instance_id_is_optional_and_not_part_of_the_map() {
    let plain = common::small_info();
    let line = Frame::Fabric(plain.clone()).to_json_line();
    assert!(!line.contains("instance"), "absent when unknown");
    let stamped = plain.clone().with_instance(Some("4242-18a0".into()));
    let line = Frame::Fabric(stamped.clone()).to_json_line();
    assert!(line.contains("\"instance\":\"4242-18a0\""), "{line}");
    let Frame::Fabric(back) = Frame::from_json_line(line.as_bytes()).unwrap() else {
        panic!("a fabric frame")
    };
    assert_eq!(back, stamped);
    assert_ne!(back, plain);
    assert_eq!(back.with_instance(None), plain);
}
