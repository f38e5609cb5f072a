//! The T(p) model of a scaling study: serial time, compute divided over
//! the ranks and inflated by the imbalance, messages and bytes at the
//! network's α and β, and synchronisation growing as log₂ p; fitted to the
//! measured points and extrapolated.

use serde::{Deserialize, Serialize};

use super::analysis::Point;

/// The network: a message costs α + β·bytes; a collective c·log₂ p.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Network {
    /// Latency per message, seconds.
    pub alpha: f64,
    /// Seconds per byte.
    pub beta: f64,
    /// The relative RMS residual of the α–β fit.
    pub residual: f64,
    /// Where α and β came from.
    pub source: String,
}

/// Least squares of t = α + β·x minimising the relative error (weights
/// 1/t²): latency rules small messages, bandwidth large ones. Returns
/// (α, β, the relative RMS residual).
pub fn fit_alpha_beta(points: &[(f64, f64)]) -> (f64, f64, f64) {
    let (mut sw, mut swx, mut swy, mut swxx, mut swxy) = (0.0, 0.0, 0.0, 0.0, 0.0);
    for &(x, t) in points.iter().filter(|p| p.1 > 0.0) {
        let w = 1.0 / (t * t);
        sw += w;
        swx += w * x;
        swy += w * t;
        swxx += w * x * x;
        swxy += w * x * t;
    }
    let det = sw * swxx - swx * swx;
    if det.abs() < f64::MIN_POSITIVE || sw == 0.0 {
        return (0.0, 0.0, 0.0);
    }
    let beta = ((sw * swxy - swx * swy) / det).max(0.0);
    let alpha = ((swy - beta * swx) / sw).max(0.0);
    let n = points.iter().filter(|p| p.1 > 0.0).count().max(1) as f64;
    let res = points.iter().filter(|p| p.1 > 0.0).map(|&(x, t)| ((alpha + beta * x - t) / t).powi(2)).sum::<f64>() / n;
    (alpha, beta, res.sqrt())
}

/// y = a·p^γ through the points with p > 1 (log–log least squares); one
/// point: γ = 0.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize)]
pub struct Power {
    /// a.
    pub a: f64,
    /// γ.
    pub gamma: f64,
}

impl Power {
    fn fit(pts: &[(f64, f64)]) -> Power {
        Power::fit_from(pts, 1.0)
    }

    /// The fit through the points with p > `above`.
    fn fit_from(pts: &[(f64, f64)], above: f64) -> Power {
        let pts: Vec<(f64, f64)> = pts.iter().copied().filter(|&(p, y)| p > above && y > 0.0).collect();
        match pts.len() {
            0 => Power::default(),
            1 => Power { a: pts[0].1, gamma: 0.0 },
            _ => {
                let n = pts.len() as f64;
                let (mx, my) =
                    (pts.iter().map(|p| p.0.ln()).sum::<f64>() / n, pts.iter().map(|p| p.1.ln()).sum::<f64>() / n);
                let sxx: f64 = pts.iter().map(|p| (p.0.ln() - mx).powi(2)).sum();
                let sxy: f64 = pts.iter().map(|p| (p.0.ln() - mx) * (p.1.ln() - my)).sum();
                let gamma = if sxx > 0.0 { sxy / sxx } else { 0.0 };
                Power { a: (my - gamma * mx).exp(), gamma }
            }
        }
    }

    /// a·p^γ for p > 1, 0 at p ≤ 1 (no messages on one rank).
    pub fn at(&self, p: f64) -> f64 {
        if p <= 1.0 {
            0.0
        } else {
            self.a * p.powf(self.gamma)
        }
    }

    fn at_any(&self, p: f64) -> f64 {
        self.a * p.powf(self.gamma)
    }
}

/// Least squares of y = s·x through the origin.
fn slope(pts: &[(f64, f64)]) -> f64 {
    let (sxy, sxx) = pts.iter().fold((0.0, 0.0), |(a, b), &(x, y)| (a + x * y, b + x * x));
    if sxx > 0.0 {
        sxy / sxx
    } else {
        0.0
    }
}

