//! `model = "crowd"` and `model = "flock"`: agents in continuous space
//! (`parsim_abm::space`), configured by `[space]`, the rule's own table
//! (`[crowd]`, `[flock]`) and `[lb]`. Writes density snapshots with the
//! rank boundaries drawn over them (`NAME.png`, `snapshots/`), VTK point
//! sets for ParaView (`vtk/`, with `space.vtk = true`), `lb.png` (λ over
//! the run, rebalances marked) and the `lb` section of `summary.json`.

use std::path::Path;
use std::time::Instant;

use parsim::plot::Heatmap;
use parsim::{InputError, Scenario};
use parsim_abm::space::{self, vtk, Domain, Rule, SpaceConfig, View};
use parsim_abm::AbmError;
use parsim_comm::{Comm, ReduceOp};
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};

/// The `[space]` table.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct SpaceTable {
    /// 2 or 3.
    pub dim: usize,
    /// The box's extent per axis (m).
    pub size: Vec<f64>,
    /// Periodic (a torus) or walled.
    pub periodic: bool,
    /// The perception radius r (m).
    pub radius: f64,
    /// Chunks per axis (the unit of ownership and balancing).
    pub chunks: Vec<u32>,
    /// The number of agents.
    pub agents: u64,
    /// Steps to run.
    pub steps: u64,
    /// Steps between snapshots (0: only the final one).
    pub snapshot_every: u64,
    /// Write VTK point sets with each snapshot.
    pub vtk: bool,
}

impl Default for SpaceTable {
    fn default() -> Self {
        SpaceTable {
            dim: 2,
            size: vec![200.0, 200.0],
            periodic: false,
            radius: 1.0,
            chunks: vec![16, 16],
            agents: 20_000,
            steps: 200,
            snapshot_every: 0,
            vtk: false,
        }
    }
}

/// A space model's parameters: the box, the rule, the balancer.
#[derive(Clone, Debug)]
pub struct SpaceSetup<R> {
    /// `[space]`.
    pub space: SpaceTable,
    /// The rule's table.
    pub rule: R,
    /// `[lb]`.
    pub lb: parsim_lb::Config,
    domain: Domain,
}

fn axes3<T: Copy>(v: &[T], fill: T, dim: usize) -> Option<[T; 3]> {
    (v.len() == dim).then(|| [v[0], v[1], if dim == 3 { v[2] } else { fill }])
}

impl<R: Rule + Clone + Serialize + DeserializeOwned> SpaceSetup<R> {
    /// Reads `[space]`, `[NAME]` and `[lb]`, checked against each other.
    pub fn from_scenario(sc: &mut Scenario, name: &str) -> Result<Self, InputError> {
        let space: SpaceTable = sc.params("space")?;
        let rule: R = sc.params(name)?;
        let lb: parsim_lb::Config = sc.params("lb")?;
        let dim = space.dim;
        if dim != 2 && dim != 3 {
            return Err(sc.error_at("space", "dim", format!("[space] dim: expected 2 or 3, found {dim}")));
        }
        if name == "crowd" && dim != 2 {
            return Err(sc.error_at("space", "dim", "[space] dim: the crowd walks on a plane (dim = 2)"));
        }
        let size = axes3(&space.size, 1.0, dim)
            .ok_or_else(|| sc.error_at("space", "size", format!("[space] size: expected {dim} extents")))?;
        let chunks = axes3(&space.chunks, 1, dim)
            .ok_or_else(|| sc.error_at("space", "chunks", format!("[space] chunks: expected {dim} counts")))?;
        if !(1..=1 << 34).contains(&space.agents) {
            return Err(sc.error_at(
                "space",
                "agents",
                format!("[space] agents: expected 1..=2^34, found {}", space.agents),
            ));
        }
        let domain = Domain::new(dim, size, space.periodic, space.radius, chunks).map_err(|e| match e {
            AbmError::Config { key, msg } => {
                let k = key.trim_start_matches("space.");
                sc.error_at("space", k, format!("[space] {k}: {msg}"))
            }
            other => sc.error_at("space", "", other.to_string()),
        })?;
        // Agents (position, velocity, id and their copies while they move
        // between chunks: about 96 bytes each) and the cell lists: refused
        // before anything is allocated.
        let need = space.agents as f64 * 96.0 + domain.n_cells() as f64 * 16.0;
        if let Some(why) =
            parsim_core::mem::shortfall(need, &format!("{} agents and {} cells", space.agents, domain.n_cells()))
        {
            return Err(sc.error_at("space", "agents", format!("[space] agents: {why}")));
        }
        lb.check(domain.n_chunks()).map_err(|(k, m)| {
            let k = k.trim_start_matches("lb.").to_string();
            sc.error_at("lb", &k, format!("[lb] {k}: {m}"))
        })?;
        Ok(SpaceSetup { space, rule, lb, domain })
    }

