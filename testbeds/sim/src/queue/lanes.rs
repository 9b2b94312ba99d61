//! [`LaneQueue`]: FIFO lanes, one per delay, merged by their heads.
//!
//! A packet simulation schedules most events a fixed delay ahead of the clock: a frame
//! of a given size arrives at the next hop its serialisation plus the link delay after
//! it starts, and the port is free again after the serialisation alone. Events pushed
//! the same delay ahead of a clock that never goes back come in time order, so a lane
//! that takes one delay is a sorted FIFO: pushing is an append and the earliest event
//! is at the front. The queue keeps [`LANES`] such lanes, gives a free one to each new
//! delay, and puts whatever no lane takes (timers, far or rare delays, an event that
//! would not come last in its lane) into a [`CalendarQueue`]. The lanes and the
//! calendar are kept in the order of their first events: a pop takes the first and
//! moves that lane down the order by its next event (a comparison or two), and the
//! event after the next one, which the engine prefetches for, is known exactly in
//! almost every case (97.6 % on the 1024-host permutation; scanning the heads at every
//! pop and guessing the next event of the same lane found it 48 % of the time, and
//! the calendar's sorted bucket 89 %). Pops are by (time, sequence), exactly as in the
//! other queues, so a run's events and results do not depend on the queue.
//!
//! On the 1024-host permutation the event queue was 29 % of the simulator's
//! instructions with the calendar alone (sorting each bucket as the clock enters it);
//! docs/sim.md has the figures with lanes.

use super::{CalendarQueue, Ev, EventQueue, MAX_ID};

/// How many delays get a lane. The permutation's frames take about eight (data and
/// ACK, each arriving at a switch or a host, and each port's `TxDone`); every lane
/// costs a comparison per pop.
pub const LANES: usize = 8;

/// `head`'s index for the calendar.
const REST: usize = LANES;

/// An event as a lane stores it: `t << 64 | seq << 32 | data`, an integer that orders
/// as (time, sequence).
type Key = u128;

/// No event (a free lane's head, or no second event).
const NONE: Key = Key::MAX;

#[inline]
fn key(e: Ev) -> Key {
    (e.t as u128) << 64 | (e.seq as u128) << 32 | e.data as u128
}

/// One lane's events, a ring buffer of keys whose capacity is a power of two (so a slot
/// is an index masked, and pushing or popping is a store or a load and an add;
/// `VecDeque`'s wrap-around arithmetic was ~30 instructions an event).
#[derive(Debug, Default)]
struct Lane {
    buf: Vec<Key>,
    /// Position of the first event (wrapping; the slot is `first & mask`).
    first: usize,
    len: usize,
}

impl Lane {
    #[inline]
    fn mask(&self) -> usize {
        self.buf.len().wrapping_sub(1)
    }

    #[inline]
    fn push(&mut self, k: Key) {
        if self.len == self.buf.len() {
            self.grow();
        }
        let at = self.first.wrapping_add(self.len) & self.mask();
        self.buf[at] = k;
        self.len += 1;
    }

    /// Remove the first event and return the one after it ([`NONE`] if none), asking
    /// for the slot 16 events further on: a lane's events were written a link delay
    /// earlier, thousands of events ago, and are often out of the nearer caches.
    #[inline]
    fn pop_front(&mut self) -> Key {
        debug_assert!(self.len > 0);
        self.first = self.first.wrapping_add(1);
        self.len -= 1;
        if let Some(k) = self.buf.get(self.first.wrapping_add(16) & self.mask()) {
            crate::prefetch::prefetch(k);
        }
        self.nth(0)
    }

    /// The `i`-th event ([`NONE`] if the lane holds fewer).
    #[inline]
    fn nth(&self, i: usize) -> Key {
        if i < self.len {
            self.buf[self.first.wrapping_add(i) & self.mask()]
        } else {
            NONE
        }
    }

    /// Double the capacity (at least 64 slots), keeping the order.
    #[cold]
    fn grow(&mut self) {
        let cap = (2 * self.buf.len()).max(64);
        let mut buf = Vec::with_capacity(cap);
        buf.extend((0..self.len).map(|i| self.nth(i)));
        buf.resize(cap, NONE);
        self.buf = buf;
        self.first = 0;
    }
}

#[inline]
fn unkey(k: Key) -> Ev {
    Ev {
        t: (k >> 64) as u64,
        seq: (k >> 32) as u32,
        data: k as u32,
    }
}

