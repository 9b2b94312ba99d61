//! Invariants every sender must keep, whatever the event sequence: no NaN, a positive
//! rate never above line rate, a window (if any) that is positive, deadlines never in
//! the past, and time only moving forward (the harness enforces it and checks that
//! every deadline it is given is at or after `now`).

use cc_algos::{Ack, Bytes, CcKind, Duration, Instant, IntHop, PathParams, Rate, SenderCc};
use proptest::prelude::*;

#[derive(Clone, Debug)]
enum Ev {
    Send(u64),
    Ack {
        bytes: u64,
        ecn: bool,
        delay_ns: Option<u64>,
    },
    AckInt {
        bytes: u64,
        q: u64,
        tx: u64,
    },
    Cnp,
    Nack(u64),
    Credit(u64),
    Advance(u64),
}

fn ev() -> impl Strategy<Value = Ev> {
    prop_oneof![
        (1u64..100_000).prop_map(Ev::Send),
        (
            0u64..100_000,
            any::<bool>(),
            proptest::option::of(0u64..1_000_000)
        )
            .prop_map(|(bytes, ecn, delay_ns)| Ev::Ack {
                bytes,
                ecn,
                delay_ns
            }),
        (0u64..100_000, 0u64..2_000_000, 0u64..2_000_000).prop_map(|(bytes, q, tx)| Ev::AckInt {
            bytes,
            q,
            tx
        }),
        Just(Ev::Cnp),
        (1u64..100_000).prop_map(Ev::Nack),
        (1u64..1_000_000).prop_map(Ev::Credit),
        (1u64..2_000_000).prop_map(Ev::Advance), // up to 2 µs in ns... ×1000 below
    ]
}

const KINDS: &str = cc_algos::CcKind::NAMES;

proptest! {
    #![proptest_config(ProptestConfig { cases: 128, ..ProptestConfig::default() })]
    #[test]
    fn every_sender_stays_sane(kind in 0..KINDS.split(", ").count(), rate_g in 1u64..800,
                               evs in proptest::collection::vec(ev(), 1..300)) {
        let name = KINDS.split(", ").nth(kind).unwrap();
        let line = Rate::gbps(rate_g);
        let path = PathParams { line_rate: line, base_rtt: Duration::micros(8), mtu: Bytes(4150) };
        let mut cc = name.parse::<CcKind>().unwrap().build(&path).unwrap();
        let mut now = Instant::ZERO;
        let (mut ts, mut txb) = (0u64, 0u64);
        for e in evs {
            match e {
                Ev::Send(b) => cc.on_send(now, Bytes(b)),
                Ev::Ack { bytes, ecn, delay_ns } => cc.on_ack(now, Ack {
                    acked: Bytes(bytes),
                    ecn_echo: ecn,
                    rtt: delay_ns.map(|d| path.base_rtt + Duration::nanos(d)),
                }),
                Ev::AckInt { bytes, q, tx } => {
                    ts += 1_000;
                    txb += tx;
                    let hop = IntHop { qlen: Bytes(q), tx_bytes: txb, ts: Instant::ZERO + Duration::nanos(ts), link_rate: line, port: None };
                    cc.on_ack_int(now, Ack { acked: Bytes(bytes), ecn_echo: false, rtt: None }, &[hop]);
                }
                Ev::Cnp => cc.on_cnp(now),
                Ev::Nack(b) => cc.on_nack(now, Bytes(b)),
                Ev::Credit(b) => cc.on_credit(now, Bytes(b)),
                Ev::Advance(ps) => {
                    let end = now + Duration::picos(ps * 1000);
                    while let Some(t) = cc.next_timeout().filter(|&t| t <= end) {
                        prop_assert!(t >= now, "{name}: deadline {t} before now {now}");
                        now = t;
                        cc.on_timeout(now);
                    }
                    now = end;
                }
            }
            let r = cc.rate();
            prop_assert!(r > Rate::ZERO && r <= line, "{name}: rate {r}");
            if let Some(w) = cc.window() {
                prop_assert!(w > Bytes::ZERO, "{name}: window 0");
            }
            if let Some(t) = cc.next_timeout() {
                prop_assert!(t >= now, "{name}: stale deadline {t} at {now}");
            }
            for (k, v) in cc.metrics().extra {
                prop_assert!(!v.is_nan(), "{name}: metric {k} is NaN");
            }
        }
    }
}
