//! What the epidemic derives once from a rank's part of the contact
//! network: the boundary, the ghost neighbours' global ids beside each row,
//! and the prefetches of the day loop's scattered reads.

use parsim_graph::DistGraph;
use rayon::prelude::*;

/// What the epidemic derives once from a rank's part of the graph (reusable
/// across runs, like the graph itself). When a third of the agents or more
/// are on the boundary (a random graph): which neighbouring ranks hold a
/// ghost of each owned agent (one byte per agent, 2 to 8 neighbouring
/// ranks) and the global ids of each agent's ghost neighbours beside each
/// other in row order (read with the row instead of one lookup per ghost).
/// Otherwise (a population with locality), and with one neighbouring rank:
/// one bit per agent saying whether it is on the boundary, the graph's own
/// lists for the rest.
pub struct Layout<'a> {
    pub(super) g: &'a DistGraph,
    pub(super) peer_mask: Vec<u8>,
    /// Dense: per owned agent, where its ghosts' ids start in `gids`.
    gstart: Vec<u32>,
    gids: Vec<u32>,
    /// Sparse: a bitset over owned agents, set on the boundary.
    bbits: Vec<u64>,
}

impl<'a> Layout<'a> {
    /// Derives the layout of `g`.
    pub fn new(g: &'a DistGraph) -> Layout<'a> {
        let dense = g.ghosts() > 0 && 3 * g.boundary_ids().len() >= g.owned();
        let (mut peer_mask, mut gstart, mut gids, mut bbits) = (Vec::new(), Vec::new(), Vec::new(), Vec::new());
        if dense {
            // With 2 to 8 neighbouring ranks, one byte per agent (0: not on
            // the boundary); with one, the bitset below says it 8× smaller.
            if (2..=8).contains(&g.peers().len()) {
                peer_mask = vec![0u8; g.owned()];
                for (i, at) in g.boundary() {
                    peer_mask[i as usize] = at.fold(0u8, |m, (q, _)| m | 1 << q);
                }
            }
            gstart.reserve(g.owned() + 1);
            gstart.push(0u32);
            for i in 0..g.owned() {
                gids.extend_from_slice(&g.neighbours(i)[g.owned_neighbours(i).len()..]);
                gstart.push(gids.len() as u32);
            }
            // Ghost numbers to global ids: scattered reads of the ghosts'
            // ids, each prefetched 32 entries ahead, in parallel.
            let (n_own, ids) = (g.owned() as u32, g.ghost_ids());
            gids.par_chunks_mut(1 << 16).for_each(|part| {
                for k in 0..part.len() {
                    if let Some(&ahead) = part.get(k + 32) {
                        parsim_core::mem::prefetch(ids, (ahead - n_own) as usize);
                    }
                    part[k] = ids[(part[k] - n_own) as usize];
                }
            });
        }
        if peer_mask.is_empty() && g.ghosts() > 0 {
            bbits = vec![0u64; g.owned().div_ceil(64)];
            for &i in g.boundary_ids() {
                bbits[i as usize >> 6] |= 1 << (i & 63);
            }
        }
        Layout { g, peer_mask, gstart, gids, bbits }
    }

    /// A hint that [`is_boundary`](Self::is_boundary) of `i` comes soon.
    #[inline]
    pub(super) fn prefetch_boundary(&self, i: usize) {
        if !self.peer_mask.is_empty() {
            parsim_core::mem::prefetch(&self.peer_mask, i);
        } else if !self.bbits.is_empty() {
            parsim_core::mem::prefetch(&self.bbits, i >> 6);
        }
    }

    /// Whether owned agent `i` has a ghost on another rank.
    #[inline]
    pub(super) fn is_boundary(&self, i: usize) -> bool {
        if !self.peer_mask.is_empty() {
            self.peer_mask[i] != 0
        } else if !self.bbits.is_empty() {
            self.bbits[i >> 6] >> (i & 63) & 1 == 1
        } else {
            self.g.ghosts() > 0 && self.g.is_boundary(i)
        }
    }

    /// The global ids of owned agent `i`'s ghost neighbours, in row order.
    #[inline]
    pub(super) fn ghost_gids(&self, i: usize) -> &[u32] {
        match self.gstart.is_empty() {
            false => &self.gids[self.gstart[i] as usize..self.gstart[i + 1] as usize],
            true => &[],
        }
    }

    /// Prefetches for the transmissions of the sources in `list`, while
    /// working on its `k`-th: each source's row offsets (and where its ghost
    /// ids start) 16 sources ahead, then its row (and ghost ids) 8 ahead, so
    /// that the scattered loads of several rows are in flight at once.
    #[inline]
    pub(super) fn prefetch_ahead<T>(&self, list: &[(u32, T)], k: usize) {
        if let Some(&(far, _)) = list.get(k + 16) {
            self.g.prefetch_offsets(far as usize);
            parsim_core::mem::prefetch(&self.gstart, far as usize);
        }
        if let Some(&(near, _)) = list.get(k + 8) {
            let near = near as usize;
            self.g.prefetch_row(near);
            if near + 1 < self.gstart.len() {
                let (a, b) = (self.gstart[near] as usize, self.gstart[near + 1] as usize);
                if b > a {
                    parsim_core::mem::prefetch(&self.gids, a);
                    parsim_core::mem::prefetch(&self.gids, b - 1);
                }
            }
        }
    }

    /// Memory held, in bytes.
    pub fn bytes(&self) -> usize {
        self.peer_mask.len() + 4 * (self.gstart.len() + self.gids.len()) + 8 * self.bbits.len()
    }
}
