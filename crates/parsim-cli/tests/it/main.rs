//! Behaviour tests of the `parsim` binary.

mod bad_input;
mod campaign;
mod des;
mod epidemic;
mod front;
mod grid;
mod partition;
mod pinned;
mod resilience;
mod ring;
mod scale;
mod space;
mod support;
mod sweep;
mod trace;
