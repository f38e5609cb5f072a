//! The sequential engine: one pending-event set, every LP on rank 0.

use std::time::Instant;

use parsim_comm::Comm;

use super::{execute, finish, init_lps, Commits, Limits, LpMap, Report};
use crate::error::{DesError, Result};
use crate::model::Model;
use crate::queue::PendingSet;
use crate::stats::DesStats;
use crate::{DesConfig, ProgressFn};

/// Runs `model` on rank 0 with pending set `Q`; other ranks only join the final report.
pub(crate) fn run<C: Comm, M: Model, Q: PendingSet<M::Payload>>(
    comm: &C,
    model: &M,
    cfg: &DesConfig,
    progress: &mut ProgressFn<'_>,
) -> Result<Report<M::State>> {
    let t0 = Instant::now();
    let map = LpMap::new(model, 1, comm.rank())?;
    let mut stats = DesStats::default();
    let mut commits = Commits::default();
    let outcome = if comm.rank() == 0 {
        main_loop::<M, Q>(model, cfg, &map, &mut stats, &mut commits, progress)
    } else {
        Ok(Vec::new())
    };
    // Every rank learns whether rank 0 failed, and why.
    let failure = comm.broadcast_value(0, &outcome.as_ref().err().map(ToString::to_string))?;
    let lps = match (outcome, failure) {
        (Err(e), _) => return Err(e),
        (Ok(_), Some(message)) => return Err(DesError::OnRank { rank: 0, message }),
        (Ok(lps), None) => lps,
    };
    stats.total_s = t0.elapsed().as_secs_f64();
    finish(comm, stats, &commits, &map, lps)
}

fn main_loop<M: Model, Q: PendingSet<M::Payload>>(
    model: &M,
    cfg: &DesConfig,
    map: &LpMap,
    stats: &mut DesStats,
    commits: &mut Commits,
    progress: &mut ProgressFn<'_>,
) -> Result<Vec<super::Lp<M::State>>> {
    let lim = Limits::new(model, false);
    let mut out = Vec::new();
    let mut lps = init_lps(model, map, cfg.seed, lim, &mut out)?;
    let mut q = Q::default();
    for ev in out.drain(..) {
        q.push(ev);
    }
    let t = Instant::now();
    let wants_commits = model.wants_commits();
    let end = model.end_time();
    let mut peak = q.len();
    while let Some(ev) = q.pop() {
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
