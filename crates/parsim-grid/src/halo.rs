//! Halo exchange and boundary conditions.
//!
//! A rank's halo is refreshed from its neighbours (faces only for star
//! stencils, faces, edges and corners for box stencils and deep halos).
//! Every region is packed into one contiguous buffer and moved as one
//! message, so there are no strided sends. Across a non-periodic edge there
//! is no neighbour: the boundary condition fills the halo instead, axis by
//! axis, over the full extent of the other axes (halos included), which gives
//! every rank count the same corner values as one rank.

use bytemuck::Pod;
use parsim_comm::{Comm, Request, Source, TagMatch};

use crate::decomp::{Decomposition, RankLoad};
use crate::field::{Cell, Field};
use crate::region::Region;
use crate::GridError;

/// What lies beyond an edge of the domain, per axis.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Boundary {
    /// The grid wraps around.
    Periodic,
    /// The halo holds a fixed value.
    Dirichlet(f64),
    /// Zero gradient: the halo mirrors the cells inside the edge.
    Neumann,
}

/// Which neighbours a stencil reads.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Reach {
    /// Only along the axes (5-point, 7-point): faces.
    Star,
    /// Diagonals too (9-point, 27-point, Game of Life): faces, edges, corners.
    Box,
}

/// First tag of halo messages (one tag per direction of travel).
const TAG_BASE: u32 = 1000;

fn direction_index(d: [i64; 3]) -> u32 {
    ((d[0] + 1) * 9 + (d[1] + 1) * 3 + (d[2] + 1)) as u32
}

/// The messages one rank sends and receives to refresh a halo of width `w`.
#[derive(Clone, Debug)]
pub struct HaloPlan {
    /// (destination, tag, region to pack), to other ranks.
    sends: Vec<(usize, u32, Region)>,
    /// (source, tag, region to fill), from other ranks.
    recvs: Vec<(usize, u32, Region)>,
    /// (owned region, halo region) pairs this rank is its own neighbour for
    /// (a periodic axis it does not share): copied locally, at once.
    local: Vec<(Region, Region)>,
    /// Per axis, whether the low / high face has a neighbour on another rank.
    remote_faces: [[bool; 2]; 3],
    /// (axis, high side?, condition) for the physical edges this rank is on.
    edges: Vec<(usize, bool, Boundary)>,
    /// The arrays already hold the Dirichlet values beyond physical edges.
    fixed_filled: bool,
}

/// An exchange in flight: see [`HaloPlan::start`].
pub struct Pending<C: Comm, T: Pod + Send> {
    recvs: Vec<(C::RecvRequest<T>, Region)>,
    sends: Vec<C::SendRequest>,
}

