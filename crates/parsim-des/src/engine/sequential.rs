//! The sequential engine: one pending-event set, every LP on rank 0.
//!
//! With a checkpointer, rank 0 shows it every window boundary it crosses
//! (windows of the model's lookahead, see [`super::window_width`]) and,
//! when one is due, tells the other ranks, which wait on it, to join the
//! checkpoint: the LPs and the events pending at the window's start.

use std::time::Instant;

use parsim_ckpt::Checkpointer;
use parsim_comm::Comm;
use serde::{Deserialize, Serialize};

use super::optimistic::resume;
use super::{execute, finish, init_lps, window_width, Commits, Limits, LpMap, Report};
use crate::error::{DesError, Result};
use crate::model::Model;
use crate::queue::PendingSet;
use crate::stats::DesStats;
use crate::{DesConfig, ProgressFn};

/// What rank 0 tells the others.
#[derive(Serialize, Deserialize)]
enum Command {
    /// Boundary `b` was crossed and is checkpointed.
    Checkpoint(u64),
    /// The run ended after boundary `b` (with rank 0's error, if any).
    Done(u64, Option<String>),
}

/// Runs `model` on rank 0 with pending set `Q`; other ranks only join the
/// checkpoints and the final report.
pub(crate) fn run<C: Comm, M: Model, Q: PendingSet<M::Payload>>(
    comm: &C,
    model: &M,
    cfg: &DesConfig,
    progress: &mut ProgressFn<'_>,
    ck: Option<&mut Checkpointer<'_, C>>,
) -> Result<Report<M::State>> {
    let t0 = Instant::now();
    let me = comm.rank();
    let map = LpMap::new(model, 1, me)?;
    let mut stats = DesStats::default();
    let mut commits = Commits::default();
    let mut saver = match ck {
        Some(ck) => {
            ck.decide_locally();
            Some(resume::Windows { ck, width: window_width(model)?, shown: 0, flip: false })
        }
        None => None,
    };
    let restored = match saver.as_mut().and_then(|s| s.ck.take_restart()) {
        Some(mut r) => Some(resume::load::<C, M::State, M::Payload>(comm, &mut r, &map, cfg.seed)?),
        None => None,
    };
    if let (Some(s), Some(r)) = (saver.as_mut(), restored.as_ref()) {
        s.shown = r.rounds;
    }
    let lps = if me == 0 {
        let outcome =
            main_loop::<C, M, Q>(comm, model, cfg, &map, &mut stats, &mut commits, progress, saver.as_mut(), restored);
        let last = saver.as_ref().map_or(0, |s| s.shown);
        let failure = outcome.as_ref().err().map(ToString::to_string);
        comm.broadcast_value(0, &Command::Done(last, failure))?;
        outcome?
    } else {
        follow(comm, saver.as_mut())?;
        Vec::new()
    };
    stats.total_s = t0.elapsed().as_secs_f64();
    finish(comm, stats, &commits, &map, lps)
}

/// A rank other than 0: joins rank 0's checkpoints until it is done.
fn follow<C: Comm>(comm: &C, mut saver: Option<&mut resume::Windows<'_, '_, C>>) -> Result<()> {
    let none = Commits::default();
    loop {
        match comm.broadcast_value(0, &Command::Done(0, None))? {
            Command::Checkpoint(b) => {
                let s =
                    saver.as_mut().ok_or_else(|| DesError::Config("rank 0 checkpoints, this rank cannot".into()))?;
                s.show(b)?;
                let cut = resume::Cut::<()> {
                    boundary: b,
                    time: b as f64 * s.width,
                    gvt: (crate::model::time_key(b as f64 * s.width), 0, 0),
                    lps: Vec::new(),
                    pending: Vec::new(),
                    commits: &none,
                    clocks: Vec::new(),
                };
                resume::save(comm, s.ck, cut)?;
            }
            Command::Done(b, failure) => {
                if let Some(s) = saver.as_mut() {
                    s.show(b)?;
                }
                return match failure {
                    Some(message) => Err(DesError::OnRank { rank: 0, message }),
                    None => Ok(()),
                };
            }
        }
    }
}

#[allow(clippy::too_many_arguments)]
fn main_loop<C: Comm, M: Model, Q: PendingSet<M::Payload>>(
    comm: &C,
    model: &M,
    cfg: &DesConfig,
    map: &LpMap,
    stats: &mut DesStats,
    commits: &mut Commits,
    progress: &mut ProgressFn<'_>,
    mut saver: Option<&mut resume::Windows<'_, '_, C>>,
    restored: Option<resume::Restored<M::State, M::Payload>>,
) -> Result<Vec<super::Lp<M::State>>> {
    let lim = Limits::new(model, false);
    let mut out = Vec::new();
    let mut q = Q::default();
    let mut lps = match restored {
        Some(r) => {
            (commits.digest, commits.count) = (r.digest, r.committed);
            out = r.pending;
            r.lps
        }
        None => init_lps(model, map, cfg.seed, lim, &mut out)?,
    };
    for ev in out.drain(..) {
        q.push(ev);
    }
    let t = Instant::now();
    let wants_commits = model.wants_commits();
    let end = model.end_time();
    let mut peak = q.len();
    // The start of the next window (checkpointed runs only).
    let mut next_window = saver.as_ref().map_or(f64::INFINITY, |s| (s.shown + 1) as f64 * s.width);
    while let Some(time) = q.peek().map(|e| e.time) {
        if time >= next_window {
            let s = saver.as_mut().expect("windows are counted with a checkpointer");
            let b = ((time / s.width).floor() as u64).max(s.shown + 1);
            let due = s.show(b)?;
            if std::mem::take(&mut s.flip) {
                resume::flip_bit(&mut lps);
            }
            if due {
                comm.broadcast_value(0, &Command::Checkpoint(b))?;
                let cut = resume::Cut {
                    boundary: b,
                    time: b as f64 * s.width,
                    gvt: (crate::model::time_key(b as f64 * s.width), 0, 0),
                    lps: resume::records(lps.iter().zip(map.mine.iter().copied())),
                    pending: resume::pending_of(&mut q),
                    commits,
                    clocks: Vec::new(),
                };
                resume::save(comm, s.ck, cut)?;
            }
            next_window = (b + 1) as f64 * s.width;
        }
        let ev = q.pop().expect("peeked");
        execute(model, &mut lps[ev.dest as usize], &ev, lim, &mut out)?;
        commits.add(&ev);
        if wants_commits {
            model.on_commit(&ev);
        }
        for e in out.drain(..) {
            q.push(e);
        }
        if commits.count & 0xffff == 0 {
            peak = peak.max(q.len());
            if let Some(p) = progress {
                p(ev.time, end, commits.count);
            }
        }
    }
    stats.main_loop_s = t.elapsed().as_secs_f64();
    stats.committed = commits.count;
    stats.processed = commits.count;
    stats.peak_pending = peak as u64;
    stats.peak_memory_bytes = (peak * std::mem::size_of::<crate::Event<M::Payload>>()) as u64;
    Ok(lps)
}
