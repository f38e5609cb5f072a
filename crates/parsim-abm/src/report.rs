//! What a run's curve says: attack rate, peaks, the observed early growth
//! rate and the R0 it implies, the per-degree attack rate.

use crate::config::SeirConfig;
use crate::seir::SeirResult;
use crate::theory;

/// Summary figures of one run (SEIR-net-v1 §3).
#[derive(Clone, Debug, PartialEq)]
pub struct Outcome {
    /// (N − never infected) / N.
    pub attack_rate: f64,
    /// The first day of maximal prevalence I(t).
    pub peak_day: u32,
    /// max I(t) / N.
    pub peak_prevalence: f64,
    /// The first day of maximal incidence.
    pub peak_incidence_day: u32,
    /// The slope of ln(cumulative infections) over the early exponential
    /// phase (cumulative between `growth_window` bounds), per day.
    pub growth_rate: Option<f64>,
    /// The days the growth rate was fitted on.
    pub growth_window: Option<(u32, u32)>,
    /// R0 implied by the observed growth rate and the model's generation interval.
    pub r0_estimate: Option<f64>,
}

/// The window of the early exponential phase: cumulative infections from
/// max(100, 5·seeds) to 2 % of the population.
pub fn growth_bounds(agents: u64, seeds: usize) -> (f64, f64) {
    ((100.0f64).max(5.0 * seeds as f64), 0.02 * agents as f64)
}

impl Outcome {
    /// Reads the figures off a result.
    pub fn of(res: &SeirResult, cfg: &SeirConfig) -> Outcome {
        let n = res.agents.max(1) as f64;
        let last = res.curve.last().copied().unwrap_or_default();
        let attack_rate = (last.e + last.i + last.r) as f64 / n;
        let (mut peak_day, mut peak_i, mut peak_inc_day, mut peak_inc) = (0u32, 0u64, 0u32, 0u64);
        for (d, c) in res.curve.iter().enumerate() {
            if c.i > peak_i {
                (peak_i, peak_day) = (c.i, d as u32);
            }
            if c.new > peak_inc {
                (peak_inc, peak_inc_day) = (c.new, d as u32);
            }
        }
        let (lo, hi) = growth_bounds(res.agents, cfg.seeds);
        let mut cum = 0u64;
        let mut pts: Vec<(f64, f64)> = Vec::new();
        for (d, c) in res.curve.iter().enumerate() {
            cum += c.new;
            let x = cum as f64;
            if x >= lo && x <= hi {
                pts.push((d as f64, x.ln()));
            }
            if x > hi {
                break;
            }
        }
        let fit = (pts.len() >= 5).then(|| {
            let m = pts.len() as f64;
            let (sx, sy) = pts.iter().fold((0.0, 0.0), |a, p| (a.0 + p.0, a.1 + p.1));
            let (mx, my) = (sx / m, sy / m);
            let sxy: f64 = pts.iter().map(|p| (p.0 - mx) * (p.1 - my)).sum();
            let sxx: f64 = pts.iter().map(|p| (p.0 - mx).powi(2)).sum();
            sxy / sxx
        });
        let window = (pts.len() >= 5).then(|| (pts[0].0 as u32, pts[pts.len() - 1].0 as u32));
        Outcome {
            attack_rate,
            peak_day,
            peak_prevalence: peak_i as f64 / n,
            peak_incidence_day: peak_inc_day,
            growth_rate: fit,
            growth_window: window,
            r0_estimate: fit.map(|r| theory::r0_from_growth(r, cfg.beta, cfg.variant)),
        }
    }
}

/// Per degree k with at least `min_agents` agents: (k, agents, attack rate).
pub fn attack_by_degree(res: &SeirResult, min_agents: u64) -> Vec<(usize, u64, f64)> {
    res.by_degree
        .iter()
        .enumerate()
        .filter(|(_, c)| c.0 >= min_agents)
        .map(|(k, c)| (k, c.0, c.1 as f64 / c.0 as f64))
        .collect()
}
