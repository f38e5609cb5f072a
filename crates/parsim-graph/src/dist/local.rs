//! Collective construction: every rank generates (or reads) a share of the
//! edges, the endpoints owned elsewhere travel to their owners once, and each
//! rank builds its rows from what it holds. No rank ever holds the whole
//! graph or an array sized by it.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Mutex;

use parsim_comm::{Comm, Pod, ReduceOp};
use rayon::prelude::*;

use super::{DistGraph, Owned, Rows};
use crate::csr::BuildStats;
use crate::error::{GraphError, Result};

/// The owner of vertex `v` when `n` vertices are split into `ranks` blocks
/// of consecutive ids (the `block` partition): `⌊v·ranks/n⌋`.
#[inline]
pub fn block_owner(n: usize, ranks: usize, v: u32) -> u32 {
    (u64::from(v) * ranks as u64 / n.max(1) as u64) as u32
}

/// [`block_owner`] for many ids of one `(n, ranks)`, without an integer
/// division per id (a construction asks once per endpoint): for up to 8
/// ranks, the count of block starts at or below the id; beyond, a
/// multiplication by the reciprocal and two comparisons that are almost
/// never true.
#[derive(Clone, Copy, Debug)]
pub(crate) struct BlockOwners {
    n: u64,
    ranks: u64,
    scale: f64,
    /// The first ids of blocks 1..ranks (up to 8 ranks; unused entries `u32::MAX`).
    starts: [u32; 7],
}

impl BlockOwners {
    pub(crate) fn new(n: usize, ranks: usize) -> BlockOwners {
        let mut starts = [u32::MAX; 7];
        if ranks <= 8 {
            for (r, s) in starts.iter_mut().enumerate().take(ranks.saturating_sub(1)) {
                *s = block_range(n, ranks, r + 1).0;
            }
        }
        let n = n.max(1) as u64;
        BlockOwners { n, ranks: ranks as u64, scale: 1.0 / n as f64, starts }
    }

    /// Exactly `block_owner(n, ranks, v)`. Beyond 8 ranks: `v·ranks` < 2⁵³
    /// is exact in an `f64` (and an `i64`, whose conversions are single
    /// instructions), the product with the rounded reciprocal is off by at
    /// most one and the comparisons correct it.
    #[inline]
    pub(crate) fn of(&self, v: u32) -> u32 {
        if self.ranks <= 8 {
            return self.starts.iter().map(|&s| u32::from(v >= s)).sum();
        }
        let x = u64::from(v) * self.ranks;
        let mut q = ((x as i64) as f64 * self.scale) as i64 as u64;
        if q * self.n > x {
            q -= 1;
        } else if (q + 1) * self.n <= x {
            q += 1;
        }
        q as u32
    }
}

/// The ids rank `r` owns under [`block_owner`]: `lo..hi`.
///
/// ```
/// use parsim_graph::{block_owner, block_range};
/// let (lo, hi) = block_range(10, 3, 1);
/// assert_eq!((lo, hi), (4, 7));
/// assert!((lo..hi).all(|v| block_owner(10, 3, v) == 1));
/// ```
pub fn block_range(n: usize, ranks: usize, r: usize) -> (u32, u32) {
    let at = |r: usize| (r as u64 * n as u64).div_ceil(ranks.max(1) as u64) as u32;
    (at(r), at(r + 1))
}

/// [`Comm::all_to_all_v`] in as many rounds as it takes for no rank to send
/// more than `max_bytes` in one (every rank takes part in every round; the
/// parts arrive whole and in order). Large exchanges stay within MPI's 32-bit
/// counts and do not need a second copy of everything at once.
pub fn exchange_in_rounds<C: Comm, T: Pod + Send>(
    comm: &C,
    parts: Vec<Vec<T>>,
    max_bytes: usize,
) -> Result<Vec<Vec<T>>> {
    let bytes: usize = parts.iter().map(|p| std::mem::size_of_val(p.as_slice())).sum();
    let rounds = comm.all_reduce(&[bytes.div_ceil(max_bytes.max(1)).max(1) as u64], ReduceOp::Max)?[0] as usize;
    if rounds == 1 {
        return Ok(comm.all_to_all_v(parts)?);
    }
    let mut got: Vec<Vec<T>> = vec![Vec::new(); parts.len()];
    for k in 0..rounds {
        let slice: Vec<Vec<T>> =
            parts.iter().map(|p| p[p.len() * k / rounds..p.len() * (k + 1) / rounds].to_vec()).collect();
        for (g, r) in got.iter_mut().zip(comm.all_to_all_v(slice)?) {
            g.extend_from_slice(&r);
        }
    }
    Ok(got)
}

