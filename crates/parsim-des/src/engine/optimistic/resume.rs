//! DES checkpoints, one format for every engine.
//!
//! Time Warp takes them right after a GVT round: every LP rolled
//! back to GVT (its committed state), the events pending at or after GVT
//! once every speculative send has been cancelled and no message is in
//! flight, and the committed events' partial digest. Nothing speculative is
//! saved. The window engine takes them between two windows, when every
//! event sent is in its destination's pending set; the sequential engine
//! at the start of a lookahead-wide window of simulated time; CMB at a cut
//! at such a window's start, with the messages that were in flight across
//! it received first and its channel clocks saved. A restart deals the LPs
//! and their events out over the new ranks.

use parsim_ckpt::{CkptError, Restart};
use parsim_core::SetDigest;
use serde::{Deserialize, Serialize};

use parsim_ckpt::Checkpointer;
use parsim_comm::{Comm, ReduceOp};

use crate::engine::{lp_key, Commits, Lp, LpMap};
use crate::error::DesError;
use crate::model::{Event, Order};
use crate::payload::Payload;
use crate::queue::PendingSet;

/// An event as bytes: time, destination, source, sequence number, payload.
pub(crate) type Wire = (f64, u32, u32, u64, Vec<u8>);

/// One rank's part.
#[derive(Serialize, Deserialize)]
pub(crate) struct Piece<S> {
    /// GVT: time key, source, sequence.
    pub gvt: (u64, u32, u64),
    /// GVT rounds so far.
    pub rounds: u64,
    pub lps: Vec<Record<S>>,
    pub pending: Vec<Wire>,
    /// This rank's committed events: digest and count.
    pub digest: SetDigest,
    pub committed: u64,
    /// CMB's channel clocks: per rank, (the promise last received from it,
    /// the promise last sent to it); empty for the other engines.
    pub clocks: Vec<(f64, f64)>,
}

/// An LP as saved: (id, state, events handled, events sent, of which not
/// scheduled because at or after the end time).
pub(crate) type Record<S> = (u32, S, u64, u64, u64);

/// The records of `lps`, each with its id.
pub(crate) fn records<'l, S: Clone + 'l>(lps: impl IntoIterator<Item = (&'l Lp<S>, u32)>) -> Vec<Record<S>> {
    lps.into_iter().map(|(l, id)| (id, l.state.clone(), l.count, l.seq, l.dropped)).collect()
}

/// Checks the conservation of events over all ranks (collective): every
/// event ever sent has been handled, is pending, or fell at or after the end
/// time. Checked at every cut (before a checkpoint is saved) and at the end;
/// a flipped event counter, a lost or a duplicated event breaks it.
pub(crate) fn conservation<C: Comm>(
    comm: &C,
    lps: impl Iterator<Item = (u64, u64, u64)>,
    pending: usize,
) -> Result<(), DesError> {
    let mut local = [0u64, 0, pending as u64, 0];
    for (count, seq, dropped) in lps {
        local[0] += seq;
        local[1] += count;
        local[3] += dropped;
    }
    let all = comm.all_reduce(&local, ReduceOp::Sum)?;
    let (sent, handled, pending, dropped) = (all[0], all[1], all[2], all[3]);
    let accounted = handled.wrapping_add(pending).wrapping_add(dropped);
    if sent != accounted {
        return Err(DesError::Invariant(format!(
            "events not conserved: {sent} sent, but {handled} handled + {pending} pending + {dropped} past the end \
             = {accounted}"
        )));
    }
    Ok(())
}

pub(crate) fn wire<P: Payload>(ev: &Event<P>) -> Wire {
    (ev.time, ev.dest, ev.src, ev.seq, ev.payload.with_bytes(<[u8]>::to_vec))
}

pub(crate) fn err(e: CkptError) -> DesError {
    match e {
        CkptError::Comm(c) => DesError::Comm(c),
        other => DesError::Config(other.to_string()),
    }
}

/// What a rank resumes with.
pub(crate) struct Restored<S, P> {
    pub gvt: Order,
    pub rounds: u64,
    /// This rank's LPs in `map.mine` order.
    pub lps: Vec<Lp<S>>,
    pub pending: Vec<Event<P>>,
    pub digest: SetDigest,
    pub committed: u64,
    /// This rank's channel clocks when the checkpoint was written on as many
    /// ranks (CMB), else empty.
    pub clocks: Vec<(f64, f64)>,
}

/// Takes every event out of `q` in order and puts it back: the pending
/// events as they are saved.
pub(crate) fn pending_of<P: Payload, Q: PendingSet<P>>(q: &mut Q) -> Vec<Wire> {
    let mut all = Vec::with_capacity(q.len());
    while let Some(ev) = q.pop() {
        all.push(ev);
    }
    let wires = all.iter().map(wire).collect();
    for ev in all {
        q.push(ev);
    }
    wires
}

/// What an engine saves at a window boundary.
pub(crate) struct Cut<'a, S> {
    /// The boundary (window or GVT round), its simulated time, and its
    /// order (GVT's for Time Warp: time key, source, sequence).
    pub boundary: u64,
    pub time: f64,
    pub gvt: (u64, u32, u64),
    pub lps: Vec<Record<S>>,
    pub pending: Vec<Wire>,
    pub commits: &'a Commits,
    pub clocks: Vec<(f64, f64)>,
}

