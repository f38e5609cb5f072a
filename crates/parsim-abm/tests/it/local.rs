//! Distributed construction: every rank builds, reads and keeps only its
//! share, and the result is the sequential population, at any rank count.

use std::io::Write;
use std::path::{Path, PathBuf};

use parsim_abm::population::{LocalPopulation, Synthetic};
use parsim_abm::{seir, AbmError, Population, SeirConfig};
use parsim_graph::{BuildStats, DistGraph};
use proptest::prelude::*;

use crate::support::{block, contact};

/// Every owned row in global ids, with its layers, sorted by neighbour.
type Shape = Vec<(u32, Vec<(u32, u8)>)>;

fn shape(d: &DistGraph) -> Shape {
    (0..d.owned())
        .map(|i| {
            let mut row: Vec<(u32, u8)> = d.row(i).map(|e| (d.global(d.adj_at(e) as usize), d.layer_at(e))).collect();
            row.sort_unstable();
            (d.global(i), row)
        })
        .collect()
}

/// The sequential population's shape under the block partition of `ranks`.
fn expected(pop: &Population, ranks: usize) -> Vec<Shape> {
    let owner = block(pop.agents(), ranks);
    (0..ranks).map(|r| shape(&DistGraph::build(r, ranks, &pop.graph, &owner).unwrap())).collect()
}

/// Each rank's shape, the drop counts and edge total, built collectively.
fn built(
    ranks: usize,
    make: impl Fn(&parsim_comm::ThreadComm) -> Result<LocalPopulation, AbmError> + Sync,
) -> Result<Vec<(Shape, BuildStats, u64)>, String> {
    parsim_comm::launch(ranks, |comm| {
        let p = make(&comm)?;
        Ok::<_, AbmError>((shape(&p.graph), p.dropped, p.edges))
    })
    .map_err(|e| e.to_string())
}

fn assert_same(pop: &Population, ranks: usize, got: Vec<(Shape, BuildStats, u64)>) {
    let want = expected(pop, ranks);
    for (r, (sh, stats, edges)) in got.into_iter().enumerate() {
        assert!(sh == want[r], "{ranks} ranks: rank {r}'s rows differ");
        assert_eq!(stats, pop.dropped, "{ranks} ranks: drop counts");
        assert_eq!(edges, pop.graph.edges() as u64);
    }
}

#[test]
fn synthetic_and_er_shares_are_the_sequential_population() {
    let spec = Synthetic { district_size: 700, ..Synthetic::default() };
    let syn = spec.build(5_000, 3).unwrap();
    let er = Population::erdos_renyi(4_000, 6.0, 11);
    for ranks in 1..=4 {
        assert_same(&syn, ranks, built(ranks, |c| LocalPopulation::synthetic(c, &spec, 5_000, 3)).unwrap());
        assert_same(&er, ranks, built(ranks, |c| LocalPopulation::erdos_renyi(c, 4_000, 6.0, 11)).unwrap());
    }
}

fn dir() -> PathBuf {
    let d = std::env::temp_dir().join(format!("parsim-local-{}-{:?}", std::process::id(), std::thread::current().id()));
    std::fs::create_dir_all(&d).unwrap();
    d
}

fn write(path: &Path, bytes: &[u8]) -> PathBuf {
    std::fs::File::create(path).unwrap().write_all(bytes).unwrap();
    path.to_path_buf()
}

/// The pairs as a text edge list, a u32 pair file and a METIS file.
fn files(d: &Path, pop: &Population) -> Vec<PathBuf> {
    let g = &pop.graph;
    let mut text = String::from("# an edge list\n");
    let mut bin = Vec::new();
    let mut metis = format!("% a comment\n{} {}\n", g.n(), g.edges());
    for v in 0..g.n() {
        let row: Vec<String> = g.neighbours(v).iter().map(|&u| (u + 1).to_string()).collect();
        metis.push_str(&row.join(" "));
        metis.push('\n');
        for &u in g.neighbours(v) {
            if (v as u32) < u {
                text.push_str(&format!("{v} {u}\n"));
                bin.extend_from_slice(&(v as u32).to_le_bytes());
                bin.extend_from_slice(&u.to_le_bytes());
            }
        }
    }
    vec![
        write(&d.join("g.txt"), text.as_bytes()),
        write(&d.join("g.u32"), &bin),
        write(&d.join("g.graph"), metis.as_bytes()),
    ]
}

