//! The METIS graph format: a header `n m [fmt [ncon]]`, then one line per
//! vertex: `[size] [w_1 … w_ncon] (neighbour [edge weight])*`, 1-based ids,
//! `%` comment lines. `fmt` is three digits: vertex sizes, vertex weights,
//! edge weights (0, 1, 10, 11, 100, 101, 110, 111).

use std::path::Path;

use super::{parse_err, read_text};
use crate::error::Result;
use crate::graph::Graph;

/// Reads a METIS graph file.
pub fn read_metis(path: &Path) -> Result<Graph> {
    parse_metis(&read_text(path)?, &path.display().to_string())
}

fn int(tok: &str, file: &str, line: usize, what: &str) -> Result<i64> {
    tok.parse::<i64>().map_err(|_| parse_err(file, line, format!("{what} {}", super::describe_bad_int(tok))))
}

/// Reads a line of plain ASCII digits and blanks, handing each number to
/// `take`; false when the line holds anything else (a sign, a letter, a
/// non-ASCII byte, a number of 19 digits or more) or `take` refuses a
/// number, and the general path then reads the line and reports it.
#[inline(always)]
fn scan_plain(line: &[u8], mut take: impl FnMut(u64) -> bool) -> bool {
    let mut i = 0;
    while i < line.len() {
        let b = line[i];
        if matches!(b, b' ' | b'\t' | b'\r' | 0x0b | 0x0c) {
            i += 1;
            continue;
        }
        let start = i;
        let mut x: u64 = 0;
        while i < line.len() && line[i].is_ascii_digit() {
            if i - start == 18 {
                return false; // 19 digits or more: the general path says what is wrong
            }
            x = x * 10 + u64::from(line[i] - b'0');
            i += 1;
        }
        if i == start || (i < line.len() && !matches!(line[i], b' ' | b'\t' | b'\r' | 0x0b | 0x0c)) || !take(x) {
            return false;
        }
    }
    true
}

/// A plain line's numbers into `out` (false: not a plain line; `out` unusable).
fn plain_ints(line: &[u8], out: &mut Vec<i64>) -> bool {
    out.clear();
    scan_plain(line, |x| {
        out.push(x as i64);
        true
    })
}

/// An unweighted vertex line (fmt 0) appended to `adj` as 0-based ids;
/// false (with `adj` possibly extended) when the line is not plain or names
/// a neighbour out of range or the vertex itself (`me`, 1-based).
fn plain_row(line: &[u8], n: u64, me: u64, adj: &mut Vec<u32>) -> bool {
    scan_plain(line, |x| {
        let ok = (1..=n).contains(&x) && x != me;
        if ok {
            adj.push((x - 1) as u32);
        }
        ok
    })
}

/// A vertex line's tokens: parsed in one sweep when the line is plain, else
/// one at a time with the general parser and its messages.
enum Tokens<'a> {
    Plain(std::slice::Iter<'a, i64>),
    General(std::str::SplitWhitespace<'a>),
}

impl Tokens<'_> {
    /// The next token as an integer (`what` names it in an error), or `None` at the end of the line.
    fn next(&mut self, file: &str, line: usize, what: &str) -> Option<Result<i64>> {
        match self {
            Tokens::Plain(it) => it.next().map(|&x| Ok(x)),
            Tokens::General(it) => it.next().map(|t| int(t, file, line, what)),
        }
    }
}

