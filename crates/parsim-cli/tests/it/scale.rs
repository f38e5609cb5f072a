//! `parsim scale` and `parsim model`: a strong and a weak study of a small
//! heat2d write a self-contained report whose attribution sums to the
//! measured loss; bad rank lists, weak keys and mixed runs are refused
//! (an injected imbalance is diagnosed in `tests/diagnosis.rs`).

use crate::support::{parsim, run_summary, tmp};

const HEAT: [&str; 6] = ["--set", "grid.size=[96,96]", "--set", "grid.steps=30", "--set", "grid.png=false"];

fn study(args: &[&str]) -> (serde_json::Value, String, String) {
    let o = parsim(args);
    let out = String::from_utf8_lossy(&o.stdout).into_owned();
    assert!(o.status.success(), "parsim {args:?}: {}\n{out}", String::from_utf8_lossy(&o.stderr));
    let dir = args.iter().position(|a| *a == "--out").map(|i| args[i + 1]).unwrap();
    let json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(std::path::Path::new(dir).join("scale.json")).unwrap()).unwrap();
    let html = std::fs::read_to_string(std::path::Path::new(dir).join("report.html")).unwrap();
    (json, out, html)
}

/// The causes sum to the measured loss at every point.
fn causes_sum_to_the_loss(json: &serde_json::Value) {
    for a in json["attribution"].as_array().unwrap() {
        let l = &a["loss"];
        let sum: f64 = ["setup", "serial", "imbalance", "communication", "waiting", "io", "redundant"]
            .iter()
            .map(|k| l[k].as_f64().unwrap())
            .sum();
        let loss = 1.0 - a["efficiency"].as_f64().unwrap();
        assert!((sum - loss).abs() < 0.01, "p = {}: causes {sum} vs loss {loss}", a["p"]);
    }
}

fn check_report(json: &serde_json::Value, html: &str, dir: &std::path::Path) {
    causes_sum_to_the_loss(json);
    // One self-contained page: a title, every chart inline, no external resource.
    assert!(html.starts_with("<!DOCTYPE html>") && html.trim_end().ends_with("</html>"));
    assert!(html.contains("<title>parsim scale: grid</title>"));
    assert_eq!(html.matches("<svg").count(), 5, "speedup, efficiency, loss, phases, network");
    for bad in ["src=\"http", "href=\"http", "<script", "<link", "url(http"] {
        assert!(!html.contains(bad), "the report refers to an external resource ({bad})");
    }
    assert_eq!(html.matches("<svg").count(), html.matches("</svg>").count());
    for f in ["scale.csv", "speedup.png", "efficiency.png", "loss.png", "phases.png", "network.png"] {
        assert!(std::fs::metadata(dir.join(f)).map(|m| m.len() > 100).unwrap_or(false), "{f}");
    }
    assert!(json["predictions"].as_array().unwrap().len() >= 14);
    // The DES simulation of the run, at the measured p and beyond.
    assert!(json["simulated"].as_array().unwrap().len() >= 8, "{}", json["simulated"]);
    assert!(html.contains("simulated with parsim's own DES engine"));
}

#[test]
fn strong_and_weak_studies_write_a_report_whose_causes_sum_to_the_loss() {
    let dir = tmp("scale");
    let out = dir.join("strong");
    let o = out.to_str().unwrap();
    let mut a = vec!["scale", "scenarios/heat2d.toml", "--ranks", "1,2,3", "--reps", "2", "--out", o];
    a.extend_from_slice(&HEAT);
    let (json, text, html) = study(&a);
    check_report(&json, &html, &out);
    assert_eq!(json["points"].as_array().unwrap().len(), 3);
    assert_eq!(json["points"][1]["walls"].as_array().unwrap().len(), 2);
    assert!(text.contains("speedup") && text.contains("at p = 2, efficiency"), "{text}");
    assert!(text.contains("held-out check: fitted on p = [1, 2]"), "{text}");
    assert!(json["amdahl_f"].as_f64().is_some_and(|f| (0.0..=1.0).contains(&f)));
    // Weak: the grid's first axis grows with p.
    let out = dir.join("weak");
    let o = out.to_str().unwrap();
    let mut a =
        vec!["scale", "scenarios/heat2d.toml", "--ranks", "1,2", "--reps", "1", "--weak", "grid.size", "--out", o];
    a.extend_from_slice(&HEAT);
    let (json, text, html) = study(&a);
    check_report(&json, &html, &out);
    assert!(text.contains("weak scaling (grid.size grows with p)"), "{text}");
    let summary = crate::support::read_summary(&out.join("runs/p2-r0"));
    assert_eq!(summary["resolved_scenario"]["grid"]["size"], serde_json::json!([192, 96]));
}

