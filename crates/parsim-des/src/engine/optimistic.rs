//! Time Warp. Each rank executes its LPs' events as fast as it can, in
//! [`Order`]; an event that arrives in an LP's past (a straggler) rolls the
//! LP back — to a saved copy of its state and forward again without sending,
//! or by reverse computation — and every event it sent in error is cancelled
//! with an anti-message (aggressive cancellation), which may roll back
//! further LPs. GVT ([`gvt`], Mattern's algorithm, or a synchronous variant)
//! bounds how far back a rollback can reach: events before it are committed
//! (digest, `on_commit` in order) and their history freed. A rank keeps
//! what it executed in one log, in execution order (`history.rs`). A limit on
//! uncommitted events throttles a rank that runs too far ahead: it then only
//! executes the event at GVT — which nothing can roll back — until GVT
//! catches up, so memory stays bounded and the run still progresses.
//! An invalid send is speculative like everything else: it stops the run
//! (with the same error the sequential engine reports) only once GVT passes
//! the event that made it, and is forgotten if that event is rolled back.

mod gvt;
mod history;
pub(crate) mod resume;

use std::collections::BTreeMap;
use std::time::Instant;

use crate::payload::Payload;
use parsim_ckpt::Checkpointer;
use parsim_comm::{Comm, ReduceOp, Source, TagMatch};
use parsim_core::rng::{Stream, StreamKey};

use super::{
    fail_everywhere, finish, init_lps, words_per_event, Commits, Limits, LpMap, Outbox, Report, DES_TAG, ERROR_TAG,
};
use crate::config::{Cancellation, GvtAlgorithm, StateSaving};
use crate::error::{DesError, Result};
use crate::model::{time_key, Event, Model, Order};
use crate::queue::{Pending, PendingSet};
use crate::stats::DesStats;
use crate::{DesConfig, ProgressFn};
use gvt::{Mattern, Token};
use history::{Log, Saving};

const EVENTS: u64 = 1;
const TOKEN: u64 = 2;
const GVT: u64 = 3;
const SYNC_START: u64 = 4;
/// A rank at its memory limit asks rank 0 for a GVT round now.
const GVT_REQUEST: u64 = 5;
/// Rank 0 to all: take a checkpoint now (a collective round).
const CKPT_START: u64 = 6;
/// Marks an anti-message record (in the `seq` word; sequence numbers stay below 2^63).
const ANTI: u64 = 1 << 63;

pub(crate) fn run<C: Comm, M: Model>(
    comm: &C,
    model: &M,
    cfg: &DesConfig,
    progress: &mut ProgressFn<'_>,
    mut ck: Option<&mut Checkpointer<'_, C>>,
) -> Result<Report<M::State>> {
    let t0 = Instant::now();
    let map = LpMap::new(model, comm.size(), comm.rank())?;
    let restored = match ck.as_mut().and_then(|c| c.take_restart()) {
        Some(mut r) => Some(resume::load::<C, M::State, M::Payload>(comm, &mut r, &map, cfg.seed)?),
        None => None,
    };
    if let Some(c) = ck.as_mut() {
        // Ranks reach GVT rounds at different moments: rank 0 decides and tells the others.
        c.decide_locally();
    }
    let mut tw = match TimeWarp::new(comm, model, cfg, &map, restored) {
        Ok(tw) => tw,
        Err(e) => return Err(fail_everywhere(comm, e)),
    };
    if let Err(e) = tw.main(progress, ck) {
        return Err(fail_everywhere(comm, e));
    }
    tw.outbox.flush()?;
    let mut stats = std::mem::take(&mut tw.stats);
    stats.committed = tw.commits.count;
    stats.total_s = t0.elapsed().as_secs_f64();
    let lps = tw.lps;
    finish(comm, stats, &tw.commits, &map, lps)
}

/// The identity of an event for cancellation: its order, destination and payload.
type EventKey = (Order, u32, u64);

/// Ordered, so that the earliest cancelled event is at hand.
type KeyMap = BTreeMap<EventKey, u32>;

