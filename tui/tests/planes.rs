//! Every plane side by side (`p`) on a real 3-plane fat-tree (k=8, 3-tier: pod rows carry
//! the faults inside their pods), through new samples, a filter and a resize: colours and
//! glyphs are snapshots, so the heat map's bins, kept between frames, are checked against
//! the screens binned afresh.

mod common;

use fabric_tui::app::{Msg, Options, SourceStatus};
use fabric_tui::{Action, App, FabricView, Sample};
use ratatui::Terminal;
use ratatui::backend::TestBackend;

fn view() -> FabricView {
    let f = topo::generators::multi_plane_spec(
        topo::generators::fat_tree_spec(8, topo::Rate::gbps(400)),
        3,
    )
    .build("3-plane k=8")
    .unwrap();
    FabricView::from_topo(&f)
}

/// Sample `k`: a utilisation pattern that moves with `k`; a link down inside a pod of
/// plane 1, drops on a pod × core link of plane 2, PFC inside a pod of plane 0 (from
/// `k` = 1 on).
fn sample(v: &FabricView, k: u64) -> Sample {
    let mut s = Sample::idle(v, (10 + k) * 1_000_000_000);
    for (i, l) in s.links.iter_mut().enumerate() {
        let h = (i as u64 * 2_654_435_761 + k * 97) % 1000;
        l.util = h as f32 / 1000.0;
        l.bps = l.util * 400e9;
    }
    let pod_link = |plane: usize, pod: usize| v.planes[plane].pods[pod].1.links[1].link as usize;
    s.links[pod_link(1, 2)].down = true;
    s.links[v.planes[2].top.links[5].link as usize].drops_per_s = 1000.0;
    if k > 0 {
        s.links[pod_link(0, 3)].pfc_per_s = 50.0;
    }
    s.finish(v);
    s
}

fn key_text(app: &mut App, text: &str) {
    for c in text.chars() {
        let code = match c {
            '\n' => crossterm::event::KeyCode::Enter,
            c => crossterm::event::KeyCode::Char(c),
        };
        app.update(Msg::Key(crossterm::event::KeyEvent::from(code)));
    }
}

fn buffer(app: &mut App, w: u16, h: u16) -> ratatui::buffer::Buffer {
    let t: Terminal<TestBackend> = common::draw(app, w, h);
    t.backend().buffer().clone()
}

#[test]
fn planes_side_by_side_through_samples_filter_and_resize() {
    let v = view();
    assert_eq!(v.planes.len(), 3);
    let mut app = App::new(v.clone(), Options::default());
    app.update(Msg::Status(SourceStatus::Live("fixture".into())));
    app.update(Msg::Sample(sample(&v, 0)));
    app.update(Msg::Action(Action::SideBySide));
    insta::assert_debug_snapshot!("side_by_side_first", buffer(&mut app, 160, 24));
    // a redraw of the same data gives the same screen
    assert_eq!(buffer(&mut app, 160, 24), buffer(&mut app, 160, 24));
    app.update(Msg::Sample(sample(&v, 1)));
    insta::assert_debug_snapshot!("side_by_side_new_sample", buffer(&mut app, 160, 24));
    app.update(Msg::Action(Action::Filter));
    key_text(&mut app, "util>50\n");
    insta::assert_debug_snapshot!("side_by_side_filtered", buffer(&mut app, 160, 24));
    insta::assert_debug_snapshot!("side_by_side_resized", buffer(&mut app, 130, 20));
    // 16 cores in 13 columns: two per bin, the hotter shown
    insta::assert_debug_snapshot!("side_by_side_narrow", buffer(&mut app, 45, 13));
}
