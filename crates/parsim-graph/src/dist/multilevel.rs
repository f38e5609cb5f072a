//! A parallel multilevel partitioner over a [`DistGraph`], in the style of
//! ParMETIS and distributed KaMinPar: coarsen on every rank at once, solve
//! the coarsest graph on one rank with the sequential multilevel code,
//! project back and refine on every rank at once.

use parsim_comm::{Comm, ReduceOp, Tag};
use parsim_partition::{multilevel_kway, refine_kway, Config, Graph, Limits, FREE};

use super::contract::Contraction;
use super::level::{level_stream, Level};
use super::DistGraph;
use crate::error::{GraphError, Result};

const TAG_PARTS: Tag = 0x6e3;
/// Mixed into the seed of the second V-cycle.
const SECOND_CYCLE: u64 = 0x005e_c00d;

/// What [`DistGraph::multilevel`] did.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct DistPartition {
    /// The part of every owned vertex (local id order).
    pub part: Vec<u32>,
    /// Cut edges (each once), all ranks.
    pub cut: u64,
    /// The largest part over the mean part.
    pub imbalance: f64,
    /// Coarsening steps run on all ranks before the gather.
    pub levels: usize,
    /// Vertices of the coarse graph partitioned on rank 0.
    pub gathered: u64,
    /// Vertices moved by the distributed refinement, all levels, all ranks.
    pub moved: u64,
    /// The bytes this rank held for the hierarchy and the gathered coarsest graph.
    pub bytes: usize,
}

impl DistGraph {
    /// Partitions the graph into `parts` parts of at most
    /// `⌊(1 + ε)·⌈n/parts⌉⌋` vertices (the sequential rule) without any rank
    /// holding the graph:
    ///
    /// 1. **Coarsen on every rank**: the sequential coarsening step
    ///    (heavy-edge matching, or clustering on skewed degrees) on each
    ///    rank's own vertices, then two request rounds that match the
    ///    vertices it left single with single ghosts (the owner of the
    ///    granted vertex adopts the pair and receives the asker's row).
    ///    Repeated until the coarse graph has at most `n / ranks` vertices
    ///    (one rank's share), or until a step shrinks it by less than 10 %.
    /// 2. **Solve the coarsest graph**: it is gathered on every rank, each
    ///    partitions it with the sequential multilevel code
    ///    ([`parsim_partition::multilevel_kway`]) under its own seed (rank 0
    ///    under `seed`), and the lowest balanced cut wins: the other ranks
    ///    would wait for rank 0 anyway, so their tries cost no wall time.
    /// 3. **Project and refine on every rank**: level by level, each vertex
    ///    takes its coarse vertex's part, then twice: rounds of
    ///    size-constrained label propagation (a vertex with a neighbour on
    ///    another rank moves only to a higher part in even rounds and a
    ///    lower one in odd rounds, so two ranks never swap a pair into each
    ///    other's parts), and k-way FM on each rank's own vertices with its
    ///    ghosts pinned. Each rank may fill a part's free room only up to its
    ///    share, so the limit holds whatever the others do.
    /// 4. **Again, on the rows moved to their parts' ranks** (when there are
    ///    at least as many parts as ranks: part `k` goes to rank
    ///    `⌊k·p/K⌋`): the first cycle's partition is a layout with locality,
    ///    which the input may lack (ids hashed, or read in an arbitrary
    ///    order, leave most neighbours on other ranks, where rank-local
    ///    matching and FM cannot use them). A second V-cycle on the moved
    ///    rows coarsens and refines with most neighbours at hand; the lower
    ///    balanced cut of the two wins, and its parts travel back to the
    ///    vertices' owners. On the shared graphs at K = p = 4 this took the
    ///    cut from hashed ids from 1.058× to 0.976× the sequential
    ///    multilevel's (from id blocks 1.016× to 0.975×), for about twice
    ///    the time.
    ///
    /// Edges count once each (weights are ignored). At one rank this is the
    /// sequential multilevel partition. Collective; deterministic for a
    /// given number of ranks and `seed`. Memory per rank: O(owned + ghosts)
    /// for the hierarchy, plus the coarsest graph of at most `n / ranks`
    /// vertices (more only where coarsening stalls), plus the moved rows
    /// during the second cycle.
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
    ///     d.multilevel(&comm, 2, 0.03, 1)
    /// })?;
    /// assert_eq!(got[0].cut, 1);
    /// assert!(got[0].imbalance <= 1.03);
    /// # Ok::<(), parsim_graph::GraphError>(())
    /// ```
    pub fn multilevel<C: Comm>(&self, comm: &C, parts: usize, imbalance: f64, seed: u64) -> Result<DistPartition> {
        if parts == 0 || parts > u32::MAX as usize || !(0.0..=1e6).contains(&imbalance) {
            return Err(GraphError::BadArgument(format!(
                "multilevel: {parts} parts, imbalance {imbalance} (expected parts ≥ 1, ε ≥ 0)"
            )));
        }
        let first = self.vcycle(comm, parts, imbalance, seed)?;
        let p = comm.size();
        if p == 1 || parts < p {
            return Ok(first);
        }
        // The second V-cycle, on the rows moved to their parts' ranks.
        let to: Vec<u32> = first.part.iter().map(|&x| (u64::from(x) * p as u64 / parts as u64) as u32).collect();
        let moved = self.redistribute(comm, &to)?;
        let second = moved.vcycle(comm, parts, imbalance, seed ^ SECOND_CYCLE)?;
        let bytes = first.bytes.max(moved.bytes() + second.bytes);
        let cap = Limits::new(&Config { imbalance, ..Config::new(parts) }, &[self.n_global as i64]).get(0, 0) as f64;
        let mean = self.n_global as f64 / parts as f64;
        let fits = |d: &DistPartition| d.imbalance * mean <= cap + 0.5;
        // Equal on every rank: cuts and sizes are all-reduced.
        let better = (fits(&second), std::cmp::Reverse(second.cut)) > (fits(&first), std::cmp::Reverse(first.cut));
        let moved_all = first.moved + second.moved;
        let mut out = if better {
            let part = self.parts_back(comm, &moved, &to, &second.part)?;
            DistPartition { part, ..second }
        } else {
            first
        };
        (out.moved, out.bytes) = (moved_all, bytes);
        Ok(out)
    }

