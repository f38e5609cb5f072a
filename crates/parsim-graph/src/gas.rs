//! Gather-apply-scatter over a vertex cut (PowerGraph's model).
//!
//! Edges are partitioned ([`parsim_partition::vertex_cut()`]); a vertex with
//! edges on several ranks has a replica on each: one *master*, the others
//! *mirrors*. A superstep: every replica **gathers** over its local edges
//! into a partial accumulator; mirrors send their partials to the master,
//! which sums them and **applies** the new value; the master sends the value
//! back to its mirrors (reconciliation); replicas whose value changed
//! **scatter**, activating their neighbours for the next superstep (the
//! activation is reconciled the same way). High-degree vertices thus cost one
//! partial per rank, not one message per edge.

use bytemuck::Zeroable;
use parsim_ckpt::{Bytes, Checkpointer, CkptError};
use parsim_comm::{Comm, Pod, ReduceOp};
use parsim_core::ExactSum;
use parsim_partition::EdgePartition;

use crate::dist::{deliver_pieces, Directory, Emit, Records};
use crate::error::{GraphError, Result};

/// A gather-apply-scatter program. See [`crate::algorithms`] for examples.
pub trait GasProgram: Sync {
    /// The value of a vertex.
    type Value: Pod + Send + PartialEq;
    /// The gathered accumulator.
    type Acc: Pod + Send;

    /// The value of vertex `v` of degree `degree` before superstep 0.
    fn init(&self, v: u32, degree: usize) -> Self::Value;
    /// What a neighbour of value `nbr` and degree `nbr_degree` contributes over an edge of weight `w`.
    fn gather(&self, nbr: &Self::Value, nbr_degree: usize, w: f64) -> Self::Acc;
    /// Combines two accumulators (commutative and associative).
    fn sum(&self, a: Self::Acc, b: Self::Acc) -> Self::Acc;
    /// The new value of `v` from its old value and everything gathered
    /// (`None`: no active neighbour); `total` is the exact sum of
    /// [`contribute`](Self::contribute) over all vertices before this superstep.
    fn apply(&self, v: u32, degree: usize, old: &Self::Value, acc: Option<Self::Acc>, total: f64) -> Self::Value;
    /// A per-vertex term of a global sum passed to `apply` (PageRank's dangling mass).
    fn contribute(&self, _value: &Self::Value, _degree: usize) -> f64 {
        0.0
    }
    /// Whether every vertex stays active (fixed-iteration programs); otherwise
    /// only neighbours of changed vertices gather next superstep.
    fn always_active(&self) -> bool {
        false
    }
}

/// One rank's part of a vertex-cut graph.
#[derive(Clone, Debug)]
pub struct CutGraph {
    rank: usize,
    ranks: usize,
    n_global: usize,
    /// Global ids of the local replicas, ascending.
    ids: Vec<u32>,
    /// Global degree of each replica.
    degree: Vec<u32>,
    /// Local edges (local ids) and weights.
    edges: Vec<(u32, u32)>,
    weight: Option<Vec<f64>>,
    master: Vec<bool>,
    /// Per rank q: local ids mastered by q with a mirror here (ascending global id).
    to_master: Vec<Vec<u32>>,
    /// Per rank q: local ids mastered here with a mirror on q.
    from_mirrors: Vec<Vec<u32>>,
}

