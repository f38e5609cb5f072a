//! One level of the distributed multilevel hierarchy: a rank's owned
//! vertices (weighted), their weighted rows, ghosts and exchange lists, with
//! global ids numbered contiguously per rank (rank `r` owns
//! `firsts[r]..firsts[r + 1]`). Coarsening matches owned vertices with owned
//! neighbours only, so a coarse vertex never spans two ranks and projecting
//! a partition back needs no message.

use parsim_comm::{wait_all, Comm, Pod, Request, Source, Tag, TagMatch};
use parsim_core::rng::{Stream, StreamKey};

use parsim_partition::Graph;

use super::DistGraph;
use crate::error::{GraphError, Result};

const TAG_IDS: Tag = 0x6e1;

/// A rank's share of one level.
pub(super) struct Level {
    pub rank: usize,
    /// Global id of every rank's first owned vertex, `ranks + 1` entries.
    pub firsts: Vec<u64>,
    /// Owned vertex weights.
    pub vw: Vec<i64>,
    /// Rows over local ids (owned `0..n`, ghosts `n..`).
    pub xadj: Vec<usize>,
    pub adj: Vec<u32>,
    pub ew: Vec<i64>,
    /// Global id of each ghost.
    pub ghosts: Vec<u64>,
    /// Neighbouring ranks; `send[q][k]` (owned local id) is `recv[q][k]` (ghost index) on `peers[q]`.
    pub peers: Vec<usize>,
    pub send: Vec<Vec<u32>>,
    pub recv: Vec<Vec<u32>>,
}

impl Level {
    pub fn n(&self) -> usize {
        self.vw.len()
    }

    pub fn n_global(&self) -> u64 {
        *self.firsts.last().unwrap_or(&0)
    }

    pub fn row(&self, u: usize) -> std::ops::Range<usize> {
        self.xadj[u]..self.xadj[u + 1]
    }

    /// Memory held, in bytes.
    pub fn bytes(&self) -> usize {
        self.vw.len() * 8
            + self.xadj.len() * 8
            + self.adj.len() * 12
            + self.ghosts.len() * 8
            + self.send.iter().chain(&self.recv).map(|s| s.len() * 4).sum::<usize>()
    }

    /// The finest level: `d`'s rows with unit vertex and edge weights
    /// (repeated neighbours, as in layered graphs, merge into one weighted
    /// edge; self-loops are dropped). Collective.
    pub fn of<C: Comm>(comm: &C, d: &DistGraph) -> Result<Level> {
        let n = d.owned();
        let firsts = prefix(&comm.all_gather(vec![n as u64])?);
        let base = firsts[comm.rank()];
        let peers = d.peers().to_vec();
        let out = (0..peers.len()).map(|q| d.send_list(q).iter().map(|&i| base + u64::from(i)).collect()).collect();
        let got: Vec<Vec<u64>> = d.exchange(comm, TAG_IDS, out)?;
        let mut ghosts = vec![0u64; d.ghosts()];
        let recv: Vec<Vec<u32>> =
            (0..peers.len()).map(|q| d.recv_list(q).iter().map(|&l| l - n as u32).collect()).collect();
        for (q, ids) in got.iter().enumerate() {
            for (&g, &id) in recv[q].iter().zip(ids) {
                ghosts[g as usize] = id;
            }
        }
        let send = (0..peers.len()).map(|q| d.send_list(q).to_vec()).collect();
        let mut rows = RowBuilder::new(n + d.ghosts());
        for i in 0..n {
            for &l in d.neighbours(i) {
                if l as usize != i {
                    rows.add(l, 1);
                }
            }
            rows.finish_row();
        }
        let (xadj, adj, ew) = rows.into_parts();
        Ok(Level { rank: comm.rank(), firsts, vw: vec![1; n], xadj, adj, ew, ghosts, peers, send, recv })
    }

    /// Sends every owned vertex's value to the ranks that ghost it and
    /// returns the value of every ghost.
    pub fn halo<C: Comm, T: Pod + Send + Default>(&self, comm: &C, tag: Tag, own: &[T]) -> Result<Vec<T>> {
        let mut recvs = Vec::with_capacity(self.peers.len());
        for &p in &self.peers {
            recvs.push(comm.irecv::<T>(Source::Rank(p), TagMatch::Tag(tag))?);
        }
        let mut sends = Vec::with_capacity(self.peers.len());
        for (q, list) in self.send.iter().enumerate() {
            sends.push(comm.isend(self.peers[q], tag, list.iter().map(|&i| own[i as usize]).collect::<Vec<T>>())?);
        }
        let mut ghost = vec![T::default(); self.ghosts.len()];
        for (q, r) in recvs.into_iter().enumerate() {
            let data = r.wait()?.data;
            if data.len() != self.recv[q].len() {
                return Err(GraphError::BadArgument(format!(
                    "multilevel: rank {} sent {} ghost values, {} expected",
                    self.peers[q],
                    data.len(),
                    self.recv[q].len()
                )));
            }
            for (&g, v) in self.recv[q].iter().zip(data) {
                ghost[g as usize] = v;
            }
        }
        wait_all(sends)?;
        Ok(ghost)
    }

