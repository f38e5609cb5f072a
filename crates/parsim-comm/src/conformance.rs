//! The semantics suite every backend must pass.
//!
//! Each case is a function every rank of a communicator calls; it returns an
//! error when the backend breaks the [crate-level semantics](crate). The
//! threads backend runs the suite in `cargo test` at several rank counts;
//! the MPI backend runs the same functions under `mpirun -n 1/2/4` (the
//! `tests/mpi_conformance.rs` test binary). A backend of your own can run it too:
//!
//! ```
//! use parsim_comm::{conformance, launch};
//!
//! launch(2, |comm| {
//!     for (name, case) in conformance::cases() {
//!         case(&comm).map_err(|e| format!("{name}: {e}"))?;
//!     }
//!     Ok::<_, String>(())
//! })?;
//! # Ok::<(), parsim_comm::CommError>(())
//! ```

use std::collections::BTreeSet;

use parsim_core::ExactSum;
use serde::{Deserialize, Serialize};

use crate::{wait_all, wait_any, Aggregator, Comm, CommError, ReduceOp, Request, Source, TagMatch};

/// Why a case failed.
#[derive(Debug)]
pub struct CaseError(pub String);

impl std::fmt::Display for CaseError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for CaseError {}

impl From<CommError> for CaseError {
    fn from(e: CommError) -> Self {
        CaseError(format!("communication error: {e}"))
    }
}

/// The result of one case on one rank.
pub type CaseResult = Result<(), CaseError>;

/// A case: what every rank runs.
pub type Case<C> = fn(&C) -> CaseResult;

macro_rules! ensure {
    ($cond:expr, $($fmt:tt)+) => {
        if !$cond {
            return Err(CaseError(format!($($fmt)+)));
        }
    };
}

/// Every case, by name, in the order they should run.
pub fn cases<C: Comm>() -> Vec<(&'static str, Case<C>)> {
    vec![
        ("rank_and_size", rank_and_size::<C>),
        ("ordering_per_source_and_tag", ordering_per_source_and_tag::<C>),
        ("wildcards", wildcards::<C>),
        ("zero_length_messages", zero_length_messages::<C>),
        ("probe_unknown_size", probe_unknown_size::<C>),
        ("nonblocking_requests", nonblocking_requests::<C>),
        ("large_message_100mb", large_message_100mb::<C>),
        ("element_types", element_types::<C>),
        ("serde_values", serde_values::<C>),
        ("broadcast_gather", broadcast_gather::<C>),
        ("reductions", reductions::<C>),
        ("exact_reduction", exact_reduction::<C>),
        ("all_to_all_v_with_empty_parts", all_to_all_v_with_empty_parts::<C>),
        ("sub_communicators", sub_communicators::<C>),
        ("aggregation", aggregation::<C>),
        ("bad_arguments", bad_arguments::<C>),
    ]
}

fn rank_and_size<C: Comm>(c: &C) -> CaseResult {
    ensure!(c.size() >= 1 && c.rank() < c.size(), "rank {} of {}", c.rank(), c.size());
    let all = c.all_gather(vec![c.rank() as u64])?;
    let want: Vec<Vec<u64>> = (0..c.size() as u64).map(|r| vec![r]).collect();
    ensure!(all == want, "all_gather of ranks gave {all:?}");
    c.barrier()?;
    Ok(())
}

/// Messages from one source with one tag arrive in send order, even when the
/// receiver takes another tag first.
fn ordering_per_source_and_tag<C: Comm>(c: &C) -> CaseResult {
    const N: u64 = 200;
    for d in 0..c.size() {
        for i in 0..N {
            c.send(d, 1 + (i % 2) as u32, vec![i, c.rank() as u64])?;
        }
    }
    for s in 0..c.size() {
        // Tag 2 first (the odd sequence numbers), then tag 1.
        for (tag, first) in [(2u32, 1u64), (1, 0)] {
            for k in 0..N / 2 {
                let m = c.recv::<u64>(Source::Rank(s), TagMatch::Tag(tag))?;
                let want = first + 2 * k;
                ensure!(m.data == vec![want, s as u64], "from {s} tag {tag}: got {:?}, want [{want}, {s}]", m.data);
                ensure!(m.source == s && m.tag == tag, "envelope {} {} for {s} {tag}", m.source, m.tag);
            }
        }
    }
    c.barrier()?;
    Ok(())
}

