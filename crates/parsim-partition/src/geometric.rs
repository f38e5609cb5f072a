//! Geometric partitioning from vertex coordinates: recursive coordinate
//! bisection (weighted median along the longest axis) and Hilbert
//! space-filling curves (2-D and 3-D) cut into equal-weight segments.

use crate::error::{PartitionError, Result};
use crate::graph::Graph;
use crate::partition::Config;

fn coords(g: &Graph) -> Result<(&[f64], usize)> {
    match &g.coords {
        Some(c) if g.dim >= 1 => Ok((c, g.dim)),
        _ => Err(PartitionError::BadArgument(
            "geometric methods need vertex coordinates (parsim partition --coords FILE)".into(),
        )),
    }
}

/// A scalar load per vertex: its weights, each normalised by its constraint's total.
fn loads(g: &Graph) -> Vec<f64> {
    let total = g.total_weights();
    (0..g.n())
        .map(|v| {
            g.weights(v).iter().zip(&total).map(|(&w, &t)| if t > 0 { w as f64 / t as f64 } else { 0.0 }).sum::<f64>()
                / g.ncon as f64
        })
        .collect()
}

/// Assigns `order` (vertices sorted along some curve or axis) to parts
/// `first..first + fractions.len()` in contiguous segments of the target loads.
fn cut_segments(order: &[u32], load: &[f64], fractions: &[f64], first: u32, out: &mut [u32]) {
    let total: f64 = order.iter().map(|&v| load[v as usize]).sum();
    let want: f64 = fractions.iter().sum();
    let mut acc = 0.0;
    let mut p = 0usize;
    let mut bound = fractions[0] / want * total;
    for (i, &v) in order.iter().enumerate() {
        // Keep at least one vertex for each remaining part.
        let left = order.len() - i;
        while p + 1 < fractions.len() && (acc + 0.5 * load[v as usize] > bound || left <= fractions.len() - 1 - p) {
            p += 1;
            bound += fractions[p] / want * total;
        }
        out[v as usize] = first + p as u32;
        acc += load[v as usize];
    }
}

/// Recursive coordinate bisection.
pub fn rcb(g: &Graph, cfg: &Config) -> Result<Vec<u32>> {
    let (c, dim) = coords(g)?;
    let load = loads(g);
    let fractions: Vec<f64> = (0..cfg.k).map(|p| cfg.target(p)).collect();
    let mut out = vec![0u32; g.n()];
    let mut ids: Vec<u32> = (0..g.n() as u32).collect();
    rcb_rec(c, dim, &load, &mut ids, &fractions, 0, &mut out);
    Ok(out)
}

fn rcb_rec(c: &[f64], dim: usize, load: &[f64], ids: &mut [u32], fractions: &[f64], first: u32, out: &mut [u32]) {
    let k = fractions.len();
    if k == 1 || ids.len() <= 1 {
        for &v in ids.iter() {
            out[v as usize] = first;
        }
        return;
    }
    // The longest axis of the bounding box.
    let axis = (0..dim)
        .max_by(|&a, &b| {
            let ext = |d: usize| {
                let (lo, hi) = ids.iter().fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), &v| {
                    let x = c[v as usize * dim + d];
                    (lo.min(x), hi.max(x))
                });
                hi - lo
            };
            ext(a).total_cmp(&ext(b))
        })
        .unwrap_or(0);
    ids.sort_by(|&a, &b| c[a as usize * dim + axis].total_cmp(&c[b as usize * dim + axis]).then(a.cmp(&b)));
    let k1 = k / 2;
    let frac = fractions[..k1].iter().sum::<f64>() / fractions.iter().sum::<f64>();
    let total: f64 = ids.iter().map(|&v| load[v as usize]).sum();
    let mut acc = 0.0;
    let mut split = 0;
    while split < ids.len() - 1 && acc + 0.5 * load[ids[split] as usize] <= frac * total {
        acc += load[ids[split] as usize];
        split += 1;
    }
    let split = split.clamp(k1.min(ids.len()), ids.len() - (k - k1).min(ids.len()));
    let (a, b) = ids.split_at_mut(split);
    rcb_rec(c, dim, load, a, &fractions[..k1], first, out);
    rcb_rec(c, dim, load, b, &fractions[k1..], first + k1 as u32, out);
}

