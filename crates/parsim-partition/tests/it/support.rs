//! Graphs for the tests.

use std::path::{Path, PathBuf};

use parsim_core::rng::StreamKey;
use parsim_partition::Graph;

/// `../shared/data/graphs/NAME`.
pub fn data(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../../shared/data/graphs").join(name)
}

/// A random graph: `n` vertices, about `m` edges, random weights when `weighted`.
pub fn random_graph(seed: u64, n: usize, m: usize, weighted: bool) -> Graph {
    let mut rng = StreamKey::new(seed).purpose("test.graph").stream();
    let mut edges = Vec::new();
    for _ in 0..m {
        let (u, v) = (rng.below(n as u64) as u32, rng.below(n as u64) as u32);
        if u != v {
            edges.push((u.min(v), u.max(v), if weighted { 1 + rng.below(5) as u32 } else { 1 }));
        }
    }
    // A path through all vertices keeps it connected.
    for v in 1..n as u32 {
        edges.push((v - 1, v, 1));
    }
    let mut g = Graph::from_edges(n, &edges).expect("valid");
    if weighted {
        for w in &mut g.vwgt {
            *w = 1 + rng.below(4) as i64;
        }
    }
    g
}

/// A `w` × `h` grid with coordinates.
pub fn grid(w: usize, h: usize) -> Graph {
    let id = |x: usize, y: usize| (y * w + x) as u32;
    let mut edges = Vec::new();
    for y in 0..h {
        for x in 0..w {
            if x + 1 < w {
                edges.push((id(x, y), id(x + 1, y), 1));
            }
            if y + 1 < h {
                edges.push((id(x, y), id(x, y + 1), 1));
            }
        }
    }
    let mut g = Graph::from_edges(w * h, &edges).expect("grid");
    g.coords = Some((0..w * h).flat_map(|i| [(i % w) as f64, (i / w) as f64]).collect());
    g.dim = 2;
    g
}

/// Sorted adjacency rows with weights: a canonical form to compare graphs.
pub fn canonical(g: &Graph) -> Vec<Vec<(u32, u32)>> {
    (0..g.n())
        .map(|v| {
            let mut r: Vec<(u32, u32)> =
                g.neighbours(v).iter().copied().zip(g.edge_weights(v).iter().copied()).collect();
            r.sort_unstable();
            r
        })
        .collect()
}