fn event_key<P: Payload>(ev: &Event<P>) -> EventKey {
    let mut h = 0xcbf2_9ce4_8422_2325u64;
    ev.payload.with_bytes(|bytes| {
        for b in bytes {
            h = (h ^ u64::from(*b)).wrapping_mul(0x0100_0000_01b3);
        }
    });
    (ev.order(), ev.dest, h)
}

struct TimeWarp<'a, C: Comm, M: Model> {
    comm: &'a C,
    model: &'a M,
    cfg: &'a DesConfig,
    map: &'a LpMap,
    lim: Limits,
    saving: Saving,
    lps: Vec<super::Lp<M::State>>,
    /// Every executed event not yet freed, in execution order.
    log: Log<M::State, M::Payload>,
    pending: Pending<M::Payload>,
    /// Pending events cancelled by anti-messages, removed when they reach the top.
    cancelled: KeyMap,
    /// The earliest cancelled order (events before it need no lookup).
    cancelled_min: Order,
    /// Outgoing records per rank (header word reserved).
    parts: Vec<Vec<u64>>,
    /// Received message buffers, reused for sending: traffic is roughly
    /// symmetric, so buffers circulate between ranks instead of being freed
    /// by one thread and allocated by another (which contends in malloc).
    spare: Vec<Vec<u64>>,
    outbox: Outbox<C>,
    gvt: Mattern,
    uncommitted: u64,
    /// Invalid sends of executed events, by local LP and event order: they
    /// stop the run once GVT passes them, and vanish if rolled back.
    errors: Vec<(usize, Order, DesError)>,
    commits: Commits,
    commit_buf: Vec<Event<M::Payload>>,
    stats: DesStats,
    finished: bool,
    since_round: u64,
    /// This rank asked for a round since the last GVT (at most once per GVT).
    requested: bool,
    /// Rank 0: a round was asked for.
    round_wanted: bool,
    /// GVT requests sent (any rank) and received (rank 0), drained at the end.
    requests_sent: u64,
    requests_received: u64,
    chaos: Option<Stream>,
    /// Rank 0 asked for a checkpoint round.
    ckpt_now: bool,
    /// GVT rounds already shown to the checkpointer.
    rounds_seen: u64,
    // Scratch buffers.
    out: Vec<Event<M::Payload>>,
    reinsert: Vec<Event<M::Payload>>,
    antis: Vec<Event<M::Payload>>,
    scratch: Vec<Event<M::Payload>>,
}

impl<'a, C: Comm, M: Model> TimeWarp<'a, C, M> {
    fn new(
        comm: &'a C,
        model: &'a M,
        cfg: &'a DesConfig,
        map: &'a LpMap,
        restored: Option<resume::Restored<M::State, M::Payload>>,
    ) -> Result<Self> {
        let (p, me) = (comm.size(), comm.rank());
        let lim = Limits::new(model, false);
        let saving = Saving {
            every: u64::from(cfg.checkpoint_every),
            reverse: cfg.state_saving == StateSaving::Reverse,
            lazy: cfg.cancellation == Cancellation::Lazy,
        };
        let mut tw = TimeWarp {
            comm,
            model,
            cfg,
            map,
            lim,
            saving,
            lps: Vec::new(),
            log: Log::new(map.mine.len()),
            pending: Pending::default(),
            cancelled: KeyMap::default(),
            cancelled_min: Order::MAX,
            parts: vec![vec![EVENTS]; p],
            spare: Vec::new(),
            outbox: Outbox::new(),
            gvt: Mattern::new(p, me),
            uncommitted: 0,
            errors: Vec::new(),
            commits: Commits::default(),
            commit_buf: Vec::new(),
            stats: DesStats::default(),
            finished: false,
            since_round: 0,
            requested: false,
            round_wanted: false,
            requests_sent: 0,
            requests_received: 0,
            chaos: (cfg.chaos != 0)
                .then(|| StreamKey::new(cfg.chaos).purpose("parsim.des.chaos").with(me as u64).stream()),
            ckpt_now: false,
            rounds_seen: 0,
            out: Vec::new(),
            reinsert: Vec::new(),
            antis: Vec::new(),
            scratch: Vec::new(),
        };
        if let Some(r) = restored {
            tw.lps = r.lps;
            for ev in r.pending {
                tw.pending.push(ev);
            }
            tw.gvt.gvt = r.gvt;
            tw.commits.digest = r.digest;
            tw.commits.count = r.committed;
            tw.stats.gvt_rounds = r.rounds;
            tw.rounds_seen = r.rounds;
            return Ok(tw);
        }
        let mut out = Vec::new();
        let lps = init_lps(model, map, cfg.seed, lim, &mut out)?;
        tw.lps = lps;
        for ev in out {
            tw.route(ev)?;
        }
        Ok(tw)
    }

