//! Agents of your own on a network: a state per agent, a rule that computes
//! its next state from its own and its neighbours' current states, applied
//! to every agent at once, step after step (a synchronous update, as in a
//! cellular automaton on a graph: opinion dynamics, voter models, threshold
//! contagion, rumour spreading).
//!
//! The agents are cut over the ranks by any vertex partition; each step the
//! states of the agents on a rank's border travel to the ranks that need them
//! (Pregel supersteps underneath). A rule sees its neighbours in ascending id
//! order and draws from a stream keyed by (seed, agent, step), so the result
//! is the same on any number of ranks.
//!
//! ```
//! use parsim_abm::agents::{self, Rule};
//! use parsim_core::rng::Stream;
//! use parsim_graph::{Csr, DistGraph};
//! use parsim_comm::Comm;
//!
//! /// The majority model: adopt the opinion most neighbours hold (ties: keep yours).
//! struct Majority;
//! impl Rule for Majority {
//!     type State = u8;
//!     fn init(&self, _agent: u32, rng: &mut Stream) -> u8 { rng.bernoulli(0.5) as u8 }
//!     fn step(&self, _agent: u32, me: &u8, nbrs: &[u8], _step: u64, _rng: &mut Stream) -> u8 {
//!         let ones = nbrs.iter().filter(|&&s| s == 1).count();
//!         match (2 * ones).cmp(&nbrs.len()) {
//!             std::cmp::Ordering::Greater => 1,
//!             std::cmp::Ordering::Less => 0,
//!             std::cmp::Ordering::Equal => *me,
//!         }
//!     }
//! }
//!
//! // A ring of 100 agents, each linked to its two neighbours on each side.
//! let pairs: Vec<(u32, u32)> = (0..100u32).flat_map(|v| [(v, (v + 1) % 100), (v, (v + 2) % 100)]).collect();
//! let (g, _) = Csr::from_pairs(100, pairs, None);
//! let run = |ranks: usize| {
//!     parsim_comm::launch(ranks, |comm| {
//!         let owner: Vec<u32> = (0..100).map(|v| (v * ranks / 100) as u32).collect();
//!         let local = DistGraph::build(comm.rank(), ranks, &g, &owner)?;
//!         agents::run(&comm, &local, &owner, &Majority, 20, 7)
//!     })
//! };
//! let (one, three) = (run(1)?, run(3)?);
//! assert_eq!(one[0].digest, three[2].digest);
//! # Ok::<(), parsim_abm::AbmError>(())
//! ```

use bytemuck::Pod;
use parsim_comm::Comm;
use parsim_core::rng::{Stream, StreamKey};
use parsim_core::{Digest, Digester, SetDigest};
use parsim_graph::pregel::{self, Context, VertexProgram};
use parsim_graph::DistGraph;

use crate::Result;

/// An agent's rule.
pub trait Rule: Sync {
    /// An agent's state: plain data (it travels to the neighbours' ranks as bytes).
    type State: Pod + Send + Sync + Default;

    /// The state of `agent` before step 0.
    fn init(&self, agent: u32, rng: &mut Stream) -> Self::State;

    /// The state of `agent` after `step`, from its state and its neighbours'
    /// (in ascending id order, one per edge) before it.
    fn step(
        &self,
        agent: u32,
        me: &Self::State,
        neighbours: &[Self::State],
        step: u64,
        rng: &mut Stream,
    ) -> Self::State;
}

/// A finished run, as one rank sees it.
#[derive(Clone, Debug)]
pub struct AgentRun<S> {
    /// The final states of this rank's agents, in ascending global id (see
    /// [`DistGraph::owned_ids`]).
    pub states: Vec<S>,
    /// The digest of every agent's final state, keyed by its id (equal on
    /// every rank, for any number of ranks and partition).
    pub digest: Digest,
    /// Steps run.
    pub steps: u64,
}

struct Program<'a, R: Rule> {
    rule: &'a R,
    seed: u64,
    steps: u64,
}

impl<R: Rule> Program<'_, R> {
    fn stream(&self, agent: u32, step: u64) -> Stream {
        StreamKey::new(self.seed).purpose("parsim.agents").with(u64::from(agent)).with(step).stream()
    }
}

impl<R: Rule> VertexProgram for Program<'_, R> {
    type Value = R::State;
    type Message = R::State;

    fn init(&self, _v: u32, _degree: usize) -> R::State {
        R::State::default()
    }

    fn compute(&self, ctx: &mut Context<'_, R::State>, state: &mut R::State, messages: &[R::State]) {
        let (v, s) = (ctx.vertex(), ctx.superstep());
        // Superstep 0 initialises; superstep s ≥ 1 applies step s − 1 to the
        // neighbours' states sent at the end of the superstep before.
        *state = if s == 0 {
            self.rule.init(v, &mut self.stream(v, u64::MAX))
        } else {
            self.rule.step(v, state, messages, s - 1, &mut self.stream(v, s - 1))
        };
        if s < self.steps {
            ctx.send_to_neighbours(*state);
        } else {
            ctx.vote_to_halt();
        }
    }
}

/// Runs `rule` for `steps` synchronous steps on this rank's part `g` of the
/// network (`owner` gives every agent's rank); call it on every rank.
pub fn run<C: Comm, R: Rule>(
    comm: &C,
    g: &DistGraph,
    owner: &[u32],
    rule: &R,
    steps: u64,
    seed: u64,
) -> Result<AgentRun<R::State>> {
    let program = Program { rule, seed, steps };
    let r = pregel::run(comm, g, owner, &program, steps + 1)?;
    let mut set = SetDigest::new();
    for (&id, s) in g.owned_ids().iter().zip(&r.values) {
        let mut d = Digester::new();
        d.write_bytes(bytemuck::bytes_of(s));
        set.add(u64::from(id), d.finish().0 as u64);
    }
    let all = comm.all_merge_digest(&set)?;
    let mut d = Digester::new();
    d.write_str("parsim.agents");
    d.write_u64(steps);
    d.write_u64(all.parts[0]);
    d.write_u64(all.parts[1]);
    Ok(AgentRun { states: r.values, digest: d.finish(), steps })
}
