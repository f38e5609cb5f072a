//! `parsim sweep SCENARIO.toml`: the scenario's `[sweep]` table describes
//! the points and replications; every task runs the scenario's model on one
//! rank with the point's values and a seed keyed by (seed, point,
//! replication). Writes `DIR/tasks.jsonl` (as tasks finish), then
//! `results.csv`, `results.json` and, for one swept parameter, `sweep.png`.

mod process;
mod read;
pub use process::{parse_request, Request};

use std::path::{Path, PathBuf};
use std::sync::Mutex;

use parsim_sweep::{exec, Metrics, Replications, Store, SweepOutcome, SweepSpec, Task};
use serde_json::json;
use toml::Value;

use crate::experiment::{parse_backend, Experiment, SweepArgs};
use crate::model::{Model, Rank};
use crate::progress::Progress;
use crate::run::{self, read_run_table, write_atomic, Backend};
use crate::scenario::{InputError, Scenario};
use crate::Error;

pub use process::kill_self;
use read::{read_sweep, to_toml, SweepSetup};
pub use read::{read_sweep_spec, Isolation};

/// The scenario of one task: the point's values, the task's seed, the
/// threads backend (with `[sweep] ranks_per_task` ranks, set on the base).
fn task_scenario(base: &Scenario, spec: &SweepSpec, task: &Task, seed: u64, model_table: &str) -> Scenario {
    let mut sc = base.clone();
    for (key, v) in &spec.points[task.point].values {
        match key.split_once('.') {
            Some((table, field)) => sc.set_value(table, field, to_toml(v)),
            None => sc.set_value(model_table, key, to_toml(v)),
        }
    }
    sc.set_value("run", "seed", Value::Integer(seed as i64));
    sc.set_value("run", "backend", Value::String("threads".into()));
    sc
}

/// Timings and rates: they differ from run to run, so they stay out of the
/// table unless asked for by name.
fn is_timing(name: &str) -> bool {
    name.ends_with("_s") || name.contains("per_s") || name.contains("rss")
}

thread_local! {
    /// One single-threaded rayon pool per worker: a task's inner parallel
    /// loops (population generation) stay on its own worker's core instead of
    /// competing for the shared pool with the other workers.
    static TASK_POOL: rayon::ThreadPool =
        rayon::ThreadPoolBuilder::new().num_threads(1).build().expect("a one-thread pool");
}

/// Runs `f` on this worker's single-threaded pool.
pub fn on_worker_pool<R: Send>(f: impl FnOnce() -> R + Send) -> R {
    TASK_POOL.with(|p| p.install(f))
}

/// Runs a scenario in this process, quietly, on its `[run] ranks` threads:
/// shared inputs are built on this worker's one-thread pool, then the ranks
/// run; returns rank 0's outcome.
pub(crate) fn evaluate<M: Model>(
    exp: &Experiment<M>,
    mut sc: Scenario,
    seed: u64,
    scratch: &Path,
) -> Result<crate::Outcome, String> {
    let plan = run::plan(exp, &mut sc, Some(scratch.to_path_buf()), None, false).map_err(|e| e.to_string())?;
    let model = exp.model();
    // Shared inputs (an epidemic's population) are built here, on this
    // worker's one-thread pool (the rank threads below would use the shared pool).
    on_worker_pool(|| model.prepare(&plan.params, seed)).map_err(|e| format!("model {}: {e}", model.name()))?;
    let mut out = on_worker_pool(|| {
        parsim_comm::launch(plan.ranks, |comm| {
            let mut rank = Rank::new(&comm, seed, &plan.out, plan.threads_per_rank, false, false, false);
            run::run_model(model, &plan.params, &mut rank)
        })
    })
    .map_err(|e| e.to_string())?;
    Ok(out.swap_remove(0))
}

