//! The one trait a model implements to get the whole front door, what a
//! rank sees while it runs ([`Rank`]), and what it hands back ([`Outcome`]).

use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use parsim_comm::Comm;
use parsim_core::Digest;
use serde_json::{Map, Value};

use crate::progress::Progress;

/// Any error a model returns: `?` works on every error type.
pub type BoxError = Box<dyn std::error::Error + Send + Sync + 'static>;

/// A model that the front door can run: read parameters, check them, say
/// how the work spreads over the ranks, and run one rank of it.
///
/// The parameters are a plain serde struct: [`Experiment::new`](crate::Experiment::new)
/// reads them from the scenario's `[table]` (by default the model's name),
/// with `--set key=value` overrides and file:line errors. Every rank of a
/// run calls [`run`](Self::run) with the same parameters.
///
/// ```
/// use parsim::{Model, Outcome, Rank, BoxError, ParamError};
/// use serde::{Deserialize, Serialize};
///
/// /// The sum of 1..=n, each rank adding its share.
/// struct Sum;
/// #[derive(Clone, Serialize, Deserialize)]
/// #[serde(default)]
/// struct SumParams { n: u64 }
/// impl Default for SumParams { fn default() -> Self { SumParams { n: 100 } } }
///
/// impl Model for Sum {
///     type Params = SumParams;
///     fn name(&self) -> &str { "sum" }
///     fn check(&self, p: &SumParams) -> Result<(), ParamError> {
///         parsim::check::range("n", p.n, 1..=1_000_000_000)
///     }
///     fn run<C: parsim::comm::Comm>(&self, p: &SumParams, rank: &mut Rank<'_, C>) -> Result<Outcome, BoxError> {
///         let (r, size) = (rank.comm().rank() as u64, rank.comm().size() as u64);
///         let mine: u64 = (1..=p.n).filter(|i| i % size == r).sum();
///         let total = rank.comm().all_reduce(&[mine], parsim::comm::ReduceOp::Sum)?[0];
///         Ok(Outcome::new().digest_of(&total).metric("sum", total as f64))
///     }
/// }
///
/// let out = std::env::temp_dir().join("parsim-doc-sum");
/// let done = parsim::Experiment::new(Sum).quiet().run_with(&["run", "--ranks", "3", "--set", "n=10", "--out", out.to_str().unwrap()])?;
/// assert_eq!(done.summary["metrics"]["sum"], 55.0);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub trait Model: Sync {
    /// The model's parameters (one `[table]` of the scenario).
    type Params: Clone + Send + Sync + 'static;

    /// The model's name: `[run] model` and, unless [`table`](Self::table)
    /// says otherwise, the scenario table its parameters are read from.
    fn name(&self) -> &str;

    /// The scenario table of the parameters (`--set key=value` without a
    /// table goes there).
    fn table(&self) -> &str {
        self.name()
    }

    /// Checks the parameters beyond their types (ranges, relations); the
    /// error names the key, and the front door points at its line.
    fn check(&self, _params: &Self::Params) -> Result<(), ParamError> {
        Ok(())
    }

    /// What `--dry-run` prints: how the work would spread over `ranks`.
    fn describe(&self, _params: &Self::Params, ranks: usize) -> String {
        format!("model {} on {ranks} rank(s)\n", self.name())
    }

    /// Work done once per process before the ranks start (building an input
    /// every rank shares, say): timed as `prepare_s` in `summary.json`,
    /// apart from the ranks' `wall_s` and phases.
    fn prepare(&self, _params: &Self::Params, _seed: u64) -> Result<(), BoxError> {
        Ok(())
    }

    /// Runs this rank's share. Every rank returns the same digest (when the
    /// model has one) and rank 0's metrics go into `summary.json`.
    fn run<C: Comm>(&self, params: &Self::Params, rank: &mut Rank<'_, C>) -> Result<Outcome, BoxError>;
}

