//! Counter-based random streams (Philox4x32-10, Random123).
//!
//! A [`Stream`] is addressed by *what* is being drawn, never by who draws it:
//! a [`StreamKey`] is built from the run's seed and any number of coordinates
//! (replication, entity, step, purpose …). Two ranks that build the same key
//! draw the same numbers, in whatever order entities are visited, so results
//! do not depend on the number of ranks or on the partition.
//!
//! ```
//! use parsim_core::rng::StreamKey;
//! use rand_core::RngCore;
//!
//! let key = StreamKey::new(42).purpose("infect").with(7).with(3);
//! let mut a = key.stream();
//! let mut b = StreamKey::new(42).purpose("infect").with(7).with(3).stream();
//! assert_eq!(a.next_u64(), b.next_u64());
//! let u = a.uniform(); // in [0, 1)
//! assert!((0.0..1.0).contains(&u));
//! ```
//!
//! Layout: the Philox key (64 bits) is the seed itself, so distinct seeds give
//! distinct keys; the counter's upper 96 bits are an xxh3-128 hash of the
//! coordinates, and its lowest 32 bits count blocks of 128 random bits within
//! the stream (2³⁴ `u32` values per stream). Two different coordinate paths
//! collide with probability about n²/2⁹⁷ for n streams per seed.

use rand_core::RngCore;
use xxhash_rust::xxh3::{xxh3_128, Xxh3};

const PHILOX_M0: u32 = 0xD251_1F53;
const PHILOX_M1: u32 = 0xCD9E_8D57;
const PHILOX_W0: u32 = 0x9E37_79B9;
const PHILOX_W1: u32 = 0xBB67_AE85;

/// One Philox4x32 block with `rounds` rounds: `counter` and `key` in, 128 random bits out.
///
/// `philox4x32(ctr, key, 10)` is Random123's `philox4x32_R(10, ctr, key)`; it
/// reproduces the library's published known-answer vectors (see the tests).
#[inline]
pub fn philox4x32(counter: [u32; 4], key: [u32; 2], rounds: u32) -> [u32; 4] {
    philox_rounds(counter, key, rounds)
}

/// Philox4x32-10 (the standard ten rounds), unrolled and always inlined: for
/// inner loops that draw one block per (entity, neighbour) pair.
///
/// ```
/// use parsim_core::rng::{philox4x32, philox4x32_10};
/// assert_eq!(philox4x32_10([1, 2, 3, 4], [5, 6]), philox4x32([1, 2, 3, 4], [5, 6], 10));
/// ```
#[inline(always)]
pub fn philox4x32_10(counter: [u32; 4], key: [u32; 2]) -> [u32; 4] {
    philox_rounds(counter, key, 10)
}

/// The Philox rounds; always inlined, so a constant count unrolls.
#[inline(always)]
fn philox_rounds(counter: [u32; 4], key: [u32; 2], rounds: u32) -> [u32; 4] {
    let mut c = counter;
    let mut k = key;
    for r in 0..rounds {
        if r > 0 {
            k[0] = k[0].wrapping_add(PHILOX_W0);
            k[1] = k[1].wrapping_add(PHILOX_W1);
        }
        let p0 = u64::from(PHILOX_M0) * u64::from(c[0]);
        let p1 = u64::from(PHILOX_M1) * u64::from(c[2]);
        let (hi0, lo0) = ((p0 >> 32) as u32, p0 as u32);
        let (hi1, lo1) = ((p1 >> 32) as u32, p1 as u32);
        c = [hi1 ^ c[1] ^ k[0], lo1, hi0 ^ c[3] ^ k[1], lo0];
    }
    c
}

/// The address of a random stream: a seed plus a path of coordinates.
///
/// Keys are cheap values (24 bytes); building one costs a hash per coordinate.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct StreamKey {
    seed: u64,
    path: u128,
}

impl StreamKey {
    /// The root key of a run's seed.
    pub fn new(seed: u64) -> Self {
        StreamKey { seed, path: 0x6A09_E667_F3BC_C908_B2FB_1366_EA95_7D3E }
    }

    /// Extends the path with one integer coordinate (an entity id, a step, a replication …).
    #[must_use]
    pub fn with(self, coordinate: u64) -> Self {
        let mut buf = [0u8; 25];
        buf[..16].copy_from_slice(&self.path.to_le_bytes());
        buf[16..24].copy_from_slice(&coordinate.to_le_bytes());
        buf[24] = 0x01;
        StreamKey { seed: self.seed, path: xxh3_128(&buf) }
    }

