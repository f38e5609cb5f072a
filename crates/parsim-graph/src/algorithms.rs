//! PageRank, single-source shortest paths and connected components as Pregel
//! vertex programs and as GAS programs, with the plain sequential code they
//! are checked against.

use std::cmp::Ordering;
use std::collections::BinaryHeap;

use parsim_core::ExactSum;

use crate::csr::Csr;
use crate::gas::GasProgram;
use crate::pregel::{Aggregate, Context, VertexProgram};

/// PageRank with damping `damping` for `iterations` iterations, starting at
/// 1/N; the rank of vertices without edges is spread over all vertices.
#[derive(Clone, Copy, Debug)]
pub struct PageRank {
    /// The damping factor (0.85 usually).
    pub damping: f64,
    /// Iterations.
    pub iterations: u64,
}

impl VertexProgram for PageRank {
    type Value = f64;
    type Message = f64;

    fn init(&self, _v: u32, _degree: usize) -> f64 {
        0.0
    }

    fn compute(&self, ctx: &mut Context<'_, f64>, value: &mut f64, messages: &[f64]) {
        let n = ctx.num_vertices() as f64;
        if ctx.superstep() == 0 {
            *value = 1.0 / n;
        } else {
            let mut s = 0.0;
            for m in messages {
                s += m;
            }
            *value = (1.0 - self.damping) / n + self.damping * (s + ctx.aggregated(0) / n);
        }
        if ctx.superstep() < self.iterations {
            let d = ctx.degree();
            if d == 0 {
                ctx.aggregate(0, *value);
            } else {
                ctx.send_to_neighbours(*value / d as f64);
            }
        } else {
            ctx.vote_to_halt();
        }
    }

    fn aggregators(&self) -> &[Aggregate] {
        &[Aggregate::Sum]
    }
}

/// PageRank in GAS form: the same iteration as [`PageRank`], values starting at 1/N.
#[derive(Clone, Copy, Debug)]
pub struct GasPageRank {
    /// The damping factor.
    pub damping: f64,
    /// Vertices in the graph.
    pub n: usize,
}

impl GasProgram for GasPageRank {
    type Value = f64;
    type Acc = f64;

    fn init(&self, _v: u32, _degree: usize) -> f64 {
        1.0 / self.n as f64
    }
    fn gather(&self, nbr: &f64, nbr_degree: usize, _w: f64) -> f64 {
        nbr / nbr_degree as f64
    }
    fn sum(&self, a: f64, b: f64) -> f64 {
        a + b
    }
    fn apply(&self, _v: u32, _degree: usize, _old: &f64, acc: Option<f64>, dangling: f64) -> f64 {
        let n = self.n as f64;
        (1.0 - self.damping) / n + self.damping * (acc.unwrap_or(0.0) + dangling / n)
    }
    fn contribute(&self, value: &f64, degree: usize) -> f64 {
        if degree == 0 {
            *value
        } else {
            0.0
        }
    }
    fn always_active(&self) -> bool {
        true
    }
}

/// Sequential PageRank: the same iteration, neighbours summed in id order.
pub fn pagerank_reference(g: &Csr, damping: f64, iterations: u64) -> Vec<f64> {
    let n = g.n();
    let mut r = vec![1.0 / n as f64; n];
    for _ in 0..iterations {
        let mut dangling = ExactSum::new();
        for v in 0..n {
            if g.degree(v) == 0 {
                dangling.add(r[v]);
            }
        }
        let d = dangling.value();
        let next: Vec<f64> = (0..n)
            .map(|v| {
                let mut s = 0.0;
                for &u in g.neighbours(v) {
                    s += r[u as usize] / g.degree(u as usize) as f64;
                }
                (1.0 - damping) / n as f64 + damping * (s + d / n as f64)
            })
            .collect();
        r = next;
    }
    r
}

/// Shortest path lengths from `source` (edge weights, 1 without); +∞ where unreachable.
#[derive(Clone, Copy, Debug)]
pub struct Sssp {
    /// The source vertex.
    pub source: u32,
}

impl VertexProgram for Sssp {
    type Value = f64;
    type Message = f64;
    const COMBINES: bool = true;

    fn init(&self, _v: u32, _degree: usize) -> f64 {
        f64::INFINITY
    }

