//! FRR reads the tenants' BGP VRF configuration (`vrf-frr-bgp`): `vtysh --dryrun -f FILE`
//! (FRR 8.4) accepts every switch's file for the k=4 fat-tree with
//! `docs/tenants/fat-tree-k4.toml`, both with the plain tables and after a core-link
//! failure. FRR does not *run* these VRFs here: this kernel has no VRF driver
//! (`CONFIG_NET_VRF` unset), so the sessions in VRFs and the leaked routes are checked by
//! the unit tests of `topo::export::vrf_bgp` only.
//!
//! Needs `vtysh` (Debian's frr, `scripts/install-deps.sh`); without it the test fails and
//! says so, unless `FABRIC_SKIP_TOOLS=1` is set. No root.

use std::fs;
use std::path::PathBuf;
use std::process::{Command, Stdio};

use topo::addressing::AddressPlan;
use topo::export::{MemSink, Routed, Tables, vrf_bgp};
use topo::tenants::enforce::Enforcement;
use topo::tenants::{TenantFile, Tenants, leaf};

fn have_vtysh() -> bool {
    let found = Command::new("sh")
        .args(["-c", "command -v vtysh"])
        .stdout(Stdio::null())
        .status()
        .map(|s| s.success())
        .unwrap_or(false);
    if found {
        return true;
    }
    if std::env::var("FABRIC_SKIP_TOOLS").as_deref() == Ok("1") {
        eprintln!("skipped: vtysh not installed (FABRIC_SKIP_TOOLS=1)");
        return false;
    }
    panic!(
        "vtysh not installed: run scripts/install-deps.sh (as root), or set FABRIC_SKIP_TOOLS=1 to skip"
    );
}

fn export(fail_core_link: bool) -> (topo::Fabric, MemSink) {
    let f = topo::generators::fat_tree(4, topo::Rate::gbps(100)).unwrap();
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../docs/tenants/fat-tree-k4.toml"
    );
    let text = fs::read_to_string(path).unwrap();
    let file = TenantFile::parse(&text, topo::Format::Toml, path).unwrap();
    let t = Tenants::resolve(&file, &f, path).unwrap();
    let mut routes = topo::Routes::compute(&f);
    if fail_core_link {
        let names = f.name_index();
        let link = f
            .ports(names["pod0-agg0"])
            .find(|&(p, _)| p == names["core0-0"])
            .map(|(_, l)| l)
            .unwrap();
        routes.fail_links(&f, &[link]);
    }
    let addr = AddressPlan::new(&f).unwrap();
    let vrfs = leaf::leaf_vrfs(&f, &routes, &addr, &Enforcement::from_tenants(&f, &t));
    let routed = Routed {
        fabric: &f,
        addr: &addr,
        tables: Tables::Ecmp(&routes),
        lanes: None,
    };
    let mut sink = MemSink::new();
    vrf_bgp::export(&routed, &vrfs, &mut sink).unwrap();
    (f, sink)
}

#[test]
fn frr_accepts_every_vrf_bgp_config() {
    if !have_vtysh() {
        return;
    }
    let dir: PathBuf = std::env::temp_dir().join(format!("fabric-frr-vrf-{}", std::process::id()));
    let _ = fs::remove_dir_all(&dir);
    fs::create_dir_all(&dir).unwrap();
    let mut with_vrfs = 0;
    for fail in [false, true] {
        let (f, sink) = export(fail);
        for s in f.switches() {
            let name = format!("vrf/frr-bgp/{}.conf", f.node_name(s));
            let text = sink.text(&name).unwrap();
            with_vrfs += usize::from(text.contains("router bgp") && text.contains(" vrf Vrf-"));
            let file = dir.join(format!("{}-{fail}.conf", f.node_name(s)));
            fs::write(&file, text).unwrap();
            let out = Command::new("vtysh")
                .arg("--dryrun")
                .arg("-f")
                .arg(&file)
                .output()
                .unwrap();
            assert!(
                out.status.success(),
                "vtysh rejects {name} (failed link: {fail}): {}{}\n{text}",
                String::from_utf8_lossy(&out.stdout),
                String::from_utf8_lossy(&out.stderr)
            );
        }
    }
    // Every leaf of k=4 has a tenant or service host: 8 leaves, twice.
    assert_eq!(with_vrfs, 16);
    let _ = fs::remove_dir_all(&dir);
}
