//! Over-decomposition for load balancing: the grid cut into many tiles
//! (many per rank), each with its own halo, owned by ranks through a map
//! that [`parsim_lb`] changes at step boundaries. Any [`Stencil`] runs on
//! it, and the result is bit for bit the one [`run`](crate::run) gives
//! (the same digest), whatever the tiles, the rank count and the balancing.
//!
//! A step: every rank sends the halo cells its tiles give to other ranks'
//! tiles (one all-to-all), copies those between its own tiles and fills
//! the physical boundary, then computes each of its tiles (timed, for the
//! balancer), and swaps. When the balancer moves tiles, their cells are
//! sent to the new owners (one all-to-all) and the exchange lists rebuilt.
//!
//! ```
//! use parsim_grid::tiles::{self, TileSpec};
//! use parsim_grid::{run, Boundary, GridSpec, Heat5};
//! let hot = |g: [usize; 3]| if g[1] == 20 && g[2] == 30 { 100.0 } else { 0.0 };
//! let mut spec = TileSpec::new(vec![48, 64], vec![8, 8], 30);
//! spec.boundary = vec![Boundary::Dirichlet(0.0)];
//! spec.lb.strategy = parsim_lb::Strategy::Sfc;
//! spec.lb.every = 5;
//! let tiled = parsim_comm::launch(3, |c| tiles::run(&c, &spec, &Heat5 { alpha: 0.2 }, &hot).map(|r| r.digest))?;
//! let mut g = GridSpec::new(vec![48, 64], 30);
//! g.boundary = vec![Boundary::Dirichlet(0.0)];
//! let plain = parsim_comm::launch(1, |c| run(&c, &g, &Heat5 { alpha: 0.2 }, &hot, &mut |_| {}).map(|r| r.digest))?;
//! assert!(tiled.iter().all(|d| *d == plain[0]));
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

use std::time::Instant;

use parsim_comm::{Comm, ReduceOp};
use parsim_core::{Digest, Digester, ExactSum, Phase, SetDigest};
use parsim_lb::Balancer;

use crate::{Boundary, Cell, GridError, Place, Stencil};

/// A tiled grid run.
#[derive(Clone, Debug, PartialEq)]
pub struct TileSpec {
    /// Global size, slowest axis first (1 to 3 axes).
    pub size: Vec<usize>,
    /// Tile size per axis (the last tile along an axis may be smaller).
    pub tile: Vec<usize>,
    /// Time steps.
    pub steps: u64,
    /// Boundary condition per axis (one entry applies to all).
    pub boundary: Vec<Boundary>,
    /// Balancing.
    pub lb: parsim_lb::Config,
    /// A slowed rank (rank, factor), for tests of heterogeneous hardware.
    pub slow: Option<(usize, f64)>,
    /// Seeds `graph` repartitioning.
    pub seed: u64,
}

impl TileSpec {
    /// `size` cut into tiles of `tile`, periodic, balancing off.
    pub fn new(size: Vec<usize>, tile: Vec<usize>, steps: u64) -> Self {
        TileSpec {
            size,
            tile,
            steps,
            boundary: vec![Boundary::Periodic],
            lb: parsim_lb::Config::default(),
            slow: None,
            seed: 0,
        }
    }
}

/// The end of a tiled run.
#[derive(Clone, Debug)]
pub struct TileRun {
    /// The field's digest: equal to [`run`](crate::run)'s for the same grid.
    pub digest: Digest,
    /// The exact sum of the final field.
    pub total: f64,
    /// The final tile → rank map.
    pub owner: Vec<u32>,
    /// Tiles per axis `[z, y, x]`.
    pub tiles: [usize; 3],
    /// Mean over steps of mean/max compute per rank.
    pub efficiency: f64,
    /// Compute seconds per rank.
    pub compute_s: Vec<f64>,
    /// What balancing did.
    pub lb: parsim_lb::Stats,
    /// This rank's tiles at the end.
    pub cells: Vec<TileCells>,
}

/// One tile's cells at the end of a run.
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct TileCells {
    /// The tile's id (x fastest).
    pub tile: usize,
    /// Its first cell, `[z, y, x]`.
    pub origin: [usize; 3],
    /// Its extents.
    pub len: [usize; 3],
    /// Its cells without halo, row-major, as `f64`.
    pub values: Vec<f64>,
}

