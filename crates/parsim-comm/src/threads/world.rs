//! The shared state of one threads-backend job: a mailbox per rank, the
//! failure flag, and the registry of communicator contexts.

use std::any::Any;
use std::collections::{HashMap, VecDeque};
use std::sync::atomic::{fence, AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Condvar, Mutex, MutexGuard, OnceLock};

use super::channel::Channel;
use std::time::Duration;

use bytemuck::Pod;

/// One message in flight: the envelope and the moved buffer.
///
/// Kept small (48 bytes) so that a channel slot — sequence number plus
/// envelope — is a single cache line.
pub(crate) struct Envelope {
    /// Context id of the communicator (even: point-to-point, odd: collectives).
    pub ctx: u32,
    /// Sender's rank within that communicator.
    pub src: u32,
    pub tag: u32,
    pub payload: Payload,
}

/// A moved buffer. Byte-aligned element types travel as a plain `Vec<u8>`
/// (no extra allocation); others as a boxed `Vec<T>`.
pub(crate) enum Payload {
    Bytes(Vec<u8>),
    Typed {
        data: Box<dyn Any + Send>,
        /// Views `data` as bytes (for receives of another element type).
        as_bytes: fn(&(dyn Any + Send)) -> &[u8],
    },
}

fn bytes_of<T: Pod + Send>(a: &(dyn Any + Send)) -> &[u8] {
    match a.downcast_ref::<Vec<T>>() {
        Some(v) => bytemuck::cast_slice(v),
        None => &[],
    }
}

impl Payload {
    /// Size of the buffer in bytes.
    pub fn len_bytes(&self) -> usize {
        match self {
            Payload::Bytes(b) => b.len(),
            Payload::Typed { data, as_bytes } => as_bytes(&**data).len(),
        }
    }

    pub fn new<T: Pod + Send>(data: Vec<T>) -> Self {
        match bytemuck::allocation::try_cast_vec::<T, u8>(data) {
            Ok(bytes) => Payload::Bytes(bytes),
            Err((_, data)) => Payload::Typed { data: Box::new(data), as_bytes: bytes_of::<T> },
        }
    }

    /// The buffer as a `Vec<T>`: moved when the layout allows, copied otherwise
    /// (as MPI would reinterpret the bytes); `None` when the byte length is not
    /// a multiple of `T`'s size.
    pub fn into_vec<T: Pod + Send>(self) -> Option<Vec<T>> {
        let copy = |raw: &[u8]| -> Option<Vec<T>> {
            let size = std::mem::size_of::<T>();
            if size == 0 || raw.len() % size != 0 {
                return None;
            }
            let mut v = vec![T::zeroed(); raw.len() / size];
            bytemuck::cast_slice_mut::<T, u8>(&mut v).copy_from_slice(raw);
            Some(v)
        };
        match self {
            Payload::Bytes(b) => match bytemuck::allocation::try_cast_vec::<u8, T>(b) {
                Ok(v) => Some(v),
                Err((_, b)) => copy(&b),
            },
            Payload::Typed { data, as_bytes } => match data.downcast::<Vec<T>>() {
                Ok(v) => Some(*v),
                Err(data) => copy(as_bytes(&*data)),
            },
        }
    }
}

/// What a receive or probe matches.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Matcher {
    pub ctx: u32,
    pub source: Option<usize>,
    pub tag: Option<u32>,
}

impl Matcher {
    fn matches(&self, e: &Envelope) -> bool {
        e.ctx == self.ctx && self.source.is_none_or(|s| s == e.src as usize) && self.tag.is_none_or(|t| t == e.tag)
    }
}

/// A rank's mailbox: one [`Channel`] per sender (made on first use), and
/// the owner's state — messages taken out of the channels that no receive
/// has matched yet, and which senders have channels.
///
/// Only the owning rank's thread reads the channels, so `state` is never
/// contended; senders touch only their own channel.
///
/// Layout matters: the receiver writes `state`'s lock on every receive, and
/// every sender reads `sleepers` on every send, so they sit on separate
/// cache lines (otherwise each message costs two extra line transfers).
pub(crate) struct Mailbox {
    from: Box<[OnceLock<Box<Channel>>]>,
    /// Senders with a channel, in creation order; `senders` counts them.
    active: Mutex<Vec<usize>>,
    senders: AtomicUsize,
    state: Padded<Mutex<Receiver>>,
    sleepers: Padded<AtomicUsize>,
    sleep: Mutex<()>,
    cv: Condvar,
}

/// The receiving rank's own view of its mailbox.
#[derive(Default)]
struct Receiver {
    pending: VecDeque<Envelope>,
    /// The senders whose channels this rank scans (a copy of `active`).
    senders: Vec<usize>,
}

impl Mailbox {
    fn new(size: usize) -> Self {
        Mailbox {
            from: (0..size).map(|_| OnceLock::new()).collect(),
            active: Mutex::new(Vec::new()),
            senders: AtomicUsize::new(0),
            state: Padded(Mutex::new(Receiver::default())),
            sleepers: Padded(AtomicUsize::new(0)),
            sleep: Mutex::new(()),
            cv: Condvar::new(),
        }
    }

    fn channel(&self, src: usize) -> &Channel {
        self.from[src].get_or_init(|| {
            let mut a = lock(&self.active);
            a.push(src);
            self.senders.store(a.len(), Ordering::Release);
            Box::new(Channel::new())
        })
    }
}

