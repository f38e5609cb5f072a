//! PageRank written as your own Pregel vertex program, checked against a
//! plain power iteration.
//!
//! The graph is a small world: a ring lattice where each vertex links to its
//! `k` nearest neighbours on each side, every link rewired to a random vertex
//! with probability `rewire` (each draw keyed by the link, so the graph is
//! the same for any number of ranks). Vertices are cut into contiguous blocks,
//! one per rank; the engine exchanges the messages across the cut.
//!
//! ```sh
//! cargo run --release --example pagerank -- run --ranks 4
//! cargo run --release --example pagerank -- run --set vertices=200000 --set iterations=50
//! cargo run --release --example pagerank -- sweep --param damping=0.5,0.7,0.85,0.95 --replications 1 --metrics top_rank
//! ```

use std::process::ExitCode;

use parsim::comm::Comm;
use parsim::core::rng::StreamKey;
use parsim::graph::pregel::{self, Aggregate, Context, VertexProgram};
use parsim::graph::{Csr, DistGraph};
use parsim::{check, BoxError, Experiment, Model, Outcome, ParamError, Rank};
use serde::{Deserialize, Serialize};

#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(default)]
struct Params {
    /// Vertices.
    vertices: u32,
    /// Links to each side in the ring lattice.
    k: u32,
    /// Probability that a link is rewired to a random vertex.
    rewire: f64,
    /// The damping factor d.
    damping: f64,
    /// Power iterations.
    iterations: u64,
}

impl Default for Params {
    fn default() -> Self {
        Params { vertices: 20_000, k: 3, rewire: 0.1, damping: 0.85, iterations: 30 }
    }
}

/// The vertex program: each superstep a vertex sums what its neighbours
/// sent, updates its rank, and sends rank / degree to every neighbour.
/// Vertices without links hand their rank to everyone through an exact
/// global sum (aggregator 0).
struct MyPageRank {
    damping: f64,
    iterations: u64,
}

impl VertexProgram for MyPageRank {
    type Value = f64;
    type Message = f64;

    fn init(&self, _v: u32, _degree: usize) -> f64 {
        0.0
    }

    fn compute(&self, ctx: &mut Context<'_, f64>, rank: &mut f64, messages: &[f64]) {
        let n = ctx.num_vertices() as f64;
        *rank = if ctx.superstep() == 0 {
            1.0 / n
        } else {
            // Messages arrive sorted by sender: the sum is the same on any number of ranks.
            let incoming: f64 = messages.iter().sum();
            (1.0 - self.damping) / n + self.damping * (incoming + ctx.aggregated(0) / n)
        };
        if ctx.superstep() < self.iterations {
            match ctx.degree() {
                0 => ctx.aggregate(0, *rank),
                d => ctx.send_to_neighbours(*rank / d as f64),
            }
        } else {
            ctx.vote_to_halt();
        }
    }

    fn aggregators(&self) -> &[Aggregate] {
        &[Aggregate::Sum]
    }
}

/// The graph, a pure function of the parameters and the seed.
fn small_world(p: &Params, seed: u64) -> Csr {
    let n = p.vertices;
    let mut pairs = Vec::with_capacity((n * p.k) as usize);
    for v in 0..n {
        for j in 1..=p.k {
            let mut s = StreamKey::new(seed).purpose("pagerank.rewire").with(u64::from(v)).with(u64::from(j)).stream();
            let w = if s.bernoulli(p.rewire) { s.below(u64::from(n)) as u32 } else { (v + j) % n };
            if w != v {
                pairs.push((v, w));
            }
        }
    }
    Csr::from_pairs(n as usize, pairs, None).0
}

/// The same iteration, sequentially: neighbours summed in id order.
fn power_iteration(g: &Csr, damping: f64, iterations: u64) -> Vec<f64> {
    let n = g.n();
    let mut r = vec![1.0 / n as f64; n];
    for _ in 0..iterations {
        let mut dangling = parsim::core::ExactSum::new();
        for v in (0..n).filter(|&v| g.degree(v) == 0) {
            dangling.add(r[v]);
        }
        let dangling = dangling.value();
        let next: Vec<f64> = (0..n)
            .map(|v| {
                let incoming: f64 = g.neighbours(v).iter().map(|&u| r[u as usize] / g.degree(u as usize) as f64).sum();
                (1.0 - damping) / n as f64 + damping * (incoming + dangling / n as f64)
            })
            .collect();
        r = next;
    }
    r
}

struct PageRankModel;

impl Model for PageRankModel {
    type Params = Params;

    fn name(&self) -> &str {
        "pagerank"
    }

    fn check(&self, p: &Params) -> Result<(), ParamError> {
        check::range("vertices", p.vertices, 2..=100_000_000)?;
        check::that("k", p.k >= 1 && p.k < p.vertices / 2, "expected 1 ≤ k < vertices / 2")?;
        check::range("rewire", p.rewire, 0.0..=1.0)?;
        check::range("damping", p.damping, 0.0..=1.0)?;
        check::range("iterations", p.iterations, 1..=10_000)
    }

    fn run<C: Comm>(&self, p: &Params, rank: &mut Rank<'_, C>) -> Result<Outcome, BoxError> {
        let comm = rank.comm();
        let g = small_world(p, rank.seed());
        let size = comm.size() as u64;
        let owner: Vec<u32> = (0..u64::from(p.vertices)).map(|v| (v * size / u64::from(p.vertices)) as u32).collect();
        let local = DistGraph::build(comm.rank(), comm.size(), &g, &owner)?;
        let program = MyPageRank { damping: p.damping, iterations: p.iterations };
        rank.at("supersteps", 0);
        // `--checkpoint-every N` / `--restart DIR` / `--inject kill:rank=R,superstep=S` work here too.
        let result = match rank.checkpointer("pagerank", "superstep")? {
            None => pregel::run(comm, &local, &owner, &program, p.iterations + 1)?,
            Some(mut ck) => {
                let r = pregel::run_resilient(comm, &local, &owner, &program, p.iterations + 1, &mut ck)?;
                rank.checkpoints_done(Some(ck));
                r
            }
        };
        let Some(values) = pregel::gather_values(comm, &local, &result.values)? else {
            return Ok(Outcome::new()); // ranks other than 0: rank 0 reports
        };
        let reference = power_iteration(&g, p.damping, p.iterations);
        let max_diff = values.iter().zip(&reference).map(|(a, b)| (a - b).abs()).fold(0.0, f64::max);
        let (top, top_rank) = values.iter().enumerate().fold((0, 0.0), |m, (v, &r)| if r > m.1 { (v, r) } else { m });
        let bits: Vec<u64> = values.iter().map(|r| r.to_bits()).collect();
        Ok(Outcome::new()
            .digest_of(&bits)
            .metric("max_abs_diff_vs_power_iteration", max_diff)
            .metric("sum_of_ranks", values.iter().sum())
            .metric("top_vertex", top as f64)
            .metric("top_rank", top_rank)
            .metric("supersteps", result.supersteps as f64)
            .line(format!(
                "pagerank: {} vertices, {} edges, {} supersteps; top vertex {top} (rank {top_rank:.6}); \
                 largest difference from the power iteration {max_diff:.3e}",
                g.n(),
                g.edges(),
                result.supersteps
            )))
    }
}

fn main() -> ExitCode {
    Experiment::new(PageRankModel).about("PageRank as a user's own Pregel vertex program").from_args()
}