    /// Extends the path with a purpose label ("infection", "ring.delay" …), so
    /// that draws made for different reasons never share numbers.
    #[must_use]
    pub fn purpose(self, label: &str) -> Self {
        // The xxh3-128 of path ‖ label ‖ 0x02, streamed (no allocation).
        let mut h = Xxh3::new();
        h.update(&self.path.to_le_bytes());
        h.update(label.as_bytes());
        h.update(&[0x02]);
        StreamKey { seed: self.seed, path: h.digest128() }
    }

    /// The seed this key was built from.
    pub fn seed(&self) -> u64 {
        self.seed
    }

    /// The stream this key addresses, positioned at its first number.
    pub fn stream(&self) -> Stream {
        Stream::from_parts(self.seed, self.path)
    }
}

/// A counter-based random number stream (Philox4x32-10).
///
/// Implements [`RngCore`], so every `rand_distr` distribution works on it.
/// Build one from a [`StreamKey`]; see the [module documentation](self).
#[derive(Clone, Debug)]
pub struct Stream {
    key: [u32; 2],
    counter: [u32; 4],
    buf: [u32; 4],
    /// Index of the next unused word of `buf` (4 = empty).
    next: usize,
}

impl Stream {
    fn from_parts(seed: u64, path: u128) -> Self {
        let key = [seed as u32, (seed >> 32) as u32];
        let hi = path >> 32; // upper 96 bits of the hash
        let counter = [0, hi as u32, (hi >> 32) as u32, (hi >> 64) as u32];
        Stream { key, counter, buf: [0; 4], next: 4 }
    }

    /// The conventional per-rank substream: one long stream per (seed, rank).
    ///
    /// **Not rank-count independent**: what an entity draws depends on which
    /// rank owns it and in which order that rank visits its entities. Use it
    /// only for draws that do not enter the model's result (load-balancing
    /// jitter, sampling for diagnostics); use [`StreamKey`] for everything else.
    pub fn for_rank(seed: u64, rank: usize) -> Self {
        StreamKey::new(seed).purpose("parsim.per-rank").with(rank as u64).stream()
    }

    /// Jumps ahead by `blocks` blocks of four `u32` values (each `next_u64`
    /// uses two words), without generating them. Discards any buffered words.
    pub fn jump(&mut self, blocks: u32) {
        self.counter[0] = self.counter[0]
            .checked_add(blocks)
            .expect("parsim random stream exhausted (2^32 blocks); use more coordinates");
        self.next = 4;
    }

    #[inline]
    fn refill(&mut self) {
        self.buf = philox4x32(self.counter, self.key, 10);
        self.counter[0] =
            self.counter[0].checked_add(1).expect("parsim random stream exhausted (2^32 blocks); use more coordinates");
        self.next = 0;
    }

    /// A uniform `f64` in [0, 1) with 53 random bits.
    #[inline]
    pub fn uniform(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 * (1.0 / (1u64 << 53) as f64)
    }

    /// A uniform integer in `0..n` without modulo bias (Lemire's method).
    ///
    /// # Panics
    /// If `n == 0`.
    #[inline]
    pub fn below(&mut self, n: u64) -> u64 {
        assert!(n > 0, "Stream::below(0)");
        let threshold = n.wrapping_neg() % n;
        loop {
            let m = u128::from(self.next_u64()) * u128::from(n);
            if (m as u64) >= threshold {
                return (m >> 64) as u64;
            }
        }
    }

    /// A uniform integer in `lo..=hi`.
    ///
    /// # Panics
    /// If `lo > hi`.
    pub fn range_inclusive(&mut self, lo: u64, hi: u64) -> u64 {
        assert!(lo <= hi, "Stream::range_inclusive({lo}, {hi})");
        match (hi - lo).checked_add(1) {
            Some(n) => lo + self.below(n),
            None => self.next_u64(),
        }
    }

    /// `true` with probability `p` (clamped to [0, 1]).
    #[inline]
    pub fn bernoulli(&mut self, p: f64) -> bool {
        self.uniform() < p
    }

    /// An exponential variate with `rate` λ (mean 1/λ): inter-arrival and
    /// service times. One 53-bit uniform, by inversion.
    ///
    /// # Panics
    /// If `rate` is not positive and finite.
    ///
    /// ```
    /// let mut s = parsim_core::rng::StreamKey::new(1).stream();
    /// let mean = (0..100_000).map(|_| s.exponential(2.0)).sum::<f64>() / 100_000.0;
    /// assert!((mean - 0.5).abs() < 0.01);
    /// ```
    #[inline]
    pub fn exponential(&mut self, rate: f64) -> f64 {
        assert!(rate > 0.0 && rate.is_finite(), "Stream::exponential: rate must be > 0 and finite, got {rate}");
        -(1.0 - self.uniform()).ln() / rate
    }

