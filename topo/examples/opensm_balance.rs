//! Per-tier balance of OpenSM's own routing engines against topo's single-path tables, on
//! the same fat-tree with the same failed links (issue 15's comparison).
//!
//! For each fabric and failure share: topo routes it and writes the OpenSM export of plane 0
//! (`.net` without the failed links, `guid2lid`, our `lfts.dump`); `ibsim` simulates that
//! fabric, OpenSM (`-R ENGINE`, our LIDs from `guid2lid`, `-D 0x43` so it dumps what it
//! programmed to `opensm-lfts.dump`) routes it with each engine, and the dump is read back
//! into a copy of our table, so [`topo::balance::of_lft`] measures both the same way.
//!
//! ```text
//! cargo run --release -p topo --example opensm_balance -- fat-tree-k8 deepseek-mpft [--engines ftree,minhop|none]
//! ```
//! Every plane of a multi-plane fabric is its own subnet: ibsim and OpenSM run once per plane.
//! Needs Debian's `opensm`, `ibsim-utils` and `libumad2sim0` (`scripts/install-deps.sh`); no
//! root (ibsim talks to OpenSM over a private socket through `LD_PRELOAD`).

use std::collections::HashMap;
use std::fs;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use topo::balance::{TierBalance, of_lft};
use topo::export::{self, Format, MemSink, Routed, Tables};
use topo::lft::Lft;
use topo::{Fabric, NodeId, Routes};

#[path = "../tests/common/ibsim.rs"]
mod ibsim;

use ibsim::{Ibsim, parse_lft_dump};

/// OpenSM's tables: IB port per LID, per switch GUID.
type Dump = std::collections::BTreeMap<u64, std::collections::BTreeMap<u16, u8>>;
const SHARES: [u32; 4] = [0, 1, 5, 10];

type Result<T> = std::result::Result<T, String>;

fn main() {
    if let Err(e) = run() {
        eprintln!("opensm_balance: {e}");
        std::process::exit(1);
    }
}

fn run() -> Result<()> {
    let mut presets = Vec::new();
    let mut engines = vec!["ftree".to_string(), "minhop".to_string()];
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        if a == "--engines" {
            let v = args.next().ok_or("--engines needs a list")?;
            engines = v
                .split(',')
                .filter(|e| !e.is_empty() && *e != "none")
                .map(str::to_string)
                .collect();
        } else {
            presets.push(a);
        }
    }
    if presets.is_empty() {
        presets = vec!["fat-tree-k8".to_string(), "fat-tree-k16".to_string()];
    }
    println!(
        "| fabric | failed links | tables | tier | destinations max/mean | all-to-all pairs max/mean | idle up links | worst switch: max on one port / ideal | entries without a route | time |"
    );
    println!("|---|---|---|---|---|---|---|---|---|---|");
    for name in &presets {
        for share in SHARES {
            compare(name, share, &engines)?;
        }
    }
    Ok(())
}

/// One fabric, one failure share: topo's table, then each OpenSM engine's.
fn compare(name: &str, share: u32, engines: &[String]) -> Result<()> {
    let f = topo::presets::build(name).map_err(|e| e.to_string())?;
    let switch_links = (0..f.num_links() as u32)
        .filter(|&l| !f.is_host(f.link(topo::LinkId(l)).a))
        .count();
    let n = (switch_links as f64 * share as f64 / 100.0).round() as usize;
    let mut routes = Routes::compute(&f);
    routes.fail_links(&f, &topo::failures::random_links(&f, n, 1));
    let t0 = Instant::now();
    let ours = Lft::compute(&f, &routes);
    let label = format!("{name} | {n} ({share}%)");
    print_rows(
        &f,
        &label,
        "topo",
        &of_lft(&f, &routes, &ours),
        0,
        t0.elapsed(),
    );

    let addr = topo::addressing::AddressPlan::without_ipv4(&f).map_err(|e| e.to_string())?;
    let routed = Routed {
        fabric: &f,
        addr: &addr,
        tables: Tables::SinglePath(&routes, &ours),
        lanes: None,
    };
    let mut sink = MemSink::new();
    export::export(&routed, Format::Opensm, &mut sink).map_err(|e| e.to_string())?;
    let mut theirs = vec![(ours.clone(), 0usize, Duration::ZERO); engines.len()];
    for plane in 0..f.num_planes() as u16 {
        let dir = scratch(&format!("{name}-{share}-p{plane}"));
        let files = dir.join("plane");
        fs::create_dir_all(&files).map_err(|e| e.to_string())?;
        for file in ["fabric.net", "guid2lid"] {
            let text = sink
                .text(&format!("opensm/plane{plane}/{file}"))
                .ok_or(format!("export wrote no plane{plane}/{file}"))?;
            fs::write(files.join(file), text).map_err(|e| e.to_string())?;
        }
        let sock = format!("fabric-osm-{}", std::process::id());
        let sim = Ibsim::start(&dir, &files.join("fabric.net"), &sock)?;
        for (engine, (lft, missing, took)) in engines.iter().zip(&mut theirs) {
            let t0 = Instant::now();
            let dump = route(&sim, &dir, &files.join("guid2lid"), engine)?;
            *took += t0.elapsed();
            *missing += overwrite(&f, &addr, lft, plane, &dump);
        }
        drop(sim);
        let _ = fs::remove_dir_all(&dir);
    }
    for (engine, (lft, missing, took)) in engines.iter().zip(&theirs) {
        let tables = format!("OpenSM {engine}");
        print_rows(
            &f,
            &label,
            &tables,
            &of_lft(&f, &routes, lft),
            *missing,
            *took,
        );
    }
    Ok(())
}

