//! Pregel runs killed at a superstep and restarted from their checkpoints,
//! on other rank counts and partitions, end with the failure-free values.

use parsim_ckpt::{Checkpointer, Identity, Injection, Interval, Options};
use parsim_comm::Comm;
use parsim_graph::algorithms::{Components, PageRank};
use parsim_graph::{pregel, Csr, DistGraph, GraphError, VertexProgram};

fn tmp(name: &str) -> std::path::PathBuf {
    let d = std::env::temp_dir().join(format!("parsim-pregel-ckpt-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    d
}

/// A ring of 400 vertices with chords: several supersteps for components.
fn graph() -> Csr {
    let n = 400u32;
    let mut e: Vec<(u32, u32)> = (0..n - 1).map(|v| (v, v + 1)).collect();
    e.extend((0..n).step_by(7).map(|v| (v, (v * 13 + 5) % n)));
    Csr::from_pairs(n as usize, e, None).0
}

fn run<P>(p: &P, ranks: usize, opts: Option<Options>) -> Result<Vec<P::Value>, parsim_comm::CommError>
where
    P: VertexProgram,
    P::Value: serde::Serialize + serde::de::DeserializeOwned + bytemuck::Pod,
{
    let g = graph();
    let out = parsim_comm::launch(ranks, |comm| {
        // Hash-like owners, different for every rank count.
        let owner: Vec<u32> = (0..g.n() as u32).map(|v| (v.wrapping_mul(2_654_435_761) >> 7) % ranks as u32).collect();
        let d = DistGraph::build(comm.rank(), ranks, &g, &owner)?;
        let r = match &opts {
            None => pregel::run(&comm, &d, &owner, p, 200)?,
            Some(o) => {
                let id = Identity::new("pregel", "superstep", "t", 0);
                let mut ck =
                    Checkpointer::new(&comm, o.clone(), id).map_err(|e| GraphError::Checkpoint(e.to_string()))?;
                pregel::run_resilient(&comm, &d, &owner, p, 200, &mut ck)?
            }
        };
        pregel::gather_values(&comm, &d, &r.values)
    })?;
    Ok(out.into_iter().next().flatten().expect("rank 0 gathers"))
}

fn kill_and_restart<P>(name: &str, p: &P, cases: &[(usize, usize, u64)])
where
    P: VertexProgram,
    P::Value: serde::Serialize + serde::de::DeserializeOwned + bytemuck::Pod + PartialEq + std::fmt::Debug,
{
    let want = run(p, 1, None).unwrap();
    for &(before, after, kill) in cases {
        let dir = tmp(name);
        let mut o = Options::new(&dir, Some(Interval::Every(3)));
        // Supersteps take microseconds here: a background write would often
        // still be pending when the rank dies (and die with it).
        o.asynchronous = false;
        o.inject = vec![Injection::parse(&format!("kill:rank=0,superstep={kill}")).unwrap()];
        let e = run(p, before, Some(o.clone())).unwrap_err().to_string();
        assert!(e.contains("injected kill at superstep"), "{e}");
        o.restart = Some(dir.clone());
        o.attempt = 1;
        assert_eq!(run(p, after, Some(o)).unwrap(), want, "{name}: killed at {kill} on {before}, restarted on {after}");
        std::fs::remove_dir_all(&dir).unwrap();
    }
}

#[test]
fn components_and_pagerank_survive_kills_on_other_rank_counts() {
    kill_and_restart("cc", &Components, &[(4, 2, 8), (2, 3, 5), (1, 4, 7)]);
    kill_and_restart("pr", &PageRank { damping: 0.85, iterations: 20 }, &[(3, 2, 11), (2, 4, 17)]);
}

/// GAS on a vertex cut: killed at a superstep, restarted on another rank
/// count (so another cut, other masters and mirrors); the values equal a
/// failure-free run's on the restart's rank count.
fn gas_run<P: parsim_graph::GasProgram>(
    p: &P,
    ranks: usize,
    opts: Option<Options>,
) -> Result<Vec<P::Value>, parsim_comm::CommError> {
    let g = graph();
    let out = parsim_comm::launch(ranks, |comm| {
        // A hash edge partition, different for every rank count.
        let mut edges = Vec::new();
        for u in 0..g.n() {
            edges.extend(g.adj[g.row(u)].iter().filter(|&&v| v as usize > u).map(|&v| (u as u32, v)));
        }
        let parts = edges.iter().map(|&(u, v)| (u * 7 + v * 13) % ranks as u32).collect();
        let ep = parsim_partition::EdgePartition { edges, parts, replication_factor: 0.0, edge_balance: 0.0 };
        let cg = parsim_graph::CutGraph::build(comm.rank(), ranks, g.n(), &ep, None)?;
        let r = match &opts {
            None => parsim_graph::gas::run(&comm, &cg, p, 200)?,
            Some(o) => {
                let id = Identity::new("gas", "superstep", "t", 0);
                let mut ck =
                    Checkpointer::new(&comm, o.clone(), id).map_err(|e| GraphError::Checkpoint(e.to_string()))?;
                parsim_graph::gas::run_resilient(&comm, &cg, p, 200, &mut ck)?
            }
        };
        cg.gather_values(&comm, &r.values)
    })?;
    Ok(out.into_iter().next().flatten().expect("rank 0 gathers"))
}

#[test]
fn gas_survives_kills_on_other_rank_counts() {
    use parsim_graph::algorithms::{GasPageRank, Sssp};
    fn check<P: parsim_graph::GasProgram>(name: &str, p: &P, cases: &[(usize, usize, u64)])
    where
        P::Value: PartialEq + std::fmt::Debug,
    {
        for &(before, after, kill) in cases {
            let want = gas_run(p, after, None).unwrap();
            let dir = tmp(name);
            let mut o = Options::new(&dir, Some(Interval::Every(3)));
            o.asynchronous = false;
            o.inject = vec![Injection::parse(&format!("kill:rank={},superstep={kill}", before - 1)).unwrap()];
            let e = gas_run(p, before, Some(o.clone())).unwrap_err().to_string();
            assert!(e.contains("injected kill at superstep"), "{e}");
            o.restart = Some(dir.clone());
            o.attempt = 1;
            let got = gas_run(p, after, Some(o)).unwrap();
            assert_eq!(got, want, "{name}: killed at {kill} on {before}, restarted on {after}");
            std::fs::remove_dir_all(&dir).unwrap();
        }
    }
    check("gas-cc", &Components, &[(4, 2, 8), (2, 3, 5)]);
    check("gas-sssp", &Sssp { source: 3 }, &[(3, 1, 7)]);
    // Summed partials follow the cut, so PageRank's last bits do too: it is
    // compared with a failure-free run on the restart's rank count.
    check("gas-pr", &GasPageRank { damping: 0.85, n: 400 }, &[(2, 4, 13), (3, 3, 10)]);
}
