//! Dynamic load balancing of the epidemic: agents grouped into chunks of
//! consecutive global ids (a synthetic population numbers its districts
//! consecutively, so a chunk is a piece of geography), loads measured per
//! chunk, and the agents of a chunk that changes owner moved with their
//! whole state.

use parsim_comm::Comm;
use parsim_graph::{Csr, DistGraph};
use parsim_lb::{Balancer, Chunks};

use crate::error::{AbmError, Result};
use crate::resume::Piece;
use crate::seir::State;

const TAG_ANNOUNCE: u32 = 611;

/// What a balanced epidemic ([`run_balanced`](crate::seir::run_balanced)) is given, and what it reports.
pub struct Balance<'a> {
    /// The balancer; its chunks are the runs of `chunk` consecutive global ids.
    pub lb: &'a mut Balancer,
    /// Agents per chunk.
    pub chunk: u32,
    /// The owner of every chunk (the map the run's graph was built from;
    /// updated at every rebalance).
    pub owner: Vec<u32>,
    /// A slowed rank and its factor (`--inject slow:rank=R,factor=F`).
    pub slow: Option<(usize, f64)>,
    /// Set by the run: the mean over days of mean / max compute per rank.
    pub efficiency: f64,
    /// Set by the run: the work this rank did (sources, draws and attempts handled).
    pub work: f64,
}