/// Parses METIS graph text; `file` names it in errors.
///
/// ```
/// let g = parsim_partition::io::parse_metis("% a triangle\n3 3\n2 3\n1 3\n1 2\n", "t.graph").unwrap();
/// assert_eq!((g.n(), g.edges()), (3, 3));
/// let e = parsim_partition::io::parse_metis("3 3\n2 3\n1 3\n1\n", "bad.graph").unwrap_err();
/// assert!(e.to_string().starts_with("bad.graph:"), "{e}");
/// ```
pub fn parse_metis(text: &str, file: &str) -> Result<Graph> {
    let mut lines = text.lines().enumerate().filter(|(_, l)| !l.trim_start().starts_with('%'));
    let Some((hline, header)) = lines.next() else {
        return Err(parse_err(file, 0, "empty file: expected a header \"n m [fmt [ncon]]\""));
    };
    let h: Vec<&str> = header.split_whitespace().collect();
    if h.len() < 2 || h.len() > 4 {
        return Err(parse_err(
            file,
            hline + 1,
            format!("the header has {} field(s): expected \"n m [fmt [ncon]]\"", h.len()),
        ));
    }
    let n = int(h[0], file, hline + 1, "vertex count")?;
    let m = int(h[1], file, hline + 1, "edge count")?;
    if n < 0 || m < 0 || n > u32::MAX as i64 {
        return Err(parse_err(file, hline + 1, format!("vertex count {n} and edge count {m} must be >= 0")));
    }
    let fmt = h.get(2).copied().unwrap_or("0");
    if fmt.len() > 3 || !fmt.chars().all(|c| c == '0' || c == '1') {
        return Err(parse_err(
            file,
            hline + 1,
            "fmt: expected up to three 0/1 digits (e.g. 0, 1, 10, 11, 100)".to_string(),
        ));
    }
    let f = format!("{fmt:0>3}");
    let (has_size, has_vw, has_ew) = (&f[0..1] == "1", &f[1..2] == "1", &f[2..3] == "1");
    let ncon = match h.get(3) {
        Some(t) => {
            let c = int(t, file, hline + 1, "ncon")?;
            if !(1..=64).contains(&c) {
                return Err(parse_err(file, hline + 1, format!("ncon {c} must be in 1..=64")));
            }
            if !has_vw {
                return Err(parse_err(file, hline + 1, format!("ncon {c} given but fmt {fmt} has no vertex weights")));
            }
            c as usize
        }
        None => 1,
    };
    let n = n as usize;
    // Reserve what the header promises, but no more than the text can hold
    // (a vertex is at least a line, an adjacency entry at least two bytes):
    // a corrupt header must not allocate gigabytes before the body says it lied.
    let (nv, ne) = (n.min(text.len() + 1), (2 * m as usize).min(text.len() / 2 + 1));
    let mut xadj = Vec::with_capacity(nv + 1);
    xadj.push(0u64);
    let mut adjncy = Vec::with_capacity(ne);
    let mut adjwgt = Vec::with_capacity(ne);
    let mut vwgt = Vec::with_capacity(nv * ncon);
    let mut vsize = has_size.then(|| Vec::with_capacity(nv));
    let mut last_line = hline + 1;
    let mut count = 0usize;
    let mut plain: Vec<i64> = Vec::new();
    let simple = !has_size && !has_vw && !has_ew;
    for (i, line) in lines {
        let ln = i + 1;
        if count == n {
            if line.trim().is_empty() {
                continue;
            }
            return Err(parse_err(file, ln, format!("more vertex lines than the {n} vertices the header declares")));
        }
        last_line = ln;
        if simple {
            // Unweighted: digits straight into the adjacency.
            let at = adjncy.len();
            if plain_row(line.as_bytes(), n as u64, count as u64 + 1, &mut adjncy) {
                adjwgt.resize(adjncy.len(), 1);
                vwgt.push(1);
                xadj.push(adjncy.len() as u64);
                count += 1;
                continue;
            }
            adjncy.truncate(at);
        }
        let mut toks = if plain_ints(line.as_bytes(), &mut plain) {
            Tokens::Plain(plain.iter())
        } else {
            Tokens::General(line.split_whitespace())
        };
        if let Some(vs) = vsize.as_mut() {
            let s = toks
                .next(file, ln, "vertex size")
                .ok_or_else(|| parse_err(file, ln, format!("vertex {}: missing its size", count + 1)))??;
            if s < 0 {
                return Err(parse_err(file, ln, format!("vertex {}: negative size {s}", count + 1)));
            }
            vs.push(s);
        }
        for c in 0..ncon {
            if has_vw {
                let w = toks.next(file, ln, "vertex weight").ok_or_else(|| {
                    parse_err(file, ln, format!("vertex {}: missing weight {} of {ncon}", count + 1, c + 1))
                })??;
                if w < 0 {
                    return Err(parse_err(file, ln, format!("vertex {}: negative weight {w}", count + 1)));
                }
                vwgt.push(w);
            } else {
                vwgt.push(1);
            }
        }
        while let Some(u) = toks.next(file, ln, "neighbour") {
            let u = u?;
            if u < 1 || u as usize > n {
                return Err(parse_err(file, ln, format!("vertex {}: neighbour {u} is outside 1..={n}", count + 1)));
            }
            if u as usize == count + 1 {
                return Err(parse_err(file, ln, format!("vertex {}: self-loop", count + 1)));
            }
            let w = if has_ew {
                let w = toks.next(file, ln, "edge weight").ok_or_else(|| {
                    parse_err(file, ln, format!("vertex {}: neighbour {u} has no edge weight", count + 1))
                })??;
                if w <= 0 {
                    return Err(parse_err(
                        file,
                        ln,
                        format!("vertex {}: edge to {u} has weight {w} (must be > 0)", count + 1),
                    ));
                }
                w
            } else {
                1
            };
            adjncy.push((u - 1) as u32);
            adjwgt.push(w);
        }
        xadj.push(adjncy.len() as u64);
        count += 1;
    }
    if count < n {
        return Err(parse_err(
            file,
            last_line,
            format!("the header declares {n} vertices but the file has {count} vertex lines"),
        ));
    }
    if adjncy.len() as i64 != 2 * m {
        return Err(parse_err(
            file,
            hline + 1,
            format!(
                "the header declares {m} edges but the adjacency lists hold {} entries ({} edges)",
                adjncy.len(),
                adjncy.len() as f64 / 2.0
            ),
        ));
    }
    let g = Graph { xadj, adjncy, adjwgt, ncon, vwgt, vsize, coords: None, dim: 0 };
    g.validate().map_err(|msg| parse_err(file, 0, msg))?;
    Ok(g)
}

/// Writes `g` in METIS format (with the `fmt` its weights need).
pub fn write_metis(g: &Graph) -> String {
    let has_vw = g.ncon > 1 || g.vwgt.iter().any(|&w| w != 1);
    let has_ew = g.adjwgt.iter().any(|&w| w != 1);
    let has_size = g.vsize.is_some();
    let fmt = format!("{}{}{}", u8::from(has_size), u8::from(has_vw), u8::from(has_ew));
    let mut s = format!("{} {}", g.n(), g.edges());
    if fmt != "000" {
        s += &format!(" {}", fmt.trim_start_matches('0'));
        if g.ncon > 1 {
            s += &format!(" {}", g.ncon);
        }
    }
    s.push('\n');
    for v in 0..g.n() {
        let mut parts: Vec<String> = Vec::new();
        if let Some(vs) = &g.vsize {
            parts.push(vs[v].to_string());
        }
        if has_vw {
            parts.extend(g.weights(v).iter().map(i64::to_string));
        }
        for (&u, &w) in g.neighbours(v).iter().zip(g.edge_weights(v)) {
            parts.push((u + 1).to_string());
            if has_ew {
                parts.push(w.to_string());
            }
        }
        s += &parts.join(" ");
        s.push('\n');
    }
    s
}
