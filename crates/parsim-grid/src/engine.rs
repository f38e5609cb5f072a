//! The time-stepping driver: exchange, boundary, compute, reduce, output.

use std::path::PathBuf;

use parsim_comm::{Comm, ReduceOp};
use parsim_core::{BlockSum, Digest, Digester, ExactSum, Phase, SetDigest};
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
    /// (64 MiB and up) and then by measurement (on some machines they are
    /// slower: steps 1–2 run with ordinary stores, 3–4 with streaming ones,
    /// and the faster is kept); `Some(_)` forces it. Results are identical
    /// either way.
    pub stream_stores: Option<bool>,
    /// Back the arrays with transparent huge pages (Linux `madvise`; fields
    /// of 4 MiB and up): fewer TLB misses (C codes gained 10–20 % in the
    /// review; parsim's gain was not measured on its own).
    pub huge_pages: bool,
    /// With `deep_halo = k > 1`, compute the k steps between two exchanges
    /// as one wavefront through the field (temporal blocking): step j + 1
    /// of a row follows step j of the rows just below it, so a row is read
    /// from memory once per k steps instead of once per step. Used where
    /// nothing needs the field between those steps (no reduction, output or
    /// checkpoint there; Neumann ghosts are refilled level by level); with several threads per
    /// rank they share each level of a chunk of waves. Results are
    /// identical either way.
    pub temporal_blocking: bool,
    /// Bytes of cache a wavefront's rows in flight (of both arrays) may
    /// take: the axis after the wave's is cut into tiles to fit (256 KiB by
    /// default, about a core's L2; results do not depend on it).
    pub wave_cache_bytes: usize,
}

