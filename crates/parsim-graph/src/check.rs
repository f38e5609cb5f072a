//! Self-checks: run PageRank, shortest paths and connected components on both
//! engines over the caller's partition and compare with the sequential code.
//! The test suite calls them on the threads backend and `tests/mpi_graph.rs`
//! under `mpirun`.

use parsim_comm::Comm;
use parsim_partition::EdgePartition;

use crate::algorithms::{self, Components, GasPageRank, PageRank, Sssp};
use crate::csr::Csr;
use crate::dist::DistGraph;
use crate::error::{GraphError, Result};
use crate::gas::{self, CutGraph};
use crate::pregel;

/// PageRank iterations used by the checks.
pub const PAGERANK_ITERATIONS: u64 = 20;

fn mismatch(what: &str, v: usize, got: impl std::fmt::Debug, want: impl std::fmt::Debug) -> GraphError {
    GraphError::BadArgument(format!("{what}: vertex {v} has {got:?}, the sequential reference {want:?}"))
}

/// Runs the three Pregel programs over the vertex partition `owner` and
/// compares them on rank 0 with the sequential references: PageRank bit for
/// bit, distances and labels exactly. Returns the supersteps of each.
pub fn pregel_matches_reference<C: Comm>(comm: &C, g: &Csr, owner: &[u32]) -> Result<[u64; 3]> {
    let d = DistGraph::build(comm.rank(), comm.size(), g, owner)?;
    let pr = PageRank { damping: 0.85, iterations: PAGERANK_ITERATIONS };
    let r1 = pregel::run(comm, &d, owner, &pr, 1000)?;
    let src = (g.n() / 3) as u32;
    let r2 = pregel::run(comm, &d, owner, &Sssp { source: src }, 100_000)?;
    let r3 = pregel::run(comm, &d, owner, &Components, 100_000)?;
    let steps = [r1.supersteps, r2.supersteps, r3.supersteps];
    let a = pregel::gather_values(comm, &d, &r1.values)?;
    let b = pregel::gather_values(comm, &d, &r2.values)?;
    let c = pregel::gather_values(comm, &d, &r3.values)?;
    if let (Some(a), Some(b), Some(c)) = (a, b, c) {
        let want = algorithms::pagerank_reference(g, 0.85, PAGERANK_ITERATIONS);
        for v in 0..g.n() {
            if a[v].to_bits() != want[v].to_bits() {
                return Err(mismatch("Pregel PageRank", v, a[v], want[v]));
            }
        }
        let want = algorithms::sssp_reference(g, src);
        if let Some(v) = (0..g.n()).find(|&v| b[v] != want[v]) {
            return Err(mismatch("Pregel SSSP", v, b[v], want[v]));
        }
        let want = algorithms::components_reference(g);
        if let Some(v) = (0..g.n()).find(|&v| c[v] != want[v]) {
            return Err(mismatch("Pregel components", v, c[v], want[v]));
        }
    }
    Ok(steps)
}

/// Runs the three GAS programs over the vertex cut `ep` of `g` and compares
/// them on rank 0 with the sequential references: distances and labels
/// exactly, PageRank to 1e-12 relative (partial sums are added in an order
/// that depends on the cut).
pub fn gas_matches_reference<C: Comm>(comm: &C, g: &Csr, ep: &EdgePartition) -> Result<()> {
    let weights: Option<Vec<f64>> = g.weight.as_ref().map(|_| {
        ep.edges
            .iter()
            .map(|&(u, v)| {
                let r = g.row(u as usize);
                let at = g.adj[r.clone()].binary_search(&v).expect("an edge of the graph");
                g.weight_at(r.start + at)
            })
            .collect()
    });
    let cg = CutGraph::build(comm.rank(), comm.size(), g.n(), ep, weights.as_deref())?;
    let pr = GasPageRank { damping: 0.85, n: g.n() };
    let r1 = gas::run(comm, &cg, &pr, PAGERANK_ITERATIONS)?;
    let src = (g.n() / 3) as u32;
    let r2 = gas::run(comm, &cg, &Sssp { source: src }, 100_000)?;
    let r3 = gas::run(comm, &cg, &Components, 100_000)?;
    let a = cg.gather_values(comm, &r1.values)?;
    let b = cg.gather_values(comm, &r2.values)?;
    let c = cg.gather_values(comm, &r3.values)?;
    if let (Some(a), Some(b), Some(c)) = (a, b, c) {
        let want = algorithms::pagerank_reference(g, 0.85, PAGERANK_ITERATIONS);
        if let Some(v) = (0..g.n()).find(|&v| (a[v] - want[v]).abs() > 1e-12 * want[v]) {
            return Err(mismatch("GAS PageRank", v, a[v], want[v]));
        }
        let want = algorithms::sssp_reference(g, src);
        if let Some(v) = (0..g.n()).find(|&v| b[v] != want[v]) {
            return Err(mismatch("GAS SSSP", v, b[v], want[v]));
        }
        let want = algorithms::components_reference(g);
        if let Some(v) = (0..g.n()).find(|&v| c[v] != want[v]) {
            return Err(mismatch("GAS components", v, c[v], want[v]));
        }
    }
    Ok(())
}
