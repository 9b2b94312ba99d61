//! Property test: the one-pass-per-column rates ([`Interval::deltas`]) equal the
//! per-port lookups ([`Interval::port`]) on any pair of snapshots, dense or sparse.

mod common;

use common::*;
use fabric_api::*;
use proptest::prelude::*;

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn columnar_rates_equal_per_port_rates(
        a in snapshot(small_info().ports.len()),
        b in snapshot(small_info().ports.len()),
        dt in 1u64..10_000_000_000,
    ) {
        let info = small_info();
        let (mut a, mut b) = (a, b);
        a.time = Timestamp::virtual_ns(1_000);
        b.time = Timestamp::virtual_ns(1_000 + dt);
        let iv = Interval::new(&info, &a, &b).unwrap();
        let d = iv.deltas();
        for i in 0..info.ports.len() {
            prop_assert_eq!(d.port_delta(i), iv.port_delta(i), "port {}", i);
            prop_assert_eq!(d.port(i), iv.port(i), "port {}", i);
        }
        prop_assert_eq!(d.port_delta(info.ports.len()), PortDelta::default());
    }
}
