//! Rows written with non-temporal (streaming) stores, for fields far larger
//! than the caches: the store goes to memory without first reading the line
//! into the cache (no write-allocate), so a Jacobi step moves 16 bytes per
//! cell instead of 24.
//!
//! SSE2 is part of the x86-64 baseline, so no runtime detection is needed;
//! other architectures use the plain rows. The arithmetic is the same IEEE
//! operations in the same order as the scalar kernels, so results are
//! bit-identical either way.

/// `out[i] = m + a (n + s + w + e - 4 m)` over equal-length rows, streamed
/// (AVX2 when the CPU has it, SSE2 otherwise).
#[cfg(target_arch = "x86_64")]
pub(crate) fn heat5(rows: [&[f64]; 5], a: f64, out: &mut [f64]) {
    if std::arch::is_x86_feature_detected!("avx2") {
        // SAFETY: the CPU supports AVX2 (checked just above).
        unsafe { heat5_avx2(rows, a, out) };
    } else {
        heat5_sse2(rows, a, out);
    }
}

/// The AVX2 body of [`heat5`]: four cells per instruction, 32-byte aligned streaming stores.
///
/// # Safety
/// The CPU must support AVX2.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
unsafe fn heat5_avx2(rows: [&[f64]; 5], a: f64, out: &mut [f64]) {
    use std::arch::x86_64::*;
    let [mid, west, east, north, south] = rows;
    let n = out.len();
    assert!(rows.iter().all(|r| r.len() == n), "rows of equal length");
    let scalar = |i: usize| mid[i] + a * (north[i] + south[i] + west[i] + east[i] - 4.0 * mid[i]);
    // Scalar cells until `out` is 32-byte aligned (f64 slices are 8-byte aligned).
    let head = ((32 - out.as_ptr() as usize % 32) % 32 / 8).min(n);
    for i in 0..head {
        out[i] = scalar(i);
    }
    let body_end = head + (n - head) / 4 * 4;
    let (va, four) = (_mm256_set1_pd(a), _mm256_set1_pd(4.0));
    let mut i = head;
    while i < body_end {
        // SAFETY: `i + 3 < n` and every row has `n` elements, so the loads stay
        // inside the slices; `out[i]` is 32-byte aligned and `out[i..i + 4]`
        // lies inside `out`, which we borrow mutably.
        unsafe {
            let ld = |r: &[f64]| _mm256_loadu_pd(r.as_ptr().add(i));
            let m = ld(mid);
            let s = _mm256_add_pd(_mm256_add_pd(_mm256_add_pd(ld(north), ld(south)), ld(west)), ld(east));
            let r = _mm256_add_pd(m, _mm256_mul_pd(va, _mm256_sub_pd(s, _mm256_mul_pd(four, m))));
            _mm256_stream_pd(out.as_mut_ptr().add(i), r);
        }
        i += 4;
    }
    for i in body_end..n {
        out[i] = scalar(i);
    }
}

#[cfg(target_arch = "x86_64")]
fn heat5_sse2(rows: [&[f64]; 5], a: f64, out: &mut [f64]) {
    use std::arch::x86_64::*;
    let [mid, west, east, north, south] = rows;
    let n = out.len();
    assert!(rows.iter().all(|r| r.len() == n), "rows of equal length");
    let scalar = |i: usize| mid[i] + a * (north[i] + south[i] + west[i] + east[i] - 4.0 * mid[i]);
    // Streaming stores need 16-byte alignment: a scalar head, a vector body, a scalar tail.
    let head = (out.as_ptr() as usize % 16 != 0) as usize;
    let head = head.min(n);
    for i in 0..head {
        out[i] = scalar(i);
    }
    let body_end = head + (n - head) / 2 * 2;
    // SAFETY: SSE2 is part of the x86-64 baseline every x86-64 CPU has.
    let (va, four) = unsafe { (_mm_set1_pd(a), _mm_set1_pd(4.0)) };
    let mut i = head;
    while i < body_end {
        // SAFETY: `i + 1 < n` and every row has `n` elements, so the unaligned
        // loads read inside the slices; `out[i]` is 16-byte aligned (the head
        // made it so and `i` advances by two f64s) and `out[i..i + 2]` is inside
        // `out`, which we borrow mutably.
        unsafe {
            let m = _mm_loadu_pd(mid.as_ptr().add(i));
            let s = _mm_add_pd(
                _mm_add_pd(
                    _mm_add_pd(_mm_loadu_pd(north.as_ptr().add(i)), _mm_loadu_pd(south.as_ptr().add(i))),
                    _mm_loadu_pd(west.as_ptr().add(i)),
                ),
                _mm_loadu_pd(east.as_ptr().add(i)),
            );
            let r = _mm_add_pd(m, _mm_mul_pd(va, _mm_sub_pd(s, _mm_mul_pd(four, m))));
            _mm_stream_pd(out.as_mut_ptr().add(i), r);
        }
        i += 2;
    }
    for i in body_end..n {
        out[i] = scalar(i);
    }
}

/// `out[i] = m + a (n + s + w + e + b + u - 6 m)` over equal-length rows,
/// streamed (AVX2 when the CPU has it, SSE2 otherwise).
#[cfg(target_arch = "x86_64")]
pub(crate) fn heat7(rows: [&[f64]; 7], a: f64, out: &mut [f64]) {
    if std::arch::is_x86_feature_detected!("avx2") {
        // SAFETY: the CPU supports AVX2 (checked just above).
        unsafe { heat7_avx2(rows, a, out) };
    } else {
        heat7_sse2(rows, a, out);
    }
}

