//! The planner's plots (`fabric plan resilience --plot DIR`), made to be read side by
//! side: every design has its own colour, marker and dash, so lines that lie on top of
//! each other stay distinguishable; the bandwidth tail is on a log scale (a design that
//! is below healthy 0.1 % of the time is visibly apart from one that never is); counts
//! have whole-number ticks; outages are a share of the fabric's GPUs, comparable across
//! designs with different server layouts.
//!
//! * `busbw-tail.svg` — share of time the job's bus bandwidth is below x (log scale),
//!   x = bus bandwidth / healthy (0 while the job cannot run).
//! * `timeline-busbw.svg`, `timeline-unusable.svg` (% of the fabric's GPUs on servers
//!   that are down or have a NIC cut off), `timeline-failed.svg` — trial 0.
//! * `sweep-effective-training.svg` — effective training time with its 95 % interval by
//!   job size (a run with several `--job-gpus`).
//! * Several jobs (`--job`, `--tenants`): `jobs-busbw-tail-DESIGN.svg`,
//!   `jobs-timeline-busbw-DESIGN.svg` (one line per job) and `jobs-effective-training.svg`.

use std::path::{Path, PathBuf};

use anyhow::Context;
use flow_model::multijob::JobsRunResult;
use flow_model::planner::{self, Aggregate, RunResult, TimelinePoint};
use plotters::prelude::*;

/// Lowest share of time shown on the log axis: the tail below it is drawn on the floor.
const FLOOR: f64 = 1e-5;
/// Markers drawn per line at most (the steps of a long timeline are not all marked).
const MARKS: usize = 24;

/// Colour, marker and dash of series `i`.
fn style(i: usize) -> (RGBColor, usize, bool) {
    const COLOURS: [RGBColor; 6] = [
        RGBColor(0, 114, 178),
        RGBColor(213, 94, 0),
        RGBColor(0, 158, 115),
        RGBColor(204, 121, 167),
        RGBColor(86, 86, 86),
        RGBColor(230, 159, 0),
    ];
    (COLOURS[i % COLOURS.len()], i % 4, i % 2 == 1)
}

fn err<E: std::fmt::Display>(e: E) -> anyhow::Error {
    anyhow::anyhow!("plot: {e}")
}

/// One line: a step series with its name.
struct Series {
    name: String,
    points: Vec<(f64, f64)>,
}

/// A tick label: at most 3 decimals, no trailing zeros (never `0.30000000000000004`).
fn tick(v: &f64) -> String {
    let t = format!("{v:.3}");
    let t = t.trim_end_matches('0').trim_end_matches('.');
    if t == "-0" { "0".into() } else { t.into() }
}

/// Axis of a plot: label, range, most ticks and how a tick is written.
struct Axis {
    label: String,
    lo: f64,
    hi: f64,
    ticks: usize,
    fmt: fn(&f64) -> String,
}

impl Axis {
    fn new(label: &str, lo: f64, hi: f64) -> Axis {
        Axis {
            label: label.into(),
            lo,
            hi: if hi > lo { hi } else { lo + 1.0 },
            ticks: 11,
            fmt: tick,
        }
    }
    /// Whole-number ticks (counts): the range is rounded out to whole numbers, one tick
    /// per number up to 11 ticks.
    fn whole(mut self) -> Axis {
        self.lo = self.lo.floor();
        self.hi = self.hi.ceil().max(self.lo + 2.0);
        self.ticks = ((self.hi - self.lo) as usize + 1).min(11);
        self.fmt = |v| format!("{v:.0}");
        self
    }
}

