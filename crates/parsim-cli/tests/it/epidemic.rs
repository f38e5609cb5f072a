//! `model = "epidemic"`: the same digest at every rank count, partitioner and
//! threads per rank (and under mpirun), the CSV / PNG / summary outputs,
//! `--verify`, and exit 2 with the file and line for bad input.

use crate::support::{parsim, run_summary, scenario, tmp};

/// The main scenario, shrunk.
const SMALL: [&str; 4] = ["--set", "abm.agents=30000", "--set", "abm.days=120"];

fn run(file: &str, ranks: u32, extra: &[&str], out: &std::path::Path) -> serde_json::Value {
    let r = ranks.to_string();
    let mut args = vec![file, "--ranks", &r];
    args.extend_from_slice(&SMALL);
    args.extend_from_slice(extra);
    run_summary(&args, out)
}

#[test]
fn synthetic_digest_is_the_same_for_every_rank_count_partitioner_and_thread_count() {
    let dir = tmp("epi-digest");
    let want = run("scenarios/epidemic.toml", 1, &[], &dir.join("r1"))["digest"].clone();
    for (ranks, part) in
        [(2, "block"), (3, "multilevel"), (4, "hash"), (2, "lp"), (8, "fennel"), (3, "dlp"), (4, "dml")]
    {
        let p = format!("abm.partitioner=\"{part}\"");
        let s = run("scenarios/epidemic.toml", ranks, &["--set", &p], &dir.join(format!("r{ranks}{part}")));
        assert_eq!(s["digest"], want, "{ranks} ranks, {part}");
    }
    let s = run("scenarios/epidemic.toml", 2, &["--set", "run.threads_per_rank=2"], &dir.join("t2"));
    assert_eq!(s["digest"], want, "2 threads per rank");
    assert_eq!(s["threads_per_rank"], 2);
}

#[test]
fn outputs_curve_plot_and_metrics() {
    let dir = tmp("epi-out");
    let out = dir.join("o");
    let s = run("scenarios/epidemic.toml", 2, &[], &out);
    let m = &s["metrics"];
    assert_eq!(s["model"], "epidemic");
    assert_eq!(m["agents"], 30_000);
    // Setup (construction, partitioning) is reported apart from the simulation.
    for phase in ["compute", "comm", "wait", "io", "serial"] {
        let (setup, all) = (&s["setup_phases_s"][phase], &s["phases_s"][phase]);
        for r in 0..2 {
            let (a, b) = (setup[r].as_f64().unwrap(), all[r].as_f64().unwrap());
            assert!(a >= 0.0 && a <= b, "{phase}, rank {r}: setup {a} s of {b} s");
        }
    }
    assert!(s["setup_phases_s"]["compute"][0].as_f64().unwrap() > 0.0);
    let a = m["attack_rate"].as_f64().unwrap();
    assert!(a > 0.2 && a < 1.0, "{a}");
    assert!(m["peak_day"].as_u64().unwrap() > 0);
    for k in ["peak_prevalence", "growth_rate", "r0_estimate", "cut_edges", "bytes_per_day", "agent_days_per_s"] {
        assert!(m[k].is_number(), "metrics.{k} missing: {m}");
    }
    assert!(m["attack_rate_by_degree"].as_array().is_some_and(|v| !v.is_empty()));
    let csv = std::fs::read_to_string(out.join("curve.csv")).unwrap();
    let lines: Vec<&str> = csv.lines().collect();
    assert_eq!(lines[0], "day,S,E,I,R,V,new_infections,isolated,interventions");
    assert_eq!(lines.len(), 121);
    // Every day's counts add up to the population.
    for l in &lines[1..] {
        let v: Vec<u64> = l.split(',').take(8).map(|x| x.parse().unwrap()).collect();
        assert_eq!(v[1] + v[2] + v[3] + v[4] + v[5], 30_000, "{l}");
    }
    let png = std::fs::read(out.join("epidemic.png")).unwrap();
    assert_eq!(&png[1..4], b"PNG");
}

