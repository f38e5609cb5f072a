//! Every strategy against its documented bound on synthetic load maps.

use parsim_lb::strategy::{self, rank_loads};
use parsim_lb::{imbalance, Chunks};
use proptest::prelude::*;

const COST: strategy::GraphCost = strategy::GraphCost { alpha: 1.0, imbalance: 0.05, seed: 1 };

fn stats(loads: &[f64], owner: &[u32], p: usize) -> (f64, f64, f64) {
    let r = rank_loads(loads, owner, p);
    let mean = r.iter().sum::<f64>() / p as f64;
    (r.iter().copied().fold(0.0, f64::max), r.iter().copied().fold(f64::INFINITY, f64::min), mean)
}

fn heavy(loads: &[f64]) -> f64 {
    loads.iter().copied().fold(0.0, f64::max)
}

/// A hot spot: chunks near (x0, y0) cost up to 20× the rest.
fn hotspot(dims: [u32; 3], x0: f64, y0: f64) -> Vec<f64> {
    let c = Chunks::grid(dims, false);
    (0..c.len())
        .map(|i| {
            let [x, y, _] = c.coords(i);
            let d2 = (x as f64 - x0).powi(2) + (y as f64 - y0).powi(2);
            1.0 + 19.0 * (-d2 / 8.0).exp()
        })
        .collect()
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    #[test]
    fn sfc_runs_are_within_one_chunk_of_the_mean(
        loads in prop::collection::vec(0.0f64..10.0, 64), p in 1usize..9
    ) {
        let chunks = Chunks::grid([8, 8, 1], false);
        let owner = strategy::sfc(&chunks, &loads, p);
        let r = rank_loads(&loads, &owner, p);
        let mean = r.iter().sum::<f64>() / p as f64;
        for x in r {
            prop_assert!((x - mean).abs() <= heavy(&loads) + 1e-9, "run {x} vs mean {mean}");
        }
        // Runs are consecutive along the curve.
        let order = chunks.hilbert_order();
        prop_assert!(order.windows(2).all(|w| owner[w[0] as usize] <= owner[w[1] as usize]));
    }

    #[test]
    fn greedy_is_within_the_heaviest_chunk_of_the_mean(
        loads in prop::collection::vec(0.0f64..10.0, 1..80), p in 1usize..9
    ) {
        let owner = strategy::greedy(&loads, p);
        let (max, _, mean) = stats(&loads, &owner, p);
        prop_assert!(max <= mean + heavy(&loads) + 1e-9);
    }

    #[test]
    fn refine_never_raises_the_max_and_stops_only_when_stuck(
        loads in prop::collection::vec(0.0f64..10.0, 64), p in 2usize..9, seed in 0u32..1000
    ) {
        let chunks = Chunks::grid([8, 8, 1], false);
        let start: Vec<u32> = (0..64).map(|c| (c as u32 * 7 + seed) % 13 % p as u32).collect();
        let (max0, _, _) = stats(&loads, &start, p);
        let owner = strategy::refine(&loads, &start, p, 1.05);
        let (max, min, mean) = stats(&loads, &owner, p);
        prop_assert!(max <= max0 + 1e-9);
        prop_assert!(max <= 1.05 * mean + 1e-9 || max - min <= heavy(&loads) + 1e-9);
        let _ = chunks;
    }

    #[test]
    fn steal_never_raises_the_max(
        loads in prop::collection::vec(0.0f64..10.0, 64), p in 2usize..6
    ) {
        let chunks = Chunks::grid([8, 8, 1], false);
        let start = strategy::initial(&chunks, p);
        let (max0, _, _) = stats(&loads, &start, p);
        let owner = strategy::steal(&chunks, &loads, &start, p);
        prop_assert!(stats(&loads, &owner, p).0 <= max0 + 1e-9);
    }

    #[test]
    fn graph_stays_within_its_bound(
        loads in prop::collection::vec(1.0f64..2.0, 64), p in 2usize..5
    ) {
        let chunks = Chunks::grid([8, 8, 1], false);
        let start = strategy::initial(&chunks, p);
        let owner = strategy::graph(&chunks, &loads, 1, &start, p, COST);
        let (max, _, mean) = stats(&loads, &owner, p);
        // Integer weights round each chunk to 1/1000 of the mean chunk.
        prop_assert!(max <= 1.05 * mean * (1.0 + 1e-3) + heavy(&loads) / 1000.0, "λ = {}", max / mean);
    }
}

