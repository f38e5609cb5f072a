//! The engine against plain sequential loops written from the definitions:
//! bit-identical fields for every boundary condition.

use parsim_comm::{launch, Comm};
use parsim_grid::{run_with_field, Boundary, CellFn, GridSpec, Heat5, Neighbourhood, Reach};

use crate::support::noise;

/// Value of cell `i` of an axis of `n` cells, `i` possibly outside, under `b`.
fn outside(u: &dyn Fn(usize) -> f64, i: i64, n: usize, b: Boundary) -> f64 {
    let n = n as i64;
    match b {
        _ if (0..n).contains(&i) => u(i as usize),
        Boundary::Periodic => u(i.rem_euclid(n) as usize),
        Boundary::Dirichlet(v) => v,
        // Mirror across the edge: ghost -1-k equals cell k.
        Boundary::Neumann => u(if i < 0 { (-1 - i) as usize } else { (2 * n - 1 - i) as usize }),
    }
}

/// The engine's final field, gathered in global row-major order.
fn engine_field(spec: &GridSpec, ranks: usize, stencil: &impl parsim_grid::Stencil<f64>) -> Vec<f64> {
    let n: usize = spec.size.iter().product();
    let parts = launch(ranks, |comm| {
        let (_, f) = run_with_field(&comm, spec, stencil, &noise, &mut |_| {})?;
        let w = spec.size.last().copied().unwrap_or(1);
        let mut mine = Vec::new();
        f.for_owned(|g, v| mine.push([(g[1] * w + g[2]) as f64, v]));
        Ok::<_, parsim_grid::GridError>(comm.gather(0, mine)?)
    })
    .expect("run");
    let mut out = vec![f64::NAN; n];
    for [i, v] in parts.into_iter().next().flatten().expect("root").into_iter().flatten() {
        out[i as usize] = v;
    }
    out
}

#[test]
fn heat5_matches_plain_loops_for_every_boundary() {
    let (ny, nx, steps, a) = (13usize, 17usize, 6u64, 0.2f64);
    for b in [Boundary::Periodic, Boundary::Dirichlet(0.5), Boundary::Neumann] {
        let mut u: Vec<f64> = (0..ny * nx).map(|i| noise([0, i / nx, i % nx])).collect();
        for _ in 0..steps {
            let old = u.clone();
            // Axis 0 first (rows outside come from rows inside), then axis 1 within the row.
            let at = |y: i64, x: i64| -> f64 {
                let in_row = |yy: usize| outside(&|xx: usize| old[yy * nx + xx], x, nx, b);
                outside(&in_row, y, ny, b)
            };
            for y in 0..ny as i64 {
                for x in 0..nx as i64 {
                    let m = at(y, x);
                    u[y as usize * nx + x as usize] =
                        m + a * (at(y - 1, x) + at(y + 1, x) + at(y, x - 1) + at(y, x + 1) - 4.0 * m);
                }
            }
        }
        let mut spec = GridSpec::new(vec![ny, nx], steps);
        spec.boundary = vec![b];
        for ranks in [1, 4] {
            let got = engine_field(&spec, ranks, &Heat5 { alpha: a });
            assert_eq!(got, u, "{b:?} on {ranks} ranks");
        }
    }
}

#[test]
fn a_radius_two_stencil_with_a_deep_halo_matches_plain_loops() {
    let (n, steps) = (40usize, 9u64);
    let f = |m: f64, l2: f64, l1: f64, r1: f64, r2: f64| m + 0.05 * (l2 + l1 + r1 + r2 - 4.0 * m);
    let stencil = CellFn::new(2, Reach::Star, move |nb: &Neighbourhood<'_, f64>| {
        f(nb.centre(), nb.get(0, 0, -2), nb.get(0, 0, -1), nb.get(0, 0, 1), nb.get(0, 0, 2))
    });
    for b in [Boundary::Periodic, Boundary::Dirichlet(-1.0), Boundary::Neumann] {
        let mut u: Vec<f64> = (0..n).map(|x| noise([0, 0, x])).collect();
        for _ in 0..steps {
            let old = u.clone();
            let at = |x: i64| outside(&|i: usize| old[i], x, n, b);
            for x in 0..n as i64 {
                u[x as usize] = f(at(x), at(x - 2), at(x - 1), at(x + 1), at(x + 2));
            }
        }
        for (ranks, k) in [(1, 1), (3, 1), (2, 2), (4, 2), (2, 4)] {
            let mut spec = GridSpec::new(vec![n], steps);
            spec.boundary = vec![b];
            spec.deep_halo = k;
            assert_eq!(engine_field(&spec, ranks, &stencil), u, "{b:?} on {ranks} ranks, deep halo {k}");
        }
    }
}
