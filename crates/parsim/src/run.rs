//! From a validated scenario to a finished run: pick the backend, run the
//! model on every rank, collect phases, counters and traces on rank 0, and
//! write `summary.json` (atomically) and the trace.

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::{Path, PathBuf};
use std::time::Instant;

use parsim_comm::Comm;
use parsim_core::{trace::Trace, PhaseReport};
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};

use crate::experiment::Experiment;
use crate::model::{Model, Outcome, Rank};
use crate::scenario::{InputError, Scenario};
use crate::Error;

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

    /// `threads` or `mpi`.
    pub fn name(self) -> &'static str {
        match self {
            Backend::Threads => "threads",
            Backend::Mpi => "mpi",
        }
    }
}

/// The `[run]` table: what every model's run shares.
#[derive(Clone, Debug)]
pub struct RunSettings {
    /// `model`: which model (checked against the experiment's).
    pub model: Option<String>,
    /// `seed` (default 0).
    pub seed: u64,
    /// `ranks` (default 1).
    pub ranks: usize,
    /// `backend` (default threads).
    pub backend: Backend,
    /// `threads_per_rank` (default 1); a model's reader may change it.
    pub threads_per_rank: usize,
    /// `out`: the output directory, if the scenario names one.
    pub out: Option<String>,
}

/// The most ranks the threads backend starts (one OS thread each, and a
/// channel to every other rank).
pub const MAX_THREAD_RANKS: usize = 4096;

/// Reads `[run]` (`model` is required when `require_model`).
pub fn read_run_table(sc: &mut Scenario, require_model: bool) -> Result<RunSettings, InputError> {
    let mut run = sc.section("run", require_model)?;
    let model = run.string("model", None)?;
    if require_model && model.is_none() {
        return Err(run.error("model", "missing; e.g. model = \"epidemic\""));
    }
    let seed = run.int("seed", Some(0), 0..=u64::MAX)?;
    let ranks = run.int("ranks", Some(1), 1..=65_536)? as usize;
    let backend = run.choice("backend", Some("threads"), &["threads", "mpi"])?;
    let threads_per_rank = run.int("threads_per_rank", Some(1), 1..=1024)? as usize;
    let out = run.string("out", None)?;
    if backend == "threads" && ranks > MAX_THREAD_RANKS {
        return Err(run.error(
            "ranks",
            format!(
                "{ranks} ranks on the threads backend: at most {MAX_THREAD_RANKS} (one OS thread each); run more under MPI"
            ),
        ));
    }
    run.finish()?;
    let backend = Backend::parse(&backend).expect("validated backend");
    Ok(RunSettings { model, seed, ranks, backend, threads_per_rank, out })
}

/// Everything a run needs, validated.
#[derive(Clone, Debug)]
pub struct RunPlan<P> {
    /// The scenario file (or `(defaults)` when none was given).
    pub scenario: PathBuf,
    /// The model's parameters.
    pub params: P,
    /// The seed.
    pub seed: u64,
    /// Ranks (threads backend; under MPI the world size decides).
    pub ranks: usize,
    /// Whether `ranks` came from `--ranks` (checked against the MPI world size).
    pub ranks_from_flag: bool,
    /// The backend.
    pub backend: Backend,
    /// Threads per rank.
    pub threads_per_rank: usize,
    /// Output directory.
    pub out: PathBuf,
    /// Chrome trace file, if asked for.
    pub trace: Option<PathBuf>,
    /// `--verify`.
    pub verify: bool,
    /// Show progress on rank 0.
    pub progress: bool,
    /// The scenario after every override, as JSON.
    pub resolved: Value,
    /// The keys set on the command line.
    pub overrides: Vec<String>,
    /// The parameters as JSON (models read with serde).
    pub params_json: Option<Value>,
    /// Checkpoints, restarts and injected faults (`--checkpoint-every` …).
    pub resilience: Option<crate::resilience::Resilience>,
}