/// Where a halo cell's value comes from.
#[derive(Clone, Copy, Debug)]
enum Src {
    /// A cell of a tile's array (`tile`, index in its array with halo).
    Tile(u32, u32),
    /// A fixed value (Dirichlet).
    Fixed(f64),
}

/// The grid's tiles and the halo of each.
struct Geometry {
    shape: [usize; 3],
    tile: [usize; 3],
    n: [usize; 3],
    halo: [usize; 3],
    bnd: [Boundary; 3],
}

impl Geometry {
    fn new(spec: &TileSpec, radius: usize) -> Result<Geometry, GridError> {
        let k = spec.size.len();
        if !(1..=3).contains(&k) || spec.tile.len() != k {
            return Err(GridError::Config(format!(
                "a tiled grid needs 1 to 3 axes and one tile size per axis (size {:?}, tile {:?})",
                spec.size, spec.tile
            )));
        }
        let (mut shape, mut tile) = ([1usize; 3], [1usize; 3]);
        for i in 0..k {
            shape[3 - k + i] = spec.size[i];
            tile[3 - k + i] = spec.tile[i];
        }
        if shape.iter().chain(&tile).any(|&x| x == 0) {
            return Err(GridError::Config("grid and tile sizes must be at least 1".into()));
        }
        let mut halo = [0usize; 3];
        let mut bnd = [Boundary::Periodic; 3];
        for a in 0..3 {
            if shape[a] > 1 {
                halo[a] = radius;
                if tile[a].min(shape[a]) < radius {
                    return Err(GridError::Config(format!(
                        "tiles of {} cells are narrower than the stencil's radius {radius}",
                        tile[a]
                    )));
                }
            }
            if a + k >= 3 {
                let user = a + k - 3;
                bnd[a] = match spec.boundary.len() {
                    0 => Boundary::Periodic,
                    1 => spec.boundary[0],
                    _ => *spec
                        .boundary
                        .get(user)
                        .ok_or_else(|| GridError::Config(format!("{} boundaries for {k} axes", spec.boundary.len())))?,
                };
            }
        }
        let n = [0, 1, 2].map(|a| shape[a].div_ceil(tile[a].min(shape[a])));
        let tile = [0, 1, 2].map(|a| tile[a].min(shape[a]));
        if n.iter().product::<usize>() > 1 << 22 {
            return Err(GridError::Config(format!("{n:?} tiles: at most 2^22 (use larger tiles)")));
        }
        Ok(Geometry { shape, tile, n, halo, bnd })
    }

    fn count(&self) -> usize {
        self.n.iter().product()
    }

    fn coords(&self, t: usize) -> [usize; 3] {
        [t / (self.n[1] * self.n[2]), t / self.n[2] % self.n[1], t % self.n[2]]
    }

    fn origin(&self, t: usize) -> [usize; 3] {
        let c = self.coords(t);
        [0, 1, 2].map(|a| c[a] * self.tile[a])
    }

    fn len(&self, t: usize) -> [usize; 3] {
        let o = self.origin(t);
        [0, 1, 2].map(|a| self.tile[a].min(self.shape[a] - o[a]))
    }

    fn ext(&self, t: usize) -> [usize; 3] {
        let l = self.len(t);
        [0, 1, 2].map(|a| l[a] + 2 * self.halo[a])
    }

    /// The tile holding global cell `g` and the cell's index in its array.
    fn locate(&self, g: [usize; 3]) -> (u32, u32) {
        let c = [0, 1, 2].map(|a| g[a] / self.tile[a]);
        let t = (c[0] * self.n[1] + c[1]) * self.n[2] + c[2];
        let o = self.origin(t);
        let e = self.ext(t);
        let l = [0, 1, 2].map(|a| g[a] - o[a] + self.halo[a]);
        (t as u32, ((l[0] * e[1] + l[1]) * e[2] + l[2]) as u32)
    }

