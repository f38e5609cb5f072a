//! Partitions, what is asked of them (k, balance, targets), and how good
//! they are (cut, volume, imbalance …).

use crate::error::{PartitionError, Result};
use crate::graph::Graph;

/// How much effort the multilevel method spends.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Preset {
    /// One V-cycle, few initial tries.
    Fast,
    /// The default: one V-cycle, k-way and pairwise band refinement (0.98 of
    /// gpmetis's cut in about 1.35× its time on the shared graphs).
    Default,
    /// More initial tries, two runs of two V-cycles, deeper pairwise bands and
    /// max-flow refinement: a lower cut (0.92 of gpmetis's) for about 7× the default's time.
    Strong,
}

impl Preset {
    /// Parses `fast | default | strong`.
    pub fn parse(s: &str) -> Option<Preset> {
        Some(match s {
            "fast" => Preset::Fast,
            "default" => Preset::Default,
            "strong" => Preset::Strong,
            _ => return None,
        })
    }
}

/// What the multilevel method minimises (gpmetis's `-objtype`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum Objective {
    /// The weighted edge cut.
    #[default]
    Cut,
    /// The total communication volume (the cut first, then volume refinement on the finest graph).
    Volume,
}

/// What a partitioner is asked for.
#[derive(Clone, Debug, PartialEq)]
pub struct Config {
    /// Number of parts.
    pub k: usize,
    /// Allowed imbalance ε: part weight ≤ (1 + ε) · ⌈target⌉ (0.03 = 3 %).
    pub imbalance: f64,
    /// Seed of every random choice.
    pub seed: u64,
    /// Effort.
    pub preset: Preset,
    /// Target fraction of the total weight per part (`None`: equal parts).
    pub targets: Option<Vec<f64>>,
    /// Vertices pinned to a part: `fixed[v]` is v's part, or [`FREE`].
    pub fixed: Option<Vec<u32>>,
    /// Every part must induce a connected subgraph (multilevel only).
    pub contiguous: bool,
    /// What the multilevel method minimises.
    pub objective: Objective,
}

/// A vertex that is not pinned (see [`Config::fixed`]).
pub const FREE: u32 = u32::MAX;

impl Config {
    /// `k` equal parts at 3 % imbalance.
    pub fn new(k: usize) -> Self {
        Config {
            k,
            imbalance: 0.03,
            seed: 0,
            preset: Preset::Default,
            targets: None,
            fixed: None,
            contiguous: false,
            objective: Objective::Cut,
        }
    }

    /// Checks the request against `g`.
    pub fn check(&self, g: &Graph) -> Result<()> {
        if self.k == 0 {
            return Err(PartitionError::BadArgument("K must be at least 1".into()));
        }
        if self.k > g.n() {
            return Err(PartitionError::BadArgument(format!(
                "K = {} is more than the {} vertices: some part would be empty",
                self.k,
                g.n()
            )));
        }
        if !(self.imbalance >= 0.0 && self.imbalance.is_finite()) {
            return Err(PartitionError::BadArgument(format!("imbalance {} must be >= 0", self.imbalance)));
        }
        if let Some(t) = &self.targets {
            if t.len() != self.k
                || t.iter().any(|&x| x.is_nan() || x <= 0.0)
                || (t.iter().sum::<f64>() - 1.0).abs() > 1e-6
            {
                return Err(PartitionError::BadArgument(format!(
                    "targets must be {} positive fractions summing to 1",
                    self.k
                )));
            }
        }
        if let Some(f) = &self.fixed {
            if f.len() != g.n() {
                return Err(PartitionError::BadArgument(format!(
                    "fixed has {} entries for {} vertices",
                    f.len(),
                    g.n()
                )));
            }
            if let Some((v, &p)) = f.iter().enumerate().find(|(_, &p)| p != FREE && p as usize >= self.k) {
                return Err(PartitionError::BadArgument(format!(
                    "vertex {} is pinned to part {p}, but K = {}",
                    v + 1,
                    self.k
                )));
            }
        }
        Ok(())
    }

    /// The target fraction of part `p`.
    pub fn target(&self, p: usize) -> f64 {
        self.targets.as_ref().map_or(1.0 / self.k as f64, |t| t[p])
    }
}

