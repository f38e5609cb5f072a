//! Running a grid on the threads backend from tests.

use parsim_comm::launch;
use parsim_core::{rng::StreamKey, Digest};
use parsim_grid::{run, Cell, GridReport, GridSpec, Stencil};

/// A reproducible pseudo-random initial value per global cell.
pub fn noise(g: [usize; 3]) -> f64 {
    StreamKey::new(5).purpose("test.init").with(g[0] as u64).with(g[1] as u64).with(g[2] as u64).stream().uniform()
}

/// Runs `spec` on `ranks` ranks and returns rank 0's report, checking that
/// every rank reports the same digest.
pub fn run_on<T: Cell, S: Stencil<T>>(
    ranks: usize,
    spec: &GridSpec,
    stencil: &S,
    init: &(dyn Fn([usize; 3]) -> T + Sync),
) -> GridReport {
    let mut out = launch(ranks, |comm| run(&comm, spec, stencil, init, &mut |_| {}))
        .unwrap_or_else(|e| panic!("{ranks} ranks, {spec:?}: {e}"));
    let d: Vec<Digest> = out.iter().map(|r| r.digest).collect();
    assert!(d.iter().all(|x| *x == d[0]), "ranks disagree on the digest");
    out.swap_remove(0)
}
