//! The ghost layer: every cut edge seen from both sides, exchange lists that
//! match position for position, changes delivered to exactly the ghosts.

use parsim_comm::Comm;
use parsim_graph::{Csr, DistGraph};

fn random(n: u32, m: usize, seed: u64) -> Csr {
    let mut s = parsim_core::rng::StreamKey::new(seed).purpose("test").stream();
    let pairs = (0..m).map(|_| (s.below(u64::from(n)) as u32, s.below(u64::from(n)) as u32)).collect();
    Csr::from_pairs(n as usize, pairs, None).0
}

#[test]
fn ghosts_and_exchange_lists_are_consistent() {
    let g = random(500, 2000, 3);
    for ranks in [1usize, 2, 3, 5] {
        let owner: Vec<u32> = (0..500).map(|v| (v * 7 % 11) as u32 % ranks as u32).collect();
        let views: Vec<DistGraph> = (0..ranks).map(|r| DistGraph::build(r, ranks, &g, &owner).unwrap()).collect();
        assert_eq!(views.iter().map(DistGraph::owned).sum::<usize>(), 500);
        for d in &views {
            for i in 0..d.owned() {
                let v = d.global(i) as usize;
                let mut mine: Vec<u32> = d.neighbours(i).iter().map(|&l| d.global(l as usize)).collect();
                // Owned neighbours first, then ghosts.
                let k = d.owned_neighbours(i).len();
                assert!(d.neighbours(i)[..k].iter().all(|&l| (l as usize) < d.owned()));
                assert!(d.neighbours(i)[k..].iter().all(|&l| (l as usize) >= d.owned()));
                mine.sort_unstable();
                assert_eq!(mine, g.neighbours(v));
            }
            for (q, &p) in d.peers().iter().enumerate() {
                let other = &views[p];
                let back = other.peers().iter().position(|&x| x == d.rank()).expect("symmetric peers");
                let sent: Vec<u32> = d.send_list(q).iter().map(|&l| d.global(l as usize)).collect();
                let got: Vec<u32> = other.recv_list(back).iter().map(|&l| other.global(l as usize)).collect();
                assert_eq!(sent, got);
            }
        }
        // Every owned vertex changes to its id + 1; each ghost must receive exactly that.
        let results = parsim_comm::launch(ranks, |comm| {
            let d = &views[comm.rank()];
            let changed: Vec<(u32, u32)> = (0..d.owned() as u32).map(|i| (i, d.global(i as usize) + 1)).collect();
            let got = d.exchange_changes(&comm, 5, &changed)?;
            Ok::<_, parsim_graph::GraphError>((got.len(), got.iter().all(|&(l, x)| x == d.global(l as usize) + 1)))
        })
        .unwrap();
        for (r, (count, ok)) in results.into_iter().enumerate() {
            assert!(ok);
            assert_eq!(count, views[r].ghosts());
        }
    }
}

/// Per owned vertex: its global id, its row (neighbour, layer) and where it is ghosted (rank, position).
type Shape = Vec<(u32, Vec<(u32, u8)>, Vec<(usize, u32)>)>;

/// The rows, ghosts and exchange lists of a view, in global ids.
fn shape(d: &DistGraph) -> Shape {
    (0..d.owned())
        .map(|i| {
            let mut row: Vec<(u32, u8)> = d.row(i).map(|e| (d.global(d.adj_at(e) as usize), d.layer_at(e))).collect();
            row.sort_unstable();
            let at = d.ghosted_at(i).map(|(q, pos)| (d.peers()[q as usize], pos)).collect();
            (d.global(i), row, at)
        })
        .collect()
}

