//! Behaviour tests of the epidemic engine.

mod agents;
mod balance;
mod determinism;
mod interventions;
mod local;
mod population;
mod space;
mod statistics;
mod support;
