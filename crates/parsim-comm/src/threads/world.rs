//! The shared state of one threads-backend job: a mailbox per rank, the
//! failure flag, and the registry of communicator contexts.

use std::any::Any;
use std::collections::{HashMap, VecDeque};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Condvar, Mutex, MutexGuard};
use std::time::Duration;

use bytemuck::Pod;

/// One message in flight: the envelope and the moved buffer.
pub(crate) struct Envelope {
    /// Context id of the communicator (even: point-to-point, odd: collectives).
    pub ctx: u64,
    /// Sender's rank within that communicator.
    pub src: usize,
    pub tag: u32,
    pub bytes: usize,
    /// A `Vec<T>` of the type it was sent as.
    pub payload: Box<dyn Any + Send>,
    /// Views the payload as bytes (for receives of another element type).
    pub as_bytes: fn(&(dyn Any + Send)) -> &[u8],
}

pub(crate) fn bytes_of<T: Pod + Send>(a: &(dyn Any + Send)) -> &[u8] {
    match a.downcast_ref::<Vec<T>>() {
        Some(v) => bytemuck::cast_slice(v),
        None => &[],
    }
}

/// What a receive or probe matches.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Matcher {
    pub ctx: u64,
    pub source: Option<usize>,
    pub tag: Option<u32>,
}

impl Matcher {
    fn matches(&self, e: &Envelope) -> bool {
        e.ctx == self.ctx
            && self.source.is_none_or(|s| s == e.src)
            && self.tag.is_none_or(|t| t == e.tag)
    }
}

#[derive(Default)]
pub(crate) struct Mailbox {
    queue: Mutex<VecDeque<Envelope>>,
    /// Bumped after every delivery and on failure/finish, for spinning waiters.
    seq: AtomicU64,
    sleepers: AtomicUsize,
    cv: Condvar,
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    // A poisoned queue only means another rank panicked while holding it;
    // its contents are still consistent (pushes and removes are atomic).
    m.lock().unwrap_or_else(|e| e.into_inner())
}

pub(crate) struct World {
    pub size: usize,
    boxes: Vec<Mailbox>,
    failed: AtomicBool,
    failure: Mutex<Option<(usize, String)>>,
    finished: Vec<AtomicBool>,
    contexts: Mutex<HashMap<(u64, u64, u32), u64>>,
    next_context: AtomicU64,
    /// Spin iterations before a waiter yields and then sleeps.
    pub spin: u32,
}

/// How [`World::poll`] waits.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Mode {
    /// Until a match arrives; fails when no awaited peer is left to send one.
    Block,
    /// Not at all; fails only when the one awaited peer (not this rank) has finished.
    Test,
    /// Not at all; never fails because peers have finished (`iprobe`).
    Peek,
}

/// Who waits, for whom, and how.
pub(crate) struct Waiter<'a> {
    /// The waiting rank (world rank).
    pub me: usize,
    /// World ranks of the communicator's members.
    pub members: &'a [usize],
    /// The awaited sender (world rank), or `None` for any member.
    pub awaited: Option<usize>,
    pub mode: Mode,
}

/// How a blocked waiter found out it cannot be satisfied.
pub(crate) enum Stop {
    Failed(usize, String),
    Finished,
}

impl World {
    pub fn new(size: usize) -> Self {
        let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
        World {
            size,
            boxes: (0..size).map(|_| Mailbox::default()).collect(),
            failed: AtomicBool::new(false),
            failure: Mutex::new(None),
            finished: (0..size).map(|_| AtomicBool::new(false)).collect(),
            contexts: Mutex::new(HashMap::new()),
            next_context: AtomicU64::new(1),
            // Spinning only pays when every rank has a core of its own.
            spin: if size <= cores { 1 << 15 } else { 64 },
        }
    }

    pub fn deliver(&self, dest: usize, env: Envelope) {
        let mb = &self.boxes[dest];
        lock(&mb.queue).push_back(env);
        mb.seq.fetch_add(1, Ordering::Release);
        if mb.sleepers.load(Ordering::Acquire) > 0 {
            let _q = lock(&mb.queue);
            mb.cv.notify_all();
        }
    }

