//! Behaviour tests of sweeps.

mod coverage;
mod scheduling;
