//! A rank's piece of a field: its owned block plus a halo of width `h` on
//! every user axis, stored contiguously with axis 2 fastest.

use bytemuck::Pod;
use rayon::prelude::*;

use crate::decomp::{Block, Decomposition};
use crate::region::Region;

/// A value a grid cell can hold.
pub trait Cell: Pod + Send + Sync + Default + PartialEq + std::fmt::Debug {
    /// The bit pattern, for digests.
    fn bits(self) -> u64;
    /// As an `f64`, for sums, images and VTK.
    fn to_f64(self) -> f64;
    /// From an `f64` (initial conditions, boundary values).
    fn from_f64(x: f64) -> Self;
    /// The VTK type name.
    const VTK: &'static str;
}

impl Cell for f64 {
    fn bits(self) -> u64 {
        self.to_bits()
    }
    fn to_f64(self) -> f64 {
        self
    }
    fn from_f64(x: f64) -> Self {
        x
    }
    const VTK: &'static str = "Float64";
}

impl Cell for f32 {
    fn bits(self) -> u64 {
        u64::from(self.to_bits())
    }
    fn to_f64(self) -> f64 {
        f64::from(self)
    }
    fn from_f64(x: f64) -> Self {
        x as f32
    }
    const VTK: &'static str = "Float32";
}

impl Cell for u8 {
    fn bits(self) -> u64 {
        u64::from(self)
    }
    fn to_f64(self) -> f64 {
        f64::from(self)
    }
    fn from_f64(x: f64) -> Self {
        x.clamp(0.0, 255.0) as u8
    }
    const VTK: &'static str = "UInt8";
}

/// Several fields updated together, one value of each per cell — `u` and
/// `v` of a reaction–diffusion model as `[u, v]` — with no packing by hand:
/// a stencil over `[f64; N]` reads and writes all of them. Sums, images and
/// VTK files show the first field; the digest covers every one.
///
/// ```
/// use parsim_grid::{run, CellFn, GridSpec, Neighbourhood, Reach};
/// // Gray–Scott: u and v diffuse at different rates and react.
/// let (du, dv, f, k) = (0.16, 0.08, 0.035, 0.065);
/// let gs = CellFn::new(1, Reach::Star, move |n: &Neighbourhood<'_, [f64; 2]>| {
///     let lap = |i: usize| n.get2(-1, 0)[i] + n.get2(1, 0)[i] + n.get2(0, -1)[i] + n.get2(0, 1)[i] - 4.0 * n.centre()[i];
///     let [u, v] = n.centre();
///     let uvv = u * v * v;
///     [u + du * lap(0) - uvv + f * (1.0 - u), v + dv * lap(1) + uvv - (f + k) * v]
/// });
/// let seed = |g: [usize; 3]| if (28..36).contains(&g[1]) && (28..36).contains(&g[2]) { [0.5, 0.25] } else { [1.0, 0.0] };
/// let spec = GridSpec::new(vec![64, 64], 200);
/// let one = parsim_comm::launch(1, |c| run(&c, &spec, &gs, &seed, &mut |_| {}).map(|r| r.digest))?;
/// let four = parsim_comm::launch(4, |c| run(&c, &spec, &gs, &seed, &mut |_| {}).map(|r| r.digest))?;
/// assert_eq!(one[0], four[0]);
/// # Ok::<(), parsim_grid::GridError>(())
/// ```
impl<const N: usize> Cell for [f64; N]
where
    [f64; N]: Pod + Default,
{
    fn bits(self) -> u64 {
        fold_bits(self.iter().map(|x| x.to_bits()))
    }
    fn to_f64(self) -> f64 {
        self.first().copied().unwrap_or(0.0)
    }
    fn from_f64(x: f64) -> Self {
        [x; N]
    }
    const VTK: &'static str = "Float64";
}

