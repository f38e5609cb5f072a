//! Checkpoints of the epidemic at a day boundary, in global ids: every
//! owned agent's state and infection day, the pending schedule (onsets,
//! isolations, exits, infection attempts on future days), whether each
//! agent's leaving S has been announced to the ranks holding its ghost, the
//! curve so far and the counters. A restart on any rank count reads each
//! old piece on one rank and sends every record to its agent's new owner
//! (no rank reads the whole checkpoint); the owners then tell their ghosts'
//! holders what was announced, and every rank recounts.

use parsim_ckpt::{Checkpointer, CkptError, Restart};
use parsim_comm::{Comm, ReduceOp};
use parsim_graph::{deliver_pieces, Directory, DistGraph, Emit, Records};
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
    /// Owned agents that left S without being announced yet.
    pub unannounced: Vec<usize>,
    pub onset: Vec<(u32, usize)>,
    pub iso: Vec<(u32, usize)>,
    pub exit: Vec<(u32, usize)>,
    pub attempts: Vec<(u32, usize)>,
    pub draws: u64,
    pub changes_sent: u64,
}

/// This rank's share of a checkpoint taken on any number of ranks, on its
/// part `g` (collective). Each old piece is read by one rank (piece `k` by
/// rank `k mod p`, the one that verified it, one piece per round), which
/// sends every agent's record and schedule entry to the agent's new owner
/// through [`deliver_pieces`]' directory: no rank reads the whole
/// checkpoint or holds an owner map of the population. The caller then
/// tells the ghost holders which agents' leaving S was announced
/// ([`crate::balance::announce`]).
pub(crate) fn load<C: Comm>(comm: &C, r: &mut Restart, g: &DistGraph) -> Result<Restored, AbmError> {
    let me = comm.rank();
    let mut head: Option<(u32, Vec<[u64; 7]>)> = None;
    let mut counters = [0u64; 2];
    let wants: Vec<u32> = (0..g.owned()).map(|i| g.global(i)).collect();
    let dir = Directory::new(comm, g.global_vertices(), &wants)?;
    drop(wants);
    let mut out = Restored::empty(g.owned());
    let pieces = r.manifest.ranks;
    let read = |k: usize, emit: &mut Emit<'_>| -> Result<(), AbmError> {
        let piece: Piece = r.read(k).map_err(err)?;
        if k == 0 {
            head = Some((piece.days, piece.curve));
        }
        counters[0] += piece.draws;
        counters[1] += piece.changes_sent;
        for &(gid, st, inf, iso, announced) in &piece.agents {
            let [i0, i1] = inf.to_le_bytes();
            let [s0, s1, s2, s3] = iso.to_le_bytes();
            emit(gid, &[AGENT, st, i0, i1, s0, s1, s2, s3, u8::from(announced)])?;
        }
        for (kind, list) in [&piece.onset, &piece.iso, &piece.exit, &piece.attempts].into_iter().enumerate() {
            for &(t, gid) in list {
                let [t0, t1, t2, t3] = t.to_le_bytes();
                emit(gid, &[ONSET + kind as u8, t0, t1, t2, t3])?;
            }
        }
        Ok(())
    };
    let take = |got: Records| -> Result<(), AbmError> {
        for (gid, b) in got.iter() {
            let word = |at: usize| u32::from_le_bytes([b[at], b[at + 1], b[at + 2], b[at + 3]]);
            match (b.first().copied(), b.len()) {
                (Some(AGENT), 9) => {
                    out.agent(g, me, (gid, b[1], u16::from_le_bytes([b[2], b[3]]), word(4), b[8] == 1))?
                }
                (Some(k @ ONSET..=ATTEMPT), 5) => out.scheduled(g, usize::from(k - ONSET), word(1), gid),
                _ => return Err(AbmError::Invariant(format!("a checkpoint record for agent {gid} is malformed"))),
            }
        }
        Ok(())
    };
    deliver_pieces(comm, &dir, pieces, read, take)?;
    let (days, curve) = comm.broadcast_value(0, &head)?.unwrap_or_default();
    let counters = comm.all_reduce(&counters, ReduceOp::Sum)?;
    out.days = days;
    out.curve = curve
        .iter()
        .map(|c| DayCounts { s: c[0], e: c[1], i: c[2], r: c[3], v: c[4], new: c[5], isolated: c[6] })
        .collect();
    if me == 0 {
        (out.draws, out.changes_sent) = (counters[0], counters[1]);
    }
    out.finish(g)
}

