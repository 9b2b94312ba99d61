//! Event queues keyed by integer picoseconds.
//!
//! Events are 16 bytes: a time, a sequence number (FIFO order among events at the
//! same picosecond, so runs are reproducible and intuitive) and 32 bits of payload
//! (4-bit kind + 28-bit id). Three implementations with one interface, which pop the
//! same events in the same order:
//!
//! - [`HeapQueue`]: a binary heap (`std::collections::BinaryHeap`).
//! - [`CalendarQueue`]: a bucketed calendar (Brown, "Calendar queues", CACM 1988)
//!   with a fixed bucket width and a sorted overflow heap for far-future events.
//!   Packet simulations schedule almost everything within a few link delays, so
//!   most pushes land in a near bucket.
//! - [`LaneQueue`]: FIFO lanes for the few delays most events are pushed at (a
//!   frame's serialisation, plus the link), over a calendar queue for the rest.
//!
//! `sim-bench --queue lanes|calendar|adaptive|heap` measures which is faster on a
//! workload; the simulator uses the lanes by default (docs/sim.md has the figures).

use std::cmp::Ordering;
use std::collections::BinaryHeap;

mod lanes;
pub use lanes::{LANES, LaneQueue};

/// One scheduled event.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Ev {
    /// Time in picoseconds.
    pub t: u64,
    /// Insertion order (ties at equal `t` pop in FIFO order).
    pub seq: u32,
    /// Kind (high 4 bits) and id (low 28 bits).
    pub data: u32,
}

impl Ev {
    /// Kind nibble.
    #[inline]
    pub fn kind(&self) -> u32 {
        self.data >> 28
    }
    /// 28-bit id.
    #[inline]
    pub fn id(&self) -> u32 {
        self.data & 0x0FFF_FFFF
    }
    #[inline]
    fn key(&self) -> (u64, u32) {
        (self.t, self.seq)
    }
}

/// An event as the calendar queue stores it: `!(t << 64 | seq << 32 | data)`. One
/// 128-bit integer that orders as (time, sequence) reversed, so a bucket sorts with the
/// standard library's integer sort and pops its earliest event from the back, and the
/// overflow heap (a max-heap) yields the earliest first. Comparing a (time, sequence)
/// pair through a key closure took more instructions; an insertion sort (the buckets
/// come partly in order) took as many as this sort and was dropped.
type Packed = u128;

#[inline]
fn pack(e: Ev) -> Packed {
    !((e.t as u128) << 64 | (e.seq as u128) << 32 | e.data as u128)
}

#[inline]
fn unpack(p: Packed) -> Ev {
    let k = !p;
    Ev {
        t: (k >> 64) as u64,
        seq: (k >> 32) as u32,
        data: k as u32,
    }
}

impl Ord for Ev {
    fn cmp(&self, o: &Self) -> Ordering {
        // Reversed: BinaryHeap is a max-heap, we want the earliest first.
        o.key().cmp(&self.key())
    }
}
impl PartialOrd for Ev {
    fn partial_cmp(&self, o: &Self) -> Option<Ordering> {
        Some(self.cmp(o))
    }
}

/// Largest id an event can carry.
pub const MAX_ID: u32 = 0x0FFF_FFFF;

