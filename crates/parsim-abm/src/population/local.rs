//! A rank's share of a population, built without any rank holding the whole
//! contact network: each rank generates (or reads) a share of the edges, the
//! ones owned elsewhere travel once to their owners, and each rank keeps the
//! rows of its own block of agents ([`DistGraph::from_generator`]).

use std::path::Path;

use parsim_comm::{Comm, ReduceOp};
use parsim_graph::{BuildStats, DistGraph};

use super::{er_pair, er_pairs, Layer, Population, Synthetic};
use crate::error::{AbmError, Result};

/// ER pairs per generation unit.
const ER_UNIT: u64 = 1 << 15;

/// This rank's share of a population: its agents' rows of the contact
/// network (a [`DistGraph`], block partitioned by agent id until
/// [`repartition`](Self::repartition)ed), and the population-wide facts.
///
/// ```
/// use parsim_abm::population::{LocalPopulation, Synthetic};
/// use parsim_abm::Population;
/// use parsim_comm::Comm;
/// let spec = Synthetic { district_size: 500, ..Synthetic::default() };
/// let whole = spec.build(3_000, 7)?;
/// let shares = parsim_comm::launch(2, |comm| {
///     let p = LocalPopulation::synthetic(&comm, &spec, 3_000, 7)?;
///     Ok::<_, parsim_abm::AbmError>((p.graph.owned(), p.edges))
/// })?;
/// assert_eq!(shares[0].0 + shares[1].0, 3_000);
/// assert_eq!(shares[0].1, whole.graph.edges() as u64);
/// # Ok::<(), parsim_abm::AbmError>(())
/// ```
#[derive(Clone, Debug)]
pub struct LocalPopulation {
    /// This rank's agents and their contacts.
    pub graph: DistGraph,
    /// The layers (one, `contact`, for a plain network).
    pub layers: Vec<Layer>,
    /// Self-loops and duplicate pairs dropped while building (all ranks).
    pub dropped: BuildStats,
    /// Undirected edges in the whole network.
    pub edges: u64,
}

impl LocalPopulation {
    /// The number of agents in the whole population.
    pub fn agents(&self) -> usize {
        self.graph.global_vertices()
    }

    fn new<C: Comm>(comm: &C, graph: DistGraph, layers: Vec<Layer>, dropped: BuildStats) -> Result<Self> {
        let edges = comm.all_reduce(&[graph.adjacency_len() as u64], ReduceOp::Sum)?[0] / 2;
        Ok(LocalPopulation { graph, layers, dropped, edges })
    }

    /// This rank's share of [`Population::erdos_renyi`]`(n, mean_degree,
    /// seed)`: rank r draws the pairs of its own range of pair ids. Collective.
    pub fn erdos_renyi<C: Comm>(comm: &C, n: usize, mean_degree: f64, seed: u64) -> Result<Self> {
        check_agents(n)?;
        let m = er_pairs(n, mean_degree);
        let (p, r) = (comm.size() as u64, comm.rank() as u64);
        let (lo, hi) = ((u128::from(m) * u128::from(r) / u128::from(p)) as u64, {
            (u128::from(m) * u128::from(r + 1) / u128::from(p)) as u64
        });
        let units = (hi - lo).div_ceil(ER_UNIT) as usize;
        let (graph, dropped) = DistGraph::from_generator(comm, n, units, false, false, &|k, sink| {
            let a = lo + k as u64 * ER_UNIT;
            for i in a..(a + ER_UNIT).min(hi) {
                let (u, v) = er_pair(n, seed, i);
                sink(u, v, 0);
            }
        })?;
        Self::new(comm, graph, vec![Layer::plain("contact")], dropped)
    }

