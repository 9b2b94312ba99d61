//! Export benchmark (a bench binary, not a timed test):
//! `cargo bench -p topo --bench export` (add `-- quick` to skip the 100k-GPU case).
//!
//! Each case runs in its own child process so its peak memory (VmHWM from
//! /proc/self/status) is its own. For every format it reports the output size, the
//! time, the throughput and the peak RSS before and after the export: exporters stream
//! through a sink, so the peak does not move while gigabytes go out. Two baselines run
//! in the same process: the same `ip` export collected in memory (`MemSink`, what a
//! non-streaming exporter costs: peak grows by the output size), and writing the same
//! number of bytes from a ready buffer into one file (the floor for the disk).

use std::io::Write;
use std::process::Command;
use std::time::Instant;

use topo::addressing::AddressPlan;
use topo::export::{self, CountingSink, Format, MemSink, Routed, Sink, Tables};
use topo::lft::Lft;
use topo::routing::Routes;
use topo::{Fabric, Rate, generators};

fn vm_hwm_mib() -> f64 {
    let s = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    s.lines()
        .find(|l| l.starts_with("VmHWM:"))
        .and_then(|l| l.split_whitespace().nth(1))
        .and_then(|v| v.parse::<f64>().ok())
        .map_or(f64::NAN, |kb| kb / 1024.0)
}

fn fabric(case: &str) -> Fabric {
    match case {
        "k16" => generators::fat_tree(16, Rate::gbps(400)).unwrap(),
        "k32" => generators::fat_tree(32, Rate::gbps(400)).unwrap(),
        // 128,000 GPUs: 16,000 servers of 8 GPUs and 8 single-port NICs, one NIC per
        // plane (DeepSeek's multi-plane fat-tree layout), each of the 8 planes a k=40
        // fat-tree (16,000 host ports + 2,000 switches: one IB subnet each).
        "mpft-128k" => {
            let mut spec = generators::fat_tree_spec(40, Rate::gbps(400));
            spec.name = "mpft-8x-k40".into();
            spec.planes[0].copies = 8;
            spec.hosts.servers = Some(16_000);
            spec.hosts.gpus_per_server = 8;
            spec.hosts.nics_per_server = 8;
            spec.hosts.ports_per_nic = 1;
            spec.build("bench").unwrap()
        }
        "k64" => generators::fat_tree(64, Rate::gbps(400)).unwrap(),
        other => panic!("unknown case {other}"),
    }
}

fn row(case: &str, what: &str, bytes: u64, secs: f64, before: f64, note: &str) {
    println!(
        "| {case} | {what} | {:.1} MB | {:.2} s | {:.0} MB/s | {before:.0} → {:.0} MiB | {note} |",
        bytes as f64 / 1e6,
        secs,
        bytes as f64 / 1e6 / secs.max(1e-9),
        vm_hwm_mib()
    );
}

fn run_case(case: &str, formats: &[Format]) {
    let t = Instant::now();
    let f = fabric(case);
    let r = Routes::compute(&f);
    let lft = Lft::compute(&f, &r);
    let a = AddressPlan::new(&f).unwrap();
    println!(
        "| {case} | model + tables | {} GPUs, {} NICs, {} switches, {} planes | {:.2} s | | {:.0} MiB | built before exporting |",
        f.num_gpus(),
        f.num_hosts(),
        f.num_switches(),
        f.num_planes(),
        t.elapsed().as_secs_f64(),
        vm_hwm_mib()
    );
    for &fmt in formats {
        let tables = if fmt == Format::Opensm {
            Tables::SinglePath(&r, &lft)
        } else {
            Tables::Ecmp(&r)
        };
        let routed = Routed {
            fabric: &f,
            addr: &a,
            tables,
            lanes: None,
        };
        let mut sink = CountingSink::default();
        let before = vm_hwm_mib();
        let t = Instant::now();
        match export::export(&routed, fmt, &mut sink) {
            Ok(()) => row(
                case,
                fmt.name(),
                sink.bytes,
                t.elapsed().as_secs_f64(),
                before,
                &format!("{} files", sink.files),
            ),
            Err(e) => println!("| {case} | {fmt} | – | – | – | – | {e} |"),
        }
    }
}

