//! `model = "grid"`: stencil codes on structured grids (parsim-grid), from
//! the `[grid]` table of a scenario.

use std::path::Path;
use std::time::Instant;

use parsim_comm::{Comm, ReduceOp};
use parsim_core::rng::StreamKey;
use parsim_grid::{
    plan_loads, Boundary, Cell, CellFn, DecompKind, GridSpec, Heat27, Heat5, Heat7, Heat9, Life, Neighbourhood, Reach,
    Stencil,
};
use serde_json::json;
use toml::Value;

use super::{ModelOutput, RunContext};
use parsim::Progress;
use parsim::{InputError, Scenario};

/// The built-in update rules.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum StencilKind {
    /// 1-D 3-point heat.
    Heat3,
    /// 2-D 5-point heat.
    Heat5,
    /// 2-D 9-point heat.
    Heat9,
    /// 3-D 7-point heat.
    Heat7,
    /// 3-D 27-point heat.
    Heat27,
    /// Game of Life (2-D, u8).
    Life,
}

const STENCILS: [(&str, StencilKind, usize); 6] = [
    ("heat3", StencilKind::Heat3, 1),
    ("heat5", StencilKind::Heat5, 2),
    ("heat9", StencilKind::Heat9, 2),
    ("heat7", StencilKind::Heat7, 3),
    ("heat27", StencilKind::Heat27, 3),
    ("life", StencilKind::Life, 2),
];

/// Initial fields.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Init {
    /// 1 in a centred square (cube) an eighth of the grid wide, 0 elsewhere.
    Hotspot,
    /// Uniform in [0, 1) per cell, from the counter-based stream of (seed, cell).
    Random,
    /// One sine period along the fastest axis.
    Mode,
    /// The lowest Dirichlet eigenmode, Π sin(π (i + 1) / (n + 1)) over the
    /// axes: with zero boundaries every step multiplies it by one factor.
    Eigenmode,
    /// Life: a glider near the origin.
    Glider,
    /// Life: Gosper's glider gun near the origin.
    Gun,
}

/// The `[grid]` table, validated.
#[derive(Clone, Debug)]
pub struct GridConfig {
    /// Everything but the output directory (set when the run starts).
    pub spec: GridSpec,
    /// The update rule.
    pub stencil: StencilKind,
    /// `f32` cells instead of `f64` (heat only).
    pub single: bool,
    /// Diffusion number.
    pub alpha: f64,
    /// The initial field.
    pub init: Init,
}

fn boundary_of(s: &str, value: f64) -> Option<Boundary> {
    match s {
        "periodic" => Some(Boundary::Periodic),
        "dirichlet" => Some(Boundary::Dirichlet(value)),
        "neumann" => Some(Boundary::Neumann),
        _ => None,
    }
}

