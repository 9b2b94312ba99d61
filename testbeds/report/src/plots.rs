//! SVG plots with `plotters` (SVG backend only, no system fonts needed).
//!
//! Generic charts, each written to an SVG file: [`line_chart`] (named series),
//! [`heat_map`] (rows × time, e.g. switch ports × time) and [`bars`] (grouped bars, e.g. bus
//! bandwidth per load-balancing scheme per workload).

use plotters::prelude::*;
use std::path::Path;

fn err<E: std::fmt::Display>(e: E) -> std::io::Error {
    std::io::Error::other(e.to_string())
}

/// A line chart of named series.
pub fn line_chart(
    path: &Path,
    title: &str,
    xlabel: &str,
    ylabel: &str,
    series: &[(String, Vec<(f64, f64)>)],
) -> std::io::Result<()> {
    let mut c = Chart::new(title, xlabel, ylabel);
    for (i, (name, pts)) in series.iter().enumerate() {
        c.lines.push(Line::solid(name, i, pts.clone()));
    }
    c.write(path)
}

/// One line of a [`Chart`].
#[derive(Debug, Clone)]
pub struct Line {
    pub name: String,
    pub points: Vec<(f64, f64)>,
    /// Dashed (a second source, e.g. the simulator beside a veth run) or solid.
    pub dashed: bool,
    /// Colour index: lines with the same index share a colour (the same flow from two
    /// sources).
    pub colour: usize,
}

impl Line {
    pub fn solid(name: &str, colour: usize, points: Vec<(f64, f64)>) -> Line {
        Line {
            name: name.to_string(),
            points,
            dashed: false,
            colour,
        }
    }

    pub fn dashed(name: &str, colour: usize, points: Vec<(f64, f64)>) -> Line {
        Line {
            dashed: true,
            ..Line::solid(name, colour, points)
        }
    }
}

/// A line chart with horizontal reference lines (thresholds) and event markers.
#[derive(Debug, Clone, Default)]
pub struct Chart {
    pub title: String,
    pub xlabel: String,
    pub ylabel: String,
    pub lines: Vec<Line>,
    /// Horizontal reference lines: (label, y), drawn grey and dotted.
    pub thresholds: Vec<(String, f64)>,
    /// Events at times x, drawn as markers along the bottom: (label, xs). The first
    /// kind is drawn as triangles, the second as crosses, further kinds as circles.
    pub markers: Vec<(String, Vec<f64>)>,
}

impl Chart {
    pub fn new(title: &str, xlabel: &str, ylabel: &str) -> Chart {
        Chart {
            title: title.to_string(),
            xlabel: xlabel.to_string(),
            ylabel: ylabel.to_string(),
            ..Chart::default()
        }
    }

