//! Request handles for non-blocking operations, and waiting on several.

use std::time::Duration;

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

/// Spin, then yield, then sleep: the idle strategy of polling waits.
#[derive(Debug, Default)]
pub(crate) struct Backoff {
    step: u32,
}

impl Backoff {
    pub(crate) fn new() -> Self {
        Backoff { step: 0 }
    }

    /// Waits a little longer each call: ~1 µs of spinning for the first
    /// calls, then yields, then sleeps up to 1 ms.
    pub(crate) fn snooze(&mut self) {
        match self.step {
            0..=9 => {
                for _ in 0..(1u32 << self.step.min(6)) {
                    std::hint::spin_loop();
                }
            }
            10..=49 => std::thread::yield_now(),
            _ => std::thread::sleep(Duration::from_micros(u64::from((self.step - 49).min(20)) * 50)),
        }
        self.step = self.step.saturating_add(1);
    }
}
