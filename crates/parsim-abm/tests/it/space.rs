//! Agents in space: the digest does not depend on the rank count or the
//! balancing; migration conserves agents and their state; ghosts and
//! interest management deliver exactly the neighbours a brute-force search
//! finds; a slowed rank loses work; bad rules and inputs are refused.

use parsim_abm::space::{self, crowd::Crowd, ddm::Routing, flock::Flock, Agent, Ctx, Domain, Near, Rule, SpaceConfig};
use parsim_comm::launch;
use parsim_core::rng::{Stream, StreamKey};
use parsim_lb::{Measure, Strategy, When};
use proptest::prelude::*;

const STRATEGIES: [Strategy; 7] = [
    Strategy::Off,
    Strategy::Diffusive,
    Strategy::Sfc,
    Strategy::Graph,
    Strategy::Greedy,
    Strategy::Refine,
    Strategy::Steal,
];

fn cfg(agents: u64, steps: u64, strategy: Strategy) -> SpaceConfig {
    let mut c = SpaceConfig { agents, steps, seed: 11, ..SpaceConfig::default() };
    c.lb.strategy = strategy;
    c.lb.every = 3;
    // Deterministic decisions (counts, at every check) so every strategy moves chunks.
    c.lb.measure = Measure::Count;
    c.lb.when = When::Every;
    c
}

fn digest<R: Rule>(p: usize, d: &Domain, rule: &R, c: &SpaceConfig) -> (parsim_core::Digest, u64) {
    let out =
        launch(p, |comm| space::run(&comm, d, rule, c, &mut |_| Ok(())).map(|r| (r.digest, r.lb.rebalances))).unwrap();
    assert!(out.iter().all(|o| *o == out[0]), "ranks disagree: {out:?}");
    out[0]
}

#[test]
fn crowd_and_flock_digests_do_not_depend_on_ranks_or_balancing() {
    let crowd = Crowd { opens: 5, ..Crowd::default() };
    let walled = Domain::new(2, [48.0, 48.0, 1.0], false, 1.5, [8, 8, 1]).unwrap();
    let torus = Domain::new(2, [40.0, 40.0, 1.0], true, 2.0, [6, 6, 1]).unwrap();
    let cube = Domain::new(3, [16.0, 16.0, 16.0], true, 2.0, [4, 4, 4]).unwrap();
    let reference = [
        digest(1, &walled, &crowd, &cfg(800, 18, Strategy::Off)).0,
        digest(1, &torus, &Flock::default(), &cfg(600, 18, Strategy::Off)).0,
        digest(1, &cube, &Flock::default(), &cfg(500, 12, Strategy::Off)).0,
    ];
    for s in STRATEGIES {
        for p in [2, 3, 4] {
            let (a, na) = digest(p, &walled, &crowd, &cfg(800, 18, s));
            let (b, nb) = digest(p, &torus, &Flock::default(), &cfg(600, 18, s));
            let (c, _) = digest(p, &cube, &Flock::default(), &cfg(500, 12, s));
            assert_eq!([a, b, c], reference, "{s:?} on {p} ranks");
            if s == Strategy::Off {
                assert_eq!(na + nb, 0);
            } else if matches!(s, Strategy::Sfc | Strategy::Greedy | Strategy::Graph) {
                assert!(na + nb > 0, "{s:?} on {p} ranks never rebalanced");
            }
        }
    }
}

/// Agents that jump anywhere in the box each step, carrying a payload that
/// records their history.
struct Teleport;

#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
struct Payload {
    steps: u64,
    trail: Vec<u32>,
}

impl Rule for Teleport {
    type State = Payload;
    fn init(&self, id: u64, d: &Domain, rng: &mut Stream) -> Agent<Payload> {
        let pos = [rng.uniform() * d.size[0], rng.uniform() * d.size[1], 0.0];
        Agent { id, pos, vel: [0.0; 3], state: Payload { steps: 0, trail: vec![id as u32] } }
    }
    fn step(&self, me: &Agent<Payload>, near: &[Near<'_, Payload>], ctx: &mut Ctx<'_>) -> Agent<Payload> {
        let d = ctx.domain;
        let pos = [ctx.rng.uniform() * d.size[0], ctx.rng.uniform() * d.size[1], 0.0];
        let mut trail = me.state.trail.clone();
        trail.push(near.len() as u32);
        Agent { id: me.id, pos, vel: [0.0; 3], state: Payload { steps: me.state.steps + 1, trail } }
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(6))]

