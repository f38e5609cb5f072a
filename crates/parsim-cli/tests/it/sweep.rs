//! `parsim sweep`: the same table for any worker count and under mpirun;
//! retries; a really interrupted sweep resumed; bad sweeps exit 2.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use crate::support::{parsim, root, scenario, tmp};

const BASE: &str = "[run]\nmodel = \"epidemic\"\nseed = 3\n\n[abm]\npopulation = \"er\"\nagents = 4000\nmean_degree = 10\ngraph_seed = 5\ndays = 100\n\n";

fn sweep_file(dir: &Path, name: &str, sweep: &str) -> PathBuf {
    scenario(dir, name, &format!("{BASE}[sweep]\n{sweep}\n"))
}

fn run_sweep(file: &Path, out: &Path, extra: &[&str]) -> String {
    let mut args = vec!["sweep", file.to_str().unwrap(), "--out", out.to_str().unwrap()];
    args.extend_from_slice(extra);
    let o = parsim(&args);
    assert!(o.status.success(), "parsim {args:?}: {}", String::from_utf8_lossy(&o.stderr));
    std::fs::read_to_string(out.join("results.csv")).expect("results.csv")
}

const UNTIL: &str = "parameters = { \"abm.beta\" = [0.04, 0.06, 0.08] }\nuntil = { metric = \"attack_rate\", rel_halfwidth = 0.01, min = 4, max = 40 }\nmetrics = [\"attack_rate\", \"peak_day\"]";

#[test]
fn the_table_is_the_same_for_1_2_and_4_workers_and_has_its_files() {
    let dir = tmp("sweep-workers");
    let f = sweep_file(&dir, "s.toml", UNTIL);
    let want = run_sweep(&f, &dir.join("w1"), &["--workers", "1"]);
    for w in ["2", "4"] {
        assert_eq!(run_sweep(&f, &dir.join(w), &["--workers", w]), want, "{w} workers");
    }
    // Tasks that are themselves parallel: 2 workers × 3 ranks each.
    assert_eq!(run_sweep(&f, &dir.join("r3"), &["--workers", "2", "--set", "sweep.ranks_per_task=3"]), want);
    let lines: Vec<&str> = want.lines().collect();
    assert_eq!(lines.len(), 4);
    assert!(lines[0].starts_with("point,abm.beta,replications,failed,attack_rate.n,attack_rate.mean"), "{}", lines[0]);
    assert!(lines[1].starts_with("0,0.04,"));
    for f in ["results.json", "sweep.png", "tasks.jsonl"] {
        assert!(dir.join("w1").join(f).exists(), "{f}");
    }
    let j: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("w1/results.json")).unwrap()).unwrap();
    let n = j["points"][0]["metrics"]["attack_rate"]["n"].as_u64().unwrap();
    assert!((4..=40).contains(&n));
}

#[test]
fn retried_tasks_give_the_clean_table_and_permanent_failures_are_reported() {
    let dir = tmp("sweep-retry");
    let fixed =
        "parameters = { \"abm.beta\" = [0.05, 0.07] }\nreplications = 6\nmetrics = [\"attack_rate\"]\nretries = 2";
    let clean = run_sweep(&sweep_file(&dir, "a.toml", fixed), &dir.join("a"), &[]);
    let flaky = format!("{fixed}\ninject_faults = [[1, 2, 1], [0, 4, 2]]");
    assert_eq!(run_sweep(&sweep_file(&dir, "b.toml", &flaky), &dir.join("b"), &[]), clean);
    let broken = format!("{fixed}\ninject_faults = [[1, 3, 9]]");
    let allowed = format!("{broken}\nallow_failures = true");
    let got = run_sweep(&sweep_file(&dir, "c.toml", &allowed), &dir.join("c"), &[]);
    let row1: Vec<&str> = got.lines().nth(2).unwrap().split(',').collect();
    assert_eq!((row1[2], row1[3], row1[4]), ("6", "1", "5"), "{got}");
    assert_eq!(got.lines().nth(1), clean.lines().nth(1));
    // Without allow_failures the same sweep writes its table and exits 1, counting the failures.
    let f = sweep_file(&dir, "d.toml", &broken);
    let o = parsim(&["sweep", f.to_str().unwrap(), "--out", dir.join("d").to_str().unwrap()]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(1), "{err}");
    assert!(err.contains("1 task(s) failed") && err.contains("point 1 replication 3"), "{err}");
    assert_eq!(std::fs::read_to_string(dir.join("d/results.csv")).unwrap(), got);
}

