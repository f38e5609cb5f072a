//! The strategies: each a pure function of the chunk loads (and the current
//! map), so every rank that computes one from the same loads gets the same
//! map.

use crate::Chunks;

/// The load of each rank under `owner`.
pub fn rank_loads(loads: &[f64], owner: &[u32], ranks: usize) -> Vec<f64> {
    let mut r = vec![0.0; ranks];
    for (c, &o) in owner.iter().enumerate() {
        r[o as usize] += loads[c];
    }
    r
}

/// λ = max / mean of the rank loads (1 when there is no load).
///
/// ```
/// assert_eq!(parsim_lb::imbalance(&[3.0, 1.0]), 1.5);
/// assert_eq!(parsim_lb::imbalance(&[0.0, 0.0]), 1.0);
/// ```
pub fn imbalance(rank_loads: &[f64]) -> f64 {
    let total: f64 = rank_loads.iter().sum();
    let max = rank_loads.iter().copied().fold(0.0, f64::max);
    if total > 0.0 {
        max * rank_loads.len() as f64 / total
    } else {
        1.0
    }
}

/// Static map: chunks along the Hilbert curve cut into `ranks` runs of
/// equal chunk counts (what a run starts with, and `off` keeps).
pub fn initial(chunks: &Chunks, ranks: usize) -> Vec<u32> {
    sfc(chunks, &vec![1.0; chunks.len()], ranks)
}

/// `sfc`: the chunks in Hilbert order cut into `ranks` consecutive runs of
/// (nearly) equal load: each cut lies at the chunk boundary closest to its
/// ideal prefix, so every run's load is within one chunk's load of the mean.
pub fn sfc(chunks: &Chunks, loads: &[f64], ranks: usize) -> Vec<u32> {
    let order = chunks.hilbert_order();
    let total: f64 = loads.iter().sum();
    let mut owner = vec![0u32; chunks.len()];
    let (mut prefix, mut part) = (0.0, 0usize);
    let n = order.len();
    for (i, &c) in order.iter().enumerate() {
        let w = loads[c as usize];
        // Move to the next run when the cut before this chunk is closer to the
        // ideal than the cut after it, keeping enough chunks for the rest.
        while part + 1 < ranks {
            let ideal = total * (part + 1) as f64 / ranks as f64;
            let must = n - i <= ranks - 1 - part;
            if must || (prefix > 0.0 && (ideal - prefix) < (prefix + w - ideal)) {
                part += 1;
            } else {
                break;
            }
        }
        owner[c as usize] = part as u32;
        prefix += w;
    }
    owner
}

/// `greedy` (Charm++'s GreedyLB): heaviest chunk first onto the least loaded
/// rank, ignoring where chunks are now. The max load is at most mean + the
/// heaviest chunk (and within 4/3 of the optimum).
pub fn greedy(loads: &[f64], ranks: usize) -> Vec<u32> {
    let mut order: Vec<usize> = (0..loads.len()).collect();
    order.sort_by(|&a, &b| loads[b].total_cmp(&loads[a]).then(a.cmp(&b)));
    let mut load = vec![0.0; ranks];
    let mut owner = vec![0u32; loads.len()];
    for c in order {
        let r = argmin(&load);
        owner[c] = r as u32;
        load[r] += loads[c];
    }
    owner
}

/// Renames the parts of `new` so that as much load as possible stays on
/// the rank that holds it under `current` (a greedy maximum-weight
/// matching of parts to ranks): the balance is unchanged, the migration
/// smaller.
pub fn relabel(new: &[u32], current: &[u32], loads: &[f64], ranks: usize) -> Vec<u32> {
    let mut overlap = vec![0.0; ranks * ranks];
    for c in 0..new.len() {
        overlap[new[c] as usize * ranks + current[c] as usize] += loads[c].max(0.0) + 1e-12;
    }
    let mut pairs: Vec<(usize, usize)> = (0..ranks).flat_map(|p| (0..ranks).map(move |r| (p, r))).collect();
    pairs.sort_by(|a, b| overlap[b.0 * ranks + b.1].total_cmp(&overlap[a.0 * ranks + a.1]).then(a.cmp(b)));
    let (mut to, mut taken) = (vec![u32::MAX; ranks], vec![false; ranks]);
    for (p, r) in pairs {
        if to[p] == u32::MAX && !taken[r] {
            to[p] = r as u32;
            taken[r] = true;
        }
    }
    new.iter().map(|&p| to[p as usize]).collect()
}

