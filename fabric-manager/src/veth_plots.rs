//! SVG plots of a veth congestion run (`fabric testbed run --plot DIR`), with the
//! simulator twin's run dashed on the same axes when it was run (`--compare-sim`).
//!
//! Every plot is in virtual time. Throughput is binned (at most [`MAX_BINS`] bins, each
//! at least [`MIN_BIN_US`]) so that the sampling jitter of a real-time run does not show
//! a flow above line rate, and the total is drawn beside the flows with the line rate as
//! a reference. The queue plot carries the ECN and PFC thresholds as reference lines and
//! the samples in which a port sent PAUSE frames or marked packets as markers.

use std::path::{Path, PathBuf};

use anyhow::Context;
use report::plots::{Chart, Line};
use sim::results::Series;
use veth::congestion::{CongestionConfig, CongestionReport, FlowResult};

/// At most this many throughput bins over a run.
pub const MAX_BINS: usize = 100;
/// A throughput bin spans at least this much virtual time.
pub const MIN_BIN_US: f64 = 5.0;

/// Bin a per-sample series (one value per `sample_us`) into bins of `k` samples:
/// `(bin start µs, mean value)`.
fn binned(values: &[f64], sample_us: f64, k: usize) -> Vec<(f64, f64)> {
    values
        .chunks(k)
        .enumerate()
        .map(|(i, c)| {
            let t = (i * k) as f64 * sample_us;
            (t, c.iter().sum::<f64>() / c.len() as f64)
        })
        .collect()
}

/// Samples per throughput bin for a run of `n` samples of `sample_us` each.
fn bin_samples(n: usize, sample_us: f64) -> usize {
    let by_count = n.div_ceil(MAX_BINS);
    let by_time = (MIN_BIN_US / sample_us.max(1e-9)).ceil() as usize;
    by_count.max(by_time).clamp(1, n.max(1))
}

fn flow_name(f: &FlowResult) -> String {
    format!("flow {} ({}→{})", f.id, f.src, f.dst)
}

/// A port as a plot legend names it: `sw:p3→h3`, `leaf1:p4→spine0`.
pub fn port_label(r: &CongestionReport, port: usize) -> String {
    r.port_names
        .get(port)
        .map_or(format!("port {port}"), |n| n.label())
}

/// Delivered throughput per flow and in total (binned), veth solid, the simulator's
/// per-flow goodput dashed in the same colour.
fn throughput(r: &CongestionReport, sim: Option<&Series>, name: &str) -> Chart {
    let n = r.flows.iter().map(|f| f.gbps.len()).max().unwrap_or(0);
    let k = bin_samples(n, r.sample_us);
    let mut c = Chart::new(
        &format!("delivered throughput per flow — {name} (veth solid, simulator dashed)"),
        "time (µs, virtual)",
        "Gb/s (virtual)",
    );
    let mut total = vec![0.0; n];
    for (i, f) in r.flows.iter().enumerate() {
        for (t, g) in total.iter_mut().zip(&f.gbps) {
            *t += g;
        }
        c.lines.push(Line::solid(
            &flow_name(f),
            i,
            binned(&f.gbps, r.sample_us, k),
        ));
    }
    c.lines.push(Line::solid(
        "total (veth)",
        r.flows.len(),
        binned(&total, r.sample_us, k),
    ));
    if let Some(series) = sim {
        for (i, f) in r.flows.iter().enumerate() {
            let pts: Vec<(f64, f64)> = series
                .t_us
                .iter()
                .zip(&series.flow_rates)
                .map(|(t, row)| {
                    let v = row.iter().find(|(x, _)| *x as usize == i).map(|x| x.1);
                    (*t, v.unwrap_or(0.0) as f64)
                })
                .collect();
            if pts.iter().any(|p| p.1 > 0.0) {
                c.lines
                    .push(Line::dashed(&format!("{} (sim)", flow_name(f)), i, pts));
            }
        }
    }
    c.thresholds.push(("line rate".into(), r.virtual_rate_gbps));
    c
}