/// Runs one task in this process and returns its top-level numeric metrics
/// (those in `wanted`, or every one but timings).
fn run_task<M: Model>(
    exp: &Experiment<M>,
    base: &Scenario,
    spec: &SweepSpec,
    wanted: Option<&[String]>,
    task: &Task,
    seed: u64,
    scratch: &Path,
) -> Result<Metrics, String> {
    if spec.kill_due(task) {
        kill_self();
    }
    let sc = task_scenario(base, spec, task, seed, exp.model().table());
    let out = evaluate(exp, sc, seed, scratch)?;
    let mut m = Metrics::new();
    for (k, v) in out.metrics_map() {
        if let Some(x) = v.as_f64() {
            if wanted.map_or(!is_timing(k), |w| w.iter().any(|n| n == k)) {
                m.insert(k.clone(), x);
            }
        }
    }
    // The stopping rule's metric must be there; others may be missing (a null in the model's metrics).
    if let Replications::Until { metric, .. } = &spec.replications {
        if !m.contains_key(metric) {
            let all: Vec<&String> =
                out.metrics_map().iter().filter(|(k, v)| v.is_number() && !is_timing(k)).map(|(k, _)| k).collect();
            return Err(format!("the model reports no numeric metric \"{metric}\" (it has {all:?})"));
        }
    }
    Ok(m)
}

fn fmt(x: f64) -> String {
    if x.is_finite() {
        format!("{x}")
    } else {
        String::new()
    }
}

/// `results.csv`: one row per point in point order.
fn csv(spec: &SweepSpec, o: &SweepOutcome) -> String {
    let keys: Vec<&String> = spec.points[0].values.iter().map(|(k, _)| k).collect();
    let metrics: std::collections::BTreeSet<&String> = o.points.iter().flat_map(|p| p.metrics.keys()).collect();
    let mut s = String::from("point");
    for k in &keys {
        s += &format!(",{k}");
    }
    s += ",replications,failed";
    for m in &metrics {
        for f in ["n", "mean", "sd", "se", "ci_low", "ci_high", "min", "max", "p10", "p50", "p90"] {
            s += &format!(",{m}.{f}");
        }
    }
    s.push('\n');
    for p in &o.points {
        s += &p.point.index.to_string();
        for (_, v) in &p.point.values {
            s += &format!(",{}", v.as_str().map_or_else(|| v.to_string(), str::to_string));
        }
        s += &format!(",{},{}", p.replications, p.failed.len());
        for m in &metrics {
            match p.metrics.get(*m) {
                Some(x) => {
                    s += &format!(",{}", x.n);
                    for v in [
                        x.mean,
                        x.sd,
                        x.se,
                        x.ci_low,
                        x.ci_high,
                        x.min,
                        x.max,
                        x.quantiles[0],
                        x.quantiles[1],
                        x.quantiles[2],
                    ] {
                        s += &format!(",{}", fmt(v));
                    }
                }
                None => s += &",".repeat(11),
            }
        }
        s.push('\n');
    }
    s
}

/// Shows a sweep's status on its progress bar.
fn show(bar: &Mutex<Progress>, retries: u32, st: parsim_sweep::Status) {
    if let Ok(mut b) = bar.lock() {
        for (t, e) in &st.new_failures {
            b.note(&format!(
                "point {}, replication {}, attempt {}: {e} — {}",
                t.point,
                t.replication,
                t.attempt + 1,
                if t.attempt < retries { "retrying" } else { "giving up" }
            ));
        }
        b.set_total(st.total);
        if st.failures > 0 {
            b.set_label(&format!("tasks ({} failed attempts)", st.failures));
        }
        b.set(st.done);
    }
}

/// `--param KEY=V1,V2,…` or `KEY=START:STOP:STEP` as a `[sweep] parameters` entry.
fn param_flag(p: &str) -> Result<(String, Value), InputError> {
    let flag = format!("--param {p}");
    let (key, vals) = p
        .split_once('=')
        .filter(|(k, v)| !k.trim().is_empty() && !v.trim().is_empty())
        .ok_or_else(|| InputError::flag(&flag, "expected KEY=V1,V2,… or KEY=START:STOP:STEP"))?;
    let parse = |s: &str| {
        format!("v = {}", s.trim())
            .parse::<toml::Table>()
            .ok()
            .and_then(|mut t| t.remove("v"))
            .unwrap_or_else(|| Value::String(s.trim().to_string()))
    };
    let parts: Vec<&str> = vals.split(':').collect();
    let value = if parts.len() == 3 {
        let mut t = toml::Table::new();
        for (name, v) in ["start", "stop", "step"].iter().zip(&parts) {
            let v = parse(v);
            if !matches!(v, Value::Integer(_) | Value::Float(_)) {
                return Err(InputError::flag(&flag, format!("{name} must be a number, found {v}")));
            }
            t.insert(name.to_string(), v);
        }
        Value::Table(t)
    } else if parts.len() == 1 {
        Value::Array(vals.split(',').map(parse).collect())
    } else {
        return Err(InputError::flag(&flag, "expected KEY=V1,V2,… or KEY=START:STOP:STEP"));
    };
    Ok((key.trim().to_string(), value))
}