/// FIFO lanes for the usual delays, a calendar queue for the rest (module docs).
#[derive(Debug)]
pub struct LaneQueue {
    /// Per lane: the delay (event time − the clock when pushed) it takes.
    delay: [u64; LANES],
    /// Per lane, then the calendar at [`REST`]: the earliest event ([`NONE`]: empty).
    head: [Key; LANES + 1],
    /// Per lane: the last event it took (a push joins a lane only after it).
    tail: [Key; LANES],
    lanes: [Lane; LANES],
    rest: CalendarQueue,
    /// The lanes and the calendar ([`REST`]) by their heads, earliest first (empty
    /// ones last, in any order): the earliest event is `head[order[0]]`.
    order: [u8; LANES + 1],
    /// The clock: the time of the last event popped.
    now: u64,
    /// Longest delay a lane takes (longer ones go to the calendar).
    max_delay: u64,
    seq: u32,
    len: usize,
}

impl LaneQueue {
    /// Lanes for delays up to 4 µs until [`EventQueue::fit_horizon`] says otherwise,
    /// over the simulator's calendar queue.
    pub fn for_sim() -> Self {
        LaneQueue {
            delay: [u64::MAX; LANES],
            head: [NONE; LANES + 1],
            tail: [0; LANES],
            lanes: Default::default(),
            rest: CalendarQueue::for_sim(),
            order: std::array::from_fn(|i| i as u8),
            now: 0,
            max_delay: 1 << 22,
            seq: 0,
            len: 0,
        }
    }

    /// The lane that takes an event `t` ps ahead of the clock, keyed `k`, or [`REST`]:
    /// the lane of its delay if `k` comes after that lane's last event, else a free
    /// lane (given this delay), else none.
    #[inline]
    fn lane_for(&mut self, t: u64, k: Key) -> usize {
        let Some(d) = t.checked_sub(self.now) else {
            return REST;
        };
        if d > self.max_delay {
            return REST;
        }
        if let Some(i) = self.delay.iter().position(|&x| x == d) {
            return if k > self.tail[i] { i } else { REST };
        }
        self.assign(d)
    }

    /// A free lane, given delay `d`, or [`REST`] if every lane holds events.
    #[cold]
    fn assign(&mut self, d: u64) -> usize {
        match self.head[..LANES].iter().position(|&h| h == NONE) {
            Some(i) => {
                self.delay[i] = d;
                i
            }
            None => REST,
        }
    }

    /// `head[at]` just became earlier: move `at` up the order.
    #[inline]
    fn head_lowered(&mut self, at: usize) {
        let mut i = self
            .order
            .iter()
            .position(|&x| x as usize == at)
            .expect("in order");
        let h = self.head[at];
        while i > 0 && self.head[self.order[i - 1] as usize] > h {
            self.order.swap(i - 1, i);
            i -= 1;
        }
    }

    /// The earliest head (`order[0]`) just became later: move it down the order.
    #[inline]
    fn first_raised(&mut self) {
        let at = self.order[0] as usize;
        let h = self.head[at];
        let mut i = 0;
        while i < LANES && self.head[self.order[i + 1] as usize] < h {
            self.order.swap(i, i + 1);
            i += 1;
        }
    }

    /// Put `e` (with its own sequence number) into the calendar.
    fn push_rest(&mut self, e: Ev) {
        let k = key(e);
        self.rest.unpop(e);
        if k < self.head[REST] {
            self.head[REST] = k;
            self.head_lowered(REST);
        }
    }
}

