//! Spectral partitioning: the Fiedler vector of the graph Laplacian (the
//! eigenvector of its second-smallest eigenvalue, by Lanczos iteration with
//! full reorthogonalisation), split at the weighted median; recursive
//! bisection for k parts.

use parsim_core::rng::StreamKey;

use crate::graph::Graph;
use crate::partition::Config;

/// y = L x, L = D − A (weighted).
fn laplacian(g: &Graph, x: &[f64], y: &mut [f64]) {
    for v in 0..g.n() {
        let mut s = 0.0;
        let mut d = 0.0;
        for (&u, &w) in g.neighbours(v).iter().zip(g.edge_weights(v)) {
            s += w as f64 * x[u as usize];
            d += w as f64;
        }
        y[v] = d * x[v] - s;
    }
}

fn dot(a: &[f64], b: &[f64]) -> f64 {
    a.iter().zip(b).map(|(x, y)| x * y).sum()
}

/// Eigen-decomposition of a symmetric tridiagonal matrix (diagonal `d`,
/// off-diagonal `e`) by implicit QL; returns eigenvalues and eigenvectors (columns).
fn tridiagonal_eigen(d: &[f64], e: &[f64]) -> (Vec<f64>, Vec<Vec<f64>>) {
    tridiagonal_ql(d, e, true)
}

/// Implicit QL on a symmetric tridiagonal matrix; the eigenvectors only
/// when `vectors` (otherwise the second value is empty).
fn tridiagonal_ql(d: &[f64], e: &[f64], vectors: bool) -> (Vec<f64>, Vec<Vec<f64>>) {
    let n = d.len();
    let mut d = d.to_vec();
    let mut e: Vec<f64> = e.iter().copied().chain(std::iter::once(0.0)).collect();
    let mut z = vec![vec![0.0; if vectors { n } else { 0 }]; if vectors { n } else { 0 }];
    for (i, row) in z.iter_mut().enumerate() {
        row[i] = 1.0;
    }
    for l in 0..n {
        let mut iter = 0;
        loop {
            let mut m = l;
            while m + 1 < n {
                let dd = d[m].abs() + d[m + 1].abs();
                if e[m].abs() <= f64::EPSILON * dd {
                    break;
                }
                m += 1;
            }
            if m == l || iter > 60 {
                break;
            }
            iter += 1;
            let mut g = (d[l + 1] - d[l]) / (2.0 * e[l]);
            let mut r = (g * g + 1.0).sqrt();
            g = d[m] - d[l] + e[l] / (g + r.copysign(g));
            let (mut s, mut c, mut p) = (1.0, 1.0, 0.0);
            let mut i = m;
            while i > l {
                i -= 1;
                let f = s * e[i];
                let b = c * e[i];
                r = (f * f + g * g).sqrt();
                e[i + 1] = r;
                if r == 0.0 {
                    d[i + 1] -= p;
                    e[m] = 0.0;
                    break;
                }
                s = f / r;
                c = g / r;
                g = d[i + 1] - p;
                r = (d[i] - g) * s + 2.0 * c * b;
                p = s * r;
                d[i + 1] = g + p;
                g = c * r - b;
                for row in z.iter_mut() {
                    let t = row[i + 1];
                    row[i + 1] = s * row[i] + c * t;
                    row[i] = c * row[i] - s * t;
                }
            }
            if r == 0.0 && i > l {
                continue;
            }
            d[l] -= p;
            e[l] = g;
            e[m] = 0.0;
        }
    }
    if !vectors {
        return (d, Vec::new());
    }
    let cols = (0..n).map(|j| (0..n).map(|i| z[i][j]).collect()).collect();
    (d, cols)
}

/// The eigenvector of the tridiagonal matrix (`d`, `e`) for its smallest
/// eigenvalue: QL for the eigenvalues, then inverse iteration (Thomas
/// algorithm on T − λI, λ nudged off the eigenvalue), O(n²) instead of O(n³).
fn smallest_eigvec(d: &[f64], e: &[f64]) -> Vec<f64> {
    let n = d.len();
    let (vals, _) = tridiagonal_ql(d, e, false);
    let lmin = vals.iter().copied().fold(f64::INFINITY, f64::min);
    let scale = vals.iter().map(|v| v.abs()).fold(1e-300, f64::max);
    let shift = lmin - 1e-10 * scale;
    let mut x: Vec<f64> = (0..n).map(|i| 1.0 + 0.01 * i as f64).collect();
    let (mut c, mut y) = (vec![0.0; n], vec![0.0; n]);
    for _ in 0..3 {
        // Solve (T − shift I) y = x.
        let mut denom = d[0] - shift;
        c[0] = if n > 1 { e[0] / nonzero(denom) } else { 0.0 };
        y[0] = x[0] / nonzero(denom);
        for i in 1..n {
            denom = d[i] - shift - e[i - 1] * c[i - 1];
            c[i] = if i + 1 < n { e[i] / nonzero(denom) } else { 0.0 };
            y[i] = (x[i] - e[i - 1] * y[i - 1]) / nonzero(denom);
        }
        for i in (0..n.saturating_sub(1)).rev() {
            y[i] -= c[i] * y[i + 1];
        }
        let norm = dot(&y, &y).sqrt();
        if !(norm.is_finite() && norm > 0.0) {
            break;
        }
        x.iter_mut().zip(&y).for_each(|(a, b)| *a = b / norm);
    }
    x
}

