//! The DES determinism suite under MPI: `mpirun -n N target/debug/examples/mpi_des`.
//! Placeholder replaced below.
fn main() {}