    /// What `--dry-run` prints.
    pub fn describe(&self, name: &str, ranks: usize) -> String {
        let d = &self.domain;
        let [cx, cy, cz] = d.chunks();
        let [nx, ny, nz] = d.cells();
        format!(
            "model {name}: {} agents in a {}-D {} box {:?}, r = {}, {} steps\n\
             {} chunks ({cx}×{cy}×{cz}), {} cells ({nx}×{ny}×{nz}); {} chunks per rank on {ranks} rank(s)\n\
             balancing: {:?} every {} steps (when {:?}, threshold {}, measure {:?}, predict {:?})\n",
            self.space.agents,
            d.dim,
            if d.periodic { "periodic" } else { "walled" },
            &d.size[..d.dim],
            d.radius,
            self.space.steps,
            d.n_chunks(),
            d.n_cells(),
            d.n_chunks() / ranks.max(1),
            self.lb.strategy,
            self.lb.every,
            self.lb.when,
            self.lb.threshold,
            self.lb.measure,
            self.lb.predict,
        )
    }
}

/// Density per x-y bin (agents per m², summed over z), at most 250 bins a
/// side, on rank 0, with the rank boundaries (collective).
fn density_png<C: Comm, S>(comm: &C, v: &View<'_, S>, path: &Path, title: &str) -> Result<(), AbmError> {
    let d = v.domain;
    let [nx, ny, _] = d.cells();
    let (nx, ny) = (nx as usize, ny as usize);
    let bin = nx.max(ny).div_ceil(250).max(1);
    let (bx, by) = (nx.div_ceil(bin), ny.div_ceil(bin));
    let mut counts = vec![0.0f64; bx * by];
    for a in v.agents {
        let c = d.cell_of(&a.pos);
        counts[c[1] as usize / bin * bx + c[0] as usize / bin] += 1.0;
    }
    let Some(total) = comm.reduce(0, &counts, ReduceOp::Sum)? else { return Ok(()) };
    let side = d.cell_side();
    let area = side[0] * side[1] * (bin * bin) as f64;
    let values: Vec<f64> = total.iter().map(|c| c / area).collect();
    let hi = values.iter().copied().fold(0.0, f64::max);
    let slice = parsim_grid::Slice { width: bx, height: by, values, stride: bin, range: (0.0, hi) };
    // Rank boundaries between neighbouring cells of the z = 0 layer.
    let owner = |x: usize, y: usize| v.owner[d.chunk_of_cell([x as u32, y as u32, 0])];
    let mut lines = Vec::new();
    for y in 0..ny {
        for x in 0..nx {
            if x + 1 < nx && owner(x, y) != owner(x + 1, y) {
                lines.push([((x + 1) as f64, y as f64), ((x + 1) as f64, (y + 1) as f64)]);
            }
            if y + 1 < ny && owner(x, y) != owner(x, y + 1) {
                lines.push([(x as f64, (y + 1) as f64), ((x + 1) as f64, (y + 1) as f64)]);
            }
        }
    }
    let cell = format!("x (cells of {:.3} m)", side[0]);
    Heatmap::new(title, slice, "agents per m²")
        .axes(&cell, &format!("y (cells of {:.3} m)", side[1]))
        .lines(lines)
        .save(path)
        .map_err(|e| AbmError::Invariant(format!("{}: {e}", path.display())))
}