    #[test]
    fn migration_conserves_agents_and_their_state(
        seed in 0u64..1000, p in 1usize..5, cx in 2u32..6, cy in 2u32..6, n in 1u64..300
    ) {
        let d = Domain::new(2, [f64::from(cx) * 3.0, f64::from(cy) * 3.0, 1.0], false, 1.0, [cx, cy, 1]).unwrap();
        let mut c = cfg(n, 5, Strategy::Greedy);
        c.seed = seed;
        c.lb.every = 1;
        let runs = launch(p, |comm| space::run(&comm, &d, &Teleport, &c, &mut |_| Ok(())).map(|r| (r.agents, r.digest))).unwrap();
        let mut all: Vec<Agent<Payload>> = runs.iter().flat_map(|r| r.0.clone()).collect();
        all.sort_by_key(|a| a.id);
        prop_assert_eq!(all.len() as u64, n);
        for (i, a) in all.iter().enumerate() {
            prop_assert_eq!(a.id, i as u64);
            prop_assert_eq!(a.state.steps, 5);
            prop_assert_eq!(a.state.trail.len(), 6);
            prop_assert_eq!(a.state.trail[0], i as u32);
        }
        let one = launch(1, |comm| space::run(&comm, &d, &Teleport, &c, &mut |_| Ok(())).map(|r| r.agents)).unwrap();
        let mut seq = one[0].clone();
        seq.sort_by_key(|a| a.id);
        prop_assert_eq!(all, seq);
    }
}

/// Records the ids of the neighbours it saw (one step).
struct Census;

