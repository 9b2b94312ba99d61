//! Builders and proptest strategies shared by the integration tests.
#![allow(dead_code)]

use fabric_api::*;
use proptest::collection::vec;
use proptest::prelude::*;
use std::collections::BTreeMap;
use topo::LinkId;

/// A k=2 fat-tree map (small and complete).
pub fn small_info() -> FabricInfo {
    let f = topo::generators::fat_tree(2, topo::Rate::gbps(100)).unwrap();
    FabricInfo::from_topo(&f, 8)
}

/// A column of `n` values, dense or sparse, with unbounded values.
pub fn column(n: usize) -> impl Strategy<Value = Column> {
    let dense = vec(any::<u64>(), n).prop_map(Column::Dense);
    let sparse = vec((0..n.max(1), any::<u64>()), 0..=n).prop_map(move |mut kv| {
        kv.sort_unstable();
        kv.dedup_by_key(|e| e.0);
        let (idx, val) = kv
            .into_iter()
            .filter(|e| n > 0 && e.1 != 0)
            .map(|(i, v)| (i as u32, v))
            .unzip();
        Column::Sparse {
            n: n as u32,
            idx,
            val,
        }
    });
    prop_oneof![dense, sparse]
}

fn opt_col(n: usize) -> impl Strategy<Value = Option<Column>> {
    proptest::option::of(column(n))
}

fn prio_map(n: usize) -> impl Strategy<Value = BTreeMap<u8, Column>> {
    proptest::collection::btree_map(0u8..8, column(n), 0..3)
}

pub fn counters(n: usize) -> impl Strategy<Value = PortCounters> {
    (
        (
            opt_col(n),
            opt_col(n),
            opt_col(n),
            opt_col(n),
            opt_col(n),
            opt_col(n),
        ),
        (opt_col(n), opt_col(n), opt_col(n), opt_col(n), opt_col(n)),
        (prio_map(n), prio_map(n)),
    )
        .prop_map(
            |((a, b, c, d, e, f), (g, h, i, j, k), (pt, pr))| PortCounters {
                tx_bytes: a,
                rx_bytes: b,
                tx_pkts: c,
                rx_pkts: d,
                drops_buffer: e,
                drops_failure: f,
                drops_no_route: g,
                drops_kernel: h,
                ecn_marks: i,
                trims: j,
                paused_ns: k,
                pfc_tx: pt,
                pfc_rx: pr,
            },
        )
}

pub fn gauges(n: usize) -> impl Strategy<Value = PortGauges> {
    (
        prio_map(n),
        proptest::collection::btree_set(0..(n as u32).max(1), 0..4),
        opt_col(n),
    )
        .prop_map(move |(queue_bytes, down, speed_bps)| PortGauges {
            queue_bytes,
            oper_down: down.into_iter().filter(|&p| (p as usize) < n).collect(),
            speed_bps,
        })
}

pub fn flow() -> impl Strategy<Value = FlowSample> {
    (
        (
            any::<u64>(),
            any::<u32>(),
            any::<u32>(),
            any::<Option<u64>>(),
            any::<Option<u64>>(),
        ),
        (
            any::<u64>(),
            any::<u64>(),
            any::<Option<u64>>(),
            any::<u64>(),
            any::<bool>(),
        ),
    )
        .prop_map(
            |(
                (id, src, dst, rate_bps, window_bytes),
                (cnps, nacks, rtt_ns, bytes_done, finished),
            )| {
                FlowSample {
                    id,
                    src,
                    dst,
                    rate_bps,
                    window_bytes,
                    cnps,
                    nacks,
                    rtt_ns,
                    bytes_done,
                    finished,
                }
            },
        )
}

