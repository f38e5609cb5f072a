//! `model = "phold"` / `"queues"`: every engine prints the same digest, the
//! statistics land in summary.json, bad keys exit 2.

use crate::support::{parsim, run_summary, scenario, tmp};

/// A small PHOLD run through the CLI.
const SMALL: [&str; 6] = ["--set", "phold.lps=128", "--set", "phold.end=15", "--set", "phold.start_events=4"];

fn run(file: &str, engine: &str, ranks: u32, extra: &[&str], dir: &std::path::Path) -> serde_json::Value {
    let r = ranks.to_string();
    let e = format!("des.engine={engine}");
    let mut args = vec![file, "--ranks", &r, "--set", &e];
    args.extend_from_slice(extra);
    run_summary(&args, &dir.join(format!("{engine}-{ranks}")))
}

#[test]
fn phold_every_engine_and_rank_count_prints_the_sequential_digest() {
    let dir = tmp("des-phold");
    let seq = run("scenarios/phold.toml", "sequential", 1, &SMALL, &dir);
    let want = seq["digest"].as_str().expect("digest").to_string();
    let committed = seq["metrics"]["committed_events"].as_u64().expect("committed_events");
    assert!(committed > 5_000, "{committed}");
    for engine in ["conservative", "window", "optimistic"] {
        for ranks in [1, 2, 4] {
            let s = run("scenarios/phold.toml", engine, ranks, &SMALL, &dir);
            assert_eq!(s["digest"].as_str(), Some(want.as_str()), "{engine} on {ranks}");
            assert_eq!(s["metrics"]["committed_events"].as_u64(), Some(committed), "{engine} on {ranks}");
            assert_eq!(s["model"], "phold");
        }
    }
}

#[test]
fn summary_has_the_des_statistics() {
    let dir = tmp("des-stats");
    let s = run("scenarios/phold.toml", "optimistic", 2, &SMALL, &dir);
    let m = &s["metrics"];
    for k in [
        "committed_events",
        "processed_events",
        "rolled_back_events",
        "rollbacks_primary",
        "rollbacks_secondary",
        "anti_messages",
        "efficiency",
        "gvt_rounds",
        "null_messages",
        "null_ratio",
        "peak_uncommitted_events",
        "peak_memory_bytes",
        "committed_per_s_main_loop",
        "committed_per_s_total",
    ] {
        assert!(!m[k].is_null(), "metrics.{k} missing: {m}");
    }
    assert!(m["gvt_rounds"].as_u64() > Some(0));
    let processed = m["processed_events"].as_u64().unwrap();
    assert_eq!(processed - m["rolled_back_events"].as_u64().unwrap(), m["committed_events"].as_u64().unwrap());
    let c = run("scenarios/phold.toml", "conservative", 3, &SMALL, &dir);
    assert!(c["metrics"]["null_messages"].as_u64() > Some(0), "{}", c["metrics"]);
}

#[test]
fn ties_and_queues_scenarios_agree_across_engines() {
    let dir = tmp("des-ties");
    let small_ties = ["--set", "phold.lps=64", "--set", "phold.end=3"];
    let want = run("scenarios/phold-ties.toml", "sequential", 1, &small_ties, &dir)["digest"].clone();
    assert_eq!(run("scenarios/phold-ties.toml", "optimistic", 3, &small_ties, &dir)["digest"], want);
    assert_eq!(run("scenarios/phold-ties.toml", "window", 2, &small_ties, &dir)["digest"], want);
    let small_q = ["--set", "queues.width=6", "--set", "queues.height=4", "--set", "queues.end=100"];
    let seq = run("scenarios/queues.toml", "sequential", 1, &small_q, &dir);
    let tw = run("scenarios/queues.toml", "optimistic", 4, &small_q, &dir);
    // Reverse computation from the command line gives the same figures.
    let mut reverse = small_q.to_vec();
    reverse.extend(["--set", "des.state_saving=\"reverse\""]);
    let rc = run("scenarios/queues.toml", "optimistic", 3, &reverse, &dir.join("reverse"));
    assert_eq!(rc["digest"], seq["digest"]);
    assert_eq!(rc["metrics"]["queues"], seq["metrics"]["queues"]);
    assert_eq!(seq["metrics"]["queues"]["warmup"], 10.0);
    assert_eq!(tw["digest"], seq["digest"]);
    assert_eq!(tw["metrics"]["queues"], seq["metrics"]["queues"]);
    let q = &seq["metrics"]["queues"];
    assert!(q["exact_mean_queue"].as_f64().unwrap() > 0.0 && q["mean_queue"].as_f64().unwrap() > 0.0, "{q}");
}

#[test]
fn bad_des_keys_exit_2_with_the_line() {
    let dir = tmp("des-bad");
    let cases = [
        ("[des]\nengine = \"magic\"\n", "engine", 3),
        ("[des]\nwindow = -1\n", "window", 3),
        ("[des]\ncheckpoint_every = 0\n", "checkpoint_every", 3),
        ("[des]\nenigne = \"window\"\n", "unknown key", 3),
    ];
    for (i, (des, what, line)) in cases.iter().enumerate() {
        let text = format!("[run]\nmodel = \"phold\"\n{des}[phold]\nlps = 8\n");
        // The [des] table starts at line 3.
        let p = scenario(&dir, &format!("bad{i}.toml"), &text);
        let o = parsim(&["run", p.to_str().unwrap()]);
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{des}: {err}");
        assert!(err.contains(what), "{des}: {err}");
        assert!(err.contains(&format!("bad{i}.toml:{}", line + 1)), "{des}: {err}");
    }
    let p = scenario(&dir, "la.toml", "[run]\nmodel = \"phold\"\n[phold]\nlookahead = 2.0\nmean = 1.0\n");
    let o = parsim(&["run", p.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("lookahead <= mean"));
}

#[test]
fn optimistic_run_prints_progress_statistics_and_digest() {
    let dir = tmp("des-print");
    let out = dir.join("o");
    let mut args = vec!["run", "scenarios/phold.toml", "--ranks", "2", "--set", "des.engine=optimistic"];
    args.extend_from_slice(&SMALL);
    args.extend_from_slice(&["--out", out.to_str().unwrap()]);
    let o = parsim(&args);
    assert!(o.status.success());
    let stdout = String::from_utf8_lossy(&o.stdout);
    assert!(stdout.contains("optimistic: committed") && stdout.contains("efficiency"), "{stdout}");
    assert!(stdout.contains("digest "), "{stdout}");
    // No warning with the defaults; an unbounded window on several ranks is warned about, and still runs.
    assert!(!String::from_utf8_lossy(&o.stderr).contains("window"), "{}", String::from_utf8_lossy(&o.stderr));
    args.extend_from_slice(&["--set", "des.window=\"unbounded\""]);
    let o = parsim(&args);
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success() && stderr.contains("des.window = \"unbounded\" on 2 ranks"), "{stderr}");
}

#[cfg(feature = "mpi")]
#[test]
fn phold_digest_under_mpirun_equals_threads() {
    let dir = tmp("des-mpi");
    let want = run("scenarios/phold.toml", "sequential", 1, &SMALL, &dir)["digest"].clone();
    for n in ["2", "4"] {
        for engine in ["optimistic", "conservative", "window"] {
            let e = format!("des.engine={engine}");
            let mut args = vec!["run", "scenarios/phold.toml", "--set", e.as_str()];
            args.extend_from_slice(&SMALL);
            let s = crate::support::mpirun_summary(n, &args, &dir.join(format!("m{n}{engine}")));
            assert_eq!(s["digest"], want, "{engine} under mpirun -n {n}");
        }
    }
}
