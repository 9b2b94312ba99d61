//! `fabric sim … --record FILE`: run the simulation in steps of `--record-every` (virtual
//! time) and write the fabric map, every snapshot and every event into a recording
//! (`fabric_api::recording`, see docs/telemetry.md) that `fabric-tui --replay` and tests
//! read back.

use anyhow::Context;
use cc_algos::{Duration, Instant};
use fabric_api::Frame;
use fabric_api::recording::Writer;
use scenario::Workplan;
use sim::{RunState, Sim, SimConfig, SimResults};
use std::io::BufWriter;
use std::path::Path;

/// What a recorded run wrote.
#[derive(Debug)]
pub struct Recorded {
    /// Snapshots written.
    pub snapshots: u64,
    /// Events written.
    pub events: u64,
    /// File size, bytes.
    pub bytes: u64,
}

/// Runs `plan` on `fabric`, snapshotting every `every` of virtual time into `out`.
/// Returns the results (the same as an unrecorded run's), the wall time and what was
/// written.
pub fn simulate_recording(
    fabric: &topo::Fabric,
    cfg: SimConfig,
    plan: &Workplan,
    out: &Path,
    every: Duration,
) -> anyhow::Result<(SimResults, f64, Recorded)> {
    anyhow::ensure!(
        every > Duration::ZERO,
        "--record-every must be longer than 0"
    );
    let mut sim = Sim::from_fabric(fabric, cfg, plan)?;
    sim.enable_events();
    let file = std::fs::File::create(out)
        .with_context(|| format!("--record: cannot create {}", out.display()))?;
    let mut w = Writer::new(BufWriter::new(file), &sim.fabric_info())
        .with_context(|| format!("--record: writing {}", out.display()))?;
    let wall = std::time::Instant::now();
    let mut rec = Recorded {
        snapshots: 0,
        events: 0,
        bytes: 0,
    };
    let write = |w: &mut Writer<_>, sim: &mut Sim, rec: &mut Recorded| -> anyhow::Result<()> {
        for e in sim.drain_events() {
            w.write(&Frame::Event(e))?;
            rec.events += 1;
        }
        w.write(&Frame::Snapshot(sim.take_snapshot()))?;
        rec.snapshots += 1;
        Ok(())
    };
    write(&mut w, &mut sim, &mut rec)?;
    let mut t = Instant::ZERO;
    loop {
        t += every;
        let state = sim.run_until(t);
        write(&mut w, &mut sim, &mut rec)
            .with_context(|| format!("--record: writing {}", out.display()))?;
        if state == RunState::Finished {
            break;
        }
    }
    let wall = wall.elapsed().as_secs_f64();
    rec.bytes = finish(w, out)?;
    Ok((sim.results(), wall, rec))
}

/// Writes a live veth congestion run (`fabric testbed run --record FILE`) into `out`:
/// the testbed's port map (the star, or every node and link of a multi-switch fabric),
/// then every snapshot as it comes; the run's report at the end.
pub fn record_live(
    run: veth::congestion::LiveRun,
    out: &Path,
) -> anyhow::Result<veth::congestion::CongestionReport> {
    let file = match std::fs::File::create(out) {
        Ok(f) => f,
        Err(e) => {
            run.stop();
            let _ = run.join();
            return Err(e).with_context(|| format!("--record: cannot create {}", out.display()));
        }
    };
    let mut w = Writer::new(BufWriter::new(file), run.fabric())
        .with_context(|| format!("--record: writing {}", out.display()))?;
    let mut written = 0u64;
    for s in run.snapshots() {
        if let Err(e) = w.write(&Frame::Snapshot(s)) {
            run.stop();
            let _ = run.join();
            return Err(e).with_context(|| format!("--record: writing {}", out.display()));
        }
        written += 1;
    }
    let report = run.join()?;
    let bytes = finish(w, out)?;
    println!(
        "recorded {written} snapshots ({:.1} MB) into {}",
        bytes as f64 / 1e6,
        out.display()
    );
    Ok(report)
}

