//! Graphs in compressed sparse rows: 64-bit edge offsets, 32-bit vertex ids,
//! one or more integer weights per vertex, an integer weight per edge, and
//! optional coordinates.

use crate::error::{PartitionError, Result};

/// An undirected graph in CSR form; every edge is stored in both directions.
///
/// ```
/// use parsim_partition::Graph;
/// // A path 0 - 1 - 2.
/// let g = Graph::from_edges(3, &[(0, 1, 1), (1, 2, 1)]).unwrap();
/// assert_eq!(g.n(), 3);
/// assert_eq!(g.edges(), 2);
/// assert_eq!(g.neighbours(1), &[0, 2]);
/// ```
#[derive(Clone, Debug, PartialEq)]
pub struct Graph {
    /// Offsets into `adjncy`, `n + 1` entries.
    pub xadj: Vec<u64>,
    /// Neighbours.
    pub adjncy: Vec<u32>,
    /// Edge weights, parallel to `adjncy` (all > 0; their total, each edge
    /// once, at most [`MAX_TOTAL_EDGE_WEIGHT`], so that every coarse edge,
    /// a sum of fine edges, fits in 32 bits as in METIS).
    pub adjwgt: Vec<u32>,
    /// Vertex-weight constraints per vertex (≥ 1).
    pub ncon: usize,
    /// Vertex weights, `n * ncon`, vertex-major (all ≥ 0).
    pub vwgt: Vec<i64>,
    /// Vertex sizes (METIS's communication-volume weights), if given.
    pub vsize: Option<Vec<i64>>,
    /// Coordinates, `n * dim`, if known.
    pub coords: Option<Vec<f64>>,
    /// Coordinate dimension (0 without coordinates).
    pub dim: usize,
}

/// The largest total of vertex weights (per constraint) that a [`Graph`]
/// may have: 2^53, so that every sum the partitioners form (part weights,
/// balance limits in `f64`) is exact and cannot overflow. Edge weights have
/// their own, lower bound, [`MAX_TOTAL_EDGE_WEIGHT`]. [`Graph::validate`]
/// refuses heavier graphs.
pub const MAX_TOTAL_WEIGHT: i64 = 1 << 53;

/// The largest total of edge weights (each edge once) that a [`Graph`] may
/// have: 2^32 − 1. Edge weights are stored in 32 bits (as METIS stores
/// them), which holds the adjacency in 8 bytes per entry instead of 12; a
/// coarse edge weighs the sum of the fine edges it merges, so this bound
/// keeps every level's weights in range. [`Graph::validate`] refuses
/// heavier graphs.
pub const MAX_TOTAL_EDGE_WEIGHT: u64 = u32::MAX as u64;

impl Graph {
    /// The number of vertices.
    #[inline]
    pub fn n(&self) -> usize {
        self.xadj.len() - 1
    }

    /// The number of (undirected) edges.
    pub fn edges(&self) -> usize {
        self.adjncy.len() / 2
    }

    /// The neighbours of `v`.
    #[inline]
    pub fn neighbours(&self, v: usize) -> &[u32] {
        &self.adjncy[self.xadj[v] as usize..self.xadj[v + 1] as usize]
    }

    /// The weights of `v`'s edges, parallel to [`neighbours`](Self::neighbours).
    #[inline]
    pub fn edge_weights(&self, v: usize) -> &[u32] {
        &self.adjwgt[self.xadj[v] as usize..self.xadj[v + 1] as usize]
    }

    /// `v`'s weights (one per constraint).
    #[inline]
    pub fn weights(&self, v: usize) -> &[i64] {
        &self.vwgt[v * self.ncon..(v + 1) * self.ncon]
    }

    /// The degree of `v`.
    #[inline]
    pub fn degree(&self, v: usize) -> usize {
        (self.xadj[v + 1] - self.xadj[v]) as usize
    }

    /// The total vertex weight of each constraint.
    pub fn total_weights(&self) -> Vec<i64> {
        let mut t = vec![0i64; self.ncon];
        for v in 0..self.n() {
            for (c, w) in self.weights(v).iter().enumerate() {
                t[c] += w;
            }
        }
        t
    }

