//! A calendar queue (after Brown, 1988), one "year" at a time: buckets of
//! equal width cover the near future; events beyond the year wait unsorted
//! in an overflow list. Only the current bucket is sorted (descending, so
//! the next event is popped from the end), when the queue reaches it. At the
//! end of the year the overflow is spread over a new year whose bucket width
//! comes from the spacing of the waiting events, so a bucket holds a few
//! events whatever the time scale (a year begun from a handful of events
//! keeps the last year's width). Push and pop are O(1) amortised for the
//! smooth timestamp distributions of PHOLD-like models. With massive ties
//! (every event at the same few times, a barrier of many simulated ranks)
//! no width spreads the events: a bucket then holds thousands, and a sorted
//! insert into it shifts them all. Pushes into a current bucket of
//! [`CROWDED`] events or more go to a 4-ary heap beside it instead, and pops
//! take the earlier of the two, so such a bucket costs O(log n) per event.

use crate::model::Event;
use crate::queue::{PendingSet, QuadHeap};

/// A calendar queue of events.
#[derive(Clone, Debug)]
pub struct Calendar<P> {
    /// The year's buckets are the first `nb`; those after it are empty and
    /// kept, with their capacity, for a later, larger year (a queue whose
    /// size hovers around a power of two would otherwise free and grow
    /// them again at every year).
    buckets: Vec<Vec<Event<P>>>,
    nb: usize,
    /// Start time of bucket 0.
    base: f64,
    width: f64,
    inv_width: f64,
    /// The current bucket: sorted descending; earlier buckets are empty.
    cur: usize,
    /// Events at or after the end of the year, unsorted.
    far: Vec<Event<P>>,
    /// Events of the current bucket pushed while it was crowded (they
    /// belong to bucket `cur`, and only to it).
    side: QuadHeap<P>,
    len: usize,
}

impl<P> Default for Calendar<P> {
    fn default() -> Self {
        Calendar {
            buckets: Vec::new(),
            nb: 0,
            base: 0.0,
            width: 1.0,
            inv_width: 1.0,
            cur: 0,
            far: Vec::new(),
            side: QuadHeap::default(),
            len: 0,
        }
    }
}

/// Below this many events a new year keeps the last year's bucket width.
const FEW_EVENTS: usize = 32;

/// A current bucket this long takes further pushes into the side heap
/// (a sorted insert would shift up to this many events).
pub const CROWDED: usize = 64;

#[inline]
fn sort_desc<P>(v: &mut [Event<P>]) {
    v.sort_unstable_by_key(|e| std::cmp::Reverse(e.order()));
}

impl<P: Clone> Calendar<P> {
    #[inline]
    fn bucket_of(&self, t: f64) -> usize {
        let x = (t - self.base) * self.inv_width;
        // Negative (an event before the year, e.g. re-inserted by a rollback) → 0; NaN → 0.
        if x >= 0.0 {
            (x as usize).min(usize::MAX / 2)
        } else {
            0
        }
    }

    /// Makes the current bucket (its sorted run and the side heap) non-empty,
    /// or leaves the queue empty.
    #[inline]
    fn settle(&mut self) {
        if self.cur < self.nb && (!self.buckets[self.cur].is_empty() || !self.side.is_empty()) {
            return;
        }
        self.advance();
    }

    /// Whether the next event is the side heap's (rather than the end of the
    /// current bucket's sorted run); the current bucket is settled.
    #[inline]
    fn side_first(&mut self) -> bool {
        match (self.side.peek(), self.buckets[self.cur].last()) {
            (Some(h), Some(b)) => h.order() < b.order(),
            (Some(_), None) => true,
            _ => false,
        }
    }

    #[cold]
    fn advance(&mut self) {
        loop {
            self.cur += 1;
            if self.cur >= self.nb {
                if self.far.is_empty() {
                    self.cur = self.nb;
                    return;
                }
                self.new_year();
            }
            let b = &mut self.buckets[self.cur];
            if !b.is_empty() {
                sort_desc(b);
                return;
            }
        }
    }

    /// Spreads the overflow over a new year.
    fn new_year(&mut self) {
        let n = self.far.len();
        let (mut lo, mut hi) = (f64::INFINITY, f64::NEG_INFINITY);
        for e in &self.far {
            lo = lo.min(e.time);
            hi = hi.max(e.time);
        }
        // The spacing of the bulk: the 75th percentile of a sample, less the minimum.
        let step = (n / 256).max(1);
        let mut sample: Vec<f64> = self.far.iter().step_by(step).map(|e| e.time).collect();
        sample.sort_unstable_by(f64::total_cmp);
        let q = sample[(sample.len() * 3) / 4];
        let buckets = n.next_power_of_two().clamp(16, 1 << 22);
        // About two events per bucket in the bulk. A handful of events says
        // nothing about the spacing (one event gives none at all, and a
        // year as wide as all time would put every later event in one
        // sorted bucket): then the last year's width is kept.
        let usable = |w: f64| w > 0.0 && w.is_finite() && w < f64::MAX / 8.0;
        let mut width = if n >= FEW_EVENTS { 2.0 * (q - lo) / (0.75 * n as f64) } else { f64::NAN };
        if !usable(width) && n >= FEW_EVENTS {
            width = (hi - lo) / buckets as f64;
        }
        if !usable(width) {
            // All times equal, or too few events: the last width, or one bucket.
            width = if usable(self.width) { self.width } else { f64::MAX / 4.0 };
        }
        self.base = lo;
        self.width = width;
        self.inv_width = 1.0 / width;
        if self.buckets.len() < buckets {
            self.buckets.resize_with(buckets, Vec::new);
        }
        self.nb = buckets;
        debug_assert!(self.buckets.iter().all(Vec::is_empty), "a new year begins with every bucket empty");
        self.cur = 0;
        let far = std::mem::take(&mut self.far);
        let mut keep = Vec::with_capacity(far.capacity());
        for e in far.iter() {
            let j = self.bucket_of(e.time);
            if j < buckets {
                self.buckets[j].push(e.clone());
            } else {
                keep.push(e.clone());
            }
        }
        self.far = keep;
        sort_desc(&mut self.buckets[0]);
    }
}

