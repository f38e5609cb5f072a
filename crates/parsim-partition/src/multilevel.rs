//! Multilevel k-way partitioning: coarsen (heavy-edge matching, or
//! label-propagation clustering where matching stalls) to n / (20 log2 k)
//! vertices, partition the coarsest graph by recursive multilevel bisection
//! (each bisection the best of greedy growings and a spectral split, refined
//! by FM on every level of its own hierarchy), then project back level by
//! level with k-way refinement (greedy passes, k-way FM), pairwise two-way
//! FM on bands around the boundary of each pair of adjacent parts and, in
//! the strong preset, max-flow refinement of each pair's border.

mod bisect;
mod coarsen;
mod contiguity;
mod pairwise;
mod refine;

use parsim_core::rng::{Stream, StreamKey};

use crate::error::{PartitionError, Result};
use crate::graph::Graph;
use crate::partition::{metrics, Config, Limits, Objective, Preset, FREE};

pub(crate) use bisect::subgraph;
pub(crate) use coarsen::permutation;

/// A per-vertex value carried to the coarse vertices (all members agree).
fn restrict<T: Copy + Default>(cmap: &[u32], cn: usize, fine: &[T]) -> Vec<T> {
    let mut coarse = vec![T::default(); cn];
    for (v, &c) in cmap.iter().enumerate() {
        coarse[c as usize] = fine[v];
    }
    coarse
}

/// Where vertices come from when repartitioning, and what moving one costs.
#[derive(Clone, Copy)]
pub(crate) struct Home<'a> {
    pub part: &'a [u32],
    /// Cost per unit of migrated vertex weight, in edge-weight units.
    pub alpha: i64,
}

struct Level {
    graph: Graph,
    /// Coarse id of each vertex of the finer level.
    cmap: Vec<u32>,
}

/// One coarsening step of `cur` (`None` when it no longer shrinks):
/// heavy-edge matching, or label-propagation clustering on skewed-degree
/// graphs and where matching stalls. `power_law` records, across the levels
/// of one hierarchy, that clustering took over; `uniform` says every edge
/// of `cur` weighs the same.
pub(crate) fn coarsen_step(
    cur: &Graph,
    rng: &mut Stream,
    maxw: &[i64],
    class: Option<&[u64]>,
    first: bool,
    power_law: &mut bool,
    uniform: bool,
) -> Option<(Vec<u32>, usize)> {
    // Skewed degrees (social, web graphs): clustering coarsens along
    // communities, where matching merges across them.
    let avg = cur.adjncy.len() as f64 / cur.n().max(1) as f64;
    let maxdeg = (0..cur.n()).map(|v| cur.degree(v)).max().unwrap_or(0) as f64;
    let skewed = first && maxdeg > 20.0 * avg.max(1.0);
    let (mut cmap, mut cn) = if skewed || *power_law {
        *power_law = true;
        coarsen::cluster(cur, rng, maxw, class)
    } else {
        coarsen::heavy_edge_matching(cur, rng, maxw, class, uniform)
    };
    if cn as f64 > 0.85 * cur.n() as f64 && !*power_law {
        // Matching stalls (stars, power-law hubs): cluster instead.
        let (c2, n2) = coarsen::cluster(cur, rng, maxw, class);
        if n2 < cn {
            (cmap, cn) = (c2, n2);
        }
    }
    if cn as f64 > 0.95 * cur.n() as f64 && *power_law {
        // Clusters stopped shrinking: match what is left.
        (cmap, cn) = coarsen::heavy_edge_matching(cur, rng, maxw, class, uniform);
    }
    (cn as f64 <= 0.95 * cur.n() as f64).then_some((cmap, cn))
}

