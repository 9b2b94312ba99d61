//! Root-only: `fabric testbed compare` end to end — real veth runs of one algorithm, its
//! simulator twin once in lockstep, again with jittered starts and once per veth run at
//! that run's own starts, the table with a row for each, one CSV line per run, the JSON
//! rows, and no namespace left behind.

use std::process::{Command, Stdio};

#[test]
fn compare_runs_veth_and_both_twins_and_writes_table_csv_and_json() {
    match veth::root_tests_enabled() {
        Ok(true) => {}
        Ok(false) => return,
        Err(why) => panic!("{why}"),
    }
    let dir = std::env::temp_dir().join(format!("fabric-compare-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let (csv, json) = (dir.join("rows.csv"), dir.join("rows.json"));
    let scenario = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../scenarios/veth-incast-8to1.toml"
    );
    let child = Command::new(env!("CARGO_BIN_EXE_fabric"))
        .args(["testbed", "compare", scenario, "--algorithms", "dctcp"])
        .args(["--repeat", "2", "--twin-jitter", "5us", "--csv"])
        .arg(&csv)
        .arg("--json")
        .arg(&json)
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let pid = child.id();
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success(), "{:?}", out.status);
    let left: Vec<String> = veth::netns::list_ours()
        .into_iter()
        .filter(|n| veth::netns::owner_pid(n) == Some(pid))
        .collect();
    assert!(left.is_empty(), "left behind: {left:?}");

    // The JSON: one row, two veth runs, the lockstep twin, two jittered twin runs.
    let rows: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    let row = &rows.as_array().expect("an array of rows")[0];
    assert_eq!(row["algorithm"], "dctcp");
    assert_eq!(row["veth"].as_array().unwrap().len(), 2, "{row}");
    assert_eq!(row["sim_jittered"].as_array().unwrap().len(), 2, "{row}");
    assert_eq!(row["twin_jitter_us"], 5.0);
    // And the twin of each veth run at that run's own starts, which were late, not early.
    assert_eq!(row["sim_replayed"].as_array().unwrap().len(), 2, "{row}");
    for late in row["start_late_us"].as_array().unwrap() {
        let (lo, hi) = (late[0].as_f64().unwrap(), late[1].as_f64().unwrap());
        assert!(0.0 <= lo && lo <= hi, "{late}");
    }
    // The twin is deterministic: DCTCP's 8:1 incast finishes all eight flows with a p50
    // of 1,152 µs in lockstep (docs/veth.md); its jittered runs start later, never sooner.
    let sim = &row["sim"];
    assert_eq!(
        (sim["finished"].as_u64(), sim["flows"].as_u64()),
        (Some(8), Some(8))
    );
    assert_eq!(
        sim["fct_p50_us"].as_f64().map(f64::round),
        Some(1152.0),
        "{sim}"
    );
    for r in row["sim_jittered"].as_array().unwrap() {
        assert_eq!(r["finished"].as_u64(), Some(8), "{r}");
    }
    let verdict = row["verdict"].as_str().unwrap();
    assert!(
        verdict.starts_with("agrees") || verdict.starts_with("differs: "),
        "{verdict}"
    );
    // Veth's two runs finished every flow, however loaded the machine (a run behind real
    // time says so in its verdict; it still ends).
    for r in row["veth"].as_array().unwrap() {
        assert_eq!(r["finished"], r["flows"], "{r}");
    }

    // The CSV: a header, then one line per run, each naming its side (the field after
    // the build, which follows the quoted parameters).
    let text = std::fs::read_to_string(&csv).unwrap();
    let sides: Vec<&str> = text
        .lines()
        .skip(1)
        .map(|l| l.rsplit_once("\",").unwrap().1.split(',').nth(1).unwrap())
        .collect();
    assert_eq!(
        sides,
        [
            "veth",
            "veth",
            "sim",
            "sim-jitter",
            "sim-jitter",
            "sim-replay",
            "sim-replay"
        ],
        "{text}"
    );

    // The table: the three rows of the algorithm, the verdict in the first.
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.contains("| dctcp | veth ×2 |"), "{stdout}");
    assert!(stdout.contains("|  | sim | 0 |"), "{stdout}");
    assert!(
        stdout.contains("|  | sim ×2, starts ≤ 5 µs apart |"),
        "{stdout}"
    );
    assert!(
        stdout.contains("|  | sim ×2, each veth run's starts (≤ "),
        "{stdout}"
    );
    assert!(stdout.contains(verdict), "{stdout}");
    std::fs::remove_dir_all(&dir).unwrap();
}
