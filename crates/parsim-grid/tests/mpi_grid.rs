//! The grid digest suite under MPI: every built-in stencil and boundary
//! condition, every decomposition kind, overlap on and off, deep halo 1, 2
//! and 4, one and two threads per rank — each run on the MPI communicator
//! and compared with a one-rank threads-backend run of the same grid.
//!
//! ```text
//! mpirun -n 2 $(scripts/mpi-test-bin.sh parsim-grid mpi_grid)
//! mpirun -n 4 $(scripts/mpi-test-bin.sh parsim-grid mpi_grid)
//! ```

use parsim_comm::{launch, mpi, Comm};
use parsim_core::{rng::StreamKey, Digest};
use parsim_grid::{run, Boundary, Cell, DecompKind, GridSpec, Heat27, Heat5, Heat7, Heat9, Life, Stencil};

fn noise(g: [usize; 3]) -> f64 {
    StreamKey::new(5).purpose("mpi.init").with(g[0] as u64).with(g[1] as u64).with(g[2] as u64).stream().uniform()
}

/// Runs every variant of `size` with `stencil` on `comm`; returns how many ran.
fn suite<C: Comm, T: Cell, S: Stencil<T>>(
    comm: &C,
    name: &str,
    size: &[usize],
    stencil: &S,
    init: &(dyn Fn([usize; 3]) -> T + Sync),
) -> Result<usize, String> {
    let mut ran = 0;
    for b in [Boundary::Periodic, Boundary::Dirichlet(0.25), Boundary::Neumann] {
        let mut base = GridSpec::new(size.to_vec(), 7);
        base.boundary = vec![b];
        base.reduce_every = 3;
        // The reference: one rank of the threads backend, in this process.
        let reference: Digest =
            launch(1, |c| run(&c, &base, stencil, init, &mut |_| {}).map(|r| r.digest)).map_err(|e| e.to_string())?[0];
        for kind in [DecompKind::Auto, DecompKind::Slabs, DecompKind::Pencils, DecompKind::Blocks] {
            for overlap in [true, false] {
                for k in [1, 2, 4] {
                    for threads in [1, 2] {
                        let mut spec = base.clone();
                        spec.decomposition = kind.clone();
                        spec.overlap = overlap;
                        spec.deep_halo = k;
                        spec.threads_per_rank = threads;
                        if spec.decompose(comm.size(), stencil.radius()).is_err() {
                            continue;
                        }
                        let got = run(comm, &spec, stencil, init, &mut |_| {}).map_err(|e| e.to_string())?.digest;
                        if got != reference {
                            return Err(format!(
                                "{name} {b:?} {kind:?} overlap {overlap} deep halo {k} threads {threads}: digest {got} != one rank's {reference}"
                            ));
                        }
                        ran += 1;
                    }
                }
            }
        }
    }
    Ok(ran)
}

fn main() {
    // `cargo test` runs this program too; it checks ranks against each
    // other, so outside mpirun it says where it runs and stops.
    if !mpi::launched_by_mpirun() {
        println!("mpi_grid: not started by mpirun; scripts/test.sh runs it under mpirun -n 2 and 4");
        return;
    }
    let r = mpi::launch(|comm| {
        let mut ran = 0;
        ran += suite(&comm, "heat5 f64", &[48, 40], &Heat5 { alpha: 0.2 }, &noise)?;
        ran += suite(&comm, "heat5 f32", &[48, 40], &Heat5 { alpha: 0.2f32 }, &|g| noise(g) as f32)?;
        ran += suite(&comm, "heat9", &[48, 40], &Heat9 { alpha: 0.15 }, &noise)?;
        ran += suite(&comm, "heat7", &[16, 16, 24], &Heat7 { alpha: 0.12 }, &noise)?;
        ran += suite(&comm, "heat27 f32", &[16, 16, 24], &Heat27::new(0.1f32), &|g| noise(g) as f32)?;
        ran += suite(&comm, "life", &[48, 40], &Life, &|g| u8::from(noise(g) < 0.35))?;
        if comm.rank() == 0 {
            println!("ok: {ran} grid variants under MPI on {} ranks equal the one-rank digests", comm.size());
        }
        if ran < 100 {
            return Err(format!("only {ran} variants ran"));
        }
        Ok(())
    });
    if let Err(e) = r {
        eprintln!("mpi_grid: {e}");
        std::process::exit(1);
    }
}