    fn me(&self) -> usize {
        self.comm.rank()
    }

    /// Sends a new event where it belongs.
    #[inline]
    fn route(&mut self, ev: Event<M::Payload>) -> Result<()> {
        let r = self.map.owner[ev.dest as usize] as usize;
        if r == self.me() {
            self.deliver(ev)
        } else {
            self.stats.remote_events += 1;
            self.put(r, &ev, false)
        }
    }

    /// Appends a record for rank `r`, sending the buffer when it is full.
    fn put(&mut self, r: usize, ev: &Event<M::Payload>, anti: bool) -> Result<()> {
        self.gvt.note_order(ev.order());
        let buf = &mut self.parts[r];
        let start = buf.len();
        super::put_event(buf, ev);
        if anti {
            buf[start + 2] |= ANTI;
        }
        if buf.len() > self.cfg.batch as usize * words_per_event::<M::Payload>() {
            self.flush_to(r)?;
        }
        Ok(())
    }

    fn flush_to(&mut self, r: usize) -> Result<()> {
        if self.parts[r].len() <= 1 {
            return Ok(());
        }
        let fresh = self.spare.pop().unwrap_or_default();
        let mut body = std::mem::replace(&mut self.parts[r], fresh);
        self.parts[r].push(EVENTS);
        body[0] = EVENTS | (self.gvt.epoch << 8);
        self.gvt.note_sent(r);
        self.stats.messages += 1;
        self.outbox.send(self.comm, r, body)
    }

    fn flush(&mut self) -> Result<()> {
        for r in 0..self.comm.size() {
            self.flush_to(r)?;
        }
        Ok(())
    }

    /// A positive event for a local LP: roll the LP back if it is a straggler.
    #[inline]
    fn deliver(&mut self, ev: Event<M::Payload>) -> Result<()> {
        let x = self.map.local[ev.dest as usize] as usize;
        if self.log.after(x, ev.order(), false) {
            self.stats.rollbacks_primary += 1;
            self.rollback(x, ev.order(), None)?;
        }
        self.pending.push(ev);
        Ok(())
    }

    /// An anti-message for a local LP: annihilate its positive.
    fn annihilate(&mut self, anti: Event<M::Payload>) -> Result<()> {
        let x = self.map.local[anti.dest as usize] as usize;
        let o = anti.order();
        let executed = self.log.executed(x, o);
        if executed {
            self.stats.rollbacks_secondary += 1;
            self.rollback(x, o, Some(o))?;
        } else {
            *self.cancelled.entry(event_key(&anti)).or_insert(0) += 1;
            self.cancelled_min = self.cancelled_min.min(o);
            if !self.log.held.is_empty() {
                let mut antis = std::mem::take(&mut self.antis);
                self.log.release_held(x, o, &mut antis);
                let r = self.send_antis(&mut antis);
                self.antis = antis;
                r?;
            }
        }
        Ok(())
    }

    /// Sends anti-messages (annihilating local ones at once).
    fn send_antis(&mut self, antis: &mut Vec<Event<M::Payload>>) -> Result<()> {
        let mut result = Ok(());
        for a in antis.drain(..) {
            if result.is_err() {
                continue;
            }
            self.stats.anti_messages += 1;
            let r = self.map.owner[a.dest as usize] as usize;
            result = if r == self.me() { self.annihilate(a) } else { self.put(r, &a, true) };
        }
        result
    }

