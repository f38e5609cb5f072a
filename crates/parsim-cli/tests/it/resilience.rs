//! Checkpoint, kill and restart through the command line: the digests are
//! those of the runs that never failed (pinned in `pinned.rs`).

use crate::support::{parsim, read_summary, run_summary, tmp};

const HEAT: &[&str] = &[
    "scenarios/heat2d.toml",
    "--set",
    "grid.size=[96,80]",
    "--set",
    "grid.steps=40",
    "--set",
    "grid.png=false",
    "--set",
    "grid.output_every=0",
];
const HEAT_DIGEST: &str = "dcc83f46dabb2711247b9432a947b83e";
const TW: &[&str] = &[
    "scenarios/phold.toml",
    "--set",
    "phold.lps=128",
    "--set",
    "phold.end=20",
    "--set",
    "des.engine=optimistic",
    "--set",
    "des.gvt_interval=256",
];
const TW_DIGEST: &str = "b2a2c2948a3d72a3c59f91619f2f869d";
const WIN: &[&str] =
    &["scenarios/phold.toml", "--set", "phold.lps=128", "--set", "phold.end=20", "--set", "des.engine=window"];
const SEQ: &[&str] = &["scenarios/phold.toml", "--set", "phold.lps=128", "--set", "phold.end=20"];
const CMB: &[&str] =
    &["scenarios/phold.toml", "--set", "phold.lps=128", "--set", "phold.end=20", "--set", "des.engine=conservative"];
const EPI: &[&str] = &["scenarios/epidemic.toml", "--set", "abm.agents=20000", "--set", "abm.days=100"];
const EPI_DIGEST: &str = "a817b11757920a1310cc385c8e0df729";

fn with(base: &[&str], more: &[&str]) -> Vec<String> {
    base.iter().chain(more).map(|s| s.to_string()).collect()
}

fn run(args: &[String], name: &str) -> serde_json::Value {
    let a: Vec<&str> = args.iter().map(String::as_str).collect();
    run_summary(&a, &tmp(name))
}

#[test]
fn auto_restart_after_a_killed_rank_gives_the_failure_free_digest() {
    for (base, digest, kill, every) in [
        (HEAT, HEAT_DIGEST, "kill:rank=1,step=27", "8"),
        (EPI, EPI_DIGEST, "kill:rank=1,day=63", "10"),
        (TW, TW_DIGEST, "kill:rank=1,gvt=9", "4"),
        (CMB, TW_DIGEST, "kill:rank=1,window=90", "25"),
    ] {
        let s = run(
            &with(
                base,
                &[
                    "--ranks",
                    "2",
                    "--checkpoint-every",
                    every,
                    "--inject",
                    kill,
                    "--auto-restart",
                    "2",
                    "--checkpoint-sync",
                ],
            ),
            "auto",
        );
        assert_eq!(s["digest"], digest, "{kill}");
        let c = &s["checkpoint"];
        assert_eq!(c["relaunches"].as_array().unwrap().len(), 1, "{c}");
        assert!(c["relaunches"][0].as_str().unwrap().contains("injected kill"), "{c}");
        assert!(c["restarted_from"]["message"].as_str().unwrap().contains("restarting from checkpoint"), "{c}");
    }
    // With the Daly interval (an MTBF so short that it checkpoints often).
    let s = run(
        &with(
            EPI,
            &[
                "--checkpoint",
                "auto",
                "--mtbf",
                "2s",
                "--inject",
                "kill:rank=0,day=80",
                "--auto-restart",
                "1",
                "--checkpoint-sync",
            ],
        ),
        "daly",
    );
    assert_eq!(s["digest"], EPI_DIGEST);
    assert!(!s["checkpoint"]["tau_s"].as_array().unwrap().is_empty());
}

