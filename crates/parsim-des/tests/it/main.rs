//! Behaviour tests of parsim-des.

mod bad_input;
mod commits;
mod determinism;
mod queues;
mod resilience;
mod serde_payloads;
mod stress;
mod support;
