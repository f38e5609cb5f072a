use parsim::comm::Comm;
use parsim::{check, BoxError, Error, Experiment, Model, Outcome, ParamError, Rank};
use serde::{Deserialize, Serialize};

use crate::front_door::{tmp, Coins};

#[derive(Clone, Debug, Default, Serialize, Deserialize)]
#[serde(default)]
struct P {
    fail_at: u64,
    nan: bool,
    rate: f64,
}

/// A model that panics on rank 1 at a given step, or reports a NaN, and has no digest.
struct Fragile;

impl Model for Fragile {
    type Params = P;
    fn name(&self) -> &str {
        "fragile"
    }
    fn check(&self, p: &P) -> Result<(), ParamError> {
        check::range("rate", p.rate, 0.0..=1.0)
    }
    fn run<C: Comm>(&self, p: &P, rank: &mut Rank<'_, C>) -> Result<Outcome, BoxError> {
        let mut bar = rank.progress("steps", 10);
        for step in 1..=10 {
            bar.set(step);
            if p.fail_at == step && rank.comm().rank() == 1 {
                panic!("the flux capacitor overheated");
            }
            rank.comm().barrier()?;
        }
        Ok(Outcome::new().metric("x", if p.nan { f64::NAN } else { 1.0 }))
    }
}

fn run(args: &[&str]) -> Result<serde_json::Value, Error> {
    let out = tmp(&format!("err-{}", args.join("-").replace(['/', '='], "_")));
    let mut a = args.to_vec();
    let o = out.display().to_string();
    a.extend(["--out", &o]);
    Experiment::new(Fragile).quiet().run_with(&a).map(|f| f.summary)
}

#[test]
fn a_model_without_a_digest_runs_and_says_so() {
    let s = run(&["run", "--ranks", "2"]).unwrap();
    assert_eq!(s["digest"], "unavailable");
}

#[test]
fn a_panic_names_the_rank_the_step_and_the_message() {
    let e = run(&["run", "--ranks", "3", "--set", "fail_at=4"]).unwrap_err();
    let msg = e.to_string();
    assert!(matches!(e, Error::Run(_)), "{msg}");
    assert!(msg.contains("rank 1"), "{msg}");
    assert!(msg.contains("steps 4"), "{msg}");
    assert!(msg.contains("the flux capacitor overheated"), "{msg}");
}

#[test]
fn a_non_finite_metric_is_an_error() {
    let msg = run(&["run", "--set", "nan=true"]).unwrap_err().to_string();
    assert!(msg.contains("non-finite") && msg.contains("x = NaN"), "{msg}");
}

#[test]
fn bad_parameters_get_file_line_key_errors() {
    let dir = tmp("bad");
    std::fs::create_dir_all(&dir).unwrap();
    let sc = dir.join("f.toml");
    std::fs::write(&sc, "[run]\nseed = 1\n\n[fragile]\nrate = 0.5\nfail_at = \"soon\"\n").unwrap();
    let e = run(&["run", sc.to_str().unwrap()]).unwrap_err();
    let Error::Input(i) = &e else { panic!("expected an input error, got {e}") };
    assert_eq!(i.place, format!("{}:6", sc.display()), "{e}");
    assert!(i.msg.contains("fail_at"), "{e}");
    // A range check from Model::check, located at its line.
    std::fs::write(&sc, "[fragile]\nrate = 7\n").unwrap();
    let Error::Input(i) = run(&["run", sc.to_str().unwrap()]).unwrap_err() else { panic!() };
    assert_eq!(i.place, format!("{}:2", sc.display()));
    assert!(i.msg.contains("[fragile] rate") && i.msg.contains("0..=1"), "{}", i.msg);
    // An unknown key, a bad --set, an unknown table, the wrong model.
    let e = run(&["run", "--set", "rat=0.1"]).unwrap_err().to_string();
    assert!(e.contains("unknown key") && e.contains("command line"), "{e}");
    std::fs::write(&sc, "[fragil]\nrate = 0.1\n").unwrap();
    let e = run(&["run", sc.to_str().unwrap()]).unwrap_err().to_string();
    assert!(e.contains("fragil") && e.contains(":1"), "{e}");
    std::fs::write(&sc, "[run]\nmodel = \"epidemic\"\n").unwrap();
    let e = run(&["run", sc.to_str().unwrap()]).unwrap_err().to_string();
    assert!(e.contains("runs \"fragile\""), "{e}");
}

#[test]
fn dry_run_does_not_run() {
    let out = tmp("dry");
    let r = Experiment::new(Coins).quiet().run_with(&["run", "--dry-run", "--out", out.to_str().unwrap()]);
    assert!(r.is_err(), "run_with returns no summary for a dry run");
    assert!(!out.join("summary.json").exists());
}
