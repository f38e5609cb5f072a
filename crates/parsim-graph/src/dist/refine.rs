//! A partitioner that needs no rank to hold the graph: size-constrained
//! label propagation over a [`DistGraph`], in the style of the refinement
//! of distributed KaMinPar and ParMETIS's k-way refinement.

use parsim_comm::{Comm, ReduceOp};

use super::{block_owner, DistGraph};
use crate::error::{GraphError, Result};

const TAG_LABELS: u32 = 0x6d1;

/// What [`DistGraph::label_propagation`] did.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Propagated {
    /// The part of every owned vertex (local id order).
    pub part: Vec<u32>,
    /// Rounds run.
    pub rounds: usize,
    /// Vertices moved, all ranks, all rounds.
    pub moved: u64,
    /// Cut edges (each once) before and after, all ranks.
    pub cut: (u64, u64),
    /// The largest part over the mean part, after.
    pub imbalance: f64,
}

impl DistGraph {
    /// Partitions the graph into `parts` parts of at most `⌈(1 + ε)·n/parts⌉`
    /// vertices without gathering it: every vertex starts in the part of
    /// its id block ([`block_owner`]), then in each of up to `rounds` rounds
    /// every rank visits its vertices in id order and moves each to the part
    /// most of its neighbours are in, when that strictly gains and the
    /// part's share of the free room (split evenly between the ranks, so the
    /// bound holds whatever the others do) is not used up; the labels of
    /// moved boundary vertices then go to the ranks holding their ghosts.
    /// Collective; deterministic for a given number of ranks. Memory:
    /// O(owned + ghosts + parts) per rank.
    ///
    /// ```
    /// use parsim_comm::Comm;
    /// use parsim_graph::{Csr, DistGraph};
    /// // Two cliques of 4 joined by one edge, with their ids interleaved.
    /// let mut pairs = Vec::new();
    /// for a in 0..4u32 {
    ///     for b in a + 1..4 {
    ///         pairs.push((2 * a, 2 * b));
    ///         pairs.push((2 * a + 1, 2 * b + 1));
    ///     }
    /// }
    /// pairs.push((0, 1));
    /// let (g, _) = Csr::from_pairs(8, pairs, None);
    /// let owner: Vec<u32> = (0..8).map(|v| parsim_graph::block_owner(8, 2, v)).collect();
    /// let got = parsim_comm::launch(2, |comm| {
    ///     let d = DistGraph::build(comm.rank(), 2, &g, &owner)?;
    ///     let p = d.label_propagation(&comm, 2, 0.5, 10)?;
    ///     Ok::<_, parsim_graph::GraphError>((p.cut, p.imbalance, p.part))
    /// })?;
    /// let ((before, after), imbalance, _) = &got[0];
    /// assert!(after <= before && *imbalance <= 1.5);
    /// assert!(got.iter().all(|(_, _, part)| part.iter().all(|&x| x < 2)));
    /// # Ok::<(), parsim_graph::GraphError>(())
    /// ```
    pub fn label_propagation<C: Comm>(
        &self,
        comm: &C,
        parts: usize,
        imbalance: f64,
        rounds: usize,
    ) -> Result<Propagated> {
        if parts == 0 || parts > u32::MAX as usize || !(0.0..=1e6).contains(&imbalance) {
            return Err(GraphError::BadArgument(format!(
                "label propagation: {parts} parts, imbalance {imbalance} (expected parts ≥ 1, ε ≥ 0)"
            )));
        }
        let (n, n_own, p) = (self.n_global, self.owned(), comm.size());
        let start = |v: u32| block_owner(n, parts, v);
        let mut label: Vec<u32> = (0..n_own).map(|i| start(self.global(i))).collect();
        let mut ghost: Vec<u32> = self.ghost_ids.iter().map(|&v| start(v)).collect();
        let cap = ((1.0 + imbalance) * n as f64 / parts as f64).ceil().max(1.0) as u64;
        let mut size = vec![0u64; parts];
        for &l in &label {
            size[l as usize] += 1;
        }
        let mut size = comm.all_reduce(&size, ReduceOp::Sum)?;
        let cut0 = self.label_cut(comm, &label, &ghost)?;
        // Per-vertex scratch: connection to each part (sparse, reset after use).
        let mut conn = vec![0u64; parts];
        let mut touched: Vec<u32> = Vec::new();
        let (mut moved_all, mut done) = (0u64, 0usize);
        for _ in 0..rounds {
            done += 1;
            // This rank's share of each part's free room this round.
            let mut room: Vec<u64> = size.iter().map(|&s| cap.saturating_sub(s) / p as u64).collect();
            let mut changed: Vec<(u32, u32)> = Vec::new();
            let mut delta = vec![0i64; parts];
            for i in 0..n_own {
                let own = label[i];
                for &l in self.neighbours(i) {
                    let x = if (l as usize) < n_own { label[l as usize] } else { ghost[l as usize - n_own] };
                    if conn[x as usize] == 0 {
                        touched.push(x);
                    }
                    conn[x as usize] += 1;
                }
                // The best part: most connections, then the lowest id; only a strict gain moves.
                let mut best = own;
                for &x in &touched {
                    let (cx, cb) = (conn[x as usize], conn[best as usize]);
                    if x != own && room[x as usize] > 0 && (cx > cb || (cx == cb && best != own && x < best)) {
                        best = x;
                    }
                }
                if best != own && conn[best as usize] > conn[own as usize] {
                    room[best as usize] -= 1;
                    delta[best as usize] += 1;
                    delta[own as usize] -= 1;
                    label[i] = best;
                    if self.bnd.binary_search(&(i as u32)).is_ok() {
                        changed.push((i as u32, best));
                    }
                }
                for &x in &touched {
                    conn[x as usize] = 0;
                }
                touched.clear();
            }
            for (l, v) in self.exchange_changes(comm, TAG_LABELS, &changed)? {
                ghost[l as usize - n_own] = v;
            }
            let moves = delta.iter().filter(|&&d| d > 0).map(|&d| d as u64).sum::<u64>();
            let delta = comm.all_reduce(&delta, ReduceOp::Sum)?;
            for (s, d) in size.iter_mut().zip(&delta) {
                *s = (*s as i64 + d) as u64;
            }
            let moves = comm.all_reduce(&[moves], ReduceOp::Sum)?[0];
            moved_all += moves;
            if moves == 0 {
                break;
            }
        }
        let cut1 = self.label_cut(comm, &label, &ghost)?;
        let largest = size.iter().copied().max().unwrap_or(0) as f64;
        Ok(Propagated {
            part: label,
            rounds: done,
            moved: moved_all,
            cut: (cut0, cut1),
            imbalance: largest / (n as f64 / parts as f64).max(1e-300),
        })
    }

    /// Edges whose ends have different labels (each once), all ranks.
    fn label_cut<C: Comm>(&self, comm: &C, label: &[u32], ghost: &[u32]) -> Result<u64> {
        let n_own = self.owned();
        let mut twice = 0u64;
        for i in 0..n_own {
            for &l in self.neighbours(i) {
                let x = if (l as usize) < n_own { label[l as usize] } else { ghost[l as usize - n_own] };
                twice += u64::from(x != label[i]);
            }
        }
        Ok(comm.all_reduce(&[twice], ReduceOp::Sum)?[0] / 2)
    }
}
