//! `fabric routes verify --tenants`: the isolation proof on the command line, and a leak
//! caught when a deployed partitions.conf disagrees with the tenant file. No root, no tools.

use std::process::Command;

const TENANTS: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/../docs/tenants/fat-tree-k4.toml"
);

fn fabric(args: &[&str]) -> (i32, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_fabric"))
        .args(args)
        .output()
        .unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn proof_passes_then_a_hand_edited_partition_leaks_with_its_path() {
    let dir = std::env::temp_dir().join(format!("fabric-tenants-cli-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let base = [
        "routes",
        "verify",
        "--preset",
        "fat-tree-k4",
        "--tenants",
        TENANTS,
    ];
    let (code, out, err) = fabric(&base);
    assert_eq!(code, 0, "{out}{err}");
    assert!(out.contains("ok   isolation over 240 host pairs"), "{out}");
    assert!(out.contains(" 0 leaks, 0 allowed pairs blocked"), "{out}");

    // The same after failures that strand a leaf (detours on further lanes).
    let mut failed = base.to_vec();
    for l in topo::lanes::STRANDED_K4 {
        failed.extend(["--fail", l]);
    }
    let (code, out, err) = fabric(&failed);
    assert_eq!(code, 0, "{out}{err}");
    assert!(out.contains(" 0 leaks,"), "{out}");

    // Export the partitions, then add host7 (tenant b) to tenant a's partition.
    let d = dir.to_str().unwrap();
    let (code, out, err) = fabric(&[
        "routes",
        "export",
        "--preset",
        "fat-tree-k4",
        "--tenants",
        TENANTS,
        "--format",
        "opensm-partitions,vrf-ip,vrf-frr-bgp",
        "--out",
        d,
    ]);
    assert_eq!(code, 0, "{out}{err}");
    assert!(dir.join("vrf/ip/pod0-leaf0.batch").exists());
    let bgp = std::fs::read_to_string(dir.join("vrf/frr-bgp/pod0-leaf0.conf")).unwrap();
    assert!(bgp.contains("interface swp2 vrf Vrf-a\n"), "{bgp}");
    assert!(bgp.contains(" vrf Vrf-a\n"), "{bgp}");
    let p = dir.join("opensm/plane0/partitions.conf");
    let text = std::fs::read_to_string(&p).unwrap();
    let host6_full = "0x0002c90300000601=full";
    assert_eq!(text.matches(host6_full).count(), 1, "{text}");
    let edited = text.replace(
        host6_full,
        "0x0002c90300000601=full, 0x0002c90300000701=full",
    );
    std::fs::write(&p, edited).unwrap();
    let mut deployed = base.to_vec();
    deployed.extend(["--partitions", p.to_str().unwrap()]);
    let (code, out, err) = fabric(&deployed);
    assert_eq!(code, 1, "{out}{err}");
    assert!(out.contains("FAIL isolation"), "{out}");
    assert!(
        out.contains("leak: host7-nic0 (b) -> host6-nic0 (a) through partition a 0x0002: host7-nic0 > pod1-leaf1 > host6-nic0"),
        "{out}"
    );
    assert!(err.contains("tenant isolation failed"), "{err}");

    // A bad tenant file is bad input (exit 2) with the entry named.
    let bad = dir.join("bad.toml");
    std::fs::write(&bad, "[[tenants]]\nname = \"a\"\nservers = [\"0-99\"]\n").unwrap();
    let (code, _, err) = fabric(&[
        "routes",
        "verify",
        "--preset",
        "fat-tree-k4",
        "--tenants",
        bad.to_str().unwrap(),
    ]);
    assert_eq!(code, 2, "{err}");
    assert!(
        err.contains("bad.toml: tenants[0].servers[0]: server 99 does not exist: the fabric has 16 servers (0-15)"),
        "{err}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}
