//! SEIR-net-v1 as a bulk-synchronous program over a vertex-partitioned
//! contact network ([`DistGraph`]).
//!
//! One superstep per day:
//! 1. **progression** of the agents this rank owns (E → I, I → R, isolation
//!    of detected cases, vaccination), using the state at the start of the day;
//! 2. **exchange**: the boundary agents whose transmitting status changed
//!    (became infectious, recovered, isolated) are sent to the ranks holding
//!    ghosts of them — only what changed, one buffer per neighbouring rank;
//! 3. **transmission**: every infectious agent, owned or ghost, tries each
//!    susceptible neighbour owned here with one Bernoulli draw per
//!    (infectious, susceptible) edge;
//! 4. **counts**: S, E, I, R, V and new infections, one integer all-reduce.
//!
//! Every draw is Philox4x32-10 keyed by the seed with counter
//! (day, kind, agent, neighbour) — global ids; transmission draws take the
//! four words of one block for four consecutive days — so the trajectory is
//! bit identical for any number of ranks, partition, backend and threads.

use parsim_comm::{Comm, ReduceOp};
use parsim_core::rng::StreamKey;
use parsim_core::{Digest, Digester, Phase, SetDigest};
use parsim_graph::DistGraph;
use rayon::prelude::*;

pub use crate::balance::Balance;
pub(crate) use rank::State;
use rules::{draw, threshold, Course, Planned, Row, Rules, View};

mod layout;
mod rank;
mod rules;
use crate::config::{SeirConfig, Variant};
use crate::error::{AbmError, Result};
use crate::population::Layer;
pub use layout::Layout;

/// Agent states.
pub mod state {
    /// Susceptible.
    pub const S: u8 = 0;
    /// Exposed (latent).
    pub const E: u8 = 1;
    /// Infectious.
    pub const I: u8 = 2;
    /// Recovered.
    pub const R: u8 = 3;
    /// Vaccinated (immune).
    pub const V: u8 = 4;
}
use state::*;

const K_TRANSMIT: u32 = 1;
const K_ONSET: u32 = 2;
const K_RECOVER: u32 = 3;
const K_DETECT: u32 = 4;
const K_VACCINATE: u32 = 5;
const TAG_CHANGES: u32 = 610;
const NEVER: u16 = u16::MAX;

/// The counts of one day (after its transmission step).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct DayCounts {
    /// Susceptible.
    pub s: u64,
    /// Exposed.
    pub e: u64,
    /// Infectious.
    pub i: u64,
    /// Recovered.
    pub r: u64,
    /// Vaccinated.
    pub v: u64,
    /// Infected on this day.
    pub new: u64,
    /// Infectious and isolated.
    pub isolated: u64,
}

/// What a run hands back (equal on every rank, except the rank-local traffic).
#[derive(Clone, Debug)]
pub struct SeirResult {
    /// One entry per day.
    pub curve: Vec<DayCounts>,
    /// Digest of the daily curve and every agent's final (state, infection day).
    pub digest: Digest,
    /// Per degree k: (agents of degree k, of them ever infected).
    pub by_degree: Vec<(u64, u64)>,
    /// Transmission draws made, all ranks: a work counter, which depends on
    /// the rank count (a rank also draws for ghost neighbours that turn out
    /// not to be susceptible), unlike the epidemic itself.
    pub transmission_checks: u64,
    /// Boundary-state changes this rank sent (one per receiving rank).
    pub changes_sent: u64,
    /// Agents.
    pub agents: u64,
    /// With [`SeirConfig::keep_states`]: this rank's agents at the end, as
    /// (global id, state, infection day or `u16::MAX`), ascending id.
    pub states: Vec<(u32, u8, u16)>,
}

/// Called after each day with (days done, days, that day's counts).
pub type Progress<'a> = &'a mut dyn FnMut(u32, u32, &DayCounts);

/// The S0 seeds: distinct agents drawn uniformly from (seed, "abm.seeds").
pub fn seeds(n: usize, count: usize, seed: u64) -> Vec<u32> {
    let mut s = StreamKey::new(seed).purpose("abm.seeds").stream();
    let mut out: Vec<u32> = Vec::with_capacity(count);
    while out.len() < count.min(n) {
        let a = s.below(n as u64) as u32;
        if !out.contains(&a) {
            out.push(a);
        }
    }
    out
}

