//! From a validated scenario to a finished run: pick the backend, run the
//! model on every rank, collect phases, counters and traces on rank 0, and
//! write `summary.json` (atomically) and the trace.

use std::path::{Path, PathBuf};
use std::time::Instant;

use anyhow::{Context, Result};
use parsim_comm::Comm;
use parsim_core::{trace::Trace, Digest, PhaseReport};
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};

use crate::abm::{self, AbmSetup};
use crate::des::{self, DesSetup};
use crate::grid::{self, GridConfig};
use crate::ring::{self, RingConfig};
use crate::scenario::{InputError, Scenario};

/// What a model hands back on every rank.
pub struct ModelOutput {
    /// The digest of the canonical final state (equal on every rank).
    pub digest: Digest,
    /// Model-specific figures for `summary.json`.
    pub metrics: Value,
}

/// What the model code may ask of the run.
pub struct RunContext {
    /// The run's seed.
    pub seed: u64,
    /// Whether to show progress (on rank 0).
    pub progress: bool,
    /// Whether to print analytic checks beside the results (`--verify`).
    pub verify: bool,
    /// Whether the model writes its own files and summary lines (off inside sweeps).
    pub outputs: bool,
}

/// The models the binary knows.
#[derive(Clone, Debug)]
pub enum Model {
    /// `model = "ring"`.
    Ring(RingConfig),
    /// `model = "grid"`.
    Grid(GridConfig),
    /// `model = "phold"` or `"queues"`.
    Des(DesSetup),
    /// `model = "epidemic"`.
    Epidemic(AbmSetup),
}

impl Model {
    fn name(&self) -> &'static str {
        match self {
            Model::Ring(_) => "ring",
            Model::Grid(_) => "grid",
            Model::Des(d) => match d.model {
                des::DesModel::Phold(_) => "phold",
                des::DesModel::Queues(_) => "queues",
            },
            Model::Epidemic(_) => "epidemic",
        }
    }

    pub(crate) fn run<C: Comm>(&self, comm: &C, ctx: &RunContext, out: &Path) -> Result<ModelOutput> {
        Ok(match self {
            Model::Ring(cfg) => ring::run(comm, cfg, ctx)?,
            Model::Grid(cfg) => grid::run(comm, cfg, ctx, out)?,
            Model::Des(setup) => des::run(comm, setup, ctx)?,
            Model::Epidemic(setup) => abm::run(comm, setup, ctx, out)?,
        })
    }

    /// What `--dry-run` prints: how the work would be spread over `ranks`.
    pub fn describe(&self, ranks: usize) -> Result<String> {
        Ok(match self {
            Model::Ring(cfg) => ring::describe(cfg, ranks),
            Model::Grid(cfg) => cfg.describe(ranks)?,
            Model::Des(setup) => setup.describe(ranks),
            Model::Epidemic(setup) => setup.describe(ranks),
        })
    }
}

/// Which backend runs the ranks.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Backend {
    /// N threads in this process.
    Threads,
    /// One process per rank under mpirun.
    Mpi,
}

impl Backend {
    /// Parses `threads` / `mpi`.
    pub fn parse(s: &str) -> Option<Backend> {
        match s {
            "threads" => Some(Backend::Threads),
            "mpi" => Some(Backend::Mpi),
            _ => None,
        }
    }

    fn name(self) -> &'static str {
        match self {
            Backend::Threads => "threads",
            Backend::Mpi => "mpi",
        }
    }
}

/// Everything `parsim run` needs, validated.
#[derive(Clone, Debug)]
pub struct RunPlan {
    /// The scenario file.
    pub scenario: PathBuf,
    /// The model and its configuration.
    pub model: Model,
    /// The seed.
    pub seed: u64,
    /// Ranks (threads backend; under MPI the world size decides).
    pub ranks: usize,
    /// Whether `ranks` was given explicitly with `--ranks` (checked against the MPI world size).
    #[cfg_attr(not(feature = "mpi"), allow(dead_code))]
    pub ranks_from_flag: bool,
    /// The backend.
    pub backend: Backend,
    /// Threads per rank (recorded; engines that use inner threads read it).
    pub threads_per_rank: usize,
    /// Output directory.
    pub out: PathBuf,
    /// Chrome trace file, if asked for.
    pub trace: Option<PathBuf>,
    /// `--verify`: print analytic checks beside the results.
    pub verify: bool,
}