impl GridSpec {
    /// A spec with the defaults: auto decomposition, periodic, overlap on,
    /// no deep halo, a reduction only after the last step, no output, one
    /// thread per rank, huge pages.
    pub fn new(size: Vec<usize>, steps: u64) -> Self {
        GridSpec {
            size,
            steps,
            decomposition: DecompKind::Auto,
            boundary: vec![Boundary::Periodic],
            overlap: true,
            deep_halo: 1,
            reduce_every: 0,
            output_every: 0,
            output_dir: None,
            png: false,
            threads_per_rank: 1,
            stream_stores: None,
            huge_pages: true,
            temporal_blocking: true,
            wave_cache_bytes: 256 << 10,
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
    /// Seconds this rank spent setting up (allocating and filling the
    /// field, planning the halo), before the first step.
    pub setup_s: f64,
    /// Seconds this rank spent in the steps (exchange, compute, output
    /// between steps), without the setup, the reductions and the final digest.
    pub steps_s: f64,
    /// Seconds this rank spent in the reductions (exact total and residual).
    pub reduce_s: f64,
    /// Whether this rank ended with streaming (non-temporal) stores.
    pub stream_stores: bool,
    /// Steps computed in wavefronts of `deep_halo` steps (temporal blocking).
    pub blocked_steps: u64,
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

/// Fields at least this large (bytes) are backed by huge pages when asked.
const HUGE_PAGES_FROM: usize = 4 << 20;
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
    /// Computes the cells of region `r` into `dst`. The work is split
    /// statically among the pool's threads: by contiguous planes when the
    /// region has enough of them, else by contiguous rows of each plane.
    /// Within a slab of planes, rows are walked one tile of rows at a time
    /// through all its planes, so that the three planes a 3-D row reads
    /// stay in cache (spatial blocking).
    fn compute(&self, src: &Field<T>, dst: &mut [T], r: &Region, place: &Place) {
        if r.is_empty() {
            return;
        }
        let ext = src.ext;
        let plane = ext[1] * ext[2];
        let streaming = self.streaming && r.hi[2] - r.lo[2] >= self.min_stream_row;
        let threads = self.pool.as_ref().map_or(1, |p| p.current_num_threads());
        let (nz, ny) = (r.hi[0] - r.lo[0], r.hi[1] - r.lo[1]);
        let tile = ((256 << 10) / (3 * ext[2] * std::mem::size_of::<T>()).max(1)).clamp(1, ny);
        let fence = || {
            #[cfg(target_arch = "x86_64")]
            if streaming {
                crate::stream_store::fence();
            }
        };
        // One row: `rows` holds the array's rows from (z_base, 0) on.
        let row = |rows: &mut [T], z_base: usize, z: usize, y: usize| {
            let at = (z - z_base) * plane + y * ext[2];
            let out = &mut rows[at + r.lo[2]..at + r.hi[2]];
            self.stencil.row_at(&src.data, ext, z, y, r.lo[2], out, place, streaming);
        };
        if nz >= 2 * threads || threads == 1 {
            // Slabs of planes, one per thread.
            let per = nz.div_ceil(threads);
            let slabs = &mut dst[r.lo[0] * plane..r.hi[0] * plane];
            let slab = |(t, part): (usize, &mut [T])| {
                let z0 = r.lo[0] + t * per;
                let z1 = (z0 + per).min(r.hi[0]);
                for y0 in (r.lo[1]..r.hi[1]).step_by(tile) {
                    for z in z0..z1 {
                        for y in y0..(y0 + tile).min(r.hi[1]) {
                            row(part, z0, z, y);
                        }
                    }
                }
                fence();
            };
            match &self.pool {
                Some(pool) => pool.install(|| slabs.par_chunks_mut(per * plane).enumerate().for_each(slab)),
                None => slab((0, slabs)),
            }
            return;
        }
        // Few planes (2-D, or a thin band): contiguous rows of each plane, one part per thread.
        let per = ny.div_ceil(threads);
        for z in r.lo[0]..r.hi[0] {
            let rows = &mut dst[z * plane + r.lo[1] * ext[2]..z * plane + r.hi[1] * ext[2]];
            let part = |(t, part): (usize, &mut [T])| {
                let y0 = r.lo[1] + t * per;
                for y in y0..(y0 + per).min(r.hi[1]) {
                    // `part` starts at row y0 of plane z.
                    let at = (y - y0) * ext[2];
                    let out = &mut part[at + r.lo[2]..at + r.hi[2]];
                    self.stencil.row_at(&src.data, ext, z, y, r.lo[2], out, place, streaming);
                }
                fence();
            };
            match &self.pool {
                Some(pool) => pool.install(|| rows.par_chunks_mut(per * ext[2]).enumerate().for_each(part)),
                None => part((0, rows)),
            }
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
    let t_setup = std::time::Instant::now();
    let r = stencil.radius();
    let d = spec.decompose(comm.size(), r)?;
    let k = spec.deep_halo;
    let h = r * k;
    let rank = comm.rank();
    let bounds = spec.boundaries()?;
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
    let new_field = || {
        let mut f = Field::<T>::new(&d, rank, h);
        if spec.huge_pages && std::mem::size_of_val(f.data.as_slice()) >= HUGE_PAGES_FROM {
            f.advise_huge_pages();
        }
        f
    };
    let mut cur = new_field();
    let mut reductions = Vec::new();
    let mut first = 0;
    let mut total0 = None;
    match ck.as_mut().and_then(|c| c.take_restart()) {
        Some(mut r) => {
            let got = crate::resilience::load(&mut r, &mut cur)?;
            (first, reductions, total0) = (got.step, got.reductions, got.total0);
        }
        None => cur.fill_owned_par(pool.as_ref(), init),
    }
    if guard.conserved && total0.is_none() {
        total0 = Some(total_of(comm, &cur, pool.as_ref())?);
    }
    let mut next = new_field();
    next.data.copy_from_slice(&cur.data);
    // A deep halo is recomputed as a box, so it needs corners even for star stencils.
    let reach = if k > 1 { Reach::Box } else { stencil.reach() };
    let mut plan = HaloPlan::new(&d, rank, &cur, h, reach, bounds)?;
    // Dirichlet ghost cells are constant: filled once in both arrays.
    plan.apply_boundary(&mut cur);
    plan.apply_boundary(&mut next);
    plan.fixed_edges_filled();
    let streaming = spec.stream_stores.unwrap_or(std::mem::size_of_val(cur.data.as_slice()) >= STREAM_BYTES);
    let min_stream_row = if spec.stream_stores == Some(true) { 1 } else { MIN_STREAM_ROW };
    let mut kernel = Kernel { stencil, pool, streaming, min_stream_row, _t: std::marker::PhantomData };
    // With the choice left open on a large field, both kinds of store are timed.
    let mut probe = (spec.stream_stores.is_none() && streaming).then_some([f64::INFINITY; 2]);
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
    let setup_s = t_setup.elapsed().as_secs_f64();
    clock.end_setup();
    let t_steps = std::time::Instant::now();
    let mut reduce_s = 0.0;
    // Temporal blocking: where it applies, the stream-store probe would time wavefronts.
    let blocking = spec.temporal_blocking && k > 1;
    // Ghost layers a wavefront refills level by level (Neumann edges).
    let mirrors = crate::wave::Mirrors::new(&cur, &plan.mirrored_edges(), r);
    if blocking {
        probe = None;
        kernel.streaming = false;
    }
    let needs_field = |done: u64| {
        (spec.reduce_every > 0 && done % spec.reduce_every == 0)
            || (spec.output_every > 0 && spec.output_dir.is_some() && done % spec.output_every == 0)
    };
    let mut step = first;
    let mut blocked_steps = 0;
    while step < spec.steps {
        let place = Place { origin, shape: d.shape(), step };
        let trial = step - first;
        let kk = k as u64;
        // A block's inner steps never show the field: no reduction or
        // output, no checkpoint every n steps and no injected bit flip
        // falls on them (a time-based checkpoint due inside waits for the
        // block's last step).
        let inner_free = |done: u64| !needs_field(done) && !ck.as_ref().is_some_and(|c| c.needs_state_at(done));
        if blocking && step % kk == 0 && step + kk <= spec.steps && (step + 1..step + kk).all(inner_free) {
            clock.in_phase(Phase::Comm, || plan.exchange_with(comm, &mut cur, kernel.pool.as_ref()))?;
            plan.apply_boundary(&mut cur);
            let levels: Vec<(Region, Place)> = (0..k)
                .map(|j| (grow((k - 1 - j) * r).intersect(&domain), Place { step: step + j as u64, ..place }))
                .collect();
            crate::wave::wavefront(
                kernel.stencil,
                kernel.pool.as_ref(),
                &mut cur,
                &mut next,
                &levels,
                &mirrors,
                spec.wave_cache_bytes,
            );
            // The last level is in `next` if k is odd, else in `cur`: leave
            // the level before it in `cur` and the last in `next`, as after
            // a single step.
            if k % 2 == 0 {
                std::mem::swap(&mut cur, &mut next);
            }
            for done in step + 1..step + kk {
                on_step(done);
                if let Some(ck) = ck.as_mut() {
                    // Fires what falls here (a kill, jitter); nothing here needs the field.
                    let act = ck.boundary(done).map_err(|e| GridError::Checkpoint(e.to_string()))?;
                    debug_assert!(!act.bitflip, "a bit flip inside a block");
                }
            }
            step += kk - 1;
            blocked_steps += kk;
        } else {
            if let Some(times) = probe {
                match trial {
                    0..=2 => kernel.streaming = false,
                    3 | 4 => kernel.streaming = true,
                    _ => {
                        kernel.streaming = times[1] < 0.97 * times[0];
                        probe = None;
                    }
                }
            }
            let t_step = std::time::Instant::now();
            let j = step as usize % k;
            let region = grow((k - 1 - j) * r).intersect(&domain);
            // A restart between two deep-halo exchanges refills the whole halo
            // first: the neighbours' cells at this step are exactly what the
            // redundant computation would have produced.
            let refill = step == first && first > 0 && j != 0;
            if j == 0 && spec.overlap {
                let pending = clock.in_phase(Phase::Comm, || plan.start_with(comm, &mut cur, kernel.pool.as_ref()))?;
                let inner = interior.intersect(&region);
                kernel.compute(&cur, &mut next.data, &inner, &place);
                clock.in_phase(Phase::Comm, || plan.finish(pending, &mut cur))?;
                plan.apply_boundary(&mut cur);
                for part in region.minus(&inner) {
                    kernel.compute(&cur, &mut next.data, &part, &place);
                }
            } else {
                if j == 0 || refill {
                    clock.in_phase(Phase::Comm, || plan.exchange_with(comm, &mut cur, kernel.pool.as_ref()))?;
                }
                plan.apply_boundary(&mut cur);
                kernel.compute(&cur, &mut next.data, &region, &place);
            }
            if let Some(times) = probe.as_mut().filter(|_| trial >= 1) {
                let t = &mut times[usize::from(kernel.streaming)];
                *t = t.min(t_step.elapsed().as_secs_f64());
            }
        }
        let done = step + 1;
        if (spec.reduce_every > 0 && done % spec.reduce_every == 0) || done == spec.steps {
            let t = std::time::Instant::now();
            reductions.push(reduce(comm, &cur, &next, done, kernel.pool.as_ref())?);
            reduce_s += t.elapsed().as_secs_f64();
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
                    total_of(comm, &cur, kernel.pool.as_ref())?
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
        step += 1;
    }
    let steps_s = t_steps.elapsed().as_secs_f64() - reduce_s;
    if spec.png {
        if let Some(dir) = &spec.output_dir {
            let _io = clock.enter(Phase::Io);
            files.extend(output::write_png(comm, &d, &cur, &dir.join("field.png"))?);
        }
    }
    let digest = digest(comm, &d, &cur, spec.steps)?;
    let loads = if rank == 0 { plan_loads::<T>(spec, d.ranks(), r, stencil.reach())?.1 } else { Vec::new() };
    Ok((
        GridReport {
            digest,
            reductions,
            decomposition: d,
            loads,
            files,
            setup_s,
            steps_s,
            reduce_s,
            stream_stores: kernel.streaming,
            blocked_steps,
        },
        cur,
    ))
}

fn total_of<C: Comm, T: Cell>(comm: &C, f: &Field<T>, pool: Option<&rayon::ThreadPool>) -> Result<f64, GridError> {
    let (total, _, _) = sums(f, None, pool);
    Ok(comm.all_reduce_exact(&total)?.value())
}

/// This rank's exact sum of the owned cells of `new`, of `(new − old)²` if
/// `old` is given, and whether a cell is not finite: rows shared among the
/// pool's threads, each adding into its own [`BlockSum`] (fixed-point
/// blocks in AVX2 where the CPU has it: about 3 ns a cell for both sums on
/// one core at 4096², against 5.5 through the scalar buckets), merged
/// exactly, so the sums do not depend on the threads.
fn sums<T: Cell>(
    new: &Field<T>,
    old: Option<&Field<T>>,
    pool: Option<&rayon::ThreadPool>,
) -> (ExactSum, ExactSum, bool) {
    let o = new.owned();
    let n = o.hi[2] - o.lo[2];
    let rows: Vec<usize> =
        (o.lo[0]..o.hi[0]).flat_map(|z| (o.lo[1]..o.hi[1]).map(move |y| new.index([z, y, o.lo[2]]))).collect();
    let add_rows = |acc: &mut (BlockSum, BlockSum, bool), rows: &[usize]| {
        // Converted and squared in pieces on the stack, summed a slice at a time.
        let (mut vals, mut sq) = ([0.0f64; 256], [0.0f64; 256]);
        for &i in rows {
            for at in (0..n).step_by(256) {
                let m = (n - at).min(256);
                let row = &new.data[i + at..i + at + m];
                for (v, c) in vals.iter_mut().zip(row) {
                    *v = c.to_f64();
                }
                acc.0.add_slice(&vals[..m]);
                if let Some(old) = old {
                    for ((d, &v), c) in sq.iter_mut().zip(&vals).zip(&old.data[i + at..i + at + m]) {
                        let w = v - c.to_f64();
                        *d = w * w;
                    }
                    acc.1.add_slice(&sq[..m]);
                }
            }
        }
        acc.2 = !acc.0.all_finite();
    };
    let fresh = || (BlockSum::new(), BlockSum::new(), false);
    let merge = |mut a: (BlockSum, BlockSum, bool), b: (BlockSum, BlockSum, bool)| {
        a.0.merge(&b.0);
        a.1.merge(&b.1);
        (a.0, a.1, a.2 | b.2)
    };
    let (t, s, bad) = match pool {
        Some(p) => p.install(|| {
            let piece = rows.len().div_ceil(4 * p.current_num_threads()).max(1);
            rows.par_chunks(piece)
                .fold(fresh, |mut acc, c| {
                    add_rows(&mut acc, c);
                    acc
                })
                .reduce(fresh, merge)
        }),
        None => {
            let mut acc = fresh();
            add_rows(&mut acc, &rows);
            acc
        }
    };
    (t.to_exact(), s.to_exact(), bad)
}

/// The total and the residual after `step`; a value that is not finite
/// (an overflow of the cell type, or of the sums) stops the run, naming the
/// step and the first rank where a cell went bad.
fn reduce<C: Comm, T: Cell>(
    comm: &C,
    old: &Field<T>,
    new: &Field<T>,
    step: u64,
    pool: Option<&rayon::ThreadPool>,
) -> Result<Reduction, GridError> {
    let (total, sq, bad) = sums(new, Some(old), pool);
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
