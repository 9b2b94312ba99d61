//! `fabric testbed run` refuses arguments that cannot work before it builds the testbed,
//! so a user does not wait for a real-time run to learn that its plots have nowhere to go
//! (root-only: the root check comes first) or that nothing was captured.

mod common;

/// `fabric testbed run` of the 8:1 incast with `extra` arguments: its exit code, stdout
/// and stderr.
fn testbed_run(extra: &[&str]) -> (Option<i32>, String, String) {
    let mut args = vec!["testbed", "run", "scenarios/veth-incast-8to1.toml"];
    args.extend_from_slice(extra);
    let o = common::fabric(&args);
    let text = |b: &[u8]| String::from_utf8_lossy(b).into_owned();
    (o.status.code(), text(&o.stdout), text(&o.stderr))
}

#[test]
fn an_unwritable_plot_directory_is_refused_before_the_run() {
    match veth::root_tests_enabled() {
        Ok(true) => {}
        Ok(false) => return,
        Err(why) => panic!("{why}"),
    }
    // /proc does not take new directories, even from root.
    let (code, stdout, stderr) = testbed_run(&["--plot", "/proc/fabric-no-such-dir"]);
    assert_ne!(code, Some(0), "{stdout}\n{stderr}");
    assert!(
        stderr.contains("--plot /proc/fabric-no-such-dir: cannot create the directory"),
        "{stderr}"
    );
    // Refused before the testbed was built: no run, no report.
    assert!(!stdout.contains("ran "), "the run went ahead: {stdout}");
    assert!(
        !stdout.contains("scenario "),
        "the run went ahead: {stdout}"
    );
}

/// `--pcap-port` names what to capture, `--pcap` where: the port alone used to run the
/// testbed and capture nothing, silently. Refused by the argument parser (exit 2), so
/// this needs no root.
#[test]
fn a_pcap_port_without_a_pcap_file_is_refused() {
    let (code, stdout, stderr) = testbed_run(&["--pcap-port", "3"]);
    assert_eq!(code, Some(2), "{stdout}\n{stderr}");
    assert!(stderr.contains("--pcap <PCAP>"), "{stderr}");
    assert!(!stdout.contains("ran "), "the run went ahead: {stdout}");
}

/// `--wall-limit 0` stopped the run at once (exit 124): refused by the argument parser.
#[test]
fn a_zero_wall_limit_is_refused() {
    let (code, stdout, stderr) = testbed_run(&["--wall-limit", "0"]);
    assert_eq!(code, Some(2), "{stdout}\n{stderr}");
    assert!(
        stderr.contains("--wall-limit <WALL_LIMIT>") && stderr.contains("0 is not in 1.."),
        "{stderr}"
    );
    assert!(!stdout.contains("ran "), "the run went ahead: {stdout}");
}
