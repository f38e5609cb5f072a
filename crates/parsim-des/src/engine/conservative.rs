//! Chandy–Misra–Bryant with null messages. Each rank is one LP group; every
//! message to a peer carries a promise, "nothing from me before t", with
//! t = min(next local event, my own bound) + lookahead. A rank executes its
//! events below the minimum promise of its peers; whenever its promise rises
//! it tells them, with its events or, if it has none for a peer, a null
//! message. A positive lookahead guarantees progress: the rank with the
//! globally earliest event can always execute it.
//!
//! Checkpoints are taken at a cut, coordinated by rank 0 without a global
//! barrier in the event loop. When one is due, rank 0 picks T: the first
//! window start at or above every promise it has sent, so no rank can have
//! executed an event at T or later, and tells every rank (in the same
//! ordered stream as its promises, so nobody passes T before knowing it).
//! Every rank executes its events below T, promises beyond T as usual, and
//! then sends every peer a *ready* marker, after which it sends nothing.
//! A rank holding every peer's marker has received every message sent
//! before the cut — the messages that were in flight across it — so its
//! pending set and its channel clocks are the cut's; after a barrier (so
//! that no rank's checkpoint traffic reaches one still waiting for
//! markers) all ranks save them together and carry on.

use std::time::Instant;

use parsim_comm::{Comm, Source, TagMatch};

use parsim_ckpt::Checkpointer;

use super::optimistic::resume;
use super::{
    events, execute, fail_everywhere, finish, init_lps, put_event, window_width, Commits, Limits, LpMap, Outbox,
    Report, DES_TAG, ERROR_TAG,
};
use crate::error::{DesError, Result};
use crate::model::{Event, Model};
use crate::queue::{Pending, PendingSet};
use crate::stats::DesStats;
use crate::{DesConfig, ProgressFn};

pub(crate) fn run<C: Comm, M: Model>(
    comm: &C,
    model: &M,
    cfg: &DesConfig,
    progress: &mut ProgressFn<'_>,
    ck: Option<&mut Checkpointer<'_, C>>,
) -> Result<Report<M::State>> {
    let t0 = Instant::now();
    let map = LpMap::new(model, comm.size(), comm.rank())?;
    let mut state = Cmb::<C, M>::new(comm, model, &map);
    let mut windows = match ck {
        Some(ck) => {
            ck.decide_locally();
            Some(resume::Windows { ck, width: window_width(model)?, shown: 0, flip: false })
        }
        None => None,
    };
    let lps = match state.main(cfg, progress, windows.as_mut()) {
        Ok(lps) => lps,
        Err(e) => return Err(fail_everywhere(comm, e)),
    };
    state.outbox.flush()?;
    let mut stats = state.stats;
    stats.committed = state.commits.count;
    stats.processed = state.commits.count;
    stats.total_s = t0.elapsed().as_secs_f64();
    finish(comm, stats, &state.commits, &map, lps)
}

struct Cmb<'a, C: Comm, M: Model> {
    comm: &'a C,
    model: &'a M,
    map: &'a LpMap,
    q: Pending<M::Payload>,
    /// The promise last received from each rank (∞ for this rank).
    in_clock: Vec<f64>,
    /// The promise last sent to each rank.
    sent: Vec<f64>,
    /// Events waiting to go to each rank (header word reserved).
    parts: Vec<Vec<u64>>,
    outbox: Outbox<C>,
    stats: DesStats,
    commits: Commits,
    /// The checkpoint under way: its cut time and boundary.
    cut: Option<(f64, u64)>,
    /// Ready markers received and not yet used by a checkpoint.
    ready: usize,
    /// Rank 0: a checkpoint is due and not yet started.
    due: bool,
}

/// The first word of a control message (a NaN, never a promise).
const CONTROL: u64 = u64::MAX;
/// Control kinds: a checkpoint's cut (then T, boundary), a ready marker.
const CUT: u64 = 0;
const READY: u64 = 1;

impl<'a, C: Comm, M: Model> Cmb<'a, C, M> {
    fn new(comm: &'a C, model: &'a M, map: &'a LpMap) -> Self {
        let (p, me) = (comm.size(), comm.rank());
        let la = model.lookahead();
        let mut in_clock = vec![la; p];
        in_clock[me] = f64::INFINITY;
        Cmb {
            comm,
            model,
            map,
            q: Pending::default(),
            in_clock,
            sent: vec![0.0; p],
            parts: vec![vec![0]; p],
            outbox: Outbox::new(),
            stats: DesStats::default(),
            commits: Commits::default(),
            cut: None,
            ready: 0,
            due: false,
        }
    }