/// The pids of the task processes serving the sweep writing to `out`.
fn task_processes(out: &Path) -> Vec<u32> {
    let want = out.to_str().unwrap();
    let mut pids = Vec::new();
    for e in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(pid) = e.file_name().to_string_lossy().parse::<u32>() else { continue };
        let Ok(cmd) = std::fs::read(e.path().join("cmdline")) else { continue };
        let args: Vec<String> = cmd.split(|&b| b == 0).map(|a| String::from_utf8_lossy(a).into_owned()).collect();
        if args.iter().any(|a| a == "--serve") && args.iter().any(|a| a == want) {
            pids.push(pid);
        }
    }
    pids
}

#[test]
fn killed_task_processes_are_retried_and_give_the_clean_table() {
    let dir = tmp("sweep-isolate");
    let fixed =
        "parameters = { \"abm.beta\" = [0.05, 0.07] }\nreplications = 6\nmetrics = [\"attack_rate\"]\nretries = 2";
    let clean = run_sweep(&sweep_file(&dir, "a.toml", fixed), &dir.join("a"), &[]);
    // Injected deaths: the task's process SIGKILLs itself (twice for one task).
    let kills = format!("{fixed}\nisolate = \"process\"\ninject_kills = [[1, 2, 1], [0, 4, 2]]");
    let f = sweep_file(&dir, "k.toml", &kills);
    let o = parsim(&["sweep", f.to_str().unwrap(), "--out", dir.join("k").to_str().unwrap(), "--workers", "2"]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success(), "{err}");
    assert_eq!(std::fs::read_to_string(dir.join("k/results.csv")).unwrap(), clean);
    assert_eq!(err.matches("SIGKILL").count(), 3, "{err}");
    assert!(err.contains("point 0, replication 4, attempt 2"), "{err}");
    // A death the sweep does not expect: kill a task process from outside, mid-run.
    let slow = "parameters = { \"abm.beta\" = [0.05, 0.06, 0.07] }\nreplications = 40\nmetrics = [\"attack_rate\"]";
    let f = sweep_file(&dir, "s.toml", slow);
    let want = run_sweep(&f, &dir.join("s"), &["--workers", "2"]);
    let out = dir.join("x");
    let child = Command::new(env!("CARGO_BIN_EXE_parsim"))
        .args(["sweep", f.to_str().unwrap(), "--out", out.to_str().unwrap(), "--workers", "2", "--isolate", "process"])
        .current_dir(root())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let log = out.join("tasks.jsonl");
    let t0 = std::time::Instant::now();
    let victim = loop {
        let lines = std::fs::read_to_string(&log).map(|s| s.lines().count()).unwrap_or(0);
        let pids = task_processes(&out);
        if lines > 10 && !pids.is_empty() {
            break pids[0];
        }
        assert!(t0.elapsed().as_secs() < 60, "the sweep did not start");
        std::thread::sleep(std::time::Duration::from_millis(2));
    };
    let k = Command::new("kill").args(["-9", &victim.to_string()]).status().unwrap();
    assert!(k.success());
    let o = child.wait_with_output().unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success(), "{err}");
    assert_eq!(std::fs::read_to_string(out.join("results.csv")).unwrap(), want);
    // The kill landed during a task (a failed attempt, retried) or between two (the next task restarts it).
    let j: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("results.json")).unwrap()).unwrap();
    assert!(j["failed_attempts"].as_u64().unwrap() <= 1, "{err}");
    assert!(task_processes(&out).is_empty(), "task processes left behind");
}

#[test]
fn a_task_over_its_time_limit_is_killed_and_reported() {
    let dir = tmp("sweep-timeout");
    let f = sweep_file(
        &dir,
        "t.toml",
        "parameters = { \"abm.beta\" = [0.05] }\nreplications = 2\nretries = 1\ntask_timeout_s = 0.000001",
    );
    let out = dir.join("t");
    // Isolation from the command line: the children get it too.
    let o = parsim(&["sweep", f.to_str().unwrap(), "--out", out.to_str().unwrap(), "--isolate", "process"]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(1), "{err}");
    assert!(err.contains("timed out after") && err.contains("giving up") && err.contains("2 task(s) failed"), "{err}");
    let row: Vec<String> = std::fs::read_to_string(out.join("results.csv"))
        .unwrap()
        .lines()
        .nth(1)
        .unwrap()
        .split(',')
        .map(String::from)
        .collect();
    assert_eq!((row[2].as_str(), row[3].as_str()), ("2", "2"), "{row:?}");
}

