//! The threads backend: N ranks as N threads of one process.
//!
//! Every rank has a mailbox; a send moves the `Vec` into the destination's
//! mailbox (no copy, no serialisation), a receive takes the earliest matching
//! message out. Waiters spin briefly when every rank has a core of its own,
//! then yield, then sleep on a condition variable. A rank that panics or
//! returns an error marks the job failed, and every blocked call on the
//! other ranks returns [`CommError::PeerFailed`] at once.
//!
//! ```
//! use parsim_comm::{Comm, Launcher, Source, TagMatch};
//!
//! let out = Launcher::new(3).run(|comm| {
//!     let next = (comm.rank() + 1) % comm.size();
//!     comm.send(next, 0, vec![comm.rank() as u32])?;
//!     let m = comm.recv::<u32>(Source::Any, TagMatch::Tag(0))?;
//!     Ok::<_, parsim_comm::CommError>(m.data[0])
//! })?;
//! assert_eq!(out, vec![2, 0, 1]);
//! # Ok::<(), parsim_comm::CommError>(())
//! ```

#[allow(unsafe_code)]
mod channel;
mod collective;
mod request;
mod world;

use std::cell::Cell;
use std::marker::PhantomData;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::Arc;
use std::time::Instant;

use bytemuck::Pod;
use parsim_core::{Phase, PhaseClock};

pub use request::{ThreadRecv, ThreadSend};
use world::{Envelope, Matcher, Mode, Payload, Stop, Waiter, World};

use crate::{check_rank, check_tag, selection, Comm, CommError, Message, Result, Source, Status, Tag, TagMatch};

/// What one communicator of one rank needs, shared with its requests.
pub(crate) struct Inner {
    world: Arc<World>,
    /// Context id; point-to-point traffic uses `2 * ctx`, collectives `2 * ctx + 1`.
    ctx: u32,
    /// World rank of each rank of this communicator.
    members: Arc<[usize]>,
    rank: usize,
    clock: Arc<PhaseClock>,
}

impl Inner {
    fn world_of(&self, r: usize) -> usize {
        self.members[r]
    }

    fn me(&self) -> usize {
        self.members[self.rank]
    }

    fn stop_error(&self, stop: Stop, source: Option<usize>) -> CommError {
        match stop {
            Stop::Failed(rank, message) => CommError::PeerFailed { rank, message },
            Stop::Finished => CommError::PeerFinished {
                rank: self.rank,
                peer: source.map_or_else(|| "any rank".to_string(), |s| format!("rank {s}")),
            },
        }
    }

    fn send_raw<T: Pod + Send>(&self, ctx: u32, dest: usize, tag: Tag, data: Vec<T>) -> Result<()> {
        check_rank(dest, self.members.len())?;
        if let Some((rank, message)) = self.world.failure() {
            return Err(CommError::PeerFailed { rank, message });
        }
        let bytes = std::mem::size_of_val(data.as_slice());
        let env = Envelope { ctx, src: self.rank as u32, tag, payload: Payload::new(data) };
        let wdest = self.world_of(dest);
        self.world.deliver(self.me(), wdest, env);
        self.clock.sent(wdest, bytes);
        Ok(())
    }

    /// Takes the first message matching (`ctx`, `source`, `tag`) as a `Vec<T>`
    /// (`source` already checked to be a rank of the communicator).
    fn recv_raw<T: Pod + Send>(
        &self,
        ctx: u32,
        source: Option<usize>,
        tag: Option<Tag>,
        block: bool,
    ) -> Result<Option<Message<T>>> {
        let m = Matcher { ctx, source, tag };
        let clock = &self.clock;
        let awaited = source.map(|s| self.world_of(s));
        let mode = if block { Mode::Block } else { Mode::Test };
        // Only idle time is timed (two clock reads); taking a message that is
        // already there stays in the caller's phase.
        let mut before = None;
        let waiter = Waiter { me: self.me(), members: &self.members, awaited, mode };
        let taken = self.world.poll(&waiter, &m, &mut || before = Some(clock.switch(Phase::Wait)), |q, i| {
            q.remove(i).expect("index from position")
        });
        if let Some(p) = before {
            clock.switch(p);
        }
        let env = match taken {
            Ok(Some(env)) => env,
            Ok(None) => return Ok(None),
            Err(stop) => return Err(self.stop_error(stop, source)),
        };
        let (src, tag, bytes) = (env.src as usize, env.tag, env.payload.len_bytes());
        self.clock.received(self.world_of(src), bytes);
        let data = env.payload.into_vec::<T>().ok_or_else(|| CommError::TypeMismatch {
            sender: src,
            tag,
            bytes,
            expected: std::any::type_name::<T>(),
        })?;
        Ok(Some(Message { source: src, tag, data }))
    }

