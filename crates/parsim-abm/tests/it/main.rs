//! Behaviour tests of the epidemic engine.

mod determinism;
mod interventions;
mod population;
mod statistics;
mod support;
