//! The ring's digest does not depend on the number of ranks or the backend.

use crate::support::{run_summary, tmp};

const SMALL: [&str; 4] = ["--set", "ring.laps=200", "--set", "ring.nodes=24"];

fn digest_at(ranks: u32, dir: &std::path::Path) -> (String, serde_json::Value) {
    let r = ranks.to_string();
    let mut args = vec!["scenarios/ring.toml", "--ranks", &r];
    args.extend_from_slice(&SMALL);
    let s = run_summary(&args, &dir.join(format!("r{ranks}")));
    (s["digest"].as_str().expect("digest").to_string(), s)
}

#[test]
fn ring_digest_is_the_same_for_1_2_3_4_8_ranks_on_threads() {
    let dir = tmp("ring-ranks");
    let (d1, s1) = digest_at(1, &dir);
    assert_eq!(d1.len(), 32);
    for r in [2, 3, 4, 8] {
        let (d, s) = digest_at(r, &dir);
        assert_eq!(d, d1, "digest at {r} ranks differs from 1 rank");
        assert_eq!(s["metrics"], s1["metrics"]);
        assert_eq!(s["ranks"], r);
    }
}

#[test]
fn seed_changes_the_digest() {
    let dir = tmp("ring-seed");
    let mut a = vec!["scenarios/ring.toml", "--seed", "1"];
    a.extend_from_slice(&SMALL);
    let s1 = run_summary(&a, &dir.join("a"));
    a[2] = "2";
    let s2 = run_summary(&a, &dir.join("b"));
    assert_ne!(s1["digest"], s2["digest"]);
    assert_eq!(s1["seed"], 1);
}

#[test]
fn summary_has_every_field_of_the_contract() {
    let dir = tmp("ring-summary");
    let (_, s) = digest_at(3, &dir);
    for k in [
        "model",
        "backend",
        "ranks",
        "threads_per_rank",
        "seed",
        "wall_s",
        "phases_s",
        "counters",
        "imbalance",
        "digest",
        "metrics",
    ] {
        assert!(s.get(k).is_some(), "summary.json lacks {k}: {s}");
    }
    for p in ["compute", "comm", "wait", "io", "serial"] {
        assert_eq!(s["phases_s"][p].as_array().map(Vec::len), Some(3), "phases_s.{p}");
    }
    assert_eq!(s["model"], "ring");
    assert_eq!(s["backend"], "threads");
    assert_eq!(s["metrics"]["hops"], 200 * 24);
    let hops: u64 = s["counters"]["hops"].as_array().expect("hops").iter().map(|v| v.as_u64().unwrap_or(0)).sum();
    assert_eq!(hops, 200 * 24);
    assert!(s["counters"]["messages_sent"][0].as_u64().unwrap_or(0) >= 200, "{}", s["counters"]);
    assert!(s["imbalance"].as_f64().unwrap_or(0.0) >= 1.0);
    // Written atomically: no temporary file is left beside it.
    let leftovers: Vec<_> = std::fs::read_dir(dir.join("r3"))
        .expect("dir")
        .filter_map(Result::ok)
        .filter(|e| e.file_name().to_string_lossy().contains(".tmp"))
        .collect();
    assert!(leftovers.is_empty());
}

/// Under MPI (built with `--features mpi`, `mpirun` on PATH): the same digest at 1, 2 and 4 ranks.
#[cfg(feature = "mpi")]
#[test]
fn ring_digest_under_mpirun_1_2_4_equals_threads() {
    let dir = tmp("ring-mpi");
    let (want, _) = digest_at(1, &dir);
    for n in ["1", "2", "4"] {
        let mut args = vec!["run", "scenarios/ring.toml"];
        args.extend_from_slice(&SMALL);
        let s = crate::support::mpirun_summary(n, &args, &dir.join(format!("mpi{n}")));
        assert_eq!(s["digest"].as_str(), Some(want.as_str()), "mpirun -n {n}");
    }
}
