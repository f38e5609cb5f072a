//! Pairwise refinement: for each pair of adjacent parts, two-way
//! Fiduccia–Mattheyses on a band around their common boundary. A two-way FM
//! sees what the k-way passes cannot (chains of moves between the same two
//! parts through negative gains). The band is the vertices of the two parts
//! within a few hops of their boundary; the rest of each part is one pinned
//! anchor vertex carrying its weight and its edges into the band, so gains
//! and balance are exact.

use crate::graph::Graph;
use crate::partition::Limits;

/// Reusable per-vertex scratch: a stamp per pair, and the band index.
struct Scratch {
    stamp: Vec<u32>,
    local: Vec<u32>,
    now: u32,
}

/// The band of pair (`p`, `q`) grown from `seeds`, as a graph whose last two
/// vertices are the anchors of `p` and `q` (pinned), and the band's ids.
/// The band reaches `depth` hops from the seeds.
fn band(
    g: &Graph,
    parts: &[u32],
    pw: &[i64],
    (p, q): (u32, u32),
    (seeds, depth): (&[u32], usize),
    sc: &mut Scratch,
) -> (Graph, Vec<u32>, Vec<u8>) {
    sc.now += 1;
    let now = sc.now;
    let mut ids: Vec<u32> = Vec::new();
    for &v in seeds {
        let pv = parts[v as usize];
        if (pv == p || pv == q) && sc.stamp[v as usize] != now {
            sc.stamp[v as usize] = now;
            ids.push(v);
        }
    }
    let mut from = 0;
    for _ in 0..depth {
        let to = ids.len();
        for i in from..to {
            let v = ids[i] as usize;
            for &u in g.neighbours(v) {
                let pu = parts[u as usize];
                if (pu == p || pu == q) && sc.stamp[u as usize] != now {
                    sc.stamp[u as usize] = now;
                    ids.push(u);
                }
            }
        }
        from = to;
    }
    for (i, &v) in ids.iter().enumerate() {
        sc.local[v as usize] = i as u32;
    }
    let nb = ids.len();
    let ncon = g.ncon;
    let (a0, a1) = (nb as u32, nb as u32 + 1);
    let mut xadj = Vec::with_capacity(nb + 3);
    xadj.push(0u64);
    let (mut adjncy, mut adjwgt) = (Vec::new(), Vec::new());
    let mut vwgt = Vec::with_capacity((nb + 2) * ncon);
    // Band weight per side, to leave the anchors the rest.
    let mut bw = [vec![0i64; ncon], vec![0i64; ncon]];
    // Edges from the band to each anchor, per band vertex.
    let mut to_anchor: Vec<(u32, u32, i64)> = Vec::new();
    let mut side = Vec::with_capacity(nb + 2);
    for (i, &v) in ids.iter().enumerate() {
        let v = v as usize;
        let s = usize::from(parts[v] == q);
        side.push(s as u8);
        vwgt.extend_from_slice(g.weights(v));
        for (c, &w) in g.weights(v).iter().enumerate() {
            bw[s][c] += w;
        }
        let (mut e0, mut e1) = (0i64, 0i64);
        for (&u, &w) in g.neighbours(v).iter().zip(g.edge_weights(v)) {
            let pu = parts[u as usize];
            if sc.stamp[u as usize] == now {
                adjncy.push(sc.local[u as usize]);
                adjwgt.push(w);
            } else if pu == p {
                e0 += w;
            } else if pu == q {
                e1 += w;
            }
        }
        for (a, e) in [(a0, e0), (a1, e1)] {
            if e > 0 {
                adjncy.push(a);
                adjwgt.push(e);
                to_anchor.push((a, i as u32, e));
            }
        }
        xadj.push(adjncy.len() as u64);
    }
    // The anchors: the rest of each part.
    for (s, part) in [(0usize, p), (1, q)] {
        let a = nb as u32 + s as u32;
        for c in 0..ncon {
            vwgt.push((pw[part as usize * ncon + c] - bw[s][c]).max(0));
        }
        for &(to, i, e) in &to_anchor {
            if to == a {
                adjncy.push(i);
                adjwgt.push(e);
            }
        }
        xadj.push(adjncy.len() as u64);
        side.push(s as u8);
    }
    (Graph { xadj, adjncy, adjwgt, ncon, vwgt, vsize: None, coords: None, dim: 0 }, ids, side)
}

/// Two adjacent parts (`p` < `q`), the weight of the edges between them,
/// and their vertices on that border.
struct Pair {
    p: u32,
    q: u32,
    cut: i64,
    seeds: Vec<u32>,
}

