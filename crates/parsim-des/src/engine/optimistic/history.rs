//! A rank's executed events under Time Warp, kept in one log in the order
//! they ran (as ROSS keeps a processed list), each entry linked to its LP's
//! previous entry; rollback, coasting forward and fossil collection over it.
//!
//! One log instead of a history per LP: executing an event appends to the
//! end of two arrays that stay in cache, and fossil collection reads the log
//! from the front. Per-LP queues put three scattered buffers (executed
//! events, their sends, saved states) behind every event, and a GVT round
//! walked them again LP by LP; what an LP needs of its own history (the
//! chain back to a saved state) is rare and is reached through the links.

use std::collections::{BTreeMap, VecDeque};

use crate::engine::{execute, Limits, Lp};
use crate::error::{DesError, Result};
use crate::model::{Event, Model, Order};
use crate::payload::Payload;

/// No entry (an LP with nothing executed, or whose entries were freed).
const NONE: u64 = u64::MAX;

/// An executed event and what undoing it needs.
pub(super) struct Entry<S, P> {
    pub ev: Event<P>,
    /// The local LP that executed it.
    lp: u32,
    /// The LP before the event: events handled, send counter, dropped sends.
    index: u64,
    seq0: u64,
    dropped0: u64,
    /// Its sends: `sent` records from absolute position `sent_at` of [`Log::sent`].
    sent_at: u64,
    sent: u32,
    /// The LP's previous entry (absolute position), or [`NONE`].
    prev: u64,
    /// Rolled back (the entry stays until the log's front passes it).
    dead: bool,
    committed: bool,
    /// The LP's state before the event (copy state saving).
    state: Option<S>,
}

/// An event an executed event scheduled (the sender is the entry's LP).
pub(super) struct Sent<P> {
    time: f64,
    dest: u32,
    seq: u64,
    payload: P,
}

/// Where a local LP's history ends: its last live entry (absolute
/// position, or [`NONE`]) and that event's time key. Kept apart from the
/// LPs' states, 16 bytes each, so that checking an arriving event for a
/// straggler reads a small array.
#[derive(Clone, Copy)]
struct Tail {
    at: u64,
    time: u64,
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

/// Cancels the held messages whose sender's order matches `which`.
fn cancel_held<P: Payload>(held: &mut Vec<Held<P>>, antis: &mut Vec<Event<P>>, which: impl Fn(Order) -> bool) {
    held.retain(|h| {
        let cancel = which(h.by);
        if cancel {
            antis.push(h.ev.clone());
        }
        !cancel
    });
}

fn same<P: Payload>(a: &Event<P>, b: &Event<P>) -> bool {
    a.order() == b.order() && a.dest == b.dest && a.payload.with_bytes(|x| b.payload.with_bytes(|y| x == y))
}

/// The rank's executed, not yet freed events, in execution order.
pub(super) struct Log<S, P> {
    tails: Vec<Tail>,
    /// Lazy cancellation's held-back messages, by local LP.
    pub held: BTreeMap<u32, Vec<Held<P>>>,
    entries: VecDeque<Entry<S, P>>,
    /// Absolute position of `entries[0]`.
    base: u64,
    sent: VecDeque<Sent<P>>,
    sent_base: u64,
    /// Entry positions, for walking an LP's chain forward.
    chain: Vec<u64>,
}

impl<S: Clone, P: Payload> Log<S, P> {
    /// An empty log for `lps` local LPs.
    pub fn new(lps: usize) -> Self {
        Log {
            tails: vec![Tail { at: NONE, time: 0 }; lps],
            held: BTreeMap::new(),
            entries: VecDeque::new(),
            base: 0,
            sent: VecDeque::new(),
            sent_base: 0,
            chain: Vec::new(),
        }
    }

    /// Entries held (live or not yet freed), for the memory estimate.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// Bytes per entry and per logged send.
    pub fn entry_bytes() -> usize {
        std::mem::size_of::<Entry<S, P>>() + std::mem::size_of::<Sent<P>>()
    }

    #[inline]
    fn held(&self, at: u64) -> bool {
        at != NONE && at >= self.base
    }

    #[inline]
    fn at(&self, at: u64) -> &Entry<S, P> {
        &self.entries[(at - self.base) as usize]
    }

    /// Whether LP `x` executed an event after `o` that a rollback can
    /// still undo (strictly after, or at `o` too with `or_at`).
    #[inline]
    pub fn after(&self, x: usize, o: Order, or_at: bool) -> bool {
        let t = self.tails[x];
        if !self.held(t.at) || t.time < o.time {
            return false;
        }
        t.time > o.time || {
            let last = self.at(t.at).ev.order();
            last > o || (or_at && last == o)
        }
    }

    /// Whether LP `x` executed an event of order `o` that is not rolled back.
    pub fn executed(&self, x: usize, o: Order) -> bool {
        let mut at = self.tails[x].at;
        while self.held(at) {
            let e = self.at(at);
            match e.ev.order().cmp(&o) {
                std::cmp::Ordering::Less => return false,
                std::cmp::Ordering::Equal => return true,
                std::cmp::Ordering::Greater => at = e.prev,
            }
        }
        false
    }

