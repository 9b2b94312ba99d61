//! Event queues keyed by integer picoseconds.
//!
//! Events are 16 bytes: a time, a sequence number (FIFO order among events at the
//! same picosecond, so runs are reproducible and intuitive) and 32 bits of payload
//! (4-bit kind + 28-bit id). Two implementations with one interface:
//!
//! - [`HeapQueue`]: a binary heap (`std::collections::BinaryHeap`).
//! - [`CalendarQueue`]: a bucketed calendar (Brown, "Calendar queues", CACM 1988)
//!   with a fixed bucket width and a sorted overflow heap for far-future events.
//!   Packet simulations schedule almost everything within a few link delays, so
//!   most pushes land in a near bucket.
//!
//! `sim-bench --queue heap|calendar` measures which is faster on a workload; the
//! simulator uses the calendar queue by default (see docs/sim.md for the figures).

use std::cmp::Ordering;
use std::collections::BinaryHeap;

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
#[derive(Debug)]
pub struct CalendarQueue {
    width_shift: u32,
    buckets: Vec<Vec<Ev>>,
    /// Index of the bucket holding `now`.
    cur: usize,
    /// Start time of the current bucket.
    cur_start: u64,
    /// Whether `buckets[cur]` is sorted (descending, so pop from the back).
    cur_sorted: bool,
    far: BinaryHeap<Ev>,
    len: usize,
    seq: u32,
}

impl CalendarQueue {
    /// `2^width_shift` ps per bucket, `buckets` buckets (rounded to a power of two).
    pub fn new(width_shift: u32, buckets: usize) -> Self {
        let nb = buckets.next_power_of_two().max(2);
        CalendarQueue {
            width_shift,
            buckets: (0..nb).map(|_| Vec::new()).collect(),
            cur: 0,
            cur_start: 0,
            cur_sorted: true,
            far: BinaryHeap::new(),
            len: 0,
            seq: 0,
        }
    }

    #[inline]
    fn year_end(&self) -> u64 {
        self.cur_start + ((self.buckets.len() as u64) << self.width_shift)
    }

    #[inline]
    fn place(&mut self, e: Ev) {
        if e.t >= self.year_end() {
            self.far.push(e);
            return;
        }
        let t = e.t.max(self.cur_start);
        let off = ((t - self.cur_start) >> self.width_shift) as usize;
        let idx = (self.cur + off) & (self.buckets.len() - 1);
        let b = &mut self.buckets[idx];
        if off == 0 && self.cur_sorted {
            // Keep descending order: insert before all events later than e.
            let pos = b.partition_point(|x| x.key() > e.key());
            b.insert(pos, e);
        } else {
            b.push(e);
        }
    }

    fn advance(&mut self) {
        self.cur = (self.cur + 1) & (self.buckets.len() - 1);
        self.cur_start += 1 << self.width_shift;
        self.cur_sorted = false;
        // Pull far events that now fall inside the year.
        let end = self.year_end();
        while let Some(e) = self.far.peek() {
            if e.t >= end {
                break;
            }
            let e = self.far.pop().expect("peeked");
            self.place(e);
        }
    }
}

impl EventQueue for CalendarQueue {
    #[inline]
    fn push(&mut self, t: u64, kind: u32, id: u32) {
        debug_assert!(id <= MAX_ID && kind < 16);
        self.seq = self.seq.wrapping_add(1);
        self.len += 1;
        let e = Ev {
            t,
            seq: self.seq,
            data: kind << 28 | id,
        };
        self.place(e);
    }

    fn pop(&mut self) -> Option<Ev> {
        if self.len == 0 {
            return None;
        }
        loop {
            if !self.buckets[self.cur].is_empty() {
                if !self.cur_sorted {
                    self.buckets[self.cur].sort_unstable_by_key(|e| std::cmp::Reverse(e.key()));
                    self.cur_sorted = true;
                }
                self.len -= 1;
                return self.buckets[self.cur].pop();
            }
            // Empty year ahead? Jump straight to the next far event's year.
            if self.len == self.far.len() {
                let t = self.far.peek().expect("len > 0").t;
                let w = 1u64 << self.width_shift;
                self.cur_start = t / w * w;
                self.cur_sorted = false;
                let end = self.year_end();
                while let Some(e) = self.far.peek() {
                    if e.t >= end {
                        break;
                    }
                    let e = self.far.pop().expect("peeked");
                    self.place(e);
                }
                continue;
            }
            self.advance();
        }
    }

    fn unpop(&mut self, ev: Ev) {
        self.len += 1;
        self.place(ev);
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

    proptest! {
        /// Both queues pop the same sequence for any interleaving of pushes and pops
        /// (pushes never go into the past, as in the simulator).
        #[test]
        fn calendar_matches_heap(seed in any::<u64>(), ops in 1usize..3000, shift in 4u32..16) {
            let mut r = Rng::new(seed);
            let mut h = HeapQueue::default();
            let mut c = CalendarQueue::new(shift, 32);
            let mut now = 0u64;
            for i in 0..ops {
                if r.below(3) < 2 {
                    let dt = match r.below(4) { 0 => 0, 1 => r.below(1 << shift), 2 => r.below(1 << (shift + 6)), _ => r.below(1 << 30) };
                    h.push(now + dt, 1, i as u32);
                    c.push(now + dt, 1, i as u32);
                } else {
                    let a = h.pop();
                    let b = c.pop();
                    prop_assert_eq!(a, b);
                    if let Some(e) = a {
                        now = e.t;
                        // Sometimes put it back (a stepped run stopping before it):
                        // the next pop must return it again.
                        if r.below(4) == 0 {
                            h.unpop(e);
                            c.unpop(e);
                            prop_assert_eq!(c.pop(), Some(e));
                            c.unpop(e);
                        }
                    }
                }
                prop_assert_eq!(h.len(), c.len());
            }
            prop_assert_eq!(drain(&mut h), drain(&mut c));
        }
    }
}
