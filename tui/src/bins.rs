//! Heat-map bins kept between frames.
//!
//! Binning every link the heat map shows is the costliest part of a frame on a large
//! fabric (8 planes side by side at 384k links: 128k links, about 0.7 ms with the rates
//! out of cache), and most frames redraw the same data (a key, a cursor move, a status
//! change). So [`Bins`] keeps what was binned, and reuses it while the
//! inputs are the same: the fabric, the sample, the filter's mask (each compared by
//! identity: the app replaces them, never changes them) and each grid's binning. The pod
//! rows' faults come with the sample ([`Sample::pod_faults`], found on the source's
//! thread). [`crate::App::prepare`] fills it before a frame; a frame drawn without it
//! bins in line ([`panel`]), with the same result.

use crate::fabric::{FabricView, Grid};
use crate::heatmap::{self, Bin, Binning};
use crate::metrics::{LinkRates, Sample};
use crate::rows::Rows;
use std::sync::Arc;

/// One grid of the fabric: a plane's top grid, or a pod's grid in it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct GridId {
    /// Index into [`FabricView::planes`].
    pub plane: usize,
    /// Index into the plane's pods (None: the top grid).
    pub pod: Option<usize>,
}

impl GridId {
    /// The grid, and the pods whose faults its rows carry (top grids of 3-tier planes).
    pub fn grid(self, fabric: &FabricView) -> Option<(&Grid, &[(u32, Grid)])> {
        let p = fabric.planes.get(self.plane)?;
        match self.pod {
            None => Some((&p.top, &p.pods[..])),
            Some(k) => Some((&p.pods.get(k)?.1, &[])),
        }
    }
}

/// One grid binned: what a heat-map panel draws.
#[derive(Debug, Clone, PartialEq)]
pub struct Panel {
    /// The grid.
    pub grid: GridId,
    /// How its window maps onto the bins.
    pub binning: Binning,
    /// Bins, row by row ([`heatmap::bin`]).
    pub bins: Vec<Bin>,
    /// Per bin row, the faults inside its pods (pod × core grids; else empty).
    pub row_faults: Vec<Bin>,
}

/// Bin one grid now, with the rates of `sample` (none: every link idle) and the
/// filter's `mask` (None keeps every link). The pod rows' faults come from the sample's
/// [`Sample::pod_faults`], or from its rates if it has none for this plane.
pub fn panel(
    fabric: &FabricView,
    sample: Option<&Sample>,
    mask: Option<&[bool]>,
    id: GridId,
    binning: Binning,
) -> Panel {
    let rates = sample.map_or(&[][..], |s| &s.links[..]);
    let Some((g, pod_grids)) = id.grid(fabric) else {
        return Panel {
            grid: id,
            binning,
            bins: vec![Bin::default(); (binning.bin_rows * binning.bin_cols) as usize],
            row_faults: Vec::new(),
        };
    };
    let keep = |link: u32, _: &LinkRates| mask.is_none_or(|m| m.get(link as usize) == Some(&true));
    let bins = heatmap::bin(g, &binning, rates, keep);
    let known = sample
        .and_then(|s| s.pod_faults.get(id.plane))
        .filter(|f| f.len() == pod_grids.len());
    let row_faults = match known {
        _ if g.row_kind != crate::fabric::RowKind::Pod => Vec::new(),
        Some(p) => heatmap::row_faults(g, &binning, p),
        None => heatmap::row_faults(g, &binning, &heatmap::pod_faults(pod_grids, rates)),
    };
    Panel {
        grid: id,
        binning,
        bins,
        row_faults,
    }
}

/// What bins are computed from.
#[derive(Debug, Clone)]
struct Inputs {
    fabric: Arc<FabricView>,
    sample: Option<Arc<Sample>>,
    mask: Option<Arc<Rows>>,
}

impl Inputs {
    fn same(&self, o: &Inputs) -> bool {
        fn eq<T>(a: &Option<Arc<T>>, b: &Option<Arc<T>>) -> bool {
            match (a, b) {
                (Some(a), Some(b)) => Arc::ptr_eq(a, b),
                (None, None) => true,
                _ => false,
            }
        }
        Arc::ptr_eq(&self.fabric, &o.fabric)
            && eq(&self.sample, &o.sample)
            && eq(&self.mask, &o.mask)
    }
}

/// The bins of the grids the heat map shows, for one set of inputs.
#[derive(Debug, Default)]
pub struct Bins {
    inputs: Option<Inputs>,
    panels: Vec<Panel>,
}

