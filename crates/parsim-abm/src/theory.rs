//! SEIR-net-v1 §4: analytic predictions for a configuration-model network
//! with the given degree distribution — edge transmissibility T, network
//! R0 = T·⟨k(k−1)⟩/⟨k⟩, final size z (bond percolation), per-degree attack
//! rate, early growth rate r and mean generation interval. Independent of
//! any simulator: what `--verify` prints next to the simulation.

use crate::config::Variant;

/// The predictions.
#[derive(Clone, Debug, PartialEq)]
pub struct Theory {
    /// Edge transmissibility T = 1 − E[(1 − β)^D].
    pub transmissibility: f64,
    /// Mean degree ⟨k⟩.
    pub mean_degree: f64,
    /// Mean excess degree q = ⟨k(k−1)⟩/⟨k⟩.
    pub excess_degree: f64,
    /// Network R0 = T·q.
    pub r0: f64,
    /// Final size of a major outbreak z.
    pub final_size: f64,
    /// u = G1(1 − T + T·u).
    pub u: f64,
    /// Early growth rate r per day (the root of the Euler–Lotka equation).
    pub growth_rate: f64,
    /// Mean generation interval in days.
    pub generation_interval: f64,
}

/// E[e^{−r τ}] over the generation interval τ of a transmission (given one happens).
pub fn laplace_generation(beta: f64, variant: Variant, r: f64) -> f64 {
    let t = transmissibility(beta, variant);
    match variant {
        Variant::Fixed { latent, infectious } => {
            let mut s = 0.0;
            for d in 1..=infectious {
                let w = beta * (1.0 - beta).powi(d as i32 - 1) / t;
                s += w * (-r * f64::from(latent + d - 1)).exp();
            }
            s
        }
        Variant::Markov { sigma, gamma } => {
            let x = (-r).exp();
            let latent = sigma * x / (1.0 - (1.0 - sigma) * x);
            let a = (1.0 - beta) * (1.0 - gamma);
            latent * beta / t / (1.0 - a * x)
        }
    }
}

/// T = 1 − E[(1 − β)^D] (variant A: 1 − (1 − β)^{d_I}; B: β / (1 − (1 − β)(1 − γ))).
pub fn transmissibility(beta: f64, variant: Variant) -> f64 {
    match variant {
        Variant::Fixed { infectious, .. } => 1.0 - (1.0 - beta).powi(infectious as i32),
        Variant::Markov { gamma, .. } => beta / (1.0 - (1.0 - beta) * (1.0 - gamma)),
    }
}