/// Reads the `[run]` table and the model's table.
pub fn plan(
    sc: &mut Scenario,
    out: Option<PathBuf>,
    trace: Option<PathBuf>,
    ranks_from_flag: bool,
) -> Result<RunPlan, InputError> {
    if sc.has_table("sweep") {
        return Err(sc.error_at("sweep", "", "this scenario describes a sweep: run it with `parsim sweep`"));
    }
    let mut run = sc.section("run", true)?;
    let model = run.choice("model", None, &["ring", "grid", "phold", "queues", "epidemic"])?;
    let seed = run.int("seed", Some(0), 0..=u64::MAX)?;
    let ranks = run.int("ranks", Some(1), 1..=65_536)? as usize;
    let backend = run.choice("backend", Some("threads"), &["threads", "mpi"])?;
    let threads_per_rank = run.int("threads_per_rank", Some(1), 1..=1024)? as usize;
    let out_key = run.string("out", None)?;
    run.finish()?;
    let mut threads_per_rank = threads_per_rank;
    let model = match model.as_str() {
        "ring" => Model::Ring(RingConfig::from_scenario(sc)?),
        "grid" => {
            let cfg = GridConfig::from_scenario(sc, threads_per_rank)?;
            if backend == "threads" {
                cfg.check(sc, ranks)?;
            }
            threads_per_rank = cfg.spec.threads_per_rank;
            Model::Grid(cfg)
        }
        "phold" | "queues" => Model::Des(DesSetup::from_scenario(sc, &model)?),
        "epidemic" => Model::Epidemic(AbmSetup::from_scenario(sc, threads_per_rank)?),
        other => unreachable!("validated model {other}"),
    };
    sc.finish()?;
    let stem = sc.path().file_stem().map_or_else(|| "run".to_string(), |s| s.to_string_lossy().into_owned());
    let out = out.or(out_key.map(PathBuf::from)).unwrap_or_else(|| PathBuf::from("out").join(stem));
    Ok(RunPlan {
        scenario: sc.path().to_path_buf(),
        model,
        seed,
        ranks,
        ranks_from_flag,
        backend: Backend::parse(&backend).expect("validated backend"),
        threads_per_rank,
        out,
        trace,
        verify: false,
    })
}

/// What rank 0 gathers from everyone at the end.
#[derive(Serialize, Deserialize)]
struct RankEnd {
    report: PhaseReport,
    trace: Trace,
}

/// The result of one run, as rank 0 sees it.
pub struct Finished {
    /// `summary.json`'s content.
    pub summary: Value,
    /// Where it was written.
    pub summary_path: PathBuf,
}

fn run_rank<C: Comm>(comm: C, plan: &RunPlan) -> Result<Option<Finished>> {
    comm.barrier()?;
    let t0 = Instant::now();
    let ctx = RunContext { seed: plan.seed, progress: true, verify: plan.verify, outputs: true };
    let out = plan.model.run(&comm, &ctx, &plan.out)?;
    comm.barrier()?;
    let wall_s = t0.elapsed().as_secs_f64();
    let end = RankEnd { report: comm.clock().report(), trace: comm.clock().trace(comm.world_rank()) };
    let all = comm.gather_value(0, &end)?;
    let Some(all) = all else { return Ok(None) };
    let summary = summary_json(plan, comm.backend(), comm.size(), wall_s, &all, &out);
    let _io = comm.clock().enter(parsim_core::Phase::Io);
    std::fs::create_dir_all(&plan.out).with_context(|| format!("creating output directory {}", plan.out.display()))?;
    let summary_path = plan.out.join("summary.json");
    write_atomic(&summary_path, serde_json::to_string_pretty(&summary)?.as_bytes())?;
    if let Some(tp) = &plan.trace {
        let traces: Vec<Trace> = all.into_iter().map(|e| e.trace).collect();
        let mut buf = Vec::new();
        parsim_core::trace::write_chrome_trace(&mut buf, &traces)?;
        write_atomic(tp, &buf)?;
    }
    Ok(Some(Finished { summary, summary_path }))
}