fn wildcards<C: Comm>(c: &C) -> CaseResult {
    // Everyone sends one message to rank 0 with tag 10 + rank.
    c.send(0, 10 + c.rank() as u32, vec![c.rank() as u32])?;
    if c.rank() == 0 {
        let mut seen = BTreeSet::new();
        for _ in 0..c.size() {
            let m = c.recv::<u32>(Source::Any, TagMatch::Any)?;
            ensure!(m.tag == 10 + m.source as u32 && m.data == vec![m.source as u32], "wildcard got {m:?}");
            seen.insert(m.source);
        }
        ensure!(seen.len() == c.size(), "sources seen {seen:?}");
    }
    // Keep the wildcard receives above from taking the messages below.
    c.barrier()?;
    // Any tag from a given source, and any source with a given tag.
    let next = (c.rank() + 1) % c.size();
    let prev = (c.rank() + c.size() - 1) % c.size();
    c.send(next, 33, vec![7u8])?;
    let m = c.recv::<u8>(Source::Rank(prev), TagMatch::Any)?;
    ensure!(m.tag == 33 && m.source == prev, "any-tag receive got {m:?}");
    c.send(next, 34, vec![8u8])?;
    let m = c.recv::<u8>(Source::Any, TagMatch::Tag(34))?;
    ensure!(m.source == prev && m.data == vec![8], "any-source receive got {m:?}");
    c.barrier()?;
    Ok(())
}

fn zero_length_messages<C: Comm>(c: &C) -> CaseResult {
    let next = (c.rank() + 1) % c.size();
    let prev = (c.rank() + c.size() - 1) % c.size();
    c.send::<f64>(next, 5, Vec::new())?;
    let st = c.probe(Source::Rank(prev), TagMatch::Tag(5))?;
    ensure!(st.bytes == 0 && st.source == prev, "probe of empty message: {st:?}");
    let m = c.recv::<f64>(Source::Rank(prev), TagMatch::Tag(5))?;
    ensure!(m.data.is_empty(), "empty message arrived with {} elements", m.data.len());
    c.barrier()?;
    Ok(())
}

fn probe_unknown_size<C: Comm>(c: &C) -> CaseResult {
    let next = (c.rank() + 1) % c.size();
    let prev = (c.rank() + c.size() - 1) % c.size();
    let len = 1 + (c.rank() * 37) % 101;
    c.send(next, 6, vec![c.rank() as u16; len])?;
    let st = c.probe(Source::Any, TagMatch::Tag(6))?;
    let want = 2 * (1 + (prev * 37) % 101);
    ensure!(st.source == prev && st.bytes == want, "probe {st:?}, want {want} bytes from {prev}");
    let m = c.recv::<u16>(Source::Rank(st.source), TagMatch::Tag(6))?;
    ensure!(m.data.len() * 2 == st.bytes, "received {} elements after probing {} bytes", m.data.len(), st.bytes);
    c.barrier()?;
    ensure!(c.iprobe(Source::Any, TagMatch::Any)?.is_none(), "iprobe found a message after everything was received");
    c.barrier()?;
    Ok(())
}

fn nonblocking_requests<C: Comm>(c: &C) -> CaseResult {
    let p = c.size();
    // Post receives first from everyone (tags 100 + source).
    let mut recvs: Vec<Option<C::RecvRequest<u64>>> = (0..p)
        .map(|s| c.irecv::<u64>(Source::Rank(s), TagMatch::Tag(100 + s as u32)).map(Some))
        .collect::<Result<_, _>>()?;
    // Nothing has been sent with tag 100 + s yet except possibly by faster ranks; a
    // receive from ourselves can only complete after our own send.
    let mut own = recvs[c.rank()].take().expect("own receive");
    ensure!(own.test()?.is_none(), "a receive completed before any matching send");
    let sends: Vec<_> = (0..p)
        .map(|d| c.isend(d, 100 + c.rank() as u32, vec![(c.rank() * 1000 + d) as u64]))
        .collect::<Result<_, _>>()?;
    wait_all(sends)?;
    let m = own.wait()?;
    ensure!(m.data == vec![(c.rank() * 1000 + c.rank()) as u64], "self message {m:?}");
    let mut got = 1;
    while let Some((i, m)) = wait_any(&mut recvs)? {
        ensure!(m.source == i && m.data == vec![(i * 1000 + c.rank()) as u64], "wait_any slot {i} got {m:?}");
        got += 1;
    }
    ensure!(got == p, "wait_any completed {got} of {p}");
    c.barrier()?;
    Ok(())
}

