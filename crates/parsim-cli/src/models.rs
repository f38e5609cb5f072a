//! The built-in models, each an ordinary [`parsim::Model`] read from its
//! scenario tables: the binary dispatches on `[run] model` and hands the
//! rest to the same front door a user's model gets.

pub mod balance;
pub mod des;
pub mod epidemic;
pub mod front;
pub mod grid;
pub mod ring;
pub mod space;

use parsim::{BoxError, Experiment, InputError, Model, Outcome, Rank, RunSettings, Scenario};
use parsim_comm::Comm;
use parsim_core::Digest;
use serde_json::Value;

/// The names `[run] model` takes.
pub const NAMES: [&str; 8] = ["ring", "grid", "phold", "queues", "epidemic", "crowd", "flock", "front"];

/// What a built-in model's rank function hands back.
pub struct ModelOutput {
    /// The digest of the canonical final state (equal on every rank).
    pub digest: Digest,
    /// Model-specific figures for `summary.json`.
    pub metrics: Value,
}

impl From<ModelOutput> for Outcome {
    fn from(m: ModelOutput) -> Outcome {
        Outcome::new().digest(m.digest).metrics(m.metrics)
    }
}

/// What the built-in model code asks of the run.
pub struct RunContext {
    /// The run's seed.
    pub seed: u64,
    /// Whether to show progress (on rank 0).
    pub progress: bool,
    /// Whether to print analytic checks beside the results (`--verify`).
    pub verify: bool,
    /// Whether the model writes its own files and summary lines (off inside sweeps).
    pub outputs: bool,
    /// A slowed rank and its factor (`--inject slow:rank=R,factor=F`), for balanced models.
    pub slow: Option<(usize, f64)>,
}

impl RunContext {
    fn of<C: Comm>(r: &Rank<'_, C>) -> Self {
        RunContext {
            seed: r.seed(),
            progress: r.shows_progress(),
            verify: r.verify(),
            outputs: r.writes_outputs(),
            slow: r.slowdown(),
        }
    }
}

/// `model = "ring"`.
pub struct Ring;

impl Model for Ring {
    type Params = ring::RingConfig;
    fn name(&self) -> &str {
        "ring"
    }
    fn describe(&self, p: &Self::Params, ranks: usize) -> String {
        ring::describe(p, ranks)
    }
    fn run<C: Comm>(&self, p: &Self::Params, rank: &mut Rank<'_, C>) -> Result<Outcome, BoxError> {
        Ok(ring::run(rank.comm(), p, &RunContext::of(rank))?.into())
    }
}

/// `model = "grid"`.
pub struct Grid;

impl Model for Grid {
    type Params = grid::GridConfig;
    fn name(&self) -> &str {
        "grid"
    }
    fn describe(&self, p: &Self::Params, ranks: usize) -> String {
        p.describe(ranks).unwrap_or_else(|e| format!("grid: {e}\n"))
    }
    fn run<C: Comm>(&self, p: &Self::Params, rank: &mut Rank<'_, C>) -> Result<Outcome, BoxError> {
        let mut ck = rank.checkpointer("grid", "step")?;
        let out = grid::run(rank.comm(), p, &RunContext::of(rank), rank.out_dir(), ck.as_mut())?;
        rank.checkpoints_done(ck);
        Ok(out.into())
    }
}

