//! Heat-map geometry: a [`Grid`] window downsampled into bins that fit the screen, by
//! maximum (a hot link is never averaged away), plus the drill-down path.
//!
//! A bin covers `rows_per_bin × cols_per_bin` grid cells; the renderer puts two bins in
//! one character (upper and lower half block) in colour themes, one in the no-colour theme.

use crate::fabric::{Grid, RowKind};
use crate::metrics::LinkRates;

/// A rectangle of grid cells: rows `row0..row0+rows`, columns `col0..col0+cols`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Window {
    /// First row.
    pub row0: u32,
    /// Rows.
    pub rows: u32,
    /// First column.
    pub col0: u32,
    /// Columns.
    pub cols: u32,
}

impl Window {
    /// The whole grid.
    pub fn all(g: &Grid) -> Window {
        Window {
            row0: 0,
            rows: g.rows.len() as u32,
            col0: 0,
            cols: g.cols.len() as u32,
        }
    }
}

/// How a window maps onto bins.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Binning {
    /// The window.
    pub window: Window,
    /// Grid rows per bin.
    pub rows_per_bin: u32,
    /// Grid columns per bin.
    pub cols_per_bin: u32,
    /// Bin rows.
    pub bin_rows: u32,
    /// Bin columns.
    pub bin_cols: u32,
}

impl Binning {
    /// Fit `window` into at most `max_rows × max_cols` bins (each ≥ 1).
    pub fn fit(window: Window, max_rows: u32, max_cols: u32) -> Binning {
        let rpb = window.rows.div_ceil(max_rows.max(1)).max(1);
        let cpb = window.cols.div_ceil(max_cols.max(1)).max(1);
        Binning {
            window,
            rows_per_bin: rpb,
            cols_per_bin: cpb,
            bin_rows: window.rows.div_ceil(rpb),
            bin_cols: window.cols.div_ceil(cpb),
        }
    }

    /// The grid cells bin (r, c) covers.
    pub fn cells_of(&self, r: u32, c: u32) -> Window {
        let w = self.window;
        let row0 = w.row0 + r * self.rows_per_bin;
        let col0 = w.col0 + c * self.cols_per_bin;
        Window {
            row0,
            rows: self.rows_per_bin.min(w.row0 + w.rows - row0),
            col0,
            cols: self.cols_per_bin.min(w.col0 + w.cols - col0),
        }
    }
}

/// What one bin shows.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct Bin {
    /// Links in the bin.
    pub links: u32,
    /// Maximum utilisation, 0..=1.
    pub util: f32,
    /// Some link is down.
    pub down: bool,
    /// Some link drops.
    pub drops: bool,
    /// Some link is paused by PFC.
    pub pause: bool,
}

/// Bin a window of `grid` with the rates in `rates` (by link id; missing links count as
/// idle). Links for which `keep` is false count in [`Bin::links`] but show nothing.
/// Costs one pass over the window's links (grid order, so the rates of a plane's links,
/// numbered together, are read mostly in sequence) and no division per link.
pub fn bin(
    grid: &Grid,
    b: &Binning,
    rates: &[LinkRates],
    keep: impl Fn(u32, &LinkRates) -> bool,
) -> Vec<Bin> {
    let mut bins = vec![Bin::default(); (b.bin_rows * b.bin_cols) as usize];
    let w = b.window;
    // bin column of each window column, u32::MAX outside the window
    let mut col_bin = vec![u32::MAX; grid.cols.len().max((w.col0 + w.cols) as usize)];
    for c in 0..w.cols {
        col_bin[(w.col0 + c) as usize] = c / b.cols_per_bin;
    }
    let start = grid.links.partition_point(|g| g.row < w.row0);
    let (mut row, mut base) = (u32::MAX, 0);
    for g in grid.links[start..]
        .iter()
        .take_while(|g| g.row < w.row0 + w.rows)
    {
        let Some(&c) = col_bin.get(g.col as usize).filter(|&&c| c != u32::MAX) else {
            continue;
        };
        if g.row != row {
            row = g.row;
            base = (row - w.row0) / b.rows_per_bin * b.bin_cols;
        }
        let x = &mut bins[(base + c) as usize];
        x.links += 1;
        let Some(l) = rates.get(g.link as usize) else {
            continue;
        };
        if keep(g.link, l) {
            x.fold(l);
        }
    }
    bins
}

impl Bin {
    /// Take one kept link into the bin: the maximum utilisation and any fault.
    fn fold(&mut self, l: &LinkRates) {
        self.util = self.util.max(l.util);
        self.down |= l.down;
        self.drops |= l.drops_per_s > 0.0;
        self.pause |= l.pfc_per_s > 0.0 || l.paused > 0.0;
    }

