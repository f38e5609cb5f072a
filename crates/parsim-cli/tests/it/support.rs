//! Running the binary from tests.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// The workspace root (scenarios/ lives there).
pub fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..").canonicalize().expect("workspace root")
}

/// A fresh temporary directory for one test.
pub fn tmp(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("parsim-it-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).expect("tmp dir");
    d
}

/// Runs `parsim ARGS` in the workspace root.
pub fn parsim(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_parsim")).args(args).current_dir(root()).output().expect("run parsim")
}

/// Runs a scenario and returns the parsed summary.json.
pub fn run_summary(args: &[&str], out: &Path) -> serde_json::Value {
    let mut a = vec!["run"];
    a.extend_from_slice(args);
    let out_s = out.to_str().expect("utf-8 path");
    a.extend_from_slice(&["--out", out_s]);
    let o = parsim(&a);
    assert!(o.status.success(), "parsim {a:?} failed: {}", String::from_utf8_lossy(&o.stderr));
    read_summary(out)
}

/// Writes a scenario file and returns its path.
pub fn scenario(dir: &Path, name: &str, text: &str) -> PathBuf {
    let p = dir.join(name);
    std::fs::write(&p, text).expect("write scenario");
    p
}

/// Reads `DIR/summary.json`.
pub fn read_summary(dir: &Path) -> serde_json::Value {
    let text = std::fs::read_to_string(dir.join("summary.json")).expect("summary.json");
    serde_json::from_str(&text).expect("summary.json is JSON")
}

/// Runs `mpirun -n N parsim ARGS` (as root, oversubscribed, without ssh) in the
/// workspace root and returns the summary it wrote to `out`.
#[cfg(feature = "mpi")]
pub fn mpirun_summary(n: &str, args: &[&str], out: &Path) -> serde_json::Value {
    use std::process::Stdio;
    let out_s = out.to_str().expect("utf-8 path");
    let o = Command::new("mpirun")
        .args(["--allow-run-as-root", "--oversubscribe", "-n", n, env!("CARGO_BIN_EXE_parsim")])
        .args(args)
        .args(["--backend", "mpi", "--out", out_s])
        .env("OMPI_MCA_plm", "isolated")
        .current_dir(root())
        .stdin(Stdio::null())
        .output()
        .expect("mpirun on PATH");
    assert!(o.status.success(), "mpirun -n {n} {args:?} failed: {}", String::from_utf8_lossy(&o.stderr));
    let s = read_summary(out);
    assert_eq!(
        s["ranks"].as_u64(),
        Some(n.parse().expect("n")),
        "world size: is parsim linked to another MPI than mpirun?"
    );
    assert_eq!(s["backend"], "mpi");
    s
}
