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

/// Runs `parsim ARGS`; asserts exit 2 with one error line holding every
/// `want`, and no panic.
fn exits_2(args: &[&str], want: &[&str]) -> String {
    let o = parsim(args);
    let err = String::from_utf8_lossy(&o.stderr).into_owned();
    assert_eq!(o.status.code(), Some(2), "parsim {args:?}: {err}");
    assert!(!err.contains("panicked"), "parsim {args:?}: {err}");
    assert_eq!(err.lines().filter(|l| l.contains("error:")).count(), 1, "parsim {args:?}: {err}");
    for w in want {
        assert!(err.contains(w), "parsim {args:?}: {w:?} missing in {err}");
    }
    err
}

#[test]
fn sizes_that_do_not_fit_are_refused_with_the_estimate_before_allocating() {
    exits_2(
        &["run", "scenarios/heat2d.toml", "--set", "grid.size=[1000000000,1000000000]"],
        &["[grid] size", "needs about 16.0 EB", "available"],
    );
    exits_2(&["run", "scenarios/phold.toml", "--set", "phold.lps=4294967295"], &["[phold] lps", "needs about"]);
    exits_2(
        &["run", "scenarios/phold.toml", "--set", "phold.lps=100000000", "--set", "des.engine=\"optimistic\""],
        &["[phold] lps", "optimistic engine"],
    );
    exits_2(
        &["run", "scenarios/queues.toml", "--set", "queues.width=65536", "--set", "queues.height=65536"],
        &["width"],
    );
    exits_2(&["run", "scenarios/epidemic.toml", "--set", "abm.agents=4000000000"], &["[abm] agents", "GB"]);
    for m in ["hash", "greedy", "hdrf", "multilevel"] {
        exits_2(&["partition", "scenarios/data/grid-64x64.graph", "1000000000", "--method", m], &["K = 1000000000"]);
    }
    for m in ["ldg", "fennel"] {
        exits_2(
            &["partition", "scenarios/data/grid-64x64.graph", "1000000000", "--method", m, "--stream"],
            &["K = 1000000000", "4096 vertices"],
        );
    }
    exits_2(&["bench", "epidemic", "--ranks", "0", "--quick"], &["--ranks 0"]);
    exits_2(&["run", "scenarios/crowd.toml", "--set", "space.agents=17000000000"], &["[space] agents", "TB"]);
    exits_2(
        &["run", "scenarios/flock.toml", "--set", "space.chunks=[65536,65536]", "--set", "space.radius=1e-9"],
        &["space"],
    );
    exits_2(&["run", "scenarios/ring.toml", "--ranks", "20000"], &["[run] ranks", "at most 4096"]);
}

#[test]
fn bad_population_files_exit_2_in_one_line() {
    let d = tmp("bad-pop");
    let pop = |name: &str, bytes: &[u8]| {
        let p = d.join(name);
        std::fs::write(&p, bytes).unwrap();
        let sc = scenario(
            &d,
            &format!("{name}.toml"),
            &format!("[run]\nmodel = \"epidemic\"\n[abm]\npopulation = \"{}\"\nseeds = 1\ndays = 5\n", p.display()),
        );
        sc.display().to_string()
    };
    let pairs = |a: u32, b: u32| [a.to_le_bytes(), b.to_le_bytes()].concat();
    // Ids that would size a 3·10⁹-agent population, or overflow u32 agent counts.
    exits_2(&["run", &pop("big.u32", &pairs(0, 3_000_000_000)), "--dry-run"], &["agents", "GB"]);
    exits_2(&["run", &pop("max.u32", &pairs(0xffff_ffff, 0xffff_fffe)), "--dry-run"], &["max.u32"]);
    // A device that never ends, a directory, a missing file.
    let sc = scenario(&d, "zero.toml", "[run]\nmodel = \"epidemic\"\n[abm]\npopulation = \"/dev/zero\"\nseeds = 1\n");
    exits_2(&["run", sc.to_str().unwrap(), "--dry-run"], &["/dev/zero", "not a regular file"]);
    let sc = scenario(&d, "none.toml", "[run]\nmodel = \"epidemic\"\n[abm]\npopulation = \"nope.txt\"\nseeds = 1\n");
    let err = exits_2(&["run", sc.to_str().unwrap(), "--dry-run"], &["nope.txt", "no such file"]);
    assert!(!err.contains("os error"), "{err}");
    // A bad line is reported once, with its file and line, without quoting the file.
    let err = exits_2(&["run", &pop("bad.txt", b"0 1\nhunter2 2\n"), "--dry-run"], &["bad.txt:2", "vertex id"]);
    assert!(!err.contains("hunter2") && err.matches("bad.txt").count() == 1, "{err}");
    // Fewer agents in the file than asked for is said, not silent.
    let p = d.join("small.txt");
    std::fs::write(&p, "0 1\n1 2\n").unwrap();
    let sc = scenario(
        &d,
        "small.toml",
        &format!(
            "[run]\nmodel = \"epidemic\"\n[abm]\npopulation = \"{}\"\nagents = 10\nseeds = 1\ndays = 3\n",
            p.display()
        ),
    );
    let o = parsim(&["run", sc.to_str().unwrap(), "--dry-run"]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success() && err.contains("the 7 agents above it have no contacts"), "{err}");
}