#[test]
fn a_killed_sweep_resumed_gives_the_uninterrupted_table() {
    let dir = tmp("sweep-resume");
    let f = sweep_file(
        &dir,
        "s.toml",
        "parameters = { \"abm.beta\" = [0.05, 0.06, 0.07] }\nreplications = 40\nmetrics = [\"attack_rate\"]",
    );
    let want = run_sweep(&f, &dir.join("full"), &["--workers", "2"]);
    let out = dir.join("cut");
    let mut child = Command::new(env!("CARGO_BIN_EXE_parsim"))
        .args(["sweep", f.to_str().unwrap(), "--out", out.to_str().unwrap(), "--workers", "2"])
        .current_dir(root())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let log = out.join("tasks.jsonl");
    let t0 = std::time::Instant::now();
    loop {
        let lines = std::fs::read_to_string(&log).map(|s| s.lines().count()).unwrap_or(0);
        if lines > 25 {
            break;
        }
        assert!(t0.elapsed().as_secs() < 60, "the sweep did not start");
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
    child.kill().unwrap();
    child.wait().unwrap();
    let logged = std::fs::read_to_string(&log).unwrap().lines().count();
    assert!(logged < 121, "killed too late: {logged} lines");
    assert!(!out.join("results.csv").exists());
    // `--restart DIR` is `--resume --out DIR`, as for `run`.
    let o = parsim(&["sweep", f.to_str().unwrap(), "--restart", out.to_str().unwrap(), "--workers", "2"]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert!(String::from_utf8_lossy(&o.stderr).contains("resuming:"));
    assert_eq!(std::fs::read_to_string(out.join("results.csv")).unwrap(), want);
}

#[test]
fn bad_sweeps_exit_2_with_the_key_and_line() {
    let dir = tmp("sweep-bad");
    let bad = |name: &str, sweep: &str, want: &[&str]| {
        let f = sweep_file(&dir, name, sweep);
        let o = parsim(&["sweep", f.to_str().unwrap(), "--out", dir.join("o").to_str().unwrap()]);
        let e = String::from_utf8_lossy(&o.stderr).to_string();
        assert_eq!(o.status.code(), Some(2), "{name}: {e}");
        for w in want {
            assert!(e.contains(w), "{name}: {w:?} missing in {e}");
        }
    };
    bad("empty.toml", "parameters = { \"abm.beta\" = [] }\nreplications = 2", &["empty.toml:13", "empty list"]);
    bad(
        "step0.toml",
        "parameters = { \"abm.beta\" = { start = 0.1, stop = 0.2, step = 0 } }\nreplications = 2",
        &["step0.toml:13", "step 0"],
    );
    bad(
        "sign.toml",
        "parameters = { \"abm.seeds\" = { start = 10, stop = 1, step = 2 } }\nreplications = 2",
        &["never goes"],
    );
    bad("key.toml", "parameters = { \"abm.betta\" = [0.1] }\nreplications = 2", &["abm.betta", "unknown key"]);
    bad("zero.toml", "parameters = { \"abm.beta\" = [0.1] }\nreplications = 0", &["zero.toml:14", "replications"]);
    bad(
        "conf.toml",
        "parameters = { \"abm.beta\" = [0.1] }\nreplications = 3\nconfidence = 1.5",
        &["conf.toml:15", "confidence"],
    );
    bad("uconf.toml", "parameters = { \"abm.beta\" = [0.1] }\nuntil = { metric = \"attack_rate\", rel_halfwidth = 0.1, confidence = 0 }", &["until.confidence"]);
    bad(
        "iso.toml",
        "parameters = { \"abm.beta\" = [0.1] }\nreplications = 2\nisolate = \"fork\"",
        &["iso.toml:15", "isolate"],
    );
    bad(
        "tmo.toml",
        "parameters = { \"abm.beta\" = [0.1] }\nreplications = 2\ntask_timeout_s = 5",
        &["task_timeout_s needs isolate"],
    );
    // Found by the hardening campaign (issue 20): each was accepted, or crashed, before.
    bad(
        "log.toml",
        "parameters = { \"abm.beta\" = { start = 0.01, stop = 0.1, num = 3, log = \"yes\" } }\nreplications = 2",
        &["log.toml:13", "log", "true or false"],
    );
    bad(
        "num.toml",
        "parameters = { \"abm.beta\" = { start = 0.01, stop = 0.1, num = 1e12 } }\nreplications = 2",
        &["num.toml:13", "at most 1000000 values"],
    );
    bad(
        "lhs.toml",
        "parameters = { \"abm.beta\" = [0.01, 0.1] }\nreplications = 2\nlatin_hypercube = { points = 1e12 }",
        &["latin_hypercube"],
    );
    bad(
        "lhs2.toml",
        "parameters = { \"abm.beta\" = [0.01, 0.1] }\nreplications = 2\nlatin_hypercube = { points = 1000000000000 }",
        &["at most 10000000"],
    );
    bad(
        "reps.toml",
        "parameters = { \"abm.beta\" = [0.01, 0.1] }\nreplications = 9223372036854775807",
        &["reps.toml:14", "tasks: at most"],
    );
    bad("dots.toml", "parameters = { \"abm.x.beta\" = [0.1] }\nreplications = 2", &["TABLE.KEY"]);
    bad("bare.toml", "parameters = { \"betta\" = [0.1] }\nreplications = 2", &["abm.betta", "unknown key"]);
    bad(
        "late.toml",
        "parameters = { \"abm.beta\" = [0.1, 7.0] }\nreplications = 2",
        &["point 1 (abm.beta = 7.0)", "beta"],
    );
    // A watched metric the model does not report is known only from a run:
    // the first task is run once, up front, and the sweep stops as bad input.
    bad(
        "metric.toml",
        "parameters = { \"abm.beta\" = [0.1] }\nuntil = { metric = \"atack_rate\", rel_halfwidth = 0.1, min = 2, max = 2 }",
        &["until.metric = \"atack_rate\"", "attack_rate"],
    );
    // A bare key is the model's table's: `beta` sweeps abm.beta, and the table says so.
    let got = run_sweep(
        &sweep_file(
            &dir,
            "b.toml",
            "parameters = { \"beta\" = [0.04, 0.08] }\nreplications = 2\nmetrics = [\"attack_rate\"]",
        ),
        &dir.join("b"),
        &[],
    );
    assert!(got.starts_with("point,abm.beta,"), "{got}");
    let rows: Vec<&str> =
        got.lines().skip(1).map(|l| l.split_once(',').unwrap().1.split_once(',').unwrap().1).collect();
    assert_ne!(rows[0], rows[1], "{got}");
    // A sweep scenario given to `parsim run` says what to do.
    let f = sweep_file(&dir, "run.toml", "parameters = { \"abm.beta\" = [0.1] }\nreplications = 2");
    let o = parsim(&["run", f.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("the `sweep` command"));
}

#[cfg(feature = "mpi")]
#[test]
fn the_table_under_mpirun_equals_threads() {
    let dir = tmp("sweep-mpi");
    let f = sweep_file(&dir, "s.toml", UNTIL);
    let want = run_sweep(&f, &dir.join("t"), &["--workers", "2"]);
    // Flat master-worker at 2 and 4 ranks; sub-masters over groups of 2 at 5 ranks.
    for (n, group) in [("2", "0"), ("4", "0"), ("5", "2")] {
        let out = dir.join(format!("m{n}"));
        let g = format!("sweep.group={group}");
        let o = Command::new("mpirun")
            .args(["--allow-run-as-root", "--oversubscribe", "-n", n, env!("CARGO_BIN_EXE_parsim")])
            .args(["sweep", f.to_str().unwrap(), "--backend", "mpi", "--set", &g, "--out", out.to_str().unwrap()])
            .env("OMPI_MCA_plm", "isolated")
            .current_dir(root())
            .stdin(Stdio::null())
            .output()
            .expect("mpirun");
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        assert_eq!(std::fs::read_to_string(out.join("results.csv")).unwrap(), want, "mpirun -n {n}");
    }
}

#[cfg(feature = "mpi")]
#[test]
fn killed_task_processes_under_mpirun_are_retried() {
    let dir = tmp("sweep-mpi-kill");
    let fixed = "parameters = { \"abm.beta\" = [0.05, 0.07] }\nreplications = 6\nmetrics = [\"attack_rate\"]";
    let clean = run_sweep(&sweep_file(&dir, "a.toml", fixed), &dir.join("a"), &[]);
    let f =
        sweep_file(&dir, "k.toml", &format!("{fixed}\nisolate = \"process\"\ninject_kills = [[1, 2, 1], [0, 4, 2]]"));
    let out = dir.join("m");
    let o = Command::new("mpirun")
        .args(["--allow-run-as-root", "--oversubscribe", "-n", "3", env!("CARGO_BIN_EXE_parsim")])
        .args(["sweep", f.to_str().unwrap(), "--backend", "mpi", "--out", out.to_str().unwrap()])
        .env("OMPI_MCA_plm", "isolated")
        .current_dir(root())
        .stdin(Stdio::null())
        .output()
        .expect("mpirun");
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success(), "{err}");
    assert_eq!(err.matches("SIGKILL").count(), 3, "{err}");
    assert_eq!(std::fs::read_to_string(out.join("results.csv")).unwrap(), clean);
}
