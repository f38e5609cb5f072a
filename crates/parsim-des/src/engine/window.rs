//! Synchronous windows (YAWNS, ROSS's conservative mode): every rank executes
//! all its events below LBTS + lookahead, where LBTS is the global minimum of
//! pending timestamps; then the ranks exchange the events they sent to each
//! other and reduce the next minimum. No event in a window can create one in
//! the same window, so nothing is ever out of order.

use std::time::Instant;

use parsim_comm::{Comm, ReduceOp};

use super::optimistic::resume;
use super::{events, execute, finish, init_lps, put_event, Commits, Limits, LpMap, Report};
use crate::error::{DesError, Result};
use crate::model::{Event, Model};
use crate::queue::{Pending, PendingSet};
use crate::stats::DesStats;
use crate::{DesConfig, ProgressFn};
use parsim_ckpt::Checkpointer;

pub(crate) fn run<C: Comm, M: Model>(
    comm: &C,
    model: &M,
    cfg: &DesConfig,
    progress: &mut ProgressFn<'_>,
    mut ck: Option<&mut Checkpointer<'_, C>>,
) -> Result<Report<M::State>> {
    let t0 = Instant::now();
    let (p, me) = (comm.size(), comm.rank());
    let map = LpMap::new(model, p, me)?;
    let lim = Limits::new(model, true);
    let la = model.lookahead();
    let mut stats = DesStats::default();
    let mut commits = Commits::default();
    let mut out = Vec::new();
    let mut error = None;
    let mut q: Pending<M::Payload> = Pending::default();
    let restored = match ck.as_mut().and_then(|c| c.take_restart()) {
        Some(mut r) => Some(resume::load::<C, M::State, M::Payload>(comm, &mut r, &map, cfg.seed)?),
        None => None,
    };
    let mut lps = match restored {
        Some(r) => {
            for ev in r.pending {
                q.push(ev);
            }
            (commits.digest, commits.count, stats.gvt_rounds) = (r.digest, r.committed, r.rounds);
            r.lps
        }
        None => init_lps(model, &map, cfg.seed, lim, &mut out).map_err(|e| error = Some(e)).unwrap_or_default(),
    };
    let mut parts: Vec<Vec<u64>> = vec![Vec::new(); p];
    let route =
        |ev: Event<M::Payload>, q: &mut Pending<M::Payload>, parts: &mut Vec<Vec<u64>>, stats: &mut DesStats| {
            let r = map.owner[ev.dest as usize] as usize;
            if r == me {
                q.push(ev);
            } else {
                stats.remote_events += 1;
                put_event(&mut parts[r], &ev);
            }
        };
    for ev in out.drain(..) {
        route(ev, &mut q, &mut parts, &mut stats);
    }
    let t = Instant::now();
    let wants_commits = model.wants_commits();
    let end = model.end_time();
    loop {
        // Exchange what the last window sent, then agree on the next window.
        let sent = std::mem::replace(&mut parts, vec![Vec::new(); p]);
        stats.messages += sent.iter().enumerate().filter(|(r, v)| *r != me && !v.is_empty()).count() as u64;
        for body in comm.all_to_all_v(sent)? {
            for ev in events::<M::Payload>(&body) {
                q.push(ev);
            }
        }
        stats.peak_pending = stats.peak_pending.max(q.len() as u64);
        let next = q.peek().map_or(f64::INFINITY, |e| e.time);
        let ok = if error.is_some() { 0.0 } else { 1.0 };
        let agreed = comm.all_reduce(&[next, ok], ReduceOp::Min)?;
        if agreed[1] == 0.0 {
            return Err(first_error(comm, error)?);
        }
        let lbts = agreed[0];
        if lbts >= end {
            break;
        }
        // Between two windows every event is in its destination's pending
        // set: nothing in flight, nothing speculative.
        if let Some(ck) = ck.as_mut() {
            let act = ck.boundary(stats.gvt_rounds).map_err(resume::err)?;
            if act.bitflip {
                resume::flip_bit(&mut lps);
            }
            if act.checkpoint {
                let cut = resume::Cut {
                    boundary: stats.gvt_rounds,
                    time: lbts,
                    gvt: (crate::model::time_key(lbts), 0, 0),
                    lps: resume::records(lps.iter().zip(map.mine.iter().copied())),
                    pending: resume::pending_of(&mut q),
                    commits: &commits,
                    clocks: Vec::new(),
                };
                resume::save(comm, ck, cut)?;
            }
        }
        stats.gvt_rounds += 1;
        let horizon = lbts + la;
        while q.peek().is_some_and(|e| e.time < horizon) {
            let ev = q.pop().expect("peeked");
            let lp = &mut lps[map.local[ev.dest as usize] as usize];
            if let Err(e) = execute(model, lp, &ev, lim, &mut out) {
                error = Some(e);
                break;
            }
            commits.add(&ev);
            if wants_commits {
                model.on_commit(&ev);
            }
            for ev in out.drain(..) {
                route(ev, &mut q, &mut parts, &mut stats);
            }
        }
        if let Some(f) = progress {
            f(lbts, end, commits.count);
        }
    }
    stats.main_loop_s = t.elapsed().as_secs_f64();
    stats.committed = commits.count;
    stats.processed = commits.count;
    stats.total_s = t0.elapsed().as_secs_f64();
    finish(comm, stats, &commits, &map, lps)
}

/// Every rank gets the lowest-ranked rank's error.
fn first_error<C: Comm>(comm: &C, mine: Option<DesError>) -> Result<DesError> {
    let all = comm.all_gather_value(&mine.as_ref().map(ToString::to_string))?;
    let (rank, message) = all.into_iter().enumerate().find_map(|(r, m)| m.map(|m| (r, m))).expect("someone failed");
    Ok(match mine {
        Some(e) if rank == comm.rank() => e,
        _ => DesError::OnRank { rank, message },
    })
}