#[test]
fn graph_files_that_cannot_be_read_exit_2_in_one_line_without_leaking_them() {
    let d = tmp("bad-graph");
    let err = exits_2(&["partition", d.join("missing.graph").to_str().unwrap(), "4"], &["missing.graph: no such file"]);
    assert!(!err.contains("os error"), "{err}");
    exits_2(&["partition", d.to_str().unwrap(), "4"], &["is a directory"]);
    let bin = d.join("bin.graph");
    std::fs::write(&bin, b"\xff\xfe\n").unwrap();
    exits_2(&["partition", bin.to_str().unwrap(), "4"], &["not UTF-8"]);
    let secret = d.join("id_rsa");
    std::fs::write(&secret, "SECRET_PASSWORD=hunter2 and more\n").unwrap();
    for extra in [&[][..], &["--method", "ldg", "--stream"][..]] {
        let mut a = vec!["partition", secret.to_str().unwrap(), "2"];
        a.extend_from_slice(extra);
        let err = exits_2(&a, &["id_rsa:1"]);
        assert!(!err.contains("SECRET") && !err.contains("hunter2"), "{err}");
    }
}

#[test]
fn weights_too_large_to_sum_and_bad_streamed_files_are_refused() {
    let d = tmp("bad-weights");
    let g = |name: &str, text: &str| {
        let p = d.join(name);
        std::fs::write(&p, text).unwrap();
        p.display().to_string()
    };
    let big = "9223372036854775807";
    // Edge weights are 32-bit, as in METIS: each at most 2^32 - 1, and so their total.
    let ew = g("ew.graph", &format!("3 3 1\n2 {big} 3 {big}\n1 {big} 3 {big}\n1 {big} 2 {big}\n"));
    exits_2(&["partition", &ew, "2", "--json"], &["edge to 2 has weight", "2^32 - 1"]);
    let e4 = "4000000000";
    let ew = g("ew4.graph", &format!("3 3 1\n2 {e4} 3 {e4}\n1 {e4} 3 {e4}\n1 {e4} 2 {e4}\n"));
    exits_2(&["partition", &ew, "2", "--json"], &["edge weights sum to", "2^32 - 1"]);
    let vw = g("vw.graph", &format!("3 2 10\n{big} 2\n{big} 1 3\n{big} 2\n"));
    exits_2(&["partition", &vw, "2"], &["vertex weights", "2^53"]);
    // The streaming reader checks what the whole reader checks.
    let sum = format!("3 2 1\n2 {big}\n1 {big} 3 {big}\n2 {big}\n");
    for (name, text, want) in [
        ("nbr.graph", "3 2\n2 9\n1 3\n2\n", "neighbour 9 is outside 1..=3"),
        ("trail.graph", "3 2\n2\n1 3\n2\n1\n", "more vertex lines"),
        ("count.graph", "3 5\n2\n1 3\n2\n", "declares 5 edges"),
        ("dup.graph", "3 3\n2 2\n1 1 3\n2\n", "duplicate edge"),
        ("sum.graph", sum.as_str(), "2^32 - 1"),
        ("short.graph", "3 2\n2\n1 3\n", "declares 3 vertices"),
        ("asym.graph", "4 2\n2\n3\n4\n1\n", "not symmetric"),
        ("loop.graph", "2 1\n1\n1\n", "self-loop"),
    ] {
        let p = g(name, text);
        exits_2(&["partition", &p, "2", "--method", "ldg", "--stream"], &[name, want]);
        exits_2(&["partition", &p, "2"], &[name]);
    }
}

#[test]
fn outputs_are_checked_before_the_run_and_values_are_echoed() {
    let d = tmp("bad-out");
    let p = scenario(&d, "s.toml", GOOD);
    // Nothing is computed before the bad destination is found.
    let err = exits_2(&["run", p.to_str().unwrap(), "--out", "/proc/version/x"], &["/proc/version/x"]);
    assert!(!err.contains("laps:"), "{err}");
    exits_2(
        &["run", p.to_str().unwrap(), "--out", d.join("o").to_str().unwrap(), "--trace", "/proc/version/t.json"],
        &["--trace"],
    );
    exits_2(&["partition", "scenarios/data/grid-64x64.graph", "2", "--out", "/proc/version/p"], &["--out"]);
    exits_2(&["bench", "epidemic", "--quick", "--out", "/proc/version/b.json"], &["--out"]);
    exits_2(&["run", p.to_str().unwrap(), "--set", "ring.laps=abc"], &["found the string \"abc\""]);
    exits_2(&["run", p.to_str().unwrap(), "--seed", "18446744073709551615"], &["--seed 18446744073709551615"]);
    exits_2(&["sweep", "scenarios/sweep-epidemic.toml", "--isolate", "proc"], &["--isolate proc"]);
    exits_2(&["run", "scenarios/heat2d.toml", "--set", "grid.boundary_value=1.7e308"], &["boundary_value", "1.7e308"]);
}

#[test]
fn stale_temporary_files_of_dead_runs_are_swept_at_start() {
    let d = tmp("stale");
    let out = d.join("o");
    std::fs::create_dir_all(&out).unwrap();
    // A kill left these (pid 4294967295 is never a live process); one is fresh.
    let stale = out.join(".summary.json.tmp-4294967295");
    std::fs::write(&stale, b"half a summary").unwrap();
    let old = std::time::SystemTime::now() - std::time::Duration::from_secs(3600);
    std::fs::File::options().write(true).open(&stale).unwrap().set_modified(old).unwrap();
    let fresh = out.join(".field_0.vti.tmp-4294967295-3");
    std::fs::write(&fresh, b"being written elsewhere").unwrap();
    let p = scenario(&d, "s.toml", GOOD);
    let o = parsim(&["run", p.to_str().unwrap(), "--out", out.to_str().unwrap()]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success(), "{err}");
    assert!(!stale.exists() && fresh.exists(), "{err}");
    assert!(err.contains("removed 1 temporary file") && err.contains(".summary.json.tmp-4294967295"), "{err}");
    let left: Vec<String> = std::fs::read_dir(&out)
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.contains(".tmp-") && !n.contains("4294967295"))
        .collect();
    assert!(left.is_empty(), "{left:?}");
}
