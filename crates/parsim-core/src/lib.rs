//! # parsim-core
//!
//! The foundations every parsim engine stands on, independent of how ranks
//! communicate:
//!
//! - [`rng`]: counter-based random streams (Philox4x32-10) addressed by *what*
//!   is drawn — `(seed, replication, entity, step, purpose …)` — never by who
//!   draws it, so results do not depend on the number of ranks;
//! - [`ExactSum`]: a reproducible floating-point sum, bitwise independent of
//!   order and of how values are split between ranks;
//! - [`PhaseClock`]: per-rank time in `compute`, `comm`, `wait`, `io`, `serial`,
//!   message traffic per peer, named counters, and [`trace`] export for
//!   Perfetto / `chrome://tracing`;
//! - [`Digester`]: the 128-bit digest of a run's canonical final state;
//! - [`wire`]: the serde encoding used for irregular messages.
//!
//! ```
//! use parsim_core::{rng::StreamKey, Digester, ExactSum};
//!
//! // Each entity draws from its own stream, whichever rank owns it.
//! let mut total = ExactSum::new();
//! let mut digest = Digester::new();
//! for entity in 0..100u64 {
//!     let x = StreamKey::new(7).purpose("demo").with(entity).stream().uniform();
//!     total.add(x);
//!     digest.write_f64(x);
//! }
//! println!("sum {} digest {}", total.value(), digest.finish());
//! ```
//!
//! Guarantees: the same key gives the same numbers on every machine; the exact
//! sum is correctly rounded; clocks charge every nanosecond of a rank to
//! exactly one phase.
#![deny(unsafe_code)]

mod digest;
mod exact_sum;
mod fixed_block;
pub mod io;
pub mod mem;
mod phase;
pub mod rng;
pub mod trace;
pub mod wire;

pub use digest::{Digest, Digester, SetDigest};
pub use exact_sum::{BlockSum, ExactSum};
pub use phase::{PeerTraffic, Phase, PhaseClock, PhaseGuard, PhaseReport, PhaseTimes};
pub use rng::{Stream, StreamKey};

/// Whether parsim's AVX2 builds may run: the CPU has AVX2 (checked once,
/// at run time) and `PARSIM_NO_AVX2` is unset, empty or `0`. Every AVX2
/// path (the exact sums here, the grid's row kernels) asks this, so one
/// variable turns them all off to compare; their results are the same bits.
///
/// ```
/// let on = parsim_core::avx2();
/// assert_eq!(on, parsim_core::avx2()); // decided once per process
/// ```
#[cfg(target_arch = "x86_64")]
pub fn avx2() -> bool {
    use std::sync::OnceLock;
    static ON: OnceLock<bool> = OnceLock::new();
    *ON.get_or_init(|| {
        std::arch::is_x86_feature_detected!("avx2")
            && std::env::var_os("PARSIM_NO_AVX2").is_none_or(|v| v.is_empty() || v == "0")
    })
}

/// Errors of `parsim-core`.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum CoreError {
    /// A value could not be encoded for the wire.
    #[error("cannot encode a message: {msg}")]
    Encode {
        /// The encoder's message.
        msg: String,
    },
    /// Received bytes are not a valid encoding of the expected type.
    #[error("cannot decode a {len}-byte message as {ty}: {msg}")]
    Decode {
        /// The decoder's message.
        msg: String,
        /// Length of the received message.
        len: usize,
        /// The type that was expected.
        ty: &'static str,
    },
}
