//! Helpers the simulator's integration tests share.
#![allow(dead_code)]

use cc_algos::{Duration, Rate};
use scenario::{CompileCtx, Scenario, Workplan};
use sim::net::{Net, NetBuilder};
use sim::{Sim, SimConfig, SimResults};

/// Compile a TOML scenario for `hosts` hosts at 100 Gb/s, seed 1.
pub fn plan(toml: &str, hosts: u32) -> Workplan {
    Scenario::from_toml_str(toml, "test.toml")
        .unwrap()
        .compile(&CompileCtx::new(hosts, Rate::gbps(100), 1))
        .unwrap()
}

/// Run a plan on a hand-made net.
pub fn run(net: Net, cfg: SimConfig, p: &Workplan) -> SimResults {
    Sim::from_net(net, cfg, p).unwrap().run()
}

/// `n` hosts on one switch, 100 Gb/s, 500 ns links.
pub fn star(n: u32) -> Net {
    NetBuilder::star(n, Rate::gbps(100), Duration::nanos(500))
}

/// A k-ary fat-tree at 100 Gb/s.
pub fn fat_tree(k: u32) -> topo::Fabric {
    topo::generators::fat_tree(k, topo::Rate::gbps(100)).unwrap()
}

/// `n` senders (hosts 1..=n) to host 0, `size` each.
pub fn incast(n: u32, size: &str) -> String {
    format!(
        "[[workload]]\nkind = \"incast\"\nsenders = \"1..{}\"\nreceiver = 0\nsize = \"{size}\"\n",
        n + 1
    )
}