/// Writes the index and trailer; the file's final size (the writer's count leaves them
/// out: the size said used to be the recording's without its index).
fn finish(w: Writer<BufWriter<std::fs::File>>, out: &Path) -> anyhow::Result<u64> {
    let file = w
        .finish()
        .with_context(|| format!("--record: finishing {}", out.display()))?;
    let len = file
        .get_ref()
        .metadata()
        .with_context(|| format!("--record: {}", out.display()))?
        .len();
    Ok(len)
}

#[cfg(test)]
mod tests {
    use super::*;
    use fabric_api::recording::Reader;
    use scenario::{CompileCtx, Scenario};

    #[test]
    fn a_recorded_run_reads_back_and_matches_an_unrecorded_one() {
        let f = topo::generators::fat_tree(4, topo::Rate::gbps(100)).unwrap();
        let plan = Scenario::from_toml_str(
            "[[workload]]\nkind = \"incast\"\nsenders = \"1..4\"\nreceiver = 0\nsize = \"100KB\"\n",
            "t.toml",
        )
        .unwrap()
        .compile(&CompileCtx::new(16, cc_algos::Rate::gbps(100), 1))
        .unwrap();
        let dir = std::env::temp_dir().join(format!("fabric-record-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let out = dir.join("run.rec");
        let cfg = SimConfig::default();
        let (r, _, rec) =
            simulate_recording(&f, cfg.clone(), &plan, &out, Duration::micros(5)).unwrap();
        assert_eq!(r, Sim::from_fabric(&f, cfg, &plan).unwrap().run());
        assert_eq!(
            rec.bytes,
            std::fs::metadata(&out).unwrap().len(),
            "the size said is the file's, index included"
        );
        let mut reader = Reader::open(std::fs::File::open(&out).unwrap()).unwrap();
        assert_eq!(reader.fabric().ports.len(), 2 * f.num_links());
        assert_eq!(reader.index().len() as u64, rec.snapshots);
        let frames = reader.read_all().unwrap();
        assert_eq!(frames.len() as u64, rec.snapshots + rec.events);
        let Some(Frame::Snapshot(last)) = frames.last() else {
            panic!("ends with a snapshot")
        };
        assert_eq!(last.totals.flows_finished, 3);
        assert_eq!(
            last.totals.tx_bytes,
            r.links.iter().map(|l| l.tx_bytes).sum::<u64>()
        );
        std::fs::remove_dir_all(&dir).unwrap();
        let e = simulate_recording(
            &f,
            SimConfig::default(),
            &plan,
            Path::new("/nonexistent/x.rec"),
            Duration::micros(5),
        );
        assert!(
            e.unwrap_err()
                .to_string()
                .contains("cannot create /nonexistent/x.rec")
        );
    }

    #[test]
    fn a_recorded_testbed_run_reads_back_and_its_last_snapshot_is_the_report() {
        match veth::root_tests_enabled() {
            Ok(true) => {}
            Ok(false) => return,
            Err(why) => panic!("{why}"),
        }
        let plan = Scenario::from_toml_str(
            "[[workload]]\nkind = \"incast\"\nsenders = \"1..3\"\nreceiver = 0\nsize = \"200KB\"\n",
            "t.toml",
        )
        .unwrap()
        .compile(&CompileCtx::new(3, cc_algos::Rate::gbps(100), 1))
        .unwrap();
        let dir = std::env::temp_dir().join(format!("fabric-record-tb-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let out = dir.join("tb.rec");
        let cfg = veth::congestion::CongestionConfig::new(3);
        let run = veth::congestion::spawn(&cfg, &plan).unwrap();
        let r = record_live(run, &out).unwrap();
        let mut reader = Reader::open(std::fs::File::open(&out).unwrap()).unwrap();
        assert_eq!(reader.fabric().ports.len(), 6);
        let frames = reader.read_all().unwrap();
        assert!(frames.len() >= 2, "{} frames", frames.len());
        let Some(Frame::Snapshot(last)) = frames.last() else {
            panic!("ends with a snapshot")
        };
        assert_eq!(last.totals.drops_buffer, r.switch_drops);
        assert_eq!(last.totals.ecn_marks, r.ecn_marks);
        let flows = last.flows.as_ref().unwrap();
        assert_eq!(
            flows.iter().map(|f| f.bytes_done).sum::<u64>(),
            r.flows.iter().map(|f| f.delivered).sum::<u64>()
        );
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn a_recorded_fabric_run_carries_the_switch_to_switch_links_and_their_pauses() {
        match veth::root_tests_enabled() {
            Ok(true) => {}
            Ok(false) => return,
            Err(why) => panic!("{why}"),
        }
        use veth::congestion::fabric::Topology;
        let file = Path::new(env!("CARGO_MANIFEST_DIR")).join("../scenarios/veth-fabric-hol.toml");
        let plan = Scenario::from_file(&file)
            .unwrap()
            .compile(&CompileCtx::new(8, cc_algos::Rate::gbps(100), 1))
            .unwrap();
        let topology = Topology::LeafSpine {
            leaves: 2,
            spines: 2,
            hosts_per_leaf: 4,
        };
        let mut cfg = veth::congestion::CongestionConfig::on(topology);
        cfg.apply(&plan.network).unwrap();
        let f = topology.fabric(cfg.virtual_rate).unwrap().unwrap();
        let dir = std::env::temp_dir().join(format!("fabric-record-ls-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let out = dir.join("ls.rec");
        // A run the engine flags as unfaithful (a loop far behind under load) may not
        // have paused the spines: run again, up to 5 times.
        let mut r = None;
        for _ in 0..5 {
            let run = veth::congestion::spawn(&cfg, &plan).unwrap();
            let x = record_live(run, &out).unwrap();
            if x.faithful() {
                r = Some(x);
                break;
            }
            std::thread::sleep(std::time::Duration::from_secs(2));
        }
        let r = r.expect("one faithful run in 5");
        let mut reader = Reader::open(std::fs::File::open(&out).unwrap()).unwrap();
        let map = reader.fabric().clone();
        // The whole fabric: every node and both ends of every link, spines included.
        assert_eq!(map.nodes.len(), f.num_nodes());
        assert_eq!(map.ports.len(), 2 * f.num_links());
        assert!(map.nodes.iter().any(|n| n.name == "spine0"), "{map:?}");
        let frames = reader.read_all().unwrap();
        let Some(Frame::Snapshot(last)) = frames.last() else {
            panic!("ends with a snapshot")
        };
        last.validate(&map).unwrap();
        // Every switch port of the report at its place in the map, with its counters.
        let at = |node: &str, port: u16| {
            map.ports
                .iter()
                .position(|p| map.nodes[p.node as usize].name == node && p.port == port)
                .unwrap_or_else(|| panic!("{node}:p{port} not in the map"))
        };
        let col = |c: &Option<fabric_api::Column>, i: usize| c.as_ref().unwrap().get(i);
        let (mut inner_bytes, mut inner_pauses) = (0, 0);
        for (n, c) in r.port_names.iter().zip(&r.ports) {
            let i = at(&n.switch, n.port);
            assert_eq!(col(&last.counters.tx_bytes, i), c.tx_bytes, "{}", n.label());
            let sent: u64 = last.counters.pfc_tx.values().map(|col| col.get(i)).sum();
            let by_priority: u64 = c.pauses_sent_by_priority.iter().sum();
            assert_eq!(sent, by_priority, "{}", n.label());
            if n.peer_tier > 0 {
                inner_bytes += c.tx_bytes;
                inner_pauses += sent;
            }
        }
        println!("switch-to-switch links: {inner_bytes} B, {inner_pauses} pauses sent");
        assert!(inner_bytes > 6 * 1_000_000, "the spines carried the incast");
        assert!(inner_pauses > 0, "leaf 0 paused the spines (HoL scenario)");
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
