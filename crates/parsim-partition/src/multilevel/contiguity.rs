//! Contiguous parts: every part's vertices must form one connected piece.
//! The largest piece of each part stays; every other piece moves, whole, to
//! the adjacent part it is most connected to, preferring parts with room.

use std::collections::VecDeque;

use crate::error::{PartitionError, Result};
use crate::graph::Graph;
use crate::partition::{Limits, FREE};

/// Connected pieces of each part: (piece of each vertex, part, weight, size) per piece.
fn pieces(g: &Graph, parts: &[u32]) -> (Vec<u32>, Vec<(u32, i64, usize)>) {
    let n = g.n();
    let mut piece = vec![u32::MAX; n];
    let mut info = Vec::new();
    let mut queue = VecDeque::new();
    for s in 0..n {
        if piece[s] != u32::MAX {
            continue;
        }
        let id = info.len() as u32;
        let p = parts[s];
        let (mut w, mut size) = (0i64, 0usize);
        piece[s] = id;
        queue.push_back(s);
        while let Some(v) = queue.pop_front() {
            w += g.weights(v)[0];
            size += 1;
            for &u in g.neighbours(v) {
                if piece[u as usize] == u32::MAX && parts[u as usize] == p {
                    piece[u as usize] = id;
                    queue.push_back(u as usize);
                }
            }
        }
        info.push((p, w, size));
    }
    (piece, info)
}

/// Moves stray pieces until every part is connected; an error if that
/// cannot be done within the limits (or the graph has more components than parts allow).
pub(crate) fn make_contiguous(
    g: &Graph,
    parts: &mut [u32],
    k: usize,
    lim: &Limits,
    fixed: Option<&[u32]>,
) -> Result<()> {
    for _round in 0..2 * k + 4 {
        let (piece, info) = pieces(g, parts);
        // The largest piece of each part is its home.
        let mut main = vec![u32::MAX; k];
        for (id, &(p, _, size)) in info.iter().enumerate() {
            let m = &mut main[p as usize];
            if *m == u32::MAX || size > info[*m as usize].2 {
                *m = id as u32;
            }
        }
        let strays: Vec<usize> = (0..info.len()).filter(|&id| main[info[id].0 as usize] != id as u32).collect();
        if strays.is_empty() {
            return Ok(());
        }
        let mut pw = vec![0i64; k];
        for v in 0..g.n() {
            pw[parts[v] as usize] += g.weights(v)[0];
        }
        // Smallest pieces first.
        let mut strays = strays;
        strays.sort_by_key(|&id| (info[id].2, id));
        let mut moved = false;
        // Members of each piece (counting sort by piece id).
        let mut start = vec![0usize; info.len() + 1];
        for &c in &piece {
            start[c as usize + 1] += 1;
        }
        for c in 0..info.len() {
            start[c + 1] += start[c];
        }
        let mut order = vec![0usize; g.n()];
        let mut fill = start.clone();
        for (v, &c) in piece.iter().enumerate() {
            order[fill[c as usize]] = v;
            fill[c as usize] += 1;
        }
        for id in strays {
            let members = &order[start[id]..start[id + 1]];
            if members.iter().any(|&v| fixed.is_some_and(|f| f[v] != FREE)) {
                continue;
            }
            let from = parts[members[0]] as usize;
            let mut conn = vec![0i64; k];
            for &v in members {
                for (&u, &w) in g.neighbours(v).iter().zip(g.edge_weights(v)) {
                    let q = parts[u as usize] as usize;
                    if q != from {
                        conn[q] += i64::from(w);
                    }
                }
            }
            let w = info[id].1;
            let best = (0..k)
                .filter(|&q| q != from && conn[q] > 0)
                .max_by_key(|&q| (pw[q] + w <= lim.get(q, 0), conn[q], std::cmp::Reverse(q)));
            if let Some(q) = best {
                for &v in members {
                    parts[v] = q as u32;
                }
                pw[from] -= w;
                pw[q] += w;
                moved = true;
            }
        }
        if !moved {
            break;
        }
    }
    let (_, info) = pieces(g, parts);
    if info.len() > k {
        return Err(PartitionError::Infeasible(format!(
            "no contiguous partition: {} connected pieces remain for {k} parts (is the graph connected?)",
            info.len()
        )));
    }
    Ok(())
}

/// Whether part `p` stays connected without vertex `v` (a BFS over the rest of `p`).
fn stays_connected(g: &Graph, parts: &[u32], v: usize, size: usize, mark: &mut [u32], stamp: u32) -> bool {
    let p = parts[v];
    let Some(&start) = g.neighbours(v).iter().find(|&&u| parts[u as usize] == p) else {
        return size == 1;
    };
    mark[v] = stamp;
    mark[start as usize] = stamp;
    let mut stack = vec![start as usize];
    let mut reached = 1;
    while let Some(x) = stack.pop() {
        for &u in g.neighbours(x) {
            let u = u as usize;
            if parts[u] == p && mark[u] != stamp {
                mark[u] = stamp;
                reached += 1;
                stack.push(u);
            }
        }
    }
    reached == size - 1
}