    /// Rolls LP `x` back to before `to`, cancelling what it sent; cascades
    /// through local LPs without recursion.
    fn rollback(&mut self, x: usize, to: Order, drop: Option<Order>) -> Result<()> {
        let mut reinsert = std::mem::take(&mut self.reinsert);
        let mut antis = std::mem::take(&mut self.antis);
        let (undone, coasted) = self.log.rollback(
            &mut self.lps[x],
            x,
            self.map.mine[x],
            self.model,
            to,
            drop,
            self.saving,
            self.lim,
            &mut reinsert,
            &mut antis,
            &mut self.scratch,
        )?;
        if !self.errors.is_empty() {
            self.errors.retain(|(lp, o, _)| *lp != x || *o < to);
        }
        self.stats.rolled_back += undone;
        self.stats.coasted += coasted;
        self.uncommitted -= undone;
        for ev in reinsert.drain(..) {
            self.pending.push(ev);
        }
        let result = self.send_antis(&mut antis);
        self.reinsert = reinsert;
        self.antis = antis;
        result
    }

    /// Takes the earliest pending event that has not been cancelled.
    #[inline]
    fn pop_live(&mut self) -> Option<Event<M::Payload>> {
        loop {
            let ev = self.pending.pop()?;
            if self.cancelled.is_empty() || ev.order() < self.cancelled_min {
                return Some(ev);
            }
            let k = event_key(&ev);
            let Some(n) = self.cancelled.get_mut(&k) else { return Some(ev) };
            *n -= 1;
            if *n == 0 {
                self.cancelled.remove(&k);
                self.cancelled_min = self.cancelled.keys().next().map_or(Order::MAX, |k| k.0);
            }
        }
    }

    fn lvt(&mut self) -> Order {
        let Some(ev) = self.pop_live() else { return Order::MAX };
        let o = ev.order();
        self.pending.push(ev);
        o
    }

    /// Executes up to `n` events; returns how many.
    fn process(&mut self, n: u32) -> Result<u32> {
        // The scratch vectors are taken once per batch (a rollback meanwhile
        // uses fresh ones).
        let (mut out, mut antis) = (std::mem::take(&mut self.out), std::mem::take(&mut self.antis));
        let done = self.process_with(n, &mut out, &mut antis);
        (self.out, self.antis) = (out, antis);
        let done = done?;
        self.stats.peak_uncommitted = self.stats.peak_uncommitted.max(self.uncommitted);
        self.stats.peak_pending = self.stats.peak_pending.max(self.pending.len() as u64);
        self.note_memory();
        Ok(done)
    }

    fn process_with(
        &mut self,
        n: u32,
        out: &mut Vec<Event<M::Payload>>,
        antis: &mut Vec<Event<M::Payload>>,
    ) -> Result<u32> {
        out.clear();
        antis.clear();
        let window = self.cfg.window_for(self.model.lookahead());
        let horizon = if window.is_finite() { time_key(self.gvt.gvt.time_f64() + window) } else { u64::MAX };
        let mut done = 0;
        while done < n {
            // Popped at once (one queue operation per event); put back if it must wait.
            let Some(ev) = self.pop_live() else { break };
            let o = ev.order();
            if o.time >= horizon && o != self.gvt.gvt {
                // Only a new GVT moves the horizon: ask for a round now
                // rather than idle until rank 0 starts its next one.
                self.pending.push(ev);
                self.request_round()?;
                break;
            }
            if self.uncommitted >= self.cfg.memory_limit && o != self.gvt.gvt {
                self.stats.throttled += 1;
                // Force a GVT round: only a new GVT can free memory.
                self.request_round()?;
                self.pending.push(ev);
                break;
            }
            let x = self.map.local[ev.dest as usize] as usize;
            let (reused, error) =
                self.log.process(&mut self.lps[x], x, self.model, ev, self.saving, self.lim, out, antis);
            self.stats.processed += 1;
            self.uncommitted += 1;
            self.stats.lazy_reused += reused;
            if let Some(e) = error {
                // Speculative until committed: a rollback may undo the event.
                self.errors.push((x, o, e));
            }
            if !antis.is_empty() {
                self.send_antis(antis)?;
            }
            for e in out.drain(..) {
                self.route(e)?;
            }
            done += 1;
        }
        Ok(done)
    }

