//! The box, its chunks and its cells.

use crate::{AbmError, Result};

/// A 2-D or 3-D box cut into chunks (the unit of ownership and balancing),
/// each chunk into cells of side ≥ the perception radius.
///
/// ```
/// use parsim_abm::space::Domain;
/// let d = Domain::new(2, [100.0, 50.0, 1.0], false, 2.0, [10, 5, 1]).unwrap();
/// assert_eq!(d.cells(), [50, 25, 1]);
/// assert_eq!(d.chunk_of(&[15.0, 12.0, 0.0]), 1 + 10 * 1);
/// assert!(Domain::new(2, [100.0, 50.0, 1.0], false, 12.0, [10, 5, 1]).is_err());
/// ```
#[derive(Clone, Debug, PartialEq)]
pub struct Domain {
    /// 2 or 3.
    pub dim: usize,
    /// The box's extent per axis (z ignored in 2-D).
    pub size: [f64; 3],
    /// Periodic on every axis, or walled.
    pub periodic: bool,
    /// The perception radius r.
    pub radius: f64,
    chunks: [u32; 3],
    per_chunk: [u32; 3],
    cells: [u32; 3],
    cell: [f64; 3],
}

impl Domain {
    /// A box of `size` with `chunks` chunks per axis and perception radius
    /// `radius`. Errors name the key (`space.radius`, …).
    pub fn new(dim: usize, size: [f64; 3], periodic: bool, radius: f64, chunks: [u32; 3]) -> Result<Domain> {
        if dim != 2 && dim != 3 {
            return Err(AbmError::config("space.dim", format!("expected 2 or 3, found {dim}")));
        }
        let mut size = size;
        let mut chunks = chunks;
        if dim == 2 {
            size[2] = 1.0;
            chunks[2] = 1;
        }
        for a in 0..dim {
            if !(size[a] > 0.0 && size[a].is_finite() && size[a] <= 1e12) {
                return Err(AbmError::config(
                    "space.size",
                    format!("every extent must be in (0, 1e12], found {}", size[a]),
                ));
            }
            if chunks[a] == 0 || chunks[a] > 1 << 16 {
                return Err(AbmError::config(
                    "space.chunks",
                    format!("expected 1..=65536 chunks per axis, found {}", chunks[a]),
                ));
            }
        }
        if !(radius > 0.0 && radius.is_finite()) {
            return Err(AbmError::config("space.radius", format!("expected a positive radius, found {radius}")));
        }
        let mut per_chunk = [1u32; 3];
        let mut cells = [1u32; 3];
        let mut cell = [size[2]; 3];
        for a in 0..dim {
            let side = size[a] / f64::from(chunks[a]);
            if side < radius {
                return Err(AbmError::config(
                    "space.radius",
                    format!(
                        "the perception radius {radius} is larger than a chunk ({side} along axis {a}): use fewer chunks or a smaller radius"
                    ),
                ));
            }
            if periodic && 2.0 * radius > size[a] {
                return Err(AbmError::config(
                    "space.radius",
                    format!("a periodic box needs r <= half its extent; r = {radius}, extent {}", size[a]),
                ));
            }
            per_chunk[a] = ((side / radius).floor() as u32).clamp(1, 1 << 10);
            let along = u64::from(chunks[a]) * u64::from(per_chunk[a]);
            if along > 1 << 28 {
                return Err(AbmError::config(
                    "space.chunks",
                    format!("{along} cells along axis {a}: use fewer chunks or a larger radius (at most 2^28 cells)"),
                ));
            }
            cells[a] = along as u32;
            cell[a] = size[a] / f64::from(cells[a]);
        }
        let total = cells.iter().map(|&c| u64::from(c)).fold(1u64, u64::saturating_mul);
        if total > 1 << 28 {
            return Err(AbmError::config(
                "space.radius",
                format!("{total} cells of side >= r would be needed; use a larger radius or a smaller box (at most 2^28 cells)"),
            ));
        }
        Ok(Domain { dim, size, periodic, radius, chunks, per_chunk, cells, cell })
    }

    /// Chunks per axis.
    pub fn chunks(&self) -> [u32; 3] {
        self.chunks
    }

    /// The number of chunks.
    pub fn n_chunks(&self) -> usize {
        self.chunks.iter().map(|&c| c as usize).product()
    }

    /// Cells per axis.
    pub fn cells(&self) -> [u32; 3] {
        self.cells
    }

    /// The number of cells.
    pub fn n_cells(&self) -> usize {
        self.cells.iter().map(|&c| c as usize).product()
    }

    /// The cell side per axis (≥ r).
    pub fn cell_side(&self) -> [f64; 3] {
        self.cell
    }

    /// The cell coordinates of a position in the box.
    #[inline]
    pub fn cell_of(&self, pos: &[f64; 3]) -> [u32; 3] {
        let mut c = [0u32; 3];
        for a in 0..self.dim {
            c[a] = ((pos[a] / self.cell[a]) as i64).clamp(0, i64::from(self.cells[a]) - 1) as u32;
        }
        c
    }

    /// The index of a cell (x fastest).
    #[inline]
    pub fn cell_index(&self, c: [u32; 3]) -> usize {
        c[0] as usize + self.cells[0] as usize * (c[1] as usize + self.cells[1] as usize * c[2] as usize)
    }

