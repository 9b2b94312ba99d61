//! Tenant isolation enforced by a real OpenSM: `fabric routes export --format
//! opensm-partitions` writes the partitions of docs/tenants/fat-tree-k4.toml, ibsim simulates
//! the k=4 fat-tree, OpenSM (`-P partitions.conf`) loads them; `smpquery pkeys` on every host
//! port shows the PKey table the file implies (full and limited members), and `saquery`
//! gives a path record between hosts that may talk and none between tenants. Needs Debian's
//! opensm, ibsim-utils, libumad2sim0 and infiniband-diags (`scripts/install-deps.sh`); no
//! root. `FABRIC_SKIP_TOOLS=1` skips it when they are missing.

use std::collections::BTreeSet;
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use ib_testbed::process::Child;
use ib_testbed::subnet::Subnet;
use topo::NodeId;
use topo::tenants::enforce::{Enforcement, Membership};
use topo::tenants::{TenantFile, Tenants};

const TENANTS: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/../docs/tenants/fat-tree-k4.toml"
);

/// Starts OpenSM on `net`'s simulator with `partitions`; waits for its first SUBNET UP.
fn start_opensm(net: &mut Subnet, partitions: &Path) -> Child {
    let dir = net.dir().join("sm-tenants");
    let (cache, tmp) = (dir.join("cache"), dir.join("tmp"));
    for d in [&cache, &tmp] {
        std::fs::create_dir_all(d).unwrap();
    }
    std::fs::copy(net.dir().join("guid2lid"), cache.join("guid2lid")).unwrap();
    let conf = dir.join("opensm.conf");
    std::fs::write(&conf, "force_log_flush TRUE\nqos TRUE\n").unwrap();
    let log = dir.join("opensm.log");
    let mut cmd = net.sim().command("opensm");
    cmd.arg("-F")
        .arg(&conf)
        .args(["-s", "1", "-R", "minhop", "-P"])
        .arg(partitions)
        .arg("-f")
        .arg(&log)
        .env("OSM_CACHE_DIR", &cache)
        .env("OSM_TMP_DIR", &tmp)
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    let mut sm = Child::spawn(&mut cmd, "opensm").unwrap();
    let t0 = Instant::now();
    loop {
        let text = std::fs::read_to_string(&log).unwrap_or_default();
        if text.contains("SUBNET UP") {
            assert!(
                !text.contains("partition") || !text.contains("ERR"),
                "OpenSM complained about the partitions:\n{text}"
            );
            return sm;
        }
        assert!(sm.exited().is_none(), "opensm exited; log:\n{text}");
        assert!(
            t0.elapsed() < Duration::from_secs(180),
            "no SUBNET UP after 180 s; log:\n{text}"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// The PKeys (membership bit included) in a port's table, `smpquery pkeys` read.
fn pkeys(net: &mut Subnet, lid: u16) -> BTreeSet<u16> {
    let out = net
        .sim()
        .tool("smpquery", &["pkeys", &lid.to_string()])
        .unwrap();
    out.split_whitespace()
        .filter_map(|w| w.strip_prefix("0x"))
        .filter_map(|h| u16::from_str_radix(h, 16).ok())
        .filter(|&k| k & 0x7fff != 0)
        .collect()
}

/// Whether the SA answers a path record from `s` to `d`, and its SL.
fn path_record(net: &mut Subnet, s: u16, d: u16) -> Option<u8> {
    let arg = format!("{s}:{d}");
    let out = net
        .sim()
        .tool("saquery", &["-p", "--src-to-dst", &arg])
        .ok()?;
    if !out.contains("PathRecord") {
        return None;
    }
    // `sl......0x1` (not `slid`): decimal or hex.
    let sl = out
        .lines()
        .filter_map(|l| l.trim().strip_prefix("sl"))
        .map(|r| r.trim_start_matches('.').trim())
        .find_map(|v| match v.strip_prefix("0x") {
            Some(h) => u8::from_str_radix(h, 16).ok(),
            None => v.parse().ok(),
        });
    Some(sl.unwrap_or(u8::MAX))
}

#[test]
fn opensm_loads_the_partitions_and_the_sa_keeps_tenants_apart() {
    if !testkit::tools::require(&ib_testbed::TOOLS, &[ib_testbed::UMAD2SIM]) {
        return;
    }
    let f = Arc::new(topo::generators::fat_tree(4, topo::Rate::gbps(400)).unwrap());
    let text = std::fs::read_to_string(TENANTS).unwrap();
    let file = TenantFile::parse(&text, topo::Format::Toml, TENANTS).unwrap();
    let t = Tenants::resolve(&file, &f, TENANTS).unwrap();
    let enf = Enforcement::from_tenants(&f, &t);

    let mut net = Subnet::start(f.clone(), "tenants").unwrap();
    let sm_host = net.design().sm_node();
    assert_eq!(
        t.entries()[t.owner(sm_host).unwrap()].name,
        "mgmt",
        "the SM's host is the mgmt service"
    );
    // The export, through the command a user runs.
    let out = net.dir().join("export");
    let st = Command::new(env!("CARGO_BIN_EXE_fabric"))
        .args([
            "routes",
            "export",
            "--preset",
            "fat-tree-k4",
            "--tenants",
            TENANTS,
        ])
        .args(["--format", "opensm-partitions", "--out"])
        .arg(&out)
        .status()
        .unwrap();
    assert!(st.success());
    let partitions = out.join("opensm/plane0/partitions.conf");
    // Dropped (killed) before `net`, whose simulator it talks to.
    let _sm = start_opensm(&mut net, &partitions);

    // Every host port's PKey table: full members carry bit 15.
    let hosts: Vec<NodeId> = f.hosts().collect();
    for &h in &hosts {
        let lid = net.design().lid(h);
        let mut want: BTreeSet<u16> = enf
            .partitions
            .iter()
            .filter_map(|p| {
                let m = p.members.iter().find(|m| m.0 == h)?.1;
                let full = m == Membership::Full || (p.pkey == 0x7fff && h == sm_host);
                Some(p.pkey | if full { 0x8000 } else { 0 })
            })
            .collect();
        want.insert(if h == sm_host { 0xffff } else { 0x7fff });
        assert_eq!(pkeys(&mut net, lid), want, "{} (LID {lid})", f.node_name(h));
    }

    // Path records: a pair gets one exactly when the file allows it.
    let name = |h: NodeId| f.node_name(h).to_string();
    let pick = |tenant: &str| t.entries()[t.by_name(tenant).unwrap()].hosts.clone();
    let (a, b, storage) = (pick("a"), pick("b"), pick("storage"));
    let cases = [
        (a[0], a[5], true),
        (b[0], b[6], true),
        (a[1], storage[0], true),
        (storage[1], a[2], true),
        (a[0], b[0], false),
        (b[3], a[4], false),
        (b[1], storage[0], false),
        (storage[0], b[2], false),
    ];
    for (s, d, may) in cases {
        let (ls, ld) = (net.design().lid(s), net.design().lid(d));
        let pr = path_record(&mut net, ls, ld);
        assert_eq!(pr.is_some(), may, "{} -> {}: {pr:?}", name(s), name(d));
        if may && t.owner(s) == t.owner(d) {
            // The partition's SL (the tenant's class) is the path's SL.
            let e = &t.entries()[t.owner(s).unwrap()];
            assert_eq!(pr, Some(e.sl), "{} -> {}: SL", name(s), name(d));
        }
    }
}