/// `refine` (Charm++'s RefineLB): from the current map, move single chunks
/// from the most to the least loaded rank while that lowers the pair's
/// maximum, until λ ≤ `tolerance` or no move helps. Never raises the max.
pub fn refine(loads: &[f64], owner: &[u32], ranks: usize, tolerance: f64) -> Vec<u32> {
    let mut owner = owner.to_vec();
    let mut load = rank_loads(loads, &owner, ranks);
    let mean = load.iter().sum::<f64>() / ranks as f64;
    for _ in 0..loads.len() {
        let (h, l) = (argmax(&load), argmin(&load));
        if load[h] <= tolerance * mean || h == l {
            break;
        }
        let Some(c) = evening(loads, &owner, &load, h, l, |_| true) else { break };
        owner[c] = l as u32;
        load[h] -= loads[c];
        load[l] += loads[c];
    }
    owner
}

/// The ranks adjacent to each rank (owning adjacent chunks), ascending.
pub fn rank_graph(chunks: &Chunks, owner: &[u32], ranks: usize) -> Vec<Vec<u32>> {
    let mut g = vec![Vec::new(); ranks];
    for c in 0..chunks.len() {
        for &d in chunks.neighbours(c) {
            let (a, b) = (owner[c], owner[d as usize]);
            if a != b {
                g[a as usize].push(b);
            }
        }
    }
    for nb in &mut g {
        nb.sort_unstable();
        nb.dedup();
    }
    g
}

/// `diffusive`: first-order diffusion on the rank graph (Cybenko:
/// x ← x − α·L·x with α = 1/(1 + max degree), iterated until the loads
/// are within 1 % of each other or 200 iterations) gives the flow between
/// each pair of neighbouring ranks; the flow is then realised by moving
/// chunks on the boundary between them while a move leaves less of the
/// flow owed than before. Only neighbouring ranks exchange chunks, so the map stays
/// local; applied repeatedly it converges to a balanced map.
pub fn diffusive(chunks: &Chunks, loads: &[f64], owner: &[u32], ranks: usize) -> Vec<u32> {
    let mut owner = owner.to_vec();
    let g = rank_graph(chunks, &owner, ranks);
    let mut x = rank_loads(loads, &owner, ranks);
    let mean = x.iter().sum::<f64>() / ranks as f64;
    let alpha = 1.0 / (1 + g.iter().map(Vec::len).max().unwrap_or(0)) as f64;
    // flow[i][k]: total load to move from i to g[i][k].
    let mut flow: Vec<Vec<f64>> = g.iter().map(|nb| vec![0.0; nb.len()]).collect();
    for _ in 0..200 {
        if x.iter().all(|&v| (v - mean).abs() <= 0.01 * mean) {
            break;
        }
        let mut next = x.clone();
        for i in 0..ranks {
            for (k, &j) in g[i].iter().enumerate() {
                let f = alpha * (x[i] - x[j as usize]);
                if f > 0.0 {
                    flow[i][k] += f;
                    next[i] -= f;
                    next[j as usize] += f;
                }
            }
        }
        x = next;
    }
    // Net flows, realised by boundary chunks (largest first, within the flow).
    let mut load = rank_loads(loads, &owner, ranks);
    // Sources first (the heaviest ranks), so a rank passes load on only
    // after it has received what flows into it.
    let mut sources: Vec<usize> = (0..ranks).collect();
    sources.sort_by(|&a, &b| load[b].total_cmp(&load[a]).then(a.cmp(&b)));
    for i in sources {
        for (k, &j) in g[i].iter().enumerate() {
            let back = g[j as usize].binary_search(&(i as u32)).map_or(0.0, |kk| flow[j as usize][kk]);
            let mut owed = flow[i][k] - back;
            while owed > 0.0 {
                // A move that leaves less owed than it found (overshooting
                // by less than it corrects), the one closest to the flow.
                let best = (0..chunks.len())
                    .filter(|&c| {
                        owner[c] as usize == i
                            && loads[c] > 0.0
                            && loads[c] < 2.0 * owed
                            && chunks.neighbours(c).iter().any(|&d| owner[d as usize] == j)
                    })
                    .min_by(|&a, &b| (owed - loads[a]).abs().total_cmp(&(owed - loads[b]).abs()).then(a.cmp(&b)));
                let Some(c) = best else { break };
                owner[c] = j;
                load[i] -= loads[c];
                load[j as usize] += loads[c];
                owed -= loads[c];
            }
        }
    }
    owner
}