    /// A graph with unit vertex weights from undirected weighted edges
    /// `(u, v, w)`, each listed once; duplicates are merged (weights added).
    /// The weights may total at most [`MAX_TOTAL_EDGE_WEIGHT`].
    pub fn from_edges(n: usize, edges: &[(u32, u32, u32)]) -> Result<Graph> {
        if n > u32::MAX as usize {
            return Err(PartitionError::BadArgument(format!("{n} vertices: at most 2^32 - 1 are supported")));
        }
        // A corrupt size line can claim billions of vertices: fail with an
        // error, not an abort, when their arrays do not fit in memory.
        let mut deg: Vec<u64> = Vec::new();
        deg.try_reserve_exact(3 * (n + 1))
            .map_err(|_| PartitionError::BadArgument(format!("{n} vertices do not fit in memory")))?;
        deg.resize(n + 1, 0);
        for &(u, v, w) in edges {
            if u as usize >= n || v as usize >= n {
                return Err(PartitionError::BadArgument(format!("edge ({u}, {v}) outside 0..{n}")));
            }
            if u == v {
                return Err(PartitionError::BadArgument(format!("self-loop at vertex {u}")));
            }
            if w == 0 {
                return Err(PartitionError::BadArgument(format!("edge ({u}, {v}) has weight 0 (must be > 0)")));
            }
            deg[u as usize] += 1;
            deg[v as usize] += 1;
        }
        let total: u64 = edges.iter().map(|e| u64::from(e.2)).sum();
        if total > MAX_TOTAL_EDGE_WEIGHT {
            return Err(PartitionError::BadArgument(format!(
                "the edge weights sum to {total}, more than {MAX_TOTAL_EDGE_WEIGHT} (2^32 - 1, the largest total parsim stores): scale the weights down"
            )));
        }
        let mut xadj = vec![0u64; n + 1];
        for v in 0..n {
            xadj[v + 1] = xadj[v] + deg[v];
        }
        let mut fill = xadj.clone();
        let mut adj = vec![(0u32, 0u32); xadj[n] as usize];
        for &(u, v, w) in edges {
            adj[fill[u as usize] as usize] = (v, w);
            fill[u as usize] += 1;
            adj[fill[v as usize] as usize] = (u, w);
            fill[v as usize] += 1;
        }
        // Sort each row and merge duplicates.
        let mut out_x = vec![0u64; n + 1];
        let (mut adjncy, mut adjwgt) = (Vec::with_capacity(adj.len()), Vec::with_capacity(adj.len()));
        for v in 0..n {
            let row = &mut adj[xadj[v] as usize..xadj[v + 1] as usize];
            row.sort_unstable_by_key(|e| e.0);
            for &(u, w) in row.iter() {
                if adjncy.len() as u64 > out_x[v] && *adjncy.last().expect("row") == u {
                    *adjwgt.last_mut().expect("row") += w;
                } else {
                    adjncy.push(u);
                    adjwgt.push(w);
                }
            }
            out_x[v + 1] = adjncy.len() as u64;
        }
        Ok(Graph { xadj: out_x, adjncy, adjwgt, ncon: 1, vwgt: vec![1; n], vsize: None, coords: None, dim: 0 })
    }

