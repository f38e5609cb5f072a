//! `parsim run SCENARIO.toml`: the scenario's `[run] model` picks the
//! built-in model; the front door does the rest.

use anyhow::Result;
use parsim::{Experiment, InputError, Model, RunArgs, Scenario};

use crate::models::{self, WithModel};

struct Run<'a>(&'a RunArgs);

impl WithModel for Run<'_> {
    type Out = Result<(), parsim::Error>;
    fn with<M: Model>(self, exp: Experiment<M>) -> Self::Out {
        exp.cmd_run(self.0).map(|_| ())
    }
}

/// Runs `parsim run`.
pub fn run(a: &RunArgs) -> Result<()> {
    let path = a.scenario.as_deref().ok_or_else(|| {
        InputError::flag("parsim run", "expected a scenario file, e.g. `parsim run scenarios/epidemic.toml`")
    })?;
    let name = models::model_of(&Scenario::load(path)?)?;
    Ok(models::dispatch(&name, Run(a))?)
}
