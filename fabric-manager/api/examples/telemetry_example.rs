//! Prints a small fabric's map, one snapshot and one event of each kind as the JSON lines
//! of a stream (the examples in `docs/telemetry.md`):
//! `cargo run -p fabric-api --example telemetry_example`.

use fabric_api::*;
use std::collections::BTreeMap;
use topo::LinkId;

fn main() {
    let f = topo::generators::fat_tree(2, topo::Rate::gbps(100)).unwrap();
    let info = FabricInfo::from_topo(&f, 8);
    print!("{}", Frame::Fabric(info.clone()).to_json_line());
    let n = info.ports.len();
    let src = Source {
        kind: SourceKind::Sim,
        name: "incast".into(),
    };
    let mut s = Snapshot::new(42, Timestamp::virtual_ns(420_000), src);
    // One flow host0 → host1: ports 0, 4, 8, 11, 7, 3 send its data; their peers receive it.
    let col = |nz: &[(usize, u64)]| {
        let mut v = vec![0; n];
        for &(i, x) in nz {
            v[i] = x;
        }
        Column::from(v)
    };
    let path = [0, 4, 8, 11, 7, 3];
    let fwd = |x: u64| path.iter().map(|&p| (p, x)).collect::<Vec<_>>();
    let back = |x: u64| path.iter().map(|&p| (p ^ 1, x)).collect::<Vec<_>>();
    let both = |a: u64, b: u64| [fwd(a), back(b)].concat();
    let peer_both = |a: u64, b: u64| [back(a), fwd(b)].concat();
    let c = &mut s.counters;
    c.tx_bytes = Some(col(&both(4_200_000, 66_000)));
    c.rx_bytes = Some(col(&peer_both(4_198_976, 66_000)));
    c.tx_pkts = Some(col(&both(1_025, 1_000)));
    c.rx_pkts = Some(col(&peer_both(1_024, 1_000)));
    c.drops_buffer = Some(Column::zeros(n));
    c.drops_failure = Some(Column::zeros(n));
    c.drops_no_route = Some(Column::zeros(n));
    c.ecn_marks = Some(col(&[(3, 37)]));
    c.trims = Some(Column::zeros(n));
    c.pfc_tx = BTreeMap::from([(3, col(&[(2, 12)]))]);
    c.pfc_rx = BTreeMap::from([(3, col(&[(3, 12)]))]);
    c.paused_ns = Some(col(&[(3, 18_500)]));
    s.gauges.queue_bytes = BTreeMap::from([(3, col(&[(3, 61_440)]))]);
    s.flows = Some(vec![FlowSample {
        id: 0,
        src: 0,
        dst: 1,
        rate_bps: Some(48_500_000_000),
        window_bytes: None,
        cnps: 9,
        nacks: 0,
        rtt_ns: Some(5_200),
        bytes_done: 4_000_000,
        finished: false,
    }]);
    s.sum_ports_into_totals();
    s.totals.cnps = 9;
    s.totals.flows_active = 1;
    print!("{}", Frame::Snapshot(s).to_json_line());
    let t = Timestamp::virtual_ns(425_000);
    let kinds = [
        EventKind::LinkDown {
            link: LinkId(1),
            detected_by: Detector::Injected,
            detect_ns: Some(1_000),
        },
        EventKind::LinkUp {
            link: LinkId(1),
            detected_by: Detector::Carrier,
        },
        EventKind::SwitchDown {
            node: 3,
            detected_by: Detector::Injected,
        },
        EventKind::SwitchUp {
            node: 3,
            detected_by: Detector::Injected,
        },
        EventKind::Reroute {
            links: vec![LinkId(1)],
            switches_changed: Some(vec![2, 3]),
            unreachable_pairs: Some(0),
            repaired_ns: 1_150,
        },
        EventKind::PfcStorm {
            port: 2,
            priority: 3,
        },
        EventKind::PfcStormRestored {
            port: 2,
            priority: 3,
            lasted_ns: 2_000_000,
        },
        EventKind::Deadlock { ports: vec![1, 2] },
        EventKind::FlowFinished {
            flow: 0,
            src: 0,
            dst: 1,
            bytes: 4_194_304,
            fct_ns: 351_000,
        },
        EventKind::Miswiring {
            port: 0,
            expected: "leaf0".into(),
            found: "leaf1".into(),
        },
    ];
    for what in kinds {
        print!(
            "{}",
            Frame::Event(Event {
                seq: 43,
                time: t,
                what
            })
            .to_json_line()
        );
    }
}
