//! How `fabric` reports errors, on the real binary: one `error: ` prefix for bad input
//! (exit 2) and for failed checks (exit 1) alike, and a write error on `--out` named as
//! such (a device such as /dev/full is a file, not a directory to create files in).

use std::process::{Command, Output};

fn fabric(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_fabric"))
        .args(args)
        .current_dir(concat!(env!("CARGO_MANIFEST_DIR"), "/.."))
        .output()
        .unwrap()
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

#[test]
fn every_error_starts_with_one_prefix() {
    // Bad input through `input()` (exit 2).
    let o = fabric(&["routes", "verify", "nonexistent.toml"]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(
        stderr(&o).starts_with("error: nonexistent.toml: no such file"),
        "{}",
        stderr(&o)
    );
    // Bad input through main's error path.
    let o = fabric(&["topo", "show", "nonexistent.toml"]);
    assert_ne!(o.status.code(), Some(0));
    assert!(stderr(&o).starts_with("error: "), "{}", stderr(&o));
    // A failed check (exit 1): a failed leaf cuts its hosts off.
    let o = fabric(&[
        "routes",
        "verify",
        "--preset",
        "fat-tree-k4",
        "--fail",
        "pod0-leaf0",
    ]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    assert!(
        stderr(&o).starts_with("error: routes verify: verification failed"),
        "{}",
        stderr(&o)
    );
    let o = fabric(&[
        "routes",
        "export",
        "--preset",
        "fat-tree-k4",
        "--fail",
        "pod0-leaf0",
        "--format",
        "json",
        "--out",
        "/dev/null",
    ]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    assert!(
        stderr(&o).starts_with("error: routes export: "),
        "{}",
        stderr(&o)
    );
}

#[test]
fn out_to_a_full_device_is_a_write_error() {
    let o = fabric(&[
        "routes",
        "export",
        "--preset",
        "fat-tree-k4",
        "--format",
        "json",
        "--out",
        "/dev/full",
    ]);
    let e = stderr(&o);
    assert_ne!(o.status.code(), Some(0), "{e}");
    assert!(e.starts_with("error: "), "{e}");
    assert!(e.contains("/dev/full"), "{e}");
    assert!(e.contains("No space left on device"), "{e}");
    assert!(!e.contains("directory"), "taken for a directory: {e}");
    // Several files cannot go to one.
    let o = fabric(&[
        "routes",
        "export",
        "--preset",
        "fat-tree-k4",
        "--format",
        "json,opensm",
        "--out",
        "/dev/full",
    ]);
    let e = stderr(&o);
    assert_eq!(o.status.code(), Some(2), "{e}");
    assert!(
        e.starts_with("error: --out /dev/full: is (or looks like) a file"),
        "{e}"
    );
}
