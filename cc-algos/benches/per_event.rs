//! Cost of one event in each controller, so the simulator can budget per-packet CPU.
//!
//! `cargo bench -p cc-algos --bench per_event`. DCTCP's `on_ack` (a few float ops) is
//! the baseline the others are compared against in the same run.

use cc_algos::{
    Ack, Bytes, CcKind, Duration, EvPolicyKind, Instant, IntHop, PathParams, Rate, RedEcn,
    SenderCc, uec::EvConfig,
};
use criterion::{Criterion, criterion_group, criterion_main};
use std::hint::black_box;

fn path() -> PathParams {
    PathParams {
        line_rate: Rate::gbps(400),
        base_rtt: Duration::micros(10),
        mtu: Bytes(4150),
    }
}

fn per_ack(c: &mut Criterion) {
    let mut g = c.benchmark_group("on_ack");
    for name in ["dctcp", "nscc", "rccc"] {
        let mut cc = name.parse::<CcKind>().unwrap().build(&path()).unwrap();
        let mut t = Instant::ZERO;
        let mut i = 0u64;
        g.bench_function(name, |b| {
            b.iter(|| {
                i += 1;
                t += Duration::nanos(10);
                cc.on_send(t, Bytes(4086));
                cc.on_ack(
                    t,
                    black_box(Ack {
                        acked: Bytes(4086),
                        ecn_echo: i.is_multiple_of(7),
                        rtt: Some(Duration::micros(10) + Duration::nanos(i % 5000)),
                    }),
                );
                black_box(cc.window())
            })
        });
    }
    let mut cc = CcKind::Hpcc.build(&path()).unwrap();
    let mut k = 0u64;
    g.bench_function("hpcc (on_ack_int, 5 hops)", |b| {
        b.iter(|| {
            k += 1;
            let hops: [IntHop; 5] = core::array::from_fn(|h| IntHop {
                qlen: Bytes((k * 37 + h as u64 * 1000) % 200_000),
                tx_bytes: k * 4150,
                ts: Instant::ZERO + Duration::nanos(k * 83),
                link_rate: Rate::gbps(400),
                port: Some(h as u32),
            });
            cc.on_send(Instant::ZERO, Bytes(4086));
            cc.on_ack_int(
                Instant::ZERO,
                Ack {
                    acked: Bytes(4086),
                    ecn_echo: false,
                    rtt: None,
                },
                &hops,
            );
            black_box(cc.window())
        })
    });
    g.finish();
}

fn dcqcn(c: &mut Criterion) {
    let mut cc = CcKind::Dcqcn(Default::default()).build(&path()).unwrap();
    let mut t = Instant::ZERO;
    c.bench_function("dcqcn on_cnp + next timer expiry", |b| {
        b.iter(|| {
            t += Duration::micros(50);
            cc.on_cnp(t);
            if let Some(d) = cc.next_timeout() {
                cc.on_timeout(d);
                t = t.max(d);
            }
            black_box(cc.rate())
        })
    });
}

fn switch_and_ev(c: &mut Criterion) {
    let red = RedEcn::dcqcn_paper();
    let mut q = 0u64;
    c.bench_function("red should_mark", |b| {
        b.iter(|| {
            q = (q + 7919) % 300_000;
            black_box(red.should_mark(Bytes(q), 0.5))
        })
    });
    for kind in [EvPolicyKind::Oblivious, EvPolicyKind::Mixed] {
        let mut p = EvConfig::new(256, 1).build(kind).unwrap();
        c.bench_function(&format!("ev next+feedback {kind:?}"), |b| {
            b.iter(|| {
                let ev = p.next_ev();
                p.on_feedback(ev, cc_algos::PathSignal::Good);
                black_box(ev)
            })
        });
    }
}

criterion_group!(benches, per_ack, dcqcn, switch_and_ev);
criterion_main!(benches);