/// The `[sweep]` keys given as flags (`--param`, `--replications`, `--metrics`).
fn apply_sweep_flags(sc: &mut Scenario, a: &SweepArgs) -> Result<(), InputError> {
    if !a.param.is_empty() {
        let mut params = match sc.resolved().get("sweep").and_then(|s| s.get("parameters")) {
            Some(Value::Table(t)) => t.clone(),
            _ => toml::Table::new(),
        };
        for p in &a.param {
            let (k, v) = param_flag(p)?;
            params.insert(k, v);
        }
        sc.set_value("sweep", "parameters", Value::Table(params));
    }
    if let Some(r) = a.replications {
        if r == 0 {
            return Err(InputError::flag("--replications 0", "at least one replication"));
        }
        sc.set_value("sweep", "replications", Value::Integer(r.min(i64::MAX as u64) as i64));
    }
    if !a.metrics.is_empty() {
        let list = a.metrics.iter().map(|m| Value::String(m.clone())).collect();
        sc.set_value("sweep", "metrics", Value::Array(list));
    }
    Ok(())
}

/// The arguments a process-isolated worker's child gets: the same sweep, served on stdin/stdout.
fn child_args(a: &SweepArgs, out: &Path) -> Vec<String> {
    let mut args = vec!["sweep".to_string()];
    if let Some(s) = &a.scenario {
        args.push(s.display().to_string());
    }
    for (flag, list) in [("--set", &a.set), ("--param", &a.param)] {
        for s in list {
            args.extend([flag.to_string(), s.clone()]);
        }
    }
    if let Some(r) = a.replications {
        args.extend(["--replications".to_string(), r.to_string()]);
    }
    if !a.metrics.is_empty() {
        args.extend(["--metrics".to_string(), a.metrics.join(",")]);
    }
    // `--isolate` keeps the child's checks those of the parent.
    args.extend(["--isolate", "process", "--out"].map(String::from));
    args.extend([out.display().to_string(), "--serve".to_string()]);
    args
}

