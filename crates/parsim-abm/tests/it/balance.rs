//! The epidemic under dynamic load balancing: every strategy, at 1–4
//! ranks, with interventions and threads, ends with the digest of the
//! unbalanced run, and chunks really move (a slowed rank losing work is
//! tested in `tests/slowed.rs`, a binary of its own).

use parsim_abm::population::Synthetic;
use parsim_abm::seir::{self, Balance};
use parsim_abm::{Isolation, Population, SeirConfig, SeirResult, Vaccination, Variant};
use parsim_comm::Comm;
use parsim_graph::DistGraph;
use parsim_lb::{Balancer, Config, Measure, Predict, Stats, Strategy, When};

use crate::support::{block, run};

fn pop() -> Population {
    Synthetic { district_size: 1_000, ..Synthetic::default() }.build(12_000, 5).unwrap()
}

/// A balanced run on `ranks` threads: the result, rank 0's balancing
/// statistics, the chunk map at the end and the work each rank did.
fn balanced(
    pop: &Population,
    ranks: usize,
    cfg: &SeirConfig,
    lb: &Config,
    slow: Option<(usize, f64)>,
) -> (SeirResult, Stats, Vec<u32>, Vec<f64>) {
    let chunk = 250;
    let mut out = parsim_comm::launch(ranks, |comm| {
        let mut balancer = Balancer::new(lb.clone(), Balance::chunks(&pop.graph, chunk), comm.size(), 9);
        let mut bal = Balance::new(&mut balancer, chunk);
        bal.slow = slow;
        let g = DistGraph::build(comm.rank(), comm.size(), &pop.graph, &bal.agent_owner(pop.agents()))?;
        let res = seir::run_balanced(&comm, &pop.layers, &g, cfg, None, None, &mut bal)?;
        let (owner, work) = (bal.owner, comm.all_gather(vec![bal.work])?);
        Ok::<_, parsim_abm::AbmError>((res, balancer.stats().clone(), owner, work.concat()))
    })
    .unwrap_or_else(|e| panic!("{ranks} ranks, {lb:?}: {e}"));
    for o in &out[1..] {
        assert_eq!(o.0.digest, out[0].0.digest, "ranks disagree");
        let what =
            |s: &Stats| s.events.iter().map(|e| (e.step, e.lambda_before, e.chunks, e.bytes)).collect::<Vec<_>>();
        assert_eq!(what(&o.1), what(&out[0].1), "ranks disagree on the rebalances");
        assert_eq!(o.2, out[0].2, "ranks disagree on the map");
    }
    out.swap_remove(0)
}

fn every(strategy: Strategy) -> Config {
    Config { strategy, when: When::Every, every: 7, measure: Measure::Count, ..Config::default() }
}

#[test]
fn every_strategy_keeps_the_digest_at_every_rank_count() {
    let pop = pop();
    let cfg = SeirConfig { seed: 4, days: 90, seeds: 3, ..SeirConfig::default() };
    let want = run(&pop, &block(pop.agents(), 1), 1, &cfg);
    let strategies = [
        Strategy::Off,
        Strategy::Diffusive,
        Strategy::Sfc,
        Strategy::Graph,
        Strategy::Greedy,
        Strategy::Refine,
        Strategy::Steal,
    ];
    let mut moved = 0;
    for ranks in 1..=4 {
        for &s in &strategies {
            let (res, stats, ..) = balanced(&pop, ranks, &cfg, &every(s), None);
            assert_eq!(res.digest, want.digest, "{s:?} at {ranks} ranks");
            assert_eq!(res.curve, want.curve);
            if ranks > 1 && s != Strategy::Off {
                moved += stats.chunks_migrated;
                assert!(stats.events.iter().all(|e| e.bytes > 0), "{s:?}: a rebalance moved no bytes");
            }
            if s == Strategy::Off || ranks == 1 {
                assert_eq!(stats.rebalances, 0);
            }
        }
    }
    assert!(moved > 0, "no strategy moved anything");
}

#[test]
fn interventions_threads_and_predictive_balancing_keep_the_digest() {
    let pop = pop();
    let household = 1u8 << pop.layer("household").unwrap();
    let cfg = SeirConfig {
        seed: 11,
        days: 80,
        seeds: 4,
        variant: Variant::Markov { sigma: 0.3, gamma: 0.2 },
        vaccination: Some(Vaccination { from: 5, to: 60, rate: 0.005 }),
        isolation: Some(Isolation { detect: 0.5, delay: 2, keep: household }),
        ..SeirConfig::default()
    };
    let want = run(&pop, &block(pop.agents(), 1), 1, &cfg);
    let lb = Config { predict: Predict::Trend, ..every(Strategy::Greedy) };
    let (res, stats, ..) = balanced(&pop, 3, &cfg, &lb, None);
    assert_eq!(res.digest, want.digest);
    assert!(stats.rebalances > 0, "the wave should unbalance the block map");
    let threaded = SeirConfig { threads: 2, ..cfg.clone() };
    let (res, ..) = balanced(&pop, 2, &threaded, &every(Strategy::Sfc), None);
    assert_eq!(res.digest, want.digest);
}
