//! Run digests: a 128-bit xxh3 hash of a run's canonical final state.
//!
//! Engines feed a [`Digester`] with their state in a canonical order (by
//! global id, never by rank-local index), so equal digests mean equal results.
//!
//! ```
//! use parsim_core::Digester;
//!
//! let mut d = Digester::new();
//! d.write_u64(42);
//! d.write_f64(0.5);
//! let digest = d.finish();
//! assert_eq!(digest.to_string().len(), 32);
//! assert_eq!(digest.to_string().parse::<parsim_core::Digest>().ok(), Some(digest));
//! ```

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};
use xxhash_rust::xxh3::Xxh3;

/// A 128-bit digest, shown as 32 lower-case hex digits.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub struct Digest(pub u128);

impl fmt::Display for Digest {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:032x}", self.0)
    }
}

impl FromStr for Digest {
    type Err = std::num::ParseIntError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        u128::from_str_radix(s, 16).map(Digest)
    }
}

/// An incremental hasher for [`Digest`]s (xxh3-128, streaming).
#[derive(Clone)]
pub struct Digester(Xxh3);

impl Default for Digester {
    fn default() -> Self {
        Self::new()
    }
}

impl fmt::Debug for Digester {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Digester")
    }
}

impl Digester {
    /// An empty hasher.
    pub fn new() -> Self {
        Digester(Xxh3::new())
    }

    /// Feeds raw bytes.
    pub fn write_bytes(&mut self, b: &[u8]) {
        self.0.update(b);
    }

    /// Feeds a `u64` (little-endian).
    pub fn write_u64(&mut self, x: u64) {
        self.0.update(&x.to_le_bytes());
    }

    /// Feeds an `i64` (little-endian).
    pub fn write_i64(&mut self, x: i64) {
        self.0.update(&x.to_le_bytes());
    }

    /// Feeds an `f64` by its bit pattern (so -0.0 and 0.0 differ, as they do in state).
    pub fn write_f64(&mut self, x: f64) {
        self.0.update(&x.to_bits().to_le_bytes());
    }

    /// Feeds a string with its length, so concatenations cannot collide.
    pub fn write_str(&mut self, s: &str) {
        self.write_u64(s.len() as u64);
        self.0.update(s.as_bytes());
    }

    /// The digest of everything fed so far.
    pub fn finish(&self) -> Digest {
        Digest(self.0.digest128())
    }
}

/// An order-independent digest of a set of `(key, value)` pairs: each pair is
/// mixed into 128 pseudo-random bits and the results are added (wrapping).
///
/// Each rank digests the cells, agents or vertices it owns, keyed by global
/// id; the sum of the parts (an integer reduction) is the digest of the
/// whole, whatever the partition and the visiting order.
///
/// ```
/// use parsim_core::SetDigest;
///
/// let mut a = SetDigest::new();
/// a.add(1, 10);
/// a.add(2, 20);
/// let (mut b, mut c) = (SetDigest::new(), SetDigest::new());
/// b.add(2, 20);
/// c.add(1, 10);
/// b.merge(&c);
/// assert_eq!(a, b);
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct SetDigest {
    /// The running sum, as two 64-bit halves (so it can be summed with `u64` reductions).
    pub parts: [u64; 2],
}

#[inline]
fn mix64(mut x: u64) -> u64 {
    // splitmix64's finaliser: a bijection with full avalanche.
    x = (x ^ (x >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    x = (x ^ (x >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    x ^ (x >> 31)
}

impl SetDigest {
    /// The digest of the empty set.
    pub fn new() -> Self {
        SetDigest::default()
    }

    /// Adds one pair.
    #[inline]
    pub fn add(&mut self, key: u64, value: u64) {
        let k = mix64(key ^ 0x243f_6a88_85a3_08d3);
        let lo = mix64(k ^ value);
        let hi = mix64(lo ^ k.rotate_left(17) ^ 0x1319_8a2e_0370_7344);
        let (s, carry) = self.parts[0].overflowing_add(lo);
        self.parts[0] = s;
        self.parts[1] = self.parts[1].wrapping_add(hi).wrapping_add(u64::from(carry));
    }

    /// Adds another partial digest.
    pub fn merge(&mut self, o: &SetDigest) {
        let (s, carry) = self.parts[0].overflowing_add(o.parts[0]);
        self.parts[0] = s;
        self.parts[1] = self.parts[1].wrapping_add(o.parts[1]).wrapping_add(u64::from(carry));
    }

    /// As a [`Digest`].
    pub fn finish(&self) -> Digest {
        Digest((u128::from(self.parts[1]) << 64) | u128::from(self.parts[0]))
    }
}
