//! Cumulative counters counted from the daemon's first read, one rule for every column
//! of a source whose counters started before the daemon (node_exporter's run from each
//! switch's boot).
//!
//! Each series counts what it gained since the daemon first read it: 0 at the first read,
//! then the sum of its increases. A value below the previous one means the counter
//! restarted from zero (an exporter or switch restarted): its new value is what it gained
//! since, so the count goes on from where it was and never goes back. A series missing
//! from a read keeps its count. So a fabric lossless since the daemon started reads 0
//! drops whatever its switches dropped at boot, and bytes, packets and errors share the
//! same origin.

use std::collections::HashMap;
use std::hash::Hash;

/// One series' raw value at the last read and its count since the first.
#[derive(Debug, Clone, Copy)]
struct Counted {
    raw: u64,
    count: u64,
}

/// The counts of every series seen, by key.
#[derive(Debug)]
pub struct Baseline<K> {
    series: HashMap<K, Counted>,
}

impl<K> Default for Baseline<K> {
    fn default() -> Self {
        Baseline {
            series: HashMap::new(),
        }
    }
}

impl<K: Eq + Hash + Copy> Baseline<K> {
    /// Takes a series' raw value; returns its count since the daemon's first read.
    pub fn count(&mut self, key: K, raw: u64) -> u64 {
        let c = self.series.entry(key).or_insert(Counted { raw, count: 0 });
        let gained = if raw >= c.raw { raw - c.raw } else { raw };
        c.count = c.count.saturating_add(gained);
        c.raw = raw;
        c.count
    }

    /// Every series ever seen with its count (the missing ones keep theirs).
    pub fn counts(&self) -> impl Iterator<Item = (K, u64)> + '_ {
        self.series.iter().map(|(&k, c)| (k, c.count))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// node_exporter's counters run from each switch's boot: 22 drops before lldpd started
    /// made a healthy observed fabric read "LOSS DETECTED (22 total)", and bytes and
    /// packets carried their lifetime values beside drops counted from the daemon's start.
    #[test]
    fn counts_start_at_the_first_read_and_go_on_across_a_restart() {
        let mut b = Baseline::default();
        assert_eq!(
            b.count("drops", 22),
            0,
            "the lifetime count is not a loss seen"
        );
        assert_eq!(b.count("bytes", 1 << 40), 0, "bytes share the origin");
        assert_eq!(b.count("drops", 22), 0);
        assert_eq!(b.count("drops", 27), 5);
        assert_eq!(b.count("bytes", (1 << 40) + 1500), 1500);
        // The exporter restarted: its counter starts again from 0 and reads 3.
        assert_eq!(b.count("drops", 3), 8, "the count goes on, never back");
        assert_eq!(b.count("drops", 4), 9);
        let mut all: Vec<_> = b.counts().collect();
        all.sort_unstable();
        assert_eq!(all, vec![("bytes", 1500), ("drops", 9)]);
    }
}
