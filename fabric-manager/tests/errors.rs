//! How `fabric` reports errors, on the real binary: one `error: ` prefix for bad input
//! (exit 2) and for failed checks (exit 1) alike, and a write error on `--out` named as
//! such (a device such as /dev/full is a file, not a directory to create files in).

mod common;
use common::fabric;

/// Runs `fabric args`, asserts it exits with `code` (any failure when None) and that its
/// stderr starts with `prefix`; returns the stderr.
fn refused(args: &[&str], code: Option<i32>, prefix: &str) -> String {
    let o = fabric(args);
    let e = String::from_utf8_lossy(&o.stderr).into_owned();
    match code {
        Some(c) => assert_eq!(o.status.code(), Some(c), "{e}"),
        None => assert!(!o.status.success(), "{e}"),
    }
    assert!(e.starts_with(prefix), "{e}");
    e
}

#[test]
fn every_error_starts_with_one_prefix() {
    // Bad input through `input()` (exit 2).
    refused(
        &["routes", "verify", "nonexistent.toml"],
        Some(2),
        "error: nonexistent.toml: no such file",
    );
    // Bad input through main's error path.
    refused(&["topo", "show", "nonexistent.toml"], None, "error: ");
    // A failed check (exit 1): a failed leaf cuts its hosts off.
    let k4_without_leaf0 = ["--preset", "fat-tree-k4", "--fail", "pod0-leaf0"];
    refused(
        &[&["routes", "verify"][..], &k4_without_leaf0].concat(),
        Some(1),
        "error: routes verify: verification failed",
    );
    refused(
        &[
            &["routes", "export"][..],
            &k4_without_leaf0,
            &["--format", "json", "--out", "/dev/null"],
        ]
        .concat(),
        Some(1),
        "error: routes export: ",
    );
}

#[test]
fn out_to_a_full_device_is_a_write_error() {
    let export = |formats| {
        [
            "routes",
            "export",
            "--preset",
            "fat-tree-k4",
            "--format",
            formats,
            "--out",
            "/dev/full",
        ]
    };
    let e = refused(&export("json"), None, "error: ");
    assert!(e.contains("/dev/full"), "{e}");
    assert!(e.contains("No space left on device"), "{e}");
    assert!(!e.contains("directory"), "taken for a directory: {e}");
    // Several files cannot go to one.
    refused(
        &export("json,opensm"),
        Some(2),
        "error: --out /dev/full: is (or looks like) a file",
    );
}

/// A preset number out of range is named as such, with no list of other preset names after
/// it; an unknown failure name says what a failure may be.
#[test]
fn bad_presets_and_failure_names_say_what_was_expected() {
    let e = refused(&["topo", "show", "fat-tree-k3"], Some(2), "error: ");
    assert!(
        e.starts_with("error: preset fat-tree-k3: k: 3 is not an even switch radix from 2 to 160"),
        "{e}"
    );
    assert!(!e.contains("besides these"), "{e}");
    let e = refused(
        &["topo", "show", "fat-tree-k99999999999999999999"],
        Some(2),
        "error: ",
    );
    assert!(
        e.contains("k: 99999999999999999999 is not an even switch radix"),
        "{e}"
    );
    let e = refused(&["topo", "show", "fat-tree-x"], Some(2), "error: ");
    assert!(
        e.contains("unknown preset `fat-tree-x`") && e.contains("dragonfly-plus-g<GROUPS>"),
        "{e}"
    );
    refused(
        &[
            "routes",
            "verify",
            "--preset",
            "fat-tree-k4",
            "--fail",
            "pod0-leaf9",
        ],
        Some(2),
        "error: invalid failure `pod0-leaf9`: no node named `pod0-leaf9` (expected a switch or host name",
    );
}

/// Every file a user names is read up to a limit: an endless one (`/dev/zero`) is refused
/// with the limit named instead of filling memory.
#[test]
fn endless_input_files_are_refused_at_their_limit() {
    let e = refused(
        &[
            "place",
            "job",
            "fat-tree-k4",
            "--gpus",
            "4",
            "--health",
            "/dev/zero",
        ],
        None,
        "error: ",
    );
    assert!(
        e.contains("cannot read health file /dev/zero") && e.contains("larger than the 64 MiB"),
        "{e}"
    );
    let e = refused(
        &["sim", "compare-lb", "--workloads", "/dev/zero"],
        None,
        "error: ",
    );
    assert!(
        e.contains("/dev/zero") && e.contains("larger than the 64 MiB"),
        "{e}"
    );
}
