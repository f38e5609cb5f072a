//! Application-level checkpoint/restart for parsim's engines.
//!
//! A checkpoint holds the physical state a model needs, in the canonical
//! global-id form (a grid block with its global extent, LP states keyed by
//! LP id, agents by global id) — not a memory image — so a run restarts on
//! the same **or a different** number of ranks. It is a manifest (format
//! version, scenario fingerprint, seed, boundary, rank count, partition,
//! each rank's length and checksum) plus one data file per rank and level:
//!
//! 1. level 1 — the rank's own directory, every checkpoint;
//! 2. level 2 — a partner copy: rank r's data also held by rank (r+1) mod p,
//!    sent over the `Comm`, so that losing one rank's files is survivable;
//! 3. level 3 — the shared directory, every k-th checkpoint.
//!
//! The simulation pays only for the snapshot (serialise, checksum, partner
//! exchange; phase `io`); a background thread compresses (LZ4) and writes
//! every file to a temporary name, fsyncs, renames and fsyncs the directory.
//! A checkpoint counts only when its manifest and every checksum verify, so
//! a crash mid-write never leaves one that looks whole; a restart falls
//! back to partner copies, then to older checkpoints, and says why.
//!
//! ```
//! use parsim_ckpt::{Checkpointer, Identity, Interval, Options};
//! use parsim_comm::Comm;
//!
//! let dir = std::env::temp_dir().join(format!("parsim-ckpt-doc-{}", std::process::id()));
//! let id = Identity::new("counter", "step", "f00d", 7);
//! // A "model" whose state is one number per rank, checkpointed every 5 steps.
//! let run = |restart: bool, kill: bool| {
//!     parsim_comm::launch(2, |c| {
//!         let mut opts = Options::new(&dir, Some(Interval::Every(5)));
//!         opts.restart = restart.then(|| dir.clone());
//!         let mut ck = Checkpointer::new(&c, opts, id.clone())?;
//!         let (mut step, mut x) = (0u64, c.rank() as u64);
//!         if let Some(mut r) = ck.take_restart() {
//!             (step, x) = r.read(c.rank())?; // same rank count: the own piece
//!         }
//!         while step < 12 {
//!             x = x * 3 + 1;
//!             step += 1;
//!             if kill && step == 8 {
//!                 return Err(parsim_ckpt::CkptError::Input("killed".into()));
//!             }
//!             if ck.boundary(step)?.checkpoint {
//!                 ck.save(step, step.into(), serde_json::Value::Null, serde_json::Value::Null, &(step, x))?;
//!             }
//!         }
//!         ck.finish();
//!         Ok::<_, parsim_ckpt::CkptError>(x)
//!     })
//! };
//! assert!(run(false, true).is_err()); // dies at step 8, after the checkpoint at 5
//! let resumed = run(true, false).unwrap();
//! std::fs::remove_dir_all(&dir).unwrap();
//! assert_eq!(resumed, run(false, false).unwrap());
//! # std::fs::remove_dir_all(&dir).ok();
//! ```

mod bytes;
mod checkpointer;
pub mod format;
pub mod inject;
mod interval;
mod restart;
pub mod store;

use std::path::PathBuf;

pub use bytes::Bytes;
pub use checkpointer::{Action, Checkpointer, Options, Stats};
pub use inject::{Fault, Injection, KillWhen};
pub use interval::{daly, expected_overhead, human, parse_duration, young, Interval};
pub use restart::{find, precheck, Restart};
pub use store::{Keep, Level};

/// What a checkpoint must match to be restarted from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Identity {
    /// The engine or model name.
    pub engine: String,
    /// What its boundaries are called (`step`, `day`, `gvt` …).
    pub unit: String,
    /// A fingerprint of everything that determines the result (the model's
    /// parameters; not the rank count, backend or output directory).
    pub fingerprint: String,
    /// The seed.
    pub seed: u64,
}

impl Identity {
    /// An identity.
    pub fn new(engine: &str, unit: &str, fingerprint: &str, seed: u64) -> Self {
        Identity { engine: engine.into(), unit: unit.into(), fingerprint: fingerprint.into(), seed }
    }
}

/// What can go wrong.
#[derive(Debug, thiserror::Error)]
pub enum CkptError {
    /// Bad options (exit 2).
    #[error("{0}")]
    Input(String),
    /// A `--restart` directory with nothing usable in it (exit 2).
    #[error("no usable checkpoint in {}:\n  {}", dir.display(), reasons.join("\n  "))]
    NothingValid {
        /// The directory.
        dir: PathBuf,
        /// Why each candidate was refused.
        reasons: Vec<String>,
    },
    /// A piece that verified could not be read back or decoded.
    #[error("checkpoint data: {0}")]
    Corrupt(String),
    /// Files could not be written.
    #[error("checkpoint: {0}")]
    Io(String),
    /// Replicated execution found the replicas' states different.
    #[error("{0}")]
    Silent(String),
    /// Communication failed.
    #[error(transparent)]
    Comm(#[from] parsim_comm::CommError),
}