#[test]
fn every_file_format_read_in_shares_is_the_sequential_population() {
    let d = dir();
    let er = Population::erdos_renyi(3_000, 5.0, 2);
    for f in files(&d, &er) {
        let seq = Population::read(&f, Some(3_000), false).unwrap();
        for ranks in 1..=4 {
            let got = built(ranks, |c| LocalPopulation::read(c, &f, Some(3_000), false)).unwrap();
            assert_same(&seq, ranks, got);
        }
        assert_eq!(LocalPopulation::scan(&f, Some(3_000), false).unwrap(), 3_000);
    }
    // The shared reference file.
    let f = contact("er_N100k_c10_s42.u32");
    let seq = Population::read(&f, Some(100_000), false).unwrap();
    assert_same(&seq, 3, built(3, |c| LocalPopulation::read(c, &f, Some(100_000), false)).unwrap());
    std::fs::remove_dir_all(d).ok();
}

#[test]
fn the_epidemic_on_shares_has_the_sequential_digest_at_any_rank_count_and_partition() {
    let spec = Synthetic { district_size: 1_000, ..Synthetic::default() };
    let pop = spec.build(8_000, 5).unwrap();
    let cfg = SeirConfig { days: 90, beta: 0.08, ..SeirConfig::default() };
    let want = crate::support::run(&pop, &block(8_000, 1), 1, &cfg).digest;
    for ranks in 1..=4 {
        let got = parsim_comm::launch(ranks, |comm| {
            let local = LocalPopulation::synthetic(&comm, &spec, 8_000, 5)?;
            let a = seir::run(&comm, &local.layers, &local.graph, &cfg, None)?.digest;
            // Scatter the agents by a hash of their id and run again.
            let g = &local.graph;
            let to: Vec<u32> =
                (0..g.owned()).map(|i| (g.global(i).wrapping_mul(2_654_435_761) >> 7) % ranks as u32).collect();
            let moved = local.repartition(&comm, &to)?;
            let b = seir::run(&comm, &moved.layers, &moved.graph, &cfg, None)?.digest;
            Ok::<_, AbmError>((a, b, shape(&moved.graph)))
        })
        .unwrap();
        let owner: Vec<u32> = (0..8_000u32).map(|v| (v.wrapping_mul(2_654_435_761) >> 7) % ranks as u32).collect();
        for (r, (a, b, sh)) in got.into_iter().enumerate() {
            assert_eq!((a, b), (want, want), "{ranks} ranks");
            assert!(sh == shape(&DistGraph::build(r, ranks, &pop.graph, &owner).unwrap()), "repartitioned rows");
        }
    }
}

#[test]
fn no_rank_holds_an_array_sized_by_the_population() {
    let spec = Synthetic { district_size: 2_000, ..Synthetic::default() };
    let bytes = |ranks: usize| -> usize {
        parsim_comm::launch(ranks, |comm| {
            let p = LocalPopulation::synthetic(&comm, &spec, 40_000, 1)?;
            let layout = seir::Layout::new(&p.graph);
            Ok::<_, AbmError>(p.bytes() + layout.bytes())
        })
        .unwrap()
        .into_iter()
        .max()
        .unwrap()
    };
    let (one, four) = (bytes(1), bytes(4));
    assert!((four as f64) < 0.35 * one as f64, "largest rank at p = 4 holds {four} bytes, p = 1 holds {one}");
}

