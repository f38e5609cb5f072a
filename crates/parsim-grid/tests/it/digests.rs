//! The final field is bit-identical to the 1-rank run for every rank count,
//! decomposition, overlap setting, deep-halo depth and threads per rank.

use parsim_grid::{Boundary, Cell, DecompKind, GridSpec, Heat27, Heat5, Heat7, Heat9, Life, Stencil};

use crate::support::{noise, run_on};

const BOUNDARIES: [Boundary; 3] = [Boundary::Periodic, Boundary::Dirichlet(0.25), Boundary::Neumann];

/// Every variation of `base` that the grid admits gives the 1-rank digest.
fn check<T: Cell, S: Stencil<T>>(name: &str, size: Vec<usize>, stencil: &S, init: &(dyn Fn([usize; 3]) -> T + Sync)) {
    let mut ran = 0;
    for b in BOUNDARIES {
        let mut base = GridSpec::new(size.clone(), 9);
        base.boundary = vec![b];
        base.reduce_every = 4;
        let reference = run_on(1, &base, stencil, init);
        let mut variants = Vec::new();
        for p in [2, 3, 4, 6, 8] {
            for kind in [DecompKind::Auto, DecompKind::Slabs, DecompKind::Pencils, DecompKind::Blocks] {
                variants.push((p, kind, true, 1, 1));
            }
            variants.push((p, DecompKind::Auto, false, 1, 1));
            for k in [2, 4] {
                variants.push((p, DecompKind::Auto, true, k, 1));
                variants.push((p, DecompKind::Auto, false, k, 1));
            }
            variants.push((p, DecompKind::Auto, true, 1, 2));
            variants.push((p, DecompKind::Blocks, true, 2, 2));
        }
        variants.push((1, DecompKind::Auto, true, 4, 2));
        for (p, kind, overlap, k, threads) in variants {
            let mut spec = base.clone();
            spec.decomposition = kind.clone();
            spec.overlap = overlap;
            spec.deep_halo = k;
            spec.threads_per_rank = threads;
            if spec.decompose(p, stencil.radius()).is_err() {
                continue; // this grid is too small for that cut (tested in bad_input)
            }
            let r = run_on(p, &spec, stencil, init);
            assert_eq!(
                r.digest, reference.digest,
                "{name} {b:?}: {p} ranks {kind:?} overlap {overlap} deep halo {k} threads {threads}"
            );
            assert_eq!(r.reductions, reference.reductions, "{name} {b:?}: totals at {p} ranks");
            ran += 1;
        }
    }
    assert!(ran >= 100, "{name}: only {ran} variants ran");
}

#[test]
fn heat5_f64_is_rank_count_independent() {
    check("heat5 f64", vec![48, 40], &Heat5 { alpha: 0.2 }, &noise);
}

#[test]
fn heat5_f32_is_rank_count_independent() {
    check("heat5 f32", vec![48, 40], &Heat5 { alpha: 0.2f32 }, &|g| noise(g) as f32);
}

#[test]
fn heat9_is_rank_count_independent() {
    check("heat9", vec![48, 40], &Heat9 { alpha: 0.15 }, &noise);
}

#[test]
fn heat7_is_rank_count_independent() {
    check("heat7", vec![16, 16, 24], &Heat7 { alpha: 0.12 }, &noise);
}

#[test]
fn heat27_f32_is_rank_count_independent() {
    check("heat27 f32", vec![16, 16, 24], &Heat27::new(0.1f32), &|g| noise(g) as f32);
}

#[test]
fn life_is_rank_count_independent() {
    check("life", vec![48, 40], &Life, &|g| u8::from(noise(g) < 0.35));
}

#[test]
fn one_dimensional_grids_work_too() {
    check(
        "heat 1-D",
        vec![256],
        &parsim_grid::CellFn::new(2, parsim_grid::Reach::Star, |n: &parsim_grid::Neighbourhood<'_, f64>| {
            n.centre() + 0.1 * (n.get(0, 0, -2) + n.get(0, 0, -1) + n.get(0, 0, 1) + n.get(0, 0, 2) - 4.0 * n.centre())
        }),
        &noise,
    );
}

