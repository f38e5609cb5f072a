//! The digest of the daily curve and final states does not depend on the
//! number of ranks, the partition or the threads per rank.

use parsim_abm::population::Synthetic;
use parsim_abm::{Closure, Isolation, Population, SeirConfig, Vaccination, Variant};
use parsim_partition::{Config, Method, Partitioner};

use crate::support::{block, run};

fn owner(pop: &Population, ranks: usize, how: &str) -> Vec<u32> {
    let n = pop.agents();
    if ranks == 1 {
        return vec![0; n];
    }
    match how {
        "block" => block(n, ranks),
        "hash" => (0..n as u32).map(|a| a.wrapping_mul(2_654_435_761) % ranks as u32).collect(),
        m => {
            let g = pop.graph.to_partition_graph();
            let method = Method::parse(m).expect("a method");
            method.partition(&g, &Config::new(ranks)).expect("a partition").0
        }
    }
}

fn check(pop: &Population, cfg: &SeirConfig) {
    let want = run(pop, &vec![0; pop.agents()], 1, cfg).digest;
    for how in ["multilevel", "hash", "lp"] {
        for ranks in [2, 3, 4, 8] {
            let got = run(pop, &owner(pop, ranks, how), ranks, cfg);
            assert_eq!(got.digest, want, "{how} at {ranks} ranks");
        }
    }
    let two_threads = SeirConfig { threads: 2, ..cfg.clone() };
    for ranks in [1, 3] {
        assert_eq!(
            run(pop, &owner(pop, ranks, "block"), ranks, &two_threads).digest,
            want,
            "2 threads × {ranks} ranks"
        );
    }
}

#[test]
fn erdos_renyi_variants_a_and_b() {
    let pop = Population::erdos_renyi(20_000, 10.0, 3);
    check(&pop, &SeirConfig { seed: 11, days: 100, ..SeirConfig::default() });
    let b = SeirConfig {
        seed: 12,
        days: 100,
        variant: Variant::Markov { sigma: 0.4, gamma: 0.25 },
        ..SeirConfig::default()
    };
    check(&pop, &b);
}

#[test]
fn synthetic_population_with_every_intervention() {
    let pop = Synthetic { district_size: 2_000, ..Synthetic::default() }.build(20_000, 9).unwrap();
    let cfg = SeirConfig {
        seed: 4,
        days: 120,
        closures: vec![Closure { layer: pop.layer("school").unwrap(), from: 20, to: 60 }],
        vaccination: Some(Vaccination { from: 10, to: 90, rate: 0.01 }),
        isolation: Some(Isolation { detect: 0.5, delay: 1, keep: 1 }),
        ..SeirConfig::default()
    };
    check(&pop, &cfg);
}

#[test]
fn the_synthetic_population_does_not_depend_on_threads() {
    let spec = Synthetic { district_size: 1_000, ..Synthetic::default() };
    let one = rayon::ThreadPoolBuilder::new().num_threads(1).build().unwrap().install(|| spec.build(7_500, 2).unwrap());
    let four =
        rayon::ThreadPoolBuilder::new().num_threads(4).build().unwrap().install(|| spec.build(7_500, 2).unwrap());
    assert_eq!(one.graph, four.graph);
    assert_eq!(one.ages, four.ages);
}