    /// The parts of this rank's vertices, which went to ranks `to` and were
    /// partitioned there as `moved`'s owned vertices (`part`). Collective.
    fn parts_back<C: Comm>(&self, comm: &C, moved: &DistGraph, to: &[u32], part: &[u32]) -> Result<Vec<u32>> {
        let mut asked: Vec<Vec<u32>> = vec![Vec::new(); comm.size()];
        for (i, &q) in to.iter().enumerate() {
            asked[q as usize].push(self.global(i));
        }
        let questions = comm.all_to_all_v(asked)?;
        let answers: Vec<Vec<u32>> = questions
            .iter()
            .map(|ids| {
                ids.iter()
                    .map(|&v| moved.local(v).filter(|&l| l < moved.owned()).map_or(u32::MAX, |l| part[l]))
                    .collect()
            })
            .collect();
        let answers = comm.all_to_all_v(answers)?;
        let mut at = vec![0usize; comm.size()];
        let mut out = Vec::with_capacity(to.len());
        for &q in to {
            let x = answers[q as usize][at[q as usize]];
            at[q as usize] += 1;
            if x == u32::MAX {
                return Err(GraphError::BadArgument(format!("multilevel: rank {q} lost a moved vertex")));
            }
            out.push(x);
        }
        Ok(out)
    }

