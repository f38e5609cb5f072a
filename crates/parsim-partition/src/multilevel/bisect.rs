//! Initial partitioning of the coarsest graph: recursive bisection, each
//! bisection the best of several greedy graph growings refined by
//! Fiduccia–Mattheyses.

use std::collections::BinaryHeap;

use parsim_core::rng::Stream;

use crate::graph::Graph;

/// Weight limits of the two sides, per constraint.
struct Sides {
    max: [Vec<i64>; 2],
}

fn side_weights(g: &Graph, side: &[u8]) -> [Vec<i64>; 2] {
    let mut w = [vec![0i64; g.ncon], vec![0i64; g.ncon]];
    for v in 0..g.n() {
        for (c, x) in g.weights(v).iter().enumerate() {
            w[side[v] as usize][c] += x;
        }
    }
    w
}

/// How far the sides are over their limits (0 when balanced).
fn excess(w: &[Vec<i64>; 2], s: &Sides) -> i64 {
    (0..2).map(|k| w[k].iter().zip(&s.max[k]).map(|(a, m)| (a - m).max(0)).sum::<i64>()).sum()
}

pub(crate) fn cut2(g: &Graph, side: &[u8]) -> i64 {
    let mut c = 0;
    for v in 0..g.n() {
        for (&u, &w) in g.neighbours(v).iter().zip(g.edge_weights(v)) {
            if side[u as usize] != side[v] {
                c += i64::from(w);
            }
        }
    }
    c / 2
}

/// Vertex `v`'s share of the total weight, averaged over the constraints.
fn load(g: &Graph, total: &[i64], v: usize) -> f64 {
    g.weights(v).iter().zip(total).map(|(&w, &t)| if t > 0 { w as f64 / t as f64 } else { 0.0 }).sum::<f64>()
        / g.ncon as f64
}

/// The vertices still on side 1 while a side grows, in id order: a Fenwick
/// tree of 0/1 counts, so that picking the r-th of them is O(log n) (a graph
/// with many isolated vertices starts a new component at nearly every step).
struct Remaining {
    tree: Vec<u32>,
    len: usize,
}

impl Remaining {
    fn all(n: usize) -> Remaining {
        // Node i (1-based) counts the ids in (i - lowbit(i), i].
        let tree = (0..=n).map(|i| (i & i.wrapping_neg()) as u32).collect();
        Remaining { tree, len: n }
    }

    fn len(&self) -> usize {
        self.len
    }

    fn remove(&mut self, v: usize) {
        let mut i = v + 1;
        while i < self.tree.len() {
            self.tree[i] -= 1;
            i += i & i.wrapping_neg();
        }
        self.len -= 1;
    }

    /// The `r`-th remaining id (0-based, in id order); `r < len()`.
    fn select(&self, mut r: usize) -> usize {
        let n = self.tree.len() - 1;
        let mut pos = 0;
        let mut step = n.next_power_of_two();
        while step > 0 {
            let next = pos + step;
            if next <= n && (self.tree[next] as usize) <= r {
                pos = next;
                r -= self.tree[next] as usize;
            }
            step >>= 1;
        }
        pos
    }
}

/// Grows side 0 from a random vertex, always adding the vertex that most
/// reduces the cut, until side 0 holds `frac` of the (normalised) weight.
fn grow(g: &Graph, frac: f64, rng: &mut Stream) -> Vec<u8> {
    let n = g.n();
    let total = g.total_weights();
    let load = |v: usize| load(g, &total, v);
    let mut side = vec![1u8; n];
    let mut have = 0.0;
    let mut heap: BinaryHeap<(i64, u32)> = BinaryHeap::new();
    let mut rest = Remaining::all(n);
    let mut g1 = vec![0i64; n]; // connection to side 0 minus to side 1, for vertices on side 1
    for v in 0..n {
        g1[v] = -g.edge_weights(v).iter().map(|&w| i64::from(w)).sum::<i64>();
    }
    while have < frac {
        let v = loop {
            match heap.pop() {
                Some((gv, v)) if side[v as usize] == 1 && gv == g1[v as usize] => break Some(v as usize),
                Some(_) => continue,
                None => break None,
            }
        };
        let v = match v {
            Some(v) => v,
            None => {
                // A new component (or the start): a random vertex still on side 1.
                if rest.len() == 0 {
                    break;
                }
                rest.select(rng.below(rest.len() as u64) as usize)
            }
        };
        side[v] = 0;
        rest.remove(v);
        have += load(v);
        for (&u, &w) in g.neighbours(v).iter().zip(g.edge_weights(v)) {
            let u = u as usize;
            if side[u] == 1 {
                g1[u] += 2 * i64::from(w);
                heap.push((g1[u], u as u32));
            }
        }
    }
    side
}

