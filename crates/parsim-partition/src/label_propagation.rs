//! Size-constrained label propagation: start from a streaming (LDG)
//! assignment, then let every vertex, in random order, join the part most
//! of its edge weight goes to, while parts stay within their limits. Fast
//! and good on clustered and social graphs.

use parsim_core::rng::StreamKey;

use crate::graph::Graph;
use crate::partition::{Config, Limits};
use crate::streaming::{stream_graph, Streaming};

/// Label propagation for `rounds` rounds (stops early when nothing moves).
pub fn label_propagation(g: &Graph, cfg: &Config, rounds: usize) -> Vec<u32> {
    let mut parts = stream_graph(g, cfg, Streaming::Ldg);
    let lim = Limits::new(cfg, &g.total_weights());
    let (k, ncon) = (cfg.k, g.ncon);
    let mut pw = vec![0i64; k * ncon];
    for v in 0..g.n() {
        for (c, w) in g.weights(v).iter().enumerate() {
            pw[parts[v] as usize * ncon + c] += w;
        }
    }
    let mut rng = StreamKey::new(cfg.seed).purpose("parsim.partition.lp").stream();
    let mut conn = vec![0i64; k];
    let mut touched: Vec<usize> = Vec::new();
    for _ in 0..rounds {
        let mut moved = 0;
        for v in crate::multilevel::permutation(g.n(), &mut rng) {
            let v = v as usize;
            let p = parts[v] as usize;
            for (&u, &w) in g.neighbours(v).iter().zip(g.edge_weights(v)) {
                let q = parts[u as usize] as usize;
                if conn[q] == 0 {
                    touched.push(q);
                }
                conn[q] += i64::from(w);
            }
            let mut best = p;
            for &q in &touched {
                let fits = (0..ncon).all(|c| pw[q * ncon + c] + g.weights(v)[c] <= lim.get(q, c));
                if conn[q] > conn[best] && q != p && fits {
                    best = q;
                }
            }
            for &q in &touched {
                conn[q] = 0;
            }
            touched.clear();
            if best != p {
                for c in 0..ncon {
                    pw[p * ncon + c] -= g.weights(v)[c];
                    pw[best * ncon + c] += g.weights(v)[c];
                }
                parts[v] = best as u32;
                moved += 1;
            }
        }
        if moved == 0 {
            break;
        }
    }
    parts
}