    /// Takes up a restart: the LPs, their pending events, the committed
    /// digest, and the channel clocks (saved ones on as many ranks, else
    /// T + lookahead: every pending event is at T or later).
    fn restore(&mut self, r: resume::Restored<M::State, M::Payload>) -> Vec<super::Lp<M::State>> {
        let (p, me) = (self.comm.size(), self.comm.rank());
        let t = crate::model::time_from_key(r.gvt.time);
        if r.clocks.len() == p {
            (self.in_clock, self.sent) = r.clocks.iter().copied().unzip();
        } else {
            self.in_clock = vec![t + self.model.lookahead(); p];
        }
        self.in_clock[me] = f64::INFINITY;
        for ev in r.pending {
            self.q.push(ev);
        }
        (self.commits.digest, self.commits.count) = (r.digest, r.committed);
        r.lps
    }

    fn route(&mut self, ev: Event<M::Payload>) {
        let r = self.map.owner[ev.dest as usize] as usize;
        if r == self.comm.rank() {
            self.q.push(ev);
        } else {
            self.stats.remote_events += 1;
            put_event(&mut self.parts[r], &ev);
        }
    }

    /// Receives everything that has arrived; returns whether anything had.
    fn receive(&mut self, block: bool) -> Result<bool> {
        let mut got = false;
        loop {
            let st = if block && !got {
                Some(self.comm.probe(Source::Any, TagMatch::Any)?)
            } else {
                self.comm.iprobe(Source::Any, TagMatch::Any)?
            };
            let Some(st) = st else { return Ok(got) };
            got = true;
            if st.tag == ERROR_TAG {
                return Err(super::remote_error(self.comm, st.source));
            }
            let msg = self.comm.recv::<u64>(Source::Rank(st.source), TagMatch::Tag(DES_TAG))?;
            if msg.data[0] == CONTROL {
                match msg.data.get(1) {
                    Some(&CUT) if msg.data.len() == 4 => self.cut = Some((f64::from_bits(msg.data[2]), msg.data[3])),
                    Some(&READY) => self.ready += 1,
                    _ => return Err(DesError::Config(format!("rank {}: a malformed control message", st.source))),
                }
                continue;
            }
            let promise = f64::from_bits(msg.data[0]);
            let c = &mut self.in_clock[st.source];
            *c = c.max(promise);
            for ev in events::<M::Payload>(&msg.data[1..]) {
                self.q.push(ev);
            }
        }
    }

    /// Sends events and the new promise to every peer whose promise rose.
    fn tell(&mut self, promise: f64) -> Result<()> {
        for r in 0..self.comm.size() {
            if r == self.comm.rank() || (promise <= self.sent[r] && self.parts[r].len() == 1) {
                continue;
            }
            let mut body = std::mem::replace(&mut self.parts[r], vec![0]);
            body[0] = promise.to_bits();
            if body.len() == 1 {
                self.stats.null_messages += 1;
            }
            self.stats.messages += 1;
            self.sent[r] = self.sent[r].max(promise);
            self.outbox.send(self.comm, r, body)?;
        }
        Ok(())
    }