/// Draws the series (colour, marker, dash each) on a linear x axis and a linear or log
/// y axis.
fn draw(
    path: &Path,
    title: &str,
    x: Axis,
    y: Axis,
    log_y: bool,
    lines: &[Series],
) -> anyhow::Result<()> {
    let root = SVGBackend::new(path, (960, 560)).into_drawing_area();
    root.fill(&WHITE).map_err(err)?;
    let mut b = ChartBuilder::on(&root);
    b.caption(title, ("sans-serif", 18))
        .margin(14)
        .x_label_area_size(44)
        .y_label_area_size(70);
    if log_y {
        let mut c = b
            .build_cartesian_2d(x.lo..x.hi, (y.lo..y.hi).log_scale())
            .map_err(err)?;
        c.configure_mesh()
            .x_desc(x.label.as_str())
            .y_desc(y.label.as_str())
            .x_labels(x.ticks)
            .x_label_formatter(&x.fmt)
            .y_label_formatter(&|v| format!("{v:.0e}"))
            .draw()
            .map_err(err)?;
        series(&mut c, lines)?;
    } else {
        let mut c = b.build_cartesian_2d(x.lo..x.hi, y.lo..y.hi).map_err(err)?;
        c.configure_mesh()
            .x_desc(x.label.as_str())
            .y_desc(y.label.as_str())
            .x_labels(x.ticks)
            .x_label_formatter(&x.fmt)
            .y_labels(y.ticks)
            .y_label_formatter(&y.fmt)
            .draw()
            .map_err(err)?;
        series(&mut c, lines)?;
    }
    root.present().map_err(err)?;
    Ok(())
}

fn series<'a, X, Y>(
    c: &mut ChartContext<'a, SVGBackend<'a>, Cartesian2d<X, Y>>,
    lines: &[Series],
) -> anyhow::Result<()>
where
    X: plotters::coord::ranged1d::Ranged<ValueType = f64>,
    Y: plotters::coord::ranged1d::Ranged<ValueType = f64>,
{
    for (i, l) in lines.iter().enumerate() {
        let (colour, marker, dashed) = style(i);
        let s = colour.stroke_width(2);
        let drawn = if dashed {
            c.draw_series(DashedLineSeries::new(l.points.iter().copied(), 8, 5, s))
        } else {
            c.draw_series(LineSeries::new(l.points.iter().copied(), s))
        };
        drawn
            .map_err(err)?
            .label(l.name.as_str())
            .legend(move |(x, y)| {
                EmptyElement::at((x, y))
                    + PathElement::new(vec![(0, 0), (20, 0)], s)
                    + mark(marker, (10, 0), colour)
            });
        let step = l.points.len().div_ceil(MARKS).max(1);
        // markers offset per series, so equal lines show every marker
        let marks: Vec<(f64, f64)> = l
            .points
            .iter()
            .skip(i % step)
            .step_by(step)
            .copied()
            .collect();
        c.draw_series(
            marks
                .into_iter()
                .map(|p| EmptyElement::at(p) + mark(marker, (0, 0), colour)),
        )
        .map_err(err)?;
    }
    c.configure_series_labels()
        .position(SeriesLabelPosition::LowerRight)
        .background_style(WHITE.mix(0.9))
        .border_style(BLACK)
        .draw()
        .map_err(err)?;
    Ok(())
}

/// Marker `kind` (circle, triangle, square, cross) at a pixel offset.
fn mark<DB: DrawingBackend>(
    kind: usize,
    at: (i32, i32),
    c: RGBColor,
) -> DynElement<'static, DB, (i32, i32)> {
    match kind {
        0 => Circle::new(at, 4, c.filled()).into_dyn(),
        1 => TriangleMarker::new(at, 5, c.filled()).into_dyn(),
        2 => Rectangle::new(
            [(at.0 - 4, at.1 - 4), (at.0 + 4, at.1 + 4)],
            c.stroke_width(2),
        )
        .into_dyn(),
        _ => Cross::new(at, 4, c.stroke_width(2)).into_dyn(),
    }
}

