//! Rows written with non-temporal (streaming) stores, for fields far larger
//! than the caches: the store goes to memory without first reading the line
//! into the cache (no write-allocate), so a Jacobi step moves 16 bytes per
//! cell instead of 24.
//!
//! SSE2 is part of the x86-64 baseline, so no runtime detection is needed;
//! other architectures use the plain rows. The arithmetic is the same IEEE
//! operations in the same order as the scalar kernels, so results are
//! bit-identical either way.

/// `out[i] = m[i] + a · (Σₖ nbrs[k][i] − c · m[i])` over equal-length rows
/// (the neighbours summed in the order given, as the scalar kernels do),
/// written with streaming stores: AVX2 when the CPU has it, SSE2 otherwise.
#[cfg(target_arch = "x86_64")]
pub(crate) fn heat<const K: usize>(mid: &[f64], nbrs: [&[f64]; K], a: f64, c: f64, out: &mut [f64]) {
    assert!(K >= 1 && mid.len() == out.len() && nbrs.iter().all(|r| r.len() == out.len()), "rows of equal length");
    if std::arch::is_x86_feature_detected!("avx2") {
        // SAFETY: the CPU supports AVX2 (checked just above).
        unsafe { heat_avx2(mid, nbrs, a, c, out) };
    } else {
        heat_sse2(mid, nbrs, a, c, out);
    }
}

/// One cell, exactly as the vector bodies compute it.
#[inline]
fn scalar<const K: usize>(mid: &[f64], nbrs: &[&[f64]; K], a: f64, c: f64, i: usize) -> f64 {
    let mut s = nbrs[0][i];
    for r in &nbrs[1..] {
        s += r[i];
    }
    mid[i] + a * (s - c * mid[i])
}

/// The AVX2 body of [`heat`]: four cells per instruction, 32-byte aligned streaming stores.
///
/// # Safety
/// The CPU must support AVX2, and all rows must have `out.len()` elements.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
unsafe fn heat_avx2<const K: usize>(mid: &[f64], nbrs: [&[f64]; K], a: f64, c: f64, out: &mut [f64]) {
    use std::arch::x86_64::*;
    let n = out.len();
    // Scalar cells until `out` is 32-byte aligned (f64 slices are 8-byte aligned).
    let head = ((32 - out.as_ptr() as usize % 32) % 32 / 8).min(n);
    for i in 0..head {
        out[i] = scalar(mid, &nbrs, a, c, i);
    }
    let body_end = head + (n - head) / 4 * 4;
    let (va, vc) = (_mm256_set1_pd(a), _mm256_set1_pd(c));
    let mut i = head;
    while i < body_end {
        // SAFETY: `i + 3 < n` and every row has `n` elements, so the loads stay
        // inside the slices; `out[i]` is 32-byte aligned and `out[i..i + 4]`
        // lies inside `out`, which we borrow mutably.
        unsafe {
            let ld = |r: &[f64]| _mm256_loadu_pd(r.as_ptr().add(i));
            let m = ld(mid);
            let mut s = ld(nbrs[0]);
            for r in &nbrs[1..] {
                s = _mm256_add_pd(s, ld(r));
            }
            let r = _mm256_add_pd(m, _mm256_mul_pd(va, _mm256_sub_pd(s, _mm256_mul_pd(vc, m))));
            _mm256_stream_pd(out.as_mut_ptr().add(i), r);
        }
        i += 4;
    }
    for i in body_end..n {
        out[i] = scalar(mid, &nbrs, a, c, i);
    }
}