    /// A normal variate with `mean` and standard deviation `sd` (`rand_distr`'s ziggurat).
    ///
    /// # Panics
    /// If `sd` is negative or not finite.
    pub fn normal(&mut self, mean: f64, sd: f64) -> f64 {
        use rand_distr::Distribution;
        let d = rand_distr::Normal::new(mean, sd).unwrap_or_else(|e| panic!("Stream::normal({mean}, {sd}): {e}"));
        d.sample(self)
    }

    /// A Poisson count with `mean` (`rand_distr`; 0 for a mean of 0).
    ///
    /// # Panics
    /// If `mean` is negative or not finite.
    pub fn poisson(&mut self, mean: f64) -> u64 {
        use rand_distr::Distribution;
        if mean == 0.0 {
            return 0;
        }
        let d = rand_distr::Poisson::new(mean).unwrap_or_else(|e| panic!("Stream::poisson({mean}): {e}"));
        d.sample(self) as u64
    }

    /// An index drawn with probability proportional to `weights` (one
    /// uniform, a linear scan: for a few categories; build a
    /// `rand_distr::weighted::WeightedAliasIndex` for many).
    ///
    /// # Panics
    /// If `weights` is empty, has a negative or non-finite entry, or sums to 0.
    ///
    /// ```
    /// let mut s = parsim_core::rng::StreamKey::new(7).stream();
    /// let mut n = [0u32; 3];
    /// for _ in 0..30_000 { n[s.categorical(&[1.0, 2.0, 0.0])] += 1; }
    /// assert_eq!(n[2], 0);
    /// assert!((n[1] as f64 / n[0] as f64 - 2.0).abs() < 0.1);
    /// ```
    pub fn categorical(&mut self, weights: &[f64]) -> usize {
        let total: f64 = weights.iter().sum();
        assert!(
            !weights.is_empty() && weights.iter().all(|w| *w >= 0.0 && w.is_finite()) && total > 0.0,
            "Stream::categorical: weights must be finite, ≥ 0 and not all 0"
        );
        let mut u = self.uniform() * total;
        for (i, w) in weights.iter().enumerate() {
            if u < *w {
                return i;
            }
            u -= w;
        }
        // Rounding: the last category with any weight.
        weights.iter().rposition(|w| *w > 0.0).unwrap_or(0)
    }
}

impl RngCore for Stream {
    #[inline]
    fn next_u32(&mut self) -> u32 {
        if self.next >= 4 {
            self.refill();
        }
        let v = self.buf[self.next];
        self.next += 1;
        v
    }

    #[inline]
    fn next_u64(&mut self) -> u64 {
        let lo = self.next_u32();
        let hi = self.next_u32();
        u64::from(lo) | (u64::from(hi) << 32)
    }

