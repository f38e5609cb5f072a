//! Independent checks of what the readers return: written from the format
//! descriptions, not from the readers' code.

use std::collections::HashMap;

use parsim_partition::Graph;

/// Panics unless `g` is a valid undirected graph: offsets that start at 0
/// and never decrease, neighbours in range, no self-loops, no duplicate
/// edges, every edge listed from both ends with the same positive weight,
/// non-negative vertex weights, and totals within [`parsim_partition::MAX_TOTAL_WEIGHT`]
/// (vertices) and [`parsim_partition::MAX_TOTAL_EDGE_WEIGHT`] (edges).
pub fn graph(g: &Graph, what: &str) {
    let n = g.n();
    assert_eq!(g.xadj.len(), n + 1, "{what}: offsets");
    assert_eq!(g.xadj[0], 0, "{what}: first offset");
    assert!(g.xadj.windows(2).all(|w| w[0] <= w[1]), "{what}: decreasing offsets");
    assert_eq!(g.xadj[n] as usize, g.adjncy.len(), "{what}: last offset");
    assert_eq!(g.adjwgt.len(), g.adjncy.len(), "{what}: edge weights");
    assert!(g.ncon >= 1 && g.vwgt.len() == n * g.ncon, "{what}: vertex weights");
    assert!(g.vwgt.iter().all(|&w| w >= 0), "{what}: negative vertex weight");
    let mut edges: HashMap<(u32, u32), u32> = HashMap::new();
    let mut total: i128 = 0;
    for v in 0..n {
        let (a, b) = (g.xadj[v] as usize, g.xadj[v + 1] as usize);
        for (&u, &w) in g.adjncy[a..b].iter().zip(&g.adjwgt[a..b]) {
            assert!((u as usize) < n, "{what}: neighbour {u} of {v} out of range");
            assert_ne!(u as usize, v, "{what}: self-loop at {v}");
            assert!(w > 0, "{what}: weight {w}");
            assert!(edges.insert((v as u32, u), w).is_none(), "{what}: duplicate edge {v}-{u}");
            total += i128::from(w);
        }
    }
    for (&(v, u), &w) in &edges {
        assert_eq!(edges.get(&(u, v)), Some(&w), "{what}: edge {v}-{u} has no equal reverse");
    }
    assert!(
        total / 2 <= i128::from(parsim_partition::MAX_TOTAL_EDGE_WEIGHT),
        "{what}: edge weights sum beyond the limit"
    );
    let limit = i128::from(parsim_partition::MAX_TOTAL_WEIGHT);
    for c in 0..g.ncon {
        let t: i128 = g.vwgt.iter().skip(c).step_by(g.ncon).map(|&w| i128::from(w)).sum();
        assert!(t <= limit, "{what}: vertex weights sum beyond the limit");
    }
}

/// Panics unless `msg` (an error's text) names `file` and, when it gives a
/// line (`FILE:LINE:`), one that exists in `data`.
pub fn error(msg: &str, file: &str, data: &[u8]) {
    let at = msg.find(file).unwrap_or_else(|| panic!("the error does not name {file}: {msg}"));
    let rest = &msg[at + file.len()..];
    if let Some(tail) = rest.strip_prefix(':') {
        let digits: String = tail.chars().take_while(char::is_ascii_digit).collect();
        if !digits.is_empty() {
            let line: usize = digits.parse().expect("a line number");
            let lines = data.split(|&b| b == b'\n').count();
            assert!(line >= 1 && line <= lines.max(1), "line {line} of a {lines}-line input: {msg}");
        }
    }
    assert!(!msg.contains("panicked"), "{msg}");
}
