//! The global graph: compressed sparse rows with 32-bit vertex ids, 64-bit
//! offsets, and optional per-edge weights and layer labels. Compact (4 bytes
//! per directed edge without weights), so that 10⁸ vertices × 10 neighbours
//! fit in memory; built in parallel and deterministically from a pair list.

use rayon::prelude::*;

/// An undirected graph; every edge is stored in both directions, rows sorted
/// by neighbour id, no self-loops, no duplicates.
///
/// ```
/// use parsim_graph::Csr;
/// let (g, stats) = Csr::from_pairs(4, vec![(0, 1), (1, 2), (2, 1), (3, 3)], None);
/// assert_eq!(g.neighbours(1), &[0, 2]);
/// assert_eq!((stats.self_loops, stats.duplicates), (1, 1));
/// assert_eq!(g.edges(), 2);
/// ```
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Csr {
    /// Row offsets, `n + 1` entries.
    pub xadj: Vec<u64>,
    /// Neighbours, parallel rows.
    pub adj: Vec<u32>,
    /// Edge weights parallel to `adj`, if any.
    pub weight: Option<Vec<f64>>,
    /// Edge layer labels parallel to `adj` (contact layers: household, school …), if any.
    pub layer: Option<Vec<u8>>,
}

/// What [`Csr::from_pairs`] dropped.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct BuildStats {
    /// Pairs (v, v).
    pub self_loops: u64,
    /// Pairs listed more than once (in either direction); with layers, the lowest layer is kept.
    pub duplicates: u64,
}

impl Csr {
    /// The number of vertices.
    #[inline]
    pub fn n(&self) -> usize {
        self.xadj.len().saturating_sub(1)
    }

    /// The number of undirected edges.
    pub fn edges(&self) -> usize {
        self.adj.len() / 2
    }

    /// `v`'s neighbours, ascending.
    #[inline]
    pub fn neighbours(&self, v: usize) -> &[u32] {
        &self.adj[self.xadj[v] as usize..self.xadj[v + 1] as usize]
    }

    /// The range of `v`'s row in `adj`.
    #[inline]
    pub fn row(&self, v: usize) -> std::ops::Range<usize> {
        self.xadj[v] as usize..self.xadj[v + 1] as usize
    }

    /// `v`'s degree.
    #[inline]
    pub fn degree(&self, v: usize) -> usize {
        (self.xadj[v + 1] - self.xadj[v]) as usize
    }

