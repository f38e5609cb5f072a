//! The hostile-user campaign (issue 20): a few hundred mutated inputs
//! through the binary. Every run must end with exit 0 or 2 (1 is for runs
//! that fail, and validation runs nothing), never a panic or a signal, and
//! within a time bound; an accepted partition must be valid by a check
//! written here.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crate::support::{root, tmp};

/// Hostile values for a scenario key.
const VALUES: &[&str] = &[
    "0",
    "-1",
    "1e308",
    "-1e308",
    "4294967296",
    "18446744073709551615",
    "9223372036854775807",
    "\"abc\"",
    "true",
    "[1, 2]",
    "nan",
    "0.5",
    "{}",
    "1e-300",
];

/// Draws `below(n)` from one of parsim's own keyed streams.
struct Rng(parsim_core::Stream);
impl Rng {
    fn new(seed: u64) -> Rng {
        Rng(parsim_core::StreamKey::new(seed).purpose("parsim.campaign").stream())
    }
    fn below(&mut self, n: usize) -> usize {
        self.0.below(n.max(1) as u64) as usize
    }
}

/// Runs the binary with a time bound; returns (exit code, stderr).
fn run(args: &[String], bound: Duration) -> (Option<i32>, String) {
    let mut child = Command::new(env!("CARGO_BIN_EXE_parsim"))
        .args(args)
        .current_dir(root())
        .env("RUST_BACKTRACE", "0")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start parsim");
    let t0 = Instant::now();
    loop {
        if let Some(st) = child.try_wait().expect("wait") {
            let mut err = String::new();
            use std::io::Read;
            child.stderr.take().expect("stderr").read_to_string(&mut err).ok();
            return (st.code(), err);
        }
        if t0.elapsed() > bound {
            let _ = child.kill();
            let _ = child.wait();
            panic!("parsim {args:?} ran past {bound:?}");
        }
        std::thread::sleep(Duration::from_millis(5));
    }
}

fn judge(args: &[String], code: Option<i32>, err: &str) {
    assert!(!err.contains("panicked"), "parsim {args:?} panicked: {err}");
    assert!(matches!(code, Some(0) | Some(2)), "parsim {args:?} exited {code:?}: {err}");
    if code == Some(2) {
        assert!(err.contains("error:"), "parsim {args:?}: exit 2 without a message: {err}");
        assert!(err.lines().filter(|l| l.contains("error:")).count() == 1, "parsim {args:?}: {err}");
    }
}

/// Every key of every shipped scenario, set to hostile values, validated
/// with `--dry-run` (which reads, checks and estimates, and allocates nothing).
#[test]
fn hostile_values_for_every_scenario_key_exit_0_or_2() {
    let mut rng = Rng::new(20);
    let mut cases = Vec::new();
    let mut files: Vec<PathBuf> = std::fs::read_dir(root().join("scenarios"))
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|e| e == "toml"))
        .collect();
    files.sort();
    for f in &files {
        let doc: toml::Table = std::fs::read_to_string(f).unwrap().parse().unwrap();
        for (table, v) in &doc {
            let Some(t) = v.as_table() else { continue };
            if table == "sweep" {
                continue;
            }
            for key in t.keys() {
                // Three hostile values per key, chosen by the generator.
                for _ in 0..3 {
                    let value = VALUES[rng.below(VALUES.len())];
                    cases.push(vec![
                        "run".to_string(),
                        f.display().to_string(),
                        "--dry-run".into(),
                        "--set".into(),
                        format!("{table}.{key}={value}"),
                    ]);
                }
            }
        }
    }
    assert!(cases.len() >= 200, "{} cases", cases.len());
    let chunks: Vec<Vec<Vec<String>>> = cases.chunks(cases.len().div_ceil(2)).map(<[_]>::to_vec).collect();
    std::thread::scope(|s| {
        for chunk in &chunks {
            s.spawn(move || {
                for args in chunk {
                    let (code, err) = run(args, Duration::from_secs(60));
                    judge(args, code, &err);
                }
            });
        }
    });
}

