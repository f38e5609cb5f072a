//! The `[lb]` table of a scenario.

use serde::{Deserialize, Serialize};

/// How the balancer decides where chunks go.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Strategy {
    /// Never move anything (λ is still measured and reported).
    Off,
    /// First-order diffusion between neighbouring ranks.
    Diffusive,
    /// Hilbert-curve order cut into equal-load segments.
    Sfc,
    /// Multilevel graph repartitioning with migration cost.
    Graph,
    /// Charm++'s GreedyLB.
    Greedy,
    /// Charm++'s RefineLB.
    Refine,
    /// Under-loaded ranks steal boundary chunks from loaded neighbours.
    Steal,
}

/// When the balancer acts, at each check (every `every` steps).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum When {
    /// At every check.
    Every,
    /// When λ = max/mean exceeds `threshold`.
    Threshold,
    /// When the time the new map is predicted to save over the next
    /// interval exceeds the measured cost of the last rebalance
    /// (Charm++'s MetaBalancer rule; λ above 1.02, timing noise, and no
    /// threshold otherwise; the first rebalance, with no cost measured
    /// yet, happens as soon as it saves anything).
    Auto,
}

/// What a chunk's load is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Measure {
    /// Measured compute time (the most honest: it sees slow hardware).
    Time,
    /// The model's own count (agents and neighbour pairs, active cells …).
    Count,
    /// Both, as two constraints for `graph`; the time for the others.
    Both,
}

/// Forecasting for `predictive` balancing.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Predict {
    /// The last interval's loads.
    None,
    /// Exponential smoothing (`smoothing`).
    Smooth,
    /// A linear trend over the last `window` intervals.
    Trend,
}

/// The `[lb]` table.
///
/// ```
/// let c: parsim_lb::Config = toml::from_str("strategy = \"sfc\"\nevery = 5").unwrap();
/// assert_eq!(c.strategy, parsim_lb::Strategy::Sfc);
/// assert!(c.check(4).is_ok());
/// ```
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Config {
    /// `off`, `diffusive`, `sfc`, `graph`, `greedy`, `refine` or `steal`.
    pub strategy: Strategy,
    /// Steps between checks (loads are averaged over them).
    pub every: u64,
    /// `every`, `threshold` or `auto`.
    pub when: When,
    /// λ above which `when = "threshold"` rebalances (and the tolerance
    /// `refine` stops at); at least 1.
    pub threshold: f64,
    /// `time`, `count` or `both`.
    pub measure: Measure,
    /// `none`, `smooth` or `trend`.
    pub predict: Predict,
    /// The smoothing factor a of `predict = "smooth"`, in (0, 1].
    pub smoothing: f64,
    /// The intervals `predict = "trend"` fits, at least 2.
    pub window: usize,
    /// `graph`: the cost of migrating the mean chunk, in cut chunk edges.
    pub alpha: f64,
    /// `graph`: the allowed imbalance ε (each rank ≤ (1 + ε)·mean).
    pub imbalance: f64,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            strategy: Strategy::Off,
            every: 10,
            when: When::Threshold,
            threshold: 1.1,
            measure: Measure::Time,
            predict: Predict::None,
            smoothing: 0.5,
            window: 4,
            alpha: 1.0,
            imbalance: 0.05,
        }
    }
}

impl Config {
    /// Checks the values; the error names the key (`lb.threshold`).
    pub fn check(&self, chunks: usize) -> Result<(), (String, String)> {
        let bad = |k: &str, m: String| Err((format!("lb.{k}"), m));
        if self.every == 0 {
            return bad("every", "expected at least 1 step between checks, found 0".into());
        }
        if !(self.threshold >= 1.0 && self.threshold.is_finite()) {
            return bad(
                "threshold",
                format!("λ = max/mean is at least 1: expected a threshold >= 1, found {}", self.threshold),
            );
        }
        if !(self.smoothing > 0.0 && self.smoothing <= 1.0) {
            return bad("smoothing", format!("expected a factor in (0, 1], found {}", self.smoothing));
        }
        if self.window < 2 || self.window > 1000 {
            return bad("window", format!("a trend needs 2..=1000 intervals, found {}", self.window));
        }
        if !(self.alpha >= 0.0 && self.alpha.is_finite() && self.alpha <= 1e6) {
            return bad("alpha", format!("expected a migration cost in 0..=1e6, found {}", self.alpha));
        }
        if !(self.imbalance >= 0.0 && self.imbalance <= 10.0) {
            return bad("imbalance", format!("expected ε in 0..=10, found {}", self.imbalance));
        }
        if chunks == 0 {
            return bad("strategy", "there are no chunks to balance".into());
        }
        Ok(())
    }
}
