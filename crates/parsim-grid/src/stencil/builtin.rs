//! The built-in stencils: Jacobi heat diffusion (2-D 5- and 9-point, 3-D 7-
//! and 27-point) and Conway's Game of Life.

use super::{Real, Stencil};
use crate::halo::Reach;

#[inline]
fn at(ext: [usize; 3], z: usize, y: usize) -> usize {
    (z * ext[1] + y) * ext[2]
}

/// 2-D explicit heat diffusion, 5-point: `u + α (n + s + e + w − 4u)`.
#[derive(Clone, Copy, Debug)]
pub struct Heat5<T> {
    /// Diffusion number `α = κ Δt / Δx²` (stable for α ≤ 1/4).
    pub alpha: T,
}

impl<T: Real> Stencil<T> for Heat5<T> {
    fn radius(&self) -> usize {
        1
    }
    fn reach(&self) -> Reach {
        Reach::Star
    }
    fn row(&self, s: &[T], ext: [usize; 3], z: usize, y: usize, x0: usize, out: &mut [T]) {
        let n = out.len();
        let c = at(ext, z, y) + x0;
        let (a, four) = (self.alpha, T::from_f64(4.0));
        let (mid, west, east) = (&s[c..c + n], &s[c - 1..c - 1 + n], &s[c + 1..c + 1 + n]);
        let (north, south) = (&s[c - ext[2]..c - ext[2] + n], &s[c + ext[2]..c + ext[2] + n]);
        for (((((o, &m), &w), &e), &no), &so) in out.iter_mut().zip(mid).zip(west).zip(east).zip(north).zip(south) {
            *o = m + a * (no + so + w + e - four * m);
        }
    }

    fn row_streaming(&self, s: &[T], ext: [usize; 3], z: usize, y: usize, x0: usize, out: &mut [T]) {
        let n = out.len();
        let c = at(ext, z, y) + x0;
        let nbrs = [
            &s[c - ext[2]..c - ext[2] + n],
            &s[c + ext[2]..c + ext[2] + n],
            &s[c - 1..c - 1 + n],
            &s[c + 1..c + 1 + n],
        ];
        if !T::stream_heat(&s[c..c + n], nbrs, self.alpha, 4.0, out) {
            self.row(s, ext, z, y, x0, out);
        }
    }
}

/// 3-D explicit heat diffusion, 7-point: `u + α (Σ six neighbours − 6u)`.
#[derive(Clone, Copy, Debug)]
pub struct Heat7<T> {
    /// Diffusion number (stable for α ≤ 1/6).
    pub alpha: T,
}

impl<T: Real> Stencil<T> for Heat7<T> {
    fn radius(&self) -> usize {
        1
    }
    fn reach(&self) -> Reach {
        Reach::Star
    }
    fn row(&self, s: &[T], ext: [usize; 3], z: usize, y: usize, x0: usize, out: &mut [T]) {
        let n = out.len();
        let c = at(ext, z, y) + x0;
        let plane = ext[1] * ext[2];
        let (a, six) = (self.alpha, T::from_f64(6.0));
        let (mid, west, east) = (&s[c..c + n], &s[c - 1..c - 1 + n], &s[c + 1..c + 1 + n]);
        let (north, south) = (&s[c - ext[2]..c - ext[2] + n], &s[c + ext[2]..c + ext[2] + n]);
        let (below, above) = (&s[c - plane..c - plane + n], &s[c + plane..c + plane + n]);
        let it = out.iter_mut().zip(mid).zip(west).zip(east).zip(north).zip(south).zip(below).zip(above);
        for (((((((o, &m), &w), &e), &no), &so), &b), &up) in it {
            *o = m + a * (no + so + w + e + b + up - six * m);
        }
    }

    fn row_streaming(&self, s: &[T], ext: [usize; 3], z: usize, y: usize, x0: usize, out: &mut [T]) {
        let n = out.len();
        let c = at(ext, z, y) + x0;
        let plane = ext[1] * ext[2];
        let nbrs = [
            &s[c - ext[2]..c - ext[2] + n],
            &s[c + ext[2]..c + ext[2] + n],
            &s[c - 1..c - 1 + n],
            &s[c + 1..c + 1 + n],
            &s[c - plane..c - plane + n],
            &s[c + plane..c + plane + n],
        ];
        if !T::stream_heat(&s[c..c + n], nbrs, self.alpha, 6.0, out) {
            self.row(s, ext, z, y, x0, out);
        }
    }
}

