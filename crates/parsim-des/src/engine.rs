//! What every engine shares: the LP → rank map, the LPs a rank owns, event
//! execution, committing (digest, `on_commit`), the wire format of event
//! messages, errors that must stop every rank, and the final report.

pub(crate) mod conservative;
pub(crate) mod optimistic;
pub(crate) mod sequential;
pub(crate) mod window;

use crate::payload::Payload;
use parsim_comm::{Comm, Source, TagMatch};
use parsim_core::{rng::StreamKey, Digest, SetDigest};
use serde::{Deserialize, Serialize};

use crate::error::{DesError, Result};
use crate::model::{Ctx, Event, LpId, Model};
use crate::stats::DesStats;

/// The one tag of all engine traffic (events, anti-messages, nulls, GVT
/// tokens), so that everything from one rank arrives in the order it was sent.
pub(crate) const DES_TAG: u32 = 7_001;
/// The tag of "stop: this error happened" messages.
pub(crate) const ERROR_TAG: u32 = 7_002;

/// Which rank owns each LP, and each LP's index among its owner's LPs.
pub(crate) struct LpMap {
    pub owner: Vec<u32>,
    pub local: Vec<u32>,
    /// The LPs of this rank, in id order.
    pub mine: Vec<LpId>,
}

impl LpMap {
    pub fn new<M: Model>(model: &M, ranks: usize, me: usize) -> Result<Self> {
        let n = model.lps() as usize;
        let owner: Vec<u32> = match model.mapping(ranks) {
            None => (0..n).map(|i| (i as u128 * ranks as u128 / n as u128) as u32).collect(),
            Some(m) => {
                if m.len() != n {
                    return Err(DesError::Config(format!("the model's mapping has {} entries for {n} LPs", m.len())));
                }
                if let Some((lp, r)) = m.iter().enumerate().find(|(_, &r)| r as usize >= ranks) {
                    return Err(DesError::Config(format!("the model's mapping puts LP {lp} on rank {r} of {ranks}")));
                }
                m
            }
        };
        let mut count = vec![0u32; ranks];
        let local = owner
            .iter()
            .map(|&r| {
                count[r as usize] += 1;
                count[r as usize] - 1
            })
            .collect();
        let mine = (0..n as u32).filter(|&i| owner[i as usize] as usize == me).collect();
        Ok(LpMap { owner, local, mine })
    }
}

/// One LP as the engines keep it: its state and its counters.
#[derive(Clone)]
pub(crate) struct Lp<S> {
    pub state: S,
    pub key: StreamKey,
    /// Events handled so far (keys the random stream).
    pub count: u64,
    /// Events sent so far (the `seq` of the next send).
    pub seq: u64,
    /// Of those, the ones not scheduled: at or after the end time.
    pub dropped: u64,
}

/// The limits a `Ctx` checks sends against.
#[derive(Clone, Copy)]
pub(crate) struct Limits {
    pub lps: u32,
    pub min_delay: f64,
    pub end: f64,
}

impl Limits {
    pub fn new<M: Model>(model: &M, conservative: bool) -> Self {
        Limits {
            lps: model.lps(),
            min_delay: if conservative { model.lookahead() } else { 0.0 },
            end: model.end_time(),
        }
    }
}

/// The width of the windows of simulated time the sequential and CMB
/// engines count checkpoint boundaries in: the lookahead, or for a model
/// without one a thousandth of its end time.
pub(crate) fn window_width<M: Model>(model: &M) -> Result<f64> {
    let (la, end) = (model.lookahead(), model.end_time());
    if la > 0.0 {
        Ok(la)
    } else if end.is_finite() && end > 0.0 {
        Ok(end / 1000.0)
    } else {
        Err(DesError::Config(
            "checkpoints count windows of the model's lookahead, and this model has none and no finite end time".into(),
        ))
    }
}

pub(crate) fn lp_key(seed: u64, lp: LpId) -> StreamKey {
    StreamKey::new(seed).purpose("parsim.des.event").with(u64::from(lp))
}