    /// Write the chart as SVG to `path`.
    pub fn write(&self, path: &Path) -> std::io::Result<()> {
        let xmax = self
            .lines
            .iter()
            .flat_map(|l| l.points.iter().map(|p| p.0))
            .chain(self.markers.iter().flat_map(|m| m.1.iter().copied()))
            .fold(1e-9, f64::max);
        let ymax = self
            .lines
            .iter()
            .flat_map(|l| l.points.iter().map(|p| p.1))
            .chain(self.thresholds.iter().map(|t| t.1))
            .fold(1e-9, f64::max)
            * 1.1;
        let root = SVGBackend::new(path, (960, 540)).into_drawing_area();
        root.fill(&WHITE).map_err(err)?;
        let mut chart = ChartBuilder::on(&root)
            .caption(&self.title, ("sans-serif", 18))
            .margin(12)
            .x_label_area_size(40)
            .y_label_area_size(60)
            .build_cartesian_2d(0f64..xmax, 0f64..ymax)
            .map_err(err)?;
        chart
            .configure_mesh()
            .x_desc(&self.xlabel)
            .y_desc(&self.ylabel)
            .draw()
            .map_err(err)?;
        for l in &self.lines {
            let c = Palette99::pick(l.colour).to_rgba();
            let style = c.stroke_width(2);
            let drawn = if l.dashed {
                chart.draw_series(DashedLineSeries::new(l.points.iter().copied(), 6, 4, style))
            } else {
                chart.draw_series(LineSeries::new(l.points.iter().copied(), style))
            };
            let dashed = l.dashed;
            drawn
                .map_err(err)?
                .label(l.name.as_str())
                .legend(move |(x, y)| {
                    let end = if dashed { x + 8 } else { x + 18 };
                    PathElement::new(vec![(x, y), (end, y)], style)
                });
        }
        let grey = RGBColor(110, 110, 110);
        for (label, y) in &self.thresholds {
            let y = *y;
            chart
                .draw_series(DashedLineSeries::new(
                    [(0.0, y), (xmax, y)],
                    2,
                    4,
                    grey.stroke_width(1),
                ))
                .map_err(err)?
                .label(label.as_str())
                .legend(move |(x, yy)| {
                    PathElement::new(vec![(x, yy), (x + 18, yy)], grey.stroke_width(1))
                });
        }
        let at = ymax * 0.02;
        for (i, (label, xs)) in self.markers.iter().enumerate() {
            let c = [RED, BLUE, BLACK][i.min(2)];
            let drawn = match i {
                0 => chart.draw_series(
                    xs.iter()
                        .map(|&x| TriangleMarker::new((x, at), 4, c.filled()).into_dyn()),
                ),
                1 => chart.draw_series(
                    xs.iter()
                        .map(|&x| Cross::new((x, at), 3, c.stroke_width(1)).into_dyn()),
                ),
                _ => chart.draw_series(
                    xs.iter()
                        .map(|&x| Circle::new((x, at), 3, c.stroke_width(1)).into_dyn()),
                ),
            };
            drawn
                .map_err(err)?
                .label(label.as_str())
                .legend(move |(x, y)| Circle::new((x + 9, y), 3, c.filled()));
        }
        chart
            .configure_series_labels()
            .background_style(WHITE.mix(0.85))
            .border_style(BLACK)
            .draw()
            .map_err(err)?;
        root.present().map_err(err)?;
        Ok(())
    }
}

/// A heat map: rows = ports (binned to at most 120), columns = samples (binned to
/// at most 240), colour = utilisation 0 (white) .. 1 (red).
pub fn heat_map(path: &Path, title: &str, t: &[f64], util: &[Vec<f32>]) -> std::io::Result<()> {
    let cols = util.len();
    let rows = util.first().map(|r| r.len()).unwrap_or(0);
    if cols == 0 || rows == 0 {
        return Ok(());
    }
    let cb = cols.div_ceil(240);
    let rb = rows.div_ceil(120);
    let (nc, nr) = (cols.div_ceil(cb), rows.div_ceil(rb));
    let root = SVGBackend::new(path, (960, 540)).into_drawing_area();
    root.fill(&WHITE).map_err(err)?;
    let tmax = t.last().copied().unwrap_or(1.0).max(1e-9);
    let mut chart = ChartBuilder::on(&root)
        .caption(title, ("sans-serif", 18))
        .margin(12)
        .x_label_area_size(40)
        .y_label_area_size(60)
        .build_cartesian_2d(0f64..tmax, 0f64..rows as f64)
        .map_err(err)?;
    chart
        .configure_mesh()
        .disable_mesh()
        .x_desc("time (µs)")
        .y_desc("switch port (binned)")
        .draw()
        .map_err(err)?;
    let dt = tmax / nc as f64;
    let mut cells = Vec::with_capacity(nc * nr);
    for ci in 0..nc {
        for ri in 0..nr {
            let mut sum = 0.0f64;
            let mut n = 0usize;
            for col in &util[ci * cb..((ci + 1) * cb).min(cols)] {
                for v in &col[ri * rb..((ri + 1) * rb).min(rows)] {
                    sum += *v as f64;
                    n += 1;
                }
            }
            let u = (sum / n.max(1) as f64).clamp(0.0, 1.0);
            let g = (255.0 * (1.0 - u)) as u8;
            cells.push(Rectangle::new(
                [
                    (ci as f64 * dt, (ri * rb) as f64),
                    ((ci + 1) as f64 * dt, ((ri + 1) * rb).min(rows) as f64),
                ],
                RGBColor(255, g, g).filled(),
            ));
        }
    }
    chart.draw_series(cells).map_err(err)?;
    root.present().map_err(err)?;
    Ok(())
}

