//! The error type of sweeps.

/// What can go wrong describing, running or resuming a sweep.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SweepError {
    /// A bad sweep parameter (names the key).
    #[error("{key}: {msg}")]
    Config {
        /// The key, e.g. `replications`.
        key: String,
        /// What was wrong.
        msg: String,
    },
    /// The results file could not be read or written.
    #[error("{path}: {msg}")]
    Store {
        /// The file.
        path: String,
        /// What went wrong.
        msg: String,
    },
    /// The communicator failed.
    #[error(transparent)]
    Comm(#[from] parsim_comm::CommError),
}

/// Results of this crate.
pub type Result<T> = std::result::Result<T, SweepError>;