/// The fitted T(p) model.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct TModel {
    /// Weak scaling (compute per rank fixed) or strong (total fixed).
    pub weak: bool,
    /// Serial seconds (every rank waits for them).
    pub serial: f64,
    /// Compute seconds as a power of p: the total (strong: γ > 0 is
    /// redundant work) or per rank (weak).
    pub compute: Power,
    /// Imbalance max/mean − 1 = `imbalance`·log₂ p.
    pub imbalance: f64,
    /// Messages per rank.
    pub messages: Power,
    /// Bytes per rank.
    pub bytes: Power,
    /// Waiting beyond the imbalance, seconds per rank = `sync`·log₂ p.
    pub sync: f64,
    /// File time per rank.
    pub io: f64,
    /// Time outside the measured phases (start-up, the final reduction).
    pub other: f64,
    /// The network the communication term uses.
    pub net: Network,
}

/// T(p) by term.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Terms {
    /// Ranks.
    pub p: f64,
    /// Serial.
    pub serial: f64,
    /// Compute (balanced share).
    pub compute: f64,
    /// Imbalance (the slowest rank's extra compute).
    pub imbalance: f64,
    /// Messages and bytes at α and β.
    pub communication: f64,
    /// Synchronisation (log₂ p).
    pub sync: f64,
    /// Files and the rest.
    pub io: f64,
    /// The sum.
    pub total: f64,
}

impl Terms {
    /// The largest term beside the balanced compute, with its name.
    pub fn dominant(&self) -> (&'static str, f64) {
        [
            ("serial work", self.serial),
            ("load imbalance", self.imbalance),
            ("communication", self.communication),
            ("synchronisation", self.sync),
            ("io", self.io),
        ]
        .into_iter()
        .fold(("compute", 0.0), |best, t| if t.1 > best.1 { t } else { best })
    }
}

impl TModel {
    /// Fits the model to `points` (ascending p).
    pub fn fit(points: &[Point], weak: bool, net: Network) -> TModel {
        let n = points.len().max(1) as f64;
        let mean = |f: &dyn Fn(&Point) -> f64| points.iter().map(f).sum::<f64>() / n;
        let ranks = |pt: &Point| pt.ranks.len().max(1) as f64;
        let sum_c = |pt: &Point| pt.ranks.iter().map(|r| r.compute).sum::<f64>();
        let max_c = |pt: &Point| pt.ranks.iter().map(|r| r.compute).fold(0.0, f64::max);
        let mean_of =
            |pt: &Point, f: fn(&super::analysis::Phases) -> f64| pt.ranks.iter().map(f).sum::<f64>() / ranks(pt);
        let serial = mean(&|pt| pt.ranks.iter().map(|r| r.serial).fold(0.0, f64::max));
        let compute_pts: Vec<(f64, f64)> =
            points.iter().map(|pt| (pt.p as f64, if weak { sum_c(pt) / ranks(pt) } else { sum_c(pt) })).collect();
        let compute = Power::fit_from(&compute_pts, 0.0);
        let imb: Vec<(f64, f64)> = points
            .iter()
            .filter(|pt| pt.p > 1 && sum_c(pt) > 0.0)
            .map(|pt| ((pt.p as f64).log2(), max_c(pt) / (sum_c(pt) / ranks(pt)) - 1.0))
            .collect();
        let sync: Vec<(f64, f64)> = points
            .iter()
            .filter(|pt| pt.p > 1)
            .map(|pt| {
                let excess = max_c(pt) - sum_c(pt) / ranks(pt);
                ((pt.p as f64).log2(), (mean_of(pt, |r| r.wait) - excess).max(0.0))
            })
            .collect();
        let per_rank = |f: fn(&Point) -> u64| -> Vec<(f64, f64)> {
            points.iter().map(|pt| (pt.p as f64, f(pt) as f64 / pt.p as f64)).collect()
        };
        let io = mean(&|pt| mean_of(pt, |r| r.io));
        // What the phases do not account for: the wall time beyond the
        // busiest rank's phases, at the reference point.
        let other = points.first().map_or(0.0, |pt| {
            let busiest = pt.ranks.iter().map(|r| r.compute + r.comm + r.wait + r.io + r.serial).fold(0.0, f64::max);
            (pt.wall - busiest).max(0.0)
        });
        TModel {
            weak,
            serial,
            compute,
            imbalance: slope(&imb).max(0.0),
            messages: Power::fit(&per_rank(|pt| pt.messages)),
            bytes: Power::fit(&per_rank(|pt| pt.bytes)),
            sync: slope(&sync).max(0.0),
            io,
            other,
            net,
        }
    }

