//! Moving rows between ranks: a new partition applied to a distributed graph
//! (rows travel to their new owners, ghosts learn their owners' new ranks from
//! the old ones), and gathering the whole graph on one rank for a sequential
//! partitioner.

use parsim_comm::{Comm, ReduceOp};

use super::{exchange_in_rounds, DistGraph, Owned, Rows};
use crate::csr::Csr;
use crate::error::{GraphError, Result};

const TAG_NEW_OWNERS: u32 = 0x6d0;
const ROUND_BYTES: usize = 256 << 20;

impl DistGraph {
    /// The view after every owned vertex `i` moves, with its row, to rank
    /// `owner[i]`. Collective: every rank passes the new owners of its own
    /// vertices; nobody needs the whole owner map (each ghost's new owner
    /// comes from its old owner, over the existing exchange lists).
    ///
    /// ```
    /// use parsim_comm::Comm;
    /// use parsim_graph::{Csr, DistGraph};
    /// let (g, _) = Csr::from_pairs(6, vec![(0, 1), (1, 2), (2, 3), (3, 4), (4, 5)], None);
    /// let owner = [0, 0, 0, 1, 1, 1];
    /// let moved = parsim_comm::launch(2, |comm| {
    ///     let d = DistGraph::build(comm.rank(), 2, &g, &owner)?;
    ///     // Swap the halves: every vertex goes to the other rank.
    ///     let to = vec![1 - comm.rank() as u32; d.owned()];
    ///     let e = d.redistribute(&comm, &to)?;
    ///     Ok::<_, parsim_graph::GraphError>(e.owned_ids().to_vec())
    /// })?;
    /// assert_eq!(moved, vec![vec![3, 4, 5], vec![0, 1, 2]]);
    /// # Ok::<(), parsim_graph::GraphError>(())
    /// ```
    pub fn redistribute<C: Comm>(&self, comm: &C, owner: &[u32]) -> Result<DistGraph> {
        let (p, me) = (comm.size(), comm.rank());
        let n_own = self.owned();
        let bad = owner.len() != n_own || owner.iter().any(|&q| q as usize >= p);
        if comm.all_reduce(&[u64::from(bad)], ReduceOp::Max)?[0] == 1 {
            return Err(GraphError::BadArgument(format!(
                "redistribute: every rank gives one new owner in 0..{p} per owned vertex (rank {me}: {} for {n_own})",
                owner.len()
            )));
        }
        // The new owners of the ghosts, from their current owners.
        let out: Vec<Vec<u32>> =
            (0..self.peers.len()).map(|q| self.send_list(q).iter().map(|&i| owner[i as usize]).collect()).collect();
        let got = self.exchange(comm, TAG_NEW_OWNERS, out)?;
        let mut ghost_new = vec![0u32; self.ghosts()];
        for (q, vals) in got.iter().enumerate() {
            for (&l, &o) in self.recv[q].iter().zip(vals) {
                ghost_new[l as usize - n_own] = o;
            }
        }
        let new_of = |l: usize| if l < n_own { owner[l] } else { ghost_new[l - n_own] };
        // Rows: [gid, degree, then per entry: neighbour gid, its owner, layer?, weight bits?].
        let (layered, weighted) = (self.layer.is_some(), self.weight.is_some());
        let width = 2 + usize::from(layered) + 2 * usize::from(weighted);
        let mut parts: Vec<Vec<u32>> = vec![Vec::new(); p];
        for i in 0..n_own {
            let buf = &mut parts[owner[i] as usize];
            let r = self.row(i);
            buf.extend_from_slice(&[self.global(i), r.len() as u32]);
            for e in r {
                let l = self.adj[e] as usize;
                buf.extend_from_slice(&[self.global(l), new_of(l)]);
                if layered {
                    buf.push(u32::from(self.layer_at(e)));
                }
                if weighted {
                    let b = self.weight_at(e).to_bits();
                    buf.extend_from_slice(&[b as u32, (b >> 32) as u32]);
                }
            }
        }
        drop(ghost_new);
        let got = exchange_in_rounds(comm, parts, ROUND_BYTES)?;
        // Index the received rows by global id.
        let mut heads: Vec<(u32, usize, usize)> = Vec::new(); // (gid, source, offset)
        for (src, buf) in got.iter().enumerate() {
            let mut at = 0usize;
            while at < buf.len() {
                heads.push((buf[at], src, at));
                at += 2 + buf[at + 1] as usize * width;
            }
        }
        heads.sort_unstable();
        let total: usize = heads.iter().map(|&(_, s, at)| got[s][at + 1] as usize).sum();
        let mut xadj = Vec::with_capacity(heads.len() + 1);
        xadj.push(0u64);
        let mut adj = Vec::with_capacity(total);
        let mut layer = layered.then(|| Vec::with_capacity(total));
        let mut weight = weighted.then(|| Vec::with_capacity(total));
        let mut owners: Vec<(u32, u32)> = Vec::new();
        let mut row: Vec<(u32, u8, f64)> = Vec::new();
        for &(_, s, at) in &heads {
            let buf = &got[s];
            let deg = buf[at + 1] as usize;
            row.clear();
            for k in 0..deg {
                let e = &buf[at + 2 + k * width..at + 2 + (k + 1) * width];
                let l = if layered { e[2] as u8 } else { 0 };
                let w = if weighted {
                    let o = 2 + usize::from(layered);
                    f64::from_bits(u64::from(e[o]) | u64::from(e[o + 1]) << 32)
                } else {
                    1.0
                };
                row.push((e[0], l, w));
                if e[1] as usize != me {
                    owners.push((e[0], e[1]));
                }
            }
            row.sort_unstable_by_key(|x| x.0);
            for &(u, l, w) in &row {
                adj.push(u);
                if let Some(x) = layer.as_mut() {
                    x.push(l);
                }
                if let Some(x) = weight.as_mut() {
                    x.push(w);
                }
            }
            xadj.push(adj.len() as u64);
        }
        let ids: Vec<u32> = heads.iter().map(|h| h.0).collect();
        drop(heads);
        drop(got);
        owners.sort_unstable();
        owners.dedup();
        let rows = Rows { n_global: self.n_global, owned: Owned::List(ids), xadj, adj, weight, layer };
        let lookup = |v: u32| {
            let k = owners.partition_point(|x| x.0 < v);
            owners.get(k).filter(|x| x.0 == v).map_or(u32::MAX, |x| x.1)
        };
        DistGraph::from_rows(me, p, rows, &lookup)
    }

