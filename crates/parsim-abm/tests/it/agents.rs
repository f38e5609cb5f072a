//! The general agent API: a threshold-contagion rule (with random
//! spontaneous adoption) equals a plain sequential loop on every rank count
//! and partition.

use parsim_abm::agents::{self, Rule};
use parsim_abm::Population;
use parsim_comm::Comm;
use parsim_core::rng::{Stream, StreamKey};
use parsim_graph::{Csr, DistGraph};

/// Adopt when at least `threshold` of the neighbours have; or spontaneously with probability `p`.
struct Threshold {
    threshold: f64,
    p: f64,
}

#[derive(Clone, Copy, Default, Debug, PartialEq, bytemuck::Pod, bytemuck::Zeroable)]
#[repr(C)]
struct State {
    adopted: u32,
    since: u32,
}

impl Rule for Threshold {
    type State = State;
    fn init(&self, agent: u32, rng: &mut Stream) -> State {
        State { adopted: u32::from(agent % 97 == 0 || rng.bernoulli(0.01)), since: 0 }
    }
    fn step(&self, _agent: u32, me: &State, nbrs: &[State], step: u64, rng: &mut Stream) -> State {
        if me.adopted == 1 {
            return *me;
        }
        let share = nbrs.iter().filter(|s| s.adopted == 1).count() as f64 / nbrs.len().max(1) as f64;
        if share >= self.threshold || rng.bernoulli(self.p) {
            State { adopted: 1, since: step as u32 + 1 }
        } else {
            *me
        }
    }
}

/// The same dynamics in one loop (the streams keyed as the engine keys them).
fn sequential(g: &Csr, rule: &Threshold, steps: u64, seed: u64) -> Vec<State> {
    let key = |v: usize, s: u64| StreamKey::new(seed).purpose("parsim.agents").with(v as u64).with(s).stream();
    let mut cur: Vec<State> = (0..g.n()).map(|v| rule.init(v as u32, &mut key(v, u64::MAX))).collect();
    for s in 0..steps {
        cur = (0..g.n())
            .map(|v| {
                let nbrs: Vec<State> = g.neighbours(v).iter().map(|&u| cur[u as usize]).collect();
                rule.step(v as u32, &cur[v], &nbrs, s, &mut key(v, s))
            })
            .collect();
    }
    cur
}

#[test]
fn threshold_contagion_equals_the_sequential_loop_on_any_ranks_and_partition() {
    let pop = Population::erdos_renyi(3_000, 6.0, 11);
    let g = &pop.graph;
    let rule = Threshold { threshold: 0.3, p: 0.002 };
    let want = sequential(g, &rule, 25, 5);
    let adopted = want.iter().filter(|s| s.adopted == 1).count();
    assert!(adopted > 300 && adopted < 3_000, "{adopted} adopters: the dynamics should spread but not trivially");
    let mut digests = Vec::new();
    for ranks in [1usize, 2, 4] {
        for striped in [false, true] {
            let owner: Vec<u32> =
                (0..g.n()).map(|v| if striped { (v % ranks) as u32 } else { (v * ranks / g.n()) as u32 }).collect();
            let runs = parsim_comm::launch(ranks, |comm| {
                let local = DistGraph::build(comm.rank(), ranks, g, &owner)?;
                let r = agents::run(&comm, &local, &owner, &rule, 25, 5)?;
                Ok::<_, parsim_abm::AbmError>((local.owned_ids().to_vec(), r))
            })
            .unwrap();
            for (ids, r) in &runs {
                for (id, s) in ids.iter().zip(&r.states) {
                    assert_eq!(*s, want[*id as usize], "agent {id} on {ranks} ranks (striped {striped})");
                }
            }
            digests.push(runs[0].1.digest);
        }
    }
    assert!(digests.iter().all(|d| *d == digests[0]), "{digests:?}");
}
