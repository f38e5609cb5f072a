//! # parsim
//!
//! The front door of parsim: write your model's rule and its parameters,
//! and get what the built-in models have — scenario files with file:line
//! errors, a `run` command with `--ranks/--backend/--set/--out/--trace/
//! --dry-run/--verify`, `summary.json` with the phase breakdown and the
//! digest, progress bars, `sweep` over any parameter with confidence
//! intervals, and charts with titles, labelled axes and legends.
//!
//! A model is a [`Model`]: a name, a serde parameter struct and a `run`
//! function that one rank executes over a [`comm::Comm`]. Inside `run` you
//! use an engine — [`grid`] for stencils, [`des`] for discrete events,
//! [`graph`] for vertex programs, [`abm`] for epidemics on contact networks
//! — or the `Comm` directly. [`Experiment`] turns it into a program:
//!
//! ```
//! use parsim::{comm::Comm, BoxError, Experiment, Model, Outcome, Rank};
//! use serde::{Deserialize, Serialize};
//!
//! /// A random walk of `steps` steps per walker; walkers are spread over the ranks.
//! struct Walk;
//!
//! #[derive(Clone, Serialize, Deserialize)]
//! #[serde(default)]
//! struct WalkParams { walkers: u64, steps: u64 }
//! impl Default for WalkParams { fn default() -> Self { WalkParams { walkers: 1000, steps: 100 } } }
//!
//! impl Model for Walk {
//!     type Params = WalkParams;
//!     fn name(&self) -> &str { "walk" }
//!     fn run<C: Comm>(&self, p: &WalkParams, rank: &mut Rank<'_, C>) -> Result<Outcome, BoxError> {
//!         let (me, size) = (rank.comm().rank() as u64, rank.comm().size() as u64);
//!         let mut sum_sq = 0i64;
//!         for w in (0..p.walkers).filter(|w| w % size == me) {
//!             // A stream keyed by (seed, walker): the same walk on any number of ranks.
//!             let mut s = parsim::core::rng::StreamKey::new(rank.seed()).with(w).stream();
//!             let x: i64 = (0..p.steps).map(|_| if s.bernoulli(0.5) { 1 } else { -1 }).sum();
//!             sum_sq += x * x;
//!         }
//!         let total = rank.comm().all_reduce(&[sum_sq], parsim::comm::ReduceOp::Sum)?[0];
//!         let msd = total as f64 / p.walkers as f64;
//!         Ok(Outcome::new().digest_of(&total).metric("mean_square_displacement", msd))
//!     }
//! }
//!
//! // In `main`: `Experiment::new(Walk).from_args()`; here, the same command line as a list.
//! let out = std::env::temp_dir().join("parsim-doc-walk");
//! let out = out.to_str().unwrap();
//! let one = Experiment::new(Walk).quiet().run_with(&["run", "--out", out])?;
//! let four = Experiment::new(Walk).quiet().run_with(&["run", "--ranks", "4", "--out", out])?;
//! assert_eq!(one.summary["digest"], four.summary["digest"]); // p-independent
//! let msd = four.summary["metrics"]["mean_square_displacement"].as_f64().unwrap();
//! assert!((msd - 100.0).abs() < 15.0); // E[x²] = steps
//! # Ok::<(), parsim::Error>(())
//! ```
//!
//! For a stencil there is a shorter way: [`StencilModel`] asks only for
//! the grid, the initial value of a cell and its update, and [`Stencil`]
//! makes it a `Model` (progress, digest, totals, a picture of the field).
//!
//! The program then takes `walk run --ranks 4 --set steps=400`,
//! `walk run my.toml --dry-run`, `walk sweep --param steps=100,200,400
//! --replications 10`, and under MPI `mpirun -n 4 walk run --backend mpi`
//! (with the `mpi` feature). The repository's `examples/` folder has one
//! such program per paradigm.
//!
//! Guarantees (DESIGN.md §2): a run's digest is a function of the scenario
//! and its seed only, when the model draws its random numbers from keyed
//! streams ([`core::rng::StreamKey`]); a model error or panic on one rank
//! ends the run on every rank with the rank, where it was (its last
//! progress) and the model's message; a non-finite metric is an error; bad
//! input exits with code 2 and names the file, the line and the key; every
//! output file is written atomically.

#![forbid(unsafe_code)]

/// The README's Rust examples, compiled and run as doctests.
#[cfg(doctest)]
#[doc = include_str!("../../../README.md")]
struct ReadmeDoctests;

mod experiment;
mod files;
pub mod logging;
mod model;
mod params;
pub mod plot;
mod progress;
pub mod resilience;
mod run;
mod scenario;
mod stencil_model;
mod sweep;

pub use experiment::{exit_code, parse_backend, print_phases, Experiment, RunArgs, SweepArgs};
pub use files::{check_output_dir, check_output_file, input_file_error, sweep_stale_temps, unreadable, STALE_AFTER};
pub use model::{check, BoxError, Model, Outcome, ParamError, Rank};
pub use progress::Progress;
pub use run::{peak_rss, read_run_table, toml_to_json, write_atomic, Backend, Finished, RunPlan, RunSettings};
pub use scenario::{InputError, Scenario, Section};
pub use stencil_model::{Stencil, StencilModel};
pub use sweep::{kill_self, parse_request, read_sweep_spec, Request};

/// Epidemics on contact networks ([`parsim_abm`]).
pub use parsim_abm as abm;
/// Checkpoint/restart, Young/Daly intervals, fault injection ([`parsim_ckpt`]).
pub use parsim_ckpt as ckpt;
/// Ranks, messages, collectives; the threads and MPI backends ([`parsim_comm`]).
pub use parsim_comm as comm;
/// Random streams, exact sums, digests, the phase clock ([`parsim_core`]).
pub use parsim_core as core;
/// Discrete-event simulation: sequential, conservative, windowed and Time Warp ([`parsim_des`]).
pub use parsim_des as des;
/// Pregel and gather-apply-scatter over partitioned graphs ([`parsim_graph`]).
pub use parsim_graph as graph;
/// Structured grids, halo exchange and stencils ([`parsim_grid`]).
pub use parsim_grid as grid;
/// Graph and geometric partitioning ([`parsim_partition`]).
pub use parsim_partition as partition;
/// Replications and sweeps ([`parsim_sweep`]).
pub use parsim_sweep as sweeps;

/// Errors of the front door.
#[derive(Debug)]
#[non_exhaustive]
pub enum Error {
    /// Bad input: a scenario, a key, a flag (exit code 2).
    Input(InputError),
    /// The run failed (a model error or panic, a failed rank).
    Run(String),
    /// A file could not be written.
    Io {
        /// The file.
        path: std::path::PathBuf,
        /// What went wrong.
        msg: String,
    },
}

impl std::fmt::Display for Error {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Error::Input(e) => write!(f, "{e}"),
            Error::Run(m) => write!(f, "{m}"),
            Error::Io { path, msg } => write!(f, "cannot write {}: {msg}", path.display()),
        }
    }
}

// No `source()`: the message already holds the input error's text (a
// chained report would print it twice).
impl std::error::Error for Error {}

impl From<InputError> for Error {
    fn from(e: InputError) -> Self {
        Error::Input(e)
    }
}
