//! [`Experiment`]: a model plus the whole command line — `run` and `sweep`
//! with scenarios, `--set`, `--ranks`, `--backend`, `--out`, `--trace`,
//! `--dry-run`, `--verify`, summaries, progress and plots.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use clap::{Args, Parser, Subcommand};
use serde::de::DeserializeOwned;
use serde::Serialize;
use serde_json::Value;

use crate::model::Model;
use crate::run::{self, Backend, Finished, RunPlan, RunSettings};
use crate::scenario::{InputError, Scenario};
use crate::Error;

type Reader<P> = Box<dyn Fn(&mut Scenario, &mut RunSettings) -> Result<P, InputError> + Send + Sync>;
type ToJson<P> = Box<dyn Fn(&P) -> Option<Value> + Send + Sync>;

/// A model with everything around it: scenario files, the `run` and
/// `sweep` commands, `summary.json`, traces, progress and plots.
///
/// ```no_run
/// # use parsim::{Model, Outcome, Rank, BoxError};
/// # #[derive(Clone, serde::Serialize, serde::Deserialize, Default)] struct P { n: u64 }
/// # struct My;
/// # impl Model for My { type Params = P; fn name(&self) -> &str { "my" }
/// #   fn run<C: parsim::comm::Comm>(&self, _: &P, _: &mut Rank<'_, C>) -> Result<Outcome, BoxError> { Ok(Outcome::new()) } }
/// fn main() -> std::process::ExitCode {
///     // my-model run --ranks 4 --set n=10 ; my-model sweep --param n=1,10,100 --replications 5
///     parsim::Experiment::new(My).from_args()
/// }
/// ```
pub struct Experiment<M: Model> {
    model: M,
    reader: Reader<M::Params>,
    to_json: ToJson<M::Params>,
    default_scenario: Option<PathBuf>,
    about: Option<String>,
    progress: bool,
}

impl<M: Model> Experiment<M> {
    /// An experiment whose parameters are read with serde from the model's
    /// table (`#[serde(default)]` for defaults; unknown keys are errors).
    pub fn new(model: M) -> Self
    where
        M::Params: DeserializeOwned + Serialize,
    {
        let table = model.table().to_string();
        Experiment {
            model,
            reader: Box::new(move |sc, _| sc.params::<M::Params>(&table)),
            to_json: Box::new(|p| serde_json::to_value(p).ok()),
            default_scenario: None,
            about: None,
            progress: true,
        }
    }

    /// An experiment with its own parameter reader (the built-in models read
    /// several tables, and may adjust `[run]`, e.g. threads per rank).
    pub fn with_reader(
        model: M,
        reader: impl Fn(&mut Scenario, &mut RunSettings) -> Result<M::Params, InputError> + Send + Sync + 'static,
    ) -> Self {
        Experiment {
            model,
            reader: Box::new(reader),
            to_json: Box::new(|_| None),
            default_scenario: None,
            about: None,
            progress: true,
        }
    }

    /// The scenario used when the command line names none.
    pub fn scenario(mut self, path: impl Into<PathBuf>) -> Self {
        self.default_scenario = Some(path.into());
        self
    }

    /// The one-line description `--help` shows.
    pub fn about(mut self, text: impl Into<String>) -> Self {
        self.about = Some(text.into());
        self
    }

    /// No progress output (tests, embedding).
    pub fn quiet(mut self) -> Self {
        self.progress = false;
        self
    }

    /// The model.
    pub fn model(&self) -> &M {
        &self.model
    }

    pub(crate) fn read_params(&self, sc: &mut Scenario, run: &mut RunSettings) -> Result<M::Params, InputError> {
        (self.reader)(sc, run)
    }

    pub(crate) fn params_json(&self, p: &M::Params) -> Option<Value> {
        (self.to_json)(p)
    }

    pub(crate) fn shows_progress(&self) -> bool {
        self.progress
    }