/// Runs the sweep; returns the outcome on the rank that has it.
pub(crate) fn run<M: Model>(exp: &Experiment<M>, a: &SweepArgs) -> Result<Option<SweepOutcome>, Error> {
    let backend = parse_backend(&a.backend, "--backend")?;
    if a.workers == Some(0) {
        return Err(InputError::flag("--workers 0", "at least one worker").into());
    }
    let mut sc = exp.load_scenario(a.scenario.as_deref(), &a.set)?;
    apply_sweep_flags(&mut sc, a)?;
    if !sc.has_table("sweep") {
        return Err(InputError::flag(
            "sweep",
            "nothing to sweep: give a scenario with a [sweep] table, or --param KEY=V1,V2,… (and --replications R)",
        )
        .into());
    }
    let seed = read_run_table(&mut sc.clone(), false)?.seed;
    let SweepSetup {
        spec,
        workers: workers_key,
        metrics: wanted,
        group,
        ranks_per_task,
        isolate,
        timeout,
        allow_failures,
    } = read_sweep(&mut sc, seed, exp.model().table())?;
    let isolate = match &a.isolate {
        None => isolate,
        Some(s) => Isolation::parse(s)
            .ok_or_else(|| InputError::flag(&format!("--isolate {s}"), "expected thread or process"))?,
    };
    if timeout.is_some() && isolate == Isolation::Thread {
        return Err(InputError {
            place: sc.path().display().to_string(),
            msg: "[sweep] task_timeout_s needs isolate = \"process\" (a thread cannot be stopped)".into(),
        }
        .into());
    }
    sc.set_value("run", "ranks", Value::Integer(ranks_per_task as i64));
    spec.check().map_err(|e| InputError { place: sc.path().display().to_string(), msg: format!("[sweep] {e}") })?;
    let stem = match &a.scenario {
        Some(p) => p.file_stem().map_or_else(|| "sweep".to_string(), |s| s.to_string_lossy().into_owned()),
        None => format!("{}-sweep", exp.model().name()),
    };
    let out = a.restart.clone().or_else(|| a.out.clone()).unwrap_or_else(|| PathBuf::from("out").join(stem));
    let scratch = out.join("scratch");
    if a.restart.is_some() && a.out.as_ref().is_some_and(|o| Some(o) != a.restart.as_ref()) {
        return Err(
            InputError::flag("--restart", "resumes the sweep in DIR: drop --out, or give the same directory").into()
        );
    }
    let resume = a.resume || a.restart.is_some();
    // Every point must be a valid scenario: each is planned (validated)
    // before the first task runs, and the first bad one stops the sweep.
    for point in &spec.points {
        let task = Task { point: point.index, replication: 0, attempt: 0 };
        let mut probe = task_scenario(&sc, &spec, &task, 0, exp.model().table());
        run::plan(exp, &mut probe, Some(scratch.clone()), None, false).map_err(|e| {
            let values: Vec<String> = point.values.iter().map(|(k, v)| format!("{k} = {v}")).collect();
            InputError {
                place: sc.path().display().to_string(),
                msg: format!("[sweep] point {} ({}) is not a valid scenario: {e}", point.index, values.join(", ")),
            }
        })?;
    }
    if let Replications::Until { metric, .. } = &spec.replications {
        if metric.is_empty() {
            return Err(InputError::flag("[sweep] until.metric", "empty").into());
        }
    }
    if a.serve {
        process::serve(spec.points.len(), |t, s| run_task(exp, &sc, &spec, wanted.as_deref(), t, s, &scratch))
            .map_err(|e| Error::Run(e.to_string()))?;
        return Ok(None);
    }
    crate::files::check_output_dir(&out, "output directory (--out)")?;
    crate::files::sweep_stale_temps(&out);
    // The stopping rule's metric must be one the model reports: known only
    // from a run, so the first task is run once here (in this process) and
    // a metric the model lacks is bad input, before any task is scheduled.
    if let Replications::Until { metric, .. } = &spec.replications {
        let task = Task { point: 0, replication: 0, attempt: 0 };
        if !spec.kill_due(&task) && !spec.fault_due(&task) {
            let probe = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                on_worker_pool(|| run_task(exp, &sc, &spec, None, &task, spec.task_seed(&task), &scratch))
            }));
            if let Ok(Err(e)) = probe {
                if e.contains("reports no numeric metric") {
                    return Err(InputError {
                        place: sc.path().display().to_string(),
                        msg: format!("[sweep] until.metric = \"{metric}\": {e}"),
                    }
                    .into());
                }
            }
        }
    }
    let log = out.join("tasks.jsonl");
    let workers =
        a.workers.or(workers_key).unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get()));
    let pool = (isolate == Isolation::Process)
        .then(|| std::env::current_exe().map(|exe| process::ProcessPool::new(exe, child_args(a, &out), timeout)))
        .transpose()
        .map_err(|e| Error::Run(format!("cannot find this program to start workers: {e}")))?;
    let runner = |t: &Task, s: u64| match &pool {
        Some(p) => p.run(t, s),
        None => run_task(exp, &sc, &spec, wanted.as_deref(), t, s, &scratch),
    };
    let total = match &spec.replications {
        Replications::Fixed(r) => r.saturating_mul(spec.points.len() as u64),
        Replications::Until { max, .. } => max.saturating_mul(spec.points.len() as u64),
    };
    let quiet = !exp.shows_progress() || crate::logging::is_quiet();
    let outcome = match backend {
        Backend::Threads => {
            let (mut store, done) =
                Store::open(&log, &spec.fingerprint(), resume, true).map_err(|e| Error::Run(e.to_string()))?;
            if resume {
                tracing::info!("resuming: {} tasks already in {}", done.len(), log.display());
            }
            let bar = Mutex::new(Progress::new("tasks", total, quiet));
            let progress = |st: parsim_sweep::Status| show(&bar, spec.retries, st);
            let o = exec::run_threads(&spec, workers, &runner, &mut store, done, &progress)
                .map_err(|e| Error::Run(e.to_string()))?;
            bar.into_inner().map(|mut b| b.finish()).ok();
            Some(o)
        }
        Backend::Mpi => run_mpi(&spec, group, &runner, &log, resume, total, quiet)?,
    };
    let Some(o) = outcome else { return Ok(None) };
    write_outputs(&spec, &o, &out, wanted.as_deref(), quiet)?;
    let _ = std::fs::remove_dir_all(&scratch);
    let failed: usize = o.points.iter().map(|p| p.failed.len()).sum();
    if failed > 0 && !allow_failures {
        let first = o.points.iter().find_map(|p| p.failed.first().map(|f| (p.point.index, f))).expect("a failure");
        return Err(Error::Run(format!(
            "{failed} task(s) failed after every retry (the results in {} leave them out); the first, point {} \
             replication {}: {}. Set [sweep] allow_failures = true to accept a sweep with failed tasks",
            out.display(),
            first.0,
            first.1 .0,
            first.1 .1
        )));
    }
    Ok(Some(o))
}