#[test]
fn generated_views_equal_the_views_of_the_sequential_graph() {
    // Pairs with self-loops and repeats (in both orientations, other layers).
    let n = 700u32;
    let mut s = parsim_core::rng::StreamKey::new(9).purpose("test").stream();
    let pairs: Vec<(u32, u32, u8)> =
        (0..4000).map(|_| (s.below(u64::from(n)) as u32, s.below(u64::from(n)) as u32, s.below(4) as u8)).collect();
    let mut with_repeats = pairs.clone();
    with_repeats.extend(pairs.iter().take(300).map(|&(u, v, l)| (v, u, (l + 1) % 4)));
    let (g, stats) = Csr::from_pairs(
        n as usize,
        with_repeats.iter().map(|&(u, v, _)| (u, v)).collect(),
        Some(with_repeats.iter().map(|&(_, _, l)| l).collect()),
    );
    for ranks in 1..=4usize {
        let owner: Vec<u32> = (0..n).map(|v| parsim_graph::block_owner(n as usize, ranks, v)).collect();
        let got = parsim_comm::launch(ranks, |comm| {
            // Each rank emits a strided share of the pairs, in 3 units.
            let mine: Vec<(u32, u32, u8)> = with_repeats.iter().copied().skip(comm.rank()).step_by(ranks).collect();
            let (d, st) = DistGraph::from_generator(&comm, n as usize, 3, false, true, &|k, sink| {
                for &(u, v, l) in &mine[mine.len() * k / 3..mine.len() * (k + 1) / 3] {
                    sink(u, v, l);
                }
            })?;
            Ok::<_, parsim_graph::GraphError>((shape(&d), (st.self_loops, st.duplicates), d.cut_edges()))
        })
        .unwrap();
        for (r, (sh, st, cut)) in got.into_iter().enumerate() {
            let want = DistGraph::build(r, ranks, &g, &owner).unwrap();
            assert_eq!(sh, shape(&want), "ranks {ranks}, rank {r}");
            assert_eq!(st, (stats.self_loops, stats.duplicates));
            assert_eq!(cut, want.cut_edges());
            assert_eq!(want.owned_base(), Some(parsim_graph::block_range(n as usize, ranks, r).0));
        }
    }
}

/// Everything a view exposes, in the order it exposes it (local ids as they are).
fn whole_view(d: &DistGraph) -> impl PartialEq + std::fmt::Debug {
    let rows: Vec<Vec<u32>> = (0..d.owned()).map(|i| d.neighbours(i).to_vec()).collect();
    let lists: Vec<(Vec<u32>, Vec<u32>)> =
        (0..d.peers().len()).map(|q| (d.send_list(q).to_vec(), d.recv_list(q).to_vec())).collect();
    let at: Vec<Vec<(u32, u32)>> = (0..d.owned()).map(|i| d.ghosted_at(i).collect()).collect();
    let owners: Vec<usize> = (d.owned()..d.owned() + d.ghosts()).map(|l| d.ghost_owner(l)).collect();
    (rows, d.ghost_ids().to_vec(), d.peers().to_vec(), lists, d.boundary_ids().to_vec(), at, owners, d.cut_edges())
}

#[test]
fn block_rows_without_weights_take_the_fast_path_to_the_same_view() {
    // Random graphs split into id blocks: ghosts fill their span (a direct
    // table, rows split without branches) for few ranks, and are sparse in
    // it on a larger graph with many ranks and few edges (a hash table).
    for (n, m, ranks) in [(600u32, 3000usize, 2usize), (600, 3000, 3), (600, 3000, 5), (20_000, 3000, 4), (1, 0, 1)] {
        let g = random(n, m, u64::from(n) + ranks as u64);
        for r in 0..ranks {
            let (lo, hi) = parsim_graph::block_range(n as usize, ranks, r);
            let owner = |v: u32| parsim_graph::block_owner(n as usize, ranks, v);
            let plain = parsim_graph::Rows::of(&g, parsim_graph::Owned::Block(lo, hi));
            let mut weighted = plain.clone();
            weighted.weight = Some(vec![1.0; weighted.adj.len()]);
            let fast = DistGraph::from_rows(r, ranks, plain, &owner).unwrap();
            let general = DistGraph::from_rows(r, ranks, weighted, &owner).unwrap();
            assert_eq!(whole_view(&fast), whole_view(&general), "n {n}, ranks {ranks}, rank {r}");
            for l in fast.owned()..fast.owned() + fast.ghosts() {
                assert_eq!(fast.ghost_local(fast.global(l)), Some(l));
            }
            for v in 0..n {
                let want = if (lo..hi).contains(&v) { Some((v - lo) as usize) } else { general.local(v) };
                assert_eq!(fast.local(v), want, "id {v}");
            }
        }
    }
}

