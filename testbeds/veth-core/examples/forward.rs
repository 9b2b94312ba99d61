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
use veth_core::wire::ib::{BthRepr, DEFAULT_PKEY, opcode};
use veth_core::wire::ipv4::Ecn;
use veth_core::wire::roce;

fn frame(payload: usize) -> Vec<u8> {
    let r = roce::Repr {
        eth_dst: [2, 0, 0, 0, 0, 1],
        eth_src: [2, 0, 0, 0, 0, 2],
        ip_src: Ipv4Addr::new(10, 0, 0, 9),
        ip_dst: Ipv4Addr::new(10, 0, 0, 2),
        dscp: 26,
        ecn: Ecn::Ect0,
        ttl: 64,
        ident: 0,
        udp_src: 1000,
        bth: BthRepr {
            opcode: opcode::RC_SEND_ONLY,
            solicited: false,
            pad_count: 0,
            pkey: DEFAULT_PKEY,
            dest_qp: 1,
            ack_req: false,
            psn: 0,
        },
        aeth: None,
        payload_len: payload,
    };
    let mut b = vec![0u8; r.buffer_len()];
    r.emit(&mut b, &vec![0u8; payload]);
    b
}

fn main() {
    let mut args = std::env::args().skip(1);
    let frames: u64 = args
        .next()
        .and_then(|a| a.parse().ok())
        .unwrap_or(1_000_000);
    let payload: usize = args.next().and_then(|a| a.parse().ok()).unwrap_or(1024);
    let mut sw = Switch::new(SwitchConfig {
        port_macs: vec![[2, 0, 0, 0, 1, 0], [2, 0, 0, 0, 1, 1]],
        link_rate: Rate::gbps(10_000),
        buffer: Bytes(64 << 20),
        ecn: Some(RedEcn::new(Bytes(1 << 30), Bytes(2 << 30), 0.01).expect("valid thresholds")),
        pfc: None,
        pfc_priorities: 0x3f,
        trim: None,
        routes: HashMap::from([(Ipv4Addr::new(10, 0, 0, 2), 1)]),
        next_hop_macs: vec![Some([2, 0, 0, 0, 0, 9]), Some([2, 0, 0, 0, 0, 2])],
        seed: 1,
        pacing_burst: Duration::micros(10),
    });
    let f = frame(payload);
    let t0 = std::time::Instant::now();
    let mut out = 0u64;
    let mut now = Instant::ZERO;
    for _ in 0..frames {
        now = now + Duration::nanos(100);
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
