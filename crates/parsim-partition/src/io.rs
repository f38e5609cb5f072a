//! Graph and partition files: METIS graphs, SNAP edge lists (text and
//! little-endian u32 pairs), Matrix Market, coordinate files, and partition
//! files in gpmetis's format (one part id per line).

mod edgelist;
mod metis;
mod mtx;

use std::path::Path;

pub use edgelist::{read_edge_list, read_edge_list_u32, EdgeStream};
pub use metis::{parse_metis, read_metis, write_metis};
pub use mtx::{parse_mtx, read_mtx};

use crate::error::{PartitionError, Result};
use crate::graph::Graph;

pub(crate) fn read_text(path: &Path) -> Result<String> {
    std::fs::read_to_string(path).map_err(|source| PartitionError::Io { path: path.display().to_string(), source })
}

/// Why `tok` is not an i64, without quoting a token that is not a number
/// (a file given by mistake must not leak its content into logs).
pub(crate) fn describe_bad_int(tok: &str) -> String {
    let digits = tok.strip_prefix('-').unwrap_or(tok);
    if !digits.is_empty() && digits.bytes().all(|b| b.is_ascii_digit()) {
        format!("{tok} is out of range (at most {})", i64::MAX)
    } else if tok.len() <= 40 && tok.parse::<f64>().is_ok() {
        format!("\"{tok}\" is not an integer")
    } else {
        format!("is not a number (a token of {} characters)", tok.chars().count())
    }
}

pub(crate) fn parse_err(file: &str, line: usize, msg: impl Into<String>) -> PartitionError {
    PartitionError::Parse { file: file.to_string(), line, msg: msg.into() }
}

/// Reads a graph, choosing the reader by extension: `.mtx` Matrix Market,
/// `.txt`/`.el`/`.edges` SNAP edge list, `.bin`/`.u32` u32 pairs, anything
/// else METIS.
pub fn read_graph(path: &Path) -> Result<Graph> {
    match path.extension().and_then(|e| e.to_str()).unwrap_or("") {
        "mtx" => read_mtx(path),
        "txt" | "el" | "edges" | "snap" => read_edge_list(path),
        "bin" | "u32" => read_edge_list_u32(path),
        _ => read_metis(path),
    }
}

/// Reads a coordinate file (one vertex per line, 1 to 3 numbers) into `g`.
pub fn read_coords(path: &Path, g: &mut Graph) -> Result<()> {
    let text = read_text(path)?;
    let file = path.display().to_string();
    let mut coords = Vec::new();
    let mut dim = 0;
    let mut count = 0;
    for (i, line) in text.lines().enumerate() {
        let line = line.trim();
        if line.is_empty() || line.starts_with('%') || line.starts_with('#') {
            continue;
        }
        let xs: Vec<f64> = line
            .split_whitespace()
            .map(|t| {
                t.parse::<f64>().map_err(|_| parse_err(&file, i + 1, format!("a coordinate {}", describe_bad_int(t))))
            })
            .collect::<Result<_>>()?;
        if xs.is_empty() || xs.len() > 3 || (dim != 0 && xs.len() != dim) {
            return Err(parse_err(&file, i + 1, format!("expected {} coordinates, found {}", dim.max(1), xs.len())));
        }
        if let Some(x) = xs.iter().find(|x| !x.is_finite()) {
            return Err(parse_err(&file, i + 1, format!("coordinate {x} is not finite")));
        }
        dim = xs.len();
        coords.extend(xs);
        count += 1;
    }
    if count != g.n() {
        return Err(parse_err(&file, 0, format!("{count} coordinate lines for a graph of {} vertices", g.n())));
    }
    g.coords = Some(coords);
    g.dim = dim;
    Ok(())
}

/// Writes a partition in gpmetis's format: line i holds vertex i's part.
pub fn write_partition(path: &Path, parts: &[u32]) -> Result<()> {
    let mut s = String::with_capacity(parts.len() * 3);
    for p in parts {
        s.push_str(&p.to_string());
        s.push('\n');
    }
    parsim_core::io::write_atomic(path, s.as_bytes())
        .map_err(|source| PartitionError::Io { path: path.display().to_string(), source })
}

/// Reads a partition file (one part id per line) for a graph of `n` vertices.
pub fn read_partition(path: &Path, n: usize) -> Result<Vec<u32>> {
    let text = read_text(path)?;
    let file = path.display().to_string();
    let parts: Vec<u32> = text
        .lines()
        .enumerate()
        .filter(|(_, l)| !l.trim().is_empty())
        .map(|(i, l)| {
            l.trim().parse::<u32>().map_err(|_| {
                parse_err(
                    &file,
                    i + 1,
                    format!("expected a part id in 0..{}, found {}", u32::MAX, parsim_core::io::shown_token(l.trim())),
                )
            })
        })
        .collect::<Result<_>>()?;
    if parts.len() != n {
        return Err(parse_err(&file, 0, format!("{} part ids for {n} vertices", parts.len())));
    }
    Ok(parts)
}

/// Reads a file of pinned vertices (`--fixed`): one line per vertex, a part
/// id, or -1 for a vertex that is free to move.
pub fn read_fixed(path: &Path, n: usize) -> Result<Vec<u32>> {
    let text = read_text(path)?;
    let file = path.display().to_string();
    let v: Vec<u32> = text
        .lines()
        .enumerate()
        .filter(|(_, l)| !l.trim().is_empty())
        .map(|(i, l)| match l.trim().parse::<i64>() {
            Ok(-1) => Ok(crate::FREE),
            Ok(p) if p >= 0 && p < i64::from(u32::MAX) => Ok(p as u32),
            _ => Err(parse_err(
                &file,
                i + 1,
                format!(
                    "expected a part id in 0..{} or -1, found {}",
                    u32::MAX,
                    parsim_core::io::shown_token(l.trim())
                ),
            )),
        })
        .collect::<Result<_>>()?;
    if v.len() != n {
        return Err(parse_err(&file, 0, format!("{} lines for {n} vertices", v.len())));
    }
    Ok(v)
}