/// Fiduccia–Mattheyses passes: move the best-gain vertex whose move keeps
/// the balance (or improves it), lock it, and roll back to the best state.
pub(crate) fn fm(g: &Graph, side: &mut [u8], s_max: &[Vec<i64>; 2], passes: usize) -> i64 {
    fm_pinned(g, side, s_max, passes, None).1
}

/// [`fm`], never moving the vertices `pinned` flags; returns the cut
/// before and after.
pub(crate) fn fm_pinned(
    g: &Graph,
    side: &mut [u8],
    s_max: &[Vec<i64>; 2],
    passes: usize,
    pinned: Option<&[bool]>,
) -> (i64, i64) {
    let n = g.n();
    let s = Sides { max: s_max.clone() };
    let mut w = side_weights(g, side);
    // Gains (external − internal edge weight) are computed once and kept
    // exact through every move and undo; a vertex with an edge across (gain
    // above its floor, minus its edge weight) or none at all is a candidate.
    // One sweep over the rows gives each vertex's external and total edge
    // weight, hence its gain, its floor and the cut.
    let (mut gains, mut floor) = (Vec::with_capacity(n), Vec::with_capacity(n));
    let mut across = 0i64;
    for v in 0..n {
        let (mut ext, mut tot) = (0i64, 0i64);
        for (&u, &ew) in g.neighbours(v).iter().zip(g.edge_weights(v)) {
            tot += i64::from(ew);
            if side[u as usize] != side[v] {
                ext += i64::from(ew);
            }
        }
        gains.push(2 * ext - tot);
        floor.push(-tot);
        across += ext;
    }
    let mut cut = across / 2;
    let initial = cut;
    let mut locked = vec![false; n];
    let mut moves: Vec<u32> = Vec::new();
    // Moves `v` to the other side: its gain flips, its neighbours' change by twice the edge.
    let flip = |v: usize, side: &mut [u8], gains: &mut [i64], w: &mut [Vec<i64>; 2]| {
        let (from, to) = (side[v] as usize, 1 - side[v] as usize);
        side[v] = to as u8;
        gains[v] = -gains[v];
        for c in 0..g.ncon {
            w[from][c] -= g.weights(v)[c];
            w[to][c] += g.weights(v)[c];
        }
        for (&u, &ew) in g.neighbours(v).iter().zip(g.edge_weights(v)) {
            let u = u as usize;
            gains[u] += if side[u] as usize == to { -2 * i64::from(ew) } else { 2 * i64::from(ew) };
        }
    };
    for _ in 0..passes {
        let mut heaps = [BinaryHeap::new(), BinaryHeap::new()];
        for v in 0..n {
            if gains[v] > floor[v] || g.degree(v) == 0 {
                heaps[side[v] as usize].push((gains[v], v as u32));
            }
        }
        match pinned {
            Some(p) => locked.copy_from_slice(p),
            None => locked.fill(false),
        }
        moves.clear();
        let (start_cut, start_ex) = (cut, excess(&w, &s));
        let (mut best_cut, mut best_ex, mut best_len) = (cut, start_ex, 0usize);
        let limit = (n / 100).clamp(25, 100);
        let mut since_best = 0;
        loop {
            // The best admissible move from either side.
            let mut pick: Option<(i64, usize)> = None;
            for from in 0..2 {
                while let Some(&(gv, v)) = heaps[from].peek() {
                    let v = v as usize;
                    if locked[v] || side[v] as usize != from || gains[v] != gv {
                        heaps[from].pop();
                        continue;
                    }
                    let to = 1 - from;
                    let ok = (0..g.ncon).all(|c| w[to][c] + g.weights(v)[c] <= s.max[to][c])
                        || (0..g.ncon).any(|c| w[from][c] > s.max[from][c]);
                    if !ok {
                        break;
                    }
                    if pick.is_none_or(|(bg, _)| gv > bg) {
                        pick = Some((gv, v));
                    }
                    break;
                }
            }
            let Some((gv, v)) = pick else { break };
            heaps[side[v] as usize].pop();
            locked[v] = true;
            flip(v, side, &mut gains, &mut w);
            cut -= gv;
            moves.push(v as u32);
            for &u in g.neighbours(v) {
                let u = u as usize;
                if !locked[u] {
                    heaps[side[u] as usize].push((gains[u], u as u32));
                }
            }
            let ex = excess(&w, &s);
            if ex < best_ex || (ex == best_ex && cut < best_cut) {
                (best_cut, best_ex, best_len) = (cut, ex, moves.len());
                since_best = 0;
            } else {
                since_best += 1;
                if since_best > limit {
                    break;
                }
            }
        }
        // Undo the moves after the best prefix.
        for &v in moves[best_len..].iter().rev() {
            flip(v as usize, side, &mut gains, &mut w);
        }
        cut = best_cut;
        if best_cut >= start_cut && best_ex >= start_ex {
            break;
        }
    }
    (initial, cut)
}

