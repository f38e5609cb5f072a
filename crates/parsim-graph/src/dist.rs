//! One rank's view of a vertex-partitioned graph: the vertices it owns, ghost
//! copies of the remote neighbours they touch, and the exchange lists that
//! connect each ghost to its owner.
//!
//! Local ids: owned vertices are `0..owned()` (ascending global id), ghosts
//! follow (`owned()..owned() + ghosts()`, ascending global id). For every
//! neighbouring rank `q`, this rank's `send` list (owned vertices adjacent to
//! one of `q`'s, ascending global id) is position for position `q`'s `recv`
//! list (its ghosts owned here), so exchanges carry values without ids.

use parsim_comm::{wait_all, Comm, Pod, Request, Source, Tag, TagMatch};

use crate::csr::Csr;
use crate::error::{GraphError, Result};

/// A rank's part of a partitioned graph: owned vertices, ghosts and exchange lists.
///
/// ```
/// use parsim_graph::{Csr, DistGraph};
/// // A path 0 - 1 - 2 - 3 split in two.
/// let (g, _) = Csr::from_pairs(4, vec![(0, 1), (1, 2), (2, 3)], None);
/// let owner = [0, 0, 1, 1];
/// let d = DistGraph::build(0, 2, &g, &owner).unwrap();
/// assert_eq!((d.owned(), d.ghosts()), (2, 1));
/// assert_eq!(d.global(2), 2); // the ghost of vertex 2
/// assert_eq!(d.peers(), &[1]);
/// ```
#[derive(Clone, Debug)]
pub struct DistGraph {
    rank: usize,
    ranks: usize,
    n_global: usize,
    /// Global ids of local vertices (owned, then ghosts).
    ids: Vec<u32>,
    n_owned: usize,
    /// Owned rows (local ids), with their global degree = row length.
    xadj: Vec<u64>,
    adj: Vec<u32>,
    weight: Option<Vec<f64>>,
    layer: Option<Vec<u8>>,
    /// Edges from owned vertices to ghosts.
    cut: usize,
    /// The ranks this one exchanges with, ascending.
    peers: Vec<usize>,
    /// Per peer: owned local ids it ghosts / ghost local ids it owns.
    send: Vec<Vec<u32>>,
    recv: Vec<Vec<u32>>,
    /// Per owned vertex: the (peer index, position in its send list) pairs.
    bxadj: Vec<u32>,
    bent: Vec<(u32, u32)>,
    /// The owner of every ghost (parallel to the ghost part of `ids`).
    ghost_owner: Vec<u32>,
}

