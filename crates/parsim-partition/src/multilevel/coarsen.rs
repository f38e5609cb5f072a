//! Coarsening: heavy-edge matching, or size-constrained label-propagation
//! clustering where matching stalls (power-law graphs), and contraction.

use parsim_core::mem::prefetch;
use parsim_core::rng::Stream;

use crate::graph::Graph;

/// A random permutation of `0..n` (Fisher–Yates, driven by a splitmix64
/// generator seeded from `rng`: a Philox draw per element costs more than
/// the coarsening step that uses the permutation).
pub(crate) fn permutation(n: usize, rng: &mut Stream) -> Vec<u32> {
    let mut p: Vec<u32> = (0..n as u32).collect();
    let mut x = rand_core::RngCore::next_u64(rng);
    for i in (1..n).rev() {
        x = x.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = x;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^= z >> 31;
        let j = ((u128::from(z) * (i as u128 + 1)) >> 64) as usize;
        p.swap(i, j);
    }
    p
}

/// splitmix64's finaliser: a cheap, well-mixed hash of `x`.
#[inline]
pub(crate) fn hash(mut x: u64) -> u64 {
    x = x.wrapping_add(0x9E37_79B9_7F4A_7C15);
    x = (x ^ (x >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    x = (x ^ (x >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    x ^ (x >> 31)
}

#[inline]
fn fits(g: &Graph, a: usize, b: usize, maxw: &[i64]) -> bool {
    if g.ncon == 1 {
        return g.vwgt[a] + g.vwgt[b] <= maxw[0];
    }
    let (wa, wb) = (g.weights(a), g.weights(b));
    (0..g.ncon).all(|c| wa[c] + wb[c] <= maxw[c])
}

/// Heavy-edge matching: each unmatched vertex (in random order) is matched
/// to the unmatched neighbour with the heaviest edge whose merged weight
/// stays within `maxw`; then isolated vertices are paired with each other.
/// `uniform` says every edge of `g` weighs the same ([`uniform_weight`]).
/// Returns the coarse id of each vertex and their count.
pub(crate) fn heavy_edge_matching(
    g: &Graph,
    rng: &mut Stream,
    maxw: &[i64],
    class: Option<&[u64]>,
    uniform: bool,
) -> (Vec<u32>, usize) {
    let n = g.n();
    let mut mate = vec![u32::MAX; n];
    // Low degree first (a stable counting sort of a random order): leaves
    // and chains get matched before the hubs take their neighbours.
    let random = permutation(n, rng);
    let maxd = (0..n).map(|v| g.degree(v)).max().unwrap_or(0).min(1 << 16);
    let mut start = vec![0usize; maxd + 2];
    for v in 0..n {
        start[g.degree(v).min(maxd) + 1] += 1;
    }
    for d in 0..=maxd {
        start[d + 1] += start[d];
    }
    let mut order = vec![0u32; n];
    for &v in &random {
        let d = g.degree(v as usize).min(maxd);
        order[start[d]] = v;
        start[d] += 1;
    }
    let same = |a: usize, b: usize| class.is_none_or(|p| p[a] == p[b]);
    let salt = rand_core::RngCore::next_u64(rng);
    // With every edge of the same weight (an unweighted input's finest
    // level), the heaviest eligible edge is the first one: stop there, and
    // never read the weights (METIS's random matching on such levels).
    let far = beyond_cache(g);
    for (i, &v) in order.iter().enumerate() {
        // The order is random: fetch a vertex's offsets 16 places ahead, and
        // its row and mate 8 ahead, so that the misses overlap.
        if far {
            if let Some(&w) = order.get(i + 16) {
                prefetch(&g.xadj, w as usize);
            }
            if let Some(&w) = order.get(i + 8) {
                prefetch(&mate, w as usize);
                prefetch(&g.adjncy, g.xadj[w as usize] as usize);
            }
        }
        let v = v as usize;
        if mate[v] != u32::MAX {
            continue;
        }
        let mut best = v as u32;
        // Ties go to the first candidate from a per-vertex offset, so that
        // equal weights do not all pull the same way through the ids.
        let nb = g.neighbours(v);
        let d = nb.len();
        let off = ((u128::from(hash(v as u64 ^ salt)) * d as u128) >> 64) as usize;
        if uniform {
            let eligible =
                |&&u: &&u32| mate[u as usize] == u32::MAX && fits(g, v, u as usize, maxw) && same(v, u as usize);
            if let Some(&u) = nb[off..].iter().chain(&nb[..off]).find(eligible) {
                best = u;
            }
        } else {
            let ew = g.edge_weights(v);
            let mut bw = 0u32;
            let (head, tail) = (nb[off..].iter().zip(&ew[off..]), nb[..off].iter().zip(&ew[..off]));
            for (&u, &w) in head.chain(tail) {
                if w > bw && mate[u as usize] == u32::MAX && fits(g, v, u as usize, maxw) && same(v, u as usize) {
                    best = u;
                    bw = w;
                }
            }
        }
        mate[v] = best;
        mate[best as usize] = v as u32;
    }
    // Isolated vertices have no edge to merge along: pair them with each
    // other (METIS does the same), or a graph with many of them stops
    // coarsening. The sides of a bisected social graph are such graphs (729
    // of the 2,117 vertices of one of email-Enron's at K = 64).
    // One waiting vertex per class (iterated V-cycles, pins and homes only
    // merge vertices of the same class).
    let mut waiting: std::collections::HashMap<u64, usize> = std::collections::HashMap::new();
    for v in 0..n {
        if g.degree(v) != 0 || mate[v] != v as u32 {
            continue;
        }
        let key = class.map_or(0, |p| p[v]);
        match waiting.get(&key) {
            Some(&u) if fits(g, u, v, maxw) => {
                mate[u] = v as u32;
                mate[v] = u as u32;
                waiting.remove(&key);
            }
            _ => {
                waiting.insert(key, v);
            }
        }
    }
    let mut cmap = vec![u32::MAX; n];
    let mut cn = 0u32;
    for v in 0..n {
        if cmap[v] == u32::MAX {
            cmap[v] = cn;
            cmap[mate[v] as usize] = cn;
            cn += 1;
        }
    }
    (cmap, cn as usize)
}

/// Size-constrained label propagation: every vertex joins the neighbouring
/// cluster it is most strongly connected to, if the cluster stays within
/// `maxw` (three rounds, random order).
pub(crate) fn cluster(g: &Graph, rng: &mut Stream, maxw: &[i64], class: Option<&[u64]>) -> (Vec<u32>, usize) {
    let n = g.n();
    let ncon = g.ncon;
    let mut label: Vec<u32> = (0..n as u32).collect();
    let mut cw: Vec<i64> = g.vwgt.clone();
    let mut conn = vec![0i64; n];
    let mut touched = Vec::new();
    for _ in 0..3 {
        let mut moved = 0;
        for v in permutation(n, rng) {
            let v = v as usize;
            let own = label[v] as usize;
            for (&u, &w) in g.neighbours(v).iter().zip(g.edge_weights(v)) {
                if class.is_some_and(|p| p[u as usize] != p[v]) {
                    continue;
                }
                let l = label[u as usize] as usize;
                if conn[l] == 0 {
                    touched.push(l);
                }
                conn[l] += i64::from(w);
            }
            let mut best = own;
            let mut bw = conn[own];
            for &l in &touched {
                if conn[l] > bw && l != own && (0..ncon).all(|c| cw[l * ncon + c] + g.weights(v)[c] <= maxw[c]) {
                    best = l;
                    bw = conn[l];
                }
            }
            for &l in &touched {
                conn[l] = 0;
            }
            touched.clear();
            if best != own {
                for c in 0..ncon {
                    cw[own * ncon + c] -= g.weights(v)[c];
                    cw[best * ncon + c] += g.weights(v)[c];
                }
                label[v] = best as u32;
                moved += 1;
            }
        }
        if moved == 0 {
            break;
        }
    }
    let mut id = vec![u32::MAX; n];
    let mut cn = 0u32;
    let cmap = label
        .iter()
        .map(|&l| {
            if id[l as usize] == u32::MAX {
                id[l as usize] = cn;
                cn += 1;
            }
            id[l as usize]
        })
        .collect();
    (cmap, cn as usize)
}

/// Whether `g`'s rows are unlikely to sit in the cache (over 2¹⁸ entries,
/// 1 MB of neighbour ids): only then are scattered rows worth prefetching.
#[inline]
pub(crate) fn beyond_cache(g: &Graph) -> bool {
    g.adjncy.len() > 1 << 18
}

/// The weight every edge of `g` has, if they all have the same one (a
/// coarsening step finds it once, for matching and for [`contract`]).
pub(crate) fn uniform_weight(g: &Graph) -> Option<u32> {
    let w0 = *g.adjwgt.first()?;
    g.adjwgt.iter().all(|&w| w == w0).then_some(w0)
}

/// The graph of the coarse vertices `cmap` defines: weights summed, edges
/// between the same coarse vertices merged (weights summed), internal edges
/// dropped. `uniform` is [`uniform_weight`] of `g`.
pub(crate) fn contract(g: &Graph, cmap: &[u32], cn: usize, uniform: Option<u32>) -> Graph {
    // Unweighted input (every edge weight equal): the fine weights need not
    // be read, which is a third of the bytes a row costs.
    match uniform {
        Some(w0) => contract_rows::<true>(g, cmap, cn, w0),
        None => contract_rows::<false>(g, cmap, cn, 0),
    }
}

/// [`contract`], reading the fine edge weights unless `UNIFORM` (then all are `w0`).
fn contract_rows<const UNIFORM: bool>(g: &Graph, cmap: &[u32], cn: usize, w0: u32) -> Graph {
    let (n, ncon) = (g.n(), g.ncon);
    // Members of each coarse vertex (counting sort; for a matching, ids are
    // already in order of their first member, so this is one linear pass).
    let mut start = vec![0u32; cn + 1];
    for &c in cmap {
        start[c as usize + 1] += 1;
    }
    for c in 0..cn {
        start[c + 1] += start[c];
    }
    let mut members = vec![0u32; n];
    {
        let mut fill = start.clone();
        for v in 0..n {
            let c = cmap[v] as usize;
            members[fill[c] as usize] = v as u32;
            fill[c] += 1;
        }
    }
    let mut vwgt = vec![0i64; cn * ncon];
    let mut xadj = Vec::with_capacity(cn + 1);
    xadj.push(0u64);
    // The coarse graph has at most as many entries as the fine one.
    let mut adjncy: Vec<u32> = Vec::with_capacity(g.adjncy.len());
    let mut adjwgt: Vec<u32> = Vec::with_capacity(g.adjncy.len());
    let mut pos = vec![u32::MAX; cn];
    let members_of = |c: usize| &members[start[c] as usize..start[c + 1] as usize];
    let far = beyond_cache(g);
    for c in 0..cn {
        // A coarse vertex's second member lies anywhere: fetch its offsets
        // 16 coarse vertices ahead and its row 8 ahead, so that the misses
        // overlap with this row's work (contraction is bound by them).
        if far && c + 16 < cn {
            for &m in members_of(c + 16) {
                prefetch(&g.xadj, m as usize);
            }
            for &m in members_of(c + 8) {
                prefetch(&g.adjncy, g.xadj[m as usize] as usize);
            }
        }
        let row = adjncy.len();
        for &v in members_of(c) {
            let v = v as usize;
            if ncon == 1 {
                vwgt[c] += g.vwgt[v];
            } else {
                for (k, w) in g.weights(v).iter().enumerate() {
                    vwgt[c * ncon + k] += w;
                }
            }
            let (lo, hi) = (g.xadj[v] as usize, g.xadj[v + 1] as usize);
            let (nb, ws) = (&g.adjncy[lo..hi], if UNIFORM { &[][..] } else { &g.adjwgt[lo..hi] });
            for (k, &u) in nb.iter().enumerate() {
                let w = if UNIFORM { w0 } else { ws[k] };
                let cu = cmap[u as usize];
                if cu as usize == c {
                    continue;
                }
                // Short rows: a scan of the row is cheaper than a cache miss in `pos`.
                let len = adjncy.len();
                if len - row <= 12 {
                    if let Some(j) = adjncy[row..].iter().position(|&x| x == cu) {
                        adjwgt[row + j] += w;
                        continue;
                    }
                    adjncy.push(cu);
                    adjwgt.push(w);
                    if len + 1 - row > 12 {
                        // The row outgrew the scan: index it.
                        for (j, &x) in adjncy[row..].iter().enumerate() {
                            pos[x as usize] = (row + j) as u32;
                        }
                    }
                    continue;
                }
                let p = pos[cu as usize] as usize;
                if p != u32::MAX as usize && p >= row {
                    adjwgt[p] += w;
                } else {
                    pos[cu as usize] = len as u32;
                    adjncy.push(cu);
                    adjwgt.push(w);
                }
            }
        }
        xadj.push(adjncy.len() as u64);
    }
    Graph { xadj, adjncy, adjwgt, ncon, vwgt, vsize: None, coords: None, dim: 0 }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn matching_pairs_isolated_vertices_within_the_weight_limit() {
        // A path of 10 vertices and 31 isolated ones, one of them too heavy
        // to merge with anything.
        let n = 41;
        let edges: Vec<(u32, u32, u32)> = (0..9).map(|v| (v, v + 1, 1)).collect();
        let mut g = Graph::from_edges(n, &edges).unwrap();
        g.vwgt[40] = 100;
        let mut rng = parsim_core::rng::StreamKey::new(3).stream();
        let (cmap, cn) = heavy_edge_matching(&g, &mut rng, &[2], None, true);
        let mut size = vec![0; cn];
        for &c in &cmap {
            size[c as usize] += 1;
        }
        // The 30 light isolated vertices form 15 pairs; the heavy one stays alone.
        let isolated_pairs = (10..40).filter(|&v| size[cmap[v] as usize] == 2).count();
        assert_eq!(isolated_pairs, 30);
        assert_eq!(size[cmap[40] as usize], 1);
        for v in 10..40 {
            let mate = (10..40).find(|&u| u != v && cmap[u] == cmap[v]).expect("a mate");
            assert_eq!(g.degree(mate), 0, "isolated {v} paired with a vertex that has edges");
        }
        // With classes (alternating here), isolated vertices pair within
        // their class: 15 of each, so 7 pairs each and one left over.
        let class: Vec<u64> = (0..n as u64).map(|v| v % 2).collect();
        let (cmap, _) = heavy_edge_matching(&g, &mut rng, &[2], Some(&class), true);
        let mut pairs = 0;
        for u in 10..40 {
            for v in u + 1..40 {
                if cmap[u] == cmap[v] {
                    assert_eq!(class[u], class[v], "{u} and {v} differ in class");
                    pairs += 1;
                }
            }
        }
        assert_eq!(pairs, 14);
    }

    /// A grid graph of `w × h` vertices, every edge of weight `wt`, beyond
    /// the cache threshold when large (so the prefetching paths run too).
    fn grid(w: u32, h: u32, wt: u32) -> Graph {
        let mut edges = Vec::new();
        for y in 0..h {
            for x in 0..w {
                let v = y * w + x;
                if x + 1 < w {
                    edges.push((v, v + 1, wt));
                }
                if y + 1 < h {
                    edges.push((v, v + w, wt));
                }
            }
        }
        Graph::from_edges((w * h) as usize, &edges).unwrap()
    }

    #[test]
    fn unit_weight_matching_is_maximal_and_contraction_equals_the_weighted_path() {
        for (w, h) in [(7, 5), (400, 200)] {
            let g = grid(w, h, 1);
            assert_eq!(beyond_cache(&g), w == 400);
            let mut rng = parsim_core::rng::StreamKey::new(11).stream();
            assert_eq!(uniform_weight(&g), Some(1));
            let (cmap, cn) = heavy_edge_matching(&g, &mut rng, &[2], None, true);
            // Pairs are edges; no two unmatched vertices are adjacent (the
            // early stop on uniform weights still matches maximally).
            let mut size = vec![0; cn];
            for &c in &cmap {
                size[c as usize] += 1;
            }
            for v in 0..g.n() {
                for &u in g.neighbours(v) {
                    let alone = size[cmap[v] as usize] == 1 && size[cmap[u as usize] as usize] == 1;
                    assert!(!alone, "{v} and {u} are adjacent and both unmatched");
                }
            }
            for c in 0..cn {
                let m: Vec<usize> = (0..g.n()).filter(|&v| cmap[v] as usize == c).collect();
                if m.len() == 2 {
                    assert!(g.neighbours(m[0]).contains(&(m[1] as u32)));
                }
            }
            // Contraction without reading the weights builds the same graph.
            let fast = contract_rows::<true>(&g, &cmap, cn, 1);
            let general = contract_rows::<false>(&g, &cmap, cn, 0);
            assert_eq!(fast, general);
            assert_eq!(contract(&g, &cmap, cn, Some(1)), general);
            assert_eq!(
                fast.adjwgt.iter().map(|&w| i64::from(w)).sum::<i64>(),
                g.adjwgt.iter().map(|&w| i64::from(w)).sum::<i64>() - 2 * (g.n() - cn) as i64
            );
        }
    }
}