    fn fill_bytes(&mut self, dst: &mut [u8]) {
        let mut chunks = dst.chunks_exact_mut(4);
        for chunk in &mut chunks {
            chunk.copy_from_slice(&self.next_u32().to_le_bytes());
        }
        let rest = chunks.into_remainder();
        if !rest.is_empty() {
            let w = self.next_u32().to_le_bytes();
            rest.copy_from_slice(&w[..rest.len()]);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Random123 `tests/kat_vectors`, the three `philox4x32 10` lines:
    /// counter (4 words), key (2 words), expected output (4 words).
    const KAT_10: [([u32; 4], [u32; 2], [u32; 4]); 3] = [
        ([0, 0, 0, 0], [0, 0], [0x6627_e8d5, 0xe169_c58d, 0xbc57_ac4c, 0x9b00_dbd8]),
        ([u32::MAX; 4], [u32::MAX; 2], [0x408f_276d, 0x41c8_3b0e, 0xa20b_c7c6, 0x6d54_51fd]),
        (
            [0x243f_6a88, 0x85a3_08d3, 0x1319_8a2e, 0x0370_7344],
            [0xa409_3822, 0x299f_31d0],
            [0xd16c_fe09, 0x94fd_cceb, 0x5001_e420, 0x2412_6ea1],
        ),
    ];

    #[test]
    fn philox4x32_10_known_answer_vectors() {
        for (ctr, key, want) in KAT_10 {
            assert_eq!(philox4x32(ctr, key, 10), want, "ctr {ctr:08x?} key {key:08x?}");
        }
    }

    #[test]
    fn philox4x32_7_known_answer_vector() {
        // Random123 kat_vectors: philox4x32 7, the pi-digits line.
        let out = philox4x32([0x243f_6a88, 0x85a3_08d3, 0x1319_8a2e, 0x0370_7344], [0xa409_3822, 0x299f_31d0], 7);
        assert_eq!(out, [0x4dfc_caba, 0x190a_87f0, 0xc473_62ba, 0xb6b5_242a]);
    }

    #[test]
    fn stream_words_are_philox_blocks_in_counter_order() {
        let key = StreamKey::new(0x0123_4567_89ab_cdef).with(5);
        let mut s = key.stream();
        let (k, c) = (s.key, s.counter);
        let b0 = philox4x32(c, k, 10);
        let b1 = philox4x32([1, c[1], c[2], c[3]], k, 10);
        let got: Vec<u32> = (0..8).map(|_| s.next_u32()).collect();
        assert_eq!(&got[..4], &b0);
        assert_eq!(&got[4..], &b1);
    }

    #[test]
    fn same_key_same_numbers_different_key_different_numbers() {
        let a: Vec<u64> = {
            let mut s = StreamKey::new(1).purpose("x").with(10).stream();
            (0..16).map(|_| s.next_u64()).collect()
        };
        let b: Vec<u64> = {
            let mut s = StreamKey::new(1).purpose("x").with(10).stream();
            (0..16).map(|_| s.next_u64()).collect()
        };
        let c: Vec<u64> = {
            let mut s = StreamKey::new(1).purpose("x").with(11).stream();
            (0..16).map(|_| s.next_u64()).collect()
        };
        let d: Vec<u64> = {
            let mut s = StreamKey::new(1).purpose("y").with(10).stream();
            (0..16).map(|_| s.next_u64()).collect()
        };
        assert_eq!(a, b);
        assert_ne!(a, c);
        assert_ne!(a, d);
    }

    #[test]
    fn purpose_hashes_path_label_and_marker() {
        // The streamed hash equals the one-shot hash of the same bytes.
        let k = StreamKey::new(3).with(9);
        let mut buf = k.path.to_le_bytes().to_vec();
        buf.extend_from_slice(b"infect");
        buf.push(0x02);
        assert_eq!(k.purpose("infect").path, xxh3_128(&buf));
    }

    #[test]
    fn jump_skips_blocks() {
        let key = StreamKey::new(9).with(1);
        let mut a = key.stream();
        for _ in 0..12 {
            a.next_u32();
        }
        let mut b = key.stream();
        b.jump(3);
        assert_eq!(a.next_u32(), b.next_u32());
    }

    #[test]
    fn below_is_in_range_and_roughly_uniform() {
        let mut s = StreamKey::new(3).stream();
        let mut counts = [0u32; 7];
        for _ in 0..70_000 {
            counts[s.below(7) as usize] += 1;
        }
        for c in counts {
            assert!((9_000..11_000).contains(&c), "{counts:?}");
        }
        assert_eq!(s.range_inclusive(5, 5), 5);
        let mut t = StreamKey::new(3).stream();
        let _ = t.range_inclusive(0, u64::MAX);
    }

    #[test]
    fn uniform_mean_is_one_half() {
        let mut s = StreamKey::new(11).stream();
        let n = 200_000;
        let mean: f64 = (0..n).map(|_| s.uniform()).sum::<f64>() / f64::from(n);
        assert!((mean - 0.5).abs() < 0.005, "{mean}");
    }

    #[test]
    fn rand_distr_distributions_work_on_streams() {
        use rand_distr::{Distribution, Exp, Normal};
        let mut s = StreamKey::new(5).purpose("distr").stream();
        let exp = Exp::new(2.0).expect("valid rate");
        let n = 100_000;
        let mean: f64 = (0..n).map(|_| exp.sample(&mut s)).sum::<f64>() / f64::from(n);
        assert!((mean - 0.5).abs() < 0.01, "{mean}");
        let normal = Normal::new(3.0, 1.0).expect("valid sigma");
        let m: f64 = (0..n).map(|_| normal.sample(&mut s)).sum::<f64>() / f64::from(n);
        assert!((m - 3.0).abs() < 0.02, "{m}");
    }

    #[test]
    fn fill_bytes_matches_words() {
        let mut a = StreamKey::new(8).stream();
        let mut b = a.clone();
        let mut bytes = [0u8; 10];
        a.fill_bytes(&mut bytes);
        let w0 = b.next_u32().to_le_bytes();
        let w1 = b.next_u32().to_le_bytes();
        let w2 = b.next_u32().to_le_bytes();
        assert_eq!(&bytes[..4], &w0);
        assert_eq!(&bytes[4..8], &w1);
        assert_eq!(&bytes[8..], &w2[..2]);
    }

    #[test]
    fn per_rank_streams_differ() {
        let mut a = Stream::for_rank(1, 0);
        let mut b = Stream::for_rank(1, 1);
        assert_ne!(a.next_u64(), b.next_u64());
    }
}
