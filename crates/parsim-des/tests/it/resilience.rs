//! Checkpointed DES runs — every engine — killed and restarted on the same
//! and other rank counts, end with the failure-free digest.

use parsim_ckpt::{Checkpointer, Identity, Injection, Interval, Options};
use parsim_comm::CommError;
use parsim_core::Digest;
use parsim_des::models::Phold;
use parsim_des::{DesConfig, DesError, Engine};

const PHOLD: Phold = Phold { lps: 48, start_events: 4, mean: 1.0, lookahead: 0.1, remote: 0.3, end: 30.0 };

fn tmp(name: &str) -> std::path::PathBuf {
    let d = std::env::temp_dir().join(format!("parsim-des-ckpt-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    d
}

fn unit(engine: Engine) -> &'static str {
    if engine == Engine::Optimistic {
        "gvt"
    } else {
        "window"
    }
}

/// A run with checkpoints in `opts`: the digest and the committed count.
fn go(engine: Engine, ranks: usize, opts: Option<&Options>) -> Result<(Digest, u64), CommError> {
    let out = parsim_comm::launch(ranks, |c| {
        let cfg = DesConfig::new(engine);
        let mut ck = match opts {
            Some(o) => Some(
                Checkpointer::new(&c, o.clone(), Identity::new("phold", unit(engine), "t", 1))
                    .map_err(|e| DesError::Config(e.to_string()))?,
            ),
            None => None,
        };
        let r = parsim_des::run_resilient(&c, &PHOLD, &cfg, None, ck.as_mut())?;
        let done = ck.map_or(0, |c| c.finish().checkpoints);
        Ok::<_, DesError>((r.digest, r.total.committed, done))
    })?;
    assert!(out.iter().all(|o| o.0 == out[0].0), "ranks disagree");
    Ok((out[0].0, out[0].1))
}

/// Kill at boundary `at` of rank `before - 1` on `before` ranks, restart on `after`.
fn kill_and_restart(engine: Engine, cases: &[(usize, usize, u64, u64)]) {
    let want = go(Engine::Sequential, 1, None).unwrap();
    for &(before, after, every, at) in cases {
        let name = format!("{}-{before}-{after}-{at}", engine.name());
        let dir = tmp(&name);
        let mut o = Options::new(&dir, Some(Interval::Every(every)));
        o.asynchronous = false;
        o.inject = vec![Injection::parse(&format!("kill:rank={},{}={at}", before - 1, unit(engine))).unwrap()];
        let e = go(engine, before, Some(&o)).unwrap_err().to_string();
        assert!(e.contains("injected kill"), "{name}: {e}");
        assert!(!parsim_ckpt::store::manifest_seqs(&dir).is_empty(), "{name}: no checkpoint before the kill");
        o.restart = Some(dir.clone());
        o.attempt = 1;
        let got = go(engine, after, Some(&o)).unwrap();
        assert_eq!(got, want, "{name}: killed at {at} on {before} ranks, restarted on {after}");
        std::fs::remove_dir_all(&dir).unwrap();
    }
}

#[test]
fn sequential_restarts_on_any_rank_count() {
    kill_and_restart(Engine::Sequential, &[(1, 1, 40, 170), (2, 3, 25, 111), (1, 4, 60, 250)]);
}

#[test]
fn conservative_restarts_at_a_cut() {
    kill_and_restart(Engine::Conservative, &[(2, 2, 30, 95), (4, 2, 40, 130), (2, 3, 25, 200), (1, 4, 50, 120)]);
}

#[test]
fn window_and_optimistic_restart() {
    kill_and_restart(Engine::Window, &[(2, 3, 40, 150)]);
    kill_and_restart(Engine::Optimistic, &[(2, 1, 3, 8)]);
}

/// Checkpoints of every kind taken along a failure-free run do not change
/// its digest, and each one restarts to it on 3 ranks.
#[test]
fn every_conservative_checkpoint_restarts() {
    let want = go(Engine::Sequential, 1, None).unwrap();
    let dir = tmp("cmb-all");
    let mut o = Options::new(&dir, Some(Interval::Every(45)));
    o.asynchronous = false;
    o.keep = parsim_ckpt::store::Keep { own: 100, partner: 100, shared: 100 };
    assert_eq!(go(Engine::Conservative, 3, Some(&o)).unwrap(), want);
    let seqs = parsim_ckpt::store::manifest_seqs(&dir);
    assert!(seqs.len() >= 5, "{seqs:?}");
    o.interval = None;
    for s in seqs {
        // Newest first: hide the newer ones.
        let m = dir.join("manifests").join(format!("c{s:06}.json"));
        o.restart = Some(dir.clone());
        assert_eq!(go(Engine::Conservative, 2, Some(&o)).unwrap(), want, "from checkpoint {s}");
        std::fs::remove_file(m).unwrap();
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

/// A flipped event counter is caught by the conservation of events before
/// it reaches a checkpoint (or at the end); restarting from the last
/// checkpoint gives the failure-free digest.
#[test]
fn a_flipped_counter_is_caught_and_rolled_back() {
    let want = go(Engine::Sequential, 1, None).unwrap();
    for (engine, ranks, at) in [
        (Engine::Sequential, 1, 77),
        (Engine::Conservative, 3, 130),
        (Engine::Window, 2, 101),
        (Engine::Conservative, 2, 290),
    ] {
        let dir = tmp(&format!("flip-{}-{at}", engine.name()));
        let mut o = Options::new(&dir, Some(Interval::Every(40)));
        o.asynchronous = false;
        o.inject = vec![Injection::parse(&format!("bitflip:rank={},window={at}", ranks - 1)).unwrap()];
        let e = go(engine, ranks, Some(&o)).unwrap_err().to_string();
        assert!(e.contains("invariant violated: events not conserved"), "{}: {e}", engine.name());
        o.restart = Some(dir.clone());
        o.attempt = 1;
        assert_eq!(go(engine, ranks, Some(&o)).unwrap(), want, "{} rolled back", engine.name());
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