    /// The scenario named by `path` (or the default, or an empty one), with
    /// `--set`s applied (keys without a table go to the model's table).
    pub fn load_scenario(&self, path: Option<&Path>, set: &[String]) -> Result<Scenario, InputError> {
        let mut sc = match path.or(self.default_scenario.as_deref()) {
            Some(p) => Scenario::load(p)?,
            None => Scenario::parse(Path::new("(defaults)"), String::new())?,
        };
        for s in set {
            sc.set_in(s, Some(self.model.table()))?;
        }
        Ok(sc)
    }

    /// Validates a scenario into a plan without running it.
    pub fn plan(&self, sc: &mut Scenario) -> Result<RunPlan<M::Params>, InputError> {
        run::plan(self, sc, None, None, false)
    }

    /// `run`: validates, runs on the backend, writes `summary.json` (and the
    /// trace), prints the phase breakdown. Returns rank 0's result (`None` on
    /// other MPI ranks, and for `--dry-run`).
    pub fn cmd_run(&self, a: &RunArgs) -> Result<Option<Finished>, Error> {
        let mut sc = self.load_scenario(a.scenario.as_deref(), &a.set)?;
        if let Some(s) = a.seed {
            let s = i64::try_from(s).map_err(|_| {
                InputError::flag(&format!("--seed {s}"), format!("at most {} (a TOML integer)", i64::MAX))
            })?;
            sc.set_value("run", "seed", toml::Value::Integer(s));
        }
        if let Some(r) = a.ranks {
            if r == 0 {
                return Err(InputError::flag("--ranks 0", "the number of ranks must be at least 1").into());
            }
            let r = i64::try_from(r)
                .map_err(|_| InputError::flag(&format!("--ranks {r}"), format!("at most {}", i64::MAX)))?;
            sc.set_value("run", "ranks", toml::Value::Integer(r));
        }
        if let Some(b) = &a.backend {
            parse_backend(b, "--backend")?;
            sc.set_value("run", "backend", toml::Value::String(b.clone()));
        }
        let mut plan = run::plan(self, &mut sc, a.out.clone(), a.trace.clone(), a.ranks.is_some())?;
        plan.verify = a.verify;
        plan.progress = self.progress && !crate::logging::is_quiet();
        plan.resilience = a.checkpoint.resolve(&plan.out, &plan.resolved, plan.backend == Backend::Mpi)?;
        if a.dry_run {
            print!("{}", self.model.describe(&plan.params, plan.ranks));
            return Ok(None);
        }
        // Where the results go is checked before anything is computed.
        crate::files::check_output_dir(&plan.out, "output directory (--out or [run] out)")?;
        if let Some(t) = &plan.trace {
            crate::files::check_output_file(t, "--trace")?;
        }
        crate::files::sweep_stale_temps(&plan.out);
        let done = run::execute(self, &plan)?;
        if let Some(done) = &done {
            if !crate::logging::is_quiet() && self.progress {
                for l in &done.lines {
                    println!("{l}");
                }
                print_phases(&done.summary);
                let s = &done.summary;
                let prepare = s["prepare_s"].as_f64().unwrap_or(0.0);
                let prepare = if prepare >= 1e-3 { format!(" (+ {prepare:.3} s preparing)") } else { String::new() };
                println!(
                    "{} on {} {} rank(s): digest {}  wall {:.3} s{prepare}  → {}",
                    s["model"].as_str().unwrap_or("?"),
                    s["ranks"],
                    plan.backend.name(),
                    s["digest"].as_str().unwrap_or("?"),
                    s["wall_s"].as_f64().unwrap_or(0.0),
                    done.summary_path.display()
                );
                if let Some(t) = &plan.trace {
                    println!("trace → {}", t.display());
                }
            }
        }
        Ok(done)
    }

    /// `sweep`: points × replications of the model, statistics per point,
    /// `results.csv`, `results.json`, `tasks.jsonl` and `sweep.png`.
    pub fn cmd_sweep(&self, a: &SweepArgs) -> Result<Option<parsim_sweep::SweepOutcome>, Error> {
        crate::sweep::run(self, a)
    }