    /// Builds the graph from undirected pairs (either orientation), with an
    /// optional layer label per pair. Self-loops are dropped; a pair listed
    /// twice is kept once (with the lower layer). Ids must be `< n`
    /// (checked by the readers; here a panic). Rows are filled in parallel,
    /// one vertex range per thread, so the result does not depend on the
    /// number of threads.
    pub fn from_pairs(n: usize, pairs: Vec<(u32, u32)>, layers: Option<Vec<u8>>) -> (Csr, BuildStats) {
        assert!(n < u32::MAX as usize, "at most 2^32 - 1 vertices");
        if let Some(l) = &layers {
            assert_eq!(l.len(), pairs.len(), "one layer per pair");
        }
        let threads = rayon::current_num_threads().max(1);
        let ranges: Vec<(usize, usize)> = (0..threads).map(|t| (t * n / threads, (t + 1) * n / threads)).collect();
        // Degrees: each thread counts the endpoints in its own range.
        let counts: Vec<Vec<u64>> = ranges
            .par_iter()
            .map(|&(lo, hi)| {
                let mut c = vec![0u64; hi - lo];
                for &(u, v) in &pairs {
                    if u == v {
                        continue;
                    }
                    for w in [u as usize, v as usize] {
                        if (lo..hi).contains(&w) {
                            c[w - lo] += 1;
                        }
                    }
                }
                c
            })
            .collect();
        let self_loops = pairs.iter().filter(|(u, v)| u == v).count() as u64;
        let mut xadj = Vec::with_capacity(n + 1);
        xadj.push(0u64);
        for c in &counts {
            for &d in c {
                xadj.push(xadj.last().copied().unwrap_or(0) + d);
            }
        }
        drop(counts);
        let total = xadj[n] as usize;
        let mut adj = vec![0u32; total];
        let mut lay = layers.as_ref().map(|_| vec![0u8; total]);
        // Split the arrays at the range boundaries and fill each in parallel.
        let mut adj_parts = Vec::with_capacity(threads);
        let mut lay_parts: Vec<Option<&mut [u8]>> = Vec::with_capacity(threads);
        {
            let mut rest = adj.as_mut_slice();
            let mut lrest = lay.as_deref_mut();
            for &(lo, hi) in &ranges {
                let len = (xadj[hi] - xadj[lo]) as usize;
                let (a, b) = rest.split_at_mut(len);
                adj_parts.push(a);
                rest = b;
                match lrest.take() {
                    Some(l) => {
                        let (a, b) = l.split_at_mut(len);
                        lay_parts.push(Some(a));
                        lrest = Some(b);
                    }
                    None => lay_parts.push(None),
                }
            }
        }
        let xr = &xadj;
        let pr = &pairs;
        let lr = layers.as_deref();
        let dups: u64 = adj_parts
            .into_par_iter()
            .zip(lay_parts.into_par_iter())
            .zip(ranges.par_iter())
            .map(|((a, mut l), &(lo, hi))| {
                let base = xr[lo];
                let mut fill: Vec<u64> = (lo..hi).map(|v| xr[v] - base).collect();
                for (i, &(u, v)) in pr.iter().enumerate() {
                    if u == v {
                        continue;
                    }
                    for (w, o) in [(u as usize, v), (v as usize, u)] {
                        if (lo..hi).contains(&w) {
                            let at = fill[w - lo] as usize;
                            a[at] = o;
                            if let (Some(l), Some(src)) = (l.as_deref_mut(), lr) {
                                l[at] = src[i];
                            }
                            fill[w - lo] += 1;
                        }
                    }
                }
                // Sort rows; count duplicates (the row is compacted below).
                let mut dups = 0u64;
                let mut tmp: Vec<(u32, u8)> = Vec::new();
                for v in lo..hi {
                    let r = (xr[v] - base) as usize..(xr[v + 1] - base) as usize;
                    dups += sort_row(&mut a[r.clone()], l.as_deref_mut().map(|l| &mut l[r]), &mut tmp);
                }
                dups
            })
            .sum();
        drop(pairs);
        drop(layers);
        let mut g = Csr { xadj, adj, weight: None, layer: lay };
        if dups > 0 {
            g.compact();
        }
        // Each duplicate pair was seen from both ends.
        (g, BuildStats { self_loops, duplicates: dups / 2 })
    }

    /// Removes repeated neighbours of sorted rows in place (keeping the first).
    fn compact(&mut self) {
        compact(&mut self.xadj, &mut self.adj, self.layer.as_mut());
    }

    /// The graph of a partitioning [`parsim_partition::Graph`] (its edge
    /// weights become `weight`; vertex weights are dropped).
    pub fn from_graph(g: &parsim_partition::Graph) -> Csr {
        let weighted = g.adjwgt.iter().any(|&w| w != 1);
        let mut adj = g.adjncy.clone();
        let mut weight: Option<Vec<f64>> = weighted.then(|| g.adjwgt.iter().map(|&w| w as f64).collect());
        // METIS rows come in file order; ours are sorted.
        let mut tmp: Vec<(u32, f64)> = Vec::new();
        for v in 0..g.n() {
            let r = g.xadj[v] as usize..g.xadj[v + 1] as usize;
            match &mut weight {
                None => adj[r].sort_unstable(),
                Some(w) => {
                    tmp.clear();
                    tmp.extend(adj[r.clone()].iter().copied().zip(w[r.clone()].iter().copied()));
                    tmp.sort_unstable_by_key(|e| e.0);
                    for (k, &(u, x)) in tmp.iter().enumerate() {
                        adj[r.start + k] = u;
                        w[r.start + k] = x;
                    }
                }
            }
        }
        Csr { xadj: g.xadj.clone(), adj, weight, layer: None }
    }

    /// This graph as a partitioning graph with unit vertex and edge weights
    /// (what [`parsim_partition`]'s methods take).
    pub fn to_partition_graph(&self) -> parsim_partition::Graph {
        let n = self.n();
        parsim_partition::Graph {
            xadj: self.xadj.clone(),
            adjncy: self.adj.clone(),
            adjwgt: vec![1; self.adj.len()],
            ncon: 1,
            vwgt: vec![1; n],
            vsize: None,
            coords: None,
            dim: 0,
        }
    }

