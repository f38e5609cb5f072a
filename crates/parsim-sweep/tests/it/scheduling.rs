//! The table does not depend on the number of workers or the executor;
//! retries give first-try results; a resumed sweep equals an uninterrupted one.

use parsim_comm::Comm;
use parsim_core::rng::StreamKey;
use parsim_sweep::{exec, spec, Metrics, Replications, Store, SweepSpec, Task};
use serde_json::json;

fn sweep(reps: Replications) -> SweepSpec {
    SweepSpec {
        points: spec::grid(&[
            ("a".into(), vec![json!(1), json!(2), json!(3)]),
            ("b".into(), vec![json!(0.5), json!(1.5)]),
        ]),
        replications: reps,
        confidence: 0.95,
        common_random_numbers: false,
        retries: 2,
        seed: 11,
        faults: Vec::new(),
        kills: Vec::new(),
    }
}

/// A model: a few exponential draws from the task's seed, scaled by the point.
fn model(t: &Task, seed: u64) -> Result<Metrics, String> {
    let mut s = StreamKey::new(seed).purpose("model").stream();
    let mut x = 0.0;
    for _ in 0..5 {
        x += -(1.0 - s.uniform()).ln();
    }
    // Uneven task lengths, so that workers finish out of order.
    std::thread::sleep(std::time::Duration::from_micros(s.below(300)));
    Ok(Metrics::from([("x".to_string(), x * (1 + t.point) as f64), ("y".to_string(), (seed % 7) as f64)]))
}

#[test]
fn the_table_is_the_same_for_any_worker_count_and_executor() {
    for reps in
        [Replications::Fixed(12), Replications::Until { metric: "x".into(), rel_halfwidth: 0.2, min: 4, max: 200 }]
    {
        let s = sweep(reps);
        let want = exec::run_threads(&s, 1, &model, &mut Store::memory(), vec![], &|_| {}).unwrap();
        for w in [2, 4, 8] {
            let got = exec::run_threads(&s, w, &model, &mut Store::memory(), vec![], &|_| {}).unwrap();
            assert_eq!(got.points, want.points, "{w} workers");
        }
        // Flat master-worker, and sub-masters over groups of 2 and 3 workers.
        for (ranks, group) in [(1, 0), (2, 0), (4, 0), (5, 2), (8, 3), (7, 2)] {
            let got = parsim_comm::launch(ranks, |comm| {
                exec::run_comm(&comm, &s, group, &model, &mut Store::memory(), vec![], &|_| {})
                    .map(|o| (comm.rank(), o))
            })
            .unwrap();
            assert_eq!(
                got[0].1.as_ref().unwrap().points,
                want.points,
                "master-worker on {ranks} ranks, groups of {group}"
            );
        }
    }
}

#[test]
fn a_task_that_fails_once_is_retried_and_one_that_always_fails_is_reported() {
    let clean = sweep(Replications::Fixed(8));
    let want = exec::run_threads(&clean, 3, &model, &mut Store::memory(), vec![], &|_| {}).unwrap();
    let flaky = SweepSpec { faults: vec![(2, 3, 1), (4, 0, 2)], ..clean.clone() };
    let got = exec::run_threads(&flaky, 3, &model, &mut Store::memory(), vec![], &|_| {}).unwrap();
    assert_eq!(got.points, want.points);
    assert_eq!(got.failed_attempts, 3);
    // Always failing (more failures than retries): reported, the sweep goes on.
    let broken = SweepSpec { faults: vec![(1, 5, 99)], ..clean };
    let got = exec::run_threads(&broken, 3, &model, &mut Store::memory(), vec![], &|_| {}).unwrap();
    assert_eq!(got.points[1].failed.len(), 1);
    assert!(got.points[1].failed[0].1.contains("injected fault"), "{:?}", got.points[1].failed);
    assert_eq!(got.points[1].metrics["x"].n, 7);
    assert_eq!(got.points[0], want.points[0]);
}

