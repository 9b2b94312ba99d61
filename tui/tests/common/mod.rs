//! A fixed, deterministic telemetry fixture on a real `topo` fabric (fat-tree k=8): two
//! snapshots one second apart whose counters give every link a known utilisation, drops
//! on one link, PFC pauses on a few, one link down, flows and events.
#![allow(dead_code)]

use fabric_api::{
    Column, Event, EventKind, FabricInfo, FlowSample, Frame, Snapshot, Source, SourceKind,
    Timestamp,
};
use fabric_tui::app::{Msg, Options, SourceStatus};
use fabric_tui::ingest::Aggregator;
use fabric_tui::theme::Theme;
use fabric_tui::{App, FabricView};
use ratatui::Terminal;
use ratatui::backend::TestBackend;

pub const DROP_LINK: usize = 200; // an aggregation–core link
pub const DOWN_LINK: usize = 150;

pub fn fabric() -> topo::Fabric {
    topo::generators::fat_tree(8, topo::Rate::gbps(400)).unwrap()
}

/// Utilisation of link `l` in the fixture (0..=1).
pub fn util(l: usize) -> f64 {
    let h = (l as u64).wrapping_mul(2_654_435_761) % 1000;
    (h as f64 / 1000.0).powi(2)
}

/// Frames: fabric map, snapshot 0 (t = 10 s), an event, snapshot 1 (t = 11 s), another
/// snapshot (t = 12 s) with drops that keep growing.
pub fn frames(with_drops: bool) -> Vec<Frame> {
    let f = fabric();
    let info = FabricInfo::from_topo(&f, 8);
    let n = info.ports.len();
    let src = Source {
        kind: SourceKind::Sim,
        name: "fixture".into(),
    };
    let mut out = vec![Frame::Fabric(info.clone())];
    for k in 0..3u64 {
        let t = 10_000_000_000 + k * 1_000_000_000;
        let mut s = Snapshot::new(k, Timestamp::virtual_ns(t), src.clone());
        let tx: Vec<u64> = (0..n)
            .map(|p| {
                let l = p / 2;
                let u = if p % 2 == 0 { util(l) } else { util(l) * 0.8 };
                (u * 400e9 / 8.0) as u64 * k
            })
            .collect();
        s.counters.tx_bytes = Some(Column::from(tx.clone()));
        s.counters.rx_bytes = Some(Column::from(tx));
        s.counters.tx_pkts = Some(Column::from(
            (0..n)
                .map(|p| 1000 * k * (p as u64 % 7 + 1))
                .collect::<Vec<_>>(),
        ));
        s.counters.ecn_marks = Some(Column::from(
            (0..n)
                .map(|p| if p % 5 == 0 { 50 * k } else { 0 })
                .collect::<Vec<_>>(),
        ));
        let mut drops = vec![0u64; n];
        if with_drops {
            drops[2 * DROP_LINK + 1] = 1500 * k;
        }
        s.counters.drops_buffer = Some(Column::from(drops));
        let pfc: Vec<u64> = (0..n)
            .map(|p| if p % 37 == 3 { 120 * k } else { 0 })
            .collect();
        s.counters.pfc_tx.insert(3, Column::from(pfc));
        s.counters.paused_ns = Some(Column::from(
            (0..n)
                .map(|p| if p % 37 == 3 { 30_000_000 * k } else { 0 })
                .collect::<Vec<_>>(),
        ));
        s.gauges.queue_bytes.insert(
            3,
            Column::from(
                (0..n)
                    .map(|p| (p as u64 * 977) % 300_000)
                    .collect::<Vec<_>>(),
            ),
        );
        if k > 0 {
            s.gauges.oper_down = vec![2 * DOWN_LINK as u32, 2 * DOWN_LINK as u32 + 1];
        }
        s.flows = Some(
            (0..6)
                .map(|i| FlowSample {
                    id: i,
                    src: i as u32,
                    dst: 100 + i as u32,
                    rate_bps: Some(50_000_000_000 + i * 10_000_000_000),
                    window_bytes: None,
                    cnps: i * 3 * k,
                    nacks: 0,
                    rtt_ns: Some(8_000 + i * 500),
                    bytes_done: i * 1_000_000 * k,
                    finished: i == 5,
                })
                .collect(),
        );
        s.sum_ports_into_totals();
        if k == 1 {
            out.push(Frame::Event(Event {
                seq: 1,
                time: Timestamp::virtual_ns(t - 400_000_000),
                what: EventKind::LinkDown {
                    link: topo::LinkId(DOWN_LINK as u32),
                    detected_by: fabric_api::Detector::Injected,
                    detect_ns: Some(50_000),
                },
            }));
            out.push(Frame::Event(Event {
                seq: 1,
                time: Timestamp::virtual_ns(t - 300_000_000),
                what: EventKind::Reroute {
                    links: vec![topo::LinkId(DOWN_LINK as u32)],
                    switches_changed: Some(vec![130, 131, 140]),
                    unreachable_pairs: Some(0),
                    repaired_ns: 2_400_000,
                },
            }));
        }
        out.push(Frame::Snapshot(s));
    }
    out
}

/// The messages the fixture produces through the real aggregator.
pub fn messages(with_drops: bool) -> (FabricView, Vec<Msg>) {
    let mut frames = frames(with_drops).into_iter();
    let Some(Frame::Fabric(info)) = frames.next() else {
        unreachable!()
    };
    let (mut agg, view) = Aggregator::new(info);
    let msgs = frames.flat_map(|f| agg.frame(f, &view)).collect();
    (view, msgs)
}

pub fn app(theme: Theme, with_drops: bool) -> App {
    let (view, msgs) = messages(with_drops);
    let mut app = App::new(
        view,
        Options {
            theme,
            ..Default::default()
        },
    );
    app.update(Msg::Status(SourceStatus::Live("fixture (seeded)".into())));
    for m in msgs {
        app.update(m);
    }
    app
}

pub fn draw(app: &mut App, w: u16, h: u16) -> Terminal<TestBackend> {
    app.update(Msg::Resize(w, h));
    let mut t = Terminal::new(TestBackend::new(w, h)).unwrap();
    app.prepare();
    t.draw(|f| fabric_tui::ui::render(f, app)).unwrap();
    t
}

pub fn text(t: &Terminal<TestBackend>) -> String {
    let b = t.backend().buffer();
    let mut s = String::new();
    for y in 0..b.area.height {
        for x in 0..b.area.width {
            s.push_str(b[(x, y)].symbol());
        }
        s.push('\n');
    }
    s
}
