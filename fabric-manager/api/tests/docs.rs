//! The JSON examples in `docs/telemetry.md` are real frames of the current schema.

use fabric_api::{EventKind, Frame};

#[test]
fn every_example_line_in_the_docs_parses() {
    let doc = include_str!("../../../docs/telemetry.md");
    // Lines of the ```json blocks.
    let mut in_json = false;
    let mut lines = Vec::new();
    for l in doc.lines() {
        if l.starts_with("```") {
            in_json = l == "```json";
        } else if in_json {
            lines.push(l);
        }
    }
    assert_eq!(lines.len(), 12, "fabric map, one snapshot, ten events");
    let frames: Vec<Frame> = lines
        .iter()
        .map(|l| Frame::from_json_line(l.as_bytes()).unwrap())
        .collect();
    let Frame::Fabric(info) = &frames[0] else {
        panic!("first frame is the map")
    };
    info.validate().unwrap();
    let Frame::Snapshot(s) = &frames[1] else {
        panic!("second frame is a snapshot")
    };
    s.validate(info).unwrap();
    for f in &frames[2..] {
        let Frame::Event(e) = f else {
            panic!("events follow")
        };
        assert_ne!(e.what, EventKind::Unknown);
    }
}
