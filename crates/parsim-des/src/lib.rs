//! Parallel discrete-event simulation with one model API and four engines.
//!
//! A [`Model`] is a set of logical processes (LPs) with states, exchanging
//! timestamped [`Event`]s. States are any serde type (an enum gives LPs of
//! different kinds: a door and its tellers); payloads are plain data
//! ([`bytemuck::Pod`], the fast path) or any `Clone` serde type wrapped in
//! [`Serde`] (an enum of event kinds with their data, strings, vectors). Events are totally ordered by (time, sending LP,
//! the sender's send counter) — see [`Order`] — and each event's random
//! stream is keyed by (seed, LP, the LP's event count), so the committed
//! history is one and the same on every engine, rank count and backend; every
//! run reports its [`Report::digest`].
//!
//! | engine | synchronisation |
//! |---|---|
//! | [`Engine::Sequential`] | one 4-ary heap on rank 0 |
//! | [`Engine::Conservative`] | Chandy–Misra–Bryant, null messages |
//! | [`Engine::Window`] | synchronous windows of width lookahead (YAWNS) |
//! | [`Engine::Optimistic`] | Time Warp: rollback, anti-messages, Mattern GVT, fossil collection, memory bound |
//!
//! ```
//! use parsim_des::{models::Phold, DesConfig, Engine};
//!
//! let phold = Phold { lps: 64, start_events: 4, mean: 1.0, lookahead: 0.1, remote: 0.25, end: 20.0 };
//! let digests: Vec<_> = Engine::ALL
//!     .iter()
//!     .map(|&engine| {
//!         let reports = parsim_comm::launch(2, |comm| parsim_des::run(&comm, &phold, &DesConfig::new(engine)))
//!             .expect("run");
//!         reports[0].digest
//!     })
//!     .collect();
//! assert!(digests.iter().all(|d| *d == digests[0]));
//! ```

mod config;
mod engine;
mod error;
mod model;
pub mod models;
mod payload;
pub mod queue;
mod stats;

use parsim_comm::Comm;

pub use config::{Cancellation, DesConfig, Engine, GvtAlgorithm, StateSaving};
pub use engine::Report;
pub use error::{DesError, Result};
pub use model::{time_from_key, time_key, Ctx, Event, LpId, Model, Order};
pub use payload::{Payload, Serde};
pub use stats::DesStats;

/// A progress callback, called on rank 0 now and then with
/// (GVT or the time reached, the end time, events committed on rank 0).
pub type ProgressFn<'a> = Option<&'a mut dyn FnMut(f64, f64, u64)>;

/// Runs `model` with `cfg` on this rank; call it on every rank of `comm`.
///
/// Errors (a bad send, a bad configuration, a failed peer) are returned on
/// every rank; none is left waiting.
pub fn run<C: Comm, M: Model>(comm: &C, model: &M, cfg: &DesConfig) -> Result<Report<M::State>> {
    run_with_progress(comm, model, cfg, None)
}

/// [`run`], calling `progress` on rank 0 as the simulation advances.
pub fn run_with_progress<C: Comm, M: Model>(
    comm: &C,
    model: &M,
    cfg: &DesConfig,
    mut progress: ProgressFn<'_>,
) -> Result<Report<M::State>> {
    check(model, cfg)?;
    if comm.rank() != 0 {
        progress = None;
    }
    match cfg.engine {
        Engine::Sequential => {
            engine::sequential::run::<C, M, queue::Pending<M::Payload>>(comm, model, cfg, &mut progress)
        }
        Engine::Conservative => engine::conservative::run(comm, model, cfg, &mut progress),
        Engine::Window => engine::window::run(comm, model, cfg, &mut progress, None),
        Engine::Optimistic => engine::optimistic::run(comm, model, cfg, &mut progress, None),
    }
}

/// [`run_with_progress`] with checkpoints: the optimistic engine (Time
/// Warp) checkpoints right after GVT rounds (`ck` counts GVT rounds, rank 0
/// decides), the window engine between windows (`ck` counts windows); each
/// restarts from its own checkpoints on any number of ranks. The sequential and CMB engines refuse a checkpointer.
pub fn run_resilient<C: Comm, M: Model>(
    comm: &C,
    model: &M,
    cfg: &DesConfig,
    mut progress: ProgressFn<'_>,
    ck: Option<&mut parsim_ckpt::Checkpointer<'_, C>>,
) -> Result<Report<M::State>> {
    let Some(ck) = ck else { return run_with_progress(comm, model, cfg, progress) };
    check(model, cfg)?;
    if comm.rank() != 0 {
        progress = None;
    }
    match cfg.engine {
        Engine::Optimistic => engine::optimistic::run(comm, model, cfg, &mut progress, Some(ck)),
        Engine::Window => engine::window::run(comm, model, cfg, &mut progress, Some(ck)),
        other => Err(DesError::Config(format!(
            "checkpoints are taken by the optimistic engine (Time Warp, after GVT rounds) and the window engine \
             (between windows); the {} engine does not checkpoint yet: use des.engine = \"optimistic\" or \
             \"window\"",
            other.name()
        ))),
    }
}

/// [`run`] with the sequential engine on a chosen pending-event set (for
/// measuring one against another).
pub fn run_sequential_with<C: Comm, M: Model, Q: queue::PendingSet<M::Payload>>(
    comm: &C,
    model: &M,
    cfg: &DesConfig,
) -> Result<Report<M::State>> {
    check(model, cfg)?;
    engine::sequential::run::<C, M, Q>(comm, model, cfg, &mut None)
}

fn check<M: Model>(model: &M, cfg: &DesConfig) -> Result<()> {
    cfg.validate().map_err(DesError::Config)?;
    if model.lps() == 0 {
        return Err(DesError::Config("the model has no LPs".into()));
    }
    let (la, end) = (model.lookahead(), model.end_time());
    if !(la >= 0.0 && la.is_finite()) {
        return Err(DesError::Config(format!("the model's lookahead must be finite and >= 0 (got {la})")));
    }
    if end.is_nan() {
        return Err(DesError::Config("the model's end time is NaN".into()));
    }
    if matches!(cfg.engine, Engine::Conservative | Engine::Window) && la <= 0.0 {
        return Err(DesError::Config(format!(
            "engine {} needs a positive lookahead, and the model declares {la}: with zero lookahead no rank can \
             ever execute an event before knowing every other rank's, so nothing would run in parallel \
             (use engine = \"optimistic\" or \"sequential\")",
            cfg.engine.name()
        )));
    }
    if cfg.state_saving == StateSaving::Reverse && !model.reversible() {
        return Err(DesError::Config(
            "state_saving = \"reverse\" needs a model with a reverse handler (Model::reversible)".into(),
        ));
    }
    Ok(())
}