/// The interface both queues implement.
pub trait EventQueue {
    /// Schedule.
    fn push(&mut self, t: u64, kind: u32, id: u32);
    /// The earliest event.
    fn pop(&mut self) -> Option<Ev>;
    /// Put back the event [`Self::pop`] just returned, in the same place (its time and
    /// sequence number are kept, so the order of events does not change).
    fn unpop(&mut self, ev: Ev);
    /// Probably the next event [`Self::pop`] returns, if that is cheap to tell (a hint
    /// for prefetching its state: an event pushed meanwhile may come first).
    fn peek_hint(&self) -> Option<Ev> {
        None
    }
    /// Probably the event after [`Self::peek_hint`]'s (a hint, as that one).
    fn peek_hint2(&self) -> Option<Ev> {
        None
    }
    /// Told once, before the first push, how far ahead of the clock most events land
    /// (ps): a queue may size itself to it. The order of pops never depends on it.
    fn fit_horizon(&mut self, _ps: u64) {}
    /// Number of pending events.
    fn len(&self) -> usize;
    /// No pending events.
    fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// Binary-heap event queue.
#[derive(Debug, Default)]
pub struct HeapQueue {
    heap: BinaryHeap<Ev>,
    seq: u32,
}

impl EventQueue for HeapQueue {
    #[inline]
    fn push(&mut self, t: u64, kind: u32, id: u32) {
        debug_assert!(id <= MAX_ID && kind < 16);
        self.seq = self.seq.wrapping_add(1);
        self.heap.push(Ev {
            t,
            seq: self.seq,
            data: kind << 28 | id,
        });
    }
    #[inline]
    fn pop(&mut self) -> Option<Ev> {
        self.heap.pop()
    }
    fn unpop(&mut self, ev: Ev) {
        self.heap.push(ev);
    }
    fn len(&self) -> usize {
        self.heap.len()
    }
}

/// Calendar queue: `nb` buckets of `width` ps each cover one "year"; events beyond
/// the current year wait in an overflow heap and are pulled in as time advances.
/// Each bucket is a small vector kept unsorted; a bucket is sorted once when the
/// clock enters it (events pushed into the current bucket are inserted in order).
///
/// The bucket width that suits a run depends on how many events are pending: ~1,500
/// for 128 hosts, ~100,000 for 8,192 (every frame in flight and every busy port has
/// one), all within a microsecond or so. A fixed 1,024 ps width leaves 100+ events per
/// bucket at 8,192 hosts. An [`CalendarQueue::adaptive`] queue watches the buckets it
/// sorts and halves the width (doubling the buckets, so a year keeps its span) while
/// they hold more than [`Self::NARROW_ABOVE`] events on average, undoes a halving that
/// did not thin them, and widens it again when nearly every bucket it crosses is empty
/// (Brown's resize, driven by occupancy rather than size). On the permutation
/// benchmark it is not faster: its events come in bursts at equal times, which no
/// width splits, and its extra buckets keep ~25 % more memory; so the simulator's
/// default stays the fixed width (`sim-bench --queue adaptive` compares them).
/// The order of events never depends on the width: pops are by (time, sequence).
#[derive(Debug)]
pub struct CalendarQueue {
    width_shift: u32,
    buckets: Vec<Vec<Packed>>,
    /// Index of the bucket holding `now`.
    cur: usize,
    /// Start time of the current bucket.
    cur_start: u64,
    /// End of the year (`cur_start` + the buckets' span), kept with `cur_start`.
    year_end: u64,
    /// Whether `buckets[cur]` is sorted (earliest event at the back).
    cur_sorted: bool,
    far: BinaryHeap<Packed>,
    len: usize,
    seq: u32,
    /// Adaptive width: buckets sorted per decision (0: fixed width).
    window: u32,
    /// Since the last decision: buckets sorted, events in them, buckets crossed.
    sorted: u32,
    sorted_events: u64,
    crossed: u64,
    /// Width changes so far.
    resizes: u32,
    /// After narrowing: the width before and the mean events per sorted bucket then
    /// (×16), to undo a narrowing that did not thin the buckets.
    probe: Option<(u32, u64)>,
    /// Narrowest width worth trying (raised when a narrowing did not help).
    floor_shift: u32,
}

impl CalendarQueue {
    /// Adaptive queues narrow their buckets while the buckets they sort hold more than
    /// this many events on average.
    pub const NARROW_ABOVE: u64 = 6;
    /// Narrowest bucket of an adaptive queue: 2^6 ps.
    const MIN_SHIFT: u32 = 6;
    /// Widest bucket of an adaptive queue: 2^20 ps.
    const MAX_SHIFT: u32 = 20;
    /// Most buckets an adaptive queue uses (a year is kept down to 2^16 buckets).
    const MAX_BUCKETS: usize = 1 << 16;
    /// Fewest buckets [`EventQueue::fit_horizon`] leaves.
    const MIN_FIT_BUCKETS: usize = 256;

    /// Fixed width: `2^width_shift` ps per bucket, `buckets` buckets (rounded to a
    /// power of two).
    pub fn new(width_shift: u32, buckets: usize) -> Self {
        let nb = buckets.next_power_of_two().max(2);
        CalendarQueue {
            width_shift,
            buckets: (0..nb).map(|_| Vec::new()).collect(),
            cur: 0,
            cur_start: 0,
            year_end: (nb as u64) << width_shift,
            cur_sorted: true,
            far: BinaryHeap::new(),
            len: 0,
            seq: 0,
            window: 0,
            sorted: 0,
            sorted_events: 0,
            crossed: 0,
            resizes: 0,
            probe: None,
            floor_shift: Self::MIN_SHIFT,
        }
    }