    /// Checks the invariants every method relies on: offsets, ids in range,
    /// no self-loops or duplicate edges, symmetric adjacency with equal
    /// weights, weights in range. Vertex ids in messages are 1-based (as in
    /// the METIS format).
    pub fn validate(&self) -> std::result::Result<(), String> {
        let n = self.n();
        if self.xadj[0] != 0 || self.xadj[n] as usize != self.adjncy.len() || self.adjwgt.len() != self.adjncy.len() {
            return Err("inconsistent offsets".into());
        }
        if self.vwgt.len() != n * self.ncon || self.ncon == 0 {
            return Err("inconsistent vertex weights".into());
        }
        if let Some(w) = self.vwgt.iter().find(|&&w| w < 0) {
            return Err(format!("negative vertex weight {w}"));
        }
        // Every sum the partitioner forms (part weights, cuts, gains, balance
        // limits in f64) stays exact when the totals are at most 2^53.
        for c in 0..self.ncon {
            let total: i128 = if self.ncon == 1 {
                exact_total(&self.vwgt)
            } else {
                self.vwgt.iter().skip(c).step_by(self.ncon).map(|&w| i128::from(w)).sum()
            };
            if total > MAX_TOTAL_WEIGHT as i128 {
                return Err(format!(
                    "the vertex weights (constraint {}) sum to {total}, more than {MAX_TOTAL_WEIGHT} (2^53, the largest total parsim sums exactly): scale the weights down",
                    c + 1
                ));
            }
        }
        let total: u64 = self.adjwgt.iter().map(|&w| u64::from(w)).sum::<u64>() / 2;
        if total > MAX_TOTAL_EDGE_WEIGHT {
            return Err(format!(
                "the edge weights sum to {total}, more than {MAX_TOTAL_EDGE_WEIGHT} (2^32 - 1, the largest total parsim stores, as METIS): scale the weights down"
            ));
        }
        // Ids, self-loops and weights, and whether every row is already
        // strictly increasing (METIS files usually are): then the rows are
        // their own sorted copies and have no duplicates. A row that is not
        // is checked for a repeat on its own: a short one by comparing its
        // entries (in cache), a long one with a stamp per vertex (the row
        // that last listed it).
        let mut sorted = true;
        let mut seen: Vec<u32> = Vec::new();
        for v in 0..n {
            let row = self.neighbours(v);
            for (&u, &w) in row.iter().zip(self.edge_weights(v)) {
                if u as usize >= n {
                    return Err(format!("vertex {} has neighbour {} outside 1..={n}", v + 1, u as u64 + 1));
                }
                if u as usize == v {
                    return Err(format!("self-loop at vertex {}", v + 1));
                }
                if w == 0 {
                    return Err(format!("edge {}-{} has weight 0 (must be > 0)", v + 1, u + 1));
                }
            }
            if row.windows(2).all(|p| p[0] < p[1]) {
                continue;
            }
            sorted = false;
            let repeat = if row.len() <= 16 {
                (1..row.len()).find(|&i| row[..i].contains(&row[i])).map(|i| row[i])
            } else {
                if seen.is_empty() {
                    seen = vec![u32::MAX; n];
                }
                row.iter().copied().find(|&u| std::mem::replace(&mut seen[u as usize], v as u32) == v as u32)
            };
            if let Some(u) = repeat {
                return Err(format!("duplicate edge {}-{}", v + 1, u + 1));
            }
        }
        // Symmetry in one sequential pass: the arcs that go up (v → u, u > v)
        // and those that come down (u → v), each read as (low, high,
        // weight), must be the same set (rows have no duplicates). A 64-bit
        // hash and its square, summed over each side, compare the sets
        // without the scattered reads of matching arc by arc; a mismatch
        // (or a count that differs) goes to the search below, which names
        // the defect.
        let key = |a: u32, b: u32, w: u32| {
            let h = hash64((u64::from(a) << 32 | u64::from(b)) ^ u64::from(w).wrapping_mul(0x5851_f42d_4c95_7f2d));
            (h, h.wrapping_mul(h))
        };
        let (mut up, mut down) = ((0u64, 0u64, 0u64), (0u64, 0u64, 0u64));
        for v in 0..n {
            for (&u, &w) in self.neighbours(v).iter().zip(self.edge_weights(v)) {
                let side = if u as usize > v { &mut up } else { &mut down };
                let (h1, h2) = if u as usize > v { key(v as u32, u, w) } else { key(u, v as u32, w) };
                side.0 += 1;
                side.1 = side.1.wrapping_add(h1);
                side.2 = side.2.wrapping_add(h2);
            }
        }
        if up == down {
            return Ok(());
        }
        // Not symmetric: rows sorted (a copy, where they were not) to name
        // the first arc without its reverse.
        let copy: Option<Vec<(u32, u32)>> = (!sorted).then(|| {
            let mut rows: Vec<(u32, u32)> = self.adjncy.iter().copied().zip(self.adjwgt.iter().copied()).collect();
            for v in 0..n {
                rows[self.xadj[v] as usize..self.xadj[v + 1] as usize].sort_unstable();
            }
            rows
        });
        let entry = |i: usize| copy.as_ref().map_or((self.adjncy[i], self.adjwgt[i]), |c| c[i]);
        let span = |v: usize| self.xadj[v] as usize..self.xadj[v + 1] as usize;
        let find = |u: usize, v: u32| -> Option<u32> {
            let r = span(u);
            let (mut lo, mut hi) = (r.start, r.end);
            while lo < hi {
                let mid = (lo + hi) / 2;
                match entry(mid).0.cmp(&v) {
                    std::cmp::Ordering::Less => lo = mid + 1,
                    std::cmp::Ordering::Greater => hi = mid,
                    std::cmp::Ordering::Equal => return Some(entry(mid).1),
                }
            }
            None
        };
        for v in 0..n {
            for i in span(v) {
                let (u, w) = entry(i);
                match find(u as usize, v as u32) {
                    None => {
                        return Err(format!(
                            "edge {}-{} has no reverse edge {}-{} (the adjacency is not symmetric)",
                            v + 1,
                            u + 1,
                            u + 1,
                            v + 1
                        ))
                    }
                    Some(x) if x != w => {
                        return Err(format!("edge {}-{} has weight {w} but {}-{} has {x}", v + 1, u + 1, u + 1, v + 1))
                    }
                    _ => {}
                }
            }
        }
        Ok(())
    }