impl CutGraph {
    /// Builds rank `rank`'s part of the `n`-vertex graph whose edges `ep`
    /// assigns to parts `0..ranks` (`weights` parallel to `ep.edges`, if any).
    /// The master of a vertex is one of its replicas chosen by its id; an
    /// isolated vertex lives on rank `v % ranks` alone.
    pub fn build(rank: usize, ranks: usize, n: usize, ep: &EdgePartition, weights: Option<&[f64]>) -> Result<CutGraph> {
        if ep.edges.len() != ep.parts.len() {
            return Err(GraphError::BadArgument("one part per edge".into()));
        }
        if let Some(&p) = ep.parts.iter().find(|&&p| p as usize >= ranks) {
            return Err(GraphError::BadArgument(format!("an edge is given to part {p}, but there are {ranks} ranks")));
        }
        let mut reps: Vec<(u32, u32)> = Vec::with_capacity(ep.edges.len() * 2);
        let mut degree_g = vec![0u32; n];
        for (&(u, v), &p) in ep.edges.iter().zip(&ep.parts) {
            if u as usize >= n || v as usize >= n {
                return Err(GraphError::BadArgument(format!("edge ({u}, {v}) outside 0..{n}")));
            }
            reps.push((u, p));
            reps.push((v, p));
            degree_g[u as usize] += 1;
            degree_g[v as usize] += 1;
        }
        reps.sort_unstable();
        reps.dedup();
        // Replica sets as CSR over vertices.
        let mut rx = vec![0usize; n + 1];
        for &(v, _) in &reps {
            rx[v as usize + 1] += 1;
        }
        for v in 0..n {
            rx[v + 1] += rx[v];
        }
        let parts_of = |v: usize| reps[rx[v]..rx[v + 1]].iter().map(|&(_, p)| p as usize);
        let master_of = |v: usize| -> usize {
            let c = rx[v + 1] - rx[v];
            if c == 0 {
                v % ranks
            } else {
                reps[rx[v] + v % c].1 as usize
            }
        };
        let mut ids = Vec::new();
        let mut master = Vec::new();
        let mut to_master = vec![Vec::new(); ranks];
        let mut from_mirrors = vec![Vec::new(); ranks];
        for v in 0..n {
            let m = master_of(v);
            let here = parts_of(v).any(|p| p == rank) || (m == rank);
            if !here {
                continue;
            }
            let l = ids.len() as u32;
            ids.push(v as u32);
            master.push(m == rank);
            if m == rank {
                for q in parts_of(v).filter(|&q| q != rank) {
                    from_mirrors[q].push(l);
                }
            } else {
                to_master[m].push(l);
            }
        }
        let degree = ids.iter().map(|&v| degree_g[v as usize]).collect();
        let mut edges = Vec::new();
        let mut weight = weights.map(|_| Vec::new());
        let local = |v: u32| ids.binary_search(&v).expect("a replica") as u32;
        for (i, (&(u, v), &p)) in ep.edges.iter().zip(&ep.parts).enumerate() {
            if p as usize == rank {
                edges.push((local(u), local(v)));
                if let (Some(w), Some(src)) = (weight.as_mut(), weights) {
                    w.push(src[i]);
                }
            }
        }
        Ok(CutGraph { rank, ranks, n_global: n, ids, degree, edges, weight, master, to_master, from_mirrors })
    }

    /// Replicas held here (masters and mirrors).
    pub fn replicas(&self) -> usize {
        self.ids.len()
    }

    /// Masters held here.
    pub fn masters(&self) -> usize {
        self.master.iter().filter(|&&m| m).count()
    }

    /// Edges held here.
    pub fn local_edges(&self) -> usize {
        self.edges.len()
    }

    /// Gathers the masters' values on rank 0, in global id order.
    pub fn gather_values<C: Comm, V: Pod + Send>(&self, comm: &C, values: &[V]) -> Result<Option<Vec<V>>> {
        let mut ids = Vec::new();
        let mut vals = Vec::new();
        for (l, &m) in self.master.iter().enumerate() {
            if m {
                ids.push(self.ids[l]);
                vals.push(values[l]);
            }
        }
        let (Some(ids), Some(vals)) = (comm.gather(0, ids)?, comm.gather(0, vals)?) else { return Ok(None) };
        let mut out = vec![V::zeroed(); self.n_global];
        for (is, vs) in ids.iter().zip(vals) {
            for (&i, v) in is.iter().zip(vs) {
                out[i as usize] = v;
            }
        }
        Ok(Some(out))
    }
}

/// What a GAS run hands back on each rank.
#[derive(Clone, Debug)]
pub struct GasResult<V> {
    /// The value of every local replica (equal on all replicas of a vertex).
    pub values: Vec<V>,
    /// Supersteps run.
    pub supersteps: u64,
    /// Bytes sent to other ranks.
    pub remote_bytes: u64,
}

fn exchange<C: Comm, T: Pod + Send>(comm: &C, parts: Vec<Vec<T>>, bytes: &mut u64) -> Result<Vec<Vec<T>>> {
    for (q, p) in parts.iter().enumerate() {
        if q != comm.rank() {
            *bytes += std::mem::size_of_val(p.as_slice()) as u64;
        }
    }
    Ok(comm.all_to_all_v(parts)?)
}

