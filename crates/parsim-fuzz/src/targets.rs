//! The fuzz targets: each reader with its contract.

use std::path::Path;

use parsim_partition::{io, streaming, Config, Graph, PartitionError};

use crate::{check, scratch_file};

/// A fuzz target: arbitrary bytes in, a panic on a broken contract.
pub type Target = fn(&[u8]);

/// Every target, by name (the names of `fuzz/fuzz_targets/*.rs` and of the
/// corpus directories).
pub const TARGETS: &[(&str, Target)] = &[
    ("metis", metis),
    ("metis_stream", metis_stream),
    ("snap", snap),
    ("u32_pairs", u32_pairs),
    ("mtx", mtx),
    ("coords", coords),
    ("partition_file", partition_file),
    ("fixed_file", fixed_file),
    ("population", population),
    ("scenario", scenario),
    ("sweep", sweep),
    ("tasks_log", tasks_log),
    ("serve_request", serve_request),
    ("manifest", manifest),
    ("checkpoint_data", checkpoint_data),
];

fn text(data: &[u8]) -> Option<&str> {
    std::str::from_utf8(data).ok()
}

/// A graph reader's contract: `Ok` is a valid graph; `Err` names the file.
fn graph_result(r: Result<Graph, PartitionError>, file: &str, data: &[u8]) -> Option<Graph> {
    match r {
        Ok(g) => {
            check::graph(&g, file);
            Some(g)
        }
        Err(e) => {
            check::error(&e.to_string(), file, data);
            None
        }
    }
}

/// METIS, read whole: a valid graph that survives a write/read round trip, or an error with its line.
pub fn metis(data: &[u8]) {
    let Some(t) = text(data) else { return };
    if let Some(g) = graph_result(io::parse_metis(t, "f.graph"), "f.graph", data) {
        let again = io::parse_metis(&io::write_metis(&g), "again.graph").expect("a written graph reads back");
        assert_eq!((again.xadj, again.adjncy, again.adjwgt, again.vwgt), (g.xadj, g.adjncy, g.adjwgt, g.vwgt));
    }
}

/// METIS, streamed (`--stream`): it accepts exactly what the whole reader
/// accepts (symmetry by a 64-bit hash: a miss has probability ~2⁻⁶⁴), and
/// its parts are in 0..K.
pub fn metis_stream(data: &[u8]) {
    let path = scratch_file("s.graph", data);
    let file = path.display().to_string();
    let whole = std::str::from_utf8(data)
        .map_err(|_| String::from("utf8"))
        .and_then(|t| io::parse_metis(t, "w.graph").map_err(|e| e.to_string()));
    for method in [streaming::Streaming::Ldg, streaming::Streaming::Fennel] {
        let cfg = Config::new(2);
        match streaming::stream_metis(&path, &cfg, method) {
            Ok(parts) => match &whole {
                Ok(g) => {
                    assert_eq!(parts.len(), g.n());
                    assert!(parts.iter().all(|&p| p < 2), "a part out of range");
                }
                Err(e) => panic!("the stream accepted what the whole reader refuses: {e}"),
            },
            Err(PartitionError::BadArgument(m)) => assert!(m.contains("K = 2"), "{m}"),
            Err(e) => {
                check::error(&e.to_string(), &file, data);
                assert!(whole.is_err(), "the stream refused a valid graph: {e}");
            }
        }
    }
}

fn edge_list(data: &[u8], name: &str, read: fn(&Path) -> parsim_partition::Result<Graph>) {
    let path = scratch_file(name, data);
    let file = path.display().to_string();
    if let Some(g) = graph_result(read(&path), &file, data) {
        // Every vertex appears in some line (ids are renumbered by first appearance).
        assert!(g.n() <= 2 * data.len() / 2 + 1);
    }
}

/// SNAP text edge lists.
pub fn snap(data: &[u8]) {
    edge_list(data, "e.txt", io::read_edge_list);
}

/// Little-endian u32 pairs.
pub fn u32_pairs(data: &[u8]) {
    edge_list(data, "e.u32", io::read_edge_list_u32);
    if data.len() % 8 != 0 {
        assert!(io::read_edge_list_u32(&scratch_file("f.u32", data)).is_err(), "a partial pair was accepted");
    }
}

/// Matrix Market.
pub fn mtx(data: &[u8]) {
    let Some(t) = text(data) else { return };
    graph_result(io::parse_mtx(t, "m.mtx"), "m.mtx", data);
}

/// A small graph the file targets read against: a path of 5 vertices.
fn path5() -> Graph {
    Graph::from_edges(5, &[(0, 1, 1), (1, 2, 1), (2, 3, 1), (3, 4, 1)]).expect("a path")
}

/// Coordinates (`--coords`): 1 to 3 finite numbers per vertex, one line each.
pub fn coords(data: &[u8]) {
    let path = scratch_file("c.xyz", data);
    let mut g = path5();
    match io::read_coords(&path, &mut g) {
        Ok(()) => {
            let c = g.coords.as_ref().expect("coordinates");
            assert!(
                (1..=3).contains(&g.dim) && c.len() == 5 * g.dim,
                "{} coordinates in {} dimensions",
                c.len(),
                g.dim
            );
            assert!(c.iter().all(|x| x.is_finite()));
        }
        Err(e) => check::error(&e.to_string(), &path.display().to_string(), data),
    }
}

