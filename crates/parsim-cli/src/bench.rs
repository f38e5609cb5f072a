//! One file per benchmark; each prints its figures as ratios against a
//! reference measured in the same run and writes a JSON report.

pub mod checkpoint;
pub mod comm;
pub mod epidemic;
mod epidemic_ref;
pub mod lb;
pub mod partition;
pub mod phold;
pub mod stencil;
mod stencil_ref;
pub mod sweep;

/// The median of `v` (the upper one of an even count); `v` is not empty.
pub fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}
