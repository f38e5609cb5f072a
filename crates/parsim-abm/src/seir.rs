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
//! (day, kind, agent, neighbour) — global ids — so the trajectory is bit
//! identical for any number of ranks, partition, backend and threads.

use parsim_comm::{Comm, ReduceOp};
use parsim_core::rng::{philox4x32_10, StreamKey};
use parsim_core::{Digest, Digester, Phase, SetDigest};
use parsim_graph::DistGraph;
use rayon::prelude::*;

use crate::config::{SeirConfig, Variant};
use crate::error::{AbmError, Result};
use crate::population::Population;

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
    /// Transmission draws made, all ranks.
    pub transmission_checks: u64,
    /// Boundary-state changes this rank sent (one per receiving rank).
    pub changes_sent: u64,
    /// Agents.
    pub agents: u64,
}

/// Called after each day with (days done, days, that day's counts).
pub type Progress<'a> = &'a mut dyn FnMut(u32, u32, &DayCounts);

#[inline]
fn draw(key: [u32; 2], day: u32, kind: u32, a: u32, b: u32) -> u32 {
    philox4x32_10([day, kind, a, b], key)[0]
}

/// P(draw < threshold) = p, to 2⁻³².
fn threshold(p: f64) -> u64 {
    (p.clamp(0.0, 1.0) * 4_294_967_296.0).round() as u64
}

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

