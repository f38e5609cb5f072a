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

/// Whose CPU time [`cpu_s`] reads.
pub enum Who {
    /// This process.
    Me,
    /// The children this process has waited for.
    Children,
}

/// CPU seconds (user + system) of `who`, from the kernel's accounting
/// (`getrusage`); NaN where there is none.
pub fn cpu_s(who: Who) -> f64 {
    #[cfg(unix)]
    {
        let who = match who {
            Who::Me => libc::RUSAGE_SELF,
            Who::Children => libc::RUSAGE_CHILDREN,
        };
        // SAFETY: getrusage only writes the struct it is given.
        let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
        if unsafe { libc::getrusage(who, &mut ru) } == 0 {
            let tv = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 * 1e-6;
            return tv(ru.ru_utime) + tv(ru.ru_stime);
        }
    }
    #[cfg(not(unix))]
    let _ = who;
    f64::NAN
}

/// The median of `v` (the upper one of an even count); `v` is not empty.
pub fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}