/// Runs `program` on this rank's part `g` until no value changes, or for
/// `max_supersteps` (fixed-iteration programs). Every rank calls it.
pub fn run<C: Comm, P: GasProgram>(
    comm: &C,
    g: &CutGraph,
    program: &P,
    max_supersteps: u64,
) -> Result<GasResult<P::Value>> {
    run_inner(comm, g, program, max_supersteps, None)
}

/// [`run`] with checkpoints after supersteps (`ck` counts supersteps):
/// every master's value and whether it is active, by global id. A restart
/// on any vertex cut and rank count gives each replica its master's value.
///
/// ```
/// use parsim_ckpt::{Checkpointer, Identity, Interval, Options};
/// use parsim_comm::Comm;
/// use parsim_graph::{algorithms::Components, gas, CutGraph, GraphError};
/// use parsim_partition::EdgePartition;
///
/// let edges: Vec<(u32, u32)> = vec![(0, 1), (1, 2), (2, 3), (3, 4), (4, 5), (6, 7)];
/// let dir = std::env::temp_dir().join(format!("parsim-gas-doc-{}", std::process::id()));
/// let run = |ranks: usize, restart: bool| {
///     parsim_comm::launch(ranks, |comm| {
///         let parts: Vec<u32> = (0..edges.len()).map(|e| (e % ranks) as u32).collect();
///         let ep = EdgePartition { edges: edges.clone(), parts, replication_factor: 0.0, edge_balance: 0.0 };
///         let g = CutGraph::build(comm.rank(), ranks, 8, &ep, None)?;
///         let mut o = Options::new(&dir, Some(Interval::Every(2)));
///         o.restart = restart.then(|| dir.clone());
///         let id = Identity::new("components", "superstep", "doc", 0);
///         let mut ck = Checkpointer::new(&comm, o, id).map_err(|e| GraphError::Checkpoint(e.to_string()))?;
///         let r = gas::run_resilient(&comm, &g, &Components, 100, &mut ck)?;
///         Ok::<_, GraphError>(g.gather_values(&comm, &r.values)?)
///     })
/// };
/// let first = run(2, false)?;     // checkpoints after supersteps 2 and 4
/// let again = run(3, true)?;      // resumes after superstep 4, on 3 ranks
/// assert_eq!(first[0], again[0]);
/// # std::fs::remove_dir_all(&dir).ok();
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn run_resilient<C: Comm, P: GasProgram>(
    comm: &C,
    g: &CutGraph,
    program: &P,
    max_supersteps: u64,
    ck: &mut Checkpointer<'_, C>,
) -> Result<GasResult<P::Value>> {
    run_inner(comm, g, program, max_supersteps, Some(ck))
}

/// One rank's checkpoint: (global id, value bytes, active) of its masters.
#[derive(serde::Serialize, serde::Deserialize)]
struct Piece {
    step: u64,
    ids: Vec<u32>,
    values: Bytes,
    active: Vec<bool>,
}

fn ck_err(e: CkptError) -> GraphError {
    match e {
        CkptError::Comm(c) => GraphError::Comm(c),
        other => GraphError::Checkpoint(other.to_string()),
    }
}

