//! Stencils: the per-cell update, computed row by row.
//!
//! A [`Stencil`] computes one row segment of the next field from the current
//! one. The built-ins ([`Heat5`], [`Heat9`], [`Heat7`], [`Heat27`], [`Life`])
//! are written as loops over equal-length slices, which the compiler turns
//! into vector instructions; [`CellFn`] wraps a per-cell closure over a
//! [`Neighbourhood`] for a user's own update rule.

// The AVX2 builds of the row kernels are `unsafe fn`s (target features).
#[allow(unsafe_code)]
mod builtin;

use std::ops::{Add, Mul, Sub};

pub use builtin::{Heat27, Heat5, Heat7, Heat9, Life};

use crate::field::Cell;
use crate::halo::Reach;

/// A float cell type for arithmetic stencils (`f32`, `f64`).
pub trait Real: Cell + Add<Output = Self> + Sub<Output = Self> + Mul<Output = Self> {
    /// Streams one heat row, `m + a (Σ nbrs − c m)` with the neighbours
    /// summed in the given order, if this type has a streaming kernel;
    /// returns whether it did.
    #[doc(hidden)]
    fn stream_heat<const K: usize>(_mid: &[Self], _nbrs: [&[Self]; K], _a: Self, _c: f64, _out: &mut [Self]) -> bool {
        false
    }
}

impl Real for f32 {}

impl Real for f64 {
    #[cfg(target_arch = "x86_64")]
    fn stream_heat<const K: usize>(mid: &[f64], nbrs: [&[f64]; K], a: f64, c: f64, out: &mut [f64]) -> bool {
        crate::stream_store::heat(mid, nbrs, a, c, out);
        true
    }
}

/// The update rule of a grid.
///
/// `row` computes `out[i]` for the cells `x0 + i` of row `(z, y)` of a local
/// array `src` of extents `ext` (axis 2 fastest); every cell it reads is
/// within [`radius`](Self::radius) of the cell it writes, along the axes only
/// for [`Reach::Star`].
pub trait Stencil<T>: Sync {
    /// How far the update reads (1 to 4).
    fn radius(&self) -> usize;
    /// Whether it reads diagonal neighbours.
    fn reach(&self) -> Reach;
    /// Computes one row segment.
    fn row(&self, src: &[T], ext: [usize; 3], z: usize, y: usize, x0: usize, out: &mut [T]);

    /// Like [`row`](Self::row), with stores that bypass the caches, for
    /// fields far larger than them; must give bit-identical results. The
    /// engine uses it for large fields and issues the store fence after each
    /// batch of rows (x86 `sfence`). By default, `row`.
    fn row_streaming(&self, src: &[T], ext: [usize; 3], z: usize, y: usize, x0: usize, out: &mut [T]) {
        self.row(src, ext, z, y, x0, out)
    }

    /// What the engine calls: [`row`](Self::row) (or
    /// [`row_streaming`](Self::row_streaming)), told where the row is in the
    /// global grid and which step it computes. Stencils whose update depends
    /// on the place or the step ([`CellFn`]) override it.
    #[allow(clippy::too_many_arguments)]
    fn row_at(
        &self,
        src: &[T],
        ext: [usize; 3],
        z: usize,
        y: usize,
        x0: usize,
        out: &mut [T],
        place: &Place,
        streaming: bool,
    ) {
        let _ = place;
        if streaming {
            self.row_streaming(src, ext, z, y, x0, out)
        } else {
            self.row(src, ext, z, y, x0, out)
        }
    }
}

/// Where a block of cells sits in the global grid, and the step being
/// computed: what a stencil needs for sources, obstacles and coefficients
/// that vary in space or time.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Place {
    /// The global index (`[z, y, x]`) of local cell `[0, 0, 0]` (may be
    /// negative: the halo).
    pub origin: [i64; 3],
    /// The global grid's extents `[z, y, x]` (1 on missing axes).
    pub shape: [usize; 3],
    /// Steps completed before this one (0 for the first update).
    pub step: u64,
}

impl Place {
    /// A place at the origin of a grid of `shape`, before step 0 (for
    /// calling a stencil by hand).
    pub fn start(shape: [usize; 3]) -> Self {
        Place { origin: [0; 3], shape, step: 0 }
    }
}

