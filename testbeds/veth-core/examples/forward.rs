//! The userspace switch's per-frame work, without sockets: build a RoCEv2 frame, hand it
//! to the switch (parse, route, ECN decision, MAC rewrite) and take it out again (paced
//! at a link rate far above the offered load, so nothing waits). This is what the veth
//! forwarding benchmark's switch thread spends its user time on; run it under
//! `valgrind --tool=callgrind` for instruction counts that do not depend on the load of
//! the machine.
//!
//! `cargo run --release -p veth-core --example forward -- [FRAMES] [PAYLOAD]`

use std::collections::HashMap;
use std::net::Ipv4Addr;

use cc_algos::{Bytes, Duration, Instant, Rate, RedEcn};
use veth_core::switch::{Switch, SwitchConfig};
use veth_core::wire::roce;

fn frame(payload: usize) -> Vec<u8> {
    roce::Repr::send_only(
        Ipv4Addr::new(10, 0, 0, 9),
        Ipv4Addr::new(10, 0, 0, 2),
        1000,
        payload,
    )
    .to_frame()
}

fn main() {
    let mut args = std::env::args().skip(1);
    let frames: u64 = args
        .next()
        .and_then(|a| a.parse().ok())
        .unwrap_or(1_000_000);
    let payload: usize = args.next().and_then(|a| a.parse().ok()).unwrap_or(1024);
    let mut c = SwitchConfig::new(
        vec![[2, 0, 0, 0, 1, 0], [2, 0, 0, 0, 1, 1]],
        Rate::gbps(10_000),
        Bytes(64 << 20),
        HashMap::from([(Ipv4Addr::new(10, 0, 0, 2), vec![1])]),
    );
    c.ecn = Some(RedEcn::new(Bytes(1 << 30), Bytes(2 << 30), 0.01).expect("valid thresholds"));
    c.pfc_priorities = 0x3f;
    c.next_hop_macs = vec![Some([2, 0, 0, 0, 0, 9]), Some([2, 0, 0, 0, 0, 2])];
    c.pacing_burst = Duration::micros(10);
    let mut sw = Switch::new(c);
    let f = frame(payload);
    let t0 = std::time::Instant::now();
    let mut out = 0u64;
    let mut now = Instant::ZERO;
    for _ in 0..frames {
        now += Duration::nanos(100);
        sw.on_frame(now, 0, f.clone());
        while let Some(g) = sw.poll_transmit(now, 1) {
            out += g.len() as u64;
        }
    }
    let dt = t0.elapsed();
    println!(
        "{frames} frames of {} B: {:.1} ns per frame, {} B out",
        f.len(),
        dt.as_nanos() as f64 / frames as f64,
        out
    );
}
