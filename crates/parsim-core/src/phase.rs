//! The phase clock: where each rank's time went.
//!
//! Every rank owns one [`PhaseClock`]. At any instant the rank is in exactly
//! one [`Phase`]; switching phases charges the elapsed time to the phase being
//! left, so the phases of a rank add up to its wall time. The `Comm`
//! implementations switch to [`Phase::Comm`] and [`Phase::Wait`] themselves;
//! engines mark [`Phase::Io`] and [`Phase::Serial`] sections; everything else
//! is [`Phase::Compute`].
//!
//! ```
//! use parsim_core::{Phase, PhaseClock};
//!
//! let clock = PhaseClock::new(1);
//! {
//!     let _io = clock.enter(Phase::Io); // charged to `io` until dropped
//!     // … write a file …
//! }
//! clock.count("events", 10);
//! let report = clock.report();
//! assert_eq!(report.counters["events"], 10);
//! assert!(report.phases_s.io >= 0.0);
//! ```

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, AtomicU8, Ordering};
use std::sync::Mutex;
use std::time::Instant;

use serde::{Deserialize, Serialize};

use crate::trace::{Span, Trace};

/// What a rank is doing.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Phase {
    /// Model work: updating cells, handling events, running agents.
    Compute = 0,
    /// Moving data: packing, posting and copying messages, running collectives.
    Comm = 1,
    /// Idle: blocked in a receive, a barrier or a request wait.
    Wait = 2,
    /// Reading and writing files.
    Io = 3,
    /// Work done by one rank while the others cannot proceed (setup, gathering output).
    Serial = 4,
}

impl Phase {
    /// All phases, in report order.
    pub const ALL: [Phase; 5] = [Phase::Compute, Phase::Comm, Phase::Wait, Phase::Io, Phase::Serial];

    /// The phase's lower-case name, as used in `summary.json` and traces.
    pub fn name(self) -> &'static str {
        match self {
            Phase::Compute => "compute",
            Phase::Comm => "comm",
            Phase::Wait => "wait",
            Phase::Io => "io",
            Phase::Serial => "serial",
        }
    }

    fn from_index(i: u8) -> Phase {
        Phase::ALL[usize::from(i).min(4)]
    }
}

/// Seconds per phase for one rank.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct PhaseTimes {
    /// Seconds in [`Phase::Compute`].
    pub compute: f64,
    /// Seconds in [`Phase::Comm`].
    pub comm: f64,
    /// Seconds in [`Phase::Wait`].
    pub wait: f64,
    /// Seconds in [`Phase::Io`].
    pub io: f64,
    /// Seconds in [`Phase::Serial`].
    pub serial: f64,
}

impl PhaseTimes {
    /// Seconds in phase `p`.
    pub fn get(&self, p: Phase) -> f64 {
        match p {
            Phase::Compute => self.compute,
            Phase::Comm => self.comm,
            Phase::Wait => self.wait,
            Phase::Io => self.io,
            Phase::Serial => self.serial,
        }
    }

    /// The sum over all phases (the rank's measured wall time).
    pub fn total(&self) -> f64 {
        Phase::ALL.iter().map(|&p| self.get(p)).sum()
    }
}

/// Message counters towards one peer rank.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct PeerTraffic {
    /// Messages sent to the peer.
    pub messages_sent: u64,
    /// Payload bytes sent to the peer.
    pub bytes_sent: u64,
    /// Messages received from the peer.
    pub messages_received: u64,
    /// Payload bytes received from the peer.
    pub bytes_received: u64,
}

/// A snapshot of one rank's clock: phase times, traffic and counters.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct PhaseReport {
    /// Seconds per phase.
    pub phases_s: PhaseTimes,
    /// Point-to-point traffic per peer (indexed by world rank).
    pub peers: Vec<PeerTraffic>,
    /// Named counters (`events`, `rollbacks` …) added by engines.
    pub counters: BTreeMap<String, u64>,
    /// The phase times when the model marked the end of its setup
    /// ([`PhaseClock::end_setup`]: construction, reading, partitioning),
    /// if it did; the simulation's own are `phases_s` less these.
    #[serde(default)]
    pub setup_s: Option<PhaseTimes>,
}

impl PhaseReport {
    /// Traffic summed over all peers.
    pub fn traffic(&self) -> PeerTraffic {
        self.peers.iter().fold(PeerTraffic::default(), |a, p| PeerTraffic {
            messages_sent: a.messages_sent + p.messages_sent,
            bytes_sent: a.bytes_sent + p.bytes_sent,
            messages_received: a.messages_received + p.messages_received,
            bytes_received: a.bytes_received + p.bytes_received,
        })
    }
}

#[derive(Default)]
struct PeerCells {
    messages_sent: AtomicU64,
    bytes_sent: AtomicU64,
    messages_received: AtomicU64,
    bytes_received: AtomicU64,
}

/// Adds to a counter that only the rank's own thread writes: a plain load
/// and store (no locked read-modify-write) keeps message accounting cheap.
/// Readers on other threads see a consistent, possibly slightly old, value.
#[inline]
fn bump(c: &AtomicU64, n: u64) {
    c.store(c.load(Ordering::Relaxed).wrapping_add(n), Ordering::Relaxed);
}

