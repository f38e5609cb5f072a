//! Shared helpers: the spec's reference graph, runs on the threads backend.

use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use parsim_abm::{seir, Population, SeirConfig, SeirResult};
use parsim_comm::Comm;
use parsim_graph::DistGraph;

/// `../shared/data/contact/NAME`.
pub fn contact(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../../shared/data/contact").join(name)
}

/// The spec's ER reference graph (N = 10⁵, c = 10), read once.
pub fn reference_graph() -> &'static Population {
    static G: OnceLock<Population> = OnceLock::new();
    G.get_or_init(|| {
        Population::read(&contact("er_N100k_c10_s42.u32"), Some(100_000), false).expect("the reference graph")
    })
}

/// Runs `cfg` on `ranks` threads with the partition `owner`.
pub fn run(pop: &Population, owner: &[u32], ranks: usize, cfg: &SeirConfig) -> SeirResult {
    let mut r = parsim_comm::launch(ranks, |comm| {
        let g = DistGraph::build(comm.rank(), ranks, &pop.graph, owner)?;
        seir::run(&comm, &pop.layers, &g, cfg, None)
    })
    .unwrap_or_else(|e| panic!("{ranks} ranks: {e}"));
    let first = r.swap_remove(0);
    for other in &r {
        assert_eq!(other.digest, first.digest, "ranks disagree on the digest");
    }
    first
}

/// Agent a on rank a·R/N.
pub fn block(n: usize, ranks: usize) -> Vec<u32> {
    (0..n).map(|a| (a * ranks / n) as u32).collect()
}