impl GridConfig {
    /// Reads and validates `[grid]`; `threads` is `[run] threads_per_rank`.
    pub fn from_scenario(sc: &mut Scenario, threads: usize) -> Result<Self, InputError> {
        let mut t = sc.section("grid", true)?;
        let size: Vec<usize> = t.int_list("size", None, 1..=3, 1..=1 << 31)?.into_iter().map(|n| n as usize).collect();
        let steps = t.int("steps", Some(100), 0..=1 << 40)?;
        let names: Vec<&str> = STENCILS.iter().map(|s| s.0).collect();
        let default = match size.len() {
            1 => "heat3",
            2 => "heat5",
            _ => "heat7",
        };
        let name = t.choice("stencil", Some(default), &names)?;
        let &(_, stencil, dims) = STENCILS.iter().find(|s| s.0 == name).expect("validated stencil");
        if dims != size.len() {
            return Err(
                t.error("stencil", format!("\"{name}\" is a {dims}-D stencil but size has {} axes", size.len()))
            );
        }
        let precision = t.raw("precision");
        let single = match &precision {
            None => false,
            Some(Value::String(p)) if p == "f64" => false,
            Some(Value::String(p)) if p == "f32" && stencil != StencilKind::Life => true,
            Some(Value::String(p)) if p == "f32" => {
                return Err(t.error("precision", "Game of Life cells are u8; precision applies to heat stencils"))
            }
            Some(other) => return Err(t.error("precision", format!("expected \"f64\" or \"f32\", found {other}"))),
        };
        let stable = match stencil {
            StencilKind::Heat3 => 0.5,
            StencilKind::Heat5 | StencilKind::Heat9 => 0.25,
            _ => 1.0 / 6.0,
        };
        // Life has no alpha: one given is accepted and said to be ignored,
        // not checked against a heat stencil's stability limit.
        let alpha = if stencil == StencilKind::Life {
            if t.float("alpha", 0.0, 0.0..=f64::MAX)? != 0.0 {
                tracing::warn!("[grid] alpha is ignored by the Game of Life");
            }
            0.0
        } else {
            t.float("alpha", 0.1f64.min(stable), 0.0..=stable)?
        };
        // Residuals square the change of a cell and sum it over every cell:
        // beyond ±1e100 those sums overflow f64 on any grid that fits in memory.
        let value = t.float("boundary_value", 0.0, -1e100..=1e100)?;
        let boundary = match t.raw("boundary") {
            None => vec![Boundary::Periodic],
            Some(Value::String(s)) => vec![boundary_of(&s, value).ok_or_else(|| {
                t.error("boundary", format!("expected \"periodic\", \"dirichlet\" or \"neumann\", found \"{s}\""))
            })?],
            Some(Value::Array(a)) if a.len() == size.len() => a
                .iter()
                .map(|v| v.as_str().and_then(|s| boundary_of(s, value)))
                .collect::<Option<Vec<_>>>()
                .ok_or_else(|| {
                    t.error("boundary", "expected one of \"periodic\", \"dirichlet\", \"neumann\" per axis")
                })?,
            Some(other) => {
                return Err(t.error(
                    "boundary",
                    format!("expected a condition or a list of {} conditions, found {other}", size.len()),
                ))
            }
        };
        let decomposition = match t.raw("decomposition") {
            None => DecompKind::Auto,
            Some(Value::String(s)) => DecompKind::parse(&s).ok_or_else(|| {
                t.error(
                    "decomposition",
                    format!("expected \"auto\", \"slabs\", \"pencils\", \"blocks\" or a process grid, found \"{s}\""),
                )
            })?,
            Some(Value::Array(a)) => DecompKind::Grid(
                a.iter()
                    .map(|v| v.as_integer().filter(|&i| i >= 1).map(|i| i as usize))
                    .collect::<Option<Vec<_>>>()
                    .ok_or_else(|| {
                        t.error("decomposition", "a process grid is a list of positive integers, one per axis")
                    })?,
            ),
            Some(other) => {
                return Err(t.error("decomposition", format!("expected a kind or a process grid, found {other}")))
            }
        };
        let overlap = t.boolean("overlap", true)?;
        let deep_halo = t.int("deep_halo", Some(1), 1..=16)? as usize;
        let reduce_every = t.int("reduce_every", Some(0), 0..=1 << 40)?;
        let output_every = t.int("output_every", Some(0), 0..=1 << 40)?;
        let png = t.boolean("png", false)?;
        let huge_pages = t.boolean("huge_pages", true)?;
        let temporal_blocking = t.boolean("temporal_blocking", true)?;
        let wave_cache_kib = t.int("wave_cache_kib", Some(256), 1..=1 << 20)? as usize;
        let threads_per_rank = t.int("threads_per_rank", Some(threads as u64), 1..=1024)? as usize;
        let inits: &[&str] = if stencil == StencilKind::Life {
            &["random", "glider", "gun"]
        } else {
            &["hotspot", "random", "mode", "eigenmode"]
        };
        let init = match t.choice("init", Some(inits[0]), inits)?.as_str() {
            "hotspot" => Init::Hotspot,
            "random" => Init::Random,
            "mode" => Init::Mode,
            "eigenmode" => Init::Eigenmode,
            "glider" => Init::Glider,
            _ => Init::Gun,
        };
        t.finish()?;
        let mut spec = GridSpec::new(size, steps);
        spec.decomposition = decomposition;
        spec.boundary = boundary;
        spec.overlap = overlap;
        spec.deep_halo = deep_halo;
        spec.reduce_every = reduce_every;
        spec.output_every = output_every;
        spec.png = png;
        spec.threads_per_rank = threads_per_rank;
        spec.huge_pages = huge_pages;
        spec.temporal_blocking = temporal_blocking;
        spec.wave_cache_bytes = wave_cache_kib << 10;
        Ok(GridConfig { spec, stencil, single, alpha, init })
    }

