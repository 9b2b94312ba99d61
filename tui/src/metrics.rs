//! What the screen shows: per-link rates over the last interval and fabric totals.
//!
//! Sources turn their counters (snapshots, Prometheus rates) into a [`Sample`] on their own
//! thread; the UI thread only draws it. A link folds its two directions: utilisation,
//! Gb/s and paused share are the busier direction, drops and PFC pauses are summed.

use crate::fabric::FabricView;
use crate::heatmap::{self, Bin};

/// Rates of one link over the last interval.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct LinkRates {
    /// Utilisation of the busier direction, 0..=1.
    pub util: f32,
    /// Throughput of the busier direction, bits per second.
    pub bps: f32,
    /// Packets dropped per second, both directions and every cause.
    pub drops_per_s: f32,
    /// PFC pause frames per second, both directions and every priority.
    pub pfc_per_s: f32,
    /// Share of the interval a direction was paused (the larger), 0..=1.
    pub paused: f32,
    /// Share of packets ECN-marked, 0..=1.
    pub ecn: f32,
    /// ECN-marked packets per second.
    pub ecn_per_s: f32,
    /// Queue depth (bytes), the larger direction.
    pub queue_bytes: u32,
    /// Operationally down.
    pub down: bool,
    /// No fresh counters this interval (its exporter stopped answering): the values are
    /// the last known ones, drawn greyed.
    pub stale: bool,
}

impl LinkRates {
    /// Something is wrong on this link (down, dropping or pausing).
    pub fn faulty(&self) -> bool {
        self.down || self.drops_per_s > 0.0 || self.pfc_per_s > 0.0
    }
}

/// Per-tier utilisation summary (tier of a link = tier of its lower end).
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct TierUtil {
    /// Links in the tier.
    pub links: u32,
    /// 99th percentile utilisation, 0..=1.
    pub p99: f32,
    /// Maximum utilisation, 0..=1.
    pub max: f32,
}

/// Fabric-wide figures of a [`Sample`].
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Totals {
    /// Drops per second over the interval.
    pub drops_per_s: f64,
    /// Drops counted since the source started (cumulative).
    pub drops_total: u64,
    /// The link with the most drops in this interval, if any dropped.
    pub worst_drop_link: Option<u32>,
    /// PFC pause frames per second.
    pub pfc_per_s: f64,
    /// Mean paused share over links that carry traffic, 0..=1.
    pub paused_share: f64,
    /// ECN-marked packets per second.
    pub ecn_per_s: f64,
    /// Links operationally down.
    pub failed_links: u32,
    /// Utilisation per link tier: host–leaf, leaf–spine, spine–core.
    pub tiers: [TierUtil; 3],
    /// Bits per second leaving hosts (their NIC ports).
    pub host_bps: f64,
    /// Largest queue depth of any link, bytes.
    pub max_queue: u32,
}

impl Totals {
    /// No drops so far.
    pub fn lossless(&self) -> bool {
        self.drops_total == 0 && self.drops_per_s == 0.0
    }
}

/// A flow as the flows view shows it.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct FlowRow {
    /// Flow id.
    pub id: u64,
    /// Source node name.
    pub src: String,
    /// Destination node name.
    pub dst: String,
    /// Sending rate, bits per second (rate-based CC), if known.
    pub rate_bps: Option<f64>,
    /// Window in bytes (window-based CC), if known.
    pub window: Option<u64>,
    /// CNPs (or NACKs) received so far.
    pub cnps: u64,
    /// Last RTT sample, nanoseconds.
    pub rtt_ns: Option<u64>,
    /// Bytes delivered.
    pub bytes_done: u64,
    /// Finished.
    pub finished: bool,
}

/// How serious an event is (decides its colour and glyph).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Severity {
    /// Informational (flow finished, repair done).
    Info,
    /// Worth a look (reroute, PFC storm restored).
    Warn,
    /// Something broke (link down, PFC storm, deadlock, miswiring).
    Bad,
}