/// What a hierarchy's coarse levels may hold, as adjacency entries, before
/// it stops coarsening a graph whose edges no longer merge.
///
/// A step halves the vertices, but on a random graph it removes only the
/// matched edges (about one in 2·degree), so every level would hold a
/// near-full copy of the edges. A hierarchy stops when its next level would
/// pass the limit while the last step removed under a fifth of the entries;
/// meshes and other graphs whose edges merge as they coarsen stay within
/// the limit and coarsen as before.
#[derive(Clone, Copy)]
pub(crate) struct Budget {
    /// `factor` × the input's entries.
    limit: usize,
    /// Entries held by the coarse levels so far.
    held: usize,
    /// Whether the last step removed under a fifth of its graph's entries.
    stalled: bool,
}

impl Budget {
    /// A budget of `factor` times `input`'s adjacency entries.
    pub(crate) fn of(input: &Graph, factor: usize) -> Budget {
        Budget { limit: factor * input.adjncy.len(), held: 0, stalled: false }
    }

    /// Whether to coarsen `cur`, the coarsest level so far, once more.
    pub(crate) fn allows(&self, cur: &Graph) -> bool {
        !(self.stalled && self.held + cur.adjncy.len() > self.limit)
    }

    /// Counts a new level `coarse`, made from `finer`.
    pub(crate) fn add(&mut self, coarse: &Graph, finer: &Graph) {
        self.held += coarse.adjncy.len();
        self.stalled = coarse.adjncy.len() as f64 > 0.8 * finer.adjncy.len() as f64;
    }
}

/// How far the k-way hierarchy coarsens: METIS's rule, n / (20 log2 k)
/// vertices but at least 30 k (the initial partitioning, a multilevel
/// recursive bisection, coarsens further).
fn coarsen_target(n: usize, k: usize) -> usize {
    let lg = (k as f64).log2().max(1.0);
    ((n as f64 / (20.0 * lg)) as usize).max(30 * k).max(160)
}

/// Coarsens `g`; with `class`, only vertices of the same class are merged
/// (an iterated V-cycle keeps its partition on every level, pinned vertices
/// stay with their part, repartitioning keeps track of where vertices were).
fn coarsen_all(g: &Graph, k: usize, rng: &mut Stream, class: Option<Vec<u64>>) -> Vec<Level> {
    let coarsen_to = coarsen_target(g.n(), k);
    let total = g.total_weights();
    let maxw: Vec<i64> = total.iter().map(|&t| ((1.5 * t as f64 / coarsen_to as f64).ceil() as i64).max(1)).collect();
    let mut levels: Vec<Level> = Vec::new();
    let mut cur_part: Option<Vec<u64>> = class;
    let mut power_law = false;
    // Large inputs (over 2^24 adjacency entries, 128 MB of them) whose
    // edges stop merging keep at most one more copy: on G(10⁶, 5·10⁶)
    // that held 21 % less memory for 0.82× the time and a 0.2 % higher cut,
    // but on smaller meshes and social graphs that stall late it cut up to
    // 2 % more, so they keep two.
    let mut budget = Budget::of(g, if g.adjncy.len() > 1 << 24 { 1 } else { 2 });
    loop {
        let cur = levels.last().map_or(g, |l| &l.graph);
        if cur.n() <= coarsen_to || !budget.allows(cur) {
            break;
        }
        let w0 = coarsen::uniform_weight(cur);
        let step = coarsen_step(cur, rng, &maxw, cur_part.as_deref(), levels.is_empty(), &mut power_law, w0.is_some());
        let Some((cmap, cn)) = step else { break };
        let graph = coarsen::contract(cur, &cmap, cn, w0);
        if let Some(p) = cur_part.as_mut() {
            *p = restrict(&cmap, cn, p);
        }
        budget.add(&graph, cur);
        levels.push(Level { graph, cmap });
    }
    levels
}

/// The coarse levels of one V-cycle, with the pins and homes restricted to each.
struct Hierarchy {
    levels: Vec<Level>,
    /// Pins on every level (index 0: the input graph).
    fixed_at: Option<Vec<Vec<u32>>>,
    /// Homes on every level.
    home_at: Option<Vec<Vec<u32>>>,
}

