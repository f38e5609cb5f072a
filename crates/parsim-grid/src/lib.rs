//! # parsim-grid
//!
//! Structured grids, cut into blocks and stepped in parallel: a user brings
//! a stencil and a global grid; parsim chooses the process grid with the
//! least halo surface, keeps a halo of each neighbour's boundary layer,
//! refreshes it with non-blocking messages overlapped with the interior
//! computation, and produces exactly the sequential answer.
//!
//! ```
//! use parsim_comm::launch;
//! use parsim_grid::{run, Boundary, GridSpec, Heat5};
//!
//! let mut spec = GridSpec::new(vec![64, 48], 20);
//! spec.boundary = vec![Boundary::Dirichlet(0.0)];
//! let hot = |g: [usize; 3]| if g[1] == 32 && g[2] == 24 { 100.0 } else { 0.0 };
//! let digests = launch(4, |comm| {
//!     run(&comm, &spec, &Heat5 { alpha: 0.2 }, &hot, &mut |_| {}).map(|r| r.digest)
//! })?;
//! let one = launch(1, |comm| run(&comm, &spec, &Heat5 { alpha: 0.2 }, &hot, &mut |_| {}).map(|r| r.digest))?;
//! assert!(digests.iter().all(|d| *d == one[0])); // 4 ranks = 1 rank, bit for bit
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! Guarantees: the final field's digest (every cell keyed by its global
//! index) is the same for every number of ranks, decomposition, overlap
//! setting, deep-halo depth and threads per rank; global totals use the
//! exact sum, so they are bitwise independent of the rank count too.
//!
//! A step is: start the halo exchange (pack faces into contiguous buffers,
//! send, post receives), compute the interior cells that need no halo, wait,
//! fill the physical boundary, compute the boundary band, swap. With
//! `overlap = false` the exchange completes before any computation. With a
//! deep halo of `k`, a halo `k` radii wide is exchanged every `k` steps and
//! the cells in it are recomputed redundantly in between.
// Unsafe code is confined to `stream_store.rs` (SSE2/AVX2 streaming stores),
// the AVX2 builds of the row kernels in `stencil/builtin.rs`, the threads of
// a wavefront (`wave.rs`), and the huge-page advice and threaded halo copies
// in `field.rs`, each block with a SAFETY comment.
#![deny(unsafe_code)]

mod decomp;
mod engine;
mod field;
mod front;
mod halo;
mod output;
pub mod patterns;
mod region;
mod resilience;
mod stencil;
#[cfg(target_arch = "x86_64")]
#[allow(unsafe_code)]
mod stream_store;
pub mod tiles;
#[allow(unsafe_code)]
mod wave;

pub use decomp::{Block, DecompKind, Decomposition, RankLoad};
pub use engine::{plan_loads, run, run_resilient, run_with_field, GridReport, GridSpec, Guard, Reduction};
pub use field::{Cell, Field};
pub use front::Front;
pub use halo::{Boundary, HaloPlan, Reach};
pub use output::{gather_slice, viridis, write_png, write_vtk, Slice};
pub use region::Region;
pub use stencil::{CellFn, Heat27, Heat5, Heat7, Heat9, Life, Neighbourhood, Place, Real, Stencil};

/// Errors of `parsim-grid`.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum GridError {
    /// The grid, the decomposition or the stencil do not fit together.
    #[error("{0}")]
    Config(String),
    /// Communication failed.
    #[error(transparent)]
    Comm(#[from] parsim_comm::CommError),
    /// A checkpoint could not be written or restored.
    #[error("{0}")]
    Checkpoint(String),
    /// The state broke an invariant (a silent error): the run must roll
    /// back to its last checkpoint.
    #[error("invariant violated: {0}")]
    Invariant(String),
    /// The field went non-finite (inf or NaN): the run stops, naming the
    /// step and the rank.
    #[error("{0}")]
    NonFinite(String),
    /// Writing output failed.
    #[error("cannot write {path}: {msg}")]
    Io {
        /// The file.
        path: std::path::PathBuf,
        /// What went wrong.
        msg: String,
    },
}