impl DistGraph {
    /// Builds rank `rank`'s view of `g` partitioned by `owner` (a part id in
    /// `0..ranks` per vertex). Every rank builds its own view from the same
    /// global graph and owner array; no communication is needed.
    pub fn build(rank: usize, ranks: usize, g: &Csr, owner: &[u32]) -> Result<DistGraph> {
        let n = g.n();
        if owner.len() != n {
            return Err(GraphError::BadArgument(format!("{} owners for {n} vertices", owner.len())));
        }
        if let Some((v, &p)) = owner.iter().enumerate().find(|&(_, &p)| p as usize >= ranks) {
            return Err(GraphError::BadArgument(format!(
                "vertex {v} is given to part {p}, but there are {ranks} ranks"
            )));
        }
        let me = rank as u32;
        // Global → local, for owned and ghost vertices (u32::MAX: not here).
        let mut local = vec![u32::MAX; n];
        let mut ids: Vec<u32> = Vec::new();
        for v in 0..n {
            if owner[v] == me {
                local[v] = ids.len() as u32;
                ids.push(v as u32);
            }
        }
        let n_owned = ids.len();
        let mut ghost_flag = Vec::new();
        for i in 0..n_owned {
            for &u in g.neighbours(ids[i] as usize) {
                if owner[u as usize] != me && local[u as usize] == u32::MAX {
                    local[u as usize] = u32::MAX - 1;
                    ghost_flag.push(u);
                }
            }
        }
        ghost_flag.sort_unstable();
        for &u in &ghost_flag {
            local[u as usize] = ids.len() as u32;
            ids.push(u);
        }
        let ghost_owner: Vec<u32> = ghost_flag.iter().map(|&u| owner[u as usize]).collect();
        drop(ghost_flag);
        // Owned rows in local ids.
        let mut xadj = Vec::with_capacity(n_owned + 1);
        xadj.push(0u64);
        let total: usize = ids[..n_owned].iter().map(|&v| g.degree(v as usize)).sum();
        let mut adj = Vec::with_capacity(total);
        let mut weight = g.weight.as_ref().map(|_| Vec::with_capacity(total));
        let mut layer = g.layer.as_ref().map(|_| Vec::with_capacity(total));
        let mut cut = 0usize;
        for i in 0..n_owned {
            // Owned neighbours first, then ghosts (each part in global id order).
            for ghosts in [false, true] {
                for e in g.row(ids[i] as usize) {
                    let l = local[g.adj[e] as usize];
                    if (l as usize >= n_owned) != ghosts {
                        continue;
                    }
                    adj.push(l);
                    cut += usize::from(ghosts);
                    if let (Some(w), Some(src)) = (weight.as_mut(), g.weight.as_ref()) {
                        w.push(src[e]);
                    }
                    if let (Some(w), Some(src)) = (layer.as_mut(), g.layer.as_ref()) {
                        w.push(src[e]);
                    }
                }
            }
            xadj.push(adj.len() as u64);
        }
        drop(local);
        // Peers and exchange lists.
        let mut peers: Vec<usize> = ghost_owner.iter().map(|&p| p as usize).collect();
        peers.sort_unstable();
        peers.dedup();
        let peer_index = |p: usize| peers.binary_search(&p).expect("a peer");
        let mut recv = vec![Vec::new(); peers.len()];
        for (j, &p) in ghost_owner.iter().enumerate() {
            recv[peer_index(p as usize)].push((n_owned + j) as u32);
        }
        let mut send = vec![Vec::new(); peers.len()];
        let mut bxadj = Vec::with_capacity(n_owned + 1);
        bxadj.push(0u32);
        let mut bent = Vec::new();
        let mut seen: Vec<usize> = Vec::new();
        for i in 0..n_owned {
            seen.clear();
            for &l in &adj[xadj[i] as usize..xadj[i + 1] as usize] {
                if l as usize >= n_owned {
                    seen.push(peer_index(ghost_owner[l as usize - n_owned] as usize));
                }
            }
            seen.sort_unstable();
            seen.dedup();
            for &q in &seen {
                bent.push((q as u32, send[q].len() as u32));
                send[q].push(i as u32);
            }
            bxadj.push(bent.len() as u32);
        }
        Ok(DistGraph {
            rank,
            ranks,
            n_global: n,
            ids,
            n_owned,
            xadj,
            adj,
            weight,
            layer,
            cut,
            peers,
            send,
            recv,
            bxadj,
            bent,
            ghost_owner,
        })
    }

    /// This rank.
    pub fn rank(&self) -> usize {
        self.rank
    }

    /// The number of ranks.
    pub fn ranks(&self) -> usize {
        self.ranks
    }

    /// Vertices in the whole graph.
    pub fn global_vertices(&self) -> usize {
        self.n_global
    }

    /// Vertices owned here.
    #[inline]
    pub fn owned(&self) -> usize {
        self.n_owned
    }

    /// Ghost vertices held here.
    #[inline]
    pub fn ghosts(&self) -> usize {
        self.ids.len() - self.n_owned
    }

    /// The global id of local vertex `l` (owned or ghost).
    #[inline]
    pub fn global(&self, l: usize) -> u32 {
        self.ids[l]
    }