/// Coarsens `g` for one V-cycle; with `start`, the partition to keep on
/// every level (an iterated V-cycle). Pinned vertices stay with their part.
fn hierarchy(g: &Graph, cfg: &Config, rng: &mut Stream, start: Option<&[u32]>, home: Option<Home<'_>>) -> Hierarchy {
    let k = cfg.k;
    let n = g.n();
    let fixed = cfg.fixed.as_deref();
    let kk = k as u64 + 1;
    let class: Option<Vec<u64>> = (start.is_some() || fixed.is_some() || home.is_some()).then(|| {
        let f = |v: usize| fixed.map_or(k as u64, |f| if f[v] == FREE { k as u64 } else { u64::from(f[v]) });
        (0..n)
            .map(|v| {
                let s = start.map_or(0, |s| u64::from(s[v]));
                let h = home.map_or(0, |h| u64::from(h.part[v]));
                (s * kk + f(v)) * kk + h
            })
            .collect()
    });
    let levels = coarsen_all(g, k, rng, class);
    let per_level = |fine: &[u32]| -> Vec<Vec<u32>> {
        let mut all = vec![fine.to_vec()];
        for l in &levels {
            let next = restrict(&l.cmap, l.graph.n(), all.last().expect("level"));
            all.push(next);
        }
        all
    };
    let fixed_at = fixed.map(per_level);
    let home_at = home.map(|h| per_level(h.part));
    Hierarchy { levels, fixed_at, home_at }
}

/// One multilevel run; with `start`, an iterated V-cycle that keeps and
/// improves that partition. Pinned vertices (`cfg.fixed`) never move; with
/// `home`, moving a vertex away from its home part costs `alpha` per unit weight.
fn vcycle(
    g: &Graph,
    cfg: &Config,
    lim: &Limits,
    rng: &mut Stream,
    start: Option<&[u32]>,
    home: Option<Home<'_>>,
) -> Vec<u32> {
    let h = hierarchy(g, cfg, rng, start, home);
    solve(g, cfg, lim, rng, h, start, home, false, true)
}

/// What a preset spends where.
struct Tuning {
    /// Independent runs (the best is kept), and V-cycles per run.
    runs: usize,
    cycles: usize,
    /// Bisection tries (grown, plus one or two spectral ones) and the
    /// coarsening hierarchies of each multilevel bisection they are spread over.
    tries: usize,
    ncuts: usize,
    /// Greedy k-way passes per level.
    passes: usize,
    /// k-way FM rounds on the coarse levels and on the finest.
    fm_coarse: usize,
    fm_finest: usize,
    /// Pairwise two-way FM at every level: band depth and FM passes (0: none).
    band: usize,
    pair_passes: usize,
    /// Flow refinement of each pair's border at every level of a run's
    /// last V-cycle (the cycles before it are re-coarsened and refined
    /// again, so flows there bought little: cut 0.9272 → 0.9309× gpmetis
    /// for 0.83× the time, BENCHMARKS.md).
    flows: bool,
}

impl Tuning {
    /// Measured on `parsim bench partition` (BENCHMARKS.md): the default
    /// is one V-cycle whose pairwise refinement buys more cut per second
    /// than a second V-cycle or a second run; flows cut most but cost about
    /// 1.7× the default's time, so only the strong preset uses them.
    fn of(preset: Preset) -> Tuning {
        match preset {
            Preset::Fast => Tuning {
                runs: 1,
                cycles: 1,
                tries: 2,
                ncuts: 1,
                passes: 4,
                fm_coarse: 0,
                fm_finest: 0,
                band: 0,
                pair_passes: 0,
                flows: false,
            },
            Preset::Default => Tuning {
                runs: 1,
                cycles: 1,
                tries: 8,
                ncuts: 2,
                passes: 10,
                fm_coarse: 1,
                fm_finest: 1,
                band: 1,
                pair_passes: 2,
                flows: false,
            },
            Preset::Strong => Tuning {
                runs: 2,
                cycles: 2,
                tries: 8,
                ncuts: 2,
                passes: 10,
                fm_coarse: 1,
                fm_finest: 1,
                band: 2,
                pair_passes: 4,
                flows: true,
            },
        }
    }
}

