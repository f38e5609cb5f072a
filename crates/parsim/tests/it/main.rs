//! A user's model, written as a user would, gets the whole front door:
//! `run` with `--set`, `--ranks`, `--trace`, `summary.json`, and `sweep`.

mod errors;
mod front_door;