/// One sweep over the pairs of adjacent parts, heaviest cut first, with
/// `passes` FM passes on bands `depth` hops deep; returns the vertices that
/// moved. Both parts of a pair stay within `lim` (its FM never makes a side
/// heavier than its limit, or fuller than it was), and the cut never rises.
pub(crate) fn refine_pairs(
    g: &Graph,
    parts: &mut [u32],
    k: usize,
    lim: &Limits,
    depth: usize,
    passes: usize,
) -> Vec<u32> {
    let n = g.n();
    let ncon = g.ncon;
    // Boundary vertices by pair, and the cut weight between each pair:
    // (pair, vertex, weight counted once) sorted by pair.
    let mut pw = vec![0i64; k * ncon];
    let mut entries: Vec<(u64, u32, i64)> = Vec::new();
    for v in 0..n {
        let p = parts[v];
        for (c, &w) in g.weights(v).iter().enumerate() {
            pw[p as usize * ncon + c] += w;
        }
        for (&u, &w) in g.neighbours(v).iter().zip(g.edge_weights(v)) {
            let q = parts[u as usize];
            if q != p {
                let key = (u64::from(p.min(q)) << 32) | u64::from(p.max(q));
                entries.push((key, v as u32, if p < q { w } else { 0 }));
            }
        }
    }
    entries.sort_unstable();
    let mut pairs: Vec<Pair> = Vec::new();
    for (i, &(key, v, w)) in entries.iter().enumerate() {
        if i == 0 || entries[i - 1].0 != key {
            pairs.push(Pair { p: (key >> 32) as u32, q: key as u32, cut: 0, seeds: Vec::new() });
        }
        let last = pairs.last_mut().expect("a pair");
        last.cut += w;
        if last.seeds.last() != Some(&v) {
            last.seeds.push(v);
        }
    }
    drop(entries);
    pairs.sort_by_key(|x| (std::cmp::Reverse(x.cut), x.p, x.q));
    let mut sc = Scratch { stamp: vec![0; n], local: vec![0; n], now: 0 };
    let mut moved = Vec::new();
    for Pair { p, q, seeds, .. } in pairs {
        let (sub, ids, mut side) = band(g, parts, &pw, (p, q), (&seeds, depth), &mut sc);
        if ids.is_empty() {
            continue;
        }
        let nb = ids.len();
        let mut pinned = vec![false; nb + 2];
        pinned[nb] = true;
        pinned[nb + 1] = true;
        let max =
            [(0..ncon).map(|c| lim.get(p as usize, c)).collect(), (0..ncon).map(|c| lim.get(q as usize, c)).collect()];
        let (before, after) = super::bisect::fm_pinned(&sub, &mut side, &max, passes, Some(&pinned));
        if after >= before {
            continue;
        }
        for (&v, &s) in ids.iter().zip(&side) {
            let to = if s == 0 { p } else { q };
            let from = parts[v as usize];
            if from != to {
                for (c, &w) in g.weights(v as usize).iter().enumerate() {
                    pw[from as usize * ncon + c] -= w;
                    pw[to as usize * ncon + c] += w;
                }
                parts[v as usize] = to;
                moved.push(v);
            }
        }
    }
    moved
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::partition::{metrics, Config};

    /// A `side` × `side` grid.
    fn grid(side: u32) -> Graph {
        let mut e = Vec::new();
        for y in 0..side {
            for x in 0..side {
                let v = y * side + x;
                if x + 1 < side {
                    e.push((v, v + 1, 1));
                }
                if y + 1 < side {
                    e.push((v, v + side, 1));
                }
            }
        }
        Graph::from_edges((side * side) as usize, &e).unwrap()
    }

    #[test]
    fn ragged_stripes_straighten_within_the_limits() {
        let g = grid(24);
        let cfg = Config::new(4);
        let lim = Limits::new(&cfg, &g.total_weights());
        // Four vertical stripes; on every other row the two vertices at each
        // border trade parts (a zigzag border, still exactly balanced).
        let mut parts: Vec<u32> = (0..g.n())
            .map(|v| {
                let (x, y) = (v % 24, v / 24);
                let p = x / 6;
                match (y % 2, x % 6) {
                    (0, 5) if p < 3 => p + 1,
                    (0, 0) if p > 0 => p - 1,
                    _ => p,
                }
            })
            .map(|p| p as u32)
            .collect();
        let before = metrics(&g, &parts, &cfg);
        assert!(before.balanced);
        let moved = refine_pairs(&g, &mut parts, 4, &lim, 2, 4);
        let after = metrics(&g, &parts, &cfg);
        assert!(!moved.is_empty());
        assert!(after.cut < before.cut, "cut {} -> {}", before.cut, after.cut);
        assert!(after.balanced, "part weights {:?}", after.part_weights);
        // Straight stripes cut 3 × 24.
        assert_eq!(after.cut, 3 * 24);
    }

    #[test]
    fn a_refined_partition_is_left_alone() {
        let g = grid(16);
        let cfg = Config::new(2);
        let lim = Limits::new(&cfg, &g.total_weights());
        let mut parts: Vec<u32> = (0..g.n()).map(|v| u32::from(v % 16 >= 8)).collect();
        let moved = refine_pairs(&g, &mut parts, 2, &lim, 1, 2);
        assert!(moved.is_empty());
        assert_eq!(metrics(&g, &parts, &cfg).cut, 16);
    }
}
