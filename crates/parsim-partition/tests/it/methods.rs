//! Every method returns a valid partition; the multilevel method keeps the
//! balance rule exactly, for one and several constraints, deterministically.

use parsim_partition::spectral::spectral;
use parsim_partition::{io, metrics, vertex_cut, Config, Graph, Method, Partitioner, Preset, VertexCut};

use crate::support::{data, grid, random_graph};

fn valid(g: &Graph, parts: &[u32], k: usize) {
    assert_eq!(parts.len(), g.n());
    assert!(parts.iter().all(|&p| (p as usize) < k), "part id out of range");
}

#[test]
fn every_method_is_valid_on_random_graphs() {
    for seed in 0..4 {
        let mut g = random_graph(seed, 300 + 50 * seed as usize, 900, seed % 2 == 1);
        g.coords = Some((0..g.n()).flat_map(|i| [(i % 17) as f64, (i / 17) as f64 * 0.5]).collect());
        g.dim = 2;
        for k in [2, 3, 8, 13] {
            let cfg = Config { seed, ..Config::new(k) };
            for m in Method::ALL {
                if m == Method::Spectral && k > 8 {
                    continue; // Lanczos on every subgraph: slow in the dev profile
                }
                let (parts, met) = m.partition(&g, &cfg).unwrap_or_else(|e| panic!("{m:?} k={k}: {e}"));
                valid(&g, &parts, k);
                assert_eq!(met, metrics(&g, &parts, &cfg));
                assert_eq!(met.empty_parts, 0, "{m:?} k={k}");
                if m.balanced() {
                    assert!(met.balanced, "{m:?} k={k}: {:?}", met.imbalance);
                }
            }
        }
    }
}

#[test]
fn multilevel_is_balanced_on_every_shared_graph() {
    for name in ["3elt.graph", "add32.graph", "ca-GrQc_lcc.graph", "data.graph", "uk.graph", "facebook_combined.graph"]
    {
        let g = io::read_metis(&data(name)).unwrap();
        for k in [2, 7, 16] {
            let (parts, m) =
                Method::Multilevel.partition(&g, &Config::new(k)).unwrap_or_else(|e| panic!("{name} {k}: {e}"));
            valid(&g, &parts, k);
            assert!(m.balanced && m.empty_parts == 0, "{name} k={k}: {:?}", m.imbalance);
            assert!(m.cut > 0 && m.cut < g.edges() as i64 / 2, "{name} k={k}: cut {}", m.cut);
        }
    }
}

#[test]
fn the_strong_preset_cuts_less_than_the_default_and_keeps_the_balance() {
    // Over a mesh, a matrix graph and a social graph at two K: the strong
    // preset (two runs of two V-cycles, flows on the last) never cuts more
    // than the default (its first run refines the default's initial
    // partition, with more passes and on a deeper band), and
    // less in total.
    let (mut strong_sum, mut default_sum) = (0, 0);
    for name in ["3elt.graph", "add32.graph", "ca-GrQc_lcc.graph"] {
        let g = io::read_metis(&data(name)).unwrap();
        for k in [2, 8] {
            let (_, d) = Method::Multilevel.partition(&g, &Config::new(k)).unwrap();
            let cfg = Config { preset: Preset::Strong, ..Config::new(k) };
            let (parts, s) = Method::Multilevel.partition(&g, &cfg).unwrap();
            valid(&g, &parts, k);
            assert!(s.balanced && s.empty_parts == 0, "{name} k={k}: {:?}", s.imbalance);
            assert!(s.cut <= d.cut, "{name} k={k}: strong {} > default {}", s.cut, d.cut);
            strong_sum += s.cut;
            default_sum += d.cut;
        }
    }
    assert!(strong_sum < default_sum, "strong {strong_sum}, default {default_sum}");
}

#[test]
fn two_constraints_are_each_balanced() {
    let g = io::read_metis(&data("test.mgraph")).unwrap();
    for k in [2, 4, 8] {
        let (_, m) = Method::Multilevel.partition(&g, &Config::new(k)).unwrap();
        assert_eq!(m.imbalance.len(), 2);
        assert!(m.balanced, "k={k}: {:?}", m.imbalance);
    }
}

