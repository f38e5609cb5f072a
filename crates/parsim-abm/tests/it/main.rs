//! Behaviour tests of the epidemic engine.

mod agents;
mod determinism;
mod interventions;
mod population;
mod space;
mod statistics;
mod support;
