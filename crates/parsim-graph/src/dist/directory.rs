//! Records keyed by global id, delivered to the ranks that hold those ids
//! through a directory spread over the ranks by id blocks, so that no rank
//! needs an owner map of the whole graph. A restart on another rank count
//! uses it: each old piece is read by one new rank, which routes what the
//! piece holds to the vertices' new owners.

use parsim_comm::{Comm, ReduceOp};

use super::local::{block_owner, block_range, exchange_in_rounds};
use crate::error::{GraphError, Result};

/// The most one rank sends in one round of an exchange.
const ROUND_BYTES: usize = 256 << 20;

/// Records of bytes, each under a global id, packed in one buffer.
///
/// ```
/// use parsim_graph::Records;
/// let mut r = Records::default();
/// r.push(7, &[1, 2, 3]);
/// r.push(3, &[]);
/// let all: Vec<(u32, Vec<u8>)> = r.iter().map(|(id, b)| (id, b.to_vec())).collect();
/// assert_eq!(all, vec![(7, vec![1, 2, 3]), (3, vec![])]);
/// ```
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Records {
    buf: Vec<u8>,
    count: usize,
}

impl Records {
    /// Appends a record.
    pub fn push(&mut self, id: u32, bytes: &[u8]) {
        put(&mut self.buf, id, bytes);
        self.count += 1;
    }

    /// Records held.
    pub fn len(&self) -> usize {
        self.count
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.count == 0
    }

    /// The records, in the order they were pushed (or received).
    pub fn iter(&self) -> impl Iterator<Item = (u32, &[u8])> + '_ {
        unpack(&self.buf)
    }
}

fn put(buf: &mut Vec<u8>, id: u32, bytes: &[u8]) {
    buf.extend_from_slice(&id.to_le_bytes());
    buf.extend_from_slice(&(bytes.len() as u32).to_le_bytes());
    buf.extend_from_slice(bytes);
}

/// The records of a buffer written by [`put`] (a truncated tail ends it).
fn unpack(buf: &[u8]) -> impl Iterator<Item = (u32, &[u8])> + '_ {
    let mut rest = buf;
    std::iter::from_fn(move || {
        let word = |b: &[u8]| u32::from_le_bytes([b[0], b[1], b[2], b[3]]);
        if rest.len() < 8 {
            return None;
        }
        let (id, len) = (word(&rest[..4]), word(&rest[4..8]) as usize);
        let body = rest.get(8..8 + len)?;
        rest = &rest[8 + len..];
        Some((id, body))
    })
}

/// Delivers every record (global id in `0..n`, bytes) to every rank whose
/// `wants` holds its id (owners, or every rank holding a replica), and
/// returns the records this rank wants, grouped by the rank that sent them:
/// [`Directory::new`] then one [`Directory::deliver`].
///
/// ```
/// use parsim_comm::Comm;
/// use parsim_graph::{deliver_by_id, Records};
/// let got = parsim_comm::launch(2, |comm| {
///     // Rank 0 wants the even ids of 0..6, rank 1 the odd ones; rank 1 holds every record.
///     let wants: Vec<u32> = (0..6).filter(|v| v % 2 == comm.rank() as u32).collect();
///     let mut have = Records::default();
///     if comm.rank() == 1 {
///         for v in 0..6u32 {
///             have.push(v, &[v as u8 * 10]);
///         }
///     }
///     let got = deliver_by_id(&comm, 6, &wants, have)?;
///     let mut ids: Vec<(u32, u8)> = got.iter().map(|(v, b)| (v, b[0])).collect();
///     ids.sort_unstable();
///     Ok::<_, parsim_graph::GraphError>(ids)
/// })?;
/// assert_eq!(got[0], vec![(0, 0), (2, 20), (4, 40)]);
/// assert_eq!(got[1], vec![(1, 10), (3, 30), (5, 50)]);
/// # Ok::<(), parsim_graph::GraphError>(())
/// ```
pub fn deliver_by_id<C: Comm>(comm: &C, n: usize, wants: &[u32], have: Records) -> Result<Records> {
    Directory::new(comm, n, wants)?.deliver(comm, have)
}

