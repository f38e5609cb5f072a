//! Request handles of the MPI backend.

use std::any::Any;
use std::marker::PhantomData;
use std::rc::Rc;

use ::mpi::ffi;
use ::mpi::point_to_point::Source as MpiSource;
use ::mpi::topology::Communicator;
use ::mpi::traits::{AsRaw, AsRawMut};
use bytemuck::Pod;
use parsim_core::{Phase, PhaseClock};

use super::{any_tag, u8_type, Inner};
use crate::request::Backoff;
use crate::{CommError, Message, Request, Result, Tag};

/// A send on the MPI backend: an `MPI_Isend` from the moved buffer, which the
/// request owns until MPI has finished with it.
///
/// Dropping a pending send waits for it to complete (the buffer must outlive MPI's use).
pub struct MpiSend {
    inner: Rc<Inner>,
    request: ffi::MPI_Request,
    /// The `Vec<T>` MPI reads from; its heap buffer never moves.
    _buffer: Box<dyn Any + Send>,
    done: bool,
}

impl MpiSend {
    pub(super) fn start<T: Pod + Send>(
        inner: Rc<Inner>,
        dest: usize,
        tag: Tag,
        data: Vec<T>,
        count: i32,
    ) -> Result<Self> {
        // SAFETY: reading an immutable constant exported by the MPI shim.
        let mut request: ffi::MPI_Request = unsafe { ffi::RSMPI_REQUEST_NULL };
        let bytes: &[u8] = super::nonempty_ptr(bytemuck::cast_slice(&data));
        // SAFETY: the pointer and count describe `data`'s heap buffer, which is
        // moved into the returned request (moving a Vec does not move its
        // buffer) and kept alive until MPI_Test reports completion or Drop
        // waits for it. The communicator outlives the request via `inner`.
        let rc = unsafe {
            ffi::MPI_Isend(
                bytes.as_ptr().cast(),
                count,
                u8_type().as_raw(),
                dest as i32,
                tag as i32,
                inner.comm.as_raw(),
                &mut request,
            )
        };
        if rc != 0 {
            return Err(CommError::Mpi { msg: format!("MPI_Isend failed with code {rc}") });
        }
        Ok(MpiSend { inner, request, _buffer: Box::new(data), done: false })
    }

    fn poll(&mut self) -> Result<bool> {
        let mut flag = 0;
        // SAFETY: `self.request` is an active request from MPI_Isend (or
        // MPI_REQUEST_NULL once complete, which MPI_Test accepts).
        let rc = unsafe { ffi::MPI_Test(&mut self.request, &mut flag, ffi::RSMPI_STATUS_IGNORE) };
        if rc != 0 {
            return Err(CommError::Mpi { msg: format!("MPI_Test failed with code {rc}") });
        }
        Ok(flag != 0)
    }
}

impl Request for MpiSend {
    type Output = ();

    fn test(&mut self) -> Result<Option<()>> {
        if self.done {
            return Err(CommError::AlreadyComplete);
        }
        // One MPI_Test is cheaper than the two clock reads that would time it.
        self.done = self.poll()?;
        Ok(self.done.then_some(()))
    }

    fn wait(mut self) -> Result<()> {
        if self.test()?.is_some() {
            return Ok(());
        }
        let clock = self.inner.clock.clone();
        let _g = clock.enter(Phase::Wait);
        let mut backoff = Backoff::new();
        loop {
            backoff.snooze();
            if self.poll()? {
                self.done = true;
                return Ok(());
            }
        }
    }

    fn clock(&self) -> &PhaseClock {
        &self.inner.clock
    }
}

impl Drop for MpiSend {
    fn drop(&mut self) {
        if !self.done {
            // SAFETY: the request is active; waiting keeps the buffer alive until MPI is done.
            unsafe {
                ffi::MPI_Wait(&mut self.request, ffi::RSMPI_STATUS_IGNORE);
            }
        }
    }
}