/// Queue depth per port that held a queue; ECN and PFC thresholds; pause and mark
/// markers; the simulator's largest queue dashed.
fn queues(r: &CongestionReport, cfg: &CongestionConfig, sim: Option<&Series>, name: &str) -> Chart {
    let t = |i: usize| i as f64 * r.sample_us;
    let mut c = Chart::new(
        &format!("switch egress queue per port — {name} (veth solid, simulator dashed)"),
        "time (µs, virtual)",
        "KB",
    );
    for (port, q) in r.queue_bytes.iter().enumerate() {
        if q.iter().all(|&b| b == 0) {
            continue;
        }
        let pts = q.iter().enumerate().map(|(i, &b)| (t(i), b as f64 / 1e3));
        c.lines
            .push(Line::solid(&port_label(r, port), port, pts.collect()));
    }
    if let Some(s) = sim {
        let pts = s.t_us.iter().zip(&s.queue).map(|(t, q)| {
            let max = q.iter().copied().fold(0.0f32, f32::max);
            (*t, max as f64 / 1e3)
        });
        c.lines.push(Line::dashed(
            "largest queue (sim)",
            r.queue_bytes.len(),
            pts.collect(),
        ));
    }
    if let Some(e) = &cfg.ecn {
        c.thresholds
            .push(("ECN Kmin".into(), e.kmin.0 as f64 / 1e3));
        c.thresholds
            .push(("ECN Kmax".into(), e.kmax.0 as f64 / 1e3));
    }
    if let Some(p) = &cfg.pfc {
        c.thresholds
            .push(("PFC XOFF (ingress)".into(), p.xoff.0 as f64 / 1e3));
    }
    // A threshold far above every queue (ECN "off" as thresholds above the buffer, as
    // the fabric HoL scenario sets them) would squash the queues into the axis: left out.
    let top = c
        .lines
        .iter()
        .flat_map(|l| l.points.iter().map(|p| p.1))
        .fold(0.0f64, f64::max);
    c.thresholds.retain(|(_, v)| *v <= 4.0 * top.max(1.0));
    let when = |per_port: &[Vec<u64>]| -> Vec<f64> {
        let n = per_port.iter().map(Vec::len).max().unwrap_or(0);
        (0..n)
            .filter(|&i| per_port.iter().any(|p| p.get(i).is_some_and(|&x| x > 0)))
            .map(t)
            .collect()
    };
    c.markers
        .push(("PAUSE sent".into(), when(&r.pauses_sent_per_sample)));
    c.markers
        .push(("ECN marked".into(), when(&r.ecn_marks_per_sample)));
    c
}

/// What a controller controls, per flow: `get` of each flow scaled by `scale`.
fn per_flow(
    r: &CongestionReport,
    title: String,
    unit: &str,
    scale: f64,
    get: fn(&FlowResult) -> &Vec<f64>,
) -> Chart {
    let mut c = Chart::new(&title, "time (µs, virtual)", unit);
    for (i, f) in r.flows.iter().enumerate() {
        let pts = get(f)
            .iter()
            .enumerate()
            .map(|(j, &v)| (j as f64 * r.sample_us, v * scale));
        c.lines.push(Line::solid(&flow_name(f), i, pts.collect()));
    }
    c
}

/// Whether any flow's controller rate changed during the run (DCQCN, HPCC); window- and
/// credit-based controllers (DCTCP, NSCC, RCCC) keep it at line rate.
fn rate_moves(r: &CongestionReport) -> bool {
    r.flows.iter().any(|f| {
        let (lo, hi) = f
            .cc_rate_gbps
            .iter()
            .fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), &v| {
                (lo.min(v), hi.max(v))
            });
        hi > lo
    })
}

