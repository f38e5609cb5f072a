//! One file per subcommand.

pub mod info;
pub mod partition;
pub mod run;
pub mod sweep;
