//! One LP under Time Warp: its current state, the events it has executed
//! (and what each sent), its saved states, and rollback, coasting forward
//! and fossil collection over them.

use std::collections::VecDeque;

use crate::engine::{execute, Limits, Lp};
use crate::error::{DesError, Result};
use crate::model::{Event, Model, Order};
use crate::payload::Payload;

/// An executed event and what undoing it needs.
pub(super) struct Done<P> {
    pub ev: Event<P>,
    /// The LP's send counter before the event.
    pub seq0: u64,
    /// Events it scheduled (entries in `History::sent`).
    pub sent: u32,
}

/// An event an executed event scheduled (the sender is the LP itself).
pub(super) struct Sent<P> {
    pub time: f64,
    pub dest: u32,
    pub seq: u64,
    pub payload: P,
}

/// A saved state: the LP before executing its `index`-th event.
pub(super) struct Saved<S> {
    pub index: u64,
    pub state: S,
    pub seq: u64,
    pub dropped: u64,
}

pub(super) struct History<S, P> {
    pub lp: Lp<S>,
    pub id: u32,
    /// Executed events; `done[0]` is the LP's `base`-th event.
    pub done: VecDeque<Done<P>>,
    pub base: u64,
    /// Events with index below this are committed.
    pub committed: u64,
    pub sent: VecDeque<Sent<P>>,
    pub saved: VecDeque<Saved<S>>,
    /// Lazy cancellation's held-back messages.
    pub held: Vec<Held<P>>,
}

/// How an LP restores states and cancels.
#[derive(Clone, Copy)]
pub(super) struct Saving {
    /// Save every this many events (copy saving).
    pub every: u64,
    /// Undo with the model's reverse handler instead.
    pub reverse: bool,
    /// Lazy cancellation: hold back the anti-messages of a rollback until
    /// re-execution shows the messages were not sent again.
    pub lazy: bool,
}

/// A message sent by an undone event, held back under lazy cancellation.
pub(super) struct Held<P> {
    /// The order of the event that sent it (it is pending again).
    pub by: Order,
    pub ev: Event<P>,
}

fn same<P: Payload>(a: &Event<P>, b: &Event<P>) -> bool {
    a.order() == b.order() && a.dest == b.dest && a.payload.with_bytes(|x| b.payload.with_bytes(|y| x == y))
}

impl<S: Clone, P: Payload> History<S, P> {
    pub fn new(lp: Lp<S>, id: u32) -> Self {
        History {
            lp,
            id,
            done: VecDeque::new(),
            base: 0,
            committed: 0,
            sent: VecDeque::new(),
            saved: VecDeque::new(),
            held: Vec::new(),
        }
    }

    /// The order of the last executed event.
    #[inline]
    pub fn last(&self) -> Option<Order> {
        self.done.back().map(|d| d.ev.order())
    }

    /// Executes `ev`; what it schedules is appended to `out` (and
    /// remembered). Under lazy cancellation, messages identical to held-back
    /// ones are not appended (their receivers have them); held-back messages
    /// that were not sent again go to `antis`. Returns how many were reused,
    /// and the model's error if the handler made an invalid send (the event
    /// still counts as executed: the error only stands if it is committed).
    #[inline]
    pub fn process<M: Model<State = S, Payload = P>>(
        &mut self,
        model: &M,
        ev: Event<P>,
        saving: Saving,
        lim: Limits,
        out: &mut Vec<Event<P>>,
        antis: &mut Vec<Event<P>>,
    ) -> (u64, Option<DesError>) {
        let o = ev.order();
        if !self.held.is_empty() {
            // Their senders come before this event and did not send them again.
            self.held.retain(|h| {
                if h.by < o {
                    antis.push(h.ev.clone());
                    false
                } else {
                    true
                }
            });
        }
        if !saving.reverse && (self.lp.count % saving.every == 0 || self.saved.is_empty()) {
            let lp = &self.lp;
            self.saved.push_back(Saved { index: lp.count, state: lp.state.clone(), seq: lp.seq, dropped: lp.dropped });
        }
        let (seq0, n0) = (self.lp.seq, out.len());
        let error = execute(model, &mut self.lp, &ev, lim, out).err();
        for e in &out[n0..] {
            self.sent.push_back(Sent { time: e.time, dest: e.dest, seq: e.seq, payload: e.payload.clone() });
        }
        self.done.push_back(Done { ev, seq0, sent: (out.len() - n0) as u32 });
        let mut reused = 0;
        if !self.held.is_empty() {
            let mut i = n0;
            while i < out.len() {
                if let Some(k) = self.held.iter().position(|h| h.by == o && same(&h.ev, &out[i])) {
                    self.held.swap_remove(k);
                    out.remove(i);
                    reused += 1;
                } else {
                    i += 1;
                }
            }
            self.held.retain(|h| {
                if h.by == o {
                    antis.push(h.ev.clone());
                    false
                } else {
                    true
                }
            });
        }
        (reused, error)
    }