/// The initial partition of `h`'s coarsest graph (or `start` carried down
/// to it), then refinement on every level back to `g`.
#[allow(clippy::too_many_arguments)]
fn solve(
    g: &Graph,
    cfg: &Config,
    lim: &Limits,
    rng: &mut Stream,
    h: Hierarchy,
    start: Option<&[u32]>,
    home: Option<Home<'_>>,
    tight: bool,
    last: bool,
) -> Vec<u32> {
    let k = cfg.k;
    let t = Tuning::of(cfg.preset);
    let Hierarchy { mut levels, fixed_at, home_at } = h;
    let coarsest = levels.last().map_or(g, |l| &l.graph);
    let fractions: Vec<f64> = (0..k).map(|p| cfg.target(p)).collect();
    // Each bisection may use the whole imbalance (the k-way refinement
    // evens the parts out; the looser bisections cut less); a `tight` run
    // splits it over the bisection levels, for instances where evening out
    // fails (heavy vertices).
    let depth = if tight { (k as f64).log2().ceil().max(1.0) } else { 1.0 };
    let eps = (1.0 + cfg.imbalance).powf(1.0 / depth) - 1.0;
    let mut parts = match start {
        None => {
            let mut parts = vec![0u32; coarsest.n()];
            let ids: Vec<u32> = (0..coarsest.n() as u32).collect();
            bisect::recursive_bisection(coarsest, &ids, 0, &fractions, eps, (t.tries, t.ncuts), rng, &mut parts);
            if let Some(f) = &fixed_at {
                for (p, &pin) in parts.iter_mut().zip(&f[levels.len()]) {
                    if pin != FREE {
                        *p = pin;
                    }
                }
            }
            parts
        }
        Some(p) => {
            // Every coarse vertex lies in one part: carry the partition down.
            let mut fine: Vec<u32> = p.to_vec();
            for l in &levels {
                let mut coarse = vec![0u32; l.graph.n()];
                for (v, &c) in l.cmap.iter().enumerate() {
                    coarse[c as usize] = fine[v];
                }
                fine = coarse;
            }
            fine
        }
    };
    // An iterated cycle starts from a good partition: fewer passes do.
    let (passes, fm_coarse) = match start {
        Some(_) => (t.passes.min(4), t.fm_coarse.min(2)),
        None => (t.passes, t.fm_coarse),
    };
    // Pairwise refinement moves vertices without the k-way bookkeeping:
    // not with pins or homes.
    let pairs = t.pair_passes > 0 && fixed_at.is_none() && home.is_none();
    // Refine on the coarsest graph and on every finer one.
    let mut bnd: Option<Vec<bool>> = None;
    for i in (0..=levels.len()).rev() {
        let cand = if i < levels.len() {
            let cmap = &levels[i].cmap;
            parts = cmap.iter().map(|&c| parts[c as usize]).collect();
            bnd.take().map(|b| cmap.iter().map(|&c| b[c as usize]).collect())
        } else {
            None
        };
        // The coarser level is done with: its memory goes before this
        // level's refinement allocates (at the finest level, the whole
        // hierarchy, which on a random graph holds twice the input's edges).
        levels.truncate(i);
        let graph = if i == 0 { g } else { &levels[i - 1].graph };
        // Coarse vertices are heavy: let the coarse levels overshoot by up to
        // one average coarse vertex, so refinement can still move them; the
        // finest level keeps the exact limits. (Not with several constraints:
        // the overshoot is then too hard to take back at the end.)
        let level_lim = if i == 0 || g.ncon > 1 {
            lim.clone()
        } else {
            let total = graph.total_weights();
            let slack = k as f64 / graph.n().max(1) as f64;
            Limits::new(&Config { imbalance: cfg.imbalance + slack.min(0.1), ..cfg.clone() }, &total)
        };
        let mut kw = refine::KWay::new(graph, k, &level_lim, parts, cand);
        kw.fixed = fixed_at.as_ref().map(|f| f[i].as_slice());
        kw.home = home_at.as_ref().zip(home).map(|(h, home)| (h[i].as_slice(), home.alpha));
        kw.rebalance();
        kw.greedy(passes, rng);
        kw.rebalance();
        kw.fm(if i == 0 { t.fm_finest } else { fm_coarse }, rng);
        // The boundary: the next finer level's candidates, and the rows the
        // pairwise sweep reads.
        let mut flags = (i > 0 || pairs).then(|| kw.boundary_flags());
        parts = kw.parts;
        if pairs {
            let bounds = (t.band, t.pair_passes);
            let mut moved = pairwise::refine_pairs(graph, &mut parts, k, &level_lim, bounds, flags.as_deref());
            if t.flows && last {
                moved.extend(pairwise::flow_pairs(graph, &mut parts, k, &level_lim));
            }
            // The finest level has no finer one to hand candidates to.
            if let Some(f) = flags.as_mut().filter(|_| i > 0) {
                for v in moved {
                    f[v as usize] = true;
                    for &u in graph.neighbours(v as usize) {
                        f[u as usize] = true;
                    }
                }
            }
        }
        bnd = flags;
    }
    if cfg.objective == Objective::Volume {
        let mut kw = refine::KWay::new(g, k, lim, parts, None);
        kw.fixed = fixed_at.as_ref().map(|f| f[0].as_slice());
        kw.home = home_at.as_ref().zip(home).map(|(h, home)| (h[0].as_slice(), home.alpha));
        kw.volume_greedy(8, rng);
        parts = kw.parts;
    }
    parts
}