    /// Every halo cell of tile `t`: its index in the array and its source.
    fn plan(&self, t: usize) -> Vec<(u32, Src)> {
        let (o, l, e, h) = (self.origin(t), self.len(t), self.ext(t), self.halo);
        let mut out = Vec::new();
        for z in 0..e[0] {
            for y in 0..e[1] {
                for x in 0..e[2] {
                    let p = [z, y, x];
                    if (0..3).all(|a| p[a] >= h[a] && p[a] < h[a] + l[a]) {
                        continue;
                    }
                    let mut g = [0usize; 3];
                    let mut fixed = None;
                    for a in 0..3 {
                        let n = self.shape[a] as i64;
                        let v = o[a] as i64 + p[a] as i64 - h[a] as i64;
                        g[a] = if (0..n).contains(&v) {
                            v as usize
                        } else {
                            match self.bnd[a] {
                                Boundary::Periodic => v.rem_euclid(n) as usize,
                                // Mirror: ghost −1 − i reads cell i.
                                Boundary::Neumann => {
                                    (if v < 0 { -1 - v } else { 2 * n - 1 - v }).clamp(0, n - 1) as usize
                                }
                                Boundary::Dirichlet(d) => {
                                    fixed = Some(d);
                                    0
                                }
                            }
                        };
                    }
                    let dst = ((z * e[1] + y) * e[2] + x) as u32;
                    out.push((
                        dst,
                        match fixed {
                            Some(d) => Src::Fixed(d),
                            None => {
                                let (s, i) = self.locate(g);
                                Src::Tile(s, i)
                            }
                        },
                    ));
                }
            }
        }
        out
    }
}

/// Who sends which halo cells to whom, for one map.
struct Exchange {
    /// Per peer: (source tile, index) to pack, in the agreed order.
    send: Vec<Vec<(u32, u32)>>,
    /// Per peer: (destination tile, index) to unpack, in the same order.
    recv: Vec<Vec<(u32, u32)>>,
    /// Within this rank: (dst tile, dst index, source).
    local: Vec<(u32, u32, Src)>,
}

fn exchange_lists(plans: &[Vec<(u32, Src)>], owner: &[u32], me: usize, p: usize) -> Exchange {
    let mut ex = Exchange { send: vec![Vec::new(); p], recv: vec![Vec::new(); p], local: Vec::new() };
    for (d, plan) in plans.iter().enumerate() {
        let od = owner[d] as usize;
        for &(dst, src) in plan {
            match src {
                Src::Tile(s, i) => {
                    let os = owner[s as usize] as usize;
                    if od == me && os == me {
                        ex.local.push((d as u32, dst, src));
                    } else if od == me {
                        ex.recv[os].push((d as u32, dst));
                    } else if os == me {
                        ex.send[od].push((s, i));
                    }
                }
                Src::Fixed(_) if od == me => ex.local.push((d as u32, dst, src)),
                Src::Fixed(_) => {}
            }
        }
    }
    ex
}

/// One tile's two arrays (with halo).
struct Tile<T> {
    cur: Vec<T>,
    next: Vec<T>,
}

