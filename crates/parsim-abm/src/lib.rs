//! Agent-based epidemics on contact networks, in parallel and distributed.
//!
//! [`seir::run`] is SEIR-net-v1 (`shared/specs/seir-net-v1.md`, variants A
//! and B) written as a bulk-synchronous program over a contact network
//! partitioned by any [`parsim_partition`] method: per day, progression of
//! the agents a rank owns, exchange of the boundary agents whose infectious
//! status changed (only those, one buffer per neighbouring rank),
//! transmission along every (infectious, susceptible) edge, and one integer
//! reduction of the daily counts.
//!
//! - [`agents`]: agents of your own on a network — a state, a rule from
//!   the agent's and its neighbours' states to its next one — stepped
//!   synchronously over any partition.
//! - [`Population`]: a network read from a file (edge list text or `u32`
//!   pairs, METIS), Erdős–Rényi G(N, M), or a [`population::Synthetic`]
//!   population of households, schools, workplaces and community contacts,
//!   each a layer with its own β multiplier and contact weight.
//! - [`SeirConfig`]: β, progression ([`Variant`]), seeds, horizon, and
//!   interventions — [`Closure`] of a layer, [`Vaccination`], [`Isolation`]
//!   of detected cases.
//! - [`space`]: agents in continuous 2-D or 3-D space (your own rule, or
//!   the built-in [`space::crowd`] and [`space::flock`]) that migrate
//!   between ranks as they move, with interest management and dynamic
//!   load balancing.
//! - [`report::Outcome`]: attack rate, peaks, observed growth rate and R0;
//!   [`theory::Theory`]: the spec's analytic predictions for the graph's own
//!   degree distribution.
//!
//! **Determinism**: every draw is a pure function of (seed, day, kind,
//! agent, neighbour) through Philox, so a run's digest is the same for any
//! number of ranks, partition, backend and threads per rank.
//!
//! ```
//! use parsim_abm::population::LocalPopulation;
//! use parsim_abm::{report::Outcome, seir, SeirConfig};
//! use parsim_comm::Comm;
//!
//! let cfg = SeirConfig { days: 120, ..SeirConfig::default() };
//! let digests = parsim_comm::launch(2, |comm| {
//!     // Each rank generates only its own block of agents (a on rank a·R/N).
//!     let pop = LocalPopulation::erdos_renyi(&comm, 5_000, 10.0, 42)?;
//!     let res = seir::run(&comm, &pop.layers, &pop.graph, &cfg, None)?;
//!     assert!(Outcome::of(&res, &cfg).attack_rate > 0.5);
//!     Ok::<_, parsim_abm::AbmError>(res.digest)
//! })?;
//! assert_eq!(digests[0], digests[1]);
//! # Ok::<(), parsim_abm::AbmError>(())
//! ```
//!
//! **Capability**: no rank holds the whole population.
//! [`population::LocalPopulation`] generates (synthetic, Erdős–Rényi) or
//! reads (byte ranges of a file) each rank's block of agents, sends the
//! contacts that cross to other ranks once, and keeps the rows in a
//! [`parsim_graph::DistGraph`]; repartitioning moves rows between ranks.
#![forbid(unsafe_code)]

pub mod agents;
mod balance;
mod config;
mod error;
pub mod population;
pub mod report;
mod resume;
pub mod seir;
pub mod space;
pub mod theory;

pub use config::{Closure, Isolation, SeirConfig, Vaccination, Variant};
pub use error::{AbmError, Result};
pub use population::{Layer, Population};
pub use seir::{DayCounts, SeirResult};
