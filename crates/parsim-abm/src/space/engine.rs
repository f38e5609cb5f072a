//! The engine: ghosts, neighbour search, the synchronous update, migration
//! of agents that cross chunk owners, and balancing at step boundaries.

use std::time::Instant;

use parsim_comm::{Comm, ReduceOp};
use parsim_core::rng::StreamKey;
use parsim_core::{wire, Digest, Digester, Phase, SetDigest};
use parsim_lb::Balancer;
use serde::Serialize;

use super::ddm::Routing;
use super::{Agent, Ctx, Domain, Near, Rule};
use crate::{AbmError, Result};

/// How a run goes.
#[derive(Clone, Debug, PartialEq)]
pub struct SpaceConfig {
    /// Agents (ids 0..agents).
    pub agents: u64,
    /// Steps to run.
    pub steps: u64,
    /// The seed of every draw.
    pub seed: u64,
    /// Balancing.
    pub lb: parsim_lb::Config,
    /// A slowed rank for tests of heterogeneous hardware: (rank, factor):
    /// that rank spins (factor − 1) times as long as each chunk took.
    pub slow: Option<(usize, f64)>,
    /// Call the observer every this many steps (0: only at the end).
    pub observe_every: u64,
}

impl Default for SpaceConfig {
    fn default() -> Self {
        SpaceConfig {
            agents: 1000,
            steps: 100,
            seed: 1,
            lb: parsim_lb::Config::default(),
            slow: None,
            observe_every: 0,
        }
    }
}

/// What the observer sees at a step boundary (collective: every rank is
/// called at the same steps).
pub struct View<'a, S> {
    /// Steps done.
    pub step: u64,
    /// This rank's agents.
    pub agents: &'a [Agent<S>],
    /// The chunk → rank map now.
    pub owner: &'a [u32],
    /// The domain.
    pub domain: &'a Domain,
}

/// Counters of a run (this rank's, except where noted).
#[derive(Clone, Debug, Default, Serialize, PartialEq)]
pub struct SpaceStats {
    /// Steps run.
    pub steps: u64,
    /// Agents (all ranks).
    pub agents: u64,
    /// Neighbour pairs seen (all ranks, all steps).
    pub pairs: u64,
    /// Ghost updates sent through interest management (all ranks).
    pub ghost_updates: u64,
    /// The updates an all-to-all broadcast would have sent (all ranks).
    pub broadcast_updates: u64,
    /// Ghost bytes sent (all ranks).
    pub ghost_bytes: u64,
    /// Seconds spent matching publications to subscriptions (rank 0).
    pub match_s: f64,
    /// Agents that migrated because they moved (all ranks).
    pub moved: u64,
    /// Mean over steps of mean/max compute time per rank.
    pub efficiency: f64,
    /// Compute seconds per rank, summed over steps.
    pub compute_s: Vec<f64>,
}

/// The end of a run.
pub struct SpaceRun<S> {
    /// The digest of every agent's final state (any p, any balancing).
    pub digest: Digest,
    /// This rank's agents at the end, grouped by chunk.
    pub agents: Vec<Agent<S>>,
    /// The final chunk → rank map.
    pub owner: Vec<u32>,
    /// Counters.
    pub stats: SpaceStats,
    /// What balancing did.
    pub lb: parsim_lb::Stats,
}

fn exchange<C: Comm, S: Serialize + serde::de::DeserializeOwned>(
    comm: &C,
    out: Vec<Vec<Agent<S>>>,
) -> Result<(Vec<Agent<S>>, u64)> {
    let mut bytes = 0u64;
    let parts = out
        .iter()
        .map(|v| if v.is_empty() { Ok(Vec::new()) } else { wire::encode(v) })
        .collect::<std::result::Result<Vec<_>, _>>()
        .map_err(|e| AbmError::Invariant(format!("encoding agents: {e}")))?;
    for p in &parts {
        bytes += p.len() as u64;
    }
    let got = comm.all_to_all_v(parts)?;
    let mut all = Vec::new();
    for g in got {
        if !g.is_empty() {
            let v: Vec<Agent<S>> =
                wire::decode(&g).map_err(|e| AbmError::Invariant(format!("decoding agents: {e}")))?;
            all.extend(v);
        }
    }
    Ok((all, bytes))
}