    /// This rank's share of [`Synthetic::build`]`(n, seed)`: rank r
    /// generates its own range of districts. Collective.
    pub fn synthetic<C: Comm>(comm: &C, spec: &Synthetic, n: usize, seed: u64) -> Result<Self> {
        spec.check()?;
        check_agents(n)?;
        let d = spec.districts(n);
        let (p, r) = (comm.size(), comm.rank());
        let (lo, hi) = (d * r / p, d * (r + 1) / p);
        let (graph, dropped) = DistGraph::from_generator(comm, n, hi - lo, false, true, &|k, sink| {
            spec.emit_district(lo + k, n, seed, sink)
        })?;
        Self::new(comm, graph, spec.layers.to_vec(), dropped)
    }

    /// This rank's share of a contact-network file (the formats of
    /// [`Population::read`], with the same meaning of `agents` and `strict`):
    /// each rank reads its own byte range. Collective; a bad file gives every
    /// rank the same error, naming the file and line.
    pub fn read<C: Comm>(comm: &C, path: &Path, agents: Option<usize>, strict: bool) -> Result<Self> {
        let share = super::split::read(comm, path, agents, strict, true)?;
        let (graph, dropped) = DistGraph::from_generator(comm, share.n, share.units(), false, false, &|k, sink| {
            for &(u, v) in share.unit(k) {
                sink(u, v, 0);
            }
        })?;
        if let Some(m) = share.metis_edges {
            let edges = comm.all_reduce(&[graph.adjacency_len() as u64], ReduceOp::Sum)?[0] / 2;
            if edges != m || dropped.duplicates != m {
                return Err(AbmError::Parse {
                    path: path.display().to_string(),
                    line: 0,
                    msg: format!(
                        "the adjacency lists are not symmetric (or repeat a neighbour): {} entries make {edges} distinct edges, the header declares {m}",
                        2 * m
                    ),
                });
            }
            let dropped = BuildStats::default();
            return Self::new(comm, graph, vec![Layer::plain("contact")], dropped);
        }
        Self::new(comm, graph, vec![Layer::plain("contact")], dropped)
    }

    /// Checks a contact-network file as [`read`](Self::read) would, in one
    /// streaming pass that stores nothing (the adjacency symmetry of a METIS
    /// file is checked by `read`), and returns the number of agents.
    pub fn scan(path: &Path, agents: Option<usize>, strict: bool) -> Result<usize> {
        let mut got = parsim_comm::launch(1, |comm| {
            Ok::<_, String>(super::split::read(&comm, path, agents, strict, false).map(|s| s.n))
        })?;
        got.remove(0)
    }

    /// Rank `rank`'s share of a whole population partitioned by `owner`.
    pub fn of<C: Comm>(comm: &C, pop: &Population, owner: &[u32]) -> Result<Self> {
        let graph = DistGraph::build(comm.rank(), comm.size(), &pop.graph, owner)?;
        Ok(LocalPopulation { graph, layers: pop.layers.clone(), dropped: pop.dropped, edges: pop.graph.edges() as u64 })
    }

    /// Moves every agent's row to `owner[i]` (one entry per owned agent, in
    /// local id order). Collective.
    pub fn repartition<C: Comm>(self, comm: &C, owner: &[u32]) -> Result<Self> {
        let graph = self.graph.redistribute(comm, owner)?;
        Ok(LocalPopulation { graph, ..self })
    }

    /// Agents of each degree in the whole population: `counts[k]` have k
    /// contacts. Collective.
    pub fn degree_counts<C: Comm>(&self, comm: &C) -> Result<Vec<u64>> {
        let g = &self.graph;
        let max = (0..g.owned()).map(|i| g.neighbours(i).len() as u64).max().unwrap_or(0);
        let max = comm.all_reduce(&[max], ReduceOp::Max)?[0] as usize;
        let mut c = vec![0u64; max + 1];
        for i in 0..g.owned() {
            c[g.neighbours(i).len()] += 1;
        }
        Ok(comm.all_reduce(&c, ReduceOp::Sum)?)
    }

    /// Bytes this rank holds.
    pub fn bytes(&self) -> usize {
        self.graph.bytes()
    }
}

fn check_agents(n: usize) -> Result<()> {
    if n == 0 || n >= u32::MAX as usize {
        return Err(AbmError::config("agents", format!("expected 1..2^32-1 agents, found {n}")));
    }
    Ok(())
}
