//! Checkpointed grid runs killed, corrupted and restarted — on the same and
//! other rank counts — end with the failure-free digest.

use parsim_ckpt::{Checkpointer, CkptError, Identity, Injection, Interval, Options};
use parsim_comm::CommError;
use parsim_core::Digest;
use parsim_grid::{run_resilient, Boundary, Cell, GridError, GridSpec, Guard, Heat5, Heat7, Life, Stencil};

fn tmp(name: &str) -> std::path::PathBuf {
    let d = std::env::temp_dir().join(format!("parsim-grid-ckpt-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    d
}

fn go<T: Cell, S: Stencil<T>>(
    ranks: usize,
    spec: &GridSpec,
    stencil: &S,
    init: &(dyn Fn([usize; 3]) -> T + Sync),
    opts: Option<Options>,
    guard: Guard,
) -> Result<Digest, CommError> {
    let out = parsim_comm::launch(ranks, |c| {
        let mut ck = match &opts {
            Some(o) => Some(
                Checkpointer::new(&c, o.clone(), Identity::new("grid", "step", "t", 1))
                    .map_err(|e: CkptError| GridError::Checkpoint(e.to_string()))?,
            ),
            None => None,
        };
        run_resilient(&c, spec, stencil, init, &mut |_| {}, ck.as_mut(), guard).map(|(r, _)| r.digest)
    })?;
    Ok(out[0])
}

/// Kill at `kill` on `before` ranks, restart on `after`: the digest holds.
fn kill_and_restart<T: Cell, S: Stencil<T>>(
    name: &str,
    spec: &GridSpec,
    stencil: &S,
    init: &(dyn Fn([usize; 3]) -> T + Sync),
    cases: &[(usize, usize, u64)],
) {
    let want = go(1, spec, stencil, init, None, Guard::default()).unwrap();
    for &(before, after, kill) in cases {
        let dir = tmp(name);
        let mut o = Options::new(&dir, Some(Interval::Every(4)));
        // Steps take microseconds: a background write could still be pending
        // when the rank dies (and die with it); scripts/kill-loop.sh tests that.
        o.asynchronous = false;
        o.inject = vec![Injection::parse(&format!("kill:rank={},step={kill}", before - 1)).unwrap()];
        let e = go(before, spec, stencil, init, Some(o.clone()), Guard::default()).unwrap_err().to_string();
        assert!(e.contains("injected kill"), "{e}");
        o.restart = Some(dir.clone());
        o.attempt = 1;
        let got = go(after, spec, stencil, init, Some(o), Guard::default()).unwrap();
        assert_eq!(got, want, "{name}: killed at {kill} on {before} ranks, restarted on {after}");
        std::fs::remove_dir_all(&dir).unwrap();
    }
}

#[test]
fn heat_2d_periodic_and_dirichlet() {
    let init = |g: [usize; 3]| ((g[1] * 31 + g[2] * 17) % 11) as f64 / 11.0;
    let mut spec = GridSpec::new(vec![24, 20], 30);
    kill_and_restart("h2p", &spec, &Heat5 { alpha: 0.2 }, &init, &[(4, 2, 13), (2, 3, 9), (1, 4, 22), (3, 3, 27)]);
    spec.boundary = vec![Boundary::Dirichlet(0.5)];
    spec.overlap = false;
    kill_and_restart("h2d", &spec, &Heat5 { alpha: 0.2 }, &init, &[(2, 4, 17)]);
}

#[test]
fn heat_3d_deep_halo_restarts_between_exchanges() {
    let init = |g: [usize; 3]| (g[0] + 2 * g[1] + 3 * g[2]) as f64 % 7.0;
    let mut spec = GridSpec::new(vec![24, 20, 16], 19);
    spec.deep_halo = 3;
    // Checkpoints every 4 steps fall between the exchanges every 3.
    kill_and_restart("h3", &spec, &Heat7 { alpha: 0.1 }, &init, &[(4, 2, 11), (2, 3, 18)]);
}

#[test]
fn life_u8() {
    let init = |g: [usize; 3]| u8::from((g[1] * 7 + g[2] * 13) % 5 < 2);
    let spec = GridSpec::new(vec![30, 30], 25);
    kill_and_restart("life", &spec, &Life, &init, &[(3, 2, 21), (1, 2, 6)]);
}

#[test]
fn a_flipped_bit_is_caught_before_it_is_checkpointed() {
    let init = |g: [usize; 3]| ((g[1] * 3 + g[2]) % 5) as f64;
    let mut spec = GridSpec::new(vec![16, 16], 30);
    spec.reduce_every = 0;
    let guard = Guard { conserved: true };
    let want = go(1, &spec, &Heat5 { alpha: 0.2 }, &init, None, guard).unwrap();
    let dir = tmp("flip");
    let mut o = Options::new(&dir, Some(Interval::Every(5)));
    o.asynchronous = false;
    o.inject = vec![Injection::parse("bitflip:rank=1,step=12").unwrap()];
    let e = go(2, &spec, &Heat5 { alpha: 0.2 }, &init, Some(o.clone()), guard).unwrap_err().to_string();
    assert!(e.contains("invariant violated") && e.contains("after step 15"), "{e}");
    o.restart = Some(dir.clone());
    o.attempt = 1;
    assert_eq!(go(2, &spec, &Heat5 { alpha: 0.2 }, &init, Some(o), guard).unwrap(), want);
    std::fs::remove_dir_all(&dir).unwrap();
}