/// Every rank's error text (they must all be equal).
fn errors(ranks: usize, f: &Path, agents: Option<usize>) -> Vec<String> {
    parsim_comm::launch(ranks, |comm| {
        Ok::<_, String>(LocalPopulation::read(&comm, f, agents, true).map(|_| ()).unwrap_err().to_string())
    })
    .unwrap()
}

#[test]
fn a_bad_file_gives_every_rank_the_same_error_naming_the_file_and_line() {
    let d = dir();
    let mut text = String::new();
    for i in 0..400 {
        text.push_str(&format!("{} {}\n", i, i + 1));
    }
    let bad_late = text.clone() + "7 x\n";
    let cases: Vec<(PathBuf, Option<usize>, &str)> = vec![
        (
            write(&d.join("late.txt"), bad_late.as_bytes()),
            None,
            ":401: vertex id a non-numeric token of 1 characters is not an integer",
        ),
        (write(&d.join("three.txt"), format!("{text}1 2 3\n").as_bytes()), None, ":401: expected two vertex ids"),
        (write(&d.join("far.txt"), text.as_bytes()), Some(300), ":300: vertex id 300 is beyond the population"),
        (write(&d.join("loop.txt"), format!("0 1\n5 5\n{text}").as_bytes()), None, ":2: self-loop 5 5 (strict)"),
        (write(&d.join("odd.u32"), &[0u8; 12]), None, "odd.u32: 12 bytes is not a whole number"),
        (write(&d.join("short.graph"), b"3 2\n2\n1 3\n"), None, "the header declares 3 vertices but the file has 2"),
        (write(&d.join("long.graph"), b"2 1\n2\n1\n2\n"), None, ":4: more vertex lines than the 2 vertices"),
        (write(&d.join("asym.graph"), b"3 2\n2 3\n1\n2\n"), None, "not symmetric"),
        (write(&d.join("edges.graph"), b"3 3\n2\n1 3\n2\n"), None, "the header declares 3 edges"),
        (write(&d.join("range.graph"), b"2 1\n2\n1 9\n"), None, ":3: vertex 2: neighbour 9 is outside 1..=2"),
    ];
    for (f, agents, want) in &cases {
        for ranks in [1, 2, 3, 5] {
            let got = errors(ranks, f, *agents);
            assert!(got.iter().all(|e| e == &got[0]), "{}: ranks disagree: {got:?}", f.display());
            assert!(got[0].contains(&f.display().to_string()) && got[0].contains(want), "{}: {}", f.display(), got[0]);
        }
    }
    let missing = d.join("missing.txt");
    let got = errors(2, &missing, None);
    assert!(got[0].contains("missing.txt") && got[0] == got[1], "{got:?}");
    std::fs::remove_dir_all(d).ok();
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 24, ..ProptestConfig::default() })]

    /// Random edge lists (comments, blank lines, CRLF, long and short lines)
    /// split at every rank count: no edge lost or read twice.
    #[test]
    fn byte_range_splitting_never_loses_or_repeats_an_edge(
        lines in proptest::collection::vec((0u32..60, 0u32..60, 0u8..6, 0usize..30), 1..120),
        ranks in 1usize..8,
    ) {
        let d = dir();
        let mut text = String::new();
        for &(u, v, kind, pad) in &lines {
            match kind {
                0 => text.push_str("# a comment line\n"),
                1 => text.push('\n'),
                2 => text.push_str(&format!("{u} {v}\r\n")),
                _ => text.push_str(&format!("{}{u}{}{v}\n", " ".repeat(pad), "\t".repeat(1 + pad % 3))),
            }
        }
        let f = write(&d.join("p.txt"), text.as_bytes());
        let seq = Population::read(&f, Some(60), false).unwrap();
        let got = built(ranks, |c| LocalPopulation::read(c, &f, Some(60), false)).unwrap();
        let want = expected(&seq, ranks);
        for (r, (sh, stats, _)) in got.into_iter().enumerate() {
            prop_assert!(sh == want[r]);
            prop_assert_eq!(stats, seq.dropped);
        }
        std::fs::remove_dir_all(d).ok();
    }
}