#[test]
fn restart_on_another_rank_count() {
    for (base, digest, every) in
        [(HEAT, HEAT_DIGEST, "6"), (EPI, EPI_DIGEST, "15"), (TW, TW_DIGEST, "3"), (WIN, TW_DIGEST, "40")]
            .into_iter()
            .chain([(SEQ, TW_DIGEST, "40"), (CMB, TW_DIGEST, "30")])
    {
        let first = tmp("ranks-first");
        let dir = first.join("ck");
        let d = dir.to_str().unwrap();
        let a: Vec<String> = with(base, &["--ranks", "2", "--checkpoint-every", every, "--checkpoint-dir", d]);
        let a: Vec<&str> = a.iter().map(String::as_str).collect();
        run_summary(&a, &first);
        for ranks in ["3", "1", "4"] {
            let s = run(&with(base, &["--ranks", ranks, "--restart", d]), "ranks-again");
            assert_eq!(s["digest"], digest, "restart of a 2-rank checkpoint on {ranks} ranks");
            let c = &s["checkpoint"];
            assert_eq!(c["restarted_from"]["ranks"], 2);
            // Each old piece is read on one rank only (the others get their
            // share of it by message), whatever the rank counts; the grid
            // reads on each rank the old blocks its own block overlaps.
            let read: Vec<u64> =
                c["restart_pieces_read"].as_array().unwrap().iter().map(|x| x.as_u64().unwrap()).collect();
            let bytes: Vec<u64> =
                c["restart_bytes_read"].as_array().unwrap().iter().map(|x| x.as_u64().unwrap()).collect();
            if base == HEAT {
                assert!(read.iter().sum::<u64>() >= 2 && read.iter().all(|&k| k <= 2), "{read:?}");
            } else {
                assert_eq!(read.iter().sum::<u64>(), 2, "{ranks} ranks read pieces {read:?}");
                assert!(read.iter().all(|&k| k <= 2_u64.div_ceil(ranks.parse().unwrap())), "{read:?}");
            }
            assert!(bytes.iter().zip(&read).all(|(&b, &k)| (b > 0) == (k > 0)), "{bytes:?} for {read:?}");
        }
    }
}

#[test]
fn bad_restarts_are_refused_with_exit_2() {
    let dir = tmp("bad-restart");
    let d = dir.join("ck");
    let ds = d.to_str().unwrap();
    let a = with(HEAT, &["--checkpoint-every", "10", "--checkpoint-dir", ds]);
    run(&a, "bad-first");
    let cases: Vec<(Vec<String>, &str)> = vec![
        (with(HEAT, &["--restart", "/nonexistent/ck"]), "is not a directory"),
        (with(HEAT, &["--restart", ds, "--set", "grid.alpha=0.2"]), "written by another scenario"),
        (with(HEAT, &["--checkpoint", "auto"]), "needs --mtbf"),
        (with(HEAT, &["--checkpoint-every", "0"]), "at least 1"),
        (with(HEAT, &["--inject", "kill:rank=1"]), "boundary"),
        (with(HEAT, &["--mtbf", "1h"]), "is for --checkpoint auto"),
    ];
    for (args, want) in cases {
        let mut a: Vec<&str> = vec!["run"];
        a.extend(args.iter().map(String::as_str));
        a.extend(["--out", dir.to_str().unwrap()]);
        let o = parsim(&a);
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{a:?}: {err}");
        assert!(err.contains(want), "{a:?}: {err}");
    }
    // Every copy of every checkpoint corrupted: refused (exit 2), never a restart from bad data.
    for e in walk(&d) {
        if e.extension().is_some_and(|x| x == "ckpt") {
            let mut b = std::fs::read(&e).unwrap();
            let n = b.len();
            b[n - 1] ^= 0xff;
            std::fs::write(&e, b).unwrap();
        }
    }
    let mut a: Vec<&str> = vec!["run"];
    let args = with(HEAT, &["--restart", ds, "--out", dir.to_str().unwrap()]);
    a.extend(args.iter().map(String::as_str));
    let o = parsim(&a);
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(err.contains("no usable checkpoint") && err.contains("checksum mismatch"), "{err}");
}