/// Runs `stencil` for `spec.steps` steps on a tiled grid whose tiles move
/// between ranks as `spec.lb` decides. Collective.
pub fn run<C, T, S>(
    comm: &C,
    spec: &TileSpec,
    stencil: &S,
    init: &(dyn Fn([usize; 3]) -> T + Sync),
) -> Result<TileRun, GridError>
where
    C: Comm,
    T: Cell,
    S: Stencil<T>,
{
    let (me, p) = (comm.rank(), comm.size());
    let geo = Geometry::new(spec, stencil.radius())?;
    let nt = geo.count();
    if nt < p {
        return Err(GridError::Config(format!("{nt} tiles for {p} ranks: use smaller tiles")));
    }
    spec.lb.check(nt).map_err(|(k, m)| GridError::Config(format!("{k}: {m}")))?;
    let chunks = parsim_lb::Chunks::grid([geo.n[2] as u32, geo.n[1] as u32, geo.n[0] as u32], false);
    // Balancer chunk ids are x-fastest like the tile ids.
    let mut lb = Balancer::new(spec.lb.clone(), chunks, p, spec.seed);
    let mut owner = lb.initial_map();
    let plans: Vec<Vec<(u32, Src)>> = (0..nt).map(|t| geo.plan(t)).collect();
    let mut ex = exchange_lists(&plans, &owner, me, p);
    let mut tiles: Vec<Option<Tile<T>>> = (0..nt).map(|_| None).collect();
    for t in (0..nt).filter(|&t| owner[t] as usize == me) {
        tiles[t] = Some(new_tile(&geo, t, init));
    }
    let clock = comm.clock();
    let mut compute_s = vec![0.0; p];
    let mut eff_sum = 0.0;
    for step in 0..spec.steps {
        // 1. Halos: to other ranks, between own tiles, at the boundary.
        {
            let _c = clock.enter(Phase::Comm);
            if p > 1 {
                let parts: Vec<Vec<T>> = ex
                    .send
                    .iter()
                    .map(|l| l.iter().map(|&(s, i)| tile_ref(&tiles, s).cur[i as usize]).collect())
                    .collect();
                let got = comm.all_to_all_v(parts)?;
                for (q, vals) in got.into_iter().enumerate() {
                    if vals.len() != ex.recv[q].len() {
                        return Err(GridError::Invariant(format!(
                            "rank {q} sent {} halo cells, {} expected",
                            vals.len(),
                            ex.recv[q].len()
                        )));
                    }
                    for (&(d, dst), v) in ex.recv[q].iter().zip(vals) {
                        tile_mut(&mut tiles, d).cur[dst as usize] = v;
                    }
                }
            }
            for &(d, dst, src) in &ex.local {
                let v = match src {
                    Src::Tile(s, i) => tile_ref(&tiles, s).cur[i as usize],
                    Src::Fixed(x) => T::from_f64(x),
                };
                tile_mut(&mut tiles, d).cur[dst as usize] = v;
            }
        }
        // 2. Each own tile, timed.
        let mut mine = 0.0;
        {
            let _c = clock.enter(Phase::Compute);
            for t in 0..nt {
                let Some(tile) = tiles[t].as_mut() else { continue };
                let start = Instant::now();
                let (o, l, e, h) = (geo.origin(t), geo.len(t), geo.ext(t), geo.halo);
                let place = Place { origin: [0, 1, 2].map(|a| o[a] as i64 - h[a] as i64), shape: geo.shape, step };
                for z in h[0]..h[0] + l[0] {
                    for y in h[1]..h[1] + l[1] {
                        let row = (z * e[1] + y) * e[2] + h[2];
                        stencil.row_at(&tile.cur, e, z, y, h[2], &mut tile.next[row..row + l[2]], &place, false);
                    }
                }
                std::mem::swap(&mut tile.cur, &mut tile.next);
                let mut secs = start.elapsed().as_secs_f64();
                if let Some((r, f)) = spec.slow {
                    if r == me && f > 1.0 {
                        let until = Instant::now() + std::time::Duration::from_secs_f64(secs * (f - 1.0));
                        while Instant::now() < until {
                            std::hint::spin_loop();
                        }
                        secs *= f;
                    }
                }
                mine += secs;
                lb.record(t, secs, (l[0] * l[1] * l[2]) as f64);
            }
        }
        let times = comm.all_gather(vec![mine])?;
        let (mut sum, mut max) = (0.0, 0.0f64);
        for (r, t) in times.iter().enumerate() {
            sum += t[0];
            max = max.max(t[0]);
            compute_s[r] += t[0];
        }
        eff_sum += if max > 0.0 { sum / p as f64 / max } else { 1.0 };
        lb.step_done();
        // 3. Balancing: tiles that change owner travel whole.
        if let Some(new) = lb.check(comm, step + 1, &owner)? {
            let t0 = Instant::now();
            let mut parts: Vec<Vec<T>> = vec![Vec::new(); p];
            for t in 0..nt {
                if owner[t] as usize == me && new[t] as usize != me {
                    let tile = tiles[t].take().expect("an own tile");
                    parts[new[t] as usize].extend_from_slice(&tile.cur);
                }
            }
            let bytes: u64 = parts.iter().map(|v| (v.len() * std::mem::size_of::<T>()) as u64).sum();
            let got = clock.in_phase(Phase::Comm, || comm.all_to_all_v(parts))?;
            for (q, vals) in got.into_iter().enumerate() {
                let mut at = 0;
                for t in (0..nt).filter(|&t| owner[t] as usize == q && new[t] as usize == me && q != me) {
                    let n: usize = geo.ext(t).iter().product();
                    let cur = vals.get(at..at + n).ok_or_else(|| {
                        GridError::Invariant(format!("rank {q} sent a short tile {t} ({} values)", vals.len()))
                    })?;
                    tiles[t] = Some(Tile { cur: cur.to_vec(), next: vec![T::default(); n] });
                    at += n;
                }
            }
            owner = new;
            ex = exchange_lists(&plans, &owner, me, p);
            lb.migrated(comm, bytes, t0.elapsed().as_secs_f64())?;
        }
    }
    finish(comm, &geo, &tiles, owner, spec.steps, eff_sum, compute_s, lb.stats().clone())
}