/// A parameter that fails [`Model::check`]: which key, and why.
#[derive(Debug, Clone, PartialEq)]
pub struct ParamError {
    /// The key (`tellers`, or `arrivals.rate` in a nested table).
    pub key: String,
    /// What was expected.
    pub msg: String,
}

impl ParamError {
    /// An error about `key`.
    pub fn new(key: impl Into<String>, msg: impl Into<String>) -> Self {
        ParamError { key: key.into(), msg: msg.into() }
    }
}

impl std::fmt::Display for ParamError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {}", self.key, self.msg)
    }
}

impl std::error::Error for ParamError {}

/// Checks for [`Model::check`].
pub mod check {
    use super::ParamError;
    use std::fmt::Display;
    use std::ops::RangeInclusive;

    /// `value` must lie in `range`.
    ///
    /// ```
    /// assert!(parsim::check::range("tellers", 3, 1..=100).is_ok());
    /// let e = parsim::check::range("rate", 2.5, 0.0..=1.0).unwrap_err();
    /// assert_eq!(e.to_string(), "rate: expected a value in 0..=1, found 2.5");
    /// ```
    pub fn range<T: PartialOrd + Display>(key: &str, value: T, range: RangeInclusive<T>) -> Result<(), ParamError> {
        if range.contains(&value) {
            Ok(())
        } else {
            Err(ParamError::new(key, format!("expected a value in {}..={}, found {value}", range.start(), range.end())))
        }
    }

    /// `cond` must hold; otherwise `msg` is the error about `key`.
    pub fn that(key: &str, cond: bool, msg: impl Into<String>) -> Result<(), ParamError> {
        if cond {
            Ok(())
        } else {
            Err(ParamError::new(key, msg))
        }
    }
}

/// Where a rank is, for error messages: the label and count of the last
/// progress it reported.
#[derive(Debug, Default)]
pub(crate) struct Whereabouts {
    pub(crate) label: Mutex<String>,
    pub(crate) step: AtomicU64,
    pub(crate) reported: std::sync::atomic::AtomicBool,
}

impl Whereabouts {
    pub(crate) fn set_label(&self, label: &str) {
        if let Ok(mut l) = self.label.lock() {
            if *l != label {
                *l = label.to_string();
            }
        }
    }

    pub(crate) fn record(&self, step: u64) {
        self.step.store(step, Ordering::Relaxed);
        self.reported.store(true, Ordering::Relaxed);
    }

    pub(crate) fn describe(&self) -> Option<String> {
        if !self.reported.load(Ordering::Relaxed) {
            return None;
        }
        let label = self.label.lock().map(|l| l.clone()).unwrap_or_default();
        Some(format!("{label} {}", self.step.load(Ordering::Relaxed)))
    }
}

/// What one rank of a run sees: its `Comm`, the seed, the output
/// directory, progress reporting and the run's flags.
pub struct Rank<'a, C: Comm> {
    comm: &'a C,
    seed: u64,
    out: &'a Path,
    threads_per_rank: usize,
    verify: bool,
    outputs: bool,
    progress: bool,
    pub(crate) whereabouts: Arc<Whereabouts>,
    pub(crate) resilience: Option<&'a crate::resilience::Resilience>,
    /// What the checkpointer reported (JSON text), for the summary.
    pub(crate) ckpt_report: Mutex<Value>,
    /// Replicated execution: every replica's ranks and this rank's replica.
    pub(crate) replica: Option<(&'a C, usize)>,
}

impl<'a, C: Comm> Rank<'a, C> {
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn new(
        comm: &'a C,
        seed: u64,
        out: &'a Path,
        threads_per_rank: usize,
        verify: bool,
        outputs: bool,
        progress: bool,
    ) -> Self {
        Rank {
            comm,
            seed,
            out,
            threads_per_rank,
            verify,
            outputs,
            progress,
            whereabouts: Arc::default(),
            resilience: None,
            ckpt_report: Mutex::new(Value::Null),
            replica: None,
        }
    }