impl HaloPlan {
    /// The plan for `rank`'s `field` (whose halo must be at least `w` wide)
    /// under `boundary` (per internal axis).
    pub fn new<T: Cell>(
        d: &Decomposition,
        rank: usize,
        field: &Field<T>,
        w: usize,
        reach: Reach,
        boundary: [Boundary; 3],
    ) -> Result<Self, GridError> {
        let len = field.block.len;
        for a in (0..3).filter(|&a| d.active(a)) {
            if field.halo[a] < w {
                return Err(GridError::Config(format!(
                    "halo width {w} is wider than the field's halo {}",
                    field.halo[a]
                )));
            }
            if len[a] < w.max(field.halo[a]) {
                return Err(GridError::Config(format!(
                    "halo width {w} is larger than rank {rank}'s block ({} cells on axis {a}); use fewer ranks or a narrower halo",
                    len[a]
                )));
            }
        }
        let h = field.halo;
        let span = |a: usize, dir: i64, send: bool| -> (usize, usize) {
            let wa = if d.active(a) { w } else { 0 };
            match (dir, send) {
                (-1, true) => (h[a], h[a] + wa),
                (1, true) => (h[a] + len[a] - wa, h[a] + len[a]),
                (-1, false) => (h[a] - wa, h[a]),
                (1, false) => (h[a] + len[a], h[a] + len[a] + wa),
                _ => (h[a], h[a] + len[a]),
            }
        };
        let mut sends = Vec::new();
        let mut recvs = Vec::new();
        let mut remote_faces = [[false; 2]; 3];
        let range = |a: usize| if d.active(a) { -1..=1 } else { 0..=0 };
        for d0 in range(0) {
            for d1 in range(1) {
                for d2 in range(2) {
                    let dir = [d0, d1, d2];
                    let order = dir.iter().filter(|&&x| x != 0).count();
                    if order == 0 || (reach == Reach::Star && order > 1) {
                        continue;
                    }
                    let region = |send: bool| {
                        let mut r = Region::new([0; 3], [0; 3]);
                        for a in 0..3 {
                            (r.lo[a], r.hi[a]) = span(a, dir[a], send);
                        }
                        r
                    };
                    if let Some(n) = d.neighbour(rank, dir) {
                        sends.push((n, TAG_BASE + direction_index(dir), region(true)));
                        let back = [-dir[0], -dir[1], -dir[2]];
                        recvs.push((n, TAG_BASE + direction_index(back), region(false)));
                        if order == 1 && n != rank {
                            let a = dir.iter().position(|&x| x != 0).expect("a face direction");
                            remote_faces[a][usize::from(dir[a] > 0)] = true;
                        }
                    }
                }
            }
        }
        let shape = d.shape();
        let mut edges = Vec::new();
        for a in (0..3).filter(|&a| d.active(a)) {
            if boundary[a] == Boundary::Periodic {
                continue;
            }
            if field.block.start[a] == 0 {
                edges.push((a, false, boundary[a]));
            }
            if field.block.start[a] + len[a] == shape[a] {
                edges.push((a, true, boundary[a]));
            }
        }
        // Messages to oneself become local copies: the halo region that
        // receives tag t takes the owned region sent with tag t.
        let mut local = Vec::new();
        for &(_, tag, to) in recvs.iter().filter(|r| r.0 == rank) {
            let from = sends.iter().find(|s| s.0 == rank && s.1 == tag).expect("a self send for each self receive").2;
            local.push((from, to));
        }
        sends.retain(|s| s.0 != rank);
        recvs.retain(|r| r.0 != rank);
        Ok(HaloPlan { sends, recvs, local, remote_faces, edges, fixed_filled: false })
    }

    /// Whether the low (`high = false`) or high face of axis `a` has a
    /// neighbour on another rank. Interior cells need shrink away only from
    /// those faces before an overlapped exchange; every other halo cell is
    /// filled at once by [`start`](Self::start).
    pub fn remote_face(&self, a: usize, high: bool) -> bool {
        self.remote_faces[a][usize::from(high)]
    }

    /// Packs and sends every outgoing region and posts every receive; fills
    /// the halo parts that need no other rank (periodic self-neighbours,
    /// physical edges) at once, so that only cells next to remote faces wait.
    pub fn start<C: Comm, T: Cell>(&self, comm: &C, field: &mut Field<T>) -> Result<Pending<C, T>, GridError> {
        self.start_with(comm, field, None)
    }

    /// [`start`](Self::start), with the local copies (periodic
    /// self-neighbours) shared among the threads of `pool`.
    pub fn start_with<C: Comm, T: Cell>(
        &self,
        comm: &C,
        field: &mut Field<T>,
        pool: Option<&rayon::ThreadPool>,
    ) -> Result<Pending<C, T>, GridError> {
        for (from, to) in &self.local {
            field.copy_region_par(from, to, pool);
        }
        // Provisional: cells that also depend on halos still in flight are
        // filled again by the caller's `apply_boundary` after `finish`.
        self.apply_boundary(field);
        let mut recvs = Vec::with_capacity(self.recvs.len());
        for &(src, tag, r) in &self.recvs {
            recvs.push((comm.irecv::<T>(Source::Rank(src), TagMatch::Tag(tag))?, r));
        }
        let mut sends = Vec::with_capacity(self.sends.len());
        for &(dest, tag, r) in &self.sends {
            let mut buf = Vec::new();
            field.pack(&r, &mut buf);
            sends.push(comm.isend(dest, tag, buf)?);
        }
        Ok(Pending { recvs, sends })
    }

    /// Waits for every message of `pending` and unpacks it into the halo.
    pub fn finish<C: Comm, T: Cell>(&self, pending: Pending<C, T>, field: &mut Field<T>) -> Result<(), GridError> {
        for (req, r) in pending.recvs {
            let m = req.wait()?;
            if m.data.len() != r.cells() {
                return Err(GridError::Config(format!(
                    "halo message from rank {} has {} cells, expected {}",
                    m.source,
                    m.data.len(),
                    r.cells()
                )));
            }
            field.unpack(&r, &m.data);
        }
        for s in pending.sends {
            s.wait()?;
        }
        Ok(())
    }