/// Agents grouped by chunk (a stable counting sort): the agents and the
/// chunk of each.
fn group<S>(domain: &Domain, agents: Vec<Agent<S>>) -> (Vec<Agent<S>>, Vec<u32>) {
    let chunks: Vec<u32> = agents.iter().map(|a| domain.chunk_of(&a.pos) as u32).collect();
    group_by(agents, chunks, domain.n_chunks())
}

fn group_by<S>(agents: Vec<Agent<S>>, chunks: Vec<u32>, n: usize) -> (Vec<Agent<S>>, Vec<u32>) {
    if chunks.windows(2).all(|w| w[0] <= w[1]) {
        return (agents, chunks);
    }
    let mut start = vec![0usize; n + 1];
    for &c in &chunks {
        start[c as usize + 1] += 1;
    }
    for i in 0..n {
        start[i + 1] += start[i];
    }
    let mut slot: Vec<usize> = vec![0; agents.len()];
    for (i, &c) in chunks.iter().enumerate() {
        slot[i] = start[c as usize];
        start[c as usize] += 1;
    }
    let mut out: Vec<Option<Agent<S>>> = (0..agents.len()).map(|_| None).collect();
    let mut oc = vec![0u32; agents.len()];
    for ((a, c), s) in agents.into_iter().zip(chunks).zip(slot) {
        out[s] = Some(a);
        oc[s] = c;
    }
    (out.into_iter().map(|a| a.expect("every slot filled once")).collect(), oc)
}

/// What a migration leaves on a rank.
struct Moved<S> {
    /// The rank's agents, grouped by chunk.
    agents: Vec<Agent<S>>,
    /// The chunk of each.
    chunks: Vec<u32>,
    /// Agents that left.
    sent: u64,
    /// Bytes sent.
    bytes: u64,
}

/// Sends every agent whose chunk `map` gives to another rank there.
fn migrate<C: Comm, S: Serialize + serde::de::DeserializeOwned>(
    comm: &C,
    domain: &Domain,
    agents: Vec<Agent<S>>,
    map: &[u32],
) -> Result<Moved<S>> {
    let me = comm.rank();
    let mut out: Vec<Vec<Agent<S>>> = (0..comm.size()).map(|_| Vec::new()).collect();
    let mut keep = Vec::with_capacity(agents.len());
    let mut chunks = Vec::with_capacity(agents.len());
    let mut sent = 0;
    for a in agents {
        let c = domain.chunk_of(&a.pos);
        let q = map[c] as usize;
        if q == me {
            keep.push(a);
            chunks.push(c as u32);
        } else {
            sent += 1;
            out[q].push(a);
        }
    }
    let (arrived, bytes) =
        if comm.size() > 1 { comm.clock().in_phase(Phase::Comm, || exchange(comm, out))? } else { (Vec::new(), 0) };
    for a in arrived {
        chunks.push(domain.chunk_of(&a.pos) as u32);
        keep.push(a);
    }
    let (agents, chunks) = group_by(keep, chunks, domain.n_chunks());
    Ok(Moved { agents, chunks, sent, bytes })
}

fn agent_digest<S: Serialize>(a: &Agent<S>) -> Result<u64> {
    let mut d = Digester::new();
    for a in a.pos.iter().chain(&a.vel) {
        d.write_f64(*a);
    }
    d.write_bytes(&wire::encode(&a.state).map_err(|e| AbmError::Invariant(e.to_string()))?);
    Ok(d.finish().0 as u64)
}