#[test]
fn owned_lists_find_every_owned_vertex_dense_or_sparse() {
    // Ids owned in a list (after a partition): dense in their span (every
    // third id, a ranked bitmap) and sparse in it (every 97th, a hash
    // table); `local` must agree with the position in the list for every
    // id, owned, ghost or neither.
    let n = 5000u32;
    let g = random(n, 20_000, 7);
    for stride in [3u32, 97] {
        let owner = |v: u32| u32::from(v % stride != 0);
        let ids: Vec<u32> = (0..n).filter(|&v| owner(v) == 0).collect();
        let d = DistGraph::from_rows(0, 2, parsim_graph::Rows::of(&g, parsim_graph::Owned::List(ids.clone())), &owner)
            .unwrap();
        for v in 0..n {
            let want = ids.binary_search(&v).ok().or_else(|| d.ghost_local(v));
            assert_eq!(d.local(v), want, "stride {stride}, id {v}");
        }
    }
}

#[test]
fn a_generator_naming_a_vertex_beyond_the_graph_is_refused_on_every_rank() {
    let got = parsim_comm::launch(2, |comm| {
        let r = comm.rank() as u32;
        let e = DistGraph::from_generator(&comm, 10, 1, false, false, &|_, sink| sink(r, 10 + r * 5, 0));
        Ok::<_, parsim_graph::GraphError>(e.map(|_| ()).unwrap_err().to_string())
    })
    .unwrap();
    assert!(got.iter().all(|m| m.contains("beyond the graph")), "{got:?}");
}

/// A 2-D grid of `side`² vertices whose ids are shuffled (so id blocks are scattered).
fn shuffled_grid(side: u32, seed: u64) -> Csr {
    let n = side * side;
    let mut perm: Vec<u32> = (0..n).collect();
    let mut s = parsim_core::rng::StreamKey::new(seed).purpose("test").stream();
    for i in (1..n as usize).rev() {
        perm.swap(i, s.below(i as u64 + 1) as usize);
    }
    let mut pairs = Vec::new();
    for y in 0..side {
        for x in 0..side {
            let v = perm[(y * side + x) as usize];
            if x + 1 < side {
                pairs.push((v, perm[(y * side + x + 1) as usize]));
            }
            if y + 1 < side {
                pairs.push((v, perm[((y + 1) * side + x) as usize]));
            }
        }
    }
    Csr::from_pairs(n as usize, pairs, None).0
}

#[test]
fn distributed_label_propagation_is_valid_balanced_reproducible_and_cuts_less() {
    let g = shuffled_grid(60, 4);
    let n = g.n();
    for ranks in [1usize, 2, 3, 4] {
        let owner: Vec<u32> = (0..n as u32).map(|v| parsim_graph::block_owner(n, ranks, v)).collect();
        let once = || {
            parsim_comm::launch(ranks, |comm| {
                let d = DistGraph::build(comm.rank(), ranks, &g, &owner)?;
                let p = d.label_propagation(&comm, 4, 0.03, 30)?;
                let ids = d.owned_ids().to_vec();
                Ok::<_, parsim_graph::GraphError>((ids, p))
            })
            .unwrap()
        };
        let (a, b) = (once(), once());
        assert_eq!(a.iter().map(|x| &x.1).collect::<Vec<_>>(), b.iter().map(|x| &x.1).collect::<Vec<_>>());
        let mut part = vec![u32::MAX; n];
        for (ids, p) in &a {
            for (&v, &x) in ids.iter().zip(&p.part) {
                part[v as usize] = x;
            }
        }
        assert!(part.iter().all(|&x| x < 4), "every vertex in a part");
        let mut size = [0usize; 4];
        for &x in &part {
            size[x as usize] += 1;
        }
        let cap = (1.03 * n as f64 / 4.0).ceil() as usize;
        assert!(size.iter().all(|&s| s <= cap && s > 0), "{ranks} ranks: sizes {size:?}, cap {cap}");
        // The reported cut is the partition's.
        let cut = (0..n)
            .flat_map(|v| g.neighbours(v).iter().map(move |&u| (v, u as usize)))
            .filter(|&(v, u)| part[v] != part[u])
            .count()
            / 2;
        let (before, after) = a[0].1.cut;
        assert_eq!(after as usize, cut);
        assert!((after as f64) < 0.5 * before as f64, "{ranks} ranks: cut {before} → {after}");
    }
}

