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