    /// Runs `sc` in this process, quietly (no files, no progress), with
    /// `seed`, on its `[run] ranks` threads: one evaluation of the model, as
    /// a sweep task runs it. Returns rank 0's outcome.
    pub fn evaluate(&self, sc: &Scenario, seed: u64, scratch: &Path) -> Result<crate::Outcome, Error> {
        let mut sc = sc.clone();
        sc.set_value("run", "seed", toml::Value::Integer(seed as i64));
        sc.set_value("run", "backend", toml::Value::String("threads".into()));
        crate::sweep::evaluate(self, sc, seed, scratch).map_err(Error::Run)
    }

    /// Parses `args` (without the program name) as the command line and
    /// runs it; returns rank 0's result of a `run`.
    pub fn run_with(&self, args: &[&str]) -> Result<Finished, Error> {
        let cli = UserCli::try_parse_from(std::iter::once("model").chain(args.iter().copied()))
            .map_err(|e| InputError::flag("command line", e.to_string()))?;
        match cli.command {
            UserCommand::Run(a) => self.cmd_run(&a)?.ok_or_else(|| Error::Run("no result on this rank".into())),
            UserCommand::Sweep(_) => Err(Error::Run("run_with runs `run`; use cmd_sweep for sweeps".into())),
        }
    }

    /// Parses the process's command line and runs it: the `main` of a
    /// user's model. Exit codes: 0 success, 1 the run failed, 2 bad input.
    pub fn from_args(self) -> ExitCode {
        let mut cmd = <UserCli as clap::CommandFactory>::command();
        let name = std::env::args()
            .next()
            .and_then(|a| Path::new(&a).file_stem().map(|s| s.to_string_lossy().into_owned()))
            .unwrap_or_else(|| self.model.name().to_string());
        // clap keeps the program's name for the life of the process.
        let name: &'static str = Box::leak(name.into_boxed_str());
        let about = self.about.clone().unwrap_or_else(|| format!("The {} model, run by parsim", self.model.name()));
        cmd = cmd.name(name).bin_name(name).about(about).after_help(format!(
            "Examples:\n  {name} run --ranks 2\n  {name} run --set key=value --out out/{m} --trace out/{m}/trace.json\n  \
             {name} run my.toml --dry-run\n  {name} sweep --param key=1,2,4 --replications 10\n  \
             mpirun -n 4 {name} run --backend mpi   (built with --features parsim/mpi)",
            m = self.model.name()
        ));
        let matches = cmd.get_matches();
        let cli = match <UserCli as clap::FromArgMatches>::from_arg_matches(&matches) {
            Ok(c) => c,
            Err(e) => e.exit(),
        };
        crate::logging::init(cli.verbose, cli.quiet);
        let result = match &cli.command {
            UserCommand::Run(a) => self.cmd_run(a).map(|_| ()),
            UserCommand::Sweep(a) => self.cmd_sweep(a).map(|_| ()),
        };
        exit_code(result)
    }
}

/// The exit code of a command's result (printing the error): 0, 1 for a
/// failed run, 2 for bad input.
pub fn exit_code(result: Result<(), Error>) -> ExitCode {
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::from(if matches!(e, Error::Input(_)) { 2 } else { 1 })
        }
    }
}

/// Parses a `--backend` value.
pub fn parse_backend(s: &str, flag: &str) -> Result<Backend, InputError> {
    Backend::parse(s).ok_or_else(|| InputError::flag(flag, format!("expected threads or mpi, found \"{s}\"")))
}

/// The per-phase breakdown: mean and max over ranks, and the share of wall time.
pub fn print_phases(s: &Value) {
    let wall = s["wall_s"].as_f64().unwrap_or(0.0).max(1e-12);
    println!("{:>8} {:>10} {:>10} {:>7}", "phase", "mean s", "max s", "% wall");
    for p in ["compute", "comm", "wait", "io", "serial"] {
        let v: Vec<f64> =
            s["phases_s"][p].as_array().map(|a| a.iter().filter_map(|x| x.as_f64()).collect()).unwrap_or_default();
        let mean = v.iter().sum::<f64>() / v.len().max(1) as f64;
        let max = v.iter().cloned().fold(0.0, f64::max);
        println!("{p:>8} {mean:>10.4} {max:>10.4} {:>6.1}%", 100.0 * mean / wall);
    }
}