#[test]
fn a_flipped_bit_is_detected_and_rolled_back() {
    // Heat with periodic boundaries conserves the total; the epidemic's
    // counts are recounted before every checkpoint.
    let periodic = with(HEAT, &["--set", "grid.boundary=\"periodic\""]);
    let want = run(&periodic, "flip-ref")["digest"].clone();
    let s = run(
        &with(
            &periodic.iter().map(String::as_str).collect::<Vec<_>>(),
            &[
                "--checkpoint-every",
                "5",
                "--inject",
                "bitflip:rank=0,step=12",
                "--auto-restart",
                "1",
                "--checkpoint-sync",
            ],
        ),
        "flip",
    );
    assert_eq!(s["digest"], want);
    assert!(s["checkpoint"]["relaunches"][0].as_str().unwrap().contains("invariant violated"), "{}", s["checkpoint"]);
    let s = run(
        &with(
            EPI,
            &[
                "--checkpoint-every",
                "10",
                "--inject",
                "bitflip:rank=1,day=34",
                "--auto-restart",
                "1",
                "--checkpoint-sync",
            ],
        ),
        "flip-epi",
    );
    assert_eq!(s["digest"], EPI_DIGEST);
    assert!(s["checkpoint"]["relaunches"][0].as_str().unwrap().contains("invariant violated"), "{}", s["checkpoint"]);
    // PHOLD on CMB: the conservation of events (sent = handled + pending +
    // past the end) catches a flipped event counter.
    let s = run(
        &with(
            CMB,
            &[
                "--ranks",
                "2",
                "--checkpoint-every",
                "25",
                "--inject",
                "bitflip:rank=1,window=77",
                "--auto-restart",
                "1",
                "--checkpoint-sync",
            ],
        ),
        "flip-cmb",
    );
    assert_eq!(s["digest"], TW_DIGEST);
    let why = s["checkpoint"]["relaunches"][0].as_str().unwrap();
    assert!(why.contains("invariant violated: events not conserved"), "{why}");
}

#[test]
fn model_checkpoint_prints_young_and_daly() {
    let o = parsim(&["model", "checkpoint", "--delta", "5m", "--mtbf", "24h"]);
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(o.status.success());
    assert!(out.contains("116.69 min") && out.contains("120.00 min"), "{out}");
    let o = parsim(&["model", "checkpoint", "--delta", "5m", "--mtbf", "15m"]);
    assert!(String::from_utf8_lossy(&o.stdout).contains("9.14 min"));
    assert_eq!(parsim(&["model", "checkpoint", "--delta", "5 parsecs", "--mtbf", "1h"]).status.code(), Some(2));
}

#[test]
fn supervise_relaunches_until_success_and_stops_on_bad_input() {
    let dir = tmp("supervise");
    let exe = env!("CARGO_BIN_EXE_parsim");
    let mut a: Vec<String> =
        vec!["supervise".into(), "--restarts".into(), "2".into(), "--".into(), exe.into(), "run".into()];
    a.extend(with(HEAT, &["--checkpoint-every", "8", "--inject", "kill:rank=0,step=30", "-q"]));
    a.extend(["--out".into(), dir.to_str().unwrap().into()]);
    let o = parsim(&a.iter().map(String::as_str).collect::<Vec<_>>());
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success(), "{err}");
    assert!(err.contains("attempt 1 failed") && err.contains("finished after 1 relaunch"), "{err}");
    let s = read_summary(&dir);
    assert_eq!(s["digest"], HEAT_DIGEST);
    // Checkpoints at 8, 16, 24; the killed rank's last writes may not have
    // reached the disk (they die with it), so any of them may be the newest whole one.
    let b = s["checkpoint"]["restarted_from"]["boundary"].as_u64().unwrap();
    assert!([8, 16, 24].contains(&b), "restarted from step {b}");
    let o = parsim(&["supervise", "--", exe, "run", "scenarios/heat2d.toml", "--set", "grid.nope=1"]);
    assert_eq!(o.status.code(), Some(2), "bad input is not retried");
}

