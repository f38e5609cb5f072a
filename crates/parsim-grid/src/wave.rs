//! Temporal blocking: the `k` steps between two deep-halo exchanges as one
//! wavefront through the field, so that a row is read from memory once per
//! `k` steps instead of once per step.
//!
//! Level i of a block (step `first + i`) reads array `a` when i is even
//! (else `b`) and writes the other array over its region. The field is
//! walked in units along the wave axis (planes in 3-D, rows in 2-D): at
//! wave w, level i computes unit w − i·r (r the radius), in ascending order
//! of i. Every unit a level reads from the level below is then already
//! computed (it lies at most r units ahead), and a level overwrites the
//! unit two levels down only after the last read of it (the level in
//! between reads it at the same wave, earlier), so two arrays suffice and
//! every cell gets exactly the value the steps one by one would give.
//!
//! Beyond a Neumann edge the ghost layers mirror the cells inside, and the
//! steps one by one refill them before every step. Here each level refills
//! them as it goes ([`Mirrors`]): once a unit's cells are written, the r
//! ghost layers that mirror them are copied, so a ghost cell is written at
//! the wave its source is, and read and overwritten like a cell of that
//! unit.

use std::sync::atomic::{AtomicUsize, Ordering};

use crate::field::{Cell, Field};
use crate::region::Region;
use crate::stencil::{Place, Stencil};

/// Runs the levels of one block; see the module doc. With a pool of more
/// than one thread, [`split`] where the wave axis is tall enough for a
/// slab per thread, else [`threaded`]; with one thread, [`tiled`].
pub(crate) fn wavefront<T: Cell, S: Stencil<T>>(
    stencil: &S,
    pool: Option<&rayon::ThreadPool>,
    a: &mut Field<T>,
    b: &mut Field<T>,
    levels: &[(Region, Place)],
    mirrors: &Mirrors,
    cache_bytes: usize,
) {
    let Some(shape) = Shape::of(stencil, a.ext, levels) else {
        return;
    };
    let Some(pool) = pool.filter(|p| p.current_num_threads() > 1) else {
        return tiled(stencil, &shape, &mut a.data, &mut b.data, levels, mirrors, cache_bytes);
    };
    let threads = pool.current_num_threads();
    if let Some(cuts) = slab_cuts(&shape, levels, threads) {
        split(stencil, pool, &shape, a, b, levels, mirrors, cache_bytes, &cuts);
    } else if mirrors.parts_hold_sources(&shape, threads) {
        threaded(stencil, pool, &shape, a, b, levels, mirrors, cache_bytes);
    } else {
        tiled(stencil, &shape, &mut a.data, &mut b.data, levels, mirrors, cache_bytes);
    }
}

/// The Neumann edges of a rank's block, as array indices: beyond each,
/// `r` ghost layers (what a level reads) mirror the cells inside.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct Mirrors {
    /// Per axis: the first interior index, where the low edge mirrors.
    lo: [Option<usize>; 3],
    /// Per axis: one past the last interior index, where the high edge mirrors.
    hi: [Option<usize>; 3],
    r: usize,
}

impl Mirrors {
    /// The mirrored `edges` (axis, high side?) of `field`, for a stencil of radius `r`.
    pub fn new<T>(field: &Field<T>, edges: &[(usize, bool)], r: usize) -> Self {
        let mut m = Mirrors { r, ..Mirrors::default() };
        for &(a, high) in edges {
            let h = field.halo[a];
            debug_assert!(h >= r, "a halo narrower than the stencil");
            if high {
                m.hi[a] = Some(h + field.block.len[a]);
            } else {
                m.lo[a] = Some(h);
            }
        }
        m
    }

    /// The edges seen from units `s0..s1` of the wave axis `w`, numbered
    /// from `s0`: the low edge of that axis only if `first` (then `s0` is 0),
    /// its high edge only if `last`.
    fn slab(&self, w: usize, s0: usize, first: bool, last: bool) -> Mirrors {
        let mut m = *self;
        m.lo[w] = self.lo[w].filter(|_| first);
        m.hi[w] = self.hi[w].filter(|_| last).map(|e| e - s0);
        m
    }

