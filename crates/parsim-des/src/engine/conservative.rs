//! Chandy–Misra–Bryant with null messages. Each rank is one LP group; every
//! message to a peer carries a promise, "nothing from me before t", with
//! t = min(next local event, my own bound) + lookahead. A rank executes its
//! events below the minimum promise of its peers; whenever its promise rises
//! it tells them, with its events or, if it has none for a peer, a null
//! message. A positive lookahead guarantees progress: the rank with the
//! globally earliest event can always execute it.

use std::time::Instant;

use parsim_comm::{Comm, Source, TagMatch};

use super::{
    events, execute, fail_everywhere, finish, init_lps, put_event, Commits, Limits, LpMap, Outbox, Report, DES_TAG,
    ERROR_TAG,
};
use crate::error::Result;
use crate::model::{Event, Model};
use crate::queue::{Pending, PendingSet};
use crate::stats::DesStats;
use crate::{DesConfig, ProgressFn};

pub(crate) fn run<C: Comm, M: Model>(
    comm: &C,
    model: &M,
    cfg: &DesConfig,
    progress: &mut ProgressFn<'_>,
) -> Result<Report<M::State>> {
    let t0 = Instant::now();
    let map = LpMap::new(model, comm.size(), comm.rank())?;
    let mut state = Cmb::<C, M>::new(comm, model, &map);
    let lps = match state.main(cfg, progress) {
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
}

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
        }
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

    fn main(&mut self, cfg: &DesConfig, progress: &mut ProgressFn<'_>) -> Result<Vec<super::Lp<M::State>>> {
        let (model, la, end) = (self.model, self.model.lookahead(), self.model.end_time());
        let lim = Limits::new(model, true);
        let mut out = Vec::new();
        let mut lps = init_lps(model, self.map, cfg.seed, lim, &mut out)?;
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
            let mut done = 0u32;
            while done < cfg.batch * 16 {
                match self.q.peek() {
                    Some(e) if e.time < bound => {}
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
}