/// Runs `cfg` on this rank's part `g` of a contact network with these `layers`. Every rank calls
/// it with the same arguments; `progress(day, days)` is called after each day.
///
/// When an agent becomes infectious, its owner draws its whole infectious
/// period at once (exit day, isolation, and for every neighbour that may
/// still be susceptible the first day its Bernoulli draw succeeds): an
/// attempt scheduled for day t infects the neighbour if it is still
/// susceptible then. This is the trajectory of drawing day by day — a
/// neighbour susceptible on day t was susceptible on every earlier day, so
/// only the first success can matter — and reads each row once per
/// infection. Attempts on another rank's agents travel to their owner, and
/// boundary agents that stop being susceptible are announced to the ranks
/// holding their ghosts (so that their neighbours stop drawing for them):
/// both in one message per neighbouring rank per day.
pub fn run<C: Comm>(
    comm: &C,
    layers: &[Layer],
    g: &DistGraph,
    cfg: &SeirConfig,
    progress: Option<Progress<'_>>,
) -> Result<SeirResult> {
    run_on(comm, layers, &Layout::new(g), cfg, progress)
}

/// This rank's counts recounted from its agents' states at the end of
/// `day` (an isolated case is infectious and isolated on or before it).
fn recount(st: &[u8], iso_day: &[u32], day: u32) -> DayCounts {
    let mut c = DayCounts::default();
    for (i, &s) in st.iter().enumerate() {
        match s {
            S => c.s += 1,
            E => c.e += 1,
            I => {
                c.i += 1;
                if iso_day.get(i).is_some_and(|&d| d <= day) {
                    c.isolated += 1;
                }
            }
            R => c.r += 1,
            _ => c.v += 1,
        }
    }
    c
}

/// [`run`] on a prepared [`Layout`].
pub fn run_on<C: Comm>(
    comm: &C,
    layers: &[Layer],
    layout: &Layout<'_>,
    cfg: &SeirConfig,
    progress: Option<Progress<'_>>,
) -> Result<SeirResult> {
    run_resilient(comm, layers, layout, cfg, progress, None)
}

/// [`run_on`] with checkpoints at day boundaries (`ck` decides when, and
/// fires injected faults). When `ck` holds a checkpoint to restart from,
/// the run resumes at its day on this partition, whatever partition wrote
/// it. Before every checkpoint the counts are recounted from the agents'
/// states: a mismatch (a silently corrupted state) ends the run with an
/// error instead of being saved. The agent total is checked every day.
pub fn run_resilient<C: Comm>(
    comm: &C,
    layers: &[Layer],
    layout: &Layout<'_>,
    cfg: &SeirConfig,
    progress: Option<Progress<'_>>,
    ck: Option<&mut parsim_ckpt::Checkpointer<'_, C>>,
) -> Result<SeirResult> {
    run_inner(comm, layers, layout, cfg, progress, ck, None)
}

/// [`run_resilient`] with dynamic load balancing: the agents are grouped
/// into chunks of consecutive global ids (`bal`), the graph `g` must have
/// been built from [`Balance::agent_owner`], and at every check the
/// balancer may move chunks between ranks. Moved agents carry their whole
/// state (states, infection and isolation days, pending onsets, isolations,
/// exits and infection attempts); the local graph is rebuilt for the new
/// map and the ranks that now hold ghosts of announced agents are told.
/// The digest is that of any unbalanced run.
///
/// ```
/// use parsim_abm::{seir, Population, SeirConfig};
/// use parsim_comm::Comm;
/// use parsim_graph::DistGraph;
/// use parsim_lb::{Balancer, Config, Strategy, When};
///
/// let pop = Population::erdos_renyi(4_000, 8.0, 7);
/// let cfg = SeirConfig { days: 60, ..SeirConfig::default() };
/// let lb = Config { strategy: Strategy::Greedy, when: When::Every, every: 5, ..Config::default() };
/// let out = parsim_comm::launch(2, |comm| {
///     let chunks = seir::Balance::chunks(&pop.graph, 250);
///     let mut balancer = Balancer::new(lb.clone(), chunks, comm.size(), 1);
///     let mut bal = seir::Balance::new(&mut balancer, 250);
///     let g = DistGraph::build(comm.rank(), comm.size(), &pop.graph, &bal.agent_owner(4_000))?;
///     let res = seir::run_balanced(&comm, &pop.layers, &g, &cfg, None, None, &mut bal)?;
///     Ok::<_, parsim_abm::AbmError>(res.digest)
/// })?;
/// let plain = parsim_comm::launch(1, |comm| {
///     let g = DistGraph::build(0, 1, &pop.graph, &vec![0; 4_000])?;
///     Ok::<_, parsim_abm::AbmError>(seir::run(&comm, &pop.layers, &g, &cfg, None)?.digest)
/// })?;
/// assert_eq!(out[0], plain[0]);
/// # Ok::<(), parsim_abm::AbmError>(())
/// ```
pub fn run_balanced<C: Comm>(
    comm: &C,
    layers: &[Layer],
    g: &DistGraph,
    cfg: &SeirConfig,
    progress: Option<Progress<'_>>,
    ck: Option<&mut parsim_ckpt::Checkpointer<'_, C>>,
    bal: &mut Balance<'_>,
) -> Result<SeirResult> {
    if bal.owner.len() != bal.lb.chunks().len() {
        return Err(AbmError::config("lb", "the chunk map does not match the balancer's chunks"));
    }
    let layout = Layout::new(g);
    run_inner(comm, layers, &layout, cfg, progress, ck, Some(bal))
}