/// The window boundaries a rank has shown its checkpointer (sequential and
/// CMB engines: windows of [`window_width`](crate::engine::window_width)).
pub(crate) struct Windows<'k, 'c, C: Comm> {
    pub ck: &'k mut Checkpointer<'c, C>,
    pub width: f64,
    /// The last boundary shown.
    pub shown: u64,
    /// An injected bit flip is due (the engine flips and clears it).
    pub flip: bool,
}

impl<C: Comm> Windows<'_, '_, C> {
    /// Shows every boundary up to the one at or below `time` (a jump over a
    /// million windows shows only the last million); whether one of them
    /// wants a checkpoint.
    pub fn reach(&mut self, time: f64) -> Result<bool, DesError> {
        let b = if time.is_finite() { (time / self.width).floor() as u64 } else { self.shown };
        self.show(b)
    }

    /// Shows every boundary up to `b`.
    pub fn show(&mut self, b: u64) -> Result<bool, DesError> {
        self.shown = self.shown.max(b.saturating_sub(1 << 20));
        let mut due = false;
        while self.shown < b {
            self.shown += 1;
            let act = self.ck.boundary(self.shown).map_err(err)?;
            due |= act.checkpoint;
            self.flip |= act.bitflip;
        }
        Ok(due)
    }
}

/// An injected silent error: the lowest bit of one LP's event counter
/// flips (it keys the LP's random stream, so the run's result would change
/// unnoticed); the conservation of events catches it at the next cut.
pub(crate) fn flip_bit<S>(lps: &mut [Lp<S>]) {
    if let Some(lp) = lps.first_mut() {
        lp.count ^= 1;
    }
}

/// Saves a cut (collective).
pub(crate) fn save<C: Comm, S: Clone + Serialize>(
    comm: &C,
    ck: &mut Checkpointer<'_, C>,
    cut: Cut<'_, S>,
) -> Result<(), DesError> {
    // A silent error must not reach a checkpoint.
    conservation(comm, cut.lps.iter().map(|r| (r.2, r.3, r.4)), cut.pending.len())?;
    let piece = Piece {
        gvt: cut.gvt,
        rounds: cut.boundary,
        lps: cut.lps,
        pending: cut.pending,
        digest: cut.commits.digest,
        committed: cut.commits.count,
        clocks: cut.clocks,
    };
    let meta = serde_json::json!({"lps": piece.lps.len(), "pending": piece.pending.len()});
    let (position, partition) = (serde_json::json!(cut.time), serde_json::json!({"ranks": comm.size()}));
    ck.save(cut.boundary, position, meta, partition, &piece).map_err(err)
}

/// What one rank sends another at a restart: the LPs it now owns and the
/// events pending at them.
#[derive(Serialize, Deserialize)]
struct Share<S> {
    lps: Vec<Record<S>>,
    pending: Vec<Wire>,
}