    /// Adaptive width, starting from `2^width_shift` ps per bucket and `buckets`
    /// buckets: the year (`buckets << width_shift` ps) keeps its span as the width
    /// changes, up to [`Self::MAX_BUCKETS`] buckets.
    pub fn adaptive(width_shift: u32, buckets: usize) -> Self {
        Self::adaptive_every(width_shift, buckets, 1024)
    }

    /// [`Self::adaptive`], deciding every `window` sorted buckets (tests use small ones).
    pub fn adaptive_every(width_shift: u32, buckets: usize, window: u32) -> Self {
        CalendarQueue {
            window: window.max(1),
            ..Self::new(width_shift, buckets)
        }
    }

    /// The simulator's default: 1,024 ps × 4,096 buckets (a 4.2 µs year), fixed width;
    /// the engine then fits the year to its links ([`EventQueue::fit_horizon`]).
    pub fn for_sim() -> Self {
        Self::new(10, 4096)
    }

    /// Current bucket width, ps.
    pub fn width(&self) -> u64 {
        1 << self.width_shift
    }

    /// How many times the width changed.
    pub fn resizes(&self) -> u32 {
        self.resizes
    }

    /// Move the year to start at `start` (the current bucket's start).
    #[inline]
    fn set_cur_start(&mut self, start: u64) {
        self.cur_start = start;
        self.year_end = start + ((self.buckets.len() as u64) << self.width_shift);
    }

    #[inline]
    fn place(&mut self, t: u64, e: Packed) {
        if t >= self.year_end {
            self.far.push(e);
            return;
        }
        let t = t.max(self.cur_start);
        let off = ((t - self.cur_start) >> self.width_shift) as usize;
        let idx = (self.cur + off) & (self.buckets.len() - 1);
        let b = &mut self.buckets[idx];
        if off == 0 && self.cur_sorted {
            // Keep the order: e goes after every later event (the earliest is last).
            let at = b.partition_point(|&x| x < e);
            b.insert(at, e);
        } else {
            b.push(e);
        }
    }

    /// Pull the far events that now fall inside the year.
    fn pull_far(&mut self) {
        let end = self.year_end;
        while let Some(&e) = self.far.peek() {
            let t = unpack(e).t;
            if t >= end {
                break;
            }
            self.far.pop();
            self.place(t, e);
        }
    }

    fn advance(&mut self) {
        self.cur = (self.cur + 1) & (self.buckets.len() - 1);
        self.set_cur_start(self.cur_start + (1 << self.width_shift));
        self.cur_sorted = false;
        self.crossed += 1;
        self.pull_far();
    }

    /// An adaptive queue's decision, when the current bucket (about to be sorted) holds
    /// `n` events: whether it changed the width (then the buckets were rebuilt).
    fn adapt(&mut self, n: usize) -> bool {
        self.sorted += 1;
        self.sorted_events += n as u64;
        if self.sorted < self.window {
            return false;
        }
        let (w, ev, crossed) = (self.sorted as u64, self.sorted_events, self.crossed);
        self.sorted = 0;
        self.sorted_events = 0;
        self.crossed = 0;
        let mean16 = ev * 16 / w;
        if let Some((before, was16)) = self.probe.take()
            && mean16 * 4 > was16 * 3
        {
            // Halving the width did not take a quarter off the events per bucket: they
            // come in bursts at (nearly) equal times, which narrower buckets do not
            // split; go back and stay at least this wide.
            self.floor_shift = before;
            self.rebuild(before);
            return true;
        }
        let shift = if ev > Self::NARROW_ABOVE * w && self.width_shift > self.floor_shift {
            self.probe = Some((self.width_shift, mean16));
            self.width_shift - 1
        } else if ev < 2 * w && crossed > 64 * w && self.width_shift < Self::MAX_SHIFT {
            // Under 2 events per bucket and 63 empty buckets crossed for each: wider.
            self.width_shift + 1
        } else {
            return false;
        };
        self.rebuild(shift);
        true
    }