/// `model = "phold"` or `"queues"` (the DES engines).
pub struct Des(pub &'static str);

impl Model for Des {
    type Params = des::DesSetup;
    fn name(&self) -> &str {
        self.0
    }
    fn describe(&self, p: &Self::Params, ranks: usize) -> String {
        p.describe(ranks)
    }
    fn run<C: Comm>(&self, p: &Self::Params, rank: &mut Rank<'_, C>) -> Result<Outcome, BoxError> {
        // Time Warp counts GVT rounds; the other engines windows of the lookahead.
        let unit = if p.cfg.engine == parsim_des::Engine::Optimistic { "gvt" } else { "window" };
        let mut ck = rank.checkpointer(self.0, unit)?;
        let out = des::run(rank.comm(), p, &RunContext::of(rank), ck.as_mut())?;
        rank.checkpoints_done(ck);
        Ok(out.into())
    }
}

/// `model = "epidemic"` (its parameters are the `[abm]` table).
pub struct Epidemic;

impl Model for Epidemic {
    type Params = epidemic::AbmSetup;
    fn name(&self) -> &str {
        "epidemic"
    }
    fn table(&self) -> &str {
        "abm"
    }
    fn describe(&self, p: &Self::Params, ranks: usize) -> String {
        p.describe(ranks)
    }
    fn run<C: Comm>(&self, p: &Self::Params, rank: &mut Rank<'_, C>) -> Result<Outcome, BoxError> {
        let mut ck = rank.checkpointer("epidemic", "day")?;
        let out = epidemic::run(rank.comm(), p, &RunContext::of(rank), rank.out_dir(), ck.as_mut())?;
        rank.checkpoints_done(ck);
        Ok(out)
    }
}

/// `model = "front"`: a reaction front on a tiled, balanced grid.
pub struct FrontModel;

impl Model for FrontModel {
    type Params = front::FrontSetup;
    fn name(&self) -> &str {
        "front"
    }
    fn describe(&self, p: &Self::Params, ranks: usize) -> String {
        p.describe(ranks)
    }
    fn run<C: Comm>(&self, p: &Self::Params, rank: &mut Rank<'_, C>) -> Result<Outcome, BoxError> {
        let out = rank.writes_outputs().then(|| rank.out_dir());
        Ok(front::run(rank.comm(), p, rank.seed(), rank.slowdown(), out)?)
    }
}

/// `model = "crowd"` or `"flock"`: agents in continuous space (`[space]`,
/// the rule's table, `[lb]`).
pub struct Space<R>(pub &'static str, std::marker::PhantomData<R>);

impl<R> Model for Space<R>
where
    R: parsim_abm::space::Rule + Clone + Send + Sync + serde::Serialize + serde::de::DeserializeOwned + 'static,
{
    type Params = space::SpaceSetup<R>;
    fn name(&self) -> &str {
        self.0
    }
    fn table(&self) -> &str {
        "space"
    }
    fn describe(&self, p: &Self::Params, ranks: usize) -> String {
        p.describe(self.0, ranks)
    }
    fn run<C: Comm>(&self, p: &Self::Params, rank: &mut Rank<'_, C>) -> Result<Outcome, BoxError> {
        let out = rank.writes_outputs().then(|| rank.out_dir());
        Ok(space::run(rank.comm(), self.0, p, rank.seed(), rank.slowdown(), out)?)
    }
}

fn space_experiment<R>(name: &'static str) -> Experiment<Space<R>>
where
    R: parsim_abm::space::Rule + Clone + Send + Sync + serde::Serialize + serde::de::DeserializeOwned + 'static,
{
    Experiment::with_reader(Space(name, std::marker::PhantomData), move |sc, _| {
        space::SpaceSetup::from_scenario(sc, name)
    })
}

/// Something to do with one built-in model's experiment (`run`, `sweep`).
pub trait WithModel {
    /// What it returns.
    type Out;
    /// Does it.
    fn with<M: Model>(self, exp: Experiment<M>) -> Self::Out;
}

/// The experiment of built-in model `name` (one of [`NAMES`]).
pub fn dispatch<W: WithModel>(name: &str, w: W) -> W::Out {
    match name {
        "ring" => w.with(Experiment::with_reader(Ring, |sc, _| ring::RingConfig::from_scenario(sc))),
        "grid" => w.with(Experiment::with_reader(Grid, read_grid)),
        "phold" | "queues" => {
            let name = if name == "phold" { "phold" } else { "queues" };
            w.with(Experiment::with_reader(Des(name), move |sc, run| {
                let setup = des::DesSetup::from_scenario(sc, name)?;
                // LPs and events this machine would hold: refused before anything is allocated.
                let share = match run.backend {
                    parsim::Backend::Threads => 1.0,
                    _ => parsim_core::mem::mpi_local_ranks() as f64 / parsim_core::mem::mpi_world_ranks().max(1) as f64,
                };
                let (need, key, what) = setup.memory_need(run.ranks);
                match parsim_core::mem::shortfall(need * share, &what) {
                    Some(why) => Err(sc.error_at(name, key, format!("[{name}] {key}: {why}"))),
                    None => Ok(setup),
                }
            }))
        }
        "front" => w.with(Experiment::with_reader(FrontModel, |sc, _| front::FrontSetup::from_scenario(sc))),
        "crowd" => w.with(space_experiment::<parsim_abm::space::crowd::Crowd>("crowd")),
        "flock" => w.with(space_experiment::<parsim_abm::space::flock::Flock>("flock")),
        _ => w.with(epidemic_experiment()),
    }
}

/// The epidemic's experiment.
pub fn epidemic_experiment() -> Experiment<Epidemic> {
    Experiment::with_reader(Epidemic, |sc, run| {
        let setup = epidemic::AbmSetup::from_scenario(sc, run.threads_per_rank)?;
        // A population whose shares would not fit is bad input: refused before anything is built.
        let (world, local) = match run.backend {
            parsim::Backend::Threads => (run.ranks, run.ranks),
            _ => (epidemic::mpi_world_ranks(), epidemic::mpi_local_ranks()),
        };
        match setup.memory_shortfall(world, local) {
            Some(why) => Err(sc.error_at("abm", "agents", format!("[abm] agents: {why}"))),
            None => Ok(setup),
        }
    })
}

fn read_grid(sc: &mut Scenario, run: &mut RunSettings) -> Result<grid::GridConfig, InputError> {
    let cfg = grid::GridConfig::from_scenario(sc, run.threads_per_rank)?;
    // Two fields of every cell, this machine's share of them: refused before anything is allocated.
    let share = match run.backend {
        parsim::Backend::Threads => 1.0,
        _ => parsim_core::mem::mpi_local_ranks() as f64 / parsim_core::mem::mpi_world_ranks().max(1) as f64,
    };
    let cells: f64 = cfg.spec.size.iter().map(|&n| n as f64).product();
    let (bytes, kind) = cfg.cell_bytes();
    if let Some(why) = parsim_core::mem::shortfall(2.0 * bytes as f64 * cells * share, &format!("two {kind} fields")) {
        let dims = cfg.spec.size.iter().map(|n| n.to_string()).collect::<Vec<_>>().join(", ");
        return Err(sc.error_at("grid", "size", format!("[grid] size = [{dims}] {why}")));
    }
    if run.backend == parsim::Backend::Threads {
        cfg.check(sc, run.ranks)?;
    }
    run.threads_per_rank = cfg.spec.threads_per_rank;
    Ok(cfg)
}

/// Runs `w` on the experiment of the built-in model that the scenario at
/// `path` names in `[run] model` (`command` and `example` are for the error
/// when no scenario is given).
pub fn on_scenario<W: WithModel<Out = Result<(), parsim::Error>>>(
    path: Option<&std::path::Path>,
    command: &str,
    example: &str,
    w: W,
) -> anyhow::Result<()> {
    let path = path.ok_or_else(|| {
        InputError::flag(
            &format!("parsim {command}"),
            format!("expected a scenario file, e.g. `parsim {command} {example}`"),
        )
    })?;
    let name = model_of(&Scenario::load(path)?)?;
    Ok(dispatch(&name, w)?)
}

/// The model named by a scenario's `[run] model` (validated against [`NAMES`]).
pub fn model_of(sc: &Scenario) -> Result<String, InputError> {
    let mut probe = sc.clone();
    let run = parsim::read_run_table(&mut probe, true)?;
    let name = run.model.unwrap_or_default();
    if NAMES.contains(&name.as_str()) {
        Ok(name)
    } else {
        let list = NAMES.iter().map(|n| format!("\"{n}\"")).collect::<Vec<_>>().join(", ");
        Err(sc.error_at("run", "model", format!("[run] model: expected one of {list}, found \"{name}\"")))
    }
}