    fn main(
        &mut self,
        cfg: &DesConfig,
        progress: &mut ProgressFn<'_>,
        mut windows: Option<&mut resume::Windows<'_, '_, C>>,
    ) -> Result<Vec<super::Lp<M::State>>> {
        let (model, la, end) = (self.model, self.model.lookahead(), self.model.end_time());
        let lim = Limits::new(model, true);
        let mut out = Vec::new();
        let restored = match windows.as_mut().and_then(|w| w.ck.take_restart()) {
            Some(mut r) => Some(resume::load::<C, M::State, M::Payload>(self.comm, &mut r, self.map, cfg.seed)?),
            None => None,
        };
        let mut lps = match restored {
            Some(r) => {
                if let Some(w) = windows.as_mut() {
                    w.shown = r.rounds;
                }
                self.restore(r)
            }
            None => init_lps(model, self.map, cfg.seed, lim, &mut out)?,
        };
        for ev in out.drain(..) {
            self.route(ev);
        }
        let t = Instant::now();
        let wants_commits = model.wants_commits();
        let mut idle = false;
        let mut last_progress = Instant::now();
        loop {
            let got = self.receive(idle)?;
            let bound = self.in_clock.iter().copied().fold(f64::INFINITY, f64::min);
            let limit = self.cut.map_or(bound, |(t, _)| bound.min(t));
            let mut done = 0u32;
            while done < cfg.batch * 4 {
                match self.q.peek() {
                    Some(e) if e.time < limit => {}
                    _ => break,
                }
                let ev = self.q.pop().expect("peeked");
                let lp = &mut lps[self.map.local[ev.dest as usize] as usize];
                execute(model, lp, &ev, lim, &mut out)?;
                self.commits.add(&ev);
                if wants_commits {
                    model.on_commit(&ev);
                }
                for ev in out.drain(..) {
                    self.route(ev);
                }
                done += 1;
            }
            self.stats.peak_pending = self.stats.peak_pending.max(self.q.len() as u64);
            let lvt = self.q.peek().map_or(f64::INFINITY, |e| e.time).min(bound);
            let finished = lvt >= end;
            self.tell(if finished { f64::INFINITY } else { lvt + la })?;
            if let Some(w) = windows.as_mut() {
                self.due |= w.reach(lvt.min(end))?;
                if std::mem::take(&mut w.flip) {
                    resume::flip_bit(&mut lps);
                }
                if self.comm.rank() == 0 && self.due && self.cut.is_none() && !finished {
                    self.due = false;
                    self.start_cut(w.width)?;
                }
                if let Some((t, b)) = self.cut {
                    if lvt >= t {
                        self.checkpoint(w, t, b, &lps)?;
                        // Look again before blocking: nothing more may come.
                        idle = false;
                        continue;
                    }
                }
            }
            if finished && self.in_clock.iter().all(|c| c.is_infinite()) {
                break;
            }
            idle = done == 0 && !got;
            if let Some(f) = progress {
                if last_progress.elapsed().as_millis() >= 20 {
                    last_progress = Instant::now();
                    f(lvt.min(end), end, self.commits.count);
                }
            }
        }
        self.stats.main_loop_s = t.elapsed().as_secs_f64();
        Ok(lps)
    }

    /// Rank 0: chooses the cut and tells every rank.
    fn start_cut(&mut self, width: f64) -> Result<()> {
        let me = self.comm.rank();
        // Every event rank 0 has executed lies below its local time, and
        // every other rank's below some promise rank 0 has sent it.
        let next = self.q.peek().map_or(f64::INFINITY, |e| e.time);
        let bound = self.in_clock.iter().copied().fold(f64::INFINITY, f64::min);
        let promised = (0..self.comm.size()).filter(|&r| r != me).map(|r| self.sent[r]).fold(0.0, f64::max);
        let floor = next.min(bound).max(promised).max(self.model.lookahead());
        let b = (floor / width).ceil();
        let t = b * width;
        if t >= self.model.end_time() || t.is_nan() {
            return Ok(()); // nothing left to save
        }
        self.cut = Some((t, b as u64));
        for r in (0..self.comm.size()).filter(|&r| r != me) {
            self.outbox.send(self.comm, r, vec![CONTROL, CUT, t.to_bits(), b as u64])?;
        }
        Ok(())
    }

    /// This rank has reached the cut at `t`: marks it to every peer, waits
    /// for theirs (receiving what was in flight), and saves (collective).
    fn checkpoint(
        &mut self,
        w: &mut resume::Windows<'_, '_, C>,
        t: f64,
        b: u64,
        lps: &[super::Lp<M::State>],
    ) -> Result<()> {
        let (p, me) = (self.comm.size(), self.comm.rank());
        for r in (0..p).filter(|&r| r != me) {
            self.outbox.send(self.comm, r, vec![CONTROL, READY])?;
        }
        while self.ready < p - 1 {
            self.receive(true)?;
        }
        self.ready -= p - 1;
        // Nobody saves (sending partner copies, which a rank still waiting
        // here would take for engine traffic) before everyone is here.
        self.comm.barrier()?;
        w.show(b)?;
        let clocks = self.in_clock.iter().copied().zip(self.sent.iter().copied()).collect();
        let cut = resume::Cut {
            boundary: b,
            time: t,
            gvt: (crate::model::time_key(t), 0, 0),
            lps: resume::records(lps.iter().zip(self.map.mine.iter().copied())),
            pending: resume::pending_of(&mut self.q),
            commits: &self.commits,
            clocks,
        };
        resume::save(self.comm, w.ck, cut)?;
        self.cut = None;
        Ok(())
    }
}
