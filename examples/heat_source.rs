//! Your own stencil: 2-D heat diffusion with a heater, a cold wall and a
//! conductivity that varies in space, on parsim's grid engine.
//!
//! The plate is `ny × nx` cells with its edges held at 0. A heater of power
//! `power` sits at `heater = [y, x]` and is switched off after `heater_steps`
//! steps; a wall (a column of cells at `wall_x`, with a door in the middle)
//! is held at 0; the right half of the plate conducts `right_alpha / alpha`
//! times as well as the left. The stencil sees each cell's global index
//! `[y, x]` and the step, so none of this needs packing by hand. The grid is
//! cut into blocks, one per rank, with halos exchanged every step; the
//! digest is the same on any number of ranks.
//!
//! ```sh
//! cargo run --release --example heat_source -- run --ranks 4
//! cargo run --release --example heat_source -- run --set 'size=[512, 512]' --set steps=2000 --ranks 2
//! cargo run --release --example heat_source -- sweep --param power=1,2,4 --replications 1
//! ```

use std::process::ExitCode;

use parsim::comm::Comm;
use parsim::grid::{Boundary, CellFn, GridSpec, Neighbourhood, Reach};
use parsim::{check, BoxError, Experiment, Model, Outcome, ParamError, Rank};
use serde::{Deserialize, Serialize};

#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(default)]
struct Params {
    /// `[ny, nx]` cells.
    size: [usize; 2],
    /// Time steps.
    steps: u64,
    /// Diffusion number of the left half (≤ 0.25 for stability).
    alpha: f64,
    /// Diffusion number of the right half.
    right_alpha: f64,
    /// The heater's cell `[y, x]`.
    heater: [usize; 2],
    /// Heat added per step at the heater.
    power: f64,
    /// Steps the heater is on.
    heater_steps: u64,
    /// Column of the cold wall (0 = none).
    wall_x: usize,
}

impl Default for Params {
    fn default() -> Self {
        Params {
            size: [128, 128],
            steps: 400,
            alpha: 0.2,
            right_alpha: 0.05,
            heater: [64, 32],
            power: 1.0,
            heater_steps: 300,
            wall_x: 80,
        }
    }
}

struct HeatSource;

impl Model for HeatSource {
    type Params = Params;

    fn name(&self) -> &str {
        "heat_source"
    }

    fn check(&self, p: &Params) -> Result<(), ParamError> {
        check::that("size", p.size.iter().all(|&n| (3..=100_000).contains(&n)), "each side in 3..=100000")?;
        check::range("alpha", p.alpha, 0.0..=0.25)?;
        check::range("right_alpha", p.right_alpha, 0.0..=0.25)?;
        check::that("heater", p.heater[0] < p.size[0] && p.heater[1] < p.size[1], "the heater must be on the plate")?;
        check::that("wall_x", p.wall_x < p.size[1], "the wall must be on the plate")
    }

    fn run<C: Comm>(&self, p: &Params, rank: &mut Rank<'_, C>) -> Result<Outcome, BoxError> {
        let [ny, nx] = p.size;
        let mut spec = GridSpec::new(vec![ny, nx], p.steps);
        spec.boundary = vec![Boundary::Dirichlet(0.0)];
        spec.reduce_every = 0; // the total heat at the end only
        let p = p.clone();
        // The update of one cell, from its neighbourhood, its index and the step.
        let stencil = CellFn::new(1, Reach::Star, move |n: &Neighbourhood<'_, f64>| {
            let [y, x] = n.index2();
            if p.wall_x > 0 && x == p.wall_x && y.abs_diff(ny / 2) > ny / 10 {
                return 0.0; // the cold wall, with a door in the middle
            }
            let a = if x < nx / 2 { p.alpha } else { p.right_alpha };
            let lap = n.get2(-1, 0) + n.get2(1, 0) + n.get2(0, -1) + n.get2(0, 1) - 4.0 * n.centre();
            let heat = if [y, x] == p.heater && n.step() < p.heater_steps { p.power } else { 0.0 };
            n.centre() + a * lap + heat
        });
        let mut bar = rank.progress("steps", spec.steps);
        let report = parsim::grid::run(rank.comm(), &spec, &stencil, &|_| 0.0, &mut |s| bar.set(s))?;
        bar.finish();
        let total = report.reductions.last().map_or(0.0, |r| r.total);
        Ok(Outcome::new()
            .digest(report.digest)
            .metric("total_heat", total)
            .metric("heat_added", p.power * p.heater_steps.min(p.steps) as f64)
            .line(format!(
                "heat_source: {ny} × {nx} plate, {} steps on {}: total heat {total:.6} of {:.1} added (the rest \
                 left through the cold edges and the wall)",
                p.steps,
                report.decomposition,
                p.power * p.heater_steps.min(p.steps) as f64
            )))
    }
}

fn main() -> ExitCode {
    Experiment::new(HeatSource)
        .about("2-D heat diffusion with a heater and a cold wall: a user's own stencil")
        .from_args()
}
