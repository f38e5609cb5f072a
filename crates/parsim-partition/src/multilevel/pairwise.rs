//! Pairwise refinement: for each pair of adjacent parts, two-way
//! Fiduccia–Mattheyses on a band around their common boundary, and (the
//! strong preset) the minimum cut between them on a wider band by maximum
//! flow, the band sized so that any cut in it keeps both parts within their
//! limits (KaFFPa's flow refinement). A two-way FM
//! sees what the k-way passes cannot (chains of moves between the same two
//! parts through negative gains). The band is the vertices of the two parts
//! within a few hops of their boundary; the rest of each part is one pinned
//! anchor vertex carrying its weight and its edges into the band, so gains
//! and balance are exact.

use crate::graph::Graph;
use crate::partition::Limits;

/// Reusable per-vertex scratch: a stamp per pair, and the band index,
/// side by side (building a band reads both for every neighbour: one cache
/// line instead of two).
struct Scratch {
    slot: Vec<(u32, u32)>,
    now: u32,
}

impl Scratch {
    fn new(n: usize) -> Scratch {
        Scratch { slot: vec![(0, 0); n], now: 0 }
    }
}

/// Who may join a band: a vertex of the pair's two parts, within the
/// budget of its side (if any).
struct Admit<'a> {
    parts: &'a [u32],
    pair: (u32, u32),
    now: u32,
    budget: Option<[i64; 2]>,
    g: &'a Graph,
    /// Weight taken per side (kept only with a budget).
    taken: &'a mut [i64; 2],
}

impl Admit<'_> {
    /// The local id of `v` in the band, taking it in (its id the band's
    /// size) if it may join; `None` if it may not.
    #[inline(always)]
    fn take(&mut self, v: usize, ids: &mut Vec<u32>, slot: &mut [(u32, u32)]) -> Option<u32> {
        let (stamp, local) = slot[v];
        if stamp == self.now {
            return Some(local);
        }
        let pv = self.parts[v];
        let (p, q) = self.pair;
        if pv != p && pv != q {
            return None;
        }
        if let Some(b) = self.budget {
            let s = usize::from(pv == q);
            let w = self.g.weights(v)[0];
            if self.taken[s] + w > b[s] {
                return None;
            }
            self.taken[s] += w;
        }
        let id = ids.len() as u32;
        slot[v] = (self.now, id);
        ids.push(v as u32);
        Some(id)
    }
}

