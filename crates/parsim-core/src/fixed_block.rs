//! The vectorised path of [`BlockSum`](crate::BlockSum): a block of values
//! whose binary exponents lie within [`SPREAD`] of the block's largest is
//! added as fixed-point integers, with no memory traffic but the loads.
//!
//! Each value is `±m · 2^(e − 1075)` with a 53-bit significand `m` and an
//! effective exponent field `e ≥ 1`. Relative to the block's base exponent
//! `b = max(e) − SPREAD`, a value with `e ≥ b` is the integer `m · 2^(e − b)`
//! below 2⁶⁴; its high and low 32-bit halves are summed apart in `i64`s, so
//! the block's exact sum is `(Σ±high · 2³² + Σ±low) · 2^(b − 1075)`. Values
//! further below are collected and summed the same way in another round
//! under their own largest exponent. Every step is an integer operation
//! with the same result in any lane order: the sum is exact, and the same
//! bit for bit as the scalar buckets give.
//!
//! The loops are compiled for AVX2, which has the per-lane variable shift
//! they need, and run where the CPU has it (detected at run time); elsewhere
//! [`BlockSum`](crate::BlockSum) keeps its scalar buckets. A block holding an
//! infinity or NaN goes to the buckets too, and so do the values still
//! below after [`ROUNDS`] rounds (a block whose exponents spread over more
//! than about 3·[`SPREAD`] binades).
#![allow(unsafe_code)]

/// Values per block.
pub(crate) const BLOCK: usize = 256;
/// Binades below a block's largest exponent taken in one round: `m < 2^53`
/// shifted by at most 11 stays below 2⁶⁴.
const SPREAD: u64 = 11;
const ABS: u64 = !(1 << 63);
const FRAC: u64 = (1 << 52) - 1;

/// Fixed-point rounds per block; values still below go back to the caller.
const ROUNDS: usize = 3;

/// What [`add_block`] did with a block.
pub(crate) enum Block {
    /// Added every value.
    Done,
    /// Added nothing: the caller adds the block through its buckets.
    Buckets,
    /// Added all but the first `k` values of the array, which the caller adds.
    Left(Box<[f64; BLOCK]>, usize),
}

/// Adds `xs` (at most [`BLOCK`] values) into `wide`, the buckets of
/// `Σ b · 2^(max(f, 1) − 1075)` per exponent field `f`, in up to
/// [`ROUNDS`] rounds, and returns the values it left (those further below
/// the largest). Adds nothing and returns [`Block::Buckets`] if a value is
/// infinite or NaN, or if the CPU lacks AVX2 (without its variable
/// shifts the scalar buckets are faster), or if the exponents spread over
/// [`ROUNDS`]·[`SPREAD`] binades or more (the buckets are faster then too).
pub(crate) fn add_block(wide: &mut [i128; 2048], xs: &[f64]) -> Block {
    debug_assert!(xs.len() <= BLOCK);
    #[cfg(target_arch = "x86_64")]
    {
        if crate::avx2() {
            // SAFETY: the CPU supports AVX2 (checked by `avx2`).
            return unsafe { add_block_avx2(wide, xs) };
        }
    }
    let _ = (wide, xs);
    Block::Buckets
}

/// # Safety
/// The CPU must support AVX2.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
unsafe fn add_block_avx2(wide: &mut [i128; 2048], xs: &[f64]) -> Block {
    let (top, bottom) = span(xs);
    if top == 0x7ff || top.saturating_sub(bottom.max(1)) >= ROUNDS as u64 * SPREAD {
        // Infinite or NaN values, or exponents spread too wide for the rounds.
        return Block::Buckets;
    }
    let base = top.max(1).saturating_sub(SPREAD).max(1);
    if bottom.max(1) >= base {
        // Every nonzero value in range: the common case, one round without a count.
        wide[base as usize] += round::<false>(xs, base).0;
        return Block::Done;
    }
    let (mut held, mut left) = ([0.0f64; BLOCK], [0.0f64; BLOCK]);
    let (mut rest, mut top): (&[f64], u64) = (xs, top);
    for round_no in 0..ROUNDS {
        let base = top.max(1).saturating_sub(SPREAD).max(1);
        let (sum, below) = round::<true>(rest, base);
        wide[base as usize] += sum;
        if below == 0 {
            return Block::Done;
        }
        // The values below `base`, gathered for the next round or the caller.
        let mut k = 0;
        for &x in rest {
            let a = x.to_bits() & ABS;
            left[k] = x;
            k += usize::from(a != 0 && (a >> 52).max(1) < base);
        }
        // Many values far below: the exponents are spread wide, and the
        // buckets take the rest faster than more rounds would.
        if round_no + 1 == ROUNDS || 4 * k > rest.len() {
            return Block::Left(Box::new(left), k);
        }
        held[..k].copy_from_slice(&left[..k]);
        rest = &held[..k];
        top = span(rest).0;
    }
    unreachable!("the last round returns")
}

/// The largest exponent field in `xs` (0x7ff if a value is infinite or NaN)
/// and the smallest of a nonzero value (0x7ff if every value is zero).
#[inline(always)]
fn span(xs: &[f64]) -> (u64, u64) {
    // Signed maxima and minima (every |x| < 2⁶³), which the AVX2 build turns
    // into compares and blends; for the minimum a zero counts as 2⁶³ − 1.
    let (top, bottom) = xs.iter().fold((0i64, i64::MAX), |(t, b), x| {
        let a = x.to_bits() & ABS;
        (t.max(a as i64), b.min((a.wrapping_sub(1) & ABS) as i64))
    });
    // `bottom + 1` is the smallest nonzero |x|, or 2⁶³ (exponent field 0x800) if none.
    (top as u64 >> 52, ((bottom as u64 + 1) >> 52).min(0x7ff))
}

/// The exact sum of the values of `xs` with effective exponent `≥ base`, in
/// units of `2^(base − 1075)`, and how many nonzero values lie below
/// (counted only if `CHECK`; without it every value must be in range).
#[inline(always)]
fn round<const CHECK: bool>(xs: &[f64], base: u64) -> (i128, usize) {
    let (mut high, mut low, mut below) = (0i64, 0i64, 0usize);
    for &x in xs {
        let bits = x.to_bits();
        let a = bits & ABS;
        let e = (a >> 52).max(1);
        let m = (a & FRAC) | (u64::from(a >> 52 != 0) << 52);
        let v = if CHECK {
            let inside = e >= base;
            below += usize::from(!inside && a != 0);
            if inside {
                m << ((e - base) & 63)
            } else {
                0
            }
        } else {
            // Every nonzero value has e ≥ base; a zero (m = 0) may not.
            m << (e.wrapping_sub(base) & 63)
        };
        let sign = (bits as i64) >> 63; // 0 or −1
        high += (((v >> 32) as i64) ^ sign) - sign;
        low += (((v & 0xffff_ffff) as i64) ^ sign) - sign;
    }
    ((i128::from(high) << 32) + i128::from(low), below)
}
