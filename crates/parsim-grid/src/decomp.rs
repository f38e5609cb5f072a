//! Cutting a global 1-, 2- or 3-D grid into blocks, one per rank.
//!
//! Axes are numbered slowest to fastest: a 2-D `size = [ny, nx]` has rows of
//! `nx` contiguous cells. Internally every grid has three axes, the missing
//! leading ones of extent 1 and never cut.

use std::fmt;

use crate::GridError;

/// How to choose the process grid.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum DecompKind {
    /// The process grid with the least total cut surface for this shape.
    Auto,
    /// Cut along the slowest axis only (contiguous slabs).
    Slabs,
    /// Cut along the two slowest axes (in 2-D the same as blocks).
    Pencils,
    /// Factors as equal as possible on every axis (like `MPI_Dims_create`).
    Blocks,
    /// This process grid (one factor per axis, product = ranks).
    Grid(Vec<usize>),
}

impl DecompKind {
    /// Parses `auto`, `slabs`, `pencils`, `blocks`.
    pub fn parse(s: &str) -> Option<Self> {
        Some(match s {
            "auto" => DecompKind::Auto,
            "slabs" => DecompKind::Slabs,
            "pencils" => DecompKind::Pencils,
            "blocks" => DecompKind::Blocks,
            _ => return None,
        })
    }
}

/// A decomposition of a global grid over ranks.
///
/// ```
/// use parsim_grid::{DecompKind, Decomposition};
///
/// // A wide grid on 4 ranks: cutting across the long axis only is cheapest.
/// let d = Decomposition::new(&[512, 8192], 4, &DecompKind::Auto, 1, [false; 3])?;
/// assert_eq!(d.process_grid(), vec![1, 4]);
/// let b = d.block(3);
/// assert_eq!((b.start, b.len), ([0, 0, 6144], [1, 512, 2048]));
/// # Ok::<(), parsim_grid::GridError>(())
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Decomposition {
    ndim: usize,
    shape: [usize; 3],
    procs: [usize; 3],
    periodic: [bool; 3],
}

/// The cells one rank owns.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Block {
    /// Global index of the first owned cell on each axis.
    pub start: [usize; 3],
    /// Owned cells on each axis.
    pub len: [usize; 3],
    /// The rank's coordinates in the process grid.
    pub coords: [usize; 3],
}

fn split(n: usize, p: usize, c: usize) -> (usize, usize) {
    let (base, extra) = (n / p, n % p);
    (c * base + c.min(extra), base + usize::from(c < extra))
}

/// Every way to write `p` as an ordered product of factors over `axes`.
fn factorisations(p: usize, axes: &[usize]) -> Vec<[usize; 3]> {
    let mut out = Vec::new();
    fn rec(p: usize, axes: &[usize], cur: [usize; 3], out: &mut Vec<[usize; 3]>) {
        match axes {
            [] => {
                if p == 1 {
                    out.push(cur);
                }
            }
            [a, rest @ ..] => {
                for f in (1..=p).filter(|f| p % f == 0) {
                    let mut c = cur;
                    c[*a] = f;
                    rec(p / f, rest, c, out);
                }
            }
        }
    }
    rec(p, axes, [1; 3], &mut out);
    out
}

impl Decomposition {
    /// Decomposes a grid of `size` (1 to 3 axes, slowest first) over `ranks`,
    /// for a halo of `halo` cells (every block must be at least `2 * halo`
    /// cells, and at least 1, along every cut axis). `periodic` is per
    /// internal axis (index 2 is the fastest).
    pub fn new(
        size: &[usize],
        ranks: usize,
        kind: &DecompKind,
        halo: usize,
        periodic: [bool; 3],
    ) -> Result<Self, GridError> {
        if size.is_empty() || size.len() > 3 {
            return Err(GridError::Config(format!("size has {} axes; 1, 2 or 3 are supported", size.len())));
        }
        if let Some(a) = size.iter().position(|&n| n == 0) {
            return Err(GridError::Config(format!("axis {a} of size {size:?} has no cells")));
        }
        if ranks == 0 {
            return Err(GridError::Config("ranks must be at least 1".into()));
        }
        let ndim = size.len();
        let mut shape = [1; 3];
        shape[3 - ndim..].copy_from_slice(size);
        let active: Vec<usize> = (3 - ndim..3).collect();
        let min_block = (2 * halo).max(1);
        let fits = |p: &[usize; 3]| (0..3).all(|a| p[a] == 1 || shape[a] / p[a] >= min_block);
        let cost = |p: &[usize; 3]| -> usize {
            (0..3)
                .filter(|&a| p[a] > 1)
                .map(|a| {
                    let cuts = p[a] - 1 + usize::from(periodic[a]);
                    cuts * (0..3).filter(|&b| b != a).map(|b| shape[b]).product::<usize>()
                })
                .sum()
        };
        let spread = |p: &[usize; 3]| {
            let f: Vec<usize> = active.iter().map(|&a| p[a]).collect();
            f.iter().max().copied().unwrap_or(1) - f.iter().min().copied().unwrap_or(1)
        };
        let candidates = |axes: &[usize]| -> Vec<[usize; 3]> {
            factorisations(ranks, axes).into_iter().filter(|p| fits(p)).collect()
        };
        let too_small = |what: &str| {
            GridError::Config(format!(
                "cannot cut a {size:?} grid into {ranks} {what} blocks of at least {min_block} cells per cut axis (2 × halo width {halo}); use fewer ranks or a larger grid"
            ))
        };
        let procs = match kind {
            // Ties go to cutting slower axes: their faces are contiguous
            // planes, and the cells next to them are whole rows.
            DecompKind::Auto => candidates(&active)
                .into_iter()
                .min_by_key(|p| (cost(p), spread(p), std::cmp::Reverse(*p)))
                .ok_or_else(|| too_small("auto"))?,
            DecompKind::Slabs => *candidates(&active[..1]).first().ok_or_else(|| too_small("slab"))?,
            DecompKind::Pencils => {
                let axes = &active[..active.len().min(2)];
                candidates(axes)
                    .into_iter()
                    .min_by_key(|p| (spread_on(p, axes), cost(p), *p))
                    .ok_or_else(|| too_small("pencil"))?
            }
            DecompKind::Blocks => candidates(&active)
                .into_iter()
                .min_by_key(|p| (spread(p), cost(p), std::cmp::Reverse(*p)))
                .ok_or_else(|| too_small("balanced"))?,
            DecompKind::Grid(g) => {
                if g.len() != ndim {
                    return Err(GridError::Config(format!(
                        "process grid {g:?} has {} factors for a {ndim}-D grid",
                        g.len()
                    )));
                }
                if g.iter().product::<usize>() != ranks {
                    return Err(GridError::Config(format!(
                        "process grid {g:?} has {} ranks, not {ranks}",
                        g.iter().product::<usize>()
                    )));
                }
                let mut p = [1; 3];
                p[3 - ndim..].copy_from_slice(g);
                if !fits(&p) {
                    return Err(too_small("given"));
                }
                p
            }
        };
        Ok(Decomposition { ndim, shape, procs, periodic })
    }