#[test]
fn the_balance_rule_at_its_boundary() {
    // 100 unit vertices, k = 4: at 3 % a part may hold ⌊1.03·25⌋ = 25, so all are exactly 25.
    let g = random_graph(9, 100, 300, false);
    let (_, m) = Method::Multilevel.partition(&g, &Config::new(4)).unwrap();
    assert_eq!(m.part_weights, vec![25; 4]);
    // At 4 % one vertex more is allowed: ⌊1.04·25⌋ = 26.
    let cfg = Config { imbalance: 0.04, ..Config::new(4) };
    let (_, m) = Method::Multilevel.partition(&g, &cfg).unwrap();
    assert!(m.part_weights.iter().all(|&w| w <= 26) && m.balanced, "{:?}", m.part_weights);
    // Non-uniform targets: a quarter and three quarters.
    let cfg = Config { targets: Some(vec![0.25, 0.75]), ..Config::new(2) };
    let (_, m) = Method::Multilevel.partition(&g, &cfg).unwrap();
    assert!(m.part_weights[0] <= 25 && m.part_weights[1] <= 77 && m.balanced, "{:?}", m.part_weights);
}

#[test]
fn the_same_partition_from_one_and_two_threads() {
    let g = io::read_metis(&data("crack.graph")).unwrap();
    let cfg = Config { seed: 5, ..Config::new(8) };
    let alone = Method::Multilevel.partition(&g, &cfg).unwrap().0;
    let (a, b) = std::thread::scope(|s| {
        let a = s.spawn(|| Method::Multilevel.partition(&g, &cfg).unwrap().0);
        let b = s.spawn(|| Method::Multilevel.partition(&g, &cfg).unwrap().0);
        (a.join().unwrap(), b.join().unwrap())
    });
    assert_eq!(a, alone);
    assert_eq!(b, alone);
    let other = Method::Multilevel.partition(&g, &Config { seed: 6, ..cfg.clone() }).unwrap().0;
    assert_ne!(other, alone, "the seed should matter");
}

#[test]
fn spectral_bisection_cuts_where_it_must() {
    // A path: one edge, in the middle.
    let path = Graph::from_edges(40, &(0..39).map(|i| (i, i + 1, 1)).collect::<Vec<_>>()).unwrap();
    let cfg = Config::new(2);
    let p = spectral(&path, &cfg);
    assert_eq!(metrics(&path, &p, &cfg).cut, 1);
    assert_ne!(p[19], p[20]);
    // A 20 × 8 grid: across the long side, 8 edges.
    let g = grid(20, 8);
    assert_eq!(metrics(&g, &spectral(&g, &cfg), &cfg).cut, 8);
    // Two 10-cliques joined by one edge: that edge.
    let mut e = Vec::new();
    for base in [0u32, 10] {
        for i in 0..10 {
            for j in i + 1..10 {
                e.push((base + i, base + j, 1));
            }
        }
    }
    e.push((9, 10, 1));
    let cliques = Graph::from_edges(20, &e).unwrap();
    let p = spectral(&cliques, &cfg);
    assert_eq!(metrics(&cliques, &p, &cfg).cut, 1);
    assert!((0..10).all(|v| p[v] == p[0]) && (10..20).all(|v| p[v] == p[10]));
}

#[test]
fn geometric_methods_cut_a_grid_into_strips_or_blocks() {
    let g = grid(32, 32);
    for m in [Method::Rcb, Method::Sfc] {
        let cfg = Config::new(4);
        let (parts, met) = m.partition(&g, &cfg).unwrap();
        valid(&g, &parts, 4);
        assert!(met.part_weights.iter().all(|&w| w == 256), "{m:?}: {:?}", met.part_weights);
        // Four 16 × 16 quadrants cut 64 edges; Hilbert segments are quadrants too.
        assert_eq!(met.cut, 64, "{m:?}");
    }
    let mut no = grid(4, 4);
    no.coords = None;
    assert!(Method::Rcb.partition(&no, &Config::new(2)).is_err());
}

