//! The DES determinism suite under MPI: PHOLD (std shape, ties, remote 0.1,
//! 0.25 and 1.0) and the queueing network, on every engine (and Time Warp's
//! variants), run on the MPI communicator and compared with the sequential
//! engine on one rank of the threads backend in this process.
//!
//! ```text
//! mpirun -n 2 $(scripts/mpi-test-bin.sh parsim-des mpi_des)
//! mpirun -n 4 $(scripts/mpi-test-bin.sh parsim-des mpi_des)
//! ```

use parsim_comm::{launch, mpi, Comm};
use parsim_des::models::{Phold, Queues};
use parsim_des::{Cancellation, DesConfig, Engine, GvtAlgorithm, Model};

fn check<C: Comm, M: Model>(comm: &C, name: &str, model: &M) -> Result<usize, String> {
    let seq = DesConfig::new(Engine::Sequential).seed(4);
    let want = launch(1, |c| parsim_des::run(&c, model, &seq)).map_err(|e| e.to_string())?[0].digest;
    let tw = DesConfig::new(Engine::Optimistic).seed(4);
    let configs = [
        seq.clone(),
        DesConfig::new(Engine::Conservative).seed(4),
        DesConfig::new(Engine::Window).seed(4),
        tw.clone(),
        tw.clone().window(f64::INFINITY).checkpoint_every(4).gvt_interval(256),
        tw.clone().gvt(GvtAlgorithm::Synchronous),
        tw.clone().memory_limit(300).window(f64::INFINITY),
        tw.clone().cancellation(Cancellation::Lazy).window(f64::INFINITY),
    ];
    for cfg in &configs {
        let r = parsim_des::run(comm, model, cfg).map_err(|e| format!("{name} {}: {e}", cfg.engine.name()))?;
        if r.digest != want {
            return Err(format!("{name} {:?}: digest {} != sequential {want}", cfg, r.digest));
        }
    }
    Ok(configs.len())
}

fn main() {
    // `cargo test` runs this program too; it checks ranks against each
    // other, so outside mpirun it says where it runs and stops.
    if !mpi::launched_by_mpirun() {
        println!("mpi_des: not started by mpirun; scripts/test.sh runs it under mpirun -n 1, 2 and 4");
        return;
    }
    let r = mpi::launch(|comm| {
        let phold = |remote| Phold { lps: 96, start_events: 4, mean: 1.0, lookahead: 0.1, remote, end: 12.0 };
        let mut ran = 0;
        for remote in [0.1, 0.25, 1.0] {
            ran += check(&comm, &format!("phold remote {remote}"), &phold(remote))?;
        }
        let ties = Phold { lps: 64, start_events: 4, mean: 0.1, lookahead: 0.1, remote: 0.25, end: 3.0 };
        ran += check(&comm, "phold ties", &ties)?;
        let q = Queues { width: 6, height: 4, jobs_per_server: 2, service: 1.0, transit: 0.25, end: 60.0, warmup: 0.0 };
        ran += check(&comm, "queues", &q)?;
        if comm.rank() == 0 {
            println!("ok: {ran} DES runs under MPI on {} ranks equal the sequential digests", comm.size());
        }
        Ok::<(), String>(())
    });
    if let Err(e) = r {
        eprintln!("mpi_des: {e}");
        std::process::exit(1);
    }
}