fn walk(d: &std::path::Path) -> Vec<std::path::PathBuf> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(d).unwrap().filter_map(|e| e.ok()) {
        let p = e.path();
        if p.is_dir() {
            out.extend(walk(&p));
        } else {
            out.push(p);
        }
    }
    out
}

#[test]
fn replicas_catch_a_flip_that_no_invariant_sees() {
    // Heat with fixed boundaries conserves nothing: a flipped cell goes
    // unnoticed and changes the result.
    let flip = ["--checkpoint-every", "10", "--inject", "bitflip:rank=0,step=23", "--auto-restart", "1"];
    let s =
        run(&with(HEAT, &with(&["--ranks", "2"], &flip).iter().map(String::as_str).collect::<Vec<_>>()), "rep-none");
    assert_ne!(s["digest"], HEAT_DIGEST, "the flip should change the unreplicated result");
    // Two replicas compare their states at every checkpoint: the flip is
    // caught at step 30 and the run rolls back to step 20.
    let mut a = with(HEAT, &["--ranks", "2", "--replicate", "2", "--checkpoint-sync"]);
    a.extend(flip.iter().map(|s| s.to_string()));
    let s = run(&a, "rep-flip");
    assert_eq!(s["digest"], HEAT_DIGEST);
    assert_eq!(s["replicas"], 2);
    assert_eq!(s["ranks"], 2);
    let why = s["checkpoint"]["relaunches"][0].as_str().unwrap();
    assert!(why.contains("step 30: the replicas' states differ"), "{why}");
    assert!(s["checkpoint"]["replica_checks"].as_array().is_some_and(|v| v[0].as_u64() > Some(0)));
    // A flip after the last checkpoint is caught by the final digests.
    let late = ["--checkpoint-every", "10", "--inject", "bitflip:rank=1,step=35", "--auto-restart", "1"];
    let mut a = with(HEAT, &["--ranks", "2", "--replicate", "2"]);
    a.extend(late.iter().map(|s| s.to_string()));
    let s = run(&a, "rep-late");
    assert_eq!(s["digest"], HEAT_DIGEST);
    let why = s["checkpoint"]["relaunches"][0].as_str().unwrap();
    assert!(why.contains("final digests differ"), "{why}");
    // The epidemic and the window engine replicate too, with their digests.
    let s = run(&with(EPI, &["--ranks", "2", "--replicate", "2", "--checkpoint-every", "20"]), "rep-epi");
    assert_eq!(s["digest"], EPI_DIGEST);
    let s = run(&with(WIN, &["--ranks", "3", "--replicate", "2", "--checkpoint-every", "30"]), "rep-win");
    assert_eq!(s["digest"], TW_DIGEST);
    // Refused: other counts, no interval, Time Warp.
    for (extra, says) in [
        (vec!["--replicate", "3", "--checkpoint-every", "5"], "expected 2"),
        (vec!["--replicate", "2"], "give --checkpoint-every N"),
        (vec!["--replicate", "2", "--checkpoint-seconds", "5"], "give --checkpoint-every N"),
    ] {
        let mut a = vec!["run"];
        a.extend_from_slice(HEAT);
        a.extend_from_slice(&extra);
        a.push("--dry-run");
        let o = parsim(&a);
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{extra:?}: {err}");
        assert!(err.contains(says), "{extra:?}: {err}");
    }
    let mut a = vec!["run"];
    a.extend_from_slice(TW);
    a.extend_from_slice(&["--replicate", "2", "--checkpoint-every", "4", "--out", "/tmp/parsim-rep-tw"]);
    let o = parsim(&a);
    assert!(!o.status.success());
    assert!(String::from_utf8_lossy(&o.stderr).contains("GVT rounds"), "{}", String::from_utf8_lossy(&o.stderr));
}