    fn none(&self) -> bool {
        self.lo.iter().chain(&self.hi).all(Option::is_none)
    }

    /// With the cut axis split into `threads` parts: whether the parts at
    /// its mirrored edges hold the r cells their ghosts copy (else another
    /// thread could still be writing them).
    fn parts_hold_sources(&self, sh: &Shape, threads: usize) -> bool {
        let c = sh.across;
        if self.lo[c].is_none() && self.hi[c].is_none() {
            return true;
        }
        let span = sh.t_hi - sh.t_lo;
        let part = span.div_ceil(threads).max(1);
        let last_start = sh.t_lo + (span.saturating_sub(1) / part) * part;
        part.min(span) >= self.r && sh.t_hi - last_start >= self.r
    }

    /// After a level wrote unit `u` of its region `g` between `t0` and `t1`
    /// on the cut axis: copies the ghost layers that mirror those cells —
    /// along the third axis, then the cut axis, then the wave axis, each
    /// copy taking along the ghosts the one before filled, so that corners
    /// get what `apply_boundary` (one axis after another) gives them.
    ///
    /// # Safety
    /// `p` points to `len` live cells of the array the level writes, and no
    /// other thread reads or writes the cells copied from or to: those of
    /// unit `u` (and of its mirror units) between `t0` and `t1` on the cut
    /// axis and the ghosts beyond a mirrored edge of that range, whose
    /// sources lie in the range (see [`parts_hold_sources`](Self::parts_hold_sources)).
    #[allow(clippy::too_many_arguments)]
    unsafe fn refill<T: Copy>(&self, sh: &Shape, p: *mut T, len: usize, g: &Region, u: usize, t0: usize, t1: usize) {
        let (w, c, r) = (sh.wave, sh.across, self.r);
        let o = 3 - w - c;
        // SAFETY: the cells copied are this caller's (the contract above).
        let copy = |a: usize, from: usize, to: usize, lo: [usize; 3], hi: [usize; 3]| unsafe {
            copy_layer(p, len, sh.ext, a, from, to, lo, hi)
        };
        let (mut lo, mut hi) = ([0; 3], [0; 3]);
        (lo[w], hi[w]) = (u, u + 1);
        (lo[c], hi[c]) = (t0, t1);
        (lo[o], hi[o]) = (g.lo[o], g.hi[o]);
        for a in [o, c] {
            if let Some(h) = self.lo[a].filter(|&h| h == lo[a]) {
                for i in 0..r {
                    copy(a, h + i, h - 1 - i, lo, hi);
                }
                lo[a] -= r;
            }
            if let Some(e) = self.hi[a].filter(|&e| e == hi[a]) {
                for i in 0..r {
                    copy(a, e - 1 - i, e + i, lo, hi);
                }
                hi[a] += r;
            }
        }
        if let Some(h) = self.lo[w].filter(|&h| (h..h + r).contains(&u)) {
            copy(w, u, 2 * h - 1 - u, lo, hi);
        }
        if let Some(e) = self.hi[w].filter(|&e| (e.saturating_sub(r)..e).contains(&u)) {
            copy(w, u, 2 * e - 1 - u, lo, hi);
        }
    }
}

/// Copies layer `from` of axis `a` to layer `to`, over the box `lo..hi`
/// of the other two axes.
///
/// # Safety
/// `p` points to `len` cells; see [`Mirrors::refill`] for who may touch them.
#[allow(clippy::too_many_arguments)]
unsafe fn copy_layer<T: Copy>(
    p: *mut T,
    len: usize,
    ext: [usize; 3],
    a: usize,
    from: usize,
    to: usize,
    mut lo: [usize; 3],
    mut hi: [usize; 3],
) {
    let at = |z: usize, y: usize, x: usize| (z * ext[1] + y) * ext[2] + x;
    (lo[a], hi[a]) = (from, from + 1);
    let run = if a == 2 { 1 } else { hi[2] - lo[2] };
    for z in lo[0]..hi[0] {
        for y in lo[1]..hi[1] {
            let (s, d) = match a {
                0 => (at(z, y, lo[2]), at(to, y, lo[2])),
                1 => (at(z, y, lo[2]), at(z, to, lo[2])),
                _ => (at(z, y, from), at(z, y, to)),
            };
            assert!(s.max(d) + run <= len, "a mirrored run beyond the array");
            // SAFETY: both runs lie in the array (checked) and are disjoint
            // (different layers of axis `a`); the caller owns them.
            unsafe { std::ptr::copy_nonoverlapping(p.add(s), p.add(d), run) };
        }
    }
}