    /// The checkpointer of this run (`--checkpoint-every`, `--restart`,
    /// `--inject` …), for an engine whose boundaries are called `unit`
    /// (`step`, `day`, `gvt`); `None` when no such flag was given. Pass it
    /// to the engine, then hand it back to [`checkpoints_done`](Self::checkpoints_done).
    /// When the run restarts, rank 0 says from where (and what it skipped).
    pub fn checkpointer(&self, engine: &str, unit: &str) -> Result<Option<parsim_ckpt::Checkpointer<'a, C>>, BoxError> {
        let Some(r) = self.resilience else { return Ok(None) };
        let id = parsim_ckpt::Identity::new(engine, unit, &r.fingerprint, self.seed);
        let mut options = r.options.clone();
        if let Some((_, idx)) = self.replica {
            options.replica.0 = idx;
        }
        let mut ck = parsim_ckpt::Checkpointer::new(self.comm, options, id)?;
        if let Some((world, _)) = self.replica {
            ck.replicated(world);
        }
        if let Some(rs) = ck.restarting() {
            if self.is_root() && self.replica.is_none_or(|(_, idx)| idx == 0) {
                for n in &rs.notes {
                    tracing::warn!("{n}");
                }
                tracing::info!("{}", rs.describe());
            }
            if let Ok(mut rep) = self.ckpt_report.lock() {
                rep["restart"] = serde_json::json!({
                    "seq": rs.manifest.seq,
                    "boundary": rs.manifest.boundary,
                    "unit": rs.manifest.unit,
                    "ranks": rs.manifest.ranks,
                    "sources": rs.sources.iter().map(|l| l.number()).collect::<Vec<_>>(),
                    "notes": rs.notes,
                    "message": rs.describe(),
                });
            }
        }
        Ok(Some(ck))
    }

    /// The slowdown `--inject slow:rank=R,factor=F` asks of this run, as
    /// (R, F), for engines that balance load (they make rank R F times
    /// slower; measured-time balancing then moves work away from it).
    pub fn slowdown(&self) -> Option<(usize, f64)> {
        if self.replica.is_some_and(|(_, idx)| idx > 0) {
            return None;
        }
        self.resilience?.options.inject.iter().find_map(|i| match i.fault {
            parsim_ckpt::Fault::Slow { rank, factor } => Some((rank, factor)),
            _ => None,
        })
    }

    /// Waits for the checkpointer's background writes and records what
    /// checkpointing cost (the summary's `checkpoint` section).
    pub fn checkpoints_done(&self, ck: Option<parsim_ckpt::Checkpointer<'a, C>>) {
        let (Some(ck), Some(r)) = (ck, self.resilience) else { return };
        let stats = ck.finish();
        if let Ok(mut rep) = self.ckpt_report.lock() {
            rep["stats"] = parsim_ckpt::Checkpointer::<C>::stats_json(&stats, &r.options);
        }
    }

    /// This rank's communicator (rank number, size, messages, collectives).
    pub fn comm(&self) -> &'a C {
        self.comm
    }

    /// The run's seed (`[run] seed`, `--seed`, or a sweep task's own).
    pub fn seed(&self) -> u64 {
        self.seed
    }

    /// Whether this is rank 0, the one that writes files and prints.
    pub fn is_root(&self) -> bool {
        self.comm.rank() == 0
    }

    /// The output directory (created before the model runs, on rank 0's
    /// machine). Inside a sweep it is a scratch directory.
    pub fn out_dir(&self) -> &'a Path {
        self.out
    }

    /// `[run] threads_per_rank`: threads a rank may use for its inner loops.
    pub fn threads_per_rank(&self) -> usize {
        self.threads_per_rank
    }

    /// `--verify`: print analytic checks beside the simulated values.
    pub fn verify(&self) -> bool {
        self.verify
    }

    /// Whether progress is shown at all (off with `-q`, inside sweeps and
    /// in [`Experiment::quiet`](crate::Experiment::quiet)); [`progress`](Self::progress)
    /// already shows it on rank 0 only.
    pub fn shows_progress(&self) -> bool {
        self.progress
    }

    /// Whether the model should write its own files and print its result
    /// lines (false inside a sweep, where only the metrics count).
    pub fn writes_outputs(&self) -> bool {
        self.outputs
    }

    /// A progress report of `total` units labelled `label` ("days",
    /// "steps"): a bar on a terminal, plain lines otherwise, shown on rank 0
    /// only. The last amount set also tells error messages where a failing
    /// rank was ("rank 1 failed at steps 37").
    pub fn progress(&self, label: &str, total: u64) -> Progress {
        self.whereabouts.set_label(label);
        let quiet = !self.progress || !self.is_root();
        Progress::new(label, total, quiet).tracking(self.whereabouts.clone())
    }

    /// Records how far this rank is (for error messages) without showing a bar.
    pub fn at(&self, label: &str, step: u64) {
        self.whereabouts.set_label(label);
        self.whereabouts.record(step);
    }
}