impl Receiver {
    fn refresh(&mut self, mb: &Mailbox) {
        if mb.senders.load(Ordering::Acquire) != self.senders.len() {
            self.senders.clone_from(&lock(&mb.active));
        }
    }

    /// Moves what has arrived (from `only`, or from everyone) into `pending`.
    fn drain(&mut self, mb: &Mailbox, only: Option<usize>) {
        match only {
            Some(s) => {
                if let Some(c) = mb.from[s].get() {
                    while let Some(e) = c.pop() {
                        self.pending.push_back(e);
                    }
                }
            }
            None => {
                self.refresh(mb);
                for &s in &self.senders {
                    if let Some(c) = mb.from[s].get() {
                        while let Some(e) = c.pop() {
                            self.pending.push_back(e);
                        }
                    }
                }
            }
        }
    }

    /// Whether anything may have arrived (from `only`, or from anyone).
    fn ready(&self, mb: &Mailbox, only: Option<usize>) -> bool {
        match only {
            Some(s) => mb.from[s].get().is_some_and(|c| c.ready()),
            None => {
                mb.senders.load(Ordering::Acquire) != self.senders.len()
                    || self.senders.iter().any(|&s| mb.from[s].get().is_some_and(|c| c.ready()))
            }
        }
    }
}

/// A value on cache lines of its own.
#[derive(Default)]
#[repr(align(128))]
pub(crate) struct Padded<T>(pub T);

impl<T> std::ops::Deref for Padded<T> {
    type Target = T;
    fn deref(&self) -> &T {
        &self.0
    }
}

pub(crate) fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    // A poisoned lock only means a rank panicked while holding it; the data
    // is still consistent (pushes and removes are atomic).
    m.lock().unwrap_or_else(|e| e.into_inner())
}

pub(crate) struct World {
    pub size: usize,
    boxes: Vec<Mailbox>,
    failed: AtomicBool,
    failure: Mutex<Option<(usize, String)>>,
    finished: Vec<AtomicBool>,
    contexts: Mutex<HashMap<(u32, u64, u32), u32>>,
    next_context: AtomicU64,
    /// Bumped whenever a rank fails or finishes, for spinning waiters.
    events: AtomicU64,
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
            boxes: (0..size).map(|_| Mailbox::new(size)).collect(),
            failed: AtomicBool::new(false),
            failure: Mutex::new(None),
            finished: (0..size).map(|_| AtomicBool::new(false)).collect(),
            contexts: Mutex::new(HashMap::new()),
            next_context: AtomicU64::new(1),
            events: AtomicU64::new(0),
            // Spinning only pays when every rank has a core of its own.
            spin: if size <= cores { 1 << 15 } else { 64 },
        }
    }

    /// Sends `env` from world rank `src` to world rank `dest`.
    pub fn deliver(&self, src: usize, dest: usize, env: Envelope) {
        let mb = &self.boxes[dest];
        mb.channel(src).push(env);
        // Pairs with the fence in `poll` before a waiter sleeps: either it
        // sees this message, or this sees it sleeping and wakes it.
        fence(Ordering::SeqCst);
        if mb.sleepers.load(Ordering::Relaxed) > 0 {
            let _s = lock(&mb.sleep);
            mb.cv.notify_all();
        }
    }

    fn wake_all(&self) {
        self.events.fetch_add(1, Ordering::SeqCst);
        for mb in &self.boxes {
            let _s = lock(&mb.sleep);
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
    ///
    /// # Panics
    /// After 2³¹ − 1 sub-communicators in one job (context ids are 31 bits).
    pub fn context_for(&self, parent: u32, seq: u64, colour: u32) -> u32 {
        let mut map = lock(&self.contexts);
        *map.entry((parent, seq, colour)).or_insert_with(|| {
            let id = self.next_context.fetch_add(1, Ordering::Relaxed);
            u32::try_from(id).ok().filter(|&c| c < 1 << 31).expect("more than 2^31 - 1 sub-communicators in one job")
        })
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
        let Waiter { me, members, awaited, mode } = *w;
        let mb = &self.boxes[me];
        let mut idle = false;
        let mut spins = 0u32;
        let mut yields = 0u32;
        let mut finished_seen = false;
        let mut st = lock(&mb.state);
        // A receive from one sender only needs that sender's channel, unless
        // earlier drains left its messages in `pending`.
        let only = awaited;
        loop {
            let seen = self.events.load(Ordering::Acquire);
            st.drain(mb, only);
            if let Some(i) = st.pending.iter().position(|e| m.matches(e)) {
                return Ok(Some(f(&mut st.pending, i)));
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
            let quiet = |st: &Receiver| !st.ready(mb, only) && self.events.load(Ordering::Acquire) == seen;
            if spins < self.spin {
                while spins < self.spin && quiet(&st) {
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
            let guard = lock(&mb.sleep);
            mb.sleepers.fetch_add(1, Ordering::Relaxed);
            fence(Ordering::SeqCst);
            if quiet(&st) {
                let _ = mb.cv.wait_timeout(guard, Duration::from_millis(20));
            }
            mb.sleepers.fetch_sub(1, Ordering::Relaxed);
        }
    }
}
