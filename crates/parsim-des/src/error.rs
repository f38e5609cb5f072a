//! The error type of `parsim-des`.

use parsim_comm::CommError;

use crate::model::LpId;

/// What can stop a simulation.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum DesError {
    /// A handler (or `init`) made an invalid send.
    #[error("LP {lp} at time {time}: {problem}")]
    BadSend {
        /// The sending LP.
        lp: LpId,
        /// The time of the event being handled (0 during init).
        time: f64,
        /// What was wrong, with the offending value.
        problem: String,
    },
    /// The error happened on another rank; this rank stopped because of it.
    #[error("rank {rank}: {message}")]
    OnRank {
        /// The rank where it happened.
        rank: usize,
        /// Its message.
        message: String,
    },
    /// The configuration cannot work with this model.
    #[error("{0}")]
    Config(String),
    /// Time Warp cannot make progress within its memory limit.
    #[error("{0}")]
    NoProgress(String),
    /// The state broke an invariant (a silent error): the run must roll
    /// back to its last checkpoint.
    #[error("invariant violated: {0}")]
    Invariant(String),
    /// Communication failed.
    #[error(transparent)]
    Comm(#[from] CommError),
}

/// `Result` with [`DesError`].
pub type Result<T, E = DesError> = std::result::Result<T, E>;
