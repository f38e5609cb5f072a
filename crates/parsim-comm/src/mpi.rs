//! The MPI backend (cargo feature `mpi`): one process per rank under `mpirun`.
//!
//! Built on rsmpi over the system's Open MPI (or MPICH). Point-to-point
//! messages are sent with `MPI_Isend` straight from the moved `Vec` (no
//! copy) and received with matched probes (`MPI_Improbe` + `MPI_Mrecv`), so
//! a receive is matched when it completes, exactly as on the threads backend.
//! Collectives use MPI's own; reductions are folded in rank order after a
//! gather so float results equal the threads backend's bit for bit.
//!
//! A rank that panics or returns an error prints its message and calls
//! `MPI_Abort`, which ends the whole job: nobody is left blocked.
//!
//! ```no_run
//! use parsim_comm::{mpi, Comm, ReduceOp};
//!
//! // Run with: mpirun -n 4 my-program
//! let total = mpi::launch(|comm| {
//!     comm.all_reduce(&[comm.rank() as u64], ReduceOp::Sum)
//! })?;
//! # Ok::<(), parsim_comm::CommError>(())
//! ```

mod request;

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::rc::Rc;
use std::sync::Arc;
use std::time::Instant;

use ::mpi::collective::{CommunicatorCollectives, Root};
use ::mpi::datatype::{Partition, PartitionMut};
use ::mpi::point_to_point::Source as MpiSource;
use ::mpi::topology::{Color, Communicator, SimpleCommunicator};
use ::mpi::traits::AsRaw;
use ::mpi::Threading;
use bytemuck::Pod;
use parsim_core::{Phase, PhaseClock};

pub use request::{MpiRecv, MpiSend};

use crate::request::Backoff;
use crate::threads::panic_message;
use crate::{check_rank, check_tag, selection, Comm, CommError, Result, Source, Status, Tag, TagMatch};

/// Shared by a communicator and its requests.
pub(crate) struct Inner {
    comm: SimpleCommunicator,
    /// World rank of each rank of this communicator.
    members: Vec<usize>,
    clock: Arc<PhaseClock>,
}

impl Inner {
    fn iprobe(&self, source: Option<usize>, tag: Option<Tag>) -> Option<Status> {
        let t = tag.map_or(any_tag(), |t| t as i32);
        let st = match source {
            Some(s) => self.comm.process_at_rank(s as i32).immediate_probe_with_tag(t),
            None => self.comm.any_process().immediate_probe_with_tag(t),
        }?;
        Some(Status { source: st.source_rank() as usize, tag: st.tag() as Tag, bytes: st.count(u8_type()) as usize })
    }
}

/// Point-to-point operations moving at least this many bytes are timed as
/// `comm`; smaller ones cost less than the two clock reads timing would take
/// and stay in the caller's phase. Blocked time is always charged to `wait`.
pub(crate) const TIMED_BYTES: usize = 4096;

fn any_tag() -> i32 {
    // SAFETY: reading an immutable constant exported by the MPI shim.
    unsafe { ::mpi::ffi::RSMPI_ANY_TAG }
}

fn u8_type() -> ::mpi::datatype::DatatypeRef<'static> {
    use ::mpi::datatype::Equivalence;
    u8::equivalent_datatype()
}

/// Open MPI defines `MPI_IN_PLACE` as the address 1, which is exactly the
/// dangling pointer of an empty `Vec<u8>`: empty buffers must point elsewhere.
static EMPTY: [u8; 8] = [0; 8];

pub(crate) fn nonempty_ptr(b: &[u8]) -> &[u8] {
    if b.is_empty() {
        &EMPTY[..0]
    } else {
        b
    }
}

/// A zeroed receive buffer of `n` bytes whose address is never dangling.
fn recv_buffer(n: usize) -> Vec<u8> {
    let mut v = vec![0u8; n.max(1)];
    v.truncate(n);
    v
}

fn mpi_count(bytes: usize, op: &'static str) -> Result<i32> {
    i32::try_from(bytes).map_err(|_| CommError::BadArgument {
        op,
        msg: format!("{bytes} bytes is more than MPI can move in one message (2^31 - 1); split it"),
    })
}

/// One rank's communicator on the MPI backend. Created by [`launch`] and [`Comm::split`].
pub struct MpiComm {
    inner: Rc<Inner>,
}

