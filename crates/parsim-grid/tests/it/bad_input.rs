//! Bad grids are refused before any work starts, with a clear message.

use parsim_grid::{CellFn, DecompKind, Decomposition, GridError, GridSpec, Neighbourhood, Reach};

fn msg(r: Result<Decomposition, GridError>) -> String {
    match r {
        Err(GridError::Config(m)) => m,
        other => panic!("expected a configuration error, got {other:?}"),
    }
}

#[test]
fn grids_too_small_for_the_cut_are_refused() {
    let m = msg(Decomposition::new(&[10, 10], 8, &DecompKind::Slabs, 1, [false; 3]));
    assert!(m.contains("cannot cut") && m.contains("8"), "{m}");
    let m = msg(GridSpec::new(vec![16, 16], 1).decompose(4, 5));
    assert!(m.contains("radius 5"), "{m}");
    let m = msg(Decomposition::new(&[0, 16], 1, &DecompKind::Auto, 1, [false; 3]));
    assert!(m.contains("no cells"), "{m}");
    let m = msg(Decomposition::new(&[16, 16], 5, &DecompKind::Grid(vec![2, 2]), 1, [false; 3]));
    assert!(m.contains("4 ranks"), "{m}");
    let mut spec = GridSpec::new(vec![16, 16], 1);
    spec.deep_halo = 4; // a 4-wide halo needs blocks of 8 cells: 16 / 4 ranks is too few
    let m = msg(spec.decompose(16, 1));
    assert!(m.contains("cannot cut"), "{m}");
}

#[test]
fn a_halo_wider_than_a_block_is_refused_by_the_plan() {
    let d = Decomposition::new(&[16], 4, &DecompKind::Auto, 1, [true; 3]).expect("fits");
    let f = parsim_grid::Field::<f64>::new(&d, 0, 6);
    let e = parsim_grid::HaloPlan::new(&d, 0, &f, 6, Reach::Star, [parsim_grid::Boundary::Periodic; 3]).unwrap_err();
    assert!(e.to_string().contains("larger than rank 0's block"), "{e}");
    let _ = CellFn::new(1, Reach::Star, |n: &Neighbourhood<'_, f64>| n.centre());
}