/// The part ids of `path`: one per vertex, each below `k`.
fn valid_partition(path: &Path, n: usize, k: usize) -> bool {
    let Ok(text) = std::fs::read_to_string(path) else { return false };
    let parts: Vec<usize> = text.lines().filter_map(|l| l.trim().parse().ok()).collect();
    parts.len() == n && text.lines().count() == n && parts.iter().all(|&p| p < k)
}

/// Mutated METIS files through `parsim partition` (whole and `--stream`):
/// exit 0 with a valid partition, or exit 2 with one message.
#[test]
fn mutated_graph_files_exit_0_with_a_valid_partition_or_2() {
    let dir = tmp("campaign-graphs");
    let base = std::fs::read_to_string(root().join("fuzz/corpus/metis/grid6.graph")).unwrap();
    let mut rng = Rng::new(7);
    let tokens = ["0", "-1", "37", "99", "4294967296", "9223372036854775807", "1.5", "x", "%", "", "\n", "1 1"];
    for i in 0..60 {
        let mut lines: Vec<String> = base.lines().map(str::to_string).collect();
        for _ in 0..1 + rng.below(2) {
            let l = rng.below(lines.len());
            match rng.below(4) {
                0 => lines[l] = format!("{} {}", lines[l], tokens[rng.below(tokens.len())]),
                1 => {
                    lines.remove(l);
                }
                2 => lines.insert(l, lines[l].clone()),
                _ => {
                    let mut t: Vec<String> = lines[l].split_whitespace().map(str::to_string).collect();
                    if !t.is_empty() {
                        let j = rng.below(t.len());
                        t[j] = tokens[rng.below(tokens.len())].to_string();
                    }
                    lines[l] = t.join(" ");
                }
            }
        }
        let g = dir.join(format!("m{i}.graph"));
        std::fs::write(&g, lines.join("\n") + "\n").unwrap();
        for stream in [false, true] {
            let out = dir.join(format!("m{i}-{stream}.part"));
            let mut args: Vec<String> = vec!["partition".into(), g.display().to_string(), "3".into()];
            if stream {
                args.extend(["--method".into(), "ldg".into(), "--stream".into()]);
            }
            args.extend(["--out".into(), out.display().to_string()]);
            let (code, err) = run(&args, Duration::from_secs(30));
            judge(&args, code, &err);
            if code == Some(0) {
                assert!(valid_partition(&out, 36, 3), "parsim {args:?} accepted and wrote a bad partition");
            }
        }
    }
}

/// Mutated contact-network files as a population (`--dry-run` scans them).
#[test]
fn mutated_population_files_exit_0_or_2() {
    let dir = tmp("campaign-pop");
    let mut rng = Rng::new(11);
    let base = "0 1\n1 2\n2 3\n3 0\n4 5\n";
    let tokens = ["-1", "4294967295", "4294967296", "x", "1.5", "3 4 5", "#", "\u{ff}", ""];
    for i in 0..40 {
        let mut lines: Vec<String> = base.lines().map(str::to_string).collect();
        let l = rng.below(lines.len());
        lines[l] = match rng.below(3) {
            0 => tokens[rng.below(tokens.len())].to_string(),
            1 => format!("{} {}", tokens[rng.below(tokens.len())], lines[l]),
            _ => format!("{} {}", lines[l], tokens[rng.below(tokens.len())]),
        };
        let ext = ["txt", "u32", "graph"][rng.below(3)];
        let pop = dir.join(format!("p{i}.{ext}"));
        std::fs::write(&pop, lines.join("\n") + "\n").unwrap();
        let sc = dir.join(format!("p{i}.toml"));
        std::fs::write(
            &sc,
            format!("[run]\nmodel = \"epidemic\"\n[abm]\npopulation = \"{}\"\nseeds = 1\ndays = 5\n", pop.display()),
        )
        .unwrap();
        let args: Vec<String> = vec!["run".into(), sc.display().to_string(), "--dry-run".into()];
        let (code, err) = run(&args, Duration::from_secs(30));
        judge(&args, code, &err);
    }
}
