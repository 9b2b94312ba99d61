//! The egress each switch took for a flow's packets under ECMP, kept per flow so a
//! later packet skips the routing lookup and the hash.
//!
//! With ECMP a switch's choice is a function of the switch, the destination and the
//! flow's hash ([`super::Sim::pick`]): every packet of a flow going one way takes the
//! same path until the routes change. A switch arrival looks its egress up by (flow,
//! direction, hop number) and checks that the entry is for the same switch; a miss
//! routes as before and fills the entry. The cache is emptied whenever the routes are
//! recomputed, so a hit is exactly what routing would answer: the events and results
//! are unchanged (`tests/digest_golden.rs`). On the 1024-host permutation the lookup it
//! replaces (the router's tables and the flow's hash, several lines scattered over
//! hundreds of kilobytes) was the largest single cache miss of a switch hop; a flow's
//! entries for one direction fill one cache line.

/// Switch hops kept per flow and direction (a 3-tier fat-tree path has 5); later hops
/// route as usual.
const HOPS: usize = 8;

/// One switch hop: the switch and the global egress port it chose.
#[derive(Clone, Copy, Debug)]
struct Hop {
    node: u32,
    egress: u32,
}

const EMPTY: Hop = Hop {
    node: u32::MAX,
    egress: 0,
};

/// A flow's hops in one direction: one cache line.
#[derive(Clone, Copy, Debug)]
#[repr(C, align(64))]
pub(super) struct Line([Hop; HOPS]);

const _: () = assert!(std::mem::size_of::<Line>() == 64);

/// Per (flow, direction): the egress of each switch hop (empty when not ECMP).
#[derive(Debug, Default)]
pub(super) struct PathCache {
    lines: Vec<Line>,
}

impl PathCache {
    /// A cache for `flows` flows, or an empty one that never hits (`enabled` false:
    /// schemes whose choice depends on more than the flow).
    pub(super) fn new(flows: usize, enabled: bool) -> Self {
        PathCache {
            lines: if enabled {
                vec![Line([EMPTY; HOPS]); flows * 2]
            } else {
                Vec::new()
            },
        }
    }

    /// Data toward the flow's destination (`back` false) or feedback toward its
    /// source (`back` true).
    #[inline]
    fn index(flow: u32, back: bool) -> usize {
        flow as usize * 2 + back as usize
    }

    /// The line of (flow, direction), for prefetching.
    #[inline]
    pub(super) fn line(&self, flow: u32, back: bool) -> Option<&Line> {
        self.lines.get(Self::index(flow, back))
    }

    /// The egress switch `node` chose at hop `hop` of (flow, direction), if known.
    #[inline]
    pub(super) fn get(&self, flow: u32, back: bool, hop: u8, node: u32) -> Option<u32> {
        let h = self
            .lines
            .get(Self::index(flow, back))?
            .0
            .get(hop as usize)?;
        (h.node == node).then_some(h.egress)
    }

    /// The egress recorded at hop `hop` of (flow, direction), whichever switch wrote
    /// it ([`super::NIL`] if none): a prefetch hint, not a route.
    #[inline]
    pub(super) fn hint(&self, flow: u32, back: bool, hop: u8) -> u32 {
        self.lines
            .get(Self::index(flow, back))
            .and_then(|l| l.0.get(hop as usize))
            .filter(|h| h.node != EMPTY.node)
            .map_or(super::NIL, |h| h.egress)
    }

    /// Remember that switch `node` chose `egress` at hop `hop` of (flow, direction).
    #[inline]
    pub(super) fn set(&mut self, flow: u32, back: bool, hop: u8, node: u32, egress: u32) {
        if let Some(line) = self.lines.get_mut(Self::index(flow, back))
            && let Some(h) = line.0.get_mut(hop as usize)
        {
            *h = Hop { node, egress };
        }
    }

    /// Forget every path (the routes changed).
    pub(super) fn clear(&mut self) {
        self.lines.fill(Line([EMPTY; HOPS]));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hits_only_the_same_switch_at_the_same_hop() {
        let mut c = PathCache::new(3, true);
        assert_eq!(c.get(1, false, 0, 7), None);
        c.set(1, false, 0, 7, 42);
        assert_eq!(c.get(1, false, 0, 7), Some(42));
        assert_eq!(c.get(1, false, 0, 8), None, "another switch");
        assert_eq!(c.get(1, true, 0, 7), None, "the other direction");
        assert_eq!(c.get(2, false, 0, 7), None, "another flow");
        assert_eq!(c.get(1, false, 1, 7), None, "another hop");
        c.set(1, false, HOPS as u8, 7, 1);
        assert_eq!(c.get(1, false, HOPS as u8, 7), None, "beyond the kept hops");
        c.clear();
        assert_eq!(c.get(1, false, 0, 7), None);
    }

    /// The hint is whatever egress the hop holds, whichever switch wrote it, and
    /// `NIL` where nothing is known (another hop, beyond the kept hops, a disabled
    /// or cleared cache).
    #[test]
    fn the_hint_is_the_hops_egress_or_nil() {
        let mut c = PathCache::new(3, true);
        assert_eq!(c.hint(1, false, 0), super::super::NIL);
        c.set(1, false, 2, 7, 42);
        assert_eq!(c.hint(1, false, 2), 42);
        assert_eq!(c.hint(1, true, 2), super::super::NIL, "the other direction");
        assert_eq!(c.hint(1, false, HOPS as u8), super::super::NIL);
        c.clear();
        assert_eq!(c.hint(1, false, 2), super::super::NIL);
        assert_eq!(
            PathCache::new(3, false).hint(0, false, 0),
            super::super::NIL
        );
    }

    #[test]
    fn a_disabled_cache_never_hits() {
        let mut c = PathCache::new(3, false);
        c.set(0, false, 0, 1, 2);
        assert_eq!(c.get(0, false, 0, 1), None);
        assert_eq!(c.get(99, true, 200, 1), None);
    }
}
