//! `model = "front"`: a reaction front (Fisher–KPP with a costly reaction
//! only where it is active) on a grid over-decomposed into tiles that the
//! balancer moves between ranks (`parsim_grid::tiles`). `[front]` and
//! `[lb]`. Writes `front.png` (the field, tile owners' boundaries drawn),
//! `lb.png` and the summary's `lb` section.

use std::path::Path;

use parsim::plot::Heatmap;
use parsim::{InputError, Scenario};
use parsim_comm::Comm;
use parsim_grid::tiles::{self, TileSpec};
use parsim_grid::{Boundary, Front, GridError};
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};

/// The `[front]` table.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct FrontTable {
    /// Grid size `[ny, nx]`.
    pub size: Vec<usize>,
    /// Tile size `[ty, tx]`.
    pub tile: Vec<usize>,
    /// Steps.
    pub steps: u64,
    /// Diffusion coefficient D (≤ 0.25).
    pub diffusion: f64,
    /// Reaction rate per step.
    pub rate: f64,
    /// Reaction sub-steps where it is active (the cost of the chemistry).
    pub substeps: u32,
    /// ε: active for ε < u < 1 − ε.
    pub threshold: f64,
    /// `neumann` (zero flux), `periodic`, or a fixed value `dirichlet`.
    pub boundary: String,
    /// Where it starts: `left` (a strip), `corner` or `centre`.
    pub ignition: String,
    /// Write `front.png`.
    pub png: bool,
}

impl Default for FrontTable {
    fn default() -> Self {
        FrontTable {
            size: vec![512, 512],
            tile: vec![32, 32],
            steps: 600,
            diffusion: 0.2,
            rate: 0.5,
            substeps: 64,
            threshold: 1e-4,
            boundary: "neumann".into(),
            ignition: "left".into(),
            png: true,
        }
    }
}

/// The front's parameters.
#[derive(Clone, Debug)]
pub struct FrontSetup {
    /// `[front]`.
    pub front: FrontTable,
    /// `[lb]`.
    pub lb: parsim_lb::Config,
    boundary: Boundary,
}

impl FrontSetup {
    /// Reads and checks `[front]` and `[lb]`.
    pub fn from_scenario(sc: &mut Scenario) -> Result<Self, InputError> {
        let front: FrontTable = sc.params("front")?;
        let lb: parsim_lb::Config = sc.params("lb")?;
        let bad = |sc: &Scenario, k: &str, m: String| sc.error_at("front", k, format!("[front] {k}: {m}"));
        if front.size.len() != 2 || front.size.iter().any(|&n| !(4..=1 << 15).contains(&n)) {
            return Err(bad(sc, "size", format!("expected [ny, nx], each 4..=32768, found {:?}", front.size)));
        }
        // Two f64 fields of every cell, plus a halo per tile: refused before anything is allocated.
        let cells = front.size.iter().map(|&n| n as f64).product::<f64>();
        if let Some(why) = parsim_core::mem::shortfall(cells * 2.0 * 8.0 * 1.1, "two f64 fields of every cell") {
            return Err(bad(sc, "size", why));
        }
        if front.tile.len() != 2 || front.tile.iter().any(|&n| n == 0 || n > 1 << 15) {
            return Err(bad(sc, "tile", format!("expected [ty, tx], each 1..=32768, found {:?}", front.tile)));
        }
        if !(front.diffusion > 0.0 && front.diffusion <= 0.25) {
            return Err(bad(
                sc,
                "diffusion",
                format!("expected a value in (0, 0.25] (stability), found {}", front.diffusion),
            ));
        }
        if !(front.rate >= 0.0 && front.rate <= 10.0) {
            return Err(bad(sc, "rate", format!("expected a value in 0..=10, found {}", front.rate)));
        }
        if !(1..=10_000).contains(&front.substeps) {
            return Err(bad(sc, "substeps", format!("expected 1..=10000, found {}", front.substeps)));
        }
        if !(front.threshold > 0.0 && front.threshold < 0.5) {
            return Err(bad(sc, "threshold", format!("expected a value in (0, 0.5), found {}", front.threshold)));
        }
        if !["left", "corner", "centre"].contains(&front.ignition.as_str()) {
            return Err(bad(
                sc,
                "ignition",
                format!("expected \"left\", \"corner\" or \"centre\", found \"{}\"", front.ignition),
            ));
        }
        let boundary = match front.boundary.as_str() {
            "neumann" => Boundary::Neumann,
            "periodic" => Boundary::Periodic,
            "dirichlet" => Boundary::Dirichlet(0.0),
            other => {
                return Err(bad(
                    sc,
                    "boundary",
                    format!("expected \"neumann\", \"periodic\" or \"dirichlet\", found \"{other}\""),
                ))
            }
        };
        let tiles: usize = (0..2).map(|a| front.size[a].div_ceil(front.tile[a].min(front.size[a]))).product();
        lb.check(tiles).map_err(|(k, m)| {
            let k = k.trim_start_matches("lb.").to_string();
            sc.error_at("lb", &k, format!("[lb] {k}: {m}"))
        })?;
        Ok(FrontSetup { front, lb, boundary })
    }

