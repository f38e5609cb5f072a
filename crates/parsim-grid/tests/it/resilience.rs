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

/// Temporal blocking with a checkpointer: blocks run where no checkpoint
/// every n steps and no bit flip falls inside them, a kill inside a block
/// fires after it, and a time-based checkpoint due inside one is taken at
/// its end. Every run ends with the digest of steps one by one.
#[test]
fn temporal_blocking_runs_between_checkpoints() {
    let init = |g: [usize; 3]| ((g[1] * 5 + g[2] * 3) % 13) as f64 / 13.0;
    let mut spec = GridSpec::new(vec![40, 36], 40);
    spec.deep_halo = 4;
    spec.reduce_every = 0;
    spec.boundary = vec![Boundary::Dirichlet(0.25)];
    let heat = Heat5 { alpha: 0.2 };
    let run = |ranks: usize, spec: &GridSpec, opts: Option<Options>| {
        parsim_comm::launch(ranks, |c| {
            let mut ck = match &opts {
                Some(o) => Some(
                    Checkpointer::new(&c, o.clone(), Identity::new("grid", "step", "tb", 1))
                        .map_err(|e: CkptError| GridError::Checkpoint(e.to_string()))?,
                ),
                None => None,
            };
            let r = run_resilient(&c, spec, &heat, &init, &mut |_| {}, ck.as_mut(), Guard::default());
            if let Some(ck) = ck {
                ck.finish();
            }
            r.map(|(r, _)| (r.digest, r.blocked_steps))
        })
        .map(|v| v[0])
    };
    let mut one_by_one = spec.clone();
    one_by_one.temporal_blocking = false;
    let (want, none) = run(1, &one_by_one, None).unwrap();
    assert_eq!(none, 0);

    // Every 6 steps: of the ten 4-step blocks, [4, 8), [16, 20) and [28, 32)
    // hold a multiple of 6 inside and run one step at a time.
    let dir = tmp("tb");
    let mut o = Options::new(&dir, Some(Interval::Every(6)));
    o.asynchronous = false;
    let (got, blocked) = run(2, &spec, Some(o.clone())).unwrap();
    assert_eq!(got, want, "blocked between checkpoints every 6");
    assert_eq!(blocked, 4 * 7, "seven blocks of four steps");

    // Killed at step 9, inside the block [8, 12): it dies after the block,
    // and the restart from step 6 gives the same field.
    std::fs::remove_dir_all(&dir).unwrap();
    o.inject = vec![Injection::parse("kill:rank=1,step=9").unwrap()];
    let e = run(2, &spec, Some(o.clone())).unwrap_err().to_string();
    assert!(e.contains("injected kill at step 9"), "{e}");
    o.inject.clear();
    o.restart = Some(dir.clone());
    o.attempt = 1;
    assert_eq!(run(3, &spec, Some(o.clone())).unwrap().0, want, "restarted after a kill inside a block");
    std::fs::remove_dir_all(&dir).unwrap();

    // A bit flip at step 10 is not inside a block: [8, 12) runs one step at a time.
    let mut o = Options::new(&dir, Some(Interval::Every(6)));
    o.asynchronous = false;
    o.inject = vec![Injection::parse("bitflip:rank=0,step=10").unwrap()];
    let (flipped, blocked) = run(2, &spec, Some(o)).unwrap();
    assert_ne!(flipped, want, "the flip changed the field");
    assert_eq!(blocked, 4 * 6, "[8, 12) is not blocked");
    std::fs::remove_dir_all(&dir).unwrap();

    // A time-based interval: checkpoints fall where they are due, or at the
    // end of the block they fell in.
    let mut o = Options::new(&dir, Some(Interval::Seconds(1e-9)));
    o.asynchronous = false;
    let (got, blocked) = run(2, &spec, Some(o)).unwrap();
    assert_eq!(got, want, "time-based checkpoints with blocking");
    assert!(blocked > 0, "blocks ran between time-based checkpoints");
    std::fs::remove_dir_all(&dir).unwrap();
}