/// Several `f32` fields per cell (see the `[f64; N]` cell).
impl<const N: usize> Cell for [f32; N]
where
    [f32; N]: Pod + Default,
{
    fn bits(self) -> u64 {
        fold_bits(self.iter().map(|x| u64::from(x.to_bits())))
    }
    fn to_f64(self) -> f64 {
        self.first().map_or(0.0, |&x| f64::from(x))
    }
    fn from_f64(x: f64) -> Self {
        [x as f32; N]
    }
    const VTK: &'static str = "Float32";
}

/// One word from several: every component changes it.
fn fold_bits(words: impl Iterator<Item = u64>) -> u64 {
    words.fold(0x243F_6A88_85A3_08D3, |h, w| (h ^ w).wrapping_mul(0x9E37_79B9_7F4A_7C15).rotate_left(31))
}

/// The local array of one rank.
#[derive(Clone, Debug, PartialEq)]
pub struct Field<T> {
    /// The owned block.
    pub block: Block,
    /// Halo width per internal axis (0 on axes the grid does not have).
    pub halo: [usize; 3],
    /// Array extent per axis: `len + 2 * halo`.
    pub ext: [usize; 3],
    /// The cells, axis 2 fastest.
    pub data: Vec<T>,
}

impl<T: Cell> Field<T> {
    /// A zeroed local array for `rank` with halo width `h` on the user's axes.
    pub fn new(d: &Decomposition, rank: usize, h: usize) -> Self {
        let block = d.block(rank);
        let mut halo = [0; 3];
        let mut ext = [0; 3];
        for a in 0..3 {
            halo[a] = if d.active(a) { h } else { 0 };
            ext[a] = block.len[a] + 2 * halo[a];
        }
        Field { block, halo, ext, data: vec![T::default(); ext.iter().product()] }
    }

    /// Flat index of local array position `p`.
    #[inline]
    pub fn index(&self, p: [usize; 3]) -> usize {
        (p[0] * self.ext[1] + p[1]) * self.ext[2] + p[2]
    }

    /// The owned cells, in local array coordinates.
    pub fn owned(&self) -> Region {
        let mut lo = [0; 3];
        let mut hi = [0; 3];
        for a in 0..3 {
            lo[a] = self.halo[a];
            hi[a] = self.halo[a] + self.block.len[a];
        }
        Region::new(lo, hi)
    }

    /// Global coordinates of local array position `p` (may be outside the
    /// domain, as `i64`, in the halo).
    pub fn global(&self, p: [usize; 3]) -> [i64; 3] {
        let mut g = [0; 3];
        for a in 0..3 {
            g[a] = self.block.start[a] as i64 + p[a] as i64 - self.halo[a] as i64;
        }
        g
    }

    /// Sets every owned cell from its global coordinates.
    pub fn fill_owned(&mut self, mut f: impl FnMut([usize; 3]) -> T) {
        let o = self.owned();
        for z in o.lo[0]..o.hi[0] {
            for y in o.lo[1]..o.hi[1] {
                for x in o.lo[2]..o.hi[2] {
                    let g = self.global([z, y, x]);
                    let i = self.index([z, y, x]);
                    self.data[i] = f([g[0] as usize, g[1] as usize, g[2] as usize]);
                }
            }
        }
    }

    /// [`fill_owned`](Self::fill_owned) with the rows shared among the
    /// threads of `pool` (in the calling thread without one).
    pub fn fill_owned_par(&mut self, pool: Option<&rayon::ThreadPool>, f: &(dyn Fn([usize; 3]) -> T + Sync)) {
        let (o, ext, block, halo) = (self.owned(), self.ext, self.block, self.halo);
        let row = |(i, out): (usize, &mut [T])| {
            let (z, y) = (i / ext[1], i % ext[1]);
            if (o.lo[0]..o.hi[0]).contains(&z) && (o.lo[1]..o.hi[1]).contains(&y) {
                let (gz, gy) = (block.start[0] + z - halo[0], block.start[1] + y - halo[1]);
                for x in o.lo[2]..o.hi[2] {
                    out[x] = f([gz, gy, block.start[2] + x - halo[2]]);
                }
            }
        };
        match pool {
            Some(p) => p.install(|| self.data.par_chunks_mut(ext[2]).enumerate().for_each(row)),
            None => self.data.chunks_mut(ext[2]).enumerate().for_each(row),
        }
    }

