//! The graph-engine suite under MPI: Pregel PageRank / SSSP / components over
//! multilevel, hash and label-propagation vertex partitions, and GAS over
//! hash and HDRF vertex cuts, compared with the sequential code on rank 0.
//!
//! ```text
//! mpirun -n 2 $(scripts/mpi-test-bin.sh parsim-graph mpi_graph)
//! mpirun -n 4 $(scripts/mpi-test-bin.sh parsim-graph mpi_graph)
//! ```

use std::path::Path;

use parsim_comm::{mpi, Comm};
use parsim_graph::{check, Csr};
use parsim_partition::{io, Config, Method, Partitioner, VertexCut};

fn main() {
    // `cargo test` runs this program too; it checks ranks against each
    // other, so outside mpirun it says where it runs and stops.
    if !mpi::launched_by_mpirun() {
        println!("mpi_graph: not started by mpirun; scripts/test.sh runs it under mpirun -n 2 and 4");
        return;
    }
    let r = mpi::launch(|comm| {
        let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../../shared/data/graphs");
        let k = comm.size();
        let mut ran = 0;
        for name in ["4elt.graph", "facebook_combined.graph", "example_weighted.graph"] {
            let g = io::read_graph(&dir.join(name)).map_err(|e| e.to_string())?;
            let csr = Csr::from_graph(&g);
            let hash: Vec<u32> = (0..g.n() as u32).map(|v| v.wrapping_mul(2_654_435_761) % k as u32).collect();
            let ml = Method::Multilevel.partition(&g, &Config::new(k)).map_err(|e| e.to_string())?.0;
            let lp = Method::LabelPropagation.partition(&g, &Config::new(k)).map_err(|e| e.to_string())?.0;
            for (how, owner) in [("multilevel", ml), ("hash", hash), ("lp", lp)] {
                check::pregel_matches_reference(&comm, &csr, &owner).map_err(|e| format!("{name} {how}: {e}"))?;
                ran += 1;
            }
            for m in [VertexCut::Hash, VertexCut::Hdrf] {
                let ep = parsim_partition::vertex_cut(&g, k, m, 7, 0.1);
                check::gas_matches_reference(&comm, &csr, &ep).map_err(|e| format!("{name} GAS {m:?}: {e}"))?;
                ran += 1;
            }
        }
        if comm.rank() == 0 {
            println!("ok: {ran} graph-engine runs under MPI on {k} ranks equal the sequential references");
        }
        Ok::<(), String>(())
    });
    if let Err(e) = r {
        eprintln!("mpi_graph: {e}");
        std::process::exit(1);
    }
}