    /// One V-cycle of [`DistGraph::multilevel`] on this layout.
    fn vcycle<C: Comm>(&self, comm: &C, parts: usize, imbalance: f64, seed: u64) -> Result<DistPartition> {
        let (rank, p) = (comm.rank(), comm.size());
        let mut levels = vec![Level::of(comm, self)?];
        // Coarse edges weigh the unit edges they merge: the sequential
        // partitioner stores them in 32 bits.
        let entries = comm.all_reduce(&[levels[0].adj.len() as u64], ReduceOp::Sum)?[0];
        if entries / 2 > parsim_partition::MAX_TOTAL_EDGE_WEIGHT {
            return Err(GraphError::BadArgument(format!(
                "multilevel: {} edges, more than the 2^32 - 1 the partitioner's 32-bit edge weights can sum",
                entries / 2
            )));
        }
        let n0 = levels[0].n_global();
        let total = n0 as i64;
        let cfg = Config { imbalance, seed, ..Config::new(parts) };
        let cap = Limits::new(&cfg, &[total]).get(0, 0);
        let gather_at = (n0 / p as u64).max(1);
        // The sequential code's bound on a coarse vertex's weight (METIS's
        // rule: 1.5 × the mean weight at n / (20 log2 k) vertices).
        let target = ((n0 as f64 / (20.0 * (parts as f64).log2().max(1.0))) as u64).max(30 * parts as u64).max(160);
        let maxw = ((1.5 * total as f64 / target as f64).ceil() as i64).max(2);
        let mut cmaps: Vec<Contraction> = Vec::new();
        let mut bytes = levels[0].bytes();
        let mut clustering = false;
        while let Some(cur) = levels.last().filter(|l| l.n_global() > gather_at) {
            let mut rng = level_stream(seed, levels.len(), rank);
            let (coarse, cmap) = cur.coarsen(comm, &mut rng, maxw, levels.len() == 1, &mut clustering)?;
            let shrink = coarse.n_global() as f64 / cur.n_global() as f64;
            bytes += coarse.bytes() + cmap.bytes();
            levels.push(coarse);
            cmaps.push(cmap);
            if shrink > 0.9 {
                break; // matching within ranks stalls: solve what there is
            }
        }
        let coarsest = levels.last().expect("the finest level");
        let gathered = coarsest.n_global();
        let steps = cmaps.len();
        let (mut part, held) = solve_everywhere(comm, coarsest, &cfg)?;
        bytes += held;
        let mut moved = 0;
        while let Some(cmap) = cmaps.pop() {
            levels.pop();
            let fine = levels.last().expect("a finer level");
            part = cmap.project(comm, &part)?;
            // Two rounds of both: each undoes some of what the other could not see.
            for round in 0..2u64 {
                moved += refine(fine, comm, &mut part, parts, cap, 10)?;
                let key = seed ^ ((cmaps.len() as u64) << 32 | round << 48);
                local_fm(fine, comm, &mut part, parts, cap, key)?;
            }
        }
        let fine = &levels[0];
        let ghost = fine.halo(comm, TAG_PARTS, &part)?;
        let n = fine.n();
        let mut twice = 0u64;
        let mut size = vec![0i64; parts];
        for u in 0..n {
            size[part[u] as usize] += fine.vw[u];
            for e in fine.row(u) {
                let v = fine.adj[e] as usize;
                let x = if v < n { part[v] } else { ghost[v - n] };
                if x != part[u] {
                    twice += fine.ew[e] as u64;
                }
            }
        }
        let cut = comm.all_reduce(&[twice], ReduceOp::Sum)?[0] / 2;
        let size = comm.all_reduce(&size, ReduceOp::Sum)?;
        let largest = size.iter().copied().max().unwrap_or(0) as f64;
        Ok(DistPartition {
            part,
            cut,
            imbalance: largest / (total as f64 / parts as f64).max(1e-300),
            levels: steps,
            gathered,
            moved,
            bytes,
        })
    }
}

/// Gathers `level` on every rank, where each partitions it with its own
/// seed (rank 0 with `cfg.seed`, so one rank is the sequential run; the
/// others are extra tries at no extra wall time); the lowest balanced cut
/// wins (ties: the lowest rank) and its owner sends every rank the parts of
/// its vertices. Returns them and the gathered graph's bytes. An error
/// reaches every rank.
fn solve_everywhere<C: Comm>(comm: &C, level: &Level, cfg: &Config) -> Result<(Vec<u32>, usize)> {
    let (rank, p) = (comm.rank(), comm.size());
    let g = level.all_gather(comm)?;
    let held = g.xadj.len() * 8 + g.adjncy.len() * 4 + g.adjwgt.len() * 4 + g.vwgt.len() * 8;
    let mine = Config { seed: cfg.seed.wrapping_add(rank as u64), ..cfg.clone() };
    let (parts, score) = match multilevel_kway(&g, &mine) {
        Ok((parts, m)) => (parts, (0u8, m.cut, String::new())),
        Err(e) => (Vec::new(), (1u8, i64::MAX, format!("multilevel: the coarse graph ({} vertices): {e}", g.n()))),
    };
    drop(g);
    let scores = comm.all_gather_value(&score)?;
    let (winner, best) = scores.iter().enumerate().min_by_key(|(r, s)| (s.0, s.1, *r)).expect("one rank");
    if best.0 != 0 {
        return Err(GraphError::BadArgument(best.2.clone()));
    }
    let mut out: Vec<Vec<u32>> = vec![Vec::new(); p];
    if rank == winner {
        for (r, o) in out.iter_mut().enumerate() {
            *o = parts[level.firsts[r] as usize..level.firsts[r + 1] as usize].to_vec();
        }
    }
    let mut got = comm.all_to_all_v(out)?;
    Ok((std::mem::take(&mut got[winner]), held))
}