fn write_outputs(
    spec: &SweepSpec,
    o: &SweepOutcome,
    out: &Path,
    wanted: Option<&[String]>,
    quiet: bool,
) -> Result<(), Error> {
    write_atomic(&out.join("results.csv"), csv(spec, o).as_bytes())?;
    let json = json!({ "sweep": spec, "points": o.points, "failed_attempts": o.failed_attempts });
    let text = serde_json::to_string_pretty(&json).map_err(|e| Error::Run(e.to_string()))?;
    write_atomic(&out.join("results.json"), text.as_bytes())?;
    let watched = match &spec.replications {
        Replications::Until { metric, .. } => Some(metric.clone()),
        // The first metric asked for (`--metrics`, `[sweep] metrics`), else the first by name.
        Replications::Fixed(_) => wanted
            .and_then(|w| w.first().cloned())
            .or_else(|| o.points.first().and_then(|p| p.metrics.keys().next().cloned())),
    };
    let one_d = spec.points[0].values.len() == 1;
    if let (true, Some(m)) = (one_d, &watched) {
        let pts: Vec<(f64, f64, f64, f64)> = o
            .points
            .iter()
            .filter_map(|p| {
                let x = p.point.values[0].1.as_f64()?;
                let s = p.metrics.get(m)?;
                Some((x, s.mean, s.ci_low, s.ci_high))
            })
            .collect();
        if !pts.is_empty() {
            let x = &spec.points[0].values[0].0;
            let level = (spec.confidence * 100.0).round();
            crate::plot::sweep_png(&out.join("sweep.png"), &pts, x, m, level)?;
        }
    }
    if quiet {
        return Ok(());
    }
    let failed: usize = o.points.iter().map(|p| p.failed.len()).sum();
    println!(
        "sweep: {} points, {} tasks counted, {} failed attempts ({} tasks failed for good) → {}",
        o.points.len(),
        o.points.iter().map(|p| p.replications).sum::<u64>(),
        o.failed_attempts,
        failed,
        out.join("results.csv").display()
    );
    if let Some(m) = watched {
        for p in &o.points {
            if let Some(s) = p.metrics.get(&m) {
                let vals: Vec<String> = p.point.values.iter().map(|(k, v)| format!("{k} = {v}")).collect();
                println!(
                    "  {:<28} {m}: {:.5} ± {:.5} ({}% CI, n = {})",
                    vals.join(", "),
                    s.mean,
                    s.half_width(),
                    (spec.confidence * 100.0).round(),
                    s.n
                );
            }
        }
    }
    Ok(())
}

#[cfg(feature = "mpi")]
fn run_mpi(
    spec: &SweepSpec,
    group: usize,
    runner: &(dyn Fn(&Task, u64) -> Result<Metrics, String> + Sync),
    log: &Path,
    resume: bool,
    total: u64,
    quiet: bool,
) -> Result<Option<SweepOutcome>, Error> {
    use parsim_comm::Comm;
    parsim_comm::mpi::launch(|comm| {
        let (mut store, done) = if comm.rank() == 0 {
            Store::open(log, &spec.fingerprint(), resume, true).map_err(|e| e.to_string())?
        } else {
            (Store::memory(), Vec::new())
        };
        let bar = Mutex::new(Progress::new("tasks", total, quiet || comm.rank() != 0));
        let progress = |st: parsim_sweep::Status| show(&bar, spec.retries, st);
        let o = exec::run_comm(&comm, spec, group, runner, &mut store, done, &progress).map_err(|e| e.to_string())?;
        bar.into_inner().map(|mut b| b.finish()).ok();
        Ok::<_, String>(o)
    })
    .map_err(|e| Error::Run(e.to_string()))
}

#[cfg(not(feature = "mpi"))]
fn run_mpi(
    _spec: &SweepSpec,
    _group: usize,
    _runner: &(dyn Fn(&Task, u64) -> Result<Metrics, String> + Sync),
    _log: &Path,
    _resume: bool,
    _total: u64,
    _quiet: bool,
) -> Result<Option<SweepOutcome>, Error> {
    Err(InputError::flag("--backend mpi", "this program was built without MPI; rebuild with --features mpi").into())
}