/// `steal`: decentralised work stealing at a step boundary. Each rank below
/// the mean (lightest first) takes boundary chunks from its most loaded
/// neighbouring rank above the mean, each the chunk that best evens the
/// two, while that lowers the pair's maximum. A rank sees only its
/// neighbours' loads; the result is computed identically everywhere.
pub fn steal(chunks: &Chunks, loads: &[f64], owner: &[u32], ranks: usize) -> Vec<u32> {
    let mut owner = owner.to_vec();
    let mut load = rank_loads(loads, &owner, ranks);
    let mean = load.iter().sum::<f64>() / ranks as f64;
    let mut thieves: Vec<usize> = (0..ranks).collect();
    thieves.sort_by(|&a, &b| load[a].total_cmp(&load[b]).then(a.cmp(&b)));
    for r in thieves {
        for _ in 0..chunks.len() {
            if load[r] >= mean {
                break;
            }
            let g = rank_graph(chunks, &owner, ranks);
            let Some(&v) = g[r]
                .iter()
                .filter(|&&q| load[q as usize] > mean)
                .max_by(|&&a, &&b| load[a as usize].total_cmp(&load[b as usize]).then(b.cmp(&a)))
            else {
                break;
            };
            let v = v as usize;
            let on_border = |c: usize| chunks.neighbours(c).iter().any(|&d| owner[d as usize] as usize == r);
            let Some(c) = evening(loads, &owner, &load, v, r, on_border) else { break };
            owner[c] = r as u32;
            load[v] -= loads[c];
            load[r] += loads[c];
        }
    }
    owner
}

/// What `graph` minimises and within which bound.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct GraphCost {
    /// The cost of migrating the mean chunk, in cut chunk edges.
    pub alpha: f64,
    /// The allowed imbalance ε per constraint.
    pub imbalance: f64,
    /// The partitioner's seed.
    pub seed: u64,
}

/// `graph`: the chunk graph repartitioned by `parsim-partition` (multilevel,
/// minimising cut + α·migrated load) within (1 + ε) of the mean for
/// every constraint. `loads` holds `ncon` constraints per chunk
/// (chunk-major). When no map within the bound exists the bound is
/// doubled, up to four times; then the current map is kept.
pub fn graph(chunks: &Chunks, loads: &[f64], ncon: usize, owner: &[u32], ranks: usize, cost: GraphCost) -> Vec<u32> {
    use parsim_partition::{repartition, Config, Graph};
    let n = chunks.len();
    if ranks <= 1 || n < ranks {
        return owner.to_vec();
    }
    // Integer weights: the mean chunk weighs 1000 per constraint.
    let mut vwgt = vec![0i64; n * ncon];
    for k in 0..ncon {
        let total: f64 = (0..n).map(|c| loads[c * ncon + k]).sum();
        for c in 0..n {
            let w = if total > 0.0 { loads[c * ncon + k] / total * 1000.0 * n as f64 } else { 1000.0 };
            vwgt[c * ncon + k] = w.round() as i64;
        }
    }
    let mut edges: Vec<(u32, u32, u32)> = Vec::new();
    for c in 0..n {
        for &d in chunks.neighbours(c) {
            if (c as u32) < d {
                edges.push((c as u32, d, 0));
            }
        }
    }
    // A cut edge costs `unit` (10⁴, less where the edges would pass the
    // partitioner's 32-bit total); migrating the mean chunk costs α·unit.
    let unit = (parsim_partition::MAX_TOTAL_EDGE_WEIGHT / edges.len().max(1) as u64).min(10_000) as u32;
    for e in &mut edges {
        e.2 = unit;
    }
    let Ok(mut g) = Graph::from_edges(n, &edges) else { return owner.to_vec() };
    g.ncon = ncon;
    g.vwgt = vwgt;
    let mut cfg = Config::new(ranks);
    cfg.seed = cost.seed;
    cfg.imbalance = cost.imbalance;
    let a = (cost.alpha * f64::from(unit) / 1000.0).round().max(0.0) as i64;
    for _ in 0..5 {
        if let Ok((parts, _, _)) = repartition(&g, &cfg, owner, a) {
            return parts;
        }
        cfg.imbalance = cfg.imbalance * 2.0 + 0.01;
    }
    owner.to_vec()
}

/// The chunk of rank `from` (among those `ok` allows) whose move to rank
/// `to` best evens the two, strictly lowering their maximum.
fn evening(
    loads: &[f64],
    owner: &[u32],
    load: &[f64],
    from: usize,
    to: usize,
    ok: impl Fn(usize) -> bool,
) -> Option<usize> {
    let gap = load[from] - load[to];
    (0..loads.len())
        .filter(|&c| owner[c] as usize == from && loads[c] > 0.0 && loads[c] < gap && ok(c))
        .min_by(|&a, &b| (gap - 2.0 * loads[a]).abs().total_cmp(&(gap - 2.0 * loads[b]).abs()).then(a.cmp(&b)))
}

fn argmax(v: &[f64]) -> usize {
    let mut b = 0;
    for i in 1..v.len() {
        if v[i] > v[b] {
            b = i;
        }
    }
    b
}

fn argmin(v: &[f64]) -> usize {
    let mut b = 0;
    for i in 1..v.len() {
        if v[i] < v[b] {
            b = i;
        }
    }
    b
}
