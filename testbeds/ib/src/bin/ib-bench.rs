//! Measures fabric as OpenSM's brain against OpenSM's own routing engines, on ibsim.
//!
//! ```text
//! ib-bench balance FABRIC [FAILED_LINKS,...]   # default 0,1,4,16
//! ib-bench reroute FABRIC [FAILURES]           # default 5
//! ```
//! `balance`: for each count of failed switch–switch links (random, seed 1), OpenSM
//! routes the failed fabric with each engine — `file` on fabric's tables, `ftree`,
//! `updn`, `minhop` — and writes what it programmed (`opensm-lfts.dump`); each is read
//! into topo's LFT and measured per tier (max/mean destinations per up port, the worst
//! switch's max/ideal, idle up links) with the entries a switch lacks for a LID it reaches.
//!
//! `reroute`: for each engine, FAILURES cables (random switch–switch links, seed 7) are
//! cut one at a time on ibsim's console and restored after; the time from OpenSM's trap
//! line to the `SUBNET UP` of the sweep that loaded the re-routed tables, both time
//! stamps from OpenSM's own log. For fabric: the trap, the trapping switch's ports read
//! (`iblinkinfo`; `ibnetdiscover` when that cannot tell), incremental re-route, the dump
//! written, and the sweep that loaded it (the trap's own when it had not ended yet, else
//! one asked for with `SIGHUP`). p50/p99 and the ratio
//! to fabric's, from the same run.
//!
//! Needs Debian's opensm, ibsim-utils, libumad2sim0, infiniband-diags; no root.

use std::sync::Arc;
use std::time::{Duration, Instant};

use ib_testbed::brain::{self, Brain};
use ib_testbed::opensm::{self, Engine, SmOptions};
use ib_testbed::parse;
use ib_testbed::subnet::Subnet;
use ib_testbed::tables::{self, Lfts};
use topo::lft::Lft;
use topo::{Fabric, LinkId, NodeId, Routes};

type Result<T> = std::result::Result<T, String>;

/// A log quiet this long: the sweeps the last change queued are over.
const QUIET: Duration = Duration::from_millis(1500);
const SETTLE: Duration = Duration::from_secs(120);

const ENGINES: [&str; 3] = ["ftree", "updn", "minhop"];

fn main() {
    ib_testbed::process::kill_children_on_signal();
    let args: Vec<String> = std::env::args().skip(1).collect();
    let r = match args.first().map(String::as_str) {
        Some("balance") if args.len() >= 2 => balance(&args[1], args.get(2).map(String::as_str)),
        Some("reroute") if args.len() >= 2 => reroute(&args[1], args.get(2).map(String::as_str)),
        _ => Err(
            "usage: ib-bench balance FABRIC [N,N,...] | ib-bench reroute FABRIC [FAILURES]".into(),
        ),
    };
    if let Err(e) = r {
        eprintln!("ib-bench: {e}");
        std::process::exit(1);
    }
}

fn load() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .map(|s| s.split_whitespace().take(3).collect::<Vec<_>>().join(" "))
        .unwrap_or_default()
}

fn fabric(name: &str) -> Result<Arc<Fabric>> {
    Ok(Arc::new(
        topo::presets::build(name).map_err(|e| e.to_string())?,
    ))
}

