//! Checkpoint, restart, supervision and fault injection on the command
//! line: the `--checkpoint*`, `--restart`, `--auto-restart` and `--inject`
//! flags of `run`, turned into [`parsim_ckpt::Options`] for every rank.

use std::path::{Path, PathBuf};

use clap::Args;
use parsim_ckpt::{Injection, Interval, Keep, Options};
use serde_json::{json, Value};

use crate::scenario::InputError;

/// The environment variable `parsim supervise` sets to the relaunch number
/// (0: the first launch). A relaunched run restarts from its checkpoint
/// directory and arms no injected faults.
pub const ATTEMPT_ENV: &str = "PARSIM_ATTEMPT";

/// The checkpoint flags of `run`.
#[derive(Args, Debug, Clone, Default)]
pub struct CheckpointArgs {
    /// Checkpoint every N of the model's boundaries (grid steps, epidemic days, PHOLD GVT rounds).
    #[arg(long, value_name = "N", help_heading = "Checkpoint and restart")]
    pub checkpoint_every: Option<u64>,
    /// Checkpoint about every DURATION of run time (90, 30s, 5m, 1h).
    #[arg(long, value_name = "DURATION", help_heading = "Checkpoint and restart")]
    pub checkpoint_seconds: Option<String>,
    /// `auto`: checkpoint at Daly's optimum for --mtbf, re-estimating the checkpoint cost as it goes.
    #[arg(long, value_name = "auto", help_heading = "Checkpoint and restart")]
    pub checkpoint: Option<String>,
    /// Mean time between interrupts for --checkpoint auto (e.g. 10m, 6h).
    #[arg(long, value_name = "DURATION", help_heading = "Checkpoint and restart")]
    pub mtbf: Option<String>,
    /// Where checkpoints go (default: OUT/checkpoints).
    #[arg(long, value_name = "DIR", help_heading = "Checkpoint and restart")]
    pub checkpoint_dir: Option<PathBuf>,
    /// Write checkpoints in the simulation's thread instead of in the background.
    #[arg(long, help_heading = "Checkpoint and restart")]
    pub checkpoint_sync: bool,
    /// Checkpoints kept per level (default 2).
    #[arg(long, value_name = "N", help_heading = "Checkpoint and restart")]
    pub checkpoint_keep: Option<usize>,
    /// Every K-th checkpoint also goes to the shared level 3 (default 4; 0: never).
    #[arg(long, value_name = "K", help_heading = "Checkpoint and restart")]
    pub shared_every: Option<u64>,
    /// No partner copies (level 2).
    #[arg(long, help_heading = "Checkpoint and restart")]
    pub no_partner: bool,
    /// Restart from the newest valid checkpoint in DIR (falling back to partner copies, then older ones).
    #[arg(long, value_name = "DIR", help_heading = "Checkpoint and restart")]
    pub restart: Option<PathBuf>,
    /// After a failure, relaunch from the newest checkpoint, up to N times (threads backend; under MPI use `parsim supervise`).
    #[arg(long, value_name = "N", help_heading = "Checkpoint and restart")]
    pub auto_restart: Option<u32>,
    /// Replicated execution: run every rank twice (2 × ranks threads or MPI processes) and compare the
    /// replicas' states at every checkpoint (--checkpoint-every N) and their digests at the end; a difference
    /// is a silent error: nothing is saved and the run rolls back (with --auto-restart or `parsim supervise`).
    #[arg(long, value_name = "2", help_heading = "Checkpoint and restart")]
    pub replicate: Option<usize>,
    /// Inject a fault: kill:rank=R,step=S[,when=write] | corrupt:level=L,rank=R | bitflip:rank=R,step=S (day=, gvt= … per model; repeatable).
    #[arg(long, value_name = "FAULT", help_heading = "Checkpoint and restart")]
    pub inject: Vec<String>,
}

