//! The reference `parsim bench stencil` measures parsim against: the heat
//! kernels as a plain C program writes them, in Rust, outside the engine.
//!
//! One array per time level with a ghost ring of fixed zeros (Dirichlet),
//! the loops over rows (2-D) or planes and rows (3-D) split statically
//! between threads like an OpenMP `parallel for`, compiled for AVX2 when
//! the CPU has it (as `gcc -O3 -march=native` would be; no FMA, so the bits
//! equal parsim's), in two variants: ordinary stores and non-temporal
//! stores (`_mm256_stream_pd`, no write-allocate). The benchmark checks that
//! the reference and parsim end with bitwise the same total, so both solve
//! the same problem with the same arithmetic.

use rayon::prelude::*;

/// A heat problem on `n` interior cells per axis (2 or 3 axes).
pub struct Reference {
    /// Interior extents `[z, y, x]` (`z` = 1 in 2-D).
    n: [usize; 3],
    /// Array extents (interior + 2 ghosts on each used axis).
    e: [usize; 3],
    alpha: f64,
    cur: Vec<f64>,
    next: Vec<f64>,
    pool: rayon::ThreadPool,
    /// Write with non-temporal stores.
    pub nt: bool,
}

impl Reference {
    /// A problem of `size` (2 or 3 axes, slowest first) from `init`
    /// (global `[z, y, x]`), run by `threads` threads.
    pub fn new(size: &[usize], alpha: f64, threads: usize, init: impl Fn([usize; 3]) -> f64) -> anyhow::Result<Self> {
        let n = match size {
            [y, x] => [1, *y, *x],
            [z, y, x] => [*z, *y, *x],
            _ => anyhow::bail!("the reference runs 2-D and 3-D grids"),
        };
        let e = [if size.len() == 3 { n[0] + 2 } else { 1 }, n[1] + 2, n[2] + 2];
        let mut cur = vec![0.0; e.iter().product()];
        let dz = usize::from(size.len() == 3);
        for z in 0..n[0] {
            for y in 0..n[1] {
                for x in 0..n[2] {
                    cur[((z + dz) * e[1] + y + 1) * e[2] + x + 1] = init([z, y, x]);
                }
            }
        }
        let next = cur.clone();
        let pool = rayon::ThreadPoolBuilder::new().num_threads(threads).build()?;
        Ok(Reference { n, e, alpha, cur, next, pool, nt: false })
    }

    /// One time step.
    pub fn step(&mut self) {
        let (n, e, a, nt) = (self.n, self.e, self.alpha, self.nt);
        let three = e[0] > 1;
        let src = &self.cur;
        // Static schedule: the planes (3-D) or rows (2-D) in equal contiguous parts.
        let (units, unit_len) = if three { (n[0], e[1] * e[2]) } else { (n[1], e[2]) };
        let threads = self.pool.current_num_threads();
        let per = units.div_ceil(threads);
        let skip = unit_len; // the first ghost plane or row
        let body = &mut self.next[skip..skip + units * unit_len];
        self.pool.install(|| {
            body.par_chunks_mut(per * unit_len).enumerate().for_each(|(t, part)| {
                for (k, unit) in part.chunks_mut(unit_len).enumerate() {
                    let u = 1 + t * per + k; // array index along the split axis
                    if three {
                        for y in 1..=n[1] {
                            let c = (u * e[1] + y) * e[2] + 1;
                            let out = &mut unit[y * e[2] + 1..y * e[2] + 1 + n[2]];
                            let plane = e[1] * e[2];
                            let rows = [c - e[2], c + e[2], c - 1, c + 1, c - plane, c + plane];
                            row(src, c, rows, a, 6.0, out, nt);
                        }
                    } else {
                        let c = u * e[2] + 1;
                        row(src, c, [c - e[2], c + e[2], c - 1, c + 1], a, 4.0, &mut unit[1..1 + n[2]], nt);
                    }
                }
            });
        });
        #[cfg(target_arch = "x86_64")]
        if nt {
            // SAFETY: SSE is part of the x86-64 baseline. (Each rayon task
            // ends in a join, which orders the other threads' stores.)
            unsafe { std::arch::x86_64::_mm_sfence() };
        }
        std::mem::swap(&mut self.cur, &mut self.next);
    }

    /// The interior cells, for the exact total.
    pub fn interior(&self) -> impl Iterator<Item = f64> + '_ {
        let (n, e) = (self.n, self.e);
        let dz = usize::from(e[0] > 1);
        (0..n[0]).flat_map(move |z| {
            (0..n[1]).flat_map(move |y| {
                let i = ((z + dz) * e[1] + y + 1) * e[2] + 1;
                self.cur[i..i + n[2]].iter().copied()
            })
        })
    }
}