#[test]
fn streaming_stores_give_the_same_field() {
    for (size, k) in [(vec![40usize, 37], 1usize), (vec![13, 11, 17], 2)] {
        let mut spec = GridSpec::new(size.clone(), 7);
        spec.boundary = vec![Boundary::Dirichlet(0.5)];
        spec.deep_halo = k;
        spec.stream_stores = Some(false);
        let run = |spec: &GridSpec, p: usize| {
            if size.len() == 2 {
                run_on(p, spec, &Heat5 { alpha: 0.2 }, &noise).digest
            } else {
                run_on(p, spec, &Heat7 { alpha: 0.1 }, &noise).digest
            }
        };
        let plain = run(&spec, 1);
        spec.stream_stores = Some(true);
        for p in [1, 2, 3] {
            assert_eq!(run(&spec, p), plain, "{size:?} streamed on {p} ranks");
            spec.threads_per_rank = 2;
            assert_eq!(run(&spec, p), plain, "{size:?} streamed on {p} ranks, 2 threads");
            spec.threads_per_rank = 1;
        }
    }
}

#[test]
fn temporal_blocking_gives_the_same_field_and_skips_steps_that_need_it() {
    // A step-dependent source term checks that each level of a wavefront
    // computes its own step; radius 2 checks the wave's lag.
    let source = parsim_grid::CellFn::new(1, parsim_grid::Reach::Star, |n: &parsim_grid::Neighbourhood<'_, f64>| {
        n.centre()
            + 0.1 * (n.get(0, -1, 0) + n.get(0, 1, 0) + n.get(0, 0, -1) + n.get(0, 0, 1) - 4.0 * n.centre())
            + 1e-3 * (n.step() % 5) as f64
    });
    let wide = parsim_grid::CellFn::new(2, parsim_grid::Reach::Star, |n: &parsim_grid::Neighbourhood<'_, f64>| {
        n.centre() + 0.05 * (n.get(0, -2, 0) + n.get(0, 2, 0) + n.get(0, 0, -1) + n.get(0, 0, 1) - 4.0 * n.centre())
    });
    let steps = 17;
    for b in [Boundary::Periodic, Boundary::Dirichlet(0.25)] {
        for reduce_every in [0, 7] {
            for k in [2usize, 3, 5] {
                let mut spec = GridSpec::new(vec![64, 200], steps);
                spec.boundary = vec![b];
                spec.reduce_every = reduce_every;
                spec.deep_halo = k;
                spec.temporal_blocking = false;
                let plain2 = run_on(1, &spec, &source, &noise);
                let plain_wide = run_on(1, &spec, &wide, &noise);
                let mut spec3 = spec.clone();
                spec3.size = vec![30, 90, 22];
                let plain3 = run_on(1, &spec3, &Heat7 { alpha: 0.1 }, &noise);
                assert_eq!(plain2.blocked_steps, 0);
                spec.temporal_blocking = true;
                spec3.temporal_blocking = true;
                // Blocks start at multiples of k, fit before the end, and
                // need nothing from their inner steps.
                let blocked = (0..steps / k as u64)
                    .map(|i| i * k as u64)
                    .filter(|s| (s + 1..s + k as u64).all(|d| reduce_every == 0 || d % reduce_every != 0))
                    .count() as u64
                    * k as u64;
                for (p, cache) in [(1, 256 << 10), (1, 1 << 10), (2, 3 << 10), (3, 1 << 10)] {
                    // A small cache budget cuts rows (2-D) and planes (3-D) into many skewed tiles.
                    spec.wave_cache_bytes = cache;
                    spec3.wave_cache_bytes = cache;
                    let what = format!("{b:?}, reduce every {reduce_every}, deep halo {k}, {p} ranks, {cache} B");
                    let r = run_on(p, &spec, &source, &noise);
                    assert_eq!(r.digest, plain2.digest, "2-D, {what}");
                    assert_eq!(r.reductions, plain2.reductions, "2-D, {what}");
                    assert_eq!(r.blocked_steps, blocked, "2-D, {what}");
                    assert!(blocked > 0);
                    assert_eq!(run_on(p, &spec, &wide, &noise).digest, plain_wide.digest, "radius 2, {what}");
                    let r3 = run_on(p, &spec3, &Heat7 { alpha: 0.1 }, &noise);
                    assert_eq!(r3.digest, plain3.digest, "3-D, {what}");
                    assert_eq!(r3.reductions, plain3.reductions, "3-D, {what}");
                    assert_eq!(r3.blocked_steps, blocked, "3-D, {what}");
                }
                // Threads share each level of a chunk of waves.
                for (p, t) in [(1, 2), (2, 2), (1, 3)] {
                    let (mut threads, mut threads3) = (spec.clone(), spec3.clone());
                    threads.threads_per_rank = t;
                    threads3.threads_per_rank = t;
                    let what = format!("{b:?}, reduce every {reduce_every}, deep halo {k}, {p} ranks × {t} threads");
                    let r = run_on(p, &threads, &source, &noise);
                    assert_eq!((r.digest, r.blocked_steps), (plain2.digest, blocked), "2-D, {what}");
                    assert_eq!(run_on(p, &threads, &wide, &noise).digest, plain_wide.digest, "radius 2, {what}");
                    let r3 = run_on(p, &threads3, &Heat7 { alpha: 0.1 }, &noise);
                    assert_eq!((r3.digest, r3.blocked_steps), (plain3.digest, blocked), "3-D, {what}");
                }
            }
        }
    }
}