fn balance(name: &str, counts: Option<&str>) -> Result<()> {
    let f = fabric(name)?;
    let counts: Vec<usize> = counts
        .unwrap_or("0,1,4,16")
        .split(',')
        .map(|c| c.parse().map_err(|_| format!("{c:?}: not a count")))
        .collect::<Result<_>>()?;
    println!("load average at start: {}", load());
    println!(
        "| fabric | failed links | tables (engine OpenSM used) | tier | destinations max/mean | worst switch max/ideal | idle up links | entries missing (host LIDs + switch LIDs) |"
    );
    println!("|---|---|---|---|---|---|---|---|");
    for n in counts {
        let failed = topo::failures::random_links(&f, n, 1);
        let mut routes = Routes::compute(&f);
        routes.fail_links(&f, &failed);
        let ours = Lft::compute(&f, &routes);
        let mut net =
            Subnet::start(f.clone(), &format!("balance-{n}")).map_err(|e| e.to_string())?;
        for &l in &failed {
            net.unlink(l).map_err(|e| e.to_string())?;
        }
        let opt = SmOptions {
            sweep_s: 10,
            dumps: true,
        };
        net.write_tables(&routes, &ours)
            .map_err(|e| e.to_string())?;
        let mut engines = vec![Engine::File(net.lfts_path())];
        engines.extend(ENGINES.iter().filter_map(|e| Engine::parse(e)));
        for engine in engines {
            let label = engine.name();
            let sm = net.start_sm(engine, &opt).map_err(|e| e.to_string())?;
            let (lines, _) = sm.lines_from(0).map_err(|e| e.to_string())?;
            let used = lines
                .iter()
                .rev()
                .find(|l| opensm::is_configured(l))
                .and_then(|l| l.split("-> ").nth(1))
                .and_then(|l| l.split_whitespace().nth(1))
                .unwrap_or("?")
                .to_string();
            let got = sm.programmed().map_err(|e| e.to_string())?;
            let unreached = tables::unreached(net.design(), &routes, &got);
            let to_hosts = unreached
                .iter()
                .filter(|&&(_, lid)| net.design().node_of_lid(lid).is_some_and(|n| f.is_host(n)))
                .count();
            let missing = format!("{to_hosts} + {}", unreached.len() - to_hosts);
            let lft = into_lft(&net, &ours, &got);
            for t in topo::balance::of_lft(&f, &routes, &lft) {
                let worst = t
                    .worst_switch
                    .map_or("-".to_string(), |(_, m, i)| format!("{m}/{i}"));
                println!(
                    "| {name} | {n} | {} | {} | {:.2} | {worst} | {} | {missing} |",
                    if label == "file" {
                        "fabric (file)".to_string()
                    } else {
                        format!("{label} ({used})")
                    },
                    t.tier,
                    t.dest_ratio(),
                    t.idle_up_links,
                );
            }
        }
    }
    println!("load average at end: {}", load());
    Ok(())
}

/// A copy of `ours` with every host column overwritten from `got` (entries `got` lacks
/// become "no route").
fn into_lft(net: &Subnet, ours: &Lft, got: &Lfts) -> Lft {
    let d = net.design();
    let f = &d.fabric;
    let mut lft = ours.clone();
    let t = &mut lft.planes[0];
    let cols: Vec<(u16, usize)> = f
        .hosts()
        .filter_map(|h| Some((d.lid(h), lft_col(ours, h)?)))
        .collect();
    for s in (t.first_switch..t.first_switch + t.rows).map(NodeId) {
        let table = got.get(&d.addr.node_guid(s));
        for &(lid, c) in &cols {
            let port = table
                .and_then(|x| x.get(&lid))
                .and_then(|&p| p.checked_sub(1))
                .map(u16::from);
            t.set_entry(s, c, port);
        }
    }
    lft
}

fn lft_col(l: &Lft, h: NodeId) -> Option<usize> {
    l.column(h, 0)
}

fn reroute(name: &str, failures: Option<&str>) -> Result<()> {
    let f = fabric(name)?;
    let n: usize = failures
        .unwrap_or("5")
        .parse()
        .map_err(|_| "FAILURES: not a count".to_string())?;
    let links = topo::failures::random_links(&f, n, 7);
    println!(
        "{name}: {} failures, load average at start: {}",
        links.len(),
        load()
    );
    let mut results: Vec<(String, Vec<f64>)> = Vec::new();
    // fabric first.
    let t = Instant::now();
    let mut b = Brain::start(f.clone(), "reroute-fabric").map_err(|e| e.to_string())?;
    eprintln!("fabric: subnet up in {:.1} s", t.elapsed().as_secs_f64());
    let mut ms = Vec::new();
    for &l in &links {
        let (took, detail) = fabric_once(&mut b, l)?;
        eprintln!("fabric link {}: {took:.1} ms ({detail})", l.0);
        ms.push(took);
    }
    results.push(("fabric (file)".into(), ms));
    drop(b);
    let mut net = Subnet::start(f.clone(), "reroute-engines").map_err(|e| e.to_string())?;
    for e in ENGINES {
        let engine = Engine::parse(e).expect("known");
        net.start_sm(engine, &SmOptions::default())
            .map_err(|e| e.to_string())?;
        let mut ms = Vec::new();
        let mut used = String::new();
        for &l in &links {
            let (took, u) = engine_once(&mut net, l)?;
            eprintln!("{e} link {}: {took:.1} ms ({u})", l.0);
            used = u;
            ms.push(took);
        }
        results.push((format!("{e} ({used})"), ms));
    }
    println!("load average at end: {}", load());
    println!("| fabric | tables | failures | p50 ms | p99 ms | p50 / fabric's |");
    println!("|---|---|---|---|---|---|");
    let base = pct(&results[0].1, 50.0);
    for (label, ms) in &results {
        let p50 = pct(ms, 50.0);
        println!(
            "| {name} | {label} | {} | {p50:.0} | {:.0} | {:.2} |",
            ms.len(),
            pct(ms, 99.0),
            p50 / base
        );
    }
    Ok(())
}

