//! Measures the JSON size and cost of fabric maps and snapshots, and the size of a
//! recording per hour: `cargo run --release -p fabric-api --example telemetry_sizes`.
//!
//! Fabrics: `fat-tree-k24` (10,368 links) and the 8-plane 100k-GPU fabric of the routing
//! benchmark (8 planes of a k=40 fat-tree, 12,800 servers × 8 NICs). Snapshots: "busy"
//! (every port carries traffic: every counter column dense, with the magnitudes an hour
//! at 400 Gb/s reaches) and "10% active" (one port in ten moved, the rest zero).

use fabric_api::recording::Writer;
use fabric_api::{Column, FabricInfo, Frame, Snapshot, Source, SourceKind, Timestamp};
use std::collections::BTreeMap;
use std::io::Write;
use std::time::Instant;

/// A small deterministic generator (no dependency).
struct Lcg(u64);
impl Lcg {
    fn below(&mut self, max: u64) -> u64 {
        self.0 = self
            .0
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        (self.0 >> 11) % max.max(1)
    }
}

fn col(n: usize, active: u64, max: u64, rng: &mut Lcg) -> Column {
    Column::Dense(
        (0..n)
            .map(|_| {
                if rng.below(100) < active {
                    rng.below(max)
                } else {
                    0
                }
            })
            .collect(),
    )
}

fn snapshot(n: usize, active: u64, seq: u64) -> Snapshot {
    let mut rng = Lcg(seq + 1);
    let src = Source {
        kind: SourceKind::Sim,
        name: "sizes".into(),
    };
    let mut s = Snapshot::new(seq, Timestamp::virtual_ns(seq * 1_000_000_000), src);
    let hour_bytes = 180_000_000_000_000; // 400 Gb/s for an hour
    let c = &mut s.counters;
    c.tx_bytes = Some(col(n, active, hour_bytes, &mut rng));
    c.rx_bytes = Some(col(n, active, hour_bytes, &mut rng));
    c.tx_pkts = Some(col(n, active, hour_bytes / 4096, &mut rng));
    c.rx_pkts = Some(col(n, active, hour_bytes / 4096, &mut rng));
    c.drops_buffer = Some(col(n, active / 10, 10_000, &mut rng));
    c.drops_failure = Some(Column::zeros(n));
    c.drops_no_route = Some(Column::zeros(n));
    c.ecn_marks = Some(col(n, active, 1_000_000_000, &mut rng));
    c.trims = Some(Column::zeros(n));
    c.pfc_tx = BTreeMap::from([(3, col(n, active, 10_000_000, &mut rng))]);
    c.pfc_rx = BTreeMap::from([(3, col(n, active, 10_000_000, &mut rng))]);
    c.paused_ns = Some(col(n, active, 100_000_000_000, &mut rng));
    s.gauges.queue_bytes = BTreeMap::from([(3, col(n, active, 4_000_000, &mut rng))]);
    s.sum_ports_into_totals();
    s
}

/// Counts bytes written.
struct Count(u64);
impl Write for Count {
    fn write(&mut self, b: &[u8]) -> std::io::Result<usize> {
        self.0 += b.len() as u64;
        Ok(b.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

fn mb(b: usize) -> f64 {
    b as f64 / 1e6
}

fn measure(name: &str, f: &topo::Fabric) {
    let info = FabricInfo::from_topo(f, 8);
    let map = Frame::Fabric(info.clone()).to_json_line();
    println!(
        "{name}: {} nodes, {} links, {} ports; fabric map {:.2} MB",
        info.nodes.len(),
        f.num_links(),
        info.ports.len(),
        mb(map.len())
    );
    for (label, active) in [("busy", 100), ("10% active", 10)] {
        let s = snapshot(info.ports.len(), active, 1);
        let t = Instant::now();
        let line = Frame::Snapshot(s.clone()).to_json_line();
        let ser = t.elapsed();
        let t = Instant::now();
        let back = Frame::from_json_line(line.as_bytes()).unwrap();
        let de = t.elapsed();
        assert_eq!(back, Frame::Snapshot(s));
        println!(
            "  snapshot {label:>10}: {:7.2} MB JSON, serialize {:6.1} ms, parse {:6.1} ms, {:.1} B/port",
            mb(line.len()),
            ser.as_secs_f64() * 1e3,
            de.as_secs_f64() * 1e3,
            line.len() as f64 / info.ports.len() as f64
        );
    }
}

fn recording_hour(f: &topo::Fabric, active: u64) {
    let info = FabricInfo::from_topo(f, 8);
    let n = info.ports.len();
    let mut w = Writer::new(Count(0), &info).unwrap();
    let t = Instant::now();
    // One snapshot per second for an hour; values grow so the digits are an hour's.
    let base = snapshot(n, active, 1);
    for k in 0..3600u64 {
        let mut s = base.clone();
        s.seq = k;
        s.time = Timestamp::virtual_ns(k * 1_000_000_000);
        w.write(&Frame::Snapshot(s)).unwrap();
    }
    let bytes = w.finish().unwrap().0;
    println!(
        "recording, {} links, 1 s interval, {active}% ports active: {:.2} GB per hour ({:.1} s to write)",
        f.num_links(),
        bytes as f64 / 1e9,
        t.elapsed().as_secs_f64()
    );
}

fn main() {
    let k24 = topo::presets::build("fat-tree-k24").unwrap();
    measure("fat-tree-k24", &k24);
    let mut spec = topo::generators::fat_tree_spec(40, topo::Rate::gbps(400));
    spec.name = "mp8-k40".into();
    spec.planes[0].copies = 8;
    spec.hosts.nics_per_server = 8;
    spec.hosts.gpus_per_server = 8;
    spec.hosts.servers = Some(12_800);
    let mp8 = spec.build("telemetry_sizes").unwrap();
    measure("mp8-k40 (8 planes, 102,400 GPUs)", &mp8);
    drop(mp8);
    for active in [100, 10] {
        recording_hour(&k24, active);
    }
}