fn print_rows(
    f: &Fabric,
    label: &str,
    tables: &str,
    tiers: &[TierBalance],
    missing: usize,
    took: Duration,
) {
    for t in tiers {
        let worst = t.worst_switch.map_or("-".to_string(), |(s, m, i)| {
            format!("{m} / {i} ({})", f.node_name(s))
        });
        println!(
            "| {label} | {tables} | {} | {:.2} | {:.2} | {} | {worst} | {missing} | {:.1} ms |",
            t.tier,
            t.dest_ratio(),
            t.pair_ratio(),
            t.idle_up_links,
            took.as_secs_f64() * 1e3
        );
    }
}

/// Writes OpenSM's entries (`lid → IB port`, per switch GUID) into `lft`'s `plane` for
/// every host column; returns how many (switch, host) entries OpenSM left without a route.
fn overwrite(
    f: &Fabric,
    addr: &topo::addressing::AddressPlan,
    lft: &mut Lft,
    plane: u16,
    dump: &Dump,
) -> usize {
    let column_of_lid: HashMap<u16, usize> = f
        .hosts()
        .filter_map(|h| Some((addr.host_lid(h, plane)?, lft.column(h, plane)?)))
        .collect();
    let mut missing = 0;
    let t = &mut lft.planes[plane as usize];
    for s in (t.first_switch..t.first_switch + t.rows).map(NodeId) {
        let table = dump.get(&addr.node_guid(s)); // None: OpenSM programmed nothing there
        for (&lid, &c) in &column_of_lid {
            let port = table
                .and_then(|tbl| tbl.get(&lid))
                .and_then(|&p| p.checked_sub(1))
                .map(u16::from);
            missing += usize::from(port.is_none());
            t.set_entry(s, c, port);
        }
    }
    missing
}

fn scratch(tag: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("fabric-osm-{}-{tag}", std::process::id()));
    let _ = fs::remove_dir_all(&d);
    d
}

/// Runs OpenSM once on `sim` with `engine` and returns the tables it programmed.
fn route(sim: &Ibsim, dir: &Path, guid2lid: &Path, engine: &str) -> Result<Dump> {
    let (cache, tmp) = (
        dir.join(format!("cache-{engine}")),
        dir.join(format!("tmp-{engine}")),
    );
    for d in [&cache, &tmp] {
        fs::create_dir_all(d).map_err(|e| e.to_string())?;
    }
    fs::copy(guid2lid, cache.join("guid2lid")).map_err(|e| e.to_string())?;
    let log = dir.join(format!("osm-{engine}.log"));
    let out = sim
        .command("opensm")
        .args(["-o", "-R", engine, "-D", "0x43", "-f"])
        .arg(&log)
        .env("OSM_CACHE_DIR", &cache)
        .env("OSM_TMP_DIR", &tmp)
        .output()
        .map_err(|e| format!("opensm: {e} (install opensm)"))?;
    if !out.status.success() {
        return Err(format!(
            "opensm -R {engine} failed: {}",
            String::from_utf8_lossy(&out.stderr)
        ));
    }
    let text = fs::read_to_string(&log).unwrap_or_default();
    if let Some(l) = text.lines().find(|l| l.contains("tables configured")) {
        eprintln!("{engine}: {}", l.split("-> ").last().unwrap_or(l));
    }
    let dump = fs::read_to_string(tmp.join("opensm-lfts.dump"))
        .map_err(|e| format!("opensm -R {engine} wrote no opensm-lfts.dump: {e}"))?;
    parse_lft_dump(&dump, "opensm-lfts.dump")
}
