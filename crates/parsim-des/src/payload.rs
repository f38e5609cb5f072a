//! What an event carries: plain data ([`bytemuck::Pod`], copied into
//! messages as its bytes: the fast path) or any serde type through
//! [`Serde`] (Rust enums included), encoded with postcard.

use std::ops::{Deref, DerefMut};

use bytemuck::Pod;
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};

/// An event payload: cloned by the engines where they keep a copy (a queue,
/// Time Warp's history — a plain copy for `Pod` types), and turned into
/// canonical bytes for messages, digests and cancellation (equal payloads
/// give equal bytes).
///
/// Implemented for every [`Pod`] type, and for [`Serde<T>`] for any `T` that
/// is `Clone` and serde-serialisable (strings, vectors and enums included).
pub trait Payload: Clone + Send + Sync + 'static {
    /// `Some(n)` when every payload is exactly `n` bytes on the wire (no
    /// length word is sent).
    const FIXED_SIZE: Option<usize>;

    /// Calls `f` with the payload's canonical bytes.
    fn with_bytes<R>(&self, f: impl FnOnce(&[u8]) -> R) -> R;

    /// Reads a payload from bytes given by [`with_bytes`](Self::with_bytes).
    ///
    /// # Panics
    /// If the bytes were not written by `with_bytes` of this type (a message
    /// from a different build of the model).
    fn from_bytes(bytes: &[u8]) -> Self;
}

impl<T: Pod + Send + Sync + 'static> Payload for T {
    const FIXED_SIZE: Option<usize> = Some(std::mem::size_of::<T>());

    #[inline]
    fn with_bytes<R>(&self, f: impl FnOnce(&[u8]) -> R) -> R {
        f(bytemuck::bytes_of(self))
    }

    #[inline]
    fn from_bytes(bytes: &[u8]) -> Self {
        bytemuck::pod_read_unaligned(&bytes[..std::mem::size_of::<T>()])
    }
}

/// A serde payload: any `Clone` type that serde can serialise — an enum of
/// event kinds with their data, say, strings and vectors included. (Each
/// send to another rank and each committed event pays a postcard encoding:
/// a `Pod` payload is the fast path.)
///
/// ```
/// use parsim_des::{Ctx, DesConfig, Engine, Event, LpId, Model, Serde};
/// use serde::{Deserialize, Serialize};
///
/// #[derive(Clone, Copy, Debug, Serialize, Deserialize)]
/// enum Msg { Ping { hops: u32 }, Pong }
///
/// struct PingPong;
/// impl Model for PingPong {
///     type State = u32; // pongs seen
///     type Payload = Serde<Msg>;
///     fn lps(&self) -> u32 { 4 }
///     fn lookahead(&self) -> f64 { 1.0 }
///     fn end_time(&self) -> f64 { 100.0 }
///     fn init(&self, lp: LpId, ctx: &mut Ctx<'_, Serde<Msg>>) -> u32 {
///         ctx.send(lp, 1.0, Serde(Msg::Ping { hops: 0 }));
///         0
///     }
///     fn on_event(&self, pongs: &mut u32, ev: &Event<Serde<Msg>>, ctx: &mut Ctx<'_, Serde<Msg>>) {
///         match *ev.payload {
///             Msg::Ping { hops } => {
///                 let delay = 1.0 + ctx.rng().uniform();
///                 ctx.send((ev.dest + 1) % 4, delay, Serde(Msg::Ping { hops: hops + 1 }));
///                 if hops % 10 == 9 {
///                     ctx.send(ev.dest, 0.5, Serde(Msg::Pong));
///                 }
///             }
///             Msg::Pong => *pongs += 1,
///         }
///     }
/// }
/// let seq = parsim_comm::launch(1, |c| parsim_des::run(&c, &PingPong, &DesConfig::new(Engine::Sequential)))?;
/// let tw = parsim_comm::launch(3, |c| parsim_des::run(&c, &PingPong, &DesConfig::new(Engine::Optimistic)))?;
/// assert_eq!(seq[0].digest, tw[0].digest);
/// # Ok::<(), parsim_comm::CommError>(())
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Default, Serialize, Deserialize)]
pub struct Serde<T>(pub T);

impl<T> Deref for Serde<T> {
    type Target = T;
    fn deref(&self) -> &T {
        &self.0
    }
}

impl<T> DerefMut for Serde<T> {
    fn deref_mut(&mut self) -> &mut T {
        &mut self.0
    }
}

impl<T: Clone + Send + Sync + Serialize + DeserializeOwned + 'static> Payload for Serde<T> {
    const FIXED_SIZE: Option<usize> = None;

    fn with_bytes<R>(&self, f: impl FnOnce(&[u8]) -> R) -> R {
        let bytes = postcard::to_stdvec(&self.0).expect("a serde payload serialises");
        f(&bytes)
    }

    fn from_bytes(bytes: &[u8]) -> Self {
        Serde(postcard::from_bytes(bytes).expect("a payload written by this model"))
    }
}
