//! Building, placing and running a rank's share of the epidemic: the
//! memory check, the construction of this rank's block, the partitioners
//! (blocks, hash, distributed label propagation, or a sequential method on
//! rank 0), and the simulation with its timings.

use std::time::Instant;

use anyhow::Result;
use parsim::Progress;
use parsim_abm::population::LocalPopulation;
use parsim_abm::{seir, Layer, SeirConfig, SeirResult};
use parsim_comm::{Comm, ReduceOp};
use parsim_core::Phase;
use parsim_graph::{BuildStats, Csr};
use parsim_partition::{Config, Method, Partitioner};

use super::{AbmSetup, Source};

/// Bytes per agent a rank holds while it builds and runs, as a function of
/// the mean degree: 4 bytes per contact and 1 per layer label, 12 per agent
/// for row offsets, states and schedules, and a tenth more (the measured
/// peak RSS at 10⁸ agents and a mean degree of 11.6 is 71 bytes per agent;
/// this gives 77).
fn bytes_per_agent(mean_degree: f64, layered: bool) -> f64 {
    (mean_degree * if layered { 5.0 } else { 4.0 } + 12.0) * 1.1
}

use parsim_core::mem::available as mem_available;
pub use parsim_core::mem::{mpi_local_ranks, mpi_world_ranks};

impl AbmSetup {
    /// The mean degree expected of the population (exact for ER, from the
    /// parameters for a synthetic one, from the file size for a file).
    fn expected_degree(&self) -> f64 {
        match &self.source {
            Source::ErdosRenyi(c) => *c,
            // Households (~1.6), classes and teams (8.0 at the defaults 20 and 10: 11.6 in all, as measured), community.
            Source::Synthetic(s) => {
                1.6 + 0.57 * (s.class_size + s.team_size).saturating_sub(2) as f64 / 2.0 + s.community_degree
            }
            Source::File(p) => {
                let bytes = std::fs::metadata(p).map_or(0, |m| m.len()) as f64;
                // u32 pairs are 8 bytes per edge; text and METIS take more, so for them this errs high.
                let edges = bytes / 8.0;
                2.0 * edges / self.agents.max(1) as f64
            }
        }
    }

    /// Why the population's shares would not fit in the memory this machine
    /// has available, when they would not: `world` ranks in all, `local` of
    /// them on this machine (they share its memory).
    pub fn memory_shortfall(&self, world: usize, local: usize) -> Option<String> {
        let per = bytes_per_agent(self.expected_degree(), matches!(self.source, Source::Synthetic(_)));
        let need = per * self.agents as f64 / world.max(1) as f64 * local as f64;
        let have = mem_available().unwrap_or(u64::MAX);
        (need > have as f64).then(|| {
            format!(
                "{} agents need about {:.1} GB on this machine ({per:.0} bytes per agent at a mean degree of {:.1}, {local} of {world} rank(s) here), but {:.1} GB are available; run on more machines (each rank holds only its share) or with fewer agents",
                self.agents,
                need / 1e9,
                self.expected_degree(),
                have as f64 / 1e9
            )
        })
    }

    /// Refuses, on every rank alike, a population whose share would not fit
    /// in the memory this machine has available (the ranks of one machine
    /// share it: all of them on the threads backend, `OMPI_COMM_WORLD_LOCAL_SIZE` under MPI).
    /// The scenario reader refuses it first, as bad input; this catches the
    /// callers that bypass it.
    pub fn check_memory<C: Comm>(&self, comm: &C) -> Result<()> {
        let local = if comm.backend() == "threads" { comm.size() } else { mpi_local_ranks() };
        let why = self.memory_shortfall(comm.size(), local);
        if comm.all_reduce(&[u64::from(why.is_some())], ReduceOp::Max)?[0] == 1 {
            anyhow::bail!(
                "abm.agents: {}",
                why.unwrap_or_else(|| "another machine has not the memory for its ranks' shares".into())
            );
        }
        Ok(())
    }
}

