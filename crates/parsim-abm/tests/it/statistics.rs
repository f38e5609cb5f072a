//! The spec's reference case against its analytic values (SEIR-net-v1 §4):
//! N = 10⁵, c = 10, over 10 seeds; accept |z_sim − z_theory| <
//! 4·sd/√runs + 0.002 with sd = 0.0012, and r within 5 %.

use parsim_abm::{report::Outcome, theory::Theory, SeirConfig, SeirResult, Variant};

use crate::support::{block, reference_graph, run};

const RUNS: u64 = 10;

fn tolerance() -> f64 {
    4.0 * 0.0012 / (RUNS as f64).sqrt() + 0.002
}

fn runs(variant: Variant, beta: f64) -> Vec<(SeirResult, Outcome)> {
    let pop = reference_graph();
    let owner = block(pop.agents(), 2);
    (0..RUNS)
        .map(|seed| {
            let cfg = SeirConfig { seed: 1000 + seed, variant, beta, ..SeirConfig::default() };
            let res = run(pop, &owner, 2, &cfg);
            let o = Outcome::of(&res, &cfg);
            (res, o)
        })
        .collect()
}

#[test]
fn variant_a_final_size_growth_rate_and_per_degree_attack_rate() {
    let variant = Variant::Fixed { latent: 3, infectious: 5 };
    let all = runs(variant, 0.05);
    let z = all.iter().map(|(_, o)| o.attack_rate).sum::<f64>() / RUNS as f64;
    assert!((z - 0.85565).abs() < tolerance(), "mean attack rate {z} vs 0.85565 ± {}", tolerance());
    let r = all.iter().map(|(_, o)| o.growth_rate.expect("an exponential phase")).sum::<f64>() / RUNS as f64;
    assert!((r / 0.1727 - 1.0).abs() < 0.05, "mean growth rate {r} vs 0.1727/day");
    // Per degree, pooled over the runs, against 1 − (1 − T + T u)^k for this graph.
    let th = Theory::predict(&reference_graph().graph_degree_counts(), 0.05, variant);
    let mut tested = 0;
    for k in 0..all[0].0.by_degree.len() {
        let (n, inf) =
            all.iter().fold((0u64, 0u64), |a, (res, _)| (a.0 + res.by_degree[k].0, a.1 + res.by_degree[k].1));
        if n < 20_000 {
            continue;
        }
        let p = th.attack_rate_at_degree(k);
        let sim = inf as f64 / n as f64;
        let tol = 4.0 * (p * (1.0 - p) / n as f64).sqrt() + 0.005;
        assert!((sim - p).abs() < tol, "degree {k}: {sim} vs {p} ± {tol}");
        tested += 1;
    }
    assert!(tested >= 8, "only {tested} degrees had enough agents");
}

#[test]
fn variant_b_final_size() {
    let all = runs(Variant::Markov { sigma: 1.0 / 3.0, gamma: 0.2 }, 0.05);
    let z = all.iter().map(|(_, o)| o.attack_rate).sum::<f64>() / RUNS as f64;
    assert!((z - 0.8181).abs() < tolerance(), "mean attack rate {z} vs 0.8181 ± {}", tolerance());
}

#[test]
fn below_the_threshold_there_is_no_major_outbreak() {
    // β = 0.02, d_I = 5 on Poisson(10): R0 = 0.961.
    let all = runs(Variant::Fixed { latent: 3, infectious: 5 }, 0.02);
    for (_, o) in &all {
        assert!(o.attack_rate < 0.03, "attack rate {} at R0 < 1", o.attack_rate);
    }
    let z = all.iter().map(|(_, o)| o.attack_rate).sum::<f64>() / RUNS as f64;
    assert!(z < 0.01, "mean attack rate {z} at R0 < 1");
}

#[test]
fn the_latent_period_changes_timing_not_size() {
    let pop = reference_graph();
    let owner = block(pop.agents(), 1);
    let z = |latent| {
        let cfg = SeirConfig {
            seed: 5,
            variant: Variant::Fixed { latent, infectious: 5 },
            days: 400,
            ..SeirConfig::default()
        };
        Outcome::of(&run(pop, &owner, 1, &cfg), &cfg)
    };
    let (fast, slow) = (z(1), z(6));
    assert!((fast.attack_rate - slow.attack_rate).abs() < 0.01, "{fast:?} {slow:?}");
    assert!(slow.peak_day > fast.peak_day + 20, "{fast:?} {slow:?}");
}
