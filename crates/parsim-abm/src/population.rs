//! Contact networks: read from a file (edge list text, little-endian `u32`
//! pairs, METIS), or generated — Erdős–Rényi G(N, M) as SEIR-net-v1 defines
//! it, or a [`synthetic`] population of households, schools, workplaces and
//! community contacts. Generation is parallel and a pure function of the
//! seed (never of the number of threads).

mod local;
mod split;
pub mod synthetic;

use std::io::{BufRead, BufReader, Read};
use std::path::Path;

use parsim_core::rng::philox4x32_10;
use parsim_graph::{BuildStats, Csr};
use rayon::prelude::*;

use crate::error::{AbmError, Result};

pub use local::LocalPopulation;
pub use synthetic::Synthetic;

/// A contact layer: edges of one kind, with their own transmission.
#[derive(Clone, Debug, PartialEq)]
pub struct Layer {
    /// The layer's name (`household`, `school`, `work`, `community`, or `contact`).
    pub name: String,
    /// β is multiplied by this on the layer's edges.
    pub beta_multiplier: f64,
    /// Contact intensity: an edge counts as this many independent daily
    /// contacts, so its daily probability is 1 − (1 − β·multiplier)^weight.
    pub weight: f64,
}

impl Layer {
    /// A layer with multiplier and weight 1.
    pub fn plain(name: &str) -> Layer {
        Layer { name: name.to_string(), beta_multiplier: 1.0, weight: 1.0 }
    }

    /// The daily transmission probability along one edge of this layer.
    pub fn probability(&self, beta: f64) -> f64 {
        let p = (beta * self.beta_multiplier).clamp(0.0, 1.0);
        1.0 - (1.0 - p).powf(self.weight)
    }
}

/// A population: the contact network, its layers and (for synthetic ones) ages.
#[derive(Clone, Debug)]
pub struct Population {
    /// The contact network; with several layers, `graph.layer` labels each edge.
    pub graph: Csr,
    /// The layers (one, `contact`, for a plain network). At most 8.
    pub layers: Vec<Layer>,
    /// Age in years of each agent, when known.
    pub ages: Option<Vec<u8>>,
    /// Self-loops and duplicate pairs dropped while building.
    pub dropped: BuildStats,
}

impl Population {
    /// The number of agents.
    pub fn agents(&self) -> usize {
        self.graph.n()
    }

    /// A single-layer population of a contact graph.
    pub fn from_graph(graph: Csr, dropped: BuildStats) -> Population {
        Population { graph, layers: vec![Layer::plain("contact")], ages: None, dropped }
    }

    /// Agents of each degree: `counts[k]` have k contacts.
    pub fn graph_degree_counts(&self) -> Vec<u64> {
        let mut c = Vec::new();
        for v in 0..self.graph.n() {
            let k = self.graph.degree(v);
            if k >= c.len() {
                c.resize(k + 1, 0);
            }
            c[k] += 1;
        }
        c
    }

    /// The index of the layer called `name`.
    pub fn layer(&self, name: &str) -> Option<usize> {
        self.layers.iter().position(|l| l.name == name)
    }

    /// Erdős–Rényi G(N, M): M = round(N·c/2) endpoint pairs, each endpoint
    /// uniform on 0..N (pair i drawn from a counter-based stream keyed by
    /// (seed, i)), self-loops and duplicates removed → Poisson(c) degrees.
    ///
    /// ```
    /// use parsim_abm::Population;
    /// let p = Population::erdos_renyi(10_000, 10.0, 1);
    /// let mean = 2.0 * p.graph.edges() as f64 / 10_000.0;
    /// assert!((mean - 10.0).abs() < 0.1);
    /// ```
    pub fn erdos_renyi(n: usize, mean_degree: f64, seed: u64) -> Population {
        let m = er_pairs(n, mean_degree);
        let pairs: Vec<(u32, u32)> = (0..m).into_par_iter().map(|i| er_pair(n, seed, i)).collect();
        let (graph, dropped) = Csr::from_pairs(n, pairs, None);
        Population::from_graph(graph, dropped)
    }