fn large_message_100mb<C: Comm>(c: &C) -> CaseResult {
    const N: usize = 100 * 1024 * 1024 / 8; // 100 MiB of u64
    let size = c.size();
    // Rank 0 sends to the last rank (itself on one rank).
    let dest = size - 1;
    if c.rank() == 0 {
        let data: Vec<u64> = (0..N as u64).map(|i| i.wrapping_mul(0x9E37_79B9_7F4A_7C15)).collect();
        let req = c.isend(dest, 9, data)?;
        if dest == 0 {
            let m = c.recv::<u64>(Source::Rank(0), TagMatch::Tag(9))?;
            check_large(&m.data)?;
        }
        req.wait()?;
    } else if c.rank() == dest {
        let st = c.probe(Source::Rank(0), TagMatch::Tag(9))?;
        ensure!(st.bytes == N * 8, "probe of the large message says {} bytes", st.bytes);
        let m = c.recv::<u64>(Source::Rank(0), TagMatch::Tag(9))?;
        check_large(&m.data)?;
    }
    c.barrier()?;
    Ok(())
}

fn check_large(d: &[u64]) -> CaseResult {
    ensure!(d.len() == 100 * 1024 * 1024 / 8, "large message has {} elements", d.len());
    for i in (0..d.len()).step_by(4093).chain([d.len() - 1]) {
        ensure!(d[i] == (i as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15), "large message corrupt at {i}");
    }
    Ok(())
}