/// Size-constrained label propagation on one level (see
/// [`DistGraph::multilevel`]); returns the vertices moved, all ranks.
fn refine<C: Comm>(l: &Level, comm: &C, part: &mut [u32], k: usize, cap: i64, rounds: usize) -> Result<u64> {
    let (n, p) = (l.n(), comm.size() as i64);
    let mut ghost = l.halo(comm, TAG_PARTS, part)?;
    let mut size = vec![0i64; k];
    for u in 0..n {
        size[part[u] as usize] += l.vw[u];
    }
    let mut size = comm.all_reduce(&size, ReduceOp::Sum)?;
    let mut conn = vec![0i64; k];
    let mut touched: Vec<u32> = Vec::new();
    let (mut moved_all, mut idle) = (0u64, 0);
    for round in 0..rounds {
        let up = round % 2 == 0;
        let mut room: Vec<i64> = size.iter().map(|&s| (cap - s).max(0) / p).collect();
        let mut delta = vec![0i64; k];
        let mut moves = 0u64;
        for u in 0..n {
            let own = part[u];
            let mut remote = false;
            for e in l.row(u) {
                let v = l.adj[e] as usize;
                let x = if v < n {
                    part[v]
                } else {
                    remote = true;
                    ghost[v - n]
                };
                if conn[x as usize] == 0 {
                    touched.push(x);
                }
                conn[x as usize] += l.ew[e];
            }
            let mut best = own;
            for &x in &touched {
                if x == own || room[x as usize] < l.vw[u] || (remote && up != (x > own)) {
                    continue;
                }
                let (cx, cb) = (conn[x as usize], conn[best as usize]);
                if cx > cb || (cx == cb && best != own && x < best) {
                    best = x;
                }
            }
            if best != own && conn[best as usize] > conn[own as usize] {
                let w = l.vw[u];
                room[best as usize] -= w;
                delta[best as usize] += w;
                delta[own as usize] -= w;
                part[u] = best;
                moves += 1;
            }
            for &x in &touched {
                conn[x as usize] = 0;
            }
            touched.clear();
        }
        ghost = l.halo(comm, TAG_PARTS, part)?;
        let delta = comm.all_reduce(&delta, ReduceOp::Sum)?;
        for (s, d) in size.iter_mut().zip(&delta) {
            *s += d;
        }
        let moves = comm.all_reduce(&[moves], ReduceOp::Sum)?[0];
        moved_all += moves;
        idle = if moves == 0 { idle + 1 } else { 0 };
        if idle == 2 {
            break;
        }
    }
    Ok(moved_all)
}

/// Each rank improves its own vertices with the sequential k-way FM
/// ([`refine_kway`]) on its rows plus zero-weight copies of its ghosts,
/// pinned to their parts. Each part may grow by this rank's share of its
/// free room, so the limits hold. Two ranks may move the two ends of a cut
/// edge at once and see a gain neither gets; the label propagation round
/// that follows takes such moves back where they lost. (Pinning the
/// vertices with a ghost neighbour as well avoids that but cut 2–3 % more on
/// the shared graphs at K = p = 4.)
fn local_fm<C: Comm>(l: &Level, comm: &C, part: &mut [u32], k: usize, cap: i64, seed: u64) -> Result<()> {
    let (n, ng, p) = (l.n(), l.ghosts.len(), comm.size() as i64);
    let ghost = l.halo(comm, TAG_PARTS, part)?;
    let mut local = vec![0i64; k];
    for u in 0..n {
        local[part[u] as usize] += l.vw[u];
    }
    let size = comm.all_reduce(&local, ReduceOp::Sum)?;
    let max: Vec<i64> = (0..k).map(|x| local[x] + (cap - size[x]).max(0) / p).collect();
    let mut deg = vec![0u64; n + ng];
    let mut fixed = vec![FREE; n + ng];
    for u in 0..n {
        deg[u] = (l.xadj[u + 1] - l.xadj[u]) as u64;
        for e in l.row(u) {
            let v = l.adj[e] as usize;
            if v >= n {
                deg[v] += 1;
            }
        }
    }
    let mut xadj = Vec::with_capacity(n + ng + 1);
    xadj.push(0u64);
    for d in &deg {
        xadj.push(xadj.last().copied().unwrap_or(0) + d);
    }
    let mut at: Vec<u64> = xadj[..n + ng].to_vec();
    let m = xadj[n + ng] as usize;
    let (mut adjncy, mut adjwgt) = (vec![0u32; m], vec![0u32; m]);
    for u in 0..n {
        for e in l.row(u) {
            let v = l.adj[e] as usize;
            let sides: &[(usize, usize)] = if v < n { &[(u, v)] } else { &[(u, v), (v, u)] };
            for &(a, b) in sides {
                adjncy[at[a] as usize] = b as u32;
                adjwgt[at[a] as usize] = super::level::weight32(l.ew[e]);
                at[a] += 1;
            }
        }
    }
    let mut vwgt = l.vw.clone();
    vwgt.resize(n + ng, 0);
    for (g, &x) in ghost.iter().enumerate() {
        fixed[n + g] = x;
    }
    let g = Graph { xadj, adjncy, adjwgt, ncon: 1, vwgt, vsize: None, coords: None, dim: 0 };
    let mut parts: Vec<u32> = part.iter().copied().chain(ghost).collect();
    refine_kway(&g, &mut parts, k, &max, Some(&fixed), seed);
    part.copy_from_slice(&parts[..n]);
    Ok(())
}