impl EventQueue for LaneQueue {
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
        let k = key(e);
        let at = self.lane_for(t, k);
        if at == REST {
            self.push_rest(e);
            return;
        }
        self.lanes[at].push(k);
        self.tail[at] = k;
        if self.head[at] == NONE {
            self.head[at] = k;
            self.head_lowered(at);
        }
    }

    #[inline]
    fn pop(&mut self) -> Option<Ev> {
        if self.len == 0 {
            return None;
        }
        let at = self.order[0] as usize;
        let e = if at == REST {
            let e = self
                .rest
                .pop()
                .expect("the calendar holds the earliest event");
            self.head[REST] = self.rest.peek().map_or(NONE, key);
            e
        } else {
            let k = self.head[at];
            self.head[at] = self.lanes[at].pop_front();
            unkey(k)
        };
        self.len -= 1;
        self.now = e.t;
        self.first_raised();
        Some(e)
    }

    fn unpop(&mut self, ev: Ev) {
        self.len += 1;
        self.push_rest(ev);
    }

    #[inline]
    fn peek_hint(&self) -> Option<Ev> {
        (self.len > 0).then(|| unkey(self.head[self.order[0] as usize]))
    }

    /// Exact, except when the calendar holds the next two events.
    #[inline]
    fn peek_hint2(&self) -> Option<Ev> {
        let at = self.order[0] as usize;
        let mut k = self.head[self.order[1] as usize];
        if at < LANES {
            k = k.min(self.lanes[at].nth(1));
        }
        (k != NONE).then(|| unkey(k))
    }

    /// Lanes take delays up to the horizon (a frame's arrival at the next hop); the
    /// calendar fits its year to it.
    fn fit_horizon(&mut self, ps: u64) {
        if self.len == 0 {
            self.max_delay = ps;
        }
        self.rest.fit_horizon(ps);
    }

    fn len(&self) -> usize {
        self.len
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::queue::HeapQueue;
    use proptest::prelude::*;
    use scenario::rng::Rng;

    /// Events a few fixed delays ahead go to lanes; a timer, an event out of its
    /// lane's order and a delay beyond the horizon go to the calendar; pops are in
    /// (time, sequence) order throughout.
    #[test]
    fn fixed_delays_take_lanes_and_the_rest_the_calendar() {
        let mut q = LaneQueue::for_sim();
        q.fit_horizon(1_000);
        q.push(100, 1, 1); // lane, delay 100
        q.push(50, 1, 2); // lane, delay 50
        q.push(100, 1, 3); // lane of delay 100, after event 1
        q.push(5_000, 5, 4); // beyond the horizon: calendar
        assert_eq!(
            q.head[REST],
            key(Ev {
                t: 5_000,
                seq: 4,
                data: 5 << 28 | 4
            })
        );
        assert_eq!(q.lanes.iter().map(|l| l.len).sum::<usize>(), 3);
        let order: Vec<u32> = std::iter::from_fn(|| q.pop()).map(|e| e.id()).collect();
        assert_eq!(order, [2, 1, 3, 4]);
        assert!(q.is_empty());
        assert_eq!(q.pop(), None);
    }

    /// A lane keeps its order when it wraps around its ring and when it grows while
    /// wrapped.
    #[test]
    fn a_lane_keeps_its_order_across_wrap_and_growth() {
        let mut l = Lane::default();
        let mut next_out = 0u128;
        for k in 0..40u128 {
            l.push(k);
        }
        for _ in 0..30 {
            assert_eq!(l.nth(0), next_out);
            l.pop_front();
            next_out += 1;
        }
        // 10 left at the end of a 64-slot ring: these wrap, then force a growth.
        for k in 40..200u128 {
            l.push(k);
        }
        assert_eq!(l.len, 170);
        assert_eq!(l.nth(1), next_out + 1);
        while l.len > 0 {
            assert_eq!(l.nth(0), next_out);
            l.pop_front();
            next_out += 1;
        }
        assert_eq!(next_out, 200);
        assert_eq!(l.nth(0), NONE);
    }

    /// With every lane busy, a new delay goes to the calendar; a lane freed by its
    /// last pop takes the next new delay.
    #[test]
    fn a_new_delay_waits_for_a_free_lane() {
        let mut q = LaneQueue::for_sim();
        for d in 1..=LANES as u64 {
            q.push(d * 10, 1, d as u32);
        }
        q.push(1_000, 1, 99);
        assert_ne!(q.head[REST], NONE, "no lane was free");
        assert_eq!(q.pop().map(|e| e.t), Some(10)); // frees the lane of delay 10
        q.push(10 + 7, 1, 100); // a new delay takes it
        assert_eq!(
            q.head[REST],
            key(Ev {
                t: 1_000,
                seq: 9,
                data: 1 << 28 | 99
            })
        );
        assert_eq!(q.pop().map(|e| e.id()), Some(100));
    }

    proptest! {
        /// The same pops as a binary heap for any interleaving of pushes (at a few
        /// usual delays, random ones, far ones) and pops, with pops put back as a
        /// stepped run does; the hints name the next two events when they are exact.
        #[test]
        fn lanes_match_heap(seed in any::<u64>(), ops in 1usize..4000, horizon in 0u64..5_000) {
            let mut r = Rng::new(seed);
            let mut h = HeapQueue::default();
            let mut q = LaneQueue::for_sim();
            q.fit_horizon(horizon);
            let usual = [0, 333, 833, 5, 505, 1_000, 4_096];
            let mut now = 0u64;
            for i in 0..ops {
                if r.below(3) < 2 {
                    let dt = match r.below(4) {
                        0 | 1 => usual[r.below(usual.len() as u64) as usize],
                        2 => r.below(2 * horizon + 1),
                        _ => r.below(1 << 30),
                    };
                    h.push(now + dt, 1, i as u32);
                    q.push(now + dt, 1, i as u32);
                } else {
                    let hint = q.peek_hint();
                    let e = h.pop();
                    prop_assert_eq!(e, q.pop());
                    prop_assert_eq!(hint, e);
                    if let Some(e) = e {
                        now = e.t;
                        if r.below(4) == 0 {
                            h.unpop(e);
                            q.unpop(e);
                            prop_assert_eq!(q.pop(), Some(e));
                            q.unpop(e);
                        }
                    }
                }
                prop_assert_eq!(h.len(), q.len());
            }
            let mut rest_h = Vec::new();
            while let Some(e) = h.pop() {
                rest_h.push(e);
            }
            let mut rest_q = Vec::new();
            while let Some(e) = q.pop() {
                rest_q.push(e);
            }
            prop_assert_eq!(rest_h, rest_q);
        }
    }
}
