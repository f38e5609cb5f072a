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
