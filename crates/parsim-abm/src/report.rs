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
    /// The standard error of the fitted slope (ordinary least squares; the
    /// points of a cumulative curve are correlated, so this understates the
    /// spread between seeds, which is the honest measure).
    pub growth_se: Option<f64>,
    /// Why there is no growth rate, when there is none.
    pub growth_missing: Option<String>,
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
        let ok = pts.len() >= 5;
        let (fit, se) = if ok {
            let m = pts.len() as f64;
            let (sx, sy) = pts.iter().fold((0.0, 0.0), |a, p| (a.0 + p.0, a.1 + p.1));
            let (mx, my) = (sx / m, sy / m);
            let sxy: f64 = pts.iter().map(|p| (p.0 - mx) * (p.1 - my)).sum();
            let sxx: f64 = pts.iter().map(|p| (p.0 - mx).powi(2)).sum();
            let slope = sxy / sxx;
            let rss: f64 = pts.iter().map(|p| (p.1 - my - slope * (p.0 - mx)).powi(2)).sum();
            (Some(slope), Some((rss / (m - 2.0) / sxx).sqrt()))
        } else {
            (None, None)
        };
        let window = ok.then(|| (pts[0].0 as u32, pts[pts.len() - 1].0 as u32));
        let missing = (!ok).then(|| {
            if cum < lo as u64 || res.curve.is_empty() {
                format!("the epidemic never reached {lo:.0} cumulative infections (it reached {cum})")
            } else {
                format!(
                    "the early exponential phase (cumulative infections from {lo:.0} to 2 % of the population, \
                     {hi:.0}) lasted {} day(s): too fast to fit on daily counts (5 are needed), as on networks with \
                     heavy-tailed degrees, where hubs are infected within days",
                    pts.len()
                )
            }
        });
        Outcome {
            attack_rate,
            peak_day,
            peak_prevalence: peak_i as f64 / n,
            peak_incidence_day: peak_inc_day,
            growth_rate: fit,
            growth_window: window,
            growth_se: se,
            growth_missing: missing,
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