/// The cells around one cell, for [`CellFn`], and where that cell is.
pub struct Neighbourhood<'a, T> {
    src: &'a [T],
    ext: [usize; 3],
    at: [usize; 3],
    place: Place,
}

impl<T: Copy> Neighbourhood<'_, T> {
    /// The cell at offset `(dz, dy, dx)` from the centre (within the radius).
    #[inline]
    pub fn get(&self, dz: i64, dy: i64, dx: i64) -> T {
        let z = (self.at[0] as i64 + dz) as usize;
        let y = (self.at[1] as i64 + dy) as usize;
        let x = (self.at[2] as i64 + dx) as usize;
        self.src[(z * self.ext[1] + y) * self.ext[2] + x]
    }

    /// The centre cell.
    #[inline]
    pub fn centre(&self) -> T {
        self.get(0, 0, 0)
    }

    /// The cell at offset `(dy, dx)` in a 2-D grid.
    #[inline]
    pub fn get2(&self, dy: i64, dx: i64) -> T {
        self.get(0, dy, dx)
    }

    /// The centre cell's global index `[z, y, x]` (0 on missing axes;
    /// wrapped on periodic axes, so it is always inside the grid there).
    #[inline]
    pub fn index(&self) -> [usize; 3] {
        let mut g = [0usize; 3];
        for a in 0..3 {
            let n = self.place.shape[a].max(1) as i64;
            g[a] = (self.place.origin[a] + self.at[a] as i64).rem_euclid(n) as usize;
        }
        g
    }

    /// The centre cell's global index `[y, x]` in a 2-D grid.
    #[inline]
    pub fn index2(&self) -> [usize; 2] {
        let g = self.index();
        [g[1], g[2]]
    }

    /// The global grid's extents `[z, y, x]`.
    pub fn shape(&self) -> [usize; 3] {
        self.place.shape
    }

    /// Steps completed before the one being computed (0 for the first).
    #[inline]
    pub fn step(&self) -> u64 {
        self.place.step
    }
}

/// A stencil from a per-cell closure.
///
/// ```
/// use parsim_grid::{CellFn, Neighbourhood, Reach};
///
/// // A 1-D three-point average, radius 1, along the axes only.
/// let avg = CellFn::new(1, Reach::Star, |n: &Neighbourhood<'_, f64>| {
///     (n.get(0, 0, -1) + n.centre() + n.get(0, 0, 1)) / 3.0
/// });
/// // 2-D diffusion with a heat source at cell (y, x) = (10, 20) for the first 100 steps.
/// let source = CellFn::new(1, Reach::Star, |n: &Neighbourhood<'_, f64>| {
///     let lap = n.get2(-1, 0) + n.get2(1, 0) + n.get2(0, -1) + n.get2(0, 1) - 4.0 * n.centre();
///     let q = if n.index2() == [10, 20] && n.step() < 100 { 1.0 } else { 0.0 };
///     n.centre() + 0.2 * lap + q
/// });
/// # let _ = (avg, source);
/// ```
pub struct CellFn<F> {
    radius: usize,
    reach: Reach,
    f: F,
}

impl<F> CellFn<F> {
    /// A stencil of `radius` and `reach` computing each cell with `f`.
    pub fn new(radius: usize, reach: Reach, f: F) -> Self {
        CellFn { radius, reach, f }
    }
}

impl<T: Copy, F: Fn(&Neighbourhood<'_, T>) -> T + Sync> Stencil<T> for CellFn<F> {
    fn radius(&self) -> usize {
        self.radius
    }
    fn reach(&self) -> Reach {
        self.reach
    }
    fn row(&self, src: &[T], ext: [usize; 3], z: usize, y: usize, x0: usize, out: &mut [T]) {
        self.row_at(src, ext, z, y, x0, out, &Place::start(ext), false)
    }
    fn row_at(
        &self,
        src: &[T],
        ext: [usize; 3],
        z: usize,
        y: usize,
        x0: usize,
        out: &mut [T],
        place: &Place,
        _streaming: bool,
    ) {
        for (i, o) in out.iter_mut().enumerate() {
            *o = (self.f)(&Neighbourhood { src, ext, at: [z, y, x0 + i], place: *place });
        }
    }
}
