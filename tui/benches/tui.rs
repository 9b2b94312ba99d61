//! `cargo bench -p tui --bench tui [-- frame|aggregate|hour]`: the figures of docs/tui.md.
//!
//! * frame — draw time at 200×50 for the 8-plane k=40 fabric (102,400 GPUs, 358,400
//!   links) in each view, against a baseline of drawing the same screen for a 16-link
//!   fabric (what ratatui itself costs).
//! * aggregate — the source-thread cost of turning two snapshots into a sample (off the
//!   UI thread), at 10k and 358k links.
//! * hour — an hour of 1 s snapshots at 10k links through recorder + aggregator + app:
//!   resident memory before/after and the recording's size.
//!
//! Counters are synthetic but deterministic (a utilisation pattern that moves over time,
//! drops on one link, PFC on a few) on real `topo` fabrics.

use fabric_api::{Column, FabricInfo, Frame, Snapshot, Source, SourceKind, Timestamp};
use fabric_tui::app::{Msg, Options, SourceStatus};
use fabric_tui::ingest::Aggregator;
use fabric_tui::source::Recorder;
use fabric_tui::{Action, App, FabricView};
use ratatui::Terminal;
use ratatui::backend::TestBackend;
use std::time::{Duration, Instant};

fn snapshot(info: &FabricInfo, k: u64, dt_ns: u64) -> Snapshot {
    let n = info.ports.len();
    let src = Source {
        kind: SourceKind::Sim,
        name: "bench".into(),
    };
    let mut s = Snapshot::new(k, Timestamp::virtual_ns(k * dt_ns), src);
    let secs = dt_ns as f64 / 1e9;
    // cumulative bytes: each port runs at a utilisation that drifts with k
    let tx: Vec<u64> = (0..n as u64)
        .map(|p| {
            let u = ((p.wrapping_mul(2_654_435_761) % 1000) as f64 / 1000.0).powi(2);
            let speed = info.ports[p as usize].speed_bps as f64 / 8.0;
            (0..k)
                .map(|j| (u * (0.6 + 0.4 * (((j + p) % 10) as f64 / 10.0)) * speed * secs) as u64)
                .sum()
        })
        .collect();
    s.counters.tx_pkts = Some(Column::from(
        tx.iter().map(|b| b / 4096).collect::<Vec<_>>(),
    ));
    s.counters.tx_bytes = Some(Column::from(tx));
    let mut drops = vec![0u64; n];
    drops[n / 3] = 100 * k;
    s.counters.drops_buffer = Some(Column::from(drops));
    s.counters.pfc_tx.insert(
        3,
        Column::from(
            (0..n as u64)
                .map(|p| if p % 97 == 0 { 10 * k } else { 0 })
                .collect::<Vec<_>>(),
        ),
    );
    s.sum_ports_into_totals();
    s
}

fn app_for(f: &topo::Fabric) -> (App, Aggregator, FabricView, FabricInfo) {
    let info = FabricInfo::from_topo(f, 8);
    let (mut agg, view) = Aggregator::new(info.clone());
    let mut app = App::new(view.clone(), Options::default());
    app.update(Msg::Status(SourceStatus::Live("bench".into())));
    for k in 0..3 {
        if let Some(s) = agg.snapshot(snapshot(&info, k, 100_000_000), &view) {
            app.update(Msg::Sample(s));
        }
    }
    (app, agg, view, info)
}

fn time_frames(app: &mut App, n: usize) -> (Duration, Duration) {
    app.update(Msg::Resize(200, 50));
    let mut term = Terminal::new(TestBackend::new(200, 50)).unwrap();
    let mut v: Vec<Duration> = (0..n)
        .map(|_| {
            let t = Instant::now();
            term.draw(|f| fabric_tui::ui::render(f, app)).unwrap();
            t.elapsed()
        })
        .collect();
    v.sort();
    (v[n / 2], v[n * 99 / 100])
}

