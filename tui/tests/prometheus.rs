//! `--prometheus` against a real Prometheus (Debian's package): it scrapes an exporter
//! that publishes the daemon's metric names for a fat-tree k=4 with known rates, and the
//! TUI's source reads the fabric and the rates back through the query API.
//! Needs `prometheus` on PATH (scripts/install-deps.sh) unless FABRIC_SKIP_TOOLS=1.

use fabric_tui::prometheus::{Server, infer_fabric, queries, sample};
use std::collections::HashMap;
use std::fmt::Write as _;
use std::io::{Read, Write};
use std::net::TcpListener;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use testkit::prometheus::Prometheus;

const DROP_LINK: usize = 20;
const DOWN_LINK: usize = 7;
const SPEED_BYTES: f64 = 50e9; // 400 Gb/s

fn util(l: usize) -> f64 {
    0.1 + 0.8 * ((l * 37) % 10) as f64 / 10.0
}

fn exposition(f: &topo::Fabric, secs: f64) -> String {
    let mut s = String::new();
    let port = |n: topo::NodeId, p: u16| format!("switch=\"{}\",port=\"{p}\"", f.node_name(n));
    let mut fam = |name: &str, kind: &str, rows: &mut dyn FnMut(&mut String)| {
        let _ = writeln!(s, "# TYPE {name} {kind}");
        rows(&mut s);
    };
    let ends = |l: &topo::Link| {
        [
            (l.a, l.a_port, l.b, l.b_port),
            (l.b, l.b_port, l.a, l.a_port),
        ]
    };
    fam("fabric_link_info", "gauge", &mut |s| {
        for (i, l) in f.links().iter().enumerate() {
            for (n, p, m, q) in ends(l) {
                let _ = writeln!(
                    s,
                    "fabric_link_info{{{},peer_switch=\"{}\",peer_port=\"{q}\",link=\"{i}\"}} 1",
                    port(n, p),
                    f.node_name(m)
                );
            }
        }
    });
    fam("fabric_port_up", "gauge", &mut |s| {
        for (i, l) in f.links().iter().enumerate() {
            for (n, p, _, _) in ends(l) {
                let _ = writeln!(
                    s,
                    "fabric_port_up{{{}}} {}",
                    port(n, p),
                    u8::from(i != DOWN_LINK)
                );
            }
        }
    });
    fam("fabric_port_speed_bytes", "gauge", &mut |s| {
        for l in f.links() {
            for (n, p, _, _) in ends(l) {
                let _ = writeln!(s, "fabric_port_speed_bytes{{{}}} {SPEED_BYTES}", port(n, p));
            }
        }
    });
    fam("fabric_port_transmit_bytes_total", "counter", &mut |s| {
        for (i, l) in f.links().iter().enumerate() {
            let _ = writeln!(
                s,
                "fabric_port_transmit_bytes_total{{{}}} {}",
                port(l.a, l.a_port),
                (util(i) * SPEED_BYTES * secs).round()
            );
            let _ = writeln!(
                s,
                "fabric_port_transmit_bytes_total{{{}}} 0",
                port(l.b, l.b_port)
            );
        }
    });
    fam("fabric_port_transmit_drops_total", "counter", &mut |s| {
        let l = &f.links()[DROP_LINK];
        let _ = writeln!(
            s,
            "fabric_port_transmit_drops_total{{{}}} {}",
            port(l.b, l.b_port),
            (1000.0 * secs).round()
        );
    });
    s
}

fn exporter(f: topo::Fabric) -> String {
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = l.local_addr().unwrap().to_string();
    let ms = || {
        let since = SystemTime::now().duration_since(UNIX_EPOCH).unwrap();
        since.as_millis() as u64
    };
    let start = ms();
    std::thread::spawn(move || {
        for s in l.incoming() {
            let Ok(mut s) = s else { continue };
            let mut buf = [0u8; 4096];
            let _ = s.read(&mut buf);
            // Every sample carries the time its value is for: Prometheus stamps a sample
            // without one with the time its scrape started, and on a loaded machine this
            // thread may answer that scrape a few hundred ms later, which moved a 5 s
            // rate by up to 0.05 (the tolerance below).
            let now = ms();
            let body: String = exposition(&f, (now - start) as f64 / 1000.0)
                .lines()
                .map(|l| match l.starts_with('#') {
                    true => format!("{l}\n"),
                    false => format!("{l} {now}\n"),
                })
                .collect();
            let _ = write!(
                s,
                "HTTP/1.1 200 OK\r\nContent-Type: text/plain; version=0.0.4\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
                body.len()
            );
        }
    });
    addr
}