    /// `Some(b)` when the owned vertices are exactly the global ids `b..b + owned()`
    /// (block partitions): then `global(i) = b + i` for owned `i`, without a lookup.
    #[inline]
    pub fn owned_base(&self) -> Option<u32> {
        let n = self.n_owned;
        (n > 0 && self.ids[n - 1] - self.ids[0] == (n - 1) as u32).then(|| self.ids[0])
    }

    /// Global ids of the owned vertices, ascending.
    pub fn owned_ids(&self) -> &[u32] {
        &self.ids[..self.n_owned]
    }

    /// The local id of global vertex `v`, if it is owned or a ghost here.
    pub fn local(&self, v: u32) -> Option<usize> {
        if let Ok(i) = self.ids[..self.n_owned].binary_search(&v) {
            return Some(i);
        }
        self.ids[self.n_owned..].binary_search(&v).ok().map(|j| self.n_owned + j)
    }

    /// The owner of ghost `l` (a local id ≥ `owned()`).
    pub fn ghost_owner(&self, l: usize) -> usize {
        self.ghost_owner[l - self.n_owned] as usize
    }

    /// The owned neighbours of owned vertex `i` (the first part of its row).
    #[inline]
    pub fn owned_neighbours(&self, i: usize) -> &[u32] {
        let row = self.neighbours(i);
        &row[..row.partition_point(|&l| (l as usize) < self.n_owned)]
    }

    /// The neighbours (local ids) of owned vertex `i`, owned ones first, then
    /// ghosts, each part in global id order; its degree is the length.
    #[inline]
    pub fn neighbours(&self, i: usize) -> &[u32] {
        &self.adj[self.xadj[i] as usize..self.xadj[i + 1] as usize]
    }

    /// The `adj` index range of owned vertex `i` (for [`weight_at`](Self::weight_at), [`layer_at`](Self::layer_at)).
    #[inline]
    pub fn row(&self, i: usize) -> std::ops::Range<usize> {
        self.xadj[i] as usize..self.xadj[i + 1] as usize
    }

    /// Entries in the owned rows (the upper bound of [`row`](Self::row) indices).
    #[inline]
    pub fn adjacency_len(&self) -> usize {
        self.adj.len()
    }

    /// The neighbour at `adj` index `e`.
    #[inline]
    pub fn adj_at(&self, e: usize) -> u32 {
        self.adj[e]
    }

    /// The weight of owned edge `e` (1 without weights).
    #[inline]
    pub fn weight_at(&self, e: usize) -> f64 {
        self.weight.as_ref().map_or(1.0, |w| w[e])
    }

    /// The layer of owned edge `e` (0 without layers).
    #[inline]
    pub fn layer_at(&self, e: usize) -> u8 {
        self.layer.as_ref().map_or(0, |l| l[e])
    }

    /// The layers of owned vertex `i`'s edges (parallel to [`neighbours`](Self::neighbours)), if labelled.
    #[inline]
    pub fn layers_of(&self, i: usize) -> Option<&[u8]> {
        self.layer.as_ref().map(|l| &l[self.xadj[i] as usize..self.xadj[i + 1] as usize])
    }

    /// The neighbouring ranks, ascending.
    pub fn peers(&self) -> &[usize] {
        &self.peers
    }

    /// Owned vertices peer `q` (an index into [`peers`](Self::peers)) holds ghosts of.
    pub fn send_list(&self, q: usize) -> &[u32] {
        &self.send[q]
    }

    /// Ghosts owned by peer `q`, in the order of its send list.
    pub fn recv_list(&self, q: usize) -> &[u32] {
        &self.recv[q]
    }

    /// Where owned vertex `i` is ghosted: (peer index, position in that peer's send list).
    #[inline]
    pub fn ghosted_at(&self, i: usize) -> &[(u32, u32)] {
        &self.bent[self.bxadj[i] as usize..self.bxadj[i + 1] as usize]
    }