impl Rule for Census {
    type State = Vec<u64>;
    fn init(&self, id: u64, d: &Domain, rng: &mut Stream) -> Agent<Vec<u64>> {
        let mut pos = [0.0; 3];
        for a in 0..d.dim {
            pos[a] = rng.uniform() * d.size[a];
        }
        Agent { id, pos, vel: [0.0; 3], state: Vec::new() }
    }
    fn step(&self, me: &Agent<Vec<u64>>, near: &[Near<'_, Vec<u64>>], _ctx: &mut Ctx<'_>) -> Agent<Vec<u64>> {
        Agent { state: near.iter().map(|n| n.agent.id).collect(), ..me.clone() }
    }
}

#[test]
fn ghosts_give_exactly_the_neighbours_of_an_all_pairs_search() {
    for (dim, periodic) in [(2, false), (2, true), (3, false), (3, true)] {
        let size = [20.0, 14.0, if dim == 3 { 12.0 } else { 1.0 }];
        let d = Domain::new(dim, size, periodic, 2.5, [4, 2, if dim == 3 { 2 } else { 1 }]).unwrap();
        let n = 700;
        let c = cfg(n, 1, Strategy::Off);
        let key = StreamKey::new(c.seed).purpose("parsim.space");
        let start: Vec<Agent<Vec<u64>>> = (0..n).map(|id| Census.init(id, &d, &mut key.with(id).stream())).collect();
        for p in [1, 3, 4] {
            let runs = launch(p, |comm| space::run(&comm, &d, &Census, &c, &mut |_| Ok(())).map(|r| r.agents)).unwrap();
            let mut seen = 0;
            for a in runs.iter().flatten() {
                let me = &start[a.id as usize];
                let want: Vec<u64> = start
                    .iter()
                    .filter(|o| {
                        let v = d.displacement(&me.pos, &o.pos);
                        o.id != me.id && v.iter().map(|x| x * x).sum::<f64>() <= 2.5 * 2.5
                    })
                    .map(|o| o.id)
                    .collect();
                assert_eq!(a.state, want, "agent {} ({dim}-D, periodic {periodic}, {p} ranks)", a.id);
                seen += 1;
            }
            assert_eq!(seen, n);
        }
    }
}

#[test]
fn interest_management_subscribes_exactly_the_ranks_within_a_cell() {
    let mut rng = StreamKey::new(5).stream();
    for (dim, periodic) in [(2, false), (2, true), (3, true)] {
        let d = Domain::new(dim, [30.0, 24.0, 18.0], periodic, 1.4, [5, 4, if dim == 3 { 3 } else { 1 }]).unwrap();
        let ranks = 4;
        let owner: Vec<u32> = (0..d.n_chunks()).map(|_| rng.below(ranks as u64) as u32).collect();
        let r = Routing::new(&d, &owner, ranks);
        let cells = d.cells();
        let coords = |i: usize| {
            [i % cells[0] as usize, i / cells[0] as usize % cells[1] as usize, i / (cells[0] * cells[1]) as usize]
        };
        let near = |a: usize, b: usize, axis: usize| {
            let n = cells[axis] as i64;
            let diff = (a as i64 - b as i64).abs();
            diff <= 1 || (periodic && n - diff <= 1)
        };
        // Brute force: rank q subscribes to cell c iff one of q's cells is
        // within one cell of c on every axis.
        for c in 0..d.n_cells() {
            let cc = coords(c);
            let mut want: Vec<u32> = (0..d.n_cells())
                .filter(|&o| {
                    let oc = coords(o);
                    (0..3).all(|a| near(cc[a], oc[a], a))
                })
                .map(|o| owner[d.chunk_of_cell(coords(o).map(|x| x as u32))])
                .collect();
            want.sort_unstable();
            want.dedup();
            assert_eq!(r.subscribers(c), &want[..], "cell {cc:?} ({dim}-D, periodic {periodic})");
        }
        // No update needed is missing: every rank owning a point within r
        // of an agent is subscribed to the agent's cell.
        for _ in 0..2000 {
            let mut a = [0.0; 3];
            let mut b = [0.0; 3];
            for k in 0..dim {
                a[k] = rng.uniform() * d.size[k];
                let step = (rng.uniform() * 2.0 - 1.0) * d.radius / (dim as f64).sqrt();
                b[k] = a[k] + step;
            }
            let mut v = [0.0; 3];
            d.contain(&mut b, &mut v);
            if (0..dim).any(|k| b[k] < 0.0 || b[k] > d.size[k]) {
                continue;
            }
            let q = owner[d.chunk_of(&b)];
            assert!(r.subscribers(d.cell_index(d.cell_of(&a))).contains(&q), "{a:?} needs rank {q} (owns {b:?})");
        }
    }
}

/// A rule that goes wrong at step 3 for agent 7.
struct Broken;

impl Rule for Broken {
    type State = ();
    fn init(&self, id: u64, d: &Domain, rng: &mut Stream) -> Agent<()> {
        Agent { id, pos: [rng.uniform() * d.size[0], rng.uniform() * d.size[1], 0.0], vel: [0.0; 3], state: () }
    }
    fn step(&self, me: &Agent<()>, _near: &[Near<'_, ()>], ctx: &mut Ctx<'_>) -> Agent<()> {
        let x = if me.id == 7 && ctx.step == 3 { f64::NAN } else { me.pos[0] };
        Agent { pos: [x, me.pos[1], 0.0], ..me.clone() }
    }
}

/// Starts outside the box.
struct Outside;

impl Rule for Outside {
    type State = ();
    fn init(&self, id: u64, _d: &Domain, _rng: &mut Stream) -> Agent<()> {
        Agent { id, pos: [-1.0, 0.5, 0.0], vel: [0.0; 3], state: () }
    }
    fn step(&self, me: &Agent<()>, _near: &[Near<'_, ()>], _ctx: &mut Ctx<'_>) -> Agent<()> {
        me.clone()
    }
}

#[test]
fn bad_rules_and_domains_are_refused_with_the_agent_and_step() {
    let d = Domain::new(2, [20.0, 20.0, 1.0], false, 1.0, [4, 4, 1]).unwrap();
    let c = cfg(50, 5, Strategy::Off);
    let e = launch(2, |comm| space::run(&comm, &d, &Broken, &c, &mut |_| Ok(())).map(|_| ())).unwrap_err().to_string();
    assert!(e.contains("agent 7") && e.contains("step 3") && e.contains("non-finite"), "{e}");
    let e = launch(1, |comm| space::run(&comm, &d, &Outside, &c, &mut |_| Ok(())).map(|_| ())).unwrap_err().to_string();
    assert!(e.contains("agent 0") && e.contains("outside the box"), "{e}");
    let e = Domain::new(2, [20.0, 20.0, 1.0], false, 6.0, [4, 4, 1]).unwrap_err().to_string();
    assert!(e.contains("larger than a chunk"), "{e}");
    let mut bad = c.clone();
    bad.lb.threshold = 0.5;
    let e =
        launch(1, |comm| space::run(&comm, &d, &Broken, &bad, &mut |_| Ok(())).map(|_| ())).unwrap_err().to_string();
    assert!(e.contains("lb.threshold"), "{e}");
}
