//! The error type of the agent-based models.

use parsim_comm::CommError;
use parsim_graph::GraphError;

/// What can go wrong reading a population, configuring or running a model.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum AbmError {
    /// A malformed contact-network file.
    #[error("{path}{}: {msg}", if *line > 0 { format!(":{line}") } else { String::new() })]
    Parse {
        /// The file.
        path: String,
        /// The line (for binary files: the pair number, from 1).
        line: u64,
        /// What was wrong.
        msg: String,
    },
    /// A file could not be read.
    #[error("{path}: {}", parsim_core::io::brief(cause))]
    Io {
        /// The file.
        path: String,
        /// The cause (shown in the message, not repeated as a source).
        cause: std::io::Error,
    },
    /// A parameter out of range (names the parameter).
    #[error("{key}: {msg}")]
    Config {
        /// The parameter, e.g. `beta`.
        key: String,
        /// What was wrong.
        msg: String,
    },
    /// The graph engine failed.
    #[error(transparent)]
    Graph(#[from] GraphError),
    /// The communicator failed.
    #[error(transparent)]
    Comm(#[from] CommError),
    /// The state broke an invariant (a silent error).
    #[error("invariant violated: {0}")]
    Invariant(String),
}

impl AbmError {
    /// A configuration error about `key`.
    pub fn config(key: &str, msg: impl Into<String>) -> Self {
        AbmError::Config { key: key.to_string(), msg: msg.into() }
    }
}

/// Results of this crate.
pub type Result<T> = std::result::Result<T, AbmError>;