/// Record kinds of [`load`]'s routing: an agent, then the four schedules.
const AGENT: u8 = 0;
const ONSET: u8 = 1;
const ATTEMPT: u8 = 4;

/// What this rank's part `g` holds of `pieces` (migrating to this rank,
/// which hold only agents it owns now; the first carries the day).
pub(crate) fn restore(
    pieces: impl IntoIterator<Item = Result<Piece, AbmError>>,
    g: &DistGraph,
    me: usize,
) -> Result<Restored, AbmError> {
    let mut out = Restored::empty(g.owned());
    for (k, p) in pieces.into_iter().enumerate() {
        let p = p?;
        if k == 0 {
            out.days = p.days;
        }
        for &a in &p.agents {
            out.agent(g, me, a)?;
        }
        for (kind, list) in [&p.onset, &p.iso, &p.exit, &p.attempts].into_iter().enumerate() {
            for &(t, gid) in list {
                out.scheduled(g, kind, t, gid);
            }
        }
    }
    out.finish(g)
}

impl Restored {
    fn empty(n_own: usize) -> Restored {
        Restored {
            days: 0,
            curve: Vec::new(),
            owned: Vec::with_capacity(n_own),
            unannounced: Vec::new(),
            onset: Vec::new(),
            iso: Vec::new(),
            exit: Vec::new(),
            attempts: Vec::new(),
            draws: 0,
            changes_sent: 0,
        }
    }

    /// An agent's record, which must be one of this rank's.
    fn agent(&mut self, g: &DistGraph, me: usize, a: (u32, u8, u16, u32, bool)) -> Result<(), AbmError> {
        let (gid, st, inf, iso, announced) = a;
        match g.local(gid).filter(|&l| l < g.owned()) {
            Some(l) => {
                self.owned.push((l, st, inf, iso));
                if st != crate::seir::state::S && !announced {
                    self.unannounced.push(l);
                }
                Ok(())
            }
            None => Err(AbmError::Invariant(format!("agent {gid} reached rank {me}, which does not own it"))),
        }
    }

    /// A schedule entry (onset, isolation, exit, attempt) of one of this
    /// rank's agents (others' are ignored).
    fn scheduled(&mut self, g: &DistGraph, kind: usize, t: u32, gid: u32) {
        if let Some(l) = g.local(gid).filter(|&l| l < g.owned()) {
            [&mut self.onset, &mut self.iso, &mut self.exit, &mut self.attempts][kind].push((t, l));
        }
    }

    /// Checks that every owned agent arrived; puts the schedules in canonical order.
    fn finish(mut self, g: &DistGraph) -> Result<Restored, AbmError> {
        let n_own = g.owned();
        if self.owned.len() != n_own {
            return Err(AbmError::config(
                "checkpoint",
                format!("the state holds {} of this rank's {n_own} agents", self.owned.len()),
            ));
        }
        // Records arrive in whatever order the senders had them; the
        // schedules' order within a day does not change the trajectory, but
        // keep it canonical anyway.
        for v in [&mut self.onset, &mut self.iso, &mut self.exit, &mut self.attempts] {
            v.sort_unstable_by_key(|&(t, l)| (t, g.global(l)));
        }
        self.unannounced.sort_unstable_by_key(|&l| g.global(l));
        Ok(self)
    }
}
