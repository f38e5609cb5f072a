//! One file per benchmark; each prints its figures as ratios against a
//! reference measured in the same run and writes a JSON report.

pub mod checkpoint;
pub mod comm;
pub mod epidemic;
pub mod partition;
pub mod phold;
pub mod stencil;
pub mod sweep;
