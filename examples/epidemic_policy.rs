//! Your own intervention in the epidemic: a policy written as a rule,
//! compared with doing nothing on the same population and the same random
//! numbers.
//!
//! The rule is a plain function from a day to the contact layers closed on
//! it — here, work from home on `wfh_days` days of every week and close the
//! schools for `school_break` days, both from day `start` for `weeks` weeks —
//! turned into the engine's layer closures. Every draw of the SEIR model is
//! keyed by (seed, day, agent, neighbour), so the two runs differ only by the
//! policy, and each gives the same digest on any number of ranks.
//!
//! ```sh
//! cargo run --release --example epidemic_policy -- run --ranks 2
//! cargo run --release --example epidemic_policy -- run --set wfh_days=3 --set weeks=12
//! cargo run --release --example epidemic_policy -- sweep --param wfh_days=0,1,2,3,4,5 --replications 4 --metrics attack_rate
//! ```

use std::process::ExitCode;

use parsim::abm::population::{LocalPopulation, Synthetic};
use parsim::abm::{seir, Closure, DayCounts, SeirConfig};
use parsim::comm::Comm;
use parsim::plot::{Chart, Panel, Series};
use parsim::{check, BoxError, Experiment, Model, Outcome, ParamError, Rank};
use serde::{Deserialize, Serialize};

#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(default)]
struct Params {
    /// Agents of the synthetic population (households, schools, workplaces, community).
    agents: usize,
    /// Days simulated.
    days: u32,
    /// Per-contact daily transmission probability.
    beta: f64,
    /// The first day of the policy.
    start: u32,
    /// How long it lasts, in weeks.
    weeks: u32,
    /// Days of each week worked from home (workplaces closed), 0 to 5.
    wfh_days: u32,
    /// Days the schools close at the start of the policy.
    school_break: u32,
}

impl Default for Params {
    fn default() -> Self {
        Params { agents: 50_000, days: 150, beta: 0.04, start: 20, weeks: 8, wfh_days: 2, school_break: 14 }
    }
}

/// The policy: which layers are closed on `day`. Any rule of the day works.
fn closed_on(p: &Params, day: u32) -> Vec<&'static str> {
    let mut closed = Vec::new();
    if day < p.start || day >= p.start + 7 * p.weeks {
        return closed;
    }
    if (day - p.start) % 7 < p.wfh_days {
        closed.push("work");
    }
    if day - p.start < p.school_break {
        closed.push("school");
    }
    closed
}

/// The rule as the engine's closures: one per run of consecutive closed days of a layer.
fn closures(p: &Params, layer_of: impl Fn(&str) -> Option<usize>) -> Vec<Closure> {
    let mut out: Vec<Closure> = Vec::new();
    for day in 0..p.days {
        for name in closed_on(p, day) {
            let Some(layer) = layer_of(name) else { continue };
            match out.iter_mut().find(|c| c.layer == layer && c.to == day) {
                Some(c) => c.to = day + 1,
                None => out.push(Closure { layer, from: day, to: day + 1 }),
            }
        }
    }
    out
}

struct Policy;

impl Model for Policy {
    type Params = Params;

    fn name(&self) -> &str {
        "policy"
    }

    fn check(&self, p: &Params) -> Result<(), ParamError> {
        check::range("agents", p.agents, 100..=50_000_000)?;
        check::range("days", p.days, 10..=3650)?;
        check::range("beta", p.beta, 0.0..=1.0)?;
        check::range("wfh_days", p.wfh_days, 0..=5)?;
        check::that("start", p.start < p.days, "the policy must start before the end")
    }

    fn run<C: Comm>(&self, p: &Params, rank: &mut Rank<'_, C>) -> Result<Outcome, BoxError> {
        let comm = rank.comm();
        // Every rank generates only its own block of the population (keyed by agent ids).
        let pop = LocalPopulation::synthetic(comm, &Synthetic::default(), p.agents, rank.seed())?;
        let n = pop.agents() as u64;
        let local = &pop.graph;
        let base = SeirConfig { beta: p.beta, days: p.days, seed: rank.seed(), ..SeirConfig::default() };
        let layer = |name: &str| pop.layers.iter().position(|l| l.name == name);
        let policy = SeirConfig { closures: closures(p, layer), ..base.clone() };
        let mut bar = rank.progress("days (baseline, then policy)", 2 * u64::from(p.days));
        let mut progress = |d: u32, _: u32, _: &DayCounts| bar.set(u64::from(d));
        let without = seir::run(comm, &pop.layers, local, &base, Some(&mut progress))?;
        let mut progress = |d: u32, _: u32, _: &DayCounts| bar.set(u64::from(p.days + d));
        let with = seir::run(comm, &pop.layers, local, &policy, Some(&mut progress))?;
        bar.finish();
        let attack = |r: &seir::SeirResult| {
            let last = r.curve.last().copied().unwrap_or_default();
            (last.r + last.i + last.e) as f64 / n as f64
        };
        let peak = |r: &seir::SeirResult| r.curve.iter().map(|c| c.i).max().unwrap_or(0) as f64 / n as f64;
        if rank.is_root() && rank.writes_outputs() {
            let share = |r: &seir::SeirResult| -> Vec<(f64, f64)> {
                r.curve.iter().enumerate().map(|(d, c)| (d as f64, c.i as f64 / n as f64)).collect()
            };
            let mut panel = Panel::new("infectious share of the population", "day")
                .percent()
                .series(Series::line("no intervention", share(&without)))
                .series(Series::line(&format!("work from home {} days/week", p.wfh_days), share(&with)));
            let end = p.start + 7 * p.weeks;
            panel = panel.window(&format!("policy (days {}–{end})", p.start), f64::from(p.start), f64::from(end));
            std::fs::create_dir_all(rank.out_dir())?;
            Chart::new(&format!("A user-defined policy on {n} agents"))
                .panel(panel)
                .save(&rank.out_dir().join("policy.png"))?;
        }
        Ok(Outcome::new()
            .digest(with.digest)
            .metric("attack_rate", attack(&with))
            .metric("attack_rate_without", attack(&without))
            .metric("peak_prevalence", peak(&with))
            .metric("peak_prevalence_without", peak(&without))
            .line(format!(
                "policy: attack rate {:.2}% (without: {:.2}%), peak prevalence {:.2}% (without: {:.2}%) → {}",
                100.0 * attack(&with),
                100.0 * attack(&without),
                100.0 * peak(&with),
                100.0 * peak(&without),
                rank.out_dir().join("policy.png").display()
            )))
    }
}

fn main() -> ExitCode {
    Experiment::new(Policy).about("A user-defined intervention in the SEIR epidemic, against doing nothing").from_args()
}
