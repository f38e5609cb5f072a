//! The balancer an engine drives: it accumulates each chunk's measured
//! load, and at every check reduces the loads over the ranks (so every
//! rank holds the same numbers), measures λ, decides whether to act and
//! computes the new map, identically on every rank.

use std::time::Instant;

use parsim_comm::{Comm, CommError, ReduceOp};
use serde::Serialize;

use crate::config::{Config, Measure, Predict, Strategy, When};
use crate::predict::{Forecast, Predictor};
use crate::strategy::{self, imbalance, rank_loads, GraphCost};
use crate::Chunks;

/// One rebalance.
#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct Rebalance {
    /// The step it happened after.
    pub step: u64,
    /// λ measured over the interval before it.
    pub lambda_before: f64,
    /// λ of the same loads under the new map.
    pub lambda_after: f64,
    /// Chunks that changed owner.
    pub chunks: u64,
    /// Bytes sent to move them (all ranks).
    pub bytes: u64,
    /// Time to decide, and to migrate (the slowest rank's).
    pub decide_s: f64,
    /// Time to migrate (the slowest rank's).
    pub migrate_s: f64,
}

/// What a run's balancing did (`summary.json`'s `lb`).
#[derive(Clone, Debug, Default, Serialize, PartialEq)]
pub struct Stats {
    /// The strategy's name.
    pub strategy: String,
    /// Checks made (one per `every` steps).
    pub checks: u64,
    /// Rebalances done.
    pub rebalances: u64,
    /// Chunks moved, over all rebalances.
    pub chunks_migrated: u64,
    /// Bytes moved, over all rebalances.
    pub bytes_migrated: u64,
    /// Time spent deciding (this rank).
    pub decide_s: f64,
    /// Time spent migrating (slowest rank, summed over rebalances).
    pub migrate_s: f64,
    /// λ measured at every check: (step, λ).
    pub lambda: Vec<(u64, f64)>,
    /// Every rebalance.
    pub events: Vec<Rebalance>,
}

/// The balancer.
///
/// ```
/// use parsim_lb::{Balancer, Chunks, Config, Strategy};
/// let cfg = Config { strategy: Strategy::Greedy, every: 1, ..Config::default() };
/// let out = parsim_comm::launch(2, |c| {
///     let mut lb = Balancer::new(cfg.clone(), Chunks::grid([4, 1, 1], false), 2, 0);
///     let owner = lb.initial_map();
///     // Rank 0's chunks are three times as costly.
///     for chunk in 0..4 {
///         if owner[chunk] as usize == parsim_comm::Comm::rank(&c) {
///             lb.record(chunk, if owner[chunk] == 0 { 3.0 } else { 1.0 }, 0.0);
///         }
///     }
///     lb.step_done();
///     lb.check(&c, 1, &owner)
/// }).unwrap();
/// let new = out[0].clone().expect("rebalanced");
/// assert_eq!(out[1].as_ref(), Some(&new));
/// // Greedy deals the costly chunks 0 and 1 to different ranks.
/// assert_ne!(new[0], new[1]);
/// assert_eq!(new.iter().filter(|&&r| r == 0).count(), 2);
/// ```
pub struct Balancer {
    cfg: Config,
    chunks: Chunks,
    ranks: usize,
    seed: u64,
    time: Vec<f64>,
    count: Vec<f64>,
    steps: u64,
    predict_time: Option<Predictor>,
    predict_count: Option<Predictor>,
    last_cost: f64,
    stats: Stats,
}

impl Balancer {
    /// A balancer for `chunks` over `ranks` ranks (`seed` seeds `graph`).
    pub fn new(cfg: Config, chunks: Chunks, ranks: usize, seed: u64) -> Self {
        let n = chunks.len();
        let forecast = match cfg.predict {
            Predict::None => None,
            Predict::Smooth => Some(Forecast::Smooth(cfg.smoothing)),
            Predict::Trend => Some(Forecast::Trend(cfg.window)),
        };
        let stats = Stats { strategy: name(&cfg), ..Stats::default() };
        Balancer {
            predict_time: forecast.map(|f| Predictor::new(f, n)),
            predict_count: forecast.map(|f| Predictor::new(f, n)),
            cfg,
            chunks,
            ranks,
            seed,
            time: vec![0.0; n],
            count: vec![0.0; n],
            steps: 0,
            last_cost: 0.0,
            stats,
        }
    }

