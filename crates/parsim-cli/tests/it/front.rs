//! The reaction front on a tiled grid: the same digest with balancing off,
//! under every strategy and at every rank count; rebalances reported; bad
//! values refused.

use crate::support::{parsim, run_summary, tmp};

const SMALL: [&str; 6] = ["--set", "front.size=[48,64]", "--set", "front.tile=[8,8]", "--set", "front.steps=40"];

fn front(ranks: &str, strategy: &str, out: &std::path::Path) -> serde_json::Value {
    let s = format!("lb.strategy={strategy}");
    let mut a = vec!["scenarios/front.toml", "--ranks", ranks, "--set", &s, "--set", "lb.every=4", "-q"];
    a.extend_from_slice(&SMALL);
    // Measured time (cells per tile are equal, so counts would never move
    // anything); the digest must not depend on what the timings decide.
    a.extend_from_slice(&["--set", "lb.threshold=1.05", "--set", "front.substeps=32"]);
    run_summary(&a, out)
}

#[test]
fn the_front_digest_is_the_same_with_every_strategy_at_every_rank_count() {
    let dir = tmp("front");
    let reference = front("1", "off", &dir.join("ref"));
    assert!(reference["metrics"]["burnt_fraction"].as_f64() > Some(0.05), "{}", reference["metrics"]);
    for strategy in ["off", "diffusive", "sfc", "graph", "greedy", "refine", "steal"] {
        for ranks in ["2", "3"] {
            let s = front(ranks, strategy, &dir.join(format!("{strategy}-{ranks}")));
            assert_eq!(s["digest"], reference["digest"], "{strategy} on {ranks} ranks");
            assert_eq!(s["metrics"]["total"], reference["metrics"]["total"]);
        }
    }
    let s = crate::support::read_summary(&dir.join("sfc-2"));
    assert!(s["lb"]["rebalances"].as_u64() > Some(0), "{}", s["lb"]);
    for f in ["front.png", "lb.png"] {
        assert!(dir.join("sfc-2").join(f).is_file(), "{f} missing");
    }
}

#[test]
fn bad_front_values_are_refused_with_their_line() {
    for (set, want) in [
        ("front.diffusion=0.3", "[front] diffusion"),
        ("front.tile=[8]", "[front] tile"),
        ("front.ignition=\"top\"", "[front] ignition"),
        ("front.boundary=\"open\"", "[front] boundary"),
        ("lb.window=1", "[lb] window"),
    ] {
        let o = parsim(&["run", "scenarios/front.toml", "--set", set, "--dry-run"]);
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{set}: {err}");
        assert!(err.contains(want), "{set}: expected {want:?} in {err}");
    }
}

#[cfg(feature = "mpi")]
#[test]
fn the_front_digest_under_mpirun_equals_the_threads_digest() {
    use crate::support::mpirun_summary;
    let dir = tmp("front-mpi");
    let reference = front("1", "off", &dir.join("ref"))["digest"].clone();
    for (n, strategy) in [("2", "sfc"), ("4", "graph")] {
        let s = format!("lb.strategy={strategy}");
        let mut a = vec!["run", "scenarios/front.toml", "--set", &s, "--set", "lb.every=4", "-q"];
        a.extend_from_slice(&SMALL);
        a.extend_from_slice(&["--set", "lb.threshold=1.05", "--set", "front.substeps=32"]);
        let got = mpirun_summary(n, &a, &dir.join(format!("mpi-{n}-{strategy}")));
        assert_eq!(got["digest"], reference, "{strategy} under mpirun -n {n}");
    }
}