    /// Whether owned vertex `i` has a ghost on another rank.
    #[inline]
    pub fn is_boundary(&self, i: usize) -> bool {
        self.bxadj[i] != self.bxadj[i + 1]
    }

    /// Edges from owned vertices to ghosts (each cut edge counted once per side).
    pub fn cut_edges(&self) -> usize {
        self.cut
    }

    /// Memory held, in bytes.
    pub fn bytes(&self) -> usize {
        self.ids.len() * 4
            + self.xadj.len() * 8
            + self.adj.len() * 4
            + self.weight.as_ref().map_or(0, |w| w.len() * 8)
            + self.layer.as_ref().map_or(0, |w| w.len())
            + self.send.iter().chain(&self.recv).map(|s| s.len() * 4).sum::<usize>()
            + self.bxadj.len() * 4
            + self.bent.len() * 8
            + self.ghost_owner.len() * 4
    }

    /// Sends `out[q]` to peer `q` and receives what each peer sent here, with
    /// one message per neighbouring rank (empty ones included), tagged `tag`.
    /// Every peer must call it in the same superstep.
    pub fn exchange<C: Comm, T: Pod + Send>(&self, comm: &C, tag: Tag, out: Vec<Vec<T>>) -> Result<Vec<Vec<T>>> {
        debug_assert_eq!(out.len(), self.peers.len());
        let mut recvs = Vec::with_capacity(self.peers.len());
        for &p in &self.peers {
            recvs.push(comm.irecv::<T>(Source::Rank(p), TagMatch::Tag(tag))?);
        }
        let mut sends = Vec::with_capacity(self.peers.len());
        for (q, data) in out.into_iter().enumerate() {
            sends.push(comm.isend(self.peers[q], tag, data)?);
        }
        let mut got = Vec::with_capacity(self.peers.len());
        for r in recvs {
            got.push(r.wait()?.data);
        }
        wait_all(sends)?;
        Ok(got)
    }

    /// Tells every rank that ghosts one of the owned vertices `marked` about
    /// it (one message per neighbouring rank, ids only) and returns the ghost
    /// local ids marked by their owners.
    pub fn exchange_marked<C: Comm>(&self, comm: &C, tag: Tag, marked: &[u32]) -> Result<Vec<u32>> {
        let mut idx: Vec<Vec<u32>> = vec![Vec::new(); self.peers.len()];
        for &i in marked {
            for &(q, pos) in self.ghosted_at(i as usize) {
                idx[q as usize].push(pos);
            }
        }
        let got = self.exchange(comm, tag, idx)?;
        Ok(got.iter().enumerate().flat_map(|(q, is)| is.iter().map(move |&pos| self.recv[q][pos as usize])).collect())
    }

    /// Sends the new values of changed owned vertices to every rank that
    /// ghosts them (only what changed, one message per neighbouring rank) and
    /// returns the (ghost local id, value) updates received.
    pub fn exchange_changes<C: Comm, T: Pod + Send>(
        &self,
        comm: &C,
        tag: Tag,
        changed: &[(u32, T)],
    ) -> Result<Vec<(u32, T)>> {
        let mut idx: Vec<Vec<u32>> = vec![Vec::new(); self.peers.len()];
        let mut val: Vec<Vec<T>> = vec![Vec::new(); self.peers.len()];
        for &(i, v) in changed {
            for &(q, pos) in self.ghosted_at(i as usize) {
                idx[q as usize].push(pos);
                val[q as usize].push(v);
            }
        }
        let idx = self.exchange(comm, tag, idx)?;
        let val = self.exchange(comm, tag, val)?;
        let mut out = Vec::with_capacity(idx.iter().map(Vec::len).sum());
        for (q, (is, vs)) in idx.iter().zip(&val).enumerate() {
            for (&pos, &v) in is.iter().zip(vs) {
                out.push((self.recv[q][pos as usize], v));
            }
        }
        Ok(out)
    }
}