/// Every local replica's value and activity from the checkpoint's masters
/// (collective): each old piece is read by one rank (piece `k` by rank
/// `k mod p`, one piece per rank per round), which sends every master's
/// value to all the ranks holding a replica of it through
/// [`deliver_pieces`]; no rank reads the whole checkpoint.
fn resume<C: Comm, V: Pod>(comm: &C, r: &mut parsim_ckpt::Restart, g: &CutGraph) -> Result<(u64, Vec<V>, Vec<bool>)> {
    let w = std::mem::size_of::<V>();
    let nl = g.ids.len();
    let mut values: Vec<Option<V>> = vec![None; nl];
    let mut active = vec![false; nl];
    let mut step = None;
    let dir = Directory::new(comm, g.n_global, &g.ids)?;
    let pieces = r.manifest.ranks;
    let read = |k: usize, emit: &mut Emit<'_>| -> Result<()> {
        let piece: Piece = r.read(k).map_err(ck_err)?;
        if piece.values.0.len() != piece.ids.len() * w || piece.active.len() != piece.ids.len() {
            return Err(GraphError::Checkpoint(format!("piece {k}: values do not match the vertex ids")));
        }
        if k == 0 {
            step = Some(piece.step);
        }
        let mut rec = Vec::with_capacity(w + 1);
        for (i, &gid) in piece.ids.iter().enumerate() {
            rec.clear();
            rec.push(u8::from(piece.active[i]));
            rec.extend_from_slice(&piece.values.0[i * w..(i + 1) * w]);
            emit(gid, &rec)?;
        }
        Ok(())
    };
    let take = |got: Records| -> Result<()> {
        for (gid, b) in got.iter() {
            let l = g
                .ids
                .binary_search(&gid)
                .map_err(|_| GraphError::Checkpoint(format!("vertex {gid} is not held here")))?;
            if b.len() != w + 1 {
                return Err(GraphError::Checkpoint(format!("a record for vertex {gid} is malformed")));
            }
            values[l] = Some(bytemuck::pod_read_unaligned(&b[1..]));
            active[l] = b[0] == 1;
        }
        Ok(())
    };
    deliver_pieces(comm, &dir, pieces, read, take)?;
    let step = comm.broadcast_value(0, &step)?.unwrap_or(0);
    let values = values
        .into_iter()
        .enumerate()
        .map(|(l, v)| v.ok_or_else(|| GraphError::Checkpoint(format!("no value for vertex {}", g.ids[l]))))
        .collect::<Result<_>>()?;
    Ok((step, values, active))
}

fn save<C: Comm, V: Pod>(
    ck: &mut Checkpointer<'_, C>,
    g: &CutGraph,
    step: u64,
    values: &[V],
    active: &[bool],
) -> Result<()> {
    let mine: Vec<usize> = (0..g.ids.len()).filter(|&l| g.master[l]).collect();
    let piece = Piece {
        step,
        ids: mine.iter().map(|&l| g.ids[l]).collect(),
        values: Bytes(mine.iter().flat_map(|&l| bytemuck::bytes_of(&values[l]).to_vec()).collect()),
        active: mine.iter().map(|&l| active[l]).collect(),
    };
    let meta = serde_json::json!({"masters": mine.len()});
    ck.save(step, serde_json::json!(step), meta, serde_json::json!({"ranks": g.ranks}), &piece).map_err(ck_err)
}