/// Every rank's parts, put back in global id order.
fn assemble(n: usize, got: &[(Vec<u32>, Vec<u32>)]) -> Vec<u32> {
    let mut part = vec![u32::MAX; n];
    for (ids, p) in got {
        for (&v, &x) in ids.iter().zip(p) {
            part[v as usize] = x;
        }
    }
    part
}

fn cut_of(g: &Csr, part: &[u32]) -> u64 {
    let twice = (0..g.n()).flat_map(|v| g.neighbours(v).iter().map(move |&u| (v, u as usize)));
    twice.filter(|&(v, u)| part[v] != part[u]).count() as u64 / 2
}

/// The distributed multilevel partitioner on `g` at `ranks` ranks, from id
/// blocks or from a hash of the ids: (global parts, reported cut, levels).
fn dist_multilevel(g: &Csr, ranks: usize, k: usize, hashed: bool) -> (Vec<u32>, u64, usize) {
    let n = g.n();
    let owner: Vec<u32> = (0..n as u32)
        .map(|v| {
            if hashed {
                (v.wrapping_mul(2_654_435_761) >> 7) % ranks as u32
            } else {
                parsim_graph::block_owner(n, ranks, v)
            }
        })
        .collect();
    let got = parsim_comm::launch(ranks, |comm| {
        let d = DistGraph::build(comm.rank(), ranks, g, &owner)?;
        let p = d.multilevel(&comm, k, 0.03, 7)?;
        Ok::<_, parsim_graph::GraphError>((d.owned_ids().to_vec(), p))
    })
    .unwrap();
    let pairs: Vec<(Vec<u32>, Vec<u32>)> = got.iter().map(|(ids, p)| (ids.clone(), p.part.clone())).collect();
    assert!(got.iter().all(|x| x.1.cut == got[0].1.cut && x.1.levels == got[0].1.levels));
    (assemble(n, &pairs), got[0].1.cut, got[0].1.levels)
}

#[test]
fn distributed_multilevel_is_valid_balanced_reproducible_and_near_the_sequential_cut() {
    use parsim_partition::{multilevel_kway, Config};
    for (name, g) in [("shuffled grid", shuffled_grid(70, 5)), ("random", random(3000, 9000, 3))] {
        let n = g.n();
        let k = 4;
        let cfg = Config { imbalance: 0.03, seed: 7, ..Config::new(k) };
        let (seq, m) = multilevel_kway(&g.to_partition_graph(), &cfg).unwrap();
        let cap = (1.03 * (n as f64 / k as f64).ceil()).floor() as usize;
        for ranks in [1usize, 2, 3, 4] {
            for hashed in [false, true] {
                let (part, cut, levels) = dist_multilevel(&g, ranks, k, hashed);
                assert_eq!(dist_multilevel(&g, ranks, k, hashed).0, part, "{name}: reproducible at {ranks} ranks");
                assert!(part.iter().all(|&x| (x as usize) < k), "{name}: every vertex in a part");
                let mut size = vec![0usize; k];
                for &x in &part {
                    size[x as usize] += 1;
                }
                assert!(size.iter().all(|&s| s <= cap && s > 0), "{name}, {ranks} ranks: sizes {size:?}, cap {cap}");
                assert_eq!(cut, cut_of(&g, &part), "{name}: the reported cut is the partition's");
                if ranks == 1 {
                    assert_eq!(part, seq, "{name}: one rank is the sequential partition");
                    assert_eq!(levels, 0);
                } else {
                    assert!(levels >= 1, "{name}, {ranks} ranks: coarsened before gathering");
                    let ratio = cut as f64 / m.cut as f64;
                    assert!(ratio < 1.1, "{name}, {ranks} ranks, hashed {hashed}: cut {cut} against {}", m.cut);
                }
            }
        }
    }
}