    /// Re-place every pending event into buckets of `2^shift` ps, keeping the year's span.
    fn rebuild(&mut self, shift: u32) {
        let span = (self.buckets.len() as u64) << self.width_shift;
        let nb = ((span >> shift) as usize)
            .next_power_of_two()
            .clamp(2, Self::MAX_BUCKETS.max(self.buckets.len()));
        let mut pending: Vec<Packed> = std::mem::take(&mut self.far).into_vec();
        for b in &mut self.buckets {
            pending.append(b);
        }
        if nb != self.buckets.len() {
            self.buckets = (0..nb).map(|_| Vec::new()).collect();
        }
        self.width_shift = shift;
        // Events pending are all at or after the current bucket's start; aligning it
        // down to the new width keeps them ahead of it.
        self.set_cur_start(self.cur_start & !((1u64 << shift) - 1));
        self.cur = 0;
        self.cur_sorted = false;
        for e in pending {
            self.place(unpack(e).t, e);
        }
        self.resizes += 1;
    }
}

impl CalendarQueue {
    /// Brings the earliest event to the back of the current bucket, sorting the bucket
    /// if the clock just entered it; false if the queue is empty.
    fn settle(&mut self) -> bool {
        if self.len == 0 {
            return false;
        }
        loop {
            if !self.buckets[self.cur].is_empty() {
                if !self.cur_sorted {
                    if self.window > 0 && self.adapt(self.buckets[self.cur].len()) {
                        continue;
                    }
                    self.buckets[self.cur].sort_unstable();
                    self.cur_sorted = true;
                    // The next bucket is sorted after this one's events: ask for it now
                    // (a hint; its lines were last touched when events were pushed).
                    let next = &self.buckets[(self.cur + 1) & (self.buckets.len() - 1)];
                    crate::prefetch::prefetch_slice(next, 4);
                }
                return true;
            }
            // Empty year ahead? Jump straight to the next far event's year.
            if self.len == self.far.len() {
                let t = unpack(*self.far.peek().expect("len > 0")).t;
                let w = 1u64 << self.width_shift;
                self.set_cur_start(t / w * w);
                self.cur_sorted = false;
                self.pull_far();
                continue;
            }
            self.advance();
        }
    }

    /// The earliest event, left in the queue.
    pub fn peek(&mut self) -> Option<Ev> {
        if !self.settle() {
            return None;
        }
        self.buckets[self.cur].last().map(|&e| unpack(e))
    }
}

impl EventQueue for CalendarQueue {
    #[inline]
    fn push(&mut self, t: u64, kind: u32, id: u32) {
        debug_assert!(id <= MAX_ID && kind < 16);
        self.seq = self.seq.wrapping_add(1);
        self.len += 1;
        let e = pack(Ev {
            t,
            seq: self.seq,
            data: kind << 28 | id,
        });
        self.place(t, e);
    }

    fn pop(&mut self) -> Option<Ev> {
        if !self.settle() {
            return None;
        }
        self.len -= 1;
        self.buckets[self.cur].pop().map(unpack)
    }
    fn unpop(&mut self, ev: Ev) {
        self.len += 1;
        self.place(ev.t, pack(ev));
    }

    /// A year just longer than the horizon: a frame's arrival at the next hop and the
    /// end of its serialisation still land inside it, and the buckets the clock sweeps
    /// are reused sooner. Each bucket keeps the capacity of its largest burst, so a
    /// year four times too long spreads the pending events over four times the memory:
    /// on the 1024-host permutation (100 Gb/s, 500 ns links: a 0.83 µs horizon) 1,024
    /// buckets instead of 4,096 took ~15 % off the event loop's CPU (docs/sim.md).
    /// The year only ever shrinks: on slow links (1 Gb/s: a 33 µs horizon) a year grown
    /// to 32,768 buckets made the clock sweep empty buckets between sparse events, and a
    /// run ten times slower; those horizons keep the queue's own year and the far heap.
    fn fit_horizon(&mut self, ps: u64) {
        if self.len > 0 {
            return;
        }
        let nb = (((ps >> self.width_shift) as usize).saturating_add(2))
            .next_power_of_two()
            .max(Self::MIN_FIT_BUCKETS)
            .min(self.buckets.len());
        if nb != self.buckets.len() {
            self.buckets = (0..nb).map(|_| Vec::new()).collect();
            self.cur = 0;
            self.cur_sorted = true;
            self.set_cur_start(self.cur_start);
        }
    }

    #[inline]
    fn peek_hint(&self) -> Option<Ev> {
        if self.cur_sorted {
            self.buckets[self.cur].last().map(|&e| unpack(e))
        } else {
            None
        }
    }

    #[inline]
    fn peek_hint2(&self) -> Option<Ev> {
        let b = &self.buckets[self.cur];
        if self.cur_sorted && b.len() >= 2 {
            Some(unpack(b[b.len() - 2]))
        } else {
            None
        }
    }