/// The axes and extents of a block's wavefront.
struct Shape {
    ext: [usize; 3],
    /// The wave axis (0: planes, 1: rows) and the next one, which is cut.
    wave: usize,
    across: usize,
    lag: usize,
    /// Waves `w_lo..w_end`, and the span of the cut axis over all levels.
    w_lo: usize,
    w_end: usize,
    t_lo: usize,
    t_hi: usize,
}

impl Shape {
    fn of<T, S: Stencil<T>>(stencil: &S, ext: [usize; 3], levels: &[(Region, Place)]) -> Option<Shape> {
        let live: Vec<&Region> = levels.iter().map(|(g, _)| g).filter(|g| !g.is_empty()).collect();
        if live.is_empty() {
            return None;
        }
        let (wave, across) = if live.iter().any(|g| g.hi[0] - g.lo[0] > 1) { (0, 1) } else { (1, 2) };
        let lo = |a: usize| live.iter().map(|g| g.lo[a]).min().unwrap_or(0);
        let hi = |a: usize| live.iter().map(|g| g.hi[a]).max().unwrap_or(0);
        let lag = stencil.radius().max(1);
        Some(Shape {
            ext,
            wave,
            across,
            lag,
            w_lo: lo(wave),
            w_end: hi(wave) + (levels.len() - 1) * lag,
            t_lo: lo(across),
            t_hi: hi(across),
        })
    }

    /// Cells of one unit of the cut axis (a row of a plane, or a cell).
    fn cell_run(&self) -> usize {
        if self.wave == 0 {
            self.ext[2]
        } else {
            1
        }
    }

    /// The unit level `i` computes at wave `w`, if it lies in its region.
    fn unit(&self, g: &Region, i: usize, w: usize) -> Option<usize> {
        w.checked_sub(i * self.lag).filter(|u| (g.lo[self.wave]..g.hi[self.wave]).contains(u))
    }

    /// The cells of unit `u` of region `g` between `t0` and `t1` on the cut
    /// axis, as (plane, row, columns) rows: `row(z, y, x0..x1)`.
    fn rows(&self, g: &Region, u: usize, t0: usize, t1: usize, mut row: impl FnMut(usize, usize, usize, usize)) {
        if self.wave == 0 {
            for y in t0..t1 {
                row(u, y, g.lo[2], g.hi[2]);
            }
        } else {
            for z in g.lo[0]..g.hi[0] {
                row(z, u, t0, t1);
            }
        }
    }
}

