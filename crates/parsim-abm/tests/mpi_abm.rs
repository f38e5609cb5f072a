//! The epidemic determinism suite under MPI: an Erdős–Rényi population
//! (variants A and B) and a synthetic one with every intervention, over
//! multilevel, hash and label-propagation partitions and 2 threads per rank,
//! each compared with a 1-rank run on the threads backend in this process.
//!
//! ```text
//! mpirun -n 2 $(scripts/mpi-test-bin.sh parsim-abm mpi_abm)
//! mpirun -n 4 $(scripts/mpi-test-bin.sh parsim-abm mpi_abm)
//! ```

use parsim_abm::population::Synthetic;
use parsim_abm::{seir, Closure, Isolation, Population, SeirConfig, Vaccination, Variant};
use parsim_comm::{launch, mpi, Comm};
use parsim_graph::DistGraph;
use parsim_partition::{Config, Method, Partitioner};

fn digest<C: Comm>(comm: &C, pop: &Population, owner: &[u32], cfg: &SeirConfig) -> Result<String, String> {
    let g = DistGraph::build(comm.rank(), comm.size(), &pop.graph, owner).map_err(|e| e.to_string())?;
    Ok(seir::run(comm, &pop.layers, &g, cfg, None).map_err(|e| e.to_string())?.digest.to_string())
}

fn check<C: Comm>(comm: &C, name: &str, pop: &Population, cfg: &SeirConfig) -> Result<usize, String> {
    let n = pop.agents();
    let zero = vec![0u32; n];
    let want = launch(1, |c| digest(&c, pop, &zero, cfg)).map_err(|e| e.to_string())?.remove(0);
    let k = comm.size();
    let g = pop.graph.to_partition_graph();
    let ml = Method::Multilevel.partition(&g, &Config::new(k)).map_err(|e| e.to_string())?.0;
    let lp = Method::LabelPropagation.partition(&g, &Config::new(k)).map_err(|e| e.to_string())?.0;
    let hash: Vec<u32> = (0..n as u32).map(|a| a.wrapping_mul(2_654_435_761) % k as u32).collect();
    let mut ran = 0;
    for (how, owner, threads) in [("multilevel", &ml, 1), ("hash", &hash, 1), ("lp", &lp, 1), ("multilevel", &ml, 2)] {
        let c = SeirConfig { threads, ..cfg.clone() };
        let got = digest(comm, pop, owner, &c)?;
        if got != want {
            return Err(format!("{name}, {how}, {threads} threads/rank: digest {got} != 1-rank {want}"));
        }
        ran += 1;
    }
    Ok(ran)
}

fn main() {
    let r = mpi::launch(|comm| {
        let er = Population::erdos_renyi(20_000, 10.0, 3);
        let mut ran = check(&comm, "ER variant A", &er, &SeirConfig { seed: 11, days: 100, ..SeirConfig::default() })?;
        let b = Variant::Markov { sigma: 0.4, gamma: 0.25 };
        ran += check(
            &comm,
            "ER variant B",
            &er,
            &SeirConfig { seed: 12, days: 100, variant: b, ..SeirConfig::default() },
        )?;
        let syn =
            Synthetic { district_size: 2_000, ..Synthetic::default() }.build(20_000, 9).map_err(|e| e.to_string())?;
        let cfg = SeirConfig {
            seed: 4,
            days: 120,
            closures: vec![Closure { layer: 1, from: 20, to: 60 }],
            vaccination: Some(Vaccination { from: 10, to: 90, rate: 0.01 }),
            isolation: Some(Isolation { detect: 0.5, delay: 1, keep: 1 }),
            ..SeirConfig::default()
        };
        ran += check(&comm, "synthetic with interventions", &syn, &cfg)?;
        if comm.rank() == 0 {
            println!("ok: {ran} epidemic runs under MPI on {} ranks equal the 1-rank digests", comm.size());
        }
        Ok::<(), String>(())
    });
    if let Err(e) = r {
        eprintln!("mpi_abm: {e}");
        std::process::exit(1);
    }
}
