//! Behaviour tests of parsim-partition.

mod bad_input;
mod formats;
mod methods;
mod props;
mod support;
