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
        // `parts` grows as vertices are placed: `n` may come from a file's
        // header, which must not size an allocation before the body is read.
        Stream { method, k, capacity, alpha, size: vec![0.0; k], conn: vec![0.0; k], parts: Vec::new() }
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
        if v >= self.parts.len() {
            self.parts.resize(v + 1, u32::MAX);
        }
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

/// What the header of a streamed METIS file said, and the stream it started.
struct Head {
    s: Stream,
    n: usize,
    m: i64,
    ew: bool,
    vw: bool,
    size: bool,
    ncon: usize,
    line: usize,
}

/// A 64-bit mix of an undirected edge and its weight, for the one-pass
/// symmetry check of [`stream_metis`].
fn edge_hash(a: u64, b: u64, w: i64) -> u64 {
    let mut z =
        a.wrapping_mul(0x9E37_79B9_7F4A_7C15) ^ b.rotate_left(32) ^ (w as u64).wrapping_mul(0xD6E8_FEB8_6659_FD93);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// Partitions a METIS file while reading it line by line (unit vertex
/// weights; edge weights ignored), holding one part id per vertex and
/// nothing of the graph. The file is checked as [`crate::io::parse_metis`]
/// checks it: the header, every token, neighbour ids in 1..=n, no
/// self-loops, edge weights > 0, the vertex and edge counts, no lines after
/// the last vertex; symmetry (every edge listed from both ends with the
/// same weight) is checked with a pair of order-independent 64-bit edge
/// hashes, which a non-symmetric file fails but with probability about 2⁻⁶⁴;
/// duplicate edges (a neighbour twice in one row) and weight totals beyond
/// [`crate::MAX_TOTAL_WEIGHT`] are refused as well.
pub fn stream_metis(path: &Path, cfg: &Config, method: Streaming) -> Result<Vec<u32>> {
    let file = path.display().to_string();
    let f = std::fs::File::open(path).map_err(|source| PartitionError::Io { path: file.clone(), source })?;
    if f.metadata().is_ok_and(|m| m.is_dir()) {
        let source = std::io::Error::new(std::io::ErrorKind::IsADirectory, "is a directory");
        return Err(PartitionError::Io { path: file, source });
    }
    let int = |t: &str, ln: usize, what: &str| -> Result<i64> {
        t.parse::<i64>().map_err(|_| parse_err(&file, ln, format!("{what} {}", crate::io::describe_bad_int(t))))
    };
    let mut lines = BufReader::new(f).lines().enumerate();
    let mut state: Option<Head> = None;
    let mut v = 0usize;
    let mut entries = 0i64;
    // Weight totals (per constraint, and of the edges counted from both ends).
    let mut vtotal = [0i128; 64];
    let mut etotal = 0i128;
    let mut sorted: Vec<usize> = Vec::new();
    let (mut up, mut down) = (0u64, 0u64);
    let mut last_line = 0usize;
    for (i, line) in lines.by_ref() {
        let ln = i + 1;
        let line = line.map_err(|e| match e.kind() {
            std::io::ErrorKind::InvalidData => parse_err(&file, ln, "not a text file (not UTF-8)"),
            _ => PartitionError::Io { path: file.clone(), source: e },
        })?;
        if line.trim_start().starts_with('%') {
            continue;
        }
        match &mut state {
            None => {
                let h: Vec<&str> = line.split_whitespace().collect();
                if h.len() < 2 || h.len() > 4 {
                    return Err(parse_err(
                        &file,
                        ln,
                        format!("the header has {} field(s): expected \"n m [fmt [ncon]]\"", h.len()),
                    ));
                }
                let n = int(h[0], ln, "vertex count")?;
                let m = int(h[1], ln, "edge count")?;
                if n < 0 || m < 0 || n > u32::MAX as i64 {
                    return Err(parse_err(&file, ln, format!("vertex count {n} and edge count {m} must be >= 0")));
                }
                let fmt = h.get(2).copied().unwrap_or("0");
                if fmt.len() > 3 || !fmt.chars().all(|c| c == '0' || c == '1') {
                    return Err(parse_err(&file, ln, "fmt: expected up to three 0/1 digits (e.g. 0, 1, 10, 11, 100)"));
                }
                let fmt = format!("{fmt:0>3}");
                let (size, vw, ew) = (&fmt[0..1] == "1", &fmt[1..2] == "1", &fmt[2..3] == "1");
                let ncon = match h.get(3) {
                    Some(t) => {
                        let c = int(t, ln, "ncon")?;
                        if !(1..=64).contains(&c) || !vw {
                            return Err(parse_err(&file, ln, format!("ncon {c}: needs vertex weights and 1..=64")));
                        }
                        c as usize
                    }
                    None => 1,
                };
                if cfg.k > n as usize {
                    return Err(PartitionError::BadArgument(format!(
                        "K = {} is more than the {n} vertices of {file}: some part would be empty",
                        cfg.k
                    )));
                }
                let s = Stream::new(method, cfg, n as usize, m as usize);
                state = Some(Head { s, n: n as usize, m, ew, vw, size, ncon, line: ln });
            }
            Some(Head { s, n, ew, vw, size, ncon, .. }) => {
                if v == *n {
                    if line.trim().is_empty() {
                        continue;
                    }
                    return Err(parse_err(
                        &file,
                        ln,
                        format!("more vertex lines than the {n} vertices the header declares"),
                    ));
                }
                last_line = ln;
                let me = v + 1;
                let mut toks = line.split_whitespace();
                let skip = usize::from(*size) + if *vw { *ncon } else { 0 };
                for j in 0..skip {
                    let t = toks
                        .next()
                        .ok_or_else(|| parse_err(&file, ln, format!("vertex {me}: missing a size or weight")))?;
                    let w = int(t, ln, if j == 0 && *size { "vertex size" } else { "vertex weight" })?;
                    if w < 0 {
                        return Err(parse_err(&file, ln, format!("vertex {me}: negative size or weight {w}")));
                    }
                    let c = j - usize::from(*size);
                    if !(j == 0 && *size) {
                        vtotal[c] += i128::from(w);
                    }
                }
                let mut nb = Vec::new();
                while let Some(t) = toks.next() {
                    let u = int(t, ln, "neighbour")?;
                    if u < 1 || u as usize > *n {
                        return Err(parse_err(&file, ln, format!("vertex {me}: neighbour {u} is outside 1..={n}")));
                    }
                    if u as usize == me {
                        return Err(parse_err(&file, ln, format!("vertex {me}: self-loop")));
                    }
                    let w = if *ew {
                        let t = toks.next().ok_or_else(|| {
                            parse_err(&file, ln, format!("vertex {me}: neighbour {u} has no edge weight"))
                        })?;
                        let w = int(t, ln, "edge weight")?;
                        if w <= 0 || w > i64::from(u32::MAX) {
                            return Err(parse_err(
                                &file,
                                ln,
                                format!("vertex {me}: edge to {u} has weight {w} (must be in 1..=2^32 - 1)"),
                            ));
                        }
                        w
                    } else {
                        1
                    };
                    let (a, b) = (me as u64, u as u64);
                    if a < b {
                        up = up.wrapping_add(edge_hash(a, b, w));
                    } else {
                        down = down.wrapping_add(edge_hash(b, a, w));
                    }
                    entries += 1;
                    etotal += i128::from(w);
                    nb.push(u as usize - 1);
                }
                // A duplicate edge is a neighbour listed twice in one row.
                sorted.clear();
                sorted.extend_from_slice(&nb);
                sorted.sort_unstable();
                if let Some(d) = sorted.windows(2).find(|p| p[0] == p[1]) {
                    return Err(parse_err(&file, ln, format!("vertex {me}: duplicate edge {me}-{}", d[0] + 1)));
                }
                s.place(v, nb.into_iter());
                v += 1;
            }
        }
    }
    let Head { s, n, m, line: hline, .. } =
        state.ok_or_else(|| parse_err(&file, 0, "empty file: expected a header \"n m [fmt [ncon]]\""))?;
    if v != n {
        return Err(parse_err(
            &file,
            last_line.max(hline),
            format!("the header declares {n} vertices but the file has {v} vertex lines"),
        ));
    }
    if entries != 2 * m {
        return Err(parse_err(
            &file,
            hline,
            format!(
                "the header declares {m} edges but the adjacency lists hold {entries} entries ({} edges)",
                entries as f64 / 2.0
            ),
        ));
    }
    let limit = i128::from(crate::MAX_TOTAL_WEIGHT);
    if vtotal.iter().any(|&t| t > limit) {
        return Err(parse_err(
            &file,
            0,
            format!("the vertex weights sum to more than {limit} (2^53, the largest total parsim sums exactly): scale the weights down"),
        ));
    }
    let elimit = crate::MAX_TOTAL_EDGE_WEIGHT;
    if etotal / 2 > i128::from(elimit) {
        return Err(parse_err(
            &file,
            0,
            format!("the edge weights sum to more than {elimit} (2^32 - 1, the largest total parsim stores, as METIS): scale the weights down"),
        ));
    }
    if up != down {
        return Err(parse_err(
            &file,
            0,
            "the adjacency is not symmetric: some edge is not listed from both ends with the same weight",
        ));
    }
    let mut parts = s.parts;
    parts.resize(n, u32::MAX);
    Ok(parts)
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
    // `n` was counted from the data (pass 1), not taken from a header.
    s.parts = vec![u32::MAX; n];
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