#[derive(Parser, Debug)]
struct UserCli {
    /// More log output (-v: debug, -vv: trace).
    #[arg(short, long, global = true, action = clap::ArgAction::Count)]
    verbose: u8,
    /// Only errors: no progress, no summary lines.
    #[arg(short, long, global = true)]
    quiet: bool,
    #[command(subcommand)]
    command: UserCommand,
}

#[derive(Subcommand, Debug)]
enum UserCommand {
    /// Run the model and write DIR/summary.json.
    Run(RunArgs),
    /// Sweep its parameters: points × replications, statistics per point.
    Sweep(SweepArgs),
}

/// The flags of `run`.
#[derive(Args, Debug, Clone, Default)]
pub struct RunArgs {
    /// The scenario file (TOML); without one, the model's defaults.
    pub scenario: Option<PathBuf>,
    /// Number of ranks (threads backend; under MPI, mpirun decides).
    #[arg(long)]
    pub ranks: Option<u64>,
    /// threads (default) or mpi (run under mpirun).
    #[arg(long)]
    pub backend: Option<String>,
    /// Output directory (default: out/NAME, NAME being the scenario file name without .toml).
    #[arg(long)]
    pub out: Option<PathBuf>,
    /// Write a Chrome/Perfetto trace of every rank's phases to FILE.
    #[arg(long, value_name = "FILE")]
    pub trace: Option<PathBuf>,
    /// Override the scenario's seed.
    #[arg(long)]
    pub seed: Option<u64>,
    /// Override a scenario key: --set table.key=value, or key=value for the model's own table (repeatable).
    #[arg(long = "set", value_name = "KEY=VALUE")]
    pub set: Vec<String>,
    /// Validate the scenario and print how the work would be spread over the ranks, without running.
    #[arg(long)]
    pub dry_run: bool,
    /// Print the model's analytic predictions beside the simulated values.
    #[arg(long)]
    pub verify: bool,
    /// Checkpoints, restarts, supervision and fault injection.
    #[command(flatten)]
    pub checkpoint: crate::resilience::CheckpointArgs,
}

/// The flags of `sweep`. (Their docs are the `--help` text, where
/// `[sweep]` names the scenario table.)
#[allow(rustdoc::broken_intra_doc_links)]
#[derive(Args, Debug, Clone, Default)]
pub struct SweepArgs {
    /// The scenario file (TOML) with a [sweep] table; optional when --param gives the points.
    pub scenario: Option<PathBuf>,
    /// Sweep a parameter: KEY=V1,V2,… or KEY=START:STOP:STEP (repeatable; a grid over all of them).
    #[arg(long = "param", value_name = "KEY=VALUES")]
    pub param: Vec<String>,
    /// Replications per point (overrides [sweep] replications).
    #[arg(long)]
    pub replications: Option<u64>,
    /// Metrics to tabulate, comma-separated (default: every numeric metric but timings).
    #[arg(long, value_delimiter = ',')]
    pub metrics: Vec<String>,
    /// Worker threads (default: [sweep] workers, or the number of cores).
    #[arg(long)]
    pub workers: Option<usize>,
    /// threads (default) or mpi (master-worker under mpirun).
    #[arg(long, default_value = "threads")]
    pub backend: String,
    /// Output directory (default: out/NAME).
    #[arg(long)]
    pub out: Option<PathBuf>,
    /// Continue an interrupted sweep from DIR/tasks.jsonl.
    #[arg(long)]
    pub resume: bool,
    /// The same as `--resume --out DIR` (as `run --restart` restarts a run): a sweep's checkpoint is its task log.
    #[arg(long, value_name = "DIR")]
    pub restart: Option<PathBuf>,
    /// Override a scenario key: --set table.key=value, or key=value for the model's own table (repeatable).
    #[arg(long = "set", value_name = "KEY=VALUE")]
    pub set: Vec<String>,
    /// Where tasks run: thread (default) or process (a supervised child per worker; a task whose
    /// process dies or overruns [sweep] task_timeout_s is retried).
    #[arg(long)]
    pub isolate: Option<String>,
    /// Internal: serve tasks on stdin/stdout for a process-isolated worker.
    #[arg(long, hide = true)]
    pub serve: bool,
}
