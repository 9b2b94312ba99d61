//! SVG plots of one simulator run: `rates.svg` (rate per flow), `queue.svg` (largest and
//! mean switch queue), `utilisation.svg` (heat map: switch ports × time), `jain.svg`.

use crate::SimResults;
use report::plots::{heat_map, line_chart};
use std::path::{Path, PathBuf};

/// Write every plot the run supports into `dir` (created if missing); returns
/// the files written.
pub fn write_all(r: &SimResults, dir: &Path) -> std::io::Result<Vec<PathBuf>> {
    std::fs::create_dir_all(dir)?;
    let mut out = Vec::new();
    let Some(s) = &r.series else {
        return Ok(out);
    };
    if s.t_us.is_empty() {
        return Ok(out);
    }
    let title = format!(
        "{} · {} · {} · {}",
        r.scenario, r.fabric, r.run.cc, r.run.lb
    );
    // Rates per flow.
    let mut flows: Vec<u32> = s.flow_rates.iter().flatten().map(|(f, _)| *f).collect();
    flows.sort_unstable();
    flows.dedup();
    let lines: Vec<(String, Vec<(f64, f64)>)> = flows
        .iter()
        .take(16)
        .map(|&f| {
            let pts = s
                .t_us
                .iter()
                .zip(&s.flow_rates)
                .map(|(t, row)| {
                    let v = row.iter().find(|(x, _)| *x == f).map(|(_, v)| *v as f64);
                    (*t, v.unwrap_or(0.0))
                })
                .collect();
            (format!("flow {f}"), pts)
        })
        .collect();
    let p = dir.join("rates.svg");
    line_chart(
        &p,
        &format!("rate per flow — {title}"),
        "time (µs)",
        "Gb/s",
        &lines,
    )?;
    out.push(p);
    // Queue depth.
    if !s.queue.is_empty() {
        let t = &s.t_us[..s.queue.len()];
        let max: Vec<(f64, f64)> = t
            .iter()
            .zip(&s.queue)
            .map(|(t, q)| (*t, q.iter().copied().fold(0.0f32, f32::max) as f64 / 1e3))
            .collect();
        let mean: Vec<(f64, f64)> = t
            .iter()
            .zip(&s.queue)
            .map(|(t, q)| {
                (
                    *t,
                    q.iter().map(|&x| x as f64).sum::<f64>() / q.len().max(1) as f64 / 1e3,
                )
            })
            .collect();
        let p = dir.join("queue.svg");
        line_chart(
            &p,
            &format!("switch queue depth — {title}"),
            "time (µs)",
            "KB",
            &[("largest queue".into(), max), ("mean queue".into(), mean)],
        )?;
        out.push(p);
        let p = dir.join("utilisation.svg");
        heat_map(
            &p,
            &format!("switch port utilisation — {title}"),
            t,
            &s.util,
        )?;
        out.push(p);
    }
    let p = dir.join("jain.svg");
    let j: Vec<(f64, f64)> = s.t_us.iter().copied().zip(s.jain.iter().copied()).collect();
    line_chart(
        &p,
        &format!("Jain's fairness index — {title}"),
        "time (µs)",
        "Jain",
        &[("Jain".into(), j)],
    )?;
    out.push(p);
    Ok(out)
}
