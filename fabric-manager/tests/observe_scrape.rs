//! `fabric serve --observe` reading faster than Prometheus scrapes: a real Prometheus
//! (Debian's `prometheus`) scrapes two exporters every second, the daemon reads it every
//! 500 ms. The rates between the daemon's snapshots must be the exporters' steady rates
//! (never 0 on the loaded ports, never twice the truth, as when the daemon divided by its
//! own interval), and every counter counts from the daemon's first read. No root; fails
//! when Prometheus is missing, unless `FABRIC_SKIP_TOOLS=1`.
//!
//! The exporters are small HTTP servers of this test speaking node_exporter's text format
//! (the series `--observe` reads, with the `switch` label): a real node_exporter's
//! counters follow real traffic, whose rate a test cannot hold steady to a few percent,
//! while these count at exactly known rates of the wall clock.

mod common;

use std::io::{Read, Write};
use std::net::TcpListener;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use common::{Daemon, Stream};
use fabric_api::{FabricInfo, Frame, Interval, Snapshot};
use testkit::prometheus::Prometheus;

/// A node_exporter-shaped endpoint on loopback for one switch port whose transmit
/// counter grows at `bytes_per_s` of the wall clock from a lifetime count of 10^12
/// (the switch ran before the daemon started); stopped when dropped.
struct Exporter {
    addr: String,
    stop: Arc<AtomicBool>,
}

impl Exporter {
    fn start(switch: &'static str, device: &'static str, bytes_per_s: f64) -> Exporter {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        l.set_nonblocking(true).unwrap();
        let addr = l.local_addr().unwrap().to_string();
        let stop = Arc::new(AtomicBool::new(false));
        let quit = stop.clone();
        let ms = || {
            let since = SystemTime::now().duration_since(UNIX_EPOCH).unwrap();
            since.as_millis() as u64
        };
        let t0 = ms();
        std::thread::spawn(move || {
            while !quit.load(Ordering::Relaxed) {
                let Ok((mut s, _)) = l.accept() else {
                    std::thread::sleep(Duration::from_millis(5));
                    continue;
                };
                let _ = s.set_nonblocking(false);
                let _ = s.set_read_timeout(Some(Duration::from_secs(5)));
                let mut req = Vec::new();
                let mut buf = [0u8; 1024];
                while !req.windows(4).any(|w| w == b"\r\n\r\n") {
                    match s.read(&mut buf) {
                        Ok(n) if n > 0 => req.extend_from_slice(&buf[..n]),
                        _ => break,
                    }
                }
                // Each sample carries the time its value is for (the daemon reads the
                // samples' `timestamp()`): Prometheus would otherwise stamp it with the
                // scrape's start, and on a loaded machine this thread may answer some
                // hundred ms later, which moves a one-second rate by as much as the
                // test's tolerance.
                let now = ms();
                let tx = 1e12 + (now - t0) as f64 / 1000.0 * bytes_per_s;
                let labels = format!("switch=\"{switch}\",device=\"{device}\"");
                let body = format!(
                    "node_network_transmit_bytes_total{{{labels}}} {tx:.0} {now}\n\
                     node_network_receive_drop_total{{{labels}}} 22 {now}\n\
                     node_network_carrier{{{labels}}} 1 {now}\n"
                );
                let _ = write!(
                    s,
                    "HTTP/1.1 200 OK\r\nContent-Type: text/plain; version=0.0.4\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
                    body.len()
                );
            }
        });
        Exporter { addr, stop }
    }
}

impl Drop for Exporter {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
    }
}

#[test]
fn rates_follow_the_scrapes_when_the_daemon_reads_twice_a_scrape() {
    if !testkit::tools::require(&["prometheus"], &[]) {
        return;
    }
    // 10 Gb/s and 4 Gb/s, on two targets (Prometheus scrapes them at their own phases).
    let a = Exporter::start("pod0-leaf0", "p2", 1.25e9);
    let b = Exporter::start("pod1-leaf0", "p2", 0.5e9);
    let dir = common::temp_dir("observe-scrape-prom");
    let prom = Prometheus::start(&dir, &[&a.addr, &b.addr]);
    prom.wait_ready(Duration::from_secs(60));
    let url = format!("http://{}", prom.addr());
    let d = Daemon::launch(
        "observe-scrape",
        &[
            "--observe",
            "--fabric",
            "fat-tree-k4",
            "--prometheus",
            &url,
            "--interval",
            "500ms",
        ],
    );
    let info: FabricInfo = serde_json::from_slice(&d.get("/api/v1/topology").body).unwrap();
    let f = topo::generators::fat_tree(4, topo::Rate::gbps(100)).unwrap();
    let port = |sw: &str| FabricInfo::topo_port_index(&f, f.name_index()[sw], 2) as usize;
    let (pa, pb) = (port("pod0-leaf0"), port("pod1-leaf0"));

    // Snapshots with counters (a minute at most: the machine may be loaded).
    let mut s = Stream::open(&d.addr, "/api/v1/telemetry/stream");
    assert_eq!(s.status, 200);
    let mut snaps: Vec<Snapshot> = Vec::new();
    let t = Instant::now();
    while snaps.len() < 9 && t.elapsed() < Duration::from_secs(60) {
        let Some(line) = s.next_line() else { break };
        if let Ok(Frame::Snapshot(x)) = Frame::from_json_line(line.as_bytes())
            && x.counters.tx_bytes.is_some()
        {
            snaps.push(x);
        }
    }
    assert!(
        snaps.len() >= 6,
        "{} snapshots in {:?}; daemon: {}\nprometheus: {}",
        snaps.len(),
        t.elapsed(),
        d.stderr(),
        prom.log()
    );
    // The drops the switches had before the daemon started are not losses it saw.
    for x in &snaps {
        let drops = x.counters.drops_kernel.as_ref().map_or(0, |c| c.sum());
        assert_eq!(drops, 0, "snapshot {}: lifetime drops counted", x.seq);
    }
    let mut seen = Vec::new();
    for w in snaps.windows(2) {
        let iv = Interval::new(&info, &w[0], &w[1]).unwrap();
        let d_ns = iv.dt_ns();
        let (ra, rb) = (iv.port(pa), iv.port(pb));
        seen.push((d_ns, ra.tx_gbps, rb.tx_gbps));
    }
    // The first snapshot places only the exporter scraped last (the other one's first
    // scrape came after its instant, so that port starts counting at the second): skip
    // the first pair.
    for &(dt, ga, gb) in &seen[1..] {
        let (ga, gb) = (ga.unwrap_or(0.0), gb.unwrap_or(0.0));
        assert!(
            (ga - 10.0).abs() < 2.0 && (gb - 4.0).abs() < 0.8,
            "rates {ga:.2} and {gb:.2} Gb/s over {dt} ns, expected 10 and 4 (all: {seen:?})"
        );
    }
    // The counters start from the daemon's first read, not from the lifetime 10^12.
    let tx = snaps[0].counters.tx_bytes.as_ref().unwrap();
    assert!(tx.get(pa) < 1e11 as u64, "lifetime bytes: {}", tx.get(pa));
}
