//! Malformed files are errors naming the file, the line and the problem —
//! never a panic or a silently wrong graph — and so are impossible requests.

use parsim_core::rng::StreamKey;
use parsim_partition::{io, Config, Method, PartitionError, Partitioner};

use crate::support::{data, random_graph};

fn err(text: &str) -> String {
    io::parse_metis(text, "bad.graph").expect_err(text).to_string()
}

#[test]
fn metis_errors_name_the_line_and_the_problem() {
    let cases = [
        ("3 2\n2 3\n1 3\n1 2\n", "bad.graph:1", "2 edges but the adjacency lists hold 6 entries"),
        ("4 3\n2 3\n1 3\n1 2\n", "bad.graph:4", "declares 4 vertices but the file has 3"),
        ("2 1\n2\n1\n2\n", "bad.graph:4", "more vertex lines"),
        ("3 2\n2\n1 3\n1\n", "bad.graph: ", "no reverse edge 3-2"),
        ("2 1\n1\n1\n", "bad.graph:2", "self-loop"),
        ("2 1\n5\n1\n", "bad.graph:2", "neighbour 5 is outside 1..=2"),
        ("2 1 10\n-1 2\n1 1\n", "bad.graph:2", "negative weight -1"),
        ("2 1 1\n2 1.5\n1 1.5\n", "bad.graph:2", "\"1.5\" is not an integer"),
        ("2 1 1\n2 0\n1 0\n", "bad.graph:2", "weight 0 (must be in 1..=2^32 - 1)"),
        ("2 1 1\n2 3\n1 4\n", "bad.graph: ", "weight 3 but 2-1 has 4"),
        ("2 1 12\n2\n1\n", "bad.graph:1", "fmt: expected up to three 0/1 digits"),
        ("2 x\n2\n1\n", "bad.graph:1", "edge count is not a number (a token of 1 characters)"),
        ("% only a comment\n", "bad.graph: ", "empty file"),
        ("3 2\n2 2\n1 1\n\n", "bad.graph: ", "duplicate edge"),
        // 20 digits: out of range, an error (the fast path leaves it to the general one).
        ("3 3\n18446744073709551615 3\n1 3\n1 2\n", "bad.graph:2", "neighbour"),
    ];
    for (text, place, what) in cases {
        let e = err(text);
        assert!(e.starts_with(place) && e.contains(what), "{text:?}: {e}");
    }
}

#[test]
fn matrix_market_and_edge_list_errors() {
    let e = io::parse_mtx("%%MatrixMarket matrix array real general\n", "m.mtx").unwrap_err().to_string();
    assert!(e.starts_with("m.mtx:1"), "{e}");
    let e = io::parse_mtx("%%MatrixMarket matrix coordinate pattern general\n3 3 2\n1 4\n", "m.mtx")
        .unwrap_err()
        .to_string();
    assert!(e.starts_with("m.mtx:3") && e.contains("outside"), "{e}");
    let e = io::parse_mtx("%%MatrixMarket matrix coordinate pattern general\n2 3 1\n1 2\n", "m.mtx")
        .unwrap_err()
        .to_string();
    assert!(e.contains("not square"), "{e}");
    let dir = std::env::temp_dir().join(format!("parsim-partition-bad-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("e.txt"), "# c\n1 2\n2 x\n").unwrap();
    let e = io::read_graph(&dir.join("e.txt")).unwrap_err().to_string();
    assert!(e.contains("e.txt:3") && e.contains("not a number") && !e.contains("\"x\""), "{e}");
    std::fs::write(dir.join("e.bin"), [1u8, 0, 0]).unwrap();
    assert!(io::read_graph(&dir.join("e.bin")).unwrap_err().to_string().contains("not a whole number"));
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn random_bytes_and_mutations_never_panic() {
    let base = std::fs::read_to_string(data("example_weighted.graph")).unwrap();
    let mut rng = StreamKey::new(3).purpose("fuzz").stream();
    for case in 0..3000 {
        let text: String = if case % 3 == 0 {
            (0..rng.below(200)).map(|_| b" 0123456789-%.\nx%"[rng.below(17) as usize] as char).collect()
        } else {
            // Mutate a valid file: change, drop or duplicate a few bytes.
            let mut b = base.clone().into_bytes();
            for _ in 0..1 + rng.below(4) {
                let i = rng.below(b.len() as u64) as usize;
                match rng.below(3) {
                    0 => b[i] = b" 0123456789-\n"[rng.below(13) as usize],
                    1 => {
                        b.remove(i);
                    }
                    _ => b.insert(i, b[i]),
                }
            }
            String::from_utf8_lossy(&b).into_owned()
        };
        if let Ok(g) = io::parse_metis(&text, "fuzz.graph") {
            g.validate().expect("a graph the reader accepts is valid");
        }
        let _ = io::parse_mtx(&format!("%%MatrixMarket matrix coordinate pattern general\n{text}"), "fuzz.mtx");
    }
}

#[test]
fn impossible_requests_are_errors() {
    let g = random_graph(1, 20, 40, false);
    for k in [0, 21] {
        assert!(
            matches!(Method::Multilevel.partition(&g, &Config::new(k)), Err(PartitionError::BadArgument(_))),
            "k = {k}"
        );
    }
    // A vertex heavier than any part may be.
    let mut h = g.clone();
    h.vwgt[3] = 1000;
    let e = Method::Multilevel.partition(&h, &Config::new(4)).unwrap_err();
    assert!(matches!(e, PartitionError::Infeasible(_)), "{e}");
    // example_weighted at k = 32 and 64: no balanced partition exists within 3 %.
    let w = io::read_metis(&data("example_weighted.graph")).unwrap();
    for k in [32, 64] {
        let e = Method::Multilevel.partition(&w, &Config::new(k)).unwrap_err();
        assert!(matches!(e, PartitionError::Infeasible(_)), "k = {k}: {e}");
    }
}

#[test]
fn headers_that_promise_billions_are_errors_not_aborts() {
    // Found by the proptest readers test: a header's counts used to size the arrays.
    let e = io::parse_metis("3 2725441111\n2\n1 3\n2\n", "big.graph").unwrap_err().to_string();
    assert!(e.contains("big.graph"), "{e}");
    let e = io::parse_metis("4000000000 1\n", "many.graph").unwrap_err().to_string();
    assert!(e.contains("many.graph"), "{e}");
    let head = "%%MatrixMarket matrix coordinate pattern general\n";
    assert!(io::parse_mtx(&format!("{head}99999999999 99999999999 0\n"), "big.mtx").is_err());
    // Up to 2^32 - 1 rows are accepted, then either built or refused for memory, never an abort.
    let _ = io::parse_mtx(&format!("{head}4000000000 4000000000 0\n"), "huge.mtx");
}
