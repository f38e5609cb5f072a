//! The parameters of an SEIR run and its interventions.

use crate::error::{AbmError, Result};

/// Disease progression (SEIR-net-v1 §1).
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Variant {
    /// Variant A: fixed latent and infectious durations in days.
    Fixed {
        /// Days in E (d_E).
        latent: u32,
        /// Days in I (d_I).
        infectious: u32,
    },
    /// Variant B: geometric durations, daily exit probabilities.
    Markov {
        /// E → I per day (σ).
        sigma: f64,
        /// I → R per day (γ).
        gamma: f64,
    },
}

/// Close a layer (e.g. schools) on days `from..to`.
#[derive(Clone, Debug, PartialEq)]
pub struct Closure {
    /// The layer's index in the population.
    pub layer: usize,
    /// First closed day.
    pub from: u32,
    /// First day open again.
    pub to: u32,
}

/// Vaccinate: on each day of `from..to`, every susceptible agent is
/// vaccinated with probability `rate` (state V: immune).
#[derive(Clone, Debug, PartialEq)]
pub struct Vaccination {
    /// First day.
    pub from: u32,
    /// Day after the last.
    pub to: u32,
    /// Daily probability per susceptible agent.
    pub rate: f64,
}

/// Isolate detected cases: an agent that becomes infectious is detected
/// with probability `detect`; from `delay` days after onset it transmits
/// only on the layers in `keep` (a bit mask; 0 = not at all).
#[derive(Clone, Debug, PartialEq)]
pub struct Isolation {
    /// Probability that a case is detected.
    pub detect: f64,
    /// Days from onset to isolation.
    pub delay: u32,
    /// Layers an isolated case still transmits on (bit i = layer i).
    pub keep: u8,
}

/// One SEIR run (SEIR-net-v1 with optional interventions).
///
/// ```
/// use parsim_abm::SeirConfig;
/// let cfg = SeirConfig::default(); // the spec's variant A: β = 0.05, d_E = 3, d_I = 5, 10 seeds, 180 days
/// assert!(cfg.check(1).is_ok());
/// ```
#[derive(Clone, Debug, PartialEq)]
pub struct SeirConfig {
    /// Per-contact daily transmission probability.
    pub beta: f64,
    /// Progression.
    pub variant: Variant,
    /// Agents infected (entering E) on day 0.
    pub seeds: usize,
    /// Days simulated.
    pub days: u32,
    /// The seed of every random draw.
    pub seed: u64,
    /// Layer closures.
    pub closures: Vec<Closure>,
    /// Vaccination campaign.
    pub vaccination: Option<Vaccination>,
    /// Isolation of detected cases.
    pub isolation: Option<Isolation>,
    /// Threads per rank for the transmission step.
    pub threads: usize,
    /// Hand back every owned agent's final state in [`SeirResult::states`](crate::SeirResult::states).
    pub keep_states: bool,
}

impl Default for SeirConfig {
    fn default() -> Self {
        SeirConfig {
            beta: 0.05,
            variant: Variant::Fixed { latent: 3, infectious: 5 },
            seeds: 10,
            days: 180,
            seed: 0,
            closures: Vec::new(),
            vaccination: None,
            isolation: None,
            threads: 1,
            keep_states: false,
        }
    }
}

impl SeirConfig {
    /// Checks every parameter against a population with `layers` layers.
    pub fn check(&self, layers: usize) -> Result<()> {
        if !(0.0..=1.0).contains(&self.beta) {
            return Err(AbmError::config("beta", format!("expected a probability in [0, 1], found {}", self.beta)));
        }
        match self.variant {
            Variant::Fixed { latent, infectious } => {
                if latent == 0 || infectious == 0 {
                    return Err(AbmError::config("latent_days", "durations must be ≥ 1 day"));
                }
            }
            Variant::Markov { sigma, gamma } => {
                if !(sigma > 0.0 && sigma <= 1.0 && gamma > 0.0 && gamma <= 1.0) {
                    return Err(AbmError::config("latent_days", "mean durations must be ≥ 1 day"));
                }
            }
        }
        if self.days == 0 || self.days > 65_000 {
            return Err(AbmError::config("days", format!("expected 1..=65000 days, found {}", self.days)));
        }
        for c in &self.closures {
            if c.layer >= layers {
                return Err(AbmError::config("close", format!("layer {} does not exist", c.layer)));
            }
            if c.from >= c.to || c.to > self.days {
                return Err(AbmError::config(
                    "close",
                    format!("days {}..{} are not an interval inside the horizon 0..{}", c.from, c.to, self.days),
                ));
            }
        }
        if let Some(v) = &self.vaccination {
            if v.from >= v.to || v.to > self.days {
                return Err(AbmError::config(
                    "vaccinate",
                    format!("days {}..{} are not an interval inside the horizon 0..{}", v.from, v.to, self.days),
                ));
            }
            if !(0.0..=1.0).contains(&v.rate) {
                return Err(AbmError::config("vaccinate.rate", format!("expected a probability, found {}", v.rate)));
            }
        }
        if let Some(i) = &self.isolation {
            if !(0.0..=1.0).contains(&i.detect) {
                return Err(AbmError::config("isolate.detect", format!("expected a probability, found {}", i.detect)));
            }
            if i.delay >= self.days {
                return Err(AbmError::config("isolate.delay", "the delay is beyond the horizon"));
            }
        }
        if self.threads == 0 {
            return Err(AbmError::config("threads", "at least one thread"));
        }
        Ok(())
    }

    /// The mask of layers open on `day`.
    pub fn open_layers(&self, day: u32, layers: usize) -> u8 {
        let mut m = if layers >= 8 { 0xFF } else { (1u16 << layers) as u8 - 1 };
        for c in &self.closures {
            if (c.from..c.to).contains(&day) {
                m &= !(1u8 << c.layer);
            }
        }
        m
    }
}
