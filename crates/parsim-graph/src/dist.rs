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

use crate::error::Result;

mod build;
mod contract;
mod directory;
mod level;
mod local;
mod moves;
mod multilevel;
mod refine;

pub use build::{Owned, Rows};
pub use directory::{deliver_by_id, deliver_pieces, Directory, Emit, Records};
pub use local::{block_owner, block_range, exchange_in_rounds, Sink};
pub use multilevel::DistPartition;
pub use refine::Propagated;

/// A rank's part of a partitioned graph: owned vertices, ghosts and exchange lists.
///
/// Its memory is O(owned vertices + their edges + ghosts): nothing on a rank
/// is sized by the whole graph. It is built from the global graph and an
/// owner array ([`build`](Self::build)), from this rank's rows alone
/// ([`from_rows`](Self::from_rows)), or collectively from a generator or a
/// file share ([`from_generator`](Self::from_generator)) so that no rank ever
/// holds the whole graph.
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
    n_owned: usize,
    /// `Some(b)`: the owned vertices are `b..b + n_owned` and `owned_ids` is empty.
    base: Option<u32>,
    /// Global ids of the owned vertices, ascending (empty for a block).
    owned_ids: Vec<u32>,
    /// Global id → owned vertex, over `owned_ids` (empty for a block): a
    /// lookup per message on an owned agent, where a binary search over a
    /// rank's millions of ids waits for twenty cache misses.
    owned_table: GhostTable,
    /// Global ids of the ghosts, ascending (local ids `n_owned..`).
    ghost_ids: Vec<u32>,
    /// Global id → ghost, an open-addressing table over the ghosts.
    ghost_table: GhostTable,
    /// Owned rows (local ids), with their global degree = row length.
    xadj: Offsets,
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
    /// The owned vertices with a ghost elsewhere (ascending local ids) and,
    /// parallel, where: `bent[bxadj[k]..bxadj[k + 1]]` are (peer index,
    /// position in that peer's send list) pairs of `bnd[k]`. With a single
    /// peer, `send[0]`, `bxadj`, `bent` and `ghost_peer` are left empty: the
    /// send list is `bnd` and `bnd[k]` is at position `k` of it.
    bnd: Vec<u32>,
    bxadj: Vec<u32>,
    bent: Vec<(u32, u32)>,
    /// The peer index of every ghost's owner.
    ghost_peer: Vec<u32>,
}

/// Where an owned vertex is ghosted: (peer index, position in that peer's
/// send list) pairs, from [`DistGraph::ghosted_at`].
#[derive(Clone, Debug)]
pub enum GhostedAt<'a> {
    /// Listed pairs.
    Listed(std::slice::Iter<'a, (u32, u32)>),
    /// The one pair of a rank with a single neighbour (or none left).
    One(Option<(u32, u32)>),
}

impl Iterator for GhostedAt<'_> {
    type Item = (u32, u32);

    #[inline]
    fn next(&mut self) -> Option<(u32, u32)> {
        match self {
            GhostedAt::Listed(it) => it.next().copied(),
            GhostedAt::One(x) => x.take(),
        }
    }
}

/// A table from global id to ghost number. Where the ghosts fill at least
/// an eighth of the ids between the first and the last (a block partition
/// of a random graph), a ranked bitmap over that span: per 64 ids, their
/// bits and the number of ghosts before them, 2 bits per id in all, so
/// that the table of a rank with millions of ghosts stays in a core's
/// cache (a slot per id, 32 bits, was a memory access per lookup).
/// Otherwise a hash table whose slots hold ghost number + 1 (0: empty),
/// with at least 1.5 times as many slots as ghosts and linear probing —
/// one cache miss per lookup where a binary search over the ghosts takes
/// twenty. Either way at most 12 bytes per ghost.
#[derive(Clone, Debug, Default)]
struct GhostTable {
    slots: Vec<u32>,
    shift: u32,
    /// Dense: per 64 ids from `first`, [bits, ghosts before them].
    words: Vec<[u64; 2]>,
    /// `Some(first)`: dense.
    dense: Option<u32>,
}

/// A dense table covers a span of at most this many ids per ghost.
const DENSE_SPAN: usize = 8;

