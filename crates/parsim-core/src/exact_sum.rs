//! Reproducible floating-point sums: exact accumulation, one rounding at the end.
//!
//! [`ExactSum`] keeps the exact value of a sum of `f64`s in a wide fixed-point
//! accumulator (a Kulisch-style long accumulator of 32-bit digits covering every
//! finite `f64` from 2⁻¹⁰⁷⁴ to 2¹⁰²⁴), so the result is the correctly rounded
//! exact sum. It does not depend on the order of the additions, on how the
//! values were split between ranks, or on how partial sums were merged: the
//! value is bitwise the same for 1 rank or 1000.
//!
//! ```
//! use parsim_core::ExactSum;
//!
//! let xs = [1e16, 1.0, -1e16, 0.5];
//! let mut a = ExactSum::new();
//! xs.iter().for_each(|&x| a.add(x));
//! let mut b = ExactSum::new();
//! xs.iter().rev().for_each(|&x| b.add(x));
//! assert_eq!(a.value(), 1.5);          // naive left-to-right summation gives 0.5
//! assert_eq!(a.value().to_bits(), b.value().to_bits());
//! ```
//!
//! To reduce across ranks, exchange [`ExactSum::to_limbs`] (plain `i64`s) with an
//! integer sum reduction and rebuild with [`ExactSum::from_limbs`]; `parsim-comm`
//! wraps this as `all_reduce_exact`.

use serde::{Deserialize, Serialize};

/// Bits per digit of the accumulator.
const DIGIT_BITS: u32 = 32;
/// Offset so that the smallest subnormal (2^-1074) lands at bit 0.
const BIAS: i32 = 1074;
/// Number of 32-bit digits: 2098 bits of range plus headroom for carries.
pub const LIMBS: usize = 68;
/// Additions allowed between carry normalisations (each adds < 2^32 to a digit).
const NORMALISE_EVERY: u32 = 1 << 29;

/// An exact, order-independent accumulator of `f64` values.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ExactSum {
    /// Signed digits of base 2^32, least significant first.
    limbs: Vec<i64>,
    pending: u32,
    /// Bit 0: NaN seen; bit 1: +inf seen; bit 2: -inf seen.
    special: u8,
}

impl Default for ExactSum {
    fn default() -> Self {
        Self::new()
    }
}

impl ExactSum {
    /// An empty sum (value 0).
    pub fn new() -> Self {
        ExactSum { limbs: vec![0; LIMBS], pending: 0, special: 0 }
    }

    /// Adds one value exactly.
    #[inline]
    pub fn add(&mut self, x: f64) {
        if !x.is_finite() {
            self.special |= if x.is_nan() {
                1
            } else if x > 0.0 {
                2
            } else {
                4
            };
            return;
        }
        let bits = x.to_bits();
        let exp_field = ((bits >> 52) & 0x7ff) as i32;
        let frac = bits & ((1u64 << 52) - 1);
        if exp_field == 0 && frac == 0 {
            return;
        }
        // x = mant * 2^(e - BIAS) with e >= 0.
        let (mant, e) = if exp_field == 0 { (frac, 0) } else { (frac | (1u64 << 52), exp_field - 1) };
        let digit = (e as u32 / DIGIT_BITS) as usize;
        let shift = e as u32 % DIGIT_BITS;
        let wide = u128::from(mant) << shift; // < 2^85: at most three digits
        let neg = (bits >> 63) == 1;
        for k in 0..3 {
            let d = ((wide >> (32 * k)) & 0xffff_ffff) as i64;
            if d != 0 {
                if neg {
                    self.limbs[digit + k] -= d;
                } else {
                    self.limbs[digit + k] += d;
                }
            }
        }
        self.pending += 1;
        if self.pending >= NORMALISE_EVERY {
            self.normalise();
        }
    }

    /// Adds every value of a slice (long slices through a [`BlockSum`]).
    pub fn add_slice(&mut self, xs: &[f64]) {
        if xs.len() >= 4096 {
            let mut b = BlockSum::new();
            b.add_slice(xs);
            self.merge(&b.to_exact());
            return;
        }
        for &x in xs {
            self.add(x);
        }
    }

