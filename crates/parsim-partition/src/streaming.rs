//! One-pass streaming partitioning (LDG and FENNEL): each vertex, in stream
//! order, goes to the part its already-placed neighbours favour, discounted
//! by how full the part is. Memory: one part id per vertex. A METIS file can
//! be partitioned while it is read ([`stream_metis`]), without building the graph.

use std::io::{BufRead, BufReader};
use std::path::Path;

use crate::error::{PartitionError, Result};
use crate::graph::Graph;
use crate::io::parse_err;
use crate::partition::Config;

/// The streaming objective.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Streaming {
    /// Linear deterministic greedy (Stanton & Kliot): |N(v) ∩ P| · (1 − |P| / C).
    Ldg,
    /// FENNEL (Tsourakakis et al.): |N(v) ∩ P| − α γ |P|^(γ − 1), γ = 1.5.
    Fennel,
}

/// The state of a streaming partitioner: part sizes and assignments so far.
pub struct Stream {
    method: Streaming,
    k: usize,
    capacity: f64,
    alpha: f64,
    size: Vec<f64>,
    conn: Vec<f64>,
    /// Part of each vertex placed so far (`u32::MAX`: not yet).
    pub parts: Vec<u32>,
}

impl Stream {
    /// A partitioner for `n` vertices and `m` edges (FENNEL's α needs them).
    pub fn new(method: Streaming, cfg: &Config, n: usize, m: usize) -> Self {
        let k = cfg.k;
        let capacity = (1.0 + cfg.imbalance) * (n as f64 / k as f64).ceil();
        let alpha = (k as f64).sqrt() * m as f64 / (n as f64).powf(1.5).max(1.0);
        Stream { method, k, capacity, alpha, size: vec![0.0; k], conn: vec![0.0; k], parts: vec![u32::MAX; n] }
    }

    /// Places vertex `v` given its neighbours.
    pub fn place(&mut self, v: usize, neighbours: impl Iterator<Item = usize>) -> u32 {
        for u in neighbours {
            if let Some(&p) = self.parts.get(u) {
                if p != u32::MAX {
                    self.conn[p as usize] += 1.0;
                }
            }
        }
        let mut best = 0usize;
        let mut bs = f64::NEG_INFINITY;
        for p in 0..self.k {
            if self.size[p] + 1.0 > self.capacity {
                continue;
            }
            let s = match self.method {
                Streaming::Ldg => self.conn[p] * (1.0 - self.size[p] / self.capacity),
                Streaming::Fennel => self.conn[p] - self.alpha * 1.5 * self.size[p].sqrt(),
            };
            // Ties: the emptier part.
            if s > bs || (s == bs && self.size[p] < self.size[best]) {
                best = p;
                bs = s;
            }
        }
        if bs == f64::NEG_INFINITY {
            best = (0..self.k).min_by(|&a, &b| self.size[a].total_cmp(&self.size[b])).unwrap_or(0);
        }
        self.conn.iter_mut().for_each(|c| *c = 0.0);
        self.size[best] += 1.0;
        self.parts[v] = best as u32;
        best as u32
    }
}

/// Streams `g`'s vertices in id order.
pub fn stream_graph(g: &Graph, cfg: &Config, method: Streaming) -> Vec<u32> {
    let mut s = Stream::new(method, cfg, g.n(), g.edges());
    for v in 0..g.n() {
        s.place(v, g.neighbours(v).iter().map(|&u| u as usize));
    }
    s.parts
}

/// Partitions a METIS file while reading it line by line (unit vertex weights; edge weights ignored).
pub fn stream_metis(path: &Path, cfg: &Config, method: Streaming) -> Result<Vec<u32>> {
    let file = path.display().to_string();
    let f = std::fs::File::open(path).map_err(|source| PartitionError::Io { path: file.clone(), source })?;
    let mut lines = BufReader::new(f).lines().enumerate();
    let mut header = None;
    let mut state: Option<(Stream, bool, bool, usize)> = None;
    let mut v = 0usize;
    for (i, line) in lines.by_ref() {
        let line = line.map_err(|e| parse_err(&file, i + 1, e.to_string()))?;
        if line.trim_start().starts_with('%') {
            continue;
        }
        match &mut state {
            None => {
                let h: Vec<usize> = line
                    .split_whitespace()
                    .map(|t| t.parse().map_err(|_| parse_err(&file, i + 1, format!("bad header field \"{t}\""))))
                    .collect::<Result<_>>()?;
                if h.len() < 2 {
                    return Err(parse_err(&file, i + 1, "expected a header \"n m [fmt [ncon]]\""));
                }
                let fmt = format!("{:0>3}", h.get(2).copied().unwrap_or(0));
                let ncon = h.get(3).copied().unwrap_or(1);
                header = Some(h[0]);
                state = Some((Stream::new(method, cfg, h[0], h[1]), &fmt[2..3] == "1", &fmt[1..2] == "1", ncon));
            }
            Some((s, ew, vw, ncon)) => {
                if v >= header.unwrap_or(0) {
                    break;
                }
                let mut toks = line.split_whitespace().skip(if *vw { *ncon } else { 0 });
                let mut nb = Vec::new();
                while let Some(t) = toks.next() {
                    let u: usize = t.parse().map_err(|_| parse_err(&file, i + 1, format!("bad neighbour \"{t}\"")))?;
                    if *ew {
                        toks.next();
                    }
                    nb.push(u.wrapping_sub(1));
                }
                s.place(v, nb.into_iter());
                v += 1;
            }
        }
    }
    let (s, ..) = state.ok_or_else(|| parse_err(&file, 0, "empty file"))?;
    if v != s.parts.len() {
        return Err(parse_err(&file, 0, format!("{v} vertex lines for {} vertices", s.parts.len())));
    }
    Ok(s.parts)
}

/// Partitions an edge list (SNAP text, or `u32` pairs with `binary`) in one
/// streaming pass over its edges, after a counting pass: consecutive edges
/// with the same source form that vertex's neighbour list (SNAP lists are
/// sorted by source), and the vertex is placed when its list ends; vertices
/// that are never a source are placed last. Memory: a part id and an id
/// mapping per vertex. Returns the part of each vertex, by dense id in order
/// of first appearance (the numbering [`crate::io::read_edge_list`] uses).
pub fn stream_edge_list(path: &Path, cfg: &Config, method: Streaming, binary: bool) -> Result<Vec<u32>> {
    let open = || if binary { crate::io::EdgeStream::u32_pairs(path) } else { crate::io::EdgeStream::text(path) };
    // Pass 1: how many vertices and edges (for the capacity and FENNEL's α).
    let mut count = open()?;
    let mut m = 0usize;
    for e in count.by_ref() {
        e?;
        m += 1;
    }
    let n = count.vertices();
    if n == 0 {
        return Ok(Vec::new());
    }
    let mut s = Stream::new(method, cfg, n, m);
    let mut current: Option<u32> = None;
    let mut nb: Vec<usize> = Vec::new();
    for e in open()? {
        let (a, b) = e?;
        if current != Some(a) {
            if let Some(c) = current {
                if s.parts[c as usize] == u32::MAX {
                    s.place(c as usize, nb.drain(..));
                }
                nb.clear();
            }
            current = Some(a);
        }
        if a != b {
            nb.push(b as usize);
        }
    }
    if let Some(c) = current {
        if s.parts[c as usize] == u32::MAX {
            s.place(c as usize, nb.drain(..));
        }
    }
    for v in 0..n {
        if s.parts[v] == u32::MAX {
            s.place(v, std::iter::empty());
        }
    }
    Ok(s.parts)
}
