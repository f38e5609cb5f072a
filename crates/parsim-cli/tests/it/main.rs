//! Behaviour tests of the `parsim` binary.

mod bad_input;
mod ring;
mod support;
mod trace;