/// Cuts `l`, lets fabric answer; ms from OpenSM's trap line to the `SUBNET UP` of the
/// sweep that loaded fabric's tables. Then restores it (answered too, not timed).
fn fabric_once(b: &mut Brain, l: LinkId) -> Result<(f64, String)> {
    let s = |e: ib_testbed::Error| e.to_string();
    b.subnet().sm().ok_or("no SM")?.settle(QUIET, SETTLE);
    let offset = b.subnet().sm().ok_or("no SM")?.log_end();
    b.subnet().unlink(l).map_err(s)?;
    let (trap, lid, trap_end) =
        brain::wait_trap(b.subnet(), offset, Duration::from_secs(60)).map_err(s)?;
    let t = Instant::now();
    let (changes, how) = match b.detect_at(&[lid]).map_err(s)? {
        Some(c) => (c, "iblinkinfo"),
        None => (b.detect().map_err(s)?.0, "ibnetdiscover"),
    };
    let detect_ms = t.elapsed().as_secs_f64() * 1e3;
    if changes.len() != 1 || changes[0].link != l {
        return Err(format!("cut link {}, found {changes:?}", l.0));
    }
    let a = b.answer_after(&changes, Some(trap_end)).map_err(s)?;
    let took = elapsed_ms(&trap, &a.subnet_up)?;
    let detail = format!(
        "detect ({how}) {detect_ms:.1} ms, {} entries, compute {:.1} ms, write {:.1} ms, load {:.1} ms, {} sweeps, {} SIGHUPs",
        a.entries_changed,
        a.compute_us as f64 / 1e3,
        a.write_us as f64 / 1e3,
        a.load_us as f64 / 1e3,
        a.sweeps,
        a.hups
    );
    b.subnet().sm().ok_or("no SM")?.settle(QUIET, SETTLE);
    let offset = b.subnet().sm().ok_or("no SM")?.log_end();
    b.subnet().relink(l).map_err(s)?;
    let (_, lid, trap_end) =
        brain::wait_trap(b.subnet(), offset, Duration::from_secs(60)).map_err(s)?;
    let changes = match b.detect_at(&[lid]).map_err(s)? {
        Some(c) => c,
        None => b.detect().map_err(s)?.0,
    };
    b.answer_after(&changes, Some(trap_end)).map_err(s)?;
    Ok((took, detail))
}

/// Cuts `l` under an OpenSM engine; ms from the trap line to the `SUBNET UP` after the
/// routing pass it triggered, and the engine OpenSM used. Then restores it.
fn engine_once(net: &mut Subnet, l: LinkId) -> Result<(f64, String)> {
    let s = |e: ib_testbed::Error| e.to_string();
    net.sm().ok_or("no SM")?.settle(QUIET, SETTLE);
    let offset = net.sm().ok_or("no SM")?.log_end();
    net.unlink(l).map_err(s)?;
    let (trap, _, after) = brain::wait_trap(net, offset, Duration::from_secs(60)).map_err(s)?;
    let sm = net.sm().ok_or("no SM")?;
    let wait = Duration::from_secs(300);
    let (conf, after) = sm
        .wait_line(after, wait, opensm::is_configured)
        .map_err(s)?;
    let (up, _) = sm.wait_line(after, wait, opensm::is_subnet_up).map_err(s)?;
    let used = conf
        .split("-> ")
        .nth(1)
        .and_then(|x| x.split_whitespace().nth(1))
        .unwrap_or("?")
        .to_string();
    let took = elapsed_ms(&trap, &up)?;
    sm.settle(QUIET, SETTLE);
    let offset = sm.log_end();
    net.relink(l).map_err(s)?;
    let (_, _, after) = brain::wait_trap(net, offset, Duration::from_secs(60)).map_err(s)?;
    let sm = net.sm().ok_or("no SM")?;
    sm.wait_line(after, wait, opensm::is_subnet_up).map_err(s)?;
    Ok((took, used))
}

fn elapsed_ms(from: &str, to: &str) -> Result<f64> {
    let (a, b) = (parse::log_time_us(from), parse::log_time_us(to));
    match (a, b) {
        (Some(a), Some(b)) => Ok(parse::log_elapsed_us(a, b) as f64 / 1e3),
        _ => Err(format!("no time stamp in {from:?} or {to:?}")),
    }
}

/// Nearest-rank percentile.
fn pct(v: &[f64], p: f64) -> f64 {
    let mut s = v.to_vec();
    s.sort_by(f64::total_cmp);
    if s.is_empty() {
        return f64::NAN;
    }
    let i = ((p / 100.0 * s.len() as f64).ceil() as usize).clamp(1, s.len()) - 1;
    s[i]
}
