//! # parsim-comm
//!
//! The SPMD runtime of parsim. An engine is written once, as the code one
//! *rank* runs, talking to the other ranks only through a [`Comm`]. Two
//! backends implement it with the same semantics:
//!
//! - [`threads`] (the default, nothing to install): N ranks as N threads of
//!   one process; [`launch`] runs them; message buffers are moved, not copied;
//! - `mpi` (cargo feature `mpi`): one process per rank under `mpirun`, over
//!   the system's Open MPI or MPICH, for more than one machine.
//!
//! ```
//! use parsim_comm::{launch, Comm, ReduceOp};
//!
//! // Four ranks each contribute their rank; everyone gets the sum.
//! let results = launch(4, |comm| {
//!     let total = comm.all_reduce(&[comm.rank() as u64], ReduceOp::Sum)?;
//!     Ok::<_, parsim_comm::CommError>(total[0])
//! })?;
//! assert_eq!(results, vec![6, 6, 6, 6]);
//! # Ok::<(), parsim_comm::CommError>(())
//! ```
//!
//! ## Semantics (both backends)
//!
//! - Point-to-point messages carry a tag `0..=MAX_TAG`. Messages from one
//!   source with one tag are received in the order they were sent; a receive
//!   may match any source and/or any tag ([`Source::Any`], [`TagMatch::Any`]).
//! - A receive request is *matched when it completes* (at `test` or `wait`),
//!   to the earliest-sent matching message available then.
//! - Sends are buffered: a send request completes without the receiver
//!   posting a receive on the threads backend, and as soon as MPI has taken
//!   the buffer under MPI. Messages to oneself are allowed.
//! - Typed messages are `bytemuck::Pod` slices (moved, never serialised on
//!   threads); irregular data goes through serde ([`Comm::send_value`]),
//!   encoded with postcard on every backend.
//! - Collectives must be called by every rank of the communicator in the same
//!   order; their traffic never matches point-to-point receives. Reductions
//!   combine in rank order, so float results are equal across backends.
//! - **No hang**: if a rank fails, every blocking call on the others returns
//!   [`CommError::PeerFailed`] promptly (threads), or the job is aborted with the
//!   failing rank's message (MPI). A receive from a rank that has already
//!   finished returns [`CommError::PeerFinished`] instead of blocking forever.
//! - Time spent inside the communicator is charged to the rank's
//!   [`PhaseClock`]: blocked time to `wait`, the rest to `comm`.
// Unsafe code lives in two places only, each block with a SAFETY comment:
// the threads backend's slot hand-over (`threads/channel.rs`) and the MPI FFI.
#![deny(unsafe_code)]

mod aggregate;
/// The Comm semantics suite every backend passes (used by the tests; not part of the API).
#[doc(hidden)]
pub mod conformance;
mod error;
#[cfg(feature = "mpi")]
#[allow(unsafe_code)]
pub mod mpi;
mod reduce;
mod request;
pub mod threads;

pub use aggregate::Aggregator;
pub use bytemuck::Pod;
pub use error::{CommError, Result};
pub use parsim_core::PhaseClock;
pub use reduce::{ReduceOp, Reducible};
pub use request::{wait_all, wait_any, Request};
pub use threads::{launch, Launcher, ThreadComm};

use parsim_core::{wire, ExactSum, SetDigest};
use serde::{de::DeserializeOwned, Serialize};

/// A message tag.
pub type Tag = u32;

/// The largest user tag (the smallest upper bound MPI guarantees).
pub const MAX_TAG: Tag = 32_767;

/// Which sender a receive or probe matches.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Source {
    /// Any rank.
    Any,
    /// This rank of the communicator.
    Rank(usize),
}

impl From<usize> for Source {
    fn from(r: usize) -> Self {
        Source::Rank(r)
    }
}

/// Which tags a receive or probe matches.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TagMatch {
    /// Any tag.
    Any,
    /// This tag.
    Tag(Tag),
}

impl From<Tag> for TagMatch {
    fn from(t: Tag) -> Self {
        TagMatch::Tag(t)
    }
}

/// The envelope of a message: who sent it, its tag and its payload size.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Status {
    /// The sending rank (in the communicator).
    pub source: usize,
    /// The tag.
    pub tag: Tag,
    /// Payload size in bytes.
    pub bytes: usize,
}

/// A received message.
#[derive(Clone, Debug, PartialEq)]
pub struct Message<T> {
    /// The sending rank (in the communicator).
    pub source: usize,
    /// The tag.
    pub tag: Tag,
    /// The payload.
    pub data: Vec<T>,
}

