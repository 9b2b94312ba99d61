//! Configuration files the FRR testbed writes: each switch's `frr.conf` (the project's
//! own `frr-bgp` export, with the testbed's interface names) and Prometheus's scrape
//! configuration.

use std::net::Ipv4Addr;

use topo::Fabric;
use topo::addressing::AddressPlan;
use topo::export::{self, ExportError, Format, MemSink, Routed, Tables};

use crate::routed::ifname;
use crate::{Error, Result};

/// Every switch's `frr-bgp` export, `(switch name, frr.conf)`, with the export's
/// interface names (`swp<p+1>`, as on a Linux whitebox switch) renamed to the testbed's
/// (`p<p>`, [`ifname`]).
pub fn frr_configs(f: &Fabric, plan: &AddressPlan) -> Result<Vec<(String, String)>> {
    let routes = topo::Routes::compute(f);
    switch_configs(f, plan, &routes, "frr-bgp", "frr/bgp", |r, sink| {
        export::export(r, Format::FrrBgp, sink)
    })
}

/// Every switch's `vrf-frr-bgp` export for tenant file `t` (`topo::export::vrf_bgp`: the
/// `frr-bgp` configuration with each leaf's tenant VRFs carried into BGP), renamed as
/// [`frr_configs`] does. FRR runs these only on a kernel with the VRF driver
/// (`CONFIG_NET_VRF`), which this testbed's kernel lacks; the testbed binds ports to
/// tenant tables with policy rules instead (`crate::tenant_vrf`).
pub fn frr_vrf_configs(
    f: &Fabric,
    plan: &AddressPlan,
    t: &topo::tenants::Tenants,
) -> Result<Vec<(String, String)>> {
    let routes = topo::Routes::compute(f);
    let enf = topo::tenants::enforce::Enforcement::from_tenants(f, t);
    let vrfs = topo::tenants::leaf::leaf_vrfs(f, &routes, plan, &enf);
    switch_configs(f, plan, &routes, "vrf-frr-bgp", "vrf/frr-bgp", |r, sink| {
        export::vrf_bgp::export(r, &vrfs, sink)
    })
}

/// Runs `write`, the exporter of format `format`, on `routes` into memory and returns
/// each switch's `{dir}/<switch>.conf`, its interfaces renamed ([`rename_interfaces`]).
fn switch_configs(
    f: &Fabric,
    plan: &AddressPlan,
    routes: &topo::Routes,
    format: &str,
    dir: &str,
    write: impl FnOnce(&Routed<'_>, &mut MemSink) -> std::result::Result<(), ExportError>,
) -> Result<Vec<(String, String)>> {
    let routed = Routed {
        fabric: f,
        addr: plan,
        tables: Tables::Ecmp(routes),
        lanes: None,
    };
    let mut sink = MemSink::new();
    write(&routed, &mut sink).map_err(|e| Error::Invalid(format!("exporting {format}: {e}")))?;
    f.switches()
        .map(|s| {
            let name = f.node_name(s);
            let path = format!("{dir}/{name}.conf");
            let text = sink
                .text(&path)
                .ok_or_else(|| Error::Invalid(format!("the {format} export has no {path}")))?;
            Ok((name.to_string(), rename_interfaces(text)))
        })
        .collect()
}

/// `swpN` → `p{N-1}` wherever a word is an interface name of the export.
pub fn rename_interfaces(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for line in text.split_inclusive('\n') {
        let mut first = true;
        let (body, nl) = match line.strip_suffix('\n') {
            Some(b) => (b, "\n"),
            None => (line, ""),
        };
        for word in body.split(' ') {
            if !first {
                out.push(' ');
            }
            first = false;
            match word.strip_prefix("swp").and_then(|n| n.parse::<u32>().ok()) {
                Some(n) if n >= 1 => out.push_str(&ifname((n - 1) as topo::Port)),
                _ => out.push_str(word),
            }
        }
        out.push_str(nl);
    }
    out
}

/// Prometheus's configuration: one job scraping every switch's node_exporter on its
/// management address every second, each target labelled `switch="<name>"`.
pub fn prometheus_config(targets: &[(String, Ipv4Addr, u16)]) -> String {
    let mut s = String::from(
        "global:\n  scrape_interval: 1s\n  scrape_timeout: 900ms\n  evaluation_interval: 1s\n\
         scrape_configs:\n  - job_name: node\n    static_configs:\n",
    );
    for (name, addr, port) in targets {
        s.push_str(&format!(
            "      - targets: ['{addr}:{port}']\n        labels:\n          switch: '{name}'\n"
        ));
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn interface_names_follow_the_testbed() {
        let t = "interface swp1\n description to swp-land\n ip route 10.0.0.2/32 swp12\n";
        assert_eq!(
            rename_interfaces(t),
            "interface p0\n description to swp-land\n ip route 10.0.0.2/32 p11\n"
        );
    }

    #[test]
    fn every_switch_gets_a_config_with_bfd() {
        let f = topo::generators::fat_tree(4, topo::Rate::gbps(100)).unwrap();
        let plan = AddressPlan::new(&f).unwrap();
        let c = frr_configs(&f, &plan).unwrap();
        assert_eq!(c.len(), 20);
        assert!(c.iter().all(|(_, t)| t.contains("neighbor FABRIC bfd")));
        assert!(c.iter().all(|(_, t)| !t.contains("swp")));
        let p = prometheus_config(&[("s".into(), Ipv4Addr::new(100, 64, 0, 10), 9100)]);
        assert!(p.contains("targets: ['100.64.0.10:9100']"));
    }

    #[test]
    fn tenant_vrfs_bind_the_testbeds_interfaces() {
        let f = topo::generators::fat_tree(4, topo::Rate::gbps(100)).unwrap();
        let plan = AddressPlan::new(&f).unwrap();
        let path = concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../../docs/tenants/fat-tree-k4.toml"
        );
        let text = std::fs::read_to_string(path).unwrap();
        let file = topo::tenants::TenantFile::parse(&text, topo::Format::Toml, path).unwrap();
        let t = topo::tenants::Tenants::resolve(&file, &f, path).unwrap();
        let c = frr_vrf_configs(&f, &plan, &t).unwrap();
        assert_eq!(c.len(), 20);
        let leaf0 = &c.iter().find(|(n, _)| n == "pod0-leaf0").unwrap().1;
        // host0 (mgmt) on port 0, host1 (tenant a) on port 1
        assert!(leaf0.contains("interface p0 vrf Vrf-mgmt\n"), "{leaf0}");
        assert!(leaf0.contains("interface p1 vrf Vrf-a\n"), "{leaf0}");
        assert!(leaf0.contains(" vrf Vrf-a\n"));
        assert!(c.iter().all(|(_, t)| !t.contains("swp")));
    }
}