/// A weighted sum over offsets, for the box stencils: `out = u + α Σ wᵢ u(x + δᵢ) / d`.
/// (The row position is passed as the stencil trait passes it.)
#[allow(clippy::too_many_arguments)]
fn weighted_row<T: Real>(
    taps: &[([i64; 3], f64)],
    div: f64,
    alpha: T,
    s: &[T],
    ext: [usize; 3],
    z: usize,
    y: usize,
    x0: usize,
    out: &mut [T],
) {
    let n = out.len();
    let c = (at(ext, z, y) + x0) as i64;
    let stride = [(ext[1] * ext[2]) as i64, ext[2] as i64, 1];
    for o in out.iter_mut() {
        *o = T::default();
    }
    for &(d, w) in taps {
        let base = (c + d[0] * stride[0] + d[1] * stride[1] + d[2]) as usize;
        let w = T::from_f64(w);
        for (o, &v) in out.iter_mut().zip(&s[base..base + n]) {
            *o = *o + w * v;
        }
    }
    let k = alpha * T::from_f64(1.0 / div);
    let mid = &s[c as usize..c as usize + n];
    for (o, &m) in out.iter_mut().zip(mid) {
        *o = m + k * *o;
    }
}

/// 2-D explicit heat diffusion with the isotropic 9-point Laplacian
/// `(4 Σ faces + Σ corners − 20u) / 6`.
#[derive(Clone, Debug)]
pub struct Heat9<T> {
    /// Diffusion number.
    pub alpha: T,
}

const TAPS9: [([i64; 3], f64); 9] = [
    ([0, -1, -1], 1.0),
    ([0, -1, 0], 4.0),
    ([0, -1, 1], 1.0),
    ([0, 0, -1], 4.0),
    ([0, 0, 0], -20.0),
    ([0, 0, 1], 4.0),
    ([0, 1, -1], 1.0),
    ([0, 1, 0], 4.0),
    ([0, 1, 1], 1.0),
];

impl<T: Real> Stencil<T> for Heat9<T> {
    fn radius(&self) -> usize {
        1
    }
    fn reach(&self) -> Reach {
        Reach::Box
    }
    fn row(&self, s: &[T], ext: [usize; 3], z: usize, y: usize, x0: usize, out: &mut [T]) {
        weighted_row(&TAPS9, 6.0, self.alpha, s, ext, z, y, x0, out);
    }
}

/// 3-D explicit heat diffusion with the 27-point Laplacian
/// `(14 Σ faces + 3 Σ edges + Σ corners − 128u) / 30`.
#[derive(Clone, Debug)]
pub struct Heat27<T> {
    /// Diffusion number.
    pub alpha: T,
    taps: Vec<([i64; 3], f64)>,
}

impl<T> Heat27<T> {
    /// The stencil with diffusion number `alpha`.
    pub fn new(alpha: T) -> Self {
        let mut taps = Vec::with_capacity(27);
        for dz in -1..=1i64 {
            for dy in -1..=1i64 {
                for dx in -1..=1i64 {
                    let w = match dz.abs() + dy.abs() + dx.abs() {
                        0 => -128.0,
                        1 => 14.0,
                        2 => 3.0,
                        _ => 1.0,
                    };
                    taps.push(([dz, dy, dx], w));
                }
            }
        }
        Heat27 { alpha, taps }
    }
}

impl<T: Real> Stencil<T> for Heat27<T> {
    fn radius(&self) -> usize {
        1
    }
    fn reach(&self) -> Reach {
        Reach::Box
    }
    fn row(&self, s: &[T], ext: [usize; 3], z: usize, y: usize, x0: usize, out: &mut [T]) {
        weighted_row(&self.taps, 30.0, self.alpha, s, ext, z, y, x0, out);
    }
}

/// Conway's Game of Life on `u8` cells (0 dead, 1 alive): born with 3
/// neighbours, survives with 2 or 3. Exact.
#[derive(Clone, Copy, Debug, Default)]
pub struct Life;

impl Stencil<u8> for Life {
    fn radius(&self) -> usize {
        1
    }
    fn reach(&self) -> Reach {
        Reach::Box
    }
    fn row(&self, s: &[u8], ext: [usize; 3], z: usize, y: usize, x0: usize, out: &mut [u8]) {
        let n = out.len();
        let c = at(ext, z, y) + x0;
        let (up, dn) = (c - ext[2], c + ext[2]);
        let row3 = |b: usize| (&s[b - 1..b - 1 + n], &s[b..b + n], &s[b + 1..b + 1 + n]);
        let (a0, a1, a2) = row3(up);
        let (m0, m1, m2) = row3(c);
        let (b0, b1, b2) = row3(dn);
        for i in 0..n {
            let count = a0[i] + a1[i] + a2[i] + m0[i] + m2[i] + b0[i] + b1[i] + b2[i];
            out[i] = u8::from(count == 3 || (count == 2 && m1[i] == 1));
        }
    }
}
