//! The time-stepping driver: exchange, boundary, compute, reduce, output.

use std::path::PathBuf;

use parsim_comm::{Comm, ReduceOp};
use parsim_core::{Digest, Digester, ExactSum, Phase, SetDigest};
use rayon::prelude::*;

use crate::decomp::{DecompKind, Decomposition, RankLoad};
use crate::field::{Cell, Field};
use crate::halo::{Boundary, HaloPlan, Reach};
use crate::output;
use crate::region::Region;
use crate::stencil::{Place, Stencil};
use crate::GridError;

/// Everything a grid run needs besides the stencil and the initial field.
#[derive(Clone, Debug, PartialEq)]
pub struct GridSpec {
    /// Global size, slowest axis first (1 to 3 axes).
    pub size: Vec<usize>,
    /// Time steps.
    pub steps: u64,
    /// How to cut the grid.
    pub decomposition: DecompKind,
    /// Boundary condition per user axis (one entry applies to all).
    pub boundary: Vec<Boundary>,
    /// Overlap the halo exchange with the interior computation.
    pub overlap: bool,
    /// Exchange a halo `deep_halo` times the stencil radius every
    /// `deep_halo` steps (1: every step), recomputing the halo in between.
    pub deep_halo: usize,
    /// Total heat and residual every this many steps (0: only at the end).
    pub reduce_every: u64,
    /// Write VTK every this many steps (0: never).
    pub output_every: u64,
    /// Where VTK and PNG files go.
    pub output_dir: Option<PathBuf>,
    /// Write a PNG of the final field (2-D: the field; 3-D: the middle slice).
    pub png: bool,
    /// Threads computing each rank's rows (rayon).
    pub threads_per_rank: usize,
    /// Write with cache-bypassing stores: `None` decides by field size
    /// (64 MiB and up), `Some(_)` forces it. Results are identical either way.
    pub stream_stores: Option<bool>,
}

impl GridSpec {
    /// A spec with the defaults: auto decomposition, periodic, overlap on,
    /// no deep halo, reductions every 10 steps, no output, one thread per rank.
    pub fn new(size: Vec<usize>, steps: u64) -> Self {
        GridSpec {
            size,
            steps,
            decomposition: DecompKind::Auto,
            boundary: vec![Boundary::Periodic],
            overlap: true,
            deep_halo: 1,
            reduce_every: 10,
            output_every: 0,
            output_dir: None,
            png: false,
            threads_per_rank: 1,
            stream_stores: None,
        }
    }

    /// The boundary per internal axis.
    pub fn boundaries(&self) -> Result<[Boundary; 3], GridError> {
        let n = self.size.len();
        let mut b = [Boundary::Periodic; 3];
        match self.boundary.len() {
            1 => b[3 - n..].iter_mut().for_each(|x| *x = self.boundary[0]),
            k if k == n => b[3 - n..].copy_from_slice(&self.boundary),
            k => return Err(GridError::Config(format!("{k} boundary conditions for a {n}-D grid (give 1 or {n})"))),
        }
        Ok(b)
    }

    /// Checks the spec against a stencil and builds the decomposition.
    pub fn decompose(&self, ranks: usize, radius: usize) -> Result<Decomposition, GridError> {
        if !(1..=4).contains(&radius) {
            return Err(GridError::Config(format!("stencil radius {radius} is outside 1..=4")));
        }
        if self.deep_halo == 0 {
            return Err(GridError::Config("deep_halo must be at least 1".into()));
        }
        if self.threads_per_rank == 0 {
            return Err(GridError::Config("threads_per_rank must be at least 1".into()));
        }
        let b = self.boundaries()?;
        let periodic = b.map(|x| x == Boundary::Periodic);
        Decomposition::new(&self.size, ranks, &self.decomposition, radius * self.deep_halo, periodic)
    }
}

/// Total and residual at one step.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Reduction {
    /// Steps done.
    pub step: u64,
    /// Sum of all cells (exact, then rounded once).
    pub total: f64,
    /// `sqrt(Σ (u_new − u_old)²)` over all cells for that step.
    pub residual: f64,
}

/// What a run reports (equal on every rank, except `loads`: rank 0 only).
#[derive(Clone, Debug)]
pub struct GridReport {
    /// Digest of the final field: every cell keyed by its global index.
    pub digest: Digest,
    /// Reductions in step order.
    pub reductions: Vec<Reduction>,
    /// The decomposition.
    pub decomposition: Decomposition,
    /// Per-rank loads (on rank 0; empty elsewhere).
    pub loads: Vec<RankLoad>,
    /// Files written (on rank 0).
    pub files: Vec<PathBuf>,
}

