//! The Comm semantics suite under MPI.
//!
//! ```text
//! mpirun -n 4 $(scripts/mpi-test-bin.sh parsim-comm mpi_conformance)            # every case
//! PARSIM_EXPECT_SIZE=4 mpirun -n 4 …/mpi_conformance            # also check the world size
//! mpirun -n 4 …/mpi_conformance --panic                         # rank 1 panics mid-run
//! ```
//!
//! Exits 0 when every case passes on every rank. With `--panic`, rank 1
//! panics after a few collectives; the job must end (MPI_Abort) with the
//! message on stderr and a non-zero exit status instead of hanging.

use parsim_comm::{conformance, mpi, Comm, CommError, ReduceOp};

fn main() {
    // `cargo test` runs this program too; it checks ranks against each
    // other, so outside mpirun it says where it runs and stops.
    if !mpi::launched_by_mpirun() {
        println!("mpi_conformance: not started by mpirun; scripts/test.sh runs it under mpirun -n 1, 2 and 4");
        return;
    }
    let panic_mode = std::env::args().any(|a| a == "--panic");
    let result = mpi::launch(|comm| {
        if let Ok(want) = std::env::var("PARSIM_EXPECT_SIZE") {
            let want: usize = want.parse().map_err(|_| "PARSIM_EXPECT_SIZE is not a number".to_string())?;
            if comm.size() != want {
                return Err(format!(
                    "world size is {} but {want} ranks were launched: is the binary linked against another MPI than this mpirun?",
                    comm.size()
                ));
            }
        }
        if panic_mode {
            for step in 0..100u64 {
                comm.all_reduce(&[step], ReduceOp::Sum).map_err(|e: CommError| e.to_string())?;
                if comm.rank() == 1.min(comm.size() - 1) && step == 10 {
                    panic!("deliberate failure at step {step}");
                }
            }
            return Ok(());
        }
        for (name, case) in conformance::cases::<mpi::MpiComm>() {
            case(&comm).map_err(|e| format!("case {name} failed on rank {} of {}: {e}", comm.rank(), comm.size()))?;
            if comm.rank() == 0 {
                println!("ok {name} ({} ranks)", comm.size());
            }
        }
        Ok(())
    });
    if let Err(e) = result {
        eprintln!("mpi_conformance: {e}");
        std::process::exit(1);
    }
}