/// Share of time the relative bus bandwidth is below x, as a step line on [0, `xmax`]
/// (floored at [`FLOOR`] for the log axis), and the share of time below healthy.
pub fn below(a: &Aggregate, xmax: f64) -> (Vec<(f64, f64)>, f64) {
    let bin = planner::HIST_MAX / planner::HIST_BINS as f64;
    let total: f64 = a.hist_hours.iter().sum();
    let mut pts = vec![(0.0, FLOOR)];
    let mut acc = 0.0;
    let mut below_one = 0.0;
    if total <= 0.0 {
        return (pts, 0.0);
    }
    for (i, &h) in a.hist_hours.iter().enumerate() {
        let x = i as f64 * bin;
        if h <= 0.0 || x > xmax {
            continue;
        }
        pts.push((x, (acc / total).max(FLOOR)));
        acc += h;
        pts.push((x, (acc / total).max(FLOOR)));
        if x < 1.0 - 1e-9 {
            below_one = acc / total;
        }
    }
    pts.push((xmax, (acc / total).max(FLOOR)));
    (pts, below_one)
}

/// A trial's timeline as step lines: (day, value); `hour` is when a point's state began.
fn steps<P>(
    line: &[P],
    end_h: f64,
    hour: impl Fn(&P) -> f64,
    v: impl Fn(&P) -> f64,
) -> Vec<(f64, f64)> {
    let mut pts = Vec::with_capacity(2 * line.len() + 1);
    for (i, p) in line.iter().enumerate() {
        if i > 0 {
            pts.push((hour(p) / 24.0, v(&line[i - 1])));
        }
        pts.push((hour(p) / 24.0, v(p)));
    }
    if let Some(last) = line.last() {
        pts.push((end_h / 24.0, v(last)));
    }
    pts
}

/// The highest value of any line.
fn ymax(lines: &[Series]) -> f64 {
    lines
        .iter()
        .flat_map(|l| l.points.iter().map(|p| p.1))
        .fold(0.0, f64::max)
}

/// Creates the plot directory.
fn out_dir(dir: &Path) -> anyhow::Result<()> {
    std::fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))
}

/// The share of time each aggregate's bus bandwidth is below x, one line each, on a log
/// axis; a line's name is its `label` followed by its share below healthy.
fn tail_plot(
    path: &Path,
    title: &str,
    x_label: &str,
    lines: &[(String, &Aggregate)],
) -> anyhow::Result<()> {
    let tail: Vec<Series> = lines
        .iter()
        .map(|(label, agg)| {
            let (points, share) = below(agg, 1.0);
            Series {
                name: format!("{label}below healthy {:.3} % of the time)", 100.0 * share),
                points,
            }
        })
        .collect();
    draw(
        path,
        title,
        Axis::new(x_label, 0.0, 1.0),
        Axis::new(
            &format!("share of time below x (log; floor {FLOOR:.0e})"),
            FLOOR,
            1.0,
        ),
        true,
        &tail,
    )
}

/// The y axis of effective training time (%) from `lo` to `hi` with a point of margin.
fn effective_axis(lo: f64, hi: f64) -> Axis {
    Axis::new(
        "effective training time, % (95 % intervals in the table)",
        (lo - 1.0).max(0.0),
        (hi + 1.0).min(100.0),
    )
}

/// The designs of several results, each once, in order of appearance.
pub(crate) fn design_names(results: &[RunResult]) -> Vec<&str> {
    let mut names: Vec<&str> = Vec::new();
    for r in results {
        for d in &r.designs {
            if !names.contains(&d.design.as_str()) {
                names.push(&d.design);
            }
        }
    }
    names
}