/// One thread: the cut axis is tiled, tiles taken one after the other, each
/// running its own wavefront, skewed by r per level: tile j covers
/// `[B_j − i·r, B_{j+1} − i·r)` at level i. A level then reads below its tile
/// only what earlier tiles finished, and above it only its own level below;
/// and a tile's level i + 1 overwrites nothing the next tile's level i
/// still reads. Tiles are sized so that both arrays' units in flight fit
/// `cache_bytes`, but at least 8·k·r wide: each tile rereads the k·r units
/// below it that the tile before it left in memory (512³ with 4-row tiles
/// ran at half the rate of 72-row ones).
fn tiled<T: Cell, S: Stencil<T>>(
    stencil: &S,
    sh: &Shape,
    a: &mut [T],
    b: &mut [T],
    levels: &[(Region, Place)],
    mirrors: &Mirrors,
    cache_bytes: usize,
) {
    let (n, lag, ext) = (levels.len(), sh.lag, sh.ext);
    let plane = ext[1] * ext[2];
    let in_flight = 2 * ((n + 2) * lag + 1);
    let tile = (cache_bytes / (in_flight * sh.cell_run() * std::mem::size_of::<T>())).max(8 * n * lag);
    // Boundaries B_1.. of the tiles (B_0 = −∞, the last = +∞); level i's
    // tiles end at t_hi + (n − 1)·r at the most.
    let end = sh.t_hi + (n - 1) * lag;
    let bounds: Vec<usize> = (1..).map(|j| sh.t_lo + j * tile).take_while(|&b| b < end).collect();
    for j in 0..=bounds.len() {
        for w in sh.w_lo..sh.w_end {
            for (i, (g, place)) in levels.iter().enumerate() {
                let Some(u) = sh.unit(g, i, w) else {
                    continue;
                };
                let (lo, hi) = (g.lo[sh.across], g.hi[sh.across]);
                let t0 = if j == 0 { lo } else { bounds[j - 1].saturating_sub(i * lag).max(lo) };
                let t1 = bounds.get(j).map_or(hi, |&bj| bj.saturating_sub(i * lag).min(hi));
                if t0 >= t1 {
                    continue;
                }
                let (src, dst) = if i % 2 == 0 { (&*a, &mut *b) } else { (&*b, &mut *a) };
                sh.rows(g, u, t0, t1, |z, y, x0, x1| {
                    let at = z * plane + y * ext[2];
                    stencil.row_at(src, ext, z, y, x0, &mut dst[at + x0..at + x1], place, false);
                });
                if !mirrors.none() {
                    // SAFETY: `dst` is borrowed mutably here, and one thread runs.
                    unsafe { mirrors.refill(sh, dst.as_mut_ptr(), dst.len(), g, u, t0, t1) };
                }
            }
        }
    }
}

/// A raw pointer to an array's cells, shared by the threads of a wavefront
/// or of a halo copy ([`Field::copy_region_par`]).
#[derive(Clone, Copy)]
pub(crate) struct Cells<T>(pub(crate) *mut T);

impl<T> Cells<T> {
    /// The pointer (a method, so that a closure captures the whole `Cells`).
    pub(crate) fn get(self) -> *mut T {
        self.0
    }
}
// SAFETY: the threads only form disjoint `&mut` runs of the written array
// and shared `&` views of the read one, never both of one array at once
// (see `threaded`), or copy between disjoint rows (`copy_region_par`).
unsafe impl<T: Send> Send for Cells<T> {}
unsafe impl<T: Send> Sync for Cells<T> {}

/// A barrier for the pool's threads that spins briefly, then yields (the
/// waits are microseconds; a thread that lost its core gets it back).
struct SpinBarrier {
    arrived: AtomicUsize,
    generation: AtomicUsize,
    threads: usize,
}

impl SpinBarrier {
    fn wait(&self) {
        let g = self.generation.load(Ordering::Acquire);
        if self.arrived.fetch_add(1, Ordering::AcqRel) + 1 == self.threads {
            self.arrived.store(0, Ordering::Relaxed);
            self.generation.fetch_add(1, Ordering::Release);
            return;
        }
        let mut spins = 0u32;
        while self.generation.load(Ordering::Acquire) == g {
            spins += 1;
            if spins < 2000 {
                std::hint::spin_loop();
            } else {
                std::thread::yield_now();
            }
        }
    }
}