    /// The chunk holding a cell.
    #[inline]
    pub fn chunk_of_cell(&self, c: [u32; 3]) -> usize {
        let k = [c[0] / self.per_chunk[0], c[1] / self.per_chunk[1], c[2] / self.per_chunk[2]];
        k[0] as usize + self.chunks[0] as usize * (k[1] as usize + self.chunks[1] as usize * k[2] as usize)
    }

    /// The chunk holding a position.
    #[inline]
    pub fn chunk_of(&self, pos: &[f64; 3]) -> usize {
        self.chunk_of_cell(self.cell_of(pos))
    }

    /// The cells of chunk `k`, expanded by `halo` cells on every side
    /// (wrapped when periodic, clipped at walls), each once.
    pub fn chunk_cells(&self, k: usize, halo: u32) -> Vec<usize> {
        let kc = [
            (k % self.chunks[0] as usize) as i64,
            (k / self.chunks[0] as usize % self.chunks[1] as usize) as i64,
            (k / (self.chunks[0] as usize * self.chunks[1] as usize)) as i64,
        ];
        let mut range = [(0i64, 0i64); 3];
        for a in 0..3 {
            let lo = kc[a] * i64::from(self.per_chunk[a]);
            let hi = lo + i64::from(self.per_chunk[a]) - 1;
            range[a] = if a < self.dim { (lo - i64::from(halo), hi + i64::from(halo)) } else { (0, 0) };
        }
        let mut out = Vec::new();
        for z in range[2].0..=range[2].1 {
            for y in range[1].0..=range[1].1 {
                for x in range[0].0..=range[0].1 {
                    if let Some(c) = self.fold([x, y, z]) {
                        out.push(self.cell_index(c));
                    }
                }
            }
        }
        out.sort_unstable();
        out.dedup();
        out
    }

    /// The cells within one cell of `c` (itself included), each once,
    /// ascending: what a neighbour search within r visits.
    #[inline]
    pub fn neighbour_cells(&self, c: [u32; 3], out: &mut Vec<usize>) {
        out.clear();
        let n = self.cells;
        let interior = (0..self.dim).all(|a| c[a] >= 1 && c[a] + 1 < n[a]);
        let zs: &[i64] = if self.dim == 3 { &[-1, 0, 1] } else { &[0] };
        if interior {
            let (sy, sz) = (n[0] as i64, n[0] as i64 * n[1] as i64);
            let base = self.cell_index(c) as i64;
            for &dz in zs {
                for dy in -1..=1i64 {
                    for dx in -1..=1i64 {
                        out.push((base + dx + dy * sy + dz * sz) as usize);
                    }
                }
            }
            return;
        }
        for &dz in zs {
            for dy in -1..=1i64 {
                for dx in -1..=1i64 {
                    let o = [i64::from(c[0]) + dx, i64::from(c[1]) + dy, i64::from(c[2]) + dz];
                    if let Some(x) = self.fold(o) {
                        out.push(self.cell_index(x));
                    }
                }
            }
        }
        out.sort_unstable();
        out.dedup();
    }

    /// A cell coordinate that may lie outside the grid, wrapped (periodic)
    /// or dropped (walls).
    #[inline]
    pub fn fold(&self, c: [i64; 3]) -> Option<[u32; 3]> {
        let mut o = [0u32; 3];
        for a in 0..3 {
            let n = i64::from(self.cells[a]);
            o[a] = if self.periodic {
                c[a].rem_euclid(n) as u32
            } else if (0..n).contains(&c[a]) {
                c[a] as u32
            } else {
                return None;
            };
        }
        Some(o)
    }

    /// The displacement from `a` to `b` (the nearest image when periodic).
    #[inline]
    pub fn displacement(&self, a: &[f64; 3], b: &[f64; 3]) -> [f64; 3] {
        let mut d = [0.0; 3];
        for i in 0..self.dim {
            let mut x = b[i] - a[i];
            if self.periodic {
                let s = self.size[i];
                if x > 0.5 * s {
                    x -= s;
                } else if x < -0.5 * s {
                    x += s;
                }
            }
            d[i] = x;
        }
        d
    }

    /// Brings a position back into the box: wrapped when periodic, reflected
    /// off the walls (the velocity's component reversed) otherwise.
    pub fn contain(&self, pos: &mut [f64; 3], vel: &mut [f64; 3]) {
        for a in 0..3 {
            let s = self.size[a];
            if a >= self.dim {
                pos[a] = 0.0;
                vel[a] = 0.0;
                continue;
            }
            if self.periodic {
                let mut x = pos[a].rem_euclid(s);
                if x >= s {
                    x = 0.0;
                }
                pos[a] = x;
            } else {
                if pos[a] < 0.0 {
                    pos[a] = -pos[a];
                    vel[a] = -vel[a];
                }
                if pos[a] > s {
                    pos[a] = 2.0 * s - pos[a];
                    vel[a] = -vel[a];
                }
                pos[a] = pos[a].clamp(0.0, s);
            }
        }
    }

    /// Whether a position lies in the box.
    pub fn inside(&self, pos: &[f64; 3]) -> bool {
        (0..self.dim).all(|a| pos[a].is_finite() && pos[a] >= 0.0 && pos[a] <= self.size[a])
    }

    /// The chunk layout the balancer decides over.
    pub fn lb_chunks(&self) -> parsim_lb::Chunks {
        parsim_lb::Chunks::grid(self.chunks, self.periodic)
    }
}