/// The largest weight each part may have, per constraint: ⌊(1 + ε)·⌈t_p·W_c⌉⌋
/// (the Walshaw/KaHIP rule, with integer weights).
#[derive(Clone, Debug, PartialEq)]
pub struct Limits {
    /// Number of constraints.
    pub ncon: usize,
    /// `k * ncon`, part-major.
    pub max: Vec<i64>,
}

impl Limits {
    /// The limits of `cfg` on a graph with total weights `total`.
    pub fn new(cfg: &Config, total: &[i64]) -> Limits {
        let ncon = total.len();
        let mut max = Vec::with_capacity(cfg.k * ncon);
        for p in 0..cfg.k {
            for &w in total {
                let target = (cfg.target(p) * w as f64 - 1e-9).ceil().max(0.0);
                max.push(((1.0 + cfg.imbalance) * target + 1e-9).floor() as i64);
            }
        }
        Limits { ncon, max }
    }

    /// Part `p`'s limit for constraint `c`.
    #[inline]
    pub fn get(&self, p: usize, c: usize) -> i64 {
        self.max[p * self.ncon + c]
    }
}

/// How good a partition is.
#[derive(Clone, Debug, PartialEq)]
pub struct Metrics {
    /// Total weight of edges between parts.
    pub cut: i64,
    /// Total communication volume: Σ_v size(v) · (number of other parts adjacent to v).
    pub volume: i64,
    /// Per constraint: max_p weight_p / (t_p · W).
    pub imbalance: Vec<f64>,
    /// Whether every part is within its limit ([`Limits`]).
    pub balanced: bool,
    /// Vertices with a neighbour in another part.
    pub boundary: usize,
    /// The most parts any part is adjacent to.
    pub max_neighbour_parts: usize,
    /// Parts without a vertex.
    pub empty_parts: usize,
    /// Weight per part and constraint, part-major.
    pub part_weights: Vec<i64>,
}

impl Metrics {
    /// The largest imbalance over constraints.
    pub fn max_imbalance(&self) -> f64 {
        self.imbalance.iter().copied().fold(0.0, f64::max)
    }
}

/// Measures `parts` (one part id per vertex, each < `cfg.k`).
pub fn metrics(g: &Graph, parts: &[u32], cfg: &Config) -> Metrics {
    let (k, ncon) = (cfg.k, g.ncon);
    let mut pw = vec![0i64; k * ncon];
    let mut count = vec![0usize; k];
    let (mut cut, mut volume, mut boundary) = (0i64, 0i64, 0usize);
    // Which parts touch which: a k × k bitmap.
    let mut touch = vec![0u64; (k * k).div_ceil(64)];
    let mut seen = vec![u32::MAX; k];
    for v in 0..g.n() {
        let p = parts[v] as usize;
        count[p] += 1;
        for (c, w) in g.weights(v).iter().enumerate() {
            pw[p * ncon + c] += w;
        }
        let mut others = 0;
        for (&u, &w) in g.neighbours(v).iter().zip(g.edge_weights(v)) {
            let q = parts[u as usize];
            if q as usize != p {
                cut += i64::from(w);
                let bit = p * k + q as usize;
                touch[bit / 64] |= 1 << (bit % 64);
                if seen[q as usize] != v as u32 {
                    seen[q as usize] = v as u32;
                    others += 1;
                }
            }
        }
        if others > 0 {
            boundary += 1;
            volume += others * g.vsize.as_ref().map_or(1, |s| s[v]);
        }
    }
    let total = g.total_weights();
    let limits = Limits::new(cfg, &total);
    let imbalance = (0..ncon)
        .map(|c| {
            (0..k)
                .map(|p| if total[c] == 0 { 1.0 } else { pw[p * ncon + c] as f64 / (cfg.target(p) * total[c] as f64) })
                .fold(0.0, f64::max)
        })
        .collect();
    let balanced = (0..k).all(|p| (0..ncon).all(|c| pw[p * ncon + c] <= limits.get(p, c)));
    Metrics {
        cut: cut / 2,
        volume,
        imbalance,
        balanced,
        boundary,
        max_neighbour_parts: (0..k)
            .map(|p| (0..k).filter(|&q| touch[(p * k + q) / 64] >> ((p * k + q) % 64) & 1 == 1).count())
            .max()
            .unwrap_or(0),
        empty_parts: count.iter().filter(|&&c| c == 0).count(),
        part_weights: pw,
    }
}