    /// Adds `b · 2^(e − 1074)` exactly (`e` < 2046): a [`BlockSum`] bucket.
    fn add_scaled(&mut self, b: i128, e: u32) {
        let digit = (e / DIGIT_BITS) as usize;
        let shift = e % DIGIT_BITS;
        let mag = b.unsigned_abs();
        let low = (mag & ((1u128 << 96) - 1)) << shift; // < 2^128
        let high = ((mag >> 96) as u64) << shift; // < 2^63
        let digits = [
            u64::from(low as u32),
            u64::from((low >> 32) as u32),
            u64::from((low >> 64) as u32),
            u64::from((low >> 96) as u32) + (high & 0xffff_ffff),
            high >> 32,
        ];
        for (k, d) in digits.into_iter().enumerate() {
            let d = d as i64;
            if d != 0 {
                if b < 0 {
                    self.limbs[digit + k] -= d;
                } else {
                    self.limbs[digit + k] += d;
                }
            }
        }
        self.normalise();
    }

    /// Merges another partial sum into this one (exactly).
    pub fn merge(&mut self, other: &ExactSum) {
        let mut o = other.clone();
        o.normalise();
        self.normalise();
        for (a, b) in self.limbs.iter_mut().zip(&o.limbs) {
            *a += *b;
        }
        self.special |= other.special;
        self.normalise();
    }

    /// Propagates carries so every digit but the top one is in [0, 2^32).
    fn normalise(&mut self) {
        let mut carry = 0i64;
        let n = self.limbs.len();
        for (i, l) in self.limbs.iter_mut().enumerate() {
            let v = *l + carry;
            if i + 1 == n {
                *l = v;
            } else {
                *l = v & 0xffff_ffff;
                carry = v >> 32; // arithmetic shift: floor division
            }
        }
        self.pending = 0;
    }

    /// The accumulator as plain integers, for an integer sum reduction across ranks.
    ///
    /// The last element carries the special-value flags; summing the limb
    /// vectors of several accumulators elementwise and calling
    /// [`from_limbs`](Self::from_limbs) equals merging them, for up to 2³⁰ parts.
    pub fn to_limbs(&self) -> Vec<i64> {
        let mut c = self.clone();
        c.normalise();
        let mut v = c.limbs;
        // One counter per special kind so that summing keeps "seen at least once".
        v.push(i64::from(self.special & 1));
        v.push(i64::from((self.special >> 1) & 1));
        v.push(i64::from((self.special >> 2) & 1));
        v
    }

    /// Rebuilds an accumulator from (possibly summed) [`to_limbs`](Self::to_limbs) output.
    ///
    /// Returns `None` when the slice has the wrong length.
    pub fn from_limbs(limbs: &[i64]) -> Option<Self> {
        if limbs.len() != LIMBS + 3 {
            return None;
        }
        let flags = &limbs[LIMBS..];
        let special = u8::from(flags[0] > 0) | (u8::from(flags[1] > 0) << 1) | (u8::from(flags[2] > 0) << 2);
        let mut s = ExactSum { limbs: limbs[..LIMBS].to_vec(), pending: 0, special };
        s.normalise();
        Some(s)
    }