impl Message<u8> {
    /// Decodes a serde value sent with [`Comm::send_value`] / [`Comm::isend_value`].
    pub fn decode<D: DeserializeOwned>(&self) -> Result<D> {
        Ok(wire::decode(&self.data)?)
    }
}

/// A communicator: the ranks of one group and the operations between them.
///
/// Engines are generic over `C: Comm` and never ask which backend they run on.
/// See the [crate documentation](crate) for the semantics.
pub trait Comm: Sized {
    /// The handle of a pending send.
    type SendRequest: Request<Output = ()>;
    /// The handle of a pending receive of `T`s.
    type RecvRequest<T: Pod + Send>: Request<Output = Message<T>>;

    /// This rank, in `0..size()`.
    fn rank(&self) -> usize;
    /// The number of ranks in the communicator.
    fn size(&self) -> usize;
    /// This rank in the world (the top-level communicator).
    fn world_rank(&self) -> usize;
    /// The phase clock of this rank (shared by all its communicators).
    fn clock(&self) -> &PhaseClock;
    /// The backend's name: `"threads"` or `"mpi"`.
    fn backend(&self) -> &'static str;

    /// Starts sending `data` to `dest` with `tag`; the buffer is moved in.
    fn isend<T: Pod + Send>(&self, dest: usize, tag: Tag, data: Vec<T>) -> Result<Self::SendRequest>;
    /// Starts receiving a message of `T`s from `source` with `tag`.
    fn irecv<T: Pod + Send>(&self, source: Source, tag: TagMatch) -> Result<Self::RecvRequest<T>>;
    /// Waits for a matching message and returns its envelope without receiving it.
    fn probe(&self, source: Source, tag: TagMatch) -> Result<Status>;
    /// The envelope of a matching message if one is available now.
    fn iprobe(&self, source: Source, tag: TagMatch) -> Result<Option<Status>>;

    /// Blocks until every rank has reached the barrier.
    fn barrier(&self) -> Result<()>;
    /// Rank `root`'s `data` on every rank (other ranks' `data` is ignored).
    fn broadcast<T: Pod + Send>(&self, root: usize, data: Vec<T>) -> Result<Vec<T>>;
    /// On `root`, every rank's `data` in rank order; `None` elsewhere.
    fn gather<T: Pod + Send>(&self, root: usize, data: Vec<T>) -> Result<Option<Vec<Vec<T>>>>;
    /// Every rank's `data`, in rank order, on every rank.
    fn all_gather<T: Pod + Send>(&self, data: Vec<T>) -> Result<Vec<Vec<T>>>;
    /// Sends `parts[d]` to rank `d` (parts may be empty); returns what each
    /// rank sent here, in rank order. `parts.len()` must equal `size()`.
    fn all_to_all_v<T: Pod + Send>(&self, parts: Vec<Vec<T>>) -> Result<Vec<Vec<T>>>;
    /// Splits into sub-communicators: ranks with the same `colour` form one,
    /// ordered by `(key, rank)`. `None` as colour takes no part (returns `None`).
    fn split(&self, colour: Option<u32>, key: u32) -> Result<Option<Self>>;

    /// Sends and waits for the send to complete.
    fn send<T: Pod + Send>(&self, dest: usize, tag: Tag, data: Vec<T>) -> Result<()> {
        self.isend(dest, tag, data)?.wait()
    }

    /// Receives one message (blocking).
    fn recv<T: Pod + Send>(&self, source: Source, tag: TagMatch) -> Result<Message<T>> {
        self.irecv(source, tag)?.wait()
    }

    /// Sends a serde value (postcard-encoded).
    fn send_value<S: Serialize + ?Sized>(&self, dest: usize, tag: Tag, value: &S) -> Result<()> {
        let bytes = self.clock().in_phase(parsim_core::Phase::Comm, || wire::encode(value))?;
        self.send(dest, tag, bytes)
    }

    /// Starts sending a serde value (postcard-encoded now, sent without blocking).
    /// Receive it with `irecv::<u8>` and [`Message::decode`], or with [`recv_value`](Self::recv_value).
    fn isend_value<S: Serialize + ?Sized>(&self, dest: usize, tag: Tag, value: &S) -> Result<Self::SendRequest> {
        let bytes = wire::encode(value)?;
        self.isend(dest, tag, bytes)
    }

