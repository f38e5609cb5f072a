//! Pregel: vertex programs in bulk-synchronous supersteps.
//!
//! Each superstep every active vertex (or one that received messages) runs
//! [`VertexProgram::compute`] with the messages sent to it in the previous
//! superstep; it may send messages along its edges or to any vertex, add to
//! global aggregators (visible to everyone next superstep) and vote to halt.
//! Messages to one remote rank travel in one buffer per superstep; with a
//! combiner, messages to the same vertex are combined before they leave.
//!
//! **Determinism**: a vertex sees its messages sorted by sender id, so a
//! program that folds them in order (PageRank's sum) gives the same bits on
//! any number of ranks and partitions. A combiner combines in an unspecified
//! order: exact for min, max and integer sums. Aggregator sums are exact
//! ([`parsim_core::ExactSum`]).

mod resume;

use parsim_comm::{Comm, Pod, ReduceOp};
use parsim_core::ExactSum;

use crate::dist::DistGraph;
use crate::error::{GraphError, Result};

/// How a global aggregator combines values.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Aggregate {
    /// Exact (correctly rounded) sum.
    Sum,
    /// Minimum (+∞ when nothing was added).
    Min,
    /// Maximum (−∞ when nothing was added).
    Max,
}

/// A vertex program. See the [module docs](self) and [`crate::algorithms`] for examples.
pub trait VertexProgram: Sync {
    /// The value each vertex holds.
    type Value: Clone + Send;
    /// The messages vertices send.
    type Message: Pod + Send;
    /// Whether [`combine`](Self::combine) should be used.
    const COMBINES: bool = false;

    /// The value of vertex `v` (global id) of degree `degree` before superstep 0.
    fn init(&self, v: u32, degree: usize) -> Self::Value;

    /// One superstep of one vertex.
    fn compute(&self, ctx: &mut Context<'_, Self::Message>, value: &mut Self::Value, messages: &[Self::Message]);

    /// Combines two messages to the same vertex into one (used when `COMBINES`).
    fn combine(&self, a: Self::Message, _b: Self::Message) -> Self::Message {
        a
    }

    /// The global aggregators this program adds to (by index).
    fn aggregators(&self) -> &[Aggregate] {
        &[]
    }
}

/// What a vertex can see and do during [`VertexProgram::compute`].
pub struct Context<'a, M> {
    g: &'a DistGraph,
    owner: &'a [u32],
    superstep: u64,
    vertex: usize,
    halt: bool,
    out: &'a mut Outbox<M>,
    agg_in: &'a [f64],
    agg_out: &'a mut [AggAcc],
    error: &'a mut Option<GraphError>,
    combine: Option<Combiner<'a, M>>,
}

#[derive(Clone)]
enum AggAcc {
    Sum(ExactSum),
    Min(f64),
    Max(f64),
}

