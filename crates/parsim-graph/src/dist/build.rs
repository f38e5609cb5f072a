//! Building a rank's view from its own rows (global ids), with no array
//! sized by the whole graph.

use super::{DistGraph, GhostTable, Offsets};
use crate::csr::Csr;
use crate::error::{GraphError, Result};

/// The vertices a rank owns.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Owned {
    /// The global ids `lo..hi`.
    Block(u32, u32),
    /// These global ids (ascending, distinct).
    List(Vec<u32>),
}

impl Owned {
    /// How many.
    pub fn len(&self) -> usize {
        match self {
            Owned::Block(lo, hi) => (hi - lo) as usize,
            Owned::List(v) => v.len(),
        }
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The local id of `v`, if owned.
    #[inline]
    pub fn local(&self, v: u32) -> Option<u32> {
        match self {
            Owned::Block(lo, hi) => (v >= *lo && v < *hi).then(|| v - lo),
            Owned::List(ids) => ids.binary_search(&v).ok().map(|i| i as u32),
        }
    }

    /// The global id of owned vertex `i`.
    #[inline]
    pub fn global(&self, i: usize) -> u32 {
        match self {
            Owned::Block(lo, _) => lo + i as u32,
            Owned::List(ids) => ids[i],
        }
    }

    /// A list that is a run of consecutive ids becomes a block.
    fn normalised(self) -> Owned {
        match self {
            Owned::List(v) if v.last().is_some_and(|&l| (l - v[0]) as usize == v.len() - 1) => {
                Owned::Block(v[0], v[0] + v.len() as u32)
            }
            o => o,
        }
    }
}

/// Global id → local id of the owned vertices, for [`DistGraph::from_rows`],
/// which asks it of every adjacency entry: a block by subtraction, a list
/// through a [`GhostTable`] over its ids (a ranked bitmap where they are
/// dense, as after partitioning a random graph, else a hash table): one
/// cache line per lookup, where a binary search over a rank's millions of
/// ids waits for twenty (at 10⁷ agents on 2 ranks, `from_rows` with the
/// search took 27 % of a run's samples).
struct OwnedIndex<'a> {
    owned: &'a Owned,
    table: GhostTable,
}

impl<'a> OwnedIndex<'a> {
    fn new(owned: &'a Owned) -> OwnedIndex<'a> {
        let table = match owned {
            Owned::List(ids) => GhostTable::new(ids),
            Owned::Block(..) => GhostTable::default(),
        };
        OwnedIndex { owned, table }
    }

    #[inline]
    fn local(&self, v: u32) -> Option<u32> {
        match self.owned {
            Owned::List(ids) => self.table.find(ids, v).map(|i| i as u32),
            block => block.local(v),
        }
    }
}

/// One rank's rows in global ids: the input of [`DistGraph::from_rows`].
#[derive(Clone, Debug)]
pub struct Rows {
    /// Vertices in the whole graph.
    pub n_global: usize,
    /// The owned vertices; row `i` belongs to the `i`-th.
    pub owned: Owned,
    /// Row offsets (`owned.len() + 1`).
    pub xadj: Vec<u64>,
    /// Neighbours' global ids; each row ascending, without repeats or the vertex itself.
    pub adj: Vec<u32>,
    /// Edge weights parallel to `adj`, if any.
    pub weight: Option<Vec<f64>>,
    /// Edge layers parallel to `adj`, if any.
    pub layer: Option<Vec<u8>>,
}

impl Rows {
    /// The rows of `owned` taken from the global graph `g`.
    pub fn of(g: &Csr, owned: Owned) -> Rows {
        let n = owned.len();
        let total: usize = (0..n).map(|i| g.degree(owned.global(i) as usize)).sum();
        let mut xadj = Vec::with_capacity(n + 1);
        xadj.push(0u64);
        let mut adj = Vec::with_capacity(total);
        let mut weight = g.weight.as_ref().map(|_| Vec::with_capacity(total));
        let mut layer = g.layer.as_ref().map(|_| Vec::with_capacity(total));
        for i in 0..n {
            let r = g.row(owned.global(i) as usize);
            adj.extend_from_slice(&g.adj[r.clone()]);
            if let (Some(w), Some(src)) = (weight.as_mut(), g.weight.as_ref()) {
                w.extend_from_slice(&src[r.clone()]);
            }
            if let (Some(l), Some(src)) = (layer.as_mut(), g.layer.as_ref()) {
                l.extend_from_slice(&src[r]);
            }
            xadj.push(adj.len() as u64);
        }
        Rows { n_global: g.n(), owned, xadj, adj, weight, layer }
    }
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
        let mine: Vec<u32> = (0..n as u32).filter(|&v| owner[v as usize] == me).collect();
        let rows = Rows::of(g, Owned::List(mine));
        DistGraph::from_rows(rank, ranks, rows, &|v| owner[v as usize])
    }