impl GhostTable {
    /// The table of `ids` (ascending).
    fn new(ids: &[u32]) -> GhostTable {
        let (Some(&first), Some(&last)) = (ids.first(), ids.last()) else {
            return GhostTable::default();
        };
        let span = (last - first) as usize + 1;
        if span <= DENSE_SPAN * ids.len() {
            let mut words = vec![[0u64; 2]; span.div_ceil(64)];
            for &v in ids {
                let d = (v - first) as usize;
                words[d >> 6][0] |= 1 << (d & 63);
            }
            let mut before = 0u64;
            for w in &mut words {
                w[1] = before;
                before += u64::from(w[0].count_ones());
            }
            return GhostTable { slots: Vec::new(), shift: 0, words, dense: Some(first) };
        }
        // A load between 1/3 and 2/3.
        let bits = (ids.len() + ids.len() / 2).next_power_of_two().trailing_zeros().max(1);
        let mut t = GhostTable { slots: vec![0; 1 << bits], shift: 64 - bits, words: Vec::new(), dense: None };
        let mask = t.slots.len() - 1;
        for (j, &v) in ids.iter().enumerate() {
            let mut h = t.hash(v);
            while t.slots[h] != 0 {
                h = (h + 1) & mask;
            }
            t.slots[h] = j as u32 + 1;
        }
        t
    }

    /// Memory held, in bytes.
    fn bytes(&self) -> usize {
        self.slots.len() * 4 + self.words.len() * 16
    }

    /// Dense tables: the ghost number of the id `d` places after the
    /// first, if it is a ghost (`d` past the span: none).
    #[inline]
    fn dense_find(&self, d: usize) -> Option<u32> {
        let w = self.words.get(d >> 6)?;
        let bit = 1u64 << (d & 63);
        (w[0] & bit != 0).then(|| (w[1] + u64::from((w[0] & (bit - 1)).count_ones())) as u32)
    }

    /// Dense tables: what [`dense_find`](Self::dense_find) gives for a
    /// ghost, without a branch, for any `d` (clamped to the span): the
    /// ghost number if it is one, else some number.
    #[inline]
    fn dense_rank(&self, d: usize) -> u32 {
        let w = self.words[(d >> 6).min(self.words.len() - 1)];
        let bit = 1u64 << (d & 63);
        (w[1] + u64::from((w[0] & (bit - 1)).count_ones())) as u32
    }

    #[inline]
    fn hash(&self, v: u32) -> usize {
        (u64::from(v).wrapping_mul(0x9E37_79B9_7F4A_7C15) >> self.shift) as usize
    }

    /// [`find`](Self::find) for each of `vs` (`u32::MAX` for none), in two
    /// passes whose loads do not wait for each other: every slot first,
    /// then every id those slots name (a lookup one at a time waits for two
    /// cache misses in a row).
    fn find_many(&self, ids: &[u32], vs: &[u32], out: &mut Vec<u32>) {
        out.clear();
        if let Some(first) = self.dense {
            out.extend(vs.iter().map(|&v| self.dense_find(v.wrapping_sub(first) as usize).unwrap_or(u32::MAX)));
            return;
        }
        if self.slots.is_empty() {
            out.resize(vs.len(), u32::MAX);
            return;
        }
        out.extend(vs.iter().map(|&v| self.slots[self.hash(v)]));
        for (o, &v) in out.iter_mut().zip(vs) {
            *o = match *o {
                0 => u32::MAX,
                s if ids[s as usize - 1] == v => s - 1,
                _ => self.find(ids, v).map_or(u32::MAX, |j| j as u32),
            };
        }
    }

    /// A hint that [`find`](Self::find) of `v` comes soon: fetches the
    /// word (dense) or the first slot (hashed) it reads.
    #[inline]
    fn prefetch(&self, v: u32) {
        match self.dense {
            Some(first) => parsim_core::mem::prefetch(&self.words, v.wrapping_sub(first) as usize >> 6),
            None if !self.slots.is_empty() => parsim_core::mem::prefetch(&self.slots, self.hash(v)),
            None => {}
        }
    }

    /// The ghost number of global id `v`, if `v` is a ghost (`ids`: the ghosts' ids).
    #[inline]
    fn find(&self, ids: &[u32], v: u32) -> Option<usize> {
        if let Some(first) = self.dense {
            return self.dense_find(v.wrapping_sub(first) as usize).map(|j| j as usize);
        }
        if self.slots.is_empty() {
            return None;
        }
        let mask = self.slots.len() - 1;
        let mut h = self.hash(v);
        loop {
            match self.slots[h] {
                0 => return None,
                s if ids[s as usize - 1] == v => return Some(s as usize - 1),
                _ => h = (h + 1) & mask,
            }
        }
    }
}