impl<M: Pod> Context<'_, M> {
    /// The superstep, from 0.
    pub fn superstep(&self) -> u64 {
        self.superstep
    }

    /// This vertex's global id.
    pub fn vertex(&self) -> u32 {
        self.g.global(self.vertex)
    }

    /// Vertices in the whole graph.
    pub fn num_vertices(&self) -> usize {
        self.g.global_vertices()
    }

    /// This vertex's degree.
    pub fn degree(&self) -> usize {
        self.g.neighbours(self.vertex).len()
    }

    /// The neighbours: (global id, edge weight).
    pub fn neighbours(&self) -> impl Iterator<Item = (u32, f64)> + '_ {
        self.g.row(self.vertex).map(move |e| (self.g.global(self.g.adj_at(e) as usize), self.g.weight_at(e)))
    }

    /// Sends `msg` to neighbour `u` (global id) or any other vertex.
    pub fn send(&mut self, u: u32, msg: M) {
        if u as usize >= self.owner.len() {
            if self.error.is_none() {
                *self.error = Some(GraphError::NoSuchVertex {
                    superstep: self.superstep,
                    from: self.vertex(),
                    to: u,
                    n: self.owner.len(),
                });
            }
            return;
        }
        let src = self.vertex();
        self.out.push(self.g, self.owner, src, u, msg, self.combine);
    }

    /// Sends `msg` to every neighbour.
    pub fn send_to_neighbours(&mut self, msg: M) {
        let src = self.vertex();
        for e in self.g.row(self.vertex) {
            let l = self.g.adj_at(e) as usize;
            self.out.push_local(self.g, src, l, msg, self.combine);
        }
    }

    /// Sends `f(neighbour global id, edge weight)` to every neighbour.
    pub fn send_to_neighbours_with(&mut self, mut f: impl FnMut(u32, f64) -> M) {
        let src = self.vertex();
        for e in self.g.row(self.vertex) {
            let l = self.g.adj_at(e) as usize;
            let m = f(self.g.global(l), self.g.weight_at(e));
            self.out.push_local(self.g, src, l, m, self.combine);
        }
    }

    /// Stops this vertex until a message arrives.
    pub fn vote_to_halt(&mut self) {
        self.halt = true;
    }

    /// Adds `x` to aggregator `i` (declared by [`VertexProgram::aggregators`]).
    pub fn aggregate(&mut self, i: usize, x: f64) {
        match &mut self.agg_out[i] {
            AggAcc::Sum(s) => s.add(x),
            AggAcc::Min(m) => *m = m.min(x),
            AggAcc::Max(m) => *m = m.max(x),
        }
    }

    /// Aggregator `i`'s value from the previous superstep (0, +∞, −∞ in superstep 0).
    pub fn aggregated(&self, i: usize) -> f64 {
        self.agg_in[i]
    }
}

/// A message combiner, borrowed from the program.
type Combiner<'a, M> = &'a dyn Fn(M, M) -> M;

/// Messages leaving a rank in one superstep.
struct Outbox<M> {
    /// Messages to owned vertices: (dst local, src global, msg).
    local: Vec<(u32, u32, M)>,
    /// With a combiner: one slot per local vertex (owned and ghosts).
    slots: Vec<Option<(u32, M)>>,
    touched: Vec<u32>,
    /// Per rank: (dst global, src global, msg) to vertices that are not ghosts here.
    far: Vec<Vec<(u32, u32, M)>>,
    sent: u64,
}

impl<M: Pod> Outbox<M> {
    fn push_local(&mut self, g: &DistGraph, src: u32, l: usize, msg: M, combine: Option<Combiner<'_, M>>) {
        self.sent += 1;
        if let Some(f) = combine {
            self.combine_into(l, src, msg, f);
        } else if l < g.owned() {
            self.local.push((l as u32, src, msg));
        } else {
            self.far[g.ghost_owner(l)].push((g.global(l), src, msg));
        }
    }

    fn combine_into(&mut self, l: usize, src: u32, msg: M, f: Combiner<'_, M>) {
        match &mut self.slots[l] {
            Some((s, m)) => {
                *s = (*s).min(src);
                *m = f(*m, msg);
            }
            slot @ None => {
                *slot = Some((src, msg));
                self.touched.push(l as u32);
            }
        }
    }

    fn push(&mut self, g: &DistGraph, owner: &[u32], src: u32, u: u32, msg: M, combine: Option<Combiner<'_, M>>) {
        if let Some(l) = g.local(u) {
            self.push_local(g, src, l, msg, combine);
        } else {
            self.sent += 1;
            let p = owner[u as usize] as usize;
            if p == g.rank() {
                unreachable!("an owned vertex is always local");
            }
            self.far[p].push((u, src, msg));
        }
    }
}