/// The checkpoint settings of a run, validated.
#[derive(Clone, Debug)]
pub struct Resilience {
    /// What every rank's checkpointer gets (`restart` already resolved).
    pub options: Options,
    /// The scenario's fingerprint (a checkpoint must match it).
    pub fingerprint: String,
    /// In-process relaunches left after a failure (threads backend).
    pub auto_restart: u32,
}

impl CheckpointArgs {
    /// Whether any flag was given.
    pub fn any(&self) -> bool {
        self.checkpoint_every.is_some()
            || self.checkpoint_seconds.is_some()
            || self.checkpoint.is_some()
            || self.restart.is_some()
            || self.auto_restart.is_some()
            || !self.inject.is_empty()
            || self.replicate.is_some()
            || std::env::var_os(ATTEMPT_ENV).is_some()
    }

    /// Validates the flags for a run writing to `out`.
    pub fn resolve(&self, out: &Path, resolved: &Value, mpi: bool) -> Result<Option<Resilience>, InputError> {
        if !self.any() {
            if self.mtbf.is_some() {
                return Err(InputError::flag("--mtbf", "is for --checkpoint auto"));
            }
            return Ok(None);
        }
        let given = [self.checkpoint_every.is_some(), self.checkpoint_seconds.is_some(), self.checkpoint.is_some()];
        if given.iter().filter(|g| **g).count() > 1 {
            return Err(InputError::flag(
                "--checkpoint-every",
                "give one of --checkpoint-every, --checkpoint-seconds and --checkpoint auto",
            ));
        }
        let duration =
            |flag: &str, s: &str| parsim_ckpt::parse_duration(s).map_err(|e| InputError::flag(flag, e.to_string()));
        let interval = if let Some(n) = self.checkpoint_every {
            if n == 0 {
                return Err(InputError::flag("--checkpoint-every 0", "the interval must be at least 1"));
            }
            Some(Interval::Every(n))
        } else if let Some(s) = &self.checkpoint_seconds {
            Some(Interval::Seconds(duration("--checkpoint-seconds", s)?))
        } else if let Some(c) = &self.checkpoint {
            match c.as_str() {
                "auto" => {
                    let m = self.mtbf.as_deref().ok_or_else(|| {
                        InputError::flag(
                            "--checkpoint auto",
                            "needs --mtbf DURATION (the mean time between interrupts)",
                        )
                    })?;
                    Some(Interval::Auto { mtbf: duration("--mtbf", m)? })
                }
                "none" => None,
                other => {
                    return Err(InputError::flag("--checkpoint", format!("expected auto or none, found \"{other}\"")))
                }
            }
        } else {
            None
        };
        if self.mtbf.is_some() && !matches!(interval, Some(Interval::Auto { .. })) {
            return Err(InputError::flag("--mtbf", "is for --checkpoint auto"));
        }
        let replicas =
            match self.replicate {
                None | Some(1) => 1,
                Some(2) => {
                    if !matches!(interval, Some(Interval::Every(_))) {
                        return Err(InputError::flag(
                            "--replicate 2",
                            "the replicas compare their states at checkpoints: give --checkpoint-every N \
                         (time-based intervals could fall at different boundaries in each replica)",
                        ));
                    }
                    2
                }
                Some(n) => return Err(InputError::flag(
                    &format!("--replicate {n}"),
                    "expected 2: two replicas detect a silent error and roll back (voting among three is not built)",
                )),
            };
        if mpi && self.auto_restart.is_some() {
            return Err(InputError::flag(
                "--auto-restart",
                "under MPI a failed rank ends the whole job: supervise it instead, \
                 `parsim supervise --restarts N -- mpirun -n P parsim run … --backend mpi`",
            ));
        }
        let inject = self
            .inject
            .iter()
            .map(|s| Injection::parse(s).map_err(|e| InputError::flag("--inject", e.to_string())))
            .collect::<Result<Vec<_>, _>>()?;
        let dir = self.checkpoint_dir.clone().unwrap_or_else(|| out.join("checkpoints"));
        let mut options = Options::new(&dir, interval);
        options.asynchronous = !self.checkpoint_sync;
        options.partner = !self.no_partner;
        if let Some(k) = self.checkpoint_keep {
            if k == 0 {
                return Err(InputError::flag("--checkpoint-keep 0", "keep at least one checkpoint per level"));
            }
            options.keep = Keep { own: k, partner: k, shared: k };
        }
        if let Some(k) = self.shared_every {
            options.shared_every = k;
        }
        options.inject = inject;
        options.replica = (0, replicas);
        options.restart = self.restart.clone();
        // A relaunch by `parsim supervise`: restart from the checkpoint directory.
        let attempt: u32 = match std::env::var(ATTEMPT_ENV) {
            Ok(v) => {
                v.parse().map_err(|_| InputError::flag(ATTEMPT_ENV, format!("expected a number, found \"{v}\"")))?
            }
            Err(_) => 0,
        };
        if attempt > 0 {
            options.attempt = attempt;
            if options.restart.is_none() {
                options.restart = Some(dir);
                options.restart_may_be_empty = true;
            }
        }
        let fingerprint = fingerprint(resolved);
        if let Some(r) = &options.restart {
            if !options.restart_may_be_empty {
                // Refused here (exit 2) before any rank starts.
                parsim_ckpt::precheck(r, &fingerprint).map_err(|e| InputError::flag("--restart", e.to_string()))?;
            }
        }
        Ok(Some(Resilience { options, fingerprint, auto_restart: self.auto_restart.unwrap_or(0) }))
    }
}