    /// Asks rank 0 for a GVT round (at most once per GVT).
    fn request_round(&mut self) -> Result<()> {
        if self.requested {
            return Ok(());
        }
        self.requested = true;
        if self.me() == 0 {
            self.round_wanted = true;
            Ok(())
        } else {
            self.requests_sent += 1;
            self.send_control(0, vec![GVT_REQUEST])
        }
    }

    /// Raises the peak of the engine's own memory (uncommitted history, saved
    /// states, pending events) to its present size: called after every batch
    /// of events, before fossil collection frees anything, so the figure is
    /// the high point, not what is left after a GVT round.
    fn note_memory(&mut self) {
        let state = std::mem::size_of::<M::State>() / self.saving.every.max(1) as usize;
        let bytes = self.log.len() as u64 * (Log::<M::State, M::Payload>::entry_bytes() + state) as u64
            + self.pending.len() as u64 * std::mem::size_of::<Event<M::Payload>>() as u64;
        self.stats.peak_memory_bytes = self.stats.peak_memory_bytes.max(bytes);
    }

    /// Handles one message.
    fn handle(&mut self, source: usize, mut w: Vec<u64>) -> Result<()> {
        self.handle_words(source, &w)?;
        if self.spare.len() < 64 {
            w.clear();
            self.spare.push(w);
        }
        Ok(())
    }

    fn handle_words(&mut self, source: usize, w: &[u64]) -> Result<()> {
        match w[0] & 0xff {
            EVENTS => {
                self.gvt.note_received(w[0] >> 8);
                for (mut ev, rec) in super::records::<M::Payload>(&w[1..]) {
                    let anti = rec[2] & ANTI != 0;
                    ev.seq &= !ANTI;
                    if anti {
                        self.annihilate(ev)?;
                    } else {
                        self.deliver(ev)?;
                    }
                }
            }
            TOKEN => {
                let t = Token::decode(w);
                if t.pass == 1 {
                    self.flush()?;
                    if let Some(t) = self.gvt.first_pass(t) {
                        self.send_control(self.gvt.next(), t.encode(TOKEN))?;
                    }
                } else if self.me() == 0 {
                    self.new_gvt(t.min)?;
                    for r in 1..self.comm.size() {
                        let m = vec![GVT, t.min.time, u64::from(t.min.src), t.min.seq];
                        self.send_control(r, m)?;
                    }
                } else {
                    self.gvt.waiting = Some(t);
                }
            }
            GVT => self.new_gvt(Order { time: w[1], src: w[2] as u32, seq: w[3] })?,
            SYNC_START => self.sync_gvt()?,
            CKPT_START => self.ckpt_now = true,
            GVT_REQUEST => {
                self.requests_received += 1;
                self.round_wanted = true;
            }
            k => panic!("unknown Time Warp message kind {k} from rank {source}"),
        }
        Ok(())
    }

    fn send_control(&mut self, r: usize, words: Vec<u64>) -> Result<()> {
        self.stats.messages += 1;
        self.outbox.send(self.comm, r, words)
    }

    /// Receives what has arrived (blocking for the first message if `block`).
    fn poll(&mut self, block: bool) -> Result<bool> {
        let mut got = false;
        loop {
            let st = if block && !got {
                Some(self.comm.probe(Source::Any, TagMatch::Any)?)
            } else {
                self.comm.iprobe(Source::Any, TagMatch::Any)?
            };
            let Some(st) = st else { break };
            got = true;
            if st.tag == ERROR_TAG {
                return Err(super::remote_error(self.comm, st.source));
            }
            let msg = self.comm.recv::<u64>(Source::Rank(st.source), TagMatch::Tag(DES_TAG))?;
            self.handle(st.source, msg.data)?;
            if self.finished || self.ckpt_now {
                break;
            }
        }
        // A held second-pass token goes on once this rank has all its messages.
        if self.gvt.waiting.is_some() {
            let lvt = self.lvt();
            if let Some(t) = self.gvt.second_pass(lvt) {
                self.send_control(self.gvt.next(), t.encode(TOKEN))?;
            }
        }
        Ok(got)
    }

