//! Contact-network files read in parallel: rank r of p reads bytes
//! `[L·r/p, L·(r+1)/p)` of a file of L bytes — whole `u32` pairs for binary
//! files, the lines that start there for text (a line belongs to the rank
//! holding its first byte) — and line numbers come from one exchange of line
//! counts. Errors are agreed: every rank reports the first bad line of the
//! file, whichever rank found it.

use std::fs::File;
use std::io::{BufRead, BufReader, Read, Seek, SeekFrom};
use std::path::Path;

use parsim_comm::{Comm, ReduceOp};

use crate::error::{AbmError, Result};

/// Pairs per generation unit.
const UNIT: usize = 1 << 20;

/// What this rank read.
pub(crate) struct Share {
    /// Agents in the whole population.
    pub n: usize,
    /// This rank's pairs (undirected; METIS: its vertex lines' entries).
    pub pairs: Vec<(u32, u32)>,
    /// For METIS: the edge count the header declares.
    pub metis_edges: Option<u64>,
}

impl Share {
    pub fn units(&self) -> usize {
        self.pairs.len().div_ceil(UNIT)
    }

    pub fn unit(&self, k: usize) -> &[(u32, u32)] {
        &self.pairs[k * UNIT..((k + 1) * UNIT).min(self.pairs.len())]
    }
}

/// A problem found by one rank: (line, message), or an I/O failure (line 0, io = true).
type Found = Option<(u64, String, bool)>;

/// The first problem any rank found (by line), the same on every rank.
fn agree<C: Comm>(comm: &C, file: &str, mine: Found) -> Result<()> {
    let all = comm.all_gather_value(&mine)?;
    match all.into_iter().flatten().min_by_key(|f| f.0) {
        None => Ok(()),
        Some((_, msg, true)) => Err(AbmError::Io { path: file.into(), cause: std::io::Error::other(msg) }),
        Some((line, msg, false)) => Err(AbmError::Parse { path: file.into(), line, msg }),
    }
}

fn io<T>(r: std::io::Result<T>) -> std::result::Result<T, (u64, String, bool)> {
    r.map_err(|e| (0, parsim_core::io::brief(&e), true))
}

/// Refuses what cannot be read by byte ranges: directories, devices, pipes
/// and sockets (`/dev/zero` never ends).
fn regular_file(path: &Path) -> std::result::Result<(), (u64, String, bool)> {
    let meta = io(std::fs::metadata(path))?;
    if meta.is_dir() {
        return Err((0, "is a directory, not a file".into(), true));
    }
    if !meta.is_file() {
        return Err((
            0,
            "not a regular file (a device, pipe or socket): a population is read by byte ranges, so it must be a file"
                .into(),
            true,
        ));
    }
    Ok(())
}

/// Reads this rank's share of `path` (see [`Population::read`](super::Population::read));
/// with `keep = false` only checks it (nothing is stored: `pairs` is empty).
pub(crate) fn read<C: Comm>(comm: &C, path: &Path, agents: Option<usize>, strict: bool, keep: bool) -> Result<Share> {
    let ext = path.extension().and_then(|e| e.to_str()).unwrap_or("").to_ascii_lowercase();
    agree(comm, &path.display().to_string(), regular_file(path).err())?;
    if ext == "graph" || ext == "metis" {
        return metis(comm, path, agents, keep);
    }
    // Ids beyond a given population, and self-loops when strict; without a
    // given size the population is the largest id + 1, which holds them all.
    let check = |u: u32, v: u32| match agents {
        Some(n) if u as usize >= n || v as usize >= n => {
            Some(format!("vertex id {} is beyond the population (agents = {n}: ids 0..{n})", u.max(v)))
        }
        _ if u == v && strict => Some(format!("self-loop {u} {v} (strict)")),
        _ => None,
    };
    let mut max = 0u64;
    let mut pairs = Vec::new();
    let mut take = |u: u32, v: u32| {
        max = max.max(u64::from(u.max(v)) + 1);
        if keep {
            pairs.push((u, v));
        }
    };
    if ext == "u32" || ext == "bin" {
        binary(comm, path, &check, &mut take)?
    } else {
        text(comm, path, &check, &mut take)?
    };
    let max = comm.all_reduce(&[max], ReduceOp::Max)?[0] as usize;
    if agents.is_none() && max >= u32::MAX as usize {
        return Err(AbmError::Parse {
            path: path.display().to_string(),
            line: 0,
            msg: format!("the largest agent id is {}: at most 2^32-2 agents (ids up to 4294967294)", max - 1),
        });
    }
    if let Some(n) = agents.filter(|&n| n > max && !keep && comm.rank() == 0) {
        // Said once, when the file is checked (`scan`): a population larger
        // than the file's ids is padded with agents that have no contacts.
        tracing::warn!(
            "{}: the largest agent id is {} but agents = {n}: the {} agents above it have no contacts (seed agents may fall on them); omit agents to take the file's size",
            path.display(),
            max as i64 - 1,
            n - max
        );
    }
    Ok(Share { n: agents.unwrap_or(max), pairs, metis_edges: None })
}