/// Most spans a rank keeps for its trace; later ones are counted, not kept.
const MAX_SPANS: usize = 1 << 20;

struct TraceBuf {
    spans: Vec<Span>,
    dropped: u64,
}

/// Per-rank accumulated time in each [`Phase`], plus traffic and counters.
///
/// The clock belongs to one rank's thread: phase switches and traffic
/// counters must be made from it (they are single-writer); [`count`](Self::count)
/// and [`report`](Self::report) may be called from any thread. Methods take
/// `&self` so the communicator and the engine can share it.
pub struct PhaseClock {
    epoch: Instant,
    current: AtomicU8,
    since_ns: AtomicU64,
    totals_ns: [AtomicU64; 5],
    peers: Vec<PeerCells>,
    counters: Mutex<BTreeMap<String, u64>>,
    setup: Mutex<Option<PhaseTimes>>,
    trace: Option<Mutex<TraceBuf>>,
}

impl std::fmt::Debug for PhaseClock {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PhaseClock").field("report", &self.report()).finish()
    }
}

impl PhaseClock {
    /// A clock for a rank of a world of `world_size` ranks, starting now in
    /// [`Phase::Compute`], without tracing.
    pub fn new(world_size: usize) -> Self {
        Self::build(world_size, Instant::now(), false)
    }

    /// A clock whose time zero is `epoch` (shared by all ranks of a process
    /// so their traces line up), recording trace spans when `trace` is true.
    pub fn with_epoch(world_size: usize, epoch: Instant, trace: bool) -> Self {
        Self::build(world_size, epoch, trace)
    }

    fn build(world_size: usize, epoch: Instant, trace: bool) -> Self {
        let now = epoch.elapsed().as_nanos() as u64;
        PhaseClock {
            epoch,
            current: AtomicU8::new(Phase::Compute as u8),
            since_ns: AtomicU64::new(now),
            totals_ns: Default::default(),
            peers: (0..world_size).map(|_| PeerCells::default()).collect(),
            counters: Mutex::new(BTreeMap::new()),
            setup: Mutex::new(None),
            trace: trace.then(|| Mutex::new(TraceBuf { spans: Vec::new(), dropped: 0 })),
        }
    }

    /// Turns trace recording on (from now) or off.
    pub fn set_tracing(&mut self, on: bool) {
        self.trace = on.then(|| Mutex::new(TraceBuf { spans: Vec::new(), dropped: 0 }));
    }

    fn now_ns(&self) -> u64 {
        self.epoch.elapsed().as_nanos() as u64
    }

    /// The phase the rank is in now.
    pub fn current(&self) -> Phase {
        Phase::from_index(self.current.load(Ordering::Relaxed))
    }

    /// Switches to `p`, charging the time since the last switch to the phase
    /// being left. Returns that phase.
    pub fn switch(&self, p: Phase) -> Phase {
        let prev = self.current();
        if prev == p {
            return prev;
        }
        let now = self.now_ns();
        let since = self.since_ns.swap(now, Ordering::Relaxed);
        let dt = now.saturating_sub(since);
        bump(&self.totals_ns[prev as usize], dt);
        if let Some(t) = &self.trace {
            if dt > 0 {
                let mut guard = t.lock().unwrap_or_else(|e| e.into_inner());
                let t = &mut *guard;
                let full = t.spans.len() >= MAX_SPANS;
                match t.spans.last_mut() {
                    Some(last) if last.phase == prev && last.end_ns == since => last.end_ns = now,
                    _ if full => t.dropped += 1,
                    _ => t.spans.push(Span { phase: prev, start_ns: since, end_ns: now }),
                }
            }
        }
        self.current.store(p as u8, Ordering::Relaxed);
        prev
    }