/// This rank's LPs and their events from a checkpoint taken on any number
/// of ranks (collective): each old piece is read by one rank (piece `k` by
/// rank `k mod p`, the one that verified it, one piece per rank per round),
/// which sends every LP and pending event to its new owner; no rank reads
/// the whole checkpoint. Rank 0 gets every old rank's committed digest and
/// count.
pub(crate) fn load<C: Comm, S: Serialize + serde::de::DeserializeOwned, P: Payload>(
    comm: &C,
    r: &mut Restart,
    map: &LpMap,
    seed: u64,
) -> Result<Restored<S, P>, DesError> {
    let (me, ranks) = (comm.rank(), comm.size());
    let same_ranks = r.manifest.ranks == ranks;
    let mut head = None;
    let (mut digest, mut committed, mut clocks) = (SetDigest::new(), 0u64, Vec::new());
    let mut lps: Vec<Option<Lp<S>>> = (0..map.mine.len()).map(|_| None).collect();
    let mut pending = Vec::new();
    let pieces = r.manifest.ranks;
    for round in 0..pieces.div_ceil(ranks) {
        let k = me + round * ranks;
        let mut shares: Vec<Share<S>> = (0..ranks).map(|_| Share { lps: Vec::new(), pending: Vec::new() }).collect();
        let mut read = || -> Result<(), DesError> {
            if k >= pieces {
                return Ok(());
            }
            let p: Piece<S> = r.read(k).map_err(err)?;
            if k == me && same_ranks {
                clocks = p.clocks;
            }
            if k == 0 {
                head = Some((p.gvt, p.rounds));
            }
            digest.merge(&p.digest);
            committed += p.committed;
            let owner = |id: u32, what: &str| {
                map.owner.get(id as usize).map(|&o| o as usize).ok_or_else(|| {
                    DesError::Config(format!("the checkpoint holds {what} {id}, beyond the model's LPs"))
                })
            };
            for rec in p.lps {
                shares[owner(rec.0, "LP")?].lps.push(rec);
            }
            for ev in p.pending {
                shares[owner(ev.1, "an event for LP")?].pending.push(ev);
            }
            Ok(())
        };
        let outcome = read();
        if comm.all_reduce(&[u64::from(outcome.is_err())], ReduceOp::Max)?[0] == 1 {
            return Err(outcome.err().unwrap_or_else(|| {
                DesError::Config("another rank could not read its share of the checkpoint".into())
            }));
        }
        let bytes = shares
            .iter()
            .map(|s| postcard::to_allocvec(s).map_err(|e| DesError::Config(format!("checkpoint share: {e}"))))
            .collect::<Result<Vec<Vec<u8>>, _>>()?;
        drop(shares);
        for b in comm.all_to_all_v(bytes)? {
            let share: Share<S> =
                postcard::from_bytes(&b).map_err(|e| DesError::Config(format!("checkpoint share: {e}")))?;
            for (id, state, count, seq, dropped) in share.lps {
                lps[map.local[id as usize] as usize] = Some(Lp { state, key: lp_key(seed, id), count, seq, dropped });
            }
            for (time, dest, src, seq, bytes) in share.pending {
                pending.push(Event { time, dest, src, seq, payload: P::from_bytes(&bytes) });
            }
        }
    }
    let ((g0, g1, g2), rounds) = comm.broadcast_value(0, &head)?.unwrap_or_default();
    let digest = comm.all_merge_digest(&digest)?;
    let committed = comm.all_reduce(&[committed], ReduceOp::Sum)?[0];
    let lps = lps
        .into_iter()
        .enumerate()
        .map(|(i, l)| l.ok_or_else(|| DesError::Config(format!("the checkpoint lacks LP {}", map.mine[i]))))
        .collect::<Result<_, _>>()?;
    Ok(Restored {
        gvt: Order { time: g0, src: g1, seq: g2 },
        rounds,
        lps,
        pending,
        digest: if me == 0 { digest } else { SetDigest::new() },
        committed: if me == 0 { committed } else { 0 },
        clocks,
    })
}