    /// [`to_partition_graph`](Self::to_partition_graph) without the copy:
    /// the offsets and neighbours move into the partitioning graph (a graph
    /// gathered only to be partitioned is not held twice).
    ///
    /// ```
    /// let (g, _) = parsim_graph::Csr::from_pairs(3, vec![(0, 1), (1, 2)], None);
    /// let p = g.clone().into_partition_graph();
    /// assert_eq!(p, g.to_partition_graph());
    /// ```
    pub fn into_partition_graph(self) -> parsim_partition::Graph {
        let n = self.n();
        let m = self.adj.len();
        parsim_partition::Graph {
            xadj: self.xadj,
            adjncy: self.adj,
            adjwgt: vec![1; m],
            ncon: 1,
            vwgt: vec![1; n],
            vsize: None,
            coords: None,
            dim: 0,
        }
    }

    /// The weight of the edge at `adj` index `e` (1 without weights).
    #[inline]
    pub fn weight_at(&self, e: usize) -> f64 {
        self.weight.as_ref().map_or(1.0, |w| w[e])
    }

    /// Memory held, in bytes.
    pub fn bytes(&self) -> usize {
        self.xadj.len() * 8
            + self.adj.len() * 4
            + self.weight.as_ref().map_or(0, |w| w.len() * 8)
            + self.layer.as_ref().map_or(0, |l| l.len())
    }
}

/// Sorts one row by (neighbour, layer) and returns its repeated neighbours.
pub(crate) fn sort_row(a: &mut [u32], l: Option<&mut [u8]>, tmp: &mut Vec<(u32, u8)>) -> u64 {
    match l {
        None => {
            a.sort_unstable();
            a.windows(2).filter(|w| w[0] == w[1]).count() as u64
        }
        Some(l) => {
            tmp.clear();
            tmp.extend(a.iter().copied().zip(l.iter().copied()));
            tmp.sort_unstable();
            for (k, &(x, y)) in tmp.iter().enumerate() {
                a[k] = x;
                l[k] = y;
            }
            tmp.windows(2).filter(|w| w[0].0 == w[1].0).count() as u64
        }
    }
}

/// Drops repeated neighbours of sorted rows in place (keeping the first, the lowest layer).
pub(crate) fn compact(xadj: &mut [u64], adj: &mut Vec<u32>, mut lay: Option<&mut Vec<u8>>) {
    let mut out = 0usize;
    let mut start = 0usize;
    for v in 0..xadj.len().saturating_sub(1) {
        let end = xadj[v + 1] as usize;
        let row_start = out;
        for i in start..end {
            if out > row_start && adj[out - 1] == adj[i] {
                continue;
            }
            adj[out] = adj[i];
            if let Some(l) = lay.as_deref_mut() {
                l[out] = l[i];
            }
            out += 1;
        }
        start = end;
        xadj[v + 1] = out as u64;
    }
    adj.truncate(out);
    adj.shrink_to_fit();
    if let Some(l) = lay {
        l.truncate(out);
        l.shrink_to_fit();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn layers_keep_the_lowest_on_duplicates_and_rows_are_sorted() {
        let (g, s) = Csr::from_pairs(3, vec![(2, 0), (0, 2), (1, 0)], Some(vec![3, 1, 2]));
        assert_eq!(s.duplicates, 1);
        assert_eq!(g.neighbours(0), &[1, 2]);
        assert_eq!(g.layer.as_ref().unwrap()[g.row(0)], [2, 1]);
        assert_eq!(g.layer.as_ref().unwrap()[g.row(2)], [1]);
    }

    #[test]
    fn independent_of_the_thread_count() {
        let pairs: Vec<(u32, u32)> = (0..5000u32).map(|i| (i * 7919 % 1000, i * 104_729 % 1000)).collect();
        let one = rayon::ThreadPoolBuilder::new().num_threads(1).build().unwrap();
        let three = rayon::ThreadPoolBuilder::new().num_threads(3).build().unwrap();
        let a = one.install(|| Csr::from_pairs(1000, pairs.clone(), None));
        let b = three.install(|| Csr::from_pairs(1000, pairs, None));
        assert_eq!(a, b);
    }
}
