//! Vertex-cut (edge) partitioning for power-law graphs: every edge goes to
//! one part, a vertex is replicated on every part holding one of its edges.
//! Random hashing, PowerGraph's greedy rule, and HDRF (high-degree vertices
//! are replicated first).

use crate::graph::Graph;

/// The method.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum VertexCut {
    /// Part = hash(u, v) mod k.
    Hash,
    /// PowerGraph's greedy placement.
    Greedy,
    /// High-Degree Replicated First (Petroni et al., λ = 1).
    Hdrf,
}

/// An edge partition and its quality.
#[derive(Clone, Debug, PartialEq)]
pub struct EdgePartition {
    /// The edges `(u, v)`, u < v, in the graph's order.
    pub edges: Vec<(u32, u32)>,
    /// The part of each edge.
    pub parts: Vec<u32>,
    /// Σ_v |parts holding v's edges| / (vertices with an edge).
    pub replication_factor: f64,
    /// max_p |edges of p| / (m / k).
    pub edge_balance: f64,
}

fn mix(a: u64) -> u64 {
    let mut z = a.wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// Partitions `g`'s edges into `k` parts, streaming them in (u, v) order.
/// Greedy and HDRF never fill a part beyond (1 + `imbalance`)·⌈m/k⌉ edges.
pub fn vertex_cut(g: &Graph, k: usize, method: VertexCut, seed: u64, imbalance: f64) -> EdgePartition {
    let n = g.n();
    let mut edges = Vec::with_capacity(g.edges());
    for v in 0..n {
        for &u in g.neighbours(v) {
            if (v as u32) < u {
                edges.push((v as u32, u));
            }
        }
    }
    // A[v]: the parts v is replicated on, as a bitset of k bits.
    let words = k.div_ceil(64);
    let mut reps = vec![0u64; n * words];
    let has = |reps: &[u64], v: usize, p: usize| reps[v * words + p / 64] >> (p % 64) & 1 == 1;
    let mut load = vec![0u64; k];
    let mut degree = vec![0u64; n]; // partial degrees (HDRF)
    let mut parts = Vec::with_capacity(edges.len());
    let cap = ((1.0 + imbalance) * (edges.len() as f64 / k as f64).ceil()).floor().max(1.0) as u64;
    for &(u, v) in &edges {
        let (u, v) = (u as usize, v as usize);
        let least = |cands: &mut dyn Iterator<Item = usize>, load: &[u64]| cands.min_by_key(|&p| (load[p], p));
        let p = match method {
            VertexCut::Hash => (mix(seed ^ mix(((u as u64) << 32) | v as u64)) % k as u64) as usize,
            VertexCut::Greedy => {
                let room = |p: usize| load[p] < cap;
                let both = least(&mut (0..k).filter(|&p| room(p) && has(&reps, u, p) && has(&reps, v, p)), &load);
                let any = || least(&mut (0..k).filter(|&p| room(p) && (has(&reps, u, p) || has(&reps, v, p))), &load);
                both.or_else(any).unwrap_or_else(|| least(&mut (0..k), &load).expect("k > 0"))
            }
            VertexCut::Hdrf => {
                degree[u] += 1;
                degree[v] += 1;
                let (du, dv) = (degree[u] as f64, degree[v] as f64);
                let (tu, tv) = (du / (du + dv), dv / (du + dv));
                let (maxl, minl) =
                    (*load.iter().max().expect("k > 0") as f64, *load.iter().min().expect("k > 0") as f64);
                let mut best = (f64::NEG_INFINITY, 0usize);
                for p in (0..k).filter(|&p| load[p] < cap) {
                    let g_u = if has(&reps, u, p) { 1.0 + (1.0 - tu) } else { 0.0 };
                    let g_v = if has(&reps, v, p) { 1.0 + (1.0 - tv) } else { 0.0 };
                    let bal = (maxl - load[p] as f64) / (1.0 + maxl - minl);
                    let s = g_u + g_v + bal;
                    if s > best.0 {
                        best = (s, p);
                    }
                }
                if best.0 == f64::NEG_INFINITY {
                    least(&mut (0..k), &load).expect("k > 0")
                } else {
                    best.1
                }
            }
        };
        reps[u * words + p / 64] |= 1 << (p % 64);
        reps[v * words + p / 64] |= 1 << (p % 64);
        load[p] += 1;
        parts.push(p as u32);
    }
    let (mut copies, mut present) = (0u64, 0u64);
    for v in 0..n {
        let c: u32 = reps[v * words..(v + 1) * words].iter().map(|w| w.count_ones()).sum();
        if c > 0 {
            copies += u64::from(c);
            present += 1;
        }
    }
    let m = edges.len().max(1) as f64;
    EdgePartition {
        edges,
        parts,
        replication_factor: copies as f64 / present.max(1) as f64,
        edge_balance: *load.iter().max().unwrap_or(&0) as f64 / (m / k as f64),
    }
}