/// One line of the events view.
#[derive(Debug, Clone, PartialEq)]
pub struct EventRow {
    /// When, nanoseconds on the source's clock.
    pub at_ns: u64,
    /// Severity.
    pub severity: Severity,
    /// What happened, one line.
    pub text: String,
    /// A link this event is about, if any.
    pub link: Option<u32>,
}

/// Everything shown for one instant: rates of every link over the interval that ended at
/// `at_ns`, plus flows and totals.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Sample {
    /// End of the interval, nanoseconds on the source's clock.
    pub at_ns: u64,
    /// Length of the interval, nanoseconds.
    pub interval_ns: u64,
    /// One entry per link, in link id order.
    pub links: Vec<LinkRates>,
    /// Flows, if the source has them.
    pub flows: Vec<FlowRow>,
    /// Totals (computed by [`Sample::finish`]).
    pub totals: Totals,
    /// Link ids by utilisation, highest first, ties by id (computed by [`Sample::finish`]
    /// on the source's thread, so the UI never sorts a whole fabric for the default view).
    pub by_util: Vec<u32>,
    /// Per plane (as [`FabricView::planes`]), per pod of a 3-tier plane: the faults of the
    /// links inside the pod, which the heat map's pod rows show (computed by
    /// [`Sample::finish`], so drawing never walks every pod's links).
    pub pod_faults: Vec<Vec<Bin>>,
    /// Per-priority rates, when the source has per-priority counters (the simulator and
    /// the veth switch have 8 queues); `None`: it has none.
    pub priorities: Option<Priorities>,
}

/// Rates of one link per PFC priority.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct PrioRates {
    /// PFC PAUSE frames per second sent on the link (both directions), per priority.
    pub pfc_per_s: [f32; 8],
    /// Queue depth (bytes) of the larger direction, per priority.
    pub queue_bytes: [u32; 8],
}

/// The per-priority part of a [`Sample`]: which priorities the source measures, and the
/// rates of the links where any is non-zero (sparse: a fabric's idle links cost nothing).
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Priorities {
    /// Priorities with counters, ascending.
    pub measured: Vec<u8>,
    /// `(link id, rates)` of the links with a non-zero rate, by link id.
    pub links: Vec<(u32, PrioRates)>,
}

impl Sample {
    /// The totals of links `ids` only (a tenant's); `drops_total` is 0 (the source
    /// counts drops for the whole fabric).
    pub fn totals_over(&self, fabric: &FabricView, ids: &[u32]) -> Totals {
        totals(fabric, &self.links, ids.iter().copied())
    }

    /// Link `id`'s per-priority rates: `None` when the source has no per-priority
    /// counters (shown "n/a"), zeros when it has them and the link had none.
    pub fn link_priorities(&self, id: u32) -> Option<(Vec<u8>, PrioRates)> {
        let p = self.priorities.as_ref()?;
        let rates = p
            .links
            .binary_search_by_key(&id, |x| x.0)
            .map_or(PrioRates::default(), |i| p.links[i].1);
        Some((p.measured.clone(), rates))
    }

    /// A sample with every link idle and up.
    pub fn idle(fabric: &FabricView, at_ns: u64) -> Sample {
        Sample {
            at_ns,
            interval_ns: 1_000_000_000,
            links: vec![LinkRates::default(); fabric.links.len()],
            ..Sample::default()
        }
    }

    /// Compute [`Sample::totals`] from the links (keeps `drops_total`, the source's
    /// cumulative count).
    ///
    /// Utilisation is capped at 100 %: a counter delta over one short interval can run
    /// past line rate (a packet counted when its transmission starts, snapshots taken a
    /// moment off their timestamps), which no link can carry; the rate (Gb/s) keeps the
    /// measured value.
    pub fn finish(&mut self, fabric: &FabricView) {
        for l in &mut self.links {
            l.util = l.util.min(1.0);
        }
        let mut t = totals(fabric, &self.links, 0..self.links.len() as u32);
        t.drops_total = self.totals.drops_total;
        self.totals = t;
        // utilisation is ≥ 0, so its bits order like its value
        let mut keys: Vec<u64> = self
            .links
            .iter()
            .enumerate()
            .map(|(i, l)| (u64::from(u32::MAX - l.util.max(0.0).to_bits()) << 32) | i as u64)
            .collect();
        keys.sort_unstable();
        self.by_util = keys.into_iter().map(|k| k as u32).collect();
        self.pod_faults = (fabric.planes.iter())
            .map(|p| heatmap::pod_faults(&p.pods, &self.links))
            .collect();
    }
}

