//! `parsim sweep SCENARIO.toml`: points × replications of a built-in model
//! (the scenario's `[run] model`), through the front door's sweep.

use anyhow::Result;
use parsim::{Experiment, Model, SweepArgs};

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
    models::on_scenario(a.scenario.as_deref(), "sweep", "scenarios/sweep-epidemic.toml", Sweep(a))
}