/// The Hilbert index of 2-D grid point (x, y) on a 2^order grid
/// (`order` ≥ 1; x, y < 2^order).
///
/// ```
/// use parsim_partition::geometric::hilbert2;
/// let order: Vec<u64> = [(0, 0), (0, 1), (1, 1), (1, 0)].iter().map(|&(x, y)| hilbert2(x, y, 1)).collect();
/// assert_eq!(order, [0, 1, 2, 3]);
/// ```
pub fn hilbert2(mut x: u64, mut y: u64, order: u32) -> u64 {
    let mut d = 0u64;
    let mut s = 1u64 << (order - 1);
    while s > 0 {
        let rx = u64::from(x & s > 0);
        let ry = u64::from(y & s > 0);
        d += s * s * ((3 * rx) ^ ry);
        if ry == 0 {
            if rx == 1 {
                let last = (1u64 << order) - 1;
                x = last - x;
                y = last - y;
            }
            std::mem::swap(&mut x, &mut y);
        }
        s >>= 1;
    }
    d
}

/// The Hilbert index of 3-D grid point `p` on a 2^bits grid (Skilling's
/// transform; `bits` ≥ 1, coordinates < 2^bits).
pub fn hilbert3(p: [u32; 3], bits: u32) -> u64 {
    let mut x = p;
    let m = 1u32 << (bits - 1);
    // Inverse undo.
    let mut q = m;
    while q > 1 {
        let pm = q - 1;
        for i in 0..3 {
            if x[i] & q != 0 {
                x[0] ^= pm;
            } else {
                let t = (x[0] ^ x[i]) & pm;
                x[0] ^= t;
                x[i] ^= t;
            }
        }
        q >>= 1;
    }
    // Gray encode.
    for i in 1..3 {
        x[i] ^= x[i - 1];
    }
    let mut t = 0;
    let mut q = m;
    while q > 1 {
        if x[2] & q != 0 {
            t ^= q - 1;
        }
        q >>= 1;
    }
    for xi in &mut x {
        *xi ^= t;
    }
    // Interleave the transposed bits.
    let mut d = 0u64;
    for b in (0..bits).rev() {
        for xi in &x {
            d = (d << 1) | u64::from((xi >> b) & 1);
        }
    }
    d
}

/// Hilbert space-filling-curve partitioning (2-D or 3-D coordinates; 1-D sorts).
pub fn sfc(g: &Graph, cfg: &Config) -> Result<Vec<u32>> {
    let (c, dim) = coords(g)?;
    let n = g.n();
    let mut lo = vec![f64::INFINITY; dim];
    let mut hi = vec![f64::NEG_INFINITY; dim];
    for v in 0..n {
        for d in 0..dim {
            lo[d] = lo[d].min(c[v * dim + d]);
            hi[d] = hi[d].max(c[v * dim + d]);
        }
    }
    let span = (0..dim).map(|d| hi[d] - lo[d]).fold(0.0, f64::max).max(f64::MIN_POSITIVE);
    let bits: u32 = if dim == 3 { 21 } else { 31 };
    let scale = ((1u64 << bits) - 1) as f64 / span;
    let q = |v: usize, d: usize| ((c[v * dim + d] - lo[d]) * scale) as u64;
    let key: Vec<u64> = (0..n)
        .map(|v| match dim {
            1 => q(v, 0),
            2 => hilbert2(q(v, 0), q(v, 1), bits),
            _ => hilbert3([q(v, 0) as u32, q(v, 1) as u32, q(v, 2) as u32], bits),
        })
        .collect();
    let mut order: Vec<u32> = (0..n as u32).collect();
    order.sort_by_key(|&v| (key[v as usize], v));
    let fractions: Vec<f64> = (0..cfg.k).map(|p| cfg.target(p)).collect();
    let mut out = vec![0u32; n];
    cut_segments(&order, &loads(g), &fractions, 0, &mut out);
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hilbert_curves_visit_every_cell_once_and_step_to_neighbours() {
        let order = 4;
        let side = 1u64 << order;
        let mut at = vec![(0u64, 0u64); (side * side) as usize];
        for x in 0..side {
            for y in 0..side {
                at[hilbert2(x, y, order as u32) as usize] = (x, y);
            }
        }
        for w in at.windows(2) {
            assert_eq!(w[0].0.abs_diff(w[1].0) + w[0].1.abs_diff(w[1].1), 1, "{w:?}");
        }
        let bits = 3;
        let side = 1u32 << bits;
        let mut at3 = vec![[0u32; 3]; (side * side * side) as usize];
        let mut seen = vec![false; at3.len()];
        for x in 0..side {
            for y in 0..side {
                for z in 0..side {
                    let d = hilbert3([x, y, z], bits) as usize;
                    assert!(!seen[d]);
                    seen[d] = true;
                    at3[d] = [x, y, z];
                }
            }
        }
        for w in at3.windows(2) {
            let dist: u32 = (0..3).map(|i| w[0][i].abs_diff(w[1][i])).sum();
            assert_eq!(dist, 1, "{w:?}");
        }
    }
}
