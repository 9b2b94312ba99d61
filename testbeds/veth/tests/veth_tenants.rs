//! Root-only: tenant isolation on the routed testbed, proven with real packets both ways.
//! A leaf–spine fabric (4 leaves × 3 hosts, 2 spines) where two tenants share leaves and a
//! storage service serves one of them. Before the tenant tables every pair answers (the
//! testbed routes everything); after `tenant_vrf::apply` every in-tenant and allowed
//! service pair still answers in IPv4 and IPv6, and no cross-tenant pair does — the test
//! fails if a single probe gets through.

use std::time::Duration;

use topo::addressing::AddressPlan;
use topo::tenants::enforce::Enforcement;
use topo::tenants::{TenantFile, Tenants, leaf, proof};
use topo::{Format, NodeId, Rate, generators};
use veth::root_tests_enabled;
use veth::routed::{Family, RoutedTestbed};

fn enabled() -> bool {
    match root_tests_enabled() {
        Ok(b) => b,
        Err(why) => panic!("{why}"),
    }
}

// leaf0: host0-2, leaf1: host3-5, leaf2: host6-8, leaf3: host9-11.
const TENANTS: &str = r#"
[[services]]
name = "storage"
servers = [8, 11]
[[tenants]]
name = "a"
servers = [0, 1, 3, 4, 6]
access = { storage = "limited" }
[[tenants]]
name = "b"
servers = [2, 5, 7, 9, 10]
classes = [1]
"#;

#[test]
fn tenants_reach_their_own_and_storage_and_never_each_other() {
    if !enabled() {
        return;
    }
    let f = generators::leaf_spine(4, 2, 3, Rate::gbps(100)).unwrap();
    let file = TenantFile::parse(TENANTS, Format::Toml, "tenants.toml").unwrap();
    let t = Tenants::resolve(&file, &f, "tenants.toml").unwrap();
    let enf = Enforcement::from_tenants(&f, &t);
    let mut tb = RoutedTestbed::build(f.clone()).unwrap();
    let fams = tb.families();
    assert!(fams.contains(&Family::V4));

    let hosts: Vec<NodeId> = f.hosts().collect();
    let (mut allowed, mut denied) = (Vec::new(), Vec::new());
    for &s in &hosts {
        for &d in &hosts {
            if s != d {
                let pair = (s, d, 0u16);
                if t.allowed(s, d).is_some() {
                    allowed.push(pair);
                } else {
                    denied.push(pair);
                }
            }
        }
    }
    // a: 5×4, b: 5×4, storage: 2×1, a⇄storage: 2×5×2.
    assert_eq!(allowed.len(), 20 + 20 + 2 + 20);
    let (retry, patient, brief) = (
        Duration::from_millis(200),
        Duration::from_secs(30),
        Duration::from_secs(3),
    );

    // Before: the testbed routes every pair, across tenants too.
    let before = tb.probe_rounds(&fams, &denied, retry, patient);
    for r in &before {
        assert_eq!(
            r.received,
            denied.len(),
            "{} before: {:?}",
            r.family,
            r.missing
        );
    }

    // The proof agrees with what is about to be programmed.
    let addr = AddressPlan::new(&f).unwrap();
    let rep = proof::prove(&f, tb.routes(), &t, &enf);
    assert!(rep.ok(), "{:?}", rep.leaks);
    let vrfs = leaf::leaf_vrfs(&f, tb.routes(), &addr, &enf);
    // Tenant tables per leaf: a+b, a+b, a+b+storage, b+storage.
    assert_eq!(vrfs.len(), 2 + 2 + 3 + 2);
    let v6 = fams.contains(&Family::V6);
    let done = veth::tenant_vrf::apply(&tb, &vrfs, v6).unwrap();
    assert_eq!((done.tables, done.ports), (9, 12));

    // After: every allowed pair answers in every family…
    for r in tb.probe_rounds(&fams, &allowed, retry, patient) {
        assert_eq!(
            r.received,
            allowed.len(),
            "{}: allowed pairs missing {:?}",
            r.family,
            r.missing
        );
    }
    // …and not one probe of a cross-tenant pair arrives (resent every 200 ms for 3 s).
    for r in tb.probe_rounds(&fams, &denied, retry, brief) {
        assert_eq!(r.pairs, denied.len());
        assert_eq!(
            r.received,
            0,
            "{}: {} cross-tenant pairs answered (of {}); missing = blocked: {:?}",
            r.family,
            r.received,
            r.pairs,
            r.missing.len()
        );
    }
    tb.teardown().unwrap();
}
