//! The one `--json [OUT]` convention, on the real binary: `--json` alone puts JSON and
//! nothing else on standard output (the readable text goes to standard error), for a query
//! command and for a run command alike; `--json FILE` writes the file.

use std::process::Command;

fn fabric(args: &[&str]) -> (serde_json::Value, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_fabric"))
        .args(args)
        .current_dir(concat!(env!("CARGO_MANIFEST_DIR"), "/.."))
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "{args:?}: stdout is not JSON ({e}): {}",
            String::from_utf8_lossy(&out.stdout)
        )
    });
    (v, String::from_utf8_lossy(&out.stderr).into_owned())
}

#[test]
fn json_alone_is_the_only_thing_on_standard_output() {
    let (v, _) = fabric(&["topo", "show", "--preset", "fat-tree-k4", "--json"]);
    assert_eq!(v["name"], "fat-tree-k4");
    let (v, _) = fabric(&["routes", "verify", "--preset", "fat-tree-k4", "--json"]);
    assert!(v.get("failed_links").is_some(), "{v}");
    let (v, err) = fabric(&[
        "sim",
        "--preset",
        "fat-tree-k4",
        "--scenario",
        "scenarios/incast-15to1.toml",
        "--quiet",
        "--json",
    ]);
    assert_eq!(v["fct"]["finished"], 15);
    assert!(err.contains("scenario incast 15:1"), "{err}");
}

#[test]
fn json_file_is_written_and_the_text_stays_on_standard_output() {
    let p = std::env::temp_dir().join(format!("fabric-json-{}.json", std::process::id()));
    let out = Command::new(env!("CARGO_BIN_EXE_fabric"))
        .args(["topo", "compare", "fat-tree-k4", "fat-tree-k8", "--json"])
        .arg(&p)
        .output()
        .unwrap();
    assert!(out.status.success());
    assert!(String::from_utf8_lossy(&out.stdout).contains("fat-tree-k8"));
    let v: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&p).unwrap()).unwrap();
    assert_eq!(v.as_array().map(|a| a.len()), Some(2));
    std::fs::remove_file(&p).ok();
}
