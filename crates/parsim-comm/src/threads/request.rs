//! Request handles of the threads backend.

use std::marker::PhantomData;
use std::sync::Arc;

use bytemuck::Pod;
use parsim_core::PhaseClock;

use super::Inner;
use crate::{CommError, Message, Request, Result, Tag};

/// A send on the threads backend. The buffer was moved into the receiver's
/// mailbox when the send was posted, so the request is already complete.
pub struct ThreadSend {
    inner: Arc<Inner>,
    done: bool,
}

impl ThreadSend {
    pub(super) fn new(inner: Arc<Inner>) -> Self {
        ThreadSend { inner, done: false }
    }
}

impl Request for ThreadSend {
    type Output = ();

    fn test(&mut self) -> Result<Option<()>> {
        if std::mem::replace(&mut self.done, true) {
            return Err(CommError::AlreadyComplete);
        }
        Ok(Some(()))
    }

    fn wait(mut self) -> Result<()> {
        self.test().map(|_| ())
    }

    fn clock(&self) -> &PhaseClock {
        &self.inner.clock
    }
}

/// A receive on the threads backend, matched when it completes.
pub struct ThreadRecv<T> {
    inner: Arc<Inner>,
    source: Option<usize>,
    tag: Option<Tag>,
    done: bool,
    _t: PhantomData<fn() -> T>,
}

impl<T> ThreadRecv<T> {
    pub(super) fn new(inner: Arc<Inner>, source: Option<usize>, tag: Option<Tag>) -> Self {
        ThreadRecv { inner, source, tag, done: false, _t: PhantomData }
    }
}

impl<T: Pod + Send> ThreadRecv<T> {
    fn take(&mut self, block: bool) -> Result<Option<Message<T>>> {
        if self.done {
            return Err(CommError::AlreadyComplete);
        }
        let r = self.inner.recv_raw(2 * self.inner.ctx, self.source, self.tag, block)?;
        self.done = r.is_some();
        Ok(r)
    }
}

impl<T: Pod + Send> Request for ThreadRecv<T> {
    type Output = Message<T>;

    fn test(&mut self) -> Result<Option<Message<T>>> {
        self.take(false)
    }

    fn wait(mut self) -> Result<Message<T>> {
        Ok(self.take(true)?.expect("a blocking receive returns a message"))
    }

    fn clock(&self) -> &PhaseClock {
        &self.inner.clock
    }
}
