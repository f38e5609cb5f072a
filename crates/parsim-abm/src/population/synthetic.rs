//! A synthetic population with four contact layers:
//!
//! - **household** — households with sizes drawn from `household_sizes`
//!   (the share of households of size 1, 2, …); the first two members are
//!   adults (18–79), the others children (0–17); everyone in a household is
//!   in contact;
//! - **school** — children aged 5–17 go to school with children of their
//!   own age (one grade per age) in their district, in classes of
//!   `class_size`, everyone in a class in contact;
//! - **work** — a share `employment` of adults aged 18–64 work in their
//!   district, in teams of `team_size`, everyone in a team in contact;
//! - **community** — `community_degree` random contacts per agent on
//!   average, a share `community_local` of them within the district, the
//!   rest anywhere in the population.
//!
//! Agents are numbered district by district (`district_size` agents each),
//! so consecutive ids live near each other: a block partition by id is
//! already a good one. Each district is generated from its own
//! counter-based stream, in parallel, so the population is a pure function
//! of (seed, parameters).

use parsim_core::rng::{Stream, StreamKey};
use parsim_graph::Csr;
use rayon::prelude::*;

use super::{Layer, Population};
use crate::error::{AbmError, Result};

/// The parameters of a synthetic population (see the [module docs](self)).
#[derive(Clone, Debug, PartialEq)]
pub struct Synthetic {
    /// Share of households of size 1, 2, 3 … (normalised).
    pub household_sizes: Vec<f64>,
    /// Pupils per class.
    pub class_size: usize,
    /// Workers per team.
    pub team_size: usize,
    /// Share of adults aged 18–64 who work.
    pub employment: f64,
    /// Mean random community contacts per agent.
    pub community_degree: f64,
    /// Share of community contacts inside the district.
    pub community_local: f64,
    /// Agents per district.
    pub district_size: usize,
    /// The four layers, in the order household, school, work, community.
    pub layers: [Layer; 4],
}

impl Default for Synthetic {
    fn default() -> Self {
        Synthetic {
            // Household sizes 1..7 (close to the US 2020 census shares).
            household_sizes: vec![0.28, 0.35, 0.15, 0.13, 0.06, 0.02, 0.01],
            class_size: 20,
            team_size: 10,
            employment: 0.75,
            community_degree: 2.0,
            community_local: 0.8,
            district_size: 10_000,
            layers: [
                Layer { name: "household".into(), beta_multiplier: 1.0, weight: 3.0 },
                Layer { name: "school".into(), beta_multiplier: 1.0, weight: 1.0 },
                Layer { name: "work".into(), beta_multiplier: 1.0, weight: 1.0 },
                Layer { name: "community".into(), beta_multiplier: 1.0, weight: 0.5 },
            ],
        }
    }
}

/// Layer indices.
pub const HOUSEHOLD: u8 = 0;
/// The school layer.
pub const SCHOOL: u8 = 1;
/// The work layer.
pub const WORK: u8 = 2;
/// The community layer.
pub const COMMUNITY: u8 = 3;

struct District {
    pairs: Vec<(u32, u32)>,
    layers: Vec<u8>,
    ages: Vec<u8>,
}

fn clique(members: &[u32], layer: u8, d: &mut District) {
    for (i, &a) in members.iter().enumerate() {
        for &b in &members[i + 1..] {
            d.pairs.push((a, b));
            d.layers.push(layer);
        }
    }
}

impl Synthetic {
    /// Checks the parameters (names the bad one).
    pub fn check(&self) -> Result<()> {
        if self.household_sizes.is_empty()
            || self.household_sizes.iter().any(|&p| !(0.0..=1.0).contains(&p))
            || self.household_sizes.iter().sum::<f64>() <= 0.0
        {
            return Err(AbmError::config("household_sizes", "expected shares in [0, 1] with a positive sum"));
        }
        if self.class_size < 1 || self.team_size < 1 {
            return Err(AbmError::config("class_size", "class and team sizes must be ≥ 1"));
        }
        if !(0.0..=1.0).contains(&self.employment) || !(0.0..=1.0).contains(&self.community_local) {
            return Err(AbmError::config("employment", "shares must be in [0, 1]"));
        }
        if !(0.0..=1000.0).contains(&self.community_degree) {
            return Err(AbmError::config("community_degree", "expected a mean degree in [0, 1000]"));
        }
        if self.district_size < 100 {
            return Err(AbmError::config("district_size", "expected at least 100 agents per district"));
        }
        Ok(())
    }

