//! `parsim partition`: a drop-in for gpmetis.

use std::process::Command;

use crate::support::{root, tmp};

/// A copy of the shared graph `name` in this process's own directory: the
/// partition is written beside the graph, as gpmetis writes it, and the
/// shared data directory stays untouched.
fn data(name: &str) -> String {
    let dir = std::env::temp_dir().join(format!("parsim-it-graphs-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let copy = dir.join(name);
    if !copy.exists() {
        let tmp = dir.join(format!(".{name}.{:?}", std::thread::current().id()));
        std::fs::copy(root().join("../shared/data/graphs").join(name), &tmp).unwrap();
        std::fs::rename(&tmp, &copy).unwrap();
    }
    copy.display().to_string()
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
    // Beside the graph, the path as given plus .part.K, where gpmetis writes it.
    let parts = std::fs::read_to_string(format!("{}.part.8", data("4elt.graph"))).expect("4elt.graph.part.8 written");
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

/// The partition in `path`: one id per vertex, each below `k` (from `base`).
fn parts_of(path: &str, n: usize, k: u32, base: u32) -> Vec<u32> {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{path}: {e}"));
    let ids: Vec<u32> = text.lines().map(|l| l.trim().parse::<u32>().expect("a part id") - base).collect();
    assert_eq!(ids.len(), n, "{path}");
    assert!(ids.iter().all(|&p| p < k), "{path}");
    ids
}

/// The edge cut of `parts` on a METIS graph without weights.
fn cut_of(graph: &str, parts: &[u32]) -> usize {
    let text = std::fs::read_to_string(graph).unwrap();
    let rows = text.lines().filter(|l| !l.starts_with('%')).skip(1);
    let mut cut = 0;
    for (v, row) in rows.enumerate() {
        for u in row.split_whitespace().map(|t| t.parse::<usize>().unwrap() - 1) {
            cut += usize::from(parts[v] != parts[u]);
        }
    }
    cut / 2
}

fn gpmetis_installed() -> bool {
    Command::new("gpmetis").arg("-help").output().is_ok_and(|o| !o.stdout.is_empty() || !o.stderr.is_empty())
}

/// Every gpmetis 5.1 option, spelled as gpmetis spells it, through parsim
/// and (where Debian's `metis` is installed) through gpmetis itself: both
/// write a valid partition where gpmetis writes it, and parsim's cut stays
/// within 1.15 × gpmetis's (the bound README states).
#[test]
fn every_gpmetis_option_runs_as_gpmetis_runs_it() {
    let dir = tmp("partition-parity");
    let g = dir.join("4elt.graph");
    std::fs::copy(data("4elt.graph"), &g).unwrap();
    let g = g.display().to_string();
    std::fs::write(dir.join("tp.txt"), "0 = 0.4\n1 = 0.2\n").unwrap();
    let tp = format!("-tpwgts={}", dir.join("tp.txt").display());
    let with_gpmetis = gpmetis_installed();
    let cases: Vec<Vec<&str>> = vec![
        vec![],
        vec!["-ptype=rb"],
        vec!["-ptype=kway", "-ctype=rm", "-iptype=grow"],
        vec!["-iptype=random", "-ctype=shem", "-no2hop"],
        vec!["-objtype=vol"],
        vec!["-contig"],
        vec!["-minconn"],
        vec!["-ufactor=100"],
        vec!["-ufactor=600"],
        vec!["-niter=20", "-ncuts=3", "-seed=5"],
        vec!["-dbglvl=0"],
        vec![&tp],
    ];
    for case in &cases {
        let out = format!("{g}.part.4");
        let _ = std::fs::remove_file(&out);
        let mut args = vec![g.as_str(), "4"];
        args.extend(case.iter().copied());
        let o = partition_in(&dir, &args);
        assert!(o.status.success(), "parsim {args:?}: {}", String::from_utf8_lossy(&o.stderr));
        let ours = cut_of(&g, &parts_of(&out, 15606, 4, 0));
        if with_gpmetis && !case.iter().any(|a| a.starts_with("-ptype=rb") && case.len() > 1) {
            let _ = std::fs::remove_file(&out);
            let o = Command::new("gpmetis").args(case).args([g.as_str(), "4"]).current_dir(&dir).output().unwrap();
            assert!(o.status.success(), "gpmetis {case:?}: {}", String::from_utf8_lossy(&o.stdout));
            let theirs = cut_of(&g, &parts_of(&out, 15606, 4, 0));
            assert!(ours as f64 <= 1.15 * theirs as f64, "{case:?}: parsim cut {ours}, gpmetis {theirs}");
        }
    }
    // The options gpmetis itself has no file for.
    let o = partition_in(
        &dir,
        &[&g, "8", "-niter=10", "-ncuts=2", "-numbering=0", "-dbglvl=0", "-minconn", "-no2hop", "-nooutput"],
    );
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert!(!std::path::Path::new(&format!("{g}.part.8")).exists(), "-nooutput wrote a file");
    let o = partition_in(&dir, &[&g, "8", "-numbering=1"]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    parts_of(&format!("{g}.part.8"), 15606, 8, 1);
    for bad in
        ["-ctype=xx", "-iptype=x", "-ptype=x", "-objtype=x", "-ncuts=0", "-niter=0", "-numbering=2", "-ubvec=0.5"]
    {
        let o = partition_in(&dir, &[&g, "4", bad]);
        assert_eq!(o.status.code(), Some(2), "{bad}: {}", String::from_utf8_lossy(&o.stderr));
    }
}

/// Loose imbalance gives a valid partition with every part used, and
/// -contig on a disconnected graph warns and partitions, as gpmetis does.
#[test]
fn loose_imbalance_and_contig_on_a_disconnected_graph_partition_as_gpmetis_does() {
    let dir = tmp("partition-loose");
    let g = data("4elt.graph");
    for (flag, limit) in
        [("-ufactor=500", 1.5), ("-ufactor=3000", 4.0), ("--imbalance=1.5", 1.5), ("--imbalance=9", 9.0)]
    {
        let o = partition_in(&dir, &[&g, "8", flag, "--json", "--out", "loose.part"]);
        assert!(o.status.success(), "{flag}: {}", String::from_utf8_lossy(&o.stderr));
        let j: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
        assert_eq!(j["empty_parts"], 0, "{flag}");
        assert_eq!(j["balanced"], true, "{flag}");
        assert!((j["imbalance_allowed"].as_f64().unwrap() - limit).abs() < 1e-12, "{flag}");
        let ids = parts_of(&dir.join("loose.part").display().to_string(), 15606, 8, 0);
        assert_eq!(ids.iter().collect::<std::collections::HashSet<_>>().len(), 8, "{flag}: an empty part");
    }
    std::fs::write(dir.join("two.graph"), "6 4\n2\n1 3\n2\n5\n4 6\n5\n").unwrap();
    let o = partition_in(&dir, &["two.graph", "2", "-contig"]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success(), "{err}");
    assert!(err.contains("-contig ignored") && err.contains("2 connected components"), "{err}");
    parts_of(&dir.join("two.graph.part.2").display().to_string(), 6, 2, 0);
}