#[test]
fn runs_of_another_scenario_are_not_mixed() {
    let dir = tmp("scale-mixed");
    let mut a: Vec<&str> = vec!["scenarios/heat2d.toml"];
    a.extend_from_slice(&HEAT);
    run_summary(&a, &dir.join("a"));
    a.extend_from_slice(&["--set", "grid.alpha=0.1"]);
    run_summary(&a, &dir.join("b"));
    let (p, q, out) = (dir.join("a"), dir.join("b"), dir.join("out"));
    let o = parsim(&["scale", "--from", p.to_str().unwrap(), q.to_str().unwrap(), "--out", out.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("another scenario"), "{}", String::from_utf8_lossy(&o.stderr));
}

#[test]
fn bad_studies_are_refused_and_the_calculators_print_the_seed_s_formulas() {
    for (args, says) in [
        (vec!["scale", "scenarios/heat2d.toml", "--ranks", "2,1"], "increasing"),
        (vec!["scale", "scenarios/heat2d.toml", "--ranks", "1,2,2"], "increasing"),
        (vec!["scale", "scenarios/heat2d.toml", "--ranks", "0,1"], "at least 1 rank"),
        (vec!["scale", "scenarios/heat2d.toml", "--ranks", ""], "rank counts"),
        (vec!["scale", "scenarios/heat2d.toml", "--ranks", "1,2", "--weak", "grid.nosuch"], "has no key grid.nosuch"),
        (vec!["scale", "scenarios/heat2d.toml", "--ranks", "1,2", "--weak", "grid.boundary"], "cannot be scaled"),
        (vec!["scale"], "give a scenario"),
        (vec!["scale", "scenarios/heat2d.toml", "--inject", "kill:rank=0,step=3"], "jitter only"),
        (vec!["scale", "scenarios/heat2d.toml", "--inject", "jitter:mean=soon"], "mean=soon"),
    ] {
        let o = parsim(&args);
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {err}");
        assert!(err.contains(says), "{args:?}: {err}");
    }
    let out = |a: &[&str]| {
        let o = parsim(a);
        assert!(o.status.success(), "{a:?}: {}", String::from_utf8_lossy(&o.stderr));
        String::from_utf8_lossy(&o.stdout).into_owned()
    };
    // S(1024) = 1/(0.1 + 0.9/1024) = 9.91.
    assert!(out(&["model", "amdahl", "--serial", "0.1", "--p", "1024"]).contains("9.913"));
    // S(1024) = 1024 − 0.1·1023 = 921.7.
    assert!(out(&["model", "gustafson", "--serial", "0.1", "--p", "1024"]).contains("921.700"));
    // e = (1/6 − 1/8)/(1 − 1/8) = 0.0476.
    assert!(out(&["model", "karp-flatt", "--speedup", "6", "--p", "8"]).contains("0.0476"));
    // 4096² on 64 ranks: slabs of 64 rows (2 × 4096 halo cells), blocks of 512² (4 × 512).
    let h = out(&["model", "halo", "--size", "4096x4096", "--ranks", "64"]);
    assert!(h.contains("slabs") && h.contains("8192") && h.contains("blocks") && h.contains("2048"), "{h}");
    assert_eq!(parsim(&["model", "amdahl", "--serial", "1.5"]).status.code(), Some(2));
    assert_eq!(parsim(&["model", "halo", "--size", "4096", "--ranks", "4"]).status.code(), Some(2));
}

#[test]
fn the_epidemic_s_setup_is_a_cause_of_its_own() {
    let out = tmp("scale-epi").join("s");
    let o = out.to_str().unwrap();
    let (json, text, html) = study(&[
        "scale",
        "scenarios/epidemic.toml",
        "--ranks",
        "1,2",
        "--reps",
        "1",
        "--out",
        o,
        "--set",
        "abm.partitioner=\"dml\"",
        "--set",
        "abm.agents=20000",
    ]);
    let points = json["points"].as_array().unwrap();
    // Setup is read from the runs and taken out of the other phases.
    for pt in points {
        for r in pt["ranks"].as_array().unwrap() {
            assert!(r["setup"].as_f64().unwrap() > 0.0, "{r}");
        }
    }
    causes_sum_to_the_loss(&json);
    // At p = 2 the partitioning is setup that p = 1 did not have.
    assert!(json["attribution"][1]["loss"]["setup"].as_f64().unwrap() > 0.0, "{text}");
    assert!(html.contains("lost: setup") && text.contains("setup"), "{text}");
}
