//! Dynamic load balancing for parsim's engines: the four questions of the
//! seed's section 4, answered as Charm++, Zoltan and ParMETIS answer them.
//!
//! - **Measure**: an engine records each chunk's compute time and its own
//!   count (agents, neighbour pairs, active cells) every step
//!   ([`Balancer::record`]); at a check the loads are reduced over the
//!   ranks, so every rank decides from the same numbers.
//! - **When** ([`When`]): at every check (every `every` steps), when
//!   λ = max/mean exceeds a threshold, or `auto`: when the time the new map
//!   saves over the next interval exceeds what the last rebalance cost.
//! - **How** ([`Strategy`]): `diffusive`, `sfc`, `graph`, `greedy`,
//!   `refine`, `steal`, each a pure function of the loads in [`strategy`];
//!   `predict` forecasts the next interval's loads for any of them.
//! - **Migrate**: the engine moves the chunks whose owner changed (it knows
//!   their contents) and reports the bytes and time ([`Balancer::migrated`]).
//!
//! Balancing never changes a result: engines that use it compute the same
//! digest with balancing off, with every strategy and on every rank count.
//!
//! ```
//! use parsim_lb::{strategy, Chunks};
//! // Eight chunks on a line, the first two ten times as costly.
//! let chunks = Chunks::grid([8, 1, 1], false);
//! let loads = [10.0, 10.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0];
//! let owner = strategy::initial(&chunks, 2);
//! assert_eq!(owner, [0, 0, 0, 0, 1, 1, 1, 1]);
//! let before = parsim_lb::imbalance(&strategy::rank_loads(&loads, &owner, 2));
//! let new = strategy::sfc(&chunks, &loads, 2);
//! let after = parsim_lb::imbalance(&strategy::rank_loads(&loads, &new, 2));
//! assert!(after < before);
//! ```

mod balancer;
mod chunks;
mod config;
mod predict;
pub mod strategy;

pub use balancer::{Balancer, Rebalance, Stats};
pub use chunks::Chunks;
pub use config::{Config, Measure, Predict, Strategy, When};
pub use predict::{Forecast, Predictor};
pub use strategy::imbalance;