    /// Reads a contact network: `.u32`/`.bin` little-endian `u32` pairs,
    /// `.graph`/`.metis` METIS, anything else a text edge list (`u v` per
    /// line, 0-based ids, `#` or `%` comments). `agents`: the number of
    /// agents (ids must be below it; default: the largest id + 1).
    /// Self-loops are dropped and counted, or refused with `strict`.
    pub fn read(path: &Path, agents: Option<usize>, strict: bool) -> Result<Population> {
        let ext = path.extension().and_then(|e| e.to_str()).unwrap_or("").to_ascii_lowercase();
        let file = path.display().to_string();
        if ext == "graph" || ext == "metis" {
            let g = parsim_partition::io::read_graph(path).map_err(|e| AbmError::Parse {
                path: file.clone(),
                line: 0,
                msg: e.to_string(),
            })?;
            if let Some(n) = agents.filter(|&n| n != g.n()) {
                return Err(AbmError::config("agents", format!("{n}, but {file} has {} vertices", g.n())));
            }
            let mut csr = Csr::from_graph(&g);
            csr.weight = None;
            return Ok(Population::from_graph(csr, BuildStats::default()));
        }
        let pairs = if ext == "u32" || ext == "bin" { read_u32_pairs(path)? } else { read_text_pairs(path)? };
        let max = pairs.iter().map(|&(u, v, _)| u.max(v)).max().map_or(0, |m| m as usize + 1);
        let n = agents.unwrap_or(max);
        let mut clean = Vec::with_capacity(pairs.len());
        for (u, v, line) in pairs {
            if u as usize >= n || v as usize >= n {
                return Err(AbmError::Parse {
                    path: file,
                    line,
                    msg: format!("vertex id {} is beyond the population (agents = {n}: ids 0..{n})", u.max(v)),
                });
            }
            if u == v && strict {
                return Err(AbmError::Parse { path: file, line, msg: format!("self-loop {u} {v} (strict)") });
            }
            clean.push((u, v));
        }
        let (graph, dropped) = Csr::from_pairs(n, clean, None);
        Ok(Population::from_graph(graph, dropped))
    }
}

/// The endpoint pairs of G(N, M) with mean degree `c`: M = round(N·c/2).
pub fn er_pairs(n: usize, c: f64) -> u64 {
    (n as f64 * c / 2.0).round() as u64
}

/// Pair `i` of G(N, M) from `seed` (a counter-based draw: any rank can make any pair).
///
/// ```
/// use parsim_abm::population::er_pair;
/// let (u, v) = er_pair(1_000, 7, 42);
/// assert!(u < 1_000 && v < 1_000);
/// assert_eq!(er_pair(1_000, 7, 42), (u, v));
/// ```
#[inline]
pub fn er_pair(n: usize, seed: u64, i: u64) -> (u32, u32) {
    let key = [seed as u32, (seed >> 32) as u32];
    let r = philox4x32_10([i as u32, (i >> 32) as u32, 0x4552_0001, 0], key);
    let a = (u64::from(r[0]) << 32) | u64::from(r[1]);
    let b = (u64::from(r[2]) << 32) | u64::from(r[3]);
    let pick = |x: u64| ((u128::from(x) * n as u128) >> 64) as u32;
    (pick(a), pick(b))
}

fn open(path: &Path) -> Result<std::fs::File> {
    std::fs::File::open(path).map_err(|cause| AbmError::Io { path: path.display().to_string(), cause })
}

/// (u, v, line) triples of a text edge list.
fn read_text_pairs(path: &Path) -> Result<Vec<(u32, u32, u64)>> {
    let file = path.display().to_string();
    let mut out = Vec::new();
    for (i, line) in BufReader::new(open(path)?).lines().enumerate() {
        let line_no = i as u64 + 1;
        let line = line.map_err(|e| AbmError::Parse { path: file.clone(), line: line_no, msg: e.to_string() })?;
        let t = line.trim();
        if t.is_empty() || t.starts_with('#') || t.starts_with('%') {
            continue;
        }
        let toks: Vec<&str> = t.split_whitespace().collect();
        if toks.len() != 2 {
            return Err(AbmError::Parse {
                path: file,
                line: line_no,
                msg: format!("expected two vertex ids \"u v\", found {} token(s)", toks.len()),
            });
        }
        let id = |s: &str| {
            s.parse::<u32>().map_err(|_| AbmError::Parse {
                path: file.clone(),
                line: line_no,
                msg: format!("vertex id {} is not an integer in 0..2^32-1", parsim_core::io::shown_token(s)),
            })
        };
        out.push((id(toks[0])?, id(toks[1])?, line_no));
    }
    Ok(out)
}

/// (u, v, pair number) triples of a little-endian u32 pair file.
fn read_u32_pairs(path: &Path) -> Result<Vec<(u32, u32, u64)>> {
    let file = path.display().to_string();
    let mut bytes = Vec::new();
    open(path)?.read_to_end(&mut bytes).map_err(|cause| AbmError::Io { path: file.clone(), cause })?;
    if bytes.len() % 8 != 0 {
        return Err(AbmError::Parse {
            path: file,
            line: 0,
            msg: format!("{} bytes is not a whole number of u32 pairs (8 bytes each)", bytes.len()),
        });
    }
    Ok(bytes
        .chunks_exact(8)
        .enumerate()
        .map(|(i, c)| {
            let u = u32::from_le_bytes(c[..4].try_into().expect("4 bytes"));
            let v = u32::from_le_bytes(c[4..].try_into().expect("4 bytes"));
            (u, v, i as u64 + 1)
        })
        .collect())
}