    /// Bytes of one cell and the cell type's name.
    pub fn cell_bytes(&self) -> (usize, &'static str) {
        match (self.stencil, self.single) {
            (StencilKind::Life, _) => (1, "u8"),
            (_, true) => (4, "f32"),
            _ => (8, "f64"),
        }
    }

    fn radius_reach(&self) -> (usize, Reach) {
        match self.stencil {
            StencilKind::Heat3 | StencilKind::Heat5 | StencilKind::Heat7 => (1, Reach::Star),
            _ => (1, Reach::Box),
        }
    }

    /// Checks that the grid can be cut for `ranks` (bad input otherwise).
    pub fn check(&self, sc: &Scenario, ranks: usize) -> Result<(), InputError> {
        let (r, _) = self.radius_reach();
        self.spec.decompose(ranks, r).map(|_| ()).map_err(|e| sc.error_at("grid", "size", format!("[grid] {e}")))
    }

    /// The decomposition table `--dry-run` prints.
    pub fn describe(&self, ranks: usize) -> Result<String, parsim_grid::GridError> {
        let (r, reach) = self.radius_reach();
        let (d, loads) = if self.single || self.stencil == StencilKind::Life {
            plan_loads::<f32>(&self.spec, ranks, r, reach)?
        } else {
            plan_loads::<f64>(&self.spec, ranks, r, reach)?
        };
        let mut s = format!("decomposition: {d}\n");
        s += &format!(
            "{:>6} {:>22} {:>12} {:>10} {:>10} {:>12} {:>8}\n",
            "rank", "block (start+len)", "owned", "halo", "neighbours", "bytes/exch", "surf/vol"
        );
        let bytes_per = if self.stencil == StencilKind::Life {
            1
        } else if self.single {
            4
        } else {
            8
        };
        for l in &loads {
            let b = l.block;
            let block: Vec<String> =
                (3 - self.spec.size.len()..3).map(|a| format!("{}+{}", b.start[a], b.len[a])).collect();
            s += &format!(
                "{:>6} {:>22} {:>12} {:>10} {:>10} {:>12} {:>8.4}\n",
                l.rank,
                block.join(","),
                l.owned,
                l.halo,
                l.neighbours,
                l.halo * bytes_per,
                l.surface_to_volume()
            );
        }
        Ok(s)
    }
}

fn life_init(init: Init, seed: u64) -> impl Fn([usize; 3]) -> u8 + Sync {
    use parsim_grid::patterns::{cells, GLIDER, GOSPER_GUN};
    let placed = |p: &[&str], at: usize| -> std::collections::HashSet<(usize, usize)> {
        cells(p).into_iter().map(|(r, c)| (r + at, c + at)).collect()
    };
    let (glider, gun) = (placed(&GLIDER, 1), placed(&GOSPER_GUN, 8));
    let key = StreamKey::new(seed).purpose("grid.init");
    move |g: [usize; 3]| -> u8 {
        let (y, x) = (g[1], g[2]);
        match init {
            Init::Glider => u8::from(glider.contains(&(y, x))),
            Init::Gun => u8::from(gun.contains(&(y, x))),
            _ => u8::from(key.with(y as u64).with(x as u64).stream().bernoulli(0.3)),
        }
    }
}

