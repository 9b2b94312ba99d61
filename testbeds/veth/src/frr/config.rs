//! Configuration files the FRR testbed writes: each switch's `frr.conf` (the project's
//! own `frr-bgp` export, with the testbed's interface names) and Prometheus's scrape
//! configuration.

use std::net::Ipv4Addr;

use topo::Fabric;
use topo::addressing::AddressPlan;
use topo::export::{self, Format, MemSink, Routed, Tables};

use crate::routed::ifname;
use crate::{Error, Result};

/// Every switch's `frr-bgp` export, `(switch name, frr.conf)`, with the export's
/// interface names (`swp<p+1>`, as on a Linux whitebox switch) renamed to the testbed's
/// (`p<p>`, [`ifname`]).
pub fn frr_configs(f: &Fabric, plan: &AddressPlan) -> Result<Vec<(String, String)>> {
    let routes = topo::Routes::compute(f);
    let routed = Routed {
        fabric: f,
        addr: plan,
        tables: Tables::Ecmp(&routes),
    };
    let mut sink = MemSink::new();
    export::export(&routed, Format::FrrBgp, &mut sink)
        .map_err(|e| Error::Invalid(format!("exporting frr-bgp: {e}")))?;
    let mut out = Vec::new();
    for s in f.switches() {
        let name = f.node_name(s);
        let path = format!("frr/bgp/{name}.conf");
        let text = sink
            .text(&path)
            .ok_or_else(|| Error::Invalid(format!("the frr-bgp export has no {path}")))?;
        out.push((name.to_string(), rename_interfaces(text)));
    }
    Ok(out)
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
}
