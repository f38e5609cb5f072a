//! Interest management, as HLA's Data Distribution Management does it: a
//! uniform grid of routing cells over the space (the neighbour-search
//! cells); an agent *publishes* to the cell it occupies; a rank
//! *subscribes* to the cells of its chunks plus one cell around them (a
//! cell is at least r wide, so that covers everything within r). An
//! agent's update goes only to the ranks whose subscription holds its
//! cell — a localised multicast instead of a broadcast.
//!
//! Matching is grid-based: each subscription is enumerated once into the
//! cells it covers (cost: the subscribed area, not ranks × agents), and a
//! publication looks its cell up.

use super::Domain;

/// Who subscribes to each routing cell.
///
/// ```
/// use parsim_abm::space::{ddm::Routing, Domain};
/// let d = Domain::new(2, [40.0, 10.0, 1.0], false, 2.0, [4, 1, 1]).unwrap();
/// // Chunks 0, 1 on rank 0 and 2, 3 on rank 1.
/// let r = Routing::new(&d, &[0, 0, 1, 1], 2);
/// // A cell deep inside rank 0's chunks reaches rank 0 only; the cells on
/// // either side of the boundary at x = 20 reach both.
/// assert_eq!(r.subscribers(d.cell_index(d.cell_of(&[5.0, 5.0, 0.0]))), &[0]);
/// assert_eq!(r.subscribers(d.cell_index(d.cell_of(&[19.0, 5.0, 0.0]))), &[0, 1]);
/// assert_eq!(r.subscribers(d.cell_index(d.cell_of(&[21.0, 5.0, 0.0]))), &[0, 1]);
/// ```
#[derive(Clone, Debug)]
pub struct Routing {
    start: Vec<u32>,
    ranks: Vec<u32>,
    /// Seconds the matching took.
    pub match_s: f64,
}

impl Routing {
    /// The subscriptions of the map `owner` (chunk → rank).
    pub fn new(d: &Domain, owner: &[u32], ranks: usize) -> Routing {
        let t = std::time::Instant::now();
        let n = d.n_cells();
        // Each rank's subscription region, enumerated into its cells.
        let mut pairs: Vec<(u32, u32)> = Vec::new();
        let mut mine: Vec<Vec<usize>> = vec![Vec::new(); ranks];
        for (k, &r) in owner.iter().enumerate() {
            mine[r as usize].push(k);
        }
        let mut seen = vec![u32::MAX; n];
        for (r, chunks) in mine.iter().enumerate() {
            for &k in chunks {
                for c in d.chunk_cells(k, 1) {
                    if seen[c] != r as u32 {
                        seen[c] = r as u32;
                        pairs.push((c as u32, r as u32));
                    }
                }
            }
        }
        // A counting sort by cell; pairs come in rank order, so each
        // cell's ranks come out ascending.
        let mut start = vec![0u32; n + 1];
        for &(c, _) in &pairs {
            start[c as usize + 1] += 1;
        }
        for i in 0..n {
            start[i + 1] += start[i];
        }
        let mut fill = start.clone();
        let mut ranks_of = vec![0u32; pairs.len()];
        for &(c, r) in &pairs {
            ranks_of[fill[c as usize] as usize] = r;
            fill[c as usize] += 1;
        }
        Routing { start, ranks: ranks_of, match_s: t.elapsed().as_secs_f64() }
    }

    /// The ranks subscribed to cell `c`, ascending.
    #[inline]
    pub fn subscribers(&self, c: usize) -> &[u32] {
        &self.ranks[self.start[c] as usize..self.start[c + 1] as usize]
    }
}