/// A fingerprint of what determines a run's result: the resolved scenario
/// without `[run]`'s ranks, backend, output directory and threads.
pub fn fingerprint(resolved: &Value) -> String {
    let mut v = resolved.clone();
    if let Some(run) = v.get_mut("run").and_then(Value::as_object_mut) {
        for k in ["ranks", "backend", "out", "threads_per_rank"] {
            run.remove(k);
        }
    }
    let mut d = parsim_core::Digester::new();
    d.write_str(&v.to_string());
    d.finish().to_string()[..16].to_string()
}

/// The summary's `checkpoint` section from every rank's report.
pub(crate) fn summary(per_rank: &[Option<String>], attempts: &[String]) -> Option<Value> {
    let reports: Vec<Value> = per_rank
        .iter()
        .map(|r| r.as_deref().and_then(|s| serde_json::from_str(s).ok()).unwrap_or(Value::Null))
        .collect();
    if reports.iter().all(Value::is_null) && attempts.is_empty() {
        return None;
    }
    let col = |k: &str| -> Value { Value::Array(reports.iter().map(|r| r["stats"][k].clone()).collect()) };
    let r0 = reports.first().cloned().unwrap_or(Value::Null);
    Some(json!({
        "dir": r0["stats"]["dir"],
        "interval": r0["stats"]["interval"],
        "asynchronous": r0["stats"]["asynchronous"],
        "checkpoints": r0["stats"]["checkpoints"],
        "at": r0["stats"]["at"],
        "tau_s": r0["stats"]["tau_s"],
        "snapshot_s": col("snapshot_s"),
        "write_s": col("write_s"),
        "compress_s": col("compress_s"),
        "raw_bytes": col("raw_bytes"),
        "file_bytes": col("file_bytes"),
        "failures": col("failures"),
        "replicas": r0["stats"]["replicas"],
        "boundaries": r0["stats"]["boundaries"],
        "jitter_s": col("jitter_s"),
        "replica_checks": col("replica_checks"),
        "replica_skipped": col("replica_skipped"),
        "restarted_from": r0["restart"],
        "restart_pieces_read": col("restart_pieces_read"),
        "restart_bytes_read": col("restart_bytes_read"),
        "relaunches": attempts,
    }))
}