#[test]
fn distributed_multilevel_cuts_near_the_sequential_cut_on_real_meshes() {
    use parsim_partition::{io, multilevel_kway, Config};
    let mut ratios = [Vec::new(), Vec::new()];
    for name in ["3elt.graph", "whitaker3.graph", "crack.graph"] {
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../../shared/data/graphs").join(name);
        let pg = io::read_graph(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        let g = Csr::from_graph(&pg);
        for k in [2usize, 4] {
            let (seq, _) = multilevel_kway(&pg, &Config { imbalance: 0.03, seed: 7, ..Config::new(k) }).unwrap();
            for hashed in [false, true] {
                let (part, cut, _) = dist_multilevel(&g, k, k, hashed);
                assert_eq!(cut, cut_of(&g, &part));
                ratios[usize::from(hashed)].push(cut as f64 / cut_of(&g, &seq) as f64);
            }
        }
    }
    // From id blocks and from hashed ids (no locality at all: the second
    // V-cycle, on the rows moved to their parts' ranks, is what recovers it).
    for (how, r) in ["blocks", "hashed ids"].iter().zip(&ratios) {
        let geomean = (r.iter().map(|x| x.ln()).sum::<f64>() / r.len() as f64).exp();
        assert!(geomean < 1.05, "from {how}: distributed / sequential cut {geomean:.3}: {r:?}");
    }
}

/// Records reach exactly the ranks that want their ids (owners, or several
/// replica holders), none lost or doubled, whoever held them; an id no rank
/// wants, or one beyond the vertices, is the same error on every rank.
#[test]
fn records_are_delivered_by_id_to_every_rank_that_wants_them() {
    use parsim_graph::{deliver_by_id, Records};
    let n = 997usize;
    let mix = |x: u64| x.wrapping_mul(0x9E37_79B9_7F4A_7C15).rotate_left(29);
    for ranks in 1..=4usize {
        // Vertex v is wanted by rank v mod ranks, and also by rank (v / 3) mod ranks when v is even.
        let wanted_by = |v: u32| {
            let mut w = vec![v as usize % ranks];
            if v % 2 == 0 && !w.contains(&((v as usize / 3) % ranks)) {
                w.push((v as usize / 3) % ranks);
            }
            w
        };
        let got = parsim_comm::launch(ranks, |comm| {
            let me = comm.rank();
            let wants: Vec<u32> = (0..n as u32).filter(|&v| wanted_by(v).contains(&me)).collect();
            // Each vertex's two records are held by pseudo-random ranks.
            let mut have = Records::default();
            for v in 0..n as u32 {
                for k in 0..2u64 {
                    if mix(u64::from(v) * 2 + k) % ranks as u64 == me as u64 {
                        have.push(v, &[k as u8, (v % 251) as u8]);
                    }
                }
            }
            let got = deliver_by_id(&comm, n, &wants, have)?;
            let mut list: Vec<(u32, Vec<u8>)> = got.iter().map(|(v, b)| (v, b.to_vec())).collect();
            list.sort();
            Ok::<_, parsim_graph::GraphError>(list)
        })
        .unwrap();
        for (me, list) in got.iter().enumerate() {
            let want: Vec<(u32, Vec<u8>)> = (0..n as u32)
                .filter(|&v| wanted_by(v).contains(&me))
                .flat_map(|v| (0..2u8).map(move |k| (v, vec![k, (v % 251) as u8])))
                .collect();
            assert_eq!(list, &want, "rank {me} of {ranks}");
        }
    }
    for (wants_all, id) in [(false, 5u32), (true, 1000)] {
        let errs = parsim_comm::launch(3, |comm| {
            let wants: Vec<u32> =
                (0..n as u32).filter(|&v| v as usize % 3 == comm.rank() && (wants_all || v != 5)).collect();
            let mut have = Records::default();
            if comm.rank() == 2 {
                have.push(id, &[1]);
            }
            Ok::<_, parsim_graph::GraphError>(
                deliver_by_id(&comm, n, &wants, have).map(|_| ()).map_err(|e| e.to_string()),
            )
        })
        .unwrap();
        let what = if wants_all { "beyond the 997 vertices" } else { "which no rank holds" };
        assert!(
            errs.iter().all(|e| e.as_ref().is_err_and(|m| m.contains(what) && m.contains(&id.to_string()))),
            "{errs:?}"
        );
    }
}

/// Pieces read one rank each, delivered in rounds (one piece large enough
/// for several rounds on its reader alone): every wanted record arrives
/// once; a rank whose read fails mid-stream stops every rank with an error.
#[test]
fn pieces_are_read_once_and_delivered_in_rounds_and_a_failure_stops_every_rank() {
    use parsim_graph::{deliver_pieces, Directory, Emit, GraphError, Records};
    let n = 400_000usize;
    // Piece k holds the ids v with v % 5 == k; piece 2 alone holds 80,000 ids × 4 records.
    let copies = |k: usize| if k == 2 { 4u8 } else { 1 };
    for fail in [None, Some(1usize)] {
        let got = parsim_comm::launch(3, |comm| {
            let me = comm.rank();
            let wants: Vec<u32> = (0..n as u32).filter(|&v| (v as usize * 7) % 3 == me).collect();
            let dir = Directory::new(&comm, n, &wants)?;
            let mut count = vec![0u8; n];
            let mut read_here = Vec::new();
            let read = |k: usize, emit: &mut Emit<'_>| {
                read_here.push(k);
                for v in (k as u32..n as u32).step_by(5) {
                    for c in 0..copies(k) {
                        emit(v, &[c])?;
                    }
                }
                if fail == Some(k) {
                    return Err(GraphError::Checkpoint(format!("piece {k} is unreadable")));
                }
                Ok(())
            };
            let take = |got: Records| {
                for (v, _) in got.iter() {
                    count[v as usize] += 1;
                }
                Ok::<_, GraphError>(())
            };
            let outcome = deliver_pieces(&comm, &dir, 5, read, take).map_err(|e| e.to_string());
            let ok = wants.iter().all(|&v| count[v as usize] == copies(v as usize % 5))
                && (0..n).filter(|&v| count[v] > 0).all(|v| (v * 7) % 3 == me);
            Ok::<_, GraphError>((outcome, ok, read_here))
        })
        .unwrap();
        for (me, (outcome, ok, read_here)) in got.iter().enumerate() {
            match fail {
                None => {
                    assert!(outcome.is_ok() && *ok, "rank {me}: {outcome:?}");
                    assert_eq!(read_here, &(me..5).step_by(3).collect::<Vec<_>>(), "rank {me} reads only its pieces");
                }
                Some(k) => {
                    let want = if me == k % 3 { "piece 1 is unreadable" } else { "another rank could not read" };
                    assert!(outcome.as_ref().is_err_and(|e| e.contains(want)), "rank {me}: {outcome:?}");
                }
            }
        }
    }
    // A record the delivery refuses (an id beyond the vertices) while one
    // rank is still reading and the other has finished: both return the
    // same error, neither waits for the other.
    let got = parsim_comm::launch(2, |comm| {
        let me = comm.rank();
        let wants: Vec<u32> = (0..1000u32).filter(|&v| v as usize % 2 == me).collect();
        let dir = Directory::new(&comm, 1000, &wants)?;
        let read = |k: usize, emit: &mut Emit<'_>| {
            if k == 1 {
                emit(5000, &[0])?;
                for _ in 0..200_000 {
                    emit(1, &[0])?;
                }
            }
            Ok::<_, GraphError>(())
        };
        Ok::<_, GraphError>(deliver_pieces(&comm, &dir, 2, read, |_| Ok(())).map_err(|e| e.to_string()))
    })
    .unwrap();
    assert!(got.iter().all(|e| e.as_ref().is_err_and(|m| m.contains("5000 beyond"))), "{got:?}");
}
