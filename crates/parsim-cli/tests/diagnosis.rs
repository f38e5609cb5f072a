//! `parsim scale` diagnoses an injected imbalance from finished runs.
//! Timing decides the diagnosis, so this is a test binary of its own: in
//! the `it` binary, tests running beside it on a 2-core machine would add
//! waiting of their own to the runs.

#[path = "it/support.rs"]
#[allow(dead_code)]
mod support;

use support::{parsim, run_summary, tmp};

/// The tests of this binary time runs: one at a time.
static ONE_AT_A_TIME: std::sync::Mutex<()> = std::sync::Mutex::new(());

/// Runs the front at 1 and 2 ranks and analyses the two runs.
fn study(attempt: usize) -> String {
    // The reaction front without balancing and without spreading (rate 0):
    // the costly reaction stays in the ignited strip on rank 0's side, so
    // rank 0 does nearly all the work at p = 2.
    let dir = tmp(&format!("diagnosis-{attempt}"));
    let front = [
        "scenarios/front.toml",
        "--set",
        "front.size=[128,128]",
        "--set",
        "front.steps=100",
        "--set",
        "front.substeps=256",
        "--set",
        "front.rate=0.0",
        "--set",
        "front.png=false",
        "--set",
        "lb.strategy=\"off\"",
    ];
    for p in ["1", "2"] {
        let mut a: Vec<&str> = front.to_vec();
        a.extend_from_slice(&["--ranks", p]);
        run_summary(&a, &dir.join(format!("p{p}")));
    }
    let (p1, p2, out) = (dir.join("p1"), dir.join("p2"), dir.join("report"));
    let o = parsim(&["scale", "--from", p1.to_str().unwrap(), p2.to_str().unwrap(), "--out", out.to_str().unwrap()]);
    let text = String::from_utf8_lossy(&o.stdout).into_owned();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    text
}

#[test]
fn an_injected_imbalance_is_diagnosed_as_imbalance() {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    // Timing decides: a burst of another process's work can make one
    // attempt's waiting outweigh its imbalance.
    let mut seen = Vec::new();
    for attempt in 0..3 {
        let text = study(attempt);
        if text.contains("of the loss is load imbalance") {
            return;
        }
        seen.push(text);
    }
    panic!("three attempts, no imbalance diagnosed:\n{}", seen.join("\n"));
}

#[test]
fn a_barrier_amplifies_jitter() {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    // The epidemic reduces its counts every day: a barrier. Every rank
    // sleeps an exponential delay (mean 2 ms) every day; the day then costs
    // the maximum of p delays (expected 1.5 μ at p = 2, against 1 μ at p = 1).
    let mut seen = Vec::new();
    for attempt in 0..3 {
        let out = tmp(&format!("jitter-{attempt}"));
        let o = parsim(&[
            "scale",
            "scenarios/epidemic.toml",
            "--ranks",
            "1,2",
            "--reps",
            "3",
            "--set",
            "abm.agents=20000",
            "--set",
            "abm.days=120",
            "--inject",
            "jitter:mean=2ms",
            "--out",
            out.to_str().unwrap(),
        ]);
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        let json: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(out.join("scale.json")).unwrap()).unwrap();
        let rows = json["jitter"]["rows"].as_array().unwrap().clone();
        assert_eq!(rows.len(), 2);
        let (a1, a2) = (rows[0][2].as_f64().unwrap(), rows[1][2].as_f64().unwrap());
        assert!((rows[1][3].as_f64().unwrap() - 1.5).abs() < 1e-12);
        if a2 > 1.15 * a1 && a2 > 1.2 {
            return;
        }
        seen.push(format!("amplification {a1:.2} at p = 1, {a2:.2} at p = 2"));
    }
    panic!("a barrier should amplify jitter: {seen:?}");
}