    fn len(&self) -> usize {
        self.len
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use scenario::rng::Rng;

    fn drain(q: &mut dyn EventQueue) -> Vec<(u64, u32)> {
        let mut v = Vec::new();
        while let Some(e) = q.pop() {
            v.push((e.t, e.id()));
        }
        v
    }

    #[test]
    fn fifo_among_equal_times() {
        let mut q = CalendarQueue::new(10, 64);
        for i in 0..5 {
            q.push(100, 1, i);
        }
        assert_eq!(drain(&mut q), (0..5).map(|i| (100, i)).collect::<Vec<_>>());
        let mut h = HeapQueue::default();
        for i in 0..5 {
            h.push(100, 1, i);
        }
        assert_eq!(drain(&mut h), (0..5).map(|i| (100, i)).collect::<Vec<_>>());
    }

    /// Fitting the year to a horizon keeps it just longer than the horizon (within
    /// bounds, never longer than it was), and only before the first push.
    #[test]
    fn fit_horizon_sizes_the_year() {
        let mut q = CalendarQueue::for_sim();
        q.fit_horizon(833_000);
        assert_eq!(q.buckets.len(), 1024);
        assert!(q.year_end > 833_000);
        q.fit_horizon(0);
        assert_eq!(q.buckets.len(), CalendarQueue::MIN_FIT_BUCKETS);
        // Never longer than the year the queue had: a slow link's horizon keeps it.
        let mut q = CalendarQueue::for_sim();
        q.fit_horizon(33_000_000);
        assert_eq!(q.buckets.len(), 4096);
        q.fit_horizon(u64::MAX);
        assert_eq!(q.buckets.len(), 4096);
        q.push(5, 1, 1);
        q.fit_horizon(833_000);
        assert_eq!(q.buckets.len(), 4096);
        assert_eq!(q.pop().map(|e| e.t), Some(5));
    }

    /// A queue whose buckets are far too wide narrows them (and the pops stay in order).
    #[test]
    fn adaptive_narrows_crowded_buckets() {
        let mut q = CalendarQueue::adaptive_every(10, 64, 8);
        let mut h = HeapQueue::default();
        let mut r = Rng::new(3);
        // 2,000 events within 100 ns: ~20 per 1,024 ps bucket.
        for i in 0..2000 {
            let t = r.below(100_000);
            q.push(t, 1, i);
            h.push(t, 1, i);
        }
        assert_eq!(drain(&mut q), drain(&mut h));
        assert!(q.width() < 1024, "width {}", q.width());
        assert!(q.resizes() > 0);
    }

    proptest! {
        /// Both queues pop the same sequence for any interleaving of pushes and pops
        /// (pushes never go into the past, as in the simulator); so does an adaptive
        /// calendar queue deciding every 2 buckets (it resizes often).
        #[test]
        fn calendar_matches_heap(seed in any::<u64>(), ops in 1usize..3000, shift in 4u32..16) {
            let mut r = Rng::new(seed);
            let mut h = HeapQueue::default();
            let mut c = CalendarQueue::new(shift, 32);
            c.fit_horizon(r.below(1 << 24));
            let mut a = CalendarQueue::adaptive_every(shift, 32, 2);
            let mut now = 0u64;
            for i in 0..ops {
                if r.below(3) < 2 {
                    let dt = match r.below(4) { 0 => 0, 1 => r.below(1 << shift), 2 => r.below(1 << (shift + 6)), _ => r.below(1 << 30) };
                    h.push(now + dt, 1, i as u32);
                    c.push(now + dt, 1, i as u32);
                    a.push(now + dt, 1, i as u32);
                } else {
                    let e = h.pop();
                    prop_assert_eq!(e, c.pop());
                    prop_assert_eq!(e, a.pop());
                    if let Some(e) = e {
                        now = e.t;
                        // Sometimes put it back (a stepped run stopping before it):
                        // the next pop must return it again.
                        if r.below(4) == 0 {
                            h.unpop(e);
                            c.unpop(e);
                            a.unpop(e);
                            prop_assert_eq!(c.pop(), Some(e));
                            prop_assert_eq!(a.pop(), Some(e));
                            c.unpop(e);
                            a.unpop(e);
                        }
                    }
                }
                prop_assert_eq!(h.len(), c.len());
                prop_assert_eq!(h.len(), a.len());
            }
            let rest = drain(&mut h);
            prop_assert_eq!(&rest, &drain(&mut c));
            prop_assert_eq!(&rest, &drain(&mut a));
        }
    }
}