fn tile_ref<T>(tiles: &[Option<Tile<T>>], t: u32) -> &Tile<T> {
    tiles[t as usize].as_ref().expect("a tile this rank owns")
}

fn tile_mut<T>(tiles: &mut [Option<Tile<T>>], t: u32) -> &mut Tile<T> {
    tiles[t as usize].as_mut().expect("a tile this rank owns")
}

fn new_tile<T: Cell>(geo: &Geometry, t: usize, init: &(dyn Fn([usize; 3]) -> T + Sync)) -> Tile<T> {
    let (o, l, e, h) = (geo.origin(t), geo.len(t), geo.ext(t), geo.halo);
    let n: usize = e.iter().product();
    let mut cur = vec![T::default(); n];
    for z in 0..l[0] {
        for y in 0..l[1] {
            for x in 0..l[2] {
                cur[((z + h[0]) * e[1] + y + h[1]) * e[2] + x + h[2]] = init([o[0] + z, o[1] + y, o[2] + x]);
            }
        }
    }
    Tile { next: cur.clone(), cur }
}

/// The digest (as [`run`](crate::run) computes it), the exact total and
/// each own tile's cells.
#[allow(clippy::too_many_arguments)]
fn finish<C: Comm, T: Cell>(
    comm: &C,
    geo: &Geometry,
    tiles: &[Option<Tile<T>>],
    owner: Vec<u32>,
    steps: u64,
    eff_sum: f64,
    compute_s: Vec<f64>,
    lb: parsim_lb::Stats,
) -> Result<TileRun, GridError> {
    let s = geo.shape;
    let (mut set, mut sum, mut cells) = (SetDigest::new(), ExactSum::new(), Vec::new());
    for (t, tile) in tiles.iter().enumerate() {
        let Some(tile) = tile else { continue };
        let (o, l, e, h) = (geo.origin(t), geo.len(t), geo.ext(t), geo.halo);
        let mut mine = Vec::with_capacity(l.iter().product());
        for z in 0..l[0] {
            for y in 0..l[1] {
                for x in 0..l[2] {
                    let v = tile.cur[((z + h[0]) * e[1] + y + h[1]) * e[2] + x + h[2]];
                    let g = [o[0] + z, o[1] + y, o[2] + x];
                    set.add(((g[0] * s[1] + g[1]) * s[2] + g[2]) as u64, v.bits());
                    sum.add(v.to_f64());
                    mine.push(v.to_f64());
                }
            }
        }
        cells.push(TileCells { tile: t, origin: o, len: l, values: mine });
    }
    let all = comm.all_merge_digest(&set)?;
    let mut dg = Digester::new();
    dg.write_str("grid");
    for n in s {
        dg.write_u64(n as u64);
    }
    dg.write_u64(steps);
    dg.write_u64(all.parts[0]);
    dg.write_u64(all.parts[1]);
    let total = comm.all_reduce_exact(&sum)?.value();
    let n = comm.all_reduce(&[cells.len() as u64], ReduceOp::Sum)?[0];
    if n as usize != geo.count() {
        return Err(GridError::Invariant(format!("{n} tiles at the end, {} expected", geo.count())));
    }
    Ok(TileRun {
        digest: dg.finish(),
        total,
        owner,
        tiles: geo.n,
        efficiency: if steps > 0 { eff_sum / steps as f64 } else { 1.0 },
        compute_s,
        lb,
        cells,
    })
}
