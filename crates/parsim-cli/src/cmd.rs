//! One file per subcommand.

pub mod info;
pub mod model;
pub mod partition;
pub mod run;
pub mod supervise;
pub mod sweep;
