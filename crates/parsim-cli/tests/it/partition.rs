//! `parsim partition`: a drop-in for gpmetis.

use std::process::Command;

use crate::support::{root, tmp};

fn data(name: &str) -> String {
    root().join("../shared/data/graphs").join(name).display().to_string()
}

fn partition_in(dir: &std::path::Path, args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_parsim"))
        .arg("partition")
        .args(args)
        .current_dir(dir)
        .output()
        .expect("run parsim")
}

#[test]
fn writes_name_part_k_and_prints_the_cut() {
    let dir = tmp("partition-out");
    let o = partition_in(&dir, &[&data("4elt.graph"), "8"]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(out.contains("edge cut") && out.contains("imbalance") && out.contains("partitioned in"), "{out}");
    let parts = std::fs::read_to_string(dir.join("4elt.graph.part.8")).expect("4elt.graph.part.8 written");
    let ids: Vec<u32> = parts.lines().map(|l| l.parse().unwrap()).collect();
    assert_eq!(ids.len(), 15606);
    assert!(ids.iter().all(|&p| p < 8));
}

#[test]
fn accepts_gpmetis_spellings_and_json() {
    let dir = tmp("partition-gpmetis");
    let o = partition_in(
        &dir,
        &[&data("uk.graph"), "4", "-ufactor=50", "-seed=3", "-ptype=kway", "-objtype=cut", "--json"],
    );
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let j: serde_json::Value = serde_json::from_slice(&o.stdout).expect("JSON");
    assert_eq!(j["k"], 4);
    assert_eq!(j["seed"], 3);
    assert!((j["imbalance_allowed"].as_f64().unwrap() - 1.05).abs() < 1e-12);
    assert_eq!(j["balanced"], true);
    let o = partition_in(&dir, &[&data("crack.graph"), "4", "-contig", "--json"]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
}

#[test]
fn every_method_runs_from_the_command_line() {
    let dir = tmp("partition-methods");
    for m in ["spectral", "ldg", "fennel", "lp", "hash", "greedy", "hdrf"] {
        let o = partition_in(&dir, &[&data("add32.graph"), "4", "--method", m]);
        assert!(o.status.success(), "{m}: {}", String::from_utf8_lossy(&o.stderr));
    }
    for m in ["ldg", "fennel"] {
        let o = partition_in(&dir, &[&data("add32.graph"), "4", "--method", m, "--stream", "--out", "s.part"]);
        assert!(o.status.success(), "{m} --stream: {}", String::from_utf8_lossy(&o.stderr));
        assert_eq!(std::fs::read_to_string(dir.join("s.part")).unwrap().lines().count(), 4960);
    }
    let o = partition_in(&dir, &[&data("add32.graph"), "4", "--method", "rcb"]);
    assert_eq!(o.status.code(), Some(2), "rcb without coordinates");
}

#[test]
fn bad_graphs_and_requests_exit_2_with_the_place() {
    let dir = tmp("partition-bad");
    std::fs::write(dir.join("bad.graph"), "3 2\n2\n1 3\n1\n").unwrap();
    let o = partition_in(&dir, &["bad.graph", "2"]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(err.contains("bad.graph") && err.contains("no reverse edge"), "{err}");
    for k in ["0", "99999"] {
        let o = partition_in(&dir, &[&data("uk.graph"), k]);
        assert_eq!(o.status.code(), Some(2), "K = {k}");
    }
    // A missing input file is bad input, said once.
    let o = partition_in(&dir, &["missing.graph", "2"]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(err.contains("missing.graph: no such file") && !err.contains("os error"), "{err}");
}

#[test]
fn pins_and_repartitioning_from_the_command_line() {
    let dir = tmp("partition-pins");
    let o = partition_in(&dir, &[&data("crack.graph"), "4", "--out", "old.part"]);
    assert!(o.status.success());
    // Pin the first hundred vertices to part 3.
    let pins: String = (0..10240).map(|v| if v < 100 { "3\n" } else { "-1\n" }).collect();
    std::fs::write(dir.join("pins"), pins).unwrap();
    let o = partition_in(&dir, &[&data("crack.graph"), "4", "--fixed", "pins", "--out", "pinned.part"]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let parts = std::fs::read_to_string(dir.join("pinned.part")).unwrap();
    assert!(parts.lines().take(100).all(|l| l == "3"));
    let o = partition_in(&dir, &[&data("crack.graph"), "4", "--current", "old.part", "--alpha", "3", "--json"]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let j: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(j["migrated_weight"], 0, "an already balanced partition needs no migration");
    std::fs::write(dir.join("bad.pins"), "0\nx\n").unwrap();
    let o = partition_in(&dir, &[&data("crack.graph"), "4", "--fixed", "bad.pins"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("bad.pins:2"));
}