    /// Asks the kernel to back the array with transparent huge pages
    /// (Linux `madvise(MADV_HUGEPAGE)`; elsewhere nothing). Fewer TLB
    /// misses on large fields; it takes effect for pages not yet touched,
    /// so call it before filling the array.
    pub fn advise_huge_pages(&mut self) {
        advise_huge_pages(bytemuck::cast_slice_mut(&mut self.data));
    }

    /// Copies the cells of `r` into a contiguous buffer (row by row).
    pub fn pack(&self, r: &Region, out: &mut Vec<T>) {
        out.clear();
        out.reserve(r.cells());
        let w = r.hi[2] - r.lo[2];
        for z in r.lo[0]..r.hi[0] {
            for y in r.lo[1]..r.hi[1] {
                let i = self.index([z, y, r.lo[2]]);
                if w == 1 {
                    // A face across the fastest axis: one cell a row, no copy call.
                    out.push(self.data[i]);
                } else {
                    out.extend_from_slice(&self.data[i..i + w]);
                }
            }
        }
    }

    /// Copies the cells of region `from` onto region `to` (of the same
    /// shape) within this array: a periodic halo this rank gives itself.
    pub fn copy_region(&mut self, from: &Region, to: &Region) {
        let w = from.hi[2] - from.lo[2];
        for (z0, z1) in (from.lo[0]..from.hi[0]).zip(to.lo[0]..to.hi[0]) {
            for (y0, y1) in (from.lo[1]..from.hi[1]).zip(to.lo[1]..to.hi[1]) {
                let (i, j) = (self.index([z0, y0, from.lo[2]]), self.index([z1, y1, to.lo[2]]));
                if w == 1 {
                    self.data[j] = self.data[i];
                } else {
                    self.data.copy_within(i..i + w, j);
                }
            }
        }
    }

    /// [`copy_region`](Self::copy_region) with the rows shared among the
    /// threads of `pool` (where the regions are large and disjoint; else
    /// one thread): a 1-rank periodic exchange of a deep halo copies
    /// millions of cells that 2 ranks would copy one half each.
    #[allow(unsafe_code)]
    pub fn copy_region_par(&mut self, from: &Region, to: &Region, pool: Option<&rayon::ThreadPool>) {
        let threads = pool.map_or(1, |p| p.current_num_threads());
        let pool = pool.filter(|_| threads > 1 && from.cells() >= 1 << 14 && from.intersect(to).is_empty());
        let Some(pool) = pool else {
            return self.copy_region(from, to);
        };
        let (ny, w) = (from.hi[1] - from.lo[1], from.hi[2] - from.lo[2]);
        let rows = (from.hi[0] - from.lo[0]) * ny;
        let (at, len, p) = (
            |f: &Region, q: usize| [f.lo[0] + q / ny, f.lo[1] + q % ny, f.lo[2]],
            self.data.len(),
            crate::wave::Cells(self.data.as_mut_ptr()),
        );
        let ext = self.ext;
        let index = move |q: [usize; 3]| (q[0] * ext[1] + q[1]) * ext[2] + q[2];
        pool.broadcast(|ctx| {
            let t = ctx.index();
            for q in rows * t / threads..rows * (t + 1) / threads {
                let (i, j) = (index(at(from, q)), index(at(to, q)));
                assert!(i.max(j) + w <= len, "a copied row beyond the array");
                // SAFETY: both runs lie in the array (checked); `from` and
                // `to` are disjoint, so no thread writes what another reads,
                // and each row of `to` is written by one thread only.
                unsafe { std::ptr::copy_nonoverlapping(p.get().add(i), p.get().add(j), w) };
            }
        });
    }

