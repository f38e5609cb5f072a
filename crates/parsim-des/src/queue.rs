//! Pending-event sets: the events scheduled but not yet executed, popped in
//! [`Order`]. Engines use [`Pending`], chosen by `parsim bench phold`
//! (BENCHMARKS.md): the [`Calendar`] queue against a 4-ary implicit heap and
//! `std`'s binary heap.

use std::cmp::Reverse;
use std::collections::BinaryHeap;

use crate::model::{Event, Order};

/// A priority queue of events by [`Order`].
pub trait PendingSet<P>: Default {
    /// Adds an event.
    fn push(&mut self, ev: Event<P>);
    /// Removes and returns the first event.
    fn pop(&mut self) -> Option<Event<P>>;
    /// The first event, without removing it (`&mut`: a set may reorganise itself to find it).
    fn peek(&mut self) -> Option<&Event<P>>;
    /// The number of events.
    fn len(&self) -> usize;
    /// Whether there are none.
    fn is_empty(&self) -> bool {
        self.len() == 0
    }
    /// The first event's order, or [`Order::MAX`].
    fn min_order(&mut self) -> Order {
        self.peek().map_or(Order::MAX, Event::order)
    }
}

/// The engines' pending-event set.
pub type Pending<P> = Calendar<P>;

mod calendar;
pub use calendar::Calendar;

/// A 4-ary implicit min-heap: half the depth of a binary heap, and the four
/// children of a node share a cache line or two.
#[derive(Clone, Debug)]
pub struct QuadHeap<P> {
    v: Vec<Event<P>>,
}

impl<P> Default for QuadHeap<P> {
    fn default() -> Self {
        QuadHeap { v: Vec::new() }
    }
}

impl<P: Clone> QuadHeap<P> {
    #[inline]
    fn sift_down(&mut self, mut i: usize) {
        let n = self.v.len();
        let x = self.v[i].clone();
        let kx = x.order();
        loop {
            let c = 4 * i + 1;
            if c >= n {
                break;
            }
            let mut best = c;
            let mut kb = self.v[c].order();
            for j in c + 1..(c + 4).min(n) {
                let kj = self.v[j].order();
                if kj < kb {
                    best = j;
                    kb = kj;
                }
            }
            if kb >= kx {
                break;
            }
            self.v[i] = self.v[best].clone();
            i = best;
        }
        self.v[i] = x;
    }
}

impl<P: Clone> PendingSet<P> for QuadHeap<P> {
    #[inline]
    fn push(&mut self, ev: Event<P>) {
        let k = ev.order();
        let mut i = self.v.len();
        self.v.push(ev.clone());
        while i > 0 {
            let parent = (i - 1) / 4;
            if self.v[parent].order() <= k {
                break;
            }
            self.v[i] = self.v[parent].clone();
            i = parent;
        }
        self.v[i] = ev;
    }

    #[inline]
    fn pop(&mut self) -> Option<Event<P>> {
        let last = self.v.pop()?;
        if self.v.is_empty() {
            return Some(last);
        }
        let top = std::mem::replace(&mut self.v[0], last);
        self.sift_down(0);
        Some(top)
    }

    #[inline]
    fn peek(&mut self) -> Option<&Event<P>> {
        self.v.first()
    }

    #[inline]
    fn len(&self) -> usize {
        self.v.len()
    }
}

/// `std::collections::BinaryHeap`, for comparison.
#[derive(Debug)]
pub struct StdHeap<P> {
    h: BinaryHeap<Reverse<ByOrder<P>>>,
}

impl<P> Default for StdHeap<P> {
    fn default() -> Self {
        StdHeap { h: BinaryHeap::new() }
    }
}

#[derive(Debug)]
struct ByOrder<P>(Event<P>);

impl<P> PartialEq for ByOrder<P> {
    fn eq(&self, o: &Self) -> bool {
        self.0.order() == o.0.order()
    }
}
impl<P> Eq for ByOrder<P> {}
impl<P> PartialOrd for ByOrder<P> {
    fn partial_cmp(&self, o: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(o))
    }
}
impl<P> Ord for ByOrder<P> {
    fn cmp(&self, o: &Self) -> std::cmp::Ordering {
        self.0.order().cmp(&o.0.order())
    }
}

impl<P: Clone> PendingSet<P> for StdHeap<P> {
    fn push(&mut self, ev: Event<P>) {
        self.h.push(Reverse(ByOrder(ev)));
    }
    fn pop(&mut self) -> Option<Event<P>> {
        self.h.pop().map(|r| r.0 .0)
    }
    fn peek(&mut self) -> Option<&Event<P>> {
        self.h.peek().map(|r| &r.0 .0)
    }
    fn len(&self) -> usize {
        self.h.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check<Q: PendingSet<u32>>() {
        let mut q = Q::default();
        let mut x = 12345u64;
        let mut all = Vec::new();
        for i in 0..2000u64 {
            x = x.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            let t = ((x >> 40) % 50) as f64 * 0.5; // many ties
            let ev = Event { time: t, dest: 0, src: (x >> 20) as u32 % 7, seq: i, payload: 0u32 };
            q.push(ev);
            all.push(ev);
            if i % 3 == 0 {
                all.sort_by_key(Event::order);
                assert_eq!(q.pop().map(|e| e.order()), Some(all.remove(0).order()));
            }
        }
        all.sort_by_key(Event::order);
        for e in all {
            assert_eq!(q.pop().unwrap().order(), e.order());
        }
        assert!(q.pop().is_none());
    }

    #[test]
    fn sets_pop_in_order() {
        check::<QuadHeap<u32>>();
        check::<StdHeap<u32>>();
        check::<Calendar<u32>>();
    }

    #[test]
    fn time_keys_preserve_order() {
        use crate::model::{time_from_key, time_key};
        let ts = [-3.5, -0.0, 0.0, 1e-300, 0.1, 1.0, 2.5e10];
        for w in ts.windows(2) {
            assert!(time_key(w[0]) <= time_key(w[1]));
        }
        for t in ts {
            assert_eq!(time_from_key(time_key(t)), t + 0.0);
        }
    }
}