    /// A new GVT: commit and free everything before it.
    fn new_gvt(&mut self, g: Order) -> Result<()> {
        if let Some(k) = (0..self.errors.len()).filter(|&k| self.errors[k].1 < g).min_by_key(|&k| self.errors[k].1) {
            // The invalid send is part of the committed history now.
            return Err(self.errors.swap_remove(k).2);
        }
        self.gvt.gvt = g;
        self.gvt.open = false;
        self.requested = false;
        self.stats.gvt_rounds += 1;
        self.since_round = 0;
        let wants = self.model.wants_commits();
        self.note_memory();
        let (commits, buf) = (&mut self.commits, &mut self.commit_buf);
        let n = self.log.fossil(g, self.model, self.saving, self.lim, &self.lps, &mut self.scratch, |ev| {
            commits.add(ev);
            if wants {
                buf.push(ev.clone());
            }
        });
        self.uncommitted -= n;
        if wants {
            buf.sort_unstable_by_key(Event::order);
            for ev in buf.drain(..) {
                self.model.on_commit(&ev);
            }
        }
        if g == Order::MAX {
            self.finished = true;
            debug_assert!(self.log.held.is_empty(), "held messages at the end");
            debug_assert!(self.log.all_committed(), "an executed event left uncommitted");
            debug_assert!(self.cancelled.is_empty(), "cancellations without their event at the end");
        }
        Ok(())
    }

    /// Rank 0: starts a GVT round.
    fn start_round(&mut self) -> Result<()> {
        if self.comm.size() == 1 {
            let lvt = self.lvt();
            return self.new_gvt(lvt);
        }
        match self.cfg.gvt {
            GvtAlgorithm::Mattern => {
                self.flush()?;
                let t = self.gvt.start();
                self.send_control(1, t.encode(TOKEN))
            }
            GvtAlgorithm::Synchronous => {
                for r in 1..self.comm.size() {
                    self.send_control(r, vec![SYNC_START])?;
                }
                self.sync_gvt()
            }
        }
    }

    /// The synchronous GVT: stop, drain every message in flight, reduce the minimum.
    fn sync_gvt(&mut self) -> Result<()> {
        self.drain()?;
        let lvt = self.lvt();
        let all = self.comm.all_gather(vec![lvt.time, u64::from(lvt.src), lvt.seq])?;
        let g = all.iter().map(|w| Order { time: w[0], src: w[1] as u32, seq: w[2] }).min().expect("ranks");
        self.new_gvt(g)
    }

    /// Receives and sends until no message is in flight anywhere (collective).
    fn drain(&mut self) -> Result<()> {
        loop {
            self.flush()?;
            // Receive what has arrived (events may roll back and send anti-messages).
            while let Some(st) = self.comm.iprobe(Source::Any, TagMatch::Any)? {
                if st.tag == ERROR_TAG {
                    return Err(super::remote_error(self.comm, st.source));
                }
                let msg = self.comm.recv::<u64>(Source::Rank(st.source), TagMatch::Tag(DES_TAG))?;
                self.handle(st.source, msg.data)?;
            }
            self.flush()?;
            let in_flight = self.gvt.unmatched();
            let total = self.comm.all_reduce(&[in_flight], ReduceOp::Sum)?;
            if total[0] == 0 {
                return Ok(());
            }
        }
    }

