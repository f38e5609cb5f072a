//! Heat diffusion: conservation, and the decay of a Fourier mode.

use parsim_grid::{Boundary, GridSpec, Heat5, Heat7};

use crate::support::{noise, run_on};

#[test]
fn total_heat_is_conserved_with_periodic_boundaries() {
    let mut spec = GridSpec::new(vec![64, 48], 200);
    spec.reduce_every = 20;
    let r = run_on(4, &spec, &Heat5 { alpha: 0.24 }, &noise);
    let h0 = {
        let mut s = parsim_core::ExactSum::new();
        for y in 0..64 {
            for x in 0..48 {
                s.add(noise([0, y, x]));
            }
        }
        s.value()
    };
    for red in &r.reductions {
        // Each step rounds every cell once: the total drifts only by rounding.
        assert!(((red.total - h0) / h0).abs() < 1e-12, "step {}: {} vs {h0}", red.step, red.total);
    }
    // The field smooths out: the residual falls.
    assert!(r.reductions.last().map(|x| x.residual) < r.reductions.first().map(|x| x.residual));
    // And the totals are bitwise the same on 1 and 3 ranks.
    assert_eq!(run_on(1, &spec, &Heat5 { alpha: 0.24 }, &noise).reductions, r.reductions);
    assert_eq!(run_on(3, &spec, &Heat5 { alpha: 0.24 }, &noise).reductions, r.reductions);
}

/// A single Fourier mode on a periodic grid decays by the scheme's exact
/// amplification factor per step, and close to the continuous `exp(-κ k² t)`.
#[test]
fn a_fourier_mode_decays_as_the_analysis_says() {
    let (ny, n, steps, alpha) = (8usize, 64usize, 100u64, 0.2f64);
    let k = 2.0 * std::f64::consts::PI / n as f64;
    let mode = move |g: [usize; 3]| (k * g[2] as f64).sin();
    let mut spec = GridSpec::new(vec![ny, n], steps);
    spec.reduce_every = 0;
    // Σ u² = A² · ny · n / 2 for a sine of amplitude A.
    let sums = parsim_comm::launch(4, |comm| {
        let (_, field) = parsim_grid::run_with_field(&comm, &spec, &Heat5 { alpha }, &mode, &mut |_| {})?;
        let mut s = parsim_core::ExactSum::new();
        field.for_owned(|_, v| s.add(v * v));
        Ok::<_, parsim_grid::GridError>(parsim_comm::Comm::all_reduce_exact(&comm, &s)?.value())
    })
    .expect("run");
    let a = (2.0 * sums[0] / (ny * n) as f64).sqrt();
    let factor = 1.0 - 4.0 * alpha * (k / 2.0).sin().powi(2);
    let discrete = factor.powi(steps as i32);
    assert!((a - discrete).abs() < 1e-12, "amplitude {a} vs the scheme's factor {discrete}");
    let continuous = (-alpha * k * k * steps as f64).exp();
    assert!((a - continuous).abs() / continuous < 1e-3, "amplitude {a} vs continuous {continuous}");
}

#[test]
fn three_d_heat_with_neumann_boundaries_conserves_heat() {
    // Zero-gradient (mirror) walls: no flux in or out.
    let mut spec = GridSpec::new(vec![12, 10, 14], 30);
    spec.boundary = vec![Boundary::Neumann];
    spec.reduce_every = 10;
    let r = run_on(4, &spec, &Heat7 { alpha: 0.15 }, &noise);
    let first = r.reductions[0].total;
    for red in &r.reductions {
        assert!(((red.total - first) / first).abs() < 1e-12, "{red:?}");
    }
}
