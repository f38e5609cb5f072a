//! Charts of the built-in models' results (through [`parsim::plot`]).

pub mod epidemic_plot;
