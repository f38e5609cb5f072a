//! A slowed rank loses work under measured-time balancing, for agents in
//! space and for the epidemic. These tests time compute, so they live in a
//! test binary of their own and run one after the other: in the `it`
//! binary, tests running beside them on a 2-core machine inflate either
//! rank's measured time at random.

use parsim_abm::population::Synthetic;
use parsim_abm::seir::{self, Balance};
use parsim_abm::space::{self, flock::Flock, Domain, SpaceConfig};
use parsim_abm::{Population, SeirConfig};
use parsim_comm::{launch, Comm};
use parsim_graph::DistGraph;
use parsim_lb::{Balancer, Config, Measure, Strategy, When};

/// Runs `f` up to three times: a timing test passes when one attempt
/// shows the effect (another process's burst of work can spoil one).
fn attempts(name: &str, f: impl Fn() -> Result<(), String>) {
    let mut why = Vec::new();
    for _ in 0..3 {
        match f() {
            Ok(()) => return,
            Err(e) => why.push(e),
        }
    }
    panic!("{name}: three attempts failed:\n  {}", why.join("\n  "));
}

fn space_slowed() -> Result<(), String> {
    let d = Domain::new(2, [64.0, 64.0, 1.0], true, 2.0, [8, 8, 1]).unwrap();
    for s in [Strategy::Sfc, Strategy::Diffusive, Strategy::Refine, Strategy::Graph] {
        // Eight checks, each able to rebalance: robust to a busy machine
        // whose other work inflates either rank's measured time for a while.
        let mut c = SpaceConfig { agents: 3000, steps: 24, seed: 11, ..SpaceConfig::default() };
        c.lb.strategy = s;
        c.lb.every = 3;
        c.lb.measure = Measure::Time;
        c.lb.when = When::Threshold;
        c.lb.threshold = 1.1;
        c.slow = Some((1, 8.0));
        let out =
            launch(2, |comm| space::run(&comm, &d, &Flock::default(), &c, &mut |_| Ok(())).map(|r| (r.owner, r.lb)))
                .unwrap();
        let (owner, lb) = &out[0];
        let slow = owner.iter().filter(|&&r| r == 1).count();
        if lb.rebalances == 0 || slow >= 28 {
            return Err(format!(
                "{s:?}: {} rebalances, the slowed rank still owns {slow} of 64 chunks (λ {:?})",
                lb.rebalances, lb.lambda
            ));
        }
    }
    Ok(())
}

/// The share of the epidemic's work rank 1 did, slowed `factor` times, under `lb`.
fn epidemic_share(pop: &Population, cfg: &SeirConfig, lb: &Config, factor: f64) -> (f64, parsim_core::Digest) {
    let out = launch(2, |comm| {
        let mut balancer = Balancer::new(lb.clone(), Balance::chunks(&pop.graph, 250), 2, 9);
        let mut bal = Balance::new(&mut balancer, 250);
        bal.slow = Some((1, factor));
        let g = DistGraph::build(comm.rank(), 2, &pop.graph, &bal.agent_owner(pop.agents()))?;
        let res = seir::run_balanced(&comm, &pop.layers, &g, cfg, None, None, &mut bal)?;
        let work = comm.all_gather(vec![bal.work])?.concat();
        Ok::<_, parsim_abm::AbmError>((work[1] / (work[0] + work[1]), res.digest))
    })
    .unwrap();
    out[0]
}

fn epidemic_slowed() -> Result<(), String> {
    let pop = Synthetic { district_size: 1_000, ..Synthetic::default() }.build(12_000, 5).unwrap();
    let cfg = SeirConfig { seed: 4, days: 60, seeds: 40, ..SeirConfig::default() };
    let lb = Config { strategy: Strategy::Sfc, when: When::Every, every: 5, ..Config::default() };
    let off = Config { strategy: Strategy::Off, ..lb.clone() };
    let (static_share, want) = epidemic_share(&pop, &cfg, &off, 6.0);
    let (share, got) = epidemic_share(&pop, &cfg, &lb, 6.0);
    assert_eq!(got, want);
    // Rank 1 computes 6 times as long for the same work: balancing on
    // measured time gives it a clearly smaller share of the work.
    if share < static_share - 0.05 {
        Ok(())
    } else {
        Err(format!("the slowed rank did {share:.3} of the work balanced, {static_share:.3} static"))
    }
}

#[test]
fn a_slowed_rank_loses_work_under_measured_time_balancing() {
    attempts("agents in space", space_slowed);
    attempts("the epidemic", epidemic_slowed);
}