    /// A fault glyph's flags of one link, as a pod row shows them (any link down,
    /// dropping or sending PFC pauses).
    fn fault(&mut self, l: &LinkRates) {
        self.down |= l.down;
        self.drops |= l.drops_per_s > 0.0;
        self.pause |= l.pfc_per_s > 0.0;
    }
}

/// Per pod of a 3-tier plane: the faults of the links inside it (leaf ↔ aggregation),
/// flags only ([`Bin::links`] and [`Bin::util`] stay zero). One pass over the pods'
/// links; the filter does not apply (a pod row warns of any fault inside).
pub fn pod_faults(pods: &[(u32, Grid)], rates: &[LinkRates]) -> Vec<Bin> {
    pods.iter()
        .map(|(_, g)| {
            let mut bin = Bin::default();
            for l in g.links.iter().filter_map(|x| rates.get(x.link as usize)) {
                bin.fault(l);
            }
            bin
        })
        .collect()
}

/// Per bin row of a pod × core grid binned by `b`: the faults of its pods (from
/// [`pod_faults`]); empty for other grids.
pub fn row_faults(grid: &Grid, b: &Binning, pods: &[Bin]) -> Vec<Bin> {
    if grid.row_kind != RowKind::Pod {
        return Vec::new();
    }
    (0..b.bin_rows)
        .map(|r| {
            let w = b.cells_of(r, 0);
            let mut bin = Bin::default();
            for p in pods.iter().skip(w.row0 as usize).take(w.rows as usize) {
                bin.down |= p.down;
                bin.drops |= p.drops;
                bin.pause |= p.pause;
            }
            bin
        })
        .collect()
}

/// One step of the drill-down path.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Level {
    /// A plane's top grid, zoomed to a window.
    Top(Window),
    /// A pod's grid (3-tier planes), zoomed to a window.
    Pod {
        /// Index into the plane's pod list.
        pod: usize,
        /// Zoom window.
        window: Window,
    },
    /// The links of one cell (a switch pair, or a pod and a core).
    Cell {
        /// Row.
        row: u32,
        /// Column.
        col: u32,
    },
    /// One link.
    Link(u32),
}

/// What Enter on bin (r, c) of `binning` over `grid` leads to.
pub fn drill(
    grid: &Grid,
    binning: &Binning,
    r: u32,
    c: u32,
    in_pod: Option<usize>,
) -> Option<Level> {
    if r >= binning.bin_rows || c >= binning.bin_cols {
        return None;
    }
    let cells = binning.cells_of(r, c);
    if cells.rows > 1 || cells.cols > 1 {
        return Some(match in_pod {
            Some(pod) => Level::Pod { pod, window: cells },
            None => Level::Top(cells),
        });
    }
    if grid.row_kind == RowKind::Pod {
        // Pod rows open the pod's own leaf × aggregation grid.
        return Some(Level::Pod {
            pod: cells.row0 as usize,
            window: Window {
                row0: 0,
                rows: 0,
                col0: 0,
                cols: 0,
            },
        });
    }
    grid.cell(cells.row0, cells.col0).next()?;
    Some(Level::Cell {
        row: cells.row0,
        col: cells.col0,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::FabricView;

    #[test]
    fn downsampling_keeps_the_maximum() {
        let f = topo::generators::leaf_spine(64, 16, 2, topo::Rate::gbps(400)).unwrap();
        let v = FabricView::from_topo(&f);
        let g = &v.planes[0].top;
        let mut rates = vec![LinkRates::default(); v.links.len()];
        let hot = g.links[g.links.len() / 2].link;
        rates[hot as usize].util = 0.97;
        let b = Binning::fit(Window::all(g), 8, 4);
        assert_eq!(
            (b.rows_per_bin, b.cols_per_bin, b.bin_rows, b.bin_cols),
            (8, 4, 8, 4)
        );
        let bins = bin(g, &b, &rates, |_, _| true);
        assert_eq!(bins.iter().map(|x| x.links).sum::<u32>(), 64 * 16);
        assert_eq!(bins.iter().filter(|x| x.util == 0.97).count(), 1);
    }

    #[test]
    fn drill_narrows_then_opens_the_cell() {
        let f = topo::generators::leaf_spine(64, 16, 2, topo::Rate::gbps(400)).unwrap();
        let v = FabricView::from_topo(&f);
        let g = &v.planes[0].top;
        let b = Binning::fit(Window::all(g), 8, 4);
        let Some(Level::Top(w)) = drill(g, &b, 1, 2, None) else {
            panic!()
        };
        assert_eq!(
            w,
            Window {
                row0: 8,
                rows: 8,
                col0: 8,
                cols: 4
            }
        );
        let b2 = Binning::fit(w, 100, 100);
        assert_eq!(
            drill(g, &b2, 0, 0, None),
            Some(Level::Cell { row: 8, col: 8 })
        );
        assert_eq!(drill(g, &b2, 8, 0, None), None);
    }
}