/// The decomposition and what every rank would hold and exchange, before
/// any work (for `parsim run --dry-run`), for cells of `T`.
pub fn plan_loads<T: Cell>(
    spec: &GridSpec,
    ranks: usize,
    radius: usize,
    reach: Reach,
) -> Result<(Decomposition, Vec<RankLoad>), GridError> {
    let d = spec.decompose(ranks, radius)?;
    let h = radius * spec.deep_halo;
    let reach = if spec.deep_halo > 1 { Reach::Box } else { reach };
    let bounds = spec.boundaries()?;
    let loads = (0..d.ranks())
        .map(|r| {
            let f = Field::<T>::new(&d, r, h);
            HaloPlan::new(&d, r, &f, h, reach, bounds).map(|p| p.load(r, &f))
        })
        .collect::<Result<Vec<_>, _>>()?;
    Ok((d, loads))
}

/// Fields at least this large (bytes) are written with streaming stores.
const STREAM_BYTES: usize = 64 << 20;
/// Rows shorter than this are written with ordinary stores, unless streaming
/// is forced: each batch of streamed rows ends with a store fence, and on
/// short rows (3-D grids of 256 and 512 cells a row, measured) the plain
/// stores were as fast or faster.
const MIN_STREAM_ROW: usize = 1024;

struct Kernel<'a, T, S> {
    stencil: &'a S,
    pool: Option<rayon::ThreadPool>,
    /// Write rows with cache-bypassing stores (the field is far larger than the caches).
    streaming: bool,
    /// Shortest row written that way.
    min_stream_row: usize,
    _t: std::marker::PhantomData<T>,
}

impl<T: Cell, S: Stencil<T>> Kernel<'_, T, S> {
    fn compute(&self, src: &Field<T>, dst: &mut [T], r: &Region, place: &Place) {
        if r.is_empty() {
            return;
        }
        let ext = src.ext;
        let streaming = self.streaming && r.hi[2] - r.lo[2] >= self.min_stream_row;
        let row = |(i, out): (usize, &mut [T])| {
            let (z, y) = (i / ext[1], i % ext[1]);
            if (r.lo[0]..r.hi[0]).contains(&z) && (r.lo[1]..r.hi[1]).contains(&y) {
                let o = &mut out[r.lo[2]..r.hi[2]];
                self.stencil.row_at(&src.data, ext, z, y, r.lo[2], o, place, streaming);
            }
        };
        // Only the rows of the region: skip straight to them.
        let first = r.lo[0] * ext[1];
        let last = (r.hi[0] - 1) * ext[1] + ext[1];
        let rows = &mut dst[first * ext[2]..last * ext[2]];
        let fence = || {
            #[cfg(target_arch = "x86_64")]
            if streaming {
                crate::stream_store::fence();
            }
        };
        if r.hi[0] - r.lo[0] < 3 {
            // Batches of 16 rows: one task and one store fence each.
            let batch = |(b, chunk): (usize, &mut [T])| {
                for (k, o) in chunk.chunks_mut(ext[2]).enumerate() {
                    row((first + b * 16 + k, o));
                }
                fence();
            };
            match &self.pool {
                Some(pool) => pool.install(|| rows.par_chunks_mut(16 * ext[2]).enumerate().for_each(batch)),
                None => rows.chunks_mut(16 * ext[2]).enumerate().for_each(batch),
            }
            return;
        }
        // 3-D: walk the planes one tile of rows at a time, so that the three
        // planes a row reads stay in cache (spatial blocking).
        let tile = ((256 << 10) / (3 * ext[2] * std::mem::size_of::<T>()).max(1)).clamp(1, ext[1]);
        let mut tiles: Vec<Vec<(usize, &mut [T])>> = (0..ext[1].div_ceil(tile)).map(|_| Vec::new()).collect();
        for (i, o) in rows.chunks_mut(ext[2]).enumerate() {
            let y = (i + first) % ext[1];
            if (r.lo[1]..r.hi[1]).contains(&y) {
                tiles[y / tile].push((i + first, o));
            }
        }
        let run_tile = |t: Vec<(usize, &mut [T])>| {
            t.into_iter().for_each(&row);
            fence();
        };
        match &self.pool {
            Some(pool) => pool.install(|| tiles.into_par_iter().for_each(run_tile)),
            None => tiles.into_iter().for_each(run_tile),
        }
    }
}

