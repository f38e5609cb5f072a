//! Matrix Market coordinate files (`pattern`, `real`, `integer`; `general`
//! or `symmetric`) as graphs: entry (i, j) is edge i–j; the diagonal is
//! dropped; a general matrix is symmetrised; edge weights are 1.

use std::path::Path;

use super::{parse_err, read_text};
use crate::error::Result;
use crate::graph::Graph;

/// Reads a Matrix Market file.
pub fn read_mtx(path: &Path) -> Result<Graph> {
    parse_mtx(&read_text(path)?, &path.display().to_string())
}

/// Parses Matrix Market text.
pub fn parse_mtx(text: &str, file: &str) -> Result<Graph> {
    let mut lines = text.lines().enumerate();
    let Some((_, banner)) = lines.next() else { return Err(parse_err(file, 0, "empty file")) };
    let b: Vec<String> = banner.split_whitespace().map(str::to_lowercase).collect();
    if b.len() < 5 || b[0] != "%%matrixmarket" || b[1] != "matrix" || b[2] != "coordinate" {
        return Err(parse_err(file, 1, "expected \"%%MatrixMarket matrix coordinate <field> <symmetry>\""));
    }
    let field = b[3].as_str();
    if !matches!(field, "pattern" | "real" | "integer" | "double") {
        return Err(parse_err(file, 1, format!("field \"{field}\" is not supported (pattern, real, integer)")));
    }
    if !matches!(b[4].as_str(), "general" | "symmetric") {
        return Err(parse_err(file, 1, format!("symmetry \"{}\" is not supported (general, symmetric)", b[4])));
    }
    let mut size = None;
    let mut edges = Vec::new();
    let mut seen = 0usize;
    for (i, line) in lines {
        let t = line.trim();
        if t.is_empty() || t.starts_with('%') {
            continue;
        }
        let toks: Vec<&str> = t.split_whitespace().collect();
        let num = |k: usize| -> Result<usize> {
            toks.get(k)
                .ok_or_else(|| parse_err(file, i + 1, "too few numbers"))?
                .parse::<usize>()
                .map_err(|_| parse_err(file, i + 1, format!("entry {}: {}", k + 1, super::describe_bad_int(toks[k]))))
        };
        match size {
            None => {
                let (r, c, nnz) = (num(0)?, num(1)?, num(2)?);
                if r != c {
                    return Err(parse_err(file, i + 1, format!("a {r} x {c} matrix is not square")));
                }
                if r > u32::MAX as usize {
                    return Err(parse_err(file, i + 1, format!("{r} rows: at most 2^32 - 1 vertices are supported")));
                }
                size = Some((r, nnz));
            }
            Some((n, _)) => {
                let (a, b) = (num(0)?, num(1)?);
                if a < 1 || a > n || b < 1 || b > n {
                    return Err(parse_err(file, i + 1, format!("entry ({a}, {b}) outside 1..={n}")));
                }
                if field != "pattern" && toks.len() < 3 {
                    return Err(parse_err(file, i + 1, "missing the value"));
                }
                seen += 1;
                if a != b {
                    let (u, v) = ((a - 1) as u32, (b - 1) as u32);
                    edges.push((u.min(v), u.max(v), 1u32));
                }
            }
        }
    }
    let Some((n, nnz)) = size else { return Err(parse_err(file, 0, "missing the size line")) };
    if seen != nnz {
        return Err(parse_err(file, 0, format!("the size line declares {nnz} entries, the file has {seen}")));
    }
    edges.sort_unstable();
    edges.dedup();
    Graph::from_edges(n, &edges).map_err(|e| match e {
        e @ crate::PartitionError::Parse { .. } => e,
        other => parse_err(file, 0, other.to_string()),
    })
}