/// A pair's problem, if any.
type Check<'a> = &'a dyn Fn(u32, u32) -> Option<String>;

/// Hands this rank's pairs of a little-endian u32 pair file to `take`.
fn binary<C: Comm>(comm: &C, path: &Path, check: Check<'_>, take: &mut dyn FnMut(u32, u32)) -> Result<()> {
    let file = path.display().to_string();
    let (p, r) = (comm.size() as u64, comm.rank() as u64);
    let got = (|| {
        let mut f = io(File::open(path))?;
        let len = io(f.metadata())?.len();
        if len % 8 != 0 {
            return Err((0, format!("{len} bytes is not a whole number of u32 pairs (8 bytes each)"), false));
        }
        let pairs = len / 8;
        let (lo, hi) = (pairs * r / p, pairs * (r + 1) / p);
        io(f.seek(SeekFrom::Start(lo * 8)))?;
        let mut rd = BufReader::with_capacity(1 << 20, f);
        let mut c = [0u8; 8];
        for i in lo..hi {
            io(rd.read_exact(&mut c))?;
            let u = u32::from_le_bytes(c[..4].try_into().expect("4 bytes"));
            let v = u32::from_le_bytes(c[4..].try_into().expect("4 bytes"));
            if let Some(msg) = check(u, v) {
                return Err((i + 1, msg, false));
            }
            take(u, v);
        }
        Ok(())
    })();
    agree(comm, &file, got.err())
}

/// Visits the lines that start in this rank's byte range: `line(k, text)`
/// with k counted from 0; returns the number of lines.
fn lines_of_my_range<C: Comm>(
    comm: &C,
    path: &Path,
    mut line: impl FnMut(u64, &[u8]) -> std::result::Result<(), (u64, String, bool)>,
) -> std::result::Result<u64, (u64, String, bool)> {
    let (p, r) = (comm.size() as u64, comm.rank() as u64);
    let f = io(File::open(path))?;
    let meta = io(f.metadata())?;
    if meta.is_dir() {
        return Err((0, "is a directory, not a file".into(), true));
    }
    let len = meta.len();
    let (s, e) = (len * r / p, len * (r + 1) / p);
    let mut rd = BufReader::with_capacity(1 << 20, f);
    let mut buf = Vec::new();
    // A line belongs to the rank holding its first byte: start after the
    // first newline at or after s − 1.
    let mut pos = s;
    if s > 0 {
        io(rd.seek(SeekFrom::Start(s - 1)))?;
        pos = s - 1 + io(rd.read_until(b'\n', &mut buf))? as u64;
    }
    let mut k = 0u64;
    while pos < e {
        buf.clear();
        let got = io(rd.read_until(b'\n', &mut buf))?;
        if got == 0 {
            break;
        }
        pos += got as u64;
        let mut t: &[u8] = &buf;
        if t.last() == Some(&b'\n') {
            t = &t[..t.len() - 1];
        }
        if t.last() == Some(&b'\r') {
            t = &t[..t.len() - 1];
        }
        line(k, t)?;
        k += 1;
    }
    Ok(k)
}

/// The lines before this rank's first (from every rank's line count).
fn lines_before<C: Comm>(comm: &C, count: u64) -> Result<u64> {
    let all = comm.all_gather(vec![count])?;
    Ok(all[..comm.rank()].iter().map(|c| c[0]).sum())
}

