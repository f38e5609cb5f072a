//! `--trace` writes Chrome trace-event JSON with one track per rank.

use std::collections::BTreeSet;

use crate::support::{run_summary, tmp};

#[test]
fn trace_is_valid_json_with_one_track_per_rank() {
    let dir = tmp("trace");
    let trace = dir.join("trace.json");
    let t = trace.to_str().expect("path");
    run_summary(&["scenarios/ring.toml", "--ranks", "3", "--set", "ring.laps=50", "--trace", t], &dir.join("out"));
    let v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&trace).expect("trace file")).expect("valid JSON");
    let events = v["traceEvents"].as_array().expect("traceEvents array");
    let names: BTreeSet<String> = events
        .iter()
        .filter(|e| e["ph"] == "M" && e["name"] == "thread_name")
        .map(|e| e["args"]["name"].as_str().unwrap_or("").to_string())
        .collect();
    assert_eq!(names, ["rank 0", "rank 1", "rank 2"].iter().map(|s| s.to_string()).collect());
    let tids: BTreeSet<u64> =
        events.iter().filter(|e| e["ph"] == "X").map(|e| e["tid"].as_u64().expect("tid")).collect();
    assert_eq!(tids, [0, 1, 2].into_iter().collect());
    for e in events.iter().filter(|e| e["ph"] == "X") {
        assert!(e["dur"].as_f64().expect("dur") >= 0.0 && e["ts"].as_f64().is_some());
        assert!(["compute", "comm", "wait", "io", "serial"].contains(&e["name"].as_str().expect("name")));
    }
    // Without --trace no file is written.
    let none = dir.join("none.json");
    run_summary(&["scenarios/ring.toml", "--ranks", "2", "--set", "ring.laps=5"], &dir.join("out2"));
    assert!(!none.exists());
}