    /// The exact sum rounded once to the nearest `f64` (ties to even).
    ///
    /// NaN if a NaN was added or both infinities were; ±inf if one infinity
    /// was added or the exact sum overflows.
    pub fn value(&self) -> f64 {
        match self.special {
            0 => {}
            2 => return f64::INFINITY,
            4 => return f64::NEG_INFINITY,
            _ => return f64::NAN,
        }
        let mut c = self.clone();
        c.normalise();
        let negative = *c.limbs.last().expect("limbs") < 0;
        let mut mag: Vec<u64> = Vec::with_capacity(LIMBS);
        if negative {
            // Two's complement negate over base-2^32 digits.
            let mut borrow = 0i64;
            for &l in &c.limbs {
                let v = -l - borrow;
                mag.push((v & 0xffff_ffff) as u64);
                borrow = i64::from(v < 0);
            }
        } else {
            mag.extend(c.limbs.iter().map(|&l| l as u64));
        }
        let top = match mag.iter().rposition(|&d| d != 0) {
            Some(t) => t,
            None => return 0.0,
        };
        // Highest set bit, as an absolute bit index.
        let hb = top as i64 * 32 + 63 - i64::from(mag[top].leading_zeros());
        let bit = |i: i64| -> u64 {
            if i < 0 {
                0
            } else {
                (mag[(i / 32) as usize] >> (i % 32)) & 1
            }
        };
        // Bit index i has weight 2^(i - 1074). Keep 53 significant bits, or
        // fewer in the subnormal range where the lowest kept bit is index 0.
        let lowest_kept = (hb - 52).max(0);
        let mut m: u64 = 0;
        for i in (lowest_kept..=hb).rev() {
            m = (m << 1) | bit(i);
        }
        let round_bit = bit(lowest_kept - 1);
        let sticky = (0..lowest_kept - 1).any(|i| bit(i) == 1);
        if round_bit == 1 && (sticky || (m & 1) == 1) {
            m += 1;
        }
        let v = (m as f64) * pow2(lowest_kept - i64::from(BIAS));
        if negative {
            -v
        } else {
            v
        }
    }
}

/// An exact accumulator for many values: under a nanosecond each with AVX2, about two without.
///
/// On CPUs with AVX2, [`BlockSum::add_slice`] takes blocks of 256 values
/// whose exponents lie close together as fixed-point integers relative to
/// the block's largest exponent, four values per instruction (0.8–1.0 ns a
/// value in cache, 2–3× faster than the buckets below; a block spread over more than
/// 33 binades, or holding an infinity or NaN, goes to the buckets).
/// Otherwise each value's signed 53-bit significand is added to a bucket for
/// its binary exponent (no carry can overflow before 2⁷⁴ additions), so an
/// addition is a load, a shift and an add, with no branch on the value; the
/// buckets are folded into an [`ExactSum`] once, at the end. Four sets of
/// `i64` buckets take consecutive values of a slice,
/// so equal exponents do not wait for each other's stores, and are emptied
/// into the `i128` ones every 512 additions, before they could overflow. The result is
/// the same exact sum, bit for bit, as [`ExactSum::add`] gives, in any order
/// and any split.
///
/// ```
/// use parsim_core::{BlockSum, ExactSum};
/// let xs: Vec<f64> = (0..10_000).map(|i| (i as f64).sin() * 1e-3 + 1e10 * f64::from(i % 2 == 0) - 5e9).collect();
/// let (mut fast, mut slow) = (BlockSum::new(), ExactSum::new());
/// let (left, right) = xs.split_at(3_333);
/// let mut other = BlockSum::new();
/// fast.add_slice(left);
/// other.add_slice(right);
/// fast.merge(&other);
/// xs.iter().rev().for_each(|&x| slow.add(x));
/// assert_eq!(fast.to_exact().value().to_bits(), slow.value().to_bits());
/// ```
#[derive(Clone, Debug)]
pub struct BlockSum {
    /// Per exponent field (0: subnormals; 2047 is never used), the sum so far.
    wide: Box<[i128; 2048]>,
    /// Four sets of `i64` buckets taking consecutive values, emptied into
    /// `wide` every [`FLUSH`] additions per set, before they could overflow.
    lanes: Box<[[i64; 2048]; LANES]>,
    /// Additions per set since the last flush, and the exponent fields they touched.
    since: u32,
    lo: usize,
    hi: usize,
    special: u8,
}

/// Bucket sets of a [`BlockSum`].
const LANES: usize = 4;
/// Additions per `i64` bucket before a flush: 2^9 significands below 2^53 stay below 2^62.
const FLUSH: u32 = 1 << 9;

impl Default for BlockSum {
    fn default() -> Self {
        Self::new()
    }
}