/// Runs `cfg` on this rank's part `g` of `pop`'s network. Every rank calls
/// it with the same arguments; `progress(day, days)` is called after each day.
pub fn run<C: Comm>(
    comm: &C,
    pop: &Population,
    g: &DistGraph,
    cfg: &SeirConfig,
    mut progress: Option<Progress<'_>>,
) -> Result<SeirResult> {
    cfg.check(pop.layers.len())?;
    if pop.layers.len() > 8 {
        return Err(AbmError::config("layers", "at most 8 contact layers"));
    }
    let key = [cfg.seed as u32, (cfg.seed >> 32) as u32];
    let n_own = g.owned();
    let n_loc = n_own + g.ghosts();
    // No closure reaches day u32::MAX: every layer.
    let all_layers = cfg.open_layers(u32::MAX, pop.layers.len());
    let thr: Vec<u64> = pop.layers.iter().map(|l| threshold(l.probability(cfg.beta))).collect();
    let mut st = vec![S; n_own];
    let mut mark = vec![0u16; n_own];
    let mut inf_day = vec![NEVER; n_own];
    let mut mask = vec![0u8; n_loc];
    let iso = cfg.isolation.as_ref();
    let mut iso_day = if iso.is_some() { vec![NEVER; n_own] } else { Vec::new() };
    let (mut e_list, mut i_list, mut ghost_inf): (Vec<u32>, Vec<u32>, Vec<u32>) = (Vec::new(), Vec::new(), Vec::new());
    let mut counts = DayCounts { s: n_own as u64, ..DayCounts::default() };
    // Vaccination days, drawn once per agent (equivalent to a daily Bernoulli(rate)).
    let mut vacc: Vec<(u16, u32)> = Vec::new();
    if let Some(v) = &cfg.vaccination {
        if v.rate > 0.0 {
            for i in 0..n_own {
                let u = (f64::from(draw(key, 0, K_VACCINATE, g.global(i), 0)) + 1.0) / 4_294_967_296.0;
                let k = if v.rate >= 1.0 { 0.0 } else { (u.ln() / (1.0 - v.rate).ln()).floor() };
                let day = f64::from(v.from) + k;
                if day < f64::from(v.to) {
                    vacc.push((day as u16, i as u32));
                }
            }
            vacc.sort_unstable();
        }
    }
    let mut vacc_at = 0usize;
    let (thr_sigma, thr_gamma) = match cfg.variant {
        Variant::Markov { sigma, gamma } => (threshold(sigma), threshold(gamma)),
        Variant::Fixed { .. } => (0, 0),
    };
    let thr_detect = iso.map_or(0, |i| threshold(i.detect));
    let mut curve = Vec::with_capacity(cfg.days as usize);
    let mut changes: Vec<(u32, u8)> = Vec::new();
    let (mut checks, mut changes_sent) = (0u64, 0u64);
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
    for day in 0..cfg.days {
        let t = day as u16;
        let compute = comm.clock().enter(Phase::Compute);
        changes.clear();
        counts.new = 0;
        if day == 0 {
            for a in seeds(g.global_vertices(), cfg.seeds, cfg.seed) {
                if let Some(i) = g.local(a).filter(|&i| i < n_own) {
                    st[i] = E;
                    mark[i] = 0;
                    inf_day[i] = 0;
                    e_list.push(i as u32);
                    counts.s -= 1;
                    counts.e += 1;
                    counts.new += 1;
                }
            }
        }
        // 1. Progression: I first (so that today's new I do not also recover), then E.
        let boundary = |i: usize| g.is_boundary(i);
        i_list.retain(|&a| {
            let a = a as usize;
            let exit = match cfg.variant {
                Variant::Fixed { infectious, .. } => u32::from(t) == u32::from(mark[a]) + infectious,
                Variant::Markov { .. } => {
                    t > mark[a] && u64::from(draw(key, day, K_RECOVER, g.global(a), 0)) < thr_gamma
                }
            };
            if exit {
                if iso.is_some() && iso_day[a] < t {
                    counts.isolated -= 1;
                }
                st[a] = R;
                counts.i -= 1;
                counts.r += 1;
                if mask[a] != 0 && boundary(a) {
                    changes.push((a as u32, 0));
                }
                mask[a] = 0;
                return false;
            }
            if let Some(is) = iso {
                if iso_day[a] == t {
                    counts.isolated += 1;
                    if mask[a] != is.keep && boundary(a) {
                        changes.push((a as u32, is.keep));
                    }
                    mask[a] = is.keep;
                }
            }
            true
        });
        e_list.retain(|&a| {
            let a = a as usize;
            let go = match cfg.variant {
                Variant::Fixed { latent, .. } => u32::from(t) == u32::from(mark[a]) + latent,
                Variant::Markov { .. } => t > mark[a] && u64::from(draw(key, day, K_ONSET, g.global(a), 0)) < thr_sigma,
            };
            if go {
                st[a] = I;
                mark[a] = t;
                counts.e -= 1;
                counts.i += 1;
                let mut m = all_layers;
                if let Some(is) = iso {
                    if u64::from(draw(key, 0, K_DETECT, g.global(a), 0)) < thr_detect {
                        iso_day[a] = (u32::from(t) + is.delay).min(u32::from(NEVER) - 1) as u16;
                        if is.delay == 0 {
                            m = is.keep;
                            counts.isolated += 1;
                        }
                    }
                }
                mask[a] = m;
                if m != 0 && boundary(a) {
                    changes.push((a as u32, m));
                }
                i_list.push(a as u32);
            }
            !go
        });
        while vacc_at < vacc.len() && vacc[vacc_at].0 == t {
            let a = vacc[vacc_at].1 as usize;
            if st[a] == S {
                st[a] = V;
                counts.s -= 1;
                counts.v += 1;
            }
            vacc_at += 1;
        }
        drop(compute);
        // 2. Exchange what changed on the boundary.
        changes_sent += changes.iter().map(|&(a, _)| g.ghosted_at(a as usize).len() as u64).sum::<u64>();
        let upd = g.exchange_changes(comm, TAG_CHANGES, &changes)?;
        let compute = comm.clock().enter(Phase::Compute);
        for (l, m) in upd {
            if mask[l as usize] == 0 && m != 0 {
                ghost_inf.push(l);
            }
            mask[l as usize] = m;
        }
        ghost_inf.retain(|&l| mask[l as usize] != 0);
        // 3. Transmission.
        let open = cfg.open_layers(day, pop.layers.len());
        // Sources in id order: their rows are read in address order.
        i_list.sort_unstable();
        ghost_inf.sort_unstable();
        let base = g.owned_base();
        let try_source = |src: usize, targets: &[u32], layers: Option<&[u8]>, st: &[u8], out: &mut Vec<u32>| -> u64 {
            let m = mask[src] & open;
            if m == 0 {
                return 0;
            }
            let gs = g.global(src);
            let mut c = 0u64;
            for (k, &j) in targets.iter().enumerate() {
                let j = j as usize;
                if j >= n_own || st[j] != S {
                    continue;
                }
                let l = layers.map_or(0, |ls| ls[k]);
                if m >> l & 1 == 0 {
                    continue;
                }
                c += 1;
                let gj = match base {
                    Some(b) => b + j as u32,
                    None => g.global(j),
                };
                if u64::from(draw(key, day, K_TRANSMIT, gs, gj)) < thr[l as usize] {
                    out.push(j as u32);
                }
            }
            c
        };
        let owned_targets = |a: usize| (g.neighbours(a), g.layers_of(a));
        let mut infected: Vec<u32> = Vec::new();
        match &pool {
            None => {
                for &a in &i_list {
                    let (ts, ls) = owned_targets(a as usize);
                    checks += try_source(a as usize, ts, ls, &st, &mut infected);
                }
                for &h in &ghost_inf {
                    let (ts, ls) = g.ghost_row(h as usize);
                    checks += try_source(h as usize, ts, ls, &st, &mut infected);
                }
            }
            Some(pool) => {
                let sources: Vec<u32> = i_list.iter().chain(&ghost_inf).copied().collect();
                let stv = &st;
                let parts: Vec<(u64, Vec<u32>)> = pool.install(|| {
                    sources
                        .par_chunks(1024)
                        .map(|chunk| {
                            let mut out = Vec::new();
                            let mut c = 0;
                            for &s in chunk {
                                let s = s as usize;
                                let (ts, ls) = if s < n_own { owned_targets(s) } else { g.ghost_row(s) };
                                c += try_source(s, ts, ls, stv, &mut out);
                            }
                            (c, out)
                        })
                        .collect()
                });
                for (c, out) in parts {
                    checks += c;
                    infected.extend(out);
                }
            }
        }
        for j in infected {
            let j = j as usize;
            if st[j] == S {
                st[j] = E;
                mark[j] = t;
                inf_day[j] = t;
                e_list.push(j as u32);
                counts.s -= 1;
                counts.e += 1;
                counts.new += 1;
            }
        }
        drop(compute);
        // 4. Global counts.
        let c = [counts.s, counts.e, counts.i, counts.r, counts.v, counts.new, counts.isolated];
        let tot = comm.all_reduce(&c, ReduceOp::Sum)?;
        let dc = DayCounts { s: tot[0], e: tot[1], i: tot[2], r: tot[3], v: tot[4], new: tot[5], isolated: tot[6] };
        curve.push(dc);
        if let Some(p) = progress.as_mut() {
            p(day + 1, cfg.days, &dc);
        }
    }
    // Final states, degrees, digest.
    let mut sd = SetDigest::new();
    let mut maxdeg = 0u64;
    for i in 0..n_own {
        sd.add(u64::from(g.global(i)), u64::from(st[i]) | u64::from(inf_day[i]) << 8);
        maxdeg = maxdeg.max(g.neighbours(i).len() as u64);
    }
    let maxdeg = comm.all_reduce(&[maxdeg], ReduceOp::Max)?[0] as usize;
    let mut hist = vec![0u64; 2 * (maxdeg + 1)];
    for i in 0..n_own {
        let k = g.neighbours(i).len();
        hist[2 * k] += 1;
        hist[2 * k + 1] += u64::from(inf_day[i] != NEVER);
    }
    let hist = comm.all_reduce(&hist, ReduceOp::Sum)?;
    let checks = comm.all_reduce(&[checks], ReduceOp::Sum)?[0];
    // Merged in rank order (merging is commutative: any order gives the same digest).
    let all = comm.all_gather(vec![sd.parts[0], sd.parts[1]])?;
    let mut total = SetDigest::new();
    for p in all {
        total.merge(&SetDigest { parts: [p[0], p[1]] });
    }
    let mut d = Digester::new();
    d.write_str("seir-net-v1");
    for c in &curve {
        for x in [c.s, c.e, c.i, c.r, c.v, c.new, c.isolated] {
            d.write_u64(x);
        }
    }
    d.write_u64(total.parts[0]);
    d.write_u64(total.parts[1]);
    Ok(SeirResult {
        curve,
        digest: d.finish(),
        by_degree: hist.chunks_exact(2).map(|c| (c[0], c[1])).collect(),
        transmission_checks: checks,
        changes_sent,
        agents: g.global_vertices() as u64,
    })
}