    /// What `--dry-run` prints.
    pub fn describe(&self, ranks: usize) -> String {
        let f = &self.front;
        let n: Vec<usize> = (0..2).map(|a| f.size[a].div_ceil(f.tile[a].min(f.size[a]))).collect();
        format!(
            "model front: {}×{} cells in {}×{} tiles of {}×{} ({} per rank on {ranks} rank(s)), {} steps, {} reaction sub-steps where active\n\
             balancing: {:?} every {} steps (when {:?}, threshold {}, measure {:?})\n",
            f.size[0],
            f.size[1],
            n[0],
            n[1],
            f.tile[0],
            f.tile[1],
            n[0] * n[1] / ranks.max(1),
            f.steps,
            f.substeps,
            self.lb.strategy,
            self.lb.every,
            self.lb.when,
            self.lb.threshold,
            self.lb.measure
        )
    }
}

fn field_png<C: Comm>(comm: &C, r: &tiles::TileRun, size: [usize; 2], step: u64, path: &Path) -> Result<(), GridError> {
    let Some(all) = comm.gather_value(0, &r.cells)? else { return Ok(()) };
    let (ny, nx) = (size[0], size[1]);
    let mut values = vec![0.0; ny * nx];
    for c in all.into_iter().flatten() {
        let (o, l) = (c.origin, c.len);
        for y in 0..l[1] {
            for x in 0..l[2] {
                values[(o[1] + y) * nx + o[2] + x] = c.values[y * l[2] + x];
            }
        }
    }
    let hi = values.iter().copied().fold(0.0, f64::max).max(1e-12);
    let slice = parsim_grid::Slice { width: nx, height: ny, values, stride: 1, range: (0.0, hi) };
    let [_, ty, tx] = r.tiles;
    let (th, tw) = (ny.div_ceil(ty), nx.div_ceil(tx));
    let owner = |y: usize, x: usize| r.owner[(y / th) * tx + x / tw];
    let mut lines = Vec::new();
    for y in (0..ny).step_by(th) {
        for x in (0..nx).step_by(tw) {
            let (h, w) = (th.min(ny - y) as f64, tw.min(nx - x) as f64);
            if x + tw < nx && owner(y, x) != owner(y, x + tw) {
                lines.push([((x + tw) as f64, y as f64), ((x + tw) as f64, y as f64 + h)]);
            }
            if y + th < ny && owner(y, x) != owner(y + th, x) {
                lines.push([(x as f64, (y + th) as f64), (x as f64 + w, (y + th) as f64)]);
            }
        }
    }
    let title = format!("front at step {step}: u, the boundaries between ranks' tiles in red ({} ranks)", comm.size());
    Heatmap::new(&title, slice, "u (reaction progress)")
        .lines(lines)
        .save(path)
        .map_err(|e| GridError::Io { path: path.to_path_buf(), msg: e.to_string() })
}

/// Runs one rank of the front.
pub fn run<C: Comm>(
    comm: &C,
    p: &FrontSetup,
    seed: u64,
    slow: Option<(usize, f64)>,
    out: Option<&Path>,
) -> Result<parsim::Outcome, GridError> {
    let f = &p.front;
    let stencil = Front { diffusion: f.diffusion, rate: f.rate, substeps: f.substeps, threshold: f.threshold };
    let mut spec = TileSpec::new(f.size.clone(), f.tile.clone(), f.steps);
    spec.boundary = vec![p.boundary];
    spec.lb = p.lb.clone();
    spec.slow = slow;
    spec.seed = seed;
    let (ny, nx) = (f.size[0], f.size[1]);
    let ignition = f.ignition.clone();
    let init = move |g: [usize; 3]| -> f64 {
        let (y, x) = (g[1] as f64, g[2] as f64);
        let lit = match ignition.as_str() {
            "left" => x < 4.0,
            "corner" => x * x + y * y < 64.0,
            _ => (x - nx as f64 / 2.0).powi(2) + (y - ny as f64 / 2.0).powi(2) < 64.0,
        };
        if lit {
            1.0
        } else {
            0.0
        }
    };
    let t = std::time::Instant::now();
    let r = tiles::run(comm, &spec, &stencil, &init)?;
    let wall = t.elapsed().as_secs_f64();
    let mut o = parsim::Outcome::new()
        .digest(r.digest)
        .metric("total", r.total)
        .metric("burnt_fraction", r.total / (nx * ny) as f64)
        .metric("efficiency", r.efficiency)
        .metric("cell_updates_per_s", (nx * ny) as f64 * f.steps as f64 / wall.max(1e-9))
        .value("compute_s", json!(r.compute_s))
        .value("tiles", json!([r.tiles[1], r.tiles[2]]))
        .section("lb", serde_json::to_value(&r.lb).unwrap_or(Value::Null));
    o = super::balance::lines(o, &r.lb, "step", &format!("mean efficiency {:.3}", r.efficiency));
    if let Some(dir) = out {
        if f.png {
            field_png(comm, &r, [ny, nx], f.steps, &dir.join("front.png"))?;
        }
        if comm.rank() == 0 && comm.size() > 1 {
            super::balance::lb_png(&dir.join("lb.png"), "front", "step", &r.lb)
                .map_err(|e| GridError::Io { path: dir.join("lb.png"), msg: e.to_string() })?;
        }
    }
    Ok(o)
}