#[test]
fn streaming_a_metis_file_matches_streaming_the_graph() {
    let path = data("4elt.graph");
    let g = io::read_metis(&path).unwrap();
    let cfg = Config::new(8);
    for s in [parsim_partition::streaming::Streaming::Ldg, parsim_partition::streaming::Streaming::Fennel] {
        let from_file = parsim_partition::streaming::stream_metis(&path, &cfg, s).unwrap();
        assert_eq!(from_file, parsim_partition::streaming::stream_graph(&g, &cfg, s), "{s:?}");
        let m = metrics(&g, &from_file, &cfg);
        assert!(m.balanced, "{s:?}: {:?}", m.imbalance);
    }
}

#[test]
fn vertex_cuts_replicate_less_than_hashing() {
    let g = io::read_metis(&data("facebook_combined.graph")).unwrap();
    let hash = vertex_cut(&g, 16, VertexCut::Hash, 1, 0.03);
    for m in [VertexCut::Greedy, VertexCut::Hdrf] {
        let e = vertex_cut(&g, 16, m, 1, 0.03);
        assert_eq!(e.parts.len(), g.edges());
        assert!(
            e.replication_factor < 0.5 * hash.replication_factor,
            "{m:?}: {} vs {}",
            e.replication_factor,
            hash.replication_factor
        );
        assert!(e.edge_balance <= 1.031, "{m:?}: {}", e.edge_balance);
    }
}

#[test]
fn pinned_vertices_stay_where_they_are_pinned() {
    let g = io::read_metis(&data("4elt.graph")).unwrap();
    let k = 4;
    // Pin every 97th vertex to part (v / 97) % 4.
    let fixed: Vec<u32> =
        (0..g.n()).map(|v| if v % 97 == 0 { ((v / 97) % k) as u32 } else { parsim_partition::FREE }).collect();
    let cfg = Config { fixed: Some(fixed.clone()), ..Config::new(k) };
    let (parts, m) = Method::Multilevel.partition(&g, &cfg).unwrap();
    assert!(m.balanced);
    for v in (0..g.n()).step_by(97) {
        assert_eq!(parts[v], fixed[v], "vertex {v}");
    }
    let free = Method::Multilevel.partition(&g, &Config::new(k)).unwrap().1;
    assert!(m.cut < 3 * free.cut, "pins cost too much: {} vs {}", m.cut, free.cut);
    // More pinned weight than a part may hold is infeasible.
    let all0 = Config { fixed: Some(vec![0; g.n()]), ..Config::new(k) };
    assert!(matches!(Method::Multilevel.partition(&g, &all0), Err(parsim_partition::PartitionError::Infeasible(_))));
}

#[test]
fn repartitioning_trades_cut_against_migration() {
    let g = io::read_metis(&data("crack.graph")).unwrap();
    let cfg = Config::new(8);
    let (old, _) = Method::Multilevel.partition(&g, &cfg).unwrap();
    // Grow part 0 by a quarter: shift some weight onto its vertices.
    let mut h = g.clone();
    for v in 0..h.n() {
        if old[v] == 0 {
            h.vwgt[v] = 2;
        }
    }
    let cheap = parsim_partition::repartition(&h, &cfg, &old, 0).unwrap();
    let dear = parsim_partition::repartition(&h, &cfg, &old, 20).unwrap();
    assert!(cheap.1.balanced && dear.1.balanced);
    assert!(dear.2 < cheap.2, "a higher migration cost should move less: {} vs {}", dear.2, cheap.2);
    let scratch = Method::Multilevel.partition(&h, &cfg).unwrap().0;
    let moved_scratch: i64 = (0..h.n()).filter(|&v| scratch[v] != old[v]).map(|v| h.vwgt[v]).sum();
    assert!(dear.2 < moved_scratch / 2, "repartitioning moved {} vs {} from scratch", dear.2, moved_scratch);
}

/// The number of connected pieces each part induces.
fn pieces_per_part(g: &Graph, parts: &[u32], k: usize) -> Vec<usize> {
    let mut seen = vec![false; g.n()];
    let mut count = vec![0; k];
    for s in 0..g.n() {
        if seen[s] {
            continue;
        }
        count[parts[s] as usize] += 1;
        let mut stack = vec![s];
        seen[s] = true;
        while let Some(v) = stack.pop() {
            for &u in g.neighbours(v) {
                if !seen[u as usize] && parts[u as usize] == parts[v] {
                    seen[u as usize] = true;
                    stack.push(u as usize);
                }
            }
        }
    }
    count
}