    fn wake_all(&self) {
        for mb in &self.boxes {
            mb.seq.fetch_add(1, Ordering::Release);
            let _q = lock(&mb.queue);
            mb.cv.notify_all();
        }
    }

    /// Records the first failure (later ones are consequences) and wakes everyone.
    pub fn fail(&self, rank: usize, message: String) {
        {
            let mut f = lock(&self.failure);
            if f.is_none() {
                *f = Some((rank, message));
            }
        }
        self.failed.store(true, Ordering::Release);
        self.wake_all();
    }

    pub fn failure(&self) -> Option<(usize, String)> {
        if self.failed.load(Ordering::Acquire) {
            lock(&self.failure).clone()
        } else {
            None
        }
    }

    pub fn finish(&self, rank: usize) {
        self.finished[rank].store(true, Ordering::Release);
        self.wake_all();
    }

    fn is_finished(&self, rank: usize) -> bool {
        self.finished[rank].load(Ordering::Acquire)
    }

    /// The context id shared by all ranks of one new sub-communicator.
    pub fn context_for(&self, parent: u64, seq: u64, colour: u32) -> u64 {
        let mut map = lock(&self.contexts);
        *map.entry((parent, seq, colour))
            .or_insert_with(|| self.next_context.fetch_add(1, Ordering::Relaxed))
    }

    /// Looks in the waiter's mailbox for the first message matching `m`; `f` gets
    /// the queue and its index. With [`Mode::Block`], waits until one arrives, the job
    /// fails, or the awaited peers have all finished: `awaited` (a world rank)
    /// or, when `None`, every one of `members` but `me`.
    /// `on_idle` is called once before the first idle wait.
    pub fn poll<R>(
        &self,
        w: &Waiter<'_>,
        m: &Matcher,
        on_idle: &mut dyn FnMut(),
        mut f: impl FnMut(&mut VecDeque<Envelope>, usize) -> R,
    ) -> Result<Option<R>, Stop> {
        let Waiter {
            me,
            members,
            awaited,
            mode,
        } = *w;
        let mb = &self.boxes[me];
        let mut idle = false;
        let mut spins = 0u32;
        let mut yields = 0u32;
        let mut finished_seen = false;
        loop {
            let seen = mb.seq.load(Ordering::Acquire);
            {
                let mut q = lock(&mb.queue);
                if let Some(i) = q.iter().position(|e| m.matches(e)) {
                    return Ok(Some(f(&mut q, i)));
                }
            }
            if let Some((rank, msg)) = self.failure() {
                return Err(Stop::Failed(rank, msg));
            }
            if finished_seen {
                // Rescanned after seeing the peers finished: nothing more can come.
                return Err(Stop::Finished);
            }
            let gone = match (mode, awaited) {
                (Mode::Peek, _) => false,
                (_, Some(p)) => p != me && self.is_finished(p),
                (Mode::Test, None) => false, // this rank may still send to itself
                (Mode::Block, None) => members.iter().all(|&p| p == me || self.is_finished(p)),
            };
            if gone {
                finished_seen = true;
                continue;
            }
            if mode != Mode::Block {
                return Ok(None);
            }
            if !idle {
                idle = true;
                on_idle();
            }
            if spins < self.spin {
                while spins < self.spin && mb.seq.load(Ordering::Acquire) == seen {
                    std::hint::spin_loop();
                    spins += 1;
                }
                continue;
            }
            if yields < 16 {
                yields += 1;
                std::thread::yield_now();
                continue;
            }
            let q = lock(&mb.queue);
            if mb.seq.load(Ordering::Acquire) != seen || q.iter().any(|e| m.matches(e)) {
                continue;
            }
            mb.sleepers.fetch_add(1, Ordering::AcqRel);
            let (q, _) = mb
                .cv
                .wait_timeout(q, Duration::from_millis(20))
                .unwrap_or_else(|e| e.into_inner());
            mb.sleepers.fetch_sub(1, Ordering::AcqRel);
            drop(q);
        }
    }
}
