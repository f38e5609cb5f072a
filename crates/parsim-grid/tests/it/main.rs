//! Behaviour tests of parsim-grid.

mod bad_input;
mod decomposition;
mod digests;
mod heat;
mod life;
mod reference;
mod resilience;
mod support;
mod tiles;