impl BlockSum {
    /// An empty sum.
    pub fn new() -> Self {
        BlockSum {
            wide: Box::new([0; 2048]),
            lanes: Box::new([[0; 2048]; LANES]),
            since: 0,
            lo: 2048,
            hi: 0,
            special: 0,
        }
    }

    /// Adds one value exactly.
    pub fn add(&mut self, x: f64) {
        self.add_slice(&[x]);
    }

    /// Whether every value added so far was finite (no infinity, no NaN).
    pub fn all_finite(&self) -> bool {
        self.special == 0
    }

    /// Empties the `i64` buckets into the wide ones.
    fn flush(&mut self) {
        for e in self.lo..=self.hi.min(2047) {
            for lane in self.lanes.iter_mut() {
                self.wide[e] += i128::from(std::mem::take(&mut lane[e]));
            }
        }
        (self.since, self.lo, self.hi) = (0, 2048, 0);
    }

    /// Adds every value of a slice exactly: on CPUs with AVX2, blocks of
    /// values whose exponents lie close together as fixed-point integers
    /// (vectorised), everything else through the buckets.
    pub fn add_slice(&mut self, xs: &[f64]) {
        use crate::fixed_block::{add_block, Block, BLOCK};
        for block in xs.chunks(BLOCK) {
            match add_block(&mut self.wide, block) {
                Block::Done => {}
                Block::Left(left, k) => self.add_slice_lanes(&left[..k]),
                Block::Buckets => self.add_slice_lanes(block),
            }
        }
    }

    /// Adds every value of a slice through the buckets: consecutive values
    /// go to the four bucket sets in turn.
    fn add_slice_lanes(&mut self, xs: &[f64]) {
        let mut rest = xs;
        while !rest.is_empty() {
            let room = (FLUSH - self.since) as usize * LANES;
            let (now, later) = rest.split_at(room.min(rest.len()));
            // The hot loop keeps its bookkeeping in locals (registers).
            let (mut lo, mut hi, mut special) = (self.lo, self.hi, self.special);
            let lanes: &mut [[i64; 2048]; LANES] = &mut self.lanes;
            let mut one = |lane: &mut [i64; 2048], x: f64| {
                let bits = x.to_bits();
                let exp = ((bits >> 52) & 0x7ff) as usize;
                if exp == 0x7ff {
                    special |= if x.is_nan() {
                        1
                    } else if x > 0.0 {
                        2
                    } else {
                        4
                    };
                    return;
                }
                let frac = bits & ((1u64 << 52) - 1);
                let mant = (frac | (u64::from(exp != 0) << 52)) as i64;
                let sign = (bits as i64) >> 63; // 0 or −1
                lane[exp] += (mant ^ sign) - sign;
                lo = lo.min(exp);
                hi = hi.max(exp);
            };
            let [l0, l1, l2, l3] = lanes;
            let mut quads = now.chunks_exact(LANES);
            for q in &mut quads {
                one(l0, q[0]);
                one(l1, q[1]);
                one(l2, q[2]);
                one(l3, q[3]);
            }
            for &x in quads.remainder() {
                one(l0, x);
            }
            (self.lo, self.hi, self.special) = (lo, hi, special);
            self.since += now.len().div_ceil(LANES) as u32;
            if self.since >= FLUSH {
                self.flush();
            }
            rest = later;
        }
    }

    /// Adds another partial sum into this one.
    pub fn merge(&mut self, other: &BlockSum) {
        self.flush();
        let mut o = other.clone();
        o.flush();
        for (a, b) in self.wide.iter_mut().zip(o.wide.iter()) {
            *a += *b;
        }
        self.special |= other.special;
    }

    /// The sum as an [`ExactSum`] (to round, merge or reduce across ranks).
    pub fn to_exact(&self) -> ExactSum {
        let mut c = self.clone();
        c.flush();
        let mut s = ExactSum::new();
        for (f, &b) in c.wide.iter().enumerate().filter(|(_, b)| **b != 0) {
            s.add_scaled(b, (f as u32).saturating_sub(1));
        }
        s.special = self.special;
        s
    }
}

