//! Agents in space from the command line: the crowd's and the flock's
//! digests are the same with balancing off and under every strategy, at
//! every rank count (and under mpirun); rebalances are printed and
//! plotted; snapshots and VTK files are written; bad `[space]`/`[lb]`
//! values are refused with their line.

use crate::support::{parsim, run_summary, tmp};

const CROWD: [&str; 12] = [
    "--set",
    "space.agents=3000",
    "--set",
    "space.size=[60.0,60.0]",
    "--set",
    "space.chunks=[8,8]",
    "--set",
    "space.steps=60",
    "--set",
    "crowd.opens=5",
    "--set",
    "space.snapshot_every=30",
];

fn crowd(ranks: &str, strategy: &str, extra: &[&str], out: &std::path::Path) -> serde_json::Value {
    let s = format!("lb.strategy={strategy}");
    let mut a = vec!["scenarios/crowd.toml", "--ranks", ranks, "--set", &s, "--set", "lb.every=5", "-q"];
    a.extend_from_slice(&CROWD);
    a.extend_from_slice(extra);
    run_summary(&a, out)
}

#[test]
fn the_crowd_digest_is_the_same_with_every_strategy_at_every_rank_count() {
    let dir = tmp("space-crowd");
    let reference = crowd("1", "off", &[], &dir.join("ref"))["digest"].clone();
    assert_eq!(reference.as_str().map(str::len), Some(32));
    for strategy in ["off", "diffusive", "sfc", "graph", "greedy", "refine", "steal"] {
        for ranks in ["2", "3", "4"] {
            // Counts as the measure, at every check: decisions (and moves) on any machine.
            let extra = ["--set", "lb.measure=count", "--set", "lb.when=every"];
            let s = crowd(ranks, strategy, &extra, &dir.join(format!("{strategy}-{ranks}")));
            assert_eq!(s["digest"], reference, "{strategy} on {ranks} ranks");
            assert_eq!(s["lb"]["strategy"], strategy);
            if strategy == "sfc" {
                assert!(s["lb"]["rebalances"].as_u64() > Some(0), "sfc never rebalanced: {}", s["lb"]);
            }
        }
    }
}

#[test]
fn rebalances_are_printed_plotted_and_summarised() {
    let dir = tmp("space-report");
    let out = dir.join("run");
    let mut a = vec!["run", "scenarios/crowd.toml", "--ranks", "2", "--set", "lb.strategy=sfc"];
    a.extend_from_slice(&["--set", "lb.every=5", "--set", "lb.measure=count", "--set", "lb.when=every"]);
    a.extend_from_slice(&CROWD);
    a.extend_from_slice(&["--set", "space.vtk=true", "--out", out.to_str().unwrap()]);
    let o = parsim(&a);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let text = String::from_utf8_lossy(&o.stdout);
    assert!(text.contains("rebalanced (sfc): λ"), "{text}");
    assert!(text.contains("→"), "{text}");
    let s = crate::support::read_summary(&out);
    let lb = &s["lb"];
    for k in ["rebalances", "chunks_migrated", "bytes_migrated", "decide_s", "migrate_s", "lambda", "events"] {
        assert!(lb.get(k).is_some(), "lb lacks {k}: {lb}");
    }
    let ev = &lb["events"][0];
    assert!(ev["lambda_before"].as_f64() >= ev["lambda_after"].as_f64(), "{ev}");
    assert!(ev["bytes"].as_u64() > Some(0), "{ev}");
    for m in ["ghost_updates", "broadcast_updates", "ghost_vs_broadcast", "efficiency", "agent_updates_per_s"] {
        assert!(s["metrics"][m].as_f64().is_some(), "metrics lack {m}");
    }
    assert!(s["metrics"]["ghost_vs_broadcast"].as_f64() < Some(0.5));
    for f in ["crowd.png", "lb.png", "snapshots/crowd_000030.png", "vtk/crowd_000060.pvtp", "vtk/crowd_000060_0001.vtp"]
    {
        let p = out.join(f);
        assert!(p.is_file(), "{} missing", p.display());
    }
    let pvtp = std::fs::read_to_string(out.join("vtk/crowd_000060.pvtp")).unwrap();
    assert!(pvtp.contains("crowd_000060_0000.vtp") && pvtp.contains("crowd_000060_0001.vtp"), "{pvtp}");
    let piece = std::fs::read_to_string(out.join("vtk/crowd_000060_0000.vtp")).unwrap();
    let n0: usize = piece.split("NumberOfPoints=\"").nth(1).unwrap().split('"').next().unwrap().parse().unwrap();
    let piece1 = std::fs::read_to_string(out.join("vtk/crowd_000060_0001.vtp")).unwrap();
    let n1: usize = piece1.split("NumberOfPoints=\"").nth(1).unwrap().split('"').next().unwrap().parse().unwrap();
    assert_eq!(n0 + n1, 3000);
}