/// What a model hands back from each rank: the digest of its canonical
/// final state (when it has one), its metrics, and lines to print.
#[derive(Debug, Clone, Default)]
pub struct Outcome {
    pub(crate) digest: Option<Digest>,
    pub(crate) metrics: Map<String, Value>,
    pub(crate) non_finite: Vec<String>,
    pub(crate) lines: Vec<String>,
    pub(crate) sections: Map<String, Value>,
}

impl Outcome {
    /// An outcome with no digest and no metrics yet.
    pub fn new() -> Self {
        Outcome::default()
    }

    /// The digest of the final state. A model without one still runs; its
    /// summary says `"digest": "unavailable"` rather than invent one.
    pub fn digest(mut self, d: Digest) -> Self {
        self.digest = Some(d);
        self
    }

    /// The digest of a serialisable value (postcard bytes through the
    /// 128-bit digester): handy for a final state that every rank holds.
    ///
    /// # Panics
    /// If `value` cannot be encoded (a serde implementation that fails):
    /// the run then ends with the model's message, never with a digest of nothing.
    pub fn digest_of<T: serde::Serialize>(mut self, value: &T) -> Self {
        let bytes = parsim_core::wire::encode(value).expect("Outcome::digest_of: the value must serialise");
        let mut d = parsim_core::Digester::new();
        d.write_bytes(&bytes);
        self.digest = Some(d.finish());
        self
    }

    /// A numeric metric (swept over by `sweep`). A non-finite value fails
    /// the run with the metric's name: a NaN in a result is a bug, not a figure.
    pub fn metric(mut self, name: &str, value: f64) -> Self {
        if !value.is_finite() {
            self.non_finite.push(format!("{name} = {value}"));
        }
        self.metrics.insert(name.to_string(), serde_json::json!(value));
        self
    }

    /// Any JSON value as a metric (lists, tables, strings).
    pub fn value(mut self, name: &str, value: Value) -> Self {
        self.metrics.insert(name.to_string(), value);
        self
    }

    /// Every metric at once, from a JSON object (other values are ignored).
    pub fn metrics(mut self, obj: Value) -> Self {
        if let Value::Object(m) = obj {
            self.metrics.extend(m);
        }
        self
    }

    /// A section of its own at the top of `summary.json` (`"lb"`, say),
    /// beside `metrics`; it cannot replace a key the front door writes.
    ///
    /// ```
    /// let o = parsim::Outcome::new().section("lb", serde_json::json!({ "rebalances": 2 }));
    /// assert!(o.metrics_map().is_empty());
    /// ```
    pub fn section(mut self, name: &str, value: Value) -> Self {
        self.sections.insert(name.to_string(), value);
        self
    }

    /// A line printed by rank 0 after the run (not inside sweeps).
    pub fn line(mut self, text: impl Into<String>) -> Self {
        self.lines.push(text.into());
        self
    }

    /// The digest, if the model gave one.
    pub fn digest_value(&self) -> Option<Digest> {
        self.digest
    }

    /// The metrics.
    pub fn metrics_map(&self) -> &Map<String, Value> {
        &self.metrics
    }
}