/// The limits of a bisection into fractions `frac` and 1 − `frac` with imbalance `eps`.
fn limits(g: &Graph, frac: f64, eps: f64) -> [Vec<i64>; 2] {
    let total = g.total_weights();
    let lim = |f: f64| total.iter().map(|&t| ((1.0 + eps) * (f * t as f64).ceil() + 1e-9).floor() as i64).collect();
    [lim(frac), lim(1.0 - frac)]
}

/// Side 0 is the prefix of `order` holding `frac` of the (normalised) weight.
fn split_order(g: &Graph, order: &[u32], frac: f64) -> Vec<u8> {
    let total = g.total_weights();
    let load = |v: usize| load(g, &total, v);
    let mut side = vec![1u8; g.n()];
    let mut have = 0.0;
    for &v in order {
        let v = v as usize;
        if have + 0.5 * load(v) > frac {
            break;
        }
        side[v] = 0;
        have += load(v);
    }
    side
}

/// A bisection of a graph with more vertices than this tries fewer
/// growings: `tries` × this many vertices in all (at least one try).
const TRIES_VERTICES: usize = 3000;

/// A bisection of a graph with more vertices than this (coarsening stalled)
/// does not try a spectral split.
const SPECTRAL_VERTICES: usize = 8 * TRIES_VERTICES;

