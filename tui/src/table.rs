//! The links table's rows: filter, then sort only as far as the screen needs (a partial
//! selection, so a 300k-link fabric costs one pass, not a full sort, per frame).

use crate::fabric::FabricView;
use crate::filter::Expr;
use crate::metrics::LinkRates;
use std::cmp::Ordering;

/// Column to sort by.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum SortKey {
    /// Utilisation.
    #[default]
    Util,
    /// Throughput.
    Gbps,
    /// Drops per second.
    Drops,
    /// PFC pauses per second.
    Pfc,
    /// Paused share.
    Paused,
    /// ECN-marked share.
    Ecn,
    /// Link id (fabric order).
    Link,
}

impl SortKey {
    /// Every key, in the order `s` cycles through them.
    pub const ALL: [SortKey; 7] = [
        SortKey::Util,
        SortKey::Gbps,
        SortKey::Drops,
        SortKey::Pfc,
        SortKey::Paused,
        SortKey::Ecn,
        SortKey::Link,
    ];

    /// The next key.
    pub fn next(self) -> SortKey {
        let i = SortKey::ALL.iter().position(|k| *k == self).unwrap_or(0);
        SortKey::ALL[(i + 1) % SortKey::ALL.len()]
    }

    /// Column header.
    pub fn name(self) -> &'static str {
        match self {
            SortKey::Util => "util",
            SortKey::Gbps => "rate",
            SortKey::Drops => "drops/s",
            SortKey::Pfc => "PFC/s",
            SortKey::Paused => "paused",
            SortKey::Ecn => "ECN",
            SortKey::Link => "link",
        }
    }

    fn value(self, id: u32, r: &LinkRates) -> f32 {
        match self {
            SortKey::Util => r.util,
            SortKey::Gbps => r.bps,
            SortKey::Drops => r.drops_per_s,
            SortKey::Pfc => r.pfc_per_s,
            SortKey::Paused => r.paused,
            SortKey::Ecn => r.ecn,
            SortKey::Link => -(id as f32),
        }
    }
}

/// Column the flows view sorts by.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum FlowSort {
    /// Sending rate (finished flows last: they send nothing).
    #[default]
    Rate,
    /// Bytes delivered.
    Bytes,
    /// CNPs and NACKs received.
    Cnps,
    /// Round-trip time.
    Rtt,
    /// Flow id.
    Id,
}

impl FlowSort {
    /// Every key, in the order `s` cycles through them.
    pub const ALL: [FlowSort; 5] = [
        FlowSort::Rate,
        FlowSort::Bytes,
        FlowSort::Cnps,
        FlowSort::Rtt,
        FlowSort::Id,
    ];

    /// The next key.
    pub fn next(self) -> FlowSort {
        let i = FlowSort::ALL.iter().position(|k| *k == self).unwrap_or(0);
        FlowSort::ALL[(i + 1) % FlowSort::ALL.len()]
    }

    /// Column header.
    pub fn name(self) -> &'static str {
        match self {
            FlowSort::Rate => "rate",
            FlowSort::Bytes => "done",
            FlowSort::Cnps => "CNPs",
            FlowSort::Rtt => "RTT",
            FlowSort::Id => "id",
        }
    }

    /// The order of `flows` by this key, largest first (`ascending`: smallest first);
    /// ties by flow id. A finished flow's rate counts as nothing.
    pub fn order(self, flows: &[crate::metrics::FlowRow], ascending: bool) -> Vec<usize> {
        let key = |f: &crate::metrics::FlowRow| -> f64 {
            match self {
                FlowSort::Rate if f.finished => -1.0,
                FlowSort::Rate => f.rate_bps.unwrap_or(0.0),
                FlowSort::Bytes => f.bytes_done as f64,
                FlowSort::Cnps => f.cnps as f64,
                FlowSort::Rtt => f.rtt_ns.map_or(-1.0, |r| r as f64),
                FlowSort::Id => -(f.id as f64),
            }
        };
        let mut idx: Vec<usize> = (0..flows.len()).collect();
        idx.sort_by(|&a, &b| {
            let o = key(&flows[b]).total_cmp(&key(&flows[a]));
            let o = if ascending { o.reverse() } else { o };
            o.then(flows[a].id.cmp(&flows[b].id))
        });
        idx
    }
}

/// Which links to list and how.
#[derive(Debug, Clone, Default)]
pub struct Query<'a> {
    /// Filter expression.
    pub filter: Option<&'a Expr>,
    /// Only links that are down, dropping or pausing.
    pub faults_only: bool,
    /// Sort column.
    pub sort: SortKey,
    /// Ascending instead of descending.
    pub ascending: bool,
}

/// The matching links; the first `need` are in sort order (ties by link id), the rest
/// unordered. Returns every match so the caller knows the count. `by_util` (a sample's
/// [`crate::Sample::by_util`]) saves the sort when the order is utilisation, highest first.
pub fn rows(
    fabric: &FabricView,
    rates: &[LinkRates],
    q: &Query<'_>,
    need: usize,
    by_util: &[u32],
) -> Vec<u32> {
    let keep = |id: u32| keeps(fabric, rates, q, id);
    let unfiltered = q.filter.is_none() && !q.faults_only;
    if unfiltered && q.sort == SortKey::Util && !q.ascending && by_util.len() == fabric.links.len()
    {
        return by_util.to_vec();
    }
    // With a filter, one pass in link order (memory order, no cache misses), then sort
    // only the matches.
    let mut ids: Vec<u32> = (0..fabric.links.len() as u32)
        .filter(|&id| keep(id))
        .collect();
    sort(&mut ids, rates, q, need);
    ids
}

