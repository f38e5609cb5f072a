//! Message aggregation: many small records per step, one message per destination.

use bytemuck::Pod;
use parsim_core::Phase;

use crate::{Comm, Request, Result, Source, Tag, TagMatch};

/// Per-destination buffers that collect small records during a step and
/// flush them as one message per destination.
///
/// Latency, not bandwidth, dominates small messages: sending a thousand
/// 16-byte records as one 16 KB message costs one latency instead of a
/// thousand. The message carries its record count implicitly (its length).
///
/// ```
/// use parsim_comm::{launch, Aggregator, Comm};
///
/// let got = launch(3, |comm| {
///     let mut agg = Aggregator::<u64>::new(comm.size());
///     for d in 0..comm.size() {
///         for i in 0..4 {
///             agg.push(d, (comm.rank() * 100 + i) as u64); // 4 records per destination
///         }
///     }
///     let inbox = agg.exchange(&comm)?; // one message per destination
///     Ok::<_, parsim_comm::CommError>(inbox.iter().map(Vec::len).sum::<usize>())
/// })?;
/// assert_eq!(got, vec![12, 12, 12]);
/// # Ok::<(), parsim_comm::CommError>(())
/// ```
#[derive(Clone, Debug)]
pub struct Aggregator<T> {
    buffers: Vec<Vec<T>>,
}

impl<T: Pod + Send> Aggregator<T> {
    /// Empty buffers for a communicator of `size` ranks.
    pub fn new(size: usize) -> Self {
        Aggregator { buffers: (0..size).map(|_| Vec::new()).collect() }
    }

    /// Queues one record for `dest`.
    ///
    /// # Panics
    /// If `dest` is not a rank of the communicator the aggregator was made for.
    #[inline]
    pub fn push(&mut self, dest: usize, record: T) {
        self.buffers[dest].push(record);
    }

    /// Queues many records for `dest`.
    pub fn extend(&mut self, dest: usize, records: &[T]) {
        self.buffers[dest].extend_from_slice(records);
    }

    /// Records queued for `dest`.
    pub fn len(&self, dest: usize) -> usize {
        self.buffers[dest].len()
    }

    /// Whether nothing is queued for any destination.
    pub fn is_empty(&self) -> bool {
        self.buffers.iter().all(Vec::is_empty)
    }

    /// Dense flush (collective): every rank sends one message to every rank
    /// (empty ones included, so counts need no separate exchange) and
    /// receives one from each. Returns the records received, by source rank.
    pub fn exchange<C: Comm>(&mut self, comm: &C) -> Result<Vec<Vec<T>>> {
        let records = self.buffers.iter().map(Vec::len).sum::<usize>() as u64;
        comm.clock().count("aggregated_records", records);
        let parts = self.buffers.iter_mut().map(std::mem::take).collect();
        comm.all_to_all_v(parts)
    }

    /// Sparse flush: sends one message (possibly empty) to each rank of
    /// `neighbours` and receives one from each, with `tag`. Every rank must
    /// list the ranks that list it (a symmetric neighbourhood, as in a halo
    /// exchange). Records queued for ranks outside `neighbours` stay queued.
    /// Returns the records received, in the order of `neighbours`.
    pub fn exchange_with<C: Comm>(&mut self, comm: &C, neighbours: &[usize], tag: Tag) -> Result<Vec<Vec<T>>> {
        let mut recvs = Vec::with_capacity(neighbours.len());
        for &n in neighbours {
            recvs.push(comm.irecv::<T>(Source::Rank(n), TagMatch::Tag(tag))?);
        }
        let mut records = 0u64;
        for &n in neighbours {
            let buf = std::mem::take(&mut self.buffers[n]);
            records += buf.len() as u64;
            comm.isend(n, tag, buf)?.wait()?;
        }
        comm.clock().count("aggregated_records", records);
        let _g = comm.clock().enter(Phase::Comm);
        recvs.into_iter().map(|r| r.wait().map(|m| m.data)).collect()
    }
}