/// The owner of every vertex of `g` for `ranks` ranks, by a sequential
/// partitioner; `g` (gathered only for this) moves into the partitioner's
/// graph instead of being copied.
fn partition_owned(g: Csr, how: &str, ranks: usize, seed: u64) -> Result<Vec<u32>> {
    let n = g.n();
    if ranks == 1 {
        return Ok(vec![0; n]);
    }
    let method = Method::parse(how).ok_or_else(|| anyhow::anyhow!("unknown partitioner {how}"))?;
    let cfg = Config { seed, ..Config::new(ranks) };
    Ok(method.partition(&g.into_partition_graph(), &cfg)?.0)
}

/// What every rank knows about the whole population.
#[derive(Clone, Debug)]
pub struct Facts {
    /// Agents.
    pub agents: usize,
    /// Undirected contacts.
    pub edges: u64,
    /// The contact layers.
    pub layers: Vec<Layer>,
    /// Self-loops and repeated pairs dropped while building.
    pub dropped: BuildStats,
    /// Agents per degree.
    pub degree_counts: Vec<u64>,
}

/// One simulation and its timings.
pub struct Simulated {
    /// The result (equal on every rank).
    pub result: SeirResult,
    /// The population.
    pub population: Facts,
    /// Seconds: population, partition, local graph, simulation.
    pub times: [f64; 4],
    /// Cut edges (each once), all ranks.
    pub cut_edges: u64,
    /// Bytes all ranks sent during the simulation.
    pub bytes_sent: u64,
    /// Bytes of the local graphs of all ranks.
    pub local_graph_bytes: u64,
    /// Bytes of the largest rank's graph and epidemic state.
    pub max_rank_bytes: u64,
    /// What balancing did and the mean efficiency (mean / max compute per day), when balanced.
    pub lb: Option<(parsim_lb::Stats, f64)>,
}

/// Builds this rank's share of the population, partitions it, and runs the epidemic.
pub fn simulate<C: Comm>(comm: &C, setup: &AbmSetup, seed: u64, show_progress: bool) -> Result<Simulated> {
    simulate_resilient(comm, setup, seed, show_progress, None, None)
}

/// Moves the agents to the partition `how` asks for: `block` keeps the
/// construction's blocks, `hash` scatters by id, `dlp` improves the blocks
/// by distributed label propagation and `dml` partitions with the parallel
/// multilevel scheme (neither needs a rank to hold the graph), and a
/// sequential method (multilevel, lp, ldg, fennel, spectral) partitions the
/// graph gathered on rank 0 — the only rank that ever holds it whole.
fn place<C: Comm>(comm: &C, local: LocalPopulation, how: &str, seed: u64) -> Result<LocalPopulation> {
    let p = comm.size();
    if p == 1 || how == "block" {
        return Ok(local);
    }
    let owner: Vec<u32> = if how == "dlp" {
        local.graph.label_propagation(comm, p, 0.03, 20)?.part
    } else if how == "dml" {
        local.graph.multilevel(comm, p, 0.03, seed)?.part
    } else if how == "hash" {
        let g = &local.graph;
        (0..g.owned())
            .map(|i| ((u64::from(g.global(i)).wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 32) % p as u64) as u32)
            .collect()
    } else {
        let whole = local.graph.gather(comm, 0)?;
        let all = match whole {
            Some(g) => partition_owned(g, how, p, seed),
            None => Ok(Vec::new()),
        };
        // Every rank learns whether rank 0's partitioner failed.
        let failed = comm.broadcast(0, vec![u8::from(all.is_err())])?[0] == 1;
        let all = match all {
            Err(e) => return Err(e),
            Ok(_) if failed => anyhow::bail!("rank 0 could not partition the population"),
            Ok(a) => a,
        };
        local.graph.scatter_owned(comm, 0, &all)?
    };
    Ok(local.repartition(comm, &owner)?)
}