/// Hands this rank's pairs of a text edge list to `take`.
fn text<C: Comm>(comm: &C, path: &Path, check: Check<'_>, take: &mut dyn FnMut(u32, u32)) -> Result<()> {
    let file = path.display().to_string();
    let got = lines_of_my_range(comm, path, |k, raw| {
        let ln = k + 1;
        let t = std::str::from_utf8(raw).map_err(|_| (ln, "not a text file (not UTF-8)".to_string(), false))?;
        let t = t.trim();
        if t.is_empty() || t.starts_with('#') || t.starts_with('%') {
            return Ok(());
        }
        let mut toks = t.split_whitespace();
        let (Some(a), Some(b), None) = (toks.next(), toks.next(), toks.next()) else {
            let found = t.split_whitespace().count();
            return Err((ln, format!("expected two vertex ids \"u v\", found {found} token(s)"), false));
        };
        let id = |s: &str| {
            s.parse::<u32>().map_err(|_| {
                (ln, format!("vertex id {} is not an integer in 0..2^32-1", parsim_core::io::shown_token(s)), false)
            })
        };
        let (u, v) = (id(a)?, id(b)?);
        if let Some(msg) = check(u, v) {
            return Err((ln, msg, false));
        }
        take(u, v);
        Ok(())
    });
    // Line numbers need every rank's count, even when this rank failed
    // (its count is then the failing line's).
    let (count, bad) = match got {
        Ok(c) => (c, None),
        Err(e) => (e.0, Some(e)),
    };
    let before = lines_before(comm, count)?;
    agree(comm, &file, bad.map(|(l, m, io)| (if io { 0 } else { before + l }, m, io)))
}

/// This rank's share of a METIS file: the entries (v, u) of the vertex lines
/// that start in its byte range. Two passes over the range: count the lines
/// (to number vertices and lines), then parse.
fn metis<C: Comm>(comm: &C, path: &Path, agents: Option<usize>, keep: bool) -> Result<Share> {
    let file = path.display().to_string();
    let header = metis_header(path);
    let header = match header {
        Ok(h) => {
            agree(comm, &file, None)?;
            h
        }
        Err(e) => {
            agree(comm, &file, Some(e))?;
            unreachable!("agree reports the error")
        }
    };
    let Header { line: hline, n, m, has_size, has_vw, has_ew, ncon } = header;
    if let Some(a) = agents.filter(|&a| a != n) {
        return Err(AbmError::config("agents", format!("{a}, but {file} has {n} vertices")));
    }
    // Pass 1: lines and non-comment lines.
    let mut nc = 0u64;
    let mut last_nc = 0u64;
    let counted = lines_of_my_range(comm, path, |k, raw| {
        if !is_comment(raw) {
            nc += 1;
            last_nc = k + 1;
        }
        Ok(())
    });
    let (lines, bad) = match counted {
        Ok(c) => (c, None),
        Err(e) => (0, Some(e)),
    };
    agree(comm, &file, bad)?;
    let all = comm.all_gather(vec![lines, nc])?;
    let line0: u64 = all[..comm.rank()].iter().map(|c| c[0]).sum();
    let nc0: u64 = all[..comm.rank()].iter().map(|c| c[1]).sum();
    let total_nc: u64 = all.iter().map(|c| c[1]).sum();
    let last = comm.all_reduce(&[if nc > 0 { line0 + last_nc } else { 0 }], ReduceOp::Max)?[0];
    // Pass 2: parse this rank's vertex lines.
    let mut pairs = Vec::new();
    let mut entries = 0u64;
    let mut at = nc0; // the non-comment lines before the current one
    let parsed = lines_of_my_range(comm, path, |k, raw| {
        if is_comment(raw) {
            return Ok(());
        }
        let index = at;
        at += 1;
        if index == 0 {
            return Ok(()); // the header
        }
        let ln = line0 + k + 1;
        let v = index - 1;
        let t = std::str::from_utf8(raw).map_err(|_| (ln, "not a text file (not UTF-8)".to_string(), false))?;
        if v >= n as u64 {
            if t.trim().is_empty() {
                return Ok(());
            }
            return Err((ln, format!("more vertex lines than the {n} vertices the header declares"), false));
        }
        let err = |msg: String| (ln, msg, false);
        let int = |tok: &str, what: &str| {
            tok.parse::<i64>().map_err(|_| {
                let kind = if tok.parse::<f64>().is_ok() { "not an integer" } else { "not a number" };
                err(format!("{what} {} is {kind}", parsim_core::io::shown_token(tok)))
            })
        };
        let mut toks = t.split_whitespace();
        let vn = v + 1;
        if has_size {
            let s = int(toks.next().ok_or_else(|| err(format!("vertex {vn}: missing its size")))?, "vertex size")?;
            if s < 0 {
                return Err(err(format!("vertex {vn}: negative size {s}")));
            }
        }
        if has_vw {
            for c in 0..ncon {
                let t = toks.next().ok_or_else(|| err(format!("vertex {vn}: missing weight {} of {ncon}", c + 1)))?;
                let w = int(t, "vertex weight")?;
                if w < 0 {
                    return Err(err(format!("vertex {vn}: negative weight {w}")));
                }
            }
        }
        while let Some(t) = toks.next() {
            let u = int(t, "neighbour")?;
            if u < 1 || u as u64 > n as u64 {
                return Err(err(format!("vertex {vn}: neighbour {u} is outside 1..={n}")));
            }
            if u as u64 == vn {
                return Err(err(format!("vertex {vn}: self-loop")));
            }
            if has_ew {
                let t = toks.next().ok_or_else(|| err(format!("vertex {vn}: neighbour {u} has no edge weight")))?;
                let w = int(t, "edge weight")?;
                if w <= 0 {
                    return Err(err(format!("vertex {vn}: edge to {u} has weight {w} (must be > 0)")));
                }
            }
            entries += 1;
            if keep {
                pairs.push((v as u32, (u - 1) as u32));
            }
        }
        Ok(())
    });
    agree(comm, &file, parsed.err())?;
    if total_nc.saturating_sub(1) < n as u64 {
        let msg =
            format!("the header declares {n} vertices but the file has {} vertex lines", total_nc.saturating_sub(1));
        return Err(AbmError::Parse { path: file, line: last.max(hline), msg });
    }
    let entries = comm.all_reduce(&[entries], ReduceOp::Sum)?[0];
    if entries != 2 * m {
        let msg = format!(
            "the header declares {m} edges but the adjacency lists hold {entries} entries ({} edges)",
            entries as f64 / 2.0
        );
        return Err(AbmError::Parse { path: file, line: hline, msg });
    }
    Ok(Share { n, pairs, metis_edges: Some(m) })
}