/// Partitions `g` with the multilevel method.
///
/// ```
/// use parsim_partition::{multilevel_kway, Config, Graph};
/// // Two triangles joined by one edge split at that edge.
/// let g = Graph::from_edges(6, &[(0, 1, 1), (1, 2, 1), (0, 2, 1), (3, 4, 1), (4, 5, 1), (3, 5, 1), (2, 3, 1)]).unwrap();
/// let (parts, m) = multilevel_kway(&g, &Config::new(2)).unwrap();
/// assert_eq!(m.cut, 1);
/// assert_ne!(parts[0], parts[5]);
/// ```
pub fn multilevel_kway(g: &Graph, cfg: &Config) -> Result<(Vec<u32>, crate::Metrics)> {
    cfg.check(g)?;
    let total = g.total_weights();
    let lim = Limits::new(cfg, &total);
    // Feasibility: every vertex must fit in some part, and the limits must hold the total weight.
    for c in 0..g.ncon {
        let cap: i64 = (0..cfg.k).map(|p| lim.get(p, c)).sum();
        if cap < total[c] {
            return Err(PartitionError::Infeasible(format!(
                "constraint {}: the parts may hold {cap} in all, the graph weighs {}",
                c + 1,
                total[c]
            )));
        }
        let heaviest = (0..g.n()).map(|v| g.weights(v)[c]).max().unwrap_or(0);
        let roomiest = (0..cfg.k).map(|p| lim.get(p, c)).max().unwrap_or(0);
        if heaviest > roomiest {
            return Err(PartitionError::Infeasible(format!(
                "a vertex of weight {heaviest} (constraint {}) does not fit in any part (limit {roomiest} at imbalance {:.4})",
                c + 1,
                cfg.imbalance
            )));
        }
    }
    if let Some(f) = &cfg.fixed {
        let mut pinned = vec![0i64; cfg.k * g.ncon];
        for (v, &p) in f.iter().enumerate() {
            if p != FREE {
                for (c, w) in g.weights(v).iter().enumerate() {
                    pinned[p as usize * g.ncon + c] += w;
                }
            }
        }
        for p in 0..cfg.k {
            for c in 0..g.ncon {
                if pinned[p * g.ncon + c] > lim.get(p, c) {
                    return Err(PartitionError::Infeasible(format!(
                        "the vertices pinned to part {p} weigh {} (constraint {}), over its limit {}",
                        pinned[p * g.ncon + c],
                        c + 1,
                        lim.get(p, c)
                    )));
                }
            }
        }
    }
    if cfg.k == 1 {
        let parts = vec![0; g.n()];
        let m = metrics(g, &parts, cfg);
        return Ok((parts, m));
    }
    let Tuning { runs, cycles, .. } = Tuning::of(cfg.preset);
    let runs = runs as u64;
    let mut best: Option<(Vec<u32>, crate::Metrics)> = None;
    // Extra runs only while no balanced partition has been found (tight
    // multi-constraint instances), before calling the instance infeasible.
    for r in 0..runs + 4 {
        if r >= runs && best.as_ref().is_some_and(|(_, m)| m.balanced && m.empty_parts == 0) {
            break;
        }
        let mut rng = StreamKey::new(cfg.seed).purpose("parsim.partition.multilevel").with(r).stream();
        // A run past the planned ones splits the imbalance over the bisections.
        let h = hierarchy(g, cfg, &mut rng, None, None);
        let mut parts = solve(g, cfg, &lim, &mut rng, h, None, None, r >= runs, cycles == 1);
        for c in 1..cycles {
            let hh = hierarchy(g, cfg, &mut rng, Some(&parts), None);
            parts = solve(g, cfg, &lim, &mut rng, hh, Some(&parts), None, false, c + 1 == cycles);
        }
        let m = metrics(g, &parts, cfg);
        let goal = |m: &crate::Metrics| if cfg.objective == Objective::Volume { m.volume } else { m.cut };
        let better = best
            .as_ref()
            .is_none_or(|(_, b)| (!m.balanced, m.empty_parts, goal(&m)) < (!b.balanced, b.empty_parts, goal(b)));
        if better {
            best = Some((parts, m));
        }
    }
    let (mut parts, mut m) = best.expect("one run");
    if cfg.contiguous {
        // Moving stray pieces can overfill a part: then move single boundary
        // vertices out of it, never one that would split it.
        contiguity::make_contiguous(g, &mut parts, cfg.k, &lim, cfg.fixed.as_deref())?;
        if g.ncon == 1 {
            contiguity::rebalance_contiguous(g, &mut parts, cfg.k, &lim, cfg.fixed.as_deref());
        }
        m = metrics(g, &parts, cfg);
        if !m.balanced {
            return Err(PartitionError::Infeasible(format!(
                "no contiguous partition into {} parts with every part at most {:.4} of the average was found (best: max imbalance {:.4})",
                cfg.k,
                1.0 + cfg.imbalance,
                m.max_imbalance()
            )));
        }
    }
    if m.balanced && m.empty_parts > 0 && fill_empty_parts(g, &mut parts, cfg) {
        // A loose limit lets refinement empty a part: each empty part takes
        // the vertex that costs least to move out of the heaviest part,
        // which only lowers the heaviest weight.
        m = metrics(g, &parts, cfg);
    }
    if !m.balanced || m.empty_parts > 0 {
        return Err(PartitionError::Infeasible(format!(
            "no partition into {} parts with every part at most {:.4} of the average was found (best: max imbalance {:.4}, {} empty parts)",
            cfg.k,
            1.0 + cfg.imbalance,
            m.max_imbalance(),
            m.empty_parts
        )));
    }
    Ok((parts, m))
}

