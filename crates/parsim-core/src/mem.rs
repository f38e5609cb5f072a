//! Memory estimates before allocation: what this machine has available, how
//! many ranks share it, and the one-line refusal a configuration gets when
//! its estimate does not fit.

/// Memory the kernel says is available (`MemAvailable` of `/proc/meminfo`),
/// in bytes; `None` where it cannot be read (not Linux).
pub fn available() -> Option<u64> {
    let text = std::fs::read_to_string("/proc/meminfo").ok()?;
    let line = text.lines().find(|l| l.starts_with("MemAvailable:"))?;
    line.split_whitespace().nth(1)?.parse::<u64>().ok().map(|kb| kb.saturating_mul(1024))
}

/// The ranks of this MPI job on this machine (1 when not under `mpirun`).
pub fn mpi_local_ranks() -> usize {
    std::env::var("OMPI_COMM_WORLD_LOCAL_SIZE").ok().and_then(|v| v.parse().ok()).unwrap_or(1)
}

/// The ranks of this MPI job (1 when not under `mpirun`).
pub fn mpi_world_ranks() -> usize {
    std::env::var("OMPI_COMM_WORLD_SIZE").ok().and_then(|v| v.parse().ok()).unwrap_or(1)
}

/// A byte count for people: `8.0 EB`, `23.4 GiB`-style decimal units
/// (B, kB, MB, GB, TB, PB, EB, and powers of ten beyond).
///
/// ```
/// assert_eq!(parsim_core::mem::human(1.5e9), "1.5 GB");
/// assert_eq!(parsim_core::mem::human(8e18), "8.0 EB");
/// assert_eq!(parsim_core::mem::human(3e30), "3.0e30 B");
/// ```
pub fn human(bytes: f64) -> String {
    const UNITS: [&str; 7] = ["B", "kB", "MB", "GB", "TB", "PB", "EB"];
    if !bytes.is_finite() || bytes >= 1e21 {
        return format!("{bytes:.1e} B");
    }
    let mut b = bytes.max(0.0);
    let mut u = 0;
    while b >= 1000.0 && u < UNITS.len() - 1 {
        b /= 1000.0;
        u += 1;
    }
    if u == 0 {
        format!("{b:.0} B")
    } else {
        format!("{b:.1} {}", UNITS[u])
    }
}

/// `None` when `need` bytes (for `what`, held by this machine's share of the
/// ranks) fit in the available memory, else the refusal: "needs 8.0 EB for
/// two f64 fields; this machine has 23.4 GB available". `need` is a float so
/// that a product of user-given sizes cannot overflow before it is judged.
///
/// ```
/// assert!(parsim_core::mem::shortfall(1e3, "a small table").is_none());
/// let why = parsim_core::mem::shortfall(1e30, "two fields").unwrap();
/// assert!(why.contains("two fields"), "{why}");
/// ```
pub fn shortfall(need: f64, what: &str) -> Option<String> {
    let have = available().map_or(f64::INFINITY, |b| b as f64);
    (need.is_nan() || need > have).then(|| {
        format!(
            "needs about {} for {what}, but this machine has {} available",
            human(need),
            available().map_or_else(|| "not that much".into(), |b| human(b as f64))
        )
    })
}

/// Asks the processor to bring `xs[i]` into the cache ahead of its use (a
/// hint: nothing happens past the end, or on processors without one).
/// Latency-bound gathers (a graph's rows visited in a scattered order) use it
/// a few iterations ahead.
///
/// ```
/// let xs = vec![1u32; 1000];
/// parsim_core::mem::prefetch(&xs, 640);
/// parsim_core::mem::prefetch(&xs, 5000); // past the end: nothing
/// ```
#[inline(always)]
#[allow(unsafe_code)]
pub fn prefetch<T>(xs: &[T], i: usize) {
    if i < xs.len() {
        #[cfg(target_arch = "x86_64")]
        // SAFETY: a prefetch is a hint that never faults and changes no
        // memory; the address is inside `xs` anyway, and SSE (which the
        // instruction needs) is part of every x86_64 target.
        unsafe {
            core::arch::x86_64::_mm_prefetch::<{ core::arch::x86_64::_MM_HINT_T0 }>(xs.as_ptr().add(i).cast::<i8>());
        }
    }
}