/// Several threads: the cut axis is split into one contiguous part per
/// thread, and the waves are taken in chunks; for each chunk the levels go
/// in ascending order, every thread computing its part of the chunk's units
/// of that level, with a barrier after each level. A level of a chunk then
/// reads only units of the level below finished before the barrier (this
/// chunk's or earlier ones'), and every thread writes only its own part of
/// one array while all read the other, so the order of the steps one by one
/// is kept. A chunk holds as many waves as let a thread's part of both
/// arrays' units in flight fit `cache_bytes`, but enough for
/// `cache_bytes / 64` cells per thread and level (4,096 by default: a
/// barrier costs a fraction of a microsecond when every thread has a core).
#[allow(clippy::too_many_arguments)]
fn threaded<T: Cell, S: Stencil<T>>(
    stencil: &S,
    pool: &rayon::ThreadPool,
    sh: &Shape,
    a: &mut Field<T>,
    b: &mut Field<T>,
    levels: &[(Region, Place)],
    mirrors: &Mirrors,
    cache_bytes: usize,
) {
    let threads = pool.current_num_threads();
    let (n, lag, ext) = (levels.len(), sh.lag, sh.ext);
    let plane = ext[1] * ext[2];
    let part = (sh.t_hi - sh.t_lo).div_ceil(threads);
    let part_cells = (part * sh.cell_run() * if sh.wave == 0 { 1 } else { ext[0] }).max(1);
    let fit = (cache_bytes / (2 * std::mem::size_of::<T>() * part_cells)).saturating_sub((n + 2) * lag);
    let chunk = fit.max((cache_bytes / 64).div_ceil(part_cells)).max(lag);
    let len = a.data.len();
    assert_eq!(len, b.data.len(), "two arrays of one field");
    let (pa, pb) = (Cells(a.data.as_mut_ptr()), Cells(b.data.as_mut_ptr()));
    let barrier = SpinBarrier { arrived: AtomicUsize::new(0), generation: AtomicUsize::new(0), threads };
    pool.broadcast(|ctx| {
        let t = ctx.index();
        let (p0, p1) = (sh.t_lo + t * part, (sh.t_lo + (t + 1) * part).min(sh.t_hi));
        for c0 in (sh.w_lo..sh.w_end).step_by(chunk) {
            for (i, (g, place)) in levels.iter().enumerate() {
                let (from, to) = if i % 2 == 0 { (pa, pb) } else { (pb, pa) };
                // SAFETY: between two barriers every thread reads only the
                // array `from` points to and writes only cells of `to` in
                // its own part of the cut axis; the parts are disjoint and
                // both pointers cover `len` cells of live arrays borrowed
                // mutably for this whole call.
                let src: &[T] = unsafe { std::slice::from_raw_parts(from.0, len) };
                let (t0, t1) = (p0.max(g.lo[sh.across]), p1.min(g.hi[sh.across]));
                if t0 < t1 {
                    for w in c0..(c0 + chunk).min(sh.w_end) {
                        let Some(u) = sh.unit(g, i, w) else {
                            continue;
                        };
                        sh.rows(g, u, t0, t1, |z, y, x0, x1| {
                            let at = z * plane + y * ext[2] + x0;
                            assert!(at + (x1 - x0) <= len, "a row run beyond the array");
                            // SAFETY: as above; this run lies in this thread's part, inside the array.
                            let out = unsafe { std::slice::from_raw_parts_mut(to.0.add(at), x1 - x0) };
                            stencil.row_at(src, ext, z, y, x0, out, place, false);
                        });
                        if !mirrors.none() {
                            // SAFETY: the cells mirrored and their ghosts lie in
                            // this thread's part (whose edges hold their sources:
                            // `parts_hold_sources`) of the array written.
                            unsafe { mirrors.refill(sh, to.0, len, g, u, t0, t1) };
                        }
                    }
                }
                barrier.wait();
            }
        }
    });
}

/// Where [`split`] cuts the wave axis for `threads` slabs: at equal
/// distances over the units every level computes, if each slab is then at
/// least 4·(k + 1)·r units tall (k levels). The cuts then lie at least
/// (k + 1)·r inside every level's region and as far apart, which is what
/// `split`'s two phases need. A 2-D field's rows are contiguous only in a
/// single plane.
fn slab_cuts(sh: &Shape, levels: &[(Region, Place)], threads: usize) -> Option<Vec<usize>> {
    let w = sh.wave;
    if (w == 1 && sh.ext[0] != 1) || levels.iter().any(|(g, _)| g.is_empty()) {
        return None;
    }
    let lo = levels.iter().map(|(g, _)| g.lo[w]).max()?;
    let hi = levels.iter().map(|(g, _)| g.hi[w]).min()?;
    let span = hi.checked_sub(lo)?;
    let margin = (levels.len() + 1) * sh.lag;
    (span / threads >= 4 * margin).then(|| (1..threads).map(|t| lo + span * t / threads).collect())
}