    /// Under lazy cancellation, the event `by` was annihilated while pending:
    /// what it had sent before its rollback is cancelled now.
    pub fn release_held(&mut self, by: Order, antis: &mut Vec<Event<P>>) {
        self.held.retain(|h| {
            if h.by == by {
                antis.push(h.ev.clone());
                false
            } else {
                true
            }
        });
    }

    /// Undoes every executed event at or after `to`. Undone events go to
    /// `reinsert` (except `drop`, the one being cancelled), what they sent
    /// to `antis`. Returns the number undone and the number coasted.
    #[allow(clippy::too_many_arguments)]
    pub fn rollback<M: Model<State = S, Payload = P>>(
        &mut self,
        model: &M,
        to: Order,
        drop: Option<Order>,
        saving: Saving,
        lim: Limits,
        reinsert: &mut Vec<Event<P>>,
        antis: &mut Vec<Event<P>>,
        scratch: &mut Vec<Event<P>>,
    ) -> Result<(u64, u64)> {
        let mut undone = 0;
        // Two identical events (same order) can both have been executed — a
        // message and its re-sent twin, before the first one's anti-message
        // arrives: drop only one of them.
        let mut drop = drop;
        while let Some(d) = self.done.back() {
            if d.ev.order() < to {
                break;
            }
            let d = self.done.pop_back().expect("checked");
            let index = self.base + self.done.len() as u64;
            assert!(
                index >= self.committed,
                "Time Warp invariant broken: LP {} rolled back to {to:?}, before GVT (a committed event)",
                self.id
            );
            let dropped = Some(d.ev.order()) == drop;
            if dropped {
                drop = None;
            }
            let hold = saving.lazy && !dropped;
            for _ in 0..d.sent {
                let s = self.sent.pop_back().expect("sent log");
                let ev = Event { time: s.time, dest: s.dest, src: self.id, seq: s.seq, payload: s.payload };
                if hold {
                    self.held.push(Held { by: d.ev.order(), ev });
                } else {
                    antis.push(ev);
                }
            }
            if saving.reverse {
                model.reverse(&mut self.lp.state, &d.ev);
                self.lp.count -= 1;
                // What it sent and did not schedule: its sends less those logged.
                self.lp.dropped -= self.lp.seq - d.seq0 - u64::from(d.sent);
                self.lp.seq = d.seq0;
            }
            if !dropped {
                reinsert.push(d.ev);
            }
            undone += 1;
        }
        let mut coasted = 0;
        if !saving.reverse && undone > 0 {
            let target = self.base + self.done.len() as u64;
            while self.saved.back().is_some_and(|s| s.index > target) {
                self.saved.pop_back();
            }
            let s = self.saved.back().expect("a saved state at or before every uncommitted event");
            self.lp.state = s.state.clone();
            self.lp.count = s.index;
            self.lp.seq = s.seq;
            self.lp.dropped = s.dropped;
            // Coast forward: execute again, without sending, up to the target.
            let from = (s.index - self.base) as usize;
            for i in from..self.done.len() {
                let ev = self.done[i].ev.clone();
                scratch.clear();
                // An invalid send here was reported when the event first ran.
                let _ = execute(model, &mut self.lp, &ev, lim, scratch);
                coasted += 1;
            }
            scratch.clear();
        }
        Ok((undone, coasted))
    }

    /// Commits executed events before `gvt` (they go to `commit`) and frees
    /// what no rollback can need any more. Returns the number committed.
    pub fn fossil(&mut self, gvt: Order, saving: Saving, mut commit: impl FnMut(&Event<P>)) -> u64 {
        let mut i = (self.committed - self.base) as usize;
        let first = self.committed;
        while i < self.done.len() && self.done[i].ev.order() < gvt {
            commit(&self.done[i].ev);
            i += 1;
        }
        self.committed = self.base + i as u64;
        let keep_from = if saving.reverse || self.committed == self.lp.count {
            self.saved.clear();
            self.committed
        } else {
            while self.saved.len() >= 2 && self.saved[1].index <= self.committed {
                self.saved.pop_front();
            }
            self.saved.front().map_or(self.committed, |s| s.index)
        };
        while self.base < keep_from {
            let d = self.done.pop_front().expect("done");
            for _ in 0..d.sent {
                self.sent.pop_front();
            }
            self.base += 1;
        }
        self.committed - first
    }
}