    /// The number of connected components (isolated vertices count one each).
    ///
    /// ```
    /// let g = parsim_partition::Graph::from_edges(5, &[(0, 1, 1), (2, 3, 1)]).unwrap();
    /// assert_eq!(g.components(), 3);
    /// ```
    pub fn components(&self) -> usize {
        let n = self.n();
        let mut seen = vec![false; n];
        let mut stack = Vec::new();
        let mut count = 0;
        for s in 0..n {
            if seen[s] {
                continue;
            }
            count += 1;
            seen[s] = true;
            stack.push(s);
            while let Some(v) = stack.pop() {
                for &u in self.neighbours(v) {
                    if !seen[u as usize] {
                        seen[u as usize] = true;
                        stack.push(u as usize);
                    }
                }
            }
        }
        count
    }

    /// The weight of edge `v`-`u`, if present (linear or binary search of `v`'s row).
    pub fn weight_of(&self, v: usize, u: u32) -> Option<u32> {
        let nb = self.neighbours(v);
        let i = if nb.windows(2).all(|w| w[0] < w[1]) {
            nb.binary_search(&u).ok()
        } else {
            nb.iter().position(|&x| x == u)
        }?;
        Some(self.edge_weights(v)[i])
    }
}

/// The exact sum of `xs`: each value's high and low 32-bit halves summed
/// apart in `i64` (2³¹ values at a time, which cannot overflow), a loop the
/// compiler vectorises where a sum in `i128` is one value at a time.
fn exact_total(xs: &[i64]) -> i128 {
    xs.chunks(1 << 31)
        .map(|c| {
            let (hi, lo) = c.iter().fold((0i64, 0i64), |(h, l), &x| (h + (x >> 32), l + (x & 0xffff_ffff)));
            (i128::from(hi) << 32) + i128::from(lo)
        })
        .sum()
}

/// splitmix64's finaliser: a cheap, well-mixed hash of `x`.
fn hash64(mut x: u64) -> u64 {
    x = (x ^ (x >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    x = (x ^ (x >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    x ^ (x >> 31)
}

#[cfg(test)]
mod tests {
    use super::{exact_total, Graph};

    #[test]
    fn exact_totals_equal_sums_in_i128_at_the_extremes() {
        let cases: Vec<Vec<i64>> = vec![
            vec![],
            vec![1; 1000],
            vec![i64::MAX; 7],
            vec![i64::MIN; 7],
            vec![i64::MAX, i64::MIN, -1, 1, 0xffff_ffff, -0x1_0000_0000, 12345],
            (0..5000).map(|i| (i as i64).wrapping_mul(0x9E37_79B9_7F4A_7C15u64 as i64)).collect(),
        ];
        for xs in cases {
            assert_eq!(
                exact_total(&xs),
                xs.iter().map(|&x| i128::from(x)).sum::<i128>(),
                "{:?}",
                &xs[..xs.len().min(4)]
            );
        }
    }

    #[test]
    fn unsorted_rows_with_a_repeat_or_a_missing_reverse_are_named() {
        // Rows out of order are fine; a repeated neighbour is not.
        let ok = Graph {
            xadj: vec![0, 2, 3, 4],
            adjncy: vec![2, 1, 0, 0],
            adjwgt: vec![1; 4],
            ncon: 1,
            vwgt: vec![1; 3],
            vsize: None,
            coords: None,
            dim: 0,
        };
        assert_eq!(ok.validate(), Ok(()));
        let dup = Graph { xadj: vec![0, 3, 4, 5], adjncy: vec![2, 1, 2], ..ok.clone() };
        let dup = Graph { adjncy: vec![2, 1, 2, 0, 0], adjwgt: vec![1; 5], ..dup };
        assert_eq!(dup.validate(), Err("duplicate edge 1-3".to_string()));
        let asym = Graph { xadj: vec![0, 2, 3, 3], adjncy: vec![2, 1, 0], adjwgt: vec![1; 3], ..ok.clone() };
        assert!(asym.validate().unwrap_err().contains("edge 1-3 has no reverse edge 3-1"), "{:?}", asym.validate());
        let weights = Graph { adjwgt: vec![1, 2, 1, 1], ..ok };
        assert!(weights.validate().unwrap_err().contains("has weight"), "{:?}", weights.validate());
    }
}