/// The best of `tries` grown-and-refined bisections (balanced first, then the smallest cut).
pub(crate) fn bisect(g: &Graph, frac: f64, eps: f64, tries: usize, rng: &mut Stream) -> Vec<u8> {
    // Where coarsening stalled (a random graph's edges do not merge), the
    // "coarsest" graph can hold 10^5 vertices: fewer grown tries there,
    // whose cost grows with the graph while what they add does not.
    let tries = (tries * TRIES_VERTICES / g.n().max(1)).clamp(1, tries.max(1));
    let lim = limits(g, frac, eps);
    let s = Sides { max: lim.clone() };
    let mut best: Option<(i64, i64, Vec<u8>)> = None;
    // One more try from the Fiedler vector's order (two when the sides
    // differ in size: its low end on side 0, then its high end) sees the
    // global structure greedy growing misses: the communities of a social
    // graph, the long axis of a mesh. A rough vector (30 Lanczos steps,
    // periodically reorthogonalised) does; 45 steps cut 2.6 % more
    // (BENCHMARKS.md), a closer vector being a worse start here.
    // Not where coarsening stalled far above the size it aims at: there the
    // graph has no structure for the vector to find (a random graph's
    // edges do not merge), and its Lanczos steps and their vectors cost
    // 30 passes over the graph and 30 × 8 bytes a vertex (at 10⁷ agents,
    // 12 % of a run's samples).
    let spectral = if g.n() > 2 && g.n() <= SPECTRAL_VERTICES {
        let x = crate::spectral::fiedler_steps(g, rand_core::RngCore::next_u64(rng), 30, 0);
        let mut order: Vec<u32> = (0..g.n() as u32).collect();
        order.sort_by(|&a, &b| x[a as usize].total_cmp(&x[b as usize]).then(a.cmp(&b)));
        if (frac - 0.5).abs() < 1e-9 {
            // Halves: the high end's split is the low end's, sides swapped.
            vec![order]
        } else {
            let rev: Vec<u32> = order.iter().rev().copied().collect();
            vec![order, rev]
        }
    } else {
        Vec::new()
    };
    for t in 0..tries.max(1) + spectral.len() {
        let mut side = match spectral.get(t) {
            Some(order) => split_order(g, order, frac),
            None => grow(g, frac, rng),
        };
        let cut = fm(g, &mut side, &lim, 6);
        let ex = excess(&side_weights(g, &side), &s);
        if best.as_ref().is_none_or(|(be, bc, _)| (ex, cut) < (*be, *bc)) {
            best = Some((ex, cut, side));
        }
    }
    best.expect("at least one try").2
}

/// Graphs at most this large are bisected directly; larger ones are first
/// coarsened to about this size.
const BISECT_COARSEST: usize = 100;

/// Multilevel bisection: the best of `ncuts` hierarchies, each coarsening
/// `g` to about [`BISECT_COARSEST`] vertices, bisecting the coarsest graph
/// (the best of its share of `tries`), then projecting the sides back level
/// by level with FM refinement at each.
pub(crate) fn ml_bisect(g: &Graph, frac: f64, eps: f64, tries: usize, ncuts: usize, rng: &mut Stream) -> Vec<u8> {
    if g.n() <= BISECT_COARSEST {
        return bisect(g, frac, eps, tries, rng);
    }
    let ncuts = ncuts.max(1);
    let lim = limits(g, frac, eps);
    let s = Sides { max: lim.clone() };
    let mut best: Option<(i64, i64, Vec<u8>)> = None;
    for _ in 0..ncuts {
        let side = ml_bisect_once(g, frac, eps, tries.div_ceil(ncuts), rng, &lim);
        let ex = excess(&side_weights(g, &side), &s);
        let cut = cut2(g, &side);
        if best.as_ref().is_none_or(|(be, bc, _)| (ex, cut) < (*be, *bc)) {
            best = Some((ex, cut, side));
        }
    }
    best.expect("one cut").2
}

fn ml_bisect_once(g: &Graph, frac: f64, eps: f64, tries: usize, rng: &mut Stream, lim: &[Vec<i64>; 2]) -> Vec<u8> {
    let total = g.total_weights();
    let maxw: Vec<i64> =
        total.iter().map(|&t| ((1.5 * t as f64 / BISECT_COARSEST as f64).ceil() as i64).max(1)).collect();
    let mut levels: Vec<(Graph, Vec<u32>)> = Vec::new();
    let mut power_law = false;
    let mut budget = super::Budget::of(g, 1);
    loop {
        let cur = levels.last().map_or(g, |l| &l.0);
        if cur.n() <= BISECT_COARSEST || !budget.allows(cur) {
            break;
        }
        let w0 = super::coarsen::uniform_weight(cur);
        let step = super::coarsen_step(cur, rng, &maxw, None, levels.is_empty(), &mut power_law, w0.is_some());
        let Some((cmap, cn)) = step else { break };
        let coarse = super::coarsen::contract(cur, &cmap, cn, w0);
        budget.add(&coarse, cur);
        levels.push((coarse, cmap));
    }
    let mut side = bisect(levels.last().map_or(g, |l| &l.0), frac, eps, tries, rng);
    for i in (0..levels.len()).rev() {
        let fine = if i == 0 { g } else { &levels[i - 1].0 };
        side = levels[i].1.iter().map(|&c| side[c as usize]).collect();
        let _ = fm(fine, &mut side, lim, 4);
    }
    side
}