/// The most one rank sends in one round of a construction's exchange.
const ROUND_BYTES: usize = 256 << 20;

/// The chunks a construction generates its units in (at most): the
/// endpoints owned elsewhere are held for one chunk at a time.
const CHUNKS: usize = 64;

/// Flat endpoint records, one vector per destination (a rank or a row range).
type Buckets = Vec<Vec<u32>>;

/// A sink for generated edges: (u, v, layer).
pub type Sink<'a> = &'a mut dyn FnMut(u32, u32, u8);

impl DistGraph {
    /// Builds every rank's share of a graph of `n` vertices, block
    /// partitioned ([`block_owner`]), from edges that each rank generates or
    /// reads itself. Collective.
    ///
    /// `gen(k, sink)` emits the edges of this rank's unit `k` (for `k` in
    /// `0..units`) as `sink(u, v, layer)`; it is called twice per unit (once
    /// to count, once to fill) and must emit the same edges both times.
    /// Units are generated in up to 64 chunks; the endpoints owned by other
    /// ranks travel after each chunk, so beyond its rows a rank holds one
    /// chunk's worth of them at a time. All
    /// ranks' units together emit every edge: undirected pairs in either
    /// orientation (`directed = false`; both endpoints get the edge), or
    /// directed entries (`directed = true`; only `u`'s row gets `v`, as in a
    /// METIS file). Self-loops are dropped and counted; an edge emitted twice
    /// is kept once, with the lowest layer — exactly [`Csr::from_pairs`](crate::Csr::from_pairs),
    /// so the rows equal the sequential graph's for any number of ranks.
    /// Units are generated in parallel.
    ///
    /// ```
    /// use parsim_comm::Comm;
    /// use parsim_graph::{Csr, DistGraph};
    /// // A ring of 10 vertices, each rank emitting the edges (i, i + 1) of its own i.
    /// let views = parsim_comm::launch(2, |comm| {
    ///     let (lo, hi) = parsim_graph::block_range(10, 2, comm.rank());
    ///     let (d, _) = DistGraph::from_generator(&comm, 10, 1, false, false, &|_, sink| {
    ///         for i in lo..hi {
    ///             sink(i, (i + 1) % 10, 0);
    ///         }
    ///     })?;
    ///     Ok::<_, parsim_graph::GraphError>((d.owned(), d.ghosts(), d.cut_edges()))
    /// })?;
    /// assert_eq!(views, vec![(5, 2, 2), (5, 2, 2)]);
    /// # Ok::<(), parsim_graph::GraphError>(())
    /// ```
    pub fn from_generator<C: Comm>(
        comm: &C,
        n: usize,
        units: usize,
        directed: bool,
        layered: bool,
        gen: &(dyn Fn(usize, Sink<'_>) + Sync),
    ) -> Result<(DistGraph, BuildStats)> {
        if n >= u32::MAX as usize {
            return Err(GraphError::BadArgument(format!("{n} vertices: at most 2^32 - 2")));
        }
        let (p, me) = (comm.size(), comm.rank());
        let (lo, hi) = block_range(n, p, me);
        let n_own = (hi - lo) as usize;
        let stride = if layered { 3 } else { 2 };
        let bad = AtomicBool::new(false);
        // Owned rows are split into ranges of 2^shift rows (at most 8192,
        // whose counts and adjacency stay in a core's cache, and at least 8
        // per thread); each pass applies a range's endpoints on one thread,
        // so counting and filling need no atomic operations (a locked add on
        // a missed line stalls until the line arrives) and touch memory one
        // cache-sized range at a time, like a radix sort.
        let ranges_wanted = (rayon::current_num_threads() * 8).max(1);
        let shift = n_own.div_ceil(ranges_wanted).max(1).next_power_of_two().trailing_zeros().min(13);
        let nr = n_own.div_ceil(1 << shift).max(1);
        // Units are generated in chunks (every rank runs as many, at least 8
        // units each so that a chunk's units run in parallel); after each
        // chunk, the endpoints owned elsewhere travel to their owners, so no
        // rank ever holds more than one chunk of them.
        let chunks = (comm.all_reduce(&[units as u64], ReduceOp::Max)?[0] as usize).div_ceil(8).clamp(1, CHUNKS);
        // Pieces' buffers go back to a pool once a pass has applied them, and
        // the next chunk's pieces reuse them: memory already mapped, where a
        // fresh allocation of each would fault its pages in again.
        let pool: Mutex<Vec<Vec<u32>>> = Mutex::new(Vec::new());
        let by_range = |flat: &[u32]| Piece::by_range(flat, stride, shift, nr, lo, &pool);
        let recycle = |pieces: Vec<Piece>| {
            pool.lock().unwrap_or_else(std::sync::PoisonError::into_inner).extend(pieces.into_iter().map(|p| p.data))
        };
        let owners = BlockOwners::new(n, p);
        // One chunk's endpoints owned here, [w − lo, o (, layer)], per piece of work, by row range.
        let chunk = |c: usize| -> Result<(u64, Vec<Piece>)> {
            let outs: Vec<(u64, Piece, Buckets)> = (c * units / chunks..(c + 1) * units / chunks)
                .into_par_iter()
                // Each thread keeps its buffers from unit to unit: a unit's
                // endpoints (half a megabyte for an Erdős–Rényi unit) are
                // not copied while a buffer grows, nor written to fresh pages.
                .map_init(
                    || vec![Vec::<u32>::new(); p],
                    |out, k| {
                        let mut loops = 0u64;
                        // Every endpoint goes to its owner's buffer, this rank's
                        // own included: an index, not a branch the processor
                        // mispredicts for a random half of the endpoints.
                        out.iter_mut().for_each(Vec::clear);
                        gen(k, &mut |u, v, l| {
                            if u as usize >= n || v as usize >= n {
                                bad.store(true, Ordering::Relaxed);
                                return;
                            }
                            if u == v {
                                loops += 1;
                                return;
                            }
                            let ends: &[(u32, u32)] = if directed { &[(u, v)] } else { &[(u, v), (v, u)] };
                            for &(w, o) in ends {
                                let q = if p == 1 { 0 } else { owners.of(w) as usize };
                                let b = &mut out[q];
                                b.extend_from_slice(&[w, o]);
                                if layered {
                                    b.push(u32::from(l));
                                }
                            }
                        });
                        let mine = by_range(&out[me]);
                        // The other ranks' buffers leave whole (no copy); only
                        // this rank's own, the one reused, stays.
                        let others: Buckets = out
                            .iter_mut()
                            .enumerate()
                            .map(|(q, b)| if q == me { Vec::new() } else { std::mem::take(b) })
                            .collect();
                        (loops, mine, others)
                    },
                )
                .collect();
            let mut loops = 0u64;
            let mut parts: Vec<Vec<u32>> = vec![Vec::new(); p];
            let mut pieces = Vec::with_capacity(outs.len() + 1);
            for (l, mine, out) in outs {
                loops += l;
                pieces.push(mine);
                for (q, v) in out.into_iter().enumerate() {
                    parts[q].extend_from_slice(&v);
                }
            }
            let got = exchange_in_rounds(comm, parts, ROUND_BYTES)?;
            pieces.extend(got.par_iter().flat_map(|g| g.par_chunks(stride << 16)).map(by_range).collect::<Vec<_>>());
            Ok((loops, pieces))
        };
        // Pass 1: count the endpoints of every owned row.
        let mut counts = vec![0u32; n_own];
        let mut loops = 0u64;
        for c in 0..chunks {
            let (l, pieces) = chunk(c)?;
            loops += l;
            counts.par_chunks_mut(1 << shift).enumerate().for_each(|(r, cnt)| {
                let base = r << shift;
                for piece in &pieces {
                    for e in piece.range(r).chunks_exact(stride) {
                        cnt[e[0] as usize - base] += 1;
                    }
                }
            });
            recycle(pieces);
        }
        let bad = comm.all_reduce(&[u64::from(bad.load(Ordering::Relaxed))], ReduceOp::Max)?[0] == 1;
        if bad {
            return Err(GraphError::BadArgument(format!("an edge names a vertex beyond the graph ({n} vertices)")));
        }
        let mut xadj = Vec::with_capacity(n_own + 1);
        xadj.push(0u64);
        for c in &mut counts {
            xadj.push(xadj[xadj.len() - 1] + u64::from(std::mem::take(c)));
        }
        let total = xadj[n_own] as usize;
        // Pass 2: fill (rows in any order; sorted below), each range's slice of the rows on one thread.
        let mut adj = vec![0u32; total];
        let mut lay: Option<Vec<u8>> = layered.then(|| vec![0u8; total]);
        let over = AtomicBool::new(false);
        for c in 0..chunks {
            let (_, pieces) = chunk(c)?;
            let mut a_rest = &mut adj[..];
            let mut l_rest = lay.as_deref_mut();
            let mut slices = Vec::with_capacity(nr);
            for (r, fill) in counts.chunks_mut(1 << shift).enumerate() {
                let (first, end) = (r << shift, ((r + 1) << shift).min(n_own));
                let len = (xadj[end] - xadj[first]) as usize;
                let (a, b) = std::mem::take(&mut a_rest).split_at_mut(len);
                a_rest = b;
                let l = l_rest.take().map(|l| {
                    let (x, y) = l.split_at_mut(len);
                    l_rest = Some(y);
                    x
                });
                slices.push((r, fill, a, l));
            }
            slices.into_par_iter().for_each(|(r, fill, a, mut l)| {
                let base = r << shift;
                let x0 = xadj[base];
                for piece in &pieces {
                    for e in piece.range(r).chunks_exact(stride) {
                        let i = e[0] as usize;
                        if u64::from(fill[i - base]) >= xadj[i + 1] - xadj[i] {
                            over.store(true, Ordering::Relaxed);
                            continue;
                        }
                        let at = (xadj[i] - x0) as usize + fill[i - base] as usize;
                        fill[i - base] += 1;
                        a[at] = e[1];
                        if let Some(l) = l.as_deref_mut() {
                            l[at] = e[2] as u8;
                        }
                    }
                }
            });
            recycle(pieces);
        }
        drop(pool);
        if over.into_inner() || counts.iter().zip(xadj.windows(2)).any(|(&c, w)| u64::from(c) != w[1] - w[0]) {
            return Err(GraphError::BadArgument("the generator emitted different edges on its second call".into()));
        }
        drop(counts);
        let dups = sort_rows(&xadj, &mut adj, lay.as_deref_mut());
        if dups > 0 {
            crate::csr::compact(&mut xadj, &mut adj, lay.as_mut());
        }
        let sums = comm.all_reduce(&[loops, dups], ReduceOp::Sum)?;
        let stats = BuildStats { self_loops: sums[0], duplicates: if directed { sums[1] } else { sums[1] / 2 } };
        let rows = Rows { n_global: n, owned: Owned::Block(lo, hi), xadj, adj, weight: None, layer: lay };
        let d = DistGraph::from_rows(me, p, rows, &|v| block_owner(n, p, v))?;
        Ok((d, stats))
    }
}

/// Endpoint records `[row, neighbour (, layer)]` grouped by row range
/// (ranges of `2^shift` rows): range `r`'s are `data[off[r]..off[r + 1]]`.
struct Piece {
    data: Vec<u32>,
    off: Vec<u32>,
}

impl Piece {
    /// Groups `flat`'s records by range with one counting pass and one
    /// scatter, their rows made local (`row − lo`) on the way.
    fn by_range(flat: &[u32], stride: usize, shift: u32, ranges: usize, lo: u32, pool: &Mutex<Vec<Vec<u32>>>) -> Piece {
        let mut off = vec![0u32; ranges + 1];
        for e in flat.chunks_exact(stride) {
            off[((e[0] - lo) >> shift) as usize + 1] += stride as u32;
        }
        for r in 0..ranges {
            off[r + 1] += off[r];
        }
        let mut at = off[..ranges].to_vec();
        let mut data = pool.lock().unwrap_or_else(std::sync::PoisonError::into_inner).pop().unwrap_or_default();
        data.clear();
        data.resize(flat.len(), 0);
        for e in flat.chunks_exact(stride) {
            let row = e[0] - lo;
            let r = (row >> shift) as usize;
            let a = at[r] as usize;
            data[a..a + stride].copy_from_slice(e);
            data[a] = row;
            at[r] += stride as u32;
        }
        Piece { data, off }
    }

    /// Range `r`'s records.
    #[inline]
    fn range(&self, r: usize) -> &[u32] {
        &self.data[self.off[r] as usize..self.off[r + 1] as usize]
    }
}

/// Sorts every row by (neighbour, layer), in parallel over row ranges, and
/// returns the repeated neighbours found.
fn sort_rows(xadj: &[u64], adj: &mut [u32], lay: Option<&mut [u8]>) -> u64 {
    let n = xadj.len() - 1;
    let pieces = (rayon::current_num_threads() * 4).clamp(1, n.max(1));
    let ranges: Vec<(usize, usize)> = (0..pieces).map(|t| (t * n / pieces, (t + 1) * n / pieces)).collect();
    let mut a_parts = Vec::with_capacity(pieces);
    let mut l_parts: Vec<Option<&mut [u8]>> = Vec::with_capacity(pieces);
    let (mut rest, mut lrest) = (adj, lay);
    for &(lo, hi) in &ranges {
        let len = (xadj[hi] - xadj[lo]) as usize;
        let (a, b) = rest.split_at_mut(len);
        a_parts.push(a);
        rest = b;
        match lrest.take() {
            Some(l) => {
                let (a, b) = l.split_at_mut(len);
                l_parts.push(Some(a));
                lrest = Some(b);
            }
            None => l_parts.push(None),
        }
    }
    a_parts
        .into_par_iter()
        .zip(l_parts.into_par_iter())
        .zip(ranges.par_iter())
        .map(|((a, mut l), &(lo, hi))| {
            let base = xadj[lo];
            let mut dups = 0u64;
            let mut tmp: Vec<(u32, u8)> = Vec::new();
            for v in lo..hi {
                let r = (xadj[v] - base) as usize..(xadj[v + 1] - base) as usize;
                dups += crate::csr::sort_row(&mut a[r.clone()], l.as_deref_mut().map(|l| &mut l[r]), &mut tmp);
            }
            dups
        })
        .sum()
}

#[cfg(test)]
mod tests {
    use super::{block_owner, BlockOwners};

    #[test]
    fn block_owners_agree_with_the_division_everywhere_it_could_round() {
        for n in [1usize, 2, 3, 7, 10, 999, 1 << 20, 1_000_003, u32::MAX as usize - 1] {
            for ranks in [1usize, 2, 3, 4, 5, 7, 64, 1000, 65_535] {
                let o = BlockOwners::new(n, ranks);
                // Every block's first and last ids and their neighbours, and a stride through the rest.
                let mut vs: Vec<u64> = (0..=ranks as u64)
                    .flat_map(|r| {
                        let a = (r * n as u64).div_ceil(ranks as u64);
                        [a.saturating_sub(1), a, a + 1]
                    })
                    .collect();
                vs.extend((0..n as u64).step_by((n / 5000).max(1)));
                for v in vs.into_iter().filter(|&v| v < n as u64) {
                    assert_eq!(o.of(v as u32), block_owner(n, ranks, v as u32), "n {n}, ranks {ranks}, v {v}");
                }
            }
        }
    }
}