/// Who wants each global id, spread over the ranks by id blocks: rank `r`
/// knows the wanters of `block_range(n, p, r)` only, so memory per rank is
/// O(n/p + wanted), never O(n). Records then travel twice (to their id's
/// directory rank, then to every rank that wants the id), in as many
/// [`deliver`](Self::deliver) rounds as the caller likes (one per piece
/// read, to bound what is in flight).
pub struct Directory {
    n: usize,
    lo: u32,
    /// Wanters of id `lo + k`: `holders[start[k]..start[k + 1]]`.
    start: Vec<u32>,
    holders: Vec<u32>,
}

impl Directory {
    /// Registers the ids this rank wants (each at most once; ids in
    /// `0..n`). Collective; an id beyond `n` is the same error on every rank.
    pub fn new<C: Comm>(comm: &C, n: usize, wants: &[u32]) -> Result<Directory> {
        let (p, me) = (comm.size(), comm.rank());
        agree(comm, wants.iter().copied().find(|&v| v as usize >= n), |v| {
            format!("an id {v} beyond the {n} vertices")
        })?;
        let mut asks: Vec<Vec<u32>> = vec![Vec::new(); p];
        for &v in wants {
            asks[block_owner(n, p, v) as usize].push(v);
        }
        let asks = exchange_in_rounds(comm, asks, ROUND_BYTES)?;
        let (lo, hi) = block_range(n, p, me);
        let mut start = vec![0u32; (hi - lo) as usize + 1];
        for &v in asks.iter().flatten() {
            start[(v - lo) as usize + 1] += 1;
        }
        for k in 1..start.len() {
            start[k] += start[k - 1];
        }
        let mut at = start.clone();
        let mut holders = vec![0u32; *start.last().unwrap_or(&0) as usize];
        for (q, ids) in asks.iter().enumerate() {
            for &v in ids {
                let k = (v - lo) as usize;
                holders[at[k] as usize] = q as u32;
                at[k] += 1;
            }
        }
        Ok(Directory { n, lo, start, holders })
    }

    /// Delivers `have` to the ranks that want its ids; returns what this
    /// rank wants of every rank's `have`, grouped by sender. Collective; a
    /// record for an id beyond `n` or one nobody wants is the same error on
    /// every rank.
    pub fn deliver<C: Comm>(&self, comm: &C, have: Records) -> Result<Records> {
        let (n, p) = (self.n, comm.size());
        agree(comm, have.iter().map(|r| r.0).find(|&v| v as usize >= n), |v| {
            format!("an id {v} beyond the {n} vertices")
        })?;
        let mut out: Vec<Vec<u8>> = vec![Vec::new(); p];
        for (v, b) in have.iter() {
            put(&mut out[block_owner(n, p, v) as usize], v, b);
        }
        drop(have);
        let got = exchange_in_rounds(comm, out, ROUND_BYTES)?;
        let mut fwd: Vec<Vec<u8>> = vec![Vec::new(); p];
        let mut orphan = None;
        for (v, b) in got.iter().flat_map(|buf| unpack(buf)) {
            let k = (v - self.lo) as usize;
            let hs = &self.holders[self.start[k] as usize..self.start[k + 1] as usize];
            if hs.is_empty() {
                orphan = orphan.or(Some(v));
            }
            for &h in hs {
                put(&mut fwd[h as usize], v, b);
            }
        }
        drop(got);
        agree(comm, orphan, |v| format!("a record for vertex {v}, which no rank holds"))?;
        let got = exchange_in_rounds(comm, fwd, ROUND_BYTES)?;
        let mut all = Records::default();
        for buf in got {
            all.count += unpack(&buf).count();
            all.buf.extend_from_slice(&buf);
        }
        Ok(all)
    }
}