/// Writes the plots of one result into `dir`.
pub fn write(r: &RunResult, dir: &Path) -> anyhow::Result<Vec<PathBuf>> {
    out_dir(dir)?;
    let c = &r.config;
    let job = format!(
        "{}-GPU job, {} days × {} trials, {}",
        c.job_gpus,
        c.days,
        c.trials,
        c.lb.describe()
    );
    let mut out = Vec::new();
    let lines: Vec<(String, &Aggregate)> = r
        .designs
        .iter()
        .map(|d| (format!("{} (", d.design), &d.aggregate))
        .collect();
    let p = dir.join("busbw-tail.svg");
    tail_plot(
        &p,
        &format!("time below a bus bandwidth — {job}"),
        "bus bandwidth / healthy (0: the job cannot run)",
        &lines,
    )?;
    out.push(p);
    let end = c.days * 24.0;
    let with_line: Vec<_> = r.designs.iter().filter(|d| d.timeline.is_some()).collect();
    if with_line.is_empty() {
        return Ok(out);
    }
    let tl = |v: fn(&TimelinePoint) -> f64| -> Vec<Series> {
        with_line
            .iter()
            .map(|d| Series {
                name: d.design.clone(),
                points: steps(d.timeline.as_deref().unwrap_or(&[]), end, |p| p.hour, v),
            })
            .collect()
    };
    let days = Axis::new("day", 0.0, c.days);
    let bw = tl(|p| p.rel_busbw);
    let p = dir.join("timeline-busbw.svg");
    let hi = ymax(&bw).max(1.0) * 1.05;
    draw(
        &p,
        &format!("trial 0: bus bandwidth / healthy — {job}"),
        Axis::new("day", 0.0, c.days),
        Axis::new("bus bandwidth / healthy", 0.0, hi),
        false,
        &bw,
    )?;
    out.push(p);
    let unusable = tl(|p| 100.0 * p.unusable_gpus);
    let p = dir.join("timeline-unusable.svg");
    let hi = (ymax(&unusable) * 1.2).max(1.0);
    draw(
        &p,
        &format!("trial 0: GPUs on servers down or cut off — {job}"),
        Axis::new("day", 0.0, c.days),
        Axis::new("% of the fabric's GPUs", 0.0, hi),
        false,
        &unusable,
    )?;
    out.push(p);
    let failed = tl(|p| p.failed as f64);
    let p = dir.join("timeline-failed.svg");
    let hi = ymax(&failed) + 1.0;
    draw(
        &p,
        &format!("trial 0: components down — {job}"),
        days,
        Axis::new("components down", 0.0, hi).whole(),
        false,
        &failed,
    )?;
    out.push(p);
    Ok(out)
}

/// Effective training time by job size, one line per design, with its 95 % interval as
/// a dashed band (lower and upper ends).
pub fn sweep(results: &[RunResult], dir: &Path) -> anyhow::Result<PathBuf> {
    out_dir(dir)?;
    let lines: Vec<Series> = design_names(results)
        .iter()
        .map(|n| Series {
            name: n.to_string(),
            points: results
                .iter()
                .filter_map(|r| {
                    let d = r.designs.iter().find(|d| d.design == *n)?;
                    Some((
                        (r.config.job_gpus as f64).log2(),
                        100.0 * d.summary.effective_training.value,
                    ))
                })
                .collect(),
        })
        .collect();
    let (lo, hi) = results
        .iter()
        .flat_map(|r| &r.designs)
        .map(|d| &d.summary.effective_training)
        .fold((100.0f64, 0.0f64), |(lo, hi), e| {
            let l = if e.lo.is_finite() { e.lo } else { e.value };
            let h = if e.hi.is_finite() { e.hi } else { e.value };
            (lo.min(100.0 * l), hi.max(100.0 * h))
        });
    let xs: Vec<f64> = results
        .iter()
        .map(|r| (r.config.job_gpus as f64).log2())
        .collect();
    let x0 = xs.iter().copied().fold(f64::INFINITY, f64::min).floor() - 1.0;
    let x1 = xs.iter().copied().fold(f64::NEG_INFINITY, f64::max).ceil() + 1.0;
    let mut x = Axis::new("job GPUs (log scale)", x0, x1).whole();
    x.fmt = |v| format!("{:.0}", 2f64.powf(*v));
    let p = dir.join("sweep-effective-training.svg");
    let c = results.first().map(|r| &r.config).context("no results")?;
    draw(
        &p,
        &format!(
            "effective training time by job size — {} days × {} trials, {}",
            c.days,
            c.trials,
            c.lb.describe()
        ),
        x,
        effective_axis(lo, hi),
        false,
        &lines,
    )?;
    Ok(p)
}

/// A file-name-safe form of a design name (`docs/x.toml` → `docs-x-toml`).
fn file_safe(name: &str) -> String {
    name.chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '-' })
        .collect()
}

