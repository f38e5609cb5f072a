//! k-way refinement at every level of the uncoarsening: greedy moves of
//! boundary vertices to the adjacent part they are most connected to, when
//! that lowers the cut (or keeps it and evens the weights) within the
//! limits; then, if a part is still over its limit, the cheapest moves out of it.

use parsim_core::mem::prefetch;
use parsim_core::rng::Stream;

use crate::graph::Graph;
use crate::partition::Limits;

pub(crate) struct KWay<'a> {
    g: &'a Graph,
    k: usize,
    lim: &'a Limits,
    pub parts: Vec<u32>,
    /// Part weights, part-major.
    pub pw: Vec<i64>,
    conn: Vec<i64>,
    touched: Vec<u32>,
    /// Pinned vertices (`FREE` or their part): never moved.
    pub fixed: Option<&'a [u32]>,
    /// Repartitioning: each vertex's home part, and the cost per unit weight of leaving it.
    pub home: Option<(&'a [u32], i64)>,
    /// A superset of the boundary: the vertices that may have a neighbour in
    /// another part (each once; `is_cand` flags them). Moves add the moved
    /// vertex and its neighbours; [`KWay::boundary`] trims it to the boundary.
    cand: Vec<u32>,
    is_cand: Vec<bool>,
}

impl<'a> KWay<'a> {
    /// Refinement of `parts`; `cand`, when given, flags a superset of the
    /// boundary (the vertices whose coarse vertex was on the coarse boundary).
    pub fn new(g: &'a Graph, k: usize, lim: &'a Limits, parts: Vec<u32>, cand: Option<Vec<bool>>) -> Self {
        let mut pw = vec![0i64; k * g.ncon];
        for v in 0..g.n() {
            for (c, w) in g.weights(v).iter().enumerate() {
                pw[parts[v] as usize * g.ncon + c] += w;
            }
        }
        let is_cand = cand.unwrap_or_else(|| vec![true; g.n()]);
        let cand = (0..g.n() as u32).filter(|&v| is_cand[v as usize]).collect();
        KWay { g, k, lim, parts, pw, conn: vec![0; k], touched: Vec::new(), fixed: None, home: None, cand, is_cand }
    }

    /// Flags of the boundary vertices (for the next finer level's candidates).
    pub fn boundary_flags(&mut self) -> Vec<bool> {
        self.trim();
        std::mem::take(&mut self.is_cand)
    }

    #[inline]
    fn on_boundary(&self, v: usize) -> bool {
        let p = self.parts[v];
        self.g.neighbours(v).iter().any(|&u| self.parts[u as usize] != p)
    }

    /// Drops the candidates that are not on the boundary.
    fn trim(&mut self) {
        let mut cand = std::mem::take(&mut self.cand);
        cand.retain(|&v| {
            let keep = self.on_boundary(v as usize);
            if !keep {
                self.is_cand[v as usize] = false;
            }
            keep
        });
        self.cand = cand;
    }

    #[inline]
    fn pinned(&self, v: usize) -> bool {
        self.fixed.is_some_and(|f| f[v] != crate::partition::FREE)
    }

    /// The change in migration cost of moving `v` from `p` to `q` (as a gain).
    #[inline]
    fn migration(&self, v: usize, p: usize, q: usize) -> i64 {
        match self.home {
            None => 0,
            Some((home, alpha)) => {
                let h = home[v] as usize;
                alpha * self.g.vwgt[v * self.g.ncon] * (i64::from(q == h) - i64::from(p == h))
            }
        }
    }

    #[inline]
    fn fits(&self, v: usize, q: usize) -> bool {
        let ncon = self.g.ncon;
        if ncon == 1 {
            return self.pw[q] + self.g.vwgt[v] <= self.lim.max[q];
        }
        self.g.weights(v).iter().enumerate().all(|(c, &w)| self.pw[q * ncon + c] + w <= self.lim.get(q, c))
    }

    #[inline]
    fn over(&self, p: usize) -> bool {
        if self.g.ncon == 1 {
            return self.pw[p] > self.lim.max[p];
        }
        (0..self.g.ncon).any(|c| self.pw[p * self.g.ncon + c] > self.lim.get(p, c))
    }

