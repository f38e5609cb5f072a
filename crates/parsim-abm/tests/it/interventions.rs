//! Interventions do what they say, with crisp limits and measured effects.

use parsim_abm::population::Synthetic;
use parsim_abm::report::Outcome;
use parsim_abm::{Closure, Isolation, Population, SeirConfig, Vaccination};

use crate::support::{block, run};

fn pop() -> Population {
    Synthetic { district_size: 2_000, ..Synthetic::default() }.build(30_000, 1).unwrap()
}

fn attack(pop: &Population, cfg: &SeirConfig) -> (f64, parsim_abm::SeirResult) {
    let res = run(pop, &block(pop.agents(), 2), 2, cfg);
    (Outcome::of(&res, cfg).attack_rate, res)
}

#[test]
fn limits_stop_transmission_entirely() {
    let pop = pop();
    let seeds = 10.0 / pop.agents() as f64;
    let base = SeirConfig { seed: 3, days: 150, ..SeirConfig::default() };
    // Every layer closed all the time.
    let closures = (0..4).map(|layer| Closure { layer, from: 0, to: 150 }).collect();
    assert_eq!(attack(&pop, &SeirConfig { closures, ..base.clone() }).0, seeds);
    // Everyone susceptible vaccinated on day 0.
    let v = SeirConfig { vaccination: Some(Vaccination { from: 0, to: 1, rate: 1.0 }), ..base.clone() };
    let (a, res) = attack(&pop, &v);
    assert_eq!(a, seeds);
    assert_eq!(res.curve[0].v, pop.agents() as u64 - 10);
    // Every case detected and isolated at onset, transmitting on no layer.
    let iso = SeirConfig { isolation: Some(Isolation { detect: 1.0, delay: 0, keep: 0 }), ..base };
    let (a, res) = attack(&pop, &iso);
    assert_eq!(a, seeds);
    assert_eq!(res.curve.iter().map(|c| c.isolated).max(), Some(10));
}

#[test]
fn partial_interventions_lower_the_attack_rate() {
    let pop = pop();
    let base = SeirConfig { seed: 8, days: 180, ..SeirConfig::default() };
    let (none, _) = attack(&pop, &base);
    assert!(none > 0.3, "the baseline epidemic takes off: {none}");
    let school = pop.layer("school").unwrap();
    let closed = SeirConfig { closures: vec![Closure { layer: school, from: 0, to: 180 }], ..base.clone() };
    let vacc = SeirConfig { vaccination: Some(Vaccination { from: 0, to: 60, rate: 0.01 }), ..base.clone() };
    let household = 1u8 << pop.layer("household").unwrap();
    let iso = SeirConfig { isolation: Some(Isolation { detect: 0.6, delay: 1, keep: household }), ..base.clone() };
    for (what, cfg) in [("schools closed", closed), ("vaccination", vacc), ("isolation", iso)] {
        let (a, res) = attack(&pop, &cfg);
        assert!(a < none - 0.02, "{what}: attack rate {a} vs {none} without");
        let last = res.curve.last().unwrap();
        assert_eq!(last.s + last.e + last.i + last.r + last.v, pop.agents() as u64);
    }
}