/// Plots of a multi-job result, per design: `jobs-busbw-tail-DESIGN.svg` (share of time
/// each job's bus bandwidth is below x, log scale; x relative to its healthy bandwidth
/// with every job running) and `jobs-timeline-busbw-DESIGN.svg` (trial 0, one line per
/// job), and `jobs-effective-training.svg` (each job's effective training time, one line
/// per design over the jobs in priority order).
pub fn jobs(r: &JobsRunResult, dir: &Path) -> anyhow::Result<Vec<PathBuf>> {
    out_dir(dir)?;
    let c = &r.config;
    let run = format!(
        "{} jobs, {} days × {} trials, {}",
        r.jobs.len(),
        c.days,
        c.trials,
        c.lb.describe()
    );
    let mut out = Vec::new();
    for d in &r.designs {
        let lines: Vec<(String, &Aggregate)> = d
            .jobs
            .iter()
            .map(|j| {
                let label = format!("{} ({} GPUs; ", j.spec.name, j.spec.gpus);
                (label, &j.aggregate)
            })
            .collect();
        let p = dir.join(format!("jobs-busbw-tail-{}.svg", file_safe(&d.design)));
        tail_plot(
            &p,
            &format!("{}: time below a bus bandwidth — {run}", d.design),
            "bus bandwidth / healthy with all jobs (0: the job cannot run)",
            &lines,
        )?;
        out.push(p);
        let Some(line) = d.timeline.as_deref() else {
            continue;
        };
        let end = c.days * 24.0;
        let lines: Vec<Series> = d
            .jobs
            .iter()
            .enumerate()
            .map(|(k, j)| Series {
                name: j.spec.name.clone(),
                points: steps(line, end, |p| p.hour, |p| p.rel_busbw[k]),
            })
            .collect();
        let hi = ymax(&lines).max(1.0) * 1.05;
        let p = dir.join(format!("jobs-timeline-busbw-{}.svg", file_safe(&d.design)));
        draw(
            &p,
            &format!(
                "{}: trial 0, bus bandwidth / healthy per job — {run}",
                d.design
            ),
            Axis::new("day", 0.0, c.days),
            Axis::new("bus bandwidth / healthy with all jobs", 0.0, hi),
            false,
            &lines,
        )?;
        out.push(p);
    }
    let lines: Vec<Series> = r
        .designs
        .iter()
        .map(|d| Series {
            name: format!(
                "{} (all jobs: {:.2} %)",
                d.design,
                100.0 * d.cluster.effective_training.value
            ),
            points: d
                .jobs
                .iter()
                .enumerate()
                .map(|(k, j)| (k as f64 + 1.0, 100.0 * j.summary.effective_training.value))
                .collect(),
        })
        .collect();
    let (lo, hi) = r
        .designs
        .iter()
        .flat_map(|d| &d.jobs)
        .map(|j| 100.0 * j.summary.effective_training.value)
        .fold((100.0f64, 0.0f64), |(lo, hi), v| (lo.min(v), hi.max(v)));
    let mut x = Axis::new("job, in priority order", 0.0, r.jobs.len() as f64 + 1.0).whole();
    x.fmt = |v| format!("{v:.0}");
    let p = dir.join("jobs-effective-training.svg");
    let names: Vec<String> = r
        .jobs
        .iter()
        .enumerate()
        .map(|(k, j)| format!("{} {}", k + 1, j.name))
        .collect();
    draw(
        &p,
        &format!(
            "effective training time per job ({}) — {run}",
            names.join(", ")
        ),
        x,
        effective_axis(lo, hi),
        false,
        &lines,
    )?;
    out.push(p);
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::tick;

    #[test]
    fn tick_labels_are_short() {
        assert_eq!(tick(&(0.1 + 0.2)), "0.3");
        assert_eq!(tick(&0.7999999999999999), "0.8");
        assert_eq!(tick(&2.0), "2");
        assert_eq!(tick(&0.0), "0");
        assert_eq!(tick(&-0.0001), "0");
        assert_eq!(tick(&12.5), "12.5");
    }
}