fn summary_json(plan: &RunPlan, backend: &str, ranks: usize, wall_s: f64, all: &[RankEnd], out: &ModelOutput) -> Value {
    let phase =
        |f: fn(&parsim_core::PhaseTimes) -> f64| -> Vec<f64> { all.iter().map(|e| f(&e.report.phases_s)).collect() };
    let compute = phase(|p| p.compute);
    let mean = compute.iter().sum::<f64>() / compute.len().max(1) as f64;
    let max = compute.iter().cloned().fold(0.0, f64::max);
    let imbalance = if mean > 0.0 { max / mean } else { 1.0 };
    let traffic: Vec<_> = all.iter().map(|e| e.report.traffic()).collect();
    let mut counters = serde_json::Map::new();
    counters.insert("messages_sent".into(), json!(traffic.iter().map(|t| t.messages_sent).collect::<Vec<_>>()));
    counters.insert("bytes_sent".into(), json!(traffic.iter().map(|t| t.bytes_sent).collect::<Vec<_>>()));
    counters.insert("messages_received".into(), json!(traffic.iter().map(|t| t.messages_received).collect::<Vec<_>>()));
    counters.insert("bytes_received".into(), json!(traffic.iter().map(|t| t.bytes_received).collect::<Vec<_>>()));
    let names: std::collections::BTreeSet<&String> = all.iter().flat_map(|e| e.report.counters.keys()).collect();
    for n in names {
        let v: Vec<u64> = all.iter().map(|e| e.report.counters.get(n).copied().unwrap_or(0)).collect();
        counters.insert(n.clone(), json!(v));
    }
    json!({
        "parsim_version": env!("CARGO_PKG_VERSION"),
        "scenario": plan.scenario.display().to_string(),
        "model": plan.model.name(),
        "backend": backend,
        "ranks": ranks,
        "threads_per_rank": plan.threads_per_rank,
        "seed": plan.seed,
        "wall_s": wall_s,
        "phases_s": {
            "compute": compute,
            "comm": phase(|p| p.comm),
            "wait": phase(|p| p.wait),
            "io": phase(|p| p.io),
            "serial": phase(|p| p.serial),
        },
        "counters": counters,
        "imbalance": imbalance,
        "digest": out.digest.to_string(),
        "metrics": out.metrics,
    })
}

/// Writes `bytes` to `path` atomically (see [`parsim_core::io::write_atomic`]).
pub fn write_atomic(path: &Path, bytes: &[u8]) -> Result<()> {
    parsim_core::io::write_atomic(path, bytes).with_context(|| format!("writing {}", path.display()))
}

/// Runs the plan on its backend; returns rank 0's result (`None` on other MPI ranks).
pub fn execute(plan: &RunPlan) -> Result<Option<Finished>> {
    let trace = plan.trace.is_some();
    match plan.backend {
        Backend::Threads => {
            let mut results = parsim_comm::Launcher::new(plan.ranks)
                .trace(trace)
                .run(|comm| run_rank(comm, plan).map_err(|e| format!("{e:#}")))
                .map_err(|e| anyhow::anyhow!("{e}"))?;
            Ok(results.swap_remove(0))
        }
        Backend::Mpi => execute_mpi(plan),
    }
}

#[cfg(feature = "mpi")]
fn execute_mpi(plan: &RunPlan) -> Result<Option<Finished>> {
    let out = parsim_comm::mpi::Launcher::new().trace(plan.trace.is_some()).run(|comm| {
        if comm.size() != plan.ranks && comm.rank() == 0 {
            if plan.ranks_from_flag {
                return Err(format!(
                    "--ranks {} but mpirun started {} ranks; under MPI the world size decides (drop --ranks or match it)",
                    plan.ranks,
                    comm.size()
                ));
            }
            eprintln!("parsim: running on the {} MPI ranks mpirun started (the scenario says ranks = {})", comm.size(), plan.ranks);
        }
        run_rank(comm, plan).map_err(|e| format!("{e:#}"))
    })?;
    Ok(out)
}

#[cfg(not(feature = "mpi"))]
fn execute_mpi(_plan: &RunPlan) -> Result<Option<Finished>> {
    Err(InputError::flag(
        "--backend mpi",
        "this parsim was built without MPI; rebuild with `cargo build --release --features mpi` (needs libopenmpi-dev and libclang-dev)",
    )
    .into())
}

/// The backend's name, for messages.
pub fn backend_name(b: Backend) -> &'static str {
    b.name()
}
