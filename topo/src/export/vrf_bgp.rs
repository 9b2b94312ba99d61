//! `vrf-frr-bgp`: the `frr-bgp` export with the tenants' VRFs carried into BGP
//! (`vrf/frr-bgp/<switch>.conf`, every switch; spines and aggregation switches are the
//! plain `frr-bgp` file).
//!
//! VRF-lite over the RFC 7938 fabric: the fabric sessions stay in the default VRF, which
//! carries every tenant's host routes between the leaves; the isolation is the import
//! filter of each leaf VRF. On a leaf, per VRF of [`crate::tenants::leaf::leaf_vrfs`]:
//!
//! * its host ports are bound to it (`interface swp1 vrf Vrf-a`), and their static host
//!   routes move from the default VRF into a `vrf Vrf-a` block with blackhole defaults (a
//!   miss must not fall through to the default VRF);
//! * `router bgp ASN vrf Vrf-a` announces those hosts (`network h/32`, `/128`);
//! * the default VRF imports them (`import vrf Vrf-a`) and advertises them to the fabric;
//! * the VRF imports from the default VRF (and from the leaf's other VRFs holding a
//!   destination it may reach, since FRR does not leak a leaked route again) only through
//!   `import vrf route-map Vrf-a-IN4` / `-IN6`: prefix lists of exactly the host prefixes
//!   the tenant file lets it reach (its own hosts, the services it has access to; a
//!   service's VRF, the tenants that access it). Everything else, other tenants' hosts
//!   included, never enters the VRF.
//!
//! Hosts in no entry stay in the default VRF (reached through the leaf's ToR prefix).
//! FRR needs the kernel's VRF driver to run this; `vtysh --dryrun` checks it
//! (`topo/tests/frr_vrf.rs`).

use crate::export::routes::LinuxIf;
use crate::tenants::leaf::{LeafVrf, Out};

use super::formats::{bgp_of, router};
use super::{ExportError, Routed, Sink, frr, sink};

/// Writes `vrf/frr-bgp/<switch>.conf` for every switch; `vrfs` grouped by leaf, as
/// `leaf_vrfs` returns them.
pub fn export<S: Sink>(r: &Routed<'_>, vrfs: &[LeafVrf], sink: &mut S) -> Result<(), ExportError> {
    let f = r.fabric;
    for s in f.switches() {
        let mut rt = router(r, s);
        let mut b = bgp_of(r, s)?;
        let mine: Vec<&LeafVrf> = vrfs.iter().filter(|v| v.leaf == s).collect();
        add_vrfs(&mut rt, &mut b, &mine);
        let path = format!("vrf/frr-bgp/{}.conf", f.node_name(s));
        sink::with_file(sink, &path, |w| Ok(frr::write_bgp(w, &rt, &b)?))?;
    }
    Ok(())
}

/// Binds each VRF's ports, moves their host routes into it, and fills its imports and
/// filters from its routes.
pub fn add_vrfs(rt: &mut frr::Router, b: &mut frr::Bgp, vrfs: &[&LeafVrf]) {
    for v in vrfs {
        let ports: Vec<String> = v
            .ports
            .iter()
            .map(|&(p, _)| LinuxIf(p).to_string())
            .collect();
        for i in rt.interfaces.iter_mut().filter(|i| ports.contains(&i.name)) {
            i.vrf = Some(v.device.clone());
        }
        let mut bv = frr::BgpVrf {
            name: v.device.clone(),
            host_routes: take_routes(&mut b.host_routes, &ports),
            host_routes6: take_routes(&mut b.host_routes6, &ports),
            imports: vec!["default".to_string()],
            ..Default::default()
        };
        for route in &v.routes {
            if let Out::Local(p) = route.out {
                if v.ports.iter().any(|&(q, _)| q == p) {
                    continue; // its own host: a static route in the VRF
                }
                let other = vrfs.iter().find(|o| o.ports.iter().any(|&(q, _)| q == p));
                if let Some(o) = other
                    && !bv.imports.contains(&o.device)
                {
                    bv.imports.push(o.device.clone());
                }
            }
            bv.allowed.extend(route.v4.map(|a| format!("{a}/32")));
            bv.allowed6.extend(route.v6.map(|a| format!("{a}/128")));
        }
        b.vrfs.push(bv);
    }
}