/// Builds the plan of `exp`'s model from a scenario.
pub(crate) fn plan<M: Model>(
    exp: &Experiment<M>,
    sc: &mut Scenario,
    out: Option<PathBuf>,
    trace: Option<PathBuf>,
    ranks_from_flag: bool,
) -> Result<RunPlan<M::Params>, InputError> {
    if sc.has_table("sweep") {
        return Err(sc.error_at("sweep", "", "this scenario describes a sweep: run it with the `sweep` command"));
    }
    let resolved = toml_to_json(&toml::Value::Table(sc.resolved().clone()));
    let mut run = read_run_table(sc, false)?;
    let name = exp.model().name();
    if let Some(m) = &run.model {
        if m != name {
            return Err(sc.error_at("run", "model", format!("[run] model: this program runs \"{name}\", not \"{m}\"")));
        }
    }
    let params = exp.read_params(sc, &mut run)?;
    exp.model().check(&params).map_err(|e| sc.param_check_error(exp.model().table(), &e))?;
    sc.finish()?;
    let stem = sc.path().file_stem().map_or_else(|| name.to_string(), |s| s.to_string_lossy().into_owned());
    let stem = if stem.starts_with('(') { name.to_string() } else { stem };
    let out = out.or(run.out.map(PathBuf::from)).unwrap_or_else(|| PathBuf::from("out").join(stem));
    let params_json = exp.params_json(&params);
    Ok(RunPlan {
        scenario: sc.path().to_path_buf(),
        params,
        seed: run.seed,
        ranks: run.ranks,
        ranks_from_flag,
        backend: run.backend,
        threads_per_rank: run.threads_per_rank,
        out,
        trace,
        verify: false,
        progress: true,
        resolved,
        overrides: sc.overrides(),
        params_json,
        resilience: None,
    })
}

/// A TOML value as JSON (dates as strings).
pub fn toml_to_json(v: &toml::Value) -> Value {
    match v {
        toml::Value::String(s) => json!(s),
        toml::Value::Integer(i) => json!(i),
        toml::Value::Float(f) => json!(f),
        toml::Value::Boolean(b) => json!(b),
        toml::Value::Datetime(d) => json!(d.to_string()),
        toml::Value::Array(a) => Value::Array(a.iter().map(toml_to_json).collect()),
        toml::Value::Table(t) => Value::Object(t.iter().map(|(k, v)| (k.clone(), toml_to_json(v))).collect()),
    }
}

/// What rank 0 gathers from everyone at the end.
#[derive(Serialize, Deserialize)]
struct RankEnd {
    report: PhaseReport,
    trace: Trace,
    /// The checkpointer's report (JSON text), if there was one.
    ckpt: Option<String>,
    /// Peak resident memory of this rank's process, bytes (Linux), if known.
    peak_rss: Option<u64>,
}

/// Peak resident memory of this process in bytes (Linux: VmHWM), if known.
/// On the threads backend every rank reports the whole process's.
pub fn peak_rss() -> Option<u64> {
    let s = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = s.lines().find(|l| l.starts_with("VmHWM:"))?;
    let kb: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kb * 1024)
}

/// The result of one run, as rank 0 sees it.
pub struct Finished {
    /// `summary.json`'s content.
    pub summary: Value,
    /// Where it was written.
    pub summary_path: PathBuf,
    /// The lines the model asked to print.
    pub lines: Vec<String>,
}

/// Runs the model on one rank, turning a panic, an error or a non-finite
/// metric into a message that says where the rank was.
pub(crate) fn run_model<C: Comm, M: Model>(
    model: &M,
    params: &M::Params,
    rank: &mut Rank<'_, C>,
) -> Result<Outcome, String> {
    let result = catch_unwind(AssertUnwindSafe(|| model.run(params, rank)));
    let at = rank.whereabouts.describe().map_or_else(String::new, |w| format!(" at {w}"));
    match result {
        Ok(Ok(o)) if o.non_finite.is_empty() => Ok(o),
        Ok(Ok(o)) => Err(format!(
            "model {}{at}: produced a non-finite value ({}); a NaN or infinity in a result is a bug in the model or \
             its parameters",
            model.name(),
            o.non_finite.join(", ")
        )),
        Ok(Err(e)) => Err(format!("model {}{at}: {e}", model.name())),
        Err(panic) => {
            Err(format!("model {}{at}: panicked: {}", model.name(), parsim_comm::threads::panic_message(&*panic)))
        }
    }
}