/// Creates this rank's LPs; their initial events go to `out`.
pub(crate) fn init_lps<M: Model>(
    model: &M,
    map: &LpMap,
    seed: u64,
    lim: Limits,
    out: &mut Vec<Event<M::Payload>>,
) -> Result<Vec<Lp<M::State>>> {
    let mut lps = Vec::with_capacity(map.mine.len());
    for &id in &map.mine {
        let key = StreamKey::new(seed).purpose("parsim.des.init").with(u64::from(id));
        let mut ctx = Ctx::new(id, 0.0, key, 0, 0, out).limits(lim.lps, lim.min_delay, lim.end);
        ctx.rng = Some(key.stream());
        ctx.initial = true;
        let state = model.init(id, &mut ctx);
        if let Some(e) = ctx.error {
            return Err(e);
        }
        lps.push(Lp { state, key: lp_key(seed, id), count: 0, seq: ctx.seq, dropped: ctx.dropped });
    }
    Ok(lps)
}

/// Executes `ev` on `lp` (advancing its counters); new events go to `out`.
#[inline]
pub(crate) fn execute<M: Model>(
    model: &M,
    lp: &mut Lp<M::State>,
    ev: &Event<M::Payload>,
    lim: Limits,
    out: &mut Vec<Event<M::Payload>>,
) -> Result<()> {
    let mut ctx = Ctx::new(ev.dest, ev.time, lp.key, lp.count, lp.seq, out).limits(lim.lps, lim.min_delay, lim.end);
    model.on_event(&mut lp.state, ev, &mut ctx);
    lp.count += 1;
    lp.seq = ctx.seq;
    lp.dropped += ctx.dropped;
    match ctx.error {
        None => Ok(()),
        Some(e) => Err(e),
    }
}

/// Counts committed events and folds them into the digest.
#[derive(Default)]
pub(crate) struct Commits {
    pub digest: SetDigest,
    pub count: u64,
}

impl Commits {
    #[inline]
    pub fn add<P: Payload>(&mut self, ev: &Event<P>) {
        self.count += 1;
        let key = (u64::from(ev.src) << 40) ^ ev.seq;
        let mut v = ev.time.to_bits().rotate_left(17) ^ u64::from(ev.dest).wrapping_mul(0x9E37_79B9_7F4A_7C15);
        ev.payload.with_bytes(|bytes| {
            for chunk in bytes.chunks(8) {
                let mut w = [0u8; 8];
                w[..chunk.len()].copy_from_slice(chunk);
                v = (v ^ u64::from_le_bytes(w)).wrapping_mul(0xff51_afd7_ed55_8ccd).rotate_left(29);
            }
        });
        self.digest.add(key, v);
    }
}

/// Words of an event's record on the wire (time, src|dest, seq, then for
/// payloads of varying size a byte count, then the payload's bytes padded to
/// whole words): the record of a fixed-size payload, or the header of the
/// others (what batch sizes are counted in).
pub(crate) fn words_per_event<P: Payload>() -> usize {
    match P::FIXED_SIZE {
        Some(n) => 3 + n.div_ceil(8),
        None => 4,
    }
}

/// Appends `ev` to a message of `u64` words.
#[inline]
pub(crate) fn put_event<P: Payload>(buf: &mut Vec<u64>, ev: &Event<P>) {
    buf.push(ev.time.to_bits());
    buf.push((u64::from(ev.src) << 32) | u64::from(ev.dest));
    buf.push(ev.seq);
    ev.payload.with_bytes(|bytes| {
        if P::FIXED_SIZE.is_none() {
            buf.push(bytes.len() as u64);
        }
        let n = bytes.len().div_ceil(8);
        if n > 0 {
            let at = buf.len();
            buf.resize(at + n, 0);
            let words: &mut [u8] = bytemuck::cast_slice_mut(&mut buf[at..]);
            words[..bytes.len()].copy_from_slice(bytes);
        }
    });
}

/// Reads the record written by [`put_event`] at the start of `c`; returns
/// the event and the words it took.
#[inline]
pub(crate) fn decode_event<P: Payload>(c: &[u64]) -> (Event<P>, usize) {
    let (len, at) = match P::FIXED_SIZE {
        Some(n) => (n, 3),
        None => (c[3] as usize, 4),
    };
    let words = at + len.div_ceil(8);
    let bytes: &[u8] = bytemuck::cast_slice(&c[at..words]);
    let ev = Event {
        time: f64::from_bits(c[0]),
        src: (c[1] >> 32) as u32,
        dest: c[1] as u32,
        seq: c[2],
        payload: P::from_bytes(&bytes[..len]),
    };
    (ev, words)
}