fn frame() {
    let big = topo::generators::multi_plane_spec(
        topo::generators::fat_tree_spec(40, topo::Rate::gbps(400)),
        8,
    )
    .build("8-plane k=40")
    .unwrap();
    let small = topo::generators::leaf_spine(4, 2, 2, topo::Rate::gbps(400)).unwrap();
    println!("frame time at 200×50 (median / p99 over 200 frames)");
    println!(
        "| view | {} links | {} links (baseline) |",
        big.num_links(),
        small.num_links()
    );
    println!("|---|---|---|");
    let (mut a_small, ..) = app_for(&small);
    let (mut a_big, ..) = app_for(&big);
    let views: [(&str, &[Action]); 5] = [
        ("heat map, one plane", &[]),
        ("heat map, 8 planes side by side", &[Action::SideBySide]),
        (
            "links table (sorted by util)",
            &[Action::SideBySide, Action::NextView],
        ),
        ("links table, filter util>90 and pfc>0", &[Action::Filter]),
        ("flows + charts", &[Action::NextView]),
    ];
    for (name, acts) in views {
        for a in [&mut a_small, &mut a_big] {
            for x in acts {
                a.update(Msg::Action(*x));
            }
            if acts == [Action::Filter] {
                for c in "util>90 and pfc>0\n".chars() {
                    let code = if c == '\n' {
                        crossterm::event::KeyCode::Enter
                    } else {
                        crossterm::event::KeyCode::Char(c)
                    };
                    a.update(Msg::Key(crossterm::event::KeyEvent::from(code)));
                }
            }
        }
        let (sm, sp) = time_frames(&mut a_small, 200);
        let (bm, bp) = time_frames(&mut a_big, 200);
        println!("| {name} | {bm:.2?} / {bp:.2?} | {sm:.2?} / {sp:.2?} |");
    }
}

fn aggregate() {
    println!("aggregation per snapshot pair (source thread), median of 20");
    for (name, f) in [
        (
            "fat-tree k=24 (10,368 links)",
            topo::generators::fat_tree(24, topo::Rate::gbps(400)).unwrap(),
        ),
        (
            "8-plane k=40 (358,400 links)",
            topo::generators::multi_plane_spec(
                topo::generators::fat_tree_spec(40, topo::Rate::gbps(400)),
                8,
            )
            .build("x")
            .unwrap(),
        ),
    ] {
        let info = FabricInfo::from_topo(&f, 8);
        let (mut agg, view) = Aggregator::new(info.clone());
        let snaps: Vec<Snapshot> = (0..21).map(|k| snapshot(&info, k, 100_000_000)).collect();
        let mut v = Vec::new();
        for s in snaps {
            let t = Instant::now();
            let _ = agg.snapshot(s, &view);
            v.push(t.elapsed());
        }
        v.remove(0);
        v.sort();
        println!("| {name} | {:.2?} |", v[v.len() / 2]);
    }
}

fn rss_kib() -> u64 {
    let s = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    s.lines()
        .find(|l| l.starts_with("VmRSS:"))
        .and_then(|l| l.split_whitespace().nth(1)?.parse().ok())
        .unwrap_or(0)
}

fn hour() {
    let f = topo::generators::fat_tree(24, topo::Rate::gbps(400)).unwrap();
    let (mut app, mut agg, view, info) = app_for(&f);
    let path = std::env::temp_dir().join(format!("fabric-tui-hour-{}.rec", std::process::id()));
    let mut rec = Recorder::new(&path);
    rec.frame(&Frame::Fabric(info.clone())).unwrap();
    let before = rss_kib();
    let t = Instant::now();
    for k in 0..3600 {
        let s = snapshot(&info, k, 1_000_000_000);
        let frame = Frame::Snapshot(s);
        rec.frame(&frame).unwrap();
        let Frame::Snapshot(s) = frame else {
            unreachable!()
        };
        if let Some(x) = agg.snapshot(s, &view) {
            app.update(Msg::Sample(x));
        }
    }
    rec.finish().unwrap();
    let size = std::fs::metadata(&path).map_or(0, |m| m.len());
    println!(
        "an hour at 1 s, {} links: RSS {} MiB → {} MiB, recording {:.1} MiB, {:.1?} to process",
        f.num_links(),
        before / 1024,
        rss_kib() / 1024,
        size as f64 / (1 << 20) as f64,
        t.elapsed()
    );
    std::fs::remove_file(&path).ok();
}

fn main() {
    let which: Vec<String> = std::env::args()
        .skip(1)
        .filter(|a| !a.starts_with('-'))
        .collect();
    let run = |n: &str| which.is_empty() || which.iter().any(|w| w == n);
    if run("frame") {
        frame();
    }
    if run("aggregate") {
        aggregate();
    }
    if run("hour") {
        hour();
    }
}