/// Runs a stencil on this rank's part of the grid.
///
/// `init` gives the initial value of each cell from its global coordinates
/// (internal axes: `[z, y, x]`, with 0 on missing axes); `on_step` is called
/// after every step with the number of steps done (for progress).
pub fn run<C, T, S>(
    comm: &C,
    spec: &GridSpec,
    stencil: &S,
    init: &(dyn Fn([usize; 3]) -> T + Sync),
    on_step: &mut dyn FnMut(u64),
) -> Result<GridReport, GridError>
where
    C: Comm,
    T: Cell,
    S: Stencil<T>,
{
    run_with_field(comm, spec, stencil, init, on_step).map(|(r, _)| r)
}

/// [`run`], also returning this rank's final local field.
pub fn run_with_field<C, T, S>(
    comm: &C,
    spec: &GridSpec,
    stencil: &S,
    init: &(dyn Fn([usize; 3]) -> T + Sync),
    on_step: &mut dyn FnMut(u64),
) -> Result<(GridReport, Field<T>), GridError>
where
    C: Comm,
    T: Cell,
    S: Stencil<T>,
{
    run_resilient(comm, spec, stencil, init, on_step, None, Guard::default())
}

/// Checks against silent corruption of a grid run.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Guard {
    /// The stencil conserves the total (heat with periodic boundaries):
    /// check it at every reduction and before every checkpoint, relative
    /// tolerance 1e-9.
    pub conserved: bool,
}