    fn probe_raw(&self, source: Option<usize>, tag: Option<Tag>, block: bool) -> Result<Option<Status>> {
        let m = Matcher { ctx: 2 * self.ctx, source, tag };
        let clock = &self.clock;
        let awaited = source.map(|s| self.world_of(s));
        let mode = if block { Mode::Block } else { Mode::Peek };
        let mut before = None;
        let waiter = Waiter { me: self.me(), members: &self.members, awaited, mode };
        let r = self.world.poll(&waiter, &m, &mut || before = Some(clock.switch(Phase::Wait)), |q, i| {
            let e = &q[i];
            Status { source: e.src as usize, tag: e.tag, bytes: e.payload.len_bytes() }
        });
        if let Some(p) = before {
            clock.switch(p);
        }
        r.map_err(|stop| self.stop_error(stop, source))
    }
}

/// One rank's communicator on the threads backend. Created by [`launch`] /
/// [`Launcher::run`] and by [`Comm::split`].
///
/// A communicator stays on its rank's thread (it is neither `Send` nor
/// `Sync`): each rank is the single producer of its outgoing channels.
///
/// ```compile_fail
/// fn needs_send<T: Send>() {}
/// needs_send::<parsim_comm::ThreadComm>();
/// ```
pub struct ThreadComm {
    inner: Arc<Inner>,
    _rank_thread: PhantomData<*const ()>,
    /// Number of splits made so far (collective, so equal on all ranks).
    splits: Cell<u64>,
    /// Number of collectives run so far, used as their tag.
    collectives: Cell<u32>,
}

impl std::fmt::Debug for ThreadComm {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ThreadComm").field("rank", &self.inner.rank).field("size", &self.inner.members.len()).finish()
    }
}

impl Comm for ThreadComm {
    type SendRequest = ThreadSend;
    type RecvRequest<T: Pod + Send> = ThreadRecv<T>;

    fn rank(&self) -> usize {
        self.inner.rank
    }

    fn size(&self) -> usize {
        self.inner.members.len()
    }

    fn world_rank(&self) -> usize {
        self.inner.me()
    }

    fn clock(&self) -> &PhaseClock {
        &self.inner.clock
    }

    fn backend(&self) -> &'static str {
        "threads"
    }

    fn isend<T: Pod + Send>(&self, dest: usize, tag: Tag, data: Vec<T>) -> Result<ThreadSend> {
        check_tag(tag)?;
        // Moving the buffer takes tens of nanoseconds: timing it would cost
        // as much as doing it, so it stays in the caller's phase.
        self.inner.send_raw(2 * self.inner.ctx, dest, tag, data)?;
        Ok(ThreadSend::new(self.inner.clone()))
    }

    fn irecv<T: Pod + Send>(&self, source: Source, tag: TagMatch) -> Result<ThreadRecv<T>> {
        let (source, tag) = selection(source, tag, self.size())?;
        Ok(ThreadRecv::new(self.inner.clone(), source, tag))
    }

    fn send<T: Pod + Send>(&self, dest: usize, tag: Tag, data: Vec<T>) -> Result<()> {
        // Sends complete at once here: no request needed.
        check_tag(tag)?;
        self.inner.send_raw(2 * self.inner.ctx, dest, tag, data)
    }

    fn recv<T: Pod + Send>(&self, source: Source, tag: TagMatch) -> Result<Message<T>> {
        let (source, tag) = selection(source, tag, self.size())?;
        let m = self.inner.recv_raw(2 * self.inner.ctx, source, tag, true)?;
        Ok(m.expect("a blocking receive returns a message"))
    }

    fn probe(&self, source: Source, tag: TagMatch) -> Result<Status> {
        let (source, tag) = selection(source, tag, self.size())?;
        Ok(self.inner.probe_raw(source, tag, true)?.expect("blocking probe returns a status"))
    }

    fn iprobe(&self, source: Source, tag: TagMatch) -> Result<Option<Status>> {
        let (source, tag) = selection(source, tag, self.size())?;
        self.inner.probe_raw(source, tag, false)
    }

    fn barrier(&self) -> Result<()> {
        collective::barrier(self)
    }

    fn broadcast<T: Pod + Send>(&self, root: usize, data: Vec<T>) -> Result<Vec<T>> {
        collective::broadcast(self, root, data)
    }

    fn gather<T: Pod + Send>(&self, root: usize, data: Vec<T>) -> Result<Option<Vec<Vec<T>>>> {
        collective::gather(self, root, data)
    }

    fn all_gather<T: Pod + Send>(&self, data: Vec<T>) -> Result<Vec<Vec<T>>> {
        collective::all_gather(self, data)
    }

    fn all_to_all_v<T: Pod + Send>(&self, parts: Vec<Vec<T>>) -> Result<Vec<Vec<T>>> {
        collective::all_to_all_v(self, parts)
    }

    fn split(&self, colour: Option<u32>, key: u32) -> Result<Option<Self>> {
        let mine = [u64::from(colour.is_some()), u64::from(colour.unwrap_or(0)), u64::from(key)];
        let all = self.all_gather(mine.to_vec())?;
        let seq = self.splits.get();
        self.splits.set(seq + 1);
        let Some(colour) = colour else {
            return Ok(None);
        };
        let mut group: Vec<(u64, usize)> = all
            .iter()
            .enumerate()
            .filter(|(_, v)| v[0] == 1 && v[1] == u64::from(colour))
            .map(|(r, v)| (v[2], r))
            .collect();
        group.sort_unstable();
        let members: Arc<[usize]> = group.iter().map(|&(_, r)| self.inner.members[r]).collect();
        let rank = group.iter().position(|&(_, r)| r == self.rank()).expect("this rank is in its own group");
        let ctx = self.inner.world.context_for(self.inner.ctx, seq, colour);
        let inner = Inner { world: self.inner.world.clone(), ctx, members, rank, clock: self.inner.clock.clone() };
        Ok(Some(ThreadComm {
            inner: Arc::new(inner),
            _rank_thread: PhantomData,
            splits: Cell::new(0),
            collectives: Cell::new(0),
        }))
    }
}