/// The growth rate r with R0·E[e^{−rτ}] = 1 (bisection; negative when R0 < 1).
pub fn growth_rate(r0: f64, beta: f64, variant: Variant) -> f64 {
    let f = |r: f64| r0 * laplace_generation(beta, variant, r) - 1.0;
    let (mut lo, mut hi) = (-0.5, 5.0);
    if f(lo) < 0.0 || f(hi) > 0.0 {
        return f64::NAN;
    }
    for _ in 0..200 {
        let mid = 0.5 * (lo + hi);
        if f(mid) > 0.0 {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    0.5 * (lo + hi)
}

/// R0 implied by an observed growth rate: 1 / E[e^{−rτ}].
pub fn r0_from_growth(r: f64, beta: f64, variant: Variant) -> f64 {
    1.0 / laplace_generation(beta, variant, r)
}

impl Theory {
    /// Predictions for degree counts `counts[k]` (agents of degree k).
    ///
    /// ```
    /// use parsim_abm::{theory::Theory, Variant};
    /// // A 4-regular graph: q = 3.
    /// let th = Theory::predict(&[0, 0, 0, 0, 100], 0.05, Variant::Fixed { latent: 3, infectious: 5 });
    /// assert!((th.r0 - 3.0 * th.transmissibility).abs() < 1e-12);
    /// ```
    pub fn predict(counts: &[u64], beta: f64, variant: Variant) -> Theory {
        let n: f64 = counts.iter().map(|&c| c as f64).sum();
        let p: Vec<f64> = counts.iter().map(|&c| c as f64 / n.max(1.0)).collect();
        let k1: f64 = p.iter().enumerate().map(|(k, pk)| k as f64 * pk).sum();
        let k2: f64 = p.iter().enumerate().map(|(k, pk)| (k * k.saturating_sub(1)) as f64 * pk).sum();
        let q = if k1 > 0.0 { k2 / k1 } else { 0.0 };
        let t = transmissibility(beta, variant);
        let g0 = |x: f64| p.iter().enumerate().map(|(k, pk)| pk * x.powi(k as i32)).sum::<f64>();
        let g1 = |x: f64| {
            if k1 == 0.0 {
                return 1.0;
            }
            p.iter().enumerate().skip(1).map(|(k, pk)| k as f64 * pk * x.powi(k as i32 - 1)).sum::<f64>() / k1
        };
        // The smallest fixed point of u = G1(1 − T + T u), from u = 0.
        let mut u = 0.0;
        for _ in 0..100_000 {
            let next = g1(1.0 - t + t * u);
            if (next - u).abs() < 1e-15 {
                u = next;
                break;
            }
            u = next;
        }
        let z = 1.0 - g0(1.0 - t + t * u);
        let r0 = t * q;
        let gi = match variant {
            Variant::Fixed { latent, infectious } => {
                (1..=infectious).map(|d| beta * (1.0 - beta).powi(d as i32 - 1) / t * f64::from(latent + d - 1)).sum()
            }
            Variant::Markov { sigma, gamma } => {
                let a = (1.0 - beta) * (1.0 - gamma);
                1.0 / sigma + a / (1.0 - a)
            }
        };
        Theory {
            transmissibility: t,
            mean_degree: k1,
            excess_degree: q,
            r0,
            final_size: z.max(0.0),
            u,
            growth_rate: growth_rate(r0, beta, variant),
            generation_interval: gi,
        }
    }

    /// P(infected | degree k) = 1 − (1 − T + T u)^k.
    pub fn attack_rate_at_degree(&self, k: usize) -> f64 {
        1.0 - (1.0 - self.transmissibility + self.transmissibility * self.u).powi(k as i32)
    }

    /// Predictions for a Poisson(c) degree distribution (the spec's reference graph).
    pub fn poisson(c: f64, beta: f64, variant: Variant) -> Theory {
        let kmax = (c + 20.0 * c.sqrt() + 20.0) as usize;
        // Counts proportional to Poisson probabilities, scaled to keep precision.
        let mut p = Vec::with_capacity(kmax + 1);
        let mut term = (-c).exp();
        for k in 0..=kmax {
            if k > 0 {
                term *= c / k as f64;
            }
            p.push((term * 1e15).round() as u64);
        }
        Theory::predict(&p, beta, variant)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reference_values_of_the_spec() {
        let a = Theory::poisson(10.0, 0.05, Variant::Fixed { latent: 3, infectious: 5 });
        assert!((a.transmissibility - 0.22622).abs() < 5e-6, "{a:?}");
        assert!((a.r0 - 2.2624).abs() < 1e-3, "{a:?}");
        assert!((a.final_size - 0.85565).abs() < 5e-5, "{a:?}");
        assert!((a.growth_rate - 0.1727).abs() < 5e-4, "{a:?}");
        assert!((a.generation_interval - 4.90).abs() < 5e-3, "{a:?}");
        let b = Theory::poisson(10.0, 0.05, Variant::Markov { sigma: 1.0 / 3.0, gamma: 0.2 });
        assert!((b.transmissibility - 0.20833).abs() < 5e-6, "{b:?}");
        assert!((b.final_size - 0.8181).abs() < 5e-4, "{b:?}");
        let reg =
            Theory::predict(&[0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1], 0.05, Variant::Fixed { latent: 3, infectious: 5 });
        assert!((reg.r0 - 2.036).abs() < 1e-3 && (reg.final_size - 0.8837).abs() < 5e-4, "{reg:?}");
        let sub = Theory::poisson(10.0, 0.02, Variant::Fixed { latent: 3, infectious: 5 });
        assert!((sub.r0 - 0.961).abs() < 1e-3 && sub.final_size < 1e-6 && sub.growth_rate < 0.0, "{sub:?}");
    }

    #[test]
    fn latent_period_does_not_change_t_r0_or_z() {
        let a = Theory::poisson(10.0, 0.05, Variant::Fixed { latent: 1, infectious: 5 });
        let b = Theory::poisson(10.0, 0.05, Variant::Fixed { latent: 7, infectious: 5 });
        assert_eq!((a.r0, a.final_size), (b.r0, b.final_size));
        assert!(a.growth_rate > b.growth_rate);
    }
}