/// Moves boundary vertices out of parts over their limit, cheapest first,
/// never one whose removal would split its part. A vertex goes to an
/// adjacent part with room, or else to an adjacent part lighter than its
/// own even after the move (which may then pass weight on: overweight
/// flows down to parts with room through full ones). Returns whether all parts fit.
pub(crate) fn rebalance_contiguous(
    g: &Graph,
    parts: &mut [u32],
    k: usize,
    lim: &Limits,
    fixed: Option<&[u32]>,
) -> bool {
    let n = g.n();
    let mut pw = vec![0i64; k];
    let mut size = vec![0usize; k];
    for v in 0..n {
        pw[parts[v] as usize] += g.weights(v)[0];
        size[parts[v] as usize] += 1;
    }
    let mut mark = vec![0u32; n];
    let mut stamp = 0u32;
    let over = |pw: &[i64], p: usize| pw[p] - lim.get(p, 0);
    // Each round drains every overweight part as far as it can, heaviest
    // first (a full part nearer to room passes the weight on).
    for _ in 0..4 * k + n.min(4000) {
        let mut heavy: Vec<usize> = (0..k).filter(|&p| over(&pw, p) > 0).collect();
        if heavy.is_empty() {
            return true;
        }
        heavy.sort_by_key(|&p| (std::cmp::Reverse(over(&pw, p)), p));
        let dist = hops_to_room(g, parts, &pw, k, lim);
        let mut moved = false;
        for p in heavy {
            moved |= drain(g, parts, (&mut pw, &mut size), (p, &dist), lim, fixed, (&mut mark, &mut stamp));
        }
        if !moved {
            return false;
        }
    }
    (0..k).all(|p| pw[p] <= lim.get(p, 0))
}

/// Hops from each part to the nearest part with room, over the adjacency of
/// parts (`usize::MAX` where none can be reached).
fn hops_to_room(g: &Graph, parts: &[u32], pw: &[i64], k: usize, lim: &Limits) -> Vec<usize> {
    let mut adj: Vec<std::collections::BTreeSet<usize>> = vec![Default::default(); k];
    for v in 0..g.n() {
        let p = parts[v] as usize;
        for &u in g.neighbours(v) {
            let q = parts[u as usize] as usize;
            if q != p {
                adj[p].insert(q);
            }
        }
    }
    let mut dist = vec![usize::MAX; k];
    let mut queue: VecDeque<usize> = (0..k).filter(|&q| pw[q] < lim.get(q, 0)).collect();
    for &q in &queue {
        dist[q] = 0;
    }
    while let Some(q) = queue.pop_front() {
        for &r in &adj[q] {
            if dist[r] == usize::MAX {
                dist[r] = dist[q] + 1;
                queue.push_back(r);
            }
        }
    }
    dist
}

/// Moves boundary vertices of part `p` (cheapest first) while it is over its
/// limit: each to an adjacent part with room, or else to one nearer to a
/// part with room (`dist`), or lighter than `p` even after the move; never
/// one whose removal splits `p`. Returns whether anything moved.
fn drain(
    g: &Graph,
    parts: &mut [u32],
    (pw, size): (&mut [i64], &mut [usize]),
    (p, dist): (usize, &[usize]),
    lim: &Limits,
    fixed: Option<&[u32]>,
    (mark, stamp): (&mut [u32], &mut u32),
) -> bool {
    let n = g.n();
    let accepts = |pw: &[i64], q: usize, w: i64| {
        pw[q] + w <= lim.get(q, 0) || dist[q] < dist[p] || (dist[p] == usize::MAX && pw[q] + w < pw[p] - w)
    };
    // Candidates: (no room, loss, v, q) for the boundary vertices of p.
    let mut cand = Vec::new();
    for v in (0..n).filter(|&v| parts[v] as usize == p && fixed.is_none_or(|f| f[v] == FREE)) {
        let mut conn = std::collections::BTreeMap::<usize, i64>::new();
        let mut int = 0;
        for (&u, &w) in g.neighbours(v).iter().zip(g.edge_weights(v)) {
            let q = parts[u as usize] as usize;
            if q == p {
                int += i64::from(w);
            } else {
                *conn.entry(q).or_insert(0) += i64::from(w);
            }
        }
        let w = g.weights(v)[0];
        let best =
            conn.iter().filter(|(&q, _)| accepts(pw, q, w)).min_by_key(|(&q, &c)| (pw[q] + w > lim.get(q, 0), -c, q));
        if let Some((&q, &c)) = best {
            cand.push((pw[q] + w > lim.get(q, 0), int - c, v, q));
        }
    }
    cand.sort_unstable();
    let mut moved = false;
    for (_, _, v, q) in cand {
        let w = g.weights(v)[0];
        if pw[p] <= lim.get(p, 0) {
            break;
        }
        // Weights changed since the candidates were listed.
        if !accepts(pw, q, w) {
            continue;
        }
        *stamp += 1;
        if stays_connected(g, parts, v, size[p], mark, *stamp) {
            parts[v] = q as u32;
            pw[p] -= w;
            pw[q] += w;
            size[p] -= 1;
            size[q] += 1;
            moved = true;
        }
    }
    moved
}