/// The distinct values of `v`, ascending: by a bitmap over their span where
/// it takes no more memory than `v` itself, else by sorting.
fn distinct_ascending(mut v: Vec<u32>) -> Vec<u32> {
    let (Some(&lo), Some(&hi)) = (v.iter().min(), v.iter().max()) else {
        return Vec::new();
    };
    let words = ((hi - lo) as usize >> 6) + 1;
    if words > v.len() / 2 {
        v.sort_unstable();
        v.dedup();
        v.shrink_to_fit();
        return v;
    }
    let mut bits = vec![0u64; words];
    for &x in &v {
        let d = (x - lo) as usize;
        bits[d >> 6] |= 1 << (d & 63);
    }
    drop(v);
    let mut out = Vec::with_capacity(bits.iter().map(|w| w.count_ones() as usize).sum());
    for (k, &w) in bits.iter().enumerate() {
        let mut w = w;
        while w != 0 {
            out.push(lo + (k as u32) * 64 + w.trailing_zeros());
            w &= w - 1;
        }
    }
    out
}

/// Row offsets: 4 bytes per row while the rows hold fewer than 2³² entries.
#[derive(Clone, Debug)]
enum Offsets {
    Narrow(Vec<u32>),
    Wide(Vec<u64>),
}

impl Offsets {
    fn from_wide(x: Vec<u64>) -> Offsets {
        if x.last().copied().unwrap_or(0) <= u64::from(u32::MAX) {
            Offsets::Narrow(x.into_iter().map(|o| o as u32).collect())
        } else {
            Offsets::Wide(x)
        }
    }

    #[inline(always)]
    fn at(&self, i: usize) -> usize {
        match self {
            Offsets::Narrow(x) => x[i] as usize,
            Offsets::Wide(x) => x[i] as usize,
        }
    }

    #[inline(always)]
    fn prefetch(&self, i: usize) {
        match self {
            Offsets::Narrow(x) => parsim_core::mem::prefetch(x, i),
            Offsets::Wide(x) => parsim_core::mem::prefetch(x, i),
        }
    }

    fn bytes(&self) -> usize {
        match self {
            Offsets::Narrow(x) => x.len() * 4,
            Offsets::Wide(x) => x.len() * 8,
        }
    }
}

