//! The built-in stencils: Jacobi heat diffusion (2-D 5- and 9-point, 3-D 7-
//! and 27-point) and Conway's Game of Life.

use super::{Real, Stencil};
use crate::halo::Reach;

/// Whether this CPU runs the AVX2 builds of the row kernels. They are the
/// same loops compiled for wider vectors, with the same IEEE operations in
/// the same order (AVX2 does not bring fused multiply-add), so the results
/// are bit for bit those of the baseline build; `PARSIM_NO_AVX2=1` turns
/// them off (to compare).
#[cfg(target_arch = "x86_64")]
#[inline]
pub(crate) fn avx2() -> bool {
    parsim_core::avx2()
}

/// Defines a row kernel's body (`#[inline(always)]`) and its AVX2 build.
macro_rules! heat_kernel {
    ($(#[$doc:meta])* $body:ident, $twin:ident, |$a:ident, $s:ident, $ext:ident, $z:ident, $y:ident, $x0:ident, $out:ident| $code:block) => {
        $(#[$doc])*
        #[inline(always)]
        fn $body<T: Real>($a: T, $s: &[T], $ext: [usize; 3], $z: usize, $y: usize, $x0: usize, $out: &mut [T]) $code

        /// The same kernel compiled with AVX2.
        ///
        /// # Safety
        /// The CPU must support AVX2.
        #[cfg(target_arch = "x86_64")]
        #[target_feature(enable = "avx2")]
        unsafe fn $twin<T: Real>(a: T, s: &[T], ext: [usize; 3], z: usize, y: usize, x0: usize, out: &mut [T]) {
            $body(a, s, ext, z, y, x0, out)
        }
    };
}

heat_kernel!(
    /// One row of [`Heat5`].
    heat5_row, heat5_avx2, |a, s, ext, z, y, x0, out| {
        let n = out.len();
        let c = at(ext, z, y) + x0;
        let four = T::from_f64(4.0);
        let (mid, west, east) = (&s[c..c + n], &s[c - 1..c - 1 + n], &s[c + 1..c + 1 + n]);
        let (north, south) = (&s[c - ext[2]..c - ext[2] + n], &s[c + ext[2]..c + ext[2] + n]);
        let out = &mut out[..n];
        for i in 0..n {
            out[i] = mid[i] + a * (north[i] + south[i] + west[i] + east[i] - four * mid[i]);
        }
    }
);

heat_kernel!(
    /// One row of [`Heat7`].
    heat7_row, heat7_avx2, |a, s, ext, z, y, x0, out| {
        let n = out.len();
        let c = at(ext, z, y) + x0;
        let plane = ext[1] * ext[2];
        let six = T::from_f64(6.0);
        let (mid, west, east) = (&s[c..c + n], &s[c - 1..c - 1 + n], &s[c + 1..c + 1 + n]);
        let (north, south) = (&s[c - ext[2]..c - ext[2] + n], &s[c + ext[2]..c + ext[2] + n]);
        let (below, above) = (&s[c - plane..c - plane + n], &s[c + plane..c + plane + n]);
        let out = &mut out[..n];
        for i in 0..n {
            out[i] = mid[i] + a * (north[i] + south[i] + west[i] + east[i] + below[i] + above[i] - six * mid[i]);
        }
    }
);

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
        #[cfg(target_arch = "x86_64")]
        if avx2() {
            // SAFETY: the CPU has AVX2 (checked just above).
            return unsafe { heat5_avx2(self.alpha, s, ext, z, y, x0, out) };
        }
        heat5_row(self.alpha, s, ext, z, y, x0, out)
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
        #[cfg(target_arch = "x86_64")]
        if avx2() {
            // SAFETY: the CPU has AVX2 (checked just above).
            return unsafe { heat7_avx2(self.alpha, s, ext, z, y, x0, out) };
        }
        heat7_row(self.alpha, s, ext, z, y, x0, out)
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

/// A weighted sum over offsets, for the box stencils: `out = u + α Σ wᵢ u(x + δᵢ) / d`,
/// compiled for AVX2 when the CPU has it.
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
    #[cfg(target_arch = "x86_64")]
    if avx2() {
        // SAFETY: the CPU has AVX2 (checked just above).
        return unsafe { weighted_avx2(taps, div, alpha, s, ext, z, y, x0, out) };
    }
    weighted_body(taps, div, alpha, s, ext, z, y, x0, out)
}

/// [`weighted_body`] compiled with AVX2.
///
/// # Safety
/// The CPU must support AVX2.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
#[allow(clippy::too_many_arguments)]
unsafe fn weighted_avx2<T: Real>(
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
    weighted_body(taps, div, alpha, s, ext, z, y, x0, out)
}

/// The body of [`weighted_row`]. (The row position is passed as the stencil trait passes it.)
#[inline(always)]
#[allow(clippy::too_many_arguments)]
fn weighted_body<T: Real>(
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
        #[cfg(target_arch = "x86_64")]
        if avx2() {
            // SAFETY: the CPU has AVX2 (checked just above).
            return unsafe { life_avx2(s, ext, z, y, x0, out) };
        }
        life_row(s, ext, z, y, x0, out)
    }
}