/// `out[i] = m + a (Σ neighbours − c m)` for the row at `c`, the
/// neighbours summed in the order given (as parsim's kernels sum them).
fn row<const K: usize>(s: &[f64], c: usize, nbrs: [usize; K], a: f64, k: f64, out: &mut [f64], nt: bool) {
    #[cfg(target_arch = "x86_64")]
    if std::arch::is_x86_feature_detected!("avx2") {
        // SAFETY: the CPU has AVX2 (checked just above).
        unsafe {
            if nt {
                row_nt_avx2(s, c, nbrs, a, k, out)
            } else {
                row_avx2(s, c, nbrs, a, k, out)
            }
        };
        return;
    }
    let _ = nt;
    row_plain(s, c, nbrs, a, k, out)
}

#[inline(always)]
fn row_plain<const K: usize>(s: &[f64], c: usize, nbrs: [usize; K], a: f64, k: f64, out: &mut [f64]) {
    let n = out.len();
    let mid = &s[c..c + n];
    let r: [&[f64]; K] = nbrs.map(|b| &s[b..b + n]);
    for i in 0..n {
        let mut sum = r[0][i];
        for q in &r[1..] {
            sum += q[i];
        }
        out[i] = mid[i] + a * (sum - k * mid[i]);
    }
}

/// [`row_plain`] compiled for AVX2.
///
/// # Safety
/// The CPU must support AVX2.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
unsafe fn row_avx2<const K: usize>(s: &[f64], c: usize, nbrs: [usize; K], a: f64, k: f64, out: &mut [f64]) {
    row_plain(s, c, nbrs, a, k, out)
}

/// The row with non-temporal stores, four cells at a time once `out` is 32-byte aligned.
///
/// # Safety
/// The CPU must support AVX2.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
unsafe fn row_nt_avx2<const K: usize>(s: &[f64], c: usize, nbrs: [usize; K], a: f64, k: f64, out: &mut [f64]) {
    use std::arch::x86_64::*;
    let n = out.len();
    let head = ((32 - out.as_ptr() as usize % 32) % 32 / 8).min(n);
    let body = head + (n - head) / 4 * 4;
    row_plain(s, c, nbrs, a, k, &mut out[..head]);
    assert!(c + n <= s.len() && nbrs.iter().all(|&b| b + n <= s.len()), "rows inside the array");
    let (va, vk) = (_mm256_set1_pd(a), _mm256_set1_pd(k));
    let mut i = head;
    while i < body {
        // SAFETY: i + 3 < n and every row starting at c or a neighbour index
        // has n cells inside `s` (asserted); out[i] is 32-byte aligned.
        unsafe {
            let p = s.as_ptr();
            let m = _mm256_loadu_pd(p.add(c + i));
            let mut sum = _mm256_loadu_pd(p.add(nbrs[0] + i));
            for &b in &nbrs[1..] {
                sum = _mm256_add_pd(sum, _mm256_loadu_pd(p.add(b + i)));
            }
            let r = _mm256_add_pd(m, _mm256_mul_pd(va, _mm256_sub_pd(sum, _mm256_mul_pd(vk, m))));
            _mm256_stream_pd(out.as_mut_ptr().add(i), r);
        }
        i += 4;
    }
    let tail = nbrs.map(|b| b + body);
    row_plain(s, c + body, tail, a, k, &mut out[body..]);
}

#[cfg(test)]
mod tests {
    use super::*;
    use parsim_grid::{Boundary, GridSpec, Heat5, Heat7};

    fn total(values: impl Iterator<Item = f64>) -> u64 {
        let mut s = parsim_core::BlockSum::new();
        values.for_each(|v| s.add(v));
        s.to_exact().value().to_bits()
    }

    /// The reference solves parsim's problem with parsim's arithmetic: the
    /// same final total, bit for bit, with either kind of store and thread count.
    #[test]
    fn the_reference_ends_where_parsim_ends() {
        let init = |g: [usize; 3]| ((g[2] * 7 + g[1] * 3 + g[0]) % 11) as f64 * 0.1;
        for size in [vec![37usize, 45], vec![13, 11, 17]] {
            let alpha = if size.len() == 2 { 0.2 } else { 0.1 };
            let mut spec = GridSpec::new(size.clone(), 9);
            spec.boundary = vec![Boundary::Dirichlet(0.0)];
            let want = parsim_comm::launch(2, |c| {
                let r = if size.len() == 2 {
                    parsim_grid::run(&c, &spec, &Heat5 { alpha }, &init, &mut |_| {})
                } else {
                    parsim_grid::run(&c, &spec, &Heat7 { alpha }, &init, &mut |_| {})
                };
                r.map(|r| r.reductions.last().expect("final").total)
            })
            .expect("parsim")[0];
            for (threads, nt) in [(1, false), (2, false), (1, true), (2, true)] {
                let mut r = Reference::new(&size, alpha, threads, init).expect("reference");
                r.nt = nt;
                (0..9).for_each(|_| r.step());
                assert_eq!(total(r.interior()), want.to_bits(), "{size:?} threads {threads} streaming {nt}");
            }
        }
    }
}
