//! `cargo bench -p tui --bench tui [-- frame|aggregate|hour] [WORD…]`: the figures of
//! docs/tui.md. Any other word keeps only the frame views whose name contains it
//! (`-- frame side` times only the 8 planes side by side).
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

/// Cumulative counters that grow by a drifting utilisation pattern each step.
struct Gen {
    tx: Vec<u64>,
    k: u64,
    dt_ns: u64,
}

impl Gen {
    fn new(info: &FabricInfo, dt_ns: u64) -> Gen {
        Gen {
            tx: vec![0; info.ports.len()],
            k: 0,
            dt_ns,
        }
    }

    fn next(&mut self, info: &FabricInfo) -> Snapshot {
        let n = info.ports.len();
        let k = self.k;
        let src = Source {
            kind: SourceKind::Sim,
            name: "bench".into(),
        };
        let mut s = Snapshot::new(k, Timestamp::virtual_ns(k * self.dt_ns), src);
        let secs = self.dt_ns as f64 / 1e9;
        for (p, tx) in self.tx.iter_mut().enumerate() {
            let p = p as u64;
            let u = ((p.wrapping_mul(2_654_435_761) % 1000) as f64 / 1000.0).powi(2);
            let speed = info.ports[p as usize].speed_bps as f64 / 8.0;
            *tx += (u * (0.6 + 0.4 * (((k + p) % 10) as f64 / 10.0)) * speed * secs) as u64;
        }
        s.counters.tx_pkts = Some(Column::from(
            self.tx.iter().map(|b| b / 4096).collect::<Vec<_>>(),
        ));
        s.counters.tx_bytes = Some(Column::from(self.tx.clone()));
        let mut drops = vec![0u64; n];
        drops[n / 3] = 100 * k;
        s.counters.drops_buffer = Some(Column::from(drops));
        let pfc: Vec<u64> = (0..n as u64)
            .map(|p| if p % 97 == 0 { 10 * k } else { 0 })
            .collect();
        s.counters.pfc_tx.insert(3, Column::from(pfc));
        s.sum_ports_into_totals();
        self.k += 1;
        s
    }
}

fn app_for(
    f: &topo::Fabric,
) -> (
    App,
    Aggregator,
    FabricView,
    FabricInfo,
    Vec<fabric_tui::Sample>,
) {
    let info = FabricInfo::from_topo(f, 8);
    let (mut agg, view) = Aggregator::new(info.clone());
    let mut app = App::new(view.clone(), Options::default());
    app.update(Msg::Status(SourceStatus::Live("bench".into())));
    let mut g = Gen::new(&info, 100_000_000);
    let mut samples = Vec::new();
    for _ in 0..6 {
        if let Some(s) = agg.snapshot(g.next(&info), &view) {
            samples.push(s.clone());
            app.update(Msg::Sample(s));
        }
    }
    (app, agg, view, info, samples)
}

/// Median and p99 frame time: `App::prepare` (the heat map's bins) and drawing. With
/// `fresh`, a new sample arrives before every frame, so the frame bins it afresh (taking
/// the message, before the clock starts, is not timed); else the same data is redrawn
/// (a key press, a resize).
fn time_frames(app: &mut App, n: usize, fresh: &[fabric_tui::Sample]) -> (Duration, Duration) {
    app.update(Msg::Resize(200, 50));
    let mut term = Terminal::new(TestBackend::new(200, 50)).unwrap();
    let mut v: Vec<Duration> = (0..n)
        .map(|i| {
            if !fresh.is_empty() {
                let mut s = fresh[i % fresh.len()].clone();
                s.at_ns += 1_000_000_000 * (i as u64 + 1);
                app.update(Msg::Sample(s));
            }
            let t = Instant::now();
            app.prepare();
            term.draw(|f| fabric_tui::ui::render(f, app)).unwrap();
            t.elapsed()
        })
        .collect();
    v.sort();
    (v[n / 2], v[n * 99 / 100])
}

fn frame(only: &[String]) {
    let big = topo::generators::multi_plane_spec(
        topo::generators::fat_tree_spec(40, topo::Rate::gbps(400)),
        8,
    )
    .build("8-plane k=40")
    .unwrap();
    let small = topo::generators::leaf_spine(4, 2, 2, topo::Rate::gbps(400)).unwrap();
    println!(
        "frame time at 200×50, median / p99: redraw of the same data | first frame after a new sample"
    );
    println!(
        "| view | {} links, redraw | {} links, new sample | {} links, redraw | new sample |",
        big.num_links(),
        big.num_links(),
        small.num_links()
    );
    println!("|---|---|---|---|---|");
    let (mut a_small, _, _, _, s_small) = app_for(&small);
    let (mut a_big, _, _, _, s_big) = app_for(&big);
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
        let timed = only.is_empty() || only.iter().any(|w| name.contains(w.as_str()));
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
        if !timed {
            continue; // its actions still apply: views build on the ones before
        }
        let (sm, sp) = time_frames(&mut a_small, 200, &[]);
        let (bm, bp) = time_frames(&mut a_big, 200, &[]);
        let (sfm, sfp) = time_frames(&mut a_small, 200, &s_small);
        let (bfm, bfp) = time_frames(&mut a_big, 100, &s_big);
        println!(
            "| {name} | {bm:.2?} / {bp:.2?} | {bfm:.2?} / {bfp:.2?} | {sm:.2?} / {sp:.2?} | {sfm:.2?} / {sfp:.2?} |"
        );
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
        let mut g = Gen::new(&info, 100_000_000);
        let snaps: Vec<Snapshot> = (0..21).map(|_| g.next(&info)).collect();
        let mut v = Vec::new();
        for s in snaps {
            let t = Instant::now();
            let _ = agg.snapshot(s, &view);
            v.push(t.elapsed());
        }
        v.remove(0);
        v.sort();
        println!(
            "| {name} ({} links) | {:.2?} |",
            f.num_links(),
            v[v.len() / 2]
        );
        rows_jobs(&view, agg.snapshot(g.next(&info), &view).unwrap());
        lookups_vs_columns(&info, &mut g);
    }
}