/// Runs `rule` on `domain` for `cfg.steps` steps. Collective: every rank
/// calls it with the same arguments; each builds only the agents of its
/// block of ids and sends them to their chunks' owners.
pub fn run<C: Comm, R: Rule>(
    comm: &C,
    domain: &Domain,
    rule: &R,
    cfg: &SpaceConfig,
    observe: &mut dyn FnMut(&View<'_, R::State>) -> Result<()>,
) -> Result<SpaceRun<R::State>> {
    let (me, p) = (comm.rank(), comm.size());
    cfg.lb.check(domain.n_chunks()).map_err(|(k, m)| AbmError::config(&k, m))?;
    if cfg.agents > 1 << 40 {
        return Err(AbmError::config("space.agents", format!("at most 2^40 agents, found {}", cfg.agents)));
    }
    let clock = comm.clock();
    let mut lb = Balancer::new(cfg.lb.clone(), domain.lb_chunks(), p, cfg.seed);
    let mut owner = lb.initial_map();
    let mut routing = Routing::new(domain, &owner, p);
    let mut stats = SpaceStats { agents: cfg.agents, compute_s: vec![0.0; p], ..SpaceStats::default() };
    stats.match_s += routing.match_s;
    let key = StreamKey::new(cfg.seed).purpose("parsim.space");

    // Initial agents: this rank's block of ids, sent to their owners.
    let (lo, hi) = (cfg.agents * me as u64 / p as u64, cfg.agents * (me as u64 + 1) / p as u64);
    let mut out: Vec<Vec<Agent<R::State>>> = (0..p).map(|_| Vec::new()).collect();
    for id in lo..hi {
        let mut rng = key.with(id).stream();
        let a = rule.init(id, domain, &mut rng);
        if a.id != id {
            return Err(AbmError::Invariant(format!("the rule's init gave agent {id} the id {}", a.id)));
        }
        if !domain.inside(&a.pos) {
            return Err(AbmError::config(
                "space.agents",
                format!(
                    "agent {id} starts at {:?}, outside the box {:?}",
                    &a.pos[..domain.dim],
                    &domain.size[..domain.dim]
                ),
            ));
        }
        out[owner[domain.chunk_of(&a.pos)] as usize].push(a);
    }
    let (arrived, _) = clock.in_phase(Phase::Comm, || exchange(comm, out))?;
    let (mut local, mut lchunk) = group(domain, arrived);

    let r2 = domain.radius * domain.radius;
    let n_cells = domain.n_cells();
    let mut eff_sum = 0.0;
    let (mut pairs, mut ghost_updates, mut broadcast, mut ghost_bytes, mut moved) = (0u64, 0u64, 0u64, 0u64, 0u64);
    let mut start = vec![0u32; n_cells + 1];
    for step in 0..cfg.steps {
        // 1. Ghosts to the ranks subscribed to each agent's cell.
        let ghosts = if p == 1 {
            Vec::new()
        } else {
            let _c = clock.enter(Phase::Comm);
            let mut out: Vec<Vec<Agent<R::State>>> = (0..p).map(|_| Vec::new()).collect();
            for a in &local {
                let c = domain.cell_index(domain.cell_of(&a.pos));
                for &q in routing.subscribers(c) {
                    if q as usize != me {
                        out[q as usize].push(a.clone());
                        ghost_updates += 1;
                    }
                }
            }
            broadcast += local.len() as u64 * (p as u64 - 1);
            let (g, b) = exchange(comm, out)?;
            ghost_bytes += b;
            g
        };
        // 2. A cell index over own agents and ghosts (own agents first).
        let t_index = Instant::now();
        let nl = local.len();
        let mut all = std::mem::take(&mut local);
        all.extend(ghosts);
        let cells: Vec<u32> = all.iter().map(|a| domain.cell_index(domain.cell_of(&a.pos)) as u32).collect();
        start.iter_mut().for_each(|s| *s = 0);
        for &c in &cells {
            start[c as usize + 1] += 1;
        }
        for i in 0..n_cells {
            start[i + 1] += start[i];
        }
        let mut fill = start.clone();
        let mut items = vec![0u32; cells.len()];
        for (i, &c) in cells.iter().enumerate() {
            items[fill[c as usize] as usize] = i as u32;
            fill[c as usize] += 1;
        }
        let index_s = t_index.elapsed().as_secs_f64();
        // 3. The synchronous update, chunk by chunk (each timed).
        let mut next: Vec<Agent<R::State>> = Vec::with_capacity(nl);
        let mut my_compute = index_s;
        {
            let _c = clock.enter(Phase::Compute);
            let mut near: Vec<Near<'_, R::State>> = Vec::new();
            let mut ncells: Vec<usize> = Vec::with_capacity(27);
            let mut i = 0;
            while i < nl {
                let chunk = lchunk[i];
                let t = Instant::now();
                let mut count = 0u64;
                while i < nl && lchunk[i] == chunk {
                    let me_a = &all[i];
                    domain.neighbour_cells(domain.cell_of(&me_a.pos), &mut ncells);
                    near.clear();
                    for &nc in &ncells {
                        for &j in &items[start[nc] as usize..start[nc + 1] as usize] {
                            let o = &all[j as usize];
                            if o.id == me_a.id {
                                continue;
                            }
                            let d = domain.displacement(&me_a.pos, &o.pos);
                            let d2 = d[0] * d[0] + d[1] * d[1] + d[2] * d[2];
                            if d2 <= r2 {
                                near.push(Near { agent: o, d, dist: d2.sqrt() });
                            }
                        }
                    }
                    near.sort_unstable_by_key(|n| n.agent.id);
                    count += 1 + near.len() as u64;
                    pairs += near.len() as u64;
                    let mut ctx = Ctx { step, domain, rng: key.with(me_a.id).with(step + 1).stream() };
                    let mut a = rule.step(me_a, &near, &mut ctx);
                    if a.id != me_a.id {
                        return Err(AbmError::Invariant(format!(
                            "step {step}: the rule changed agent {}'s id to {}",
                            me_a.id, a.id
                        )));
                    }
                    if a.pos.iter().chain(&a.vel).any(|x| !x.is_finite()) {
                        return Err(AbmError::Invariant(format!(
                            "step {step}: the rule gave agent {} a non-finite position or velocity (pos {:?}, vel {:?})",
                            a.id, a.pos, a.vel
                        )));
                    }
                    domain.contain(&mut a.pos, &mut a.vel);
                    next.push(a);
                    i += 1;
                }
                let mut secs = t.elapsed().as_secs_f64();
                if let Some((r, f)) = cfg.slow {
                    if r == me && f > 1.0 {
                        let until = Instant::now() + std::time::Duration::from_secs_f64(secs * (f - 1.0));
                        while Instant::now() < until {
                            std::hint::spin_loop();
                        }
                        secs *= f;
                    }
                }
                my_compute += secs;
                lb.record(chunk as usize, secs, count as f64);
            }
        }
        drop(all);
        // 4. Agents that crossed into another rank's chunk migrate.
        let m = migrate(comm, domain, next, &owner)?;
        (local, lchunk) = (m.agents, m.chunks);
        moved += m.sent;
        // Per-step efficiency: mean / max compute.
        let times = comm.all_gather(vec![my_compute])?;
        let (mut sum, mut max) = (0.0, 0.0f64);
        for (r, t) in times.iter().enumerate() {
            sum += t[0];
            max = max.max(t[0]);
            stats.compute_s[r] += t[0];
        }
        eff_sum += if max > 0.0 { sum / p as f64 / max } else { 1.0 };
        lb.step_done();
        if cfg!(debug_assertions) {
            let n = comm.all_reduce(&[local.len() as u64], ReduceOp::Sum)?[0];
            if n != cfg.agents {
                return Err(AbmError::Invariant(format!("step {step}: {n} agents, expected {}", cfg.agents)));
            }
        }
        // 5. Balancing at the step boundary.
        if let Some(new) = lb.check(comm, step + 1, &owner)? {
            let t = Instant::now();
            let m = migrate(comm, domain, local, &new)?;
            (local, lchunk) = (m.agents, m.chunks);
            let bytes = m.bytes;
            owner = new;
            routing = Routing::new(domain, &owner, p);
            stats.match_s += routing.match_s;
            lb.migrated(comm, bytes, t.elapsed().as_secs_f64())?;
        }
        if cfg.observe_every > 0 && (step + 1) % cfg.observe_every == 0 && step + 1 < cfg.steps {
            observe(&View { step: step + 1, agents: &local, owner: &owner, domain })?;
        }
    }
    observe(&View { step: cfg.steps, agents: &local, owner: &owner, domain })?;
    let n = comm.all_reduce(&[local.len() as u64], ReduceOp::Sum)?[0];
    if n != cfg.agents {
        return Err(AbmError::Invariant(format!("{n} agents at the end, expected {}", cfg.agents)));
    }
    let mut set = SetDigest::new();
    for a in &local {
        set.add(a.id, agent_digest(a)?);
    }
    let all = comm.all_merge_digest(&set)?;
    let mut d = Digester::new();
    d.write_str("parsim.space");
    d.write_u64(cfg.steps);
    d.write_u64(cfg.agents);
    d.write_u64(all.parts[0]);
    d.write_u64(all.parts[1]);
    let sums = comm.all_reduce(&[pairs, ghost_updates, broadcast, ghost_bytes, moved], ReduceOp::Sum)?;
    stats.steps = cfg.steps;
    stats.pairs = sums[0];
    stats.ghost_updates = sums[1];
    stats.broadcast_updates = sums[2];
    stats.ghost_bytes = sums[3];
    stats.moved = sums[4];
    stats.efficiency = if cfg.steps > 0 { eff_sum / cfg.steps as f64 } else { 1.0 };
    Ok(SpaceRun { digest: d.finish(), agents: local, owner, stats, lb: lb.stats().clone() })
}