    fn compute(&self, ctx: &mut Context<'_, f64>, value: &mut f64, messages: &[f64]) {
        let best = if ctx.superstep() == 0 && ctx.vertex() == self.source {
            0.0
        } else {
            messages.iter().copied().fold(f64::INFINITY, f64::min)
        };
        if best < *value {
            *value = best;
            let d = *value;
            ctx.send_to_neighbours_with(|_, w| d + w);
        }
        ctx.vote_to_halt();
    }

    fn combine(&self, a: f64, b: f64) -> f64 {
        a.min(b)
    }
}

impl GasProgram for Sssp {
    type Value = f64;
    type Acc = f64;

    fn init(&self, v: u32, _degree: usize) -> f64 {
        if v == self.source {
            0.0
        } else {
            f64::INFINITY
        }
    }
    fn gather(&self, nbr: &f64, _nbr_degree: usize, w: f64) -> f64 {
        nbr + w
    }
    fn sum(&self, a: f64, b: f64) -> f64 {
        a.min(b)
    }
    fn apply(&self, _v: u32, _degree: usize, old: &f64, acc: Option<f64>, _total: f64) -> f64 {
        acc.map_or(*old, |a| a.min(*old))
    }
}

#[derive(PartialEq)]
struct Item(f64, u32);
impl Eq for Item {}
impl PartialOrd for Item {
    fn partial_cmp(&self, o: &Self) -> Option<Ordering> {
        Some(self.cmp(o))
    }
}
impl Ord for Item {
    fn cmp(&self, o: &Self) -> Ordering {
        o.0.total_cmp(&self.0).then(o.1.cmp(&self.1))
    }
}

/// Dijkstra's algorithm (the sequential reference for [`Sssp`]).
pub fn sssp_reference(g: &Csr, source: u32) -> Vec<f64> {
    let mut dist = vec![f64::INFINITY; g.n()];
    let mut heap = BinaryHeap::new();
    dist[source as usize] = 0.0;
    heap.push(Item(0.0, source));
    while let Some(Item(d, v)) = heap.pop() {
        if d > dist[v as usize] {
            continue;
        }
        for e in g.row(v as usize) {
            let u = g.adj[e] as usize;
            let nd = d + g.weight_at(e);
            if nd < dist[u] {
                dist[u] = nd;
                heap.push(Item(nd, u as u32));
            }
        }
    }
    dist
}

/// Connected components: every vertex ends with the smallest id of its component.
#[derive(Clone, Copy, Debug)]
pub struct Components;

impl VertexProgram for Components {
    type Value = u32;
    type Message = u32;
    const COMBINES: bool = true;

    fn init(&self, v: u32, _degree: usize) -> u32 {
        v
    }

    fn compute(&self, ctx: &mut Context<'_, u32>, value: &mut u32, messages: &[u32]) {
        let m = messages.iter().copied().min().unwrap_or(u32::MAX);
        if ctx.superstep() == 0 || m < *value {
            *value = (*value).min(m);
            ctx.send_to_neighbours(*value);
        }
        ctx.vote_to_halt();
    }

    fn combine(&self, a: u32, b: u32) -> u32 {
        a.min(b)
    }
}

impl GasProgram for Components {
    type Value = u32;
    type Acc = u32;

    fn init(&self, v: u32, _degree: usize) -> u32 {
        v
    }
    fn gather(&self, nbr: &u32, _nbr_degree: usize, _w: f64) -> u32 {
        *nbr
    }
    fn sum(&self, a: u32, b: u32) -> u32 {
        a.min(b)
    }
    fn apply(&self, _v: u32, _degree: usize, old: &u32, acc: Option<u32>, _total: f64) -> u32 {
        acc.map_or(*old, |a| a.min(*old))
    }
}

/// Breadth-first search from every unvisited vertex in id order (the
/// sequential reference for [`Components`]).
pub fn components_reference(g: &Csr) -> Vec<u32> {
    let n = g.n();
    let mut label = vec![u32::MAX; n];
    let mut queue = std::collections::VecDeque::new();
    for s in 0..n {
        if label[s] != u32::MAX {
            continue;
        }
        label[s] = s as u32;
        queue.push_back(s);
        while let Some(v) = queue.pop_front() {
            for &u in g.neighbours(v) {
                if label[u as usize] == u32::MAX {
                    label[u as usize] = s as u32;
                    queue.push_back(u as usize);
                }
            }
        }
    }
    label
}
