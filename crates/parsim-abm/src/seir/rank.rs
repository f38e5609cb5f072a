//! One rank's epidemic state between days, in local ids, and its
//! canonical form (global ids) for checkpoints and migrations.

use parsim_graph::DistGraph;

use super::state::S;
use super::{draw, recount, DayCounts, K_VACCINATE, NEVER};
use crate::config::SeirConfig;

/// One rank's state between days, in the local ids of its part of the graph.
pub(crate) struct State {
    /// Days done.
    pub days: u32,
    pub st: Vec<u8>,
    pub inf_day: Vec<u16>,
    /// Empty without isolation.
    pub iso_day: Vec<u32>,
    /// Progression and infection attempts scheduled per day (owned agents).
    pub onset_at: Vec<Vec<u32>>,
    pub iso_at: Vec<Vec<u32>>,
    pub exit_at: Vec<Vec<u32>>,
    pub attempts: Vec<Vec<u32>>,
    pub counts: DayCounts,
    /// Vaccination days of owned agents, drawn once (day, local id), and the next.
    pub vacc: Vec<(u32, u32)>,
    pub vacc_at: usize,
    pub curve: Vec<DayCounts>,
    /// Ghosts announced to have left S, a bitset over ghost numbers (local id − owned).
    pub gone: Vec<u64>,
    /// Owned boundary agents that left S since the last exchange.
    pub left_s: Vec<u32>,
    pub draws: u64,
    pub changes_sent: u64,
}

impl State {
    /// Records that ghost `gid` (a global id) left S.
    pub(crate) fn mark_gone(&mut self, g: &DistGraph, gid: u32) {
        if let Some(j) = g.ghost_local(gid).map(|l| l - g.owned()) {
            self.gone[j >> 6] |= 1 << (j & 63);
        }
    }

    /// Day 0: everybody susceptible.
    pub(crate) fn fresh(g: &DistGraph, cfg: &SeirConfig) -> State {
        let (n_own, nd) = (g.owned(), cfg.days as usize);
        State {
            days: 0,
            st: vec![S; n_own],
            inf_day: vec![NEVER; n_own],
            iso_day: if cfg.isolation.is_some() { vec![u32::MAX; n_own] } else { Vec::new() },
            onset_at: vec![Vec::new(); nd],
            iso_at: vec![Vec::new(); nd],
            exit_at: vec![Vec::new(); nd],
            attempts: vec![Vec::new(); nd],
            counts: DayCounts { s: n_own as u64, ..DayCounts::default() },
            vacc: vaccination_days(g, cfg),
            vacc_at: 0,
            curve: Vec::with_capacity(nd),
            gone: vec![0; g.ghosts().div_ceil(64)],
            left_s: Vec::new(),
            draws: 0,
            changes_sent: 0,
        }
    }

    /// The state `got` (this rank's share of a canonical state) on `g`.
    pub(crate) fn restored(g: &DistGraph, cfg: &SeirConfig, got: crate::resume::Restored) -> State {
        let mut s = State::fresh(g, cfg);
        s.days = got.days;
        s.curve = got.curve;
        for (l, st, inf, isod) in got.owned {
            s.st[l] = st;
            s.inf_day[l] = inf;
            if cfg.isolation.is_some() {
                s.iso_day[l] = isod;
            }
        }
        s.left_s = got.unannounced.into_iter().filter(|&l| g.is_boundary(l)).map(|l| l as u32).collect();
        for (into, from) in [
            (&mut s.onset_at, got.onset),
            (&mut s.iso_at, got.iso),
            (&mut s.exit_at, got.exit),
            (&mut s.attempts, got.attempts),
        ] {
            for (t, l) in from {
                into[t as usize].push(l as u32);
            }
        }
        s.counts = recount(&s.st, &s.iso_day, s.days.saturating_sub(1));
        (s.draws, s.changes_sent) = (got.draws, got.changes_sent);
        while s.vacc_at < s.vacc.len() && s.vacc[s.vacc_at].0 < s.days {
            s.vacc_at += 1;
        }
        s
    }

    /// This rank's share in canonical form (global ids), for a checkpoint
    /// or a migration.
    pub(crate) fn piece(&self, g: &DistGraph) -> crate::resume::Piece {
        let left: std::collections::HashSet<u32> = self.left_s.iter().copied().collect();
        let done = self.days as usize;
        crate::resume::Piece {
            days: self.days,
            curve: self.curve.iter().map(|c| [c.s, c.e, c.i, c.r, c.v, c.new, c.isolated]).collect(),
            agents: (0..g.owned())
                .map(|i| {
                    let isod = self.iso_day.get(i).copied().unwrap_or(u32::MAX);
                    let st = self.st[i];
                    (g.global(i), st, self.inf_day[i], isod, st != S && !left.contains(&(i as u32)))
                })
                .collect(),
            onset: crate::resume::schedule(&self.onset_at, done, g),
            iso: crate::resume::schedule(&self.iso_at, done, g),
            exit: crate::resume::schedule(&self.exit_at, done, g),
            attempts: crate::resume::schedule(&self.attempts, done, g),
            draws: self.draws,
            changes_sent: self.changes_sent,
        }
    }
}

/// Vaccination days, drawn once per owned agent (equivalent to a daily
/// Bernoulli(rate)), as (day, local id) in day order.
fn vaccination_days(g: &DistGraph, cfg: &SeirConfig) -> Vec<(u32, u32)> {
    let key = [cfg.seed as u32, (cfg.seed >> 32) as u32];
    let mut vacc = Vec::new();
    if let Some(v) = cfg.vaccination.as_ref().filter(|v| v.rate > 0.0) {
        for i in 0..g.owned() {
            let u = (f64::from(draw(key, 0, K_VACCINATE, g.global(i), 0)) + 1.0) / 4_294_967_296.0;
            let k = if v.rate >= 1.0 { 0.0 } else { (u.ln() / (1.0 - v.rate).ln()).floor() };
            let day = f64::from(v.from) + k;
            if day < f64::from(v.to) {
                vacc.push((day as u32, i as u32));
            }
        }
        vacc.sort_unstable();
    }
    vacc
}