    /// T(p) by term.
    pub fn at(&self, p: f64) -> Terms {
        let l = p.max(1.0).log2();
        let c = self.compute.at_any(p.max(1.0));
        let share = if self.weak { c } else { c / p.max(1.0) };
        let imbalance = share * self.imbalance * l;
        let communication = self.net.alpha * self.messages.at(p) + self.net.beta * self.bytes.at(p);
        let sync = self.sync * l;
        let io = self.io + self.other;
        let total = self.serial + share + imbalance + communication + sync + io;
        Terms { p, serial: self.serial, compute: share, imbalance, communication, sync, io, total }
    }

    /// Efficiency at p against the model's own T at `p0`.
    pub fn efficiency(&self, p0: f64, p: f64) -> f64 {
        let (t0, t) = (self.at(p0).total, self.at(p).total);
        if self.weak {
            t0 / t
        } else {
            t0 * p0 / (p * t)
        }
    }
}

/// The powers of two from 1 to 16384 (the prediction's range).
pub fn prediction_range() -> Vec<f64> {
    (0..=14).map(|k| f64::from(1u32 << k)).collect()
}

#[cfg(test)]
mod tests {
    use super::super::analysis::Phases;
    use super::*;

    #[test]
    fn alpha_beta_are_recovered_from_synthetic_latencies() {
        let (alpha, beta) = (3e-6, 1.0 / 8e9);
        let pts: Vec<(f64, f64)> =
            [8.0, 1024.0, 65536.0, 1048576.0, 16777216.0].iter().map(|&b| (b, alpha + beta * b)).collect();
        let (a, b, r) = fit_alpha_beta(&pts);
        assert!((a - alpha).abs() / alpha < 1e-9 && (b - beta).abs() / beta < 1e-9 && r < 1e-9);
    }

    #[test]
    fn a_bsp_model_with_known_costs_is_fitted_and_predicted_exactly() {
        // T(p) = 0.5 serial + 16/p compute + 100 messages per rank at α = 1e-4.
        let net = Network { alpha: 1e-4, beta: 0.0, residual: 0.0, source: "test".into() };
        let pts: Vec<Point> = [1usize, 2, 4]
            .iter()
            .map(|&p| {
                let mut ranks = vec![Phases { compute: 16.0 / p as f64, ..Phases::default() }; p];
                ranks[0].serial = 0.5;
                let comm = if p > 1 { 100.0 * 1e-4 } else { 0.0 };
                Point {
                    p,
                    wall: 0.5 + 16.0 / p as f64 + comm,
                    ranks,
                    messages: if p > 1 { 100 * p as u64 } else { 0 },
                    bytes: 0,
                    peak_rss: Vec::new(),
                    walls: Vec::new(),
                    boundaries: 0,
                    jitter_s: 0.0,
                }
            })
            .collect();
        let m = TModel::fit(&pts, false, net);
        for p in [1.0, 2.0, 4.0, 64.0] {
            let want = 0.5 + 16.0 / p + if p > 1.0 { 0.01 } else { 0.0 };
            assert!((m.at(p).total - want).abs() < 1e-9, "p = {p}: {} vs {want}", m.at(p).total);
        }
        assert_eq!(m.at(4096.0).dominant().0, "serial work");
    }
}
