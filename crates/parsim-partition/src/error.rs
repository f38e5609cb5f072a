//! The error type of `parsim-partition`.

/// What can go wrong reading a graph or partitioning it.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum PartitionError {
    /// A file does not parse, or describes an invalid graph.
    #[error("{file}{}: {msg}", if *line > 0 { format!(":{line}") } else { String::new() })]
    Parse {
        /// The file.
        file: String,
        /// The 1-based line (0: the file as a whole).
        line: usize,
        /// What is wrong.
        msg: String,
    },
    /// The request cannot be met (balance impossible, K > |V| …).
    #[error("infeasible: {0}")]
    Infeasible(String),
    /// An argument is out of range.
    #[error("{0}")]
    BadArgument(String),
    /// Reading or writing failed.
    #[error("{path}: {source}")]
    Io {
        /// The file.
        path: String,
        /// The error.
        source: std::io::Error,
    },
}

/// `Result` with [`PartitionError`].
pub type Result<T, E = PartitionError> = std::result::Result<T, E>;
