//! `parsim sweep SCENARIO.toml`: points × replications of a built-in model
//! (the scenario's `[run] model`), through the front door's sweep.

use anyhow::Result;
use parsim::{Experiment, InputError, Model, Scenario, SweepArgs};

use crate::models::{self, WithModel};

struct Sweep<'a>(&'a SweepArgs);

impl WithModel for Sweep<'_> {
    type Out = Result<(), parsim::Error>;
    fn with<M: Model>(self, exp: Experiment<M>) -> Self::Out {
        exp.cmd_sweep(self.0).map(|_| ())
    }
}

/// Runs `parsim sweep`.
pub fn run(a: &SweepArgs) -> Result<()> {
    let path = a.scenario.as_deref().ok_or_else(|| {
        InputError::flag("parsim sweep", "expected a scenario file, e.g. `parsim sweep scenarios/sweep-epidemic.toml`")
    })?;
    let name = models::model_of(&Scenario::load(path)?)?;
    Ok(models::dispatch(&name, Sweep(a))?)
}