/// What a Pregel run hands back on each rank.
#[derive(Clone, Debug)]
pub struct PregelResult<V> {
    /// Final values of the owned vertices (in local order: ascending global id).
    pub values: Vec<V>,
    /// Supersteps run.
    pub supersteps: u64,
    /// Messages sent by this rank (before combining).
    pub messages: u64,
    /// Bytes this rank sent to other ranks.
    pub remote_bytes: u64,
    /// The final aggregator values.
    pub aggregated: Vec<f64>,
}

/// Runs `program` on this rank's part `g` (`owner`: the part of every
/// vertex) until every vertex has halted with no message in flight, or for
/// `max_supersteps`. Every rank calls it with the same program and limits.
///
/// ```
/// use parsim_graph::{algorithms::Components, pregel, Csr, DistGraph};
/// let (g, _) = Csr::from_pairs(5, vec![(0, 1), (1, 2), (3, 4)], None);
/// let owner = vec![0u32; 5];
/// let results = parsim_comm::launch(1, |comm| {
///     let d = DistGraph::build(0, 1, &g, &owner).unwrap();
///     Ok::<_, parsim_graph::GraphError>(pregel::run(&comm, &d, &owner, &Components, 100)?.values)
/// })?;
/// assert_eq!(results[0], vec![0, 0, 0, 3, 3]);
/// # Ok::<(), parsim_graph::GraphError>(())
/// ```
pub fn run<C: Comm, P: VertexProgram>(
    comm: &C,
    g: &DistGraph,
    owner: &[u32],
    program: &P,
    max_supersteps: u64,
) -> Result<PregelResult<P::Value>> {
    run_inner(comm, g, owner, program, max_supersteps, None)
}

/// [`run`] with checkpoints at superstep boundaries (`ck` decides when and
/// fires injected faults, `superstep=`); when `ck` holds a checkpoint to
/// restart from, the run resumes at its superstep on this partition,
/// whatever partition wrote it. Vertex values must be serialisable.
///
/// ```
/// use parsim_ckpt::{Checkpointer, Identity, Interval, Options};
/// use parsim_comm::Comm;
/// use parsim_graph::{algorithms::Components, pregel, Csr, DistGraph, GraphError};
/// let (g, _) = Csr::from_pairs(6, vec![(5, 4), (4, 3), (3, 2), (2, 1), (1, 0)], None);
/// let dir = std::env::temp_dir().join(format!("parsim-pregel-doc-{}", std::process::id()));
/// let run = |ranks: usize, restart: bool| {
///     parsim_comm::launch(ranks, |comm| {
///         let owner: Vec<u32> = (0..6).map(|v| (v * ranks / 6) as u32).collect();
///         let d = DistGraph::build(comm.rank(), ranks, &g, &owner)?;
///         let mut o = Options::new(&dir, Some(Interval::Every(2)));
///         o.restart = restart.then(|| dir.clone());
///         let id = Identity::new("components", "superstep", "doc", 0);
///         let mut ck = Checkpointer::new(&comm, o, id).map_err(|e| GraphError::Checkpoint(e.to_string()))?;
///         let r = pregel::run_resilient(&comm, &d, &owner, &Components, 100, &mut ck)?;
///         Ok::<_, GraphError>((pregel::gather_values(&comm, &d, &r.values)?, r.supersteps))
///     })
/// };
/// let first = run(2, false)?;           // checkpoints after supersteps 2 and 4
/// let again = run(3, true)?;            // resumes after superstep 4, on 3 ranks
/// assert_eq!(first[0], again[0]);
/// assert_eq!(first[0].0.as_deref(), Some(&[0; 6][..]));
/// # std::fs::remove_dir_all(&dir).ok();
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn run_resilient<C: Comm, P: VertexProgram>(
    comm: &C,
    g: &DistGraph,
    owner: &[u32],
    program: &P,
    max_supersteps: u64,
    ck: &mut parsim_ckpt::Checkpointer<'_, C>,
) -> Result<PregelResult<P::Value>>
where
    P::Value: serde::Serialize + serde::de::DeserializeOwned,
{
    let mut saver = resume::CkSaver(ck);
    run_inner(comm, g, owner, program, max_supersteps, Some(&mut saver))
}