/// Write every plot of run `r` (named `name`) into `dir`; `sim`: the simulator twin's
/// run with its time series, drawn dashed beside the veth run.
pub fn write(
    r: &CongestionReport,
    cfg: &CongestionConfig,
    sim: Option<&sim::SimResults>,
    name: &str,
    dir: &Path,
) -> anyhow::Result<Vec<PathBuf>> {
    std::fs::create_dir_all(dir).with_context(|| format!("create {}", dir.display()))?;
    let sim = sim.and_then(|s| s.series.as_ref());
    let mut charts = vec![("throughput.svg", throughput(r, sim, name))];
    // A window- or credit-based controller keeps its rate at line rate: a flat line says
    // nothing, so its window or credit is plotted instead (below).
    if rate_moves(r) {
        charts.push((
            "cc-rate.svg",
            per_flow(
                r,
                format!("congestion-control rate per flow — {name} (veth)"),
                "Gb/s (virtual)",
                1.0,
                |f| &f.cc_rate_gbps,
            ),
        ));
    }
    // What window- and credit-based controllers control (their rate plot is flat).
    if r.flows.iter().any(|f| !f.cc_window_bytes.is_empty()) {
        let title = format!("congestion window per flow — {name} (veth)");
        charts.push((
            "cc-window.svg",
            per_flow(r, title, "KB", 1e-3, |f| &f.cc_window_bytes),
        ));
    }
    if r.flows.iter().any(|f| !f.cc_credit_gbps.is_empty()) {
        let title = format!("credit granted per flow — {name} (veth)");
        charts.push((
            "cc-credit.svg",
            per_flow(r, title, "Gb/s (virtual)", 1.0, |f| &f.cc_credit_gbps),
        ));
    }
    charts.push(("queue.svg", queues(r, cfg, sim, name)));
    let mut out = Vec::new();
    for (file, chart) in charts {
        let p = dir.join(file);
        chart
            .write(&p)
            .with_context(|| format!("write {}", p.display()))?;
        out.push(p);
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bins_cover_at_least_the_minimum_time_and_at_most_the_bin_count() {
        assert_eq!(bin_samples(1000, 1.0), 10);
        assert_eq!(bin_samples(50, 1.0), 5, "5 µs at least");
        assert_eq!(bin_samples(50, 20.0), 1);
        assert_eq!(bin_samples(0, 0.0), 1);
        assert_eq!(bin_samples(3, 0.0), 3, "never more than the run");
        // A burst in one sample above line rate is averaged with its neighbours.
        let b = binned(&[0.0, 200.0, 0.0, 100.0, 100.0], 2.0, 2);
        assert_eq!(b, vec![(0.0, 100.0), (4.0, 50.0), (8.0, 100.0)]);
    }

    #[test]
    fn a_flat_rate_is_not_plotted_a_window_is() {
        let flow = |rate: Vec<f64>, window: Vec<f64>| FlowResult {
            cc_rate_gbps: rate,
            cc_window_bytes: window,
            ..Default::default()
        };
        let dir = std::env::temp_dir().join(format!("fabric-plot-w-{}", std::process::id()));
        let files = |r: &CongestionReport| -> Vec<String> {
            let cfg = CongestionConfig::new(1);
            let out = write(r, &cfg, None, "t", &dir).unwrap();
            std::fs::remove_dir_all(&dir).unwrap();
            out.iter()
                .map(|p| p.file_name().unwrap().to_string_lossy().into_owned())
                .collect()
        };
        let window = CongestionReport {
            sample_us: 1.0,
            flows: vec![flow(vec![100.0; 3], vec![9000.0, 4000.0, 8000.0])],
            ..Default::default()
        };
        assert_eq!(
            files(&window),
            ["throughput.svg", "cc-window.svg", "queue.svg"]
        );
        let rate = CongestionReport {
            sample_us: 1.0,
            flows: vec![flow(vec![100.0, 20.0, 60.0], vec![])],
            ..Default::default()
        };
        assert_eq!(files(&rate), ["throughput.svg", "cc-rate.svg", "queue.svg"]);
    }

    #[test]
    fn queue_legends_name_the_switch_port_and_its_peer() {
        let r = CongestionReport {
            port_names: vec![veth::congestion::fabric::PortName {
                switch: "leaf1".into(),
                port: 4,
                peer: "spine0".into(),
                tier: 1,
                peer_tier: 2,
            }],
            ..Default::default()
        };
        assert_eq!(port_label(&r, 0), "leaf1:p4→spine0");
        assert_eq!(port_label(&r, 7), "port 7");
    }

    #[test]
    fn the_queue_plot_carries_thresholds_markers_and_the_simulator() {
        let r = CongestionReport {
            sample_us: 10.0,
            queue_bytes: vec![vec![0, 50_000, 90_000], vec![0; 3]],
            pauses_sent_per_sample: vec![vec![0, 0, 2], vec![0; 3]],
            ecn_marks_per_sample: vec![vec![0, 3, 1], vec![0; 3]],
            ..Default::default()
        };
        let cfg = CongestionConfig::new(2);
        let sim = Series {
            t_us: vec![0.0, 10.0],
            queue: vec![vec![0.0, 1.0], vec![4000.0, 2000.0]],
            ..Default::default()
        };
        let c = queues(&r, &cfg, Some(&sim), "t");
        let names: Vec<&str> = c.lines.iter().map(|l| l.name.as_str()).collect();
        assert_eq!(names, ["port 0", "largest queue (sim)"]);
        assert!(c.lines[1].dashed && !c.lines[0].dashed);
        assert_eq!(c.lines[1].points, vec![(0.0, 0.001), (10.0, 4.0)]);
        let th: Vec<&str> = c.thresholds.iter().map(|t| t.0.as_str()).collect();
        assert_eq!(th, ["ECN Kmin", "ECN Kmax", "PFC XOFF (ingress)"]);
        // Thresholds far above every queue (ECN off as 30 MB) are left out.
        let mut far = cfg.clone();
        far.ecn = Some(cc_algos::RedEcn {
            kmin: cc_algos::Bytes(30_000_000),
            kmax: cc_algos::Bytes(31_000_000),
            pmax: 0.01,
        });
        let c2 = queues(&r, &far, None, "t");
        let th: Vec<&str> = c2.thresholds.iter().map(|t| t.0.as_str()).collect();
        assert_eq!(th, ["PFC XOFF (ingress)"]);
        assert_eq!(c.markers[0], ("PAUSE sent".into(), vec![20.0]));
        assert_eq!(c.markers[1], ("ECN marked".into(), vec![10.0, 20.0]));
        let dir = std::env::temp_dir().join(format!("fabric-plot-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let p = dir.join("q.svg");
        c.write(&p).unwrap();
        let svg = std::fs::read_to_string(&p).unwrap();
        std::fs::remove_dir_all(&dir).unwrap();
        assert!(svg.contains("PFC XOFF (ingress)") && svg.contains("largest queue (sim)"));
    }
}