impl std::fmt::Debug for MpiComm {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MpiComm").field("rank", &self.rank()).field("size", &self.size()).finish()
    }
}

fn to_vecs<T: Pod>(bytes: &[u8], counts: &[i32]) -> Vec<Vec<T>> {
    let mut at = 0usize;
    counts
        .iter()
        .map(|&n| {
            let n = n as usize;
            let v = bytemuck::pod_collect_to_vec::<u8, T>(&bytes[at..at + n]);
            at += n;
            v
        })
        .collect()
}

fn displacements(counts: &[i32]) -> Result<Vec<i32>> {
    let mut d = Vec::with_capacity(counts.len());
    let mut at: i64 = 0;
    for &c in counts {
        d.push(i32::try_from(at).map_err(|_| CommError::BadArgument {
            op: "collective",
            msg: "more than 2^31 - 1 bytes in one collective".into(),
        })?);
        at += i64::from(c);
    }
    Ok(d)
}

impl Comm for MpiComm {
    type SendRequest = MpiSend;
    type RecvRequest<T: Pod + Send> = MpiRecv<T>;

    fn rank(&self) -> usize {
        self.inner.comm.rank() as usize
    }

    fn size(&self) -> usize {
        self.inner.comm.size() as usize
    }

    fn world_rank(&self) -> usize {
        self.inner.members[self.rank()]
    }

    fn clock(&self) -> &PhaseClock {
        &self.inner.clock
    }