    /// Executes `ev` on LP `x`; what it schedules is appended to `out` (and
    /// logged). Under lazy cancellation, messages identical to held-back
    /// ones are not appended (their receivers have them); held-back messages
    /// that were not sent again go to `antis`. Returns how many were reused,
    /// and the model's error if the handler made an invalid send (the event
    /// still counts as executed: the error only stands if it is committed).
    #[allow(clippy::too_many_arguments)]
    #[inline]
    pub fn process<M: Model<State = S, Payload = P>>(
        &mut self,
        lp: &mut Lp<S>,
        x: usize,
        model: &M,
        ev: Event<P>,
        saving: Saving,
        lim: Limits,
        out: &mut Vec<Event<P>>,
        antis: &mut Vec<Event<P>>,
    ) -> (u64, Option<DesError>) {
        let o = ev.order();
        let mut held = if self.held.is_empty() { None } else { self.held.remove(&(x as u32)) };
        if let Some(held) = &mut held {
            // Their senders come before this event and did not send them again.
            cancel_held(held, antis, |by| by < o);
        }
        let tail = self.tails[x].at;
        let prev = if self.held(tail) { tail } else { NONE };
        // A state is saved every `every` events, and always before an LP's
        // first uncommitted event, so that a rollback never needs an entry
        // that fossil collection may free.
        let save = !saving.reverse
            && (saving.every == 1 || lp.count % saving.every == 0 || prev == NONE || self.at(prev).committed);
        let state = save.then(|| lp.state.clone());
        let (index, seq0, dropped0) = (lp.count, lp.seq, lp.dropped);
        let n0 = out.len();
        let error = execute(model, lp, &ev, lim, out).err();
        let sent_at = self.sent_base + self.sent.len() as u64;
        for e in &out[n0..] {
            self.sent.push_back(Sent { time: e.time, dest: e.dest, seq: e.seq, payload: e.payload.clone() });
        }
        let sent = (out.len() - n0) as u32;
        self.tails[x] = Tail { at: self.base + self.entries.len() as u64, time: o.time };
        self.entries.push_back(Entry {
            ev,
            lp: x as u32,
            index,
            seq0,
            dropped0,
            sent_at,
            sent,
            prev,
            dead: false,
            committed: false,
            state,
        });
        let mut reused = 0;
        if let Some(mut held) = held {
            let mut i = n0;
            while i < out.len() {
                if let Some(k) = held.iter().position(|h| h.by == o && same(&h.ev, &out[i])) {
                    held.swap_remove(k);
                    out.remove(i);
                    reused += 1;
                } else {
                    i += 1;
                }
            }
            cancel_held(&mut held, antis, |by| by == o);
            if !held.is_empty() {
                self.held.insert(x as u32, held);
            }
        }
        (reused, error)
    }

    /// Undoes every event of LP `x` (`lp`, global id `id`) at or after `to`. Undone events go to
    /// `reinsert` (except `drop`, the one being cancelled), what they sent
    /// to `antis` (or, lazily, to the LP's held messages). Returns the number
    /// undone and the number coasted.
    #[allow(clippy::too_many_arguments)]
    pub fn rollback<M: Model<State = S, Payload = P>>(
        &mut self,
        lp: &mut Lp<S>,
        x: usize,
        id: u32,
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
        let mut at = self.tails[x].at;
        let mut first = NONE;
        let mut held = Vec::new();
        while self.held(at) {
            let base = self.base;
            let e = &mut self.entries[(at - base) as usize];
            let order = e.ev.order();
            if order < to {
                break;
            }
            assert!(
                !e.committed,
                "Time Warp invariant broken: LP {} rolled back to {to:?}, before GVT (a committed event)",
                id
            );
            e.dead = true;
            let dropped = Some(order) == drop;
            if dropped {
                drop = None;
            }
            let hold = saving.lazy && !dropped;
            let from = (e.sent_at - self.sent_base) as usize;
            for k in (from..from + e.sent as usize).rev() {
                let r = &self.sent[k];
                let sent = Event { time: r.time, dest: r.dest, src: id, seq: r.seq, payload: r.payload.clone() };
                if hold {
                    held.push(Held { by: order, ev: sent });
                } else {
                    antis.push(sent);
                }
            }
            if saving.reverse {
                model.reverse(&mut lp.state, &e.ev);
                lp.count -= 1;
                // What it sent and did not schedule: its sends less those logged.
                lp.dropped -= lp.seq - e.seq0 - u64::from(e.sent);
                lp.seq = e.seq0;
            }
            if !dropped {
                reinsert.push(e.ev.clone());
            }
            undone += 1;
            first = at;
            at = e.prev;
        }
        if !held.is_empty() {
            self.held.entry(x as u32).or_default().append(&mut held);
        }
        if undone == 0 {
            return Ok((0, 0));
        }
        self.tails[x] =
            if self.held(at) { Tail { at, time: self.at(at).ev.order().time } } else { Tail { at: NONE, time: 0 } };
        let mut coasted = 0;
        if !saving.reverse {
            // The state before the first undone event: its own copy, or the
            // latest earlier copy and the events since executed again.
            let mut from = first;
            let mut chain = std::mem::take(&mut self.chain);
            chain.clear();
            if self.at(first).state.is_none() {
                from = self.at(first).prev;
                while self.at(from).state.is_none() {
                    chain.push(from);
                    from = self.at(from).prev;
                }
                chain.push(from);
            }
            let e = self.at(from);
            lp.state = e.state.clone().expect("a saved state");
            (lp.count, lp.seq, lp.dropped) = (e.index, e.seq0, e.dropped0);
            // Coast forward: execute again, without sending, up to the target.
            for &k in chain.iter().rev() {
                let ev = self.at(k).ev.clone();
                scratch.clear();
                // An invalid send here was reported when the event first ran.
                let _ = execute(model, lp, &ev, lim, scratch);
                coasted += 1;
            }
            scratch.clear();
            self.chain = chain;
        }
        Ok((undone, coasted))
    }