    /// Load of part `p` relative to its limit (the max over constraints).
    #[inline]
    fn fill(&self, p: usize) -> f64 {
        if self.g.ncon == 1 {
            return self.pw[p] as f64 / self.lim.max[p].max(1) as f64;
        }
        (0..self.g.ncon)
            .map(|c| self.pw[p * self.g.ncon + c] as f64 / self.lim.get(p, c).max(1) as f64)
            .fold(0.0, f64::max)
    }

    #[inline]
    fn moveto(&mut self, v: usize, q: usize) {
        let ncon = self.g.ncon;
        let p = self.parts[v] as usize;
        for (c, &w) in self.g.weights(v).iter().enumerate() {
            self.pw[p * ncon + c] -= w;
            self.pw[q * ncon + c] += w;
        }
        self.parts[v] = q as u32;
        for &u in std::iter::once(&(v as u32)).chain(self.g.neighbours(v)) {
            if !self.is_cand[u as usize] {
                self.is_cand[u as usize] = true;
                self.cand.push(u);
            }
        }
    }

    /// Fills `conn` with v's connection to each adjacent part; returns its internal weight.
    #[inline]
    fn connect(&mut self, v: usize) -> i64 {
        let p = self.parts[v] as usize;
        for (&u, &w) in self.g.neighbours(v).iter().zip(self.g.edge_weights(v)) {
            let q = self.parts[u as usize] as usize;
            if self.conn[q] == 0 {
                self.touched.push(q as u32);
            }
            self.conn[q] += i64::from(w);
        }
        self.conn[p]
    }

    fn clear(&mut self) {
        for &q in &self.touched {
            self.conn[q as usize] = 0;
        }
        self.touched.clear();
    }

    /// The vertices with a neighbour in another part, in random order.
    fn boundary(&mut self, rng: &mut Stream) -> Vec<u32> {
        self.trim();
        let mut b = self.cand.clone();
        for i in (1..b.len()).rev() {
            let j = rng.below(i as u64 + 1) as usize;
            b.swap(i, j);
        }
        b
    }

    /// Greedy passes over the boundary; returns the cut reduction.
    pub fn greedy(&mut self, passes: usize, rng: &mut Stream) -> i64 {
        let mut gained = 0;
        // Pass 1 visits the whole boundary; later passes only the vertices
        // next to a move of the pass before (nothing else can have changed).
        let mut visit = self.boundary(rng);
        let mut stamp = vec![0u32; self.g.n()];
        let mut next = Vec::new();
        let far = super::coarsen::beyond_cache(self.g);
        for pass in 1..=passes as u32 {
            let mut moved = 0;
            let mut pass_gain = 0;
            for (i, &v) in visit.iter().enumerate() {
                // Random order: fetch offsets 16 ahead, the row and part 8 ahead.
                if far {
                    if let Some(&w) = visit.get(i + 16) {
                        prefetch(&self.g.xadj, w as usize);
                    }
                    if let Some(&w) = visit.get(i + 8) {
                        prefetch(&self.parts, w as usize);
                        prefetch(&self.g.adjncy, self.g.xadj[w as usize] as usize);
                    }
                }
                let v = v as usize;
                if self.pinned(v) {
                    continue;
                }
                let p = self.parts[v] as usize;
                let int = self.connect(v);
                if self.touched.len() <= 1 && self.touched.first().is_none_or(|&q| q as usize == p) {
                    self.clear();
                    continue;
                }
                let (mut best, mut bgain) = (usize::MAX, i64::MIN);
                let over = self.over(p);
                for i in 0..self.touched.len() {
                    let q = self.touched[i] as usize;
                    if q == p {
                        continue;
                    }
                    let gain = self.conn[q] - int;
                    let better =
                        gain > bgain || (gain == bgain && best != usize::MAX && self.fill(q) < self.fill(best));
                    if better && (self.fits(v, q) || (over && !self.over(q) && self.fill(q) < self.fill(p))) {
                        best = q;
                        bgain = gain;
                    }
                }
                self.clear();
                if best == usize::MAX {
                    continue;
                }
                let evens = self.fill(p) > self.fill(best) + 1e-12 && {
                    // Moving must not make `best` fuller than `p` was.
                    let ncon = self.g.ncon;
                    (0..ncon).all(|c| self.pw[best * ncon + c] + self.g.weights(v)[c] <= self.pw[p * ncon + c])
                };
                if bgain > 0 || (bgain == 0 && evens) || over {
                    self.moveto(v, best);
                    moved += 1;
                    pass_gain += bgain;
                    for &u in std::iter::once(&(v as u32)).chain(self.g.neighbours(v)) {
                        if stamp[u as usize] != pass {
                            stamp[u as usize] = pass;
                            next.push(u);
                        }
                    }
                }
            }
            visit.clear();
            std::mem::swap(&mut visit, &mut next);
            for i in (1..visit.len()).rev() {
                let j = rng.below(i as u64 + 1) as usize;
                visit.swap(i, j);
            }
            gained += pass_gain;
            if moved == 0 || (pass_gain <= 0 && !(0..self.k).any(|p| self.over(p))) {
                break;
            }
        }
        gained
    }

