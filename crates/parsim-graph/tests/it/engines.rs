//! Pregel and GAS PageRank / SSSP / components equal to the sequential code,
//! on real graphs, several rank counts and partitions.

use std::path::Path;

use parsim_graph::{check, Csr};
use parsim_partition::{io, Config, Method, Partitioner, VertexCut};

fn graph(name: &str) -> (Csr, parsim_partition::Graph) {
    let p = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../../shared/data/graphs").join(name);
    let g = io::read_graph(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display()));
    (Csr::from_graph(&g), g)
}

fn owners(g: &parsim_partition::Graph, ranks: usize, how: &str) -> Vec<u32> {
    match how {
        "hash" => {
            (0..g.n()).map(|v| ((v as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 32) as u32 % ranks as u32).collect()
        }
        "multilevel" if ranks > 1 => Method::Multilevel.partition(g, &Config::new(ranks)).unwrap().0,
        "lp" if ranks > 1 => Method::LabelPropagation.partition(g, &Config::new(ranks)).unwrap().0,
        _ => vec![0; g.n()],
    }
}

fn pregel_case(name: &str, ranks: &[usize], how: &str) {
    let (csr, g) = graph(name);
    let mut steps = None;
    for &r in ranks {
        let owner = owners(&g, r, how);
        let got = parsim_comm::launch(r, |comm| check::pregel_matches_reference(&comm, &csr, &owner))
            .unwrap_or_else(|e| panic!("{name} at {r} ranks ({how}): {e}"));
        // The number of supersteps is a property of the graph, not the partition.
        assert!(got.iter().all(|s| *s == got[0]));
        assert_eq!(*steps.get_or_insert(got[0]), got[0], "{name}: supersteps differ at {r} ranks");
    }
}

#[test]
fn pregel_on_a_mesh_with_three_partitioners() {
    for how in ["multilevel", "hash", "lp"] {
        pregel_case("4elt.graph", &[1, 2, 3, 4], how);
    }
}

#[test]
fn pregel_on_social_graphs_and_a_weighted_one() {
    pregel_case("facebook_combined.graph", &[1, 2, 8], "hash");
    pregel_case("email-Enron.graph", &[1, 3], "multilevel");
    pregel_case("example_weighted.graph", &[1, 2, 4], "multilevel");
}

fn gas_case(name: &str, ranks: &[usize], method: VertexCut) {
    let (csr, g) = graph(name);
    for &r in ranks {
        let ep = parsim_partition::vertex_cut(&g, r, method, 7, 0.1);
        parsim_comm::launch(r, |comm| check::gas_matches_reference(&comm, &csr, &ep))
            .unwrap_or_else(|e| panic!("{name} at {r} ranks ({method:?}): {e}"));
    }
}

#[test]
fn gas_on_power_law_and_mesh_graphs() {
    gas_case("facebook_combined.graph", &[1, 2, 4], VertexCut::Hdrf);
    gas_case("email-Enron.graph", &[3], VertexCut::Hash);
    gas_case("4elt.graph", &[2, 8], VertexCut::Greedy);
    gas_case("example_weighted.graph", &[1, 3], VertexCut::Hdrf);
}
