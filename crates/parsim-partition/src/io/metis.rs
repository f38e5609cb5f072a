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

/// Unweighted vertex lines (fmt 0) read straight from the text, from byte
/// `pos` on, into the adjacency (0-based ids) and the row offsets, while
/// each line is plain ASCII digits and blanks with every neighbour in
/// `1..=n` and not the vertex itself, and fewer than `n` vertices have been
/// read; returns where it stopped (the start of the first line it did not
/// take, or past the end) and the lines it took. A line it does not take
/// (a comment, anything else, a neighbour out of range) is left to the
/// general path, which reads it and reports what is wrong.
fn fast_lines(
    b: &[u8],
    mut pos: usize,
    n: u64,
    count: &mut usize,
    adj: &mut Vec<u32>,
    xadj: &mut Vec<u64>,
) -> (usize, usize) {
    let mut lines = 0;
    'line: while pos < b.len() && (*count as u64) < n {
        let me = *count as u64 + 1;
        let at = adj.len();
        let (mut i, mut x, mut digits) = (pos, 0u64, 0usize);
        loop {
            // The end of the text ends the line as a newline does.
            let c = b.get(i).copied().unwrap_or(b'\n');
            if c.is_ascii_digit() {
                if digits == 18 {
                    adj.truncate(at);
                    break 'line; // 19 digits or more
                }
                x = x * 10 + u64::from(c - b'0');
                digits += 1;
                i += 1;
                continue;
            }
            if digits > 0 {
                if x < 1 || x > n || x == me {
                    adj.truncate(at);
                    break 'line;
                }
                adj.push((x - 1) as u32);
                (x, digits) = (0, 0);
            }
            match c {
                b'\n' => break,
                b' ' | b'\t' | b'\r' | 0x0b | 0x0c => i += 1,
                _ => {
                    adj.truncate(at);
                    break 'line;
                }
            }
        }
        xadj.push(adj.len() as u64);
        *count += 1;
        lines += 1;
        pos = i + 1;
    }
    (pos, lines)
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
    parse_with(text, file, true)
}

/// [`parse_metis`], with the sweep over unweighted plain lines or (`fast`
/// false, for tests) every line by the general path.
fn parse_with(text: &str, file: &str, fast: bool) -> Result<Graph> {
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
    let simple = fast && !has_size && !has_vw && !has_ew;
    // The body: line by line after the header's, unweighted plain lines
    // taken in one sweep over the bytes, every other line by the general
    // path below (as `str::lines` splits them: at "\n", less one "\r"
    // before it).
    let bytes = text.as_bytes();
    let header_end = header.as_ptr() as usize - text.as_ptr() as usize + header.len();
    let mut pos = bytes[header_end..].iter().position(|&c| c == b'\n').map_or(bytes.len(), |k| header_end + k + 1);
    let mut ln = hline + 2;
    loop {
        if simple && count < n {
            let (to, took) = fast_lines(bytes, pos, n as u64, &mut count, &mut adjncy, &mut xadj);
            if took > 0 {
                adjwgt.resize(adjncy.len(), 1);
                vwgt.resize(count, 1);
                (pos, ln, last_line) = (to, ln + took, ln + took - 1);
            }
        }
        if pos >= bytes.len() {
            break;
        }
        let end = bytes[pos..].iter().position(|&c| c == b'\n').map_or(bytes.len(), |k| pos + k);
        let mut line = &text[pos..end];
        if end < bytes.len() {
            line = line.strip_suffix('\r').unwrap_or(line);
        }
        pos = end + 1;
        ln += 1;
        let ln = ln - 1;
        if line.trim_start().starts_with('%') {
            continue;
        }
        if count == n {
            if line.trim().is_empty() {
                continue;
            }
            return Err(parse_err(file, ln, format!("more vertex lines than the {n} vertices the header declares")));
        }
        last_line = ln;
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
                if w <= 0 || w > i64::from(u32::MAX) {
                    return Err(parse_err(
                        file,
                        ln,
                        format!("vertex {}: edge to {u} has weight {w} (must be in 1..=2^32 - 1)", count + 1),
                    ));
                }
                w as u32
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

#[cfg(test)]
mod tests {
    use super::parse_with;

    /// Texts of unweighted graphs with every kind of line the reader meets:
    /// comments (also indented), blank lines, CR LF endings, tabs and
    /// trailing blanks, a missing final newline, and defects (a neighbour
    /// out of range, a self-loop, a sign, a letter, 19 digits, too many or
    /// too few lines, a missing reverse edge).
    fn texts() -> Vec<String> {
        let mut x = 3u64;
        let mut next = |m: u64| {
            x = x.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            (x >> 33) % m
        };
        let mut out = Vec::new();
        for case in 0..400 {
            let n = 1 + next(12) as usize;
            let mut adj = vec![std::collections::BTreeSet::new(); n];
            for _ in 0..next(3 * n as u64 + 1) {
                let (a, b) = (next(n as u64) as usize, next(n as u64) as usize);
                if a != b {
                    adj[a].insert(b);
                    adj[b].insert(a);
                }
            }
            let m: usize = adj.iter().map(|r| r.len()).sum::<usize>() / 2;
            let nl = if next(4) == 0 { "\r\n" } else { "\n" };
            let mut t = String::new();
            if next(3) == 0 {
                t += &format!("% a comment{nl}");
            }
            t += &format!("{n} {m}{nl}");
            for (v, row) in adj.iter().enumerate() {
                if next(6) == 0 {
                    t += &format!("{}% between vertices{nl}", if next(2) == 0 { "  " } else { "" });
                }
                let mut ids: Vec<String> = row.iter().map(|u| (u + 1).to_string()).collect();
                if next(3) == 0 {
                    ids.reverse();
                }
                match (case % 13, next(8)) {
                    (0, 0) => ids.push((n + 1).to_string()),
                    (1, 0) => ids.push((v + 1).to_string()),
                    (2, 0) => ids.push("-1".into()),
                    (3, 0) => ids.push("x7".into()),
                    (4, 0) => ids.push("1234567890123456789".into()),
                    (5, 0) => ids.push("0".into()),
                    (6, 0) if !ids.is_empty() => {
                        ids.pop();
                    }
                    _ => {}
                }
                let sep = if next(4) == 0 { "\t" } else { " " };
                t += &ids.join(sep);
                if next(5) == 0 {
                    t += "  ";
                }
                if v + 1 < n || next(3) > 0 {
                    t += nl;
                }
            }
            match case % 17 {
                0 => t += &format!("{nl}{nl}"),
                1 => t += &format!("1{nl}"),
                2 => t = t.rsplitn(2, nl).last().unwrap_or("").to_string(),
                _ => {}
            }
            out.push(t);
        }
        out
    }

    #[test]
    fn the_sweep_over_plain_lines_reads_what_the_general_path_reads() {
        let (mut ok, mut bad) = (0, 0);
        for t in texts() {
            let (fast, general) = (parse_with(&t, "g.graph", true), parse_with(&t, "g.graph", false));
            match (&fast, &general) {
                (Ok(a), Ok(b)) => {
                    assert_eq!(a, b, "{t:?}");
                    ok += 1;
                }
                (Err(a), Err(b)) => {
                    assert_eq!(a.to_string(), b.to_string(), "{t:?}");
                    bad += 1;
                }
                _ => panic!("{t:?}: {fast:?} against {general:?}"),
            }
        }
        assert!(ok > 100 && bad > 50, "{ok} read, {bad} refused");
    }
}
