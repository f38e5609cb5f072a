//! `parsim run SCENARIO.toml`: the scenario's `[run] model` picks the
//! built-in model; the front door does the rest.

use anyhow::Result;
use parsim::{Experiment, Model, RunArgs};

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
    models::on_scenario(a.scenario.as_deref(), "run", "scenarios/epidemic.toml", Run(a))
}