impl<P: Clone> PendingSet<P> for Calendar<P> {
    #[inline]
    fn push(&mut self, ev: Event<P>) {
        self.len += 1;
        let j = self.bucket_of(ev.time);
        if self.cur >= self.nb {
            // Empty (or never used): start a year at the next pop.
            self.far.push(ev);
            self.cur = self.nb;
            return;
        }
        if j > self.cur {
            if j < self.nb {
                self.buckets[j].push(ev);
            } else {
                self.far.push(ev);
            }
            return;
        }
        if j < self.cur {
            // Before the current bucket (a rollback re-inserting): that bucket
            // is current now, and the side heap's events go back to their own
            // bucket (unsorted, like every bucket but the current one).
            while let Some(e) = self.side.pop() {
                self.buckets[self.cur].push(e);
            }
            self.cur = j;
        }
        let b = &mut self.buckets[self.cur];
        if b.len() >= CROWDED {
            self.side.push(ev);
            return;
        }
        let o = ev.order();
        // Sorted descending: insert after every larger event.
        let at = b.partition_point(|e| e.order() > o);
        b.insert(at, ev);
    }

    #[inline]
    fn pop(&mut self) -> Option<Event<P>> {
        if self.len == 0 {
            return None;
        }
        self.settle();
        let ev = if self.side_first() { self.side.pop() } else { self.buckets[self.cur].pop() };
        if ev.is_some() {
            self.len -= 1;
        }
        ev
    }

    #[inline]
    fn peek(&mut self) -> Option<&Event<P>> {
        if self.len == 0 {
            return None;
        }
        self.settle();
        if self.side_first() {
            self.side.peek()
        } else {
            self.buckets[self.cur].last()
        }
    }

    #[inline]
    fn len(&self) -> usize {
        self.len
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ev(time: f64, seq: u64) -> Event<()> {
        Event { time, dest: 0, src: 0, seq, payload: () }
    }

    /// A year begun from a single event keeps a usable width: all later
    /// events do not land in one sorted bucket (which made every push a
    /// shift of the whole queue).
    #[test]
    fn a_year_from_one_event_keeps_its_width() {
        let mut c = Calendar::default();
        c.push(ev(5.0, 0));
        assert_eq!(c.pop().map(|e| e.seq), Some(0));
        for i in 0..4000u64 {
            c.push(ev(5.0 + 0.25 * (i as f64 + 1.0), i + 1));
        }
        assert!(c.width < 1e6, "width {}", c.width);
        let mut last = 0.0;
        for _ in 0..4000 {
            let e = c.pop().expect("event");
            assert!(e.time >= last);
            last = e.time;
            assert!(c.buckets.get(c.cur).map_or(0, Vec::len) < 64, "a current bucket of {}", c.buckets[c.cur].len());
        }
        assert!(c.pop().is_none());
    }

    /// Thousands of events at the same few times (a barrier of many
    /// simulated ranks, PHOLD with lookahead = mean), with pops between the
    /// pushes and re-inserts before the current bucket (a rollback): every
    /// pop is the earliest event, and the crowded buckets use the side heap.
    #[test]
    fn crowded_buckets_pop_in_order_with_pushes_before_the_current_one() {
        let mut c = Calendar::default();
        let mut reference: std::collections::BTreeSet<(crate::model::Order, u64)> = Default::default();
        let mut x = 99u64;
        let mut seq = 0u64;
        let mut last = 0.0f64;
        let mut sided = 0;
        for round in 0..8u64 {
            for i in 0..4000u64 {
                x = x.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
                let t = match (x >> 33) % 16 {
                    // Now and then an event before the last one popped (a rollback's re-insert).
                    0 if last > 1.0 => last - 1.0,
                    1..=3 => (round + 2) as f64 + 0.5,
                    _ => (round + 2) as f64,
                };
                let e = ev(t, seq);
                seq += 1;
                reference.insert((e.order(), e.seq));
                c.push(e);
                if i % 3 == 0 {
                    let got = c.pop().expect("an event");
                    let want = reference.pop_first().expect("an event");
                    assert_eq!((got.order(), got.seq), want);
                    last = got.time;
                    sided = sided.max(c.side.len());
                }
            }
        }
        assert!(sided > 1000, "the side heap held at most {sided} events");
        assert_eq!(c.len(), reference.len());
        while let Some(want) = reference.pop_first() {
            let got = c.pop().expect("an event");
            assert_eq!((got.order(), got.seq), want);
        }
        assert!(c.pop().is_none() && c.peek().is_none());
    }
}