    /// Number of axes the user gave.
    pub fn ndim(&self) -> usize {
        self.ndim
    }

    /// The global shape on the three internal axes.
    pub fn shape(&self) -> [usize; 3] {
        self.shape
    }

    /// Periodicity per internal axis.
    pub fn periodic(&self) -> [bool; 3] {
        self.periodic
    }

    /// Whether internal axis `a` is one of the user's axes.
    pub fn active(&self, a: usize) -> bool {
        a >= 3 - self.ndim
    }

    /// The process grid on the user's axes.
    pub fn process_grid(&self) -> Vec<usize> {
        self.procs[3 - self.ndim..].to_vec()
    }

    /// Processes per internal axis.
    pub fn procs(&self) -> [usize; 3] {
        self.procs
    }

    /// Number of ranks.
    pub fn ranks(&self) -> usize {
        self.procs.iter().product()
    }

    /// Process-grid coordinates of `rank`.
    pub fn coords(&self, rank: usize) -> [usize; 3] {
        let p = self.procs;
        [rank / (p[1] * p[2]), (rank / p[2]) % p[1], rank % p[2]]
    }

    /// The rank at process-grid coordinates `c`.
    pub fn rank_at(&self, c: [usize; 3]) -> usize {
        (c[0] * self.procs[1] + c[1]) * self.procs[2] + c[2]
    }

    /// The block `rank` owns.
    pub fn block(&self, rank: usize) -> Block {
        let coords = self.coords(rank);
        let mut start = [0; 3];
        let mut len = [0; 3];
        for a in 0..3 {
            (start[a], len[a]) = split(self.shape[a], self.procs[a], coords[a]);
        }
        Block { start, len, coords }
    }

    /// The rank next to `rank` in direction `d` (each component -1, 0 or 1),
    /// or `None` across a non-periodic edge.
    pub fn neighbour(&self, rank: usize, d: [i64; 3]) -> Option<usize> {
        let c = self.coords(rank);
        let mut n = [0; 3];
        for a in 0..3 {
            let p = self.procs[a] as i64;
            let x = c[a] as i64 + d[a];
            n[a] = if (0..p).contains(&x) {
                x as usize
            } else if self.periodic[a] && d[a] != 0 {
                x.rem_euclid(p) as usize
            } else {
                return None;
            };
        }
        Some(self.rank_at(n))
    }
}

fn spread_on(p: &[usize; 3], axes: &[usize]) -> usize {
    let f: Vec<usize> = axes.iter().map(|&a| p[a]).collect();
    f.iter().max().copied().unwrap_or(1) - f.iter().min().copied().unwrap_or(1)
}

/// What one rank holds and exchanges, as `parsim run --dry-run` prints it.
#[derive(Clone, Debug, PartialEq)]
pub struct RankLoad {
    /// The rank.
    pub rank: usize,
    /// The block.
    pub block: Block,
    /// Owned cells.
    pub owned: usize,
    /// Halo cells refreshed per exchange.
    pub halo: usize,
    /// Distinct neighbour ranks (not counting itself).
    pub neighbours: usize,
    /// Bytes received per exchange.
    pub bytes: usize,
}

impl RankLoad {
    /// Halo cells per owned cell.
    pub fn surface_to_volume(&self) -> f64 {
        self.halo as f64 / self.owned.max(1) as f64
    }
}

impl fmt::Display for Decomposition {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let size: Vec<usize> = self.shape[3 - self.ndim..].to_vec();
        write!(f, "{size:?} grid on {} ranks, process grid {:?}", self.ranks(), self.process_grid())
    }
}