/// Whether every counter was scraped in the last second and at least 5 times in the
/// last 5 s (every second, as configured): then `rate(…[5s])` extrapolates over less
/// than one scrape interval at either end, which is exact for a linear counter.
fn covered(server: &Server) -> bool {
    let value = |q: &str| {
        server
            .query(q)
            .ok()
            .and_then(|v| v.first().map(|s| s.1))
            .unwrap_or(f64::NAN)
    };
    let age = value("time() - min(timestamp(fabric_port_transmit_bytes_total))");
    let scrapes = value("min(count_over_time(fabric_port_transmit_bytes_total[5s]))");
    age < 1.0 && scrapes >= 5.0
}

#[test]
fn rates_from_a_real_prometheus() {
    if !testkit::tools::require(&["prometheus"], &[]) {
        return;
    }
    let f = topo::generators::fat_tree(4, topo::Rate::gbps(400)).unwrap();
    let target = exporter(f.clone());
    let dir = std::env::temp_dir().join(format!("fabric-tui-prom-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let prom = Prometheus::start(&dir, &[&target]);
    let server = Server::parse(&format!("http://{}", prom.addr())).unwrap();
    let deadline = Instant::now() + Duration::from_secs(60);
    // rate() extrapolates over its whole window: wait until scrapes cover it
    let mut first_seen: Option<Instant> = None;
    let (view, ports, res) = loop {
        assert!(
            Instant::now() < deadline,
            "Prometheus gave no rates within 60 s; its log:\n{}",
            prom.log()
        );
        std::thread::sleep(Duration::from_millis(500));
        let Ok(info) = server.query("fabric_link_info") else {
            continue;
        };
        if info.len() < 2 * f.num_links() {
            continue;
        }
        if first_seen.get_or_insert_with(Instant::now).elapsed() < Duration::from_secs(7) {
            continue;
        }
        // rate() is exact on these linear counters only while scrapes cover its window
        // up to the query: a scrape a loaded machine made late leaves a gap at the end,
        // which Prometheus extrapolates over by half a scrape interval only (one run at
        // nice 19 read 873 drops/s for 1,000). So the scrapes' coverage is checked
        // before and after the queries, and a round that was not covered is taken again.
        if !covered(&server) {
            continue;
        }
        let mut res = HashMap::new();
        for (k, q) in queries("5s") {
            res.insert(k, server.query(&q).unwrap());
        }
        if !covered(&server) {
            continue;
        }
        if res["tx"].len() == 2 * f.num_links() && res["tx_drops"].len() == 1 {
            let (view, ports) = infer_fabric("prom", &info);
            break (view, ports, res);
        }
    };
    assert_eq!(view.links.len(), f.num_links());
    assert_eq!(view.planes.len(), 1);
    let s = sample(&view, &ports, &res, 0, 1);
    for (i, l) in f.links().iter().enumerate() {
        let j = ports[&(f.node_name(l.a).to_string(), l.a_port)] as usize;
        let got = s.links[j].util as f64;
        assert!(
            (got - util(i)).abs() < 0.05,
            "link {i}: util {got}, want {}",
            util(i)
        );
        assert_eq!(s.links[j].down, i == DOWN_LINK);
        let d = s.links[j].drops_per_s as f64;
        if i == DROP_LINK {
            assert!((d - 1000.0).abs() < 100.0, "drops/s {d}");
        } else {
            assert_eq!(d, 0.0);
        }
    }
    drop(prom);
    std::fs::remove_dir_all(&dir).ok();
}
