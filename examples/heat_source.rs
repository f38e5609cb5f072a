//! Your own stencil: 2-D heat diffusion with a heater, a cold wall and a
//! conductivity that varies in space, on parsim's grid engine.
//!
//! The plate is `ny × nx` cells with its edges held at 0. A heater of power
//! `power` sits at `heater = [y, x]` and is switched off after `heater_steps`
//! steps; a wall (a column of cells at `wall_x`, with a door in the middle)
//! is held at 0; the right half of the plate conducts `right_alpha / alpha`
//! times as well as the left. The update sees each cell's global index
//! `[y, x]` and the step, so none of this needs packing by hand. The model
//! is three functions of a [`parsim::StencilModel`] — the grid, the initial
//! value, the update — and `parsim::Stencil` does the rest: the grid is cut
//! into blocks, one per rank, halos are exchanged every step, and the digest
//! is the same on any number of ranks.
//!
//! ```sh
//! cargo run --release --example heat_source -- run --ranks 4          # writes out/heat_source/field.png
//! cargo run --release --example heat_source -- run --set 'size=[512, 512]' --set steps=2000 --ranks 2
//! cargo run --release --example heat_source -- sweep --param power=1,2,4 --replications 1 --metrics total
//! ```

use std::process::ExitCode;

use parsim::grid::{Boundary, GridSpec, Neighbourhood};
use parsim::{check, Experiment, ParamError, Stencil, StencilModel};
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
            steps: 3000,
            alpha: 0.2,
            right_alpha: 0.05,
            heater: [64, 32],
            power: 1.0,
            heater_steps: 2500,
            wall_x: 80,
        }
    }
}

struct HeatSource;

impl StencilModel for HeatSource {
    type Params = Params;
    type Cell = f64;

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

    fn grid(&self, p: &Params) -> GridSpec {
        let mut spec = GridSpec::new(p.size.to_vec(), p.steps);
        spec.boundary = vec![Boundary::Dirichlet(0.0)]; // the edges are held at 0
        spec.reduce_every = 0; // the total heat at the end only
        spec
    }

    fn init(&self, _p: &Params, _index: [usize; 3]) -> f64 {
        0.0 // a cold plate
    }

    fn update(&self, p: &Params, n: &Neighbourhood<'_, f64>) -> f64 {
        let ([ny, nx], [y, x]) = (p.size, n.index2());
        if p.wall_x > 0 && x == p.wall_x && y.abs_diff(ny / 2) > ny / 10 {
            return 0.0; // the cold wall, with a door in the middle
        }
        let a = if x < nx / 2 { p.alpha } else { p.right_alpha };
        let lap = n.get2(-1, 0) + n.get2(1, 0) + n.get2(0, -1) + n.get2(0, 1) - 4.0 * n.centre();
        let heat = if [y, x] == p.heater && n.step() < p.heater_steps { p.power } else { 0.0 };
        n.centre() + a * lap + heat
    }

    fn value_label(&self) -> &str {
        "temperature (heat units per cell)"
    }
}

fn main() -> ExitCode {
    Experiment::new(Stencil(HeatSource))
        .about("2-D heat diffusion with a heater and a cold wall: a user's own stencil")
        .from_args()
}