/// The k=32 `ip` export three ways: streamed into a counting sink, streamed to files
/// on disk, and collected in memory; then the raw-write floor.
fn run_baselines() {
    let f = fabric("k32");
    let r = Routes::compute(&f);
    let a = AddressPlan::new(&f).unwrap();
    let routed = Routed {
        fabric: &f,
        addr: &a,
        tables: Tables::Ecmp(&r),
        lanes: None,
    };
    let case = "k32 ip";
    let before = vm_hwm_mib();
    let t = Instant::now();
    let mut count = CountingSink::default();
    export::export(&routed, Format::IpBatch, &mut count).unwrap();
    row(
        case,
        "streamed, counting sink",
        count.bytes,
        t.elapsed().as_secs_f64(),
        before,
        "",
    );

    let dir = std::env::temp_dir().join(format!("fabric-export-bench-{}", std::process::id()));
    let mut disk = DiskSink {
        dir: dir.clone(),
        bytes: 0,
    };
    let before = vm_hwm_mib();
    let t = Instant::now();
    export::export(&routed, Format::IpBatch, &mut disk).unwrap();
    row(
        case,
        "streamed to files (BufWriter)",
        disk.bytes,
        t.elapsed().as_secs_f64(),
        before,
        &dir.display().to_string(),
    );
    let _ = std::fs::remove_dir_all(&dir);

    let before = vm_hwm_mib();
    let t = Instant::now();
    let mut mem = MemSink::new();
    export::export(&routed, Format::IpBatch, &mut mem).unwrap();
    let bytes: u64 = mem.files.values().map(|v| v.len() as u64).sum();
    row(
        case,
        "collected in memory (baseline)",
        bytes,
        t.elapsed().as_secs_f64(),
        before,
        "peak grows by the output",
    );
    drop(mem);

    // Floor: the same number of bytes from a ready buffer into one file on the same disk.
    let buf = vec![b'x'; 1 << 20];
    let floor = std::env::temp_dir().join(format!("fabric-export-floor-{}", std::process::id()));
    let t = Instant::now();
    let mut file = std::fs::File::create(&floor).unwrap();
    let mut left = count.bytes;
    while left > 0 {
        let n = left.min(buf.len() as u64) as usize;
        file.write_all(&buf[..n]).unwrap();
        left -= n as u64;
    }
    file.flush().unwrap();
    drop(file);
    row(
        case,
        "raw write of the same bytes to one file (floor)",
        count.bytes,
        t.elapsed().as_secs_f64(),
        vm_hwm_mib(),
        "",
    );
    let _ = std::fs::remove_file(&floor);
}

#[derive(Debug)]
struct DiskSink {
    dir: std::path::PathBuf,
    bytes: u64,
}

impl Sink for DiskSink {
    type Writer = std::io::BufWriter<std::fs::File>;
    fn open(&mut self, path: &str) -> std::io::Result<Self::Writer> {
        let p = self.dir.join(path);
        std::fs::create_dir_all(p.parent().unwrap())?;
        Ok(std::io::BufWriter::with_capacity(
            256 * 1024,
            std::fs::File::create(p)?,
        ))
    }
    fn finish(&mut self, _path: &str, mut w: Self::Writer) -> std::io::Result<()> {
        w.flush()?;
        self.bytes += w.get_ref().metadata()?.len();
        Ok(())
    }
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    if let Some(i) = args.iter().position(|a| a == "--case") {
        match args[i + 1].as_str() {
            "baselines" => run_baselines(),
            "k64" => run_case(
                "k64",
                &[Format::IpBatch, Format::Opensm, Format::Dot, Format::Slurm],
            ),
            "mpft-128k" => run_case(
                "mpft-128k",
                &[
                    Format::IpBatch,
                    Format::Sonic,
                    Format::Opensm,
                    Format::Dot,
                    Format::Slurm,
                ],
            ),
            c => run_case(c, &Format::ALL),
        }
        return;
    }
    let quick = args.iter().any(|a| a == "quick");
    println!("| case | what | output | time | throughput | peak RSS before → after | note |");
    println!("|---|---|---|---|---|---|---|");
    let mut cases = vec!["k16", "k32", "baselines"];
    if !quick {
        cases.extend(["mpft-128k", "k64"]);
    }
    for case in cases {
        let exe = std::env::current_exe().unwrap();
        let st = Command::new(exe).args(["--case", case]).status().unwrap();
        assert!(st.success(), "case {case} failed");
    }
}