/// Sorts `ids` by the query's column (ties by link id); only the first `need` are
/// ordered, the rest follow unordered.
pub fn sort(ids: &mut [u32], rates: &[LinkRates], q: &Query<'_>, need: usize) {
    let idle = LinkRates::default();
    let rate = |id: u32| rates.get(id as usize).unwrap_or(&idle);
    let cmp = |a: &u32, b: &u32| {
        let (x, y) = (q.sort.value(*a, rate(*a)), q.sort.value(*b, rate(*b)));
        let o = y.total_cmp(&x);
        let o = if q.ascending { o.reverse() } else { o };
        o.then(a.cmp(b))
    };
    let need = need.min(ids.len());
    if need > 0 && need < ids.len() {
        ids.select_nth_unstable_by(need - 1, cmp);
        ids[..need].sort_unstable_by(cmp);
    } else {
        // a whole sort: on keys that carry the order and the id in one u64 (no lookup of
        // the rates per comparison), the same order as `cmp`
        let key = |id: u32| {
            let b = q.sort.value(id, rate(id)).to_bits();
            // f32::total_cmp's order as an unsigned integer
            let ord = if b >> 31 == 1 { !b } else { b | 1 << 31 };
            let ord = if q.ascending { ord } else { !ord };
            (u64::from(ord) << 32) | u64::from(id)
        };
        let mut keys: Vec<u64> = ids.iter().map(|&id| key(id)).collect();
        keys.sort_unstable();
        for (id, k) in ids.iter_mut().zip(keys) {
            *id = k as u32;
        }
    }
}

/// Does link `id` pass the query's filter and faults-only switch?
pub fn keeps(fabric: &FabricView, rates: &[LinkRates], q: &Query<'_>, id: u32) -> bool {
    let idle = LinkRates::default();
    let r = rates.get(id as usize).unwrap_or(&idle);
    (!q.faults_only || r.faulty()) && q.filter.is_none_or(|e| e.matches(fabric, id, r))
}

/// The `n` busiest matching links (utilisation, highest first): a walk down `by_util`
/// that stops after `n` matches, or a partial sort without it.
pub fn top(
    fabric: &FabricView,
    rates: &[LinkRates],
    q: &Query<'_>,
    n: usize,
    by_util: &[u32],
) -> Vec<u32> {
    if by_util.len() == fabric.links.len() && q.sort == SortKey::Util && !q.ascending {
        let keep = |id: u32| keeps(fabric, rates, q, id);
        return by_util
            .iter()
            .copied()
            .filter(|&id| keep(id))
            .take(n)
            .collect();
    }
    let mut v = rows(fabric, rates, q, n, &[]);
    v.truncate(n);
    v
}

/// Compare two values for a change marker: `Greater` if it rose noticeably.
pub fn change(prev: f32, now: f32, step: f32) -> Ordering {
    if now - prev >= step {
        Ordering::Greater
    } else if prev - now >= step {
        Ordering::Less
    } else {
        Ordering::Equal
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn setup() -> (FabricView, Vec<LinkRates>) {
        let f = topo::generators::leaf_spine(8, 4, 2, topo::Rate::gbps(400)).unwrap();
        let v = FabricView::from_topo(&f);
        let rates = (0..v.links.len())
            .map(|i| LinkRates {
                util: (i % 10) as f32 / 10.0,
                pfc_per_s: if i % 7 == 0 { 5.0 } else { 0.0 },
                ..Default::default()
            })
            .collect();
        (v, rates)
    }

    #[test]
    fn partial_sort_equals_full_sort() {
        let (v, r) = setup();
        let full = rows(&v, &r, &Query::default(), usize::MAX, &[]);
        for need in [1, 5, 17, full.len()] {
            let part = rows(&v, &r, &Query::default(), need, &[]);
            assert_eq!(part[..need], full[..need]);
            assert_eq!(part.len(), full.len());
        }
        assert!(
            full.windows(2)
                .all(|w| r[w[0] as usize].util >= r[w[1] as usize].util)
        );
    }

    #[test]
    fn whole_sorts_equal_the_comparison_order() {
        let (v, mut r) = setup();
        r[3].bps = -0.0;
        r[4].bps = 0.0;
        r[5].ecn = f32::NAN;
        for sort in SortKey::ALL {
            for ascending in [false, true] {
                let q = Query {
                    sort,
                    ascending,
                    ..Default::default()
                };
                let whole = rows(&v, &r, &q, usize::MAX, &[]);
                let part = rows(&v, &r, &q, whole.len() - 1, &[]);
                assert_eq!(
                    whole[..whole.len() - 1],
                    part[..whole.len() - 1],
                    "{sort:?} {ascending}"
                );
            }
        }
    }

    #[test]
    fn filter_and_sort() {
        let (v, r) = setup();
        let e: Expr = "util>=80 and pfc>0".parse().unwrap();
        let q = Query {
            filter: Some(&e),
            sort: SortKey::Link,
            ascending: true,
            ..Default::default()
        };
        let got = rows(&v, &r, &q, 100, &[]);
        let want: Vec<u32> = (0..v.links.len() as u32)
            .filter(|i| i % 10 >= 8 && i % 7 == 0)
            .collect();
        assert_eq!(got, want);
        let q = Query {
            faults_only: true,
            ..Default::default()
        };
        assert_eq!(rows(&v, &r, &q, 3, &[]).len(), v.links.len().div_ceil(7));
    }
}