/// [`simulate`] with checkpoints at day boundaries (and restart, faults).
pub fn simulate_resilient<C: Comm>(
    comm: &C,
    setup: &AbmSetup,
    seed: u64,
    show_progress: bool,
    ck: Option<&mut parsim::ckpt::Checkpointer<'_, C>>,
    slow: Option<(usize, f64)>,
) -> Result<Simulated> {
    setup.check_memory(comm)?;
    comm.barrier()?;
    let t0 = Instant::now();
    // Every rank builds only its own block of agents.
    let local = {
        let _c = comm.clock().enter(Phase::Compute);
        setup.build_local(comm, seed)?
    };
    comm.barrier()?;
    let t_pop = t0.elapsed().as_secs_f64();
    let t1 = Instant::now();
    // Balanced: chunks of consecutive agents on the balancer's initial map.
    let mut balancer = match setup.lb.as_ref() {
        Some((lb, chunk)) => {
            let chunks = seir::Balance::chunks_local(comm, &local.graph, *chunk)?;
            Some(parsim_lb::Balancer::new(lb.clone(), chunks, comm.size(), seed))
        }
        None => None,
    };
    let mut bal = balancer.as_mut().map(|b| {
        let mut bal = seir::Balance::new(b, setup.lb.as_ref().map_or(1, |l| l.1));
        bal.slow = slow;
        bal
    });
    let local = match &bal {
        Some(b) => {
            let g = &local.graph;
            let owner: Vec<u32> = (0..g.owned()).map(|i| b.owner[(g.global(i) / b.chunk) as usize]).collect();
            local.repartition(comm, &owner)?
        }
        None => place(comm, local, &setup.partitioner, seed)?,
    };
    let t_part = t1.elapsed().as_secs_f64();
    let t2 = Instant::now();
    let facts = Facts {
        agents: local.agents(),
        edges: local.edges,
        layers: local.layers.clone(),
        dropped: local.dropped,
        degree_counts: local.degree_counts(comm)?,
    };
    let g = &local.graph;
    let layout = {
        let _c = comm.clock().enter(Phase::Compute);
        seir::Layout::new(g)
    };
    let cut = comm.all_reduce(&[g.cut_edges() as u64], ReduceOp::Sum)?[0] / 2;
    let t_local = t2.elapsed().as_secs_f64();
    let cfg = SeirConfig { seed, ..setup.cfg.clone() };
    let bytes0 = comm.clock().report().traffic().bytes_sent;
    comm.barrier()?;
    comm.clock().end_setup();
    let t3 = Instant::now();
    let mut bar = Progress::new("days", u64::from(cfg.days), !show_progress || comm.rank() != 0)
        .every(std::time::Duration::from_millis(500));
    if let Some(r) = ck.as_ref().and_then(|c| c.restarting()) {
        bar.set(r.manifest.boundary);
    }
    let mut report = |d: u32, _days: u32, _c: &parsim_abm::DayCounts| bar.set(u64::from(d));
    let result = match bal.as_mut() {
        Some(b) => seir::run_balanced(comm, &local.layers, g, &cfg, Some(&mut report), ck, b),
        None => seir::run_resilient(comm, &local.layers, &layout, &cfg, Some(&mut report), ck),
    };
    bar.finish();
    let result = result?;
    let efficiency = bal.map(|b| b.efficiency);
    let lb = balancer.zip(efficiency).map(|(b, e)| (b.stats().clone(), e));
    comm.barrier()?;
    let t_sim = t3.elapsed().as_secs_f64();
    // The graph, the layout and the per-agent state (a byte of state, two of infection day).
    let held = (g.bytes() + layout.bytes() + 3 * g.owned()) as u64;
    let mine = [comm.clock().report().traffic().bytes_sent - bytes0, (g.bytes() + layout.bytes()) as u64];
    let sums = comm.all_reduce(&mine, ReduceOp::Sum)?;
    let max_rank_bytes = comm.all_reduce(&[held], ReduceOp::Max)?[0];
    Ok(Simulated {
        result,
        population: facts,
        times: [t_pop, t_part, t_local, t_sim],
        cut_edges: cut,
        bytes_sent: sums[0],
        local_graph_bytes: sums[1],
        max_rank_bytes,
        lb,
    })
}