fn run_inner<C: Comm, P: VertexProgram>(
    comm: &C,
    g: &DistGraph,
    owner: &[u32],
    program: &P,
    max_supersteps: u64,
    mut saver: Option<&mut dyn resume::Saver<P::Value, P::Message>>,
) -> Result<PregelResult<P::Value>> {
    if comm.size() != g.ranks() || comm.rank() != g.rank() {
        return Err(GraphError::BadArgument(format!(
            "the graph view is rank {} of {}, the communicator rank {} of {}",
            g.rank(),
            g.ranks(),
            comm.rank(),
            comm.size()
        )));
    }
    let n_own = g.owned();
    let mut values: Vec<P::Value> = (0..n_own).map(|i| program.init(g.global(i), g.neighbours(i).len())).collect();
    let mut active = vec![true; n_own];
    let aggs = program.aggregators().to_vec();
    let mut agg_in: Vec<f64> = aggs
        .iter()
        .map(|a| match a {
            Aggregate::Sum => 0.0,
            Aggregate::Min => f64::INFINITY,
            Aggregate::Max => f64::NEG_INFINITY,
        })
        .collect();
    let combiner = |a: P::Message, b: P::Message| program.combine(a, b);
    let combine: Option<Combiner<'_, P::Message>> = P::COMBINES.then_some(&combiner as _);
    // Inbox: messages to owned vertices, grouped by destination.
    let mut inbox: Vec<(u32, u32, P::Message)> = Vec::new();
    let (mut supersteps, mut messages, mut remote_bytes) = (0u64, 0u64, 0u64);
    let mut error: Option<GraphError> = None;
    let mut step = 0u64;
    if let Some(r) = saver.as_mut().map(|s| s.resume(g)).transpose()?.flatten() {
        (step, supersteps) = (r.step, r.step);
        (values, active, inbox, agg_in) = (r.values, r.active, r.inbox, r.aggregated);
    }
    let mut slots: Vec<Option<(u32, P::Message)>> =
        if P::COMBINES { vec![None; n_own + g.ghosts()] } else { Vec::new() };
    let mut msgs: Vec<P::Message> = Vec::new();
    while step < max_supersteps {
        inbox.sort_unstable_by_key(|m| (m.0, m.1));
        let mut out = Outbox {
            local: Vec::new(),
            slots: std::mem::take(&mut slots),
            touched: Vec::new(),
            far: vec![Vec::new(); comm.size()],
            sent: 0,
        };
        let mut agg_out: Vec<AggAcc> = aggs
            .iter()
            .map(|a| match a {
                Aggregate::Sum => AggAcc::Sum(ExactSum::new()),
                Aggregate::Min => AggAcc::Min(f64::INFINITY),
                Aggregate::Max => AggAcc::Max(f64::NEG_INFINITY),
            })
            .collect();
        {
            let _c = comm.clock().enter(parsim_core::Phase::Compute);
            let mut k = 0usize;
            for i in 0..n_own {
                msgs.clear();
                while k < inbox.len() && inbox[k].0 as usize == i {
                    msgs.push(inbox[k].2);
                    k += 1;
                }
                if !active[i] && msgs.is_empty() {
                    continue;
                }
                let mut ctx = Context {
                    g,
                    owner,
                    superstep: step,
                    vertex: i,
                    halt: false,
                    out: &mut out,
                    agg_in: &agg_in,
                    agg_out: &mut agg_out,
                    error: &mut error,
                    combine,
                };
                program.compute(&mut ctx, &mut values[i], &msgs);
                active[i] = !ctx.halt;
            }
        }
        messages += out.sent;
        // Combined slots become messages.
        if P::COMBINES {
            for &l in &out.touched {
                let (src, m) = out.slots[l as usize].take().expect("touched slot");
                if (l as usize) < n_own {
                    out.local.push((l, src, m));
                } else {
                    out.far[g.ghost_owner(l as usize)].push((g.global(l as usize), src, m));
                }
            }
            out.touched.clear();
        }
        slots = std::mem::take(&mut out.slots);
        // Stop on the first error everywhere (an integer reduction).
        let failed = comm.all_reduce(&[u64::from(error.is_some())], ReduceOp::Max)?[0];
        if failed > 0 {
            return Err(error.unwrap_or_else(|| {
                GraphError::BadArgument(
                    "another rank's vertex program sent a message to a vertex that does not exist".into(),
                )
            }));
        }
        // Exchange: one buffer per rank.
        let mut parts: Vec<Vec<u8>> = Vec::with_capacity(comm.size());
        for (p, v) in out.far.iter().enumerate() {
            let mut b = Vec::with_capacity(v.len() * (8 + std::mem::size_of::<P::Message>()));
            for (dst, src, m) in v {
                b.extend_from_slice(&dst.to_le_bytes());
                b.extend_from_slice(&src.to_le_bytes());
                b.extend_from_slice(bytemuck::bytes_of(m));
            }
            if p != comm.rank() {
                remote_bytes += b.len() as u64;
            }
            parts.push(b);
        }
        let got = comm.all_to_all_v(parts)?;
        inbox = std::mem::take(&mut out.local);
        let w = 8 + std::mem::size_of::<P::Message>();
        for b in &got {
            for rec in b.chunks_exact(w) {
                let dst = u32::from_le_bytes(rec[..4].try_into().expect("4 bytes"));
                let src = u32::from_le_bytes(rec[4..8].try_into().expect("4 bytes"));
                let m: P::Message = bytemuck::pod_read_unaligned(&rec[8..]);
                let l = g.local(dst).filter(|&l| l < n_own).ok_or_else(|| {
                    GraphError::BadArgument(format!(
                        "rank {} received a message for vertex {dst} it does not own",
                        g.rank()
                    ))
                })?;
                inbox.push((l as u32, src, m));
            }
        }
        // Aggregators.
        for (i, a) in agg_out.iter().enumerate() {
            agg_in[i] = match a {
                AggAcc::Sum(s) => comm.all_reduce_exact(s)?.value(),
                AggAcc::Min(m) => comm.all_reduce(&[*m], ReduceOp::Min)?[0],
                AggAcc::Max(m) => comm.all_reduce(&[*m], ReduceOp::Max)?[0],
            };
        }
        step += 1;
        supersteps = step;
        let live = active.iter().filter(|&&a| a).count() as u64 + inbox.len() as u64;
        if comm.all_reduce(&[live], ReduceOp::Sum)?[0] == 0 {
            break;
        }
        if let Some(s) = saver.as_mut() {
            let state = resume::State { step, values: &values, active: &active, inbox: &inbox, aggregated: &agg_in };
            s.superstep(g, state)?;
        }
    }
    Ok(PregelResult { values, supersteps, messages, remote_bytes, aggregated: agg_in })
}

/// Gathers every rank's owned values on rank 0, in global id order.
pub fn gather_values<C: Comm, V: Clone + Send + Pod>(comm: &C, g: &DistGraph, values: &[V]) -> Result<Option<Vec<V>>> {
    let ids = comm.gather(0, g.owned_ids().to_vec())?;
    let vals = comm.gather(0, values.to_vec())?;
    let (Some(ids), Some(vals)) = (ids, vals) else { return Ok(None) };
    let n = g.global_vertices();
    let mut out: Vec<Option<V>> = vec![None; n];
    for (is, vs) in ids.iter().zip(vals) {
        for (&i, v) in is.iter().zip(vs) {
            out[i as usize] = Some(v);
        }
    }
    Ok(Some(out.into_iter().map(|v| v.expect("every vertex has an owner")).collect()))
}