/// The AVX2 body of [`heat7`].
///
/// # Safety
/// The CPU must support AVX2.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
unsafe fn heat7_avx2(rows: [&[f64]; 7], a: f64, out: &mut [f64]) {
    use std::arch::x86_64::*;
    let [mid, west, east, north, south, below, above] = rows;
    let n = out.len();
    assert!(rows.iter().all(|r| r.len() == n), "rows of equal length");
    let scalar = |i: usize| mid[i] + a * (north[i] + south[i] + west[i] + east[i] + below[i] + above[i] - 6.0 * mid[i]);
    let head = ((32 - out.as_ptr() as usize % 32) % 32 / 8).min(n);
    for i in 0..head {
        out[i] = scalar(i);
    }
    let body_end = head + (n - head) / 4 * 4;
    let (va, six) = (_mm256_set1_pd(a), _mm256_set1_pd(6.0));
    let mut i = head;
    while i < body_end {
        // SAFETY: as in `heat5_avx2`.
        unsafe {
            let ld = |r: &[f64]| _mm256_loadu_pd(r.as_ptr().add(i));
            let m = ld(mid);
            let s = _mm256_add_pd(
                _mm256_add_pd(
                    _mm256_add_pd(_mm256_add_pd(_mm256_add_pd(ld(north), ld(south)), ld(west)), ld(east)),
                    ld(below),
                ),
                ld(above),
            );
            let r = _mm256_add_pd(m, _mm256_mul_pd(va, _mm256_sub_pd(s, _mm256_mul_pd(six, m))));
            _mm256_stream_pd(out.as_mut_ptr().add(i), r);
        }
        i += 4;
    }
    for i in body_end..n {
        out[i] = scalar(i);
    }
}

#[cfg(target_arch = "x86_64")]
fn heat7_sse2(rows: [&[f64]; 7], a: f64, out: &mut [f64]) {
    use std::arch::x86_64::*;
    let [mid, west, east, north, south, below, above] = rows;
    let n = out.len();
    assert!(rows.iter().all(|r| r.len() == n), "rows of equal length");
    let scalar = |i: usize| mid[i] + a * (north[i] + south[i] + west[i] + east[i] + below[i] + above[i] - 6.0 * mid[i]);
    let head = ((out.as_ptr() as usize % 16 != 0) as usize).min(n);
    for i in 0..head {
        out[i] = scalar(i);
    }
    let body_end = head + (n - head) / 2 * 2;
    // SAFETY: SSE2 is part of the x86-64 baseline.
    let (va, six) = unsafe { (_mm_set1_pd(a), _mm_set1_pd(6.0)) };
    let mut i = head;
    while i < body_end {
        // SAFETY: as in `heat5`: loads inside rows of `n` elements, an aligned
        // store of two f64s inside `out`.
        unsafe {
            let ld = |r: &[f64]| _mm_loadu_pd(r.as_ptr().add(i));
            let m = ld(mid);
            let s = _mm_add_pd(
                _mm_add_pd(_mm_add_pd(_mm_add_pd(_mm_add_pd(ld(north), ld(south)), ld(west)), ld(east)), ld(below)),
                ld(above),
            );
            let r = _mm_add_pd(m, _mm_mul_pd(va, _mm_sub_pd(s, _mm_mul_pd(six, m))));
            _mm_stream_pd(out.as_mut_ptr().add(i), r);
        }
        i += 2;
    }
    for i in body_end..n {
        out[i] = scalar(i);
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

    /// Both vector bodies give the scalar kernel's bits, for every length and
    /// every alignment of the output (head, body and tail paths).
    #[test]
    fn sse2_and_avx2_bodies_match_the_scalar_rows() {
        let a = 0.21;
        for n in 0..40 {
            for offset in 0..4 {
                let r = rows(n, 7);
                let want5: Vec<f64> =
                    (0..n).map(|i| r[0][i] + a * (r[3][i] + r[4][i] + r[1][i] + r[2][i] - 4.0 * r[0][i])).collect();
                let want7: Vec<f64> = (0..n)
                    .map(|i| r[0][i] + a * (r[3][i] + r[4][i] + r[1][i] + r[2][i] + r[5][i] + r[6][i] - 6.0 * r[0][i]))
                    .collect();
                let mut buf = vec![0.0; n + offset];
                let five = [&r[0][..], &r[1], &r[2], &r[3], &r[4]];
                let seven = [&r[0][..], &r[1], &r[2], &r[3], &r[4], &r[5], &r[6]];
                heat5_sse2(five, a, &mut buf[offset..]);
                assert_eq!(&buf[offset..], &want5[..], "sse2 heat5 n={n} offset={offset}");
                heat7_sse2(seven, a, &mut buf[offset..]);
                assert_eq!(&buf[offset..], &want7[..], "sse2 heat7 n={n} offset={offset}");
                if std::arch::is_x86_feature_detected!("avx2") {
                    // SAFETY: AVX2 is available (checked).
                    unsafe { heat5_avx2(five, a, &mut buf[offset..]) };
                    assert_eq!(&buf[offset..], &want5[..], "avx2 heat5 n={n} offset={offset}");
                    // SAFETY: as above.
                    unsafe { heat7_avx2(seven, a, &mut buf[offset..]) };
                    assert_eq!(&buf[offset..], &want7[..], "avx2 heat7 n={n} offset={offset}");
                }
                fence();
            }
        }
    }
}