/// The band of pair (`p`, `q`) grown from `seeds`, as a graph whose last two
/// vertices are the anchors of `p` and `q` (pinned), and the band's ids.
/// The band reaches `depth` hops from the seeds; with `budget`, it also
/// takes no more weight (constraint 1) from `p`'s side than `budget[0]`, nor
/// from `q`'s than `budget[1]`.
///
/// Without a budget, every neighbour in `p` or `q` of a vertex whose row the
/// growth reads joins the band, so that row lies wholly inside it: it is
/// written as the growth reads it, and only the outermost layer's rows
/// are read a second time (for their edges into the band and to the anchors).
fn band(
    g: &Graph,
    parts: &[u32],
    pw: &[i64],
    (p, q): (u32, u32),
    (seeds, depth, budget): (&[u32], usize, Option<[i64; 2]>),
    sc: &mut Scratch,
) -> (Graph, Vec<u32>, Vec<u8>) {
    sc.now += 1;
    let now = sc.now;
    let mut ids: Vec<u32> = Vec::new();
    let mut taken = [0i64; 2];
    let mut admit = Admit { parts, pair: (p, q), now, budget, g, taken: &mut taken };
    for &v in seeds {
        admit.take(v as usize, &mut ids, &mut sc.slot);
    }
    let mut xadj = vec![0u64];
    let (mut adjncy, mut adjwgt) = (Vec::new(), Vec::new());
    let stream = budget.is_none();
    let mut from = 0;
    for _ in 0..depth {
        let to = ids.len();
        if from == to {
            break;
        }
        for i in from..to {
            let v = ids[i] as usize;
            for (&u, &w) in g.neighbours(v).iter().zip(g.edge_weights(v)) {
                if let Some(local) = admit.take(u as usize, &mut ids, &mut sc.slot) {
                    if stream {
                        adjncy.push(local);
                        adjwgt.push(w);
                    }
                }
            }
            if stream {
                xadj.push(adjncy.len() as u64);
            }
        }
        from = to;
    }
    // The rows not yet written: the outermost layer's (all rows with a budget).
    let written = xadj.len() - 1;
    let nb = ids.len();
    let ncon = g.ncon;
    let (a0, a1) = (nb as u32, nb as u32 + 1);
    xadj.reserve(nb + 3 - xadj.len());
    let mut vwgt = Vec::with_capacity((nb + 2) * ncon);
    // Band weight per side, to leave the anchors the rest.
    let mut bw = [vec![0i64; ncon], vec![0i64; ncon]];
    let mut side = Vec::with_capacity(nb + 2);
    for &v in &ids {
        let v = v as usize;
        let s = usize::from(parts[v] == q);
        side.push(s as u8);
        vwgt.extend_from_slice(g.weights(v));
        for (c, &w) in g.weights(v).iter().enumerate() {
            bw[s][c] += w;
        }
    }
    // Edges from the band to each anchor, per band vertex.
    // (Each sum is at most the graph's total edge weight, which fits in 32 bits.)
    let mut to_anchor: Vec<(u32, u32, u32)> = Vec::new();
    for (i, &v) in ids.iter().enumerate().skip(written) {
        let v = v as usize;
        let (mut e0, mut e1) = (0i64, 0i64);
        for (&u, &w) in g.neighbours(v).iter().zip(g.edge_weights(v)) {
            let pu = parts[u as usize];
            let (stamp, local) = sc.slot[u as usize];
            if stamp == now {
                adjncy.push(local);
                adjwgt.push(w);
            } else if pu == p {
                e0 += i64::from(w);
            } else if pu == q {
                e1 += i64::from(w);
            }
        }
        for (a, e) in [(a0, e0 as u32), (a1, e1 as u32)] {
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

/// The part weights (part-major, `k * ncon`) and the pairs of adjacent
/// parts, by (p, q), each with its border vertices in id order. `boundary`,
/// when known, flags every vertex with a neighbour in another part (and
/// maybe others): only their rows are read.
fn pairs_of(g: &Graph, parts: &[u32], k: usize, boundary: Option<&[bool]>) -> (Vec<i64>, Vec<Pair>) {
    let ncon = g.ncon;
    let mut pw = vec![0i64; k * ncon];
    for v in 0..g.n() {
        for (c, &w) in g.weights(v).iter().enumerate() {
            pw[parts[v] as usize * ncon + c] += w;
        }
    }
    // (pair, vertex, edge weight counted once), to be sorted by pair.
    let mut entries: Vec<(u64, u32, i64)> = Vec::new();
    for v in 0..g.n() {
        if boundary.is_some_and(|b| !b[v]) {
            continue;
        }
        let p = parts[v];
        for (&u, &w) in g.neighbours(v).iter().zip(g.edge_weights(v)) {
            let q = parts[u as usize];
            if q != p {
                let key = (u64::from(p.min(q)) << 32) | u64::from(p.max(q));
                entries.push((key, v as u32, if p < q { i64::from(w) } else { 0 }));
            }
        }
    }
    // Sorted by pair, each pair's entries in vertex order (as pushed): a
    // stable counting sort by the larger part, then by the smaller.
    for shift in [0u32, 32] {
        let part = |key: u64| (key >> shift) as u32 as usize;
        let mut start = vec![0usize; k + 1];
        for e in &entries {
            start[part(e.0) + 1] += 1;
        }
        for p in 0..k {
            start[p + 1] += start[p];
        }
        let mut sorted = vec![(0u64, 0u32, 0i64); entries.len()];
        for e in &entries {
            let at = &mut start[part(e.0)];
            sorted[*at] = *e;
            *at += 1;
        }
        entries = sorted;
    }
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
    (pw, pairs)
}

/// How much of the graph one sweep may scan: it stops once its bands'
/// rows add up to this many times the graph's adjacency entries. Where
/// every part touches most others (social and random graphs at large K)
/// every vertex lies in the bands of many pairs, and a sweep over them all
/// read the graph 50 times over (email-Enron and G(n, 10n/2) at K = 64)
/// for a cut no better than METIS's; a mesh's sweep reads it at most
/// 2.2 times at K = 8 and up to 7 times on some levels at K = 64.
/// The heaviest borders come first, so the budget drops the lightest.
const SWEEP_SCANS: usize = 4;

/// One sweep over the pairs of adjacent parts, heaviest cut first, with
/// `passes` FM passes on bands `depth` hops deep (until the sweep has
/// scanned [`SWEEP_SCANS`] times the graph); returns the vertices that
/// moved. Both parts of a pair stay within `lim` (its FM never makes a side
/// heavier than its limit, or fuller than it was), and the cut never rises.
/// `boundary`, when given, flags (at least) every vertex with a neighbour
/// in another part.
pub(crate) fn refine_pairs(
    g: &Graph,
    parts: &mut [u32],
    k: usize,
    lim: &Limits,
    (depth, passes): (usize, usize),
    boundary: Option<&[bool]>,
) -> Vec<u32> {
    let n = g.n();
    let ncon = g.ncon;
    let (mut pw, mut pairs) = pairs_of(g, parts, k, boundary);
    pairs.sort_by_key(|x| (std::cmp::Reverse(x.cut), x.p, x.q));
    let mut sc = Scratch::new(n);
    let mut moved = Vec::new();
    // Adjacency entries the bands have scanned so far.
    let mut scanned = 0usize;
    for Pair { p, q, seeds, .. } in pairs {
        if scanned > SWEEP_SCANS * g.adjncy.len() {
            break;
        }
        let (sub, ids, mut side) = band(g, parts, &pw, (p, q), (&seeds, depth, None), &mut sc);
        if ids.is_empty() {
            continue;
        }
        scanned += ids.iter().map(|&v| g.degree(v as usize)).sum::<usize>();
        #[cfg(test)]
        tests::BANDS.with(|b| b.set(b.get() + 1));
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
    pub(super) fn grid(side: u32) -> Graph {
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
        let moved = refine_pairs(&g, &mut parts, 4, &lim, (2, 4), None);
        let after = metrics(&g, &parts, &cfg);
        assert!(!moved.is_empty());
        assert!(after.cut < before.cut, "cut {} -> {}", before.cut, after.cut);
        assert!(after.balanced, "part weights {:?}", after.part_weights);
        // Straight stripes cut 3 × 24.
        assert_eq!(after.cut, 3 * 24);
    }

    #[test]
    fn a_band_written_while_it_grows_equals_one_built_after() {
        // Four stripes with zigzag borders: bands of 1–3 hops around each
        // pair's border. Without a budget the rows read while the band grows
        // are written at once; a budget too large to bind takes the path that
        // builds every row afterwards. The two must be the same graph.
        let g = grid(20);
        let parts: Vec<u32> = (0..g.n() as u32).map(|v| ((v % 20 + (v / 20) % 3) / 6).min(3)).collect();
        let bnd: Vec<bool> =
            (0..g.n()).map(|v| g.neighbours(v).iter().any(|&u| parts[u as usize] != parts[v])).collect();
        let (pw, pairs) = pairs_of(&g, &parts, 4, None);
        let (pw_b, pairs_b) = pairs_of(&g, &parts, 4, Some(&bnd));
        assert_eq!(pw, pw_b);
        assert_eq!(pairs.len(), pairs_b.len());
        assert!(pairs.len() >= 3);
        let mut sc = Scratch::new(g.n());
        for (x, y) in pairs.iter().zip(&pairs_b) {
            assert_eq!((x.p, x.q, x.cut, &x.seeds), (y.p, y.q, y.cut, &y.seeds));
            for depth in 0..4 {
                let free = Some([i64::MAX / 4; 2]);
                let (h0, ids0, side0) = band(&g, &parts, &pw, (x.p, x.q), (&x.seeds, depth, None), &mut sc);
                let (h1, ids1, side1) = band(&g, &parts, &pw, (x.p, x.q), (&x.seeds, depth, free), &mut sc);
                assert_eq!((&h0.xadj, &h0.adjncy, &h0.adjwgt, &h0.vwgt), (&h1.xadj, &h1.adjncy, &h1.adjwgt, &h1.vwgt));
                assert_eq!((ids0, side0), (ids1, side1));
                h0.validate().unwrap();
            }
        }
    }

    thread_local! {
        /// Bands built by `refine_pairs` on this thread.
        pub(super) static BANDS: std::cell::Cell<usize> = const { std::cell::Cell::new(0) };
    }

    #[test]
    fn a_sweep_where_every_part_touches_every_other_stops_at_its_budget() {
        // G(600, 3000) dealt round-robin into 32 parts: all 496 pairs touch,
        // and every vertex lies on the borders of about ten of them.
        let n = 600u32;
        let mut x = 7u64;
        let mut e = std::collections::BTreeSet::new();
        while e.len() < 3000 {
            x = crate::multilevel::coarsen::hash(x);
            let (a, b) = ((x >> 33) as u32 % n, (x >> 13) as u32 % n);
            if a != b {
                e.insert((a.min(b), a.max(b), 1));
            }
        }
        let g = Graph::from_edges(n as usize, &e.into_iter().collect::<Vec<_>>()).unwrap();
        let k = 32;
        let cfg = Config::new(k);
        let lim = Limits::new(&cfg, &g.total_weights());
        let mut parts: Vec<u32> = (0..n).map(|v| v % k as u32).collect();
        let before = metrics(&g, &parts, &cfg).cut;
        let (_, pairs) = pairs_of(&g, &parts, k, None);
        BANDS.with(|b| b.set(0));
        refine_pairs(&g, &mut parts, k, &lim, (1, 2), None);
        let bands = BANDS.with(|b| b.get());
        assert!(bands > 0 && bands < pairs.len() / 2, "{bands} bands of {} pairs", pairs.len());
        assert!(metrics(&g, &parts, &cfg).cut < before);
        let mut w = vec![0i64; k];
        for &p in &parts {
            w[p as usize] += 1;
        }
        assert!((0..k).all(|p| w[p] <= lim.get(p, 0)), "{w:?}");
    }

    #[test]
    fn a_refined_partition_is_left_alone() {
        let g = grid(16);
        let cfg = Config::new(2);
        let lim = Limits::new(&cfg, &g.total_weights());
        let mut parts: Vec<u32> = (0..g.n()).map(|v| u32::from(v % 16 >= 8)).collect();
        let moved = refine_pairs(&g, &mut parts, 2, &lim, (1, 2), None);
        assert!(moved.is_empty());
        assert_eq!(metrics(&g, &parts, &cfg).cut, 16);
    }
}

/// Dinic's maximum flow from `s` to `t` on the symmetric graph `h` (edge
/// weights are the capacities, in both directions); returns its value and
/// the source sides of two minimum cuts: the one nearest to `s` and the one
/// nearest to `t` (every minimum cut lies between them).
fn min_cut(h: &Graph, s: usize, t: usize) -> (i64, [Vec<bool>; 2]) {
    let n = h.n();
    let m = h.adjncy.len();
    let mut tail = vec![0u32; m];
    for v in 0..n {
        for i in h.xadj[v] as usize..h.xadj[v + 1] as usize {
            tail[i] = v as u32;
        }
    }
    // The reverse of each arc, in linear time: visiting the vertices in
    // order, the arcs u → v with u < v are met before v is, so each is
    // filed under v; at v, a table of where each such u's arc lies gives
    // the reverse of v's arcs back to smaller ids. (The band has no
    // parallel arcs.)
    let mut rev = vec![usize::MAX; m];
    let mut into = vec![0u32; n + 1];
    for i in 0..m {
        let (a, b) = (tail[i], h.adjncy[i]);
        if a < b {
            into[b as usize + 1] += 1;
        }
    }
    for v in 0..n {
        into[v + 1] += into[v];
    }
    let mut fill = into.clone();
    let mut back = vec![0u32; into[n] as usize];
    for i in 0..m {
        let (a, b) = (tail[i], h.adjncy[i]);
        if a < b {
            back[fill[b as usize] as usize] = i as u32;
            fill[b as usize] += 1;
        }
    }
    let mut at = vec![u32::MAX; n];
    for v in 0..n {
        for &j in &back[into[v] as usize..into[v + 1] as usize] {
            at[tail[j as usize] as usize] = j;
        }
        for i in h.xadj[v] as usize..h.xadj[v + 1] as usize {
            let u = h.adjncy[i] as usize;
            if u < v && at[u] != u32::MAX && h.adjncy[at[u] as usize] as usize == v {
                let j = at[u] as usize;
                rev[i] = j;
                rev[j] = i;
            }
        }
        for &j in &back[into[v] as usize..into[v + 1] as usize] {
            at[tail[j as usize] as usize] = u32::MAX;
        }
    }
    let mut r: Vec<i64> = h.adjwgt.iter().map(|&w| i64::from(w)).collect();
    let mut flow = 0i64;
    let mut level = vec![u32::MAX; n];
    let mut queue = Vec::with_capacity(n);
    loop {
        level.iter_mut().for_each(|l| *l = u32::MAX);
        level[s] = 0;
        queue.clear();
        queue.push(s);
        let mut head = 0;
        while head < queue.len() {
            let v = queue[head];
            head += 1;
            for i in h.xadj[v] as usize..h.xadj[v + 1] as usize {
                let u = h.adjncy[i] as usize;
                if r[i] > 0 && level[u] == u32::MAX {
                    level[u] = level[v] + 1;
                    queue.push(u);
                }
            }
        }
        if level[t] == u32::MAX {
            break;
        }
        // Blocking flow by iterative depth-first search along the levels.
        let mut it: Vec<usize> = (0..n).map(|v| h.xadj[v] as usize).collect();
        let mut path: Vec<usize> = Vec::new();
        let mut v = s;
        loop {
            if v == t {
                let f = path.iter().map(|&i| r[i]).min().unwrap_or(0);
                for &i in &path {
                    r[i] -= f;
                    if rev[i] != usize::MAX {
                        r[rev[i]] += f;
                    }
                }
                flow += f;
                let k = path.iter().position(|&i| r[i] == 0).unwrap_or(0);
                path.truncate(k);
                v = path.last().map_or(s, |&i| h.adjncy[i] as usize);
                continue;
            }
            let end = h.xadj[v + 1] as usize;
            let mut advanced = false;
            while it[v] < end {
                let i = it[v];
                let u = h.adjncy[i] as usize;
                if r[i] > 0 && level[u] == level[v] + 1 {
                    path.push(i);
                    v = u;
                    advanced = true;
                    break;
                }
                it[v] += 1;
            }
            if !advanced {
                if v == s {
                    break;
                }
                level[v] = u32::MAX;
                let i = path.pop().expect("an arc into v");
                v = tail[i] as usize;
                it[v] += 1;
            }
        }
    }
    // The source side nearest to s: what the residual graph reaches from s;
    // and the one nearest to t: everything that cannot reach t.
    let mut near_s = vec![false; n];
    near_s[s] = true;
    let mut stack = vec![s];
    while let Some(v) = stack.pop() {
        for i in h.xadj[v] as usize..h.xadj[v + 1] as usize {
            let u = h.adjncy[i] as usize;
            if r[i] > 0 && !near_s[u] {
                near_s[u] = true;
                stack.push(u);
            }
        }
    }
    let mut reaches_t = vec![false; n];
    reaches_t[t] = true;
    stack.push(t);
    while let Some(v) = stack.pop() {
        for j in h.xadj[v] as usize..h.xadj[v + 1] as usize {
            let u = h.adjncy[j] as usize;
            // The arc u → v is the reverse of v → u.
            if !reaches_t[u] && rev[j] != usize::MAX && r[rev[j]] > 0 {
                reaches_t[u] = true;
                stack.push(u);
            }
        }
    }
    let near_t = reaches_t.iter().map(|&x| !x).collect();
    (flow, [near_s, near_t])
}

/// Flow refinement (single constraint): for each pair of adjacent parts,
/// the minimum cut between them on a band grown from their border — on each
/// side at most α times the weight the other part can still take (α = 4,
/// 2, 1 until the result fits) — replaces their border when it is lower.
/// Returns the vertices that moved.
pub(crate) fn flow_pairs(g: &Graph, parts: &mut [u32], k: usize, lim: &Limits) -> Vec<u32> {
    let n = g.n();
    let mut moved = Vec::new();
    if g.ncon != 1 || k < 2 {
        return moved;
    }
    // In (p, q) order.
    let (mut pw, pairs) = pairs_of(g, parts, k, None);
    let avg = pw.iter().sum::<i64>() / k as i64;
    let mut sc = Scratch::new(n);
    for Pair { p, q, seeds, .. } in pairs {
        let room = |x: u32| (lim.get(x as usize, 0) - pw[x as usize]).max(avg / 100).max(1);
        for alpha in [4i64, 2, 1] {
            let budget = [alpha * room(q), alpha * room(p)];
            let (h, ids, side) = band(g, parts, &pw, (p, q), (&seeds, usize::MAX, Some(budget)), &mut sc);
            let nb = ids.len();
            if nb == 0 {
                break;
            }
            let before = super::bisect::cut2(&h, &side);
            let (cut, sides) = min_cut(&h, nb, nb + 1);
            if cut >= before {
                break;
            }
            // Of the two extreme minimum cuts, the better balanced one that fits.
            let fill = |src: &[bool]| {
                let (mut wp, mut wq) = (h.vwgt[nb], h.vwgt[nb + 1]);
                for (b, &v) in ids.iter().enumerate() {
                    if src[b] {
                        wp += g.vwgt[v as usize];
                    } else {
                        wq += g.vwgt[v as usize];
                    }
                }
                let (lp, lq) = (lim.get(p as usize, 0), lim.get(q as usize, 0));
                (wp <= lp && wq <= lq).then(|| (wp as f64 / lp as f64).max(wq as f64 / lq as f64))
            };
            let Some(src) = sides
                .iter()
                .filter_map(|s| fill(s).map(|f| (f, s)))
                .min_by(|a, b| a.0.total_cmp(&b.0))
                .map(|(_, s)| s.clone())
            else {
                continue;
            };
            for (b, &v) in ids.iter().enumerate() {
                let to = if src[b] { p } else { q };
                if parts[v as usize] != to {
                    pw[parts[v as usize] as usize] -= g.vwgt[v as usize];
                    pw[to as usize] += g.vwgt[v as usize];
                    parts[v as usize] = to;
                    moved.push(v);
                }
            }
            break;
        }
    }
    moved
}

#[cfg(test)]
mod flow_tests {
    use super::*;
    use crate::partition::{metrics, Config};

    #[test]
    fn the_minimum_cut_of_two_triangles_is_their_bridge() {
        // Triangles {0,1,2} and {3,4,5} joined by 2–3 (weight 1); s = 0, t = 5.
        let e = [(0, 1, 3), (1, 2, 3), (0, 2, 3), (3, 4, 3), (4, 5, 3), (3, 5, 3), (2, 3, 1)];
        let h = Graph::from_edges(6, &e).unwrap();
        let (flow, [near_s, near_t]) = min_cut(&h, 0, 5);
        assert_eq!(flow, 1);
        assert_eq!(near_s, vec![true, true, true, false, false, false]);
        assert_eq!(near_t, near_s, "the bridge is the only minimum cut");
        // Parallel paths add up: a 2 × 4 ladder from corner to corner.
        let e = [(0, 1, 2), (1, 2, 2), (2, 3, 2), (4, 5, 2), (5, 6, 2), (6, 7, 2), (0, 4, 5), (3, 7, 5)];
        let h = Graph::from_edges(8, &e).unwrap();
        assert_eq!(min_cut(&h, 0, 7).0, 4);
    }

    #[test]
    fn flows_straighten_a_zigzag_border_within_the_limits() {
        let g = super::tests::grid(24);
        let cfg = Config::new(2);
        let lim = Limits::new(&cfg, &g.total_weights());
        // Halves whose border zigzags: the two vertices at the border trade parts on even rows.
        let mut parts: Vec<u32> = (0..g.n())
            .map(|v| {
                let (x, y) = (v % 24, v / 24);
                let p = u32::from(x >= 12);
                match (y % 2, x) {
                    (0, 11) => 1,
                    (0, 12) => 0,
                    _ => p,
                }
            })
            .collect();
        let before = metrics(&g, &parts, &cfg);
        assert!(before.balanced);
        let moved = flow_pairs(&g, &mut parts, 2, &lim);
        let after = metrics(&g, &parts, &cfg);
        assert!(!moved.is_empty());
        assert!(after.balanced, "{:?}", after.part_weights);
        // The zigzag cuts 94 edges, a straight border 24; the band (at most 4 ×
        // the 8 vertices of room on each side) covers most of the border.
        assert_eq!(before.cut, 94);
        assert!(after.cut <= 32, "cut {}", after.cut);
    }
}