impl Bins {
    /// Keep the bins of `wanted` (grid and binning) for this fabric, sample and mask
    /// (`mask`: the rows whose `keep` is the filter's mask; None keeps every link),
    /// binning only what is not kept already; bins of other grids are dropped.
    pub fn update(
        &mut self,
        fabric: &Arc<FabricView>,
        sample: Option<&Arc<Sample>>,
        mask: Option<&Arc<Rows>>,
        wanted: &[(GridId, Binning)],
    ) {
        let inputs = Inputs {
            fabric: fabric.clone(),
            sample: sample.cloned(),
            mask: mask.cloned(),
        };
        if !self.inputs.as_ref().is_some_and(|i| i.same(&inputs)) {
            *self = Bins {
                inputs: Some(inputs),
                panels: Vec::new(),
            };
        }
        self.panels
            .retain(|p| wanted.contains(&(p.grid, p.binning)));
        let keep = mask.map(|r| &r.keep[..]);
        for &(id, binning) in wanted {
            if self.get(id, binning).is_none() {
                let p = panel(fabric, sample.map(|s| &**s), keep, id, binning);
                self.panels.push(p);
            }
        }
    }

    /// The bins of grid `id` binned by `binning`, if kept.
    pub fn get(&self, id: GridId, binning: Binning) -> Option<&Panel> {
        self.panels
            .iter()
            .find(|p| p.grid == id && p.binning == binning)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::heatmap::Window;
    use crate::rows::Key;

    fn setup() -> (Arc<FabricView>, Vec<Arc<Sample>>) {
        let f = topo::generators::fat_tree(8, topo::Rate::gbps(400)).unwrap();
        let v = Arc::new(FabricView::from_topo(&f));
        let samples = (0..2)
            .map(|k| {
                let mut s = Sample::idle(&v, k);
                for (i, l) in s.links.iter_mut().enumerate() {
                    l.util = ((i as u64 * 7919 + k * 31) % 100) as f32 / 100.0;
                }
                s.links[v.planes[0].pods[k as usize].1.links[0].link as usize].down = true;
                s.finish(&v);
                Arc::new(s)
            })
            .collect();
        (v, samples)
    }

    #[test]
    fn kept_bins_are_the_fresh_ones_and_follow_every_input() {
        let (v, s) = setup();
        let top = GridId {
            plane: 0,
            pod: None,
        };
        let pod = GridId {
            plane: 0,
            pod: Some(1),
        };
        let fit = |id: GridId, r, c| {
            let (g, _) = id.grid(&v).unwrap();
            Binning::fit(Window::all(g), r, c)
        };
        let (b1, b2, bp) = (fit(top, 8, 16), fit(top, 3, 5), fit(pod, 4, 4));
        let mask = Arc::new(Rows {
            key: Key {
                sample: 0,
                query: 0,
            },
            order: Vec::new(),
            keep: (0..v.links.len()).map(|i| i % 3 == 0).collect(),
        });
        let mut bins = Bins::default();
        for (sample, mask, wanted) in [
            (&s[0], None, vec![(top, b1), (pod, bp)]),
            (&s[0], None, vec![(top, b2)]),
            (&s[1], None, vec![(top, b2)]),
            (&s[1], Some(&mask), vec![(top, b2), (pod, bp)]),
        ] {
            bins.update(&v, Some(sample), mask, &wanted);
            assert_eq!(bins.panels.len(), wanted.len(), "others are dropped");
            for &(id, b) in &wanted {
                let fresh = panel(&v, Some(sample), mask.map(|m| &m.keep[..]), id, b);
                assert_eq!(bins.get(id, b), Some(&fresh));
            }
        }
        // the pod rows carry the fault of the sample shown: pod 1 in sample 1, in the
        // first bin row (pods 0–2)
        let p = bins.get(top, b2).unwrap();
        assert_eq!(p.row_faults.iter().filter(|f| f.down).count(), 1);
        assert!(p.row_faults[0].down);
        // the same inputs again: kept, not binned again
        let before = p.bins.as_ptr();
        bins.update(&v, Some(&s[1]), Some(&mask), &[(top, b2)]);
        assert_eq!(bins.get(top, b2).unwrap().bins.as_ptr(), before);
    }

    #[test]
    fn pod_faults_without_a_finished_sample_come_from_the_rates() {
        let (v, s) = setup();
        let mut raw = (*s[1]).clone();
        raw.pod_faults.clear();
        let top = GridId {
            plane: 0,
            pod: None,
        };
        let b = Binning::fit(Window::all(&v.planes[0].top), 8, 16);
        assert_eq!(
            panel(&v, Some(&raw), None, top, b),
            panel(&v, Some(&s[1]), None, top, b)
        );
        let idle = panel(&v, None, None, top, b);
        assert!(idle.bins.iter().all(|x| x.util == 0.0 && !x.down));
    }
}