    /// Commits every executed event before `gvt` (each goes to `commit`)
    /// and frees the front of the log up to the first event that a rollback
    /// may still undo. Under sparse state saving, an LP's first uncommitted
    /// event gets the state before it (from its last copy and the events
    /// since), so nothing committed is needed again. Returns the number
    /// committed.
    #[allow(clippy::too_many_arguments)]
    pub fn fossil<M: Model<State = S, Payload = P>>(
        &mut self,
        gvt: Order,
        model: &M,
        saving: Saving,
        lim: Limits,
        lps: &[Lp<S>],
        scratch: &mut Vec<Event<P>>,
        mut commit: impl FnMut(&Event<P>),
    ) -> u64 {
        let mut n = 0;
        let mut stateless = false;
        // Entries before the first one a rollback may undo are freed.
        let mut free = None;
        for (i, e) in self.entries.iter_mut().enumerate() {
            if e.dead || e.committed {
                continue;
            }
            if e.ev.order() < gvt {
                e.committed = true;
                commit(&e.ev);
                n += 1;
            } else {
                free.get_or_insert(i);
                stateless |= e.state.is_none();
            }
        }
        if stateless && !saving.reverse {
            self.fill_states(model, lim, lps, scratch);
        }
        let free = free.unwrap_or(self.entries.len());
        self.entries.drain(..free);
        self.base += free as u64;
        let keep = self.entries.front().map_or(self.sent_base + self.sent.len() as u64, |e| e.sent_at);
        self.sent.drain(..(keep - self.sent_base) as usize);
        self.sent_base = keep;
        n
    }

    /// Gives every uncommitted entry whose LP's previous entry is now
    /// committed the state before it.
    fn fill_states<M: Model<State = S, Payload = P>>(
        &mut self,
        model: &M,
        lim: Limits,
        lps: &[Lp<S>],
        scratch: &mut Vec<Event<P>>,
    ) {
        let mut chain = std::mem::take(&mut self.chain);
        for k in 0..self.entries.len() {
            let e = &self.entries[k];
            if e.dead || e.committed || e.state.is_some() || !(self.held(e.prev) && self.at(e.prev).committed) {
                continue;
            }
            chain.clear();
            let mut from = e.prev;
            while self.at(from).state.is_none() {
                chain.push(from);
                from = self.at(from).prev;
            }
            let f = self.at(from);
            let key = lps[e.lp as usize].key;
            let mut lp =
                Lp { state: f.state.clone().expect("saved"), key, count: f.index, seq: f.seq0, dropped: f.dropped0 };
            chain.push(from);
            for &j in chain.iter().rev() {
                let ev = self.at(j).ev.clone();
                scratch.clear();
                let _ = execute(model, &mut lp, &ev, lim, scratch);
            }
            scratch.clear();
            let e = &mut self.entries[k];
            debug_assert_eq!((lp.count, lp.seq, lp.dropped), (e.index, e.seq0, e.dropped0));
            e.state = Some(lp.state);
        }
        self.chain = chain;
    }

    /// Whether nothing uncommitted is left (at the end of a run).
    pub fn all_committed(&self) -> bool {
        self.entries.iter().all(|e| e.dead || e.committed)
    }
}

impl<S, P: Payload> Log<S, P> {
    /// Under lazy cancellation, the event `by` was annihilated while pending:
    /// what it had sent before its rollback (LP `x`) is cancelled now.
    pub fn release_held(&mut self, x: usize, by: Order, antis: &mut Vec<Event<P>>) {
        let Some(held) = self.held.get_mut(&(x as u32)) else { return };
        cancel_held(held, antis, |o| o == by);
        if held.is_empty() {
            self.held.remove(&(x as u32));
        }
    }
}