    /// The best admissible move of `v` to an adjacent part: (gain, part).
    fn best_move(&mut self, v: usize) -> Option<(i64, usize)> {
        if self.pinned(v) {
            return None;
        }
        let p = self.parts[v] as usize;
        let int = self.connect(v);
        let mut best: Option<(i64, usize)> = None;
        for i in 0..self.touched.len() {
            let q = self.touched[i] as usize;
            if q == p || !self.fits(v, q) {
                continue;
            }
            let gain = self.conn[q] - int + self.migration(v, p, q);
            if best.is_none_or(|(bg, bq)| gain > bg || (gain == bg && self.fill(q) < self.fill(bq))) {
                best = Some((gain, q));
            }
        }
        self.clear();
        best
    }

    /// k-way Fiduccia–Mattheyses: repeatedly move the boundary vertex with
    /// the best gain (negative gains too), lock it, and keep the best prefix
    /// of the move sequence. Returns the cut reduction.
    pub fn fm(&mut self, rounds: usize, rng: &mut Stream) -> i64 {
        let n = self.g.n();
        let mut total = 0;
        let mut stamp = vec![0u32; n];
        for round in 1..=rounds as u32 {
            let mut heap: std::collections::BinaryHeap<(i64, u32, u32)> = std::collections::BinaryHeap::new();
            for v in self.boundary(rng) {
                if let Some((gain, _)) = self.best_move(v as usize) {
                    heap.push((gain, rand_core::RngCore::next_u32(rng), v));
                }
            }
            let mut moves: Vec<(u32, u32)> = Vec::new();
            let (mut cur, mut best, mut best_len, mut since) = (0i64, 0i64, 0usize, 0usize);
            let limit = (n / 50).clamp(50, 1000);
            while let Some((gv, _, v)) = heap.pop() {
                let v = v as usize;
                if stamp[v] == round {
                    continue;
                }
                let Some((gain, q)) = self.best_move(v) else { continue };
                if gain != gv {
                    heap.push((gain, rand_core::RngCore::next_u32(rng), v as u32));
                    continue;
                }
                let p = self.parts[v];
                self.moveto(v, q);
                stamp[v] = round;
                moves.push((v as u32, p));
                cur += gain;
                if cur > best {
                    (best, best_len, since) = (cur, moves.len(), 0);
                } else {
                    since += 1;
                    if since > limit {
                        break;
                    }
                }
                for i in self.g.xadj[v] as usize..self.g.xadj[v + 1] as usize {
                    let u = self.g.adjncy[i] as usize;
                    if stamp[u] != round {
                        if let Some((gu, _)) = self.best_move(u) {
                            heap.push((gu, rand_core::RngCore::next_u32(rng), u as u32));
                        }
                    }
                }
            }
            for &(v, p) in moves[best_len..].iter().rev() {
                self.moveto(v as usize, p as usize);
            }
            total += best;
            if best <= 0 {
                break;
            }
        }
        total
    }