/// fabric_api's two ways to get every port's rates: a lookup per port and column
/// (`Interval::port`) against one pass per column (`Interval::deltas`), on snapshots as
/// built in memory (dense columns) and as read back from JSON; median of 10.
fn lookups_vs_columns(info: &FabricInfo, g: &mut Gen) {
    let (a, b) = (g.next(info), g.next(info));
    let json = |s: &Snapshot| match Frame::from_json_line(
        Frame::Snapshot(s.clone()).to_json_line().as_bytes(),
    ) {
        Ok(Frame::Snapshot(s)) => s,
        other => panic!("{other:?}"),
    };
    let (ja, jb) = (json(&a), json(&b));
    for (what, a, b) in [("in memory", &a, &b), ("from JSON", &ja, &jb)] {
        let iv = fabric_api::Interval::new(info, a, b).unwrap();
        let n = info.ports.len();
        let median = |f: &dyn Fn() -> f64| {
            let mut v: Vec<Duration> = (0..10)
                .map(|_| {
                    let t = Instant::now();
                    std::hint::black_box(f());
                    t.elapsed()
                })
                .collect();
            v.sort();
            v[5]
        };
        let per_port = median(&|| (0..n).map(|i| iv.port(i).utilisation.unwrap_or(0.0)).sum());
        let columns = median(&|| {
            let d = iv.deltas();
            (0..n).map(|i| d.port(i).utilisation.unwrap_or(0.0)).sum()
        });
        println!(
            "|   every port's rates, {what}: per-port lookups {per_port:.2?}, one pass per column {columns:.2?} |"
        );
    }
}

/// The rows worker's cost for one sample (off the UI thread): a filter, a sort by
/// another column, both; median of 20.
fn rows_jobs(view: &FabricView, sample: fabric_tui::Sample) {
    use fabric_tui::rows::{Job, Key, Query};
    use fabric_tui::table::SortKey;
    let fabric = std::sync::Arc::new(view.clone());
    let sample = std::sync::Arc::new(sample);
    let filter = Some("util>90 and pfc>0".parse().unwrap());
    for (what, query) in [
        (
            "filter util>90 and pfc>0",
            Query {
                filter: filter.clone(),
                ..Query::default()
            },
        ),
        (
            "sort by rate",
            Query {
                sort: SortKey::Gbps,
                ..Query::default()
            },
        ),
        (
            "faults only, sort by PFC/s",
            Query {
                faults_only: true,
                sort: SortKey::Pfc,
                ..Query::default()
            },
        ),
    ] {
        let job = Job {
            key: Key {
                sample: 0,
                query: 0,
            },
            fabric: fabric.clone(),
            sample: sample.clone(),
            query,
        };
        let mut v: Vec<Duration> = (0..20)
            .map(|_| {
                let t = Instant::now();
                std::hint::black_box(job.run());
                t.elapsed()
            })
            .collect();
        v.sort();
        println!("|   rows worker: {what} | {:.2?} |", v[v.len() / 2]);
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
    let (mut app, mut agg, view, info, _) = app_for(&f);
    let mut g = Gen::new(&info, 1_000_000_000);
    let path = std::env::temp_dir().join(format!("fabric-tui-hour-{}.rec", std::process::id()));
    let mut rec = Recorder::create(&path).unwrap();
    rec.frame(&Frame::Fabric(info.clone())).unwrap();
    let before = rss_kib();
    let t = Instant::now();
    for k in 0..3600 {
        let _ = k;
        let s = g.next(&info);
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

/// Write a recording of `secs` seconds at 10 Hz on a fat-tree k=24 (10,368 links), for
/// the CPU measurement of the real binary (docs/tui.md).
fn record(path: &str, secs: u64) {
    let f = topo::generators::fat_tree(24, topo::Rate::gbps(400)).unwrap();
    let info = FabricInfo::from_topo(&f, 8);
    let mut rec = Recorder::create(std::path::Path::new(path)).unwrap();
    rec.frame(&Frame::Fabric(info.clone())).unwrap();
    let mut g = Gen::new(&info, 100_000_000);
    for _ in 0..secs * 10 {
        rec.frame(&Frame::Snapshot(g.next(&info))).unwrap();
    }
    rec.finish().unwrap();
    println!("wrote {path}: {} links, {secs} s at 10 Hz", f.num_links());
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    if let Some(i) = args.iter().position(|a| a == "record") {
        let secs = args.get(i + 2).and_then(|s| s.parse().ok()).unwrap_or(60);
        return record(&args[i + 1], secs);
    }
    let which: Vec<String> = std::env::args()
        .skip(1)
        .filter(|a| !a.starts_with('-'))
        .collect();
    const SECTIONS: [&str; 3] = ["frame", "aggregate", "hour"];
    let (sections, only): (Vec<String>, Vec<String>) = which
        .into_iter()
        .partition(|w| SECTIONS.contains(&w.as_str()));
    let run = |n: &str| sections.is_empty() || sections.iter().any(|w| w == n);
    if run("frame") {
        frame(&only);
    }
    if run("aggregate") {
        aggregate();
    }
    if run("hour") {
        hour();
    }
}