/// The records of a message body written by [`put_event`], each with its
/// words (an anti-message flag is in the third word).
pub(crate) fn records<P: Payload>(body: &[u64]) -> impl Iterator<Item = (Event<P>, &[u64])> + '_ {
    let mut rest = body;
    std::iter::from_fn(move || {
        if rest.is_empty() {
            return None;
        }
        let (ev, n) = decode_event::<P>(rest);
        let (rec, tail) = rest.split_at(n);
        rest = tail;
        Some((ev, rec))
    })
}

/// Reads the events of a message body written by [`put_event`].
pub(crate) fn events<P: Payload>(body: &[u64]) -> impl Iterator<Item = Event<P>> + '_ {
    records(body).map(|(ev, _)| ev)
}

/// Sends `err` to every other rank (so none waits forever) and returns it.
pub(crate) fn fail_everywhere<C: Comm>(comm: &C, err: DesError) -> DesError {
    if matches!(err, DesError::Comm(_) | DesError::OnRank { .. }) {
        return err;
    }
    let msg = err.to_string();
    for r in 0..comm.size() {
        if r != comm.rank() {
            // Best effort: a peer that already failed cannot be told.
            let _ = comm.isend_value(r, ERROR_TAG, &msg);
        }
    }
    err
}

/// Receives the error rank `source` reported (a message with [`ERROR_TAG`]).
pub(crate) fn remote_error<C: Comm>(comm: &C, source: usize) -> DesError {
    match comm.recv_value::<String>(Source::Rank(source), TagMatch::Tag(ERROR_TAG)) {
        Ok((message, _)) => DesError::OnRank { rank: source, message },
        Err(e) => e.into(),
    }
}

/// What a run hands back on every rank.
#[derive(Debug)]
pub struct Report<S> {
    /// This rank's counters.
    pub local: DesStats,
    /// All ranks' counters merged (equal on every rank).
    pub total: DesStats,
    /// The digest of the whole committed event sequence (equal on every rank,
    /// for every engine and rank count).
    pub digest: Digest,
    /// The final states of this rank's LPs, by LP id.
    pub states: Vec<(LpId, S)>,
}

#[derive(Serialize, Deserialize)]
struct RankTotals {
    stats: DesStats,
    digest: SetDigest,
}

/// Merges every rank's counters and digest.
pub(crate) fn finish<C: Comm, S>(
    comm: &C,
    local: DesStats,
    commits: &Commits,
    map: &LpMap,
    lps: Vec<Lp<S>>,
) -> Result<Report<S>> {
    // Nothing is pending at the end: every event sent was handled or fell past the end.
    optimistic::resume::conservation(comm, lps.iter().map(|l| (l.count, l.seq, l.dropped)), 0)?;
    let all = comm.all_gather_value(&RankTotals { stats: local.clone(), digest: commits.digest })?;
    let mut total = DesStats::default();
    let mut digest = SetDigest::new();
    for r in &all {
        total.merge(&r.stats);
        digest.merge(&r.digest);
    }
    let states = map.mine.iter().copied().zip(lps.into_iter().map(|l| l.state)).collect();
    Ok(Report { local, total, digest: digest.finish(), states })
}

/// Sends in flight: started with `isend`, reaped when complete (MPI needs
/// every request completed; the threads backend completes them at once).
pub(crate) struct Outbox<C: Comm> {
    pending: std::collections::VecDeque<C::SendRequest>,
}

impl<C: Comm> Outbox<C> {
    pub fn new() -> Self {
        Outbox { pending: std::collections::VecDeque::new() }
    }

    /// Starts sending `words` to `dest`.
    pub fn send(&mut self, comm: &C, dest: usize, words: Vec<u64>) -> Result<()> {
        use parsim_comm::Request;
        let mut req = comm.isend(dest, DES_TAG, words)?;
        if req.test()?.is_none() {
            self.pending.push_back(req);
        }
        while let Some(front) = self.pending.front_mut() {
            if front.test()?.is_none() {
                break;
            }
            self.pending.pop_front();
        }
        Ok(())
    }

    /// Waits for every send to complete.
    pub fn flush(&mut self) -> Result<()> {
        use parsim_comm::Request;
        for r in self.pending.drain(..) {
            r.wait()?;
        }
        Ok(())
    }
}