/// A receive on the MPI backend, matched (`MPI_Improbe`) when it completes.
pub struct MpiRecv<T> {
    inner: Rc<Inner>,
    source: Option<usize>,
    tag: Option<Tag>,
    done: bool,
    _t: PhantomData<fn() -> T>,
}

impl<T> MpiRecv<T> {
    pub(super) fn new(inner: Rc<Inner>, source: Option<usize>, tag: Option<Tag>) -> Self {
        MpiRecv { inner, source, tag, done: false, _t: PhantomData }
    }
}

impl<T: Pod + Send> MpiRecv<T> {
    fn try_take(&mut self) -> Result<Option<Message<T>>> {
        let t = self.tag.map_or(any_tag(), |t| t as i32);
        let comm = &self.inner.comm;
        let probed = match self.source {
            Some(s) => comm.process_at_rank(s as i32).immediate_matched_probe_with_tag(t),
            None => comm.any_process().immediate_matched_probe_with_tag(t),
        };
        let Some((msg, status)) = probed else {
            return Ok(None);
        };
        self.done = true;
        let bytes = status.count(u8_type()) as usize;
        let (source, tag) = (status.source_rank() as usize, status.tag() as Tag);
        self.inner.clock.received(self.inner.members[source], bytes);
        let size = std::mem::size_of::<T>();
        if size == 0 || bytes % size != 0 {
            let mut sink = vec![0u8; bytes.max(1)];
            msg.matched_receive_into(&mut sink[..bytes]);
            return Err(CommError::TypeMismatch { sender: source, tag, bytes, expected: std::any::type_name::<T>() });
        }
        // Copying a large message out of MPI is communication work worth
        // timing; a small one costs less than the clock reads would.
        let clock = self.inner.clock.clone();
        let _copy = (bytes >= super::TIMED_BYTES).then(|| clock.enter(Phase::Comm));
        let n = bytes / size;
        let mut data: Vec<T> = Vec::with_capacity(n);
        let mut msg = msg;
        let mut dummy = [0u8; 1];
        let ptr: *mut std::ffi::c_void = if n == 0 { dummy.as_mut_ptr().cast() } else { data.as_mut_ptr().cast() };
        // SAFETY: `msg` is a matched message of exactly `bytes` bytes (from the
        // probe); `ptr` points to at least `bytes` writable bytes (the vector's
        // spare capacity, or `dummy` for an empty message, never the dangling
        // address Open MPI reads as MPI_IN_PLACE). MPI_Mrecv writes every byte
        // and sets the message handle to MPI_MESSAGE_NULL.
        let rc = unsafe {
            ffi::MPI_Mrecv(ptr, bytes as i32, u8_type().as_raw(), msg.as_raw_mut(), ffi::RSMPI_STATUS_IGNORE)
        };
        if rc != 0 {
            return Err(CommError::Mpi { msg: format!("MPI_Mrecv failed with code {rc}") });
        }
        // SAFETY: MPI wrote all `n * size_of::<T>()` bytes, and any bit
        // pattern is a valid `T` (`T: Pod`).
        unsafe { data.set_len(n) };
        Ok(Some(Message { source, tag, data }))
    }
}

impl<T: Pod + Send> Request for MpiRecv<T> {
    type Output = Message<T>;

    fn test(&mut self) -> Result<Option<Message<T>>> {
        if self.done {
            return Err(CommError::AlreadyComplete);
        }
        self.try_take()
    }

    fn wait(mut self) -> Result<Message<T>> {
        if let Some(m) = self.test()? {
            return Ok(m);
        }
        let clock = self.inner.clock.clone();
        let _g = clock.enter(Phase::Wait);
        let mut backoff = Backoff::new();
        loop {
            backoff.snooze();
            if let Some(m) = self.try_take()? {
                return Ok(m);
            }
        }
    }

    fn clock(&self) -> &PhaseClock {
        &self.inner.clock
    }
}
