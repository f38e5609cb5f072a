//! The model API: logical processes (LPs), events, and what an event handler
//! may do. A model is written once and runs unchanged on every engine.

use parsim_core::rng::{Stream, StreamKey};
use serde::de::DeserializeOwned;
use serde::Serialize;

use crate::error::DesError;
use crate::payload::Payload;

/// A logical process id, in `0..Model::lps()`.
pub type LpId = u32;

/// An event: delivered to `dest` at `time`, created by `src` as its `seq`-th send.
///
/// `(time, src, seq)` is unique and totally orders all events (see [`Order`]);
/// it never depends on which rank sent or received the event, nor when.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Event<P> {
    /// Receive (simulation) time.
    pub time: f64,
    /// The LP it is delivered to.
    pub dest: LpId,
    /// The LP that sent it (an LP's initial events are sent by itself).
    pub src: LpId,
    /// The sender's send counter when it sent this event (0, 1, 2 … per sender).
    pub seq: u64,
    /// The model's data.
    pub payload: P,
}

impl<P> Event<P> {
    /// The event's place in the total order.
    #[inline]
    pub fn order(&self) -> Order {
        Order { time: time_key(self.time), src: self.src, seq: self.seq }
    }
}

/// The total order of events: by time, then by the sender's id, then by the
/// sender's send counter. Every engine commits events in this order.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct Order {
    /// The time as order-preserving bits (see [`time_key`]).
    pub time: u64,
    /// Sending LP.
    pub src: LpId,
    /// Sender's send counter.
    pub seq: u64,
}

impl Order {
    /// Larger than every event's order.
    pub const MAX: Order = Order { time: u64::MAX, src: u32::MAX, seq: u64::MAX };

    /// The time this order stands for.
    pub fn time_f64(&self) -> f64 {
        time_from_key(self.time)
    }
}

/// Maps a finite `f64` to bits whose unsigned order is the numeric order.
#[inline]
pub fn time_key(t: f64) -> u64 {
    let b = (t + 0.0).to_bits(); // + 0.0 turns -0.0 into +0.0
    if b >> 63 == 0 {
        b | (1 << 63)
    } else {
        !b
    }
}

/// The inverse of [`time_key`].
#[inline]
pub fn time_from_key(k: u64) -> f64 {
    if k >> 63 == 1 {
        f64::from_bits(k & !(1 << 63))
    } else {
        f64::from_bits(!k)
    }
}

/// A discrete-event model: `lps()` logical processes, each with a `State`,
/// exchanging events that carry a `Payload`.
///
/// Handlers must be deterministic functions of (state, event, random stream):
/// optimistic engines execute an event again after a rollback and rely on it
/// producing the same result. Draw random numbers only from [`Ctx::rng`],
/// which is keyed by (seed, LP, the LP's own event count).
///
/// ```
/// use parsim_des::{Ctx, Event, LpId, Model, DesConfig, Engine};
///
/// /// Every LP forwards each event to its right neighbour after one time unit.
/// struct Relay;
/// impl Model for Relay {
///     type State = u64; // events seen
///     type Payload = u32; // hops so far
///     fn lps(&self) -> u32 { 8 }
///     fn lookahead(&self) -> f64 { 1.0 }
///     fn end_time(&self) -> f64 { 50.0 }
///     fn init(&self, lp: LpId, ctx: &mut Ctx<'_, u32>) -> u64 {
///         let delay = 1.0 + ctx.rng().uniform();
///         ctx.send(lp, delay, 0);
///         0
///     }
///     fn on_event(&self, seen: &mut u64, ev: &Event<u32>, ctx: &mut Ctx<'_, u32>) {
///         *seen += 1;
///         ctx.send((ev.dest + 1) % 8, 1.0, ev.payload + 1);
///     }
/// }
///
/// let seq = parsim_comm::launch(1, |comm| {
///     parsim_des::run(&comm, &Relay, &DesConfig::new(Engine::Sequential))
/// })?;
/// let tw = parsim_comm::launch(2, |comm| {
///     parsim_des::run(&comm, &Relay, &DesConfig::new(Engine::Optimistic))
/// })?;
/// assert_eq!(seq[0].total.committed, 8 * 49);
/// assert_eq!(seq[0].digest, tw[1].digest);
/// # Ok::<(), parsim_comm::CommError>(())
/// ```
pub trait Model: Sync {
    /// An LP's state: cloned for state saving, serialisable for checkpoints.
    type State: Clone + Send + Serialize + DeserializeOwned;
    /// What an event carries: plain data (a [`bytemuck::Pod`] type, copied
    /// into messages as bytes: the fast path) or [`Serde<T>`](crate::Serde)
    /// for any `Clone` serde type (enums with data, strings, vectors).
    type Payload: Payload;