/// [`run_with_field`] with checkpoints: `ck` decides at every step whether
/// to checkpoint (and fires injected faults); when it holds a checkpoint to
/// restart from, the run resumes there, on any process grid. With
/// `guard.conserved`, a total that drifts (a flipped bit) ends the run with
/// [`GridError::Invariant`] before the bad state reaches a checkpoint.
///
/// ```
/// use parsim_ckpt::{Checkpointer, Identity, Interval, Options};
/// use parsim_grid::{run_resilient, GridSpec, Guard, Heat5};
///
/// let dir = std::env::temp_dir().join(format!("parsim-grid-ckpt-doc-{}", std::process::id()));
/// let spec = GridSpec::new(vec![32, 32], 40);
/// let hot = |g: [usize; 3]| if g[1] == 16 && g[2] == 16 { 1.0 } else { 0.0 };
/// let id = Identity::new("grid", "step", "doc", 0);
/// let run = |ranks: usize, restart: bool| {
///     parsim_comm::launch(ranks, |c| {
///         let mut o = Options::new(&dir, Some(Interval::Every(10)));
///         o.restart = restart.then(|| dir.clone());
///         let mut ck = Checkpointer::new(&c, o, id.clone()).map_err(|e| parsim_grid::GridError::Checkpoint(e.to_string()))?;
///         let guard = Guard { conserved: true };
///         run_resilient(&c, &spec, &Heat5 { alpha: 0.2 }, &hot, &mut |_| {}, Some(&mut ck), guard).map(|r| r.0.digest)
///     })
/// };
/// let first = run(2, false)?;          // checkpoints at steps 10, 20, 30
/// let again = run(3, true)?;           // restarts at step 30 on 3 ranks
/// assert_eq!(first[0], again[0]);
/// # std::fs::remove_dir_all(&dir).ok();
/// # Ok::<(), parsim_comm::CommError>(())
/// ```
#[allow(clippy::too_many_arguments)]
pub fn run_resilient<C, T, S>(
    comm: &C,
    spec: &GridSpec,
    stencil: &S,
    init: &(dyn Fn([usize; 3]) -> T + Sync),
    on_step: &mut dyn FnMut(u64),
    mut ck: Option<&mut parsim_ckpt::Checkpointer<'_, C>>,
    guard: Guard,
) -> Result<(GridReport, Field<T>), GridError>
where
    C: Comm,
    T: Cell,
    S: Stencil<T>,
{
    let r = stencil.radius();
    let d = spec.decompose(comm.size(), r)?;
    let k = spec.deep_halo;
    let h = r * k;
    let rank = comm.rank();
    let bounds = spec.boundaries()?;
    let mut cur = Field::<T>::new(&d, rank, h);
    let mut reductions = Vec::new();
    let mut first = 0;
    let mut total0 = None;
    match ck.as_mut().and_then(|c| c.take_restart()) {
        Some(mut r) => {
            let got = crate::resilience::load(&mut r, &mut cur)?;
            (first, reductions, total0) = (got.step, got.reductions, got.total0);
        }
        None => cur.fill_owned(init),
    }
    if guard.conserved && total0.is_none() {
        total0 = Some(total_of(comm, &cur)?);
    }
    let mut next = cur.clone();
    // A deep halo is recomputed as a box, so it needs corners even for star stencils.
    let reach = if k > 1 { Reach::Box } else { stencil.reach() };
    let plan = HaloPlan::new(&d, rank, &cur, h, reach, bounds)?;
    let pool = if spec.threads_per_rank > 1 {
        Some(
            rayon::ThreadPoolBuilder::new()
                .num_threads(spec.threads_per_rank)
                .thread_name(move |i| format!("parsim-rank-{rank}-worker-{i}"))
                .build()
                .map_err(|e| GridError::Config(format!("cannot start {} threads: {e}", spec.threads_per_rank)))?,
        )
    } else {
        None
    };
    let streaming = spec.stream_stores.unwrap_or(std::mem::size_of_val(cur.data.as_slice()) >= STREAM_BYTES);
    let min_stream_row = if spec.stream_stores == Some(true) { 1 } else { MIN_STREAM_ROW };
    let kernel = Kernel { stencil, pool, streaming, min_stream_row, _t: std::marker::PhantomData };
    let owned = cur.owned();
    // Cells inside the physical domain (every halo cell on a periodic axis).
    let mut domain = Region::new([0; 3], cur.ext);
    for a in 0..3 {
        if d.active(a) && !d.periodic()[a] {
            let start = cur.block.start[a];
            domain.lo[a] = h.saturating_sub(start);
            domain.hi[a] = (h + d.shape()[a] - start).min(cur.ext[a]);
        }
    }
    let grow = |by: usize| {
        let mut g = owned;
        for a in (0..3).filter(|&a| d.active(a)) {
            g.lo[a] -= by;
            g.hi[a] += by;
        }
        g
    };
    // The cells that need nothing from other ranks: away from remote faces only.
    let mut interior = owned;
    for a in (0..3).filter(|&a| d.active(a)) {
        if plan.remote_face(a, false) {
            interior.lo[a] += r;
        }
        if plan.remote_face(a, true) {
            interior.hi[a] = interior.hi[a].saturating_sub(r);
        }
        interior.hi[a] = interior.hi[a].max(interior.lo[a]);
    }
    let mut files = Vec::new();
    let clock = comm.clock();
    let mut origin = [0i64; 3];
    for a in 0..3 {
        origin[a] = cur.block.start[a] as i64 - cur.halo[a] as i64;
    }
    for step in first..spec.steps {
        let place = Place { origin, shape: d.shape(), step };
        let j = step as usize % k;
        let region = grow((k - 1 - j) * r).intersect(&domain);
        // A restart between two deep-halo exchanges refills the whole halo
        // first: the neighbours' cells at this step are exactly what the
        // redundant computation would have produced.
        let refill = step == first && first > 0 && j != 0;
        if j == 0 && spec.overlap {
            let pending = clock.in_phase(Phase::Comm, || plan.start(comm, &mut cur))?;
            let inner = interior.intersect(&region);
            kernel.compute(&cur, &mut next.data, &inner, &place);
            clock.in_phase(Phase::Comm, || plan.finish(pending, &mut cur))?;
            plan.apply_boundary(&mut cur);
            for part in region.minus(&inner) {
                kernel.compute(&cur, &mut next.data, &part, &place);
            }
        } else {
            if j == 0 || refill {
                clock.in_phase(Phase::Comm, || plan.exchange(comm, &mut cur))?;
            }
            plan.apply_boundary(&mut cur);
            kernel.compute(&cur, &mut next.data, &region, &place);
        }
        let done = step + 1;
        if (spec.reduce_every > 0 && done % spec.reduce_every == 0) || done == spec.steps {
            reductions.push(reduce(comm, &cur, &next, done)?);
        }
        std::mem::swap(&mut cur, &mut next);
        if spec.output_every > 0 && done % spec.output_every == 0 {
            if let Some(dir) = &spec.output_dir {
                let _io = clock.enter(Phase::Io);
                files.extend(output::write_vtk(comm, &d, &cur, dir, done)?);
            }
        }
        on_step(done);
        if let Some(ck) = ck.as_mut() {
            let act = ck.boundary(done).map_err(|e| GridError::Checkpoint(e.to_string()))?;
            if act.bitflip {
                crate::resilience::bitflip(&mut cur);
            }
            let reduced = reductions.last().is_some_and(|r: &Reduction| r.step == done);
            if let Some(t0) = total0.filter(|_| reduced || act.checkpoint) {
                // Before a checkpoint the field itself is summed again: the
                // step's reduction was taken before anything could touch it.
                let total = if reduced && !act.checkpoint {
                    reductions.last().map_or(0.0, |r| r.total)
                } else {
                    total_of(comm, &cur)?
                };
                if (total - t0).abs() > 1e-9 * t0.abs().max(1.0) {
                    return Err(GridError::Invariant(format!(
                        "the total was {t0} at the start and is {total} after step {done} (heat is conserved \
                         with periodic boundaries): a silent error; the run rolls back to its last checkpoint"
                    )));
                }
            }
            if act.checkpoint && done < spec.steps {
                crate::resilience::save(ck, &cur, done, &reductions, total0, d.process_grid())?;
            }
        }
    }
    if spec.png {
        if let Some(dir) = &spec.output_dir {
            let _io = clock.enter(Phase::Io);
            files.extend(output::write_png(comm, &d, &cur, &dir.join("field.png"))?);
        }
    }
    let digest = digest(comm, &d, &cur, spec.steps)?;
    let loads = if rank == 0 { plan_loads::<T>(spec, d.ranks(), r, stencil.reach())?.1 } else { Vec::new() };
    Ok((GridReport { digest, reductions, decomposition: d, loads, files }, cur))
}