pub fn totals() -> impl Strategy<Value = Totals> {
    (vec(any::<u64>(), 17)).prop_map(|v| Totals {
        tx_bytes: v[0],
        rx_bytes: v[1],
        tx_pkts: v[2],
        rx_pkts: v[3],
        drops_buffer: v[4],
        drops_failure: v[5],
        drops_no_route: v[6],
        drops_kernel: v[7],
        ecn_marks: v[8],
        trims: v[9],
        pfc_tx: v[10],
        pfc_rx: v[11],
        paused_ns: v[12],
        cnps: v[13],
        nacks: v[14],
        flows_active: v[15],
        flows_finished: v[16],
    })
}

pub fn timestamp() -> impl Strategy<Value = Timestamp> {
    (any::<u64>(), any::<bool>()).prop_map(|(ns, w)| {
        if w {
            Timestamp::wall_ns(ns)
        } else {
            Timestamp::virtual_ns(ns)
        }
    })
}

pub fn snapshot(n: usize) -> impl Strategy<Value = Snapshot> {
    (
        any::<u64>(),
        timestamp(),
        ".{0,12}",
        counters(n),
        gauges(n),
        proptest::option::of(vec(flow(), 0..5)),
        totals(),
    )
        .prop_map(
            |(seq, time, name, counters, gauges, flows, totals)| Snapshot {
                seq,
                time,
                source: Source {
                    kind: SourceKind::Sim,
                    name,
                },
                counters,
                gauges,
                flows,
                totals,
            },
        )
}

fn detector() -> impl Strategy<Value = Detector> {
    prop_oneof![
        Just(Detector::Injected),
        Just(Detector::Carrier),
        Just(Detector::Probe),
        Just(Detector::Counters)
    ]
}

pub fn event_kind() -> impl Strategy<Value = EventKind> {
    prop_oneof![
        (any::<u32>(), detector(), any::<Option<u64>>()).prop_map(|(l, d, t)| {
            EventKind::LinkDown {
                link: LinkId(l),
                detected_by: d,
                detect_ns: t,
            }
        }),
        (any::<u32>(), detector()).prop_map(|(l, d)| EventKind::LinkUp {
            link: LinkId(l),
            detected_by: d
        }),
        (any::<u32>(), detector()).prop_map(|(node, d)| EventKind::SwitchDown {
            node,
            detected_by: d
        }),
        (any::<u32>(), detector()).prop_map(|(node, d)| EventKind::SwitchUp {
            node,
            detected_by: d
        }),
        (
            vec(any::<u32>(), 0..4),
            proptest::option::of(vec(any::<u32>(), 0..6)),
            any::<Option<u64>>(),
            any::<u64>()
        )
            .prop_map(|(l, s, u, r)| {
                EventKind::Reroute {
                    links: l.into_iter().map(LinkId).collect(),
                    switches_changed: s,
                    unreachable_pairs: u,
                    repaired_ns: r,
                }
            }),
        (any::<u32>(), any::<u8>())
            .prop_map(|(port, priority)| EventKind::PfcStorm { port, priority }),
        (any::<u32>(), any::<u8>(), any::<u64>()).prop_map(|(port, priority, lasted_ns)| {
            EventKind::PfcStormRestored {
                port,
                priority,
                lasted_ns,
            }
        }),
        vec(any::<u32>(), 0..6).prop_map(|ports| EventKind::Deadlock { ports }),
        (
            any::<u64>(),
            any::<u32>(),
            any::<u32>(),
            any::<u64>(),
            any::<u64>()
        )
            .prop_map(|(flow, src, dst, bytes, fct_ns)| EventKind::FlowFinished {
                flow,
                src,
                dst,
                bytes,
                fct_ns
            }),
        (any::<u32>(), ".{0,10}", ".{0,10}").prop_map(|(port, expected, found)| {
            EventKind::Miswiring {
                port,
                expected,
                found,
            }
        }),
    ]
}

pub fn event() -> impl Strategy<Value = Event> {
    (any::<u64>(), timestamp(), event_kind()).prop_map(|(seq, time, what)| Event {
        seq,
        time,
        what,
    })
}
