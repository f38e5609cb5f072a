//! Bad input exits with code 2 and names the file, the line and the key.

use crate::support::{parsim, scenario, tmp};

fn run_err(path: &std::path::Path, extra: &[&str]) -> (i32, String) {
    let mut a = vec!["run", path.to_str().expect("path")];
    a.extend_from_slice(extra);
    let o = parsim(&a);
    (o.status.code().unwrap_or(-1), String::from_utf8_lossy(&o.stderr).into_owned())
}

const GOOD: &str = "[run]\nmodel = \"ring\"\nseed = 1\nranks = 2\n\n[ring]\nnodes = 8\nlaps = 3\n";

#[test]
fn unknown_key_exits_2_naming_key_and_line() {
    let d = tmp("bad-unknown");
    let p = scenario(&d, "s.toml", &format!("{GOOD}lapz = 4\n"));
    let (code, err) = run_err(&p, &[]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("s.toml:9") && err.contains("lapz") && err.contains("unknown key"), "{err}");
}

#[test]
fn wrong_type_exits_2_naming_key_and_line() {
    let d = tmp("bad-type");
    let p = scenario(&d, "s.toml", &GOOD.replace("laps = 3", "laps = \"three\""));
    let (code, err) = run_err(&p, &[]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("s.toml:8") && err.contains("laps") && err.contains("found the string \"three\""), "{err}");
}

#[test]
fn zero_ranks_exits_2_naming_key_and_line() {
    let d = tmp("bad-ranks");
    let p = scenario(&d, "s.toml", &GOOD.replace("ranks = 2", "ranks = 0"));
    let (code, err) = run_err(&p, &[]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("s.toml:4") && err.contains("ranks") && err.contains("found 0"), "{err}");
    let good = scenario(&d, "g.toml", GOOD);
    let (code, err) = run_err(&good, &["--ranks", "0"]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("--ranks"), "{err}");
}

#[test]
fn other_bad_input_exits_2() {
    let d = tmp("bad-other");
    let cases: Vec<(String, Vec<&str>, &str)> = vec![
        ("[run]\nmodel = \"ring\"\nseed = = 1\n".into(), vec![], "s.toml:3"),
        (GOOD.replace("model = \"ring\"", "model = \"rng\""), vec![], "s.toml:2"),
        (format!("{GOOD}\n[extra]\nx = 1\n"), vec![], "s.toml:10"),
        (GOOD.into(), vec!["--set", "ring.laps=0"], "command line"),
        (GOOD.into(), vec!["--set", "nonsense"], "--set nonsense"),
        (GOOD.into(), vec!["--backend", "carrier-pigeon"], "--backend"),
        (GOOD.replace("laps = 3", "laps = 3\nmin_delay = 9\nmax_delay = 2"), vec![], "s.toml:10"),
    ];
    for (i, (text, extra, place)) in cases.iter().enumerate() {
        let p = scenario(&d, "s.toml", text);
        let (code, err) = run_err(&p, extra);
        assert_eq!(code, 2, "case {i}: {err}");
        assert!(err.contains(place), "case {i}: expected {place} in: {err}");
    }
    let (code, err) = run_err(&d.join("missing.toml"), &[]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("missing.toml"), "{err}");
}

#[test]
fn usage_errors_exit_2() {
    let o = parsim(&["run"]);
    assert_eq!(o.status.code(), Some(2));
    let o = parsim(&["frobnicate"]);
    assert_eq!(o.status.code(), Some(2));
}

#[cfg(not(feature = "mpi"))]
#[test]
fn mpi_backend_without_the_feature_is_explained() {
    let d = tmp("bad-mpi");
    let p = scenario(&d, "s.toml", GOOD);
    let (code, err) = run_err(&p, &["--backend", "mpi"]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("--features mpi"), "{err}");
}

#[test]
fn values_that_used_to_panic_exit_2_naming_the_key() {
    // A queueing network with no jobs: refused, not an index out of bounds.
    let o = parsim(&["run", "scenarios/queues.toml", "--set", "queues.jobs_per_server=0"]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(err.contains("jobs_per_server") && !err.contains("panicked"), "{err}");
    // A task timeout too long for a Duration: refused, not a panic.
    let o = parsim(&[
        "sweep",
        "scenarios/sweep-epidemic.toml",
        "--set",
        "sweep.isolate=\"process\"",
        "--set",
        "sweep.task_timeout_s=1e300",
    ]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(err.contains("task_timeout_s") && err.contains("1e9") && !err.contains("panicked"), "{err}");
}