    /// Builds rank `rank`'s view from its own rows; `owner_of(v)` names the
    /// owner of each neighbour that is not owned here (it is asked once per
    /// ghost). Memory: the rows, converted in place, plus O(ghosts).
    ///
    /// ```
    /// use parsim_graph::{DistGraph, Owned, Rows};
    /// // Vertices 2 and 3 of the path 0 - 1 - 2 - 3, on rank 1 of 2.
    /// let rows = Rows {
    ///     n_global: 4,
    ///     owned: Owned::Block(2, 4),
    ///     xadj: vec![0, 2, 3],
    ///     adj: vec![1, 3, 2],
    ///     weight: None,
    ///     layer: None,
    /// };
    /// let d = DistGraph::from_rows(1, 2, rows, &|v| (v >= 2) as u32).unwrap();
    /// assert_eq!((d.owned(), d.ghosts(), d.global(2)), (2, 1, 1));
    /// assert_eq!(d.neighbours(0), &[1, 2]); // vertex 3 (owned), then the ghost of 1
    /// ```
    pub fn from_rows(rank: usize, ranks: usize, rows: Rows, owner_of: &dyn Fn(u32) -> u32) -> Result<DistGraph> {
        let Rows { n_global, owned, xadj, mut adj, mut weight, mut layer } = rows;
        let owned = owned.normalised();
        let n_owned = owned.len();
        if xadj.len() != n_owned + 1 || xadj[n_owned] as usize != adj.len() {
            return Err(GraphError::BadArgument(format!(
                "{} row offsets ending at {} for {n_owned} rows of {} entries",
                xadj.len(),
                xadj.last().copied().unwrap_or(0),
                adj.len()
            )));
        }
        // Ghosts: the neighbours not owned here, ascending.
        let index = OwnedIndex::new(&owned);
        let ghost_ids = super::distinct_ascending(match owned {
            Owned::Block(lo, hi) => not_in_block(&adj, lo, hi),
            _ => adj.iter().copied().filter(|&u| index.local(u).is_none()).collect(),
        });
        let ghost_table = GhostTable::new(&ghost_ids);
        // Rows to local ids, owned neighbours first (both parts keep global id order).
        let mut cut = 0usize;
        let fast = match (&owned, ghost_table.dense, &weight, &layer) {
            // No ghosts (one rank): local ids are the global ones less the
            // block's first, and every row is already in order.
            (&Owned::Block(lo, _), _, _, _) if ghost_ids.is_empty() => {
                if lo > 0 {
                    adj.iter_mut().for_each(|u| *u -= lo);
                }
                true
            }
            (&Owned::Block(lo, hi), Some(first), None, None) => {
                cut = split_block_rows(&xadj, &mut adj, (lo, hi), first, &ghost_table);
                true
            }
            _ => false,
        };
        let mut tmp: Vec<(u32, f64, u8)> = Vec::new();
        let put = |at: usize,
                   (x, w, l): (u32, f64, u8),
                   adj: &mut [u32],
                   weight: &mut Option<Vec<f64>>,
                   layer: &mut Option<Vec<u8>>| {
            adj[at] = x;
            if let Some(w_) = weight.as_mut() {
                w_[at] = w;
            }
            if let Some(l_) = layer.as_mut() {
                l_[at] = l;
            }
        };
        // The ghost numbers of a block of rows are looked up together, so
        // that the lookups' cache misses overlap.
        let (mut block_end, mut next) = (0usize, 0usize);
        let (mut vs, mut found): (Vec<u32>, Vec<u32>) = (Vec::new(), Vec::new());
        for i in (0..n_owned).filter(|_| !fast) {
            if i == block_end {
                block_end = (i + 4096).min(n_owned);
                vs.clear();
                let block = &adj[xadj[i] as usize..xadj[block_end] as usize];
                vs.extend(block.iter().copied().filter(|&u| index.local(u).is_none()));
                ghost_table.find_many(&ghost_ids, &vs, &mut found);
                next = 0;
            }
            let r = xadj[i] as usize..xadj[i + 1] as usize;
            tmp.clear();
            let mut at = r.start;
            for e in r.clone() {
                let u = adj[e];
                let w = weight.as_ref().map_or(0.0, |w| w[e]);
                let l = layer.as_ref().map_or(0, |l| l[e]);
                match index.local(u) {
                    Some(x) => {
                        put(at, (x, w, l), &mut adj, &mut weight, &mut layer);
                        at += 1;
                    }
                    None => {
                        let j = found[next];
                        debug_assert!(j != u32::MAX && ghost_ids[j as usize] == u, "a ghost");
                        next += 1;
                        tmp.push((n_owned as u32 + j, w, l));
                    }
                }
            }
            cut += tmp.len();
            for &x in &tmp {
                put(at, x, &mut adj, &mut weight, &mut layer);
                at += 1;
            }
        }
        drop(tmp);
        // Peers: the owners of the ghosts.
        let owners: Vec<u32> = ghost_ids.iter().map(|&u| owner_of(u)).collect();
        if let Some(&p) = owners.iter().find(|&&p| p as usize >= ranks || p as usize == rank) {
            return Err(GraphError::BadArgument(format!(
                "a ghost is given to rank {p} (this is rank {rank} of {ranks})"
            )));
        }
        let mut peers: Vec<usize> = owners.iter().map(|&p| p as usize).collect();
        peers.sort_unstable();
        peers.dedup();
        let ghost_peer: Vec<u32> =
            owners.iter().map(|&p| peers.binary_search(&(p as usize)).expect("a peer") as u32).collect();
        drop(owners);
        let mut recv = vec![Vec::new(); peers.len()];
        for (j, &q) in ghost_peer.iter().enumerate() {
            recv[q as usize].push((n_owned + j) as u32);
        }
        // Send lists and the boundary.
        let mut send = vec![Vec::new(); peers.len()];
        let (mut bnd, mut bxadj, mut bent) = (Vec::new(), vec![0u32], Vec::new());
        let mut seen: Vec<u32> = Vec::new();
        let one_peer = peers.len() == 1;
        for i in (0..n_owned).filter(|_| !ghost_ids.is_empty()) {
            let row = &adj[xadj[i] as usize..xadj[i + 1] as usize];
            if row.last().is_none_or(|&l| (l as usize) < n_owned) {
                continue;
            }
            bnd.push(i as u32);
            if one_peer {
                // The lists are implicit (see below).
                continue;
            }
            let first_ghost = row.partition_point(|&l| (l as usize) < n_owned);
            seen.clear();
            seen.extend(row[first_ghost..].iter().map(|&l| ghost_peer[l as usize - n_owned]));
            seen.sort_unstable();
            seen.dedup();
            for &q in &seen {
                bent.push((q, send[q as usize].len() as u32));
                send[q as usize].push(i as u32);
            }
            bxadj.push(bent.len() as u32);
        }
        // One neighbouring rank: its lists are implicit (see DistGraph).
        let ghost_peer = if peers.len() == 1 {
            (send, bxadj, bent) = (vec![Vec::new()], Vec::new(), Vec::new());
            Vec::new()
        } else {
            ghost_peer
        };
        let owned_table = index.table;
        let (base, owned_ids) = match owned {
            Owned::Block(lo, _) => (Some(lo), Vec::new()),
            Owned::List(v) => (None, v),
        };
        Ok(DistGraph {
            rank,
            ranks,
            n_global,
            n_owned,
            base: base.filter(|_| n_owned > 0),
            owned_ids,
            owned_table,
            ghost_ids,
            ghost_table,
            xadj: Offsets::from_wide(xadj),
            adj,
            weight,
            layer,
            cut,
            peers,
            send,
            recv,
            bnd,
            bxadj,
            bent,
            ghost_peer,
        })
    }
}