fn total_of<C: Comm, T: Cell>(comm: &C, f: &Field<T>) -> Result<f64, GridError> {
    let mut total = ExactSum::new();
    f.for_owned(|_, v| total.add(v.to_f64()));
    Ok(comm.all_reduce_exact(&total)?.value())
}

/// The total and the residual after `step`; a value that is not finite
/// (an overflow of the cell type, or of the sums) stops the run, naming the
/// step and the first rank where a cell went bad.
fn reduce<C: Comm, T: Cell>(comm: &C, old: &Field<T>, new: &Field<T>, step: u64) -> Result<Reduction, GridError> {
    let mut total = ExactSum::new();
    let mut sq = ExactSum::new();
    let mut bad = false;
    let o = new.owned();
    for z in o.lo[0]..o.hi[0] {
        for y in o.lo[1]..o.hi[1] {
            let i = new.index([z, y, o.lo[2]]);
            let n = o.hi[2] - o.lo[2];
            for (&a, &b) in new.data[i..i + n].iter().zip(&old.data[i..i + n]) {
                let (a, b) = (a.to_f64(), b.to_f64());
                bad |= !a.is_finite();
                total.add(a);
                sq.add((a - b) * (a - b));
            }
        }
    }
    let total = comm.all_reduce_exact(&total)?.value();
    let residual = comm.all_reduce_exact(&sq)?.value().sqrt();
    let first_bad = comm.all_reduce(&[if bad { comm.rank() as u64 } else { u64::MAX }], ReduceOp::Min)?[0];
    if first_bad != u64::MAX {
        return Err(GridError::NonFinite(format!(
            "a cell is not finite (inf or NaN) after step {step}, first on rank {first_bad}: the values overflowed \
             the cell type; check alpha, the boundary value and the initial field"
        )));
    }
    if !total.is_finite() || !residual.is_finite() {
        return Err(GridError::NonFinite(format!(
            "the total over all cells ({total}) or the residual ({residual}) is not finite after step {step}: \
             the cells are finite but their sum overflows f64 (values near {:e}); use smaller values",
            f64::MAX
        )));
    }
    Ok(Reduction { step, total, residual })
}

fn digest<C: Comm, T: Cell>(comm: &C, d: &Decomposition, f: &Field<T>, steps: u64) -> Result<Digest, GridError> {
    let shape = d.shape();
    let mut set = SetDigest::new();
    f.for_owned(|g, v| set.add(((g[0] * shape[1] + g[1]) * shape[2] + g[2]) as u64, v.bits()));
    let all = comm.all_merge_digest(&set)?;
    let mut dg = Digester::new();
    dg.write_str("grid");
    for n in shape {
        dg.write_u64(n as u64);
    }
    dg.write_u64(steps);
    dg.write_u64(all.parts[0]);
    dg.write_u64(all.parts[1]);
    Ok(dg.finish())
}