/// Grouped bars: one group per category, one bar per series, values ≥ 0.
pub fn bars(
    path: &Path,
    title: &str,
    ylabel: &str,
    categories: &[String],
    series: &[(String, Vec<f64>)],
) -> std::io::Result<()> {
    let ymax = series
        .iter()
        .flat_map(|(_, v)| v.iter().copied())
        .fold(1e-9, f64::max)
        * 1.15;
    let n = series.len().max(1) as f64;
    let root = SVGBackend::new(path, (960, 540)).into_drawing_area();
    root.fill(&WHITE).map_err(err)?;
    let cats = categories.to_vec();
    let mut chart = ChartBuilder::on(&root)
        .caption(title, ("sans-serif", 18))
        .margin(12)
        .x_label_area_size(40)
        .y_label_area_size(60)
        .build_cartesian_2d(0f64..categories.len() as f64, 0f64..ymax)
        .map_err(err)?;
    chart
        .configure_mesh()
        .disable_x_mesh()
        .x_labels(categories.len() * 2 + 1)
        .x_label_formatter(&|x| {
            let i = x.floor() as usize;
            if (x - i as f64 - 0.5).abs() < 0.26 {
                cats.get(i).cloned().unwrap_or_default()
            } else {
                String::new()
            }
        })
        .y_desc(ylabel)
        .draw()
        .map_err(err)?;
    for (si, (name, vals)) in series.iter().enumerate() {
        let c = Palette99::pick(si).to_rgba();
        let w = 0.8 / n;
        chart
            .draw_series(vals.iter().enumerate().map(|(ci, &v)| {
                let x0 = ci as f64 + 0.1 + si as f64 * w;
                Rectangle::new([(x0, 0.0), (x0 + w * 0.9, v)], c.filled())
            }))
            .map_err(err)?
            .label(name.as_str())
            .legend(move |(x, y)| Rectangle::new([(x, y - 5), (x + 12, y + 5)], c.filled()));
    }
    chart
        .configure_series_labels()
        .position(SeriesLabelPosition::UpperRight)
        .background_style(WHITE.mix(0.85))
        .border_style(BLACK)
        .draw()
        .map_err(err)?;
    root.present().map_err(err)?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn charts_are_svg() {
        let dir = std::env::temp_dir().join(format!("fabric-plots-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let p = dir.join("l.svg");
        line_chart(
            &p,
            "t",
            "x",
            "y",
            &[("a".into(), vec![(0.0, 1.0), (1.0, 2.0)])],
        )
        .unwrap();
        let s = std::fs::read_to_string(&p).unwrap();
        assert!(
            s.starts_with("<svg") && s.contains("<polyline"),
            "{}",
            &s[..200.min(s.len())]
        );
        let p = dir.join("b.svg");
        bars(
            &p,
            "t",
            "y",
            &["w1".into(), "w2".into()],
            &[("ecmp".into(), vec![1.0, 2.0])],
        )
        .unwrap();
        assert!(std::fs::read_to_string(&p).unwrap().contains("<rect"));
        let p = dir.join("h.svg");
        heat_map(&p, "t", &[1.0, 2.0], &[vec![0.1, 0.9], vec![0.5, 0.5]]).unwrap();
        assert!(std::fs::read_to_string(&p).unwrap().contains("<rect"));
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
