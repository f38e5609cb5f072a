//! Summary statistics of one metric at one point: n, mean, standard
//! deviation, standard error, a Student-t confidence interval, min, max and
//! quantiles.

use serde::{Deserialize, Serialize};

/// The statistics of a sample.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Summary {
    /// Sample size.
    pub n: usize,
    /// Mean.
    pub mean: f64,
    /// Sample standard deviation (n − 1 in the denominator; 0 for n < 2).
    pub sd: f64,
    /// Standard error sd/√n.
    pub se: f64,
    /// Confidence level of the interval.
    pub confidence: f64,
    /// Lower end of the Student-t interval.
    pub ci_low: f64,
    /// Upper end.
    pub ci_high: f64,
    /// Smallest value.
    pub min: f64,
    /// Largest value.
    pub max: f64,
    /// 10 %, 50 % and 90 % quantiles (linear interpolation).
    pub quantiles: [f64; 3],
}

impl Summary {
    /// Summarises `x` with a `confidence` interval (e.g. 0.95).
    ///
    /// ```
    /// use parsim_sweep::Summary;
    /// let s = Summary::of(&[1.0, 2.0, 3.0, 4.0], 0.95);
    /// assert_eq!(s.mean, 2.5);
    /// assert!((s.ci_high - 2.5 - 3.182446 * s.se).abs() < 1e-5);
    /// ```
    pub fn of(x: &[f64], confidence: f64) -> Summary {
        let n = x.len();
        let mean = if n > 0 { x.iter().sum::<f64>() / n as f64 } else { f64::NAN };
        let sd = if n > 1 { (x.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / (n - 1) as f64).sqrt() } else { 0.0 };
        let se = if n > 0 { sd / (n as f64).sqrt() } else { f64::NAN };
        let half = if n > 1 { t_quantile(0.5 + confidence / 2.0, (n - 1) as f64) * se } else { f64::INFINITY };
        let mut s = x.to_vec();
        s.sort_by(f64::total_cmp);
        let q = |p: f64| {
            if s.is_empty() {
                return f64::NAN;
            }
            let h = p * (s.len() - 1) as f64;
            let (lo, f) = (h.floor() as usize, h - h.floor());
            s[lo] + f * (s[(lo + 1).min(s.len() - 1)] - s[lo])
        };
        Summary {
            n,
            mean,
            sd,
            se,
            confidence,
            ci_low: mean - half,
            ci_high: mean + half,
            min: s.first().copied().unwrap_or(f64::NAN),
            max: s.last().copied().unwrap_or(f64::NAN),
            quantiles: [q(0.1), q(0.5), q(0.9)],
        }
    }

    /// Half the interval's width.
    pub fn half_width(&self) -> f64 {
        (self.ci_high - self.ci_low) / 2.0
    }
}

/// ln Γ(x) (Lanczos, 15 digits).
fn ln_gamma(x: f64) -> f64 {
    const G: [f64; 9] = [
        0.999_999_999_999_809_9,
        676.520_368_121_885_1,
        -1_259.139_216_722_402_8,
        771.323_428_777_653_1,
        -176.615_029_162_140_6,
        12.507_343_278_686_905,
        -0.138_571_095_265_720_12,
        9.984_369_578_019_572e-6,
        1.505_632_735_149_311_6e-7,
    ];
    if x < 0.5 {
        return (std::f64::consts::PI / (std::f64::consts::PI * x).sin()).ln() - ln_gamma(1.0 - x);
    }
    let x = x - 1.0;
    let mut a = G[0];
    let t = x + 7.5;
    for (i, &g) in G.iter().enumerate().skip(1) {
        a += g / (x + i as f64);
    }
    0.5 * (2.0 * std::f64::consts::PI).ln() + (x + 0.5) * t.ln() - t + a.ln()
}

/// The regularised incomplete beta function I_x(a, b) (continued fraction).
fn inc_beta(a: f64, b: f64, x: f64) -> f64 {
    if x <= 0.0 {
        return 0.0;
    }
    if x >= 1.0 {
        return 1.0;
    }
    let front = (ln_gamma(a + b) - ln_gamma(a) - ln_gamma(b) + a * x.ln() + b * (1.0 - x).ln()).exp();
    if x > (a + 1.0) / (a + b + 2.0) {
        return 1.0 - inc_beta(b, a, 1.0 - x);
    }
    // Lentz's algorithm.
    let (tiny, mut f, mut c, mut d) = (1e-300, 1.0, 1.0, 0.0);
    for i in 0..400 {
        let m = (i / 2) as f64;
        let num = if i == 0 {
            1.0
        } else if i % 2 == 0 {
            m * (b - m) * x / ((a + 2.0 * m - 1.0) * (a + 2.0 * m))
        } else {
            -(a + m) * (a + b + m) * x / ((a + 2.0 * m) * (a + 2.0 * m + 1.0))
        };
        d = 1.0 + num * d;
        d = if d.abs() < tiny { tiny } else { d };
        d = 1.0 / d;
        c = 1.0 + num / c;
        c = if c.abs() < tiny { tiny } else { c };
        let cd = c * d;
        f *= cd;
        if (1.0 - cd).abs() < 1e-15 {
            break;
        }
    }
    front * (f - 1.0) / a
}

/// P(T ≤ t) for Student's t with `nu` degrees of freedom.
pub fn t_cdf(t: f64, nu: f64) -> f64 {
    let x = nu / (nu + t * t);
    let tail = 0.5 * inc_beta(nu / 2.0, 0.5, x);
    if t >= 0.0 {
        1.0 - tail
    } else {
        tail
    }
}

/// The p-quantile of Student's t with `nu` degrees of freedom (bisection on the CDF).
pub fn t_quantile(p: f64, nu: f64) -> f64 {
    let (mut lo, mut hi) = (-1e3, 1e3);
    for _ in 0..200 {
        let mid = 0.5 * (lo + hi);
        if t_cdf(mid, nu) < p {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    0.5 * (lo + hi)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn t_quantiles_match_tables() {
        for (nu, want) in
            [(1.0, 12.706_204), (2.0, 4.302_653), (9.0, 2.262_157), (29.0, 2.045_230), (1000.0, 1.962_339)]
        {
            assert!((t_quantile(0.975, nu) - want).abs() < 1e-5, "nu {nu}: {}", t_quantile(0.975, nu));
        }
        assert!((t_quantile(0.995, 4.0) - 4.604_095).abs() < 1e-5);
    }

    #[test]
    fn quantiles_and_spread() {
        let s = Summary::of(&[3.0, 1.0, 2.0, 5.0, 4.0], 0.9);
        assert_eq!((s.min, s.max, s.quantiles[1]), (1.0, 5.0, 3.0));
        assert!((s.sd - 2.5f64.sqrt()).abs() < 1e-12);
    }
}