fn run_inner<C: Comm, P: GasProgram>(
    comm: &C,
    g: &CutGraph,
    program: &P,
    max_supersteps: u64,
    mut ck: Option<&mut Checkpointer<'_, C>>,
) -> Result<GasResult<P::Value>> {
    if comm.size() != g.ranks || comm.rank() != g.rank {
        return Err(GraphError::BadArgument("the cut graph was built for another communicator".into()));
    }
    let nl = g.ids.len();
    let mut values: Vec<P::Value> = (0..nl).map(|l| program.init(g.ids[l], g.degree[l] as usize)).collect();
    let mut active = vec![true; nl];
    let (mut step, mut bytes) = (0u64, 0u64);
    if let Some(mut r) = ck.as_mut().and_then(|c| c.take_restart()) {
        (step, values, active) = resume(comm, &mut r, g)?;
    }
    // After each superstep: show it to the checkpointer, save if due.
    let mut boundary = |step: u64, values: &[P::Value], active: &[bool]| -> Result<()> {
        let Some(c) = ck.as_mut() else { return Ok(()) };
        if c.boundary(step).map_err(ck_err)?.checkpoint {
            save(c, g, step, values, active)?;
        }
        Ok(())
    };
    let ranks = comm.size();
    while step < max_supersteps {
        let _c = comm.clock().enter(parsim_core::Phase::Compute);
        // The global term, from the masters.
        let mut s = ExactSum::new();
        for l in 0..nl {
            if g.master[l] {
                s.add(program.contribute(&values[l], g.degree[l] as usize));
            }
        }
        drop(_c);
        let total = comm.all_reduce_exact(&s)?.value();
        let _c = comm.clock().enter(parsim_core::Phase::Compute);
        // Gather over local edges.
        let mut acc: Vec<Option<P::Acc>> = vec![None; nl];
        let add = |acc: &mut Option<P::Acc>, x: P::Acc| *acc = Some(acc.map_or(x, |a| program.sum(a, x)));
        for (e, &(a, b)) in g.edges.iter().enumerate() {
            let w = g.weight.as_ref().map_or(1.0, |w| w[e]);
            let (a, b) = (a as usize, b as usize);
            if active[b] {
                let x = program.gather(&values[a], g.degree[a] as usize, w);
                add(&mut acc[b], x);
            }
            if active[a] {
                let x = program.gather(&values[b], g.degree[b] as usize, w);
                add(&mut acc[a], x);
            }
        }
        // Mirrors → masters: presence flags and partial sums.
        let flags: Vec<Vec<u8>> =
            g.to_master.iter().map(|ls| ls.iter().map(|&l| u8::from(acc[l as usize].is_some())).collect()).collect();
        let partial: Vec<Vec<P::Acc>> = g
            .to_master
            .iter()
            .map(|ls| ls.iter().map(|&l| acc[l as usize].unwrap_or_else(P::Acc::zeroed)).collect())
            .collect();
        drop(_c);
        let flags = exchange(comm, flags, &mut bytes)?;
        let partial = exchange(comm, partial, &mut bytes)?;
        let _c = comm.clock().enter(parsim_core::Phase::Compute);
        for q in 0..ranks {
            for (k, &l) in g.from_mirrors[q].iter().enumerate() {
                if flags[q][k] == 1 {
                    add(&mut acc[l as usize], partial[q][k]);
                }
            }
        }
        // Apply on masters.
        let mut changed = vec![false; nl];
        let mut n_changed = 0u64;
        for l in 0..nl {
            if g.master[l] && active[l] {
                let new = program.apply(g.ids[l], g.degree[l] as usize, &values[l], acc[l], total);
                if new != values[l] {
                    changed[l] = true;
                    n_changed += 1;
                    values[l] = new;
                }
            }
        }
        // Masters → mirrors: the values and whether they changed.
        let vals: Vec<Vec<P::Value>> =
            g.from_mirrors.iter().map(|ls| ls.iter().map(|&l| values[l as usize]).collect()).collect();
        let ch: Vec<Vec<u8>> =
            g.from_mirrors.iter().map(|ls| ls.iter().map(|&l| u8::from(changed[l as usize])).collect()).collect();
        drop(_c);
        let vals = exchange(comm, vals, &mut bytes)?;
        let ch = exchange(comm, ch, &mut bytes)?;
        for q in 0..ranks {
            for (k, &l) in g.to_master[q].iter().enumerate() {
                values[l as usize] = vals[q][k];
                changed[l as usize] = ch[q][k] == 1;
            }
        }
        step += 1;
        if program.always_active() {
            if step < max_supersteps {
                boundary(step, &values, &active)?;
            }
            continue;
        }
        if comm.all_reduce(&[n_changed], ReduceOp::Sum)?[0] == 0 {
            break;
        }
        // Scatter: neighbours of changed vertices become active; reconcile.
        let mut next = vec![false; nl];
        for &(a, b) in &g.edges {
            if changed[a as usize] {
                next[b as usize] = true;
            }
            if changed[b as usize] {
                next[a as usize] = true;
            }
        }
        let up: Vec<Vec<u8>> =
            g.to_master.iter().map(|ls| ls.iter().map(|&l| u8::from(next[l as usize])).collect()).collect();
        let up = exchange(comm, up, &mut bytes)?;
        for q in 0..ranks {
            for (k, &l) in g.from_mirrors[q].iter().enumerate() {
                next[l as usize] |= up[q][k] == 1;
            }
        }
        let down: Vec<Vec<u8>> =
            g.from_mirrors.iter().map(|ls| ls.iter().map(|&l| u8::from(next[l as usize])).collect()).collect();
        let down = exchange(comm, down, &mut bytes)?;
        for q in 0..ranks {
            for (k, &l) in g.to_master[q].iter().enumerate() {
                next[l as usize] = down[q][k] == 1;
            }
        }
        active = next;
        if step < max_supersteps {
            boundary(step, &values, &active)?;
        }
    }
    Ok(GasResult { values, supersteps: step, remote_bytes: bytes })
}