#[test]
fn verify_prints_theory_beside_simulation() {
    let dir = tmp("epi-verify");
    let out = dir.join("o");
    let o = parsim(&[
        "run",
        "scenarios/epidemic-er.toml",
        "--verify",
        "--set",
        "abm.agents=20000",
        "--set",
        "abm.partitioner=\"block\"",
        "--out",
        out.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let stdout = String::from_utf8_lossy(&o.stdout);
    for want in ["edge transmissibility T", "0.22622", "final size z", "early growth rate r", "attack rate by degree"] {
        assert!(stdout.contains(want), "missing {want:?} in\n{stdout}");
    }
    // The growth rate comes with its fit SE and window, or with why there is none.
    let s = crate::support::read_summary(&out);
    let m = &s["metrics"];
    if m["growth_rate"].is_f64() {
        assert!(m["growth_rate_se"].as_f64().is_some_and(|se| se > 0.0) && stdout.contains("(fit SE)"), "{m}");
    } else {
        let why = m["growth_rate_missing"].as_str().unwrap_or_default();
        assert!(!why.is_empty() && stdout.contains(why), "{m}");
    }
}

/// Every shipped epidemic scenario partitions at a cost the run repays; a
/// costly partitioner that is not repaid is named with the alternative.
#[test]
fn the_er_scenario_partitions_for_free_and_a_costly_partitioner_is_named() {
    let dir = tmp("epi-er-part");
    let text = std::fs::read_to_string(crate::support::root().join("scenarios/epidemic-er.toml")).unwrap();
    assert!(text.contains("partitioner = \"block\""), "epidemic-er.toml");
    let out = dir.join("o");
    let o = parsim(&[
        "run",
        "scenarios/epidemic-er.toml",
        "--set",
        "abm.agents=20000",
        "--set",
        "abm.days=5",
        "--set",
        "abm.partitioner=\"multilevel\"",
        "--out",
        out.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let s = crate::support::read_summary(&out);
    let m = &s["metrics"];
    let said = String::from_utf8_lossy(&o.stdout).contains("partitioner = \"block\" costs nothing");
    assert_eq!(said, m["partition_s"].as_f64().unwrap() > m["simulation_s"].as_f64().unwrap(), "{m}");
}

#[test]
fn the_reference_contact_file_runs() {
    let dir = tmp("epi-file");
    let s = run_summary(
        &[
            "scenarios/epidemic-er.toml",
            "--set",
            "abm.population=\"../shared/data/contact/er_N100k_c10_s42.u32\"",
            "--set",
            "abm.days=30",
        ],
        &dir.join("o"),
    );
    assert_eq!(s["metrics"]["agents"], 100_000);
    assert_eq!(s["metrics"]["edges"], 499_967);
}

fn bad(dir: &std::path::Path, name: &str, abm: &str) -> String {
    let text = format!("[run]\nmodel = \"epidemic\"\n\n[abm]\nagents = 1000\n{abm}\n");
    let p = scenario(dir, name, &text);
    let o = parsim(&["run", p.to_str().unwrap(), "--out", dir.join("o").to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(2), "{name}: {}", String::from_utf8_lossy(&o.stderr));
    String::from_utf8_lossy(&o.stderr).into_owned()
}

#[test]
fn bad_input_exits_2_naming_the_key_or_line() {
    let dir = tmp("epi-bad");
    let e = bad(&dir, "beta.toml", "beta = 1.5");
    assert!(e.contains("beta.toml:6") && e.contains("beta"), "{e}");
    let e = bad(&dir, "dur.toml", "infectious_days = 0");
    assert!(e.contains("dur.toml:6") && e.contains("infectious_days"), "{e}");
    let e = bad(&dir, "late.toml", "days = 100\nclose = [{ layer = \"contact\", from = 50, to = 120 }]");
    assert!(e.contains("late.toml:7") && e.contains("close.to") && e.contains("horizon"), "{e}");
    let e = bad(&dir, "layer.toml", "close = [{ layer = \"school\", from = 5, to = 9 }]");
    assert!(e.contains("no layer \"school\""), "{e}");
    let e = bad(&dir, "vacc.toml", "vaccinate = { from = 10, to = 500, rate = 0.1 }");
    assert!(e.contains("vaccinate.to"), "{e}");
    let e = bad(&dir, "key.toml", "betta = 0.1");
    assert!(e.contains("key.toml:6") && e.contains("unknown key"), "{e}");
    // A malformed contact file: its own name and line.
    let edges = dir.join("contacts.txt");
    std::fs::write(&edges, "0 1\n1 2\n2 three\n").unwrap();
    let e = bad(&dir, "file.toml", &format!("population = \"{}\"", edges.display()));
    assert!(e.contains("contacts.txt:3") && e.contains("vertex id") && !e.contains("three"), "{e}");
    std::fs::write(&edges, "0 1\n1 2000\n").unwrap();
    let e = bad(&dir, "beyond.toml", &format!("population = \"{}\"", edges.display()));
    assert!(e.contains("contacts.txt:2") && e.contains("beyond"), "{e}");
    std::fs::write(&edges, "0 1\n1 1\n").unwrap();
    let e = bad(&dir, "strict.toml", &format!("population = \"{}\"\nstrict = true", edges.display()));
    assert!(e.contains("contacts.txt:2") && e.contains("self-loop"), "{e}");
}

#[test]
fn self_loops_are_dropped_and_counted_without_strict() {
    let dir = tmp("epi-loops");
    let edges = dir.join("c.txt");
    std::fs::write(&edges, "0 1\n1 1\n1 2\n2 0\n").unwrap();
    let p = scenario(
        &dir,
        "s.toml",
        &format!("[run]\nmodel = \"epidemic\"\n\n[abm]\npopulation = \"{}\"\nseeds = 1\ndays = 10\n", edges.display()),
    );
    let s = run_summary(&[p.to_str().unwrap()], &dir.join("o"));
    assert_eq!(s["metrics"]["dropped_self_loops"], 1);
    assert_eq!(s["metrics"]["edges"], 3);
}

#[cfg(feature = "mpi")]
#[test]
fn epidemic_digest_under_mpirun_equals_threads() {
    let dir = tmp("epi-mpi");
    let want = run("scenarios/epidemic.toml", 1, &[], &dir.join("t"))["digest"].clone();
    for n in ["2", "4"] {
        for part in ["multilevel", "hash", "lp"] {
            let p = format!("abm.partitioner=\"{part}\"");
            let mut args = vec!["run", "scenarios/epidemic.toml", "--set", p.as_str()];
            args.extend_from_slice(&SMALL);
            let s = crate::support::mpirun_summary(n, &args, &dir.join(format!("m{n}{part}")));
            assert_eq!(s["digest"], want, "{part} under mpirun -n {n}");
        }
    }
    let mut args = vec!["run", "scenarios/epidemic-er.toml", "--set", "abm.agents=20000"];
    args.extend_from_slice(&["--set", "abm.days=60"]);
    let t = run_summary(&args[1..], &dir.join("er-t"));
    let m = crate::support::mpirun_summary("2", &args, &dir.join("er-m"));
    assert_eq!(m["digest"], t["digest"]);
}

/// The epidemic balanced: `[lb]` turns on chunks of consecutive agents.
/// The balancing runs use a third of `SMALL`'s agents in chunks of 200 (as
/// many chunks per rank, 2.6× less time in the dev profile: this test runs
/// 24 of them).
const LB_AGENTS: [&str; 2] = ["--set", "abm.agents=10000"];

fn balanced(ranks: u32, strategy: &str, extra: &[&str], out: &std::path::Path) -> serde_json::Value {
    let s = format!("lb.strategy={strategy}");
    let mut a = vec!["--set", s.as_str(), "--set", "lb.every=5", "--set", "lb.measure=count"];
    a.extend_from_slice(&["--set", "lb.when=every", "--set", "abm.chunk_agents=200"]);
    a.extend_from_slice(&LB_AGENTS);
    a.extend_from_slice(extra);
    run("scenarios/epidemic.toml", ranks, &a, out)
}

#[test]
fn the_balanced_epidemic_keeps_its_digest_under_every_strategy() {
    let dir = tmp("epi-lb");
    let want = run("scenarios/epidemic.toml", 1, &LB_AGENTS, &dir.join("r1"))["digest"].clone();
    for strategy in ["off", "diffusive", "sfc", "graph", "greedy", "refine", "steal"] {
        for ranks in [2, 3, 4] {
            let s = balanced(ranks, strategy, &[], &dir.join(format!("{strategy}-{ranks}")));
            assert_eq!(s["digest"], want, "{strategy} on {ranks} ranks");
            assert_eq!(s["lb"]["strategy"], strategy);
            if strategy != "off" {
                assert!(s["lb"]["rebalances"].as_u64() > Some(0), "{strategy} never rebalanced: {}", s["lb"]);
                assert!(s["lb"]["bytes_migrated"].as_u64() > Some(0));
            }
        }
    }
    // Predictive, threads per rank, and measured time with a slowed rank.
    let extra = ["--set", "lb.predict=\"trend\"", "--set", "run.threads_per_rank=2"];
    assert_eq!(balanced(2, "graph", &extra, &dir.join("pred"))["digest"], want);
    let extra = ["--set", "lb.measure=\"time\"", "--inject", "slow:rank=1,factor=3"];
    assert_eq!(balanced(2, "sfc", &extra, &dir.join("slow"))["digest"], want);
}

#[test]
fn rebalances_of_the_epidemic_are_printed_and_plotted() {
    let dir = tmp("epi-lb-report");
    let out = dir.join("o");
    let mut a = vec!["run", "scenarios/epidemic.toml", "--ranks", "2", "--set", "lb.strategy=sfc"];
    a.extend_from_slice(&["--set", "lb.every=5", "--set", "lb.measure=count", "--set", "lb.when=every"]);
    a.extend_from_slice(&SMALL);
    a.extend_from_slice(&["--out", out.to_str().unwrap()]);
    let o = parsim(&a);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let text = String::from_utf8_lossy(&o.stdout);
    assert!(text.contains("day     5: rebalanced (sfc): λ"), "{text}");
    assert!(text.contains("mean efficiency"), "{text}");
    assert!(std::fs::metadata(out.join("lb.png")).unwrap().len() > 1000);
    let s: serde_json::Value = serde_json::from_slice(&std::fs::read(out.join("summary.json")).unwrap()).unwrap();
    assert!(s["metrics"]["efficiency"].as_f64().is_some_and(|e| e > 0.0 && e <= 1.0));
    assert!(s["lb"]["events"][0]["lambda_before"].as_f64() >= s["lb"]["events"][0]["lambda_after"].as_f64());
    // Bad [lb] values name their key.
    let o = parsim(&["run", "scenarios/epidemic.toml", "--set", "lb.threshold=0.5", "--dry-run"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("[lb] threshold"), "{}", String::from_utf8_lossy(&o.stderr));
}

#[cfg(feature = "mpi")]
#[test]
fn the_balanced_epidemic_under_mpirun_equals_threads() {
    let dir = tmp("epi-lb-mpi");
    let want = run("scenarios/epidemic.toml", 1, &[], &dir.join("t"))["digest"].clone();
    for (n, strategy) in [("2", "sfc"), ("4", "graph"), ("4", "diffusive")] {
        let s = format!("lb.strategy={strategy}");
        let mut args = vec!["run", "scenarios/epidemic.toml", "--set", s.as_str(), "--set", "lb.every=5"];
        args.extend_from_slice(&["--set", "lb.measure=count", "--set", "lb.when=every"]);
        args.extend_from_slice(&SMALL);
        let got = crate::support::mpirun_summary(n, &args, &dir.join(format!("m{n}{strategy}")));
        assert_eq!(got["digest"], want, "{strategy} under mpirun -n {n}");
        assert!(got["lb"]["rebalances"].as_u64() > Some(0));
    }
}

#[test]
fn final_states_are_written_per_rank_with_a_manifest() {
    let dir = tmp("epi-states");
    let out = dir.join("o");
    let s = run("scenarios/epidemic.toml", 3, &["--set", "abm.write_states=true"], &out);
    let m: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("states/manifest.json")).unwrap()).unwrap();
    assert_eq!(m["digest"], s["digest"]);
    let pieces = m["pieces"].as_array().unwrap();
    assert_eq!(pieces.len(), 3);
    let mut ids = Vec::new();
    let mut ever = 0u64;
    for p in pieces {
        let bytes = std::fs::read(out.join("states").join(p["file"].as_str().unwrap())).unwrap();
        assert_eq!(bytes.len() as u64, 7 * p["agents"].as_u64().unwrap());
        for r in bytes.chunks_exact(7) {
            ids.push(u32::from_le_bytes(r[..4].try_into().unwrap()));
            assert!(r[4] <= 4, "state {}", r[4]);
            ever += u64::from(u16::from_le_bytes(r[5..].try_into().unwrap()) != u16::MAX);
        }
    }
    // Every agent once, in rank order = id order (block partition); the infected count is the attack rate's.
    assert_eq!(ids, (0..30_000).collect::<Vec<u32>>());
    let attack = s["metrics"]["attack_rate"].as_f64().unwrap();
    assert!((ever as f64 / 30_000.0 - attack).abs() < 1e-9, "{ever} infected, attack rate {attack}");
    assert!(s["metrics"]["bytes_per_agent"].as_f64().unwrap() > 0.0);
    assert!(s["metrics"]["setup_s"].is_number());
}

#[test]
fn a_population_that_cannot_fit_is_refused_up_front_with_the_estimate() {
    let dir = tmp("epi-huge");
    let t0 = std::time::Instant::now();
    let o = parsim(&[
        "run",
        "scenarios/epidemic.toml",
        "--set",
        "abm.agents=4000000000",
        "--out",
        dir.join("o").to_str().unwrap(),
    ]);
    let e = String::from_utf8_lossy(&o.stderr);
    // Bad input, found when the scenario is read (it knows how many ranks share this machine): exit 2.
    assert_eq!(o.status.code(), Some(2), "{e}");
    assert!(e.contains("[abm] agents") && e.contains("GB") && e.contains("available"), "{e}");
    assert!(!dir.join("o").join("summary.json").exists());
    // The same under --dry-run, which builds nothing.
    let o = parsim(&["run", "scenarios/epidemic.toml", "--set", "abm.agents=4000000000", "--dry-run"]);
    assert_eq!(o.status.code(), Some(2), "{}", String::from_utf8_lossy(&o.stderr));
    assert!(t0.elapsed().as_secs() < 30, "refused only after {:?}", t0.elapsed());
}
