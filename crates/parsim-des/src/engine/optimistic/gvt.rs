//! Mattern's GVT algorithm: a two-colour cut passed round the ranks as a
//! token while they keep executing events.
//!
//! Every event message carries the sender's epoch (its colour). Round k
//! moves every rank from epoch k to k + 1: the first pass of the token turns
//! each rank over and sums how many epoch-k messages each rank was sent; in
//! the second pass each rank waits until it has received all of its epoch-k
//! messages, then adds min(its earliest pending event, the earliest message it
//! sent in epoch k + 1) to the token's minimum. Back at rank 0 that minimum
//! is GVT: nothing in flight or yet to be executed is earlier.

use crate::model::Order;

/// A token in flight.
pub(super) struct Token {
    /// The epoch this round closes.
    pub round: u64,
    /// 1 or 2.
    pub pass: u64,
    pub min: Order,
    /// Epoch-`round` messages sent to each rank (summed over the ranks passed).
    pub counts: Vec<u64>,
}

impl Token {
    pub fn encode(&self, kind: u64) -> Vec<u64> {
        let mut v = vec![kind | (self.round << 8), self.pass, self.min.time, u64::from(self.min.src), self.min.seq];
        v.extend_from_slice(&self.counts);
        v
    }

    pub fn decode(w: &[u64]) -> Token {
        Token {
            round: w[0] >> 8,
            pass: w[1],
            min: Order { time: w[2], src: w[3] as u32, seq: w[4] },
            counts: w[5..].to_vec(),
        }
    }
}

/// One rank's side of the algorithm.
pub(super) struct Mattern {
    p: usize,
    me: usize,
    /// This rank's epoch (colour); event messages carry it.
    pub epoch: u64,
    /// Event messages sent in epoch e to each rank, at `sent[e % 2]`.
    sent: [Vec<u64>; 2],
    /// Event messages of epoch e received, at `recv[e % 2]`.
    recv: [u64; 2],
    /// The earliest event or anti-message sent in the current epoch.
    pub red_min: Order,
    /// A second-pass token held until this rank has all its messages of the round.
    pub waiting: Option<Token>,
    /// Rank 0: a round is in progress.
    pub open: bool,
    /// The last GVT.
    pub gvt: Order,
}

impl Mattern {
    pub fn new(p: usize, me: usize) -> Self {
        Mattern {
            p,
            me,
            epoch: 0,
            sent: [vec![0; p], vec![0; p]],
            recv: [0; 2],
            red_min: Order::MAX,
            waiting: None,
            open: false,
            gvt: Order::default(),
        }
    }

    #[inline]
    pub fn note_sent(&mut self, dest: usize) {
        self.sent[(self.epoch % 2) as usize][dest] += 1;
    }

    #[inline]
    pub fn note_received(&mut self, epoch: u64) {
        self.recv[(epoch % 2) as usize] += 1;
    }

    #[inline]
    pub fn note_order(&mut self, o: Order) {
        if o < self.red_min {
            self.red_min = o;
        }
    }

    fn enter(&mut self, epoch: u64) {
        self.epoch = epoch;
        self.red_min = Order::MAX;
    }

    /// Rank 0 starts a round (the caller has flushed its buffers): the
    /// token to send to rank 1.
    pub fn start(&mut self) -> Token {
        debug_assert_eq!(self.me, 0);
        let k = self.epoch;
        self.enter(k + 1);
        self.open = true;
        Token { round: k, pass: 1, min: Order::MAX, counts: self.sent[(k % 2) as usize].clone() }
    }

    /// A first-pass token arrived (the caller has flushed its buffers).
    /// Returns the token to forward, or `None` when rank 0 now waits for
    /// its own messages (second pass begins).
    pub fn first_pass(&mut self, mut t: Token) -> Option<Token> {
        if self.me == 0 {
            t.pass = 2;
            self.waiting = Some(t);
            return None;
        }
        debug_assert_eq!(self.epoch, t.round, "rank {} in epoch {} got round {}", self.me, self.epoch, t.round);
        self.enter(t.round + 1);
        for (c, s) in t.counts.iter_mut().zip(&self.sent[(t.round % 2) as usize]) {
            *c += s;
        }
        Some(t)
    }

    /// If the held second-pass token can go on (every message of its round
    /// has arrived), adds this rank's minimum (`lvt`: its earliest pending
    /// event) and returns it.
    pub fn second_pass(&mut self, lvt: Order) -> Option<Token> {
        let t = self.waiting.as_ref()?;
        let slot = (t.round % 2) as usize;
        if self.recv[slot] != t.counts[self.me] {
            return None;
        }
        let mut t = self.waiting.take().expect("held");
        t.min = t.min.min(lvt).min(self.red_min);
        // Every message of this round's epoch is accounted for: reuse the slot.
        self.recv[slot] = 0;
        self.sent[slot].iter_mut().for_each(|c| *c = 0);
        Some(t)
    }

    /// Event messages sent minus received (the synchronous variant, which keeps epoch 0).
    pub fn unmatched(&self) -> i64 {
        let sent: u64 = self.sent.iter().flatten().sum();
        sent as i64 - (self.recv[0] + self.recv[1]) as i64
    }

    /// The rank a token goes to next.
    pub fn next(&self) -> usize {
        (self.me + 1) % self.p
    }
}
