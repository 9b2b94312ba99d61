//! Counter series scraped each at its own time, read as one snapshot at one instant (for
//! `fabric serve --observe`).
//!
//! Prometheus scrapes every exporter on its own schedule, so the counters of one read
//! were taken at different times, and they move only at those times: dividing their
//! change between two of the daemon's reads by the daemon's interval aliases (0 on one
//! read, twice the truth on the next, at a 500 ms `--interval` against a 1 s scrape).
//! Here every series keeps its last two scrapes with their own timestamps, and a snapshot
//! is made at one instant `T`: the oldest of the series' latest scrapes, the last time
//! every series has been read up to. Each series' value at `T` is linear between the two
//! scrapes around it (exact for a steady rate; a counter that went back in between keeps
//! its old value until the scrape that shows the restart; a series first seen after `T`
//! joins the next snapshot). A read that brings `T` no
//! further — no series' oldest latest scrape moved — makes no snapshot: readers keep the
//! last one, their rates hold, and nothing divides by a zero interval.
//!
//! With every exporter scraped at one interval, the scrapes around `T` are the two a
//! series has (all latest scrapes lie within one scrape interval of each other). An
//! exporter scraped faster than the slowest may have been scraped twice since `T`: its
//! value is then its older scrape's, later than `T` (off by up to one of its scrapes'
//! worth, made up at the next snapshot). The slowest exporter sets the snapshots' pace.

use std::collections::HashMap;

/// A series: the port index and which counter of it.
pub type Key = (u32, u8);

/// One scrape: its time (ms since the Unix epoch, Prometheus's resolution) and value.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Scrape {
    /// Scrape time, ms.
    pub t_ms: i64,
    /// The counter's value.
    pub v: f64,
}

/// What a read gives.
#[derive(Debug, Clone, PartialEq)]
pub enum Read {
    /// A new snapshot at `t_ms`: each series of the read at that instant.
    At {
        /// The snapshot's instant, ms.
        t_ms: i64,
        /// Each series' value at `t_ms`.
        values: Vec<(Key, f64)>,
    },
    /// No series has a scrape past the last snapshot's instant.
    NoNewData,
    /// No counter series has ever been read.
    Empty,
}

/// The last two scrapes of every series seen in the last read.
#[derive(Debug, Default)]
pub struct Scrapes {
    series: HashMap<Key, (Option<Scrape>, Scrape)>,
    /// The last snapshot's instant, ms.
    made_ms: Option<i64>,
}

impl Scrapes {
    /// Takes one read (every series' latest scrape); a series missing from it (its
    /// exporter stopped answering) is forgotten until it comes back.
    pub fn read(&mut self, latest: impl IntoIterator<Item = (Key, Scrape)>) -> Read {
        let mut seen: HashMap<Key, (Option<Scrape>, Scrape)> = HashMap::new();
        for (k, s) in latest {
            let kept = match self.series.get(&k) {
                None => (None, s),
                Some(&(_, last)) if s.t_ms > last.t_ms => (Some(last), s),
                Some(&kept) => kept,
            };
            seen.insert(k, kept);
        }
        self.series = seen;
        let Some(t_ms) = self.series.values().map(|(_, last)| last.t_ms).min() else {
            // Every exporter gone quiet is no news, once counters were read.
            return match self.made_ms {
                Some(_) => Read::NoNewData,
                None => Read::Empty,
            };
        };
        if self.made_ms.is_some_and(|m| t_ms <= m) {
            return Read::NoNewData;
        }
        self.made_ms = Some(t_ms);
        let mut values: Vec<(Key, f64)> = self
            .series
            .iter()
            .filter_map(|(&k, &(prev, last))| Some((k, value_at(prev, last, t_ms)?)))
            .collect();
        values.sort_unstable_by_key(|&(k, _)| k);
        Read::At { t_ms, values }
    }
}

/// A series' value at `t_ms` (at most its last scrape's time) from its last two scrapes;
/// `None` for a series first seen after `t_ms` (nothing of it is known at that instant:
/// it joins the next snapshot).
fn value_at(prev: Option<Scrape>, last: Scrape, t_ms: i64) -> Option<f64> {
    if t_ms >= last.t_ms {
        return Some(last.v);
    }
    let prev = prev?;
    if t_ms <= prev.t_ms || last.v < prev.v {
        // Scraped twice since `t_ms` (a faster exporter), or restarted in between.
        return Some(prev.v);
    }
    let share = (t_ms - prev.t_ms) as f64 / (last.t_ms - prev.t_ms) as f64;
    Some(prev.v + (last.v - prev.v) * share)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(t_ms: i64, v: f64) -> Scrape {
        Scrape { t_ms, v }
    }

    /// Two exporters scraped every second, 400 ms apart, each counting 1000 per second;
    /// the daemon reads every 500 ms. Every snapshot's rate is 1000/s: never 0, never 2000.
    #[test]
    fn staggered_scrapes_read_twice_a_scrape_give_the_steady_rate() {
        let mut s = Scrapes::default();
        let scrape = |phase: i64, now: i64| {
            let t = (now - phase).div_euclid(1000) * 1000 + phase;
            at(t, t as f64)
        };
        let mut made = Vec::new();
        for now in (5_000..15_000).step_by(500) {
            let read = s.read([((0, 0), scrape(100, now)), ((1, 0), scrape(500, now))]);
            match read {
                Read::At { t_ms, values } => made.push((t_ms, values)),
                Read::NoNewData => {}
                Read::Empty => panic!("two series were read"),
            }
        }
        // One per second: each time the later exporter is scraped.
        assert!(made.len() >= 9, "one snapshot per scrape: {}", made.len());
        for w in made.windows(2) {
            let dt = (w[1].0 - w[0].0) as f64 / 1e3;
            for (a, b) in w[0].1.iter().zip(&w[1].1) {
                if a.0 != b.0 {
                    continue; // the first snapshot has the earlier exporter only
                }
                let rate = (b.1 - a.1) / dt;
                assert!((rate - 1000.0).abs() < 1e-6, "{rate} at {}", w[1].0);
            }
        }
    }

    #[test]
    fn a_read_without_a_new_scrape_makes_no_snapshot() {
        let mut s = Scrapes::default();
        assert_eq!(s.read([]), Read::Empty);
        let first = s.read([((0, 0), at(1000, 5.0))]);
        assert_eq!(
            first,
            Read::At {
                t_ms: 1000,
                values: vec![((0, 0), 5.0)]
            }
        );
        assert_eq!(s.read([((0, 0), at(1000, 5.0))]), Read::NoNewData);
        assert!(matches!(
            s.read([((0, 0), at(2000, 9.0))]),
            Read::At { t_ms: 2000, .. }
        ));
        assert_eq!(s.read([]), Read::NoNewData, "exporters gone quiet");
    }

    #[test]
    fn values_between_scrapes_a_restart_and_a_faster_exporter() {
        let (p, l) = (at(1000, 100.0), at(2000, 300.0));
        assert_eq!(value_at(Some(p), l, 1500), Some(200.0));
        assert_eq!(value_at(Some(p), l, 2000), Some(300.0));
        assert_eq!(value_at(None, l, 2000), Some(300.0));
        assert_eq!(value_at(None, l, 1500), None, "first seen later");
        // Scraped twice since the instant: the older scrape.
        assert_eq!(value_at(Some(p), l, 900), Some(100.0));
        // Restarted in between: the old count until the scrape that shows it.
        assert_eq!(value_at(Some(p), at(2000, 7.0), 1500), Some(100.0));
    }
}
