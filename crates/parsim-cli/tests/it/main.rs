//! Behaviour tests of the `parsim` binary.

mod bad_input;
mod des;
mod grid;
mod ring;
mod support;
mod trace;
