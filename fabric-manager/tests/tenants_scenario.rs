//! Tenants driving scenarios on the command line: `fabric sim --tenants FILE` and a
//! scenario's `tenants = "FILE"` key give each tenant's workloads their class and the
//! ports the file's ETS weights; bad files and workloads get errors naming the file and
//! the field. No root, no tools.

use std::process::Command;

fn root(p: &str) -> String {
    format!("{}/../{p}", env!("CARGO_MANIFEST_DIR"))
}

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

fn sim(scenario: &str, extra: &[&str]) -> (i32, String, String) {
    let s = root(scenario);
    let mut args = vec![
        "sim",
        "--preset",
        "fat-tree-k8",
        "--scenario",
        &s,
        "--cc",
        "dcqcn",
        "--quiet",
        "--json",
        "-",
    ];
    args.extend_from_slice(extra);
    fabric(&args)
}

/// The run's flows' priorities (from `--json -`: the report on stdout, the text on stderr).
fn priorities(json: &str) -> Vec<u64> {
    let v: serde_json::Value = serde_json::from_str(json).expect("json report");
    v["flows"]
        .as_array()
        .expect("flows")
        .iter()
        .map(|f| f["priority"].as_u64().expect("priority"))
        .collect()
}

#[test]
fn a_scenario_takes_its_classes_from_its_tenant_file_or_the_command_lines() {
    let (code, out, err) = sim("scenarios/noisy-ets.toml", &[]);
    assert_eq!(code, 0, "{out}{err}");
    let p = priorities(&out);
    assert_eq!(p.len(), 15 + 8 * 14, "{p:?}");
    assert!(p[..15].iter().all(|&c| c == 1) && p[15..].iter().all(|&c| c == 2));
    // The shared-class file in its place: one class, with a note that it replaced it.
    let shared = root("scenarios/tenants/noisy-k8-shared.toml");
    let (code, out, err) = sim("scenarios/noisy-ets.toml", &["--tenants", &shared]);
    assert_eq!(code, 0, "{out}{err}");
    assert!(
        err.contains("note: --tenants ")
            && err.contains("replaces the scenario's tenants = \"tenants/noisy-k8.toml\""),
        "{err}"
    );
    assert!(priorities(&out).iter().all(|&c| c == 0));
}

#[test]
fn a_tenant_file_that_does_not_fit_names_the_file_and_field() {
    let dir = std::env::temp_dir().join(format!("fabric-tenants-scen-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let bad = dir.join("t.toml");
    // Server 200 on a 128-server fabric.
    std::fs::write(
        &bad,
        "[[tenants]]\nname = \"a\"\nservers = [0, \"16-30\"]\n[[tenants]]\nname = \"b\"\nservers = [\"1-3\", 200]\n",
    )
    .unwrap();
    let b = bad.to_str().unwrap();
    let (code, _, err) = sim("scenarios/noisy-ets.toml", &["--tenants", b]);
    assert_ne!(code, 0);
    assert!(
        err.contains(&format!(
            "{b}: tenants[1].servers[1]: server 200 does not exist: the fabric has 128 servers (0-127)"
        )),
        "{err}"
    );
    // B's ring on hosts the file gives to nobody.
    std::fs::write(
        &bad,
        "[[tenants]]\nname = \"a\"\nservers = [0, \"16-30\"]\n[[tenants]]\nname = \"b\"\nservers = [\"1-3\"]\n",
    )
    .unwrap();
    let (code, _, err) = sim("scenarios/noisy-ets.toml", &["--tenants", b]);
    assert_ne!(code, 0);
    assert!(
        err.contains(&format!(
            "noisy-ets.toml: workload[1].hosts: host 31 is in no entry of {b}: a workload of tenant `b` runs on its hosts"
        )),
        "{err}"
    );
    std::fs::remove_dir_all(&dir).ok();
}

const SPEC: &str = "docs/tenants/fat-tree-k4-spec.toml";

#[test]
fn a_specs_tenants_section_is_proven_exported_and_simulated_and_a_second_source_refused() {
    let spec = root(SPEC);
    // The section proves as the same text in a tenant file does.
    let (code, out, err) = fabric(&["routes", "verify", "--fabric", &spec]);
    assert_eq!(code, 0, "{out}{err}");
    assert!(
        out.contains("ok   isolation over 240 host pairs (VRFs and partitions): 124 allowed reach, 116 isolated"),
        "{out}"
    );
    let file = root("docs/tenants/fat-tree-k4.toml");
    let (code, _, err) = fabric(&["routes", "verify", "--fabric", &spec, "--tenants", &file]);
    assert_eq!(code, 2, "{err}");
    assert!(
        err.contains(&format!(
            "{spec}: the spec has a [[tenants]] section and a tenant file was given too ({file}): give one"
        )),
        "{err}"
    );
    let dir = std::env::temp_dir().join(format!("fabric-tenants-spec-{}", std::process::id()));
    let d = dir.to_str().unwrap();
    let (code, out, err) = fabric(&[
        "routes", "export", "--fabric", &spec, "--format", "vrf-ip", "--out", d,
    ]);
    assert_eq!(code, 0, "{out}{err}");
    let batch = std::fs::read_to_string(dir.join("vrf/ip/pod0-leaf0.batch")).unwrap();
    assert!(
        batch.contains("link add Vrf-a type vrf table 1003"),
        "{batch}"
    );
    // `fabric sim` gives tenant a's workload a's class from the spec.
    let scen = dir.join("s.toml");
    std::fs::write(
        &scen,
        "[[workload]]\nkind = \"incast\"\nsenders = [2, 3]\nreceiver = 1\nsize = \"100KB\"\ntenant = \"a\"\n",
    )
    .unwrap();
    let s = scen.to_str().unwrap();
    let (code, out, err) = fabric(&[
        "sim",
        "--fabric",
        &spec,
        "--scenario",
        s,
        "--quiet",
        "--json",
        "-",
    ]);
    assert_eq!(code, 0, "{out}{err}");
    assert_eq!(priorities(&out), [1, 1]);
    let (code, _, err) = fabric(&[
        "sim",
        "--fabric",
        &spec,
        "--scenario",
        s,
        "--tenants",
        &file,
        "--quiet",
    ]);
    assert_ne!(code, 0);
    assert!(
        err.contains("the spec has a [[tenants]] section and a tenant file was given too"),
        "{err}"
    );
    // A section that does not fit the fabric: the spec does not build.
    let bad = dir.join("bad.toml");
    let text = std::fs::read_to_string(&spec)
        .unwrap()
        .replace("\"7-13\"", "\"7-16\"");
    std::fs::write(&bad, text).unwrap();
    let b = bad.to_str().unwrap();
    let (code, _, err) = fabric(&["routes", "verify", "--fabric", b]);
    assert_eq!(code, 2, "{err}");
    assert!(
        err.contains(&format!(
            "{b}: tenants[1].servers[0]: server 16 does not exist: the fabric has 16 servers (0-15)"
        )),
        "{err}"
    );
    std::fs::remove_dir_all(&dir).ok();
}