/// Partition files (`--current`): one part id per vertex.
pub fn partition_file(data: &[u8]) {
    let path = scratch_file("g.part.4", data);
    match io::read_partition(&path, 5) {
        Ok(p) => assert_eq!(p.len(), 5),
        Err(e) => check::error(&e.to_string(), &path.display().to_string(), data),
    }
}

/// Pinned vertices (`--fixed`): a part id or -1 per vertex.
pub fn fixed_file(data: &[u8]) {
    let path = scratch_file("g.fixed", data);
    match io::read_fixed(&path, 5) {
        Ok(p) => {
            assert_eq!(p.len(), 5);
            assert!(p.iter().all(|&x| x == parsim_partition::FREE || x < u32::MAX));
        }
        Err(e) => check::error(&e.to_string(), &path.display().to_string(), data),
    }
}

/// A contact-network population, in each format its extension selects.
pub fn population(data: &[u8]) {
    for name in ["p.txt", "p.u32", "p.graph"] {
        let path = scratch_file(name, data);
        let file = path.display().to_string();
        match parsim_abm::population::LocalPopulation::scan(&path, None, false) {
            Ok(n) => {
                assert!(n < u32::MAX as usize, "{n} agents");
                // The sequential reader agrees on the size.
                if let Some(Ok(p)) = (n <= 1 << 16).then(|| parsim_abm::Population::read(&path, None, false)) {
                    assert_eq!(p.graph.n(), n, "{name}");
                }
            }
            Err(e) => check::error(&e.to_string(), &file, data),
        }
    }
}

/// A scenario: the TOML parser and the `[run]` table's validator. An `Err`
/// names the file; an `Ok` has at least one rank.
pub fn scenario(data: &[u8]) {
    let Some(t) = text(data) else { return };
    match parsim::Scenario::parse(Path::new("s.toml"), t.to_string()) {
        Ok(mut sc) => match parsim::read_run_table(&mut sc, false) {
            Ok(run) => assert!(run.ranks >= 1 && run.threads_per_rank >= 1),
            Err(e) => assert!(e.place.starts_with("s.toml"), "{e}"),
        },
        Err(e) => assert!(e.place.starts_with("s.toml"), "{e}"),
    }
}

/// A `[sweep]` table: an `Ok` spec passes its own check, has at most 10⁷
/// points and 10⁸ tasks, and every key names a table.
pub fn sweep(data: &[u8]) {
    let Some(t) = text(data) else { return };
    let Ok(mut sc) = parsim::Scenario::parse(Path::new("s.toml"), t.to_string()) else { return };
    match parsim::read_sweep_spec(&mut sc, "abm") {
        Ok(spec) => {
            spec.check().expect("a checked spec");
            assert!(!spec.points.is_empty() && spec.points.len() <= 10_000_000);
            for p in &spec.points {
                for (k, _) in &p.values {
                    assert_eq!(k.split('.').count(), 2, "a key without its table: {k}");
                }
            }
        }
        Err(e) => assert!(e.place.starts_with("s.toml") || e.place.starts_with("--"), "{e}"),
    }
}

/// A `tasks.jsonl` resumed: `Ok` records are each one task, with at least
/// one attempt and no two records for the same task.
pub fn tasks_log(data: &[u8]) {
    let path = scratch_file("tasks.jsonl", data);
    // The fingerprint of the sweep the corpus logs were written for.
    match parsim_sweep::Store::open(&path, "fuzz-sweep", true, false) {
        Ok((_, done)) => {
            let mut seen = std::collections::HashSet::new();
            for r in &done {
                assert!(r.attempts >= 1);
                assert!(seen.insert((r.point, r.replication)), "task {} {} twice", r.point, r.replication);
            }
        }
        Err(e) => assert!(e.to_string().contains("tasks.jsonl"), "{e}"),
    }
}

/// A `--serve` request line: `Ok` names one of the sweep's points.
pub fn serve_request(data: &[u8]) {
    let Some(t) = text(data) else { return };
    for line in t.lines() {
        if let Ok(r) = parsim::parse_request(line, 3) {
            assert!(r.task.point < 3);
        }
    }
}

/// A checkpoint manifest: `Ok` has one piece per rank, in order.
pub fn manifest(data: &[u8]) {
    if let Ok(m) = parsim_ckpt::format::parse_manifest(data) {
        assert!(m.ranks >= 1 && m.pieces.len() == m.ranks);
        assert!(m.pieces.iter().enumerate().all(|(i, p)| p.rank == i && p.xxh3.len() == 16));
    }
}

/// A checkpoint data file: `Ok` only for the bytes the manifest's length and
/// checksum describe (the corpus files are pieces of checkpoint 7 of rank 1
/// whose raw bytes are `b"parsim checkpoint piece"` repeated).
pub fn checkpoint_data(data: &[u8]) {
    let raw: Vec<u8> = b"parsim checkpoint piece".repeat(40);
    let piece = parsim_ckpt::format::Piece {
        rank: 1,
        bytes: raw.len() as u64,
        xxh3: parsim_ckpt::format::hex(parsim_ckpt::format::checksum(&raw)),
        meta: serde_json::Value::Null,
    };
    if let Ok(got) = parsim_ckpt::format::decode(data, 7, 1, &piece) {
        assert_eq!(got, raw, "a corrupted piece decoded to other bytes");
    }
}