    /// Exchange without overlap: start, then finish (apply the boundary after it).
    pub fn exchange<C: Comm, T: Cell>(&self, comm: &C, field: &mut Field<T>) -> Result<(), GridError> {
        self.exchange_with(comm, field, None)
    }

    /// [`exchange`](Self::exchange), with the local copies shared among the
    /// threads of `pool`.
    pub fn exchange_with<C: Comm, T: Cell>(
        &self,
        comm: &C,
        field: &mut Field<T>,
        pool: Option<&rayon::ThreadPool>,
    ) -> Result<(), GridError> {
        let p = self.start_with(comm, field, pool)?;
        self.finish(p, field)
    }

    /// Fills the halo beyond the physical (non-periodic) edges this rank is
    /// on (after [`fixed_edges_filled`](Self::fixed_edges_filled), only the
    /// mirrored, Neumann, ones).
    pub fn apply_boundary<T: Cell>(&self, field: &mut Field<T>) {
        for &(a, high, b) in &self.edges {
            if !(self.fixed_filled && matches!(b, Boundary::Dirichlet(_))) {
                fill_edge(field, a, high, b);
            }
        }
    }

    /// Declares that every array this plan is applied to from now on
    /// already holds the Dirichlet values in its ghost cells beyond the
    /// physical edges (filled once by [`apply_boundary`](Self::apply_boundary)),
    /// and that nothing else writes there: a stencil writes inside the
    /// domain and the exchange only fills faces shared with ranks. Then
    /// `apply_boundary` skips those constant cells — a strided pass over a
    /// whole face every step (6 % of a 96³ step under `perf`).
    pub fn fixed_edges_filled(&mut self) {
        self.fixed_filled = true;
    }

    /// The physical edges of this rank's block whose ghost layers mirror
    /// the cells inside (Neumann): (axis, high side?).
    pub fn mirrored_edges(&self) -> Vec<(usize, bool)> {
        self.edges.iter().filter(|e| matches!(e.2, Boundary::Neumann)).map(|&(a, high, _)| (a, high)).collect()
    }

    /// What this plan moves, for `parsim run --dry-run`.
    pub fn load<T: Cell>(&self, rank: usize, field: &Field<T>) -> RankLoad {
        let halo: usize = self.recvs.iter().map(|(_, _, r)| r.cells()).sum::<usize>()
            + self.local.iter().map(|(_, r)| r.cells()).sum::<usize>();
        let mut nbrs: Vec<usize> = self.recvs.iter().map(|&(s, _, _)| s).filter(|&s| s != rank).collect();
        nbrs.sort_unstable();
        nbrs.dedup();
        RankLoad {
            rank,
            block: field.block,
            owned: field.owned().cells(),
            halo,
            neighbours: nbrs.len(),
            bytes: halo * std::mem::size_of::<T>(),
        }
    }
}

/// Fills the halo layers of `field` beyond its low or high edge on axis `a`.
fn fill_edge<T: Cell>(field: &mut Field<T>, a: usize, high: bool, b: Boundary) {
    let (h, l, ext) = (field.halo[a], field.block.len[a], field.ext);
    // Positions along `a`: ghost layer g(i) and the interior cell it mirrors m(i).
    let ghost = |i: usize| if high { h + l + i } else { h - 1 - i };
    let mirror = |i: usize| if high { h + l - 1 - i } else { h + i };
    let value = match b {
        Boundary::Dirichlet(v) => Some(T::from_f64(v)),
        _ => None,
    };
    let data = &mut field.data;
    for i in 0..h {
        let (g, m) = (ghost(i), mirror(i));
        match a {
            // One cell per row.
            2 => {
                for row in data.chunks_exact_mut(ext[2]) {
                    row[g] = value.unwrap_or(row[m]);
                }
            }
            // One row per plane.
            1 => {
                for plane in data.chunks_exact_mut(ext[1] * ext[2]) {
                    let (gi, mi) = (g * ext[2], m * ext[2]);
                    match value {
                        Some(x) => plane[gi..gi + ext[2]].fill(x),
                        None => plane.copy_within(mi..mi + ext[2], gi),
                    }
                }
            }
            // A whole plane.
            _ => {
                let p = ext[1] * ext[2];
                match value {
                    Some(x) => data[g * p..(g + 1) * p].fill(x),
                    None => data.copy_within(m * p..(m + 1) * p, g * p),
                }
            }
        }
    }
}
