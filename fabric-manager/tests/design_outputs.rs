//! The design half's output checks on the real binary: an `--out` that cannot be a
//! directory is refused before any routing, and an export larger than `--max-output` is
//! refused with its size before anything is written.

use std::path::Path;
use std::process::Output;

mod common;
use common::fabric;

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// `/etc/passwd` is a file: refused with the error the directory sink gives, but before
/// the fabric is routed: before the `--fail` name (checked ahead of routing) is looked at,
/// and before `fabric build` prints its first line.
#[test]
fn an_out_that_cannot_be_a_directory_is_refused_before_routing() {
    assert!(Path::new("/etc/passwd").is_file());
    let build = |out| {
        vec![
            "build",
            "--preset",
            "fat-tree-k16",
            "--fail",
            "no-such-switch",
            "--out",
            out,
        ]
    };
    let export = |out| {
        vec![
            "routes",
            "export",
            "--preset",
            "fat-tree-k16",
            "--fail",
            "no-such-switch",
            "--format",
            "ip",
            "--out",
            out,
        ]
    };
    let cases = [
        (build("/etc/passwd"), "/etc/passwd", "File exists"),
        (build("/etc/passwd/x"), "/etc/passwd/x", "Not a directory"),
        (export("/etc/passwd/x"), "/etc/passwd/x", "Not a directory"),
    ];
    for (cmd, out, cause) in cases {
        let o = fabric(&cmd);
        let e = stderr(&o);
        assert_eq!(o.status.code(), Some(2), "{cmd:?}: {e}");
        assert!(
            e.starts_with(&format!(
                "error: --out {out}: creating directory {out}: {cause}"
            )),
            "{cmd:?}: {e}"
        );
        assert!(o.stdout.is_empty(), "{cmd:?} did work first: {e}");
    }
    // An existing file for a multi-file format had its own early refusal already.
    let e = stderr(&fabric(&export("/etc/passwd")));
    assert!(
        e.starts_with("error: --out /etc/passwd: is (or looks like) a file"),
        "{e}"
    );
    // A single file under a file cannot be created either.
    let o = fabric(&[
        "routes",
        "export",
        "--preset",
        "fat-tree-k4",
        "--format",
        "json",
        "--out",
        "/etc/passwd/routes.json",
    ]);
    let e = stderr(&o);
    assert!(
        e.starts_with("error: --out /etc/passwd: creating directory /etc/passwd: File exists"),
        "{e}"
    );
}

/// Over `--max-output` nothing is written and the error names the size, the limit and
/// the flag; `--max-output none` writes it.
#[test]
fn an_export_above_max_output_is_refused_with_its_size() {
    let dir = std::env::temp_dir().join(format!("fabric-maxout-{}", std::process::id()));
    let out = dir.join("out");
    let out_s = out.to_str().unwrap();
    let export = |limit: &str| {
        fabric(&[
            "routes",
            "export",
            "--preset",
            "fat-tree-k8",
            "--format",
            "ip",
            "--out",
            out_s,
            "--max-output",
            limit,
        ])
    };
    let o = export("100kB");
    let e = stderr(&o);
    assert_eq!(o.status.code(), Some(2), "{e}");
    assert!(
        e.starts_with("error: --max-output 100.0 kB: the export would write about "),
        "{e}"
    );
    assert!(e.contains("(ip: about "), "{e}");
    assert!(e.contains("of 80 switch files"), "{e}");
    assert!(e.contains("--max-output none"), "{e}");
    assert!(!out.exists(), "wrote despite the refusal");
    // Within the limit (the default, 2 GB, and none) it writes.
    for limit in ["2GB", "none"] {
        let o = export(limit);
        assert!(o.status.success(), "{}", stderr(&o));
        assert!(out.join("ip/pod0-leaf0.batch").is_file());
    }
    let o = export("2XB");
    assert!(
        stderr(&o).contains("expected a size such as 500MB"),
        "{}",
        stderr(&o)
    );
    std::fs::remove_dir_all(&dir).ok();
}

/// Well past the limit with a single file past the sample, the refusal comes from the
/// lower bound, naming the file it did not size. Near the limit the export is counted in
/// full: the refusal names the exact size in bytes, which given back as `--max-output` is
/// accepted, and the files written come to exactly that size.
#[test]
fn the_size_a_refusal_names_is_accepted_and_is_what_is_written() {
    let dir = std::env::temp_dir().join(format!("fabric-maxout-exact-{}", std::process::id()));
    let out = dir.join("out");
    let out_s = out.to_str().unwrap();
    let build = |limit: &str| {
        fabric(&[
            "build",
            "--preset",
            "fat-tree-k4",
            "--out",
            out_s,
            "--max-output",
            limit,
        ])
    };
    // routes.json alone is past 50 kB, and a single file cannot be extrapolated from a
    // sample: the rest plus the 50 kB it passed is already well past the limit.
    let o = build("50kB");
    let e = stderr(&o);
    assert_eq!(o.status.code(), Some(2), "{e}");
    assert!(!out.exists(), "wrote despite the refusal");
    assert!(
        e.starts_with("error: --max-output 50.0 kB: the export would write more than "),
        "{e}"
    );
    assert!(
        e.contains(
            "json (routes.json): more than 50.0 kB, one file, sized only by formatting it in full"
        ),
        "{e}"
    );
    // The whole export's size, written once without a limit.
    let o = build("none");
    assert!(o.status.success(), "{}", stderr(&o));
    let size = dir_bytes(&out);
    std::fs::remove_dir_all(&out).unwrap();
    // One byte under it: every format fits the sample, the sum is near the limit, so the
    // export is counted in full and refused with its exact size.
    let o = build(&(size - 1).to_string());
    let e = stderr(&o);
    assert_eq!(o.status.code(), Some(2), "{e}");
    assert!(!out.exists(), "wrote despite the refusal");
    let named = e
        .split("pass --max-output ")
        .nth(1)
        .and_then(|rest| rest.split(' ').next())
        .unwrap_or_else(|| panic!("no size to pass in: {e}"));
    assert_eq!(named, size.to_string(), "{e}");
    assert!(e.contains(&format!("would write {named} bytes (")), "{e}");
    assert!(e.contains(", counted in full)"), "{e}");
    let o = build(named);
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(dir_bytes(&out), size);
    std::fs::remove_dir_all(&dir).ok();
}

/// The bytes of every file under `dir`.
fn dir_bytes(dir: &Path) -> u64 {
    std::fs::read_dir(dir)
        .unwrap()
        .map(|e| {
            let e = e.unwrap();
            let meta = e.metadata().unwrap();
            if meta.is_dir() {
                dir_bytes(&e.path())
            } else {
                meta.len()
            }
        })
        .sum()
}
