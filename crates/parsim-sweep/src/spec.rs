//! What a sweep is: points (a grid of parameter values or a Latin
//! hypercube), replications per point (fixed, or a sequential stopping rule)
//! and how each task's random stream is keyed.

use parsim_core::rng::StreamKey;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::error::{Result, SweepError};

/// One point of the sweep: a value for each swept scenario key.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Point {
    /// The point's index (row order of the results).
    pub index: usize,
    /// (scenario key, value) pairs, in parameter order.
    pub values: Vec<(String, Value)>,
}

/// How many replications each point gets.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub enum Replications {
    /// Exactly this many.
    Fixed(u64),
    /// Keep adding replications until the confidence interval of `metric`
    /// has a half-width ≤ `rel_halfwidth` · |mean| (at least `min`, at most `max`).
    Until {
        /// The metric the rule watches.
        metric: String,
        /// Target half-width relative to the mean.
        rel_halfwidth: f64,
        /// At least this many replications.
        min: u64,
        /// At most this many.
        max: u64,
    },
}

/// A sweep.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SweepSpec {
    /// The points.
    pub points: Vec<Point>,
    /// Replications per point.
    pub replications: Replications,
    /// Confidence level of the intervals (e.g. 0.95).
    pub confidence: f64,
    /// Common random numbers: replication r of every point uses the same stream.
    pub common_random_numbers: bool,
    /// Attempts after the first for a task that fails.
    pub retries: u32,
    /// The sweep's seed.
    pub seed: u64,
    /// Injected failures, for testing retry: (point, replication, failing attempts).
    #[serde(default)]
    pub faults: Vec<(usize, u64, u32)>,
    /// Injected process deaths, for testing isolation: (point, replication,
    /// failing attempts); the process running such an attempt kills itself
    /// with SIGKILL (see the caller's runner: the sweep checks
    /// [`kill_due`](Self::kill_due) where a task runs).
    #[serde(default)]
    pub kills: Vec<(usize, u64, u32)>,
}

/// One task: a replication of a point (`attempt` counts from 0).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub struct Task {
    /// The point.
    pub point: usize,
    /// The replication.
    pub replication: u64,
    /// The attempt (0 for the first).
    pub attempt: u32,
}

impl SweepSpec {
    /// Checks the sweep (names the bad key).
    pub fn check(&self) -> Result<()> {
        if self.points.is_empty() {
            return Err(SweepError::Config { key: "parameters".into(), msg: "the sweep has no points".into() });
        }
        if !(self.confidence > 0.0 && self.confidence < 1.0) {
            return Err(SweepError::Config {
                key: "confidence".into(),
                msg: format!("expected a level in (0, 1), found {}", self.confidence),
            });
        }
        match &self.replications {
            Replications::Fixed(0) => {
                Err(SweepError::Config { key: "replications".into(), msg: "must be at least 1".into() })
            }
            Replications::Until { rel_halfwidth, min, max, .. } => {
                if rel_halfwidth.is_nan() || *rel_halfwidth <= 0.0 {
                    return Err(SweepError::Config { key: "until.rel_halfwidth".into(), msg: "must be > 0".into() });
                }
                if *min < 2 || max < min {
                    return Err(SweepError::Config {
                        key: "until.max".into(),
                        msg: format!("need 2 ≤ min ≤ max, found min {min}, max {max}"),
                    });
                }
                Ok(())
            }
            Replications::Fixed(_) => Ok(()),
        }
    }

    /// The seed of `task`'s run: a pure function of (sweep seed, point,
    /// replication) — of the replication alone with common random numbers —
    /// never of the worker or the attempt. 63 bits, so that it is a valid
    /// TOML integer.
    pub fn task_seed(&self, task: &Task) -> u64 {
        let point = if self.common_random_numbers { 0 } else { task.point as u64 + 1 };
        let mut s = StreamKey::new(self.seed).purpose("parsim.sweep").with(point).with(task.replication).stream();
        rand_core::RngCore::next_u64(&mut s) >> 1
    }

    /// Whether `task`'s attempt is one of the injected panics.
    pub fn fault_due(&self, task: &Task) -> bool {
        due(&self.faults, task)
    }

    /// Whether `task`'s attempt is one of the injected process deaths.
    pub fn kill_due(&self, task: &Task) -> bool {
        due(&self.kills, task)
    }

    /// A fingerprint of everything that determines the results (checked on `--resume`).
    pub fn fingerprint(&self) -> String {
        let mut d = parsim_core::Digester::new();
        d.write_str(&serde_json::to_string(self).unwrap_or_default());
        d.finish().to_string()
    }
}

/// The grid of every combination of `params` (the last varies fastest).
pub fn grid(params: &[(String, Vec<Value>)]) -> Vec<Point> {
    let mut points = vec![Vec::new()];
    for (key, values) in params {
        let mut next = Vec::with_capacity(points.len() * values.len());
        for p in &points {
            for v in values {
                let mut q: Vec<(String, Value)> = p.clone();
                q.push((key.clone(), v.clone()));
                next.push(q);
            }
        }
        points = next;
    }
    points.into_iter().enumerate().map(|(index, values)| Point { index, values }).collect()
}

/// A Latin hypercube of `n` points over `ranges` (key, low, high): each
/// range is cut into n equal strata and every stratum used once per key.
pub fn latin_hypercube(ranges: &[(String, f64, f64)], n: usize, seed: u64) -> Vec<Point> {
    let mut cols: Vec<Vec<f64>> = Vec::new();
    for (k, (_, lo, hi)) in ranges.iter().enumerate() {
        let mut s = StreamKey::new(seed).purpose("parsim.sweep.lhs").with(k as u64).stream();
        let mut strata: Vec<usize> = (0..n).collect();
        for i in (1..n).rev() {
            let j = s.below(i as u64 + 1) as usize;
            strata.swap(i, j);
        }
        cols.push(strata.iter().map(|&st| lo + (hi - lo) * (st as f64 + s.uniform()) / n as f64).collect());
    }
    (0..n)
        .map(|i| Point {
            index: i,
            values: ranges.iter().zip(&cols).map(|((key, _, _), c)| (key.clone(), Value::from(c[i]))).collect(),
        })
        .collect()
}

/// Whether `task`'s attempt is among `list`'s (point, replication, failing attempts).
fn due(list: &[(usize, u64, u32)], task: &Task) -> bool {
    list.iter().any(|&(p, r, k)| p == task.point && r == task.replication && task.attempt < k)
}