fn nonzero(x: f64) -> f64 {
    if x.abs() < 1e-300 {
        1e-300
    } else {
        x
    }
}

/// An approximate Fiedler vector of (connected or not) `g`, orthogonal to the constant vector.
pub fn fiedler(g: &Graph, seed: u64) -> Vec<f64> {
    fiedler_steps(g, seed, 80, 2)
}

/// Steps between full reorthogonalisations in [`fiedler_steps`] with `reorth = 0`.
const PERIOD: usize = 4;

/// [`fiedler`] with at most `steps` Lanczos steps and `reorth` Gram–Schmidt
/// sweeps per step (0: one sweep every [`PERIOD`] steps): a rougher vector,
/// for a start that FM refines.
pub(crate) fn fiedler_steps(g: &Graph, seed: u64, steps: usize, reorth: usize) -> Vec<f64> {
    let n = g.n();
    if n <= 2 {
        return (0..n).map(|i| i as f64).collect();
    }
    let steps = n.min(steps);
    let mut rng = StreamKey::new(seed).purpose("parsim.partition.lanczos").stream();
    let inv = 1.0 / (n as f64).sqrt();
    let ones = vec![inv; n];
    let mut q: Vec<f64> = (0..n).map(|_| rng.uniform() - 0.5).collect();
    let project = |x: &mut Vec<f64>| {
        let c = dot(x, &ones);
        x.iter_mut().for_each(|v| *v -= c * inv);
    };
    project(&mut q);
    let norm = dot(&q, &q).sqrt();
    q.iter_mut().for_each(|v| *v /= norm);
    let mut basis: Vec<Vec<f64>> = vec![q];
    let (mut alpha, mut beta) = (Vec::new(), Vec::new());
    let mut w = vec![0.0; n];
    for j in 0..steps {
        laplacian(g, &basis[j], &mut w);
        let a = dot(&w, &basis[j]);
        alpha.push(a);
        if reorth == 0 {
            // Periodic reorthogonalisation: the three-term recurrence (O(n) a
            // step), the constant vector kept out, and a full sweep every
            // `PERIOD`th step only (O(n j) then), which keeps the basis close
            // enough to orthogonal for a rough vector at a third of the cost.
            let q = &basis[j];
            match j.checked_sub(1) {
                Some(i) => {
                    let (p, bp) = (&basis[i], beta[i]);
                    for ((x, &qk), &pk) in w.iter_mut().zip(q).zip(p) {
                        *x -= a * qk + bp * pk;
                    }
                }
                None => w.iter_mut().zip(q).for_each(|(x, &qk)| *x -= a * qk),
            }
            project(&mut w);
            if j % PERIOD == PERIOD - 1 {
                for b in &basis {
                    let c = dot(&w, b);
                    w.iter_mut().zip(b).for_each(|(x, y)| *x -= c * y);
                }
                project(&mut w);
            }
        }
        // Full reorthogonalisation (`reorth` sweeps), and against the constant vector.
        for _ in 0..reorth {
            for b in &basis {
                let c = dot(&w, b);
                w.iter_mut().zip(b).for_each(|(x, y)| *x -= c * y);
            }
            project(&mut w);
        }
        let b = dot(&w, &w).sqrt();
        if b < 1e-10 || j + 1 == steps {
            break;
        }
        beta.push(b);
        basis.push(w.iter().map(|x| x / b).collect());
    }
    let m = alpha.len();
    let y = if reorth >= 2 {
        let (vals, vecs) = tridiagonal_eigen(&alpha, &beta[..m - 1]);
        let i = (0..m).min_by(|&a, &b| vals[a].total_cmp(&vals[b])).expect("one value");
        vecs[i].clone()
    } else {
        smallest_eigvec(&alpha, &beta[..m - 1])
    };
    let mut x = vec![0.0; n];
    for (c, b) in y.iter().zip(&basis) {
        x.iter_mut().zip(b).for_each(|(xi, bi)| *xi += c * bi);
    }
    x
}