/// The entries of `adj` outside `lo..hi`, in order: written at every step
/// and kept by advancing the end, so that a random mix of owned and ghost
/// neighbours costs no mispredicted branches.
fn not_in_block(adj: &[u32], lo: u32, hi: u32) -> Vec<u32> {
    let mut out = Vec::new();
    let mut buf = [0u32; 4096];
    for part in adj.chunks(buf.len()) {
        let mut k = 0;
        for &u in part {
            buf[k] = u;
            k += usize::from(u.wrapping_sub(lo) >= hi - lo);
        }
        out.extend_from_slice(&buf[..k]);
    }
    out
}

/// Rewrites block-owned rows of global ids in place as local ids, owned
/// neighbours first, then ghosts, each part in global id order (as the
/// general path in [`DistGraph::from_rows`] does), for a dense ghost table
/// starting at id `first`; returns the ghost entries. Every entry is
/// written to both candidate places and the right one advanced, without a
/// branch on whether it is owned.
fn split_block_rows(xadj: &[u64], adj: &mut [u32], (lo, hi): (u32, u32), first: u32, table: &GhostTable) -> usize {
    let n_owned = (hi - lo) as usize;
    let mut ghosts: Vec<u32> = Vec::new();
    let mut cut = 0;
    for i in 0..n_owned {
        let r = xadj[i] as usize..xadj[i + 1] as usize;
        ghosts.clear();
        ghosts.resize(r.len(), 0);
        let (mut at, mut t) = (r.start, 0);
        for e in r.clone() {
            let u = adj[e];
            let own = u.wrapping_sub(lo) < hi - lo;
            let j = table.dense_rank(u.wrapping_sub(first) as usize);
            adj[at] = u.wrapping_sub(lo);
            ghosts[t] = (n_owned as u32).wrapping_add(j);
            at += usize::from(own);
            t += usize::from(!own);
        }
        debug_assert!(ghosts[..t].iter().all(|&x| (x as usize) >= n_owned), "every ghost is in the table");
        adj[at..r.end].copy_from_slice(&ghosts[..t]);
        cut += t;
    }
    cut
}