    /// Receives a serde value; returns it with its envelope.
    fn recv_value<D: DeserializeOwned>(&self, source: Source, tag: TagMatch) -> Result<(D, Status)> {
        let m = self.recv::<u8>(source, tag)?;
        let st = Status { source: m.source, tag: m.tag, bytes: m.data.len() };
        let v = self.clock().in_phase(parsim_core::Phase::Comm, || wire::decode(&m.data))?;
        Ok((v, st))
    }

    /// Rank `root`'s value on every rank.
    fn broadcast_value<S: Serialize + DeserializeOwned>(&self, root: usize, value: &S) -> Result<S> {
        let bytes = if self.rank() == root { wire::encode(value)? } else { Vec::new() };
        let bytes = self.broadcast(root, bytes)?;
        Ok(wire::decode(&bytes)?)
    }

    /// Every rank's value, in rank order, on `root`; `None` elsewhere.
    fn gather_value<S: Serialize + DeserializeOwned>(&self, root: usize, value: &S) -> Result<Option<Vec<S>>> {
        match self.gather(root, wire::encode(value)?)? {
            Some(parts) => Ok(Some(parts.iter().map(|b| wire::decode(b)).collect::<Result<_, _>>()?)),
            None => Ok(None),
        }
    }

    /// Every rank's value, in rank order, on every rank.
    fn all_gather_value<S: Serialize + DeserializeOwned>(&self, value: &S) -> Result<Vec<S>> {
        let parts = self.all_gather(wire::encode(value)?)?;
        Ok(parts.iter().map(|b| wire::decode(b)).collect::<Result<_, _>>()?)
    }

    /// Elementwise reduction of every rank's `data` (equal lengths), on `root`.
    fn reduce<T: Reducible>(&self, root: usize, data: &[T], op: ReduceOp) -> Result<Option<Vec<T>>> {
        match self.gather(root, data.to_vec())? {
            Some(parts) => reduce::fold(parts, op).map(Some).ok_or_else(|| CommError::BadArgument {
                op: "reduce",
                msg: "ranks contributed vectors of different lengths".into(),
            }),
            None => Ok(None),
        }
    }

    /// Elementwise reduction of every rank's `data` (equal lengths), on every rank.
    fn all_reduce<T: Reducible>(&self, data: &[T], op: ReduceOp) -> Result<Vec<T>> {
        let reduced = self.reduce(0, data, op)?;
        self.broadcast(0, reduced.unwrap_or_default())
    }

    /// The exact sum of every rank's partial [`ExactSum`], on every rank:
    /// bitwise independent of the number of ranks and of how values were split.
    fn all_reduce_exact(&self, local: &ExactSum) -> Result<ExactSum> {
        let limbs = self.all_reduce(&local.to_limbs(), ReduceOp::Sum)?;
        ExactSum::from_limbs(&limbs).ok_or_else(|| CommError::BadArgument {
            op: "all_reduce_exact",
            msg: "limb vector of unexpected length".into(),
        })
    }

    /// Every rank's [`SetDigest`] merged, on every rank: the digest of a set
    /// of keyed items however they are spread over the ranks (merging is
    /// commutative, so the rank order does not matter).
    fn all_merge_digest(&self, local: &SetDigest) -> Result<SetDigest> {
        let parts = self.all_gather(local.parts.to_vec())?;
        let mut all = SetDigest::new();
        for p in parts {
            all.merge(&SetDigest { parts: [p[0], p[1]] });
        }
        Ok(all)
    }
}

/// Validates a (source, tag) selection against a communicator of `size`
/// ranks: `None` stands for "any".
pub(crate) fn selection(source: Source, tag: TagMatch, size: usize) -> Result<(Option<usize>, Option<Tag>)> {
    let source = match source {
        Source::Any => None,
        Source::Rank(r) => {
            check_rank(r, size)?;
            Some(r)
        }
    };
    let tag = match tag {
        TagMatch::Any => None,
        TagMatch::Tag(t) => {
            check_tag(t)?;
            Some(t)
        }
    };
    Ok((source, tag))
}

pub(crate) fn check_rank(rank: usize, size: usize) -> Result<()> {
    if rank < size {
        Ok(())
    } else {
        Err(CommError::InvalidRank { rank, size })
    }
}

pub(crate) fn check_tag(tag: Tag) -> Result<()> {
    if tag <= MAX_TAG {
        Ok(())
    } else {
        Err(CommError::InvalidTag { tag })
    }
}
