//! Edge lists: SNAP text (`#` comments, whitespace-separated pairs, any
//! integer ids) and little-endian `u32` pairs. Both are made undirected,
//! self-loops and duplicates dropped, ids renumbered densely in order of
//! first appearance.

use std::collections::HashMap;
use std::io::{BufRead, BufReader, Read};
use std::path::Path;

use super::parse_err;
use crate::error::{PartitionError, Result};
use crate::graph::Graph;

fn open(path: &Path) -> Result<std::fs::File> {
    std::fs::File::open(path).map_err(|source| PartitionError::Io { path: path.display().to_string(), source })
}

/// Edges of a file read one at a time, with ids renumbered densely as they
/// appear: what the streaming partitioners consume.
pub struct EdgeStream {
    inner: Box<dyn Iterator<Item = Result<(u64, u64)>>>,
    ids: HashMap<u64, u32>,
}

impl EdgeStream {
    /// A stream over a SNAP text edge list.
    pub fn text(path: &Path) -> Result<EdgeStream> {
        let file = path.display().to_string();
        let reader = BufReader::new(open(path)?);
        let inner = reader.lines().enumerate().filter_map(move |(i, line)| {
            let line = match line {
                Ok(l) => l,
                Err(e) if e.kind() == std::io::ErrorKind::InvalidData => {
                    return Some(Err(parse_err(&file, i + 1, "not a text file (not UTF-8)")))
                }
                Err(e) => return Some(Err(PartitionError::Io { path: file.clone(), source: e })),
            };
            let t = line.trim();
            if t.is_empty() || t.starts_with('#') || t.starts_with('%') {
                return None;
            }
            let mut it = t.split_whitespace();
            let mut id = |what: &str| -> Result<u64> {
                let tok = it
                    .next()
                    .ok_or_else(|| parse_err(&file, i + 1, format!("missing the {what} vertex of an edge")))?;
                tok.parse::<u64>()
                    .map_err(|_| parse_err(&file, i + 1, format!("vertex id {}", super::describe_bad_int(tok))))
            };
            Some(id("first").and_then(|a| id("second").map(|b| (a, b))))
        });
        Ok(EdgeStream { inner: Box::new(inner), ids: HashMap::new() })
    }

    /// A stream over little-endian `u32` pairs.
    pub fn u32_pairs(path: &Path) -> Result<EdgeStream> {
        let file = path.display().to_string();
        let len = std::fs::metadata(path).map_err(|source| PartitionError::Io { path: file.clone(), source })?.len();
        if len % 8 != 0 {
            return Err(parse_err(&file, 0, format!("{len} bytes is not a whole number of u32 pairs (8 bytes each)")));
        }
        let mut reader = BufReader::new(open(path)?);
        let inner = std::iter::from_fn(move || {
            let mut b = [0u8; 8];
            match reader.read_exact(&mut b) {
                Ok(()) => Some(Ok((
                    u64::from(u32::from_le_bytes(b[..4].try_into().expect("4 bytes"))),
                    u64::from(u32::from_le_bytes(b[4..].try_into().expect("4 bytes"))),
                ))),
                Err(_) => None,
            }
        });
        Ok(EdgeStream { inner: Box::new(inner), ids: HashMap::new() })
    }

    fn id(&mut self, raw: u64) -> u32 {
        let next = self.ids.len() as u32;
        *self.ids.entry(raw).or_insert(next)
    }

    /// The number of distinct vertices seen so far.
    pub fn vertices(&self) -> usize {
        self.ids.len()
    }
}

impl Iterator for EdgeStream {
    type Item = Result<(u32, u32)>;
    fn next(&mut self) -> Option<Self::Item> {
        Some(self.inner.next()?.map(|(a, b)| (self.id(a), self.id(b))))
    }
}

fn build(stream: EdgeStream) -> Result<Graph> {
    let mut stream = stream;
    let mut edges = Vec::new();
    for e in stream.by_ref() {
        let (a, b) = e?;
        if a != b {
            edges.push((a.min(b), a.max(b), 1u32));
        }
    }
    edges.sort_unstable();
    edges.dedup();
    Graph::from_edges(stream.vertices(), &edges)
}

/// Reads a SNAP text edge list into an undirected graph.
pub fn read_edge_list(path: &Path) -> Result<Graph> {
    build(EdgeStream::text(path)?)
}

/// Reads little-endian `u32` pairs into an undirected graph.
pub fn read_edge_list_u32(path: &Path) -> Result<Graph> {
    build(EdgeStream::u32_pairs(path)?)
}