/// What does not change during a run: the draws' rules, the E → I
/// threshold, the thread pool.
struct Ctx<'a> {
    rules: Rules<'a>,
    thr_sigma: u64,
    pool: Option<rayon::ThreadPool>,
}

impl<'a> Ctx<'a> {
    fn new(layers: &[Layer], cfg: &'a SeirConfig) -> Result<Ctx<'a>> {
        let iso = cfg.isolation.as_ref();
        let rules = Rules {
            key: [cfg.seed as u32, (cfg.seed >> 32) as u32],
            cfg,
            days: cfg.days,
            open: (0..cfg.days).map(|d| cfg.open_layers(d, layers.len())).collect(),
            // No closure reaches day u32::MAX: every layer.
            all_layers: cfg.open_layers(u32::MAX, layers.len()),
            thr: layers.iter().map(|l| threshold(l.probability(cfg.beta))).collect(),
            thr_gamma: match cfg.variant {
                Variant::Markov { gamma, .. } => threshold(gamma),
                Variant::Fixed { .. } => 0,
            },
            thr_detect: iso.map_or(0, |i| threshold(i.detect)),
        };
        let thr_sigma = match cfg.variant {
            Variant::Markov { sigma, .. } => threshold(sigma),
            Variant::Fixed { .. } => 0,
        };
        let pool = if cfg.threads > 1 {
            Some(
                rayon::ThreadPoolBuilder::new()
                    .num_threads(cfg.threads)
                    .build()
                    .map_err(|e| AbmError::config("threads", e.to_string()))?,
            )
        } else {
            None
        };
        Ok(Ctx { rules, thr_sigma, pool })
    }
}

fn run_inner<C: Comm>(
    comm: &C,
    layers: &[Layer],
    layout0: &Layout<'_>,
    cfg: &SeirConfig,
    mut progress: Option<Progress<'_>>,
    mut ck: Option<&mut parsim_ckpt::Checkpointer<'_, C>>,
    mut bal: Option<&mut Balance<'_>>,
) -> Result<SeirResult> {
    cfg.check(layers.len())?;
    if layers.len() > 8 {
        return Err(AbmError::config("layers", "at most 8 contact layers"));
    }
    let ctx = Ctx::new(layers, cfg)?;
    let g0 = layout0.g;
    let mut s = match ck.as_mut().and_then(|c| c.take_restart()) {
        Some(mut r) => {
            let mut s = State::restored(g0, cfg, crate::resume::load(comm, &mut r, g0)?);
            crate::balance::announce(comm, g0, &mut s)?;
            s
        }
        None => State::fresh(g0, cfg),
    };
    let mut eff = (0.0, 0u32);
    // The graph after the latest migration (the caller's before the first).
    let mut moved: Option<DistGraph> = None;
    loop {
        let (new_map, out) = {
            let g = moved.as_ref().unwrap_or(g0);
            let fresh_layout;
            let layout = match moved {
                Some(_) => {
                    fresh_layout = Layout::new(g);
                    &fresh_layout
                }
                None => layout0,
            };
            let lb = bal.as_deref_mut();
            match days(comm, layout, &ctx, &mut s, progress.as_mut(), ck.as_deref_mut(), lb, &mut eff)? {
                None => {
                    if let Some(b) = bal.as_deref_mut() {
                        b.efficiency = if eff.1 > 0 { eff.0 / f64::from(eff.1) } else { 1.0 };
                    }
                    return finish(comm, g, &s, cfg.keep_states);
                }
                Some(new_map) => {
                    let b = bal.as_deref().expect("only a balanced run rebalances");
                    let out =
                        crate::balance::outgoing(&s.piece(g), comm.size(), |gid| new_map[(gid / b.chunk) as usize]);
                    (new_map, out)
                }
            }
        };
        // Migrate: every agent's record and schedule to its new owner, the
        // local graph rebuilt, the new ghost holders told who left S.
        let b = bal.as_deref_mut().expect("only a balanced run rebalances");
        let t0 = std::time::Instant::now();
        let me = comm.rank();
        let bytes: u64 = out.iter().enumerate().filter(|&(q, _)| q != me).map(|(_, v)| 4 * v.len() as u64).sum();
        let got = comm.clock().in_phase(Phase::Comm, || comm.all_to_all_v(out))?;
        let g = {
            let _c = comm.clock().enter(Phase::Compute);
            let old = moved.as_ref().unwrap_or(g0);
            let to: Vec<u32> = (0..old.owned()).map(|i| new_map[(old.global(i) / b.chunk) as usize]).collect();
            old.redistribute(comm, &to)?
        };
        b.owner = new_map;
        let (days, curve, draws, sent) = (s.days, std::mem::take(&mut s.curve), s.draws, s.changes_sent);
        let pieces = got.iter().map(|v| crate::balance::decode(v, days));
        let mut restored = crate::resume::restore(pieces, &g, comm.rank())?;
        (restored.curve, restored.draws, restored.changes_sent) = (curve, draws, sent);
        s = State::restored(&g, cfg, restored);
        crate::balance::announce(comm, &g, &mut s)?;
        b.lb.migrated(comm, bytes, t0.elapsed().as_secs_f64())?;
        moved = Some(g);
    }
}

/// The digest, degree histogram and totals at the end (collective).
fn finish<C: Comm>(comm: &C, g: &DistGraph, s: &State, keep: bool) -> Result<SeirResult> {
    let n_own = g.owned();
    let mut sd = SetDigest::new();
    let mut maxdeg = 0u64;
    for i in 0..n_own {
        sd.add(u64::from(g.global(i)), u64::from(s.st[i]) | u64::from(s.inf_day[i]) << 8);
        maxdeg = maxdeg.max(g.neighbours(i).len() as u64);
    }
    let maxdeg = comm.all_reduce(&[maxdeg], ReduceOp::Max)?[0] as usize;
    let mut hist = vec![0u64; 2 * (maxdeg + 1)];
    for i in 0..n_own {
        let k = g.neighbours(i).len();
        hist[2 * k] += 1;
        hist[2 * k + 1] += u64::from(s.inf_day[i] != NEVER);
    }
    let hist = comm.all_reduce(&hist, ReduceOp::Sum)?;
    let checks = comm.all_reduce(&[s.draws], ReduceOp::Sum)?[0];
    let total = comm.all_merge_digest(&sd)?;
    let mut d = Digester::new();
    d.write_str("seir-net-v1");
    for c in &s.curve {
        for x in [c.s, c.e, c.i, c.r, c.v, c.new, c.isolated] {
            d.write_u64(x);
        }
    }
    d.write_u64(total.parts[0]);
    d.write_u64(total.parts[1]);
    Ok(SeirResult {
        curve: s.curve.clone(),
        digest: d.finish(),
        by_degree: hist.chunks_exact(2).map(|c| (c[0], c[1])).collect(),
        transmission_checks: checks,
        changes_sent: s.changes_sent,
        agents: g.global_vertices() as u64,
        states: if keep { (0..n_own).map(|i| (g.global(i), s.st[i], s.inf_day[i])).collect() } else { Vec::new() },
    })
}

/// Runs days from `s.days` on `layout`'s graph until the horizon (`None`)
/// or until the balancer asks for a new chunk map (returned).
#[allow(clippy::too_many_arguments)]
fn days<C: Comm>(
    comm: &C,
    layout: &Layout<'_>,
    ctx: &Ctx<'_>,
    s: &mut State,
    mut progress: Option<&mut Progress<'_>>,
    mut ck: Option<&mut parsim_ckpt::Checkpointer<'_, C>>,
    mut bal: Option<&mut Balance<'_>>,
    eff: &mut (f64, u32),
) -> Result<Option<Vec<u32>>> {
    let g = layout.g;
    let (rules, thr_sigma) = (&ctx.rules, ctx.thr_sigma);
    let cfg = rules.cfg;
    let n_own = g.owned();
    let iso = cfg.isolation.as_ref();
    let base = g.owned_base();
    let nd = cfg.days as usize;
    let peer_mask = &layout.peer_mask;
    let boundary = |i: usize| layout.is_boundary(i);
    let gid = |i: usize| base.map_or_else(|| g.global(i), |b| b + i as u32);
    let mut sources: Vec<(u32, Course)> = Vec::new();
    // Per owned chunk: the work of the day (draws, attempts handled), when balanced.
    let mut work: Vec<f64> = Vec::new();
    let chunk_of = |i: usize, b: &Balance<'_>| (gid(i) / b.chunk) as usize;
    for day in s.days..cfg.days {
        let compute = comm.clock().enter(Phase::Compute);
        let t_day = std::time::Instant::now();
        if let Some(b) = bal.as_deref() {
            work.clear();
            work.resize(b.owner.len(), 0.0);
        }
        sources.clear();
        let counts = &mut s.counts;
        counts.new = 0;
        if day == 0 {
            for a in seeds(g.global_vertices(), cfg.seeds, cfg.seed) {
                if let Some(i) = g.local(a).filter(|&i| i < n_own) {
                    s.st[i] = E;
                    s.inf_day[i] = 0;
                    counts.s -= 1;
                    counts.e += 1;
                    counts.new += 1;
                    if boundary(i) {
                        s.left_s.push(i as u32);
                    }
                    let o = rules.onset(a, 0, thr_sigma) as usize;
                    if o < nd {
                        s.onset_at[o].push(i as u32);
                    }
                }
            }
        }
        // 1. Progression: exits first (so that today's new I do not also recover), then onsets.
        let d = day as usize;
        for a in std::mem::take(&mut s.exit_at[d]) {
            let a = a as usize;
            if iso.is_some() && s.iso_day[a] < day {
                counts.isolated -= 1;
            }
            s.st[a] = R;
            counts.i -= 1;
            counts.r += 1;
        }
        counts.isolated += s.iso_at[d].len() as u64;
        s.iso_at[d] = Vec::new();
        for a in std::mem::take(&mut s.onset_at[d]) {
            let au = a as usize;
            s.st[au] = I;
            counts.e -= 1;
            counts.i += 1;
            let c = rules.course(gid(au), day);
            if (c.exit as usize) < nd {
                s.exit_at[c.exit as usize].push(a);
            }
            if iso.is_some() {
                s.iso_day[au] = c.iso;
                if c.iso == day {
                    counts.isolated += 1;
                } else if c.iso < c.exit && (c.iso as usize) < nd {
                    s.iso_at[c.iso as usize].push(a);
                }
            }
            sources.push((a, c));
        }
        while s.vacc_at < s.vacc.len() && s.vacc[s.vacc_at].0 == day {
            let a = s.vacc[s.vacc_at].1 as usize;
            if s.st[a] == S {
                s.st[a] = V;
                counts.s -= 1;
                counts.v += 1;
                if boundary(a) {
                    s.left_s.push(a as u32);
                }
            }
            s.vacc_at += 1;
        }
        // 2. Transmission: every new source draws its whole course.
        let row_of = |src: usize| {
            let owned = g.owned_neighbours(src);
            let all = g.neighbours(src);
            let ghosts = &all[owned.len()..];
            let ghost_gids = if ghosts.is_empty() { &[][..] } else { layout.ghost_gids(src) };
            Row { owned, ghosts, ghost_gids, layers: g.layers_of(src) }
        };
        let view = View { g, st: &s.st, gone: &s.gone, base };
        let mut planned = Planned::default();
        // The rows of today's sources are scattered: in ascending order
        // (neighbouring sources share lines), each prefetched ahead.
        sources.sort_unstable_by_key(|&(src, _)| src);
        // The draws of each source (kept only when balancing, to charge its chunk).
        let mut per_source: Vec<u64> = Vec::new();
        let keep = bal.is_some();
        match &ctx.pool {
            None => {
                for (k, &(src, c)) in sources.iter().enumerate() {
                    layout.prefetch_ahead(&sources, k);
                    let n = rules.transmissions(gid(src as usize), &c, &row_of(src as usize), &view, &mut planned);
                    s.draws += n;
                    if keep {
                        per_source.push(n);
                    }
                }
            }
            Some(pool) => {
                let (vw, rl) = (&view, rules);
                let parts: Vec<(Vec<u64>, Planned)> = pool.install(|| {
                    sources
                        .par_chunks(256)
                        .map(|chunk| {
                            let mut p = Planned::default();
                            let mut d = Vec::with_capacity(chunk.len());
                            for (k, &(src, c)) in chunk.iter().enumerate() {
                                layout.prefetch_ahead(chunk, k);
                                d.push(rl.transmissions(gid(src as usize), &c, &row_of(src as usize), vw, &mut p));
                            }
                            (d, p)
                        })
                        .collect()
                });
                for (d, p) in parts {
                    s.draws += d.iter().sum::<u64>();
                    if keep {
                        per_source.extend(d);
                    }
                    planned.local.extend(p.local);
                    planned.remote.extend(p.remote);
                }
            }
        }
        if let Some(b) = bal.as_deref() {
            for (&(src, _), &n) in sources.iter().zip(&per_source) {
                work[chunk_of(src as usize, b)] += 1.0 + n as f64;
            }
        }
        let Planned { local: planned, remote } = planned;
        for (t, j) in planned {
            s.attempts[t as usize].push(j);
        }
        // 3. One message per neighbouring rank: attempts on its agents
        //    [day, global id] and our boundary agents that left S [MAX, global id].
        let npeers = g.peers().len();
        let mut out: Vec<Vec<[u32; 2]>> = vec![Vec::new(); npeers];
        for (t, gj, j) in remote {
            let q = if npeers == 1 { 0 } else { g.ghost_peer(j as usize) };
            out[q].push([t, gj]);
        }
        for &a in &s.left_s {
            let ga = gid(a as usize);
            if npeers == 1 {
                out[0].push([u32::MAX, ga]);
            } else if peer_mask.is_empty() {
                for (q, _) in g.ghosted_at(a as usize) {
                    out[q as usize].push([u32::MAX, ga]);
                }
            } else {
                let mut m = peer_mask[a as usize];
                while m != 0 {
                    out[m.trailing_zeros() as usize].push([u32::MAX, ga]);
                    m &= m - 1;
                }
            }
        }
        s.left_s.clear();
        s.changes_sent += out.iter().map(|v| v.len() as u64).sum::<u64>();
        let mut secs = t_day.elapsed().as_secs_f64();
        drop(compute);
        let got = g.exchange(comm, TAG_CHANGES, out)?;
        let compute = comm.clock().enter(Phase::Compute);
        let t_rest = std::time::Instant::now();
        for msgs in &got {
            for (k, &[t, gj]) in msgs.iter().enumerate() {
                // The ghosts that left S are scattered over the ghost table
                // and the bitset: the table's word is fetched 16 ahead, the
                // bitset's 8 ahead (found through the table, then in cache).
                if let Some(&[u32::MAX, far]) = msgs.get(k + 16) {
                    g.prefetch_ghost(far);
                }
                if let Some(&[u32::MAX, near]) = msgs.get(k + 8) {
                    if let Some(l) = g.ghost_local(near) {
                        parsim_core::mem::prefetch(&s.gone, (l - n_own) >> 6);
                    }
                }
                if t == u32::MAX {
                    s.mark_gone(g, gj);
                } else {
                    let j = match base {
                        Some(b) => gj - b,
                        None => g.local(gj).expect("an attempt on an owned agent") as u32,
                    };
                    s.attempts[t as usize].push(j);
                }
            }
        }
        let counts = &mut s.counts;
        // The targets are scattered: each one's state, infection day and
        // boundary flag are prefetched 16 ahead (an infection writes them).
        let todo = std::mem::take(&mut s.attempts[day as usize]);
        for (k, &j) in todo.iter().enumerate() {
            if let Some(&far) = todo.get(k + 16) {
                parsim_core::mem::prefetch(&s.st, far as usize);
                parsim_core::mem::prefetch(&s.inf_day, far as usize);
                layout.prefetch_boundary(far as usize);
            }
            let j = j as usize;
            if let Some(b) = bal.as_deref() {
                work[chunk_of(j, b)] += 1.0;
            }
            if s.st[j] == S {
                s.st[j] = E;
                s.inf_day[j] = day as u16;
                counts.s -= 1;
                counts.e += 1;
                counts.new += 1;
                if boundary(j) {
                    s.left_s.push(j as u32);
                }
                let o = rules.onset(gid(j), day, thr_sigma) as usize;
                if o < nd {
                    s.onset_at[o].push(j as u32);
                }
            }
        }
        secs += t_rest.elapsed().as_secs_f64();
        drop(compute);
        // Balancing: the day's measured compute time charged to the chunks
        // in proportion to their work (one unit per source, per draw and
        // per attempt handled); a slowed rank spins F − 1 times as long.
        if let Some(b) = bal.as_deref_mut() {
            if let Some((r, f)) = b.slow.filter(|&(r, f)| r == comm.rank() && f > 1.0) {
                let _c = comm.clock().enter(Phase::Compute);
                let until = std::time::Instant::now() + std::time::Duration::from_secs_f64(secs * (f - 1.0));
                while std::time::Instant::now() < until {
                    std::hint::spin_loop();
                }
                let _ = r;
                secs *= f;
            }
            b.record(g, &work, secs);
            let times = comm.all_gather(vec![secs])?;
            let (sum, max) = times.iter().fold((0.0, 0.0f64), |(s, m), t| (s + t[0], m.max(t[0])));
            eff.0 += if max > 0.0 { sum / times.len() as f64 / max } else { 1.0 };
            eff.1 += 1;
        }
        // 4. Global counts.
        let counts = s.counts;
        let c = [counts.s, counts.e, counts.i, counts.r, counts.v, counts.new, counts.isolated];
        let tot = comm.all_reduce(&c, ReduceOp::Sum)?;
        let dc = DayCounts { s: tot[0], e: tot[1], i: tot[2], r: tot[3], v: tot[4], new: tot[5], isolated: tot[6] };
        s.curve.push(dc);
        s.days = day + 1;
        if let Some(p) = progress.as_mut() {
            p(day + 1, cfg.days, &dc);
        }
        if dc.s + dc.e + dc.i + dc.r + dc.v != g.global_vertices() as u64 {
            return Err(AbmError::Invariant(format!(
                "day {}: S+E+I+R+V = {} but the population has {} agents",
                day + 1,
                dc.s + dc.e + dc.i + dc.r + dc.v,
                g.global_vertices()
            )));
        }
        let done = day + 1;
        if let Some(ck) = ck.as_deref_mut() {
            let act = ck.boundary(u64::from(done)).map_err(crate::resume::err)?;
            if act.bitflip && n_own > 0 {
                // An injected silent error: one agent's state changes
                // without its counts (detected at the next checkpoint).
                let a = (0..n_own).find(|&i| s.st[i] == S).unwrap_or(0);
                s.st[a] = if s.st[a] == S { R } else { S };
            }
            // Recounted before every checkpoint and at the end: a silent
            // error is never saved, nor reported as a result.
            if act.checkpoint || done == cfg.days {
                let mut counted = recount(&s.st, &s.iso_day, day);
                counted.new = counts.new;
                let bad = comm.all_reduce(&[u64::from(counted != counts)], ReduceOp::Max)?[0];
                if bad > 0 {
                    let here = if counted == counts {
                        "on another rank".to_string()
                    } else {
                        format!("the agents' states give {counted:?} but the run counted {counts:?}")
                    };
                    return Err(AbmError::Invariant(format!(
                        "day {done}: {here}: a silent error; the run rolls back to its last checkpoint"
                    )));
                }
            }
            if act.checkpoint && done < cfg.days {
                crate::resume::save(ck, &s.piece(g), g)?;
            }
        }
        if done < cfg.days {
            if let Some(b) = bal.as_deref_mut() {
                b.lb.step_done();
                if let Some(new) = b.lb.check(comm, u64::from(done), &b.owner)? {
                    return Ok(Some(new));
                }
            }
        }
    }
    Ok(None)
}
