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
    let text = std::fs::read_to_string(out.join("summary.json")).expect("summary.json");
    serde_json::from_str(&text).expect("summary.json is JSON")
}

/// Writes a scenario file and returns its path.
pub fn scenario(dir: &Path, name: &str, text: &str) -> PathBuf {
    let p = dir.join(name);
    std::fs::write(&p, text).expect("write scenario");
    p
}