/// Recursive spectral bisection.
pub fn spectral(g: &Graph, cfg: &Config) -> Vec<u32> {
    let fractions: Vec<f64> = (0..cfg.k).map(|p| cfg.target(p)).collect();
    let mut out = vec![0u32; g.n()];
    let ids: Vec<u32> = (0..g.n() as u32).collect();
    rec(g, &ids, &fractions, 0, cfg.seed, &mut out);
    out
}

fn rec(g: &Graph, ids: &[u32], fractions: &[f64], first: u32, seed: u64, out: &mut [u32]) {
    let k = fractions.len();
    if k == 1 || g.n() <= 1 {
        for &v in ids {
            out[v as usize] = first;
        }
        return;
    }
    let x = fiedler(g, seed);
    let mut order: Vec<u32> = (0..g.n() as u32).collect();
    order.sort_by(|&a, &b| x[a as usize].total_cmp(&x[b as usize]).then(a.cmp(&b)));
    let k1 = k / 2;
    let frac = fractions[..k1].iter().sum::<f64>() / fractions.iter().sum::<f64>();
    let total: f64 = (0..g.n()).map(|v| g.weights(v)[0] as f64).sum();
    let mut acc = 0.0;
    let mut split = 0;
    while split < order.len() - 1 && acc + 0.5 * g.weights(order[split] as usize)[0] as f64 <= frac * total {
        acc += g.weights(order[split] as usize)[0] as f64;
        split += 1;
    }
    let split = split.clamp(k1.min(order.len()), order.len() - (k - k1).min(order.len()));
    let mut side = vec![1u8; g.n()];
    for &v in &order[..split] {
        side[v as usize] = 0;
    }
    for which in 0..2u8 {
        let (sub, sub_ids) = crate::multilevel::subgraph(g, &side, which);
        let global: Vec<u32> = sub_ids.iter().map(|&i| ids[i as usize]).collect();
        let (f, p0) = if which == 0 { (&fractions[..k1], first) } else { (&fractions[k1..], first + k1 as u32) };
        rec(&sub, &global, f, p0, seed.wrapping_add(1), out);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn inverse_iteration_agrees_with_the_full_decomposition() {
        // A Lanczos-like tridiagonal matrix: positive diagonal, small off-diagonal.
        let d: Vec<f64> = (0..25).map(|i| 1.0 + ((i * 7) % 11) as f64 * 0.37).collect();
        let e: Vec<f64> = (0..24).map(|i| 0.2 + ((i * 5) % 7) as f64 * 0.11).collect();
        let (vals, vecs) = tridiagonal_eigen(&d, &e);
        let i = (0..vals.len()).min_by(|&a, &b| vals[a].total_cmp(&vals[b])).unwrap();
        let x = smallest_eigvec(&d, &e);
        let full = &vecs[i];
        let sign = if dot(&x, full) < 0.0 { -1.0 } else { 1.0 };
        let err: f64 = x.iter().zip(full).map(|(a, b)| (sign * a - b).abs()).fold(0.0, f64::max);
        assert!(err < 1e-6, "eigenvectors differ by {err}");
    }

    #[test]
    fn a_rough_fiedler_vector_still_orders_a_path() {
        // Path 0 – 1 – … – 39: the Fiedler vector is monotone along it.
        let e: Vec<(u32, u32, u32)> = (0..39).map(|i| (i, i + 1, 1)).collect();
        let g = Graph::from_edges(40, &e).unwrap();
        // Full reorthogonalisation every step, and every `PERIOD`th (the bisections' choice).
        for reorth in [1, 0] {
            let x = fiedler_steps(&g, 7, 30, reorth);
            // Split at the median value: the halves are contiguous runs.
            let mut order: Vec<usize> = (0..40).collect();
            order.sort_by(|&a, &b| x[a].total_cmp(&x[b]));
            let first: std::collections::BTreeSet<usize> = order[..20].iter().copied().collect();
            assert!(first == (0..20).collect() || first == (20..40).collect(), "reorth {reorth}: {first:?}");
            // Orthogonal to the constant vector.
            let sum: f64 = x.iter().sum();
            let norm = x.iter().map(|v| v * v).sum::<f64>().sqrt();
            assert!(sum.abs() < 1e-9 * norm.max(1.0), "reorth {reorth}: sum {sum}");
        }
    }
}