    /// This rank's vertices and the edges between them.
    pub fn owned_graph(&self) -> Graph {
        let n = self.n();
        let mut xadj = Vec::with_capacity(n + 1);
        xadj.push(0u64);
        let (mut adjncy, mut adjwgt) = (Vec::new(), Vec::new());
        for u in 0..n {
            for e in self.row(u) {
                if (self.adj[e] as usize) < n {
                    adjncy.push(self.adj[e]);
                    adjwgt.push(weight32(self.ew[e]));
                }
            }
            xadj.push(adjncy.len() as u64);
        }
        Graph { xadj, adjncy, adjwgt, ncon: 1, vwgt: self.vw.clone(), vsize: None, coords: None, dim: 0 }
    }

    /// The whole level as a [`Graph`] (global ids), on every rank. Collective.
    pub fn all_gather<C: Comm>(&self, comm: &C) -> Result<Graph> {
        let n = self.n();
        let base = self.firsts[self.rank];
        let deg: Vec<u64> = (0..n).map(|u| (self.xadj[u + 1] - self.xadj[u]) as u64).collect();
        let adj: Vec<u32> = self
            .adj
            .iter()
            .map(|&l| if (l as usize) < n { base + u64::from(l) } else { self.ghosts[l as usize - n] } as u32)
            .collect();
        let vw = comm.all_gather(self.vw.clone())?;
        let deg = comm.all_gather(deg)?;
        let adj = comm.all_gather(adj)?;
        let ew = comm.all_gather(self.ew.clone())?;
        let mut xadj = Vec::with_capacity(self.n_global() as usize + 1);
        xadj.push(0u64);
        for d in deg.iter().flatten() {
            xadj.push(xadj.last().copied().unwrap_or(0) + d);
        }
        Ok(Graph {
            xadj,
            adjncy: adj.concat(),
            adjwgt: ew.concat().into_iter().map(weight32).collect(),
            ncon: 1,
            vwgt: vw.concat(),
            vsize: None,
            coords: None,
            dim: 0,
        })
    }
}

/// Merges repeated neighbours of a row as it is built.
struct RowBuilder {
    slot: Vec<u32>,
    xadj: Vec<usize>,
    adj: Vec<u32>,
    ew: Vec<i64>,
}

impl RowBuilder {
    fn new(locals: usize) -> Self {
        RowBuilder { slot: vec![u32::MAX; locals], xadj: vec![0], adj: Vec::new(), ew: Vec::new() }
    }

    fn add(&mut self, t: u32, w: i64) {
        let s = &mut self.slot[t as usize];
        if *s == u32::MAX {
            *s = (self.adj.len() - self.xadj.last().copied().unwrap_or(0)) as u32;
            self.adj.push(t);
            self.ew.push(w);
        } else {
            let at = self.xadj.last().copied().unwrap_or(0) + *s as usize;
            self.ew[at] += w;
        }
    }

    fn finish_row(&mut self) {
        let start = self.xadj.last().copied().unwrap_or(0);
        for &t in &self.adj[start..] {
            self.slot[t as usize] = u32::MAX;
        }
        self.xadj.push(self.adj.len());
    }

    fn into_parts(self) -> (Vec<usize>, Vec<u32>, Vec<i64>) {
        (self.xadj, self.adj, self.ew)
    }
}

/// `counts` (one per rank) as first ids, with the total last.
pub(super) fn prefix(counts: &[Vec<u64>]) -> Vec<u64> {
    let mut firsts = Vec::with_capacity(counts.len() + 1);
    firsts.push(0);
    for c in counts {
        firsts.push(firsts.last().copied().unwrap_or(0) + c.first().copied().unwrap_or(0));
    }
    firsts
}

/// The seeded stream of one rank at one level.
pub(super) fn level_stream(seed: u64, level: usize, rank: usize) -> Stream {
    StreamKey::new(seed).purpose("parsim.graph.dist.multilevel").with(level as u64).with(rank as u64).stream()
}

/// A coarse edge's weight for the sequential partitioner's 32-bit edge
/// weights: a sum of unit edges, so at most the graph's edge count, which
/// [`DistGraph::multilevel`](crate::DistGraph::multilevel) checks on entry.
pub(crate) fn weight32(w: i64) -> u32 {
    u32::try_from(w).expect("an edge weight within the 32-bit total checked on entry")
}
