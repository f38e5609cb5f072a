//! Replications and parameter sweeps: a bag of (point, replication) tasks,
//! each with its own random stream keyed by (seed, point, replication) —
//! never by the worker — so the results table is the same for any number of
//! workers, any backend and any order of completion.
//!
//! - [`SweepSpec`]: points ([`spec::grid`] of parameter lists, or
//!   [`spec::latin_hypercube`]), [`Replications`] (a fixed count, or a
//!   sequential stopping rule on a metric's confidence interval applied to
//!   each point's replications in order), common random numbers, retries.
//! - [`exec::run_threads`]: a pool of worker threads; [`exec::run_comm`]:
//!   master–worker over a `Comm` (MPI) with dynamic scheduling.
//! - [`Store`]: the task log, appended and fsync'd as tasks finish;
//!   `--resume` continues from it and gives the same table.
//! - [`Summary`]: n, mean, sd, se, Student-t interval, min, max, quantiles.
//!
//! ```
//! use parsim_sweep::{exec, spec, Replications, Store, SweepSpec};
//! use serde_json::json;
//!
//! let sweep = SweepSpec {
//!     points: spec::grid(&[("rate".into(), vec![json!(1.0), json!(2.0)])]),
//!     replications: Replications::Fixed(20),
//!     confidence: 0.95,
//!     common_random_numbers: true,
//!     retries: 1,
//!     seed: 7,
//!     faults: vec![],
//!     kills: vec![],
//! };
//! // A "model": the task's seed, scaled by the point's rate.
//! let run = |t: &parsim_sweep::Task, seed: u64| {
//!     let rate = [1.0, 2.0][t.point];
//!     Ok([("x".to_string(), rate * (seed % 1000) as f64)].into_iter().collect())
//! };
//! let a = exec::run_threads(&sweep, 1, &run, &mut Store::memory(), vec![], &|_| {})?;
//! let b = exec::run_threads(&sweep, 4, &run, &mut Store::memory(), vec![], &|_| {})?;
//! assert_eq!(a.points, b.points);
//! // Common random numbers: point 1 is exactly twice point 0.
//! assert_eq!(a.points[1].metrics["x"].mean, 2.0 * a.points[0].metrics["x"].mean);
//! # Ok::<(), parsim_sweep::SweepError>(())
//! ```
#![forbid(unsafe_code)]

mod error;
pub mod exec;
pub mod spec;
mod stats;
mod store;

pub use error::{Result, SweepError};
pub use exec::{PointResult, Status, SweepOutcome};
pub use spec::{Point, Replications, SweepSpec, Task};
pub use stats::{t_cdf, t_quantile, Summary};
pub use store::{Metrics, Record, Store};
