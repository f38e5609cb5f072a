//! Collectives of the threads backend, built on point-to-point messages in
//! the communicator's collective context (so they never match user receives).
//!
//! Every collective draws a fresh tag from a per-communicator counter; all
//! ranks call collectives in the same order, so the tags agree.

use bytemuck::Pod;
use parsim_core::Phase;

use super::ThreadComm;
use crate::{check_rank, Comm, CommError, Result, Tag};

fn next_tag(c: &ThreadComm) -> Tag {
    let t = c.collectives.get();
    c.collectives.set(t.wrapping_add(1));
    t & 0x7fff_ffff
}

fn ctx(c: &ThreadComm) -> u32 {
    2 * c.inner.ctx + 1
}

fn send<T: Pod + Send>(c: &ThreadComm, dest: usize, tag: Tag, data: Vec<T>) -> Result<()> {
    c.inner.send_raw(ctx(c), dest, tag, data)
}

fn recv<T: Pod + Send>(c: &ThreadComm, src: usize, tag: Tag) -> Result<Vec<T>> {
    Ok(c.inner.recv_raw(ctx(c), Some(src), Some(tag), true)?.expect("blocking receive").data)
}

/// Dissemination barrier: ⌈log₂ p⌉ rounds, no root.
pub(super) fn barrier(c: &ThreadComm) -> Result<()> {
    let _g = c.clock().enter(Phase::Comm);
    let tag = next_tag(c);
    let (p, r) = (c.size(), c.rank());
    let mut k = 1;
    while k < p {
        send::<u8>(c, (r + k) % p, tag, Vec::new())?;
        recv::<u8>(c, (r + p - k) % p, tag)?;
        k *= 2;
    }
    Ok(())
}

pub(super) fn broadcast<T: Pod + Send>(c: &ThreadComm, root: usize, data: Vec<T>) -> Result<Vec<T>> {
    check_rank(root, c.size())?;
    let _g = c.clock().enter(Phase::Comm);
    let tag = next_tag(c);
    if c.rank() == root {
        for d in (0..c.size()).filter(|&d| d != root) {
            send(c, d, tag, data.clone())?;
        }
        Ok(data)
    } else {
        recv(c, root, tag)
    }
}

pub(super) fn gather<T: Pod + Send>(c: &ThreadComm, root: usize, data: Vec<T>) -> Result<Option<Vec<Vec<T>>>> {
    check_rank(root, c.size())?;
    let _g = c.clock().enter(Phase::Comm);
    let tag = next_tag(c);
    if c.rank() != root {
        send(c, root, tag, data)?;
        return Ok(None);
    }
    let mut own = Some(data);
    let mut out = Vec::with_capacity(c.size());
    for s in 0..c.size() {
        out.push(if s == root { own.take().unwrap_or_default() } else { recv(c, s, tag)? });
    }
    Ok(Some(out))
}

pub(super) fn all_gather<T: Pod + Send>(c: &ThreadComm, data: Vec<T>) -> Result<Vec<Vec<T>>> {
    let gathered = gather(c, 0, data)?;
    let (counts, flat) = match gathered {
        Some(parts) => {
            let counts: Vec<u64> = parts.iter().map(|p| p.len() as u64).collect();
            (counts, parts.concat())
        }
        None => (Vec::new(), Vec::new()),
    };
    let counts = broadcast(c, 0, counts)?;
    let flat = broadcast(c, 0, flat)?;
    let mut out = Vec::with_capacity(counts.len());
    let mut at = 0usize;
    for n in counts {
        let n = n as usize;
        out.push(flat[at..at + n].to_vec());
        at += n;
    }
    Ok(out)
}

pub(super) fn all_to_all_v<T: Pod + Send>(c: &ThreadComm, parts: Vec<Vec<T>>) -> Result<Vec<Vec<T>>> {
    if parts.len() != c.size() {
        return Err(CommError::BadArgument {
            op: "all_to_all_v",
            msg: format!("{} parts given for {} ranks", parts.len(), c.size()),
        });
    }
    let _g = c.clock().enter(Phase::Comm);
    let tag = next_tag(c);
    let me = c.rank();
    let mut own = None;
    for (d, part) in parts.into_iter().enumerate() {
        if d == me {
            own = Some(part);
        } else {
            send(c, d, tag, part)?;
        }
    }
    let mut out = Vec::with_capacity(c.size());
    for s in 0..c.size() {
        out.push(if s == me { own.take().unwrap_or_default() } else { recv(c, s, tag)? });
    }
    Ok(out)
}