fn heat_init<T: Cell>(init: Init, seed: u64, shape: [usize; 3]) -> impl Fn([usize; 3]) -> T + Sync {
    move |g: [usize; 3]| -> T {
        let v = match init {
            Init::Random => StreamKey::new(seed)
                .purpose("grid.init")
                .with(g[0] as u64)
                .with(g[1] as u64)
                .with(g[2] as u64)
                .stream()
                .uniform(),
            Init::Mode => (2.0 * std::f64::consts::PI * g[2] as f64 / shape[2] as f64).sin(),
            Init::Eigenmode => (0..3)
                .filter(|&a| shape[a] > 1)
                .map(|a| (std::f64::consts::PI * (g[a] + 1) as f64 / (shape[a] + 1) as f64).sin())
                .product(),
            _ => {
                let inside = (0..3).all(|a| {
                    let (n, w) = (shape[a], (shape[a] / 8).max(1));
                    n == 1 || (n / 2 - w / 2..n / 2 - w / 2 + w).contains(&g[a])
                });
                f64::from(u8::from(inside))
            }
        };
        T::from_f64(v)
    }
}

/// The checkpointer a grid run uses, if any.
pub type Ck<'a, 'c, C> = Option<&'a mut parsim::ckpt::Checkpointer<'c, C>>;

#[allow(clippy::too_many_arguments)]
fn go<C: Comm, T: Cell, S: Stencil<T>>(
    comm: &C,
    cfg: &GridConfig,
    ctx: &RunContext,
    out: &Path,
    stencil: &S,
    init: &(dyn Fn([usize; 3]) -> T + Sync),
    ck: Ck<'_, '_, C>,
) -> Result<ModelOutput, parsim_grid::GridError> {
    let mut spec = cfg.spec.clone();
    spec.output_dir = Some(out.to_path_buf());
    if comm.rank() == 0 && ctx.progress {
        // Only the process grid is printed: no need to plan every rank's halo.
        let d = spec.decompose(comm.size(), cfg.radius_reach().0)?;
        tracing::info!("decomposition: {d}");
    }
    let mut progress = Progress::new("grid steps", spec.steps, comm.rank() != 0 || !ctx.progress);
    // The picture is drawn here, with a labelled colour bar, not by the engine.
    let png = std::mem::replace(&mut spec.png, false) && ctx.outputs;
    let t0 = Instant::now();
    // Heat with periodic boundaries on every axis conserves the total:
    // checked before every checkpoint, so a silent error is never saved.
    let periodic = spec.boundaries()?.iter().all(|b| *b == Boundary::Periodic);
    let guard = parsim_grid::Guard { conserved: periodic && cfg.stencil != StencilKind::Life };
    let (mut report, field) =
        parsim_grid::run_resilient(comm, &spec, stencil, init, &mut |s| progress.set(s), ck, guard)?;
    let secs = t0.elapsed().as_secs_f64();
    progress.finish();
    if png {
        let _io = comm.clock().enter(parsim_core::Phase::Io);
        if let Some(slice) = parsim_grid::gather_slice(comm, &report.decomposition, &field, 1024)? {
            let path = out.join("field.png");
            let (what, unit) = match cfg.stencil {
                StencilKind::Life => ("Game of Life", "alive (1) or dead (0)"),
                _ => ("heat", "temperature"),
            };
            let dims = spec.size.iter().map(|n| n.to_string()).collect::<Vec<_>>().join(" × ");
            let title = format!("{what} on a {dims} grid after {} steps", spec.steps);
            let title = if spec.size.len() == 3 { format!("{title} (middle slice)") } else { title };
            parsim::plot::Heatmap::new(&title, slice, unit)
                .save(&path)
                .map_err(|e| parsim_grid::GridError::Io { path: path.clone(), msg: e.to_string() })?;
            report.files.push(path);
        }
    }
    let cells: usize = spec.size.iter().product();
    // The step rate counts the steps only: not the setup, the final digest or the picture.
    let steps_s = comm.all_reduce(&[report.steps_s], ReduceOp::Max)?[0];
    let setup_s = comm.all_reduce(&[report.setup_s], ReduceOp::Max)?[0];
    let reduce_s = comm.all_reduce(&[report.reduce_s], ReduceOp::Max)?[0];
    // The state a rank holds: the current and the next array, owned cells plus halo.
    let held = (2 * field.data.len() * std::mem::size_of::<T>()) as u64;
    let (all_held, max_held) =
        (comm.all_reduce(&[held], ReduceOp::Sum)?[0], comm.all_reduce(&[held], ReduceOp::Max)?[0]);
    let last = report.reductions.last().copied();
    // Every rank's files (VTK pieces are written where their data is), by rank.
    let mine: Vec<String> = report.files.iter().map(|p| p.display().to_string()).collect();
    let files_by_rank: Vec<Vec<String>> = comm.all_gather_value(&mine)?;
    let files: Vec<&String> = files_by_rank.iter().flatten().collect();
    let reductions: Vec<serde_json::Value> = report
        .reductions
        .iter()
        .map(|r| json!({"step": r.step, "total_heat": r.total, "residual_l2": r.residual}))
        .collect();
    Ok(ModelOutput {
        digest: report.digest,
        metrics: json!({
            "size": spec.size,
            "steps": spec.steps,
            "stencil": format!("{:?}", cfg.stencil).to_lowercase(),
            "process_grid": report.decomposition.process_grid(),
            "cell_updates_per_s": cells as f64 * spec.steps as f64 / steps_s.max(1e-9),
            "steps_s": steps_s,
            "setup_s": setup_s,
            "reduce_s": reduce_s,
            "stream_stores": report.stream_stores,
            "blocked_steps": report.blocked_steps,
            "run_s": secs,
            "total": last.map(|r| r.total),
            "residual": last.map(|r| r.residual),
            "reductions": reductions,
            "files": files,
            "files_by_rank": files_by_rank,
            "bytes_per_cell": all_held as f64 / cells.max(1) as f64,
            "max_rank_state_bytes": max_held,
        }),
    })
}