/// Several threads, split tiling: the wave axis is cut into one slab per
/// thread (at `cuts`), and a block runs in two phases.
///
/// 1. Each thread runs [`tiled`] on its own slab, level i (0-based) shrunk
///    by (i + 1)·r at each cut: a trapezoid that reads and writes only the
///    slab's units, in arrays the thread holds alone (`split_at_mut`).
/// 2. After all are done, the triangles left at each cut `s` — level i
///    over `[s − (i + 1)·r, s + (i + 1)·r)` — run with every thread
///    ([`threaded`], or one thread where a Neumann edge's sources are too
///    thin for its parts). A level there reads the level below from its
///    own triangle and from the trapezoids beside it, which phase 1 left
///    in place: there, the level two above was written only further from
///    the cut.
///
/// A slab is then computed as a rank's would be (one barrier per block, a
/// thread's rows stay in its cache), where [`threaded`] meets at a barrier
/// for every level of every few waves; every cell still gets the value
/// of the steps one by one.
#[allow(clippy::too_many_arguments)]
fn split<T: Cell, S: Stencil<T>>(
    stencil: &S,
    pool: &rayon::ThreadPool,
    sh: &Shape,
    a: &mut Field<T>,
    b: &mut Field<T>,
    levels: &[(Region, Place)],
    mirrors: &Mirrors,
    cache_bytes: usize,
    cuts: &[usize],
) {
    let (w, lag, threads) = (sh.wave, sh.lag, cuts.len() + 1);
    let unit = if w == 0 { sh.ext[1] * sh.ext[2] } else { sh.ext[2] };
    let bounds: Vec<usize> = std::iter::once(0).chain(cuts.iter().copied()).chain([sh.ext[w]]).collect();
    // Each thread's slab of both arrays, taken by the thread of that index.
    let mut slabs = Vec::with_capacity(threads);
    let (mut ra, mut rb) = (&mut a.data[..], &mut b.data[..]);
    for t in 0..threads {
        let len = (bounds[t + 1] - bounds[t]) * unit;
        let (sa, rest_a) = std::mem::take(&mut ra).split_at_mut(len);
        let (sb, rest_b) = std::mem::take(&mut rb).split_at_mut(len);
        (ra, rb) = (rest_a, rest_b);
        slabs.push(std::sync::Mutex::new(Some((sa, sb))));
    }
    pool.broadcast(|ctx| {
        let t = ctx.index();
        let Some((sa, sb)) = slabs.get(t).and_then(|m| m.lock().ok()?.take()) else {
            return;
        };
        let (s0, s1) = (bounds[t], bounds[t + 1]);
        let mut ext = sh.ext;
        ext[w] = s1 - s0;
        let lv: Vec<(Region, Place)> = levels
            .iter()
            .enumerate()
            .map(|(i, (g, place))| {
                let (mut g, mut place) = (*g, *place);
                let d = (i + 1) * lag;
                if t > 0 {
                    g.lo[w] = g.lo[w].max(s0 + d);
                }
                if t + 1 < threads {
                    g.hi[w] = g.hi[w].min(s1 - d);
                }
                g.hi[w] = g.hi[w].max(g.lo[w]) - s0;
                g.lo[w] -= s0;
                place.origin[w] += s0 as i64;
                (g, place)
            })
            .collect();
        let m = mirrors.slab(w, s0, t == 0, t + 1 == threads);
        if let Some(shape) = Shape::of(stencil, ext, &lv) {
            tiled(stencil, &shape, sa, sb, &lv, &m, cache_bytes);
        }
    });
    for &s in cuts {
        let lv: Vec<(Region, Place)> = levels
            .iter()
            .enumerate()
            .map(|(i, (g, place))| {
                let mut g = *g;
                let d = (i + 1) * lag;
                (g.lo[w], g.hi[w]) = (g.lo[w].max(s - d), g.hi[w].min(s + d));
                (g, *place)
            })
            .collect();
        let Some(shape) = Shape::of(stencil, sh.ext, &lv) else {
            continue;
        };
        if mirrors.parts_hold_sources(&shape, threads) {
            threaded(stencil, pool, &shape, a, b, &lv, mirrors, cache_bytes);
        } else {
            tiled(stencil, &shape, &mut a.data, &mut b.data, &lv, mirrors, cache_bytes);
        }
    }
}
