//! Behaviour tests of the graph engines.

mod dist;
mod engines;
mod resilience;
