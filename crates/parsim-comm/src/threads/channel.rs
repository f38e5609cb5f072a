//! One-way channels between two ranks of the threads backend.
//!
//! Every (sender, receiver) pair that ever talks gets a [`Channel`]: a small
//! ring of slots with one producer (the sender's thread) and one consumer
//! (the receiver's thread), plus an overflow list for when the ring is full,
//! so sends never block. A slot carries its own sequence number on the same
//! cache line as the message, so a message costs about one cache-line
//! transfer each way — the floor that `parsim bench comm` measures beside it.

use std::cell::UnsafeCell;
use std::collections::VecDeque;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::Mutex;

use super::world::{lock, Envelope, Padded};

/// Slots per ring (the overflow list takes the rest).
const SLOTS: u64 = 16;

/// One slot: `seq == pos` means free for the message at ring position `pos`,
/// `seq == pos + 1` means it holds that message (Vyukov's bounded queue).
///
/// The sequence number is the only synchronisation: the producer writes
/// `env` only while it owns the slot (`seq == pos`, published by the
/// consumer's release store after it finished reading), and the consumer
/// reads it only while it owns it (`seq == pos + 1`, published by the
/// producer's release store after it finished writing). A lock here would
/// cost two more atomic read-modify-writes on each side of every message.
#[repr(align(128))]
struct Slot {
    seq: AtomicU64,
    env: UnsafeCell<Option<Envelope>>,
}

// SAFETY: access to `env` is exclusive by the protocol above (one producer
// thread, one consumer thread, ownership handed over through `seq` with
// release/acquire), and `Envelope` is `Send`.
unsafe impl Sync for Slot {}

/// A single-producer, single-consumer FIFO of envelopes.
pub(crate) struct Channel {
    slots: Box<[Slot]>,
    /// Next ring position to write (touched by the producer only).
    tail: Padded<AtomicU64>,
    /// Next ring position to read (touched by the consumer only).
    head: Padded<AtomicU64>,
    /// Messages sent while the ring was full; all of them come after every
    /// message in the ring, and while it is non-empty new messages join it.
    overflow: Padded<Mutex<VecDeque<Envelope>>>,
    overflowed: AtomicUsize,
}

impl Channel {
    pub fn new() -> Self {
        Channel {
            slots: (0..SLOTS).map(|i| Slot { seq: AtomicU64::new(i), env: UnsafeCell::new(None) }).collect(),
            tail: Padded(AtomicU64::new(0)),
            head: Padded(AtomicU64::new(0)),
            overflow: Padded(Mutex::new(VecDeque::new())),
            overflowed: AtomicUsize::new(0),
        }
    }

    fn slot(&self, pos: u64) -> &Slot {
        &self.slots[(pos % SLOTS) as usize]
    }

    /// Appends a message (producer side). Never blocks on the consumer.
    pub fn push(&self, env: Envelope) {
        // Only this (producer) side adds to the overflow list, so once it is
        // seen empty it stays empty until we add to it: no lock needed.
        if self.overflowed.load(Ordering::Acquire) == 0 {
            let pos = self.tail.load(Ordering::Relaxed);
            let slot = self.slot(pos);
            if slot.seq.load(Ordering::Acquire) == pos {
                // SAFETY: `seq == pos` (acquire): the consumer is done with this
                // slot and will not touch `env` until we publish `pos + 1`; we
                // are the only producer (`push` runs on the sending rank's thread).
                unsafe { *slot.env.get() = Some(env) };
                slot.seq.store(pos + 1, Ordering::Release);
                self.tail.store(pos + 1, Ordering::Relaxed);
                return;
            }
        }
        let mut ov = lock(&self.overflow);
        ov.push_back(env);
        self.overflowed.store(ov.len(), Ordering::Release);
    }

    /// Takes the oldest message (consumer side).
    pub fn pop(&self) -> Option<Envelope> {
        if let Some(env) = self.pop_ring() {
            return Some(env);
        }
        if self.overflowed.load(Ordering::Acquire) == 0 {
            return None;
        }
        let mut ov = lock(&self.overflow);
        // The producer may have filled the ring and started this overflow
        // run after our look at the ring above. Every ring message is older
        // than every overflow message (the producer stops writing the ring
        // while the list is non-empty), and holding the lock we see them all:
        // look at the ring again first.
        if let Some(env) = self.pop_ring() {
            return Some(env);
        }
        let env = ov.pop_front();
        self.overflowed.store(ov.len(), Ordering::Release);
        env
    }

    fn pop_ring(&self) -> Option<Envelope> {
        let pos = self.head.load(Ordering::Relaxed);
        let slot = self.slot(pos);
        if slot.seq.load(Ordering::Acquire) != pos + 1 {
            return None;
        }
        // SAFETY: `seq == pos + 1` (acquire): the producer finished writing
        // and will not touch `env` until we publish `pos + SLOTS`; we are
        // the only consumer (`pop` runs on the receiving rank's thread,
        // under the mailbox's state lock).
        let env = unsafe { (*slot.env.get()).take() };
        slot.seq.store(pos + SLOTS, Ordering::Release);
        self.head.store(pos + 1, Ordering::Relaxed);
        env
    }

    /// Whether a message may be waiting (consumer side; cheap, for spinning).
    pub fn ready(&self) -> bool {
        let pos = self.head.load(Ordering::Relaxed);
        self.slot(pos).seq.load(Ordering::Acquire) == pos + 1 || self.overflowed.load(Ordering::Acquire) > 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::threads::world::Payload;

    fn env(i: u64) -> Envelope {
        Envelope { ctx: 0, src: 0, tag: 0, payload: Payload::new(vec![i]) }
    }

    #[test]
    fn a_slot_is_one_cache_line() {
        // seq + the envelope must fit the slot's first 64 bytes.
        assert!(std::mem::size_of::<AtomicU64>() + std::mem::size_of::<Option<Envelope>>() <= 64);
    }

    fn value(e: Envelope) -> u64 {
        e.payload.into_vec::<u64>().expect("u64 payload")[0]
    }

    #[test]
    fn fifo_through_ring_and_overflow() {
        let c = Channel::new();
        assert!(!c.ready());
        for i in 0..100 {
            c.push(env(i)); // 16 in the ring, 84 in overflow
        }
        for i in 0..50 {
            assert_eq!(c.pop().map(value), Some(i));
        }
        for i in 100..140 {
            c.push(env(i)); // overflow still non-empty: these queue behind it
        }
        for i in 50..140 {
            assert!(c.ready());
            assert_eq!(c.pop().map(value), Some(i));
        }
        assert!(c.pop().is_none());
        c.push(env(7)); // back to the ring
        assert_eq!(c.pop().map(value), Some(7));
    }

    #[test]
    fn fifo_across_two_threads() {
        for round in 0..20 {
            fifo_round(round);
        }
    }

    /// A producer racing a consumer that is preempted often, so the ring
    /// fills and the overflow list starts and stops many times.
    fn fifo_round(round: u64) {
        let c = Channel::new();
        let n = 20_000u64;
        std::thread::scope(|s| {
            s.spawn(|| {
                for i in 0..n {
                    c.push(env(i));
                    if i % 1000 == 0 {
                        std::thread::yield_now();
                    }
                }
            });
            let mut next = 0;
            while next < n {
                if let Some(e) = c.pop() {
                    assert_eq!(value(e), next, "round {round}");
                    next += 1;
                }
                if (next + round) % 97 == 0 {
                    std::thread::yield_now();
                }
            }
        });
    }
}
