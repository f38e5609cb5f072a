//! Multilevel k-way partitioning: coarsen (heavy-edge matching, or
//! label-propagation clustering where matching stalls), partition the
//! coarsest graph by recursive bisection (greedy growing + FM, several
//! tries), then project back level by level with k-way refinement.

mod bisect;
mod coarsen;
mod refine;

use parsim_core::rng::{Stream, StreamKey};

use crate::error::{PartitionError, Result};
use crate::graph::Graph;
use crate::partition::{metrics, Config, Limits, Preset};

pub(crate) use bisect::subgraph;
pub(crate) use coarsen::permutation;

struct Level {
    graph: Graph,
    /// Coarse id of each vertex of the finer level.
    cmap: Vec<u32>,
}

/// Coarsens `g`; with `part`, only vertices of the same part are merged
/// (an iterated V-cycle keeps its partition on every level).
fn coarsen_all(g: &Graph, k: usize, rng: &mut Stream, part: Option<&[u32]>) -> Vec<Level> {
    let coarsen_to = (30 * k).max(160);
    let total = g.total_weights();
    let maxw: Vec<i64> = total.iter().map(|&t| ((1.5 * t as f64 / coarsen_to as f64).ceil() as i64).max(1)).collect();
    let mut levels: Vec<Level> = Vec::new();
    let mut cur_part: Option<Vec<u32>> = part.map(<[u32]>::to_vec);
    let mut power_law = false;
    loop {
        let cur = levels.last().map_or(g, |l| &l.graph);
        if cur.n() <= coarsen_to {
            break;
        }
        let p = cur_part.as_deref();
        // Skewed degrees (social, web graphs): clustering coarsens along
        // communities, where matching merges across them.
        let avg = cur.adjncy.len() as f64 / cur.n().max(1) as f64;
        let maxdeg = (0..cur.n()).map(|v| cur.degree(v)).max().unwrap_or(0) as f64;
        let skewed = levels.is_empty() && maxdeg > 20.0 * avg.max(1.0);
        let (mut cmap, mut cn) = if skewed || power_law {
            power_law = true;
            coarsen::cluster(cur, rng, &maxw, p)
        } else {
            coarsen::heavy_edge_matching(cur, rng, &maxw, p)
        };
        if cn as f64 > 0.85 * cur.n() as f64 && !power_law {
            // Matching stalls (stars, power-law hubs): cluster instead.
            let (c2, n2) = coarsen::cluster(cur, rng, &maxw, p);
            if n2 < cn {
                (cmap, cn) = (c2, n2);
            }
        }
        if cn as f64 > 0.95 * cur.n() as f64 && power_law {
            // Clusters stopped shrinking: match what is left.
            (cmap, cn) = coarsen::heavy_edge_matching(cur, rng, &maxw, p);
        }
        if cn as f64 > 0.95 * cur.n() as f64 {
            break;
        }
        let graph = coarsen::contract(cur, &cmap, cn);
        if let Some(p) = cur_part.as_mut() {
            let mut coarse = vec![0u32; cn];
            for (v, &c) in cmap.iter().enumerate() {
                coarse[c as usize] = p[v];
            }
            *p = coarse;
        }
        levels.push(Level { graph, cmap });
    }
    levels
}

/// One multilevel run; with `start`, an iterated V-cycle that keeps and improves that partition.
fn vcycle(g: &Graph, cfg: &Config, lim: &Limits, rng: &mut Stream, start: Option<&[u32]>) -> Vec<u32> {
    let k = cfg.k;
    let levels = coarsen_all(g, k, rng, start);
    let coarsest = levels.last().map_or(g, |l| &l.graph);
    let tries = match cfg.preset {
        Preset::Fast => 2,
        Preset::Default => 12,
        Preset::Strong => 16,
    };
    let fractions: Vec<f64> = (0..k).map(|p| cfg.target(p)).collect();
    // Bisections get part of the imbalance; k-way refinement the rest.
    let depth = (k as f64).log2().ceil().max(1.0);
    let eps = (1.0 + cfg.imbalance).powf(1.0 / depth) - 1.0;
    let mut parts = vec![0u32; coarsest.n()];
    match start {
        None => {
            let ids: Vec<u32> = (0..coarsest.n() as u32).collect();
            bisect::recursive_bisection(coarsest, &ids, 0, &fractions, eps, tries, rng, &mut parts);
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
            parts = fine;
        }
    }
    // An iterated cycle starts from a good partition: fewer passes do.
    let passes = if cfg.preset == Preset::Fast || start.is_some() { 4 } else { 10 };
    let fm_rounds = match (cfg.preset, start.is_some()) {
        (Preset::Strong, _) => 6,
        (_, true) => 2,
        _ => 3,
    };
    // Refine on the coarsest graph and on every finer one.
    for i in (0..=levels.len()).rev() {
        let graph = if i == 0 { g } else { &levels[i - 1].graph };
        if i < levels.len() {
            let cmap = &levels[i].cmap;
            parts = cmap.iter().map(|&c| parts[c as usize]).collect();
        }
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
        let mut kw = refine::KWay::new(graph, k, &level_lim, parts);
        kw.rebalance();
        kw.greedy(passes, rng);
        kw.rebalance();
        if cfg.preset != Preset::Fast {
            // The finest level is the most expensive and gains least from FM rounds.
            let finest = if cfg.preset == Preset::Strong { fm_rounds } else { 1 };
            kw.fm(if i == 0 { finest } else { fm_rounds }, rng);
        }
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
                "a vertex of weight {heaviest} (constraint {}) does not fit in any part (limit {roomiest} at imbalance {})",
                c + 1,
                cfg.imbalance
            )));
        }
    }
    if cfg.k == 1 {
        let parts = vec![0; g.n()];
        let m = metrics(g, &parts, cfg);
        return Ok((parts, m));
    }
    let (runs, cycles) = match cfg.preset {
        Preset::Fast => (1, 1),
        Preset::Default => (1, 2),
        Preset::Strong => (6, 3),
    };
    let mut best: Option<(Vec<u32>, crate::Metrics)> = None;
    // Extra runs only while no balanced partition has been found (tight
    // multi-constraint instances), before calling the instance infeasible.
    for r in 0..runs + 4 {
        if r >= runs && best.as_ref().is_some_and(|(_, m)| m.balanced && m.empty_parts == 0) {
            break;
        }
        let mut rng = StreamKey::new(cfg.seed).purpose("parsim.partition.multilevel").with(r).stream();
        let mut parts = vcycle(g, cfg, &lim, &mut rng, None);
        for _ in 1..cycles {
            parts = vcycle(g, cfg, &lim, &mut rng, Some(&parts));
        }
        let m = metrics(g, &parts, cfg);
        let better = best
            .as_ref()
            .is_none_or(|(_, b)| (!m.balanced, m.empty_parts, m.cut) < (!b.balanced, b.empty_parts, b.cut));
        if better {
            best = Some((parts, m));
        }
    }
    let (parts, m) = best.expect("one run");
    if !m.balanced || m.empty_parts > 0 {
        return Err(PartitionError::Infeasible(format!(
            "no partition into {} parts within imbalance {} was found (best: max imbalance {:.4}, {} empty parts)",
            cfg.k,
            cfg.imbalance,
            m.max_imbalance(),
            m.empty_parts
        )));
    }
    Ok((parts, m))
}