    /// The whole graph (adjacency only) on rank `root`, `None` elsewhere.
    /// Collective. For a sequential partitioner: only `root` holds it.
    pub fn gather<C: Comm>(&self, comm: &C, root: usize) -> Result<Option<Csr>> {
        let mut mine = Vec::with_capacity(2 * self.owned() + self.adj.len());
        for i in 0..self.owned() {
            let r = self.row(i);
            mine.extend_from_slice(&[self.global(i), r.len() as u32]);
            mine.extend(r.map(|e| self.global(self.adj[e] as usize)));
        }
        let Some(all) = comm.gather(root, mine)? else {
            return Ok(None);
        };
        let n = self.n_global;
        let mut deg = vec![0u64; n];
        let mut heads: Vec<(usize, usize)> = Vec::new();
        for (s, buf) in all.iter().enumerate() {
            let mut at = 0usize;
            while at < buf.len() {
                deg[buf[at] as usize] = u64::from(buf[at + 1]);
                heads.push((s, at));
                at += 2 + buf[at + 1] as usize;
            }
        }
        let mut xadj = Vec::with_capacity(n + 1);
        xadj.push(0u64);
        for d in deg {
            xadj.push(xadj[xadj.len() - 1] + d);
        }
        let mut adj = vec![0u32; xadj[n] as usize];
        for (s, at) in heads {
            let buf = &all[s];
            let (v, d) = (buf[at] as usize, buf[at + 1] as usize);
            let start = xadj[v] as usize;
            adj[start..start + d].copy_from_slice(&buf[at + 2..at + 2 + d]);
            adj[start..start + d].sort_unstable();
        }
        Ok(Some(Csr { xadj, adj, weight: None, layer: None }))
    }

    /// Rank `root`'s `owner` array (one entry per vertex of the whole graph)
    /// cut into every rank's share: each rank gets the entries of its owned
    /// vertices, in local id order. Collective; `owner` is read on `root` only.
    pub fn scatter_owned<C: Comm>(&self, comm: &C, root: usize, owner: &[u32]) -> Result<Vec<u32>> {
        let ids = comm.gather(root, self.owned_ids().to_vec())?;
        let mut parts: Vec<Vec<u32>> = vec![Vec::new(); comm.size()];
        if let Some(ids) = ids {
            for (q, vs) in ids.iter().enumerate() {
                parts[q] = vs.iter().map(|&v| owner[v as usize]).collect();
            }
        }
        let mut got = exchange_in_rounds(comm, parts, ROUND_BYTES)?;
        Ok(std::mem::take(&mut got[root]))
    }
}
