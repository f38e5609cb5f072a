//! Decompositions: every cell owned once, neighbours symmetric, the auto
//! choice minimises the cut — over many random shapes and rank counts.

use parsim_core::rng::StreamKey;
use parsim_grid::{DecompKind, Decomposition};

fn random_case(i: u64) -> (Vec<usize>, usize, usize, [bool; 3]) {
    let mut s = StreamKey::new(77).purpose("decomp").with(i).stream();
    let ndim = 1 + s.below(3) as usize;
    let size: Vec<usize> = (0..ndim).map(|_| 1 + s.below(if ndim == 1 { 500 } else { 60 }) as usize).collect();
    let ranks = 1 + s.below(24) as usize;
    let halo = 1 + s.below(2) as usize;
    let periodic = [s.bernoulli(0.5), s.bernoulli(0.5), s.bernoulli(0.5)];
    (size, ranks, halo, periodic)
}

#[test]
fn every_cell_is_owned_exactly_once_and_neighbours_are_symmetric() {
    let mut checked = 0;
    for i in 0..600 {
        let (size, ranks, halo, periodic) = random_case(i);
        for kind in [DecompKind::Auto, DecompKind::Slabs, DecompKind::Pencils, DecompKind::Blocks] {
            let Ok(d) = Decomposition::new(&size, ranks, &kind, halo, periodic) else { continue };
            checked += 1;
            assert_eq!(d.ranks(), ranks);
            let shape = d.shape();
            let mut owner = vec![usize::MAX; shape.iter().product()];
            for r in 0..ranks {
                let b = d.block(r);
                for a in 0..3 {
                    let even = shape[a] / d.procs()[a];
                    assert!(b.len[a] == even || b.len[a] == even + 1, "uneven split {b:?}");
                    if d.procs()[a] > 1 {
                        assert!(b.len[a] >= 2 * halo, "block narrower than 2 halos: {b:?}");
                    }
                }
                for z in b.start[0]..b.start[0] + b.len[0] {
                    for y in b.start[1]..b.start[1] + b.len[1] {
                        for x in b.start[2]..b.start[2] + b.len[2] {
                            let c = &mut owner[(z * shape[1] + y) * shape[2] + x];
                            assert_eq!(*c, usize::MAX, "cell owned twice");
                            *c = r;
                        }
                    }
                }
                for dz in -1..=1i64 {
                    for dy in -1..=1i64 {
                        for dx in -1..=1i64 {
                            if let Some(n) = d.neighbour(r, [dz, dy, dx]) {
                                assert_eq!(d.neighbour(n, [-dz, -dy, -dx]), Some(r), "asymmetric neighbours");
                            }
                        }
                    }
                }
            }
            assert!(owner.iter().all(|&o| o != usize::MAX), "a cell nobody owns");
        }
    }
    assert!(checked > 1000, "{checked}");
}

#[test]
fn auto_cuts_long_grids_across_and_square_grids_in_blocks() {
    let d = Decomposition::new(&[8192, 512], 4, &DecompKind::Auto, 1, [false; 3]).expect("fits");
    assert_eq!(d.process_grid(), vec![4, 1]);
    let d = Decomposition::new(&[4096, 4096], 4, &DecompKind::Auto, 1, [false; 3]).expect("fits");
    assert_eq!(d.process_grid(), vec![2, 2]);
    let d = Decomposition::new(&[256, 256, 256], 8, &DecompKind::Auto, 1, [false; 3]).expect("fits");
    assert_eq!(d.process_grid(), vec![2, 2, 2]);
    let d = Decomposition::new(&[64, 64], 4, &DecompKind::Slabs, 1, [false; 3]).expect("fits");
    assert_eq!(d.process_grid(), vec![4, 1]);
    let d = Decomposition::new(&[64, 64], 6, &DecompKind::Grid(vec![3, 2]), 1, [false; 3]).expect("fits");
    assert_eq!(d.process_grid(), vec![3, 2]);
}