/// The totals of links `ids` (`drops_total` left 0: it is the source's count).
fn totals(fabric: &FabricView, links: &[LinkRates], ids: impl Iterator<Item = u32>) -> Totals {
    let mut t = Totals::default();
    let mut per_tier: [Vec<f32>; 3] = Default::default();
    let (mut paused_sum, mut busy) = (0.0f64, 0u32);
    let mut worst = 0.0f32;
    for i in ids {
        let Some(l) = links.get(i as usize) else {
            continue;
        };
        t.drops_per_s += l.drops_per_s as f64;
        if l.drops_per_s > worst {
            worst = l.drops_per_s;
            t.worst_drop_link = Some(i);
        }
        t.pfc_per_s += l.pfc_per_s as f64;
        t.failed_links += l.down as u32;
        let label = &fabric.links[i as usize];
        let tier = (label.tier as usize).min(2);
        per_tier[tier].push(l.util);
        if l.util > 0.0 || l.paused > 0.0 {
            paused_sum += l.paused as f64;
            busy += 1;
        }
        t.ecn_per_s += l.ecn_per_s as f64;
        t.max_queue = t.max_queue.max(l.queue_bytes);
        if tier == 0 {
            t.host_bps += l.bps as f64;
        }
    }
    t.paused_share = if busy > 0 {
        paused_sum / busy as f64
    } else {
        0.0
    };
    for (k, v) in per_tier.iter_mut().enumerate() {
        t.tiers[k] = tier_util(v);
    }
    t
}

fn tier_util(v: &mut [f32]) -> TierUtil {
    if v.is_empty() {
        return TierUtil::default();
    }
    let n = v.len();
    let k = ((n as f64 * 0.99).ceil() as usize).clamp(1, n) - 1;
    let (_, p99, _) = v.select_nth_unstable_by(k, |a, b| a.total_cmp(b));
    let p99 = *p99;
    let max = v.iter().copied().fold(0.0f32, f32::max);
    TierUtil {
        links: n as u32,
        p99,
        max,
    }
}

/// A ring of recent totals for sparklines and charts.
#[derive(Debug, Clone, Default)]
pub struct History {
    /// Oldest first.
    pub points: std::collections::VecDeque<Point>,
    /// Maximum points kept.
    pub cap: usize,
}

/// One point of [`History`].
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct Point {
    /// Nanoseconds on the source's clock.
    pub at_ns: u64,
    /// Max utilisation per tier.
    pub tier_max: [f32; 3],
    /// p99 utilisation per tier.
    pub tier_p99: [f32; 3],
    /// Bits/s leaving hosts.
    pub host_bps: f64,
    /// Largest queue depth (bytes) in the fabric.
    pub max_queue: u32,
    /// Drops per second.
    pub drops_per_s: f64,
    /// PFC pauses per second.
    pub pfc_per_s: f64,
}

impl History {
    /// An empty history keeping `cap` points.
    pub fn new(cap: usize) -> History {
        History {
            points: Default::default(),
            cap,
        }
    }

    /// Append the totals of a sample.
    pub fn push(&mut self, s: &Sample) {
        self.push_totals(s.at_ns, &s.totals);
    }

    /// Append totals `t` taken at `at_ns`.
    pub fn push_totals(&mut self, at_ns: u64, t: &Totals) {
        if self.points.len() == self.cap {
            self.points.pop_front();
        }
        self.points.push_back(Point {
            at_ns,
            tier_max: t.tiers.map(|x| x.max),
            tier_p99: t.tiers.map(|x| x.p99),
            host_bps: t.host_bps,
            max_queue: t.max_queue,
            drops_per_s: t.drops_per_s,
            pfc_per_s: t.pfc_per_s,
        });
    }
}