    fn backend(&self) -> &'static str {
        "mpi"
    }

    fn isend<T: Pod + Send>(&self, dest: usize, tag: Tag, data: Vec<T>) -> Result<MpiSend> {
        check_rank(dest, self.size())?;
        check_tag(tag)?;
        let bytes = std::mem::size_of_val(data.as_slice());
        let _g = (bytes >= TIMED_BYTES).then(|| self.inner.clock.enter(Phase::Comm));
        let count = mpi_count(bytes, "isend")?;
        self.inner.clock.sent(self.inner.members[dest], bytes);
        MpiSend::start(Rc::clone(&self.inner), dest, tag, data, count)
    }

    fn irecv<T: Pod + Send>(&self, source: Source, tag: TagMatch) -> Result<MpiRecv<T>> {
        let (source, tag) = selection(source, tag, self.size())?;
        Ok(MpiRecv::new(Rc::clone(&self.inner), source, tag))
    }

    fn probe(&self, source: Source, tag: TagMatch) -> Result<Status> {
        if let Some(st) = self.iprobe(source, tag)? {
            return Ok(st);
        }
        let _g = self.inner.clock.enter(Phase::Wait);
        let mut backoff = Backoff::new();
        loop {
            backoff.snooze();
            if let Some(st) = self.iprobe(source, tag)? {
                return Ok(st);
            }
        }
    }

    fn iprobe(&self, source: Source, tag: TagMatch) -> Result<Option<Status>> {
        let (source, tag) = selection(source, tag, self.size())?;
        Ok(self.inner.iprobe(source, tag))
    }

    fn barrier(&self) -> Result<()> {
        let _g = self.inner.clock.enter(Phase::Wait);
        self.inner.comm.barrier();
        Ok(())
    }

    fn broadcast<T: Pod + Send>(&self, root: usize, data: Vec<T>) -> Result<Vec<T>> {
        check_rank(root, self.size())?;
        let _g = self.inner.clock.enter(Phase::Comm);
        let root_proc = self.inner.comm.process_at_rank(root as i32);
        let mut len = data.len() as u64;
        root_proc.broadcast_into(&mut len);
        let mut buf = if self.rank() == root { data } else { vec![T::zeroed(); len as usize] };
        let bytes: &mut [u8] = bytemuck::cast_slice_mut(&mut buf);
        mpi_count(bytes.len(), "broadcast")?;
        if !bytes.is_empty() {
            root_proc.broadcast_into(bytes);
        }
        Ok(buf)
    }

    fn gather<T: Pod + Send>(&self, root: usize, data: Vec<T>) -> Result<Option<Vec<Vec<T>>>> {
        check_rank(root, self.size())?;
        let _g = self.inner.clock.enter(Phase::Comm);
        let root_proc = self.inner.comm.process_at_rank(root as i32);
        let send: &[u8] = nonempty_ptr(bytemuck::cast_slice(&data));
        let n = mpi_count(send.len(), "gather")?;
        if self.rank() != root {
            root_proc.gather_into(&n);
            root_proc.gather_varcount_into(send);
            return Ok(None);
        }
        let mut counts = vec![0i32; self.size()];
        root_proc.gather_into_root(&n, &mut counts[..]);
        let displs = displacements(&counts)?;
        let total: usize = counts.iter().map(|&c| c as usize).sum();
        let mut recv = recv_buffer(total);
        {
            let mut part = PartitionMut::new(&mut recv[..], &counts[..], &displs[..]);
            root_proc.gather_varcount_into_root(send, &mut part);
        }
        Ok(Some(to_vecs(&recv, &counts)))
    }

    fn all_gather<T: Pod + Send>(&self, data: Vec<T>) -> Result<Vec<Vec<T>>> {
        let _g = self.inner.clock.enter(Phase::Comm);
        let send: &[u8] = nonempty_ptr(bytemuck::cast_slice(&data));
        let n = mpi_count(send.len(), "all_gather")?;
        let mut counts = vec![0i32; self.size()];
        self.inner.comm.all_gather_into(&n, &mut counts[..]);
        let displs = displacements(&counts)?;
        let total: usize = counts.iter().map(|&c| c as usize).sum();
        let mut recv = recv_buffer(total);
        {
            let mut part = PartitionMut::new(&mut recv[..], &counts[..], &displs[..]);
            self.inner.comm.all_gather_varcount_into(send, &mut part);
        }
        Ok(to_vecs(&recv, &counts))
    }

    fn all_to_all_v<T: Pod + Send>(&self, parts: Vec<Vec<T>>) -> Result<Vec<Vec<T>>> {
        if parts.len() != self.size() {
            return Err(CommError::BadArgument {
                op: "all_to_all_v",
                msg: format!("{} parts given for {} ranks", parts.len(), self.size()),
            });
        }
        let _g = self.inner.clock.enter(Phase::Comm);
        let send_counts: Vec<i32> = parts
            .iter()
            .map(|p| mpi_count(std::mem::size_of_val(p.as_slice()), "all_to_all_v"))
            .collect::<Result<_>>()?;
        let send_displs = displacements(&send_counts)?;
        let send: Vec<u8> = parts.iter().flat_map(|p| bytemuck::cast_slice::<T, u8>(p).iter().copied()).collect();
        let mut recv_counts = vec![0i32; self.size()];
        self.inner.comm.all_to_all_into(&send_counts[..], &mut recv_counts[..]);
        let recv_displs = displacements(&recv_counts)?;
        let total: usize = recv_counts.iter().map(|&c| c as usize).sum();
        let mut recv = recv_buffer(total);
        {
            let sp = Partition::new(nonempty_ptr(&send), &send_counts[..], &send_displs[..]);
            let mut rp = PartitionMut::new(&mut recv[..], &recv_counts[..], &recv_displs[..]);
            self.inner.comm.all_to_all_varcount_into(&sp, &mut rp);
        }
        Ok(to_vecs(&recv, &recv_counts))
    }

    fn split(&self, colour: Option<u32>, key: u32) -> Result<Option<Self>> {
        let bad = |what: &str| CommError::BadArgument { op: "split", msg: format!("{what} must be below 2^31") };
        let colour = match colour {
            Some(c) => Color::with_value(i32::try_from(c).map_err(|_| bad("colour"))?),
            None => Color::undefined(),
        };
        let key = i32::try_from(key).map_err(|_| bad("key"))?;
        let _g = self.inner.clock.enter(Phase::Comm);
        let Some(sub) = self.inner.comm.split_by_color_with_key(colour, key) else {
            return Ok(None);
        };
        let me = self.world_rank() as u64;
        let mut members = vec![0u64; sub.size() as usize];
        sub.all_gather_into(&me, &mut members[..]);
        let inner = Inner {
            comm: sub,
            members: members.iter().map(|&m| m as usize).collect(),
            clock: self.inner.clock.clone(),
        };
        Ok(Some(MpiComm { inner: Rc::new(inner) }))
    }
}

/// Configures and runs this process's rank of an MPI job.
#[derive(Clone, Debug, Default)]
pub struct Launcher {
    trace: bool,
}

impl Launcher {
    /// The default: no tracing.
    pub fn new() -> Self {
        Launcher::default()
    }