    /// The number of LPs.
    fn lps(&self) -> u32;
    /// The smallest delay of any send to another LP (> 0 for the
    /// conservative engines). Sends to the LP itself may have any delay >= 0.
    fn lookahead(&self) -> f64;
    /// Events at or after this time are not scheduled.
    fn end_time(&self) -> f64;
    /// Creates LP `lp`'s state at time 0; may send its initial events.
    fn init(&self, lp: LpId, ctx: &mut Ctx<'_, Self::Payload>) -> Self::State;
    /// Handles one event at LP `event.dest`.
    fn on_event(&self, state: &mut Self::State, event: &Event<Self::Payload>, ctx: &mut Ctx<'_, Self::Payload>);

    /// Called once per committed event, only when it can never be rolled
    /// back, in event order on each rank (all of a rank's committed events
    /// come in [`Order`]). The place for output and other irrevocable actions.
    fn on_commit(&self, _event: &Event<Self::Payload>) {}
    /// Whether [`on_commit`](Self::on_commit) does anything (engines skip the
    /// ordering work otherwise).
    fn wants_commits(&self) -> bool {
        false
    }

    /// Whether [`reverse`](Self::reverse) is implemented, so Time Warp can
    /// undo events by reverse computation instead of saving state.
    fn reversible(&self) -> bool {
        false
    }
    /// Undoes `event`'s effect on `state` (the exact inverse of `on_event`).
    /// Random draws need no undoing: they are keyed by the event count.
    fn reverse(&self, _state: &mut Self::State, _event: &Event<Self::Payload>) {
        unreachable!("Model::reverse called on a model whose reversible() is false")
    }

    /// Which rank owns each LP, for `ranks` ranks; `None` (the default) means
    /// contiguous blocks (LP i on rank ⌊i·ranks/N⌋). A partition from
    /// `parsim-partition` fits here.
    fn mapping(&self, _ranks: usize) -> Option<Vec<u32>> {
        None
    }
}

/// What an event handler may do: read the time, draw random numbers, send.
pub struct Ctx<'a, P> {
    pub(crate) now: f64,
    pub(crate) lp: LpId,
    pub(crate) lps: u32,
    pub(crate) min_delay: f64,
    pub(crate) end: f64,
    pub(crate) key: StreamKey,
    pub(crate) count: u64,
    pub(crate) rng: Option<Stream>,
    pub(crate) seq: u64,
    /// Sends not scheduled because they fell at or after the end time.
    pub(crate) dropped: u64,
    pub(crate) out: &'a mut Vec<Event<P>>,
    pub(crate) error: Option<DesError>,
    /// During `init` (time 0, no causing event): delays of 0 are allowed.
    pub(crate) initial: bool,
}

impl<'a, P: Clone> Ctx<'a, P> {
    pub(crate) fn new(lp: LpId, now: f64, key: StreamKey, count: u64, seq: u64, out: &'a mut Vec<Event<P>>) -> Self {
        Ctx {
            now,
            lp,
            lps: 0,
            min_delay: 0.0,
            end: f64::INFINITY,
            key,
            count,
            rng: None,
            seq,
            dropped: 0,
            out,
            error: None,
            initial: false,
        }
    }

    pub(crate) fn limits(mut self, lps: u32, min_delay: f64, end: f64) -> Self {
        (self.lps, self.min_delay, self.end) = (lps, min_delay, end);
        self
    }

    /// The current simulation time.
    #[inline]
    pub fn now(&self) -> f64 {
        self.now
    }

    /// The LP handling the event.
    #[inline]
    pub fn lp(&self) -> LpId {
        self.lp
    }

    /// The number of events this LP has handled before this one.
    #[inline]
    pub fn event_count(&self) -> u64 {
        self.count
    }

    /// This event's random stream, keyed by (seed, LP, event count): the same
    /// numbers every time the event is executed, on every engine.
    #[inline]
    pub fn rng(&mut self) -> &mut Stream {
        let (key, count) = (self.key, self.count);
        self.rng.get_or_insert_with(|| key.with(count).stream())
    }

    /// Schedules an event at `dest`, `delay` after now. Events at or after the
    /// model's end time are not scheduled. An invalid send stops the run with
    /// an error naming the LP, the time and the value: a negative, zero or
    /// non-finite delay (only `init` may send at delay 0), a delay below the
    /// lookahead to another LP on a conservative engine, an LP that does not
    /// exist.
    #[inline]
    pub fn send(&mut self, dest: LpId, delay: f64, payload: P) {
        let time = self.now + delay;
        let seq = self.seq;
        self.seq += 1;
        let advances = time > self.now || (self.initial && delay == 0.0);
        if !(advances && (delay >= self.min_delay || dest == self.lp) && time.is_finite() && dest < self.lps) {
            self.bad_send(dest, delay);
            return;
        }
        if time < self.end {
            self.out.push(Event { time, dest, src: self.lp, seq, payload });
        } else {
            self.dropped += 1;
        }
    }

    #[cold]
    fn bad_send(&mut self, dest: LpId, delay: f64) {
        let problem = if !delay.is_finite() {
            format!("a send with non-finite delay {delay}")
        } else if delay < 0.0 {
            format!("a send with negative delay {delay}")
        } else if delay == 0.0 || self.now + delay <= self.now {
            format!(
                "a send with delay {delay}, which does not advance the time {} (in floating point): an event must come \
                 strictly after the one that schedules it",
                self.now
            )
        } else if dest < self.lps && delay < self.min_delay {
            format!(
                "a send to LP {dest} with delay {delay}, below the declared lookahead {} (conservative engines \
                 need every send to another LP at least lookahead ahead)",
                self.min_delay
            )
        } else if dest >= self.lps {
            format!("a send to LP {dest}, but the model has {} LPs (0..{})", self.lps, self.lps)
        } else {
            format!("a send with delay {delay} whose time {} is not finite", self.now + delay)
        };
        if self.error.is_none() {
            self.error = Some(DesError::BadSend { lp: self.lp, time: self.now, problem });
        }
    }
}