#[test]
fn resuming_from_a_partial_log_gives_the_same_table() {
    let dir = std::env::temp_dir().join(format!("parsim-sweep-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("tasks.jsonl");
    let s = sweep(Replications::Until { metric: "x".into(), rel_halfwidth: 0.15, min: 4, max: 100 });
    let want = exec::run_threads(&s, 2, &model, &mut Store::memory(), vec![], &|_| {}).unwrap();
    let (mut store, _) = Store::open(&path, &s.fingerprint(), false, true).unwrap();
    exec::run_threads(&s, 2, &model, &mut store, vec![], &|_| {}).unwrap();
    // Keep the first third of the log and tear the next line in half.
    let text = std::fs::read_to_string(&path).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    let keep = lines.len() / 3;
    let mut cut = lines[..keep].join("\n");
    cut.push('\n');
    cut.push_str(&lines[keep][..lines[keep].len() / 2]);
    std::fs::write(&path, cut).unwrap();
    let (mut store, done) = Store::open(&path, &s.fingerprint(), true, true).unwrap();
    assert_eq!(done.len(), keep - 1);
    let got = exec::run_threads(&s, 2, &model, &mut store, done, &|_| {}).unwrap();
    assert_eq!(got.points, want.points);
    // Another sweep's log is refused.
    let other = SweepSpec { seed: 12, ..s };
    assert!(Store::open(&path, &other.fingerprint(), true, true).is_err());
}

#[test]
fn an_edited_or_contradictory_log_is_refused_on_resume() {
    let dir = std::env::temp_dir().join(format!("parsim-sweep-edit-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("tasks.jsonl");
    let s = sweep(Replications::Fixed(3));
    let (mut store, _) = Store::open(&path, &s.fingerprint(), false, true).unwrap();
    exec::run_threads(&s, 2, &model, &mut store, vec![], &|_| {}).unwrap();
    let text = std::fs::read_to_string(&path).unwrap();
    let resume = |t: &str| {
        std::fs::write(&path, t).unwrap();
        Store::open(&path, &s.fingerprint(), true, true).map(|(_, d)| d.len()).map_err(|e| e.to_string())
    };
    assert_eq!(resume(&text).unwrap(), text.lines().count() - 1);
    // A value edited by hand (the checksum no longer matches).
    let line = text.lines().nth(1).unwrap();
    let at = line.find("\"x\":").expect("metric x") + 4;
    let edited = format!(
        "{}1e308{}",
        &line[..at],
        &line[at..].trim_start_matches(|c: char| c == '-' || c == '.' || c == 'e' || c.is_ascii_digit())
    );
    let e = resume(&text.replace(line, &edited)).unwrap_err();
    assert!(e.contains("line 2") && e.contains("checksum"), "{e}");
    // An Ok record turned into an Err.
    let e = resume(&text.replace(line, &line.replace("\"Ok\":", "\"Err\":"))).unwrap_err();
    assert!(e.contains("line 2"), "{e}");
    // The same task twice with different results (each line valid on its own).
    let (p0, p1) = (text.lines().nth(1).unwrap(), text.lines().nth(2).unwrap());
    let r0: parsim_sweep::Record =
        serde_json::from_value(serde_json::from_str::<serde_json::Value>(p0).unwrap()["record"].clone()).unwrap();
    let mut r1: parsim_sweep::Record =
        serde_json::from_value(serde_json::from_str::<serde_json::Value>(p1).unwrap()["record"].clone()).unwrap();
    (r1.point, r1.replication) = (r0.point, r0.replication);
    let mut d = parsim_core::Digester::new();
    d.write_str(&s.fingerprint());
    d.write_str(&serde_json::to_string(&r1).unwrap());
    let forged = json!({"sum": d.finish().to_string(), "record": r1});
    let e = resume(&format!("{text}{forged}\n")).unwrap_err();
    assert!(e.contains("recorded twice with different results"), "{e}");
    // The same record twice is harmless.
    assert_eq!(resume(&format!("{text}{p0}\n")).unwrap(), text.lines().count() - 1);
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn bad_sweeps_name_the_key() {
    let key = |s: SweepSpec| match s.check() {
        Err(parsim_sweep::SweepError::Config { key, .. }) => key,
        other => panic!("{other:?}"),
    };
    assert_eq!(key(sweep(Replications::Fixed(0))), "replications");
    assert_eq!(key(SweepSpec { confidence: 1.0, ..sweep(Replications::Fixed(2)) }), "confidence");
    assert_eq!(key(SweepSpec { points: vec![], ..sweep(Replications::Fixed(2)) }), "parameters");
}