    /// Writes a buffer made by [`pack`](Self::pack) (of a region of the same
    /// shape) into the cells of `r`.
    pub fn unpack(&mut self, r: &Region, buf: &[T]) {
        let w = r.hi[2] - r.lo[2];
        let mut at = 0;
        for z in r.lo[0]..r.hi[0] {
            for y in r.lo[1]..r.hi[1] {
                let i = self.index([z, y, r.lo[2]]);
                if w == 1 {
                    self.data[i] = buf[at];
                } else {
                    self.data[i..i + w].copy_from_slice(&buf[at..at + w]);
                }
                at += w;
            }
        }
    }

    /// Visits every owned cell with its global coordinates.
    pub fn for_owned(&self, mut f: impl FnMut([usize; 3], T)) {
        let o = self.owned();
        for z in o.lo[0]..o.hi[0] {
            for y in o.lo[1]..o.hi[1] {
                let row = self.index([z, y, 0]);
                for x in o.lo[2]..o.hi[2] {
                    let g = self.global([z, y, x]);
                    f([g[0] as usize, g[1] as usize, g[2] as usize], self.data[row + x]);
                }
            }
        }
    }
}

/// `madvise(MADV_HUGEPAGE)` over the 2 MiB-aligned part of `bytes`.
#[cfg(target_os = "linux")]
#[allow(unsafe_code)]
fn advise_huge_pages(bytes: &mut [u8]) {
    const HUGE: usize = 2 << 20;
    let start = bytes.as_mut_ptr() as usize;
    let (lo, hi) = (start.next_multiple_of(HUGE), (start + bytes.len()) / HUGE * HUGE);
    if hi > lo {
        // SAFETY: [lo, hi) lies inside `bytes`, which we borrow mutably;
        // MADV_HUGEPAGE is advice only: it changes how pages are backed,
        // never their contents, and an error (THP off) is harmless.
        unsafe { libc::madvise(lo as *mut libc::c_void, hi - lo, libc::MADV_HUGEPAGE) };
    }
}

#[cfg(not(target_os = "linux"))]
fn advise_huge_pages(_bytes: &mut [u8]) {}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::decomp::{DecompKind, Decomposition};

    /// The threaded copy writes exactly what the one-thread copy writes,
    /// along every axis, and falls back to it for small or overlapping regions.
    #[test]
    fn threaded_halo_copies_match_the_plain_copy() {
        let d = Decomposition::new(&[48, 96, 100], 1, &DecompKind::Auto, 4, [true; 3]).unwrap();
        let mut plain: Field<f64> = Field::new(&d, 0, 4);
        for (i, v) in plain.data.iter_mut().enumerate() {
            *v = i as f64 * 0.5;
        }
        let pool = rayon::ThreadPoolBuilder::new().num_threads(3).build().unwrap();
        let e = plain.ext;
        let mut pairs = Vec::new();
        for a in 0..3 {
            // The owned cells at the high face, onto the halo at the low face.
            let (mut from, mut to) = (
                Region::new([4; 3], [e[0] - 4, e[1] - 4, e[2] - 4]),
                Region::new([4; 3], [e[0] - 4, e[1] - 4, e[2] - 4]),
            );
            (from.lo[a], from.hi[a]) = (e[a] - 8, e[a] - 4);
            (to.lo[a], to.hi[a]) = (0, 4);
            assert!(from.cells() >= 1 << 14, "large enough to be shared");
            pairs.push((from, to));
        }
        // Overlapping regions, and one too small to share: the plain copy.
        pairs.push((Region::new([4, 4, 4], [12, 40, 50]), Region::new([8, 4, 4], [16, 40, 50])));
        pairs.push((Region::new([5, 5, 5], [6, 6, 9]), Region::new([1, 1, 1], [2, 2, 5])));
        let mut threaded = plain.clone();
        for (from, to) in &pairs {
            plain.copy_region(from, to);
            threaded.copy_region_par(from, to, Some(&pool));
            assert_eq!(plain.data, threaded.data, "{from:?} onto {to:?}");
        }
        // The copies changed the halo.
        assert_ne!(plain.data[plain.index([1, 20, 20])], 0.5 * plain.index([1, 20, 20]) as f64);
    }
}