    /// The map a run starts from: the Hilbert order cut into runs of equal
    /// chunk counts.
    pub fn initial_map(&self) -> Vec<u32> {
        strategy::initial(&self.chunks, self.ranks)
    }

    /// The chunks.
    pub fn chunks(&self) -> &Chunks {
        &self.chunks
    }

    /// The configuration.
    pub fn config(&self) -> &Config {
        &self.cfg
    }

    /// Adds a measurement of one of this rank's chunks for the current step:
    /// compute seconds and the model's count.
    #[inline]
    pub fn record(&mut self, chunk: usize, secs: f64, count: f64) {
        self.time[chunk] += secs;
        self.count[chunk] += count;
    }

    /// Ends a step.
    pub fn step_done(&mut self) {
        self.steps += 1;
    }

    /// Whether the next [`check`](Self::check) acts (every `every` steps).
    pub fn due(&self) -> bool {
        self.steps >= self.cfg.every
    }

    /// Collective: at a step boundary every rank calls it with the same map.
    /// When a check is due it reduces the loads, records λ and, if the
    /// policy says so, returns the new map (equal on every rank); the
    /// engine migrates and then calls [`migrated`](Self::migrated).
    pub fn check<C: Comm>(&mut self, comm: &C, step: u64, owner: &[u32]) -> Result<Option<Vec<u32>>, CommError> {
        if !self.due() {
            return Ok(None);
        }
        let n = self.chunks.len();
        let mut local = std::mem::replace(&mut self.time, vec![0.0; n]);
        local.extend(std::mem::replace(&mut self.count, vec![0.0; n]));
        let per = 1.0 / self.steps as f64;
        self.steps = 0;
        let all = comm.all_reduce(&local, ReduceOp::Sum)?;
        let t0 = Instant::now();
        let mut time: Vec<f64> = all[..n].iter().map(|x| x * per).collect();
        let mut count: Vec<f64> = all[n..].iter().map(|x| x * per).collect();
        let measured = match self.cfg.measure {
            Measure::Count => count.clone(),
            _ => time.clone(),
        };
        let before = rank_loads(&measured, owner, self.ranks);
        let lambda = imbalance(&before);
        self.stats.checks += 1;
        self.stats.lambda.push((step, lambda));
        if let (Some(pt), Some(pc)) = (&mut self.predict_time, &mut self.predict_count) {
            pt.observe(&time);
            pc.observe(&count);
            time = pt.forecast();
            count = pc.forecast();
        }
        let loads = match self.cfg.measure {
            Measure::Count => count.clone(),
            _ => time.clone(),
        };
        let act = match self.cfg.when {
            _ if self.cfg.strategy == Strategy::Off || self.ranks < 2 => false,
            When::Every => true,
            When::Threshold => lambda > self.cfg.threshold,
            // Above timing noise; the saving is weighed against the cost below.
            When::Auto => lambda > 1.02,
        };
        let mut out = None;
        if act {
            let new = self.decide(&loads, &time, &count, owner);
            let after = rank_loads(&loads, &new, self.ranks);
            let (max_b, max_a) = (max(&rank_loads(&loads, owner, self.ranks)), max(&after));
            let saved = (max_b - max_a) * self.cfg.every as f64;
            let worth = max_a < 0.99 * max_b && (self.cfg.when != When::Auto || saved > self.last_cost);
            let moved = new.iter().zip(owner).filter(|(a, b)| a != b).count() as u64;
            if worth && moved > 0 {
                self.stats.events.push(Rebalance {
                    step,
                    lambda_before: lambda,
                    lambda_after: imbalance(&rank_loads(&measured, &new, self.ranks)),
                    chunks: moved,
                    bytes: 0,
                    decide_s: 0.0,
                    migrate_s: 0.0,
                });
                self.stats.rebalances += 1;
                self.stats.chunks_migrated += moved;
                out = Some(new);
            }
        }
        let d = t0.elapsed().as_secs_f64();
        self.stats.decide_s += d;
        if let Some(e) = self.stats.events.last_mut().filter(|_| out.is_some()) {
            e.decide_s = d;
        }
        Ok(out)
    }