    /// Records trace spans on this rank's clock.
    pub fn trace(mut self, on: bool) -> Self {
        self.trace = on;
        self
    }

    /// Initialises MPI, runs `f` on this process's rank and finalises MPI.
    ///
    /// If `f` panics or returns an error, the message is printed as
    /// `parsim: rank R failed: …` and the job is aborted with `MPI_Abort`
    /// (exit code 1), so no other rank is left waiting.
    pub fn run<R, E, F>(self, f: F) -> Result<R>
    where
        F: FnOnce(MpiComm) -> std::result::Result<R, E>,
        E: std::fmt::Display,
    {
        let (universe, _level) = ::mpi::initialize_with_threading(Threading::Funneled)
            .ok_or_else(|| CommError::Mpi { msg: "MPI was already initialised in this process".into() })?;
        let world = universe.world();
        let size = world.size() as usize;
        let rank = world.rank() as usize;
        let local = world.split_shared(world.rank());
        crate::request::set_dedicated_cores(local.size() as usize);
        drop(local);
        world.barrier();
        let clock = Arc::new(PhaseClock::with_epoch(size, Instant::now(), self.trace));
        let abort_comm = world.as_raw();
        let comm = MpiComm { inner: Rc::new(Inner { comm: world, members: (0..size).collect(), clock }) };
        let out = catch_unwind(AssertUnwindSafe(|| f(comm)));
        let message = match out {
            Ok(Ok(v)) => {
                drop(universe);
                return Ok(v);
            }
            Ok(Err(e)) => e.to_string(),
            Err(panic) => format!("panicked: {}", panic_message(&*panic)),
        };
        eprintln!("parsim: rank {rank} failed: {message}");
        // SAFETY: `abort_comm` is the world communicator of the universe that is
        // still alive here; MPI_Abort does not return.
        unsafe {
            ::mpi::ffi::MPI_Abort(abort_comm, 1);
        }
        std::process::abort();
    }
}

/// Runs `f` on this process's rank; see [`Launcher::run`].
pub fn launch<R, E, F>(f: F) -> Result<R>
where
    F: FnOnce(MpiComm) -> std::result::Result<R, E>,
    E: std::fmt::Display,
{
    Launcher::new().run(f)
}

/// Whether this process was started by a process manager (`mpirun`,
/// `mpiexec`, or `srun` with PMI): Open MPI, MPICH and PMIx set their rank variables in
/// every process they start. A program that only makes sense on several
/// ranks, such as the MPI test suites, can say so and stop when this is
/// false instead of running as a singleton.
///
/// ```
/// if !parsim_comm::mpi::launched_by_mpirun() {
///     println!("run me under mpirun -n 2");
/// }
/// ```
pub fn launched_by_mpirun() -> bool {
    ["OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "PMI_RANK", "PMIX_RANK"].iter().any(|v| std::env::var_os(v).is_some())
}

/// The MPI library's version string (`MPI_Get_library_version`).
pub fn library_version() -> String {
    ::mpi::environment::library_version().unwrap_or_else(|_| "unknown".into()).trim().to_string()
}

/// The reference the MPI backend is measured against: a plain blocking
/// `MPI_Send` / `MPI_Recv` ping-pong of `bytes` between ranks 0 and 1, with
/// no parsim layer at all. Returns seconds per round trip (on ranks 0 and 1;
/// other ranks only take part in the barriers).
pub fn raw_pingpong(comm: &MpiComm, bytes: usize, iters: usize) -> f64 {
    use ::mpi::point_to_point::Destination;
    let c = &comm.inner.comm;
    let mut buf = vec![0u8; bytes.max(1)];
    let buf = &mut buf[..bytes];
    c.barrier();
    let t0 = Instant::now();
    match c.rank() {
        0 => {
            for _ in 0..iters {
                c.process_at_rank(1).send_with_tag(&buf[..], 1);
                c.process_at_rank(1).receive_into_with_tag(buf, 1);
            }
        }
        1 => {
            for _ in 0..iters {
                c.process_at_rank(0).receive_into_with_tag(buf, 1);
                c.process_at_rank(0).send_with_tag(&buf[..], 1);
            }
        }
        _ => {}
    }
    let dt = t0.elapsed().as_secs_f64() / iters as f64;
    c.barrier();
    dt
}
