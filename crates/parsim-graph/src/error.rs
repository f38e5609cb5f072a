//! The error type of the graph engines.

use parsim_comm::CommError;

/// What can go wrong building or running a graph engine.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum GraphError {
    /// The communicator failed (a peer died, a message was malformed …).
    #[error(transparent)]
    Comm(#[from] CommError),
    /// The inputs do not fit together (an owner array of the wrong length, a part ≥ ranks …).
    #[error("{0}")]
    BadArgument(String),
    /// A checkpoint could not be written or restored.
    #[error("checkpoint: {0}")]
    Checkpoint(String),
    /// A vertex program sent a message to a vertex that does not exist.
    #[error("superstep {superstep}: vertex {from} sent a message to vertex {to}, but the graph has {n} vertices")]
    NoSuchVertex {
        /// The superstep.
        superstep: u64,
        /// The sender.
        from: u32,
        /// The destination.
        to: u32,
        /// The number of vertices.
        n: usize,
    },
}

/// Results of this crate.
pub type Result<T> = std::result::Result<T, GraphError>;