    fn decide(&self, loads: &[f64], time: &[f64], count: &[f64], owner: &[u32]) -> Vec<u32> {
        let (c, p) = (&self.chunks, self.ranks);
        match self.cfg.strategy {
            Strategy::Off => owner.to_vec(),
            Strategy::Diffusive => strategy::diffusive(c, loads, owner, p),
            Strategy::Sfc => strategy::relabel(&strategy::sfc(c, loads, p), owner, loads, p),
            Strategy::Greedy => strategy::relabel(&strategy::greedy(loads, p), owner, loads, p),
            Strategy::Refine => strategy::refine(loads, owner, p, self.cfg.threshold),
            Strategy::Steal => strategy::steal(c, loads, owner, p),
            Strategy::Graph => {
                let cost = GraphCost { alpha: self.cfg.alpha, imbalance: self.cfg.imbalance, seed: self.seed };
                if self.cfg.measure == Measure::Both {
                    let both: Vec<f64> = time.iter().zip(count).flat_map(|(&t, &n)| [t, n]).collect();
                    strategy::graph(c, &both, 2, owner, p, cost)
                } else {
                    strategy::graph(c, loads, 1, owner, p, cost)
                }
            }
        }
    }

    /// Collective: after migrating for the last rebalance, records the bytes
    /// this rank sent and its migration time (summed and maxed over ranks);
    /// the cost `auto` weighs the next saving against is decide + migrate,
    /// both the slowest rank's, so that every rank weighs the same cost
    /// (each rank's own decide time made the ranks disagree on whether to
    /// rebalance, and their collectives then no longer matched).
    pub fn migrated<C: Comm>(&mut self, comm: &C, bytes: u64, secs: f64) -> Result<(), CommError> {
        let b = comm.all_reduce(&[bytes], ReduceOp::Sum)?[0];
        let decide = self.stats.events.last().map_or(0.0, |e| e.decide_s);
        let slowest = comm.all_reduce(&[secs, decide], ReduceOp::Max)?;
        let (s, d) = (slowest[0], slowest[1]);
        self.stats.bytes_migrated += b;
        self.stats.migrate_s += s;
        if let Some(e) = self.stats.events.last_mut() {
            e.bytes = b;
            e.migrate_s = s;
            e.decide_s = d;
            self.last_cost = d + s;
        }
        Ok(())
    }

    /// What balancing did so far.
    pub fn stats(&self) -> &Stats {
        &self.stats
    }
}

fn max(v: &[f64]) -> f64 {
    v.iter().copied().fold(0.0, f64::max)
}

fn name(cfg: &Config) -> String {
    let s = format!("{:?}", cfg.strategy).to_lowercase();
    match cfg.predict {
        Predict::None => s,
        p => format!("predictive({s}, {})", format!("{p:?}").to_lowercase()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `when = "auto"` weighs a saving against the last rebalance's cost:
    /// that cost must be the same on every rank, or the ranks disagree on
    /// whether to rebalance and their collectives stop matching. Here the
    /// ranks' own decide and migrate times differ by 100×.
    #[test]
    fn the_cost_auto_weighs_is_the_same_on_every_rank() {
        let cfg = Config { strategy: Strategy::Greedy, every: 1, ..Config::default() };
        let costs = parsim_comm::launch(3, |c| {
            let me = parsim_comm::Comm::rank(&c);
            let mut lb = Balancer::new(cfg.clone(), Chunks::grid([6, 1, 1], false), 3, 0);
            let owner = lb.initial_map();
            for chunk in 0..6 {
                if owner[chunk] as usize == me {
                    lb.record(chunk, if owner[chunk] == 0 { 5.0 } else { 1.0 }, 0.0);
                }
            }
            lb.step_done();
            let new = lb.check(&c, 1, &owner)?;
            assert!(new.is_some(), "the costly rank's chunks move");
            lb.stats.events.last_mut().expect("an event").decide_s = 0.001 * 10f64.powi(me as i32);
            lb.migrated(&c, 100, 0.002 * 10f64.powi(2 - me as i32))?;
            Ok::<_, CommError>(lb.last_cost)
        })
        .unwrap();
        assert!(costs.iter().all(|&x| x == costs[0]), "{costs:?}");
        assert_eq!(costs[0], 0.1 + 0.2);
    }
}