    /// Builds a population of `n` agents from `seed`.
    ///
    /// ```
    /// use parsim_abm::population::Synthetic;
    /// let p = Synthetic::default().build(20_000, 7).unwrap();
    /// assert_eq!(p.agents(), 20_000);
    /// assert_eq!(p.layers.len(), 4);
    /// let mean = 2.0 * p.graph.edges() as f64 / 20_000.0;
    /// assert!(mean > 6.0 && mean < 16.0);
    /// ```
    pub fn build(&self, n: usize, seed: u64) -> Result<Population> {
        self.check()?;
        if n == 0 || n >= u32::MAX as usize {
            return Err(AbmError::config("agents", format!("expected 1..2^32-1 agents, found {n}")));
        }
        let key = StreamKey::new(seed).purpose("abm.synthetic");
        let districts = n.div_ceil(self.district_size);
        let parts: Vec<District> = (0..districts)
            .into_par_iter()
            .map(|d| {
                let lo = d * self.district_size;
                let hi = ((d + 1) * self.district_size).min(n);
                self.district(lo as u32, hi as u32, n as u32, &mut key.with(d as u64).stream())
            })
            .collect();
        let mut pairs = Vec::with_capacity(parts.iter().map(|d| d.pairs.len()).sum());
        let mut layers = Vec::with_capacity(pairs.capacity());
        let mut ages = Vec::with_capacity(n);
        for d in parts {
            pairs.extend_from_slice(&d.pairs);
            layers.extend_from_slice(&d.layers);
            ages.extend_from_slice(&d.ages);
        }
        let (graph, dropped): (Csr, _) = Csr::from_pairs(n, pairs, Some(layers));
        Ok(Population { graph, layers: self.layers.to_vec(), ages: Some(ages), dropped })
    }

    /// The districts of a population of `n` agents.
    pub fn districts(&self, n: usize) -> usize {
        n.div_ceil(self.district_size)
    }

    /// Emits district `d`'s contacts (u, v, layer) of a population of `n`
    /// agents from `seed`: exactly the pairs [`build`](Self::build) puts in
    /// the graph for it (self-loops and repeats included).
    pub fn emit_district(&self, d: usize, n: usize, seed: u64, sink: &mut dyn FnMut(u32, u32, u8)) {
        let key = StreamKey::new(seed).purpose("abm.synthetic");
        let lo = d * self.district_size;
        let hi = ((d + 1) * self.district_size).min(n);
        let dist = self.district(lo as u32, hi as u32, n as u32, &mut key.with(d as u64).stream());
        for (&(u, v), &l) in dist.pairs.iter().zip(&dist.layers) {
            sink(u, v, l);
        }
    }

    fn district(&self, lo: u32, hi: u32, n: u32, s: &mut Stream) -> District {
        let size = (hi - lo) as usize;
        let mut d = District {
            pairs: Vec::with_capacity(size * 6),
            layers: Vec::with_capacity(size * 6),
            ages: Vec::with_capacity(size),
        };
        let total: f64 = self.household_sizes.iter().sum();
        // Households.
        let mut a = lo;
        let mut members = Vec::new();
        while a < hi {
            let mut u = s.uniform() * total;
            let mut k = self.household_sizes.len();
            for (i, &p) in self.household_sizes.iter().enumerate() {
                if u < p {
                    k = i + 1;
                    break;
                }
                u -= p;
            }
            let k = (k as u32).min(hi - a);
            members.clear();
            for m in 0..k {
                members.push(a + m);
                let age = if m < 2 { 18 + s.below(62) } else { s.below(18) };
                d.ages.push(age as u8);
            }
            clique(&members, HOUSEHOLD, &mut d);
            a += k;
        }
        // Schools: one grade per age 5..=17, classes in id order.
        for age in 5u8..=17 {
            let pupils: Vec<u32> = (lo..hi).filter(|&x| d.ages[(x - lo) as usize] == age).collect();
            for class in pupils.chunks(self.class_size) {
                clique(class, SCHOOL, &mut d);
            }
        }
        // Workplaces.
        let workers: Vec<u32> = (lo..hi)
            .filter(|&x| (18..=64).contains(&d.ages[(x - lo) as usize]) && s.uniform() < self.employment)
            .collect();
        for team in workers.chunks(self.team_size) {
            clique(team, WORK, &mut d);
        }
        // Community: half an edge per agent per unit of mean degree.
        let m = (size as f64 * self.community_degree / 2.0).round() as u64;
        for _ in 0..m {
            let u = lo + s.below(u64::from(hi - lo)) as u32;
            let v = if s.uniform() < self.community_local {
                lo + s.below(u64::from(hi - lo)) as u32
            } else {
                s.below(u64::from(n)) as u32
            };
            d.pairs.push((u, v));
            d.layers.push(COMMUNITY);
        }
        d
    }
}