/// A message received as another element type is reinterpreted byte for
/// byte (as MPI does), and a length that does not divide is an error.
fn element_types<C: Comm>(c: &C) -> CaseResult {
    let me = c.rank();
    c.send(me, 40, vec![0x0403_0201u32, 0x0807_0605])?;
    let m = c.recv::<u8>(Source::Rank(me), TagMatch::Tag(40))?;
    ensure!(m.data == vec![1, 2, 3, 4, 5, 6, 7, 8], "u32 → u8 gave {:?}", m.data);
    c.send(me, 41, vec![1u8, 2, 3])?;
    match c.recv::<u16>(Source::Rank(me), TagMatch::Tag(41)) {
        Err(CommError::TypeMismatch { bytes: 3, .. }) => {}
        other => return Err(CaseError(format!("3 bytes received as u16 gave {other:?}"))),
    }
    // Both backends consume the mismatched message; drain it if a backend did not.
    if c.iprobe(Source::Rank(me), TagMatch::Tag(41))?.is_some() {
        c.recv::<u8>(Source::Rank(me), TagMatch::Tag(41))?;
    }
    c.barrier()?;
    Ok(())
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
struct Token {
    name: String,
    hops: Vec<u32>,
    time: f64,
}

fn serde_values<C: Comm>(c: &C) -> CaseResult {
    let next = (c.rank() + 1) % c.size();
    let prev = (c.rank() + c.size() - 1) % c.size();
    let t =
        Token { name: format!("from {}", c.rank()), hops: (0..c.rank() as u32).collect(), time: 0.1 * c.rank() as f64 };
    c.send_value(next, 50, &t)?;
    let (got, st): (Token, _) = c.recv_value(Source::Any, TagMatch::Tag(50))?;
    let want = Token { name: format!("from {prev}"), hops: (0..prev as u32).collect(), time: 0.1 * prev as f64 };
    ensure!(got == want && st.source == prev, "got {got:?} from {}", st.source);
    // Non-blocking: post the receive first, then send, then decode.
    let r = c.irecv::<u8>(Source::Rank(prev), TagMatch::Tag(51))?;
    let s = c.isend_value(next, 51, &(c.rank() as u64, "x".to_string()))?;
    let m = r.wait()?;
    s.wait()?;
    let (from, x): (u64, String) = m.decode()?;
    ensure!(from == prev as u64 && x == "x", "isend_value/decode gave ({from}, {x})");
    let root = c.size() / 2;
    let b = c.broadcast_value(root, &if c.rank() == root { t.clone() } else { want.clone() })?;
    ensure!(b.name == format!("from {root}"), "broadcast_value gave {b:?}");
    let all = c.all_gather_value(&c.rank().to_string())?;
    ensure!(all == (0..c.size()).map(|r| r.to_string()).collect::<Vec<_>>(), "all_gather_value {all:?}");
    let g = c.gather_value(0, &(c.rank() as u8))?;
    ensure!((c.rank() == 0) == g.is_some(), "gather_value result on rank {}", c.rank());
    c.barrier()?;
    Ok(())
}

fn broadcast_gather<C: Comm>(c: &C) -> CaseResult {
    for root in 0..c.size() {
        let data = if c.rank() == root { vec![root as i32; 3 + root] } else { Vec::new() };
        let got = c.broadcast(root, data)?;
        ensure!(got == vec![root as i32; 3 + root], "broadcast from {root} gave {got:?}");
    }
    let g = c.gather(c.size() - 1, vec![c.rank() as u8; c.rank()])?;
    if c.rank() == c.size() - 1 {
        let g = g.ok_or_else(|| CaseError("gather returned None on root".into()))?;
        ensure!(g.iter().enumerate().all(|(r, v)| *v == vec![r as u8; r]), "gather {g:?}");
    } else {
        ensure!(g.is_none(), "gather returned data off the root");
    }
    let ag = c.all_gather(vec![c.rank() as f32; c.rank() % 3])?;
    ensure!(ag.iter().enumerate().all(|(r, v)| *v == vec![r as f32; r % 3]), "all_gather {ag:?}");
    Ok(())
}

fn reductions<C: Comm>(c: &C) -> CaseResult {
    let p = c.size() as i64;
    let r = c.rank() as i64;
    let s = c.all_reduce(&[r, -r, 1], ReduceOp::Sum)?;
    ensure!(s == vec![p * (p - 1) / 2, -p * (p - 1) / 2, p], "i64 sum {s:?}");
    let mn = c.all_reduce(&[r as u64 + 5, 100 - r as u64], ReduceOp::Min)?;
    ensure!(mn == vec![5, 100 - (p as u64 - 1)], "u64 min {mn:?}");
    let mx = c.all_reduce(&[r as f64 * 0.5, -(r as f64)], ReduceOp::Max)?;
    ensure!(mx == vec![(p - 1) as f64 * 0.5, 0.0], "f64 max {mx:?}");
    let f = c.all_reduce(&[0.1f32 * r as f32], ReduceOp::Sum)?;
    let want = (0..p).fold(0.0f32, |a, k| a + 0.1 * k as f32);
    ensure!(f[0].to_bits() == want.to_bits(), "f32 sum in rank order: {} vs {want}", f[0]);
    let i = c.all_reduce(&[r as i32 - 1], ReduceOp::Min)?;
    ensure!(i == vec![-1], "i32 min {i:?}");
    let red = c.reduce(0, &[1u32], ReduceOp::Sum)?;
    ensure!(if c.rank() == 0 { red == Some(vec![p as u32]) } else { red.is_none() }, "reduce to root {red:?}");
    Ok(())
}

fn exact_reduction<C: Comm>(c: &C) -> CaseResult {
    // 1000 values split over the ranks; the total must not depend on the split.
    let value = |i: u64| ((i as f64) * 1.37).sin() * 10f64.powi((i % 17) as i32 - 8);
    let mut local = ExactSum::new();
    for i in (c.rank() as u64..1000).step_by(c.size()) {
        local.add(value(i));
    }
    let total = c.all_reduce_exact(&local)?.value();
    let mut seq = ExactSum::new();
    (0..1000).for_each(|i| seq.add(value(i)));
    ensure!(total.to_bits() == seq.value().to_bits(), "exact sum {total:e} vs sequential {:e}", seq.value());
    Ok(())
}

fn all_to_all_v_with_empty_parts<C: Comm>(c: &C) -> CaseResult {
    let me = c.rank();
    let parts: Vec<Vec<u32>> = (0..c.size()).map(|d| vec![(me * 10 + d) as u32; (me + d) % 3]).collect();
    let got = c.all_to_all_v(parts)?;
    for (s, v) in got.iter().enumerate() {
        ensure!(*v == vec![(s * 10 + me) as u32; (s + me) % 3], "all_to_all_v from {s}: {v:?}");
    }
    Ok(())
}

fn sub_communicators<C: Comm>(c: &C) -> CaseResult {
    let colour = (c.rank() % 2) as u32;
    // Reverse order within each colour by key.
    let key = (c.size() - c.rank()) as u32;
    let sub = c.split(Some(colour), key)?.ok_or_else(|| CaseError("split returned None with a colour".into()))?;
    let members: Vec<usize> = (0..c.size()).filter(|r| r % 2 == colour as usize).rev().collect();
    ensure!(sub.size() == members.len(), "sub-communicator size {} want {}", sub.size(), members.len());
    ensure!(members[sub.rank()] == c.rank(), "sub rank {} is parent rank {}", sub.rank(), c.rank());
    ensure!(sub.world_rank() == c.world_rank(), "world rank changed in a split");
    let sum = sub.all_reduce(&[c.rank() as u64], ReduceOp::Sum)?;
    ensure!(sum[0] == members.iter().sum::<usize>() as u64, "sub all_reduce {sum:?}");
    // Point-to-point inside the sub-communicator does not leak into the parent.
    let next = (sub.rank() + 1) % sub.size();
    sub.send(next, 7, vec![c.rank() as u64])?;
    ensure!(c.iprobe(Source::Any, TagMatch::Tag(7))?.is_none(), "a sub-communicator message matched in the parent");
    let m = sub.recv::<u64>(Source::Any, TagMatch::Tag(7))?;
    let prev = (sub.rank() + sub.size() - 1) % sub.size();
    ensure!(m.source == prev && m.data == vec![members[prev] as u64], "sub message {m:?}");
    // Ranks with no colour take no part; a nested split works.
    let none = c.split(if c.rank() == 0 { None } else { Some(0) }, 0)?;
    ensure!((c.rank() == 0) == none.is_none(), "split with no colour");
    if let Some(n) = none {
        ensure!(n.size() == c.size() - 1, "split without rank 0 has {} ranks", n.size());
        let nested = n.split(Some(0), 0)?.ok_or_else(|| CaseError("nested split".into()))?;
        nested.barrier()?;
    }
    c.barrier()?;
    Ok(())
}

fn aggregation<C: Comm>(c: &C) -> CaseResult {
    let mut agg = Aggregator::<[u32; 2]>::new(c.size());
    for d in 0..c.size() {
        for i in 0..(d + c.rank()) as u32 {
            agg.push(d, [c.rank() as u32, i]);
        }
    }
    let inbox = agg.exchange(c)?;
    for (s, recs) in inbox.iter().enumerate() {
        ensure!(recs.len() == s + c.rank(), "aggregated {} records from {s}", recs.len());
        ensure!(recs.iter().enumerate().all(|(i, r)| *r == [s as u32, i as u32]), "records from {s}: {recs:?}");
    }
    ensure!(agg.is_empty(), "aggregator not empty after exchange");
    // Sparse: a ring neighbourhood.
    let p = c.size();
    let mut nbrs = vec![(c.rank() + 1) % p, (c.rank() + p - 1) % p];
    nbrs.dedup();
    for &n in &nbrs {
        agg.push(n, [c.rank() as u32, n as u32]);
    }
    let got = agg.exchange_with(c, &nbrs, 60)?;
    for (k, &n) in nbrs.iter().enumerate() {
        ensure!(got[k].len() == 1 && got[k][0] == [n as u32, c.rank() as u32], "sparse from {n}: {:?}", got[k]);
    }
    c.barrier()?;
    Ok(())
}

fn bad_arguments<C: Comm>(c: &C) -> CaseResult {
    match c.isend(c.size(), 0, vec![1u8]) {
        Err(CommError::InvalidRank { rank, size }) if rank == c.size() && size == c.size() => {}
        other => return Err(CaseError(format!("send to rank {} gave {:?}", c.size(), other.map(|_| ())))),
    }
    match c.isend(0, crate::MAX_TAG + 1, vec![1u8]) {
        Err(CommError::InvalidTag { .. }) => {}
        other => return Err(CaseError(format!("send with tag MAX_TAG+1 gave {:?}", other.map(|_| ())))),
    }
    match c.all_to_all_v::<u8>(vec![Vec::new(); c.size() + 1]) {
        Err(CommError::BadArgument { .. }) => {}
        other => return Err(CaseError(format!("all_to_all_v with too many parts gave {other:?}"))),
    }
    c.barrier()?;
    Ok(())
}