/// Configures and runs a threads-backend job.
///
/// ```
/// use parsim_comm::{Comm, Launcher};
///
/// let traces = Launcher::new(2).trace(true).run(|comm| {
///     comm.barrier()?;
///     Ok::<_, parsim_comm::CommError>(comm.clock().trace(comm.rank()))
/// })?;
/// assert_eq!(traces.len(), 2);
/// # Ok::<(), parsim_comm::CommError>(())
/// ```
#[derive(Clone, Debug)]
pub struct Launcher {
    ranks: usize,
    trace: bool,
    stack_size: usize,
}

impl Launcher {
    /// A job of `ranks` ranks.
    pub fn new(ranks: usize) -> Self {
        Launcher { ranks, trace: false, stack_size: 16 << 20 }
    }

    /// Records trace spans on every rank's clock.
    pub fn trace(mut self, on: bool) -> Self {
        self.trace = on;
        self
    }

    /// Stack size of each rank's thread (default 16 MiB).
    pub fn stack_size(mut self, bytes: usize) -> Self {
        self.stack_size = bytes;
        self
    }

    /// Runs `f` on every rank, each on its own thread, and returns the
    /// results in rank order.
    ///
    /// If a rank panics or returns an error, the other ranks' blocking calls
    /// fail with [`CommError::PeerFailed`], and `run` returns
    /// [`CommError::RankFailed`] with the first failing rank and its message.
    pub fn run<R, E, F>(self, f: F) -> Result<Vec<R>>
    where
        F: Fn(ThreadComm) -> std::result::Result<R, E> + Sync,
        R: Send,
        E: std::fmt::Display,
    {
        if self.ranks == 0 {
            return Err(CommError::BadArgument { op: "launch", msg: "the number of ranks must be at least 1".into() });
        }
        let world = Arc::new(World::new(self.ranks));
        crate::request::set_dedicated_cores(self.ranks);
        let epoch = Instant::now();
        let members: Arc<[usize]> = (0..self.ranks).collect();
        let results: Vec<Option<R>> = std::thread::scope(|scope| {
            let handles: Vec<_> = (0..self.ranks)
                .map(|rank| {
                    let world = world.clone();
                    let members = members.clone();
                    let f = &f;
                    let trace = self.trace;
                    std::thread::Builder::new()
                        .name(format!("parsim-rank-{rank}"))
                        .stack_size(self.stack_size)
                        .spawn_scoped(scope, move || {
                            let clock = Arc::new(PhaseClock::with_epoch(world.size, epoch, trace));
                            let inner = Inner { world: world.clone(), ctx: 0, members, rank, clock };
                            let comm = ThreadComm {
                                inner: Arc::new(inner),
                                _rank_thread: PhantomData,
                                splits: Cell::new(0),
                                collectives: Cell::new(0),
                            };
                            let out = match catch_unwind(AssertUnwindSafe(|| f(comm))) {
                                Ok(Ok(v)) => Some(v),
                                Ok(Err(e)) => {
                                    world.fail(rank, e.to_string());
                                    None
                                }
                                Err(panic) => {
                                    world.fail(rank, format!("panicked: {}", panic_message(&*panic)));
                                    None
                                }
                            };
                            world.finish(rank);
                            out
                        })
                        .expect("spawn a rank thread")
                })
                .collect();
            handles.into_iter().map(|h| h.join().unwrap_or(None)).collect()
        });
        if let Some((rank, message)) = world.failure() {
            return Err(CommError::RankFailed { rank, message });
        }
        Ok(results.into_iter().map(|r| r.expect("every rank succeeded")).collect())
    }
}

/// Runs `f` on `ranks` ranks of the threads backend; see [`Launcher::run`].
pub fn launch<R, E, F>(ranks: usize, f: F) -> Result<Vec<R>>
where
    F: Fn(ThreadComm) -> std::result::Result<R, E> + Sync,
    R: Send,
    E: std::fmt::Display,
{
    Launcher::new(ranks).run(f)
}

/// The text of a panic payload.
pub fn panic_message(payload: &(dyn std::any::Any + Send)) -> String {
    if let Some(s) = payload.downcast_ref::<&str>() {
        (*s).to_string()
    } else if let Some(s) = payload.downcast_ref::<String>() {
        s.clone()
    } else {
        "(non-string panic payload)".to_string()
    }
}
