use std::path::PathBuf;

use parsim::comm::Comm;
use parsim::{BoxError, Experiment, Model, Outcome, Rank, SweepArgs};
use serde::{Deserialize, Serialize};

/// Coin flips: `flips` per coin, `coins` coins spread over the ranks.
pub struct Coins;

#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(default)]
pub struct CoinParams {
    pub coins: u64,
    pub flips: u64,
    pub p: f64,
}

impl Default for CoinParams {
    fn default() -> Self {
        CoinParams { coins: 200, flips: 50, p: 0.5 }
    }
}

impl Model for Coins {
    type Params = CoinParams;
    fn name(&self) -> &str {
        "coins"
    }
    fn run<C: Comm>(&self, p: &CoinParams, rank: &mut Rank<'_, C>) -> Result<Outcome, BoxError> {
        let (me, size) = (rank.comm().rank() as u64, rank.comm().size() as u64);
        let mut heads = 0u64;
        for c in (0..p.coins).filter(|c| c % size == me) {
            let mut s = parsim::core::rng::StreamKey::new(rank.seed()).with(c).stream();
            heads += (0..p.flips).filter(|_| s.bernoulli(p.p)).count() as u64;
        }
        let total = rank.comm().all_reduce(&[heads], parsim::comm::ReduceOp::Sum)?[0];
        Ok(Outcome::new().digest_of(&total).metric("heads_share", total as f64 / (p.coins * p.flips) as f64))
    }
}

pub fn tmp(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("parsim-it-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    d
}

fn run(args: &[&str]) -> serde_json::Value {
    Experiment::new(Coins).quiet().run_with(args).expect("the run succeeds").summary
}

#[test]
fn run_writes_a_summary_with_the_resolved_scenario_and_equal_digests_on_any_rank_count() {
    let out = tmp("run");
    let o = out.display().to_string();
    let s1 = run(&["run", "--out", &o, "--set", "flips=80", "--seed", "9"]);
    let s3 = run(&["run", "--out", &o, "--set", "flips=80", "--seed", "9", "--ranks", "3"]);
    assert_eq!(s1["digest"], s3["digest"]);
    assert_eq!(s3["ranks"], 3);
    assert_eq!(s3["model"], "coins");
    assert_eq!(s3["params"]["flips"], 80);
    assert_eq!(s3["params"]["coins"], 200, "defaults are recorded");
    assert_eq!(s3["resolved_scenario"]["coins"]["flips"], 80);
    assert_eq!(s3["resolved_scenario"]["run"]["seed"], 9);
    let overrides: Vec<&str> = s3["overrides"].as_array().unwrap().iter().filter_map(|v| v.as_str()).collect();
    assert!(overrides.contains(&"coins.flips") && overrides.contains(&"run.seed"), "{overrides:?}");
    assert!(s3["parsim_version"].is_string() && s3["command_line"].is_array());
    assert_eq!(s3["phases_s"]["compute"].as_array().unwrap().len(), 3);
    let share = s3["metrics"]["heads_share"].as_f64().unwrap();
    assert!((share - 0.5).abs() < 0.03, "{share}");
    let on_disk: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("summary.json")).unwrap()).unwrap();
    assert_eq!(on_disk["digest"], s3["digest"]);
    let s_other_seed = run(&["run", "--out", &o, "--set", "flips=80", "--seed", "10"]);
    assert_ne!(s_other_seed["digest"], s1["digest"]);
}

#[test]
fn a_scenario_file_and_trace_work_for_a_user_model() {
    let dir = tmp("scenario");
    std::fs::create_dir_all(&dir).unwrap();
    let sc = dir.join("coins.toml");
    std::fs::write(&sc, "[run]\nseed = 3\nranks = 2\n\n[coins]\ncoins = 40\np = 0.9\n").unwrap();
    let trace = dir.join("trace.json");
    let s = run(&["run", sc.to_str().unwrap(), "--out", dir.to_str().unwrap(), "--trace", trace.to_str().unwrap()]);
    assert_eq!(s["ranks"], 2);
    assert_eq!(s["params"]["coins"], 40);
    assert!((s["metrics"]["heads_share"].as_f64().unwrap() - 0.9).abs() < 0.05);
    let t: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&trace).unwrap()).unwrap();
    assert!(t.to_string().contains("compute"), "the trace has the phases");
}

#[test]
fn sweep_runs_over_a_user_parameter() {
    let out = tmp("sweep");
    let a = SweepArgs {
        param: vec!["p=0.2,0.8".into()],
        replications: Some(4),
        workers: Some(2),
        backend: "threads".into(),
        out: Some(out.clone()),
        ..SweepArgs::default()
    };
    let o = Experiment::new(Coins).quiet().cmd_sweep(&a).unwrap().expect("an outcome");
    assert_eq!(o.points.len(), 2);
    let mean = |i: usize| o.points[i].metrics["heads_share"].mean;
    assert!((mean(0) - 0.2).abs() < 0.03 && (mean(1) - 0.8).abs() < 0.03, "{} {}", mean(0), mean(1));
    for f in ["results.csv", "results.json", "tasks.jsonl", "sweep.png"] {
        assert!(out.join(f).exists(), "{f}");
    }
    let csv = std::fs::read_to_string(out.join("results.csv")).unwrap();
    // A bare key is the model's table's, and the table names it in full.
    assert!(csv.starts_with("point,coins.p,replications"), "{csv}");
    // The same table with one worker.
    let out1 = tmp("sweep1");
    let a1 = SweepArgs { workers: Some(1), out: Some(out1.clone()), ..a };
    Experiment::new(Coins).quiet().cmd_sweep(&a1).unwrap();
    assert_eq!(csv, std::fs::read_to_string(out1.join("results.csv")).unwrap());
}