/// Gives every empty part one vertex: the free vertex of the most populous
/// part whose edges into that part weigh least. Returns whether every part
/// is now used (false when too few free vertices exist).
fn fill_empty_parts(g: &Graph, parts: &mut [u32], cfg: &Config) -> bool {
    let k = cfg.k;
    let mut count = vec![0usize; k];
    for &p in parts.iter() {
        count[p as usize] += 1;
    }
    let free = |v: usize| cfg.fixed.as_ref().is_none_or(|f| f[v] == FREE);
    for e in 0..k {
        if count[e] > 0 {
            continue;
        }
        let Some(q) = (0..k).filter(|&q| count[q] > 1).max_by_key(|&q| (count[q], std::cmp::Reverse(q))) else {
            return false;
        };
        let inside = |v: usize| -> i64 {
            g.neighbours(v)
                .iter()
                .zip(g.edge_weights(v))
                .filter(|(&u, _)| parts[u as usize] as usize == q)
                .map(|(_, &w)| i64::from(w))
                .sum()
        };
        let Some(v) = (0..g.n()).filter(|&v| parts[v] as usize == q && free(v)).min_by_key(|&v| (inside(v), v)) else {
            return false;
        };
        parts[v] = e as u32;
        count[q] -= 1;
        count[e] += 1;
    }
    true
}