fn io_err(path: &Path, e: std::io::Error) -> AbmError {
    AbmError::Io { path: path.display().to_string(), cause: e }
}

/// A snapshot: density PNG (rank 0) and, if asked, each rank's VTK piece.
fn snapshot<C: Comm, S>(
    comm: &C,
    v: &View<'_, S>,
    out: &Path,
    name: &str,
    vtk_too: bool,
    last: bool,
) -> Result<(), AbmError> {
    let p = comm.size();
    let title = format!("{name} at step {}: agents per m², rank boundaries in red ({p} ranks)", v.step);
    let png = if last {
        out.join(format!("{name}.png"))
    } else {
        out.join("snapshots").join(format!("{name}_{:06}.png", v.step))
    };
    if let Some(dir) = png.parent() {
        std::fs::create_dir_all(dir).map_err(|e| io_err(dir, e))?;
    }
    density_png(comm, v, &png, &title)?;
    if vtk_too {
        let dir = out.join("vtk");
        std::fs::create_dir_all(&dir).map_err(|e| io_err(&dir, e))?;
        vtk::write_piece(&dir, name, v.step, comm.rank(), v.agents).map_err(|e| io_err(&dir, e))?;
        if comm.rank() == 0 {
            vtk::write_collection(&dir, name, v.step, p).map_err(|e| io_err(&dir, e))?;
        }
    }
    Ok(())
}

/// Runs one rank of a space model.
pub fn run<C: Comm, R: Rule + Clone>(
    comm: &C,
    name: &str,
    p: &SpaceSetup<R>,
    seed: u64,
    slow: Option<(usize, f64)>,
    out: Option<&Path>,
) -> Result<parsim::Outcome, AbmError> {
    let cfg = SpaceConfig {
        agents: p.space.agents,
        steps: p.space.steps,
        seed,
        lb: p.lb.clone(),
        slow,
        observe_every: if out.is_some() { p.space.snapshot_every } else { 0 },
    };
    let vtk_too = p.space.vtk;
    let mut observe = |v: &View<'_, R::State>| match out {
        Some(dir) => snapshot(comm, v, dir, name, vtk_too, v.step == cfg.steps),
        None => Ok(()),
    };
    let t = Instant::now();
    let r = space::run(comm, &p.domain, &p.rule, &cfg, &mut observe)?;
    let wall = t.elapsed().as_secs_f64();
    let st = &r.stats;
    let updates = st.agents as f64 * st.steps as f64;
    let mut o = parsim::Outcome::new()
        .digest(r.digest)
        .metric("agents", st.agents as f64)
        .metric("steps", st.steps as f64)
        .metric("agent_updates_per_s", updates / wall.max(1e-9))
        .metric("mean_neighbours", st.pairs as f64 / updates.max(1.0))
        .metric("efficiency", st.efficiency)
        .metric("ghost_updates", st.ghost_updates as f64)
        .metric("broadcast_updates", st.broadcast_updates as f64)
        .metric(
            "ghost_vs_broadcast",
            if st.broadcast_updates > 0 { st.ghost_updates as f64 / st.broadcast_updates as f64 } else { 0.0 },
        )
        .metric("ghost_bytes", st.ghost_bytes as f64)
        .metric("matching_s", st.match_s)
        .metric("moved_agents", st.moved as f64)
        .value("compute_s", json!(st.compute_s))
        .section("lb", serde_json::to_value(&r.lb).unwrap_or(Value::Null));
    o = super::balance::lines(
        o,
        &r.lb,
        "step",
        &format!(
            "mean efficiency {:.3}; updates {:.1} % of a broadcast",
            st.efficiency,
            100.0 * st.ghost_updates as f64 / st.broadcast_updates.max(1) as f64
        ),
    );
    if let (Some(dir), 0) = (out, comm.rank()) {
        if comm.size() > 1 {
            super::balance::lb_png(&dir.join("lb.png"), name, "step", &r.lb)
                .map_err(|e| AbmError::Invariant(e.to_string()))?;
        }
    }
    Ok(o)
}