impl DistGraph {
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
        self.ghost_ids.len()
    }

    /// The global id of local vertex `l` (owned or ghost).
    #[inline]
    pub fn global(&self, l: usize) -> u32 {
        if l < self.n_owned {
            match self.base {
                Some(b) => b + l as u32,
                None => self.owned_ids[l],
            }
        } else {
            self.ghost_ids[l - self.n_owned]
        }
    }

    /// `Some(b)` when the owned vertices are exactly the global ids `b..b + owned()`
    /// (block partitions): then `global(i) = b + i` for owned `i`, without a lookup.
    #[inline]
    pub fn owned_base(&self) -> Option<u32> {
        self.base
    }

    /// Global ids of the owned vertices, ascending.
    pub fn owned_ids(&self) -> std::borrow::Cow<'_, [u32]> {
        match self.base {
            Some(b) => (b..b + self.n_owned as u32).collect::<Vec<u32>>().into(),
            None => self.owned_ids.as_slice().into(),
        }
    }

    /// Global ids of the ghosts, ascending (local ids `owned()..`).
    pub fn ghost_ids(&self) -> &[u32] {
        &self.ghost_ids
    }

    /// The local id of global vertex `v`, if it is owned or a ghost here.
    pub fn local(&self, v: u32) -> Option<usize> {
        let owned = match self.base {
            Some(b) => (v >= b && ((v - b) as usize) < self.n_owned).then(|| (v - b) as usize),
            None => self.owned_table.find(&self.owned_ids, v),
        };
        owned.or_else(|| self.ghost_table.find(&self.ghost_ids, v).map(|j| self.n_owned + j))
    }

    /// The local id of ghost `v` (a global id), if it is a ghost here.
    #[inline]
    pub fn ghost_local(&self, v: u32) -> Option<usize> {
        self.ghost_table.find(&self.ghost_ids, v).map(|j| self.n_owned + j)
    }

    /// A hint that [`ghost_local`](Self::ghost_local) of `v` will be asked
    /// soon: fetches the part of the ghost table it reads (a loop over
    /// scattered ids calls it some iterations ahead).
    ///
    /// ```
    /// use parsim_graph::{Csr, DistGraph};
    /// let (g, _) = Csr::from_pairs(4, vec![(0, 1), (1, 2), (2, 3)], None);
    /// let d = DistGraph::build(0, 2, &g, &[0, 0, 1, 1]).unwrap();
    /// d.prefetch_ghost(2); // a hint: nothing observable changes
    /// assert_eq!(d.ghost_local(2), Some(2));
    /// ```
    #[inline]
    pub fn prefetch_ghost(&self, v: u32) {
        self.ghost_table.prefetch(v);
    }

    /// The owner of ghost `l` (a local id ≥ `owned()`).
    pub fn ghost_owner(&self, l: usize) -> usize {
        self.peers[self.ghost_peer(l)]
    }

    /// The index in [`peers`](Self::peers) of ghost `l`'s owner.
    #[inline]
    pub fn ghost_peer(&self, l: usize) -> usize {
        if self.single() {
            0
        } else {
            self.ghost_peer[l - self.n_owned] as usize
        }
    }

    /// The owned neighbours of owned vertex `i` (the first part of its row).
    #[inline]
    pub fn owned_neighbours(&self, i: usize) -> &[u32] {
        let row = self.neighbours(i);
        &row[..row.partition_point(|&l| (l as usize) < self.n_owned)]
    }

    /// The neighbours (local ids) of owned vertex `i`, owned ones first, then
    /// ghosts, each part in global id order; its degree is the length.
    #[inline(always)]
    pub fn neighbours(&self, i: usize) -> &[u32] {
        &self.adj[self.xadj.at(i)..self.xadj.at(i + 1)]
    }

    /// The `adj` index range of owned vertex `i` (for [`weight_at`](Self::weight_at), [`layer_at`](Self::layer_at)).
    #[inline]
    pub fn row(&self, i: usize) -> std::ops::Range<usize> {
        self.xadj.at(i)..self.xadj.at(i + 1)
    }

    /// A hint that owned vertex `i`'s row offsets will be read soon (the
    /// first of two prefetch stages for a scattered walk over rows; nothing
    /// for an `i` out of range).
    #[inline]
    pub fn prefetch_offsets(&self, i: usize) {
        self.xadj.prefetch(i);
    }

    /// A hint that owned vertex `i`'s row (and its layers) will be read soon:
    /// reads its offsets (best after [`prefetch_offsets`](Self::prefetch_offsets))
    /// and prefetches the row's first and last entries.
    ///
    /// ```
    /// use parsim_graph::{Csr, DistGraph};
    /// let (g, _) = Csr::from_pairs(4, vec![(0, 1), (1, 2), (2, 3)], None);
    /// let d = DistGraph::build(0, 1, &g, &[0; 4]).unwrap();
    /// d.prefetch_offsets(2);
    /// d.prefetch_row(2); // a hint: nothing observable changes
    /// assert_eq!(d.neighbours(2), &[1, 3]);
    /// ```
    #[inline]
    pub fn prefetch_row(&self, i: usize) {
        if i < self.n_owned {
            let r = self.row(i);
            if r.end > r.start {
                parsim_core::mem::prefetch(&self.adj, r.start);
                parsim_core::mem::prefetch(&self.adj, r.end - 1);
                if let Some(l) = &self.layer {
                    parsim_core::mem::prefetch(l, r.start);
                }
            }
        }
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
        self.layer.as_ref().map(|l| &l[self.row(i)])
    }

    /// The neighbouring ranks, ascending.
    pub fn peers(&self) -> &[usize] {
        &self.peers
    }

    /// Owned vertices peer `q` (an index into [`peers`](Self::peers)) holds ghosts of.
    pub fn send_list(&self, q: usize) -> &[u32] {
        if self.single() {
            &self.bnd
        } else {
            &self.send[q]
        }
    }

    /// Ghosts owned by peer `q`, in the order of its send list.
    pub fn recv_list(&self, q: usize) -> &[u32] {
        &self.recv[q]
    }

    /// Where owned vertex `i` is ghosted: (peer index, position in that peer's send list).
    #[inline]
    pub fn ghosted_at(&self, i: usize) -> GhostedAt<'_> {
        match self.bnd.binary_search(&(i as u32)) {
            Ok(k) => self.ghosted_at_boundary(k),
            Err(_) => GhostedAt::Listed([].iter()),
        }
    }

    /// Where the `k`-th boundary vertex is ghosted.
    #[inline]
    fn ghosted_at_boundary(&self, k: usize) -> GhostedAt<'_> {
        if self.single() {
            GhostedAt::One(Some((0, k as u32)))
        } else {
            GhostedAt::Listed(self.bent[self.bxadj[k] as usize..self.bxadj[k + 1] as usize].iter())
        }
    }

    /// One neighbouring rank (its lists are implicit).
    #[inline]
    fn single(&self) -> bool {
        self.peers.len() == 1
    }

    /// Whether owned vertex `i` has a ghost on another rank.
    #[inline]
    pub fn is_boundary(&self, i: usize) -> bool {
        self.bnd.binary_search(&(i as u32)).is_ok()
    }

    /// The owned vertices (local ids) with a ghost on another rank, ascending.
    pub fn boundary_ids(&self) -> &[u32] {
        &self.bnd
    }

    /// The owned vertices with a ghost on another rank, ascending, each with
    /// where it is ghosted (as [`ghosted_at`](Self::ghosted_at)).
    pub fn boundary(&self) -> impl Iterator<Item = (u32, GhostedAt<'_>)> + '_ {
        self.bnd.iter().enumerate().map(move |(k, &i)| (i, self.ghosted_at_boundary(k)))
    }

    /// Edges from owned vertices to ghosts (each cut edge counted once per side).
    pub fn cut_edges(&self) -> usize {
        self.cut
    }

    /// Memory held, in bytes.
    pub fn bytes(&self) -> usize {
        (self.owned_ids.len() + self.ghost_ids.len()) * 4
            + self.ghost_table.bytes()
            + self.owned_table.bytes()
            + self.xadj.bytes()
            + self.adj.len() * 4
            + self.weight.as_ref().map_or(0, |w| w.len() * 8)
            + self.layer.as_ref().map_or(0, |w| w.len())
            + self.send.iter().chain(&self.recv).map(|s| s.len() * 4).sum::<usize>()
            + (self.bnd.len() + self.bxadj.len()) * 4
            + self.bent.len() * 8
            + self.ghost_peer.len() * 4
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
            for (q, pos) in self.ghosted_at(i as usize) {
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
            for (q, pos) in self.ghosted_at(i as usize) {
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

#[cfg(test)]
mod tests {
    use super::{distinct_ascending, GhostTable, DENSE_SPAN};

    fn lcg(x: &mut u64) -> u32 {
        *x = x.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
        (*x >> 33) as u32
    }

    #[test]
    fn distinct_values_come_out_ascending_by_bitmap_or_by_sort() {
        let mut x = 7u64;
        // Dense (a bitmap) and sparse (a sort), with repeats.
        for (len, span) in [(0usize, 1u32), (1, 1), (5000, 3000), (5000, 40_000), (5000, 1 << 31)] {
            let v: Vec<u32> = (0..len).map(|_| 1000 + lcg(&mut x) % span).collect();
            let mut want = v.clone();
            want.sort_unstable();
            want.dedup();
            assert_eq!(distinct_ascending(v), want, "{len} values over {span}");
        }
    }

    #[test]
    fn ghost_tables_find_every_ghost_and_nothing_else_dense_or_hashed() {
        let mut x = 11u64;
        for span in [600u32, 1500, 3000, 6000, 1 << 30] {
            let ids = distinct_ascending((0..500).map(|_| 50 + lcg(&mut x) % span).collect());
            let t = GhostTable::new(&ids);
            assert_eq!(t.dense.is_some(), ((ids[ids.len() - 1] - ids[0]) as usize) < DENSE_SPAN * ids.len());
            if let Some(first) = t.dense {
                for (j, &v) in ids.iter().enumerate() {
                    assert_eq!(t.dense_rank((v - first) as usize), j as u32);
                }
            }
            for (j, &v) in ids.iter().enumerate() {
                assert_eq!(t.find(&ids, v), Some(j));
            }
            let probes: Vec<u32> = (0..2000).map(|_| lcg(&mut x) % (span + 200)).chain([0, u32::MAX]).collect();
            let mut many = Vec::new();
            t.find_many(&ids, &probes, &mut many);
            for (&v, &m) in probes.iter().zip(&many) {
                let want = ids.binary_search(&v).ok();
                assert_eq!(t.find(&ids, v), want, "id {v}");
                assert_eq!(m, want.map_or(u32::MAX, |j| j as u32), "id {v}");
            }
        }
        assert!(GhostTable::new(&[]).find(&[], 3).is_none());
    }
}
