//! Agents in continuous space, spread over ranks by chunks of the domain,
//! moving between ranks as they move in space, with the chunks rebalanced
//! by [`parsim_lb`].
//!
//! N agents with positions and velocities in a 2-D or 3-D box (periodic
//! or walled) are updated synchronously: each step, every agent reads the
//! previous-step state of its neighbours within the perception radius r,
//! in increasing id order, so the result is the same whatever the
//! partition, the rank count and the balancing. The box is cut into
//! chunks (the unit of ownership and of balancing), each chunk into cells
//! of side ≥ r (the unit of neighbour search and of interest management).
//!
//! - [`Rule`]: the user's agent rule (any serde state), like `CellFn` for
//!   grids; [`crowd`] and [`flock`] are built in.
//! - [`run`]: ghosts routed by [`ddm`] (HLA-style interest
//!   management: agents publish to their cell, ranks subscribe to their
//!   chunks plus one cell), migration of agents that cross into another
//!   rank's chunk, and balancing at step boundaries.
//!
//! ```
//! use parsim_abm::space::{self, flock::Flock, Domain, SpaceConfig};
//! let domain = Domain::new(2, [40.0, 40.0, 1.0], true, 2.0, [4, 4, 1]).unwrap();
//! let cfg = SpaceConfig { agents: 400, steps: 20, seed: 7, ..SpaceConfig::default() };
//! let digests = parsim_comm::launch(3, |c| {
//!     space::run(&c, &domain, &Flock::default(), &cfg, &mut |_| Ok(())).map(|r| r.digest)
//! })?;
//! let one = parsim_comm::launch(1, |c| {
//!     space::run(&c, &domain, &Flock::default(), &cfg, &mut |_| Ok(())).map(|r| r.digest)
//! })?;
//! assert!(digests.iter().all(|d| *d == one[0]));
//! # Ok::<(), parsim_abm::AbmError>(())
//! ```

pub mod crowd;
pub mod ddm;
mod domain;
mod engine;
pub mod flock;
pub mod vtk;

pub use domain::Domain;
pub use engine::{run, SpaceConfig, SpaceRun, SpaceStats, View};

use parsim_core::rng::Stream;
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};

/// One agent: a global id, a position, a velocity and the rule's state.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Agent<S> {
    /// The global id (the agent's identity across ranks and restarts).
    pub id: u64,
    /// Position in the box (z is 0 in 2-D).
    pub pos: [f64; 3],
    /// Velocity.
    pub vel: [f64; 3],
    /// The rule's own state.
    pub state: S,
}

/// A neighbour within the perception radius, as the rule sees it.
#[derive(Clone, Copy, Debug)]
pub struct Near<'a, S> {
    /// The neighbour's previous-step state.
    pub agent: &'a Agent<S>,
    /// Its displacement from the agent (the nearest image when periodic).
    pub d: [f64; 3],
    /// |d|.
    pub dist: f64,
}

/// What a rule knows of the step besides the agents.
pub struct Ctx<'a> {
    /// The step being computed (from 0).
    pub step: u64,
    /// The domain.
    pub domain: &'a Domain,
    /// A random stream private to (seed, agent, step): the same on any rank.
    pub rng: Stream,
}

/// An agent rule: how agents start, and how one agent's next state follows
/// from its own and its neighbours' previous states.
///
/// ```
/// use parsim_abm::space::{Agent, Ctx, Domain, Near, Rule};
/// use parsim_core::rng::Stream;
///
/// /// Drifting agents that count how many neighbours they have seen.
/// struct Drift;
/// impl Rule for Drift {
///     type State = u64;
///     fn init(&self, id: u64, d: &Domain, rng: &mut Stream) -> Agent<u64> {
///         let pos = [rng.uniform() * d.size[0], rng.uniform() * d.size[1], 0.0];
///         Agent { id, pos, vel: [0.1, 0.0, 0.0], state: 0 }
///     }
///     fn step(&self, me: &Agent<u64>, near: &[Near<'_, u64>], _ctx: &mut Ctx<'_>) -> Agent<u64> {
///         let pos = [me.pos[0] + me.vel[0], me.pos[1], 0.0];
///         Agent { pos, state: me.state + near.len() as u64, ..me.clone() }
///     }
/// }
/// ```
pub trait Rule: Sync {
    /// The agent's own state.
    type State: Clone + Send + Sync + Serialize + DeserializeOwned + 'static;

    /// Agent `id` at step 0; `rng` is private to (seed, id). Positions must
    /// lie in the box.
    fn init(&self, id: u64, domain: &Domain, rng: &mut Stream) -> Agent<Self::State>;

    /// The agent's next state from its own and its neighbours' (within r,
    /// in increasing id order). The id must not change; the position may
    /// leave the box (it is wrapped, or reflected off the walls).
    fn step(&self, me: &Agent<Self::State>, near: &[Near<'_, Self::State>], ctx: &mut Ctx<'_>) -> Agent<Self::State>;
}