#[test]
fn contiguous_parts_are_connected() {
    for name in ["4elt.graph", "crack.graph", "whitaker3.graph", "add32.graph", "uk.graph"] {
        let g = io::read_metis(&data(name)).unwrap();
        for k in [4, 16] {
            let cfg = Config { contiguous: true, ..Config::new(k) };
            match Method::Multilevel.partition(&g, &cfg) {
                Ok((parts, m)) => {
                    assert!(m.balanced, "{name} {k}");
                    assert_eq!(pieces_per_part(&g, &parts, k), vec![1; k], "{name} k={k}");
                }
                // A circuit whose parts meet at articulation points is not always made
                // contiguous within 3 % (gpmetis -contig leaves add32 at k = 16 35 % over);
                // never a non-contiguous result.
                Err(parsim_partition::PartitionError::Infeasible(_)) if name == "add32.graph" && k == 16 => {}
                Err(e) => panic!("{name} k={k}: {e}"),
            }
        }
    }
    // Two components cannot be two... three contiguous parts of one vertex each? They can; but
    // 3 disjoint edges cannot be 2 contiguous parts.
    let g = Graph::from_edges(6, &[(0, 1, 1), (2, 3, 1), (4, 5, 1)]).unwrap();
    let cfg = Config { contiguous: true, imbalance: 0.5, ..Config::new(2) };
    assert!(Method::Multilevel.partition(&g, &cfg).is_err());
}

#[test]
fn streaming_an_edge_list_matches_streaming_the_graph() {
    use parsim_partition::streaming::{stream_edge_list, stream_graph, Streaming};
    let g = io::read_metis(&data("fe_4elt2.graph")).unwrap();
    let dir = std::env::temp_dir().join(format!("parsim-partition-stream-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    // Both directions, sorted by source: the edge list is a vertex stream in id order.
    let mut text = String::from("# fe_4elt2\n");
    let mut bin = Vec::new();
    for v in 0..g.n() {
        for &u in g.neighbours(v) {
            text += &format!("{v} {u}\n");
            bin.extend_from_slice(&(v as u32).to_le_bytes());
            bin.extend_from_slice(&u.to_le_bytes());
        }
    }
    std::fs::write(dir.join("e.txt"), text).unwrap();
    std::fs::write(dir.join("e.bin"), bin).unwrap();
    let cfg = Config::new(8);
    for method in [Streaming::Ldg, Streaming::Fennel] {
        // Ids appear in the order 0, its neighbours, 1, …: map them back to compare.
        let h = io::read_edge_list(&dir.join("e.txt")).unwrap();
        assert_eq!((h.n(), h.edges()), (g.n(), g.edges()));
        let from_text = stream_edge_list(&dir.join("e.txt"), &cfg, method, false).unwrap();
        let from_bin = stream_edge_list(&dir.join("e.bin"), &cfg, method, true).unwrap();
        assert_eq!(from_text, from_bin, "{method:?}");
        let m = metrics(&h, &from_text, &cfg);
        assert!(m.balanced && m.empty_parts == 0, "{method:?}");
        let reference = metrics(&g, &stream_graph(&g, &cfg, method), &cfg);
        assert!(m.cut < 3 * reference.cut, "{method:?}: {} vs {}", m.cut, reference.cut);
    }
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn the_volume_objective_lowers_the_volume() {
    use parsim_partition::Objective;
    let g = io::read_metis(&data("ca-GrQc_lcc.graph")).unwrap();
    let mut lower = 0;
    for k in [4, 16] {
        let cut_cfg = Config::new(k);
        let vol_cfg = Config { objective: Objective::Volume, ..Config::new(k) };
        let (_, by_cut) = Method::Multilevel.partition(&g, &cut_cfg).unwrap();
        let (parts, by_vol) = Method::Multilevel.partition(&g, &vol_cfg).unwrap();
        valid(&g, &parts, k);
        assert!(by_vol.balanced, "k={k}");
        // Volume refinement starts from the cut-minimising partition and only takes moves that lower the volume.
        assert!(by_vol.volume <= by_cut.volume, "k={k}: {} > {}", by_vol.volume, by_cut.volume);
        lower += usize::from(by_vol.volume < by_cut.volume);
    }
    assert!(lower > 0, "volume refinement never helped");
}