/// Neumann ghosts refilled level by level: mixed with the other
/// conditions on other axes (corners where two kinds of edge meet), under a
/// box stencil that reads the corners, across tiles and threads.
#[test]
fn temporal_blocking_mirrors_neumann_edges_level_by_level() {
    use parsim_grid::{CellFn, Neighbourhood, Reach};
    let box9 = CellFn::new(1, Reach::Box, |n: &Neighbourhood<'_, f64>| {
        let mut s = 0.0;
        for (dy, dx, w) in [
            (-1, -1, 1.0),
            (-1, 0, 2.0),
            (-1, 1, 3.0),
            (0, -1, 4.0),
            (0, 1, 5.0),
            (1, -1, 6.0),
            (1, 0, 7.0),
            (1, 1, 8.0),
        ] {
            s += w * n.get(0, dy, dx);
        }
        0.5 * n.centre() + s / 72.0
    });
    let box27 = CellFn::new(1, Reach::Box, |n: &Neighbourhood<'_, f64>| {
        let mut s = 0.0;
        for dz in -1..=1 {
            for dy in -1..=1 {
                for dx in -1..=1 {
                    s += (3 * dz + dy + 5) as f64 * (dx + 2) as f64 * n.get(dz, dy, dx);
                }
            }
        }
        s / 300.0
    });
    // Radius 2: two mirrored layers, and a wave lag of 2.
    let wide = CellFn::new(2, Reach::Star, |n: &Neighbourhood<'_, f64>| {
        n.centre()
            + 0.04
                * (n.get(0, -2, 0) + 2.0 * n.get(0, 1, 0) + n.get(0, 0, -2) + 3.0 * n.get(0, 0, 1) - 7.0 * n.centre())
    });
    let (n, d, p) = (Boundary::Neumann, Boundary::Dirichlet(0.75), Boundary::Periodic);
    let steps = 13;
    for bounds in [vec![n], vec![n, d], vec![d, n], vec![n, p], vec![p, n]] {
        for k in [2usize, 4] {
            let mut spec = GridSpec::new(vec![40, 70], steps);
            spec.boundary = bounds.clone();
            spec.reduce_every = 0;
            spec.deep_halo = k;
            let mut spec3 = spec.clone();
            spec3.size = vec![18, 26, 14];
            if bounds.len() == 2 {
                spec3.boundary = vec![bounds[0], bounds[1], bounds[0]];
            }
            spec.temporal_blocking = false;
            spec3.temporal_blocking = false;
            let want = run_on(1, &spec, &box9, &noise).digest;
            let want_wide = run_on(1, &spec, &wide, &noise).digest;
            let want3 = run_on(1, &spec3, &box27, &noise).digest;
            spec.temporal_blocking = true;
            spec3.temporal_blocking = true;
            let blocked = (steps / k as u64) * k as u64;
            for (ranks, threads, cache) in [
                (1, 1, 256 << 10),
                (1, 1, 1 << 10),
                (2, 1, 1 << 10),
                (3, 1, 2 << 10),
                (1, 2, 256 << 10),
                (2, 3, 1 << 10),
            ] {
                let what = format!("{bounds:?}, deep halo {k}, {ranks} ranks × {threads} threads, {cache} B");
                spec.threads_per_rank = threads;
                spec3.threads_per_rank = threads;
                spec.wave_cache_bytes = cache;
                spec3.wave_cache_bytes = cache;
                let r = run_on(ranks, &spec, &box9, &noise);
                assert_eq!((r.digest, r.blocked_steps), (want, blocked), "2-D box, {what}");
                assert_eq!(run_on(ranks, &spec, &wide, &noise).digest, want_wide, "radius 2, {what}");
                let r3 = run_on(ranks, &spec3, &box27, &noise);
                assert_eq!((r3.digest, r3.blocked_steps), (want3, blocked), "3-D box, {what}");
            }
        }
    }
}
