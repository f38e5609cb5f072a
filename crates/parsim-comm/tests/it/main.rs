//! Behaviour tests of parsim-comm on the threads backend.

mod conformance;
mod failure;
mod phases;
mod streams;