/// 2^e as an exact f64 for e in the representable range, ±inf/0 beyond.
fn pow2(e: i64) -> f64 {
    // Split to stay inside the normal range at each multiplication.
    let mut r = 1.0f64;
    let mut e = e;
    while e > 1000 {
        r *= f64::from_bits(((1000 + 1023) as u64) << 52);
        e -= 1000;
    }
    while e < -1000 {
        r *= f64::from_bits(((-1000 + 1023) as u64) << 52);
        e += 1000;
    }
    r * f64::from_bits(((e + 1023) as u64) << 52)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rng::StreamKey;
    use rand_core::RngCore;

    fn exact(xs: &[f64]) -> f64 {
        let mut s = ExactSum::new();
        s.add_slice(xs);
        s.value()
    }

    #[test]
    fn small_cases_are_exact() {
        assert_eq!(exact(&[]), 0.0);
        assert_eq!(exact(&[1.0, 2.0, 3.0]), 6.0);
        assert_eq!(exact(&[0.1, 0.2]), 0.1 + 0.2);
        assert_eq!(exact(&[1e308, 1e308, -1e308]), 1e308);
        assert_eq!(exact(&[f64::MIN_POSITIVE / 4.0, f64::MIN_POSITIVE / 4.0]), f64::MIN_POSITIVE / 2.0);
        assert_eq!(exact(&[5e-324, 5e-324, 5e-324]), 1.5e-323);
        assert_eq!(exact(&[-3.5, 1.25]), -2.25);
        assert_eq!(exact(&[f64::MAX, f64::MAX]), f64::INFINITY);
        assert!(exact(&[f64::INFINITY, f64::NEG_INFINITY]).is_nan());
        assert_eq!(exact(&[1.0, f64::INFINITY]), f64::INFINITY);
    }

    #[test]
    fn rounding_is_to_nearest_even() {
        // 1 + 2^-53 is a tie: rounds to 1 (even); 1 + 2^-53 + 2^-80 rounds up.
        let half_ulp = 2f64.powi(-53);
        assert_eq!(exact(&[1.0, half_ulp]), 1.0);
        assert_eq!(exact(&[1.0, half_ulp, 2f64.powi(-80)]), 1.0 + 2f64.powi(-52));
        // (1 + 2^-52) + 2^-53 is a tie between odd and even: rounds up to even.
        assert_eq!(exact(&[1.0 + 2f64.powi(-52), half_ulp]), 1.0 + 2f64.powi(-51));
    }

    #[test]
    fn order_and_split_do_not_change_bits() {
        let mut s = StreamKey::new(77).stream();
        let xs: Vec<f64> = (0..10_000)
            .map(|_| {
                let m = s.uniform() - 0.5;
                let e = (s.next_u32() % 60) as i32 - 40;
                m * 2f64.powi(e)
            })
            .collect();
        let whole = exact(&xs);
        let mut rev = xs.clone();
        rev.reverse();
        assert_eq!(exact(&rev).to_bits(), whole.to_bits());
        for parts in [2usize, 3, 7, 64] {
            let chunk = xs.len().div_ceil(parts);
            let mut total = ExactSum::new();
            let mut limb_sum = vec![0i64; LIMBS + 3];
            for c in xs.chunks(chunk) {
                let mut p = ExactSum::new();
                p.add_slice(c);
                for (a, b) in limb_sum.iter_mut().zip(p.to_limbs()) {
                    *a += b;
                }
                total.merge(&p);
            }
            assert_eq!(total.value().to_bits(), whole.to_bits());
            let rebuilt = ExactSum::from_limbs(&limb_sum).expect("length");
            assert_eq!(rebuilt.value().to_bits(), whole.to_bits());
        }
        // Against a wide reference: the exact sum of these values fits an i128
        // after scaling by 2^(40+53).
        let scaled: i128 = xs.iter().map(|&x| (x * 2f64.powi(93)) as i128).sum();
        assert_eq!(whole, scaled as f64 * 2f64.powi(-93));
    }

    #[test]
    fn block_sums_equal_exact_sums_bit_for_bit() {
        let mut s = StreamKey::new(5).stream();
        let mut xs: Vec<f64> = (0..20_000)
            .map(|_| {
                let m = s.uniform() - 0.5;
                let e = (s.next_u32() % 2100) as i32 - 1074;
                m * 2f64.powi(e)
            })
            .collect();
        xs.extend([5e-324, -5e-324, f64::MIN_POSITIVE, f64::MAX, -f64::MAX, 1e308, 0.0, -0.0]);
        let mut slow = ExactSum::new();
        xs.iter().for_each(|&x| slow.add(x));
        let mut fast = BlockSum::new();
        fast.add_slice(&xs);
        assert_eq!(fast.to_exact().value().to_bits(), slow.value().to_bits());
        assert_eq!(fast.to_exact().to_limbs(), slow.to_limbs());
        // Large buckets: 10^6 equal maximal significands in one exponent.
        let big = vec![f64::from_bits(0x3fff_ffff_ffff_ffff); 1_000_000];
        let mut slow = ExactSum::new();
        big.iter().for_each(|&x| slow.add(x));
        let mut fast = BlockSum::new();
        fast.add_slice(&big);
        assert_eq!(fast.to_exact().to_limbs(), slow.to_limbs());
        let mut inf = BlockSum::new();
        inf.add_slice(&[1.0, f64::INFINITY]);
        assert_eq!(inf.to_exact().value(), f64::INFINITY);
        inf.add(f64::NAN);
        assert!(inf.to_exact().value().is_nan());
    }

    #[test]
    fn fixed_point_blocks_equal_exact_sums_bit_for_bit() {
        // Blocks whose exponents lie close together (one fixed-point round),
        // blocks with a few values far below (more rounds, then the buckets),
        // subnormals, zeros of both signs, the largest finite values, and
        // blocks cut at every length around the block size.
        let mut s = StreamKey::new(9).stream();
        let mut cases: Vec<Vec<f64>> = Vec::new();
        for spread in [0u32, 5, 11, 12, 22, 23, 33, 34, 60] {
            for centre in [-1060i32, -1022, -30, 0, 40, 1000, 1012] {
                let xs = (0..700)
                    .map(|_| {
                        let e = centre - (s.next_u32() % (spread + 1)) as i32;
                        let m = 1.0 + s.uniform();
                        let sign = if s.next_u32() % 3 == 0 { -1.0 } else { 1.0 };
                        sign * m * 2f64.powi(e.clamp(-1074, 1023) - if e > 1000 { 1 } else { 0 })
                    })
                    .collect();
                cases.push(xs);
            }
        }
        let mut outliers: Vec<f64> = (0..1000).map(|i| 1.0 + i as f64 * 1e-3).collect();
        for i in (0..1000).step_by(37) {
            outliers[i] = -(i as f64) * 1e-30;
        }
        outliers[500] = 5e-324;
        cases.push(outliers);
        cases.push(vec![0.0; 300]);
        cases.push([3.0, 0.0, -2.5, -0.0, 1.0].repeat(100));
        cases.push([0.0, -0.0, 5e-324, -1e-310, 2.2e-308, 0.0].repeat(50));
        cases.push(vec![f64::MAX; 1000]);
        cases.push([f64::MAX, -f64::MAX, 1.0, f64::MAX].repeat(100));
        cases.push((0..600).map(|i| if i % 2 == 0 { 1e300 } else { -1e-300 }).collect());
        for xs in &cases {
            let mut slow = ExactSum::new();
            xs.iter().for_each(|&x| slow.add(x));
            for cut in [1, 255, 256, 257, 700] {
                let mut fast = BlockSum::new();
                xs.chunks(cut).for_each(|c| fast.add_slice(c));
                assert_eq!(fast.to_exact().to_limbs(), slow.to_limbs(), "cut {cut}, first value {:e}", xs[0]);
                assert_eq!(fast.to_exact().value().to_bits(), slow.value().to_bits());
            }
        }
    }

    #[test]
    fn from_limbs_rejects_wrong_length() {
        assert!(ExactSum::from_limbs(&[0; 3]).is_none());
    }
}