/// [`life_row`] compiled with AVX2.
///
/// # Safety
/// The CPU must support AVX2.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
unsafe fn life_avx2(s: &[u8], ext: [usize; 3], z: usize, y: usize, x0: usize, out: &mut [u8]) {
    life_row(s, ext, z, y, x0, out)
}

/// One row of Life.
#[inline(always)]
fn life_row(s: &[u8], ext: [usize; 3], z: usize, y: usize, x0: usize, out: &mut [u8]) {
    {
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

#[cfg(all(test, target_arch = "x86_64"))]
mod tests {
    use super::*;

    /// A 3-D array of awkward values (signs, magnitudes, subnormals).
    fn field(ext: [usize; 3]) -> Vec<f64> {
        let n: usize = ext.iter().product();
        (0..n)
            .map(|i| {
                let k = (i * 2_654_435_761) % 1_000_003;
                let v = (k as f64 / 1_000_003.0 - 0.37) * 10f64.powi((k % 40) as i32 - 20);
                if k % 97 == 0 {
                    5e-324
                } else {
                    v
                }
            })
            .collect()
    }

    /// The AVX2 builds give the baseline build's bits, for every row
    /// length and offset (vector bodies, heads and tails).
    #[test]
    fn avx2_builds_match_the_baseline_bit_for_bit() {
        if !std::arch::is_x86_feature_detected!("avx2") {
            return;
        }
        let ext = [3, 3, 41];
        let s = field(ext);
        let s32: Vec<f32> = s.iter().map(|&v| v as f32).collect();
        let life: Vec<u8> = s.iter().map(|&v| u8::from(v > 0.0)).collect();
        let h27 = Heat27::new(0.07);
        for x0 in 1..4 {
            for n in 0..ext[2] - x0 - 1 {
                let (mut a, mut b) = (vec![0.0; n], vec![0.0; n]);
                heat5_row(0.21, &s, ext, 1, 1, x0, &mut a);
                // SAFETY: AVX2 is available (checked above).
                unsafe { heat5_avx2(0.21, &s, ext, 1, 1, x0, &mut b) };
                assert_eq!(
                    a.iter().map(|v| v.to_bits()).collect::<Vec<_>>(),
                    b.iter().map(|v| v.to_bits()).collect::<Vec<_>>()
                );
                heat7_row(0.13, &s, ext, 1, 1, x0, &mut a);
                // SAFETY: as above.
                unsafe { heat7_avx2(0.13, &s, ext, 1, 1, x0, &mut b) };
                assert_eq!(
                    a.iter().map(|v| v.to_bits()).collect::<Vec<_>>(),
                    b.iter().map(|v| v.to_bits()).collect::<Vec<_>>()
                );
                weighted_body(&h27.taps, 30.0, 0.07, &s, ext, 1, 1, x0, &mut a);
                // SAFETY: as above.
                unsafe { weighted_avx2(&h27.taps, 30.0, 0.07, &s, ext, 1, 1, x0, &mut b) };
                assert_eq!(
                    a.iter().map(|v| v.to_bits()).collect::<Vec<_>>(),
                    b.iter().map(|v| v.to_bits()).collect::<Vec<_>>()
                );
                let (mut a32, mut b32) = (vec![0.0f32; n], vec![0.0f32; n]);
                heat7_row(0.13f32, &s32, ext, 1, 1, x0, &mut a32);
                // SAFETY: as above.
                unsafe { heat7_avx2(0.13f32, &s32, ext, 1, 1, x0, &mut b32) };
                assert_eq!(
                    a32.iter().map(|v| v.to_bits()).collect::<Vec<_>>(),
                    b32.iter().map(|v| v.to_bits()).collect::<Vec<_>>()
                );
                let (mut la, mut lb) = (vec![0u8; n], vec![0u8; n]);
                life_row(&life, ext, 1, 1, x0, &mut la);
                // SAFETY: as above.
                unsafe { life_avx2(&life, ext, 1, 1, x0, &mut lb) };
                assert_eq!(la, lb);
            }
        }
    }
}
