//! `--lanes N`: how many virtual lanes / lossless traffic classes the routes may use
//! (`fabric routes verify`, `routes export`, `build`). After failures, pairs with a live
//! path but no up*/down* path are routed around on lanes 1.. (`topo::lanes`), each lane's
//! channel dependency graph acyclic; `--lanes 1` keeps up*/down* only (such pairs stay
//! unreachable, as OpenSM's `updn` leaves them).

use topo::lanes::{Lanes, MAX_LANES};
use topo::verify::VerifyReport;
use topo::{Fabric, Routes};

/// The lane option.
#[derive(Debug, Clone, clap::Args)]
pub struct LaneArgs {
    /// Virtual lanes (InfiniBand SL/VL) or lossless traffic classes (RoCE PFC priorities)
    /// the routes may use, 1 to 8. Pairs with a live path but no up*/down* path are routed
    /// on lanes 1 and up, deadlock-free per lane; 1 = up*/down* only (they stay unreachable).
    #[arg(long, value_name = "N", default_value_t = MAX_LANES,
          value_parser = clap::value_parser!(u8).range(1..=MAX_LANES as i64))]
    pub lanes: u8,
}

impl Default for LaneArgs {
    fn default() -> Self {
        LaneArgs { lanes: MAX_LANES }
    }
}

/// Routes the stranded pairs around (nothing to do without failures). An error (too few
/// lanes) leaves the tables up*/down* only and is returned as text for the report.
pub fn route_around(f: &Fabric, routes: &mut Routes, max_lanes: u8) -> (Lanes, Option<String>) {
    if routes.failed_links().next().is_none() {
        return (Lanes::none(), None);
    }
    match topo::lanes::route_around(f, routes, max_lanes) {
        Ok(l) => (l, None),
        Err(e) => (Lanes::none(), Some(e.to_string())),
    }
}

/// The report line: pairs without an up*/down* path, how many went on further lanes,
/// lanes used, disconnected pairs. `None` when there is nothing to say.
pub fn lanes_line(v: &VerifyReport, leaf_pairs: usize) -> Option<String> {
    let no_updown = v.unreachable_no_updown + v.pairs_on_extra_lanes;
    if no_updown == 0 && v.unreachable_disconnected == 0 {
        return None;
    }
    Some(format!(
        "no up*/down* path: {no_updown} host pairs, {} of them routed around on further lanes \
         ({} leaf pairs), {} left unrouted; lanes used {} ({}); {} host pairs disconnected (no live path)",
        v.pairs_on_extra_lanes,
        leaf_pairs,
        v.unreachable_no_updown,
        v.lanes_used,
        lane_edges(v),
        v.unreachable_disconnected
    ))
}

/// `lane 0: 1234 dependencies acyclic, lane 1: …`.
fn lane_edges(v: &VerifyReport) -> String {
    v.lanes
        .iter()
        .map(|l| {
            format!(
                "lane {}: {} dependencies {}",
                l.lane,
                l.edges,
                if l.acyclic { "acyclic" } else { "CYCLIC" }
            )
        })
        .collect::<Vec<_>>()
        .join(", ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stranded_pairs_are_routed_and_reported() {
        let f = topo::generators::fat_tree(4, topo::Rate::gbps(400)).unwrap();
        let mut r = Routes::compute(&f);
        let set = topo::failures::resolve(&f, &topo::lanes::STRANDED_K4.map(String::from)).unwrap();
        r.fail_links(&f, &set.links);
        let (lanes, err) = route_around(&f, &mut r, MAX_LANES);
        assert!(err.is_none());
        let v = topo::verify::verify_lanes(&f, &r, &lanes);
        assert!(v.ok());
        let line = lanes_line(&v, lanes.pairs().len()).unwrap();
        assert!(
            line.starts_with("no up*/down* path: 48 host pairs, 48 of them routed around on further lanes (12 leaf pairs), 0 left unrouted; lanes used 2 (lane 0: "),
            "{line}"
        );
        // One lane: up*/down* only, the 48 pairs stay unreachable.
        let (lanes, err) = route_around(&f, &mut r, 1);
        assert!(err.is_none() && lanes.is_empty());
        let v = topo::verify::verify_lanes(&f, &r, &lanes);
        assert_eq!(v.unreachable_no_updown, 48);
        assert!(lanes_line(&v, 0).unwrap().contains("48 left unrouted"));
    }
}
