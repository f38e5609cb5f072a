//! Round trips of every format, and the readers agree with each other.

use parsim_partition::io;

use crate::support::{canonical, data, random_graph};

#[test]
fn metis_round_trips_every_fmt_and_ncon() {
    for name in ["4elt.graph", "example_weighted.graph", "test.mgraph", "add20.graph"] {
        let g = io::read_metis(&data(name)).unwrap_or_else(|e| panic!("{name}: {e}"));
        let text = io::write_metis(&g);
        let back = io::parse_metis(&text, name).expect("own output parses");
        assert_eq!(back, g, "{name}");
    }
    let g = io::read_metis(&data("test.mgraph")).unwrap();
    assert_eq!((g.n(), g.edges(), g.ncon), (766, 1314, 2));
    let g = io::read_metis(&data("example_weighted.graph")).unwrap();
    assert_eq!((g.n(), g.edges()), (132, 328));
    assert!(g.vwgt.iter().any(|&w| w != 1) && g.adjwgt.iter().any(|&w| w != 1));
}

#[test]
fn fmt_codes_with_vertex_sizes_parse() {
    // fmt 100 (sizes), 101 (sizes + edge weights), 110, 111 with ncon 2.
    let cases = [
        ("3 2 100\n5 2\n7 1 3\n1 2\n", false),
        ("3 2 101\n5 2 4\n7 1 4 3 2\n1 2 2\n", true),
        ("3 2 110\n5 9 2\n7 8 1 3\n1 7 2\n", false),
        ("3 2 111 2\n5 9 9 2 4\n7 8 8 1 4 3 2\n1 7 7 2 2\n", true),
    ];
    for (text, weighted) in cases {
        let g = io::parse_metis(text, "t.graph").unwrap_or_else(|e| panic!("{text}: {e}"));
        assert_eq!(g.vsize.as_deref(), Some(&[5, 7, 1][..]), "{text}");
        assert_eq!(g.adjwgt.iter().any(|&w| w != 1), weighted);
        assert_eq!(io::parse_metis(&io::write_metis(&g), "t").unwrap(), g);
    }
}

#[test]
fn readers_agree_on_the_same_graph() {
    let dir = std::env::temp_dir().join(format!("parsim-partition-formats-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let g = io::read_metis(&data("uk.graph")).unwrap();
    // SNAP text (with comments and shuffled ids), u32 pairs, Matrix Market (general and symmetric).
    let mut snap = String::from("# uk as an edge list\n# FromNodeId ToNodeId\n");
    let mut bin = Vec::new();
    let mut mtx_sym = String::new();
    let mut count = 0;
    for v in 0..g.n() {
        for &u in g.neighbours(v) {
            if (v as u32) < u {
                snap += &format!("{}\t{}\n", 1000 + v, 1000 + u);
                bin.extend_from_slice(&(v as u32).to_le_bytes());
                bin.extend_from_slice(&u.to_le_bytes());
                mtx_sym += &format!("{} {}\n", u + 1, v + 1);
                count += 1;
            }
        }
    }
    std::fs::write(dir.join("uk.txt"), snap).unwrap();
    std::fs::write(dir.join("uk.bin"), bin).unwrap();
    let mtx =
        format!("%%MatrixMarket matrix coordinate pattern symmetric\n% uk\n{n} {n} {count}\n{mtx_sym}", n = g.n());
    std::fs::write(dir.join("uk.mtx"), mtx).unwrap();
    let want = canonical(&g);
    // Vertex 0 appears first in every listing, so first-appearance renumbering keeps ids.
    for f in ["uk.txt", "uk.bin", "uk.mtx"] {
        let h = io::read_graph(&dir.join(f)).unwrap_or_else(|e| panic!("{f}: {e}"));
        assert_eq!(h.n(), g.n(), "{f}");
        assert_eq!(h.edges(), g.edges(), "{f}");
        if f == "uk.mtx" {
            assert_eq!(canonical(&h), want, "{f}");
        }
    }
    // A general Matrix Market file listing both directions, plus a diagonal, is the same graph.
    let mut general = format!("%%MatrixMarket matrix coordinate real general\n{n} {n} {}\n", 2 * count + 1, n = g.n());
    for v in 0..g.n() {
        for &u in g.neighbours(v) {
            general += &format!("{} {} 0.5\n", v + 1, u + 1);
        }
    }
    general += "1 1 3.0\n";
    assert_eq!(canonical(&io::parse_mtx(&general, "g.mtx").unwrap()), want);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn partition_files_round_trip() {
    let dir = std::env::temp_dir().join(format!("parsim-partition-part-{}", std::process::id()));
    let parts: Vec<u32> = (0..50).map(|i| i % 7).collect();
    io::write_partition(&dir.join("g.part.7"), &parts).unwrap();
    assert_eq!(io::read_partition(&dir.join("g.part.7"), 50).unwrap(), parts);
    assert!(io::read_partition(&dir.join("g.part.7"), 51).is_err());
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn coordinates_attach_to_a_graph() {
    let dir = std::env::temp_dir().join(format!("parsim-partition-xyz-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let mut g = random_graph(1, 10, 20, false);
    std::fs::write(dir.join("c.xyz"), (0..10).map(|i| format!("{i} {} 0.5\n", i * 2)).collect::<String>()).unwrap();
    io::read_coords(&dir.join("c.xyz"), &mut g).unwrap();
    assert_eq!((g.dim, g.coords.as_ref().unwrap().len()), (3, 30));
    std::fs::write(dir.join("bad.xyz"), "1 2\n3\n").unwrap();
    let e = io::read_coords(&dir.join("bad.xyz"), &mut g).unwrap_err().to_string();
    assert!(e.contains("bad.xyz:2"), "{e}");
    let _ = std::fs::remove_dir_all(&dir);
}