fn is_comment(raw: &[u8]) -> bool {
    raw.iter().find(|b| !b.is_ascii_whitespace()) == Some(&b'%')
}

struct Header {
    line: u64,
    n: usize,
    m: u64,
    has_size: bool,
    has_vw: bool,
    has_ew: bool,
    ncon: usize,
}

/// The header of a METIS file (every rank reads it from the start).
fn metis_header(path: &Path) -> std::result::Result<Header, (u64, String, bool)> {
    let f = io(File::open(path))?;
    if io(f.metadata())?.is_dir() {
        return Err((0, "is a directory, not a file".into(), true));
    }
    let mut rd = BufReader::new(f);
    let mut buf = Vec::new();
    let mut ln = 0u64;
    loop {
        buf.clear();
        if io(rd.read_until(b'\n', &mut buf))? == 0 {
            return Err((0, "empty file: expected a header \"n m [fmt [ncon]]\"".into(), false));
        }
        ln += 1;
        if !is_comment(&buf) {
            break;
        }
    }
    let err = |msg: String| (ln, msg, false);
    let text = String::from_utf8_lossy(&buf);
    let h: Vec<&str> = text.split_whitespace().collect();
    if h.len() < 2 || h.len() > 4 {
        return Err(err(format!("the header has {} field(s): expected \"n m [fmt [ncon]]\"", h.len())));
    }
    let int = |tok: &str, what: &str| {
        tok.parse::<i64>().map_err(|_| {
            let kind = if tok.parse::<f64>().is_ok() { "not an integer" } else { "not a number" };
            err(format!("{what} {} is {kind}", parsim_core::io::shown_token(tok)))
        })
    };
    let n = int(h[0], "vertex count")?;
    let m = int(h[1], "edge count")?;
    if n < 0 || m < 0 || n >= u32::MAX as i64 {
        return Err(err(format!("vertex count {n} and edge count {m} must be >= 0 (and n below 2^32 - 1)")));
    }
    let fmt = h.get(2).copied().unwrap_or("0");
    if fmt.len() > 3 || !fmt.chars().all(|c| c == '0' || c == '1') {
        return Err(err("fmt: expected up to three 0/1 digits (e.g. 0, 1, 10, 11, 100)".to_string()));
    }
    let f = format!("{fmt:0>3}");
    let (has_size, has_vw, has_ew) = (&f[0..1] == "1", &f[1..2] == "1", &f[2..3] == "1");
    let ncon = match h.get(3) {
        Some(t) => {
            let c = int(t, "ncon")?;
            if !(1..=64).contains(&c) {
                return Err(err(format!("ncon {c} must be in 1..=64")));
            }
            if !has_vw {
                return Err(err(format!("ncon {c} given but fmt {fmt} has no vertex weights")));
            }
            c as usize
        }
        None => 1,
    };
    Ok(Header { line: ln, n: n as usize, m: m as u64, has_size, has_vw, has_ew, ncon })
}