/// The SSE2 body of [`heat`] (SSE2 is part of the x86-64 baseline).
#[cfg(target_arch = "x86_64")]
fn heat_sse2<const K: usize>(mid: &[f64], nbrs: [&[f64]; K], a: f64, c: f64, out: &mut [f64]) {
    use std::arch::x86_64::*;
    let n = out.len();
    let head = ((out.as_ptr() as usize % 16 != 0) as usize).min(n);
    for i in 0..head {
        out[i] = scalar(mid, &nbrs, a, c, i);
    }
    let body_end = head + (n - head) / 2 * 2;
    let mut i = head;
    while i < body_end {
        // SAFETY: SSE2 is part of the x86-64 baseline; `i + 1 < n` and every
        // row has `n` elements, so the loads stay inside the slices; `out[i]`
        // is 16-byte aligned and `out[i..i + 2]` lies inside `out`.
        unsafe {
            let ld = |r: &[f64]| _mm_loadu_pd(r.as_ptr().add(i));
            let m = ld(mid);
            let mut s = ld(nbrs[0]);
            for r in &nbrs[1..] {
                s = _mm_add_pd(s, ld(r));
            }
            let r = _mm_add_pd(m, _mm_mul_pd(_mm_set1_pd(a), _mm_sub_pd(s, _mm_mul_pd(_mm_set1_pd(c), m))));
            _mm_stream_pd(out.as_mut_ptr().add(i), r);
        }
        i += 2;
    }
    for i in body_end..n {
        out[i] = scalar(mid, &nbrs, a, c, i);
    }
}

/// Makes this thread's streaming stores visible to other threads. They are
/// weakly ordered: the engine calls this after each batch of streamed rows,
/// before the thread reports the batch done (rayon's join, a message).
#[cfg(target_arch = "x86_64")]
pub(crate) fn fence() {
    // SAFETY: SSE is part of the x86-64 baseline.
    unsafe { std::arch::x86_64::_mm_sfence() };
}

#[cfg(all(test, target_arch = "x86_64"))]
mod tests {
    use super::*;

    fn rows(n: usize, k: usize) -> Vec<Vec<f64>> {
        (0..k).map(|r| (0..n).map(|i| ((i * 7 + r * 13) % 17) as f64 * 0.37 - 2.0).collect()).collect()
    }

    /// Both vector bodies give the scalar kernels' bits (written out as the
    /// built-in stencils write them), for every length and output alignment.
    #[test]
    fn sse2_and_avx2_bodies_match_the_scalar_rows() {
        let a = 0.21;
        for n in 0..40 {
            for offset in 0..4 {
                let r = rows(n, 7);
                let (m, w, e, no, so, b, u) = (&r[0], &r[1], &r[2], &r[3], &r[4], &r[5], &r[6]);
                let want5: Vec<f64> = (0..n).map(|i| m[i] + a * (no[i] + so[i] + w[i] + e[i] - 4.0 * m[i])).collect();
                let want7: Vec<f64> =
                    (0..n).map(|i| m[i] + a * (no[i] + so[i] + w[i] + e[i] + b[i] + u[i] - 6.0 * m[i])).collect();
                let five = [&no[..], so, w, e];
                let seven = [&no[..], so, w, e, b, u];
                let mut buf = vec![0.0; n + offset];
                heat_sse2(m, five, a, 4.0, &mut buf[offset..]);
                assert_eq!(&buf[offset..], &want5[..], "sse2 5-point n={n} offset={offset}");
                heat_sse2(m, seven, a, 6.0, &mut buf[offset..]);
                assert_eq!(&buf[offset..], &want7[..], "sse2 7-point n={n} offset={offset}");
                if std::arch::is_x86_feature_detected!("avx2") {
                    // SAFETY: AVX2 is available (checked); rows have `n` elements.
                    unsafe { heat_avx2(m, five, a, 4.0, &mut buf[offset..]) };
                    assert_eq!(&buf[offset..], &want5[..], "avx2 5-point n={n} offset={offset}");
                    // SAFETY: as above.
                    unsafe { heat_avx2(m, seven, a, 6.0, &mut buf[offset..]) };
                    assert_eq!(&buf[offset..], &want7[..], "avx2 7-point n={n} offset={offset}");
                }
                heat(m, five, a, 4.0, &mut buf[offset..]);
                assert_eq!(&buf[offset..], &want5[..], "dispatch n={n} offset={offset}");
                fence();
            }
        }
    }
}