#[test]
fn a_3d_flock_and_a_slowed_rank() {
    let dir = tmp("space-flock");
    let base = [
        "scenarios/flock.toml",
        "--set",
        "space.dim=3",
        "--set",
        "space.size=[24.0,24.0,24.0]",
        "--set",
        "space.chunks=[4,4,4]",
        "--set",
        "space.agents=1500",
        "--set",
        "space.steps=30",
        "-q",
    ];
    let one = run_summary(&[&base[..], &["--ranks", "1"]].concat(), &dir.join("1"));
    let three = run_summary(&[&base[..], &["--ranks", "3"]].concat(), &dir.join("3"));
    assert_eq!(one["digest"], three["digest"]);
    // Measured time on a rank made 6 times slower: the balancer moves work off it.
    let slow = run_summary(
        &[
            &base[..],
            &["--ranks", "2", "--inject", "slow:rank=1,factor=6", "--set", "lb.when=threshold", "--set", "lb.every=3"],
        ]
        .concat(),
        &dir.join("slow"),
    );
    assert_eq!(slow["digest"], one["digest"]);
    assert!(slow["lb"]["rebalances"].as_u64() > Some(0), "{}", slow["lb"]);
}

#[test]
fn bad_space_and_lb_values_are_refused_with_their_line() {
    for (set, want) in [
        ("lb.strategy=magic", "[lb] strategy"),
        ("lb.threshold=0.5", "[lb] threshold"),
        ("lb.every=0", "[lb] every"),
        ("space.radius=50.0", "larger than a chunk"),
        ("space.dim=3", "plane"),
        ("space.size=[10.0]", "[space] size"),
        ("space.agents=0", "[space] agents"),
        ("lb.strategyy=sfc", "unknown field `strategyy`"),
    ] {
        let o = parsim(&["run", "scenarios/crowd.toml", "--set", set, "--dry-run"]);
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{set}: {err}");
        assert!(err.contains(want), "{set}: expected {want:?} in {err}");
    }
    let o = parsim(&["run", "scenarios/crowd.toml", "--inject", "slow:rank=1", "--dry-run"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("factor"));
}

#[cfg(feature = "mpi")]
#[test]
fn the_crowd_digest_under_mpirun_equals_the_threads_digest() {
    use crate::support::mpirun_summary;
    let dir = tmp("space-mpi");
    let reference = crowd("1", "off", &[], &dir.join("ref"))["digest"].clone();
    for (n, strategy) in [("2", "sfc"), ("4", "diffusive"), ("4", "graph")] {
        let s = format!("lb.strategy={strategy}");
        let mut a = vec!["run", "scenarios/crowd.toml", "--set", &s, "--set", "lb.every=5", "-q"];
        a.extend_from_slice(&CROWD);
        let got = mpirun_summary(n, &a, &dir.join(format!("mpi-{n}-{strategy}")));
        assert_eq!(got["digest"], reference, "{strategy} under mpirun -n {n}");
    }
}
