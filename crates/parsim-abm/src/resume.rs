//! Checkpoints of the epidemic at a day boundary, in global ids: every
//! owned agent's state and infection day, the pending schedule (onsets,
//! isolations, exits, infection attempts on future days), whether each
//! agent's leaving S has been announced to the ranks holding its ghost, the
//! curve so far and the counters. A restart on another partition keeps the
//! agents it owns and the announcements about its ghosts, and recounts.

use parsim_ckpt::{Checkpointer, CkptError, Restart};
use parsim_comm::Comm;
use parsim_graph::DistGraph;
use serde::{Deserialize, Serialize};
use serde_json::json;

use crate::error::AbmError;
use crate::seir::DayCounts;

/// One rank's part of the state.
#[derive(Serialize, Deserialize, Default)]
pub(crate) struct Piece {
    /// Days done.
    pub days: u32,
    /// The global curve so far, `[s, e, i, r, v, new, isolated]` per day.
    pub curve: Vec<[u64; 7]>,
    /// (global id, state, infection day, isolation day, announced).
    pub agents: Vec<(u32, u8, u16, u32, bool)>,
    /// (day, global id) of pending onsets, isolations, exits, attempts.
    pub onset: Vec<(u32, u32)>,
    pub iso: Vec<(u32, u32)>,
    pub exit: Vec<(u32, u32)>,
    pub attempts: Vec<(u32, u32)>,
    /// This rank's counters.
    pub draws: u64,
    pub changes_sent: u64,
}

pub(crate) fn err(e: CkptError) -> AbmError {
    match e {
        CkptError::Comm(c) => AbmError::Comm(c),
        other => AbmError::config("checkpoint", other.to_string()),
    }
}

/// The schedule lists of days after `from`, as (day, global id).
pub(crate) fn schedule(lists: &[Vec<u32>], from: usize, g: &DistGraph) -> Vec<(u32, u32)> {
    lists
        .iter()
        .enumerate()
        .skip(from)
        .flat_map(|(t, l)| l.iter().map(move |&a| (t as u32, g.global(a as usize))))
        .collect()
}

/// Saves `piece` (collective).
pub(crate) fn save<C: Comm>(ck: &mut Checkpointer<'_, C>, piece: &Piece, g: &DistGraph) -> Result<(), AbmError> {
    let meta = json!({"agents": piece.agents.len()});
    let partition = json!({"owned": g.owned()});
    ck.save(u64::from(piece.days), json!(piece.days), meta, partition, piece).map_err(err)
}

/// What a restart restores for this rank.
pub(crate) struct Restored {
    pub days: u32,
    pub curve: Vec<DayCounts>,
    /// (local id, state, infection day, isolation day).
    pub owned: Vec<(usize, u8, u16, u32)>,
    /// Ghost global ids whose leaving S was announced.
    pub gone: Vec<u32>,
    /// Owned agents that left S without being announced yet.
    pub unannounced: Vec<usize>,
    pub onset: Vec<(u32, usize)>,
    pub iso: Vec<(u32, usize)>,
    pub exit: Vec<(u32, usize)>,
    pub attempts: Vec<(u32, usize)>,
    pub draws: u64,
    pub changes_sent: u64,
}

/// Reads every old piece, keeping what this rank's part `g` holds.
pub(crate) fn load(r: &mut Restart, g: &DistGraph, me: usize) -> Result<Restored, AbmError> {
    let ranks = r.manifest.ranks;
    restore((0..ranks).map(|k| r.read(k).map_err(err)), g, me, true)
}

/// Keeps what this rank's part `g` holds of `pieces` (all ranks' pieces of
/// a checkpoint, `all`, whose first carries the curve and whose counters
/// rank 0 sums; or the pieces migrating to this rank, which hold only
/// agents it owns now).
pub(crate) fn restore(
    pieces: impl IntoIterator<Item = Result<Piece, AbmError>>,
    g: &DistGraph,
    me: usize,
    all: bool,
) -> Result<Restored, AbmError> {
    let n_own = g.owned();
    let mut out = Restored {
        days: 0,
        curve: Vec::new(),
        owned: Vec::with_capacity(n_own),
        gone: Vec::new(),
        unannounced: Vec::new(),
        onset: Vec::new(),
        iso: Vec::new(),
        exit: Vec::new(),
        attempts: Vec::new(),
        draws: 0,
        changes_sent: 0,
    };
    let own = |gid: u32| g.local(gid).filter(|&l| l < n_own);
    for (k, p) in pieces.into_iter().enumerate() {
        let p = p?;
        if k == 0 {
            out.days = p.days;
            out.curve = p
                .curve
                .iter()
                .map(|c| DayCounts { s: c[0], e: c[1], i: c[2], r: c[3], v: c[4], new: c[5], isolated: c[6] })
                .collect();
        }
        if me == 0 && all {
            out.draws += p.draws;
            out.changes_sent += p.changes_sent;
        }
        for &(gid, st, inf, iso, announced) in &p.agents {
            match g.local(gid) {
                Some(l) if l < n_own => {
                    out.owned.push((l, st, inf, iso));
                    if st != crate::seir::state::S && !announced {
                        out.unannounced.push(l);
                    }
                }
                Some(_) if announced => out.gone.push(gid),
                _ if !all => {
                    return Err(AbmError::Invariant(format!(
                        "agent {gid} migrated to rank {me}, which does not own it"
                    )))
                }
                _ => {}
            }
        }
        let mine = |v: &[(u32, u32)], into: &mut Vec<(u32, usize)>| {
            into.extend(v.iter().filter_map(|&(t, gid)| own(gid).map(|l| (t, l))));
        };
        mine(&p.onset, &mut out.onset);
        mine(&p.iso, &mut out.iso);
        mine(&p.exit, &mut out.exit);
        mine(&p.attempts, &mut out.attempts);
    }
    if out.owned.len() != n_own {
        return Err(AbmError::config(
            "checkpoint",
            format!("the state holds {} of this rank's {n_own} agents", out.owned.len()),
        ));
    }
    // The pieces arrive in old-rank order; the schedules' order within a
    // day does not change the trajectory, but keep it canonical anyway.
    for v in [&mut out.onset, &mut out.iso, &mut out.exit, &mut out.attempts] {
        v.sort_unstable_by_key(|&(t, l)| (t, g.global(l)));
    }
    out.unannounced.sort_unstable_by_key(|&l| g.global(l));
    Ok(out)
}
