//! DES checkpoints (Time Warp's and the window engine's).
//!
//! Time Warp takes them right after a GVT round: every LP rolled
//! back to GVT (its committed state), the events pending at or after GVT
//! once every speculative send has been cancelled and no message is in
//! flight, and the committed events' partial digest. Nothing speculative is
//! saved. The window engine takes them between two windows, when every
//! event sent is in its destination's pending set. A restart deals the LPs
//! and their events out over the new ranks.

use parsim_ckpt::{CkptError, Restart};
use parsim_core::SetDigest;
use serde::{Deserialize, Serialize};

use crate::engine::{lp_key, Lp, LpMap};
use crate::error::DesError;
use crate::model::{Event, Order};
use crate::payload::Payload;

/// An event as bytes: time, destination, source, sequence number, payload.
pub(crate) type Wire = (f64, u32, u32, u64, Vec<u8>);

/// One rank's part.
#[derive(Serialize, Deserialize)]
pub(crate) struct Piece<S> {
    /// GVT: time key, source, sequence.
    pub gvt: (u64, u32, u64),
    /// GVT rounds so far.
    pub rounds: u64,
    /// (LP id, state, events handled, events sent).
    pub lps: Vec<(u32, S, u64, u64)>,
    pub pending: Vec<Wire>,
    /// This rank's committed events: digest and count.
    pub digest: SetDigest,
    pub committed: u64,
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
}

/// Reads every old piece and keeps this rank's LPs and their events; rank
/// 0 also takes every old rank's committed digest and count.
pub(crate) fn load<S: serde::de::DeserializeOwned, P: Payload>(
    r: &mut Restart,
    map: &LpMap,
    me: usize,
    seed: u64,
) -> Result<Restored<S, P>, DesError> {
    let mut lps: Vec<Option<Lp<S>>> = (0..map.mine.len()).map(|_| None).collect();
    let mut out = Restored {
        gvt: Order::default(),
        rounds: 0,
        lps: Vec::new(),
        pending: Vec::new(),
        digest: SetDigest::new(),
        committed: 0,
    };
    for k in 0..r.manifest.ranks {
        let p: Piece<S> = r.read(k).map_err(err)?;
        out.gvt = Order { time: p.gvt.0, src: p.gvt.1, seq: p.gvt.2 };
        out.rounds = p.rounds;
        if me == 0 {
            out.digest.merge(&p.digest);
            out.committed += p.committed;
        }
        for (id, state, count, seq) in p.lps {
            let Some(&owner) = map.owner.get(id as usize) else {
                return Err(DesError::Config(format!("the checkpoint holds LP {id}, beyond the model's LPs")));
            };
            if owner as usize == me {
                lps[map.local[id as usize] as usize] = Some(Lp { state, key: lp_key(seed, id), count, seq });
            }
        }
        for (time, dest, src, seq, bytes) in p.pending {
            if map.owner.get(dest as usize).is_some_and(|&o| o as usize == me) {
                out.pending.push(Event { time, dest, src, seq, payload: P::from_bytes(&bytes) });
            }
        }
    }
    out.lps = lps
        .into_iter()
        .enumerate()
        .map(|(i, l)| l.ok_or_else(|| DesError::Config(format!("the checkpoint lacks LP {}", map.mine[i]))))
        .collect::<Result<_, _>>()?;
    Ok(out)
}