    /// Enters phase `p` until the returned guard is dropped, when the clock
    /// returns to the phase it was in before.
    pub fn enter(&self, p: Phase) -> PhaseGuard<'_> {
        let prev = self.switch(p);
        PhaseGuard { clock: self, prev }
    }

    /// Runs `f` in phase `p`.
    pub fn in_phase<R>(&self, p: Phase, f: impl FnOnce() -> R) -> R {
        let _g = self.enter(p);
        f()
    }

    /// Counts one message of `bytes` payload bytes sent to `peer` (a world rank).
    #[inline]
    pub fn sent(&self, peer: usize, bytes: usize) {
        if let Some(c) = self.peers.get(peer) {
            bump(&c.messages_sent, 1);
            bump(&c.bytes_sent, bytes as u64);
        }
    }

    /// Counts one message of `bytes` payload bytes received from `peer` (a world rank).
    #[inline]
    pub fn received(&self, peer: usize, bytes: usize) {
        if let Some(c) = self.peers.get(peer) {
            bump(&c.messages_received, 1);
            bump(&c.bytes_received, bytes as u64);
        }
    }

    /// Adds `n` to the named counter.
    pub fn count(&self, name: &str, n: u64) {
        let mut c = self.counters.lock().unwrap_or_else(|e| e.into_inner());
        *c.entry(name.to_string()).or_insert(0) += n;
    }

    /// Marks the end of the model's setup (building or reading the model,
    /// partitioning it): the phase times so far are kept and reported as
    /// [`PhaseReport::setup_s`], so a scaling study can tell setup from
    /// simulation. Only the first call counts.
    ///
    /// ```
    /// use parsim_core::PhaseClock;
    /// let clock = PhaseClock::new(1);
    /// clock.end_setup();
    /// let r = clock.report();
    /// let setup = r.setup_s.expect("marked");
    /// assert!(setup.total() <= r.phases_s.total());
    /// ```
    pub fn end_setup(&self) {
        let mut s = self.setup.lock().unwrap_or_else(|e| e.into_inner());
        if s.is_none() {
            *s = Some(self.times());
        }
    }

    /// Phase times (including the phase running now).
    fn times(&self) -> PhaseTimes {
        let mut ns: Vec<u64> = self.totals_ns.iter().map(|t| t.load(Ordering::Relaxed)).collect();
        let running = self.now_ns().saturating_sub(self.since_ns.load(Ordering::Relaxed));
        ns[self.current() as usize] += running;
        let s = |p: Phase| ns[p as usize] as f64 * 1e-9;
        PhaseTimes {
            compute: s(Phase::Compute),
            comm: s(Phase::Comm),
            wait: s(Phase::Wait),
            io: s(Phase::Io),
            serial: s(Phase::Serial),
        }
    }

    /// Phase times (including the phase running now), traffic and counters.
    pub fn report(&self) -> PhaseReport {
        PhaseReport {
            phases_s: self.times(),
            peers: self
                .peers
                .iter()
                .map(|c| PeerTraffic {
                    messages_sent: c.messages_sent.load(Ordering::Relaxed),
                    bytes_sent: c.bytes_sent.load(Ordering::Relaxed),
                    messages_received: c.messages_received.load(Ordering::Relaxed),
                    bytes_received: c.bytes_received.load(Ordering::Relaxed),
                })
                .collect(),
            counters: self.counters.lock().unwrap_or_else(|e| e.into_inner()).clone(),
            setup_s: *self.setup.lock().unwrap_or_else(|e| e.into_inner()),
        }
    }

    /// The spans recorded so far for rank `rank` (empty when tracing is off),
    /// closing the running phase at the current instant.
    pub fn trace(&self, rank: usize) -> Trace {
        let Some(t) = &self.trace else {
            return Trace { rank, spans: Vec::new(), dropped: 0 };
        };
        let t = t.lock().unwrap_or_else(|e| e.into_inner());
        let mut spans = t.spans.clone();
        let since = self.since_ns.load(Ordering::Relaxed);
        let now = self.now_ns();
        let cur = self.current();
        match spans.last_mut() {
            Some(last) if last.phase == cur && last.end_ns == since => last.end_ns = now,
            _ if now > since => spans.push(Span { phase: cur, start_ns: since, end_ns: now }),
            _ => {}
        }
        Trace { rank, spans, dropped: t.dropped }
    }
}

/// Returns the clock to its previous phase when dropped. See [`PhaseClock::enter`].
#[must_use = "the phase ends when the guard is dropped"]
pub struct PhaseGuard<'a> {
    clock: &'a PhaseClock,
    prev: Phase,
}

impl Drop for PhaseGuard<'_> {
    fn drop(&mut self) {
        self.clock.switch(self.prev);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn phases_add_up_and_nest() {
        let clock = PhaseClock::with_epoch(2, Instant::now(), true);
        {
            let _io = clock.enter(Phase::Io);
            std::thread::sleep(Duration::from_millis(20));
            {
                let _w = clock.enter(Phase::Wait);
                std::thread::sleep(Duration::from_millis(20));
            }
            assert_eq!(clock.current(), Phase::Io);
        }
        assert_eq!(clock.current(), Phase::Compute);
        let r = clock.report();
        assert!(r.phases_s.io >= 0.019 && r.phases_s.io < 0.2, "{r:?}");
        assert!(r.phases_s.wait >= 0.019, "{r:?}");
        let tr = clock.trace(0);
        let names: Vec<Phase> = tr.spans.iter().map(|s| s.phase).collect();
        assert!(names.contains(&Phase::Io) && names.contains(&Phase::Wait), "{names:?}");
        for w in tr.spans.windows(2) {
            assert!(w[0].end_ns <= w[1].start_ns);
        }
    }

    #[test]
    fn traffic_and_counters() {
        let clock = PhaseClock::new(3);
        clock.sent(1, 100);
        clock.sent(1, 20);
        clock.received(2, 7);
        clock.sent(99, 1); // out of range: ignored
        clock.count("events", 3);
        clock.count("events", 4);
        let r = clock.report();
        assert_eq!(r.peers[1].messages_sent, 2);
        assert_eq!(r.peers[1].bytes_sent, 120);
        assert_eq!(r.traffic().messages_received, 1);
        assert_eq!(r.counters["events"], 7);
    }
}