#[test]
fn diffusion_converges_on_a_hot_spot() {
    let dims = [16, 16, 1];
    let chunks = Chunks::grid(dims, false);
    let loads = hotspot(dims, 3.0, 4.0);
    for p in [2, 4] {
        let mut owner = strategy::initial(&chunks, p);
        let start = imbalance(&rank_loads(&loads, &owner, p));
        let mut last = start;
        for _ in 0..40 {
            owner = strategy::diffusive(&chunks, &loads, &owner, p);
            let l = imbalance(&rank_loads(&loads, &owner, p));
            assert!(l <= last + 1e-9 || l <= 1.1, "p = {p}: λ rose from {last} to {l}");
            last = l;
        }
        assert!(start > 1.5, "the hot spot should unbalance the static map (λ = {start})");
        assert!(last <= 1.1, "p = {p}: diffusion left λ = {last} (from {start})");
    }
}

#[test]
fn every_strategy_evens_a_hot_spot() {
    let dims = [16, 16, 1];
    let chunks = Chunks::grid(dims, false);
    let loads = hotspot(dims, 12.0, 3.0);
    let p = 4;
    let owner = strategy::initial(&chunks, p);
    let before = imbalance(&rank_loads(&loads, &owner, p));
    // The global strategies balance in one decision.
    for (name, new) in [
        ("sfc", strategy::sfc(&chunks, &loads, p)),
        ("greedy", strategy::greedy(&loads, p)),
        ("refine", strategy::refine(&loads, &owner, p, 1.05)),
        ("graph", strategy::graph(&chunks, &loads, 1, &owner, p, COST)),
    ] {
        let after = imbalance(&rank_loads(&loads, &new, p));
        assert!(after <= 1.25, "{name}: λ {after} after one decision (from {before})");
    }
    // The local ones (only neighbouring ranks exchange) improve at once and
    // converge when applied at successive checks.
    for name in ["diffusive", "steal"] {
        let mut owner = owner.clone();
        let mut first = None;
        for _ in 0..20 {
            owner = match name {
                "diffusive" => strategy::diffusive(&chunks, &loads, &owner, p),
                _ => strategy::steal(&chunks, &loads, &owner, p),
            };
            first.get_or_insert(imbalance(&rank_loads(&loads, &owner, p)));
        }
        let after = imbalance(&rank_loads(&loads, &owner, p));
        assert!(first.unwrap() < before, "{name}: λ {before} -> {first:?}");
        assert!(after <= 1.25, "{name}: λ {after} after 20 decisions (from {before})");
    }
}

#[test]
fn a_slowed_rank_loses_work_under_every_strategy() {
    let dims = [8, 8, 1];
    let chunks = Chunks::grid(dims, false);
    let p = 2;
    let owner = strategy::initial(&chunks, p);
    // Measured time: rank 1's chunks take twice as long.
    let loads: Vec<f64> = owner.iter().map(|&r| if r == 1 { 2.0 } else { 1.0 }).collect();
    for (name, new) in [
        ("sfc", strategy::relabel(&strategy::sfc(&chunks, &loads, p), &owner, &loads, p)),
        ("greedy", strategy::relabel(&strategy::greedy(&loads, p), &owner, &loads, p)),
        ("refine", strategy::refine(&loads, &owner, p, 1.05)),
        ("steal", strategy::steal(&chunks, &loads, &owner, p)),
        ("graph", strategy::graph(&chunks, &loads, 1, &owner, p, COST)),
        ("diffusive", strategy::diffusive(&chunks, &loads, &owner, p)),
    ] {
        let slow = rank_loads(&loads, &new, p)[1];
        assert!(slow <= 50.0, "{name}: the slow rank still has {slow} of its 64 units");
        // Greedy and sfc relabel their parts to keep what stays in place.
        let kept = (0..64).filter(|&c| owner[c] == 1 && new[c] == 1).count();
        assert!(kept >= 16, "{name}: the slow rank kept only {kept} of its 32 chunks");
    }
}