impl<'a> Balance<'a> {
    /// Balancing with `lb`, chunks of `chunk` agents, starting from the
    /// balancer's initial map.
    pub fn new(lb: &'a mut Balancer, chunk: u32) -> Balance<'a> {
        let owner = lb.initial_map();
        Balance { lb, chunk: chunk.max(1), owner, slow: None, efficiency: 1.0, work: 0.0 }
    }

    /// The chunks of `graph` in runs of `chunk` consecutive ids, adjacent
    /// where an edge joins them, laid out on a line in id order (so `sfc`
    /// cuts the id order into runs of equal load).
    pub fn chunks(graph: &Csr, chunk: u32) -> Chunks {
        let chunk = chunk.max(1) as usize;
        let n = graph.n();
        let mut nb: Vec<Vec<u32>> = vec![Vec::new(); n.div_ceil(chunk)];
        for v in 0..n {
            let c = v / chunk;
            for &u in graph.neighbours(v) {
                let d = u as usize / chunk;
                if d != c {
                    nb[c].push(d as u32);
                }
            }
        }
        for l in &mut nb {
            l.sort_unstable();
            l.dedup();
        }
        Chunks::from_neighbours(&nb, None)
    }

    /// [`chunks`](Self::chunks) of a distributed graph, from every rank's
    /// own rows (the chunk adjacency is all-gathered; it is as small as the
    /// number of chunks). Collective; equal to `chunks` of the whole graph.
    pub fn chunks_local<C: Comm>(comm: &C, g: &DistGraph, chunk: u32) -> Result<Chunks> {
        let chunk = chunk.max(1);
        let n = g.global_vertices();
        // (chunk, chunk) pairs, kept distinct as they come (there are at most chunks²).
        let mut pairs: Vec<u64> = Vec::new();
        let mut kept = 0usize;
        for i in 0..g.owned() {
            let c = g.global(i) / chunk;
            for &l in g.neighbours(i) {
                let d = g.global(l as usize) / chunk;
                if d != c {
                    pairs.push(u64::from(c) << 32 | u64::from(d));
                }
            }
            if pairs.len() > 2 * kept + (1 << 16) {
                pairs.sort_unstable();
                pairs.dedup();
                kept = pairs.len();
            }
        }
        pairs.sort_unstable();
        pairs.dedup();
        let flat: Vec<u32> = pairs.iter().flat_map(|&x| [(x >> 32) as u32, x as u32]).collect();
        let mut nb: Vec<Vec<u32>> = vec![Vec::new(); n.div_ceil(chunk as usize)];
        for got in comm.all_gather(flat)? {
            for cd in got.chunks_exact(2) {
                nb[cd[0] as usize].push(cd[1]);
            }
        }
        for l in &mut nb {
            l.sort_unstable();
            l.dedup();
        }
        Ok(Chunks::from_neighbours(&nb, None))
    }

    /// The owner of each of `n` agents under the current chunk map.
    pub fn agent_owner(&self, n: usize) -> Vec<u32> {
        (0..n).map(|a| self.owner[a / self.chunk as usize]).collect()
    }

    /// Charges this rank's `secs` of compute to its chunks in proportion to
    /// `work` (split evenly when there was none) and ends the day.
    pub(crate) fn record(&mut self, g: &DistGraph, work: &[f64], secs: f64) {
        let me = g.rank() as u32;
        let mine: Vec<usize> = (0..self.owner.len()).filter(|&c| self.owner[c] == me).collect();
        let total: f64 = mine.iter().map(|&c| work[c]).sum();
        self.work += total;
        for &c in &mine {
            let share = if total > 0.0 { work[c] / total } else { 1.0 / mine.len() as f64 };
            self.lb.record(c, secs * share, work[c]);
        }
    }
}

// The wire form of a migrating share: [agents, then 3 words per agent:
// global id, state | infection day << 8 | announced << 24, isolation day],
// then for each of onsets, isolations, exits and attempts [count, then
// (day, global id) pairs].
fn encode(p: &Piece) -> Vec<u32> {
    let mut v = Vec::with_capacity(1 + 3 * p.agents.len() + 4);
    v.push(p.agents.len() as u32);
    for &(gid, st, inf, iso, announced) in &p.agents {
        v.extend([gid, u32::from(st) | u32::from(inf) << 8 | u32::from(announced) << 24, iso]);
    }
    for list in [&p.onset, &p.iso, &p.exit, &p.attempts] {
        v.push(list.len() as u32);
        for &(t, gid) in list {
            v.extend([t, gid]);
        }
    }
    v
}

/// Splits this rank's share `p` by the new owner of each agent (`dest`),
/// encoded for `all_to_all_v`.
pub(crate) fn outgoing(p: &Piece, ranks: usize, dest: impl Fn(u32) -> u32) -> Vec<Vec<u32>> {
    let mut parts: Vec<Piece> = (0..ranks).map(|_| Piece::default()).collect();
    for &a in &p.agents {
        parts[dest(a.0) as usize].agents.push(a);
    }
    for (k, list) in [&p.onset, &p.iso, &p.exit, &p.attempts].into_iter().enumerate() {
        for &(t, gid) in list {
            let q = &mut parts[dest(gid) as usize];
            [&mut q.onset, &mut q.iso, &mut q.exit, &mut q.attempts][k].push((t, gid));
        }
    }
    parts.iter().map(encode).collect()
}

/// Reads what [`outgoing`] wrote, at day `days`.
pub(crate) fn decode(v: &[u32], days: u32) -> Result<Piece> {
    let bad = || AbmError::Invariant(format!("a migration message of {} words is malformed", v.len()));
    let mut at = 0usize;
    let mut next = |k: usize| -> Result<&[u32]> {
        let s = v.get(at..at + k).ok_or_else(bad)?;
        at += k;
        Ok(s)
    };
    let n = next(1)?[0] as usize;
    let mut p = Piece { days, ..Piece::default() };
    p.agents = next(3 * n)?
        .chunks_exact(3)
        .map(|w| (w[0], w[1] as u8, (w[1] >> 8) as u16, w[2], w[1] >> 24 & 1 == 1))
        .collect();
    for k in 0..4 {
        let m = next(1)?[0] as usize;
        let list: Vec<(u32, u32)> = next(2 * m)?.chunks_exact(2).map(|w| (w[0], w[1])).collect();
        *[&mut p.onset, &mut p.iso, &mut p.exit, &mut p.attempts][k] = list;
    }
    if at != v.len() {
        return Err(bad());
    }
    Ok(p)
}

/// Tells the ranks that now hold ghosts of this rank's agents which of
/// them left S and were announced before the move (collective): their
/// neighbours stop drawing for them exactly as before.
pub(crate) fn announce<C: Comm>(comm: &C, g: &DistGraph, s: &mut State) -> Result<()> {
    let unannounced: std::collections::HashSet<u32> = s.left_s.iter().copied().collect();
    let mut out: Vec<Vec<u32>> = vec![Vec::new(); g.peers().len()];
    for i in 0..g.owned() {
        if s.st[i] != crate::seir::state::S && !unannounced.contains(&(i as u32)) {
            for (q, _) in g.ghosted_at(i) {
                out[q as usize].push(g.global(i));
            }
        }
    }
    for gid in g.exchange(comm, TAG_ANNOUNCE, out)?.into_iter().flatten() {
        s.mark_gone(g, gid);
    }
    Ok(())
}