fn run_rank<C: Comm, M: Model>(
    comm: C,
    exp: &Experiment<M>,
    plan: &RunPlan<M::Params>,
    prepare_s: f64,
    relaunches: &[String],
) -> Result<Option<Finished>, String> {
    comm.barrier().map_err(|e| e.to_string())?;
    let t0 = Instant::now();
    // Replicated execution: the world splits into replicas of equal size,
    // each running the whole model; only replica 0 writes and reports.
    let replicas = plan.resilience.as_ref().map_or(1, |r| r.options.replica.1);
    let group;
    let (model_comm, replica) = if replicas > 1 {
        let p = comm.size() / replicas;
        let idx = comm.rank() / p;
        group = comm.split(Some(idx as u32), (comm.rank() % p) as u32).map_err(|e| e.to_string())?;
        (group.as_ref().expect("every rank has a replica"), idx)
    } else {
        (&comm, 0)
    };
    let writes = replica == 0;
    let mut rank = Rank::new(
        model_comm,
        plan.seed,
        &plan.out,
        plan.threads_per_rank,
        plan.verify,
        writes,
        plan.progress && writes,
    );
    rank.resilience = plan.resilience.as_ref();
    if replicas > 1 {
        rank.replica = Some((&comm, replica));
    }
    let out = run_model(exp.model(), &plan.params, &mut rank)?;
    if replicas > 1 {
        compare_digests(&comm, model_comm.size(), replica, &out)?;
    }
    comm.barrier().map_err(|e| e.to_string())?;
    let wall_s = t0.elapsed().as_secs_f64();
    let ckpt = rank.ckpt_report.lock().ok().filter(|r| !r.is_null()).map(|r| r.to_string());
    let end = RankEnd {
        report: model_comm.clock().report(),
        trace: comm.clock().trace(comm.world_rank()),
        ckpt,
        peak_rss: peak_rss(),
    };
    let all = model_comm.gather_value(0, &end).map_err(|e| e.to_string())?;
    let Some(all) = all.filter(|_| writes) else { return Ok(None) };
    let mut summary = summary_json(exp.model().name(), plan, comm.backend(), model_comm.size(), wall_s, &all, &out);
    summary["prepare_s"] = json!(prepare_s);
    if replicas > 1 {
        summary["replicas"] = json!(replicas);
    }
    let reports: Vec<Option<String>> = all.iter().map(|e| e.ckpt.clone()).collect();
    if let Some(c) = crate::resilience::summary(&reports, relaunches) {
        summary["checkpoint"] = c;
    }
    let _io = comm.clock().enter(parsim_core::Phase::Io);
    let fail = |e: Error| e.to_string();
    std::fs::create_dir_all(&plan.out).map_err(|e| format!("creating output directory {}: {e}", plan.out.display()))?;
    let summary_path = plan.out.join("summary.json");
    let text = serde_json::to_string_pretty(&summary).map_err(|e| e.to_string())?;
    write_atomic(&summary_path, text.as_bytes()).map_err(fail)?;
    if let Some(tp) = &plan.trace {
        let traces: Vec<Trace> = all.into_iter().map(|e| e.trace).collect();
        let mut buf = Vec::new();
        parsim_core::trace::write_chrome_trace(&mut buf, &traces).map_err(|e| e.to_string())?;
        write_atomic(tp, &buf).map_err(fail)?;
    }
    Ok(Some(Finished { summary, summary_path, lines: out.lines }))
}

/// Replicated execution: the replicas' final digests must agree (collective
/// over every replica's ranks).
fn compare_digests<C: Comm>(world: &C, p: usize, replica: usize, out: &Outcome) -> Result<(), String> {
    let d = out.digest.map_or(0, |d| d.0);
    let mine = [d as u64, (d >> 64) as u64];
    let other = if replica == 0 { world.rank() + p } else { world.rank() - p };
    let send = world.isend(other, 7_902, mine.to_vec()).map_err(|e| e.to_string())?;
    let got = world
        .recv::<u64>(parsim_comm::Source::Rank(other), parsim_comm::TagMatch::Tag(7_902))
        .map_err(|e| e.to_string())?
        .data;
    parsim_comm::Request::wait(send).map_err(|e| e.to_string())?;
    if got != mine {
        return Err(format!(
            "the replicas' final digests differ ({} and {}): a silent error after the last checkpoint; the run \
             rolls back to it",
            out.digest.map_or_else(|| "none".into(), |d| d.to_string()),
            parsim_core::Digest(u128::from(got[0]) | u128::from(got.get(1).copied().unwrap_or(0)) << 64)
        ));
    }
    Ok(())
}

fn summary_json<P>(
    model: &str,
    plan: &RunPlan<P>,
    backend: &str,
    ranks: usize,
    wall_s: f64,
    all: &[RankEnd],
    out: &Outcome,
) -> Value {
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
    let mut s = json!({
        "parsim_version": env!("CARGO_PKG_VERSION"),
        "command_line": std::env::args().collect::<Vec<_>>(),
        "scenario": plan.scenario.display().to_string(),
        "resolved_scenario": plan.resolved,
        "overrides": plan.overrides,
        "model": model,
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
        "peak_rss_bytes": all.iter().map(|e| e.peak_rss).collect::<Vec<_>>(),
        "digest": out.digest.map_or_else(|| "unavailable".to_string(), |d| d.to_string()),
        "metrics": Value::Object(out.metrics.clone()),
    });
    if all.iter().any(|e| e.report.setup_s.is_some()) {
        // The model's setup (construction, reading, partitioning), per rank;
        // the simulation's phases are `phases_s` less these.
        let setup = |f: fn(&parsim_core::PhaseTimes) -> f64| -> Vec<f64> {
            all.iter().map(|e| e.report.setup_s.as_ref().map_or(0.0, f)).collect()
        };
        s["setup_phases_s"] = json!({
            "compute": setup(|p| p.compute),
            "comm": setup(|p| p.comm),
            "wait": setup(|p| p.wait),
            "io": setup(|p| p.io),
            "serial": setup(|p| p.serial),
        });
    }
    if let Some(p) = &plan.params_json {
        s["params"] = p.clone();
    }
    for (k, v) in &out.sections {
        if s.get(k).is_none() {
            s[k.as_str()] = v.clone();
        }
    }
    s
}