/// What [`deliver_pieces`] hands a piece's reader: call it with each
/// record (global id, bytes) the piece holds.
pub type Emit<'a> = dyn FnMut(u32, &[u8]) -> Result<()> + 'a;

/// Records a rank sends in one round of [`deliver_pieces`].
const CHUNK: usize = 1 << 16;

/// A restart's reading, shared out: old piece `k` is read by rank `k mod p`
/// only, and what it holds goes through `dir` to the ranks that want it.
/// `read(k, emit)` decodes piece `k` and calls `emit(id, bytes)` for each
/// of its records; they are delivered in rounds of at most 2¹⁶ records per
/// rank (`take` receives this rank's share of each round), so no rank reads
/// the whole checkpoint and what is in flight stays bounded whatever the
/// pieces' size. Collective; an error in any rank's `read` stops every rank
/// (with its own error, or a line saying another rank failed).
pub fn deliver_pieces<C: Comm, E: From<GraphError>>(
    comm: &C,
    dir: &Directory,
    pieces: usize,
    mut read: impl FnMut(usize, &mut Emit<'_>) -> std::result::Result<(), E>,
    mut take: impl FnMut(Records) -> std::result::Result<(), E>,
) -> std::result::Result<(), E> {
    let (p, me) = (comm.size(), comm.rank());
    let elsewhere = || GraphError::Checkpoint("another rank could not read its share of the checkpoint".into());
    // A round: every rank says whether it has more to send (1), is done (0)
    // or failed to read (2, and then nothing is delivered: every rank stops
    // at once); then the round's records are delivered. A failure of `take`
    // is kept until the end, so that every rank runs the same rounds.
    // Any error out of a round (a failure announced, or one that the
    // delivery's own checks agreed on) is known to every rank: `stopped`
    // then keeps this rank from announcing it once more.
    let stopped = std::cell::Cell::new(false);
    let mut kept: Option<E> = None;
    let mut round = |have: Records, word: u64, kept: &mut Option<E>| -> Result<u64> {
        let all = comm.all_reduce(&[word], ReduceOp::Max).inspect_err(|_| stopped.set(true))?[0];
        if all == 2 {
            stopped.set(true);
            return Err(elsewhere());
        }
        let got = dir.deliver(comm, have).inspect_err(|_| stopped.set(true))?;
        if kept.is_none() {
            *kept = take(got).err();
        }
        Ok(all)
    };
    let mut have = Records::default();
    for k in (me..pieces).step_by(p) {
        let mut emit = |id: u32, bytes: &[u8]| -> Result<()> {
            have.push(id, bytes);
            if have.len() >= CHUNK {
                round(std::mem::take(&mut have), 1, &mut kept)?;
            }
            Ok(())
        };
        if let Err(e) = read(k, &mut emit) {
            if !stopped.get() {
                // This rank's own failure: the others learn it in their round.
                comm.all_reduce(&[2u64], ReduceOp::Max).map_err(GraphError::from)?;
            }
            return Err(e);
        }
    }
    let mut all = round(have, 0, &mut kept)?;
    while all == 1 {
        all = round(Records::default(), 0, &mut kept)?;
    }
    let bad = comm.all_reduce(&[u64::from(kept.is_some())], ReduceOp::Max).map_err(GraphError::from)?[0];
    match kept {
        Some(e) => Err(e),
        None if bad == 1 => Err(elsewhere().into()),
        None => Ok(()),
    }
}

/// Every rank learns the smallest offending id any rank found, and all
/// return the same error for it.
fn agree<C: Comm>(comm: &C, found: Option<u32>, say: impl Fn(u32) -> String) -> Result<()> {
    let v = comm.all_reduce(&[found.map_or(u64::MAX, u64::from)], ReduceOp::Min)?[0];
    if v == u64::MAX {
        return Ok(());
    }
    Err(GraphError::BadArgument(format!("delivering records by vertex id: {}", say(v as u32))))
}