/// Repartitioning for dynamic load balancing: starting from `current`,
/// minimise cut + `alpha` · migrated weight (vertex weight of constraint 1
/// of the vertices whose part changes) within the balance limits. Returns
/// the new parts, their metrics and the migrated weight.
///
/// ```
/// use parsim_partition::{multilevel_kway, repartition, Config, Graph};
/// let g = Graph::from_edges(8, &(0..7).map(|i| (i, i + 1, 1)).collect::<Vec<_>>()).unwrap();
/// // Everything on part 0: unbalanced; repartitioning moves as little as it can.
/// let (parts, m, migrated) = repartition(&g, &Config::new(2), &[0; 8], 1).unwrap();
/// assert!(m.balanced);
/// assert_eq!(migrated, 4);
/// assert_eq!(parts.iter().filter(|&&p| p == 1).count(), 4);
/// ```
pub fn repartition(g: &Graph, cfg: &Config, current: &[u32], alpha: i64) -> Result<(Vec<u32>, crate::Metrics, i64)> {
    cfg.check(g)?;
    if current.len() != g.n() || current.iter().any(|&p| p as usize >= cfg.k) {
        return Err(PartitionError::BadArgument(format!(
            "the current partition must give each of the {} vertices a part below K = {}",
            g.n(),
            cfg.k
        )));
    }
    if alpha < 0 {
        return Err(PartitionError::BadArgument(format!("the migration cost {alpha} must be >= 0")));
    }
    let lim = Limits::new(cfg, &g.total_weights());
    let mut rng = StreamKey::new(cfg.seed).purpose("parsim.partition.repartition").stream();
    let home = Home { part: current, alpha };
    let cycles = if cfg.preset == Preset::Strong { 4 } else { 2 };
    let mut parts = current.to_vec();
    for _ in 0..cycles {
        parts = vcycle(g, cfg, &lim, &mut rng, Some(&parts), Some(home));
    }
    let m = metrics(g, &parts, cfg);
    if !m.balanced {
        return Err(PartitionError::Infeasible(format!(
            "no repartition within imbalance {:.4} was found (max imbalance {:.4})",
            cfg.imbalance,
            m.max_imbalance()
        )));
    }
    let migrated = (0..g.n()).filter(|&v| parts[v] != current[v]).map(|v| g.weights(v)[0]).sum();
    Ok((parts, m, migrated))
}

/// Improves `parts` of `g` in place by k-way greedy passes and k-way FM
/// (one vertex weight), keeping every part `p` at most `max[p]` (a part
/// already over its limit may only lose weight) and never moving the
/// vertices with `fixed[v] != FREE`. Returns the cut reduction. It is the
/// building block of refinement done elsewhere, e.g. by each rank of a
/// distributed partitioner on its own vertices with zero-weight pinned
/// copies of its neighbours' vertices.
///
/// ```
/// use parsim_partition::{refine_kway, Graph, FREE};
/// // A path 0 - 1 - 2 - 3 cut three times; vertex 3 is pinned to part 1.
/// let g = Graph::from_edges(4, &[(0, 1, 1), (1, 2, 1), (2, 3, 1)]).unwrap();
/// let mut parts = vec![0, 1, 0, 1];
/// let fixed = [FREE, FREE, FREE, 1];
/// let gain = refine_kway(&g, &mut parts, 2, &[3, 3], Some(&fixed), 1);
/// assert_eq!(gain, 2); // one cut edge is left
/// assert_eq!(parts[3], 1);
/// ```
pub fn refine_kway(g: &Graph, parts: &mut [u32], k: usize, max: &[i64], fixed: Option<&[u32]>, seed: u64) -> i64 {
    assert!(g.ncon == 1 && max.len() == k && parts.len() == g.n(), "refine_kway: one constraint, k limits, n parts");
    let lim = Limits { ncon: 1, max: max.to_vec() };
    let Tuning { passes, fm_finest, .. } = Tuning::of(Preset::Default);
    let mut rng = StreamKey::new(seed).purpose("parsim.partition.refine_kway").stream();
    let mut kw = refine::KWay::new(g, k, &lim, parts.to_vec(), None);
    kw.fixed = fixed;
    let gain = kw.greedy(passes, &mut rng) + kw.fm(fm_finest, &mut rng);
    parts.copy_from_slice(&kw.parts);
    gain
}

