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
            engine::sequential::run::<C, M, queue::Pending<M::Payload>>(comm, model, cfg, &mut progress, None)
        }
        Engine::Conservative => engine::conservative::run(comm, model, cfg, &mut progress, None),
        Engine::Window => engine::window::run(comm, model, cfg, &mut progress, None),
        Engine::Optimistic => engine::optimistic::run(comm, model, cfg, &mut progress, None),
    }
}

/// [`run_with_progress`] with checkpoints, on every engine; each restarts
/// from its own checkpoints on any number of ranks. Where they are taken,
/// and what `ck` counts as boundaries:
///
/// | engine | boundary | checkpoint |
/// |---|---|---|
/// | optimistic (Time Warp) | GVT rounds | right after a GVT round, rolled back to GVT; rank 0 decides |
/// | window | windows | between two windows |
/// | sequential | lookahead-wide windows of simulated time | at a window's start; rank 0 decides |
/// | conservative (CMB) | lookahead-wide windows of simulated time | at a cut at a window's start, messages in flight received, channel clocks saved; rank 0 decides |
///
/// ```
/// use parsim_ckpt::{Checkpointer, Identity, Interval, Options};
/// use parsim_des::{models::Phold, DesConfig, Engine};
///
/// let phold = Phold { lps: 32, start_events: 4, mean: 1.0, lookahead: 0.1, remote: 0.25, end: 20.0 };
/// let dir = std::env::temp_dir().join(format!("parsim-des-doc-{}", std::process::id()));
/// let run = |ranks: usize, restart: bool| {
///     parsim_comm::launch(ranks, |comm| {
///         let mut o = Options::new(&dir, Some(Interval::Every(50)));
///         o.asynchronous = false;
///         o.restart = restart.then(|| dir.clone());
///         let mut ck = Checkpointer::new(&comm, o, Identity::new("phold", "window", "doc", 1)).expect("checkpointer");
///         let cfg = DesConfig::new(Engine::Conservative);
///         parsim_des::run_resilient(&comm, &phold, &cfg, None, Some(&mut ck)).map(|r| r.digest)
///     })
///     .expect("run")
/// };
/// let first = run(2, false);   // checkpoints at windows 50, 100, 150
/// let again = run(3, true);    // resumes at window 150 on 3 ranks
/// assert_eq!(first[0], again[0]);
/// # std::fs::remove_dir_all(&dir).ok();
/// ```
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
    let p = &mut progress;
    match cfg.engine {
        Engine::Optimistic => engine::optimistic::run(comm, model, cfg, p, Some(ck)),
        Engine::Window => engine::window::run(comm, model, cfg, p, Some(ck)),
        Engine::Sequential => {
            engine::sequential::run::<C, M, queue::Pending<M::Payload>>(comm, model, cfg, p, Some(ck))
        }
        Engine::Conservative => engine::conservative::run(comm, model, cfg, p, Some(ck)),
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
    engine::sequential::run::<C, M, Q>(comm, model, cfg, &mut None, None)
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