/// Writes `bytes` to `path` atomically (see [`parsim_core::io::write_atomic`]).
pub fn write_atomic(path: &Path, bytes: &[u8]) -> Result<(), Error> {
    parsim_core::io::write_atomic(path, bytes).map_err(|e| Error::Io { path: path.to_path_buf(), msg: e.to_string() })
}

/// Runs the plan on its backend; returns rank 0's result (`None` on other MPI ranks).
pub(crate) fn execute<M: Model>(exp: &Experiment<M>, plan: &RunPlan<M::Params>) -> Result<Option<Finished>, Error> {
    // Shared inputs are built once per process before the ranks start: their
    // time is `prepare_s`, beside the ranks' `wall_s`.
    let t0 = Instant::now();
    exp.model()
        .prepare(&plan.params, plan.seed)
        .map_err(|e| Error::Run(format!("model {}: {e}", exp.model().name())))?;
    let prepare_s = t0.elapsed().as_secs_f64();
    match plan.backend {
        Backend::Threads => execute_threads(exp, plan, prepare_s),
        Backend::Mpi => execute_mpi(exp, plan, prepare_s),
    }
}

/// The threads backend, relaunching in-process after a failure up to
/// `--auto-restart` times, each time from the newest checkpoint.
fn execute_threads<M: Model>(
    exp: &Experiment<M>,
    plan: &RunPlan<M::Params>,
    prepare_s: f64,
) -> Result<Option<Finished>, Error> {
    let mut plan = plan.clone();
    let mut relaunches = Vec::new();
    loop {
        let replicas = plan.resilience.as_ref().map_or(1, |r| r.options.replica.1);
        let result = parsim_comm::Launcher::new(plan.ranks * replicas)
            .trace(plan.trace.is_some())
            .run(|comm| run_rank(comm, exp, &plan, prepare_s, &relaunches));
        let e = match result {
            Ok(mut results) => return Ok(results.swap_remove(0)),
            Err(e) => e.to_string(),
        };
        if e.contains("no usable checkpoint in") {
            return Err(InputError::flag("--restart", e).into());
        }
        let Some(r) = plan.resilience.as_mut().filter(|r| r.auto_restart > 0) else {
            return Err(Error::Run(e));
        };
        r.auto_restart -= 1;
        r.options.attempt += 1;
        let dir = r.options.dir.clone();
        r.options.restart = Some(dir.clone());
        r.options.restart_may_be_empty = true;
        tracing::warn!(
            "{e}\n  relaunching from the newest checkpoint in {} ({} relaunch(es) left)",
            dir.display(),
            r.auto_restart
        );
        relaunches.push(e);
    }
}

#[cfg(feature = "mpi")]
fn execute_mpi<M: Model>(
    exp: &Experiment<M>,
    plan: &RunPlan<M::Params>,
    prepare_s: f64,
) -> Result<Option<Finished>, Error> {
    let replicas = plan.resilience.as_ref().map_or(1, |r| r.options.replica.1);
    let out = parsim_comm::mpi::Launcher::new().trace(plan.trace.is_some()).run(|comm| {
        if comm.size() % replicas != 0 {
            return Err(format!(
                "--replicate {replicas}: mpirun started {} ranks; start {replicas} × the ranks of one replica",
                comm.size()
            ));
        }
        let size = comm.size() / replicas;
        if size != plan.ranks && comm.rank() == 0 {
            if plan.ranks_from_flag {
                return Err(format!(
                    "--ranks {} but mpirun started {} ranks{}; under MPI the world size decides (drop --ranks or match it)",
                    plan.ranks,
                    comm.size(),
                    if replicas > 1 { format!(" ({replicas} replicas of {size})") } else { String::new() }
                ));
            }
            tracing::info!(
                "running on the {size} MPI ranks{} mpirun started (the scenario says ranks = {})",
                if replicas > 1 { " per replica" } else { "" },
                plan.ranks
            );
        }
        run_rank(comm, exp, plan, prepare_s, &[])
    });
    out.map_err(|e| Error::Run(e.to_string()))
}

#[cfg(not(feature = "mpi"))]
fn execute_mpi<M: Model>(
    _exp: &Experiment<M>,
    _plan: &RunPlan<M::Params>,
    _prepare_s: f64,
) -> Result<Option<Finished>, Error> {
    Err(InputError::flag(
        "--backend mpi",
        "this program was built without MPI; rebuild with `--features mpi` (needs libopenmpi-dev and libclang-dev)",
    )
    .into())
}