/// One coarsening step of the multilevel code on `g`, for coarsening done
/// elsewhere (each rank of a distributed partitioner coarsens its own
/// vertices with it): heavy-edge matching, or label-propagation clustering
/// on skewed-degree graphs (detected when `first`, remembered in
/// `clustering`) and where matching stalls; no cluster weighs more than
/// `maxw`. Returns the coarse id of every vertex and the number of coarse
/// vertices, or `None` when it would not shrink `g` by 5 %.
///
/// ```
/// use parsim_partition::{coarsen_map, Graph};
/// let g = Graph::from_edges(4, &[(0, 1, 5), (1, 2, 1), (2, 3, 5)]).unwrap();
/// let mut rng = parsim_core::rng::StreamKey::new(1).stream();
/// let (cmap, cn) = coarsen_map(&g, &mut rng, 2, true, &mut false).unwrap();
/// assert_eq!(cn, 2);
/// assert!(cmap[0] == cmap[1] && cmap[2] == cmap[3]);
/// ```
pub fn coarsen_map(
    g: &Graph,
    rng: &mut Stream,
    maxw: i64,
    first: bool,
    clustering: &mut bool,
) -> Option<(Vec<u32>, usize)> {
    assert!(g.ncon == 1, "coarsen_map: one vertex weight");
    coarsen_step(g, rng, &[maxw], None, first, clustering, coarsen::uniform_weight(g).is_some())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entries(levels: &[Level]) -> usize {
        levels.iter().map(|l| l.graph.adjncy.len()).sum()
    }

    #[test]
    fn a_random_graphs_hierarchy_holds_at_most_twice_its_edges_and_a_meshs_coarsens_as_before() {
        // G(n, m) with mean degree 10: its edges barely merge as it coarsens.
        let n = 20_000;
        let mut s = StreamKey::new(5).purpose("test").stream();
        let edges: Vec<(u32, u32, u32)> = (0..5 * n)
            .map(|_| (s.below(n as u64) as u32, s.below(n as u64) as u32, 1))
            .filter(|e| e.0 != e.1)
            .collect();
        let g = Graph::from_edges(n, &edges).unwrap();
        let mut rng = StreamKey::new(1).purpose("test.coarsen").stream();
        let levels = coarsen_all(&g, 2, &mut rng, None);
        assert!(!levels.is_empty());
        assert!(entries(&levels) <= 2 * g.adjncy.len(), "{} > 2 × {}", entries(&levels), g.adjncy.len());
        // A 2-D grid: coarsened down to the k-way target, as without a budget.
        let side = 150u32;
        let mut grid = Vec::new();
        for y in 0..side {
            for x in 0..side {
                if x + 1 < side {
                    grid.push((y * side + x, y * side + x + 1, 1));
                }
                if y + 1 < side {
                    grid.push((y * side + x, (y + 1) * side + x, 1));
                }
            }
        }
        let mesh = Graph::from_edges((side * side) as usize, &grid).unwrap();
        let levels = coarsen_all(&mesh, 2, &mut rng, None);
        let last = levels.last().expect("a level").graph.n();
        assert!(last <= coarsen_target(mesh.n(), 2), "the mesh stopped at {last} vertices");
    }
}
