//! The chunks a balancer moves between ranks: their neighbours (who
//! exchanges ghosts with whom) and their position on a grid of chunks (for
//! the Hilbert curve).

use serde::{Deserialize, Serialize};

/// A set of chunks with their adjacency, in compressed rows, and their
/// coordinates on a chunk grid.
///
/// ```
/// use parsim_lb::Chunks;
/// let c = Chunks::grid([4, 3, 1], false);
/// assert_eq!(c.len(), 12);
/// assert_eq!(c.neighbours(0), &[1, 4]);
/// let t = Chunks::grid([4, 3, 1], true);
/// assert_eq!(t.neighbours(0), &[1, 3, 4, 8]);
/// ```
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Chunks {
    xadj: Vec<usize>,
    adj: Vec<u32>,
    coords: Vec<[u32; 3]>,
    dims: [u32; 3],
}

impl Chunks {
    /// The chunks of a `dims[0] × dims[1] × dims[2]` grid (x fastest), each
    /// adjacent to its face neighbours; `periodic` wraps every axis longer
    /// than 2.
    pub fn grid(dims: [u32; 3], periodic: bool) -> Chunks {
        let dims = dims.map(|d| d.max(1));
        let n = dims.iter().map(|&d| d as usize).product::<usize>();
        let (mut xadj, mut adj, mut coords) = (vec![0], Vec::new(), Vec::with_capacity(n));
        let id = |c: [u32; 3]| c[0] + dims[0] * (c[1] + dims[1] * c[2]);
        for i in 0..n {
            let c = [
                (i % dims[0] as usize) as u32,
                (i / dims[0] as usize % dims[1] as usize) as u32,
                (i / (dims[0] * dims[1]) as usize) as u32,
            ];
            coords.push(c);
            let mut nb = Vec::new();
            for a in 0..3 {
                let d = dims[a];
                if d == 1 {
                    continue;
                }
                for up in [false, true] {
                    let x = match (up, c[a]) {
                        (false, 0) if periodic && d > 2 => Some(d - 1),
                        (false, 0) => None,
                        (false, x) => Some(x - 1),
                        (true, x) if x + 1 == d => (periodic && d > 2).then_some(0),
                        (true, x) => Some(x + 1),
                    };
                    if let Some(x) = x {
                        let mut o = c;
                        o[a] = x;
                        nb.push(id(o));
                    }
                }
            }
            nb.sort_unstable();
            nb.dedup();
            adj.extend(nb);
            xadj.push(adj.len());
        }
        Chunks { xadj, adj, coords, dims }
    }

    /// Chunks given by their neighbour lists (made symmetric) and optional
    /// grid coordinates (the Hilbert curve needs them; without them the
    /// chunks are laid out on a line in id order).
    pub fn from_neighbours(neighbours: &[Vec<u32>], coords: Option<Vec<[u32; 3]>>) -> Chunks {
        let n = neighbours.len();
        let mut sym: Vec<Vec<u32>> = neighbours.to_vec();
        for (v, nb) in neighbours.iter().enumerate() {
            for &u in nb {
                if (u as usize) < n && u as usize != v {
                    sym[u as usize].push(v as u32);
                }
            }
        }
        let (mut xadj, mut adj) = (vec![0], Vec::new());
        for (v, nb) in sym.iter_mut().enumerate() {
            nb.retain(|&u| (u as usize) < n && u as usize != v);
            nb.sort_unstable();
            nb.dedup();
            adj.extend_from_slice(nb);
            xadj.push(adj.len());
        }
        let coords = coords.unwrap_or_else(|| (0..n as u32).map(|i| [i, 0, 0]).collect());
        let mut dims = [1u32; 3];
        for c in &coords {
            for a in 0..3 {
                dims[a] = dims[a].max(c[a] + 1);
            }
        }
        Chunks { xadj, adj, coords, dims }
    }

    /// The number of chunks.
    pub fn len(&self) -> usize {
        self.coords.len()
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.coords.is_empty()
    }

    /// The chunks adjacent to `c`, ascending.
    pub fn neighbours(&self, c: usize) -> &[u32] {
        &self.adj[self.xadj[c]..self.xadj[c + 1]]
    }

    /// The grid coordinates of `c`.
    pub fn coords(&self, c: usize) -> [u32; 3] {
        self.coords[c]
    }

    /// The extent of the chunk grid.
    pub fn dims(&self) -> [u32; 3] {
        self.dims
    }

    /// The chunks in Hilbert-curve order (2-D or 3-D by the grid's extent).
    pub fn hilbert_order(&self) -> Vec<u32> {
        let side = *self.dims.iter().max().unwrap_or(&1);
        let bits = (32 - (side.max(2) - 1).leading_zeros()).max(1);
        let three = self.dims[2] > 1;
        let mut keys: Vec<(u64, u32)> = (0..self.len())
            .map(|i| {
                let c = self.coords[i];
                let h = if three {
                    parsim_partition::geometric::hilbert3(c, bits)
                } else {
                    parsim_partition::geometric::hilbert2(u64::from(c[0]), u64::from(c[1]), bits)
                };
                (h, i as u32)
            })
            .collect();
        keys.sort_unstable();
        keys.into_iter().map(|(_, i)| i).collect()
    }
}