/// Runs the grid on this rank.
pub fn run<C: Comm>(
    comm: &C,
    cfg: &GridConfig,
    ctx: &RunContext,
    out: &Path,
    ck: Ck<'_, '_, C>,
) -> Result<ModelOutput, parsim_grid::GridError> {
    let (a, seed, shape) = (cfg.alpha, ctx.seed, cfg.spec.decompose(comm.size(), 1)?.shape());
    macro_rules! heat {
        ($t:ty, $s:expr) => {
            go::<C, $t, _>(comm, cfg, ctx, out, &$s, &heat_init::<$t>(cfg.init, seed, shape), ck)
        };
    }
    let heat3 = |a: f64| {
        CellFn::new(1, Reach::Star, move |n: &Neighbourhood<'_, f64>| {
            n.centre() + a * (n.get(0, 0, -1) + n.get(0, 0, 1) - 2.0 * n.centre())
        })
    };
    let heat3_f32 = |a: f32| {
        CellFn::new(1, Reach::Star, move |n: &Neighbourhood<'_, f32>| {
            n.centre() + a * (n.get(0, 0, -1) + n.get(0, 0, 1) - 2.0 * n.centre())
        })
    };
    match (cfg.stencil, cfg.single) {
        (StencilKind::Life, _) => go::<C, u8, _>(comm, cfg, ctx, out, &Life, &life_init(cfg.init, seed), ck),
        (StencilKind::Heat3, false) => heat!(f64, heat3(a)),
        (StencilKind::Heat3, true) => heat!(f32, heat3_f32(a as f32)),
        (StencilKind::Heat5, false) => heat!(f64, Heat5 { alpha: a }),
        (StencilKind::Heat5, true) => heat!(f32, Heat5 { alpha: a as f32 }),
        (StencilKind::Heat9, false) => heat!(f64, Heat9 { alpha: a }),
        (StencilKind::Heat9, true) => heat!(f32, Heat9 { alpha: a as f32 }),
        (StencilKind::Heat7, false) => heat!(f64, Heat7 { alpha: a }),
        (StencilKind::Heat7, true) => heat!(f32, Heat7 { alpha: a as f32 }),
        (StencilKind::Heat27, false) => heat!(f64, Heat27::new(a)),
        (StencilKind::Heat27, true) => heat!(f32, Heat27::new(a as f32)),
    }
}
