//! The error type of `parsim-comm`.

use parsim_core::CoreError;

/// What can go wrong in communication.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum CommError {
    /// Another rank failed (panicked or returned an error); this rank's
    /// blocking call gave up instead of waiting forever.
    #[error("rank {rank} failed: {message}")]
    PeerFailed {
        /// The world rank that failed first.
        rank: usize,
        /// Its panic or error message.
        message: String,
    },
    /// A rank failed; reported by `launch` with the failing rank's own message.
    #[error("rank {rank} failed: {message}")]
    RankFailed {
        /// The world rank that failed first.
        rank: usize,
        /// Its panic or error message.
        message: String,
    },
    /// This rank waits for a message that can never come: the peer (or, for a
    /// wildcard receive, every other rank) has already finished.
    #[error("rank {rank} waits for a message from {peer}, which has finished without sending it")]
    PeerFinished {
        /// The waiting rank (in the communicator).
        rank: usize,
        /// The peer waited for (in the communicator), or `any rank`.
        peer: String,
    },
    /// A rank index outside the communicator.
    #[error("rank {rank} is out of range for a communicator of {size} ranks")]
    InvalidRank {
        /// The offending rank.
        rank: usize,
        /// The communicator's size.
        size: usize,
    },
    /// A tag above [`MAX_TAG`](crate::MAX_TAG).
    #[error("tag {tag} is above the largest user tag {max}", max = crate::MAX_TAG)]
    InvalidTag {
        /// The offending tag.
        tag: u32,
    },
    /// A message arrived whose element type differs from the receive's.
    #[error("message from rank {sender} with tag {tag} holds {bytes} bytes, which is not a whole number of {expected} (or was sent as another type)")]
    TypeMismatch {
        /// The sending rank.
        sender: usize,
        /// The message's tag.
        tag: u32,
        /// Its payload size.
        bytes: usize,
        /// The element type the receiver asked for.
        expected: &'static str,
    },
    /// A collective was called with arguments that do not fit the communicator.
    #[error("{op}: {msg}")]
    BadArgument {
        /// The operation.
        op: &'static str,
        /// What is wrong.
        msg: String,
    },
    /// A request was tested or waited for after it had completed.
    #[error("request already completed")]
    AlreadyComplete,
    /// Encoding or decoding a serde value failed.
    #[error(transparent)]
    Wire(#[from] CoreError),
    /// The MPI library reported an error.
    #[error("MPI error: {msg}")]
    Mpi {
        /// What MPI said.
        msg: String,
    },
}

/// `Result` with [`CommError`].
pub type Result<T, E = CommError> = std::result::Result<T, E>;