    /// Moves vertices out of parts over their limit, cheapest first, into
    /// parts with room (adjacent ones preferred). Returns whether all parts fit.
    pub fn rebalance(&mut self) -> bool {
        let n = self.g.n();
        for round in 0..4 {
            if !(0..self.k).any(|p| self.over(p)) {
                return true;
            }
            // The first rounds move boundary vertices only; later ones any.
            let from: Vec<u32> = if round < 2 {
                self.trim();
                self.cand.clone()
            } else {
                (0..n as u32).collect()
            };
            // Candidates: (loss, v, target), computed once per round.
            let mut cand: Vec<(i64, u32, u32)> = Vec::new();
            for v in from {
                let v = v as usize;
                let p = self.parts[v] as usize;
                if !self.over(p) || self.pinned(v) {
                    continue;
                }
                let int = self.connect(v);
                let mut best: Option<(i64, usize)> = None;
                for i in 0..self.touched.len() {
                    let q = self.touched[i] as usize;
                    if q != p && !self.over(q) {
                        let loss = int - self.conn[q] - self.migration(v, p, q);
                        if best.is_none_or(|(bl, _)| loss < bl) {
                            best = Some((loss, q));
                        }
                    }
                }
                self.clear();
                let best = best.or_else(|| {
                    // No adjacent part has room: the emptiest part.
                    let q = (0..self.k).filter(|&q| q != p).min_by(|&a, &b| self.fill(a).total_cmp(&self.fill(b)))?;
                    Some((int, q))
                });
                if let Some((loss, q)) = best {
                    cand.push((loss, v as u32, q as u32));
                }
            }
            cand.sort_unstable();
            for (_, v, q) in cand {
                let (v, q) = (v as usize, q as usize);
                let p = self.parts[v] as usize;
                if self.over(p) && self.fits(v, q) {
                    self.moveto(v, q);
                }
            }
        }
        !(0..self.k).any(|p| self.over(p))
    }

    /// Change in total communication volume if `v` moves to `q`
    /// (vsize-weighted; negative: the volume falls).
    fn volume_delta(&self, v: usize, q: usize) -> i64 {
        let g = self.g;
        let size = |u: usize| g.vsize.as_ref().map_or(1, |s| s[u]);
        let p = self.parts[v] as usize;
        let count =
            |u: usize, x: usize| g.neighbours(u).iter().filter(|&&w| self.parts[w as usize] as usize == x).count();
        // v itself: it stops seeing q and starts seeing p (if it has neighbours there).
        let mut d = size(v) * (i64::from(count(v, p) > 0) - 1);
        for &u in g.neighbours(v) {
            let u = u as usize;
            let r = self.parts[u] as usize;
            // u loses p if v was its only neighbour there; gains q if it had none.
            if r != p && count(u, p) == 1 {
                d -= size(u);
            }
            if r != q && count(u, q) == 0 {
                d += size(u);
            }
        }
        d
    }

    /// Greedy passes that move boundary vertices to the adjacent part that
    /// lowers the total communication volume (plus migration cost, when
    /// repartitioning) most (ties: the lower cut), within the limits.
    /// Returns the reduction.
    pub fn volume_greedy(&mut self, passes: usize, rng: &mut Stream) -> i64 {
        let mut gained = 0;
        for _ in 0..passes {
            let mut pass_gain = 0;
            for v in self.boundary(rng) {
                let v = v as usize;
                if self.pinned(v) {
                    continue;
                }
                let p = self.parts[v] as usize;
                let int = self.connect(v);
                let mut best: Option<(i64, i64, usize)> = None;
                for i in 0..self.touched.len() {
                    let q = self.touched[i] as usize;
                    if q == p || !self.fits(v, q) {
                        continue;
                    }
                    // With homes (repartitioning), migration counts against the volume.
                    let key = (self.migration(v, p, q) - self.volume_delta(v, q), self.conn[q] - int);
                    if key.0 > 0 && best.is_none_or(|(a, b, _)| key > (a, b)) {
                        best = Some((key.0, key.1, q));
                    }
                }
                self.clear();
                if let Some((vg, _, q)) = best {
                    self.moveto(v, q);
                    pass_gain += vg;
                }
            }
            gained += pass_gain;
            if pass_gain == 0 {
                break;
            }
        }
        gained
    }
}
