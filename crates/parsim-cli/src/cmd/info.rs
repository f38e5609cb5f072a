//! `parsim info`: version, backends compiled in, cores, MPI library.

/// Prints what this build of parsim has.
pub fn run() {
    println!("parsim {}", env!("CARGO_PKG_VERSION"));
    let mut backends = vec!["threads"];
    if cfg!(feature = "mpi") {
        backends.push("mpi");
    }
    println!("backends: {}", backends.join(", "));
    println!("cores: {}", std::thread::available_parallelism().map_or(1, |n| n.get()));
    #[cfg(feature = "mpi")]
    println!("mpi library: {}", parsim_comm::mpi::library_version());
    #[cfg(not(feature = "mpi"))]
    println!("mpi library: (not compiled in; build with --features mpi)");
}
