//! The epidemic determinism suite under MPI: an Erdős–Rényi population
//! (variants A and B) and a synthetic one with every intervention, over
//! multilevel, hash and label-propagation partitions and 2 threads per rank,
//! each compared with a 1-rank run on the threads backend in this process;
//! and populations built in shares (each process generates or reads only its
//! own block: synthetic, ER, a text edge list, u32 pairs, METIS), then
//! repartitioned by hash, label propagation and the parallel multilevel
//! partitioner (whose parts must equal the threads backend's), against the
//! same 1-rank digests.
//!
//! ```text
//! mpirun -n 2 $(scripts/mpi-test-bin.sh parsim-abm mpi_abm)
//! mpirun -n 4 $(scripts/mpi-test-bin.sh parsim-abm mpi_abm)
//! ```

use parsim_abm::population::{LocalPopulation, Synthetic};
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

/// Builds `pop` in shares (`make`), runs it on the blocks and after a hash
/// repartition, and compares both with the 1-rank digest of the whole `pop`.
fn check_local<C: Comm>(
    comm: &C,
    name: &str,
    pop: &Population,
    cfg: &SeirConfig,
    make: impl Fn(&C) -> Result<LocalPopulation, parsim_abm::AbmError>,
) -> Result<usize, String> {
    let zero = vec![0u32; pop.agents()];
    let want = launch(1, |c| digest(&c, pop, &zero, cfg)).map_err(|e| e.to_string())?.remove(0);
    let local = make(comm).map_err(|e| format!("{name}: {e}"))?;
    let got = seir::run(comm, &local.layers, &local.graph, cfg, None).map_err(|e| e.to_string())?.digest.to_string();
    let k = comm.size() as u32;
    let g = &local.graph;
    let to: Vec<u32> = (0..g.owned()).map(|i| g.global(i).wrapping_mul(2_654_435_761) % k).collect();
    let moved = local.repartition(comm, &to).map_err(|e| e.to_string())?;
    let again = seir::run(comm, &moved.layers, &moved.graph, cfg, None).map_err(|e| e.to_string())?.digest.to_string();
    // Distributed label propagation (from id blocks) on the hashed layout, and the rows moved again.
    let lp = moved.graph.label_propagation(comm, comm.size(), 0.03, 10).map_err(|e| e.to_string())?;
    let placed = moved.clone().repartition(comm, &lp.part).map_err(|e| e.to_string())?;
    let third =
        seir::run(comm, &placed.layers, &placed.graph, cfg, None).map_err(|e| e.to_string())?.digest.to_string();
    // The parallel multilevel partitioner on the hashed layout: the same
    // parts as on the threads backend at as many ranks, then the rows moved.
    let p = comm.size();
    let dml = moved.graph.multilevel(comm, p, 0.03, 5).map_err(|e| e.to_string())?;
    let pairs =
        |d: &DistGraph, part: &[u32]| -> Vec<u32> { (0..d.owned()).flat_map(|i| [d.global(i), part[i]]).collect() };
    let mut here = comm.all_gather(pairs(&moved.graph, &dml.part)).map_err(|e| e.to_string())?.concat();
    let hashed: Vec<u32> = (0..pop.agents() as u32).map(|v| v.wrapping_mul(2_654_435_761) % p as u32).collect();
    let mut threads = launch(p, |c| {
        let d = DistGraph::build(c.rank(), p, &pop.graph, &hashed)?;
        let r = d.multilevel(&c, p, 0.03, 5)?;
        Ok::<_, parsim_graph::GraphError>(pairs(&d, &r.part))
    })
    .map_err(|e| e.to_string())?
    .concat();
    let by_vertex = |v: &mut Vec<u32>| {
        let mut x: Vec<[u32; 2]> = v.chunks_exact(2).map(|c| [c[0], c[1]]).collect();
        x.sort_unstable();
        x
    };
    if by_vertex(&mut here) != by_vertex(&mut threads) {
        return Err(format!("{name}: the distributed multilevel parts differ from the threads backend's at {p} ranks"));
    }
    let placed = moved.repartition(comm, &dml.part).map_err(|e| e.to_string())?;
    let fourth =
        seir::run(comm, &placed.layers, &placed.graph, cfg, None).map_err(|e| e.to_string())?.digest.to_string();
    for (how, d) in [("blocks", got), ("hash-repartitioned", again), ("label-propagated", third), ("dml", fourth)] {
        if d != want {
            return Err(format!("{name} built in shares, {how}: digest {d} != 1-rank {want}"));
        }
    }
    Ok(4)
}

/// The population written as a text edge list, u32 pairs and METIS (by rank 0).
fn write_files<C: Comm>(comm: &C, pop: &Population) -> Result<Vec<std::path::PathBuf>, String> {
    let dir = std::env::temp_dir()
        .join(format!("parsim-mpi-abm-{}", std::env::var("OMPI_COMM_WORLD_SIZE").unwrap_or_default()));
    let names = ["g.txt", "g.u32", "g.graph"].map(|n| dir.join(n));
    if comm.rank() == 0 {
        let g = &pop.graph;
        let (mut text, mut bin) = (String::new(), Vec::new());
        let mut metis = format!("{} {}\n", g.n(), g.edges());
        for v in 0..g.n() {
            let row: Vec<String> = g.neighbours(v).iter().map(|&u| (u + 1).to_string()).collect();
            metis.push_str(&row.join(" "));
            metis.push('\n');
            for &u in g.neighbours(v).iter().filter(|&&u| u > v as u32) {
                text.push_str(&format!("{v} {u}\n"));
                bin.extend_from_slice(&(v as u32).to_le_bytes());
                bin.extend_from_slice(&u.to_le_bytes());
            }
        }
        std::fs::create_dir_all(&dir).map_err(|e| e.to_string())?;
        for (f, b) in names.iter().zip([text.into_bytes(), bin, metis.into_bytes()]) {
            std::fs::write(f, b).map_err(|e| e.to_string())?;
        }
    }
    comm.barrier().map_err(|e| e.to_string())?;
    Ok(names.to_vec())
}

fn main() {
    // `cargo test` runs this program too; it checks ranks against each
    // other, so outside mpirun it says where it runs and stops.
    if !mpi::launched_by_mpirun() {
        println!("mpi_abm: not started by mpirun; scripts/test.sh runs it under mpirun -n 2 and 4");
        return;
    }
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
        let spec = Synthetic { district_size: 2_000, ..Synthetic::default() };
        ran += check_local(&comm, "synthetic", &syn, &cfg, |c| LocalPopulation::synthetic(c, &spec, 20_000, 9))?;
        let a = SeirConfig { seed: 11, days: 100, ..SeirConfig::default() };
        ran += check_local(&comm, "ER", &er, &a, |c| LocalPopulation::erdos_renyi(c, 20_000, 10.0, 3))?;
        for f in write_files(&comm, &er)? {
            let name = f.display().to_string();
            ran += check_local(&comm, &name, &er, &a, |c| LocalPopulation::read(c, &f, Some(20_000), false))?;
        }
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