/// The subgraph induced by the vertices with `side[v] == which`, and their ids in `g`.
pub(crate) fn subgraph(g: &Graph, side: &[u8], which: u8) -> (Graph, Vec<u32>) {
    let ids: Vec<u32> = (0..g.n() as u32).filter(|&v| side[v as usize] == which).collect();
    let mut local = vec![u32::MAX; g.n()];
    for (i, &v) in ids.iter().enumerate() {
        local[v as usize] = i as u32;
    }
    let mut xadj = vec![0u64];
    let (mut adjncy, mut adjwgt, mut vwgt) = (Vec::new(), Vec::new(), Vec::new());
    for &v in &ids {
        let v = v as usize;
        vwgt.extend_from_slice(g.weights(v));
        for (&u, &w) in g.neighbours(v).iter().zip(g.edge_weights(v)) {
            if side[u as usize] == which {
                adjncy.push(local[u as usize]);
                adjwgt.push(w);
            }
        }
        xadj.push(adjncy.len() as u64);
    }
    (Graph { xadj, adjncy, adjwgt, ncon: g.ncon, vwgt, vsize: None, coords: None, dim: 0 }, ids)
}

/// Recursive bisection of `g` into parts `first..first + fractions.len()`
/// with the given target fractions; part ids go to `out` (indexed by `ids`).
#[allow(clippy::too_many_arguments)]
pub(crate) fn recursive_bisection(
    g: &Graph,
    ids: &[u32],
    first: u32,
    fractions: &[f64],
    eps: f64,
    (tries, ncuts): (usize, usize),
    rng: &mut Stream,
    out: &mut [u32],
) {
    let k = fractions.len();
    if k == 1 || g.n() == 0 {
        for &v in ids {
            out[v as usize] = first;
        }
        return;
    }
    let k1 = k / 2;
    let total: f64 = fractions.iter().sum();
    let left: f64 = fractions[..k1].iter().sum();
    let side = if g.n() == 1 { vec![0u8] } else { ml_bisect(g, left / total, eps, tries, ncuts, rng) };
    for which in 0..2u8 {
        let (f, p0) = if which == 0 { (&fractions[..k1], first) } else { (&fractions[k1..], first + k1 as u32) };
        if f.len() == 1 {
            // A single part: its vertices need no subgraph.
            for (v, &s) in side.iter().enumerate() {
                if s == which {
                    out[ids[v] as usize] = p0;
                }
            }
            continue;
        }
        let (sub, sub_ids) = subgraph(g, &side, which);
        let global: Vec<u32> = sub_ids.iter().map(|&i| ids[i as usize]).collect();
        recursive_bisection(&sub, &global, p0, f, eps, (tries, ncuts), rng, out);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn remaining_selects_the_rth_vertex_left() {
        for n in [1usize, 2, 7, 64, 100] {
            let mut rest = Remaining::all(n);
            let mut left: Vec<usize> = (0..n).collect();
            let mut x = 12345u64;
            while !left.is_empty() {
                for (r, &v) in left.iter().enumerate() {
                    assert_eq!(rest.select(r), v, "n = {n}, r = {r}");
                }
                x = super::super::coarsen::hash(x);
                let v = left.remove((x % left.len() as u64) as usize);
                rest.remove(v);
                assert_eq!(rest.len(), left.len());
            }
        }
    }
}