fn take_routes(routes: &mut Vec<(String, String)>, ports: &[String]) -> Vec<(String, String)> {
    let (taken, kept) = routes.drain(..).partition(|(_, i)| ports.contains(i));
    *routes = kept;
    taken
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::addressing::AddressPlan;
    use crate::export::{MemSink, Tables};
    use crate::tenants::enforce::Enforcement;
    use crate::tenants::{TenantFile, Tenants, leaf};

    // pod0-leaf0: host0 (a), host1 (b); pod0-leaf1: host2 (a), host3 (storage).
    const FILE: &str = r#"
[[services]]
name = "storage"
servers = ["3"]
[[tenants]]
name = "a"
servers = ["0", "2"]
share = 50
access = { storage = "limited" }
[[tenants]]
name = "b"
servers = ["1", "4-15"]
share = 50
"#;

    fn export_k4() -> (crate::Fabric, AddressPlan, MemSink) {
        let f = crate::generators::fat_tree(4, crate::Rate::gbps(100)).unwrap();
        let file = TenantFile::parse(FILE, crate::Format::Toml, "t.toml").unwrap();
        let t = Tenants::resolve(&file, &f, "t.toml").unwrap();
        let routes = crate::Routes::compute(&f);
        let addr = AddressPlan::new(&f).unwrap();
        let enf = Enforcement::from_tenants(&f, &t);
        let vrfs = leaf::leaf_vrfs(&f, &routes, &addr, &enf);
        let routed = Routed {
            fabric: &f,
            addr: &addr,
            tables: Tables::Ecmp(&routes),
            lanes: None,
        };
        let mut sink = MemSink::new();
        export(&routed, &vrfs, &mut sink).unwrap();
        (f, addr, sink)
    }

    fn host(f: &crate::Fabric, addr: &AddressPlan, n: u32) -> String {
        let name = format!("host{n}-nic0");
        let h = (0..f.num_nodes() as u32)
            .map(crate::NodeId)
            .find(|&h| f.node_name(h) == name)
            .unwrap();
        format!("{}/32", addr.host_v4(f, h, 0).unwrap())
    }

    /// The lines of block `head` … `exit` (the first line starting with `head`).
    fn block<'a>(text: &'a str, head: &str) -> Vec<&'a str> {
        let mut lines = text.lines().skip_while(|l| !l.starts_with(head));
        let mut out: Vec<&str> = lines.next().into_iter().collect();
        out.extend(lines.take_while(|l| !l.starts_with("exit")));
        out
    }

    fn prefix_list<'a>(text: &'a str, name: &str) -> Vec<&'a str> {
        let head = format!("ip prefix-list {name} ");
        text.lines().filter(|l| l.starts_with(&head)).collect()
    }

    #[test]
    fn leaf_binds_ports_and_announces_hosts_in_the_tenant_vrf() {
        let (f, addr, sink) = export_k4();
        let l0 = sink.text("vrf/frr-bgp/pod0-leaf0.conf").unwrap();
        let (h0, h1) = (host(&f, &addr, 0), host(&f, &addr, 1));
        assert!(l0.contains("interface swp1 vrf Vrf-a\n"), "{l0}");
        assert!(l0.contains("interface swp2 vrf Vrf-b\n"));
        let statics = block(l0, "vrf Vrf-a");
        assert!(statics.contains(&" ip route 0.0.0.0/0 blackhole 255"));
        assert!(statics.contains(&format!(" ip route {h0} swp1").as_str()));
        // The host routes left the default VRF.
        assert!(!l0.contains(&format!("\nip route {h0} swp1")));
        let global = block(l0, "router bgp ");
        assert!(!global[0].contains("vrf"), "{global:?}");
        let bgp = block(l0, &format!("{} vrf Vrf-a", global[0]));
        for line in [
            format!("  network {h0}"),
            "  import vrf default".into(),
            "  import vrf route-map Vrf-a-IN4".into(),
            "  import vrf route-map Vrf-a-IN6".into(),
        ] {
            assert!(bgp.contains(&line.as_str()), "{line} missing in {bgp:?}");
        }
        assert!(
            !bgp.contains(&format!("  network {h1}").as_str()),
            "b's host"
        );
        // The default VRF takes both tenants' hosts to the fabric.
        assert!(global.contains(&"  import vrf Vrf-a"));
        assert!(global.contains(&"  import vrf Vrf-b"));
    }

    #[test]
    fn import_filter_lets_in_only_what_the_file_allows() {
        let (f, addr, sink) = export_k4();
        let (a0, b1, a2, s3, b9) = (
            host(&f, &addr, 0),
            host(&f, &addr, 1),
            host(&f, &addr, 2),
            host(&f, &addr, 3),
            host(&f, &addr, 9),
        );
        let permits =
            |list: &[&str], p: &str| list.iter().any(|l| l.ends_with(&format!("permit {p}")));
        let l0 = sink.text("vrf/frr-bgp/pod0-leaf0.conf").unwrap();
        let a_in = prefix_list(l0, "Vrf-a-IN4");
        assert!(permits(&a_in, &a2) && permits(&a_in, &s3), "{a_in:?}");
        assert!(!permits(&a_in, &b1) && !permits(&a_in, &b9), "{a_in:?}");
        let b_in = prefix_list(l0, "Vrf-b-IN4");
        assert!(permits(&b_in, &b9));
        assert!(!permits(&b_in, &a0) && !permits(&b_in, &a2) && !permits(&b_in, &s3));
        // Neither tenant imports the other on the shared leaf.
        let asn = block(l0, "router bgp ")[0].to_string();
        assert!(!block(l0, &format!("{asn} vrf Vrf-a")).contains(&"  import vrf Vrf-b"));
        assert!(!block(l0, &format!("{asn} vrf Vrf-b")).contains(&"  import vrf Vrf-a"));
        // pod0-leaf1: a reaches storage on the same leaf through storage's VRF; storage
        // reaches a's hosts, never b's.
        let l1 = sink.text("vrf/frr-bgp/pod0-leaf1.conf").unwrap();
        let asn = block(l1, "router bgp ")[0].to_string();
        assert!(block(l1, &format!("{asn} vrf Vrf-a")).contains(&"  import vrf Vrf-storage"));
        let s_in = prefix_list(l1, "Vrf-storage-IN4");
        assert!(permits(&s_in, &a0) && permits(&s_in, &a2), "{s_in:?}");
        assert!(!permits(&s_in, &b1) && !permits(&s_in, &b9));
        // Above the leaves: the plain frr-bgp file.
        let core = sink.text("vrf/frr-bgp/core0-0.conf").unwrap();
        assert!(!core.contains("vrf"));
    }
}
