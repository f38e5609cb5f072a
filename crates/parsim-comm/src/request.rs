//! Request handles for non-blocking operations, and waiting on several.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use parsim_core::{Phase, PhaseClock};

use crate::Result;

/// A non-blocking operation in progress: a send or a receive.
///
/// ```
/// use parsim_comm::{launch, wait_all, Comm, Request};
///
/// let sums = launch(2, |comm| {
///     let peer = 1 - comm.rank();
///     let recv = comm.irecv::<u64>(peer.into(), 5.into())?;
///     let send = comm.isend(peer, 5, vec![comm.rank() as u64; 3])?;
///     send.wait()?;
///     let msg = recv.wait()?;
///     Ok::<u64, parsim_comm::CommError>(msg.data.iter().sum())
/// })?;
/// assert_eq!(sums, vec![3, 0]);
/// # Ok::<(), parsim_comm::CommError>(())
/// ```
pub trait Request {
    /// What the operation yields when complete.
    type Output;

    /// Completes the operation if it can without blocking.
    ///
    /// Returns `Ok(None)` while it is pending. After it has returned
    /// `Ok(Some(_))`, further calls return [`CommError::AlreadyComplete`](crate::CommError::AlreadyComplete).
    fn test(&mut self) -> Result<Option<Self::Output>>;

    /// Blocks until the operation completes (or a peer fails).
    fn wait(self) -> Result<Self::Output>
    where
        Self: Sized;

    /// The clock idle time spent waiting on this request is charged to.
    fn clock(&self) -> &PhaseClock;
}

/// Waits for every request; outputs in the order of the input.
pub fn wait_all<R: Request>(requests: impl IntoIterator<Item = R>) -> Result<Vec<R::Output>> {
    requests.into_iter().map(Request::wait).collect()
}

/// Waits until one of the pending requests completes; returns its index and
/// output and sets its slot to `None`. Returns `Ok(None)` when every slot is
/// already `None`.
pub fn wait_any<R: Request>(requests: &mut [Option<R>]) -> Result<Option<(usize, R::Output)>> {
    if requests.iter().all(Option::is_none) {
        return Ok(None);
    }
    // Idle polling is charged to `wait`; each `test` charges its own data movement to `comm`.
    let mut backoff = Backoff::new();
    loop {
        for (i, slot) in requests.iter_mut().enumerate() {
            if let Some(req) = slot {
                if let Some(out) = req.test()? {
                    *slot = None;
                    return Ok(Some((i, out)));
                }
            }
        }
        let req = requests.iter().flatten().next().expect("a pending request");
        let _idle = req.clock().enter(Phase::Wait);
        backoff.snooze();
    }
}

/// How long polling waits spin before yielding, in ns. Set by the launchers:
/// spinning pays only when every rank of this machine has a core of its own.
static SPIN_NS: AtomicU64 = AtomicU64::new(0);

/// The machine's online cores. Not `available_parallelism`, which under
/// `mpirun` is the one core a process is bound to.
fn machine_cores() -> usize {
    let parse = |s: &str| -> Option<usize> {
        let mut n = 0;
        for part in s.trim().split(',') {
            let (a, b) = part.split_once('-').unwrap_or((part, part));
            n += b.parse::<usize>().ok()?.checked_sub(a.parse::<usize>().ok()?)? + 1;
        }
        Some(n)
    };
    std::fs::read_to_string("/sys/devices/system/cpu/online")
        .ok()
        .and_then(|s| parse(&s))
        .unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get()))
}

/// Tells polling waits whether ranks have dedicated cores (`ranks_here <= cores`).
pub(crate) fn set_dedicated_cores(ranks_here: usize) {
    let cores = machine_cores();
    SPIN_NS.store(if ranks_here <= cores { 200_000 } else { 0 }, Ordering::Relaxed);
}

/// Spin, then yield, then sleep: the idle strategy of polling waits.
#[derive(Debug)]
pub(crate) struct Backoff {
    start: Instant,
    spin: Duration,
    sleep_us: u64,
    calls: u32,
    /// Time since `start`, refreshed every 16 calls while spinning.
    elapsed: Duration,
}

impl Backoff {
    pub(crate) fn new() -> Self {
        Backoff {
            start: Instant::now(),
            spin: Duration::from_nanos(SPIN_NS.load(Ordering::Relaxed)),
            sleep_us: 20,
            calls: 0,
            elapsed: Duration::ZERO,
        }
    }

    /// Waits a little: spins while within the spin budget, then yields the
    /// core for 20 ms (cheap, and the only thing that keeps latency low when
    /// ranks share cores), then sleeps 20 µs, doubling up to 500 µs.
    pub(crate) fn snooze(&mut self) {
        // Reading the clock costs as much as a short spin (`pause` is ~100
        // cycles on recent x86): do it every 16th call.
        if self.calls % 16 == 0 || self.elapsed >= self.spin {
            self.elapsed = self.start.elapsed();
        }
        self.calls = self.calls.wrapping_add(1);
        let t = self.elapsed;
        if t < self.spin {
            for _ in 0..2 {
                std::hint::spin_loop();
            }
        } else if t < self.spin + Duration::from_millis(20) {
            std::thread::yield_now();
        } else {
            std::thread::sleep(Duration::from_micros(self.sleep_us));
            self.sleep_us = (self.sleep_us * 2).min(500);
        }
    }
}