    /// A checkpoint round (collective): a synchronous GVT, every LP rolled
    /// back to it and every speculative send cancelled, the cancellations
    /// drained; then the committed states and the events pending at or
    /// after GVT are saved. Nothing speculative is saved.
    fn checkpoint_round(&mut self, ck: &mut Checkpointer<'_, C>) -> Result<()> {
        self.ckpt_now = false;
        // Its round is shown to the checkpointer afterwards, like any other.
        self.sync_gvt()?;
        if self.finished {
            return Ok(());
        }
        let g = self.gvt.gvt;
        for x in 0..self.lps.len() {
            if self.log.after(x, g, true) {
                self.rollback(x, g, None)?;
            }
        }
        // Under lazy cancellation, messages held back by undone events are
        // cancelled now: nothing will re-execute them before the checkpoint.
        let mut antis = std::mem::take(&mut self.antis);
        for (_, held) in std::mem::take(&mut self.log.held) {
            antis.extend(held.into_iter().map(|x| x.ev));
        }
        let r = self.send_antis(&mut antis);
        self.antis = antis;
        r?;
        self.drain()?;
        let mut live = Vec::new();
        while let Some(ev) = self.pop_live() {
            live.push(ev);
        }
        for ev in &live {
            self.pending.push(ev.clone());
        }
        let cut = resume::Cut {
            boundary: self.stats.gvt_rounds,
            time: g.time_f64(),
            gvt: (g.time, g.src, g.seq),
            lps: resume::records(self.lps.iter().zip(self.map.mine.iter().copied())),
            pending: live.iter().map(resume::wire).collect(),
            commits: &self.commits,
            clocks: Vec::new(),
        };
        resume::save(self.comm, ck, cut)
    }

    /// Shows new GVT rounds to the checkpointer (firing injected faults);
    /// rank 0 starts a checkpoint round when one is due, the others join
    /// when told.
    fn checkpoints(&mut self, ck: &mut Option<&mut Checkpointer<'_, C>>) -> Result<()> {
        let Some(ck) = ck.as_mut() else { return Ok(()) };
        let mut due = false;
        while self.rounds_seen < self.stats.gvt_rounds {
            self.rounds_seen += 1;
            due |= ck.boundary(self.rounds_seen).map_err(resume::err)?.checkpoint;
        }
        if self.me() == 0 && due && !self.finished && !self.gvt.open {
            for r in 1..self.comm.size() {
                self.send_control(r, vec![CKPT_START])?;
            }
            self.checkpoint_round(ck)?;
        } else if self.ckpt_now {
            self.checkpoint_round(ck)?;
        }
        Ok(())
    }

    fn main(&mut self, progress: &mut ProgressFn<'_>, mut ck: Option<&mut Checkpointer<'_, C>>) -> Result<()> {
        let t = Instant::now();
        let me = self.me();
        let end = self.model.end_time();
        let mut idle = false;
        while !self.finished {
            self.poll(idle)?;
            self.checkpoints(&mut ck)?;
            if self.finished {
                break;
            }
            let mut n = self.cfg.batch;
            if let Some(rng) = &mut self.chaos {
                n = 1 + rng.below(u64::from(n)) as u32;
                if rng.below(8) == 0 {
                    std::thread::yield_now();
                }
            }
            let done = self.process(n)?;
            self.flush()?;
            self.since_round += u64::from(done);
            idle = done == 0;
            if me == 0 && !self.gvt.open && (idle || self.round_wanted || self.since_round >= self.cfg.gvt_interval) {
                self.round_wanted = false;
                self.start_round()?;
                idle = false; // look again before blocking: the round may have freed memory
                if let Some(f) = progress {
                    f(self.gvt.gvt.time_f64().min(end), end, self.commits.count);
                }
                self.checkpoints(&mut ck)?;
            }
        }
        self.stats.main_loop_s = t.elapsed().as_secs_f64();
        // Requests still in flight when the run ended: receive them.
        let total = self.comm.all_reduce(&[self.requests_sent], ReduceOp::Sum)?[0];
        if me == 0 {
            while self.requests_received < total {
                let msg = self.comm.recv::<u64>(Source::Any, TagMatch::Tag(DES_TAG))?;
                debug_assert_eq!(msg.data, [GVT_REQUEST]);
                self.requests_received += 1;
            }
        }
        Ok(())
    }
}
